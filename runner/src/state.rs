//! The daemon's own state, behind one interface ([`RunnerState`]) so that the engine and the
//! HTTP layer never see the database: SQLite ([`SqliteState`], a file beside the runs' journals)
//! is the embedded default; a PostgreSQL backend for several daemons implements the same trait
//! (ARCHITECTURE.md, "The runner daemon").
//!
//! What it holds: sign-in nonces (single use), sessions (by the SHA-256 of their token: a
//! token is never stored), the hosted runs this daemon serves and where each stands, the
//! settlement batches of each run (written **before** their transaction is signed, so a restart
//! re-drives the same batch instead of composing another), and each run's event log (what the
//! live stream replays).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::settlement::EvidenceRecord;
use skilltrial_sqlite::{get_with, migrate};

/// Where a hosted run stands in the daemon (on the wire as its snake_case name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Registered and authorised by its Run account; executing (or about to), settling as it goes.
    Executing,
    /// Every trial is done (or cancelled): the last settlements, the report and `run_finalize`.
    Finalizing,
    /// Finalized on-chain with the report hash; the report is kept for its owner.
    Finalized,
    /// Stopped for good without a finalization (the Run was refunded or closed under it, or the
    /// program refused `run_finalize`): the detail says why. A refused settlement never leads
    /// here: its trials go uncharged and the run is finalized.
    Failed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Executing => "executing",
            Self::Finalizing => "finalizing",
            Self::Finalized => "finalized",
            Self::Failed => "failed",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "executing" => Self::Executing,
            "finalizing" => Self::Finalizing,
            "finalized" => Self::Finalized,
            "failed" => Self::Failed,
            _ => return None,
        })
    }

    /// The daemon has nothing more to do for it.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Finalized | Self::Failed)
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A hosted run the daemon serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostedRun {
    /// The Run account's address (base58): the run's name here.
    pub address: String,
    /// The wallet that opened it (base58).
    pub user: String,
    /// The manifest hash (hex).
    pub manifest: String,
    /// The Run account's `run_id`.
    pub run_id: u64,
    /// Unix seconds: the Run's deadline.
    pub deadline: i64,
    pub phase: Phase,
    /// Why it is where it is, in words (a failure's cause, a wait's reason).
    pub detail: Option<String>,
    /// The sealed report's hash, once written (hex).
    pub report_hash: Option<String>,
    /// The `run_finalize` transaction.
    pub finalize_signature: Option<String>,
    /// Requests in flight at once, as its owner registered it (within the operator's maximum
    /// then).
    pub concurrency: Concurrency,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A settlement batch: the evidence of the trials it charges, and its transaction once landed
/// — or why the program refused it for good (its trials are never charged, the user takes their
/// share back with the rest of the escrow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Batch {
    pub seq: u32,
    pub evidence: Vec<EvidenceRecord>,
    pub signature: Option<String>,
    pub refused: Option<String>,
}

impl Batch {
    /// Neither landed nor refused for good: still to be sent.
    pub fn is_pending(&self) -> bool {
        self.signature.is_none() && self.refused.is_none()
    }
}

/// One event of a run's live stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub run: String,
    pub seq: u64,
    pub at: i64,
    pub kind: String,
    pub data: Value,
}

/// How many runs stand in each phase, and how many settlement batches wait to land
/// (`/metrics`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Census {
    pub runs: Vec<(Phase, u64)>,
    pub batches_pending: u64,
}

/// The most sign-in nonces out at once (unexpired and unused): a flood of challenges is turned
/// away (`429`) once this many wait for a signature, instead of growing the state for ever.
pub const MAX_LIVE_NONCES: u64 = 10_000;

#[derive(Debug, thiserror::Error)]
#[error("runner state {path}: {message}")]
pub struct StateError {
    path: String,
    message: String,
}

impl StateError {
    /// An error of the state at `path` (a file, or a database described without its password).
    pub(crate) fn new(path: &str, message: impl std::fmt::Display) -> Self {
        Self {
            path: path.to_owned(),
            message: message.to_string(),
        }
    }
}

/// The daemon's state. Every method is one atomic step.
pub trait RunnerState: Send {
    /// Spends the sign-in nonce of a valid signature by `address`, good until `expires_at`:
    /// `false` when it was spent before. Spent nonces are kept until they expire (and swept as
    /// others are spent), so a signed message is good for one session only.
    fn spend_nonce(
        &mut self,
        nonce: &str,
        address: &str,
        expires_at: i64,
        now: i64,
    ) -> Result<bool, StateError>;
    /// Records a session for `address` under the SHA-256 (hex) of its token.
    fn create_session(
        &mut self,
        token_sha256: &str,
        address: &str,
        expires_at: i64,
    ) -> Result<(), StateError>;
    /// The wallet of a live session.
    fn session(&self, token_sha256: &str, now: i64) -> Result<Option<String>, StateError>;

    /// Records that `address` uploaded the content `digest` (hex).
    fn hold(&mut self, address: &str, digest: &str) -> Result<(), StateError>;
    /// Whether `address` uploaded the content `digest` (hex).
    fn holds(&self, address: &str, digest: &str) -> Result<bool, StateError>;
    /// Registers a run; `false` when it was already registered (nothing changed).
    fn register_run(&mut self, run: &HostedRun) -> Result<bool, StateError>;
    fn run(&self, address: &str) -> Result<Option<HostedRun>, StateError>;
    /// `user`'s runs, newest first.
    fn runs_of(&self, user: &str) -> Result<Vec<HostedRun>, StateError>;
    /// Runs the daemon still has work for.
    fn runs_to_work(&self) -> Result<Vec<HostedRun>, StateError>;
    fn set_phase(
        &mut self,
        address: &str,
        phase: Phase,
        detail: Option<&str>,
    ) -> Result<(), StateError>;
    fn set_report(&mut self, address: &str, report_hash: &str) -> Result<(), StateError>;
    fn set_finalized(&mut self, address: &str, signature: &str) -> Result<(), StateError>;

    /// The run's batches, in order.
    fn batches(&self, address: &str) -> Result<Vec<Batch>, StateError>;
    /// Records batch `seq` (the next one) before its transaction is signed.
    fn add_batch(
        &mut self,
        address: &str,
        seq: u32,
        evidence: &[EvidenceRecord],
    ) -> Result<(), StateError>;
    fn batch_landed(&mut self, address: &str, seq: u32, signature: &str) -> Result<(), StateError>;
    /// Records that the program refused batch `seq` for good (`why`): it is never sent again.
    fn batch_refused(&mut self, address: &str, seq: u32, why: &str) -> Result<(), StateError>;

    /// Appends an event; returns it with its sequence number.
    fn append_event(
        &mut self,
        address: &str,
        kind: &str,
        data: &Value,
    ) -> Result<Event, StateError>;
    fn events_after(&self, address: &str, after: u64) -> Result<Vec<Event>, StateError>;

    /// Runs by phase and batches pending, in the whole state.
    fn census(&self) -> Result<Census, StateError>;
}

/// The state's schema version: the number of migrations applied.
///
/// Log: 1 — the first schema, as the code created it before it was numbered (such a file is
/// adopted as it is, `batches.refused` added if it predates that column); 2 — `CHECK`s that
/// `runs.run_id` and `events.seq` are never negative (a rebuild of both tables); 3 —
/// `runs.concurrency`, the requests a run may have in flight (1 for every earlier run). Keep
/// `MIGRATIONS` in file-number order; the files live in the workspace's `migrations/runner/`,
/// named by path from this file so the crate builds wherever the workspace is.
pub const SCHEMA_VERSION: u32 = 3;

const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/runner/0001_runner.sql"),
    include_str!("../../migrations/runner/0002_checks.sql"),
    include_str!("../../migrations/runner/0003_concurrency.sql"),
];

/// Brings a state written before the migrations existed to migration 1's shape: one written
/// before batches could be refused lacks `batches.refused`, which is added (NULL for every
/// batch it holds, which were never refused). Runs in the migration's transaction.
fn adopt_unnumbered(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare("SELECT name FROM pragma_table_info('batches')")?;
    let columns = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if !columns.is_empty() && !columns.iter().any(|c| c == "refused") {
        tx.execute_batch("ALTER TABLE batches ADD COLUMN refused TEXT")?;
    }
    Ok(())
}

/// The columns [`HostedRun::from_row`] reads, for every `SELECT` of a run.
const RUN_COLUMNS: &str = "address, user, manifest, run_id, deadline, phase, detail, report_hash, \
                           finalize_signature, concurrency, created_at, updated_at";

/// The columns [`Batch::from_row`] reads.
const BATCH_COLUMNS: &str = "seq, evidence, signature, refused";

/// The columns [`Event::from_row`] reads.
const EVENT_COLUMNS: &str = "run, seq, at, kind, data";

/// An integer column the schema keeps within `T` (an unsigned number), read as `T`.
fn unsigned<T: TryFrom<i64>>(row: &rusqlite::Row<'_>, name: &str) -> rusqlite::Result<T> {
    get_with(row, name, |n: i64| {
        T::try_from(n).map_err(|_| format!("{n} is out of range"))
    })
}

/// A JSON text column, parsed as `T`.
fn json<T: serde::de::DeserializeOwned>(
    row: &rusqlite::Row<'_>,
    name: &str,
) -> rusqlite::Result<T> {
    get_with(row, name, |text: String| {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    })
}

impl HostedRun {
    /// A `runs` row selected with [`RUN_COLUMNS`]. A value the schema keeps out (a phase
    /// outside [`Phase`], a negative run id) is an error naming the column, never a default.
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            address: row.get("address")?,
            user: row.get("user")?,
            manifest: row.get("manifest")?,
            run_id: unsigned(row, "run_id")?,
            deadline: row.get("deadline")?,
            phase: get_with(row, "phase", |text: String| {
                Phase::parse(&text).ok_or_else(|| format!("unknown phase {text:?}"))
            })?,
            detail: row.get("detail")?,
            report_hash: row.get("report_hash")?,
            finalize_signature: row.get("finalize_signature")?,
            concurrency: get_with(row, "concurrency", |n: u32| {
                Concurrency::new(n).map_err(|e| e.to_string())
            })?,
            created_at: row.get("created_at")?,
            updated_at: row.get("updated_at")?,
        })
    }
}

impl Batch {
    /// A `batches` row selected with [`BATCH_COLUMNS`].
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            seq: unsigned(row, "seq")?,
            evidence: json(row, "evidence")?,
            signature: row.get("signature")?,
            refused: row.get("refused")?,
        })
    }
}

impl Event {
    /// An `events` row selected with [`EVENT_COLUMNS`]; its data is the JSON it was written as.
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            run: row.get("run")?,
            seq: unsigned(row, "seq")?,
            at: row.get("at")?,
            kind: row.get("kind")?,
            data: json(row, "data")?,
        })
    }
}

/// The embedded backend: one SQLite file (WAL, `synchronous=FULL`).
#[derive(Debug)]
pub struct SqliteState {
    conn: Connection,
    path: PathBuf,
    nonce_cap: u64,
}

impl SqliteState {
    /// Opens (creating and migrating) the state at `path`. A state of a newer schema than this
    /// daemon knows is refused, untouched.
    pub fn open(path: &Path) -> Result<Self, StateError> {
        let fail = |message: String| StateError {
            path: path.display().to_string(),
            message,
        };
        let sql = |e: rusqlite::Error| fail(e.to_string());
        let mut conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sql)?;
        migrate(&mut conn, MIGRATIONS, Some(adopt_unnumbered)).map_err(|e| fail(e.to_string()))?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            nonce_cap: MAX_LIVE_NONCES,
        })
    }

    /// The same state with another cap on live nonces than [`MAX_LIVE_NONCES`] (tests).
    #[must_use]
    pub fn with_nonce_cap(mut self, cap: u64) -> Self {
        self.nonce_cap = cap;
        self
    }

    fn fail(&self, e: impl std::fmt::Display) -> StateError {
        StateError {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn select_runs(
        &self,
        filter: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<HostedRun>, StateError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs {filter}");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.fail(e))?;
        stmt.query_map(args, HostedRun::from_row)
            .map_err(|e| self.fail(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl RunnerState for SqliteState {
    fn spend_nonce(
        &mut self,
        nonce: &str,
        address: &str,
        expires_at: i64,
        now: i64,
    ) -> Result<bool, StateError> {
        // Expired nonces and sessions are swept as nonces are spent.
        let spent = self
            .conn
            .execute("DELETE FROM nonces WHERE expires_at < ?1", params![now])
            .and_then(|_| {
                self.conn
                    .execute("DELETE FROM sessions WHERE expires_at < ?1", params![now])
            })
            .and_then(|_| {
                self.conn.execute(
                    "INSERT OR IGNORE INTO nonces (nonce, address, expires_at, used) VALUES (?1, ?2, ?3, 1)",
                    params![nonce, address, expires_at],
                )
            });
        spent.map(|n| n == 1).map_err(|e| self.fail(e))
    }

    fn create_session(
        &mut self,
        token_sha256: &str,
        address: &str,
        expires_at: i64,
    ) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO sessions (token_sha256, address, expires_at) VALUES (?1, ?2, ?3)",
                params![token_sha256, address, expires_at],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn session(&self, token_sha256: &str, now: i64) -> Result<Option<String>, StateError> {
        self.conn
            .query_row(
                "SELECT address FROM sessions WHERE token_sha256 = ?1 AND expires_at > ?2",
                params![token_sha256, now],
                |r| r.get("address"),
            )
            .optional()
            .map_err(|e| self.fail(e))
    }

    fn hold(&mut self, address: &str, digest: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO holdings (address, digest) VALUES (?1, ?2)",
                params![address, digest],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn holds(&self, address: &str, digest: &str) -> Result<bool, StateError> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM holdings WHERE address = ?1 AND digest = ?2)",
                params![address, digest],
                |row| row.get(0),
            )
            .map_err(|e| self.fail(e))
    }

    fn register_run(&mut self, run: &HostedRun) -> Result<bool, StateError> {
        let run_id = i64::try_from(run.run_id).map_err(|e| self.fail(e))?;
        let changed = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO runs (address, user, manifest, run_id, deadline, phase, detail, concurrency, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
                params![
                    run.address,
                    run.user,
                    run.manifest,
                    run_id,
                    run.deadline,
                    run.phase.as_str(),
                    run.detail,
                    run.concurrency.get(),
                    run.created_at
                ],
            )
            .map_err(|e| self.fail(e))?;
        Ok(changed == 1)
    }

    fn run(&self, address: &str) -> Result<Option<HostedRun>, StateError> {
        Ok(self
            .select_runs("WHERE address = ?1", &[&address])?
            .into_iter()
            .next())
    }

    fn runs_of(&self, user: &str) -> Result<Vec<HostedRun>, StateError> {
        self.select_runs(
            "WHERE user = ?1 ORDER BY created_at DESC, address",
            &[&user],
        )
    }

    fn runs_to_work(&self) -> Result<Vec<HostedRun>, StateError> {
        self.select_runs(
            "WHERE phase IN ('executing', 'finalizing') ORDER BY created_at, address",
            &[],
        )
    }

    fn set_phase(
        &mut self,
        address: &str,
        phase: Phase,
        detail: Option<&str>,
    ) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE runs SET phase = ?2, detail = ?3, updated_at = ?4 WHERE address = ?1",
                params![address, phase.as_str(), detail, now()],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn set_report(&mut self, address: &str, report_hash: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE runs SET report_hash = ?2, updated_at = ?3 WHERE address = ?1",
                params![address, report_hash, now()],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn set_finalized(&mut self, address: &str, signature: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE runs SET phase = 'finalized', detail = NULL, finalize_signature = ?2, updated_at = ?3 WHERE address = ?1",
                params![address, signature, now()],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn batches(&self, address: &str) -> Result<Vec<Batch>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {BATCH_COLUMNS} FROM batches WHERE run = ?1 ORDER BY seq"
            ))
            .map_err(|e| self.fail(e))?;
        stmt.query_map(params![address], Batch::from_row)
            .map_err(|e| self.fail(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }

    fn add_batch(
        &mut self,
        address: &str,
        seq: u32,
        evidence: &[EvidenceRecord],
    ) -> Result<(), StateError> {
        let text = serde_json::to_string(evidence).map_err(|e| self.fail(e))?;
        self.conn
            .execute(
                "INSERT INTO batches (run, seq, evidence) VALUES (?1, ?2, ?3)",
                params![address, seq, text],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn batch_landed(&mut self, address: &str, seq: u32, signature: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE batches SET signature = ?3 WHERE run = ?1 AND seq = ?2",
                params![address, seq, signature],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn batch_refused(&mut self, address: &str, seq: u32, why: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE batches SET refused = ?3 WHERE run = ?1 AND seq = ?2 AND signature IS NULL",
                params![address, seq, why],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn append_event(
        &mut self,
        address: &str,
        kind: &str,
        data: &Value,
    ) -> Result<Event, StateError> {
        let path = self.path.display().to_string();
        let fail = |e: rusqlite::Error| StateError {
            path: path.clone(),
            message: e.to_string(),
        };
        let at = now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let seq: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run = ?1",
                params![address],
                |r| r.get(0),
            )
            .map_err(fail)?;
        tx.execute(
            "INSERT INTO events (run, seq, at, kind, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![address, seq, at, kind, data.to_string()],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(Event {
            run: address.to_owned(),
            seq: u64::try_from(seq).unwrap_or(0),
            at,
            kind: kind.to_owned(),
            data: data.clone(),
        })
    }

    fn events_after(&self, address: &str, after: u64) -> Result<Vec<Event>, StateError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE run = ?1 AND seq > ?2 ORDER BY seq"
            ))
            .map_err(|e| self.fail(e))?;
        stmt.query_map(params![address, after], Event::from_row)
            .map_err(|e| self.fail(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }

    fn census(&self) -> Result<Census, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT phase, COUNT(*) AS n FROM runs GROUP BY phase ORDER BY phase")
            .map_err(|e| self.fail(e))?;
        let runs = stmt
            .query_map([], |row| {
                Ok((
                    get_with(row, "phase", |text: String| {
                        Phase::parse(&text).ok_or_else(|| format!("unknown phase {text:?}"))
                    })?,
                    unsigned(row, "n")?,
                ))
            })
            .map_err(|e| self.fail(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))?;
        let batches_pending: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM batches WHERE signature IS NULL AND refused IS NULL",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.fail(e))?;
        Ok(Census {
            runs,
            batches_pending: u64::try_from(batches_pending).unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(address: &str, user: &str) -> HostedRun {
        HostedRun {
            address: address.into(),
            user: user.into(),
            manifest: "ab".repeat(32),
            run_id: 7,
            deadline: 2_000_000_000,
            phase: Phase::Executing,
            detail: None,
            report_hash: None,
            finalize_signature: None,
            concurrency: Concurrency::SEQUENTIAL,
            created_at: 1,
            updated_at: 1,
        }
    }

    #[test]
    fn a_nonce_is_spent_once_and_forgotten_once_expired() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SqliteState::open(&dir.path().join("runner.sqlite")).unwrap();
        let t = now();
        assert!(s.spend_nonce("n1", "alice", t + 600, t).unwrap());
        assert!(!s.spend_nonce("n1", "alice", t + 600, t).unwrap(), "spent");
        assert!(
            !s.spend_nonce("n1", "bob", t + 600, t).unwrap(),
            "by anyone"
        );
        assert!(s.spend_nonce("n2", "bob", t + 10, t).unwrap());
        // Swept once expired (its message is refused as expired before it gets here).
        assert!(s.spend_nonce("n3", "bob", t + 900, t + 20).unwrap());
        assert!(s.spend_nonce("n2", "bob", t + 900, t + 20).unwrap());
        let count: i64 = s
            .conn
            .query_row("SELECT COUNT(*) FROM nonces", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 3, "n1, n3 and the new n2");
    }

    /// The state's DDL as the code ran it on every open before `migrations/runner/` existed
    /// (kept here verbatim: such files are out there, at `user_version` 0).
    const UNNUMBERED_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS nonces (
    nonce      TEXT PRIMARY KEY,
    address    TEXT,
    expires_at INTEGER NOT NULL,
    used       INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1))
) STRICT;
-- Who uploaded what: a wallet may escrow and register a manifest only after it uploaded it (and
-- the manifest only after it uploaded its bundles), so knowing a hash is not enough to run
-- another wallet's private skill.
CREATE TABLE IF NOT EXISTS holdings (
    address TEXT NOT NULL,
    digest  TEXT NOT NULL,
    PRIMARY KEY (address, digest)
) STRICT;
CREATE TABLE IF NOT EXISTS sessions (
    token_sha256 TEXT PRIMARY KEY,
    address      TEXT NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS runs (
    address            TEXT PRIMARY KEY,
    user               TEXT NOT NULL,
    manifest           TEXT NOT NULL,
    run_id             INTEGER NOT NULL,
    deadline           INTEGER NOT NULL,
    phase              TEXT NOT NULL CHECK (phase IN ('executing', 'finalizing', 'finalized', 'failed')),
    detail             TEXT,
    report_hash        TEXT,
    finalize_signature TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS runs_by_user ON runs (user, created_at);
CREATE TABLE IF NOT EXISTS batches (
    run       TEXT NOT NULL REFERENCES runs (address),
    seq       INTEGER NOT NULL CHECK (seq >= 1),
    evidence  TEXT NOT NULL,
    signature TEXT,
    -- Why the program refused it for good (the deadline passed, the cancel window closed):
    -- never sent again, never charged. Added after the first release (see `open`).
    refused   TEXT,
    PRIMARY KEY (run, seq)
) STRICT;
CREATE TABLE IF NOT EXISTS events (
    run  TEXT NOT NULL REFERENCES runs (address),
    seq  INTEGER NOT NULL,
    at   INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run, seq)
) STRICT;
";

    /// [`UNNUMBERED_SCHEMA`] as the first release wrote it, before batches could be refused.
    fn first_release_schema() -> String {
        let old = UNNUMBERED_SCHEMA.replace(
            "    -- Why the program refused it for good (the deadline passed, the cancel window closed):\n    -- never sent again, never charged. Added after the first release (see `open`).\n    refused   TEXT,\n",
            "",
        );
        assert_ne!(old, UNNUMBERED_SCHEMA, "the old schema lacks the column");
        old
    }

    /// A state file made by running `schema` (as the code before the migrations did on open)
    /// and then `rows`.
    fn unnumbered(path: &Path, schema: &str, rows: &str) {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        conn.execute_batch(schema).unwrap();
        conn.execute_batch(rows).unwrap();
    }

    fn version(path: &Path) -> u32 {
        skilltrial_sqlite::user_version(&Connection::open(path).unwrap()).unwrap()
    }

    fn columns(path: &Path, table: &str) -> Vec<String> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .unwrap();
        stmt.query_map([table], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Given a state written by the code before its migrations, holding a row in every table,
    /// when the daemon opens it, then it is adopted and migrated in place (the current schema) and every
    /// row reads back as it was written.
    #[test]
    fn an_unnumbered_state_is_migrated_in_place_with_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.sqlite");
        let t = now();
        unnumbered(
            &path,
            UNNUMBERED_SCHEMA,
            &format!(
                "INSERT INTO nonces VALUES ('n1', 'alice', {later}, 1);
                 INSERT INTO holdings VALUES ('alice', 'cafe');
                 INSERT INTO sessions VALUES ('t1', 'alice', {later});
                 INSERT INTO runs VALUES ('R1', 'alice', 'm1', 7, 2000000000, 'finalized', NULL,
                     'beef', 'fsig', 1, 5);
                 INSERT INTO runs VALUES ('R2', 'bob', 'm2', 8, 2000000001, 'failed',
                     'refunded under it', NULL, NULL, 2, 3);
                 INSERT INTO batches VALUES ('R1', 1, '[]', 'sig1', NULL);
                 INSERT INTO batches VALUES ('R1', 2, '[]', NULL, 'the deadline passed');
                 INSERT INTO events VALUES ('R1', 1, 10, 'progress', '{{\"done\":1}}');
                 INSERT INTO events VALUES ('R1', 2, 11, 'phase', '{{\"phase\":\"finalized\"}}');",
                later = t + 600
            ),
        );
        assert_eq!(version(&path), 0);
        let mut s = SqliteState::open(&path).unwrap();
        assert_eq!(version(&path), SCHEMA_VERSION);
        assert!(!s.spend_nonce("n1", "alice", t + 600, t).unwrap(), "spent");
        assert!(s.holds("alice", "cafe").unwrap());
        assert_eq!(s.session("t1", t).unwrap().as_deref(), Some("alice"));
        assert_eq!(
            s.run("R1").unwrap().unwrap(),
            HostedRun {
                address: "R1".into(),
                user: "alice".into(),
                manifest: "m1".into(),
                run_id: 7,
                deadline: 2_000_000_000,
                phase: Phase::Finalized,
                detail: None,
                report_hash: Some("beef".into()),
                finalize_signature: Some("fsig".into()),
                concurrency: Concurrency::SEQUENTIAL,
                created_at: 1,
                updated_at: 5,
            }
        );
        let r2 = s.runs_of("bob").unwrap();
        assert_eq!(
            (r2[0].phase, r2[0].detail.as_deref()),
            (Phase::Failed, Some("refunded under it"))
        );
        assert_eq!(
            s.batches("R1").unwrap(),
            [
                Batch {
                    seq: 1,
                    evidence: vec![],
                    signature: Some("sig1".into()),
                    refused: None,
                },
                Batch {
                    seq: 2,
                    evidence: vec![],
                    signature: None,
                    refused: Some("the deadline passed".into()),
                },
            ]
        );
        let events = s.events_after("R1", 0).unwrap();
        assert_eq!(
            events,
            [
                Event {
                    run: "R1".into(),
                    seq: 1,
                    at: 10,
                    kind: "progress".into(),
                    data: serde_json::json!({"done": 1}),
                },
                Event {
                    run: "R1".into(),
                    seq: 2,
                    at: 11,
                    kind: "phase".into(),
                    data: serde_json::json!({"phase": "finalized"}),
                },
            ]
        );
        assert_eq!(s.append_event("R1", "x", &Value::Null).unwrap().seq, 3);
        // Schema 2's CHECKs hold from now on, and the foreign keys still point at `runs`.
        let refused = |sql: &str| s.conn.execute(sql, []).is_err();
        assert!(refused("UPDATE runs SET run_id = -1 WHERE address = 'R1'"));
        assert!(refused(
            "INSERT INTO events VALUES ('R1', 0, 1, 'progress', 'null')"
        ));
        assert!(refused(
            "INSERT INTO batches VALUES ('nowhere', 1, '[]', NULL, NULL)"
        ));
        drop(s);
        SqliteState::open(&path).unwrap();
        assert_eq!(version(&path), SCHEMA_VERSION);
    }

    /// A state written before batches could be refused opens with the column added, its
    /// batches unrefused.
    #[test]
    fn a_state_from_before_refused_batches_is_upgraded_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.sqlite");
        unnumbered(
            &path,
            &first_release_schema(),
            "INSERT INTO runs VALUES ('R1', 'alice', 'm', 1, 2, 'executing', NULL, NULL, NULL, 1, 1);
             INSERT INTO batches (run, seq, evidence, signature) VALUES ('R1', 1, '[]', 'sig');",
        );
        let mut s = SqliteState::open(&path).unwrap();
        assert_eq!(version(&path), SCHEMA_VERSION);
        let batches = s.batches("R1").unwrap();
        assert_eq!(batches[0].signature.as_deref(), Some("sig"));
        assert_eq!(batches[0].refused, None);
        s.add_batch("R1", 2, &[]).unwrap();
        s.batch_refused("R1", 2, "the deadline passed").unwrap();
        assert_eq!(
            s.batches("R1").unwrap()[1].refused.as_deref(),
            Some("the deadline passed")
        );
        drop(s);
        SqliteState::open(&path).unwrap();
    }

    /// Given a first-release state holding a row schema 2 refuses (a negative run id), when it
    /// is opened, then the open fails naming the file and the file is as it was: schema 0, no
    /// `batches.refused`, the row kept. The adoption and both migrations ran in one
    /// transaction.
    #[test]
    fn a_failed_migration_leaves_the_state_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.sqlite");
        unnumbered(
            &path,
            &first_release_schema(),
            "INSERT INTO runs VALUES ('R1', 'alice', 'm', -1, 2, 'executing', NULL, NULL, NULL, 1, 1);",
        );
        let err = SqliteState::open(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("runner state {}: ", path.display())),
            "{err}"
        );
        assert!(err.contains("CHECK constraint failed"), "{err}");
        assert_eq!(version(&path), 0);
        assert!(!columns(&path, "batches").contains(&"refused".to_owned()));
        let run_id: i64 = Connection::open(&path)
            .unwrap()
            .query_row("SELECT run_id FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(run_id, -1);
    }

    #[test]
    fn a_state_from_a_newer_skilltrial_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.sqlite");
        drop(SqliteState::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        let err = SqliteState::open(&path).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "runner state {}: written by a newer SkillTrial (schema 4, this one knows 3)",
                path.display()
            )
        );
        assert_eq!(version(&path), SCHEMA_VERSION + 1);
    }

    /// A phase outside [`Phase`] can only be stored with the checks switched off; it is then an
    /// error naming the column, never read as another phase.
    #[test]
    fn a_stored_phase_outside_the_enum_is_an_error_not_a_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.sqlite");
        let mut s = SqliteState::open(&path).unwrap();
        s.register_run(&run("R1", "alice")).unwrap();
        s.conn
            .pragma_update(None, "ignore_check_constraints", true)
            .unwrap();
        s.conn
            .execute("UPDATE runs SET phase = 'paused'", [])
            .unwrap();
        let err = s.run("R1").unwrap_err().to_string();
        assert!(
            err.contains("column phase: unknown phase \"paused\""),
            "{err}"
        );
    }

    #[test]
    fn sessions_expire_and_runs_batches_and_events_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.sqlite");
        {
            let mut s = SqliteState::open(&path).unwrap();
            s.create_session("t1", "alice", now() + 60).unwrap();
            s.create_session("t2", "alice", now() - 1).unwrap();
            assert!(s.register_run(&run("R1", "alice")).unwrap());
            assert!(!s.register_run(&run("R1", "alice")).unwrap());
            s.register_run(&run("R2", "bob")).unwrap();
            let record =
                EvidenceRecord::new(3, "att".into(), None, 5_000, "cd".repeat(32)).unwrap();
            s.add_batch("R1", 1, std::slice::from_ref(&record)).unwrap();
            assert!(
                s.add_batch("R1", 1, &[record]).is_err(),
                "a batch is written once"
            );
            s.batch_landed("R1", 1, "sig").unwrap();
            s.append_event("R1", "progress", &serde_json::json!({"done": 1}))
                .unwrap();
            s.append_event("R1", "phase", &serde_json::json!({"phase": "finalized"}))
                .unwrap();
        }
        let mut s = SqliteState::open(&path).unwrap();
        assert_eq!(s.session("t1", now()).unwrap().as_deref(), Some("alice"));
        assert_eq!(s.session("t2", now()).unwrap(), None);
        assert_eq!(s.runs_of("alice").unwrap().len(), 1);
        assert_eq!(s.runs_to_work().unwrap().len(), 2);
        s.set_phase("R2", Phase::Failed, Some("refunded")).unwrap();
        assert_eq!(s.runs_to_work().unwrap().len(), 1);
        let batches = s.batches("R1").unwrap();
        assert_eq!(batches[0].signature.as_deref(), Some("sig"));
        assert_eq!(batches[0].evidence[0].trial(), 3);
        assert!(!batches[0].is_pending());
        // A landed batch cannot be refused afterwards; a pending one can, for good.
        s.batch_refused("R1", 1, "too late").unwrap();
        assert_eq!(s.batches("R1").unwrap()[0].refused, None);
        let record = EvidenceRecord::new(4, "att2".into(), None, 1, "cd".repeat(32)).unwrap();
        s.add_batch("R1", 2, &[record]).unwrap();
        assert!(s.batches("R1").unwrap()[1].is_pending());
        s.batch_refused("R1", 2, "the deadline passed").unwrap();
        drop(s);
        let s = SqliteState::open(&path).unwrap();
        let batches = s.batches("R1").unwrap();
        assert_eq!(batches[1].refused.as_deref(), Some("the deadline passed"));
        assert!(!batches[1].is_pending());
        let events = s.events_after("R1", 1).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].seq, 2);
    }
}

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
use skilltrial_core::settlement::EvidenceRecord;

/// Where a hosted run stands in the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

    fn parse(text: &str) -> Option<Self> {
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

/// The most sign-in nonces out at once (unexpired and unused): a flood of challenges is turned
/// away (`429`) once this many wait for a signature, instead of growing the state for ever.
pub const MAX_LIVE_NONCES: u64 = 10_000;

#[derive(Debug, thiserror::Error)]
#[error("runner state {path}: {message}")]
pub struct StateError {
    path: String,
    message: String,
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
}

const SCHEMA: &str = "
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

/// The embedded backend: one SQLite file (WAL, `synchronous=FULL`).
#[derive(Debug)]
pub struct SqliteState {
    conn: Connection,
    path: PathBuf,
    nonce_cap: u64,
}

impl SqliteState {
    pub fn open(path: &Path) -> Result<Self, StateError> {
        let fail = |e: rusqlite::Error| StateError {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let conn = Connection::open(path).map_err(fail)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(fail)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(fail)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(fail)?;
        conn.execute_batch(SCHEMA).map_err(fail)?;
        // A state written before batches could be refused lacks the column: add it (NULL for
        // every batch it holds, which were never refused).
        let has_refused: bool = conn
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('batches') WHERE name = 'refused'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(fail)?
            > 0;
        if !has_refused {
            conn.execute_batch("ALTER TABLE batches ADD COLUMN refused TEXT")
                .map_err(fail)?;
        }
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

    fn run_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<HostedRun> {
        let phase: String = row.get(5)?;
        let run_id: i64 = row.get(3)?;
        Ok(HostedRun {
            address: row.get(0)?,
            user: row.get(1)?,
            manifest: row.get(2)?,
            run_id: u64::try_from(run_id).unwrap_or(0),
            deadline: row.get(4)?,
            phase: Phase::parse(&phase).unwrap_or(Phase::Failed),
            detail: row.get(6)?,
            report_hash: row.get(7)?,
            finalize_signature: row.get(8)?,
            created_at: row.get(9)?,
            updated_at: row.get(10)?,
        })
    }

    fn select_runs(
        &self,
        filter: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<HostedRun>, StateError> {
        let sql = format!(
            "SELECT address, user, manifest, run_id, deadline, phase, detail, report_hash, finalize_signature, created_at, updated_at FROM runs {filter}"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.fail(e))?;
        stmt.query_map(args, Self::run_row)
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
                |r| r.get(0),
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
                "INSERT OR IGNORE INTO runs (address, user, manifest, run_id, deadline, phase, detail, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
                params![
                    run.address,
                    run.user,
                    run.manifest,
                    run_id,
                    run.deadline,
                    run.phase.as_str(),
                    run.detail,
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
            .prepare_cached(
                "SELECT seq, evidence, signature, refused FROM batches WHERE run = ?1 ORDER BY seq",
            )
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map(params![address], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .map_err(|e| self.fail(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))?;
        rows.into_iter()
            .map(|(seq, evidence, signature, refused)| {
                Ok(Batch {
                    seq: u32::try_from(seq).map_err(|e| self.fail(e))?,
                    evidence: serde_json::from_str(&evidence).map_err(|e| self.fail(e))?,
                    signature,
                    refused,
                })
            })
            .collect()
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
            .prepare_cached(
                "SELECT seq, at, kind, data FROM events WHERE run = ?1 AND seq > ?2 ORDER BY seq",
            )
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map(params![address, after], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(|e| self.fail(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))?;
        Ok(rows
            .into_iter()
            .map(|(seq, at, kind, data)| Event {
                run: address.to_owned(),
                seq: u64::try_from(seq).unwrap_or(0),
                at,
                kind,
                data: serde_json::from_str(&data).unwrap_or(Value::Null),
            })
            .collect())
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

    /// A state written before batches could be refused opens with the column added, its
    /// batches unrefused.
    #[test]
    fn a_state_from_before_refused_batches_is_upgraded_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner.sqlite");
        let old = SCHEMA.replace(
            "    -- Why the program refused it for good (the deadline passed, the cancel window closed):\n    -- never sent again, never charged. Added after the first release (see `open`).\n    refused   TEXT,\n",
            "",
        );
        assert_ne!(old, SCHEMA, "the old schema lacks the column");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(&old).unwrap();
            conn.execute(
                "INSERT INTO runs VALUES ('R1', 'alice', 'm', 1, 2, 'executing', NULL, NULL, NULL, 1, 1)",
                [],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO batches (run, seq, evidence, signature) VALUES ('R1', 1, '[]', 'sig')",
                [],
            )
            .unwrap();
        }
        let mut s = SqliteState::open(&path).unwrap();
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

//! The journal: one SQLite file (WAL, `synchronous=FULL`, foreign keys on) holding runs, trials,
//! attempts, the money ledger and every checker verdict.
//!
//! Every state change of an attempt and its ledger rows commit in one transaction
//! ([`Journal::write`]); a commit is durable when the call returns. The `dispatched` row MUST be
//! committed before the request leaves, so that a crash can never forget a request that may have
//! cost money.
//!
//! Money (µUSD) is derived from the ledger only: outstanding reserve = Σ reserve − Σ release,
//! spent = Σ spend. An `unknown` attempt keeps its reserve until the user resolves it.
//!
//! States are the enums of [`skilltrial_core::state`] and [`Outcome`], bound as their text; the
//! schema's `CHECK` constraints admit exactly that text (migration 0004).
//!
//! A journal may be replicated ([`Journal::replicate`]): every write transaction's row changes
//! go to a [`ChangeSink`] before it commits, and [`Journal::restore`] rebuilds a journal from
//! them elsewhere (the hosted runner's workers taking a run over).
//!
//! This file holds the types, opening and migrating, and the one write path; the methods are
//! split by what they touch: `runs` (runs, trials, status, clock, cancel),
//! `attempts` (every attempt state change), `verdicts`, `money` (ledger totals, reserves),
//! `recovery` (`recover`, `resolve`) and `payloads`.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, Row, Transaction, TransactionBehavior};
use serde::Serialize;

use skilltrial_core::money::MicroUsd;
use skilltrial_core::outcome::Outcome;
use skilltrial_core::state::UnknownState;
pub use skilltrial_core::state::{AttemptState, LedgerKind, NotRunReason, PayloadKind, RunStatus};
use skilltrial_sqlite::MigrateError;
use skilltrial_sqlite::replica::{self, ChangeSink, Replica, RestoreError, ShipError};

/// The schema version: the number of migrations applied.
///
/// Log: 1 — first schema (runs, trials, attempts, ledger, checks, payloads); 2 — the run's clock
/// (`runs.run_limit_ms`, `runs.executed_ms`); 3 — `attempts.runner_us`, the runner's own time
/// per attempt; 4 — `CHECK`s on every stored state (attempt and check outcomes, not-run
/// reasons), so that no text outside the enums can be written; 5 — `payloads.content`, a
/// payload's bytes in the commit that records it; 6 — the not-run reason
/// `not_run_model_unavailable`; 7 — `runs.concurrency` and `runs.syncs` (requests in flight at
/// once, and the engine's durable syncs); 8 — `attempts.turn`, `attempts.prior_turn` and
/// `attempts.exchange` (trials of several turns). Keep `MIGRATIONS` in file-number order; the files live in the
/// workspace's `migrations/journal/` (the home of every database's migrations), named by path
/// from this file so the crate builds wherever the workspace is.
pub const SCHEMA_VERSION: u32 = 8;

const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/journal/0001_journal.sql"),
    include_str!("../../migrations/journal/0002_run_clock.sql"),
    include_str!("../../migrations/journal/0003_attempt_runner_time.sql"),
    include_str!("../../migrations/journal/0004_state_checks.sql"),
    include_str!("../../migrations/journal/0005_payload_content.sql"),
    include_str!("../../migrations/journal/0006_model_unavailable.sql"),
    include_str!("../../migrations/journal/0007_concurrency.sql"),
    include_str!("../../migrations/journal/0008_turns.sql"),
];

/// How long a connection waits for another process's write lock before failing. Set before any
/// other statement, so that even the first pragmas of a fresh journal wait instead of failing.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Prepared statements kept per connection: more than the journal has distinct statements, so
/// none is ever parsed twice (the engine runs the same dozen per trial).
const STATEMENT_CACHE: usize = 64;

/// Why the journal failed.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Sql {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "journal {0} was written by a newer SkillTrial (schema {1}, this one knows {SCHEMA_VERSION})"
    )]
    TooNew(PathBuf, u32),
    #[error("{0}")]
    State(String),
    #[error(
        "journal {path}: run {run} releases more than it reserved ({kind}: reserved {reserved}, released {released})"
    )]
    OverRelease {
        path: PathBuf,
        run: String,
        kind: &'static str,
        reserved: u64,
        released: u64,
    },
    /// The replica did not store a write transaction ([`Journal::replicate`]): the write was
    /// rolled back, and the journal takes no more writes.
    #[error(
        "journal {path}: its replica refused the write ({reason}); the journal takes no more writes"
    )]
    ReplicaRefused { path: PathBuf, reason: String },
    #[error("journal {path}: cannot restore it from its replica's log: {source}")]
    Restore {
        path: PathBuf,
        #[source]
        source: Box<RestoreError>,
    },
}

/// A failure inside a journal transaction, before [`Journal::write`] names the file: SQL errors
/// convert with `?`, domain refusals with `.into()`.
#[derive(Debug)]
enum TxError {
    Sql(rusqlite::Error),
    Journal(JournalError),
}

impl From<rusqlite::Error> for TxError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sql(e)
    }
}

impl From<JournalError> for TxError {
    fn from(e: JournalError) -> Self {
        Self::Journal(e)
    }
}

/// A refusal inside a transaction (the transaction rolls back).
fn refuse(message: String) -> TxError {
    TxError::Journal(JournalError::State(message))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The position of `name` in `columns`, computed at compile time (a wrong name does not build):
/// rows are read by column name without a name lookup per row.
#[allow(clippy::panic)] // only ever evaluated in `const` blocks (`at!`): a build error, not a panic
const fn column(columns: &[&str], name: &str) -> usize {
    let mut i = 0;
    while i < columns.len() {
        let (a, b) = (columns[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("no such column in the list");
}

/// A state stored as text, parsed; unknown text is an error, never a default.
fn parsed<T: FromStr<Err = UnknownState>>(r: &Row<'_>, idx: usize) -> rusqlite::Result<T> {
    let text: String = r.get(idx)?;
    text.parse().map_err(|e: UnknownState| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// As [`parsed`], for a nullable column.
fn parsed_opt<T: FromStr<Err = UnknownState>>(
    r: &Row<'_>,
    idx: usize,
) -> rusqlite::Result<Option<T>> {
    match r.get::<_, Option<String>>(idx)? {
        None => Ok(None),
        Some(_) => parsed(r, idx).map(Some),
    }
}

/// A run row.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub id: String,
    pub manifest_sha256: String,
    pub pack_id: String,
    pub created_at_ms: i64,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    pub status: RunStatus,
    pub cancel_requested: bool,
    pub cap_micros: Option<u64>,
    pub max_requests: u32,
    pub max_tokens: Option<u64>,
    /// The run's time limit (ms), from its manifest; `None` for runs recorded before schema 2.
    pub run_limit_ms: Option<u64>,
    /// The time (ms) the runner has spent executing this run, over every `run` invocation.
    pub executed_ms: u64,
    /// Requests in flight at once in the run's latest invocation; `None` for runs recorded
    /// before schema 7 (one at a time).
    pub concurrency: Option<u32>,
    /// The engine's durable syncs of this run (see [`Journal::sync`]).
    pub syncs: u64,
}

/// The ledger's raw sums for one run (µUSD and tokens), as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct LedgerTotals {
    pub reserve_micros: u64,
    pub release_micros: u64,
    pub spend_micros: u64,
    pub reserve_tokens: u64,
    pub release_tokens: u64,
    pub spend_tokens: u64,
}

/// A trial row.
#[derive(Debug, Clone, Serialize)]
pub struct TrialRow {
    pub idx: u32,
    pub task: String,
    pub arm: String,
    pub repetition: u32,
    pub reserve_micros: u64,
    pub input_token_bound: u64,
    pub max_output_tokens: u64,
}

/// An attempt row.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptRow {
    pub id: String,
    pub trial_idx: u32,
    pub seq: u32,
    pub retry_of: Option<String>,
    pub retry_reason: Option<String>,
    pub state: AttemptState,
    pub outcome: Option<Outcome>,
    pub reasons: Vec<String>,
    pub details: serde_json::Value,
    pub reserved_micros: u64,
    pub reserved_tokens: u64,
    pub spent_micros: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub request_sha256: Option<String>,
    pub http_status: Option<u16>,
    pub provider_request_id: Option<String>,
    pub model_reported: Option<String>,
    pub system_fingerprint: Option<String>,
    pub response_sha256: Option<String>,
    pub answer_sha256: Option<String>,
    pub latency_ms: Option<u64>,
    pub error: Option<String>,
    pub planned_at_ms: i64,
    pub dispatched_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    /// The turn of its trial this attempt is (1-based; always 1 inline).
    pub turn: u32,
    /// The answered turn that led to this one.
    pub prior_turn: Option<String>,
    /// An answered turn that asked for tools: its text and calls (JSON). Such a turn is not the
    /// trial's answer: the next turn carries the trial on.
    pub exchange: Option<String>,
}

/// Money of a run, from the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Money {
    /// Reserved and not yet released (in flight or held by unknown attempts).
    pub reserved: MicroUsd,
    /// Spent: usage at cost, plus reserves the user released as spent.
    pub spent: MicroUsd,
    /// Tokens reserved and not yet released.
    pub reserved_tokens: u64,
    /// Tokens used.
    pub used_tokens: u64,
}

/// What a finished model call reports.
#[derive(Debug, Clone, Default)]
pub struct CallRecord {
    pub http_status: Option<u16>,
    pub provider_request_id: Option<String>,
    pub model_reported: Option<String>,
    pub system_fingerprint: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub spent: MicroUsd,
    pub response_sha256: Option<String>,
    pub answer_sha256: Option<String>,
    pub latency_ms: u64,
    pub error: Option<String>,
}

/// When a commit must be on disk.
///
/// In WAL mode a commit appends its pages to the log. With `synchronous=FULL` (the journal's
/// setting) the log is fsynced at every commit; with `NORMAL` it is not, and the commit becomes
/// durable with the next FULL commit's fsync, which covers every page appended before it, in
/// order. A process that is killed loses neither (the pages are in the OS's cache); a power loss
/// may lose a deferred commit, and then everything after it, never a commit alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// Durable when the call returns.
    Now,
    /// Durable with the next `Now` commit. Only for a commit whose loss on power failure leaves
    /// a state the engine recovers from as if it had never been made: a reserve with its planned
    /// attempt (nothing was sent before the `dispatched` commit, which is `Now`), a verdict
    /// (re-scored from the durable answer).
    WithNextCommit,
}

/// A payload journaled with a result: its row and its bytes, which the journal keeps itself so
/// they are durable in the same commit as the result (migration 0005).
#[derive(Debug, Clone, Copy)]
pub struct StoredPayload<'a> {
    pub sha256: &'a str,
    pub kind: PayloadKind,
    pub bytes: u64,
    pub content: Option<&'a [u8]>,
}

/// How the user resolves an `unknown` attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Close it; its reserve counts as spent.
    Release,
    /// Close it as with `Release`, and plan a new attempt of the same trial carrying `reason`.
    Retry { reason: String },
}

/// The journal.
#[derive(Debug)]
pub struct Journal {
    conn: Connection,
    path: PathBuf,
    /// Set between [`Journal::defer_fsyncs`] and [`Journal::fsync_again`]: commits skip their
    /// own fsync and become durable at the next [`Journal::sync`].
    deferring: bool,
    /// Set by [`Journal::replicate`]. A mutex, because the `&self` writers ship changes too.
    replica: Option<Mutex<Replica>>,
}

/// Hands the changes of the write transaction open on `conn` to the replica, if there is one
/// ([`Replica::ship`]); an error leaves the transaction to roll back. Call it last before
/// COMMIT.
fn ship(
    replica: Option<&Mutex<Replica>>,
    conn: &Connection,
    path: &Path,
) -> Result<(), JournalError> {
    let Some(replica) = replica else {
        return Ok(());
    };
    let refused = |reason| JournalError::ReplicaRefused {
        path: path.to_path_buf(),
        reason,
    };
    replica
        .lock()
        .map_err(|_| refused("a write panicked while shipping to it".to_owned()))?
        .ship(conn)
        .map_err(|e| match e {
            ShipError::Sql(source) => JournalError::Sql {
                path: path.to_path_buf(),
                source,
            },
            ShipError::Refused(reason) => refused(reason),
        })
}

/// After a COMMIT of a replicated journal failed ([`Replica::commit_failed`]).
fn commit_failed(replica: Option<&Mutex<Replica>>, error: &rusqlite::Error) {
    if let Some(Ok(mut replica)) = replica.map(Mutex::lock) {
        replica.commit_failed(error);
    }
}

/// The columns [`Journal::run_from`] reads, in `SELECT` order.
const RUN_COLUMNS: &[&str] = &[
    "id",
    "manifest_sha256",
    "pack_id",
    "created_at_ms",
    "started_at_ms",
    "finished_at_ms",
    "status",
    "cancel_requested",
    "cap_micros",
    "max_requests",
    "max_tokens",
    "run_limit_ms",
    "executed_ms",
    "concurrency",
    "syncs",
];

/// The columns [`Journal::attempt_from`] reads (and the attempt's run), in `SELECT` order.
const ATTEMPT_COLUMNS: &[&str] = &[
    "id",
    "run_id",
    "trial_idx",
    "seq",
    "retry_of",
    "retry_reason",
    "state",
    "outcome",
    "reasons",
    "details",
    "reserved_micros",
    "reserved_tokens",
    "spent_micros",
    "input_tokens",
    "output_tokens",
    "request_sha256",
    "http_status",
    "provider_request_id",
    "model_reported",
    "system_fingerprint",
    "response_sha256",
    "answer_sha256",
    "latency_ms",
    "error",
    "planned_at_ms",
    "dispatched_at_ms",
    "finished_at_ms",
    "turn",
    "prior_turn",
    "exchange",
];

/// `SELECT <columns> FROM <table> <tail>`.
fn select(columns: &[&str], table: &str, tail: &str) -> String {
    format!("SELECT {} FROM {table} {tail}", columns.join(", "))
}

/// The position of column `$name` in the column list `$columns`, at compile time.
macro_rules! at {
    ($columns:expr, $name:literal) => {
        const { column($columns, $name) }
    };
}

// The methods of `Journal`, by what they touch (declared after `at!`, so each can use it).
mod attempts;
mod money;
mod payloads;
mod recovery;
mod runs;
mod verdicts;

impl JournalError {
    /// Whether SQLite said the file is busy or locked by another connection.
    fn is_busy(&self) -> bool {
        matches!(
            self,
            JournalError::Sql {
                source: rusqlite::Error::SqliteFailure(e, _),
                ..
            } if matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            )
        )
    }
}

impl Journal {
    /// Opens (creating and migrating) the journal at `path`. Processes racing to create, switch
    /// to WAL and migrate a fresh journal wait for each other: the busy timeout covers ordinary
    /// lock waits, but SQLite returns "database is locked" at once where waiting could deadlock
    /// (a lock upgrade, a journal-mode switch while another connection reads), so a busy open is
    /// retried from the start, with a growing pause, until `BUSY_TIMEOUT` has passed.
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mut pause = std::time::Duration::from_millis(5);
        loop {
            match Self::open_once(path) {
                Err(e) if e.is_busy() && std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(200));
                }
                opened => return opened,
            }
        }
    }

    fn open_once(path: &Path) -> Result<Self, JournalError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                JournalError::State(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let sql = |source| JournalError::Sql {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        // First of all: other processes (a `status` in another terminal, a second `run`) may be
        // opening or migrating the same file this very moment.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sql)?;
        // The journal holds payloads (schema 5): a purged one must not stay readable in freed
        // pages of the file.
        conn.pragma_update(None, "secure_delete", "ON")
            .map_err(sql)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let mut journal = Self {
            conn,
            path: path.to_path_buf(),
            deferring: false,
            replica: None,
        };
        journal.migrate()?;
        Ok(journal)
    }

    /// Opens an existing journal for reading only, for a state directory this process may not
    /// write (a read-only mount, a `chmod -R a-w` copy): `status`, `report`, `compare` still
    /// work there. SQLite opens a WAL journal read-only only if it can use the `-shm` file
    /// beside it; with no `-wal` file left (every connection closed cleanly) nothing is pending,
    /// so the file is opened as immutable, which needs neither. A leftover `-wal` holds
    /// committed rows the main file lacks, so then it is opened read-only the ordinary way.
    /// Nothing is migrated: a journal of an older schema is refused, naming the reason.
    pub fn open_read_only(path: &Path) -> Result<Self, JournalError> {
        let sql = |source| JournalError::Sql {
            path: path.to_path_buf(),
            source,
        };
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let mut uri = "file:".to_owned();
        for c in path.to_string_lossy().chars() {
            match c {
                '%' => uri.push_str("%25"),
                '?' => uri.push_str("%3f"),
                '#' => uri.push_str("%23"),
                c => uri.push(c),
            }
        }
        if !Path::new(&wal).exists() {
            uri.push_str("?immutable=1");
        }
        let conn = Connection::open_with_flags(
            &uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                | rusqlite::OpenFlags::SQLITE_OPEN_URI
                | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let version: u32 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql)?;
        if version > SCHEMA_VERSION {
            return Err(JournalError::TooNew(path.to_path_buf(), version));
        }
        if version < SCHEMA_VERSION {
            return Err(JournalError::State(format!(
                "journal {} is of schema {version} and needs migrating to {SCHEMA_VERSION}, but its directory is read-only",
                path.display()
            )));
        }
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            deferring: false,
            replica: None,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection (a read, or one statement that commits by itself), naming the
    /// file in its error.
    fn sql<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, JournalError> {
        f(&self.conn).map_err(|source| JournalError::Sql {
            path: self.path.clone(),
            source,
        })
    }

    /// Runs `f` in one write transaction and commits it; any error rolls everything back. The
    /// transaction takes the write lock first (`BEGIN IMMEDIATE`, waiting up to the busy
    /// timeout): a transaction that reads and then writes cannot then fail half-way because
    /// another process wrote in between. Durable when this returns (`synchronous=FULL`).
    fn write<T>(
        &mut self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, TxError>,
    ) -> Result<T, JournalError> {
        self.write_with(Durability::Now, f)
    }

    /// [`Journal::write`] with a chosen [`Durability`].
    fn write_with<T>(
        &mut self,
        durability: Durability,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, TxError>,
    ) -> Result<T, JournalError> {
        if durability == Durability::WithNextCommit && !self.deferring {
            self.set_synchronous("NORMAL")?;
            let out = self.write_with(Durability::Now, f);
            // FULL again whatever happened: every other commit must stay durable on return.
            let restored = self.set_synchronous("FULL");
            return out.and_then(|v| restored.map(|()| v));
        }
        let (path, replica) = (&self.path, self.replica.as_ref());
        let sql = |source| JournalError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let value = f(&tx).map_err(|e| match e {
            TxError::Sql(source) => sql(source),
            TxError::Journal(e) => e,
        })?;
        ship(replica, &tx, path)?;
        tx.commit().map_err(|e| {
            commit_failed(replica, &e);
            sql(e)
        })?;
        Ok(value)
    }

    /// Runs `f`, which writes rows with one or a few statements through the connection. Without
    /// a replica each of its statements commits by itself, exactly as [`Journal::sql`] (the
    /// journal's cost, unreplicated, is unchanged); with one, `f` runs in a write transaction
    /// whose changes reach the replica before it commits, as every write of a replicated
    /// journal must.
    fn sql_write<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, JournalError> {
        let Some(replica) = self.replica.as_ref() else {
            return self.sql(f);
        };
        let sql = |source| JournalError::Sql {
            path: self.path.clone(),
            source,
        };
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(sql)?;
        let value = f(&tx).map_err(sql)?;
        ship(Some(replica), &tx, &self.path)?;
        tx.commit().map_err(|e| {
            commit_failed(Some(replica), &e);
            sql(e)
        })?;
        Ok(value)
    }

    /// From now on, every write transaction's row changes are appended to `sink` (see
    /// [`skilltrial_sqlite::replica`]) before it commits, in commit order. A write the sink
    /// refuses is rolled back and fails with [`JournalError::ReplicaRefused`], and so does every
    /// write after it: a writer whose replica stopped taking its writes (a hosted worker that
    /// lost its run's lease) must not go on. Reads go on as before.
    ///
    /// The log holds the writes from this call on: call it on a fresh journal, or on one
    /// [`Journal::restore`]d from the same log. Writes through another connection to the same
    /// file (another process) are not captured: a replicated journal has one writer.
    pub fn replicate(&mut self, sink: Box<dyn ChangeSink>) -> Result<(), JournalError> {
        replica::capture(&self.conn).map_err(|source| JournalError::Sql {
            path: self.path.clone(),
            source,
        })?;
        self.replica = Some(Mutex::new(Replica::new(sink)));
        Ok(())
    }

    /// Builds a NEW journal at `path` (refused if one is there) from a replica's log, oldest
    /// transaction first: a fresh journal of this [`SCHEMA_VERSION`], the log replayed into it
    /// (`skilltrial_sqlite::replica::restore_file`: all or nothing, moved into place whole),
    /// then opened. The log must come from a journal of this schema version. A prefix of a log
    /// restores the journal as it was at that commit; [`Journal::recover`] then applies as after
    /// a crash.
    pub fn restore(
        path: &Path,
        transactions: impl IntoIterator<Item = Vec<String>>,
    ) -> Result<Journal, JournalError> {
        replica::restore_file(
            path,
            |staging| Ok(Journal::open(staging)?.conn),
            transactions,
        )
        .map_err(|source| JournalError::Restore {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        Journal::open(path)
    }

    /// From now on, until [`Journal::fsync_again`], commits skip their own fsync: each becomes
    /// durable at the next [`Journal::sync`], which covers every commit before it, in order
    /// (see [`Durability`]). The engine defers while a run executes, so that N requests in
    /// flight cost one fsync per batch of dispatches or answers, not one per commit; it syncs
    /// before any request it journaled is sent and before any answer is checked. A killed
    /// process loses no deferred commit (the OS holds the pages); a power loss loses at most
    /// what followed the last sync, and nothing unsynced ever left the machine.
    pub fn defer_fsyncs(&mut self) -> Result<(), JournalError> {
        self.set_synchronous("NORMAL")?;
        self.deferring = true;
        Ok(())
    }

    /// Makes every commit so far durable: one commit that always writes (it counts the run's
    /// syncs and stores its clock) and so always fsyncs, even when deferring.
    pub fn sync(&mut self, run_id: &str, executed_ms: u64) -> Result<(), JournalError> {
        let deferring = self.deferring;
        if deferring {
            self.set_synchronous("FULL")?;
        }
        let written = self.sql_write(|c| {
            c.prepare_cached(
                "UPDATE runs SET syncs = syncs + 1, executed_ms = MAX(executed_ms, ?2) WHERE id = ?1",
            )?
            .execute(rusqlite::params![run_id, to_i64(executed_ms)])
        });
        if deferring {
            self.set_synchronous("NORMAL")?;
        }
        match written? {
            1 => Ok(()),
            _ => Err(JournalError::State(format!("run {run_id} vanished"))),
        }
    }

    /// Ends [`Journal::defer_fsyncs`]: every commit is durable when it returns again, and the
    /// next one makes the deferred ones durable too.
    pub fn fsync_again(&mut self) -> Result<(), JournalError> {
        self.deferring = false;
        self.set_synchronous("FULL")
    }

    fn set_synchronous(&self, level: &str) -> Result<(), JournalError> {
        self.sql(|c| c.pragma_update(None, "synchronous", level))
    }

    /// Brings the file to [`SCHEMA_VERSION`] (`skilltrial_sqlite::migrate`: one write
    /// transaction, re-reading the version under the lock, foreign keys checked before the
    /// commit).
    fn migrate(&mut self) -> Result<(), JournalError> {
        let path = &self.path;
        skilltrial_sqlite::migrate(&mut self.conn, MIGRATIONS, None)
            .map(drop)
            .map_err(|e| match e {
                MigrateError::Sql(source) => JournalError::Sql {
                    path: path.clone(),
                    source,
                },
                MigrateError::TooNew { found, .. } => JournalError::TooNew(path.clone(), found),
                e @ MigrateError::Orphan { .. } => {
                    JournalError::State(format!("journal {}: {e}", path.display()))
                }
            })
    }

    /// Moves everything in the write-ahead log into the journal file and empties the log, so
    /// bytes a purge dropped (zeroed by `secure_delete`) are gone from both files. Best effort: a
    /// reader holding an old snapshot at this moment leaves the log for the next checkpoint.
    pub fn checkpoint(&self) -> Result<(), JournalError> {
        self.sql(|c| c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::{Journal, JournalError, NotRunReason, SCHEMA_VERSION};
    use skilltrial_core::outcome::Outcome;

    /// Regression (the migrations moved to the workspace's `migrations/journal/`): every
    /// numbered file there is embedded, in file-number order, and the schema version counts
    /// them, so a file added without being listed (or listed out of order) fails here.
    #[test]
    fn every_migration_file_is_embedded_in_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/journal");
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "sql"))
            .collect();
        files.sort();
        let texts: Vec<String> = files
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert_eq!(texts, super::MIGRATIONS, "{}", dir.display());
        assert_eq!(files.len(), SCHEMA_VERSION as usize);
        for (i, p) in files.iter().enumerate() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with(&format!("{:04}_", i + 1)), "{name}");
        }
    }

    /// Many connections racing to create, switch to WAL and migrate one fresh journal all open
    /// it: none is told "database is locked" (SQLite answers that at once, without waiting,
    /// where waiting could deadlock; `open` retries it).
    #[test]
    fn connections_racing_on_a_fresh_journal_all_open_it() {
        for round in 0..30 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("journal.sqlite3");
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        Journal::open(&path).map(|_| ())
                    })
                })
                .collect();
            for h in handles {
                if let Err(e) = h.join().unwrap() {
                    panic!("round {round}: {e}");
                }
            }
        }
    }

    #[test]
    fn a_payload_is_held_by_the_journal_until_it_is_purged() {
        use super::PayloadKind;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        let journal = Journal::open(&path).unwrap();
        journal
            .sql(|c| {
                Journal::record_payload_on(c, "aa", PayloadKind::Answer, 5, Some(b"hello"))?;
                Journal::record_payload_on(c, "bb", PayloadKind::Response, 9, None)
            })
            .unwrap();
        assert_eq!(
            journal.payload_content("aa").unwrap().as_deref(),
            Some(&b"hello"[..])
        );
        // Not held: a payload journaled without its bytes (before schema 5, they are in the
        // payload store); an unknown hash is not here.
        assert_eq!(journal.payload_content("bb").unwrap(), None);
        assert_eq!(journal.payload_content("cc").unwrap(), None);
        // Purged: the bytes are gone from the journal and counted.
        assert_eq!(journal.mark_purged("aa").unwrap(), 5);
        assert_eq!(journal.payload_content("aa").unwrap(), None);
        assert_eq!(journal.mark_purged("bb").unwrap(), 0);
        // The same answer journaled again is held again.
        journal
            .sql(|c| Journal::record_payload_on(c, "aa", PayloadKind::Answer, 5, Some(b"hello")))
            .unwrap();
        assert_eq!(
            journal.payload_content("aa").unwrap().as_deref(),
            Some(&b"hello"[..])
        );
    }

    #[test]
    fn the_journal_is_wal_with_full_sync_and_foreign_keys() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(&dir.path().join("j.sqlite3")).unwrap();
        let mode: String = journal
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = journal
            .conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "synchronous=FULL");
        let fk: i64 = journal
            .conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        let busy: i64 = journal
            .conn
            .pragma_query_value(None, "busy_timeout", |r| r.get(0))
            .unwrap();
        assert_eq!(busy, 30_000);
    }

    #[test]
    fn a_deferred_commit_leaves_the_journal_fully_synchronous_after_it_even_when_it_fails() {
        use super::{Durability, TxError, refuse};
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::open(&dir.path().join("j.sqlite3")).unwrap();
        let sync = |j: &Journal| -> i64 {
            j.conn
                .pragma_query_value(None, "synchronous", |r| r.get(0))
                .unwrap()
        };
        let seen = journal
            .write_with(Durability::WithNextCommit, |tx| {
                Ok(tx.pragma_query_value(None, "synchronous", |r| r.get::<_, i64>(0))?)
            })
            .unwrap();
        assert_eq!(seen, 1, "NORMAL inside the deferred commit");
        assert_eq!(sync(&journal), 2, "FULL again after it");
        let failed = journal.write_with(Durability::WithNextCommit, |_| -> Result<(), TxError> {
            Err(refuse("no".to_owned()))
        });
        assert!(failed.is_err());
        assert_eq!(sync(&journal), 2, "FULL again after a failed one");
    }

    #[test]
    fn a_journal_of_schema_1_is_migrated_and_keeps_its_runs_and_attempt_ids() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(super::MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute_batch(
                "INSERT INTO runs (id, manifest_sha256, pack_id, created_at_ms, status, max_requests)
                   VALUES ('abababababababab', 'abababababababab', 'p@1', 1, 'finished', 10);
                 INSERT INTO trials VALUES ('abababababababab', 0, 't', 'a', 1, 5, 1, 1);
                 INSERT INTO attempts (id, run_id, trial_idx, seq, state, planned_at_ms)
                   VALUES ('abababababab-000-1', 'abababababababab', 0, 1, 'planned', 1);",
            )
            .unwrap();
        }
        let mut journal = Journal::open(&path).unwrap();
        let version: u32 = journal
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let run = journal.find_run("abababababababab").unwrap().unwrap();
        assert_eq!((run.run_limit_ms, run.executed_ms), (None, 0));
        let attempts = journal.attempts("abababababababab").unwrap();
        assert_eq!(
            attempts[0].id, "abababababab-000-1",
            "old ids stay as they were"
        );
        // New attempts get the new, globally unique form.
        let id = journal
            .plan_attempt(
                "abababababababab",
                0,
                skilltrial_core::money::MicroUsd(5),
                1,
                None,
            )
            .unwrap();
        assert!(id.starts_with("abababababab-000-2-"), "{id}");
        assert_eq!(id.len(), "abababababab-000-2-".len() + 12);
        // Opening again migrates nothing more.
        drop(journal);
        Journal::open(&path).unwrap();
    }

    #[test]
    fn closing_a_planned_attempt_as_not_run_releases_its_reserve_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::open(&dir.path().join("j.sqlite3")).unwrap();
        journal
            .conn
            .execute_batch(
                "INSERT INTO runs (id, manifest_sha256, pack_id, created_at_ms, status, max_requests)
                   VALUES ('r', 'r', 'p@1', 1, 'running', 10);
                 INSERT INTO trials VALUES ('r', 0, 't', 'a', 1, 5, 1, 1);",
            )
            .unwrap();
        let id = journal
            .plan_attempt("r", 0, skilltrial_core::money::MicroUsd(70), 9, None)
            .unwrap();
        journal
            .close_planned_not_run(&id, NotRunReason::Budget, "no room")
            .unwrap();
        let (_, row) = journal.attempt(&id).unwrap().unwrap();
        assert_eq!(row.state, super::AttemptState::Closed);
        assert_eq!(row.outcome, Some(Outcome::NotRun));
        assert_eq!(row.reasons, vec!["not_run_budget".to_owned()]);
        let t = journal.ledger_totals("r").unwrap();
        assert_eq!(
            (t.reserve_micros, t.release_micros, t.spend_micros),
            (70, 70, 0)
        );
        assert_eq!((t.reserve_tokens, t.release_tokens), (9, 9));
        let again = journal
            .close_planned_not_run(&id, NotRunReason::Budget, "no room")
            .unwrap_err();
        assert_eq!(again.to_string(), format!("attempt {id} is not planned"));
        assert_eq!(
            journal.ledger_totals("r").unwrap(),
            t,
            "nothing released twice"
        );
    }

    #[test]
    fn a_release_beyond_the_reserves_is_an_error_not_a_zero() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        let journal = Journal::open(&path).unwrap();
        journal
            .conn
            .execute_batch(
                "INSERT INTO runs (id, manifest_sha256, pack_id, created_at_ms, status, max_requests)
                   VALUES ('r', 'r', 'p@1', 1, 'running', 10);
                 INSERT INTO ledger (run_id, kind, micros, tokens, at_ms) VALUES ('r', 'reserve', 100, 10, 1);
                 INSERT INTO ledger (run_id, kind, micros, tokens, at_ms) VALUES ('r', 'release', 100, 10, 1);",
            )
            .unwrap();
        assert_eq!(journal.money("r").unwrap().reserved.0, 0);
        journal
            .conn
            .execute(
                "INSERT INTO ledger (run_id, kind, micros, tokens, at_ms) VALUES ('r', 'release', 100, 10, 2)",
                [],
            )
            .unwrap();
        let err = journal.money("r").unwrap_err();
        assert!(matches!(err, JournalError::OverRelease { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "journal {}: run r releases more than it reserved (micro-USD: reserved 100, released 200)",
                path.display()
            )
        );
    }

    /// A run of a schema-3 journal, with a row in every state the journal stores.
    const RUN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    /// Writes a journal of schema 3 (migrations 0001-0003, as SkillTrial wrote them before 0004)
    /// holding every run status, attempt state, outcome, not-run reason, ledger kind, verdict
    /// outcome and payload kind.
    fn schema_3_journal(path: &std::path::Path) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        for migration in &super::MIGRATIONS[..3] {
            conn.execute_batch(migration).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        conn.execute_batch(&format!(
            r#"
            INSERT INTO runs (id, manifest_sha256, pack_id, created_at_ms, started_at_ms, finished_at_ms, status, cancel_requested, cap_micros, max_requests, max_tokens, run_limit_ms, executed_ms)
              VALUES ('{RUN}', '{RUN}', 'solana-core@1.0.3', 1000, 1100, 9000, 'finished', 0, 5000000, 60, 900000, 3600000, 7900);
            INSERT INTO runs (id, manifest_sha256, pack_id, created_at_ms, status, max_requests)
              VALUES ('{p}', '{p}', 'p@1', 1, 'planned', 10), ('{r}', '{r}', 'p@1', 2, 'running', 10),
                     ('{c}', '{c}', 'p@1', 3, 'cancelled', 10), ('{s}', '{s}', 'p@1', 4, 'stopped', 10);
            UPDATE runs SET cancel_requested = 1 WHERE status = 'cancelled';
            "#,
            p = "1".repeat(64),
            r = "2".repeat(64),
            c = "3".repeat(64),
            s = "4".repeat(64),
        ))
        .unwrap();
        for idx in 0..14u32 {
            let arm = ["baseline", "a", "b"][(idx % 3) as usize];
            conn.execute(
                "INSERT INTO trials VALUES (?1, ?2, ?3, ?4, ?5, 120000, 1800, 1024)",
                rusqlite::params![RUN, idx, format!("task-{}", idx / 3), arm, 1 + idx % 2],
            )
            .unwrap();
        }
        /// (trial, seq, state, outcome, reasons, retry_of)
        type Attempt<'a> = (u32, u32, &'a str, Option<&'a str>, &'a str, Option<&'a str>);
        let attempts: &[Attempt<'_>] = &[
            (0, 1, "planned", None, "[]", None),
            (1, 1, "dispatched", None, "[]", None),
            (2, 1, "result", Some("pass"), "[]", None),
            (3, 1, "result", Some("fail"), r#"["wrong_amount"]"#, None),
            (
                4,
                1,
                "result",
                Some("invalid_output"),
                r#"["no_json"]"#,
                None,
            ),
            (
                5,
                1,
                "result",
                Some("unsupported_case"),
                r#"["unsupported"]"#,
                None,
            ),
            (6, 1, "result", None, "[]", None),
            (7, 1, "unknown", Some("unknown"), r#"["no_answer"]"#, None),
            (
                8,
                1,
                "closed",
                Some("infrastructure_error"),
                r#"["http_500"]"#,
                None,
            ),
            (
                8,
                2,
                "planned",
                None,
                "[]",
                Some("0123456789ab-008-1-000000000008"),
            ),
            (9, 1, "closed", Some("interrupted"), r#"["restart"]"#, None),
            (
                10,
                1,
                "closed",
                Some("not_run"),
                r#"["not_run_budget"]"#,
                None,
            ),
            (
                11,
                1,
                "closed",
                Some("not_run"),
                r#"["not_run_time_limit"]"#,
                None,
            ),
            (
                12,
                1,
                "closed",
                Some("not_run"),
                r#"["not_run_request_cap"]"#,
                None,
            ),
            (13, 1, "closed", Some("not_run"), r#"["cancelled"]"#, None),
        ];
        for &(trial, seq, state, outcome, reasons, retry_of) in attempts {
            let id = format!(
                "0123456789ab-{trial:03}-{seq}-{:012}",
                if seq == 1 { trial } else { 100 + trial }
            );
            let dispatched = matches!(state, "dispatched" | "result" | "unknown")
                || outcome == Some("interrupted");
            conn.execute(
                "INSERT INTO attempts (id, run_id, trial_idx, seq, retry_of, retry_reason, state, outcome, reasons, details, reserved_micros, reserved_tokens, spent_micros, input_tokens, output_tokens, request_sha256, http_status, provider_request_id, model_reported, system_fingerprint, response_sha256, answer_sha256, latency_ms, error, planned_at_ms, dispatched_at_ms, finished_at_ms, runner_us)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, '[{\"field\":\"amount\"}]', 120000, 2824, ?10, 1500, 300, ?11, 200, 'req_01', 'model-x', 'fp_1', 'aa', 'bb', 850, ?12, 1200, ?13, 2100, ?14)",
                rusqlite::params![
                    id,
                    RUN,
                    trial,
                    seq,
                    retry_of,
                    retry_of.map(|_| "automatic retry 1 of 3: http_500"),
                    state,
                    outcome,
                    reasons,
                    (state == "result").then_some(4321),
                    dispatched.then_some("cc"),
                    (state == "closed").then_some("went wrong"),
                    dispatched.then_some(1300),
                    (state == "result").then_some(950),
                ],
            )
            .unwrap();
        }
        conn.execute_batch(
            r#"
            INSERT INTO ledger (run_id, attempt_id, kind, micros, tokens, at_ms, note) VALUES
              ('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', '0123456789ab-002-1-000000000002', 'reserve', 120000, 2824, 1200, 'upper cost reserved before dispatch'),
              ('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', '0123456789ab-002-1-000000000002', 'release', 120000, 2824, 2000, 'result received'),
              ('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', '0123456789ab-002-1-000000000002', 'spend', 4321, 1800, 2000, 'usage at cost'),
              ('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', '0123456789ab-007-1-000000000007', 'reserve', 120000, 2824, 1200, 'upper cost reserved before dispatch');
            INSERT INTO checks (attempt_id, checker_version, checker_source_sha256, outcome, reasons, details, at_ms) VALUES
              ('0123456789ab-002-1-000000000002', '1', 'dd', 'fail', '["wrong_amount"]', '[]', 2001),
              ('0123456789ab-002-1-000000000002', '1', 'dd', 'pass', '[]', '[]', 2002),
              ('0123456789ab-003-1-000000000003', '1', 'dd', 'fail', '["wrong_amount"]', '[]', 2003),
              ('0123456789ab-004-1-000000000004', '1', 'dd', 'invalid_output', '["no_json"]', '[]', 2004),
              ('0123456789ab-005-1-000000000005', '1', 'dd', 'unsupported_case', '["unsupported"]', '[]', 2005);
            INSERT INTO payloads (sha256, kind, bytes, created_at_ms, purged_at_ms) VALUES
              ('cc', 'request', 2048, 1300, NULL), ('aa', 'response', 900, 2000, NULL), ('bb', 'answer', 400, 2000, 2500);
            "#,
        )
        .unwrap();
    }

    /// Every row of every table (and the AUTOINCREMENT counters), in a stable order.
    fn dump(conn: &rusqlite::Connection) -> Vec<(String, Vec<Vec<rusqlite::types::Value>>)> {
        [
            "runs",
            "trials",
            "attempts",
            "ledger",
            "checks",
            "payloads",
            "sqlite_sequence",
        ]
        .iter()
        .map(|table| {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
                .unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| (0..n).map(|i| r.get(i)).collect())
                .unwrap()
                .collect::<Result<Vec<Vec<rusqlite::types::Value>>, _>>()
                .unwrap();
            ((*table).to_owned(), rows)
        })
        .collect()
    }

    fn check_error(result: rusqlite::Result<usize>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn a_journal_of_schema_3_migrates_to_the_current_schema_with_every_row_intact_and_every_state_checked()
     {
        use super::{AttemptState, RunStatus};
        // Given a schema-3 journal with a row in every state
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        schema_3_journal(&path);
        let before = dump(&rusqlite::Connection::open(&path).unwrap());
        assert_eq!(before[2].1.len(), 15, "every attempt written");

        // When SkillTrial opens it
        let mut journal = Journal::open(&path).unwrap();

        // Then it is at the current schema (8), with every row as it was (payloads gain an
        // empty `content`: their bytes stay in the payload store; runs gain no concurrency and
        // no syncs; attempts are each a first turn) and foreign keys on and whole
        let version: u32 = journal
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!((version, SCHEMA_VERSION), (8, 8));
        let mut expected = before.clone();
        for (table, rows) in &mut expected {
            if table == "payloads" {
                for row in rows.iter_mut() {
                    row.push(rusqlite::types::Value::Null);
                }
            }
            if table == "runs" {
                for row in rows.iter_mut() {
                    row.push(rusqlite::types::Value::Null);
                    row.push(rusqlite::types::Value::Integer(0));
                }
            }
            if table == "attempts" {
                for row in rows.iter_mut() {
                    row.push(rusqlite::types::Value::Integer(1));
                    row.push(rusqlite::types::Value::Null);
                    row.push(rusqlite::types::Value::Null);
                }
            }
        }
        assert_eq!(dump(&journal.conn), expected);
        let fk: i64 = journal
            .conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        let integrity: String = journal
            .conn
            .pragma_query_value(None, "integrity_check", |r| r.get(0))
            .unwrap();
        assert_eq!(integrity, "ok");
        let orphans: i64 = journal
            .conn
            .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(orphans, 0);

        // ... read back through the typed API
        let attempts = journal.attempts(RUN).unwrap();
        let seen: Vec<(AttemptState, Option<Outcome>)> =
            attempts.iter().map(|a| (a.state, a.outcome)).collect();
        assert_eq!(seen.len(), 15);
        for state in AttemptState::ALL {
            assert!(seen.iter().any(|s| s.0 == *state), "{state}");
        }
        for outcome in Outcome::ALL {
            assert!(seen.iter().any(|s| s.1 == Some(*outcome)), "{outcome}");
        }
        let not_run: Vec<&str> = attempts
            .iter()
            .filter(|a| a.outcome == Some(Outcome::NotRun))
            .map(|a| a.reasons[0].as_str())
            .collect();
        // Every reason a schema-3 journal could hold (`not_run_model_unavailable` came with 6).
        let reasons: Vec<&str> = NotRunReason::ALL
            .iter()
            .filter(|r| **r != NotRunReason::ModelUnavailable)
            .map(|r| r.as_str())
            .collect();
        assert_eq!(not_run, reasons);
        let retry = &attempts[9];
        assert_eq!(
            (retry.seq, retry.retry_of.as_deref()),
            (2, Some("0123456789ab-008-1-000000000008"))
        );
        for (id, status) in [
            (RUN.to_owned(), RunStatus::Finished),
            ("1".repeat(64), RunStatus::Planned),
            ("2".repeat(64), RunStatus::Running),
            ("3".repeat(64), RunStatus::Cancelled),
            ("4".repeat(64), RunStatus::Stopped),
        ] {
            assert_eq!(journal.find_run(&id).unwrap().unwrap().status, status);
        }
        let money = journal.money(RUN).unwrap();
        assert_eq!((money.reserved.0, money.spent.0), (120_000, 4321));
        assert_eq!(journal.runner_times(RUN).unwrap().len(), 5);

        // ... and no text outside the enums can be written any more
        let refused: [(&str, &str, &[&str]); 5] = [
            (
                "UPDATE attempts SET outcome = 'exploded' WHERE id = '0123456789ab-002-1-000000000002'",
                "CHECK constraint failed",
                &[],
            ),
            (
                "UPDATE attempts SET reasons = '[\"bored\"]' WHERE id = '0123456789ab-010-1-000000000010'",
                "CHECK constraint failed",
                &[],
            ),
            (
                "INSERT INTO checks (attempt_id, checker_version, checker_source_sha256, outcome, reasons, details, at_ms)
                 VALUES ('0123456789ab-002-1-000000000002', '1', 'dd', 'not_run', '[]', '[]', 1)",
                "CHECK constraint failed",
                &[],
            ),
            (
                "INSERT INTO checks (attempt_id, checker_version, checker_source_sha256, outcome, reasons, details, at_ms)
                 VALUES ('no-such-attempt', '1', 'dd', 'pass', '[]', '[]', 1)",
                "FOREIGN KEY constraint failed",
                &[],
            ),
            (
                "INSERT INTO attempts (id, run_id, trial_idx, seq, state, planned_at_ms) VALUES ('x', ?1, 0, 1, 'planned', 1)",
                "UNIQUE constraint failed",
                &[RUN],
            ),
        ];
        for (sql, expected, params) in refused {
            let error = check_error(
                journal
                    .conn
                    .execute(sql, rusqlite::params_from_iter(params.iter())),
            );
            assert!(error.contains(expected), "{sql}: {error}");
        }
        let interrupted = journal.set_status(RUN, RunStatus::Interrupted).unwrap_err();
        assert!(
            interrupted.to_string().contains("CHECK constraint failed"),
            "{interrupted}"
        );
        assert_eq!(
            dump(&journal.conn),
            expected,
            "nothing written by the refusals"
        );

        // ... while every state the enums name is still written
        let id = journal
            .record_not_run(
                RUN,
                13,
                NotRunReason::TimeLimit,
                "the run reached its time limit",
            )
            .unwrap();
        assert!(id.starts_with("0123456789ab-013-2-"), "{id}");
        // (the reason schema 6 added too)
        let id = journal
            .record_not_run(
                RUN,
                13,
                NotRunReason::ModelUnavailable,
                "this runner cannot call the run's model",
            )
            .unwrap();
        assert!(id.starts_with("0123456789ab-013-3-"), "{id}");
        journal.set_status(RUN, RunStatus::Stopped).unwrap();
        let verdict = skilltrial_core::checker::Verdict {
            outcome: Outcome::Pass,
            reasons: Vec::new(),
            details: Vec::new(),
        };
        journal
            .record_verdict("0123456789ab-006-1-000000000006", &verdict)
            .unwrap();
        let newest: i64 = journal
            .conn
            .query_row("SELECT MAX(id) FROM checks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(newest, 6, "verdict ids continue after the copied ones");
    }

    /// Regression: an attempt state the enums do not name used to be read as `closed`.
    #[test]
    fn a_state_the_enums_do_not_name_is_an_error_not_a_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        schema_3_journal(&path);
        let journal = Journal::open(&path).unwrap();
        // Only a journal written around the CHECKs can hold one (a newer SkillTrial's state
        // would come with a newer schema, refused as TooNew).
        journal
            .conn
            .execute_batch(
                "PRAGMA ignore_check_constraints = ON;
                 UPDATE attempts SET state = 'exploded' WHERE id = '0123456789ab-002-1-000000000002';",
            )
            .unwrap();
        let err = journal.attempts(RUN).unwrap_err();
        assert!(
            err.to_string().contains("unknown attempt state `exploded`"),
            "{err}"
        );
    }

    #[test]
    fn a_refused_write_rolls_back_and_an_sql_error_names_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        schema_3_journal(&path);
        let mut journal = Journal::open(&path).unwrap();
        let totals = journal.ledger_totals(RUN).unwrap();
        // A result for an attempt that was never dispatched: refused, and nothing of it stays.
        let planned = "0123456789ab-000-1-000000000000";
        let err = journal
            .record_result(planned, &super::CallRecord::default())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("attempt {planned} is not dispatched")
        );
        assert_eq!(journal.ledger_totals(RUN).unwrap(), totals);
        let (_, row) = journal.attempt(planned).unwrap().unwrap();
        assert_eq!(
            (row.state, row.spent_micros),
            (super::AttemptState::Planned, None)
        );
        // An attempt of a trial the run does not have: the foreign key refuses it.
        let err = journal
            .plan_attempt(RUN, 99, skilltrial_core::money::MicroUsd(1), 1, None)
            .unwrap_err();
        assert!(matches!(err, JournalError::Sql { .. }), "{err:?}");
        assert!(
            err.to_string()
                .starts_with(&format!("journal {}: ", path.display())),
            "{err}"
        );
        assert_eq!(journal.ledger_totals(RUN).unwrap(), totals);
    }

    #[test]
    fn attempts_without_details_are_the_attempts_with_details_left_null() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        schema_3_journal(&path);
        let journal = Journal::open(&path).unwrap();
        let full = journal.attempts(RUN).unwrap();
        assert!(
            full.iter().any(|a| !a.details.is_null()),
            "the fixture has details"
        );
        let expected: Vec<_> = full
            .into_iter()
            .map(|mut a| {
                a.details = serde_json::Value::Null;
                format!("{a:?}")
            })
            .collect();
        let brief: Vec<_> = journal
            .attempts_without_details(RUN)
            .unwrap()
            .into_iter()
            .map(|a| format!("{a:?}"))
            .collect();
        assert_eq!(brief, expected);
    }

    #[test]
    fn a_migration_that_would_leave_an_orphan_row_is_refused_and_rolled_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        schema_3_journal(&path);
        {
            // Written with foreign keys off, as no SkillTrial ever did.
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
            conn.execute(
                "INSERT INTO ledger (run_id, attempt_id, kind, micros, at_ms) VALUES (?1, 'gone', 'reserve', 1, 1)",
                [RUN],
            )
            .unwrap();
        }
        let err = Journal::open(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "journal {}: migrating it to schema {SCHEMA_VERSION} would leave a row of ledger whose attempts row is missing",
                path.display()
            )
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        let version: u32 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, 3, "nothing migrated");
    }

    use std::sync::{Arc, Mutex};

    /// A replica that keeps the log in memory, with the journal's committed rows as another
    /// connection saw them at each append, and that stores only `accept` appends more.
    #[derive(Clone)]
    struct Peeking {
        path: std::path::PathBuf,
        log: Arc<Mutex<Vec<Appended>>>,
        accept: Arc<Mutex<usize>>,
    }

    type Dump = Vec<(String, Vec<Vec<rusqlite::types::Value>>)>;
    /// A transaction the replica stored, and the rows another connection saw then.
    type Appended = (Vec<String>, Dump);

    impl Peeking {
        fn new(path: &std::path::Path) -> Self {
            Self {
                path: path.to_path_buf(),
                log: Arc::default(),
                accept: Arc::new(Mutex::new(usize::MAX)),
            }
        }

        fn transactions(&self) -> Vec<Vec<String>> {
            self.log
                .lock()
                .unwrap()
                .iter()
                .map(|t| t.0.clone())
                .collect()
        }
    }

    impl skilltrial_sqlite::replica::ChangeSink for Peeking {
        fn append(&mut self, statements: &[String]) -> Result<(), String> {
            let mut accept = self.accept.lock().unwrap();
            if *accept == 0 {
                return Err("the run's lease was lost".to_owned());
            }
            *accept -= 1;
            let committed = dump(&rusqlite::Connection::open(&self.path).unwrap());
            self.log
                .lock()
                .unwrap()
                .push((statements.to_vec(), committed));
            Ok(())
        }
    }

    /// A replicated journal with a run of two trials, written through the journal.
    fn replicated(path: &std::path::Path) -> (Journal, Peeking) {
        let mut journal = Journal::open(path).unwrap();
        let sink = Peeking::new(path);
        journal.replicate(Box::new(sink.clone())).unwrap();
        journal
            .write(|tx| {
                tx.execute_batch(
                    "INSERT INTO runs (id, manifest_sha256, pack_id, created_at_ms, status, max_requests)
                       VALUES ('r', 'r', 'p@1', 1, 'planned', 10);
                     INSERT INTO trials VALUES ('r', 0, 't', 'a', 1, 5, 1, 1), ('r', 1, 't', 'b', 1, 5, 1, 1);",
                )?;
                Ok(())
            })
            .unwrap();
        (journal, sink)
    }

    /// Every method that changes rows, the `&self` ones of one statement included, ships its
    /// transaction to the replica before it commits (another connection does not see it yet
    /// when the replica stores it), and the log restores the journal row for row.
    #[test]
    fn every_writer_of_a_replicated_journal_ships_its_rows_before_it_commits() {
        use super::{AttemptState, CallRecord, PayloadKind, Resolution, RunStatus};
        use skilltrial_core::money::MicroUsd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        let (mut journal, sink) = replicated(&path);
        let first = journal.plan_attempt("r", 0, MicroUsd(70), 9, None).unwrap();
        let second = journal.plan_attempt("r", 1, MicroUsd(70), 9, None).unwrap();
        type Writer<'a> = (
            &'a str,
            Box<dyn Fn(&mut Journal) -> Result<(), JournalError> + 'a>,
        );
        let writers: Vec<Writer<'_>> = vec![
            ("set_concurrency", Box::new(|j| j.set_concurrency("r", 4))),
            (
                "set_status",
                Box::new(|j| j.set_status("r", RunStatus::Running)),
            ),
            (
                "set_executed_ms",
                Box::new(|j| j.set_executed_ms("r", 1234)),
            ),
            (
                "mark_dispatched",
                Box::new(|j| j.mark_dispatched(&first, "aa")),
            ),
            (
                "record_payload",
                Box::new(|j| j.record_payload("aa", PayloadKind::Request, 3)),
            ),
            (
                "dispatch_attempt",
                Box::new(|j| j.dispatch_attempt(&second, "bb", b"bb")),
            ),
            (
                "mark_unknown",
                Box::new(|j| j.mark_unknown(&first, "no answer", Some(5))),
            ),
            (
                "record_result",
                Box::new(|j| {
                    let call = CallRecord {
                        spent: MicroUsd(12),
                        ..CallRecord::default()
                    };
                    j.record_result(&second, &call)
                }),
            ),
            (
                "record_runner_time",
                Box::new(|j| j.record_runner_time(&second, 77)),
            ),
            ("mark_purged", Box::new(|j| j.mark_purged("bb").map(drop))),
            ("sync", Box::new(|j| j.sync("r", 2000))),
            (
                "resolve",
                Box::new(|j| j.resolve(&first, &Resolution::Release).map(drop)),
            ),
            ("request_cancel", Box::new(|j| j.request_cancel("r"))),
            (
                "set_status",
                Box::new(|j| j.set_status("r", RunStatus::Cancelled)),
            ),
        ];
        for (name, write) in &writers {
            let before = dump(&journal.conn);
            let appended = sink.log.lock().unwrap().len();
            write(&mut journal).unwrap();
            let log = sink.log.lock().unwrap();
            assert_eq!(log.len(), appended + 1, "{name}: one transaction");
            let (statements, committed) = log.last().unwrap();
            assert!(!statements.is_empty(), "{name}");
            assert_eq!(committed, &before, "{name}: stored before its commit");
            assert_ne!(dump(&journal.conn), before, "{name} wrote");
        }
        assert_eq!(
            journal.attempt(&first).unwrap().unwrap().1.state,
            AttemptState::Closed
        );
        let copy = dir.path().join("copy/j.sqlite3");
        let restored = Journal::restore(&copy, sink.transactions()).unwrap();
        assert_eq!(dump(&restored.conn), dump(&journal.conn));
        // Nothing was left uncommitted in the capture.
        assert!(
            skilltrial_sqlite::replica::take(&journal.conn)
                .unwrap()
                .is_empty()
        );
    }

    /// A write the replica refuses is rolled back, names the refusal, and every write after it
    /// is refused without reaching the replica; reads go on.
    #[test]
    fn a_write_the_replica_refuses_is_rolled_back_and_the_journal_takes_no_more_writes() {
        use super::{AttemptState, RunStatus};
        use skilltrial_core::money::MicroUsd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        let (mut journal, sink) = replicated(&path);
        let attempt = journal.plan_attempt("r", 0, MicroUsd(70), 9, None).unwrap();
        *sink.accept.lock().unwrap() = 0;
        let before = dump(&journal.conn);

        let err = journal.mark_dispatched(&attempt, "aa").unwrap_err();
        assert!(
            matches!(err, JournalError::ReplicaRefused { .. }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "journal {}: its replica refused the write (the run's lease was lost); the journal takes no more writes",
                path.display()
            )
        );
        // The file is without it, as another connection reads it too.
        assert_eq!(dump(&journal.conn), before);
        assert_eq!(dump(&rusqlite::Connection::open(&path).unwrap()), before);
        assert_eq!(
            journal.attempt(&attempt).unwrap().unwrap().1.state,
            AttemptState::Planned
        );

        // Every later write is refused before it reaches the replica, even once it would
        // accept again.
        *sink.accept.lock().unwrap() = usize::MAX;
        let appended = sink.log.lock().unwrap().len();
        let later = [
            journal.set_status("r", RunStatus::Running).unwrap_err(),
            journal.mark_dispatched(&attempt, "aa").unwrap_err(),
            journal
                .plan_attempt("r", 1, MicroUsd(70), 9, None)
                .unwrap_err(),
            journal.recover("r").map(drop).unwrap_err(),
        ];
        for err in later {
            assert!(
                err.to_string().contains(
                    "its replica refused the write (an earlier write was refused: the run's lease was lost)"
                ),
                "{err}"
            );
        }
        assert_eq!(sink.log.lock().unwrap().len(), appended);
        assert_eq!(dump(&journal.conn), before);
        // Reads go on.
        assert_eq!(journal.attempts("r").unwrap().len(), 1);
    }
}

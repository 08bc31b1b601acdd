//! The outbox: every transaction the client signs is written here — signature, blockhash, the
//! block height after which it can no longer land, and its exact wire bytes — **before** it is
//! sent. A command killed at any point therefore leaves a row that the next command resumes by
//! resending the same bytes (a duplicate of a landed transaction is the same transaction), and a
//! new transaction for the same purpose is signed only once the old one's blockhash has expired
//! with the transaction nowhere on the cluster. This extends the engine journal's rule
//! ("dispatched before it leaves") to chain writes.
//!
//! One SQLite file (WAL, synchronous FULL), shared by every process on the machine: claiming a
//! purpose (`intent`) happens inside an immediate transaction, so two processes never both sign
//! for the same intent. Rows hold no secret: a signed transaction is public once sent. Its
//! schema is the numbered migrations of `migrations/outbox/`, applied on open
//! ([`SCHEMA_VERSION`]).
//!
//! An outbox may be replicated ([`Outbox::replicate`]): every write transaction's row changes
//! go to a [`ChangeSink`] before it commits, and [`Outbox::restore`] rebuilds an outbox from
//! them elsewhere (as the engine's journal, `skilltrial_sqlite::replica`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use skilltrial_sqlite::replica::{self, ChangeSink, Replica, ShipError};
use skilltrial_sqlite::{MigrateError, get_with, migrate};

/// How long a process waits for another one holding the outbox.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The outbox's schema version: the number of migrations applied.
///
/// Log: 1 — the first schema, as the code created it before it was numbered (such a file is
/// adopted as it is); 2 — the table STRICT and the block height never negative (a rebuild).
/// Keep `MIGRATIONS` in file-number order; the files live in the workspace's
/// `migrations/outbox/`, named by path from this file so the crate builds wherever the
/// workspace is.
pub const SCHEMA_VERSION: u32 = 2;

const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/outbox/0001_outbox.sql"),
    include_str!("../../migrations/outbox/0002_strict_checks.sql"),
];

/// Why the outbox cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the chain outbox {path}: {reason}")]
pub struct OutboxError {
    pub path: String,
    pub reason: String,
    /// The outbox's replica refused this write or an earlier one ([`Outbox::replicate`]): the
    /// write was rolled back, and the outbox takes no more writes.
    pub replica_refused: bool,
}

impl OutboxError {
    fn new(path: &Path, reason: impl std::fmt::Display) -> Self {
        Self {
            path: path.display().to_string(),
            reason: reason.to_string(),
            replica_refused: false,
        }
    }
}

/// Where a signed transaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryState {
    /// Signed and maybe sent: it may still land until its blockhash expires.
    Pending,
    /// Landed at the requested commitment, successfully.
    Landed,
    /// Refused: by the node before it was forwarded, or processed with an error.
    Failed,
    /// Its blockhash expired and the cluster never saw it: it can never land.
    Expired,
}

impl EntryState {
    fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Landed => "landed",
            Self::Failed => "failed",
            Self::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "pending" => Self::Pending,
            "landed" => Self::Landed,
            "failed" => Self::Failed,
            "expired" => Self::Expired,
            _ => return None,
        })
    }
}

/// A signed transaction, as the outbox keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: i64,
    pub cluster: String,
    pub intent: String,
    pub signature: String,
    pub blockhash: String,
    pub last_valid_block_height: u64,
    pub wire_base64: String,
    pub state: EntryState,
    pub detail: Option<String>,
}

/// A transaction signed and ready to be written before it is sent.
#[derive(Debug, Clone)]
pub struct Signed {
    pub signature: String,
    pub blockhash: String,
    pub last_valid_block_height: u64,
    pub wire_base64: String,
}

/// The result of claiming an intent.
#[derive(Debug)]
pub enum Claim {
    /// A transaction for this intent was already pending: resume it, sign nothing.
    Existing(Entry),
    /// The freshly signed transaction, now recorded.
    New(Entry),
}

/// The outbox file.
#[derive(Debug)]
pub struct Outbox {
    conn: Connection,
    path: PathBuf,
    /// Set by [`Outbox::replicate`]. A mutex, because the `&self` writer ships changes too.
    replica: Option<Mutex<Replica>>,
}

/// Hands the changes of the write transaction open on `conn` to the replica, if there is one
/// ([`Replica::ship`]); an error leaves the transaction to roll back. Call it last before
/// COMMIT.
fn ship(
    replica: Option<&Mutex<Replica>>,
    conn: &Connection,
    path: &Path,
) -> Result<(), OutboxError> {
    let Some(replica) = replica else {
        return Ok(());
    };
    let refused = |reason: String| OutboxError {
        replica_refused: true,
        ..OutboxError::new(
            path,
            format!("its replica refused the write ({reason}); the outbox takes no more writes"),
        )
    };
    replica
        .lock()
        .map_err(|_| refused("a write panicked while shipping to it".to_owned()))?
        .ship(conn)
        .map_err(|e| match e {
            ShipError::Sql(e) => OutboxError::new(path, e),
            ShipError::Refused(reason) => refused(reason),
        })
}

/// After a COMMIT of a replicated outbox failed ([`Replica::commit_failed`]).
fn commit_failed(replica: Option<&Mutex<Replica>>, error: &rusqlite::Error) {
    if let Some(Ok(mut replica)) = replica.map(Mutex::lock) {
        replica.commit_failed(error);
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The columns [`Entry::from_row`] reads, for every `SELECT` of an entry.
const COLUMNS: &str = "id, cluster, intent, signature, blockhash, last_valid_block_height, \
                       wire_base64, state, detail";

impl Entry {
    /// An outbox row selected with [`COLUMNS`]. The schema's CHECKs keep a state outside
    /// [`EntryState`] and a negative height out; a file that holds one anyway (edited by hand
    /// with the checks off) is an error naming the column, never read as something else.
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get("id")?,
            cluster: row.get("cluster")?,
            intent: row.get("intent")?,
            signature: row.get("signature")?,
            blockhash: row.get("blockhash")?,
            last_valid_block_height: get_with(row, "last_valid_block_height", |h: i64| {
                u64::try_from(h).map_err(|_| format!("negative block height {h}"))
            })?,
            wire_base64: row.get("wire_base64")?,
            state: get_with(row, "state", |text: String| {
                EntryState::parse(&text).ok_or_else(|| format!("unknown state {text:?}"))
            })?,
            detail: row.get("detail")?,
        })
    }
}

/// The newest pending entry for `intent` on `cluster`, read through `conn` (the outbox's
/// connection, or a transaction on it).
fn pending_on(conn: &Connection, cluster: &str, intent: &str) -> rusqlite::Result<Option<Entry>> {
    conn.query_row(
        &format!(
            "SELECT {COLUMNS} FROM outbox WHERE cluster = ?1 AND intent = ?2 \
             AND state = 'pending' ORDER BY id DESC LIMIT 1"
        ),
        params![cluster, intent],
        Entry::from_row,
    )
    .optional()
}

impl Outbox {
    /// Opens (creating it and its folder if needed) the outbox at `path`.
    pub fn open(path: &Path) -> Result<Self, OutboxError> {
        let fail = |reason: String| OutboxError::new(path, reason);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| fail(format!("cannot create its folder: {e}")))?;
        }
        let started = std::time::Instant::now();
        // A fresh file being created by another process answers "locked" at once; retry the
        // whole open until the busy timeout, as the engine's journal does.
        loop {
            match Self::try_open(path) {
                Ok(conn) => {
                    return Ok(Self {
                        conn,
                        path: path.to_path_buf(),
                        replica: None,
                    });
                }
                Err(e) if started.elapsed() < BUSY_TIMEOUT && e.is_busy() => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(fail(e.to_string())),
            }
        }
    }

    fn try_open(path: &Path) -> Result<Connection, MigrateError> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        migrate(&mut conn, MIGRATIONS, None)?;
        Ok(conn)
    }

    fn fail(&self, e: impl std::fmt::Display) -> OutboxError {
        OutboxError::new(&self.path, e)
    }

    /// From now on, every write transaction's row changes are appended to `sink` before it
    /// commits, in commit order. A write the sink refuses is rolled back and fails (with
    /// [`OutboxError::replica_refused`] set), and so does every write after it; reads go on.
    ///
    /// The log holds the writes from this call on: call it on a fresh outbox or on one
    /// [`Outbox::restore`]d from the same log. Writes of other processes sharing the file are
    /// not captured: a replicated outbox has one writer.
    pub fn replicate(&mut self, sink: Box<dyn ChangeSink>) -> Result<(), OutboxError> {
        replica::capture(&self.conn).map_err(|e| self.fail(e))?;
        self.replica = Some(Mutex::new(Replica::new(sink)));
        Ok(())
    }

    /// Builds a NEW outbox at `path` (refused if one is there) from a replica's log, oldest
    /// transaction first: a fresh outbox of this [`SCHEMA_VERSION`], the log replayed into it
    /// (`skilltrial_sqlite::replica::restore_file`: all or nothing, moved into place whole),
    /// then opened. The log must come from an outbox of this schema version.
    pub fn restore(
        path: &Path,
        transactions: impl IntoIterator<Item = Vec<String>>,
    ) -> Result<Self, OutboxError> {
        replica::restore_file(path, |staging| Ok(Self::try_open(staging)?), transactions).map_err(
            |e| {
                OutboxError::new(
                    path,
                    format!("cannot restore it from its replica's log: {e}"),
                )
            },
        )?;
        Self::open(path)
    }

    /// Runs `f`, which writes rows with one statement. Without a replica it commits by itself;
    /// with one, `f` runs in a write transaction whose changes reach the replica before it
    /// commits.
    fn write_one<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, OutboxError> {
        let Some(replica) = self.replica.as_ref() else {
            return f(&self.conn).map_err(|e| self.fail(e));
        };
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.fail(e))?;
        let value = f(&tx).map_err(|e| self.fail(e))?;
        ship(Some(replica), &tx, &self.path)?;
        tx.commit().map_err(|e| {
            commit_failed(Some(replica), &e);
            self.fail(e)
        })?;
        Ok(value)
    }

    /// The pending transaction for `intent` on `cluster`, if any.
    pub fn pending(&self, cluster: &str, intent: &str) -> Result<Option<Entry>, OutboxError> {
        pending_on(&self.conn, cluster, intent).map_err(|e| self.fail(e))
    }

    /// Every pending transaction on `cluster`, oldest first.
    pub fn all_pending(&self, cluster: &str) -> Result<Vec<Entry>, OutboxError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM outbox WHERE cluster = ?1 AND state = 'pending' ORDER BY id"
            ))
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map(params![cluster], Entry::from_row)
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }

    /// Every row, oldest first (for `status`-like views and tests).
    pub fn rows(&self) -> Result<Vec<Entry>, OutboxError> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {COLUMNS} FROM outbox ORDER BY id"))
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map([], Entry::from_row)
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }

    /// The newest transaction for `intent` on `cluster` in any state.
    pub fn latest(&self, cluster: &str, intent: &str) -> Result<Option<Entry>, OutboxError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM outbox WHERE cluster = ?1 AND intent = ?2 \
                     ORDER BY id DESC LIMIT 1"
                ),
                params![cluster, intent],
                Entry::from_row,
            )
            .optional()
            .map_err(|e| self.fail(e))
    }

    /// Claims `intent`: inside one immediate transaction, returns the pending entry if there is
    /// one, else signs with `sign` and records the result before anything is sent. `sign` runs
    /// while the claim is held, so it must be quick (a blockhash and the signatures).
    pub fn claim<E>(
        &mut self,
        cluster: &str,
        intent: &str,
        sign: impl FnOnce() -> Result<Signed, E>,
    ) -> Result<Result<Claim, E>, OutboxError> {
        let (path, replica) = (&self.path, self.replica.as_ref());
        let fail = |e: rusqlite::Error| OutboxError::new(path, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let existing = pending_on(&tx, cluster, intent).map_err(fail)?;
        if let Some(existing) = existing {
            return Ok(Ok(Claim::Existing(existing)));
        }
        let signed = match sign() {
            Ok(signed) => signed,
            Err(e) => return Ok(Err(e)),
        };
        let height = i64::try_from(signed.last_valid_block_height).unwrap_or(i64::MAX);
        let at = now();
        tx.execute(
            "INSERT INTO outbox (cluster, intent, signature, blockhash, last_valid_block_height, \
             wire_base64, state, detail, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', NULL, ?7, ?7)",
            params![
                cluster,
                intent,
                signed.signature,
                signed.blockhash,
                height,
                signed.wire_base64,
                at
            ],
        )
        .map_err(fail)?;
        let id = tx.last_insert_rowid();
        ship(replica, &tx, path)?;
        tx.commit().map_err(|e| {
            commit_failed(replica, &e);
            fail(e)
        })?;
        Ok(Ok(Claim::New(Entry {
            id,
            cluster: cluster.to_owned(),
            intent: intent.to_owned(),
            signature: signed.signature,
            blockhash: signed.blockhash,
            last_valid_block_height: signed.last_valid_block_height,
            wire_base64: signed.wire_base64,
            state: EntryState::Pending,
            detail: None,
        })))
    }

    /// Records how a pending entry ended. An entry that already ended keeps its ending: a
    /// second process that watched the same transaction cannot overwrite it.
    pub fn conclude(
        &self,
        id: i64,
        state: EntryState,
        detail: Option<&str>,
    ) -> Result<(), OutboxError> {
        self.write_one(|c| {
            c.execute(
                "UPDATE outbox SET state = ?2, detail = ?3, updated_at = ?4 \
                 WHERE id = ?1 AND state = 'pending'",
                params![id, state.as_str(), detail, now()],
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(sig: &str) -> Signed {
        Signed {
            signature: sig.to_owned(),
            blockhash: "hash".to_owned(),
            last_valid_block_height: 150,
            wire_base64: "AAAA".to_owned(),
        }
    }

    #[test]
    fn a_pending_intent_is_resumed_never_signed_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/outbox.sqlite");
        let mut outbox = Outbox::open(&path).unwrap();
        let first = outbox
            .claim::<()>("g", "open:x", || Ok(signed("s1")))
            .unwrap()
            .unwrap();
        let Claim::New(first) = first else {
            panic!("a first claim signs")
        };
        // Another process (another connection) claims the same intent: it gets the pending
        // entry, and its signer is never called.
        let mut other = Outbox::open(&path).unwrap();
        let again = other
            .claim::<()>("g", "open:x", || {
                panic!("must not sign while one is pending")
            })
            .unwrap()
            .unwrap();
        assert!(matches!(again, Claim::Existing(ref e) if e.signature == "s1"));
        // Another cluster's intent of the same name is independent.
        let elsewhere = other
            .claim::<()>("h", "open:x", || Ok(signed("s2")))
            .unwrap()
            .unwrap();
        assert!(matches!(elsewhere, Claim::New(_)));
        // Once it expired, the intent may be signed again.
        outbox
            .conclude(first.id, EntryState::Expired, Some("blockhash expired"))
            .unwrap();
        let third = other
            .claim::<()>("g", "open:x", || Ok(signed("s3")))
            .unwrap()
            .unwrap();
        assert!(matches!(third, Claim::New(ref e) if e.signature == "s3"));
        // An ending is never overwritten.
        outbox.conclude(first.id, EntryState::Landed, None).unwrap();
        let latest = outbox.latest("g", "open:x").unwrap().unwrap();
        assert_eq!(latest.signature, "s3");
        assert_eq!(outbox.all_pending("g").unwrap().len(), 1);
        let conn = Connection::open(&path).unwrap();
        let state: String = conn
            .query_row("SELECT state FROM outbox WHERE signature = 's1'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(state, "expired");
    }

    #[test]
    fn a_failed_signing_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut outbox = Outbox::open(&dir.path().join("o.sqlite")).unwrap();
        let result = outbox
            .claim("g", "i", || Err::<Signed, _>("no blockhash"))
            .unwrap();
        assert_eq!(result.unwrap_err(), "no blockhash");
        assert!(outbox.latest("g", "i").unwrap().is_none());
    }

    /// The outbox's DDL as the code ran it on every open before `migrations/outbox/` existed
    /// (kept here verbatim: such files are out there, at `user_version` 0).
    const UNNUMBERED_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY,
    cluster TEXT NOT NULL,
    intent TEXT NOT NULL,
    signature TEXT NOT NULL UNIQUE,
    blockhash TEXT NOT NULL,
    last_valid_block_height INTEGER NOT NULL,
    wire_base64 TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'landed', 'failed', 'expired')),
    detail TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_intent ON outbox (cluster, intent, state);
";

    /// A file written by the code before the outbox was numbered, holding `rows` as
    /// `(signature, height, state, detail)`.
    fn unnumbered(path: &Path, rows: &[(&str, i64, &str, Option<&str>)]) {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(UNNUMBERED_SCHEMA).unwrap();
        for (sig, height, state, detail) in rows {
            conn.execute(
                "INSERT INTO outbox (cluster, intent, signature, blockhash, last_valid_block_height, \
                 wire_base64, state, detail, created_at, updated_at) \
                 VALUES ('g', 'open:x', ?1, 'hash', ?2, 'AAAA', ?3, ?4, 1, 2)",
                params![sig, height, state, detail],
            )
            .unwrap();
        }
    }

    fn version(path: &Path) -> u32 {
        skilltrial_sqlite::user_version(&Connection::open(path).unwrap()).unwrap()
    }

    /// Given an outbox written before its migrations, when it is opened, then it is adopted
    /// and rebuilt in place (schema 2: STRICT, the checks) with every row as it was.
    #[test]
    fn an_unnumbered_outbox_is_migrated_in_place_with_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.sqlite");
        unnumbered(
            &path,
            &[
                ("s1", 150, "expired", Some("blockhash expired")),
                ("s2", 300, "pending", None),
            ],
        );
        assert_eq!(version(&path), 0);
        let mut outbox = Outbox::open(&path).unwrap();
        assert_eq!(version(&path), SCHEMA_VERSION);
        let rows = outbox.rows().unwrap();
        let read: Vec<_> = rows
            .iter()
            .map(|e| {
                (
                    e.id,
                    e.signature.as_str(),
                    e.last_valid_block_height,
                    e.state,
                    e.detail.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            read,
            [
                (1, "s1", 150, EntryState::Expired, Some("blockhash expired")),
                (2, "s2", 300, EntryState::Pending, None),
            ]
        );
        assert_eq!(rows[1].wire_base64, "AAAA");
        // The pending row is still the intent's: resumed, not signed again.
        let again = outbox
            .claim::<()>("g", "open:x", || {
                panic!("must not sign while one is pending")
            })
            .unwrap()
            .unwrap();
        assert!(matches!(again, Claim::Existing(ref e) if e.id == 2));
        // The new constraints hold from now on.
        let conn = Connection::open(&path).unwrap();
        let negative = conn.execute(
            "UPDATE outbox SET last_valid_block_height = -1 WHERE id = 1",
            [],
        );
        assert!(negative.is_err(), "a negative height is refused");
        let wrong_type = conn.execute(
            "UPDATE outbox SET created_at = 'yesterday' WHERE id = 1",
            [],
        );
        assert!(wrong_type.is_err(), "the table is STRICT");
        drop(outbox);
        Outbox::open(&path).unwrap();
        assert_eq!(version(&path), SCHEMA_VERSION);
    }

    /// Given an unnumbered outbox holding a row the new checks refuse, when it is opened, then
    /// the open fails naming the file, and the file is left as it was: schema 0, the old table,
    /// the row. Migrations 1 and 2 ran in one transaction (else it would now be at schema 1).
    #[test]
    fn a_failed_migration_leaves_the_outbox_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.sqlite");
        unnumbered(&path, &[("s1", -5, "pending", None)]);
        let err = Outbox::open(&path).unwrap_err();
        assert!(err.to_string().contains("outbox.sqlite"), "{err}");
        assert!(err.to_string().contains("CHECK"), "{err}");
        assert_eq!(version(&path), 0);
        let conn = Connection::open(&path).unwrap();
        let (sql, height): (String, i64) = conn
            .query_row(
                "SELECT (SELECT sql FROM sqlite_schema WHERE name = 'outbox'), \
                 last_valid_block_height FROM outbox",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert!(!sql.contains("STRICT"), "{sql}");
        assert_eq!(height, -5);
    }

    #[test]
    fn an_outbox_from_a_newer_skilltrial_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.sqlite");
        drop(Outbox::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        let err = Outbox::open(&path).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "the chain outbox {}: written by a newer SkillTrial (schema 3, this one knows 2)",
                path.display()
            )
        );
        assert_eq!(version(&path), SCHEMA_VERSION + 1);
    }

    /// A state outside the enum can only be written with the checks switched off; it is then an
    /// error naming the column, never read as another state.
    #[test]
    fn an_unknown_state_is_an_error_not_a_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.sqlite");
        let mut outbox = Outbox::open(&path).unwrap();
        outbox
            .claim::<()>("g", "i", || Ok(signed("s1")))
            .unwrap()
            .unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "ignore_check_constraints", true)
            .unwrap();
        conn.execute("UPDATE outbox SET state = 'lost'", [])
            .unwrap();
        let err = outbox.rows().unwrap_err().to_string();
        assert!(
            err.contains("column state: unknown state \"lost\""),
            "{err}"
        );
    }

    /// A replica keeping the log in memory, taking `accept` appends more, counting the calls.
    #[derive(Clone)]
    struct Log {
        transactions: std::sync::Arc<Mutex<Vec<Vec<String>>>>,
        accept: std::sync::Arc<Mutex<usize>>,
        calls: std::sync::Arc<Mutex<usize>>,
    }

    impl ChangeSink for Log {
        fn append(&mut self, statements: &[String]) -> Result<(), String> {
            *self.calls.lock().unwrap() += 1;
            let mut accept = self.accept.lock().unwrap();
            *accept = accept.checked_sub(1).ok_or("the run's lease was lost")?;
            self.transactions.lock().unwrap().push(statements.to_vec());
            Ok(())
        }
    }

    /// Every row of the file at `path`, rowids included.
    fn dump(path: &Path) -> Vec<Vec<rusqlite::types::Value>> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn
            .prepare("SELECT rowid, * FROM outbox ORDER BY rowid")
            .unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| (0..n).map(|i| r.get(i)).collect())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Given a replicated outbox, its log restores it row for row into a new file (never over
    /// one); a write the replica refuses is rolled back, and every write after it is refused
    /// without reaching the replica.
    #[test]
    fn a_replicated_outbox_restores_row_for_row_and_stops_at_a_refused_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.sqlite");
        let log = Log {
            transactions: std::sync::Arc::default(),
            accept: std::sync::Arc::new(Mutex::new(usize::MAX)),
            calls: std::sync::Arc::default(),
        };
        let mut outbox = Outbox::open(&path).unwrap();
        outbox.replicate(Box::new(log.clone())).unwrap();
        let Claim::New(first) = outbox
            .claim::<()>("g", "open:x", || Ok(signed("s1")))
            .unwrap()
            .unwrap()
        else {
            panic!("a first claim signs")
        };
        // A claim that finds its entry pending, and an ending that changes nothing, write no
        // row and reach no replica.
        let again = outbox
            .claim::<()>("g", "open:x", || panic!("pending"))
            .unwrap()
            .unwrap();
        assert!(matches!(again, Claim::Existing(_)));
        outbox
            .conclude(first.id, EntryState::Expired, Some("blockhash expired"))
            .unwrap();
        outbox.conclude(first.id, EntryState::Landed, None).unwrap();
        outbox
            .claim::<()>("g", "open:x", || Ok(signed("s2")))
            .unwrap()
            .unwrap();
        assert_eq!(log.transactions.lock().unwrap().len(), 3);

        let copy = dir.path().join("elsewhere/outbox.sqlite");
        let restored = Outbox::restore(&copy, log.transactions.lock().unwrap().clone()).unwrap();
        assert_eq!(restored.rows().unwrap(), outbox.rows().unwrap());
        assert_eq!(dump(&copy), dump(&path));
        let err = Outbox::restore(&path, Vec::new()).unwrap_err();
        assert!(err.to_string().contains("exists"), "{err}");

        // The replica refuses: the claim is rolled back, and nothing is written after it.
        *log.accept.lock().unwrap() = 0;
        let before = dump(&path);
        let err = outbox
            .claim::<()>("g", "finalize:y", || Ok(signed("s3")))
            .unwrap_err();
        assert!(err.replica_refused, "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "the chain outbox {}: its replica refused the write (the run's lease was lost); the outbox takes no more writes",
                path.display()
            )
        );
        *log.accept.lock().unwrap() = usize::MAX;
        let calls = *log.calls.lock().unwrap();
        let later = outbox.conclude(2, EntryState::Landed, None).unwrap_err();
        assert!(later.replica_refused, "{later}");
        assert!(
            later.reason.contains("an earlier write was refused"),
            "{later}"
        );
        assert_eq!(*log.calls.lock().unwrap(), calls);
        assert_eq!(dump(&path), before);
        assert!(outbox.latest("g", "finalize:y").unwrap().is_none());
    }

    #[test]
    fn an_unusable_path_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = Outbox::open(&file.join("outbox.sqlite")).unwrap_err();
        assert!(err.to_string().contains("outbox.sqlite"), "{err}");
    }
}

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
//! for the same intent. Rows hold no secret: a signed transaction is public once sent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

/// How long a process waits for another one holding the outbox.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const SCHEMA: &str = "
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

/// Why the outbox cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the chain outbox {path}: {reason}")]
pub struct OutboxError {
    pub path: String,
    pub reason: String,
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
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

const COLUMNS: &str = "id, cluster, intent, signature, blockhash, last_valid_block_height, \
                       wire_base64, state, detail";

fn entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<Entry> {
    let state: String = row.get(7)?;
    let height: i64 = row.get(5)?;
    Ok(Entry {
        id: row.get(0)?,
        cluster: row.get(1)?,
        intent: row.get(2)?,
        signature: row.get(3)?,
        blockhash: row.get(4)?,
        last_valid_block_height: u64::try_from(height).unwrap_or(0),
        wire_base64: row.get(6)?,
        // The CHECK constraint keeps other texts out; a hand-edited file reads as pending,
        // which is resumed (never re-signed) and so is the safe reading.
        state: EntryState::parse(&state).unwrap_or(EntryState::Pending),
        detail: row.get(8)?,
    })
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
        entry,
    )
    .optional()
}

impl Outbox {
    /// Opens (creating it and its folder if needed) the outbox at `path`.
    pub fn open(path: &Path) -> Result<Self, OutboxError> {
        let fail = |reason: String| OutboxError {
            path: path.display().to_string(),
            reason,
        };
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
                    });
                }
                Err(e)
                    if started.elapsed() < BUSY_TIMEOUT
                        && matches!(
                            e.sqlite_error_code(),
                            Some(
                                rusqlite::ErrorCode::DatabaseBusy
                                    | rusqlite::ErrorCode::DatabaseLocked
                            )
                        ) =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(fail(e.to_string())),
            }
        }
    }

    fn try_open(path: &Path) -> rusqlite::Result<Connection> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch(SCHEMA)?;
        Ok(conn)
    }

    fn fail(&self, e: impl std::fmt::Display) -> OutboxError {
        OutboxError {
            path: self.path.display().to_string(),
            reason: e.to_string(),
        }
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
            .query_map(params![cluster], entry)
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
        let rows = stmt.query_map([], entry).map_err(|e| self.fail(e))?;
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
                entry,
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
        let path = self.path.display().to_string();
        let fail = |e: rusqlite::Error| OutboxError {
            path: path.clone(),
            reason: e.to_string(),
        };
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
        tx.commit().map_err(fail)?;
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
        self.conn
            .execute(
                "UPDATE outbox SET state = ?2, detail = ?3, updated_at = ?4 \
                 WHERE id = ?1 AND state = 'pending'",
                params![id, state.as_str(), detail, now()],
            )
            .map_err(|e| self.fail(e))?;
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

    #[test]
    fn an_unusable_path_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let err = Outbox::open(&file.join("outbox.sqlite")).unwrap_err();
        assert!(err.to_string().contains("outbox.sqlite"), "{err}");
    }
}

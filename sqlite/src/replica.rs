//! Replication of a SQLite file's committed writes, as the SQL statements that reproduce them.
//!
//! [`capture`] installs TEMP triggers (this connection only, nothing is written to the file's
//! schema) on every table of `main`: each row a statement inserts, updates or deletes adds ONE
//! statement to a TEMP table, in the order the rows changed. A writer drains them with [`take`]
//! inside its transaction, hands them to a [`ChangeSink`] and commits only if the sink stored
//! them. [`replay`] applies such a log to a file of the same schema; [`restore_file`] builds a
//! new file from one.
//!
//! A statement is the row's whole image, addressed by rowid, with every value written as a
//! literal that reads back as the same value and type (`quote()`: exact for integers, text and
//! blobs, and for reals too in the SQLite this crate bundles, which writes as many digits as
//! reading back exactly takes, and an infinity as `9.0e+999`; the tests hold it to that):
//!
//! - a row inserted or updated: `INSERT OR REPLACE INTO main."t"(rowid, "c1", …) VALUES (…)`
//! - a row deleted: `DELETE FROM main."t" WHERE rowid = …`
//! - an update that moves a row to another rowid: the delete of the old, then the new image.
//!
//! Only writes through the capturing connection are captured: another connection (another
//! process) writing the same file is not, so a replicated file must have one writer.
//!
//! `sqlite_sequence` (the AUTOINCREMENT counters) is not a table triggers can watch; a copy's
//! counters come from the rowids its log inserts, which is exact except after an UPDATE that
//! moves a row of an AUTOINCREMENT table above its counter (the copy's counter then follows
//! the row; the original's does not). Neither SkillTrial's journal nor its outbox moves a row.

use std::path::{Path, PathBuf};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, Transaction, TransactionBehavior, ffi};

/// Where a replicated file's transactions are stored.
pub trait ChangeSink: Send {
    /// Stores one transaction's statements (from [`take`]) durably, after every transaction
    /// appended before it. Called before the transaction commits locally: an `Err` (its reason)
    /// aborts the transaction, which then never happened.
    fn append(&mut self, statements: &[String]) -> Result<(), String>;
}

/// A replicated file's sink, and whether the file still takes writes. A writer holds one per
/// file (the journal, the outbox): every write transaction calls [`Replica::ship`] last before
/// its COMMIT, and [`Replica::commit_failed`] if that COMMIT fails.
///
/// Once the sink has refused a write, every later one is refused too, without reaching the
/// sink: a writer whose replica stopped taking its writes (a hosted worker that lost its run's
/// lease) must not go on, even if the sink would take the next one.
pub struct Replica {
    sink: Box<dyn ChangeSink>,
    refused: Option<String>,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("refused", &self.refused)
            .finish_non_exhaustive()
    }
}

/// Why a write transaction's changes did not reach its replica: the transaction must roll back.
#[derive(Debug, thiserror::Error)]
pub enum ShipError {
    /// The sink refused this write, or an earlier one: the file takes no more writes.
    #[error("its replica refused the write ({0})")]
    Refused(String),
    /// The changes could not be read from the capture.
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

impl Replica {
    /// A replica writing to `sink`. Call [`capture`] on the writer's connection with it.
    pub fn new(sink: Box<dyn ChangeSink>) -> Self {
        Self {
            sink,
            refused: None,
        }
    }

    /// Takes the changes of the write transaction open on `conn` ([`take`]) and appends them
    /// to the sink (nothing, if the transaction changed no row). Call it after the
    /// transaction's last write, right before its COMMIT; on an error, roll it back.
    pub fn ship(&mut self, conn: &Connection) -> Result<(), ShipError> {
        if let Some(reason) = &self.refused {
            return Err(ShipError::Refused(format!(
                "an earlier write was refused: {reason}"
            )));
        }
        let statements = take(conn)?;
        if statements.is_empty() {
            return Ok(());
        }
        self.sink.append(&statements).map_err(|reason| {
            self.refused = Some(reason.clone());
            ShipError::Refused(reason)
        })
    }

    /// The COMMIT after a [`Replica::ship`] failed: the replica may now hold a transaction the
    /// file lacks, so the file takes no more writes.
    pub fn commit_failed(&mut self, error: &rusqlite::Error) {
        self.refused
            .get_or_insert_with(|| format!("a commit failed after the replica stored it: {error}"));
    }

    /// Why the file takes no more writes, if it does not.
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }
}

/// The TEMP table [`capture`]'s triggers write to, one row per changed row, in change order.
const CHANGES: &str = "replica_changes";

/// The names SQLite gives a table's rowid; a table may use one of them for a column of its own.
const ROWID_NAMES: [&str; 3] = ["rowid", "_rowid_", "oid"];

/// `name` as an SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// An error of this module, with SQLite's "misuse" code.
fn misuse(message: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_MISUSE), Some(message))
}

/// `e` with `context` in front of its message (its code kept).
fn within(context: &str, e: rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqliteFailure(code, message) => {
            let message = message.unwrap_or_else(|| code.to_string());
            rusqlite::Error::SqliteFailure(code, Some(format!("{context}: {message}")))
        }
        other => other,
    }
}

/// A table of `main` to capture: its name, the name its rowid goes by, and its columns.
struct Captured {
    name: String,
    rowid: &'static str,
    columns: Vec<String>,
}

impl Captured {
    /// An SQL expression (over `NEW` or `OLD`) whose value is the statement that writes the
    /// row's image.
    fn image(&self, row: &str) -> String {
        let names: Vec<String> = self.columns.iter().map(|c| ident(c)).collect();
        let head = format!(
            "INSERT OR REPLACE INTO main.{}({}, {}) VALUES (",
            ident(&self.name),
            self.rowid,
            names.join(", ")
        );
        let mut expr = format!("{} || quote({row}.{})", literal(&head), self.rowid);
        for name in &names {
            expr.push_str(&format!(" || ', ' || quote({row}.{name})"));
        }
        expr.push_str(" || ')'");
        expr
    }

    /// An SQL expression (over `OLD`) whose value is the statement that deletes the row.
    fn deletion(&self) -> String {
        let head = format!(
            "DELETE FROM main.{} WHERE {} = ",
            ident(&self.name),
            self.rowid
        );
        format!("{} || quote(OLD.{})", literal(&head), self.rowid)
    }

    /// The DDL of its three triggers, each dropped first (so a second [`capture`] after a
    /// schema change writes the columns of now).
    fn triggers(&self) -> String {
        let name = |event: &str| ident(&format!("replica_{event}_{}", self.name));
        let table = format!("main.{}", ident(&self.name));
        let (insert, update, delete) = (name("insert"), name("update"), name("delete"));
        format!(
            "DROP TRIGGER IF EXISTS temp.{insert};
             CREATE TEMP TRIGGER {insert} AFTER INSERT ON {table} BEGIN
               INSERT INTO {CHANGES} (sql) VALUES ({new});
             END;
             DROP TRIGGER IF EXISTS temp.{update};
             CREATE TEMP TRIGGER {update} AFTER UPDATE ON {table} BEGIN
               INSERT INTO {CHANGES} (sql) SELECT {gone} WHERE OLD.{rowid} IS NOT NEW.{rowid};
               INSERT INTO {CHANGES} (sql) VALUES ({new});
             END;
             DROP TRIGGER IF EXISTS temp.{delete};
             CREATE TEMP TRIGGER {delete} AFTER DELETE ON {table} BEGIN
               INSERT INTO {CHANGES} (sql) VALUES ({gone});
             END;",
            new = self.image("NEW"),
            gone = self.deletion(),
            rowid = self.rowid,
        )
    }
}

/// The tables of `main` to capture: every table but SQLite's own (`sqlite_*`). A virtual
/// table or a table WITHOUT ROWID is refused: its rows have no rowid to address them by.
fn tables(conn: &Connection) -> rusqlite::Result<Vec<Captured>> {
    let listed: Vec<(String, String, bool)> = conn
        .prepare(
            "SELECT name, type, wr FROM pragma_table_list
             WHERE schema = 'main' AND type <> 'view' AND lower(substr(name, 1, 7)) <> 'sqlite_'
             ORDER BY name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut tables = Vec::with_capacity(listed.len());
    for (name, kind, without_rowid) in listed {
        if kind != "table" || without_rowid {
            let what = if without_rowid {
                "WITHOUT ROWID"
            } else {
                &kind
            };
            return Err(misuse(format!(
                "table {name} is {what}: only rowid tables can be replicated"
            )));
        }
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info(?1, 'main') ORDER BY cid")?
            .query_map([&name], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let rowid = ROWID_NAMES
            .into_iter()
            .find(|r| !columns.iter().any(|c| c.eq_ignore_ascii_case(r)))
            .ok_or_else(|| {
                misuse(format!(
                    "table {name} has columns named rowid, _rowid_ and oid: its rowid has no name left"
                ))
            })?;
        tables.push(Captured {
            name,
            rowid,
            columns,
        });
    }
    Ok(tables)
}

/// Captures, from now on, every row this connection inserts, updates or deletes in a table of
/// `main`, as the statement that reproduces it (see the module's doc), until the connection
/// closes. Call it once the schema is final (after the migrations): the triggers list the
/// columns of now. Calling it again re-creates them and drops statements not taken yet.
///
/// Turns `recursive_triggers` on for the connection: without it, the rows an `INSERT OR
/// REPLACE` deletes to make room fire no DELETE trigger, and their deletion would be missing
/// from the log. (A schema trigger may then fire itself, as the pragma says; SkillTrial's
/// schemas have no triggers.)
pub fn capture(conn: &Connection) -> rusqlite::Result<()> {
    let tables = tables(conn)?;
    conn.pragma_update(None, "recursive_triggers", true)?;
    let mut ddl = format!(
        "CREATE TEMP TABLE IF NOT EXISTS {CHANGES} (id INTEGER PRIMARY KEY, sql TEXT NOT NULL);
         DELETE FROM temp.{CHANGES};"
    );
    for table in &tables {
        ddl.push_str(&table.triggers());
    }
    conn.execute_batch(&ddl)
}

/// The statements captured since the last `take`, in the order the rows changed, and clears
/// them. Call it inside the write transaction, after its last write and before its commit: a
/// transaction that then rolls back takes its statements (and their clearing) with it, and
/// one that commits leaves none behind.
pub fn take(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let statements = conn
        .prepare_cached(&format!("SELECT sql FROM temp.{CHANGES} ORDER BY id"))?
        .query_map([], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    if !statements.is_empty() {
        conn.prepare_cached(&format!("DELETE FROM temp.{CHANGES}"))?
            .execute([])?;
    }
    Ok(statements)
}

/// Whether `statement` has one of the two forms [`capture`] writes: a log is applied as SQL,
/// so anything else (a corrupt log, another program's) is refused before it runs.
fn is_row_statement(statement: &str) -> bool {
    statement.starts_with("INSERT OR REPLACE INTO main.\"")
        || statement.starts_with("DELETE FROM main.\"")
}

/// Applies a captured log to `conn`, a file of the schema it was captured on: each
/// transaction in order, each in a transaction of its own (`BEGIN IMMEDIATE`), each statement
/// once. On an error, the transactions before the failing one stay committed and the error
/// names the failing transaction and statement.
///
/// The log is every row's image, so nothing must write a row the log does not: schema
/// triggers and foreign-key actions are switched off while it runs (and put back as they were
/// after). Their effects in the original are rows of the log already; running them again could
/// diverge (a trigger reading the clock), and an `INSERT OR REPLACE` over a parent row would
/// cascade-delete its children. Foreign keys are checked once, at the end
/// (`PRAGMA foreign_key_check` must be empty): every committed state of the original was whole.
///
/// Why replaying the same transaction again is harmless (a log cut and resumed at an
/// overlapping point): each statement sets one rowid to an image or deletes it, so every row
/// the transaction touched ends at its last image, as before. A row it did not touch is never
/// removed by `OR REPLACE` making room: it held no value any touched row held while the
/// original transaction ran, or the original would have failed on the same constraint.
pub fn replay(
    conn: &Connection,
    transactions: impl IntoIterator<Item = Vec<String>>,
) -> rusqlite::Result<()> {
    let foreign_keys: bool = conn.pragma_query_value(None, "foreign_keys", |r| r.get(0))?;
    let triggers = conn.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER)?;
    // `foreign_keys` does nothing inside a transaction: switched between them.
    conn.pragma_update(None, "foreign_keys", false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)?;
    let replayed = apply(conn, transactions);
    let keys_back = conn.pragma_update(None, "foreign_keys", foreign_keys);
    let triggers_back = conn
        .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, triggers)
        .map(drop);
    replayed.and(keys_back).and(triggers_back)
}

fn apply(
    conn: &Connection,
    transactions: impl IntoIterator<Item = Vec<String>>,
) -> rusqlite::Result<()> {
    for (t, statements) in transactions.into_iter().enumerate() {
        let context = |s: usize| format!("replaying statement {s} of transaction {t}");
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
        for (s, statement) in statements.iter().enumerate() {
            if !is_row_statement(statement) {
                return Err(misuse(format!(
                    "{}: not a captured row change: {:.80}",
                    context(s),
                    statement
                )));
            }
            tx.execute(statement, [])
                .map_err(|e| within(&context(s), e))?;
        }
        tx.commit()
            .map_err(|e| within(&format!("committing transaction {t}"), e))?;
    }
    let orphan: Option<(String, String)> = conn
        .query_row("PRAGMA foreign_key_check", [], |r| {
            Ok((r.get(0)?, r.get(2)?))
        })
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    match orphan {
        Some((table, parent)) => Err(misuse(format!(
            "the replayed log leaves a row of {table} whose {parent} row is missing"
        ))),
        None => Ok(()),
    }
}

/// Why [`restore_file`] could not build a file from a log.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{0} exists: a restore only ever creates a new file")]
    Exists(PathBuf),
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create {path}: {source}")]
    Create {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{path}: {source}")]
    Sql {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

/// `path` with `suffix` appended to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Builds a NEW file at `path` from a captured log, all or nothing: `create` makes and
/// migrates a fresh file at a staging path beside it (`<path>.restoring`), the log is
/// [`replay`]ed into it (commits are not synced one by one; the file is synced once, whole),
/// and it is renamed into place only once complete. A restore that dies half-way leaves only
/// the staging file, which the next restore removes. `path` itself (or a `-wal` of it) must
/// not exist: a live file is never overwritten. One restore of a path at a time.
pub fn restore_file(
    path: &Path,
    create: impl FnOnce(&Path) -> Result<Connection, Box<dyn std::error::Error + Send + Sync>>,
    transactions: impl IntoIterator<Item = Vec<String>>,
) -> Result<(), RestoreError> {
    for existing in [path.to_path_buf(), beside(path, "-wal")] {
        if existing.symlink_metadata().is_ok() {
            return Err(RestoreError::Exists(existing));
        }
    }
    let io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| RestoreError::Io {
            action,
            path,
            source,
        }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io("create", dir))?;
    }
    let staging = beside(path, ".restoring");
    for leftover in ["", "-wal", "-shm", "-journal"] {
        let leftover = beside(&staging, leftover);
        match std::fs::remove_file(&leftover) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io("remove the leftover", &leftover)(e));
            }
            _ => {}
        }
    }
    let conn = create(&staging).map_err(|source| RestoreError::Create {
        path: staging.clone(),
        source,
    })?;
    let sql = |source| RestoreError::Sql {
        path: staging.clone(),
        source,
    };
    conn.pragma_update(None, "synchronous", "OFF")
        .map_err(sql)?;
    replay(&conn, transactions).map_err(sql)?;
    // Everything into the main file, so that it alone holds the rows when it moves.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(sql)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(sql)?;
    conn.close().map_err(|(_, e)| sql(e))?;
    std::fs::File::open(&staging)
        .and_then(|f| f.sync_all())
        .map_err(io("sync", &staging))?;
    std::fs::rename(&staging, path).map_err(io("move the restored file to", path))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io("sync", dir))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::Value;

    /// A schema with what capture must get right: an AUTOINCREMENT id, an INTEGER PRIMARY KEY
    /// alias, a plain rowid table, a table with odd names, a REAL, blobs, NULLs, a UNIQUE
    /// column, a foreign key that cascades and one that sets NULL, and a schema trigger.
    const SCHEMA: &str = r#"
        CREATE TABLE parent (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE);
        CREATE TABLE child (
            id INTEGER PRIMARY KEY,
            parent_id INTEGER NOT NULL REFERENCES parent (id) ON DELETE CASCADE,
            note TEXT,
            data BLOB,
            big INTEGER,
            ratio REAL
        );
        CREATE TABLE loose (label TEXT, parent_id INTEGER REFERENCES parent (id) ON DELETE SET NULL);
        CREATE TABLE "we""ird 'table'" ("col ""a""" TEXT, [b c] INTEGER);
        CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT NOT NULL, at REAL NOT NULL);
        CREATE TRIGGER parent_audit AFTER INSERT ON parent BEGIN
            INSERT INTO audit (what, at) VALUES ('parent ' || NEW.name, random());
        END;
    "#;

    fn database() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn
    }

    /// A value compared exactly: a real by its bits.
    fn exact(v: Value) -> Value {
        match v {
            Value::Real(r) => Value::Text(format!("real {:016x}", r.to_bits())),
            v => v,
        }
    }

    /// Every row of every table (rowids included) and the AUTOINCREMENT counters.
    fn dump(conn: &Connection) -> Vec<(String, Vec<Vec<Value>>)> {
        let names: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'sqlite_sequence' ORDER BY name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut tables: Vec<(String, Vec<Vec<Value>>)> = names
            .into_iter()
            .map(|name| {
                let mut stmt = conn
                    .prepare(&format!(
                        "SELECT _rowid_, * FROM main.{} ORDER BY _rowid_",
                        ident(&name)
                    ))
                    .unwrap();
                let n = stmt.column_count();
                let rows = stmt
                    .query_map([], |r| (0..n).map(|i| r.get(i).map(exact)).collect())
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                (name, rows)
            })
            .collect();
        if let Ok(mut stmt) = conn.prepare("SELECT name, seq FROM sqlite_sequence ORDER BY name") {
            let sequence = stmt
                .query_map([], |r| Ok(vec![r.get(0)?, r.get(1)?]))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            tables.push(("sqlite_sequence".to_owned(), sequence));
        }
        tables
    }

    /// Runs `sql` in one transaction and returns what it captured.
    fn transaction(conn: &mut Connection, sql: &str) -> Vec<String> {
        let tx = conn.transaction().unwrap();
        tx.execute_batch(sql).unwrap();
        let statements = take(&tx).unwrap();
        tx.commit().unwrap();
        statements
    }

    /// Given a capturing connection, when transactions insert, update (in place and to another
    /// rowid), upsert, replace and delete (with cascades) every kind of value, then replaying
    /// the log onto a fresh database of the same schema gives identical rows in every table.
    #[test]
    fn replaying_the_captured_log_gives_identical_rows_in_every_table() {
        let mut original = database();
        capture(&original).unwrap();
        let steps = [
            "INSERT INTO parent (name) VALUES ('a'), ('b'), ('c'), ('it''s \"quoted\"');",
            "INSERT INTO child (parent_id, note, data, big, ratio) VALUES
               (1, 'line one
line two', x'00ff10', 9223372036854775807, 0.1),
               (1, 'ünïcødé ✓ 日本 🦀', x'', -9223372036854775808, 1e308 * 10),
               (2, NULL, NULL, NULL, -1e308 * 10),
               (2, 'tab	and nul-free', zeroblob(3), 0, 0.30000000000000004),
               (3, '''', x'27', 1, 5e-324),
               (3, char(10, 13, 39, 34), randomblob(64), -1, 1.0 / 3);
             INSERT INTO loose VALUES ('keeps', 2), ('loses', 3), (NULL, NULL);
             INSERT INTO \"we\"\"ird 'table'\" VALUES ('x''y', 1), (NULL, 2);",
            "UPDATE child SET note = note || '!', ratio = ratio * 3 WHERE parent_id = 1;
             UPDATE child SET id = 100 WHERE id = 5;
             UPDATE parent SET name = 'b2' WHERE id = 2;
             INSERT INTO parent (name) VALUES ('b2') ON CONFLICT (name) DO UPDATE SET name = 'b3';
             INSERT OR REPLACE INTO parent (id, name) VALUES (9, 'a');",
            "DELETE FROM parent WHERE id = 3;
             DELETE FROM \"we\"\"ird 'table'\" WHERE \"col \"\"a\"\"\" IS NULL;
             INSERT INTO parent (name) VALUES ('after');
             DELETE FROM parent WHERE name = 'after';",
        ];
        let log: Vec<Vec<String>> = steps
            .iter()
            .map(|step| transaction(&mut original, step))
            .collect();
        // The cascades and the replace were captured as rows of their own.
        assert!(
            log[3]
                .iter()
                .any(|s| s.starts_with("DELETE FROM main.\"child\""))
        );
        assert!(
            log[3]
                .iter()
                .any(|s| s.starts_with("INSERT OR REPLACE INTO main.\"loose\""))
        );
        assert!(
            log[2]
                .iter()
                .any(|s| s == "DELETE FROM main.\"parent\" WHERE rowid = 1")
        );
        assert!(log.iter().all(|t| t.iter().all(|s| is_row_statement(s))));

        let copy = database();
        replay(&copy, log.clone()).unwrap();
        assert_eq!(dump(&copy), dump(&original));
        // ... and the copy is as it was: foreign keys and triggers on again.
        let keys: bool = copy
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert!(keys);
        assert!(
            copy.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER)
                .unwrap()
        );

        // Replaying the last transaction again changes nothing.
        replay(&copy, [log[3].clone()]).unwrap();
        assert_eq!(dump(&copy), dump(&original));
    }

    /// Every prefix of a log restores to the state the original committed at that point.
    #[test]
    fn every_prefix_of_the_log_restores_the_state_committed_then() {
        let mut original = database();
        capture(&original).unwrap();
        let steps = [
            "INSERT INTO parent (name) VALUES ('a'), ('b');",
            "INSERT INTO child (parent_id, note) VALUES (1, 'x'), (2, 'y');",
            "UPDATE child SET note = 'z' WHERE id = 1; DELETE FROM parent WHERE id = 2;",
            // (a row moved to another rowid: its id is the rowid)
            "INSERT INTO parent (name) VALUES ('c'); UPDATE child SET id = 7 WHERE id = 1;",
        ];
        let mut log = Vec::new();
        let mut states = vec![dump(&original)];
        for step in steps {
            log.push(transaction(&mut original, step));
            states.push(dump(&original));
        }
        for (n, state) in states.iter().enumerate() {
            let copy = database();
            replay(&copy, log[..n].to_vec()).unwrap();
            assert_eq!(&dump(&copy), state, "prefix of {n}");
        }
    }

    #[test]
    fn a_rolled_back_transaction_leaves_nothing_in_the_log() {
        let mut conn = database();
        capture(&conn).unwrap();
        {
            let tx = conn.transaction().unwrap();
            tx.execute("INSERT INTO parent (name) VALUES ('gone')", [])
                .unwrap();
            assert_eq!(take(&tx).unwrap().len(), 2, "the row and the trigger's row");
            tx.execute("INSERT INTO parent (name) VALUES ('gone too')", [])
                .unwrap();
            // dropped: rolled back
        }
        {
            // Taken, then rolled back: the clearing rolls back with it, to the empty log of
            // before the transaction.
            let tx = conn.transaction().unwrap();
            tx.execute("INSERT INTO parent (name) VALUES ('gone')", [])
                .unwrap();
            take(&tx).unwrap();
            tx.rollback().unwrap();
        }
        let tx = conn.transaction().unwrap();
        assert!(take(&tx).unwrap().is_empty());
        tx.execute("INSERT INTO parent (name) VALUES ('kept')", [])
            .unwrap();
        let statements = take(&tx).unwrap();
        tx.commit().unwrap();
        assert_eq!(statements.len(), 2);
        assert!(
            statements.iter().all(|s| !s.contains("gone")),
            "{statements:?}"
        );
    }

    /// A sink that takes `accept` appends, then refuses; it counts the calls it gets.
    struct Counting {
        accept: usize,
        calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl ChangeSink for Counting {
        fn append(&mut self, _: &[String]) -> Result<(), String> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.accept = self.accept.checked_sub(1).ok_or("the lease was lost")?;
            Ok(())
        }
    }

    #[test]
    fn once_the_sink_refuses_a_write_every_later_one_is_refused_without_reaching_it() {
        let mut conn = database();
        capture(&conn).unwrap();
        let calls = std::sync::Arc::default();
        let mut replica = Replica::new(Box::new(Counting {
            accept: 1,
            calls: std::sync::Arc::clone(&calls),
        }));
        let mut write = |conn: &mut Connection, sql: &str| {
            let tx = conn.transaction().unwrap();
            tx.execute_batch(sql).unwrap();
            replica.ship(&tx).map(|()| tx.commit().unwrap())
        };
        write(&mut conn, "INSERT INTO parent (name) VALUES ('a')").unwrap();
        // A transaction that changes no row reaches no sink.
        write(&mut conn, "UPDATE parent SET name = 'b' WHERE id = 99").unwrap();
        let refused = write(&mut conn, "INSERT INTO parent (name) VALUES ('b')").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "its replica refused the write (the lease was lost)"
        );
        let later = write(&mut conn, "INSERT INTO parent (name) VALUES ('c')").unwrap_err();
        assert_eq!(
            later.to_string(),
            "its replica refused the write (an earlier write was refused: the lease was lost)"
        );
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(replica.refused(), Some("the lease was lost"));
        let names: Vec<String> = conn
            .prepare("SELECT name FROM parent")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(names, ["a"], "the refused writes rolled back");
    }

    #[test]
    fn a_statement_that_is_not_a_row_change_is_refused_and_the_transactions_before_stay() {
        let mut original = database();
        capture(&original).unwrap();
        let first = transaction(&mut original, "INSERT INTO parent (name) VALUES ('a');");
        let copy = database();
        let err = replay(&copy, [first, vec!["DROP TABLE child".to_owned()]]).unwrap_err();
        assert!(
            err.to_string()
                .contains("replaying statement 0 of transaction 1: not a captured row change: DROP TABLE child"),
            "{err}"
        );
        let n: i64 = copy
            .query_row("SELECT COUNT(*) FROM parent", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        assert!(
            copy.prepare("SELECT * FROM child").is_ok(),
            "child is still there"
        );
    }

    #[test]
    fn a_table_without_rowid_is_refused_naming_it() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;")
            .unwrap();
        let err = capture(&conn).unwrap_err();
        assert!(
            err.to_string()
                .contains("table kv is WITHOUT ROWID: only rowid tables can be replicated"),
            "{err}"
        );
    }

    #[test]
    fn a_table_with_a_column_named_rowid_is_addressed_by_another_name() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (rowid TEXT, v INTEGER);")
            .unwrap();
        capture(&conn).unwrap();
        let log = vec![transaction(
            &mut conn,
            "INSERT INTO t VALUES ('mine', 1), ('also', 2); DELETE FROM t WHERE v = 1;",
        )];
        assert!(
            log[0][0].starts_with("INSERT OR REPLACE INTO main.\"t\"(_rowid_, \"rowid\", \"v\")")
        );
        let copy = Connection::open_in_memory().unwrap();
        copy.execute_batch("CREATE TABLE t (rowid TEXT, v INTEGER);")
            .unwrap();
        replay(&copy, log).unwrap();
        assert_eq!(dump(&copy), dump(&conn));
    }

    #[test]
    fn a_restore_builds_a_new_file_and_never_overwrites_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut original = database();
        capture(&original).unwrap();
        let log = vec![transaction(
            &mut original,
            "INSERT INTO parent (name) VALUES ('a'); INSERT INTO child (parent_id, note) VALUES (1, 'n');",
        )];
        let create = |p: &Path| -> Result<Connection, Box<dyn std::error::Error + Send + Sync>> {
            let conn = Connection::open(p)?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "foreign_keys", true)?;
            conn.execute_batch(SCHEMA)?;
            Ok(conn)
        };
        let path = dir.path().join("copy.sqlite");
        // A leftover of a restore that died is replaced.
        std::fs::write(beside(&path, ".restoring"), b"half").unwrap();
        restore_file(&path, create, log.clone()).unwrap();
        assert_eq!(dump(&Connection::open(&path).unwrap()), dump(&original));
        assert!(!beside(&path, ".restoring").exists());

        let err = restore_file(&path, create, log).unwrap_err();
        assert!(
            matches!(err, RestoreError::Exists(ref p) if *p == path),
            "{err}"
        );
        assert_eq!(dump(&Connection::open(&path).unwrap()), dump(&original));
    }
}

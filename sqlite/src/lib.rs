//! How every SkillTrial SQLite file reaches its schema, and how its rows are read back.
//!
//! A database's schema is its numbered migrations (`migrations/<database>/000N_*.sql` in the
//! workspace), and `PRAGMA user_version` counts how many of them the file holds. [`migrate`]
//! applies the missing ones in order inside one write transaction, stamping the version after
//! each, so a file is always at a migration's boundary: a failure anywhere rolls the whole
//! transaction back and leaves the file as it was. A file of a newer schema than the binary
//! knows is refused, never touched. [`get_with`] reads one column by name through a
//! conversion that may refuse it: a stored value outside its type is an error naming the
//! column, never a default.
//!
//! The journal (`skilltrial-engine`), the chain outbox (`skilltrial-chain`) and the hosted
//! runner's state (`skilltrial-runner`) all open their files through this crate; it sits below
//! `engine` and `chain` (which must not depend on each other) and above nothing of ours, so
//! `core` stays free of SQLite.
//!
//! [`replica`] captures a file's committed writes as the SQL statements that reproduce them,
//! for a copy kept elsewhere, and rebuilds a file from such a log.

pub mod replica;

use rusqlite::types::FromSql;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior};

/// Why a database could not be brought to its schema. Each caller names the file in front of
/// it ("journal <path>: …").
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
    #[error("written by a newer SkillTrial (schema {found}, this one knows {known})")]
    TooNew { found: u32, known: u32 },
    #[error(
        "migrating it to schema {known} would leave a row of {table} whose {parent} row is missing"
    )]
    Orphan {
        known: u32,
        table: String,
        parent: String,
    },
}

impl MigrateError {
    /// Whether SQLite said the file is busy or locked by another connection (worth retrying).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            Self::Sql(e) if matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        )
    }
}

/// Brings a file written before its database was numbered to the shape of migration 1, inside
/// the migration's transaction (for a column added in code before the migrations existed).
pub type Adopt = fn(&Transaction<'_>) -> rusqlite::Result<()>;

/// What [`migrate`] found and left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The file's schema before.
    pub from: u32,
    /// Its schema now: the number of migrations.
    pub to: u32,
}

/// Applies `migrations[user_version..]` to `conn`, in order, in one `BEGIN IMMEDIATE`
/// transaction, stamping `user_version` after each; on a file at version 0, `adopt` runs first.
///
/// Another process may be migrating the same file at this moment: the version is read again
/// under the write lock, so each migration runs exactly once and nobody sees a half-made
/// schema. A migration may rebuild a table that others reference (SQLite's twelve-step
/// ALTER TABLE procedure), so foreign keys are off while migrations run (the pragma does nothing
/// inside a transaction, so it is switched around it, on this connection only, and put back as
/// it was) and `PRAGMA foreign_key_check` must come back empty before the commit.
pub fn migrate(
    conn: &mut Connection,
    migrations: &[&str],
    adopt: Option<Adopt>,
) -> Result<Migrated, MigrateError> {
    let known = u32::try_from(migrations.len()).unwrap_or(u32::MAX);
    let found = user_version(conn)?;
    if found > known {
        return Err(MigrateError::TooNew { found, known });
    }
    if found == known {
        return Ok(Migrated {
            from: found,
            to: known,
        });
    }
    let foreign_keys: bool = conn.pragma_query_value(None, "foreign_keys", |r| r.get(0))?;
    if foreign_keys {
        conn.pragma_update(None, "foreign_keys", false)?;
    }
    let migrated = apply(conn, migrations, adopt, known);
    if foreign_keys {
        let restored = conn.pragma_update(None, "foreign_keys", true);
        return migrated.and_then(|m| restored.map(|()| m).map_err(MigrateError::from));
    }
    migrated
}

fn apply(
    conn: &mut Connection,
    migrations: &[&str],
    adopt: Option<Adopt>,
    known: u32,
) -> Result<Migrated, MigrateError> {
    // Dropped without a commit on any error below: SQLite rolls everything back.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let from = user_version(&tx)?;
    if from > known {
        return Err(MigrateError::TooNew { found: from, known });
    }
    if from == 0
        && let Some(adopt) = adopt
    {
        adopt(&tx)?;
    }
    for (version, migration) in (1..=known).zip(migrations).skip(from as usize) {
        tx.execute_batch(migration)?;
        tx.pragma_update(None, "user_version", version)?;
    }
    let orphan: Option<(String, String)> = tx
        .query_row("PRAGMA foreign_key_check", [], |r| {
            Ok((r.get(0)?, r.get(2)?))
        })
        .optional()?;
    if let Some((table, parent)) = orphan {
        return Err(MigrateError::Orphan {
            known,
            table,
            parent,
        });
    }
    tx.commit()?;
    Ok(Migrated { from, to: known })
}

/// The file's `PRAGMA user_version`: the number of migrations it holds.
pub fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// Column `name` of `row`, read as `S` and turned into `T` by `convert`; a value `convert`
/// refuses is a conversion error naming the column and the reason.
pub fn get_with<S: FromSql, T>(
    row: &Row<'_>,
    name: &str,
    convert: impl FnOnce(S) -> Result<T, String>,
) -> rusqlite::Result<T> {
    let stored: S = row.get(name)?;
    convert(stored).map_err(|reason| {
        let index = row.as_ref().column_index(name).unwrap_or(0);
        let kind = row
            .get_ref(index)
            .map_or(rusqlite::types::Type::Null, |v| v.data_type());
        rusqlite::Error::FromSqlConversionFailure(
            index,
            kind,
            format!("column {name}: {reason}").into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEPS: &[&str] = &[
        "CREATE TABLE a (x INTEGER NOT NULL);",
        "CREATE TABLE b (y TEXT NOT NULL);",
    ];

    fn open(path: &std::path::Path) -> Connection {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        conn
    }

    fn tables(conn: &Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_fresh_file_gets_every_migration_and_a_current_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("db.sqlite"));
        let done = migrate(&mut conn, STEPS, None).unwrap();
        assert_eq!(done, Migrated { from: 0, to: 2 });
        assert_eq!(tables(&conn), ["a", "b"]);
        assert_eq!(user_version(&conn).unwrap(), 2);
        assert_eq!(
            migrate(&mut conn, STEPS, None).unwrap(),
            Migrated { from: 2, to: 2 }
        );
        let on: bool = conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert!(on, "foreign keys are put back as they were");
    }

    #[test]
    fn only_the_missing_migrations_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("db.sqlite"));
        migrate(&mut conn, &STEPS[..1], None).unwrap();
        conn.execute("INSERT INTO a VALUES (7)", []).unwrap();
        let done = migrate(&mut conn, STEPS, None).unwrap();
        assert_eq!(done, Migrated { from: 1, to: 2 });
        let x: i64 = conn.query_row("SELECT x FROM a", [], |r| r.get(0)).unwrap();
        assert_eq!(x, 7);
    }

    /// A failing migration rolls back the ones before it in the same run, and the version
    /// stamped after them: the file is as it was.
    #[test]
    fn a_failed_migration_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("db.sqlite"));
        let broken = [STEPS[0], STEPS[1], "CREATE TABLE a (z INTEGER);"];
        let err = migrate(&mut conn, &broken, None).unwrap_err();
        assert!(matches!(err, MigrateError::Sql(_)), "{err:?}");
        assert!(tables(&conn).is_empty());
        assert_eq!(user_version(&conn).unwrap(), 0);
    }

    #[test]
    fn a_newer_file_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("db.sqlite"));
        migrate(&mut conn, STEPS, None).unwrap();
        let err = migrate(&mut conn, &STEPS[..1], None).unwrap_err();
        assert!(
            matches!(err, MigrateError::TooNew { found: 2, known: 1 }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "written by a newer SkillTrial (schema 2, this one knows 1)"
        );
        assert_eq!(user_version(&conn).unwrap(), 2);
    }

    /// A rebuilt table whose rows lose their parent is refused before the commit.
    #[test]
    fn a_migration_that_orphans_a_row_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("db.sqlite"));
        let steps = [
            "CREATE TABLE p (id INTEGER PRIMARY KEY); \
             CREATE TABLE c (p INTEGER REFERENCES p (id)); \
             INSERT INTO p VALUES (1); INSERT INTO c VALUES (1);",
            "DELETE FROM p;",
        ];
        migrate(&mut conn, &steps[..1], None).unwrap();
        let err = migrate(&mut conn, &steps, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "migrating it to schema 2 would leave a row of c whose p row is missing"
        );
        assert_eq!(user_version(&conn).unwrap(), 1);
        let parents: i64 = conn
            .query_row("SELECT COUNT(*) FROM p", [], |r| r.get(0))
            .unwrap();
        assert_eq!(parents, 1);
    }

    #[test]
    fn adoption_runs_once_on_an_unnumbered_file_before_the_first_migration() {
        fn adopt(tx: &Transaction<'_>) -> rusqlite::Result<()> {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS adopted (n INTEGER); INSERT INTO adopted VALUES (1);",
            )
        }
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("db.sqlite"));
        migrate(&mut conn, &STEPS[..1], Some(adopt)).unwrap();
        migrate(&mut conn, STEPS, Some(adopt)).unwrap();
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM adopted", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn a_refused_value_is_an_error_naming_its_column() {
        let conn = Connection::open_in_memory().unwrap();
        let read = |text: &str| {
            conn.query_row("SELECT ?1 AS phase", [text], |r| {
                get_with(r, "phase", |s: String| {
                    if s == "ok" {
                        Ok(1)
                    } else {
                        Err(format!("unknown text {s:?}"))
                    }
                })
            })
        };
        assert_eq!(read("ok").unwrap(), 1);
        let err = read("nope").unwrap_err();
        assert!(
            err.to_string()
                .contains("column phase: unknown text \"nope\""),
            "{err}"
        );
    }
}

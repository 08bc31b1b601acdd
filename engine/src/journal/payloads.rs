//! Payloads (request and response bodies, answers): recorded in the commit that names them,
//! read back, purged past retention.

use rusqlite::{Connection, OptionalExtension, params};

use super::{AttemptState, Journal, JournalError, PayloadKind, now_ms, parsed, to_i64, to_u64};

impl Journal {
    /// Records a payload blob written to the payload store.
    pub fn record_payload(
        &self,
        sha256: &str,
        kind: PayloadKind,
        bytes: u64,
    ) -> Result<(), JournalError> {
        self.sql_write(|c| Self::record_payload_on(c, sha256, kind, bytes, None))
    }

    /// A payload's row, with its bytes kept in the journal when given (migration 0005). Seen
    /// again, a payload is fresh again: its age restarts, a purge is undone, and content given
    /// now replaces none.
    pub(super) fn record_payload_on(
        c: &Connection,
        sha256: &str,
        kind: PayloadKind,
        bytes: u64,
        content: Option<&[u8]>,
    ) -> rusqlite::Result<()> {
        c.prepare_cached(
            "INSERT INTO payloads (sha256, kind, bytes, created_at_ms, content) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(sha256) DO UPDATE SET created_at_ms = excluded.created_at_ms, purged_at_ms = NULL,
                content = COALESCE(excluded.content, content)",
        )?
        .execute(params![sha256, kind.as_str(), to_i64(bytes), now_ms(), content])?;
        Ok(())
    }

    /// The bytes of a payload the journal holds itself (journaled since schema 5), unless it was
    /// purged. `None` means: look in the payload store (older runs).
    pub fn payload_content(&self, sha256: &str) -> Result<Option<Vec<u8>>, JournalError> {
        self.sql(|c| {
            c.prepare_cached(
                "SELECT content FROM payloads WHERE sha256 = ?1 AND purged_at_ms IS NULL",
            )?
            .query_row([sha256], |r| r.get::<_, Option<Vec<u8>>>(0))
            .optional()
            .map(Option::flatten)
        })
    }

    /// Payloads created before `cutoff_ms` and not yet purged, but for the answers of attempts
    /// not scored yet.
    pub fn payloads_before(
        &self,
        cutoff_ms: i64,
    ) -> Result<Vec<(String, PayloadKind, u64)>, JournalError> {
        self.sql(|c| {
            // An answer not scored yet (a run stopped between its answer and its verdict) is
            // kept whatever its age: the run scores it when it resumes, and could never finish
            // without it.
            let mut stmt = c.prepare_cached(
                "SELECT sha256, kind, bytes FROM payloads
                 WHERE created_at_ms < ?1 AND purged_at_ms IS NULL
                   AND sha256 NOT IN (SELECT answer_sha256 FROM attempts
                                      WHERE state = ?2 AND outcome IS NULL AND answer_sha256 IS NOT NULL)
                 ORDER BY created_at_ms",
            )?;
            stmt
                .query_map(params![cutoff_ms, AttemptState::Result.as_str()], |r| {
                    Ok((r.get(0)?, parsed(r, 1)?, to_u64(r.get(2)?)))
                })?
                .collect()
        })
    }

    /// Marks a payload purged and drops the bytes the journal held of it; returns how many.
    /// (`secure_delete` is on: the freed pages are zeroed, not left readable in the file.)
    pub fn mark_purged(&self, sha256: &str) -> Result<u64, JournalError> {
        self.sql_write(|c| {
            let held: Option<i64> = c
                .prepare_cached("SELECT length(content) FROM payloads WHERE sha256 = ?1")?
                .query_row([sha256], |r| r.get(0))
                .optional()?
                .flatten();
            c.prepare_cached(
                "UPDATE payloads SET purged_at_ms = ?2, content = NULL WHERE sha256 = ?1",
            )?
            .execute(params![sha256, now_ms()])?;
            Ok(held.map_or(0, to_u64))
        })
    }
}

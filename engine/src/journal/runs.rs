//! Runs and their planned trials: creating a run, finding it, its status, its clock and its
//! cancel request.

use rusqlite::{Connection, OptionalExtension, Row, params};

use skilltrial_core::manifest::{Manifest, PlannedTrial};

use super::{
    Journal, JournalError, RUN_COLUMNS, RunRow, RunStatus, TrialRow, column, now_ms, parsed,
    refuse, select, to_i64, to_u64,
};

impl Journal {
    /// Records a new run and its trials; if the run exists, checks it is the same manifest.
    pub fn create_run(
        &mut self,
        run_id: &str,
        manifest: &Manifest,
        trials: &[PlannedTrial],
    ) -> Result<bool, JournalError> {
        // Checked and written under one write lock: two processes recording the same run at the
        // same moment (`plan` and `run`, or two `run`s) must not both try to insert it.
        self.write(|tx| {
            let existing: Option<String> = tx
                .prepare_cached("SELECT manifest_sha256 FROM runs WHERE id = ?1")?
                .query_row([run_id], |r| r.get(0))
                .optional()?;
            if let Some(existing) = existing {
                if existing != run_id {
                    return Err(refuse(format!(
                        "run {run_id} exists with a different manifest"
                    )));
                }
                return Ok(false);
            }
            tx.prepare_cached(
                "INSERT INTO runs (id, manifest_sha256, pack_id, created_at_ms, status, cap_micros, max_requests, max_tokens, run_limit_ms)
                 VALUES (?1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                run_id,
                manifest.pack.id,
                now_ms(),
                RunStatus::Planned.as_str(),
                manifest.budget.cap_usd_micros.map(to_i64),
                manifest.budget.max_requests,
                manifest.budget.max_tokens.map(to_i64),
                to_i64(manifest.limits.run_timeout_ms)
            ])?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO trials (run_id, idx, task, arm, repetition, reserve_micros, input_token_bound, max_output_tokens)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for t in trials {
                insert.execute(params![
                    run_id,
                    t.index,
                    t.task,
                    t.arm.as_str(),
                    t.repetition,
                    to_i64(t.reserve.0),
                    to_i64(t.input_token_bound),
                    to_i64(t.max_output_tokens)
                ])?;
            }
            Ok(true)
        })
    }

    pub(super) fn run_from(r: &Row<'_>) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            id: r.get(at!(RUN_COLUMNS, "id"))?,
            manifest_sha256: r.get(at!(RUN_COLUMNS, "manifest_sha256"))?,
            pack_id: r.get(at!(RUN_COLUMNS, "pack_id"))?,
            created_at_ms: r.get(at!(RUN_COLUMNS, "created_at_ms"))?,
            started_at_ms: r.get(at!(RUN_COLUMNS, "started_at_ms"))?,
            finished_at_ms: r.get(at!(RUN_COLUMNS, "finished_at_ms"))?,
            status: parsed(r, at!(RUN_COLUMNS, "status"))?,
            cancel_requested: r.get::<_, i64>(at!(RUN_COLUMNS, "cancel_requested"))? != 0,
            cap_micros: r
                .get::<_, Option<i64>>(at!(RUN_COLUMNS, "cap_micros"))?
                .map(to_u64),
            max_requests: r.get(at!(RUN_COLUMNS, "max_requests"))?,
            max_tokens: r
                .get::<_, Option<i64>>(at!(RUN_COLUMNS, "max_tokens"))?
                .map(to_u64),
            run_limit_ms: r
                .get::<_, Option<i64>>(at!(RUN_COLUMNS, "run_limit_ms"))?
                .map(to_u64),
            executed_ms: to_u64(r.get(at!(RUN_COLUMNS, "executed_ms"))?),
            concurrency: r
                .get::<_, Option<i64>>(at!(RUN_COLUMNS, "concurrency"))?
                .and_then(|n| u32::try_from(n).ok()),
            syncs: to_u64(r.get(at!(RUN_COLUMNS, "syncs"))?),
        })
    }

    /// A run by id, or by a unique prefix of at least 8 hex characters.
    pub fn find_run(&self, id: &str) -> Result<Option<RunRow>, JournalError> {
        let rows: Vec<RunRow> = self.sql(|c| {
            let mut stmt = c.prepare_cached(&select(
                RUN_COLUMNS,
                "runs",
                "WHERE id = ?1 OR (length(?1) >= 8 AND substr(id, 1, length(?1)) = ?1) ORDER BY created_at_ms DESC",
            ))?;
            stmt.query_map([id], Self::run_from)?.collect()
        })?;
        match rows.len() {
            0 => Ok(None),
            1 => Ok(rows.into_iter().next()),
            n => Err(JournalError::State(format!(
                "`{id}` matches {n} runs; give more of the id"
            ))),
        }
    }

    /// Every run, the most recently created first.
    pub fn runs(&self) -> Result<Vec<RunRow>, JournalError> {
        self.sql(|c| {
            c.prepare_cached(&select(
                RUN_COLUMNS,
                "runs",
                "ORDER BY created_at_ms DESC, rowid DESC",
            ))?
            .query_map([], Self::run_from)?
            .collect()
        })
    }

    /// The most recently created run.
    pub fn latest_run(&self) -> Result<Option<RunRow>, JournalError> {
        self.sql(|c| {
            c.prepare_cached(&select(
                RUN_COLUMNS,
                "runs",
                "ORDER BY created_at_ms DESC, rowid DESC LIMIT 1",
            ))?
            .query_row([], Self::run_from)
            .optional()
        })
    }

    /// Sets a run's status (and its start/finish time). [`RunStatus::Interrupted`] is never
    /// stored: the schema refuses it.
    pub fn set_status(&self, run_id: &str, status: RunStatus) -> Result<(), JournalError> {
        self.sql_write(|c| {
            c.prepare_cached(
                "UPDATE runs SET status = ?2,
                    started_at_ms = CASE WHEN ?4 AND started_at_ms IS NULL THEN ?3 ELSE started_at_ms END,
                    finished_at_ms = CASE WHEN ?5 THEN ?3 ELSE finished_at_ms END
                 WHERE id = ?1",
            )?
            .execute(params![
                run_id,
                status.as_str(),
                now_ms(),
                status == RunStatus::Running,
                status.is_end()
            ])
        })?;
        Ok(())
    }

    /// Stores the time (ms) the runner has spent executing a run, over all its invocations.
    pub fn set_executed_ms(&self, run_id: &str, executed_ms: u64) -> Result<(), JournalError> {
        self.sql_write(|c| Self::set_executed_ms_on(c, run_id, executed_ms))?;
        Ok(())
    }

    pub(super) fn set_executed_ms_on(
        c: &Connection,
        run_id: &str,
        executed_ms: u64,
    ) -> rusqlite::Result<()> {
        c.prepare_cached("UPDATE runs SET executed_ms = MAX(executed_ms, ?2) WHERE id = ?1")?
            .execute(params![run_id, to_i64(executed_ms)])?;
        Ok(())
    }

    /// Records the requests in flight at once of the run's current invocation.
    pub fn set_concurrency(&self, run_id: &str, concurrency: u32) -> Result<(), JournalError> {
        self.sql_write(|c| {
            c.prepare_cached("UPDATE runs SET concurrency = ?2 WHERE id = ?1")?
                .execute(params![run_id, concurrency])
        })?;
        Ok(())
    }

    /// Asks a run to stop dispatching. Takes effect before its next request.
    pub fn request_cancel(&self, run_id: &str) -> Result<(), JournalError> {
        self.sql_write(|c| {
            c.prepare_cached("UPDATE runs SET cancel_requested = 1 WHERE id = ?1")?
                .execute([run_id])
        })?;
        Ok(())
    }

    /// Whether a cancel was requested.
    pub fn cancel_requested(&self, run_id: &str) -> Result<bool, JournalError> {
        self.sql(|c| {
            c.prepare_cached("SELECT cancel_requested FROM runs WHERE id = ?1")?
                .query_row([run_id], |r| r.get::<_, i64>(0))
        })
        .map(|v| v != 0)
    }

    /// The trials of a run in execution order.
    pub fn trials(&self, run_id: &str) -> Result<Vec<TrialRow>, JournalError> {
        const COLUMNS: &[&str] = &[
            "idx",
            "task",
            "arm",
            "repetition",
            "reserve_micros",
            "input_token_bound",
            "max_output_tokens",
        ];
        self.sql(|c| {
            let mut stmt =
                c.prepare_cached(&select(COLUMNS, "trials", "WHERE run_id = ?1 ORDER BY idx"))?;
            stmt.query_map([run_id], |r| {
                Ok(TrialRow {
                    idx: r.get(at!(COLUMNS, "idx"))?,
                    task: r.get(at!(COLUMNS, "task"))?,
                    arm: r.get(at!(COLUMNS, "arm"))?,
                    repetition: r.get(at!(COLUMNS, "repetition"))?,
                    reserve_micros: to_u64(r.get(at!(COLUMNS, "reserve_micros"))?),
                    input_token_bound: to_u64(r.get(at!(COLUMNS, "input_token_bound"))?),
                    max_output_tokens: to_u64(r.get(at!(COLUMNS, "max_output_tokens"))?),
                })
            })?
            .collect()
        })
    }
}

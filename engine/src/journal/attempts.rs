//! Attempts, each state change in one commit with its ledger rows (planned, dispatched,
//! answered, closed without a result, unknown, not run), and the runner's own time per attempt.

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use skilltrial_core::money::MicroUsd;
use skilltrial_core::outcome::Outcome;
use skilltrial_core::state::short_id;

use super::{
    ATTEMPT_COLUMNS, AttemptRow, AttemptState, CallRecord, Durability, Journal, JournalError,
    LedgerKind, NotRunReason, PayloadKind, StoredPayload, TxError, column, now_ms, parsed,
    parsed_opt, refuse, select, to_i64, to_u64,
};

impl Journal {
    pub(super) fn attempt_from(r: &Row<'_>) -> rusqlite::Result<AttemptRow> {
        let reasons: String = r.get(at!(ATTEMPT_COLUMNS, "reasons"))?;
        let details: String = r.get(at!(ATTEMPT_COLUMNS, "details"))?;
        let u64_opt = |idx: usize| -> rusqlite::Result<Option<u64>> {
            Ok(r.get::<_, Option<i64>>(idx)?.map(to_u64))
        };
        Ok(AttemptRow {
            id: r.get(at!(ATTEMPT_COLUMNS, "id"))?,
            trial_idx: r.get(at!(ATTEMPT_COLUMNS, "trial_idx"))?,
            seq: r.get(at!(ATTEMPT_COLUMNS, "seq"))?,
            retry_of: r.get(at!(ATTEMPT_COLUMNS, "retry_of"))?,
            retry_reason: r.get(at!(ATTEMPT_COLUMNS, "retry_reason"))?,
            state: parsed(r, at!(ATTEMPT_COLUMNS, "state"))?,
            outcome: parsed_opt(r, at!(ATTEMPT_COLUMNS, "outcome"))?,
            reasons: serde_json::from_str(&reasons).unwrap_or_default(),
            details: serde_json::from_str(&details).unwrap_or(serde_json::Value::Null),
            reserved_micros: to_u64(r.get(at!(ATTEMPT_COLUMNS, "reserved_micros"))?),
            reserved_tokens: to_u64(r.get(at!(ATTEMPT_COLUMNS, "reserved_tokens"))?),
            spent_micros: u64_opt(at!(ATTEMPT_COLUMNS, "spent_micros"))?,
            input_tokens: u64_opt(at!(ATTEMPT_COLUMNS, "input_tokens"))?,
            output_tokens: u64_opt(at!(ATTEMPT_COLUMNS, "output_tokens"))?,
            request_sha256: r.get(at!(ATTEMPT_COLUMNS, "request_sha256"))?,
            http_status: r
                .get::<_, Option<i64>>(at!(ATTEMPT_COLUMNS, "http_status"))?
                .and_then(|v| u16::try_from(v).ok()),
            provider_request_id: r.get(at!(ATTEMPT_COLUMNS, "provider_request_id"))?,
            model_reported: r.get(at!(ATTEMPT_COLUMNS, "model_reported"))?,
            system_fingerprint: r.get(at!(ATTEMPT_COLUMNS, "system_fingerprint"))?,
            response_sha256: r.get(at!(ATTEMPT_COLUMNS, "response_sha256"))?,
            answer_sha256: r.get(at!(ATTEMPT_COLUMNS, "answer_sha256"))?,
            latency_ms: u64_opt(at!(ATTEMPT_COLUMNS, "latency_ms"))?,
            error: r.get(at!(ATTEMPT_COLUMNS, "error"))?,
            planned_at_ms: r.get(at!(ATTEMPT_COLUMNS, "planned_at_ms"))?,
            dispatched_at_ms: r.get(at!(ATTEMPT_COLUMNS, "dispatched_at_ms"))?,
            finished_at_ms: r.get(at!(ATTEMPT_COLUMNS, "finished_at_ms"))?,
            turn: r.get(at!(ATTEMPT_COLUMNS, "turn"))?,
            prior_turn: r.get(at!(ATTEMPT_COLUMNS, "prior_turn"))?,
            exchange: r.get(at!(ATTEMPT_COLUMNS, "exchange"))?,
        })
    }

    /// Every attempt of a run, by trial and sequence.
    pub fn attempts(&self, run_id: &str) -> Result<Vec<AttemptRow>, JournalError> {
        self.sql(|c| {
            let mut stmt = c.prepare_cached(&select(
                ATTEMPT_COLUMNS,
                "attempts",
                "WHERE run_id = ?1 ORDER BY trial_idx, seq",
            ))?;
            stmt.query_map([run_id], Self::attempt_from)?.collect()
        })
    }

    /// Every attempt of a run, as [`Journal::attempts`] gives them but with `details` left
    /// `Null`: the checker's details are the one large member, and the engine's loop (admission
    /// and progress, after every trial) never reads them.
    pub fn attempts_without_details(&self, run_id: &str) -> Result<Vec<AttemptRow>, JournalError> {
        self.sql(|c| {
            let columns: Vec<&str> = ATTEMPT_COLUMNS
                .iter()
                .map(|c| if *c == "details" { "'null'" } else { c })
                .collect();
            let mut stmt = c.prepare_cached(&select(
                &columns,
                "attempts",
                "WHERE run_id = ?1 ORDER BY trial_idx, seq",
            ))?;
            stmt.query_map([run_id], Self::attempt_from)?.collect()
        })
    }

    /// One attempt by id, with its run's id.
    pub fn attempt(&self, id: &str) -> Result<Option<(String, AttemptRow)>, JournalError> {
        self.sql(|c| {
            c.prepare_cached(&select(ATTEMPT_COLUMNS, "attempts", "WHERE id = ?1"))?
                .query_row([id], |r| {
                    Ok((
                        r.get(at!(ATTEMPT_COLUMNS, "run_id"))?,
                        Self::attempt_from(r)?,
                    ))
                })
                .optional()
        })
    }

    /// The next attempt of a trial: its id and sequence number. The id is
    /// `<12 hex of run>-<trial>-<seq>-<12 hex random>`: readable, and unique beyond this journal
    /// (the same manifest in two state directories, or a copied journal, never sends the same
    /// `x-skilltrial-attempt`), which provider-side idempotency relies on. The random part comes
    /// from SQLite's `randomblob`, seeded from the OS. Call it in the transaction that inserts
    /// the attempt, so that the sequence number cannot be taken twice.
    pub(super) fn next_attempt_id(
        tx: &Transaction<'_>,
        run_id: &str,
        trial_idx: u32,
    ) -> rusqlite::Result<(String, u32)> {
        let (seq, nonce): (u32, String) = tx
            .prepare_cached(
                "SELECT COALESCE(MAX(seq), 0) + 1, lower(hex(randomblob(6)))
                 FROM attempts WHERE run_id = ?1 AND trial_idx = ?2",
            )?
            .query_row(params![run_id, trial_idx], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((
            format!("{}-{trial_idx:03}-{seq}-{nonce}", short_id(run_id)),
            seq,
        ))
    }

    /// Plans an attempt of a trial and reserves its upper cost, in one transaction.
    pub fn plan_attempt(
        &mut self,
        run_id: &str,
        trial_idx: u32,
        reserve: MicroUsd,
        reserve_tokens: u64,
        retry: Option<(&str, &str)>,
    ) -> Result<String, JournalError> {
        self.write(|tx| {
            Self::plan_attempt_tx(tx, run_id, trial_idx, reserve, reserve_tokens, retry)
        })
    }

    /// [`Journal::plan_attempt`] and the run's clock ([`Journal::set_executed_ms`]) in one
    /// commit, durable with the next one: the engine's first write of every trial it sends
    /// (nothing is sent before the `dispatched` commit, which the engine syncs).
    pub fn plan_attempt_at(
        &mut self,
        run_id: &str,
        trial_idx: u32,
        reserve: MicroUsd,
        reserve_tokens: u64,
        retry: Option<(&str, &str)>,
        executed_ms: u64,
    ) -> Result<String, JournalError> {
        self.write_with(Durability::WithNextCommit, |tx| {
            Self::set_executed_ms_on(tx, run_id, executed_ms)?;
            Self::plan_attempt_tx(tx, run_id, trial_idx, reserve, reserve_tokens, retry)
        })
    }

    pub(super) fn plan_attempt_tx(
        tx: &Transaction<'_>,
        run_id: &str,
        trial_idx: u32,
        reserve: MicroUsd,
        reserve_tokens: u64,
        retry: Option<(&str, &str)>,
    ) -> Result<String, TxError> {
        let (id, seq) = Self::next_attempt_id(tx, run_id, trial_idx)?;
        tx.prepare_cached(
            "INSERT INTO attempts (id, run_id, trial_idx, seq, retry_of, retry_reason, state, reserved_micros, reserved_tokens, planned_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
            id,
            run_id,
            trial_idx,
            seq,
            retry.map(|r| r.0),
            retry.map(|r| r.1),
            AttemptState::Planned.as_str(),
            to_i64(reserve.0),
            to_i64(reserve_tokens),
            now_ms()
        ])?;
        if let Some((of, _)) = retry {
            Self::same_turn_as(tx, &id, of)?;
        }
        Self::ledger(
            tx,
            run_id,
            &id,
            LedgerKind::Reserve,
            reserve.0,
            reserve_tokens,
            "upper cost reserved before dispatch",
        )?;
        Ok(id)
    }

    /// A retry is the same turn of its trial as the attempt it retries, after the same earlier
    /// turns: it sends that turn again, never a later one.
    pub(super) fn same_turn_as(
        tx: &Transaction<'_>,
        attempt: &str,
        of: &str,
    ) -> rusqlite::Result<usize> {
        tx.prepare_cached(
            "UPDATE attempts SET turn = (SELECT turn FROM attempts WHERE id = ?2),
                prior_turn = (SELECT prior_turn FROM attempts WHERE id = ?2)
             WHERE id = ?1",
        )?
        .execute(params![attempt, of])
    }

    /// An answered turn that asked for tools, and the trial's next turn, in one commit: the
    /// answer's payloads and result (its reserve released, its usage spent, as
    /// [`Journal::record_answer`]), its `exchange` (text and calls, JSON), and the next turn
    /// planned with `next_reserve` and `next_tokens` reserved. Nothing between the two commits
    /// could let another trial take the room the rest of this trial was admitted with; a crash
    /// after it leaves a planned turn whose reserve recovery releases, to be admitted again.
    /// Returns the next turn's attempt id.
    #[allow(clippy::too_many_arguments)]
    pub fn record_turn(
        &mut self,
        attempt: &str,
        call: &CallRecord,
        payloads: &[StoredPayload<'_>],
        exchange: &str,
        next_reserve: MicroUsd,
        next_tokens: u64,
    ) -> Result<String, JournalError> {
        self.write(|tx| {
            for p in payloads {
                Self::record_payload_on(tx, p.sha256, p.kind, p.bytes, p.content)?;
            }
            Self::record_result_tx(tx, attempt, call)?;
            let (run_id, trial_idx, turn): (String, u32, u32) = tx
                .prepare_cached("SELECT run_id, trial_idx, turn FROM attempts WHERE id = ?1")?
                .query_row([attempt], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            tx.prepare_cached("UPDATE attempts SET exchange = ?2 WHERE id = ?1")?
                .execute(params![attempt, exchange])?;
            let next =
                Self::plan_attempt_tx(tx, &run_id, trial_idx, next_reserve, next_tokens, None)?;
            tx.prepare_cached("UPDATE attempts SET turn = ?2, prior_turn = ?3 WHERE id = ?1")?
                .execute(params![next, turn.saturating_add(1), attempt])?;
            Ok(next)
        })
    }

    /// Records an answered turn's `exchange` (its text and calls) on an attempt that ends its
    /// trial: the last allowed turn, which still asked for tools.
    pub fn record_exchange(&mut self, attempt: &str, exchange: &str) -> Result<(), JournalError> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE attempts SET exchange = ?2 WHERE id = ?1")?
                .execute(params![attempt, exchange])?;
            Ok(())
        })
    }

    /// Marks an attempt dispatched. MUST return before the request is sent: once committed, a
    /// crash leaves an `unknown` attempt behind, never a forgotten request. One statement, so
    /// it commits (durably) by itself.
    pub fn mark_dispatched(&self, attempt: &str, request_sha256: &str) -> Result<(), JournalError> {
        let n = self.sql_write(|c| Self::mark_dispatched_on(c, attempt, request_sha256))?;
        if n == 1 {
            Ok(())
        } else {
            Err(JournalError::State(format!(
                "attempt {attempt} is not planned"
            )))
        }
    }

    /// The request body's payload row ([`Journal::record_payload`]) and the attempt marked
    /// dispatched ([`Journal::mark_dispatched`]) in one commit. MUST return before the request
    /// is sent; the body itself must already be durable in the payload store.
    pub fn dispatch_attempt(
        &mut self,
        attempt: &str,
        request_sha256: &str,
        request: &[u8],
    ) -> Result<(), JournalError> {
        self.write(|tx| {
            Self::record_payload_on(
                tx,
                request_sha256,
                PayloadKind::Request,
                request.len() as u64,
                Some(request),
            )?;
            if Self::mark_dispatched_on(tx, attempt, request_sha256)? != 1 {
                return Err(refuse(format!("attempt {attempt} is not planned")));
            }
            Ok(())
        })
    }

    pub(super) fn mark_dispatched_on(
        c: &Connection,
        attempt: &str,
        request_sha256: &str,
    ) -> rusqlite::Result<usize> {
        c.prepare_cached(
            "UPDATE attempts SET state = ?4, request_sha256 = ?2, dispatched_at_ms = ?3 WHERE id = ?1 AND state = ?5",
        )?
        .execute(params![
            attempt,
            request_sha256,
            now_ms(),
            AttemptState::Dispatched.as_str(),
            AttemptState::Planned.as_str()
        ])
    }

    pub(super) fn run_of(
        tx: &Transaction<'_>,
        attempt: &str,
    ) -> rusqlite::Result<(String, u64, u64)> {
        tx.prepare_cached(
            "SELECT run_id, reserved_micros, reserved_tokens FROM attempts WHERE id = ?1",
        )?
        .query_row([attempt], |r| {
            Ok((r.get(0)?, to_u64(r.get(1)?), to_u64(r.get(2)?)))
        })
    }

    /// A model result: usage and fingerprint recorded, reserve released, usage spent.
    pub fn record_result(&mut self, attempt: &str, call: &CallRecord) -> Result<(), JournalError> {
        self.write(|tx| Self::record_result_tx(tx, attempt, call))
    }

    /// The answer's and the raw response's payload rows ([`Journal::record_payload`]) and the
    /// result ([`Journal::record_result`]) in one commit. The payloads themselves must already
    /// be durable in the payload store: once this returns the answer may go to the checker.
    pub fn record_answer(
        &mut self,
        attempt: &str,
        call: &CallRecord,
        payloads: &[StoredPayload<'_>],
    ) -> Result<(), JournalError> {
        self.write(|tx| {
            for p in payloads {
                Self::record_payload_on(tx, p.sha256, p.kind, p.bytes, p.content)?;
            }
            Self::record_result_tx(tx, attempt, call)
        })
    }

    pub(super) fn record_result_tx(
        tx: &Transaction<'_>,
        attempt: &str,
        call: &CallRecord,
    ) -> Result<(), TxError> {
        let (run_id, reserved, reserved_tokens) = Self::run_of(tx, attempt)?;
        let n = tx
            .prepare_cached(
                "UPDATE attempts SET state = ?13, spent_micros = ?2, input_tokens = ?3, output_tokens = ?4, http_status = ?5,
                    provider_request_id = ?6, model_reported = ?7, system_fingerprint = ?8, response_sha256 = ?9, answer_sha256 = ?10,
                    latency_ms = ?11, finished_at_ms = ?12
                 WHERE id = ?1 AND state = ?14",
            )?
            .execute(params![
                attempt,
                to_i64(call.spent.0),
                call.input_tokens.map(to_i64),
                call.output_tokens.map(to_i64),
                call.http_status,
                call.provider_request_id,
                call.model_reported,
                call.system_fingerprint,
                call.response_sha256,
                call.answer_sha256,
                to_i64(call.latency_ms),
                now_ms(),
                AttemptState::Result.as_str(),
                AttemptState::Dispatched.as_str()
            ])?;
        if n != 1 {
            return Err(refuse(format!("attempt {attempt} is not dispatched")));
        }
        // Usage the provider did not report counts as the whole token reservation, never
        // zero.
        let used = match (call.input_tokens, call.output_tokens) {
            (Some(i), Some(o)) => i.saturating_add(o),
            _ => reserved_tokens,
        };
        Self::ledger(
            tx,
            &run_id,
            attempt,
            LedgerKind::Release,
            reserved,
            reserved_tokens,
            "result received",
        )?;
        Self::ledger(
            tx,
            &run_id,
            attempt,
            LedgerKind::Spend,
            call.spent.0,
            used,
            "usage at cost",
        )?;
        Ok(())
    }

    /// Closes an attempt with an outcome that has no model result (infrastructure error before the
    /// model saw the request): reserve released, nothing spent.
    pub fn close_without_result(
        &mut self,
        attempt: &str,
        outcome: Outcome,
        reasons: &[&str],
        call: &CallRecord,
    ) -> Result<(), JournalError> {
        let reasons_json = serde_json::to_string(reasons).unwrap_or_else(|_| "[]".to_owned());
        self.write(|tx| {
            let (run_id, reserved, reserved_tokens) = Self::run_of(tx, attempt)?;
            tx.prepare_cached(
                "UPDATE attempts SET state = ?9, outcome = ?2, reasons = ?3, spent_micros = 0, http_status = ?4, provider_request_id = ?5,
                    error = ?6, latency_ms = ?7, finished_at_ms = ?8 WHERE id = ?1",
            )?
            .execute(params![
                attempt,
                outcome.as_str(),
                reasons_json,
                call.http_status,
                call.provider_request_id,
                call.error,
                to_i64(call.latency_ms),
                now_ms(),
                AttemptState::Closed.as_str()
            ])?;
            Self::ledger(
                tx,
                &run_id,
                attempt,
                LedgerKind::Release,
                reserved,
                reserved_tokens,
                outcome.as_str(),
            )?;
            Ok(())
        })
    }

    /// Dispatched, then no answer: `unknown`. The reserve stays held until the user decides.
    pub fn mark_unknown(
        &self,
        attempt: &str,
        error: &str,
        latency_ms: Option<u64>,
    ) -> Result<(), JournalError> {
        self.sql_write(|c| {
            c.prepare_cached(
                "UPDATE attempts SET state = ?5, outcome = ?6, reasons = '[\"no_answer\"]', error = ?2, latency_ms = ?3, finished_at_ms = ?4
                 WHERE id = ?1 AND state IN (?7, ?8)",
            )?
            .execute(params![
                attempt,
                error,
                latency_ms.map(to_i64),
                now_ms(),
                AttemptState::Unknown.as_str(),
                Outcome::Unknown.as_str(),
                AttemptState::Dispatched.as_str(),
                AttemptState::Planned.as_str()
            ])
        })?;
        Ok(())
    }

    /// A trial that is never dispatched: an attempt row with `not_run` and its reason.
    pub fn record_not_run(
        &mut self,
        run_id: &str,
        trial_idx: u32,
        reason: NotRunReason,
        message: &str,
    ) -> Result<String, JournalError> {
        let reasons = serde_json::to_string(&[reason.as_str()]).unwrap_or_default();
        self.write(|tx| {
            let (id, seq) = Self::next_attempt_id(tx, run_id, trial_idx)?;
            tx.prepare_cached(
                "INSERT INTO attempts (id, run_id, trial_idx, seq, state, outcome, reasons, error, spent_micros, planned_at_ms, finished_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?8, ?9, ?5, ?6, 0, ?7, ?7)",
            )?
            .execute(params![
                id,
                run_id,
                trial_idx,
                seq,
                reasons,
                message,
                now_ms(),
                AttemptState::Closed.as_str(),
                Outcome::NotRun.as_str()
            ])?;
            Ok(id)
        })
    }

    /// Closes a planned attempt (a user's retry the run can no longer send) as `not_run` with
    /// its reason, releasing any reserve it holds, in one transaction: the attempt itself is the
    /// trial's `not_run` observation, so no attempt is left `planned` once the run stops.
    pub fn close_planned_not_run(
        &mut self,
        attempt: &str,
        reason: NotRunReason,
        message: &str,
    ) -> Result<(), JournalError> {
        let reasons = serde_json::to_string(&[reason.as_str()]).unwrap_or_default();
        self.write(|tx| {
            let (run_id, reserved, reserved_tokens) = Self::run_of(tx, attempt)?;
            let n = tx
                .prepare_cached(
                    "UPDATE attempts SET state = ?5, outcome = ?6, reasons = ?2, error = ?3, spent_micros = 0, finished_at_ms = ?4
                     WHERE id = ?1 AND state = ?7",
                )?
                .execute(params![
                    attempt,
                    reasons,
                    message,
                    now_ms(),
                    AttemptState::Closed.as_str(),
                    Outcome::NotRun.as_str(),
                    AttemptState::Planned.as_str()
                ])?;
            if n != 1 {
                return Err(refuse(format!("attempt {attempt} is not planned")));
            }
            if reserved > 0 || reserved_tokens > 0 {
                Self::ledger(
                    tx,
                    &run_id,
                    attempt,
                    LedgerKind::Release,
                    reserved,
                    reserved_tokens,
                    "planned, not sent",
                )?;
            }
            Ok(())
        })
    }

    /// Records the runner's own time spent on an attempt (the engine's measurement, model wait
    /// excluded). Idempotent: a repeated write keeps the last measurement.
    pub fn record_runner_time(&self, attempt: &str, runner_us: u64) -> Result<(), JournalError> {
        self.sql_write(|c| Self::record_runner_time_on(c, attempt, runner_us))?;
        Ok(())
    }

    pub(super) fn record_runner_time_on(
        c: &Connection,
        attempt: &str,
        runner_us: u64,
    ) -> rusqlite::Result<()> {
        c.prepare_cached("UPDATE attempts SET runner_us = ?2 WHERE id = ?1")?
            .execute(params![attempt, to_i64(runner_us)])?;
        Ok(())
    }

    /// The runner's own time of every attempt of a run that has one, by attempt id.
    pub fn runner_times(
        &self,
        run_id: &str,
    ) -> Result<std::collections::BTreeMap<String, u64>, JournalError> {
        self.sql(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, runner_us FROM attempts WHERE run_id = ?1 AND runner_us IS NOT NULL",
            )?;
            stmt.query_map([run_id], |r| Ok((r.get(0)?, to_u64(r.get(1)?))))?
                .collect()
        })
    }
}

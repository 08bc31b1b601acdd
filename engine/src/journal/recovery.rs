//! Recovery after a crash (`recover`) and the user's decision on an attempt (`resolve`).

use rusqlite::{OptionalExtension, Transaction, params};

use skilltrial_core::outcome::Outcome;
use skilltrial_core::state::short_id;

use super::{
    AttemptState, Journal, JournalError, LedgerKind, Resolution, RunStatus, now_ms, parsed,
    parsed_opt, refuse, to_i64, to_u64,
};

impl Journal {
    /// After a crash: every attempt of the run still `dispatched` becomes `unknown`, keeping its
    /// reserve; nothing is re-sent. A `planned` attempt never left the machine: its reserve is
    /// released and it stays planned, to be reserved again and sent by the run. Returns the
    /// attempts that became unknown.
    pub fn recover(&mut self, run_id: &str) -> Result<Vec<String>, JournalError> {
        self.write(|tx| {
            let rows: Vec<(String, AttemptState)> = {
                let mut stmt = tx.prepare_cached(
                    "SELECT id, state FROM attempts WHERE run_id = ?1 AND state IN (?2, ?3) ORDER BY trial_idx, seq",
                )?;
                stmt.query_map(
                    params![
                        run_id,
                        AttemptState::Dispatched.as_str(),
                        AttemptState::Planned.as_str()
                    ],
                    |r| Ok((r.get(0)?, parsed(r, 1)?)),
                )?
                .collect::<Result<_, _>>()?
            };
            let mut unknown = Vec::new();
            for (id, state) in rows {
                if state == AttemptState::Planned {
                    let (run, reserved, tokens) = Self::run_of(tx, &id)?;
                    if reserved > 0 || tokens > 0 {
                        Self::ledger(
                            tx,
                            &run,
                            &id,
                            LedgerKind::Release,
                            reserved,
                            tokens,
                            "planned, not dispatched before the stop",
                        )?;
                        tx.prepare_cached(
                            "UPDATE attempts SET reserved_micros = 0, reserved_tokens = 0 WHERE id = ?1",
                        )?
                        .execute([&id])?;
                    }
                } else {
                    tx.prepare_cached(
                        "UPDATE attempts SET state = ?3, outcome = ?4, reasons = '[\"restart\"]', error = 'the runner stopped while this request was in flight', finished_at_ms = ?2 WHERE id = ?1",
                    )?
                    .execute(params![
                        id,
                        now_ms(),
                        AttemptState::Unknown.as_str(),
                        Outcome::Unknown.as_str()
                    ])?;
                    unknown.push(id);
                }
            }
            Ok(unknown)
        })
    }

    /// An `unknown` attempt of a progressive trial keeps only its own turn's bound reserved
    /// (`micros`, `tokens`): the rest of its reserve was held for the turns after it, which are
    /// never sent unless the user retries it (a retry reserves again from its turn). Releases the
    /// excess in the ledger, in one commit; does nothing for any other state or when nothing
    /// exceeds. Returns whether it released anything.
    pub fn keep_turn_reserve(
        &mut self,
        attempt: &str,
        micros: u64,
        tokens: u64,
    ) -> Result<bool, JournalError> {
        self.write(|tx| {
            let (run_id, state, reserved, reserved_tokens): (String, AttemptState, u64, u64) = tx
                .prepare_cached(
                    "SELECT run_id, state, reserved_micros, reserved_tokens FROM attempts WHERE id = ?1",
                )?
                .query_row([attempt], |r| {
                    Ok((r.get(0)?, parsed(r, 1)?, to_u64(r.get(2)?), to_u64(r.get(3)?)))
                })?;
            let (keep, keep_tokens) = (reserved.min(micros), reserved_tokens.min(tokens));
            if state != AttemptState::Unknown || (keep == reserved && keep_tokens == reserved_tokens)
            {
                return Ok(false);
            }
            Self::ledger(
                tx,
                &run_id,
                attempt,
                LedgerKind::Release,
                reserved - keep,
                reserved_tokens - keep_tokens,
                "held for the turns after an unknown turn, which are sent only after a retry",
            )?;
            tx.prepare_cached(
                "UPDATE attempts SET reserved_micros = ?2, reserved_tokens = ?3 WHERE id = ?1",
            )?
            .execute(params![attempt, to_i64(keep), to_i64(keep_tokens)])?;
            Ok(true)
        })
    }

    /// Inserts a user's retry of `attempt` (no reserve until the run dispatches it); returns the
    /// new attempt's id.
    pub(super) fn plan_retry(
        tx: &Transaction<'_>,
        run_id: &str,
        trial_idx: u32,
        attempt: &str,
        reason: &str,
    ) -> rusqlite::Result<String> {
        let (id, seq) = Self::next_attempt_id(tx, run_id, trial_idx)?;
        tx.prepare_cached(
            "INSERT INTO attempts (id, run_id, trial_idx, seq, retry_of, retry_reason, state, planned_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            id,
            run_id,
            trial_idx,
            seq,
            attempt,
            reason,
            AttemptState::Planned.as_str(),
            now_ms()
        ])?;
        Self::same_turn_as(tx, &id, attempt)?;
        Ok(id)
    }

    /// The user's decision on an `unknown` attempt. `Release` closes it as `interrupted` with its
    /// reserve counted as spent; `Retry` does the same and plans a new attempt (new id, no
    /// reserve until the run dispatches it) carrying the reason. The old attempt stays in the
    /// ledger as its own observation. All of it commits in one transaction.
    pub fn resolve(
        &mut self,
        attempt: &str,
        resolution: &Resolution,
    ) -> Result<Option<String>, JournalError> {
        self.write(|tx| {
            let row: Option<(String, u32, AttemptState, u64, u64)> = tx
                .prepare_cached(
                    "SELECT run_id, trial_idx, state, reserved_micros, reserved_tokens FROM attempts WHERE id = ?1",
                )?
                .query_row([attempt], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        parsed(r, 2)?,
                        to_u64(r.get(3)?),
                        to_u64(r.get(4)?),
                    ))
                })
                .optional()?;
            let Some((run_id, trial_idx, state, reserved, reserved_tokens)) = row else {
                return Err(refuse(format!("no attempt `{attempt}`")));
            };
            if state == AttemptState::Closed
                && let Resolution::Retry { reason } = resolution
            {
                // An infrastructure error (nothing reached the model, its reserve already
                // released) may be retried by hand, once it is its trial's latest attempt.
                let (outcome, later): (Option<Outcome>, u32) = tx
                    .prepare_cached(
                        "SELECT outcome, (SELECT COUNT(*) FROM attempts b WHERE b.run_id = a.run_id AND b.trial_idx = a.trial_idx AND b.seq > a.seq) FROM attempts a WHERE id = ?1",
                    )?
                    .query_row([attempt], |r| Ok((parsed_opt(r, 0)?, r.get(1)?)))?;
                if outcome == Some(Outcome::InfrastructureError) {
                    if later > 0 {
                        return Err(refuse(format!(
                            "attempt {attempt} is not its trial's latest attempt: retry the latest one"
                        )));
                    }
                    let id = Self::plan_retry(tx, &run_id, trial_idx, attempt, reason)?;
                    return Ok(Some(id));
                }
            }
            if state != AttemptState::Unknown {
                return Err(refuse(format!(
                    "attempt {attempt} is {state}, not unknown: only unknown attempts are resolved (and infrastructure errors retried)"
                )));
            }
            if matches!(resolution, Resolution::Retry { .. }) {
                // A cancelled run never sends again: a retry planned now could only stay planned.
                let (status, cancel): (RunStatus, i64) = tx
                    .prepare_cached("SELECT status, cancel_requested FROM runs WHERE id = ?1")?
                    .query_row([&run_id], |r| Ok((parsed(r, 0)?, r.get(1)?)))?;
                if status == RunStatus::Cancelled || cancel != 0 {
                    return Err(refuse(format!(
                        "attempt {attempt} belongs to run {}, which was cancelled: a retry would never be sent; use --release, or plan a new run",
                        short_id(&run_id)
                    )));
                }
            }
            let note = match resolution {
                Resolution::Release => "released by the user as spent".to_owned(),
                Resolution::Retry { reason } => format!("retried by the user: {reason}"),
            };
            tx.prepare_cached(
                "UPDATE attempts SET state = ?3, outcome = ?4, spent_micros = reserved_micros, error = COALESCE(error, '') || ' | ' || ?2 WHERE id = ?1",
            )?
            .execute(params![
                attempt,
                note,
                AttemptState::Closed.as_str(),
                Outcome::Interrupted.as_str()
            ])?;
            for kind in [LedgerKind::Release, LedgerKind::Spend] {
                Self::ledger(
                    tx,
                    &run_id,
                    attempt,
                    kind,
                    reserved,
                    reserved_tokens,
                    &note,
                )?;
            }
            Ok(match resolution {
                Resolution::Release => None,
                Resolution::Retry { reason } => {
                    Some(Self::plan_retry(tx, &run_id, trial_idx, attempt, reason)?)
                }
            })
        })
    }
}

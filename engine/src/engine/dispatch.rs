//! Dispatch: the journal's steps for one trial, from its reserve to its verdict, and the rules
//! of automatic retries. The run loop ([`super::events`]) calls them and decides when each may
//! happen; this module decides what each writes.
//!
//! The order is the durability contract of docs/runs.md ("Journal and recovery"). While a run
//! executes, the journal defers its fsyncs ([`Journal::defer_fsyncs`]): each commit below is
//! appended to the write-ahead log, and the loop's next [`Journal::sync`] makes it durable
//! together with every commit before it. The loop syncs before it sends any request it prepared
//! and before it checks any answer it recorded, so N requests in flight cost one fsync per batch
//! of dispatches and one per batch of answers, never one per commit.
//!
//! 1. **Reserve** — [`prepare`]: the attempt planned and its upper cost reserved, with the run's
//!    clock ([`Journal::plan_attempt_at`]). A killed process keeps it (the OS has the pages): the
//!    `planned` attempt's reserve is released by recovery and the trial is sent later (the
//!    `after_plan` window of the crash tests). A power loss may drop it, with everything after
//!    it: nothing had been sent.
//! 2. **Dispatched** — still [`prepare`]: the request body's payload row and the attempt
//!    `dispatched` ([`Journal::dispatch_attempt`]). The loop syncs before the request leaves
//!    (the `after_dispatch` window); after that a crash leaves an `unknown` attempt, never
//!    re-sent.
//! 3. **Answer** — [`land`]: the answer's bytes, its payload rows, the result, its usage and the
//!    ledger's release and spend ([`Journal::record_answer`]). The loop syncs before the checker
//!    sees the answer (the `after_result` window).
//! 4. **Verdict** — [`score`]: recomputable from the durable answer, so it is durable with the
//!    next sync or the run's end. A crash in between leaves the answer unscored; the next `run`
//!    scores it from disk ([`super::scoring::rescore`]) and `recheck` re-scores every answer.
//!
//! Every payload a trial produces (the request body, the answer, the raw response) is kept in the
//! journal, in the commit of the row that names it: no file is created per trial.

use std::time::{Duration, Instant};

use skilltrial_core::delivery;
use skilltrial_core::manifest::{self, PlannedTrial};
use skilltrial_core::money::MicroUsd;
use skilltrial_core::outcome::Outcome;
use skilltrial_core::profile::Usage;
use skilltrial_core::prompt;

use super::scoring::Checker;
use super::{EngineError, Inputs, Refusal, kill_point};
use crate::journal::{
    AttemptRow, AttemptState, CallRecord, Journal, PayloadKind, StoredPayload, now_ms,
};
use crate::provider::{CallError, ModelRequest, ModelResponse, Provider, retry};
use skilltrial_core::digest::Sha256Digest;

/// A request journaled as `dispatched`, to be sent once the journal has synced.
#[derive(Debug)]
pub(super) struct Outgoing {
    pub attempt: String,
    pub trial_idx: u32,
    /// The turn of its trial (1 inline).
    pub turn: u32,
    /// What the attempt reserved: its trial's upper cost from this turn on.
    pub reserve: MicroUsd,
    pub request: ModelRequest,
}

/// A request in flight: what the loop needs when its answer lands.
#[derive(Debug, Clone)]
pub(super) struct Flight {
    pub trial_idx: u32,
    /// The turn of its trial (1 inline).
    pub turn: u32,
    /// What the attempt reserved.
    pub reserve: MicroUsd,
    /// The runner's own time on this attempt so far (its reserve, request and dispatch).
    pub runner: Duration,
}

/// What the provider did with one request, as a sending thread reports it.
#[derive(Debug)]
pub(super) struct Landing {
    pub attempt: String,
    pub call: Result<ModelResponse, CallError>,
    /// The time from the send to the answer: the model's, not the runner's.
    pub model_wait: Duration,
}

/// An answer recorded and waiting for the sync that must precede its check.
#[derive(Debug)]
pub(super) struct ToScore {
    pub attempt: String,
    pub trial_idx: u32,
    pub text: String,
    pub spent: MicroUsd,
    pub reserve: MicroUsd,
    pub runner: Duration,
}

/// How a landing ended, once journaled.
#[derive(Debug)]
pub(super) enum Landed {
    /// Answered and recorded: to be scored after the sync.
    Answer(ToScore),
    /// Closed as an infrastructure error, or `unknown`: the trial needs nothing more from this
    /// run.
    Closed,
    /// Rejected as rate limited or overloaded (nothing reached the model): the run backs off and
    /// may retry it.
    RateLimited {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// Refused for the key, not the request ([`retry::is_key_refusal`]): closed as an
    /// infrastructure error like any rejection; a run told to stops on it.
    KeyRefused { status: u16, message: String },
    /// A progressive turn answered with tool calls: recorded, and the trial's next turn planned
    /// with the rest of its reserve, to be sent without being admitted again.
    Continue,
}

/// Which attempt an admitted trial sends.
#[derive(Debug)]
pub(super) enum Which {
    /// Its planned attempt (a user's retry, or one planned just before a stop), to be reserved.
    Planned(String),
    /// A new attempt; an automatic retry carries the rejected attempt and the reason.
    New(Option<(String, String)>),
    /// The next turn of a progressive trial, planned with its reserve when the turn before it
    /// was answered.
    Continue(String),
}

/// Step 1 and 2 for one admitted trial: reserves its upper cost (on `which` attempt), builds its
/// request and journals it `dispatched`. Nothing is sent here.
pub(super) fn prepare(
    journal: &mut Journal,
    provider: &dyn Provider,
    inputs: &Inputs,
    run_id: &str,
    trial: &PlannedTrial,
    which: Which,
    executed_ms: u64,
) -> Result<Outgoing, EngineError> {
    let price = inputs.manifest.budget.price.as_ref();
    // An attempt reserves its trial's upper cost from its own turn on: the whole trial for a
    // first turn (every inline attempt), the rest of it for a retry of a later turn.
    let from = |turn: u32| -> Result<(MicroUsd, u64), EngineError> {
        let reserve = trial
            .reserve_from(price, turn)
            .map_err(|e| Refusal::Plan(e.to_string()))?;
        Ok((reserve, trial.tokens_from(turn)))
    };
    let (attempt, reserve) = match which {
        Which::Planned(id) => {
            let (reserve, tokens) = from(turn_of(journal, &id)?)?;
            journal.reserve_planned_at(&id, reserve, tokens, run_id, executed_ms)?;
            (id, reserve)
        }
        Which::New(auto_retry) => {
            let turn = match &auto_retry {
                Some((of, _)) => turn_of(journal, of)?,
                None => 1,
            };
            let (reserve, tokens) = from(turn)?;
            let retry = auto_retry
                .as_ref()
                .map(|(of, why)| (of.as_str(), why.as_str()));
            let id = journal.plan_attempt_at(
                run_id,
                trial.index,
                reserve,
                tokens,
                retry,
                executed_ms,
            )?;
            (id, reserve)
        }
        Which::Continue(id) => {
            let reserve = journal
                .attempt(&id)?
                .map_or(MicroUsd::ZERO, |(_, row)| MicroUsd(row.reserved_micros));
            (id, reserve)
        }
    };
    kill_point("after_plan");
    let manifest = &inputs.manifest;
    let (request, turn) = if manifest.delivery.is_some() {
        let Some((_, row)) = journal.attempt(&attempt)? else {
            return Err(EngineError::Environment(format!(
                "attempt {attempt} was planned but is not in the journal"
            )));
        };
        let chain = super::turns::chain_before(journal, &row)?;
        (
            super::turns::request(inputs, trial, &chain, &attempt)?,
            row.turn,
        )
    } else {
        let task = inputs
            .pack
            .task(&trial.task)
            .map_err(|e| Refusal::TaskMissing(e.to_string()))?;
        let prompt = prompt::build(
            &task.public(),
            manifest::bundle_for(trial.arm, inputs.a.as_ref(), inputs.b.as_ref()),
        );
        let request = ModelRequest {
            model: manifest.model.model.clone(),
            system: prompt.system,
            user: prompt.user,
            max_output_tokens: trial.max_output_tokens,
            temperature: manifest.sampling.temperature.clone(),
            attempt: Some(attempt.clone()),
            tools: Vec::new(),
            history: Vec::new(),
            cache: manifest.caches(),
            stable_prefix: prompt.skill_len,
        };
        (request, 1)
    };
    // The request body is kept with the `dispatched` row, in the same commit.
    let body = provider.body(&request);
    journal.dispatch_attempt(&attempt, &Sha256Digest::of(&body).hex(), &body)?;
    Ok(Outgoing {
        attempt,
        trial_idx: trial.index,
        turn,
        reserve,
        request,
    })
}

/// The turn an attempt is of its trial.
fn turn_of(journal: &Journal, attempt: &str) -> Result<u32, EngineError> {
    Ok(journal.attempt(attempt)?.map_or(1, |(_, row)| row.turn))
}

/// An unknown `attempt` of `trial`'s turn `turn` keeps only that turn's own bound reserved: what
/// it may have cost. The reserve for the turns after it is released (they are sent only after a
/// retry, which reserves again), so that `resolve --release` books as spent what the turn could
/// have spent, never turns that were not sent. Nothing changes for an inline trial (its one turn
/// is its whole reserve).
pub(super) fn keep_own_turn_reserve(
    journal: &mut Journal,
    inputs: &Inputs,
    trial: &PlannedTrial,
    attempt: &str,
    turn: u32,
) -> Result<(), EngineError> {
    let price = inputs.manifest.budget.price.as_ref();
    let own = |from: u32| -> Result<u64, EngineError> {
        Ok(trial
            .reserve_from(price, from)
            .map_err(|e| Refusal::Plan(e.to_string()))?
            .0)
    };
    let micros = own(turn)?.saturating_sub(own(turn.saturating_add(1))?);
    let tokens = trial
        .tokens_from(turn)
        .saturating_sub(trial.tokens_from(turn.saturating_add(1)));
    journal.keep_turn_reserve(attempt, micros, tokens)?;
    Ok(())
}

/// Step 3: journals what came back for `trial`'s attempt. An answer is recorded (bytes, usage,
/// money) and handed back to be scored after the sync; every other ending closes the attempt.
pub(super) fn land(
    journal: &mut Journal,
    inputs: &Inputs,
    trial: &PlannedTrial,
    flight: &Flight,
    landing: Landing,
) -> Result<Landed, EngineError> {
    // The runner's time on the answer counts from here: the time it waited for the loop to
    // finish other trials' work is theirs.
    let at = Instant::now();
    let Landing {
        attempt,
        call,
        model_wait,
    } = landing;
    let latency_ms = u64::try_from(model_wait.as_millis()).unwrap_or(u64::MAX);
    let landed = match call {
        Ok(response) => {
            let next = flight.turn.saturating_add(1);
            let price = inputs.manifest.budget.price.as_ref();
            let rest = trial
                .reserve_from(price, next)
                .map_err(|e| Refusal::Plan(e.to_string()))?;
            // What this turn may spend: its own bound, the part of the attempt's reserve the
            // trial's later turns do not keep (the whole reserve inline). Usage the provider did
            // not report is charged at it, never at zero.
            let allowance = flight.reserve.0.saturating_sub(rest.0);
            let spent = spent(&inputs.manifest, MicroUsd(allowance), &response);
            let mut unserved = None;
            if !response.tool_calls.is_empty() && inputs.manifest.delivery.is_some() {
                let asked = super::turns::Asked {
                    text: response.text.clone(),
                    calls: response.tool_calls.clone(),
                };
                if next <= trial.max_turns()
                    && response.tool_calls.len() <= delivery::MAX_CALLS_PER_TURN
                    && spent.0 <= allowance
                {
                    let (call, payloads) = answer_record(&response, spent);
                    journal.record_turn(
                        &attempt,
                        &call,
                        &payloads.stored(),
                        &asked.to_json(),
                        rest,
                        trial.tokens_from(next),
                    )?;
                    journal.record_runner_time(&attempt, micros(flight.runner + at.elapsed()))?;
                    return Ok(Landed::Continue);
                }
                // The last allowed turn still asked for tools (or asked for more calls than a
                // turn may hold, or spent more than its own bound): the trial ends here, its
                // text is its answer, and its calls are kept for the evidence.
                unserved = Some(asked.to_json());
            }
            record_answer(journal, &attempt, &response, spent)?;
            if let Some(exchange) = unserved {
                journal.record_exchange(&attempt, &exchange)?;
            }
            return Ok(Landed::Answer(ToScore {
                attempt,
                trial_idx: trial.index,
                text: response.text,
                spent,
                reserve: MicroUsd(allowance),
                runner: flight.runner + at.elapsed(),
            }));
        }
        Err(CallError::NotDelivered { message }) => {
            let call = CallRecord {
                error: Some(message),
                latency_ms,
                ..CallRecord::default()
            };
            close_as_infrastructure(journal, &attempt, "not_delivered", &call)?;
            Landed::Closed
        }
        Err(CallError::Rejected {
            status,
            request_id,
            message,
            retry_after,
        }) => {
            let retryable = retry::is_retryable(status, &message);
            let key_refused = !retryable && retry::is_key_refusal(status, &message);
            let call = CallRecord {
                http_status: Some(status),
                provider_request_id: request_id,
                error: Some(message.clone()),
                latency_ms,
                ..CallRecord::default()
            };
            close_as_infrastructure(journal, &attempt, &format!("http_{status}"), &call)?;
            if key_refused {
                Landed::KeyRefused { status, message }
            } else if retryable {
                Landed::RateLimited {
                    status,
                    retry_after,
                }
            } else {
                Landed::Closed
            }
        }
        Err(CallError::Lost { message, .. }) => {
            journal.mark_unknown(&attempt, &message, Some(latency_ms))?;
            keep_own_turn_reserve(journal, inputs, trial, &attempt, flight.turn)?;
            Landed::Closed
        }
    };
    journal.record_runner_time(&attempt, micros(flight.runner + at.elapsed()))?;
    Ok(landed)
}

/// The answer's bytes, its payload rows, the result, its usage and the ledger's release and
/// spend: one commit.
fn record_answer(
    journal: &mut Journal,
    attempt: &str,
    response: &ModelResponse,
    spent: MicroUsd,
) -> Result<(), EngineError> {
    let (call, payloads) = answer_record(response, spent);
    journal.record_answer(attempt, &call, &payloads.stored())?;
    Ok(())
}

/// The answer's and the raw response's payloads, owned until they are journaled.
struct AnswerPayloads<'a> {
    answer_hex: String,
    response_hex: String,
    response: &'a ModelResponse,
}

impl AnswerPayloads<'_> {
    fn stored(&self) -> [StoredPayload<'_>; 2] {
        [
            StoredPayload {
                sha256: &self.answer_hex,
                kind: PayloadKind::Answer,
                bytes: self.response.text.len() as u64,
                content: Some(self.response.text.as_bytes()),
            },
            StoredPayload {
                sha256: &self.response_hex,
                kind: PayloadKind::Response,
                bytes: self.response.raw_body.len() as u64,
                content: Some(&self.response.raw_body),
            },
        ]
    }
}

/// What the journal records of an answered call.
fn answer_record(response: &ModelResponse, spent: MicroUsd) -> (CallRecord, AnswerPayloads<'_>) {
    let answer_hex = Sha256Digest::of(response.text.as_bytes()).hex();
    let response_hex = Sha256Digest::of(&response.raw_body).hex();
    (
        CallRecord {
            http_status: Some(response.http_status),
            provider_request_id: response.request_id.clone(),
            model_reported: response.model_reported.clone(),
            system_fingerprint: response.system_fingerprint.clone(),
            input_tokens: response.input_tokens,
            output_tokens: response.output_tokens,
            spent,
            response_sha256: Some(response_hex.clone()),
            answer_sha256: Some(answer_hex.clone()),
            latency_ms: u64::try_from(response.latency.as_millis()).unwrap_or(u64::MAX),
            error: None,
        },
        AnswerPayloads {
            answer_hex,
            response_hex,
            response,
        },
    )
}

/// Step 4, once the answer is durable: checks it and journals the verdict with the runner's
/// time on the attempt. Returns the refusal that stops the run when the provider reported usage
/// above the reservation (the record is kept as reported).
pub(super) fn score(
    journal: &mut Journal,
    inputs: &Inputs,
    checker: &mut Checker,
    trial: &PlannedTrial,
    answer: ToScore,
) -> Result<Option<Refusal>, EngineError> {
    let started = Instant::now();
    let task = inputs
        .pack
        .task(&trial.task)
        .map_err(|e| Refusal::TaskMissing(e.to_string()))?;
    let verdict = checker.check(task, &answer.text);
    let runner = micros(answer.runner + started.elapsed());
    journal.record_scored(&answer.attempt, &verdict, runner)?;
    if answer.spent <= answer.reserve {
        return Ok(None);
    }
    Ok(Some(Refusal::ReservationBroken {
        attempt: answer.attempt,
        spent: answer.spent,
        reserve: answer.reserve,
    }))
}

/// A duration in whole microseconds.
pub(super) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// What an answered call cost: usage at the manifest's price; the whole reserve when the usage
/// is missing (never zero); nothing without a price.
///
/// Cached input is priced by how the provider reports it was billed (writes and reads at the
/// plan's cache prices, `plan --cache`); without cache prices, or without the fields, every input
/// token is charged in full: the bill may be over-estimated, never under.
fn spent(manifest: &manifest::Manifest, reserve: MicroUsd, response: &ModelResponse) -> MicroUsd {
    match (
        &manifest.budget.price,
        response.input_tokens,
        response.output_tokens,
    ) {
        (Some(price), Some(input), Some(output)) => price
            .cost(&Usage {
                input,
                cache_write: response.cache_write_tokens.unwrap_or(0),
                cache_read: response.cache_read_tokens.unwrap_or(0),
                output,
            })
            .unwrap_or(reserve),
        (Some(_), _, _) => reserve,
        (None, _, _) => MicroUsd::ZERO,
    }
}

/// Closes an attempt whose request got no answer to check: an infrastructure error, for `reason`.
fn close_as_infrastructure(
    journal: &mut Journal,
    attempt: &str,
    reason: &str,
    call: &CallRecord,
) -> Result<(), EngineError> {
    journal.close_without_result(attempt, Outcome::InfrastructureError, &[reason], call)?;
    Ok(())
}

/// After a rate-limited or overloaded answer to trial `trial_idx` (nothing reached the model,
/// nothing was spent): how long the run backs off (as the provider asked, capped) and the reason
/// the trial's next attempt carries, saying which automatic retry it is and why. `None` once the
/// trial has had its [`retry::MAX_AUTO_RETRIES`]: it then stays `infrastructure_error`, for the
/// user to `resolve --retry`. Nothing is journaled here: the retry is planned like any attempt,
/// after the run's stop conditions, so a stop during the wait leaves nothing pending.
pub(super) fn auto_retry(
    attempts: &[AttemptRow],
    trial_idx: u32,
    status: u16,
    retry_after: Option<Duration>,
    backoff_scale: f64,
) -> Option<(Duration, String)> {
    let n = next_auto_retry_of(attempts, trial_idx)?;
    let wait = retry::wait(n, retry_after).mul_f64(backoff_scale);
    let source = match retry_after {
        Some(asked) => format!("retry-after {} ms", asked.as_millis()),
        None => "no retry-after: default backoff".to_owned(),
    };
    let reason = format!(
        "{} {n}/{} after HTTP {status}, nothing spent; waited {} ms ({source})",
        retry::AUTO_REASON_PREFIX,
        retry::MAX_AUTO_RETRIES,
        wait.as_millis()
    );
    Some((wait, reason))
}

/// The number (1-based) of the trial's next automatic retry, or `None` once it has had its
/// [`retry::MAX_AUTO_RETRIES`] since its first attempt or the user's last retry.
fn next_auto_retry_of(attempts: &[AttemptRow], trial_idx: u32) -> Option<u32> {
    let mut chain: Vec<&AttemptRow> = attempts
        .iter()
        .filter(|a| a.trial_idx == trial_idx)
        .collect();
    chain.sort_by_key(|a| std::cmp::Reverse(a.seq));
    let done = chain
        .iter()
        .take_while(|a| {
            a.retry_reason
                .as_deref()
                .is_some_and(|r| r.starts_with(retry::AUTO_REASON_PREFIX))
        })
        .count();
    let done = u32::try_from(done).unwrap_or(u32::MAX);
    (done < retry::MAX_AUTO_RETRIES).then_some(done + 1)
}

/// The automatic retry (1-based, of [`retry::MAX_AUTO_RETRIES`]) trial `trial_idx` is waiting
/// for: its latest attempt is a rate-limited or overloaded rejection and it has retries left.
/// Such a trial is not done: `run` (this one after its wait, or the next after a stop) sends it
/// again by itself, so `status` and the progress count must not treat it as an infrastructure
/// error left for the user. The same rule decides the retry on resume.
pub fn awaiting_auto_retry(attempts: &[AttemptRow], trial_idx: u32) -> Option<u32> {
    let latest = latest_of(attempts, trial_idx)?;
    let status = latest.http_status?;
    if latest.state != AttemptState::Closed
        || latest.outcome != Some(Outcome::InfrastructureError)
        || !retry::is_retryable(status, latest.error.as_deref().unwrap_or(""))
    {
        return None;
    }
    next_auto_retry_of(attempts, trial_idx)
}

/// At the start of a `run`: when the trial's latest attempt is a rejection that is retried
/// automatically and it has retries left, the run was stopped during the wait before its retry
/// (a kill, Ctrl-C, `--max-dispatch`; a cancel or a cap would have closed the trial `not_run`).
/// Returns the rejected attempt, the reason its retry carries and what remains of the default
/// wait since the rejection (the provider's `retry-after` is not journaled), which the run then
/// backs off for.
pub(super) fn resumed_auto_retry(
    attempts: &[AttemptRow],
    trial_idx: u32,
    backoff_scale: f64,
) -> Option<(String, String, Duration)> {
    let n = awaiting_auto_retry(attempts, trial_idx)?;
    let latest = latest_of(attempts, trial_idx)?;
    let status = latest.http_status.unwrap_or(0);
    let since = latest.finished_at_ms.map_or(Duration::ZERO, |at| {
        Duration::from_millis(u64::try_from(now_ms().saturating_sub(at)).unwrap_or(0))
    });
    let wait = retry::wait(n, None)
        .mul_f64(backoff_scale)
        .saturating_sub(since);
    let reason = format!(
        "{} {n}/{} after HTTP {status}, nothing spent; the run stopped during the wait and resumed, then waited {} ms more (default backoff)",
        retry::AUTO_REASON_PREFIX,
        retry::MAX_AUTO_RETRIES,
        wait.as_millis()
    );
    Some((latest.id.clone(), reason, wait))
}

/// At the start of a run with [`RunOptions::stop_on_key_refusal`]: when the trial's latest
/// attempt was refused for the key ([`retry::is_key_refusal`]), the run stopped on it, and it is
/// sent again (nothing reached the model). Returns the refused attempt and its retry's reason.
pub(super) fn key_refused_latest(
    attempts: &[AttemptRow],
    trial_idx: u32,
) -> Option<(String, String)> {
    let latest = latest_of(attempts, trial_idx)?;
    let (Some(status), AttemptState::Closed, Some(Outcome::InfrastructureError)) =
        (latest.http_status, latest.state, latest.outcome)
    else {
        return None;
    };
    let error = latest.error.as_deref().unwrap_or("");
    if retry::is_retryable(status, error) || !retry::is_key_refusal(status, error) {
        return None;
    }
    Some((
        latest.id.clone(),
        format!("sent again after the key was refused (HTTP {status}); nothing reached the model"),
    ))
}

/// Trial `trial_idx`'s latest attempt among `attempts`.
pub(super) fn latest_of(attempts: &[AttemptRow], trial_idx: u32) -> Option<&AttemptRow> {
    attempts
        .iter()
        .filter(|a| a.trial_idx == trial_idx)
        .max_by_key(|a| a.seq)
}

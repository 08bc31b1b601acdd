//! Dispatch: one admitted trial, from its reserve to its verdict, and the automatic retries of
//! rejections that reached no model.
//!
//! The order is the durability contract of docs/runs.md ("Journal and recovery"), and each step
//! names the commit it rides in. The journal runs `synchronous=FULL` (one WAL fsync per commit);
//! a commit written `WithNextCommit` skips its own fsync and is made durable by the next one,
//! which flushes every page appended before it, in order (see `journal::Durability`).
//!
//! 1. **Reserve** — the attempt planned and its upper cost reserved, with the run's clock and the
//!    previous attempt's verdict: one commit ([`Journal::plan_attempt_at`]), `WithNextCommit`.
//!    A killed process keeps it (the OS has the pages): the `planned` attempt's reserve is
//!    released by recovery and the attempt is sent later (the `after_plan` window the crash tests
//!    hold the engine to). A power loss may drop it, together with the attempt it reserved for:
//!    nothing was sent, and the trial is planned again.
//! 2. **Dispatched** — the request body's payload row and the attempt `dispatched`: one commit
//!    ([`Journal::dispatch_attempt`]) that MUST be durable before the request leaves, and is
//!    (fsync), with step 1 under it. After it, a crash leaves an `unknown` attempt, never re-sent.
//! 3. **Answer** — the answer's bytes, its payload rows, the result, its usage and the ledger's
//!    release and spend: one commit ([`Journal::record_answer`]), durable before the checker
//!    sees the answer. The journal holds the answer's bytes itself (schema 5), so they are
//!    durable in the same fsync as the result, with no file and directory fsync of their own.
//! 4. **Verdict** — not a commit of its own. It is recomputable from the durable answer, so it is
//!    held in memory and written with the next commit (step 1 of the next trial, or
//!    [`Dispatcher::write_verdict`] before any other write, a wait, or the end of the run). A
//!    crash in between leaves the answer unscored; the next `run` scores it from disk
//!    ([`super::scoring::rescore`]) and `recheck` re-scores every answer anyway.
//!
//! Every payload a trial produces (the request body, the answer, the raw response) is kept in
//! the journal, in the commit of the row that names it: no file is created per trial.
//!
//! So an answered trial costs three journal commits and two fsyncs: the dispatched row (with the
//! reserve under it) and the answer with its result.

use std::time::{Duration, Instant};

use skilltrial_core::manifest::{self, PlannedTrial};
use skilltrial_core::money::MicroUsd;
use skilltrial_core::outcome::Outcome;
use skilltrial_core::prompt;

use super::scoring::Checker;
use super::{EngineError, Inputs, Refusal, RunOptions, elapsed_ms, kill_point};
use crate::journal::{
    AttemptRow, AttemptState, CallRecord, Journal, PayloadKind, Scored, StoredPayload, now_ms,
};
use crate::provider::{CallError, ModelRequest, Provider, retry};
use skilltrial_core::checker::Verdict;
use skilltrial_core::digest::Sha256Digest;

/// What a run needs to dispatch its trials.
pub(super) struct Dispatcher<'a> {
    pub journal: &'a mut Journal,
    pub provider: &'a dyn Provider,
    pub inputs: &'a Inputs,
    pub run_id: &'a str,
    pub checker: Checker,
    /// The last answered attempt's verdict, not yet written: it rides in the next commit.
    pub unwritten: Option<Unwritten>,
}

/// A verdict (and the runner's time on its attempt) waiting for the next commit.
#[derive(Debug)]
pub(super) struct Unwritten {
    attempt: String,
    verdict: Verdict,
    runner_us: u64,
}

impl Unwritten {
    fn scored(&self) -> Scored<'_> {
        Scored {
            attempt: &self.attempt,
            verdict: &self.verdict,
            runner_us: self.runner_us,
        }
    }
}

/// How one dispatch ended.
#[derive(Debug)]
pub(super) enum Dispatched {
    /// Answered and scored, closed as an infrastructure error, or `unknown`: the trial needs
    /// nothing more from this run.
    Done,
    /// Rejected as rate limited or overloaded (nothing reached the model): the run may retry it
    /// after a wait.
    Retryable {
        attempt: String,
        status: u16,
        retry_after: Option<Duration>,
    },
    /// The provider reported usage above the reservation: the run must stop.
    ReservationBroken(Refusal),
    /// Refused for the key, not the request ([`retry::is_key_refusal`]): closed as an
    /// infrastructure error like any rejection; a run told to stops on it.
    KeyRefused { status: u16, message: String },
}

impl Dispatcher<'_> {
    /// Writes the verdict waiting for a commit, in a commit of its own: before a write that
    /// cannot carry it, a wait, or the end of the run.
    pub fn write_verdict(&mut self) -> Result<(), EngineError> {
        if let Some(u) = self.unwritten.take() {
            self.journal
                .record_scored(&u.attempt, &u.verdict, u.runner_us)?;
        }
        Ok(())
    }

    /// The attempt and outcome of the verdict waiting for a commit.
    pub fn unwritten_outcome(&self) -> Option<(String, Outcome)> {
        self.unwritten
            .as_ref()
            .map(|u| (u.attempt.clone(), u.verdict.outcome))
    }

    /// Reserves, journals, sends and records one trial. `pending_retry` is the trial's planned
    /// attempt (a user's retry) to send, else a new attempt is planned, carrying `auto_retry`
    /// (the rejected attempt and the reason) when it is an automatic retry. `on_planned` runs
    /// once the reserve is committed (the CLI's progress line names the trial in flight).
    pub fn dispatch_one(
        &mut self,
        trial: &PlannedTrial,
        pending_retry: Option<String>,
        auto_retry: Option<(String, String)>,
        executed_ms: u64,
        on_planned: &mut dyn FnMut(&Journal) -> Result<(), EngineError>,
    ) -> Result<Dispatched, EngineError> {
        let manifest = &self.inputs.manifest;
        let tokens = super::admission::trial_tokens(trial);
        // The runner's own time on this attempt counts from here to the verdict, minus the
        // model wait: measured in this process, so a pause between invocations never counts.
        let work_started = Instant::now();
        // The previous attempt's verdict commits with this attempt's reserve.
        let carried = self.unwritten.take();
        let scored = carried.as_ref().map(Unwritten::scored);
        let attempt = match pending_retry {
            Some(id) => {
                self.journal.reserve_planned_at(
                    &id,
                    trial.reserve,
                    tokens,
                    self.run_id,
                    executed_ms,
                    scored,
                )?;
                id
            }
            None => {
                let retry = auto_retry
                    .as_ref()
                    .map(|(of, why)| (of.as_str(), why.as_str()));
                self.journal.plan_attempt_at(
                    self.run_id,
                    trial.index,
                    trial.reserve,
                    tokens,
                    retry,
                    executed_ms,
                    scored,
                )?
            }
        };
        kill_point("after_plan");
        on_planned(self.journal)?;
        let task = self
            .inputs
            .pack
            .task(&trial.task)
            .map_err(|e| Refusal::TaskMissing(e.to_string()))?;
        let prompt = prompt::build(
            &task.public(),
            manifest::bundle_for(trial.arm, self.inputs.a.as_ref(), self.inputs.b.as_ref()),
        );
        let request = ModelRequest {
            model: manifest.model.model.clone(),
            system: prompt.system,
            user: prompt.user,
            max_output_tokens: trial.max_output_tokens,
            temperature: manifest.sampling.temperature.clone(),
            attempt: Some(attempt.clone()),
        };
        let body = self.provider.body(&request);
        // The dispatched row MUST be durable before the request leaves; the request body is
        // kept with it, in the same commit.
        let request_sha = Sha256Digest::of(&body);
        self.journal
            .dispatch_attempt(&attempt, &request_sha.hex(), &body)?;
        kill_point("after_dispatch");
        let started = Instant::now();
        let call = self.provider.call(&request);
        let model_wait = started.elapsed();
        // An answered attempt stores its runner time with its verdict, in the same commit.
        let answered = call.is_ok();
        let ended = match call {
            Ok(response) => {
                // The answer is durable (its bytes in the journal, committed with the result)
                // before the checker sees it.
                let answer_sha = Sha256Digest::of(response.text.as_bytes());
                let response_sha = Sha256Digest::of(&response.raw_body);
                let (answer_hex, response_hex) = (answer_sha.hex(), response_sha.hex());
                let spent = spent(
                    manifest,
                    trial,
                    response.input_tokens,
                    response.output_tokens,
                );
                self.journal.record_answer(
                    &attempt,
                    &CallRecord {
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
                    &[
                        StoredPayload {
                            sha256: &answer_hex,
                            kind: PayloadKind::Answer,
                            bytes: response.text.len() as u64,
                            content: Some(response.text.as_bytes()),
                        },
                        StoredPayload {
                            sha256: &response_hex,
                            kind: PayloadKind::Response,
                            bytes: response.raw_body.len() as u64,
                            content: Some(&response.raw_body),
                        },
                    ],
                )?;
                kill_point("after_result");
                let verdict = self.checker.check(task, &response.text);
                let runner_us = runner_us(work_started, model_wait);
                if spent > trial.reserve {
                    self.journal.record_scored(&attempt, &verdict, runner_us)?;
                    // The reservation bound was broken (the provider reported more usage than
                    // the bound allows): the record is kept as reported, and the run stops.
                    return Ok(Dispatched::ReservationBroken(Refusal::ReservationBroken {
                        attempt,
                        spent,
                        reserve: trial.reserve,
                    }));
                }
                // The verdict is recomputable from the durable answer, so it need not cost a
                // commit of its own: it rides in the next one (the next trial's reserve, or
                // `write_verdict`). A crash before that leaves the answer unscored, and the next
                // `run` (or `recheck`) scores it from disk.
                self.unwritten = Some(Unwritten {
                    attempt: attempt.clone(),
                    verdict,
                    runner_us,
                });
                Dispatched::Done
            }
            Err(CallError::NotDelivered { message }) => {
                let call = CallRecord {
                    error: Some(message),
                    latency_ms: elapsed_ms(started),
                    ..CallRecord::default()
                };
                close_as_infrastructure(self.journal, &attempt, "not_delivered", &call)?;
                Dispatched::Done
            }
            Err(CallError::Rejected {
                status,
                request_id,
                message,
                retry_after,
            }) => {
                let retryable = retry::is_retryable(status, &message);
                let call = CallRecord {
                    http_status: Some(status),
                    provider_request_id: request_id,
                    error: Some(message),
                    latency_ms: elapsed_ms(started),
                    ..CallRecord::default()
                };
                let key_refused = !retryable
                    && retry::is_key_refusal(status, call.error.as_deref().unwrap_or(""));
                let message = call.error.clone().unwrap_or_default();
                close_as_infrastructure(self.journal, &attempt, &format!("http_{status}"), &call)?;
                if key_refused {
                    Dispatched::KeyRefused { status, message }
                } else if retryable {
                    Dispatched::Retryable {
                        attempt: attempt.clone(),
                        status,
                        retry_after,
                    }
                } else {
                    Dispatched::Done
                }
            }
            Err(CallError::Lost { message, .. }) => {
                self.journal
                    .mark_unknown(&attempt, &message, Some(elapsed_ms(started)))?;
                Dispatched::Done
            }
        };
        if !answered {
            self.journal
                .record_runner_time(&attempt, runner_us(work_started, model_wait))?;
        }
        Ok(ended)
    }
}

/// The runner's own time on an attempt (µs): since `work_started`, less the model's wait.
fn runner_us(work_started: Instant, model_wait: Duration) -> u64 {
    let us = work_started
        .elapsed()
        .saturating_sub(model_wait)
        .as_micros();
    u64::try_from(us).unwrap_or(u64::MAX)
}

/// What an answered call cost: usage at the manifest's price; the whole reserve when the usage
/// is missing (never zero); nothing without a price.
fn spent(
    manifest: &manifest::Manifest,
    trial: &PlannedTrial,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
) -> MicroUsd {
    match (&manifest.budget.price, input_tokens, output_tokens) {
        (Some(price), Some(i), Some(o)) => price
            .input
            .cost(i)
            .and_then(|a| price.output.cost(o).and_then(|b| a.checked_add(b)))
            .unwrap_or(trial.reserve),
        (Some(_), _, _) => trial.reserve,
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

/// After a rate-limited or overloaded answer (nothing reached the model, nothing was spent):
/// waits as the provider asked (capped; a cancel ends the wait early) and returns the reason the
/// trial's next attempt carries, saying which automatic retry it is and why. Returns `None` once
/// the trial has had its [`retry::MAX_AUTO_RETRIES`]: it then stays `infrastructure_error`, for
/// the user to `resolve --retry`. Nothing is journaled here: the retry is planned like any
/// attempt, after the run's stop conditions, so a stop during the wait leaves nothing pending.
pub(super) fn wait_for_auto_retry(
    journal: &Journal,
    run_id: &str,
    trial_idx: u32,
    status: u16,
    retry_after: Option<Duration>,
    backoff_scale: f64,
    options: &RunOptions,
) -> Result<Option<String>, EngineError> {
    let Some(n) = next_auto_retry(journal, run_id, trial_idx)? else {
        return Ok(None);
    };
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
    wait_unless_stopped(journal, run_id, wait, options)?;
    Ok(Some(reason))
}

/// Sleeps for `wait`, ending early on a cancel or a stop request.
fn wait_unless_stopped(
    journal: &Journal,
    run_id: &str,
    wait: Duration,
    options: &RunOptions,
) -> Result<(), EngineError> {
    let until = Instant::now() + wait;
    while Instant::now() < until
        && !options.stop_requested()
        && !journal.cancel_requested(run_id)?
    {
        std::thread::sleep(
            until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100)),
        );
    }
    Ok(())
}

/// The number (1-based) of the trial's next automatic retry, or `None` once it has had its
/// [`retry::MAX_AUTO_RETRIES`] since its first attempt or the user's last retry.
fn next_auto_retry(
    journal: &Journal,
    run_id: &str,
    trial_idx: u32,
) -> Result<Option<u32>, EngineError> {
    Ok(next_auto_retry_of(&journal.attempts(run_id)?, trial_idx))
}

/// [`next_auto_retry`] over a run's attempts already read.
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
/// Waits what remains of the default wait since the rejection (the provider's `retry-after` is
/// not journaled) and returns the rejected attempt and the reason its retry carries.
pub(super) fn resumed_auto_retry(
    journal: &Journal,
    run_id: &str,
    trial_idx: u32,
    backoff_scale: f64,
    options: &RunOptions,
) -> Result<Option<(String, String)>, EngineError> {
    let attempts = journal.attempts(run_id)?;
    let Some(n) = awaiting_auto_retry(&attempts, trial_idx) else {
        return Ok(None);
    };
    let Some(latest) = latest_of(&attempts, trial_idx) else {
        return Ok(None);
    };
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
    wait_unless_stopped(journal, run_id, wait, options)?;
    Ok(Some((latest.id.clone(), reason)))
}

/// At the start of a run with [`RunOptions::stop_on_key_refusal`]: when the trial's latest
/// attempt was refused for the key ([`retry::is_key_refusal`]), the run stopped on it, and it is
/// sent again (nothing reached the model). Returns the refused attempt and its retry's reason.
pub(super) fn key_refused_latest(
    journal: &Journal,
    run_id: &str,
    trial_idx: u32,
) -> Result<Option<(String, String)>, EngineError> {
    let attempts = journal.attempts_without_details(run_id)?;
    let Some(latest) = latest_of(&attempts, trial_idx) else {
        return Ok(None);
    };
    let (Some(status), AttemptState::Closed, Some(Outcome::InfrastructureError)) =
        (latest.http_status, latest.state, latest.outcome)
    else {
        return Ok(None);
    };
    let error = latest.error.as_deref().unwrap_or("");
    if retry::is_retryable(status, error) || !retry::is_key_refusal(status, error) {
        return Ok(None);
    }
    Ok(Some((
        latest.id.clone(),
        format!("sent again after the key was refused (HTTP {status}); nothing reached the model"),
    )))
}

/// Trial `trial_idx`'s latest attempt among `attempts`.
pub(super) fn latest_of(attempts: &[AttemptRow], trial_idx: u32) -> Option<&AttemptRow> {
    attempts
        .iter()
        .filter(|a| a.trial_idx == trial_idx)
        .max_by_key(|a| a.seq)
}

//! The execution engine: runs a planned manifest trial by trial, one request in flight, with
//! every rule of docs/runs.md.
//!
//! [`run`] sets the run up (its lock, its journal row, crash recovery), scores any answer whose
//! verdict a stop or a crash left behind ([`scoring::rescore`], shared with `recheck`), then for
//! each trial asks the pure [`admission::admit`] whether it may be sent (cancel, time limit,
//! request cap, a stop of this invocation, money cap, token cap) and either closes it `not_run`
//! with the reason, pauses the run, or hands it to `dispatch`: reserve its upper cost; journal
//! the attempt as `dispatched` (durable) and only then send; flush the answer to the payload
//! store (fsync) and journal it before the checker sees it; release the reserve against the
//! usage actually spent. A request that was sent but not answered is `unknown` and keeps its
//! reserve; it is never re-sent without the user (`resolve --retry`). Only a request the provider
//! turned away as rate limited or overloaded (nothing reached the model) is retried
//! automatically, a bounded number of times, each retry a new attempt with its reason
//! ([`crate::provider::retry`]).
//!
//! Errors: [`EngineError::Refused`] carries a typed [`Refusal`] (the run's inputs or its state
//! say no; exit 1 in the CLI); [`EngineError::Environment`], `Store` and `Journal` are the
//! machine's (exit 2).

pub mod admission;
mod dispatch;
mod events;
mod inputs;
mod lock;
pub mod scoring;
pub mod turns;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::journal::{
    AttemptRow, AttemptState, Journal, JournalError, NotRunReason, RunStatus, now_ms,
};
use crate::provider::{Provider, retry};
use crate::store::{Store, StoreError};
pub use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::live::LiveTrials;
use skilltrial_core::manifest::{self, Manifest, PlannedTrial};
use skilltrial_core::money::MicroUsd;
pub(crate) use skilltrial_core::state::short_id as short;

pub use admission::{Admission, LimitsNow, admit};
pub use dispatch::awaiting_auto_retry;
pub use inputs::{Inputs, load_bundles, load_inputs, load_pinned, save_bundles, save_inputs};
pub use lock::{RunLock, run_is_live};
pub use scoring::{Checker, Rescore, Rescored, Select, rescore};

use events::{Clock, Halt};

/// Why a run could not start or continue.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The run's inputs or its recorded state say no: nothing about the machine is wrong.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The machine, not the input, is in the way: another process holds the run, the state
    /// directory cannot be written, a lock cannot be taken. Retrying later may work.
    #[error("{0}")]
    Environment(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Each way the engine refuses a run, named so that callers (the CLI's exit code, the hosted
/// daemon's refund-or-retry) branch on the case, not on the text. The messages are what users
/// read (and tests assert): lowercase, naming the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    #[error("`{0}` is not a manifest hash (64 hex characters)")]
    NotAManifestHash(String),
    #[error("manifest {0} is not in the store: run `skilltrial plan` first")]
    ManifestMissing(Sha256Digest),
    #[error("manifest {hash} does not parse: {message}")]
    ManifestUnparsable { hash: Sha256Digest, message: String },
    /// The manifest cannot be written canonically (so it has no hash).
    #[error("{0}")]
    ManifestUnhashable(String),
    #[error("manifest {hash} is not canonical: it hashes to {again}")]
    ManifestNotCanonical {
        hash: Sha256Digest,
        again: Sha256Digest,
    },
    #[error("manifest format `{found}` is not {}", manifest::FORMAT)]
    ManifestFormat { found: String },
    #[error(
        "the manifest pins checker {pinned} ({pinned_source}), this binary has {} ({}): plan again with this binary",
        skilltrial_core::checker::CHECKER_VERSION,
        short(skilltrial_core::checker::source_sha256())
    )]
    CheckerMismatch {
        pinned: String,
        pinned_source: String,
    },
    #[error("the manifest pins another prompt template than this binary's: plan again")]
    TemplateMismatch,
    #[error("the manifest's pack hash is malformed")]
    PackHashMalformed,
    #[error("stored pack: {0}")]
    StoredPackInvalid(String),
    #[error("the stored pack is not {id} {hash}")]
    StoredPackMismatch { id: String, hash: String },
    /// At `plan`: the pack's files do not hash to the hash the manifest pins.
    #[error("the pack's stored digest differs from its hash")]
    PackDigestMismatch,
    #[error("a bundle digest is malformed")]
    BundleDigestMalformed,
    #[error("stored bundle {digest}: {message}")]
    StoredBundleInvalid {
        digest: Sha256Digest,
        message: String,
    },
    #[error("the stored bundle hashes to {found}, not {digest}")]
    StoredBundleMismatch {
        found: Sha256Digest,
        digest: Sha256Digest,
    },
    #[error("the baseline arm carries no bundle")]
    BaselineBundle,
    /// The manifest's plan cannot be computed from its inputs.
    #[error("{0}")]
    Plan(String),
    /// A trial names a task the pack does not have.
    #[error("{0}")]
    TaskMissing(String),
    /// A debug-build test knob holds a value it cannot use.
    #[error("{0}")]
    TestKnob(String),
    #[error("run vanished")]
    RunVanished,
    #[error("run {0} was cancelled; plan a new run")]
    RunCancelled(String),
    #[error(
        "attempt {attempt} reported usage costing {spent}, above its reservation {reserve}: the run stopped; check the model profile's limits and prices"
    )]
    ReservationBroken {
        attempt: String,
        spent: MicroUsd,
        reserve: MicroUsd,
    },
    /// With [`RunOptions::stop_on_key_refusal`]: the provider refused the key, not a request.
    /// The run stopped, resumable; its next start sends the refused trial again.
    #[error(
        "the provider refused the model key (HTTP {status}): {message}; the run stopped, nothing more was sent, and it resumes with the refused trial once the key works"
    )]
    KeyRefused { status: u16, message: String },
}

/// TEST KNOB, debug builds only: `SKILLTRIAL_TEST_KILL_AT=after_plan|after_dispatch|after_result`
/// ends the process on the spot (exit code [`KILL_POINT_EXIT`], no cleanup) at that point of the
/// first attempt it reaches, so tests can crash a run in each window of docs/runs.md and check the
/// recovery. Release builds never read it.
pub const KILL_POINT_VAR: &str = "SKILLTRIAL_TEST_KILL_AT";

/// The exit code of a kill point.
pub const KILL_POINT_EXIT: i32 = 86;

fn kill_point(name: &str) {
    if cfg!(debug_assertions) && std::env::var(KILL_POINT_VAR).is_ok_and(|v| v == name) {
        std::process::exit(KILL_POINT_EXIT);
    }
}

/// TEST KNOB, debug builds only: `SKILLTRIAL_TEST_RUN_LIMIT_MS=<ms>` lowers (never raises) the
/// run's time limit, so tests can exercise it without waiting an hour. Release builds never read
/// it.
pub const RUN_LIMIT_VAR: &str = "SKILLTRIAL_TEST_RUN_LIMIT_MS";

/// The run's time limit: the journal's copy of the manifest's (the manifest's for old rows),
/// lowered by the debug-only test knob.
fn run_limit_ms(stored: Option<u64>, manifest: &Manifest) -> u64 {
    let limit = stored.unwrap_or(manifest.limits.run_timeout_ms);
    let knob = if cfg!(debug_assertions) {
        std::env::var(RUN_LIMIT_VAR)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
    } else {
        None
    };
    knob.map_or(limit, |k| k.min(limit))
}

/// Closes a trial the run will not send, for `reason`: its pending retry itself when there is
/// one (so no attempt is left `planned`), else a new `not_run` attempt.
fn close_not_run(
    journal: &mut Journal,
    run_id: &str,
    trial_idx: u32,
    pending_retry: Option<&str>,
    reason: NotRunReason,
    message: &str,
) -> Result<(), EngineError> {
    match pending_retry {
        Some(attempt) => journal.close_planned_not_run(attempt, reason, message)?,
        None => {
            journal.record_not_run(run_id, trial_idx, reason, message)?;
        }
    }
    Ok(())
}

/// Live progress, for the CLI's progress line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub done: u32,
    pub total: u32,
    pub counts: BTreeMap<String, u32>,
    pub spent: MicroUsd,
    pub reserved: MicroUsd,
    /// The trial sent last among those in flight: (task, arm, repetition).
    pub current: Option<(String, String, u32)>,
    /// Requests in flight now.
    pub in_flight: u32,
    /// Every planned trial's outcome so far, for the live page's grid ([`live_trials`]).
    pub trials: LiveTrials,
}

/// How a run ended.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunSummary {
    pub run: String,
    pub status: String,
    pub planned: u32,
    pub counts: BTreeMap<String, u32>,
    pub spent: MicroUsd,
    pub reserved: MicroUsd,
    /// Attempts turned `unknown` by this start's crash recovery.
    pub recovered_unknown: Vec<String>,
}

/// What a [`RunOptions::gate`] says before a dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// The trial may be sent (the admission rules still apply).
    Go,
    /// The run was cancelled elsewhere (a hosted run's on-chain cancel): recorded in the journal
    /// as a cancel, so every trial not yet sent closes `not_run` with the reason `cancelled`.
    Cancel,
    /// Nothing more may be sent now (the check could not be made, or the time left is too
    /// short): the run stops, resumable, as after a Ctrl-C.
    Stop,
    /// This trial can never be sent (a hosted run whose model its runner cannot call): it
    /// closes `not_run` with this reason and message, never charged; the gate is asked again
    /// for the next trial.
    Close(NotRunReason, String),
}

/// A check made before every dispatch, outside the journal: the hosted runner re-reads the
/// Run account, so that an on-chain cancel stops the run before its next request.
pub type GateFn = Arc<dyn Fn() -> Gate + Send + Sync>;

/// Run-time settings that are not part of the manifest.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Stop after this many dispatches in this invocation (tests and `--max-dispatch`); `None`
    /// for no extra limit.
    pub dispatch_limit: Option<u32>,
    /// Set (by the CLI's Ctrl-C / SIGTERM handler) to stop this invocation: the request in
    /// flight finishes and is journaled, nothing more is sent, and the run is left `stopped`,
    /// resumable (unlike a cancel, which is recorded in the journal and ends the run). Checked
    /// where a cancel is, including during an automatic retry's wait.
    pub stop: Option<Arc<AtomicBool>>,
    /// Asked before every dispatch (after the journal's own cancel): see [`Gate`].
    pub gate: Option<GateFn>,
    /// Stop the run, resumable, when the provider refuses the key ([`Refusal::KeyRefused`]),
    /// instead of closing the trial and going on; the next start sends the refused trial again
    /// (nothing reached the model). The hosted runner sets it: the key is the operator's, and a
    /// user's run must not end as a row of errors for it.
    pub stop_on_key_refusal: bool,
    /// Requests in flight at once (not part of the manifest: it changes how long the run takes,
    /// never what it sends or finds). Recorded in the run's journal.
    pub concurrency: Concurrency,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("dispatch_limit", &self.dispatch_limit)
            .field("stop", &self.stop)
            .field("gate", &self.gate.as_ref().map(|_| "set"))
            .field("stop_on_key_refusal", &self.stop_on_key_refusal)
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

impl RunOptions {
    fn stop_requested(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst))
    }
}

/// Counts of the latest attempt of every trial, by outcome.
pub fn outcome_counts(trials: u32, attempts: &[AttemptRow]) -> BTreeMap<String, u32> {
    let mut latest: BTreeMap<u32, &AttemptRow> = BTreeMap::new();
    for a in attempts {
        latest.insert(a.trial_idx, a);
    }
    let mut counts = BTreeMap::new();
    for idx in 0..trials {
        let key = match latest.get(&idx) {
            None => "pending".to_owned(),
            Some(a) => match a.state {
                AttemptState::Planned => "pending".to_owned(),
                AttemptState::Dispatched => "in_flight".to_owned(),
                // Answered and journaled, not yet scored (a stop between the two): `run`
                // scores it when it resumes.
                AttemptState::Result if a.outcome.is_none() => "unscored".to_owned(),
                _ => a
                    .outcome
                    .map_or_else(|| "pending".to_owned(), |o| o.as_str().to_owned()),
            },
        };
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// Every planned trial of `manifest` (its plan, `trials`) with the outcome its latest attempt
/// closed with, for the live page's grid. A trial planned, in flight, answered and not yet
/// scored, or in `waiting` (an automatic retry due) has none yet: as in [`outcome_counts`], only
/// a final outcome is one.
pub fn live_trials(
    manifest: &Manifest,
    trials: &[PlannedTrial],
    attempts: &[AttemptRow],
    waiting: &dyn Fn(u32) -> bool,
) -> LiveTrials {
    let mut latest: BTreeMap<u32, &AttemptRow> = BTreeMap::new();
    for a in attempts {
        latest.insert(a.trial_idx, a);
    }
    let mut live = LiveTrials::waiting(
        manifest.tasks.clone(),
        manifest
            .arms
            .iter()
            .map(|a| a.arm.as_str().to_owned())
            .collect(),
        manifest.repetitions,
    );
    for t in trials {
        let outcome = latest
            .get(&t.index)
            .filter(|a| !matches!(a.state, AttemptState::Planned | AttemptState::Dispatched))
            .and_then(|a| a.outcome)
            .filter(|_| !waiting(t.index));
        // Every planned trial is in the manifest's shape: THE plan function made both.
        let _ = live.set(&t.task, t.arm.as_str(), t.repetition, outcome);
    }
    live
}

/// Executes (or resumes) the run of `inputs` against `provider`, with up to
/// [`RunOptions::concurrency`] requests in flight, calling `on_progress` after every change a
/// progress line shows.
pub fn run(
    journal: &mut Journal,
    payloads: &Store,
    provider: &dyn Provider,
    inputs: &Inputs,
    options: RunOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunSummary, EngineError> {
    let backoff_scale = retry::backoff_scale().map_err(Refusal::TestKnob)?;
    let run_id = inputs.hash.hex();
    let (trials, _totals) = inputs.trials().map_err(|e| Refusal::Plan(e.to_string()))?;
    // One process per run: a second `run` must not recover (and so orphan) the first one's
    // requests in flight, nor race it past the cap. The lock dies with the process. It is taken
    // before the run row is written, so two `run`s started together never both write it.
    let _lock = lock::lock_run(journal, &run_id)?;
    let (clock, recovered_unknown) = start(journal, payloads, inputs, &run_id, &trials)?;
    journal.set_concurrency(&run_id, options.concurrency.get())?;
    // While the loop runs, commits are durable at its syncs (see `events`); every commit after
    // it is durable on return again.
    journal.defer_fsyncs()?;
    let setting = events::Setting {
        provider,
        inputs,
        run_id: &run_id,
        trials: &trials,
        options: &options,
        clock,
        backoff_scale,
    };
    let driven = events::Loop::new(journal, setting).and_then(|l| l.drive(on_progress));
    let restored = journal.fsync_again();
    let halt = driven?;
    restored?;
    journal.set_executed_ms(&run_id, clock.executed_ms())?;
    let status = match halt {
        Some(Halt::Refused(refusal)) => {
            journal.set_status(&run_id, RunStatus::Stopped)?;
            return Err(refusal.into());
        }
        Some(Halt::Pause) => RunStatus::Stopped,
        None if journal.cancel_requested(&run_id)? => RunStatus::Cancelled,
        None => RunStatus::Finished,
    };
    journal.set_status(&run_id, status)?;
    let total = u32::try_from(trials.len()).unwrap_or(u32::MAX);
    let attempts = journal.attempts_without_details(&run_id)?;
    let money = journal.money(&run_id)?;
    Ok(RunSummary {
        run: run_id.clone(),
        status: status.as_str().to_owned(),
        planned: total,
        counts: outcome_counts(total, &attempts),
        spent: money.spent,
        reserved: money.reserved,
        recovered_unknown,
    })
}

/// Sets a run up to execute: its row, crash recovery (a request in flight when the runner died
/// is `unknown`, never re-sent), the scoring of answers a stop left unscored, its status and
/// its clock. Refuses a cancelled run. Returns the clock and the attempts recovery turned
/// `unknown`.
fn start(
    journal: &mut Journal,
    payloads: &Store,
    inputs: &Inputs,
    run_id: &str,
    trials: &[PlannedTrial],
) -> Result<(Clock, Vec<String>), EngineError> {
    let manifest = &inputs.manifest;
    journal.create_run(run_id, manifest, trials)?;
    let recovered_unknown = journal.recover(run_id)?;
    // Every unknown turn holds only its own bound (also one a journal of an earlier version left
    // holding the reserve of the turns after it).
    for attempt in journal.attempts_without_details(run_id)? {
        if attempt.state == AttemptState::Unknown
            && let Some(trial) = trials.iter().find(|t| t.index == attempt.trial_idx)
        {
            dispatch::keep_own_turn_reserve(journal, inputs, trial, &attempt.id, attempt.turn)?;
        }
    }
    // A stop between journaling an answer and its verdict leaves a result without an outcome:
    // score it now from the stored answer (the answer is on disk before the checker ever runs).
    let rescored = rescore(
        journal,
        payloads,
        &inputs.pack,
        run_id,
        Select::Unscored,
        &mut Checker::new(),
    )?;
    if let Some((_, sha)) = rescored.purged.first() {
        // An unscored answer that is gone can never be scored: say which.
        let digest = crate::store::parse_hex(sha).unwrap_or(Sha256Digest([0; 32]));
        return Err(StoreError::Missing(digest).into());
    }
    let run_row = journal.find_run(run_id)?.ok_or(Refusal::RunVanished)?;
    if run_row.status == RunStatus::Cancelled {
        // A retry planned after the cancel can never be sent: close it rather than leave it
        // planned.
        for attempt in journal.attempts(run_id)? {
            if attempt.state == AttemptState::Planned {
                journal.close_planned_not_run(
                    &attempt.id,
                    NotRunReason::Cancelled,
                    "the run was cancelled before this attempt was sent",
                )?;
            }
        }
        return Err(Refusal::RunCancelled(short(run_id).to_owned()).into());
    }
    journal.set_status(run_id, RunStatus::Running)?;
    // The time limit bounds the run's own executing time over ALL its invocations (hosted runs
    // rely on it: their deadline assumes a run cannot outlast it), so it continues from the time
    // the journal holds; a pause between two invocations does not count. It is wall time: N
    // requests in flight for a minute count one minute.
    let limit_ms = run_limit_ms(run_row.run_limit_ms, manifest);
    // The requests in flight when the runner died ran together, for an unknown time after the
    // clock was last stored, at most the request timeout: count the longest such bound once, so
    // that kills cannot stretch a run past its limit.
    let mut lost_ms = 0u64;
    for id in &recovered_unknown {
        if let Some((_, attempt)) = journal.attempt(id)?
            && let Some(dispatched) = attempt.dispatched_at_ms
        {
            let since = u64::try_from(now_ms().saturating_sub(dispatched)).unwrap_or(0);
            lost_ms = lost_ms.max(since.min(manifest.limits.request_timeout_ms));
        }
    }
    let before_ms = run_row.executed_ms.saturating_add(lost_ms);
    journal.set_executed_ms(run_id, before_ms)?;
    let clock = Clock {
        before_ms,
        started: Instant::now(),
        limit_ms,
    };
    Ok((clock, recovered_unknown))
}

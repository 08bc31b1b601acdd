//! The execution engine: runs a planned manifest trial by trial, one request in flight, with
//! every rule of SPEC §6.
//!
//! Per trial, in order: stop if cancelled or past the run's limits; refuse (`not_run_budget`) a
//! request whose upper cost could break the cap; reserve that upper cost; journal the attempt as
//! `dispatched` (durable) and only then send; flush the answer to the payload store (fsync) and
//! journal it before the checker sees it; release the reserve against the usage actually spent.
//! A request that was sent but not answered is `unknown` and keeps its reserve; it is never
//! re-sent without the user (`resolve --retry`). Only a request the provider turned away as rate
//! limited or overloaded (nothing reached the model) is retried automatically, a bounded number of
//! times, each retry a new attempt with its reason ([`crate::provider::retry`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::journal::{
    AttemptRow, AttemptState, CallRecord, Journal, JournalError, NotRunReason, PayloadKind,
    RunStatus, now_ms,
};
use crate::provider::{CallError, ModelRequest, Provider, retry};
use crate::store::{Store, StoreError, parse_hex};
use skilltrial_core::bundle::{self, Bundle, SourceKind};
use skilltrial_core::checker::{self, CHECK_LIMIT};
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::manifest::{self, Arm, Manifest, PlannedTrial};
use skilltrial_core::money::MicroUsd;
use skilltrial_core::outcome::Outcome;
use skilltrial_core::pack::{self, Pack};
use skilltrial_core::prompt;

/// An exclusive lock on one run, held for as long as the value lives.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

fn lock_path(journal: &std::path::Path, run_id: &str) -> std::path::PathBuf {
    journal
        .parent()
        .map_or_else(|| std::path::PathBuf::from("locks"), |p| p.join("locks"))
        .join(format!("{run_id}.lock"))
}

fn open_lock_file(path: &std::path::Path) -> Result<std::fs::File, EngineError> {
    // A state directory that cannot be written is named as such: the lock file is only the
    // first thing `run` would write there.
    let unwritable = |dir: &std::path::Path, e: std::io::Error| {
        let why = if e.kind() == std::io::ErrorKind::PermissionDenied
            || e.kind() == std::io::ErrorKind::ReadOnlyFilesystem
        {
            "is read-only (or not writable by you)".to_owned()
        } else {
            format!("cannot be written: {e}")
        };
        EngineError::Environment(format!(
            "the state directory {} {why}; `run` must write there (choose another with --home)",
            dir.display()
        ))
    };
    if let Some(dir) = path.parent() {
        let state_dir = dir.parent().unwrap_or(dir);
        std::fs::create_dir_all(dir).map_err(|e| unwritable(state_dir, e))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| unwritable(path.parent().and_then(|d| d.parent()).unwrap_or(path), e))
}

/// How long `run` keeps trying a held lock: `status` probes it for microseconds
/// ([`run_is_live`]), and such a probe must not turn a starting run away.
const LOCK_PATIENCE: Duration = Duration::from_millis(1500);

fn lock_run(journal: &Journal, run_id: &str) -> Result<RunLock, EngineError> {
    let path = lock_path(journal.path(), run_id);
    let file = open_lock_file(&path)?;
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(RunLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(25));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(EngineError::Environment(format!(
                    "run {} is being run by another skilltrial process; wait for it, or cancel it with `skilltrial cancel`",
                    short(run_id)
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(EngineError::Refused(format!(
                    "cannot lock {}: {e}",
                    path.display()
                )));
            }
        }
    }
}

/// Whether a `skilltrial run` process holds the run's lock now, i.e. is executing it. A run
/// whose journal says `running` but whose lock is free was interrupted (killed, crashed).
/// Probes with a shared lock held for an instant; a `run` starting at that moment waits for it.
pub fn run_is_live(journal: &std::path::Path, run_id: &str) -> Result<bool, EngineError> {
    let path = lock_path(journal, run_id);
    if !path.exists() {
        return Ok(false);
    }
    let file = std::fs::File::open(&path)
        .map_err(|e| EngineError::Refused(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock_shared() {
        Ok(()) => Ok(false),
        Err(std::fs::TryLockError::WouldBlock) => Ok(true),
        Err(std::fs::TryLockError::Error(e)) => Err(EngineError::Refused(format!(
            "cannot probe {}: {e}",
            path.display()
        ))),
    }
}

/// TEST KNOB, debug builds only: `SKILLTRIAL_TEST_KILL_AT=after_plan|after_dispatch|after_result`
/// ends the process on the spot (exit code [`KILL_POINT_EXIT`], no cleanup) at that point of the
/// first attempt it reaches, so tests can crash a run in each window of SPEC §6 and check the
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

/// Why a run could not start or continue.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Refused(String),
    /// The machine, not the input, is in the way: another process holds the run, or the state
    /// directory cannot be written. Nothing about the run is wrong; retrying later may work.
    #[error("{0}")]
    Environment(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Everything a manifest names, loaded from the store and verified.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub hash: Sha256Digest,
    pub manifest: Manifest,
    pub pack: Pack,
    pub a: Option<Bundle>,
    pub b: Option<Bundle>,
}

/// Copies every input of a manifest into the store; returns the manifest hash.
pub fn save_inputs(
    store: &Store,
    manifest: &Manifest,
    pack: &Pack,
    a: Option<&Bundle>,
    b: Option<&Bundle>,
) -> Result<Sha256Digest, EngineError> {
    let pack_hash = store.put_tree(pack.files().iter().map(|(p, b)| (p.as_str(), b.as_slice())))?;
    if pack_hash.to_string() != manifest.pack.hash {
        return Err(EngineError::Refused(
            "the pack's stored digest differs from its hash".to_owned(),
        ));
    }
    for bundle in [a, b].into_iter().flatten() {
        store.put_tree(
            bundle
                .files
                .iter()
                .map(|f| (f.path.as_str(), f.bytes.as_slice())),
        )?;
    }
    let text = manifest
        .canonical()
        .map_err(|e| EngineError::Refused(e.to_string()))?;
    Ok(store.put(text.as_bytes())?)
}

/// Loads a manifest and everything it names from the store. Refuses when anything is missing,
/// differs from its hash, or when this binary's checker or prompt template is not the one the
/// manifest pins.
pub fn load_inputs(store: &Store, manifest_ref: &str) -> Result<Inputs, EngineError> {
    let hash = parse_hex(manifest_ref).ok_or_else(|| {
        EngineError::Refused(format!(
            "`{manifest_ref}` is not a manifest hash (64 hex characters)"
        ))
    })?;
    let text = store.get(&hash).map_err(|e| match e {
        StoreError::Missing(_) => EngineError::Refused(format!(
            "manifest {hash} is not in the store: run `skilltrial plan` first"
        )),
        other => EngineError::Store(other),
    })?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| EngineError::Refused(format!("manifest {hash} does not parse: {e}")))?;
    let again = manifest
        .hash()
        .map_err(|e| EngineError::Refused(e.to_string()))?;
    if again != hash {
        return Err(EngineError::Refused(format!(
            "manifest {hash} is not canonical: it hashes to {again}"
        )));
    }
    if manifest.format != manifest::FORMAT {
        return Err(EngineError::Refused(format!(
            "manifest format `{}` is not {}",
            manifest.format,
            manifest::FORMAT
        )));
    }
    if manifest.checker.version != checker::CHECKER_VERSION
        || manifest.checker.source_sha256 != checker::source_sha256()
    {
        return Err(EngineError::Refused(format!(
            "the manifest pins checker {} ({}), this binary has {} ({}): plan again with this binary",
            manifest.checker.version,
            short(&manifest.checker.source_sha256),
            checker::CHECKER_VERSION,
            short(checker::source_sha256())
        )));
    }
    if manifest.prompt.template_sha256 != prompt::template_sha256().to_string()
        || manifest.prompt.template != prompt::TEMPLATE
    {
        return Err(EngineError::Refused(
            "the manifest pins another prompt template than this binary's: plan again".to_owned(),
        ));
    }
    let pack_hash = parse_hex(&manifest.pack.hash)
        .ok_or_else(|| EngineError::Refused("the manifest's pack hash is malformed".to_owned()))?;
    let files: BTreeMap<String, Vec<u8>> = store.get_tree(&pack_hash)?.into_iter().collect();
    let pack = pack::from_files(&manifest.pack.id, files)
        .map_err(|e| EngineError::Refused(format!("stored pack: {e}")))?;
    if pack.hash != pack_hash || pack.id() != manifest.pack.id {
        return Err(EngineError::Refused(format!(
            "the stored pack is not {} {}",
            manifest.pack.id, manifest.pack.hash
        )));
    }
    let mut bundles = [None, None];
    for spec in &manifest.arms {
        let Some(reference) = &spec.bundle else {
            continue;
        };
        let digest = parse_hex(&reference.digest)
            .ok_or_else(|| EngineError::Refused("a bundle digest is malformed".to_owned()))?;
        let files = store.get_tree(&digest)?;
        let bundle = bundle::from_files(files, SourceKind::Folder, &bundle::Limits::default())
            .map_err(|e| {
                EngineError::Refused(format!(
                    "stored bundle {digest}: {}",
                    e.first().map(ToString::to_string).unwrap_or_default()
                ))
            })?;
        if bundle.digest != digest {
            return Err(EngineError::Refused(format!(
                "the stored bundle hashes to {}, not {digest}",
                bundle.digest
            )));
        }
        match spec.arm {
            Arm::A => bundles[0] = Some(bundle),
            Arm::B => bundles[1] = Some(bundle),
            Arm::Baseline => {
                return Err(EngineError::Refused(
                    "the baseline arm carries no bundle".to_owned(),
                ));
            }
        }
    }
    let [a, b] = bundles;
    Ok(Inputs {
        hash,
        manifest,
        pack,
        a,
        b,
    })
}

fn short(hex: &str) -> &str {
    hex.get(..12).unwrap_or(hex)
}

/// Live progress, for the CLI's progress line.
#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    pub done: u32,
    pub total: u32,
    pub counts: BTreeMap<String, u32>,
    pub spent: MicroUsd,
    pub reserved: MicroUsd,
    /// The trial now in flight: (task, arm, repetition).
    pub current: Option<(String, String, u32)>,
}

/// How a run ended.
#[derive(Debug, Clone, Serialize)]
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

/// Run-time settings that are not part of the manifest.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Stop after this many dispatches in this invocation (tests and `--max-dispatch`); `None`
    /// for no extra limit.
    pub dispatch_limit: Option<u32>,
    /// Set (by the CLI's Ctrl-C / SIGTERM handler) to stop this invocation: the request in
    /// flight finishes and is journaled, nothing more is sent, and the run is left `stopped`,
    /// resumable (unlike a cancel, which is recorded in the journal and ends the run). Checked
    /// where a cancel is, including during an automatic retry's wait.
    pub stop: Option<Arc<AtomicBool>>,
}

impl RunOptions {
    fn stop_requested(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst))
    }
}

/// Whether a trial needs no more work: its latest attempt is a result, an unknown held for the
/// user, or closed with a final outcome. A planned attempt (a user's retry, or one planned just
/// before a stop) still needs the run.
fn settled(latest: Option<&AttemptRow>) -> bool {
    latest.is_some_and(|a| {
        matches!(
            a.state,
            AttemptState::Result | AttemptState::Unknown | AttemptState::Closed
        )
    })
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

/// Executes (or resumes) the run of `inputs` against `provider`.
pub fn run(
    journal: &mut Journal,
    payloads: &Store,
    provider: &dyn Provider,
    inputs: &Inputs,
    options: RunOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<RunSummary, EngineError> {
    let backoff_scale = retry::backoff_scale().map_err(EngineError::Refused)?;
    let manifest = &inputs.manifest;
    let run_id = inputs.hash.hex();
    let (trials, _totals) =
        manifest::trials(manifest, &inputs.pack, inputs.a.as_ref(), inputs.b.as_ref())
            .map_err(|e| EngineError::Refused(e.to_string()))?;
    // One process per run: a second `run` must not recover (and so orphan) the first one's
    // request in flight, nor race it past the cap. The lock dies with the process. It is taken
    // before the run row is written, so two `run`s started together never both write it.
    let _lock = lock_run(journal, &run_id)?;
    journal.create_run(&run_id, manifest, &trials)?;
    let recovered_unknown = journal.recover(&run_id)?;
    // A stop between journaling an answer and its verdict leaves a result without an outcome:
    // score it now from the stored answer (the answer is on disk before the checker ever runs).
    for attempt in journal.attempts(&run_id)? {
        if attempt.state != AttemptState::Result || attempt.outcome.is_some() {
            continue;
        }
        let (Some(sha), Some(trial)) = (
            attempt.answer_sha256.as_deref().and_then(parse_hex),
            trials.iter().find(|t| t.index == attempt.trial_idx),
        ) else {
            continue;
        };
        let answer = String::from_utf8_lossy(&payloads.get(&sha)?).into_owned();
        let task = inputs
            .pack
            .task(&trial.task)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
        journal.record_verdict(&attempt.id, &task.check(&answer))?;
    }
    let run_row = journal
        .find_run(&run_id)?
        .ok_or_else(|| EngineError::Refused("run vanished".to_owned()))?;
    if run_row.status == RunStatus::Cancelled {
        // A retry planned after the cancel can never be sent: close it rather than leave it
        // planned.
        for attempt in journal.attempts(&run_id)? {
            if attempt.state == AttemptState::Planned {
                journal.close_planned_not_run(
                    &attempt.id,
                    NotRunReason::Cancelled,
                    "the run was cancelled before this attempt was sent",
                )?;
            }
        }
        return Err(EngineError::Refused(format!(
            "run {} was cancelled; plan a new run",
            short(&run_id)
        )));
    }
    journal.set_status(&run_id, RunStatus::Running)?;
    // The time limit bounds the run's own executing time over ALL its invocations (hosted runs
    // rely on it: their deadline assumes a run cannot outlast it), so it continues from the time
    // the journal holds; a pause between two invocations does not count.
    let limit_ms = run_limit_ms(run_row.run_limit_ms, manifest);
    // A request in flight when the runner died ran for an unknown time after the clock was last
    // stored, at most the request timeout: count that bound, so that kills cannot stretch a run
    // past its limit.
    let mut lost_ms = 0u64;
    for id in &recovered_unknown {
        if let Some((_, attempt)) = journal.attempt(id)?
            && let Some(dispatched) = attempt.dispatched_at_ms
        {
            let since = u64::try_from(now_ms().saturating_sub(dispatched)).unwrap_or(0);
            lost_ms = lost_ms.saturating_add(since.min(manifest.limits.request_timeout_ms));
        }
    }
    let executed_before = run_row.executed_ms.saturating_add(lost_ms);
    journal.set_executed_ms(&run_id, executed_before)?;
    let invocation_started = Instant::now();
    let executed_ms = || executed_before.saturating_add(elapsed_ms(invocation_started));
    let total = u32::try_from(trials.len()).unwrap_or(u32::MAX);
    // A trial whose request was rate-limited is queued again at the front, after its wait, with
    // the rejected attempt and the reason its retry will carry.
    let mut queue: std::collections::VecDeque<&PlannedTrial> = trials.iter().collect();
    let mut auto_retry: BTreeMap<u32, (String, String)> = BTreeMap::new();
    // A stop (kill, Ctrl-C, `--max-dispatch`) during a retry's wait leaves the trial's latest
    // attempt a retryable rejection with retries left: it keeps them, up to the same bound, after
    // what remains of the default wait.
    for trial in &trials {
        if let Some((attempt, reason)) =
            resumed_auto_retry(journal, &run_id, trial.index, backoff_scale, &options)?
        {
            auto_retry.insert(trial.index, (attempt, reason));
        }
    }
    let mut dispatched_now = 0u32;
    let mut stopped = false;

    let report = |journal: &Journal,
                  current: Option<&PlannedTrial>,
                  progress: &mut dyn FnMut(&Progress)|
     -> Result<(), EngineError> {
        let attempts = journal.attempts(&run_id)?;
        let counts = outcome_counts(total, &attempts);
        let money = journal.money(&run_id)?;
        // A trial waiting for an automatic retry is not done: counting it would step the count
        // back when its retry is planned.
        let waiting = trials
            .iter()
            .filter(|t| awaiting_auto_retry(&attempts, t.index).is_some())
            .count();
        let pending = counts.get("pending").copied().unwrap_or(0)
            + counts.get("in_flight").copied().unwrap_or(0)
            + u32::try_from(waiting).unwrap_or(u32::MAX);
        progress(&Progress {
            done: total.saturating_sub(pending),
            total,
            counts,
            spent: money.spent,
            reserved: money.reserved,
            current: current.map(|t| (t.task.clone(), t.arm.as_str().to_owned(), t.repetition)),
        });
        Ok(())
    };
    report(journal, None, progress)?;

    while let Some(trial) = queue.pop_front() {
        let attempts = journal.attempts(&run_id)?;
        let latest = attempts
            .iter()
            .filter(|a| a.trial_idx == trial.index)
            .max_by_key(|a| a.seq);
        if settled(latest) && !auto_retry.contains_key(&trial.index) {
            continue;
        }
        let pending_retry = latest
            .filter(|a| a.state == AttemptState::Planned)
            .map(|a| a.id.clone());
        let pending = pending_retry.as_deref();

        // Stop conditions, checked before every dispatch.
        let executed = executed_ms();
        journal.set_executed_ms(&run_id, executed)?;
        if journal.cancel_requested(&run_id)? {
            close_not_run(
                journal,
                &run_id,
                trial.index,
                pending,
                NotRunReason::Cancelled,
                "the run was cancelled before this trial was sent",
            )?;
            continue;
        }
        if executed > limit_ms {
            close_not_run(
                journal,
                &run_id,
                trial.index,
                pending,
                NotRunReason::TimeLimit,
                "the run reached its time limit",
            )?;
            continue;
        }
        let sent = u32::try_from(
            attempts
                .iter()
                .filter(|a| a.dispatched_at_ms.is_some())
                .count(),
        )
        .unwrap_or(u32::MAX);
        if sent >= manifest.budget.max_requests {
            close_not_run(
                journal,
                &run_id,
                trial.index,
                pending,
                NotRunReason::RequestCap,
                "the run reached its request cap",
            )?;
            continue;
        }
        if options.stop_requested()
            || options
                .dispatch_limit
                .is_some_and(|limit| dispatched_now >= limit)
        {
            stopped = true;
            break;
        }
        let money = journal.money(&run_id)?;
        let tokens = trial
            .input_token_bound
            .saturating_add(trial.max_output_tokens);
        if let Some(cap) = manifest.budget.cap_usd_micros {
            let committed = money
                .spent
                .checked_add(money.reserved)
                .and_then(|c| c.checked_add(trial.reserve));
            if committed.map_or(true, |c| c.0 > cap) {
                let message = format!(
                    "its upper cost {} could break the cap {}: spent {}, reserved {}",
                    trial.reserve,
                    MicroUsd(cap),
                    money.spent,
                    money.reserved
                );
                close_not_run(
                    journal,
                    &run_id,
                    trial.index,
                    pending,
                    NotRunReason::Budget,
                    &message,
                )?;
                continue;
            }
        }
        if let Some(max_tokens) = manifest.budget.max_tokens
            && money
                .used_tokens
                .saturating_add(money.reserved_tokens)
                .saturating_add(tokens)
                > max_tokens
        {
            close_not_run(
                journal,
                &run_id,
                trial.index,
                pending,
                NotRunReason::Budget,
                "its token bound could break the token cap",
            )?;
            continue;
        }

        // The runner's own time on this attempt counts from here to the verdict, minus the
        // model wait: measured in this process, so a pause between invocations never counts.
        let work_started = Instant::now();
        // Reserve, then build and journal the request as dispatched, then send.
        let attempt = match pending_retry {
            Some(id) => {
                journal.reserve_planned(&id, trial.reserve, tokens)?;
                id
            }
            None => {
                let retry = auto_retry.remove(&trial.index);
                let retry = retry.as_ref().map(|(of, why)| (of.as_str(), why.as_str()));
                journal.plan_attempt(&run_id, trial.index, trial.reserve, tokens, retry)?
            }
        };
        kill_point("after_plan");
        report(journal, Some(trial), progress)?;
        let task = inputs
            .pack
            .task(&trial.task)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
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
        };
        let body = provider.body(&request);
        let request_sha = payloads.put(&body)?;
        journal.record_payload(&request_sha.hex(), PayloadKind::Request, body.len() as u64)?;
        // The dispatched row MUST be durable before the request leaves.
        journal.mark_dispatched(&attempt, &request_sha.hex())?;
        kill_point("after_dispatch");
        dispatched_now = dispatched_now.saturating_add(1);
        let started = Instant::now();
        let call = provider.call(&request);
        let model_wait = started.elapsed();
        match call {
            Ok(response) => {
                // The answer is on disk (file fsynced, row committed) before the checker sees it.
                let answer_sha = payloads.put(response.text.as_bytes())?;
                journal.record_payload(
                    &answer_sha.hex(),
                    PayloadKind::Answer,
                    response.text.len() as u64,
                )?;
                let response_sha = payloads.put(&response.raw_body)?;
                journal.record_payload(
                    &response_sha.hex(),
                    PayloadKind::Response,
                    response.raw_body.len() as u64,
                )?;
                let spent = match (
                    &manifest.budget.price,
                    response.input_tokens,
                    response.output_tokens,
                ) {
                    (Some(price), Some(i), Some(o)) => price
                        .input
                        .cost(i)
                        .and_then(|a| price.output.cost(o).and_then(|b| a.checked_add(b)))
                        .unwrap_or(trial.reserve),
                    // Usage missing: count the whole reserve, never zero.
                    (Some(_), _, _) => trial.reserve,
                    (None, _, _) => MicroUsd::ZERO,
                };
                journal.record_result(
                    &attempt,
                    &CallRecord {
                        http_status: Some(response.http_status),
                        provider_request_id: response.request_id.clone(),
                        model_reported: response.model_reported.clone(),
                        system_fingerprint: response.system_fingerprint.clone(),
                        input_tokens: response.input_tokens,
                        output_tokens: response.output_tokens,
                        spent,
                        response_sha256: Some(response_sha.hex()),
                        answer_sha256: Some(answer_sha.hex()),
                        latency_ms: u64::try_from(response.latency.as_millis()).unwrap_or(u64::MAX),
                        error: None,
                    },
                )?;
                kill_point("after_result");
                let verdict = task.check(&response.text);
                journal.record_verdict(&attempt, &verdict)?;
                if spent > trial.reserve {
                    // The reservation bound was broken (the provider reported more usage than the
                    // bound allows): the record is kept as reported, and the run stops.
                    journal.set_executed_ms(&run_id, executed_ms())?;
                    journal.set_status(&run_id, RunStatus::Stopped)?;
                    return Err(EngineError::Refused(format!(
                        "attempt {attempt} reported usage costing {spent}, above its reservation {}: the run stopped; check the model profile's limits and prices",
                        trial.reserve
                    )));
                }
            }
            Err(CallError::NotDelivered { message }) => {
                let call = CallRecord {
                    error: Some(message),
                    latency_ms: elapsed_ms(started),
                    ..CallRecord::default()
                };
                close_as_infrastructure(journal, &attempt, "not_delivered", &call)?;
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
                close_as_infrastructure(journal, &attempt, &format!("http_{status}"), &call)?;
                if retryable
                    && let Some(reason) = wait_for_auto_retry(
                        journal,
                        &run_id,
                        trial.index,
                        status,
                        retry_after,
                        backoff_scale,
                        &options,
                    )?
                {
                    auto_retry.insert(trial.index, (attempt.clone(), reason));
                    queue.push_front(trial);
                }
            }
            Err(CallError::Lost { message, .. }) => {
                journal.mark_unknown(&attempt, &message, Some(elapsed_ms(started)))?;
            }
        }
        let runner_us = work_started
            .elapsed()
            .saturating_sub(model_wait)
            .as_micros();
        journal.record_runner_time(&attempt, u64::try_from(runner_us).unwrap_or(u64::MAX))?;
        report(journal, None, progress)?;
    }

    journal.set_executed_ms(&run_id, executed_ms())?;
    let cancelled = journal.cancel_requested(&run_id)?;
    let status = if stopped {
        RunStatus::Stopped
    } else if cancelled {
        RunStatus::Cancelled
    } else {
        RunStatus::Finished
    };
    journal.set_status(&run_id, status)?;
    let attempts = journal.attempts(&run_id)?;
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
fn wait_for_auto_retry(
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
    let latest = attempts
        .iter()
        .filter(|a| a.trial_idx == trial_idx)
        .max_by_key(|a| a.seq)?;
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
fn resumed_auto_retry(
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
    let Some(latest) = attempts
        .iter()
        .filter(|a| a.trial_idx == trial_idx)
        .max_by_key(|a| a.seq)
    else {
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

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The checker limit the engine uses (exposed for reports).
pub const CHECKER_LIMIT: Duration = CHECK_LIMIT;

/// The request timeout a manifest pins.
pub fn request_timeout(manifest: &Manifest) -> Duration {
    Duration::from_millis(manifest.limits.request_timeout_ms)
}

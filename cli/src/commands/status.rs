//! `skilltrial status [run]`: planned, executed and per-outcome counts, money, bounds, unknowns,
//! attempts in flight or unscored, automatic retries, infrastructure errors and why trials were
//! not run.
//!
//! Read-only and safe beside a live run: it never writes to the run, and it tells a run that a
//! process is executing now (its lock is held) from one that was interrupted (killed, crashed).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use skilltrial_core::money::MicroUsd;
use skilltrial_core::outcome::Outcome;
use skilltrial_engine::engine::outcome_counts;
use skilltrial_engine::journal::{AttemptState, RunStatus};
use skilltrial_engine::provider::retry;

use crate::cli::{Global, RunRef};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state::{self, short};

#[derive(Debug, Serialize, schemars::JsonSchema)]
struct UnknownAttempt {
    attempt: String,
    task: String,
    arm: String,
    repetition: u32,
    reserved_usd_micros: u64,
    error: Option<String>,
}

/// An automatic retry: the attempt that retried, the one it retried, and why.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct RetryAttempt {
    attempt: String,
    retry_of: Option<String>,
    task: String,
    arm: String,
    repetition: u32,
    reason: String,
}

/// A trial whose latest attempt is an infrastructure error, and the command that retries it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct InfraAttempt {
    attempt: String,
    task: String,
    arm: String,
    repetition: u32,
    http_status: Option<u16>,
    error: Option<String>,
    retry: String,
}

/// A trial whose latest attempt was rate-limited or overloaded and that still has automatic
/// retries: `run` sends it again by itself (after the wait, or when it resumes after a stop),
/// so it is not an infrastructure error for the user to resolve.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct WaitingRetry {
    attempt: String,
    task: String,
    arm: String,
    repetition: u32,
    http_status: Option<u16>,
    /// Which automatic retry comes next, of `max_automatic_retries`.
    next_automatic_retry: u32,
    max_automatic_retries: u32,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct StatusReport {
    run: String,
    /// The journal's status, except `interrupted` for a run the journal says is `running` while
    /// no process holds its lock.
    status: String,
    /// Whether a `skilltrial run` process is executing this run right now.
    live: bool,
    pack: String,
    cancel_requested: bool,
    planned: u32,
    executed: u32,
    counts: BTreeMap<String, u32>,
    attempts: usize,
    spent_usd_micros: u64,
    reserved_usd_micros: u64,
    cap_usd_micros: Option<u64>,
    max_requests: u32,
    /// The most requests this run can send: what `plan` printed, the cap or fewer when the
    /// trials and their automatic retries cannot reach it.
    request_bound: u32,
    max_tokens: Option<u64>,
    /// The run's time limit and the executing time used so far, over all `run` invocations.
    run_limit_ms: Option<u64>,
    executed_ms: u64,
    /// Requests in flight at once in the run's latest invocation (`--concurrency`); `null` for
    /// a run not started yet, or journaled before SkillTrial recorded it (one at a time).
    concurrency: Option<u32>,
    /// `progressive` when the manifest pins progressive delivery; absent inline (or when the
    /// store no longer holds the manifest).
    #[serde(skip_serializing_if = "Option::is_none")]
    delivery: Option<&'static str>,
    /// K, the most requests one progressive trial sends; absent inline.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_turns: Option<u32>,
    unknown: Vec<UnknownAttempt>,
    /// Attempts journaled as sent with no answer yet: in flight now when `live`, else in flight
    /// at the kill (they may have cost money, and become `unknown` when `run` resumes).
    in_flight: Vec<UnknownAttempt>,
    /// Attempts whose answer is journaled but not yet scored (`run` scores them on resume).
    unscored: Vec<String>,
    /// Every automatic retry of a rate-limited or overloaded request, with its reason.
    automatic_retries: Vec<RetryAttempt>,
    /// Trials whose latest attempt is an infrastructure error (`resolve --retry` takes these),
    /// except those `run` retries by itself (`waiting_for_automatic_retry`).
    infrastructure_errors: Vec<InfraAttempt>,
    waiting_for_automatic_retry: Vec<WaitingRetry>,
    /// Trials not run, by reason (`not_run_request_cap`, `not_run_budget`, `cancelled`, ...).
    not_run_reasons: BTreeMap<String, u32>,
    /// What to do next, when there is something to do.
    next: Option<String>,
}

pub fn run(args: &RunRef, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let journal = state::existing_journal(&layout)?;
    let found = state::find_run(&journal, args.run.as_deref())?;
    // Probe the run's lock before reading its rows and again after: a run that finishes (or
    // starts) between a read and a single probe would otherwise read `running` with its lock
    // free, and be called interrupted. The engine writes its final status before it lets go of
    // the lock, so a run seen live by either probe is never reported interrupted.
    let live_before = state::run_is_live(&journal, &found.id)?;
    let run = journal.find_run(&found.id)?.unwrap_or(found);
    let trials = journal.trials(&run.id)?;
    let attempts = journal.attempts(&run.id)?;
    let money = journal.money(&run.id)?;
    let planned = u32::try_from(trials.len()).unwrap_or(u32::MAX);
    let counts = outcome_counts(planned, &attempts);
    let executed = Outcome::ALL
        .iter()
        .filter(|o| o.is_executed())
        .map(|o| counts.get(o.as_str()).copied().unwrap_or(0))
        .sum();
    let held = |state: AttemptState| -> Vec<UnknownAttempt> {
        attempts
            .iter()
            .filter(|a| a.state == state)
            .filter_map(|a| {
                let t = trials.iter().find(|t| t.idx == a.trial_idx)?;
                Some(UnknownAttempt {
                    attempt: a.id.clone(),
                    task: t.task.clone(),
                    arm: t.arm.clone(),
                    repetition: t.repetition,
                    reserved_usd_micros: a.reserved_micros,
                    error: a.error.clone(),
                })
            })
            .collect()
    };
    let unknown = held(AttemptState::Unknown);
    let in_flight = held(AttemptState::Dispatched);
    // A progressive turn that asked for tools led to the next turn: it is not an answer to score.
    let continued: std::collections::BTreeSet<&str> = attempts
        .iter()
        .filter_map(|a| a.prior_turn.as_deref())
        .collect();
    let unscored = attempts
        .iter()
        .filter(|a| a.state == AttemptState::Result && a.outcome.is_none())
        .filter(|a| !continued.contains(a.id.as_str()))
        .map(|a| a.id.clone())
        .collect();
    // The delivery the manifest pins (the store may be gone: then what the journal says).
    let delivery = state::store(&layout)
        .ok()
        .and_then(|store| {
            let hash = skilltrial_engine::store::parse_hex(&run.manifest_sha256)?;
            skilltrial_engine::engine::load_pinned(&store, &hash).ok()
        })
        .and_then(|(m, _)| m.delivery);
    let automatic_retries = attempts
        .iter()
        .filter_map(|a| {
            let reason = a.retry_reason.as_deref()?;
            if !reason.starts_with(retry::AUTO_REASON_PREFIX) {
                return None;
            }
            let t = trials.iter().find(|t| t.idx == a.trial_idx)?;
            Some(RetryAttempt {
                attempt: a.id.clone(),
                retry_of: a.retry_of.clone(),
                task: t.task.clone(),
                arm: t.arm.clone(),
                repetition: t.repetition,
                reason: reason.to_owned(),
            })
        })
        .collect();
    // The latest attempt of each trial: the one its outcome comes from (and the only one
    // `resolve --retry` accepts).
    let mut latest: BTreeMap<u32, &skilltrial_engine::journal::AttemptRow> = BTreeMap::new();
    for a in &attempts {
        if latest.get(&a.trial_idx).is_none_or(|l| l.seq < a.seq) {
            latest.insert(a.trial_idx, a);
        }
    }
    let waiting_for_automatic_retry: Vec<WaitingRetry> = latest
        .values()
        .filter_map(|a| {
            let n = skilltrial_engine::engine::awaiting_auto_retry(&attempts, a.trial_idx)?;
            let t = trials.iter().find(|t| t.idx == a.trial_idx)?;
            Some(WaitingRetry {
                attempt: a.id.clone(),
                task: t.task.clone(),
                arm: t.arm.clone(),
                repetition: t.repetition,
                http_status: a.http_status,
                next_automatic_retry: n,
                max_automatic_retries: skilltrial_engine::provider::retry::MAX_AUTO_RETRIES,
            })
        })
        .collect();
    let infrastructure_errors = latest
        .values()
        .filter(|a| a.outcome == Some(Outcome::InfrastructureError))
        .filter(|a| {
            !waiting_for_automatic_retry
                .iter()
                .any(|w| w.attempt == a.id)
        })
        .filter_map(|a| {
            let t = trials.iter().find(|t| t.idx == a.trial_idx)?;
            Some(InfraAttempt {
                attempt: a.id.clone(),
                task: t.task.clone(),
                arm: t.arm.clone(),
                repetition: t.repetition,
                http_status: a.http_status,
                error: a.error.clone(),
                retry: format!("skilltrial resolve {} --retry --reason \"…\"", a.id),
            })
        })
        .collect();
    let mut not_run_reasons = BTreeMap::new();
    for a in latest
        .values()
        .filter(|a| a.outcome == Some(Outcome::NotRun))
    {
        let reason = a
            .reasons
            .first()
            .cloned()
            .unwrap_or_else(|| "not_run".to_owned());
        *not_run_reasons.entry(reason).or_insert(0u32) += 1;
    }
    let live_after = state::run_is_live(&journal, &run.id)?;
    let live = live_after || (live_before && run.status == RunStatus::Running);
    let status = if run.status == RunStatus::Running && !live {
        RunStatus::Interrupted.to_string()
    } else {
        run.status.to_string()
    };
    let next = match status.as_str() {
        "planned" => Some(format!("skilltrial run --manifest {}", run.id)),
        "interrupted" => Some(format!(
            "the runner stopped without finishing (killed or crashed); resume with `skilltrial run --manifest {}`",
            short(&run.id)
        )),
        "stopped" => Some(format!(
            "resume with `skilltrial run --manifest {}`",
            short(&run.id)
        )),
        _ => None,
    };
    let report = StatusReport {
        run: run.id.clone(),
        status,
        live,
        pack: run.pack_id.clone(),
        cancel_requested: run.cancel_requested,
        planned,
        executed,
        counts,
        attempts: attempts.len(),
        spent_usd_micros: money.spent.0,
        reserved_usd_micros: money.reserved.0,
        cap_usd_micros: run.cap_micros,
        max_requests: run.max_requests,
        request_bound: skilltrial_core::manifest::request_bound(
            planned.saturating_mul(delivery.as_ref().map_or(1, |d| d.max_turns)),
            run.max_requests,
        ),
        delivery: delivery.as_ref().map(|_| "progressive"),
        max_turns: delivery.as_ref().map(|d| d.max_turns),
        max_tokens: run.max_tokens,
        run_limit_ms: run.run_limit_ms,
        executed_ms: run.executed_ms,
        concurrency: run.concurrency,
        unknown,
        in_flight,
        unscored,
        automatic_retries,
        infrastructure_errors,
        waiting_for_automatic_retry,
        not_run_reasons,
        next,
    };
    if global.json {
        output::json(&report)?;
    } else {
        output::text(&render(&report))?;
    }
    Ok(Status::Ok)
}

fn render(r: &StatusReport) -> String {
    let mut out = String::new();
    let cancel = if r.cancel_requested && !matches!(r.status.as_str(), "cancelled" | "finished") {
        " (cancel requested)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "run {}  {}{cancel}  pack {}",
        short(&r.run),
        r.status,
        r.pack
    );
    let get = |k: &str| r.counts.get(k).copied().unwrap_or(0);
    let _ = writeln!(
        out,
        "trials   planned {}, executed {} (pass {}, fail {}, invalid_output {}, unsupported_case {})",
        r.planned,
        r.executed,
        get("pass"),
        get("fail"),
        get("invalid_output"),
        get("unsupported_case")
    );
    // Every trial is in exactly one of these counts, so they add up to planned.
    let unscored = match get("unscored") {
        0 => String::new(),
        n => format!(", unscored {n}"),
    };
    let _ = writeln!(
        out,
        "         infrastructure_error {}, unknown {}, interrupted {}, not_run {}, pending {}, in_flight {}{unscored}",
        get("infrastructure_error"),
        get("unknown"),
        get("interrupted"),
        get("not_run"),
        get("pending"),
        get("in_flight")
    );
    let cap = r.cap_usd_micros.map_or_else(
        || "none (unpriced profile)".to_owned(),
        |c| MicroUsd(c).to_string(),
    );
    let _ = writeln!(
        out,
        "money    spent {}, reserved {}, cap {cap}",
        MicroUsd(r.spent_usd_micros),
        MicroUsd(r.reserved_usd_micros)
    );
    let tokens = r.max_tokens.map_or_else(
        || "no token cap".to_owned(),
        |t| format!("at most {t} tokens"),
    );
    let time = r.run_limit_ms.map_or_else(
        || format!("{} executing", duration(r.executed_ms)),
        |limit| {
            format!(
                "{} of {} executing time used",
                duration(r.executed_ms),
                duration(limit)
            )
        },
    );
    let _ = writeln!(
        out,
        "bounds   at most {} requests, {tokens}, {time}",
        r.request_bound
    );
    match r.concurrency {
        None => {}
        Some(1) => out.push_str("         one request at a time\n"),
        Some(n) => {
            let _ = writeln!(out, "         up to {n} requests at a time");
        }
    }
    if let Some(k) = r.max_turns {
        let _ = writeln!(
            out,
            "         progressive delivery: at most {k} turns (requests) per trial"
        );
    }
    if !r.unknown.is_empty() {
        let _ = writeln!(
            out,
            "unknown  {} attempt(s) hold their reserve until you decide:",
            r.unknown.len()
        );
        for u in &r.unknown {
            let _ = writeln!(
                out,
                "  {}  {}/{}/rep {}  holds {}  {}",
                u.attempt,
                u.task,
                u.arm,
                u.repetition,
                MicroUsd(u.reserved_usd_micros),
                u.error.as_deref().unwrap_or("")
            );
        }
        let _ = writeln!(
            out,
            "  decide: skilltrial resolve <attempt> --retry --reason \"...\"   or   --release"
        );
    }
    if !r.in_flight.is_empty() {
        let what = if r.live {
            "in flight now"
        } else {
            "in flight at the kill: may have cost money; becomes unknown when `run` resumes (then resolve it)"
        };
        let _ = writeln!(out, "in_flight {} attempt(s) {what}:", r.in_flight.len());
        for u in &r.in_flight {
            let _ = writeln!(
                out,
                "  {}  {}/{}/rep {}  holds {}",
                u.attempt,
                u.task,
                u.arm,
                u.repetition,
                MicroUsd(u.reserved_usd_micros)
            );
        }
    }
    if !r.unscored.is_empty() {
        let _ = writeln!(
            out,
            "unscored {} answer(s) journaled but not yet scored; `run` scores them when it resumes: {}",
            r.unscored.len(),
            r.unscored.join(", ")
        );
    }
    if !r.automatic_retries.is_empty() {
        let _ = writeln!(
            out,
            "retries  {} automatic retry(ies) of rate-limited or overloaded requests:",
            r.automatic_retries.len()
        );
        for a in &r.automatic_retries {
            let _ = writeln!(out, "  {}  {}", a.attempt, a.reason);
        }
    }
    if !r.waiting_for_automatic_retry.is_empty() {
        // Live: this run's wait; otherwise the run was stopped during the wait.
        let when = if r.live {
            "after its wait"
        } else {
            "when `run` resumes"
        };
        let _ = writeln!(
            out,
            "retrying {} trial(s) rate-limited or overloaded (nothing spent), retried automatically {when}, nothing to resolve:",
            r.waiting_for_automatic_retry.len()
        );
        for w in &r.waiting_for_automatic_retry {
            let status = w
                .http_status
                .map_or_else(String::new, |s| format!("  HTTP {s}"));
            let _ = writeln!(
                out,
                "  {}  {}/{}/rep {}{status}  waiting for an automatic retry ({}/{}) {when}",
                w.attempt,
                w.task,
                w.arm,
                w.repetition,
                w.next_automatic_retry,
                w.max_automatic_retries
            );
        }
    }
    if !r.infrastructure_errors.is_empty() {
        let _ = writeln!(
            out,
            "infra    {} trial(s) ended in an infrastructure error (nothing spent):",
            r.infrastructure_errors.len()
        );
        for a in &r.infrastructure_errors {
            let status = a
                .http_status
                .map_or_else(String::new, |s| format!("  HTTP {s}"));
            let _ = writeln!(
                out,
                "  {}  {}/{}/rep {}{status}  {}",
                a.attempt,
                a.task,
                a.arm,
                a.repetition,
                first_line(a.error.as_deref().unwrap_or(""), 100)
            );
        }
        let _ = writeln!(
            out,
            "  retry one with: skilltrial resolve <attempt> --retry --reason \"…\""
        );
    }
    if !r.not_run_reasons.is_empty() {
        let reasons: Vec<String> = r
            .not_run_reasons
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(out, "not_run  {}", reasons.join(", "));
    }
    if let Some(next) = &r.next {
        let _ = writeln!(out, "next     {next}");
    }
    out
}

/// The first line of `text`, cut to `max` characters (provider error bodies can be long).
fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// A duration for people: `42 s`, `3 min 5 s`, `60 min`.
fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match (s / 60, s % 60) {
        (0, s) => format!("{s} s"),
        (m, 0) => format!("{m} min"),
        (m, s) => format!("{m} min {s} s"),
    }
}

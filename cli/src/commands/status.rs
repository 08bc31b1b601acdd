//! `skilltrial status [run]`: planned, executed and per-outcome counts, money, bounds, unknowns.
//!
//! Read-only and safe beside a live run: it never writes to the run, and it tells a run that a
//! process is executing now (its lock is held) from one that was interrupted (killed, crashed).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use skilltrial_runner::engine::{outcome_counts, run_is_live};
use skilltrial_runner::journal::AttemptState;
use skilltrial_runner::money::MicroUsd;

use crate::cli::{Global, RunRef};
use crate::commands::state::{self, short};
use crate::exit::{CliError, Status};
use crate::output;

/// Outcomes in which the model produced an answer: the executed model trials.
const EXECUTED: [&str; 4] = ["pass", "fail", "invalid_output", "unsupported_case"];

#[derive(Debug, Serialize)]
struct UnknownAttempt {
    attempt: String,
    task: String,
    arm: String,
    repetition: u32,
    reserved_usd_micros: u64,
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct StatusReport {
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
    max_tokens: Option<u64>,
    /// The run's time limit and the executing time used so far, over all `run` invocations.
    run_limit_ms: Option<u64>,
    executed_ms: u64,
    unknown: Vec<UnknownAttempt>,
    /// What to do next, when there is something to do.
    next: Option<String>,
}

pub fn run(args: &RunRef, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let journal = state::existing_journal(&layout)?;
    let run = state::find_run(&journal, args.run.as_deref())?;
    let trials = journal.trials(&run.id).map_err(anyhow::Error::from)?;
    let attempts = journal.attempts(&run.id).map_err(anyhow::Error::from)?;
    let money = journal.money(&run.id).map_err(anyhow::Error::from)?;
    let planned = u32::try_from(trials.len()).unwrap_or(u32::MAX);
    let counts = outcome_counts(planned, &attempts);
    let executed = EXECUTED
        .iter()
        .map(|k| counts.get(*k).copied().unwrap_or(0))
        .sum();
    let unknown = attempts
        .iter()
        .filter(|a| a.state == AttemptState::Unknown)
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
        .collect();
    let live = run_is_live(journal.path(), &run.id).map_err(anyhow::Error::from)?;
    let status = if run.status == "running" && !live {
        "interrupted".to_owned()
    } else {
        run.status.clone()
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
        max_tokens: run.max_tokens,
        run_limit_ms: run.run_limit_ms,
        executed_ms: run.executed_ms,
        unknown,
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
    let _ = writeln!(
        out,
        "         infrastructure_error {}, unknown {}, interrupted {}, not_run {}, pending {}",
        get("infrastructure_error"),
        get("unknown"),
        get("interrupted"),
        get("not_run"),
        get("pending")
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
        r.max_requests
    );
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
    if let Some(next) = &r.next {
        let _ = writeln!(out, "next     {next}");
    }
    out
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

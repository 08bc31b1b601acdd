//! `skilltrial run --manifest <hash>`: execute or resume a planned run.
//!
//! Ctrl-C (or SIGTERM) once: the requests in flight finish and are journaled, nothing more is
//! sent, and the run is left `stopped`, resumable with `run` (a stop, not a cancel). Twice: the
//! process exits at once, and the requests in flight become `unknown` when the run resumes, as
//! after a kill.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_core::manifest;
use skilltrial_engine::engine::{self, RunOptions, RunSummary};
use skilltrial_engine::journal::RunStatus;
use skilltrial_engine::provider;

use crate::cli::{Global, RunArgs};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state::{self, short};

/// `run --dry-run --json`: the trials a run would send, in order, and nothing sent.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DryRun {
    /// The run id (its manifest hash, hex).
    pub run: String,
    /// Always `true`.
    pub dry_run: bool,
    /// Every trial in execution order, with its reservation.
    pub trials: Vec<manifest::PlannedTrial>,
    pub totals: manifest::Totals,
}

pub fn run(args: &RunArgs, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let store = state::store(&layout)?;
    let manifest_ref = state::run_id(&layout, &args.manifest)?;
    let inputs = engine::load_inputs(&store, &manifest_ref)?;
    let m = &inputs.manifest;

    if args.dry_run {
        let (trials, totals) = planned_trials(&inputs)?;
        if global.json {
            output::json(&DryRun {
                run: inputs.hash.hex(),
                dry_run: true,
                trials,
                totals,
            })?;
        } else {
            let mut out = format!(
                "dry run of {}: nothing is sent\n",
                short(&inputs.hash.hex())
            );
            for t in &trials {
                let _ = writeln!(
                    out,
                    "  {:>3}  {:<22} {:<8} rep {}  reserve {}",
                    t.index,
                    t.task,
                    t.arm.as_str(),
                    t.repetition,
                    t.reserve
                );
            }
            let _ = writeln!(
                out,
                "{} trials, at most {} input + {} output tokens",
                totals.trials, totals.max_input_tokens, totals.max_output_tokens
            );
            output::text(&out)?;
        }
        return Ok(Status::Ok);
    }

    // A cancelled run sends nothing: say so (the engine does) rather than ask to confirm.
    if m.budget.requires_confirmation && !args.yes && !cancelled(&layout, &manifest_ref)? {
        confirm(m)?;
    }
    let provider = provider::for_manifest(m)?;
    let mut journal = state::journal(&layout)?;
    let payloads = state::payloads(&layout)?;
    let mut show = crate::commands::progress::printer(global.json);
    // A scripted manifest brings its own model: the built-in server, on the port it pinned.
    let _server = if m.model.scripted {
        let port = m
            .model
            .endpoint
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok())
            .unwrap_or(0);
        // The script answers by (task, arm, repetition) from the plan, never from what this
        // process has seen, so a resumed demo gives the answers an uninterrupted one would.
        let plans = skilltrial_engine::demo::Plans::default();
        let (planned, _) = planned_trials(&inputs)?;
        plans.add(&inputs.hash.hex(), &planned);
        Some(
            skilltrial_engine::scripted::ScriptedServer::start_on(
                port,
                skilltrial_engine::demo::responder(inputs.pack.clone(), plans),
            )
            .map_err(|e| {
                CliError::Environment(anyhow::anyhow!(
                    "cannot start the scripted model on {}: {e}",
                    m.model.endpoint
                ))
            })?,
        )
    } else {
        None
    };
    let stop = Arc::new(AtomicBool::new(false));
    on_interrupt(&stop)?;
    let notice = interrupt_notice(Arc::clone(&stop));
    let result = engine::run(
        &mut journal,
        &payloads,
        provider.as_ref(),
        &inputs,
        RunOptions {
            dispatch_limit: args.max_dispatch,
            stop: Some(Arc::clone(&stop)),
            concurrency: args.concurrency,
            ..RunOptions::default()
        },
        &mut show,
    );
    notice.finish();
    let summary = result?;
    drop(show);
    if global.json {
        output::json(&summary)?;
    } else {
        let mut out = render(&summary);
        out.push_str(&crate::commands::summary::after_run(
            &journal,
            &store,
            &payloads,
            &summary.run,
        ));
        output::text(&out)?;
    }
    // A Ctrl-C that came after the last trial changed nothing: the run finished.
    if stop.load(Ordering::SeqCst) && summary.status == "stopped" {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "stopped: resume with `skilltrial run --manifest {}`",
            short(&summary.run)
        );
        return Ok(Status::Interrupted);
    }
    Ok(Status::Ok)
}

/// The trials of a loaded manifest. One that no longer plans is refused (exit 1) like a manifest
/// failing any other check; it is not the usage error (2) a `PlanError` is when planning.
fn planned_trials(
    inputs: &engine::Inputs,
) -> Result<(Vec<manifest::PlannedTrial>, manifest::Totals), CliError> {
    inputs.trials().map_err(|e| CliError::Rejected(e.into()))
}

/// Installs the Ctrl-C and SIGTERM handlers: the first such signal sets `stop` (the engine
/// checks it before every dispatch and during retry waits); one arriving when `stop` is already
/// set exits at once with [`crate::exit::INTERRUPTED_EXIT`].
pub(crate) fn on_interrupt(stop: &Arc<AtomicBool>) -> Result<(), CliError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for signal in [SIGINT, SIGTERM] {
        // The shutdown check is registered first, so it sees the flag as it was before this
        // signal set it.
        signal_hook::flag::register_conditional_shutdown(
            signal,
            i32::from(crate::exit::INTERRUPTED_EXIT),
            Arc::clone(stop),
        )
        .and_then(|_| signal_hook::flag::register(signal, Arc::clone(stop)))
        .map_err(|e| {
            CliError::Environment(anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))
        })?;
    }
    Ok(())
}

/// Says on stderr, as soon as the first Ctrl-C arrives, what happens now (a signal handler must
/// not print, so a thread watches the flag).
pub(crate) struct Notice {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub(crate) fn interrupt_notice(stop: Arc<AtomicBool>) -> Notice {
    let done = Arc::new(AtomicBool::new(false));
    let watching = Arc::clone(&done);
    let thread = std::thread::spawn(move || {
        while !watching.load(Ordering::SeqCst) {
            if stop.load(Ordering::SeqCst) {
                // Through the progress printer: a bar drawn after the notice would overwrite it.
                crate::commands::progress::notice(
                    "stopping: the requests in flight finish and are journaled; no new request is sent. Press Ctrl-C again to exit at once (those requests then become unknown when the run resumes).",
                );
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    Notice {
        done,
        thread: Some(thread),
    }
}

impl Notice {
    pub(crate) fn finish(mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Whether the journal says `reference`'s run is cancelled or has a cancel requested: then
/// `run` sends nothing, so there is no spend to confirm.
fn cancelled(layout: &skilltrial_engine::home::Layout, reference: &str) -> Result<bool, CliError> {
    if !layout.journal.is_file() {
        return Ok(false);
    }
    let journal = state::journal(layout)?;
    Ok(journal
        .find_run(reference)?
        .is_some_and(|run| run.status == RunStatus::Cancelled || run.cancel_requested))
}

fn confirm(m: &manifest::Manifest) -> Result<(), CliError> {
    let question = format!(
        "profile {} has no verifiable price: this run has no monetary cap, only {} requests and {} tokens.",
        m.model.profile,
        m.budget.max_requests,
        m.budget.max_tokens.unwrap_or(0)
    );
    crate::commands::input::ask_yes(
        &question,
        "\nRun it? Type y (or yes) to run: ",
        "Confirm with --yes (no terminal to ask on).",
        "not confirmed: nothing sent (run it again and answer y, or give --yes)",
    )
}

fn render(s: &RunSummary) -> String {
    let mut out = format!("run {}  {}\n", short(&s.run), s.status);
    if !s.recovered_unknown.is_empty() {
        let _ = writeln!(
            out,
            "recovered after a stop: {} attempt(s) now unknown, holding their reserve: {}",
            s.recovered_unknown.len(),
            s.recovered_unknown.join(", ")
        );
    }
    let counts: Vec<String> = s.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(out, "trials   {} planned: {}", s.planned, counts.join(", "));
    let _ = writeln!(out, "money    spent {}, reserved {}", s.spent, s.reserved);
    let _ = writeln!(out, "next     skilltrial status {}", short(&s.run));
    out
}

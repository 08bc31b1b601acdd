//! `skilltrial demo`: the whole local job on embedded defaults.
//!
//! Validates the two example bundles, plans a 54-trial paired run on `solana-core@1.0.3`, runs
//! it, writes the JSON and HTML reports and says what they found. Without a model key it runs
//! against the built-in scripted model (labelled as such everywhere); with `ANTHROPIC_API_KEY`,
//! `OPENAI_API_KEY` or `OPENAI_BASE_URL` it runs against the real model under a budget cap.
//!
//! The job is [`skilltrial_engine::demo::run`]; this command reads the gate policy, renders each
//! step on stderr (nothing with `--json`), handles Ctrl-C while the run is sending, and prints
//! the report's summary as `report` does.

use skilltrial_core::delivery::{self, Mode};
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use skilltrial_engine::demo::{self, DemoOutcome, DemoRequest, Event, ScriptedModel};

use crate::cli::{DemoArgs, Global};
use crate::commands::{progress, report};
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(args: &DemoArgs, global: &Global) -> Result<Status, CliError> {
    // A gate policy is read first: a bad one stops the demo before anything is planned.
    let gate = args
        .gate
        .as_deref()
        .map(crate::commands::gate::pin_policy)
        .transpose()?;
    // The bound `plan` holds repetitions to, said before any bundle is read or validated.
    if !(1..=100).contains(&args.reps) {
        return Err(CliError::Environment(anyhow::anyhow!(
            "cannot plan: --reps must be between 1 and 100, not {}",
            args.reps
        )));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let request = DemoRequest {
        a: args.a.clone(),
        b: args.b.clone(),
        pack: args.pack.clone(),
        model: args.model.clone(),
        model_name: args.model_name.clone(),
        scripted: args.scripted || args.scripted_model.is_some(),
        scripted_model: args
            .scripted_model
            .and_then(ScriptedModel::from_number)
            .unwrap_or_default(),
        reps: args.reps,
        cap: args.cap_usd,
        confirm_unpriced: args.yes,
        out: args.out.clone(),
        gate,
        home: global.home.clone(),
        stop: Some(Arc::clone(&stop)),
        concurrency: args.concurrency,
        progressive: match (args.delivery, args.max_turns) {
            (Mode::Progressive, k) => Some(k.unwrap_or(delivery::DEFAULT_MAX_TURNS)),
            (Mode::Inline, Some(_)) => {
                return Err(CliError::Environment(anyhow::anyhow!(
                    "--max-turns: a turn limit needs --delivery progressive (inline sends one request per trial)"
                )));
            }
            (Mode::Inline, None) => None,
        },
    };
    let mut show = Some(progress::printer(global.json));
    let mut notice = None;
    let outcome = demo::run(&request, &|k| std::env::var(k).ok(), &mut |event| {
        match event {
            Event::Step(step) => {
                if !global.json {
                    let _ = writeln!(std::io::stderr().lock(), "{step}");
                }
            }
            Event::Running => {
                // Ctrl-C as in `run`: the first stops after the requests in flight (resumable),
                // the second exits at once.
                crate::commands::run::on_interrupt(&stop)?;
                notice = Some(crate::commands::run::interrupt_notice(Arc::clone(&stop)));
            }
            Event::Progress(p) => {
                if let Some(show) = show.as_mut() {
                    show(p);
                }
            }
            Event::Ran => {
                if let Some(notice) = notice.take() {
                    notice.finish();
                }
                // Clears the bar before anything else is printed.
                show = None;
            }
        }
        Ok(())
    })?;
    match outcome {
        DemoOutcome::Stopped { manifest } => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "stopped: resume with `skilltrial run --manifest {manifest}`, then `skilltrial report`"
            );
            Ok(Status::Interrupted)
        }
        DemoOutcome::Reported(reported) => {
            let written = &reported.written;
            if global.json {
                // The same document `report --json` prints for this run.
                output::json(&report::summary_json(written))?;
            } else {
                let mut out = report::render(written);
                let _ = writeln!(
                    out,
                    "\nopen the HTML report in a browser; `skilltrial status` and `skilltrial report` work on this run too"
                );
                let _ = writeln!(
                    out,
                    "note: {}",
                    skilltrial_engine::report::SENSITIVE_WARNING
                );
                output::text(&out)?;
            }
            Ok(Status::Ok)
        }
    }
}

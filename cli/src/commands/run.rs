//! `skilltrial run --manifest <hash>`: execute or resume a planned run.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

use skilltrial_runner::engine::{self, RunOptions, RunSummary};
use skilltrial_runner::manifest;
use skilltrial_runner::provider;

use crate::cli::{Global, RunArgs};
use crate::commands::state::{self, short};
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(args: &RunArgs, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let store = state::store(&layout)?;
    let manifest_ref = state::run_id(&layout, &args.manifest)?;
    let inputs =
        engine::load_inputs(&store, &manifest_ref).map_err(|e| CliError::Rejected(e.into()))?;
    let m = &inputs.manifest;

    if args.dry_run {
        let (trials, totals) =
            manifest::trials(m, &inputs.pack, inputs.a.as_ref(), inputs.b.as_ref())
                .map_err(|e| CliError::Rejected(anyhow::anyhow!("{e}")))?;
        if global.json {
            output::json(
                &serde_json::json!({ "run": inputs.hash.hex(), "dry_run": true, "trials": trials, "totals": totals }),
            )?;
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

    if m.budget.requires_confirmation && !args.yes {
        confirm(m)?;
    }
    let provider =
        provider::for_manifest(m).map_err(|e| CliError::Environment(anyhow::anyhow!(e)))?;
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
        Some(
            skilltrial_runner::scripted::ScriptedServer::start_on(
                port,
                skilltrial_runner::demo::responder(inputs.pack.clone()),
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
    let summary = engine::run(
        &mut journal,
        &payloads,
        provider.as_ref(),
        &inputs,
        RunOptions {
            dispatch_limit: args.max_dispatch,
        },
        &mut show,
    )
    .map_err(crate::exit::engine_error)?;
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
    Ok(Status::Ok)
}

fn confirm(m: &manifest::Manifest) -> Result<(), CliError> {
    let question = format!(
        "profile {} has no verifiable price: this run has no monetary cap, only {} requests and {} tokens.",
        m.model.profile,
        m.budget.max_requests,
        m.budget.max_tokens.unwrap_or(0)
    );
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Environment(anyhow::anyhow!(
            "{question} Confirm with --yes (no terminal to ask on)."
        )));
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question}\nType yes to run: ");
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| CliError::Environment(e.into()))?;
    if answer.trim() == "yes" {
        Ok(())
    } else {
        Err(CliError::Environment(anyhow::anyhow!(
            "not confirmed; nothing was sent"
        )))
    }
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

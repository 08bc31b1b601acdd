//! The client side of a runner daemon: `submit`, `status --remote [--follow]`,
//! `report --remote`. Each signs in with the wallet (Sign-In With Solana; the message is
//! checked to name this wallet before it is signed) and keeps no token on disk. The workflows
//! are `skilltrial_runner::client`'s; this module parses, asks, and renders.

use std::fmt::Write as _;

use serde::Serialize;
use skilltrial_runner::api::{Event, Progress, RunView};
use skilltrial_runner::client::escrow::Prepared;
use skilltrial_runner::client::report::{RunAccount, RunAccountSource, Saved};
use skilltrial_runner::client::status::{Followed, Runs};
use skilltrial_runner::client::submit::{self, Registration, Step, Submission, Submitted};
use skilltrial_runner::client::{
    Client, StreamEvent, report as remote_report, status as remote_status,
};

use crate::cli::{Global, ReportArgs, StatusArgs, SubmitArgs};
use crate::commands::chain;
use crate::commands::open::{approve_escrow, escrowed_text};
use crate::commands::progress::notice;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;
use skilltrial_chain::verify::Source;

/// A signed-in client of `url` for the wallet of `solana`.
fn signed_in(
    url: &url::Url,
    solana: &crate::cli::SolanaArgs,
    global: &Global,
) -> Result<(Client, chain::Session), CliError> {
    let session = chain::connect(solana, global)?;
    let wallet = session.wallet()?;
    let client = Client::signed_in(url, &wallet)?;
    Ok((client, session))
}

pub fn submit(args: &SubmitArgs, global: &Global) -> Result<Status, CliError> {
    // The escrow is asked for on the terminal after the uploads: without one (a script, a CI
    // job) and without --yes, refuse before anything is signed in, uploaded or signed.
    if !args.yes && !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(CliError::Environment(anyhow::anyhow!(
            "submit opens an escrow with your wallet and asks you first, but there is no terminal to ask on: approve with --yes; nothing was signed in, uploaded or signed"
        )));
    }
    let layout = state::layout(global)?;
    let store = state::store(&layout)?;
    let manifest = state::run_id(&layout, &args.manifest)?;
    let session = chain::connect(&args.solana, global)?;
    let request = submit::Request {
        manifest: &manifest,
        runner_url: &args.runner,
        deadline_secs: args.deadline,
        concurrency: args.concurrency,
    };
    let submitted = match submit::prepare(&store, &session, request, &mut step_notice)? {
        Submission::Registered(submitted) => submitted,
        Submission::Escrow(pending) => {
            if let Prepared::Ready(ready) = pending.escrow() {
                approve_escrow(ready, args.yes)?;
            }
            pending.finish(&session)?
        }
    };
    if global.json {
        one_line(&submitted)?;
    } else {
        output::text(&submitted_text(&submitted))?;
    }
    Ok(Status::Ok)
}

/// A step of `submit` as it happens, on stderr.
fn step_notice(step: Step<'_>) {
    match step {
        Step::SigningIn { runner_url, wallet } => {
            notice(&format!("signing in to {runner_url} as {wallet}"));
        }
        Step::UploadedBundle { name, files } => {
            notice(&format!("uploaded bundle {name} ({files} files)"));
        }
        _ => {}
    }
}

/// What `submit` prints once the runner has the run: the escrow it opened, or none when the
/// runner had it already.
fn submitted_text(submitted: &Submitted) -> String {
    let said = match &submitted.registration {
        Registration::Escrow(escrowed) => {
            format!("{}registered with the runner", escrowed_text(escrowed))
        }
        Registration::AlreadyRegistered(_) => {
            "already registered with the runner (nothing escrowed again)".to_owned()
        }
    };
    format!(
        "{said}: it is {}{}\n  follow it: skilltrial status --remote --runner {} {} --follow\n",
        submitted.phase,
        in_flight(submitted.concurrency),
        submitted.runner_url,
        submitted.run
    )
}

/// The `--json` output of the hosted commands: one document on one line, as `runner serve` and
/// `status --remote --follow` print theirs, so that a script reads it line by line. Through a
/// JSON value: its keys sorted, as these lines have always had them.
fn one_line(doc: &impl Serialize) -> Result<(), CliError> {
    let line = serde_json::to_value(doc)
        .map_err(anyhow::Error::from)?
        .to_string();
    output::text(&format!("{line}\n"))?;
    Ok(())
}

/// `, up to N requests in flight` for a run registered with a concurrency above 1 (nothing for
/// one at a time, the default, as these lines have always been).
fn in_flight(concurrency: u32) -> String {
    if concurrency > 1 {
        format!(", up to {concurrency} requests in flight")
    } else {
        String::new()
    }
}

fn view_text(v: &RunView) -> String {
    let mut out = format!("run {}  {}", v.run, v.phase);
    if let Some(detail) = &v.detail {
        let _ = write!(out, " ({detail})");
    }
    out.push_str(&in_flight(v.concurrency));
    out.push('\n');
    if let Some(p) = &v.progress {
        let _ = writeln!(
            out,
            "  trials    {}/{} done, spent {} µUSD, reserved {} µUSD",
            p.done, p.total, p.spent, p.reserved
        );
        out.push_str(&outcomes_text(p));
    }
    let _ = writeln!(
        out,
        "  settled   {} {} in {} {}",
        v.settled_trials,
        if v.settled_trials == 1 {
            "trial"
        } else {
            "trials"
        },
        v.settle_batches,
        if v.settle_batches == 1 {
            "batch"
        } else {
            "batches"
        }
    );
    if let Some(hash) = &v.report_hash {
        let _ = writeln!(out, "  report    {hash}");
    }
    if let Some(sig) = &v.finalize_signature {
        let _ = writeln!(out, "  finalized {sig}");
    }
    out
}

/// The outcome counts of a progress document, and what a cancel or an `unknown` means for the
/// owner's money.
fn outcomes_text(p: &Progress) -> String {
    let mut out = String::new();
    let counts = &p.counts;
    if counts.is_empty() {
        return out;
    }
    let listed: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(out, "  outcomes  {}", listed.join(" · "));
    if p.status.as_deref() == Some("cancelled") {
        let _ = writeln!(
            out,
            "  cancelled on-chain: trials not yet sent closed `not_run` and pay nothing"
        );
    }
    if let Some(n) = counts.get("unknown").filter(|n| **n > 0) {
        let _ = writeln!(
            out,
            "  unknown   {n} in flight at a restart of the runner: never sent again, never charged"
        );
    }
    out
}

fn event_text(e: &StreamEvent) -> String {
    match &e.event {
        Event::Progress(p) => format!(
            "progress  {}/{} done  spent {} µUSD  reserved {} µUSD",
            p.done, p.total, p.spent, p.reserved
        ),
        Event::Settled(s) => format!(
            "settled   batch {}: {} trials, {} lamports ({})",
            s.batch,
            s.trials.len(),
            s.usage_lamports,
            s.signature
        ),
        Event::Phase(p) => format!(
            "phase     {}{}",
            p.phase,
            p.detail
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        ),
        Event::Notice(n) => format!("{:<9} {}", e.event.kind(), n.message),
    }
}

pub fn status(args: &StatusArgs, global: &Global) -> Result<Status, CliError> {
    let url = args
        .runner
        .as_ref()
        .ok_or_else(|| CliError::Rejected(anyhow::anyhow!("--remote needs --runner <URL>")))?;
    let (client, _) = signed_in(url, &args.solana, global)?;
    let Some(run) = &args.run else {
        let runs = Runs {
            runs: client.runs()?,
        };
        if global.json {
            one_line(&runs)?;
        } else if runs.runs.is_empty() {
            output::text("no runs on this runner for this wallet\n")?;
        } else {
            output::text(&runs.runs.iter().map(view_text).collect::<String>())?;
        }
        return Ok(Status::Ok);
    };
    if args.follow {
        let ended = remote_status::follow(&client, url, run, &mut |followed| match followed {
            Followed::Event(event) => {
                let line = if global.json {
                    // Through a JSON value: its keys sorted, as this line has always had them.
                    serde_json::to_value(event)
                        .unwrap_or(serde_json::Value::Null)
                        .to_string()
                } else {
                    event_text(event)
                };
                output::text(&format!("{line}\n")).is_ok()
            }
            Followed::Reconnecting { after } => {
                notice(&format!(
                    "the runner's stream of run {run} ended before the run did; reconnecting (from event {after})…"
                ));
                true
            }
            _ => true,
        })?;
        let view = client.run(run)?;
        if !global.json {
            output::text(&view_text(&view))?;
            if view.phase == skilltrial_runner::api::Phase::Finalized {
                // The last line says what the owner does next.
                output::text(&format!(
                    "run {run} is finalized: its report: skilltrial report {run} --remote --runner {url}; the rest of the escrow: skilltrial close {run}\n"
                ))?;
            }
        }
        if let Some(why) = ended.failed {
            return Err(CliError::Rejected(anyhow::anyhow!(
                "run {run} failed: {why}"
            )));
        }
        return Ok(Status::Ok);
    }
    let view = client.run(run)?;
    if global.json {
        one_line(&view)?;
    } else {
        output::text(&view_text(&view))?;
    }
    Ok(Status::Ok)
}

pub fn report(args: &ReportArgs, global: &Global) -> Result<Status, CliError> {
    let url = args
        .runner
        .as_ref()
        .ok_or_else(|| CliError::Rejected(anyhow::anyhow!("--remote needs --runner <URL>")))?;
    let run = args.run.as_deref().ok_or_else(|| {
        CliError::Rejected(anyhow::anyhow!(
            "report --remote needs the Run account address (`submit` printed it)"
        ))
    })?;
    let (client, session) = signed_in(url, &args.solana, global)?;
    // Nothing is written before the file proves itself: its hashes recompute, it is the report
    // of this Run, and the Run on-chain agrees.
    let downloaded = remote_report::download(&client, run)?;
    let on_chain = remote_report::against_chain(&session.chain, &downloaded, &mut |line| {
        crate::commands::progress::notice(line);
    })?;
    let layout = state::layout(global)?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| skilltrial_engine::report::default_dir(&layout.root, run));
    let json_path = args
        .out_json
        .clone()
        .unwrap_or_else(|| dir.join("report.json"));
    let html_path = args
        .out_html
        .clone()
        .unwrap_or_else(|| dir.join("report.html"));
    for (path, bytes) in [
        (&json_path, downloaded.json.as_bytes()),
        (&html_path, downloaded.html.as_slice()),
    ] {
        skilltrial_engine::files::write_file(path, bytes)?;
    }
    let report_hash = downloaded.report_hash;
    if global.json {
        one_line(&Saved {
            run: run.to_owned(),
            report_hash: report_hash.to_string(),
            manifest_hash: downloaded.manifest_hash.to_string(),
            json: json_path.display().to_string(),
            html: html_path.display().to_string(),
            run_account: RunAccount::Agrees,
            run_account_source: match &on_chain {
                Source::Account => RunAccountSource::Account,
                Source::Finalization(_) => RunAccountSource::FinalizeTransaction,
            },
        })?;
    } else {
        let chain = match &on_chain {
            Source::Account => "the Run account agrees: run id, digest, batches, trials, usage and the anchored report hash".to_owned(),
            Source::Finalization(signature) => format!(
                "the Run account is closed, and its finalize transaction {signature} agrees: run id, digest, batches, trials, usage and the anchored report hash"
            ),
        };
        output::text(&format!(
            "report of run {run} (verified: report hash {report_hash}; {chain})\n  {}\n  {}\n",
            json_path.display(),
            html_path.display(),
        ))?;
    }
    Ok(Status::Ok)
}

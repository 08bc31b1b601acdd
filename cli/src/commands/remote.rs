//! The client side of a runner daemon: `submit`, `status --remote [--follow]`,
//! `report --remote`. Each signs in with the wallet (Sign-In With Solana; the message is
//! checked to name this wallet before it is signed) and keeps no token on disk.

use std::fmt::Write as _;

use serde_json::{Value, json};
use skilltrial_core::report::Report;
use skilltrial_engine::engine;
use skilltrial_runner::api::{Event, Progress, RunView};
use skilltrial_runner::client::{Client, ClientError, StreamEvent};
use solana_signer::Signer;

use crate::cli::{Global, OpenArgs, ReportArgs, StatusArgs, SubmitArgs};
use crate::commands::chain;
use crate::commands::verify_chain::Source;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

/// A signed-in client of `url` for the wallet of `solana`.
fn signed_in(
    url: &url::Url,
    solana: &crate::cli::SolanaArgs,
    global: &Global,
) -> Result<(Client, chain::Session), CliError> {
    let session = chain::connect(solana, global)?;
    let wallet = session.wallet()?;
    let mut client = Client::new(url)?;
    client.sign_in(&wallet)?;
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
    let manifest_ref = state::run_id(&layout, &args.manifest)?;
    let inputs = engine::load_inputs(&store, &manifest_ref)?;
    let hash = inputs.hash.hex();

    let mut client = Client::new(&args.runner)?;
    let info = client.info()?;
    let session = chain::connect(&args.solana, global)?;
    let genesis = session.chain.genesis_hash()?;
    let ours = skilltrial_runner::chain_id_of(&genesis);
    if ours != info.chain_id {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "the runner at {} settles on {}; your --url {} is {ours}: give the same cluster",
            args.runner,
            info.chain_id,
            skilltrial_chain::rpc::redact_url(session.chain.url())
        )));
    }
    let runner: skilltrial_chain::Pubkey = info.runner.parse().map_err(|_| {
        CliError::Environment(anyhow::anyhow!(
            "the runner at {} gave `{}` as its key, not a public key",
            args.runner,
            info.runner
        ))
    })?;
    let wallet = session.wallet()?;
    crate::commands::progress::notice(&format!(
        "signing in to {} as {}",
        args.runner,
        wallet.pubkey()
    ));
    client.sign_in(&wallet)?;

    // The inputs, each validated by the runner as `plan` validated them here.
    for spec in &inputs.manifest.arms {
        if let Some(bundle) = &spec.bundle {
            let digest = skilltrial_engine::store::parse_hex(&bundle.digest).ok_or_else(|| {
                CliError::Rejected(anyhow::anyhow!(
                    "bundle digest `{}` is malformed",
                    bundle.digest
                ))
            })?;
            let files = store.get_tree(&digest)?;
            let stored = client.upload_tree("bundle", None, &files)?;
            crate::commands::progress::notice(&format!(
                "uploaded bundle {} ({} files)",
                bundle.name, stored.files
            ));
        }
    }
    let pack_digest =
        skilltrial_engine::store::parse_hex(&inputs.manifest.pack.hash).ok_or_else(|| {
            CliError::Rejected(anyhow::anyhow!("the manifest's pack hash is malformed"))
        })?;
    let files = store.get_tree(&pack_digest)?;
    client.upload_tree("pack", Some(&inputs.manifest.pack.id), &files)?;
    let text = String::from_utf8(store.get(&inputs.hash)?).map_err(|_| {
        CliError::Rejected(anyhow::anyhow!("the stored manifest {hash} is not UTF-8"))
    })?;
    let terms = client.upload_manifest(&text)?;
    if terms.manifest != hash {
        return Err(CliError::Environment(anyhow::anyhow!(
            "the runner stored the manifest as {}, not {hash}: not escrowed",
            terms.manifest
        )));
    }
    if args.deadline < terms.min_deadline_secs {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "--deadline {}s: the runner needs at least {}s for this manifest (its time limit, and time to settle)",
            args.deadline,
            terms.min_deadline_secs
        )));
    }
    // The runner agrees before anything is signed: a refusal after the escrow would leave the
    // money locked until the deadline.
    let checked = client.check(&hash, args.deadline)?;
    if let Some(view) = checked.registered {
        return registered(args, global, &info.runner, &hash, &view, None);
    }
    let opened = crate::commands::open::escrow(
        &OpenArgs {
            manifest: hash.clone(),
            runner: skilltrial_core::solana::Address(runner.to_bytes()),
            deadline: args.deadline,
            yes: args.yes,
            solana: args.solana.clone(),
        },
        global,
    )?;
    let view = client.register(&hash)?;
    registered(args, global, &info.runner, &hash, &view, Some(&opened))
}

/// What `submit` prints once the runner has the run: the escrow it opened, or none when the
/// runner had it already.
fn registered(
    args: &SubmitArgs,
    global: &Global,
    runner: &str,
    hash: &str,
    view: &RunView,
    opened: Option<&crate::commands::open::Opened>,
) -> Result<Status, CliError> {
    if global.json {
        let mut doc = json!({
            "run": view.run,
            "runner_url": args.runner.as_str(),
            "runner": runner,
            "manifest": hash,
            "phase": view.phase,
        });
        match opened {
            Some(opened) => doc["escrow"] = opened.doc.clone(),
            None => doc["already_registered"] = Value::Bool(true),
        }
        one_line(&doc)?;
    } else {
        let said = opened.map_or_else(
            || "already registered with the runner (nothing escrowed again)".to_owned(),
            |o| format!("{}registered with the runner", o.text),
        );
        output::text(&format!(
            "{said}: it is {}\n  follow it: skilltrial status --remote --runner {} {} --follow\n",
            view.phase, args.runner, view.run
        ))?;
    }
    Ok(Status::Ok)
}

/// The `--json` output of the hosted commands: one document on one line, as `runner serve` and
/// `status --remote --follow` print theirs, so that a script reads it line by line.
fn one_line(doc: &Value) -> Result<(), CliError> {
    let line = serde_json::to_string(doc).map_err(anyhow::Error::from)?;
    output::text(&format!("{line}\n"))?;
    Ok(())
}

fn view_text(v: &RunView) -> String {
    let mut out = format!("run {}  {}", v.run, v.phase);
    if let Some(detail) = &v.detail {
        let _ = write!(out, " ({detail})");
    }
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
        let runs = client.runs()?;
        if global.json {
            one_line(&json!({ "runs": runs }))?;
        } else if runs.is_empty() {
            output::text("no runs on this runner for this wallet\n")?;
        } else {
            output::text(&runs.iter().map(view_text).collect::<String>())?;
        }
        return Ok(Status::Ok);
    };
    if args.follow {
        let failed = follow(&client, url, run, global)?;
        let view = client.run(run)?;
        if !global.json {
            output::text(&view_text(&view))?;
            if view.phase == "finalized" {
                // The last line says what the owner does next.
                output::text(&format!(
                    "run {run} is finalized: its report: skilltrial report {run} --remote --runner {url}; the rest of the escrow: skilltrial close {run}\n"
                ))?;
            }
        }
        if let Some(why) = failed {
            return Err(CliError::Rejected(anyhow::anyhow!(
                "run {run} failed: {why}"
            )));
        }
        return Ok(Status::Ok);
    }
    let view = client.run(run)?;
    if global.json {
        one_line(&serde_json::to_value(&view).unwrap_or(Value::Null))?;
    } else {
        output::text(&view_text(&view))?;
    }
    Ok(Status::Ok)
}

/// How long `--follow` keeps trying to reach a runner that stopped or dropped the stream
/// before it gives up (a restart of the daemon takes seconds).
const RECONNECT_FOR: std::time::Duration = std::time::Duration::from_secs(120);

/// Prints `run`'s events until it is over (finalized or failed), reconnecting after a restart
/// of the runner or a dropped connection from the last event seen (`Last-Event-ID`), so that
/// nothing is shown twice or missed. Returns the failure's detail when the run failed.
fn follow(
    client: &Client,
    url: &url::Url,
    run: &str,
    global: &Global,
) -> Result<Option<String>, CliError> {
    let mut last = 0u64;
    let mut failed = None;
    let mut over = false;
    loop {
        let mut closed = false;
        let result = client.follow(run, last, &mut |event| {
            last = last.max(event.id);
            over |= event.event.ends_run();
            if let Event::Phase(p) = &event.event
                && p.phase == "failed"
            {
                failed.clone_from(&p.detail);
            }
            let line = if global.json {
                // Through a JSON value: its keys sorted, as this line has always had them.
                serde_json::to_value(event)
                    .unwrap_or(Value::Null)
                    .to_string()
            } else {
                event_text(event)
            };
            closed = output::text(&format!("{line}\n")).is_err();
            !closed
        });
        match result {
            Ok(()) if over || closed => return Ok(failed),
            // The stream ended before the run did (the runner stopped, or was killed), or the
            // runner could not be reached: wait for it and go on from the last event.
            Ok(()) | Err(ClientError::Unreachable(_)) => {}
            Err(e) => return Err(e.into()),
        }
        crate::commands::progress::notice(&format!(
            "the runner's stream of run {run} ended before the run did; reconnecting (from event {last})…"
        ));
        let started = std::time::Instant::now();
        while client.info().is_err() {
            if started.elapsed() >= RECONNECT_FOR {
                return Err(CliError::Environment(anyhow::anyhow!(
                    "the runner at {url} has not answered for {} s while you followed run {run}; it resumes the run when it is back: follow it again then (skilltrial status --remote --runner {url} {run} --follow)",
                    RECONNECT_FOR.as_secs()
                )));
            }
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
    }
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
    let json_bytes = client.report(run, "report.json")?;
    let html = client.report(run, "report.html")?;
    // Nothing is written before the file proves itself: its hashes recompute, and it is the
    // report of this Run.
    let text = String::from_utf8(json_bytes).map_err(|_| {
        CliError::Rejected(anyhow::anyhow!("the runner's report.json is not UTF-8"))
    })?;
    let report = Report::from_json(&text)
        .map_err(|e| CliError::Rejected(anyhow::anyhow!("the runner's report.json: {e}")))?;
    let (report_hash, manifest_hash) = report.verify().map_err(|e| {
        CliError::Rejected(anyhow::anyhow!(
            "the runner's report.json does not verify: {e}"
        ))
    })?;
    if report.settlement.as_ref().map(|s| s.run_address.as_str()) != Some(run) {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "the runner's report is not the settlement of run {run}"
        )));
    }
    let on_chain = on_chain(&session, run, &report)?;
    let layout = state::layout(global)?;
    let dir = args.out.clone().unwrap_or_else(|| {
        layout
            .root
            .join("reports")
            .join(run.get(..12).unwrap_or(run))
    });
    let json_path = args
        .out_json
        .clone()
        .unwrap_or_else(|| dir.join("report.json"));
    let html_path = args
        .out_html
        .clone()
        .unwrap_or_else(|| dir.join("report.html"));
    for (path, bytes) in [(&json_path, text.as_bytes()), (&html_path, html.as_slice())] {
        skilltrial_engine::files::write_file(path, bytes)?;
    }
    if global.json {
        one_line(&json!({
            "run": run,
            "report_hash": report_hash.to_string(),
            "manifest_hash": manifest_hash.to_string(),
            "json": json_path.display().to_string(),
            "html": html_path.display().to_string(),
            "run_account": "agrees",
            "run_account_source": match &on_chain {
                Source::Account => "account",
                Source::Finalization(_) => "finalize_transaction",
            },
        }))?;
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

/// The downloaded report against its Run, as `verify --run` compares them (the same code): its
/// account, or once closed its finalize transaction; what agreed, or an error naming each field
/// where they disagree.
fn on_chain(session: &chain::Session, run: &str, report: &Report) -> Result<Source, CliError> {
    let address: skilltrial_chain::Pubkey = run
        .parse()
        .map_err(|_| CliError::Rejected(anyhow::anyhow!("`{run}` is not a Run account address")))?;
    let settlement = report.verify_settlement();
    if let Some(Err(e)) = &settlement {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "the runner's report of run {run}: its settlement does not recompute: {e}; nothing written"
        )));
    }
    let (checked, _) = crate::commands::verify_chain::live_run_account(
        session,
        &address,
        report,
        settlement.as_ref(),
        60,
    )?;
    if checked.agrees() {
        return Ok(checked.source);
    }
    let fields: Vec<String> = checked
        .disagreements
        .iter()
        .map(|d| {
            format!(
                "{}: the report says {}, the account holds {}",
                d.field, d.report, d.account
            )
        })
        .collect();
    Err(CliError::Rejected(anyhow::anyhow!(
        "the runner's report of run {run} is not what its Run account {} holds; nothing written:\n  {}",
        checked.address,
        fields.join("\n  ")
    )))
}

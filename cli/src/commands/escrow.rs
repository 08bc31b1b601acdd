//! A hosted run's escrow from the user's side: `chain-status`, `cancel --chain`, `refund`,
//! `close`. Each reads the Run first and refuses, in words, what the program would refuse (not
//! your run, not yet, already closed), so a refusal costs no fee; the program checks all of it
//! again on-chain.

use serde_json::{Value, json};
use skilltrial_chain::Pubkey;
use skilltrial_chain::account::RunStatus;
use skilltrial_chain::escrow::{self, Emptied, refundable_after, remaining, status_word};
use skilltrial_chain::rpc::LiveRun;

use crate::cli::{ChainRunArgs, Global, SolanaArgs};
use crate::commands::chain::{self, sol, when};
use crate::exit::{CliError, Status};
use crate::output;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn run_json(address: &Pubkey, live: &LiveRun, now: i64) -> Value {
    let run = &live.account.run;
    let (status, at) = status_word(run.status);
    let closes = refundable_after(run);
    json!({
        "run": address.to_string(),
        "run_id": run.run_id,
        "status": status,
        "status_at": at.map(when),
        "user": run.user.to_string(),
        "runner": run.runner.to_string(),
        "manifest_hash": hex(&run.manifest_hash),
        "planned_trials": run.planned_trials,
        "settled_trials": run.settled_trials,
        "settle_batches": run.settle_batches,
        "per_request_cap_lamports": run.per_request_cap,
        "fee_per_trial_lamports": run.fee_per_trial,
        "escrowed_lamports": run.escrowed,
        "settled_usage_lamports": run.settled_usage,
        "settled_fees_lamports": run.settled_fees,
        "remaining_lamports": remaining(run),
        "account_lamports": live.lamports,
        "opened_at": when(run.opened_at),
        "deadline": when(run.deadline),
        "deadline_unix": run.deadline,
        "refundable_after": when(closes),
        "refundable_now": !matches!(run.status, RunStatus::Finalized { .. }) && now > closes,
        "settle_digest": hex(&run.settle_digest),
        "report_hash": (run.report_hash != [0; 32]).then(|| hex(&run.report_hash)),
    })
}

/// `skilltrial chain-status <RUN_ADDRESS>`.
pub fn status(args: &ChainRunArgs, global: &Global) -> Result<Status, CliError> {
    let address = skilltrial_chain::host_key(&args.run);
    let session = chain::connect(&args.solana, global)?;
    let live = escrow::live_run(&session, &address)?;
    let now = session.chain.cluster_time()?;
    let doc = run_json(&address, &live, now);
    if global.json {
        output::json(&doc)?;
        return Ok(Status::Ok);
    }
    let run = &live.account.run;
    let (word, at) = status_word(run.status);
    let mut out = format!(
        "run        {address} (run id {})\n\
         status     {word}{}\n\
         user       {}\n\
         runner     {}\n\
         manifest   {}\n\
         trials     {} of {} settled, in {} batches\n\
         escrowed   {}\n\
         usage      {}\n\
         fees       {}\n\
         remaining  {} (the account also holds its rent: {} in all)\n\
         deadline   {}\n\
         digest     {}\n",
        run.run_id,
        at.map(|t| format!(" at {}", when(t))).unwrap_or_default(),
        run.user,
        run.runner,
        hex(&run.manifest_hash),
        run.settled_trials,
        run.planned_trials,
        run.settle_batches,
        sol(run.escrowed),
        sol(run.settled_usage),
        sol(run.settled_fees),
        sol(remaining(run)),
        sol(live.lamports),
        when(run.deadline),
        hex(&run.settle_digest),
    );
    if run.report_hash != [0; 32] {
        out.push_str(&format!("report     {}\n", hex(&run.report_hash)));
    }
    let next = match run.status {
        RunStatus::Finalized { .. } => format!("next       skilltrial close {address}"),
        _ if doc["refundable_now"] == true => format!("next       skilltrial refund {address}"),
        _ => format!(
            "next       the runner settles and finalizes; refundable alone after {}",
            doc["refundable_after"].as_str().unwrap_or("")
        ),
    };
    out.push_str(&next);
    out.push('\n');
    output::text(&out)?;
    Ok(Status::Ok)
}

/// `skilltrial cancel --chain <RUN_ADDRESS>`.
pub fn cancel(address: Pubkey, solana: &SolanaArgs, global: &Global) -> Result<Status, CliError> {
    let session = chain::connect(solana, global)?;
    let cancelled = escrow::cancel(&session, &address)?;
    let window = cancelled.settle_window_secs;
    if global.json {
        output::json(&json!({
            "run": address.to_string(),
            "cancelled": true,
            "signature": cancelled.signature,
            "settle_window_secs": window,
        }))?;
    } else {
        output::text(&format!(
            "cancelled run {address} (transaction {})\n  no new trial is dispatched; the runner may settle what it already ran for {} minutes, then `skilltrial refund {address}` returns the rest\n",
            cancelled.signature,
            window / 60
        ))?;
    }
    Ok(Status::Ok)
}

/// What an emptied Run gave back, as `refund` and `close` report it.
fn report_emptied(
    address: &Pubkey,
    emptied: &Emptied,
    global: &Global,
    verb: &str,
) -> Result<Status, CliError> {
    if global.json {
        output::json(&json!({
            "run": address.to_string(),
            "signature": emptied.signature,
            "returned_lamports": emptied.returned_lamports,
            "remaining_escrow_lamports": emptied.remaining_escrow_lamports,
            "rent_lamports": emptied.rent_lamports(),
        }))?;
    } else {
        output::text(&format!(
            "{verb} run {address} (transaction {})\n  {} back to {}: the escrow's remaining {} and the account's rent\n",
            emptied.signature,
            sol(emptied.returned_lamports),
            emptied.user,
            sol(emptied.remaining_escrow_lamports),
        ))?;
    }
    Ok(Status::Ok)
}

/// `skilltrial refund <RUN_ADDRESS>`: after the deadline (or a cancel's settle window).
pub fn refund(args: &ChainRunArgs, global: &Global) -> Result<Status, CliError> {
    let address = skilltrial_chain::host_key(&args.run);
    let session = chain::connect(&args.solana, global)?;
    let emptied = escrow::refund(&session, &address)?;
    report_emptied(&address, &emptied, global, "refunded")
}

/// `skilltrial close <RUN_ADDRESS>`: a finalized run's remainder and rent.
pub fn close(args: &ChainRunArgs, global: &Global) -> Result<Status, CliError> {
    let address = skilltrial_chain::host_key(&args.run);
    let session = chain::connect(&args.solana, global)?;
    let emptied = escrow::close(&session, &address)?;
    report_emptied(&address, &emptied, global, "closed")
}

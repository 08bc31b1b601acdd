//! A hosted run's escrow from the user's side: `chain-status`, `cancel --chain`, `refund`,
//! `close`. Each reads the Run first and refuses, in words, what the program would refuse (not
//! your run, not yet, already closed), so a refusal costs no fee; the program checks all of it
//! again on-chain.

use serde_json::{Value, json};
use skilltrial_chain::account::{Run, RunStatus};
use skilltrial_chain::ix;
use skilltrial_chain::rpc::LiveRun;
use skilltrial_chain::{Pubkey, anchor_key};
use solana_signer::Signer;

use crate::cli::{ChainRunArgs, Global, SolanaArgs};
use crate::commands::chain::{self, Session, sol, when};
use crate::exit::{CliError, Status};
use crate::output;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The Run at `address`, or a refusal saying there is none.
fn live_run(session: &Session, address: &Pubkey) -> Result<LiveRun, CliError> {
    session.chain.run(address)?.ok_or_else(|| {
        CliError::Rejected(anyhow::anyhow!(
            "{}: no Run account at {address} (never opened here, or already refunded or closed)",
            session.chain.url()
        ))
    })
}

fn status_word(status: RunStatus) -> (&'static str, Option<i64>) {
    match status {
        RunStatus::Open => ("open", None),
        RunStatus::Cancelled { at } => ("cancelled", Some(at)),
        RunStatus::Finalized { at } => ("finalized", Some(at)),
    }
}

/// Lamports the escrow still holds for the user (escrow less what was settled).
fn remaining(run: &Run) -> u64 {
    run.escrowed
        .saturating_sub(run.settled_usage)
        .saturating_sub(run.settled_fees)
}

fn run_json(address: &Pubkey, live: &LiveRun, now: i64) -> Value {
    let run = &live.account.run;
    let (status, at) = status_word(run.status);
    let closes = run.settle_closes_at().unwrap_or(run.deadline);
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
    let live = live_run(&session, &address)?;
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

/// The wallet (after any pending transaction was resumed) and the Run as it then stands,
/// refused unless the wallet is the run's user.
fn users_run(
    session: &Session,
    address: &Pubkey,
    action: &str,
) -> Result<(solana_keypair::Keypair, LiveRun), CliError> {
    let wallet = session.signer()?;
    let live = live_run(session, address)?;
    let run = &live.account.run;
    if anchor_key(&wallet.pubkey()) != run.user {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "run {address} belongs to {}; your wallet {} cannot {action} it (--keypair names the wallet)",
            run.user,
            wallet.pubkey()
        )));
    }
    Ok((wallet, live))
}

/// `skilltrial cancel --chain <RUN_ADDRESS>`.
pub fn cancel(address: Pubkey, solana: &SolanaArgs, global: &Global) -> Result<Status, CliError> {
    let session = chain::connect(solana, global)?;
    let (wallet, live) = users_run(&session, &address, "cancel")?;
    let r = &live.account.run;
    if let RunStatus::Cancelled { .. } | RunStatus::Finalized { .. } = r.status {
        let (word, _) = status_word(r.status);
        return Err(CliError::Rejected(anyhow::anyhow!(
            "run {address} is already {word}: nothing to cancel"
        )));
    }
    let sent = session.send(
        &format!("run_cancel:{address}"),
        &wallet,
        &[ix::run_cancel(&wallet.pubkey(), &address)],
    )?;
    let window = skilltrial_chain::constants::CANCEL_SETTLE_WINDOW_SECS;
    if global.json {
        output::json(&json!({
            "run": address.to_string(),
            "cancelled": true,
            "signature": sent.signature.to_string(),
            "settle_window_secs": window,
        }))?;
    } else {
        output::text(&format!(
            "cancelled run {address} (transaction {})\n  no new trial is dispatched; the runner may settle what it already ran for {} minutes, then `skilltrial refund {address}` returns the rest\n",
            sent.signature,
            window / 60
        ))?;
    }
    Ok(Status::Ok)
}

/// Sends the instruction that empties and closes the Run, and reports what came back.
#[allow(clippy::too_many_arguments)]
fn empty_run(
    session: &Session,
    address: &Pubkey,
    wallet: &solana_keypair::Keypair,
    live: &LiveRun,
    intent: &str,
    instruction: skilltrial_chain::Instruction,
    global: &Global,
    verb: &str,
) -> Result<Status, CliError> {
    let sent = session.send(&format!("{intent}:{address}"), wallet, &[instruction])?;
    let run = &live.account.run;
    let back = live.lamports;
    if global.json {
        output::json(&json!({
            "run": address.to_string(),
            "signature": sent.signature.to_string(),
            "returned_lamports": back,
            "remaining_escrow_lamports": remaining(run),
            "rent_lamports": back.saturating_sub(remaining(run)),
        }))?;
    } else {
        output::text(&format!(
            "{verb} run {address} (transaction {})\n  {} back to {}: the escrow's remaining {} and the account's rent\n",
            sent.signature,
            sol(back),
            run.user,
            sol(remaining(run)),
        ))?;
    }
    Ok(Status::Ok)
}

/// `skilltrial refund <RUN_ADDRESS>`: after the deadline (or a cancel's settle window).
pub fn refund(args: &ChainRunArgs, global: &Global) -> Result<Status, CliError> {
    let address = skilltrial_chain::host_key(&args.run);
    let session = chain::connect(&args.solana, global)?;
    let (wallet, live) = users_run(&session, &address, "refund")?;
    let r = &live.account.run;
    if let RunStatus::Finalized { .. } = r.status {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "run {address} is finalized: its remainder is already booked to you; `skilltrial close {address}` takes it back"
        )));
    }
    let closes = r.settle_closes_at().unwrap_or(r.deadline);
    let now = session.chain.cluster_time()?;
    if now <= closes {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "run {address} can be refunded only after {} (cluster time is {}, {} s to go): until then the runner may still settle",
            when(closes),
            when(now),
            closes - now + 1
        )));
    }
    let instruction = ix::run_refund_expired(&wallet.pubkey(), &address);
    empty_run(
        &session,
        &address,
        &wallet,
        &live,
        "run_refund_expired",
        instruction,
        global,
        "refunded",
    )
}

/// `skilltrial close <RUN_ADDRESS>`: a finalized run's remainder and rent.
pub fn close(args: &ChainRunArgs, global: &Global) -> Result<Status, CliError> {
    let address = skilltrial_chain::host_key(&args.run);
    let session = chain::connect(&args.solana, global)?;
    let (wallet, live) = users_run(&session, &address, "close")?;
    let r = &live.account.run;
    if !matches!(r.status, RunStatus::Finalized { .. }) {
        let (word, _) = status_word(r.status);
        return Err(CliError::Rejected(anyhow::anyhow!(
            "run {address} is {word}, not finalized: the runner finalizes it, or after {} `skilltrial refund {address}` takes everything back",
            when(r.settle_closes_at().unwrap_or(r.deadline))
        )));
    }
    let instruction = ix::run_close(&wallet.pubkey(), &address);
    empty_run(
        &session,
        &address,
        &wallet,
        &live,
        "run_close",
        instruction,
        global,
        "closed",
    )
}

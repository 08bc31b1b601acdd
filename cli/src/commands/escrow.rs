//! A hosted run's escrow from the user's side: `chain-status`, `cancel --chain`, `refund`,
//! `close`. Each reads the Run first and refuses, in words, what the program would refuse (not
//! your run, not yet, already closed), so a refusal costs no fee; the program checks all of it
//! again on-chain.

use schemars::JsonSchema;
use serde::Serialize;
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

/// `chain-status --json`: a Run account decoded. Times are RFC 3339 (UTC, cluster time).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunView {
    /// The Run account's address.
    pub run: String,
    /// The program's number for the run.
    pub run_id: u64,
    /// `open`, `cancelled` or `finalized`.
    pub status: &'static str,
    /// When it was cancelled or finalized (null while open).
    pub status_at: Option<String>,
    /// The wallet that escrowed it.
    pub user: String,
    /// The runner allowed to settle it.
    pub runner: String,
    /// The escrowed manifest's hash (hex).
    pub manifest_hash: String,
    pub planned_trials: u16,
    pub settled_trials: u16,
    pub settle_batches: u16,
    pub per_request_cap_lamports: u64,
    pub fee_per_trial_lamports: u64,
    pub escrowed_lamports: u64,
    pub settled_usage_lamports: u64,
    pub settled_fees_lamports: u64,
    /// What the escrow still holds for the user: escrowed − usage − fees.
    pub remaining_lamports: u64,
    /// Everything the account holds (the remainder and its rent).
    pub account_lamports: u64,
    pub opened_at: String,
    pub deadline: String,
    /// The deadline in Unix seconds.
    pub deadline_unix: i64,
    /// When the user may take it all back alone (`refund`).
    pub refundable_after: String,
    /// Whether `refund` would be accepted now.
    pub refundable_now: bool,
    /// The settlement digest so far (hex).
    pub settle_digest: String,
    /// The report hash the runner anchored at finalize (hex); null before.
    pub report_hash: Option<String>,
}

/// `cancel --chain --json`: the hosted run was cancelled on-chain.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChainCancelled {
    /// The Run account's address.
    pub run: String,
    /// Always `true`.
    pub cancelled: bool,
    /// The cancel transaction.
    pub signature: String,
    /// How long the runner may still settle what it already ran, in seconds.
    pub settle_window_secs: i64,
}

/// `refund --json` and `close --json`: what the emptied Run gave back.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Returned {
    /// The Run account's address.
    pub run: String,
    /// The refund or close transaction.
    pub signature: String,
    /// Everything returned to the user: the escrow's remainder and the account's rent.
    pub returned_lamports: u64,
    /// The escrow's remainder.
    pub remaining_escrow_lamports: u64,
    /// The account's rent.
    pub rent_lamports: u64,
}

fn run_view(address: &Pubkey, live: &LiveRun, now: i64) -> RunView {
    let run = &live.account.run;
    let (status, at) = status_word(run.status);
    let closes = refundable_after(run);
    RunView {
        run: address.to_string(),
        run_id: run.run_id,
        status,
        status_at: at.map(when),
        user: run.user.to_string(),
        runner: run.runner.to_string(),
        manifest_hash: hex(&run.manifest_hash),
        planned_trials: run.planned_trials,
        settled_trials: run.settled_trials,
        settle_batches: run.settle_batches,
        per_request_cap_lamports: run.per_request_cap,
        fee_per_trial_lamports: run.fee_per_trial,
        escrowed_lamports: run.escrowed,
        settled_usage_lamports: run.settled_usage,
        settled_fees_lamports: run.settled_fees,
        remaining_lamports: remaining(run),
        account_lamports: live.lamports,
        opened_at: when(run.opened_at),
        deadline: when(run.deadline),
        deadline_unix: run.deadline,
        refundable_after: when(closes),
        refundable_now: !matches!(run.status, RunStatus::Finalized { .. }) && now > closes,
        settle_digest: hex(&run.settle_digest),
        report_hash: (run.report_hash != [0; 32]).then(|| hex(&run.report_hash)),
    }
}

/// `skilltrial chain-status <RUN_ADDRESS>`.
pub fn status(args: &ChainRunArgs, global: &Global) -> Result<Status, CliError> {
    let address = skilltrial_chain::host_key(&args.run);
    let session = chain::connect(&args.solana, global)?;
    let live = escrow::live_run(&session, &address)?;
    let now = session.chain.cluster_time()?;
    let doc = run_view(&address, &live, now);
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
        _ if doc.refundable_now => format!("next       skilltrial refund {address}"),
        _ => format!(
            "next       the runner settles and finalizes; refundable alone after {}",
            doc.refundable_after
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
        output::json(&ChainCancelled {
            run: address.to_string(),
            cancelled: true,
            signature: cancelled.signature.clone(),
            settle_window_secs: window,
        })?;
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
        output::json(&Returned {
            run: address.to_string(),
            signature: emptied.signature.clone(),
            returned_lamports: emptied.returned_lamports,
            remaining_escrow_lamports: emptied.remaining_escrow_lamports,
            rent_lamports: emptied.rent_lamports(),
        })?;
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

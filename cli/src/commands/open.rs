//! `skilltrial open --manifest <hash> --runner <pubkey>`: escrow a planned run's upper cost on-chain.
//!
//! Everything the program will check is checked here first, so that a refusal costs nothing:
//! the manifest pins a SOL/USD rate (`plan --sol-usd`), the config exists and names the runner
//! the user agreed to, the deadline is within the config's bounds. The escrow is
//! `planned trials × (per-request cap + fee)`, the cap being the largest trial's upper cost at the
//! pinned rate, rounded up to the lamport. Nothing is signed before the person (or `--yes`)
//! approves the amounts shown.

use serde_json::json;
use skilltrial_chain::ix::{self, RunOpenArgs};
use skilltrial_chain::{anchor_key, pda};
use skilltrial_core::hosted::{LANDING_ALLOWANCE_SECS, MAX_DEADLINE_SECS};
use skilltrial_core::manifest;
use skilltrial_core::money::MicroUsd;
use skilltrial_engine::engine;
use solana_signer::Signer;

use crate::cli::{Global, OpenArgs};
use crate::commands::chain::{self, sol, when};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

/// A Run account's size: its discriminator and its space.
const RUN_ACCOUNT_BYTES: usize = 8 + skilltrial_chain::account::RUN_SPACE;
/// The base fee of a transaction with one signature.
const SIGNATURE_FEE: u64 = 5_000;

fn refused(message: String) -> CliError {
    CliError::Rejected(anyhow::anyhow!(message))
}

/// What `open` did: its JSON document and its text (what the escrow is, nothing about who runs
/// it: `submit` prints this text before saying the runner registered it).
#[derive(Debug)]
pub struct Opened {
    pub doc: serde_json::Value,
    pub text: String,
    /// The Run account's address.
    pub run: String,
    /// The escrowed run's manifest hash.
    pub manifest: String,
}

pub fn run(args: &OpenArgs, global: &Global) -> Result<Status, CliError> {
    let opened = escrow(args, global)?;
    if global.json {
        output::json(&opened.doc)?;
    } else {
        output::text(&format!("{}{}", opened.text, next_steps(&opened)))?;
    }
    Ok(Status::Ok)
}

/// What an escrow alone leads to. `open` registers the run with no runner, and a runner daemon
/// executes only the runs registered with it (`submit`): saying "the runner executes it" here
/// would promise what nothing has arranged.
fn next_steps(opened: &Opened) -> String {
    let run = &opened.run;
    format!(
        "  escrowed only: no runner executes it until it is registered with one; `skilltrial submit --manifest {} --runner <runner URL>` uploads its inputs and registers it (the escrow is not opened again)\n  \
         watch it: skilltrial chain-status {run}; not run by the deadline, take it all back: skilltrial refund {run}\n",
        opened.manifest
    )
}

/// Opens the escrow of `args.manifest` (or finds it open), asking first unless `--yes`.
pub fn escrow(args: &OpenArgs, global: &Global) -> Result<Opened, CliError> {
    // Every local check first: a bad flag or an unfit manifest costs no RPC call.
    let runner = skilltrial_chain::host_key(&args.runner);
    let deadline_in = args.deadline;
    if deadline_in > MAX_DEADLINE_SECS {
        return Err(refused(format!(
            "--deadline {deadline_in}s: at most 7d (the program's limit)"
        )));
    }
    let layout = state::layout(global)?;
    let store = state::store(&layout)?;
    let manifest_ref = state::run_id(&layout, &args.manifest)?;
    let inputs = engine::load_inputs(&store, &manifest_ref)?;
    let m = &inputs.manifest;
    let Some(rate) = &m.sol_usd else {
        return Err(refused(format!(
            "manifest {}: no SOL/USD rate is pinned in it, so its cost cannot be escrowed in lamports; plan it with --sol-usd <USD per SOL>",
            inputs.hash.hex()
        )));
    };
    let (trials, totals) = manifest::trials(m, &inputs.pack, inputs.a.as_ref(), inputs.b.as_ref())
        .map_err(|e| CliError::Rejected(e.into()))?;
    let terms = skilltrial_core::hosted::Terms::of(m, &trials)
        .map_err(|e| refused(format!("manifest {}: {e}", inputs.hash.hex())))?;
    let planned = terms.planned_trials;
    let largest = terms.largest_reserve;
    let per_request_cap = terms.per_request_cap.0;

    let session = chain::connect(&args.solana, global)?;
    let wallet = session.signer()?;
    let user = wallet.pubkey();
    let url = session.chain.url().to_owned();
    let config = session
        .chain
        .config()
        ?
        .ok_or_else(|| {
            CliError::Environment(anyhow::anyhow!(
                "{url}: the SkillTrial program has no config on this cluster (an operator runs `skilltrial admin init`; `skilltrial localnet` starts a cluster with one)"
            ))
        })?;
    if config.runner != anchor_key(&runner) {
        return Err(refused(format!(
            "--runner {runner}: the program's config names runner {}; open only with the runner it names",
            config.runner
        )));
    }
    let fee = config.fee_per_trial;
    let escrow = terms
        .escrow(fee)
        .ok_or_else(|| refused("the escrow overflows u64 lamports".to_owned()))?;
    // The program counts the deadline from when the transaction executes, a few seconds (or,
    // resumed after a kill, longer) after it is signed: exactly the minimum could never pass.
    let least = config
        .min_deadline_secs
        .saturating_add(LANDING_ALLOWANCE_SECS);
    if deadline_in < least {
        return Err(refused(format!(
            "--deadline {deadline_in}s: the program's config requires at least {} s from when the escrow lands; give at least {least}s (the minimum plus {LANDING_ALLOWANCE_SECS} s for the transaction to land)",
            config.min_deadline_secs
        )));
    }
    let now = session.chain.cluster_time()?;
    let deadline = now
        .checked_add(deadline_in)
        .ok_or_else(|| refused("--deadline overflows".to_owned()))?;
    let manifest_hash = inputs.hash.0;
    let run_address = pda::run(&user, &manifest_hash);

    // One Run per wallet and manifest: a second `open` shows the first, whichever process sent it.
    if let Some(existing) = session.chain.run(&run_address)? {
        let r = &existing.account.run;
        return Ok(Opened {
            doc: json!({
                "run": run_address.to_string(),
                "already_open": true,
                "signature": null,
                "escrow_lamports": r.escrowed,
                "deadline": when(r.deadline),
            }),
            text: format!(
                "already open: run {run_address} escrows {} for this manifest and wallet (see `skilltrial chain-status {run_address}`)\n",
                sol(r.escrowed)
            ),
            run: run_address.to_string(),
            manifest: inputs.hash.hex(),
        });
    }

    let balance = session.chain.balance(&user)?;
    let rent = session.chain.rent_exempt_minimum(RUN_ACCOUNT_BYTES)?;
    // The escrow, the Run account's rent (returned at refund or close) and one signature.
    let needed = escrow
        .checked_add(rent)
        .and_then(|n| n.checked_add(SIGNATURE_FEE))
        .ok_or_else(|| refused("the escrow overflows u64 lamports".to_owned()))?;
    if balance < needed {
        return Err(refused(format!(
            "your wallet {user} holds {}; opening this run needs {} (escrow {}, the Run account's rent {}, and the fee)",
            sol(balance),
            sol(needed),
            sol(escrow),
            sol(rent)
        )));
    }
    let summary = format!(
        "manifest   {}\n\
         trials     {planned}, each capped at {} (its upper cost {largest} at {} per SOL, pinned {}, source: {})\n\
         fee        {} per executed trial (the program's config)\n\
         escrow     {} now; what is not used comes back (finalize, or refund after the deadline)\n\
         upper cost {} if every request used its whole bound\n\
         runner     {runner}\n\
         deadline   {} (in {} s)\n\
         wallet     {user} on {url}, balance {}\n",
        inputs.hash.hex(),
        sol(per_request_cap),
        MicroUsd(rate.usd_micros_per_sol),
        rate.at,
        rate.source,
        sol(fee),
        sol(escrow),
        totals
            .upper_cost
            .map_or_else(|| "unknown".to_owned(), |c| c.to_string()),
        when(deadline),
        deadline_in,
        sol(balance),
    );
    crate::commands::progress::notice(summary.trim_end());
    if !args.yes {
        approve(&format!("Escrow {}?", sol(escrow)))?;
    }
    let instruction = ix::run_open(
        &user,
        RunOpenArgs {
            manifest_hash,
            planned_trials: planned,
            per_request_cap,
            escrow,
            deadline,
            expected_fee_per_trial: fee,
            expected_runner: anchor_key(&runner),
        },
    );
    let sent = session.send(&format!("run_open:{run_address}"), &wallet, &[instruction])?;
    // What is reported is what the chain holds (a resumed transaction carries the amounts and
    // deadline it was signed with, not this invocation's).
    let live = session
        .chain
        .run(&run_address)
        ?
        .ok_or_else(|| {
            CliError::Environment(anyhow::anyhow!(
                "transaction {} landed but {} shows no Run at {run_address} yet; check with `skilltrial chain-status {run_address}`",
                sent.signature,
                session.chain.url()
            ))
        })?;
    let (escrow, deadline, per_request_cap, fee) = (
        live.account.run.escrowed,
        live.account.run.deadline,
        live.account.run.per_request_cap,
        live.account.run.fee_per_trial,
    );
    Ok(Opened {
        doc: json!({
            "run": run_address.to_string(),
            "already_open": false,
            "signature": sent.signature.to_string(),
            "manifest_hash": inputs.hash.hex(),
            "planned_trials": planned,
            "per_request_cap_lamports": per_request_cap,
            "fee_per_trial_lamports": fee,
            "escrow_lamports": escrow,
            "deadline": when(deadline),
            "deadline_unix": deadline,
            "runner": runner.to_string(),
            "sol_usd": rate,
        }),
        text: format!(
            "opened run {run_address}\n  escrowed {} (transaction {})\n",
            sol(escrow),
            sent.signature
        ),
        run: run_address.to_string(),
        manifest: inputs.hash.hex(),
    })
}

/// Asks on the terminal before anything is signed; refuses without one (`--yes` approves in
/// scripts).
pub fn approve(question: &str) -> Result<(), CliError> {
    crate::commands::input::ask_yes(
        question,
        " Type y (or yes) to sign: ",
        "Approve with --yes (there is no terminal to ask on); nothing was signed",
        "not approved: nothing signed, nothing sent",
    )
}

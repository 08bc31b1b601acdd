//! `skilltrial open --manifest <hash> --runner <pubkey>`: escrow a planned run's upper cost on-chain.
//!
//! Everything the program will check is checked here first, so that a refusal costs nothing:
//! the manifest pins a SOL/USD rate (`plan --sol-usd`), the config exists and names the runner
//! the user agreed to, the deadline is within the config's bounds. The escrow is
//! `planned trials × (per-request cap + fee)`, the cap being the largest trial's upper cost at the
//! pinned rate, rounded up to the lamport. Nothing is signed before the person (or `--yes`)
//! approves the amounts shown.

use skilltrial_core::money::MicroUsd;
use skilltrial_engine::engine;
use skilltrial_runner::client::escrow::{self, Escrowed};

use crate::cli::{Global, OpenArgs};
use crate::commands::chain::{self, sol, when};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

/// What `open` did: the escrow (its `--json` document), and the manifest it escrows.
#[derive(Debug)]
struct Opened {
    escrowed: Escrowed,
    /// The escrowed run's manifest hash.
    manifest: String,
}

pub fn run(args: &OpenArgs, global: &Global) -> Result<Status, CliError> {
    let opened = escrow(args, global)?;
    if global.json {
        // Through a JSON value: its keys sorted, as this document has always had them.
        output::json(&serde_json::to_value(&opened.escrowed).map_err(anyhow::Error::from)?)?;
    } else {
        output::text(&format!(
            "{}{}",
            escrowed_text(&opened.escrowed),
            next_steps(&opened)
        ))?;
    }
    Ok(Status::Ok)
}

/// What an escrow alone leads to. `open` registers the run with no runner, and a runner daemon
/// executes only the runs registered with it (`submit`): saying "the runner executes it" here
/// would promise what nothing has arranged.
fn next_steps(opened: &Opened) -> String {
    let run = opened.escrowed.run();
    format!(
        "  escrowed only: no runner executes it until it is registered with one; `skilltrial submit --manifest {} --runner <runner URL>` uploads its inputs and registers it (the escrow is not opened again)\n  \
         watch it: skilltrial chain-status {run}; not run by the deadline, take it all back: skilltrial refund {run}\n",
        opened.manifest
    )
}

/// Opens the escrow of `args.manifest` (or finds it open), asking first unless `--yes`: the
/// manifest's terms from the store, every check the program will make, the amounts shown and
/// approved, then the transaction (`skilltrial_runner::client::escrow`).
fn escrow(args: &OpenArgs, global: &Global) -> Result<Opened, CliError> {
    // Every local check first: a bad flag or an unfit manifest costs no RPC call.
    let runner = skilltrial_chain::host_key(&args.runner);
    escrow::deadline_within_limit(args.deadline)?;
    let layout = state::layout(global)?;
    let store = state::store(&layout)?;
    let manifest_ref = state::run_id(&layout, &args.manifest)?;
    let inputs = engine::load_inputs(&store, &manifest_ref)?;
    let plan = escrow::plan(&inputs, runner, args.deadline)?;
    let manifest = plan.manifest.hex();
    let session = chain::connect(&args.solana, global)?;
    let escrowed = match plan.prepare(&session)? {
        escrow::Prepared::AlreadyOpen(open) => Escrowed::AlreadyOpen(open),
        escrow::Prepared::Ready(ready) => {
            approve_escrow(&ready, args.yes)?;
            Escrowed::Opened(ready.open(&session)?)
        }
    };
    Ok(Opened { escrowed, manifest })
}

/// Shows what would be signed, and asks unless `yes` (`--yes`).
pub fn approve_escrow(ready: &escrow::Ready, yes: bool) -> Result<(), CliError> {
    let plan = &ready.plan;
    let (terms, rate, checked) = (&plan.terms, &plan.rate, &ready.checked);
    let summary = format!(
        "manifest   {}\n\
         trials     {}, each capped at {} (its upper cost {} at {} per SOL, pinned {}, source: {})\n\
         fee        {} per executed trial (the program's config)\n\
         escrow     {} now; what is not used comes back (finalize, or refund after the deadline)\n\
         upper cost {} if every request used its whole bound\n\
         runner     {}\n\
         deadline   {} (in {} s)\n\
         wallet     {} on {}, balance {}\n",
        plan.manifest.hex(),
        terms.planned_trials,
        sol(terms.per_request_cap.0),
        terms.largest_reserve,
        MicroUsd(rate.usd_micros_per_sol),
        rate.at,
        rate.source,
        sol(checked.fee_per_trial),
        sol(checked.escrow),
        plan.totals
            .upper_cost
            .map_or_else(|| "unknown".to_owned(), |c| c.to_string()),
        plan.runner,
        when(checked.deadline),
        plan.deadline_in,
        checked.user,
        ready.cluster,
        sol(checked.balance),
    );
    crate::commands::progress::notice(summary.trim_end());
    if !yes {
        approve(&format!("Escrow {}?", sol(checked.escrow)))?;
    }
    Ok(())
}

/// What an escrow is, nothing about who runs it: `submit` prints this text before saying the
/// runner registered it.
pub fn escrowed_text(escrowed: &Escrowed) -> String {
    match escrowed {
        Escrowed::AlreadyOpen(open) => format!(
            "already open: run {} escrows {} for this manifest and wallet (see `skilltrial chain-status {}`)\n",
            open.run,
            sol(open.escrow_lamports),
            open.run
        ),
        Escrowed::Opened(opened) => format!(
            "opened run {}\n  escrowed {} (transaction {})\n",
            opened.run,
            sol(opened.escrow_lamports),
            opened.signature
        ),
    }
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

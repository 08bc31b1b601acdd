//! `skilltrial open --manifest <hash> --runner <pubkey>`: escrow a planned run's upper cost on-chain.
//!
//! Everything the program will check is checked here first, so that a refusal costs nothing:
//! the manifest pins a SOL/USD rate (`plan --sol-usd`), the config exists and names the runner
//! the user agreed to, the deadline is within the config's bounds. The escrow is
//! `planned trials × (per-request cap + fee)`, the cap being the largest trial's upper cost at the
//! pinned rate, rounded up to the lamport. Nothing is signed before the person (or `--yes`)
//! approves the amounts shown.

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_chain::escrow;
use skilltrial_core::manifest;
use skilltrial_core::money::MicroUsd;
use skilltrial_engine::engine;
use solana_signer::Signer;

use crate::cli::{Global, OpenArgs};
use crate::commands::chain::{self, sol, when};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

fn refused(message: String) -> CliError {
    CliError::Rejected(anyhow::anyhow!(message))
}

/// `open --json`: the escrow opened, or the one already open for this manifest and wallet
/// (then only `run`, `already_open`, `signature`, `escrow_lamports` and `deadline`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Escrowed {
    /// The Run account's address.
    pub run: String,
    /// True when this wallet's escrow of this manifest was already open: nothing was signed.
    pub already_open: bool,
    /// The open transaction; null when it was already open.
    pub signature: Option<String>,
    /// The escrowed manifest's hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_trials: Option<u16>,
    /// The largest trial's upper cost at the pinned rate, rounded up to the lamport.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_request_cap_lamports: Option<u64>,
    /// The program's fee per executed trial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fee_per_trial_lamports: Option<u64>,
    /// What the Run account escrows: planned trials × (cap + fee).
    pub escrow_lamports: u64,
    /// RFC 3339 (UTC, cluster time).
    pub deadline: String,
    /// The deadline in Unix seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_unix: Option<i64>,
    /// The runner allowed to settle it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// The SOL/USD rate the manifest pins, which the cap is computed at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sol_usd: Option<manifest::SolUsd>,
}

/// What `open` did: its JSON document and its text (what the escrow is, nothing about who runs
/// it: `submit` prints this text before saying the runner registered it).
#[derive(Debug)]
pub struct Opened {
    pub document: Escrowed,
    /// The same document as a JSON value, which `submit` embeds in its own.
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
        output::json(&opened.document)?;
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

/// Opens the escrow of `args.manifest` (or finds it open), asking first unless `--yes`: the
/// manifest's terms from the store, every check the program will make
/// (`skilltrial_chain::escrow::prepare_open`), the amounts shown and approved, then the
/// transaction (`escrow::open`).
pub fn escrow(args: &OpenArgs, global: &Global) -> Result<Opened, CliError> {
    // Every local check first: a bad flag or an unfit manifest costs no RPC call.
    let runner = skilltrial_chain::host_key(&args.runner);
    let deadline_in = args.deadline;
    if deadline_in > skilltrial_core::hosted::MAX_DEADLINE_SECS {
        return Err(escrow::OpenError::DeadlineTooFar(deadline_in).into());
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

    let session = chain::connect(&args.solana, global)?;
    let wallet = session.signer()?;
    let user = wallet.pubkey();
    let request = escrow::OpenRequest {
        manifest_hash: inputs.hash.0,
        terms,
        runner,
        deadline_in,
    };
    let ready = match escrow::prepare_open(&session, &user, &request)? {
        escrow::Prepared::AlreadyOpen {
            address,
            escrowed,
            deadline,
        } => {
            return Ok(Opened::new(
                Escrowed {
                    run: address.to_string(),
                    already_open: true,
                    signature: None,
                    manifest_hash: None,
                    planned_trials: None,
                    per_request_cap_lamports: None,
                    fee_per_trial_lamports: None,
                    escrow_lamports: escrowed,
                    deadline: when(deadline),
                    deadline_unix: None,
                    runner: None,
                    sol_usd: None,
                },
                format!(
                    "already open: run {address} escrows {} for this manifest and wallet (see `skilltrial chain-status {address}`)\n",
                    sol(escrowed)
                ),
                inputs.hash.hex(),
            ));
        }
        escrow::Prepared::Ready(ready) => ready,
    };
    let summary = format!(
        "manifest   {}\n\
         trials     {}, each capped at {} (its upper cost {} at {} per SOL, pinned {}, source: {})\n\
         fee        {} per executed trial (the program's config)\n\
         escrow     {} now; what is not used comes back (finalize, or refund after the deadline)\n\
         upper cost {} if every request used its whole bound\n\
         runner     {runner}\n\
         deadline   {} (in {} s)\n\
         wallet     {user} on {}, balance {}\n",
        inputs.hash.hex(),
        terms.planned_trials,
        sol(terms.per_request_cap.0),
        terms.largest_reserve,
        MicroUsd(rate.usd_micros_per_sol),
        rate.at,
        rate.source,
        sol(ready.fee_per_trial),
        sol(ready.escrow),
        totals
            .upper_cost
            .map_or_else(|| "unknown".to_owned(), |c| c.to_string()),
        when(ready.deadline),
        deadline_in,
        session.chain.url(),
        sol(ready.balance),
    );
    crate::commands::progress::notice(summary.trim_end());
    if !args.yes {
        approve(&format!("Escrow {}?", sol(ready.escrow)))?;
    }
    let opened = escrow::open(&session, &wallet, &ready)?;
    let run = &opened.live.account.run;
    let run_address = ready.address;
    Ok(Opened::new(
        Escrowed {
            run: run_address.to_string(),
            already_open: false,
            signature: Some(opened.signature.clone()),
            manifest_hash: Some(inputs.hash.hex()),
            planned_trials: Some(terms.planned_trials),
            per_request_cap_lamports: Some(run.per_request_cap),
            fee_per_trial_lamports: Some(run.fee_per_trial),
            escrow_lamports: run.escrowed,
            deadline: when(run.deadline),
            deadline_unix: Some(run.deadline),
            runner: Some(runner.to_string()),
            sol_usd: Some(rate.clone()),
        },
        format!(
            "opened run {run_address}\n  escrowed {} (transaction {})\n",
            sol(run.escrowed),
            opened.signature
        ),
        inputs.hash.hex(),
    ))
}

impl Opened {
    fn new(document: Escrowed, text: String, manifest: String) -> Self {
        Opened {
            doc: serde_json::to_value(&document).unwrap_or(serde_json::Value::Null),
            run: document.run.clone(),
            document,
            text,
            manifest,
        }
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

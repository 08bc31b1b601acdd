//! `skilltrial runner serve`: the hosted runner daemon (the `skilltrial-runner` crate).

use crate::cli::{Global, RunnerCommand, ServeArgs};
use crate::commands::chain;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

pub fn run(command: &RunnerCommand, global: &Global) -> Result<Status, CliError> {
    match command {
        RunnerCommand::Serve(args) => serve(args, global),
    }
}

fn serve(args: &ServeArgs, global: &Global) -> Result<Status, CliError> {
    let session = chain::connect(&args.solana, global)?;
    let runner = session.wallet()?;
    let genesis = session.chain.genesis_hash().map_err(chain::rpc_error)?;
    // A daemon whose key is not the config's runner refuses every registration: say so now.
    if let Some(config) = session.chain.config().map_err(chain::rpc_error)?
        && config.runner != skilltrial_chain::anchor_key(&solana_signer::Signer::pubkey(&runner))
    {
        skilltrial_runner::log(&format!(
            "warning: -k {} is not the runner the program's config names ({}): every run will be refused; start with the runner keypair",
            solana_signer::Signer::pubkey(&runner),
            config.runner
        ));
    }
    let chain_id = skilltrial_runner::chain_id_of(&genesis).to_owned();
    if let Some(profiles) = &args.profiles {
        skilltrial_core::profile::all(Some(profiles)).map_err(|e| {
            CliError::Rejected(anyhow::anyhow!("--profiles {}: {e}", profiles.display()))
        })?;
    }
    let state_dir = match &args.state {
        Some(dir) => dir.clone(),
        None => state::layout(global)?.root.join("runner"),
    };
    let rate = skilltrial_runner::rate::OperatorRate::new(
        args.sol_usd.0,
        args.sol_usd_tolerance_bps,
        args.max_rate_age,
    )
    .map_err(|e| CliError::Rejected(anyhow::anyhow!("{e}")))?;
    let config = skilltrial_runner::Config {
        origin: args.public_origin.clone(),
        bind: args.bind,
        state_dir,
        rpc_url: session.chain.url().to_owned(),
        commitment: session.chain.commitment(),
        chain_id,
        profiles: args.profiles.clone(),
        max_runs: usize::from(args.max_runs),
        batch: args.batch,
        fees: session.fees,
        rate,
    };
    let app = skilltrial_runner::App::open(config, runner)
        .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?;
    let json = global.json;
    skilltrial_runner::server::serve(app, |ready| {
        // One line (a supervisor or a test reads it as the ready signal).
        let printed = if json {
            serde_json::to_string(ready)
                .map_err(anyhow::Error::from)
                .and_then(|line| output::text(&format!("{line}\n")))
        } else {
            output::text(&format!(
                "runner {} serving {} (listening on {}, chain {}, state {})\n",
                ready.runner, ready.origin, ready.listening, ready.chain_id, ready.state_dir
            ))
        };
        if printed.is_err() {
            skilltrial_runner::log("could not print the start line");
        }
    })
    .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?;
    Ok(Status::Ok)
}

//! `skilltrial runner serve`: the hosted runner daemon (the `skilltrial-runner` crate), and
//! `skilltrial runner buyback`: one buyback now.

use std::time::Duration;

use skilltrial_runner::buyback::{self, Outcome};
use skilltrial_runner::{BuybackSettings, VenueChoice};

use crate::cli::{BuybackArgs, BuybackOnceArgs, Global, RunnerCommand, ServeArgs};
use crate::commands::chain;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

pub fn run(command: &RunnerCommand, global: &Global) -> Result<Status, CliError> {
    match command {
        RunnerCommand::Serve(args) => serve(args, global),
        RunnerCommand::Buyback(args) => buyback_now(args, global),
    }
}

/// The buyback settings `args` ask for on the cluster `chain_id` (`None`: off).
fn buyback_settings(
    args: &BuybackArgs,
    chain_id: &str,
    fees: skilltrial_chain::send::Fees,
) -> Option<BuybackSettings> {
    let venue = match (args.buyback_venue.as_str(), chain_id) {
        ("off", _) => return None,
        ("localnet", _) | ("auto", "localnet") => VenueChoice::LocalPool,
        _ => VenueChoice::Jupiter {
            base: args.jupiter_url.clone(),
            api_key: std::env::var("JUPITER_API_KEY")
                .ok()
                .filter(|k| !k.trim().is_empty()),
        },
    };
    Some(BuybackSettings {
        venue,
        every: Duration::from_secs(args.buyback_every),
        terms: buyback::Terms {
            min_lamports: args.buyback_min_lamports,
            slippage_bps: args.buyback_slippage_bps,
            fees,
        },
    })
}

fn buyback_now(args: &BuybackOnceArgs, global: &Global) -> Result<Status, CliError> {
    let session = chain::connect(&args.solana, global)?;
    // The runner's own pending transactions (a killed buyback among them) end first.
    let runner = session.signer()?;
    let genesis = session.chain.genesis_hash()?;
    let chain_id = skilltrial_runner::chain_id_of(&genesis);
    let Some(settings) = buyback_settings(&args.buyback, chain_id, session.fees) else {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "--buyback-venue off: there is nothing to do"
        )));
    };
    let venue = settings
        .venue
        .open(skilltrial_chain::rpc::Chain::new(
            &session.chain.endpoint(),
            session.chain.commitment(),
        ))
        .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?;
    let mut outbox = session.outbox()?;
    let progress = |line: &str| crate::commands::progress::notice(line);
    let outcome = buyback::buyback_once(
        &session.chain,
        &mut outbox,
        &runner,
        venue.as_ref(),
        settings.terms,
        &progress,
    )
    .map_err(|e| match e {
        buyback::BuybackError::Setup(why) => CliError::Rejected(anyhow::anyhow!("{why}")),
        buyback::BuybackError::Transient(why) => CliError::Environment(anyhow::anyhow!("{why}")),
    })?;
    if global.json {
        // One line, as it has always been printed.
        let line = serde_json::to_string(&outcome.report(venue.name())).map_err(|e| {
            CliError::Environment(anyhow::anyhow!("cannot encode the JSON output: {e}"))
        })?;
        output::text(&format!("{line}\n"))?;
        return Ok(Status::Ok);
    }
    let text = match outcome {
        Outcome::Done {
            signature,
            lamports_in,
            quoted_out,
            tokens_burned,
            surplus,
        } => format!(
            "bought back and burned {tokens_burned} $SKTRIAL base units with {lamports_in} lamports of fees through the {} (quoted {quoted_out}) in {signature}; {surplus}\n",
            venue.name()
        ),
        Outcome::NotDue { next_at } => format!(
            "no buyback yet: the program's interval allows the next one at {} (cluster time)\n",
            skilltrial_core::time::rfc3339(next_at)
        ),
        Outcome::TooLittle {
            unreleased,
            minimum,
        } => format!(
            "no buyback: {unreleased} lamports of fees are unreleased, below the minimum of {minimum} (--buyback-min-lamports)\n"
        ),
    };
    output::text(&text)?;
    Ok(Status::Ok)
}

fn serve(args: &ServeArgs, global: &Global) -> Result<Status, CliError> {
    if args.max_runs == 0 && args.database.is_none() {
        return Err(CliError::Environment(anyhow::anyhow!(
            "--max-runs 0: a daemon alone on its state would execute nothing; 0 is for a worker beside others on one --database"
        )));
    }
    let session = chain::connect(&args.solana, global)?;
    let runner = session.wallet()?;
    let genesis = session.chain.genesis_hash()?;
    // A daemon whose key is not the config's runner refuses every registration: say so now.
    if let Some(config) = session.chain.config()?
        && config.runner != skilltrial_chain::anchor_key(&solana_signer::Signer::pubkey(&runner))
    {
        tracing::warn!(
            "-k {} is not the runner the program's config names ({}): every run will be refused; start with the runner keypair",
            solana_signer::Signer::pubkey(&runner),
            config.runner
        );
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
    let buyback = buyback_settings(&args.buyback, &chain_id, session.fees);
    let config = skilltrial_runner::Config {
        buyback,
        origin: args.public_origin.clone(),
        bind: args.bind,
        state_dir,
        rpc_url: session.chain.endpoint(),
        commitment: session.chain.commitment(),
        chain_id,
        profiles: args.profiles.clone(),
        max_runs: usize::from(args.max_runs),
        max_concurrency: args.max_concurrency,
        batch: args.batch,
        fees: session.fees,
        rate,
        database: args.database.as_ref().map(|url| {
            let mut options = skilltrial_runner::pg::PgOptions::new(url);
            options.ca_file.clone_from(&args.database_ca);
            options.pool_size = usize::from(args.database_pool);
            options.lease = args.lease;
            options
        }),
    };
    let app = if args.demo_model {
        let demo = skilltrial_runner::profiles::Profiles::demo_model()
            .map_err(|e| CliError::Environment(anyhow::anyhow!("--demo-model: {e}")))?;
        skilltrial_runner::App::open_with(config, runner, demo)
    } else {
        skilltrial_runner::App::open(config, runner)
    }
    .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?;
    let json = global.json;
    skilltrial_runner::http::serve(app, |ready| {
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
            tracing::error!("could not print the start line");
        }
    })
    .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?;
    Ok(Status::Ok)
}

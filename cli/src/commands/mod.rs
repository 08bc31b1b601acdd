//! One module per subcommand; `dispatch` routes a parsed command line to it.

/// A command that reaches a Solana cluster or a runner daemon: run in a full build; in a build
/// with the local commands only, parsed all the same (one command line, one `--help`) and
/// answered with [`not_built`].
macro_rules! chain_only {
    ($what:expr, $args:expr => $call:expr) => {{
        #[cfg(feature = "chain")]
        let done = $call;
        #[cfg(not(feature = "chain"))]
        let done = {
            let _ = &$args;
            Err($crate::commands::not_built($what))
        };
        done
    }};
}

#[cfg(feature = "chain")]
mod admin;
#[cfg(feature = "chain")]
mod anchor;
mod cancel;
#[cfg(feature = "chain")]
mod chain;
mod check;
mod compare;
mod demo;
pub(crate) mod documents;
#[cfg(feature = "chain")]
mod escrow;
pub(crate) mod gate;
mod info;
mod input;
mod key;
mod ledger;
mod localnet;
#[cfg(feature = "localnet")]
mod localnet_impl;
#[cfg(feature = "chain")]
mod open;
mod pack;
#[cfg(feature = "chain")]
mod pack_add_task;
mod pack_author;
mod plan;
mod progress;
pub mod purge;
mod recheck;
#[cfg(feature = "chain")]
pub(crate) mod remote;
mod report;
mod resolve;
mod run;
#[cfg(feature = "chain")]
mod runner;
mod status;
mod summary;
mod validate;
mod verify;
#[cfg(feature = "chain")]
mod verify_chain;

use crate::cli::{Cli, Command};
use crate::exit::{CliError, Status};

/// What a command that reaches a Solana cluster or a runner daemon says in a build without them
/// (`scripts/try.sh` builds the local commands only): which command, and how to get it.
#[cfg_attr(feature = "chain", allow(dead_code))]
pub fn not_built(what: &str) -> CliError {
    CliError::Environment(anyhow::anyhow!(
        "{what}: this skilltrial was built with the local commands only (`scripts/try.sh` builds it so, without the Solana client); every command is in `cargo install --locked --path cli`, or `cargo build --release --locked -p skilltrial-cli`"
    ))
}

/// Runs the parsed command.
pub fn dispatch(cli: Cli) -> Result<Status, CliError> {
    let global = &cli.global;
    match cli.command {
        Command::Validate(args) => validate::run(&args, global),
        Command::Info => info::run(global),
        Command::Pack(command) => pack::run(command, global),
        Command::Check(args) => check::run(&args, global),
        Command::Plan(args) => plan::run(&args, global),
        Command::Run(args) => run::run(&args, global),
        Command::Status(args) if args.remote => {
            chain_only!("status --remote", args => remote::status(&args, global))
        }
        Command::Status(args) => status::run(&crate::cli::RunRef { run: args.run }, global),
        Command::Cancel(args) => match args.chain {
            Some(run) => {
                chain_only!("cancel --chain", run => escrow::cancel(skilltrial_chain::host_key(&run), &args.solana, global))
            }
            None => cancel::run(&crate::cli::RunRef { run: args.run }, global),
        },
        Command::Resolve(args) => resolve::run(&args, global),
        Command::Recheck(args) => recheck::run(&args, global),
        Command::Purge(args) => purge::run(&args, global),
        Command::Key(command) => key::run(&command, global),
        Command::Report(args) if args.remote => {
            chain_only!("report --remote", args => remote::report(&args, global))
        }
        Command::Report(args) => report::run(&args, global),
        Command::Compare(args) => compare::run(&args, global),
        Command::Ledger(args) => ledger::run(&args, global),
        Command::Gate(args) => gate::run(&args, global),
        Command::Verify(args) => verify::run(&args, global),
        Command::Demo(args) => demo::run(&args, global),
        Command::Open(args) => chain_only!("open", args => open::run(&args, global)),
        Command::ChainStatus(args) => {
            chain_only!("chain-status", args => escrow::status(&args, global))
        }
        Command::Refund(args) => chain_only!("refund", args => escrow::refund(&args, global)),
        Command::Close(args) => chain_only!("close", args => escrow::close(&args, global)),
        Command::Anchor(args) => chain_only!("anchor", args => anchor::run(&args, global)),
        Command::Admin(command) => chain_only!("admin", command => admin::run(command, global)),
        Command::BuybackLog(args) => {
            chain_only!("buyback-log", args => admin::buyback_log(&args, global))
        }
        Command::Localnet(args) => localnet::run(&args, global),
        Command::Submit(args) => chain_only!("submit", args => remote::submit(&args, global)),
        Command::Runner(command) => chain_only!("runner", command => runner::run(&command, global)),
    }
}

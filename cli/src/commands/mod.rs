//! One module per subcommand; `dispatch` routes a parsed command line to it.

mod admin;
mod anchor;
mod cancel;
mod chain;
mod check;
mod compare;
mod demo;
mod escrow;
pub(crate) mod gate;
mod info;
mod input;
mod key;
mod ledger;
mod localnet;
#[cfg(feature = "localnet")]
mod localnet_impl;
mod open;
mod pack;
mod pack_author;
mod plan;
mod progress;
pub mod purge;
mod recheck;
pub(crate) mod remote;
mod report;
mod resolve;
mod run;
mod runner;
mod status;
mod summary;
mod validate;
mod verify;

use crate::cli::{Cli, Command};
use crate::exit::{CliError, Status};

/// Runs the parsed command.
pub fn dispatch(cli: Cli) -> Result<Status, CliError> {
    match cli.command {
        Command::Validate(args) => validate::run(&args, &cli.global),
        Command::Info => info::run(&cli.global),
        Command::Pack(command) => pack::run(command, &cli.global),
        Command::Check(args) => check::run(&args, &cli.global),
        Command::Plan(args) => plan::run(&args, &cli.global),
        Command::Run(args) => run::run(&args, &cli.global),
        Command::Status(args) => {
            if args.remote {
                remote::status(&args, &cli.global)
            } else {
                status::run(&crate::cli::RunRef { run: args.run }, &cli.global)
            }
        }
        Command::Cancel(args) => match &args.chain {
            Some(run) => escrow::cancel(*run, &args.solana, &cli.global),
            None => cancel::run(
                &crate::cli::RunRef {
                    run: args.run.clone(),
                },
                &cli.global,
            ),
        },
        Command::Resolve(args) => resolve::run(&args, &cli.global),
        Command::Recheck(args) => recheck::run(&args, &cli.global),
        Command::Purge(args) => purge::run(&args, &cli.global),
        Command::Key(command) => key::run(&command, &cli.global),
        Command::Report(args) => {
            if args.remote {
                remote::report(&args, &cli.global)
            } else {
                report::run(&args, &cli.global)
            }
        }
        Command::Compare(args) => compare::run(&args, &cli.global),
        Command::Ledger(args) => ledger::run(&args, &cli.global),
        Command::Gate(args) => gate::run(&args, &cli.global),
        Command::Verify(args) => verify::run(&args, &cli.global),
        Command::Demo(args) => demo::run(&args, &cli.global),
        Command::Open(args) => open::run(&args, &cli.global),
        Command::ChainStatus(args) => escrow::status(&args, &cli.global),
        Command::Refund(args) => escrow::refund(&args, &cli.global),
        Command::Close(args) => escrow::close(&args, &cli.global),
        Command::Anchor(args) => anchor::run(&args, &cli.global),
        Command::Admin(command) => admin::run(command, &cli.global),
        Command::BuybackLog(args) => admin::buyback_log(&args, &cli.global),
        Command::Localnet(args) => localnet::run(&args, &cli.global),
        Command::Submit(args) => remote::submit(&args, &cli.global),
        Command::Runner(command) => runner::run(&command, &cli.global),
    }
}

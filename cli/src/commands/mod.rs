//! One module per subcommand; `dispatch` routes a parsed command line to it.

mod check;
mod info;
mod pack;
mod validate;

use crate::cli::{Cli, Command};
use crate::exit::{CliError, Status};

/// Runs the parsed command.
pub fn dispatch(cli: Cli) -> Result<Status, CliError> {
    match cli.command {
        Command::Validate(args) => validate::run(&args, &cli.global),
        Command::Info => info::run(&cli.global),
        Command::Pack(command) => pack::run(command, &cli.global),
        Command::Check(args) => check::run(&args, &cli.global),
    }
}

//! `skilltrial`: parse, run, print the error chain, exit with the mapped code.

mod cli;
mod commands;
mod exit;
#[cfg(feature = "chain")]
mod logs;
mod output;
mod state;

use std::process::ExitCode;

fn main() -> ExitCode {
    let parsed = match cli::parse(std::env::args_os().collect()) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    // Parsed, `--json` is known for sure; only a usage error has to look for it by hand.
    let json = parsed.global.json;
    // The daemon logs (through `tracing`); every other command writes only through `output`.
    #[cfg(feature = "chain")]
    if matches!(
        parsed.command,
        cli::Command::Runner(cli::RunnerCommand::Serve(_))
    ) {
        logs::init();
    }
    match commands::dispatch(parsed) {
        Ok(status) => status.into(),
        Err(error) => exit::report(&error, json),
    }
}

//! `skilltrial`: parse, run, print the error chain, exit with the mapped code.

mod cli;
mod commands;
mod exit;
mod output;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let json = args.iter().any(|a| a == "--json");
    let parsed = match cli::parse(args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    match commands::dispatch(parsed) {
        Ok(status) => status.into(),
        Err(error) => exit::report(&error, json),
    }
}

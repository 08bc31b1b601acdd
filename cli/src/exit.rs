//! The one map from outcomes and errors to exit codes, and how errors are shown.
//!
//! 0: success. 1: a check failed or an input was rejected. 2: usage or environment error.
//! 130: `run` stopped by Ctrl-C or SIGTERM (the run is resumable).

use std::io::Write;
use std::process::ExitCode;

use clap::error::ErrorKind as ClapKind;

/// How a command that ran to completion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Everything checked out.
    Ok,
    /// A check failed or an input was rejected; the output says which.
    CheckFailed,
    /// An input could not be found or read; the output says which.
    Environment,
    /// `run` stopped on Ctrl-C or SIGTERM; the run is left resumable.
    Interrupted,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        match status {
            Status::Ok => ExitCode::SUCCESS,
            Status::CheckFailed => ExitCode::from(1),
            Status::Environment => ExitCode::from(2),
            Status::Interrupted => ExitCode::from(INTERRUPTED_EXIT),
        }
    }
}

/// The exit code of a `run` stopped by Ctrl-C or SIGTERM (the first or a second), as shells
/// report an interrupted command.
pub const INTERRUPTED_EXIT: u8 = 130;

/// An error that stopped a command before it could report normally.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The environment (state directory, files, terminal, output stream) is not usable: exit 2.
    #[error("{0:#}")]
    Environment(#[from] anyhow::Error),
    /// An input was read but rejected (a malformed pack, an unreadable answer): exit 1.
    #[error("{0:#}")]
    Rejected(anyhow::Error),
}

/// Maps an engine error: a refusal about the run's inputs is a rejection (1); a journal or
/// store failure is the environment (2).
pub fn engine_error(e: skilltrial_runner::engine::EngineError) -> CliError {
    match e {
        skilltrial_runner::engine::EngineError::Refused(_) => CliError::Rejected(e.into()),
        other => CliError::Environment(other.into()),
    }
}

/// Prints a command error (text on stderr, or JSON on stdout) and returns its exit code.
pub fn report(error: &CliError, json: bool) -> ExitCode {
    match error {
        CliError::Environment(_) => {
            emit_error("environment", &error.to_string(), json);
            ExitCode::from(2)
        }
        CliError::Rejected(_) => {
            emit_error("rejected", &error.to_string(), json);
            ExitCode::from(1)
        }
    }
}

/// Prints a clap outcome: help and version go to stdout with exit 0, usage errors exit 2.
pub fn clap_error(error: &clap::Error, json: bool) -> ExitCode {
    match error.kind() {
        ClapKind::DisplayHelp | ClapKind::DisplayVersion => {
            let _ = error.print();
            ExitCode::SUCCESS
        }
        _ if json => {
            let message = error.render().to_string();
            emit_error("usage", message.trim(), true);
            ExitCode::from(2)
        }
        _ => {
            let _ = error.print();
            ExitCode::from(2)
        }
    }
}

fn emit_error(kind: &str, message: &str, json: bool) {
    if json {
        let body = serde_json::json!({ "error": { "kind": kind, "message": message } });
        let _ = writeln!(std::io::stdout().lock(), "{body}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "error: {message}");
    }
}

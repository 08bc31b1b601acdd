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
pub fn engine_error(e: skilltrial_engine::engine::EngineError) -> CliError {
    match e {
        skilltrial_engine::engine::EngineError::Refused(_) => CliError::Rejected(e.into()),
        other => CliError::Environment(other.into()),
    }
}

/// Prints a command error (text on stderr, or JSON on stdout) and returns its exit code.
pub fn report(error: &CliError, json: bool) -> ExitCode {
    match error {
        CliError::Environment(e) => {
            emit_error("environment", &chain_text(e), json);
            ExitCode::from(2)
        }
        CliError::Rejected(e) => {
            emit_error("rejected", &chain_text(e), json);
            ExitCode::from(1)
        }
    }
}

/// The error and its causes joined by ": ", each cause said once. A thiserror message that
/// embeds `{source}` while also marking it `#[source]` (the store's and the journal's errors do,
/// so that they read whole on their own) would otherwise be followed by that same cause again;
/// rusqlite's error is in turn followed by SQLite's, which restates it with its code. So a cause
/// already said, or one that only restates the cause before it, is left out: once, here, for
/// every error the CLI prints.
pub fn chain_text(error: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut previous = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        let restates = !previous.is_empty() && text.contains(previous.as_str());
        if !(out.contains(text.as_str()) || restates) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        previous = text;
    }
    out
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

#[cfg(test)]
mod tests {
    use super::chain_text;

    /// Like the store's and the journal's errors: the message embeds its source and also marks
    /// it as the source.
    #[derive(Debug, thiserror::Error)]
    #[error("store /tmp/q1: {source}")]
    struct Embeds {
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn regression_a_cause_embedded_in_its_error_is_said_once() {
        let io = std::io::Error::other("Is a directory (os error 21)");
        let error = anyhow::Error::from(Embeds { source: io }).context("cannot write the report");
        assert_eq!(
            chain_text(&error),
            "cannot write the report: store /tmp/q1: Is a directory (os error 21)"
        );
        // A chain of distinct causes keeps every one.
        let plain = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(chain_text(&plain), "outer: middle: inner");
    }
}

//! `skilltrial resolve <attempt> --retry --reason "…" | --release`. A retry on a cancelled run
//! is refused (it could never be sent); one the run later cannot send is closed as `not_run`.

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_core::outcome::Outcome;
use skilltrial_engine::journal::{JournalError, Resolution};

use crate::cli::{Global, ResolveArgs};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

/// `resolve --json`: how the unknown attempt was closed, and the attempt planned in its place.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Resolved {
    /// The attempt decided.
    pub attempt: String,
    /// Its outcome now: `interrupted` (its reserve counted as spent), or `infrastructure_error`
    /// when it already was one (nothing was spent).
    pub closed_as: &'static str,
    /// The new attempt `--retry` planned (the next `run` sends it); null with `--release`.
    pub new_attempt: Option<String>,
}

pub fn run(args: &ResolveArgs, global: &Global) -> Result<Status, CliError> {
    // clap has already made sure of exactly one of --retry / --release, and of a --reason that
    // says something with --retry.
    let resolution = match &args.reason {
        Some(reason) if args.retry => Resolution::Retry {
            reason: reason.clone(),
        },
        _ => Resolution::Release,
    };
    let layout = state::layout(global)?;
    let mut journal = state::existing_journal(&layout)?;
    // An infrastructure error keeps its outcome when retried (nothing was spent on it).
    let Some((_, attempt)) = journal.attempt(&args.attempt)? else {
        // Like a run id no run has: a usage error (exit 2), not a rejected decision.
        return Err(CliError::Environment(anyhow::anyhow!(
            "no attempt `{}` in {}: give an attempt id `skilltrial status` lists",
            args.attempt,
            journal.path().display()
        )));
    };
    let infrastructure = attempt.outcome == Some(Outcome::InfrastructureError);
    let new_attempt = journal
        .resolve(&args.attempt, &resolution)
        .map_err(refused)?;
    let closed_as = if infrastructure {
        "infrastructure_error"
    } else {
        "interrupted"
    };
    if global.json {
        output::json(&Resolved {
            attempt: args.attempt.clone(),
            closed_as,
            new_attempt,
        })?;
    } else {
        let text = match &new_attempt {
            Some(id) if infrastructure => format!(
                "attempt {} stays an infrastructure error (nothing was spent); new attempt {id} is planned and will be sent by the next `skilltrial run`\n",
                args.attempt
            ),
            Some(id) => format!(
                "attempt {} closed as interrupted (its reserve counted as spent); new attempt {id} is planned: the next `skilltrial run` sends it if the run's request cap, budget and time limit still allow, else closes it as not_run with the reason\n",
                args.attempt
            ),
            None => format!(
                "attempt {} closed as interrupted; its reserve is counted as spent\n",
                args.attempt
            ),
        };
        output::text(&text)?;
    }
    Ok(Status::Ok)
}

/// A decision the journal refuses (the attempt is not unknown, the run is cancelled) is a
/// rejection (exit 1); a journal that fails to answer is the environment (exit 2), as anywhere.
fn refused(e: JournalError) -> CliError {
    match e {
        JournalError::State(_) => CliError::Rejected(e.into()),
        other => other.into(),
    }
}

//! `skilltrial resolve <attempt> --retry --reason "…" | --release`. A retry on a cancelled run
//! is refused (it could never be sent); one the run later cannot send is closed as `not_run`.

use skilltrial_core::outcome::Outcome;
use skilltrial_engine::journal::Resolution;

use crate::cli::{Global, ResolveArgs};
use crate::commands::state;
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(args: &ResolveArgs, global: &Global) -> Result<Status, CliError> {
    let resolution = match (args.retry, args.release, &args.reason) {
        (true, false, Some(reason)) if !reason.trim().is_empty() => Resolution::Retry {
            reason: reason.trim().to_owned(),
        },
        (true, false, _) => {
            return Err(CliError::Environment(anyhow::anyhow!(
                "--retry needs a non-empty --reason"
            )));
        }
        (false, true, _) => Resolution::Release,
        _ => {
            return Err(CliError::Environment(anyhow::anyhow!(
                "give exactly one of --retry --reason \"...\" or --release"
            )));
        }
    };
    let layout = state::layout(global)?;
    let mut journal = state::existing_journal(&layout)?;
    // An infrastructure error keeps its outcome when retried (nothing was spent on it).
    let Some((_, attempt)) = journal
        .attempt(&args.attempt)
        .map_err(|e| CliError::Rejected(e.into()))?
    else {
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
        .map_err(|e| CliError::Rejected(e.into()))?;
    let closed_as = if infrastructure {
        "infrastructure_error"
    } else {
        "interrupted"
    };
    if global.json {
        output::json(
            &serde_json::json!({ "attempt": args.attempt, "closed_as": closed_as, "new_attempt": new_attempt }),
        )?;
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

//! `skilltrial cancel [run]`: stop new dispatches. The request in flight finishes. A run that
//! already finished or was cancelled is left as it is, and the output says so.

use skilltrial_engine::engine::run_is_live;
use skilltrial_engine::journal::RunStatus;

use crate::cli::{Global, RunRef};
use crate::commands::state::{self, short};
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(args: &RunRef, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let journal = state::existing_journal(&layout)?;
    let run = state::find_run(&journal, args.run.as_deref())?;
    if matches!(run.status, RunStatus::Finished | RunStatus::Cancelled) {
        // Nothing is left to stop: every trial already has its outcome.
        if global.json {
            // `cancel_requested` is the run's own flag (true for a cancelled run), and `live`
            // is always present, as in the other branch.
            output::json(&serde_json::json!({
                "run": run.id,
                "cancel_requested": run.cancel_requested,
                "status": run.status,
                "live": false,
            }))?;
        } else {
            output::text(&format!(
                "run {} is already {}: nothing to cancel\n",
                short(&run.id),
                run.status
            ))?;
        }
        return Ok(Status::Ok);
    }
    journal
        .request_cancel(&run.id)
        .map_err(anyhow::Error::from)?;
    let live = run_is_live(journal.path(), &run.id).map_err(anyhow::Error::from)?;
    if global.json {
        output::json(
            &serde_json::json!({ "run": run.id, "cancel_requested": true, "status": run.status, "live": live }),
        )?;
    } else if live {
        output::text(&format!(
            "cancel requested for run {}: no new request is sent; one already in flight finishes and its cost is kept; the trials not yet sent become not_run\n",
            short(&run.id),
        ))?;
    } else {
        output::text(&format!(
            "cancel recorded for run {} ({}, no process is running it): the next `skilltrial run` sends nothing and records the trials not yet sent as not_run\n",
            short(&run.id),
            run.status
        ))?;
    }
    Ok(Status::Ok)
}

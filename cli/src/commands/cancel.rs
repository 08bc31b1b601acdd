//! `skilltrial cancel [run]`: stop new dispatches. The requests in flight finish. A run that
//! already finished or was cancelled is left as it is, and the output says so.

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_engine::journal::RunStatus;

use crate::cli::{Global, RunRef};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state::{self, short};

/// `cancel --json` (a run in this journal).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Cancelled {
    /// The run id (its manifest hash).
    pub run: String,
    /// The run's cancel flag: set now, or already (a cancelled run); false for a run that
    /// finished, which is left as it is.
    pub cancel_requested: bool,
    /// The run's status when the cancel was asked (a run already `finished` or `cancelled` is
    /// left as it is: nothing to cancel).
    pub status: RunStatus,
    /// Whether a process is running it now (its request in flight finishes); false when
    /// nothing was left to stop.
    pub live: bool,
}

pub fn run(args: &RunRef, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let journal = state::existing_journal(&layout)?;
    let run = state::find_run(&journal, args.run.as_deref())?;
    if matches!(run.status, RunStatus::Finished | RunStatus::Cancelled) {
        // Nothing is left to stop: every trial already has its outcome.
        if global.json {
            // `cancel_requested` is the run's own flag (true for a cancelled run), and `live`
            // is always present, as in the other branch.
            output::json(&Cancelled {
                run: run.id.clone(),
                cancel_requested: run.cancel_requested,
                status: run.status,
                live: false,
            })?;
        } else {
            output::text(&format!(
                "run {} is already {}: nothing to cancel\n",
                short(&run.id),
                run.status
            ))?;
        }
        return Ok(Status::Ok);
    }
    journal.request_cancel(&run.id)?;
    let live = state::run_is_live(&journal, &run.id)?;
    if global.json {
        output::json(&Cancelled {
            run: run.id.clone(),
            cancel_requested: true,
            status: run.status,
            live,
        })?;
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

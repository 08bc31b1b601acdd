//! `skilltrial cancel [run]`: stop new dispatches. The request in flight finishes.

use crate::cli::{Global, RunRef};
use crate::commands::state::{self, short};
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(args: &RunRef, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let journal = state::existing_journal(&layout)?;
    let run = state::find_run(&journal, args.run.as_deref())?;
    journal
        .request_cancel(&run.id)
        .map_err(anyhow::Error::from)?;
    if global.json {
        output::json(
            &serde_json::json!({ "run": run.id, "cancel_requested": true, "status": run.status }),
        )?;
    } else {
        output::text(&format!(
            "cancel requested for run {} ({}): no new request is sent; one already in flight finishes and its cost is kept; the rest become not_run\n",
            short(&run.id),
            run.status
        ))?;
    }
    Ok(Status::Ok)
}

//! `skilltrial report [run] [--out DIR] [--out-json PATH] [--out-html PATH] [--json]`: writes
//! both report files; `--json` chooses the output format of the summary on stdout, not a file.

use std::fmt::Write as _;
use std::io::Write;

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_engine::journal::RunRow;
use skilltrial_engine::report::{self, Targets, Written};

use crate::cli::{Global, ReportArgs};
use crate::commands::summary;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state::{self, Opened};

/// Builds, seals and writes the report of `run`: `report.json` and `report.html`, each where
/// `targets` says.
pub fn write_to(state: &Opened, run: &RunRow, targets: &Targets<'_>) -> Result<Written, CliError> {
    report::write(
        &state.journal,
        &state.store,
        &state.payloads,
        &state.layout.root,
        run,
        targets,
    )
    .map_err(CliError::from)
}

pub fn run(args: &ReportArgs, global: &Global) -> Result<Status, CliError> {
    let opened = state::open_existing(global)?;
    let run = state::find_run(&opened.journal, args.run.as_deref())?;
    let written = write_to(
        &opened,
        &run,
        &Targets {
            dir: args.out.as_deref(),
            json: args.out_json.as_deref(),
            html: args.out_html.as_deref(),
        },
    )?;
    let _ = writeln!(
        std::io::stderr().lock(),
        "warning: {}",
        report::SENSITIVE_WARNING
    );
    if global.json {
        output::json(&summary_json(&written))?;
    } else {
        output::text(&render(&written))?;
    }
    Ok(Status::Ok)
}

/// `report --json` (and `demo --json`): the same summary the text mode prints, plus where the
/// files are.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReportWritten {
    #[serde(flatten)]
    pub summary: summary::RunSummary,
    /// Where report.json was written.
    pub json: String,
    /// Where report.html was written.
    pub html: String,
}

/// The `--json` output of `report` and `demo`.
pub fn summary_json(w: &Written) -> ReportWritten {
    ReportWritten {
        summary: summary::of_report(&w.report),
        json: w.json.display().to_string(),
        html: w.html.display().to_string(),
    }
}

/// The human summary of a written report: the summary table, then the files and hashes.
pub fn render(w: &Written) -> String {
    let mut out = summary::render(&summary::of_report(&w.report));
    let _ = writeln!(out);
    let _ = writeln!(out, "json    {}", w.json.display());
    let _ = writeln!(out, "html    {}", w.html.display());
    let _ = writeln!(
        out,
        "hashes  report {}  manifest {}",
        w.hash, w.report.manifest_hash
    );
    out
}

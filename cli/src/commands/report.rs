//! `skilltrial report [run] [--out DIR] [--out-json PATH] [--out-html PATH] [--json]`: writes
//! both report files; `--json` chooses the output format of the summary on stdout, not a file.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use skilltrial_engine::journal::{RunRow, RunStatus};
use skilltrial_engine::report::{self, html};

use crate::cli::{Global, ReportArgs};
use crate::commands::state::{self, Opened, short};
use crate::commands::summary;
use crate::exit::{CliError, Status};
use crate::output;

/// What was written.
pub struct Written {
    pub report: Value,
    pub hash: String,
    pub json: PathBuf,
    pub html: PathBuf,
}

/// Where the two report files go: each its own path, both in `dir` by default.
#[derive(Debug, Default)]
pub struct Targets<'a> {
    /// Default directory for both files (default: `<state dir>/reports/<run12>`).
    pub dir: Option<&'a Path>,
    pub json: Option<&'a Path>,
    pub html: Option<&'a Path>,
}

/// Builds, seals and writes both report files of `run` into `out` (default: the run's report
/// directory).
pub fn write(state: &Opened, run: &RunRow, out: Option<&Path>) -> Result<Written, CliError> {
    write_to(
        state,
        run,
        &Targets {
            dir: out,
            ..Targets::default()
        },
    )
}

/// Builds, seals and writes the report of `run`: `report.json` and `report.html`, each where
/// `targets` says.
pub fn write_to(state: &Opened, run: &RunRow, targets: &Targets<'_>) -> Result<Written, CliError> {
    let (layout, journal, store, payloads) =
        (&state.layout, &state.journal, &state.store, &state.payloads);
    // The journal says `running` until a process finishes the run; one whose lock nobody holds
    // was killed or crashed, and the report says so, as `status` does.
    let interrupted;
    let run = if run.status == RunStatus::Running
        && !skilltrial_engine::engine::run_is_live(journal.path(), &run.id)
            .map_err(|e| CliError::Environment(e.into()))?
    {
        interrupted = RunRow {
            status: RunStatus::Interrupted,
            ..run.clone()
        };
        &interrupted
    } else {
        run
    };
    let mut doc =
        report::build(journal, store, payloads, run).map_err(|e| CliError::Rejected(e.into()))?;
    let hash = report::seal(&mut doc).map_err(|e| CliError::Rejected(e.into()))?;
    let dir = targets.dir.map_or_else(
        || layout.root.join("reports").join(short(&run.id)),
        Path::to_path_buf,
    );
    let json_path = targets
        .json
        .map_or_else(|| dir.join("report.json"), Path::to_path_buf);
    let html_path = targets
        .html
        .map_or_else(|| dir.join("report.html"), Path::to_path_buf);
    let mut text = serde_json::to_string_pretty(&doc).context("cannot encode the report")?;
    text.push('\n');
    for (path, bytes) in [
        (&json_path, text.into_bytes()),
        (&html_path, html::render(&doc).into_bytes()),
    ] {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        // The store's error names "store"; this is a report file the user chose.
        skilltrial_engine::store::write_durably(path, &bytes).map_err(|e| match e {
            skilltrial_engine::store::StoreError::Io { source, .. } => {
                anyhow::anyhow!("cannot write the report file {}: {source}", path.display())
            }
            other => other.into(),
        })?;
    }
    Ok(Written {
        report: doc,
        hash: hash.to_string(),
        json: json_path,
        html: html_path,
    })
}

pub fn run(args: &ReportArgs, global: &Global) -> Result<Status, CliError> {
    state::existing_journal(&state::layout(global)?)?;
    let opened = state::open(global)?;
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

/// The `--json` output of `report` and `demo`: the same summary the text mode prints, plus where
/// the files are.
pub fn summary_json(w: &Written) -> Value {
    let mut v = summary::of_report(&w.report);
    v["json"] = Value::String(w.json.display().to_string());
    v["html"] = Value::String(w.html.display().to_string());
    v
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
        w.hash,
        w.report["manifest_hash"].as_str().unwrap_or("")
    );
    out
}

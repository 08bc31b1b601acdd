//! `skilltrial report [run] [--json] [--html] [--out DIR]`.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use skilltrial_runner::journal::RunRow;
use skilltrial_runner::report::{self, html};

use crate::cli::{Global, ReportArgs};
use crate::commands::state::{self, Opened, short};
use crate::exit::{CliError, Status};
use crate::output;

/// What was written.
pub struct Written {
    pub report: Value,
    pub hash: String,
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
}

/// Builds, seals and writes the report of `run`.
pub fn write(
    state: &Opened,
    run: &RunRow,
    out: Option<&Path>,
    json: bool,
    html_too: bool,
) -> Result<Written, CliError> {
    let (layout, journal, store, payloads) =
        (&state.layout, &state.journal, &state.store, &state.payloads);
    let mut doc =
        report::build(journal, store, payloads, run).map_err(|e| CliError::Rejected(e.into()))?;
    let hash = report::seal(&mut doc).map_err(|e| CliError::Rejected(e.into()))?;
    let dir = out.map_or_else(
        || layout.root.join("reports").join(short(&run.id)),
        Path::to_path_buf,
    );
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json_path = if json {
        let path = dir.join("report.json");
        let mut text = serde_json::to_string_pretty(&doc).context("cannot encode the report")?;
        text.push('\n');
        skilltrial_runner::store::write_durably(&path, text.as_bytes())
            .map_err(anyhow::Error::from)?;
        Some(path)
    } else {
        None
    };
    let html_path = if html_too {
        let path = dir.join("report.html");
        skilltrial_runner::store::write_durably(&path, html::render(&doc).as_bytes())
            .map_err(anyhow::Error::from)?;
        Some(path)
    } else {
        None
    };
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
    let (json, html_too) = match (global.json, args.html) {
        (false, false) => (true, true),
        (j, h) => (j, h),
    };
    let written = write(&opened, &run, args.out.as_deref(), json, html_too)?;
    let _ = writeln!(
        std::io::stderr().lock(),
        "warning: {}",
        report::SENSITIVE_WARNING
    );
    if global.json {
        output::json(&serde_json::json!({
            "run": run.id,
            "report_hash": written.hash,
            "manifest_hash": written.report["manifest_hash"],
            "json": written.json.as_ref().map(|p| p.display().to_string()),
            "html": written.html.as_ref().map(|p| p.display().to_string()),
            "complete": written.report["summary"]["complete"],
        }))?;
    } else {
        output::text(&render(&written))?;
    }
    Ok(Status::Ok)
}

/// The human summary of a written report.
pub fn render(w: &Written) -> String {
    let r = &w.report;
    let mut out = String::new();
    if let Some(p) = &w.json {
        let _ = writeln!(out, "json    {}", p.display());
    }
    if let Some(p) = &w.html {
        let _ = writeln!(out, "html    {}", p.display());
    }
    let _ = writeln!(
        out,
        "hashes  report {}  manifest {}",
        w.hash,
        r["manifest_hash"].as_str().unwrap_or("")
    );
    if r["comparability"]["model"]["scripted"]
        .as_bool()
        .unwrap_or(false)
    {
        let _ = writeln!(
            out,
            "model   SCRIPTED (not a real model): these results demonstrate the pipeline only"
        );
    }
    for arm in r["summary"]["arms"].as_array().into_iter().flatten() {
        let name = match arm["bundle"].as_object() {
            None => "baseline".to_owned(),
            Some(b) => format!(
                "{} {} {}",
                arm["arm"].as_str().unwrap_or("").to_uppercase(),
                b["name"].as_str().unwrap_or(""),
                b["version"].as_str().unwrap_or("")
            ),
        };
        let _ = writeln!(
            out,
            "arm     {name:<28} {:>3} pass / {:>3} executed of {} planned",
            arm["pass"], arm["executed"], arm["planned"]
        );
    }
    for pair in r["pairs"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "pair    {}: {}",
            pair["contrast"].as_str().unwrap_or(""),
            pair["statement"].as_str().unwrap_or("")
        );
    }
    let verdicts: Vec<String> = r["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let b = t["verdicts"]["b_vs_a"].as_str()?;
            (b == "regression" || b == "improvement")
                .then(|| format!("{} ({b})", t["task"].as_str().unwrap_or("")))
        })
        .collect();
    if !verdicts.is_empty() {
        let _ = writeln!(out, "b vs a  {}", verdicts.join(", "));
    }
    if !r["summary"]["complete"].as_bool().unwrap_or(false) {
        let _ = writeln!(out, "partial run: no winner named");
    }
    out
}

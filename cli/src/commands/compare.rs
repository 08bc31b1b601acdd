//! `skilltrial compare <run1> <run2>`: side by side, or a refusal naming what differs.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use skilltrial_core::report::comparable::{self, Check};
use skilltrial_core::report::{ArmSummary, Rate, Report};
use skilltrial_engine::report;

use crate::cli::{CompareArgs, Global};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state::{self, short};

/// `compare --json`: the two runs side by side, or what makes them not comparable.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Compared {
    /// Whether the runs agree on every member compared (exit 1 when not).
    pub comparable: bool,
    /// The two run ids, as given.
    pub runs: [String; 2],
    /// The members that must agree (model, pack, checker, sampling, output limit, prompt
    /// template, …).
    pub compared: Vec<&'static str>,
    /// The members that differ; present only when the runs are not comparable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differs: Option<Vec<Differs>>,
    /// One row per arm of either run; present only when the runs are comparable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<Row>>,
}

/// A member the two runs disagree on.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Differs {
    /// The member.
    pub what: String,
    /// Its value in the first run.
    pub first: Value,
    /// Its value in the second run.
    pub second: Value,
}

/// One arm in both runs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Row {
    /// The arm id (`baseline`, `a`, `b`).
    pub arm: String,
    /// The arm in the first run (null when that run has no such arm).
    pub first: Option<Cell>,
    /// The arm in the second run (null when that run has no such arm).
    pub second: Option<Cell>,
}

/// One arm's counts in one run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Cell {
    pub pass: u64,
    pub executed: u64,
    pub planned: u64,
    /// pass / executed with its Wilson 95% interval (null when nothing was executed).
    pub success: Option<Rate>,
}

pub fn run(args: &CompareArgs, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let journal = state::existing_journal(&layout)?;
    let store = state::store(&layout)?;
    let payloads = state::payloads(&layout)?;
    let runs = [
        state::find_run(&journal, Some(&args.first))?,
        state::find_run(&journal, Some(&args.second))?,
    ];
    if runs[0].id == runs[1].id {
        return Err(CliError::Environment(anyhow::anyhow!(
            "both arguments name run {}: comparing a run with itself says nothing; give two different runs",
            short(&runs[0].id)
        )));
    }
    let mut docs = Vec::new();
    for run in &runs {
        docs.push(report::build(&journal, &store, &payloads, run)?);
    }
    let (a, b) = (&docs[0], &docs[1]);
    let checks: Vec<&Check> = comparable::MODEL
        .iter()
        .chain(&comparable::MEASUREMENT)
        .collect();
    let differs: Vec<Differs> = comparable::differences(checks.iter().copied(), a, b)
        .into_iter()
        .map(|d| Differs {
            what: d.what,
            first: d.this,
            second: d.other,
        })
        .collect();
    let compared: Vec<&str> = checks.iter().map(|(label, _)| *label).collect();
    let (first, second) = (a.run.id.clone(), b.run.id.clone());
    if !differs.is_empty() {
        if global.json {
            output::json(&Compared {
                comparable: false,
                runs: [first, second],
                compared,
                differs: Some(differs),
                rows: None,
            })?;
        } else {
            let mut out = "these runs are not comparable:\n".to_owned();
            for d in &differs {
                let _ = writeln!(out, "  {}: {} vs {}", d.what, d.first, d.second);
            }
            output::text(&out)?;
        }
        return Ok(Status::CheckFailed);
    }
    let rows = side_by_side(a, b);
    if global.json {
        output::json(&Compared {
            comparable: true,
            runs: [first, second],
            compared,
            differs: None,
            rows: Some(rows),
        })?;
    } else {
        let cell = |c: &Option<Cell>| {
            c.as_ref().map_or_else(
                || "—".to_owned(),
                |c| format!("{}/{} pass", c.pass, c.executed),
            )
        };
        let mut out = format!(
            "{:<10} {:>22} {:>22}\n",
            "arm",
            short(&first),
            short(&second)
        );
        for row in &rows {
            // The JSON keeps the journal's arm ids; people read A and B, as everywhere else.
            let arm = match row.arm.as_str() {
                "baseline" => "baseline".to_owned(),
                other => other.to_uppercase(),
            };
            let _ = writeln!(
                out,
                "{:<10} {:>22} {:>22}",
                arm,
                cell(&row.first),
                cell(&row.second)
            );
        }
        output::text(&out)?;
    }
    Ok(Status::Ok)
}

/// One row per arm of either run, matched by arm name (a run without that arm shows null).
fn side_by_side(a: &Report, b: &Report) -> Vec<Row> {
    let (xs, ys) = (&a.summary.arms, &b.summary.arms);
    let mut names: Vec<&str> = Vec::new();
    for arm in xs.iter().chain(ys) {
        if !names.contains(&arm.arm.as_str()) {
            names.push(&arm.arm);
        }
    }
    let pick = |list: &[ArmSummary], name: &str| -> Option<Cell> {
        list.iter().find(|x| x.arm == name).map(|x| Cell {
            pass: x.pass,
            executed: x.executed,
            planned: x.planned,
            success: x.success.clone(),
        })
    };
    names
        .iter()
        .map(|name| Row {
            arm: (*name).to_owned(),
            first: pick(xs, name),
            second: pick(ys, name),
        })
        .collect()
}

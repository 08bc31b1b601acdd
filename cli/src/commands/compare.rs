//! `skilltrial compare <run1> <run2>`: side by side, or a refusal naming what differs.

use std::fmt::Write as _;

use serde_json::Value;
use skilltrial_core::report::comparable::{self, Check};
use skilltrial_core::report::{ArmSummary, Report};
use skilltrial_engine::report;

use crate::cli::{CompareArgs, Global};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state::{self, short};

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
    let differs: Vec<Value> = comparable::differences(checks.iter().copied(), a, b)
        .into_iter()
        .map(|d| serde_json::json!({ "what": d.what, "first": d.this, "second": d.other }))
        .collect();
    let compared: Vec<&str> = checks.iter().map(|(label, _)| *label).collect();
    let (first, second) = (a.run.id.clone(), b.run.id.clone());
    if !differs.is_empty() {
        if global.json {
            output::json(&serde_json::json!({
                "comparable": false,
                "runs": [first, second],
                "compared": compared,
                "differs": differs,
            }))?;
        } else {
            let mut out = "these runs are not comparable:\n".to_owned();
            for d in &differs {
                let _ = writeln!(
                    out,
                    "  {}: {} vs {}",
                    d["what"].as_str().unwrap_or(""),
                    d["first"],
                    d["second"]
                );
            }
            output::text(&out)?;
        }
        return Ok(Status::CheckFailed);
    }
    let rows = side_by_side(a, b);
    if global.json {
        output::json(&serde_json::json!({
            "comparable": true,
            "runs": [first, second],
            "compared": compared,
            "rows": rows,
        }))?;
    } else {
        let cell = |v: &Value| {
            if v.is_null() {
                "—".to_owned()
            } else {
                format!("{}/{} pass", v["pass"], v["executed"])
            }
        };
        let mut out = format!(
            "{:<10} {:>22} {:>22}\n",
            "arm",
            short(&first),
            short(&second)
        );
        for row in &rows {
            // The JSON keeps the journal's arm ids; people read A and B, as everywhere else.
            let arm = match row["arm"].as_str().unwrap_or("") {
                "baseline" => "baseline".to_owned(),
                other => other.to_uppercase(),
            };
            let _ = writeln!(
                out,
                "{:<10} {:>22} {:>22}",
                arm,
                cell(&row["first"]),
                cell(&row["second"])
            );
        }
        output::text(&out)?;
    }
    Ok(Status::Ok)
}

/// One row per arm of either run, matched by arm name (a run without that arm shows null).
fn side_by_side(a: &Report, b: &Report) -> Vec<Value> {
    let (xs, ys) = (&a.summary.arms, &b.summary.arms);
    let mut names: Vec<&str> = Vec::new();
    for arm in xs.iter().chain(ys) {
        if !names.contains(&arm.arm.as_str()) {
            names.push(&arm.arm);
        }
    }
    let pick = |list: &[ArmSummary], name: &str| -> Value {
        list.iter()
            .find(|x| x.arm == name)
            .map_or(Value::Null, |x| {
                serde_json::json!({
                    "pass": x.pass,
                    "executed": x.executed,
                    "planned": x.planned,
                    "success": x.success,
                })
            })
    };
    names
        .iter()
        .map(|name| serde_json::json!({ "arm": name, "first": pick(xs, name), "second": pick(ys, name) }))
        .collect()
}

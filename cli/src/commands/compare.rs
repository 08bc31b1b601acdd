//! `skilltrial compare <run1> <run2>`: side by side, or a refusal naming what differs.

use std::fmt::Write as _;

use serde_json::Value;
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
    let mut differs = Vec::new();
    let checks: [(&str, &[&str]); 12] = [
        ("model provider", &["comparability", "model", "provider"]),
        ("model", &["comparability", "model", "model"]),
        ("model revision", &["comparability", "model", "revision"]),
        ("scripted model", &["comparability", "model", "scripted"]),
        (
            "models the API reported",
            &["comparability", "model", "reported_models"],
        ),
        (
            "system fingerprints",
            &["comparability", "model", "system_fingerprints"],
        ),
        ("pack", &["comparability", "pack", "hash"]),
        ("checker version", &["comparability", "checker", "version"]),
        (
            "checker source",
            &["comparability", "checker", "source_sha256"],
        ),
        (
            "checker behind the verdicts",
            &["comparability", "verdicts_by"],
        ),
        ("sampling and output limit", &["comparability", "sampling"]),
        (
            "prompt template",
            &["comparability", "prompt_template_sha256"],
        ),
    ];
    for (label, path) in checks {
        let get = |doc: &Value| {
            path.iter().fold(doc.clone(), |v, k| {
                v.get(*k).cloned().unwrap_or(Value::Null)
            })
        };
        let (x, y) = (get(a), get(b));
        // What the API reported, and which checker scored the verdicts, is known only from
        // model results: a run with none yet (planned, or cancelled before its first answer)
        // has an empty set, which contradicts nothing; the rows then show it has no results.
        let unreported = |v: &Value| v.as_array().is_some_and(Vec::is_empty);
        let observed = matches!(
            label,
            "models the API reported" | "system fingerprints" | "checker behind the verdicts"
        );
        if observed && (unreported(&x) || unreported(&y)) {
            continue;
        }
        if x != y {
            differs.push(serde_json::json!({ "what": label, "first": x, "second": y }));
        }
    }
    let compared: Vec<&str> = checks.iter().map(|(label, _)| *label).collect();
    let (first, second) = (a["run"]["id"].clone(), b["run"]["id"].clone());
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
            short(first.as_str().unwrap_or("")),
            short(second.as_str().unwrap_or(""))
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
fn side_by_side(a: &Value, b: &Value) -> Vec<Value> {
    let arms = |doc: &Value| -> Vec<Value> {
        doc["summary"]["arms"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let (xs, ys) = (arms(a), arms(b));
    let mut names: Vec<String> = Vec::new();
    for arm in xs.iter().chain(&ys) {
        let name = arm["arm"].as_str().unwrap_or("").to_owned();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let pick = |list: &[Value], name: &str| -> Value {
        list.iter()
            .find(|x| x["arm"].as_str() == Some(name))
            .map_or(Value::Null, |x| {
                serde_json::json!({
                    "pass": x["pass"],
                    "executed": x["executed"],
                    "planned": x["planned"],
                    "success": x["success"],
                })
            })
    };
    names
        .iter()
        .map(|name| serde_json::json!({ "arm": name, "first": pick(&xs, name), "second": pick(&ys, name) }))
        .collect()
}

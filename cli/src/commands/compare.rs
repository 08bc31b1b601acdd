//! `skilltrial compare <run1> <run2>`: side by side, or a refusal naming what differs.

use std::fmt::Write as _;

use serde_json::Value;
use skilltrial_runner::report;

use crate::cli::{CompareArgs, Global};
use crate::commands::state::{self, short};
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(args: &CompareArgs, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let journal = state::existing_journal(&layout)?;
    let store = state::store(&layout)?;
    let payloads = state::payloads(&layout)?;
    let mut docs = Vec::new();
    for id in [&args.first, &args.second] {
        let run = state::find_run(&journal, Some(id))?;
        docs.push(
            report::build(&journal, &store, &payloads, &run)
                .map_err(|e| CliError::Rejected(e.into()))?,
        );
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
        if x != y {
            differs.push(serde_json::json!({ "what": label, "first": x, "second": y }));
        }
    }
    if !differs.is_empty() {
        if global.json {
            output::json(&serde_json::json!({ "comparable": false, "differs": differs }))?;
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
    let arms = |doc: &Value| {
        doc["summary"]["arms"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    if global.json {
        output::json(
            &serde_json::json!({ "comparable": true, "first": { "run": a["run"]["id"], "arms": arms(a) }, "second": { "run": b["run"]["id"], "arms": arms(b) } }),
        )?;
    } else {
        let mut out = format!(
            "{:<10} {:>22} {:>22}\n",
            "arm",
            short(a["run"]["id"].as_str().unwrap_or("")),
            short(b["run"]["id"].as_str().unwrap_or(""))
        );
        for (x, y) in arms(a).iter().zip(arms(b).iter()) {
            let cell = |arm: &Value| format!("{}/{} pass", arm["pass"], arm["executed"]);
            let _ = writeln!(
                out,
                "{:<10} {:>22} {:>22}",
                x["arm"].as_str().unwrap_or(""),
                cell(x),
                cell(y)
            );
        }
        output::text(&out)?;
    }
    Ok(Status::Ok)
}

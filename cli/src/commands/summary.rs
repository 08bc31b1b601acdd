//! The run summary people read after `run`, `demo` and `report`: one compact object built from
//! the report document, printed either as a table (text) or as JSON (`--json`) with the same
//! content, so the two modes never tell different stories.
//!
//! Layout: one row per arm (pass / executed and the 95% Wilson interval), what B fixes and breaks
//! against A and each skill against the baseline, one row per paired contrast (p and Holm as
//! exact fractions), and the long statement of what the tests can claim printed once.

use std::fmt::Write as _;

use serde_json::{Value, json};
use skilltrial_engine::journal::Journal;
use skilltrial_engine::report;
use skilltrial_engine::store::Store;

/// The summary of a report document (`report::build`'s output).
pub fn of_report(r: &Value) -> Value {
    let arms: Vec<Value> = r["summary"]["arms"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|arm| {
            json!({
                "arm": arm["arm"],
                "bundle": arm["bundle"].as_object().map(|b| format!(
                    "{} {}",
                    b.get("name").and_then(Value::as_str).unwrap_or(""),
                    b.get("version").and_then(Value::as_str).unwrap_or("unversioned")
                )),
                "planned": arm["planned"],
                "executed": arm["executed"],
                "pass": arm["pass"],
                "not_model_results": not_model_results(arm),
                "wilson95": arm["success"]["wilson95"],
            })
        })
        .collect();
    let pairs: Vec<Value> = r["pairs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            json!({
                "contrast": p["contrast"],
                "complete_pairs": p["complete_pairs"],
                "x_only": p["x_only"],
                "y_only": p["y_only"],
                "excluded": p["excluded"].as_array().map_or(0, Vec::len),
                "test": p["test"]["name"],
                "p": p["test"]["p"]["text"],
                "holm_p": p["test"]["holm_p"]["text"],
            })
        })
        .collect();
    json!({
        "run": r["run"]["id"],
        "status": r["run"]["status"],
        "complete": r["summary"]["complete"],
        "planned": r["summary"]["planned"],
        "executed": r["summary"]["executed"],
        "scripted": r["comparability"]["model"]["scripted"],
        "arms": arms,
        "changes": r["summary"]["changes"],
        "compared_tasks": report::compared_tasks(r),
        "pairs": pairs,
        "caveat": r["summary"]["caveat"],
        "leader": r["summary"]["leader"],
        "report_hash": r.get("report_hash"),
        "manifest_hash": r["manifest_hash"],
    })
}

/// Trials of an arm without a model result: infrastructure errors, unknowns, interruptions,
/// trials not run, and trials still pending.
fn not_model_results(arm: &Value) -> u64 {
    [
        "infrastructure_error",
        "unknown",
        "interrupted",
        "not_run",
        "pending",
    ]
    .iter()
    .map(|k| arm[*k].as_u64().unwrap_or(0))
    .sum()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".to_owned(),
        other => other.to_string(),
    }
}

fn pct(v: &Value) -> String {
    v.as_str()
        .and_then(|x| x.parse::<f64>().ok())
        .map_or_else(|| "—".to_owned(), |x| format!("{:.0}%", x * 100.0))
}

fn arm_label(arm: &str) -> String {
    if arm == "baseline" {
        "baseline".to_owned()
    } else {
        arm.to_uppercase()
    }
}

/// The table printed after `run`'s own lines (which already name the run and its status): built
/// from the journal without writing report files. A report that cannot be built is said, not
/// fatal: the run itself succeeded.
pub fn after_run(journal: &Journal, store: &Store, payloads: &Store, run: &str) -> String {
    let built = journal
        .find_run(run)
        .map_err(|e| e.to_string())
        .and_then(|row| row.ok_or_else(|| format!("run {run} not found")))
        .and_then(|row| report::build(journal, store, payloads, &row).map_err(|e| e.to_string()));
    match built {
        Ok(doc) => format!(
            "\n{}next     skilltrial report {} writes the JSON and HTML report\n",
            table(&of_report(&doc), false),
            run.chars().take(12).collect::<String>()
        ),
        Err(e) => format!("\n(no summary table: {e})\n"),
    }
}

/// The summary as a compact table, led by the run's id, status and coverage.
pub fn render(s: &Value) -> String {
    table(s, true)
}

fn table(s: &Value, header: bool) -> String {
    let mut out = String::new();
    let planned = s["planned"].as_u64().unwrap_or(0);
    let executed = s["executed"].as_u64().unwrap_or(0);
    let coverage = if s["complete"].as_bool().unwrap_or(false) {
        format!("complete: all {planned} planned trials have a model result")
    } else {
        format!("partial: {executed} of {planned} planned trials have a model result")
    };
    if header {
        let _ = writeln!(
            out,
            "run {}  {} · {coverage}",
            text(&s["run"]).chars().take(12).collect::<String>(),
            text(&s["status"])
        );
    } else {
        let _ = writeln!(out, "{coverage}");
    }
    if s["scripted"].as_bool().unwrap_or(false) {
        let _ = writeln!(
            out,
            "model: SCRIPTED (not a real model): these results demonstrate the pipeline only"
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<9} {:<28} {:>13}  {:<11} no model result",
        "arm", "bundle", "pass/executed", "95% CI"
    );
    for arm in s["arms"].as_array().into_iter().flatten() {
        let ci = arm["wilson95"].as_array().map_or_else(
            || "—".to_owned(),
            |w| format!("{}–{}", pct(&w[0]), pct(&w[1])),
        );
        // An arm without a model result has no rate or interval to show: say so instead of 0/0.
        let stats = if arm["executed"].as_u64().unwrap_or(0) == 0 {
            format!("{:<26}", "no model results yet")
        } else {
            format!(
                "{:>13}  {:<11}",
                format!("{}/{}", text(&arm["pass"]), text(&arm["executed"])),
                ci
            )
        };
        let _ = writeln!(
            out,
            "{:<9} {:<28} {stats} {}",
            arm_label(arm["arm"].as_str().unwrap_or("")),
            text(&arm["bundle"]),
            text(&arm["not_model_results"])
        );
    }
    let changes = &s["changes"];
    // With no model result at all, no task and no pair can be compared: one line says so, in
    // place of empty fixes lists and a table of dashes.
    let nothing_yet = executed == 0;
    if nothing_yet {
        let _ = writeln!(
            out,
            "\nWhat changed: nothing can be compared yet: no trial has a model result."
        );
    } else if changes.as_object().is_some_and(|c| !c.is_empty()) {
        let _ = writeln!(out);
        for (key, label) in [
            ("b_vs_a", "B vs A"),
            ("b_vs_baseline", "B vs baseline"),
            ("a_vs_baseline", "A vs baseline"),
        ] {
            let Some(c) = changes.get(key) else { continue };
            // No task has a result in both arms yet: empty lists would read as "fixes nothing".
            if s["compared_tasks"][key].as_u64() == Some(0) {
                let _ = writeln!(
                    out,
                    "{label:<14} nothing to compare yet (no task has a model result in both arms)"
                );
                continue;
            }
            let list = |k: &str| {
                let tasks: Vec<String> = c[k].as_array().into_iter().flatten().map(text).collect();
                if tasks.is_empty() {
                    "—".to_owned()
                } else {
                    tasks.join(", ")
                }
            };
            let _ = writeln!(
                out,
                "{label:<14} fixes: {}\n{:<14} breaks: {}",
                list("fixes"),
                "",
                list("breaks")
            );
        }
    }
    let pairs: Vec<&Value> = s["pairs"].as_array().into_iter().flatten().collect();
    if !pairs.is_empty() && !nothing_yet {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<14} {:>6} {:>7} {:>7} {:>9} {:>9} {:>9}",
            "contrast", "pairs", "X only", "Y only", "excluded", "p", "Holm"
        );
        for p in &pairs {
            let contrast = text(&p["contrast"]);
            let contrast = match contrast.split_once('-') {
                Some((x, y)) => format!("{} − {}", arm_label(x), arm_label(y)),
                None => contrast,
            };
            let _ = writeln!(
                out,
                "{:<14} {:>6} {:>7} {:>7} {:>9} {:>9} {:>9}",
                contrast,
                text(&p["complete_pairs"]),
                text(&p["x_only"]),
                text(&p["y_only"]),
                text(&p["excluded"]),
                text(&p["p"]),
                text(&p["holm_p"])
            );
        }
        // The test and its caveat, once for every contrast.
        let tests: std::collections::BTreeSet<String> =
            pairs.iter().map(|p| text(&p["test"])).collect();
        let tests: Vec<String> = tests.into_iter().collect();
        let _ = writeln!(
            out,
            "\np: the {}; Holm-adjusted across the {}. {}",
            tests.join("; the "),
            if pairs.len() == 1 {
                "one contrast".to_owned()
            } else {
                format!("{} contrasts", pairs.len())
            },
            text(&s["caveat"])
        );
    }
    let _ = writeln!(out);
    if s["complete"].as_bool().unwrap_or(false) {
        match s["leader"]["arm"].as_str() {
            Some(arm) => {
                let _ = writeln!(
                    out,
                    "Most passes: {} ({}).",
                    arm_label(arm),
                    text(&s["leader"]["note"])
                );
            }
            None => {
                let _ = writeln!(out, "{}", text(&s["leader"]["note"]));
            }
        }
    } else {
        let _ = writeln!(out, "Partial run: no winner is named.");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_says_each_thing_once() {
        let summary = json!({
            "run": "0123456789abcdef", "status": "finished", "complete": true, "planned": 6, "executed": 6,
            "scripted": false,
            "arms": [
                { "arm": "baseline", "bundle": null, "pass": 1, "executed": 2, "not_model_results": 0, "wilson95": ["0.094531", "0.905469"] },
                { "arm": "a", "bundle": "x 1.0", "pass": 2, "executed": 2, "not_model_results": 0, "wilson95": ["0.342372", "1.000000"] },
            ],
            "changes": { "a_vs_baseline": { "fixes": ["t1"], "breaks": [] } },
            "pairs": [{ "contrast": "a-baseline", "complete_pairs": 2, "x_only": 1, "y_only": 0, "excluded": 0, "test": "exact McNemar test over complete pairs", "p": "1", "holm_p": "1" }],
            "caveat": "Each test asks whether discordant pairs lean one way.",
            "leader": { "arm": "a", "note": "an observed count in a complete run, not a significance claim" },
        });
        let text = render(&summary);
        assert!(text.contains("baseline  —"), "{text}");
        assert!(text.contains("A         x 1.0"), "{text}");
        assert!(
            text.contains("A vs baseline  fixes: t1\n               breaks: —"),
            "{text}"
        );
        assert!(text.contains("A − baseline"), "{text}");
        assert_eq!(text.matches("Each test asks").count(), 1, "{text}");
        assert!(text.contains(
            "run 0123456789ab  finished · complete: all 6 planned trials have a model result"
        ));
    }

    #[test]
    fn regression_a_partial_table_shows_no_empty_statistics() {
        // A stopped run: the baseline has one result, A none yet; A against the baseline has no
        // task with a result in both arms.
        let summary = json!({
            "run": "0123456789abcdef", "status": "stopped", "complete": false, "planned": 4, "executed": 1,
            "scripted": false,
            "arms": [
                { "arm": "baseline", "bundle": null, "pass": 1, "executed": 1, "not_model_results": 1, "wilson95": ["0.206549", "1.000000"] },
                { "arm": "a", "bundle": "x 1.0", "pass": 0, "executed": 0, "not_model_results": 2, "wilson95": null },
            ],
            "changes": { "a_vs_baseline": { "fixes": [], "breaks": [] } },
            "compared_tasks": { "a_vs_baseline": 0 },
            "pairs": [],
            "caveat": "c",
            "leader": null,
        });
        let text = render(&summary);
        assert!(
            text.contains("A         x 1.0                        no model results yet       2\n"),
            "{text}"
        );
        assert!(!text.contains("0/0"), "{text}");
        assert!(
            text.contains(
                "A vs baseline  nothing to compare yet (no task has a model result in both arms)\n"
            ),
            "{text}"
        );
        assert!(!text.contains("fixes:"), "{text}");
        assert!(text.contains("Partial run: no winner is named."), "{text}");
    }
}

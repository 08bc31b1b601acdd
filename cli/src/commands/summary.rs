//! The run summary people read after `run`, `demo` and `report`: one compact object built from
//! the report document, printed either as a table (text) or as JSON (`--json`) with the same
//! content, so the two modes never tell different stories.
//!
//! Layout: one row per arm (pass / executed and the 95% Wilson interval), what B fixes and breaks
//! against A and each skill against the baseline (how many, and the [`SHOWN_TASKS`] clearest by
//! name: the full lists are in `--json` and the report), one row per paired contrast (p and Holm
//! as numbers to read; the JSON keeps the exact fractions), and the long statement of what the
//! tests can claim printed once.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use skilltrial_core::bundle::display_safe;
use skilltrial_core::report::{ArmActivation, Changes, FixesBreaks, Leader, TaskRow};
use skilltrial_core::state::RunStatus;
use skilltrial_engine::journal::Journal;
use skilltrial_engine::report::{self, Report};
use skilltrial_engine::store::Store;

/// The summary of a run: what `--json` prints and what the table shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunSummary {
    pub run: String,
    pub status: RunStatus,
    pub complete: bool,
    pub planned: u64,
    pub executed: u64,
    pub scripted: bool,
    pub arms: Vec<ArmLine>,
    /// Every task each contrast fixes and breaks, in the report's (pack) order.
    pub changes: Changes,
    /// The same lists, the clearest change first ([`ranked`]): what the text names. Not in the
    /// JSON, whose lists stay in the report's order.
    #[serde(skip)]
    pub ranked: Changes,
    pub compared_tasks: BTreeMap<String, usize>,
    pub pairs: Vec<PairLine>,
    pub caveat: String,
    pub leader: Option<Leader>,
    pub report_hash: Option<String>,
    pub manifest_hash: String,
}

/// One arm: pass / executed and the interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArmLine {
    pub arm: String,
    /// "name version", `null` for the baseline.
    pub bundle: Option<String>,
    pub planned: u64,
    pub executed: u64,
    pub pass: u64,
    pub not_model_results: u64,
    pub wilson95: Option<[String; 2]>,
    /// pass^k and pass@k over the tasks with all k repetitions scored (absent in reports
    /// written before they existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<skilltrial_core::report::Consistency>,
    /// Progressive runs: whether the model loaded the arm's skill, as the report's `activation`
    /// says (absent for an inline run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<ArmActivation>,
}

/// One paired contrast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PairLine {
    pub contrast: String,
    pub complete_pairs: u64,
    pub x_only: u64,
    pub y_only: u64,
    pub excluded: u64,
    pub test: String,
    /// The exact p, as the report writes it (`1/35184372088832`).
    pub p: Option<String>,
    pub holm_p: Option<String>,
    /// The same as numbers to read (`2.8e-14`), as the text shows them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_readable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holm_p_readable: Option<String>,
}

/// How many tasks of a fixes or breaks list the text names; it counts the rest and says where the
/// full list is.
pub const SHOWN_TASKS: usize = 5;

/// The summary of a report.
pub fn of_report(r: &Report) -> RunSummary {
    let arms = r
        .summary
        .arms
        .iter()
        .map(|arm| ArmLine {
            arm: arm.arm.clone(),
            bundle: arm.bundle.as_ref().map(|b| {
                format!(
                    "{} {}",
                    b.name,
                    b.version.as_deref().unwrap_or("unversioned")
                )
            }),
            planned: arm.planned,
            executed: arm.executed,
            pass: arm.pass,
            // Trials without a model result: infrastructure errors, unknowns, interruptions,
            // trials not run, and trials still pending.
            not_model_results: arm.infrastructure_error
                + arm.unknown
                + arm.interrupted
                + arm.not_run
                + arm.pending,
            wilson95: arm.success.as_ref().map(|s| s.wilson95.clone()),
            consistency: arm.consistency.clone(),
            activation: r.activation.as_ref().and_then(|a| a.arm(&arm.arm)).cloned(),
        })
        .collect();
    let pairs = r
        .pairs
        .iter()
        .map(|p| PairLine {
            contrast: p.contrast.clone(),
            complete_pairs: p.complete_pairs,
            x_only: p.x_only,
            y_only: p.y_only,
            excluded: p.excluded.len() as u64,
            test: p.test.name.clone(),
            p: p.test.p.as_ref().map(|f| f.text.clone()),
            holm_p: p.test.holm_p.as_ref().map(|f| f.text.clone()),
            p_readable: p.test.p.as_ref().map(|f| f.readable()),
            holm_p_readable: p.test.holm_p.as_ref().map(|f| f.readable()),
        })
        .collect();
    RunSummary {
        run: r.run.id.clone(),
        status: r.run.status,
        complete: r.summary.complete,
        planned: r.summary.planned,
        executed: r.summary.executed,
        scripted: r.comparability.model.scripted,
        arms,
        changes: r.summary.changes.clone(),
        ranked: ranked(&r.summary.changes, &r.tasks),
        compared_tasks: r
            .compared_tasks()
            .into_iter()
            .map(|(k, n)| (k.to_owned(), n))
            .collect(),
        pairs,
        caveat: r.summary.caveat.clone(),
        leader: r.summary.leader.clone(),
        report_hash: r.report_hash.clone(),
        manifest_hash: r.manifest_hash.clone(),
    }
}

/// `changes` with each list ordered the clearest change first: by the gap between the two arms'
/// pass rates on the task (passed 3/3 against 0/3 before 2/3 against 1/3), then by the
/// repetitions behind the smaller side, then in pack order. That is the order in which a reader
/// should look at them: a task an arm always passes and the other always fails is the least
/// likely to be noise.
pub fn ranked(changes: &Changes, tasks: &[TaskRow]) -> Changes {
    let rate = |task: &str, arm: &str| -> Option<(f64, u64)> {
        let cell = tasks.iter().find(|t| t.task == task)?.arms.get(arm)?;
        (cell.executed > 0).then(|| (cell.pass as f64 / cell.executed as f64, cell.executed))
    };
    // `better` passes the task, `worse` fails it.
    let order = |list: &[String], better: &str, worse: &str| -> Vec<String> {
        let mut keyed: Vec<(f64, u64, usize, &String)> = list
            .iter()
            .enumerate()
            .map(|(i, task)| match (rate(task, better), rate(task, worse)) {
                (Some((b, nb)), Some((w, nw))) => (b - w, nb.min(nw), i, task),
                _ => (0.0, 0, i, task),
            })
            .collect();
        keyed.sort_by(|x, y| y.0.total_cmp(&x.0).then(y.1.cmp(&x.1)).then(x.2.cmp(&y.2)));
        keyed.into_iter().map(|k| k.3.clone()).collect()
    };
    let lists = |lists: Option<&FixesBreaks>, x: &str, y: &str| {
        lists.map(|l| FixesBreaks {
            fixes: order(&l.fixes, x, y),
            breaks: order(&l.breaks, y, x),
        })
    };
    Changes {
        b_vs_a: lists(changes.b_vs_a.as_ref(), "b", "a"),
        b_vs_baseline: lists(changes.b_vs_baseline.as_ref(), "b", "baseline"),
        a_vs_baseline: lists(changes.a_vs_baseline.as_ref(), "a", "baseline"),
    }
}

/// A fixes or breaks list as the text says it: every task by name up to [`SHOWN_TASKS`]; past
/// that, how many, the first [`SHOWN_TASKS`] by name and how many more (and `true`: the caller
/// says where the full list is).
fn task_list(tasks: &[String]) -> (String, bool) {
    if tasks.is_empty() {
        return ("—".to_owned(), false);
    }
    // A task id comes from the pack, which may be a user's own: nothing in it may drive the
    // terminal.
    let named: Vec<String> = tasks
        .iter()
        .take(SHOWN_TASKS)
        .map(|t| display_safe(t))
        .collect();
    let more = tasks.len().saturating_sub(SHOWN_TASKS);
    if more == 0 {
        (named.join(", "), false)
    } else {
        (
            format!(
                "{} tasks, the {SHOWN_TASKS} clearest: {} (and {more} more)",
                tasks.len(),
                named.join(", ")
            ),
            true,
        )
    }
}

fn or_dash(v: Option<&str>) -> String {
    v.map_or_else(|| "—".to_owned(), str::to_owned)
}

fn pct(v: &str) -> String {
    v.parse::<f64>()
        .map_or_else(|_| "—".to_owned(), |x| format!("{:.0}%", x * 100.0))
}

fn arm_label(arm: &str) -> String {
    if arm == "baseline" {
        "baseline".to_owned()
    } else {
        arm.to_uppercase()
    }
}

/// Progressive runs: one line per arm on whether the model loaded its skill, with what it
/// loaded instead and the references no trial read.
fn activation_lines(out: &mut String, s: &RunSummary) {
    let arms: Vec<(&ArmLine, &ArmActivation)> = s
        .arms
        .iter()
        .filter_map(|a| a.activation.as_ref().map(|act| (a, act)))
        .collect();
    if arms.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nactivation (trials that loaded the arm's own skill; the baseline's: any other skill):"
    );
    for (arm, act) in arms {
        let mut line = act.rate_text();
        if let Some(turn) = &act.median_load_turn {
            let _ = write!(line, " · median turn {turn}");
        }
        let errors = act.tool_error_count();
        if errors > 0 {
            let _ = write!(
                line,
                " · {errors} tool error{}",
                if errors == 1 { "" } else { "s" }
            );
        }
        if act.turn_limit > 0 {
            let _ = write!(line, " · {} hit the turn limit", act.turn_limit);
        }
        if let (Some(files), Some(never)) = (&act.readable_files, &act.never_read)
            && !files.is_empty()
        {
            let _ = write!(
                line,
                " · {} of {} files never read",
                never.len(),
                files.len()
            );
        }
        if !act.others_instead.is_empty() {
            // A skill's name comes from its author: nothing in it may drive the terminal.
            let others: Vec<String> = act
                .others_instead
                .iter()
                .map(|o| format!("{} {}", display_safe(&o.skill), o.trials))
                .collect();
            let _ = write!(
                line,
                " · loaded {}: {}",
                if act.skill.is_some() {
                    "instead"
                } else {
                    "other skills"
                },
                others.join(", ")
            );
        }
        let _ = writeln!(out, "{:<9} {line}", arm_label(&arm.arm));
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
pub fn render(s: &RunSummary) -> String {
    table(s, true)
}

fn table(s: &RunSummary, header: bool) -> String {
    let mut out = String::new();
    let (planned, executed) = (s.planned, s.executed);
    let coverage = if s.complete {
        format!("complete: all {planned} planned trials have a model result")
    } else {
        format!("partial: {executed} of {planned} planned trials have a model result")
    };
    if header {
        let _ = writeln!(
            out,
            "run {}  {} · {coverage}",
            s.run.chars().take(12).collect::<String>(),
            s.status
        );
    } else {
        let _ = writeln!(out, "{coverage}");
    }
    if s.scripted {
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
    for arm in &s.arms {
        let ci = arm.wilson95.as_ref().map_or_else(
            || "—".to_owned(),
            |w| format!("{}–{}", pct(&w[0]), pct(&w[1])),
        );
        // An arm without a model result has no rate or interval to show: say so instead of 0/0.
        let stats = if arm.executed == 0 {
            format!("{:<26}", "no model results yet")
        } else {
            format!(
                "{:>13}  {:<11}",
                format!("{}/{}", arm.pass, arm.executed),
                ci
            )
        };
        let _ = writeln!(
            out,
            "{:<9} {:<28} {stats} {}",
            arm_label(&arm.arm),
            // A bundle's name comes from its author: nothing in it may drive the terminal.
            or_dash(arm.bundle.as_deref().map(display_safe).as_deref()),
            arm.not_model_results
        );
    }
    // With no model result at all, no task and no pair can be compared: one line says so, in
    // place of empty fixes lists and a table of dashes.
    let nothing_yet = executed == 0;
    // Consistency across repetitions, where more than one was run and some task has them all.
    let consistent: Vec<(&ArmLine, &skilltrial_core::report::Consistency)> = s
        .arms
        .iter()
        .filter_map(|a| a.consistency.as_ref().map(|c| (a, c)))
        .filter(|(_, c)| c.k > 1 && c.tasks > 0)
        .collect();
    if let Some((_, first)) = consistent.first() {
        let _ = writeln!(
            out,
            "\nconsistency over {k} repetitions (pass^{k}: tasks passed in every one; pass@{k}: in at least one):",
            k = first.k
        );
        for (arm, c) in &consistent {
            let _ = writeln!(out, "{:<9} {}", arm_label(&arm.arm), c.text());
        }
    }
    activation_lines(&mut out, s);
    if nothing_yet {
        let _ = writeln!(
            out,
            "\nWhat changed: nothing can be compared yet: no trial has a model result."
        );
    } else if s.changes != Changes::default() {
        let _ = writeln!(out);
        // A summary read back from JSON has no ranking: its lists in the report's order.
        let shown = if s.ranked == Changes::default() {
            &s.changes
        } else {
            &s.ranked
        };
        let mut cut = false;
        for (key, x, y, lists) in shown.each() {
            let Some(c) = lists else { continue };
            let label = format!("{} vs {}", arm_label(x), arm_label(y));
            // No task has a result in both arms yet: empty lists would read as "fixes nothing".
            if s.compared_tasks.get(key) == Some(&0) {
                let _ = writeln!(
                    out,
                    "{label:<14} nothing to compare yet (no task has a model result in both arms)"
                );
                continue;
            }
            let (fixes, fixes_cut) = task_list(&c.fixes);
            let (breaks, breaks_cut) = task_list(&c.breaks);
            cut |= fixes_cut || breaks_cut;
            let _ = writeln!(
                out,
                "{label:<14} fixes: {fixes}\n{:<14} breaks: {breaks}",
                ""
            );
        }
        if cut {
            let _ = writeln!(
                out,
                "{:<14} every task: --json, or the report (report.json, report.html)",
                ""
            );
        }
    }
    if !s.pairs.is_empty() && !nothing_yet {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<14} {:>6} {:>7} {:>7} {:>9} {:>9} {:>9}",
            "contrast", "pairs", "X only", "Y only", "excluded", "p", "Holm"
        );
        for p in &s.pairs {
            let contrast = match p.contrast.split_once('-') {
                Some((x, y)) => format!("{} − {}", arm_label(x), arm_label(y)),
                None => p.contrast.clone(),
            };
            let _ = writeln!(
                out,
                "{:<14} {:>6} {:>7} {:>7} {:>9} {:>9} {:>9}",
                contrast,
                p.complete_pairs,
                p.x_only,
                p.y_only,
                p.excluded,
                or_dash(p.p_readable.as_deref().or(p.p.as_deref())),
                or_dash(p.holm_p_readable.as_deref().or(p.holm_p.as_deref()))
            );
        }
        // The test and its caveat, once for every contrast.
        let tests: std::collections::BTreeSet<&str> =
            s.pairs.iter().map(|p| p.test.as_str()).collect();
        let tests: Vec<&str> = tests.into_iter().collect();
        let _ = writeln!(
            out,
            "\np: the {}; Holm-adjusted across the {}. {}",
            tests.join("; the "),
            if s.pairs.len() == 1 {
                "one contrast".to_owned()
            } else {
                format!("{} contrasts", s.pairs.len())
            },
            s.caveat
        );
    }
    let _ = writeln!(out);
    if s.complete {
        match &s.leader {
            Some(Leader {
                arm: Some(arm),
                note,
            }) => {
                let _ = writeln!(out, "Most passes: {} ({note}).", arm_label(arm));
            }
            Some(Leader { arm: None, note }) => {
                let _ = writeln!(out, "{note}");
            }
            None => {
                let _ = writeln!(out, "—");
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
    use serde_json::json;
    use skilltrial_core::delivery::{ErrorCount, ReadFile, ToolError, TrialEvidence};

    /// The committed rich report (18 trials: 6 tasks in baseline, A and B) as a progressive run:
    /// A loaded its skill in 4 of 6 trials (at turns 1, 1, 2, 2), one trial loaded `neighbour`
    /// instead and one read `references/a.md` of A's two readable files; B loaded in all 6;
    /// the baseline loaded `neighbour` once.
    fn progressive() -> Report {
        let mut report = Report::from_json(include_str!(
            "../../../core/tests/fixtures/report-v2-rich.json"
        ))
        .unwrap();
        let mut a_seen = 0;
        for trial in &mut report.trials {
            let mut e = TrialEvidence {
                turns: 2,
                catalog_bytes: 900,
                ..TrialEvidence::default()
            };
            match trial.arm.as_str() {
                "a" => {
                    a_seen += 1;
                    if a_seen <= 4 {
                        e.loaded = true;
                        e.loaded_at_turn = Some(if a_seen <= 2 { 1 } else { 2 });
                        e.skills_loaded = vec!["solana-reader".into()];
                    } else if a_seen == 5 {
                        e.skills_loaded = vec!["neighbour".into()];
                        e.tool_errors = vec![ErrorCount {
                            error: ToolError::UnknownSkill,
                            count: 1,
                        }];
                        e.turn_limit = true;
                    }
                    if a_seen == 1 {
                        e.reads = vec![ReadFile {
                            skill: "solana-reader".into(),
                            path: "references/a.md".into(),
                        }];
                    }
                }
                "b" => {
                    e.loaded = true;
                    e.loaded_at_turn = Some(1);
                    e.skills_loaded = vec!["solana-reader".into()];
                }
                _ if trial.index == 5 => e.skills_loaded = vec!["neighbour".into()],
                _ => {}
            }
            trial.evidence = Some(e);
        }
        // The readable files are the run's input: state them, then derive again.
        let mut built = skilltrial_core::report::rederive(&report);
        if let Some(arm) = built
            .activation
            .as_mut()
            .and_then(|a| a.arms.iter_mut().find(|a| a.arm == "a"))
        {
            arm.readable_files = Some(vec!["references/a.md".into(), "references/b.md".into()]);
        }
        skilltrial_core::report::rederive(&built)
    }

    #[test]
    fn a_progressive_summary_prints_one_activation_line_per_arm() {
        // Given a progressive run's report ...
        let summary = of_report(&progressive());
        let text = render(&summary);
        // ... then one line per arm says how often the model loaded its skill, with the interval.
        assert!(text.contains("\nactivation (trials that loaded the arm's own skill; the baseline's: any other skill):\n"), "{text}");
        assert!(text.contains("\nA         4/6 (67%, 95% CI 30–90%) · median turn 1.5 · 1 tool error · 1 hit the turn limit · 1 of 2 files never read · loaded instead: neighbour 1\n"), "{text}");
        assert!(
            text.contains("\nB         6/6 (100%, 95% CI 61–100%) · median turn 1\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "\nbaseline  1/6 (17%, 95% CI 3–56%) · loaded other skills: neighbour 1\n"
            ),
            "{text}"
        );
        // ... and the JSON summary carries each arm's activation.
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["arms"][1]["activation"]["loaded"], 4);
        assert_eq!(json["arms"][1]["activation"]["rate"]["den"], 6);
        // An inline report's summary has neither.
        let inline = of_report(
            &Report::from_json(include_str!(
                "../../../core/tests/fixtures/report-v2-rich.json"
            ))
            .unwrap(),
        );
        assert!(!render(&inline).contains("activation"));
        assert!(
            !serde_json::to_string(&inline)
                .unwrap()
                .contains("activation")
        );
    }

    #[test]
    fn the_table_says_each_thing_once() {
        let summary = json!({
            "run": "0123456789abcdef", "status": "finished", "complete": true, "planned": 6, "executed": 6,
            "scripted": false,
            "arms": [
                { "arm": "baseline", "bundle": null, "planned": 2, "pass": 1, "executed": 2, "not_model_results": 0, "wilson95": ["0.094531", "0.905469"] },
                { "arm": "a", "bundle": "x 1.0", "planned": 2, "pass": 2, "executed": 2, "not_model_results": 0, "wilson95": ["0.342372", "1.000000"] },
            ],
            "changes": { "a_vs_baseline": { "fixes": ["t1"], "breaks": [] } },
            "compared_tasks": { "a_vs_baseline": 1 },
            "report_hash": null, "manifest_hash": "sha256:0",
            "pairs": [{ "contrast": "a-baseline", "complete_pairs": 2, "x_only": 1, "y_only": 0, "excluded": 0, "test": "exact McNemar test over complete pairs", "p": "1", "holm_p": "1" }],
            "caveat": "Each test asks whether discordant pairs lean one way.",
            "leader": { "arm": "a", "note": "an observed count in a complete run, not a significance claim" },
        });
        let text = render(&serde_json::from_value(summary).unwrap());
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
    fn a_partial_table_shows_no_empty_statistics() {
        // A stopped run: the baseline has one result, A none yet; A against the baseline has no
        // task with a result in both arms.
        let summary = json!({
            "run": "0123456789abcdef", "status": "stopped", "complete": false, "planned": 4, "executed": 1,
            "scripted": false,
            "arms": [
                { "arm": "baseline", "bundle": null, "planned": 2, "pass": 1, "executed": 1, "not_model_results": 1, "wilson95": ["0.206549", "1.000000"] },
                { "arm": "a", "bundle": "x 1.0", "planned": 2, "pass": 0, "executed": 0, "not_model_results": 2, "wilson95": null },
            ],
            "changes": { "a_vs_baseline": { "fixes": [], "breaks": [] } },
            "compared_tasks": { "a_vs_baseline": 0 },
            "pairs": [],
            "caveat": "c",
            "leader": null,
            "report_hash": null, "manifest_hash": "sha256:0",
        });
        let text = render(&serde_json::from_value(summary).unwrap());
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

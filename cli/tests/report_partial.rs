//! Reports of a run stopped part way: every arm card adds up to its planned trials, the partial-run
//! banner is one sentence using the header's words, and a run with no model result yet says so
//! instead of printing empty statistics. The real `skilltrial` binary, a real journal, the built-in
//! scripted server, and the debug kill point that ends the process on the spot (as a crash or a
//! SIGTERM between trials would leave the run).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn skilltrial(home: &Path, args: &[&str], kill_at: Option<&str>) -> Output {
    let mut cmd = support::offline_command(home, args);
    if let Some(point) = kill_at {
        cmd.env("SKILLTRIAL_TEST_KILL_AT", point);
    }
    cmd.output().unwrap()
}

/// Starts the demo and ends it on the spot at `kill_at`; returns the run's id.
fn stopped_demo(home: &Path, kill_at: &str) -> String {
    let out = skilltrial(home, &["demo"], Some(kill_at));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(86), "{stderr}");
    let run = stderr
        .lines()
        .find_map(|l| l.split_once(", manifest ").map(|(_, h)| h.trim()))
        .unwrap_or_else(|| panic!("no manifest hash in: {stderr}"));
    run.strip_prefix("sha256:").unwrap_or(run).to_owned()
}

/// `report` of the run: (the terminal table, the JSON file, the HTML file's visible text).
fn report(home: &Path, run: &str, out: &Path) -> (String, Value, String) {
    let result = skilltrial(home, &["report", run, "--out", out.to_str().unwrap()], None);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    (
        String::from_utf8_lossy(&result.stdout).into_owned(),
        json,
        visible_text(&html),
    )
}

/// The HTML's text as a reader sees it: no style or script, tags as spaces, entities decoded.
fn visible_text(html: &str) -> String {
    let mut rest = html.to_owned();
    for (open, close) in [("<style>", "</style>"), ("<script>", "</script>")] {
        while let Some(i) = rest.find(open) {
            let j = rest[i..].find(close).unwrap() + i + close.len();
            rest.replace_range(i..j, " ");
        }
    }
    let mut out = String::new();
    let mut in_tag = false;
    for c in rest.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The card of each arm, as text: from its name to the end of its last line.
fn card_text(text: &str, arm: &Value) -> String {
    let name = match arm["bundle"].as_object() {
        None => "baseline (no skill)".to_owned(),
        Some(b) => format!(
            "{} — {} {}",
            arm["arm"].as_str().unwrap().to_uppercase(),
            b["name"].as_str().unwrap(),
            b["version"].as_str().unwrap()
        ),
    };
    let start = text
        .find(&format!("{name} "))
        .unwrap_or_else(|| panic!("no card {name:?} in {text}"));
    let card = &text[start..];
    let end = card.find(" not run ").unwrap() + " not run ".len();
    // The card ends after "not run N" and, when some trials are still waiting, "· no result yet N".
    let words: Vec<&str> = card[end..].split(' ').collect();
    let tail = if words.get(1..5) == Some(&["·", "no", "result", "yet"][..]) {
        words[..6].join(" ")
    } else {
        words[0].to_owned()
    };
    format!("{}{}", &card[..end], tail)
}

#[test]
fn a_stopped_demo_reports_every_trial_on_its_card_and_one_banner_sentence() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    // The demo stopped after its first answer, then two resumes stopped the same way: a few
    // trials have a result, most are still waiting.
    let run = stopped_demo(&home, "after_result");
    for _ in 0..2 {
        let out = skilltrial(
            &home,
            &["run", "--manifest", &run, "--yes"],
            Some("after_result"),
        );
        assert_eq!(out.status.code(), Some(86));
    }
    let (table, json, text) = report(&home, &run, &tmp.path().join("out"));
    let summary = &json["summary"];
    let (executed, planned) = (
        summary["executed"].as_u64().unwrap(),
        summary["planned"].as_u64().unwrap(),
    );
    assert_eq!(summary["complete"], false);
    assert_eq!(planned, 54);
    assert!((1..54).contains(&executed), "executed {executed}");

    // One sentence, the header's words.
    let coverage = format!("partial: {executed} of {planned} planned trials have a model result");
    assert!(text.contains(&format!("· {coverage} ·")), "{text}");
    assert!(
        text.contains(&format!(
            "Partial run: {executed} of {planned} planned trials have a model result, so no winner is named."
        )),
        "{text}"
    );
    assert!(!text.contains("Partial run. Partial"), "{text}");

    // Every card's numbers add up to its planned trials, the waiting ones included.
    let mut waiting_total = 0;
    for arm in summary["arms"].as_array().unwrap() {
        let n = |k: &str| arm[k].as_u64().unwrap();
        let waiting = n("pending");
        waiting_total += waiting;
        assert_eq!(
            n("executed")
                + n("infrastructure_error")
                + n("unknown")
                + n("interrupted")
                + n("not_run")
                + waiting,
            n("planned"),
            "{arm}"
        );
        let card = card_text(&text, arm);
        let counts = format!(
            "planned {} · infrastructure errors {} · unknown {} · interrupted {} · not run {} · no result yet {waiting}",
            n("planned"),
            n("infrastructure_error"),
            n("unknown"),
            n("interrupted"),
            n("not_run")
        );
        assert!(card.ends_with(&counts), "card {card:?}, want {counts:?}");
        if n("executed") > 0 {
            assert!(
                card.contains(&format!("{} pass of {} executed", n("pass"), n("executed"))),
                "{card}"
            );
        } else {
            assert!(card.contains("no model results yet"), "{card}");
        }
    }
    assert_eq!(waiting_total + executed, planned);

    // What changed: a contrast no task can be compared on yet says so, not "fixes: no task"; one
    // with compared tasks lists them as before.
    let compared = |verdict: &str| {
        json["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["verdicts"][verdict].is_string())
            .count()
    };
    let mut seen_empty = false;
    for (verdict, html_label, table_label) in [
        ("b_vs_a", "B against A", "B vs A"),
        ("b", "B against baseline", "B vs baseline"),
        ("a", "A against baseline", "A vs baseline"),
    ] {
        let line = format!(
            "{html_label} : nothing to compare yet (no task has a model result in both arms)."
        );
        let row = format!(
            "{table_label:<14} nothing to compare yet (no task has a model result in both arms)\n"
        );
        if compared(verdict) == 0 {
            seen_empty = true;
            assert!(text.contains(&line), "{line:?} in {text}");
            assert!(table.contains(&row), "{row:?} in {table}");
        } else {
            assert!(!text.contains(&line), "{text}");
            assert!(!table.contains(&row), "{table}");
        }
    }
    // Two trials answered (baseline and A of one task), B's answer not yet scored: B against A
    // has nothing to compare, A against baseline has one task.
    assert!(
        seen_empty,
        "the stopped demo left every contrast comparable"
    );
    assert!(compared("a") > 0, "{}", json["tasks"]);

    // The terminal table: the same header words, and each row's numbers add up to planned.
    assert!(table.contains(&coverage), "{table}");
    assert!(
        table.contains("Partial run: no winner is named."),
        "{table}"
    );
}

#[test]
fn a_run_with_no_result_yet_says_so_instead_of_empty_statistics() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let run = stopped_demo(&home, "after_plan");
    let (table, json, text) = report(&home, &run, &tmp.path().join("out"));
    assert_eq!(json["summary"]["executed"], 0);
    // Regression: the runner was killed (no process holds the run), so the report does not
    // say `running`, as `status` does not.
    assert_eq!(json["run"]["status"], "interrupted", "{}", json["run"]);

    // HTML: no "0 pass of 0 executed", no "fixes: no task".
    assert!(!text.contains("0 pass of 0 executed"), "{text}");
    assert!(!text.contains("no task"), "{text}");
    assert!(
        text.contains("What changed Nothing can be compared yet: no trial has a model result."),
        "{text}"
    );
    for arm in json["summary"]["arms"].as_array().unwrap() {
        let card = card_text(&text, arm);
        assert!(card.contains(" no model results yet "), "{card}");
        assert!(card.ends_with("not run 0 · no result yet 18"), "{card}");
    }
    assert!(
        text.contains(
            "Partial run: 0 of 54 planned trials have a model result, so no winner is named."
        ),
        "{text}"
    );

    // The terminal table says the same: no 0/0 rows, no empty fixes lists, no empty p table.
    assert!(!table.contains("0/0"), "{table}");
    assert!(!table.contains("fixes:"), "{table}");
    assert!(!table.contains("contrast "), "{table}");
    assert!(
        table.contains("baseline  —                            no model results yet       18\n"),
        "{table}"
    );
    assert!(
        table.contains("What changed: nothing can be compared yet: no trial has a model result.\n"),
        "{table}"
    );
}

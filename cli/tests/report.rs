//! Reports end to end: the demo's 54-trial scripted run, the report hash recomputed from the file
//! alone, `verify` naming every mismatch (in text and in `--json`), snapshots of the JSON and of
//! the HTML's text, and `compare` (a run without results among them, arms labelled as the report
//! labels them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use skilltrial_core::report::Report;
use skilltrial_engine::scripted::{Reply, ScriptedServer};

mod support;

use support::{Env, outcome, root, scripted_answer};

fn skilltrial(home: &Path, args: &[&str]) -> Output {
    support::offline_command(home, args).output().unwrap()
}

fn demo(home: &Path, out: &Path, reps: &str) -> Value {
    demo_on(home, out, reps, "solana-core@1.0.3")
}

fn demo_on(home: &Path, out: &Path, reps: &str, pack: &str) -> Value {
    let result = skilltrial(
        home,
        &[
            "demo",
            "--pack",
            pack,
            "--reps",
            reps,
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    serde_json::from_slice(&result.stdout).unwrap()
}

#[test]
fn the_demo_runs_54_trials_and_its_report_recomputes_from_the_file_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let doc = demo(&tmp.path().join("home"), &out, "3");
    assert_eq!(doc["scripted"], true);
    assert_eq!(doc["status"], "finished");

    // The JSON file verifies on its own: report hash and manifest hash both recompute.
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    let (report_hash, manifest_hash) = Report::from_value(&file).unwrap().verify().unwrap();
    assert_eq!(
        report_hash.to_string(),
        doc["report_hash"].as_str().unwrap()
    );
    assert_eq!(
        manifest_hash.to_string(),
        file["manifest_hash"].as_str().unwrap()
    );

    // The counts add up.
    let summary = &file["summary"];
    assert_eq!(summary["planned"], 54);
    assert_eq!(summary["executed"], 54);
    let mut total = 0;
    for arm in summary["arms"].as_array().unwrap() {
        assert_eq!(arm["planned"], 18);
        let outcomes: u64 = [
            "pass",
            "fail",
            "invalid_output",
            "unsupported_case",
            "infrastructure_error",
            "unknown",
            "interrupted",
            "not_run",
            "pending",
        ]
        .iter()
        .map(|k| arm[*k].as_u64().unwrap())
        .sum();
        assert_eq!(outcomes, 18);
        total += outcomes;
    }
    assert_eq!(total, 54);
    let passes: Vec<u64> = summary["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["pass"].as_u64().unwrap())
        .collect();
    assert_eq!(
        passes,
        vec![1, 11, 16],
        "the script's story: baseline, A, B"
    );
    assert_eq!(summary["leader"]["arm"], "b");
    assert_eq!(file["trials"].as_array().unwrap().len(), 54);

    // The sign-flip test over per-task differences (3 repetitions: the task is the unit), with
    // the values enumerated independently from the demo script (test audit §9).
    let pairs: Vec<(&str, &str, &str, &str)> = file["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["test"]["units"], 6, "{}", p["contrast"]);
            (
                p["contrast"].as_str().unwrap(),
                p["test"]["p"]["text"].as_str().unwrap(),
                p["test"]["holm_p"]["text"].as_str().unwrap(),
                p["test"]["holm_p"]["value"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        vec![
            ("a-baseline", "1/8", "1/4", "0.250000"),
            ("b-baseline", "1/32", "3/32", "0.093750"),
            ("b-a", "3/8", "3/8", "0.375000"),
        ]
    );
    for p in file["pairs"].as_array().unwrap() {
        assert_eq!(p["excluded"], serde_json::json!([]), "a complete run");
        assert!(
            p["test"]["name"]
                .as_str()
                .unwrap()
                .starts_with("exact sign-flip")
        );
    }
    // The first screen's answer: what B fixes and breaks against A and the baseline.
    assert_eq!(
        summary["changes"]["b_vs_a"],
        serde_json::json!({ "fixes": ["acct-t22-fzyeg-mint", "plan-t22-fee-memo"], "breaks": ["tx-legacy-nonce-bonk"] })
    );
    assert_eq!(
        summary["changes"]["b_vs_baseline"]["breaks"],
        serde_json::json!([])
    );
    // The runner's own time is measured on every attempt, never derived from the wall clock.
    let runner_us: u64 = file["trials"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["attempts"].as_array().unwrap())
        .map(|a| a["runner_us"].as_u64().expect("every attempt measured"))
        .sum();
    assert_eq!(file["cost"]["runner_time_us"], runner_us);
    assert_eq!(file["cost"]["runner_time_unmeasured_attempts"], 0);

    // The scripted label is everywhere.
    assert_eq!(file["manifest"]["model"]["scripted"], true);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Scripted model."));
    // A changed byte breaks the hash, and `skilltrial verify` says so from the file alone.
    let tampered = text.replacen("\"pass\": 16", "\"pass\": 17", 1);
    assert!(Report::from_json(&tampered).unwrap().verify().is_err());
    let ok = skilltrial(
        tmp.path(),
        &["verify", out.join("report.json").to_str().unwrap()],
    );
    assert_eq!(ok.status.code(), Some(0));
    let bad_path = tmp.path().join("tampered.json");
    std::fs::write(&bad_path, tampered).unwrap();
    let bad = skilltrial(tmp.path(), &["verify", bad_path.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
}

/// Replaces what differs between runs (ids, hashes, ports, times) with stable placeholders.
fn normalize(value: &mut Value, run: &str) {
    match value {
        Value::String(s) => {
            if s.starts_with("http://127.0.0.1:") {
                *s = "http://127.0.0.1:<port>".to_owned();
            }
            *s = redact_attempt_nonces(&s.replace(run, "<run>").replace(&run[..12], "<run12>"));
            if s.starts_with("sha256:") && s.len() == 71 && (s.contains(&run[..16]) || s == "<run>")
            {
                *s = "sha256:<run>".to_owned();
            }
        }
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key.ends_with("_ms")
                    || key.ends_with("_us")
                    || key == "report_hash"
                    || key == "source_sha256"
                    || key == "manifest_hash"
                    || key == "seed"
                {
                    *v = Value::String(format!("<{key}>"));
                } else {
                    normalize(v, run);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| normalize(v, run)),
        _ => {}
    }
}

#[test]
fn report_json_and_html_text_snapshots() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let doc = demo(&tmp.path().join("home"), &out, "1");
    let run = doc["run"].as_str().unwrap().to_owned();
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    normalize(&mut file, &run);
    // Answers are long; their hashes stand for them in the snapshot.
    for trial in file["trials"].as_array_mut().unwrap() {
        for attempt in trial["attempts"].as_array_mut().unwrap() {
            if let Some(answer) = attempt["answer"].as_str() {
                attempt["answer"] = Value::String(format!("<{} bytes>", answer.len()));
            }
        }
    }
    insta::assert_snapshot!("report_json", serde_json::to_string_pretty(&file).unwrap());

    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    // Model time varies from run to run; its chart (the only one) is left out of both.
    let html = without_chart(&html, "chart-time");
    // The charts' markup, one tag a line, so a chart change is a visible diff.
    let charts: Vec<&str> = html
        .split("<figure class=\"chart\">")
        .skip(1)
        .map(|f| f.split("</figure>").next().unwrap())
        .collect();
    assert!(charts.len() >= 7, "the report's charts: {}", charts.len());
    insta::assert_snapshot!(
        "report_html_charts",
        charts.join("\n\n").replace("><", ">\n<")
    );
    let body = html.split("<body>").nth(1).unwrap();
    let body = body.split("<script>").next().unwrap();
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push('\n');
            }
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let text = lines
        .join("\n")
        .replace(&run, "<run>")
        .replace(&run[..12], "<run12>");
    let text = regex_lite_ms(&redact_attempt_nonces(&text));
    // The answers in the evidence view are escaped JSON; keep the snapshot to the first view's
    // worth of structure plus every heading.
    insta::assert_snapshot!("report_html_text", text);
}

/// The page without the chart figure whose SVG has `id`.
fn without_chart(html: &str, id: &str) -> String {
    let svg = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no {id}"));
    let start = html[..svg].rfind("<figure").unwrap();
    let end = svg + html[svg..].find("</figure>").unwrap() + "</figure>".len();
    format!("{}{}", &html[..start], &html[end..])
}

/// Replaces the random part of attempt ids (`<run12>-<trial>-<seq>-<12 hex>`) with `<random>`.
fn redact_attempt_nonces(text: &str) -> String {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("<run12>-") {
        out.push_str(&rest[..i + 8]);
        rest = &rest[i + 8..];
        let trial = digits(rest);
        if trial == 0 || !rest[trial..].starts_with('-') {
            continue;
        }
        let seq = digits(&rest[trial + 1..]);
        let dash = trial + 1 + seq;
        let nonce = rest.get(dash + 1..dash + 13).unwrap_or("");
        if seq > 0
            && rest[dash..].starts_with('-')
            && nonce.len() == 12
            && nonce.bytes().all(|b| b.is_ascii_hexdigit())
        {
            out.push_str(&rest[..=dash]);
            out.push_str("<random>");
            rest = &rest[dash + 13..];
        }
    }
    out.push_str(rest);
    out
}

/// Replaces "<digits> ms" and sha256 values that vary between runs.
fn regex_lite_ms(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.ends_with(" ms")
                || l.starts_with("model latency")
                || l.contains("runner's own time")
            {
                "<time>".to_owned()
            } else if let Some(at) = l.find(" UTC")
                && at >= 16
            {
                // The run's date and time in the header: "2026-11-30 15:02 UTC".
                format!("{}<date>{}", &l[..at - 16], &l[at..])
            } else if l.contains(" UTC") {
                "<time>".to_owned()
            } else if l.starts_with("sha256:")
                || l.contains("http://127.0.0.1:")
                // The manifest's <pre> is HTML-escaped: its keys read `&quot;seed&quot;`.
                || l.starts_with("&quot;source_sha256&quot;")
                || l.starts_with("&quot;seed&quot;")
            {
                "<varies>".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn compare_shows_comparable_runs_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let first = demo(&home, &tmp.path().join("one"), "1")["run"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = demo(&home, &tmp.path().join("two"), "1")["run"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first, second, "each demo pins its own scripted endpoint");
    let out = skilltrial(&home, &["compare", &first, &second, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["comparable"], true);
    assert_eq!(doc["runs"], serde_json::json!([first, second]));
    // Side by side: one row per arm, each run's counts (the scripted story is deterministic).
    let row = |arm: &str, pass: u64| {
        let cell = serde_json::json!({ "pass": pass, "executed": 6, "planned": 6 });
        (arm.to_owned(), cell.clone(), cell)
    };
    let rows: Vec<(String, Value, Value)> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let strip = |v: &Value| {
                serde_json::json!({ "pass": v["pass"], "executed": v["executed"], "planned": v["planned"] })
            };
            (
                r["arm"].as_str().unwrap().to_owned(),
                strip(&r["first"]),
                strip(&r["second"]),
            )
        })
        .collect();
    let expected: Vec<(String, Value, Value)> = ["baseline", "a", "b"]
        .iter()
        .zip(doc_passes(&home, &first))
        .map(|(arm, pass)| row(arm, pass))
        .collect();
    assert_eq!(rows, expected);
    // What compare checks, listed for the docs and asserted so the list cannot drift silently.
    assert_eq!(
        doc["compared"],
        serde_json::json!([
            "model provider",
            "model",
            "model revision",
            "scripted model",
            "models the API reported",
            "system fingerprints",
            "pack",
            "checker version",
            "checker source",
            "checker behind the verdicts",
            "sampling and output limit",
            "prompt template",
            "delivery"
        ])
    );
    // The text mode shows the same rows.
    let text = skilltrial(&home, &["compare", &first, &second]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("baseline"), "{text}");
    assert_eq!(text.matches("/6 pass").count(), 6, "{text}");
}

/// Pass counts per arm (baseline, a, b) of a run, from `report --json`.
fn doc_passes(home: &Path, run: &str) -> Vec<u64> {
    let out = skilltrial(home, &["report", run, "--json"]);
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["pass"].as_u64().unwrap())
        .collect()
}

#[test]
fn compare_refuses_runs_of_different_models_naming_what_differs() {
    use skilltrial_engine::scripted::{Reply, ScriptedServer};
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let scripted = demo(&home, &tmp.path().join("one"), "1")["run"]
        .as_str()
        .unwrap()
        .to_owned();
    // A second run on another model, served by a loopback server.
    let server = ScriptedServer::start(|_| Reply::Answer("not sure".into())).unwrap();
    let profiles = tmp.path().join("profiles.toml");
    std::fs::write(
        &profiles,
        support::profile_toml(
            "other",
            "other-model",
            &server.url(),
            (100_000, 512),
            Some(("1", "1")),
        ),
    )
    .unwrap();
    let plan = skilltrial(
        &home,
        &[
            "plan",
            "--model",
            "other",
            "--profiles",
            profiles.to_str().unwrap(),
            "--reps",
            "1",
            "--cap-usd",
            "1",
            "--json",
        ],
    );
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );
    let other = serde_json::from_slice::<Value>(&plan.stdout).unwrap()["run"]
        .as_str()
        .unwrap()
        .to_owned();
    let ran = Command::new(env!("CARGO_BIN_EXE_skilltrial"))
        .args(["run", "--manifest", &other, "--home"])
        .arg(&home)
        .env("ANTHROPIC_API_KEY", "test-key")
        .output()
        .unwrap();
    assert!(ran.status.success());
    let out = skilltrial(&home, &["compare", &scripted, &other, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["comparable"], false);
    let what: Vec<&str> = doc["differs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["what"].as_str().unwrap())
        .collect();
    assert!(
        what.contains(&"model") && what.contains(&"scripted model"),
        "{what:?}"
    );
}

/// A loopback profile file for `plan --profiles`.
fn loopback_profile(dir: &Path, url: &str) -> PathBuf {
    let profiles = dir.join("profiles.toml");
    std::fs::write(
        &profiles,
        support::profile_toml(
            "loopback",
            "loopback-model",
            url,
            (100_000, 512),
            Some(("1", "1")),
        ),
    )
    .unwrap();
    profiles
}

fn with_key(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skilltrial"))
        .args(args)
        .arg("--home")
        .arg(home)
        .current_dir(root())
        .env("ANTHROPIC_API_KEY", "test-key")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Plans a paired run (baseline, A, B) on the loopback profile and returns its id.
fn plan_paired(home: &Path, profiles: &Path, reps: &str) -> String {
    let args = support::paired_plan_args(profiles, &["--reps", reps, "--cap-usd", "4", "--json"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let plan = with_key(home, &args);
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    serde_json::from_slice::<Value>(&plan.stdout).unwrap()["run"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_report_with_incomplete_pairs_lists_every_excluded_tuple() {
    use skilltrial_engine::scripted::{Reply, ScriptedServer};
    // Given a paired run in which two requests die halfway (each trial stays `unknown`) ...
    let server = ScriptedServer::start(|r| match r.index {
        3 | 10 => Reply::DieHalfway("{}".into()),
        _ => Reply::Answer("not sure".into()),
    })
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let profiles = loopback_profile(tmp.path(), &server.url());
    let run = plan_paired(&home, &profiles, "1");
    let ran = with_key(&home, &["run", "--manifest", &run]);
    assert!(ran.status.success());
    // (`run` ends with the compact table, the caveat once; progress went to stderr as plain
    // lines, since stderr is not a terminal here.)
    let table = String::from_utf8(ran.stdout).unwrap();
    assert!(
        table.contains("partial: 16 of 18 planned trials have a model result"),
        "{table}"
    );
    assert!(table.contains("pass/executed"), "{table}");
    assert!(table.contains("B − A"), "{table}");
    assert_eq!(
        table
            .matches("says nothing about tasks outside this pack")
            .count(),
        1,
        "{table}"
    );
    assert!(
        table.contains("Partial run: no winner is named."),
        "{table}"
    );
    let progress = String::from_utf8(ran.stderr).unwrap();
    assert!(progress.contains("[18/18] "), "{progress}");
    assert!(
        !progress.contains('\x1b'),
        "no terminal codes off a terminal"
    );
    // When its report is written ...
    let out = skilltrial(
        &home,
        &[
            "report",
            &run,
            "--out",
            tmp.path().join("r").to_str().unwrap(),
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("r/report.json")).unwrap())
            .unwrap();
    // ... then every contrast that involves an unknown trial's arm lists its (task, repetition)
    // as excluded, with the reason, and counts only the complete pairs.
    let unknown: Vec<(String, String)> = file["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["outcome"] == "unknown")
        .map(|t| {
            (
                t["task"].as_str().unwrap().to_owned(),
                t["arm"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(unknown.len(), 2, "{unknown:?}");
    assert_eq!(file["summary"]["complete"], false);
    for pair in file["pairs"].as_array().unwrap() {
        let (x, y) = (pair["x"].as_str().unwrap(), pair["y"].as_str().unwrap());
        let mut expected: Vec<Value> = unknown
            .iter()
            .filter(|(_, arm)| arm == x || arm == y)
            .map(|(task, arm)| serde_json::json!({ "task": task, "repetition": 1, "reason": format!("{arm}: unknown") }))
            .collect();
        let mut excluded = pair["excluded"].as_array().unwrap().clone();
        let key = |v: &Value| v["task"].as_str().unwrap().to_owned();
        expected.sort_by_key(key);
        excluded.sort_by_key(key);
        assert_eq!(excluded, expected, "{}", pair["contrast"]);
        assert_eq!(
            pair["complete_pairs"].as_u64().unwrap(),
            6 - expected.len() as u64
        );
    }
    // The HTML's header and banner tell the same story.
    let html = std::fs::read_to_string(tmp.path().join("r/report.html")).unwrap();
    assert!(
        html.contains("partial: 16 of 18 planned trials have a model result"),
        "header"
    );
    assert!(html.contains("<strong>Partial run:</strong> 16 of 18 planned trials have a model result, so no winner is named."), "banner");
}

#[test]
fn a_pause_between_run_invocations_is_not_runner_time() {
    use skilltrial_engine::scripted::{Reply, ScriptedServer};
    // Given a run executed in two invocations with a pause between them ...
    let server = ScriptedServer::start(|_| Reply::Answer("not sure".into())).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let profiles = loopback_profile(tmp.path(), &server.url());
    let run = plan_paired(&home, &profiles, "1");
    assert!(
        with_key(
            &home,
            &["run", "--manifest", &run, "--max-dispatch", "3", "--json"]
        )
        .status
        .success()
    );
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(
        with_key(&home, &["run", "--manifest", &run, "--json"])
            .status
            .success()
    );
    // When it is reported ...
    let out = skilltrial(
        &home,
        &[
            "report",
            &run,
            "--out",
            tmp.path().join("r").to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success());
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("r/report.json")).unwrap())
            .unwrap();
    // ... then the runner's own time is what the engine measured per attempt: the pause (and
    // the wall clock it spans) is not in it.
    let cost = &file["cost"];
    // Whatever the machine's speed, the work of both invocations fits in the wall clock
    // without the pause; wall clock minus model latency (the old figure) does not.
    let wall = cost["run_wall_ms"].as_u64().unwrap();
    assert!(wall >= 2500, "{cost}");
    assert!(
        cost["runner_time_ms"].as_u64().unwrap() <= wall - 2500,
        "{cost}"
    );
    assert_eq!(cost["runner_time_unmeasured_attempts"], 0, "{cost}");
}

#[test]
fn report_json_means_output_format_and_files_have_their_own_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let demo_doc = demo(&home, &tmp.path().join("demo"), "1");
    let run = demo_doc["run"].as_str().unwrap().to_owned();
    // --json: the summary on stdout, both files in the run's report directory.
    let out = skilltrial(&home, &["report", &run, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let dir = home.join("reports").join(&run[..12]);
    assert_eq!(doc["json"], dir.join("report.json").display().to_string());
    assert_eq!(doc["html"], dir.join("report.html").display().to_string());
    assert!(dir.join("report.json").is_file() && dir.join("report.html").is_file());
    // The same summary `demo --json` printed for this run (files aside), and the text mode
    // prints the same table.
    let strip = |mut v: Value| {
        let map = v.as_object_mut().unwrap();
        map.remove("json");
        map.remove("html");
        v
    };
    assert_eq!(strip(doc.clone()), strip(demo_doc));
    assert_eq!(doc["arms"].as_array().unwrap().len(), 3);
    // Each file where its own flag says.
    let (j, h) = (tmp.path().join("x/one.json"), tmp.path().join("y/two.html"));
    let out = skilltrial(
        &home,
        &[
            "report",
            &run,
            "--out-json",
            j.to_str().unwrap(),
            "--out-html",
            h.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("json    {}", j.display())), "{text}");
    assert!(text.contains("pass/executed"), "{text}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(written["format"], "skilltrial-report-v2");
    assert!(Report::from_value(&written).unwrap().verify().is_ok());
    assert!(
        std::fs::read_to_string(&h)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
    // The old file-choosing `--html` flag is gone, with clap's usage error.
    let old = skilltrial(&home, &["report", &run, "--html"]);
    assert_eq!(old.status.code(), Some(2));
}

#[test]
fn verify_names_the_file_when_json_is_not_a_report() {
    // Given JSON files that are not reports of this format: another document, and a report with
    // a member this format does not have ...
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other.json");
    std::fs::write(&other, "{\"hello\": 1}").unwrap();
    let v3 = tmp.path().join("v3.json");
    std::fs::write(&v3, "{\"format\": \"skilltrial-report-v3\"}").unwrap();
    let fixture = root().join("core/tests/fixtures/report-v2-rich.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    doc["cost"]["bonus_usd_micros"] = Value::from(1);
    let extra = tmp.path().join("extra.json");
    std::fs::write(&extra, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    for (path, why) in [
        (&other, "it has no format member"),
        (&v3, "its format is \"skilltrial-report-v3\""),
        (&extra, "unknown field `bonus_usd_micros`"),
    ] {
        // ... when `verify` reads them ...
        let out = skilltrial(tmp.path(), &["verify", path.to_str().unwrap()]);
        // ... then it refuses each as a rejected input (exit 1), naming the file and the member.
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stderr.starts_with(&format!(
                "error: {}: not a skilltrial-report-v2 report: {why}",
                path.display()
            )),
            "{stderr}"
        );
    }
    // And the committed v2 report itself verifies from the file alone.
    let ok = skilltrial(
        tmp.path(),
        &[
            "verify",
            root()
                .join("core/tests/fixtures/report-v2-rich.json")
                .to_str()
                .unwrap(),
        ],
    );
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
}

/// On the 46-task pack the summary text names at most 5 tasks per list, the clearest first, with
/// the count and where every task is, and shows p as a number to read; the JSON keeps every task
/// and the exact fractions, and the HTML report reads p too.
fn a_big_summary_reads_well(home: &Path, summary: &Value, file: &Value, out: &Path) {
    // The JSON summary (`demo --json`): every task, the exact p beside the readable one.
    let pair = |contrast: &str| {
        summary["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["contrast"] == contrast)
            .unwrap()
            .clone()
    };
    let b_base = pair("b-baseline");
    assert_eq!(b_base["p"], "1/35184372088832");
    assert_eq!(b_base["p_readable"], "2.8e-14");
    assert_eq!(b_base["holm_p"], "3/35184372088832");
    assert_eq!(b_base["holm_p_readable"], "8.5e-14");
    let fixes: Vec<String> = summary["changes"]["b_vs_baseline"]["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    assert!(fixes.len() > 5, "{fixes:?}");
    assert_eq!(
        file["summary"]["changes"]["b_vs_baseline"]["fixes"],
        summary["changes"]["b_vs_baseline"]["fixes"],
        "the JSON keeps the full list, in the report's order"
    );

    // When the same run's summary is read as text (`report`, as `demo` prints it)
    let again = home.parent().unwrap().join("again");
    let text = skilltrial(home, &["report", "--out", again.to_str().unwrap()]);
    assert!(text.status.success(), "{text:?}");
    let text = String::from_utf8(text.stdout).unwrap();
    // Then no list is a wall: each names at most 5 tasks, with the count and how many more
    for line in text.lines() {
        let Some((_, list)) = line
            .split_once("fixes: ")
            .or_else(|| line.split_once("breaks: "))
        else {
            continue;
        };
        let named = list
            .split_once("clearest: ")
            .map_or(list, |(_, l)| l.split(" (and ").next().unwrap());
        assert!(named.split(", ").count() <= 5, "{line}\n{text}");
    }
    let line = text
        .lines()
        .find(|l| l.starts_with("B vs baseline  fixes: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with(&format!(
            "B vs baseline  fixes: {} tasks, the 5 clearest: ",
            fixes.len()
        )),
        "{line}"
    );
    assert!(
        line.ends_with(&format!("(and {} more)", fixes.len() - 5)),
        "{line}"
    );
    assert!(
        text.contains("every task: --json, or the report (report.json, report.html)"),
        "{text}"
    );
    // ... the clearest first: no named task has a smaller pass-rate gap than one left unnamed
    let gap = |task: &str| -> f64 {
        let row = file["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == task)
            .unwrap();
        let rate = |arm: &str| {
            row["arms"][arm]["pass"].as_f64().unwrap()
                / row["arms"][arm]["executed"].as_f64().unwrap()
        };
        rate("b") - rate("baseline")
    };
    let named: Vec<&str> = line
        .split_once("clearest: ")
        .unwrap()
        .1
        .split(" (and ")
        .next()
        .unwrap()
        .split(", ")
        .collect();
    let least_named = named.iter().map(|t| gap(t)).fold(f64::INFINITY, f64::min);
    for task in fixes.iter().filter(|t| !named.contains(&t.as_str())) {
        assert!(gap(task) <= least_named, "{task} is clearer than {named:?}");
    }
    // ... and p is a number to read in the contrast table
    let row = text
        .lines()
        .find(|l| l.starts_with("B − baseline"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains(" 2.8e-14 ") && row.ends_with(" 8.5e-14"),
        "{row}"
    );
    assert!(!row.contains("35184372088832"), "{row}");

    // The HTML report keeps full lists and reads p, with the exact fraction beside it.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("p = 2.8e-14 (1/35184372088832) · Holm-adjusted 8.5e-14 (3/35184372088832)"),
        "the HTML report reads p"
    );
}

/// On the 46-task pack the scripted demo reaches significance (B against the baseline
/// and against A, after Holm), which six tasks never can, and `plan` states each pack's bound.
#[test]
fn the_larger_pack_s_demo_reaches_significance_and_plan_states_the_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let out = tmp.path().join("out");
    let summary = demo_on(&home, &out, "3", "solana-core@2.0.0");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    Report::from_value(&file).unwrap().verify().unwrap();
    a_big_summary_reads_well(&home, &summary, &file, &out);
    assert_eq!(file["manifest"]["pack"]["id"], "solana-core@2.0.0");
    assert_eq!(file["summary"]["executed"], 414);
    let holm = |contrast: &str| -> f64 {
        let pair = file["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["contrast"] == contrast)
            .unwrap_or_else(|| panic!("no contrast {contrast}"));
        pair["test"]["holm_p"]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(holm("b-baseline") < 0.05, "B against the baseline");
    assert!(holm("b-a") < 0.05, "B against A");
    let caveat = file["summary"]["caveat"].as_str().unwrap();
    assert!(
        caveat.contains("Over 46 tasks the smallest p a contrast can reach is 1/35184372088832"),
        "{caveat}"
    );
    // Outcomes of every kind: right, wrong, invalid and unsupported answers.
    let arms = file["summary"]["arms"].as_array().unwrap();
    for outcome in ["pass", "fail", "unsupported_case"] {
        let total: u64 = arms.iter().map(|a| a[outcome].as_u64().unwrap()).sum();
        assert!(total > 0, "no {outcome}");
    }

    // `plan` prints the bound beside the budget bounds, for either pack.
    let bundles = support::root().join("fixtures/bundles");
    let plan = |pack: &str, json: bool| {
        let a = bundles.join("solana-reader-1.4.2");
        let b = bundles.join("solana-reader-1.5.0");
        let mut args = vec![
            "plan",
            "--pack",
            pack,
            "--model",
            "gpt-4.1@2025-04-14",
            "--a",
            a.to_str().unwrap(),
            "--b",
            b.to_str().unwrap(),
            "--cap-usd",
            "40",
            "--max-requests",
            "500",
        ];
        if json {
            args.push("--json");
        }
        let out = skilltrial(&home, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let six = plan("solana-core@1.0.3", false);
    assert!(
        six.contains("power     the smallest p the paired test can reach over 6 tasks is 0.031 (0.094 after Holm over 3 contrasts; exactly 1/32 and 3/32)"),
        "{six}"
    );
    // The larger pack's bound reads as a number, the exact fractions beside it.
    let big = plan("solana-core@2.0.0", false);
    assert!(
        big.contains("over 46 tasks is 2.8e-14 (8.5e-14 after Holm over 3 contrasts; exactly 1/35184372088832 and 3/35184372088832)"),
        "{big}"
    );
    assert!(
        six.contains("no contrast can read significant at 0.05"),
        "{six}"
    );
    let doc: Value = serde_json::from_str(&plan("solana-core@2.0.0", true)).unwrap();
    assert_eq!(doc["power"]["tasks"], 46);
    assert_eq!(doc["power"]["contrasts"], 3);
    assert_eq!(doc["power"]["smallest_p"]["text"], "1/35184372088832");
    assert_eq!(doc["power"]["smallest_holm_p"]["text"], "3/35184372088832");
    assert_eq!(doc["power"]["can_reach_0_05"], true);

    // Bad input: an unknown pack and too many repetitions for the demo's cap, each named.
    let bad = skilltrial(&home, &["demo", "--pack", "solana-core@9.9.9"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("no pack `solana-core@9.9.9`"), "{err}");
    let bad = skilltrial(
        &home,
        &["demo", "--pack", "solana-core@2.0.0", "--reps", "4"],
    );
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--reps 4") && err.contains("use --reps 3 or fewer"),
        "{err}"
    );
}

#[test]
fn verify_json_names_every_mismatch_in_the_shape_of_a_success() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let out_dir = env.dir.path().join("r");
    env.json(&["report", &run, "--out", out_dir.to_str().unwrap(), "--json"]);
    let path = out_dir.join("report.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let (report_hash, manifest_hash) = (
        doc["report_hash"].as_str().unwrap().to_owned(),
        doc["manifest_hash"].as_str().unwrap().to_owned(),
    );
    assert_eq!(
        env.json(&["verify", path.to_str().unwrap(), "--json"]),
        serde_json::json!({
            "ok": true,
            "pending": false,
            "report_hash": { "stated": report_hash, "recomputed": report_hash, "ok": true },
            "manifest_hash": { "stated": manifest_hash, "recomputed": manifest_hash, "ok": true },
            "derived": { "ok": true, "differences": [] },
        })
    );
    // A summary its trials do not give, sealed again so both hashes recompute: still named.
    let mut forged = skilltrial_core::report::Report::from_value(&doc).unwrap();
    let pass = forged.summary.arms[1].pass;
    forged.summary.arms[1].pass = pass + 3;
    forged.seal().unwrap();
    let forged_path = env.dir.path().join("forged.json");
    std::fs::write(
        &forged_path,
        serde_json::to_string_pretty(&forged.to_value().unwrap()).unwrap(),
    )
    .unwrap();
    let (code, stdout, _) = outcome(env.run(&["verify", forged_path.to_str().unwrap(), "--json"]));
    assert_eq!(code, Some(1));
    let got: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (&got["ok"], &got["report_hash"]["ok"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    assert_eq!(
        got["derived"],
        serde_json::json!({ "ok": false, "differences": [
            { "path": "summary.arms[1].pass", "stated": (pass + 3).to_string(), "derived": pass.to_string() },
        ]})
    );
    let (code, text, _) = outcome(env.run(&["verify", forged_path.to_str().unwrap()]));
    assert_eq!(code, Some(1));
    assert_eq!(
        text,
        format!(
            "MISMATCH: summary.arms[1].pass: the report states {}, its trials give {pass}\n",
            pass + 3
        )
    );
    // An edited manifest breaks both hashes, and both are named.
    let mut edited = doc.clone();
    edited["manifest"]["repetitions"] = serde_json::json!(9);
    let edited_path = env.dir.path().join("edited.json");
    std::fs::write(&edited_path, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    let (code, stdout, _) = outcome(env.run(&["verify", edited_path.to_str().unwrap(), "--json"]));
    assert_eq!(code, Some(1));
    let got: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(got["ok"], false);
    assert_eq!(got["report_hash"]["stated"], report_hash.as_str());
    assert_eq!(got["report_hash"]["ok"], false);
    assert_ne!(got["report_hash"]["recomputed"], report_hash.as_str());
    assert_eq!(got["manifest_hash"]["stated"], manifest_hash.as_str());
    assert_eq!(got["manifest_hash"]["ok"], false);
    let recomputed = got["manifest_hash"]["recomputed"].as_str().unwrap();
    assert_ne!(recomputed, manifest_hash);
    let (code, text, _) = outcome(env.run(&["verify", edited_path.to_str().unwrap()]));
    assert_eq!(code, Some(1));
    assert_eq!(
        text,
        format!(
            "MISMATCH: report hash: the file states {report_hash}, the content hashes to {}\nMISMATCH: manifest hash: the file states {manifest_hash}, the manifest hashes to {recomputed}\n",
            got["report_hash"]["recomputed"].as_str().unwrap()
        )
    );
    // A file that is not JSON is an error in the CLI's error convention.
    let not_json = env.dir.path().join("not.json");
    std::fs::write(&not_json, "nope").unwrap();
    let (code, stdout, _) = outcome(env.run(&["verify", not_json.to_str().unwrap(), "--json"]));
    assert_eq!(code, Some(1));
    let got: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(got["error"]["kind"], "rejected");
    assert_eq!(
        got["error"]["message"],
        format!(
            "{} is not JSON: expected ident at line 1 column 2",
            not_json.display()
        )
    );
}

#[test]
fn compare_with_a_run_without_results_and_arm_labels_read_a_and_b() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let planned = env.plan_seeded("8", &["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    // A run with no model results yet reported no models: that contradicts nothing.
    let doc = env.json(&["compare", &run, &planned, "--json"]);
    assert_eq!(doc["comparable"], true);
    assert_eq!(doc["rows"][1]["arm"], "a");
    let (code, text, _) = outcome(env.run(&["compare", &run, &planned]));
    assert_eq!(code, Some(0));
    let arms: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(arms, ["baseline", "A", "B"], "{text}");
    // The HTML coverage table labels the arms the same way.
    let out_dir = env.dir.path().join("r");
    env.json(&["report", &run, "--out", out_dir.to_str().unwrap(), "--json"]);
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    let coverage = html.split("<h3>Coverage</h3>").nth(1).unwrap();
    let coverage = coverage.split("</table>").next().unwrap();
    assert!(coverage.contains("<tr><td>A</td>"), "{coverage}");
    assert!(coverage.contains("<tr><td>B</td>"), "{coverage}");
    assert!(!coverage.contains("<tr><td>a</td>"), "{coverage}");
    // And so do the per-task matrix and the cost table.
    assert!(html.contains("<th class=\"num\">A</th><th class=\"num\">B</th>"));
    assert!(!html.contains("<tr><td>a</td>"), "cost table");
}

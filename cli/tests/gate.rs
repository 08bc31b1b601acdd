//! `skilltrial gate`: each verdict and its exit code (0 cleared, 1 missed, 3 inconclusive, 2 every
//! error), a policy pinned at plan time and refused once edited, an unpinned policy said so, every
//! output format, an exported report judged like its run, and refusals that change nothing. The
//! real binary, a real journal and a loopback server speaking the Anthropic wire format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::gate::DEFAULT_POLICY;
use skilltrial_engine::scripted::{Reply, ScriptedServer};
use support::{Env, scripted_answer};

/// The task B fails in every repetition (A passes it: the skills get golden answers).
const BROKEN: &str = "tx-legacy-nonce-bonk";

/// Golden answers for both skills, except B's answers to `broken` (if any).
fn server(broken: Option<&'static str>) -> ScriptedServer {
    ScriptedServer::start(move |r| {
        let user = r.user_text();
        let is_b = user.contains("version=\"1.5.0\"");
        match broken {
            Some(task) if is_b && user.contains(&format!("<task id=\"{task}\"")) => {
                Reply::Answer("I cannot decode this.".into())
            }
            _ => Reply::Answer(scripted_answer(r)),
        }
    })
    .unwrap()
}

/// Plans (seed 7, one repetition, then `extra`) and runs to the end; returns the run id.
fn ran(env: &Env, extra: &[&str]) -> String {
    let mut args = vec!["--reps", "1", "--cap-usd", "1"];
    args.extend_from_slice(extra);
    let run = env.plan(&args);
    let out = env.run(&["run", "--manifest", &run, "--json"]);
    assert!(out.status.success(), "{}", said(&out));
    run
}

fn said(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `gate` with `args`: (exit code, stdout, stderr).
fn gate(env: &Env, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["gate"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn gate_json(env: &Env, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let (code, stdout, stderr) = gate(env, &all);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (code, doc)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

const FAMILIES: &str = r#"format = "skilltrial-gate-v1"
[evidence]
min_pairs = 5
[[rule]]
kind = "families-at-least"
arm = "b"
against = "baseline"
[[rule]]
kind = "no-breaks"
arm = "b"
against = "a"
"#;

#[test]
fn a_b_that_breaks_a_task_a_passes_misses_the_default_gate_in_every_format() {
    let server = server(Some(BROKEN));
    let env = Env::new(&server);
    let run = ran(&env, &[]);

    let (code, doc) = gate_json(&env, &[&run]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["verdict"], "missed");
    assert_eq!(doc["exit_code"], 1);
    assert_eq!(doc["run"], run.as_str());
    assert_eq!(doc["policy"]["source"], "default");
    assert_eq!(
        doc["policy"]["sha256"],
        Sha256Digest::of(DEFAULT_POLICY.as_bytes()).to_string()
    );
    assert_eq!(doc["run_reasons"], serde_json::json!([]));
    let rules = doc["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0]["name"], "no-breaks: B vs A");
    assert_eq!(rules[0]["verdict"], "missed");
    assert_eq!(
        rules[0]["details"],
        serde_json::json!([format!("{BROKEN} (A 1/1, B 0/1)")])
    );
    assert_eq!(rules[1]["name"], "passes-at-least: B vs A");
    assert_eq!(rules[1]["verdict"], "missed");
    let reason = rules[1]["reason"].as_str().unwrap();
    assert!(reason.contains("B passes less often than A"), "{reason}");

    // The same verdict, for people.
    let (code, text, _) = gate(&env, &[&run]);
    assert_eq!(code, 1);
    assert!(text.starts_with("gate      MISSED (exit 1)\n"), "{text}");
    assert!(
        text.contains("missed        no-breaks: B vs A: B breaks 1 of the"),
        "{text}"
    );
    assert!(
        text.contains(&format!("  {BROKEN} (A 1/1, B 0/1)")),
        "{text}"
    );

    // JUnit: a failure per missed rule, the evidence case passing.
    let (code, xml, _) = gate(&env, &[&run, "--format", "junit"]);
    assert_eq!(code, 1);
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
        "{xml}"
    );
    assert!(
        xml.contains("tests=\"3\" failures=\"2\" errors=\"0\" skipped=\"0\""),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
    assert!(xml.contains("name=\"no-breaks: B vs A\""), "{xml}");
    assert!(xml.trim_end().ends_with("</testsuites>"), "{xml}");

    // GitHub Actions: an error annotation per missed rule, the verdict last.
    let (code, gh, _) = gate(&env, &[&run, "--format", "github"]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = gh.lines().collect();
    assert!(
        lines[0].starts_with("::error title=SkillTrial gate%3A no-breaks%3A B vs A::B breaks 1 of"),
        "{gh}"
    );
    assert!(
        lines[0].contains(&format!("%0A{BROKEN} (A 1/1, B 0/1)")),
        "{gh}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("::error title=SkillTrial gate::missed (run "),
        "{gh}"
    );

    // --json with another format is a usage error, never a verdict.
    let (code, stdout, _) = gate(&env, &[&run, "--json", "--format", "junit"]);
    assert_eq!(code, 2, "{stdout}");
    let error: Value = serde_json::from_str(&stdout).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("--json and --format junit"), "{message}");
}

#[test]
fn a_pinned_policy_is_the_one_judged_and_cannot_be_edited_after_the_run() {
    let server = server(None);
    let env = Env::new(&server);
    let policy = write(env.dir.path(), "gate.toml", FAMILIES);
    let plain = env.plan_doc(&["--reps", "1", "--seed", "7", "--cap-usd", "1"]);
    let pinned = env.plan_doc(&[
        "--reps",
        "1",
        "--seed",
        "7",
        "--cap-usd",
        "1",
        "--gate",
        &policy,
    ]);
    assert_eq!(
        pinned["manifest"]["gate"]["sha256"],
        Sha256Digest::of(FAMILIES.as_bytes()).to_string()
    );
    assert_eq!(pinned["manifest"]["gate"]["text"], FAMILIES);
    // The pin is part of the run's identity: another manifest, another run.
    assert_ne!(plain["run"], pinned["run"]);
    let run = pinned["run"].as_str().unwrap().to_owned();
    let out = env.run(&["run", "--manifest", &run, "--json"]);
    assert!(out.status.success(), "{}", said(&out));

    let (code, doc) = gate_json(&env, &[&run]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["verdict"], "cleared");
    assert_eq!(doc["policy"]["source"], "pinned");
    assert_eq!(doc["policy"]["policy"]["min_pairs"], 5);
    assert_eq!(doc["warnings"], serde_json::json!([]));
    let rules = doc["rules"].as_array().unwrap();
    assert_eq!(rules[0]["name"], "families-at-least: B vs baseline");
    assert_eq!(rules[0]["verdict"], "cleared");
    // One line per task family, B ahead of the baseline in each (the baseline's answers fail).
    let families = rules[0]["details"].as_array().unwrap();
    assert!(families.len() >= 2, "{families:?}");
    for f in families {
        let f = f.as_str().unwrap();
        assert!(f.contains(": B − baseline = +"), "{f}");
    }
    assert_eq!(rules[1]["verdict"], "cleared");

    // The same bytes as --policy: accepted, still the pinned policy.
    let (code, doc) = gate_json(&env, &[&run, "--policy", &policy]);
    assert_eq!(
        (code, doc["policy"]["source"].clone()),
        (0, "pinned".into())
    );

    // Edited after the run: refused (exit 2), naming both hashes; the pinned one still judges.
    std::fs::write(&policy, FAMILIES.replace("min_pairs = 5", "min_pairs = 1")).unwrap();
    let (code, stdout, stderr) = gate(&env, &[&run, "--policy", &policy]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("a policy cannot change after the run"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&Sha256Digest::of(FAMILIES.as_bytes()).to_string()),
        "{stderr}"
    );
    let (code, _) = gate_json(&env, &[&run]);
    assert_eq!(code, 0);

    // The plan says where the pin is.
    let mut args = env.plan_args(&[
        "--reps",
        "1",
        "--seed",
        "8",
        "--cap-usd",
        "1",
        "--gate",
        &policy,
    ]);
    args.retain(|a| a != "--json");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = env.text(&args);
    assert!(text.contains("gate      policy sha256:"), "{text}");
}

#[test]
fn an_unfinished_run_is_inconclusive_unless_the_policy_judges_what_ran() {
    let server = server(None);
    let env = Env::new(&server);
    // Planned, not run: nothing executed.
    let planned = env.plan(&["--cap-usd", "1"]);
    let (code, doc) = gate_json(&env, &[&planned]);
    assert_eq!(code, 3, "{doc:#}");
    assert_eq!(doc["verdict"], "inconclusive");
    assert_eq!(doc["exit_code"], 3);
    let why = doc["run_reasons"][0].as_str().unwrap();
    assert!(
        why.starts_with("the run is not complete (0 of 54 planned trials executed"),
        "{why}"
    );

    // Stopped by its request bound part way; a policy that judges what ran.
    let run = env.plan_seeded("9", &["--cap-usd", "0.6"]);
    let out = env.run(&["run", "--manifest", &run, "--json"]);
    let report = env.report(&run);
    assert_eq!(report["run"]["complete"], false, "{}", said(&out));
    let b_a = report["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["contrast"] == "b-a")
        .unwrap();
    assert!(b_a["complete_pairs"].as_u64().unwrap() > 0, "{b_a:#}");
    let judge = write(
        env.dir.path(),
        "judge.toml",
        &DEFAULT_POLICY.replace("incomplete = \"inconclusive\"", "incomplete = \"judge\""),
    );
    let (code, doc) = gate_json(&env, &[&run, "--policy", &judge]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["verdict"], "cleared");
    assert_eq!(doc["complete"], false);
    assert_eq!(doc["run_reasons"], serde_json::json!([]));
    // Not pinned: the verdict stands, and says what it cannot show.
    assert_eq!(doc["policy"]["source"], "unpinned");
    let warning = doc["warnings"][0].as_str().unwrap();
    assert!(warning.contains("was not pinned"), "{warning}");
    let (_, text, _) = gate(&env, &[&run, "--policy", &judge]);
    assert!(text.contains("policy    unpinned file sha256:"), "{text}");

    // More pairs than the run has: inconclusive, and the rule says how many it needed.
    let complete = ran(&env, &[]);
    let strict = write(
        env.dir.path(),
        "strict.toml",
        &DEFAULT_POLICY.replace("min_pairs = 1", "min_pairs = 1000"),
    );
    let (code, doc) = gate_json(&env, &[&complete, "--policy", &strict]);
    assert_eq!(code, 3, "{doc:#}");
    let reason = doc["rules"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("the policy needs at least 1000"),
        "{reason}"
    );
    let (code, xml, _) = gate(&env, &[&complete, "--policy", &strict, "--format", "junit"]);
    assert_eq!(code, 3);
    assert!(
        xml.contains("failures=\"0\" errors=\"0\" skipped=\"2\""),
        "{xml}"
    );
}

#[test]
fn an_exported_report_is_judged_like_its_run_and_an_altered_one_is_refused() {
    let server = server(Some(BROKEN));
    let env = Env::new(&server);
    let run = ran(&env, &[]);
    let report = env.report(&run);
    let file = env.dir.path().join("report").join("report.json");
    let (code, from_file) = gate_json(&env, &["--report", file.to_str().unwrap()]);
    let (_, from_run) = gate_json(&env, &[&run]);
    assert_eq!(code, 1);
    assert_eq!(from_file["rules"], from_run["rules"]);
    assert_eq!(from_file["report_hash"], report["report_hash"]);

    // One pass count changed: the hashes no longer recompute, so no verdict.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    doc["summary"]["arms"][2]["pass"] =
        (doc["summary"]["arms"][2]["pass"].as_u64().unwrap() + 1).into();
    let forged = write(
        env.dir.path(),
        "forged.json",
        &serde_json::to_string_pretty(&doc).unwrap(),
    );
    let (code, stdout, stderr) = gate(&env, &["--report", &forged]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("changed after it was written"), "{stderr}");
}

#[test]
fn bad_inputs_exit_2_name_the_input_and_change_nothing() {
    let server = server(None);
    let env = Env::new(&server);
    let run = ran(&env, &[]);
    let before = gate_json(&env, &[&run]);
    let runs_before = env.json(&["status", "--json"]);
    let dir = env.dir.path();
    let missing = dir.join("nope.toml");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--policy".into(), missing.to_str().unwrap().into()],
            "nope.toml",
        ),
        (
            vec![
                "--policy".into(),
                write(dir, "broken.toml", "[[rule]\nkind = 1\n"),
            ],
            "broken.toml",
        ),
        (
            vec![
                "--policy".into(),
                write(
                    dir,
                    "backwards.toml",
                    "[[rule]]\nkind = \"no-breaks\"\narm = \"a\"\nagainst = \"b\"\n",
                ),
            ],
            "rule 1: arm \"a\" against \"b\" is not a contrast a report has",
        ),
        (
            vec!["--policy".into(), write(dir, "empty.toml", "")],
            "no [[rule]]",
        ),
        (
            vec!["--policy".into(), dir.to_str().unwrap().into()],
            "is a directory",
        ),
        (
            vec!["--report".into(), missing.to_str().unwrap().into()],
            "nope.toml",
        ),
        (
            vec!["--report".into(), write(dir, "not.json", "[1]")],
            "not a report",
        ),
        (vec!["ffffffffffff".into()], "no run `ffffffffffff`"),
    ];
    for (args, says) in &cases {
        let mut all: Vec<&str> = if args[0] == "--report" || args[0] == "ffffffffffff" {
            vec![]
        } else {
            vec![run.as_str()]
        };
        all.extend(args.iter().map(String::as_str));
        let (code, stdout, stderr) = gate(&env, &all);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // A bad policy stops `plan` before anything is planned.
    let mut args = env.plan_args(&[
        "--seed",
        "11",
        "--cap-usd",
        "1",
        "--gate",
        &write(dir, "bad.toml", "[[rule]]\n"),
    ]);
    args.push("--json".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let error: Value = serde_json::from_slice(&out.stdout).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("bad.toml") && message.contains("missing field `kind`"),
        "{message}"
    );
    assert_eq!(env.json(&["status", "--json"]), runs_before);
    assert_eq!(gate_json(&env, &[&run]), before);
}

#[test]
fn the_default_policy_prints_and_pins_like_any_policy() {
    let server = server(None);
    let env = Env::new(&server);
    let (code, printed, _) = gate(&env, &["--print-default-policy"]);
    assert_eq!(code, 0);
    assert_eq!(printed, DEFAULT_POLICY);
    let policy = write(env.dir.path(), "gate.toml", &printed);
    let run = ran(&env, &["--gate", &policy]);
    let (code, doc) = gate_json(&env, &[&run]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["policy"]["source"], "pinned");
    assert_eq!(
        doc["policy"]["sha256"],
        Sha256Digest::of(DEFAULT_POLICY.as_bytes()).to_string()
    );
}

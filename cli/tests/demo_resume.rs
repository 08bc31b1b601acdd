//! A demo killed and resumed gives the same results as one left alone: the scripted model's
//! answer depends only on the trial's (task, arm, repetition), never on what one server process
//! happened to see. The real `skilltrial` binary, a real journal, the built-in scripted server,
//! and the debug kill point that ends the process right after an answer is saved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod support;

fn skilltrial(home: &Path, args: &[&str], kill_at: Option<&str>) -> Output {
    support::offline_output(home, args, kill_at)
}

/// What a trial came to: its place in the plan, its outcome, the checker's reasons and the
/// answer's hash (the script's answer itself, so a changed answer with the same verdict shows).
fn trials(report_json: &Path) -> Vec<Value> {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(report_json).unwrap()).unwrap();
    file["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let answers: Vec<&Value> = t["attempts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| &a["answer_sha256"])
                .collect();
            serde_json::json!({
                "index": t["index"],
                "task": t["task"],
                "arm": t["arm"],
                "repetition": t["repetition"],
                "outcome": t["outcome"],
                "reasons": t["reasons"],
                "answers": answers,
            })
        })
        .collect()
}

fn seed(report_json: &Path) -> Value {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(report_json).unwrap()).unwrap();
    file["manifest"]["order"]["seed"].clone()
}

#[test]
fn a_demo_killed_after_every_answer_and_resumed_gives_the_uninterrupted_results() {
    let tmp = tempfile::tempdir().unwrap();

    // The uninterrupted demo.
    let whole = tmp.path().join("whole");
    let out = skilltrial(
        &tmp.path().join("home-whole"),
        &["demo", "--out", whole.to_str().unwrap(), "--json"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The same demo, ended on the spot right after its first answer is saved.
    let home = tmp.path().join("home-killed");
    let out = skilltrial(&home, &["demo"], Some("after_result"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(86), "{stderr}");
    let run = support::manifest_in(&stderr);

    // Resume it, each `run` killed after its first answer too: every process (and so every
    // scripted server) sees a single request, so nothing a server remembers can carry over.
    let resumes = support::resume_until_done(&home, &run, "after_result", 60);
    // One killed process per trial after the demo's own (the last `run` only scores the answer
    // its predecessor saved, or finds nothing left).
    assert!(resumes >= 53, "only {resumes} resumes");

    let resumed = tmp.path().join("resumed");
    let out = skilltrial(
        &home,
        &["report", &run, "--out", resumed.to_str().unwrap(), "--json"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (whole, resumed) = (whole.join("report.json"), resumed.join("report.json"));
    assert_eq!(seed(&whole), seed(&resumed), "the demo's arm-order seed");
    let (expected, got) = (trials(&whole), trials(&resumed));
    assert_eq!(expected.len(), 54);
    assert_eq!(
        got, expected,
        "per-trial results of the killed and resumed demo"
    );
    let count = |k: &str| got.iter().filter(|t| t["outcome"] == k).count();
    assert_eq!(
        (count("pass"), count("fail"), count("invalid_output")),
        (28, 21, 5)
    );
}

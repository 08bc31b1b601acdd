//! Reports end to end: the demo's 54-trial scripted run, the report hash recomputed from the file
//! alone, snapshots of the JSON and of the HTML's text, and `compare`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use skilltrial_runner::report;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn skilltrial(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skilltrial"))
        .args(args)
        .arg("--home")
        .arg(home)
        .current_dir(root())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn demo(home: &Path, out: &Path, reps: &str) -> Value {
    let result = skilltrial(
        home,
        &[
            "demo",
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
    let (report_hash, manifest_hash) = report::verify(&file).unwrap();
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

    // The scripted label is everywhere.
    assert_eq!(file["manifest"]["model"]["scripted"], true);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Scripted model."));
    // A changed byte breaks the hash, and `skilltrial verify` says so from the file alone.
    let tampered = text.replacen("\"pass\": 16", "\"pass\": 17", 1);
    assert!(report::verify(&serde_json::from_str(&tampered).unwrap()).is_err());
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
            } else if l.starts_with("sha256:")
                || l.contains("http://127.0.0.1:")
                || l.starts_with("\"source_sha256\"")
                || l.starts_with("\"seed\"")
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
}

#[test]
fn compare_refuses_runs_of_different_models_naming_what_differs() {
    use skilltrial_runner::scripted::{Reply, ScriptedServer};
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
        format!("[[profile]]\nid = \"other\"\nprovider = \"anthropic\"\nmodel = \"other-model\"\nbase_url = \"{}\"\ncontext_tokens = 100000\nmax_output_tokens = 512\ninput_usd_per_mtok = \"1\"\noutput_usd_per_mtok = \"1\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-29\"\n", server.url()),
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

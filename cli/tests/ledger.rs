//! `skilltrial ledger` end to end on the built-in scripted models: two models of one measurement
//! side by side, a run that measured something else left out with why, report files from
//! elsewhere, and every bad input refused by name with nothing changed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn skilltrial(home: &Path, args: &[&str]) -> Output {
    support::offline_command(home, args).output().unwrap()
}

fn ok_json(home: &Path, args: &[&str]) -> Value {
    support::success_json(args, &skilltrial(home, args))
}

/// The demo on scripted model `model` with `reps` repetitions, its report in `out`.
fn demo(home: &Path, out: &Path, model: &str, reps: &str) -> String {
    let out = out.to_str().unwrap();
    let doc = ok_json(
        home,
        &[
            "demo",
            "--scripted-model",
            model,
            "--reps",
            reps,
            "--out",
            out,
            "--json",
        ],
    );
    doc["run"].as_str().unwrap().to_owned()
}

const ONE: &str = "openai skilltrial-scripted-1@1 (scripted)";
const TWO: &str = "openai skilltrial-scripted-2@2 (scripted)";

#[test]
fn the_two_scripted_models_side_by_side_name_where_b_helps_and_where_it_breaks() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let one = demo(&home, &tmp.path().join("one"), "1", "3");
    let two = demo(&home, &tmp.path().join("two"), "2", "3");
    // The newest run measured something else: one repetition instead of three.
    let odd = demo(&home, &tmp.path().join("odd"), "2", "1");

    // Over the whole journal: the basis the two models share; the odd run left out with why.
    let doc = ok_json(&home, &["ledger", "--json"]);
    assert_eq!(doc["format"], "skilltrial-ledger-v1");
    let models: Vec<&str> = doc["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model"].as_str().unwrap())
        .collect();
    assert_eq!(models, [TWO, ONE], "newest first");
    assert_eq!(doc["models"][0]["run"], two.as_str());
    assert_eq!(doc["models"][1]["run"], one.as_str());
    assert_eq!(doc["basis"]["repetitions"], 3);
    let left = doc["left_out"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["run"], odd.as_str());
    assert!(left[0]["reason"].as_str().unwrap().contains("repetitions"));
    let d = &left[0]["differs"][0];
    assert_eq!(
        (d["what"].as_str(), d["this"].as_u64(), d["other"].as_u64()),
        (Some("repetitions"), Some(1), Some(3))
    );

    // What B does against A on each model, by the tasks it fixes and breaks.
    let b_vs_a = doc["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["contrast"] == "b_vs_a")
        .unwrap();
    assert_eq!(b_vs_a["helps_and_breaks"], serde_json::json!([ONE]));
    assert_eq!(b_vs_a["breaks"], serde_json::json!([TWO]));
    let cell = |m: usize| -> &Value {
        doc["models"][m]["contrasts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["contrast"] == "b_vs_a")
            .unwrap()
    };
    assert_eq!(cell(0)["breaks"], serde_json::json!(["plan-t22-fee-memo"]));
    assert_eq!(cell(0)["fixes"], serde_json::json!([]));
    assert_eq!(
        cell(1)["breaks"],
        serde_json::json!(["tx-legacy-nonce-bonk"])
    );
    // Per arm, the success with its interval and the consistency across the 3 repetitions.
    let arm = |m: usize, name: &str| -> Value {
        doc["models"][m]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == name)
            .unwrap()
            .clone()
    };
    let a_two = arm(0, "a");
    assert_eq!(
        (a_two["pass"].as_u64(), a_two["executed"].as_u64()),
        (Some(18), Some(18))
    );
    assert_eq!(a_two["success"]["wilson95"].as_array().unwrap().len(), 2);
    assert_eq!(a_two["consistency"]["k"], 3);
    assert_eq!(a_two["consistency"]["pass_hat_k"]["num"], 6);
    // The per-task verdicts side by side: the fee plan improves on one, regresses on the other.
    let fee = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "plan-t22-fee-memo")
        .unwrap();
    assert_eq!(fee["cells"][0]["b_vs_a"], "regression");
    assert_eq!(fee["cells"][1]["b_vs_a"], "improvement");

    // The text says the same, and --out writes the JSON and the page.
    let out_dir = tmp.path().join("ledger");
    let out = skilltrial(&home, &["ledger", "--out", out_dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "B vs A: breaks on {TWO}; helps and breaks on {ONE}"
        )),
        "{text}"
    );
    assert!(text.contains("left out:"), "{text}");
    assert!(
        text.contains("repetitions: 1 here, 3 in the basis"),
        "{text}"
    );
    let written: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("ledger.json")).unwrap()).unwrap();
    assert_eq!(written, doc, "the file is what --json prints");
    let page = std::fs::read_to_string(out_dir.join("ledger.html")).unwrap();
    assert!(page.contains("Content-Security-Policy") && !page.contains("<script"));
    assert!(page.contains("Scripted model."));
    // Success over runs: the two models' runs on one chart, the odd run on a chart of its own.
    let figures: Vec<&str> = page.split("<figure class=\"chart\"").skip(1).collect();
    assert_eq!(figures.len(), 2, "{page}");
    let runs_in = |figure: &str| -> Vec<String> {
        figure
            .split("data-run=\"")
            .skip(1)
            .map(|s| s[..64].to_owned())
            .collect()
    };
    assert_eq!(runs_in(figures[0]), [two.clone(), one.clone()]);
    assert_eq!(runs_in(figures[1]), std::slice::from_ref(&odd));
    assert!(figures[1].contains("differs from the basis in its repetitions"));
    assert_eq!(doc["history"].as_array().unwrap().len(), 2);
    assert_eq!(doc["history"][1]["runs"][0]["run"], odd.as_str());

    // Named runs: the first named sets the basis, so now the two 3-repetition runs are left out.
    let doc = ok_json(&home, &["ledger", &odd[..12], &one, &two, "--json"]);
    assert_eq!(doc["basis"]["repetitions"], 1);
    assert_eq!(doc["models"].as_array().unwrap().len(), 1);
    assert_eq!(doc["left_out"].as_array().unwrap().len(), 2);

    // Report files from elsewhere, with no journal at all: the same two columns.
    let elsewhere = tmp.path().join("elsewhere");
    let files = ok_json(
        &elsewhere,
        &[
            "ledger",
            "--report",
            tmp.path().join("one/report.json").to_str().unwrap(),
            "--report",
            tmp.path().join("two/report.json").to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(files["models"][0]["model"], ONE);
    assert_eq!(files["models"][1]["model"], TWO);
    assert!(files["left_out"].as_array().unwrap().is_empty());
    assert!(!elsewhere.exists(), "reading report files creates no state");
}

#[test]
fn bad_inputs_are_refused_by_name_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");

    // No journal yet.
    let out = skilltrial(&home, &["ledger"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no runs yet"), "{err}");
    assert!(
        !home.join("journal.sqlite3").exists(),
        "a read creates no journal"
    );

    demo(&home, &tmp.path().join("one"), "1", "1");
    let report = tmp.path().join("one/report.json");
    let before = std::fs::read(&report).unwrap();

    // An unknown run.
    let out = skilltrial(&home, &["ledger", "ffffffffffffffff"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run `ffffffffffffffff`"));

    // A report edited after it was written: its hash no longer matches.
    let edited = tmp.path().join("edited.json");
    let mut doc: Value = serde_json::from_slice(&before).unwrap();
    doc["summary"]["arms"][1]["pass"] = Value::from(0);
    std::fs::write(&edited, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let out = skilltrial(&home, &["ledger", "--report", edited.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("edited.json") && err.contains("cannot join a ledger"),
        "{err}"
    );

    // Not a report at all, and a missing file.
    let junk = tmp.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    for (path, words) in [
        (&junk, "junk.json"),
        (&tmp.path().join("missing.json"), "missing.json"),
    ] {
        let out = skilltrial(
            &home,
            &["ledger", "--report", path.to_str().unwrap(), "--json"],
        );
        assert_ne!(out.status.code(), Some(0));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            doc["error"]["message"].as_str().unwrap().contains(words),
            "{doc}"
        );
    }
    // An --out that is a file: refused, the file intact.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "keep").unwrap();
    let out = skilltrial(&home, &["ledger", "--out", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");

    // The demo's own request cap: --reps over it says what to change for the demo, and
    // nothing is created.
    let fresh = tmp.path().join("fresh-home");
    let out = skilltrial(&fresh, &["demo", "--reps", "30"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--reps 30") && err.contains("or fewer"),
        "{err}"
    );
    assert!(!err.contains("raise --max-requests"), "{err}");
    assert!(!fresh.exists());

    // One model only: shown, with what to do next.
    let text = String::from_utf8(skilltrial(&home, &["ledger"]).stdout).unwrap();
    assert!(text.contains("one model only"), "{text}");
    assert_eq!(
        std::fs::read(&report).unwrap(),
        before,
        "the report file is untouched"
    );
}

//! `skilltrial pack` and `skilltrial check` as a user runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    let tmp = std::env::temp_dir();
    Command::new(env!("CARGO_BIN_EXE_skilltrial"))
        .args(args)
        .current_dir(tmp)
        .env("SKILLTRIAL_HOME", "/nonexistent/skilltrial-home")
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn pack_list_names_the_embedded_pack() {
    let out = run(&["pack", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc = json(&out);
    assert_eq!(doc["packs"][0]["pack"], "solana-core@1.0.3");
    assert_eq!(doc["packs"][0]["tasks"], 6);
}

#[test]
fn pack_verify_passes_from_anywhere() {
    let out = run(&["pack", "verify", "solana-core@1.0.3"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("0 failed"), "{text}");
    let doc = json(&run(&["pack", "verify", "solana-core@1.0.3", "--json"]));
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["checker_version"], "1.1.0");
    // The larger pack verifies too, every claim of its 46 tasks.
    let doc = json(&run(&["pack", "verify", "solana-core@2.0.0", "--json"]));
    assert_eq!(doc["ok"], true, "{doc}");
    let tasks: std::collections::BTreeSet<&str> = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["task"].as_str().filter(|t| !t.is_empty()))
        .collect();
    assert_eq!(tasks.len(), 46);
}

#[test]
fn pack_show_hides_the_golden_record_unless_revealed() {
    let hidden = json(&run(&["pack", "show", "solana-core@1.0.3", "--json"]));
    assert_eq!(hidden["pack"], "solana-core@1.0.3");
    assert!(hidden["hash"].as_str().unwrap().starts_with("sha256:"));
    let tasks = hidden["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 6);
    for t in tasks {
        for key in [
            "id",
            "family",
            "network",
            "slot",
            "input_sha256",
            "reason_codes",
        ] {
            assert!(t.get(key).is_some(), "missing {key}");
        }
        assert!(
            t.get("expected").is_none(),
            "expected shown without --reveal"
        );
    }
    let shown = json(&run(&[
        "pack",
        "show",
        "solana-core@1.0.3",
        "--task",
        "acct-usdc-mint",
        "--reveal",
        "--json",
    ]));
    assert_eq!(shown["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(shown["tasks"][0]["expected"]["decimals"], 6);
    assert_eq!(shown["tasks"][0]["slot"], serde_json::Value::Null);
}

#[test]
fn check_passes_the_golden_answer_and_fails_a_wrong_one() {
    let tmp = tempfile::tempdir().unwrap();
    let shown = json(&run(&[
        "pack",
        "show",
        "solana-core@1.0.3",
        "--task",
        "plan-usdc-transfer",
        "--reveal",
        "--json",
    ]));
    let golden = shown["tasks"][0]["expected"].clone();
    let check = |name: &str, answer: &serde_json::Value| {
        let path = tmp.path().join(name);
        std::fs::write(&path, answer.to_string()).unwrap();
        let task = ["--task", "plan-usdc-transfer"];
        run(&[
            "check",
            "--pack",
            "solana-core@1.0.3",
            task[0],
            task[1],
            path.to_str().unwrap(),
            "--json",
        ])
    };
    let out = check("good.json", &golden);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        json(&out),
        serde_json::json!({"outcome": "pass", "reasons": [], "details": []})
    );

    let mut wrong = golden;
    wrong["amount_atomic"] = "12500001".into();
    let out = check("bad.json", &wrong);
    assert_eq!(out.status.code(), Some(1));
    let verdict = json(&out);
    assert_eq!(verdict["outcome"], "fail");
    assert_eq!(
        verdict["reasons"],
        serde_json::json!(["wrong_amount_atomic"])
    );
    assert_eq!(verdict["details"][0]["field"], "amount_atomic");
}

#[test]
fn check_reports_invalid_output_for_prose_and_usage_errors_for_unknown_names() {
    let tmp = tempfile::tempdir().unwrap();
    let prose = tmp.path().join("prose.txt");
    std::fs::write(&prose, "I think the mint has six decimals.").unwrap();
    let out = run(&[
        "check",
        "--pack",
        "solana-core@1.0.3",
        "--task",
        "acct-usdc-mint",
        prose.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("invalid_output")
    );

    let out = run(&[
        "check",
        "--pack",
        "solana-core@1.0.3",
        "--task",
        "no-such-task",
        prose.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        json(&out)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("acct-usdc-mint"),
        "lists the known tasks"
    );
    let out = run(&["pack", "verify", "no-such-pack@9"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "check",
        "--pack",
        "solana-core@1.0.3",
        "--task",
        "acct-usdc-mint",
        "/no/such/answer.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_tampered_pack_folder_fails_verification() {
    // Given a copy of the pack whose input bytes were changed after the fact
    let tmp = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/packs/solana-core@1.0.3");
    let dst = tmp.path().join("solana-core@1.0.3");
    copy_dir(&src, &dst);
    let input = dst.join("tasks/acct-usdc-mint/input.bin");
    let mut bytes = std::fs::read(&input).unwrap();
    bytes[44] = 9; // decimals 6 -> 9
    std::fs::write(&input, bytes).unwrap();
    // Then verify fails on the hash, the input hash and the golden record
    let out = run(&["pack", "verify", dst.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let failed: Vec<&str> = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["ok"] == false)
        .map(|i| i["check"].as_str().unwrap())
        .collect();
    for check in ["pack_hash", "input_sha256", "golden_regenerates"] {
        assert!(failed.contains(&check), "{check} did not fail: {failed:?}");
    }
}

fn copy_dir(src: &std::path::Path, dst: &std::path::Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).unwrap();
        }
    }
}

#[test]
fn check_prints_text_unless_json() {
    // Given an answer that misses a required field
    let tmp = tempfile::tempdir().unwrap();
    let answer = tmp.path().join("answer.json");
    std::fs::write(&answer, r#"{"x": 1}"#).unwrap();
    let args = [
        "check",
        "--pack",
        "solana-core@1.0.3",
        "--task",
        "acct-usdc-mint",
        answer.to_str().unwrap(),
    ];

    // When it is checked without --json, then the verdict is text (the documented contract)
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "acct-usdc-mint (solana-core@1.0.3)\n\
         outcome  invalid_output\n\
         reasons  schema_violation\n  \
         schema_violation     account_type: required field `account_type` is missing\n"
    );

    // And with --json it is the verdict as one JSON document
    let out = run(&[&args[..], &["--json"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let verdict = json(&out);
    assert_eq!(verdict["outcome"], "invalid_output");
    assert_eq!(verdict["reasons"], serde_json::json!(["schema_violation"]));
    assert_eq!(verdict["details"][0]["field"], "account_type");
}

/// A hostile try of solana-core@2.0.0: a folder that fails `pack verify` is never planned,
/// demoed or used to score, and a look-alike of a released id (another case, a Unicode hyphen, a
/// build suffix, a path) or another version under a released name is refused by name.
#[test]
fn a_folder_that_fails_verification_or_looks_like_a_release_is_never_used() {
    let tmp = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/packs/solana-core@2.0.0");
    let edit_pack_json = |dir: &std::path::Path, name: &str, version: &str| {
        let path = dir.join("pack.json");
        let mut doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        doc["name"] = name.into();
        doc["version"] = version.into();
        std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    };

    // A consistent copy under its own name is a pack like any other ...
    let mine = tmp.path().join("mine");
    copy_dir(&src, &mine);
    edit_pack_json(&mine, "my-pack", "1.0.0");
    let answer = tmp.path().join("answer.json");
    std::fs::write(
        &answer,
        std::fs::read(mine.join("tasks/acct-nonce/golden.json")).unwrap(),
    )
    .unwrap();
    let check = |pack: &std::path::Path| {
        run(&[
            "check",
            "--pack",
            pack.to_str().unwrap(),
            "--task",
            "acct-nonce",
            answer.to_str().unwrap(),
        ])
    };
    assert_eq!(check(&mine).status.code(), Some(0));
    // ... until a golden record is edited after it was built: then it scores nothing.
    let golden = mine.join("tasks/acct-nonce/golden.json");
    let edited = String::from_utf8(std::fs::read(&golden).unwrap())
        .unwrap()
        .replace("\"5000\"", "\"5001\"");
    std::fs::write(&golden, &edited).unwrap();
    std::fs::write(&answer, &edited).unwrap();
    let out = check(&mine);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fails") && err.contains("acct-nonce golden_regenerates"),
        "{err}"
    );
    assert!(err.contains("skilltrial pack verify"), "{err}");
    let demo = run(&["demo", "--pack", mine.to_str().unwrap(), "--scripted"]);
    assert_eq!(
        demo.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&demo.stderr)
    );

    // A task listed twice, and a pack with no task, are refused too.
    let twice = tmp.path().join("twice");
    copy_dir(&src, &twice);
    edit_pack_json(&twice, "twice", "1.0.0");
    let path = twice.join("pack.json");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    doc["tasks"] = serde_json::json!(["acct-nonce", "acct-nonce"]);
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let out = check(&twice);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("listed twice"));
    doc["tasks"] = serde_json::json!([]);
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let out = check(&twice);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no task"));
    // A FIFO in a pack folder is refused, never waited on.
    #[cfg(unix)]
    {
        let fifo = mine.join("tasks/acct-nonce/extra");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let out = check(&mine);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    }

    // Look-alikes of a released id, and another version under a released name.
    for (name, version, why) in [
        ("Solana-Core", "2.0.0", "use 1-64 lowercase letters"),
        ("solana\u{2010}core", "2.0.0", "use 1-64 lowercase letters"),
        ("solana-core", "2.0.0+evil", "use 1-64 lowercase letters"),
        ("../x", "2.0.0", "use 1-64 lowercase letters"),
        ("solana-core", "", "use 1-64 lowercase letters"),
        ("solana-core", "2.0.1", "reserved for released packs"),
        ("solana-core", "v2.0.0", "reserved for released packs"),
    ] {
        let dir = tmp
            .path()
            .join(format!("look-{}", version.len() + name.len()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&src, &dir);
        edit_pack_json(&dir, name, version);
        let out = check(&dir);
        assert_eq!(out.status.code(), Some(1), "{name}@{version}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{name}@{version}: {err}");
    }
}

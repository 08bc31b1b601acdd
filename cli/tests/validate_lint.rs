//! `skilltrial validate --lint` end to end: findings with rule, severity and file:line in text and
//! JSON, the exit code (1 only for errors), the modes, `--fix` on a folder (and refused on a ZIP),
//! and lint never touching a digest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn skilltrial(home: &Path, args: &[&str]) -> Output {
    support::offline_command(home, args).output().unwrap()
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

const MESSY: &str = "---\nname: My_Skill\ndescription: Decodes accounts.\nmodel: haiku\n---\n# Body\n\nRead [the api](references/API.md).\n";

fn messy(dir: &Path) {
    write(
        dir,
        &[
            ("SKILL.md", MESSY),
            ("references/api.md", "# API\n"),
            ("tools/run.sh", "#!/bin/sh\necho\n"),
        ],
    );
}

#[test]
fn findings_name_rule_severity_and_place_and_only_errors_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let skill = tmp.path().join("my-skill");
    messy(&skill);
    let s = skill.to_str().unwrap();

    // Without --lint nothing changes: the bundle is accepted (exit 0) and the JSON has no lint.
    let plain = skilltrial(&home, &["validate", s, "--json"]);
    assert_eq!(plain.status.code(), Some(0));
    let plain: Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(plain.get("lint").is_none());
    let digest = plain["bundles"][0]["digest"].clone();

    // Strict: errors (the name, the link's case) fail with exit 1.
    let out = skilltrial(&home, &["validate", "--lint", s, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["bundles"][0]["digest"], digest,
        "lint changes no digest"
    );
    let lint = &doc["lint"][0];
    assert_eq!(lint["mode"], "strict");
    assert_eq!(lint["errors"], 2);
    let rules: Vec<(String, String, u64, String)> = lint["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["path"].as_str().unwrap().to_owned(),
                f["line"].as_u64().unwrap(),
                f["severity"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let want =
        |r: &str, p: &str, l: u64, sev: &str| (r.to_owned(), p.to_owned(), l, sev.to_owned());
    for w in [
        want("name-format", "SKILL.md", 2, "error"),
        want("description-trigger", "SKILL.md", 3, "warning"),
        want("front-matter-key", "SKILL.md", 4, "warning"),
        want("reference-missing", "SKILL.md", 8, "error"),
        want("script-usage", "tools/run.sh", 1, "warning"),
    ] {
        assert!(rules.contains(&w), "{w:?} in {rules:?}");
    }

    // The text says the same, file:line first.
    let out = skilltrial(&home, &["validate", "--lint", s]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("lint         strict (the Agent Skills format): 2 errors"),
        "{text}"
    );
    assert!(text.contains("SKILL.md:2: error name-format:"), "{text}");
    assert!(
        text.contains("SKILL.md:8: error reference-missing: links to `references/API.md`"),
        "{text}"
    );
    assert!(text.contains("[--fix]"), "{text}");

    // Lenient: the name is a warning, `model` is Claude Code's; the broken link still fails.
    let out = skilltrial(
        &home,
        &["validate", "--lint", "--mode", "lenient", s, "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["lint"][0]["errors"], 1);
    assert!(
        !doc["lint"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "front-matter-key")
    );

    // A clean bundle passes strict lint: the built-in examples are held to it.
    for example in ["solana-reader-1.4.2", "solana-reader-1.5.0"] {
        let path = support::root().join("fixtures/bundles").join(example);
        let out = skilltrial(
            &home,
            &["validate", "--lint", path.to_str().unwrap(), "--json"],
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["lint"][0]["errors"], 0, "{example}: {doc}");
        assert_eq!(out.status.code(), Some(0), "{example}");
    }
}

#[test]
fn fix_rewrites_what_is_mechanical_in_a_folder_and_refuses_a_zip() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let skill = tmp.path().join("my-skill");
    messy(&skill);
    let s = skill.to_str().unwrap();
    let before_api = std::fs::read(skill.join("references/api.md")).unwrap();

    let out = skilltrial(&home, &["validate", "--lint", "--fix", s, "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["lint"][0]["fixed"].as_array().unwrap().len(),
        2,
        "{doc}"
    );
    assert_eq!(doc["lint"][0]["errors"], 0, "{doc}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "warnings remain, no error: {doc}"
    );
    let fixed = std::fs::read_to_string(skill.join("SKILL.md")).unwrap();
    assert_eq!(
        fixed,
        "---\nname: my-skill\ndescription: Decodes accounts.\nmodel: haiku\n---\n# Body\n\nRead [the api](references/api.md).\n"
    );
    assert_eq!(
        std::fs::read(skill.join("references/api.md")).unwrap(),
        before_api
    );
    // The report shows the folder as it now is: the new name, its new digest.
    assert_eq!(doc["bundles"][0]["name"], "my-skill");
    // Nothing left to fix: a second run changes nothing.
    let again = skilltrial(&home, &["validate", "--lint", "--fix", s, "--json"]);
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["lint"][0]["fixed"], serde_json::json!([]));
    assert_eq!(
        std::fs::read_to_string(skill.join("SKILL.md")).unwrap(),
        fixed
    );
    // No temporary file left behind.
    let names: Vec<String> = std::fs::read_dir(&skill)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with(".tmp")), "{names:?}");

    // A read-only file is left as it is, and said so.
    let locked = tmp.path().join("locked-skill");
    messy(&locked);
    let skill_md = locked.join("SKILL.md");
    let mut perms = std::fs::metadata(&skill_md).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&skill_md, perms).unwrap();
    let out = skilltrial(
        &home,
        &[
            "validate",
            "--lint",
            "--fix",
            locked.to_str().unwrap(),
            "--json",
        ],
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["lint"][0]["fixed"], serde_json::json!([]));
    assert!(
        doc["lint"][0]["not_fixed"][0]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{doc}"
    );
    assert_eq!(std::fs::read_to_string(&skill_md).unwrap(), MESSY);

    // A ZIP: refused before anything is read, naming it.
    let zip = tmp.path().join("skill.zip");
    std::fs::write(&zip, b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
    let out = skilltrial(
        &home,
        &["validate", "--lint", "--fix", s, zip.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("skill.zip is not a folder"), "{err}");

    // --mode and --fix need --lint.
    for flags in [&["--mode", "lenient"][..], &["--fix"][..]] {
        let mut args = vec!["validate", s];
        args.extend_from_slice(flags);
        let out = skilltrial(&home, &args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--lint"),
            "{flags:?}"
        );
    }

    // A rejected bundle is reported as rejected; there is nothing to lint.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = skilltrial(
        &home,
        &["validate", "--lint", empty.to_str().unwrap(), "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["lint"][0]["linted"], false);
    assert_eq!(doc["bundles"][0]["ok"], false);
}

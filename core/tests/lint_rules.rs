//! `validate --lint`'s rules (core::bundle::lint) on real folders: each rule fires where it
//! should, at the right `file:line`, with the severity of the mode; the fixes are mechanical and
//! leave a bundle that lints clean of them; linting changes no digest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;

use skilltrial_core::bundle::lint::{self, Finding, Mode, RULES, Severity};
use skilltrial_core::bundle::{self, Bundle};

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn folder(files: &[(&str, &str)]) -> (tempfile::TempDir, Bundle) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-skill");
    write(&dir, files);
    let b = bundle::import(&dir).unwrap();
    (tmp, b)
}

fn found(findings: &[Finding]) -> Vec<(&str, &str, usize, Severity)> {
    findings
        .iter()
        .map(|f| (f.rule, f.path.as_str(), f.line, f.severity))
        .collect()
}

const GOOD: &str = "---\nname: my-skill\ndescription: Decodes SPL Token accounts. Use when a task gives raw account bytes.\n---\n# My skill\n\nSee [the layout](references/layout.md). Run `scripts/check.py FILE` to verify.\n";

#[test]
fn a_well_formed_skill_has_no_finding_in_either_mode() {
    let (_tmp, b) = folder(&[
        ("SKILL.md", GOOD),
        ("references/layout.md", "# Layout\n"),
        ("scripts/check.py", "print(1)\n"),
    ]);
    for mode in [Mode::Strict, Mode::Lenient] {
        assert_eq!(
            found(&lint::lint(&b, mode, Some("my-skill"))),
            [],
            "{mode:?}"
        );
    }
}

#[test]
fn each_rule_fires_at_its_line_with_the_mode_s_severity() {
    let skill = "---\nname: My_Skill\ndescription: Decodes accounts.\nmodel: haiku\nfoo: bar\n---\n# Body\n\nRead [api](references/API.md) and [notes](notes.md).\n";
    let (_tmp, b) = folder(&[
        ("SKILL.md", skill),
        ("references/api.md", "# API\n\nMore in [deep](deep.md).\n"),
        ("references/deep.md", "# Deep\n"),
        ("notes.md", "# Notes\n"),
        ("orphan.md", "# Nobody links here\n"),
        ("tools/run.sh", "#!/bin/sh\necho\n"),
    ]);
    let strict = lint::lint(&b, Mode::Strict, Some("my-skill"));
    let got = found(&strict);
    use Severity::{Error, Info, Warning};
    assert_eq!(
        got,
        [
            ("SKILL.md", 2, "name-format", Error),
            ("SKILL.md", 2, "name-matches-folder", Warning),
            ("SKILL.md", 3, "description-trigger", Warning),
            ("SKILL.md", 4, "front-matter-key", Warning),
            ("SKILL.md", 5, "front-matter-key", Warning),
            ("SKILL.md", 9, "reference-missing", Error),
            ("orphan.md", 1, "file-unreferenced", Info),
            // Linked only by a link that misses its case (`API.md`).
            ("references/api.md", 1, "file-unreferenced", Info),
            ("tools/run.sh", 1, "script-usage", Warning),
        ]
        .map(|(path, line, rule, sev)| (rule, path, line, sev)),
        "{strict:#?}"
    );
    // references/api.md is missing as written (`API.md`), so its own link is not one level
    // down yet; after the fix it is (below).
    let lenient = lint::lint(&b, Mode::Lenient, Some("my-skill"));
    let got = found(&lenient);
    assert!(
        got.contains(&("name-format", "SKILL.md", 2, Warning)),
        "{got:?}"
    );
    assert!(
        got.contains(&("description-trigger", "SKILL.md", 3, Info)),
        "{got:?}"
    );
    // `model` is Claude Code's: known in lenient mode; `foo` is nobody's.
    let keys: Vec<usize> = lenient
        .iter()
        .filter(|f| f.rule == "front-matter-key")
        .map(|f| f.line)
        .collect();
    assert_eq!(keys, [5]);
    assert!(
        !got.iter()
            .any(|g| g.0 == "name-matches-folder" || g.0 == "file-unreferenced")
    );
    // Every finding names a rule of the table and says something.
    for f in strict.iter().chain(&lenient) {
        assert!(RULES.iter().any(|r| r.id == f.rule));
        assert!(!f.message.is_empty());
    }
}

#[test]
fn fixes_are_mechanical_and_the_fixed_bundle_lints_clean_of_them() {
    let skill = "---\nname: \"My Skill\"\ndescription: Decodes accounts. Use when given bytes.\n---\nRead [api](references/API.md#fields).\n";
    let (tmp, b) = folder(&[
        ("SKILL.md", skill),
        ("references/api.md", "# API\n\nSee [deep](deep.md).\n"),
        ("references/deep.md", "# Deep\n"),
    ]);
    let findings = lint::lint(&b, Mode::Strict, Some("my-skill"));
    let files: BTreeMap<String, String> = b
        .files
        .iter()
        .filter_map(|f| Some((f.path.clone(), f.text()?.to_owned())))
        .collect();
    let outcome = lint::fix(&files, &findings);
    assert_eq!(outcome.applied.len(), 2);
    assert!(outcome.skipped.is_empty());
    let changed = outcome.changed;
    assert_eq!(changed.keys().collect::<Vec<_>>(), ["SKILL.md"]);
    let fixed = &changed["SKILL.md"];
    assert_eq!(
        fixed,
        "---\nname: my-skill\ndescription: Decodes accounts. Use when given bytes.\n---\nRead [api](references/api.md#fields).\n"
    );
    // Written back, the bundle no longer has those findings; the nested link now shows.
    write(&tmp.path().join("my-skill"), &[("SKILL.md", fixed)]);
    let again = bundle::import(&tmp.path().join("my-skill")).unwrap();
    let after = lint::lint(&again, Mode::Strict, Some("my-skill"));
    let after = found(&after);
    assert_eq!(
        after,
        [("reference-depth", "references/api.md", 3, Severity::Warning)],
    );
    // A fix whose text moved is skipped and said so, not forced.
    let mut moved = files.clone();
    moved.insert("SKILL.md".to_owned(), "---\n\nname: x\n".to_owned());
    let outcome = lint::fix(&moved, &findings);
    assert!(outcome.changed.is_empty() && outcome.applied.is_empty());
    assert_eq!(outcome.skipped.len(), 2);
}

#[test]
fn a_link_fix_rewrites_the_link_target_only_never_the_same_text_elsewhere_on_the_line() {
    let skill = "---\nname: my-skill\ndescription: Use when reading guides.\n---\nSee `Docs/Guide.md` or Docs/Guide.md, then read [guide](Docs/Guide.md) and [again](<Docs/Guide.md#top>).\n\n[ref]: Docs/Guide.md\n";
    let (_tmp, b) = folder(&[("SKILL.md", skill), ("docs/guide.md", "# Guide\n")]);
    let findings = lint::lint(&b, Mode::Strict, Some("my-skill"));
    let files: BTreeMap<String, String> = b
        .files
        .iter()
        .filter_map(|f| Some((f.path.clone(), f.text()?.to_owned())))
        .collect();
    let fixed = lint::fix(&files, &findings).changed["SKILL.md"].clone();
    assert_eq!(
        fixed,
        "---\nname: my-skill\ndescription: Use when reading guides.\n---\nSee `Docs/Guide.md` or Docs/Guide.md, then read [guide](docs/guide.md) and [again](<docs/guide.md#top>).\n\n[ref]: docs/guide.md\n"
    );
}

#[test]
fn keys_are_read_as_yaml_writes_them_and_repeated_links_are_one_finding() {
    let skill = "---\n\"name\" : my-skill\ndescription: Use when x.\n\"foo\": 1\nx.y: 2\nfoo bar: 3\n---\n[a](references/a.md) [a](references/a.md) [a](references/a.md)\n";
    let (_tmp, b) = folder(&[
        ("SKILL.md", skill),
        ("references/a.md", "# A\n\n[b](b.md)\n"),
        ("references/b.md", "# B\n"),
        ("tools/prerun.sh", "#!/bin/sh\n"),
        ("tools/run.sh", "#!/bin/sh\n"),
    ]);
    let findings = lint::lint(&b, Mode::Strict, Some("my-skill"));
    let keys: Vec<usize> = findings
        .iter()
        .filter(|f| f.rule == "front-matter-key")
        .map(|f| f.line)
        .collect();
    assert_eq!(keys, [4, 5, 6]);
    let depth = findings
        .iter()
        .filter(|f| f.rule == "reference-depth")
        .count();
    assert_eq!(depth, 1);
    // `prerun.sh` is not named by a mention of `run.sh`, nor the other way round.
    let scripts: Vec<&str> = findings
        .iter()
        .filter(|f| f.rule == "script-usage")
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(scripts, ["tools/prerun.sh", "tools/run.sh"]);
}

#[test]
fn body_size_description_length_and_a_missing_description() {
    let long_body = "line\n".repeat(lint::MAX_BODY_LINES + 1);
    let skill = format!("---\nname: my-skill\n---\n{long_body}");
    let (_tmp, b) = folder(&[("SKILL.md", &skill)]);
    let findings = lint::lint(&b, Mode::Strict, None);
    let got = found(&findings);
    assert!(
        got.contains(&("description-missing", "SKILL.md", 1, Severity::Error)),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "body-lines",
            "SKILL.md",
            3 + lint::MAX_BODY_LINES + 1,
            Severity::Warning
        )),
        "{got:?}"
    );
    // No folder given (a ZIP): the folder rule says nothing.
    assert!(!got.iter().any(|g| g.0 == "name-matches-folder"));

    let wide = "x".repeat(4 * lint::MAX_BODY_TOKENS + 8);
    let description = "Use when y. ".repeat(100);
    let skill = format!("---\nname: my-skill\ndescription: {description}\n---\n{wide}\n");
    let (_tmp, b) = folder(&[("SKILL.md", &skill)]);
    let findings = lint::lint(&b, Mode::Strict, None);
    let got = found(&findings);
    assert!(
        got.contains(&("description-too-long", "SKILL.md", 3, Severity::Error)),
        "{got:?}"
    );
    assert!(
        got.contains(&("body-tokens", "SKILL.md", 5, Severity::Warning)),
        "{got:?}"
    );
    let lenient = lint::lint(&b, Mode::Lenient, None);
    let lenient = found(&lenient);
    assert!(lenient.contains(&("description-too-long", "SKILL.md", 3, Severity::Warning)));
}

#[test]
fn linting_changes_no_digest() {
    let (_tmp, b) = folder(&[("SKILL.md", "---\nname: Bad Name\n---\nbody\n")]);
    let before = b.digest;
    let findings = lint::lint(&b, Mode::Strict, Some("my-skill"));
    assert!(!findings.is_empty());
    assert_eq!(b.digest, before);
}

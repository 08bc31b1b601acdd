//! The README's CI example (`examples/github/skilltrial-gate.yml`) run as written: its `run:`
//! steps, in order, with bash, in a real git repository of a skill with a tagged release — the
//! fork path (no secret: the scripted model) and the main-branch path (a key, the real Anthropic
//! wire format from a loopback server). Only the steps that install things are left out: the
//! binary under test is first on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use skilltrial_engine::scripted::{Reply, ScriptedServer};
use support::{root, scripted_answer};

const WORKFLOW: &str = "examples/github/skilltrial-gate.yml";

/// The workflow's steps as (name, script), in order: a `run: |` block dedented, or a one-line run.
fn steps(yaml: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = yaml.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut steps = Vec::new();
    let mut name = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start().trim_start_matches("- ");
        if let Some(n) = t.strip_prefix("name: ") {
            name = n.to_owned();
        } else if let Some(cmd) = t.strip_prefix("run: ") {
            if cmd == "|" {
                let base = indent(line);
                let mut body = Vec::new();
                i += 1;
                while i < lines.len() && (lines[i].trim().is_empty() || indent(lines[i]) > base) {
                    body.push(lines[i]);
                    i += 1;
                }
                let cut = body
                    .iter()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| indent(l))
                    .min()
                    .unwrap_or(0);
                let script: Vec<&str> = body.iter().map(|l| l.get(cut..).unwrap_or("")).collect();
                steps.push((name.clone(), script.join("\n")));
                continue;
            }
            steps.push((name.clone(), cmd.to_owned()));
        }
        i += 1;
    }
    steps
}

fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A skill repository: solana-reader 1.4.2 committed and tagged `v1.4.2`, then the working tree
/// changed to 1.5.0 (the pull request), with the default policy as gate.toml.
fn skill_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("skill-repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    support::copy_tree(
        &root().join("fixtures/bundles/solana-reader-1.4.2"),
        &repo.join("skill"),
    );
    std::fs::write(
        repo.join("gate.toml"),
        skilltrial_core::gate::DEFAULT_POLICY,
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "release 1.4.2"]);
    git(&repo, &["tag", "v1.4.2"]);
    std::fs::remove_dir_all(repo.join("skill")).unwrap();
    support::copy_tree(
        &root().join("fixtures/bundles/solana-reader-1.5.0"),
        &repo.join("skill"),
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "1.5.0"]);
    repo
}

/// Runs every step of the workflow but the installs in `repo` with `env`; returns each step's
/// (name, exit code, stdout, stderr).
fn run_workflow(repo: &Path, env: &[(&str, &str)]) -> Vec<(String, i32, String, String)> {
    let yaml = std::fs::read_to_string(root().join(WORKFLOW)).unwrap();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_skilltrial"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut results = Vec::new();
    for (name, script) in steps(&yaml) {
        if name.starts_with("Install") {
            continue;
        }
        let mut cmd = Command::new("bash");
        cmd.arg("-eo")
            .arg("pipefail")
            .arg("-c")
            .arg(&script)
            .current_dir(repo)
            .env("PATH", &path)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("SKILLTRIAL_HOME");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        results.push((
            name,
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    results
}

fn step<'a>(
    results: &'a [(String, i32, String, String)],
    name: &str,
) -> &'a (String, i32, String, String) {
    results
        .iter()
        .find(|r| r.0.starts_with(name))
        .unwrap_or_else(|| panic!("no step {name:?} in {WORKFLOW}"))
}

#[test]
fn the_readme_shows_the_workflow_file_as_it_is() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let yaml = std::fs::read_to_string(root().join(WORKFLOW)).unwrap();
    assert!(
        readme.contains(&format!("```yaml\n{yaml}```")),
        "README.md must show {WORKFLOW} verbatim in a ```yaml block"
    );
    let names: Vec<String> = steps(&yaml).into_iter().map(|s| s.0).collect();
    assert_eq!(
        names,
        [
            "Install SkillTrial",
            "Released skill as A",
            "Run the released skill (A) against this change (B)",
            "Gate"
        ]
    );
}

#[test]
fn in_a_fork_the_scripted_run_misses_the_gate_on_the_task_b_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let repo = skill_repo(dir.path());
    let results = run_workflow(&repo, &[]);
    for (name, code, _, stderr) in &results[..2] {
        assert_eq!(*code, 0, "{name}: {stderr}");
    }
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("skilltrial-run.json")).unwrap())
            .unwrap();
    assert!(
        repo.join("skilltrial-report/report.html").is_file(),
        "{run:#}"
    );
    // Consistency across the three repetitions, per arm (the scripted story: B fails the legacy
    // transaction in two repetitions; A fails two tasks always and one once).
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join("skilltrial-report/report.json")).unwrap(),
    )
    .unwrap();
    let consistency = |arm: usize, rate: &str| {
        let c = &report["summary"]["arms"][arm]["consistency"];
        assert_eq!(
            (c["k"].as_u64(), c["tasks"].as_u64()),
            (Some(3), Some(6)),
            "{c}"
        );
        (
            c[rate]["num"].as_u64().unwrap(),
            c[rate]["den"].as_u64().unwrap(),
        )
    };
    assert_eq!(consistency(1, "pass_hat_k"), (3, 6));
    assert_eq!(consistency(1, "pass_at_k"), (4, 6));
    assert_eq!(consistency(2, "pass_hat_k"), (5, 6));
    assert_eq!(consistency(2, "pass_at_k"), (6, 6));
    let again = Command::new(env!("CARGO_BIN_EXE_skilltrial"))
        .args(["--home", ".skilltrial", "report", "--out", "again"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&again.stdout);
    assert!(
        table.contains("consistency over 3 repetitions")
            && table.contains("B         pass^3 5/6 · pass@3 6/6 tasks"),
        "{table}"
    );
    // The scripted story: 1.5.0 fails the legacy transaction in two of three repetitions.
    let (_, code, stdout, stderr) = step(&results, "Gate");
    assert_eq!(*code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("::error title=SkillTrial gate%3A no-breaks%3A B vs A::B breaks 1 of"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tx-legacy-nonce-bonk (A 3/3, B 1/3)"),
        "{stdout}"
    );
    assert!(stdout.contains("scripted model"), "{stdout}");
    let xml = std::fs::read_to_string(repo.join("skilltrial-gate.xml")).unwrap();
    assert!(xml.contains("<failure "), "{xml}");
    assert!(xml.contains("name=\"verdict\" value=\"missed\""), "{xml}");
}

#[test]
fn on_main_the_keyed_run_uses_the_real_wire_format_and_clears_the_gate() {
    // Both versions answer every task correctly; the baseline never does.
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let secret = "sk-ant-workflow-SECRET-7731";
    let dir = tempfile::tempdir().unwrap();
    let repo = skill_repo(dir.path());
    let url = server.url();
    let results = run_workflow(
        &repo,
        &[("ANTHROPIC_API_KEY", secret), ("ANTHROPIC_BASE_URL", &url)],
    );
    let (_, code, stdout, stderr) = step(&results, "Run the released skill");
    assert_eq!(*code, 0, "{stdout}\n{stderr}");
    assert!(
        !server.requests().is_empty(),
        "the run never reached the model server"
    );
    let (_, code, stdout, stderr) = step(&results, "Gate");
    assert_eq!(*code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("::notice title=SkillTrial gate::cleared"),
        "{stdout}"
    );
    assert!(!stdout.contains("scripted model"), "{stdout}");
    // The key is in no file the workflow leaves behind (reports, journal, artifacts).
    for file in support::files_under(&repo) {
        if file.components().any(|c| c.as_os_str() == ".git") {
            continue;
        }
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{} holds the key",
            file.display()
        );
    }
}

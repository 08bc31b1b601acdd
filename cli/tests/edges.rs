//! The CLI's edges found by the acceptance run: the request bound `plan` prints, run ids in every
//! form `plan` prints them, one exit code per kind of error, flags given negative numbers, error
//! messages that say each cause once, `verify --json`, a read-only state directory, and
//! `compare` of a run without results. The real binary, a real journal under a temporary state
//! directory, and the loopback server speaking the Anthropic wire format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use skilltrial_engine::journal::Journal;
use skilltrial_engine::scripted::{Reply, ScriptedServer};

mod support;

use support::{Env, scripted_answer};

/// `plan` with `extra` and no `--json`: (exit code, stdout, stderr).
fn plan_outcome(env: &Env, extra: &[&str]) -> (Option<i32>, String, String) {
    let args = env.plan_args(extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    outcome(env.run(&args))
}

/// (exit code, stdout, stderr).
fn outcome(out: Output) -> (Option<i32>, String, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn regression_plan_prints_the_true_request_bound_counting_automatic_retries() {
    // Given a provider that turns every request away with a 429 (which costs nothing)
    let server = ScriptedServer::start(|_| Reply::Status(429)).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    // When 18 trials are planned under a cap of 60 requests
    let plan = env.plan_doc(&[
        "--reps",
        "1",
        "--seed",
        "7",
        "--cap-usd",
        "4",
        "--max-requests",
        "60",
    ]);
    // Then the bound is min(60, 18 × (1 + 3 automatic retries)) = 60, not 18
    assert_eq!(plan["trials"], 18);
    assert_eq!(plan["totals"]["max_requests"], 60);
    let (code, text, _) = plan_outcome(
        &env,
        &[
            "--reps",
            "1",
            "--seed",
            "7",
            "--cap-usd",
            "4",
            "--max-requests",
            "100",
        ],
    );
    assert_eq!(code, Some(0));
    assert!(
        text.contains("requests  at most 72 (cap 100 per run; up to 3 automatic retries per trial of rate-limited or overloaded requests, which cost nothing, count against it)\n"),
        "{text}"
    );
    // And the run really sends more than one request per trial, never more than the bound
    let run = plan["run"].as_str().unwrap();
    let out = env.run(&["run", "--manifest", run, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = server.requests().len();
    assert!(sent > 18 && sent <= 60, "{sent} requests sent");
}

#[test]
fn regression_every_command_takes_the_run_id_as_plan_prints_it() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let plan = env.plan_doc(&["--reps", "1", "--seed", "7", "--cap-usd", "4"]);
    let printed = plan["manifest_hash"].as_str().unwrap().to_owned();
    let run = plan["run"].as_str().unwrap().to_owned();
    assert_eq!(printed, format!("sha256:{run}"));
    let dry = env.json(&["run", "--manifest", &printed, "--dry-run", "--json"]);
    assert_eq!(dry["run"], run.as_str());
    assert_eq!(
        env.json(&["status", &printed, "--json"])["run"],
        run.as_str()
    );
    let summary = env.json(&["run", "--manifest", &printed, "--json"]);
    assert_eq!(summary["status"], "finished");
    let out_dir = env.dir.path().join("r");
    let report = env.json(&[
        "report",
        &printed,
        "--out",
        out_dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(report["manifest_hash"], printed.as_str());
    assert_eq!(
        env.json(&["recheck", &printed, "--json"])["run"],
        run.as_str()
    );
    // Both forms name the same run, so compare refuses it as a run compared with itself.
    let (code, _, stderr) = outcome(env.run(&["compare", &printed, &run]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        format!(
            "error: both arguments name run {}: comparing a run with itself says nothing; give two different runs\n",
            &run[..12]
        )
    );
    // An uppercase hash is the same id.
    let upper = format!("sha256:{}", run.to_uppercase());
    assert_eq!(env.json(&["status", &upper, "--json"])["run"], run.as_str());
    let (code, stdout, _) = outcome(env.run(&["cancel", &printed]));
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        format!(
            "run {} is already finished: nothing to cancel\n",
            &run[..12]
        )
    );
}

#[test]
fn regression_no_such_run_is_a_usage_error_from_every_command_and_short_prefixes_say_so() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    env.plan_doc(&["--reps", "1", "--seed", "7", "--cap-usd", "4"]);
    let journal = env.home().join("journal.sqlite3");
    let missing = format!(
        "error: no run `0123456789abcdef` in {}: give the manifest hash `skilltrial plan` printed, or a prefix of at least 8 characters\n",
        journal.display()
    );
    for args in [
        &["run", "--manifest", "0123456789abcdef"][..],
        &["status", "0123456789abcdef"],
        &["report", "0123456789abcdef"],
        &["cancel", "0123456789abcdef"],
        &["recheck", "0123456789abcdef"],
    ] {
        let (code, _, stderr) = outcome(env.run(args));
        assert_eq!(
            (code, stderr.as_str()),
            (Some(2), missing.as_str()),
            "{args:?}"
        );
    }
    let short = "error: run id prefix `08ed` is too short: give at least 8 characters of the manifest hash\n";
    for args in [
        &["run", "--manifest", "08ed"][..],
        &["status", "08ed"],
        &["compare", "08ed", "08ed"],
    ] {
        let (code, _, stderr) = outcome(env.run(args));
        assert_eq!((code, stderr.as_str()), (Some(2), short), "{args:?}");
    }
    let (code, _, stderr) = outcome(env.run(&["status", "not-a-run"]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "error: `not-a-run` is not a run id: give the manifest hash `skilltrial plan` printed (sha256:<64 hex>), or a prefix of at least 8 of its hex characters\n"
    );
    let (code, _, stderr) = outcome(env.run(&["resolve", "bogus-id", "--release"]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        format!(
            "error: no attempt `bogus-id` in {}: give an attempt id `skilltrial status` lists\n",
            journal.display()
        )
    );
}

#[test]
fn regression_negative_numbers_are_refused_naming_the_flag_and_a_zero_cap_is_refused() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    for (flag, value, said) in [
        (
            "--reps",
            "-1",
            "error: invalid value '-1' for '--reps <REPS>': -1 is not in 0..=4294967295",
        ),
        (
            "--max-requests",
            "-5",
            "error: invalid value '-5' for '--max-requests <MAX_REQUESTS>': -5 is not in 0..=4294967295",
        ),
        (
            "--seed",
            "-2",
            "error: invalid value '-2' for '--seed <SEED>': invalid digit found in string",
        ),
    ] {
        let (code, _, stderr) = plan_outcome(&env, &["--cap-usd", "4", flag, value]);
        assert_eq!(code, Some(2), "{flag}");
        assert_eq!(stderr.lines().next(), Some(said), "{stderr}");
    }
    // Parsed by clap, like the numbers above: its usage error names the flag, the value and why.
    let (code, _, stderr) = plan_outcome(&env, &["--cap-usd", "-1"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr.lines().next(),
        Some(
            "error: invalid value '-1' for '--cap-usd <USD>': `-1` is not a USD amount (digits, optionally a point and up to 6 decimals, e.g. 4 or 0.25)"
        ),
        "{stderr}"
    );
    let (code, _, stderr) =
        outcome(env.run(&["run", "--manifest", "0123456789", "--max-dispatch", "-3"]));
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("error: invalid value '-3' for '--max-dispatch <N>'"),
        "{stderr}"
    );
    // A zero cap on a priced profile could send nothing: refused, not planned with a warning.
    let (code, _, stderr) = plan_outcome(&env, &["--cap-usd", "0"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "error: cannot plan: --cap-usd must be more than 0: with a cap of $0 no trial can be sent\n"
    );
}

#[test]
fn regression_errors_say_each_cause_once_and_name_the_report_file() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    // A journal that is not SQLite.
    let garbage = env.dir.path().join("garbage");
    std::fs::create_dir_all(&garbage).unwrap();
    std::fs::write(garbage.join("journal.sqlite3"), vec![b'x'; 4096]).unwrap();
    let (code, _, stderr) = outcome(env.run_in(&garbage, &["status"]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        format!(
            "error: cannot open the journal in {}: journal {}: file is not a database\n",
            garbage.display(),
            garbage.join("journal.sqlite3").display()
        )
    );
    // A report file path that is a directory.
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let dir = env.dir.path().join("q1");
    std::fs::create_dir_all(&dir).unwrap();
    let (code, _, stderr) =
        outcome(env.run(&["report", &run, "--out-json", dir.to_str().unwrap()]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        format!(
            "error: cannot write the report file {}: Is a directory (os error 21)\n",
            dir.display()
        )
    );
}

#[test]
fn regression_verify_json_names_every_mismatch_in_the_shape_of_a_success() {
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

/// Sets or clears every write bit under `dir` (`chmod -R a-w` / `u+w`).
fn set_read_only(dir: &Path, read_only: bool) {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            set_read_only(&path, read_only);
        }
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        let mode = if read_only {
            mode & !0o222
        } else {
            mode | 0o200
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mode = std::fs::metadata(dir).unwrap().permissions().mode();
    let mode = if read_only {
        mode & !0o222
    } else {
        mode | 0o200
    };
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Every path under `dir`, sorted.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(listing(&path));
        }
        out.push(path);
    }
    out.sort();
    out
}

#[test]
fn regression_a_read_only_state_directory_can_be_read() {
    // Tests often run as root, whom `chmod` does not stop: the CLI decides by the permission
    // bits, so this exercises the read-only open either way; the listing check below shows that
    // nothing (not even SQLite's -wal/-shm files) was written into the read-only copy.
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let other = env.plan_seeded("8", &["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let copy = env.dir.path().join("ro-home");
    support::copy_tree(&env.home(), &copy);
    set_read_only(&copy, true);
    let before = listing(&copy);
    let json = |args: &[&str]| -> Value {
        let (code, stdout, stderr) = outcome(env.run_in(&copy, args));
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        serde_json::from_str(&stdout).unwrap()
    };
    let status = json(&["status", &run, "--json"]);
    assert_eq!(status["status"], "finished");
    let out_dir = env.dir.path().join("ro-report");
    let report = json(&["report", &run, "--out", out_dir.to_str().unwrap(), "--json"]);
    assert_eq!(report["manifest_hash"], format!("sha256:{run}"));
    assert_eq!(
        json(&["compare", &run, &other, "--json"])["comparable"],
        true
    );
    let after = listing(&copy);
    set_read_only(&copy, false);
    assert_eq!(
        before, after,
        "nothing is written into a read-only state directory"
    );

    // The read-only journal refuses writes, naming the file.
    let journal = Journal::open_read_only(&env.home().join("journal.sqlite3")).unwrap();
    assert_eq!(
        journal.find_run(&run).unwrap().unwrap().status.as_str(),
        "finished"
    );
    let err = journal.request_cancel(&run).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "journal {}: attempt to write a readonly database",
            env.home().join("journal.sqlite3").display()
        )
    );
}

/// A read-only bind mount of `dir` at `at`, unmounted when dropped.
struct ReadOnlyMount(PathBuf);

impl ReadOnlyMount {
    /// `None` where this process may not mount (not root, or no mount capability).
    fn new(dir: &Path, at: &Path) -> Option<Self> {
        std::fs::create_dir_all(at).unwrap();
        let mount = |args: &[&str]| {
            std::process::Command::new("mount")
                .args(args)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let (dir, at_s) = (dir.to_str().unwrap(), at.to_str().unwrap());
        if !mount(&["--bind", dir, at_s]) {
            return None;
        }
        let guard = Self(at.to_path_buf());
        mount(&["-o", "remount,bind,ro", at_s]).then_some(guard)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn regression_a_read_only_mount_can_be_read_although_its_permission_bits_allow_writing() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let at = env.dir.path().join("ro-mount");
    let Some(_mount) = ReadOnlyMount::new(&env.home(), &at) else {
        eprintln!("NOT RUN: this process cannot make a read-only bind mount (needs root)");
        return;
    };
    assert!(
        !std::fs::metadata(&at).unwrap().permissions().readonly(),
        "the bits still say writable"
    );
    let (code, stdout, stderr) = outcome(env.run_in(&at, &["status", &run, "--json"]));
    assert_eq!(code, Some(0), "{stderr}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["status"], "finished");
    let out_dir = env.dir.path().join("ro-mount-report");
    let (code, _, stderr) = outcome(env.run_in(
        &at,
        &["report", &run, "--out", out_dir.to_str().unwrap(), "--json"],
    ));
    assert_eq!(code, Some(0), "{stderr}");
    // A command that writes still fails, as the environment (2), naming the journal.
    let (code, _, stderr) = outcome(env.run_in(&at, &["purge", "--older-than", "0d"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("journal.sqlite3"), "{stderr}");
}

#[test]
fn regression_compare_with_a_run_without_results_and_arm_labels_read_a_and_b() {
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

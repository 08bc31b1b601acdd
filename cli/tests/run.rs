//! Paired runs end to end: the real `skilltrial` binary, a real SQLite journal under a temporary
//! state directory, and a real HTTP server on loopback speaking the Anthropic wire format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_runner::checker::Expected;
use skilltrial_runner::pack;
use skilltrial_runner::scripted::{Reply, ScriptedServer, ServerRequest};

const SECRET: &str = "sk-ant-test-SECRET-do-not-store-4242";

/// Waits (at most 60 s) until `server` has seen at least `count` requests.
fn wait_for_requests(server: &ScriptedServer, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.requests().len() < count {
        assert!(
            Instant::now() < deadline,
            "the runner never reached request {count}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new(server: &ScriptedServer, price: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let price_lines = if price {
            "input_usd_per_mtok = \"3\"\noutput_usd_per_mtok = \"15\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-29\"\n"
        } else {
            ""
        };
        std::fs::write(
            dir.path().join("profiles.toml"),
            format!(
                "[[profile]]\nid = \"loopback\"\nprovider = \"anthropic\"\nmodel = \"loopback-model\"\nbase_url = \"{}\"\ncontext_tokens = 200000\nmax_output_tokens = 1024\n{price_lines}",
                server.url()
            ),
        )
        .unwrap();
        Self { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_skilltrial"));
        cmd.args(args)
            .arg("--home")
            .arg(self.home())
            .current_dir(root())
            .env("ANTHROPIC_API_KEY", SECRET)
            .env_remove("ANTHROPIC_BASE_URL")
            .stdin(Stdio::null());
        cmd
    }

    /// Starts `skilltrial run --manifest <run>` in the background, output discarded.
    fn spawn_run(&self, run: &str) -> std::process::Child {
        self.command(&["run", "--manifest", run])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn plan(&self, extra: &[&str]) -> String {
        let profiles = self.dir.path().join("profiles.toml");
        let mut args = vec![
            "plan",
            "--model",
            "loopback",
            "--profiles",
            profiles.to_str().unwrap(),
            "--a",
            "fixtures/bundles/solana-reader-1.4.2",
            "--b",
            "fixtures/bundles/solana-reader-1.5.0",
            "--seed",
            "7",
            "--json",
        ];
        args.extend_from_slice(extra);
        let doc = self.json(&args);
        doc["run"].as_str().unwrap().to_owned()
    }
}

/// The golden answer of the task named in a request, or a wrong answer for the baseline arm.
fn scripted_answer(request: &ServerRequest) -> String {
    let user = request.user_text();
    let task = user
        .split("<task id=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or("");
    let p = pack::open("solana-core@1.0.3").unwrap();
    let Ok(t) = p.task(task) else {
        return "no such task".into();
    };
    let Expected::Golden(golden) = t.reveal_expected() else {
        return "excluded".into();
    };
    if user.contains("<skill name=") {
        golden.to_string()
    } else {
        "I cannot decode this.".into()
    }
}

fn counts(status: &Value) -> (u64, u64, u64) {
    let c = &status["counts"];
    let get = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
    (get("pass"), get("invalid_output"), get("unknown"))
}

fn files_contain(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
            {
                hits.push(path);
            }
        }
    }
    hits
}

#[test]
fn a_54_trial_run_completes_with_correct_outcomes_and_no_key_on_disk() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "3", "--cap-usd", "4"]);
    let summary = env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(summary["status"], "finished");
    assert_eq!(summary["planned"], 54);

    let status = env.json(&["status", "--json"]);
    assert_eq!(status["planned"], 54);
    assert_eq!(status["executed"], 54);
    // Skill arms answer with the golden record; the baseline answers in prose.
    assert_eq!(counts(&status), (36, 18, 0));
    assert_eq!(status["reserved_usd_micros"], 0, "every reserve released");
    assert!(status["spent_usd_micros"].as_u64().unwrap() > 0);
    assert_eq!(
        server.requests().len(),
        54,
        "one request per trial, none repeated"
    );

    // Resuming a finished run sends nothing.
    env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(server.requests().len(), 54);

    // The key reached the server in a header and nowhere on disk.
    assert!(server.requests().iter().all(|r| r.had_api_key));
    assert_eq!(
        files_contain(&env.home(), SECRET.as_bytes()),
        Vec::<PathBuf>::new()
    );
    assert_eq!(
        files_contain(env.dir.path(), SECRET.as_bytes()),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn sigkill_mid_request_leaves_one_unknown_seen_once_and_nothing_resent() {
    // Given a server that hangs on the sixth request only while the first runner is alive
    let hang = Arc::new(AtomicBool::new(true));
    let seen = Arc::new(AtomicU64::new(0));
    let server = {
        let (hang, seen) = (Arc::clone(&hang), Arc::clone(&seen));
        ScriptedServer::start(move |r| {
            seen.fetch_add(1, Ordering::SeqCst);
            if r.index == 5 && hang.load(Ordering::SeqCst) {
                Reply::Hang
            } else {
                Reply::Answer(scripted_answer(r))
            }
        })
        .unwrap()
    };
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "3", "--cap-usd", "4"]);

    // When the runner is SIGKILLed while that request is in flight
    let mut child = env.spawn_run(&run);
    wait_for_requests(&server, 6);
    std::thread::sleep(Duration::from_millis(100));
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let hung = server.requests()[5].clone();

    // And restarted
    hang.store(false, Ordering::SeqCst);
    let summary = env.json(&["run", "--manifest", &run, "--json"]);

    // Then the in-flight attempt is unknown, was seen exactly once, nothing was re-sent
    assert_eq!(summary["recovered_unknown"].as_array().unwrap().len(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 54, "53 answered + 1 lost, none repeated");
    let hung_attempt = hung.attempt.clone().unwrap();
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.attempt.as_deref() == Some(hung_attempt.as_str()))
            .count(),
        1
    );
    let status = env.json(&["status", "--json"]);
    assert_eq!(counts(&status).2, 1);
    let unknown = &status["unknown"][0];
    // And the ledger is balanced: only the unknown attempt's reserve is still held
    assert_eq!(
        status["reserved_usd_micros"],
        unknown["reserved_usd_micros"]
    );

    // When the user retries it with a reason, a new attempt is sent once and the old one stays
    let attempt = unknown["attempt"].as_str().unwrap().to_owned();
    assert_eq!(
        attempt, hung_attempt,
        "the unknown attempt is the one that was in flight"
    );
    let resolved = env.json(&[
        "resolve",
        &attempt,
        "--retry",
        "--reason",
        "runner was killed in a test",
        "--json",
    ]);
    let new_attempt = resolved["new_attempt"].as_str().unwrap().to_owned();
    assert_ne!(new_attempt, attempt);
    env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(server.requests().len(), 55);
    let status = env.json(&["status", "--json"]);
    assert_eq!(
        status["attempts"], 55,
        "the old attempt is its own observation"
    );
    assert_eq!(counts(&status).2, 0);
    assert_eq!(status["reserved_usd_micros"], 0);
    let out = env.run(&["resolve", &attempt, "--release"]);
    assert_eq!(out.status.code(), Some(1), "an attempt is resolved once");
    drop(seen);
}

#[test]
fn faults_become_infrastructure_errors_or_unknown_never_passes() {
    let server = ScriptedServer::start(|r| match r.index {
        0 => Reply::Status(429),
        1 => Reply::Status(529),
        2 => Reply::Status(503),
        3 => Reply::DieHalfway(scripted_answer(r)),
        4 => Reply::Malformed,
        _ => Reply::Answer(scripted_answer(r)),
    })
    .unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["counts"]["infrastructure_error"], 3);
    assert_eq!(status["counts"]["unknown"], 2);
    assert_eq!(server.requests().len(), 18, "nothing retried automatically");
    assert_eq!(status["unknown"].as_array().unwrap().len(), 2);
}

#[test]
fn a_small_cap_stops_dispatch_with_not_run_budget_and_never_overspends() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "0.20"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let status = env.json(&["status", "--json"]);
    let not_run = status["counts"]["not_run"].as_u64().unwrap();
    assert!(not_run > 0, "{status}");
    assert!(status["spent_usd_micros"].as_u64().unwrap() <= 200_000);
    assert_eq!(server.requests().len() as u64, 18 - not_run);
}

#[test]
fn cancel_from_another_process_stops_new_dispatches() {
    let server =
        ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), Duration::from_millis(150)))
            .unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut child = env.spawn_run(&run);
    wait_for_requests(&server, 3);
    env.json(&["cancel", &run, "--json"]);
    assert!(child.wait().unwrap().success());
    let status = env.json(&["status", &run, "--json"]);
    assert_eq!(status["status"], "cancelled");
    let sent = server.requests().len() as u64;
    assert!(sent < 18, "dispatch stopped");
    assert_eq!(
        status["counts"]["not_run"].as_u64().unwrap() + status["executed"].as_u64().unwrap(),
        18
    );
    assert_eq!(
        status["executed"].as_u64().unwrap(),
        sent,
        "the request in flight finished and was kept"
    );
}

#[test]
fn recheck_rescores_without_the_network_and_purge_removes_payloads() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    server.stop(); // no network from here on
    let recheck = env.json(&["recheck", &run, "--json"]);
    assert_eq!(recheck["rechecked"], 18);
    assert_eq!(recheck["changed"], serde_json::json!([]));
    let purge = env.json(&["purge", "--older-than", "0d", "--json"]);
    assert!(purge["removed"].as_u64().unwrap() >= 18);
    let recheck = env.json(&["recheck", &run, "--json"]);
    assert_eq!(recheck["rechecked"], 0);
    assert_eq!(recheck["answers_purged"].as_array().unwrap().len(), 18);
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["executed"], 18, "outcomes survive the purge");
}

#[test]
fn run_refuses_a_manifest_whose_inputs_changed_or_are_missing() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    // Tamper with a stored input: the bundle's SKILL.md blob
    let store = env.home().join("store/sha256");
    let mut tampered = false;
    for dir in std::fs::read_dir(&store).unwrap() {
        for file in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            if bytes.starts_with(b"---\nname: solana-reader") {
                std::fs::write(&path, b"---\nname: solana-reader\n---\nnow different\n").unwrap();
                tampered = true;
            }
        }
    }
    assert!(tampered);
    let out = env.run(&["run", "--manifest", &run]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("corrupt"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests().len(), 0, "nothing sent");
    let missing = env.run(&["run", "--manifest", &"ab".repeat(32)]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not in the store"));
}

#[test]
fn an_unpriced_profile_needs_hard_caps_and_confirmation() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server, false);
    let profiles = env.dir.path().join("profiles.toml");
    let base = [
        "plan",
        "--model",
        "loopback",
        "--profiles",
        profiles.to_str().unwrap(),
        "--reps",
        "1",
        "--json",
    ];
    let out = env.run(&base);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--max-requests"));
    let mut args = base.to_vec();
    args.extend(["--max-requests", "10", "--max-tokens", "400000"]);
    let doc = env.json(&args);
    assert_eq!(doc["requires_confirmation"], true);
    let run = doc["run"].as_str().unwrap().to_owned();
    let refused = env.run(&["run", "--manifest", &run]);
    assert_eq!(refused.status.code(), Some(2), "no terminal and no --yes");
    assert_eq!(server.requests().len(), 0);
    let out = env.run(&["run", "--manifest", &run, "--yes", "--json"]);
    assert!(out.status.success());
    assert_eq!(server.requests().len(), 6, "baseline only: 6 tasks x 1 rep");
}

#[test]
fn keys_come_from_the_keychain_when_one_exists_else_the_error_says_what_to_do() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut set = env.command(&["key", "set", "anthropic"]);
    set.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = set.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), SECRET.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        // A keychain exists: the run finds the key there with no environment variable.
        eprintln!("keychain test: a keychain exists here; the key-from-keychain branch ran");
        let run_out = env
            .command(&["run", "--manifest", &run, "--json"])
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        let _ = env.run(&["key", "remove", "anthropic"]);
        assert!(
            run_out.status.success(),
            "{}",
            String::from_utf8_lossy(&run_out.stderr)
        );
        assert!(server.requests().iter().all(|r| r.had_api_key));
    } else {
        // No keychain here (a headless Linux without a session keyring): the error says so and
        // what to do, and the key never reaches stdout. CI that must test the keychain itself
        // sets SKILLTRIAL_REQUIRE_KEYCHAIN=1, so this branch cannot pass for it silently.
        eprintln!("keychain test: no keychain here; only the no-keychain branch ran");
        assert!(
            std::env::var("SKILLTRIAL_REQUIRE_KEYCHAIN").as_deref() != Ok("1"),
            "SKILLTRIAL_REQUIRE_KEYCHAIN=1 but `key set` found no keychain: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("keychain") && stderr.contains("environment variable"),
            "{stderr}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains(SECRET));
        let run_out = env
            .command(&["run", "--manifest", &run])
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        assert_eq!(run_out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&run_out.stderr).contains("ANTHROPIC_API_KEY"));
        assert_eq!(server.requests().len(), 0, "nothing sent without a key");
    }
    assert!(!String::from_utf8_lossy(&out.stderr).contains(SECRET));
}

#[test]
fn status_reads_well_for_people() {
    let server = ScriptedServer::start(|r| match r.index {
        2 => Reply::Status(429),
        4 => Reply::DieHalfway(scripted_answer(r)),
        _ => Reply::Answer(scripted_answer(r)),
    })
    .unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let out = env.run(&["status"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&run[..12], "<run>");
    insta::assert_snapshot!("status_human", text);
}

#[test]
fn regression_a_second_runner_on_the_same_run_is_refused() {
    let server =
        ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), Duration::from_millis(100)))
            .unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut first = env.spawn_run(&run);
    wait_for_requests(&server, 1);
    let second = env.run(&["run", "--manifest", &run]);
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("another skilltrial process"));
    assert!(
        first.wait().unwrap().success(),
        "the first runner is undisturbed"
    );
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["executed"], 18);
    assert_eq!(server.requests().len(), 18);
}

#[test]
fn regression_missing_usage_counts_the_whole_token_reservation() {
    let server = ScriptedServer::start(|r| Reply::AnswerWithoutUsage(scripted_answer(r))).unwrap();
    let env = Env::new(&server, false);
    let profiles = env.dir.path().join("profiles.toml");
    // Room for about three requests' token bounds, not eighteen.
    let doc = env.json(&[
        "plan",
        "--model",
        "loopback",
        "--profiles",
        profiles.to_str().unwrap(),
        "--reps",
        "1",
        "--max-requests",
        "18",
        "--max-tokens",
        "20000",
        "--json",
        "--a",
        "fixtures/bundles/solana-reader-1.4.2",
        "--b",
        "fixtures/bundles/solana-reader-1.5.0",
    ]);
    let run = doc["run"].as_str().unwrap().to_owned();
    env.json(&["run", "--manifest", &run, "--yes", "--json"]);
    let status = env.json(&["status", "--json"]);
    let sent = server.requests().len() as u64;
    assert!(sent < 18, "the token cap held: {sent} sent");
    assert_eq!(status["counts"]["not_run"].as_u64().unwrap(), 18 - sent);
}

#[test]
fn regression_an_answer_with_huge_numbers_still_reports() {
    let server = ScriptedServer::start(|_| Reply::Answer("{\"account_type\":\"mint\",\"program\":\"spl-token\",\"mint_authority\":null,\"supply\":18446744073709551615,\"decimals\":1.5e300,\"is_initialized\":true,\"freeze_authority\":null}".into())).unwrap();
    let env = Env::new(&server, true);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let out_dir = env.dir.path().join("report");
    let doc = env.json(&["report", &run, "--out", out_dir.to_str().unwrap(), "--json"]);
    assert!(doc["report_hash"].as_str().unwrap().starts_with("sha256:"));
    let verified = env.run(&["verify", out_dir.join("report.json").to_str().unwrap()]);
    assert!(verified.status.success());
}

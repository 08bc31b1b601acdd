//! Paired runs end to end: the real `skilltrial` binary, a real SQLite journal under a temporary
//! state directory, and a real HTTP server on loopback speaking the Anthropic wire format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use skilltrial_engine::journal::AttemptState;
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

mod support;

use support::{
    DEFAULT_SECRET as SECRET, Env, files_under, hang_at, output_text, scripted_answer,
    wait_for_requests,
};

/// The usage the loopback server reports for an answer: its own count, a quarter token per byte
/// rounded up, of the request body it received and of the answer text it sends.
fn server_usage(request: &ServerRequest, answer: &str) -> (u64, u64) {
    (
        (request.body.len() as u64).div_ceil(4),
        (answer.len() as u64).div_ceil(4),
    )
}

/// The cost of a usage at the test profile's prices ($3 and $15 per Mtok: 3 and 15 µUSD per
/// token, so exact).
fn cost((input, output): (u64, u64)) -> u64 {
    3 * input + 15 * output
}

/// The usage (input, output tokens) the server reported, one entry per answered request.
type UsageLog = Arc<Mutex<Vec<(u64, u64)>>>;

/// A server answering every request with `scripted_answer`, logging the usage it reports.
fn answering_server() -> (ScriptedServer, UsageLog) {
    let usage = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&usage);
    let server = ScriptedServer::start(move |r| {
        let answer = scripted_answer(r);
        log.lock().unwrap().push(server_usage(r, &answer));
        Reply::Answer(answer)
    })
    .unwrap();
    (server, usage)
}

fn total_cost(usage: &Mutex<Vec<(u64, u64)>>) -> u64 {
    usage.lock().unwrap().iter().copied().map(cost).sum()
}

fn counts(status: &Value) -> (u64, u64, u64) {
    let c = &status["counts"];
    let get = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
    (get("pass"), get("invalid_output"), get("unknown"))
}

fn files_contain(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|path| {
            std::fs::read(path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
        })
        .collect()
}

#[test]
fn a_54_trial_run_completes_with_correct_outcomes_and_no_key_on_disk() {
    let (server, usage) = answering_server();
    let env = Env::new(&server);
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
    // Money against the server's own usage, and the ledger's raw rows against each other.
    let expected = total_cost(&usage);
    assert_eq!(usage.lock().unwrap().len(), 54);
    assert_eq!(status["spent_usd_micros"].as_u64().unwrap(), expected);
    let ledger = env.ledger(&run);
    assert_eq!(ledger.release_micros, ledger.reserve_micros, "{ledger:?}");
    assert_eq!(ledger.release_tokens, ledger.reserve_tokens, "{ledger:?}");
    assert_eq!(
        ledger.reserve_micros,
        env.reserves(&run).iter().sum::<u64>(),
        "one reserve per trial, each the plan's upper cost"
    );
    assert_eq!(ledger.spend_micros, expected);
    let tokens: u64 = usage.lock().unwrap().iter().map(|(i, o)| i + o).sum();
    assert_eq!(ledger.spend_tokens, tokens);
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
    let usage = Arc::new(Mutex::new(Vec::new()));
    let server = {
        let (hang, seen, usage) = (Arc::clone(&hang), Arc::clone(&seen), Arc::clone(&usage));
        ScriptedServer::start(move |r| {
            seen.fetch_add(1, Ordering::SeqCst);
            if r.index == 5 && hang.load(Ordering::SeqCst) {
                Reply::Hang
            } else {
                let answer = scripted_answer(r);
                usage.lock().unwrap().push(server_usage(r, &answer));
                Reply::Answer(answer)
            }
        })
        .unwrap()
    };
    let env = Env::new(&server);
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
    assert_eq!(
        seen.load(Ordering::SeqCst),
        54,
        "the server saw each request once"
    );
    let status = env.json(&["status", "--json"]);
    assert_eq!(counts(&status).2, 1);
    let unknown = &status["unknown"][0];
    // And the ledger is balanced: only the unknown attempt's reserve is still held, and it is
    // exactly the plan's upper cost of that trial (not zero: recovery must not release it)
    let (_, row) = env
        .journal()
        .attempt(unknown["attempt"].as_str().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(row.reasons, vec!["restart".to_owned()]);
    let planned_reserve = env.reserves(&run)[row.trial_idx as usize];
    assert!(planned_reserve > 0);
    assert_eq!(
        unknown["reserved_usd_micros"].as_u64(),
        Some(planned_reserve)
    );
    assert_eq!(
        status["reserved_usd_micros"].as_u64(),
        Some(planned_reserve)
    );
    let ledger = env.ledger(&run);
    assert_eq!(
        ledger.reserve_micros - ledger.release_micros,
        planned_reserve
    );
    let spent_before = status["spent_usd_micros"].as_u64().unwrap();
    assert_eq!(spent_before, total_cost(&usage), "53 answers at cost");

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
    // The unknown attempt's whole reserve counts as spent (it may have been billed), plus the
    // new attempt at its usage.
    let new_cost = cost(*usage.lock().unwrap().last().unwrap());
    assert_eq!(
        status["spent_usd_micros"].as_u64().unwrap(),
        spent_before + planned_reserve + new_cost
    );
    let ledger = env.ledger(&run);
    assert_eq!(ledger.release_micros, ledger.reserve_micros, "{ledger:?}");
    let out = env.run(&["resolve", &attempt, "--release"]);
    assert_eq!(out.status.code(), Some(1), "an attempt is resolved once");
    assert_eq!(seen.load(Ordering::SeqCst), 55);
}

// The fault-classification test (each fault mapped to its attempt) is in
// tests/secrets_retries.rs: `every_fault_becomes_exactly_its_outcome_with_its_reserve`.

#[test]
fn a_small_cap_stops_dispatch_with_not_run_budget_and_never_overspends() {
    let (server, usage) = answering_server();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "0.20"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let status = env.json(&["status", "--json"]);
    let not_run = status["counts"]["not_run"].as_u64().unwrap();
    assert!(not_run > 0, "{status}");
    // What the server reported, at cost, is what was spent, and it is within the cap.
    let spent = total_cost(&usage);
    assert_eq!(status["spent_usd_micros"].as_u64().unwrap(), spent);
    assert!(spent <= 200_000);
    assert_eq!(server.requests().len() as u64, 18 - not_run);
    let not_run_reasons: Vec<Vec<String>> = env
        .attempts(&run)
        .into_iter()
        .filter(|a| a.outcome.map(|o| o.as_str()) == Some("not_run"))
        .map(|a| a.reasons)
        .collect();
    assert_eq!(
        not_run_reasons,
        vec![vec!["not_run_budget".to_owned()]; usize::try_from(not_run).unwrap()]
    );
}

#[test]
fn cancel_from_another_process_stops_new_dispatches() {
    let server =
        ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), Duration::from_millis(150)))
            .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut child = env.spawn_run(&run);
    wait_for_requests(&server, 3);
    env.json(&["cancel", &run, "--json"]);
    assert!(child.wait().unwrap().success());
    let status = env.json(&["status", &run, "--json"]);
    assert_eq!(status["status"], "cancelled");
    let sent = server.requests().len() as u64;
    assert!(
        sent <= 4,
        "cancelled during request 3: at most the one in flight after it, {sent} sent"
    );
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
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    server.stop(); // no network from here on
    let recheck = env.json(&["recheck", &run, "--json"]);
    assert_eq!(recheck["rechecked"], 18);
    assert_eq!(recheck["changed"], serde_json::json!([]));
    // A stale verdict planted in the journal is reported and corrected by the next recheck.
    let passed = env
        .attempts(&run)
        .into_iter()
        .find(|a| a.outcome.map(|o| o.as_str()) == Some("pass"))
        .unwrap();
    rusqlite::Connection::open(env.home().join("journal.sqlite3"))
        .unwrap()
        .execute(
            "UPDATE attempts SET outcome = 'fail', reasons = '[\"planted\"]' WHERE id = ?1",
            [&passed.id],
        )
        .unwrap();
    let recheck = env.json(&["recheck", &run, "--json"]);
    assert_eq!(
        recheck["changed"],
        serde_json::json!([{ "attempt": passed.id, "from": "fail", "to": "pass" }])
    );
    let (_, row) = env.journal().attempt(&passed.id).unwrap().unwrap();
    assert_eq!(row.outcome.map(|o| o.as_str()), Some("pass"));
    // Answers are held by the journal itself (schema 5), not as files in the payload store.
    let answer = "\"account_type\"";
    let journal_bytes = || {
        let mut bytes = std::fs::read(env.home().join("journal.sqlite3")).unwrap();
        bytes.extend(std::fs::read(env.home().join("journal.sqlite3-wal")).unwrap_or_default());
        bytes
    };
    let holds = |bytes: &[u8]| bytes.windows(answer.len()).any(|w| w == answer.as_bytes());
    assert!(holds(&journal_bytes()), "the journal holds the answers");
    let purge = env.json(&["purge", "--older-than", "0d", "--json"]);
    assert!(purge["removed"].as_u64().unwrap() >= 18);
    assert!(
        !holds(&journal_bytes()),
        "a purged answer is not left readable in the journal's files"
    );
    let recheck = env.json(&["recheck", &run, "--json"]);
    assert_eq!(recheck["rechecked"], 0);
    assert_eq!(recheck["answers_purged"].as_array().unwrap().len(), 18);
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["executed"], 18, "outcomes survive the purge");
}

#[test]
fn run_refuses_a_manifest_whose_inputs_changed_or_are_missing() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server);
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
    // A hash that names no run (not in the journal, its manifest not in the store) is a usage
    // error, as from every command.
    let missing = env.run(&["run", "--manifest", &"ab".repeat(32)]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains(&format!("no run `{}`", "ab".repeat(32)))
    );
}

/// `plan --json` of the baseline alone, one repetition, on the unpriced profile of `profiles`.
fn unpriced_plan_args(profiles: &Path) -> [&str; 8] {
    [
        "plan",
        "--model",
        "loopback",
        "--profiles",
        profiles.to_str().unwrap(),
        "--reps",
        "1",
        "--json",
    ]
}

#[test]
fn an_unpriced_profile_needs_hard_caps_and_confirmation() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::with_price(&server, false);
    let profiles = env.profiles();
    let base = unpriced_plan_args(&profiles);
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
fn a_plan_pinning_a_sol_rate_names_submit_for_the_hosted_run() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server);
    // Given a plan with a SOL/USD rate pinned (a hosted run's plan)
    let args = env.plan_args(&["--reps", "1", "--cap-usd", "4", "--sol-usd", "150"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = env.text(&args);
    // (The pin holds the time it was made, so this plan's id is read from its own text.)
    let run = text
        .lines()
        .find_map(|l| l.strip_prefix("manifest  sha256:"))
        .unwrap()
        .to_owned();
    // Then its hints name `submit` (which registers the run with a runner), not `open` alone
    let submit = format!("skilltrial submit --manifest {run} --runner <runner URL>");
    assert!(
        text.contains(&format!("hosted    {submit}: uploads the inputs")),
        "{text}"
    );
    assert!(
        text.contains(&format!("next      {submit} (hosted)")),
        "{text}"
    );
    assert!(!text.contains("skilltrial open"), "{text}");
    // And a plan with no rate (no hosted run possible) names `run` alone
    let args = env.plan_args(&["--reps", "1", "--cap-usd", "4"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = env.text(&args);
    assert!(!text.contains("submit"), "{text}");
    assert!(
        text.contains("next      skilltrial run --manifest"),
        "{text}"
    );
}

/// `skilltrial <args>` on a real pty, `answer` typed at its prompt; `None` where `script` is
/// missing.
fn on_a_pty(env: &Env, args: &[&str], answer: &str) -> Option<std::process::Output> {
    let command = format!(
        "env -u ANTHROPIC_BASE_URL {} {} --home {}",
        env!("CARGO_BIN_EXE_skilltrial"),
        args.join(" "),
        env.home().display()
    );
    support::pty::typed(
        &command,
        &support::root(),
        &[("ANTHROPIC_API_KEY", SECRET)],
        answer,
    )
}

#[test]
fn at_the_confirm_prompt_y_runs_and_a_no_exits_0_with_nothing_sent() {
    // Given an unpriced profile, whose run asks before it sends anything
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::with_price(&server, false);
    let profiles = env.profiles();
    let mut args = unpriced_plan_args(&profiles).to_vec();
    args.extend(["--max-requests", "10", "--max-tokens", "400000"]);
    let doc = env.json(&args);
    let run = doc["run"].as_str().unwrap().to_owned();
    // When the person answers "n": exit 0, said plainly, and no request leaves
    let Some(out) = on_a_pty(&env, &["run", "--manifest", &run], "n\n") else {
        return;
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("Type y (or yes) to run"), "{said}");
    assert!(said.contains("not confirmed: nothing sent"), "{said}");
    assert!(
        !said.contains("error"),
        "a no is an answer, not an error: {said}"
    );
    assert_eq!(server.requests().len(), 0);
    // When the person answers "y" (as they would "yes"): the run goes
    let out = on_a_pty(&env, &["run", "--manifest", &run], "y\n").unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert_eq!(server.requests().len(), 6, "baseline only: 6 tasks x 1 rep");
    assert!(said.contains("finished"), "{said}");
}

#[test]
fn keys_come_from_the_keychain_when_one_exists_else_the_error_says_what_to_do() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server);
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
        // 503: an infrastructure error that is not retried automatically (a 429 would be).
        2 => Reply::Status(503),
        4 => Reply::DieHalfway(scripted_answer(r)),
        _ => Reply::Answer(scripted_answer(r)),
    })
    .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let status = env.json(&["status", "--json"]);
    let unknown = status["unknown"][0]["attempt"].as_str().unwrap();
    let nonce = unknown.rsplit('-').next().unwrap();
    let failed = status["infrastructure_errors"][0]["attempt"]
        .as_str()
        .unwrap();
    let failed_nonce = failed.rsplit('-').next().unwrap();
    let out = env.run(&["status"]);
    assert!(out.status.success());
    // The attempts' random parts and the time the run took vary; the rest is fixed.
    let text: String = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&run[..12], "<run>")
        .replace(nonce, "<random>")
        .replace(failed_nonce, "<random>")
        .lines()
        .map(
            |line| match (line.starts_with("bounds"), line.rsplit_once(", ")) {
                (true, Some((head, tail))) => {
                    format!("{head}, <time>{}\n", &tail[tail.find(" of ").unwrap()..])
                }
                _ => format!("{line}\n"),
            },
        )
        .collect();
    insta::assert_snapshot!("status_human", text);
}

#[test]
fn a_second_runner_on_the_same_run_is_refused() {
    let server =
        ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), Duration::from_millis(100)))
            .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut first = env.spawn_run(&run);
    wait_for_requests(&server, 1);
    let second = env.run(&["run", "--manifest", &run]);
    // Another process holding the run is an environment condition (exit 2), not a rejection.
    assert_eq!(second.status.code(), Some(2));
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
fn missing_usage_counts_the_whole_token_reservation() {
    let server = ScriptedServer::start(|r| Reply::AnswerWithoutUsage(scripted_answer(r))).unwrap();
    let env = Env::with_price(&server, false);
    // Room for about three requests' token bounds, not eighteen.
    let doc = env.plan_doc(&[
        "--reps",
        "1",
        "--max-requests",
        "18",
        "--max-tokens",
        "20000",
    ]);
    let run = doc["run"].as_str().unwrap().to_owned();
    // The trials that fit, in order, when each counts its whole token bound.
    let dry = env.json(&["run", "--manifest", &run, "--dry-run", "--json"]);
    let (mut bound_used, mut fit) = (0u64, 0u64);
    for t in dry["trials"].as_array().unwrap() {
        let bound =
            t["input_token_bound"].as_u64().unwrap() + t["max_output_tokens"].as_u64().unwrap();
        if bound_used + bound <= 20_000 {
            bound_used += bound;
            fit += 1;
        }
    }
    env.json(&["run", "--manifest", &run, "--yes", "--json"]);
    let status = env.json(&["status", "--json"]);
    let sent = server.requests().len() as u64;
    assert_eq!(sent, fit, "the token cap held");
    assert!(sent < 18);
    assert_eq!(status["counts"]["not_run"].as_u64().unwrap(), 18 - sent);
    assert_eq!(
        env.ledger(&run).spend_tokens,
        bound_used,
        "missing usage counts each request's whole bound"
    );
}

#[test]
fn an_answer_with_huge_numbers_still_reports() {
    let server = ScriptedServer::start(|_| Reply::Answer("{\"account_type\":\"mint\",\"program\":\"spl-token\",\"mint_authority\":null,\"supply\":18446744073709551615,\"decimals\":1.5e300,\"is_initialized\":true,\"freeze_authority\":null}".into())).unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let out_dir = env.dir.path().join("report");
    let doc = env.json(&["report", &run, "--out", out_dir.to_str().unwrap(), "--json"]);
    assert!(doc["report_hash"].as_str().unwrap().starts_with("sha256:"));
    let verified = env.run(&["verify", out_dir.join("report.json").to_str().unwrap()]);
    assert!(verified.status.success());
}

/// Runs `cmd`, returning (exit code, stdout, stderr).
fn outcome(mut cmd: Command) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A server whose first request breaks off halfway (an `unknown` attempt); it answers the rest.
fn first_request_lost() -> ScriptedServer {
    ScriptedServer::start(|r| {
        if r.index == 0 {
            Reply::DieHalfway(scripted_answer(r))
        } else {
            Reply::Answer(scripted_answer(r))
        }
    })
    .unwrap()
}

/// Retries the run's one unknown attempt with `resolve --retry`; returns (old, new) attempt ids.
fn retry_the_unknown(env: &Env, run: &str) -> (String, String) {
    let status = env.json(&["status", run, "--json"]);
    assert_eq!(status["unknown"].as_array().unwrap().len(), 1, "{status}");
    let old = status["unknown"][0]["attempt"].as_str().unwrap().to_owned();
    let resolved = env.json(&[
        "resolve",
        &old,
        "--retry",
        "--reason",
        "a test retry",
        "--json",
    ]);
    (old, resolved["new_attempt"].as_str().unwrap().to_owned())
}

/// After a run stops: the user's retry is itself closed `not_run` for `reason`, no other
/// `not_run` row was added for its trial, and nothing is left planned.
fn assert_retry_closed(env: &Env, run: &str, retry: &str, reason: &str) {
    let attempts = env.attempts(run);
    let row = attempts.iter().find(|a| a.id == retry).unwrap();
    assert_eq!(row.state, AttemptState::Closed, "{row:?}");
    assert_eq!(row.outcome.map(|o| o.as_str()), Some("not_run"));
    assert_eq!(row.reasons, vec![reason.to_owned()]);
    let of_trial = attempts
        .iter()
        .filter(|a| a.trial_idx == row.trial_idx)
        .count();
    assert_eq!(
        of_trial, 2,
        "the lost attempt and its retry, no extra not_run row"
    );
    assert!(
        attempts.iter().all(|a| a.state != AttemptState::Planned),
        "an attempt was left planned"
    );
    let status = env.json(&["status", run, "--json"]);
    assert_eq!(status["counts"].get("pending"), None, "{status}");
}

#[test]
fn concurrent_processes_on_a_fresh_state_dir_never_fail() {
    let server =
        ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), Duration::from_millis(5)))
            .unwrap();
    for round in 0..5 {
        let env = Env::new(&server);
        let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
        // A fresh journal: the processes below race to create and migrate it, and to record the
        // run.
        for name in [
            "journal.sqlite3",
            "journal.sqlite3-wal",
            "journal.sqlite3-shm",
        ] {
            let _ = std::fs::remove_file(env.home().join(name));
        }
        let before = server.requests().len();
        let children: Vec<(&str, std::process::Child)> = (0..8)
            .map(|i| {
                let args: &[&str] = if i % 2 == 0 {
                    &["run", "--manifest", &run]
                } else {
                    &["status"]
                };
                let child = env
                    .command(args)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                (args[0], child)
            })
            .collect();
        let mut finished_runs = 0;
        for (command, child) in children {
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            match (command, out.status.code()) {
                ("run", Some(0)) => finished_runs += 1,
                ("status", Some(0)) => {}
                // Refused cleanly: another process holds the run.
                ("run", Some(2)) => assert!(
                    stderr.contains("is being run by another skilltrial process"),
                    "round {round}: {stderr}"
                ),
                // Started before the journal existed: an honest answer, not a failure.
                ("status", Some(2)) => {
                    assert!(stderr.contains("no runs yet"), "round {round}: {stderr}");
                }
                (command, code) => panic!("round {round}: {command} exited {code:?}: {stderr}"),
            }
        }
        assert!(finished_runs >= 1, "round {round}: no run finished");
        let status = env.json(&["status", "--json"]);
        assert_eq!(status["status"], "finished", "round {round}");
        assert_eq!(status["executed"], 18, "round {round}");
        assert_eq!(
            server.requests().len() - before,
            18,
            "round {round}: every trial sent exactly once"
        );
    }
}

#[test]
fn a_retry_the_run_cannot_send_for_its_request_cap_is_closed_not_run() {
    let server = first_request_lost();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4", "--max-requests", "18"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let (_, retry) = retry_the_unknown(&env, &run);
    env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(server.requests().len(), 18, "the cap held");
    assert_retry_closed(&env, &run, &retry, "not_run_request_cap");
}

#[test]
fn a_retry_the_run_cannot_send_for_its_budget_is_closed_not_run() {
    let server = first_request_lost();
    let env = Env::new(&server);
    // A cap with room for the first trial's reserve and not for a second reserve beside it.
    let probe = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let reserves = env.reserves(&probe);
    let cap = reserves[0] + reserves.iter().min().unwrap() / 2;
    let cap_usd = format!("{}.{:06}", cap / 1_000_000, cap % 1_000_000);
    let run = env.plan(&["--reps", "1", "--cap-usd", &cap_usd]);
    assert_eq!(env.reserves(&run), reserves);
    env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(server.requests().len(), 1);
    let (_, retry) = retry_the_unknown(&env, &run);
    env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(server.requests().len(), 1, "the retry could break the cap");
    assert_retry_closed(&env, &run, &retry, "not_run_budget");
    let status = env.json(&["status", &run, "--json"]);
    assert_eq!(status["spent_usd_micros"].as_u64(), Some(reserves[0]));
    assert_eq!(status["reserved_usd_micros"], 0);
}

#[test]
fn a_retry_the_run_cannot_send_after_a_cancel_is_closed_not_run() {
    // A run paused with one unknown, a retry planned, then cancelled while no process runs it.
    let server = first_request_lost();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--max-dispatch", "1", "--json"]);
    let (_, retry) = retry_the_unknown(&env, &run);
    let (code, stdout, _) = outcome(env.command(&["cancel", &run]));
    assert_eq!(code, Some(0));
    assert!(stdout.contains("no process is running it"), "{stdout}");
    let (_, text, _) = outcome(env.command(&["status", &run]));
    assert!(
        text.contains(&format!("run {}  stopped (cancel requested)", &run[..12])),
        "{text}"
    );
    env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(server.requests().len(), 1, "nothing sent after the cancel");
    assert_retry_closed(&env, &run, &retry, "cancelled");
    assert_eq!(env.json(&["status", &run, "--json"])["status"], "cancelled");

    // On a run already cancelled, `resolve --retry` refuses and changes nothing.
    let server = first_request_lost();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--max-dispatch", "1", "--json"]);
    env.json(&["cancel", &run, "--json"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let status = env.json(&["status", &run, "--json"]);
    let unknown = status["unknown"][0]["attempt"].as_str().unwrap().to_owned();
    let (code, _, stderr) =
        outcome(env.command(&["resolve", &unknown, "--retry", "--reason", "too late"]));
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains(&format!(
            "attempt {unknown} belongs to run {}, which was cancelled: a retry would never be sent; use --release, or plan a new run",
            &run[..12]
        )),
        "{stderr}"
    );
    assert_eq!(env.attempts(&run).len(), 18, "nothing added");
    let (_, row) = env.journal().attempt(&unknown).unwrap().unwrap();
    assert_eq!(row.state, AttemptState::Unknown, "nothing changed");
    env.json(&["resolve", &unknown, "--release", "--json"]);
}

#[test]
fn a_retry_the_run_cannot_send_in_its_time_is_closed_not_run() {
    let server = first_request_lost();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let (_, retry) = retry_the_unknown(&env, &run);
    let out = env
        .command(&["run", "--manifest", &run, "--json"])
        .env(skilltrial_engine::engine::RUN_LIMIT_VAR, "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests().len(), 18);
    assert_retry_closed(&env, &run, &retry, "not_run_time_limit");
}

#[test]
fn status_shows_a_planned_run_and_its_bounds_before_any_run() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4", "--max-requests", "30"]);
    for args in [
        vec!["status", &run[..12], "--json"],
        vec!["status", "--json"],
    ] {
        let status = env.json(&args);
        assert_eq!(status["run"], run.as_str(), "{args:?}");
        assert_eq!(status["status"], "planned");
        assert_eq!(status["live"], false);
        assert_eq!(status["planned"], 18);
        assert_eq!(status["executed"], 0);
        assert_eq!(status["counts"], serde_json::json!({ "pending": 18 }));
        assert_eq!(status["cap_usd_micros"], 4_000_000);
        assert_eq!(status["max_requests"], 30);
        assert_eq!(status["run_limit_ms"], 3_600_000);
        assert_eq!(status["executed_ms"], 0);
        assert_eq!(
            status["next"],
            format!("skilltrial run --manifest {run}").as_str()
        );
    }
    let (code, text, _) = outcome(env.command(&["status", &run[..12]]));
    assert_eq!(code, Some(0));
    assert!(
        text.contains(&format!("run {}  planned", &run[..12])),
        "{text}"
    );
    assert!(
        text.contains(
            "bounds   at most 30 requests, no token cap, 0 s of 60 min executing time used"
        ),
        "{text}"
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn the_time_limit_bounds_executing_time_across_invocations() {
    let server =
        ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), Duration::from_millis(2000)))
            .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let limited = |args: &[&str]| {
        let out = env
            .command(args)
            .env(skilltrial_engine::engine::RUN_LIMIT_VAR, "8000")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // Two answers of 2 s each: half of the 8 s is used. (The other half is margin for a loaded
    // machine: this invocation must stop at --max-dispatch, not at the limit.)
    limited(&["run", "--manifest", &run, "--max-dispatch", "2", "--json"]);
    assert_eq!(server.requests().len(), 2);
    let first = env.json(&["status", &run, "--json"]);
    assert_eq!(first["status"], "stopped");
    assert!(first["executed_ms"].as_u64().unwrap() >= 4000, "{first}");
    std::thread::sleep(Duration::from_millis(300)); // a pause between invocations is not counted
    // The second invocation has only the remainder (at most 4 s): two more requests at most,
    // where a fresh 8 s window would send four.
    limited(&["run", "--manifest", &run, "--json"]);
    let sent = server.requests().len();
    assert!(sent <= 4, "{sent} sent: the limit restarted");
    let attempts = env.attempts(&run);
    let timed_out = attempts
        .iter()
        .filter(|a| a.reasons == ["not_run_time_limit"])
        .count();
    assert_eq!(timed_out, 18 - sent);
    let second = env.json(&["status", &run, "--json"]);
    assert!(second["executed_ms"].as_u64() >= first["executed_ms"].as_u64());
    assert!(
        second["executed_ms"].as_u64().unwrap() < first["executed_ms"].as_u64().unwrap() + 6000,
        "{second}"
    );
}

#[test]
fn attempt_ids_differ_across_state_directories() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let one = Env::new(&server);
    let two = Env::new(&server);
    let run = one.plan(&["--reps", "1", "--cap-usd", "4"]);
    assert_eq!(
        two.plan(&["--reps", "1", "--cap-usd", "4"]),
        run,
        "the same manifest"
    );
    one.json(&["run", "--manifest", &run, "--json"]);
    two.json(&["run", "--manifest", &run, "--json"]);
    let headers: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.attempt.clone().unwrap())
        .collect();
    assert_eq!(headers.len(), 36);
    let distinct: std::collections::BTreeSet<&String> = headers.iter().collect();
    assert_eq!(distinct.len(), 36, "{headers:?}");
    // Still readable: <12 hex of run>-<trial>-<seq>-<12 hex random>.
    for id in &headers {
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(parts.len(), 4, "{id}");
        assert_eq!(parts[0], &run[..12]);
        assert!(
            parts[1].len() == 3 && parts[1].bytes().all(|b| b.is_ascii_digit()),
            "{id}"
        );
        assert_eq!(parts[2], "1");
        assert!(
            parts[3].len() == 12 && parts[3].bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }
}

#[test]
fn run_accepts_id_prefixes_and_cancel_on_a_finished_run_says_so() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let summary = env.json(&["run", "--manifest", &run[..10], "--json"]);
    assert_eq!(summary["run"], run.as_str());
    assert_eq!(summary["status"], "finished");
    let (code, _, stderr) = outcome(env.command(&["run", "--manifest", "0123456789abcdef"]));
    // No such run is a usage error (2), from `run` as from every command.
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no run `0123456789abcdef`"), "{stderr}");

    let (code, stdout, _) = outcome(env.command(&["cancel", &run[..12]]));
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        format!(
            "run {} is already finished: nothing to cancel\n",
            &run[..12]
        )
    );
    let doc = env.json(&["cancel", &run[..12], "--json"]);
    assert_eq!(doc["cancel_requested"], false);
    let status = env.json(&["status", &run, "--json"]);
    assert_eq!(status["status"], "finished");
    assert_eq!(status["cancel_requested"], false);
}

#[test]
fn status_tells_a_live_run_from_an_interrupted_one() {
    let server = hang_at(2);
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut child = env.spawn_run(&run);
    wait_for_requests(&server, 3);
    let live = env.json(&["status", "--json"]);
    assert_eq!(live["status"], "running");
    assert_eq!(live["live"], true);
    assert_eq!(live["next"], Value::Null);
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();

    let after = env.json(&["status", "--json"]);
    assert_eq!(after["status"], "interrupted");
    assert_eq!(after["live"], false);
    let (_, text, _) = outcome(env.command(&["status"]));
    assert!(
        text.contains(&format!("run {}  interrupted", &run[..12])),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "next     the runner stopped without finishing (killed or crashed); resume with `skilltrial run --manifest {}`",
            &run[..12]
        )),
        "{text}"
    );
    // The request in flight at the kill counts towards the run's time (1.5 s or more here, the
    // bound being the request timeout), though the clock was last stored before it was sent.
    let at_kill = after["executed_ms"].as_u64().unwrap();
    env.json(&["run", "--manifest", &run, "--max-dispatch", "0", "--json"]);
    let recovered = env.json(&["status", "--json"]);
    assert_eq!(recovered["status"], "stopped");
    assert!(
        recovered["executed_ms"].as_u64().unwrap() >= at_kill + 1500,
        "{at_kill} then {recovered}"
    );
    env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(env.json(&["status", "--json"])["status"], "finished");
}

/// Kills a run at `window` on its first attempt (the debug-only kill-point knob), checks the
/// journal as the crash left it with `at_crash`, restarts the run, and returns the summary.
fn crash_at(
    window: &str,
    at_crash: impl FnOnce(&Env, &str, &ScriptedServer),
) -> (Env, String, ScriptedServer, UsageLog, Value) {
    let (server, usage) = answering_server();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.kill_at(&run, window);
    at_crash(&env, &run, &server);
    let summary = env.json(&["run", "--manifest", &run, "--json"]);
    (env, run, server, usage, summary)
}

#[test]
fn a_crash_after_planning_releases_the_reserve_and_sends_the_attempt_once() {
    let (env, run, server, usage, summary) = crash_at("after_plan", |env, run, server| {
        let attempts = env.attempts(run);
        assert_eq!(attempts.len(), 1);
        assert_eq!(attempts[0].state, AttemptState::Planned);
        let ledger = env.ledger(run);
        assert_eq!(ledger.reserve_micros, env.reserves(run)[0]);
        assert_eq!(ledger.release_micros, 0);
        assert_eq!(server.requests().len(), 0);
    });
    assert_eq!(summary["recovered_unknown"], serde_json::json!([]));
    assert_eq!(summary["status"], "finished");
    assert_eq!(server.requests().len(), 18);
    let attempts = env.attempts(&run);
    assert_eq!(attempts.len(), 18, "the planned attempt itself was sent");
    assert!(attempts.iter().all(|a| a.state == AttemptState::Result));
    let ledger = env.ledger(&run);
    let reserves = env.reserves(&run);
    assert_eq!(
        ledger.reserve_micros,
        reserves.iter().sum::<u64>() + reserves[0],
        "reserved, released at the restart, reserved again"
    );
    assert_eq!(ledger.release_micros, ledger.reserve_micros);
    assert_eq!(ledger.spend_micros, total_cost(&usage));
}

#[test]
fn a_crash_after_journaling_the_dispatch_leaves_one_unknown_holding_its_reserve() {
    let (env, run, server, usage, summary) = crash_at("after_dispatch", |env, run, server| {
        let attempts = env.attempts(run);
        assert_eq!(attempts.len(), 1);
        assert_eq!(attempts[0].state, AttemptState::Dispatched);
        assert_eq!(server.requests().len(), 0, "the crash came before the send");
    });
    let attempts = env.attempts(&run);
    let first = &attempts[0];
    assert_eq!(summary["recovered_unknown"], serde_json::json!([first.id]));
    assert_eq!(first.state, AttemptState::Unknown);
    assert_eq!(first.reasons, vec!["restart".to_owned()]);
    // Never re-sent: the runner cannot know the request did not leave.
    assert_eq!(server.requests().len(), 17);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.attempt.as_deref() != Some(first.id.as_str()))
    );
    let reserve = env.reserves(&run)[0];
    assert_eq!(first.reserved_micros, reserve);
    let ledger = env.ledger(&run);
    assert_eq!(ledger.reserve_micros - ledger.release_micros, reserve);
    assert_eq!(ledger.spend_micros, total_cost(&usage));
}

#[test]
fn a_crash_between_the_answer_and_its_verdict_scores_the_stored_answer_on_restart() {
    let (env, run, server, usage, summary) = crash_at("after_result", |env, run, server| {
        let attempts = env.attempts(run);
        assert_eq!(attempts.len(), 1);
        assert_eq!(attempts[0].state, AttemptState::Result);
        assert_eq!(attempts[0].outcome, None, "no verdict yet");
        assert_eq!(server.requests().len(), 1);
    });
    assert_eq!(summary["recovered_unknown"], serde_json::json!([]));
    assert_eq!(server.requests().len(), 18, "nothing re-sent");
    let attempts = env.attempts(&run);
    assert_eq!(attempts.len(), 18);
    let first = &attempts[0];
    assert!(
        matches!(
            first.outcome.map(|o| o.as_str()),
            Some("pass" | "invalid_output")
        ),
        "{first:?}"
    );
    let checks: i64 = rusqlite::Connection::open(env.home().join("journal.sqlite3"))
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM checks WHERE attempt_id = ?1",
            [&first.id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(checks, 1, "scored once, on restart");
    let ledger = env.ledger(&run);
    assert_eq!(ledger.release_micros, ledger.reserve_micros);
    assert_eq!(ledger.spend_micros, total_cost(&usage));
}

#[test]
fn a_purge_between_an_answer_and_its_verdict_keeps_that_answer_for_the_resume() {
    let (env, run, server, _usage, summary) = crash_at("after_result", |env, run, _server| {
        // Everything is past retention: the answer not scored yet must stay all the same.
        let purge = env.json(&["purge", "--older-than", "0d", "--json"]);
        assert_eq!(
            purge["by_kind"]["answer"],
            serde_json::Value::Null,
            "{purge}: the unscored answer was purged"
        );
        assert_eq!(purge["by_kind"]["request"], 1, "{purge}");
        assert_eq!(env.attempts(run)[0].outcome, None);
    });
    assert_eq!(summary["status"], "finished", "{summary}");
    assert_eq!(server.requests().len(), 18, "nothing re-sent");
    let first = &env.attempts(&run)[0];
    assert!(first.outcome.is_some(), "scored on resume: {first:?}");
}

#[test]
fn status_beside_a_live_run_never_fails_nor_disturbs_it() {
    let server =
        ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), Duration::from_millis(30)))
            .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut child = env.spawn_run(&run);
    let mut polls = 0;
    let mut saw_live = false;
    while child.try_wait().unwrap().is_none() {
        // Two at a time, as from two other terminals.
        let a = env.command(&["status", "--json"]).output().unwrap();
        let b = env.command(&["status", &run[..12]]).output().unwrap();
        for out in [&a, &b] {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let doc: Value = serde_json::from_slice(&a.stdout).unwrap();
        assert!(
            matches!(
                doc["status"].as_str(),
                Some("planned" | "running" | "finished")
            ),
            "{doc}"
        );
        saw_live |= doc["live"] == true;
        polls += 1;
    }
    assert!(child.wait().unwrap().success(), "the run was undisturbed");
    assert!(
        polls >= 2 && saw_live,
        "{polls} polls, live seen: {saw_live}"
    );
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["executed"], 18);
    assert_eq!(server.requests().len(), 18);
}

#[test]
fn plan_prints_the_true_request_bound_counting_automatic_retries() {
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
    let (code, text, _) = support::plan_outcome(
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
fn status_shows_the_request_bound_plan_printed() {
    let server = ScriptedServer::start(|_| Reply::Status(500)).unwrap();
    let env = Env::new(&server);
    let args = env.plan_args(&["--seed", "7", "--reps", "1", "--cap-usd", "4"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let plan = output_text(&env.run(&args));
    let bound = plan
        .lines()
        .find_map(|l| l.strip_prefix("requests  at most "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("{plan}"))
        .to_owned();
    let status = output_text(&env.run(&["status"]));
    assert!(
        status.contains(&format!("bounds   at most {bound} requests,")),
        "plan: {bound}\n{status}"
    );
}

#[test]
fn the_local_demo_prints_the_bounds_that_apply_not_a_dollar_cap() {
    let server = ScriptedServer::start(|_| Reply::Answer("I cannot decode this.".into())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_skilltrial"))
        .args([
            "demo",
            "--model-name",
            "foo",
            "--yes",
            "--reps",
            "1",
            "--home",
        ])
        .arg(dir.path().join("home"))
        .current_dir(support::root())
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let all = output_text(&out);
    assert!(
        all.contains(
            "model: openai-compatible-local (foo), no monetary cap (unpriced profile): at most 100 requests and 5000000 tokens"
        ),
        "{all}"
    );
    assert!(!all.contains("budget cap $"), "{all}");
}

#[test]
fn every_command_takes_the_run_id_as_plan_prints_it() {
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
    let (code, _, stderr) = support::outcome(env.run(&["compare", &printed, &run]));
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
    let (code, stdout, _) = support::outcome(env.run(&["cancel", &printed]));
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
fn run_held_by_another_process_is_an_environment_condition() {
    let server = ScriptedServer::start(|_| Reply::Status(500)).unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    // Given another process holding the run's lock
    let locks = env.home().join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(locks.join(format!("{run}.lock")))
        .unwrap();
    held.lock().unwrap();
    let out = env.run(&["run", "--manifest", &run]);
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("is being run by another skilltrial process"),
        "{}",
        output_text(&out)
    );
    assert!(server.requests().is_empty());
}

//! A run's life after it starts: what `status` shows of an interrupted run (a kill, or a stop
//! during an automatic retry's wait), Ctrl-C, a kill during an automatic retry's wait, `run` and
//! `cancel` on a cancelled run, and the progress a run prints on the way (a count that never steps
//! back, plain lines on a dumb terminal, no stale bar over the Ctrl-C notice). The real
//! `skilltrial` binary, a real SQLite journal under a temporary state directory, and the loopback
//! server speaking the Anthropic wire format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_engine::journal::{AttemptRow, AttemptState};
use skilltrial_engine::scripted::{Reply, ScriptedServer};

mod support;

use support::{Env, hang_at, output_text, scripted_answer, wait_for_requests};

fn count(status: &Value, key: &str) -> u64 {
    status["counts"]
        .get(key)
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The counts of `status --json` add up to the planned trials.
fn assert_counts_add_up(status: &Value) {
    let sum: u64 = status["counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(sum, status["planned"].as_u64().unwrap(), "{status}");
}

#[test]
fn status_of_a_killed_run_lists_the_attempt_in_flight_and_counts_add_up() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.kill_at(&run, "after_dispatch");
    let attempt = env.attempts(&run)[0].clone();
    assert_eq!(attempt.state, AttemptState::Dispatched);

    let status = env.json(&["status", "--json"]);
    assert_eq!(status["status"], "interrupted");
    assert_eq!(count(&status, "in_flight"), 1, "{status}");
    assert_eq!(count(&status, "pending"), 17, "{status}");
    assert_counts_add_up(&status);
    let in_flight = &status["in_flight"][0];
    assert_eq!(in_flight["attempt"], attempt.id.as_str());
    assert_eq!(in_flight["reserved_usd_micros"], attempt.reserved_micros);
    assert!(attempt.reserved_micros > 0);
    let text = env.text(&["status"]);
    assert!(
        text.contains(
            "in flight at the kill: may have cost money; becomes unknown when `run` resumes (then resolve it):"
        ),
        "{text}"
    );
    assert!(text.contains(&attempt.id), "{text}");
    assert!(text.contains("pending 17, in_flight 1"), "{text}");
}

#[test]
fn status_of_a_run_killed_before_scoring_shows_the_answer_unscored() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.kill_at(&run, "after_result");
    let status = env.json(&["status", "--json"]);
    assert_eq!(count(&status, "unscored"), 1, "{status}");
    assert_eq!(count(&status, "pending"), 17, "{status}");
    assert_counts_add_up(&status);
    let attempt = &env.attempts(&run)[0];
    assert_eq!(status["unscored"][0], attempt.id.as_str());
    let text = env.text(&["status"]);
    assert!(
        text.contains(&format!(
            "unscored 1 answer(s) journaled but not yet scored; `run` scores them when it resumes: {}",
            attempt.id
        )),
        "{text}"
    );
}

#[test]
fn status_shows_retry_reasons_infrastructure_errors_and_not_run_reasons() {
    // The first request is rate limited once (retried by itself), the third fails with a 503
    // (not retried), and the request cap of 18 leaves the last trial not run.
    let server = ScriptedServer::start(|r| match r.index {
        0 => Reply::RetryAfter(429, "0".into()),
        3 => Reply::Status(503),
        _ => Reply::Answer(scripted_answer(r)),
    })
    .unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4", "--max-requests", "18"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let attempts = env.attempts(&run);
    let retry = attempts
        .iter()
        .find(|a| a.retry_reason.is_some())
        .unwrap()
        .clone();
    let failed = attempts
        .iter()
        .find(|a| a.http_status == Some(503))
        .unwrap()
        .clone();

    let status = env.json(&["status", "--json"]);
    assert_counts_add_up(&status);
    assert_eq!(status["automatic_retries"][0]["attempt"], retry.id.as_str());
    assert_eq!(
        status["automatic_retries"][0]["reason"],
        retry.retry_reason.as_deref().unwrap()
    );
    assert_eq!(
        status["infrastructure_errors"][0]["attempt"],
        failed.id.as_str()
    );
    assert_eq!(status["infrastructure_errors"].as_array().unwrap().len(), 1);
    assert_eq!(status["not_run_reasons"]["not_run_request_cap"], 1);
    assert_eq!(count(&status, "not_run"), 1);

    let text = env.text(&["status"]);
    assert!(
        text.contains(&format!(
            "  {}  {}",
            retry.id,
            retry.retry_reason.as_deref().unwrap()
        )),
        "{text}"
    );
    assert!(text.contains(&failed.id), "{text}");
    assert!(
        text.contains("retry one with: skilltrial resolve <attempt> --retry --reason \"…\""),
        "{text}"
    );
    assert!(text.contains("not_run  not_run_request_cap 1"), "{text}");
}

#[test]
fn a_kill_during_a_retry_wait_keeps_the_trials_automatic_retries_on_resume() {
    // The first request is rate limited with a long retry-after; the runner dies in the wait.
    let server = ScriptedServer::start(|r| match r.index {
        0 => Reply::RetryAfter(429, "30".into()),
        _ => Reply::Answer(scripted_answer(r)),
    })
    .unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut child = env
        .command(&["run", "--manifest", &run])
        .env("SKILLTRIAL_TEST_BACKOFF_SCALE", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_requests(&server, 1);
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(server.requests().len(), 1, "killed during the wait");
    let rejected = env.attempts(&run)[0].clone();
    assert_eq!(
        rejected.outcome.map(|o| o.as_str()),
        Some("infrastructure_error")
    );

    let summary = env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(summary["status"], "finished");
    assert_eq!(
        summary["counts"].get("infrastructure_error"),
        None,
        "{summary}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 19, "18 trials plus the one retry");
    let attempts = env.attempts(&run);
    let retry = attempts
        .iter()
        .find(|a| a.retry_of.as_deref() == Some(rejected.id.as_str()))
        .expect("the rejected attempt was retried automatically on resume");
    assert!(
        retry
            .retry_reason
            .as_deref()
            .unwrap()
            .starts_with("automatic retry 1/3 after HTTP 429"),
        "{retry:?}"
    );
}

#[test]
fn a_resumed_trial_gets_no_more_than_its_automatic_retries() {
    // Trial 0 is always rate limited: the first run stops right after one retry has been
    // rejected (the dispatch limit), the second continues its retries up to the same bound.
    let server = ScriptedServer::start(|r| {
        if r.header("x-skilltrial-attempt")
            .is_some_and(|a| a.split('-').nth(1) == Some("000"))
        {
            Reply::Status(429)
        } else {
            Reply::Answer(scripted_answer(r))
        }
    })
    .unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--max-dispatch", "2", "--json"]);
    assert_eq!(server.requests().len(), 2);
    env.json(&["run", "--manifest", &run, "--json"]);
    let trial0: Vec<AttemptRow> = env
        .attempts(&run)
        .into_iter()
        .filter(|a| a.trial_idx == 0)
        .collect();
    assert_eq!(trial0.len(), 4, "the first attempt and 3 automatic retries");
    assert_eq!(
        trial0[3].outcome.map(|o| o.as_str()),
        Some("infrastructure_error"),
        "{trial0:?}"
    );
    assert_eq!(server.requests().len(), 4 + 17);
}

#[test]
fn run_on_a_cancelled_run_says_so_before_asking_for_confirmation() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::with_price(&server, false).backoff_scale("0");
    let run = env.plan(&[
        "--reps",
        "1",
        "--max-requests",
        "40",
        "--max-tokens",
        "5000000",
    ]);
    env.json(&["cancel", "--json"]);
    env.json(&["run", "--manifest", &run, "--yes", "--json"]);
    assert_eq!(server.requests().len(), 0);
    let out = env.run(&["run", "--manifest", &run]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("run {} was cancelled; plan a new run", &run[..12])),
        "{stderr}"
    );
    assert!(!stderr.contains("--yes"), "{stderr}");

    // cancel --json on the cancelled run says a cancel was requested, and whether it is live.
    let cancel = env.json(&["cancel", "--json"]);
    assert_eq!(cancel["status"], "cancelled");
    assert_eq!(cancel["cancel_requested"], true, "{cancel}");
    assert_eq!(cancel["live"], false, "{cancel}");
    // status --json always has `live`.
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["live"], false, "{status}");
}

/// Sends `signal` (a name `kill` understands, e.g. `INT`) to `child`.
fn signal(child: &std::process::Child, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits (at most 30 s) for `child` to exit; returns its exit code and stderr.
fn wait_exit(mut child: std::process::Child) -> (Option<i32>, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the runner did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every trial of the run was sent exactly once: one request per trial, by attempt header.
fn assert_each_trial_sent_once(server: &ScriptedServer, trials: usize) {
    let mut seen: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            r.attempt
                .as_deref()
                .unwrap()
                .split('-')
                .nth(1)
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(seen.len(), trials, "{seen:?}");
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), trials, "a trial was sent twice");
}

#[test]
fn one_ctrl_c_finishes_the_request_in_flight_and_stops_resumable() {
    for sig in ["INT", "TERM"] {
        // The second request is held open for a second, long enough to interrupt it.
        let server = ScriptedServer::start(|r| {
            if r.index == 1 {
                Reply::Slow(scripted_answer(r), Duration::from_millis(1500))
            } else {
                Reply::Answer(scripted_answer(r))
            }
        })
        .unwrap();
        let env = Env::new(&server).backoff_scale("0");
        let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
        let child = env
            .command(&["run", "--manifest", &run])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_requests(&server, 2);
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, sig);
        let (code, stderr) = wait_exit(child);

        // The answer in flight was journaled and scored, nothing more was sent.
        assert_eq!(code, Some(130), "SIG{sig}: {stderr}");
        assert!(
            stderr.contains(
                "stopping: the requests in flight finish and are journaled; no new request is sent"
            ),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "stopped: resume with `skilltrial run --manifest {}`",
                &run[..12]
            )),
            "{stderr}"
        );
        assert_eq!(server.requests().len(), 2, "SIG{sig}");
        let attempts = env.attempts(&run);
        assert_eq!(attempts.len(), 2);
        assert!(attempts[1].outcome.is_some(), "{:?}", attempts[1]);
        let status = env.json(&["status", "--json"]);
        assert_eq!(status["status"], "stopped");
        assert_eq!(status["cancel_requested"], false);
        assert_eq!(count(&status, "pending"), 16);

        // And `run` again resumes and finishes, each trial sent once.
        let summary = env.json(&["run", "--manifest", &run, "--json"]);
        assert_eq!(summary["status"], "finished");
        assert_each_trial_sent_once(&server, 18);
    }
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_the_request_becomes_unknown() {
    let server = hang_at(1);
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let child = env
        .command(&["run", "--manifest", &run])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_requests(&server, 2);
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    signal(&child, "INT");
    let (code, _) = wait_exit(child);
    assert_eq!(code, Some(130));
    assert!(started.elapsed() < Duration::from_secs(5), "exited at once");
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["status"], "interrupted");
    assert_eq!(count(&status, "in_flight"), 1);
    let summary = env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(summary["recovered_unknown"].as_array().unwrap().len(), 1);
    assert_eq!(server.requests().len(), 18, "the lost one is not re-sent");
}

#[test]
fn status_after_a_stop_during_a_retry_wait_says_run_retries_it_automatically() {
    // Given a provider that answers the first request 429 with a 30-second retry-after
    let seen = Arc::new(Mutex::new(0u32));
    let counter = Arc::clone(&seen);
    let server = ScriptedServer::start(move |_| {
        *counter.lock().unwrap() += 1;
        Reply::RetryAfter(429, "30".into())
    })
    .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let mut child = env
        .command(&["run", "--manifest", &run])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while *seen.lock().unwrap() == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "no request");
        std::thread::sleep(Duration::from_millis(10));
    }
    // When the run is stopped with Ctrl-C during the wait
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "INT");
    assert_eq!(child.wait().unwrap().code(), Some(130));

    // Then status shows the trial as waiting for an automatic retry on resume, not as an
    // infrastructure error to resolve by hand
    let status = env.json(&["status", &run, "--json"]);
    assert_eq!(status["infrastructure_errors"], serde_json::json!([]));
    let waiting = status["waiting_for_automatic_retry"].as_array().unwrap();
    assert_eq!(waiting.len(), 1, "{status}");
    assert_eq!(waiting[0]["next_automatic_retry"], 1);
    assert_eq!(waiting[0]["max_automatic_retries"], 3);
    assert_eq!(waiting[0]["http_status"], 429);
    let human = output_text(&env.run(&["status", &run]));
    assert!(
        human.contains("waiting for an automatic retry (1/3) when `run` resumes"),
        "{human}"
    );
    assert!(!human.contains("resolve <attempt> --retry"), "{human}");
}

#[test]
fn the_piped_progress_count_never_steps_back_around_automatic_retries() {
    // Given a provider that rate-limits every other request once (retried after a short wait)
    let server = ScriptedServer::start(|r| {
        if r.index % 3 == 0 {
            Reply::RetryAfter(429, "1".into())
        } else {
            Reply::Answer("I cannot decode this.".into())
        }
    })
    .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    // When the run goes with its progress piped
    let out = env
        .command(&["run", "--manifest", &run])
        .env("SKILLTRIAL_TEST_BACKOFF_SCALE", "0.01")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
    // Then the done count only grows, and a rate-limited trial is not counted done
    let stderr = String::from_utf8_lossy(&out.stderr);
    let done: Vec<u32> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix('['))
        .filter_map(|l| l.split('/').next()?.parse().ok())
        .collect();
    assert!(done.len() > 2, "{stderr}");
    assert!(done.windows(2).all(|w| w[0] < w[1]), "{done:?}\n{stderr}");
}

#[test]
fn a_dumb_terminal_gets_plain_progress_lines() {
    // `script` gives the binary a real pty; skip where util-linux's script is missing.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("script(1) not found: skipped");
        return;
    }
    let server = ScriptedServer::start(|_| Reply::Answer("I cannot decode this.".into())).unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let inner = format!(
        "{} run --manifest {run} --home {}",
        env!("CARGO_BIN_EXE_skilltrial"),
        env.home().display()
    );
    let out = Command::new("script")
        .args(["-qfec", &inner, "/dev/null"])
        .current_dir(support::root())
        .env("TERM", "dumb")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env_remove("ANTHROPIC_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let all = output_text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("[1/"), "{all}");
    assert!(all.contains("spent $"), "{all}");
}

#[test]
fn cancel_on_a_cancelled_run_is_idempotent() {
    let server = ScriptedServer::start(|_| Reply::Status(500)).unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    assert!(env.run(&["cancel", &run]).status.success());
    // The run records the cancel: every trial not_run, status cancelled.
    let out = env.run(&["run", "--manifest", &run]);
    assert!(out.status.success(), "{}", output_text(&out));
    let again = env.run(&["cancel", &run]);
    assert_eq!(again.status.code(), Some(0), "{}", output_text(&again));
    assert!(
        output_text(&again).contains("already cancelled"),
        "{}",
        output_text(&again)
    );
    // And a second cancel before any run is as harmless.
    let other = env.plan_args(&["--seed", "7", "--reps", "1", "--cap-usd", "4"]);
    let mut other: Vec<&str> = other
        .iter()
        .map(|a| if a == "7" { "8" } else { a.as_str() })
        .collect();
    other.push("--json");
    let second: Value = serde_json::from_slice(&env.run(&other).stdout).unwrap();
    let second = second["run"].as_str().unwrap().to_owned();
    assert!(env.run(&["cancel", &second]).status.success());
    let twice = env.run(&["cancel", &second]);
    assert_eq!(twice.status.code(), Some(0), "{}", output_text(&twice));
}

/// Runs tmux with `args` against the test's own server socket.
fn tmux(socket: &Path, args: &[&str]) -> Output {
    Command::new("tmux")
        .arg("-S")
        .arg(socket)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_ctrl_c_on_a_real_terminal_leaves_no_stale_bar_over_the_notice() {
    // A real terminal: tmux, whose Ctrl-C goes through the tty (signal and `^C` echo). Skipped
    // where tmux is missing.
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux not found: skipped");
        return;
    }
    let server = ScriptedServer::start(|_| {
        Reply::Slow("I cannot decode this.".into(), Duration::from_millis(700))
    })
    .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let socket = env.dir.path().join("tmux.sock");
    let command = format!(
        "cd {} && ANTHROPIC_API_KEY=sk-ant-test {} run --manifest {run} --home {}; sleep 30",
        support::root().display(),
        env!("CARGO_BIN_EXE_skilltrial"),
        env.home().display()
    );
    let started = tmux(
        &socket,
        &[
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-e",
            "TERM=xterm-256color",
            &command,
        ],
    );
    assert!(started.status.success(), "{}", output_text(&started));
    let begun = Instant::now();
    while server.requests().len() < 3 {
        assert!(begun.elapsed() < Duration::from_secs(60), "no requests");
        std::thread::sleep(Duration::from_millis(20));
    }
    tmux(&socket, &["send-keys", "C-c"]);
    std::thread::sleep(Duration::from_millis(3000));
    let screen =
        String::from_utf8_lossy(&tmux(&socket, &["capture-pane", "-p"]).stdout).into_owned();
    tmux(&socket, &["kill-server"]);
    // The notice is whole (both halves of its wrapped line), and no bar row is left above it.
    let lines: Vec<&str> = screen.lines().collect();
    let notice = lines
        .iter()
        .position(|l| l.starts_with("stopping: the requests in flight finish"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        lines[notice + 1].starts_with("hose requests then become unknown"),
        "{screen}"
    );
    assert!(
        lines[..notice]
            .iter()
            .all(|l| !l.contains('█') && !l.contains('░')),
        "a stale bar above the notice:\n{screen}"
    );
}

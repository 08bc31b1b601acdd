//! Second acceptance pass, progress and run-state findings: a stop during an automatic retry's
//! wait, the progress count around retries, plain progress on a dumb terminal, the request bound
//! `status` shows, the local demo's cap line, and the exit codes of `cancel` and a held `run`.
//! The real `skilltrial` binary, a real SQLite journal in a temporary state directory, and the
//! loopback server speaking the providers' wire formats.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod support;

use serde_json::Value;
use skilltrial_engine::scripted::{Reply, ScriptedServer};

/// A temporary state directory with a priced Anthropic profile pointing at `server`.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new(server: &ScriptedServer) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("profiles.toml"),
            format!(
                "[[profile]]\nid = \"loopback\"\nprovider = \"anthropic\"\nmodel = \"loopback-model\"\nbase_url = \"{}\"\ncontext_tokens = 200000\nmax_output_tokens = 1024\ninput_usd_per_mtok = \"3\"\noutput_usd_per_mtok = \"15\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-29\"\n",
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
        let mut c = Command::new(env!("CARGO_BIN_EXE_skilltrial"));
        c.args(args)
            .arg("--home")
            .arg(self.home())
            .current_dir(support::root())
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("SKILLTRIAL_TEST_BACKOFF_SCALE")
            .stdin(Stdio::null());
        c
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

    fn plan_args(&self) -> Vec<String> {
        let profiles = self.dir.path().join("profiles.toml");
        support::paired_plan_args(&profiles, &["--seed", "7", "--reps", "1", "--cap-usd", "4"])
    }

    /// Plans a run; returns its full id.
    fn plan(&self) -> String {
        let mut args = self.plan_args();
        args.push("--json".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.json(&args)["run"].as_str().unwrap().to_owned()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Sends SIGINT to a child, as Ctrl-C would.
fn interrupt(child: &std::process::Child) {
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn regression_status_after_a_stop_during_a_retry_wait_says_run_retries_it_automatically() {
    // Given a provider that answers the first request 429 with a 30-second retry-after
    let seen = Arc::new(Mutex::new(0u32));
    let counter = Arc::clone(&seen);
    let server = ScriptedServer::start(move |_| {
        *counter.lock().unwrap() += 1;
        Reply::RetryAfter(429, "30".into())
    })
    .unwrap();
    let env = Env::new(&server);
    let run = env.plan();
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
    interrupt(&child);
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
    let human = text(&env.run(&["status", &run]));
    assert!(
        human.contains("waiting for an automatic retry (1/3) when `run` resumes"),
        "{human}"
    );
    assert!(!human.contains("resolve <attempt> --retry"), "{human}");
}

#[test]
fn regression_the_piped_progress_count_never_steps_back_around_automatic_retries() {
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
    let run = env.plan();
    // When the run goes with its progress piped
    let out = env
        .command(&["run", "--manifest", &run])
        .env("SKILLTRIAL_TEST_BACKOFF_SCALE", "0.01")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
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
fn regression_status_shows_the_request_bound_plan_printed() {
    let server = ScriptedServer::start(|_| Reply::Status(500)).unwrap();
    let env = Env::new(&server);
    let args = env.plan_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let plan = text(&env.run(&args));
    let bound = plan
        .lines()
        .find_map(|l| l.strip_prefix("requests  at most "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("{plan}"))
        .to_owned();
    let status = text(&env.run(&["status"]));
    assert!(
        status.contains(&format!("bounds   at most {bound} requests,")),
        "plan: {bound}\n{status}"
    );
}

#[test]
fn regression_cancel_on_a_cancelled_run_is_idempotent() {
    let server = ScriptedServer::start(|_| Reply::Status(500)).unwrap();
    let env = Env::new(&server);
    let run = env.plan();
    assert!(env.run(&["cancel", &run]).status.success());
    // The run records the cancel: every trial not_run, status cancelled.
    let out = env.run(&["run", "--manifest", &run]);
    assert!(out.status.success(), "{}", text(&out));
    let again = env.run(&["cancel", &run]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        text(&again).contains("already cancelled"),
        "{}",
        text(&again)
    );
    // And a second cancel before any run is as harmless.
    let other = env.plan_args();
    let mut other: Vec<&str> = other
        .iter()
        .map(|a| if a == "7" { "8" } else { a.as_str() })
        .collect();
    other.push("--json");
    let second: Value = serde_json::from_slice(&env.run(&other).stdout).unwrap();
    let second = second["run"].as_str().unwrap().to_owned();
    assert!(env.run(&["cancel", &second]).status.success());
    let twice = env.run(&["cancel", &second]);
    assert_eq!(twice.status.code(), Some(0), "{}", text(&twice));
}

#[test]
fn regression_run_held_by_another_process_is_an_environment_condition() {
    let server = ScriptedServer::start(|_| Reply::Status(500)).unwrap();
    let env = Env::new(&server);
    let run = env.plan();
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
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is being run by another skilltrial process"),
        "{}",
        text(&out)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn regression_the_local_demo_prints_the_bounds_that_apply_not_a_dollar_cap() {
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
    let all = text(&out);
    assert!(
        all.contains(
            "model: openai-compatible-local (foo), no monetary cap (unpriced profile): at most 100 requests and 5000000 tokens"
        ),
        "{all}"
    );
    assert!(!all.contains("budget cap $"), "{all}");
}

#[test]
fn regression_a_dumb_terminal_gets_plain_progress_lines() {
    // `script` gives the binary a real pty; skip where util-linux's script is missing.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("script(1) not found: skipped");
        return;
    }
    let server = ScriptedServer::start(|_| Reply::Answer("I cannot decode this.".into())).unwrap();
    let env = Env::new(&server);
    let run = env.plan();
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
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("[1/"), "{all}");
    assert!(all.contains("spent $"), "{all}");
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
fn regression_a_ctrl_c_on_a_real_terminal_leaves_no_stale_bar_over_the_notice() {
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
    let run = env.plan();
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
    assert!(started.status.success(), "{}", text(&started));
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
        .position(|l| l.starts_with("stopping: the request in flight finishes"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(
        lines[notice + 1].starts_with("hat request then becomes unknown"),
        "{screen}"
    );
    assert!(
        lines[..notice]
            .iter()
            .all(|l| !l.contains('█') && !l.contains('░')),
        "a stale bar above the notice:\n{screen}"
    );
}

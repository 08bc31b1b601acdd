//! What the CLI's end-to-end tests share: the repository root, an `Env` (a temporary state
//! directory with a profiles.toml naming one loopback profile, and the real `skilltrial` binary
//! run against it), the scripted golden answer of the task a request names, a wait for the
//! loopback server's requests, and what a finished command said. Each test file declares `mod support;` and uses a subset, hence
//! the `dead_code` allowance.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod pty;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_core::checker::Expected;
use skilltrial_core::pack;
use skilltrial_engine::engine::KILL_POINT_VAR;
use skilltrial_engine::journal::{AttemptRow, Journal, LedgerTotals};
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

/// The variable that scales the runner's retry waits (debug builds only).
pub const BACKOFF_VAR: &str = "SKILLTRIAL_TEST_BACKOFF_SCALE";

/// The key every `Env` hands the binary unless a test names its own.
pub const DEFAULT_SECRET: &str = "sk-ant-test-SECRET-do-not-store-4242";

/// A profiles.toml holding one Anthropic-format profile `id` (model `model`) at `url`, with
/// `(context_tokens, max_output_tokens)` and, if given, `(input, output)` USD per Mtok.
pub fn profile_toml(
    id: &str,
    model: &str,
    url: &str,
    (context, max_output): (u32, u32),
    prices: Option<(&str, &str)>,
) -> String {
    let mut toml = format!(
        "[[profile]]\nid = \"{id}\"\nprovider = \"anthropic\"\nmodel = \"{model}\"\nbase_url = \"{url}\"\ncontext_tokens = {context}\nmax_output_tokens = {max_output}\n"
    );
    if let Some((input, output)) = prices {
        toml.push_str(&format!(
            "input_usd_per_mtok = \"{input}\"\noutput_usd_per_mtok = \"{output}\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-29\"\n"
        ));
    }
    toml
}

/// `plan` of bundle A 1.4.2 against B 1.5.0 on the profile `loopback` of `profiles`, then
/// `extra`.
pub fn paired_plan_args(profiles: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "plan",
        "--model",
        "loopback",
        "--profiles",
        profiles.to_str().unwrap(),
        "--a",
        "fixtures/bundles/solana-reader-1.4.2",
        "--b",
        "fixtures/bundles/solana-reader-1.5.0",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

/// A server answering `scripted_answer`, except request `index` (0-based), which it never
/// answers.
pub fn hang_at(index: u64) -> ScriptedServer {
    ScriptedServer::start(move |r| {
        if r.index == index {
            Reply::Hang
        } else {
            Reply::Answer(scripted_answer(r))
        }
    })
    .unwrap()
}

/// Copies a directory tree.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file (not directory) under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// The workspace root: the binary runs there so that `fixtures/...` paths resolve.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Waits (at most 60 s) until `server` has seen at least `count` requests.
pub fn wait_for_requests(server: &ScriptedServer, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.requests().len() < count {
        assert!(
            Instant::now() < deadline,
            "the runner never reached request {count}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The golden answer of the task named in a request, or a wrong answer for the baseline arm.
pub fn scripted_answer(request: &ServerRequest) -> String {
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

/// (exit code, stdout, stderr) of a finished command.
pub fn outcome(out: Output) -> (Option<i32>, String, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Its stdout then its stderr, as one text.
pub fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `plan` with `extra` and no `--json`: (exit code, stdout, stderr).
pub fn plan_outcome(env: &Env, extra: &[&str]) -> (Option<i32>, String, String) {
    let args = env.plan_args(extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    outcome(env.run(&args))
}

/// The parsed stdout of a command that must have succeeded (both streams shown if not).
pub fn success_json(args: &[&str], out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The binary run in `home` with no provider key or endpoint from the caller's environment and
/// no kill point: for the demo's built-in scripted model.
pub fn offline_command(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skilltrial"));
    cmd.args(args)
        .arg("--home")
        .arg(home)
        .current_dir(root())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove(KILL_POINT_VAR)
        .stdin(Stdio::null());
    cmd
}

/// [`offline_command`] run to its end, ended at the debug kill point `kill_at` when one is given.
pub fn offline_output(home: &Path, args: &[&str], kill_at: Option<&str>) -> Output {
    let mut cmd = offline_command(home, args);
    if let Some(point) = kill_at {
        cmd.env(KILL_POINT_VAR, point);
    }
    cmd.output().unwrap()
}

/// Resumes the offline run `run` in `home` with `run --manifest`, each process ended at the kill
/// point `kill_at`, until one finishes (at most `most` kills); returns how many were killed.
pub fn resume_until_done(home: &Path, run: &str, kill_at: &str, most: u32) -> u32 {
    let mut resumes = 0;
    loop {
        let out = offline_output(home, &["run", "--manifest", run, "--yes"], Some(kill_at));
        match out.status.code() {
            Some(skilltrial_engine::engine::KILL_POINT_EXIT) => resumes += 1,
            Some(0) => return resumes,
            code => panic!(
                "resume {resumes} exited {code:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
        assert!(
            resumes <= most,
            "the run never finished after {resumes} resumes"
        );
    }
}

/// The run id a command printed on stderr (`…, manifest sha256:<hex>`), as hex.
pub fn manifest_in(stderr: &str) -> String {
    let run = stderr
        .lines()
        .find_map(|l| l.split_once(", manifest ").map(|(_, h)| h.trim()))
        .unwrap_or_else(|| panic!("no manifest hash in: {stderr}"));
    run.strip_prefix("sha256:").unwrap_or(run).to_owned()
}

/// A temporary state directory and a profiles.toml naming the profile `loopback` (Anthropic wire
/// format, at the test's server), with the key and retry-wait scale the binary is run with.
pub struct Env {
    pub dir: tempfile::TempDir,
    secret: String,
    backoff_scale: Option<String>,
}

impl Env {
    /// An environment whose profile has prices.
    pub fn new(server: &ScriptedServer) -> Self {
        Self::with_price(server, true)
    }

    /// An environment whose profile has prices or none (`price`).
    pub fn with_price(server: &ScriptedServer, price: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        // $3 and $15 per Mtok: 3 and 15 µUSD per token, so costs are exact.
        let prices = price.then_some(("3", "15"));
        std::fs::write(
            dir.path().join("profiles.toml"),
            profile_toml(
                "loopback",
                "loopback-model",
                &server.url(),
                (200_000, 1024),
                prices,
            ),
        )
        .unwrap();
        Self {
            dir,
            secret: DEFAULT_SECRET.to_owned(),
            backoff_scale: None,
        }
    }

    /// The key the binary is given as ANTHROPIC_API_KEY.
    pub fn secret(mut self, secret: &str) -> Self {
        self.secret = secret.to_owned();
        self
    }

    /// The retry-wait scale every command runs with (unset: the real waits).
    pub fn backoff_scale(mut self, scale: &str) -> Self {
        self.backoff_scale = Some(scale.to_owned());
        self
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn profiles(&self) -> PathBuf {
        self.dir.path().join("profiles.toml")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        self.command_in(&self.home(), args)
    }

    /// The binary with `args`, run in the state directory `home`.
    pub fn command_in(&self, home: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_skilltrial"));
        cmd.args(args)
            .arg("--home")
            .arg(home)
            .current_dir(root())
            .env("ANTHROPIC_API_KEY", &self.secret)
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove(KILL_POINT_VAR)
            .env_remove(BACKOFF_VAR)
            .stdin(Stdio::null());
        if let Some(scale) = &self.backoff_scale {
            cmd.env(BACKOFF_VAR, scale);
        }
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    pub fn run_in(&self, home: &Path, args: &[&str]) -> Output {
        self.command_in(home, args).output().unwrap()
    }

    /// Runs with the retry-wait scale `scale` for this command only.
    pub fn run_scaled(&self, args: &[&str], scale: &str) -> Output {
        self.command(args).env(BACKOFF_VAR, scale).output().unwrap()
    }

    /// Runs `run` with the debug kill point `point` and checks the process died there.
    pub fn kill_at(&self, run: &str, point: &str) {
        let out = self
            .command(&["run", "--manifest", run, "--json"])
            .env(KILL_POINT_VAR, point)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(skilltrial_engine::engine::KILL_POINT_EXIT),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts `skilltrial run --manifest <run>` in the background, output discarded.
    pub fn spawn_run(&self, run: &str) -> Child {
        self.command(&["run", "--manifest", run])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    pub fn json(&self, args: &[&str]) -> Value {
        success_json(args, &self.run(args))
    }

    pub fn json_scaled(&self, args: &[&str], scale: &str) -> Value {
        success_json(args, &self.run_scaled(args, scale))
    }

    pub fn text(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `plan` of bundle A 1.4.2 against B 1.5.0 on the loopback profile, then `extra`.
    pub fn plan_args(&self, extra: &[&str]) -> Vec<String> {
        paired_plan_args(&self.profiles(), extra)
    }

    /// Plans a run with `extra` and returns its plan document.
    pub fn plan_doc(&self, extra: &[&str]) -> Value {
        let mut args = self.plan_args(extra);
        args.push("--json".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.json(&args)
    }

    /// Plans a run with seed 7 and `extra` and returns its id.
    pub fn plan(&self, extra: &[&str]) -> String {
        self.plan_seeded("7", extra)
    }

    /// Plans a run with `seed` and `extra` and returns its id.
    pub fn plan_seeded(&self, seed: &str, extra: &[&str]) -> String {
        let mut args = vec!["--seed", seed];
        args.extend_from_slice(extra);
        self.plan_doc(&args)["run"].as_str().unwrap().to_owned()
    }

    /// Writes the report (JSON and HTML) into `<tmp>/report` and returns the JSON.
    pub fn report(&self, run: &str) -> Value {
        let out_dir = self.dir.path().join("report");
        let out = self.run(&["report", run, "--out", out_dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out_dir.join("report.html").is_file());
        serde_json::from_slice(&std::fs::read(out_dir.join("report.json")).unwrap()).unwrap()
    }

    /// The journal, opened by the test (the real SQLite file of the state dir).
    pub fn journal(&self) -> Journal {
        Journal::open(&self.home().join("journal.sqlite3")).unwrap()
    }

    pub fn attempts(&self, run: &str) -> Vec<AttemptRow> {
        self.journal().attempts(run).unwrap()
    }

    pub fn ledger(&self, run: &str) -> LedgerTotals {
        self.journal().ledger_totals(run).unwrap()
    }

    /// The per-trial upper cost (µUSD) the plan reserves, from `run --dry-run`, by trial index.
    pub fn reserves(&self, run: &str) -> Vec<u64> {
        let doc = self.json(&["run", "--manifest", run, "--dry-run", "--json"]);
        doc["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["reserve"].as_u64().unwrap())
            .collect()
    }
}

//! What the engine's benches share: a run prepared on a real disk against the demo's scripted
//! model on loopback, the bench folder inside the state directory (removed afterwards), the
//! filesystem it lives on, percentiles, and fsyncs counted by strace around a child process.
//! Each bench declares `mod support;` and uses a subset, hence the `dead_code` allowance.
#![allow(
    dead_code,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use skilltrial_core::bundle;
use skilltrial_core::manifest::{self, PlanOptions};
use skilltrial_core::money::{MicroUsd, PerMtok};
use skilltrial_core::pack;
use skilltrial_core::profile::{Price, Profile, ProviderKind};
use skilltrial_engine::demo;
use skilltrial_engine::engine;
use skilltrial_engine::home::{self, Layout};
use skilltrial_engine::journal::Journal;
use skilltrial_engine::provider::Provider;
use skilltrial_engine::scripted::ScriptedServer;
use skilltrial_engine::store::Store;

/// Set in a child: `setup` (prepare a run, do not execute it) or `run` (prepare and execute).
pub const CHILD_ENV: &str = "SKILLTRIAL_ENGINE_BENCH_CHILD";
/// The folder a child works in.
pub const CHILD_DIR_ENV: &str = "SKILLTRIAL_ENGINE_BENCH_DIR";
/// Outcomes a checked trial can have; anything else means the run did not do its work.
pub const SCORED: [&str; 4] = ["pass", "fail", "invalid_output", "unsupported_case"];

pub fn ctx<T, E: Display>(result: Result<T, E>, what: &str) -> Result<T, String> {
    result.map_err(|e| format!("{what}: {e}"))
}

/// What a bench runs: the paired plan of solana-reader 1.4.2 against 1.5.0 on `pack` at
/// `repetitions`, against the demo's script answering after `answer_delay`.
pub struct Workload {
    pub pack: &'static str,
    pub repetitions: u32,
    pub answer_delay: Duration,
}

/// Everything a run needs, built in a fresh state directory.
pub struct Prepared {
    pub layout: Layout,
    pub server: ScriptedServer,
    pub inputs: engine::Inputs,
    pub payloads: Store,
    pub journal: Journal,
}

impl Prepared {
    /// Executes the prepared run with `provider`.
    pub fn run(
        &mut self,
        provider: &dyn Provider,
        options: engine::RunOptions,
        on_progress: &mut dyn FnMut(&engine::Progress),
    ) -> Result<engine::RunSummary, String> {
        let run = engine::run(
            &mut self.journal,
            &self.payloads,
            provider,
            &self.inputs,
            options,
            on_progress,
        );
        ctx(run, &format!("run in {}", self.layout.root.display()))
    }
}

pub fn prepare(dir: &Path, seed: u64, work: &Workload) -> Result<Prepared, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pack = ctx(pack::open(work.pack), work.pack)?;
    let a = ctx(
        bundle::import(&root.join("fixtures/bundles/solana-reader-1.4.2")),
        "bundle solana-reader-1.4.2",
    )?;
    let b = ctx(
        bundle::import(&root.join("fixtures/bundles/solana-reader-1.5.0")),
        "bundle solana-reader-1.5.0",
    )?;
    // The demo's script: golden records and the pack's known-wrong answers, by task and version,
    // so hashing and checking cost what they cost on real answers.
    let plans = demo::Plans::default();
    let script = demo::responder(pack.clone(), plans.clone());
    // One sleep for the whole delay, not the server's `Reply::Slow` (10 ms steps, counted, not
    // measured): on a loaded machine every step wakes late and a 2 s answer took some 2.2 s.
    let delay = work.answer_delay;
    let server = ctx(
        ScriptedServer::start(move |r| {
            std::thread::sleep(delay);
            script(r)
        }),
        "loopback server",
    )?;
    let profile = Profile {
        id: "bench".into(),
        provider: ProviderKind::Anthropic,
        model: "bench-model".into(),
        revision: None,
        base_url: Some(server.url()),
        context_tokens: 200_000,
        max_output_tokens: 1024,
        price: Some(Price {
            input: PerMtok(3_000_000),
            output: PerMtok(15_000_000),
            source: "bench".into(),
            as_of: "2026-11-29".into(),
            cache: None,
        }),
        origin: "bench".into(),
    };
    // Neither the cap nor the request limit may be what ends a run.
    let options = PlanOptions {
        repetitions: work.repetitions,
        seed,
        cap: Some(ctx(MicroUsd::parse_usd("100000"), "cap")?),
        max_requests: Some(100_000),
        max_tokens: None,
        max_output_tokens: Some(1024),
        endpoint: server.url(),
        scripted: false,
    };
    let m = ctx(
        manifest::build(&pack, Some(&a), Some(&b), &profile, &options),
        "manifest",
    )?;
    let layout = Layout::new(dir);
    let store = ctx(Store::open(&layout.store), "store")?;
    let payloads = ctx(Store::open(&layout.payloads), "payload store")?;
    let hash = ctx(
        engine::save_inputs(&store, &m, &pack, Some(&a), Some(&b)),
        "save inputs",
    )?;
    let (planned, _) = ctx(manifest::trials(&m, &pack, Some(&a), Some(&b)), "plan")?;
    plans.add(&hash.hex(), &planned);
    let inputs = ctx(engine::load_inputs(&store, &hash.hex()), "load inputs")?;
    let journal = ctx(Journal::open(&layout.journal), "journal")?;
    Ok(Prepared {
        layout,
        server,
        inputs,
        payloads,
        journal,
    })
}

/// An error unless the run ended `finished` with every trial checked and one request per trial.
pub fn check_complete(summary: &engine::RunSummary, requests: usize) -> Result<(), String> {
    if summary.status != "finished" {
        return Err(format!(
            "run ended `{}`, not `finished`: {:?}",
            summary.status, summary.counts
        ));
    }
    let unscored: Vec<_> = summary
        .counts
        .iter()
        .filter(|(k, _)| !SCORED.contains(&k.as_str()))
        .collect();
    if !unscored.is_empty() {
        return Err(format!("trials left unscored: {unscored:?}"));
    }
    if requests != summary.planned as usize {
        return Err(format!(
            "expected one request per trial ({}): the server saw {requests}",
            summary.planned
        ));
    }
    Ok(())
}

/// Outcome counts as `pass 12, fail 3`.
pub fn counts_line(counts: &std::collections::BTreeMap<String, u32>) -> String {
    let parts: Vec<String> = counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    parts.join(", ")
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

pub fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// `/proc/mounts` escapes space, tab, newline and backslash in octal.
fn unescape_mount(field: &str) -> String {
    let mut out = String::new();
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The filesystem type and mount point holding `path`: the longest mount point that is a
/// prefix of it (by components), the last such line winning as the kernel's stacking does.
/// "unknown" where `/proc/mounts` does not exist.
pub fn filesystem_of(path: &Path) -> (String, String) {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else {
        return ("unknown".into(), "unknown".into());
    };
    let mut best: Option<(usize, String, String)> = None;
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(point), Some(kind)) = (fields.get(1), fields.get(2)) else {
            continue;
        };
        let point = unescape_mount(point);
        if !path.starts_with(&point) {
            continue;
        }
        let depth = Path::new(&point).components().count();
        if best.as_ref().is_none_or(|(d, _, _)| depth >= *d) {
            best = Some((depth, (*kind).to_owned(), point));
        }
    }
    best.map_or_else(
        || ("unknown".into(), "unknown".into()),
        |(_, kind, point)| (kind, point),
    )
}

/// The state directory the CLI resolves (`SKILLTRIAL_HOME`, else the XDG data dir) and where
/// that came from.
pub fn state_dir() -> Result<(PathBuf, &'static str), String> {
    let state = ctx(
        home::resolve_home(None, |k| std::env::var(k).ok()),
        "state directory",
    )?;
    let source = match state.source {
        home::HomeSource::Flag => "--home",
        home::HomeSource::Env => "SKILLTRIAL_HOME",
        home::HomeSource::XdgDataHome => "$XDG_DATA_HOME/skilltrial",
        home::HomeSource::DefaultDataDir => "$HOME/.local/share/skilltrial",
    };
    Ok((state.path, source))
}

/// The bench folder `<name>-<pid>` inside the state directory — a real disk, never a temp dir
/// that may be RAM-backed — removed on drop with every parent the bench had to create (those
/// only if still empty: a real state directory made meanwhile is kept).
pub struct BenchDir {
    pub path: PathBuf,
    created: Vec<PathBuf>,
}

impl BenchDir {
    pub fn create(state: &Path, name: &str) -> Result<Self, String> {
        let mut created = Vec::new();
        let mut at = Some(state);
        while let Some(dir) = at {
            if dir.exists() {
                break;
            }
            created.push(dir.to_path_buf());
            at = dir.parent();
        }
        let path = state.join(format!("{name}-{}", std::process::id()));
        ctx(std::fs::create_dir_all(&path), &path.display().to_string())?;
        let path = ctx(std::fs::canonicalize(&path), &path.display().to_string())?;
        Ok(Self { path, created })
    }
}

impl Drop for BenchDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            eprintln!("could not remove {}: {e}", self.path.display());
        }
        for dir in &self.created {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Whether and how strace can count syscalls here.
fn strace_usable() -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err("not Linux".into());
    }
    match Command::new("strace")
        .args(["-f", "-c", "-o", "/dev/null", "-e", "trace=fsync,fdatasync"])
        .arg("true")
        .output()
    {
        Err(e) => Err(format!("strace not available: {e}")),
        Ok(out) if !out.status.success() => Err(format!(
            "strace cannot trace here: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        )),
        Ok(_) => Ok(()),
    }
}

/// Runs this bench as a child in `mode` under strace and returns (fsync, fdatasync) calls and
/// the child's stdout.
fn counted_child(mode: &str, dir: &Path) -> Result<((u64, u64), String), String> {
    let summary = dir.join(format!("strace-{mode}.txt"));
    let work = dir.join(format!("child-{mode}"));
    let exe = ctx(std::env::current_exe(), "current exe")?;
    let out = ctx(
        Command::new("strace")
            .args(["-f", "-c", "-e", "trace=fsync,fdatasync", "-o"])
            .arg(&summary)
            .arg(exe)
            .env(CHILD_ENV, mode)
            .env(CHILD_DIR_ENV, &work)
            .output(),
        "strace child",
    )?;
    if !out.status.success() {
        return Err(format!(
            "child `{mode}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = ctx(
        std::fs::read_to_string(&summary),
        &summary.display().to_string(),
    )?;
    if !text.contains("% time") {
        return Err(format!(
            "no strace summary in {}: {text}",
            summary.display()
        ));
    }
    let mut counts = (0, 0);
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors], syscall
        let calls = || {
            fields
                .get(3)
                .and_then(|c| c.parse::<u64>().ok())
                .ok_or_else(|| format!("unreadable strace line: {line}"))
        };
        match fields.last() {
            Some(&"fsync") => counts.0 = calls()?,
            Some(&"fdatasync") => counts.1 = calls()?,
            _ => {}
        }
    }
    Ok((counts, String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// A bench's `main`: `child` with its mode when this process is a strace child, else `parent`;
/// any error printed under `name` and exit 1.
pub fn main(name: &str, child: fn(&str) -> Result<(), String>, parent: fn() -> Result<(), String>) {
    let result = match std::env::var(CHILD_ENV) {
        Ok(mode) => child(&mode),
        Err(_) => parent(),
    };
    if let Err(e) = result {
        eprintln!("{name} bench failed: {e}");
        std::process::exit(1);
    }
}

/// The folder a child was told to work in.
pub fn child_dir() -> Result<PathBuf, String> {
    std::env::var_os(CHILD_DIR_ENV)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{CHILD_DIR_ENV} is unset"))
}

/// fsyncs per trial (when strace could count them) and what the fsync count line says: this
/// bench run as a child that sets up and runs (printing its trial count), minus one that only
/// sets up, divided by the trials.
pub fn fsyncs_per_trial(dir: &Path) -> Result<(Option<f64>, String), String> {
    if let Err(why) = strace_usable() {
        return Ok((None, format!("not measured ({why})")));
    }
    let ((setup_fsync, setup_fdatasync), _) = counted_child("setup", dir)?;
    let ((run_fsync, run_fdatasync), out) = counted_child("run", dir)?;
    let trials: u64 = ctx(out.trim().parse(), "the run child's trial count")?;
    let setup = setup_fsync + setup_fdatasync;
    let in_run = (run_fsync + run_fdatasync)
        .checked_sub(setup)
        .ok_or("the run child made fewer fsyncs than its setup alone")?;
    let per_trial = in_run as f64 / trials as f64;
    Ok((
        Some(per_trial),
        format!(
            "{per_trial:.2} = ({} in a child that sets up and runs - {setup} in one that only sets up) / {trials} trials; of those, fsync {}, fdatasync {} (strace -f -c)",
            run_fsync + run_fdatasync,
            run_fsync.saturating_sub(setup_fsync),
            run_fdatasync.saturating_sub(setup_fdatasync),
        ),
    ))
}

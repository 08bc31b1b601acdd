//! The runner's own overhead per trial — everything except the model's latency — against an
//! instant loopback provider, printed beside the fsync latency and the filesystem of the state
//! directory it runs on. Prints numbers, asserts nothing about speed.
//!
//! What makes the figures mean what they say:
//! - The journal, the stores and the fsync probe live in a bench folder inside the default state
//!   directory (the one the CLI resolves: `SKILLTRIAL_HOME`, else the XDG data dir), never in a
//!   temp dir that may be RAM-backed; the folder (and any parent it had to create) is removed
//!   afterwards.
//! - The loopback server plays the demo's script: every answer is the task's golden record or one
//!   of its known-wrong answers from the pack, so payload hashing and checking cost what they
//!   cost on real answers.
//! - fsyncs per trial are counted by `strace -f -c` around a child process (one run minus the
//!   same setup without the run), when strace exists and may trace; otherwise "not measured".
//! - Any run that fails, ends other than `finished`, leaves a trial unscored, or sends other than
//!   one request per trial, and any failed child, fails the bench (exit 1).
//!
//! Run: `cargo bench -p skilltrial-engine --bench engine`.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::collections::BTreeMap;
use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use skilltrial_core::bundle;
use skilltrial_core::manifest::{self, PlanOptions};
use skilltrial_core::money::{MicroUsd, PerMtok};
use skilltrial_core::pack;
use skilltrial_core::profile::{Price, Profile, ProviderKind};
use skilltrial_engine::demo;
use skilltrial_engine::engine::{self, RunOptions};
use skilltrial_engine::home::{self, Layout};
use skilltrial_engine::journal::Journal;
use skilltrial_engine::provider::{Anthropic, CallError, ModelRequest, ModelResponse, Provider};
use skilltrial_engine::scripted::ScriptedServer;
use skilltrial_engine::store::Store;

/// Timed runs of the whole plan (54 trials each): 162 samples for the percentiles.
const RUNS: u64 = 3;
/// fsync probes of a fresh 4 KiB file.
const FSYNC_PROBES: usize = 50;
/// Set in a child: `setup` (prepare a run, do not execute it) or `run` (prepare and execute).
const CHILD_ENV: &str = "SKILLTRIAL_ENGINE_BENCH_CHILD";
/// The folder a child works in.
const CHILD_DIR_ENV: &str = "SKILLTRIAL_ENGINE_BENCH_DIR";
/// Outcomes a checked trial can have; anything else means the run did not do its work.
const SCORED: [&str; 4] = ["pass", "fail", "invalid_output", "unsupported_case"];

fn ctx<T, E: Display>(result: Result<T, E>, what: &str) -> Result<T, String> {
    result.map_err(|e| format!("{what}: {e}"))
}

/// Wraps the real provider and records each call's duration and answer size.
struct Timed {
    inner: Anthropic,
    calls: Mutex<Vec<(Duration, usize)>>,
}

impl Provider for Timed {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }
    fn body(&self, request: &ModelRequest) -> Vec<u8> {
        self.inner.body(request)
    }
    fn call(&self, request: &ModelRequest) -> Result<ModelResponse, CallError> {
        let start = Instant::now();
        let result = self.inner.call(request);
        let elapsed = start.elapsed();
        let size = result.as_ref().map_or(0, |r| r.text.len());
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((elapsed, size));
        result
    }
}

/// Everything a run needs, built in `dir` (a fresh state directory).
struct Prepared {
    layout: Layout,
    server: ScriptedServer,
    inputs: engine::Inputs,
    payloads: Store,
    journal: Journal,
}

fn prepare(dir: &Path, seed: u64) -> Result<Prepared, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pack = ctx(pack::open("solana-core@1.0.3"), "pack solana-core@1.0.3")?;
    let a = ctx(
        bundle::import(&root.join("fixtures/bundles/solana-reader-1.4.2")),
        "bundle solana-reader-1.4.2",
    )?;
    let b = ctx(
        bundle::import(&root.join("fixtures/bundles/solana-reader-1.5.0")),
        "bundle solana-reader-1.5.0",
    )?;
    // The demo's script: golden records and the pack's known-wrong answers, by task and version.
    let plans = demo::Plans::default();
    let server = ctx(
        ScriptedServer::start(demo::responder(pack.clone(), plans.clone())),
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
        }),
        origin: "bench".into(),
    };
    let options = PlanOptions {
        repetitions: 3,
        seed,
        cap: Some(ctx(MicroUsd::parse_usd("100"), "cap")?),
        max_requests: None,
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

/// One executed run: per-trial overhead samples (ms), model calls (ms, answer bytes), outcomes.
struct Measured {
    trials: u32,
    overhead_ms: Vec<f64>,
    call_ms: Vec<f64>,
    answer_bytes: Vec<usize>,
    wall: Duration,
    /// CPU time (user + system) of the runner's threads over the run, when /proc tells it.
    cpu: Option<Duration>,
    counts: BTreeMap<String, u32>,
}

fn execute(mut p: Prepared) -> Result<Measured, String> {
    let provider = Timed {
        inner: ctx(
            Anthropic::new(&p.server.url(), "bench-key".into(), Duration::from_secs(10)),
            "provider",
        )?,
        calls: Mutex::new(Vec::new()),
    };
    let mut marks: Vec<Instant> = Vec::new();
    let mut last_done = 0;
    let cpu_before = runner_cpu();
    let start = Instant::now();
    let summary = ctx(
        engine::run(
            &mut p.journal,
            &p.payloads,
            &provider,
            &p.inputs,
            RunOptions {
                dispatch_limit: None,
                ..RunOptions::default()
            },
            &mut |progress| {
                if progress.done != last_done {
                    last_done = progress.done;
                    marks.push(Instant::now());
                }
            },
        ),
        &format!("run in {}", p.layout.root.display()),
    )?;
    let wall = start.elapsed();
    let cpu = runner_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let calls = provider
        .calls
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let requests = p.server.requests().len();

    // A run that did not do all of its work would make every figure below a lie.
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
    let planned = summary.planned as usize;
    if requests != planned || calls.len() != planned || marks.len() != planned {
        return Err(format!(
            "expected one request per trial ({planned}): the server saw {requests}, the provider made {}, progress advanced {} times",
            calls.len(),
            marks.len()
        ));
    }

    let mut overhead_ms = Vec::with_capacity(planned);
    let mut previous = start;
    for (mark, (call, _)) in marks.iter().zip(&calls) {
        let between = mark.duration_since(previous);
        overhead_ms.push(between.saturating_sub(*call).as_secs_f64() * 1e3);
        previous = *mark;
    }
    Ok(Measured {
        trials: summary.planned,
        overhead_ms,
        call_ms: calls.iter().map(|(d, _)| d.as_secs_f64() * 1e3).collect(),
        answer_bytes: calls.iter().map(|(_, n)| *n).collect(),
        wall,
        cpu,
        counts: summary.counts,
    })
}

/// CPU time (user + system) this process has used, less that of the loopback server's threads
/// (named `scripted-*`: they play the model, which the overhead excludes). The HTTP client's
/// threads and the checker's worker count: they are the runner's. From `/proc` (Linux); `None`
/// elsewhere. Clock ticks are 10 ms, so only a whole run's figure means anything.
fn runner_cpu() -> Option<Duration> {
    // utime and stime: fields 14 and 15 of `stat`, counted after the `(comm)` field, which may
    // hold spaces.
    fn ticks(stat: &str) -> Option<u64> {
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
    }
    let process = ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    let mut server = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.starts_with("scripted") {
            server += std::fs::read_to_string(task.path().join("stat"))
                .ok()
                .and_then(|s| ticks(&s))
                .unwrap_or(0);
        }
    }
    // USER_HZ is 100 on every Linux ABI the bench runs on.
    Some(Duration::from_millis(process.saturating_sub(server) * 10))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

fn fsync_latency(dir: &Path) -> Result<Vec<f64>, String> {
    let mut samples = Vec::new();
    for i in 0..FSYNC_PROBES {
        let path = dir.join(format!("fsync-{i}"));
        let start = Instant::now();
        let mut f = ctx(std::fs::File::create(&path), "fsync probe")?;
        ctx(f.write_all(&[7u8; 4096]), "fsync probe write")?;
        ctx(f.sync_all(), "fsync probe sync")?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
        ctx(std::fs::remove_file(&path), "fsync probe cleanup")?;
    }
    Ok(sorted(samples))
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
fn filesystem_of(path: &Path) -> (String, String) {
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

/// The bench folder inside the state directory, removed on drop with every parent the bench had
/// to create (those only if still empty: a real state directory made meanwhile is kept).
struct BenchDir {
    path: PathBuf,
    created: Vec<PathBuf>,
}

impl BenchDir {
    fn create(state: &Path) -> Result<Self, String> {
        let mut created = Vec::new();
        let mut at = Some(state);
        while let Some(dir) = at {
            if dir.exists() {
                break;
            }
            created.push(dir.to_path_buf());
            at = dir.parent();
        }
        let path = state.join(format!("bench-engine-{}", std::process::id()));
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

fn child(mode: &str) -> Result<(), String> {
    let dir = PathBuf::from(
        std::env::var_os(CHILD_DIR_ENV).ok_or_else(|| format!("{CHILD_DIR_ENV} is unset"))?,
    );
    let prepared = prepare(&dir, 1)?;
    match mode {
        "setup" => Ok(()),
        "run" => {
            let measured = execute(prepared)?;
            println!("{}", measured.trials);
            Ok(())
        }
        other => Err(format!(
            "{CHILD_ENV}=`{other}` is neither `setup` nor `run`"
        )),
    }
}

/// fsyncs per trial (when strace could count them) and what the fsync count line says.
fn fsyncs_per_trial(dir: &Path) -> Result<(Option<f64>, String), String> {
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

fn parent() -> Result<(), String> {
    let state = ctx(
        home::resolve_home(None, |k| std::env::var(k).ok()),
        "state directory",
    )?;
    let bench = BenchDir::create(&state.path)?;
    let (fs_type, mount_point) = filesystem_of(&bench.path);
    let fsync = fsync_latency(&bench.path)?;

    let mut runs = Vec::new();
    for n in 1..=RUNS {
        let dir = bench.path.join(format!("run-{n}"));
        runs.push(execute(prepare(&dir, n)?)?);
    }
    let (fsyncs, fsync_line) = fsyncs_per_trial(&bench.path)?;

    let trials: u32 = runs.iter().map(|r| r.trials).sum();
    let overhead = sorted(runs.iter().flat_map(|r| r.overhead_ms.clone()).collect());
    let calls = sorted(runs.iter().flat_map(|r| r.call_ms.clone()).collect());
    let mut answers: Vec<usize> = runs.iter().flat_map(|r| r.answer_bytes.clone()).collect();
    answers.sort_unstable();
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for r in &runs {
        for (k, v) in &r.counts {
            *counts.entry(k.clone()).or_insert(0) += v;
        }
    }

    println!(
        "engine overhead per trial: {RUNS} runs x {} trials = {trials} trials, all finished; instant loopback provider (Anthropic wire format)",
        runs[0].trials
    );
    println!(
        "answers: the pack's golden records and known-wrong answers (the demo's script), {}-{} bytes, p50 {}; outcomes {}",
        answers[0],
        answers[answers.len() - 1],
        answers[answers.len() / 2],
        counts
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let source = match state.source {
        home::HomeSource::Flag => "--home",
        home::HomeSource::Env => "SKILLTRIAL_HOME",
        home::HomeSource::XdgDataHome => "$XDG_DATA_HOME/skilltrial",
        home::HomeSource::DefaultDataDir => "$HOME/.local/share/skilltrial",
    };
    println!(
        "state directory: {} ({source}); bench folder {} (removed afterwards)",
        state.path.display(),
        bench.path.display()
    );
    println!("filesystem: {fs_type} (mount point {mount_point})\n");
    println!(
        "{:<48} {:>9} {:>9} {:>9}",
        "measure", "p50 ms", "p90 ms", "max ms"
    );
    let row = |label: &str, v: &[f64]| {
        println!(
            "{:<48} {:>9.2} {:>9.2} {:>9.2}",
            label,
            percentile(v, 0.5),
            percentile(v, 0.9),
            v[v.len() - 1]
        );
    };
    row("runner overhead per trial (wall - model call)", &overhead);
    row("model call on loopback (excluded)", &calls);
    row(
        &format!("write 4 KiB + fsync on {fs_type} ({FSYNC_PROBES} probes)"),
        &fsync,
    );
    println!("\nfsyncs per trial: {fsync_line}");
    // The overhead less the time its fsyncs take on this disk: what is left is the runner's CPU
    // (SQL, hashing, JSON, checking) and syscalls other than fsync.
    match fsyncs {
        Some(n) => {
            let in_fsync = n * percentile(&fsync, 0.5);
            println!(
                "CPU part of the overhead (overhead - {n:.2} fsyncs x {:.2} ms, this disk's fsync p50): p50 {:.2} ms, p90 {:.2} ms",
                percentile(&fsync, 0.5),
                (percentile(&overhead, 0.5) - in_fsync).max(0.0),
                (percentile(&overhead, 0.9) - in_fsync).max(0.0)
            );
        }
        None => println!("CPU part of the overhead: not measured (no fsync count)"),
    }
    let cpu: Option<Duration> = runs.iter().map(|r| r.cpu).sum();
    match cpu {
        Some(cpu) => println!(
            "runner CPU time per trial (mean, user + system of every thread but the loopback server's, from /proc): {:.2} ms",
            cpu.as_secs_f64() * 1e3 / f64::from(trials)
        ),
        None => println!("runner CPU time per trial: not measured (no /proc)"),
    }
    let excluded: f64 = calls.iter().sum();
    let wall: f64 = runs.iter().map(|r| r.wall.as_secs_f64() * 1e3).sum();
    println!(
        "mean overhead per trial: {:.2} ms (whole runs: {} ms)",
        (wall - excluded) / f64::from(trials),
        runs.iter()
            .map(|r| format!("{:.0}", r.wall.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "targets, for reading only: < 5 ms at p50; the runner's own part <= 1 ms at p50 and <= 3 fsyncs per trial"
    );
    drop(bench);
    Ok(())
}

fn main() {
    let result = match std::env::var(CHILD_ENV) {
        Ok(mode) => child(&mode),
        Err(_) => parent(),
    };
    if let Err(e) = result {
        eprintln!("engine bench failed: {e}");
        std::process::exit(1);
    }
}

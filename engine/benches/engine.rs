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
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use skilltrial_core::profile::ProviderKind;
use skilltrial_engine::engine::RunOptions;
use skilltrial_engine::provider::{Anthropic, CallError, ModelRequest, ModelResponse, Provider};

mod support;

use support::{
    BenchDir, CHILD_ENV, Prepared, Workload, check_complete, child_dir, ctx, filesystem_of,
    fsyncs_per_trial, percentile, prepare, sorted, state_dir,
};

/// The plan every run of this bench executes: 54 trials against an instant model.
const WORKLOAD: Workload = Workload {
    pack: "solana-core@1.0.3",
    repetitions: 3,
    answer_delay: Duration::ZERO,
};

/// Timed runs of the whole plan (54 trials each): 162 samples for the percentiles.
const RUNS: u64 = 3;
/// fsync probes of a fresh 4 KiB file.
const FSYNC_PROBES: usize = 50;
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
    let summary = p.run(
        &provider,
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
    check_complete(&summary, requests)?;
    let planned = summary.planned as usize;
    if calls.len() != planned || marks.len() != planned {
        return Err(format!(
            "expected one call and one progress step per trial ({planned}): the provider made {}, progress advanced {} times",
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

fn child(mode: &str) -> Result<(), String> {
    let prepared = prepare(&child_dir()?, 1, &WORKLOAD)?;
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

fn parent() -> Result<(), String> {
    let (state, source) = state_dir()?;
    let bench = BenchDir::create(&state, "bench-engine")?;
    let (fs_type, mount_point) = filesystem_of(&bench.path);
    let fsync = fsync_latency(&bench.path)?;

    let mut runs = Vec::new();
    for n in 1..=RUNS {
        let dir = bench.path.join(format!("run-{n}"));
        runs.push(execute(prepare(&dir, n, &WORKLOAD)?)?);
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
        support::counts_line(&counts)
    );
    println!(
        "state directory: {} ({source}); bench folder {} (removed afterwards)",
        state.display(),
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
    support::main("engine", child, parent);
}

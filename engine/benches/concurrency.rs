//! Wall time of the 414-trial paired run (solana-core@2.0.0, 3 arms, 3 repetitions) against a
//! loopback model whose every answer takes 2 s, at 1, 4 and 8 requests in flight, with the
//! runner's own time per trial at each setting. Prints numbers, asserts nothing about speed.
//!
//! What makes the figures mean what they say:
//! - The model plays the demo's script (golden records and the pack's known-wrong answers), held
//!   for the answer time, so checking costs what it costs and the wait is a real socket wait.
//! - Journal and stores live in a bench folder inside the default state directory (a real disk,
//!   as in the `engine` bench), removed afterwards; its filesystem is printed.
//! - The runner's own time per trial is what the engine measured and journaled per attempt
//!   (`attempts.runner_us`, the sum the report calls `runner_time_us`), model wait excluded.
//! - fsyncs per trial are counted by `strace -f -c` around a child run at the largest N.
//! - A run that fails, ends other than `finished`, leaves a trial unchecked or unmeasured, or sends
//!   other than one request per trial fails the bench (exit 1).
//!
//! Run: `cargo bench -p skilltrial-engine --bench concurrency` (about 20 minutes, mostly idle).
//! Smaller: `SKILLTRIAL_BENCH_ANSWER_MS=200 SKILLTRIAL_BENCH_REPS=1
//! SKILLTRIAL_BENCH_CONCURRENCY=1,8 SKILLTRIAL_BENCH_FSYNCS=0`.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss
)]

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::{Duration, Instant};

use skilltrial_core::concurrency::Concurrency;
use skilltrial_engine::engine::RunOptions;
use skilltrial_engine::provider::Anthropic;

mod support;

use support::{BenchDir, CHILD_ENV, Prepared, Workload};

/// Milliseconds every answer takes (default 2000).
const ANSWER_MS_ENV: &str = "SKILLTRIAL_BENCH_ANSWER_MS";
/// The settings of N to time, comma-separated, in order (default `1,4,8`).
const CONCURRENCY_ENV: &str = "SKILLTRIAL_BENCH_CONCURRENCY";
/// Repetitions of the plan (default 3: 414 trials).
const REPS_ENV: &str = "SKILLTRIAL_BENCH_REPS";
/// `0` skips counting fsyncs (a whole extra run at the largest N).
const FSYNCS_ENV: &str = "SKILLTRIAL_BENCH_FSYNCS";

struct Settings {
    work: Workload,
    levels: Vec<Concurrency>,
    count_fsyncs: bool,
}

/// `name` parsed, or `default` when unset; a value that does not parse is refused by name.
fn knob<T: FromStr>(name: &str, default: T) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|e| format!("{name}=`{text}`: {e}")),
    }
}

fn settings() -> Result<Settings, String> {
    let levels: Vec<String> = match std::env::var(CONCURRENCY_ENV) {
        Err(_) => vec!["1", "4", "8"].into_iter().map(str::to_owned).collect(),
        Ok(text) => text.split(',').map(|s| s.trim().to_owned()).collect(),
    };
    let levels = levels
        .iter()
        .map(|s| s.parse().map_err(|e| format!("{CONCURRENCY_ENV}: {e}")))
        .collect::<Result<Vec<Concurrency>, String>>()?;
    let repetitions: u32 = knob(REPS_ENV, 3)?;
    if repetitions == 0 {
        return Err(format!("{REPS_ENV}=0: a run needs a repetition"));
    }
    Ok(Settings {
        work: Workload {
            pack: "solana-core@2.0.0",
            repetitions,
            answer_delay: Duration::from_millis(knob(ANSWER_MS_ENV, 2000)?),
        },
        levels,
        count_fsyncs: knob::<u8>(FSYNCS_ENV, 1)? != 0,
    })
}

/// One executed run at `n`.
struct Measured {
    n: Concurrency,
    trials: u32,
    wall: Duration,
    /// The runner's own time of each attempt, ms.
    runner_ms: Vec<f64>,
    counts: BTreeMap<String, u32>,
}

fn execute(mut p: Prepared, n: Concurrency) -> Result<Measured, String> {
    let provider = support::ctx(
        Anthropic::new(&p.server.url(), "bench-key".into(), Duration::from_secs(60)),
        "provider",
    )?;
    let start = Instant::now();
    let options = RunOptions {
        concurrency: n,
        ..RunOptions::default()
    };
    let summary = p.run(&provider, options, &mut |_| {})?;
    let wall = start.elapsed();
    support::check_complete(&summary, p.server.requests().len())
        .map_err(|e| format!("N = {n}: {e}"))?;
    let runner = support::ctx(p.journal.runner_times(&summary.run), "runner times")?;
    if runner.len() != summary.planned as usize {
        return Err(format!(
            "N = {n}: {} of {} attempts have the runner's time",
            runner.len(),
            summary.planned
        ));
    }
    Ok(Measured {
        n,
        trials: summary.planned,
        wall,
        runner_ms: support::sorted(runner.values().map(|us| *us as f64 / 1e3).collect()),
        counts: summary.counts,
    })
}

fn largest(levels: &[Concurrency]) -> Concurrency {
    levels.iter().copied().max().unwrap_or_default()
}

fn child(mode: &str) -> Result<(), String> {
    let s = settings()?;
    let prepared = support::prepare(&support::child_dir()?, 1, &s.work)?;
    match mode {
        "setup" => Ok(()),
        "run" => {
            let measured = execute(prepared, largest(&s.levels))?;
            println!("{}", measured.trials);
            Ok(())
        }
        other => Err(format!(
            "{CHILD_ENV}=`{other}` is neither `setup` nor `run`"
        )),
    }
}

fn parent() -> Result<(), String> {
    let s = settings()?;
    let (state, source) = support::state_dir()?;
    let bench = BenchDir::create(&state, "bench-concurrency")?;
    let (fs_type, mount_point) = support::filesystem_of(&bench.path);
    let answer = s.work.answer_delay;

    let mut runs = Vec::new();
    for (i, n) in s.levels.iter().enumerate() {
        // The same plan (seed 1) at every N: only the concurrency differs.
        let dir = bench.path.join(format!("run-{i}-n{n}"));
        let measured = execute(support::prepare(&dir, 1, &s.work)?, *n)?;
        eprintln!(
            "N = {n}: {:.1} s for {} trials",
            measured.wall.as_secs_f64(),
            measured.trials
        );
        runs.push(measured);
    }
    let fsyncs = if s.count_fsyncs {
        support::fsyncs_per_trial(&bench.path)?.1
    } else {
        format!("not measured ({FSYNCS_ENV}=0)")
    };

    let trials = runs.first().map_or(0, |r| r.trials);
    println!(
        "concurrency bench: {trials} trials ({}, 3 arms, {} repetitions); every answer takes {} ms on a loopback model (Anthropic wire format) playing the demo's script",
        s.work.pack,
        s.work.repetitions,
        answer.as_millis()
    );
    if let Some(r) = runs.first() {
        println!("outcomes (each run): {}", support::counts_line(&r.counts));
    }
    println!(
        "state directory: {} ({source}); bench folder {} (removed afterwards); filesystem {fs_type} (mount point {mount_point})\n",
        state.display(),
        bench.path.display()
    );
    println!(
        "{:>3} {:>10} {:>10} {:>13} {:>9} {:>9} {:>9} {:>9}",
        "N", "wall s", "ideal s", "wall/trial ms", "own mean", "own p50", "own p90", "own max"
    );
    for r in &runs {
        // The model alone: ceil(trials / N) rounds of one answer time.
        let rounds = r.trials.div_ceil(r.n.get());
        let ideal = answer.as_secs_f64() * f64::from(rounds);
        let mean = r.runner_ms.iter().sum::<f64>() / r.runner_ms.len() as f64;
        println!(
            "{:>3} {:>10.1} {:>10.1} {:>13.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            r.n,
            r.wall.as_secs_f64(),
            ideal,
            r.wall.as_secs_f64() * 1e3 / f64::from(r.trials),
            mean,
            support::percentile(&r.runner_ms, 0.5),
            support::percentile(&r.runner_ms, 0.9),
            r.runner_ms[r.runner_ms.len() - 1],
        );
    }
    println!(
        "(own: the runner's own time per trial in ms, journaled per attempt, model wait excluded)"
    );
    let at = |n: u32| runs.iter().find(|r| r.n.get() == n);
    if let (Some(one), Some(top)) = (at(1), runs.iter().max_by_key(|r| r.n))
        && top.n.get() > 1
    {
        println!(
            "\nwall N = 1 / wall N = {}: {:.2}",
            top.n,
            one.wall.as_secs_f64() / top.wall.as_secs_f64()
        );
    }
    println!("fsyncs per trial (at N = {}): {fsyncs}", largest(&s.levels));
    println!(
        "targets, for reading only: wall at N = 8 <= 1/6 of N = 1's; the runner's own time <= 2 ms per trial; <= 3 fsyncs per trial"
    );
    drop(bench);
    Ok(())
}

fn main() {
    support::main("concurrency", child, parent);
}

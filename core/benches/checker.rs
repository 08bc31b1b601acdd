//! Checker throughput per family, and the slowest single check per case: prints figures,
//! asserts nothing.
//!
//! For each released pack (solana-core@1.0.3 and the 46-task solana-core@2.0.0) and each family,
//! every golden answer and every known-wrong answer is checked repeatedly, both by the pure `checker::check` and by `Task::check` (the form the
//! runner uses: a worker thread under the 5 s limit). The target: < 1 ms per check.
//!
//! A family's mean mixes answers refused at once (schema violations) with full comparisons, which
//! would hide a slow case; so each case (task and answer) is also timed alone, and its mean and
//! its maximum single check are measured; the slowest cases of each pack are printed, with the
//! slowest case of the run last.
//! Run: `cargo bench -p skilltrial-runner --bench checker`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_precision_loss
)]

use std::time::{Duration, Instant};

use skilltrial_core::checker::{self, Expected, Family};
use skilltrial_core::pack;

const ROUNDS: u32 = 300;

/// Mean and maximum of one case over `ROUNDS` timed calls.
fn time_each(mut check: impl FnMut()) -> (Duration, Duration) {
    let mut total = Duration::ZERO;
    let mut max = Duration::ZERO;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        check();
        let took = start.elapsed();
        total += took;
        max = max.max(took);
    }
    (total / ROUNDS, max)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// How many of a pack's slowest cases are printed.
const SHOWN: usize = 12;

type Case = (String, String, Duration, Duration, Duration, Duration);

fn main() {
    println!("target: < 1 ms per check");
    let mut slowest: Vec<Case> = Vec::new();
    for id in ["solana-core@1.0.3", "solana-core@2.0.0"] {
        slowest.extend(bench_pack(id));
    }
    if let Some((task, name, _, _, limited_mean, limited_max)) = slowest.iter().max_by_key(|c| c.5)
    {
        println!(
            "\nslowest single check of the run: {task} / {name}: {:.1} µs (mean {:.1} µs), target < 1000 µs",
            us(*limited_max),
            us(*limited_mean)
        );
    }
}

/// Benches one pack; returns its slowest cases.
fn bench_pack(id: &str) -> Vec<Case> {
    let pack = pack::open(id).expect("embedded pack");
    println!(
        "\nchecker {} on {} ({} tasks; {} rounds over every golden and known-wrong answer)\n",
        checker::CHECKER_VERSION,
        pack.id(),
        pack.tasks.len(),
        ROUNDS
    );
    println!(
        "{:<15} {:>8} {:>16} {:>14} {:>20} {:>14}",
        "family",
        "answers",
        "pure checks/s",
        "pure µs/check",
        "limited checks/s",
        "limited µs/check"
    );
    let mut per_case: Vec<Case> = Vec::new();
    for family in [Family::Account, Family::Transaction, Family::TransferPlan] {
        let cases: Vec<(&pack::Task, String, String)> = pack
            .tasks
            .iter()
            .filter(|t| t.family == family)
            .flat_map(|t| {
                let golden = match t.reveal_expected() {
                    Expected::Golden(g) => g.to_string(),
                    Expected::Excluded { .. } => String::new(),
                };
                std::iter::once((t, "golden".to_owned(), golden)).chain(
                    t.known_wrong
                        .iter()
                        .map(move |w| (t, w.name.clone(), w.text())),
                )
            })
            .collect();
        let start = Instant::now();
        for _ in 0..ROUNDS {
            for (task, _, answer) in &cases {
                std::hint::black_box(checker::check(task.family, task.reveal_expected(), answer));
            }
        }
        let pure = start.elapsed().as_secs_f64() / (ROUNDS as usize * cases.len()) as f64;
        let start = Instant::now();
        for _ in 0..ROUNDS {
            for (task, _, answer) in &cases {
                std::hint::black_box(task.check(answer));
            }
        }
        let limited = start.elapsed().as_secs_f64() / (ROUNDS as usize * cases.len()) as f64;
        println!(
            "{:<15} {:>8} {:>16.0} {:>14.1} {:>20.0} {:>14.1}",
            family.as_str(),
            cases.len(),
            1.0 / pure,
            pure * 1e6,
            1.0 / limited,
            limited * 1e6
        );
        for (task, name, answer) in &cases {
            let (pure_mean, pure_max) = time_each(|| {
                std::hint::black_box(checker::check(task.family, task.reveal_expected(), answer));
            });
            let (limited_mean, limited_max) = time_each(|| {
                std::hint::black_box(task.check(answer));
            });
            per_case.push((
                task.id.clone(),
                name.clone(),
                pure_mean,
                pure_max,
                limited_mean,
                limited_max,
            ));
        }
    }

    per_case.sort_by_key(|c| std::cmp::Reverse(c.5));
    println!(
        "\n{} of {} cases, slowest first ({ROUNDS} single checks each; max is the slowest one):\n{:<28} {:<40} {:>10} {:>10} {:>13} {:>13}",
        SHOWN.min(per_case.len()),
        per_case.len(),
        "task",
        "answer",
        "pure mean",
        "pure max",
        "limited mean",
        "limited max"
    );
    for (task, name, pure_mean, pure_max, limited_mean, limited_max) in per_case.iter().take(SHOWN)
    {
        println!(
            "{:<28} {:<40} {:>7.1} µs {:>7.1} µs {:>10.1} µs {:>10.1} µs",
            task,
            name,
            us(*pure_mean),
            us(*pure_max),
            us(*limited_mean),
            us(*limited_max)
        );
    }
    let mean_of_means =
        per_case.iter().map(|c| us(c.4)).sum::<f64>() / per_case.len().max(1) as f64;
    println!(
        "mean over {} cases (limited): {mean_of_means:.1} µs",
        per_case.len()
    );
    per_case.truncate(SHOWN);
    per_case
}

//! Checker throughput per family: prints figures, asserts nothing.
//!
//! For each family, every golden answer and every known-wrong answer of the embedded pack is
//! checked repeatedly, both by the pure `checker::check` and by `Task::check` (the form the
//! runner uses: a worker thread under the 5 s limit). Issue 3's target: < 1 ms per check.
//! Run: `cargo bench -p skilltrial-runner --bench checker`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_precision_loss
)]

use std::time::Instant;

use skilltrial_runner::checker::{self, Expected, Family};
use skilltrial_runner::pack;

const ROUNDS: usize = 300;

fn main() {
    let pack = pack::open("solana-core@1.0.3").expect("embedded pack");
    println!(
        "checker {} on {} ({} rounds over every golden and known-wrong answer)",
        checker::CHECKER_VERSION,
        pack.id(),
        ROUNDS
    );
    println!("target: < 1 ms per check\n");
    println!(
        "{:<15} {:>8} {:>16} {:>14} {:>20} {:>14}",
        "family",
        "answers",
        "pure checks/s",
        "pure µs/check",
        "limited checks/s",
        "limited µs/check"
    );
    for family in [Family::Account, Family::Transaction, Family::TransferPlan] {
        let cases: Vec<(&pack::Task, String)> = pack
            .tasks
            .iter()
            .filter(|t| t.family == family)
            .flat_map(|t| {
                let golden = match t.reveal_expected() {
                    Expected::Golden(g) => g.to_string(),
                    Expected::Excluded { .. } => String::new(),
                };
                std::iter::once((t, golden)).chain(t.known_wrong.iter().map(move |w| (t, w.text())))
            })
            .collect();
        let start = Instant::now();
        for _ in 0..ROUNDS {
            for (task, answer) in &cases {
                std::hint::black_box(checker::check(task.family, task.reveal_expected(), answer));
            }
        }
        let pure = start.elapsed().as_secs_f64() / (ROUNDS * cases.len()) as f64;
        let start = Instant::now();
        for _ in 0..ROUNDS {
            for (task, answer) in &cases {
                std::hint::black_box(task.check(answer));
            }
        }
        let limited = start.elapsed().as_secs_f64() / (ROUNDS * cases.len()) as f64;
        println!(
            "{:<15} {:>8} {:>16.0} {:>14.1} {:>20.0} {:>14.1}",
            family.as_str(),
            cases.len(),
            1.0 / pure,
            pure * 1e6,
            1.0 / limited,
            limited * 1e6
        );
    }
}

//! The paired contrasts: complete pairs, the exact test per contrast, Holm's adjustment across
//! contrasts on exact fractions, and the sentences that state them.

use std::collections::BTreeMap;

use super::facts::Observation;
use super::{
    Difference, ExactFraction, Excluded, Pair, PairTest, Rate, TaskDifference, count_of,
    fraction_text, reduced,
};
use crate::manifest::{Arm, Manifest};
use crate::stats::{self, Fraction};

/// The contrasts of a manifest: (x, y) meaning x − y.
pub(super) fn contrasts(manifest: &Manifest) -> Vec<(Arm, Arm)> {
    let has = |arm| manifest.arms.iter().any(|a| a.arm == arm);
    let mut out = Vec::new();
    if has(Arm::A) {
        out.push((Arm::A, Arm::Baseline));
    }
    if has(Arm::B) {
        out.push((Arm::B, Arm::Baseline));
        out.push((Arm::B, Arm::A));
    }
    out
}

/// Every contrast of the manifest over the observations, Holm-adjusted across contrasts.
pub(super) fn pairs(manifest: &Manifest, observations: &[Observation<'_>]) -> Vec<Pair> {
    let mut results: Vec<Unadjusted> = contrasts(manifest)
        .into_iter()
        .map(|(x, y)| contrast(manifest, observations, x, y))
        .collect();
    // Holm across the contrasts that have a test.
    let present: Vec<Fraction> = results.iter().filter_map(|p| p.test_p).collect();
    let mut adjusted = holm_exact(&present).into_iter();
    for pair in &mut results {
        if pair.test_p.is_some() {
            pair.pair.test.holm_p = adjusted.next().map(ExactFraction::of);
        }
        pair.pair.statement = statement(&pair.pair);
    }
    results.into_iter().map(|p| p.pair).collect()
}

/// A contrast before Holm, with its exact p.
struct Unadjusted {
    pair: Pair,
    test_p: Option<Fraction>,
}

fn contrast(manifest: &Manifest, observations: &[Observation<'_>], x: Arm, y: Arm) -> Unadjusted {
    let find = |task: &str, rep: u32, arm: Arm| {
        observations.iter().find(|o| {
            o.trial.task == task && o.trial.repetition == rep && o.trial.arm == arm.as_str()
        })
    };
    let mut excluded = Vec::new();
    let (mut both, mut x_only, mut y_only, mut neither) = (0u64, 0u64, 0u64, 0u64);
    let mut per_task: BTreeMap<String, (i64, u64)> = BTreeMap::new();
    for task in &manifest.tasks {
        for rep in 1..=manifest.repetitions {
            let (Some(ox), Some(oy)) = (find(task, rep, x), find(task, rep, y)) else {
                continue;
            };
            if !(ox.executed() && oy.executed()) {
                let mut why = Vec::new();
                if !ox.executed() {
                    why.push(format!("{}: {}", x.as_str(), ox.outcome()));
                }
                if !oy.executed() {
                    why.push(format!("{}: {}", y.as_str(), oy.outcome()));
                }
                excluded.push(Excluded {
                    task: task.clone(),
                    repetition: rep,
                    reason: why.join(", "),
                });
                continue;
            }
            let entry = per_task.entry(task.clone()).or_insert((0, 0));
            entry.1 += 1;
            match (ox.passed(), oy.passed()) {
                (true, true) => both += 1,
                (true, false) => {
                    x_only += 1;
                    entry.0 += 1;
                }
                (false, true) => {
                    y_only += 1;
                    entry.0 -= 1;
                }
                (false, false) => neither += 1,
            }
        }
    }
    let complete_pairs = both + x_only + y_only + neither;
    let (x_pass, y_pass) = (both + x_only, both + y_only);
    let diffs: Vec<(i64, u64)> = per_task.values().copied().collect();
    let (name, p, units) = if manifest.repetitions == 1 {
        (
            "exact McNemar test over complete pairs",
            Some(stats::mcnemar_exact(x_only, y_only)),
            complete_pairs,
        )
    } else {
        (
            "exact sign-flip permutation test over per-task differences (task = unit)",
            stats::sign_flip(&diffs),
            diffs.len() as u64,
        )
    };
    let observed_difference = (complete_pairs > 0).then(|| {
        let d = x_pass as i64 - y_pass as i64;
        Difference {
            pairs: complete_pairs,
            x_minus_y_passes: d,
            value: format!("{:.6}", d as f64 / complete_pairs as f64),
        }
    });
    Unadjusted {
        pair: Pair {
            contrast: format!("{}-{}", x.as_str(), y.as_str()),
            x: x.as_str().to_owned(),
            y: y.as_str().to_owned(),
            complete_pairs,
            excluded,
            both_pass: both,
            x_only,
            y_only,
            neither,
            x_pass_rate: Rate::of(x_pass, complete_pairs),
            y_pass_rate: Rate::of(y_pass, complete_pairs),
            observed_difference,
            per_task: per_task
                .into_iter()
                .map(|(task, (n, d))| TaskDifference {
                    task,
                    x_minus_y_passes: n,
                    pairs: d,
                })
                .collect(),
            test: PairTest {
                name: name.to_owned(),
                units,
                p: p.map(ExactFraction::of),
                holm_p: None,
            },
            statement: String::new(),
        },
        test_p: p,
    }
}

/// Holm's step-down adjustment on exact fractions (input order kept): the adjusted value of the
/// i-th smallest of m p-values is max over j ≤ i of min(1, (m − j + 1) · p(j)), which stays a
/// fraction with the same denominator. Falls back to the float adjustment if a product would
/// not fit (never for the pack sizes we run).
pub(super) fn holm_exact(p: &[Fraction]) -> Vec<Fraction> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p[*a].value().total_cmp(&p[*b].value()));
    let mut adjusted = vec![Fraction { num: 1, den: 1 }; m];
    let mut running = Fraction { num: 0, den: 1 };
    for (rank, &i) in order.iter().enumerate() {
        let k = (m - rank) as u128;
        let scaled = match p[i].num.checked_mul(k) {
            Some(num) if num < p[i].den => reduced(Fraction { num, den: p[i].den }),
            Some(_) => Fraction { num: 1, den: 1 },
            None => return fallback_holm(p),
        };
        if scaled.value() > running.value() {
            running = scaled;
        }
        adjusted[i] = running;
    }
    adjusted
}

fn fallback_holm(p: &[Fraction]) -> Vec<Fraction> {
    let values: Vec<f64> = p.iter().map(|f| f.value()).collect();
    let den = 1_000_000_000_000u64;
    stats::holm(&values)
        .into_iter()
        .map(|h| Fraction {
            // h is in [0, 1], so the product fits and is non-negative.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            num: (h * den as f64).round() as u128,
            den: u128::from(den),
        })
        .collect()
}

/// One contrast in one or two sentences: the discordant counts, and the test's p with its Holm
/// adjustment. What the test can and cannot claim is said once for the whole report
/// ([`caveat`]), not once per contrast.
fn statement(pair: &Pair) -> String {
    let (xn, yn) = (pair.x.to_uppercase(), pair.y.to_uppercase());
    let mut s = format!(
        "Over {}, {xn} passed where {yn} failed {} and {yn} passed where {xn} failed {}.",
        count_of(pair.complete_pairs, "complete pair", "complete pairs"),
        count_of(pair.x_only, "time", "times"),
        count_of(pair.y_only, "time", "times"),
    );
    if let (Some(p), Some(h)) = (&pair.test.p, &pair.test.holm_p) {
        s.push_str(&format!(
            " The {} gives p = {} (Holm-adjusted {}).",
            pair.test.name, p.text, h.text
        ));
    }
    s
}

/// What the paired tests can and cannot claim, said once per report.
pub(super) fn caveat(manifest: &Manifest) -> String {
    let reps = manifest.repetitions;
    let mut s = if reps > 1 {
        "Each test asks whether a difference is consistent across these tasks, each task counted once; it says nothing about tasks outside this pack, and with few tasks even a perfect record cannot reach a small p.".to_owned()
    } else {
        "Each test asks whether discordant pairs lean one way more than chance would; it says nothing about tasks outside this pack.".to_owned()
    };
    let arms = manifest.arms.len();
    let power = stats::Power::of(manifest.tasks.len(), arms * arms.saturating_sub(1) / 2);
    match power {
        // Enough tasks for a consistent effect to show: say what the smallest p is.
        Some(power) if power.can_reach(0.05) => s.push_str(&format!(
            " Over {} tasks the smallest p a contrast can reach is {} ({} after Holm), so a small p here says a difference held across these tasks; each task's counts over {} are observed, not significance.",
            power.tasks,
            fraction_text(power.smallest_p),
            fraction_text(power.smallest_holm_p),
            count_of(u64::from(reps), "repetition", "repetitions")
        )),
        _ if reps <= 3 => s.push_str(&format!(
            " With {} these are counts and an observed difference, not significance.",
            count_of(u64::from(reps), "repetition", "repetitions")
        )),
        _ => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(num: u128, den: u128) -> Fraction {
        Fraction { num, den }
    }

    #[test]
    fn holm_on_fractions_matches_the_float_adjustment() {
        // The 54-trial demo's sign-flip p-values (a−baseline, b−baseline, b−a).
        let p = [f(1, 8), f(1, 32), f(3, 8)];
        let adjusted = holm_exact(&p);
        assert_eq!(adjusted, vec![f(1, 4), f(3, 32), f(3, 8)]);
        let floats = stats::holm(&p.map(Fraction::value));
        for (exact, float) in adjusted.iter().zip(floats) {
            assert!((exact.value() - float).abs() < 1e-12);
        }
        // Capped at 1.
        assert_eq!(holm_exact(&[f(1, 2), f(3, 4)]), vec![f(1, 1), f(1, 1)]);
    }
}

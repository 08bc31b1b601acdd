//! The per-task table (passes per arm, majority verdicts) and the first screen's fixes and
//! breaks derived from it.

use std::collections::BTreeMap;

use super::facts::Observation;
use super::{Changes, FixesBreaks, TaskArm, TaskRow, Verdicts};
use crate::manifest::{Arm, Manifest};

/// One row per task of the manifest.
pub(super) fn task_table(
    manifest: &Manifest,
    observations: &[Observation<'_>],
    families: &BTreeMap<String, String>,
) -> Vec<TaskRow> {
    let rate_of = |task: &str, arm: Arm| -> Option<(u64, u64)> {
        let obs: Vec<&Observation<'_>> = observations
            .iter()
            .filter(|o| o.trial.task == task && o.trial.arm == arm.as_str() && o.executed())
            .collect();
        (!obs.is_empty() || manifest.arms.iter().any(|a| a.arm == arm)).then(|| {
            (
                obs.iter().filter(|o| o.passed()).count() as u64,
                obs.len() as u64,
            )
        })
    };
    manifest
        .tasks
        .iter()
        .map(|task| {
            let mut arms = BTreeMap::new();
            let mut passes: BTreeMap<Arm, Option<bool>> = BTreeMap::new();
            for spec in &manifest.arms {
                if let Some((pass, executed)) = rate_of(task, spec.arm) {
                    let counts = TaskArm { pass, executed };
                    arms.insert(spec.arm.as_str().to_owned(), counts);
                    passes.insert(spec.arm, counts.majority());
                }
            }
            let passed = |arm: Arm| passes.get(&arm).copied().flatten();
            let verdict = |skill: Arm| -> Option<String> {
                match (passed(Arm::Baseline), passed(skill)) {
                    (Some(false), Some(true)) => Some("skill needed"),
                    (Some(true), Some(true)) => Some("no-op"),
                    (Some(true), Some(false)) => Some("broken"),
                    (Some(false), Some(false)) => Some("still failing"),
                    _ => None,
                }
                .map(str::to_owned)
            };
            let b_vs_a = || -> Option<String> {
                match (passed(Arm::A), passed(Arm::B)) {
                    (Some(true), Some(false)) => Some("regression"),
                    (Some(false), Some(true)) => Some("improvement"),
                    (Some(x), Some(y)) if x == y => Some("same"),
                    _ => None,
                }
                .map(str::to_owned)
            };
            let has = |arm: Arm| passes.contains_key(&arm);
            TaskRow {
                task: task.clone(),
                family: families.get(task).cloned(),
                arms,
                verdicts: Verdicts {
                    a: has(Arm::A).then(|| verdict(Arm::A)),
                    b: has(Arm::B).then(|| verdict(Arm::B)),
                    b_vs_a: has(Arm::B).then(b_vs_a),
                },
            }
        })
        .collect()
}

/// The first screen's answer: per contrast, the tasks the first arm fixes (fails → passes) and
/// breaks (passes → fails) against the second, by the per-task majority verdicts. A contrast
/// whose verdict no task has is absent.
pub(super) fn changes(tasks: &[TaskRow]) -> Changes {
    let lists = |verdict: &str, fix: &str, brk: &str| -> Option<FixesBreaks> {
        if !tasks.iter().any(|t| t.verdicts.has(verdict)) {
            return None;
        }
        let pick = |want: &str| -> Vec<String> {
            tasks
                .iter()
                .filter(|t| t.verdicts.get(verdict) == Some(want))
                .map(|t| t.task.clone())
                .collect()
        };
        Some(FixesBreaks {
            fixes: pick(fix),
            breaks: pick(brk),
        })
    };
    Changes {
        b_vs_a: lists("b_vs_a", "improvement", "regression"),
        b_vs_baseline: lists("b", "skill needed", "broken"),
        a_vs_baseline: lists("a", "skill needed", "broken"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Report;
    use super::*;

    fn row(task: &str, a: Option<&str>) -> TaskRow {
        TaskRow {
            task: task.to_owned(),
            family: None,
            arms: BTreeMap::new(),
            verdicts: Verdicts {
                a: Some(a.map(str::to_owned)),
                b: Some(None),
                b_vs_a: Some(None),
            },
        }
    }

    #[test]
    fn compared_tasks_counts_only_tasks_with_a_verdict_per_contrast() {
        // A partial run: one task has results in baseline and A, none in B.
        let tasks = vec![row("t1", Some("no-op")), row("t2", None)];
        let got = Report::compared_tasks_of(&tasks);
        assert_eq!(got["a_vs_baseline"], 1);
        assert_eq!(got["b_vs_baseline"], 0);
        assert_eq!(got["b_vs_a"], 0);
        // Every contrast with a verdict member is listed, even with no task in it.
        let changes = changes(&tasks);
        assert_eq!(changes.b_vs_a, Some(FixesBreaks::default()));
        assert!(changes.a_vs_baseline.is_some());
    }
}

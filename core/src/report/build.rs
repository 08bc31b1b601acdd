//! The builder: plain run facts (what the engine read from its journal and stores) in, a typed
//! [`Report`] out. Pure: no journal, no store, no clock.

use std::collections::{BTreeMap, BTreeSet};

use super::facts::{AttemptFacts, Observation, RunFacts, TrialFacts};
use super::{
    ArmSummary, Attempt, CheckerIdentity, Comparability, Consistency, Cost, FORMAT, GeneratedBy,
    Leader, ModelIdentity, Rate, Report, Run, SENSITIVE_WARNING, Summary, Trial, TrialOutcome,
    UnknownHolding, activation, pairs, tasks,
};
use crate::manifest::Manifest;
use crate::outcome::Outcome;
use crate::state::AttemptState;

/// Builds the (unsealed) report of a run.
pub fn build(facts: RunFacts) -> Report {
    let RunFacts {
        mut run,
        manifest_hash,
        manifest,
        families,
        trials,
        mut attempts,
        spent_usd_micros,
        reserved_usd_micros,
        verdicts_by,
        readable_files,
    } = facts;
    for a in &mut attempts {
        a.record.answer_purged = a.record.answer_sha256.is_some() && a.record.answer.is_none();
    }
    let mut latest: BTreeMap<u32, &Attempt> = BTreeMap::new();
    for a in &attempts {
        latest.insert(a.trial_index, &a.record);
    }
    let observations: Vec<Observation<'_>> = trials
        .iter()
        .map(|t| Observation {
            trial: t,
            latest: latest.get(&t.index).copied(),
        })
        .collect();
    let complete = observations.iter().all(Observation::executed);
    run.complete = complete;

    let pairs = pairs::pairs(&manifest, &observations);
    let tasks = tasks::task_table(&manifest, &observations, &families);
    let mut arms = arm_summaries(&manifest, &observations);
    for arm in &mut arms {
        arm.consistency = Some(Consistency::of(
            manifest.repetitions,
            tasks.iter().filter_map(|t| t.arms.get(&arm.arm)),
        ));
    }
    let summary = Summary {
        planned: trials.len() as u64,
        executed: observations.iter().filter(|o| o.executed()).count() as u64,
        complete,
        leader: complete.then(|| leader(&arms)),
        arms,
        changes: tasks::changes(&tasks),
        caveat: pairs::caveat(&manifest),
    };
    let comparability = comparability(&manifest, &attempts, verdicts_by);
    let cost = cost(
        &manifest,
        &run,
        &trials,
        &attempts,
        spent_usd_micros,
        reserved_usd_micros,
    );
    let trial_records = observations
        .iter()
        .map(|obs| Trial {
            index: obs.trial.index,
            task: obs.trial.task.clone(),
            family: families.get(&obs.trial.task).cloned(),
            arm: obs.trial.arm.clone(),
            repetition: obs.trial.repetition,
            outcome: obs.outcome(),
            reasons: obs.latest.map(|a| a.reasons.clone()).unwrap_or_default(),
            attempts: attempts
                .iter()
                .filter(|a| a.trial_index == obs.trial.index)
                .map(|a| a.record.clone())
                .collect(),
            evidence: obs.trial.evidence.clone(),
        })
        .collect();
    let activation = activation::activation(&manifest, &observations, &readable_files);
    let scripted = manifest.model.scripted;
    Report {
        format: FORMAT.to_owned(),
        generated_by: GeneratedBy {
            app: "skilltrial".to_owned(),
            version: crate::APP_VERSION.to_owned(),
        },
        warning: SENSITIVE_WARNING.to_owned(),
        run,
        manifest_hash,
        model_label: if scripted {
            "scripted (not a real model)"
        } else {
            "real model"
        }
        .to_owned(),
        comparability,
        summary,
        pairs,
        tasks,
        cost,
        trials: trial_records,
        activation,
        manifest,
        // Set by the hosted runner once its batches are settled, before the report is sealed.
        settlement: None,
        report_hash: None,
    }
}

/// Per arm of the manifest: the observations counted by outcome, and the success rate.
fn arm_summaries(manifest: &Manifest, observations: &[Observation<'_>]) -> Vec<ArmSummary> {
    manifest
        .arms
        .iter()
        .map(|spec| {
            let arm = spec.arm.as_str();
            let mine: Vec<&Observation<'_>> =
                observations.iter().filter(|o| o.trial.arm == arm).collect();
            let mut counts: BTreeMap<TrialOutcome, u64> = BTreeMap::new();
            for o in &mine {
                *counts.entry(o.outcome()).or_insert(0) += 1;
            }
            let executed: u64 = counts
                .iter()
                .filter(|(o, _)| o.is_executed())
                .map(|(_, n)| n)
                .sum();
            let count = |o: Outcome| counts.get(&TrialOutcome::Done(o)).copied().unwrap_or(0);
            ArmSummary {
                arm: arm.to_owned(),
                bundle: spec.bundle.clone(),
                planned: mine.len() as u64,
                executed,
                pass: count(Outcome::Pass),
                fail: count(Outcome::Fail),
                invalid_output: count(Outcome::InvalidOutput),
                unsupported_case: count(Outcome::UnsupportedCase),
                infrastructure_error: count(Outcome::InfrastructureError),
                unknown: count(Outcome::Unknown),
                interrupted: count(Outcome::Interrupted),
                not_run: count(Outcome::NotRun),
                pending: counts.get(&TrialOutcome::Pending).copied().unwrap_or(0),
                success: Rate::of(count(Outcome::Pass), executed),
                consistency: None,
            }
        })
        .collect()
}

/// The arm with the most passes (a complete run only), or the tie in a sentence.
fn leader(arms: &[ArmSummary]) -> Leader {
    let best = arms.iter().map(|a| a.pass).max().unwrap_or(0);
    let top: Vec<&str> = arms
        .iter()
        .filter(|a| a.pass == best)
        .map(|a| a.arm.as_str())
        .collect();
    if let [only] = top[..] {
        Leader {
            arm: Some(only.to_owned()),
            note: "an observed count in a complete run, not a significance claim".to_owned(),
        }
    } else {
        let names: Vec<String> = top.iter().map(|a| a.to_uppercase()).collect();
        Leader {
            arm: None,
            note: format!("Tie between {}.", names.join(" and ")),
        }
    }
}

fn comparability(
    manifest: &Manifest,
    attempts: &[AttemptFacts],
    verdicts_by: Vec<CheckerIdentity>,
) -> Comparability {
    let sorted = |pick: fn(&Attempt) -> Option<&String>| -> Vec<String> {
        attempts
            .iter()
            .filter_map(|a| pick(&a.record).cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    Comparability {
        model: ModelIdentity {
            provider: manifest.model.provider,
            model: manifest.model.model.clone(),
            revision: manifest.model.revision.clone(),
            scripted: manifest.model.scripted,
            reported_models: sorted(|a| a.model_reported.as_ref()),
            system_fingerprints: sorted(|a| a.system_fingerprint.as_ref()),
        },
        pack: manifest.pack.clone(),
        checker: CheckerIdentity {
            version: manifest.checker.version.clone(),
            source_sha256: manifest.checker.source_sha256.clone(),
        },
        verdicts_by,
        sampling: manifest.sampling.clone(),
        prompt_template_sha256: manifest.prompt.template_sha256.clone(),
    }
}

fn cost(
    manifest: &Manifest,
    run: &Run,
    trials: &[TrialFacts],
    attempts: &[AttemptFacts],
    spent_usd_micros: u64,
    reserved_usd_micros: u64,
) -> Cost {
    let spent_by_arm = manifest
        .arms
        .iter()
        .map(|spec| {
            let arm = spec.arm.as_str();
            let spent = attempts
                .iter()
                .filter(|a| {
                    trials
                        .iter()
                        .any(|t| t.index == a.trial_index && t.arm == arm)
                })
                .filter_map(|a| a.record.spent_usd_micros)
                .sum();
            (arm.to_owned(), spent)
        })
        .collect();
    let records = || attempts.iter().map(|a| &a.record);
    // The runner's own time: the sum of what the engine measured per attempt (model wait
    // excluded), never derived from the wall clock, which counts pauses between invocations.
    let runner_us: u64 = records().filter_map(|a| a.runner_us).sum();
    Cost {
        cap_usd_micros: manifest.budget.cap_usd_micros,
        spent_usd_micros,
        reserved_usd_micros,
        spent_by_arm_usd_micros: spent_by_arm,
        input_tokens: records().filter_map(|a| a.input_tokens).sum(),
        output_tokens: records().filter_map(|a| a.output_tokens).sum(),
        model_latency_ms: records()
            .filter(|a| a.state == AttemptState::Result)
            .filter_map(|a| a.latency_ms)
            .sum(),
        run_wall_ms: match (run.started_at_ms, run.finished_at_ms) {
            (Some(s), Some(f)) => u64::try_from(f.saturating_sub(s)).ok(),
            _ => None,
        },
        runner_time_ms: runner_us / 1000,
        runner_time_us: runner_us,
        runner_time_unmeasured_attempts: attempts
            .iter()
            .filter(|a| a.dispatched && a.record.runner_us.is_none())
            .count() as u64,
        unknown_holding_reserve: records()
            .filter(|a| a.state == AttemptState::Unknown)
            .map(|a| UnknownHolding {
                attempt: a.id.clone(),
                reserved_usd_micros: a.reserved_usd_micros,
            })
            .collect(),
    }
}

/// The report its own trials give: [`build`] again on the facts the report states — its run,
/// manifest, trials and their attempts, the ledger's money, the checkers — with what the trials
/// do not decide (format, generator, warning, settlement, hash; when each attempt was dispatched)
/// kept as stated. Every member the builder derives (the summary and its leader, the pairs, the
/// task table, each trial's outcome and reasons, the cost's sums, the comparability's reported
/// models) is then the trials' own: a report whose derived members differ from [`rederive`]'s
/// was edited, however it was sealed.
pub fn rederive(report: &Report) -> Report {
    let mut rebuilt = build(facts_of(report));
    rebuilt.format.clone_from(&report.format);
    rebuilt.generated_by = report.generated_by.clone();
    rebuilt.warning.clone_from(&report.warning);
    rebuilt.settlement.clone_from(&report.settlement);
    rebuilt.report_hash.clone_from(&report.report_hash);
    rebuilt.cost.runner_time_unmeasured_attempts = report.cost.runner_time_unmeasured_attempts;
    // The file lists attempts by trial, the journal in dispatch order: the reserve still held is
    // the same set in either order.
    let mut stated = report.cost.unknown_holding_reserve.clone();
    let mut derived = rebuilt.cost.unknown_holding_reserve.clone();
    stated.sort_by(|a, b| a.attempt.cmp(&b.attempt));
    derived.sort_by(|a, b| a.attempt.cmp(&b.attempt));
    if stated == derived {
        rebuilt
            .cost
            .unknown_holding_reserve
            .clone_from(&report.cost.unknown_holding_reserve);
    }
    // A report written before consistency existed keeps its hash without it.
    for (arm, stated) in rebuilt.summary.arms.iter_mut().zip(&report.summary.arms) {
        if stated.consistency.is_none() && arm.arm == stated.arm {
            arm.consistency = None;
        }
    }
    rebuilt
}

/// The facts a report states: its run, manifest, trials with their evidence and attempts, the
/// ledger's money, the checkers, and the readable file lists its activation was given.
pub(crate) fn facts_of(report: &Report) -> RunFacts {
    RunFacts {
        run: report.run.clone(),
        manifest_hash: report.manifest_hash.clone(),
        manifest: report.manifest.clone(),
        families: report
            .trials
            .iter()
            .filter_map(|t| Some((t.task.clone(), t.family.clone()?)))
            .collect(),
        trials: report
            .trials
            .iter()
            .map(|t| TrialFacts {
                index: t.index,
                task: t.task.clone(),
                arm: t.arm.clone(),
                repetition: t.repetition,
                evidence: t.evidence.clone(),
            })
            .collect(),
        attempts: report
            .trials
            .iter()
            .flat_map(|t| {
                t.attempts.iter().map(|a| AttemptFacts {
                    trial_index: t.index,
                    // Only the count of dispatched attempts without a runner time depends on
                    // it, and that count is kept as stated below.
                    dispatched: false,
                    record: a.clone(),
                })
            })
            .collect(),
        spent_usd_micros: report.cost.spent_usd_micros,
        reserved_usd_micros: report.cost.reserved_usd_micros,
        verdicts_by: report.comparability.verdicts_by.clone(),
        // The bundles' file lists are the run's input, as stated.
        readable_files: report
            .activation
            .iter()
            .flat_map(|a| &a.arms)
            .filter_map(|a| Some((a.arm.clone(), a.readable_files.clone()?)))
            .collect(),
    }
}

/// One member where a report differs from what its trials give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derivation {
    /// The member's path, as `summary.arms[1].pass`.
    pub path: String,
    /// What the report states there (JSON; `absent` when it has no such member).
    pub stated: String,
    /// What its trials give (JSON; `absent` likewise).
    pub derived: String,
}

impl Derivation {
    /// The difference in words with each side cut to at most 120 characters (a member may be a
    /// long text).
    pub fn shown(&self) -> String {
        let cut = |s: &str| {
            if s.chars().count() > 120 {
                format!("{}…", s.chars().take(120).collect::<String>())
            } else {
                s.to_owned()
            }
        };
        format!(
            "{}: the report states {}, its trials give {}",
            self.path,
            cut(&self.stated),
            cut(&self.derived)
        )
    }
}

impl std::fmt::Display for Derivation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the report states {}, its trials give {}",
            self.path, self.stated, self.derived
        )
    }
}

/// Where `report` differs from [`rederive`]: every leaf member that differs, in document order.
pub fn derivations(report: &Report) -> Result<Vec<Derivation>, super::ReportError> {
    let stated = report.to_value()?;
    let derived = rederive(report).to_value()?;
    let mut out = Vec::new();
    differences(String::new(), Some(&stated), Some(&derived), &mut out);
    Ok(out)
}

fn differences(
    path: String,
    stated: Option<&serde_json::Value>,
    derived: Option<&serde_json::Value>,
    out: &mut Vec<Derivation>,
) {
    use serde_json::Value;
    if stated == derived {
        return;
    }
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (stated, derived) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                differences(join(key), a.get(key), b.get(key), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(format!("{path}[{i}]"), Some(x), Some(y), out);
            }
        }
        _ => {
            let said = |v: Option<&Value>| v.map_or_else(|| "absent".to_owned(), Value::to_string);
            out.push(Derivation {
                path,
                stated: said(stated),
                derived: said(derived),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::TaskArm;

    fn arm(id: &str, pass: u64) -> ArmSummary {
        ArmSummary {
            arm: id.to_owned(),
            bundle: None,
            planned: 3,
            executed: 3,
            pass,
            fail: 3 - pass,
            invalid_output: 0,
            unsupported_case: 0,
            infrastructure_error: 0,
            unknown: 0,
            interrupted: 0,
            not_run: 0,
            pending: 0,
            success: Rate::of(pass, 3),
            consistency: None,
        }
    }

    #[test]
    fn consistency_counts_only_tasks_with_every_repetition_scored() {
        let counts = [
            TaskArm {
                pass: 3,
                executed: 3,
            }, // every repetition: pass^3 and pass@3
            TaskArm {
                pass: 1,
                executed: 3,
            }, // one of three: pass@3 only
            TaskArm {
                pass: 0,
                executed: 3,
            }, // none
            TaskArm {
                pass: 2,
                executed: 2,
            }, // a repetition unscored: not counted
        ];
        let c = Consistency::of(3, counts.iter());
        assert_eq!((c.k, c.tasks), (3, 3));
        let every = c.pass_hat_k.as_ref().unwrap();
        let any = c.pass_at_k.as_ref().unwrap();
        assert_eq!((every.num, every.den, any.num, any.den), (1, 3, 2, 3));
        assert_eq!(c.text(), "pass^3 1/3 · pass@3 2/3 tasks");
        let none = Consistency::of(3, counts[3..].iter());
        assert_eq!(
            (none.tasks, &none.pass_hat_k, &none.pass_at_k),
            (0, &None, &None)
        );
        assert_eq!(
            none.text(),
            "pass^3 and pass@3 wait for a task with all 3 repetitions scored"
        );
        // With one repetition both are the success rate over tasks.
        let one = Consistency::of(
            1,
            [
                TaskArm {
                    pass: 1,
                    executed: 1,
                },
                TaskArm {
                    pass: 0,
                    executed: 1,
                },
            ]
            .iter(),
        );
        assert_eq!(one.pass_hat_k, one.pass_at_k);
    }

    #[test]
    fn a_tie_names_the_arms_in_a_sentence() {
        assert_eq!(
            leader(&[arm("a", 3), arm("b", 3)]),
            Leader {
                arm: None,
                note: "Tie between A and B.".to_owned()
            }
        );
    }
}

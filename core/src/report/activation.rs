//! Activation: what progressive delivery showed about loading, per arm and per task, summed from
//! each trial's [`TrialEvidence`] (docs/reports.md, "Activation").
//!
//! **Invariants:**
//! - Computed from the trials' evidence and the readable file lists the builder is given, and
//!   nothing else: [`super::rederive`] gives the same member from the report's own trials.
//! - A trial counts once per arm: "loaded" is the arm's own skill for A and B (the evidence's
//!   `loaded`), and any skill for the baseline, whose catalog holds only other skills.
//! - Rates are [`Rate`]s (exact counts, six-place strings), never floats in the JSON.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::Rate;
use super::facts::Observation;
use crate::bundle::{Bundle, FileKind};
use crate::delivery::{ToolError, TrialEvidence};
use crate::manifest::Manifest;

/// What progressive delivery showed about loading. Absent (not `null`) from a report whose trials
/// carry no evidence, so an inline report keeps its bytes and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Activation {
    /// One per arm of the manifest, in its order.
    pub arms: Vec<ArmActivation>,
    /// One per task of the manifest, in its order.
    pub tasks: Vec<TaskActivation>,
}

/// One arm's loading, over its trials with evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArmActivation {
    /// The arm's id: `baseline`, `a`, `b`.
    pub arm: String,
    /// The arm's own skill (its bundle's name); `null` for the baseline.
    pub skill: Option<String>,
    /// Trials with evidence: progressive trials with at least one answered turn (a trial whose
    /// only request was lost, refused or never sent shows nothing about loading).
    pub trials: u64,
    /// Trials that loaded the arm's own skill; for the baseline, trials that loaded any skill
    /// (its catalog lists only other skills).
    pub loaded: u64,
    /// `loaded` ÷ `trials` with its Wilson 95% interval; `null` with no trial.
    pub rate: Option<Rate>,
    /// The median turn (1-based) at which the arm's own skill was loaded, over the trials that
    /// loaded it, as a decimal (`"1"`, `"1.5"`); `null` when none did, and for the baseline.
    pub median_load_turn: Option<String>,
    /// Failed tool calls, summed over the trials, by reason (sorted by reason, none at zero).
    pub tool_errors: Vec<ToolErrorTotal>,
    /// Trials that still called a tool in their last allowed turn.
    pub turn_limit: u64,
    /// Bytes of system text with the catalog, as each trial's evidence states them, summed.
    pub catalog_bytes: u64,
    /// Bytes of `load_skill` replies (the instructions), summed over the trials.
    pub instructions_bytes: u64,
    /// Bytes of `read_skill_resource` replies (the references), summed over the trials.
    pub resources_bytes: u64,
    /// The readable files of the arm's own bundle (text files other than SKILL.md, the ones
    /// `read_skill_resource` serves), as the run gave them; `null` for the baseline, or when the
    /// run did not record them.
    pub readable_files: Option<Vec<String>>,
    /// Those of `readable_files` no trial of the arm read, in their order; `null` when
    /// `readable_files` is.
    pub never_read: Option<Vec<String>>,
    /// Other skills loaded in trials that did not load the arm's own (for the baseline: every
    /// skill loaded), by name, with the number of such trials.
    pub others_instead: Vec<OtherSkill>,
}

/// Failed tool calls of one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolErrorTotal {
    pub error: ToolError,
    /// Calls that failed for this reason.
    pub count: u64,
}

/// Another skill that was loaded instead of the arm's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OtherSkill {
    /// The other skill's name, as listed in the catalog.
    pub skill: String,
    /// Trials that loaded it without loading the arm's own skill.
    pub trials: u64,
}

/// One task's loading per arm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskActivation {
    pub task: String,
    /// Per arm of the manifest with a trial of this task carrying evidence.
    pub arms: BTreeMap<String, TaskLoads>,
}

/// A task's trials with evidence in one arm, by loading and outcome; they add up to the trials
/// with evidence.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct TaskLoads {
    /// Loaded (as [`ArmActivation::loaded`] counts it) and passed.
    pub loaded_passed: u64,
    /// Loaded, and scored as anything but a pass.
    pub loaded_failed: u64,
    /// Loaded, with no scored answer (an infrastructure error, unknown, pending, ...).
    pub loaded_unscored: u64,
    /// Not loaded, whatever the outcome.
    pub not_loaded: u64,
}

/// The readable files of `bundle` as [`ArmActivation::readable_files`] lists them: every file
/// `read_skill_resource` would return (prompt text other than SKILL.md), in the bundle's order.
/// What the engine passes to the builder in [`super::RunFacts::readable_files`].
pub fn readable_files(bundle: &Bundle) -> Vec<String> {
    bundle
        .files
        .iter()
        .filter(|f| f.kind != FileKind::Skill && f.kind.is_prompt_text())
        .map(|f| f.path.clone())
        .collect()
}

/// Whether a trial of `arm` (whose own skill is `skill`) loaded what the arm counts.
fn loaded(skill: Option<&str>, evidence: &TrialEvidence) -> bool {
    match skill {
        Some(_) => evidence.loaded,
        None => !evidence.skills_loaded.is_empty(),
    }
}

/// The activation of a run, `None` when no trial carries evidence.
pub(super) fn activation(
    manifest: &Manifest,
    observations: &[Observation<'_>],
    readable: &BTreeMap<String, Vec<String>>,
) -> Option<Activation> {
    if !observations.iter().any(|o| o.trial.evidence.is_some()) {
        return None;
    }
    let skill_of = |arm: &str| -> Option<&str> {
        manifest
            .arms
            .iter()
            .find(|a| a.arm.as_str() == arm)
            .and_then(|a| a.bundle.as_ref())
            .map(|b| b.name.as_str())
    };
    let arms = manifest
        .arms
        .iter()
        .map(|spec| {
            let arm = spec.arm.as_str();
            let skill = skill_of(arm);
            let evidence: Vec<&TrialEvidence> = observations
                .iter()
                .filter(|o| o.trial.arm == arm)
                .filter_map(|o| o.trial.evidence.as_ref())
                .collect();
            arm_activation(arm, skill, &evidence, readable.get(arm))
        })
        .collect();
    let tasks = manifest
        .tasks
        .iter()
        .map(|task| {
            let mut arms = BTreeMap::new();
            for spec in &manifest.arms {
                let arm = spec.arm.as_str();
                let skill = skill_of(arm);
                for o in observations
                    .iter()
                    .filter(|o| &o.trial.task == task && o.trial.arm == arm)
                {
                    let Some(evidence) = &o.trial.evidence else {
                        continue;
                    };
                    let loads: &mut TaskLoads = arms.entry(arm.to_owned()).or_default();
                    let count = if !loaded(skill, evidence) {
                        &mut loads.not_loaded
                    } else if o.passed() {
                        &mut loads.loaded_passed
                    } else if o.executed() {
                        &mut loads.loaded_failed
                    } else {
                        &mut loads.loaded_unscored
                    };
                    *count = count.saturating_add(1);
                }
            }
            TaskActivation {
                task: task.clone(),
                arms,
            }
        })
        .collect();
    Some(Activation { arms, tasks })
}

fn arm_activation(
    arm: &str,
    skill: Option<&str>,
    evidence: &[&TrialEvidence],
    readable: Option<&Vec<String>>,
) -> ArmActivation {
    let trials = evidence.len() as u64;
    let loaded_count = evidence.iter().filter(|e| loaded(skill, e)).count() as u64;
    let mut turns: Vec<u32> = if skill.is_some() {
        evidence.iter().filter_map(|e| e.loaded_at_turn).collect()
    } else {
        Vec::new()
    };
    turns.sort_unstable();
    let mut errors: BTreeMap<ToolError, u64> = BTreeMap::new();
    let mut others: BTreeMap<&str, u64> = BTreeMap::new();
    let mut read: BTreeSet<&str> = BTreeSet::new();
    let (mut catalog, mut instructions, mut resources) = (0u64, 0u64, 0u64);
    for e in evidence {
        for count in &e.tool_errors {
            let total = errors.entry(count.error).or_default();
            *total = total.saturating_add(u64::from(count.count));
        }
        if !loaded(skill, e) || skill.is_none() {
            let names: BTreeSet<&str> = e
                .skills_loaded
                .iter()
                .map(String::as_str)
                .filter(|name| Some(*name) != skill)
                .collect();
            for name in names {
                let n = others.entry(name).or_default();
                *n = n.saturating_add(1);
            }
        }
        if let Some(skill) = skill {
            read.extend(
                e.reads
                    .iter()
                    .filter(|r| r.skill == skill)
                    .map(|r| r.path.as_str()),
            );
        }
        catalog = catalog.saturating_add(e.catalog_bytes);
        instructions = instructions.saturating_add(e.instructions_bytes);
        resources = resources.saturating_add(e.resources_bytes);
    }
    // The baseline has no bundle of its own to read.
    let readable_files = readable.filter(|_| skill.is_some()).cloned();
    let never_read = readable_files.as_ref().map(|files| {
        files
            .iter()
            .filter(|f| !read.contains(f.as_str()))
            .cloned()
            .collect()
    });
    ArmActivation {
        arm: arm.to_owned(),
        skill: skill.map(str::to_owned),
        trials,
        loaded: loaded_count,
        rate: Rate::of(loaded_count, trials),
        median_load_turn: median(&turns),
        tool_errors: errors
            .into_iter()
            .filter(|(_, count)| *count > 0)
            .map(|(error, count)| ToolErrorTotal { error, count })
            .collect(),
        turn_limit: evidence.iter().filter(|e| e.turn_limit).count() as u64,
        catalog_bytes: catalog,
        instructions_bytes: instructions,
        resources_bytes: resources,
        readable_files,
        never_read,
        others_instead: others
            .into_iter()
            .map(|(skill, trials)| OtherSkill {
                skill: skill.to_owned(),
                trials,
            })
            .collect(),
    }
}

/// The median of sorted turns as an exact decimal (`"2"`, `"2.5"`); `None` when empty.
fn median(sorted: &[u32]) -> Option<String> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    if n % 2 == 1 {
        return Some(sorted[n / 2].to_string());
    }
    let sum = u64::from(sorted[n / 2 - 1]) + u64::from(sorted[n / 2]);
    Some(if sum % 2 == 0 {
        (sum / 2).to_string()
    } else {
        format!("{}.5", sum / 2)
    })
}

impl ArmActivation {
    /// `14/18 (78%, 95% CI 55–91%)`, or that no trial carries evidence.
    pub fn rate_text(&self) -> String {
        match &self.rate {
            None => "no trial with evidence yet".to_owned(),
            Some(r) => format!(
                "{}/{} ({}, 95% CI {}–{})",
                r.num,
                r.den,
                percent(&r.value),
                percent(&r.wilson95[0]).trim_end_matches('%'),
                percent(&r.wilson95[1])
            ),
        }
    }

    /// The tool errors summed over every reason.
    pub fn tool_error_count(&self) -> u64 {
        self.tool_errors
            .iter()
            .fold(0u64, |sum, e| sum.saturating_add(e.count))
    }
}

impl Activation {
    /// The activation of `arm`, if the report has it.
    pub fn arm(&self, arm: &str) -> Option<&ArmActivation> {
        self.arms.iter().find(|a| a.arm == arm)
    }
}

/// A six-place decimal string as a whole percentage (`0.777778` → `78%`).
fn percent(value: &str) -> String {
    value
        .parse::<f64>()
        .map_or_else(|_| value.to_owned(), |v| format!("{:.0}%", v * 100.0))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{evidence, progressive, rich};
    use super::super::{Rate, Report, derivations};
    use super::*;
    use crate::canonical;
    use crate::outcome::Outcome;

    fn loads(p: u64, f: u64, u: u64, n: u64) -> TaskLoads {
        TaskLoads {
            loaded_passed: p,
            loaded_failed: f,
            loaded_unscored: u,
            not_loaded: n,
        }
    }

    #[test]
    fn activation_sums_each_arms_evidence() {
        // Given the rich run's trials with hand-made evidence (see `testing::progressive`) ...
        let report = progressive();
        // ... when the builder sums it ...
        let activation = report.activation.as_ref().expect("trials carry evidence");
        let a = activation.arm("a").unwrap();
        // ... then A loaded its skill in 4 of 6 trials, with the Wilson interval of 4/6.
        assert_eq!(a.skill.as_deref(), Some("solana-reader"));
        assert_eq!((a.trials, a.loaded), (6, 4));
        let rate = a.rate.clone().unwrap();
        assert_eq!(Some(rate.clone()), Rate::of(4, 6));
        assert_eq!(rate.value, "0.666667");
        assert_eq!(
            rate.wilson95,
            ["0.299993".to_owned(), "0.903229".to_owned()]
        );
        assert_eq!(a.median_load_turn.as_deref(), Some("1.5"));
        assert_eq!(
            a.tool_errors,
            [
                ToolErrorTotal {
                    error: ToolError::NotABundleFile,
                    count: 1
                },
                ToolErrorTotal {
                    error: ToolError::ExtraCall,
                    count: 2
                },
            ]
        );
        assert_eq!(a.tool_error_count(), 3);
        assert_eq!(a.turn_limit, 1);
        assert_eq!(
            (a.catalog_bytes, a.instructions_bytes, a.resources_bytes),
            (6_000, 2_500, 400)
        );
        assert_eq!(
            a.never_read.as_deref(),
            Some(&["references/c.md".to_owned()][..])
        );
        assert_eq!(
            a.others_instead,
            [OtherSkill {
                skill: "solana-other".into(),
                trials: 1
            }]
        );
        assert_eq!(a.rate_text(), "4/6 (67%, 95% CI 30–90%)");
        // B loaded in every trial; the neighbour it also loaded after its own is not "instead",
        // and without a file list its unread references are unknown, not none.
        let b = activation.arm("b").unwrap();
        assert_eq!((b.trials, b.loaded), (6, 6));
        assert_eq!(b.rate.as_ref().unwrap().wilson95[1], "1.000000");
        assert_eq!(b.median_load_turn.as_deref(), Some("1"));
        assert!(b.others_instead.is_empty());
        assert_eq!((&b.readable_files, &b.never_read), (&None, &None));
        // The baseline counts loads of other skills only, and has no references of its own.
        let base = activation.arm("baseline").unwrap();
        assert_eq!(
            (base.skill.as_deref(), base.trials, base.loaded),
            (None, 6, 1)
        );
        assert_eq!(base.median_load_turn, None);
        assert_eq!(base.readable_files, None);
        assert_eq!(base.others_instead.len(), 1);
    }

    #[test]
    fn each_task_counts_loaded_and_passed_loaded_and_failed_and_not_loaded() {
        let report = progressive();
        let activation = report.activation.unwrap();
        let task = |id: &str| &activation.tasks.iter().find(|t| t.task == id).unwrap().arms;
        // Trial 0 (A, pass, loaded), 1 (B, pass, loaded), 2 (baseline, infrastructure error).
        let usdc = task("acct-usdc-mint");
        assert_eq!(usdc["a"], loads(1, 0, 0, 0));
        assert_eq!(usdc["b"], loads(1, 0, 0, 0));
        assert_eq!(usdc["baseline"], loads(0, 0, 0, 1));
        // Trial 3 (B, unknown, loaded), 4 (A, invalid output, loaded), 5 (baseline, invalid
        // output, loaded another skill).
        let t22 = task("acct-t22-fzyeg-mint");
        assert_eq!(t22["b"], loads(0, 0, 1, 0));
        assert_eq!(t22["a"], loads(0, 1, 0, 0));
        assert_eq!(t22["baseline"], loads(0, 1, 0, 0));
        // Trial 13 (A, pass, did not load its skill).
        assert_eq!(task("plan-usdc-transfer")["a"], loads(0, 0, 0, 1));
        // Every trial with evidence is counted once.
        let total: u64 = activation
            .tasks
            .iter()
            .flat_map(|t| t.arms.values())
            .map(|l| l.loaded_passed + l.loaded_failed + l.loaded_unscored + l.not_loaded)
            .sum();
        assert_eq!(total, 18);
        assert_eq!(
            activation
                .tasks
                .iter()
                .map(|t| t.task.as_str())
                .collect::<Vec<_>>(),
            report.manifest.tasks
        );
    }

    #[test]
    fn a_progressive_report_is_its_trials_own_and_reads_back_byte_for_byte() {
        // Given a progressive report with a turn on an attempt, sealed ...
        let mut report = progressive();
        report.trials[1].attempts[0].turn = Some(2);
        report.seal().unwrap();
        // ... then the strict reader takes it back unchanged, with its evidence and turn ...
        let text = serde_json::to_string(&report.to_value().unwrap()).unwrap();
        assert!(text.contains("\"turn\":2"), "{text}");
        let read = Report::from_json(&text).unwrap();
        assert_eq!(read, report);
        assert!(read.verify().is_ok());
        // ... and its activation is what its trials and file lists give: nothing to name.
        assert_eq!(derivations(&read).unwrap(), []);
        // An edited count is named.
        let mut forged = read.clone();
        if let Some(a) = forged.activation.as_mut() {
            a.arms[1].loaded += 1;
        }
        let paths: Vec<String> = derivations(&forged)
            .unwrap()
            .into_iter()
            .map(|d| d.path)
            .collect();
        assert_eq!(paths, ["activation.arms[1].loaded"]);
    }

    #[test]
    fn a_report_without_evidence_serializes_exactly_as_before() {
        // Given the committed inline report, rebuilt by the builder from its own facts ...
        let stated = rich();
        let rebuilt = super::super::rederive(&stated);
        // ... then it has no activation, no evidence and no turn member, and the same bytes.
        assert_eq!(rebuilt.activation, None);
        let text = rebuilt.canonical().unwrap();
        for member in ["\"activation\"", "\"evidence\"", "\"turn\""] {
            assert!(!text.contains(member), "{member}");
        }
        let document: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/report-v2-rich.json")).unwrap();
        assert_eq!(text, canonical::to_string(&document).unwrap());
        // One trial with evidence is enough for the member to appear.
        let mut one = stated.clone();
        one.trials[0].evidence = Some(evidence(Some(1), &["solana-reader"], &[], &[], false));
        let built = super::super::rederive(&one);
        let activation = built.activation.unwrap();
        assert_eq!(activation.arm("a").unwrap().trials, 1);
        assert_eq!(activation.arm("b").unwrap().rate, None);
        assert_eq!(
            one.trials[0].outcome,
            super::super::TrialOutcome::Done(Outcome::Pass)
        );
    }

    #[test]
    fn readable_files_are_the_text_files_read_skill_resource_serves() {
        let bundle = crate::bundle::from_files(
            vec![
                (
                    "SKILL.md".to_owned(),
                    b"---\nname: s\ndescription: d\n---\n# s\n".to_vec(),
                ),
                ("references/a.md".to_owned(), b"notes\n".to_vec()),
                ("scripts/run.py".to_owned(), b"print(1)\n".to_vec()),
            ],
            crate::bundle::SourceKind::Folder,
            &crate::bundle::Limits::default(),
        )
        .unwrap();
        assert_eq!(readable_files(&bundle), ["references/a.md"]);
    }

    #[test]
    fn the_median_turn_is_exact() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3]).as_deref(), Some("3"));
        assert_eq!(median(&[1, 2]).as_deref(), Some("1.5"));
        assert_eq!(median(&[1, 3]).as_deref(), Some("2"));
        assert_eq!(median(&[1, 1, 4]).as_deref(), Some("1"));
    }
}

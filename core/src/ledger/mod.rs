//! The ledger across models (`skilltrial ledger`, docs/ledger.md): the same bundles on the same
//! pack, measured the same way, one run per model, side by side.
//!
//! [`build`] takes sealed reports (from the journal or from files) and decides, by fixed rules,
//! which it puts side by side:
//!
//! 1. **The basis.** Every column must share the pack (by hash), the tasks, the arms with their
//!    bundle digests, the repetitions, the checker (version and source), the checker behind the
//!    verdicts, the sampling and output limit, and the prompt template
//!    ([`comparable::MEASUREMENT`] and [`comparable::SUBJECT`]). The basis is the first report's
//!    when the caller names one ([`Basis::First`]); otherwise the one shared by the most models,
//!    and among equals the one of the newest run.
//! 2. **One column per model** (provider, model, revision, scripted or not): its newest complete
//!    run; without a complete one, its newest run with a scored trial, marked partial.
//! 3. **Everything else is left out, with why**: what differs from the basis (both values), that
//!    a newer run of the same model is shown, that it has no scored trial yet, or that it was
//!    given twice.
//!
//! A column shows what its report says and nothing more: per arm the success with its Wilson
//! interval and pass^k / pass@k, per contrast the tasks fixed and broken with the paired test's
//! Holm-adjusted p, per task the majority verdicts. Across columns the ledger names, per
//! contrast, the models on which a version helps (fixes tasks, breaks none), breaks (breaks
//! tasks, fixes none), does both, or changes nothing — counts of tasks, never a claim the
//! paired tests of each run do not make.

pub mod chart;
pub mod html;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::bundle::display_safe;
use crate::manifest::{ArmSpec, PackRef, Sampling};
use crate::report::comparable::{self, Check, Difference};
use crate::report::{
    Activation, ArmSummary, CheckerIdentity, Consistency, FixesBreaks, Rate, Report, TaskArm,
};

/// The ledger's format name.
pub const FORMAT: &str = "skilltrial-ledger-v1";

/// Which report's basis the columns must share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The first report's: the runs were named, the first one first.
    First,
    /// The one the most models share (the newest run's among equals): every run of a journal.
    MostModels,
}

/// The whole ledger. Members in reading order.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Ledger {
    /// Always [`FORMAT`].
    pub format: String,
    /// What every column shares.
    pub basis: Shared,
    /// One per model, in the order their runs were given (newest first for a journal).
    pub models: Vec<ModelColumn>,
    /// Per contrast, which models a version helps and which it breaks.
    pub versions: Vec<VersionEffect>,
    /// One row per task of the basis, one cell per model.
    pub tasks: Vec<LedgerTask>,
    /// The runs not shown, and why.
    pub left_out: Vec<LeftOut>,
    /// Every run given with a scored trial (the columns' and the left-out ones), in groups of
    /// runs measured the same way: the success per arm over runs, drawn one chart per group.
    /// Invariant: two runs share a group exactly when the basis checks (pack, tasks, arms and
    /// digests, repetitions, checker, verdicts, sampling, prompt, delivery) find no difference
    /// between them, so no chart puts incomparable runs on one axis.
    pub history: Vec<RunGroup>,
}

/// Runs that may share an axis: the same measurement and bundles, any model.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunGroup {
    /// What its runs share.
    pub shared: Shared,
    /// Whether it is the columns' basis (the first group, when any run is shown).
    pub basis: bool,
    /// How it differs from the basis (this group's value, the basis's); empty for the basis.
    pub differs: Vec<Difference>,
    /// Its runs, by model (the columns' order, then the others' in the order given), oldest
    /// first within a model.
    pub runs: Vec<RunPoint>,
}

/// One run in a [`RunGroup`]: what its report says per arm.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunPoint {
    pub run: String,
    /// The model label ([`ModelColumn::model`]).
    pub model: String,
    pub created_at_ms: i64,
    /// Every planned trial has a model result.
    pub complete: bool,
    /// It is a column of the ledger.
    pub shown: bool,
    /// What the API said served it (the report's `system_fingerprints`): a model's provider may
    /// change what serves it between two runs, which the chart's rows under one model do not hide.
    pub system_fingerprints: Vec<String>,
    /// Per arm of the group, in its order: the report's success.
    pub arms: Vec<PointArm>,
}

/// One arm's success in one run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PointArm {
    pub arm: String,
    /// Passes over scored trials with the Wilson 95% interval, as the report's summary says;
    /// `null` with nothing scored in that arm.
    pub success: Option<Rate>,
}

/// What every column of the ledger shares.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Shared {
    pub pack: PackRef,
    pub arms: Vec<ArmSpec>,
    pub tasks: usize,
    pub repetitions: u32,
    pub checker: CheckerIdentity,
    pub sampling: Sampling,
    pub prompt_template_sha256: String,
}

impl Shared {
    /// Each arm as people read it: `baseline`, `A = name version` (with its digest in
    /// parentheses when `digests`).
    pub fn arm_lines(&self, digests: bool) -> Vec<String> {
        self.arms
            .iter()
            .map(|a| match &a.bundle {
                None => "baseline".to_owned(),
                Some(b) => {
                    let mut line = format!(
                        "{} = {} {}",
                        arm_words(a.arm.as_str()),
                        b.name,
                        b.version.as_deref().unwrap_or("unversioned")
                    );
                    if digests {
                        line.push_str(&format!(" ({})", b.digest));
                    }
                    line
                }
            })
            .collect()
    }
}

/// One model: the run shown for it and what that run's report says.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModelColumn {
    /// `provider model@revision`, with `(scripted)` for the built-in scripted model.
    pub model: String,
    pub provider: String,
    pub model_id: String,
    pub revision: Option<String>,
    pub scripted: bool,
    /// What the provider said it ran.
    pub reported_models: Vec<String>,
    /// The run shown (its manifest hash).
    pub run: String,
    /// Every planned trial has a model result.
    pub complete: bool,
    pub planned: u64,
    pub executed: u64,
    pub arms: Vec<LedgerArm>,
    pub contrasts: Vec<ContrastCell>,
}

/// One arm in one model's run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LedgerArm {
    pub arm: String,
    pub pass: u64,
    pub executed: u64,
    pub planned: u64,
    /// pass ÷ executed with its Wilson 95% interval; `null` with nothing executed.
    pub success: Option<Rate>,
    pub consistency: Option<Consistency>,
    /// Progressive runs: the trials that loaded the arm's own skill (for the baseline, any skill)
    /// ÷ its trials with evidence, with the Wilson 95% interval, as the report's `activation`
    /// says. Absent for a run whose report has no activation (an inline run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation: Option<Rate>,
}

/// One contrast (`b_vs_a`, `b_vs_baseline`, `a_vs_baseline`) in one model's run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ContrastCell {
    pub contrast: String,
    /// Tasks compared: those with a verdict in both arms.
    pub compared_tasks: u64,
    pub fixes: Vec<String>,
    pub breaks: Vec<String>,
    /// `helps`, `breaks`, `helps and breaks`, or `no change` (see [`Reading`]).
    pub reading: Reading,
    /// The paired test's Holm-adjusted p, as the report writes it; `null` without units.
    pub holm_p: Option<String>,
}

/// What a version does on one model, by the tasks it fixes and breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// Fixes at least one task and breaks none.
    Helps,
    /// Breaks at least one task and fixes none.
    Breaks,
    /// Fixes some tasks and breaks others.
    HelpsAndBreaks,
    /// Fixes and breaks nothing among the tasks compared.
    NoChange,
    /// No task has a verdict in both arms yet.
    NotCompared,
}

impl Reading {
    fn of(compared: u64, lists: &FixesBreaks) -> Self {
        match (compared, lists.fixes.is_empty(), lists.breaks.is_empty()) {
            (0, _, _) => Self::NotCompared,
            (_, false, true) => Self::Helps,
            (_, true, false) => Self::Breaks,
            (_, false, false) => Self::HelpsAndBreaks,
            (_, true, true) => Self::NoChange,
        }
    }

    /// The words the text and HTML views use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Helps => "helps",
            Self::Breaks => "breaks",
            Self::HelpsAndBreaks => "helps and breaks",
            Self::NoChange => "no change",
            Self::NotCompared => "not compared yet",
        }
    }
}

/// Across models, what one contrast's first arm does.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct VersionEffect {
    pub contrast: String,
    /// The models (their labels) by reading.
    pub helps: Vec<String>,
    pub breaks: Vec<String>,
    pub helps_and_breaks: Vec<String>,
    pub no_change: Vec<String>,
    pub not_compared: Vec<String>,
}

impl VersionEffect {
    /// The non-empty readings as phrases with their models: `("helps on", [model, …])`, in
    /// reading order.
    pub fn phrases(&self) -> Vec<(&'static str, &[String])> {
        [
            ("helps on", &self.helps),
            ("breaks on", &self.breaks),
            ("helps and breaks on", &self.helps_and_breaks),
            ("changes nothing on", &self.no_change),
            ("not compared yet on", &self.not_compared),
        ]
        .into_iter()
        .filter(|(_, models)| !models.is_empty())
        .map(|(word, models)| (word, models.as_slice()))
        .collect()
    }
}

/// One task across the models.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LedgerTask {
    pub task: String,
    pub family: Option<String>,
    /// One per model, in column order.
    pub cells: Vec<TaskCell>,
}

/// One task in one model's run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TaskCell {
    /// Passes and executed repetitions per arm.
    pub arms: BTreeMap<String, TaskArm>,
    /// B against A by majority: `improvement`, `regression`, `same`; `null` without a verdict.
    pub b_vs_a: Option<String>,
}

/// A run the ledger does not show, and why.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LeftOut {
    pub run: String,
    pub model: String,
    /// One sentence.
    pub reason: String,
    /// The members that differ from the basis (this run's value, the basis's).
    pub differs: Vec<Difference>,
}

/// What the ledger refuses to build from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error(
        "no runs to put side by side: plan and run the same bundles on two or more models first"
    )]
    NoRuns,
}

/// The contrasts in reading order: key, first arm, second arm, pair name.
const CONTRASTS: [(&str, &str, &str, &str); 3] = [
    ("b_vs_a", "b", "a", "b-a"),
    ("b_vs_baseline", "b", "baseline", "b-baseline"),
    ("a_vs_baseline", "a", "baseline", "a-baseline"),
];

/// The checks every column must pass against the basis.
fn basis_checks() -> impl Iterator<Item = &'static Check> {
    comparable::MEASUREMENT.iter().chain(&comparable::SUBJECT)
}

/// The model label: `provider model@revision`, `(scripted)` for the built-in scripted model.
pub fn model_label(report: &Report) -> String {
    let m = &report.comparability.model;
    let provider = serde_json::to_value(m.provider)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut label = format!("{provider} {}", m.model);
    if let Some(revision) = &m.revision {
        label.push('@');
        label.push_str(revision);
    }
    if m.scripted {
        label.push_str(" (scripted)");
    }
    label
}

/// The model a column stands for: what the run asked for, not what the API reported (that is
/// shown, and a change in it between two runs of one model is the newer run's to show).
fn model_key(report: &Report) -> Value {
    let m = &report.comparability.model;
    serde_json::json!([m.provider, m.model, m.revision, m.scripted])
}

/// Whether any trial of the run has a scored answer.
fn scored(report: &Report) -> bool {
    report.summary.arms.iter().any(|a| a.executed > 0)
}

/// Builds the ledger from `reports` (each sealed, in the order given: newest first for a
/// journal), by the rules of the module's documentation.
pub fn build(reports: &[Report], basis: Basis) -> Result<Ledger, LedgerError> {
    // A run given twice (a file and the journal, or the same file) counts once.
    let mut seen: Vec<&str> = Vec::new();
    let mut left_out = Vec::new();
    let mut unique: Vec<&Report> = Vec::new();
    for r in reports {
        if seen.contains(&r.run.id.as_str()) {
            left_out.push(LeftOut {
                run: r.run.id.clone(),
                model: model_label(r),
                reason: "given more than once: shown once".to_owned(),
                differs: Vec::new(),
            });
        } else {
            seen.push(&r.run.id);
            unique.push(r);
        }
    }
    // The basis is a run with a scored trial whenever there is one: a run with nothing scored
    // yet says nothing about what the others should match.
    let reference = match basis {
        Basis::First => unique
            .iter()
            .copied()
            .find(|r| scored(r))
            .or_else(|| unique.first().copied())
            .ok_or(LedgerError::NoRuns)?,
        Basis::MostModels => most_models(&unique).ok_or(LedgerError::NoRuns)?,
    };

    // Rule 1: the basis. Rule 2: one column per model.
    let mut columns: Vec<&Report> = Vec::new();
    let mut candidates: Vec<&Report> = Vec::new();
    let mut incomparable: Vec<(&Report, Vec<Difference>)> = Vec::new();
    for r in &unique {
        let differs = comparable::differences(basis_checks(), r, reference);
        if !differs.is_empty() {
            incomparable.push((r, differs));
        } else if !scored(r) {
            left_out.push(LeftOut {
                run: r.run.id.clone(),
                model: model_label(r),
                reason: "has no scored trial yet".to_owned(),
                differs: Vec::new(),
            });
        } else {
            candidates.push(r);
        }
    }
    for r in &candidates {
        let key = model_key(r);
        if columns.iter().any(|c| model_key(c) == key) {
            continue;
        }
        let same: Vec<&Report> = candidates
            .iter()
            .copied()
            .filter(|c| model_key(c) == key)
            .collect();
        // The newest complete run, else the newest.
        let shown = same
            .iter()
            .copied()
            .max_by_key(|c| (c.run.complete, c.run.created_at_ms))
            .unwrap_or(r);
        columns.push(shown);
        for other in same.into_iter().filter(|c| c.run.id != shown.run.id) {
            left_out.push(LeftOut {
                run: other.run.id.clone(),
                model: model_label(other),
                reason: format!(
                    "the same model as run {}, which is shown ({})",
                    shown.short_id(),
                    if shown.run.complete && !other.run.complete {
                        "complete"
                    } else {
                        "newer"
                    }
                ),
                differs: Vec::new(),
            });
        }
    }
    // Named by a run that is shown, when one is: every column shares the basis.
    let shown = columns.first().copied().unwrap_or(reference);
    for (r, differs) in incomparable {
        let whats: Vec<&str> = differs.iter().map(|d| d.what.as_str()).collect();
        left_out.push(LeftOut {
            run: r.run.id.clone(),
            model: model_label(r),
            reason: format!(
                "not comparable with the runs shown (run {}): its {} differ",
                shown.short_id(),
                whats.join(", ")
            ),
            differs,
        });
    }
    let models: Vec<ModelColumn> = columns.iter().map(|r| column(r)).collect();
    let versions = CONTRASTS
        .iter()
        .filter(|(key, ..)| {
            models
                .iter()
                .any(|m| m.contrasts.iter().any(|c| c.contrast == *key))
        })
        .map(|(key, ..)| effect(key, &models))
        .collect();
    let tasks = reference
        .manifest
        .tasks
        .iter()
        .map(|task| LedgerTask {
            task: task.clone(),
            family: columns
                .iter()
                .find_map(|r| r.tasks.iter().find(|t| &t.task == task))
                .and_then(|t| t.family.clone()),
            cells: columns
                .iter()
                .map(|r| {
                    let row = r.tasks.iter().find(|t| &t.task == task);
                    TaskCell {
                        arms: row.map(|t| t.arms.clone()).unwrap_or_default(),
                        b_vs_a: row.and_then(|t| t.verdicts.b_vs_a.clone().flatten()),
                    }
                })
                .collect(),
        })
        .collect();
    let history = history(&unique, reference, &columns);
    Ok(Ledger {
        format: FORMAT.to_owned(),
        basis: shared(reference),
        models,
        versions,
        tasks,
        left_out,
        history,
    })
}

/// What every run measured like `r` shares.
fn shared(r: &Report) -> Shared {
    Shared {
        pack: r.manifest.pack.clone(),
        arms: r.manifest.arms.clone(),
        tasks: r.manifest.tasks.len(),
        repetitions: r.manifest.repetitions,
        checker: r.comparability.checker.clone(),
        sampling: r.comparability.sampling.clone(),
        prompt_template_sha256: r.comparability.prompt_template_sha256.clone(),
    }
}

/// The scored runs of `unique` in groups measured alike ([`Ledger::history`]): the basis's
/// group first, then the others in the order their first run was given.
fn history(unique: &[&Report], reference: &Report, columns: &[&Report]) -> Vec<RunGroup> {
    let mut groups: Vec<Vec<&Report>> = Vec::new();
    for r in unique.iter().copied().filter(|r| scored(r)) {
        match groups
            .iter_mut()
            .find(|g| comparable::differences(basis_checks(), r, g[0]).is_empty())
        {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    let is_basis = |g: &[&Report]| {
        !columns.is_empty() && comparable::differences(basis_checks(), g[0], reference).is_empty()
    };
    // Stable: the basis's group moves to the front, the others keep their order.
    groups.sort_by_key(|g| !is_basis(g));
    // Models in the columns' order, then the others' in the order given.
    let mut model_order: Vec<Value> = columns.iter().map(|r| model_key(r)).collect();
    for r in unique {
        let key = model_key(r);
        if !model_order.contains(&key) {
            model_order.push(key);
        }
    }
    let rank = |r: &Report| {
        let key = model_key(r);
        model_order
            .iter()
            .position(|k| *k == key)
            .unwrap_or(usize::MAX)
    };
    groups
        .into_iter()
        .map(|mut runs| {
            runs.sort_by(|x, y| {
                (rank(x), x.run.created_at_ms, &x.run.id).cmp(&(
                    rank(y),
                    y.run.created_at_ms,
                    &y.run.id,
                ))
            });
            let first = runs[0];
            let basis = is_basis(&runs);
            RunGroup {
                shared: shared(first),
                basis,
                differs: if basis {
                    Vec::new()
                } else {
                    comparable::differences(basis_checks(), first, reference)
                },
                runs: runs
                    .iter()
                    .map(|r| RunPoint {
                        run: r.run.id.clone(),
                        model: model_label(r),
                        created_at_ms: r.run.created_at_ms,
                        complete: r.run.complete,
                        shown: columns.iter().any(|c| c.run.id == r.run.id),
                        system_fingerprints: r.comparability.model.system_fingerprints.clone(),
                        arms: first
                            .manifest
                            .arms
                            .iter()
                            .map(|spec| PointArm {
                                arm: spec.arm.as_str().to_owned(),
                                success: r
                                    .summary
                                    .arms
                                    .iter()
                                    .find(|a| a.arm == spec.arm.as_str())
                                    .and_then(|a| a.success.clone()),
                            })
                            .collect(),
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The report whose basis the most distinct models share (with a scored trial); among equals,
/// the earliest given (the newest run).
fn most_models<'a>(reports: &[&'a Report]) -> Option<&'a Report> {
    let mut best: Option<(&Report, usize)> = None;
    for r in reports.iter().filter(|r| scored(r)) {
        let mut keys: Vec<Value> = Vec::new();
        for other in reports {
            if scored(other) && comparable::differences(basis_checks(), other, r).is_empty() {
                let key = model_key(other);
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        if best.is_none_or(|(_, n)| keys.len() > n) {
            best = Some((r, keys.len()));
        }
    }
    best.map(|(r, _)| r).or_else(|| reports.first().copied())
}

fn column(r: &Report) -> ModelColumn {
    let m = &r.comparability.model;
    let provider = serde_json::to_value(m.provider)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let compared = r.compared_tasks();
    let contrasts = r
        .summary
        .changes
        .each()
        .into_iter()
        .filter_map(|(key, _, _, lists)| {
            let lists = lists?;
            let pair_name = CONTRASTS.iter().find(|c| c.0 == key).map(|c| c.3)?;
            let holm_p = r
                .pairs
                .iter()
                .find(|p| p.contrast == pair_name)
                .and_then(|p| p.test.holm_p.as_ref())
                .map(|p| p.text.clone());
            let compared_tasks = compared
                .get(key)
                .and_then(|n| u64::try_from(*n).ok())
                .unwrap_or(0);
            Some(ContrastCell {
                contrast: key.to_owned(),
                compared_tasks,
                fixes: lists.fixes.clone(),
                breaks: lists.breaks.clone(),
                reading: Reading::of(compared_tasks, lists),
                holm_p,
            })
        })
        .collect();
    ModelColumn {
        model: model_label(r),
        provider,
        model_id: m.model.clone(),
        revision: m.revision.clone(),
        scripted: m.scripted,
        reported_models: m.reported_models.clone(),
        run: r.run.id.clone(),
        complete: r.run.complete,
        planned: r.summary.planned,
        executed: r.summary.executed,
        arms: r
            .summary
            .arms
            .iter()
            .map(|a| arm(a, r.activation.as_ref()))
            .collect(),
        contrasts,
    }
}

fn arm(a: &ArmSummary, activation: Option<&Activation>) -> LedgerArm {
    LedgerArm {
        arm: a.arm.clone(),
        pass: a.pass,
        executed: a.executed,
        planned: a.planned,
        success: a.success.clone(),
        consistency: a.consistency.clone(),
        activation: activation
            .and_then(|act| act.arm(&a.arm))
            .and_then(|act| act.rate.clone()),
    }
}

fn effect(key: &str, models: &[ModelColumn]) -> VersionEffect {
    let pick = |want: Reading| -> Vec<String> {
        models
            .iter()
            .filter(|m| {
                m.contrasts
                    .iter()
                    .any(|c| c.contrast == key && c.reading == want)
            })
            .map(|m| m.model.clone())
            .collect()
    };
    VersionEffect {
        contrast: key.to_owned(),
        helps: pick(Reading::Helps),
        breaks: pick(Reading::Breaks),
        helps_and_breaks: pick(Reading::HelpsAndBreaks),
        no_change: pick(Reading::NoChange),
        not_compared: pick(Reading::NotCompared),
    }
}

/// A contrast key as people read it: `B vs A`.
pub fn contrast_words(key: &str) -> String {
    CONTRASTS.iter().find(|c| c.0 == key).map_or_else(
        || key.to_owned(),
        |(_, x, y, _)| format!("{} vs {}", arm_words(x), arm_words(y)),
    )
}

/// An arm id as people read it: `A`, `B`, `baseline`.
pub fn arm_words(arm: &str) -> String {
    if arm == "baseline" {
        arm.to_owned()
    } else {
        arm.to_uppercase()
    }
}

impl Ledger {
    /// Whether any column's report has activation (a progressive run).
    pub fn has_activation(&self) -> bool {
        self.models
            .iter()
            .any(|m| m.arms.iter().any(|a| a.activation.is_some()))
    }

    /// The ledger as text: the basis, success per arm and model, each version's effect per
    /// model, the tasks side by side (B vs A), and what was left out.
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let arms = self.basis.arm_lines(false);
        let _ = writeln!(
            out,
            "ledger over {} model{} · pack {} · {} tasks × {} repetition{} · {}",
            self.models.len(),
            if self.models.len() == 1 { "" } else { "s" },
            self.basis.pack.id,
            self.basis.tasks,
            self.basis.repetitions,
            if self.basis.repetitions == 1 { "" } else { "s" },
            arms.join(" · ")
        );
        if self.models.is_empty() {
            out.push_str("no run can be shown: every one was left out (below)\n");
        } else {
            let mut rows: Vec<(String, Vec<String>)> = Vec::new();
            rows.push((
                "run".to_owned(),
                self.models
                    .iter()
                    .map(|m| {
                        format!(
                            "{}{}",
                            crate::state::short_id(&m.run),
                            if m.complete { "" } else { " (partial)" }
                        )
                    })
                    .collect(),
            ));
            for spec in &self.basis.arms {
                let name = spec.arm.as_str();
                rows.push((
                    arm_words(name),
                    self.models
                        .iter()
                        .map(|m| {
                            m.arms
                                .iter()
                                .find(|a| a.arm == name)
                                .map_or_else(|| "—".to_owned(), success_words)
                        })
                        .collect(),
                ));
                rows.push((
                    format!("  pass^{k} · pass@{k}", k = self.basis.repetitions),
                    self.models
                        .iter()
                        .map(|m| {
                            m.arms
                                .iter()
                                .find(|a| a.arm == name)
                                .and_then(|a| a.consistency.as_ref())
                                .and_then(|c| Some((c.pass_hat_k.as_ref()?, c.pass_at_k.as_ref()?)))
                                .map_or_else(
                                    || "—".to_owned(),
                                    |(every, any)| {
                                        format!(
                                            "{}/{} · {}/{} tasks",
                                            every.num, every.den, any.num, any.den
                                        )
                                    },
                                )
                        })
                        .collect(),
                ));
            }
            // Progressive runs: the activation per arm, blank for a column without it.
            if self.has_activation() {
                for spec in &self.basis.arms {
                    let name = spec.arm.as_str();
                    rows.push((
                        format!("{} activation", arm_words(name)),
                        self.models
                            .iter()
                            .map(|m| {
                                m.arms
                                    .iter()
                                    .find(|a| a.arm == name)
                                    .and_then(|a| a.activation.as_ref())
                                    .map_or_else(String::new, rate_words)
                            })
                            .collect(),
                    ));
                }
            }
            for (key, ..) in CONTRASTS {
                if !self.versions.iter().any(|v| v.contrast == key) {
                    continue;
                }
                rows.push((
                    contrast_words(key),
                    self.models
                        .iter()
                        .map(|m| {
                            m.contrasts
                                .iter()
                                .find(|c| c.contrast == key)
                                .map_or_else(|| "—".to_owned(), contrast_short)
                        })
                        .collect(),
                ));
            }
            let header: Vec<String> = self.models.iter().map(|m| m.model.clone()).collect();
            table(&mut out, "", &header, &rows);

            out.push('\n');
            for v in &self.versions {
                let parts: Vec<String> = v
                    .phrases()
                    .into_iter()
                    .map(|(word, models)| format!("{word} {}", models.join(", ")))
                    .collect();
                let _ = writeln!(out, "{}: {}", contrast_words(&v.contrast), parts.join("; "));
            }
            out.push_str("(helps: fixes tasks and breaks none; breaks: breaks tasks and fixes none; by each run's per-task majority verdicts, with its paired test's Holm p beside them)\n");

            if self
                .tasks
                .iter()
                .any(|t| t.cells.iter().any(|c| c.b_vs_a.is_some()))
            {
                out.push('\n');
                let rows: Vec<(String, Vec<String>)> = self
                    .tasks
                    .iter()
                    .map(|t| {
                        (
                            t.task.clone(),
                            t.cells
                                .iter()
                                .map(|c| c.b_vs_a.clone().unwrap_or_else(|| "—".to_owned()))
                                .collect(),
                        )
                    })
                    .collect();
                table(&mut out, "task (B vs A)", &header, &rows);
            }
        }
        if !self.left_out.is_empty() {
            out.push_str("\nleft out:\n");
            for l in &self.left_out {
                let _ = writeln!(
                    out,
                    "  {} ({}): {}",
                    crate::state::short_id(&l.run),
                    l.model,
                    l.reason
                );
                for d in &l.differs {
                    let _ = writeln!(
                        out,
                        "      {}: {} here, {} in the basis",
                        d.what, d.this, d.other
                    );
                }
            }
        }
        // Names and ids come from runs and files: nothing in them may drive the terminal.
        out.lines().map(|l| display_safe(l) + "\n").collect()
    }
}

/// `14/18 78% [55–91%]`, or that nothing was executed.
fn success_words(a: &LedgerArm) -> String {
    match &a.success {
        None => format!("0/{} scored", a.planned),
        Some(rate) => rate_words(rate),
    }
}

/// `14/18 78% [55–91%]`.
fn rate_words(rate: &Rate) -> String {
    format!(
        "{}/{} {} [{}–{}]",
        rate.num,
        rate.den,
        percent(&rate.value),
        percent(&rate.wilson95[0]),
        percent(&rate.wilson95[1])
    )
}

/// A six-place decimal string as a whole percentage.
pub(crate) fn percent(value: &str) -> String {
    value
        .parse::<f64>()
        .map_or_else(|_| value.to_owned(), |v| format!("{:.0}%", v * 100.0))
}

/// `helps: +2 −0 (p 0.13 (1/8))`.
fn contrast_short(c: &ContrastCell) -> String {
    let mut s = format!(
        "{}: +{} −{}",
        c.reading.as_str(),
        c.fixes.len(),
        c.breaks.len()
    );
    if let Some(p) = &c.holm_p {
        s.push_str(&format!(" (p {})", crate::report::p_text_reading(p)));
    }
    s
}

/// A left-aligned table: a label column, then one column per header.
fn table(out: &mut String, corner: &str, header: &[String], rows: &[(String, Vec<String>)]) {
    use std::fmt::Write as _;
    let chars = |s: &str| s.chars().count();
    let first = rows
        .iter()
        .map(|(l, _)| chars(l))
        .chain([chars(corner)])
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .filter_map(|(_, cells)| cells.get(i))
                .map(|c| chars(c))
                .chain([chars(h)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |out: &mut String, label: &str, cells: &[String]| {
        let mut l = format!("{label}{}", " ".repeat(first - chars(label)));
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            let _ = write!(l, "  {c}{}", " ".repeat(w.saturating_sub(chars(c))));
        }
        let _ = writeln!(out, "{}", l.trim_end());
    };
    line(out, corner, header);
    for (label, cells) in rows {
        line(out, label, cells);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::report::testing::{progressive, rich};

    /// `report` as run `id` of `model`.
    fn as_run(mut report: Report, id: &str, model: &str) -> Report {
        report.run.id = format!("{id:0<64}");
        report.comparability.model.model = model.to_owned();
        report
    }

    #[test]
    fn the_activation_column_is_filled_where_a_report_has_it_and_blank_elsewhere() {
        // Given one progressive run and one inline run of the same measurement on two models ...
        let l = build(
            &[
                as_run(progressive(), "aa", "model-one"),
                as_run(rich(), "bb", "model-two"),
            ],
            Basis::First,
        )
        .unwrap();
        assert_eq!(l.models.len(), 2, "{:?}", l.left_out);
        // ... then the progressive column carries each arm's activation and the inline one none.
        let a = |m: usize| l.models[m].arms.iter().find(|a| a.arm == "a").unwrap();
        assert_eq!(a(0).activation, Rate::of(4, 6));
        assert_eq!(a(1).activation, None);
        assert!(l.has_activation());
        // In the JSON the member is absent where the report has no activation.
        let json = serde_json::to_value(&l).unwrap();
        assert_eq!(json["models"][0]["arms"][1]["activation"]["num"], 4);
        assert!(json["models"][1]["arms"][1].get("activation").is_none());
        // The text has one activation row per arm, blank for the inline column.
        let text = l.text();
        let row = |label: &str| {
            text.lines()
                .find(|line| line.starts_with(label))
                .unwrap_or_else(|| panic!("{label}: {text}"))
                .to_owned()
        };
        assert!(row("A activation").ends_with("4/6 67% [30%–90%]"), "{text}");
        assert!(
            row("B activation").ends_with("6/6 100% [61%–100%]"),
            "{text}"
        );
        assert!(
            row("baseline activation").ends_with("1/6 17% [3%–56%]"),
            "{text}"
        );
        // The page too.
        let page = html::render(&l);
        assert!(
            page.contains("<tr><th scope=\"row\">A activation</th><td class=\"num\">4/6 · 67%<div class=\"k\">Wilson 95% 30%–90%</div></td><td></td></tr>"),
            "{page}"
        );
    }

    #[test]
    fn a_ledger_of_inline_runs_has_no_activation_row_or_member() {
        let l = build(&[as_run(rich(), "aa", "model-one")], Basis::First).unwrap();
        assert!(!l.has_activation());
        assert!(!l.text().contains("activation"));
        assert!(!html::render(&l).contains("activation"));
        assert!(!serde_json::to_string(&l).unwrap().contains("activation"));
    }
}

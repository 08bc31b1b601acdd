//! The release gate: a policy written before a run — its text pinned in the manifest, so it
//! cannot be edited once the results are seen — judged against the run's report.
//!
//! A policy is a TOML file (`docs/gate.md`): what evidence a judgement needs (complete pairs,
//! what an incomplete run or a pair left out means) and rules over the report's paired
//! contrasts. The judgement is `cleared`, `missed` or `inconclusive`, each rule with its reason,
//! decided on exact counts from the report (no floating point, no significance claim). Pure: the
//! CLI reads the files and prints; this module decides and renders.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::digest::Sha256Digest;
use crate::manifest::Arm;
use crate::outcome::Outcome;
use crate::report::{Excluded, Pair, Report, TrialOutcome};
use crate::state::short_id as short;

/// The policy format name a policy file may state (`format = "skilltrial-gate-v1"`).
pub const POLICY_FORMAT: &str = "skilltrial-gate-v1";
/// The largest policy a manifest pins: a policy is a few lines.
pub const MAX_POLICY_BYTES: usize = 16 * 1024;
/// The most rules a policy holds.
pub const MAX_RULES: usize = 32;

/// The policy used when a run pinned none and no file is given: B breaks no task that A passes,
/// and B passes at least as often as A; an incomplete run, or one with pairs left out, is
/// inconclusive.
pub const DEFAULT_POLICY: &str = r#"# SkillTrial release gate (docs/gate.md). Pin it at plan time: skilltrial plan --gate gate.toml
format = "skilltrial-gate-v1"

[evidence]
# Each rule's contrast needs at least this many complete (task, repetition) pairs.
min_pairs = 1
# A run that did not execute every planned trial: "inconclusive", or "judge" on what ran.
incomplete = "inconclusive"
# A pair with no scored answer on one side (an infrastructure error): "inconclusive" or "judge".
excluded = "inconclusive"

# B breaks no task that A passes (per-task majority verdicts, as the report shows them).
[[rule]]
kind = "no-breaks"
arm = "b"
against = "a"

# B passes at least as often as A over the same complete pairs.
[[rule]]
kind = "passes-at-least"
arm = "b"
against = "a"
"#;

/// Why a policy was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("gate policy {origin}: {message}")]
pub struct PolicyError {
    /// The file (or "pinned in the manifest").
    pub origin: String,
    pub message: String,
}

/// What a judgement does with evidence that is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Missing {
    /// The gate says `inconclusive`.
    Inconclusive,
    /// The gate judges on what there is.
    Judge,
}

/// A rule's test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuleKind {
    /// `arm` breaks no task that `against` passes (per-task majority verdicts).
    NoBreaks,
    /// `arm` passes at least as often as `against` over the same complete pairs.
    PassesAtLeast,
    /// In every task family, `arm` passes at least as often as `against` over complete pairs.
    FamiliesAtLeast,
    /// Progressive runs: `arm` loaded its own skill in at least `at_least_percent` percent of its
    /// trials with evidence (the report's `activation`).
    ActivationAtLeast,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoBreaks => "no-breaks",
            Self::PassesAtLeast => "passes-at-least",
            Self::FamiliesAtLeast => "families-at-least",
            Self::ActivationAtLeast => "activation-at-least",
        }
    }
}

/// One rule: `kind` of `arm` against `against`, or (`activation-at-least`) of `arm` alone
/// against a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Rule {
    pub kind: RuleKind,
    pub arm: Arm,
    /// The arm compared with; absent for `activation-at-least`, present for every other kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<Arm>,
    /// `activation-at-least` only: the least activation rate, in whole percent (1 to 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_least_percent: Option<u32>,
}

impl Rule {
    /// A rule comparing `arm` with `against`.
    pub fn contrast(kind: RuleKind, arm: Arm, against: Arm) -> Self {
        Self {
            kind,
            arm,
            against: Some(against),
            at_least_percent: None,
        }
    }

    /// `no-breaks: B vs A`, `activation-at-least: B ≥ 75%`.
    pub fn name(&self) -> String {
        match (self.against, self.at_least_percent) {
            (Some(against), _) => format!(
                "{}: {} vs {}",
                self.kind.as_str(),
                arm_label(self.arm),
                arm_label(against)
            ),
            (None, percent) => format!(
                "{}: {} ≥ {}%",
                self.kind.as_str(),
                arm_label(self.arm),
                percent.unwrap_or(0)
            ),
        }
    }
}

/// A parsed policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Policy {
    pub min_pairs: u64,
    pub incomplete: Missing,
    pub excluded: Missing,
    pub rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: Option<String>,
    #[serde(default)]
    evidence: Evidence,
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Evidence {
    min_pairs: Option<u64>,
    incomplete: Option<Missing>,
    excluded: Option<Missing>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    kind: RuleKind,
    arm: Arm,
    against: Option<Arm>,
    at_least_percent: Option<i64>,
}

impl RawRule {
    /// The rule numbered `n`, or why it is refused.
    fn rule(&self, n: usize) -> Result<Rule, String> {
        let kind = self.kind.as_str();
        if self.kind == RuleKind::ActivationAtLeast {
            if let Some(against) = self.against {
                return Err(format!(
                    "rule {n}: {kind} judges one arm and takes no `against` (found {:?})",
                    against.as_str()
                ));
            }
            if self.arm == Arm::Baseline {
                return Err(format!(
                    "rule {n}: {kind} needs a skill arm, a or b: the baseline has no skill of its own to load"
                ));
            }
            let percent = self.at_least_percent.ok_or_else(|| {
                format!("rule {n}: {kind} needs at_least_percent, a whole number from 1 to 100")
            })?;
            let percent = u32::try_from(percent)
                .ok()
                .filter(|p| (1..=100).contains(p))
                .ok_or_else(|| {
                    format!(
                        "rule {n}: at_least_percent = {percent} is not a whole number from 1 to 100"
                    )
                })?;
            return Ok(Rule {
                kind: self.kind,
                arm: self.arm,
                against: None,
                at_least_percent: Some(percent),
            });
        }
        if self.at_least_percent.is_some() {
            return Err(format!(
                "rule {n}: at_least_percent belongs to activation-at-least, not {kind}"
            ));
        }
        let against = self.against.ok_or_else(|| {
            format!("rule {n}: {kind} needs `against`: the arm it is compared with")
        })?;
        if !CONTRASTS.contains(&(self.arm, against)) {
            return Err(format!(
                "rule {n}: arm {:?} against {:?} is not a contrast a report has; use b against a, b against baseline, or a against baseline",
                self.arm.as_str(),
                against.as_str()
            ));
        }
        Ok(Rule::contrast(self.kind, self.arm, against))
    }
}

/// The contrasts a report has, as (arm, against).
const CONTRASTS: [(Arm, Arm); 3] = [
    (Arm::B, Arm::A),
    (Arm::B, Arm::Baseline),
    (Arm::A, Arm::Baseline),
];

impl Policy {
    /// Parses a policy file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, PolicyError> {
        let invalid = |message: String| PolicyError {
            origin: origin.to_owned(),
            message,
        };
        if text.len() > MAX_POLICY_BYTES {
            return Err(invalid(format!(
                "{} bytes; a policy is at most {MAX_POLICY_BYTES} bytes",
                text.len()
            )));
        }
        let file: File =
            toml::from_str(text).map_err(|e| invalid(e.to_string().trim_end().to_owned()))?;
        if let Some(format) = &file.format
            && format != POLICY_FORMAT
        {
            return Err(invalid(format!(
                "format {format:?}: this version reads {POLICY_FORMAT:?}"
            )));
        }
        if file.rule.is_empty() {
            return Err(invalid(
                "no [[rule]]: a policy needs at least one rule (kind, arm, against)".to_owned(),
            ));
        }
        if file.rule.len() > MAX_RULES {
            return Err(invalid(format!(
                "{} rules; a policy holds at most {MAX_RULES}",
                file.rule.len()
            )));
        }
        let mut rules: Vec<Rule> = Vec::with_capacity(file.rule.len());
        for (i, raw) in file.rule.iter().enumerate() {
            let rule = raw.rule(i + 1).map_err(invalid)?;
            let n = i + 1;
            // One threshold per arm: two would only say the stricter one twice.
            let same = |r: &Rule| {
                *r == rule
                    || (r.kind == RuleKind::ActivationAtLeast
                        && rule.kind == RuleKind::ActivationAtLeast
                        && r.arm == rule.arm)
            };
            if let Some(first) = rules.iter().position(same) {
                return Err(invalid(format!(
                    "rule {n} repeats rule {} ({})",
                    first + 1,
                    rule.name()
                )));
            }
            rules.push(rule);
        }
        let min_pairs = file.evidence.min_pairs.unwrap_or(1);
        if min_pairs == 0 {
            return Err(invalid(
                "evidence.min_pairs = 0: a rule judged on no pair says nothing; use 1 or more"
                    .to_owned(),
            ));
        }
        Ok(Self {
            min_pairs,
            incomplete: file.evidence.incomplete.unwrap_or(Missing::Inconclusive),
            excluded: file.evidence.excluded.unwrap_or(Missing::Inconclusive),
            rules,
        })
    }

    /// [`DEFAULT_POLICY`], parsed.
    pub fn default_policy() -> Self {
        // Tested to parse (tests below): a failure here is a bug in this file.
        #[allow(clippy::expect_used)]
        Self::parse(DEFAULT_POLICY, "default").expect("the default policy parses")
    }
}

/// A policy pinned in a manifest. The type is the manifest's (a plan names its gate; the gate
/// judges reports of plans): here are the operations on it.
pub use crate::manifest::GatePin as Pin;

impl Pin {
    /// Pins `text` (checked to parse); `origin` names it in errors.
    pub fn of(text: &str, origin: &str) -> Result<Self, PolicyError> {
        Policy::parse(text, origin)?;
        Ok(Self {
            sha256: Sha256Digest::of(text.as_bytes()).to_string(),
            text: text.to_owned(),
        })
    }

    /// The pinned policy, after checking the text still has the pinned hash.
    pub fn policy(&self) -> Result<Policy, PolicyError> {
        let origin = "pinned in the manifest";
        let actual = Sha256Digest::of(self.text.as_bytes()).to_string();
        if actual != self.sha256 {
            return Err(PolicyError {
                origin: origin.to_owned(),
                message: format!(
                    "its text hashes to {actual}, not the pinned {}: the manifest was altered",
                    self.sha256
                ),
            });
        }
        Policy::parse(&self.text, origin)
    }
}

/// Where the policy a judgement used came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Pinned in the manifest at plan time (a `--policy` file, if given, had the same hash).
    Pinned,
    /// A file the run did not pin: it may have been written after the results were seen.
    Unpinned,
    /// [`DEFAULT_POLICY`]: the run pinned none and no file was given.
    Default,
}

/// A gate verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Cleared,
    Missed,
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cleared => "cleared",
            Self::Missed => "missed",
            Self::Inconclusive => "inconclusive",
        }
    }

    /// The process exit code: 0 cleared, 1 missed, 3 inconclusive (2 is a usage or input error).
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Cleared => 0,
            Self::Missed => 1,
            Self::Inconclusive => 3,
        }
    }
}

/// One rule's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RuleResult {
    /// `no-breaks: B vs A`.
    pub name: String,
    pub rule: Rule,
    pub verdict: Verdict,
    /// One sentence.
    pub reason: String,
    /// The evidence behind it, one item each (tasks, families, pairs left out).
    pub details: Vec<String>,
}

/// The policy a judgement used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PolicyUsed {
    pub source: Source,
    pub sha256: String,
    pub policy: Policy,
}

/// A whole judgement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Judgement {
    pub verdict: Verdict,
    pub exit_code: u8,
    pub run: String,
    pub manifest_hash: String,
    /// The report's hash when it was sealed (an exported report); `null` for a journal run.
    pub report_hash: Option<String>,
    pub model: String,
    pub scripted: bool,
    pub complete: bool,
    pub planned: u64,
    pub executed: u64,
    pub policy: PolicyUsed,
    /// Why the run as a whole is inconclusive, if it is.
    pub run_reasons: Vec<String>,
    pub rules: Vec<RuleResult>,
    /// What the verdict does not say (an unpinned policy, a scripted model).
    pub warnings: Vec<String>,
}

/// `A`, `B`, `baseline`: as people read the arms everywhere else.
pub fn arm_label(arm: Arm) -> &'static str {
    match arm {
        Arm::Baseline => "baseline",
        Arm::A => "A",
        Arm::B => "B",
    }
}

/// Judges `report` by `policy`.
pub fn judge(report: &Report, policy: &PolicyUsed) -> Judgement {
    let summary = &report.summary;
    let mut run_reasons = Vec::new();
    if !report.run.complete && policy.policy.incomplete == Missing::Inconclusive {
        run_reasons.push(format!(
            "the run is not complete ({} of {} planned trials executed, status {}); the policy judges an incomplete run inconclusive",
            summary.executed,
            summary.planned,
            report.run.status.as_str()
        ));
    }
    if report.comparability.verdicts_by.len() > 1 {
        run_reasons.push(format!(
            "the verdicts come from {} checker versions (a recheck re-scored part of the run); recheck the whole run with one checker",
            report.comparability.verdicts_by.len()
        ));
    }
    let rules: Vec<RuleResult> = policy
        .policy
        .rules
        .iter()
        .map(|rule| judge_rule(report, &policy.policy, *rule))
        .collect();
    let verdict = if !run_reasons.is_empty() {
        Verdict::Inconclusive
    } else if rules.iter().any(|r| r.verdict == Verdict::Missed) {
        Verdict::Missed
    } else if rules.iter().any(|r| r.verdict == Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else {
        Verdict::Cleared
    };
    let mut warnings = Vec::new();
    if policy.source == Source::Unpinned {
        warnings.push(
            "the policy was not pinned in the run's manifest (skilltrial plan --gate): nothing shows it was written before the results were seen".to_owned(),
        );
    }
    let scripted = report.comparability.model.scripted;
    if scripted {
        warnings.push(
            "scripted model: the answers are scripted, so this gate checks the pipeline, not the skill".to_owned(),
        );
    }
    Judgement {
        verdict,
        exit_code: verdict.exit_code(),
        run: report.run.id.clone(),
        manifest_hash: report.manifest_hash.clone(),
        report_hash: report.report_hash.clone(),
        model: format!("{} ({})", report.manifest.model.profile, report.model_label),
        scripted,
        complete: report.run.complete,
        planned: summary.planned,
        executed: summary.executed,
        policy: policy.clone(),
        run_reasons,
        rules,
        warnings,
    }
}

fn judge_rule(report: &Report, policy: &Policy, rule: Rule) -> RuleResult {
    let result = |verdict: Verdict, reason: String, details: Vec<String>| RuleResult {
        name: rule.name(),
        rule,
        verdict,
        reason,
        details,
    };
    if rule.kind == RuleKind::ActivationAtLeast {
        return activation_at_least(report, rule.arm, rule.at_least_percent, result);
    }
    // `Policy::parse` gives every other kind its `against`.
    let Some(against) = rule.against else {
        return result(
            Verdict::Inconclusive,
            "the rule names no arm to compare with".to_owned(),
            Vec::new(),
        );
    };
    let (x, y) = (arm_label(rule.arm), arm_label(against));
    let Some(pair) = report
        .pairs
        .iter()
        .find(|p| p.x == rule.arm.as_str() && p.y == against.as_str())
    else {
        return result(
            Verdict::Inconclusive,
            format!("the run has no {x} and {y} arms to compare"),
            Vec::new(),
        );
    };
    if pair.complete_pairs < policy.min_pairs {
        return result(
            Verdict::Inconclusive,
            format!(
                "{} complete {x}/{y} pairs; the policy needs at least {}",
                pair.complete_pairs, policy.min_pairs
            ),
            Vec::new(),
        );
    }
    // A pair left out because a side has not run (the run stopped, or is still going) is the
    // run's incompleteness, which `incomplete` decides; one left out because a side got no
    // scored answer (an infrastructure error, an unknown or interrupted attempt) is `excluded`'s.
    let not_run = |e: &&Excluded| {
        [rule.arm, against].iter().any(|arm| {
            !matches!(
                outcome_of(report, &e.task, e.repetition, *arm),
                Some(o) if o != TrialOutcome::Pending && o != TrialOutcome::Done(Outcome::NotRun)
            )
        })
    };
    let (unfinished, unscored): (Vec<&Excluded>, Vec<&Excluded>) =
        pair.excluded.iter().partition(not_run);
    if !unscored.is_empty() && policy.excluded == Missing::Inconclusive {
        return result(
            Verdict::Inconclusive,
            format!(
                "{} (task, repetition) pairs were left out (no scored answer on one side); the policy judges that inconclusive",
                unscored.len()
            ),
            unscored
                .iter()
                .map(|e| format!("{} repetition {}: {}", e.task, e.repetition, e.reason))
                .collect(),
        );
    }
    let mut judged = match rule.kind {
        RuleKind::NoBreaks => no_breaks(report, rule.arm, against, result),
        RuleKind::PassesAtLeast => passes_at_least(pair, x, y, result),
        RuleKind::FamiliesAtLeast => families_at_least(report, pair, x, y, result),
        // Decided above, before the pairs.
        RuleKind::ActivationAtLeast => {
            activation_at_least(report, rule.arm, rule.at_least_percent, result)
        }
    };
    for (count, what) in [
        (unfinished.len(), "not run yet"),
        (unscored.len(), "with no scored answer on one side"),
    ] {
        if count > 0 {
            judged.details.push(format!(
                "judged without {count} (task, repetition) pairs {what}"
            ));
        }
    }
    judged
}

/// A trial's outcome by task, repetition and arm.
fn outcome_of(report: &Report, task: &str, repetition: u32, arm: Arm) -> Option<TrialOutcome> {
    report
        .trials
        .iter()
        .find(|t| t.task == task && t.repetition == repetition && t.arm == arm.as_str())
        .map(|t| t.outcome)
}

fn no_breaks(
    report: &Report,
    arm: Arm,
    against: Arm,
    result: impl Fn(Verdict, String, Vec<String>) -> RuleResult,
) -> RuleResult {
    let (x, y) = (arm_label(arm), arm_label(against));
    let key = format!("{}_vs_{}", arm.as_str(), against.as_str());
    let lists = report
        .summary
        .changes
        .each()
        .into_iter()
        .find(|(k, ..)| *k == key)
        .and_then(|(.., lists)| lists);
    let Some(lists) = lists else {
        return result(
            Verdict::Inconclusive,
            format!("no task has a verdict for {x} against {y} yet"),
            Vec::new(),
        );
    };
    let counts = |task: &str| -> String {
        let row = report.tasks.iter().find(|t| t.task == task);
        let cell = |arm: Arm| {
            row.and_then(|r| r.arms.get(arm.as_str()))
                .map_or_else(|| "—".to_owned(), |c| format!("{}/{}", c.pass, c.executed))
        };
        format!("{task} ({y} {}, {x} {})", cell(against), cell(arm))
    };
    // The tasks the verdicts judged: both arms executed at least once.
    let judged = report
        .tasks
        .iter()
        .filter(|t| {
            [arm, against].iter().all(|a| {
                t.arms
                    .get(a.as_str())
                    .is_some_and(|c| c.majority().is_some())
            })
        })
        .count();
    let passed_by_y = report
        .tasks
        .iter()
        .filter(|t| {
            t.arms.get(against.as_str()).and_then(|c| c.majority()) == Some(true)
                && t.arms
                    .get(arm.as_str())
                    .is_some_and(|c| c.majority().is_some())
        })
        .count();
    if lists.breaks.is_empty() {
        result(
            Verdict::Cleared,
            format!(
                "{x} breaks none of the {passed_by_y} tasks {y} passes ({judged} tasks judged)"
            ),
            Vec::new(),
        )
    } else {
        result(
            Verdict::Missed,
            format!(
                "{x} breaks {} of the {passed_by_y} tasks {y} passes: {y} passes them in most repetitions, {x} fails them in most",
                lists.breaks.len()
            ),
            lists.breaks.iter().map(|t| counts(t)).collect(),
        )
    }
}

fn passes_at_least(
    pair: &Pair,
    x: &str,
    y: &str,
    result: impl Fn(Verdict, String, Vec<String>) -> RuleResult,
) -> RuleResult {
    let n = pair.complete_pairs;
    // Over the same pairs, x passes at least as often as y exactly when x_only ≥ y_only.
    let (x_pass, y_pass) = (
        pair.both_pass.saturating_add(pair.x_only),
        pair.both_pass.saturating_add(pair.y_only),
    );
    let counts = format!("{x} passed {x_pass} of {n} complete pairs, {y} {y_pass}");
    let test = pair
        .test
        .p
        .as_ref()
        .map(|p| {
            let exact = if p.readable() == p.text {
                String::new()
            } else {
                format!("exactly {}; ", p.text)
            };
            format!(
                "{} p = {} ({exact}for reading, not part of the rule)",
                pair.test.name,
                p.readable()
            )
        })
        .into_iter()
        .collect();
    if pair.x_only >= pair.y_only {
        result(Verdict::Cleared, counts, test)
    } else {
        result(
            Verdict::Missed,
            format!("{counts}: {x} passes less often than {y}"),
            test,
        )
    }
}

fn families_at_least(
    report: &Report,
    pair: &Pair,
    x: &str,
    y: &str,
    result: impl Fn(Verdict, String, Vec<String>) -> RuleResult,
) -> RuleResult {
    const NO_FAMILY: &str = "(no family)";
    let family_of: BTreeMap<&str, &str> = report
        .tasks
        .iter()
        .map(|t| (t.task.as_str(), t.family.as_deref().unwrap_or(NO_FAMILY)))
        .collect();
    // Per family: (x passes − y passes, complete pairs), over the contrast's complete pairs.
    let mut families: BTreeMap<&str, (i64, u64)> = BTreeMap::new();
    for task in &pair.per_task {
        let family = family_of
            .get(task.task.as_str())
            .copied()
            .unwrap_or(NO_FAMILY);
        let entry = families.entry(family).or_insert((0, 0));
        entry.0 = entry.0.saturating_add(task.x_minus_y_passes);
        entry.1 = entry.1.saturating_add(task.pairs);
    }
    let line = |(family, (d, n)): (&&str, &(i64, u64))| {
        format!("{family}: {x} − {y} = {d:+} passes over {n} pairs")
    };
    let behind: Vec<String> = families
        .iter()
        .filter(|(_, (d, _))| *d < 0)
        .map(line)
        .collect();
    if behind.is_empty() {
        result(
            Verdict::Cleared,
            format!(
                "{x} passes at least as often as {y} in each of the {} task families",
                families.len()
            ),
            families.iter().map(line).collect(),
        )
    } else {
        result(
            Verdict::Missed,
            format!(
                "{x} passes less often than {y} in {} of the {} task families",
                behind.len(),
                families.len()
            ),
            behind,
        )
    }
}

/// `activation-at-least`: the arm's activation rate (trials that loaded its own skill ÷ its trials
/// with evidence) is at least `percent`, decided on the exact counts (`loaded × 100 ≥ percent ×
/// trials`). A report without activation (an inline run) misses: the policy asks for evidence
/// the run's delivery cannot give.
fn activation_at_least(
    report: &Report,
    arm: Arm,
    percent: Option<u32>,
    result: impl Fn(Verdict, String, Vec<String>) -> RuleResult,
) -> RuleResult {
    let x = arm_label(arm);
    let percent = u64::from(percent.unwrap_or(100));
    let Some(activation) = &report.activation else {
        return result(
            Verdict::Missed,
            format!(
                "the report has no activation evidence: its skills were delivered inline, so nothing shows whether the model loads {x}'s skill (plan --delivery progressive measures it)"
            ),
            Vec::new(),
        );
    };
    let Some(counts) = activation.arm(arm.as_str()) else {
        return result(
            Verdict::Inconclusive,
            format!("the run has no {x} arm"),
            Vec::new(),
        );
    };
    let Some(rate) = &counts.rate else {
        return result(
            Verdict::Inconclusive,
            format!("no {x} trial has activation evidence yet"),
            Vec::new(),
        );
    };
    let mut details = vec![format!(
        "95% Wilson interval {}–{} (for reading, not part of the rule)",
        crate::ledger::percent(&rate.wilson95[0]),
        crate::ledger::percent(&rate.wilson95[1])
    )];
    for other in &counts.others_instead {
        details.push(format!(
            "loaded {} instead in {}",
            other.skill,
            crate::report::count_of(other.trials, "trial", "trials")
        ));
    }
    let counted = format!(
        "{x} loaded its skill in {} of {} trials ({})",
        rate.num,
        rate.den,
        crate::ledger::percent(&rate.value)
    );
    if u128::from(rate.num) * 100 >= u128::from(percent) * u128::from(rate.den) {
        result(
            Verdict::Cleared,
            format!("{counted}: at least {percent}%"),
            details,
        )
    } else {
        result(
            Verdict::Missed,
            format!("{counted}: below {percent}%"),
            details,
        )
    }
}

/// The judgement for people: the verdict first, then each rule with its reason.
pub fn render_text(j: &Judgement) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gate      {} (exit {})",
        j.verdict.as_str().to_uppercase(),
        j.exit_code
    );
    let _ = writeln!(out, "run       {}  ({})", short(&j.run), j.model);
    let _ = writeln!(
        out,
        "policy    {} {}",
        match j.policy.source {
            Source::Pinned => "pinned",
            Source::Unpinned => "unpinned file",
            Source::Default => "default",
        },
        j.policy.sha256
    );
    for reason in &j.run_reasons {
        let _ = writeln!(out, "run       inconclusive: {reason}");
    }
    for rule in &j.rules {
        let _ = writeln!(
            out,
            "{:<13} {}: {}",
            rule.verdict.as_str(),
            rule.name,
            rule.reason
        );
        for d in &rule.details {
            let _ = writeln!(out, "{:<13}   {d}", "");
        }
    }
    for w in &j.warnings {
        let _ = writeln!(out, "note      {w}");
    }
    out
}

/// GitHub Actions workflow commands: one annotation per rule (error when missed, warning when
/// inconclusive, notice when cleared), then the verdict.
pub fn render_github(j: &Judgement) -> String {
    let mut out = String::new();
    let level = |v: Verdict| match v {
        Verdict::Cleared => "notice",
        Verdict::Missed => "error",
        Verdict::Inconclusive => "warning",
    };
    let mut annotate = |level: &str, title: &str, message: &str| {
        let _ = writeln!(
            out,
            "::{level} title={}::{}",
            gh_property(&format!("SkillTrial gate: {title}")),
            gh_data(message)
        );
    };
    for reason in &j.run_reasons {
        annotate("warning", "the run", reason);
    }
    for rule in &j.rules {
        let mut message = rule.reason.clone();
        for d in &rule.details {
            message.push('\n');
            message.push_str(d);
        }
        annotate(level(rule.verdict), &rule.name, &message);
    }
    for w in &j.warnings {
        annotate("notice", "note", w);
    }
    let _ = writeln!(
        out,
        "::{} title={}::{} (run {}, policy {})",
        level(j.verdict),
        gh_property("SkillTrial gate"),
        gh_data(j.verdict.as_str()),
        short(&j.run),
        gh_data(&j.policy.sha256)
    );
    out
}

/// A workflow command's message: `%`, CR and LF escaped, as the runner expects.
fn gh_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: the message escapes plus `:` and `,`.
fn gh_property(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// JUnit XML: one test case per rule (a failure when missed, skipped when inconclusive) and one
/// for the run's evidence.
pub fn render_junit(j: &Judgement) -> String {
    let failures = j
        .rules
        .iter()
        .filter(|r| r.verdict == Verdict::Missed)
        .count();
    let mut skipped = j
        .rules
        .iter()
        .filter(|r| r.verdict == Verdict::Inconclusive)
        .count();
    if !j.run_reasons.is_empty() {
        skipped += 1;
    }
    let tests = j.rules.len() + 1;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"skilltrial gate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"skilltrial gate {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
        xml(short(&j.run))
    );
    out.push_str("    <properties>\n");
    for (name, value) in [
        ("verdict", j.verdict.as_str().to_owned()),
        ("run", j.run.clone()),
        ("manifest_hash", j.manifest_hash.clone()),
        ("model", j.model.clone()),
        ("policy_sha256", j.policy.sha256.clone()),
    ] {
        let _ = writeln!(
            out,
            "      <property name=\"{name}\" value=\"{}\"/>",
            xml(&value)
        );
    }
    out.push_str("    </properties>\n");
    let _ = write!(
        out,
        "    <testcase classname=\"skilltrial.gate\" name=\"evidence: the run\""
    );
    if j.run_reasons.is_empty() {
        out.push_str("/>\n");
    } else {
        let _ = writeln!(
            out,
            ">\n      <skipped message=\"{}\"/>\n    </testcase>",
            xml(&j.run_reasons.join("; "))
        );
    }
    for rule in &j.rules {
        let _ = write!(
            out,
            "    <testcase classname=\"skilltrial.gate\" name=\"{}\"",
            xml(&rule.name)
        );
        let body = rule.details.join("\n");
        match rule.verdict {
            Verdict::Cleared => {
                let _ = writeln!(
                    out,
                    ">\n      <system-out>{}</system-out>\n    </testcase>",
                    xml(&rule.reason)
                );
            }
            Verdict::Missed => {
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{}\" type=\"missed\">{}</failure>\n    </testcase>",
                    xml(&rule.reason),
                    xml(&body)
                );
            }
            Verdict::Inconclusive => {
                let _ = writeln!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    xml(&rule.reason)
                );
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text for an XML attribute or element: the five entities escaped, and the characters XML 1.0
/// cannot hold replaced.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policy_parses_to_the_documented_rules() {
        let p = Policy::default_policy();
        assert_eq!(p.min_pairs, 1);
        assert_eq!(p.incomplete, Missing::Inconclusive);
        assert_eq!(p.excluded, Missing::Inconclusive);
        assert_eq!(
            p.rules,
            vec![
                Rule::contrast(RuleKind::NoBreaks, Arm::B, Arm::A),
                Rule::contrast(RuleKind::PassesAtLeast, Arm::B, Arm::A),
            ]
        );
    }

    #[test]
    fn a_bad_policy_is_refused_naming_the_reason() {
        let bad = |text: &str, says: &str| {
            let e = Policy::parse(text, "gate.toml").unwrap_err().to_string();
            assert!(e.starts_with("gate policy gate.toml: "), "{e}");
            assert!(e.contains(says), "{text:?}: {e}");
        };
        bad("", "no [[rule]]");
        bad(
            "format = \"other\"\n[[rule]]\nkind=\"no-breaks\"\narm=\"b\"\nagainst=\"a\"\n",
            "this version reads",
        );
        bad(
            "[[rule]]\nkind=\"no-breaks\"\narm=\"a\"\nagainst=\"b\"\n",
            "rule 1: arm \"a\" against \"b\"",
        );
        bad(
            "[[rule]]\nkind=\"never\"\narm=\"b\"\nagainst=\"a\"\n",
            "unknown variant",
        );
        bad(
            "[[rule]]\nkind=\"no-breaks\"\narm=\"b\"\nagainst=\"a\"\nmargin=1\n",
            "unknown field",
        );
        bad(
            "[[rule]]\nkind=\"no-breaks\"\narm=\"b\"\nagainst=\"a\"\n[[rule]]\nkind=\"no-breaks\"\narm=\"b\"\nagainst=\"a\"\n",
            "rule 2 repeats rule 1",
        );
        bad(
            "[evidence]\nmin_pairs=0\n[[rule]]\nkind=\"no-breaks\"\narm=\"b\"\nagainst=\"a\"\n",
            "min_pairs = 0",
        );
        bad(
            "[evidence]\nmin_pairs=-1\n[[rule]]\nkind=\"no-breaks\"\narm=\"b\"\nagainst=\"a\"\n",
            "min_pairs",
        );
        bad(
            "[evidence]\nincomplete=\"maybe\"\n[[rule]]\nkind=\"no-breaks\"\narm=\"b\"\nagainst=\"a\"\n",
            "unknown variant",
        );
        bad(&"#".repeat(MAX_POLICY_BYTES + 1), "at most");
    }

    const ACTIVATION_RULE: &str =
        "[[rule]]\nkind = \"activation-at-least\"\narm = \"b\"\nat_least_percent = 75\n";

    fn judged(report: &Report, text: &str) -> Judgement {
        let policy = Policy::parse(text, "gate.toml").unwrap();
        judge(
            report,
            &PolicyUsed {
                source: Source::Unpinned,
                sha256: String::new(),
                policy,
            },
        )
    }

    #[test]
    fn an_activation_rule_parses_with_one_arm_and_a_whole_percent() {
        let p = Policy::parse(ACTIVATION_RULE, "gate.toml").unwrap();
        assert_eq!(
            p.rules,
            [Rule {
                kind: RuleKind::ActivationAtLeast,
                arm: Arm::B,
                against: None,
                at_least_percent: Some(75),
            }]
        );
        assert_eq!(p.rules[0].name(), "activation-at-least: B ≥ 75%");
        assert_eq!(
            serde_json::to_value(p.rules[0]).unwrap(),
            serde_json::json!({"kind": "activation-at-least", "arm": "b", "at_least_percent": 75})
        );
        // A contrast rule serializes as it always did.
        assert_eq!(
            serde_json::to_value(Rule::contrast(RuleKind::NoBreaks, Arm::B, Arm::A)).unwrap(),
            serde_json::json!({"kind": "no-breaks", "arm": "b", "against": "a"})
        );
        let bad = |text: &str, says: &str| {
            let e = Policy::parse(text, "gate.toml").unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        };
        let rule = |body: &str| format!("[[rule]]\nkind = \"activation-at-least\"\n{body}");
        bad(
            &rule("arm = \"baseline\"\nat_least_percent = 50\n"),
            "rule 1: activation-at-least needs a skill arm, a or b",
        );
        bad(
            &rule("arm = \"b\"\n"),
            "rule 1: activation-at-least needs at_least_percent, a whole number from 1 to 100",
        );
        for percent in ["0", "101", "-5"] {
            bad(
                &rule(&format!("arm = \"b\"\nat_least_percent = {percent}\n")),
                &format!("at_least_percent = {percent} is not a whole number from 1 to 100"),
            );
        }
        bad(
            &rule("arm = \"b\"\nat_least_percent = 0.75\n"),
            "invalid type",
        );
        bad(
            &rule("arm = \"b\"\nagainst = \"a\"\nat_least_percent = 75\n"),
            "takes no `against`",
        );
        bad(
            "[[rule]]\nkind = \"no-breaks\"\narm = \"b\"\n",
            "rule 1: no-breaks needs `against`",
        );
        bad(
            "[[rule]]\nkind = \"no-breaks\"\narm = \"b\"\nagainst = \"a\"\nat_least_percent = 5\n",
            "at_least_percent belongs to activation-at-least, not no-breaks",
        );
        bad(
            &format!(
                "{ACTIVATION_RULE}[[rule]]\nkind = \"activation-at-least\"\narm = \"b\"\nat_least_percent = 90\n"
            ),
            "rule 2 repeats rule 1",
        );
    }

    #[test]
    fn an_activation_rule_clears_at_the_threshold_and_misses_below_it() {
        // Given the progressive run: B loaded its skill in 6 of 6 trials, A in 4 of 6 (67%).
        let report = crate::report::testing::progressive();
        let policy = |arm: &str, percent: u32| {
            format!(
                "[evidence]\nincomplete = \"judge\"\nexcluded = \"judge\"\n[[rule]]\nkind = \"activation-at-least\"\narm = \"{arm}\"\nat_least_percent = {percent}\n"
            )
        };
        let b = judged(&report, &policy("b", 100));
        assert_eq!(b.rules[0].verdict, Verdict::Cleared, "{b:?}");
        assert_eq!(
            b.rules[0].reason,
            "B loaded its skill in 6 of 6 trials (100%): at least 100%"
        );
        // 4/6 is exactly 66.67%: 66% clears, 67% misses (exact counts, no rounding).
        let a = judged(&report, &policy("a", 66));
        assert_eq!(a.rules[0].verdict, Verdict::Cleared, "{a:?}");
        let a = judged(&report, &policy("a", 67));
        assert_eq!(a.rules[0].verdict, Verdict::Missed);
        assert_eq!(a.verdict, Verdict::Missed);
        assert_eq!(
            a.rules[0].reason,
            "A loaded its skill in 4 of 6 trials (67%): below 67%"
        );
        assert_eq!(
            a.rules[0].details,
            [
                "95% Wilson interval 30%–90% (for reading, not part of the rule)",
                "loaded solana-other instead in 1 trial"
            ]
        );
        assert!(render_text(&a).contains("missed        activation-at-least: A ≥ 67%: A loaded its skill in 4 of 6 trials (67%): below 67%"));
    }

    #[test]
    fn an_activation_rule_misses_a_report_without_activation_and_waits_for_evidence() {
        // Given an inline report: the rule misses, saying why.
        let inline = crate::report::testing::rich();
        let j = judged(
            &inline,
            &format!("[evidence]\nincomplete = \"judge\"\n{ACTIVATION_RULE}"),
        );
        assert_eq!(j.rules[0].verdict, Verdict::Missed);
        assert!(
            j.rules[0].reason.starts_with(
                "the report has no activation evidence: its skills were delivered inline"
            ),
            "{}",
            j.rules[0].reason
        );
        // Given activation, but no B trial with evidence yet: inconclusive.
        let mut waiting = crate::report::testing::progressive();
        for t in waiting.trials.iter_mut().filter(|t| t.arm == "b") {
            t.evidence = None;
        }
        let waiting = crate::report::rederive(&waiting);
        let j = judged(
            &waiting,
            &format!("[evidence]\nincomplete = \"judge\"\n{ACTIVATION_RULE}"),
        );
        assert_eq!(j.rules[0].verdict, Verdict::Inconclusive);
        assert_eq!(j.rules[0].reason, "no B trial has activation evidence yet");
    }

    #[test]
    fn a_pin_keeps_the_text_and_refuses_an_altered_one() {
        let pin = Pin::of(DEFAULT_POLICY, "gate.toml").unwrap();
        assert_eq!(
            pin.sha256,
            Sha256Digest::of(DEFAULT_POLICY.as_bytes()).to_string()
        );
        assert_eq!(pin.policy().unwrap(), Policy::default_policy());
        let mut altered = pin.clone();
        altered.text = altered.text.replace("min_pairs = 1", "min_pairs = 2");
        let e = altered.policy().unwrap_err().to_string();
        assert!(e.contains("the manifest was altered"), "{e}");
    }

    #[test]
    fn workflow_commands_and_xml_escape_what_would_break_them() {
        assert_eq!(gh_data("50% a\r\nb"), "50%25 a%0D%0Ab");
        assert_eq!(gh_property("gate: a, b"), "gate%3A a%2C b");
        assert_eq!(
            xml("<a href=\"x\">&'\u{1}\n"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;\u{FFFD}&#10;"
        );
    }
}

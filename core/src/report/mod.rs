//! Reports (docs/reports.md): the typed model of a run's export, built once by [`build`] from plain run
//! facts, sealed with its hash, and read by the HTML view, `compare`, `verify` and the CLI summary.
//!
//! The export holds the manifest, every trial and attempt (outcome, reasons, usage, fingerprint,
//! the stored answer), per-arm success with Wilson intervals, the paired comparisons, per-task
//! verdicts, cost and comparability. Its `report_hash` is SHA-256 over the RFC 8785 canonical
//! form of the whole document *without* the `report_hash` member; the manifest hash is SHA-256
//! over the canonical form of its `manifest` member. Anyone holding the file can recompute both.
//!
//! **Invariant:** the types serialize to exactly the members the untyped v2 builder wrote, with
//! the same `null`s and the same absent members, so a report built from the same journal has the
//! same canonical bytes and the same hash (pinned by `core/tests/report_format.rs`). Every
//! `Option` below is written as `null` when empty unless it says otherwise.

mod activation;
mod build;
mod charts;
pub mod comparable;
mod facts;
pub mod html;
mod pairs;
mod seal;
mod settled;
mod tasks;
#[cfg(test)]
pub(crate) mod testing;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::delivery::TrialEvidence;
use crate::manifest::{BundleRef, Manifest, PackRef, Sampling};
use crate::outcome::Outcome;
use crate::profile::ProviderKind;
use crate::settlement::Settlement;
use crate::state::{AttemptState, RunStatus};
use crate::stats::Fraction;

pub use activation::{
    Activation, ArmActivation, OtherSkill, TaskActivation, TaskLoads, ToolErrorTotal,
    readable_files,
};
pub use build::{Derivation, build, derivations, rederive};
pub use facts::{AttemptFacts, RunFacts, TrialFacts};
pub use seal::ReportError;

/// The export format name. v2: p-values and Holm values as exact fractions with a
/// `text` form, per-attempt runner time (`runner_us`) instead of wall clock minus latency, the
/// first-screen `summary.changes`, and one shared `summary.caveat`. The hash is computed exactly
/// as in v1; the name changed because the members did. Typing the document (`Report`) changed
/// no byte of it, so the name stays.
pub const FORMAT: &str = "skilltrial-report-v2";

/// Shown with every export.
pub const SENSITIVE_WARNING: &str = "This report holds raw model answers, which may contain sensitive content. It is written to your disk only and never uploaded; review it before sharing.";

/// The warning of a hosted run's report: the runner that executed it keeps it for its owner.
pub const HOSTED_WARNING: &str = "This report holds raw model answers, which may contain sensitive content. The runner that executed the run keeps it and serves it to the run's wallet only; review it before sharing.";

/// A trial's outcome: its latest attempt's, or `pending` while it has none. Written as the
/// outcome's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TrialOutcome {
    Pending,
    Done(Outcome),
}

impl TrialOutcome {
    /// The text the report writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Done(o) => o.as_str(),
        }
    }

    /// The model answered and the checker scored it (see [`Outcome::is_executed`]).
    pub fn is_executed(self) -> bool {
        matches!(self, Self::Done(o) if o.is_executed())
    }
}

impl std::fmt::Display for TrialOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TrialOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TrialOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        if text == "pending" {
            return Ok(Self::Pending);
        }
        text.parse()
            .map(Self::Done)
            .map_err(serde::de::Error::custom)
    }
}

/// The whole export. Members in the order people read them; the canonical form sorts them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Always [`FORMAT`].
    pub format: String,
    pub generated_by: GeneratedBy,
    /// [`SENSITIVE_WARNING`]; [`HOSTED_WARNING`] for a hosted run's report.
    pub warning: String,
    pub run: Run,
    /// `sha256:…` of the canonical `manifest`: the run id.
    pub manifest_hash: String,
    pub manifest: Manifest,
    /// "scripted (not a real model)" or "real model".
    pub model_label: String,
    pub comparability: Comparability,
    pub summary: Summary,
    pub pairs: Vec<Pair>,
    pub tasks: Vec<TaskRow>,
    pub cost: Cost,
    pub trials: Vec<Trial>,
    /// Progressive runs: what the trials showed about loading each arm's skill, summed from their
    /// evidence. Absent, not `null`, when no trial has evidence (every inline run), so those
    /// reports keep their bytes and hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    /// A hosted run's settlement: every evidence record and the batches it was settled in
    /// (docs/program.md). Absent, not `null`, in a local run, so its bytes and hash are unchanged;
    /// the report hash covers it like any other member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settlement: Option<Settlement>,
    /// Absent until [`Report::seal`]; the hash covers everything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeneratedBy {
    pub app: String,
    pub version: String,
}

/// The run as the journal records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Run {
    pub id: String,
    /// The journal's status, `interrupted` for a `running` run nobody holds.
    pub status: RunStatus,
    /// Every planned trial has a model result.
    pub complete: bool,
    pub created_at_ms: i64,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    /// Requests in flight at once in the run's latest invocation (`--concurrency`); absent for
    /// runs journaled before it was recorded, which ran one at a time. It changes how long a
    /// run took, never its results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
}

/// What must match for two runs to be compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Comparability {
    pub model: ModelIdentity,
    pub pack: PackRef,
    pub checker: CheckerIdentity,
    /// The checkers that produced the verdicts shown (a `recheck` may have re-scored them).
    pub verdicts_by: Vec<CheckerIdentity>,
    pub sampling: Sampling,
    pub prompt_template_sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelIdentity {
    pub provider: ProviderKind,
    pub model: String,
    pub revision: Option<String>,
    pub scripted: bool,
    /// What the provider said it ran, sorted and without duplicates.
    pub reported_models: Vec<String>,
    pub system_fingerprints: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckerIdentity {
    pub version: String,
    pub source_sha256: String,
}

/// The first screen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub planned: u64,
    pub executed: u64,
    pub complete: bool,
    pub arms: Vec<ArmSummary>,
    /// Named only in a complete run.
    pub leader: Option<Leader>,
    pub changes: Changes,
    pub caveat: String,
}

/// One arm's counts by outcome; they add up to `planned`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArmSummary {
    pub arm: String,
    /// `null` for the baseline.
    pub bundle: Option<BundleRef>,
    pub planned: u64,
    pub executed: u64,
    pub pass: u64,
    pub fail: u64,
    pub invalid_output: u64,
    pub unsupported_case: u64,
    pub infrastructure_error: u64,
    pub unknown: u64,
    pub interrupted: u64,
    pub not_run: u64,
    pub pending: u64,
    /// pass ÷ executed; `null` with nothing executed.
    pub success: Option<Rate>,
    /// Consistency across repetitions (pass^k, pass@k). Absent only from reports written before
    /// it existed, whose bytes and hash it then leaves unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

/// Consistency across the k repetitions of each task, over the tasks whose k repetitions all have
/// a scored answer: `pass_hat_k` (pass^k) is the share of those tasks passed in every repetition,
/// how reliably the arm gets a task right; `pass_at_k` (pass@k) the share passed in at least one,
/// whether it can get the task right at all. With k = 1 both equal the success rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Consistency {
    /// The repetitions per task (the manifest's).
    pub k: u32,
    /// Tasks with all k repetitions scored: the denominator of both rates.
    pub tasks: u64,
    /// Tasks passed in every repetition ÷ `tasks`; `null` when `tasks` is 0.
    pub pass_hat_k: Option<Rate>,
    /// Tasks passed in at least one repetition ÷ `tasks`; `null` when `tasks` is 0.
    pub pass_at_k: Option<Rate>,
}

impl Consistency {
    /// An arm's consistency from its per-task counts and the manifest's k.
    pub fn of<'a>(k: u32, per_task: impl Iterator<Item = &'a TaskArm>) -> Self {
        let (mut tasks, mut every, mut any) = (0u64, 0u64, 0u64);
        for counts in per_task.filter(|c| c.executed == u64::from(k)) {
            tasks += 1;
            if counts.pass == counts.executed {
                every += 1;
            }
            if counts.pass > 0 {
                any += 1;
            }
        }
        Self {
            k,
            tasks,
            pass_hat_k: Rate::of(every, tasks),
            pass_at_k: Rate::of(any, tasks),
        }
    }

    /// `pass^3 4/6 · pass@3 5/6 tasks`, or that no task has all its repetitions scored.
    pub fn text(&self) -> String {
        match (&self.pass_hat_k, &self.pass_at_k) {
            (Some(every), Some(any)) => format!(
                "pass^{k} {}/{} · pass@{k} {}/{} tasks",
                every.num,
                every.den,
                any.num,
                any.den,
                k = self.k
            ),
            _ => format!(
                "pass^{k} and pass@{k} wait for a task with all {k} repetitions scored",
                k = self.k
            ),
        }
    }
}

/// A proportion with its Wilson 95% interval, decimals as six-place strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    pub num: u64,
    pub den: u64,
    /// num / den, six decimals.
    pub value: String,
    /// The Wilson 95% interval's bounds, six decimals.
    pub wilson95: [String; 2],
}

impl Rate {
    /// `num / den` with its interval; `None` when `den` is 0.
    pub fn of(num: u64, den: u64) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let (lo, hi) = crate::stats::wilson95(num, den).unwrap_or((0.0, 1.0));
        Some(Self {
            num,
            den,
            value: format!("{:.6}", num as f64 / den as f64),
            wilson95: [format!("{lo:.6}"), format!("{hi:.6}")],
        })
    }

    /// The value as a number (the string is six-place decimal).
    pub fn as_f64(&self) -> Option<f64> {
        self.value.parse().ok()
    }
}

/// The arm with the most passes in a complete run, or a tie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Leader {
    /// `null` on a tie.
    pub arm: Option<String>,
    pub note: String,
}

/// Per contrast, the tasks the first arm fixes and breaks. A contrast whose arms the run does
/// not have is absent (not `null`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Changes {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_vs_a: Option<FixesBreaks>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_vs_baseline: Option<FixesBreaks>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_vs_baseline: Option<FixesBreaks>,
}

impl Changes {
    /// The contrasts in reading order: (key, x, y, its lists).
    pub fn each(
        &self,
    ) -> [(
        &'static str,
        &'static str,
        &'static str,
        Option<&FixesBreaks>,
    ); 3] {
        [
            ("b_vs_a", "b", "a", self.b_vs_a.as_ref()),
            (
                "b_vs_baseline",
                "b",
                "baseline",
                self.b_vs_baseline.as_ref(),
            ),
            (
                "a_vs_baseline",
                "a",
                "baseline",
                self.a_vs_baseline.as_ref(),
            ),
        ]
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FixesBreaks {
    pub fixes: Vec<String>,
    pub breaks: Vec<String>,
}

/// One paired contrast x − y over complete (task, repetition) pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    /// `x-y`, e.g. `b-a`.
    pub contrast: String,
    pub x: String,
    pub y: String,
    pub complete_pairs: u64,
    pub excluded: Vec<Excluded>,
    pub both_pass: u64,
    pub x_only: u64,
    pub y_only: u64,
    pub neither: u64,
    pub x_pass_rate: Option<Rate>,
    pub y_pass_rate: Option<Rate>,
    pub observed_difference: Option<Difference>,
    pub per_task: Vec<TaskDifference>,
    pub test: PairTest,
    /// The contrast in one or two sentences.
    pub statement: String,
}

/// A (task, repetition) left out of a contrast, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Excluded {
    pub task: String,
    pub repetition: u32,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Difference {
    pub pairs: u64,
    pub x_minus_y_passes: i64,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskDifference {
    pub task: String,
    pub x_minus_y_passes: i64,
    pub pairs: u64,
}

/// The paired test of a contrast; `p` is `null` when the test has no units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairTest {
    pub name: String,
    pub units: u64,
    pub p: Option<ExactFraction>,
    pub holm_p: Option<ExactFraction>,
}

/// An exact fraction: numerator and denominator as decimal strings (their 2^n denominators
/// outgrow JSON's safe integers), its reading ([`fraction_text`]) and a six-place value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExactFraction {
    pub num: String,
    pub den: String,
    pub text: String,
    pub value: String,
}

impl ExactFraction {
    /// The reduced fraction in its report form.
    pub fn of(f: Fraction) -> Self {
        let f = reduced(f);
        Self {
            num: f.num.to_string(),
            den: f.den.to_string(),
            text: fraction_text(f),
            value: format!("{:.6}", f.value()),
        }
    }

    /// The number for reading ([`Fraction::readable`]: `2.8e-14`, `0.031`); `text` where the
    /// members are not integers (a document from elsewhere).
    pub fn readable(&self) -> String {
        match (self.num.parse::<u128>(), self.den.parse::<u128>()) {
            (Ok(num), Ok(den)) => Fraction { num, den }.readable(),
            _ => self.text.clone(),
        }
    }
}

/// One row of the per-task table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRow {
    pub task: String,
    pub family: Option<String>,
    /// Per arm of the manifest: passes and executed repetitions.
    pub arms: BTreeMap<String, TaskArm>,
    pub verdicts: Verdicts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArm {
    pub pass: u64,
    pub executed: u64,
}

impl TaskArm {
    /// The task's majority verdict for this arm: passing in at least half of the executed
    /// repetitions counts as passing; `None` with nothing executed.
    pub fn majority(&self) -> Option<bool> {
        (self.executed > 0).then(|| self.pass.saturating_mul(2) >= self.executed)
    }
}

/// Per-task majority verdicts. A member is absent when the run has no such arm, and `null` when
/// the arm has it but the task has no verdict yet (no executed result on one side).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Verdicts {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "present_or_absent"
    )]
    #[schemars(with = "Option<String>")]
    pub a: Option<Option<String>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "present_or_absent"
    )]
    #[schemars(with = "Option<String>")]
    pub b: Option<Option<String>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "present_or_absent"
    )]
    #[schemars(with = "Option<String>")]
    pub b_vs_a: Option<Option<String>>,
}

impl Verdicts {
    /// A verdict by its key (`a`, `b`, `b_vs_a`), `None` when absent or `null`.
    pub fn get(&self, key: &str) -> Option<&str> {
        match key {
            "a" => self.a.as_ref(),
            "b" => self.b.as_ref(),
            "b_vs_a" => self.b_vs_a.as_ref(),
            _ => None,
        }
        .and_then(|v| v.as_deref())
    }

    /// Whether the member `key` is present (`null` counts).
    pub fn has(&self, key: &str) -> bool {
        match key {
            "a" => self.a.is_some(),
            "b" => self.b.is_some(),
            "b_vs_a" => self.b_vs_a.is_some(),
            _ => false,
        }
    }
}

/// `Option<Option<T>>` as a member that is absent (outer `None`), `null` (`Some(None)`) or a
/// value: serde alone reads a `null` member as absent.
mod present_or_absent {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[allow(clippy::ref_option, clippy::option_option)]
    pub fn serialize<S: Serializer, T: Serialize>(
        value: &Option<Option<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        // Absent members are skipped before this is called.
        match value {
            Some(v) => v.serialize(s),
            None => s.serialize_none(),
        }
    }

    #[allow(clippy::option_option)]
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

/// Money, tokens and time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub cap_usd_micros: Option<u64>,
    pub spent_usd_micros: u64,
    pub reserved_usd_micros: u64,
    pub spent_by_arm_usd_micros: BTreeMap<String, u64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The model's time: latency summed over attempts with a result.
    pub model_latency_ms: u64,
    pub run_wall_ms: Option<u64>,
    pub runner_time_ms: u64,
    /// The runner's own time, summed over what the engine measured per attempt.
    pub runner_time_us: u64,
    pub runner_time_unmeasured_attempts: u64,
    pub unknown_holding_reserve: Vec<UnknownHolding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnknownHolding {
    pub attempt: String,
    pub reserved_usd_micros: u64,
}

/// One planned trial: its latest attempt's outcome, and every attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trial {
    pub index: u32,
    pub task: String,
    pub family: Option<String>,
    pub arm: String,
    pub repetition: u32,
    /// The latest attempt's outcome, `pending` while it has none.
    pub outcome: TrialOutcome,
    pub reasons: Vec<String>,
    pub attempts: Vec<Attempt>,
    /// Progressive runs: what the trial showed about loading, from its journaled tool calls.
    /// Absent, not `null`, for an inline trial (and one that sent no request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<TrialEvidence>,
}

/// One attempt, as the journal holds it, with its stored answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    pub id: String,
    pub seq: u32,
    /// Progressive runs: the turn (1-based) this request was in its trial. Absent, not `null`,
    /// for an inline attempt (its trial's only turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    pub state: AttemptState,
    /// `null` until the attempt is scored or closed.
    pub outcome: Option<Outcome>,
    pub reasons: Vec<String>,
    /// The checker's details exactly as the journal holds them. Kept as JSON on purpose: a
    /// detail's `expected`/`got` may be a JSON `null` *or* absent, which a typed `Option` would
    /// conflate, changing the report's bytes.
    pub details: Value,
    pub retry_of: Option<String>,
    pub retry_reason: Option<String>,
    pub reserved_usd_micros: u64,
    pub spent_usd_micros: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub latency_ms: Option<u64>,
    /// The runner's own time on this attempt (µs), `null` if not measured.
    pub runner_us: Option<u64>,
    pub http_status: Option<u16>,
    pub provider_request_id: Option<String>,
    pub model_reported: Option<String>,
    pub system_fingerprint: Option<String>,
    pub request_sha256: Option<String>,
    pub answer_sha256: Option<String>,
    /// The stored answer (lossy UTF-8), `null` when there is none or it was purged.
    pub answer: Option<String>,
    /// There was an answer, and `purge` deleted it.
    pub answer_purged: bool,
    pub error: Option<String>,
}

pub(crate) fn reduced(f: Fraction) -> Fraction {
    fn gcd(a: u128, b: u128) -> u128 {
        if b == 0 { a.max(1) } else { gcd(b, a % b) }
    }
    let g = gcd(f.num, f.den);
    Fraction {
        num: f.num / g,
        den: f.den / g,
    }
}

/// How a p-value reads everywhere (cards, sentences, terminal): the exact fraction, `1` and `0`
/// as themselves. A denominator that is not a power of two came from the large-sample
/// approximation (more than 126 discordant pairs), which is not exact, so it reads as a decimal.
pub fn fraction_text(f: Fraction) -> String {
    let f = reduced(f);
    if f.num == 0 {
        "0".to_owned()
    } else if f.num == f.den {
        "1".to_owned()
    } else if f.den.is_power_of_two() || f.den <= 1_000 {
        format!("{}/{}", f.num, f.den)
    } else {
        format!("≈{:.6}", f.value())
    }
}

/// A p-value's report text (`3/16`, `1`, `1/35184372088832`) for reading: the number first,
/// the exact text beside it when they differ (`0.19 (3/16)`, `2.8e-14 (1/35184372088832)`).
/// Text that is not `num/den` of integers (`≈0.000012`, a document from elsewhere) is kept as
/// it is.
pub fn p_text_reading(text: &str) -> String {
    let parsed = match text.split_once('/') {
        Some((num, den)) => num.parse::<u128>().ok().zip(den.parse::<u128>().ok()),
        None => text.parse::<u128>().ok().map(|n| (n, 1)),
    };
    match parsed {
        Some((num, den)) if den > 0 => {
            let readable = Fraction { num, den }.readable();
            if readable == text {
                readable
            } else {
                format!("{readable} ({text})")
            }
        }
        _ => text.to_owned(),
    }
}

/// "1 time", "2 times".
pub fn count_of(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl Report {
    /// The 12-character short form of the run id.
    pub fn short_id(&self) -> String {
        crate::state::short_id(&self.run.id).to_owned()
    }

    /// Per contrast of `summary.changes` (`b_vs_a`, `b_vs_baseline`, `a_vs_baseline`), how many
    /// tasks could be compared: those with a model result in both arms (a verdict). In a partial
    /// run this can be 0, and then an empty fixes list means "not compared yet", not "fixes
    /// nothing".
    pub fn compared_tasks(&self) -> BTreeMap<&'static str, usize> {
        Self::compared_tasks_of(&self.tasks)
    }

    pub(crate) fn compared_tasks_of(tasks: &[TaskRow]) -> BTreeMap<&'static str, usize> {
        [
            ("b_vs_a", "b_vs_a"),
            ("b_vs_baseline", "b"),
            ("a_vs_baseline", "a"),
        ]
        .into_iter()
        .map(|(key, verdict)| {
            let n = tasks
                .iter()
                .filter(|t| t.verdicts.get(verdict).is_some())
                .count();
            (key, n)
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(num: u128, den: u128) -> Fraction {
        Fraction { num, den }
    }

    /// The ledger's Holm p (kept as the report's text) reads as a number.
    #[test]
    fn a_p_texts_reading_puts_the_number_first() {
        assert_eq!(
            p_text_reading("1/35184372088832"),
            "2.8e-14 (1/35184372088832)"
        );
        assert_eq!(p_text_reading("3/16"), "0.19 (3/16)");
        assert_eq!(p_text_reading("1"), "1");
        assert_eq!(p_text_reading("0"), "0");
        assert_eq!(p_text_reading("≈0.000012"), "≈0.000012");
        assert_eq!(p_text_reading("1/0"), "1/0");
        assert_eq!(p_text_reading("x/8"), "x/8");
    }

    #[test]
    fn p_values_read_as_exact_fractions() {
        assert_eq!(fraction_text(f(4, 32)), "1/8");
        assert_eq!(fraction_text(f(12, 32)), "3/8");
        assert_eq!(fraction_text(f(32, 32)), "1");
        assert_eq!(fraction_text(f(0, 8)), "0");
        // The large-sample approximation is not exact, so it does not pretend to be.
        assert_eq!(fraction_text(f(123_456, 1_000_000_000_000)), "≈0.000000");
    }

    #[test]
    fn counts_read_as_english() {
        assert_eq!(count_of(1, "time", "times"), "1 time");
        assert_eq!(count_of(0, "time", "times"), "0 times");
        assert_eq!(count_of(3, "repetition", "repetitions"), "3 repetitions");
    }

    #[test]
    fn a_verdict_member_is_absent_null_or_a_word_and_reads_back_the_same() {
        let v = Verdicts {
            a: Some(None),
            b: Some(Some("no-op".to_owned())),
            b_vs_a: None,
        };
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text, r#"{"a":null,"b":"no-op"}"#);
        assert_eq!(serde_json::from_str::<Verdicts>(&text).unwrap(), v);
    }
}

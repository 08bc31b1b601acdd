//! What must match for two reports to be read side by side, as one list shared by `compare`
//! (same model, same measurement) and `ledger` (same measurement and bundles, any model).
//!
//! Each check reads one member of a report as JSON, so a refusal shows both values as they read.

use serde::Serialize;
use serde_json::Value;

use super::Report;

/// One member that must match: its name as a refusal says it, and how to read it.
pub type Check = (&'static str, fn(&Report) -> Value);

/// A member that differs between two reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Difference {
    /// The member, as [`Check`] names it.
    pub what: String,
    /// Its value in the report being checked.
    pub this: Value,
    /// Its value in the report checked against.
    pub other: Value,
}

fn json_of(v: &impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The model the run asked for and what the API said it ran.
pub const MODEL: [Check; 6] = [
    ("model provider", |r| {
        json_of(&r.comparability.model.provider)
    }),
    ("model", |r| json_of(&r.comparability.model.model)),
    ("model revision", |r| {
        json_of(&r.comparability.model.revision)
    }),
    ("scripted model", |r| {
        json_of(&r.comparability.model.scripted)
    }),
    ("models the API reported", |r| {
        json_of(&r.comparability.model.reported_models)
    }),
    ("system fingerprints", |r| {
        json_of(&r.comparability.model.system_fingerprints)
    }),
];

/// How answers were asked for and scored: the pack, the checker, the sampling, the prompt, the
/// delivery.
pub const MEASUREMENT: [Check; 7] = [
    ("pack", |r| json_of(&r.comparability.pack.hash)),
    ("checker version", |r| {
        json_of(&r.comparability.checker.version)
    }),
    ("checker source", |r| {
        json_of(&r.comparability.checker.source_sha256)
    }),
    ("checker behind the verdicts", |r| {
        json_of(&r.comparability.verdicts_by)
    }),
    ("sampling and output limit", |r| {
        json_of(&r.comparability.sampling)
    }),
    ("prompt template", |r| {
        json_of(&r.comparability.prompt_template_sha256)
    }),
    // How the skill reached the model: the turn limit, the tools and the other skills every
    // catalog listed (null inline).
    ("delivery", |r| match &r.manifest.delivery {
        None => Value::String("inline".to_owned()),
        Some(pin) => serde_json::json!({
            "mode": pin.mode.as_str(),
            "max_turns": pin.max_turns,
            "tools_sha256": pin.tools_sha256,
            "with_skills": pin
                .with_skills
                .iter()
                .map(|s| format!("{} {}", s.name, s.digest))
                .collect::<Vec<_>>(),
        }),
    }),
];

/// What was measured: the arms with their bundles (by digest), the tasks and the repetitions.
pub const SUBJECT: [Check; 3] = [
    ("arms and bundle digests", |r| {
        Value::Array(
            r.manifest
                .arms
                .iter()
                .map(|a| {
                    serde_json::json!({
                        "arm": a.arm.as_str(),
                        "bundle": a.bundle.as_ref().map(|b| serde_json::json!({
                            "name": b.name, "version": b.version, "digest": b.digest,
                        })),
                    })
                })
                .collect(),
        )
    }),
    ("tasks", |r| json_of(&r.manifest.tasks)),
    ("repetitions", |r| json_of(&r.manifest.repetitions)),
];

/// What is known only from model results: a run with none yet (planned, or cancelled before its
/// first answer) has an empty set, which contradicts nothing.
fn observed(what: &str) -> bool {
    matches!(
        what,
        "models the API reported" | "system fingerprints" | "checker behind the verdicts"
    )
}

/// The members of `checks` in which `this` differs from `other`, in the order of `checks`.
pub fn differences<'a>(
    checks: impl IntoIterator<Item = &'a Check>,
    this: &Report,
    other: &Report,
) -> Vec<Difference> {
    let unreported = |v: &Value| v.as_array().is_some_and(Vec::is_empty);
    checks
        .into_iter()
        .filter_map(|(what, read)| {
            let (x, y) = (read(this), read(other));
            if observed(what) && (unreported(&x) || unreported(&y)) {
                return None;
            }
            (x != y).then(|| Difference {
                what: (*what).to_owned(),
                this: x,
                other: y,
            })
        })
        .collect()
}

//! The deterministic checker: one model answer against one task's golden record.
//!
//! **Invariant:** the checker reads only the answer text and the golden record. It never sees a
//! skill bundle, a prompt or the network, so text inside a bundle cannot reach a score.
//!
//! The answer is one JSON object (optionally inside one fenced block, see [`answer`]). It is
//! first held to the family's schema — a violation is `invalid_output` — then compared field by
//! field with the golden record; every difference is a `fail` detail with a reason code. Numbers
//! may be given as JSON integers or decimal strings; field order and extra fields never matter.
//! A top-level `"unsupported"` object is the model declaring that the task needs a script,
//! binary or network call: `unsupported_case`, never a pass.

pub mod answer;
mod compare;
mod families;

use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::outcome::Outcome;

/// The checker's version; pinned in manifests beside [`source_sha256`].
///
/// 1.1.0: digit strings too long for a u64 (the System program's address) compare as text, and
/// the decoder reads multisig, durable nonce, stake and lookup-table accounts and more System and
/// Token instructions. A pack built for 1.0.x is read by 1.1.x ([`reads_packs_for`]); `pack
/// verify` re-proves every verdict it claims under this checker.
pub const CHECKER_VERSION: &str = "1.1.0";

/// Whether this checker reads a pack built for checker `version`: the same major version, and
/// not newer than this one (a pack's golden records and known-wrong verdicts are re-proved by
/// `pack verify`, so a later minor version that reads them the same way is compatible).
pub fn reads_packs_for(version: &str) -> bool {
    fn parts(v: &str) -> Option<(u64, u64, u64)> {
        let mut it = v.split('.').map(|p| p.parse::<u64>().ok());
        let out = (it.next()??, it.next()??, it.next()??);
        it.next().is_none().then_some(out)
    }
    match (parts(version), parts(CHECKER_VERSION)) {
        (Some(pack), Some(this)) => pack.0 == this.0 && pack <= this,
        _ => false,
    }
}

/// How long one check may take. An overrun is `invalid_output` / `checker_timeout`, never a pass.
pub const CHECK_LIMIT: Duration = Duration::from_secs(5);

/// SHA-256 of the checker's and decoder's source, computed at build time (see `build.rs`).
pub fn source_sha256() -> &'static str {
    env!("CHECKER_SOURCE_SHA256")
}

/// The task families.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Mint / account interpretation.
    Account,
    /// Transaction interpretation.
    Transaction,
    /// Unsigned transfer plan.
    TransferPlan,
}

impl Family {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Account => "account",
            Self::Transaction => "transaction",
            Self::TransferPlan => "transfer_plan",
        }
    }
}

/// What a task expects.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// The golden record: exactly what a correct answer holds.
    Golden(Value),
    /// The task cannot be scored and is excluded with this reason (e.g. a transaction version
    /// other than legacy and 0). Any answer gets `unsupported_case`.
    Excluded {
        reason: &'static str,
        message: String,
    },
}

/// One difference or violation.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Detail {
    /// Reason code.
    pub reason: String,
    /// Where in the answer (`instructions[1].accounts[2]`), empty for the whole answer.
    pub field: String,
    /// What was expected, when there is a golden value to show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    /// What the answer said, when it said something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub got: Option<Value>,
    /// One line for people.
    pub message: String,
}

/// The checker's verdict on one answer.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// `pass`, `fail`, `invalid_output` or `unsupported_case`.
    pub outcome: Outcome,
    /// Sorted, distinct reason codes; empty on a pass.
    pub reasons: Vec<String>,
    /// Every difference, in the order found.
    pub details: Vec<Detail>,
}

impl Verdict {
    fn from_details(outcome: Outcome, details: Vec<Detail>) -> Self {
        let mut reasons: Vec<String> = details.iter().map(|d| d.reason.clone()).collect();
        reasons.sort();
        reasons.dedup();
        Self {
            outcome,
            reasons,
            details,
        }
    }

    fn single(outcome: Outcome, reason: &str, message: String) -> Self {
        Self::from_details(
            outcome,
            vec![Detail {
                reason: reason.to_owned(),
                field: String::new(),
                expected: None,
                got: None,
                message,
            }],
        )
    }
}

/// Checks `answer_text` for a task of `family` expecting `expected`. Pure and deterministic;
/// see [`check_with_limit`] for the time-limited form the runner uses.
pub fn check(family: Family, expected: &Expected, answer_text: &str) -> Verdict {
    let golden = match expected {
        Expected::Excluded { reason, message } => {
            return Verdict::single(Outcome::UnsupportedCase, reason, message.clone());
        }
        Expected::Golden(golden) => golden,
    };
    let answer = match answer::extract(answer_text) {
        Ok(answer) => answer,
        Err(e) => return Verdict::single(Outcome::InvalidOutput, e.code(), e.message()),
    };
    if let Some(verdict) = unsupported(&answer) {
        return verdict;
    }
    let Value::Object(golden) = golden else {
        return Verdict::single(
            Outcome::InvalidOutput,
            "schema_violation",
            "the golden record is not an object".to_owned(),
        );
    };
    let mut diff = compare::Diff::default();
    let result = match family {
        Family::Account => families::account(golden, &answer, &mut diff),
        Family::Transaction => families::transaction(golden, &answer, &mut diff),
        Family::TransferPlan => families::plan(golden, &answer, &mut diff),
    };
    match result {
        Err(violation) => Verdict::from_details(Outcome::InvalidOutput, vec![*violation]),
        Ok(()) if diff.details.is_empty() => Verdict::from_details(Outcome::Pass, Vec::new()),
        Ok(()) => Verdict::from_details(Outcome::Fail, diff.details),
    }
}

/// [`check`] under a wall-clock limit, on a worker thread. An overrun is never a pass: it is
/// `invalid_output` with `checker_timeout` (the worker is abandoned; it holds no locks).
pub fn check_with_limit(
    family: Family,
    expected: &Expected,
    answer_text: &str,
    limit: Duration,
) -> Verdict {
    let expected = expected.clone();
    let answer = answer_text.to_owned();
    run_limited(limit, move || check(family, &expected, &answer))
}

/// Runs `work` on a worker thread and waits at most `limit` for its verdict.
pub fn run_limited(limit: Duration, work: impl FnOnce() -> Verdict + Send + 'static) -> Verdict {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("checker".to_owned())
        .spawn(move || {
            let _ = tx.send(work());
        });
    if spawned.is_err() {
        return Verdict::single(
            Outcome::InvalidOutput,
            "checker_timeout",
            "the checker could not start".to_owned(),
        );
    }
    rx.recv_timeout(limit).unwrap_or_else(|_| {
        Verdict::single(
            Outcome::InvalidOutput,
            "checker_timeout",
            format!(
                "the check took longer than {} ms; an overrun is never a pass",
                limit.as_millis()
            ),
        )
    })
}

/// A declared need the runner does not support: `{"unsupported": {"needs": "script", ...}}`.
///
/// Only an object with a known `needs` counts; anything else under that key is an ignored extra
/// field and the answer is judged as usual. `unsupported_case` is never a pass, and reports count
/// it as an executed trial that did not succeed, so declaring it can never improve a score.
fn unsupported(answer: &Map<String, Value>) -> Option<Verdict> {
    let declared = answer.get("unsupported")?.as_object()?;
    let needs = declared.get("needs")?.as_str()?;
    let reason = match needs {
        "script" => "requires_script",
        "binary" => "requires_binary",
        "network" => "requires_network",
        "other" => "requires_other",
        _ => return None,
    };
    let why = declared
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("no reason given");
    Some(Verdict::single(
        Outcome::UnsupportedCase,
        reason,
        format!("the answer declares it needs: {needs} ({why})"),
    ))
}

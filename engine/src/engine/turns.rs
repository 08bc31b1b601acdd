//! Progressive trials: the turns of one trial, rebuilt from the journal.
//!
//! A progressive trial is a chain of attempts, one per model turn (`attempts.turn`), each linked
//! to the answered turn before it (`attempts.prior_turn`). An answered turn that asked for tools
//! keeps its text and calls as its `exchange`; the replies to those calls are never stored apart:
//! they are a pure function of the pinned bundles ([`Session`]), so the next turn's request — and
//! after a crash, the same request byte for byte — is rebuilt from the journal and the content
//! store alone.
//!
//! **Invariant:** a turn's request carries exactly the chain's earlier turns, in order, each with
//! the replies [`Session::serve_turn`] gives them; the trial's evidence is read from the same
//! chain, never from the answer's text.

use serde::{Deserialize, Serialize};

use skilltrial_core::bundle::Bundle;
use skilltrial_core::delivery::{
    self, ErrorCount, Served, Session, ToolCall, ToolError, TrialEvidence,
};
use skilltrial_core::manifest::{self, PlannedTrial};
use skilltrial_core::prompt;

use super::{EngineError, Inputs, Refusal};
use crate::journal::{AttemptRow, Journal};
use crate::provider::{Exchange, ModelRequest};

/// What an answered turn asked for: journaled as its attempt's `exchange`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    pub text: String,
    pub calls: Vec<ToolCall>,
}

impl Asked {
    /// The JSON the journal keeps.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    fn parse(attempt: &str, json: &str) -> Result<Self, EngineError> {
        serde_json::from_str(json).map_err(|e| {
            EngineError::Environment(format!(
                "attempt {attempt}: its journaled tool calls are unreadable ({e}); the journal was edited"
            ))
        })
    }
}

/// The catalog of `trial`'s arm.
pub fn catalog<'i>(inputs: &'i Inputs, trial: &PlannedTrial) -> Vec<&'i Bundle> {
    manifest::catalog_for(
        trial.arm,
        inputs.a.as_ref(),
        inputs.b.as_ref(),
        &inputs.others,
    )
}

/// The answered turns before `attempt`, oldest first, followed through `prior_turn` in the
/// journal.
pub fn chain_before(journal: &Journal, attempt: &AttemptRow) -> Result<Vec<Asked>, EngineError> {
    let mut chain = Vec::new();
    let mut prior = attempt.prior_turn.clone();
    while let Some(id) = prior {
        let Some((_, row)) = journal.attempt(&id)? else {
            return Err(EngineError::Environment(format!(
                "attempt {}: its earlier turn {id} is not in the journal",
                attempt.id
            )));
        };
        let Some(json) = row.exchange.as_deref() else {
            return Err(EngineError::Environment(format!(
                "attempt {}: its earlier turn {id} holds no tool calls",
                attempt.id
            )));
        };
        chain.push(Asked::parse(&id, json)?);
        prior = row.prior_turn.clone();
        if chain.len() > delivery::MAX_TURNS as usize {
            return Err(EngineError::Environment(format!(
                "attempt {}: its chain of turns is longer than any trial's",
                attempt.id
            )));
        }
    }
    chain.reverse();
    Ok(chain)
}

/// Each answered turn of `chain` served again through one [`Session`] over `catalog`, in order:
/// the replies the next request carried. The replies to turn i+1's calls travel with request
/// i+2, which says it is the last when i+2 reaches `max_turns`.
fn replay(catalog: &[&Bundle], chain: &[Asked], max_turns: u32) -> Vec<Vec<Served>> {
    let mut session = Session::new(catalog);
    chain
        .iter()
        .enumerate()
        .map(|(i, asked)| {
            let last = u32::try_from(i + 2).unwrap_or(u32::MAX) >= max_turns;
            session.serve_turn(&asked.calls, last)
        })
        .collect()
}

/// The request of turn `turn` (1-based) of a progressive trial, after the answered turns
/// `chain`. The replies to the last turn's calls say that this is the last turn when it is.
pub fn request(
    inputs: &Inputs,
    trial: &PlannedTrial,
    chain: &[Asked],
    attempt: &str,
) -> Result<ModelRequest, EngineError> {
    let manifest = &inputs.manifest;
    let task = inputs
        .pack
        .task(&trial.task)
        .map_err(|e| Refusal::TaskMissing(e.to_string()))?;
    let catalog = catalog(inputs, trial);
    let history = chain
        .iter()
        .zip(replay(&catalog, chain, trial.max_turns()))
        .map(|(asked, served)| Exchange {
            text: asked.text.clone(),
            calls: asked.calls.clone(),
            replies: served.into_iter().map(|s| s.reply).collect(),
        })
        .collect();
    Ok(ModelRequest {
        model: manifest.model.model.clone(),
        system: delivery::system_text(&catalog),
        user: prompt::task_text(&task.public()),
        max_output_tokens: trial.max_output_tokens,
        temperature: manifest.sampling.temperature.clone(),
        attempt: Some(attempt.to_owned()),
        tools: delivery::tools(),
        history,
        cache: manifest.caches(),
        stable_prefix: 0,
    })
}

/// The evidence of a progressive trial whose latest attempt is `last`: every answered turn of
/// its chain replayed through a [`Session`] over the arm's `catalog` (whose own skill is
/// `arm_skill`, `None` for the baseline) with turn limit `max_turns`. The calls of a last turn
/// that still asked for tools were never served: each counts as [`ToolError::TurnLimit`], or as
/// [`ToolError::TooManyCalls`] when the response held more than
/// [`delivery::MAX_CALLS_PER_TURN`] (then the trial did not reach its turn limit).
pub fn evidence(
    journal: &Journal,
    catalog: &[&Bundle],
    arm_skill: Option<&str>,
    max_turns: u32,
    last: &AttemptRow,
) -> Result<TrialEvidence, EngineError> {
    let chain = chain_before(journal, last)?;
    let served = replay(catalog, &chain, max_turns);
    let requests = if last.dispatched_at_ms.is_some() {
        last.turn
    } else {
        last.turn.saturating_sub(1)
    };
    let unanswered = match last.exchange.as_deref() {
        Some(json) => Asked::parse(&last.id, json)?.calls.len(),
        None => 0,
    };
    // Unserved calls end a trial for one of two reasons: more calls in one response than can be
    // answered (at any turn), or a call in the trial's last allowed turn.
    let why = if unanswered > delivery::MAX_CALLS_PER_TURN {
        ToolError::TooManyCalls
    } else {
        ToolError::TurnLimit
    };
    let mut evidence = TrialEvidence::of(
        arm_skill,
        delivery::system_text(catalog).len() as u64,
        &served,
        requests,
        unanswered > 0 && why == ToolError::TurnLimit,
    );
    if unanswered > 0 {
        let count = u32::try_from(unanswered).unwrap_or(u32::MAX);
        match evidence.tool_errors.iter_mut().find(|e| e.error == why) {
            Some(e) => e.count = e.count.saturating_add(count),
            None => {
                evidence.tool_errors.push(ErrorCount { error: why, count });
                evidence.tool_errors.sort_by_key(|e| e.error);
            }
        }
    }
    Ok(evidence)
}

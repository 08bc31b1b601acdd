//! What a report is built from: plain run facts (what the engine read from its journal and
//! stores), and each trial's observation. A leaf the builder and its parts (pairs, tasks) share.

use std::collections::BTreeMap;

use super::{Attempt, CheckerIdentity, Run, TrialOutcome};
use crate::delivery::TrialEvidence;
use crate::manifest::Manifest;
use crate::outcome::Outcome;

/// Everything a report is built from.
#[derive(Debug, Clone)]
pub struct RunFacts {
    /// The run, `complete` aside (the builder decides it).
    pub run: Run,
    /// `sha256:…` of the manifest.
    pub manifest_hash: String,
    pub manifest: Manifest,
    /// Task id → family, from the pinned pack (empty if the pack is not at hand).
    pub families: BTreeMap<String, String>,
    /// Planned trials, in plan order.
    pub trials: Vec<TrialFacts>,
    /// Every attempt, in journal order (the last one of a trial is its observation).
    pub attempts: Vec<AttemptFacts>,
    /// The ledger's money of the run (µUSD).
    pub spent_usd_micros: u64,
    pub reserved_usd_micros: u64,
    /// The checkers that produced the stored verdicts.
    pub verdicts_by: Vec<CheckerIdentity>,
    /// Progressive runs: per skill arm (`a`, `b`), the readable files of its own bundle, as
    /// [`super::activation::readable_files`] lists them, for the references no trial read. Empty
    /// for an inline run; an arm left out has `readable_files: null` in the report.
    pub readable_files: BTreeMap<String, Vec<String>>,
}

/// One planned trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialFacts {
    pub index: u32,
    pub task: String,
    pub arm: String,
    pub repetition: u32,
    /// What the trial showed about loading (progressive runs: computed from its journaled tool
    /// calls); `None` for an inline trial, or one that sent no request.
    pub evidence: Option<TrialEvidence>,
}

/// One attempt: its report record (answer and runner time filled in by the reader; the builder
/// sets `answer_purged`), its trial, and whether it was ever dispatched.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptFacts {
    pub trial_index: u32,
    pub dispatched: bool,
    pub record: Attempt,
}

/// One trial's observation: its latest attempt.
pub(super) struct Observation<'a> {
    pub trial: &'a TrialFacts,
    pub latest: Option<&'a Attempt>,
}

impl Observation<'_> {
    pub fn outcome(&self) -> TrialOutcome {
        self.latest
            .and_then(|a| a.outcome)
            .map_or(TrialOutcome::Pending, TrialOutcome::Done)
    }
    pub fn passed(&self) -> bool {
        self.outcome() == TrialOutcome::Done(Outcome::Pass)
    }
    pub fn executed(&self) -> bool {
        self.outcome().is_executed()
    }
}

//! Trial outcome codes (SPEC §5). The checker produces the first four; the engine the rest.

use serde::{Deserialize, Serialize};

/// What became of one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The checker matched every required field against the golden record. A success.
    Pass,
    /// Valid structure, wrong answer; carries reason codes. Executed, not a success.
    Fail,
    /// The model answered, but not in the required structure. Executed, not a success.
    InvalidOutput,
    /// The task needs something the skill or runner does not support. Shown, never a pass.
    UnsupportedCase,
    /// The request never reached the model. Not the model's fault.
    InfrastructureError,
    /// Dispatched, then no answer. Kept as is until the user decides.
    Unknown,
    /// A crash during dispatch; usage kept, attempt closed.
    Interrupted,
    /// Never dispatched (cancelled, or the budget cap).
    NotRun,
}

impl Outcome {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::InvalidOutput => "invalid_output",
            Self::UnsupportedCase => "unsupported_case",
            Self::InfrastructureError => "infrastructure_error",
            Self::Unknown => "unknown",
            Self::Interrupted => "interrupted",
            Self::NotRun => "not_run",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

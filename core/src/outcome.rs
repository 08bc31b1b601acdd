//! Trial outcome codes (docs/runs.md). The checker produces the first four; the engine the rest.

use serde::{Deserialize, Serialize};

/// What became of one trial.
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
    Deserialize,
    schemars::JsonSchema,
)]
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
    /// Every outcome, in declaration order.
    pub const ALL: &'static [Self] = &[
        Self::Pass,
        Self::Fail,
        Self::InvalidOutput,
        Self::UnsupportedCase,
        Self::InfrastructureError,
        Self::Unknown,
        Self::Interrupted,
        Self::NotRun,
    ];

    /// Whether the model produced an answer the checker scored: the executed model trials
    /// (`pass`, `fail`, `invalid_output`, `unsupported_case`), the denominators of every rate.
    pub fn is_executed(self) -> bool {
        matches!(
            self,
            Self::Pass | Self::Fail | Self::InvalidOutput | Self::UnsupportedCase
        )
    }

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

impl std::str::FromStr for Outcome {
    type Err = crate::state::UnknownState;

    /// The outcome `text` names; anything else is an error, never a default.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|o| o.as_str() == text)
            .ok_or_else(|| crate::state::UnknownState {
                what: "outcome",
                text: text.to_owned(),
            })
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::Outcome;

    #[test]
    fn every_outcome_parses_from_its_text_and_serializes_as_it() {
        for &o in Outcome::ALL {
            assert_eq!(o.as_str().parse::<Outcome>().unwrap(), o);
            assert_eq!(
                serde_json::to_string(&o).unwrap(),
                format!("\"{}\"", o.as_str())
            );
        }
        let err = "passed".parse::<Outcome>().unwrap_err();
        assert_eq!(err.to_string(), "unknown outcome `passed`");
    }

    #[test]
    fn executed_outcomes_are_the_four_the_checker_gives() {
        let executed: Vec<&str> = Outcome::ALL
            .iter()
            .filter(|o| o.is_executed())
            .map(|o| o.as_str())
            .collect();
        assert_eq!(
            executed,
            ["pass", "fail", "invalid_output", "unsupported_case"]
        );
    }
}

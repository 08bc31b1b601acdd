//! The codes the program refuses with: its own `SkillTrialError`s (from 6000, in declaration
//! order) and the Anchor account-constraint errors its accounts raise (`ConstraintHasOne`,
//! `ConstraintSeeds`, …). A refused transaction carries the code as
//! `InstructionError::Custom(code)`.
//!
//! **Invariant:** program ids, seeds and instruction layouts come from the program crate; nothing
//! here retypes them — nor the error codes: they are `u32::from` of the program's and Anchor's
//! own enums, so inserting a variant cannot silently retarget a caller or a test.

use std::fmt;

use serde_json::Value;

pub use anchor_lang::error::ErrorCode as AnchorError;
pub use skilltrial::error::SkillTrialError;

/// One way the program can refuse an instruction.
#[derive(Debug, Clone, Copy)]
pub enum Refusal {
    /// One of the program's own errors (`programs/skilltrial/src/error.rs`).
    Program(SkillTrialError),
    /// One of Anchor's framework errors, raised by the program's account constraints.
    Anchor(AnchorError),
}

impl Refusal {
    /// The code the transaction error carries: `InstructionError::Custom(code)`.
    pub fn code(self) -> u32 {
        match self {
            Refusal::Program(e) => u32::from(e),
            Refusal::Anchor(e) => u32::from(e),
        }
    }

    /// The variant's name, as the program logs it.
    pub fn name(self) -> String {
        match self {
            Refusal::Program(e) => e.name(),
            Refusal::Anchor(e) => e.name(),
        }
    }
}

impl From<SkillTrialError> for Refusal {
    fn from(e: SkillTrialError) -> Self {
        Refusal::Program(e)
    }
}

impl From<AnchorError> for Refusal {
    fn from(e: AnchorError) -> Self {
        Refusal::Anchor(e)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (Custom({}))", self.name(), self.code())
    }
}

/// A transaction error in words: the program's own error when its logs name one (Anchor logs
/// `Error Code: <Name>. Error Number: <n>. Error Message: <text>.`), else the runtime's error
/// with the log lines that explain it.
pub fn describe_failure(error: &Value, logs: &[Value]) -> String {
    let lines: Vec<&str> = logs.iter().filter_map(Value::as_str).collect();
    if let Some(line) = lines.iter().find(|l| l.contains("Error Code: ")) {
        let tail = &line[line.find("Error Code: ").unwrap_or(0)..];
        return format!("the program refused it: {}", tail.trim_end_matches('.'));
    }
    let mut out = format!("{error}");
    if error.is_string() {
        out = error.as_str().unwrap_or_default().to_owned();
    }
    let telling: Vec<&str> = lines
        .iter()
        .filter(|l| {
            l.contains("insufficient")
                || l.contains("already in use")
                || l.contains("failed:")
                || l.contains("Error")
        })
        .copied()
        .collect();
    if !telling.is_empty() {
        out.push_str(" (");
        out.push_str(&telling.join("; "));
        out.push(')');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes on the wire are Anchor's convention: framework constraint errors from 2000, the
    /// program's own from `ERROR_CODE_OFFSET` in declaration order.
    #[test]
    fn codes_follow_anchors_numbering() {
        assert_eq!(Refusal::from(AnchorError::ConstraintHasOne).code(), 2001);
        assert_eq!(Refusal::from(AnchorError::ConstraintSeeds).code(), 2006);
        assert_eq!(
            Refusal::from(SkillTrialError::TrialCountOutOfRange).code(),
            anchor_lang::error::ERROR_CODE_OFFSET
        );
        assert_eq!(
            Refusal::from(SkillTrialError::AccountingBroken).code(),
            anchor_lang::error::ERROR_CODE_OFFSET + 19
        );
    }

    #[test]
    fn a_refusal_displays_its_name_and_code() {
        assert_eq!(
            Refusal::from(SkillTrialError::BurnMissing).to_string(),
            "BurnMissing (Custom(6014))"
        );
    }
}

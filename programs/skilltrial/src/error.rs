//! Every way an instruction refuses. Each variant has a negative test asserting it.

use anchor_lang::prelude::*;

#[error_code]
pub enum SkillTrialError {
    #[msg("a run plans between 1 and 100 trials")]
    TrialCountOutOfRange,
    #[msg("the per-request cap must be above zero")]
    ZeroRequestCap,
    #[msg("the escrow does not cover the planned trials at their cap plus the runner fee")]
    EscrowTooSmall,
    #[msg("the deadline must be at least 75 minutes away")]
    DeadlineTooSoon,
    #[msg("a trial index is outside the run's planned trials")]
    TrialOutOfRange,
    #[msg("this trial is already settled")]
    TrialAlreadySettled,
    #[msg("a charge is above the run's per-request cap")]
    ChargeAboveCap,
    #[msg("the batch is empty or too large")]
    BadBatch,
    #[msg("the run is not open")]
    RunNotOpen,
    #[msg("the run is not finished: finalize it or refund it after the deadline first")]
    RunNotFinished,
    #[msg("the deadline has not passed yet")]
    DeadlineNotReached,
    #[msg("the escrow cannot cover this: reserve exhausted")]
    ReserveExhausted,
    #[msg("arithmetic overflow")]
    Overflow,
    #[msg("the buyback interval has not elapsed")]
    BuybackTooSoon,
    #[msg("no matching burn of the configured mint follows in this transaction")]
    BurnMissing,
    #[msg("the fee vault holds less than the buyback asks")]
    FeeVaultShort,
    #[msg("a configuration value is out of range")]
    InvalidConfig,
    #[msg(
        "the run was cancelled and its window for settling requests already in flight has closed"
    )]
    CancelWindowClosed,
    #[msg("only the program's upgrade authority may create the config")]
    NotUpgradeAuthority,
    #[msg(
        "an accounting invariant does not hold (fees out of step with trials, or more bought back than collected)"
    )]
    AccountingBroken,
}

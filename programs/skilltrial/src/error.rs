//! Every way an instruction refuses. Each variant has a negative test asserting its exact code
//! (tests/program/), or, where no transaction can reach it while the program is correct, a test
//! on the state itself (`state/`). Codes are positional from 6000: append, never reorder.

use anchor_lang::prelude::*;

#[error_code]
pub enum SkillTrialError {
    #[msg("a run plans between 1 and 100 trials")]
    TrialCountOutOfRange,
    #[msg("the per-request cap must be above zero")]
    ZeroRequestCap,
    #[msg("the escrow does not cover the planned trials at their cap plus the runner fee")]
    EscrowTooSmall,
    #[msg("the deadline is closer than the config's minimum deadline")]
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
    #[msg(
        "the run is not finalized: the runner finalizes it, or the user refunds it after the deadline"
    )]
    RunNotFinished,
    #[msg("the run's settlement window has not closed yet")]
    DeadlineNotReached,
    #[msg("the escrow cannot cover this: reserve exhausted")]
    ReserveExhausted,
    #[msg("arithmetic overflow")]
    Overflow,
    #[msg("the buyback interval has not elapsed")]
    BuybackTooSoon,
    #[msg(
        "no matching burn of the configured mint from the runner's token account at the named instruction"
    )]
    BurnMissing,
    #[msg("the fee vault's unreleased fees are less than the buyback asks")]
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
        "an accounting invariant does not hold (books out of step with trials or with the account's lamports)"
    )]
    AccountingBroken,
    #[msg("the config's fee per trial is not the one the user agreed to")]
    FeeChanged,
    #[msg("the config's runner is not the one the user agreed to")]
    RunnerChanged,
    #[msg("no runner is appointed: runs cannot open")]
    NoRunner,
    #[msg("the deadline is further than 7 days away")]
    DeadlineTooFar,
    #[msg("the run's deadline has passed: nothing settles after it")]
    DeadlinePassed,
    #[msg("the signer is not the runner this run was opened with")]
    NotRunsRunner,
    #[msg("the run's runner is no longer the config's runner: its key was revoked or rotated")]
    RunnerRevoked,
    #[msg("the run's id is not the one the instruction expects (closed and re-opened?)")]
    WrongRun,
    #[msg("the usage payout account is not the config's runner payout address")]
    WrongPayout,
    #[msg("the runner's spending limit for this period would be exceeded")]
    SpendingLimitExceeded,
    #[msg("a buyback must release and burn more than zero")]
    ZeroBuyback,
    #[msg("the buyback releases more than the per-interval cap")]
    BuybackAboveCap,
    #[msg("the burn is below the minimum rate of tokens per lamport")]
    BuybackBelowRate,
    #[msg("a buyback must be a top-level instruction, not a cross-program invocation")]
    BuybackNotTopLevel,
    #[msg("a transaction may hold only one buyback")]
    OneBuybackPerTransaction,
    #[msg("the token account is not the runner's own account of the configured mint")]
    NotRunnersTokenAccount,
    #[msg("only the proposed admin may accept the handover")]
    NotPendingAdmin,
    #[msg("the proposed change is still under its time lock")]
    TimeLockActive,
    #[msg("no change is pending")]
    NothingPending,
    #[msg("the default (all-zero) key cannot hold a role")]
    DefaultKey,
    #[msg("the runner's payout address must not be its signing key")]
    PayoutIsSigner,
    #[msg("the runner's payout address must not be an account of this program")]
    PayoutIsProgramAccount,
    #[msg(
        "the account already exists: a run of this manifest is still open under this wallet (close or refund it first)"
    )]
    AccountExists,
    #[msg(
        "the per-request cap is below the program's minimum of 5,000 lamports (one signature fee): no runner can serve so little"
    )]
    RequestCapTooLow,
}

/// The code of the Anchor error `result` carries (tests of the state types assert exact codes).
#[cfg(test)]
pub(crate) fn code_of<T: std::fmt::Debug>(result: Result<T>) -> u32 {
    match result {
        Err(Error::AnchorError(e)) => e.error_code_number,
        other => panic!("expected an Anchor error, got {other:?}"),
    }
}

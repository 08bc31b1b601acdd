//! Moving lamports out of program-owned accounts, with checked arithmetic on both sides.

use anchor_lang::prelude::*;

use crate::error::SkillTrialError;

/// Moves `amount` lamports from a program-owned account to any writable account.
pub fn transfer<'info>(
    from: &AccountInfo<'info>,
    to: &AccountInfo<'info>,
    amount: u64,
) -> Result<()> {
    if amount == 0 {
        return Ok(());
    }
    let from_balance = from.lamports();
    let to_balance = to.lamports();
    let new_from = from_balance
        .checked_sub(amount)
        .ok_or(SkillTrialError::ReserveExhausted)?;
    let new_to = to_balance
        .checked_add(amount)
        .ok_or(SkillTrialError::Overflow)?;
    **from.try_borrow_mut_lamports()? = new_from;
    **to.try_borrow_mut_lamports()? = new_to;
    Ok(())
}

/// `a + b`, or `Overflow`.
pub fn sum(a: u64, b: u64) -> Result<u64> {
    a.checked_add(b)
        .ok_or_else(|| error!(SkillTrialError::Overflow))
}

/// Sends everything still in the run's escrow to its user and books it as refunded on the run
/// and in the config's totals; returns the amount. Shared by `run_finalize` and
/// `run_refund_expired`.
pub fn refund_remainder<'info>(
    run: &mut Account<'info, crate::state::Run>,
    user: &AccountInfo<'info>,
    config: &mut crate::state::Config,
) -> Result<u64> {
    let remaining = run.remaining()?;
    transfer(&run.to_account_info(), user, remaining)?;
    run.refunded = sum(run.refunded, remaining)?;
    config.total_refunded = sum(config.total_refunded, remaining)?;
    Ok(remaining)
}

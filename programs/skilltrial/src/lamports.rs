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

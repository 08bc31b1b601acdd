//! Moving lamports out of program-owned accounts, with checked arithmetic on both sides, and the
//! rent figure every lamport invariant is measured against.

use anchor_lang::prelude::*;

use crate::error::SkillTrialError;

/// Moves `amount` lamports from a program-owned account to any writable account. The two must
/// be different accounts: both balances are computed before either is written, so an aliased
/// pair would credit `amount` out of nothing.
pub fn transfer<'info>(
    from: &AccountInfo<'info>,
    to: &AccountInfo<'info>,
    amount: u64,
) -> Result<()> {
    if amount == 0 {
        return Ok(());
    }
    require_keys_neq!(from.key(), to.key(), SkillTrialError::AccountingBroken);
    let new_from = from
        .lamports()
        .checked_sub(amount)
        .ok_or(SkillTrialError::ReserveExhausted)?;
    let new_to = to
        .lamports()
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

/// The rent-exempt minimum of `account` at its current size.
pub fn rent_minimum(account: &AccountInfo) -> Result<u64> {
    Ok(Rent::get()?.minimum_balance(account.data_len()))
}

//! Moving lamports out of program-owned accounts, with checked arithmetic on both sides, and the
//! rent figure every lamport invariant is measured against.

use anchor_lang::prelude::*;
use anchor_lang::system_program;

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

/// Creates the program-owned PDA `target` with `space` bytes, rent-exempt, paid by `payer`, the
/// way every cluster can: `CreateAccount` when it holds nothing, else top it up to the rent
/// minimum and `Allocate` + `Assign` it under its seeds.
///
/// Anchor's `init` handles a pre-funded address with System's `CreateAccountAllowPrefund`
/// (SIMD-0312), which fails where that feature is not active: a stranger who sent lamports to a
/// future Run address (or a singleton before `config_init`) would block it for ever there. The
/// three-step path needs no feature. A donation stays in the account (for a Run it is returned
/// with the rest at close or refund). `target` must still be a System account with no data: an
/// account this program already created is refused with `AccountExists`.
pub fn create_pda<'info>(
    payer: &AccountInfo<'info>,
    target: &AccountInfo<'info>,
    system_program: &AccountInfo<'info>,
    space: usize,
    signer_seeds: &[&[u8]],
) -> Result<()> {
    require!(
        *target.owner == system_program::ID && target.data_is_empty(),
        SkillTrialError::AccountExists
    );
    require_keys_neq!(payer.key(), target.key(), SkillTrialError::AccountExists);
    let required = Rent::get()?.minimum_balance(space).max(1);
    let held = target.lamports();
    let seeds = [signer_seeds];
    if held == 0 {
        return system_program::create_account(
            CpiContext::new_with_signer(
                system_program.key(),
                system_program::CreateAccount {
                    from: payer.clone(),
                    to: target.clone(),
                },
                &seeds,
            ),
            required,
            u64::try_from(space).map_err(|_| SkillTrialError::Overflow)?,
            &crate::ID,
        );
    }
    let shortfall = required.saturating_sub(held);
    if shortfall > 0 {
        system_program::transfer(
            CpiContext::new(
                system_program.key(),
                system_program::Transfer {
                    from: payer.clone(),
                    to: target.clone(),
                },
            ),
            shortfall,
        )?;
    }
    system_program::allocate(
        CpiContext::new_with_signer(
            system_program.key(),
            system_program::Allocate {
                account_to_allocate: target.clone(),
            },
            &seeds,
        ),
        u64::try_from(space).map_err(|_| SkillTrialError::Overflow)?,
    )?;
    system_program::assign(
        CpiContext::new_with_signer(
            system_program.key(),
            system_program::Assign {
                account_to_assign: target.clone(),
            },
            &seeds,
        ),
        &crate::ID,
    )
}

/// Writes `value` (discriminator and fields, Anchor's layout) into the freshly created `target`.
pub fn write_new<T: AccountSerialize>(target: &AccountInfo, value: &T) -> Result<()> {
    let mut data = target.try_borrow_mut_data()?;
    let mut out: &mut [u8] = &mut data;
    value.try_serialize(&mut out)
}

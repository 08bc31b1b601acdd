//! The fee vault: a program-owned PDA whose lamports above rent are runner fees awaiting a
//! buyback. It has no fields; its balance is the state.

use anchor_lang::prelude::*;

#[account]
#[derive(InitSpace, Debug)]
pub struct FeeVault {
    /// Canonical bump.
    pub bump: u8,
}

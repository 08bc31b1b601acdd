//! The program's configuration and running totals.

use anchor_lang::prelude::*;

use crate::error::SkillTrialError;

#[account]
#[derive(InitSpace, Debug)]
pub struct Config {
    /// May update this config.
    pub admin: Pubkey,
    /// The only key that may settle and finalize runs and execute buybacks.
    pub runner: Pubkey,
    /// Runner fee per executed trial, in lamports (0.0002 SOL at launch).
    pub fee_per_trial: u64,
    /// Minimum seconds between two buybacks (6 h at launch).
    pub buyback_interval_secs: i64,
    /// The $SKTRIAL mint that buybacks burn.
    pub sktrial_mint: Pubkey,
    /// Unix time of the last buyback (0: none yet).
    pub last_buyback_ts: i64,
    /// Runs opened.
    pub total_runs: u64,
    /// Trials settled over all runs.
    pub total_trials_settled: u64,
    /// Model usage settled to the runner, lamports.
    pub total_usage: u64,
    /// Runner fees paid into the fee vault, lamports.
    pub total_fees: u64,
    /// Lamports refunded to users.
    pub total_refunded: u64,
    /// Fee-vault lamports released to buybacks.
    pub total_bought_back: u64,
    /// $SKTRIAL base units burned.
    pub total_burned: u64,
    /// Canonical bump of this PDA.
    pub bump: u8,
    /// Canonical bump of the fee vault PDA.
    pub fee_vault_bump: u8,
}

impl Config {
    /// The fee must be positive and the interval at least a minute.
    pub fn invariant(&self) -> Result<()> {
        require!(self.fee_per_trial > 0, SkillTrialError::InvalidConfig);
        require!(
            self.buyback_interval_secs >= 60,
            SkillTrialError::InvalidConfig
        );
        require!(
            self.total_bought_back <= self.total_fees,
            SkillTrialError::AccountingBroken
        );
        Ok(())
    }
}

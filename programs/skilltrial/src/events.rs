//! Events, named in the past tense.

use anchor_lang::prelude::*;

#[event]
pub struct ConfigUpdated {
    pub admin: Pubkey,
    pub runner: Pubkey,
    pub fee_per_trial: u64,
    pub buyback_interval_secs: i64,
    pub sktrial_mint: Pubkey,
}

impl ConfigUpdated {
    /// The event for `config` as it now stands (emitted by `config_init` and `config_update`).
    pub fn of(config: &crate::state::Config) -> Self {
        Self {
            admin: config.admin,
            runner: config.runner,
            fee_per_trial: config.fee_per_trial,
            buyback_interval_secs: config.buyback_interval_secs,
            sktrial_mint: config.sktrial_mint,
        }
    }
}

#[event]
pub struct RunOpened {
    pub run: Pubkey,
    pub user: Pubkey,
    pub manifest_hash: [u8; 32],
    pub planned_trials: u16,
    pub per_request_cap: u64,
    pub escrowed: u64,
    pub deadline: i64,
}

#[event]
pub struct TrialsSettled {
    pub run: Pubkey,
    pub trials: u16,
    pub usage: u64,
    pub fees: u64,
}

#[event]
pub struct RunCancelled {
    pub run: Pubkey,
}

#[event]
pub struct RunFinalized {
    pub run: Pubkey,
    pub report_hash: [u8; 32],
    pub refunded: u64,
}

#[event]
pub struct RunRefunded {
    pub run: Pubkey,
    pub refunded: u64,
}

#[event]
pub struct RunClosed {
    pub run: Pubkey,
}

#[event]
pub struct BuybackExecuted {
    pub lamports_in: u64,
    pub tokens_burned: u64,
    pub at: i64,
}

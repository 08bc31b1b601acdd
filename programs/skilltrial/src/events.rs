//! Events, named in the past tense. Every run event carries the run's address and its `run_id`,
//! so an indexer never merges two lifetimes of one address. Events are emitted after the
//! invariants hold, last in each instruction.

use anchor_lang::prelude::*;

use crate::state::{Config, ConfigChange};

#[event]
pub struct ConfigUpdated {
    pub admin: Pubkey,
    pub pending_admin: Option<Pubkey>,
    pub runner: Pubkey,
    pub runner_payout: Pubkey,
    pub fee_per_trial: u64,
    pub min_deadline_secs: i64,
    pub time_lock_secs: i64,
    pub usage_limit: u64,
    pub usage_period_secs: i64,
    pub sktrial_mint: Pubkey,
    pub buyback_interval_secs: i64,
    pub max_buyback_lamports: u64,
    pub buyback_rate_tokens: u64,
    pub buyback_rate_lamports: u64,
}

impl ConfigUpdated {
    /// The event for `config` as it now stands.
    pub fn of(config: &Config) -> Self {
        Self {
            admin: config.admin,
            pending_admin: config.pending_admin,
            runner: config.runner,
            runner_payout: config.runner_payout,
            fee_per_trial: config.fee_per_trial,
            min_deadline_secs: config.min_deadline_secs,
            time_lock_secs: config.time_lock_secs,
            usage_limit: config.usage_limit.amount,
            usage_period_secs: config.usage_limit.period_secs,
            sktrial_mint: config.sktrial_mint,
            buyback_interval_secs: config.buyback_interval_secs,
            max_buyback_lamports: config.max_buyback_lamports,
            buyback_rate_tokens: config.buyback_rate.tokens,
            buyback_rate_lamports: config.buyback_rate.lamports,
        }
    }
}

#[event]
pub struct ConfigChangeProposed {
    pub change: ConfigChange,
    pub effective_at: i64,
}

#[event]
pub struct RunOpened {
    pub run: Pubkey,
    pub run_id: u64,
    pub user: Pubkey,
    pub runner: Pubkey,
    pub manifest_hash: [u8; 32],
    pub planned_trials: u16,
    pub per_request_cap: u64,
    pub fee_per_trial: u64,
    pub escrowed: u64,
    pub deadline: i64,
}

#[event]
pub struct TrialsSettled {
    pub run: Pubkey,
    pub run_id: u64,
    /// This batch's number in the run, from 1.
    pub batch: u16,
    pub trials: u16,
    pub usage: u64,
    pub fees: u64,
    /// The batch's hash over its trials' evidence records.
    pub evidence_hash: [u8; 32],
    /// The run's settlement digest after this batch.
    pub settle_digest: [u8; 32],
}

#[event]
pub struct RunCancelled {
    pub run: Pubkey,
    pub run_id: u64,
    pub at: i64,
}

/// Everything a report is checked against, so that the finalize transaction alone verifies a
/// report once the Run account is closed (`skilltrial verify --run` finds it by the run's
/// address in the cluster's transaction history).
#[event]
pub struct RunFinalized {
    pub run: Pubkey,
    pub run_id: u64,
    pub user: Pubkey,
    /// The config's runner that finalized (the run's own, or its successor after a rotation).
    pub runner: Pubkey,
    pub manifest_hash: [u8; 32],
    pub report_hash: [u8; 32],
    pub settle_digest: [u8; 32],
    pub settle_batches: u16,
    pub settled_trials: u16,
    pub planned_trials: u16,
    pub escrowed: u64,
    pub settled_usage: u64,
    pub settled_fees: u64,
    /// Lamports the user's `run_close` will take back, above the rent.
    pub remainder: u64,
}

#[event]
pub struct RunRefunded {
    pub run: Pubkey,
    pub run_id: u64,
    /// Escrow returned to the user (the account's rent comes back with it).
    pub refunded: u64,
}

#[event]
pub struct RunClosed {
    pub run: Pubkey,
    pub run_id: u64,
    /// Escrow returned to the user (the account's rent comes back with it).
    pub refunded: u64,
}

#[event]
pub struct BuybackExecuted {
    pub runner: Pubkey,
    pub token_account: Pubkey,
    pub lamports_in: u64,
    pub tokens_burned: u64,
    pub burn_index: u16,
    pub at: i64,
}

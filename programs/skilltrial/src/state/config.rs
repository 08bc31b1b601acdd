//! The program's configuration: who may do what, within which bounds, and the changes waiting
//! out their time lock. Written only by the `config_*` instructions; every run and buyback
//! instruction reads it (the books it used to keep are in the fee vault).
//!
//! The rule for what waits: anything that widens a party's power (appointing a runner, a new
//! mint, buyback terms, the runner's spending limit, the time lock itself) takes effect only after
//! `time_lock_secs`; anything that narrows it (revoking the runner) is immediate. The fee and the
//! minimum deadline change at once: every run pins the fee the user agreed to, and the minimum
//! deadline only protects the runner.

use anchor_lang::prelude::*;

use crate::constants::{
    BUYBACK_LOG_ADDRESS, CONFIG_ADDRESS, FEE_VAULT_ADDRESS, MAX_BUYBACK_INTERVAL_SECS,
    MAX_FEE_PER_TRIAL, MAX_TIME_LOCK_SECS, MAX_USAGE_PERIOD_SECS, MIN_BUYBACK_INTERVAL_SECS,
    MIN_DEADLINE_CEILING_SECS, MIN_DEADLINE_FLOOR_SECS, MIN_TIME_LOCK_SECS, MIN_USAGE_PERIOD_SECS,
};
use crate::error::SkillTrialError;

/// The least a buyback must burn: `tokens` $SKTRIAL base units per `lamports` released
/// (`tokens_burned × lamports ≥ lamports_in × tokens`, compared in `u128`).
#[derive(
    AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, Default, InitSpace, PartialEq, Eq,
)]
pub struct BuybackRate {
    pub tokens: u64,
    pub lamports: u64,
}

/// The most the runner may settle out of escrows, over all runs, per period — usage and fees
/// together (Squads v4's spending limit). Fees count because a trial settled at usage 0 still
/// moves its fee out of the user's escrow: a key that could settle fees unbounded could empty
/// every open run's fee reserve for trials it never ran.
#[derive(
    AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, Default, InitSpace, PartialEq, Eq,
)]
pub struct SpendingLimit {
    /// Lamports of usage plus fees per period.
    pub amount: u64,
    /// The period, seconds.
    pub period_secs: i64,
}

/// A runner: the hot key that signs settlements, and where its usage is paid.
#[derive(
    AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, Default, InitSpace, PartialEq, Eq,
)]
pub struct RunnerKeys {
    pub signer: Pubkey,
    pub payout: Pubkey,
}

/// A time-locked change: each field present is applied by `config_apply` once the lock is over.
#[derive(
    AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, Default, InitSpace, PartialEq, Eq,
)]
pub struct ConfigChange {
    /// Appoint a runner (signer and payout address).
    pub runner: Option<RunnerKeys>,
    pub sktrial_mint: Option<Pubkey>,
    pub buyback_interval_secs: Option<i64>,
    pub max_buyback_lamports: Option<u64>,
    pub buyback_rate: Option<BuybackRate>,
    pub usage_limit: Option<SpendingLimit>,
    pub time_lock_secs: Option<i64>,
}

impl ConfigChange {
    /// Whether the change changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A proposed change and when it may be applied.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug, InitSpace, PartialEq, Eq)]
pub struct PendingChange {
    pub change: ConfigChange,
    /// Unix time from which `config_apply` may apply it.
    pub effective_at: i64,
}

#[account]
#[derive(InitSpace, Debug)]
pub struct Config {
    /// Layout version (`ACCOUNT_VERSION`).
    pub version: u8,
    /// May update this config.
    pub admin: Pubkey,
    /// Proposed by the admin; becomes admin when it signs `config_accept_admin`.
    pub pending_admin: Option<Pubkey>,
    /// The only key that may settle runs, finalize runs and execute buybacks. The default key
    /// means none (revoked): no key can sign for it.
    pub runner: Pubkey,
    /// Where settled usage is paid: kept apart from the runner's hot signing key.
    pub runner_payout: Pubkey,
    /// Runner fee per executed trial, in lamports (0.0002 SOL at launch).
    pub fee_per_trial: u64,
    /// The nearest deadline a run may set, seconds from its opening.
    pub min_deadline_secs: i64,
    /// How long appointments and buyback terms wait before `config_apply`.
    pub time_lock_secs: i64,
    /// The runner's spending limit: usage and fees settled over all runs per period.
    pub usage_limit: SpendingLimit,
    /// The $SKTRIAL mint that buybacks burn.
    pub sktrial_mint: Pubkey,
    /// Minimum seconds between two buybacks (6 h at launch).
    pub buyback_interval_secs: i64,
    /// The most one buyback (so one interval) may release, lamports.
    pub max_buyback_lamports: u64,
    /// The minimum burn per lamport released.
    pub buyback_rate: BuybackRate,
    /// A change waiting out its time lock.
    pub pending: Option<PendingChange>,
    /// Canonical bump of this PDA.
    pub bump: u8,
    /// Canonical bump of the fee vault PDA.
    pub fee_vault_bump: u8,
    /// Room for fields a later version adds without a migration.
    pub reserved: [u8; 64],
}

impl Config {
    /// Whether a runner is appointed (the default key means revoked).
    pub fn has_runner(&self) -> bool {
        self.runner != Pubkey::default()
    }

    /// `change` applied to this config (every present field replaces the current one).
    pub fn apply(&mut self, change: &ConfigChange) {
        let ConfigChange {
            runner,
            sktrial_mint,
            buyback_interval_secs,
            max_buyback_lamports,
            buyback_rate,
            usage_limit,
            time_lock_secs,
        } = *change;
        if let Some(keys) = runner {
            self.runner = keys.signer;
            self.runner_payout = keys.payout;
        }
        if let Some(mint) = sktrial_mint {
            self.sktrial_mint = mint;
        }
        if let Some(interval) = buyback_interval_secs {
            self.buyback_interval_secs = interval;
        }
        if let Some(cap) = max_buyback_lamports {
            self.max_buyback_lamports = cap;
        }
        if let Some(rate) = buyback_rate {
            self.buyback_rate = rate;
        }
        if let Some(limit) = usage_limit {
            self.usage_limit = limit;
        }
        if let Some(lock) = time_lock_secs {
            self.time_lock_secs = lock;
        }
    }

    /// Every value within its bounds (so no update can brick the program), and no role held by
    /// the default key (except a revoked runner).
    pub fn invariant(&self) -> Result<()> {
        let in_range = |v: i64, lo: i64, hi: i64| v >= lo && v <= hi;
        require!(
            self.fee_per_trial > 0 && self.fee_per_trial <= MAX_FEE_PER_TRIAL,
            SkillTrialError::InvalidConfig
        );
        require!(
            in_range(
                self.buyback_interval_secs,
                MIN_BUYBACK_INTERVAL_SECS,
                MAX_BUYBACK_INTERVAL_SECS
            ),
            SkillTrialError::InvalidConfig
        );
        require!(
            in_range(
                self.min_deadline_secs,
                MIN_DEADLINE_FLOOR_SECS,
                MIN_DEADLINE_CEILING_SECS
            ),
            SkillTrialError::InvalidConfig
        );
        require!(
            in_range(self.time_lock_secs, MIN_TIME_LOCK_SECS, MAX_TIME_LOCK_SECS),
            SkillTrialError::InvalidConfig
        );
        require!(
            self.usage_limit.amount > 0
                && in_range(
                    self.usage_limit.period_secs,
                    MIN_USAGE_PERIOD_SECS,
                    MAX_USAGE_PERIOD_SECS
                ),
            SkillTrialError::InvalidConfig
        );
        require!(
            self.max_buyback_lamports > 0
                && self.buyback_rate.tokens > 0
                && self.buyback_rate.lamports > 0,
            SkillTrialError::InvalidConfig
        );
        let default = Pubkey::default();
        require!(
            self.admin != default
                && self.pending_admin != Some(default)
                && self.runner_payout != default
                && self.sktrial_mint != default,
            SkillTrialError::DefaultKey
        );
        // Usage is paid away from the hot key, so a leaked key holds nothing it has settled.
        require!(
            !self.has_runner() || self.runner_payout != self.runner,
            SkillTrialError::PayoutIsSigner
        );
        // Usage paid into one of the program's own accounts would be stranded there (the fee
        // vault, the config, the log) or mix with a run's escrow; `run_settle` also refuses any
        // program-owned payout account, which covers runs.
        require!(
            ![CONFIG_ADDRESS, FEE_VAULT_ADDRESS, BUYBACK_LOG_ADDRESS].contains(&self.runner_payout),
            SkillTrialError::PayoutIsProgramAccount
        );
        if let Some(pending) = &self.pending {
            if let Some(keys) = pending.change.runner {
                require!(
                    keys.signer != default && keys.payout != default,
                    SkillTrialError::DefaultKey
                );
            }
            // The change must leave a valid config once applied.
            let mut preview = self.clone();
            preview.pending = None;
            preview.apply(&pending.change);
            preview.invariant()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code_of as code;

    pub(crate) fn valid() -> Config {
        Config {
            version: 2,
            admin: Pubkey::new_unique(),
            pending_admin: None,
            runner: Pubkey::new_unique(),
            runner_payout: Pubkey::new_unique(),
            fee_per_trial: 200_000,
            min_deadline_secs: 75 * 60,
            time_lock_secs: 2 * 24 * 3600,
            usage_limit: SpendingLimit {
                amount: 1_000_000_000,
                period_secs: 24 * 3600,
            },
            sktrial_mint: Pubkey::new_unique(),
            buyback_interval_secs: 6 * 3600,
            max_buyback_lamports: 10_000_000_000,
            buyback_rate: BuybackRate {
                tokens: 1,
                lamports: 1_000,
            },
            pending: None,
            bump: 255,
            fee_vault_bump: 255,
            reserved: [0; 64],
        }
    }

    /// A pending change is checked as if applied: a change that would brick the config is
    /// refused when proposed, not when applied.
    #[test]
    fn a_pending_change_must_leave_a_valid_config() {
        let mut config = valid();
        config.invariant().unwrap();
        config.pending = Some(PendingChange {
            change: ConfigChange {
                buyback_interval_secs: Some(MAX_BUYBACK_INTERVAL_SECS + 1),
                ..ConfigChange::default()
            },
            effective_at: 0,
        });
        assert_eq!(
            code(config.invariant()),
            u32::from(SkillTrialError::InvalidConfig)
        );
        config.pending = Some(PendingChange {
            change: ConfigChange {
                runner: Some(RunnerKeys {
                    signer: Pubkey::default(),
                    payout: Pubkey::new_unique(),
                }),
                ..ConfigChange::default()
            },
            effective_at: 0,
        });
        assert_eq!(
            code(config.invariant()),
            u32::from(SkillTrialError::DefaultKey)
        );
    }

    /// The payout address is never the signing key, in the config or in an appointment.
    #[test]
    fn the_payout_address_is_not_the_signing_key() {
        let mut config = valid();
        config.runner_payout = config.runner;
        assert_eq!(
            code(config.invariant()),
            u32::from(SkillTrialError::PayoutIsSigner)
        );
        let mut config = valid();
        let key = Pubkey::new_unique();
        config.pending = Some(PendingChange {
            change: ConfigChange {
                runner: Some(RunnerKeys {
                    signer: key,
                    payout: key,
                }),
                ..ConfigChange::default()
            },
            effective_at: 0,
        });
        assert_eq!(
            code(config.invariant()),
            u32::from(SkillTrialError::PayoutIsSigner)
        );
    }

    /// A revoked runner (the default key) is a valid state; every other role must be a real key.
    #[test]
    fn only_the_runner_may_be_the_default_key() {
        let mut config = valid();
        config.runner = Pubkey::default();
        config.invariant().unwrap();
        assert!(!config.has_runner());
        config.sktrial_mint = Pubkey::default();
        assert_eq!(
            code(config.invariant()),
            u32::from(SkillTrialError::DefaultKey)
        );
    }
}

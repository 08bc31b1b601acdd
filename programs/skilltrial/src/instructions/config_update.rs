//! The admin's instructions. Immediate: `config_update` (the fee, the minimum deadline, revoking
//! the runner, proposing a new admin). Time-locked: `config_propose` records a change that
//! `config_apply` applies once `time_lock_secs` have passed (appointing a runner, the mint, the
//! buyback terms, the runner's spending limit, the time lock itself). The handover completes
//! only when the proposed admin signs `config_accept_admin`, so a typo cannot lose the config.

use anchor_lang::prelude::*;

use crate::constants::CONFIG_ADDRESS;
use crate::error::SkillTrialError;
use crate::events::{ConfigChangeProposed, ConfigUpdated};
use crate::state::{Config, ConfigChange, PendingChange};

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug, Default)]
pub struct ConfigUpdateArgs {
    /// The runner fee per executed trial for runs opened from now on (open runs keep theirs).
    pub fee_per_trial: Option<u64>,
    /// The nearest deadline a new run may set, seconds.
    pub min_deadline_secs: Option<i64>,
    /// Revoke the runner at once: it can no longer settle, finalize or buy back; no run opens
    /// until a runner is appointed. A pending appointment of the same key is dropped too.
    pub revoke_runner: bool,
    /// Propose a new admin (it must accept); proposing the current admin withdraws a proposal.
    pub propose_admin: Option<Pubkey>,
}

#[derive(Accounts)]
pub struct ConfigUpdate<'info> {
    pub admin: Signer<'info>,
    #[account(mut, address = CONFIG_ADDRESS, has_one = admin)]
    pub config: Box<Account<'info, Config>>,
}

pub fn config_update(ctx: Context<ConfigUpdate>, args: ConfigUpdateArgs) -> Result<()> {
    let config = &mut ctx.accounts.config;
    let ConfigUpdateArgs {
        fee_per_trial,
        min_deadline_secs,
        revoke_runner,
        propose_admin,
    } = args;
    if let Some(fee) = fee_per_trial {
        config.fee_per_trial = fee;
    }
    if let Some(secs) = min_deadline_secs {
        config.min_deadline_secs = secs;
    }
    if revoke_runner {
        let revoked = config.runner;
        config.runner = Pubkey::default();
        if let Some(pending) = config.pending.as_mut()
            && pending.change.runner.is_some_and(|k| k.signer == revoked)
        {
            pending.change.runner = None;
        }
        // A proposal left empty is withdrawn, as an empty `config_propose` would: nothing stays
        // pending that `config_apply` would "apply".
        if config.pending.is_some_and(|p| p.change.is_empty()) {
            config.pending = None;
        }
    }
    if let Some(admin) = propose_admin {
        require_keys_neq!(admin, Pubkey::default(), SkillTrialError::DefaultKey);
        config.pending_admin = (admin != config.admin).then_some(admin);
    }
    // A revocation alone is the emergency brake: it only narrows power, so it is never blocked
    // by re-validating fields it does not touch (a bound tightened by a later upgrade that the
    // stored config no longer meets must not keep a leaked key in office).
    let revoke_only = revoke_runner
        && fee_per_trial.is_none()
        && min_deadline_secs.is_none()
        && propose_admin.is_none();
    if !revoke_only {
        config.invariant()?;
    }
    emit!(ConfigUpdated::of(config));
    Ok(())
}

/// `config_propose(change)`: records `change`, applicable from now + the time lock. It replaces
/// any earlier proposal (whose clock restarts with it); an empty change withdraws it.
pub fn config_propose(ctx: Context<ConfigUpdate>, change: ConfigChange) -> Result<()> {
    let config = &mut ctx.accounts.config;
    if change.is_empty() {
        config.pending = None;
    } else {
        let effective_at = Clock::get()?
            .unix_timestamp
            .checked_add(config.time_lock_secs)
            .ok_or(SkillTrialError::Overflow)?;
        config.pending = Some(PendingChange {
            change,
            effective_at,
        });
        // Checks the change as if applied: a change that would brick the config is refused now.
        config.invariant()?;
        emit!(ConfigChangeProposed {
            change,
            effective_at
        });
        return Ok(());
    }
    config.invariant()
}

/// `config_apply`: applies the pending change once its time lock is over.
pub fn config_apply(ctx: Context<ConfigUpdate>) -> Result<()> {
    let config = &mut ctx.accounts.config;
    let pending = config.pending.ok_or(SkillTrialError::NothingPending)?;
    require!(
        Clock::get()?.unix_timestamp >= pending.effective_at,
        SkillTrialError::TimeLockActive
    );
    config.apply(&pending.change);
    config.pending = None;
    config.invariant()?;
    emit!(ConfigUpdated::of(config));
    Ok(())
}

#[derive(Accounts)]
pub struct ConfigAcceptAdmin<'info> {
    pub new_admin: Signer<'info>,
    #[account(mut, address = CONFIG_ADDRESS)]
    pub config: Box<Account<'info, Config>>,
}

/// `config_accept_admin`: the proposed admin takes over.
pub fn config_accept_admin(ctx: Context<ConfigAcceptAdmin>) -> Result<()> {
    let config = &mut ctx.accounts.config;
    require!(
        config.pending_admin == Some(ctx.accounts.new_admin.key()),
        SkillTrialError::NotPendingAdmin
    );
    config.admin = ctx.accounts.new_admin.key();
    config.pending_admin = None;
    config.invariant()?;
    emit!(ConfigUpdated::of(config));
    Ok(())
}

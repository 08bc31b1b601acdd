//! `run_settle`: the runner charges a batch of executed trials — each at most once, each at most
//! the per-request cap — paying usage to the runner and the fee to the fee vault. Trials never
//! dispatched are simply never settled: they pay nothing.

use anchor_lang::prelude::*;

use crate::constants::{
    CANCEL_SETTLE_WINDOW_SECS, CONFIG_SEED, FEE_VAULT_SEED, MAX_SETTLE_BATCH, RUN_SEED,
};
use crate::error::SkillTrialError;
use crate::events::TrialsSettled;
use crate::lamports;
use crate::state::{Config, FeeVault, Run, RunStatus};

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug)]
pub struct TrialCharge {
    /// The trial's index in the run's plan.
    pub index: u16,
    /// Model usage at cost, lamports.
    pub usage: u64,
}

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct RunSettleArgs {
    pub trials: Vec<TrialCharge>,
}

#[derive(Accounts)]
pub struct RunSettle<'info> {
    /// The configured runner (the current one: rotating it in the config moves open runs to the
    /// new key); it also receives the usage.
    #[account(mut)]
    pub runner: Signer<'info>,
    #[account(mut, seeds = [CONFIG_SEED], bump = config.bump, has_one = runner)]
    pub config: Account<'info, Config>,
    #[account(
        mut,
        seeds = [RUN_SEED, run.user.as_ref(), run.manifest_hash.as_ref()],
        bump = run.bump
    )]
    pub run: Account<'info, Run>,
    #[account(mut, seeds = [FEE_VAULT_SEED], bump = config.fee_vault_bump)]
    pub fee_vault: Account<'info, FeeVault>,
}

impl RunSettle<'_> {
    pub fn validate(&self, args: &RunSettleArgs) -> Result<()> {
        require!(
            !args.trials.is_empty() && args.trials.len() <= MAX_SETTLE_BATCH,
            SkillTrialError::BadBatch
        );
        match self.run.status {
            RunStatus::Open => Ok(()),
            RunStatus::Cancelled => {
                let closes = self
                    .run
                    .cancelled_at
                    .checked_add(CANCEL_SETTLE_WINDOW_SECS)
                    .ok_or(SkillTrialError::Overflow)?;
                require!(
                    Clock::get()?.unix_timestamp <= closes,
                    SkillTrialError::CancelWindowClosed
                );
                Ok(())
            }
            RunStatus::Finalized | RunStatus::Refunded => err!(SkillTrialError::RunNotOpen),
        }
    }
}

pub fn run_settle(ctx: Context<RunSettle>, args: RunSettleArgs) -> Result<()> {
    let run = &mut ctx.accounts.run;
    let mut usage_total: u64 = 0;
    for charge in &args.trials {
        require!(
            charge.usage <= run.per_request_cap,
            SkillTrialError::ChargeAboveCap
        );
        run.mark_settled(charge.index)?;
        usage_total = lamports::sum(usage_total, charge.usage)?;
    }
    let count = u64::try_from(args.trials.len()).map_err(|_| SkillTrialError::Overflow)?;
    let fees = run
        .fee_per_trial
        .checked_mul(count)
        .ok_or(SkillTrialError::Overflow)?;
    run.settled_usage = lamports::sum(run.settled_usage, usage_total)?;
    run.settled_fees = lamports::sum(run.settled_fees, fees)?;
    // The escrow must still cover what was settled (remaining() fails otherwise).
    run.invariant()?;
    let run_info = run.to_account_info();
    lamports::transfer(
        &run_info,
        &ctx.accounts.runner.to_account_info(),
        usage_total,
    )?;
    lamports::transfer(&run_info, &ctx.accounts.fee_vault.to_account_info(), fees)?;

    let config = &mut ctx.accounts.config;
    config.total_trials_settled = lamports::sum(config.total_trials_settled, count)?;
    config.total_usage = lamports::sum(config.total_usage, usage_total)?;
    config.total_fees = lamports::sum(config.total_fees, fees)?;
    emit!(TrialsSettled {
        run: ctx.accounts.run.key(),
        trials: u16::try_from(count).unwrap_or(u16::MAX),
        usage: usage_total,
        fees
    });
    ctx.accounts.run.invariant()?;
    ctx.accounts.config.invariant()
}

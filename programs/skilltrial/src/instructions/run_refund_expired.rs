//! `run_refund_expired`: after the deadline the user takes the remainder back without the runner.

use anchor_lang::prelude::*;

use crate::constants::{CONFIG_SEED, RUN_SEED};
use crate::error::SkillTrialError;
use crate::events::RunRefunded;
use crate::lamports;
use crate::state::{Config, Run, RunStatus};

#[derive(Accounts)]
pub struct RunRefundExpired<'info> {
    #[account(mut)]
    pub user: Signer<'info>,
    #[account(mut, seeds = [CONFIG_SEED], bump = config.bump)]
    pub config: Account<'info, Config>,
    #[account(mut, seeds = [RUN_SEED, user.key().as_ref(), run.manifest_hash.as_ref()], bump = run.bump, has_one = user)]
    pub run: Account<'info, Run>,
}

impl RunRefundExpired<'_> {
    pub fn validate(&self) -> Result<()> {
        require!(
            matches!(self.run.status, RunStatus::Open | RunStatus::Cancelled),
            SkillTrialError::RunNotOpen
        );
        require!(
            Clock::get()?.unix_timestamp > self.run.deadline,
            SkillTrialError::DeadlineNotReached
        );
        Ok(())
    }
}

pub fn run_refund_expired(ctx: Context<RunRefundExpired>) -> Result<()> {
    let accounts = &mut *ctx.accounts;
    let remaining = lamports::refund_remainder(
        &mut accounts.run,
        &accounts.user.to_account_info(),
        &mut accounts.config,
    )?;
    let run = &mut accounts.run;
    run.status = RunStatus::Refunded;
    let config = &accounts.config;
    emit!(RunRefunded {
        run: run.key(),
        refunded: remaining
    });
    run.invariant()?;
    config.invariant()
}

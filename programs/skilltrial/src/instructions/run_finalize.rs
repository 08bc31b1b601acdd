//! `run_finalize(report_hash)`: the runner records the report hash and every unsettled lamport
//! goes back to the user. Only the configured runner.

use anchor_lang::prelude::*;

use crate::constants::{CONFIG_SEED, RUN_SEED};
use crate::error::SkillTrialError;
use crate::events::RunFinalized;
use crate::lamports;
use crate::state::{Config, Run, RunStatus};

#[derive(Accounts)]
pub struct RunFinalize<'info> {
    pub runner: Signer<'info>,
    /// CHECK: must be the run's user (checked by `has_one = user` on `run`); receives the refund.
    #[account(mut)]
    pub user: UncheckedAccount<'info>,
    #[account(mut, seeds = [CONFIG_SEED], bump = config.bump, has_one = runner)]
    pub config: Account<'info, Config>,
    #[account(
        mut,
        seeds = [RUN_SEED, run.user.as_ref(), run.manifest_hash.as_ref()],
        bump = run.bump,
        has_one = user
    )]
    pub run: Account<'info, Run>,
}

impl RunFinalize<'_> {
    pub fn validate(&self) -> Result<()> {
        require!(
            matches!(self.run.status, RunStatus::Open | RunStatus::Cancelled),
            SkillTrialError::RunNotOpen
        );
        Ok(())
    }
}

pub fn run_finalize(ctx: Context<RunFinalize>, report_hash: [u8; 32]) -> Result<()> {
    let accounts = &mut *ctx.accounts;
    let remaining = lamports::refund_remainder(
        &mut accounts.run,
        &accounts.user.to_account_info(),
        &mut accounts.config,
    )?;
    let run = &mut accounts.run;
    run.report_hash = report_hash;
    run.status = RunStatus::Finalized;
    let config = &accounts.config;
    emit!(RunFinalized {
        run: run.key(),
        report_hash,
        refunded: remaining
    });
    run.invariant()?;
    config.invariant()
}

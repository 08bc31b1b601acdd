//! `run_refund_expired`: once settling has closed (the deadline, or the end of a cancelled run's
//! in-flight window), the user takes the remainder and the account's rent back without the
//! runner, closing the run. Needs nothing but the run: no config, no runner.

use anchor_lang::prelude::*;

use crate::constants::RUN_SEED;
use crate::error::SkillTrialError;
use crate::events::RunRefunded;
use crate::state::{Run, RunStatus};

#[derive(Accounts)]
pub struct RunRefundExpired<'info> {
    #[account(mut)]
    pub user: Signer<'info>,
    #[account(
        mut,
        seeds = [RUN_SEED, user.key().as_ref(), run.manifest_hash.as_ref()],
        bump = run.bump,
        has_one = user,
        close = user
    )]
    pub run: Box<Account<'info, Run>>,
}

impl RunRefundExpired<'_> {
    pub fn validate(&self) -> Result<()> {
        require!(
            matches!(
                self.run.status,
                RunStatus::Open | RunStatus::Cancelled { .. }
            ),
            SkillTrialError::RunNotOpen
        );
        require!(
            Clock::get()?.unix_timestamp > self.run.settle_closes_at()?,
            SkillTrialError::DeadlineNotReached
        );
        Ok(())
    }
}

pub fn run_refund_expired(ctx: Context<RunRefundExpired>) -> Result<()> {
    let run = &ctx.accounts.run;
    // The books only: this instruction moves no lamports but, at most, the whole balance
    // (`Run::books`).
    run.books()?;
    emit!(RunRefunded {
        run: run.key(),
        run_id: run.run_id,
        refunded: run.remaining()?,
    });
    Ok(())
}

//! `run_close`: once a run is finalized or refunded, the user reclaims its rent.

use anchor_lang::prelude::*;

use crate::constants::RUN_SEED;
use crate::error::SkillTrialError;
use crate::events::RunClosed;
use crate::state::{Run, RunStatus};

#[derive(Accounts)]
pub struct RunClose<'info> {
    #[account(mut)]
    pub user: Signer<'info>,
    #[account(
        mut,
        seeds = [RUN_SEED, user.key().as_ref(), run.manifest_hash.as_ref()],
        bump = run.bump,
        has_one = user,
        close = user
    )]
    pub run: Account<'info, Run>,
}

impl RunClose<'_> {
    pub fn validate(&self) -> Result<()> {
        require!(
            matches!(self.run.status, RunStatus::Finalized | RunStatus::Refunded),
            SkillTrialError::RunNotFinished
        );
        // Nothing but rent may be left: every escrowed lamport was paid out or refunded.
        require!(self.run.remaining()? == 0, SkillTrialError::RunNotFinished);
        Ok(())
    }
}

pub fn run_close(ctx: Context<RunClose>) -> Result<()> {
    emit!(RunClosed {
        run: ctx.accounts.run.key()
    });
    Ok(())
}

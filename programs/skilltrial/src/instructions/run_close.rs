//! `run_close`: once a run is finalized, its user takes back the remainder the runner booked and
//! the account's rent, in one credit of at least the rent (so a wallet emptied to zero can always
//! receive it).

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
    pub run: Box<Account<'info, Run>>,
}

impl RunClose<'_> {
    pub fn validate(&self) -> Result<()> {
        require!(
            matches!(self.run.status, RunStatus::Finalized { .. }),
            SkillTrialError::RunNotFinished
        );
        Ok(())
    }
}

pub fn run_close(ctx: Context<RunClose>) -> Result<()> {
    let run = &ctx.accounts.run;
    // The books only: this instruction moves no lamports but, at most, the whole balance
    // (`Run::books`).
    run.books()?;
    emit!(RunClosed {
        run: run.key(),
        run_id: run.run_id,
        refunded: run.remaining()?,
    });
    Ok(())
}

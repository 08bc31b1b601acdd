//! `run_cancel`: the user stops new dispatches. Only the run's user. Requests already in flight
//! may still be settled for `CANCEL_SETTLE_WINDOW_SECS` (their usage is never zeroed), never after
//! the deadline; after that window the user may refund without waiting for the deadline.

use anchor_lang::prelude::*;

use crate::constants::RUN_SEED;
use crate::error::SkillTrialError;
use crate::events::RunCancelled;
use crate::state::{Run, RunStatus};

#[derive(Accounts)]
pub struct RunCancel<'info> {
    pub user: Signer<'info>,
    #[account(mut, seeds = [RUN_SEED, user.key().as_ref(), run.manifest_hash.as_ref()], bump = run.bump, has_one = user)]
    pub run: Box<Account<'info, Run>>,
}

impl RunCancel<'_> {
    pub fn validate(&self) -> Result<()> {
        require!(
            self.run.status == RunStatus::Open,
            SkillTrialError::RunNotOpen
        );
        Ok(())
    }
}

pub fn run_cancel(ctx: Context<RunCancel>) -> Result<()> {
    let at = Clock::get()?.unix_timestamp;
    let run = &mut ctx.accounts.run;
    run.status = RunStatus::Cancelled { at };
    // The books only: this instruction moves no lamports but, at most, the whole balance
    // (`Run::books`).
    run.books()?;
    emit!(RunCancelled {
        run: run.key(),
        run_id: run.run_id,
        at
    });
    Ok(())
}

//! `run_close`: once a run is finalized, its user takes back the remainder the runner booked and
//! the account's rent, in one credit of at least the rent (so a wallet emptied to zero can always
//! receive it).

use anchor_lang::prelude::*;

use crate::constants::RUN_SEED;
use crate::error::SkillTrialError;
use crate::events::RunClosed;
use crate::lamports;
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
    let info = run.to_account_info();
    run.invariant(info.lamports(), lamports::rent_minimum(&info)?)?;
    emit!(RunClosed {
        run: run.key(),
        run_id: run.run_id,
        refunded: run.remaining()?,
    });
    Ok(())
}

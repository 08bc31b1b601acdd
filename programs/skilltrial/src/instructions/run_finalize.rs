//! `run_finalize`: the config's runner records the report hash beside the settlement digest and
//! books the remainder for the user, who takes it back with `run_close` (pull, not push: an
//! emptied user wallet can never block finalization or the report anchor). The run's own runner
//! finalizes its run; after a rotation the new runner may finalize runs opened under the old key
//! — it cannot settle them, so for those finalizing only returns the remainder.

use anchor_lang::prelude::*;

use crate::constants::{CONFIG_ADDRESS, RUN_SEED};
use crate::error::SkillTrialError;
use crate::events::RunFinalized;
use crate::state::{Config, Run, RunStatus};

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct RunFinalizeArgs {
    /// The run this finalization is for (its `run_id`).
    pub expected_run_id: u64,
    /// SHA-256 of the canonical report.
    pub report_hash: [u8; 32],
}

#[derive(Accounts)]
pub struct RunFinalize<'info> {
    pub runner: Signer<'info>,
    #[account(address = CONFIG_ADDRESS, has_one = runner)]
    pub config: Box<Account<'info, Config>>,
    #[account(
        mut,
        seeds = [RUN_SEED, run.user.as_ref(), run.manifest_hash.as_ref()],
        bump = run.bump
    )]
    pub run: Box<Account<'info, Run>>,
}

impl RunFinalize<'_> {
    pub fn validate(&self, args: &RunFinalizeArgs) -> Result<()> {
        require!(
            args.expected_run_id == self.run.run_id,
            SkillTrialError::WrongRun
        );
        require!(
            matches!(
                self.run.status,
                RunStatus::Open | RunStatus::Cancelled { .. }
            ),
            SkillTrialError::RunNotOpen
        );
        Ok(())
    }
}

pub fn run_finalize(ctx: Context<RunFinalize>, args: RunFinalizeArgs) -> Result<()> {
    let at = Clock::get()?.unix_timestamp;
    let run = &mut ctx.accounts.run;
    run.report_hash = args.report_hash;
    run.status = RunStatus::Finalized { at };
    // The books only: this instruction moves no lamports but, at most, the whole balance
    // (`Run::books`).
    run.books()?;
    emit!(RunFinalized {
        run: run.key(),
        run_id: run.run_id,
        user: run.user,
        runner: ctx.accounts.runner.key(),
        manifest_hash: run.manifest_hash,
        report_hash: run.report_hash,
        settle_digest: run.settle_digest,
        settle_batches: run.settle_batches,
        settled_trials: run.settled_trials,
        planned_trials: run.planned_trials,
        escrowed: run.escrowed,
        settled_usage: run.settled_usage,
        settled_fees: run.settled_fees,
        remainder: run.remaining()?,
    });
    Ok(())
}

//! `run_open`: the user's one transaction that creates the run and moves its upper cost into
//! escrow. The runner and fee are the config's at this moment and never change for the run.

use anchor_lang::prelude::*;
use anchor_lang::system_program;

use crate::constants::{
    CONFIG_SEED, MAX_TRIALS, MIN_DEADLINE_SECS, RUN_SEED, SETTLED_BITMAP_BYTES,
};
use crate::error::SkillTrialError;
use crate::events::RunOpened;
use crate::state::{Config, Run, RunStatus};

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct RunOpenArgs {
    /// SHA-256 of the run's canonical manifest.
    pub manifest_hash: [u8; 32],
    pub planned_trials: u16,
    /// The upper cost of one request, lamports.
    pub per_request_cap: u64,
    /// Lamports to escrow: at least planned × (cap + fee).
    pub escrow: u64,
    /// Unix time after which the user may refund alone.
    pub deadline: i64,
}

#[derive(Accounts)]
#[instruction(args: RunOpenArgs)]
pub struct RunOpen<'info> {
    #[account(mut)]
    pub user: Signer<'info>,
    #[account(mut, seeds = [CONFIG_SEED], bump = config.bump)]
    pub config: Account<'info, Config>,
    #[account(
        init,
        payer = user,
        space = 8 + Run::INIT_SPACE,
        seeds = [RUN_SEED, user.key().as_ref(), args.manifest_hash.as_ref()],
        bump
    )]
    pub run: Account<'info, Run>,
    pub system_program: Program<'info, System>,
}

impl RunOpen<'_> {
    pub fn validate(&self, args: &RunOpenArgs) -> Result<()> {
        require!(
            args.planned_trials >= 1 && args.planned_trials <= MAX_TRIALS,
            SkillTrialError::TrialCountOutOfRange
        );
        require!(args.per_request_cap > 0, SkillTrialError::ZeroRequestCap);
        let per_trial = args
            .per_request_cap
            .checked_add(self.config.fee_per_trial)
            .ok_or(SkillTrialError::Overflow)?;
        let upper = per_trial
            .checked_mul(u64::from(args.planned_trials))
            .ok_or(SkillTrialError::Overflow)?;
        require!(args.escrow >= upper, SkillTrialError::EscrowTooSmall);
        require!(
            args.deadline
                >= Clock::get()?
                    .unix_timestamp
                    .checked_add(MIN_DEADLINE_SECS)
                    .ok_or(SkillTrialError::Overflow)?,
            SkillTrialError::DeadlineTooSoon
        );
        Ok(())
    }
}

pub fn run_open(ctx: Context<RunOpen>, args: RunOpenArgs) -> Result<()> {
    system_program::transfer(
        CpiContext::new(
            ctx.accounts.system_program.key(),
            system_program::Transfer {
                from: ctx.accounts.user.to_account_info(),
                to: ctx.accounts.run.to_account_info(),
            },
        ),
        args.escrow,
    )?;
    let config = &mut ctx.accounts.config;
    let run = &mut ctx.accounts.run;
    run.user = ctx.accounts.user.key();
    run.runner = config.runner;
    run.manifest_hash = args.manifest_hash;
    run.planned_trials = args.planned_trials;
    run.per_request_cap = args.per_request_cap;
    run.fee_per_trial = config.fee_per_trial;
    run.escrowed = args.escrow;
    run.settled_usage = 0;
    run.settled_fees = 0;
    run.refunded = 0;
    run.settled_trials = 0;
    run.settled_bitmap = [0; SETTLED_BITMAP_BYTES];
    run.status = RunStatus::Open;
    run.deadline = args.deadline;
    run.cancelled_at = 0;
    run.report_hash = [0; 32];
    run.bump = ctx.bumps.run;
    config.total_runs = config
        .total_runs
        .checked_add(1)
        .ok_or(SkillTrialError::Overflow)?;
    emit!(RunOpened {
        run: run.key(),
        user: run.user,
        manifest_hash: run.manifest_hash,
        planned_trials: run.planned_trials,
        per_request_cap: run.per_request_cap,
        escrowed: run.escrowed,
        deadline: run.deadline,
    });
    run.invariant()?;
    config.invariant()
}

//! `run_open`: the user's one transaction that creates the run and moves its upper cost into
//! escrow. The user pins the fee per trial and the runner it agreed to: if the config changed in
//! between, the open fails rather than charging terms the user never saw. Both then stay fixed
//! for the run.

use anchor_lang::prelude::*;
use anchor_lang::system_program;

use crate::constants::{
    ACCOUNT_VERSION, CONFIG_ADDRESS, FEE_VAULT_ADDRESS, MAX_DEADLINE_SECS, MAX_TRIALS, RUN_SEED,
    SETTLED_BITMAP_BYTES,
};
use crate::error::SkillTrialError;
use crate::events::RunOpened;
use crate::lamports;
use crate::state::{Config, FeeVault, Run, RunStatus};

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct RunOpenArgs {
    /// SHA-256 of the run's canonical manifest.
    pub manifest_hash: [u8; 32],
    pub planned_trials: u16,
    /// The upper cost of one request, lamports.
    pub per_request_cap: u64,
    /// Lamports to escrow: at least planned × (cap + fee).
    pub escrow: u64,
    /// Unix time after which nothing settles and the user may refund alone.
    pub deadline: i64,
    /// The fee per trial the user agreed to: must be the config's.
    pub expected_fee_per_trial: u64,
    /// The runner the user agreed to: must be the config's.
    pub expected_runner: Pubkey,
}

#[derive(Accounts)]
#[instruction(args: RunOpenArgs)]
pub struct RunOpen<'info> {
    #[account(mut)]
    pub user: Signer<'info>,
    #[account(address = CONFIG_ADDRESS)]
    pub config: Box<Account<'info, Config>>,
    /// Keeps the run counter.
    #[account(mut, address = FEE_VAULT_ADDRESS)]
    pub fee_vault: Box<Account<'info, FeeVault>>,
    #[account(
        init,
        payer = user,
        space = 8 + Run::INIT_SPACE,
        seeds = [RUN_SEED, user.key().as_ref(), args.manifest_hash.as_ref()],
        bump
    )]
    pub run: Box<Account<'info, Run>>,
    pub system_program: Program<'info, System>,
}

impl RunOpen<'_> {
    pub fn validate(&self, args: &RunOpenArgs) -> Result<()> {
        let config = &self.config;
        require!(config.has_runner(), SkillTrialError::NoRunner);
        require!(
            args.expected_fee_per_trial == config.fee_per_trial,
            SkillTrialError::FeeChanged
        );
        require_keys_eq!(
            args.expected_runner,
            config.runner,
            SkillTrialError::RunnerChanged
        );
        require!(
            args.planned_trials >= 1 && args.planned_trials <= MAX_TRIALS,
            SkillTrialError::TrialCountOutOfRange
        );
        require!(args.per_request_cap > 0, SkillTrialError::ZeroRequestCap);
        let upper = args
            .per_request_cap
            .checked_add(config.fee_per_trial)
            .and_then(|per_trial| per_trial.checked_mul(u64::from(args.planned_trials)))
            .ok_or(SkillTrialError::Overflow)?;
        require!(args.escrow >= upper, SkillTrialError::EscrowTooSmall);
        let now = Clock::get()?.unix_timestamp;
        let earliest = now
            .checked_add(config.min_deadline_secs)
            .ok_or(SkillTrialError::Overflow)?;
        let latest = now
            .checked_add(MAX_DEADLINE_SECS)
            .ok_or(SkillTrialError::Overflow)?;
        require!(args.deadline >= earliest, SkillTrialError::DeadlineTooSoon);
        require!(args.deadline <= latest, SkillTrialError::DeadlineTooFar);
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
    let now = Clock::get()?.unix_timestamp;
    let run_id = ctx.accounts.fee_vault.take_run_id()?;
    let config = &ctx.accounts.config;
    let run = &mut ctx.accounts.run;
    run.version = ACCOUNT_VERSION;
    run.run_id = run_id;
    run.user = ctx.accounts.user.key();
    run.runner = config.runner;
    run.manifest_hash = args.manifest_hash;
    run.planned_trials = args.planned_trials;
    run.per_request_cap = args.per_request_cap;
    run.fee_per_trial = config.fee_per_trial;
    run.escrowed = args.escrow;
    run.settled_usage = 0;
    run.settled_fees = 0;
    run.settled_trials = 0;
    run.settle_batches = 0;
    run.settled_bitmap = [0; SETTLED_BITMAP_BYTES];
    run.settle_digest = [0; 32];
    run.status = RunStatus::Open;
    run.opened_at = now;
    run.deadline = args.deadline;
    run.report_hash = [0; 32];
    run.bump = ctx.bumps.run;

    // The escrow really arrived: the account holds its rent plus every escrowed lamport.
    let info = run.to_account_info();
    run.invariant(info.lamports(), lamports::rent_minimum(&info)?)?;
    emit!(RunOpened {
        run: run.key(),
        run_id,
        user: run.user,
        runner: run.runner,
        manifest_hash: run.manifest_hash,
        planned_trials: run.planned_trials,
        per_request_cap: run.per_request_cap,
        fee_per_trial: run.fee_per_trial,
        escrowed: run.escrowed,
        deadline: run.deadline,
    });
    Ok(())
}

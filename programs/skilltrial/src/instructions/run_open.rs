//! `run_open`: the user's one transaction that creates the run and moves its upper cost into
//! escrow. The user pins the fee per trial and the runner it agreed to: if the config changed in
//! between, the open fails rather than charging terms the user never saw. Both then stay fixed
//! for the run.

use anchor_lang::prelude::*;
use anchor_lang::system_program;

use crate::constants::{
    ACCOUNT_VERSION, CONFIG_ADDRESS, FEE_VAULT_ADDRESS, MAX_DEADLINE_SECS, MAX_TRIALS,
    MIN_PER_REQUEST_CAP, RUN_SEED, SETTLED_BITMAP_BYTES,
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
    /// The run's PDA, created by the handler on every cluster, pre-funded or not
    /// (`lamports::create_pda`; Anchor's `init` would need SIMD-0312 for a pre-funded address).
    /// CHECK: seeds checked here; `create_pda` refuses an account that already exists.
    #[account(
        mut,
        seeds = [RUN_SEED, user.key().as_ref(), args.manifest_hash.as_ref()],
        bump
    )]
    pub run: UncheckedAccount<'info>,
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
        require!(
            args.per_request_cap >= MIN_PER_REQUEST_CAP,
            SkillTrialError::RequestCapTooLow
        );
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
    let user = ctx.accounts.user.to_account_info();
    let info = ctx.accounts.run.to_account_info();
    let user_key = ctx.accounts.user.key();
    let bump = ctx.bumps.run;
    lamports::create_pda(
        &user,
        &info,
        &ctx.accounts.system_program.to_account_info(),
        8 + Run::INIT_SPACE,
        &[
            RUN_SEED,
            user_key.as_ref(),
            args.manifest_hash.as_ref(),
            &[bump],
        ],
    )?;
    system_program::transfer(
        CpiContext::new(
            ctx.accounts.system_program.key(),
            system_program::Transfer {
                from: user,
                to: info.clone(),
            },
        ),
        args.escrow,
    )?;
    let now = Clock::get()?.unix_timestamp;
    let run_id = ctx.accounts.fee_vault.take_run_id()?;
    let config = &ctx.accounts.config;
    let run = Run {
        version: ACCOUNT_VERSION,
        run_id,
        user: user_key,
        runner: config.runner,
        manifest_hash: args.manifest_hash,
        planned_trials: args.planned_trials,
        per_request_cap: args.per_request_cap,
        fee_per_trial: config.fee_per_trial,
        escrowed: args.escrow,
        settled_usage: 0,
        settled_fees: 0,
        settled_trials: 0,
        settle_batches: 0,
        settled_bitmap: [0; SETTLED_BITMAP_BYTES],
        settle_digest: [0; 32],
        status: RunStatus::Open,
        opened_at: now,
        deadline: args.deadline,
        report_hash: [0; 32],
        bump,
        reserved: [0; 32],
    };
    lamports::write_new(&info, &run)?;

    // The escrow really arrived: the account holds its rent plus every escrowed lamport (a
    // stranger's earlier donation only adds to it, and goes back to the user with the rest).
    run.invariant(info.lamports(), lamports::rent_minimum(&info)?)?;
    let vault_info = ctx.accounts.fee_vault.to_account_info();
    ctx.accounts
        .fee_vault
        .invariant(vault_info.lamports(), lamports::rent_minimum(&vault_info)?)?;
    emit!(RunOpened {
        run: info.key(),
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

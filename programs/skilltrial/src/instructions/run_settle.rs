//! `run_settle`: the run's runner charges a batch of executed trials — each at most once, each at
//! most the per-request cap, never after the deadline — paying usage to the runner's payout
//! address and the fee to the fee vault. Trials never dispatched are simply never settled: they
//! pay nothing.
//!
//! Bounded trust: the signer must be the runner the user agreed to *and* still the config's
//! runner (a revoked or rotated key stops at once), and everything settled over all runs per
//! period — usage and fees alike — stays within the config's spending limit: a trial charged at
//! usage 0 still moves its fee out of the user's escrow, so a leaked key settling never-run
//! trials is bounded by the same limit as one inflating usage. Each batch carries one hash over its trials'
//! evidence records, folded with the `(trial, usage)` entries into the run's settlement digest
//! (`crate::digest`), which the report lets anyone recompute.

use anchor_lang::prelude::*;

use crate::constants::{CONFIG_ADDRESS, FEE_VAULT_ADDRESS, MAX_SETTLE_BATCH, RUN_SEED};
use crate::digest;
use crate::error::SkillTrialError;
use crate::events::TrialsSettled;
use crate::lamports;
use crate::state::{Config, FeeVault, Run, RunStatus};

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, Debug)]
pub struct TrialCharge {
    /// The trial's index in the run's plan.
    pub index: u16,
    /// Model usage at cost, lamports.
    pub usage: u64,
}

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct RunSettleArgs {
    /// The run this batch is for (its `run_id`): a batch never applies to a re-opened run.
    pub expected_run_id: u64,
    /// SHA-256 over the batch's evidence records (docs/program.md).
    pub evidence_hash: [u8; 32],
    pub trials: Vec<TrialCharge>,
}

#[derive(Accounts)]
pub struct RunSettle<'info> {
    /// The run's runner, still the config's.
    pub runner: Signer<'info>,
    #[account(address = CONFIG_ADDRESS)]
    pub config: Box<Account<'info, Config>>,
    #[account(
        mut,
        seeds = [RUN_SEED, run.user.as_ref(), run.manifest_hash.as_ref()],
        bump = run.bump
    )]
    pub run: Box<Account<'info, Run>>,
    #[account(mut, address = FEE_VAULT_ADDRESS)]
    pub fee_vault: Box<Account<'info, FeeVault>>,
    /// CHECK: any account at the config's payout address that this program does not own; it
    /// only receives lamports.
    #[account(
        mut,
        address = config.runner_payout @ SkillTrialError::WrongPayout,
        constraint = *runner_payout.owner != crate::ID @ SkillTrialError::PayoutIsProgramAccount
    )]
    pub runner_payout: UncheckedAccount<'info>,
}

impl RunSettle<'_> {
    pub fn validate(&self, args: &RunSettleArgs) -> Result<()> {
        let run = &self.run;
        require_keys_eq!(
            self.runner.key(),
            run.runner,
            SkillTrialError::NotRunsRunner
        );
        require_keys_eq!(
            run.runner,
            self.config.runner,
            SkillTrialError::RunnerRevoked
        );
        require!(
            args.expected_run_id == run.run_id,
            SkillTrialError::WrongRun
        );
        require!(
            !args.trials.is_empty() && args.trials.len() <= MAX_SETTLE_BATCH,
            SkillTrialError::BadBatch
        );
        let now = Clock::get()?.unix_timestamp;
        match run.status {
            RunStatus::Open => {
                require!(now <= run.deadline, SkillTrialError::DeadlinePassed);
            }
            RunStatus::Cancelled { .. } => {
                require!(now <= run.deadline, SkillTrialError::DeadlinePassed);
                require!(
                    now <= run.settle_closes_at()?,
                    SkillTrialError::CancelWindowClosed
                );
            }
            RunStatus::Finalized { .. } => return err!(SkillTrialError::RunNotOpen),
        }
        Ok(())
    }
}

pub fn run_settle(ctx: Context<RunSettle>, args: RunSettleArgs) -> Result<()> {
    let run = &mut ctx.accounts.run;
    let mut usage_total: u64 = 0;
    for charge in &args.trials {
        require!(
            charge.usage <= run.per_request_cap,
            SkillTrialError::ChargeAboveCap
        );
        run.mark_settled(charge.index)?;
        usage_total = lamports::sum(usage_total, charge.usage)?;
    }
    let count = u64::try_from(args.trials.len()).map_err(|_| SkillTrialError::Overflow)?;
    let fees = run
        .fee_per_trial
        .checked_mul(count)
        .ok_or(SkillTrialError::Overflow)?;
    run.settled_usage = lamports::sum(run.settled_usage, usage_total)?;
    run.settled_fees = lamports::sum(run.settled_fees, fees)?;
    run.settle_batches = run
        .settle_batches
        .checked_add(1)
        .ok_or(SkillTrialError::Overflow)?;
    run.settle_digest = digest::fold(&run.settle_digest, &args.evidence_hash, &args.trials);

    let now = Clock::get()?.unix_timestamp;
    let limit = ctx.accounts.config.usage_limit;
    let vault = &mut ctx.accounts.fee_vault;
    let leaving = lamports::sum(usage_total, fees)?;
    vault.spend(leaving, limit.amount, limit.period_secs, now)?;
    vault.total_trials_settled = lamports::sum(vault.total_trials_settled, count)?;
    vault.total_usage = lamports::sum(vault.total_usage, usage_total)?;
    vault.total_fees = lamports::sum(vault.total_fees, fees)?;

    let run_info = ctx.accounts.run.to_account_info();
    lamports::transfer(
        &run_info,
        &ctx.accounts.runner_payout.to_account_info(),
        usage_total,
    )?;
    let vault_info = ctx.accounts.fee_vault.to_account_info();
    lamports::transfer(&run_info, &vault_info, fees)?;

    let run = &ctx.accounts.run;
    run.invariant(run_info.lamports(), lamports::rent_minimum(&run_info)?)?;
    ctx.accounts
        .fee_vault
        .invariant(vault_info.lamports(), lamports::rent_minimum(&vault_info)?)?;
    emit!(TrialsSettled {
        run: run.key(),
        run_id: run.run_id,
        batch: run.settle_batches,
        trials: u16::try_from(count).map_err(|_| SkillTrialError::Overflow)?,
        usage: usage_total,
        fees,
        evidence_hash: args.evidence_hash,
        settle_digest: run.settle_digest,
    });
    Ok(())
}

//! SkillTrial's on-chain program (docs/program.md): escrows a hosted run's upper cost, settles executed
//! trials (usage at cost to the runner's payout address, the fee to the fee vault) into a digest
//! anyone can recompute from the report, books the remainder for the user to take back, records
//! the report hash, and releases fees to buybacks only against a burn of $SKTRIAL at a floor rate.
//! Every party's power is bounded on-chain (docs/program.md, "Trust").
//!
//! `lib.rs` only dispatches; each instruction lives in `instructions/` with its accounts,
//! `validate()` and handler. Seeds are in `constants.rs`; every state type checks its own
//! invariant last in every instruction that mutates it.

#[cfg(target_arch = "bpf")]
use solana_compiler_builtins as _;

use anchor_lang::prelude::*;

pub mod constants;
pub mod digest;
pub mod error;
pub mod events;
pub mod instructions;
pub mod lamports;
pub mod state;

use instructions::*;
use state::ConfigChange;

declare_id!("SkiLLTriaL111111111111111111111111111111111");

#[program]
pub mod skilltrial {
    use super::*;

    /// Creates the config, fee vault and buyback log, once. Only the program's upgrade authority
    /// may call it; it becomes the admin.
    pub fn config_init(ctx: Context<ConfigInit>, args: ConfigInitArgs) -> Result<()> {
        instructions::config_init::config_init(ctx, args)
    }

    /// The admin's immediate changes: the fee, the minimum deadline, revoking the runner,
    /// proposing a new admin.
    pub fn config_update(ctx: Context<ConfigUpdate>, args: ConfigUpdateArgs) -> Result<()> {
        instructions::config_update::config_update(ctx, args)
    }

    /// The admin proposes a time-locked change (an empty one withdraws the proposal).
    pub fn config_propose(ctx: Context<ConfigUpdate>, change: ConfigChange) -> Result<()> {
        instructions::config_update::config_propose(ctx, change)
    }

    /// The admin applies the pending change once its time lock is over.
    pub fn config_apply(ctx: Context<ConfigUpdate>) -> Result<()> {
        instructions::config_update::config_apply(ctx)
    }

    /// The proposed admin takes over.
    pub fn config_accept_admin(ctx: Context<ConfigAcceptAdmin>) -> Result<()> {
        instructions::config_update::config_accept_admin(ctx)
    }

    /// Opens a run and escrows its upper cost at the fee and runner the user agreed to. The user
    /// signs; planned trials 1–100; the deadline between the config's minimum and 7 days away.
    #[access_control(ctx.accounts.validate(&args))]
    pub fn run_open(ctx: Context<RunOpen>, args: RunOpenArgs) -> Result<()> {
        instructions::run_open::run_open(ctx, args)
    }

    /// Settles a batch of executed trials and folds it into the run's settlement digest. The
    /// run's runner only, while it is the config's; before the deadline; for a cancelled run
    /// within `CANCEL_SETTLE_WINDOW_SECS` of the cancel; within the runner's spending limit.
    #[access_control(ctx.accounts.validate(&args))]
    pub fn run_settle(ctx: Context<RunSettle>, args: RunSettleArgs) -> Result<()> {
        instructions::run_settle::run_settle(ctx, args)
    }

    /// Stops new dispatches. The run's user only; the run must be open.
    #[access_control(ctx.accounts.validate())]
    pub fn run_cancel(ctx: Context<RunCancel>) -> Result<()> {
        instructions::run_cancel::run_cancel(ctx)
    }

    /// Records the report hash and books the remainder for the user. The config's runner only.
    #[access_control(ctx.accounts.validate(&args))]
    pub fn run_finalize(ctx: Context<RunFinalize>, args: RunFinalizeArgs) -> Result<()> {
        instructions::run_finalize::run_finalize(ctx, args)
    }

    /// Once settling has closed, returns the remainder and the rent to the user and closes the
    /// run. The run's user only.
    #[access_control(ctx.accounts.validate())]
    pub fn run_refund_expired(ctx: Context<RunRefundExpired>) -> Result<()> {
        instructions::run_refund_expired::run_refund_expired(ctx)
    }

    /// Closes a finalized run, returning its remainder and rent. The run's user only.
    #[access_control(ctx.accounts.validate())]
    pub fn run_close(ctx: Context<RunClose>) -> Result<()> {
        instructions::run_close::run_close(ctx)
    }

    /// Releases fee-vault lamports against a burn of $SKTRIAL at the floor rate in the same
    /// transaction. The runner only; at most once per interval, at most the per-interval cap.
    #[access_control(ctx.accounts.validate(&args))]
    pub fn buyback_execute(ctx: Context<BuybackExecute>, args: BuybackExecuteArgs) -> Result<()> {
        instructions::buyback_execute::buyback_execute(ctx, args)
    }
}

//! SkillTrial's on-chain program (docs/program.md): escrows a hosted run's upper cost, settles executed
//! trials (usage at cost to the runner, the fee to the fee vault), refunds what was not used,
//! records the report hash, and gates buybacks on a burn of $SKTRIAL.
//!
//! `lib.rs` only dispatches; each instruction lives in `instructions/` with its accounts,
//! `validate()` and handler. Seeds are in `constants.rs`; every state type checks its own
//! invariant last in every instruction that mutates it.

#[cfg(target_arch = "bpf")]
use solana_compiler_builtins as _;

use anchor_lang::prelude::*;

pub mod constants;
pub mod error;
pub mod events;
pub mod instructions;
pub mod lamports;
pub mod state;

use instructions::*;

declare_id!("SkiLLTriaL111111111111111111111111111111111");

#[program]
pub mod skilltrial {
    use super::*;

    /// Creates the config, fee vault and buyback log, once. Only the program's upgrade authority
    /// may call it; it becomes the admin.
    pub fn config_init(ctx: Context<ConfigInit>, args: ConfigInitArgs) -> Result<()> {
        instructions::config_init::config_init(ctx, args)
    }

    /// Changes the config. Admin only.
    pub fn config_update(ctx: Context<ConfigUpdate>, args: ConfigUpdateArgs) -> Result<()> {
        instructions::config_update::config_update(ctx, args)
    }

    /// Opens a run and escrows its upper cost. The user signs; planned trials 1–100; the deadline
    /// at least `MIN_DEADLINE_SECS` away.
    #[access_control(ctx.accounts.validate(&args))]
    pub fn run_open(ctx: Context<RunOpen>, args: RunOpenArgs) -> Result<()> {
        instructions::run_open::run_open(ctx, args)
    }

    /// Settles a batch of executed trials. The configured runner only; the run must be open, or
    /// cancelled less than `CANCEL_SETTLE_WINDOW_SECS` ago (requests already in flight).
    #[access_control(ctx.accounts.validate(&args))]
    pub fn run_settle(ctx: Context<RunSettle>, args: RunSettleArgs) -> Result<()> {
        instructions::run_settle::run_settle(ctx, args)
    }

    /// Stops new dispatches. The run's user only; the run must be open.
    #[access_control(ctx.accounts.validate())]
    pub fn run_cancel(ctx: Context<RunCancel>) -> Result<()> {
        instructions::run_cancel::run_cancel(ctx)
    }

    /// Records the report hash and refunds the remainder. The configured runner only.
    #[access_control(ctx.accounts.validate())]
    pub fn run_finalize(ctx: Context<RunFinalize>, report_hash: [u8; 32]) -> Result<()> {
        instructions::run_finalize::run_finalize(ctx, report_hash)
    }

    /// Refunds the remainder after the deadline. The run's user only.
    #[access_control(ctx.accounts.validate())]
    pub fn run_refund_expired(ctx: Context<RunRefundExpired>) -> Result<()> {
        instructions::run_refund_expired::run_refund_expired(ctx)
    }

    /// Closes a finalized or refunded run, returning its rent. The run's user only.
    #[access_control(ctx.accounts.validate())]
    pub fn run_close(ctx: Context<RunClose>) -> Result<()> {
        instructions::run_close::run_close(ctx)
    }

    /// Releases fee-vault lamports against a burn of $SKTRIAL in the same transaction. The
    /// runner only; at most once per interval.
    #[access_control(ctx.accounts.validate(&args))]
    pub fn buyback_execute(ctx: Context<BuybackExecute>, args: BuybackExecuteArgs) -> Result<()> {
        instructions::buyback_execute::buyback_execute(ctx, args)
    }
}

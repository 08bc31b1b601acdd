//! `buyback_execute`: at most once per interval, the runner takes fee-vault lamports to buy
//! $SKTRIAL — bounded on-chain — inside a transaction that also burns what was bought:
//!
//! - at most `max_buyback_lamports` per buyback (so per interval), and never more than the fees
//!   collected and not yet released (the books, not the balance: donations change nothing);
//! - the burn must reach the admin's floor rate, `tokens_burned × rate.lamports ≥ lamports_in ×
//!   rate.tokens`, compared in `u128`;
//! - the burn is the top-level instruction at `burn_index`, after this one: an SPL Token or
//!   Token-2022 `Burn`/`BurnChecked` of exactly `tokens_burned` of the configured mint, from the
//!   runner's own token account, with the runner as its authority;
//! - the buyback itself must be top-level, and the only buyback in its transaction, so one burn
//!   satisfies one buyback.
//!
//! What stays trusted: the swap between release and burn is the runner's, so the runner keeps
//! any spread above the floor rate (docs/program.md, "What is still trusted"). Each buyback is
//! appended to the on-chain log.

use anchor_lang::Discriminator;
use anchor_lang::compat::solana_instructions_sysvar::{
    load_current_index_checked, load_instruction_at_checked,
};
use anchor_lang::prelude::*;
use anchor_lang::solana_program::instruction::{TRANSACTION_LEVEL_STACK_HEIGHT, get_stack_height};

use crate::constants::{BUYBACK_LOG_ADDRESS, CONFIG_ADDRESS, FEE_VAULT_ADDRESS};
use crate::error::SkillTrialError;
use crate::events::BuybackExecuted;
use crate::lamports;
use crate::state::{BuybackEntry, BuybackLog, Config, FeeVault};

/// SPL Token and Token-2022 program ids.
pub const TOKEN_PROGRAMS: [Pubkey; 2] = [
    pubkey!("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
    pubkey!("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"),
];
const BURN: u8 = 8;
const BURN_CHECKED: u8 = 15;
/// An SPL token account: mint at 0..32, owner at 32..64; 165 bytes (Token-2022 may append
/// extensions after them).
const TOKEN_ACCOUNT_LEN: usize = 165;

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct BuybackExecuteArgs {
    /// Fee-vault lamports released to buy $SKTRIAL.
    pub lamports_in: u64,
    /// $SKTRIAL base units the burn at `burn_index` destroys.
    pub tokens_burned: u64,
    /// The index, in this transaction, of the top-level burn instruction.
    pub burn_index: u16,
}

#[derive(Accounts)]
pub struct BuybackExecute<'info> {
    /// The configured runner; it receives the lamports to swap.
    #[account(mut)]
    pub runner: Signer<'info>,
    #[account(address = CONFIG_ADDRESS, has_one = runner)]
    pub config: Box<Account<'info, Config>>,
    #[account(mut, address = FEE_VAULT_ADDRESS)]
    pub fee_vault: Box<Account<'info, FeeVault>>,
    #[account(mut, address = BUYBACK_LOG_ADDRESS)]
    pub buyback_log: AccountLoader<'info, BuybackLog>,
    /// CHECK: the runner's $SKTRIAL token account the burn comes from: owned by a token
    /// program, of the configured mint, owned by the runner (checked in `validate`).
    pub runner_token_account: UncheckedAccount<'info>,
    /// CHECK: the instructions sysvar, checked by address.
    #[account(address = anchor_lang::compat::solana_instructions_sysvar::ID)]
    pub instructions: UncheckedAccount<'info>,
}

impl BuybackExecute<'_> {
    pub fn validate(&self, args: &BuybackExecuteArgs) -> Result<()> {
        let Self {
            runner,
            config,
            fee_vault,
            buyback_log: _,
            runner_token_account,
            instructions,
        } = self;
        require!(
            args.lamports_in > 0 && args.tokens_burned > 0,
            SkillTrialError::ZeroBuyback
        );
        require!(
            get_stack_height() == TRANSACTION_LEVEL_STACK_HEIGHT,
            SkillTrialError::BuybackNotTopLevel
        );
        let now = Clock::get()?.unix_timestamp;
        let since = now
            .checked_sub(fee_vault.last_buyback_ts)
            .ok_or(SkillTrialError::Overflow)?;
        require!(
            fee_vault.last_buyback_ts == 0 || since >= config.buyback_interval_secs,
            SkillTrialError::BuybackTooSoon
        );
        require!(
            args.lamports_in <= config.max_buyback_lamports,
            SkillTrialError::BuybackAboveCap
        );
        require!(
            args.lamports_in <= fee_vault.unreleased()?,
            SkillTrialError::FeeVaultShort
        );
        let burned = u128::from(args.tokens_burned)
            .checked_mul(u128::from(config.buyback_rate.lamports))
            .ok_or(SkillTrialError::Overflow)?;
        let floor = u128::from(args.lamports_in)
            .checked_mul(u128::from(config.buyback_rate.tokens))
            .ok_or(SkillTrialError::Overflow)?;
        require!(burned >= floor, SkillTrialError::BuybackBelowRate);

        let token_program =
            Self::runners_token_account(runner_token_account, &config.sktrial_mint, &runner.key())?;
        let sysvar = instructions.to_account_info();
        Self::only_buyback(&sysvar)?;
        Self::require_burn(
            &sysvar,
            args,
            &token_program,
            &runner_token_account.key(),
            &config.sktrial_mint,
            &runner.key(),
        )
    }

    /// The token account is a token program's, of `mint`, owned by `runner`; returns its program.
    fn runners_token_account(
        account: &AccountInfo,
        mint: &Pubkey,
        runner: &Pubkey,
    ) -> Result<Pubkey> {
        let program = *account.owner;
        let data = account.try_borrow_data()?;
        let ok = TOKEN_PROGRAMS.contains(&program)
            && data.len() >= TOKEN_ACCOUNT_LEN
            && data.get(..32) == Some(mint.as_ref())
            && data.get(32..64) == Some(runner.as_ref());
        require!(ok, SkillTrialError::NotRunnersTokenAccount);
        Ok(program)
    }

    /// No other top-level instruction of this transaction is a buyback, so one burn can never
    /// satisfy two (CPI'd buybacks are refused by the stack-height check).
    fn only_buyback(sysvar: &AccountInfo) -> Result<()> {
        let current = usize::from(load_current_index_checked(sysvar)?);
        let mut index = 0usize;
        while let Ok(ix) = load_instruction_at_checked(index, sysvar) {
            let program = Pubkey::new_from_array(ix.program_id.to_bytes());
            let is_buyback = program == crate::ID
                && ix
                    .data
                    .starts_with(crate::instruction::BuybackExecute::DISCRIMINATOR);
            require!(
                index == current || !is_buyback,
                SkillTrialError::OneBuybackPerTransaction
            );
            index = index.checked_add(1).ok_or(SkillTrialError::Overflow)?;
        }
        Ok(())
    }

    /// The top-level instruction at `args.burn_index`, after this one, burns exactly
    /// `args.tokens_burned` of `mint` from `account`, by `runner`, through `token_program`.
    fn require_burn(
        sysvar: &AccountInfo,
        args: &BuybackExecuteArgs,
        token_program: &Pubkey,
        account: &Pubkey,
        mint: &Pubkey,
        runner: &Pubkey,
    ) -> Result<()> {
        let current = load_current_index_checked(sysvar)?;
        require!(args.burn_index > current, SkillTrialError::BurnMissing);
        let ix = load_instruction_at_checked(usize::from(args.burn_index), sysvar)
            .map_err(|_| error!(SkillTrialError::BurnMissing))?;
        let program = Pubkey::new_from_array(ix.program_id.to_bytes());
        let key = |i: usize| {
            ix.accounts
                .get(i)
                .map(|m| Pubkey::new_from_array(m.pubkey.to_bytes()))
        };
        let amount = ix
            .data
            .get(1..9)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes);
        let tag = ix.data.first().copied();
        let ok = program == *token_program
            && (tag == Some(BURN) || tag == Some(BURN_CHECKED))
            && amount == Some(args.tokens_burned)
            && key(0) == Some(*account)
            && key(1) == Some(*mint)
            && key(2) == Some(*runner);
        require!(ok, SkillTrialError::BurnMissing);
        Ok(())
    }
}

pub fn buyback_execute(ctx: Context<BuybackExecute>, args: BuybackExecuteArgs) -> Result<()> {
    let vault_info = ctx.accounts.fee_vault.to_account_info();
    lamports::transfer(
        &vault_info,
        &ctx.accounts.runner.to_account_info(),
        args.lamports_in,
    )?;
    let now = Clock::get()?.unix_timestamp;
    let vault = &mut ctx.accounts.fee_vault;
    vault.last_buyback_ts = now;
    vault.total_bought_back = lamports::sum(vault.total_bought_back, args.lamports_in)?;
    vault.total_burned = lamports::sum(vault.total_burned, args.tokens_burned)?;
    let entry = BuybackEntry {
        at: now,
        lamports_in: args.lamports_in,
        tokens_burned: args.tokens_burned,
        burn_index: u64::from(args.burn_index),
        token_account: ctx.accounts.runner_token_account.key(),
    };
    ctx.accounts.buyback_log.load_mut()?.push(entry)?;
    ctx.accounts
        .fee_vault
        .invariant(vault_info.lamports(), lamports::rent_minimum(&vault_info)?)?;
    emit!(BuybackExecuted {
        runner: ctx.accounts.runner.key(),
        token_account: entry.token_account,
        lamports_in: args.lamports_in,
        tokens_burned: args.tokens_burned,
        burn_index: args.burn_index,
        at: now
    });
    Ok(())
}

//! `buyback_execute`: at most once per interval, the runner releases fee-vault lamports — but
//! only inside a transaction that also burns $SKTRIAL: a later instruction of the same
//! transaction must be an SPL Token (or Token-2022) `BurnChecked`/`Burn` of exactly
//! `tokens_burned` units of the configured mint. The buy in between (a swap of the released
//! lamports for $SKTRIAL) is the runner's; the program checks what it can see: the interval, the
//! vault's balance and the burn. Each buyback is appended to the on-chain log.

use anchor_lang::compat::solana_instructions_sysvar::{
    load_current_index_checked, load_instruction_at_checked,
};
use anchor_lang::prelude::*;

use crate::constants::{BUYBACK_LOG_SEED, CONFIG_SEED, FEE_VAULT_SEED};
use crate::error::SkillTrialError;
use crate::events::BuybackExecuted;
use crate::lamports;
use crate::state::{BuybackEntry, BuybackLog, Config, FeeVault};

/// SPL Token and Token-2022 program ids.
const TOKEN_PROGRAMS: [Pubkey; 2] = [
    pubkey!("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
    pubkey!("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"),
];
const BURN: u8 = 8;
const BURN_CHECKED: u8 = 15;

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct BuybackExecuteArgs {
    /// Fee-vault lamports released to buy $SKTRIAL.
    pub lamports_in: u64,
    /// $SKTRIAL base units the same transaction burns.
    pub tokens_burned: u64,
}

#[derive(Accounts)]
pub struct BuybackExecute<'info> {
    /// The configured runner; it receives the lamports to swap.
    #[account(mut)]
    pub runner: Signer<'info>,
    #[account(mut, seeds = [CONFIG_SEED], bump = config.bump, has_one = runner)]
    pub config: Account<'info, Config>,
    #[account(mut, seeds = [FEE_VAULT_SEED], bump = config.fee_vault_bump)]
    pub fee_vault: Account<'info, FeeVault>,
    #[account(mut, seeds = [BUYBACK_LOG_SEED], bump = buyback_log.bump)]
    pub buyback_log: Account<'info, BuybackLog>,
    /// CHECK: the instructions sysvar, checked by address.
    #[account(address = anchor_lang::compat::solana_instructions_sysvar::ID)]
    pub instructions: UncheckedAccount<'info>,
}

impl BuybackExecute<'_> {
    pub fn validate(&self, args: &BuybackExecuteArgs) -> Result<()> {
        require!(
            args.lamports_in > 0 && args.tokens_burned > 0,
            SkillTrialError::BurnMissing
        );
        let now = Clock::get()?.unix_timestamp;
        let since = now
            .checked_sub(self.config.last_buyback_ts)
            .ok_or(SkillTrialError::Overflow)?;
        require!(
            self.config.last_buyback_ts == 0 || since >= self.config.buyback_interval_secs,
            SkillTrialError::BuybackTooSoon
        );
        let vault = self.fee_vault.to_account_info();
        let rent = Rent::get()?.minimum_balance(vault.data_len());
        let available = vault
            .lamports()
            .checked_sub(rent)
            .ok_or(SkillTrialError::FeeVaultShort)?;
        require!(
            available >= args.lamports_in,
            SkillTrialError::FeeVaultShort
        );
        self.require_burn(args.tokens_burned)
    }

    /// A later instruction of this transaction burns exactly `amount` of the configured mint.
    fn require_burn(&self, amount: u64) -> Result<()> {
        let sysvar = self.instructions.to_account_info();
        let current = load_current_index_checked(&sysvar)?;
        let mut index = current.checked_add(1).ok_or(SkillTrialError::Overflow)?;
        while let Ok(ix) = load_instruction_at_checked(usize::from(index), &sysvar) {
            let program = Pubkey::new_from_array(ix.program_id.to_bytes());
            if TOKEN_PROGRAMS.contains(&program) {
                let (tag, rest) = ix.data.split_first().unwrap_or((&0, &[]));
                let burned = rest
                    .get(..8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map(u64::from_le_bytes);
                let mint = ix
                    .accounts
                    .get(1)
                    .map(|m| Pubkey::new_from_array(m.pubkey.to_bytes()));
                if (*tag == BURN || *tag == BURN_CHECKED)
                    && burned == Some(amount)
                    && mint == Some(self.config.sktrial_mint)
                {
                    return Ok(());
                }
            }
            index = index.checked_add(1).ok_or(SkillTrialError::Overflow)?;
        }
        err!(SkillTrialError::BurnMissing)
    }
}

pub fn buyback_execute(ctx: Context<BuybackExecute>, args: BuybackExecuteArgs) -> Result<()> {
    lamports::transfer(
        &ctx.accounts.fee_vault.to_account_info(),
        &ctx.accounts.runner.to_account_info(),
        args.lamports_in,
    )?;
    let now = Clock::get()?.unix_timestamp;
    let config = &mut ctx.accounts.config;
    config.last_buyback_ts = now;
    config.total_bought_back = config
        .total_bought_back
        .checked_add(args.lamports_in)
        .ok_or(SkillTrialError::Overflow)?;
    config.total_burned = config
        .total_burned
        .checked_add(args.tokens_burned)
        .ok_or(SkillTrialError::Overflow)?;
    ctx.accounts.buyback_log.push(BuybackEntry {
        at: now,
        lamports_in: args.lamports_in,
        tokens_burned: args.tokens_burned,
    })?;
    emit!(BuybackExecuted {
        lamports_in: args.lamports_in,
        tokens_burned: args.tokens_burned,
        at: now
    });
    config.invariant()
}

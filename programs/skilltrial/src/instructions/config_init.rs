//! `config_init`: create the config, the fee vault and the buyback log. Signed by the program's
//! upgrade authority, who becomes the admin: nobody can take the config between deploy and init.

use anchor_lang::prelude::*;

use crate::constants::{BUYBACK_LOG_SEED, CONFIG_SEED, FEE_VAULT_SEED};
use crate::error::SkillTrialError;
use crate::events::ConfigUpdated;
use crate::state::{BuybackLog, Config, FeeVault};

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct ConfigInitArgs {
    pub runner: Pubkey,
    pub fee_per_trial: u64,
    pub buyback_interval_secs: i64,
    pub sktrial_mint: Pubkey,
}

#[derive(Accounts)]
pub struct ConfigInit<'info> {
    #[account(mut)]
    pub admin: Signer<'info>,
    /// The program's ProgramData account (upgradeable loader); its upgrade authority must sign.
    #[account(
        seeds = [crate::ID.as_ref()],
        bump,
        seeds::program = anchor_lang::solana_program::bpf_loader_upgradeable::ID,
        constraint = program_data.upgrade_authority_address == Some(admin.key())
            @ SkillTrialError::NotUpgradeAuthority
    )]
    pub program_data: Account<'info, ProgramData>,
    #[account(init, payer = admin, space = 8 + Config::INIT_SPACE, seeds = [CONFIG_SEED], bump)]
    pub config: Account<'info, Config>,
    #[account(init, payer = admin, space = 8 + FeeVault::INIT_SPACE, seeds = [FEE_VAULT_SEED], bump)]
    pub fee_vault: Account<'info, FeeVault>,
    #[account(init, payer = admin, space = 8 + BuybackLog::INIT_SPACE, seeds = [BUYBACK_LOG_SEED], bump)]
    pub buyback_log: Account<'info, BuybackLog>,
    pub system_program: Program<'info, System>,
}

pub fn config_init(ctx: Context<ConfigInit>, args: ConfigInitArgs) -> Result<()> {
    let config = &mut ctx.accounts.config;
    config.admin = ctx.accounts.admin.key();
    config.runner = args.runner;
    config.fee_per_trial = args.fee_per_trial;
    config.buyback_interval_secs = args.buyback_interval_secs;
    config.sktrial_mint = args.sktrial_mint;
    config.last_buyback_ts = 0;
    config.bump = ctx.bumps.config;
    config.fee_vault_bump = ctx.bumps.fee_vault;
    ctx.accounts.fee_vault.bump = ctx.bumps.fee_vault;
    ctx.accounts.buyback_log.bump = ctx.bumps.buyback_log;
    emit!(ConfigUpdated::of(config));
    config.invariant()?;
    ctx.accounts.buyback_log.invariant()
}

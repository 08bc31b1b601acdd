//! `config_init`: create the config, the fee vault and the buyback log. Signed by the program's
//! upgrade authority, who becomes the admin: nobody can take the config between deploy and init.
//! Every value is checked against its bounds, so the program never starts bricked.

use anchor_lang::prelude::*;

use crate::constants::{ACCOUNT_VERSION, BUYBACK_LOG_SEED, CONFIG_SEED, FEE_VAULT_SEED};
use crate::error::SkillTrialError;
use crate::events::ConfigUpdated;
use crate::lamports;
use crate::state::{BuybackLog, BuybackRate, Config, FeeVault, SpendingLimit};

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct ConfigInitArgs {
    pub runner: Pubkey,
    pub runner_payout: Pubkey,
    pub fee_per_trial: u64,
    pub min_deadline_secs: i64,
    pub time_lock_secs: i64,
    pub usage_limit: SpendingLimit,
    pub sktrial_mint: Pubkey,
    pub buyback_interval_secs: i64,
    pub max_buyback_lamports: u64,
    pub buyback_rate: BuybackRate,
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
    pub config: Box<Account<'info, Config>>,
    #[account(init, payer = admin, space = 8 + FeeVault::INIT_SPACE, seeds = [FEE_VAULT_SEED], bump)]
    pub fee_vault: Box<Account<'info, FeeVault>>,
    #[account(init, payer = admin, space = 8 + BuybackLog::SPACE, seeds = [BUYBACK_LOG_SEED], bump)]
    pub buyback_log: AccountLoader<'info, BuybackLog>,
    pub system_program: Program<'info, System>,
}

pub fn config_init(ctx: Context<ConfigInit>, args: ConfigInitArgs) -> Result<()> {
    require_keys_neq!(args.runner, Pubkey::default(), SkillTrialError::DefaultKey);
    let now = Clock::get()?.unix_timestamp;
    let config = &mut ctx.accounts.config;
    config.version = ACCOUNT_VERSION;
    config.admin = ctx.accounts.admin.key();
    config.pending_admin = None;
    config.runner = args.runner;
    config.runner_payout = args.runner_payout;
    config.fee_per_trial = args.fee_per_trial;
    config.min_deadline_secs = args.min_deadline_secs;
    config.time_lock_secs = args.time_lock_secs;
    config.usage_limit = args.usage_limit;
    config.sktrial_mint = args.sktrial_mint;
    config.buyback_interval_secs = args.buyback_interval_secs;
    config.max_buyback_lamports = args.max_buyback_lamports;
    config.buyback_rate = args.buyback_rate;
    config.pending = None;
    config.bump = ctx.bumps.config;
    config.fee_vault_bump = ctx.bumps.fee_vault;
    let vault = &mut ctx.accounts.fee_vault;
    vault.bump = ctx.bumps.fee_vault;
    vault.version = ACCOUNT_VERSION;
    vault.next_run_id = 1;
    vault.usage_period_start = now;
    let mut log = ctx.accounts.buyback_log.load_init()?;
    log.bump = ctx.bumps.buyback_log;
    log.invariant()?;
    drop(log);

    config.invariant()?;
    let vault_info = vault.to_account_info();
    vault.invariant(vault_info.lamports(), lamports::rent_minimum(&vault_info)?)?;
    emit!(ConfigUpdated::of(&ctx.accounts.config));
    Ok(())
}

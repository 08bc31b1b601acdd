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
    /// The config's PDA, created by the handler on every cluster, pre-funded or not
    /// (`lamports::create_pda`; Anchor's `init` would need SIMD-0312 for a pre-funded address).
    /// CHECK: seeds checked here; `create_pda` refuses an account that already exists.
    #[account(mut, seeds = [CONFIG_SEED], bump)]
    pub config: UncheckedAccount<'info>,
    /// The fee vault's PDA, created by the handler as `config` is.
    /// CHECK: seeds checked here; `create_pda` refuses an account that already exists.
    #[account(mut, seeds = [FEE_VAULT_SEED], bump)]
    pub fee_vault: UncheckedAccount<'info>,
    /// The buyback log's PDA, created by the handler as `config` is.
    /// CHECK: seeds checked here; `create_pda` refuses an account that already exists.
    #[account(mut, seeds = [BUYBACK_LOG_SEED], bump)]
    pub buyback_log: UncheckedAccount<'info>,
    pub system_program: Program<'info, System>,
}

pub fn config_init(ctx: Context<ConfigInit>, args: ConfigInitArgs) -> Result<()> {
    require_keys_neq!(args.runner, Pubkey::default(), SkillTrialError::DefaultKey);
    let now = Clock::get()?.unix_timestamp;
    let admin = ctx.accounts.admin.to_account_info();
    let system = ctx.accounts.system_program.to_account_info();
    let bumps = &ctx.bumps;
    let config_info = ctx.accounts.config.to_account_info();
    let vault_info = ctx.accounts.fee_vault.to_account_info();
    let log_info = ctx.accounts.buyback_log.to_account_info();
    lamports::create_pda(
        &admin,
        &config_info,
        &system,
        8 + Config::INIT_SPACE,
        &[CONFIG_SEED, &[bumps.config]],
    )?;
    lamports::create_pda(
        &admin,
        &vault_info,
        &system,
        8 + FeeVault::INIT_SPACE,
        &[FEE_VAULT_SEED, &[bumps.fee_vault]],
    )?;
    lamports::create_pda(
        &admin,
        &log_info,
        &system,
        8 + BuybackLog::SPACE,
        &[BUYBACK_LOG_SEED, &[bumps.buyback_log]],
    )?;

    let config = Config {
        version: ACCOUNT_VERSION,
        admin: admin.key(),
        pending_admin: None,
        runner: args.runner,
        runner_payout: args.runner_payout,
        fee_per_trial: args.fee_per_trial,
        min_deadline_secs: args.min_deadline_secs,
        time_lock_secs: args.time_lock_secs,
        usage_limit: args.usage_limit,
        sktrial_mint: args.sktrial_mint,
        buyback_interval_secs: args.buyback_interval_secs,
        max_buyback_lamports: args.max_buyback_lamports,
        buyback_rate: args.buyback_rate,
        pending: None,
        bump: bumps.config,
        fee_vault_bump: bumps.fee_vault,
        reserved: [0; 64],
    };
    config.invariant()?;
    lamports::write_new(&config_info, &config)?;
    let vault = FeeVault {
        bump: bumps.fee_vault,
        version: ACCOUNT_VERSION,
        next_run_id: 1,
        total_trials_settled: 0,
        total_usage: 0,
        total_fees: 0,
        total_bought_back: 0,
        total_burned: 0,
        last_buyback_ts: 0,
        usage_period_start: now,
        usage_in_period: 0,
        reserved: [0; 32],
    };
    vault.invariant(vault_info.lamports(), lamports::rent_minimum(&vault_info)?)?;
    lamports::write_new(&vault_info, &vault)?;
    {
        let mut data = log_info.try_borrow_mut_data()?;
        let (discriminator, body) = data
            .split_at_mut_checked(8)
            .ok_or(SkillTrialError::AccountingBroken)?;
        discriminator.copy_from_slice(BuybackLog::DISCRIMINATOR);
        let log: &mut BuybackLog =
            bytemuck::try_from_bytes_mut(body).map_err(|_| SkillTrialError::AccountingBroken)?;
        log.bump = bumps.buyback_log;
        log.invariant()?;
    }
    emit!(ConfigUpdated::of(&config));
    Ok(())
}

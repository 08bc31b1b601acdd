//! `config_update`: change the runner, fee, interval or mint. Admin only.

use anchor_lang::prelude::*;

use crate::constants::CONFIG_SEED;
use crate::events::ConfigUpdated;
use crate::state::Config;

#[derive(AnchorSerialize, AnchorDeserialize, Clone, Debug)]
pub struct ConfigUpdateArgs {
    pub runner: Option<Pubkey>,
    pub fee_per_trial: Option<u64>,
    pub buyback_interval_secs: Option<i64>,
    pub sktrial_mint: Option<Pubkey>,
    pub admin: Option<Pubkey>,
}

#[derive(Accounts)]
pub struct ConfigUpdate<'info> {
    pub admin: Signer<'info>,
    #[account(mut, seeds = [CONFIG_SEED], bump = config.bump, has_one = admin)]
    pub config: Account<'info, Config>,
}

pub fn config_update(ctx: Context<ConfigUpdate>, args: ConfigUpdateArgs) -> Result<()> {
    let config = &mut ctx.accounts.config;
    if let Some(runner) = args.runner {
        config.runner = runner;
    }
    if let Some(fee) = args.fee_per_trial {
        config.fee_per_trial = fee;
    }
    if let Some(interval) = args.buyback_interval_secs {
        config.buyback_interval_secs = interval;
    }
    if let Some(mint) = args.sktrial_mint {
        config.sktrial_mint = mint;
    }
    if let Some(admin) = args.admin {
        config.admin = admin;
    }
    emit!(ConfigUpdated::of(config));
    config.invariant()
}

//! A test venue for buybacks on a local cluster: one SOL → $SKTRIAL constant-product pool per
//! mint, with a fee and a minimum-output check, so the runner's buyback transaction —
//! `buyback_execute`, a swap, a burn — runs on `skilltrial localnet` exactly as it would on a
//! public cluster through Jupiter. It is loaded only into local validators; a public cluster
//! uses real venues.
//!
//! - The pool is a program-owned account at `[POOL_SEED, mint]`: its lamports above the
//!   rent-exempt minimum are the SOL reserve. Its token vault is an SPL Token account whose
//!   authority is the pool; the vault's balance is the token reserve.
//! - `buy(amount_in, min_out)` moves `amount_in` lamports from the buyer to the pool and
//!   `out_amount(..)` tokens from the vault to the buyer's token account, and fails with
//!   `ExceededSlippage` when that is less than `min_out` (as Raydium's CP-Swap does).
//! - Pools are created in the validator's genesis (`skilltrial localnet`): no instruction
//!   creates or drains one, so nobody but a buyer can move its reserves.

#[cfg(target_arch = "bpf")]
use solana_compiler_builtins as _;

use anchor_lang::prelude::*;
use anchor_lang::solana_program::instruction::{AccountMeta, Instruction};
use anchor_lang::solana_program::program::invoke_signed;

declare_id!("SkiLLVenue111111111111111111111111111111111");

/// `[POOL_SEED, mint]` → the pool of `mint`.
pub const POOL_SEED: &[u8] = b"pool";
/// The SPL Token program (the only token program this venue speaks).
pub const TOKEN_PROGRAM: Pubkey = pubkey!("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
/// Basis points in one whole.
pub const BPS: u64 = 10_000;
/// An SPL token account: mint at 0..32, authority at 32..64, amount at 64..72.
const TOKEN_ACCOUNT_LEN: usize = 165;
/// SPL Token `Transfer`.
const TRANSFER: u8 = 3;

/// The tokens `amount_in` lamports buy from a pool holding `sol_reserve` lamports and
/// `token_reserve` tokens, after a fee of `fee_bps`: `token_reserve × in′ / (sol_reserve + in′)`
/// with `in′ = amount_in × (BPS − fee_bps) / BPS`, rounded down (the pool never gives more than
/// the product allows). `None` on a fee over 100 % or an empty pool.
pub fn out_amount(
    sol_reserve: u64,
    token_reserve: u64,
    amount_in: u64,
    fee_bps: u16,
) -> Option<u64> {
    let keep = BPS.checked_sub(u64::from(fee_bps))?;
    let effective = u128::from(amount_in)
        .checked_mul(u128::from(keep))?
        .checked_div(u128::from(BPS))?;
    let denominator = u128::from(sol_reserve).checked_add(effective)?;
    if denominator == 0 {
        return None;
    }
    let out = u128::from(token_reserve)
        .checked_mul(effective)?
        .checked_div(denominator)?;
    u64::try_from(out).ok()
}

/// The pool of `mint` and its bump.
pub fn pool_address(mint: &Pubkey) -> (Pubkey, u8) {
    Pubkey::find_program_address(&[POOL_SEED, mint.as_ref()], &ID)
}

#[program]
pub mod skilltrial_venue {
    use super::*;

    /// Buys at least `min_out` tokens with exactly `amount_in` lamports.
    pub fn buy(ctx: Context<Buy>, amount_in: u64, min_out: u64) -> Result<()> {
        require!(amount_in > 0, VenueError::ZeroAmount);
        let pool_info = ctx.accounts.pool.to_account_info();
        let rent = Rent::get()?.minimum_balance(pool_info.data_len());
        let sol_reserve = pool_info
            .lamports()
            .checked_sub(rent)
            .ok_or(VenueError::EmptyPool)?;
        let token_reserve = ctx.accounts.vault_balance()?;
        let out = out_amount(
            sol_reserve,
            token_reserve,
            amount_in,
            ctx.accounts.pool.fee_bps,
        )
        .ok_or(VenueError::EmptyPool)?;
        require!(out > 0, VenueError::ZeroAmount);
        require!(out >= min_out, VenueError::ExceededSlippage);

        anchor_lang::system_program::transfer(
            CpiContext::new(
                ctx.accounts.system_program.key(),
                anchor_lang::system_program::Transfer {
                    from: ctx.accounts.buyer.to_account_info(),
                    to: pool_info.clone(),
                },
            ),
            amount_in,
        )?;
        let mut data = Vec::with_capacity(9);
        data.push(TRANSFER);
        data.extend_from_slice(&out.to_le_bytes());
        let transfer = Instruction {
            program_id: TOKEN_PROGRAM,
            accounts: vec![
                AccountMeta::new(ctx.accounts.vault.key(), false),
                AccountMeta::new(ctx.accounts.buyer_token.key(), false),
                AccountMeta::new_readonly(pool_info.key(), true),
            ],
            data,
        };
        let mint = ctx.accounts.pool.mint;
        let bump = [ctx.accounts.pool.bump];
        invoke_signed(
            &transfer,
            &[
                ctx.accounts.vault.to_account_info(),
                ctx.accounts.buyer_token.to_account_info(),
                pool_info,
                ctx.accounts.token_program.to_account_info(),
            ],
            &[&[POOL_SEED, mint.as_ref(), &bump]],
        )?;
        emit!(Bought {
            buyer: ctx.accounts.buyer.key(),
            amount_in,
            amount_out: out,
            sol_reserve,
            token_reserve,
        });
        Ok(())
    }
}

#[derive(Accounts)]
pub struct Buy<'info> {
    #[account(mut)]
    pub buyer: Signer<'info>,
    #[account(mut, seeds = [POOL_SEED, pool.mint.as_ref()], bump = pool.bump, has_one = vault)]
    pub pool: Account<'info, Pool>,
    /// CHECK: the pool's token vault (by `has_one`); its layout, mint and authority are checked
    /// in `vault_balance`.
    #[account(mut)]
    pub vault: UncheckedAccount<'info>,
    /// CHECK: the buyer's token account of the pool's mint: the token program refuses any other.
    #[account(mut)]
    pub buyer_token: UncheckedAccount<'info>,
    /// CHECK: the SPL Token program, by address.
    #[account(address = TOKEN_PROGRAM)]
    pub token_program: UncheckedAccount<'info>,
    pub system_program: Program<'info, System>,
}

impl Buy<'_> {
    /// The vault's balance, once it is known to be an SPL Token account of the pool's mint
    /// whose authority is the pool.
    fn vault_balance(&self) -> Result<u64> {
        let vault = self.vault.to_account_info();
        let data = vault.try_borrow_data()?;
        let ok = *vault.owner == TOKEN_PROGRAM
            && data.len() == TOKEN_ACCOUNT_LEN
            && data.get(..32) == Some(self.pool.mint.as_ref())
            && data.get(32..64) == Some(self.pool.key().as_ref());
        require!(ok, VenueError::NotThePoolsVault);
        data.get(64..72)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| error!(VenueError::NotThePoolsVault))
    }
}

/// A pool: what it trades and where its tokens are.
#[account]
#[derive(Debug, PartialEq, Eq)]
pub struct Pool {
    /// The token it sells for SOL.
    pub mint: Pubkey,
    /// Its SPL Token account of `mint` (authority: the pool).
    pub vault: Pubkey,
    /// The fee kept from each input, in basis points.
    pub fee_bps: u16,
    pub bump: u8,
}

impl Pool {
    /// Bytes after the discriminator.
    pub const SPACE: usize = 32 + 32 + 2 + 1;
}

#[event]
pub struct Bought {
    pub buyer: Pubkey,
    pub amount_in: u64,
    pub amount_out: u64,
    /// The reserves before the trade.
    pub sol_reserve: u64,
    pub token_reserve: u64,
}

#[error_code]
pub enum VenueError {
    #[msg("the swap would return less than the minimum output")]
    ExceededSlippage,
    #[msg("the amount is zero")]
    ZeroAmount,
    #[msg("the pool holds no reserve")]
    EmptyPool,
    #[msg("the vault is not the pool's token account")]
    NotThePoolsVault,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constant_product_holds_and_rounds_toward_the_pool() {
        // 100 SOL against 1e15 tokens, 0.3 % fee: 1 SOL buys a little under 1 % of the tokens.
        let out = out_amount(100_000_000_000, 1_000_000_000_000_000, 1_000_000_000, 30);
        assert_eq!(out, Some(9_871_580_343_970));
        // The product never shrinks: (x + in′)(y − out) ≥ x·y.
        let (x, y, input) = (
            100_000_000_000u128,
            1_000_000_000_000_000u128,
            1_000_000_000u128,
        );
        let effective = input * 9_970 / 10_000;
        let out = u128::from(out.unwrap_or(0));
        assert!((x + effective) * (y - out) >= x * y);
        // An input the fee eats whole, into an empty pool: nothing to divide by.
        assert_eq!(out_amount(0, 0, 1, 30), None);
        // The first buyer of a pool with no SOL takes every token.
        assert_eq!(out_amount(0, 5, 10_000, 0), Some(5));
        assert_eq!(out_amount(1, 1, 1, 10_001), None);
        assert_eq!(
            out_amount(u64::MAX, u64::MAX, u64::MAX, 0),
            Some(u64::MAX / 2)
        );
    }
}

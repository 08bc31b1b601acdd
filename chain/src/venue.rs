//! The localnet buyback venue (`programs/venue`): its pool's address and state, the `buy`
//! instruction, and the bytes a local validator's genesis seeds a pool with. Ids, seeds, the
//! account type and the quote arithmetic come from the venue crate itself.

use anchor_lang::{AccountDeserialize, AccountSerialize, InstructionData, ToAccountMetas};
pub use skilltrial_venue::Pool;
use skilltrial_venue::{accounts, instruction};

use crate::rpc::{Chain, RpcFailure};
use crate::token::{self, TOKEN_PROGRAM_ID};
use crate::{Instruction, Pubkey, SYSTEM_PROGRAM_ID};

/// The venue program's id.
pub const VENUE_ID: Pubkey = skilltrial_venue::ID;

/// A pool as it stands: its accounts and reserves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolState {
    pub address: Pubkey,
    pub pool: Pool,
    /// Lamports above the pool's rent-exempt minimum.
    pub sol_reserve: u64,
    /// Tokens in its vault.
    pub token_reserve: u64,
}

impl PoolState {
    /// The tokens `amount_in` lamports buy now (the program's own arithmetic).
    pub fn quote(&self, amount_in: u64) -> Option<u64> {
        skilltrial_venue::out_amount(
            self.sol_reserve,
            self.token_reserve,
            amount_in,
            self.pool.fee_bps,
        )
    }
}

/// The pool of `mint`.
pub fn pool_address(mint: &Pubkey) -> Pubkey {
    skilltrial_venue::pool_address(mint).0
}

/// Reads the pool of `mint`: `None` when there is none (or it is not the venue's).
pub fn read_pool(chain: &Chain, mint: &Pubkey) -> Result<Option<PoolState>, RpcFailure> {
    let address = pool_address(mint);
    let Some((owner, lamports, data)) = chain.account(&address)? else {
        return Ok(None);
    };
    let Ok(pool) = Pool::try_deserialize(&mut data.as_slice()) else {
        return Ok(None);
    };
    if owner != VENUE_ID || pool.mint != *mint {
        return Ok(None);
    }
    let rent = chain.rent_exempt_minimum(data.len())?;
    let Some((vault_mint, vault_owner, token_reserve)) = chain
        .account(&pool.vault)?
        .filter(|(owner, _, _)| *owner == TOKEN_PROGRAM_ID)
        .and_then(|(_, _, data)| token::read_account(&data))
    else {
        return Ok(None);
    };
    if vault_mint != *mint || vault_owner != address {
        return Ok(None);
    }
    Ok(Some(PoolState {
        address,
        pool,
        sol_reserve: lamports.saturating_sub(rent),
        token_reserve,
    }))
}

/// `buy`: `buyer` pays exactly `amount_in` lamports for at least `min_out` tokens, received in
/// `buyer_token`.
pub fn buy(
    buyer: &Pubkey,
    pool: &PoolState,
    buyer_token: &Pubkey,
    amount_in: u64,
    min_out: u64,
) -> Instruction {
    Instruction {
        program_id: VENUE_ID,
        accounts: accounts::Buy {
            buyer: *buyer,
            pool: pool.address,
            vault: pool.pool.vault,
            buyer_token: *buyer_token,
            token_program: TOKEN_PROGRAM_ID,
            system_program: SYSTEM_PROGRAM_ID,
        }
        .to_account_metas(None),
        data: buy_data(amount_in, min_out),
    }
}

/// `buy`'s instruction data: what a route's swap must carry to pay exactly `amount_in`.
pub fn buy_data(amount_in: u64, min_out: u64) -> Vec<u8> {
    instruction::Buy { amount_in, min_out }.data()
}

/// The pool account's bytes for `mint` with its vault at `vault` (a genesis seeds both).
pub fn pool_bytes(mint: &Pubkey, vault: &Pubkey, fee_bps: u16) -> Vec<u8> {
    let (_, bump) = skilltrial_venue::pool_address(mint);
    let pool = Pool {
        mint: *mint,
        vault: *vault,
        fee_bps,
        bump,
    };
    let mut data = Vec::with_capacity(8 + Pool::SPACE);
    // Writing to a Vec cannot fail.
    let _ = pool.try_serialize(&mut data);
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_account_reads_back_as_written() {
        let (mint, vault) = (Pubkey::new_unique(), Pubkey::new_unique());
        let bytes = pool_bytes(&mint, &vault, 30);
        assert_eq!(bytes.len(), 8 + Pool::SPACE);
        let pool = Pool::try_deserialize(&mut bytes.as_slice()).unwrap();
        assert_eq!((pool.mint, pool.vault, pool.fee_bps), (mint, vault, 30));
        assert_eq!(
            Pubkey::create_program_address(
                &[skilltrial_venue::POOL_SEED, mint.as_ref(), &[pool.bump]],
                &VENUE_ID
            )
            .unwrap(),
            pool_address(&mint)
        );
        let state = PoolState {
            address: pool_address(&mint),
            pool,
            sol_reserve: 100,
            token_reserve: 1_000,
        };
        // 10 lamports less the 0.3 % fee, rounded down, is 9: 1,000 × 9 / 109 = 82.
        assert_eq!(state.quote(10), Some(82));
        let ix = buy(&Pubkey::new_unique(), &state, &Pubkey::new_unique(), 10, 82);
        assert_eq!(
            ix.program_id.to_string(),
            "SkiLLVenue111111111111111111111111111111111"
        );
        assert!(ix.accounts[0].is_signer && ix.accounts[0].is_writable);
    }
}

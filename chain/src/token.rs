//! The SPL Token facts a buyback needs, from the token program's wire format (the interface
//! crates speak another solana-pubkey major version): the program ids, the associated token
//! account of an owner (under either token program), `BurnChecked`, and the byte layouts of a mint and a token account
//! (read for balances and decimals, written for a local validator's genesis).

use crate::{AccountMeta, Instruction, Pubkey, SYSTEM_PROGRAM_ID};

/// The SPL Token program.
pub const TOKEN_PROGRAM_ID: Pubkey =
    Pubkey::from_str_const("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
/// The Token-2022 program (the program also accepts a $SKTRIAL mint of it).
pub const TOKEN_2022_PROGRAM_ID: Pubkey =
    Pubkey::from_str_const("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb");
/// The Associated Token Account program.
pub const ATA_PROGRAM_ID: Pubkey =
    Pubkey::from_str_const("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");
/// Wrapped SOL's mint (what Jupiter quotes SOL as).
pub const WSOL_MINT: Pubkey = Pubkey::from_str_const("So11111111111111111111111111111111111111112");
/// A mint's size.
pub const MINT_LEN: usize = 82;
/// A token account's size.
pub const ACCOUNT_LEN: usize = 165;
/// `BurnChecked`'s tag.
const BURN_CHECKED: u8 = 15;
/// The associated token program's `CreateIdempotent`.
const CREATE_IDEMPOTENT: u8 = 1;

/// `owner`'s associated token account of `mint` under `token_program`.
pub fn associated_account(owner: &Pubkey, mint: &Pubkey, token_program: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(
        &[owner.as_ref(), token_program.as_ref(), mint.as_ref()],
        &ATA_PROGRAM_ID,
    )
    .0
}

/// Whether `program` is one of the two token programs.
pub fn is_token_program(program: &Pubkey) -> bool {
    *program == TOKEN_PROGRAM_ID || *program == TOKEN_2022_PROGRAM_ID
}

/// Creates `owner`'s associated token account of `mint` (paid by `payer`) unless it exists.
/// `token_program` is the mint's owner: the account is derived under it and created by it, so
/// a Token-2022 mint gets a Token-2022 account.
pub fn create_associated_account(
    payer: &Pubkey,
    owner: &Pubkey,
    mint: &Pubkey,
    token_program: &Pubkey,
) -> Instruction {
    Instruction {
        program_id: ATA_PROGRAM_ID,
        accounts: vec![
            AccountMeta::new(*payer, true),
            AccountMeta::new(associated_account(owner, mint, token_program), false),
            AccountMeta::new_readonly(*owner, false),
            AccountMeta::new_readonly(*mint, false),
            AccountMeta::new_readonly(SYSTEM_PROGRAM_ID, false),
            AccountMeta::new_readonly(*token_program, false),
        ],
        data: vec![CREATE_IDEMPOTENT],
    }
}

/// `BurnChecked` through `token_program` (the mint's owner: the program refuses a burn through
/// any other): `owner` burns `amount` of `mint` (of `decimals`) from `account`.
pub fn burn_checked(
    token_program: &Pubkey,
    account: &Pubkey,
    mint: &Pubkey,
    owner: &Pubkey,
    amount: u64,
    decimals: u8,
) -> Instruction {
    let mut data = Vec::with_capacity(10);
    data.push(BURN_CHECKED);
    data.extend_from_slice(&amount.to_le_bytes());
    data.push(decimals);
    Instruction {
        program_id: *token_program,
        accounts: vec![
            AccountMeta::new(*account, false),
            AccountMeta::new(*mint, false),
            AccountMeta::new_readonly(*owner, true),
        ],
        data,
    }
}

/// A mint's supply and decimals, when `data` is an initialized mint.
pub fn read_mint(data: &[u8]) -> Option<(u64, u8)> {
    if data.len() < MINT_LEN || data.get(45) != Some(&1) {
        return None;
    }
    let supply = u64::from_le_bytes(data.get(36..44)?.try_into().ok()?);
    Some((supply, *data.get(44)?))
}

/// A token account's mint, owner and balance, when `data` is an initialized token account.
pub fn read_account(data: &[u8]) -> Option<(Pubkey, Pubkey, u64)> {
    if data.len() < ACCOUNT_LEN || data.get(108) != Some(&1) {
        return None;
    }
    let mint = Pubkey::try_from(data.get(..32)?).ok()?;
    let owner = Pubkey::try_from(data.get(32..64)?).ok()?;
    let amount = u64::from_le_bytes(data.get(64..72)?.try_into().ok()?);
    Some((mint, owner, amount))
}

/// The bytes of an initialized mint with no freeze authority.
pub fn mint_bytes(authority: Option<&Pubkey>, supply: u64, decimals: u8) -> Vec<u8> {
    let mut data = vec![0u8; MINT_LEN];
    if let Some(authority) = authority {
        data[..4].copy_from_slice(&1u32.to_le_bytes());
        data[4..36].copy_from_slice(authority.as_ref());
    }
    data[36..44].copy_from_slice(&supply.to_le_bytes());
    data[44] = decimals;
    data[45] = 1;
    data
}

/// The bytes of an initialized token account of `mint`, owned by `owner`, holding `amount`.
pub fn account_bytes(mint: &Pubkey, owner: &Pubkey, amount: u64) -> Vec<u8> {
    let mut data = vec![0u8; ACCOUNT_LEN];
    data[..32].copy_from_slice(mint.as_ref());
    data[32..64].copy_from_slice(owner.as_ref());
    data[64..72].copy_from_slice(&amount.to_le_bytes());
    data[108] = 1;
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layouts_read_back_what_they_write() {
        let (mint, owner) = (Pubkey::new_unique(), Pubkey::new_unique());
        assert_eq!(read_mint(&mint_bytes(Some(&owner), 77, 6)), Some((77, 6)));
        assert_eq!(read_mint(&mint_bytes(None, 0, 9)), Some((0, 9)));
        assert_eq!(read_mint(&[0u8; MINT_LEN]), None);
        assert_eq!(
            read_account(&account_bytes(&mint, &owner, 5)),
            Some((mint, owner, 5))
        );
        assert_eq!(read_account(&[0u8; 100]), None);
    }

    /// The associated account is the one the ATA program derived on devnet: transaction
    /// 4Dj8Xbs7…ozstGF (recorded by blocto/solana-go-sdk, MIT)
    /// created AyHWro8z… for owner 27kVX7Jp… and mint 4UyUTBdh….
    #[test]
    fn the_associated_account_is_derived_as_the_program_does() {
        let owner = Pubkey::from_str_const("27kVX7JpPZ1bsrSckbR76mV6GeRqtrjoddubfg2zBpHZ");
        let mint = Pubkey::from_str_const("4UyUTBdhPkFiu7ZE8zfxnE6hbbzf8LKo1uR5wSi5MYE3");
        let derived = associated_account(&owner, &mint, &TOKEN_PROGRAM_ID);
        assert_eq!(
            derived.to_string(),
            "AyHWro8zumyZN68Mhuk6mhNUUQ2VX5qux2pMD4HnN3aJ"
        );
        let create = create_associated_account(&owner, &owner, &mint, &TOKEN_PROGRAM_ID);
        assert_eq!(create.accounts[1].pubkey, derived);
        let burn = burn_checked(&TOKEN_PROGRAM_ID, &derived, &mint, &owner, 3, 9);
        assert_eq!(burn.data, vec![15, 3, 0, 0, 0, 0, 0, 0, 0, 9]);
        assert!(burn.accounts[2].is_signer);
        // A Token-2022 mint's account is another address, created and burned by Token-2022
        // (today's main derived it under Token-2022 but created and burned through Token).
        let derived_2022 = associated_account(&owner, &mint, &TOKEN_2022_PROGRAM_ID);
        assert_ne!(derived_2022, derived);
        let create = create_associated_account(&owner, &owner, &mint, &TOKEN_2022_PROGRAM_ID);
        assert_eq!(create.accounts[1].pubkey, derived_2022);
        assert_eq!(create.accounts[5].pubkey, TOKEN_2022_PROGRAM_ID);
        let burn = burn_checked(&TOKEN_2022_PROGRAM_ID, &derived_2022, &mint, &owner, 3, 9);
        assert_eq!(burn.program_id, TOKEN_2022_PROGRAM_ID);
    }
}

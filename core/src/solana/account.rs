//! SPL Token and Token-2022 account layouts: mints, token accounts, multisigs, TLV
//! extensions.
//!
//! The answer form of a decoded account is [`DecodedAccount::to_answer`]: exactly what a correct
//! model answer to an account task holds. u64 quantities are decimal strings (JSON numbers lose
//! precision past 2^53); small integers stay numbers; absent authorities are `null`.

use serde_json::{Value, json};

use super::{Address, DecodeError, Reader, program};

/// Size of an SPL mint.
pub const MINT_LEN: usize = 82;
/// Size of an SPL token account.
pub const ACCOUNT_LEN: usize = 165;
/// Size of an SPL multisig account: never a mint or token account, whatever its bytes say.
pub const MULTISIG_LEN: usize = 355;

/// Which token program owns the account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenProgram {
    /// SPL Token.
    Token,
    /// SPL Token-2022.
    Token2022,
}

impl TokenProgram {
    /// From the owning program's address.
    pub fn from_owner(owner: &Address) -> Option<Self> {
        match owner.to_string().as_str() {
            program::TOKEN => Some(Self::Token),
            program::TOKEN_2022 => Some(Self::Token2022),
            _ => None,
        }
    }

    /// The name used in answers.
    pub fn name(self) -> &'static str {
        match self {
            Self::Token => "spl-token",
            Self::Token2022 => "spl-token-2022",
        }
    }

    /// The program id.
    pub fn id(self) -> Address {
        Address::from_static(match self {
            Self::Token => program::TOKEN,
            Self::Token2022 => program::TOKEN_2022,
        })
    }
}

/// A decoded mint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mint {
    pub mint_authority: Option<Address>,
    pub supply: u64,
    pub decimals: u8,
    pub is_initialized: bool,
    pub freeze_authority: Option<Address>,
}

/// A decoded token account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAccount {
    pub mint: Address,
    pub owner: Address,
    pub amount: u64,
    pub delegate: Option<Address>,
    /// 0 uninitialized, 1 initialized, 2 frozen.
    pub state: u8,
    /// The rent-exempt reserve of a native (wSOL) account.
    pub is_native: Option<u64>,
    pub delegated_amount: u64,
    pub close_authority: Option<Address>,
}

/// One fee schedule of a Token-2022 transfer fee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferFee {
    pub epoch: u64,
    pub maximum_fee: u64,
    pub basis_points: u16,
}

impl TransferFee {
    /// `ceil(amount * bps / 10_000)`, capped at `maximum_fee`, in checked integer arithmetic.
    pub fn fee_for(&self, amount: u64) -> Option<u64> {
        if self.basis_points == 0 || amount == 0 {
            return Some(0);
        }
        let numerator = u128::from(amount).checked_mul(u128::from(self.basis_points))?;
        let fee = numerator.checked_add(9_999)?.checked_div(10_000)?;
        Some(u64::try_from(fee).ok()?.min(self.maximum_fee))
    }
}

/// A Token-2022 extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extension {
    TransferFeeConfig {
        transfer_fee_config_authority: Option<Address>,
        withdraw_withheld_authority: Option<Address>,
        withheld_amount: u64,
        older: TransferFee,
        newer: TransferFee,
    },
    InterestBearingConfig {
        rate_authority: Option<Address>,
        initialization_timestamp: i64,
        pre_update_average_rate: i16,
        last_update_timestamp: i64,
        current_rate: i16,
    },
    DefaultAccountState {
        state: u8,
    },
    MintCloseAuthority {
        close_authority: Option<Address>,
    },
    PermanentDelegate {
        delegate: Option<Address>,
    },
    /// Any other extension: its type number and name, content not interpreted.
    Other {
        type_id: u16,
    },
}

impl Extension {
    /// The transfer fee in force at `epoch`, for a TransferFeeConfig.
    pub fn transfer_fee_at(&self, epoch: u64) -> Option<TransferFee> {
        match self {
            Self::TransferFeeConfig { older, newer, .. } => {
                Some(if epoch >= newer.epoch { *newer } else { *older })
            }
            _ => None,
        }
    }
}

/// An SPL multisig: `m` of the first `n` signers must sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Multisig {
    pub m: u8,
    pub n: u8,
    pub is_initialized: bool,
    /// The first `n` signer slots (the rest of the 11 are unused).
    pub signers: Vec<Address>,
}

/// Most signers a multisig holds.
pub const MAX_SIGNERS: usize = 11;

/// What the account is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodedAccount {
    Multisig {
        program: TokenProgram,
        multisig: Multisig,
    },
    Mint {
        program: TokenProgram,
        mint: Mint,
        extensions: Vec<Extension>,
    },
    TokenAccount {
        program: TokenProgram,
        account: TokenAccount,
        extensions: Vec<Extension>,
    },
}

/// Extension names in answers, by type number (Token-2022's `ExtensionType`).
pub fn extension_name(type_id: u16) -> &'static str {
    match type_id {
        0 => "uninitialized",
        1 => "transfer_fee_config",
        2 => "transfer_fee_amount",
        3 => "mint_close_authority",
        4 => "confidential_transfer_mint",
        5 => "confidential_transfer_account",
        6 => "default_account_state",
        7 => "immutable_owner",
        8 => "memo_transfer",
        9 => "non_transferable",
        10 => "interest_bearing_config",
        11 => "cpi_guard",
        12 => "permanent_delegate",
        13 => "non_transferable_account",
        14 => "transfer_hook",
        15 => "transfer_hook_account",
        16 => "confidential_transfer_fee_config",
        17 => "confidential_transfer_fee_amount",
        18 => "metadata_pointer",
        19 => "token_metadata",
        20 => "group_pointer",
        21 => "token_group",
        22 => "group_member_pointer",
        23 => "token_group_member",
        24 => "confidential_mint_burn",
        25 => "scaled_ui_amount",
        26 => "pausable",
        27 => "pausable_account",
        28 => "permissioned_burn",
        _ => "unknown",
    }
}

/// Reads a `COption<Pubkey>`: the 4-byte tag decides, never the key bytes. A revoked authority
/// keeps its stale key bytes after a zero tag (`pack_coption_key` does not clear them).
fn coption_address(r: &mut Reader<'_>) -> Result<Option<Address>, DecodeError> {
    let tag = r.u32()?;
    let key = r.address()?;
    match tag {
        0 => Ok(None),
        1 => Ok(Some(key)),
        other => Err(DecodeError::new(format!(
            "COption tag {other} is neither 0 nor 1"
        ))),
    }
}

fn coption_u64(r: &mut Reader<'_>) -> Result<Option<u64>, DecodeError> {
    let tag = r.u32()?;
    let value = r.u64()?;
    match tag {
        0 => Ok(None),
        1 => Ok(Some(value)),
        other => Err(DecodeError::new(format!(
            "COption tag {other} is neither 0 nor 1"
        ))),
    }
}

/// Token-2022's `OptionalNonZeroPubkey`: all zeros means none (a different rule from COption).
fn nonzero_address(r: &mut Reader<'_>) -> Result<Option<Address>, DecodeError> {
    let key = r.address()?;
    Ok((key.0 != [0; 32]).then_some(key))
}

fn decode_mint(bytes: &[u8]) -> Result<Mint, DecodeError> {
    let mut r = Reader::new(bytes, "mint");
    let mint_authority = coption_address(&mut r)?;
    let supply = r.u64()?;
    let decimals = r.u8()?;
    let is_initialized = match r.u8()? {
        0 => false,
        1 => true,
        other => {
            return Err(DecodeError::new(format!(
                "mint is_initialized byte is {other}"
            )));
        }
    };
    let freeze_authority = coption_address(&mut r)?;
    r.finish()?;
    Ok(Mint {
        mint_authority,
        supply,
        decimals,
        is_initialized,
        freeze_authority,
    })
}

fn decode_token_account(bytes: &[u8]) -> Result<TokenAccount, DecodeError> {
    let mut r = Reader::new(bytes, "token account");
    let mint = r.address()?;
    let owner = r.address()?;
    let amount = r.u64()?;
    let delegate = coption_address(&mut r)?;
    let state = r.u8()?;
    if state > 2 {
        return Err(DecodeError::new(format!(
            "token account state {state} is not 0, 1 or 2"
        )));
    }
    let is_native = coption_u64(&mut r)?;
    let delegated_amount = r.u64()?;
    let close_authority = coption_address(&mut r)?;
    r.finish()?;
    Ok(TokenAccount {
        mint,
        owner,
        amount,
        delegate,
        state,
        is_native,
        delegated_amount,
        close_authority,
    })
}

fn decode_multisig(bytes: &[u8]) -> Result<Multisig, DecodeError> {
    let mut r = Reader::new(bytes, "multisig");
    let m = r.u8()?;
    let n = r.u8()?;
    let is_initialized = match r.u8()? {
        0 => false,
        1 => true,
        other => {
            return Err(DecodeError::new(format!(
                "multisig is_initialized byte is {other}"
            )));
        }
    };
    if usize::from(n) > MAX_SIGNERS || m > n {
        return Err(DecodeError::new(format!(
            "multisig {m} of {n} is not a valid threshold (n at most {MAX_SIGNERS}, m at most n)"
        )));
    }
    let mut signers = Vec::with_capacity(MAX_SIGNERS);
    for _ in 0..MAX_SIGNERS {
        signers.push(r.address()?);
    }
    r.finish()?;
    signers.truncate(usize::from(n));
    Ok(Multisig {
        m,
        n,
        is_initialized,
        signers,
    })
}

fn transfer_fee(r: &mut Reader<'_>) -> Result<TransferFee, DecodeError> {
    Ok(TransferFee {
        epoch: r.u64()?,
        maximum_fee: r.u64()?,
        basis_points: r.u16()?,
    })
}

fn decode_extension(type_id: u16, value: &[u8]) -> Result<Extension, DecodeError> {
    let mut r = Reader::new(value, extension_name(type_id));
    let ext = match type_id {
        1 => Extension::TransferFeeConfig {
            transfer_fee_config_authority: nonzero_address(&mut r)?,
            withdraw_withheld_authority: nonzero_address(&mut r)?,
            withheld_amount: r.u64()?,
            older: transfer_fee(&mut r)?,
            newer: transfer_fee(&mut r)?,
        },
        10 => Extension::InterestBearingConfig {
            rate_authority: nonzero_address(&mut r)?,
            initialization_timestamp: r.i64()?,
            pre_update_average_rate: r.i16()?,
            last_update_timestamp: r.i64()?,
            current_rate: r.i16()?,
        },
        6 => {
            let state = r.u8()?;
            if state > 2 {
                return Err(DecodeError::new(format!(
                    "default account state {state} is not 0, 1 or 2"
                )));
            }
            Extension::DefaultAccountState { state }
        }
        3 => Extension::MintCloseAuthority {
            close_authority: nonzero_address(&mut r)?,
        },
        12 => Extension::PermanentDelegate {
            delegate: nonzero_address(&mut r)?,
        },
        other => return Ok(Extension::Other { type_id: other }),
    };
    r.finish()?;
    Ok(ext)
}

/// Walks the TLV area after the account-type byte.
fn decode_extensions(tlv: &[u8]) -> Result<Vec<Extension>, DecodeError> {
    let mut r = Reader::new(tlv, "TLV extensions");
    let mut out = Vec::new();
    // As spl-token-2022's TLV walk: an Uninitialized (0) type ends the list; a partial header
    // (1–3 bytes) is invalid data.
    while r.remaining() > 0 {
        if r.remaining() < 4 {
            return Err(DecodeError::new(format!(
                "{} trailing bytes after the last TLV entry",
                r.remaining()
            )));
        }
        let type_id = r.u16()?;
        let len = r.u16()?;
        if type_id == 0 {
            break;
        }
        let value = r.take(usize::from(len))?;
        out.push(decode_extension(type_id, value)?);
    }
    Ok(out)
}

/// Decodes account data owned by a token program.
pub fn decode(owner: TokenProgram, data: &[u8]) -> Result<DecodedAccount, DecodeError> {
    match (owner, data.len()) {
        (program, MINT_LEN) => Ok(DecodedAccount::Mint {
            program,
            mint: decode_mint(data)?,
            extensions: Vec::new(),
        }),
        (program, ACCOUNT_LEN) => Ok(DecodedAccount::TokenAccount {
            program,
            account: decode_token_account(data)?,
            extensions: Vec::new(),
        }),
        (program, MULTISIG_LEN) => Ok(DecodedAccount::Multisig {
            program,
            multisig: decode_multisig(data)?,
        }),
        (TokenProgram::Token2022, len) if len > ACCOUNT_LEN => {
            let account_type = data[ACCOUNT_LEN];
            let tlv = &data[ACCOUNT_LEN + 1..];
            match account_type {
                1 => {
                    // A mint's base is 82 bytes, then zero padding to 165.
                    if data[MINT_LEN..ACCOUNT_LEN].iter().any(|b| *b != 0) {
                        return Err(DecodeError::new("Token-2022 mint padding is not zero"));
                    }
                    Ok(DecodedAccount::Mint {
                        program: TokenProgram::Token2022,
                        mint: decode_mint(&data[..MINT_LEN])?,
                        extensions: decode_extensions(tlv)?,
                    })
                }
                2 => Ok(DecodedAccount::TokenAccount {
                    program: TokenProgram::Token2022,
                    account: decode_token_account(&data[..ACCOUNT_LEN])?,
                    extensions: decode_extensions(tlv)?,
                }),
                other => Err(DecodeError::new(format!(
                    "Token-2022 account type byte is {other}"
                ))),
            }
        }
        (program, len) => Err(DecodeError::new(format!(
            "{len} bytes is not a {} mint ({MINT_LEN}) or token account ({ACCOUNT_LEN})",
            program.name()
        ))),
    }
}

fn opt(address: Option<Address>) -> Value {
    address.map_or(Value::Null, |a| Value::String(a.to_string()))
}

fn fee_json(fee: &TransferFee) -> Value {
    json!({
        "epoch": fee.epoch.to_string(),
        "maximum_fee": fee.maximum_fee.to_string(),
        "transfer_fee_basis_points": fee.basis_points,
    })
}

fn state_name(state: u8) -> &'static str {
    match state {
        0 => "uninitialized",
        1 => "initialized",
        _ => "frozen",
    }
}

impl Extension {
    /// The extension as it appears in an answer.
    pub fn to_answer(&self) -> Value {
        match self {
            Self::TransferFeeConfig {
                transfer_fee_config_authority,
                withdraw_withheld_authority,
                withheld_amount,
                older,
                newer,
            } => json!({
                "type": "transfer_fee_config",
                "transfer_fee_config_authority": opt(*transfer_fee_config_authority),
                "withdraw_withheld_authority": opt(*withdraw_withheld_authority),
                "withheld_amount": withheld_amount.to_string(),
                "older_transfer_fee": fee_json(older),
                "newer_transfer_fee": fee_json(newer),
            }),
            Self::InterestBearingConfig {
                rate_authority,
                initialization_timestamp,
                pre_update_average_rate,
                last_update_timestamp,
                current_rate,
            } => json!({
                "type": "interest_bearing_config",
                "rate_authority": opt(*rate_authority),
                "initialization_timestamp": initialization_timestamp,
                "pre_update_average_rate": pre_update_average_rate,
                "last_update_timestamp": last_update_timestamp,
                "current_rate": current_rate,
            }),
            Self::DefaultAccountState { state } => {
                json!({ "type": "default_account_state", "state": state_name(*state) })
            }
            Self::MintCloseAuthority { close_authority } => {
                json!({ "type": "mint_close_authority", "close_authority": opt(*close_authority) })
            }
            Self::PermanentDelegate { delegate } => {
                json!({ "type": "permanent_delegate", "delegate": opt(*delegate) })
            }
            Self::Other { type_id } => json!({ "type": extension_name(*type_id) }),
        }
    }
}

impl DecodedAccount {
    /// The golden answer for an account task.
    pub fn to_answer(&self) -> Value {
        match self {
            Self::Multisig { program, multisig } => json!({
                "account_type": "multisig",
                "program": program.name(),
                "m": multisig.m,
                "n": multisig.n,
                "is_initialized": multisig.is_initialized,
                "signers": multisig.signers.iter().map(ToString::to_string).collect::<Vec<_>>(),
            }),
            Self::Mint {
                program,
                mint,
                extensions,
            } => {
                let mut answer = json!({
                    "account_type": "mint",
                    "program": program.name(),
                    "mint_authority": opt(mint.mint_authority),
                    "supply": mint.supply.to_string(),
                    "decimals": mint.decimals,
                    "is_initialized": mint.is_initialized,
                    "freeze_authority": opt(mint.freeze_authority),
                });
                if *program == TokenProgram::Token2022 {
                    answer["extensions"] = extensions.iter().map(Extension::to_answer).collect();
                }
                answer
            }
            Self::TokenAccount {
                program,
                account,
                extensions,
            } => {
                let mut answer = json!({
                    "account_type": "token_account",
                    "program": program.name(),
                    "mint": account.mint.to_string(),
                    "owner": account.owner.to_string(),
                    "amount": account.amount.to_string(),
                    "delegate": opt(account.delegate),
                    "state": state_name(account.state),
                    "is_native": account.is_native.map(|v| v.to_string()),
                    "delegated_amount": account.delegated_amount.to_string(),
                    "close_authority": opt(account.close_authority),
                });
                if *program == TokenProgram::Token2022 {
                    answer["extensions"] = extensions.iter().map(Extension::to_answer).collect();
                }
                answer
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_fee_rounds_up_and_caps() {
        let fee = TransferFee {
            epoch: 0,
            maximum_fee: 5_000,
            basis_points: 50,
        };
        assert_eq!(
            fee.fee_for(1),
            Some(1),
            "any non-zero fee rounds up to one unit"
        );
        assert_eq!(fee.fee_for(10_000), Some(50));
        assert_eq!(fee.fee_for(10_001), Some(51));
        assert_eq!(fee.fee_for(u64::MAX), Some(5_000), "capped, no overflow");
        assert_eq!(fee.fee_for(0), Some(0));
    }

    #[test]
    fn coption_reads_the_tag_not_the_key() {
        let mut data = vec![0u8; MINT_LEN];
        data[4..36].copy_from_slice(&[7; 32]); // stale key bytes behind a zero tag
        data[45] = 1;
        let DecodedAccount::Mint { mint, .. } = decode(TokenProgram::Token, &data).unwrap() else {
            panic!("not a mint")
        };
        assert_eq!(mint.mint_authority, None);
        data[0] = 2;
        assert_eq!(
            decode(TokenProgram::Token, &data),
            Err(DecodeError::Invalid(
                "COption tag 2 is neither 0 nor 1".to_owned()
            )),
            "tag 2 is invalid"
        );
    }

    fn error_of(program: TokenProgram, data: &[u8]) -> String {
        match decode(program, data) {
            Err(DecodeError::Invalid(message)) => message,
            other => panic!("{} bytes: {other:?}", data.len()),
        }
    }

    #[test]
    fn odd_lengths_are_refused() {
        assert_eq!(
            error_of(TokenProgram::Token, &[0; 100]),
            "100 bytes is not a spl-token mint (82) or token account (165)"
        );
        assert_eq!(
            error_of(TokenProgram::Token, &[0; 339]),
            "339 bytes is not a spl-token mint (82) or token account (165)",
            "TLV only under Token-2022"
        );
        let mut multisig = [0u8; MULTISIG_LEN];
        multisig[..3].copy_from_slice(&[3, 2, 1]);
        assert_eq!(
            error_of(TokenProgram::Token2022, &multisig),
            "multisig 3 of 2 is not a valid threshold (n at most 11, m at most n)"
        );
        let mut mint = vec![0u8; ACCOUNT_LEN + 1];
        mint[ACCOUNT_LEN] = 3;
        assert_eq!(
            error_of(TokenProgram::Token2022, &mint),
            "Token-2022 account type byte is 3"
        );
        mint[ACCOUNT_LEN] = 1;
        mint[MINT_LEN] = 1;
        assert_eq!(
            error_of(TokenProgram::Token2022, &mint),
            "Token-2022 mint padding is not zero"
        );
        mint[MINT_LEN] = 0;
        mint.extend_from_slice(&[1, 0]);
        assert_eq!(
            error_of(TokenProgram::Token2022, &mint),
            "2 trailing bytes after the last TLV entry"
        );
    }
}

//! Accounts of the native programs a wallet meets besides tokens: durable nonce accounts (System
//! program), stake accounts (Stake program) and address lookup tables (Address Lookup Table
//! program). Layouts as the programs write them (bincode of their state enums);
//! `core/tests/decoder_vs_canonical.rs` holds each one against the canonical interface crate.
//!
//! Answers follow the account family's conventions ([`super::account`]): u64 quantities are
//! decimal strings, small integers numbers, keys base58, and a key that may be absent `null`.

use serde_json::{Value, json};

use super::{Address, DecodeError, Reader};

/// Size of a durable nonce account (`nonce::state::Versions`).
pub const NONCE_LEN: usize = 80;
/// Where a lookup table's addresses start (`LOOKUP_TABLE_META_SIZE`).
pub const LOOKUP_TABLE_META_LEN: usize = 56;
/// A stake account's state fits in this many bytes (`StakeStateV2::size_of()`).
pub const STAKE_LEN: usize = 200;

/// `deactivation_slot` of a lookup table that was never deactivated.
const NOT_DEACTIVATED: u64 = u64::MAX;

/// A durable nonce account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nonce {
    /// `legacy` (0) or `current` (1): which blockhash domain the stored nonce lives in.
    pub version: u32,
    /// Present when initialized.
    pub data: Option<NonceData>,
}

/// An initialized nonce's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceData {
    pub authority: Address,
    pub durable_nonce: Address,
    pub lamports_per_signature: u64,
}

/// Decodes a System-owned durable nonce account.
pub fn decode_nonce(data: &[u8]) -> Result<Nonce, DecodeError> {
    if data.len() != NONCE_LEN {
        return Err(DecodeError::new(format!(
            "{} bytes is not a durable nonce account ({NONCE_LEN}); a System account with other data is not decoded",
            data.len()
        )));
    }
    let mut r = Reader::new(data, "nonce account");
    let version = r.u32()?;
    if version > 1 {
        return Err(DecodeError::new(format!(
            "nonce version {version} is neither 0 (legacy) nor 1 (current)"
        )));
    }
    let nonce = match r.u32()? {
        0 => Nonce {
            version,
            data: None,
        },
        1 => Nonce {
            version,
            data: Some(NonceData {
                authority: r.address()?,
                durable_nonce: r.address()?,
                lamports_per_signature: r.u64()?,
            }),
        },
        other => {
            return Err(DecodeError::new(format!(
                "nonce state {other} is neither 0 (uninitialized) nor 1 (initialized)"
            )));
        }
    };
    Ok(nonce)
}

impl Nonce {
    /// The golden answer.
    pub fn to_answer(&self) -> Value {
        let version = if self.version == 0 {
            "legacy"
        } else {
            "current"
        };
        match &self.data {
            None => json!({
                "account_type": "nonce",
                "program": "system",
                "version": version,
                "state": "uninitialized",
            }),
            Some(d) => json!({
                "account_type": "nonce",
                "program": "system",
                "version": version,
                "state": "initialized",
                "authority": d.authority.to_string(),
                "durable_nonce": d.durable_nonce.to_string(),
                "lamports_per_signature": d.lamports_per_signature.to_string(),
            }),
        }
    }
}

/// A stake account's `Meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StakeMeta {
    pub rent_exempt_reserve: u64,
    pub staker: Address,
    pub withdrawer: Address,
    pub lockup_unix_timestamp: i64,
    pub lockup_epoch: u64,
    pub lockup_custodian: Address,
}

/// A stake account's delegation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    pub voter: Address,
    pub stake: u64,
    pub activation_epoch: u64,
    pub deactivation_epoch: u64,
    pub credits_observed: u64,
    pub stake_flags: u8,
}

/// A stake account (`StakeStateV2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stake {
    Uninitialized,
    Initialized(StakeMeta),
    Delegated(StakeMeta, Delegation),
    RewardsPool,
}

fn stake_meta(r: &mut Reader<'_>) -> Result<StakeMeta, DecodeError> {
    Ok(StakeMeta {
        rent_exempt_reserve: r.u64()?,
        staker: r.address()?,
        withdrawer: r.address()?,
        lockup_unix_timestamp: r.i64()?,
        lockup_epoch: r.u64()?,
        lockup_custodian: r.address()?,
    })
}

/// Decodes a Stake-owned account.
pub fn decode_stake(data: &[u8]) -> Result<Stake, DecodeError> {
    if data.len() != STAKE_LEN {
        return Err(DecodeError::new(format!(
            "{} bytes is not a stake account ({STAKE_LEN})",
            data.len()
        )));
    }
    let mut r = Reader::new(data, "stake account");
    Ok(match r.u32()? {
        0 => Stake::Uninitialized,
        1 => Stake::Initialized(stake_meta(&mut r)?),
        2 => {
            let meta = stake_meta(&mut r)?;
            let voter = r.address()?;
            let stake = r.u64()?;
            let activation_epoch = r.u64()?;
            let deactivation_epoch = r.u64()?;
            // warmup_cooldown_rate: an f64 the program no longer reads; not part of the answer.
            r.take(8)?;
            let credits_observed = r.u64()?;
            let stake_flags = r.u8()?;
            Stake::Delegated(
                meta,
                Delegation {
                    voter,
                    stake,
                    activation_epoch,
                    deactivation_epoch,
                    credits_observed,
                    stake_flags,
                },
            )
        }
        3 => Stake::RewardsPool,
        other => {
            return Err(DecodeError::new(format!("stake state {other} is not 0-3")));
        }
    })
}

fn meta_answer(state: &str, m: &StakeMeta) -> Value {
    json!({
        "account_type": "stake",
        "program": "stake",
        "state": state,
        "rent_exempt_reserve": m.rent_exempt_reserve.to_string(),
        "stake_authority": m.staker.to_string(),
        "withdraw_authority": m.withdrawer.to_string(),
        "lockup": {
            "unix_timestamp": m.lockup_unix_timestamp,
            "epoch": m.lockup_epoch.to_string(),
            "custodian": m.lockup_custodian.to_string(),
        },
    })
}

impl Stake {
    /// The golden answer. `deactivation_epoch` is u64::MAX for a stake that was never
    /// deactivated; it is given as that number, not interpreted.
    pub fn to_answer(&self) -> Value {
        match self {
            Self::Uninitialized => {
                json!({ "account_type": "stake", "program": "stake", "state": "uninitialized" })
            }
            Self::RewardsPool => {
                json!({ "account_type": "stake", "program": "stake", "state": "rewards_pool" })
            }
            Self::Initialized(m) => meta_answer("initialized", m),
            Self::Delegated(m, d) => {
                let mut answer = meta_answer("delegated", m);
                answer["delegation"] = json!({
                    "voter": d.voter.to_string(),
                    "stake": d.stake.to_string(),
                    "activation_epoch": d.activation_epoch.to_string(),
                    "deactivation_epoch": d.deactivation_epoch.to_string(),
                });
                answer["credits_observed"] = json!(d.credits_observed.to_string());
                answer["stake_flags"] = json!(d.stake_flags);
                answer
            }
        }
    }
}

/// An address lookup table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupTable {
    pub deactivation_slot: u64,
    pub last_extended_slot: u64,
    pub last_extended_slot_start_index: u8,
    pub authority: Option<Address>,
    pub addresses: Vec<Address>,
}

/// Decodes an account owned by the Address Lookup Table program.
pub fn decode_lookup_table(data: &[u8]) -> Result<LookupTable, DecodeError> {
    if data.len() < LOOKUP_TABLE_META_LEN {
        return Err(DecodeError::new(format!(
            "{} bytes is shorter than a lookup table's {LOOKUP_TABLE_META_LEN}-byte header",
            data.len()
        )));
    }
    let (head, list) = data.split_at(LOOKUP_TABLE_META_LEN);
    let mut r = Reader::new(head, "lookup table header");
    match r.u32()? {
        1 => {}
        0 => return Err(DecodeError::new("the lookup table is uninitialized")),
        other => {
            return Err(DecodeError::new(format!(
                "lookup table state {other} is neither 0 nor 1"
            )));
        }
    }
    let deactivation_slot = r.u64()?;
    let last_extended_slot = r.u64()?;
    let last_extended_slot_start_index = r.u8()?;
    // bincode `Option<Pubkey>`: a one-byte tag, then the key only when it is 1. The header keeps
    // its fixed 56 bytes either way; what follows the option up to 56 is padding.
    let authority = match r.u8()? {
        0 => None,
        1 => Some(r.address()?),
        other => {
            return Err(DecodeError::new(format!(
                "lookup table authority tag {other} is neither 0 nor 1"
            )));
        }
    };
    if list.len() % 32 != 0 {
        return Err(DecodeError::new(format!(
            "{} bytes of addresses is not a whole number of 32-byte keys",
            list.len()
        )));
    }
    let mut r = Reader::new(list, "lookup table addresses");
    let mut addresses = Vec::with_capacity(list.len() / 32);
    while r.remaining() > 0 {
        addresses.push(r.address()?);
    }
    Ok(LookupTable {
        deactivation_slot,
        last_extended_slot,
        last_extended_slot_start_index,
        authority,
        addresses,
    })
}

impl LookupTable {
    /// The golden answer. `deactivated` is whether a deactivation was ever started (the slot is
    /// not u64::MAX); whether it has finished cooling down depends on the current slot.
    pub fn to_answer(&self) -> Value {
        json!({
            "account_type": "lookup_table",
            "program": "address-lookup-table",
            "authority": self.authority.map(|a| a.to_string()),
            "deactivation_slot": self.deactivation_slot.to_string(),
            "deactivated": self.deactivation_slot != NOT_DEACTIVATED,
            "last_extended_slot": self.last_extended_slot.to_string(),
            "last_extended_slot_start_index": self.last_extended_slot_start_index,
            "addresses": self.addresses.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message<T: std::fmt::Debug>(result: Result<T, DecodeError>) -> String {
        match result {
            Err(DecodeError::Invalid(m)) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_native_accounts_are_refused_with_the_reason() {
        assert_eq!(
            message(decode_nonce(&[0; 79])),
            "79 bytes is not a durable nonce account (80); a System account with other data is not decoded"
        );
        let mut nonce = [0u8; NONCE_LEN];
        nonce[0] = 2;
        assert_eq!(
            message(decode_nonce(&nonce)),
            "nonce version 2 is neither 0 (legacy) nor 1 (current)"
        );
        nonce[0] = 1;
        nonce[4] = 5;
        assert_eq!(
            message(decode_nonce(&nonce)),
            "nonce state 5 is neither 0 (uninitialized) nor 1 (initialized)"
        );
        let mut stake = [0u8; STAKE_LEN];
        stake[0] = 4;
        assert_eq!(message(decode_stake(&stake)), "stake state 4 is not 0-3");
        assert_eq!(
            message(decode_stake(&stake[..199])),
            "199 bytes is not a stake account (200)"
        );
        let mut table = vec![0u8; LOOKUP_TABLE_META_LEN + 33];
        assert_eq!(
            message(decode_lookup_table(&table)),
            "the lookup table is uninitialized"
        );
        table[0] = 1;
        assert_eq!(
            message(decode_lookup_table(&table)),
            "33 bytes of addresses is not a whole number of 32-byte keys"
        );
        table[21] = 7;
        assert_eq!(
            message(decode_lookup_table(&table[..LOOKUP_TABLE_META_LEN])),
            "lookup table authority tag 7 is neither 0 nor 1"
        );
        assert_eq!(
            message(decode_lookup_table(&table[..10])),
            "10 bytes is shorter than a lookup table's 56-byte header"
        );
    }

    #[test]
    fn an_uninitialized_nonce_and_an_empty_active_table_answer_plainly() {
        let answer = decode_nonce(&[0; NONCE_LEN]).unwrap().to_answer();
        assert_eq!(answer["state"], "uninitialized");
        assert_eq!(answer["version"], "legacy");
        assert!(answer.get("authority").is_none());
        let mut table = vec![0u8; LOOKUP_TABLE_META_LEN];
        table[0] = 1;
        table[4..12].copy_from_slice(&u64::MAX.to_le_bytes());
        let answer = decode_lookup_table(&table).unwrap().to_answer();
        assert_eq!(answer["deactivated"], false);
        assert_eq!(answer["authority"], Value::Null);
        assert_eq!(answer["addresses"], json!([]));
    }
}

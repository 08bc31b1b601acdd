//! The pack's own Solana decoder: account layouts, transaction messages, instruction data and
//! associated-token-account derivation, from raw bytes only.
//!
//! Golden records are produced by this code, never typed by hand, and the tests check it against
//! the canonical crates (spl-token and spl-token-2022 unpacking, solana-transaction
//! deserialization, the ATA interface's derivation). It has no network and no I/O.

pub mod account;
pub mod instruction;
pub mod native;
pub mod pda;
pub mod plan;
pub mod transaction;

/// The golden answer for an account's data, by its owning program: SPL Token and Token-2022
/// mints, token accounts and multisigs; durable nonce accounts (System); stake accounts; address
/// lookup tables. Any other owner is refused with its address.
pub fn decode_account_answer(
    owner: &Address,
    data: &[u8],
) -> Result<serde_json::Value, DecodeError> {
    if let Some(token) = account::TokenProgram::from_owner(owner) {
        return Ok(account::decode(token, data)?.to_answer());
    }
    match owner.to_string().as_str() {
        program::SYSTEM => Ok(native::decode_nonce(data)?.to_answer()),
        program::STAKE => Ok(native::decode_stake(data)?.to_answer()),
        program::ADDRESS_LOOKUP_TABLE => Ok(native::decode_lookup_table(data)?.to_answer()),
        other => Err(DecodeError::new(format!(
            "accounts owned by {other} are not decoded: the pack reads SPL Token, Token-2022, System (durable nonce), Stake and Address Lookup Table accounts"
        ))),
    }
}

use std::fmt;
use std::str::FromStr;

/// A 32-byte Solana address, shown in base58.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address(pub [u8; 32]);

impl Address {
    /// Parses a base58 address at compile-time-known call sites (program ids).
    ///
    /// Only for literals in this crate: a bad literal is a bug caught by the unit tests.
    pub fn from_static(text: &'static str) -> Self {
        text.parse().unwrap_or(Address([0; 32]))
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&bs58::encode(self.0).into_string())
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Address {
    type Err = DecodeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut out = [0u8; 32];
        // Base58 of 32 bytes is 32–44 characters; anything longer is not an address.
        if text.is_empty() || text.len() > 44 {
            return Err(DecodeError::new(format!(
                "`{text}` is not a base58 address"
            )));
        }
        match bs58::decode(text).onto(&mut out) {
            Ok(32) => Ok(Address(out)),
            Ok(n) => Err(DecodeError::new(format!(
                "`{text}` decodes to {n} bytes, not 32"
            ))),
            Err(e) => Err(DecodeError::new(format!("`{text}` is not base58: {e}"))),
        }
    }
}

impl serde::Serialize for Address {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why bytes could not be decoded. Decoding is strict: it never guesses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes do not follow the layout.
    #[error("{0}")]
    Invalid(String),
    /// A transaction message of a version other than legacy and 0 (e.g. `0x81` = v1). Excluded
    /// explicitly, never decoded on a guess.
    #[error("transaction message version {0} is not supported (only legacy and 0)")]
    UnsupportedVersion(u8),
}

impl DecodeError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }
}

/// A little-endian reader over a byte slice that fails instead of panicking.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, at: 0, what }
    }

    pub(crate) fn position(&self) -> usize {
        self.at
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.at)
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| {
                DecodeError::new(format!(
                    "{}: needs {n} bytes at offset {}, only {} left",
                    self.what,
                    self.at,
                    self.remaining()
                ))
            })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    pub(crate) fn i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_le_bytes(self.array()?))
    }

    pub(crate) fn address(&mut self) -> Result<Address, DecodeError> {
        Ok(Address(self.array()?))
    }

    /// Solana's compact-u16 ("short vec" length): 1–3 bytes, 7 bits each, canonical only.
    pub(crate) fn compact_u16(&mut self) -> Result<u16, DecodeError> {
        let mut value: u32 = 0;
        for i in 0..3 {
            let byte = self.u8()?;
            value |= u32::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                if i > 0 && byte == 0 {
                    return Err(DecodeError::new(format!(
                        "{}: non-canonical compact-u16",
                        self.what
                    )));
                }
                return u16::try_from(value).map_err(|_| {
                    DecodeError::new(format!("{}: compact-u16 overflows", self.what))
                });
            }
        }
        Err(DecodeError::new(format!(
            "{}: compact-u16 longer than 3 bytes",
            self.what
        )))
    }

    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(DecodeError::new(format!(
                "{}: {} trailing bytes",
                self.what,
                self.remaining()
            )))
        }
    }
}

/// Well-known program ids: the addresses the programs are deployed at.
pub mod program {
    use super::Address;

    /// The System program.
    pub const SYSTEM: &str = "11111111111111111111111111111111";
    /// SPL Token.
    pub const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
    /// SPL Token-2022.
    pub const TOKEN_2022: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
    /// Associated Token Account program.
    pub const ASSOCIATED_TOKEN: &str = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
    /// Compute Budget program.
    pub const COMPUTE_BUDGET: &str = "ComputeBudget111111111111111111111111111111";
    /// SPL Memo, the id most call "v2" (named v3 in source).
    pub const MEMO: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
    /// SPL Memo v1 (legacy).
    pub const MEMO_V1: &str = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";
    /// Address Lookup Table program.
    pub const ADDRESS_LOOKUP_TABLE: &str = "AddressLookupTab1e1111111111111111111111111";
    /// The Stake program.
    pub const STAKE: &str = "Stake11111111111111111111111111111111111111";

    /// The short name used in answers for a program the pack decodes, if it is one.
    pub fn name_of(id: &Address) -> Option<&'static str> {
        let text = id.to_string();
        Some(match text.as_str() {
            SYSTEM => "system",
            TOKEN => "spl-token",
            TOKEN_2022 => "spl-token-2022",
            ASSOCIATED_TOKEN => "spl-associated-token-account",
            COMPUTE_BUDGET => "compute-budget",
            MEMO | MEMO_V1 => "spl-memo",
            ADDRESS_LOOKUP_TABLE => "address-lookup-table",
            STAKE => "stake",
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_ids_are_valid_addresses() {
        for id in [
            program::SYSTEM,
            program::TOKEN,
            program::TOKEN_2022,
            program::ASSOCIATED_TOKEN,
            program::COMPUTE_BUDGET,
            program::MEMO,
            program::MEMO_V1,
            program::ADDRESS_LOOKUP_TABLE,
        ] {
            let parsed: Address = id.parse().unwrap();
            assert_eq!(parsed.to_string(), id);
        }
        assert_eq!(Address::from_static(program::SYSTEM).0, [0; 32]);
    }

    #[test]
    fn rejects_non_addresses() {
        assert!("0OIl".parse::<Address>().is_err());
        assert!("".parse::<Address>().is_err());
        assert!("1111".parse::<Address>().is_err(), "4 zero bytes, not 32");
    }
}

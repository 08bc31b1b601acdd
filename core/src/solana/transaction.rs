//! Transactions: the wire format (legacy and v0 messages) and saved `getTransaction` responses.
//!
//! Layout: compact-u16 signature count, 64-byte signatures, then the message. A
//! message whose first byte has bit 0x80 set is versioned (low 7 bits = version); only version 0
//! is decoded, any other is [`DecodeError::UnsupportedVersion`]. The account index space is the
//! static keys, then every loaded writable address, then every loaded readonly address.

use base64::Engine as _;
use serde_json::{Value, json};

use super::instruction::{self, DecodedInstruction};
use super::{Address, DecodeError, Reader};

/// Legacy or v0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxVersion {
    Legacy,
    V0,
}

impl TxVersion {
    /// As `getTransaction` and answers write it: `"legacy"` or `0`.
    pub fn to_answer(self) -> Value {
        match self {
            Self::Legacy => json!("legacy"),
            Self::V0 => json!(0),
        }
    }
}

/// One compiled instruction as on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledInstruction {
    pub program_index: u8,
    pub accounts: Vec<u8>,
    pub data: Vec<u8>,
}

/// One address-table lookup of a v0 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLookup {
    pub table: Address,
    pub writable: Vec<u8>,
    pub readonly: Vec<u8>,
}

/// A transaction as on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireTransaction {
    pub signatures: Vec<[u8; 64]>,
    pub version: TxVersion,
    /// (num_required_signatures, num_readonly_signed, num_readonly_unsigned)
    pub header: (u8, u8, u8),
    pub static_keys: Vec<Address>,
    pub recent_blockhash: Address,
    pub instructions: Vec<CompiledInstruction>,
    pub lookups: Vec<TableLookup>,
}

/// Decodes transaction bytes.
pub fn decode_wire(bytes: &[u8]) -> Result<WireTransaction, DecodeError> {
    let mut r = Reader::new(bytes, "transaction");
    let count = r.compact_u16()?;
    let mut signatures = Vec::with_capacity(usize::from(count).min(16));
    for _ in 0..count {
        signatures.push(r.array::<64>()?);
    }
    let first = *bytes
        .get(r.position())
        .ok_or_else(|| DecodeError::new("transaction has no message"))?;
    let version = if first & 0x80 == 0 {
        TxVersion::Legacy
    } else {
        r.u8()?;
        match first & 0x7f {
            0 => TxVersion::V0,
            other => return Err(DecodeError::UnsupportedVersion(other)),
        }
    };
    let header = (r.u8()?, r.u8()?, r.u8()?);
    let key_count = r.compact_u16()?;
    let mut static_keys = Vec::with_capacity(usize::from(key_count).min(256));
    for _ in 0..key_count {
        static_keys.push(r.address()?);
    }
    let recent_blockhash = r.address()?;
    let ix_count = r.compact_u16()?;
    let mut instructions = Vec::with_capacity(usize::from(ix_count).min(64));
    for _ in 0..ix_count {
        let program_index = r.u8()?;
        let n = r.compact_u16()?;
        let accounts = r.take(usize::from(n))?.to_vec();
        let len = r.compact_u16()?;
        let data = r.take(usize::from(len))?.to_vec();
        instructions.push(CompiledInstruction {
            program_index,
            accounts,
            data,
        });
    }
    let mut lookups = Vec::new();
    if version == TxVersion::V0 {
        let n = r.compact_u16()?;
        for _ in 0..n {
            let table = r.address()?;
            let w = r.compact_u16()?;
            let writable = r.take(usize::from(w))?.to_vec();
            let ro = r.compact_u16()?;
            let readonly = r.take(usize::from(ro))?.to_vec();
            lookups.push(TableLookup {
                table,
                writable,
                readonly,
            });
        }
    }
    r.finish()?;
    if usize::from(header.0) != signatures.len() {
        return Err(DecodeError::new(format!(
            "header requires {} signatures, transaction carries {}",
            header.0,
            signatures.len()
        )));
    }
    Ok(WireTransaction {
        signatures,
        version,
        header,
        static_keys,
        recent_blockhash,
        instructions,
        lookups,
    })
}

/// A saved, finalized `getTransaction` response, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedTransaction {
    pub wire: WireTransaction,
    /// base58 of the first signature: the transaction id.
    pub signature: String,
    pub slot: Option<u64>,
    pub success: bool,
    pub fee: u64,
    /// The whole account index space: static, loaded writable, loaded readonly.
    pub account_keys: Vec<Address>,
    pub instructions: Vec<DecodedInstruction>,
}

fn field<'a>(value: &'a Value, path: &str) -> Result<&'a Value, DecodeError> {
    path.split('.').try_fold(value, |v, key| {
        v.get(key)
            .ok_or_else(|| DecodeError::new(format!("response has no `{path}`")))
    })
}

fn addresses(value: &Value, path: &str) -> Result<Vec<Address>, DecodeError> {
    field(value, path)?
        .as_array()
        .ok_or_else(|| DecodeError::new(format!("`{path}` is not an array")))?
        .iter()
        .map(|v| {
            v.as_str()
                .ok_or_else(|| DecodeError::new(format!("`{path}` holds a non-string")))?
                .parse()
        })
        .collect()
}

/// Decodes the `result` object of `getTransaction` with `encoding: "base64"`.
pub fn decode_response(result: &Value) -> Result<DecodedTransaction, DecodeError> {
    let tx = field(result, "transaction")?;
    let Some([Value::String(b64), Value::String(encoding)]) = tx.as_array().map(Vec::as_slice)
    else {
        return Err(DecodeError::new(
            "`transaction` is not [data, encoding]; the pack reads base64 responses",
        ));
    };
    if encoding != "base64" {
        return Err(DecodeError::new(format!(
            "encoding `{encoding}` is not base64"
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| DecodeError::new(format!("transaction is not base64: {e}")))?;
    let wire = decode_wire(&bytes)?;

    // The response's `version` must agree with the message prefix.
    let declared = match result.get("version") {
        None | Some(Value::Null) => TxVersion::Legacy,
        Some(Value::String(s)) if s == "legacy" => TxVersion::Legacy,
        Some(Value::Number(n)) if n.as_u64() == Some(0) => TxVersion::V0,
        Some(Value::Number(n)) => {
            let v = n
                .as_u64()
                .and_then(|v| u8::try_from(v).ok())
                .unwrap_or(u8::MAX);
            return Err(DecodeError::UnsupportedVersion(v));
        }
        Some(other) => return Err(DecodeError::new(format!("`version` is {other}"))),
    };
    if declared != wire.version {
        return Err(DecodeError::new(
            "`version` disagrees with the message's version prefix",
        ));
    }

    let meta = field(result, "meta")?;
    let success = meta.get("err").is_some_and(Value::is_null);
    let fee = field(meta, "fee")?
        .as_u64()
        .ok_or_else(|| DecodeError::new("`meta.fee` is not a u64"))?;
    let mut account_keys = wire.static_keys.clone();
    if wire.version == TxVersion::V0 {
        let writable = addresses(meta, "loadedAddresses.writable")?;
        let readonly = addresses(meta, "loadedAddresses.readonly")?;
        let want_w: usize = wire.lookups.iter().map(|l| l.writable.len()).sum();
        let want_r: usize = wire.lookups.iter().map(|l| l.readonly.len()).sum();
        if (want_w, want_r) != (writable.len(), readonly.len()) {
            return Err(DecodeError::new(format!(
                "lookups select {want_w} writable + {want_r} readonly addresses, meta.loadedAddresses has {} + {}",
                writable.len(),
                readonly.len()
            )));
        }
        account_keys.extend(writable);
        account_keys.extend(readonly);
    }
    let key = |index: u8| {
        account_keys
            .get(usize::from(index))
            .copied()
            .ok_or_else(|| {
                DecodeError::new(format!(
                    "account index {index} is outside {} keys",
                    account_keys.len()
                ))
            })
    };
    let mut instructions = Vec::with_capacity(wire.instructions.len());
    for ix in &wire.instructions {
        let program_id = key(ix.program_index)?;
        let accounts = ix
            .accounts
            .iter()
            .map(|i| key(*i))
            .collect::<Result<Vec<_>, _>>()?;
        instructions.push(instruction::decode(program_id, accounts, &ix.data)?);
    }
    let signature = wire
        .signatures
        .first()
        .map(|s| bs58::encode(s).into_string())
        .ok_or_else(|| DecodeError::new("transaction has no signature"))?;
    Ok(DecodedTransaction {
        slot: result.get("slot").and_then(Value::as_u64),
        signature,
        success,
        fee,
        account_keys,
        instructions,
        wire,
    })
}

impl DecodedTransaction {
    /// The signer addresses: the first `num_required_signatures` static keys.
    pub fn signers(&self) -> Vec<Address> {
        self.wire
            .static_keys
            .iter()
            .take(usize::from(self.wire.header.0))
            .copied()
            .collect()
    }

    /// The golden answer for a transaction task.
    pub fn to_answer(&self) -> Value {
        json!({
            "signature": self.signature,
            "version": self.wire.version.to_answer(),
            "success": self.success,
            "fee_lamports": self.fee.to_string(),
            "signers": self.signers().iter().map(ToString::to_string).collect::<Vec<_>>(),
            "instructions": self.instructions.iter().map(DecodedInstruction::to_answer).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_one_prefix_is_excluded_not_guessed() {
        // One (zeroed) signature, then a message starting 0x81 (version 1).
        let mut bytes = vec![1];
        bytes.extend_from_slice(&[0; 64]);
        bytes.extend_from_slice(&[0x81, 1, 0, 0]);
        assert_eq!(decode_wire(&bytes), Err(DecodeError::UnsupportedVersion(1)));
    }

    #[test]
    fn compact_u16_is_canonical() {
        assert_eq!(Reader::new(&[0x80, 0x01], "t").compact_u16().unwrap(), 128);
        assert!(
            Reader::new(&[0x80, 0x00], "t").compact_u16().is_err(),
            "non-canonical zero"
        );
        assert!(Reader::new(&[0xff, 0xff, 0xff], "t").compact_u16().is_err());
    }
}

//! Instruction data of the programs the pack decodes: System, SPL Token / Token-2022, Compute
//! Budget, Memo and the Associated Token Account program. Other programs keep their id and
//! accounts; their data is not interpreted.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Address, DecodeError, Reader, program};

/// One decoded instruction, in answer form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedInstruction {
    /// The program invoked.
    pub program_id: Address,
    /// Its short name, for programs the pack knows.
    pub program: Option<&'static str>,
    /// The instruction's name in snake_case, for programs the pack decodes.
    pub instruction: Option<&'static str>,
    /// The accounts, in the instruction's order, resolved to addresses.
    pub accounts: Vec<Address>,
    /// Decoded arguments: u64 quantities as decimal strings, small integers as numbers.
    pub args: BTreeMap<&'static str, Value>,
}

impl DecodedInstruction {
    /// The instruction as it appears in an answer.
    pub fn to_answer(&self) -> Value {
        json!({
            "program_id": self.program_id.to_string(),
            "program": self.program.map_or(Value::Null, |p| Value::String(p.to_owned())),
            "instruction": self.instruction.map_or(Value::Null, |i| Value::String(i.to_owned())),
            "accounts": self.accounts.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "args": self.args,
        })
    }
}

type Args = BTreeMap<&'static str, Value>;

fn u64_arg(value: u64) -> Value {
    Value::String(value.to_string())
}

/// Decodes one instruction. Known programs with unknown or malformed data are errors: a golden
/// record never guesses.
pub fn decode(
    program_id: Address,
    accounts: Vec<Address>,
    data: &[u8],
) -> Result<DecodedInstruction, DecodeError> {
    let name = program::name_of(&program_id);
    let (instruction, args) = match name {
        Some("system") => system(data)?,
        Some("spl-token" | "spl-token-2022") => token(data, name == Some("spl-token-2022"))?,
        Some("compute-budget") => compute_budget(data)?,
        Some("spl-memo") => {
            let text = std::str::from_utf8(data)
                .map_err(|e| DecodeError::new(format!("memo is not UTF-8: {e}")))?;
            (
                Some("memo"),
                BTreeMap::from([("memo", Value::String(text.to_owned()))]),
            )
        }
        Some("spl-associated-token-account") => match data {
            [] | [0] => (Some("create"), Args::new()),
            [1] => (Some("create_idempotent"), Args::new()),
            [2] => (Some("recover_nested"), Args::new()),
            _ => {
                return Err(DecodeError::new(
                    "unknown associated-token-account instruction",
                ));
            }
        },
        _ => (None, Args::new()),
    };
    Ok(DecodedInstruction {
        program_id,
        program: name,
        instruction,
        accounts,
        args,
    })
}

fn system(data: &[u8]) -> Result<(Option<&'static str>, Args), DecodeError> {
    let mut r = Reader::new(data, "system instruction");
    let tag = r.u32()?;
    let decoded = match tag {
        0 => {
            let lamports = r.u64()?;
            let space = r.u64()?;
            let owner = r.address()?;
            (
                "create_account",
                BTreeMap::from([
                    ("lamports", u64_arg(lamports)),
                    ("space", u64_arg(space)),
                    ("owner", Value::String(owner.to_string())),
                ]),
            )
        }
        1 => (
            "assign",
            BTreeMap::from([("owner", Value::String(r.address()?.to_string()))]),
        ),
        2 => (
            "transfer",
            BTreeMap::from([("lamports", u64_arg(r.u64()?))]),
        ),
        3 => {
            let base = r.address()?;
            let len = usize::try_from(r.u64()?)
                .map_err(|_| DecodeError::new("create_account_with_seed seed length overflows"))?;
            let seed = std::str::from_utf8(r.take(len)?)
                .map_err(|e| DecodeError::new(format!("seed is not UTF-8: {e}")))?
                .to_owned();
            let lamports = r.u64()?;
            let space = r.u64()?;
            let owner = r.address()?;
            (
                "create_account_with_seed",
                BTreeMap::from([
                    ("base", Value::String(base.to_string())),
                    ("seed", Value::String(seed)),
                    ("lamports", u64_arg(lamports)),
                    ("space", u64_arg(space)),
                    ("owner", Value::String(owner.to_string())),
                ]),
            )
        }
        4 => ("advance_nonce_account", Args::new()),
        5 => (
            "withdraw_nonce_account",
            BTreeMap::from([("lamports", u64_arg(r.u64()?))]),
        ),
        8 => ("allocate", BTreeMap::from([("space", u64_arg(r.u64()?))])),
        other => {
            return Err(DecodeError::new(format!(
                "system instruction {other} is not decoded by the pack"
            )));
        }
    };
    r.finish()?;
    Ok((Some(decoded.0), decoded.1))
}

fn token(data: &[u8], is_2022: bool) -> Result<(Option<&'static str>, Args), DecodeError> {
    let mut r = Reader::new(data, "token instruction");
    let tag = r.u8()?;
    let decoded = match tag {
        1 => ("initialize_account", Args::new()),
        3 => ("transfer", BTreeMap::from([("amount", u64_arg(r.u64()?))])),
        7 => ("mint_to", BTreeMap::from([("amount", u64_arg(r.u64()?))])),
        8 => ("burn", BTreeMap::from([("amount", u64_arg(r.u64()?))])),
        9 => ("close_account", Args::new()),
        12 => {
            let amount = r.u64()?;
            let decimals = r.u8()?;
            (
                "transfer_checked",
                BTreeMap::from([("amount", u64_arg(amount)), ("decimals", json!(decimals))]),
            )
        }
        15 => {
            let amount = r.u64()?;
            let decimals = r.u8()?;
            (
                "burn_checked",
                BTreeMap::from([("amount", u64_arg(amount)), ("decimals", json!(decimals))]),
            )
        }
        17 => ("sync_native", Args::new()),
        18 => (
            "initialize_account3",
            BTreeMap::from([("owner", Value::String(r.address()?.to_string()))]),
        ),
        26 if is_2022 => match r.u8()? {
            1 => {
                let amount = r.u64()?;
                let decimals = r.u8()?;
                let fee = r.u64()?;
                (
                    "transfer_checked_with_fee",
                    BTreeMap::from([
                        ("amount", u64_arg(amount)),
                        ("decimals", json!(decimals)),
                        ("fee", u64_arg(fee)),
                    ]),
                )
            }
            other => {
                return Err(DecodeError::new(format!(
                    "transfer-fee instruction {other} is not decoded by the pack"
                )));
            }
        },
        other => {
            return Err(DecodeError::new(format!(
                "token instruction {other} is not decoded by the pack"
            )));
        }
    };
    r.finish()?;
    Ok((Some(decoded.0), decoded.1))
}

fn compute_budget(data: &[u8]) -> Result<(Option<&'static str>, Args), DecodeError> {
    let mut r = Reader::new(data, "compute-budget instruction");
    let decoded = match r.u8()? {
        1 => (
            "request_heap_frame",
            BTreeMap::from([("bytes", json!(r.u32()?))]),
        ),
        2 => (
            "set_compute_unit_limit",
            BTreeMap::from([("units", json!(r.u32()?))]),
        ),
        3 => (
            "set_compute_unit_price",
            BTreeMap::from([("micro_lamports", u64_arg(r.u64()?))]),
        ),
        4 => (
            "set_loaded_accounts_data_size_limit",
            BTreeMap::from([("bytes", json!(r.u32()?))]),
        ),
        other => {
            return Err(DecodeError::new(format!(
                "compute-budget instruction {other} is unknown"
            )));
        }
    };
    r.finish()?;
    Ok((Some(decoded.0), decoded.1))
}

/// Encodes the instructions a transfer plan may contain, for building test transactions and for
/// checking plans against real bytes.
pub mod encode {
    /// SPL Token `TransferChecked`: `[12] + amount u64 LE + decimals u8`.
    pub fn transfer_checked(amount: u64, decimals: u8) -> Vec<u8> {
        let mut data = vec![12];
        data.extend_from_slice(&amount.to_le_bytes());
        data.push(decimals);
        data
    }

    /// Token-2022 `TransferCheckedWithFee`: `[26, 1] + amount + decimals + fee`.
    pub fn transfer_checked_with_fee(amount: u64, decimals: u8, fee: u64) -> Vec<u8> {
        let mut data = vec![26, 1];
        data.extend_from_slice(&amount.to_le_bytes());
        data.push(decimals);
        data.extend_from_slice(&fee.to_le_bytes());
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Address {
        text.parse().unwrap()
    }

    #[test]
    fn decodes_the_bonk_transfer_data_from_the_fixture() {
        // 66iwZv… instruction 1: `03 005206f3b0430b00` (tag 3 Transfer, amount u64 LE); every
        // fixture instruction is also checked against the canonical crates in
        // tests/decoder_vs_canonical.rs.
        let data = [0x03, 0x00, 0x52, 0x06, 0xf3, 0xb0, 0x43, 0x0b, 0x00];
        let ix = decode(id(program::TOKEN), vec![], &data).unwrap();
        assert_eq!(ix.instruction, Some("transfer"));
        assert_eq!(ix.args["amount"], "3170652014400000");
    }

    fn error_of(program_id: &str, data: &[u8]) -> String {
        match decode(id(program_id), vec![], data) {
            Err(DecodeError::Invalid(message)) => message,
            other => panic!("{data:?} under {program_id}: {other:?}"),
        }
    }

    #[test]
    fn truncated_or_trailing_data_is_an_error() {
        assert_eq!(
            error_of(program::TOKEN, &[3, 1, 2]),
            "token instruction: needs 8 bytes at offset 1, only 2 left"
        );
        assert_eq!(
            error_of(program::SYSTEM, &[4, 0, 0, 0, 9]),
            "system instruction: 1 trailing bytes"
        );
        assert_eq!(
            error_of(program::COMPUTE_BUDGET, &[9]),
            "compute-budget instruction 9 is unknown"
        );
        assert_eq!(
            error_of(program::COMPUTE_BUDGET, &[2, 1, 0]),
            "compute-budget instruction: needs 4 bytes at offset 1, only 2 left"
        );
        assert_eq!(
            error_of(program::SYSTEM, &[9, 0, 0, 0]),
            "system instruction 9 is not decoded by the pack"
        );
        assert_eq!(
            error_of(program::SYSTEM, &[3, 0, 0, 0]),
            "system instruction: needs 32 bytes at offset 4, only 0 left",
            "create_account_with_seed without its base"
        );
        let mut seeded = vec![3, 0, 0, 0];
        seeded.extend_from_slice(&[0; 32]);
        seeded.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            error_of(program::SYSTEM, &seeded),
            "system instruction: needs 18446744073709551615 bytes at offset 44, only 0 left",
            "a seed length past the data is refused, not allocated"
        );
        assert_eq!(
            error_of(program::TOKEN, &[26, 1]),
            "token instruction 26 is not decoded by the pack",
            "the transfer-fee extension exists only under Token-2022"
        );
        assert_eq!(
            error_of(program::TOKEN_2022, &[26, 5]),
            "transfer-fee instruction 5 is not decoded by the pack"
        );
        assert_eq!(
            error_of(program::ASSOCIATED_TOKEN, &[3]),
            "unknown associated-token-account instruction"
        );
        assert_eq!(
            error_of(program::MEMO, &[0xff]),
            "memo is not UTF-8: invalid utf-8 sequence of 1 bytes from index 0"
        );
    }

    #[test]
    fn unknown_programs_keep_accounts_and_no_name() {
        let other = id("E4CKSsnjU9WXzrBJpNXnFi4gbb1kmLuavwZHd35TLeHs");
        let ix = decode(other, vec![other], &[1, 2, 3]).unwrap();
        assert_eq!((ix.program, ix.instruction), (None, None));
        assert_eq!(ix.accounts, vec![other]);
    }

    #[test]
    fn transfer_checked_round_trips() {
        let ix = decode(
            id(program::TOKEN_2022),
            vec![],
            &encode::transfer_checked_with_fee(1_234_567_890_123, 9, 4_321),
        )
        .unwrap();
        assert_eq!(ix.instruction, Some("transfer_checked_with_fee"));
        assert_eq!(
            ix.args,
            BTreeMap::from([
                ("amount", json!("1234567890123")),
                ("decimals", json!(9)),
                ("fee", json!("4321")),
            ])
        );
        let ix = decode(
            id(program::TOKEN),
            vec![],
            &encode::transfer_checked(u64::MAX, 6),
        )
        .unwrap();
        assert_eq!(ix.instruction, Some("transfer_checked"));
        assert_eq!(
            ix.args,
            BTreeMap::from([
                ("amount", json!("18446744073709551615")),
                ("decimals", json!(6)),
            ])
        );
    }
}

//! The golden unsigned transfer plan for a transfer-plan task's parameters.

use base64::Engine as _;
use serde_json::{Value, json};

use super::account::{self, DecodedAccount, TokenProgram};
use super::{Address, DecodeError, pda, program};

/// Parses a whole-token amount (`"12.5"`) into atomic units with `decimals`, exactly: no floats,
/// no rounding. More fractional digits than `decimals` is an error, as is overflow.
pub fn atomic_amount(text: &str, decimals: u8) -> Result<u64, DecodeError> {
    let bad = || {
        DecodeError::new(format!(
            "`{text}` is not an amount with at most {decimals} decimals"
        ))
    };
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty()
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > usize::from(decimals)
    {
        return Err(bad());
    }
    let scale = 10u64.checked_pow(u32::from(decimals)).ok_or_else(bad)?;
    let whole: u64 = whole.parse().map_err(|_| bad())?;
    let mut frac: u64 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().map_err(|_| bad())?
    };
    for _ in fraction.len()..usize::from(decimals) {
        frac = frac.checked_mul(10).ok_or_else(bad)?;
    }
    whole
        .checked_mul(scale)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(bad)
}

fn address(input: &Value, key: &str) -> Result<Address, DecodeError> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| DecodeError::new(format!("plan input has no `{key}`")))?
        .parse()
}

/// Builds the golden plan from the task's input parameters.
pub fn golden_plan(input: &Value) -> Result<Value, DecodeError> {
    let mint = address(input, "mint")?;
    let owner_program = address(input, "mint_owner_program")?;
    let token_program = TokenProgram::from_owner(&owner_program)
        .ok_or_else(|| DecodeError::new("`mint_owner_program` is not a token program"))?;
    let sender = address(input, "sender_owner")?;
    let recipient = address(input, "recipient_owner")?;
    let amount_text = input
        .get("amount")
        .and_then(Value::as_str)
        .ok_or_else(|| DecodeError::new("plan input has no `amount`"))?;
    let constraints = input.get("constraints").cloned().unwrap_or(Value::Null);

    let mint_state = match input
        .get("mint_account_data_base64")
        .and_then(Value::as_str)
    {
        None => None,
        Some(b64) => {
            let data = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| DecodeError::new(format!("mint data is not base64: {e}")))?;
            match account::decode(token_program, &data)? {
                DecodedAccount::Mint {
                    mint, extensions, ..
                } => Some((mint, extensions)),
                DecodedAccount::TokenAccount { .. } => {
                    return Err(DecodeError::new("the mint data is a token account"));
                }
                DecodedAccount::Multisig { .. } => {
                    return Err(DecodeError::new("the mint data is a multisig account"));
                }
            }
        }
    };
    let given_decimals = input
        .get("decimals")
        .and_then(Value::as_u64)
        .map(|d| u8::try_from(d).map_err(|_| DecodeError::new("decimals > 255")))
        .transpose()?;
    let decimals = match (given_decimals, &mint_state) {
        (Some(d), Some((m, _))) if d != m.decimals => {
            return Err(DecodeError::new("`decimals` disagrees with the mint data"));
        }
        (Some(d), _) => d,
        (None, Some((m, _))) => m.decimals,
        (None, None) => {
            return Err(DecodeError::new(
                "plan input gives neither decimals nor mint data",
            ));
        }
    };
    let amount = atomic_amount(amount_text, decimals)?;

    let fee = match &mint_state {
        Some((_, extensions)) => {
            let epoch = input.get("current_epoch").and_then(Value::as_u64);
            match extensions
                .iter()
                .find_map(|e| epoch.and_then(|ep| e.transfer_fee_at(ep)))
            {
                Some(schedule) => Some(
                    schedule
                        .fee_for(amount)
                        .ok_or_else(|| DecodeError::new("fee overflows"))?,
                ),
                None if extensions.iter().any(|e| e.transfer_fee_at(0).is_some()) => {
                    return Err(DecodeError::new(
                        "the mint charges a transfer fee but `current_epoch` is missing",
                    ));
                }
                None => None,
            }
        }
        None => None,
    };

    let tp = token_program.id();
    let source = pda::associated_token_address(&sender, &mint, &tp)
        .ok_or_else(|| DecodeError::new("no ATA bump"))?;
    let destination = pda::associated_token_address(&recipient, &mint, &tp)
        .ok_or_else(|| DecodeError::new("no ATA bump"))?;
    let accounts = json!([
        source.to_string(),
        mint.to_string(),
        destination.to_string(),
        sender.to_string()
    ]);

    let mut instructions = Vec::new();
    if let Some(memo) = constraints.get("memo").and_then(Value::as_str) {
        instructions.push(json!({
            "program_id": program::MEMO,
            "instruction": "memo",
            "accounts": [],
            "args": { "memo": memo },
        }));
    }
    let wanted = constraints
        .get("instruction")
        .and_then(Value::as_str)
        .unwrap_or("transfer_checked");
    instructions.push(match (wanted, fee) {
        ("transfer_checked", _) => json!({
            "program_id": tp.to_string(),
            "instruction": "transfer_checked",
            "accounts": accounts,
            "args": { "amount": amount.to_string(), "decimals": decimals },
        }),
        ("transfer_checked_with_fee", Some(fee)) => json!({
            "program_id": tp.to_string(),
            "instruction": "transfer_checked_with_fee",
            "accounts": accounts,
            "args": { "amount": amount.to_string(), "decimals": decimals, "fee": fee.to_string() },
        }),
        (other, _) => {
            return Err(DecodeError::new(format!(
                "cannot plan instruction `{other}` for this mint"
            )));
        }
    });

    let mut plan = json!({
        "mint": mint.to_string(),
        "token_program": tp.to_string(),
        "decimals": decimals,
        "source_token_account": source.to_string(),
        "destination_token_account": destination.to_string(),
        "authority": sender.to_string(),
        "amount_atomic": amount.to_string(),
        "instructions": instructions,
    });
    if let Some(fee) = fee {
        plan["fee_atomic"] = Value::String(fee.to_string());
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_amounts_are_exact() {
        assert_eq!(atomic_amount("12.5", 6).unwrap(), 12_500_000);
        assert_eq!(atomic_amount("1234.56", 2).unwrap(), 123_456);
        assert_eq!(atomic_amount("0.000001", 6).unwrap(), 1);
        assert_eq!(atomic_amount("7", 0).unwrap(), 7);
        let refusal = |text: &str, decimals: u8| match atomic_amount(text, decimals) {
            Err(DecodeError::Invalid(message)) => message,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(
            refusal("0.0000001", 6),
            "`0.0000001` is not an amount with at most 6 decimals",
            "more decimals than the mint has"
        );
        assert_eq!(
            refusal("-1", 6),
            "`-1` is not an amount with at most 6 decimals"
        );
        assert_eq!(
            refusal("1e3", 6),
            "`1e3` is not an amount with at most 6 decimals"
        );
        assert_eq!(
            refusal(".5", 6),
            "`.5` is not an amount with at most 6 decimals"
        );
        assert_eq!(
            refusal("18446744073709.551616", 6),
            "`18446744073709.551616` is not an amount with at most 6 decimals",
            "overflow"
        );
        assert_eq!(
            refusal("1", 20),
            "`1` is not an amount with at most 20 decimals",
            "10^20 does not fit a u64"
        );
        // The largest u64 itself is fine.
        assert_eq!(atomic_amount("18446744073709.551615", 6).unwrap(), u64::MAX);
    }
}

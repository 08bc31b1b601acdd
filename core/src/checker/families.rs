//! Per-family schema and comparison rules. Each function validates the answer's structure
//! (returning `Err` for `invalid_output`) and records every difference from the golden record.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::compare::{
    Checked, Diff, compare_object, expect_address, expect_addresses, expect_array, expect_bool,
    expect_int, expect_object, expect_opt_address, expect_str, expect_u64, index, join, require,
    same, violation,
};
use crate::solana::Address;

type Object = Map<String, Value>;

fn golden_str<'a>(golden: &'a Object, key: &str) -> &'a str {
    golden.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Leaf reason in account answers: authorities (and delegates) are `authority_mismatch`.
fn account_reason(key: &str) -> &'static str {
    if key.contains("authority") || key.contains("delegate") {
        "authority_mismatch"
    } else {
        "wrong_field"
    }
}

/// Mint / account interpretation.
pub fn account(golden: &Object, answer: &Object, diff: &mut Diff) -> Checked<()> {
    let account_type = expect_str(require(answer, "account_type", "")?, "account_type")?;
    let program = expect_str(require(answer, "program", "")?, "program")?;
    let golden_type = golden_str(golden, "account_type");
    if account_type != golden_type {
        diff.push(
            "wrong_account_type",
            "account_type",
            &golden["account_type"],
            answer.get("account_type"),
            format!("the account is a {golden_type}"),
        );
        return Ok(()); // the other fields belong to a different layout: nothing more to compare
    }
    if program != golden_str(golden, "program") {
        diff.push(
            "wrong_program",
            "program",
            &golden["program"],
            answer.get("program"),
            "the owning program differs",
        );
    }
    // Structure first, for every field the golden record holds.
    for (key, g) in golden {
        if key == "account_type" || key == "program" || key == "extensions" {
            continue;
        }
        let value = require(answer, key, "")?;
        match g {
            Value::Null => {
                if key.contains("authority") || key.contains("delegate") {
                    expect_opt_address(value, key)?;
                } else if !value.is_null() {
                    expect_u64(value, key)?;
                }
            }
            Value::Bool(_) => {
                expect_bool(value, key)?;
            }
            Value::Number(_) => {
                expect_int(value, key)?;
            }
            Value::String(s) if s.bytes().all(|b| b.is_ascii_digit()) => {
                expect_u64(value, key)?;
            }
            Value::String(_)
                if key.contains("authority")
                    || key.contains("delegate")
                    || key == "mint"
                    || key == "owner" =>
            {
                expect_opt_address(value, key)?;
            }
            _ => {}
        }
    }
    let mut rest = golden.clone();
    rest.remove("account_type");
    rest.remove("program");
    let golden_extensions = rest.remove("extensions");
    compare_object(&rest, answer, "", diff, &account_reason);

    let expected: Vec<Value> = match golden_extensions {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    let given: &[Value] = match answer.get("extensions") {
        // Required where the golden record has extensions; optional (and then empty) elsewhere.
        None if expected.is_empty() => &[],
        None => {
            return Err(violation(
                "extensions",
                "required field `extensions` is missing",
            ));
        }
        Some(Value::Null) if expected.is_empty() => &[],
        Some(v) => expect_array(v, "extensions")?,
    };
    let mut by_type: Vec<(String, &Object)> = Vec::new();
    for (i, ext) in given.iter().enumerate() {
        let path = index("extensions", i);
        let ext = expect_object(ext, &path)?;
        let ty = expect_str(require(ext, "type", &path)?, &join(&path, "type"))?;
        by_type.push((ty.to_owned(), ext));
    }
    let expected_types: BTreeSet<&str> = expected
        .iter()
        .filter_map(|e| e.get("type").and_then(Value::as_str))
        .collect();
    let mut seen = BTreeSet::new();
    for (ty, _) in &by_type {
        if !expected_types.contains(ty.as_str()) {
            diff.push(
                "extra_extension",
                "extensions",
                &Value::Null,
                Some(&Value::String(ty.clone())),
                format!("the account has no `{ty}` extension"),
            );
        } else if !seen.insert(ty.as_str()) {
            diff.push(
                "extra_extension",
                "extensions",
                &Value::Null,
                Some(&Value::String(ty.clone())),
                format!("`{ty}` is listed twice"),
            );
        }
    }
    for ext in &expected {
        let Some(ext) = ext.as_object() else { continue };
        let ty = golden_str(ext, "type");
        let path = format!("extensions[{ty}]");
        match by_type.iter().find(|(t, _)| t == ty) {
            None => diff.push(
                "missing_extension",
                "extensions",
                &Value::String(ty.to_owned()),
                None,
                format!("the `{ty}` extension is missing"),
            ),
            Some((_, got)) => compare_object(ext, got, &path, diff, &account_reason),
        }
    }
    Ok(())
}

/// One instruction of an answer, validated.
struct Instruction<'a> {
    program_id: Address,
    name: Option<&'a str>,
    accounts: Vec<Address>,
    args: Option<&'a Object>,
    raw: &'a Value,
}

fn instructions<'a>(answer: &'a Object, require_names: bool) -> Checked<Vec<Instruction<'a>>> {
    let list = expect_array(require(answer, "instructions", "")?, "instructions")?;
    list.iter()
        .enumerate()
        .map(|(i, raw)| {
            let path = index("instructions", i);
            let ix = expect_object(raw, &path)?;
            let program_id = expect_address(
                require(ix, "program_id", &path)?,
                &join(&path, "program_id"),
            )?;
            let name = match ix.get("instruction") {
                None | Some(Value::Null) if !require_names => None,
                None => {
                    return Err(violation(
                        &join(&path, "instruction"),
                        format!("`{}` is required", join(&path, "instruction")),
                    ));
                }
                Some(v) => {
                    if v.is_null() && !require_names {
                        None
                    } else {
                        Some(expect_str(v, &join(&path, "instruction"))?)
                    }
                }
            };
            let accounts = match ix.get("accounts") {
                None => {
                    return Err(violation(
                        &join(&path, "accounts"),
                        format!("`{}` is required", join(&path, "accounts")),
                    ));
                }
                Some(v) => expect_addresses(v, &join(&path, "accounts"))?,
            };
            let args = match ix.get("args") {
                None | Some(Value::Null) => None,
                Some(v) => Some(expect_object(v, &join(&path, "args"))?),
            };
            Ok(Instruction {
                program_id,
                name,
                accounts,
                args,
                raw,
            })
        })
        .collect()
}

fn address_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn arg_reason(key: &str) -> &'static str {
    match key {
        "amount" | "lamports" => "wrong_amount_atomic",
        "fee" => "wrong_fee",
        "decimals" => "wrong_asset",
        _ => "wrong_field",
    }
}

/// Compares one golden instruction with the answer's: name, accounts, args.
fn compare_instruction(
    golden: &Object,
    got: &Instruction<'_>,
    path: &str,
    diff: &mut Diff,
    arg_reason: &dyn Fn(&str) -> &'static str,
) {
    let golden_name = golden.get("instruction").and_then(Value::as_str);
    if let Some(expected) = golden_name
        && got.name != Some(expected)
    {
        diff.push(
            "wrong_instruction",
            &join(path, "instruction"),
            &golden["instruction"],
            got.raw.get("instruction"),
            format!("expected `{expected}`"),
        );
        return; // accounts and args of a different instruction mean nothing
    }
    let expected_accounts = address_list(&golden["accounts"]);
    let got_accounts: Vec<String> = got.accounts.iter().map(ToString::to_string).collect();
    if expected_accounts != got_accounts {
        diff.push(
            "wrong_address",
            &join(path, "accounts"),
            &golden["accounts"],
            got.raw.get("accounts"),
            "the instruction's accounts differ",
        );
    }
    if golden_name.is_none() {
        // A program the pack does not decode: the prompt asks for `"instruction": null` (or
        // the key left out) and its data is not judged. A name is a claim the pack cannot back,
        // and an invented one must not pass, so any name here is a wrong instruction.
        if let Some(named) = got.name {
            diff.push(
                "wrong_instruction",
                &join(path, "instruction"),
                &Value::Null,
                Some(&Value::String(named.to_owned())),
                "the pack does not decode this program: `instruction` must be null",
            );
        }
        return;
    }
    if let Some(Value::Object(args)) = golden.get("args") {
        let empty = Map::new();
        let got_args = got.args.unwrap_or(&empty);
        let args_path = join(path, "args");
        compare_object(args, got_args, &args_path, diff, arg_reason);
    }
}

/// Transaction interpretation.
///
/// **Instructions are compared by position**, because their order is part of what a
/// transaction does. At each position: a different `program_id` is `wrong_instruction` (at
/// `.program_id`); the same program with a different name is `wrong_instruction` (at
/// `.instruction`); a name for a program the pack does not decode is `wrong_instruction` too
/// (the prompt asks for null). Positions past the answer's end are `missing_instruction`, and
/// positions past the golden record's end are `extra_instruction`.
///
/// So the intended reasons for **one dropped instruction** are `missing_instruction` for the
/// last position plus `wrong_instruction` for each position whose instruction moved up — not
/// `missing_instruction` alone. The checker does not guess which instruction was dropped: the
/// positional rule states exactly what differs where, with no alignment heuristic to explain
/// or to game, and the verdict (`fail`) is the same either way. The known-wrong answers `nonce-advance-dropped` and `compute-limit-dropped`
/// in `solana-core@1.0.3` record exactly these two reasons.
pub fn transaction(golden: &Object, answer: &Object, diff: &mut Diff) -> Checked<()> {
    let signature = expect_str(require(answer, "signature", "")?, "signature")?;
    let version = require(answer, "version", "")?;
    let version_ok = matches!(version, Value::String(s) if s == "legacy" || s == "0")
        || version.as_u64() == Some(0);
    if !version_ok {
        return Err(violation("version", "`version` must be \"legacy\" or 0"));
    }
    let success = expect_bool(require(answer, "success", "")?, "success")?;
    expect_u64(require(answer, "fee_lamports", "")?, "fee_lamports")?;
    let signers = expect_addresses(require(answer, "signers", "")?, "signers")?;
    let given = instructions(answer, false)?;

    if signature != golden_str(golden, "signature") {
        diff.push(
            "wrong_field",
            "signature",
            &golden["signature"],
            answer.get("signature"),
            "the transaction id is the first signature",
        );
    }
    if !same(&golden["version"], version) {
        diff.push(
            "wrong_field",
            "version",
            &golden["version"],
            Some(version),
            "the message version differs",
        );
    }
    if Some(success) != golden["success"].as_bool() {
        diff.push(
            "wrong_outcome",
            "success",
            &golden["success"],
            answer.get("success"),
            "the transaction's outcome differs",
        );
    }
    if !same(&golden["fee_lamports"], &answer["fee_lamports"]) {
        diff.push(
            "wrong_field",
            "fee_lamports",
            &golden["fee_lamports"],
            answer.get("fee_lamports"),
            "the fee differs",
        );
    }
    // The same signers, each once; their order is not judged.
    let mut expected_signers = address_list(&golden["signers"]);
    expected_signers.sort();
    let mut got_signers: Vec<String> = signers.iter().map(ToString::to_string).collect();
    got_signers.sort();
    if expected_signers != got_signers {
        diff.push(
            "wrong_address",
            "signers",
            &golden["signers"],
            answer.get("signers"),
            "the signers differ",
        );
    }

    let expected = golden["instructions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (i, g) in expected.iter().enumerate() {
        let path = index("instructions", i);
        let Some(g) = g.as_object() else { continue };
        match given.get(i) {
            None => diff.push(
                "missing_instruction",
                &path,
                &Value::Object(g.clone()),
                None,
                "the answer stops before this instruction",
            ),
            Some(got) => {
                if got.program_id.to_string() != golden_str(g, "program_id") {
                    diff.push(
                        "wrong_instruction",
                        &join(&path, "program_id"),
                        &g["program_id"],
                        got.raw.get("program_id"),
                        "a different program is invoked here",
                    );
                } else {
                    // The short program name is optional, but when given it must be right: a
                    // program the pack does not name is `null`, never a guess.
                    let named = got.raw.get("program").filter(|v| !v.is_null());
                    match (g.get("program"), named) {
                        (_, None) => {}
                        (Some(expected @ Value::String(_)), Some(given)) if given == expected => {}
                        (Some(expected @ Value::String(name)), Some(given)) => diff.push(
                            "wrong_field",
                            &join(&path, "program"),
                            expected,
                            Some(given),
                            format!("the program is {name}"),
                        ),
                        (_, Some(given)) => diff.push(
                            "wrong_field",
                            &join(&path, "program"),
                            &Value::Null,
                            Some(given),
                            "the pack does not name this program: `program` must be null",
                        ),
                    }
                    compare_instruction(g, got, &path, diff, &arg_reason);
                }
            }
        }
    }
    for (i, extra) in given.iter().enumerate().skip(expected.len()) {
        diff.push(
            "extra_instruction",
            &index("instructions", i),
            &Value::Null,
            Some(extra.raw),
            "the transaction has no such instruction",
        );
    }
    Ok(())
}

/// Free-text fields a plan may carry; never scanned for signing or sending words.
const PROSE_KEYS: &[&str] = &[
    "notes",
    "note",
    "explanation",
    "reasoning",
    "comment",
    "comments",
    "description",
    "summary",
    "warnings",
];

/// Whether a key, with its value, carries a signature or a signed or serialized transaction.
///
/// Keys that name signed or serialized data (`signed`, `signedTransactionBase64`,
/// `serialized_transaction`, `tx_base64`, `raw_tx`, `wire_transaction` …) count with any value
/// that says something; keys that merely mention signatures (`signature`, `signatures`,
/// `num_required_signatures`, `signature_note`) and a bare `transaction` / `tx` count only when
/// they hold what looks like a signature or an encoded transaction (a long unbroken base58 or
/// base64 string), so a count, a flag or a sentence about signing is not mistaken for one.
fn carries_signature(key: &str, value: &Value) -> bool {
    let k = key.to_lowercase().replace(['_', '-'], "");
    let names_signed_data = k.starts_with("signed")
        || k.starts_with("serialized")
        || ["raw", "wire", "encoded"].iter().any(|prefix| {
            k.strip_prefix(prefix).is_some_and(|rest| {
                ["tx", "transaction"].iter().any(|stem| {
                    rest.strip_prefix(stem).is_some_and(|end| {
                        matches!(end, "" | "base64" | "base58" | "bytes" | "hex")
                    })
                })
            })
        })
        || ["tx", "transaction"].iter().any(|stem| {
            k.strip_prefix(stem)
                .is_some_and(|rest| matches!(rest, "base64" | "base58" | "bytes" | "hex"))
        });
    if names_signed_data {
        return truthy(value);
    }
    (k.contains("signature") || k == "transaction" || k == "tx") && looks_encoded(value)
}

/// A long unbroken base58 / base64 string (a signature is 87-88 base58 characters), or a list
/// holding one.
fn looks_encoded(value: &Value) -> bool {
    match value {
        Value::String(s) => {
            s.len() >= 32
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        }
        Value::Array(items) => items.iter().any(looks_encoded),
        _ => false,
    }
}

/// A step named as a value (`"steps": ["sign", "sendTransaction"]`, `{"method":
/// "sendTransaction"}`): which reason it is, if it signs or sends.
fn step_value(text: &str) -> Option<(&'static str, &'static str)> {
    let v = text.to_lowercase().replace(['_', '-', ' '], "");
    match v.as_str() {
        "sendtransaction"
        | "sendrawtransaction"
        | "sendandconfirmtransaction"
        | "broadcast"
        | "submittransaction"
        | "signandsendtransaction" => Some(("sends_transaction", "a plan is never sent")),
        "sign" | "signtransaction" | "signalltransactions" | "partialsign" => {
            Some(("signature_present", "a plan is never signed"))
        }
        _ => None,
    }
}

/// Whether a key would send the transaction: `send`, `broadcast`, `submit`, `sendTransaction` ...
fn send_key(key: &str) -> bool {
    let k = key.to_lowercase().replace(['_', '-'], "");
    ["send", "sent", "broadcast", "submit"]
        .iter()
        .any(|w| k.starts_with(w))
        || k.contains("sendtransaction")
        || k.contains("sendrawtransaction")
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty() && s != "false" && s != "no",
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(_) => true,
    }
}

/// Looks through the structured parts of the answer for signatures and send steps.
fn scan_for_signing(value: &Value, path: &str, diff: &mut Diff) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let field = join(path, key);
                if PROSE_KEYS.contains(&key.to_lowercase().as_str()) {
                    continue;
                }
                if carries_signature(key, v) {
                    diff.push(
                        "signature_present",
                        &field,
                        &Value::Null,
                        Some(v),
                        "a plan is never signed",
                    );
                } else if send_key(key) && truthy(v) {
                    diff.push(
                        "sends_transaction",
                        &field,
                        &Value::Null,
                        Some(v),
                        "a plan is never sent",
                    );
                }
                // An instruction's arguments are data (a memo may say anything).
                if key != "args" {
                    scan_for_signing(v, &field, diff);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                scan_for_signing(v, &index(path, i), diff);
            }
        }
        Value::String(text) => {
            if let Some((reason, message)) = step_value(text) {
                diff.push(reason, path, &Value::Null, Some(value), message);
            }
        }
        _ => {}
    }
}

fn plan_reason(key: &str) -> &'static str {
    match key {
        "mint" | "token_program" | "decimals" => "wrong_asset",
        "amount_atomic" => "wrong_amount_atomic",
        "fee_atomic" => "wrong_fee",
        "source_token_account" | "destination_token_account" | "authority" => "wrong_address",
        _ => "wrong_field",
    }
}

/// Unsigned transfer plan.
pub fn plan(golden: &Object, answer: &Object, diff: &mut Diff) -> Checked<()> {
    for key in [
        "mint",
        "token_program",
        "source_token_account",
        "destination_token_account",
        "authority",
    ] {
        expect_address(require(answer, key, "")?, key)?;
    }
    expect_int(require(answer, "decimals", "")?, "decimals")?;
    expect_u64(require(answer, "amount_atomic", "")?, "amount_atomic")?;
    if golden.contains_key("fee_atomic") {
        expect_u64(require(answer, "fee_atomic", "")?, "fee_atomic")?;
    }
    let given = instructions(answer, true)?;

    let mut top = golden.clone();
    let expected = top
        .remove("instructions")
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    compare_object(&top, answer, "", diff, &plan_reason);
    if !golden.contains_key("fee_atomic")
        && let Some(fee) = answer
            .get("fee_atomic")
            .filter(|v| !v.is_null() && !same(&Value::String("0".to_owned()), v))
    {
        diff.push(
            "wrong_fee",
            "fee_atomic",
            &Value::String("0".to_owned()),
            Some(fee),
            "this mint charges no transfer fee",
        );
    }
    scan_for_signing(&Value::Object(answer.clone()), "", diff);

    // Plans are matched by (program, instruction), not position: a memo may come before or
    // after the transfer. Left-overs with the same program are a wrong instruction; the rest
    // are missing or extra. An instruction under another program is another instruction: the
    // known-wrong plan `token-2022` (transfer_checked under Token-2022 instead of Token) is
    // therefore `missing_instruction` + `extra_instruction`, plus `wrong_asset` for its
    // `token_program`.
    let mut unmatched: Vec<usize> = (0..given.len()).collect();
    let mut leftovers: Vec<&Object> = Vec::new();
    for g in expected.iter().filter_map(Value::as_object) {
        let found = unmatched.iter().position(|&i| {
            given[i].program_id.to_string() == golden_str(g, "program_id")
                && given[i].name == g.get("instruction").and_then(Value::as_str)
        });
        match found {
            Some(pos) => {
                let i = unmatched.remove(pos);
                compare_instruction(g, &given[i], &index("instructions", i), diff, &arg_reason);
            }
            None => leftovers.push(g),
        }
    }
    for g in leftovers {
        let same_program = unmatched
            .iter()
            .position(|&i| given[i].program_id.to_string() == golden_str(g, "program_id"));
        match same_program {
            Some(pos) => {
                let i = unmatched.remove(pos);
                diff.push(
                    "wrong_instruction",
                    &join(&index("instructions", i), "instruction"),
                    &g["instruction"],
                    given[i].raw.get("instruction"),
                    format!("expected `{}`", golden_str(g, "instruction")),
                );
            }
            None => diff.push(
                "missing_instruction",
                "instructions",
                &Value::Object(g.clone()),
                None,
                format!("the plan lacks `{}`", golden_str(g, "instruction")),
            ),
        }
    }
    for i in unmatched {
        diff.push(
            "extra_instruction",
            &index("instructions", i),
            &Value::Null,
            Some(given[i].raw),
            "the task does not require this instruction",
        );
    }
    Ok(())
}

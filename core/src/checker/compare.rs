//! Schema checks and value comparison shared by the families.

use serde_json::{Map, Value};

use super::Detail;
use super::answer::kind;
use crate::solana::Address;

/// Differences found so far (each one a `fail` reason).
#[derive(Debug, Default)]
pub struct Diff {
    pub details: Vec<Detail>,
}

impl Diff {
    /// Records a difference between the golden value and the answer's.
    pub fn push(
        &mut self,
        reason: &str,
        field: &str,
        expected: &Value,
        got: Option<&Value>,
        message: impl Into<String>,
    ) {
        self.details.push(Detail {
            reason: reason.to_owned(),
            field: field.to_owned(),
            // Answers are untrusted: keep them hashable (no floats or unsafe integers).
            expected: Some(crate::canonical::make_safe(expected)),
            got: got.map(crate::canonical::make_safe),
            message: message.into(),
        });
    }
}

/// A schema violation makes the whole answer `invalid_output`.
pub type Checked<T> = Result<T, Box<Detail>>;

pub fn violation(field: &str, message: impl Into<String>) -> Box<Detail> {
    Box::new(Detail {
        reason: "schema_violation".to_owned(),
        field: field.to_owned(),
        expected: None,
        got: None,
        message: message.into(),
    })
}

pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

pub fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

pub fn require<'a>(object: &'a Map<String, Value>, key: &str, path: &str) -> Checked<&'a Value> {
    object.get(key).ok_or_else(|| {
        violation(
            &join(path, key),
            format!("required field `{}` is missing", join(path, key)),
        )
    })
}

/// A u64 given as a decimal string or a non-negative JSON integer. Floats, signs, spaces and
/// exponents are refused: `"12.5"` is not an amount in atomic units.
pub fn as_u64(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if canonical_digits(s) => s.parse().ok(),
        _ => None,
    }
}

/// Plain decimal digits without leading zeros (`"0"` itself is fine): one spelling per number.
fn canonical_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
}

/// An i64 given as a JSON integer or a decimal string with an optional leading `-`.
pub fn as_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let digits = s.strip_prefix('-').unwrap_or(s);
            canonical_digits(digits).then(|| s.parse().ok()).flatten()
        }
        _ => None,
    }
}

/// A u64 field. The violation names what the answer gave (`not a decimal string: "12.5"`) and
/// carries it in `got`, so a report shows the offending value rather than only its JSON kind.
pub fn expect_u64(value: &Value, path: &str) -> Checked<u64> {
    as_u64(value).ok_or_else(|| {
        violation_got(
            path,
            value,
            format!(
                "`{path}` must be a non-negative integer (a JSON integer or a string of digits), not {}",
                describe_non_integer(value)
            ),
        )
    })
}

pub fn expect_int(value: &Value, path: &str) -> Checked<i64> {
    as_i64(value).ok_or_else(|| {
        violation_got(
            path,
            value,
            format!(
                "`{path}` must be an integer, not {}",
                describe_non_integer(value)
            ),
        )
    })
}

/// A schema violation that shows the answer's value.
fn violation_got(path: &str, value: &Value, message: String) -> Box<Detail> {
    let mut detail = violation(path, message);
    // Answers are untrusted: keep them hashable (no floats or unsafe integers).
    detail.got = Some(crate::canonical::make_safe(value));
    detail
}

/// What a value that is not an integer of the expected kind is, with the value itself for
/// strings and numbers (the two kinds a model gets nearly right).
fn describe_non_integer(value: &Value) -> String {
    match value {
        Value::String(_) => format!("a decimal string: {value}"),
        Value::Number(n) if n.is_f64() => format!("a fractional number: {n}"),
        Value::Number(n) if n.is_i64() => format!("a negative number: {n}"),
        Value::Number(n) => format!("a number out of range: {n}"),
        other => kind(other).to_owned(),
    }
}

pub fn expect_bool(value: &Value, path: &str) -> Checked<bool> {
    value.as_bool().ok_or_else(|| {
        violation(
            path,
            format!("`{path}` must be true or false, not {}", kind(value)),
        )
    })
}

pub fn expect_str<'a>(value: &'a Value, path: &str) -> Checked<&'a str> {
    value.as_str().ok_or_else(|| {
        violation(
            path,
            format!("`{path}` must be a string, not {}", kind(value)),
        )
    })
}

pub fn expect_array<'a>(value: &'a Value, path: &str) -> Checked<&'a Vec<Value>> {
    value.as_array().ok_or_else(|| {
        violation(
            path,
            format!("`{path}` must be an array, not {}", kind(value)),
        )
    })
}

pub fn expect_object<'a>(value: &'a Value, path: &str) -> Checked<&'a Map<String, Value>> {
    value.as_object().ok_or_else(|| {
        violation(
            path,
            format!("`{path}` must be an object, not {}", kind(value)),
        )
    })
}

/// A base58 address. A string that is not one is `invalid_address` (structure), not a wrong
/// address (content).
pub fn expect_address(value: &Value, path: &str) -> Checked<Address> {
    let text = expect_str(value, path)?;
    text.parse().map_err(|_| {
        Box::new(Detail {
            reason: "invalid_address".to_owned(),
            field: path.to_owned(),
            expected: None,
            got: Some(crate::canonical::make_safe(value)),
            message: format!("`{path}` is not a base58 address of 32 bytes"),
        })
    })
}

pub fn expect_opt_address(value: &Value, path: &str) -> Checked<Option<Address>> {
    if value.is_null() {
        Ok(None)
    } else {
        expect_address(value, path).map(Some)
    }
}

pub fn expect_addresses(value: &Value, path: &str) -> Checked<Vec<Address>> {
    expect_array(value, path)?
        .iter()
        .enumerate()
        .map(|(i, v)| expect_address(v, &index(path, i)))
        .collect()
}

/// Whether `got` says what `golden` says. Golden decimal strings match equal integers and
/// vice versa; objects match when every golden key matches (extra keys are allowed); arrays
/// match element by element. A golden string of digits too long for a u64 is not a number —
/// the System program's address `111…1` is one — and matches only itself.
pub fn same(golden: &Value, got: &Value) -> bool {
    match golden {
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            match s.parse::<u64>() {
                Ok(g) => as_u64(got) == Some(g),
                Err(_) => got.as_str() == Some(s),
            }
        }
        Value::String(s) => got.as_str() == Some(s),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(g), _) => as_i64(got) == Some(g),
            (None, Some(g)) => as_u64(got) == Some(g),
            _ => false,
        },
        Value::Bool(b) => got.as_bool() == Some(*b),
        Value::Null => got.is_null(),
        Value::Array(items) => got.as_array().is_some_and(|g| {
            g.len() == items.len() && items.iter().zip(g).all(|(a, b)| same(a, b))
        }),
        Value::Object(map) => got.as_object().is_some_and(|g| {
            map.iter()
                .all(|(k, v)| g.get(k).is_some_and(|x| same(v, x)))
        }),
    }
}

/// Compares every key of a golden object with the answer's, reporting leaf differences with
/// `reason_for(field_name)`. A missing key is a difference too (`got` absent).
pub fn compare_object(
    golden: &Map<String, Value>,
    got: &Map<String, Value>,
    path: &str,
    diff: &mut Diff,
    reason_for: &dyn Fn(&str) -> &'static str,
) {
    for (key, g) in golden {
        let field = join(path, key);
        match (g, got.get(key)) {
            (Value::Object(inner), Some(Value::Object(other))) => {
                compare_object(inner, other, &field, diff, reason_for);
            }
            (_, Some(v)) if same(g, v) => {}
            (_, v) => diff.push(
                reason_for(key),
                &field,
                g,
                v,
                format!("`{field}` differs from the golden record"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_and_decimal_strings_are_interchangeable() {
        assert!(same(&json!("6"), &json!(6)));
        assert!(same(&json!(6), &json!("6")));
        assert!(same(
            &json!("18446744073709551615"),
            &json!(18_446_744_073_709_551_615_u64)
        ));
        assert!(!same(&json!("12500000"), &json!(12.5)));
        assert!(!same(&json!("12500000"), &json!("12,500,000")));
        assert!(!same(&json!("1"), &json!("+1")));
        assert!(!same(&json!(-5), &json!("5")));
        assert!(same(&json!(-5), &json!("-5")));
        assert!(
            !same(&json!("12500000"), &json!("0012500000")),
            "leading zeros"
        );
        assert!(same(&json!("0"), &json!("0")));
    }

    #[test]
    fn a_digit_string_past_u64_is_text_not_a_number() {
        let system = json!("11111111111111111111111111111111");
        assert!(
            same(&system, &system),
            "the System program's address matches itself"
        );
        assert!(!same(&system, &json!("1111111111111111111111111111111")));
        assert!(!same(&system, &json!(1.111_111_111_111_111e31)));
        assert!(same(
            &json!(["11111111111111111111111111111111"]),
            &json!(["11111111111111111111111111111111"])
        ));
    }

    #[test]
    fn objects_allow_extra_keys_arrays_do_not_allow_extra_items() {
        assert!(same(&json!({"a": 1}), &json!({"a": "1", "notes": "x"})));
        assert!(!same(&json!([1]), &json!([1, 2])));
        assert!(!same(
            &json!(null),
            &json!("11111111111111111111111111111111")
        ));
    }
}

//! Canonical JSON (RFC 8785, JSON Canonicalization Scheme) for hashing manifests and reports.
//!
//! Objects have their keys sorted by UTF-16 code units, no whitespace is emitted, strings are
//! escaped exactly as ECMAScript's `JSON.stringify` does (`\"`, `\\`, `\b \f \n \r \t`, other
//! control characters as `\u00xx`, everything else literal). Numbers are restricted to integers
//! of magnitude at most 2^53 − 1, whose JCS form is their plain decimal form; anything else is an
//! error, so money and large counters travel as decimal strings. Anyone holding the JSON can
//! recompute a hash with any RFC 8785 implementation.

use serde_json::Value;

use crate::digest::Sha256Digest;

/// The largest integer JCS (IEEE-754 doubles) represents exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a value has no canonical form here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// A float, or an integer beyond ±(2^53 − 1).
    #[error(
        "{path}: number {number} is not an integer of magnitude at most 2^53 - 1; write it as a decimal string"
    )]
    Number { path: String, number: String },
}

/// A copy of `value` that always has a canonical form: numbers that are not safe integers
/// (floats, integers beyond 2^53 − 1) become their decimal strings. For values that come from
/// outside (a model's answer) and must still enter a hashed report.
pub fn make_safe(value: &Value) -> Value {
    match value {
        Value::Number(n) => {
            let safe = n.as_u64().is_some_and(|u| u <= MAX_SAFE_INTEGER)
                || n.as_i64()
                    .is_some_and(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER);
            if safe {
                value.clone()
            } else {
                Value::String(n.to_string())
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(make_safe).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), make_safe(v))).collect())
        }
        other => other.clone(),
    }
}

/// The canonical text of `value`.
pub fn to_string(value: &Value) -> Result<String, CanonicalError> {
    let mut out = String::new();
    write(value, &mut out, "$")?;
    Ok(out)
}

/// SHA-256 of the canonical text.
pub fn hash(value: &Value) -> Result<Sha256Digest, CanonicalError> {
    Ok(Sha256Digest::of(to_string(value)?.as_bytes()))
}

fn write(value: &Value, out: &mut String, path: &str) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let safe = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u <= MAX_SAFE_INTEGER,
                (None, Some(i)) => i.unsigned_abs() <= MAX_SAFE_INTEGER,
                _ => false,
            };
            if !safe {
                return Err(CanonicalError::Number {
                    path: path.to_owned(),
                    number: n.to_string(),
                });
            }
            out.push_str(&n.to_string());
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out, &format!("{path}[{i}]"))?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write(&map[key], out, &format!("{path}.{key}"))?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sorts_keys_by_utf16_and_drops_whitespace() {
        // RFC 8785 §3.2.3's ordering example: "\u20ac" (€) sorts after "\r" and before "\ud83d\ude00"
        let v = json!({"€": 1, "\r": 2, "😀": 3, "1": 4, "a": {"b": [1, true, null]}});
        assert_eq!(
            to_string(&v).unwrap(),
            "{\"\\r\":2,\"1\":4,\"a\":{\"b\":[1,true,null]},\"€\":1,\"😀\":3}"
        );
    }

    #[test]
    fn escapes_like_ecmascript() {
        let v = json!("\u{0}\u{1f}\"\\\u{7f}\u{2028}é");
        assert_eq!(
            to_string(&v).unwrap(),
            "\"\\u0000\\u001f\\\"\\\\\u{7f}\u{2028}é\""
        );
    }

    #[test]
    fn refuses_floats_and_unsafe_integers() {
        let refused = |path: &str, number: &str| {
            Err(CanonicalError::Number {
                path: path.to_owned(),
                number: number.to_owned(),
            })
        };
        assert_eq!(to_string(&json!(1.5)), refused("$", "1.5"));
        assert_eq!(
            to_string(&json!(u64::MAX)),
            refused("$", "18446744073709551615")
        );
        assert_eq!(
            to_string(&json!({"cap": 9_007_199_254_740_992_u64})),
            refused("$.cap", "9007199254740992")
        );
        assert_eq!(
            to_string(&json!({"a": [1, -9_007_199_254_740_992_i64]})),
            refused("$.a[1]", "-9007199254740992")
        );
        assert_eq!(
            CanonicalError::Number {
                path: "$.cap".to_owned(),
                number: "1.5".to_owned()
            }
            .to_string(),
            "$.cap: number 1.5 is not an integer of magnitude at most 2^53 - 1; write it as a decimal string"
        );
        assert_eq!(
            to_string(&json!(9_007_199_254_740_991_u64)).unwrap(),
            "9007199254740991"
        );
        assert_eq!(
            to_string(&json!(-9_007_199_254_740_991_i64)).unwrap(),
            "-9007199254740991"
        );
    }
}

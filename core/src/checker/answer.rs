//! Reading a model's answer: exactly one JSON object, bare or inside one fenced block, parsed
//! strictly (a duplicate key is an error: `{"decimals":9,"decimals":6}` must not mean whatever
//! the parser's last-wins rule makes of it).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Largest answer the checker reads. Larger answers are `invalid_output` before any parsing.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// Why an answer is not one JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerError {
    /// No JSON object: neither the whole text nor exactly one fenced block.
    NotJson(String),
    /// More than one candidate answer.
    MultipleAnswers,
    /// An object repeats a key.
    DuplicateKey(String),
    /// Over [`MAX_ANSWER_BYTES`].
    TooLarge(usize),
}

impl AnswerError {
    /// The reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotJson(_) => "not_json",
            Self::MultipleAnswers => "multiple_answers",
            Self::DuplicateKey(_) => "duplicate_key",
            Self::TooLarge(_) => "answer_too_large",
        }
    }

    /// A one-line explanation.
    pub fn message(&self) -> String {
        match self {
            Self::NotJson(why) => format!("the answer is not one JSON object: {why}"),
            Self::MultipleAnswers => {
                "the answer holds more than one JSON object or fenced block".to_owned()
            }
            Self::DuplicateKey(key) => format!("a JSON object repeats the key `{key}`"),
            Self::TooLarge(n) => {
                format!("the answer is {n} bytes; at most {MAX_ANSWER_BYTES} are read")
            }
        }
    }
}

/// A JSON value that refuses duplicate keys.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

const DUPLICATE: &str = "duplicate key ";

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Strict(value) = map.next_value()?;
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("{DUPLICATE}`{key}`")));
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Parses text that must hold exactly one JSON value and nothing else.
fn parse_one(text: &str) -> Result<Value, AnswerError> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Strict>();
    let first = match stream.next() {
        None => return Err(AnswerError::NotJson("it is empty".to_owned())),
        Some(Err(e)) => return Err(classify(&e)),
        Some(Ok(Strict(v))) => v,
    };
    match stream.next() {
        None => Ok(first),
        Some(Ok(_)) => Err(AnswerError::MultipleAnswers),
        Some(Err(e)) => Err(classify(&e)),
    }
}

fn classify(e: &serde_json::Error) -> AnswerError {
    let message = e.to_string();
    match message.find(DUPLICATE) {
        Some(at) => {
            let rest = &message[at + DUPLICATE.len()..];
            let key = rest.split('`').nth(1).unwrap_or(rest);
            AnswerError::DuplicateKey(key.to_owned())
        }
        None => AnswerError::NotJson(message),
    }
}

/// The fenced code blocks of a Markdown text, (info string, content), and the prose outside them.
fn split_fences(text: &str) -> (Vec<(String, String)>, String) {
    let mut prose = String::new();
    let mut blocks = Vec::new();
    let mut open: Option<(String, String, usize)> = None; // (info, content, fence length)
    for line in text.lines() {
        let trimmed = line.trim_start();
        let fence_len = trimmed.chars().take_while(|c| *c == '`').count();
        match &mut open {
            None if fence_len >= 3 => {
                open = Some((
                    trimmed[fence_len..].trim().to_lowercase(),
                    String::new(),
                    fence_len,
                ));
            }
            Some((_, _, len)) if fence_len >= *len && trimmed[fence_len..].trim().is_empty() => {
                if let Some((info, content, _)) = open.take() {
                    blocks.push((info, content));
                }
            }
            Some((_, content, _)) => {
                content.push_str(line);
                content.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    (blocks, prose)
}

/// Whether prose holds something a reader could take for a second answer: a JSON object that
/// gives one of the answer's own top-level fields (`Correction: {"decimals": 9}`). An empty `{}`
/// or an object about something else (the `{"unsupported": …}` form, an example) is prose.
fn holds_a_rival(prose: &str, answer: &Map<String, Value>) -> bool {
    prose.match_indices('{').any(|(at, _)| {
        match serde_json::Deserializer::from_str(&prose[at..])
            .into_iter::<Value>()
            .next()
        {
            Some(Ok(Value::Object(rival))) => rival.keys().any(|k| answer.contains_key(k)),
            _ => false,
        }
    })
}

/// Extracts the answer object.
pub fn extract(text: &str) -> Result<Map<String, Value>, AnswerError> {
    if text.len() > MAX_ANSWER_BYTES {
        return Err(AnswerError::TooLarge(text.len()));
    }
    // A byte-order mark some editors and tools put first is not part of the answer.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let trimmed = text.trim();
    let value = if trimmed.starts_with('{') {
        parse_one(trimmed)?
    } else {
        let (blocks, prose) = split_fences(text);
        let candidates: Vec<String> = blocks
            .into_iter()
            .filter(|(info, content)| {
                matches!(info.as_str(), "" | "json" | "jsonc" | "json5")
                    && content.trim_start().starts_with('{')
            })
            .map(|(_, content)| content)
            .collect();
        match candidates.as_slice() {
            [] => {
                return Err(AnswerError::NotJson(
                    "expected a JSON object, or one ```json fenced block holding one".to_owned(),
                ));
            }
            [one] => {
                let value = parse_one(one.trim())?;
                // A JSON object in the prose beside the block that gives one of the answer's
                // fields could be read as the answer too.
                if let Value::Object(answer) = &value
                    && holds_a_rival(&prose, answer)
                {
                    return Err(AnswerError::MultipleAnswers);
                }
                value
            }
            _ => return Err(AnswerError::MultipleAnswers),
        }
    };
    match value {
        Value::Object(map) => Ok(map),
        other => Err(AnswerError::NotJson(format!(
            "the JSON is {}, not an object",
            kind(&other)
        ))),
    }
}

/// The JSON type name of a value, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_and_fenced_objects_are_read() {
        let want = serde_json::json!({"a": 1});
        for text in [
            "{\"a\":1}",
            "  {\"a\":1}\n",
            "Here it is:\n```json\n{\"a\": 1}\n```\nDone.",
            "```\n{\"a\": 1}\n```",
            "\u{feff}{\"a\":1}",
        ] {
            let got = extract(text).unwrap_or_else(|e| panic!("{text:?}: {}", e.message()));
            assert_eq!(Value::Object(got), want, "{text:?}");
        }
    }

    #[test]
    fn a_json_object_in_the_prose_beside_the_block_is_a_second_answer() {
        for text in [
            "```json\n{\"a\": 1}\n```\nCorrection: {\"a\": 2}",
            "Maybe {\"a\": 2}.\n```json\n{\"a\": 1}\n```",
        ] {
            assert_eq!(
                extract(text).unwrap_err().code(),
                "multiple_answers",
                "{text:?}"
            );
        }
        // Braces that are not an object, an empty object and an object about something else
        // are prose.
        for text in [
            "Sets like {a, b} aside:\n```json\n{\"a\": 1}\n```\n",
            "Unknown programs get args {}.\n```json\n{\"a\": 1}\n```\n",
            "Not {\"unsupported\": {\"needs\": \"script\"}} here:\n```json\n{\"a\": 1}\n```\n",
        ] {
            let got = extract(text).unwrap_or_else(|e| panic!("{text:?}: {}", e.message()));
            assert_eq!(Value::Object(got), serde_json::json!({"a": 1}), "{text:?}");
        }
    }

    #[test]
    fn everything_else_is_refused_with_its_reason() {
        assert_eq!(extract("no json here").unwrap_err().code(), "not_json");
        assert_eq!(
            extract("The answer is {\"a\":1}").unwrap_err().code(),
            "not_json"
        );
        assert_eq!(extract("[1,2]").unwrap_err().code(), "not_json");
        assert_eq!(
            extract("{\"a\":1} {\"a\":2}").unwrap_err().code(),
            "multiple_answers"
        );
        assert_eq!(
            extract("```json\n{}\n```\n```json\n{}\n```")
                .unwrap_err()
                .code(),
            "multiple_answers"
        );
        assert_eq!(
            extract("{\"d\":9,\"d\":6}").unwrap_err(),
            AnswerError::DuplicateKey("d".into())
        );
        assert_eq!(
            extract("{\"x\":{\"d\":9,\"d\":6}}").unwrap_err().code(),
            "duplicate_key"
        );
        assert_eq!(
            extract(&" ".repeat(MAX_ANSWER_BYTES + 1))
                .unwrap_err()
                .code(),
            "answer_too_large"
        );
        assert_eq!(extract("{\"a\":1").unwrap_err().code(), "not_json");
    }
}

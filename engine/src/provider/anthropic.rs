//! Anthropic Messages: `POST {base}/v1/messages`, headers `x-api-key` and
//! `anthropic-version: 2023-06-01`. Anthropic reports no system fingerprint; the model id it
//! echoes is recorded.
//!
//! Tool use (progressive delivery): the tools go in `tools` with `tool_choice`
//! `{"type":"auto","disable_parallel_tool_use":true}`; each earlier turn is an assistant message
//! of its text and `tool_use` blocks, then a user message of the matching `tool_result` blocks
//! and nothing else (the API wants the results first in that message).

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    CallError, Exchange, ModelRequest, ModelResponse, Provider, Scrubber, ToolCall, ToolDef,
    client, send, token_count,
};
use crate::keys::Secret;
use skilltrial_core::profile::ProviderKind;

/// The Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct Anthropic {
    base_url: String,
    key: Secret,
    scrubber: Scrubber,
    client: reqwest::blocking::Client,
}

impl Anthropic {
    /// A client for `base_url` with `key`, each request limited to `timeout`.
    pub fn new(base_url: &str, key: Secret, timeout: Duration) -> Result<Self, CallError> {
        Ok(Self {
            base_url: super::api_root(base_url),
            scrubber: Scrubber::new(Some(&key)),
            key,
            client: client(timeout)?,
        })
    }
}

/// A 5-minute cache entry: `{"type": "ephemeral"}`.
fn ephemeral() -> Value {
    json!({ "type": "ephemeral" })
}

/// The first user message's content: the text as one string, or with caching on and a stable
/// prefix (the inline skill block), that prefix as a text block of its own carrying the cache
/// marker, then the rest (the task).
fn user_content(request: &ModelRequest) -> Value {
    let split = request.stable_prefix.min(request.user.len());
    match (
        request.cache,
        request.user.get(..split),
        request.user.get(split..),
    ) {
        (true, Some(stable), Some(rest)) if split > 0 => json!([
            { "type": "text", "text": stable, "cache_control": ephemeral() },
            { "type": "text", "text": rest },
        ]),
        _ => json!(request.user),
    }
}

fn temperature(text: &str) -> Value {
    text.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

impl Provider for Anthropic {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }

    fn body(&self, request: &ModelRequest) -> Vec<u8> {
        let mut messages = vec![json!({ "role": "user", "content": user_content(request) })];
        for exchange in &request.history {
            messages.extend(exchange_messages(exchange));
        }
        let system = if request.cache {
            // The breakpoint after the system text covers the tools before it too.
            json!([{ "type": "text", "text": request.system, "cache_control": ephemeral() }])
        } else {
            json!(request.system)
        };
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_output_tokens,
            "temperature": temperature(&request.temperature),
            "system": system,
            "messages": messages,
        });
        // Only a request with tools carries the tool keys: an inline body stays as it was.
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(request.tools.iter().map(tool).collect());
            body["tool_choice"] = json!({ "type": "auto", "disable_parallel_tool_use": true });
            if request.cache {
                // Automatic caching: the growing history of a trial's turns is written once and
                // read by the next turn.
                body["cache_control"] = ephemeral();
            }
        }
        body.to_string().into_bytes()
    }

    fn call(&self, request: &ModelRequest) -> Result<ModelResponse, CallError> {
        let mut headers = vec![
            ("x-api-key", self.key.expose().to_owned()),
            ("anthropic-version", "2023-06-01".to_owned()),
        ];
        if let Some(attempt) = &request.attempt {
            headers.push((super::ATTEMPT_HEADER, attempt.clone()));
        }
        send(
            &self.client,
            &format!("{}/v1/messages", self.base_url),
            &headers,
            &self.scrubber,
            self.body(request),
            "request-id",
            parse,
        )
    }
}

/// A tool definition in Anthropic's shape.
fn tool(def: &ToolDef) -> Value {
    json!({
        "name": def.name,
        "description": def.description,
        "input_schema": def.input_schema,
    })
}

/// One earlier turn: the assistant message (its text, if any, then its `tool_use` blocks) and
/// the user message of the runner's `tool_result` blocks, the results alone.
fn exchange_messages(exchange: &Exchange) -> Vec<Value> {
    let mut content = Vec::new();
    if !exchange.text.is_empty() {
        content.push(json!({ "type": "text", "text": exchange.text }));
    }
    for call in &exchange.calls {
        content.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": input_object(&call.arguments),
        }));
    }
    let mut messages = vec![json!({ "role": "assistant", "content": content })];
    if !exchange.replies.is_empty() {
        let results: Vec<Value> = exchange
            .replies
            .iter()
            .map(|reply| {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": reply.call_id,
                    "content": reply.content,
                });
                // Present only on errors, as the API's own examples write it.
                if reply.is_error {
                    block["is_error"] = Value::Bool(true);
                }
                block
            })
            .collect();
        messages.push(json!({ "role": "user", "content": results }));
    }
    messages
}

/// A call's `input` as sent back: its arguments parsed, an object; `{}` when they are not a JSON
/// object (Anthropic only accepts an object there; such a call was answered with an error).
fn input_object(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// The `tool_use` blocks of a response's content, in order.
///
/// A block without a string `id` or `name` makes the whole response malformed (so the call is
/// `Lost`, as for a response without `content`): such a call cannot be answered, and a reply
/// that skipped it would break the pairing of calls and results the next request needs. The
/// `input` is kept as its compact JSON whatever it holds; a block without one gets empty
/// arguments, which are not JSON, so the runner answers it with a bad-arguments error.
fn tool_calls(content: &[Value]) -> Result<Vec<ToolCall>, String> {
    content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .enumerate()
        .map(|(i, block)| {
            let field = |key: &str| {
                block
                    .get(key)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("the tool_use block {i} has no string `{key}`"))
            };
            Ok(ToolCall {
                id: super::echoable_call_id(i, &field("id")?)?,
                name: field("name")?,
                arguments: block.get("input").map(Value::to_string).unwrap_or_default(),
            })
        })
        .collect()
}

fn parse(bytes: &[u8]) -> Result<ModelResponse, String> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the response is not JSON: {e}"))?;
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or("the response has no `content` array")?;
    let text: String = content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("");
    let tool_calls = tool_calls(content)?;
    let usage = v.get("usage");
    // Anthropic's `input_tokens` leaves out what was read from or written to the cache; the
    // total billed is the three together. An unreadable cache count makes the total unknown.
    let cache_read = token_count(usage, "cache_read_input_tokens");
    let cache_write = token_count(usage, "cache_creation_input_tokens");
    let input_tokens = match (
        token_count(usage, "input_tokens"),
        &cache_read,
        &cache_write,
    ) {
        (Ok(Some(input)), Ok(read), Ok(write)) => input
            .checked_add(read.unwrap_or(0))
            .and_then(|t| t.checked_add(write.unwrap_or(0))),
        _ => None,
    };
    Ok(ModelResponse {
        text,
        tool_calls,
        // The `request-id` header identifies the request; the body's `id` is the message id.
        request_id: None,
        model_reported: v.get("model").and_then(Value::as_str).map(str::to_owned),
        system_fingerprint: None,
        input_tokens,
        cache_read_tokens: cache_read.ok().flatten(),
        cache_write_tokens: cache_write.ok().flatten(),
        output_tokens: usage
            .and_then(|u| u.get("output_tokens"))
            .and_then(Value::as_u64),
        stop_reason: v
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..ModelResponse::default()
    })
}

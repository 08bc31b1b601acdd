//! OpenAI-compatible chat completions: `POST {base}/v1/chat/completions` with a bearer key (when
//! one is set). Serves OpenAI itself and local servers (vLLM, llama.cpp, Ollama). OpenAI's own
//! API takes `max_completion_tokens`; other servers get the older `max_tokens`.
//!
//! Tool use (progressive delivery): the tools go in `tools` as functions, with `tool_choice`
//! `"auto"` and `parallel_tool_calls` false; each earlier turn is the assistant message (its text
//! or `null`, and its `tool_calls`) and one `tool` message per reply. Chat completions have no
//! error flag on a tool message: an error travels as the reply's text.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    CallError, Exchange, ModelRequest, ModelResponse, Provider, Scrubber, ToolCall, ToolDef,
    client, send, token_count,
};
use crate::keys::Secret;
use skilltrial_core::profile::ProviderKind;

/// An OpenAI-compatible chat completions API.
#[derive(Debug, Clone)]
pub struct OpenAi {
    base_url: String,
    key: Option<Secret>,
    scrubber: Scrubber,
    client: reqwest::blocking::Client,
}

impl OpenAi {
    /// A client for `base_url`, with a key if the server wants one.
    pub fn new(base_url: &str, key: Option<Secret>, timeout: Duration) -> Result<Self, CallError> {
        Ok(Self {
            base_url: super::api_root(base_url),
            scrubber: Scrubber::new(key.as_ref()),
            key,
            client: client(timeout)?,
        })
    }

    fn is_openai(&self) -> bool {
        self.base_url.starts_with("https://api.openai.com")
    }
}

impl Provider for OpenAi {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Openai
    }

    fn body(&self, request: &ModelRequest) -> Vec<u8> {
        let limit_key = if self.is_openai() {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        let temperature = request
            .temperature
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number);
        let mut messages = vec![
            json!({ "role": "system", "content": request.system }),
            json!({ "role": "user", "content": request.user }),
        ];
        for exchange in &request.history {
            messages.extend(exchange_messages(exchange));
        }
        let mut body = json!({
            "model": request.model,
            "temperature": temperature,
            "messages": messages,
        });
        body[limit_key] = json!(request.max_output_tokens);
        // Only a request with tools carries the tool keys: an inline body stays as it was.
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(request.tools.iter().map(tool).collect());
            body["tool_choice"] = json!("auto");
            body["parallel_tool_calls"] = json!(false);
        }
        body.to_string().into_bytes()
    }

    fn call(&self, request: &ModelRequest) -> Result<ModelResponse, CallError> {
        let mut headers: Vec<(&str, String)> = self
            .key
            .iter()
            .map(|k| ("authorization", format!("Bearer {}", k.expose())))
            .collect();
        if let Some(attempt) = &request.attempt {
            headers.push((super::ATTEMPT_HEADER, attempt.clone()));
        }
        send(
            &self.client,
            &format!("{}/v1/chat/completions", self.base_url),
            &headers,
            &self.scrubber,
            self.body(request),
            "x-request-id",
            parse,
        )
    }
}

/// A tool definition as a chat-completions function.
fn tool(def: &ToolDef) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": def.name,
            "description": def.description,
            "parameters": def.input_schema,
        },
    })
}

/// One earlier turn: the assistant message as the model sent it (text, or `null` when it only
/// called tools; the arguments verbatim) and one `tool` message per reply.
fn exchange_messages(exchange: &Exchange) -> Vec<Value> {
    let content = if exchange.text.is_empty() {
        Value::Null
    } else {
        Value::String(exchange.text.clone())
    };
    let mut assistant = json!({ "role": "assistant", "content": content });
    // An empty `tool_calls` array is refused by some servers: the key is left out instead.
    if !exchange.calls.is_empty() {
        assistant["tool_calls"] = exchange
            .calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": { "name": call.name, "arguments": call.arguments },
                })
            })
            .collect();
    }
    let mut messages = vec![assistant];
    messages.extend(exchange.replies.iter().map(
        |reply| json!({ "role": "tool", "tool_call_id": reply.call_id, "content": reply.content }),
    ));
    messages
}

/// The `tool_calls` of a message, in order (none when absent or `null`).
///
/// A call without a string `id` or `function.name`, or a `tool_calls` that is not an array,
/// makes the whole response malformed (so the call is `Lost`, as for a response without
/// choices): such a call cannot be answered, and a reply that skipped it would break the pairing
/// of calls and replies the next request needs. `function.arguments` is kept verbatim — the
/// model does not always write valid JSON there, and the runner answers that with a
/// bad-arguments error; a server that sends an object instead of a string gets it kept as
/// compact JSON, and missing arguments are empty.
fn tool_calls(message: &Value) -> Result<Vec<ToolCall>, String> {
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(calls)) => calls,
        Some(_) => return Err("the message's `tool_calls` is not an array".to_owned()),
    };
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let function = call.get("function");
            let id = call.get("id").and_then(Value::as_str);
            let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
            let (Some(id), Some(name)) = (id, name) else {
                return Err(format!(
                    "the tool call {i} has no string `id` or `function.name`"
                ));
            };
            let arguments = match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(text)) => text.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            Ok(ToolCall {
                id: super::echoable_call_id(i, id)?,
                name: name.to_owned(),
                arguments,
            })
        })
        .collect()
}

fn parse(bytes: &[u8]) -> Result<ModelResponse, String> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the response is not JSON: {e}"))?;
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or("the response has no choices")?;
    let message = choice
        .get("message")
        .ok_or("the first choice has no message content")?;
    let tool_calls = tool_calls(message)?;
    // A message that only calls tools has `content: null`: its text is empty. Without calls, a
    // message needs its text.
    let text = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) if !tool_calls.is_empty() => String::new(),
        _ => return Err("the first choice has no message content".to_owned()),
    };
    let usage = v.get("usage");
    // `prompt_tokens` already includes the cached tokens: it is the whole input billed.
    let details = usage.and_then(|u| u.get("prompt_tokens_details"));
    Ok(ModelResponse {
        text,
        tool_calls,
        cache_read_tokens: token_count(details, "cached_tokens").ok().flatten(),
        cache_write_tokens: token_count(details, "cache_write_tokens").ok().flatten(),
        request_id: None,
        model_reported: v.get("model").and_then(Value::as_str).map(str::to_owned),
        system_fingerprint: v
            .get("system_fingerprint")
            .and_then(Value::as_str)
            .map(str::to_owned),
        input_tokens: usage
            .and_then(|u| u.get("prompt_tokens"))
            .and_then(Value::as_u64),
        output_tokens: usage
            .and_then(|u| u.get("completion_tokens"))
            .and_then(Value::as_u64),
        stop_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..ModelResponse::default()
    })
}

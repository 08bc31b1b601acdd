//! Anthropic Messages: `POST {base}/v1/messages`, headers `x-api-key` and
//! `anthropic-version: 2023-06-01`. Anthropic reports no system fingerprint; the model id it
//! echoes is recorded.

use std::time::Duration;

use serde_json::{Value, json};

use super::{CallError, ModelRequest, ModelResponse, Provider, Scrubber, client, send};
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
        json!({
            "model": request.model,
            "max_tokens": request.max_output_tokens,
            "temperature": temperature(&request.temperature),
            "system": request.system,
            "messages": [{ "role": "user", "content": request.user }],
        })
        .to_string()
        .into_bytes()
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
    let usage = v.get("usage");
    Ok(ModelResponse {
        text,
        // The `request-id` header identifies the request; the body's `id` is the message id.
        request_id: None,
        model_reported: v.get("model").and_then(Value::as_str).map(str::to_owned),
        system_fingerprint: None,
        input_tokens: usage
            .and_then(|u| u.get("input_tokens"))
            .and_then(Value::as_u64),
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

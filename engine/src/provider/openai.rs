//! OpenAI-compatible chat completions: `POST {base}/v1/chat/completions` with a bearer key (when
//! one is set). Serves OpenAI itself and local servers (vLLM, llama.cpp, Ollama). OpenAI's own
//! API takes `max_completion_tokens`; other servers get the older `max_tokens`.

use std::time::Duration;

use serde_json::{Value, json};

use super::{CallError, ModelRequest, ModelResponse, Provider, Scrubber, client, send};
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
        let mut body = json!({
            "model": request.model,
            "temperature": temperature,
            "messages": [
                { "role": "system", "content": request.system },
                { "role": "user", "content": request.user },
            ],
        });
        body[limit_key] = json!(request.max_output_tokens);
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

fn parse(bytes: &[u8]) -> Result<ModelResponse, String> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the response is not JSON: {e}"))?;
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or("the response has no choices")?;
    let text = choice
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .ok_or("the first choice has no message content")?
        .to_owned();
    let usage = v.get("usage");
    Ok(ModelResponse {
        text,
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

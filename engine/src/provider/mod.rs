//! Model providers: one request in, one normalized response (or a classified failure) out.
//!
//! **Invariant:** only this module speaks HTTP to models. Keys are held as
//! [`Secret`](crate::keys::Secret)s, sent only in a request header, and never returned, logged or
//! stored: every text a provider sends back is scrubbed of the key ([`scrub`]) before anything
//! else sees it.
//!
//! Failures are classified by what they mean for money and for the trial:
//! - [`CallError::NotDelivered`] — the request never reached the provider (connection refused,
//!   DNS, TLS): `infrastructure_error`, nothing spent.
//! - [`CallError::Rejected`] — the provider refused it with an error status (429, 5xx, 529, 4xx)
//!   before the model produced anything: `infrastructure_error`, nothing spent. Rate limits and
//!   overload are retried by the engine within bounds ([`retry`]).
//! - [`CallError::Lost`] — it was sent and no usable answer came back (timeout, connection cut
//!   mid-response, malformed or truncated body): `unknown`, the reserve stays held and nothing is
//!   retried automatically.

mod anthropic;
mod openai;
pub mod retry;
pub mod scrub;

use std::time::{Duration, Instant};

pub use anthropic::Anthropic;
pub use openai::OpenAi;
pub use scrub::Scrubber;

pub use skilltrial_core::delivery::{ToolCall, ToolDef, ToolReply};
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::profile::ProviderKind;

/// What a trial asks the model: one turn.
///
/// **Invariant:** with `tools` and `history` empty (inline delivery), each provider's body is
/// the one it sent before tool use existed, byte for byte, so inline request hashes never move.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub model: String,
    pub system: String,
    /// The first user message: the task (progressive), or the skill block and the task (inline).
    pub user: String,
    pub max_output_tokens: u64,
    /// Decimal string, e.g. "0".
    pub temperature: String,
    /// The journal's attempt id, sent as the `x-skilltrial-attempt` header so that every request
    /// can be traced to exactly one attempt on both sides (bodies repeat across repetitions).
    pub attempt: Option<String>,
    /// Progressive delivery: the tools offered. Empty for inline: the body is today's, byte for byte.
    pub tools: Vec<ToolDef>,
    /// The turns before this one: each assistant answer and the runner's replies to its calls.
    pub history: Vec<Exchange>,
    /// Prompt caching (`plan --cache`): mark the stable prefix for the provider's cache. Off, the
    /// body is what it was before caching existed, byte for byte.
    pub cache: bool,
    /// How many bytes at the start of `user` are stable across the arm's trials (the inline skill
    /// block): with `cache`, sent as a text block of its own that carries the cache marker.
    pub stable_prefix: usize,
}

/// One earlier turn of a progressive trial, as the next request repeats it: the model's answer
/// (its text and tool calls) and the runner's replies, one per call, in the calls' order.
///
/// The providers render it as given: an exchange is expected to hold at least one call, and a
/// reply for each (the model's answer without calls ends a trial, so it is never history).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Exchange {
    /// The answer's text (empty when the model only called tools).
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub replies: Vec<ToolReply>,
}

/// The header that carries the attempt id.
pub const ATTEMPT_HEADER: &str = "x-skilltrial-attempt";

/// What came back.
#[derive(Debug, Clone, Default)]
pub struct ModelResponse {
    /// The answer text (all text blocks, concatenated).
    pub text: String,
    pub http_status: u16,
    pub request_id: Option<String>,
    /// The model id the API reports.
    pub model_reported: Option<String>,
    /// OpenAI's `system_fingerprint`, where given.
    pub system_fingerprint: Option<String>,
    /// All the input billed, at any rate: Anthropic's `input_tokens` plus its cache reads and
    /// cache writes; OpenAI's `prompt_tokens` (which already includes the cached tokens). Priced
    /// whole at the full input rate, it never under-counts the spend. `None` when the usage is
    /// missing or not whole numbers.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// The part of `input_tokens` read from the provider's prompt cache, where reported
    /// (Anthropic `cache_read_input_tokens`, OpenAI `prompt_tokens_details.cached_tokens`).
    pub cache_read_tokens: Option<u64>,
    /// The part of `input_tokens` written to the prompt cache, where reported (Anthropic
    /// `cache_creation_input_tokens`, OpenAI `prompt_tokens_details.cache_write_tokens`).
    pub cache_write_tokens: Option<u64>,
    /// The tool calls the answer made, in order (empty for a plain answer).
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: Option<String>,
    /// The raw response body, kept as a payload.
    pub raw_body: Vec<u8>,
    pub latency: Duration,
}

/// A failed call, classified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("the request never reached the provider: {message}")]
    NotDelivered { message: String },
    #[error("the provider refused the request with HTTP {status}: {message}")]
    Rejected {
        status: u16,
        request_id: Option<String>,
        message: String,
        /// The wait the provider asked for (`retry-after` / `retry-after-ms`), uncapped.
        retry_after: Option<Duration>,
    },
    #[error("no usable answer after the request was sent: {message}")]
    Lost {
        message: String,
        http_status: Option<u16>,
    },
}

/// A model API.
pub trait Provider: Send + Sync {
    /// The provider kind.
    fn kind(&self) -> ProviderKind;
    /// The exact body that [`Provider::call`] sends (its SHA-256 is journaled before dispatch).
    fn body(&self, request: &ModelRequest) -> Vec<u8>;
    /// Sends one request and waits at most the client's timeout.
    fn call(&self, request: &ModelRequest) -> Result<ModelResponse, CallError>;
}

/// SHA-256 of a request body: what the journal records as the request's identity.
pub fn request_sha256(body: &[u8]) -> Sha256Digest {
    Sha256Digest::of(body)
}

/// The HTTP client every provider uses: no redirects (a redirect could carry the key header to
/// another host), a total timeout per request.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::blocking::Client, CallError> {
    reqwest::blocking::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("skilltrial/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| CallError::NotDelivered {
            message: format!("cannot build the HTTP client: {e}"),
        })
}

/// The longest error text kept from a provider, in characters (after scrubbing).
pub const ERROR_SNIPPET_CHARS: usize = 300;

/// The longest tool-call id a response may carry, in bytes. Providers' ids are a few dozen
/// characters (`toolu_01…`, `call_…`, `functions.name:0`); the id is journaled with the turn and
/// sent back in every later request of the trial, so an unbounded one from a broken or hostile
/// server would grow every request after it.
pub const MAX_TOOL_CALL_ID_BYTES: usize = 256;

/// Call `index`'s `id` as a response gave it, if it can be echoed back: 1 to
/// [`MAX_TOOL_CALL_ID_BYTES`] bytes with no control character. Any other makes the response
/// malformed (the call cannot be answered, like a call without an id).
pub(crate) fn echoable_call_id(index: usize, id: &str) -> Result<String, String> {
    if id.is_empty() || id.len() > MAX_TOOL_CALL_ID_BYTES {
        return Err(format!(
            "the tool call {index} has an id of {} bytes (1 to {MAX_TOOL_CALL_ID_BYTES} can be sent back)",
            id.len()
        ));
    }
    if id.chars().any(char::is_control) {
        return Err(format!(
            "the tool call {index} has an id with a control character, which cannot be sent back"
        ));
    }
    Ok(id.to_owned())
}

/// Sends a JSON body and classifies every failure. `parse` turns a 2xx body into a response.
///
/// Every text that came from the provider (the body, the kept headers, error messages) passes
/// through `scrubber` first, before it is parsed, truncated or returned: nothing downstream ever
/// sees the key, even when a gateway quotes it.
pub(crate) fn send(
    client: &reqwest::blocking::Client,
    url: &str,
    headers: &[(&str, String)],
    scrubber: &Scrubber,
    body: Vec<u8>,
    request_id_header: &str,
    parse: impl FnOnce(&[u8]) -> Result<ModelResponse, String>,
) -> Result<ModelResponse, CallError> {
    let started = Instant::now();
    let mut builder = client
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    for (name, value) in headers {
        let mut value =
            reqwest::header::HeaderValue::from_str(value).map_err(|_| CallError::NotDelivered {
                message: format!("the `{name}` header value is not valid in HTTP"),
            })?;
        if matches!(*name, "x-api-key" | "authorization") {
            // Keeps it out of reqwest's own Debug output.
            value.set_sensitive(true);
        }
        builder = builder.header(*name, value);
    }
    let response = builder
        .send()
        .map_err(|e| scrub_error(classify_send_error(&e), scrubber))?;
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| scrubber.text(v))
    };
    let request_id = header(request_id_header);
    let retry_after = retry::parse_retry_after(
        header("retry-after-ms").as_deref(),
        header("retry-after").as_deref(),
    );
    let bytes = response.bytes().map_err(|e| CallError::Lost {
        message: scrubber.text(&format!("the response body broke off: {}", without_url(&e))),
        http_status: Some(status),
    })?;
    // Scrubbed whole, before any truncation or parsing.
    let bytes = scrubber.bytes(&bytes);
    if !(200..300).contains(&status) {
        let snippet: String = String::from_utf8_lossy(&bytes)
            .chars()
            .take(ERROR_SNIPPET_CHARS)
            .collect();
        return Err(CallError::Rejected {
            status,
            request_id,
            message: snippet,
            retry_after,
        });
    }
    let mut parsed = parse(&bytes).map_err(|message| CallError::Lost {
        message: scrubber.text(&message),
        http_status: Some(status),
    })?;
    parsed.http_status = status;
    parsed.request_id = parsed.request_id.or(request_id);
    parsed.raw_body = bytes;
    parsed.latency = started.elapsed();
    Ok(parsed)
}

fn scrub_error(error: CallError, scrubber: &Scrubber) -> CallError {
    match error {
        CallError::NotDelivered { message } => CallError::NotDelivered {
            message: scrubber.text(&message),
        },
        CallError::Rejected {
            status,
            request_id,
            message,
            retry_after,
        } => CallError::Rejected {
            status,
            request_id: request_id.map(|r| scrubber.text(&r)),
            message: scrubber.text(&message),
            retry_after,
        },
        CallError::Lost {
            message,
            http_status,
        } => CallError::Lost {
            message: scrubber.text(&message),
            http_status,
        },
    }
}

fn classify_send_error(e: &reqwest::Error) -> CallError {
    // A connect failure means no byte of the request reached the provider; anything else (a
    // timeout, a reset after sending) may have been processed and billed.
    if e.is_connect() || e.is_builder() || is_refused(e) {
        CallError::NotDelivered {
            message: without_url(e),
        }
    } else {
        CallError::Lost {
            message: without_url(e),
            http_status: e.status().map(|s| s.as_u16()),
        }
    }
}

fn is_refused(e: &reqwest::Error) -> bool {
    let text = format!("{e:?}");
    text.contains("ConnectionRefused") || text.contains("Connection refused")
}

/// An error message without the URL (which could carry credentials in userinfo).
fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), "<endpoint>");
    }
    text
}

/// A token count of a usage object: `Ok(None)` when the field is absent or null (servers that do
/// not report it), an error when it holds anything but a whole number, so a garbled count makes
/// the usage unknown instead of being read as zero.
pub(crate) fn token_count(
    usage: Option<&serde_json::Value>,
    key: &str,
) -> Result<Option<u64>, String> {
    match usage.and_then(|u| u.get(key)) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("the usage field `{key}` is not a whole number")),
    }
}

/// Why no provider could be built for a manifest.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// An Anthropic endpoint over plain http to another machine: the key would travel in
    /// cleartext.
    #[error(
        "refusing to send an Anthropic key over plain http to {endpoint}: use https or a loopback address"
    )]
    PlainHttp { endpoint: String },
    /// No key for a provider that needs one.
    #[error("set {env} to run against {endpoint}")]
    NoKey { env: &'static str, endpoint: String },
    /// No key for OpenAI's own API.
    #[error("set {env} or store a key with `skilltrial key set openai` to run against {endpoint}")]
    NoOpenAiKey { env: &'static str, endpoint: String },
    /// The HTTP client could not be built.
    #[error("{0}")]
    Client(CallError),
}

/// Builds the provider a manifest names, with the key from the environment. The endpoint is the
/// manifest's, never re-read from the environment: a run goes where its plan said.
pub fn for_manifest(
    manifest: &skilltrial_core::manifest::Manifest,
) -> Result<Box<dyn Provider>, SetupError> {
    for_model(
        manifest.model.provider,
        &manifest.model.endpoint,
        Duration::from_millis(manifest.limits.request_timeout_ms),
    )
}

/// Builds a `kind` provider for `endpoint`, with the key from the environment (or the keychain),
/// under the rules of [`for_manifest`]: what a hosted runner checks of each profile at start.
pub fn for_model(
    kind: ProviderKind,
    endpoint: &str,
    timeout: Duration,
) -> Result<Box<dyn Provider>, SetupError> {
    // A key never travels in cleartext to another machine.
    let key = crate::keys::lookup(kind)
        .map(|(key, _)| key)
        .filter(|_| may_carry_key(endpoint));
    if !may_carry_key(endpoint) && kind == ProviderKind::Anthropic {
        return Err(SetupError::PlainHttp {
            endpoint: endpoint.to_owned(),
        });
    }
    match kind {
        ProviderKind::Anthropic => {
            let key = key.ok_or_else(|| SetupError::NoKey {
                env: kind.key_env(),
                endpoint: endpoint.to_owned(),
            })?;
            Ok(Box::new(
                Anthropic::new(endpoint, key, timeout).map_err(SetupError::Client)?,
            ))
        }
        ProviderKind::Openai => {
            if key.is_none() && endpoint.starts_with("https://api.openai.com") {
                return Err(SetupError::NoOpenAiKey {
                    env: kind.key_env(),
                    endpoint: endpoint.to_owned(),
                });
            }
            Ok(Box::new(
                OpenAi::new(endpoint, key, timeout).map_err(SetupError::Client)?,
            ))
        }
    }
}

/// The API root of a base URL: without a trailing `/` or `/v1` (OpenAI SDKs and Ollama write
/// `…/v1`; the providers append `/v1/...` themselves).
pub fn api_root(base_url: &str) -> String {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_owned()
}

/// Whether an endpoint may carry a key: https anywhere, plain http only to this machine.
pub fn may_carry_key(endpoint: &str) -> bool {
    if endpoint.starts_with("https://") {
        return true;
    }
    let Some(rest) = endpoint.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = if host.starts_with('[') {
        host.split(']')
            .next()
            .map(|h| h.trim_start_matches('['))
            .unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

//! A real HTTP/1.1 server on loopback that speaks both model wire formats (Anthropic Messages at
//! `/v1/messages`, OpenAI chat completions at `/v1/chat/completions`) and answers from a script.
//!
//! It is the provider stand-in for tests — including faults: error statuses, hangs, connections
//! closed without an answer, bodies cut off halfway, malformed JSON, slow answers — and the
//! scripted model of the no-key demo. It logs every request it receives, so a test can prove a
//! request was seen exactly once. It binds 127.0.0.1 only.
//!
//! It also plays a model that uses tools ([`Reply::Tools`]), and reads the turn, the tools
//! offered and the tool results out of a request ([`ServerRequest::turn`] and its neighbours),
//! so a progressive trial can be scripted turn by turn.
//!
//! Started with [`ScriptedServer::start_billing`], it also bills like each provider: it keeps a
//! prompt cache and reports cached input the way Anthropic and OpenAI do ([`Bill`]), so what
//! caching saves can be measured on real request bodies.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use skilltrial_core::digest::Sha256Digest;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct ServerRequest {
    /// 0-based arrival index.
    pub index: u64,
    /// The request line's method (`GET`, `POST`).
    pub method: String,
    pub path: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl ServerRequest {
    /// The body as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The last user message's text, in either wire format.
    pub fn user_text(&self) -> String {
        let Some(v) = self.json() else {
            return String::new();
        };
        v.get("messages")
            .and_then(Value::as_array)
            .and_then(|m| {
                m.iter()
                    .rev()
                    .find(|msg| msg.get("role").and_then(Value::as_str) == Some("user"))
            })
            .and_then(|msg| msg.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// The first user message's text, in either wire format: the task, whatever turn this is
    /// (text blocks are joined).
    pub fn task_text(&self) -> String {
        self.messages()
            .iter()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .map(|m| content_text(m.get("content")))
            .unwrap_or_default()
    }

    /// Which turn of a conversation the request is: 1 plus the assistant messages it repeats.
    pub fn turn(&self) -> u32 {
        let answers = self
            .messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .count();
        u32::try_from(answers).map_or(u32::MAX, |n| n.saturating_add(1))
    }

    /// The tool results the request carries after its last assistant message, in order, as
    /// `(call id, content, is_error)`: Anthropic's `tool_result` blocks of the user message,
    /// or OpenAI's `tool` messages (which have no error flag: always `false`). Empty on turn 1.
    pub fn tool_results(&self) -> Vec<(String, String, bool)> {
        let messages = self.messages();
        let after_last_answer = messages
            .iter()
            .rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .and_then(|i| messages.get(i + 1..))
            .unwrap_or_default();
        results_in(after_last_answer)
    }

    /// Every tool result the request carries, from all its earlier turns, in order, as
    /// [`ServerRequest::tool_results`] gives the last turn's.
    pub fn all_tool_results(&self) -> Vec<(String, String, bool)> {
        results_in(&self.messages())
    }

    /// Whether the request offers tools (a progressive turn).
    pub fn has_tools(&self) -> bool {
        !self.tool_names().is_empty()
    }

    /// The system prompt's text, in either wire format (Anthropic's `system` string or blocks,
    /// OpenAI's first `system` message).
    pub fn system_text(&self) -> String {
        let Some(v) = self.json() else {
            return String::new();
        };
        match v.get("system") {
            Some(system) => content_text(Some(system)),
            None => self
                .messages()
                .iter()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("system"))
                .map(|m| content_text(m.get("content")))
                .unwrap_or_default(),
        }
    }

    /// The names of the tools the request offers, in order, in either wire format.
    pub fn tool_names(&self) -> Vec<String> {
        let Some(v) = self.json() else {
            return Vec::new();
        };
        v.get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t.get("name")
                    .or_else(|| t.get("function").and_then(|f| f.get("name")))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect()
    }

    fn messages(&self) -> Vec<Value> {
        self.json()
            .and_then(|mut v| match v.get_mut("messages").map(Value::take) {
                Some(Value::Array(messages)) => Some(messages),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// A header value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The key the request carried: its `x-api-key`, or its bearer token.
    pub fn key(&self) -> Option<String> {
        self.header("x-api-key")
            .or_else(|| {
                self.header("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
            })
            .map(str::to_owned)
    }

    fn is_anthropic(&self) -> bool {
        self.path.ends_with("/v1/messages")
    }
}

/// The tool results among `messages`, in order: `(call id, content, is_error)`.
fn results_in(messages: &[Value]) -> Vec<(String, String, bool)> {
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut results = Vec::new();
    for message in messages {
        match message.get("role").and_then(Value::as_str) {
            Some("tool") => results.push((
                text(message, "tool_call_id"),
                content_text(message.get("content")),
                false,
            )),
            Some("user") => {
                let blocks = message.get("content").and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                        results.push((
                            text(block, "tool_use_id"),
                            content_text(block.get("content")),
                            block.get("is_error").and_then(Value::as_bool) == Some(true),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    results
}

/// A message's or a tool result's text: a string as it is, text blocks joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// What the server does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A well-formed 200 answer with usage.
    Answer(String),
    /// A 200 answer whose body reports no usage (as some local servers do).
    AnswerWithoutUsage(String),
    /// An error status with the provider's error body.
    Status(u16),
    /// Read the request, then never answer (until the server stops).
    Hang,
    /// Read the request, then close the connection without a byte.
    Close,
    /// Send 200 headers and half of the body, then close.
    DieHalfway(String),
    /// A 200 whose body is not JSON.
    Malformed,
    /// Wait, then answer.
    Slow(String, Duration),
    /// An error status whose body quotes the key the request carried (its `x-api-key`, or its
    /// bearer token), as some gateways and proxies do: after `pad` filler characters, whole, then
    /// in part (its first 14 and last 12 characters), then URL-encoded byte by byte.
    EchoKeyInError { status: u16, pad: usize },
    /// A 200 answer whose body also quotes the key (in its `id` and in an extra field).
    EchoKeyInBody(String),
    /// A 200 answer whose request-id headers carry the key.
    EchoKeyInHeader(String),
    /// An error status with the provider's error body and a `retry-after` header (as given).
    RetryAfter(u16, String),
    /// A 200 answer that calls tools, in the request's format: the text (left out when empty)
    /// and one call per `(name, arguments JSON text)`, with ids `toolu_st_{index}_{i}` /
    /// `call_st_{index}_{i}` (the request's arrival index, the call's position), stop reason
    /// `tool_use` / `tool_calls`, and usage as for [`Reply::Answer`], the output counting the
    /// text, names and arguments. Anthropic carries arguments as an object: ones that are not
    /// JSON go there as a JSON string; OpenAI gets them verbatim.
    Tools {
        text: String,
        calls: Vec<(String, String)>,
    },
    /// A response exactly as given: status, headers (besides content-length and connection) and
    /// body — for fixtures copied verbatim from the providers' API references.
    Verbatim {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

/// What the log keeps of each request.
#[derive(Debug, Clone)]
pub struct Logged {
    pub index: u64,
    pub path: String,
    pub body_sha256: Sha256Digest,
    pub had_api_key: bool,
    /// The `x-skilltrial-attempt` header, if sent.
    pub attempt: Option<String>,
}

type Responder = dyn Fn(&ServerRequest) -> Reply + Send + Sync;

/// A running server.
#[derive(Debug)]
pub struct ScriptedServer {
    addr: std::net::SocketAddr,
    log: Arc<Mutex<Vec<Logged>>>,
    /// The prompt cache and the bills, when started with [`ScriptedServer::start_billing`].
    billing: Option<Arc<Billing>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

/// Upper bounds on what the server reads, so a broken client cannot exhaust it.
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 16 * 1024 * 1024;

impl ScriptedServer {
    /// Starts a server on an ephemeral loopback port.
    pub fn start(
        responder: impl Fn(&ServerRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::start_on(0, responder)
    }

    /// Starts a server on a given loopback port (0 for any).
    pub fn start_on(
        port: u16,
        responder: impl Fn(&ServerRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::start_with(port, responder, None)
    }

    /// Starts a server on an ephemeral loopback port that bills like each provider: it keeps a
    /// prompt cache (empty at start, shared by every connection, never expiring) and reports
    /// cached input in each answer's usage as the provider would (see [`Bill`] for the rules).
    /// Every other behaviour is [`ScriptedServer::start`]'s.
    pub fn start_billing(
        responder: impl Fn(&ServerRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::start_with(0, responder, Some(Arc::new(Billing::default())))
    }

    fn start_with(
        port: u16,
        responder: impl Fn(&ServerRequest) -> Reply + Send + Sync + 'static,
        billing: Option<Arc<Billing>>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let responder: Arc<Responder> = Arc::new(responder);
        let counter = Arc::new(AtomicU64::new(0));
        let accept = {
            let (log, stop, billing) = (Arc::clone(&log), Arc::clone(&stop), billing.clone());
            std::thread::Builder::new()
                .name("scripted-accept".to_owned())
                .spawn(move || {
                    for stream in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(stream) = stream else { continue };
                        let (log, stop, responder, counter, billing) = (
                            Arc::clone(&log),
                            Arc::clone(&stop),
                            Arc::clone(&responder),
                            Arc::clone(&counter),
                            billing.clone(),
                        );
                        let _ = std::thread::Builder::new()
                            .name("scripted-conn".to_owned())
                            .spawn(move || {
                                let (responder, billing) = (responder.as_ref(), billing.as_deref());
                                let on = Conn {
                                    log: &log,
                                    stop: &stop,
                                    responder,
                                    billing,
                                };
                                serve(stream, &on, &counter);
                            });
                    }
                })?
        };
        Ok(Self {
            addr,
            log,
            billing,
            stop,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Logged> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// What a billing server ([`ScriptedServer::start_billing`]) charged each answered request,
    /// in the order it billed them; empty for any other server.
    pub fn bills(&self) -> Vec<Bill> {
        self.billing
            .as_ref()
            .and_then(|b| b.bills.lock().ok().map(|bills| bills.clone()))
            .unwrap_or_default()
    }

    /// Stops accepting and releases hanging connections.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wake the accept loop
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn read_request(reader: &mut BufReader<TcpStream>, counter: &AtomicU64) -> Option<ServerRequest> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).ok()?;
        if n == 0 {
            return None;
        }
        head.push_str(&line);
        if head.len() > MAX_HEAD {
            return None;
        }
        if line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut lines = head.lines();
    let request_line = lines.next()?;
    let mut request_words = request_line.split_whitespace();
    let method = request_words.next()?.to_owned();
    let path = request_words.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        return None;
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(ServerRequest {
        // Numbered once whole, so that an idle kept-alive connection closing takes no number.
        index: counter.fetch_add(1, Ordering::SeqCst),
        method,
        path,
        headers,
        body,
    })
}

/// How long a kept-alive connection may sit idle before the server closes it.
const IDLE: Duration = Duration::from_secs(30);

/// What every request on a connection is answered with.
struct Conn<'a> {
    log: &'a Mutex<Vec<Logged>>,
    stop: &'a AtomicBool,
    responder: &'a Responder,
    billing: Option<&'a Billing>,
}

fn serve(stream: TcpStream, on: &Conn<'_>, counter: &AtomicU64) {
    let _ = stream.set_read_timeout(Some(IDLE));
    // A kept-alive connection must not wait on Nagle's algorithm for the client's delayed ACK
    // (40 ms a response on Linux): each response goes out as soon as it is written.
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut writer = write_half;
    let mut reader = BufReader::new(stream);
    // Answers that leave the connection usable keep it open (HTTP/1.1 keep-alive, as the real
    // APIs do), so a run reuses one connection instead of a connect and a server thread per
    // request; every fault closes it, and a stopped server answers nothing more.
    while !on.stop.load(Ordering::SeqCst) {
        let Some(request) = read_request(&mut reader, counter) else {
            break;
        };
        if !answer(&mut writer, &request, on) {
            break;
        }
    }
    let _ = writer.shutdown(std::net::Shutdown::Both);
}

/// Logs and answers one request; whether the connection may carry another.
fn answer(writer: &mut TcpStream, request: &ServerRequest, on: &Conn<'_>) -> bool {
    let Conn {
        log,
        stop,
        responder,
        billing,
    } = *on;
    let index = request.index;
    if let Ok(mut log) = log.lock() {
        log.push(Logged {
            index,
            path: request.path.clone(),
            body_sha256: Sha256Digest::of(&request.body),
            had_api_key: request.header("x-api-key").is_some()
                || request.header("authorization").is_some(),
            attempt: request.header("x-skilltrial-attempt").map(str::to_owned),
        });
    }
    let reply = responder(request);
    let anthropic = request.is_anthropic();
    let keep_alive = !matches!(
        reply,
        Reply::Hang | Reply::Close | Reply::DieHalfway(_) | Reply::Verbatim { .. }
    );
    match reply {
        Reply::Answer(text) => respond(
            writer,
            200,
            &answer_body(request, &text, anthropic, billing),
        ),
        Reply::Tools { text, calls } => {
            respond(
                writer,
                200,
                &tools_body(request, &text, &calls, anthropic, billing),
            );
        }
        Reply::AnswerWithoutUsage(text) => {
            let mut body: Value =
                serde_json::from_str(&answer_body(request, &text, anthropic, billing))
                    .unwrap_or(Value::Null);
            if let Some(map) = body.as_object_mut() {
                map.remove("usage");
            }
            respond(writer, 200, &body.to_string());
        }
        Reply::Slow(text, delay) => {
            sleep_unless_stopped(delay, stop);
            respond(
                writer,
                200,
                &answer_body(request, &text, anthropic, billing),
            );
        }
        Reply::Status(status) => respond(writer, status, &error_body(status, anthropic)),
        Reply::Hang => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Reply::Close => {}
        Reply::DieHalfway(text) => {
            let body = answer_body(request, &text, anthropic, billing);
            let half = &body.as_bytes()[..body.len() / 2];
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = writer.write_all(head.as_bytes());
            let _ = writer.write_all(half);
            let _ = writer.flush();
        }
        Reply::Malformed => respond(writer, 200, "{\"content\": [this is not json"),
        Reply::EchoKeyInError { status, pad } => {
            let key = request.key().unwrap_or_default();
            let head: String = key.chars().take(14).collect();
            let tail: String = key
                .chars()
                .skip(key.chars().count().saturating_sub(12))
                .collect();
            let encoded: String = key.bytes().map(|b| format!("%{b:02X}")).collect();
            let message = format!(
                "{}invalid x-api-key {key} (key {head}...{tail}; url ?key={encoded})",
                "x".repeat(pad)
            );
            let body = if anthropic {
                json!({ "type": "error", "error": { "type": "authentication_error", "message": message } })
            } else {
                json!({ "error": { "message": message, "type": "invalid_request_error", "code": "invalid_api_key" } })
            };
            respond(writer, status, &body.to_string());
        }
        Reply::EchoKeyInBody(text) => {
            let key = request.key().unwrap_or_default();
            let mut body: Value =
                serde_json::from_str(&answer_body(request, &text, anthropic, billing))
                    .unwrap_or(Value::Null);
            if let Some(map) = body.as_object_mut() {
                map.insert("id".to_owned(), json!(format!("msg_{key}")));
                map.insert("gateway".to_owned(), json!({ "authorized_with": key }));
            }
            respond(writer, 200, &body.to_string());
        }
        Reply::EchoKeyInHeader(text) => {
            let key = request.key().unwrap_or_default();
            respond_with(
                writer,
                200,
                &[
                    ("request-id".to_owned(), format!("req_{key}")),
                    ("x-request-id".to_owned(), format!("req_{key}")),
                ],
                &answer_body(request, &text, anthropic, billing),
            );
        }
        Reply::RetryAfter(status, after) => respond_with(
            writer,
            status,
            &[
                ("request-id".to_owned(), "req_scripted".to_owned()),
                ("x-request-id".to_owned(), "req_scripted".to_owned()),
                ("retry-after".to_owned(), after),
            ],
            &error_body(status, anthropic),
        ),
        Reply::Verbatim {
            status,
            headers,
            body,
        } => write_response(writer, status, &headers, &body, "close"),
    }
    keep_alive
}

fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let step = Duration::from_millis(10);
    let mut slept = Duration::ZERO;
    while slept < total && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(step);
        slept += step;
    }
}

fn respond(writer: &mut TcpStream, status: u16, body: &str) {
    respond_with(
        writer,
        status,
        &[
            ("request-id".to_owned(), "req_scripted".to_owned()),
            ("x-request-id".to_owned(), "req_scripted".to_owned()),
        ],
        body,
    );
}

/// Writes a response that keeps the connection open for the next request.
fn respond_with(writer: &mut TcpStream, status: u16, headers: &[(String, String)], body: &str) {
    write_response(writer, status, headers, body, "keep-alive");
}

fn write_response(
    writer: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &str,
    connection: &str,
) {
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: {connection}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    let _ = writer.write_all(head.as_bytes());
    let _ = writer.flush();
}

/// Usage the scripted model reports: a quarter token per byte, rounded up (always below the
/// runner's one-token-per-byte bound).
fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN as u64)
}

fn answer_body(
    request: &ServerRequest,
    text: &str,
    anthropic: bool,
    billing: Option<&Billing>,
) -> String {
    let model = request
        .json()
        .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    let input = tokens(request.body.len());
    let output = tokens(text.len());
    let bill = billing.map(|b| b.bill(request, anthropic));
    if anthropic {
        json!({
            "id": format!("msg_scripted_{}", request.index),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{ "type": "text", "text": text }],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": usage_json(input, output, anthropic, bill.as_ref()),
        })
        .to_string()
    } else {
        json!({
            "id": format!("chatcmpl-scripted-{}", request.index),
            "object": "chat.completion",
            "model": model,
            "system_fingerprint": "fp_scripted",
            "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": text } }],
            "usage": usage_json(input, output, anthropic, bill.as_ref()),
        })
        .to_string()
    }
}

fn tools_body(
    request: &ServerRequest,
    text: &str,
    calls: &[(String, String)],
    anthropic: bool,
    billing: Option<&Billing>,
) -> String {
    let model = request
        .json()
        .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    let index = request.index;
    let input = tokens(request.body.len());
    let output = tokens(
        calls
            .iter()
            .fold(text.len(), |n, (name, args)| n + name.len() + args.len()),
    );
    let bill = billing.map(|b| b.bill(request, anthropic));
    if anthropic {
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(json!({ "type": "text", "text": text }));
        }
        for (i, (name, arguments)) in calls.iter().enumerate() {
            let input = serde_json::from_str::<Value>(arguments)
                .unwrap_or_else(|_| Value::String(arguments.clone()));
            content.push(json!({
                "type": "tool_use",
                "id": format!("toolu_st_{index}_{i}"),
                "name": name,
                "input": input,
            }));
        }
        json!({
            "id": format!("msg_scripted_{index}"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": usage_json(input, output, anthropic, bill.as_ref()),
        })
        .to_string()
    } else {
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                json!({
                    "id": format!("call_st_{index}_{i}"),
                    "type": "function",
                    "function": { "name": name, "arguments": arguments },
                })
            })
            .collect();
        let content = if text.is_empty() {
            Value::Null
        } else {
            Value::String(text.to_owned())
        };
        json!({
            "id": format!("chatcmpl-scripted-{index}"),
            "object": "chat.completion",
            "model": model,
            "system_fingerprint": "fp_scripted",
            "choices": [{
                "index": 0,
                "finish_reason": "tool_calls",
                "message": { "role": "assistant", "content": content, "tool_calls": tool_calls },
            }],
            "usage": usage_json(input, output, anthropic, bill.as_ref()),
        })
        .to_string()
    }
}

fn error_body(status: u16, anthropic: bool) -> String {
    let kind = match status {
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500 => "api_error",
        401 => "authentication_error",
        400 => "invalid_request_error",
        _ => "api_error",
    };
    if anthropic {
        json!({ "type": "error", "error": { "type": kind, "message": format!("scripted {status}") }, "request_id": "req_scripted" }).to_string()
    } else {
        json!({ "error": { "message": format!("scripted {status}"), "type": kind, "code": status } }).to_string()
    }
}

/// An answer's `usage`: the server's plain counts, or, on a billing server, the request's
/// [`Bill`] in the provider's fields (Anthropic: `input_tokens` is what was neither read nor
/// written, beside `cache_read_input_tokens` and `cache_creation_input_tokens`; OpenAI:
/// `prompt_tokens` is the whole input, of which `prompt_tokens_details.cached_tokens` were read).
fn usage_json(input: u64, output: u64, anthropic: bool, bill: Option<&Bill>) -> Value {
    match (bill, anthropic) {
        (None, true) => json!({ "input_tokens": input, "output_tokens": output }),
        (None, false) => json!({
            "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
        }),
        (Some(bill), true) => json!({
            "input_tokens": bill.uncached_tokens(),
            "cache_creation_input_tokens": bill.cache_write_tokens,
            "cache_read_input_tokens": bill.cache_read_tokens,
            "output_tokens": output,
        }),
        (Some(bill), false) => json!({
            "prompt_tokens": bill.input_tokens,
            "completion_tokens": output,
            "total_tokens": bill.input_tokens + output,
            "prompt_tokens_details": { "cached_tokens": bill.cache_read_tokens },
        }),
    }
}

/// The fewest tokens a cached prefix has, on both providers (Anthropic's minimum for the Sonnet
/// and Opus 4 models, OpenAI's for automatic caching).
pub const CACHE_MIN_TOKENS: u64 = 1024;
/// OpenAI reports cache hits in steps of this many tokens.
pub const OPENAI_CACHE_STEP_TOKENS: u64 = 128;
/// How many blocks before a breakpoint Anthropic looks back for an earlier entry.
pub const ANTHROPIC_LOOKBACK_BLOCKS: usize = 20;
/// The bytes [`tokens`] counts as one token: prefixes are measured with the same rule as the
/// whole request, so the three parts of a bill add up.
const BYTES_PER_TOKEN: usize = 4;

/// What a billing server charged one answered request, in tokens by the server's rule (a quarter
/// token per byte, rounded up). `cache_read_tokens + cache_write_tokens <= input_tokens`.
///
/// How the cache is kept, per wire format (entries never expire: a benchmark is far shorter than
/// the providers' 5 minutes, and each is refreshed by use; an entry is usable by the next request
/// as soon as this one is billed, a little earlier than the providers' "once the response
/// begins"):
///
/// - **Anthropic** (`/v1/messages`): the prompt is `tools`, then `system`, then `messages`, block
///   by block (a string content is one text block). A block carrying `cache_control` is a
///   breakpoint; a top-level `cache_control` (automatic caching) is one on the last block of the
///   last message. The read is the longest prefix in the cache that ends at a breakpoint or at
///   one of the [`ANTHROPIC_LOOKBACK_BLOCKS`] blocks before one. Every breakpoint's prefix of at
///   least [`CACHE_MIN_TOKENS`] is stored, and the write is the last breakpoint's prefix less the
///   read (when longer). A request without a breakpoint reads and writes nothing.
/// - **OpenAI** (`/v1/chat/completions`): automatic. The prompt is `tools`, then every message,
///   serialized; the read is the longest prefix, in steps of [`OPENAI_CACHE_STEP_TOKENS`] and of
///   at least [`CACHE_MIN_TOKENS`], that an earlier request shared; every such prefix of the
///   request is stored; nothing is billed as a write.
///
/// A prefix is keyed by the model, the wire format and the SHA-256 of its bytes (the
/// `cache_control` markers left out: they place breakpoints, they are not content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bill {
    /// The request's arrival index.
    pub index: u64,
    /// Its `x-skilltrial-attempt` header.
    pub attempt: Option<String>,
    /// Every input token: the whole body by the server's rule, as the plain server reports.
    pub input_tokens: u64,
    /// Of `input_tokens`, those read from the cache.
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the cache (always 0 on OpenAI).
    pub cache_write_tokens: u64,
}

impl Bill {
    /// The input neither read from the cache nor written to it.
    pub fn uncached_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens)
    }
}

/// A billing server's state: the cached prefixes and every bill.
#[derive(Debug, Default)]
struct Billing {
    cache: Mutex<HashSet<[u8; 32]>>,
    bills: Mutex<Vec<Bill>>,
}

/// One prefix of a prompt: its length in bytes and its key.
#[derive(Debug, Clone, Copy)]
struct Prefix {
    bytes: usize,
    key: [u8; 32],
}

impl Prefix {
    fn tokens(self) -> u64 {
        tokens(self.bytes)
    }
}

/// SHA-256 over a prompt, fed piece by piece: the state is cloned and finished at each boundary,
/// so every prefix of a large body is keyed in one pass over it.
struct PrefixHasher {
    state: Sha256,
    bytes: usize,
}

impl PrefixHasher {
    /// Keys start with the wire format and the model: a prefix is never shared across either.
    fn new(format: &str, model: &str) -> Self {
        let mut state = Sha256::new();
        for part in [format, model] {
            state.update((part.len() as u64).to_le_bytes());
            state.update(part.as_bytes());
        }
        Self { state, bytes: 0 }
    }

    fn update(&mut self, piece: &[u8]) {
        self.state.update(piece);
        self.bytes += piece.len();
    }

    fn prefix(&self) -> Prefix {
        Prefix {
            bytes: self.bytes,
            key: self.state.clone().finalize().into(),
        }
    }
}

impl Billing {
    /// Bills `request` against the cache, updates the cache, and logs the bill.
    fn bill(&self, request: &ServerRequest, anthropic: bool) -> Bill {
        let input_tokens = tokens(request.body.len());
        let body = request.json().unwrap_or(Value::Null);
        let (read, write) = match self.cache.lock() {
            Ok(mut cache) if anthropic => anthropic_cache(&body, &mut cache),
            Ok(mut cache) => (openai_cache(&body, &mut cache), 0),
            Err(_) => (0, 0),
        };
        // A prefix is measured on its blocks alone, never more than the body they came from.
        let cache_read_tokens = read.min(input_tokens);
        let bill = Bill {
            index: request.index,
            attempt: request.header("x-skilltrial-attempt").map(str::to_owned),
            input_tokens,
            cache_read_tokens,
            cache_write_tokens: write.min(input_tokens - cache_read_tokens),
        };
        if let Ok(mut bills) = self.bills.lock() {
            bills.push(bill.clone());
        }
        bill
    }
}

/// A block's content identity: the JSON without its `cache_control`.
fn without_marker(block: &Value) -> (Vec<u8>, bool) {
    match block {
        Value::Object(map) if map.contains_key("cache_control") => {
            let mut map = map.clone();
            map.remove("cache_control");
            (Value::Object(map).to_string().into_bytes(), true)
        }
        other => (other.to_string().into_bytes(), false),
    }
}

/// Anthropic's prompt as blocks in cache order (`tools`, `system`, `messages`), each with whether
/// it is a breakpoint.
fn anthropic_blocks(body: &Value) -> Vec<(Vec<u8>, bool)> {
    let as_blocks = |content: Option<&Value>| -> Vec<Value> {
        match content {
            Some(Value::String(text)) => vec![json!({ "type": "text", "text": text })],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => Vec::new(),
        }
    };
    let mut blocks = Vec::new();
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (bytes, marked) = without_marker(tool);
        blocks.push(([b"tool:".as_slice(), &bytes].concat(), marked));
    }
    for block in as_blocks(body.get("system")) {
        let (bytes, marked) = without_marker(&block);
        blocks.push(([b"system:".as_slice(), &bytes].concat(), marked));
    }
    let before_messages = blocks.len();
    for message in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        for block in as_blocks(message.get("content")) {
            let (bytes, marked) = without_marker(&block);
            blocks.push(([role.as_bytes(), b":", &bytes].concat(), marked));
        }
    }
    // Automatic caching: the breakpoint is the last block of the last message.
    let automatic = body.get("cache_control").is_some_and(Value::is_object);
    if automatic
        && blocks.len() > before_messages
        && let Some(last) = blocks.last_mut()
    {
        last.1 = true;
    }
    blocks
}

/// Anthropic's read and write for `body`, the cache updated: (read tokens, written tokens).
fn anthropic_cache(body: &Value, cache: &mut HashSet<[u8; 32]>) -> (u64, u64) {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut hasher = PrefixHasher::new("anthropic", model);
    let mut prefixes = Vec::new();
    let mut breakpoints = Vec::new();
    for (i, (bytes, marked)) in anthropic_blocks(body).into_iter().enumerate() {
        hasher.update(&bytes);
        prefixes.push(hasher.prefix());
        if marked {
            breakpoints.push(i);
        }
    }
    let read = breakpoints
        .iter()
        .flat_map(|&at| {
            let from = at.saturating_sub(ANTHROPIC_LOOKBACK_BLOCKS);
            prefixes[from..=at].iter().copied()
        })
        .filter(|p| cache.contains(&p.key))
        .map(Prefix::tokens)
        .max()
        .unwrap_or(0);
    for &at in &breakpoints {
        if prefixes[at].tokens() >= CACHE_MIN_TOKENS {
            cache.insert(prefixes[at].key);
        }
    }
    let write = breakpoints
        .last()
        .map(|&at| prefixes[at].tokens())
        .filter(|&t| t >= CACHE_MIN_TOKENS)
        .map_or(0, |t| t.saturating_sub(read));
    (read, write)
}

/// OpenAI's automatic read for `body`, every long enough prefix of it stored: read tokens.
fn openai_cache(body: &Value, cache: &mut HashSet<[u8; 32]>) -> u64 {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut prompt = Vec::new();
    if let Some(tools) = body.get("tools") {
        prompt.extend_from_slice(tools.to_string().as_bytes());
    }
    for message in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        prompt.extend_from_slice(message.to_string().as_bytes());
    }
    let step = usize::try_from(OPENAI_CACHE_STEP_TOKENS).unwrap_or(usize::MAX) * BYTES_PER_TOKEN;
    let mut hasher = PrefixHasher::new("openai", model);
    let mut read = 0;
    // Whole steps only: a prefix that ends inside a step is not a hit.
    for chunk in prompt.chunks_exact(step) {
        hasher.update(chunk);
        let prefix = hasher.prefix();
        if prefix.tokens() < CACHE_MIN_TOKENS {
            continue;
        }
        if !cache.insert(prefix.key) {
            read = prefix.tokens();
        }
    }
    read
}

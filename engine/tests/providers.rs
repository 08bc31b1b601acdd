//! Both wire formats against a real HTTP server on loopback, including every fault the engine
//! must classify: error statuses, refused connections, hangs, bodies cut off, malformed JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use skilltrial_engine::provider::{Anthropic, CallError, ModelRequest, OpenAi, Provider};
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

fn request() -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: "system text".into(),
        user: "the task".into(),
        max_output_tokens: 64,
        temperature: "0".into(),
        attempt: Some("run-000-1".into()),
        tools: Vec::new(),
        history: Vec::new(),
        cache: false,
        stable_prefix: 0,
    }
}

fn providers(url: &str, timeout: Duration) -> Vec<Box<dyn Provider>> {
    vec![
        Box::new(Anthropic::new(url, "sk-ant-test-key".into(), timeout).unwrap()),
        Box::new(OpenAi::new(url, Some("sk-test-key".into()), timeout).unwrap()),
    ]
}

#[test]
fn answers_parse_in_both_formats_with_usage_and_fingerprint() {
    let server =
        ScriptedServer::start(|r| Reply::Answer(format!("echo: {}", r.user_text()))).unwrap();
    for provider in providers(&server.url(), Duration::from_secs(5)) {
        let response = provider.call(&request()).unwrap();
        assert_eq!(response.text, "echo: the task");
        assert_eq!(response.http_status, 200);
        assert_eq!(response.model_reported.as_deref(), Some("test-model"));
        // The server reports a quarter token per byte, rounded up: of the body sent, and of
        // the 14-byte answer.
        let sent = provider.body(&request()).len() as u64;
        assert_eq!(response.input_tokens, Some(sent.div_ceil(4)));
        assert_eq!(response.output_tokens, Some(4));
        assert_eq!(response.request_id.as_deref(), Some("req_scripted"));
        let (fingerprint, stop) = match provider.kind() {
            skilltrial_core::profile::ProviderKind::Anthropic => (None, "end_turn"),
            skilltrial_core::profile::ProviderKind::Openai => (Some("fp_scripted"), "stop"),
        };
        assert_eq!(response.system_fingerprint.as_deref(), fingerprint);
        assert_eq!(response.stop_reason.as_deref(), Some(stop));
    }
    let logged = server.requests();
    assert_eq!(logged.len(), 2);
    assert!(
        logged.iter().all(|l| l.had_api_key),
        "the key travels in a header"
    );
    assert_eq!(logged[0].path, "/v1/messages");
    assert_eq!(logged[1].path, "/v1/chat/completions");
}

#[test]
fn error_statuses_are_rejections() {
    for status in [429, 500, 503, 529] {
        let server = ScriptedServer::start(move |_| Reply::Status(status)).unwrap();
        for provider in providers(&server.url(), Duration::from_secs(5)) {
            match provider.call(&request()) {
                Err(CallError::Rejected { status: got, .. }) => assert_eq!(got, status),
                other => panic!("{status}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_refused_connection_never_delivered_anything() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }; // the listener is dropped: nothing listens there now
    for provider in providers(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2)) {
        assert!(matches!(
            provider.call(&request()),
            Err(CallError::NotDelivered { .. })
        ));
    }
}

#[test]
fn hangs_cuts_and_garbage_after_sending_are_lost_not_retried() {
    for reply in [
        Reply::Hang,
        Reply::Close,
        Reply::DieHalfway("a long enough answer to cut".into()),
        Reply::Malformed,
    ] {
        let shown = format!("{reply:?}");
        let server = ScriptedServer::start(move |_| reply.clone()).unwrap();
        for provider in providers(&server.url(), Duration::from_millis(500)) {
            match provider.call(&request()) {
                Err(CallError::Lost { .. }) => {}
                other => panic!("{shown}: {other:?}"),
            }
        }
        assert_eq!(
            server.requests().len(),
            2,
            "{shown}: each provider sent exactly once"
        );
    }
}

#[test]
fn the_request_body_is_what_gets_hashed_and_holds_no_key() {
    let server = ScriptedServer::start(|_| Reply::Answer("ok".into())).unwrap();
    for provider in providers(&server.url(), Duration::from_secs(5)) {
        let body = String::from_utf8(provider.body(&request())).unwrap();
        assert!(!body.contains("test-key"), "{body}");
        provider.call(&request()).unwrap();
    }
    let logged = server.requests();
    let anthropic = Anthropic::new(&server.url(), "k".into(), Duration::from_secs(1)).unwrap();
    assert_eq!(
        logged[0].body_sha256,
        skilltrial_engine::provider::request_sha256(&anthropic.body(&request()))
    );
}

#[test]
fn a_base_url_ending_in_v1_is_not_doubled() {
    let server = ScriptedServer::start(|_| Reply::Answer("ok".into())).unwrap();
    for base in [
        format!("{}/v1", server.url()),
        format!("{}/v1/", server.url()),
        server.url(),
    ] {
        OpenAi::new(&base, None, Duration::from_secs(5))
            .unwrap()
            .call(&request())
            .unwrap();
        Anthropic::new(&base, "k".into(), Duration::from_secs(5))
            .unwrap()
            .call(&request())
            .unwrap();
    }
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert!(
        paths
            .iter()
            .all(|p| p == "/v1/chat/completions" || p == "/v1/messages"),
        "{paths:?}"
    );
}

#[test]
fn keys_travel_only_over_https_or_to_this_machine() {
    use skilltrial_engine::provider::may_carry_key;
    assert!(may_carry_key("https://api.openai.com/v1"));
    assert!(may_carry_key("http://127.0.0.1:8000/v1"));
    assert!(may_carry_key("http://localhost:11434"));
    assert!(may_carry_key("http://[::1]:8000"));
    assert!(!may_carry_key("http://gpu-box:8000/v1"));
    assert!(!may_carry_key("http://10.0.0.5:8000"));
    assert!(
        !may_carry_key("http://127.0.0.1.evil.example:80"),
        "a hostname that merely starts with 127."
    );
}

/// The example response of `POST /v1/messages` in Anthropic's API reference
/// (https://docs.anthropic.com/en/api/messages), verbatim.
const ANTHROPIC_REFERENCE_RESPONSE: &str = r#"{
  "content": [
    {
      "text": "Hi! My name is Claude.",
      "type": "text"
    }
  ],
  "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
  "model": "claude-sonnet-4-20250514",
  "role": "assistant",
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "type": "message",
  "usage": {
    "input_tokens": 2095,
    "output_tokens": 503
  }
}"#;

/// The example response of `POST /v1/chat/completions` in OpenAI's API reference
/// (https://platform.openai.com/docs/api-reference/chat/create), verbatim.
const OPENAI_REFERENCE_RESPONSE: &str = r#"{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "Hello! How can I assist you today?",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 19,
    "completion_tokens": 10,
    "total_tokens": 29,
    "prompt_tokens_details": {
      "cached_tokens": 0,
      "audio_tokens": 0
    },
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "audio_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  },
  "service_tier": "default",
  "system_fingerprint": "fp_44709d6fcb"
}"#;

fn verbatim(body: &'static str, request_id: (&'static str, &'static str)) -> Reply {
    Reply::Verbatim {
        status: 200,
        headers: vec![(request_id.0.to_owned(), request_id.1.to_owned())],
        body: body.to_owned(),
    }
}

/// Every request the server received, in full.
fn capturing(reply: Reply) -> (ScriptedServer, Arc<Mutex<Vec<ServerRequest>>>) {
    let seen: Arc<Mutex<Vec<ServerRequest>>> = Arc::default();
    let server = {
        let seen = Arc::clone(&seen);
        ScriptedServer::start(move |r| {
            seen.lock().unwrap().push(r.clone());
            reply.clone()
        })
        .unwrap()
    };
    (server, seen)
}

fn keys_of(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

#[test]
fn anthropic_reads_its_reference_response_and_sends_the_documented_request() {
    let (server, seen) = capturing(verbatim(
        ANTHROPIC_REFERENCE_RESPONSE,
        ("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy"),
    ));
    let provider = Anthropic::new(
        &server.url(),
        "sk-ant-test-key".into(),
        Duration::from_secs(5),
    )
    .unwrap();
    let response = provider.call(&request()).unwrap();
    assert_eq!(response.text, "Hi! My name is Claude.");
    assert_eq!(
        response.model_reported.as_deref(),
        Some("claude-sonnet-4-20250514")
    );
    assert_eq!(response.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(response.input_tokens, Some(2095));
    assert_eq!(response.output_tokens, Some(503));
    assert_eq!(response.system_fingerprint, None);
    assert_eq!(
        response.request_id.as_deref(),
        Some("req_011CSHoEeqs5C35K2UUqR7Fy")
    );
    assert_eq!(response.raw_body, ANTHROPIC_REFERENCE_RESPONSE.as_bytes());

    // The request: the documented path, headers and required body keys.
    let seen = seen.lock().unwrap();
    let sent = &seen[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("x-skilltrial-attempt"), Some("run-000-1"));
    let body = sent.json().unwrap();
    assert_eq!(
        keys_of(&body),
        ["max_tokens", "messages", "model", "system", "temperature"]
    );
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["system"], "system text");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(
        body["messages"],
        json!([{ "role": "user", "content": "the task" }])
    );
}

#[test]
fn openai_reads_its_reference_response_and_sends_the_documented_request() {
    let (server, seen) = capturing(verbatim(
        OPENAI_REFERENCE_RESPONSE,
        ("x-request-id", "req_abc123"),
    ));
    let provider = OpenAi::new(
        &server.url(),
        Some("sk-test-key".into()),
        Duration::from_secs(5),
    )
    .unwrap();
    let response = provider.call(&request()).unwrap();
    assert_eq!(response.text, "Hello! How can I assist you today?");
    assert_eq!(
        response.model_reported.as_deref(),
        Some("gpt-4.1-2025-04-14")
    );
    assert_eq!(
        response.system_fingerprint.as_deref(),
        Some("fp_44709d6fcb")
    );
    assert_eq!(response.stop_reason.as_deref(), Some("stop"));
    assert_eq!(response.input_tokens, Some(19));
    assert_eq!(response.output_tokens, Some(10));
    assert_eq!(response.request_id.as_deref(), Some("req_abc123"));
    assert_eq!(response.raw_body, OPENAI_REFERENCE_RESPONSE.as_bytes());

    let seen = seen.lock().unwrap();
    let sent = &seen[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(sent.header("x-api-key"), None);
    assert_eq!(sent.header("content-type"), Some("application/json"));
    let body = sent.json().unwrap();
    // A server other than OpenAI's own gets the older `max_tokens`.
    assert_eq!(
        keys_of(&body),
        ["max_tokens", "messages", "model", "temperature"]
    );
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(
        body["messages"],
        json!([
            { "role": "system", "content": "system text" },
            { "role": "user", "content": "the task" },
        ])
    );
    // OpenAI's own API takes `max_completion_tokens` instead.
    let openai = OpenAi::new("https://api.openai.com/v1", None, Duration::from_secs(1)).unwrap();
    let body: Value = serde_json::from_slice(&openai.body(&request())).unwrap();
    assert_eq!(
        keys_of(&body),
        ["max_completion_tokens", "messages", "model", "temperature"]
    );
}

const KEY: &str = "sk-ant-api03-Qm7vT2xLp9RwZk4NcY8dHj3F-Ub6sGe1Ao5KiWq0Xr-7hTz2Mv";

/// The first `len`-byte piece of `KEY` found in `text`.
fn key_piece_in(text: &[u8], len: usize) -> Option<String> {
    KEY.as_bytes()
        .windows(len)
        .find(|p| text.windows(len).any(|w| w == *p))
        .map(|p| String::from_utf8_lossy(p).into_owned())
}

fn keyed(url: &str) -> Vec<Box<dyn Provider>> {
    vec![
        Box::new(Anthropic::new(url, KEY.into(), Duration::from_secs(5)).unwrap()),
        Box::new(OpenAi::new(url, Some(KEY.into()), Duration::from_secs(5)).unwrap()),
    ]
}

#[test]
fn a_key_straddling_the_error_text_limit_leaves_no_piece() {
    // Filler before the key moves it across the 300 characters kept of an error body, one
    // character at a time: no 8-character piece of it survives at any offset.
    for pad in 230..=300 {
        let server =
            ScriptedServer::start(move |_| Reply::EchoKeyInError { status: 401, pad }).unwrap();
        for provider in keyed(&server.url()) {
            match provider.call(&request()) {
                Err(CallError::Rejected {
                    status, message, ..
                }) => {
                    assert_eq!(status, 401);
                    assert!(message.chars().count() <= 300, "{pad}: {message}");
                    assert_eq!(
                        key_piece_in(message.as_bytes(), 8),
                        None,
                        "{pad}: {message}"
                    );
                }
                other => panic!("{pad}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_key_echoed_in_a_body_or_a_kept_header_is_scrubbed() {
    for reply in [
        Reply::EchoKeyInBody("the answer".into()),
        Reply::EchoKeyInHeader("the answer".into()),
    ] {
        let server = ScriptedServer::start(move |_| reply.clone()).unwrap();
        for provider in keyed(&server.url()) {
            let response = provider.call(&request()).unwrap();
            assert_eq!(response.text, "the answer");
            assert_eq!(key_piece_in(&response.raw_body, 8), None);
            let id = response.request_id.unwrap_or_default();
            assert_eq!(key_piece_in(id.as_bytes(), 8), None, "{id}");
        }
    }
}

#[test]
fn a_provider_printed_for_debugging_shows_no_key() {
    let anthropic =
        Anthropic::new("http://127.0.0.1:1", KEY.into(), Duration::from_secs(1)).unwrap();
    let openai = OpenAi::new(
        "http://127.0.0.1:1",
        Some(KEY.into()),
        Duration::from_secs(1),
    )
    .unwrap();
    for shown in [format!("{anthropic:?}"), format!("{openai:?}")] {
        assert_eq!(key_piece_in(shown.as_bytes(), 8), None, "{shown}");
        assert!(shown.contains("Secret(<redacted>)"), "{shown}");
    }
}

#[test]
fn retry_after_reaches_the_caller_in_seconds_or_milliseconds() {
    let server = ScriptedServer::start(|r| {
        if r.index % 2 == 0 {
            Reply::RetryAfter(429, "7".into())
        } else {
            Reply::Verbatim {
                status: 529,
                headers: vec![("retry-after-ms".into(), "1500".into())],
                body:
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                        .into(),
            }
        }
    })
    .unwrap();
    let provider = Anthropic::new(&server.url(), "k".into(), Duration::from_secs(5)).unwrap();
    for (status, after) in [(429, 7000), (529, 1500)] {
        match provider.call(&request()) {
            Err(CallError::Rejected {
                status: got,
                retry_after,
                ..
            }) => {
                assert_eq!(got, status);
                assert_eq!(retry_after, Some(Duration::from_millis(after)));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_timeout_is_unknown_and_never_retried_by_the_engine() {
    use skilltrial_engine::engine::{self, RunOptions};
    use skilltrial_engine::home::Layout;
    use skilltrial_engine::journal::Journal;
    use skilltrial_engine::store::Store;

    // Given a provider that never answers the first request, and a client that waits 300 ms
    let work = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(|r| {
        if r.index == 0 {
            Reply::Hang
        } else {
            Reply::Answer("{}".into())
        }
    })
    .unwrap();
    let (pack, a, b, m) = loopback_plan(&server.url());
    let layout = Layout::new(work.path());
    let store = Store::open(&layout.store).unwrap();
    let payloads = Store::open(&layout.payloads).unwrap();
    let hash = engine::save_inputs(&store, &m, &pack, Some(&a), Some(&b)).unwrap();
    let inputs = engine::load_inputs(&store, &hash.hex()).unwrap();
    let mut journal = Journal::open(&layout.journal).unwrap();
    let provider = Anthropic::new(&server.url(), "k".into(), Duration::from_millis(300)).unwrap();

    // When the engine runs the plan
    let summary = engine::run(
        &mut journal,
        &payloads,
        &provider,
        &inputs,
        RunOptions {
            dispatch_limit: None,
            ..RunOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();

    // Then the timed-out attempt is unknown with its reserve held, and was sent exactly once
    let logged = server.requests();
    assert_eq!(
        logged.len(),
        18,
        "one request per trial, the timeout not re-sent"
    );
    let hung = logged[0].attempt.clone().unwrap();
    assert_eq!(
        logged
            .iter()
            .filter(|r| r.body_sha256 == logged[0].body_sha256)
            .count(),
        1
    );
    let attempts = journal.attempts(&summary.run).unwrap();
    let attempt = attempts.iter().find(|a| a.id == hung).unwrap();
    assert_eq!(attempt.outcome.map(|o| o.as_str()), Some("unknown"));
    assert_eq!(attempt.reasons, vec!["no_answer".to_owned()]);
    assert_eq!(
        attempts
            .iter()
            .filter(|a| a.trial_idx == attempt.trial_idx)
            .count(),
        1,
        "no retry planned"
    );
    assert_eq!(summary.reserved.0, attempt.reserved_micros);
    assert_eq!(summary.counts.get("unknown"), Some(&1));
}

/// The hosted runner's gate is asked before every dispatch: `Cancel` records a cancel (every
/// trial not yet sent closes `not_run`, reason `cancelled`); `Stop` pauses the run, resumable;
/// `Close` closes each trial it is asked about `not_run` with its own reason (the run is not
/// cancelled: nobody cancelled it) and the run finishes.
#[test]
fn a_gate_cancels_stops_or_closes_a_run_before_its_next_request() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use skilltrial_engine::engine::{self, Gate, RunOptions};
    use skilltrial_engine::journal::NotRunReason;

    let server = ScriptedServer::start(|_| Reply::Answer("{}".into())).unwrap();
    let (pack, a, b, m) = loopback_plan(&server.url());
    let provider = Anthropic::new(&server.url(), "k".into(), Duration::from_secs(10)).unwrap();

    let unavailable = Gate::Close(
        NotRunReason::ModelUnavailable,
        "this runner cannot call the run's model".to_owned(),
    );
    for (verdict, status) in [
        (Gate::Stop, "stopped"),
        (Gate::Cancel, "cancelled"),
        (unavailable, "finished"),
    ] {
        let mut w = workspace(&pack, &a, &b, &m);
        let asked = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&asked);
        let before = server.requests().len();
        // Given a gate that lets 5 trials through, then says `verdict`
        let gate_verdict = verdict.clone();
        let summary = engine::run(
            &mut w.journal,
            &w.payloads,
            &provider,
            &w.inputs,
            RunOptions {
                gate: Some(Arc::new(move || {
                    if counter.fetch_add(1, Ordering::SeqCst) < 5 {
                        Gate::Go
                    } else {
                        gate_verdict.clone()
                    }
                })),
                ..RunOptions::default()
            },
            &mut |_| {},
        )
        .unwrap();
        // Then exactly 5 requests were sent, and the run ended as the gate said
        assert_eq!(server.requests().len() - before, 5, "{verdict:?}");
        assert_eq!(summary.status, status, "{verdict:?}");
        let attempts = w.journal.attempts(&summary.run).unwrap();
        if verdict == Gate::Stop {
            assert_eq!(summary.counts.get("pending"), Some(&13), "{summary:?}");
        } else {
            // Every trial not sent is closed, with the gate's reason (and its message).
            let (reason, message) = match &verdict {
                Gate::Close(reason, message) => (reason.as_str(), Some(message.as_str())),
                _ => ("cancelled", None),
            };
            assert_eq!(summary.counts.get("not_run"), Some(&13), "{summary:?}");
            let closed: Vec<_> = attempts
                .iter()
                .filter(|a| a.dispatched_at_ms.is_none())
                .collect();
            assert_eq!(closed.len(), 13);
            assert!(
                closed.iter().all(|a| a.reasons == [reason]
                    && message.is_none_or(|m| a.error.as_deref() == Some(m))),
                "{closed:?}"
            );
            // Only a cancel is recorded as one.
            assert_eq!(
                w.journal.cancel_requested(&summary.run).unwrap(),
                verdict == Gate::Cancel
            );
        }
    }
}

/// The hosted runner's key is the operator's: with `stop_on_key_refusal`, a 401 stops the run
/// (resumable) instead of closing trial after trial, and the next start sends the refused trial
/// again as a new attempt naming the refused one. Without it (the CLI), the trial closes and the
/// run goes on.
#[test]
fn a_refused_key_stops_a_run_told_to_and_its_trial_is_sent_again_on_resume() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use skilltrial_engine::engine::{self, EngineError, Refusal, RunOptions};

    // Given a provider that refuses the key until the operator fixes it
    let fixed = Arc::new(AtomicBool::new(false));
    let server = {
        let fixed = Arc::clone(&fixed);
        ScriptedServer::start(move |r| {
            if r.index >= 3 && !fixed.load(Ordering::SeqCst) {
                Reply::Status(401)
            } else {
                Reply::Answer("{}".into())
            }
        })
        .unwrap()
    };
    let (pack, a, b, m) = loopback_plan(&server.url());
    let provider = Anthropic::new(&server.url(), "k".into(), Duration::from_secs(10)).unwrap();
    let Workspace {
        _dir,
        payloads,
        inputs,
        mut journal,
        hash,
    } = workspace(&pack, &a, &b, &m);
    let told = |journal: &mut skilltrial_engine::journal::Journal| {
        let options = RunOptions {
            stop_on_key_refusal: true,
            ..RunOptions::default()
        };
        engine::run(journal, &payloads, &provider, &inputs, options, &mut |_| {})
    };

    // When a run told to stop on a refused key meets the 401
    let err = told(&mut journal).unwrap_err();

    // Then it stopped right there: 3 answered, 1 refused, nothing more sent, resumable
    let EngineError::Refused(Refusal::KeyRefused { status, .. }) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*status, 401);
    assert!(err.to_string().contains("refused the model key"), "{err}");
    assert_eq!(server.requests().len(), 4);
    let row = journal.find_run(&hash.hex()).unwrap().unwrap();
    assert_eq!(row.status.as_str(), "stopped");
    let attempts = journal.attempts(&row.id).unwrap();
    let refused = attempts
        .iter()
        .find(|a| a.http_status == Some(401))
        .unwrap();
    assert_eq!(
        refused.outcome.map(|o| o.as_str()),
        Some("infrastructure_error")
    );
    assert_eq!(refused.spent_micros, Some(0), "nothing reached the model");

    // And while the key is still refused, a restart stops again on the same trial
    let again = told(&mut journal);
    assert!(
        matches!(again, Err(EngineError::Refused(Refusal::KeyRefused { .. }))),
        "{again:?}"
    );
    assert_eq!(server.requests().len(), 5);

    // When the key works again and the run restarts
    fixed.store(true, Ordering::SeqCst);
    let summary = told(&mut journal).unwrap();

    // Then every trial is answered: the refused one sent again as a new attempt naming the last
    // refusal, each other trial sent once
    assert_eq!(summary.status, "finished");
    assert_eq!(
        summary.counts.get("infrastructure_error"),
        None,
        "{summary:?}"
    );
    assert_eq!(server.requests().len(), 5 + 15);
    let attempts = journal.attempts(&summary.run).unwrap();
    let chain: Vec<_> = attempts
        .iter()
        .filter(|a| a.trial_idx == refused.trial_idx)
        .collect();
    assert_eq!(chain.len(), 3, "{chain:?}");
    assert_eq!(chain[2].retry_of.as_deref(), Some(chain[1].id.as_str()));
    assert!(
        chain[2]
            .retry_reason
            .as_deref()
            .is_some_and(|r| r.contains("key was refused")),
        "{chain:?}"
    );
    assert_eq!(chain[2].state.as_str(), "result");

    // And without the option (the CLI's run), a 401 closes its trial and the run goes on
    fixed.store(false, Ordering::SeqCst);
    let mut w = workspace(&pack, &a, &b, &m);
    let summary = engine::run(
        &mut w.journal,
        &w.payloads,
        &provider,
        &w.inputs,
        RunOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(summary.status, "finished");
    assert_eq!(
        summary.counts.get("infrastructure_error"),
        Some(&18),
        "{summary:?}"
    );
}

/// A fresh home with the plan's inputs saved: what `engine::run` needs.
struct Workspace {
    _dir: tempfile::TempDir,
    payloads: skilltrial_engine::store::Store,
    inputs: skilltrial_engine::engine::Inputs,
    journal: skilltrial_engine::journal::Journal,
    hash: skilltrial_core::digest::Sha256Digest,
}

fn workspace(
    pack: &skilltrial_core::pack::Pack,
    a: &skilltrial_core::bundle::Bundle,
    b: &skilltrial_core::bundle::Bundle,
    m: &skilltrial_core::manifest::Manifest,
) -> Workspace {
    use skilltrial_engine::engine;
    use skilltrial_engine::home::Layout;
    use skilltrial_engine::store::Store;
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path());
    let store = Store::open(&layout.store).unwrap();
    let payloads = Store::open(&layout.payloads).unwrap();
    let hash = engine::save_inputs(&store, m, pack, Some(a), Some(b)).unwrap();
    let inputs = engine::load_inputs(&store, &hash.hex()).unwrap();
    let journal = skilltrial_engine::journal::Journal::open(&layout.journal).unwrap();
    Workspace {
        _dir: dir,
        payloads,
        inputs,
        journal,
        hash,
    }
}

/// The example bundles, the embedded pack and a one-repetition manifest planned against a
/// priced loopback profile at `url`: what the engine-level tests below run.
fn loopback_plan(
    url: &str,
) -> (
    skilltrial_core::pack::Pack,
    skilltrial_core::bundle::Bundle,
    skilltrial_core::bundle::Bundle,
    skilltrial_core::manifest::Manifest,
) {
    use skilltrial_core::manifest::{self, PlanOptions};
    use skilltrial_core::money::{MicroUsd, PerMtok};
    use skilltrial_core::profile::{Price, Profile, ProviderKind};
    use skilltrial_core::{bundle, pack};

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pack = pack::open("solana-core@1.0.3").unwrap();
    let a = bundle::import(&root.join("fixtures/bundles/solana-reader-1.4.2")).unwrap();
    let b = bundle::import(&root.join("fixtures/bundles/solana-reader-1.5.0")).unwrap();
    let profile = Profile {
        id: "loopback".into(),
        provider: ProviderKind::Anthropic,
        model: "loopback-model".into(),
        revision: None,
        base_url: Some(url.to_owned()),
        context_tokens: 200_000,
        max_output_tokens: 1024,
        price: Some(Price {
            input: PerMtok(3_000_000),
            output: PerMtok(15_000_000),
            source: "test".into(),
            as_of: "2026-11-29".into(),
            cache: None,
        }),
        origin: "test".into(),
    };
    let options = PlanOptions {
        repetitions: 1,
        seed: 1,
        cap: Some(MicroUsd::parse_usd("10").unwrap()),
        max_requests: None,
        max_tokens: None,
        max_output_tokens: Some(1024),
        endpoint: url.to_owned(),
        scripted: false,
    };
    let m = manifest::build(&pack, Some(&a), Some(&b), &profile, &options).unwrap();
    (pack, a, b, m)
}

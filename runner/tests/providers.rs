//! Both wire formats against a real HTTP server on loopback, including every fault the engine
//! must classify: error statuses, refused connections, hangs, bodies cut off, malformed JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use skilltrial_runner::provider::{Anthropic, CallError, ModelRequest, OpenAi, Provider};
use skilltrial_runner::scripted::{Reply, ScriptedServer};

fn request() -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: "system text".into(),
        user: "the task".into(),
        max_output_tokens: 64,
        temperature: "0".into(),
        attempt: Some("run-000-1".into()),
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
        assert!(response.input_tokens.unwrap() > 0 && response.output_tokens.unwrap() > 0);
        assert_eq!(response.request_id.as_deref(), Some("req_scripted"));
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
        skilltrial_runner::provider::request_sha256(&anthropic.body(&request()))
    );
}

#[test]
fn regression_a_base_url_ending_in_v1_is_not_doubled() {
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
    use skilltrial_runner::provider::may_carry_key;
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

//! Tool use on the wire: both providers' request bodies with tools and history, their parsing
//! of tool calls and cache usage (against responses quoted from the providers' docs, served
//! verbatim by a real loopback server), and the scripted model answering with tool calls.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use skilltrial_core::delivery;
use skilltrial_engine::provider::{
    Anthropic, CallError, Exchange, MAX_TOOL_CALL_ID_BYTES, ModelRequest, ModelResponse, OpenAi,
    Provider, ToolCall, ToolReply, request_sha256,
};
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

/// An inline request with text that JSON must escape (quotes, newlines, `&`, `<`, non-ASCII).
fn inline_request(temperature: &str) -> ModelRequest {
    ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: "You answer Solana tasks.\nBe \"exact\" & brief: <none>.".into(),
        user: "<skill name=\"lamports\">\nSKILL.md: 1 SOL = 10^9 lamports — ünïcode ✓\n</skill>\n\nTask: convert 2.5 SOL.".into(),
        max_output_tokens: 2048,
        temperature: temperature.into(),
        attempt: Some("run-001-3".into()),
        tools: Vec::new(),
        history: Vec::new(),
        cache: false,
        stable_prefix: 0,
    }
}

// The bodies below were produced by the providers as they were before tool use existed (commit
// e0d2274), from `inline_request`: an inline request's bytes, and so its journaled hash, must
// never move.
const ANTHROPIC_INLINE_BODY: &str = r#"{"max_tokens":2048,"messages":[{"content":"<skill name=\"lamports\">\nSKILL.md: 1 SOL = 10^9 lamports — ünïcode ✓\n</skill>\n\nTask: convert 2.5 SOL.","role":"user"}],"model":"claude-sonnet-4-5","system":"You answer Solana tasks.\nBe \"exact\" & brief: <none>.","temperature":0.0}"#;
const ANTHROPIC_INLINE_SHA256: &str =
    "271ac2a7d6747c303263bf589623c1e9852bdf888f507b62159094046f4a6e34";
const OPENAI_COMPATIBLE_INLINE_BODY: &str = r#"{"max_tokens":2048,"messages":[{"content":"You answer Solana tasks.\nBe \"exact\" & brief: <none>.","role":"system"},{"content":"<skill name=\"lamports\">\nSKILL.md: 1 SOL = 10^9 lamports — ünïcode ✓\n</skill>\n\nTask: convert 2.5 SOL.","role":"user"}],"model":"claude-sonnet-4-5","temperature":0.0}"#;
const OPENAI_COMPATIBLE_INLINE_SHA256: &str =
    "e52264202b770bc223f222c62495b9a0ef80429b19bc756832ed4f57ffbf9798";
const OPENAI_INLINE_BODY: &str = r#"{"max_completion_tokens":2048,"messages":[{"content":"You answer Solana tasks.\nBe \"exact\" & brief: <none>.","role":"system"},{"content":"<skill name=\"lamports\">\nSKILL.md: 1 SOL = 10^9 lamports — ünïcode ✓\n</skill>\n\nTask: convert 2.5 SOL.","role":"user"}],"model":"claude-sonnet-4-5","temperature":0.0}"#;
const OPENAI_INLINE_SHA256: &str =
    "02be3c37af1ce41cb77dd49b0fb1cf589477cf1d4a5763936c1994f43a03274d";
/// The same request at temperature 0.7.
const ANTHROPIC_INLINE_T07_SHA256: &str =
    "f84f5389c13bfd084e285a6a52133c0e67e54300aba3aff630f99ae3c9eb7331";
const OPENAI_COMPATIBLE_INLINE_T07_SHA256: &str =
    "b15262993cb774251c009f9d9e5f4da76d8be50f49d82b39d53a2370078b24e2";

#[test]
fn inline_bodies_are_byte_for_byte_what_they_were_before_tool_use() {
    // Given an inline request (no tools, no history) to each provider,
    let anthropic = anthropic("http://127.0.0.1:9");
    let compatible = openai("http://127.0.0.1:9/v1");
    let openai_own = openai("https://api.openai.com/v1");
    let cases: [(&dyn Provider, &str, Option<&str>, &str); 5] = [
        (
            &anthropic,
            "0",
            Some(ANTHROPIC_INLINE_BODY),
            ANTHROPIC_INLINE_SHA256,
        ),
        (
            &compatible,
            "0",
            Some(OPENAI_COMPATIBLE_INLINE_BODY),
            OPENAI_COMPATIBLE_INLINE_SHA256,
        ),
        (
            &openai_own,
            "0",
            Some(OPENAI_INLINE_BODY),
            OPENAI_INLINE_SHA256,
        ),
        (&anthropic, "0.7", None, ANTHROPIC_INLINE_T07_SHA256),
        (
            &compatible,
            "0.7",
            None,
            OPENAI_COMPATIBLE_INLINE_T07_SHA256,
        ),
    ];
    for (provider, temperature, pinned_body, pinned_sha256) in cases {
        // when its body is built, then it is the one pinned before tool use, byte for byte.
        let body = provider.body(&inline_request(temperature));
        if let Some(pinned) = pinned_body {
            assert_eq!(String::from_utf8(body.clone()).unwrap(), pinned);
        }
        assert_eq!(request_sha256(&body).hex(), pinned_sha256);
    }
}

// ---------------------------------------------------------------------------------------------
// Responses quoted from the providers' docs, served verbatim.

/// The example response with a `tool_use` block in Anthropic's docs
/// (platform.claude.com/docs, `docs/en/agents-and-tools/tool-use/handle-tool-calls.md`,
/// "Example API response with a `tool_use` content block"), verbatim as quoted in
/// shared/research/skill-delivery.md §2.
const ANTHROPIC_TOOL_USE_RESPONSE: &str = r#"{
  "id": "msg_01Aq9w938a90dw8q",
  "model": "claude-opus-5",
  "stop_reason": "tool_use",
  "role": "assistant",
  "content": [
    {
      "type": "text",
      "text": "I'll check the current weather in San Francisco for you."
    },
    {
      "type": "tool_use",
      "id": "toolu_01A09q90qw90lq917835lq9",
      "name": "get_weather",
      "input": { "location": "San Francisco, CA", "unit": "celsius" }
    }
  ]
}"#;

/// The "Functions" example response of `POST /v1/chat/completions` in OpenAI's API reference
/// (platform.openai.com/docs/api-reference/chat/create; `openai/openai-openapi` openapi.yaml),
/// verbatim: a message that only calls a tool has `content: null`.
const OPENAI_TOOL_CALLS_RESPONSE: &str = r#"{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1699896916,
  "model": "gpt-4o-mini",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {
            "id": "call_abc123",
            "type": "function",
            "function": {
              "name": "get_current_weather",
              "arguments": "{\n\"location\": \"Boston, MA\"\n}"
            }
          }
        ]
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {
    "prompt_tokens": 82,
    "completion_tokens": 17,
    "total_tokens": 99,
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  }
}"#;

/// A message around the `usage` object of Anthropic's prompt-caching docs
/// (`docs/en/build-with-claude/prompt-caching.md`), which is verbatim (as quoted in
/// shared/research/skill-delivery.md §4); the rest of the message is ours.
const ANTHROPIC_CACHE_USAGE_RESPONSE: &str = r#"{"id":"msg_cache","type":"message","role":"assistant","model":"claude-opus-5","content":[{"type":"text","text":"42"}],"stop_reason":"end_turn","stop_sequence":null,
"usage": { "input_tokens": 2048, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 248,
             "output_tokens": 503,
             "cache_creation": { "ephemeral_5m_input_tokens": 148, "ephemeral_1h_input_tokens": 100 } } }"#;

/// A chat completion around the `usage` object printed in OpenAI's cookbook
/// (`openai/openai-cookbook` `examples/Prompt_Caching_201.ipynb`), which is verbatim (as quoted in
/// shared/research/skill-delivery.md §5); the rest of the completion is ours.
const OPENAI_CACHE_USAGE_RESPONSE: &str = r#"{"id":"chatcmpl-cache","object":"chat.completion","model":"gpt-4.1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"42"}}],
"usage": { "prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
           "prompt_tokens_details": { "cached_tokens": 1920 },
           "completion_tokens_details": { "reasoning_tokens": 0, "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0 } }}"#;

fn anthropic(url: &str) -> Anthropic {
    Anthropic::new(url, "sk-ant-test-key".into(), Duration::from_secs(5)).unwrap()
}

fn openai(url: &str) -> OpenAi {
    OpenAi::new(url, Some("sk-test-key".into()), Duration::from_secs(5)).unwrap()
}

fn verbatim(body: &str) -> Reply {
    Reply::Verbatim {
        status: 200,
        headers: Vec::new(),
        body: body.to_owned(),
    }
}

/// Every request the server received, in full.
fn capturing(
    respond: impl Fn(&ServerRequest) -> Reply + Send + Sync + 'static,
) -> (ScriptedServer, Arc<Mutex<Vec<ServerRequest>>>) {
    let seen: Arc<Mutex<Vec<ServerRequest>>> = Arc::default();
    let server = {
        let seen = Arc::clone(&seen);
        ScriptedServer::start(move |r| {
            seen.lock().unwrap().push(r.clone());
            respond(r)
        })
        .unwrap()
    };
    (server, seen)
}

/// A progressive request: the task alone as the user message, the two skill tools.
fn progressive_request(history: Vec<Exchange>) -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: "catalog".into(),
        user: "the task".into(),
        max_output_tokens: 64,
        temperature: "0".into(),
        attempt: Some("run-000-1".into()),
        tools: delivery::tools(),
        history,
        cache: false,
        stable_prefix: 0,
    }
}

/// Calls `provider` against a server that answers every request with `body`, verbatim.
fn served(provider: MakeProvider, body: &str) -> Result<ModelResponse, CallError> {
    let server = ScriptedServer::start({
        let body = body.to_owned();
        move |_| verbatim(&body)
    })
    .unwrap();
    provider(&server.url()).call(&progressive_request(Vec::new()))
}

/// Builds a provider for a server's URL.
type MakeProvider = fn(&str) -> Box<dyn Provider>;

fn boxed_anthropic(url: &str) -> Box<dyn Provider> {
    Box::new(anthropic(url))
}

fn boxed_openai(url: &str) -> Box<dyn Provider> {
    Box::new(openai(url))
}

#[test]
fn anthropic_tool_use_reference_response_parses_into_a_tool_call() {
    // Given Anthropic's documented tool_use response, when it comes back,
    let response = served(boxed_anthropic, ANTHROPIC_TOOL_USE_RESPONSE).unwrap();
    // then its text block is the text and its tool_use block one call, `input` as compact JSON.
    assert_eq!(
        response.text,
        "I'll check the current weather in San Francisco for you."
    );
    assert_eq!(
        response.tool_calls,
        [ToolCall {
            id: "toolu_01A09q90qw90lq917835lq9".into(),
            name: "get_weather".into(),
            arguments: r#"{"location":"San Francisco, CA","unit":"celsius"}"#.into(),
        }]
    );
    assert_eq!(response.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(response.model_reported.as_deref(), Some("claude-opus-5"));
    // The example carries no usage: it stays unknown (the engine then charges the reserve).
    assert_eq!(response.input_tokens, None);
    assert_eq!(response.output_tokens, None);
    assert_eq!(response.raw_body, ANTHROPIC_TOOL_USE_RESPONSE.as_bytes());
}

#[test]
fn openai_tool_calls_with_null_content_parse_to_empty_text() {
    // Given OpenAI's documented tool_calls response, whose content is null, when it comes back,
    let response = served(boxed_openai, OPENAI_TOOL_CALLS_RESPONSE).unwrap();
    // then the text is empty (not an error) and the call's arguments are the string as sent.
    assert_eq!(response.text, "");
    assert_eq!(
        response.tool_calls,
        [ToolCall {
            id: "call_abc123".into(),
            name: "get_current_weather".into(),
            arguments: "{\n\"location\": \"Boston, MA\"\n}".into(),
        }]
    );
    assert_eq!(response.stop_reason.as_deref(), Some("tool_calls"));
    assert_eq!(response.input_tokens, Some(82));
    assert_eq!(response.output_tokens, Some(17));
    // No prompt_tokens_details: nothing is known of the cache.
    assert_eq!(response.cache_read_tokens, None);
    assert_eq!(response.cache_write_tokens, None);
}

#[test]
fn anthropic_cache_reads_and_writes_count_into_the_input_billed() {
    // Given Anthropic's documented usage with cache reads and writes, when it comes back,
    let response = served(boxed_anthropic, ANTHROPIC_CACHE_USAGE_RESPONSE).unwrap();
    // then the input is everything billed (2048 + 1800 + 248), and both cache parts are kept.
    assert_eq!(response.input_tokens, Some(4096));
    assert_eq!(response.cache_read_tokens, Some(1800));
    assert_eq!(response.cache_write_tokens, Some(248));
    assert_eq!(response.output_tokens, Some(503));
    assert_eq!(response.text, "42");
    assert!(response.tool_calls.is_empty());
}

#[test]
fn openai_cached_tokens_are_part_of_the_prompt_tokens() {
    // Given the cookbook's usage, whose cached tokens are a part of prompt_tokens,
    let response = served(boxed_openai, OPENAI_CACHE_USAGE_RESPONSE).unwrap();
    // then the input is prompt_tokens alone, and the cached part is the read.
    assert_eq!(response.input_tokens, Some(2006));
    assert_eq!(response.cache_read_tokens, Some(1920));
    assert_eq!(response.cache_write_tokens, None);
    assert_eq!(response.output_tokens, Some(300));

    // Given a usage with `cache_write_tokens` (the field `openai-python`'s
    // types/completion_usage.py lists; constructed, no verbatim example exists), the write is
    // kept and the input is still prompt_tokens.
    let body = r#"{"model":"gpt-5.6","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"42"}}],"usage":{"prompt_tokens":3000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":1024,"cache_write_tokens":1900}}}"#;
    let response = served(boxed_openai, body).unwrap();
    assert_eq!(response.input_tokens, Some(3000));
    assert_eq!(response.cache_read_tokens, Some(1024));
    assert_eq!(response.cache_write_tokens, Some(1900));
}

#[test]
fn a_garbled_cache_count_leaves_the_usage_unknown_not_zero() {
    // Given an Anthropic usage whose cache count is not a number, the total input is unknown
    // (the engine charges the reserve) rather than short by the cached part;
    let body = r#"{"model":"m","content":[{"type":"text","text":"42"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":"1800","output_tokens":2}}"#;
    let response = served(boxed_anthropic, body).unwrap();
    assert_eq!(response.input_tokens, None);
    assert_eq!(response.cache_read_tokens, None);
    assert_eq!(response.output_tokens, Some(2));
    // a null count (as SDK types allow) is simply not reported.
    let body = r#"{"model":"m","content":[{"type":"text","text":"42"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":null,"cache_creation_input_tokens":0,"output_tokens":2}}"#;
    let response = served(boxed_anthropic, body).unwrap();
    assert_eq!(response.input_tokens, Some(10));
    assert_eq!(response.cache_read_tokens, None);
    assert_eq!(response.cache_write_tokens, Some(0));
}

#[test]
fn a_tool_call_without_id_or_name_is_lost_not_half_answered() {
    let cases: [(MakeProvider, &str); 5] = [
        (
            boxed_anthropic,
            r#"{"content":[{"type":"tool_use","name":"load_skill","input":{}}],"stop_reason":"tool_use"}"#,
        ),
        (
            boxed_anthropic,
            r#"{"content":[{"type":"tool_use","id":"toolu_1","name":7,"input":{}}],"stop_reason":"tool_use"}"#,
        ),
        (
            boxed_openai,
            r#"{"choices":[{"finish_reason":"tool_calls","message":{"content":null,"tool_calls":[{"type":"function","function":{"name":"load_skill","arguments":"{}"}}]}}]}"#,
        ),
        (
            boxed_openai,
            r#"{"choices":[{"finish_reason":"tool_calls","message":{"content":null,"tool_calls":[{"id":"call_1","type":"function"}]}}]}"#,
        ),
        (
            boxed_openai,
            r#"{"choices":[{"finish_reason":"tool_calls","message":{"content":null,"tool_calls":{"id":"call_1"}}}]}"#,
        ),
    ];
    for (provider, body) in cases {
        // Given a response with a call that cannot be answered, when it comes back, then the
        // call is lost (malformed), as a response missing its content is.
        match served(provider, body) {
            Err(CallError::Lost {
                message,
                http_status,
            }) => {
                assert_eq!(http_status, Some(200));
                assert!(message.contains("tool"), "{body}: {message}");
            }
            other => panic!("{body}: {other:?}"),
        }
    }
}

#[test]
fn a_tool_call_id_that_cannot_be_sent_back_is_lost_not_journaled() {
    let long = "t".repeat(MAX_TOOL_CALL_ID_BYTES + 1);
    let bodies: [(MakeProvider, String); 4] = [
        (boxed_anthropic, format!(r#"{{"content":[{{"type":"tool_use","id":"{long}","name":"load_skill","input":{{}}}}],"stop_reason":"tool_use"}}"#)),
        (boxed_anthropic, r#"{"content":[{"type":"tool_use","id":"","name":"load_skill","input":{}}],"stop_reason":"tool_use"}"#.to_owned()),
        (boxed_openai, format!(r#"{{"choices":[{{"finish_reason":"tool_calls","message":{{"content":null,"tool_calls":[{{"id":"{long}","type":"function","function":{{"name":"load_skill","arguments":"{{}}"}}}}]}}}}]}}"#)),
        (boxed_openai, r#"{"choices":[{"finish_reason":"tool_calls","message":{"content":null,"tool_calls":[{"id":"call\u0000x","type":"function","function":{"name":"load_skill","arguments":"{}"}}]}}]}"#.to_owned()),
    ];
    for (provider, body) in bodies {
        // Given a call whose id is empty, too long or holds a control character, the response
        // is malformed: the id is never kept nor echoed in a later request.
        match served(provider, &body) {
            Err(CallError::Lost { message, .. }) => {
                assert!(message.contains("tool call 0 has an id"), "{message}");
            }
            other => panic!("{}: {other:?}", &body[..80]),
        }
    }
    // The longest allowed id, and ids as providers write them, are kept as sent.
    let longest = "t".repeat(MAX_TOOL_CALL_ID_BYTES);
    for id in [
        longest.as_str(),
        "toolu_01A09q90qw90lq917835lq9",
        "functions.load_skill:0",
    ] {
        let body = format!(
            r#"{{"content":[{{"type":"tool_use","id":"{id}","name":"load_skill","input":{{}}}}],"stop_reason":"tool_use"}}"#
        );
        let response = served(boxed_anthropic, &body).unwrap();
        assert_eq!(response.tool_calls[0].id, id);
    }
}

#[test]
fn a_message_with_neither_text_nor_tool_calls_is_lost_as_before() {
    for body in [
        r#"{"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":null}}]}"#,
        r#"{"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":null,"tool_calls":[]}}]}"#,
        r#"{"choices":[{"finish_reason":"stop","message":{"role":"assistant"}}]}"#,
    ] {
        match served(boxed_openai, body) {
            Err(CallError::Lost { message, .. }) => {
                assert_eq!(message, "the first choice has no message content");
            }
            other => panic!("{body}: {other:?}"),
        }
    }
    // An Anthropic answer without text blocks or calls is an empty answer, as before.
    let response = served(
        boxed_anthropic,
        r#"{"content":[],"stop_reason":"end_turn"}"#,
    )
    .unwrap();
    assert_eq!(response.text, "");
    assert!(response.tool_calls.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Request bodies of a later turn.

/// Two earlier turns: a load with a text and a second call that got an error, then a read whose
/// arguments are not JSON.
fn two_exchanges(prefix: &str) -> Vec<Exchange> {
    vec![
        Exchange {
            text: "I'll load the skill.".into(),
            calls: vec![
                ToolCall {
                    id: format!("{prefix}_1"),
                    name: "load_skill".into(),
                    arguments: r#"{"name":"lamports"}"#.into(),
                },
                ToolCall {
                    id: format!("{prefix}_2"),
                    name: "load_skill".into(),
                    arguments: r#"{"name":"other"}"#.into(),
                },
            ],
            replies: vec![
                ToolReply {
                    call_id: format!("{prefix}_1"),
                    content: "<skill_content name=\"lamports\">…</skill_content>".into(),
                    is_error: false,
                },
                ToolReply {
                    call_id: format!("{prefix}_2"),
                    content: "error: one call per turn".into(),
                    is_error: true,
                },
            ],
        },
        Exchange {
            text: String::new(),
            calls: vec![ToolCall {
                id: format!("{prefix}_3"),
                name: "read_skill_resource".into(),
                arguments: r#"{"name": "lamports", "path"#.into(),
            }],
            replies: vec![ToolReply {
                call_id: format!("{prefix}_3"),
                content: "error: bad arguments".into(),
                is_error: true,
            }],
        },
    ]
}

/// The body the server received for `request`.
fn sent_body(provider: MakeProvider, request: &ModelRequest) -> Value {
    let (server, seen) = capturing(|_| Reply::Answer("42".into()));
    let provider = provider(&server.url());
    provider.call(request).unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    // What was sent is what `body` builds (and what the journal hashes).
    assert_eq!(seen[0].body, provider.body(request));
    seen[0].json().unwrap()
}

#[test]
fn anthropic_later_turn_repeats_each_call_and_marks_only_error_replies() {
    let body = sent_body(
        boxed_anthropic,
        &progressive_request(two_exchanges("toolu")),
    );
    assert_eq!(
        body["tools"],
        json!([
            {
                "name": "load_skill",
                "description": delivery::tools()[0].description,
                "input_schema": delivery::tools()[0].input_schema,
            },
            {
                "name": "read_skill_resource",
                "description": delivery::tools()[1].description,
                "input_schema": delivery::tools()[1].input_schema,
            },
        ])
    );
    assert_eq!(
        body["tool_choice"],
        json!({ "type": "auto", "disable_parallel_tool_use": true })
    );
    assert_eq!(body["system"], "catalog");
    assert_eq!(
        body["messages"],
        json!([
            { "role": "user", "content": "the task" },
            { "role": "assistant", "content": [
                { "type": "text", "text": "I'll load the skill." },
                { "type": "tool_use", "id": "toolu_1", "name": "load_skill", "input": { "name": "lamports" } },
                { "type": "tool_use", "id": "toolu_2", "name": "load_skill", "input": { "name": "other" } },
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1",
                  "content": "<skill_content name=\"lamports\">…</skill_content>" },
                { "type": "tool_result", "tool_use_id": "toolu_2",
                  "content": "error: one call per turn", "is_error": true },
            ] },
            // No text: no empty text block. Arguments that are not a JSON object go back as {}.
            { "role": "assistant", "content": [
                { "type": "tool_use", "id": "toolu_3", "name": "read_skill_resource", "input": {} },
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_3",
                  "content": "error: bad arguments", "is_error": true },
            ] },
        ])
    );
    let mut keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "max_tokens",
            "messages",
            "model",
            "system",
            "temperature",
            "tool_choice",
            "tools"
        ]
    );
}

#[test]
fn openai_later_turn_repeats_each_call_verbatim_and_answers_with_tool_messages() {
    let body = sent_body(boxed_openai, &progressive_request(two_exchanges("call")));
    assert_eq!(
        body["tools"],
        json!([
            { "type": "function", "function": {
                "name": "load_skill",
                "description": delivery::tools()[0].description,
                "parameters": delivery::tools()[0].input_schema,
            } },
            { "type": "function", "function": {
                "name": "read_skill_resource",
                "description": delivery::tools()[1].description,
                "parameters": delivery::tools()[1].input_schema,
            } },
        ])
    );
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(
        body["messages"],
        json!([
            { "role": "system", "content": "catalog" },
            { "role": "user", "content": "the task" },
            { "role": "assistant", "content": "I'll load the skill.", "tool_calls": [
                { "id": "call_1", "type": "function",
                  "function": { "name": "load_skill", "arguments": "{\"name\":\"lamports\"}" } },
                { "id": "call_2", "type": "function",
                  "function": { "name": "load_skill", "arguments": "{\"name\":\"other\"}" } },
            ] },
            { "role": "tool", "tool_call_id": "call_1",
              "content": "<skill_content name=\"lamports\">…</skill_content>" },
            // Chat completions have no error flag: the reply's text says it.
            { "role": "tool", "tool_call_id": "call_2", "content": "error: one call per turn" },
            // No text: content null. The arguments go back exactly as the model wrote them.
            { "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_3", "type": "function",
                  "function": { "name": "read_skill_resource", "arguments": "{\"name\": \"lamports\", \"path" } },
            ] },
            { "role": "tool", "tool_call_id": "call_3", "content": "error: bad arguments" },
        ])
    );
    let mut keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "max_tokens",
            "messages",
            "model",
            "parallel_tool_calls",
            "temperature",
            "tool_choice",
            "tools"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The scripted model using tools, through the real clients.

#[test]
fn scripted_tool_calls_round_trip_through_both_clients() {
    for (provider, id_prefix, stop, flags_errors) in [
        (
            boxed_anthropic as MakeProvider,
            "toolu_st",
            "tool_use",
            true,
        ),
        (boxed_openai, "call_st", "tool_calls", false),
    ] {
        // Given a scripted model that loads a skill on turn 1 (with a second call besides), and
        // on turn 2 answers with what the request carried,
        let (server, seen) = capturing(|r| match r.turn() {
            1 => Reply::Tools {
                text: "Loading.".into(),
                calls: vec![
                    ("load_skill".into(), r#"{"name":"lamports"}"#.into()),
                    (
                        "read_skill_resource".into(),
                        r#"{"name":"lamports","path":"references/a.md"}"#.into(),
                    ),
                ],
            },
            turn => Reply::Answer(format!(
                "turn {turn}; task {}; tools {:?}; results {:?}",
                r.task_text(),
                r.tool_names(),
                r.tool_results()
            )),
        });
        let provider = provider(&server.url());
        // when turn 1 is sent,
        let first = progressive_request(Vec::new());
        let response = provider.call(&first).unwrap();
        // then the calls come back with the scripted ids, in order,
        assert_eq!(response.text, "Loading.");
        assert_eq!(
            response.tool_calls,
            [
                ToolCall {
                    id: format!("{id_prefix}_0_0"),
                    name: "load_skill".into(),
                    arguments: r#"{"name":"lamports"}"#.into(),
                },
                ToolCall {
                    id: format!("{id_prefix}_0_1"),
                    name: "read_skill_resource".into(),
                    arguments: r#"{"name":"lamports","path":"references/a.md"}"#.into(),
                },
            ]
        );
        assert_eq!(response.stop_reason.as_deref(), Some(stop));
        // with usage from bytes, as for a plain answer: the body sent; the text and the calls.
        assert_eq!(
            response.input_tokens,
            Some((provider.body(&first).len() as u64).div_ceil(4))
        );
        let answered = "Loading.".len()
            + "load_skill".len()
            + r#"{"name":"lamports"}"#.len()
            + "read_skill_resource".len()
            + r#"{"name":"lamports","path":"references/a.md"}"#.len();
        assert_eq!(response.output_tokens, Some((answered as u64).div_ceil(4)));

        // When turn 2 carries the exchange back,
        let replies = vec![
            ToolReply {
                call_id: response.tool_calls[0].id.clone(),
                content: "SKILL body".into(),
                is_error: false,
            },
            ToolReply {
                call_id: response.tool_calls[1].id.clone(),
                content: "one call per turn".into(),
                is_error: true,
            },
        ];
        let second = progressive_request(vec![Exchange {
            text: response.text.clone(),
            calls: response.tool_calls.clone(),
            replies,
        }]);
        let answer = provider.call(&second).unwrap();
        // then the server read the turn, the task, the tools and the replies out of it.
        assert_eq!(
            answer.text,
            format!(
                "turn 2; task the task; tools [\"load_skill\", \"read_skill_resource\"]; results [(\"{id_prefix}_0_0\", \"SKILL body\", false), (\"{id_prefix}_0_1\", \"one call per turn\", {flags_errors})]"
            )
        );
        assert!(answer.tool_calls.is_empty());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].turn(), 1);
        assert!(seen[0].tool_results().is_empty());
        assert_eq!(seen[0].task_text(), "the task");
        assert_eq!(seen[1].turn(), 2);
    }
}

#[test]
fn arguments_that_are_not_json_are_kept_verbatim() {
    // Given a model that writes broken JSON as a call's arguments (OpenAI warns it may),
    let broken = r#"{"name": "lamports", "path": "#;
    let server = ScriptedServer::start(move |_| Reply::Tools {
        text: String::new(),
        calls: vec![("read_skill_resource".into(), broken.into())],
    })
    .unwrap();
    // when the answer is parsed, then the arguments are the text as sent, for the runner to
    // answer with a bad-arguments error, and the text is empty.
    let response = openai(&server.url())
        .call(&progressive_request(Vec::new()))
        .unwrap();
    assert_eq!(response.text, "");
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].arguments, broken);

    // A server that sends the arguments as an object gets them kept as compact JSON; missing
    // arguments are empty (not JSON either).
    let body = r#"{"choices":[{"finish_reason":"tool_calls","message":{"content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"load_skill","arguments":{"name":"lamports"}}},{"id":"c2","type":"function","function":{"name":"load_skill"}}]}}]}"#;
    let response = served(boxed_openai, body).unwrap();
    assert_eq!(response.tool_calls[0].arguments, r#"{"name":"lamports"}"#);
    assert_eq!(response.tool_calls[1].arguments, "");
    // An Anthropic tool_use without `input` gets empty arguments too.
    let body = r#"{"content":[{"type":"tool_use","id":"t1","name":"load_skill"}],"stop_reason":"tool_use"}"#;
    let response = served(boxed_anthropic, body).unwrap();
    assert_eq!(response.tool_calls[0].arguments, "");
}

#[test]
fn with_caching_anthropic_marks_the_system_the_inline_skill_block_and_a_progressive_history() {
    let provider =
        Anthropic::new("http://127.0.0.1:1", "k".into(), Duration::from_secs(1)).unwrap();
    let mut inline = inline_request("0");
    inline.user = "<skill>SKILL</skill>\n\n<task>T</task>".into();
    inline.stable_prefix = "<skill>SKILL</skill>\n\n".len();
    let plain: Value = serde_json::from_slice(&provider.body(&inline)).unwrap();
    assert!(
        plain["system"].is_string(),
        "no marker without caching: {plain}"
    );
    assert!(plain["messages"][0]["content"].is_string());
    inline.cache = true;
    let cached: Value = serde_json::from_slice(&provider.body(&inline)).unwrap();
    assert_eq!(cached["system"][0]["cache_control"]["type"], "ephemeral");
    let content = &cached["messages"][0]["content"];
    assert_eq!(content[0]["text"], "<skill>SKILL</skill>\n\n");
    assert_eq!(content[0]["cache_control"]["type"], "ephemeral");
    assert_eq!(content[1]["text"], "<task>T</task>");
    assert!(content[1].get("cache_control").is_none());
    assert!(
        cached.get("cache_control").is_none(),
        "inline needs no moving breakpoint"
    );
    // The baseline has no stable prefix: its user message stays one string.
    inline.stable_prefix = 0;
    let baseline: Value = serde_json::from_slice(&provider.body(&inline)).unwrap();
    assert!(baseline["messages"][0]["content"].is_string());

    let mut progressive = progressive_request(Vec::new());
    progressive.cache = true;
    let body: Value = serde_json::from_slice(&provider.body(&progressive)).unwrap();
    assert_eq!(body["cache_control"]["type"], "ephemeral");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
}

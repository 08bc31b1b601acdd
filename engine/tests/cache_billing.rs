//! The billing loopback server (`ScriptedServer::start_billing`): prompt caching simulated and
//! reported the way each provider does, seen through the real providers (Anthropic's explicit
//! breakpoints, its automatic caching and look-back; OpenAI's automatic prefix caching).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use skilltrial_core::delivery::{self, ToolCall, ToolReply};
use skilltrial_engine::provider::{
    Anthropic, Exchange, ModelRequest, ModelResponse, OpenAi, Provider,
};
use skilltrial_engine::scripted::{
    Bill, CACHE_MIN_TOKENS, OPENAI_CACHE_STEP_TOKENS, Reply, ScriptedServer,
};

fn billing_server() -> ScriptedServer {
    ScriptedServer::start_billing(|_| Reply::Answer("ok".into())).unwrap()
}

fn anthropic(url: &str) -> Anthropic {
    Anthropic::new(url, "sk-ant-test-key".into(), Duration::from_secs(5)).unwrap()
}

fn openai(url: &str) -> OpenAi {
    OpenAi::new(url, Some("sk-test-key".into()), Duration::from_secs(5)).unwrap()
}

/// A text of `bytes` bytes that does not repeat a short period (so no prefix is shared by
/// accident with another such text of a different `seed`).
fn filler(seed: &str, bytes: usize) -> String {
    let mut out = String::new();
    let mut i = 0u64;
    while out.len() < bytes {
        out.push_str(&format!("{seed} line {i}: lamports and accounts.\n"));
        i += 1;
    }
    out.truncate(bytes);
    out
}

fn inline_request(user: String) -> ModelRequest {
    ModelRequest {
        model: "bench-model".into(),
        system: "You answer Solana tasks.".into(),
        user,
        max_output_tokens: 64,
        temperature: "0".into(),
        attempt: Some("run-000-1".into()),
        tools: Vec::new(),
        history: Vec::new(),
        cache: false,
        stable_prefix: 0,
    }
}

/// The server's token rule: a quarter token per byte, rounded up.
fn tokens_of(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The request with caching on, as the engine sends it when the plan caches: the first
/// `stable` bytes of the user text (the inline skill block) are the stable prefix.
fn cached(mut request: ModelRequest, stable: usize) -> ModelRequest {
    request.cache = true;
    request.stable_prefix = stable;
    request
}

/// (uncached, read, written) input tokens of a response, which must add up to its input.
fn parts(response: &ModelResponse) -> (u64, u64, u64) {
    let (read, written) = (
        response.cache_read_tokens.unwrap(),
        response.cache_write_tokens.unwrap(),
    );
    let input = response.input_tokens.unwrap();
    (input - read - written, read, written)
}

#[test]
fn anthropic_request_without_markers_caches_nothing() {
    // Given a billing server and a long inline request with no cache_control anywhere,
    let server = billing_server();
    let provider = anthropic(&server.url());
    let request = inline_request(filler("skill", 40_000));
    // when it is sent twice through the real Anthropic provider,
    let first = provider.call(&request).unwrap();
    let second = provider.call(&request).unwrap();
    // then neither reads nor writes the cache: both are billed in full, as the plain server would.
    let total = tokens_of(provider.body(&request).len());
    for response in [&first, &second] {
        assert_eq!(response.input_tokens, Some(total));
        assert_eq!(response.cache_read_tokens, Some(0));
        assert_eq!(response.cache_write_tokens, Some(0));
    }
    let bills = server.bills();
    assert_eq!(bills.len(), 2);
    assert!(bills.iter().all(|b| b.uncached_tokens() == total));
}

#[test]
fn anthropic_second_identical_marked_request_reads_what_the_first_wrote() {
    // Given a billing server and an inline request with caching on (system and skill block
    // marked),
    let server = billing_server();
    let provider = anthropic(&server.url());
    let skill = filler("skill", 40_000);
    let request = cached(
        inline_request(format!("{skill}\nTask one.")),
        skill.len() + 1,
    );
    // when it is sent twice through the real Anthropic provider,
    let (plain_1, read_1, write_1) = parts(&provider.call(&request).unwrap());
    let (plain_2, read_2, write_2) = parts(&provider.call(&request).unwrap());
    // then the first writes the prefix up to the skill block (the system alone is below the
    // minimum) and reads nothing, the second reads exactly that and writes nothing,
    assert_eq!(read_1, 0);
    assert!(write_1 >= tokens_of(skill.len()), "written {write_1}");
    assert_eq!((read_2, write_2), (write_1, 0));
    // and only the task and the body's framing are billed in full.
    assert!(
        plain_1 < 100 && plain_1 == plain_2,
        "uncached {plain_1}, {plain_2}"
    );
    assert_eq!(server.bills()[1].cache_read_tokens, write_1);
}

#[test]
fn anthropic_next_task_reads_the_skill_block_the_first_wrote() {
    // Given two inline requests with caching on: one skill, two tasks,
    let server = billing_server();
    let provider = anthropic(&server.url());
    let skill = filler("skill", 40_000);
    let first = cached(
        inline_request(format!("{skill}\nTask one.")),
        skill.len() + 1,
    );
    let second = cached(
        inline_request(format!("{skill}\nTask two, a longer one.")),
        skill.len() + 1,
    );
    // when both are sent,
    let (_, _, written) = parts(&provider.call(&first).unwrap());
    let (plain, read, write) = parts(&provider.call(&second).unwrap());
    // then the second reads the skill block the first wrote, and writes nothing: its task is after
    // the last breakpoint.
    assert!(written >= tokens_of(skill.len()));
    assert_eq!((read, write), (written, 0));
    assert!(plain < 100, "uncached {plain}");
}

#[test]
fn anthropic_marked_prefix_below_the_minimum_is_not_cached() {
    // Given a request with caching on whose marked prefix is under 1,024 tokens,
    let server = billing_server();
    let provider = anthropic(&server.url());
    let skill = filler("skill", 3_000);
    let request = cached(inline_request(format!("{skill}\nTask.")), skill.len() + 1);
    // when it is sent twice, then nothing is read or written: the whole input is billed in full.
    for _ in 0..2 {
        let (plain, read, write) = parts(&provider.call(&request).unwrap());
        assert_eq!((read, write), (0, 0));
        assert_eq!(plain, tokens_of(provider.body(&request).len()));
    }
}

/// A progressive turn with caching on: the tools, a catalog, the task, and `history`.
fn progressive_turn(task: &str, history: Vec<Exchange>) -> ModelRequest {
    ModelRequest {
        system: "<available_skills>…</available_skills>".into(),
        user: task.to_owned(),
        tools: delivery::tools(),
        history,
        ..cached(inline_request(String::new()), 0)
    }
}

fn exchange(id: &str, name: &str, reply: String) -> Exchange {
    Exchange {
        text: String::new(),
        calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        }],
        replies: vec![ToolReply {
            call_id: id.into(),
            content: reply,
            is_error: false,
        }],
    }
}

#[test]
fn anthropic_automatic_caching_reads_the_last_turn_through_the_look_back() {
    // Given a progressive trial with caching on (top-level cache_control): turn 1 is the task,
    // turn 2 repeats it with a load_skill call and its long reply, turn 3 adds a file read,
    let server = billing_server();
    let provider = anthropic(&server.url());
    let task = filler("task", 6_000);
    let skill = filler("skill", 30_000);
    let reference = filler("reference", 20_000);
    let load = exchange("t1", "load_skill", skill.clone());
    let read = exchange("t2", "read_skill_resource", reference.clone());
    let turns = [
        progressive_turn(&task, Vec::new()),
        progressive_turn(&task, vec![load.clone()]),
        progressive_turn(&task, vec![load, read]),
    ];
    // when the three turns are sent in order,
    let [
        (_, read_1, write_1),
        (_, read_2, write_2),
        (plain_3, read_3, write_3),
    ] = turns.map(|t| parts(&provider.call(&t).unwrap()));
    // then each turn reads the one before (its breakpoint moved on; the entry is found by looking
    // back) and writes only what it added.
    assert_eq!(read_1, 0);
    assert!(write_1 >= tokens_of(task.len()));
    assert_eq!(read_2, write_1);
    assert!(write_2 >= tokens_of(skill.len()));
    assert_eq!(read_3, write_1 + write_2);
    assert!(write_3 >= tokens_of(reference.len()));
    assert!(plain_3 < 100, "uncached {plain_3}");
}

/// Sends `request` through the real OpenAI provider and checks the bill it reports.
fn openai_call(provider: &OpenAi, request: &ModelRequest) -> ModelResponse {
    let response = provider.call(request).unwrap();
    let total = tokens_of(provider.body(request).len());
    assert_eq!(response.input_tokens, Some(total));
    assert_eq!(response.cache_write_tokens, None);
    response
}

#[test]
fn openai_reports_a_shared_long_prefix_as_cached_tokens() {
    // Given a billing server and two requests sharing a long first user text (a skill) and
    // differing at its end (the task),
    let server = billing_server();
    let provider = openai(&server.url());
    let skill = filler("skill", 40_000);
    let first = inline_request(format!("{skill}\nTask one."));
    let second = inline_request(format!("{skill}\nTask two."));
    // when both are sent through the real OpenAI provider,
    let one = openai_call(&provider, &first);
    let two = openai_call(&provider, &second);
    // then the first reads nothing, and the second reads the shared prefix in whole 128-token
    // steps: at least 1,024 tokens, no more than the two bodies share, and within one step of it
    // (less the few bytes of the body before its messages, `{"max_completion_tokens":64,…`).
    assert_eq!(one.cache_read_tokens, Some(0));
    let cached = two.cache_read_tokens.unwrap();
    assert!(cached >= CACHE_MIN_TOKENS);
    assert_eq!(cached % OPENAI_CACHE_STEP_TOKENS, 0);
    let (body_1, body_2) = (provider.body(&first), provider.body(&second));
    let common = body_1
        .iter()
        .zip(&body_2)
        .take_while(|(a, b)| a == b)
        .count();
    let shared = tokens_of(common);
    assert!(cached <= shared, "cached {cached}, shared {shared}");
    assert!(
        cached + OPENAI_CACHE_STEP_TOKENS + 16 >= shared,
        "cached {cached}, shared {shared}"
    );
    let bills: Vec<Bill> = server.bills();
    assert_eq!(bills[1].cache_read_tokens, cached);
    assert_eq!(bills[1].cache_write_tokens, 0);
}

#[test]
fn openai_caches_nothing_below_1024_tokens() {
    // Given two identical requests whose whole prompt is under 1,024 tokens,
    let server = billing_server();
    let provider = openai(&server.url());
    let request = inline_request(filler("skill", 3_000));
    assert!(tokens_of(provider.body(&request).len()) < CACHE_MIN_TOKENS);
    // when both are sent, then neither reports a cached token.
    for _ in 0..2 {
        assert_eq!(openai_call(&provider, &request).cache_read_tokens, Some(0));
    }
}

#[test]
fn the_plain_server_reports_no_cache_fields() {
    // Given the server started without billing, when a long request is sent twice,
    let server = ScriptedServer::start(|_| Reply::Answer("ok".into())).unwrap();
    let provider = anthropic(&server.url());
    let request = inline_request(filler("skill", 40_000));
    for _ in 0..2 {
        let response = provider.call(&request).unwrap();
        // then the usage is the whole body, with no cache fields at all (as before billing existed),
        assert_eq!(
            response.input_tokens,
            Some(tokens_of(provider.body(&request).len()))
        );
        assert_eq!(response.cache_read_tokens, None);
        assert_eq!(response.cache_write_tokens, None);
    }
    // and it keeps no bills.
    assert!(server.bills().is_empty());
}

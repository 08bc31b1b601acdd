//! The Jupiter venue against a loopback server (the engine's scripted server) answering `GET /swap/v2/build` with a recorded
//! answer (tests/fixtures/jupiter_build_sol_usdc.json, built from a real mainnet Jupiter swap;
//! its `_fixture` says how). Jupiter itself is never called: the request the venue sends, the
//! route it reads, the buyback transaction composed around it and its size are checked here,
//! and hostile answers are refused, each with its reason (the venue refuses before anything can
//! be signed; tests/hosted/buyback.rs drives hostile answers through `runner buyback` on a real
//! validator, lookup-table substitution among them, and checks nothing was sent).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use skilltrial_chain::token::{self, TOKEN_PROGRAM_ID};
use skilltrial_chain::{Pubkey, send};
use skilltrial_engine::scripted::{Reply, ScriptedServer};
use skilltrial_runner::buyback::{Burn, Jupiter, Venue, compose};
use solana_message::{Hash, v0};

const TAKER: &str = "3xTPAZxmpwd8GrNEKApaTw6VH4jqJ31WFXUvQzgwhR7c";
const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const USDC_ACCOUNT: &str = "F77xG4vz2CJeMxxAmFW8pvPx2c5Uk75pksr6Wwx6HFhV";
const KEY: &str = "jup-test-key-SECRET-0042";

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/jupiter_build_sol_usdc.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A loopback Jupiter answering every request with `status` and `body`; each request's method,
/// target and headers are recorded, as one lowercase text per request.
fn serve(status: u16, body: String) -> (ScriptedServer, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let server = ScriptedServer::start(move |request| {
        let mut head = format!("{} {}\r\n", request.method, request.path);
        for (name, value) in &request.headers {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        log.lock().unwrap().push(head.to_ascii_lowercase());
        Reply::Verbatim {
            status,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: body.clone(),
        }
    })
    .unwrap();
    (server, seen)
}

fn route_from(
    status: u16,
    answer: &Value,
) -> (
    Result<skilltrial_runner::buyback::Route, String>,
    Vec<String>,
) {
    route_with(status, answer.to_string(), Some(KEY))
}

/// The route the venue reads from a server answering `status` and `body`, with `key`.
fn route_with(
    status: u16,
    body: String,
    key: Option<&str>,
) -> (
    Result<skilltrial_runner::buyback::Route, String>,
    Vec<String>,
) {
    let (server, seen) = serve(status, body);
    let base = format!("{}/swap/v2", server.url());
    let jupiter = Jupiter::new(base.parse().unwrap(), key.map(str::to_owned)).unwrap();
    let route = jupiter
        .route(
            &TAKER.parse().unwrap(),
            &USDC.parse().unwrap(),
            &USDC_ACCOUNT.parse().unwrap(),
            991_250,
            50,
        )
        .map_err(|e| e.to_string());
    let heads = seen.lock().unwrap().clone();
    (route, heads)
}

#[test]
fn a_recorded_build_answer_becomes_one_buyback_transaction_that_fits() {
    // The fixture's accounts are the real ones: the output account is the taker's USDC
    // associated account.
    let taker: Pubkey = TAKER.parse().unwrap();
    let usdc: Pubkey = USDC.parse().unwrap();
    assert_eq!(
        token::associated_account(&taker, &usdc, &TOKEN_PROGRAM_ID).to_string(),
        USDC_ACCOUNT
    );

    let (route, heads) = route_from(200, &fixture());
    let route = route.unwrap();
    // What was asked, and how.
    assert_eq!(heads.len(), 1);
    let head = heads[0].to_ascii_lowercase();
    assert!(head.starts_with("get /swap/v2/build?"), "{head}");
    for param in [
        "inputmint=so11111111111111111111111111111111111111112",
        &format!("outputmint={}", USDC.to_ascii_lowercase()),
        "amount=991250",
        &format!("taker={}", TAKER.to_ascii_lowercase()),
        "slippagebps=50",
        "maxaccounts=40",
    ] {
        assert!(head.contains(param), "{param} missing from {head}");
    }
    assert!(head.contains(&format!("x-api-key: {}", KEY.to_ascii_lowercase())));

    // What came back: the real swap's wrap, route and unwrap, and its lookup table.
    assert_eq!((route.quoted_out, route.min_out), (167_225, 166_388));
    assert_eq!(route.setup.len(), 2);
    assert_eq!(route.swap.len(), 1);
    assert_eq!(route.cleanup.len(), 1);
    assert_eq!(
        route.swap[0].program_id.to_string(),
        "JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4"
    );
    assert_eq!(route.tables.len(), 1);
    assert_eq!(route.tables[0].addresses.len(), 19);

    // The buyback around it: the burn sits where `buyback_execute` says, and the whole
    // transaction, loading the route's accounts from its table, fits in one packet.
    // The burn takes what the account held before (7 here) plus the route's minimum.
    let burn = Burn {
        runner: taker,
        token_account: USDC_ACCOUNT.parse().unwrap(),
        mint: usdc,
        decimals: 6,
        token_program: TOKEN_PROGRAM_ID,
        held: 7,
    };
    for price in [0, 1_000] {
        let instructions = compose(&burn, 991_250, &route, price).unwrap();
        let tokens_burned = u64::from_le_bytes(instructions[0].data[16..24].try_into().unwrap());
        assert_eq!(tokens_burned, 166_388 + 7);
        let prefix = send::budget_prefix(price);
        let burn_index =
            u16::from_le_bytes([instructions[0].data[8 + 16], instructions[0].data[8 + 17]]);
        let burn_ix = &instructions[usize::from(burn_index) - prefix];
        assert_eq!(burn_ix.program_id, TOKEN_PROGRAM_ID);
        assert_eq!(burn_ix.data[0], 15, "BurnChecked");
        assert_eq!(
            u64::from_le_bytes(burn_ix.data[1..9].try_into().unwrap()),
            166_388 + 7
        );
        let mut all = vec![
            solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(
                400_000,
            ),
        ];
        if price > 0 {
            all.push(
                solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_price(
                    price,
                ),
            );
        }
        all.extend(instructions);
        let message =
            v0::Message::try_compile(&taker, &all, &route.tables, Hash::new_unique()).unwrap();
        assert_eq!(message.address_table_lookups.len(), 1);
        let size = 1
            + 64 * usize::from(message.header.num_required_signatures)
            + message.serialize().len();
        assert!(
            size <= send::MAX_TRANSACTION_BYTES,
            "the buyback transaction is {size} bytes"
        );
        println!("jupiter buyback transaction at price {price}: {size} bytes");
    }
}

/// The fixture with one more instruction in `field` (`setupInstructions` or
/// `otherInstructions`): `program`, the accounts, base64 `data`.
fn with_extra(field: &str, program: &str, accounts: &[(&str, bool, bool)], data: &[u8]) -> Value {
    use base64::Engine as _;
    let mut answer = fixture();
    let accounts: Vec<Value> = accounts
        .iter()
        .map(|(k, signer, writable)| {
            serde_json::json!({"pubkey": k, "isSigner": signer, "isWritable": writable})
        })
        .collect();
    let extra = serde_json::json!({
        "programId": program,
        "accounts": accounts,
        "data": base64::engine::general_purpose::STANDARD.encode(data),
    });
    match answer[field].as_array_mut() {
        Some(list) => list.push(extra),
        None => answer[field] = Value::Array(vec![extra]),
    }
    answer
}

/// The error a hostile answer is refused with (it must be refused).
fn refusal(answer: &Value) -> String {
    match route_from(200, answer).0 {
        Err(e) => e,
        Ok(route) => panic!("a hostile answer was accepted: {route:?}"),
    }
}

/// System instructions that name only the runner, as a writable signer, are refused too (a filter
/// that looked only at writable non-signers would let them through): `Assign` hands the hot
/// key's lamports to another program, `Allocate` and `CreateAccountAllowPrefund` give it data so
/// it can no longer pay fees.
#[test]
fn system_instructions_on_the_runner_s_own_key_are_refused() {
    let system = "11111111111111111111111111111111";
    let evil = Pubkey::new_unique();
    let runner = [(TAKER, true, true)];
    let mut assign = 1u32.to_le_bytes().to_vec();
    assign.extend_from_slice(evil.as_ref());
    let mut allocate = 8u32.to_le_bytes().to_vec();
    allocate.extend_from_slice(&10_240u64.to_le_bytes());
    let mut prefund = 13u32.to_le_bytes().to_vec();
    prefund.extend_from_slice(&0u64.to_le_bytes());
    prefund.extend_from_slice(&10_240u64.to_le_bytes());
    prefund.extend_from_slice(evil.as_ref());
    let mut assign_with_seed = 10u32.to_le_bytes().to_vec();
    assign_with_seed.extend_from_slice(evil.as_ref());
    for (field, data, name) in [
        ("setupInstructions", assign, "Assign on"),
        ("otherInstructions", allocate, "Allocate on"),
        ("setupInstructions", prefund, "CreateAccountAllowPrefund on"),
        ("otherInstructions", assign_with_seed, "AssignWithSeed on"),
    ] {
        let error = refusal(&with_extra(field, system, &runner, &data));
        assert!(error.contains(&format!("{name} {TAKER}")), "{error}");
        assert!(error.contains("refused"), "{error}");
    }
}

/// A route that sets the transaction's compute-unit price would spend the hot balance on
/// priority fees; the daemon's sender sets the budget, a route never does.
#[test]
fn a_compute_budget_instruction_in_the_route_is_refused() {
    let mut price = vec![3u8];
    price.extend_from_slice(&u64::MAX.to_le_bytes());
    let answer = with_extra(
        "setupInstructions",
        "ComputeBudget111111111111111111111111111111",
        &[],
        &price,
    );
    let error = refusal(&answer);
    assert!(error.contains("compute budget"), "{error}");
}

/// The amounts of a route: the wrap moves exactly the lamports the fee vault releases, the
/// swap's own arguments sell exactly those, and it delivers into the runner's account.
#[test]
fn a_route_that_wraps_more_swaps_more_or_delivers_elsewhere_is_refused() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    // Over-wrap: the answer's JSON says 991,250 but its transfer wraps one lamport more.
    let mut overwrap = fixture();
    let mut wrap = 2u32.to_le_bytes().to_vec();
    wrap.extend_from_slice(&991_251u64.to_le_bytes());
    overwrap["setupInstructions"][0]["data"] = Value::String(b64.encode(&wrap));
    let error = refusal(&overwrap);
    assert!(
        error.contains("wraps 991251 lamports, not the 991250"),
        "{error}"
    );
    // A second wrap of the same amount (twice the lamports into the swap's source).
    let mut twice = fixture();
    let first = twice["setupInstructions"][0].clone();
    twice["setupInstructions"]
        .as_array_mut()
        .unwrap()
        .push(first);
    let error = refusal(&twice);
    assert!(error.contains("wraps SOL 2 times"), "{error}");

    // The swap's own in-amount differs from the answer's `inAmount` (which matches).
    let mut data = b64
        .decode(fixture()["swapInstruction"]["data"].as_str().unwrap())
        .unwrap();
    let at = data.len() - 19;
    data[at..at + 8].copy_from_slice(&5_000_000_000u64.to_le_bytes());
    let mut greedy = fixture();
    greedy["swapInstruction"]["data"] = Value::String(b64.encode(&data));
    let error = refusal(&greedy);
    assert!(
        error.contains("sell 5000000000 lamports, not 991250"),
        "{error}"
    );

    // Output to an account that is not the runner's (the runner's account still listed as
    // the swap's optional destination would not do either).
    let stranger = Pubkey::new_unique().to_string();
    let mut elsewhere = fixture();
    elsewhere["swapInstruction"]["accounts"][3]["pubkey"] = Value::String(stranger.clone());
    let error = refusal(&elsewhere);
    assert!(
        error.contains(&format!("delivers to {stranger}")),
        "{error}"
    );
    let mut fee = fixture();
    fee["swapInstruction"]["accounts"][6]["pubkey"] = Value::String(stranger.clone());
    let error = refusal(&fee);
    assert!(
        error.contains(&format!("platform fee to {stranger}")),
        "{error}"
    );
}

#[test]
fn hostile_or_failed_answers_are_refused_and_never_show_the_key() {
    // A fee transfer to a stranger, dressed up as one more instruction of the route.
    let mut tipped = fixture();
    tipped["otherInstructions"] = Value::Array(vec![tipped["_wallet_fee_transfer"].clone()]);
    let (route, _) = route_from(200, &tipped);
    let error = route.unwrap_err();
    assert!(
        error.contains("moves SOL to 4cLUBQKZgCv2AqGXbh8ncGhrDRcicUe3WSDzjgPY2oTA"),
        "{error}"
    );

    // A token transfer out of the runner's account, dressed up as a setup step.
    let mut drained = fixture();
    let stranger = Pubkey::new_unique().to_string();
    drained["setupInstructions"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "programId": TOKEN_PROGRAM_ID.to_string(),
            "accounts": [
                {"pubkey": USDC_ACCOUNT, "isSigner": false, "isWritable": true},
                {"pubkey": stranger, "isSigner": false, "isWritable": true},
                {"pubkey": TAKER, "isSigner": true, "isWritable": false},
            ],
            "data": "AwEAAAAAAAAA",
        }));
    let error = route_from(200, &drained).0.unwrap_err();
    assert!(error.contains("not a sync or close"), "{error}");

    // A quote that pays out less than asked for more than asked.
    let mut greedy = fixture();
    greedy["inAmount"] = Value::String("991251".into());
    assert!(
        route_from(200, &greedy)
            .0
            .unwrap_err()
            .contains("not 991250")
    );

    // A refusal that echoes the key back: the error names the status, never the key.
    let echo = serde_json::json!({"error": format!("invalid key {KEY}")});
    let error = route_from(401, &echo).0.unwrap_err();
    assert!(error.contains("401"), "{error}");
    assert!(!error.contains(KEY), "{error}");
    assert!(error.contains("<api key>"), "{error}");

    // Not JSON at all.
    let (route, heads) = route_with(200, "<html>".into(), None);
    let error = route.unwrap_err();
    assert!(error.contains("not JSON"), "{error}");
    // Without a key, no key header is sent (keyless access).
    assert!(!heads[0].to_ascii_lowercase().contains("x-api-key"));
}

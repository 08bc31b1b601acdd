//! Buybacks on the local validator: the fees earlier scenarios booked are swapped through the
//! venue program's pool and burned in one transaction, by `skilltrial runner buyback`; hostile
//! Jupiter answers (a lookup table that is not what it claims, System instructions on the
//! runner's key) are refused before anything is signed; a pool moved between the quote and the
//! send makes the swap fail its minimum output and nothing moves; the buyback burns everything
//! the runner's account holds with the swap's output; the interval holds the next one back; a
//! Token-2022 mint's account is created and burned through Token-2022.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{Value, json};
use skilltrial_chain::outbox::Outbox;
use skilltrial_chain::send::{Fees, Sender};
use skilltrial_chain::token::{self, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, WSOL_MINT};
use skilltrial_chain::{AccountMeta, Instruction, Pubkey, SYSTEM_PROGRAM_ID, venue};
use skilltrial_engine::scripted::{Reply, ScriptedServer};
use skilltrial_runner::buyback::{Burn, JUPITER_PROGRAM, LocalPool, Venue, compose};
use solana_address_lookup_table_interface::instruction as lookup;
use solana_keypair::Keypair;
use solana_signer::Signer;

use crate::harness::{Localnet, said};

/// What a buyback touches, read from the chain.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Books {
    total_fees: u64,
    bought_back: u64,
    burned: u64,
    vault_lamports: u64,
    supply: u64,
    runner_tokens: u64,
    pool_sol: u64,
    pool_tokens: u64,
}

fn books(net: &Localnet, mint: &Pubkey) -> Books {
    let (vault, vault_lamports) = net.chain.fee_vault().unwrap().unwrap();
    let (_, _, mint_data) = net.chain.account(mint).unwrap().unwrap();
    let (supply, _) = token::read_mint(&mint_data).unwrap();
    let account = token::associated_account(&net.runner.pubkey(), mint, &TOKEN_PROGRAM_ID);
    let (_, _, data) = net.chain.account(&account).unwrap().unwrap();
    let (_, _, runner_tokens) = token::read_account(&data).unwrap();
    let pool = venue::read_pool(&net.chain, mint).unwrap().unwrap();
    Books {
        total_fees: vault.total_fees,
        bought_back: vault.total_bought_back,
        burned: vault.total_burned,
        vault_lamports,
        supply,
        runner_tokens,
        pool_sol: pool.sol_reserve,
        pool_tokens: pool.token_reserve,
    }
}

pub fn buybacks_burn_what_the_fees_buy(net: &Localnet) {
    let config = net.chain.config().unwrap().unwrap();
    let mint = config.sktrial_mint;
    let runner = &net.runner_keypair;
    let before = books(net, &mint);
    assert!(
        before.total_fees > before.bought_back,
        "earlier scenarios booked fees: {before:?}"
    );
    assert_eq!(
        before.supply, before.pool_tokens,
        "localnet puts the supply in the pool"
    );

    // A stranger may not buy back (the program names the runner).
    let out = net.cli(&net.other_keypair, &["runner", "buyback"]);
    assert_ne!(out.status.code(), Some(0), "{}", said(&out));
    assert!(
        said(&out).contains("not this daemon's key"),
        "{}",
        said(&out)
    );

    // A hostile Jupiter answer is refused, with its reason, and nothing is signed.
    let lamports_in = (before.total_fees - before.bought_back).min(config.max_buyback_lamports);
    hostile_routes_are_refused_before_signing(net, &mint, lamports_in);

    // The pool moves between the quote and the send: the swap's minimum output fails it, and
    // nothing but the fee moves.
    let account = token::associated_account(&net.runner.pubkey(), &mint, &TOKEN_PROGRAM_ID);
    let route = LocalPool::new(skilltrial_chain::rpc::Chain::new(
        &net.url,
        skilltrial_chain::cli_config::Commitment::Confirmed,
    ))
    .route(&net.runner.pubkey(), &mint, &account, lamports_in, 100)
    .unwrap();
    let other = net.other();
    let pool = venue::read_pool(&net.chain, &mint).unwrap().unwrap();
    let other_account = token::associated_account(&other.pubkey(), &mint, &TOKEN_PROGRAM_ID);
    net.send_as(
        &other,
        "front-run the buyback",
        &[
            token::create_associated_account(
                &other.pubkey(),
                &other.pubkey(),
                &mint,
                &TOKEN_PROGRAM_ID,
            ),
            venue::buy(&other.pubkey(), &pool, &other_account, 1_000_000_000, 1),
        ],
    )
    .unwrap();
    let moved = books(net, &mint);
    assert_eq!(moved.pool_sol, before.pool_sol + 1_000_000_000);
    let burn = Burn {
        runner: net.runner.pubkey(),
        token_account: account,
        mint,
        decimals: 6,
        token_program: TOKEN_PROGRAM_ID,
        held: 0,
    };
    let instructions = compose(&burn, lamports_in, &route, 0).unwrap();
    let mut outbox = Outbox::open(&net.dir.path().join("runner-outbox.sqlite")).unwrap();
    let progress = |_: &str| {};
    let mut sender = Sender::new(&net.chain, &mut outbox, &progress).unwrap();
    let refused = sender
        .send(
            "stale buyback",
            &net.runner,
            &[],
            &instructions,
            Fees {
                price: Some(0),
                ..Fees::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(refused.contains("ExceededSlippage"), "{refused}");
    let after_refusal = books(net, &mint);
    assert_eq!(
        (
            after_refusal.bought_back,
            after_refusal.burned,
            after_refusal.supply
        ),
        (moved.bought_back, moved.burned, moved.supply)
    );

    // The runner's account already holds tokens (here sent by the front-runner; in the wild a
    // fill above an earlier swap's minimum): the buyback burns them with what it buys.
    let held = 12_345;
    net.send_as(
        &other,
        "tokens left in the runner's account",
        &[token_transfer(
            &other_account,
            &account,
            &other.pubkey(),
            held,
        )],
    )
    .unwrap();
    let moved = books(net, &mint);
    assert_eq!(moved.runner_tokens, held);

    // The operator's buyback at the fresh price with 1% slippage allowed: the pool is still, so
    // it fills its whole quote, 1% above the minimum the buyback transaction burns. Released,
    // swapped and burned at once; the fill above the minimum is burned right after, and the
    // runner's account is left empty.
    let done = net.cli_json(
        runner,
        &[
            "runner",
            "buyback",
            "--buyback-min-lamports",
            "1",
            "--buyback-slippage-bps",
            "100",
        ],
    );
    assert_eq!(done["outcome"], "done", "{done}");
    let lamports = done["lamports_in"].as_u64().unwrap();
    let burned = done["tokens_burned"].as_u64().unwrap();
    let quoted = done["quoted_out"].as_u64().unwrap();
    let surplus = done["surplus_burned"].as_u64().unwrap();
    assert_eq!(lamports, lamports_in);
    let min_out = skilltrial_runner::buyback::less_slippage(quoted, 100).unwrap();
    assert_eq!(burned, held + min_out, "{done}");
    assert_eq!(surplus, quoted - min_out, "{done}");
    assert!(surplus > 0, "{done}");
    assert!(done["surplus_left"].is_null(), "{done}");
    let after = books(net, &mint);
    assert_eq!(after.bought_back, moved.bought_back + lamports);
    // The program books what the buyback transaction burned; the surplus burn is its own.
    assert_eq!(after.burned, moved.burned + burned);
    assert_eq!(after.vault_lamports, moved.vault_lamports - lamports);
    assert_eq!(after.pool_sol, moved.pool_sol + lamports);
    // The pool paid out exactly its quote; the two burns took it and everything held before: no
    // $SKTRIAL stays on the runner's hot key (burning only the swap's minimum would leave the rest,
    // and the 12,345 held, in the account).
    assert_eq!(after.pool_tokens, moved.pool_tokens - quoted);
    assert_eq!(after.supply, moved.supply - held - quoted);
    assert_eq!(after.runner_tokens, 0);
    let surplus_signature = done["surplus_signature"].as_str().unwrap();
    net.cost("runner buyback surplus burn", surplus_signature);
    // The floor rate held on the swap alone: at least one base unit per lamport.
    assert!(u128::from(quoted) >= u128::from(lamports));
    let signature = done["signature"].as_str().unwrap();
    net.cost("runner buyback (swap + burn)", signature);
    let log = net.cli_json(&net.user_keypair, &["buyback-log"]);
    let entries = log["entries"].as_array().unwrap();
    let last = entries.first().unwrap(); // newest first
    assert_eq!(last["lamports_in"], lamports);
    assert_eq!(last["tokens_burned"], burned);
    assert_eq!(last["token_account"], account.to_string());

    // The interval holds the next one back, and says until when.
    let early = net.cli_json(
        runner,
        &["runner", "buyback", "--buyback-min-lamports", "1"],
    );
    assert_eq!(early["outcome"], "not_due", "{early}");
    assert!(early["next_at"].as_i64().unwrap() > 0);
    a_token_2022_account_is_created_and_burned_through_token_2022(net);
    net.print_costs();
}

/// SPL Token `Transfer` (3): `owner` moves `amount` from `from` to `to`.
fn token_transfer(from: &Pubkey, to: &Pubkey, owner: &Pubkey, amount: u64) -> Instruction {
    let mut data = vec![3u8];
    data.extend_from_slice(&amount.to_le_bytes());
    Instruction {
        program_id: TOKEN_PROGRAM_ID,
        accounts: vec![
            AccountMeta::new(*from, false),
            AccountMeta::new(*to, false),
            AccountMeta::new_readonly(*owner, true),
        ],
        data,
    }
}

/// A Jupiter `/build` endpoint on loopback (the engine's scripted server) answering, to every
/// request, whatever `answer` holds at the time; its base URL. It serves while the server lives.
fn jupiter_endpoint() -> (ScriptedServer, String, Arc<Mutex<String>>) {
    let answer = Arc::new(Mutex::new(String::new()));
    let served = Arc::clone(&answer);
    let server = ScriptedServer::start(move |_| Reply::Verbatim {
        status: 200,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: served.lock().unwrap().clone(),
    })
    .unwrap();
    let base = format!("{}/swap/v2", server.url());
    (server, base, answer)
}

/// A `/build` answer for this cluster that passes every instruction check: wrap exactly
/// `lamports_in`, sync, one Jupiter `route` of exactly that into the runner's account, close.
/// The swap program does not exist on a local validator, so such an answer could never land
/// here; what is tested is that it is refused before signing.
fn localnet_answer(runner: &Pubkey, mint: &Pubkey, lamports_in: u64) -> Value {
    let wsol = token::associated_account(runner, &WSOL_MINT, &TOKEN_PROGRAM_ID);
    let account = token::associated_account(runner, mint, &TOKEN_PROGRAM_ID);
    let meta = |k: &Pubkey, signer: bool, writable: bool| json!({"pubkey": k.to_string(), "isSigner": signer, "isWritable": writable});
    let b64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    let quoted = lamports_in * 2;
    let mut wrap = 2u32.to_le_bytes().to_vec();
    wrap.extend_from_slice(&lamports_in.to_le_bytes());
    // Jupiter v6 `route`: its discriminator, a one-step plan, in, quoted out, slippage, fee.
    let mut route = vec![0xe5, 0x17, 0xcb, 0x97, 0x7a, 0xe3, 0xad, 0x2a];
    route.extend_from_slice(&[1, 0, 0, 0, 0x3a, 1, 100, 0, 1]);
    route.extend_from_slice(&lamports_in.to_le_bytes());
    route.extend_from_slice(&quoted.to_le_bytes());
    route.extend_from_slice(&100u16.to_le_bytes());
    route.push(0);
    json!({
        "inputMint": WSOL_MINT.to_string(),
        "outputMint": mint.to_string(),
        "inAmount": lamports_in.to_string(),
        "outAmount": quoted.to_string(),
        "otherAmountThreshold": quoted.to_string(),
        "setupInstructions": [
            {"programId": SYSTEM_PROGRAM_ID.to_string(), "data": b64(&wrap),
             "accounts": [meta(runner, true, true), meta(&wsol, false, true)]},
            {"programId": TOKEN_PROGRAM_ID.to_string(), "data": b64(&[17]),
             "accounts": [meta(&wsol, false, true)]},
        ],
        "swapInstruction": {"programId": JUPITER_PROGRAM.to_string(), "data": b64(&route),
            "accounts": [
                meta(&TOKEN_PROGRAM_ID, false, false),
                meta(runner, true, true),
                meta(&wsol, false, true),
                meta(&account, false, true),
                meta(&JUPITER_PROGRAM, false, false),
                meta(mint, false, false),
                meta(&JUPITER_PROGRAM, false, false),
            ]},
        "cleanupInstruction": {"programId": TOKEN_PROGRAM_ID.to_string(), "data": b64(&[9]),
            "accounts": [meta(&wsol, false, true), meta(runner, true, true), meta(runner, true, true)]},
        "addressesByLookupTableAddress": {},
    })
}

/// Hostile Jupiter answers through the real `runner buyback` against this validator: each is
/// refused with a reason that names what is wrong, and nothing is signed or sent (the runner's
/// lamports and the fee vault's books do not move, and no transaction is sent).
fn hostile_routes_are_refused_before_signing(net: &Localnet, mint: &Pubkey, lamports_in: u64) {
    let runner = net.runner.pubkey();
    let wsol = token::associated_account(&runner, &WSOL_MINT, &TOKEN_PROGRAM_ID);
    let other = net.other();
    // Real lookup tables: `swapped` holds a stranger where the answer will claim the runner's
    // wrapped-SOL account; `retired` holds exactly what is claimed but is deactivated.
    let stranger = Pubkey::new_unique();
    let slot = net.chain.slot().unwrap().saturating_sub(1);
    let (create_swapped, swapped) =
        lookup::create_lookup_table(other.pubkey(), other.pubkey(), slot);
    let (create_retired, retired) =
        lookup::create_lookup_table(other.pubkey(), other.pubkey(), slot.saturating_sub(1));
    net.send_as(
        &other,
        "lookup tables for the hostile answers",
        &[
            create_swapped,
            lookup::extend_lookup_table(
                swapped,
                other.pubkey(),
                Some(other.pubkey()),
                vec![stranger],
            ),
            create_retired,
            lookup::extend_lookup_table(retired, other.pubkey(), Some(other.pubkey()), vec![wsol]),
            lookup::deactivate_lookup_table(retired, other.pubkey()),
        ],
    )
    .unwrap();

    let (_jupiter, base, answer) = jupiter_endpoint();
    let honest = localnet_answer(&runner, mint, lamports_in);
    let claims = |table: &Pubkey| {
        let mut a = honest.clone();
        a["addressesByLookupTableAddress"] = json!({table.to_string(): [wsol.to_string()]});
        a
    };
    let nowhere = Pubkey::new_unique();
    let mut assign = honest.clone();
    let mut assign_data = 1u32.to_le_bytes().to_vec();
    assign_data.extend_from_slice(stranger.as_ref());
    assign["otherInstructions"] = json!([{
        "programId": SYSTEM_PROGRAM_ID.to_string(),
        "data": base64::engine::general_purpose::STANDARD.encode(&assign_data),
        "accounts": [{"pubkey": runner.to_string(), "isSigner": true, "isWritable": true}],
    }]);
    let cases = [
        (
            claims(&swapped),
            format!(
                "the lookup table {swapped}: address 0 is {stranger} on the chain, not {wsol} as the answer claims"
            ),
        ),
        (
            claims(&retired),
            format!("the lookup table {retired}: it is deactivated"),
        ),
        (
            claims(&nowhere),
            format!("the lookup table {nowhere}: no such account"),
        ),
        (assign, format!("Assign on {runner}")),
    ];
    let books_before = books(net, mint);
    let lamports_before = net.balance(&runner);
    for (hostile, reason) in cases {
        *answer.lock().unwrap() = hostile.to_string();
        let out = net.cli(
            &net.runner_keypair,
            &[
                "runner",
                "buyback",
                "--buyback-venue",
                "jupiter",
                "--jupiter-url",
                base.as_str(),
                "--buyback-min-lamports",
                "1",
            ],
        );
        let told = said(&out);
        assert_ne!(out.status.code(), Some(0), "{told}");
        assert!(told.contains(&reason), "expected {reason:?} in: {told}");
        assert!(told.contains("refused"), "{told}");
        assert!(!told.contains("sending transaction"), "{told}");
    }
    assert_eq!(books(net, mint), books_before);
    assert_eq!(net.balance(&runner), lamports_before);
}

/// The daemon's account creation and burn go through the mint's own token program. A Token-2022
/// mint made here gets the runner's Token-2022 associated account (derived under Token-2022 and
/// created by Token-2022, not by the Token program) and a burn through Token-2022 (the program
/// refuses a burn through any other program than the account's owner). The localnet venue pool
/// speaks classic Token only, so the swap itself is not run here.
fn a_token_2022_account_is_created_and_burned_through_token_2022(net: &Localnet) {
    let other = net.other();
    let runner = net.runner.pubkey();
    let mint = Keypair::new();
    let decimals = 6;
    let rent = net.chain.rent_exempt_minimum(token::MINT_LEN).unwrap();
    let mut create = 0u32.to_le_bytes().to_vec();
    create.extend_from_slice(&rent.to_le_bytes());
    create.extend_from_slice(&u64::try_from(token::MINT_LEN).unwrap().to_le_bytes());
    create.extend_from_slice(TOKEN_2022_PROGRAM_ID.as_ref());
    // InitializeMint2 (20): decimals, the mint authority, no freeze authority.
    let mut init = vec![20u8, decimals];
    init.extend_from_slice(other.pubkey().as_ref());
    init.push(0);
    let account = token::associated_account(&runner, &mint.pubkey(), &TOKEN_2022_PROGRAM_ID);
    // MintTo (7).
    let mut mint_to = vec![7u8];
    mint_to.extend_from_slice(&5_000u64.to_le_bytes());
    let mut outbox = Outbox::open(&net.dir.path().join("runner-outbox.sqlite")).unwrap();
    let progress = |_: &str| {};
    let mut sender = Sender::new(&net.chain, &mut outbox, &progress).unwrap();
    sender
        .send(
            "a Token-2022 mint with the runner's account",
            &other,
            &[&mint],
            &[
                Instruction {
                    program_id: SYSTEM_PROGRAM_ID,
                    accounts: vec![
                        AccountMeta::new(other.pubkey(), true),
                        AccountMeta::new(mint.pubkey(), true),
                    ],
                    data: create,
                },
                Instruction {
                    program_id: TOKEN_2022_PROGRAM_ID,
                    accounts: vec![AccountMeta::new(mint.pubkey(), false)],
                    data: init,
                },
                token::create_associated_account(
                    &other.pubkey(),
                    &runner,
                    &mint.pubkey(),
                    &TOKEN_2022_PROGRAM_ID,
                ),
                Instruction {
                    program_id: TOKEN_2022_PROGRAM_ID,
                    accounts: vec![
                        AccountMeta::new(mint.pubkey(), false),
                        AccountMeta::new(account, false),
                        AccountMeta::new_readonly(other.pubkey(), true),
                    ],
                    data: mint_to,
                },
            ],
            Fees::default(),
        )
        .unwrap();
    let (owner, _, data) = net.chain.account(&account).unwrap().unwrap();
    assert_eq!(owner, TOKEN_2022_PROGRAM_ID);
    assert_eq!(
        token::read_account(&data),
        Some((mint.pubkey(), runner, 5_000))
    );
    sender
        .send(
            "the runner burns its Token-2022 tokens",
            &net.runner,
            &[],
            &[token::burn_checked(
                &TOKEN_2022_PROGRAM_ID,
                &account,
                &mint.pubkey(),
                &runner,
                5_000,
                decimals,
            )],
            Fees::default(),
        )
        .unwrap();
    let (_, _, data) = net.chain.account(&account).unwrap().unwrap();
    assert_eq!(token::read_account(&data).map(|(_, _, a)| a), Some(0));
    let (_, _, data) = net.chain.account(&mint.pubkey()).unwrap().unwrap();
    assert_eq!(token::read_mint(&data), Some((0, decimals)));
}

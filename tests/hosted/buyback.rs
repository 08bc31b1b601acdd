//! Buybacks on the local validator: the fees earlier scenarios booked are swapped through the
//! venue program's pool and burned in one transaction, by `skilltrial runner buyback`; a pool
//! moved between the quote and the send makes the swap fail its minimum output and nothing
//! moves; the interval holds the next one back.

use skilltrial_chain::Pubkey;
use skilltrial_chain::outbox::Outbox;
use skilltrial_chain::send::{Fees, Sender};
use skilltrial_chain::token::{self, TOKEN_PROGRAM_ID};
use skilltrial_chain::venue;
use skilltrial_runner::buyback::{Burn, LocalPool, Venue, compose};
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

    // The pool moves between the quote and the send: the swap's minimum output fails it, and
    // nothing but the fee moves.
    let lamports_in = (before.total_fees - before.bought_back).min(config.max_buyback_lamports);
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
            token::create_associated_account(&other.pubkey(), &other.pubkey(), &mint),
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

    // The operator's buyback at the fresh price: released, swapped and burned at once.
    let done = net.cli_json(
        runner,
        &["runner", "buyback", "--buyback-min-lamports", "1"],
    );
    assert_eq!(done["outcome"], "done", "{done}");
    let lamports = done["lamports_in"].as_u64().unwrap();
    let burned = done["tokens_burned"].as_u64().unwrap();
    let quoted = done["quoted_out"].as_u64().unwrap();
    assert_eq!(lamports, lamports_in);
    assert!(burned > 0 && burned <= quoted, "{done}");
    let after = books(net, &mint);
    assert_eq!(after.bought_back, moved.bought_back + lamports);
    assert_eq!(after.burned, moved.burned + burned);
    assert_eq!(after.vault_lamports, moved.vault_lamports - lamports);
    assert_eq!(after.pool_sol, moved.pool_sol + lamports);
    // The pool paid out exactly its quote; the burn took the minimum; the rest stays with the
    // runner for the next buyback.
    assert_eq!(after.pool_tokens, moved.pool_tokens - quoted);
    assert_eq!(after.supply, moved.supply - burned);
    assert_eq!(after.runner_tokens, moved.runner_tokens + quoted - burned);
    // The floor rate held: at least one base unit per lamport.
    assert!(u128::from(burned) >= u128::from(lamports));
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
    net.print_costs();
}

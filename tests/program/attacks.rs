//! The run side of the program under attack and at its exact edges: the lamport ledger shown
//! failing on a wrong refund recipient; substituted accounts and run ids, each refused with its
//! exact error (instructions built by the chain client with one account meta replaced, so only
//! that one thing differs); a closed and re-opened run never sharing an identity with its
//! predecessor; every time, batch, trial and usage limit at its last accepted and first refused
//! value; pull refunds to a wallet emptied to zero; the runner's spending limit across runs and
//! periods; every run event's contents; and the settlement digest against
//! `skilltrial_core::settlement`.

use std::collections::HashMap;

use skilltrial_chain::error::{AnchorError, SkillTrialError as E};
use skilltrial_chain::ix::{self, RunFinalizeArgs, RunSettleArgs, SpendingLimit, TrialCharge};
use skilltrial_chain::{PROGRAM_ID, SYSTEM_PROGRAM_ID, pda};
use skilltrial_core::settlement::{
    EvidenceRecord, INITIAL_DIGEST, SettledBatch, Settlement, batch_evidence_hash, fold_digest,
};
use skilltrial_program::constants::{MAX_DEADLINE_SECS, MAX_SETTLE_BATCH, MAX_TRIALS};
use skilltrial_program::events::{
    RunCancelled, RunClosed, RunFinalized, RunOpened, RunRefunded, TrialsSettled,
};
use skilltrial_program::state::RunStatus;
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::harness::{
    CANCEL_WINDOW, CAP, Env, FEE, MIN_DEADLINE, check_deltas, custom, events, evidence_hash, fund,
    native_layer, start, tx_fees, upper,
};

/// A fresh bank with the config created, the user and runner keys, and a funded stranger.
async fn setup() -> (Env, Keypair, Keypair, Keypair) {
    let mut env = start().await;
    env.config_init().await;
    let user = env.user.insecure_clone();
    let runner = env.runner.insecure_clone();
    let stranger = Keypair::new();
    fund(&env.ctx, &stranger.pubkey(), 10_000_000_000).await;
    (env, user, runner, stranger)
}

/// `ix` with the one account meta at `old` pointing at `new` (flags kept): the substitution is
/// the only difference from what the chain client builds.
fn replace(mut ix: Instruction, old: &Pubkey, new: &Pubkey) -> Instruction {
    let mut hits = 0;
    for meta in &mut ix.accounts {
        if meta.pubkey == *old {
            *meta = AccountMeta {
                pubkey: *new,
                ..meta.clone()
            };
            hits += 1;
        }
    }
    assert_eq!(hits, 1, "{old} is named exactly once in the instruction");
    ix
}

/// A program-owned copy of the account at `from`, byte for byte, at a new address: what a
/// forged singleton would look like if anyone could create one.
async fn forged_copy(env: &mut Env, from: &Pubkey) -> Pubkey {
    let account = env
        .ctx
        .banks_client
        .get_account(*from)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(account.owner, PROGRAM_ID);
    let at = Pubkey::new_unique();
    env.ctx.set_account(&at, &account.into());
    at
}

/// Asserts the events decoded from a transaction's logs are `want`. Only the sBPF layer logs
/// events (off-chain, anchor-lang's `sol_log_data` does nothing): on the native layer none must
/// be seen, and their fields are checked against the `.so` only, as compute units are.
fn assert_events<V: PartialEq + std::fmt::Debug>(got: Vec<V>, want: Vec<V>) {
    if native_layer() {
        assert!(got.is_empty(), "the native layer logged events: {got:?}");
        println!(
            "NATIVE LAYER: events are not logged off-chain; their fields are checked only against the .so"
        );
    } else {
        assert_eq!(got, want);
    }
}

/// What a close or refund returns, from the test's books: escrow − usage − fees, plus rent.
fn remainder(escrow: u64, charges: &[(u16, u64)]) -> u64 {
    let usage: u64 = charges.iter().map(|c| c.1).sum();
    escrow - usage - FEE * charges.len() as u64
}

/// 1. The expected-delta ledger is falsifiable: the balances of a real `run_close` pass with the
///    user as the recipient and fail with the runner named instead; a refused transaction moves
///    the fee and nothing else.
#[tokio::test(flavor = "current_thread")]
async fn the_ledger_fails_a_refund_paid_to_the_wrong_account() {
    let (mut env, user, runner, _) = setup().await;
    let manifest = [11u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE;
    env.open(&user, manifest, 2, upper(2), deadline)
        .await
        .unwrap();
    let charges = [(0u16, 1_234u64)];
    env.settle(&runner, &run, &charges).await.unwrap();
    env.finalize(&runner, &run).await.unwrap();
    let returned = remainder(upper(2), &charges) + env.run_rent().await;

    let keys = [user.pubkey(), run, runner.pubkey()];
    let mut before = HashMap::new();
    for k in keys {
        before.insert(k, env.lamports(&k).await);
    }
    let fees_before = tx_fees(&env, &user.pubkey());
    env.close(&user, &run, returned).await.unwrap();
    let fee = i128::from(tx_fees(&env, &user.pubkey()) - fees_before);
    assert_eq!(fee, 5_000, "one signature");
    let mut after = HashMap::new();
    for k in keys {
        after.insert(k, env.lamports(&k).await);
    }
    let returned = i128::from(returned);
    let right: HashMap<Pubkey, i128> = [(user.pubkey(), returned - fee), (run, -returned)].into();
    check_deltas(&before, &after, &right).unwrap();
    // The same balances against a ledger that says the refund went to the runner.
    let wrong: HashMap<Pubkey, i128> = [
        (user.pubkey(), -fee),
        (runner.pubkey(), returned),
        (run, -returned),
    ]
    .into();
    let err = check_deltas(&before, &after, &wrong).unwrap_err();
    assert_eq!(
        err,
        {
            let mut lines = [
                format!(
                    "{}: moved {}, expected {}",
                    user.pubkey(),
                    returned - fee,
                    -fee
                ),
                format!("{}: moved 0, expected {returned}", runner.pubkey()),
            ];
            lines.sort();
            lines.join("; ")
        },
        "the ledger names both accounts the refund went wrong between"
    );
    // A recipient outside the transaction is named as such.
    let elsewhere = Pubkey::new_unique();
    let absent: HashMap<Pubkey, i128> = [
        (user.pubkey(), returned - fee),
        (run, -returned),
        (elsewhere, 1),
    ]
    .into();
    assert_eq!(
        check_deltas(&before, &after, &absent).unwrap_err(),
        format!("{elsewhere}: expected a change but is not in the transaction")
    );

    // A refusal moves only the fee: every account of a refused settle, read here directly.
    let manifest = [12u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 2, upper(2), deadline)
        .await
        .unwrap();
    let id = env.run_id(&run).await;
    let ix = env.settle_ix_with(&runner, &run, id, [1; 32], &[(0, CAP + 1)]);
    let keys: Vec<Pubkey> = ix.accounts.iter().map(|m| m.pubkey).collect();
    let mut before = Vec::new();
    for k in &keys {
        before.push(env.lamports(k).await);
    }
    let fees_before = tx_fees(&env, &runner.pubkey());
    custom(
        env.send_settle(&runner, &run, &[(0, CAP + 1)], vec![ix])
            .await,
        E::ChargeAboveCap,
    );
    let fee = tx_fees(&env, &runner.pubkey()) - fees_before;
    assert_eq!(fee, 5_000);
    for (k, was) in keys.iter().zip(before) {
        let want = if *k == runner.pubkey() {
            was - fee
        } else {
            was
        };
        assert_eq!(env.lamports(k).await, want, "{k} after a refusal");
    }
    let state = env.run_state(&run).await;
    assert_eq!(
        (
            state.settled_trials,
            state.settled_usage,
            state.settle_batches
        ),
        (0, 0, 0)
    );
}

/// 2. Substitutions: another user's run named by a stranger, a fake fee vault, a fake config, a
///    copied run, a payout that is not the config's, a run id that is not the run's. A system
///    account in a typed slot fails Anchor's owner check, another program type its
///    discriminator, a program-owned copy the address or seeds check. Each instruction is the
///    chain client's with one account (or the run id) changed.
#[tokio::test(flavor = "current_thread")]
async fn a_substituted_account_or_run_id_is_refused_with_its_exact_error() {
    let (mut env, user, runner, stranger) = setup().await;
    let now = env.now().await;
    let deadline = now + MIN_DEADLINE;
    let manifest = [21u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 10, upper(10), deadline)
        .await
        .unwrap();
    let id = env.run_id(&run).await;
    let charges = [(0u16, 100u64)];

    // A stranger names the user's run: the run's seeds hold the user's key, so the stranger's
    // signature derives another address.
    let cancel = replace(
        ix::run_cancel(&user.pubkey(), &run),
        &user.pubkey(),
        &stranger.pubkey(),
    );
    custom(
        env.send(
            "run_cancel by a stranger",
            vec![cancel],
            &[&stranger],
            vec![],
        )
        .await,
        AnchorError::ConstraintSeeds,
    );

    // The payout must be the config's: the runner's own key, the user's, the stranger's.
    for other in [runner.pubkey(), user.pubkey(), stranger.pubkey()] {
        let ix = replace(
            env.settle_ix(&runner, &run, id, &charges),
            &env.payout.pubkey(),
            &other,
        );
        custom(
            env.send_settle(&runner, &run, &charges, vec![ix]).await,
            E::WrongPayout,
        );
    }

    // The fee vault: a system account (the runner's, the stranger's) is not a FeeVault at all;
    // a program-owned byte-for-byte copy at another address is refused by its address.
    for other in [runner.pubkey(), stranger.pubkey()] {
        let ix = replace(
            env.settle_ix(&runner, &run, id, &charges),
            &pda::fee_vault(),
            &other,
        );
        custom(
            env.send_settle(&runner, &run, &charges, vec![ix]).await,
            AnchorError::AccountOwnedByWrongProgram,
        );
    }
    let fake_vault = forged_copy(&mut env, &pda::fee_vault()).await;
    let ix = replace(
        env.settle_ix(&runner, &run, id, &charges),
        &pda::fee_vault(),
        &fake_vault,
    );
    custom(
        env.send_settle(&runner, &run, &charges, vec![ix]).await,
        AnchorError::ConstraintAddress,
    );

    // The config: a system account, the fee vault (program-owned, another type), a copy.
    let ix = replace(
        env.settle_ix(&runner, &run, id, &charges),
        &pda::config(),
        &stranger.pubkey(),
    );
    custom(
        env.send_settle(&runner, &run, &charges, vec![ix]).await,
        AnchorError::AccountOwnedByWrongProgram,
    );
    let mut ix = env.settle_ix(&runner, &run, id, &charges);
    // The fee vault is named twice then: swap the config's meta only.
    let at = ix
        .accounts
        .iter()
        .position(|m| m.pubkey == pda::config())
        .unwrap();
    ix.accounts[at].pubkey = pda::fee_vault();
    custom(
        env.send_settle(&runner, &run, &charges, vec![ix]).await,
        AnchorError::AccountDiscriminatorMismatch,
    );
    let fake_config = forged_copy(&mut env, &pda::config()).await;
    let ix = replace(
        env.settle_ix(&runner, &run, id, &charges),
        &pda::config(),
        &fake_config,
    );
    custom(
        env.send_settle(&runner, &run, &charges, vec![ix]).await,
        AnchorError::ConstraintAddress,
    );
    // The same copy as finalize's config.
    let ix = replace(
        env.finalize_ix(&runner, &run, id),
        &pda::config(),
        &fake_config,
    );
    custom(
        env.send("run_finalize, fake config", vec![ix], &[&runner], vec![])
            .await,
        AnchorError::ConstraintAddress,
    );

    // A run id that is not the run's: the next ones, zero, the largest.
    for wrong in [id + 1, id + 1_000, 0, u64::MAX] {
        let ix = env.settle_ix(&runner, &run, wrong, &charges);
        custom(
            env.send_settle(&runner, &run, &charges, vec![ix]).await,
            E::WrongRun,
        );
        let ix = env.finalize_ix(&runner, &run, wrong);
        custom(
            env.send("run_finalize, wrong id", vec![ix], &[&runner], vec![])
                .await,
            E::WrongRun,
        );
    }
    // The run: a program-owned copy of it at an address its seeds do not derive (it would pay
    // out of an account the user never funded), and an account of another type.
    let fake_run = forged_copy(&mut env, &run).await;
    let ix = replace(env.settle_ix(&runner, &run, id, &charges), &run, &fake_run);
    custom(
        env.send_settle(&runner, &fake_run, &charges, vec![ix])
            .await,
        AnchorError::ConstraintSeeds,
    );
    let ix = replace(env.finalize_ix(&runner, &run, id), &run, &fake_run);
    custom(
        env.send("run_finalize, copied run", vec![ix], &[&runner], vec![])
            .await,
        AnchorError::ConstraintSeeds,
    );
    let ix = replace(ix::run_cancel(&user.pubkey(), &run), &run, &fake_run);
    custom(
        env.send("run_cancel, copied run", vec![ix], &[&user], vec![])
            .await,
        AnchorError::ConstraintSeeds,
    );
    let ix = replace(
        env.settle_ix(&runner, &run, id, &charges),
        &run,
        &pda::config(),
    );
    custom(
        env.send_settle(&runner, &run, &charges, vec![ix]).await,
        AnchorError::AccountDiscriminatorMismatch,
    );
    // Nothing above applied: the genuine instructions still do.
    let state = env.run_state(&run).await;
    assert_eq!((state.settled_trials, state.settle_batches), (0, 0));
    env.settle(&runner, &run, &charges).await.unwrap();
    env.finalize(&runner, &run).await.unwrap();

    // Close of a finalized run, by a stranger: would pay the stranger if the seeds were not
    // checked.
    let returned = remainder(upper(10), &charges) + env.run_rent().await;
    let close = replace(
        ix::run_close(&user.pubkey(), &run),
        &user.pubkey(),
        &stranger.pubkey(),
    );
    custom(
        env.send("run_close by a stranger", vec![close], &[&stranger], vec![])
            .await,
        AnchorError::ConstraintSeeds,
    );
    env.close(&user, &run, returned).await.unwrap();

    // Refund of an expired run, by a stranger.
    let manifest = [22u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 1, upper(1), deadline)
        .await
        .unwrap();
    env.set_time(deadline + 1).await;
    let refund = replace(
        ix::run_refund_expired(&user.pubkey(), &run),
        &user.pubkey(),
        &stranger.pubkey(),
    );
    custom(
        env.send(
            "run_refund by a stranger",
            vec![refund],
            &[&stranger],
            vec![],
        )
        .await,
        AnchorError::ConstraintSeeds,
    );
    let returned = upper(1) + env.run_rent().await;
    env.refund(&user, &run, returned).await.unwrap();
}

/// 3. Identity (L-5): a closed and re-opened run is another run — a new id from the vault's
///    counter, a fresh bitmap and digest — and what was signed for the old one (a durable-nonce
///    settle, a finalize) is refused with WrongRun; the two lifetimes' events differ in run_id.
#[tokio::test(flavor = "current_thread")]
async fn a_re_opened_run_is_a_new_run_and_refuses_the_old_ones_instructions() {
    let (mut env, user, runner, _) = setup().await;
    let manifest = [31u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE;
    let escrow = upper(4);
    let rent = env.run_rent().await;

    let (result, logs) = open_logged(&mut env, &user, manifest, 4, escrow, deadline).await;
    result.unwrap();
    let first = events::<RunOpened>(&logs);
    assert_events(
        first.iter().map(|e| (e.run, e.run_id)).collect::<Vec<_>>(),
        vec![(run, 1)],
    );
    // Pre-signed for the first lifetime, sent later.
    let stale_settle = env.settle_ix_with(&runner, &run, 1, [9; 32], &[(0, 7)]);
    let stale_finalize = env.finalize_ix(&runner, &run, 1);
    let charges = [(0u16, 500u64), (3, 600)];
    env.settle(&runner, &run, &charges).await.unwrap();
    env.finalize(&runner, &run).await.unwrap();
    let (result, logs) = env
        .send_logged(
            "run_close",
            vec![ix::run_close(&user.pubkey(), &run)],
            &[&user],
            closing(&user, &run, remainder(escrow, &charges) + rent),
        )
        .await;
    result.unwrap();
    let closed = events::<RunClosed>(&logs);
    assert_events(
        closed
            .iter()
            .map(|e| (e.run, e.run_id, e.refunded))
            .collect::<Vec<_>>(),
        vec![(run, 1, remainder(escrow, &charges))],
    );

    let (result, logs) = open_logged(&mut env, &user, manifest, 4, escrow, deadline).await;
    result.unwrap();
    let second = events::<RunOpened>(&logs);
    assert_events(
        second.iter().map(|e| (e.run, e.run_id)).collect::<Vec<_>>(),
        // The same address, another run id.
        vec![(run, 2)],
    );
    let state = env.run_state(&run).await;
    assert_eq!(state.run_id, 2);
    assert_eq!(state.settled_bitmap, [0; 13], "a fresh bitmap");
    assert_eq!(state.settle_digest, INITIAL_DIGEST, "a fresh digest");
    assert_eq!(
        (
            state.settled_trials,
            state.settle_batches,
            state.settled_usage,
            state.settled_fees,
            state.report_hash,
            state.status
        ),
        (0, 0, 0, 0, [0; 32], RunStatus::Open)
    );
    assert_eq!(env.vault_state().await.next_run_id, 3);

    custom(
        env.send_settle(&runner, &run, &[(0, 7)], vec![stale_settle])
            .await,
        E::WrongRun,
    );
    custom(
        env.send(
            "stale run_finalize",
            vec![stale_finalize],
            &[&runner],
            vec![],
        )
        .await,
        E::WrongRun,
    );
    // Trial 0, settled in the first lifetime, settles again in the second.
    let ix = env.settle_ix_with(&runner, &run, 2, [9; 32], &[(0, 7)]);
    let (result, logs) = settle_logged(&mut env, &runner, &run, &[(0, 7)], ix).await;
    result.unwrap();
    let settled = events::<TrialsSettled>(&logs);
    assert_events(
        settled
            .iter()
            .map(|e| (e.run_id, e.batch))
            .collect::<Vec<_>>(),
        // The batch count restarted with the run.
        vec![(2, 1)],
    );
}

/// 4a. Deadlines at open: exactly now + min_deadline and now + 7 days are accepted, one second
///     either side refused.
#[tokio::test(flavor = "current_thread")]
async fn an_open_deadline_is_accepted_exactly_at_its_bounds() {
    let (mut env, user, _, _) = setup().await;
    let now = env.now().await + 100;
    env.set_time(now).await;
    custom(
        env.open(&user, [41; 32], 1, upper(1), now + MIN_DEADLINE - 1)
            .await,
        E::DeadlineTooSoon,
    );
    env.open(&user, [41; 32], 1, upper(1), now + MIN_DEADLINE)
        .await
        .unwrap();
    custom(
        env.open(&user, [42; 32], 1, upper(1), now + MAX_DEADLINE_SECS + 1)
            .await,
        E::DeadlineTooFar,
    );
    env.open(&user, [42; 32], 1, upper(1), now + MAX_DEADLINE_SECS)
        .await
        .unwrap();
    assert_eq!(MAX_DEADLINE_SECS, 7 * 24 * 3600);
    let state = env.run_state(&pda::run(&user.pubkey(), &[42; 32])).await;
    assert_eq!(
        (state.opened_at, state.deadline),
        (now, now + 7 * 24 * 3600)
    );
}

/// 4b. Settling closes at the deadline (accepted at it, DeadlinePassed one second later); the
///     user's refund opens one second after it (DeadlineNotReached at it).
#[tokio::test(flavor = "current_thread")]
async fn an_open_run_settles_until_its_deadline_and_refunds_after_it() {
    let (mut env, user, runner, _) = setup().await;
    let now = env.now().await;
    let deadline = now + MIN_DEADLINE;
    let manifest = [43u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 3, upper(3), deadline)
        .await
        .unwrap();
    env.set_time(deadline).await;
    env.settle(&runner, &run, &[(0, 10)]).await.unwrap();
    let returned = remainder(upper(3), &[(0, 10)]) + env.run_rent().await;
    custom(
        env.refund(&user, &run, returned).await,
        E::DeadlineNotReached,
    );
    env.set_time(deadline + 1).await;
    custom(
        env.settle(&runner, &run, &[(1, 10)]).await,
        E::DeadlinePassed,
    );
    env.refund(&user, &run, returned).await.unwrap();
    assert!(!env.exists(&run).await);
}

/// 4c. A cancelled run settles in-flight requests until exactly cancel + 600 s
///     (CancelWindowClosed one second later) and refunds from then on, before its deadline; a
///     cancel close to the deadline closes at the deadline (DeadlinePassed).
#[tokio::test(flavor = "current_thread")]
async fn a_cancelled_run_settles_until_its_window_or_deadline_closes() {
    let (mut env, user, runner, _) = setup().await;
    assert_eq!(CANCEL_WINDOW, 600);
    let now = env.now().await;
    let deadline = now + 24 * 3600;
    let manifest = [44u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 3, upper(3), deadline)
        .await
        .unwrap();
    let cancel_at = now + 50;
    env.set_time(cancel_at).await;
    env.cancel(&user, &run).await.unwrap();
    assert_eq!(
        env.run_state(&run).await.status,
        RunStatus::Cancelled { at: cancel_at }
    );
    env.set_time(cancel_at + 600).await;
    env.settle(&runner, &run, &[(0, 10)]).await.unwrap();
    let returned = remainder(upper(3), &[(0, 10)]) + env.run_rent().await;
    custom(
        env.refund(&user, &run, returned).await,
        E::DeadlineNotReached,
    );
    env.set_time(cancel_at + 601).await;
    custom(
        env.settle(&runner, &run, &[(1, 10)]).await,
        E::CancelWindowClosed,
    );
    assert!(cancel_at + 601 < deadline, "refunded before the deadline");
    env.refund(&user, &run, returned).await.unwrap();

    // Cancelled 100 s before the deadline: the window would run past it, the deadline wins.
    let now = env.now().await;
    let deadline = now + MIN_DEADLINE;
    let manifest = [45u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 3, upper(3), deadline)
        .await
        .unwrap();
    env.set_time(deadline - 100).await;
    env.cancel(&user, &run).await.unwrap();
    env.set_time(deadline).await;
    env.settle(&runner, &run, &[(2, 10)]).await.unwrap();
    let returned = remainder(upper(3), &[(2, 10)]) + env.run_rent().await;
    custom(
        env.refund(&user, &run, returned).await,
        E::DeadlineNotReached,
    );
    env.set_time(deadline + 1).await;
    custom(
        env.settle(&runner, &run, &[(0, 10)]).await,
        E::DeadlinePassed,
    );
    env.refund(&user, &run, returned).await.unwrap();
}

/// 4d. Sizes: 100 trials open, 101 do not; a batch of 60 settles, 61 does not; all 100 settle
///     in two batches; trial 100 and 65535 are out of range; usage exactly at the cap settles,
///     one lamport above does not.
#[tokio::test(flavor = "current_thread")]
async fn batch_trial_and_usage_limits_hold_at_their_exact_edges() {
    let (mut env, user, runner, _) = setup().await;
    assert_eq!((MAX_TRIALS, MAX_SETTLE_BATCH), (100, 60));
    let deadline = env.now().await + MIN_DEADLINE;
    custom(
        env.open(&user, [46; 32], 101, upper(101), deadline).await,
        E::TrialCountOutOfRange,
    );
    let manifest = [47u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 100, upper(100), deadline)
        .await
        .unwrap();

    let all: Vec<(u16, u64)> = (0..100).map(|i| (i, 1_000 + u64::from(i))).collect();
    custom(env.settle(&runner, &run, &all[..61]).await, E::BadBatch);
    custom(
        env.settle(&runner, &run, &[(100, 1)]).await,
        E::TrialOutOfRange,
    );
    custom(
        env.settle(&runner, &run, &[(u16::MAX, 1)]).await,
        E::TrialOutOfRange,
    );
    custom(
        env.settle(&runner, &run, &[(0, CAP + 1)]).await,
        E::ChargeAboveCap,
    );
    let mut first = all[..60].to_vec();
    first[0].1 = CAP;
    env.settle(&runner, &run, &first).await.unwrap();
    env.settle(&runner, &run, &all[60..]).await.unwrap();
    let state = env.run_state(&run).await;
    let usage: u64 = first.iter().chain(&all[60..]).map(|c| c.1).sum();
    assert_eq!(
        (
            state.settled_trials,
            state.settle_batches,
            state.settled_usage,
            state.settled_fees
        ),
        (100, 2, usage, FEE * 100)
    );
    let mut bitmap = [0xffu8; 13];
    bitmap[12] = 0x0f;
    assert_eq!(state.settled_bitmap, bitmap, "exactly trials 0..100");
    custom(
        env.settle(&runner, &run, &[(99, 1)]).await,
        E::TrialAlreadySettled,
    );
}

/// 4e. Status: a run is cancelled once; a cancelled run is not closed but may be finalized; a
///     finalized run is neither cancelled nor refunded (past its deadline too) — it is closed.
#[tokio::test(flavor = "current_thread")]
async fn each_instruction_refuses_a_run_in_the_wrong_status() {
    let (mut env, user, runner, _) = setup().await;
    let deadline = env.now().await + MIN_DEADLINE;
    let manifest = [48u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 2, upper(2), deadline)
        .await
        .unwrap();
    let returned = upper(2) + env.run_rent().await;
    env.cancel(&user, &run).await.unwrap();
    custom(env.cancel(&user, &run).await, E::RunNotOpen);
    custom(env.close(&user, &run, returned).await, E::RunNotFinished);
    env.finalize(&runner, &run).await.unwrap();
    custom(env.cancel(&user, &run).await, E::RunNotOpen);
    env.set_time(deadline + 1).await;
    custom(env.refund(&user, &run, returned).await, E::RunNotOpen);
    env.close(&user, &run, returned).await.unwrap();
    assert!(!env.exists(&run).await);
}

/// 5. Pull refunds (M-2): a user wallet emptied to 0 lamports blocks nothing. The runner
///    finalizes without it; the close credits remainder + rent in one transfer, although the
///    remainder alone is below the rent-exempt minimum of an empty account.
#[tokio::test(flavor = "current_thread")]
async fn an_emptied_wallet_neither_blocks_finalize_nor_loses_its_refund() {
    let (mut env, _, runner, sponsor) = setup().await;
    let user = Keypair::new();
    fund(&env.ctx, &user.pubkey(), 1_000_000_000).await;
    let manifest = [51u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE;
    env.open(&user, manifest, 1, upper(1), deadline)
        .await
        .unwrap();
    let charges = [(0u16, 10u64)];
    env.settle(&runner, &run, &charges).await.unwrap();
    let rest = remainder(upper(1), &charges);
    let empty_minimum = env.rent(0).await;
    assert_eq!(empty_minimum, 890_880);
    assert!(rest < empty_minimum, "{rest} alone could not be received");

    // The user sends everything it has elsewhere; the sponsor pays the fee.
    let all = env.lamports(&user.pubkey()).await;
    let sink = Pubkey::new_unique();
    let mut data = vec![2, 0, 0, 0];
    data.extend_from_slice(&all.to_le_bytes());
    let empty = Instruction {
        program_id: SYSTEM_PROGRAM_ID,
        accounts: vec![
            AccountMeta::new(user.pubkey(), true),
            AccountMeta::new(sink, false),
        ],
        data,
    };
    env.send(
        "empty the wallet",
        vec![empty],
        &[&sponsor, &user],
        vec![(user.pubkey(), -i128::from(all)), (sink, i128::from(all))],
    )
    .await
    .unwrap();
    assert_eq!(env.lamports(&user.pubkey()).await, 0);
    assert!(!env.exists(&user.pubkey()).await, "the wallet is gone");

    env.finalize(&runner, &run).await.unwrap();
    let rent = env.run_rent().await;
    env.send(
        "run_close to an empty wallet",
        vec![ix::run_close(&user.pubkey(), &run)],
        &[&sponsor, &user],
        closing(&user, &run, rest + rent),
    )
    .await
    .unwrap();
    assert_eq!(env.lamports(&user.pubkey()).await, rest + rent);
    assert!(!env.exists(&run).await);
}

/// 6. The runner's spending limit counts everything a settle moves out of escrows — usage and
///    fees — across runs: up to exactly the limit settles, one lamport more is refused (nothing
///    moves), a trial at usage 0 is refused once the limit is reached (a leaked key cannot
///    charge never-run trials' fees beyond it), and the period resets exactly at start + period.
#[tokio::test(flavor = "current_thread")]
async fn the_spending_limit_counts_fees_spans_runs_and_resets_exactly_at_the_period_end() {
    const LIMIT: u64 = 900_000;
    const PERIOD: i64 = 3_600;
    assert_eq!(FEE, 200_000, "the figures below are worked for this fee");
    let mut env = start().await;
    let t0 = env.now().await + 10;
    env.set_time(t0).await;
    let admin = env.admin.insecure_clone();
    let mut args = env.init_args();
    args.usage_limit = SpendingLimit {
        amount: LIMIT,
        period_secs: PERIOD,
    };
    env.config_init_with(&admin, args).await.unwrap();
    let user = env.user.insecure_clone();
    let runner = env.runner.insecure_clone();
    let deadline = t0 + 4 * PERIOD;
    let (a, b, c) = (
        pda::run(&user.pubkey(), &[61; 32]),
        pda::run(&user.pubkey(), &[62; 32]),
        pda::run(&user.pubkey(), &[63; 32]),
    );
    for (manifest, trials) in [([61; 32], 4), ([62; 32], 4), ([63; 32], 1)] {
        env.open(&user, manifest, trials, upper(trials), deadline)
            .await
            .unwrap();
    }

    // 60,000 + 2 fees, then 40,000 + 1 fee: 700,000 of 900,000.
    env.settle(&runner, &a, &[(0, 30_000), (1, 30_000)])
        .await
        .unwrap();
    env.settle(&runner, &b, &[(0, 40_000)]).await.unwrap();
    let vault = env.vault_state().await;
    assert_eq!(
        (vault.usage_period_start, vault.usage_in_period),
        (t0, 700_000)
    );
    // One more fee fits exactly, one lamport of usage with it does not.
    custom(
        env.settle(&runner, &b, &[(1, 1)]).await,
        E::SpendingLimitExceeded,
    );
    env.settle(&runner, &a, &[(2, 0)]).await.unwrap();
    assert_eq!(env.vault_state().await.usage_in_period, LIMIT);
    // The limit is reached: a never-run trial charged at usage 0 moves its fee out of the
    // user's escrow, so it is refused too, and nothing moves (the ledger checks every account).
    custom(
        env.settle(&runner, &c, &[(0, 0)]).await,
        E::SpendingLimitExceeded,
    );
    env.set_time(t0 + PERIOD - 1).await;
    custom(
        env.settle(&runner, &b, &[(2, 0)]).await,
        E::SpendingLimitExceeded,
    );
    env.set_time(t0 + PERIOD).await;
    env.settle(&runner, &b, &[(1, 1)]).await.unwrap();
    let vault = env.vault_state().await;
    assert_eq!(
        (vault.usage_period_start, vault.usage_in_period),
        (t0 + PERIOD, FEE + 1)
    );
    env.settle(&runner, &a, &[(3, 49_999)]).await.unwrap();
    env.settle(&runner, &b, &[(2, 50_000)]).await.unwrap();
    env.settle(&runner, &b, &[(3, 0)]).await.unwrap();
    assert_eq!(env.vault_state().await.usage_in_period, LIMIT);
    custom(
        env.settle(&runner, &c, &[(0, 0)]).await,
        E::SpendingLimitExceeded,
    );
    let vault = env.vault_state().await;
    assert_eq!(
        (
            vault.total_usage,
            vault.total_fees,
            vault.total_trials_settled
        ),
        (60_000 + 40_000 + 1 + 49_999 + 50_000, 8 * FEE, 8)
    );
}

/// 7. Every run event's fields, against what the test sent and computed.
#[tokio::test(flavor = "current_thread")]
async fn every_run_event_carries_what_the_test_computed() {
    let (mut env, user, runner, _) = setup().await;
    let now = env.now().await;
    let deadline = now + MIN_DEADLINE + 5;
    let manifest = [71u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let escrow = upper(5) + 3;
    let rent = env.run_rent().await;

    let (result, logs) = open_logged(&mut env, &user, manifest, 5, escrow, deadline).await;
    result.unwrap();
    let opened: Vec<_> = events::<RunOpened>(&logs)
        .into_iter()
        .map(|e| {
            (
                e.run,
                e.run_id,
                e.user,
                e.runner,
                e.manifest_hash,
                e.planned_trials,
                e.per_request_cap,
                e.fee_per_trial,
                e.escrowed,
                e.deadline,
            )
        })
        .collect();
    assert_events(
        opened,
        vec![(
            run,
            1,
            user.pubkey(),
            runner.pubkey(),
            manifest,
            5,
            CAP,
            FEE,
            escrow,
            deadline,
        )],
    );

    let batches: [&[(u16, u64)]; 2] = [&[(4, 11), (0, 22)], &[(2, CAP)]];
    let mut digest = INITIAL_DIGEST;
    for (n, charges) in batches.iter().enumerate() {
        let evidence = evidence_hash(charges);
        let ix = env.settle_ix_with(&runner, &run, 1, evidence, charges);
        let (result, logs) = settle_logged(&mut env, &runner, &run, charges, ix).await;
        result.unwrap();
        digest = fold_digest(&digest, &evidence, charges);
        let usage: u64 = charges.iter().map(|c| c.1).sum();
        let settled: Vec<_> = events::<TrialsSettled>(&logs)
            .into_iter()
            .map(|e| {
                (
                    e.run,
                    e.run_id,
                    e.batch,
                    e.trials,
                    e.usage,
                    e.fees,
                    e.evidence_hash,
                    e.settle_digest,
                )
            })
            .collect();
        assert_events(
            settled,
            vec![(
                run,
                1,
                u16::try_from(n + 1).unwrap(),
                u16::try_from(charges.len()).unwrap(),
                usage,
                FEE * charges.len() as u64,
                evidence,
                digest,
            )],
        );
    }

    let cancel_at = now + 30;
    env.set_time(cancel_at).await;
    let (result, logs) = env
        .send_logged(
            "run_cancel",
            vec![ix::run_cancel(&user.pubkey(), &run)],
            &[&user],
            vec![],
        )
        .await;
    result.unwrap();
    let cancelled: Vec<_> = events::<RunCancelled>(&logs)
        .into_iter()
        .map(|e| (e.run, e.run_id, e.at))
        .collect();
    assert_events(cancelled, vec![(run, 1, cancel_at)]);

    let all: Vec<(u16, u64)> = batches.concat();
    let rest = remainder(escrow, &all);
    // Two unsettled trials at cap + fee, the 3 extra lamports, the settled trials' unused cap.
    assert_eq!(rest, 2 * (CAP + FEE) + 3 + (2 * CAP - 33));
    let report = [0xabu8; 32];
    let ix = ix::run_finalize(
        &runner.pubkey(),
        &run,
        RunFinalizeArgs {
            expected_run_id: 1,
            report_hash: report,
        },
    );
    let (result, logs) = env
        .send_logged("run_finalize", vec![ix], &[&runner], vec![])
        .await;
    result.unwrap();
    let finalized: Vec<_> = events::<RunFinalized>(&logs)
        .into_iter()
        .map(|e| {
            (
                (e.run, e.run_id, e.user, e.runner, e.manifest_hash),
                (e.report_hash, e.settle_digest, e.remainder),
            )
        })
        .collect();
    assert_events(
        finalized,
        vec![(
            (run, 1, user.pubkey(), runner.pubkey(), manifest),
            (report, digest, rest),
        )],
    );
    // And the books a report is checked against once the account is closed: the event's are
    // the account's, field for field (`skilltrial verify --run` after close reads only it).
    // The native layer logs no events (see `assert_events`); there this is checked by the .so.
    if let Some(event) = events::<RunFinalized>(&logs).into_iter().next() {
        let account = env.run_state(&run).await;
        assert_eq!(
            (
                event.settle_batches,
                event.settled_trials,
                event.planned_trials,
                event.escrowed,
                event.settled_usage,
                event.settled_fees,
            ),
            (
                account.settle_batches,
                account.settled_trials,
                account.planned_trials,
                account.escrowed,
                account.settled_usage,
                account.settled_fees,
            )
        );
        assert_eq!(
            skilltrial_chain::account::RunBooks::of_finalized(&event),
            skilltrial_chain::account::RunBooks::of_account(
                &skilltrial_chain::account::RunAccount {
                    address: run,
                    run: account,
                }
            )
        );
    }
    // No other run event in these transactions.
    assert!(events::<RunClosed>(&logs).is_empty() && events::<RunOpened>(&logs).is_empty());

    let (result, logs) = env
        .send_logged(
            "run_close",
            vec![ix::run_close(&user.pubkey(), &run)],
            &[&user],
            closing(&user, &run, rest + rent),
        )
        .await;
    result.unwrap();
    let closed: Vec<_> = events::<RunClosed>(&logs)
        .into_iter()
        .map(|e| (e.run, e.run_id, e.refunded))
        .collect();
    assert_events(closed, vec![(run, 1, rest)]);

    // The expired-refund path: run 2, one trial settled, refunded after its deadline.
    let manifest = [72u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE;
    env.open(&user, manifest, 2, upper(2), deadline)
        .await
        .unwrap();
    env.settle(&runner, &run, &[(1, 77)]).await.unwrap();
    env.set_time(deadline + 1).await;
    let rest = remainder(upper(2), &[(1, 77)]);
    let (result, logs) = env
        .send_logged(
            "run_refund_expired",
            vec![ix::run_refund_expired(&user.pubkey(), &run)],
            &[&user],
            closing(&user, &run, rest + rent),
        )
        .await;
    result.unwrap();
    let refunded: Vec<_> = events::<RunRefunded>(&logs)
        .into_iter()
        .map(|e| (e.run, e.run_id, e.refunded))
        .collect();
    assert_events(refunded, vec![(run, 2, rest)]);
    assert!(events::<RunClosed>(&logs).is_empty());
}

/// 8. The Run account's digest is `skilltrial_core::settlement`'s: three batches of real
///    evidence records, each batch's evidence hash from `batch_evidence_hash`; after each batch
///    the account holds the digest the test folds; the report's settlement section built from the
///    same records verifies to the same digest.
#[tokio::test(flavor = "current_thread")]
async fn the_accounts_digest_is_the_one_core_recomputes_from_the_report() {
    use sha2::Digest as _;
    let (mut env, user, runner, _) = setup().await;
    let manifest = [81u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE;
    env.open(&user, manifest, 9, upper(9), deadline)
        .await
        .unwrap();
    let run_id = env.run_id(&run).await;
    let record = |trial: u16, usage: u64| {
        let answer: [u8; 32] = sha2::Sha256::digest(format!("answer {trial}")).into();
        let hex: String = answer.iter().map(|b| format!("{b:02x}")).collect();
        EvidenceRecord::new(
            trial,
            format!("run-{trial:03}-1"),
            trial.is_multiple_of(2).then(|| format!("req_{trial}")),
            usage,
            hex,
        )
        .unwrap()
    };
    let batches: Vec<Vec<EvidenceRecord>> = vec![
        vec![record(3, 1_000), record(0, 49_999), record(7, 0)],
        vec![record(1, CAP)],
        vec![record(8, 5), record(2, 6), record(4, 7), record(5, 8)],
    ];
    let mut digest = INITIAL_DIGEST;
    let mut settled = Vec::new();
    for records in &batches {
        let evidence = batch_evidence_hash(records);
        let charges: Vec<(u16, u64)> = records
            .iter()
            .map(|r| (r.trial(), r.usage_lamports()))
            .collect();
        let ix = env.settle_ix_with(&runner, &run, run_id, evidence, &charges);
        env.send_settle(&runner, &run, &charges, vec![ix])
            .await
            .unwrap();
        digest = fold_digest(&digest, &evidence, &charges);
        assert_eq!(env.run_state(&run).await.settle_digest, digest);
        settled.push(SettledBatch::new(records.clone(), None));
    }
    let section = Settlement::new(PROGRAM_ID.to_string(), run.to_string(), run_id, settled);
    let check = section.verify().unwrap();
    let account = env.run_state(&run).await;
    assert_eq!(check.digest.0, account.settle_digest);
    assert_eq!(
        (check.batches, check.records, check.usage_lamports),
        (3, 8, account.settled_usage)
    );
    assert_eq!(account.settle_batches, 3);
    // A report claiming one usage lamport more in the last batch does not verify against it.
    let mut forged = batches.clone();
    forged[2][3] = record(5, 9);
    let forged = Settlement::new(
        PROGRAM_ID.to_string(),
        run.to_string(),
        run_id,
        forged
            .into_iter()
            .map(|r| SettledBatch::new(r, None))
            .collect(),
    );
    assert_ne!(forged.verify().unwrap().digest.0, account.settle_digest);
}

/// `run_open` through `send_logged`: the user pays escrow + rent into the run.
async fn open_logged(
    env: &mut Env,
    user: &Keypair,
    manifest: [u8; 32],
    trials: u16,
    escrow: u64,
    deadline: i64,
) -> (Result<u64, String>, Vec<String>) {
    let args = env.open_args(manifest, trials, CAP, escrow, deadline);
    let run = pda::run(&user.pubkey(), &manifest);
    let paid = i128::from(escrow) + i128::from(env.run_rent().await);
    env.send_logged(
        "run_open",
        vec![ix::run_open(&user.pubkey(), args)],
        &[user],
        vec![(user.pubkey(), -paid), (run, paid)],
    )
    .await
}

/// A settle through `send_logged`: usage to the payout, fees to the vault, out of the run.
async fn settle_logged(
    env: &mut Env,
    runner: &Keypair,
    run: &Pubkey,
    charges: &[(u16, u64)],
    ix: Instruction,
) -> (Result<u64, String>, Vec<String>) {
    let usage: u64 = charges.iter().map(|c| c.1).sum();
    let fees = FEE * charges.len() as u64;
    let expected = vec![
        (env.payout.pubkey(), i128::from(usage)),
        (pda::fee_vault(), i128::from(fees)),
        (*run, -i128::from(usage + fees)),
    ];
    env.send_logged("run_settle", vec![ix], &[runner], expected)
        .await
}

/// The deltas of a close or refund: `returned` from the run to its user.
fn closing(user: &Keypair, run: &Pubkey, returned: u64) -> Vec<(Pubkey, i128)> {
    vec![
        (user.pubkey(), i128::from(returned)),
        (*run, -i128::from(returned)),
    ]
}

/// The payout address is never an account of the program: the singletons are refused when the
/// config is created (`PayoutIsProgramAccount`), and a payout address that is (or later becomes)
/// a Run account — which no config check can foresee — is refused by every settle, with nothing
/// moved, so usage can never be stranded in the program or mixed into a run's escrow.
#[tokio::test(flavor = "current_thread")]
async fn the_payout_address_is_never_an_account_of_the_program() {
    for singleton in [pda::config(), pda::fee_vault(), pda::buyback_log()] {
        let mut env = start().await;
        let admin = env.admin.insecure_clone();
        let mut args = env.init_args();
        args.runner_payout = skilltrial_chain::anchor_key(&singleton);
        custom(
            env.config_init_with(&admin, args).await,
            E::PayoutIsProgramAccount,
        );
        assert!(!env.exists(&pda::config()).await);
    }

    // A payout address that is the PDA of a run someone opens later.
    let mut env = start().await;
    let admin = env.admin.insecure_clone();
    let (user, runner) = (env.user.insecure_clone(), env.runner.insecure_clone());
    let decoy = pda::run(&user.pubkey(), &[77; 32]);
    let mut args = env.init_args();
    args.runner_payout = skilltrial_chain::anchor_key(&decoy);
    env.config_init_with(&admin, args).await.unwrap();
    let deadline = env.now().await + MIN_DEADLINE + 60;
    env.open(&user, [77; 32], 1, upper(1), deadline)
        .await
        .unwrap();
    let manifest = [78u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 2, upper(2), deadline)
        .await
        .unwrap();
    let run_id = env.run_id(&run).await;
    let args = RunSettleArgs {
        expected_run_id: run_id,
        evidence_hash: evidence_hash(&[(0, 10)]),
        trials: vec![TrialCharge {
            index: 0,
            usage: 10,
        }],
    };
    let i = ix::run_settle(&runner.pubkey(), &run, &decoy, args);
    custom(
        env.send("settle into a run", vec![i], &[&runner], vec![])
            .await,
        E::PayoutIsProgramAccount,
    );
    assert_eq!(env.run_state(&run).await.settled_trials, 0);
}

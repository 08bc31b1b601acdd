//! The user's ways out and the program's creation of accounts, where the cluster differs from the
//! one the program was tested on:
//!
//! - a rise of the Rent sysvar after a run opened never locks its user out: cancel, finalize,
//!   close and refund still pay the whole balance (the lamport half of the invariant applies only
//!   where lamports move out to someone else: open and settle);
//! - a stranger who sends lamports to a future Run address, or to the singletons' addresses
//!   before `config_init`, blocks nothing, with SIMD-0312 (`CreateAccountAllowPrefund`) active
//!   and with it deactivated (where Anchor's `init` would fail for ever), and the donation goes
//!   back to the user with the rest;
//! - a settle batch whose length prefix claims `u32::MAX` trials is refused at deserialization,
//!   and moves nothing.

use skilltrial_chain::error::{AnchorError, SkillTrialError as E};
use skilltrial_chain::{ix, pda};
use skilltrial_program::state::{BuybackLog, Config, FeeVault, Run, RunStatus};
use solana_keypair::Keypair;
use solana_program_test::ProgramTest;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::harness::{
    CANCEL_WINDOW, Env, FEE, MIN_DEADLINE, custom, fund, start, start_with, system_transfer, upper,
};

/// SIMD-0312's feature, `create_account_allow_prefund` in agave-feature-set 4.2.2: what Anchor
/// 1.2.2's `init` uses for an address that already holds lamports.
const ALLOW_PREFUND: Pubkey =
    Pubkey::from_str_const("6sPDzwyARRExKH52LECxcGoqziH8G7SZofwuxi8Ja331");

/// More than the rent minimum of an empty account (890,880 lamports): less could not be sent to
/// a new address at all.
const DONATION: u64 = 1_000_000;

/// A bank without SIMD-0312, as a cluster where the feature is not yet active.
async fn start_without_prefund() -> Env {
    start_with(|pt: &mut ProgramTest| pt.deactivate_feature(ALLOW_PREFUND)).await
}

/// `stranger` sends `DONATION` lamports to `to`.
async fn donate(env: &mut Env, stranger: &Keypair, to: &Pubkey) {
    env.send(
        "a stranger's donation",
        vec![system_transfer(&stranger.pubkey(), to, DONATION)],
        &[stranger],
        vec![
            (stranger.pubkey(), -i128::from(DONATION)),
            (*to, i128::from(DONATION)),
        ],
    )
    .await
    .unwrap();
}

/// The Rent sysvar the program reads, at `factor` times its current rate. (The runtime's own
/// rent checks keep the bank's rate: this changes only what an instruction sees, which is what
/// a later rent repricing would change for a run opened before it.)
async fn scale_rent(env: &mut Env, factor: u64) {
    let mut rent = env.ctx.banks_client.get_rent().await.unwrap();
    rent.lamports_per_byte = rent.lamports_per_byte.checked_mul(factor).unwrap();
    env.ctx.set_sysvar(&rent);
}

/// After the Rent sysvar doubles, every run holds less than the new minimum plus its remainder.
/// Settling out of it is refused (`AccountingBroken`: the strict check stays where lamports leave
/// for someone else), but the user's exits all work: a finalized run closes, an open run cancels
/// and refunds after its window, another refunds after its deadline — each paying the whole
/// balance, old rent included.
#[tokio::test(flavor = "current_thread")]
async fn a_rent_rise_never_locks_a_user_out() {
    let mut env = start().await;
    env.config_init().await;
    let (user, runner) = (env.user.insecure_clone(), env.runner.insecure_clone());
    let deadline = env.now().await + MIN_DEADLINE;
    let rent = env.run_rent().await;
    let [a, b, c] = [[71u8; 32], [72; 32], [73; 32]].map(|m| pda::run(&user.pubkey(), &m));
    for manifest in [[71u8; 32], [72; 32], [73; 32]] {
        env.open(&user, manifest, 2, upper(2), deadline)
            .await
            .unwrap();
    }
    for run in [&a, &b, &c] {
        env.settle(&runner, run, &[(0, 1_000)]).await.unwrap();
    }
    let rest = upper(2) - 1_000 - FEE;

    scale_rent(&mut env, 2).await;
    assert_eq!(
        env.run_rent().await,
        2 * rent,
        "the program now sees twice the rent"
    );
    custom(
        env.settle(&runner, &a, &[(1, 1_000)]).await,
        E::AccountingBroken,
    );

    // A finalized run closes.
    env.finalize(&runner, &a).await.unwrap();
    env.close(&user, &a, rest + rent).await.unwrap();
    // An open run cancels, and refunds once its in-flight window is over.
    env.cancel(&user, &b).await.unwrap();
    let RunStatus::Cancelled { at } = env.run_state(&b).await.status else {
        panic!("run b is cancelled");
    };
    env.set_time(at + CANCEL_WINDOW + 1).await;
    env.refund(&user, &b, rest + rent).await.unwrap();
    // An open run refunds after its deadline.
    env.set_time(deadline + 1).await;
    env.refund(&user, &c, rest + rent).await.unwrap();
    for run in [a, b, c] {
        assert!(!env.exists(&run).await);
    }
}

/// A pre-funded address, on a run: a stranger pre-funds the Run address of the user's next
/// manifest. The open still works — with SIMD-0312 active and without it — the donation stays in
/// the run beside the escrow and the rent (the user tops up only what rent is missing, nothing when
/// the donation covers it), and the close returns all of it to the user.
#[tokio::test(flavor = "current_thread")]
async fn a_pre_funded_run_address_blocks_no_open_with_or_without_simd_0312() {
    for without in [false, true] {
        let mut env = if without {
            start_without_prefund().await
        } else {
            start().await
        };
        env.config_init().await;
        let (user, runner) = (env.user.insecure_clone(), env.runner.insecure_clone());
        let stranger = Keypair::new();
        fund(&env.ctx, &stranger.pubkey(), 1_000_000_000).await;
        let manifest = [74u8; 32];
        let run = pda::run(&user.pubkey(), &manifest);
        donate(&mut env, &stranger, &run).await;

        let rent = env.run_rent().await;
        let deadline = env.now().await + MIN_DEADLINE;
        let args = env.open_args(manifest, 2, crate::harness::CAP, upper(2), deadline);
        // The user pays the escrow and only the rent the donation does not cover.
        let topped = rent.saturating_sub(DONATION);
        let paid = i128::from(upper(2) + topped);
        env.send(
            "run_open on a pre-funded address",
            vec![ix::run_open(&user.pubkey(), args)],
            &[&user],
            vec![(user.pubkey(), -paid), (run, paid)],
        )
        .await
        .unwrap_or_else(|e| panic!("SIMD-0312 deactivated: {without}: {e}"));
        let state: Run = env.account(&run).await;
        assert_eq!((state.escrowed, state.planned_trials), (upper(2), 2));
        let held = DONATION.max(rent) + upper(2);
        assert_eq!(env.lamports(&run).await, held);

        env.settle(&runner, &run, &[(0, 1_000)]).await.unwrap();
        env.finalize(&runner, &run).await.unwrap();
        env.close(&user, &run, held - 1_000 - FEE).await.unwrap();
        assert!(!env.exists(&run).await);
    }
}

/// A pre-funded address, on the singletons: a stranger pre-funds the config's, the fee vault's and
/// the buyback log's addresses before the deployer's `config_init`. It still creates all three —
/// with SIMD-0312 active and without it — and the program then works (a run opens).
#[tokio::test(flavor = "current_thread")]
async fn pre_funded_singletons_block_no_config_init_with_or_without_simd_0312() {
    for without in [false, true] {
        let mut env = if without {
            start_without_prefund().await
        } else {
            start().await
        };
        let stranger = Keypair::new();
        fund(&env.ctx, &stranger.pubkey(), 1_000_000_000).await;
        let singletons = [
            (
                pda::config(),
                8 + <Config as anchor_lang::Space>::INIT_SPACE,
            ),
            (
                pda::fee_vault(),
                8 + <FeeVault as anchor_lang::Space>::INIT_SPACE,
            ),
            (pda::buyback_log(), 8 + BuybackLog::SPACE),
        ];
        for (address, _) in &singletons {
            donate(&mut env, &stranger, address).await;
        }
        let admin = env.admin.insecure_clone();
        let mut expected = Vec::new();
        let mut paid = 0u64;
        for &(address, space) in &singletons {
            let topped = env.rent(space).await.saturating_sub(DONATION);
            paid += topped;
            expected.push((address, i128::from(topped)));
        }
        expected.push((admin.pubkey(), -i128::from(paid)));
        let args = env.init_args();
        env.send(
            "config_init on pre-funded addresses",
            vec![ix::config_init(&admin.pubkey(), args)],
            &[&admin],
            expected,
        )
        .await
        .unwrap_or_else(|e| panic!("SIMD-0312 deactivated: {without}: {e}"));
        assert_eq!(env.config_state().await.fee_per_trial, FEE);
        assert_eq!(env.vault_state().await.next_run_id, 1);
        let user = env.user.insecure_clone();
        let deadline = env.now().await + MIN_DEADLINE;
        env.open(&user, [75; 32], 1, upper(1), deadline)
            .await
            .unwrap();
        assert_eq!(env.vault_state().await.next_run_id, 2);
    }
}

/// A settle whose trial list claims `u32::MAX` entries (the Borsh length prefix) is refused when
/// its arguments are read — no allocation of that size, no partial settle — and nothing moves.
#[tokio::test(flavor = "current_thread")]
async fn a_settle_batch_claiming_u32_max_trials_is_refused_and_moves_nothing() {
    let mut env = start().await;
    env.config_init().await;
    let (user, runner) = (env.user.insecure_clone(), env.runner.insecure_clone());
    let manifest = [76u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE;
    env.open(&user, manifest, 2, upper(2), deadline)
        .await
        .unwrap();
    let run_id = env.run_id(&run).await;
    let mut settle = env.settle_ix(&runner, &run, run_id, &[(0, 1_000)]);
    // discriminator (8) ‖ expected_run_id (8) ‖ evidence_hash (32) ‖ u32 length ‖ entries
    let at = 8 + 8 + 32;
    assert_eq!(settle.data[at..at + 4], 1u32.to_le_bytes());
    settle.data[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    custom(
        env.send(
            "settle claiming u32::MAX trials",
            vec![settle],
            &[&runner],
            vec![],
        )
        .await,
        AnchorError::InstructionDidNotDeserialize,
    );
    let state = env.run_state(&run).await;
    assert_eq!((state.settled_trials, state.settled_usage), (0, 0));
}

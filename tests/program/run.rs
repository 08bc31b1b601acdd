//! A hosted run's life on the program: settle, cancel, finalize, refund, close; every refusal
//! with its exact error; and the cost targets of a 54-trial run.

use skilltrial_chain::error::{AnchorError, SkillTrialError as E};
use skilltrial_chain::pda;
use skilltrial_program as skilltrial;
use solana_keypair::Keypair;
use solana_signer::Signer;

use crate::harness::{
    CANCEL_WINDOW, CAP, FEE, MIN_DEADLINE, custom, fund, layer_name, native_layer, print_cu, start,
    tx_fees, upper,
};

#[tokio::test(flavor = "current_thread")]
async fn a_54_trial_run_settles_cancels_finalizes_and_conserves_lamports() {
    let mut env = start().await;
    env.config_init().await;
    let user = env.user.insecure_clone();
    let runner = env.runner.insecure_clone();
    let manifest = [42u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE + 60;
    let escrow = upper(54);

    let user_before = env.lamports(&user.pubkey()).await;
    let runner_before = env.lamports(&runner.pubkey()).await;
    let vault_before = env.lamports(&pda::fee_vault()).await;
    env.open(&user, manifest, 54, escrow, deadline)
        .await
        .unwrap();
    let rent = env.lamports(&run).await - escrow;

    // 50 trials executed with varying usage (25 settled before the cancel, 5 in flight at it, 20
    // whose settlement comes too late); 4 never dispatched.
    let charges: Vec<(u16, u64)> = (0..50).map(|i| (i, 1_000 + u64::from(i) * 700)).collect();
    env.settle(&runner, &run, &charges[..25]).await.unwrap();
    env.cancel(&user, &run).await.unwrap();
    // Requests in flight at the cancel still settle (their usage is never zeroed) ...
    env.settle(&runner, &run, &charges[25..30]).await.unwrap();
    // ... but not once the window has closed.
    let closed = env.now().await + CANCEL_WINDOW + 1;
    env.set_time(closed).await;
    custom(
        env.settle(&runner, &run, &charges[30..]).await,
        E::CancelWindowClosed,
    );
    env.finalize(&runner, &user.pubkey(), &run).await.unwrap();
    let state = env.run_state(&run).await;
    assert_eq!(
        state.report_hash, [7; 32],
        "finalize records the report hash"
    );
    assert_eq!(
        (
            state.settled_trials,
            state.settled_usage + state.settled_fees + state.refunded
        ),
        (30, escrow)
    );
    assert!(matches!(
        state.status,
        skilltrial::state::RunStatus::Finalized
    ));
    custom(
        env.settle(&runner, &run, &charges[30..]).await,
        E::RunNotOpen,
    );
    custom(
        env.finalize(&runner, &user.pubkey(), &run).await,
        E::RunNotOpen,
    );
    env.close(&user, &run).await.unwrap();
    let config = env.config_state().await;
    assert_eq!(
        (
            config.total_runs,
            config.total_trials_settled,
            config.total_usage,
            config.total_fees,
            config.total_refunded
        ),
        (
            1,
            30,
            state.settled_usage,
            state.settled_fees,
            state.refunded
        ),
        "the config's running totals"
    );

    let usage: u64 = charges[..30].iter().map(|c| c.1).sum();
    let fees = FEE * 30;
    let refund = escrow - usage - fees;
    // Lamports are conserved: refund + usage + fees = escrow.
    assert_eq!(env.lamports(&run).await, 0, "closed");
    assert_eq!(env.lamports(&pda::fee_vault()).await - vault_before, fees);
    let runner_gain =
        env.lamports(&runner.pubkey()).await + tx_fees(&env, &runner.pubkey()) - runner_before;
    assert_eq!(runner_gain, usage);
    let user_after = env.lamports(&user.pubkey()).await + tx_fees(&env, &user.pubkey());
    assert_eq!(
        user_before - user_after,
        usage + fees,
        "the user paid exactly usage + fees (rent {rent} came back)"
    );
    assert_eq!(refund + usage + fees, escrow);
    print_cu(&env);
    env.assert_conserved().await;
}

#[tokio::test(flavor = "current_thread")]
async fn every_refusal_returns_its_exact_error() {
    let mut env = start().await;
    // Only the program's upgrade authority creates the config (no front-running the deployer).
    let squatter = Keypair::new();
    fund(&env.ctx, &squatter.pubkey(), 1_000_000_000).await;
    custom(env.config_init_by(&squatter).await, E::NotUpgradeAuthority);
    env.config_init().await;
    let user = env.user.insecure_clone();
    let runner = env.runner.insecure_clone();
    let stranger = Keypair::new();
    fund(&env.ctx, &stranger.pubkey(), 10_000_000_000).await;
    let now = env.now().await;

    // run_open's arguments
    custom(
        env.open(&user, [1; 32], 0, 0, now + MIN_DEADLINE + 60)
            .await,
        E::TrialCountOutOfRange,
    );
    custom(
        env.open(&user, [1; 32], 101, upper(101), now + MIN_DEADLINE + 60)
            .await,
        E::TrialCountOutOfRange,
    );
    custom(
        env.open(&user, [1; 32], 10, upper(10) - 1, now + MIN_DEADLINE + 60)
            .await,
        E::EscrowTooSmall,
    );
    custom(
        env.open(&user, [1; 32], 10, upper(10), now + MIN_DEADLINE - 1)
            .await,
        E::DeadlineTooSoon,
    );
    custom(
        env.open_with_cap(&user, [2; 32], 1, 0, FEE, now + MIN_DEADLINE + 60)
            .await,
        E::ZeroRequestCap,
    );
    // (cap + fee) × trials above u64::MAX: refused by checked arithmetic, not wrapped.
    custom(
        env.open_with_cap(
            &user,
            [2; 32],
            2,
            u64::MAX - FEE,
            u64::MAX,
            now + MIN_DEADLINE + 60,
        )
        .await,
        E::Overflow,
    );

    let manifest = [3u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 10, upper(10), now + MIN_DEADLINE + 60)
        .await
        .unwrap();

    // Only the run's runner settles; no trial twice; none above the cap; none outside the plan.
    custom(
        env.settle(&stranger, &run, &[(0, 1)]).await,
        AnchorError::ConstraintHasOne,
    );
    custom(
        env.settle(&runner, &run, &[(0, CAP + 1)]).await,
        E::ChargeAboveCap,
    );
    custom(
        env.settle(&runner, &run, &[(10, 1)]).await,
        E::TrialOutOfRange,
    );
    custom(env.settle(&runner, &run, &[]).await, E::BadBatch);
    env.settle(&runner, &run, &[(0, 10)]).await.unwrap();
    custom(
        env.settle(&runner, &run, &[(0, 10)]).await,
        E::TrialAlreadySettled,
    );
    custom(
        env.settle(&runner, &run, &[(1, 10), (1, 10)]).await,
        E::TrialAlreadySettled,
    );

    // Only the user cancels, refunds, closes; a stranger's signature derives another run.
    custom(
        env.cancel(&stranger, &run).await,
        AnchorError::ConstraintSeeds,
    );
    custom(env.refund(&user, &run).await, E::DeadlineNotReached);
    custom(env.close(&user, &run).await, E::RunNotFinished);
    // Only the runner finalizes.
    custom(
        env.finalize(&stranger, &user.pubkey(), &run).await,
        AnchorError::ConstraintHasOne,
    );
    // After the deadline the user takes the rest back without the runner; then nothing settles.
    let later = now + MIN_DEADLINE + 61;
    env.set_time(later).await;
    env.refund(&user, &run).await.unwrap();
    custom(env.settle(&runner, &run, &[(2, 10)]).await, E::RunNotOpen);
    custom(
        env.finalize(&runner, &user.pubkey(), &run).await,
        E::RunNotOpen,
    );
    custom(env.cancel(&user, &run).await, E::RunNotOpen);
    env.close(&user, &run).await.unwrap();
    assert_eq!(env.lamports(&run).await, 0);
    env.assert_conserved().await;
}

/// The hosted-run cost targets, measured on the whole 54-trial run (open, settle, finalize,
/// close): the 54 settlements in at most 2 transactions and 60,000 compute units; the whole run
/// in at most 5 transactions and 30,000 lamports of fees outside the escrow; all rent returned.
/// Prints the cost table that scripts/test.sh shows.
#[tokio::test(flavor = "current_thread")]
async fn a_54_trial_hosted_run_meets_its_on_chain_cost_targets() {
    let mut env = start().await;
    env.config_init().await;
    env.cu.clear();
    let user = env.user.insecure_clone();
    let runner = env.runner.insecure_clone();
    let manifest = [54u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE + 60;
    let user_before = env.lamports(&user.pubkey()).await;
    let escrow = upper(54);
    env.open(&user, manifest, 54, escrow, deadline)
        .await
        .unwrap();
    let rent = env.lamports(&run).await - escrow;

    let charges: Vec<(u16, u64)> = (0..54).map(|i| (i, CAP - u64::from(i))).collect();
    let first = env.settle(&runner, &run, &charges[..27]).await.unwrap();
    let second = env.settle(&runner, &run, &charges[27..]).await.unwrap();
    env.finalize(&runner, &user.pubkey(), &run).await.unwrap();
    env.close(&user, &run).await.unwrap();
    assert_eq!(
        env.lamports(&run).await,
        0,
        "the run account is closed and its rent returned"
    );

    let settle_cu = first + second;
    let transactions = env.cu.len() as u64;
    let tx_fees_total = tx_fees(&env, &user.pubkey()) + tx_fees(&env, &runner.pubkey());
    let total_cu: u64 = env.cu.iter().map(|c| c.1).sum();
    println!(
        "\non-chain cost of a 54-trial hosted run ({}):",
        layer_name()
    );
    println!("  {:<34} {:>12} {:>10}", "step", "CU", "target");
    for (label, cu) in &env.cu {
        println!("  {label:<34} {cu:>12}");
    }
    println!(
        "  {:<34} {:>12} {:>10}",
        "54 settlements (2 transactions)", settle_cu, "<= 60000"
    );
    println!("  {:<34} {:>12}", "whole run, CU", total_cu);
    println!(
        "  {:<34} {:>12} {:>10}",
        "transactions (= signatures)", transactions, "<= 5"
    );
    println!(
        "  {:<34} {:>12} {:>10}",
        "fees outside the escrow, lamports", tx_fees_total, "<= 30000"
    );
    println!("  {:<34} {:>12}", "rent locked, then returned", rent);
    println!("  {:<34} {:>12}", "escrow, lamports", escrow);
    if native_layer() {
        println!(
            "  NATIVE LAYER: compute units are not metered as sBPF; the CU target is checked only against the .so"
        );
    } else {
        assert!(
            settle_cu <= 60_000,
            "54 settlements took {settle_cu} CU, above the 60,000 target"
        );
    }
    assert!(
        transactions <= 5,
        "the run took {transactions} transactions, above 5"
    );
    assert!(
        tx_fees_total <= 30_000,
        "the run paid {tx_fees_total} lamports of fees, above 30,000"
    );

    let usage: u64 = charges.iter().map(|c| c.1).sum();
    let paid = user_before - env.lamports(&user.pubkey()).await - tx_fees(&env, &user.pubkey());
    assert_eq!(
        paid,
        usage + FEE * 54,
        "the user paid usage and fees, nothing more"
    );
    env.assert_conserved().await;
}

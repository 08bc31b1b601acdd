//! A hosted run's life on the program: settle, cancel, finalize, refund, close; every refusal
//! with its exact error; and the cost targets of a 54-trial run, batched and at the floor.

use skilltrial::constants::MIN_PER_REQUEST_CAP;
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
    let payout_before = env.lamports(&env.payout.pubkey()).await;
    let vault_before = env.lamports(&pda::fee_vault()).await;
    env.open(&user, manifest, 54, escrow, deadline)
        .await
        .unwrap();
    let rent = env.lamports(&run).await - escrow;
    assert_eq!(rent, env.run_rent().await);

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
    env.finalize(&runner, &run).await.unwrap();
    let usage: u64 = charges[..30].iter().map(|c| c.1).sum();
    let fees = FEE * 30;
    let refund = escrow - usage - fees;
    let state = env.run_state(&run).await;
    assert_eq!(
        state.report_hash, [7; 32],
        "finalize records the report hash"
    );
    assert_eq!(
        (
            state.settled_trials,
            state.settled_usage,
            state.settled_fees,
            state.remaining().unwrap()
        ),
        (30, usage, fees, refund)
    );
    assert!(matches!(
        state.status,
        skilltrial::state::RunStatus::Finalized { .. }
    ));
    custom(
        env.settle(&runner, &run, &charges[30..]).await,
        E::RunNotOpen,
    );
    custom(env.finalize(&runner, &run).await, E::RunNotOpen);
    env.close(&user, &run, refund + rent).await.unwrap();
    let vault = env.vault_state().await;
    assert_eq!(
        (
            vault.next_run_id,
            vault.total_trials_settled,
            vault.total_usage,
            vault.total_fees,
        ),
        (2, 30, usage, fees),
        "the fee vault's running totals"
    );

    assert!(!env.exists(&run).await, "closed");
    assert_eq!(env.lamports(&pda::fee_vault()).await - vault_before, fees);
    assert_eq!(
        env.lamports(&env.payout.pubkey()).await - payout_before,
        usage,
        "the payout address received exactly the usage"
    );
    let runner_spent = runner_before - env.lamports(&runner.pubkey()).await;
    assert_eq!(
        runner_spent,
        tx_fees(&env, &runner.pubkey()),
        "the runner's signing key only paid transaction fees"
    );
    let user_after = env.lamports(&user.pubkey()).await + tx_fees(&env, &user.pubkey());
    assert_eq!(
        user_before - user_after,
        usage + fees,
        "the user paid exactly usage + fees (rent {rent} came back)"
    );
    print_cu(&env);
}

#[tokio::test(flavor = "current_thread")]
async fn every_refusal_returns_its_exact_error() {
    let mut env = start().await;
    // Only the program's upgrade authority creates the config (no front-running the deployer).
    let squatter = Keypair::new();
    fund(&env.ctx, &squatter.pubkey(), 1_000_000_000).await;
    let args = env.init_args();
    custom(
        env.config_init_with(&squatter, args).await,
        E::NotUpgradeAuthority,
    );
    env.config_init().await;
    // Once only: the accounts exist.
    let (admin, args) = (env.admin.insecure_clone(), env.init_args());
    custom(env.config_init_with(&admin, args).await, E::AccountExists);
    let user = env.user.insecure_clone();
    let runner = env.runner.insecure_clone();
    let stranger = Keypair::new();
    fund(&env.ctx, &stranger.pubkey(), 10_000_000_000).await;
    let now = env.now().await;
    let deadline = now + MIN_DEADLINE + 60;

    // run_open's arguments
    custom(
        env.open(&user, [1; 32], 0, 0, deadline).await,
        E::TrialCountOutOfRange,
    );
    custom(
        env.open(&user, [1; 32], 101, upper(101), deadline).await,
        E::TrialCountOutOfRange,
    );
    custom(
        env.open(&user, [1; 32], 10, upper(10) - 1, deadline).await,
        E::EscrowTooSmall,
    );
    custom(
        env.open(&user, [1; 32], 10, upper(10), now + MIN_DEADLINE - 1)
            .await,
        E::DeadlineTooSoon,
    );
    let args = env.open_args([2; 32], 1, 0, FEE, deadline);
    custom(env.open_with(&user, args).await, E::ZeroRequestCap);
    // A cap no runner can serve (1 lamport; one below the minimum) is refused by name; the
    // minimum itself opens (below, on another manifest).
    for cap in [1, MIN_PER_REQUEST_CAP - 1] {
        let args = env.open_args([2; 32], 1, cap, cap + FEE, deadline);
        custom(env.open_with(&user, args).await, E::RequestCapTooLow);
    }
    let args = env.open_args(
        [4; 32],
        1,
        MIN_PER_REQUEST_CAP,
        MIN_PER_REQUEST_CAP + FEE,
        deadline,
    );
    env.open_with(&user, args).await.unwrap();
    // (cap + fee) × trials above u64::MAX: refused by checked arithmetic, not wrapped.
    let args = env.open_args([2; 32], 2, u64::MAX - FEE, u64::MAX, deadline);
    custom(env.open_with(&user, args).await, E::Overflow);

    let manifest = [3u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 10, upper(10), deadline)
        .await
        .unwrap();
    // One open run per wallet and manifest.
    custom(
        env.open(&user, manifest, 10, upper(10), deadline).await,
        E::AccountExists,
    );

    // Only the run's runner settles; no trial twice; none above the cap; none outside the plan.
    custom(
        env.settle(&stranger, &run, &[(0, 1)]).await,
        E::NotRunsRunner,
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
    let returned = upper(10) - 10 - FEE + env.run_rent().await;
    custom(
        env.refund(&user, &run, returned).await,
        E::DeadlineNotReached,
    );
    custom(env.close(&user, &run, returned).await, E::RunNotFinished);
    // Only the config's runner finalizes.
    custom(
        env.finalize(&stranger, &run).await,
        AnchorError::ConstraintHasOne,
    );
    // Nothing settles after the deadline; after it the user takes the rest back alone.
    env.set_time(deadline + 1).await;
    custom(
        env.settle(&runner, &run, &[(2, 10)]).await,
        E::DeadlinePassed,
    );
    env.refund(&user, &run, returned).await.unwrap();
    assert!(!env.exists(&run).await, "a refund closes the run");
}

/// The hosted-run cost targets, measured on a 54-trial run two ways. Batched: open, 2 settles,
/// finalize, close — the 54 settlements, digest included, in at most 2 transactions and 40,000
/// compute units; the whole run in at most 5 transactions and 25,000 lamports of fees outside
/// the escrow. The floor: open, one transaction that settles all 54 and finalizes, close —
/// three signatures, 15,000 lamports. Fees are what the bank charged; all rent comes back.
/// Prints the cost table that scripts/test.sh shows.
#[tokio::test(flavor = "current_thread")]
async fn a_54_trial_hosted_run_meets_its_on_chain_cost_targets() {
    let batched = cost_of_a_54_trial_run(false).await;
    let floor = cost_of_a_54_trial_run(true).await;
    println!(
        "\non-chain cost of a 54-trial hosted run ({}):",
        layer_name()
    );
    println!(
        "  {:<40} {:>14} {:>14} {:>12}",
        "", "batched", "floor", "target"
    );
    for (name, cost) in [("batched", &batched), ("floor", &floor)] {
        let steps: Vec<String> = cost
            .steps
            .iter()
            .map(|(label, cu)| format!("{label} {cu}"))
            .collect();
        println!("  steps, {name:<8} {} (CU)", steps.join(" | "));
    }
    let rows: [(&str, u64, u64, &str); 7] = [
        (
            "54 settlements with digest, CU",
            batched.settle_cu,
            floor.settle_cu,
            "<= 40000",
        ),
        (
            "settlement transactions",
            batched.settle_txs,
            floor.settle_txs,
            "<= 2",
        ),
        ("whole run, CU", batched.total_cu, floor.total_cu, ""),
        (
            "transactions (= signatures)",
            batched.transactions,
            floor.transactions,
            "<= 5",
        ),
        (
            "fees outside the escrow, lamports",
            batched.fees,
            floor.fees,
            "<= 25000",
        ),
        (
            "largest transaction, bytes",
            batched.largest_tx as u64,
            floor.largest_tx as u64,
            "<= 1232",
        ),
        ("rent locked, then returned", batched.rent, floor.rent, ""),
    ];
    for (label, b, f, target) in rows {
        println!("  {label:<40} {b:>14} {f:>14} {target:>12}");
    }
    println!("  {:<40} {:>14}", "escrow, lamports", upper(54));
    for cost in [&batched, &floor] {
        if native_layer() {
            println!(
                "  NATIVE LAYER: compute units are not metered as sBPF; the CU target is checked only against the .so"
            );
        } else {
            assert!(
                cost.settle_cu <= 40_000,
                "54 settlements took {} CU, above the 40,000 target",
                cost.settle_cu
            );
        }
        assert!(
            cost.settle_txs <= 2,
            "{} settlement transactions",
            cost.settle_txs
        );
        assert!(
            cost.transactions <= 5,
            "the run took {} transactions",
            cost.transactions
        );
        assert!(
            cost.fees <= 25_000,
            "the run paid {} lamports of fees",
            cost.fees
        );
        assert!(
            cost.largest_tx <= 1_232,
            "a transaction of {} bytes",
            cost.largest_tx
        );
    }
    assert_eq!(
        (floor.transactions, floor.fees),
        (3, 15_000),
        "the physical floor"
    );
}

struct Cost {
    steps: Vec<(String, u64)>,
    settle_cu: u64,
    settle_txs: u64,
    total_cu: u64,
    transactions: u64,
    fees: u64,
    largest_tx: usize,
    rent: u64,
}

/// One 54-trial run on a fresh bank: `floor` settles all 54 and finalizes in one transaction.
async fn cost_of_a_54_trial_run(floor: bool) -> Cost {
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
    let run_id = env.run_id(&run).await;

    let charges: Vec<(u16, u64)> = (0..54).map(|i| (i, CAP - u64::from(i))).collect();
    let mut largest = 0;
    let (settle_cu, settle_txs) = if floor {
        let ixs = vec![
            env.settle_ix(&runner, &run, run_id, &charges),
            env.finalize_ix(&runner, &run, run_id),
        ];
        largest = largest.max(tx_size(&ixs, &runner.pubkey()));
        let cu = env.send_settle(&runner, &run, &charges, ixs).await.unwrap();
        if let Some(step) = env.cu.last_mut() {
            step.0 = "run_settle x54 + run_finalize".to_owned();
        }
        (cu, 1)
    } else {
        let mut cu = 0;
        for half in [&charges[..27], &charges[27..]] {
            let ixs = vec![env.settle_ix(&runner, &run, run_id, half)];
            largest = largest.max(tx_size(&ixs, &runner.pubkey()));
            cu += env.send_settle(&runner, &run, half, ixs).await.unwrap();
        }
        env.finalize(&runner, &run).await.unwrap();
        (cu, 2)
    };
    let usage: u64 = charges.iter().map(|c| c.1).sum();
    let remainder = escrow - usage - FEE * 54;
    env.close(&user, &run, remainder + rent).await.unwrap();
    assert!(
        !env.exists(&run).await,
        "the run is closed and its rent returned"
    );

    let paid = user_before - env.lamports(&user.pubkey()).await - tx_fees(&env, &user.pubkey());
    assert_eq!(
        paid,
        usage + FEE * 54,
        "the user paid usage and fees, nothing more"
    );
    let steps = env.cu.clone();
    // In the floor transaction the settle's CU includes the finalize's; the batched table lists
    // finalize separately.
    Cost {
        total_cu: steps.iter().map(|c| c.1).sum(),
        transactions: steps.len() as u64,
        fees: tx_fees(&env, &user.pubkey()) + tx_fees(&env, &runner.pubkey()),
        steps,
        settle_cu,
        settle_txs,
        largest_tx: largest,
        rent,
    }
}

/// The wire size of a legacy transaction of `ixs` paid by `payer`: the signature count (one
/// byte), one 64-byte signature, the serialized message.
fn tx_size(ixs: &[solana_instruction::Instruction], payer: &solana_pubkey::Pubkey) -> usize {
    let message = solana_message::Message::new(ixs, Some(payer));
    1 + 64 * usize::from(message.header.num_required_signatures) + message.serialize().len()
}

//! Governance: admin-only, range-checked immediate updates; a fee change that never reprices an
//! open run; time-locked appointments that a revocation beats; a rotation that stops the old
//! key at once while its open runs can still be finalized (refund only) by the new one; and the
//! two-step admin handover.

use skilltrial_chain::error::{AnchorError, SkillTrialError as E};
use skilltrial_chain::ix::{self, ConfigChange, ConfigUpdateArgs, RunnerKeys};
use skilltrial_chain::{anchor_key, pda};
use solana_keypair::Keypair;
use solana_signer::Signer;

use crate::harness::{CAP, Env, FEE, MIN_DEADLINE, TIME_LOCK, custom, fund, start, upper};

impl Env {
    pub(crate) async fn config_update(
        &mut self,
        signer: &Keypair,
        args: ConfigUpdateArgs,
    ) -> Result<u64, String> {
        let i = ix::config_update(&signer.pubkey(), args);
        self.send("config_update", vec![i], &[signer], vec![]).await
    }

    pub(crate) async fn config_propose(
        &mut self,
        signer: &Keypair,
        change: ConfigChange,
    ) -> Result<u64, String> {
        let i = ix::config_propose(&signer.pubkey(), change);
        self.send("config_propose", vec![i], &[signer], vec![])
            .await
    }

    pub(crate) async fn config_apply(&mut self, signer: &Keypair) -> Result<u64, String> {
        let i = ix::config_apply(&signer.pubkey());
        self.send("config_apply", vec![i], &[signer], vec![]).await
    }

    pub(crate) async fn config_accept_admin(&mut self, signer: &Keypair) -> Result<u64, String> {
        let i = ix::config_accept_admin(&signer.pubkey());
        self.send("config_accept_admin", vec![i], &[signer], vec![])
            .await
    }
}

pub(crate) fn fee_only(fee: u64) -> ConfigUpdateArgs {
    ConfigUpdateArgs {
        fee_per_trial: Some(fee),
        ..ConfigUpdateArgs::default()
    }
}

/// Only the admin changes the config; a zero fee is refused; a new fee applies to runs opened
/// after it, never to a run already escrowed, and a user who agreed to the old fee cannot be
/// opened at the new one.
#[tokio::test(flavor = "current_thread")]
async fn config_updates_are_admin_only_checked_and_never_reprice_an_open_run() {
    let mut env = start().await;
    env.config_init().await;
    let (admin, user, runner) = (
        env.admin.insecure_clone(),
        env.user.insecure_clone(),
        env.runner.insecure_clone(),
    );
    let now = env.now().await;
    let deadline = now + MIN_DEADLINE + 60;

    let before = [9u8; 32];
    let run = pda::run(&user.pubkey(), &before);
    env.open(&user, before, 2, upper(2), deadline)
        .await
        .unwrap();

    custom(
        env.config_update(&user, fee_only(1)).await,
        AnchorError::ConstraintHasOne,
    );
    custom(
        env.config_update(&admin, fee_only(0)).await,
        E::InvalidConfig,
    );
    let new_fee = 300_000;
    env.config_update(&admin, fee_only(new_fee)).await.unwrap();

    // The run opened before keeps the fee it escrowed for.
    let vault = env.lamports(&pda::fee_vault()).await;
    env.settle(&runner, &run, &[(0, 10), (1, 10)])
        .await
        .unwrap();
    assert_eq!(env.lamports(&pda::fee_vault()).await - vault, FEE * 2);

    // A user who agreed to the old fee is refused, even with escrow to spare.
    custom(
        env.open(&user, [10; 32], 2, (CAP + new_fee) * 2, deadline)
            .await,
        E::FeeChanged,
    );
    let mut args = env.open_args([10; 32], 2, CAP, (CAP + new_fee) * 2, deadline);
    args.expected_fee_per_trial = new_fee;
    env.open_with(&user, args).await.unwrap();
    assert_eq!(
        env.run_state(&pda::run(&user.pubkey(), &[10; 32]))
            .await
            .fee_per_trial,
        new_fee
    );
}

/// Appointing a runner waits out the time lock; the old runner keeps its open runs until the
/// appointment applies, then stops at once (`RunnerRevoked`); the new runner cannot settle a run
/// the user opened with the old one (`NotRunsRunner`) but may finalize it, which only books the
/// refund.
#[tokio::test(flavor = "current_thread")]
async fn a_rotation_stops_the_old_key_and_the_new_one_may_only_finalize_its_runs() {
    let mut env = start().await;
    env.config_init().await;
    let (admin, user, runner) = (
        env.admin.insecure_clone(),
        env.user.insecure_clone(),
        env.runner.insecure_clone(),
    );
    let deadline = env.now().await + 3 * 24 * 3600;
    let manifest = [11u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 4, upper(4), deadline)
        .await
        .unwrap();

    let next = Keypair::new();
    fund(&env.ctx, &next.pubkey(), 1_000_000_000).await;
    let appoint = ConfigChange {
        runner: Some(RunnerKeys {
            signer: anchor_key(&next.pubkey()),
            payout: anchor_key(&env.payout.pubkey()),
        }),
        ..ConfigChange::default()
    };
    env.config_propose(&admin, appoint).await.unwrap();
    custom(env.config_apply(&admin).await, E::TimeLockActive);
    // Until the lock is over the old runner still settles its run.
    env.settle(&runner, &run, &[(0, 10)]).await.unwrap();
    let at = env.now().await + TIME_LOCK;
    env.set_time(at).await;
    env.config_apply(&admin).await.unwrap();
    assert_eq!(env.config_state().await.runner, anchor_key(&next.pubkey()));

    custom(
        env.settle(&runner, &run, &[(1, 10)]).await,
        E::RunnerRevoked,
    );
    custom(env.settle(&next, &run, &[(1, 10)]).await, E::NotRunsRunner);
    custom(
        env.finalize(&runner, &run).await,
        AnchorError::ConstraintHasOne,
    );
    env.finalize(&next, &run).await.unwrap();
    let remainder = upper(4) - 10 - FEE;
    let rent = env.run_rent().await;
    env.close(&user, &run, remainder + rent).await.unwrap();
    // No run opens for the old runner any more.
    custom(
        env.open(&user, [12; 32], 1, upper(1), deadline).await,
        E::RunnerChanged,
    );
}

/// The admin hands over in two steps: a proposal, then the new key's acceptance. A stranger
/// cannot accept; until acceptance the old admin stays in charge; afterwards it is locked out.
#[tokio::test(flavor = "current_thread")]
async fn the_admin_hands_over_only_when_the_new_key_accepts() {
    let mut env = start().await;
    env.config_init().await;
    let admin = env.admin.insecure_clone();
    let next = Keypair::new();
    let stranger = Keypair::new();
    for k in [&next, &stranger] {
        fund(&env.ctx, &k.pubkey(), 1_000_000_000).await;
    }
    let propose = ConfigUpdateArgs {
        propose_admin: Some(anchor_key(&next.pubkey())),
        ..ConfigUpdateArgs::default()
    };
    env.config_update(&admin, propose).await.unwrap();
    custom(env.config_accept_admin(&stranger).await, E::NotPendingAdmin);
    // Still the old admin's config.
    env.config_update(&admin, fee_only(FEE)).await.unwrap();
    env.config_accept_admin(&next).await.unwrap();
    let config = env.config_state().await;
    assert_eq!(
        (config.admin, config.pending_admin),
        (anchor_key(&next.pubkey()), None)
    );
    custom(
        env.config_update(&admin, fee_only(1)).await,
        AnchorError::ConstraintHasOne,
    );
    env.config_update(&next, fee_only(FEE)).await.unwrap();
}

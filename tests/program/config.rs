//! Governance: admin-only, range-checked immediate updates; a fee change that never reprices an
//! open run; time-locked appointments that a revocation beats; a rotation that stops the old
//! key at once while its open runs can still be finalized (refund only) by the new one; and the
//! two-step admin handover.

use skilltrial_chain::error::{AnchorError, SkillTrialError as E};
use skilltrial_chain::ix::{
    self, BuybackRate, ConfigChange, ConfigInitArgs, ConfigUpdateArgs, RunnerKeys, SpendingLimit,
};
use skilltrial_chain::{anchor_key, pda};
use solana_keypair::Keypair;
use solana_signer::Signer;

use crate::harness::{
    self, CAP, Env, FEE, INTERVAL, MAX_BUYBACK, MIN_DEADLINE, RATE, TIME_LOCK, USAGE_LIMIT,
    USAGE_PERIOD, custom, fund, start, upper,
};

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

/// A time-locked appointment of `signer` as the runner, paid at the test's payout address.
pub(crate) fn appointment(env: &Env, signer: &Keypair) -> ConfigChange {
    ConfigChange {
        runner: Some(RunnerKeys {
            signer: anchor_key(&signer.pubkey()),
            payout: anchor_key(&env.payout.pubkey()),
        }),
        ..ConfigChange::default()
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
    let appoint = appointment(&env, &next);
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

/// `config_init` checks every bound at its exact edge: each refused case changes one value of a
/// valid config to just outside its range (refusals create nothing, so one bank serves them all);
/// then every lower edge at once, and every upper edge at once, is accepted and stored as sent.
#[tokio::test(flavor = "current_thread")]
async fn config_init_refuses_every_value_just_outside_its_bounds() {
    use skilltrial_program::constants::{
        MAX_BUYBACK_INTERVAL_SECS as MAX_INTERVAL, MAX_FEE_PER_TRIAL, MAX_TIME_LOCK_SECS,
        MAX_USAGE_PERIOD_SECS, MIN_BUYBACK_INTERVAL_SECS as MIN_INTERVAL,
        MIN_DEADLINE_CEILING_SECS, MIN_DEADLINE_FLOOR_SECS, MIN_TIME_LOCK_SECS,
        MIN_USAGE_PERIOD_SECS,
    };
    type Edit = fn(&mut ConfigInitArgs);
    let invalid: [(&str, Edit); 14] = [
        ("fee 0", |a| {
            a.fee_per_trial = 0;
        }),
        ("fee max+1", |a| {
            a.fee_per_trial = MAX_FEE_PER_TRIAL + 1;
        }),
        ("min deadline floor-1", |a| {
            a.min_deadline_secs = MIN_DEADLINE_FLOOR_SECS - 1;
        }),
        ("min deadline ceiling+1", |a| {
            a.min_deadline_secs = MIN_DEADLINE_CEILING_SECS + 1;
        }),
        ("time lock min-1", |a| {
            a.time_lock_secs = MIN_TIME_LOCK_SECS - 1;
        }),
        ("time lock max+1", |a| {
            a.time_lock_secs = MAX_TIME_LOCK_SECS + 1;
        }),
        ("interval min-1", |a| {
            a.buyback_interval_secs = MIN_INTERVAL - 1;
        }),
        ("interval max+1", |a| {
            a.buyback_interval_secs = MAX_INTERVAL + 1;
        }),
        ("usage period min-1", |a| {
            a.usage_limit.period_secs = MIN_USAGE_PERIOD_SECS - 1;
        }),
        ("usage period max+1", |a| {
            a.usage_limit.period_secs = MAX_USAGE_PERIOD_SECS + 1;
        }),
        ("usage amount 0", |a| {
            a.usage_limit.amount = 0;
        }),
        ("max buyback 0", |a| {
            a.max_buyback_lamports = 0;
        }),
        ("rate tokens 0", |a| {
            a.buyback_rate.tokens = 0;
        }),
        ("rate lamports 0", |a| {
            a.buyback_rate.lamports = 0;
        }),
    ];
    let default_key: [(&str, Edit); 3] = [
        ("runner default", |a| {
            a.runner = Default::default();
        }),
        ("payout default", |a| {
            a.runner_payout = Default::default();
        }),
        ("mint default", |a| {
            a.sktrial_mint = Default::default();
        }),
    ];
    let payout_is_signer: [(&str, Edit); 1] = [("payout = runner", |a| {
        a.runner_payout = a.runner;
    })];
    let mut env = start().await;
    let admin = env.admin.insecure_clone();
    for (cases, error) in [
        (&invalid[..], E::InvalidConfig),
        (&default_key[..], E::DefaultKey),
        (&payout_is_signer[..], E::PayoutIsSigner),
    ] {
        for (name, edit) in cases {
            let mut args = env.init_args();
            edit(&mut args);
            let result = env.config_init_with(&admin, args).await;
            assert!(result.is_err(), "{name}: accepted");
            custom(result, error);
            assert!(!env.exists(&pda::config()).await, "{name}");
        }
    }

    // The last accepted values: every lower edge in one config, every upper edge in another.
    let lower = |a: &mut ConfigInitArgs| {
        a.fee_per_trial = 1;
        a.min_deadline_secs = MIN_DEADLINE_FLOOR_SECS;
        a.time_lock_secs = MIN_TIME_LOCK_SECS;
        a.buyback_interval_secs = MIN_INTERVAL;
        a.usage_limit = SpendingLimit {
            amount: 1,
            period_secs: MIN_USAGE_PERIOD_SECS,
        };
        a.max_buyback_lamports = 1;
        a.buyback_rate = BuybackRate {
            tokens: 1,
            lamports: 1,
        };
    };
    let upper_edges = |a: &mut ConfigInitArgs| {
        a.fee_per_trial = MAX_FEE_PER_TRIAL;
        a.min_deadline_secs = MIN_DEADLINE_CEILING_SECS;
        a.time_lock_secs = MAX_TIME_LOCK_SECS;
        a.buyback_interval_secs = MAX_INTERVAL;
        a.usage_limit = SpendingLimit {
            amount: u64::MAX,
            period_secs: MAX_USAGE_PERIOD_SECS,
        };
        a.max_buyback_lamports = u64::MAX;
        a.buyback_rate = BuybackRate {
            tokens: u64::MAX,
            lamports: u64::MAX,
        };
    };
    for (i, edges) in [lower, upper_edges].into_iter().enumerate() {
        if i > 0 {
            env = start().await;
        }
        let admin = env.admin.insecure_clone();
        let mut args = env.init_args();
        edges(&mut args);
        env.config_init_with(&admin, args.clone()).await.unwrap();
        let c = env.config_state().await;
        assert_eq!(
            (
                c.admin,
                c.pending_admin,
                c.runner,
                c.runner_payout,
                c.sktrial_mint,
                c.pending
            ),
            (
                anchor_key(&admin.pubkey()),
                None,
                args.runner,
                args.runner_payout,
                args.sktrial_mint,
                None
            )
        );
        assert_eq!(
            (
                c.fee_per_trial,
                c.min_deadline_secs,
                c.time_lock_secs,
                c.usage_limit,
                c.buyback_interval_secs,
                c.max_buyback_lamports,
                c.buyback_rate
            ),
            (
                args.fee_per_trial,
                args.min_deadline_secs,
                args.time_lock_secs,
                args.usage_limit,
                args.buyback_interval_secs,
                args.max_buyback_lamports,
                args.buyback_rate
            )
        );
    }
}

/// Immediate updates: a fee above the maximum is refused and leaves the fee as it was (the
/// maximum itself is accepted); a new minimum deadline binds the very next open, at its exact
/// edge; proposing the default key as admin is refused, proposing oneself withdraws a proposal;
/// a stranger can do none of it.
#[tokio::test(flavor = "current_thread")]
async fn config_update_checks_the_fee_the_deadline_and_admin_proposals() {
    use skilltrial_program::constants::{
        MAX_FEE_PER_TRIAL, MIN_DEADLINE_CEILING_SECS, MIN_DEADLINE_FLOOR_SECS,
    };
    let mut env = start().await;
    env.config_init().await;
    let (admin, user) = (env.admin.insecure_clone(), env.user.insecure_clone());
    let stranger = Keypair::new();
    fund(&env.ctx, &stranger.pubkey(), 1_000_000_000).await;

    custom(
        env.config_update(&admin, fee_only(MAX_FEE_PER_TRIAL + 1))
            .await,
        E::InvalidConfig,
    );
    assert_eq!(env.config_state().await.fee_per_trial, FEE);
    env.config_update(&admin, fee_only(MAX_FEE_PER_TRIAL))
        .await
        .unwrap();
    assert_eq!(env.config_state().await.fee_per_trial, MAX_FEE_PER_TRIAL);
    env.config_update(&admin, fee_only(FEE)).await.unwrap();

    // The minimum deadline: 75 min → 20 min applies to the next open at once.
    let min_only = |secs| ConfigUpdateArgs {
        min_deadline_secs: Some(secs),
        ..ConfigUpdateArgs::default()
    };
    for refused in [MIN_DEADLINE_FLOOR_SECS - 1, MIN_DEADLINE_CEILING_SECS + 1] {
        custom(
            env.config_update(&admin, min_only(refused)).await,
            E::InvalidConfig,
        );
        assert_eq!(env.config_state().await.min_deadline_secs, MIN_DEADLINE);
    }
    let now = env.now().await;
    let between = now + 30 * 60;
    custom(
        env.open(&user, [1; 32], 1, upper(1), between).await,
        E::DeadlineTooSoon,
    );
    let shorter = 20 * 60;
    env.config_update(&admin, min_only(shorter)).await.unwrap();
    env.set_time(now).await;
    custom(
        env.open(&user, [1; 32], 1, upper(1), now + shorter - 1)
            .await,
        E::DeadlineTooSoon,
    );
    env.open(&user, [1; 32], 1, upper(1), now + shorter)
        .await
        .unwrap();
    env.open(&user, [2; 32], 1, upper(1), between)
        .await
        .unwrap();

    // Admin proposals.
    let propose = |key| ConfigUpdateArgs {
        propose_admin: Some(key),
        ..ConfigUpdateArgs::default()
    };
    custom(
        env.config_update(&admin, propose(Default::default())).await,
        E::DefaultKey,
    );
    assert_eq!(env.config_state().await.pending_admin, None);
    let next = anchor_key(&stranger.pubkey());
    env.config_update(&admin, propose(next)).await.unwrap();
    assert_eq!(env.config_state().await.pending_admin, Some(next));
    env.config_update(&admin, propose(anchor_key(&admin.pubkey())))
        .await
        .unwrap();
    assert_eq!(env.config_state().await.pending_admin, None);
    custom(env.config_accept_admin(&stranger).await, E::NotPendingAdmin);

    // A stranger changes nothing.
    let revoke = ConfigUpdateArgs {
        revoke_runner: true,
        ..ConfigUpdateArgs::default()
    };
    for args in [
        fee_only(FEE + 1),
        min_only(shorter + 1),
        revoke,
        propose(next),
    ] {
        custom(
            env.config_update(&stranger, args).await,
            AnchorError::ConstraintHasOne,
        );
    }
    let c = env.config_state().await;
    assert_eq!(
        (
            c.fee_per_trial,
            c.min_deadline_secs,
            c.runner,
            c.pending_admin
        ),
        (FEE, shorter, anchor_key(&env.runner.pubkey()), None)
    );
}

/// Every time-locked field waits exactly `time_lock_secs` from its proposal: the proposal is
/// recorded with `effective_at = now + lock`, `config_apply` one second earlier is refused with
/// `TimeLockActive`, at `effective_at` it changes that field and nothing else and clears the
/// proposal. Changing the time lock itself waits for the old lock; the next proposal waits for
/// the new one.
#[tokio::test(flavor = "current_thread")]
async fn each_time_locked_change_applies_at_exactly_its_effective_time() {
    use skilltrial_program::constants::MIN_TIME_LOCK_SECS;
    use skilltrial_program::state::{Config, PendingChange};
    let mut env = start().await;
    env.config_init().await;
    let admin = env.admin.insecure_clone();
    let (signer, payout, mint) = (
        anchor_key(&Keypair::new().pubkey()),
        anchor_key(&Keypair::new().pubkey()),
        anchor_key(&Keypair::new().pubkey()),
    );
    type Expect = Box<dyn Fn(&mut Config)>;
    let changes: Vec<(ConfigChange, Expect)> = vec![
        (
            ConfigChange {
                runner: Some(RunnerKeys { signer, payout }),
                ..ConfigChange::default()
            },
            Box::new(move |c| {
                c.runner = signer;
                c.runner_payout = payout;
            }),
        ),
        (
            ConfigChange {
                sktrial_mint: Some(mint),
                ..ConfigChange::default()
            },
            Box::new(move |c| c.sktrial_mint = mint),
        ),
        (
            ConfigChange {
                buyback_interval_secs: Some(3_600),
                ..ConfigChange::default()
            },
            Box::new(|c| c.buyback_interval_secs = 3_600),
        ),
        (
            ConfigChange {
                max_buyback_lamports: Some(5),
                ..ConfigChange::default()
            },
            Box::new(|c| c.max_buyback_lamports = 5),
        ),
        (
            ConfigChange {
                buyback_rate: Some(BuybackRate {
                    tokens: 3,
                    lamports: 7,
                }),
                ..ConfigChange::default()
            },
            Box::new(|c| {
                c.buyback_rate = BuybackRate {
                    tokens: 3,
                    lamports: 7,
                };
            }),
        ),
        (
            ConfigChange {
                usage_limit: Some(SpendingLimit {
                    amount: 123,
                    period_secs: 120,
                }),
                ..ConfigChange::default()
            },
            Box::new(|c| {
                c.usage_limit = SpendingLimit {
                    amount: 123,
                    period_secs: 120,
                };
            }),
        ),
        // Last: from here on the lock is an hour, but this change itself waits the old two days.
        (
            ConfigChange {
                time_lock_secs: Some(MIN_TIME_LOCK_SECS),
                ..ConfigChange::default()
            },
            Box::new(|c| c.time_lock_secs = MIN_TIME_LOCK_SECS),
        ),
    ];
    for (change, expect) in changes {
        let t = env.now().await + 100;
        env.set_time(t).await;
        env.config_propose(&admin, change).await.unwrap();
        let mut expected = env.config_state().await;
        let effective_at = t + TIME_LOCK;
        assert_eq!(
            expected.pending,
            Some(PendingChange {
                change,
                effective_at
            }),
            "{change:?}"
        );
        env.set_time(effective_at - 1).await;
        custom(env.config_apply(&admin).await, E::TimeLockActive);
        assert_eq!(
            format!("{:?}", env.config_state().await),
            format!("{expected:?}"),
            "a refused apply changed the config"
        );
        env.set_time(effective_at).await;
        env.config_apply(&admin).await.unwrap();
        expect(&mut expected);
        expected.pending = None;
        assert_eq!(
            format!("{:?}", env.config_state().await),
            format!("{expected:?}"),
            "{change:?}"
        );
        custom(env.config_apply(&admin).await, E::NothingPending);
    }
    // The new lock applies to the next proposal.
    let t = env.now().await;
    let back = ConfigChange {
        max_buyback_lamports: Some(6),
        ..ConfigChange::default()
    };
    env.config_propose(&admin, back).await.unwrap();
    assert_eq!(
        env.config_state().await.pending.map(|p| p.effective_at),
        Some(t + MIN_TIME_LOCK_SECS)
    );
}

/// A new proposal replaces the old one and restarts the clock; an empty one withdraws it; a
/// proposal that would leave an invalid config is refused when proposed (and the earlier one
/// stays); a stranger can neither propose nor apply.
#[tokio::test(flavor = "current_thread")]
async fn proposals_replace_withdraw_and_are_checked_when_proposed() {
    use skilltrial_program::constants::{MAX_BUYBACK_INTERVAL_SECS, MAX_TIME_LOCK_SECS};
    let mut env = start().await;
    env.config_init().await;
    let admin = env.admin.insecure_clone();
    let stranger = Keypair::new();
    fund(&env.ctx, &stranger.pubkey(), 1_000_000_000).await;
    let interval = |secs| ConfigChange {
        buyback_interval_secs: Some(secs),
        ..ConfigChange::default()
    };

    custom(env.config_apply(&admin).await, E::NothingPending);
    let t1 = env.now().await;
    env.config_propose(&admin, interval(600)).await.unwrap();
    let t2 = t1 + 1_000;
    env.set_time(t2).await;
    env.config_propose(&admin, interval(700)).await.unwrap();
    let pending = env.config_state().await.pending.unwrap();
    assert_eq!(
        (pending.change, pending.effective_at),
        (interval(700), t2 + TIME_LOCK)
    );
    // The first proposal's time has come, but it was replaced: the clock restarted.
    env.set_time(t1 + TIME_LOCK).await;
    custom(env.config_apply(&admin).await, E::TimeLockActive);

    // Refused at proposal time; the standing proposal is untouched.
    let default = Default::default();
    let key = anchor_key(&Keypair::new().pubkey());
    let refused = [
        (interval(MAX_BUYBACK_INTERVAL_SECS + 1), E::InvalidConfig),
        (
            ConfigChange {
                time_lock_secs: Some(MAX_TIME_LOCK_SECS + 1),
                ..ConfigChange::default()
            },
            E::InvalidConfig,
        ),
        (
            ConfigChange {
                usage_limit: Some(SpendingLimit {
                    amount: 0,
                    period_secs: USAGE_PERIOD,
                }),
                ..ConfigChange::default()
            },
            E::InvalidConfig,
        ),
        (
            ConfigChange {
                runner: Some(RunnerKeys {
                    signer: default,
                    payout: key,
                }),
                ..ConfigChange::default()
            },
            E::DefaultKey,
        ),
        (
            ConfigChange {
                runner: Some(RunnerKeys {
                    signer: key,
                    payout: default,
                }),
                ..ConfigChange::default()
            },
            E::DefaultKey,
        ),
        (
            ConfigChange {
                sktrial_mint: Some(default),
                ..ConfigChange::default()
            },
            E::DefaultKey,
        ),
        (
            ConfigChange {
                runner: Some(RunnerKeys {
                    signer: key,
                    payout: key,
                }),
                ..ConfigChange::default()
            },
            E::PayoutIsSigner,
        ),
    ];
    for (change, error) in refused {
        custom(env.config_propose(&admin, change).await, error);
        assert_eq!(
            env.config_state().await.pending,
            Some(pending),
            "{change:?}"
        );
    }

    // A stranger can neither propose nor apply.
    custom(
        env.config_propose(&stranger, interval(800)).await,
        AnchorError::ConstraintHasOne,
    );
    env.set_time(pending.effective_at).await;
    custom(
        env.config_apply(&stranger).await,
        AnchorError::ConstraintHasOne,
    );
    assert_eq!(env.config_state().await.pending, Some(pending));

    // An empty proposal withdraws it.
    env.config_propose(&admin, ConfigChange::default())
        .await
        .unwrap();
    assert_eq!(env.config_state().await.pending, None);
    custom(env.config_apply(&admin).await, E::NothingPending);
    assert_eq!(env.config_state().await.buyback_interval_secs, INTERVAL);
}

fn revoke() -> ConfigUpdateArgs {
    ConfigUpdateArgs {
        revoke_runner: true,
        ..ConfigUpdateArgs::default()
    }
}

/// Revoking the runner is immediate: it cannot settle its open run (`RunnerRevoked`), nobody can
/// finalize it (no key signs for the default key), no run opens (`NoRunner`), and the user takes
/// back everything unsettled with `run_refund_expired` after the deadline, not a second before.
/// A pending appointment of the revoked key is dropped from the proposal (the rest of it stays,
/// on its clock; a proposal left empty is withdrawn); a pending appointment of another key is
/// kept and applies on its clock.
#[tokio::test(flavor = "current_thread")]
async fn revoking_the_runner_is_immediate_and_the_user_refunds_after_the_deadline() {
    use skilltrial_program::state::PendingChange;
    let mut env = start().await;
    env.config_init().await;
    let (admin, user, runner) = (
        env.admin.insecure_clone(),
        env.user.insecure_clone(),
        env.runner.insecure_clone(),
    );
    let deadline = env.now().await + MIN_DEADLINE + 60;
    let manifest = [21u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 4, upper(4), deadline)
        .await
        .unwrap();
    env.settle(&runner, &run, &[(0, 10)]).await.unwrap();

    // A pending re-appointment of the same key (a new payout address) with another change.
    let new_payout = anchor_key(&Keypair::new().pubkey());
    let same_key = ConfigChange {
        runner: Some(RunnerKeys {
            signer: anchor_key(&runner.pubkey()),
            payout: new_payout,
        }),
        buyback_interval_secs: Some(3_600),
        ..ConfigChange::default()
    };
    env.config_propose(&admin, same_key).await.unwrap();
    let effective_at = env.config_state().await.pending.unwrap().effective_at;

    env.config_update(&admin, revoke()).await.unwrap();
    let config = env.config_state().await;
    assert_eq!(config.runner, Default::default());
    assert_eq!(config.runner_payout, anchor_key(&env.payout.pubkey()));
    assert_eq!(
        config.pending,
        Some(PendingChange {
            change: ConfigChange {
                buyback_interval_secs: Some(3_600),
                ..ConfigChange::default()
            },
            effective_at
        })
    );

    custom(
        env.settle(&runner, &run, &[(1, 10)]).await,
        E::RunnerRevoked,
    );
    custom(
        env.finalize(&runner, &run).await,
        AnchorError::ConstraintHasOne,
    );
    custom(
        env.finalize(&admin, &run).await,
        AnchorError::ConstraintHasOne,
    );
    custom(
        env.open(&user, [22; 32], 1, upper(1), deadline).await,
        E::NoRunner,
    );
    let returned = upper(4) - 10 - FEE + env.run_rent().await;
    env.set_time(deadline).await;
    custom(
        env.refund(&user, &run, returned).await,
        E::DeadlineNotReached,
    );
    env.set_time(deadline + 1).await;
    env.refund(&user, &run, returned).await.unwrap();
    assert!(!env.exists(&run).await);

    // A pending appointment of another key survives a revocation.
    let mut env = start().await;
    env.config_init().await;
    let admin = env.admin.insecure_clone();
    let other = ConfigChange {
        runner: Some(RunnerKeys {
            signer: anchor_key(&Keypair::new().pubkey()),
            payout: new_payout,
        }),
        ..ConfigChange::default()
    };
    env.config_propose(&admin, other).await.unwrap();
    let pending = env.config_state().await.pending;
    assert_eq!(pending.map(|p| p.change), Some(other));
    env.config_update(&admin, revoke()).await.unwrap();
    let config = env.config_state().await;
    assert_eq!(
        (config.runner, config.pending),
        (Default::default(), pending)
    );

    // The appointment applies on its clock, and runs open again for the new key.
    let other_keys = other.runner.unwrap();
    env.set_time(pending.unwrap().effective_at).await;
    env.config_apply(&admin).await.unwrap();
    let config = env.config_state().await;
    assert_eq!(
        (config.runner, config.runner_payout, config.pending),
        (other_keys.signer, other_keys.payout, None)
    );

    // Revoking a key whose re-appointment (a new payout) is all that is pending leaves nothing
    // pending: no empty proposal stays behind to be "applied".
    let same_only = ConfigChange {
        runner: Some(RunnerKeys {
            signer: other_keys.signer,
            payout: anchor_key(&Keypair::new().pubkey()),
        }),
        ..ConfigChange::default()
    };
    env.config_propose(&admin, same_only).await.unwrap();
    env.config_update(&admin, revoke()).await.unwrap();
    let config = env.config_state().await;
    assert_eq!(
        (config.runner, config.runner_payout, config.pending),
        (Default::default(), other_keys.payout, None)
    );
    custom(env.config_apply(&admin).await, E::NothingPending);
}

/// A lower spending limit, proposed and applied through the time lock, binds the next settle:
/// usage and fees one lamport over it are refused (`SpendingLimitExceeded`), exactly the limit
/// passes, and then even a trial at usage 0 is refused (its fee counts).
#[tokio::test(flavor = "current_thread")]
async fn a_lower_spending_limit_applied_through_the_time_lock_binds_the_next_settle() {
    let mut env = start().await;
    env.config_init().await;
    let (admin, user, runner) = (
        env.admin.insecure_clone(),
        env.user.insecure_clone(),
        env.runner.insecure_clone(),
    );
    let limit = 2 * CAP + 3 * FEE;
    let lower = ConfigChange {
        usage_limit: Some(SpendingLimit {
            amount: limit,
            period_secs: USAGE_PERIOD,
        }),
        ..ConfigChange::default()
    };
    env.config_propose(&admin, lower).await.unwrap();
    let at = env.now().await + TIME_LOCK;
    env.set_time(at).await;
    env.config_apply(&admin).await.unwrap();
    assert_eq!(env.config_state().await.usage_limit.amount, limit);

    let manifest = [31u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    env.open(&user, manifest, 4, upper(4), at + MIN_DEADLINE + 60)
        .await
        .unwrap();
    env.settle(&runner, &run, &[(0, CAP), (1, CAP - 1)])
        .await
        .unwrap();
    custom(
        env.settle(&runner, &run, &[(2, 2)]).await,
        E::SpendingLimitExceeded,
    );
    env.settle(&runner, &run, &[(2, 1)]).await.unwrap();
    let vault = env.vault_state().await;
    assert_eq!(vault.usage_in_period, limit);
    custom(
        env.settle(&runner, &run, &[(3, 0)]).await,
        E::SpendingLimitExceeded,
    );
}

/// The one event of type `T` in `logs`. On the native layer there is none to read: Anchor's
/// `sol_log_data` is a no-op off-chain, so the program logs no event data at all; this asserts
/// exactly that (so the exception cannot outlive its cause), says so, and returns `None`.
fn only<T>(logs: &[String]) -> Option<T>
where
    T: anchor_lang::Discriminator + anchor_lang::AnchorDeserialize,
{
    if harness::native_layer() {
        assert!(
            !logs.iter().any(|l| l.contains("Program data: ")),
            "the native layer now logs events: check them there too: {logs:#?}"
        );
        println!("!!! native layer: event contents are checked only against the sBPF .so");
        return None;
    }
    let mut events = harness::events::<T>(logs);
    assert_eq!(events.len(), 1, "{logs:#?}");
    events.pop()
}

/// The governance events carry what the test sent: `ConfigChangeProposed` the change and
/// `now + time_lock`, `ConfigUpdated` the whole config after an immediate update and after an
/// apply (decoded from the transaction's `Program data:` log).
#[tokio::test(flavor = "current_thread")]
async fn governance_events_carry_the_values_sent() {
    use anchor_lang::Discriminator;
    use sha2::Digest;
    use skilltrial_program::events::{ConfigChangeProposed, ConfigUpdated};
    // Anchor's rule, computed here: an event's tag is sha256("event:<Name>")[..8].
    for (name, tag) in [
        ("ConfigUpdated", ConfigUpdated::DISCRIMINATOR),
        ("ConfigChangeProposed", ConfigChangeProposed::DISCRIMINATOR),
    ] {
        assert_eq!(tag, &sha2::Sha256::digest(format!("event:{name}"))[..8]);
    }
    let mut env = start().await;
    env.config_init().await;
    let admin = env.admin.insecure_clone();
    let new_fee = 300_000;
    let next_admin_key = Keypair::new();
    fund(&env.ctx, &next_admin_key.pubkey(), 1_000_000_000).await;
    let next_admin = anchor_key(&next_admin_key.pubkey());
    let update = ConfigUpdateArgs {
        fee_per_trial: Some(new_fee),
        min_deadline_secs: Some(600),
        revoke_runner: false,
        propose_admin: Some(next_admin),
    };
    let i = ix::config_update(&admin.pubkey(), update);
    let (result, logs) = env
        .send_logged("config_update", vec![i], &[&admin], vec![])
        .await;
    result.unwrap();
    let init = env.init_args();
    if let Some(e) = only::<ConfigUpdated>(&logs) {
        assert_eq!(
            (
                e.admin,
                e.pending_admin,
                e.runner,
                e.runner_payout,
                e.sktrial_mint
            ),
            (
                anchor_key(&admin.pubkey()),
                Some(next_admin),
                init.runner,
                init.runner_payout,
                init.sktrial_mint
            )
        );
        assert_eq!(
            (
                e.fee_per_trial,
                e.min_deadline_secs,
                e.time_lock_secs,
                e.usage_limit,
                e.usage_period_secs
            ),
            (new_fee, 600, TIME_LOCK, USAGE_LIMIT, USAGE_PERIOD)
        );
        assert_eq!(
            (
                e.buyback_interval_secs,
                e.max_buyback_lamports,
                e.buyback_rate_tokens,
                e.buyback_rate_lamports
            ),
            (INTERVAL, MAX_BUYBACK, RATE.tokens, RATE.lamports)
        );
    }

    let signer = anchor_key(&Keypair::new().pubkey());
    let change = ConfigChange {
        runner: Some(RunnerKeys {
            signer,
            payout: init.runner_payout,
        }),
        buyback_rate: Some(BuybackRate {
            tokens: 2,
            lamports: 9,
        }),
        time_lock_secs: Some(TIME_LOCK + 1),
        ..ConfigChange::default()
    };
    let t = env.now().await + 50;
    env.set_time(t).await;
    let i = ix::config_propose(&admin.pubkey(), change);
    let (result, logs) = env
        .send_logged("config_propose", vec![i], &[&admin], vec![])
        .await;
    result.unwrap();
    if let Some(e) = only::<ConfigChangeProposed>(&logs) {
        assert_eq!((e.change, e.effective_at), (change, t + TIME_LOCK));
        assert!(harness::events::<ConfigUpdated>(&logs).is_empty());
    }

    env.set_time(t + TIME_LOCK).await;
    let i = ix::config_apply(&admin.pubkey());
    let (result, logs) = env
        .send_logged("config_apply", vec![i], &[&admin], vec![])
        .await;
    result.unwrap();
    if let Some(e) = only::<ConfigUpdated>(&logs) {
        assert_eq!(
            (e.runner, e.runner_payout, e.pending_admin, e.fee_per_trial),
            (signer, init.runner_payout, Some(next_admin), new_fee)
        );
        assert_eq!(
            (
                e.time_lock_secs,
                e.buyback_rate_tokens,
                e.buyback_rate_lamports,
                e.max_buyback_lamports
            ),
            (TIME_LOCK + 1, 2, 9, MAX_BUYBACK)
        );
    }

    // A refused transaction emits nothing.
    let i = ix::config_apply(&admin.pubkey());
    let (result, logs) = env
        .send_logged("config_apply", vec![i], &[&admin], vec![])
        .await;
    custom(result, E::NothingPending);
    assert!(harness::events::<ConfigUpdated>(&logs).is_empty());

    // A revocation and the handover each report the config as it now stands.
    let i = ix::config_update(&admin.pubkey(), revoke());
    let (result, logs) = env
        .send_logged("config_update", vec![i], &[&admin], vec![])
        .await;
    result.unwrap();
    if let Some(e) = only::<ConfigUpdated>(&logs) {
        assert_eq!(
            (e.admin, e.runner, e.runner_payout, e.time_lock_secs),
            (
                anchor_key(&admin.pubkey()),
                Default::default(),
                init.runner_payout,
                TIME_LOCK + 1
            )
        );
    }
    let accepting = next_admin_key;
    let i = ix::config_accept_admin(&accepting.pubkey());
    let (result, logs) = env
        .send_logged("config_accept_admin", vec![i], &[&accepting], vec![])
        .await;
    result.unwrap();
    if let Some(e) = only::<ConfigUpdated>(&logs) {
        assert_eq!(
            (e.admin, e.pending_admin, e.runner, e.fee_per_trial),
            (next_admin, None, Default::default(), new_fee)
        );
    }
}

/// Revocation is never blocked by the rest of the config. A stored config that breaks a bound (as
/// one could after an upgrade tightened it: here a fee above `MAX_FEE_PER_TRIAL`, written into the
/// account directly) refuses any other update with `InvalidConfig`, yet a revocation alone goes
/// through and stops the runner at once.
#[tokio::test(flavor = "current_thread")]
async fn a_revocation_goes_through_a_config_that_breaks_a_later_bound() {
    use anchor_lang::AccountSerialize;
    let mut env = start().await;
    env.config_init().await;
    let (admin, user, runner) = (
        env.admin.insecure_clone(),
        env.user.insecure_clone(),
        env.runner.insecure_clone(),
    );
    let manifest = [32u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE + 60;
    env.open(&user, manifest, 2, upper(2), deadline)
        .await
        .unwrap();

    let mut config = env.config_state().await;
    config.fee_per_trial = skilltrial_program::constants::MAX_FEE_PER_TRIAL + 1;
    let mut account = env
        .ctx
        .banks_client
        .get_account(pda::config())
        .await
        .unwrap()
        .unwrap();
    let mut data = Vec::new();
    config.try_serialize(&mut data).unwrap();
    account.data[..data.len()].copy_from_slice(&data);
    env.ctx.set_account(&pda::config(), &account.into());

    let other = ConfigUpdateArgs {
        min_deadline_secs: Some(MIN_DEADLINE),
        ..ConfigUpdateArgs::default()
    };
    custom(env.config_update(&admin, other).await, E::InvalidConfig);
    let mixed = ConfigUpdateArgs {
        revoke_runner: true,
        min_deadline_secs: Some(MIN_DEADLINE),
        ..ConfigUpdateArgs::default()
    };
    custom(env.config_update(&admin, mixed).await, E::InvalidConfig);
    let revoke = ConfigUpdateArgs {
        revoke_runner: true,
        ..ConfigUpdateArgs::default()
    };
    env.config_update(&admin, revoke).await.unwrap();
    assert!(!env.config_state().await.has_runner());
    custom(
        env.settle(&runner, &run, &[(0, 1_000)]).await,
        E::RunnerRevoked,
    );
}

//! The config after `config_init`: admin-only, range-checked updates, a fee change that never
//! reprices an open run, runner rotation and admin hand-over.

use skilltrial_chain::error::{AnchorError, SkillTrialError as E};
use skilltrial_chain::ix::{self, ConfigUpdateArgs};
use skilltrial_chain::{anchor_key, pda};
use solana_keypair::Keypair;
use solana_signer::Signer;

use crate::harness::{CAP, Env, FEE, MIN_DEADLINE, custom, fund, start, upper};

impl Env {
    async fn config_update(
        &mut self,
        signer: &Keypair,
        args: ConfigUpdateArgs,
    ) -> Result<u64, String> {
        let i = ix::config_update(&signer.pubkey(), args);
        self.send("config_update", vec![i], &[signer]).await
    }
}

fn fee_only(fee: u64) -> ConfigUpdateArgs {
    ConfigUpdateArgs {
        fee_per_trial: Some(fee),
        ..no_change()
    }
}

fn no_change() -> ConfigUpdateArgs {
    ConfigUpdateArgs {
        runner: None,
        fee_per_trial: None,
        buyback_interval_secs: None,
        sktrial_mint: None,
        admin: None,
    }
}

/// Only the admin changes the config; a zero fee or a too-short interval is refused; a new fee
/// applies to runs opened after it, never to a run already escrowed; the admin can hand over.
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

    let before = [9u8; 32];
    let run = pda::run(&user.pubkey(), &before);
    env.open(&user, before, 2, upper(2), now + MIN_DEADLINE + 60)
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
    custom(
        env.config_update(
            &admin,
            ConfigUpdateArgs {
                buyback_interval_secs: Some(59),
                ..no_change()
            },
        )
        .await,
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
    env.finalize(&runner, &user.pubkey(), &run).await.unwrap();
    env.close(&user, &run).await.unwrap();

    // A run opened after must escrow the new fee.
    custom(
        env.open(&user, [10; 32], 2, upper(2), now + MIN_DEADLINE + 60)
            .await,
        E::EscrowTooSmall,
    );
    env.open(
        &user,
        [10; 32],
        2,
        (CAP + new_fee) * 2,
        now + MIN_DEADLINE + 60,
    )
    .await
    .unwrap();

    // Rotating the runner moves the open run with it: the old key can no longer settle or
    // finalize; the new one settles and finalizes the run opened under the old one.
    let open_run = pda::run(&user.pubkey(), &[10; 32]);
    let next_runner = Keypair::new();
    fund(&env.ctx, &next_runner.pubkey(), 1_000_000_000).await;
    let rotate = ConfigUpdateArgs {
        runner: Some(anchor_key(&next_runner.pubkey())),
        ..no_change()
    };
    env.config_update(&admin, rotate).await.unwrap();
    custom(
        env.settle(&runner, &open_run, &[(0, 10)]).await,
        AnchorError::ConstraintHasOne,
    );
    custom(
        env.finalize(&runner, &user.pubkey(), &open_run).await,
        AnchorError::ConstraintHasOne,
    );
    env.settle(&next_runner, &open_run, &[(0, 10)])
        .await
        .unwrap();
    env.finalize(&next_runner, &user.pubkey(), &open_run)
        .await
        .unwrap();

    // Handing the admin over: the old admin can no longer update.
    let next = Keypair::new();
    env.config_update(
        &admin,
        ConfigUpdateArgs {
            admin: Some(anchor_key(&next.pubkey())),
            ..no_change()
        },
    )
    .await
    .unwrap();
    custom(
        env.config_update(&admin, fee_only(1)).await,
        AnchorError::ConstraintHasOne,
    );
    env.assert_conserved().await;
}

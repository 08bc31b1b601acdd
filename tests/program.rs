//! The SkillTrial program in a real Solana runtime: solana-program-test 4.2.2 (Agave 4.2.2)
//! loads the sBPF v3 `.so` built by `scripts/build-sbf.sh` from `target/deploy/` and runs every
//! instruction, the happy path of a 54-trial run and a negative test per error. Lamports are
//! checked to be conserved at the end of every test. Compute units are printed as a table.
#![cfg(feature = "chain")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

use std::collections::{HashMap, HashSet};

use anchor_lang::{InstructionData, ToAccountMetas};
use skilltrial_core::solana::pda::find_program_address;
use skilltrial_e2e::workspace_root;
use skilltrial_program as skilltrial;
use solana_clock::Clock;
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::Keypair;
use solana_program_test::{ProgramTest, ProgramTestContext, processor};

#[path = "program_native.rs"]
mod native;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction::Transaction;

type Anchor = anchor_lang::prelude::Pubkey;

const SYSTEM: Pubkey = Pubkey::new_from_array([0; 32]);
const FEE: u64 = 200_000;
const CAP: u64 = 50_000;

fn program_id() -> Pubkey {
    Pubkey::new_from_array(skilltrial::ID.to_bytes())
}

fn a(p: &Pubkey) -> Anchor {
    Anchor::new_from_array(p.to_bytes())
}

fn pda(seeds: &[&[u8]]) -> Pubkey {
    let id = skilltrial_core::solana::Address(program_id().to_bytes());
    Pubkey::new_from_array(find_program_address(seeds, &id).unwrap().0.0)
}

const UPGRADEABLE_LOADER: Pubkey =
    Pubkey::from_str_const("BPFLoaderUpgradeab1e11111111111111111111111");

/// The program's ProgramData address under the upgradeable loader.
fn program_data_address() -> Pubkey {
    let loader = skilltrial_core::solana::Address(UPGRADEABLE_LOADER.to_bytes());
    Pubkey::new_from_array(
        find_program_address(&[program_id().as_ref()], &loader)
            .unwrap()
            .0
            .0,
    )
}

/// A ProgramData account naming `authority` as the upgrade authority, in the loader's bincode
/// layout (u32 variant 3, u64 slot, Option<Pubkey>); the ELF that would follow is not read.
fn program_data_account(authority: &Pubkey) -> solana_account::Account {
    let mut data = 3u32.to_le_bytes().to_vec();
    data.extend_from_slice(&0u64.to_le_bytes());
    data.push(1);
    data.extend_from_slice(authority.as_ref());
    solana_account::Account {
        lamports: 1_000_000_000,
        data,
        owner: UPGRADEABLE_LOADER,
        executable: false,
        rent_epoch: 0,
    }
}

fn config_pda() -> Pubkey {
    pda(&[skilltrial::constants::CONFIG_SEED])
}
fn vault_pda() -> Pubkey {
    pda(&[skilltrial::constants::FEE_VAULT_SEED])
}
fn log_pda() -> Pubkey {
    pda(&[skilltrial::constants::BUYBACK_LOG_SEED])
}
fn run_pda(user: &Pubkey, manifest: &[u8; 32]) -> Pubkey {
    pda(&[skilltrial::constants::RUN_SEED, user.as_ref(), manifest])
}

fn ix(data: Vec<u8>, metas: Vec<anchor_lang::prelude::AccountMeta>) -> Instruction {
    Instruction {
        program_id: program_id(),
        accounts: metas
            .into_iter()
            .map(|m| AccountMeta {
                pubkey: Pubkey::new_from_array(m.pubkey.to_bytes()),
                is_signer: m.is_signer,
                is_writable: m.is_writable,
            })
            .collect(),
        data,
    }
}

struct Env {
    ctx: ProgramTestContext,
    admin: Keypair,
    runner: Keypair,
    user: Keypair,
    mint: Pubkey,
    cu: Vec<(String, u64)>,
    /// Signatures already sent, so a repeated transaction waits for a fresh blockhash.
    sent: HashSet<String>,
    /// Transaction fees paid per fee payer.
    fees_paid: HashMap<Pubkey, u64>,
    /// Every account any sent transaction touched, and the sum of their balances when each was
    /// first touched: lamports are conserved when the sum now plus the fees paid equals it.
    tracked: HashSet<Pubkey>,
    baseline: u64,
}

/// Which build of the program the tests run: the sBPF `.so` (default) or, where the sBPF
/// toolchain cannot be installed, the same source as a native builtin
/// (`SKILLTRIAL_PROGRAM_LAYER=native`, set by scripts/test.sh, which says so loudly).
fn native_layer() -> bool {
    match std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() {
        Ok("native") => true,
        Ok("sbf") | Err(_) => false,
        Ok(other) => panic!("SKILLTRIAL_PROGRAM_LAYER={other:?}: expected sbf or native"),
    }
}

fn layer_name() -> &'static str {
    if native_layer() {
        "NATIVE builtin (no sBPF toolchain), solana-program-test 4.2.2"
    } else {
        "sBPF .so, solana-program-test 4.2.2"
    }
}

async fn start() -> Env {
    // The admin is the program's upgrade authority: its ProgramData account is in genesis.
    let admin = Keypair::new();
    let mut pt = ProgramTest::default();
    pt.add_account(
        program_data_address(),
        program_data_account(&admin.pubkey()),
    );
    let ctx = if native_layer() {
        // prefer_bpf must be off before the program is added (SBF_OUT_DIR is set, so the
        // default would pick the .so).
        pt.prefer_bpf(false);
        pt.add_program("skilltrial", program_id(), processor!(native::process));
        let ctx = pt.start_with_context().await;
        native::bridge_syscalls();
        ctx
    } else {
        let so = workspace_root().join("target/deploy/skilltrial.so");
        assert!(
            so.is_file(),
            "{} is missing: build it with scripts/build-sbf.sh",
            so.display()
        );
        // build-sbf.sh stamps the .so with the hash of the sources it was built from: a stale
        // .so must never pass for the current program.
        let stamp = so.with_extension("so.src-sha256");
        let built_from = std::fs::read_to_string(&stamp).unwrap_or_default();
        assert_eq!(
            built_from.trim(),
            skilltrial_e2e::program_source_sha256().unwrap(),
            "{} was not built from the current programs/skilltrial/src (stamp {}): rebuild it with scripts/build-sbf.sh",
            so.display(),
            stamp.display()
        );
        // SBF_OUT_DIR points at target/deploy (.cargo/config.toml), where the program test finds it.
        pt.prefer_bpf(true);
        pt.add_program("skilltrial", program_id(), None);
        pt.start_with_context().await
    };
    let env = Env {
        ctx,
        admin,
        runner: Keypair::new(),
        user: Keypair::new(),
        mint: Keypair::new().pubkey(),
        cu: Vec::new(),
        sent: HashSet::new(),
        fees_paid: HashMap::new(),
        tracked: HashSet::new(),
        baseline: 0,
    };
    for who in [&env.admin, &env.runner, &env.user] {
        fund(&env.ctx, &who.pubkey(), 100_000_000_000).await;
    }
    env
}

async fn fund(ctx: &ProgramTestContext, to: &Pubkey, lamports: u64) {
    let mut data = vec![2, 0, 0, 0];
    data.extend_from_slice(&lamports.to_le_bytes());
    let transfer = Instruction {
        program_id: SYSTEM,
        accounts: vec![
            AccountMeta::new(ctx.payer.pubkey(), true),
            AccountMeta::new(*to, false),
        ],
        data,
    };
    let blockhash = ctx.banks_client.get_latest_blockhash().await.unwrap();
    let tx = Transaction::new_signed_with_payer(
        &[transfer],
        Some(&ctx.payer.pubkey()),
        &[&ctx.payer],
        blockhash,
    );
    ctx.banks_client.process_transaction(tx).await.unwrap();
}

impl Env {
    /// Sends one transaction; returns the custom error or Ok, records compute units of the
    /// successes and the fee every executed transaction cost its payer.
    async fn send(
        &mut self,
        label: &str,
        ixs: Vec<Instruction>,
        signers: &[&Keypair],
    ) -> Result<u64, String> {
        let payer = signers[0].pubkey();
        let touched: Vec<Pubkey> = ixs
            .iter()
            .flat_map(|i| i.accounts.iter().map(|m| m.pubkey))
            .chain(signers.iter().map(|k| k.pubkey()))
            .collect();
        for key in touched {
            if self.tracked.insert(key) {
                self.baseline += self.lamports(&key).await;
            }
        }
        let mut blockhash = self.ctx.banks_client.get_latest_blockhash().await.unwrap();
        let mut tx = Transaction::new_signed_with_payer(&ixs, Some(&payer), signers, blockhash);
        // The same signed message twice would be refused as already processed; wait for the
        // next blockhash so a repeated refusal is judged by the program.
        while !self.sent.insert(tx.signatures[0].to_string()) {
            blockhash = self.ctx.get_new_latest_blockhash().await.unwrap();
            tx = Transaction::new_signed_with_payer(&ixs, Some(&payer), signers, blockhash);
        }
        let result = self
            .ctx
            .banks_client
            .process_transaction_with_metadata(tx)
            .await
            .unwrap();
        let cu = result
            .metadata
            .as_ref()
            .map_or(0, |m| m.compute_units_consumed);
        if result.metadata.is_some() {
            *self.fees_paid.entry(payer).or_default() += 5_000 * signers.len() as u64;
        }
        match result.result {
            Ok(()) => {
                self.cu.push((label.to_owned(), cu));
                Ok(cu)
            }
            Err(e) => Err(format!("{e:?}")),
        }
    }

    /// Lamports are conserved over every account the test touched: none created, none lost;
    /// only transaction fees left (SPEC §9: refund + usage + fees = escrow, and nothing else).
    async fn assert_conserved(&self) {
        let mut now = 0u64;
        for key in &self.tracked {
            now += self.lamports(key).await;
        }
        let fees: u64 = self.fees_paid.values().sum();
        assert_eq!(
            now + fees,
            self.baseline,
            "lamports not conserved over the touched accounts"
        );
    }

    async fn config_state(&self) -> skilltrial::state::Config {
        let account = self
            .ctx
            .banks_client
            .get_account(config_pda())
            .await
            .unwrap()
            .expect("the config exists");
        anchor_lang::AccountDeserialize::try_deserialize(&mut account.data.as_slice()).unwrap()
    }

    async fn run_state(&self, run: &Pubkey) -> skilltrial::state::Run {
        let account = self
            .ctx
            .banks_client
            .get_account(*run)
            .await
            .unwrap()
            .expect("the run exists");
        anchor_lang::AccountDeserialize::try_deserialize(&mut account.data.as_slice()).unwrap()
    }

    async fn lamports(&self, who: &Pubkey) -> u64 {
        self.ctx.banks_client.get_balance(*who).await.unwrap()
    }

    async fn now(&self) -> i64 {
        self.ctx
            .banks_client
            .get_sysvar::<Clock>()
            .await
            .unwrap()
            .unix_timestamp
    }

    async fn set_time(&mut self, unix: i64) {
        let mut clock: Clock = self.ctx.banks_client.get_sysvar().await.unwrap();
        clock.unix_timestamp = unix;
        self.ctx.set_sysvar(&clock);
    }

    async fn config_init(&mut self) {
        let admin = self.admin.insecure_clone();
        self.config_init_by(&admin).await.unwrap();
    }

    async fn config_init_by(&mut self, signer: &Keypair) -> Result<u64, String> {
        let data = skilltrial::instruction::ConfigInit {
            args: skilltrial::instructions::ConfigInitArgs {
                runner: a(&self.runner.pubkey()),
                fee_per_trial: FEE,
                buyback_interval_secs: 6 * 3600,
                sktrial_mint: a(&self.mint),
            },
        }
        .data();
        let metas = skilltrial::accounts::ConfigInit {
            admin: a(&signer.pubkey()),
            program_data: a(&program_data_address()),
            config: a(&config_pda()),
            fee_vault: a(&vault_pda()),
            buyback_log: a(&log_pda()),
            system_program: a(&SYSTEM),
        }
        .to_account_metas(None);
        self.send("config_init", vec![ix(data, metas)], &[signer])
            .await
    }

    async fn open(
        &mut self,
        user: &Keypair,
        manifest: [u8; 32],
        trials: u16,
        escrow: u64,
        deadline: i64,
    ) -> Result<u64, String> {
        self.open_with_cap(user, manifest, trials, CAP, escrow, deadline)
            .await
    }

    async fn open_with_cap(
        &mut self,
        user: &Keypair,
        manifest: [u8; 32],
        trials: u16,
        cap: u64,
        escrow: u64,
        deadline: i64,
    ) -> Result<u64, String> {
        let data = skilltrial::instruction::RunOpen {
            args: skilltrial::instructions::RunOpenArgs {
                manifest_hash: manifest,
                planned_trials: trials,
                per_request_cap: cap,
                escrow,
                deadline,
            },
        }
        .data();
        let metas = skilltrial::accounts::RunOpen {
            user: a(&user.pubkey()),
            config: a(&config_pda()),
            run: a(&run_pda(&user.pubkey(), &manifest)),
            system_program: a(&SYSTEM),
        }
        .to_account_metas(None);
        self.send("run_open", vec![ix(data, metas)], &[user]).await
    }

    fn settle_ix(&self, signer: &Pubkey, run: &Pubkey, charges: &[(u16, u64)]) -> Instruction {
        let data = skilltrial::instruction::RunSettle {
            args: skilltrial::instructions::RunSettleArgs {
                trials: charges
                    .iter()
                    .map(|(index, usage)| skilltrial::instructions::TrialCharge {
                        index: *index,
                        usage: *usage,
                    })
                    .collect(),
            },
        }
        .data();
        let metas = skilltrial::accounts::RunSettle {
            runner: a(signer),
            config: a(&config_pda()),
            run: a(run),
            fee_vault: a(&vault_pda()),
        }
        .to_account_metas(None);
        ix(data, metas)
    }

    async fn settle(
        &mut self,
        signer: &Keypair,
        run: &Pubkey,
        charges: &[(u16, u64)],
    ) -> Result<u64, String> {
        let i = self.settle_ix(&signer.pubkey(), run, charges);
        self.send(
            &format!("run_settle x{}", charges.len()),
            vec![i],
            &[signer],
        )
        .await
    }

    async fn cancel(&mut self, signer: &Keypair, run: &Pubkey) -> Result<u64, String> {
        let data = skilltrial::instruction::RunCancel {}.data();
        let metas = skilltrial::accounts::RunCancel {
            user: a(&signer.pubkey()),
            run: a(run),
        }
        .to_account_metas(None);
        self.send("run_cancel", vec![ix(data, metas)], &[signer])
            .await
    }

    async fn finalize(
        &mut self,
        signer: &Keypair,
        user: &Pubkey,
        run: &Pubkey,
    ) -> Result<u64, String> {
        let data = skilltrial::instruction::RunFinalize {
            report_hash: [7; 32],
        }
        .data();
        let metas = skilltrial::accounts::RunFinalize {
            runner: a(&signer.pubkey()),
            user: a(user),
            config: a(&config_pda()),
            run: a(run),
        }
        .to_account_metas(None);
        self.send("run_finalize", vec![ix(data, metas)], &[signer])
            .await
    }

    async fn refund(&mut self, signer: &Keypair, run: &Pubkey) -> Result<u64, String> {
        let data = skilltrial::instruction::RunRefundExpired {}.data();
        let metas = skilltrial::accounts::RunRefundExpired {
            user: a(&signer.pubkey()),
            config: a(&config_pda()),
            run: a(run),
        }
        .to_account_metas(None);
        self.send("run_refund_expired", vec![ix(data, metas)], &[signer])
            .await
    }

    async fn close(&mut self, signer: &Keypair, run: &Pubkey) -> Result<u64, String> {
        let data = skilltrial::instruction::RunClose {}.data();
        let metas = skilltrial::accounts::RunClose {
            user: a(&signer.pubkey()),
            run: a(run),
        }
        .to_account_metas(None);
        self.send("run_close", vec![ix(data, metas)], &[signer])
            .await
    }
}

fn custom(result: Result<u64, String>, code: u32) {
    match result {
        Ok(_) => panic!("expected Custom({code}), the transaction succeeded"),
        Err(e) => assert!(
            e.contains(&format!("Custom({code})")),
            "expected Custom({code}), got {e}"
        ),
    }
}

// Anchor's own codes and ours (6000 + declaration order in error.rs).
const HAS_ONE: u32 = 2001;
const SEEDS: u32 = 2006;
const TRIAL_COUNT: u32 = 6000;
const ZERO_CAP: u32 = 6001;
const ESCROW_SMALL: u32 = 6002;
const DEADLINE_TOO_SOON: u32 = 6003;
const CANCEL_WINDOW_CLOSED: u32 = 6017;
const NOT_UPGRADE_AUTHORITY: u32 = 6018;
const MIN_DEADLINE: i64 = skilltrial::constants::MIN_DEADLINE_SECS;
const CANCEL_WINDOW: i64 = skilltrial::constants::CANCEL_SETTLE_WINDOW_SECS;
const OUT_OF_RANGE: u32 = 6004;
const ALREADY_SETTLED: u32 = 6005;
const ABOVE_CAP: u32 = 6006;
const BAD_BATCH: u32 = 6007;
const NOT_OPEN: u32 = 6008;
const NOT_FINISHED: u32 = 6009;
const DEADLINE_NOT_REACHED: u32 = 6010;
const OVERFLOW: u32 = 6012;
const BUYBACK_TOO_SOON: u32 = 6013;
const BURN_MISSING: u32 = 6014;
const VAULT_SHORT: u32 = 6015;
const INVALID_CONFIG: u32 = 6016;

fn upper(trials: u16) -> u64 {
    (CAP + FEE) * u64::from(trials)
}

#[tokio::test(flavor = "current_thread")]
async fn a_54_trial_run_settles_cancels_finalizes_and_conserves_lamports() {
    let mut env = start().await;
    env.config_init().await;
    let user = env.user.insecure_clone();
    let runner = env.runner.insecure_clone();
    let manifest = [42u8; 32];
    let run = run_pda(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE + 60;
    let escrow = upper(54);

    let user_before = env.lamports(&user.pubkey()).await;
    let runner_before = env.lamports(&runner.pubkey()).await;
    let vault_before = env.lamports(&vault_pda()).await;
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
        CANCEL_WINDOW_CLOSED,
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
    custom(env.settle(&runner, &run, &charges[30..]).await, NOT_OPEN);
    custom(env.finalize(&runner, &user.pubkey(), &run).await, NOT_OPEN);
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
    assert_eq!(env.lamports(&vault_pda()).await - vault_before, fees);
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

/// Transaction fees `who` paid as fee payer for every executed transaction (5,000 lamports per
/// signature; the first signer pays).
fn tx_fees(env: &Env, who: &Pubkey) -> u64 {
    env.fees_paid.get(who).copied().unwrap_or(0)
}

fn print_cu(env: &Env) {
    println!("\ncompute units ({}):", layer_name());
    for (label, cu) in &env.cu {
        println!("  {label:<24} {cu:>8}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn every_refusal_returns_its_exact_error() {
    let mut env = start().await;
    // Only the program's upgrade authority creates the config (no front-running the deployer).
    let squatter = Keypair::new();
    fund(&env.ctx, &squatter.pubkey(), 1_000_000_000).await;
    custom(env.config_init_by(&squatter).await, NOT_UPGRADE_AUTHORITY);
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
        TRIAL_COUNT,
    );
    custom(
        env.open(&user, [1; 32], 101, upper(101), now + MIN_DEADLINE + 60)
            .await,
        TRIAL_COUNT,
    );
    custom(
        env.open(&user, [1; 32], 10, upper(10) - 1, now + MIN_DEADLINE + 60)
            .await,
        ESCROW_SMALL,
    );
    custom(
        env.open(&user, [1; 32], 10, upper(10), now + MIN_DEADLINE - 1)
            .await,
        DEADLINE_TOO_SOON,
    );
    custom(
        env.open_with_cap(&user, [2; 32], 1, 0, FEE, now + MIN_DEADLINE + 60)
            .await,
        ZERO_CAP,
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
        OVERFLOW,
    );

    let manifest = [3u8; 32];
    let run = run_pda(&user.pubkey(), &manifest);
    env.open(&user, manifest, 10, upper(10), now + MIN_DEADLINE + 60)
        .await
        .unwrap();

    // Only the run's runner settles; no trial twice; none above the cap; none outside the plan.
    custom(env.settle(&stranger, &run, &[(0, 1)]).await, HAS_ONE);
    custom(env.settle(&runner, &run, &[(0, CAP + 1)]).await, ABOVE_CAP);
    custom(env.settle(&runner, &run, &[(10, 1)]).await, OUT_OF_RANGE);
    custom(env.settle(&runner, &run, &[]).await, BAD_BATCH);
    env.settle(&runner, &run, &[(0, 10)]).await.unwrap();
    custom(env.settle(&runner, &run, &[(0, 10)]).await, ALREADY_SETTLED);
    custom(
        env.settle(&runner, &run, &[(1, 10), (1, 10)]).await,
        ALREADY_SETTLED,
    );

    // Only the user cancels, refunds, closes; a stranger's signature derives another run.
    custom(env.cancel(&stranger, &run).await, SEEDS);
    custom(env.refund(&user, &run).await, DEADLINE_NOT_REACHED);
    custom(env.close(&user, &run).await, NOT_FINISHED);
    // Only the runner finalizes.
    custom(env.finalize(&stranger, &user.pubkey(), &run).await, HAS_ONE);
    // After the deadline the user takes the rest back without the runner; then nothing settles.
    let later = now + MIN_DEADLINE + 61;
    env.set_time(later).await;
    env.refund(&user, &run).await.unwrap();
    custom(env.settle(&runner, &run, &[(2, 10)]).await, NOT_OPEN);
    custom(env.finalize(&runner, &user.pubkey(), &run).await, NOT_OPEN);
    custom(env.cancel(&user, &run).await, NOT_OPEN);
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
    let run = run_pda(&user.pubkey(), &manifest);
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

// ---- $SKTRIAL buybacks against the real SPL Token program that solana-program-test loads ----
// The token instructions are encoded by hand from the SPL Token wire format (tag byte, then
// little-endian fields): the interface crate speaks another solana-pubkey major version.

const TOKEN: Pubkey = Pubkey::from_str_const("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
const DECIMALS: u8 = 6;

fn create_account(
    from: &Pubkey,
    new: &Pubkey,
    lamports: u64,
    space: u64,
    owner: &Pubkey,
) -> Instruction {
    let mut data = vec![0, 0, 0, 0];
    data.extend_from_slice(&lamports.to_le_bytes());
    data.extend_from_slice(&space.to_le_bytes());
    data.extend_from_slice(owner.as_ref());
    Instruction {
        program_id: SYSTEM,
        accounts: vec![AccountMeta::new(*from, true), AccountMeta::new(*new, true)],
        data,
    }
}

fn token_ix(tag: u8, fields: &[&[u8]], accounts: Vec<AccountMeta>) -> Instruction {
    let mut data = vec![tag];
    for f in fields {
        data.extend_from_slice(f);
    }
    Instruction {
        program_id: TOKEN,
        accounts,
        data,
    }
}

fn burn_checked(account: &Pubkey, mint: &Pubkey, owner: &Pubkey, amount: u64) -> Instruction {
    let accounts = vec![
        AccountMeta::new(*account, false),
        AccountMeta::new(*mint, false),
        AccountMeta::new_readonly(*owner, true),
    ];
    token_ix(15, &[&amount.to_le_bytes(), &[DECIMALS]], accounts)
}

impl Env {
    /// A real $SKTRIAL mint (authority: the runner) and a runner token account holding `supply`.
    async fn make_mint(&mut self, supply: u64) -> (Pubkey, Pubkey) {
        let (mint, holding) = (Keypair::new(), Keypair::new());
        let runner = self.runner.insecure_clone();
        let rent = self.ctx.banks_client.get_rent().await.unwrap();
        let ixs = vec![
            create_account(
                &runner.pubkey(),
                &mint.pubkey(),
                rent.minimum_balance(82),
                82,
                &TOKEN,
            ),
            // InitializeMint2 { decimals, mint_authority, freeze_authority: None }
            token_ix(
                20,
                &[&[DECIMALS], runner.pubkey().as_ref(), &[0]],
                vec![AccountMeta::new(mint.pubkey(), false)],
            ),
            create_account(
                &runner.pubkey(),
                &holding.pubkey(),
                rent.minimum_balance(165),
                165,
                &TOKEN,
            ),
            // InitializeAccount3 { owner }
            token_ix(
                18,
                &[runner.pubkey().as_ref()],
                vec![
                    AccountMeta::new(holding.pubkey(), false),
                    AccountMeta::new_readonly(mint.pubkey(), false),
                ],
            ),
            // MintTo { amount }
            token_ix(
                7,
                &[&supply.to_le_bytes()],
                vec![
                    AccountMeta::new(mint.pubkey(), false),
                    AccountMeta::new(holding.pubkey(), false),
                    AccountMeta::new_readonly(runner.pubkey(), true),
                ],
            ),
        ];
        self.send("token setup", ixs, &[&runner, &mint, &holding])
            .await
            .unwrap();
        (mint.pubkey(), holding.pubkey())
    }

    /// The mint's supply (SPL Token Mint layout: COption<Pubkey> authority, then u64 supply).
    async fn supply(&self, mint: &Pubkey) -> u64 {
        let account = self
            .ctx
            .banks_client
            .get_account(*mint)
            .await
            .unwrap()
            .unwrap();
        u64::from_le_bytes(account.data[36..44].try_into().unwrap())
    }

    fn buyback_ix(&self, lamports_in: u64, tokens_burned: u64) -> Instruction {
        let data = skilltrial::instruction::BuybackExecute {
            args: skilltrial::instructions::BuybackExecuteArgs {
                lamports_in,
                tokens_burned,
            },
        }
        .data();
        let metas = skilltrial::accounts::BuybackExecute {
            runner: a(&self.runner.pubkey()),
            config: a(&config_pda()),
            fee_vault: a(&vault_pda()),
            buyback_log: a(&log_pda()),
            instructions: a(&Pubkey::from_str_const(
                "Sysvar1nstructions1111111111111111111111111",
            )),
        }
        .to_account_metas(None);
        ix(data, metas)
    }

    async fn buyback(
        &mut self,
        extra: Vec<Instruction>,
        lamports_in: u64,
        tokens_burned: u64,
    ) -> Result<u64, String> {
        let runner = self.runner.insecure_clone();
        let mut ixs = vec![self.buyback_ix(lamports_in, tokens_burned)];
        ixs.extend(extra);
        self.send("buyback_execute + burn", ixs, &[&runner]).await
    }
}

/// Buybacks release fee-vault lamports only in a transaction that burns exactly the stated
/// $SKTRIAL, at most once per interval, never below the vault's rent; each is logged.
#[tokio::test(flavor = "current_thread")]
async fn a_buyback_releases_fees_only_with_a_burn_once_per_interval() {
    let mut env = start().await;
    let (mint, holding) = env.make_mint(1_000_000_000).await;
    env.mint = mint;
    env.config_init().await;
    let (user, runner) = (env.user.insecure_clone(), env.runner.insecure_clone());

    // Ten settled trials put 10 fees in the vault.
    let manifest = [9u8; 32];
    let run = run_pda(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE + 60;
    env.open(&user, manifest, 10, upper(10), deadline)
        .await
        .unwrap();
    let charges: Vec<(u16, u64)> = (0..10).map(|i| (i, 1_000)).collect();
    env.settle(&runner, &run, &charges).await.unwrap();
    env.finalize(&runner, &user.pubkey(), &run).await.unwrap();
    let fees = FEE * 10;
    let vault_before = env.lamports(&vault_pda()).await;

    // No burn, a burn of another amount, a burn of another mint: refused.
    custom(env.buyback(vec![], fees, 500).await, BURN_MISSING);
    custom(
        env.buyback(
            vec![burn_checked(&holding, &mint, &runner.pubkey(), 499)],
            fees,
            500,
        )
        .await,
        BURN_MISSING,
    );
    let (other_mint, other_holding) = env.make_mint(1_000).await;
    custom(
        env.buyback(
            vec![burn_checked(
                &other_holding,
                &other_mint,
                &runner.pubkey(),
                500,
            )],
            fees,
            500,
        )
        .await,
        BURN_MISSING,
    );
    // More than the vault holds above its rent: refused.
    custom(
        env.buyback(
            vec![burn_checked(&holding, &mint, &runner.pubkey(), 500)],
            fees + 1,
            500,
        )
        .await,
        VAULT_SHORT,
    );

    let runner_before = env.lamports(&runner.pubkey()).await;
    let paid_before = tx_fees(&env, &runner.pubkey());
    env.buyback(
        vec![burn_checked(&holding, &mint, &runner.pubkey(), 500)],
        fees,
        500,
    )
    .await
    .unwrap();
    assert_eq!(
        env.supply(&mint).await,
        1_000_000_000 - 500,
        "the burn happened in the same transaction"
    );
    assert_eq!(vault_before - env.lamports(&vault_pda()).await, fees);
    let tx_fee = tx_fees(&env, &runner.pubkey()) - paid_before;
    assert_eq!(
        env.lamports(&runner.pubkey()).await + tx_fee - runner_before,
        fees
    );

    // Once per interval: refused until six hours have passed.
    custom(
        env.buyback(
            vec![burn_checked(&holding, &mint, &runner.pubkey(), 1)],
            1,
            1,
        )
        .await,
        BUYBACK_TOO_SOON,
    );
    let later = env.now().await + 6 * 3600;
    env.set_time(later).await;
    custom(
        env.buyback(
            vec![burn_checked(&holding, &mint, &runner.pubkey(), 1)],
            1,
            1,
        )
        .await,
        VAULT_SHORT,
    );

    let config = env.config_state().await;
    assert_eq!((config.total_bought_back, config.total_burned), (fees, 500));
    print_cu(&env);
    env.assert_conserved().await;
}

impl Env {
    async fn config_update(
        &mut self,
        signer: &Keypair,
        args: skilltrial::instructions::ConfigUpdateArgs,
    ) -> Result<u64, String> {
        let data = skilltrial::instruction::ConfigUpdate { args }.data();
        let metas = skilltrial::accounts::ConfigUpdate {
            admin: a(&signer.pubkey()),
            config: a(&config_pda()),
        }
        .to_account_metas(None);
        self.send("config_update", vec![ix(data, metas)], &[signer])
            .await
    }
}

fn fee_only(fee: u64) -> skilltrial::instructions::ConfigUpdateArgs {
    skilltrial::instructions::ConfigUpdateArgs {
        fee_per_trial: Some(fee),
        ..no_change()
    }
}

fn no_change() -> skilltrial::instructions::ConfigUpdateArgs {
    skilltrial::instructions::ConfigUpdateArgs {
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
    let run = run_pda(&user.pubkey(), &before);
    env.open(&user, before, 2, upper(2), now + MIN_DEADLINE + 60)
        .await
        .unwrap();

    custom(env.config_update(&user, fee_only(1)).await, HAS_ONE);
    custom(env.config_update(&admin, fee_only(0)).await, INVALID_CONFIG);
    custom(
        env.config_update(
            &admin,
            skilltrial::instructions::ConfigUpdateArgs {
                buyback_interval_secs: Some(59),
                ..no_change()
            },
        )
        .await,
        INVALID_CONFIG,
    );
    let new_fee = 300_000;
    env.config_update(&admin, fee_only(new_fee)).await.unwrap();

    // The run opened before keeps the fee it escrowed for.
    let vault = env.lamports(&vault_pda()).await;
    env.settle(&runner, &run, &[(0, 10), (1, 10)])
        .await
        .unwrap();
    assert_eq!(env.lamports(&vault_pda()).await - vault, FEE * 2);
    env.finalize(&runner, &user.pubkey(), &run).await.unwrap();
    env.close(&user, &run).await.unwrap();

    // A run opened after must escrow the new fee.
    custom(
        env.open(&user, [10; 32], 2, upper(2), now + MIN_DEADLINE + 60)
            .await,
        ESCROW_SMALL,
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
    let open_run = run_pda(&user.pubkey(), &[10; 32]);
    let next_runner = Keypair::new();
    fund(&env.ctx, &next_runner.pubkey(), 1_000_000_000).await;
    let rotate = skilltrial::instructions::ConfigUpdateArgs {
        runner: Some(a(&next_runner.pubkey())),
        ..no_change()
    };
    env.config_update(&admin, rotate).await.unwrap();
    custom(env.settle(&runner, &open_run, &[(0, 10)]).await, HAS_ONE);
    custom(
        env.finalize(&runner, &user.pubkey(), &open_run).await,
        HAS_ONE,
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
        skilltrial::instructions::ConfigUpdateArgs {
            admin: Some(a(&next.pubkey())),
            ..no_change()
        },
    )
    .await
    .unwrap();
    custom(env.config_update(&admin, fee_only(1)).await, HAS_ONE);
    env.assert_conserved().await;
}

/// The committed IDL (idl/skilltrial.json, from scripts/idl.sh) and the program crate these
/// tests build instructions from agree: same address, same instruction discriminators, same
/// error codes. Off-chain code that reads either gets the same program.
#[test]
fn the_committed_idl_matches_the_program_crate() {
    use anchor_lang::Discriminator;
    use skilltrial::instruction as ix;
    let text = std::fs::read_to_string(workspace_root().join("idl/skilltrial.json")).unwrap();
    let idl: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(idl["address"], skilltrial::ID.to_string());
    let expected: [(&str, &[u8]); 9] = [
        ("buyback_execute", ix::BuybackExecute::DISCRIMINATOR),
        ("config_init", ix::ConfigInit::DISCRIMINATOR),
        ("config_update", ix::ConfigUpdate::DISCRIMINATOR),
        ("run_cancel", ix::RunCancel::DISCRIMINATOR),
        ("run_close", ix::RunClose::DISCRIMINATOR),
        ("run_finalize", ix::RunFinalize::DISCRIMINATOR),
        ("run_open", ix::RunOpen::DISCRIMINATOR),
        ("run_refund_expired", ix::RunRefundExpired::DISCRIMINATOR),
        ("run_settle", ix::RunSettle::DISCRIMINATOR),
    ];
    let instructions = idl["instructions"].as_array().unwrap();
    assert_eq!(instructions.len(), expected.len());
    for (name, discriminator) in expected {
        let entry = instructions
            .iter()
            .find(|i| i["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from the IDL"));
        let bytes: Vec<u8> = serde_json::from_value(entry["discriminator"].clone()).unwrap();
        assert_eq!(bytes, discriminator, "{name}'s discriminator");
    }
    let codes: Vec<u64> = idl["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_u64().unwrap())
        .collect();
    assert_eq!(codes, (6000..=6019).collect::<Vec<u64>>());
    assert_eq!(
        u32::from(skilltrial::error::SkillTrialError::CancelWindowClosed),
        6017
    );
}

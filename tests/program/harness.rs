//! The test runtime: a solana-program-test bank with the program (sBPF `.so` or native), funded
//! admin, runner and user keys, and `Env`, which sends the chain client's instructions, records
//! compute units and fees, and checks that lamports are conserved over every touched account.

use std::collections::{HashMap, HashSet};

use skilltrial_chain::error::Refusal;
use skilltrial_chain::ix::{self, ConfigInitArgs, RunOpenArgs, RunSettleArgs, TrialCharge};
use skilltrial_chain::{PROGRAM_ID, SYSTEM_PROGRAM_ID, UPGRADEABLE_LOADER_ID, anchor_key, pda};
use skilltrial_e2e::workspace_root;
use skilltrial_program as skilltrial;
use solana_clock::Clock;
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::Keypair;
use solana_program_test::{ProgramTest, ProgramTestContext, processor};
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction::Transaction;

use crate::native;

pub(crate) const FEE: u64 = 200_000;
pub(crate) const CAP: u64 = 50_000;
pub(crate) const MIN_DEADLINE: i64 = skilltrial::constants::MIN_DEADLINE_SECS;
pub(crate) const CANCEL_WINDOW: i64 = skilltrial::constants::CANCEL_SETTLE_WINDOW_SECS;

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
        owner: UPGRADEABLE_LOADER_ID,
        executable: false,
        rent_epoch: 0,
    }
}

pub(crate) struct Env {
    pub(crate) ctx: ProgramTestContext,
    pub(crate) admin: Keypair,
    pub(crate) runner: Keypair,
    pub(crate) user: Keypair,
    pub(crate) mint: Pubkey,
    pub(crate) cu: Vec<(String, u64)>,
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
pub(crate) fn native_layer() -> bool {
    match std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() {
        Ok("native") => true,
        Ok("sbf") | Err(_) => false,
        Ok(other) => panic!("SKILLTRIAL_PROGRAM_LAYER={other:?}: expected sbf or native"),
    }
}

pub(crate) fn layer_name() -> &'static str {
    if native_layer() {
        "NATIVE builtin (no sBPF toolchain), solana-program-test 4.2.2"
    } else {
        "sBPF .so, solana-program-test 4.2.2"
    }
}

pub(crate) async fn start() -> Env {
    // The admin is the program's upgrade authority: its ProgramData account is in genesis.
    let admin = Keypair::new();
    let mut pt = ProgramTest::default();
    pt.add_account(pda::program_data(), program_data_account(&admin.pubkey()));
    let ctx = if native_layer() {
        // prefer_bpf must be off before the program is added (SBF_OUT_DIR is set, so the
        // default would pick the .so).
        pt.prefer_bpf(false);
        pt.add_program("skilltrial", PROGRAM_ID, processor!(native::process));
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
        pt.add_program("skilltrial", PROGRAM_ID, None);
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

pub(crate) async fn fund(ctx: &ProgramTestContext, to: &Pubkey, lamports: u64) {
    let mut data = vec![2, 0, 0, 0];
    data.extend_from_slice(&lamports.to_le_bytes());
    let transfer = Instruction {
        program_id: SYSTEM_PROGRAM_ID,
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
    pub(crate) async fn send(
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
    /// only transaction fees left (docs/program.md: refund + usage + fees = escrow, and nothing else).
    pub(crate) async fn assert_conserved(&self) {
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

    pub(crate) async fn config_state(&self) -> skilltrial::state::Config {
        let account = self
            .ctx
            .banks_client
            .get_account(pda::config())
            .await
            .unwrap()
            .expect("the config exists");
        anchor_lang::AccountDeserialize::try_deserialize(&mut account.data.as_slice()).unwrap()
    }

    pub(crate) async fn run_state(&self, run: &Pubkey) -> skilltrial::state::Run {
        let account = self
            .ctx
            .banks_client
            .get_account(*run)
            .await
            .unwrap()
            .expect("the run exists");
        anchor_lang::AccountDeserialize::try_deserialize(&mut account.data.as_slice()).unwrap()
    }

    pub(crate) async fn lamports(&self, who: &Pubkey) -> u64 {
        self.ctx.banks_client.get_balance(*who).await.unwrap()
    }

    pub(crate) async fn now(&self) -> i64 {
        self.ctx
            .banks_client
            .get_sysvar::<Clock>()
            .await
            .unwrap()
            .unix_timestamp
    }

    pub(crate) async fn set_time(&mut self, unix: i64) {
        let mut clock: Clock = self.ctx.banks_client.get_sysvar().await.unwrap();
        clock.unix_timestamp = unix;
        self.ctx.set_sysvar(&clock);
    }

    pub(crate) async fn config_init(&mut self) {
        let admin = self.admin.insecure_clone();
        self.config_init_by(&admin).await.unwrap();
    }

    pub(crate) async fn config_init_by(&mut self, signer: &Keypair) -> Result<u64, String> {
        let args = ConfigInitArgs {
            runner: anchor_key(&self.runner.pubkey()),
            fee_per_trial: FEE,
            buyback_interval_secs: 6 * 3600,
            sktrial_mint: anchor_key(&self.mint),
        };
        let i = ix::config_init(&signer.pubkey(), args);
        self.send("config_init", vec![i], &[signer]).await
    }

    pub(crate) async fn open(
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

    pub(crate) async fn open_with_cap(
        &mut self,
        user: &Keypair,
        manifest: [u8; 32],
        trials: u16,
        cap: u64,
        escrow: u64,
        deadline: i64,
    ) -> Result<u64, String> {
        let args = RunOpenArgs {
            manifest_hash: manifest,
            planned_trials: trials,
            per_request_cap: cap,
            escrow,
            deadline,
        };
        let i = ix::run_open(&user.pubkey(), args);
        self.send("run_open", vec![i], &[user]).await
    }

    pub(crate) async fn settle(
        &mut self,
        signer: &Keypair,
        run: &Pubkey,
        charges: &[(u16, u64)],
    ) -> Result<u64, String> {
        let trials = charges
            .iter()
            .map(|&(index, usage)| TrialCharge { index, usage })
            .collect();
        let i = ix::run_settle(&signer.pubkey(), run, RunSettleArgs { trials });
        self.send(
            &format!("run_settle x{}", charges.len()),
            vec![i],
            &[signer],
        )
        .await
    }

    pub(crate) async fn cancel(&mut self, signer: &Keypair, run: &Pubkey) -> Result<u64, String> {
        let i = ix::run_cancel(&signer.pubkey(), run);
        self.send("run_cancel", vec![i], &[signer]).await
    }

    pub(crate) async fn finalize(
        &mut self,
        signer: &Keypair,
        user: &Pubkey,
        run: &Pubkey,
    ) -> Result<u64, String> {
        let i = ix::run_finalize(&signer.pubkey(), user, run, [7; 32]);
        self.send("run_finalize", vec![i], &[signer]).await
    }

    pub(crate) async fn refund(&mut self, signer: &Keypair, run: &Pubkey) -> Result<u64, String> {
        let i = ix::run_refund_expired(&signer.pubkey(), run);
        self.send("run_refund_expired", vec![i], &[signer]).await
    }

    pub(crate) async fn close(&mut self, signer: &Keypair, run: &Pubkey) -> Result<u64, String> {
        let i = ix::run_close(&signer.pubkey(), run);
        self.send("run_close", vec![i], &[signer]).await
    }
}

/// Asserts that the transaction was refused with exactly `expected`'s code, taken from the
/// program's (or Anchor's) own error enum, never counted by hand.
pub(crate) fn custom(result: Result<u64, String>, expected: impl Into<Refusal>) {
    let expected = expected.into();
    let code = expected.code();
    match result {
        Ok(_) => panic!("expected Custom({code}) ({expected}), the transaction succeeded"),
        Err(e) => assert!(
            e.contains(&format!("Custom({code})")),
            "expected Custom({code}) ({expected}), got {e}"
        ),
    }
}

pub(crate) fn upper(trials: u16) -> u64 {
    (CAP + FEE) * u64::from(trials)
}

/// Transaction fees `who` paid as fee payer for every executed transaction (5,000 lamports per
/// signature; the first signer pays).
pub(crate) fn tx_fees(env: &Env, who: &Pubkey) -> u64 {
    env.fees_paid.get(who).copied().unwrap_or(0)
}

pub(crate) fn print_cu(env: &Env) {
    println!("\ncompute units ({}):", layer_name());
    for (label, cu) in &env.cu {
        println!("  {label:<24} {cu:>8}");
    }
}

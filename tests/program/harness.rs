//! The test runtime: a solana-program-test bank with the program (sBPF `.so` or native), funded
//! admin, runner, payout and user keys, and `Env`, which sends the chain client's instructions,
//! records compute units and the fees the bank charged, and checks every transaction against an
//! expected-delta ledger: each account it names moved by exactly what the instruction's
//! arguments say (a refusal moves nothing but the fee).

use std::collections::{HashMap, HashSet};

use anchor_lang::Space;
use skilltrial_chain::error::Refusal;
use skilltrial_chain::ix::{
    self, BuybackRate, ConfigInitArgs, RunFinalizeArgs, RunOpenArgs, RunSettleArgs, SpendingLimit,
    TrialCharge,
};
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
/// The config's minimum deadline in these tests (the launch value: 75 minutes).
pub(crate) const MIN_DEADLINE: i64 = 75 * 60;
pub(crate) const CANCEL_WINDOW: i64 = skilltrial::constants::CANCEL_SETTLE_WINDOW_SECS;
/// The config's time lock in these tests: two days.
pub(crate) const TIME_LOCK: i64 = 2 * 24 * 3600;
/// The runner's spending limit in these tests: 10 SOL of usage per day.
pub(crate) const USAGE_LIMIT: u64 = 10_000_000_000;
pub(crate) const USAGE_PERIOD: i64 = 24 * 3600;
/// The buyback terms in these tests: at most 1 SOL per interval, at least 1 token per 1,000
/// lamports.
pub(crate) const MAX_BUYBACK: u64 = 1_000_000_000;
pub(crate) const RATE: BuybackRate = BuybackRate {
    tokens: 1,
    lamports: 1_000,
};
pub(crate) const INTERVAL: i64 = 6 * 3600;

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
    /// The runner's hot signing key.
    pub(crate) runner: Keypair,
    /// Where the runner's usage is paid (kept apart from the signing key).
    pub(crate) payout: Keypair,
    pub(crate) user: Keypair,
    pub(crate) mint: Pubkey,
    pub(crate) cu: Vec<(String, u64)>,
    /// Signatures already sent, so a repeated transaction waits for a fresh blockhash.
    sent: HashSet<String>,
    /// Transaction fees paid per fee payer, as the bank charged them.
    fees_paid: HashMap<Pubkey, u64>,
}

/// Every account's expected lamport change over one transaction (fees excluded: the harness
/// adds the bank's fee to the payer). Accounts not named must not change at all.
pub(crate) type Deltas = Vec<(Pubkey, i128)>;

/// The expected-delta ledger: every account in `before` changed by exactly its expected delta
/// (zero when not named). Pure, so a test can show it failing (tests/program/run.rs).
pub(crate) fn check_deltas(
    before: &HashMap<Pubkey, u64>,
    after: &HashMap<Pubkey, u64>,
    expected: &HashMap<Pubkey, i128>,
) -> Result<(), String> {
    let mut wrong = Vec::new();
    for (key, was) in before {
        let now = after.get(key).copied().unwrap_or(0);
        let actual = i128::from(now) - i128::from(*was);
        let want = expected.get(key).copied().unwrap_or(0);
        if actual != want {
            wrong.push(format!("{key}: moved {actual}, expected {want}"));
        }
    }
    for key in expected.keys() {
        if !before.contains_key(key) {
            wrong.push(format!(
                "{key}: expected a change but is not in the transaction"
            ));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        wrong.sort();
        Err(wrong.join("; "))
    }
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

/// A bank whose genesis `hook` may extend first (e.g. with test-only programs).
pub(crate) async fn start_with(hook: impl FnOnce(&mut ProgramTest)) -> Env {
    // The admin is the program's upgrade authority: its ProgramData account is in genesis.
    let admin = Keypair::new();
    let mut pt = ProgramTest::default();
    pt.add_account(pda::program_data(), program_data_account(&admin.pubkey()));
    hook(&mut pt);
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
        // build-sbf.sh stamps the .so with the hash of the inputs it was built from (sources,
        // manifests, lockfile, build script): a stale .so must never pass for the current program.
        let stamp = so.with_extension("so.src-sha256");
        let built_from = std::fs::read_to_string(&stamp).unwrap_or_default();
        assert_eq!(
            built_from.trim(),
            skilltrial_e2e::program_source_sha256().unwrap(),
            "{} was not built from the current program sources, manifests and lockfile (stamp {}): rebuild it with scripts/build-sbf.sh",
            so.display(),
            stamp.display()
        );
        // solana-program-test loads the .so from BPF_OUT_DIR, else SBF_OUT_DIR: both must lead to
        // the stamped file checked above (.cargo/config.toml sets SBF_OUT_DIR to target/deploy).
        assert!(
            std::env::var_os("BPF_OUT_DIR").is_none(),
            "BPF_OUT_DIR is set: the program test would load a .so other than the stamped one"
        );
        let out_dir = std::env::var_os("SBF_OUT_DIR").map(std::path::PathBuf::from);
        let same = |dir: &std::path::Path| {
            std::fs::canonicalize(dir.join("skilltrial.so")).ok() == std::fs::canonicalize(&so).ok()
        };
        assert!(
            out_dir.as_deref().is_some_and(same),
            "SBF_OUT_DIR ({out_dir:?}) does not hold {}: the program test would load another .so",
            so.display()
        );
        pt.prefer_bpf(true);
        pt.add_program("skilltrial", PROGRAM_ID, None);
        pt.start_with_context().await
    };
    let env = Env {
        ctx,
        admin,
        runner: Keypair::new(),
        payout: Keypair::new(),
        user: Keypair::new(),
        mint: Keypair::new().pubkey(),
        cu: Vec::new(),
        sent: HashSet::new(),
        fees_paid: HashMap::new(),
    };
    for who in [&env.admin, &env.runner, &env.payout, &env.user] {
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
    /// Sends one transaction and checks its lamports exactly. On success every account it names
    /// moved by exactly `expected` (plus the fee, from the payer); on a refusal nothing moved but
    /// the fee. Returns the custom error or Ok with the compute units, records compute units of
    /// the successes and the fee the bank charged every executed transaction.
    pub(crate) async fn send(
        &mut self,
        label: &str,
        ixs: Vec<Instruction>,
        signers: &[&Keypair],
        expected: Deltas,
    ) -> Result<u64, String> {
        self.send_logged(label, ixs, signers, expected).await.0
    }

    pub(crate) async fn account<T: anchor_lang::AccountDeserialize>(&self, key: &Pubkey) -> T {
        let account = self
            .ctx
            .banks_client
            .get_account(*key)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{key} exists"));
        T::try_deserialize(&mut account.data.as_slice()).unwrap()
    }

    pub(crate) async fn config_state(&self) -> skilltrial::state::Config {
        self.account(&pda::config()).await
    }

    pub(crate) async fn vault_state(&self) -> skilltrial::state::FeeVault {
        self.account(&pda::fee_vault()).await
    }

    pub(crate) async fn run_state(&self, run: &Pubkey) -> skilltrial::state::Run {
        self.account(run).await
    }

    pub(crate) async fn exists(&self, key: &Pubkey) -> bool {
        self.ctx
            .banks_client
            .get_account(*key)
            .await
            .unwrap()
            .is_some()
    }

    pub(crate) async fn lamports(&self, who: &Pubkey) -> u64 {
        self.ctx.banks_client.get_balance(*who).await.unwrap()
    }

    pub(crate) async fn rent(&self, space: usize) -> u64 {
        self.ctx
            .banks_client
            .get_rent()
            .await
            .unwrap()
            .minimum_balance(space)
    }

    /// Rent of a Run account (8-byte discriminator + its space).
    pub(crate) async fn run_rent(&self) -> u64 {
        self.rent(8 + skilltrial::state::Run::INIT_SPACE).await
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

    /// The config the tests start from (see the constants above).
    pub(crate) fn init_args(&self) -> ConfigInitArgs {
        ConfigInitArgs {
            runner: anchor_key(&self.runner.pubkey()),
            runner_payout: anchor_key(&self.payout.pubkey()),
            fee_per_trial: FEE,
            min_deadline_secs: MIN_DEADLINE,
            time_lock_secs: TIME_LOCK,
            usage_limit: SpendingLimit {
                amount: USAGE_LIMIT,
                period_secs: USAGE_PERIOD,
            },
            sktrial_mint: anchor_key(&self.mint),
            buyback_interval_secs: INTERVAL,
            max_buyback_lamports: MAX_BUYBACK,
            buyback_rate: RATE,
        }
    }

    pub(crate) async fn config_init(&mut self) {
        let admin = self.admin.insecure_clone();
        let args = self.init_args();
        self.config_init_with(&admin, args).await.unwrap();
    }

    /// `config_init` signed by `signer`: on success the signer paid the three accounts' rent.
    pub(crate) async fn config_init_with(
        &mut self,
        signer: &Keypair,
        args: ConfigInitArgs,
    ) -> Result<u64, String> {
        use skilltrial::state::{BuybackLog, Config, FeeVault};
        let rents = [
            (pda::config(), self.rent(8 + Config::INIT_SPACE).await),
            (pda::fee_vault(), self.rent(8 + FeeVault::INIT_SPACE).await),
            (pda::buyback_log(), self.rent(8 + BuybackLog::SPACE).await),
        ];
        let total: u64 = rents.iter().map(|r| r.1).sum();
        let mut expected: Deltas = rents.iter().map(|&(k, r)| (k, i128::from(r))).collect();
        expected.push((signer.pubkey(), -i128::from(total)));
        let i = ix::config_init(&signer.pubkey(), args);
        self.send("config_init", vec![i], &[signer], expected).await
    }

    /// The arguments of a run open at the config's current terms.
    pub(crate) fn open_args(
        &self,
        manifest: [u8; 32],
        trials: u16,
        cap: u64,
        escrow: u64,
        deadline: i64,
    ) -> RunOpenArgs {
        RunOpenArgs {
            manifest_hash: manifest,
            planned_trials: trials,
            per_request_cap: cap,
            escrow,
            deadline,
            expected_fee_per_trial: FEE,
            expected_runner: anchor_key(&self.runner.pubkey()),
        }
    }

    pub(crate) async fn open(
        &mut self,
        user: &Keypair,
        manifest: [u8; 32],
        trials: u16,
        escrow: u64,
        deadline: i64,
    ) -> Result<u64, String> {
        let args = self.open_args(manifest, trials, CAP, escrow, deadline);
        self.open_with(user, args).await
    }

    /// `run_open`: on success the user paid the escrow and the run's rent into the run.
    pub(crate) async fn open_with(
        &mut self,
        user: &Keypair,
        args: RunOpenArgs,
    ) -> Result<u64, String> {
        let run = pda::run(&user.pubkey(), &args.manifest_hash);
        let paid = i128::from(args.escrow) + i128::from(self.run_rent().await);
        let i = ix::run_open(&user.pubkey(), args);
        self.send(
            "run_open",
            vec![i],
            &[user],
            vec![(user.pubkey(), -paid), (run, paid)],
        )
        .await
    }

    /// The run's id, read from its account.
    pub(crate) async fn run_id(&self, run: &Pubkey) -> u64 {
        self.run_state(run).await.run_id
    }

    /// `run_settle` of `charges` with an evidence hash derived from them; on success the run
    /// paid exactly the usage to the payout address and the fees to the vault.
    pub(crate) async fn settle(
        &mut self,
        signer: &Keypair,
        run: &Pubkey,
        charges: &[(u16, u64)],
    ) -> Result<u64, String> {
        let run_id = if self.exists(run).await {
            self.run_id(run).await
        } else {
            0
        };
        let i = self.settle_ix(signer, run, run_id, charges);
        self.send_settle(signer, run, charges, vec![i]).await
    }

    /// The settle instruction for `charges` (evidence hash: `evidence_hash(charges)`).
    pub(crate) fn settle_ix(
        &self,
        signer: &Keypair,
        run: &Pubkey,
        run_id: u64,
        charges: &[(u16, u64)],
    ) -> Instruction {
        self.settle_ix_with(signer, run, run_id, evidence_hash(charges), charges)
    }

    /// The settle instruction for `charges` with an explicit evidence hash, paying the config's
    /// payout address.
    pub(crate) fn settle_ix_with(
        &self,
        signer: &Keypair,
        run: &Pubkey,
        run_id: u64,
        evidence: [u8; 32],
        charges: &[(u16, u64)],
    ) -> Instruction {
        let trials = charges
            .iter()
            .map(|&(index, usage)| TrialCharge { index, usage })
            .collect();
        let args = RunSettleArgs {
            expected_run_id: run_id,
            evidence_hash: evidence,
            trials,
        };
        ix::run_settle(&signer.pubkey(), run, &self.payout.pubkey(), args)
    }

    /// Sends settle instructions (and whatever follows them) expecting `charges` to be paid: the
    /// usage to the payout address, the fees to the vault, both out of the run.
    pub(crate) async fn send_settle(
        &mut self,
        signer: &Keypair,
        run: &Pubkey,
        charges: &[(u16, u64)],
        ixs: Vec<Instruction>,
    ) -> Result<u64, String> {
        let usage: u64 = charges.iter().map(|c| c.1).sum();
        let fees = FEE * charges.len() as u64;
        let expected = vec![
            (self.payout.pubkey(), i128::from(usage)),
            (pda::fee_vault(), i128::from(fees)),
            (*run, -i128::from(usage + fees)),
        ];
        self.send(
            &format!("run_settle x{}", charges.len()),
            ixs,
            &[signer],
            expected,
        )
        .await
    }

    pub(crate) async fn cancel(&mut self, signer: &Keypair, run: &Pubkey) -> Result<u64, String> {
        let i = ix::run_cancel(&signer.pubkey(), run);
        self.send("run_cancel", vec![i], &[signer], vec![]).await
    }

    /// `run_finalize` with report hash [7; 32]: moves no lamports (the refund is pulled).
    pub(crate) async fn finalize(&mut self, signer: &Keypair, run: &Pubkey) -> Result<u64, String> {
        let run_id = self.run_id(run).await;
        let i = self.finalize_ix(signer, run, run_id);
        self.send("run_finalize", vec![i], &[signer], vec![]).await
    }

    pub(crate) fn finalize_ix(&self, signer: &Keypair, run: &Pubkey, run_id: u64) -> Instruction {
        let args = RunFinalizeArgs {
            expected_run_id: run_id,
            report_hash: [7; 32],
        };
        ix::run_finalize(&signer.pubkey(), run, args)
    }

    /// What closing `run` pays its user, from the test's own books: the escrow less the usage
    /// and fees the test settled, plus the run's rent.
    pub(crate) async fn refund(
        &mut self,
        signer: &Keypair,
        run: &Pubkey,
        returned: u64,
    ) -> Result<u64, String> {
        let i = ix::run_refund_expired(&signer.pubkey(), run);
        let expected = vec![
            (signer.pubkey(), i128::from(returned)),
            (*run, -i128::from(returned)),
        ];
        self.send("run_refund_expired", vec![i], &[signer], expected)
            .await
    }

    /// `run_close`: on success `returned` (remainder + rent, from the test's own books) moved
    /// from the run to the signer.
    pub(crate) async fn close(
        &mut self,
        signer: &Keypair,
        run: &Pubkey,
        returned: u64,
    ) -> Result<u64, String> {
        let i = ix::run_close(&signer.pubkey(), run);
        let expected = vec![
            (signer.pubkey(), i128::from(returned)),
            (*run, -i128::from(returned)),
        ];
        self.send("run_close", vec![i], &[signer], expected).await
    }
}

/// The evidence hash the tests settle a batch with when they do not build evidence records:
/// any 32 bytes bind a batch for the program; these are a hash of the charges, so each batch's
/// differs.
pub(crate) fn evidence_hash(charges: &[(u16, u64)]) -> [u8; 32] {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    for &(index, usage) in charges {
        hasher.update(index.to_le_bytes());
        hasher.update(usage.to_le_bytes());
    }
    hasher.finalize().into()
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

/// System `Transfer` of `lamports` from `from` to `to`.
pub(crate) fn system_transfer(from: &Pubkey, to: &Pubkey, lamports: u64) -> Instruction {
    let mut data = vec![2, 0, 0, 0];
    data.extend_from_slice(&lamports.to_le_bytes());
    Instruction {
        program_id: SYSTEM_PROGRAM_ID,
        accounts: vec![AccountMeta::new(*from, true), AccountMeta::new(*to, false)],
        data,
    }
}

pub(crate) fn upper(trials: u16) -> u64 {
    (CAP + FEE) * u64::from(trials)
}

/// Transaction fees `who` paid as fee payer for every executed transaction, as the bank charged
/// them (`get_fee_for_message`; the first signer pays).
pub(crate) fn tx_fees(env: &Env, who: &Pubkey) -> u64 {
    env.fees_paid.get(who).copied().unwrap_or(0)
}

pub(crate) fn print_cu(env: &Env) {
    println!("\ncompute units ({}):", layer_name());
    for (label, cu) in &env.cu {
        println!("  {label:<24} {cu:>8}");
    }
}

impl Env {
    /// `send`, also returning the transaction's log messages (where its events are, read with
    /// [`events`]). Every transaction goes through here: the exact-delta check, the fee and the
    /// compute-unit books. The same signed message twice would be refused as already processed,
    /// so a repeat waits for the next blockhash and is judged by the program.
    pub(crate) async fn send_logged(
        &mut self,
        label: &str,
        ixs: Vec<Instruction>,
        signers: &[&Keypair],
        expected: Deltas,
    ) -> (Result<u64, String>, Vec<String>) {
        let payer = signers[0].pubkey();
        let mut before = HashMap::new();
        for key in ixs
            .iter()
            .flat_map(|i| i.accounts.iter().map(|m| m.pubkey))
            .chain(signers.iter().map(|k| k.pubkey()))
        {
            if let std::collections::hash_map::Entry::Vacant(slot) = before.entry(key) {
                slot.insert(self.lamports(&key).await);
            }
        }
        let mut blockhash = self.ctx.banks_client.get_latest_blockhash().await.unwrap();
        let mut tx = Transaction::new_signed_with_payer(&ixs, Some(&payer), signers, blockhash);
        while !self.sent.insert(tx.signatures[0].to_string()) {
            blockhash = self.ctx.get_new_latest_blockhash().await.unwrap();
            tx = Transaction::new_signed_with_payer(&ixs, Some(&payer), signers, blockhash);
        }
        let fee = self
            .ctx
            .banks_client
            .get_fee_for_message(tx.message.clone())
            .await
            .unwrap()
            .expect("the bank prices the message");
        let result = self
            .ctx
            .banks_client
            .process_transaction_with_metadata(tx)
            .await
            .unwrap();
        let (cu, logs) = result.metadata.as_ref().map_or((0, Vec::new()), |m| {
            (m.compute_units_consumed, m.log_messages.clone())
        });
        let executed = result.metadata.is_some();
        if executed {
            *self.fees_paid.entry(payer).or_default() += fee;
        }
        let mut after = HashMap::new();
        for key in before.keys() {
            after.insert(*key, self.lamports(key).await);
        }
        let mut want: HashMap<Pubkey, i128> = HashMap::new();
        if executed {
            *want.entry(payer).or_default() -= i128::from(fee);
        }
        if result.result.is_ok() {
            for (key, delta) in expected {
                *want.entry(key).or_default() += delta;
            }
        }
        if let Err(wrong) = check_deltas(&before, &after, &want) {
            panic!(
                "{label}: lamports moved other than expected ({:?}): {wrong}",
                result.result
            );
        }
        let outcome = match result.result {
            Ok(()) => {
                self.cu.push((label.to_owned(), cu));
                Ok(cu)
            }
            Err(e) => Err(format!("{e:?}")),
        };
        (outcome, logs)
    }
}

/// Every event of type `T` in `logs`, in order: `Program data: <base64>` lines whose bytes start
/// with `T`'s 8-byte discriminator, the rest borsh (the whole of it: a longer or shorter event is
/// an error). Only the sBPF layer logs events: off-chain, anchor-lang's `sol_log_data` does
/// nothing, so on the native layer this finds none.
pub(crate) fn events<T>(logs: &[String]) -> Vec<T>
where
    T: anchor_lang::Discriminator + anchor_lang::AnchorDeserialize,
{
    use base64::Engine as _;
    logs.iter()
        .filter_map(|line| line.strip_prefix("Program data: "))
        .filter_map(|payload| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(payload)
                .unwrap_or_else(|e| panic!("event data {payload:?} is not base64: {e}"));
            let body = bytes.strip_prefix(T::DISCRIMINATOR)?;
            Some(T::try_from_slice(body).unwrap_or_else(|e| panic!("event body: {e}")))
        })
        .collect()
}

pub(crate) async fn start() -> Env {
    start_with(|_| {}).await
}

impl Env {
    /// The log lines of `ixs` signed by `signers` (the first pays), as the bank executes them on
    /// its current state; the transaction is simulated, not committed (send it with `send`).
    pub(crate) async fn simulate_logs(
        &mut self,
        ixs: &[Instruction],
        signers: &[&Keypair],
    ) -> Result<Vec<String>, String> {
        let blockhash = self.ctx.banks_client.get_latest_blockhash().await.unwrap();
        let tx =
            Transaction::new_signed_with_payer(ixs, Some(&signers[0].pubkey()), signers, blockhash);
        let sim = self
            .ctx
            .banks_client
            .simulate_transaction(tx)
            .await
            .unwrap();
        let logs = sim.simulation_details.map(|d| d.logs).unwrap_or_default();
        match sim.result {
            Some(Ok(())) => Ok(logs),
            other => Err(format!("{other:?}: {logs:?}")),
        }
    }
}

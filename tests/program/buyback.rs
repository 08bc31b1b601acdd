//! $SKTRIAL buybacks against the real SPL Token and Token-2022 programs that solana-program-test
//! loads: the cap and the floor rate at their exact edges, the interval to the second, donations
//! that cannot break the books, who may buy back, which burn counts (top-level, at `burn_index`,
//! of the runner's own account, by the runner, through the account's token program), one burn
//! per buyback, and the log and event each buyback leaves.
//!
//! The token instructions are encoded by hand from the SPL Token wire format (tag byte, then
//! little-endian fields): the interface crate speaks another solana-pubkey major version. They
//! are test fixtures, not the program's instructions, so they stay here rather than in the
//! chain client. Every refusal is checked by the harness to move nothing but the fee.

use skilltrial_chain::error::{AnchorError, SkillTrialError as E};
use skilltrial_chain::ix::{
    self, BuybackExecuteArgs, BuybackRate, ConfigInitArgs, ConfigUpdateArgs,
};
use skilltrial_chain::{SYSTEM_PROGRAM_ID, anchor_key, pda};
use skilltrial_program::events::BuybackExecuted;
use skilltrial_program::state::FeeVault;
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::harness::{
    Env, FEE, INTERVAL, MIN_DEADLINE, RATE, TIME_LOCK, custom, events, fund, native_layer,
    print_cu, start, start_with, system_transfer, tx_fees, upper,
};
use crate::helper_program::{self, forwarded, to_noop};

const TOKEN: Pubkey = Pubkey::from_str_const("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
const TOKEN_2022: Pubkey = Pubkey::from_str_const("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb");
const DECIMALS: u8 = 6;
/// The runner's $SKTRIAL holding in these tests.
const SUPPLY: u64 = 1_000_000_000_000;

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
        program_id: SYSTEM_PROGRAM_ID,
        accounts: vec![AccountMeta::new(*from, true), AccountMeta::new(*new, true)],
        data,
    }
}

fn token_ix(
    program: &Pubkey,
    tag: u8,
    fields: &[&[u8]],
    accounts: Vec<AccountMeta>,
) -> Instruction {
    let mut data = vec![tag];
    for f in fields {
        data.extend_from_slice(f);
    }
    Instruction {
        program_id: *program,
        accounts,
        data,
    }
}

fn burn_accounts(account: &Pubkey, mint: &Pubkey, authority: &Pubkey) -> Vec<AccountMeta> {
    vec![
        AccountMeta::new(*account, false),
        AccountMeta::new(*mint, false),
        AccountMeta::new_readonly(*authority, true),
    ]
}

/// SPL Token `BurnChecked` (tag 15) through `program`.
fn burn_checked_in(
    program: &Pubkey,
    account: &Pubkey,
    mint: &Pubkey,
    authority: &Pubkey,
    amount: u64,
) -> Instruction {
    let accounts = burn_accounts(account, mint, authority);
    token_ix(program, 15, &[&amount.to_le_bytes(), &[DECIMALS]], accounts)
}

fn burn_checked(account: &Pubkey, mint: &Pubkey, authority: &Pubkey, amount: u64) -> Instruction {
    burn_checked_in(&TOKEN, account, mint, authority, amount)
}

/// SPL Token `Burn` (tag 8): no decimals.
fn burn(account: &Pubkey, mint: &Pubkey, authority: &Pubkey, amount: u64) -> Instruction {
    let accounts = burn_accounts(account, mint, authority);
    token_ix(&TOKEN, 8, &[&amount.to_le_bytes()], accounts)
}

/// The least `tokens_burned` the config's rate accepts for `lamports_in`, from the test's own
/// arithmetic: ⌈lamports_in × rate.tokens / rate.lamports⌉.
fn floor_tokens(lamports_in: u64, rate: BuybackRate) -> u64 {
    let floor =
        (u128::from(lamports_in) * u128::from(rate.tokens)).div_ceil(u128::from(rate.lamports));
    u64::try_from(floor).unwrap()
}

impl Env {
    /// A real $SKTRIAL mint (authority: the runner) and a runner token account holding `supply`.
    pub(crate) async fn make_mint(&mut self, supply: u64) -> (Pubkey, Pubkey) {
        self.make_mint_in(&TOKEN, supply).await
    }

    /// A mint of token program `program` (authority: the runner) and a runner token account
    /// holding `supply`.
    pub(crate) async fn make_mint_in(&mut self, program: &Pubkey, supply: u64) -> (Pubkey, Pubkey) {
        let mint = Keypair::new();
        let runner = self.runner.insecure_clone();
        let rent = self.rent(82).await;
        let ixs = vec![
            create_account(&runner.pubkey(), &mint.pubkey(), rent, 82, program),
            // InitializeMint2 { decimals, mint_authority, freeze_authority: None }
            token_ix(
                program,
                20,
                &[&[DECIMALS], runner.pubkey().as_ref(), &[0]],
                vec![AccountMeta::new(mint.pubkey(), false)],
            ),
        ];
        let expected = vec![
            (runner.pubkey(), -i128::from(rent)),
            (mint.pubkey(), i128::from(rent)),
        ];
        self.send("token mint", ixs, &[&runner, &mint], expected)
            .await
            .unwrap();
        let holding = self
            .token_account(program, &mint.pubkey(), &runner.pubkey(), supply)
            .await;
        (mint.pubkey(), holding)
    }

    /// A token account of `mint` owned by `owner`, holding `amount` minted by the runner (the
    /// mint authority), paid for by the runner.
    pub(crate) async fn token_account(
        &mut self,
        program: &Pubkey,
        mint: &Pubkey,
        owner: &Pubkey,
        amount: u64,
    ) -> Pubkey {
        let account = Keypair::new();
        let runner = self.runner.insecure_clone();
        let rent = self.rent(165).await;
        let ixs = vec![
            create_account(&runner.pubkey(), &account.pubkey(), rent, 165, program),
            // InitializeAccount3 { owner }
            token_ix(
                program,
                18,
                &[owner.as_ref()],
                vec![
                    AccountMeta::new(account.pubkey(), false),
                    AccountMeta::new_readonly(*mint, false),
                ],
            ),
            // MintTo { amount }
            token_ix(
                program,
                7,
                &[&amount.to_le_bytes()],
                vec![
                    AccountMeta::new(*mint, false),
                    AccountMeta::new(account.pubkey(), false),
                    AccountMeta::new_readonly(runner.pubkey(), true),
                ],
            ),
        ];
        let expected = vec![
            (runner.pubkey(), -i128::from(rent)),
            (account.pubkey(), i128::from(rent)),
        ];
        self.send("token account", ixs, &[&runner, &account], expected)
            .await
            .unwrap();
        account.pubkey()
    }

    /// The buyback log, read in place (a zero-copy account: its bytes after the discriminator).
    pub(crate) async fn buyback_log(&self) -> skilltrial_program::state::BuybackLog {
        let account = self
            .ctx
            .banks_client
            .get_account(pda::buyback_log())
            .await
            .unwrap()
            .unwrap();
        *bytemuck::from_bytes(&account.data[8..8 + skilltrial_program::state::BuybackLog::SPACE])
    }

    /// The mint's supply (SPL Token Mint layout: COption<Pubkey> authority, then u64 supply).
    pub(crate) async fn supply(&self, mint: &Pubkey) -> u64 {
        let account = self
            .ctx
            .banks_client
            .get_account(*mint)
            .await
            .unwrap()
            .unwrap();
        u64::from_le_bytes(account.data[36..44].try_into().unwrap())
    }

    pub(crate) fn buyback_ix(
        &self,
        token_account: &Pubkey,
        lamports_in: u64,
        tokens_burned: u64,
        burn_index: u16,
    ) -> Instruction {
        buyback_ix_as(
            &self.runner.pubkey(),
            token_account,
            lamports_in,
            tokens_burned,
            burn_index,
        )
    }

    /// A buyback from `token_account` followed by `extra` (its burn is expected at index 1);
    /// on success exactly `lamports_in` moved from the vault to the runner.
    pub(crate) async fn buyback(
        &mut self,
        token_account: &Pubkey,
        extra: Vec<Instruction>,
        lamports_in: u64,
        tokens_burned: u64,
    ) -> Result<u64, String> {
        let ix = self.buyback_ix(token_account, lamports_in, tokens_burned, 1);
        let mut ixs = vec![ix];
        ixs.extend(extra);
        self.send_buyback(ixs, lamports_in).await
    }

    /// Sends `ixs` signed by the runner, expecting `lamports_in` to move from the vault to it.
    pub(crate) async fn send_buyback(
        &mut self,
        ixs: Vec<Instruction>,
        lamports_in: u64,
    ) -> Result<u64, String> {
        let runner = self.runner.insecure_clone();
        self.send_buyback_as(&[&runner], ixs, lamports_in).await
    }

    /// Sends `ixs` signed by `signers` (the first pays and receives), expecting `lamports_in` to
    /// move from the vault to the first signer.
    pub(crate) async fn send_buyback_as(
        &mut self,
        signers: &[&Keypair],
        ixs: Vec<Instruction>,
        lamports_in: u64,
    ) -> Result<u64, String> {
        let expected = vec![
            (pda::fee_vault(), -i128::from(lamports_in)),
            (signers[0].pubkey(), i128::from(lamports_in)),
        ];
        self.send("buyback_execute + burn", ixs, signers, expected)
            .await
    }
}

fn buyback_ix_as(
    runner: &Pubkey,
    token_account: &Pubkey,
    lamports_in: u64,
    tokens_burned: u64,
    burn_index: u16,
) -> Instruction {
    let args = BuybackExecuteArgs {
        lamports_in,
        tokens_burned,
        burn_index,
    };
    ix::buyback_execute(runner, token_account, args)
}

/// A configured program (its $SKTRIAL mint of token program `program`, config terms tweaked by
/// `tweak`) whose vault holds the fees of `trials` settled trials; returns the mint, the
/// runner's holding of `SUPPLY` and the fees.
async fn funded(
    mut env: Env,
    program: &Pubkey,
    trials: u16,
    tweak: impl FnOnce(&mut ConfigInitArgs),
) -> (Env, Pubkey, Pubkey, u64) {
    let (mint, holding) = env.make_mint_in(program, SUPPLY).await;
    env.mint = mint;
    let mut args = env.init_args();
    tweak(&mut args);
    let admin = env.admin.insecure_clone();
    env.config_init_with(&admin, args).await.unwrap();
    let (user, runner) = (env.user.insecure_clone(), env.runner.insecure_clone());
    let manifest = [9u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE + 60;
    env.open(&user, manifest, trials, upper(trials), deadline)
        .await
        .unwrap();
    let charges: Vec<(u16, u64)> = (0..trials).map(|i| (i, 1_000)).collect();
    env.settle(&runner, &run, &charges).await.unwrap();
    let fees = FEE * u64::from(trials);
    assert_eq!(env.vault_state().await.total_fees, fees);
    (env, mint, holding, fees)
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
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE + 60;
    env.open(&user, manifest, 10, upper(10), deadline)
        .await
        .unwrap();
    let charges: Vec<(u16, u64)> = (0..10).map(|i| (i, 1_000)).collect();
    env.settle(&runner, &run, &charges).await.unwrap();
    env.finalize(&runner, &run).await.unwrap();
    let fees = FEE * 10;
    // The floor rate: 1 token per 1,000 lamports.
    let tokens = fees / 1_000;
    let vault_before = env.lamports(&pda::fee_vault()).await;

    // No burn, a burn of another amount, a burn of another mint: refused.
    custom(
        env.buyback(&holding, vec![], fees, tokens).await,
        E::BurnMissing,
    );
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(&holding, &mint, &runner.pubkey(), tokens - 1)],
            fees,
            tokens,
        )
        .await,
        E::BurnMissing,
    );
    let (other_mint, other_holding) = env.make_mint(1_000_000).await;
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(
                &other_holding,
                &other_mint,
                &runner.pubkey(),
                tokens,
            )],
            fees,
            tokens,
        )
        .await,
        E::BurnMissing,
    );
    // More than the fees not yet released: refused.
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(&holding, &mint, &runner.pubkey(), tokens + 1)],
            fees + 1,
            tokens + 1,
        )
        .await,
        E::FeeVaultShort,
    );

    let runner_before = env.lamports(&runner.pubkey()).await;
    let paid_before = tx_fees(&env, &runner.pubkey());
    env.buyback(
        &holding,
        vec![burn_checked(&holding, &mint, &runner.pubkey(), tokens)],
        fees,
        tokens,
    )
    .await
    .unwrap();
    assert_eq!(
        env.supply(&mint).await,
        1_000_000_000 - tokens,
        "the burn happened in the same transaction"
    );
    assert_eq!(vault_before - env.lamports(&pda::fee_vault()).await, fees);
    let tx_fee = tx_fees(&env, &runner.pubkey()) - paid_before;
    assert_eq!(
        env.lamports(&runner.pubkey()).await + tx_fee - runner_before,
        fees
    );

    // Once per interval: refused until six hours have passed.
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(&holding, &mint, &runner.pubkey(), 1)],
            1,
            1,
        )
        .await,
        E::BuybackTooSoon,
    );
    let later = env.now().await + 6 * 3600;
    env.set_time(later).await;
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(&holding, &mint, &runner.pubkey(), 1)],
            1_000,
            1,
        )
        .await,
        E::FeeVaultShort,
    );

    let vault = env.vault_state().await;
    assert_eq!(
        (
            vault.total_fees,
            vault.total_bought_back,
            vault.total_burned
        ),
        (fees, fees, tokens)
    );
    let log = env.buyback_log().await;
    assert_eq!((log.count, log.next), (1, 1));
    let entry = log.entries[0];
    assert_eq!(
        (
            entry.lamports_in,
            entry.tokens_burned,
            entry.burn_index,
            entry.token_account
        ),
        (fees, tokens, 1, holding),
        "the buyback is logged with the account its burn came from"
    );
    print_cu(&env);
}

/// H-1: one buyback releases at most `max_buyback_lamports` (the cap accepted, one lamport more
/// refused) and must burn at least the floor rate, compared in `u128`: at this rate the products
/// exceed `u64::MAX`, and the least accepted burn is a rounded-up quotient (one token less is
/// refused, though floor division would accept it).
#[tokio::test(flavor = "current_thread")]
async fn the_cap_and_the_floor_rate_hold_at_their_exact_edges_in_u128() {
    let cap = 1_500_000;
    let rate = BuybackRate {
        tokens: 20_000_000_000_003,
        lamports: 1_000_000_000,
    };
    let (mut env, mint, holding, fees) = funded(start().await, &TOKEN, 20, |args| {
        args.max_buyback_lamports = cap;
        args.buyback_rate = rate;
    })
    .await;
    // The vault could pay more than the cap: the cap, not the books, refuses cap + 1.
    assert!(fees > cap + 1);
    let runner = env.runner.pubkey();
    let floor = u128::from(cap) * u128::from(rate.tokens);
    assert!(floor > u128::from(u64::MAX), "the rate check needs u128");
    let need = floor_tokens(cap, rate);
    assert_eq!(need, 30_000_000_001, "⌈1.5e6 × (2e13 + 3) / 1e9⌉");
    assert!(u128::from(need - 1) * u128::from(rate.lamports) > u128::from(u64::MAX));

    let above = floor_tokens(cap + 1, rate);
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(&holding, &mint, &runner, above)],
            cap + 1,
            above,
        )
        .await,
        E::BuybackAboveCap,
    );
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(&holding, &mint, &runner, need - 1)],
            cap,
            need - 1,
        )
        .await,
        E::BuybackBelowRate,
    );
    assert_eq!(env.supply(&mint).await, SUPPLY, "refused burns are undone");
    env.buyback(
        &holding,
        vec![burn_checked(&holding, &mint, &runner, need)],
        cap,
        need,
    )
    .await
    .unwrap();
    assert_eq!(env.supply(&mint).await, SUPPLY - need);
    let vault = env.vault_state().await;
    assert_eq!(
        (
            vault.total_fees,
            vault.total_bought_back,
            vault.total_burned
        ),
        (fees, cap, need)
    );
}

/// The interval holds to the second (the second buyback at exactly `last + interval` accepted,
/// one second earlier refused), and a buyback of nothing, or for nothing, is refused.
#[tokio::test(flavor = "current_thread")]
async fn the_interval_is_exact_and_an_empty_buyback_is_refused() {
    let (mut env, mint, holding, _) = funded(start().await, &TOKEN, 10, |_| {}).await;
    let runner = env.runner.pubkey();
    let one = |n| burn_checked(&holding, &mint, &runner, n);

    custom(
        env.buyback(&holding, vec![one(1)], 0, 1).await,
        E::ZeroBuyback,
    );
    custom(
        env.buyback(&holding, vec![one(0)], 1_000, 0).await,
        E::ZeroBuyback,
    );

    let t0 = env.now().await + 10;
    env.set_time(t0).await;
    env.buyback(&holding, vec![one(1)], 1_000, 1).await.unwrap();
    assert_eq!(env.vault_state().await.last_buyback_ts, t0);
    env.set_time(t0 + INTERVAL - 1).await;
    custom(
        env.buyback(&holding, vec![one(1)], 1_000, 1).await,
        E::BuybackTooSoon,
    );
    env.set_time(t0 + INTERVAL).await;
    env.buyback(&holding, vec![one(1)], 1_000, 1).await.unwrap();
    let vault = env.vault_state().await;
    assert_eq!(
        (vault.last_buyback_ts, vault.total_bought_back),
        (t0 + INTERVAL, 2_000)
    );
}

/// The burn index and the burn's bytes at their extremes: `burn_index = u16::MAX` (past any
/// transaction) and a burn instruction with no data, only its tag, or an amount of zero are each
/// refused with `BurnMissing` before the token program runs, and nothing moves.
#[tokio::test(flavor = "current_thread")]
async fn a_burn_index_at_u16_max_and_an_empty_burn_are_refused() {
    let (mut env, mint, holding, _) = funded(start().await, &TOKEN, 10, |_| {}).await;
    let me = env.runner.pubkey();
    let supply = env.supply(&mint).await;
    let good = burn_checked(&holding, &mint, &me, 1);
    let ixs = vec![env.buyback_ix(&holding, 1_000, 1, u16::MAX), good.clone()];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);
    for data in [vec![], vec![15], vec![8]] {
        let empty = Instruction {
            data,
            ..good.clone()
        };
        let ixs = vec![env.buyback_ix(&holding, 1_000, 1, 1), empty];
        custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);
    }
    let zero = burn_checked(&holding, &mint, &me, 0);
    let ixs = vec![env.buyback_ix(&holding, 1_000, 1, 1), zero];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);
    assert_eq!(env.supply(&mint).await, supply, "nothing burned");
    assert_eq!(env.vault_state().await.total_bought_back, 0);
}

/// L-2: lamports donated to the fee vault change nothing: a buyback may release exactly the
/// unreleased fees and not a lamport more though the balance would cover it; the books are the
/// test's; the donation stays in the vault as a surplus.
#[tokio::test(flavor = "current_thread")]
async fn donations_neither_break_buybacks_nor_can_be_bought_back() {
    let (mut env, mint, holding, fees) = funded(start().await, &TOKEN, 10, |_| {}).await;
    let (user, runner) = (env.user.insecure_clone(), env.runner.pubkey());
    let vault = pda::fee_vault();
    let donation = 777_777;
    env.send(
        "donation",
        vec![system_transfer(&user.pubkey(), &vault, donation)],
        &[&user],
        vec![
            (user.pubkey(), -i128::from(donation)),
            (vault, i128::from(donation)),
        ],
    )
    .await
    .unwrap();
    let rent = env
        .rent(8 + <FeeVault as anchor_lang::Space>::INIT_SPACE)
        .await;
    assert_eq!(env.lamports(&vault).await, rent + fees + donation);

    let more = floor_tokens(fees + 1, RATE);
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(&holding, &mint, &runner, more)],
            fees + 1,
            more,
        )
        .await,
        E::FeeVaultShort,
    );
    let tokens = floor_tokens(fees, RATE);
    env.buyback(
        &holding,
        vec![burn_checked(&holding, &mint, &runner, tokens)],
        fees,
        tokens,
    )
    .await
    .unwrap();
    let books = env.vault_state().await;
    assert_eq!(
        (
            books.total_fees,
            books.total_bought_back,
            books.total_burned
        ),
        (fees, fees, tokens)
    );
    assert_eq!(
        env.lamports(&vault).await,
        rent + donation,
        "the surplus stays"
    );

    // Next interval: the surplus is not fees, so not even one lamport of it is released.
    let later = env.now().await + INTERVAL;
    env.set_time(later).await;
    custom(
        env.buyback(
            &holding,
            vec![burn_checked(&holding, &mint, &runner, 1)],
            1_000,
            1,
        )
        .await,
        E::FeeVaultShort,
    );
}

/// Only the config's runner buys back: a stranger with its own $SKTRIAL, the old runner after a
/// rotation and a revoked runner are refused by `has_one` (the new runner's buyback in between
/// shows the refusals are about the key).
#[tokio::test(flavor = "current_thread")]
async fn only_the_configs_runner_buys_back() {
    let (mut env, mint, holding, _) = funded(start().await, &TOKEN, 10, |_| {}).await;
    let (admin, runner) = (env.admin.insecure_clone(), env.runner.insecure_clone());
    let (stranger, next) = (Keypair::new(), Keypair::new());
    for k in [&stranger, &next] {
        fund(&env.ctx, &k.pubkey(), 1_000_000_000).await;
    }
    let theirs = env
        .token_account(&TOKEN, &mint, &stranger.pubkey(), 1_000)
        .await;
    let nexts = env
        .token_account(&TOKEN, &mint, &next.pubkey(), 1_000)
        .await;
    let own = |who: &Keypair, account: &Pubkey| {
        vec![
            buyback_ix_as(&who.pubkey(), account, 1_000, 1, 1),
            burn_checked(account, &mint, &who.pubkey(), 1),
        ]
    };

    custom(
        env.send_buyback_as(&[&stranger], own(&stranger, &theirs), 1_000)
            .await,
        AnchorError::ConstraintHasOne,
    );

    let appoint = crate::config::appointment(&env, &next);
    env.config_propose(&admin, appoint).await.unwrap();
    let at = env.now().await + TIME_LOCK;
    env.set_time(at).await;
    env.config_apply(&admin).await.unwrap();
    custom(
        env.send_buyback_as(&[&runner], own(&runner, &holding), 1_000)
            .await,
        AnchorError::ConstraintHasOne,
    );
    env.send_buyback_as(&[&next], own(&next, &nexts), 1_000)
        .await
        .unwrap();

    let revoke = ConfigUpdateArgs {
        revoke_runner: true,
        ..ConfigUpdateArgs::default()
    };
    env.config_update(&admin, revoke).await.unwrap();
    let later = env.now().await + INTERVAL;
    env.set_time(later).await;
    custom(
        env.send_buyback_as(&[&next], own(&next, &nexts), 1_000)
            .await,
        AnchorError::ConstraintHasOne,
    );
    assert_eq!(env.vault_state().await.total_bought_back, 1_000);
}

/// The burn is the top-level instruction at `burn_index`, after the buyback, of the token
/// program that owns the runner's token account, burning from that account with the runner as
/// authority. Each substitution is refused with its exact error; a plain `Burn` is accepted.
#[tokio::test(flavor = "current_thread")]
async fn only_a_later_top_level_burn_from_the_runners_account_by_the_runner_counts() {
    let (mut env, mint, holding, _) =
        funded(start_with(helper_program::add).await, &TOKEN, 10, |_| {}).await;
    let runner = env.runner.insecure_clone();
    let me = runner.pubkey();
    let at = |env: &Env, index: u16| env.buyback_ix(&holding, 1_000, 1, index);
    let good = burn_checked(&holding, &mint, &me, 1);

    // Before the buyback, at its own index, past the last instruction.
    let ixs = vec![good.clone(), at(&env, 0)];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);
    let ixs = vec![at(&env, 0), good.clone()];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);
    let ixs = vec![at(&env, 2), good.clone()];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);

    // From another of the runner's own accounts than the one the buyback names.
    let spare = env.token_account(&TOKEN, &mint, &me, 1_000).await;
    // (Minted before the supply is read.)
    let stranger = Keypair::new();
    fund(&env.ctx, &stranger.pubkey(), 1_000_000_000).await;
    let theirs = env
        .token_account(&TOKEN, &mint, &stranger.pubkey(), 1_000)
        .await;
    let supply = env.supply(&mint).await;
    let ixs = vec![at(&env, 1), burn_checked(&spare, &mint, &me, 1)];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);

    // By a delegate the runner approved (the token program would accept its burn).
    let delegate = Keypair::new();
    fund(&env.ctx, &delegate.pubkey(), 1_000_000_000).await;
    let approve = token_ix(
        &TOKEN,
        4,
        &[&1_000u64.to_le_bytes()],
        vec![
            AccountMeta::new(holding, false),
            AccountMeta::new_readonly(delegate.pubkey(), false),
            AccountMeta::new_readonly(me, true),
        ],
    );
    env.send("approve", vec![approve], &[&runner], vec![])
        .await
        .unwrap();
    let ixs = vec![
        at(&env, 1),
        burn_checked(&holding, &mint, &delegate.pubkey(), 1),
    ];
    custom(
        env.send_buyback_as(&[&runner, &delegate], ixs, 1_000).await,
        E::BurnMissing,
    );

    // Burn-shaped data (tag 15, the amount, the right accounts) sent to a program that is not a
    // token program burns nothing.
    let ixs = vec![at(&env, 1), to_noop(good.clone())];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);

    // A real burn, one level down (a CPI from another program): only top-level burns count.
    let inner = forwarded(good.clone());
    assert_eq!(env.supply(&mint).await, supply, "no refused burn stayed");
    env.send("forwarded burn", vec![inner.clone()], &[&runner], vec![])
        .await
        .unwrap();
    assert_eq!(env.supply(&mint).await, supply - 1, "the CPI really burns");
    let ixs = vec![at(&env, 1), inner];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);

    // Token accounts that are not the runner's $SKTRIAL: someone else's, another mint's, and
    // one with the right bytes owned by a program that is not a token program.
    let ixs = vec![
        env.buyback_ix(&theirs, 1_000, 1, 1),
        burn_checked(&theirs, &mint, &stranger.pubkey(), 1),
    ];
    custom(
        env.send_buyback_as(&[&runner, &stranger], ixs, 1_000).await,
        E::NotRunnersTokenAccount,
    );
    let (other_mint, other_holding) = env.make_mint(1_000).await;
    let ixs = vec![
        env.buyback_ix(&other_holding, 1_000, 1, 1),
        burn_checked(&other_holding, &other_mint, &me, 1),
    ];
    custom(
        env.send_buyback(ixs, 1_000).await,
        E::NotRunnersTokenAccount,
    );
    let fake = Keypair::new().pubkey();
    let real = env
        .ctx
        .banks_client
        .get_account(holding)
        .await
        .unwrap()
        .unwrap();
    let copy = solana_account::Account {
        owner: helper_program::NOOP,
        ..real
    };
    env.ctx
        .set_account(&fake, &solana_account::AccountSharedData::from(copy));
    // Its "burn" goes to the program that owns it, as a real one would.
    let ixs = vec![
        env.buyback_ix(&fake, 1_000, 1, 1),
        to_noop(burn_checked(&fake, &mint, &me, 1)),
    ];
    custom(
        env.send_buyback(ixs, 1_000).await,
        E::NotRunnersTokenAccount,
    );

    assert_eq!(
        env.supply(&mint).await,
        supply - 1,
        "no refused burn stayed"
    );
    assert_eq!(env.vault_state().await.total_bought_back, 0);

    // A plain `Burn` (tag 8) of the runner's own tokens is accepted.
    let ixs = vec![at(&env, 1), burn(&holding, &mint, &me, 1)];
    env.send_buyback(ixs, 1_000).await.unwrap();
    assert_eq!(env.supply(&mint).await, supply - 2);
    let books = env.vault_state().await;
    assert_eq!((books.total_bought_back, books.total_burned), (1_000, 1));
}

/// solana-program-test 4.2.2 loads Token-2022 (spl_token_2022 10.0.0): a Token-2022 $SKTRIAL
/// buyback is accepted when its burn goes through Token-2022, refused (`BurnMissing`) when the
/// same burn is addressed to the classic Token program.
#[tokio::test(flavor = "current_thread")]
async fn a_token_2022_burn_counts_only_through_token_2022() {
    let env = start().await;
    let program = env
        .ctx
        .banks_client
        .get_account(TOKEN_2022)
        .await
        .unwrap()
        .expect("the bank loads Token-2022");
    assert!(program.executable);
    let (mut env, mint, holding, _) = funded(env, &TOKEN_2022, 10, |_| {}).await;
    let me = env.runner.pubkey();
    let ixs = vec![
        env.buyback_ix(&holding, 1_000, 1, 1),
        burn_checked(&holding, &mint, &me, 1),
    ];
    custom(env.send_buyback(ixs, 1_000).await, E::BurnMissing);
    let ixs = vec![
        env.buyback_ix(&holding, 1_000, 1, 1),
        burn_checked_in(&TOKEN_2022, &holding, &mint, &me, 1),
    ];
    env.send_buyback(ixs, 1_000).await.unwrap();
    assert_eq!(env.supply(&mint).await, SUPPLY - 1);
    let books = env.vault_state().await;
    assert_eq!((books.total_bought_back, books.total_burned), (1_000, 1));
}

/// One burn satisfies one buyback: two buybacks naming the same burn are refused by the explicit
/// check (before any interval applies); a buyback reached through a CPI is refused; a fake
/// instructions sysvar is refused by address. The same buyback at top level is then accepted.
#[tokio::test(flavor = "current_thread")]
async fn one_burn_pays_for_one_top_level_buyback() {
    let (mut env, mint, holding, _) =
        funded(start_with(helper_program::add).await, &TOKEN, 10, |_| {}).await;
    let me = env.runner.pubkey();
    let good = burn_checked(&holding, &mint, &me, 1);

    let twice = env.buyback_ix(&holding, 1_000, 1, 2);
    let ixs = vec![twice.clone(), twice, good.clone()];
    custom(
        env.send_buyback(ixs, 2_000).await,
        E::OneBuybackPerTransaction,
    );

    let ixs = vec![
        forwarded(env.buyback_ix(&holding, 1_000, 1, 1)),
        good.clone(),
    ];
    custom(env.send_buyback(ixs, 1_000).await, E::BuybackNotTopLevel);

    let mut fake = env.buyback_ix(&holding, 1_000, 1, 1);
    let sysvar = fake
        .accounts
        .iter_mut()
        .find(|m| m.pubkey == skilltrial_chain::INSTRUCTIONS_SYSVAR_ID)
        .unwrap();
    sysvar.pubkey = Keypair::new().pubkey();
    custom(
        env.send_buyback(vec![fake, good.clone()], 1_000).await,
        AnchorError::ConstraintAddress,
    );

    assert_eq!(env.vault_state().await.total_bought_back, 0);
    let ixs = vec![env.buyback_ix(&holding, 1_000, 1, 1), good];
    env.send_buyback(ixs, 1_000).await.unwrap();
    assert_eq!(env.supply(&mint).await, SUPPLY - 1);
}

/// Each buyback is appended to the log and emitted as `BuybackExecuted` with the values the
/// test sent: time, lamports, tokens, the burn's index and the account it burned from.
#[tokio::test(flavor = "current_thread")]
async fn the_log_and_the_event_record_each_buyback() {
    let (mut env, mint, holding, _) =
        funded(start_with(helper_program::add).await, &TOKEN, 10, |_| {}).await;
    let runner = env.runner.insecure_clone();
    let me = runner.pubkey();
    let spare = env.token_account(&TOKEN, &mint, &me, 10_000).await;
    let t0 = env.now().await + 10;
    // (at, lamports_in, tokens_burned, burn_index, token account)
    let sent = [
        (t0, 600_000, 600, 1u16, holding),
        (t0 + INTERVAL, 900_000, 901, 2u16, spare),
    ];
    for &(at, lamports_in, tokens, index, account) in &sent {
        env.set_time(at).await;
        let mut ixs = vec![env.buyback_ix(&account, lamports_in, tokens, index)];
        if index == 2 {
            ixs.push(Instruction {
                program_id: helper_program::NOOP,
                accounts: vec![],
                data: vec![],
            });
        }
        ixs.push(burn_checked(&account, &mint, &me, tokens));
        let logs = env.simulate_logs(&ixs, &[&runner]).await.unwrap();
        env.send_buyback(ixs, lamports_in).await.unwrap();
        // On the native layer solana-program-test 4.2.2's syscall stubs print `sol_log_data`
        // to stdout instead of the transaction's logs: events are only observable from the .so.
        if native_layer() {
            continue;
        }
        let emitted = events::<BuybackExecuted>(&logs);
        assert_eq!(emitted.len(), 1, "{logs:?}");
        let e = &emitted[0];
        assert_eq!(
            (
                e.runner,
                e.token_account,
                e.lamports_in,
                e.tokens_burned,
                e.burn_index,
                e.at
            ),
            (
                anchor_key(&me),
                anchor_key(&account),
                lamports_in,
                tokens,
                index,
                at
            )
        );
    }
    let log = env.buyback_log().await;
    assert_eq!((log.count, log.next), (2, 2));
    for (entry, &(at, lamports_in, tokens, index, account)) in log.entries.iter().zip(&sent) {
        assert_eq!(
            (
                entry.at,
                entry.lamports_in,
                entry.tokens_burned,
                entry.burn_index,
                entry.token_account
            ),
            (
                at,
                lamports_in,
                tokens,
                u64::from(index),
                anchor_key(&account)
            )
        );
    }
    let books = env.vault_state().await;
    assert_eq!(
        (books.total_bought_back, books.total_burned),
        (1_500_000, 1_501)
    );
}

//! $SKTRIAL buybacks against the real SPL Token program that solana-program-test loads.
//!
//! The token instructions are encoded by hand from the SPL Token wire format (tag byte, then
//! little-endian fields): the interface crate speaks another solana-pubkey major version. They
//! are test fixtures, not the program's instructions, so they stay here rather than in the
//! chain client.

use skilltrial_chain::error::SkillTrialError as E;
use skilltrial_chain::ix::{self, BuybackExecuteArgs};
use skilltrial_chain::{SYSTEM_PROGRAM_ID, pda};
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::harness::{Env, FEE, MIN_DEADLINE, custom, print_cu, start, tx_fees, upper};

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
        program_id: SYSTEM_PROGRAM_ID,
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
    pub(crate) async fn make_mint(&mut self, supply: u64) -> (Pubkey, Pubkey) {
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
        let (mint_rent, holding_rent) = (rent.minimum_balance(82), rent.minimum_balance(165));
        let expected = vec![
            (runner.pubkey(), -i128::from(mint_rent + holding_rent)),
            (mint.pubkey(), i128::from(mint_rent)),
            (holding.pubkey(), i128::from(holding_rent)),
        ];
        self.send("token setup", ixs, &[&runner, &mint, &holding], expected)
            .await
            .unwrap();
        (mint.pubkey(), holding.pubkey())
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
        let args = BuybackExecuteArgs {
            lamports_in,
            tokens_burned,
            burn_index,
        };
        ix::buyback_execute(&self.runner.pubkey(), token_account, args)
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
        let expected = vec![
            (pda::fee_vault(), -i128::from(lamports_in)),
            (runner.pubkey(), i128::from(lamports_in)),
        ];
        self.send("buyback_execute + burn", ixs, &[&runner], expected)
            .await
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

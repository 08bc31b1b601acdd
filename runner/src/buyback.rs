//! Buybacks: the fees the program collected, swapped for $SKTRIAL and burned, in one
//! transaction, as often as the program's interval allows.
//!
//! One buyback is one transaction, shaped the same way whatever the venue:
//!
//! ```text
//! [compute limit, compute price?]  buyback_execute(lamports_in, tokens_burned, burn_index)
//! [venue setup…]  venue swap…  BurnChecked(tokens_burned)  [venue cleanup…]
//! ```
//!
//! `tokens_burned` must be fixed before signing. It is what the runner's token account held
//! before (read just before signing: a fill above an earlier swap's minimum) plus the venue's
//! minimum output (the quote less the slippage allowed). So the burn cannot succeed unless this
//! swap delivered at least its minimum into that account and nothing earlier buybacks bought
//! stays unburned. What the swap filled above its minimum is burned by a second transaction once
//! the first landed ([`burn_surplus`]; if that one cannot be made, the next buyback burns it).
//! The program bounds the rest: at most `max_buyback_lamports`
//! once per `buyback_interval_secs`, never more than the fees it booked, and never below the
//! admin's floor rate (checked here first on the minimum output alone, so a bad quote costs no
//! fee and an old balance never pays for a bad swap).
//!
//! Venues ([`Venue`]): [`LocalPool`], the constant-product pool program of a local validator
//! (`programs/venue`), and [`Jupiter`], Jupiter's Swap API v2 `/build` route for public
//! clusters (raw instructions and lookup tables).
//!
//! A route is someone else's instructions, so it is proven before signing ([`check_route`],
//! docs/runner.md "Buyback routes"): only the instructions a swap needs, each decoded (one
//! wrap of exactly the released lamports into the runner's wrapped-SOL account, its sync and
//! close, the runner's own token accounts, and one swap of exactly those lamports into the
//! runner's $SKTRIAL account); the lookup tables are read from the chain, the transaction is
//! compiled with them, and the same checks run again on the compiled message's resolved
//! accounts, the message that is signed.

use std::time::Duration;

use serde_json::Value;
use skilltrial_chain::ix::{self, BuybackExecuteArgs};
use skilltrial_chain::outbox::Outbox;
use skilltrial_chain::rpc::Chain;
use skilltrial_chain::send::{self, Fees, Sender, budget_prefix};
use skilltrial_chain::token::{self, TOKEN_PROGRAM_ID, WSOL_MINT};
use skilltrial_chain::{AccountMeta, Instruction, PROGRAM_ID, Pubkey, SYSTEM_PROGRAM_ID, venue};
use solana_keypair::Keypair;
use solana_message::AddressLookupTableAccount;
use solana_signer::Signer;

/// Why a buyback could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BuybackError {
    /// The venue, the node or the quote failed in a way that may pass: try at the next tick.
    #[error("{0}")]
    Transient(String),
    /// The setup is wrong (no config, a mint without a token account, a venue that answers
    /// nonsense): an operator must act.
    #[error("{0}")]
    Setup(String),
}

/// A swap a venue offers for `lamports_in`.
#[derive(Debug, Clone)]
pub struct Route {
    /// The tokens the venue expects to deliver.
    pub quoted_out: u64,
    /// The least it may deliver (the swap fails below it): what the buyback burns.
    pub min_out: u64,
    /// Instructions before the swap (creating accounts, wrapping SOL).
    pub setup: Vec<Instruction>,
    /// The swap.
    pub swap: Vec<Instruction>,
    /// Instructions after the burn (closing the wrapped-SOL account).
    pub cleanup: Vec<Instruction>,
    /// Address lookup tables the transaction may load accounts from, as the venue claims them:
    /// never used as such ([`send::fetch_tables`] reads each from the chain).
    pub tables: Vec<AddressLookupTableAccount>,
}

/// What a buyback asks a venue for: the runner's `lamports_in` swapped for `mint`, delivered to
/// `token_account` (the runner's own), filling at most `slippage_bps` below the quote.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub runner: Pubkey,
    pub mint: Pubkey,
    pub token_account: Pubkey,
    pub lamports_in: u64,
    pub slippage_bps: u16,
}

impl Ask {
    /// The runner's wrapped-SOL account: the only account a route may wrap SOL into.
    pub fn wrapped_sol(&self) -> Pubkey {
        token::associated_account(&self.runner, &WSOL_MINT, &TOKEN_PROGRAM_ID)
    }
}

/// Where fees are swapped for $SKTRIAL.
pub trait Venue: Send + Sync {
    /// Its name in logs and reports.
    fn name(&self) -> &'static str;
    /// The program its swap instruction calls.
    fn swap_program(&self) -> Pubkey;
    /// Why `swap`, an instruction of [`Venue::swap_program`] in a route with minimum output
    /// `min_out`, is not a swap of exactly `ask.lamports_in` into `ask.token_account`, if it
    /// is not.
    fn check_swap(&self, swap: &Instruction, ask: &Ask, min_out: u64) -> Option<String>;
    /// A route swapping exactly `lamports_in` lamports of the runner's for at least the route's
    /// `min_out` of `mint`, delivered to `token_account` (the runner's own), allowing
    /// `slippage_bps` below the quote.
    fn route(
        &self,
        runner: &Pubkey,
        mint: &Pubkey,
        token_account: &Pubkey,
        lamports_in: u64,
        slippage_bps: u16,
    ) -> Result<Route, BuybackError>;
}

/// The quote less `slippage_bps`, rounded down.
pub fn less_slippage(quote: u64, slippage_bps: u16) -> Option<u64> {
    let keep = 10_000u128.checked_sub(u128::from(slippage_bps))?;
    u64::try_from(u128::from(quote).checked_mul(keep)?.checked_div(10_000)?).ok()
}

/// The constant-product pool program of a local validator (`programs/venue`).
#[derive(Debug)]
pub struct LocalPool {
    chain: Chain,
}

impl LocalPool {
    pub fn new(chain: Chain) -> Self {
        Self { chain }
    }
}

impl Venue for LocalPool {
    fn name(&self) -> &'static str {
        "localnet pool"
    }

    fn swap_program(&self) -> Pubkey {
        venue::VENUE_ID
    }

    fn check_swap(&self, swap: &Instruction, ask: &Ask, min_out: u64) -> Option<String> {
        let key = |i: usize| swap.accounts.get(i).map(|m| m.pubkey);
        let pool = venue::pool_address(&ask.mint);
        let expected = venue::buy_data(ask.lamports_in, min_out);
        if key(0) != Some(ask.runner) || key(1) != Some(pool) || key(3) != Some(ask.token_account) {
            return Some(format!(
                "its swap is not the runner's buy from the pool {pool} into {}",
                ask.token_account
            ));
        }
        (swap.data != expected).then(|| {
            format!(
                "its swap is not a buy of exactly {} lamports for at least {min_out} tokens",
                ask.lamports_in
            )
        })
    }

    fn route(
        &self,
        runner: &Pubkey,
        mint: &Pubkey,
        token_account: &Pubkey,
        lamports_in: u64,
        slippage_bps: u16,
    ) -> Result<Route, BuybackError> {
        let pool = venue::read_pool(&self.chain, mint)
            .map_err(|e| BuybackError::Transient(e.to_string()))?
            .ok_or_else(|| {
                BuybackError::Setup(format!(
                    "no venue pool for the mint {mint} on this cluster ({}): `skilltrial localnet` seeds one; elsewhere use --buyback-venue jupiter",
                    venue::pool_address(mint)
                ))
            })?;
        let quoted_out = pool.quote(lamports_in).ok_or_else(|| {
            BuybackError::Transient(format!(
                "the pool cannot price {lamports_in} lamports (reserves {} lamports, {} tokens)",
                pool.sol_reserve, pool.token_reserve
            ))
        })?;
        let min_out = less_slippage(quoted_out, slippage_bps).unwrap_or(0);
        Ok(Route {
            quoted_out,
            min_out,
            setup: Vec::new(),
            swap: vec![venue::buy(
                runner,
                &pool,
                token_account,
                lamports_in,
                min_out,
            )],
            cleanup: Vec::new(),
            tables: Vec::new(),
        })
    }
}

/// Jupiter's public Swap API base (one value, in `core`).
pub use skilltrial_core::hosted::JUPITER_URL;
/// Jupiter's aggregator program (v6), the only swap program a Jupiter route may call.
pub const JUPITER_PROGRAM: Pubkey =
    Pubkey::from_str_const("JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4");
/// The ComputeBudget program: the daemon's sender sets the budget; a route may not.
const COMPUTE_BUDGET_PROGRAM: Pubkey =
    Pubkey::from_str_const("ComputeBudget111111111111111111111111111111");
/// Jupiter v6's `route` and `shared_accounts_route` (Anchor discriminators, the first 8 bytes
/// of sha256("global:<name>")): the two exact-in swaps whose accounts are checked here. Any
/// other Jupiter instruction (exact-out, token-ledger, a newer variant) is refused.
const JUPITER_ROUTE: [u8; 8] = [0xe5, 0x17, 0xcb, 0x97, 0x7a, 0xe3, 0xad, 0x2a];
const JUPITER_SHARED_ROUTE: [u8; 8] = [0xc1, 0x20, 0x9b, 0x33, 0x41, 0xd6, 0x9c, 0x81];
/// Accounts a route may use: the transaction must also hold the buyback's six and the burn.
const JUPITER_MAX_ACCOUNTS: u32 = 40;

/// Jupiter's Swap API v2 `GET /build`: a quote with raw instructions and the lookup tables
/// they need, so the buyback and the burn go in the same transaction as the swap (`/order`
/// transactions cannot be changed). The API key is the operator's, from the environment.
pub struct Jupiter {
    base: url::Url,
    api_key: Option<String>,
    http: reqwest::blocking::Client,
}

impl std::fmt::Debug for Jupiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jupiter")
            .field("base", &self.base.as_str())
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Jupiter {
    pub fn new(base: url::Url, api_key: Option<String>) -> Result<Self, String> {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Self {
            base,
            api_key,
            http,
        })
    }

    fn build_url(
        &self,
        runner: &Pubkey,
        mint: &Pubkey,
        lamports_in: u64,
        slippage_bps: u16,
    ) -> Result<url::Url, BuybackError> {
        let mut url = self
            .base
            .join(&format!("{}/build", self.base.path().trim_end_matches('/')))
            .map_err(|e| BuybackError::Setup(format!("the Jupiter URL: {e}")))?;
        url.query_pairs_mut()
            .append_pair("inputMint", &WSOL_MINT.to_string())
            .append_pair("outputMint", &mint.to_string())
            .append_pair("amount", &lamports_in.to_string())
            .append_pair("taker", &runner.to_string())
            .append_pair("slippageBps", &slippage_bps.to_string())
            .append_pair("maxAccounts", &JUPITER_MAX_ACCOUNTS.to_string());
        Ok(url)
    }
}

impl Venue for Jupiter {
    fn name(&self) -> &'static str {
        "jupiter"
    }

    fn swap_program(&self) -> Pubkey {
        JUPITER_PROGRAM
    }

    /// The accounts of `route` / `shared_accounts_route` are checked by position (Jupiter v6's
    /// IDL): the runner signs, the source is its wrapped-SOL account, the destination is its
    /// $SKTRIAL account of `ask.mint`, and there is no platform-fee account (an absent optional
    /// account is the program's own id). The arguments end with `in_amount: u64,
    /// quoted_out_amount: u64, slippage_bps: u16, platform_fee_bps: u8`; they are read from the
    /// end and must say `lamports_in`, at most the operator's slippage and no fee. (Anchor
    /// ignores trailing bytes, so these fields are a consistency check, not the bound: the
    /// bound on what is spent is the wrapped-SOL account holding exactly `lamports_in`, and
    /// the bound on what is delivered is the burn; docs/runner.md.)
    fn check_swap(&self, swap: &Instruction, ask: &Ask, _min_out: u64) -> Option<String> {
        jupiter_swap_misuse(swap, ask)
    }

    fn route(
        &self,
        runner: &Pubkey,
        mint: &Pubkey,
        token_account: &Pubkey,
        lamports_in: u64,
        slippage_bps: u16,
    ) -> Result<Route, BuybackError> {
        let url = self.build_url(runner, mint, lamports_in, slippage_bps)?;
        let mut request = self.http.get(url);
        if let Some(key) = &self.api_key {
            request = request.header("x-api-key", key);
        }
        let response = request.send().map_err(|e| {
            // reqwest names the URL, never a header: the key stays out of the message.
            BuybackError::Transient(format!(
                "Jupiter did not answer: {}",
                causes(&e.without_url())
            ))
        })?;
        let status = response.status();
        let body = response
            .text()
            .map_err(|e| BuybackError::Transient(format!("Jupiter's answer: {e}")))?;
        if !status.is_success() {
            let said: String = body.chars().take(300).collect();
            let said = match &self.api_key {
                Some(key) if !key.is_empty() => said.replace(key.as_str(), "<api key>"),
                _ => said,
            };
            return Err(BuybackError::Transient(format!(
                "Jupiter answered HTTP {status}: {said}"
            )));
        }
        let answer: Value = serde_json::from_str(&body)
            .map_err(|e| BuybackError::Transient(format!("Jupiter's answer is not JSON: {e}")))?;
        let route = parse_build(&answer, mint, lamports_in)?;
        // The answer's minimum must be the quote less at most the operator's slippage.
        if less_slippage(route.quoted_out, slippage_bps).is_none_or(|least| route.min_out < least) {
            return Err(BuybackError::Transient(format!(
                "Jupiter's /build answer is refused: its minimum output {} is more than {slippage_bps} bps below its quote {}",
                route.min_out, route.quoted_out
            )));
        }
        let ask = Ask {
            runner: *runner,
            mint: *mint,
            token_account: *token_account,
            lamports_in,
            slippage_bps,
        };
        check_route(self, &ask, &route).map_err(|why| {
            BuybackError::Transient(format!("Jupiter's /build answer is refused: {why}"))
        })?;
        Ok(route)
    }
}

/// Why a Jupiter swap instruction is not an exact-in swap of `ask`, if it is not
/// ([`Jupiter::check_swap`]).
fn jupiter_swap_misuse(swap: &Instruction, ask: &Ask) -> Option<String> {
    let key = |i: usize| swap.accounts.get(i).map(|m| m.pubkey);
    let signs = |i: usize| swap.accounts.get(i).is_some_and(|m| m.is_signer);
    let none = Some(JUPITER_PROGRAM);
    let shown = |k: Option<Pubkey>| k.map_or_else(|| "nothing".to_owned(), |k| k.to_string());
    let (runner, source, destination, extra, mint, fee) = match swap
        .data
        .get(..8)
        .and_then(|d| <[u8; 8]>::try_from(d).ok())
    {
        Some(JUPITER_ROUTE) => (1, 2, 3, key(4), 5, 6),
        Some(JUPITER_SHARED_ROUTE) => {
            if key(7) != Some(WSOL_MINT) {
                return Some("its shared-accounts swap does not sell wrapped SOL".into());
            }
            (2, 3, 6, none, 8, 9)
        }
        _ => {
            return Some(format!(
                "its Jupiter instruction {:02x?} is not an exact-in `route` or `shared_accounts_route`",
                swap.data.get(..8).unwrap_or_default()
            ));
        }
    };
    if key(runner) != Some(ask.runner) || !signs(runner) {
        return Some("its swap is not signed by the runner as the swapper".into());
    }
    if key(source) != Some(ask.wrapped_sol()) {
        return Some(format!(
            "its swap sells from {}, not the runner's wrapped-SOL account {}",
            shown(key(source)),
            ask.wrapped_sol()
        ));
    }
    if key(destination) != Some(ask.token_account) {
        return Some(format!(
            "its swap delivers to {}, not the runner's token account {}",
            shown(key(destination)),
            ask.token_account
        ));
    }
    if extra != none && extra != Some(ask.token_account) {
        return Some(format!(
            "its swap delivers to {}, not the runner's token account {}",
            shown(extra),
            ask.token_account
        ));
    }
    if key(mint) != Some(ask.mint) {
        return Some(format!(
            "its swap buys {}, not {}",
            shown(key(mint)),
            ask.mint
        ));
    }
    if key(fee) != none {
        return Some(format!(
            "its swap pays a platform fee to {}",
            shown(key(fee))
        ));
    }
    // in_amount (8), quoted_out_amount (8), slippage_bps (2), platform_fee_bps (1), after at
    // least the route plan's length (4).
    let tail = swap
        .data
        .len()
        .checked_sub(19)
        .filter(|start| *start >= 12)
        .and_then(|start| swap.data.get(start..));
    let Some(tail) = tail else {
        return Some("its swap's arguments are too short to be a route".into());
    };
    let in_amount = tail
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes);
    let slippage = tail
        .get(16..18)
        .and_then(|b| <[u8; 2]>::try_from(b).ok())
        .map(u16::from_le_bytes);
    if in_amount != Some(ask.lamports_in) {
        return Some(format!(
            "its swap's own arguments sell {} lamports, not {}",
            in_amount.unwrap_or_default(),
            ask.lamports_in
        ));
    }
    if slippage.is_none_or(|s| s > ask.slippage_bps) {
        return Some(format!(
            "its swap's own arguments allow {} bps of slippage, above the operator's {}",
            slippage.unwrap_or_default(),
            ask.slippage_bps
        ));
    }
    (tail.get(18) != Some(&0)).then(|| "its swap's own arguments take a platform fee".into())
}

/// An error and its causes, in one line.
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A `/build` answer as a route, refused unless it says it swaps exactly `lamports_in` of SOL
/// into `mint`; its instructions are checked by [`check_route`].
pub fn parse_build(answer: &Value, mint: &Pubkey, lamports_in: u64) -> Result<Route, BuybackError> {
    let bad = |why: String| BuybackError::Transient(format!("Jupiter's /build answer: {why}"));
    let text = |field: &str| {
        answer[field]
            .as_str()
            .ok_or_else(|| bad(format!("no `{field}`")))
    };
    let amount = |field: &str| -> Result<u64, BuybackError> {
        text(field)?
            .parse::<u64>()
            .map_err(|_| bad(format!("`{field}` is not an amount")))
    };
    if text("inputMint")? != WSOL_MINT.to_string() || text("outputMint")? != mint.to_string() {
        return Err(bad(format!(
            "it swaps {} into {}, not SOL into {mint}",
            text("inputMint")?,
            text("outputMint")?
        )));
    }
    if amount("inAmount")? != lamports_in {
        return Err(bad(format!(
            "it swaps {} lamports, not {lamports_in}",
            amount("inAmount")?
        )));
    }
    let quoted_out = amount("outAmount")?;
    let min_out = amount("otherAmountThreshold")?;
    if min_out == 0 || min_out > quoted_out {
        return Err(bad(format!(
            "its minimum output {min_out} is not within its quote {quoted_out}"
        )));
    }
    let list = |field: &str| -> Result<Vec<Instruction>, BuybackError> {
        match &answer[field] {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items.iter().map(|i| instruction(i, &bad)).collect(),
            one @ Value::Object(_) => Ok(vec![instruction(one, &bad)?]),
            _ => Err(bad(format!("`{field}` is not a list of instructions"))),
        }
    };
    let setup = list("setupInstructions")?;
    let mut swap = list("swapInstruction")?;
    if swap.len() != 1 {
        return Err(bad("no `swapInstruction`".to_owned()));
    }
    swap.extend(list("otherInstructions")?);
    let cleanup = list("cleanupInstruction")?;
    let mut tables = Vec::new();
    if let Some(map) = answer["addressesByLookupTableAddress"].as_object() {
        for (key, addresses) in map {
            let key: Pubkey = key
                .parse()
                .map_err(|_| bad(format!("the lookup table {key:?} is not an address")))?;
            let addresses = addresses
                .as_array()
                .ok_or_else(|| bad(format!("the lookup table {key} lists no addresses")))?
                .iter()
                .map(|a| {
                    a.as_str()
                        .and_then(|a| a.parse::<Pubkey>().ok())
                        .ok_or_else(|| bad(format!("the lookup table {key} holds a non-address")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            tables.push(AddressLookupTableAccount { key, addresses });
        }
    }
    Ok(Route {
        quoted_out,
        min_out,
        setup,
        swap,
        cleanup,
        tables,
    })
}

/// Why `route` is not a swap of exactly `ask` through `venue`, if it is not. Every instruction
/// is one a swap needs, decoded:
///
/// - the venue's swap program: exactly one instruction, accepted by [`Venue::check_swap`];
/// - System: one `Transfer` of exactly `lamports_in` from the runner into its wrapped-SOL
///   account (the wrap). Every other System instruction is refused, `Assign`, `Allocate`,
///   `CreateAccountAllowPrefund` on the runner's own key among them (they hand the key to
///   another program or make it unusable as a fee payer);
/// - a token program: `SyncNative` of the wrapped-SOL account, `CloseAccount` of it back to
///   the runner;
/// - the associated token program: creating the runner's own wrapped-SOL or $SKTRIAL account,
///   paid by the runner, under a token program;
/// - nothing else: not ComputeBudget (the daemon's sender sets the budget and the price), not
///   the SkillTrial program, no signer but the runner.
///
/// Run on the answer as given, and again ([`vet_message`]) on the compiled message's resolved
/// accounts.
pub fn check_route(venue: &dyn Venue, ask: &Ask, route: &Route) -> Result<(), String> {
    let wrapped_sol = ask.wrapped_sol();
    let mut swaps = 0usize;
    let mut wraps = 0usize;
    for ix in route.setup.iter().chain(&route.swap).chain(&route.cleanup) {
        // Only the runner signs, and the buyback's own program is not the route's to touch.
        for meta in &ix.accounts {
            if meta.is_signer && meta.pubkey != ask.runner {
                return Err(format!("it wants {} to sign", meta.pubkey));
            }
            if meta.pubkey == PROGRAM_ID {
                return Err("it names the SkillTrial program".to_owned());
            }
        }
        let program = ix.program_id;
        let why = if program == venue.swap_program() {
            swaps = swaps.saturating_add(1);
            venue.check_swap(ix, ask, route.min_out)
        } else if program == SYSTEM_PROGRAM_ID {
            wraps = wraps.saturating_add(1);
            system_misuse(ix, ask, &wrapped_sol)
        } else if token::is_token_program(&program) {
            token_misuse(ix, ask, &wrapped_sol)
        } else if program == token::ATA_PROGRAM_ID {
            account_creation_misuse(ix, ask)
        } else if program == COMPUTE_BUDGET_PROGRAM {
            Some("it sets the transaction's compute budget, which is the daemon's to set".into())
        } else {
            Some(format!(
                "it calls the program {program}, which a swap has no business calling"
            ))
        };
        if let Some(why) = why {
            return Err(why);
        }
    }
    if swaps != 1 {
        return Err(format!(
            "it holds {swaps} instructions of {}, not one swap",
            venue.swap_program()
        ));
    }
    if wraps > 1 {
        return Err(format!("it wraps SOL {wraps} times, not once"));
    }
    Ok(())
}

/// The System instruction's name, from its tag (solana-system-interface 3.2's order).
fn system_instruction_name(tag: Option<u32>) -> &'static str {
    match tag {
        Some(0) => "CreateAccount",
        Some(1) => "Assign",
        Some(2) => "Transfer",
        Some(3) => "CreateAccountWithSeed",
        Some(4) => "AdvanceNonceAccount",
        Some(5) => "WithdrawNonceAccount",
        Some(6) => "InitializeNonceAccount",
        Some(7) => "AuthorizeNonceAccount",
        Some(8) => "Allocate",
        Some(9) => "AllocateWithSeed",
        Some(10) => "AssignWithSeed",
        Some(11) => "TransferWithSeed",
        Some(12) => "UpgradeNonceAccount",
        Some(13) => "CreateAccountAllowPrefund",
        _ => "an unknown instruction",
    }
}

/// Why a System instruction is not the wrap (`Transfer` of exactly `lamports_in` from the
/// runner to its wrapped-SOL account), if it is not.
fn system_misuse(ix: &Instruction, ask: &Ask, wrapped_sol: &Pubkey) -> Option<String> {
    const TRANSFER: u32 = 2;
    let tag = ix
        .data
        .get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_le_bytes);
    let key = |i: usize| ix.accounts.get(i).map(|m| m.pubkey);
    if tag != Some(TRANSFER) {
        return Some(format!(
            "it asks the System program for {} on {}: only the wrap of the released lamports is a swap's",
            system_instruction_name(tag),
            key(0).map_or_else(String::new, |k| k.to_string())
        ));
    }
    if key(0) != Some(ask.runner) || key(1) != Some(*wrapped_sol) || ix.accounts.len() != 2 {
        return Some(format!(
            "it moves SOL to {}, not into the runner's wrapped-SOL account",
            key(1).map_or_else(String::new, |k| k.to_string())
        ));
    }
    let amount = ix
        .data
        .get(4..12)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes);
    (amount != Some(ask.lamports_in) || ix.data.len() != 12).then(|| {
        format!(
            "it wraps {} lamports, not the {} the fee vault releases",
            amount.unwrap_or_default(),
            ask.lamports_in
        )
    })
}

/// Why a token-program instruction is not a sync or close of the runner's wrapped-SOL account
/// (back to the runner), if it is not. (The swap itself moves tokens by CPI; what it may take
/// is bounded by the wrap and what it must deliver by the burn.)
fn token_misuse(ix: &Instruction, ask: &Ask, wrapped_sol: &Pubkey) -> Option<String> {
    const SYNC_NATIVE: u8 = 17;
    const CLOSE_ACCOUNT: u8 = 9;
    let key = |i: usize| ix.accounts.get(i).map(|m| m.pubkey);
    let ok = match (ix.data.as_slice(), ix.accounts.len()) {
        ([SYNC_NATIVE], 1) => key(0) == Some(*wrapped_sol),
        ([CLOSE_ACCOUNT], 3) => {
            key(0) == Some(*wrapped_sol) && key(1) == Some(ask.runner) && key(2) == Some(ask.runner)
        }
        _ => false,
    };
    (!ok).then(|| {
        format!(
            "it asks the token program for instruction {:?} on {}, not a sync or close of the runner's wrapped-SOL account",
            ix.data.first(),
            key(0).map_or_else(String::new, |k| k.to_string())
        )
    })
}

/// Why an associated-token-program instruction is not the creation of the runner's own
/// wrapped-SOL or $SKTRIAL account, paid by the runner, if it is not.
fn account_creation_misuse(ix: &Instruction, ask: &Ask) -> Option<String> {
    let key = |i: usize| ix.accounts.get(i).map(|m| m.pubkey);
    let create = matches!(ix.data.as_slice(), [] | [0] | [1]);
    let ok = create
        && ix.accounts.len() == 6
        && key(0) == Some(ask.runner)
        && key(2) == Some(ask.runner)
        && key(4) == Some(SYSTEM_PROGRAM_ID)
        && match (key(3), key(5)) {
            (Some(mint), Some(program)) => {
                (mint == WSOL_MINT || mint == ask.mint)
                    && token::is_token_program(&program)
                    && key(1) == Some(token::associated_account(&ask.runner, &mint, &program))
            }
            _ => false,
        };
    (!ok).then(|| {
        format!(
            "it creates the token account {}, not one of the runner's own",
            key(1).map_or_else(String::new, |k| k.to_string())
        )
    })
}

/// Why the message about to be signed is not `intended` (the buyback, the route, the burn) with
/// every account as composed, or why its route part fails [`check_route`] once its accounts are
/// the ones the lookup tables resolve to, if so. `resolved` is the sender's view of the compiled
/// message ([`send::Vet`]): the route's accounts are the chain's tables', not the answer's.
pub fn vet_message(
    resolved: &[Instruction],
    intended: &[Instruction],
    route: &Route,
    venue: &dyn Venue,
    ask: &Ask,
) -> Result<(), String> {
    if resolved.len() != intended.len() {
        return Err(format!(
            "the compiled message holds {} instructions, not the {} composed",
            resolved.len(),
            intended.len()
        ));
    }
    for (index, (got, meant)) in resolved.iter().zip(intended).enumerate() {
        if got.program_id != meant.program_id || got.data != meant.data {
            return Err(format!(
                "instruction {index} compiles to another program or data than composed"
            ));
        }
        if got.accounts.len() != meant.accounts.len() {
            return Err(format!("instruction {index} compiles to other accounts"));
        }
        for (position, (g, m)) in got.accounts.iter().zip(&meant.accounts).enumerate() {
            if g.pubkey != m.pubkey {
                return Err(format!(
                    "account {position} of instruction {index} resolves to {} through the lookup tables, not {}",
                    g.pubkey, m.pubkey
                ));
            }
            if g.is_signer && g.pubkey != ask.runner {
                return Err(format!("the compiled message wants {} to sign", g.pubkey));
            }
        }
    }
    // The route as it will run: [buyback] setup… swap… [burn] cleanup….
    let part = |from: usize, count: usize| -> Vec<Instruction> {
        resolved.iter().skip(from).take(count).cloned().collect()
    };
    let setup_at = 1;
    let swap_at = setup_at + route.setup.len();
    let cleanup_at = swap_at + route.swap.len() + 1;
    let compiled = Route {
        setup: part(setup_at, route.setup.len()),
        swap: part(swap_at, route.swap.len()),
        cleanup: part(cleanup_at, route.cleanup.len()),
        tables: Vec::new(),
        ..route.clone()
    };
    check_route(venue, ask, &compiled)
}

/// One instruction of a Jupiter answer: `{programId, accounts: [{pubkey, isSigner,
/// isWritable}], data (base64)}`.
fn instruction(
    value: &Value,
    bad: &dyn Fn(String) -> BuybackError,
) -> Result<Instruction, BuybackError> {
    use base64::Engine as _;
    let program_id: Pubkey = value["programId"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| bad("an instruction without a valid `programId`".to_owned()))?;
    let accounts = value["accounts"]
        .as_array()
        .ok_or_else(|| bad(format!("an instruction of {program_id} without `accounts`")))?
        .iter()
        .map(|a| {
            let pubkey: Pubkey = a["pubkey"]
                .as_str()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| bad("an account without a valid `pubkey`".to_owned()))?;
            Ok(AccountMeta {
                pubkey,
                is_signer: a["isSigner"].as_bool().unwrap_or(false),
                is_writable: a["isWritable"].as_bool().unwrap_or(false),
            })
        })
        .collect::<Result<Vec<_>, BuybackError>>()?;
    let data = base64::engine::general_purpose::STANDARD
        .decode(value["data"].as_str().unwrap_or_default())
        .map_err(|_| {
            bad(format!(
                "an instruction of {program_id} whose data is not base64"
            ))
        })?;
    Ok(Instruction {
        program_id,
        accounts,
        data,
    })
}

/// Where the bought tokens are burned from.
#[derive(Debug, Clone, Copy)]
pub struct Burn {
    pub runner: Pubkey,
    /// The runner's token account of `mint`.
    pub token_account: Pubkey,
    pub mint: Pubkey,
    pub decimals: u8,
    /// The mint's owner, Token or Token-2022: the burn goes through it.
    pub token_program: Pubkey,
    /// What the token account holds before the swap: burned along with the swap's minimum
    /// output, so nothing bought earlier stays on the runner's key.
    pub held: u64,
}

impl Burn {
    /// What the burn destroys with `route`: everything held before plus its minimum output.
    pub fn amount(&self, route: &Route) -> Option<u64> {
        self.held.checked_add(route.min_out)
    }
}

/// The buyback transaction's instructions after the compute-budget ones the sender adds at
/// `price`: `buyback_execute`, the route's setup and swap, the burn of what the account held
/// plus the route's minimum output ([`Burn::amount`]), its cleanup.
pub fn compose(
    burn: &Burn,
    lamports_in: u64,
    route: &Route,
    price: u64,
) -> Result<Vec<Instruction>, BuybackError> {
    let burn_index = budget_prefix(price)
        .checked_add(1)
        .and_then(|i| i.checked_add(route.setup.len()))
        .and_then(|i| i.checked_add(route.swap.len()))
        .and_then(|i| u16::try_from(i).ok())
        .ok_or_else(|| BuybackError::Setup("the route has too many instructions".into()))?;
    let tokens_burned = burn.amount(route).ok_or_else(|| {
        BuybackError::Setup(format!(
            "the runner's token account holds {} tokens: with the route's {} the burn overflows",
            burn.held, route.min_out
        ))
    })?;
    let mut instructions = Vec::with_capacity(route.setup.len() + route.swap.len() + 3);
    instructions.push(ix::buyback_execute(
        &burn.runner,
        &burn.token_account,
        BuybackExecuteArgs {
            lamports_in,
            tokens_burned,
            burn_index,
        },
    ));
    instructions.extend(route.setup.iter().cloned());
    instructions.extend(route.swap.iter().cloned());
    instructions.push(token::burn_checked(
        &burn.token_program,
        &burn.token_account,
        &burn.mint,
        &burn.runner,
        tokens_burned,
        burn.decimals,
    ));
    instructions.extend(route.cleanup.iter().cloned());
    Ok(instructions)
}

/// What one buyback attempt did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The interval is not over: the next one may run at this cluster time.
    NotDue { next_at: i64 },
    /// The fees booked are below the operator's minimum.
    TooLittle { unreleased: u64, minimum: u64 },
    /// Bought and burned in `signature`: `tokens_burned` is the swap's minimum output plus
    /// what the runner's token account held before (what the program books); `surplus` is
    /// what the swap delivered above its minimum, burned by the transaction right after.
    Done {
        signature: String,
        lamports_in: u64,
        quoted_out: u64,
        tokens_burned: u64,
        surplus: Surplus,
    },
}

/// What a swap filled above its minimum output: unknown until the swap ran, so it is burned by
/// a second transaction once the buyback landed ([`burn_surplus`]). Where that one cannot be
/// made now, the tokens stay on the runner's account and the next buyback burns them with its
/// own (it burns everything the account holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Surplus {
    /// The account held nothing after the buyback: the swap filled exactly its minimum.
    Nothing,
    /// `tokens` burned in `signature`.
    Burned { signature: String, tokens: u64 },
    /// Not burned now: why (the next buyback burns what the account holds).
    Left { why: String },
}

impl Surplus {
    /// The tokens burned after the buyback (0 unless [`Surplus::Burned`]).
    pub fn burned(&self) -> u64 {
        match self {
            Surplus::Burned { tokens, .. } => *tokens,
            Surplus::Nothing | Surplus::Left { .. } => 0,
        }
    }
}

/// `skilltrial runner buyback --json`: what one buyback attempt did, told by `outcome`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum BuybackReport {
    /// Bought and burned.
    Done {
        /// The buyback transaction.
        signature: String,
        /// Fees spent.
        lamports_in: u64,
        /// What the venue quoted for them ($SKTRIAL base units).
        quoted_out: u64,
        /// What the buyback transaction burned (and the program booked).
        tokens_burned: u64,
        /// The venue swapped through.
        venue: String,
        /// What the swap filled above its minimum, burned right after (0 when nothing was).
        surplus_burned: u64,
        /// The transaction that burned it (null when none did).
        surplus_signature: Option<String>,
        /// Why it was not burned now (the next buyback burns it); null otherwise.
        surplus_left: Option<String>,
    },
    /// The program's interval is not over.
    NotDue {
        /// The cluster time (Unix seconds) the next buyback may run at.
        next_at: i64,
    },
    /// The fees booked are below the operator's minimum.
    TooLittle {
        /// Fees booked and not yet released, in lamports.
        unreleased: u64,
        /// The operator's minimum (`--buyback-min-lamports`).
        minimum: u64,
    },
}

impl Outcome {
    /// What `runner buyback --json` prints for this outcome, swapped through `venue`.
    pub fn report(&self, venue: &str) -> BuybackReport {
        match self {
            Outcome::Done {
                signature,
                lamports_in,
                quoted_out,
                tokens_burned,
                surplus,
            } => {
                let (surplus_signature, surplus_left) = match surplus {
                    Surplus::Nothing => (None, None),
                    Surplus::Burned { signature, .. } => (Some(signature.clone()), None),
                    Surplus::Left { why } => (None, Some(why.clone())),
                };
                BuybackReport::Done {
                    signature: signature.clone(),
                    lamports_in: *lamports_in,
                    quoted_out: *quoted_out,
                    tokens_burned: *tokens_burned,
                    venue: venue.to_owned(),
                    surplus_burned: surplus.burned(),
                    surplus_signature,
                    surplus_left,
                }
            }
            Outcome::NotDue { next_at } => BuybackReport::NotDue { next_at: *next_at },
            Outcome::TooLittle {
                unreleased,
                minimum,
            } => BuybackReport::TooLittle {
                unreleased: *unreleased,
                minimum: *minimum,
            },
        }
    }
}

impl std::fmt::Display for Surplus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Surplus::Nothing => write!(f, "the swap filled exactly its minimum"),
            Surplus::Burned { signature, tokens } => {
                write!(f, "{tokens} filled above the minimum burned in {signature}")
            }
            Surplus::Left { why } => write!(
                f,
                "what the swap filled above its minimum is not burned yet ({why}); the next buyback burns it"
            ),
        }
    }
}

/// Burns everything `burn.token_account` holds once the buyback `after` landed: what its swap
/// filled above the minimum the buyback burned. Its own transaction, under the intent
/// `buyback-surplus:<after>` (a killed daemon resumes it, never burns twice for one buyback).
fn burn_surplus(
    chain: &Chain,
    outbox: &mut Outbox,
    runner: &Keypair,
    burn: &Burn,
    after: &str,
    fees: Fees,
    progress: &dyn Fn(&str),
) -> Surplus {
    let left = |why: String| Surplus::Left { why };
    let held = match chain.account(&burn.token_account) {
        Ok(Some((_, _, data))) => match token::read_account(&data) {
            Some((_, _, amount)) => amount,
            None => return left(format!("{} is not a token account", burn.token_account)),
        },
        Ok(None) => return left(format!("{} is gone", burn.token_account)),
        Err(e) => return left(e.to_string()),
    };
    if held == 0 {
        return Surplus::Nothing;
    }
    progress(&format!(
        "buyback: burning the {held} tokens the swap filled above its minimum"
    ));
    let instruction = token::burn_checked(
        &burn.token_program,
        &burn.token_account,
        &burn.mint,
        &burn.runner,
        held,
        burn.decimals,
    );
    let sent = Sender::new(chain, outbox, progress).and_then(|mut sender| {
        sender.send(
            &format!("buyback-surplus:{after}"),
            runner,
            &[],
            &[instruction],
            fees,
        )
    });
    match sent {
        Ok(sent) => Surplus::Burned {
            signature: sent.signature.to_string(),
            tokens: held,
        },
        Err(e) => left(e.explain()),
    }
}

/// The operator's terms for buybacks.
#[derive(Debug, Clone, Copy)]
pub struct Terms {
    /// The least unreleased fee worth a transaction.
    pub min_lamports: u64,
    /// The most the swap may deliver below its quote.
    pub slippage_bps: u16,
    pub fees: Fees,
}

/// Makes one buyback if it is due: reads the program's config and fee vault, asks `venue` for
/// a route, checks the floor rate, and sends the transaction through the outbox under the
/// intent `buyback:<last buyback time>` (a killed daemon resumes the same transaction).
pub fn buyback_once(
    chain: &Chain,
    outbox: &mut Outbox,
    runner: &Keypair,
    venue: &dyn Venue,
    terms: Terms,
    progress: &dyn Fn(&str),
) -> Result<Outcome, BuybackError> {
    let transient = |e: &dyn std::fmt::Display| BuybackError::Transient(e.to_string());
    let config = chain
        .config()
        .map_err(|e| transient(&e))?
        .ok_or_else(|| BuybackError::Setup("the program has no config on this cluster".into()))?;
    if config.runner != runner.pubkey() {
        return Err(BuybackError::Setup(format!(
            "the program's runner is {}, not this daemon's key {}",
            config.runner,
            runner.pubkey()
        )));
    }
    let (vault, _) = chain
        .fee_vault()
        .map_err(|e| transient(&e))?
        .ok_or_else(|| BuybackError::Setup("the program has no fee vault".into()))?;
    let now = chain.cluster_time().map_err(|e| transient(&e))?;
    if vault.last_buyback_ts != 0 {
        let next_at = vault
            .last_buyback_ts
            .saturating_add(config.buyback_interval_secs);
        if now < next_at {
            return Ok(Outcome::NotDue { next_at });
        }
    }
    let unreleased = vault
        .total_fees
        .checked_sub(vault.total_bought_back)
        .ok_or_else(|| BuybackError::Setup("the fee vault's books are broken".into()))?;
    let lamports_in = unreleased.min(config.max_buyback_lamports);
    if lamports_in == 0 || lamports_in < terms.min_lamports {
        return Ok(Outcome::TooLittle {
            unreleased,
            minimum: terms.min_lamports.max(1),
        });
    }
    let mint = config.sktrial_mint;
    let (mint_owner, decimals) = chain
        .account(&mint)
        .map_err(|e| transient(&e))?
        .filter(|(owner, _, _)| token::is_token_program(owner))
        .and_then(|(owner, _, data)| token::read_mint(&data).map(|(_, d)| (owner, d)))
        .ok_or_else(|| {
            BuybackError::Setup(format!(
                "the configured $SKTRIAL mint {mint} is not a token mint on this cluster"
            ))
        })?;
    let token_account = token::associated_account(&runner.pubkey(), &mint, &mint_owner);
    let existing = chain.account(&token_account).map_err(|e| transient(&e))?;
    if existing.is_none() {
        // The buyback checks the account before the swap runs: it must exist beforehand.
        progress(&format!(
            "creating the runner's $SKTRIAL account {token_account}"
        ));
        let mut sender = Sender::new(chain, outbox, progress).map_err(|e| transient(&e))?;
        let create = token::create_associated_account(
            &runner.pubkey(),
            &runner.pubkey(),
            &mint,
            &mint_owner,
        );
        sender
            .send(
                &format!("token_account:{token_account}"),
                runner,
                &[],
                &[create],
                terms.fees,
            )
            .map_err(|e| transient(&e.explain()))?;
    }
    let ask = Ask {
        runner: runner.pubkey(),
        mint,
        token_account,
        lamports_in,
        slippage_bps: terms.slippage_bps,
    };
    let route = venue.route(
        &runner.pubkey(),
        &mint,
        &token_account,
        lamports_in,
        terms.slippage_bps,
    )?;
    let refused = |why: String| {
        BuybackError::Transient(format!(
            "{}'s route is refused before signing: {why}; nothing was signed",
            venue.name()
        ))
    };
    check_route(venue, &ask, &route).map_err(refused)?;
    let rate = config.buyback_rate;
    let burned = u128::from(route.min_out).checked_mul(u128::from(rate.lamports));
    let floor = u128::from(lamports_in).checked_mul(u128::from(rate.tokens));
    if route.min_out == 0 || burned.zip(floor).is_none_or(|(b, f)| b < f) {
        return Err(BuybackError::Transient(format!(
            "{}'s route gives at least {} tokens for {lamports_in} lamports, below the program's floor of {} tokens per {} lamports; not sent",
            venue.name(),
            route.min_out,
            rate.tokens,
            rate.lamports
        )));
    }
    // A route that wraps may spend what the wrapped-SOL account holds: it must hold nothing
    // but what this buyback wraps into it.
    let wrapped_sol = ask.wrapped_sol();
    let names_wrapped = route
        .setup
        .iter()
        .chain(&route.swap)
        .chain(&route.cleanup)
        .any(|ix| ix.accounts.iter().any(|m| m.pubkey == wrapped_sol));
    if names_wrapped
        && let Some((_, _, data)) = chain.account(&wrapped_sol).map_err(|e| transient(&e))?
        && token::read_account(&data).is_none_or(|(_, _, amount)| amount > 0)
    {
        return Err(refused(format!(
            "the runner's wrapped-SOL account {wrapped_sol} already holds wrapped SOL, which the route could spend beyond the {lamports_in} lamports released: unwrap it first"
        )));
    }
    // The lookup tables as the chain holds them: the message is compiled with these.
    let tables = send::fetch_tables(chain, &route.tables).map_err(|e| match e {
        send::TableError::Rpc(e) => transient(&e),
        refusal @ send::TableError::Refused { .. } => refused(refusal.to_string()),
    })?;
    // Everything the account holds is burned with this swap's minimum (read after the route
    // was asked for, right before signing).
    let held = match chain
        .account(&token_account)
        .map_err(|e| transient(&e))?
        .and_then(|(_, _, data)| token::read_account(&data))
    {
        Some((_, _, amount)) => amount,
        None if existing.is_none() => 0,
        None => {
            return Err(BuybackError::Setup(format!(
                "the runner's $SKTRIAL account {token_account} is not a token account"
            )));
        }
    };
    let mut sender = Sender::new(chain, outbox, progress).map_err(|e| transient(&e))?;
    let burn = Burn {
        runner: runner.pubkey(),
        token_account,
        mint,
        decimals,
        token_program: mint_owner,
        held,
    };
    // The burn's index counts the compute-budget instructions the sender puts first, so the
    // price is fixed here and passed on.
    let price = sender
        .compute_unit_price(&compose(&burn, lamports_in, &route, 0)?, terms.fees)
        .map_err(|e| transient(&e))?;
    let instructions = compose(&burn, lamports_in, &route, price)?;
    let tokens_burned = burn
        .amount(&route)
        .ok_or_else(|| BuybackError::Setup("the burn overflows".into()))?;
    let fees = Fees {
        price: Some(price),
        ..terms.fees
    };
    progress(&format!(
        "buyback: {lamports_in} lamports through the {} for at least {} tokens (quoted {}); burning {tokens_burned} ({held} held before)",
        venue.name(),
        route.min_out,
        route.quoted_out
    ));
    // The route is checked once more on the message itself, as compiled for simulation and
    // for signing, with every account resolved through the tables read above.
    let vet = |resolved: &[Instruction]| vet_message(resolved, &instructions, &route, venue, &ask);
    let sent = sender
        .send_with_tables(
            &format!("buyback:{}", vault.last_buyback_ts),
            runner,
            &[],
            &instructions,
            &tables,
            fees,
            &vet,
        )
        .map_err(|e| match e {
            send::SendError::Refused(why) if why.ends_with("nothing was signed") => {
                BuybackError::Transient(format!(
                    "{}'s route is refused before signing: {why}",
                    venue.name()
                ))
            }
            e => transient(&e.explain()),
        })?;
    let signature = sent.signature.to_string();
    let surplus = burn_surplus(
        chain, outbox, runner, &burn, &signature, terms.fees, progress,
    );
    Ok(Outcome::Done {
        signature,
        lamports_in,
        quoted_out: route.quoted_out,
        tokens_burned,
        surplus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slippage_rounds_toward_the_buyer_getting_less() {
        assert_eq!(less_slippage(10_000, 100), Some(9_900));
        assert_eq!(less_slippage(999, 100), Some(989));
        assert_eq!(less_slippage(5, 10_000), Some(0));
        assert_eq!(less_slippage(5, 10_001), None);
        assert_eq!(less_slippage(u64::MAX, 0), Some(u64::MAX));
    }

    /// A Jupiter `route` swap of `lamports` from the runner's wrapped SOL into `account`.
    fn route_data(lamports: u64, slippage_bps: u16, fee_bps: u8) -> String {
        use base64::Engine as _;
        let mut data = JUPITER_ROUTE.to_vec();
        data.extend_from_slice(&[1, 0, 0, 0, 0x3a, 1, 100, 0, 1]);
        data.extend_from_slice(&lamports.to_le_bytes());
        data.extend_from_slice(&1_000u64.to_le_bytes());
        data.extend_from_slice(&slippage_bps.to_le_bytes());
        data.push(fee_bps);
        base64::engine::general_purpose::STANDARD.encode(data)
    }

    fn answer(ask: &Ask) -> Value {
        let jup = JUPITER_PROGRAM.to_string();
        let meta = |k: &Pubkey, signer: bool, writable: bool| json!({"pubkey": k.to_string(), "isSigner": signer, "isWritable": writable});
        json!({
            "inputMint": WSOL_MINT.to_string(),
            "outputMint": ask.mint.to_string(),
            "inAmount": "5000000",
            "outAmount": "1000",
            "otherAmountThreshold": "990",
            "swapInstruction": {"programId": jup, "data": route_data(5_000_000, 100, 0), "accounts": [
                meta(&TOKEN_PROGRAM_ID, false, false),
                meta(&ask.runner, true, true),
                meta(&ask.wrapped_sol(), false, true),
                meta(&ask.token_account, false, true),
                meta(&JUPITER_PROGRAM, false, false),
                meta(&ask.mint, false, false),
                meta(&JUPITER_PROGRAM, false, false),
            ]},
            "cleanupInstruction": null,
            "addressesByLookupTableAddress": {},
        })
    }

    #[test]
    fn a_build_answer_is_refused_unless_it_swaps_what_was_asked_through_known_programs() {
        let ask = Ask {
            runner: Pubkey::new_unique(),
            mint: Pubkey::new_unique(),
            token_account: Pubkey::new_unique(),
            lamports_in: 5_000_000,
            slippage_bps: 100,
        };
        let jupiter = Jupiter::new("http://127.0.0.1:9/".parse().unwrap(), None).unwrap();
        let good = answer(&ask);
        let route = parse_build(&good, &ask.mint, 5_000_000).unwrap();
        assert_eq!((route.quoted_out, route.min_out), (1_000, 990));
        check_route(&jupiter, &ask, &route).unwrap();
        let refused = |mutate: &dyn Fn(&mut Value), lamports: u64| {
            let mut v = good.clone();
            mutate(&mut v);
            match parse_build(&v, &ask.mint, lamports) {
                Err(e) => e.to_string(),
                Ok(route) => check_route(
                    &jupiter,
                    &Ask {
                        lamports_in: lamports,
                        ..ask
                    },
                    &route,
                )
                .unwrap_err(),
            }
        };
        assert!(refused(&|_| {}, 4_999_999).contains("not 4999999"));
        assert!(
            refused(
                &|v| v["outputMint"] = json!(WSOL_MINT.to_string()),
                5_000_000
            )
            .contains("not SOL into")
        );
        assert!(
            refused(&|v| v["otherAmountThreshold"] = json!("1001"), 5_000_000)
                .contains("minimum output")
        );
        assert!(
            refused(
                &|v| v["setupInstructions"] = json!([{"programId": Pubkey::new_unique().to_string(), "accounts": [], "data": ""}]),
                5_000_000
            )
            .contains("no business")
        );
        let stranger = Pubkey::new_unique().to_string();
        assert!(
            refused(
                &|v| v["swapInstruction"]["accounts"][4] =
                    json!({"pubkey": stranger, "isSigner": true, "isWritable": true}),
                5_000_000
            )
            .contains("to sign")
        );
        let elsewhere = refused(
            &|v| v["swapInstruction"]["accounts"][3]["pubkey"] = json!(stranger),
            5_000_000,
        );
        assert!(
            elsewhere.contains(&format!("delivers to {stranger}")),
            "{elsewhere}"
        );
        // The route's own arguments: another amount, a looser slippage, a platform fee.
        for (data, why) in [
            (route_data(5_000_001, 100, 0), "sell 5000001 lamports"),
            (route_data(5_000_000, 101, 0), "101 bps"),
            (route_data(5_000_000, 100, 5), "platform fee"),
        ] {
            let said = refused(&|v| v["swapInstruction"]["data"] = json!(data), 5_000_000);
            assert!(said.contains(why), "{said}");
        }
    }
}

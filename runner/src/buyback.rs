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
//! `tokens_burned` must be fixed before signing, so it is the venue's minimum output (the quote
//! less the slippage allowed), never the quote itself: the swap fails on-chain below it, the
//! burn destroys exactly it, and any surplus stays in the runner's token account (the next
//! buyback's swap adds to it; the log shows the burned amount). The program bounds the rest:
//! at most `max_buyback_lamports` once per `buyback_interval_secs`, never more than the fees
//! it booked, and never below the admin's floor rate (checked here first, so a bad quote costs
//! no fee).
//!
//! Venues ([`Venue`]): [`LocalPool`], the constant-product pool program of a local validator
//! (`programs/venue`), and [`Jupiter`], Jupiter's Swap API v2 `/build` route for public
//! clusters (raw instructions and lookup tables; see `shared/data/solana/FACTS.md` §4).

use std::time::Duration;

use serde_json::Value;
use skilltrial_chain::ix::{self, BuybackExecuteArgs};
use skilltrial_chain::outbox::Outbox;
use skilltrial_chain::rpc::Chain;
use skilltrial_chain::send::{Fees, Sender, budget_prefix};
use skilltrial_chain::token::{self, TOKEN_PROGRAM_ID, WSOL_MINT};
use skilltrial_chain::{AccountMeta, Instruction, PROGRAM_ID, Pubkey, venue};
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
    /// Address lookup tables the transaction may load accounts from.
    pub tables: Vec<AddressLookupTableAccount>,
}

/// Where fees are swapped for $SKTRIAL.
pub trait Venue: Send + Sync {
    /// Its name in logs and reports.
    fn name(&self) -> &'static str;
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

/// Jupiter's public Swap API base.
pub const JUPITER_URL: &str = "https://api.jup.ag/swap/v2";
/// Programs a Jupiter route may call. Anything else in an answer (a transfer to a stranger
/// dressed up as a setup step, a second buyback) is refused before it is signed.
const JUPITER_PROGRAMS: [Pubkey; 6] = [
    Pubkey::from_str_const("JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4"),
    TOKEN_PROGRAM_ID,
    Pubkey::from_str_const("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"),
    token::ATA_PROGRAM_ID,
    skilltrial_chain::SYSTEM_PROGRAM_ID,
    Pubkey::from_str_const("ComputeBudget111111111111111111111111111111"),
];
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
        parse_build(&answer, runner, mint, token_account, lamports_in)
    }
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

/// A `/build` answer as a route, refused unless it swaps exactly what was asked into the
/// runner's account of `mint`, through known programs only.
pub fn parse_build(
    answer: &Value,
    runner: &Pubkey,
    mint: &Pubkey,
    token_account: &Pubkey,
    lamports_in: u64,
) -> Result<Route, BuybackError> {
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
    let wrapped_sol = token::associated_account(runner, &WSOL_MINT, &TOKEN_PROGRAM_ID);
    for ix in setup.iter().chain(&swap).chain(&cleanup) {
        // The System program only moves the runner's SOL into its own wrapped-SOL account: a
        // tip or fee to anyone else is not part of a buyback.
        let strays = ix.program_id == skilltrial_chain::SYSTEM_PROGRAM_ID
            && ix
                .accounts
                .iter()
                .any(|m| m.is_writable && !m.is_signer && m.pubkey != wrapped_sol);
        if strays {
            return Err(bad(format!(
                "it moves SOL to {}, not into the runner's wrapped-SOL account",
                ix.accounts
                    .iter()
                    .find(|m| m.is_writable && !m.is_signer)
                    .map_or_else(String::new, |m| m.pubkey.to_string())
            )));
        }
        if let Some(why) = token_misuse(ix, runner, &wrapped_sol) {
            return Err(bad(why));
        }
        if !JUPITER_PROGRAMS.contains(&ix.program_id) {
            return Err(bad(format!(
                "it calls the program {}, which a swap has no business calling",
                ix.program_id
            )));
        }
        // Only the runner signs, and the buyback's own accounts are not the route's to touch.
        for meta in &ix.accounts {
            if meta.is_signer && meta.pubkey != *runner {
                return Err(bad(format!("it wants {} to sign", meta.pubkey)));
            }
            if meta.pubkey == PROGRAM_ID {
                return Err(bad("it names the SkillTrial program".to_owned()));
            }
        }
    }
    // The output must reach the account the burn takes it from.
    let reaches = swap
        .iter()
        .any(|ix| ix.accounts.iter().any(|m| m.pubkey == *token_account));
    if !reaches {
        return Err(bad(format!(
            "its swap does not deliver to the runner's token account {token_account}"
        )));
    }
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

/// Why a route's token or associated-account instruction is not one a swap needs, if it is not:
/// the token programs may only sync or close the runner's wrapped-SOL account (back to the
/// runner), and the associated token program may only create the runner's own accounts. (The
/// aggregator's own instruction moves tokens by CPI; what it may do is bounded by the minimum
/// output and the program's floor.)
fn token_misuse(ix: &Instruction, runner: &Pubkey, wrapped_sol: &Pubkey) -> Option<String> {
    const SYNC_NATIVE: u8 = 17;
    const CLOSE_ACCOUNT: u8 = 9;
    let key = |i: usize| ix.accounts.get(i).map(|m| m.pubkey);
    if ix.program_id == TOKEN_PROGRAM_ID || JUPITER_PROGRAMS[2] == ix.program_id {
        let ok = match ix.data.first() {
            Some(&SYNC_NATIVE) => key(0) == Some(*wrapped_sol),
            Some(&CLOSE_ACCOUNT) => key(0) == Some(*wrapped_sol) && key(1) == Some(*runner),
            _ => false,
        };
        return (!ok).then(|| {
            format!(
                "it asks the token program for instruction {:?} on {}, not a sync or close of the runner's wrapped-SOL account",
                ix.data.first(),
                key(0).map_or_else(String::new, |k| k.to_string())
            )
        });
    }
    if ix.program_id == token::ATA_PROGRAM_ID {
        let ok = ix.data.len() <= 1 && key(2) == Some(*runner);
        return (!ok).then(|| "it creates a token account that is not the runner's".to_owned());
    }
    None
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
}

/// The buyback transaction's instructions after the compute-budget ones the sender adds at
/// `price`: `buyback_execute`, the route's setup and swap, the burn of its minimum output, its
/// cleanup.
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
    let mut instructions = Vec::with_capacity(route.setup.len() + route.swap.len() + 3);
    instructions.push(ix::buyback_execute(
        &burn.runner,
        &burn.token_account,
        BuybackExecuteArgs {
            lamports_in,
            tokens_burned: route.min_out,
            burn_index,
        },
    ));
    instructions.extend(route.setup.iter().cloned());
    instructions.extend(route.swap.iter().cloned());
    instructions.push(token::burn_checked(
        &burn.token_account,
        &burn.mint,
        &burn.runner,
        route.min_out,
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
    /// Bought and burned in `signature`.
    Done {
        signature: String,
        lamports_in: u64,
        quoted_out: u64,
        tokens_burned: u64,
    },
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
        .and_then(|(owner, _, data)| token::read_mint(&data).map(|(_, d)| (owner, d)))
        .ok_or_else(|| {
            BuybackError::Setup(format!(
                "the configured $SKTRIAL mint {mint} is not a token mint on this cluster"
            ))
        })?;
    let token_account = token::associated_account(&runner.pubkey(), &mint, &mint_owner);
    let has_account = chain
        .account(&token_account)
        .map_err(|e| transient(&e))?
        .is_some();
    if !has_account {
        // The buyback checks the account before the swap runs: it must exist beforehand.
        progress(&format!(
            "creating the runner's $SKTRIAL account {token_account}"
        ));
        let mut sender = Sender::new(chain, outbox, progress).map_err(|e| transient(&e))?;
        let create = token::create_associated_account(&runner.pubkey(), &runner.pubkey(), &mint);
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
    let route = venue.route(
        &runner.pubkey(),
        &mint,
        &token_account,
        lamports_in,
        terms.slippage_bps,
    )?;
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
    let mut sender = Sender::new(chain, outbox, progress).map_err(|e| transient(&e))?;
    let burn = Burn {
        runner: runner.pubkey(),
        token_account,
        mint,
        decimals,
    };
    // The burn's index counts the compute-budget instructions the sender puts first, so the
    // price is fixed here and passed on.
    let price = sender
        .compute_unit_price(&compose(&burn, lamports_in, &route, 0)?, terms.fees)
        .map_err(|e| transient(&e))?;
    let instructions = compose(&burn, lamports_in, &route, price)?;
    let fees = Fees {
        price: Some(price),
        ..terms.fees
    };
    progress(&format!(
        "buyback: {lamports_in} lamports through the {} for at least {} tokens (quoted {})",
        venue.name(),
        route.min_out,
        route.quoted_out
    ));
    let sent = sender
        .send_with_tables(
            &format!("buyback:{}", vault.last_buyback_ts),
            runner,
            &[],
            &instructions,
            &route.tables,
            fees,
        )
        .map_err(|e| transient(&e.explain()))?;
    Ok(Outcome::Done {
        signature: sent.signature.to_string(),
        lamports_in,
        quoted_out: route.quoted_out,
        tokens_burned: route.min_out,
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

    fn answer(runner: &Pubkey, mint: &Pubkey, account: &Pubkey) -> Value {
        let jup = "JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4";
        json!({
            "inputMint": WSOL_MINT.to_string(),
            "outputMint": mint.to_string(),
            "inAmount": "5000000",
            "outAmount": "1000",
            "otherAmountThreshold": "990",
            "swapInstruction": {"programId": jup, "data": "AQID", "accounts": [
                {"pubkey": runner.to_string(), "isSigner": true, "isWritable": true},
                {"pubkey": account.to_string(), "isSigner": false, "isWritable": true},
            ]},
            "cleanupInstruction": null,
            "addressesByLookupTableAddress": {},
        })
    }

    #[test]
    fn a_build_answer_is_refused_unless_it_swaps_what_was_asked_through_known_programs() {
        let (runner, mint, account) = (
            Pubkey::new_unique(),
            Pubkey::new_unique(),
            Pubkey::new_unique(),
        );
        let good = answer(&runner, &mint, &account);
        let route = parse_build(&good, &runner, &mint, &account, 5_000_000).unwrap();
        assert_eq!((route.quoted_out, route.min_out), (1_000, 990));
        assert_eq!(route.swap[0].data, vec![1, 2, 3]);
        let refused = |mutate: &dyn Fn(&mut Value), lamports: u64| {
            let mut v = good.clone();
            mutate(&mut v);
            parse_build(&v, &runner, &mint, &account, lamports)
                .unwrap_err()
                .to_string()
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
                &|v| v["swapInstruction"]["accounts"][1] =
                    json!({"pubkey": stranger, "isSigner": true, "isWritable": true}),
                5_000_000
            )
            .contains("to sign")
        );
        assert!(
            refused(
                &|v| v["swapInstruction"]["accounts"][1]["pubkey"] =
                    json!(Pubkey::new_unique().to_string()),
                5_000_000
            )
            .contains("does not deliver")
        );
    }
}

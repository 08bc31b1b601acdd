//! The HTTP API's bodies, shared by the daemon ([`crate::http`]) and its client
//! ([`crate::client`]). Amounts are integer lamports; times are Unix seconds.
//!
//! | method and path | who | what |
//! | --- | --- | --- |
//! | `GET /v1/info` | anyone | the runner key, origin, chain, profiles served |
//! | `GET /v1/auth/challenge?address=A` | anyone | a Sign-In With Solana message to sign |
//! | `POST /v1/auth/verify` | anyone | the signed message → a session (bearer token and cookie) |
//! | `POST /v1/trees?kind=bundle\|pack` | session | upload a bundle's or a pack's files |
//! | `POST /v1/manifests` | session | upload a manifest; its terms come back |
//! | `POST /v1/runs/check` | session | before the escrow: would the daemon register this run? |
//! | `POST /v1/runs` | session | register an escrowed run: the daemon starts it |
//! | `GET /v1/runs` | session | your runs |
//! | `GET /v1/runs/{run}` | its owner | where it stands |
//! | `GET /v1/runs/{run}/events` | its owner | server-sent events: progress, settlements, phases |
//! | `GET /v1/runs/{run}/report.json`, `report.html` | its owner | the report, once finalized |
//!
//! The New-run page's own routes (the page, `/v1/offer`, `/v1/chain/*`) are listed in
//! [`crate::http::page`].

use serde::{Deserialize, Serialize};

/// `GET /v1/info`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Info {
    pub service: String,
    pub version: String,
    /// The runner key runs must name (base58).
    pub runner: String,
    pub origin: String,
    /// `mainnet`, `devnet`, `testnet` or `localnet`.
    pub chain_id: String,
    pub program: String,
    /// The model profiles this runner executes (a manifest must pin one of them exactly).
    pub profiles: Vec<String>,
    /// The SOL/USD rate this runner is repaid at: a manifest must pin one within its tolerance,
    /// pinned recently (`plan --sol-usd`).
    pub sol_usd: Rate,
    /// The buyback schedule (venue, how often it looks, minimum, slippage) and the last
    /// attempt's outcome; `null` when the operator makes no buybacks.
    #[serde(default)]
    pub buyback: serde_json::Value,
}

/// The operator's SOL/USD terms, in `GET /v1/info`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Rate {
    /// µUSD per SOL (151.25 USD/SOL is 151_250_000).
    pub usd_micros_per_sol: u64,
    /// How far a manifest's pinned rate may be from it, in basis points of it.
    pub tolerance_bps: u32,
    /// How old a manifest's pin may be, in seconds.
    pub max_age_secs: i64,
}

/// `GET /v1/auth/challenge`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Challenge {
    /// The exact text to sign (UTF-8).
    pub message: String,
    pub nonce: String,
    pub expires_at: i64,
}

/// `POST /v1/auth/verify`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignIn {
    /// The signed bytes as text, exactly as signed.
    pub message: String,
    /// Base58 Ed25519 signature.
    pub signature: String,
    /// Base58 public key.
    pub address: String,
}

/// A session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// The bearer token (also set as an HttpOnly cookie for the page). Shown once.
    pub token: String,
    pub address: String,
    pub expires_at: i64,
}

/// One file of an uploaded tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TreeFile {
    pub path: String,
    /// Standard base64, padded.
    pub base64: String,
}

/// `POST /v1/trees` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tree {
    pub files: Vec<TreeFile>,
}

/// `POST /v1/trees` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stored {
    pub kind: String,
    /// The content digest (hex): what a manifest pins.
    pub digest: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub files: usize,
}

/// `POST /v1/manifests` answer: what the wallet must escrow for it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Terms {
    pub manifest: String,
    pub trials: u16,
    pub per_request_cap_lamports: u64,
    pub fee_per_trial_lamports: u64,
    pub escrow_lamports: u64,
    pub runner: String,
    /// The shortest deadline (seconds from now) the runner accepts for it.
    pub min_deadline_secs: i64,
}

/// `POST /v1/runs` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Register {
    pub manifest: String,
}

/// A run as its owner sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunView {
    pub run: String,
    pub user: String,
    pub manifest: String,
    pub run_id: u64,
    pub deadline: i64,
    pub phase: String,
    pub detail: Option<String>,
    /// The latest progress event's data (done, total, counts, spent, reserved), if any.
    pub progress: Option<serde_json::Value>,
    pub settled_trials: usize,
    pub settle_batches: usize,
    pub report_hash: Option<String>,
    pub finalize_signature: Option<String>,
}

/// An error answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiError {
    pub error: String,
    /// A stable name for the case: `unauthenticated`, `forbidden`, `not_found`, `invalid`,
    /// `too_large`, `timeout` (a body that did not arrive in time), `busy` (as many uploads
    /// read at once as the runner reads: retry after `Retry-After`), `refused`, `conflict`,
    /// `unavailable`, `not_yet`, `internal`.
    pub code: String,
}

/// `POST /v1/runs/check` body: the run `submit` is about to escrow.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    /// The manifest hash (hex).
    pub manifest: String,
    /// The deadline the escrow will be opened with, in seconds from now.
    pub deadline_secs: i64,
}

/// `POST /v1/runs/check` answer: every check registration makes, but the Run account's, passed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checked {
    /// The Run account's address the escrow will open.
    pub run: String,
    pub manifest: String,
    /// The run, when this wallet's run of this manifest is already registered and executing:
    /// nothing to escrow again.
    pub registered: Option<RunView>,
    /// Whether the Run account exists already (an escrow that landed but was never
    /// registered): register it; do not escrow again.
    #[serde(default)]
    pub escrowed: bool,
    /// The shortest deadline the daemon takes for this manifest, in seconds.
    pub min_deadline_secs: i64,
}

/// `GET /v1/offer`: what the page plans with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Offer {
    /// The priced profiles this runner executes, each exactly as it runs it.
    pub profiles: Vec<OfferedProfile>,
    /// The embedded packs.
    pub packs: Vec<String>,
    /// The program config's fee per executed trial (the program refuses any other).
    pub fee_per_trial_lamports: u64,
    /// The deadline the page proposes, in seconds from the escrow.
    pub default_deadline_secs: i64,
}

/// One profile of [`Offer`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OfferedProfile {
    pub profile: skilltrial_core::profile::Profile,
    /// Where this runner sends its requests (scheme, host, port, path): what a manifest pins.
    pub endpoint: String,
    /// The scripted demo model (`runner serve --demo-model`), not a real model: its manifests
    /// and reports say `scripted`.
    #[serde(default)]
    pub demo: bool,
}

/// `GET /v1/chain/blockhash`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Blockhash {
    pub blockhash: String,
    pub last_valid_block_height: u64,
    /// The cluster's clock (Unix seconds, the block time of its latest slot): what the program
    /// judges deadlines by, so the page sets them from it, never from the browser's clock.
    #[serde(default)]
    pub cluster_time: i64,
}

/// `GET /v1/runs/{run}/funds`: where a run's lamports are, read from the chain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Funds {
    /// The live Run account's money, or `None` once it is gone.
    pub account: Option<HeldFunds>,
}

/// A live Run account's lamports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeldFunds {
    pub escrowed: u64,
    pub settled_usage: u64,
    pub settled_fees: u64,
    /// The account's balance: what is still held (the escrow's remainder) plus its rent, all of
    /// which returns to the owner on close.
    pub lamports: u64,
}

/// `POST /v1/chain/send` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Relay {
    /// The signed transaction, standard base64.
    pub transaction: String,
}

/// `POST /v1/chain/send` answer: confirmed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Relayed {
    pub signature: String,
    pub slot: u64,
}

/// `GET /v1/runs/{run}/verification`: `skilltrial verify --run` for the page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verification {
    pub checks: Vec<VerifiedCheck>,
}

/// One check of a [`Verification`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifiedCheck {
    pub name: String,
    pub ok: bool,
    /// Not decided yet (the anchor is not finalized yet): ask again in a few seconds.
    #[serde(default)]
    pub pending: bool,
    /// What was compared, or where it falls short.
    pub detail: String,
}

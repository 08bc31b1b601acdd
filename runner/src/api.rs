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
//!
//! Objects the daemon once built as JSON maps (events, progress, the buyback outcome) declare
//! their fields in alphabetical order: serde_json wrote those maps' keys sorted, and the bytes on
//! the wire and in the state stay what they were.
//!
//! The page's TypeScript types are generated from these (`web/src/wire.ts`; the test
//! `api::tests::the_pages_wire_types_are_generated_from_these` checks it is current).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::state::Phase;

/// `GET /v1/info`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
    /// The buyback schedule and the last attempt's outcome; `null` when the operator makes no
    /// buybacks.
    #[serde(default)]
    pub buyback: Option<BuybackInfo>,
    /// The most requests one run may have in flight at once on this runner
    /// (`runner serve --max-concurrency`): a run asks for 1 up to it when it is registered. A
    /// runner from before concurrency runs one at a time, and says nothing: 1.
    #[serde(default = "sequential")]
    pub max_concurrency: u32,
}

/// One request in flight: what a run asks for when it says nothing, and what a runner that
/// does not advertise a maximum runs.
fn sequential() -> u32 {
    skilltrial_core::concurrency::Concurrency::SEQUENTIAL.get()
}

/// The operator's SOL/USD terms, in `GET /v1/info`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Challenge {
    /// The exact text to sign (UTF-8).
    pub message: String,
    pub nonce: String,
    pub expires_at: i64,
}

/// `POST /v1/auth/verify`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Session {
    /// The bearer token (also set as an HttpOnly cookie for the page). Shown once.
    pub token: String,
    pub address: String,
    pub expires_at: i64,
}

/// One file of an uploaded tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TreeFile {
    pub path: String,
    /// Standard base64, padded.
    pub base64: String,
}

/// `POST /v1/trees` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Tree {
    pub files: Vec<TreeFile>,
}

/// `POST /v1/trees` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Register {
    pub manifest: String,
    /// Requests in flight at once for this run, 1 up to the runner's `max_concurrency`; 1 when
    /// missing. It changes how long the run takes, never what it sends or finds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub concurrency: Option<u32>,
}

/// A run as its owner sees it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RunView {
    pub run: String,
    pub user: String,
    pub manifest: String,
    pub run_id: u64,
    pub deadline: i64,
    pub phase: Phase,
    pub detail: Option<String>,
    /// The latest progress event's data, if any.
    pub progress: Option<Progress>,
    pub settled_trials: usize,
    pub settle_batches: usize,
    pub report_hash: Option<String>,
    pub finalize_signature: Option<String>,
    /// Requests in flight at once, as the run was registered with (1 from a runner from
    /// before concurrency).
    #[serde(default = "sequential")]
    pub concurrency: u32,
}

/// An error answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Check {
    /// The manifest hash (hex).
    pub manifest: String,
    /// The deadline the escrow will be opened with, in seconds from now.
    pub deadline_secs: i64,
    /// The concurrency the run will be registered with ([`Register::concurrency`]), checked
    /// against the runner's maximum before anything is escrowed; 1 when missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub concurrency: Option<u32>,
}

/// `POST /v1/runs/check` answer: every check registration makes, but the Run account's, passed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct OfferedProfile {
    /// The core's profile, as its serde form writes it (the page reads these fields and passes
    /// the whole back to the planner).
    #[cfg_attr(
        test,
        ts(
            type = "{ id: string; provider: string; model: string; price: unknown; [key: string]: unknown }"
        )
    )]
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
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Funds {
    /// The live Run account's money, or `None` once it is gone.
    pub account: Option<HeldFunds>,
}

/// A live Run account's lamports.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Relay {
    /// The signed transaction, standard base64.
    pub transaction: String,
}

/// `POST /v1/chain/send` answer: confirmed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Relayed {
    pub signature: String,
    pub slot: u64,
}

/// `GET /v1/runs/{run}/verification`: `skilltrial verify --run` for the page.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Verification {
    pub checks: Vec<VerifiedCheck>,
}

/// One check of a [`Verification`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct VerifiedCheck {
    pub name: String,
    pub ok: bool,
    /// Not decided yet (the anchor is not finalized yet): ask again in a few seconds.
    #[serde(default)]
    pub pending: bool,
    /// What was compared, or where it falls short.
    pub detail: String,
}

/// The buyback schedule, in `GET /v1/info`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BuybackInfo {
    /// How often the daemon checks whether a buyback is due.
    pub every_secs: u64,
    /// The last attempt's outcome, `null` before the first.
    pub last: Option<BuybackOutcome>,
    pub min_lamports: u64,
    pub slippage_bps: u16,
    /// `localnet pool`, or `jupiter (<its base URL>)`.
    pub venue: String,
}

/// How a buyback attempt ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum BuybackOutcome {
    /// Fees swapped for $SKTRIAL and burned (`buyback_execute` landed in `signature`).
    Done {
        lamports_in: u64,
        quoted_out: u64,
        signature: String,
        /// Tokens the swap filled above its minimum, burned after it.
        surplus_burned: u64,
        /// Why that surplus is not burned yet, if it is not.
        surplus_left: Option<String>,
        /// The surplus burn's transaction, if there was one.
        surplus_signature: Option<String>,
        tokens_burned: u64,
    },
    /// The program's interval has not passed: the next is allowed at `next_at` (Unix seconds).
    NotDue {
        next_at: i64,
    },
    /// Too few fees are booked to be worth a swap.
    TooLittle {
        minimum: u64,
        unreleased: u64,
    },
    Failed {
        error: String,
    },
}

/// `GET /v1/auth/session`: the signed-in wallet, or `null`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SignedIn {
    pub address: Option<String>,
}

/// One event of a run (`GET /v1/runs/{run}/events`). `kind` names it and `data` holds its
/// fields: the SSE frame's `event:` is the kind, its `id:` the event's number in the run, and
/// its `data:` is [`Framed`]. The state stores `kind` and `data` as they are here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Event {
    /// Where the run stands: trials done, their outcomes, money.
    Progress(Progress),
    /// The run entered a phase.
    Phase(PhaseChange),
    /// A settlement batch landed on-chain.
    Settled(Settled),
    /// Something the owner should know: a wait, a batch that cannot be charged, the daemon
    /// stopping.
    Notice(Notice),
}

impl Event {
    /// The event's `kind` (the SSE event name).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Progress(_) => "progress",
            Self::Phase(_) => "phase",
            Self::Settled(_) => "settled",
            Self::Notice(_) => "notice",
        }
    }

    /// The event's `data`, as stored and streamed.
    pub fn data(&self) -> serde_json::Value {
        let data = match self {
            Self::Progress(p) => serde_json::to_value(p),
            Self::Phase(p) => serde_json::to_value(p),
            Self::Settled(s) => serde_json::to_value(s),
            Self::Notice(n) => serde_json::to_value(n),
        };
        // These types hold only strings, numbers and lists: they always serialize.
        data.unwrap_or(serde_json::Value::Null)
    }

    /// The event of `kind` with `data`, as the state stores it and the stream frames it.
    pub fn from_parts(kind: &str, data: serde_json::Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(serde_json::json!({ "kind": kind, "data": data }))
    }

    /// Whether the run is over after it (finalized or failed): a stream ends with it.
    pub fn ends_run(&self) -> bool {
        matches!(self, Self::Phase(p) if p.phase.is_final())
    }
}

/// The `data:` of an event's SSE frame.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Framed {
    /// When the daemon recorded it (Unix seconds).
    pub at: i64,
    /// The event's fields ([`Event::data`]).
    #[cfg_attr(test, ts(type = "Event[\"data\"]"))]
    pub data: serde_json::Value,
}

/// A run's progress: the engine's after each trial, or where a chunk of the run left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Progress {
    /// Trials by outcome (`pass`, `fail`, `not_run`, `unknown`, …).
    pub counts: BTreeMap<String, u32>,
    /// The trial in flight: (task, arm, repetition); `null` between trials.
    pub current: Option<(String, String, u32)>,
    /// Trials closed, of `total`.
    pub done: u32,
    /// µUSD reserved for requests in flight.
    pub reserved: u64,
    /// µUSD spent.
    pub spent: u64,
    /// The engine's status at the end of a chunk (`finished`, `cancelled`, …); absent from the
    /// progress of one trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub total: u32,
    /// Every planned trial's outcome so far (the live page's grid, `skilltrial_core::live`):
    /// the plan's tasks, arms and repetitions, and one code per trial in that order. Absent from
    /// a runner from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        test,
        ts(
            type = "{ tasks: Array<string>; arms: Array<string>; repetitions: number; outcomes: string } | null"
        )
    )]
    pub trials: Option<skilltrial_core::live::LiveTrials>,
}

/// A [`Event::Phase`]: the run entered `phase`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PhaseChange {
    /// Why (a failure's reason), or `null`.
    pub detail: Option<String>,
    pub phase: Phase,
    /// The `run_finalize` transaction, on `finalized`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// A [`Event::Settled`]: settlement batch `batch` landed in `signature`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Settled {
    pub batch: u32,
    pub signature: String,
    /// The trials it charged.
    pub trials: Vec<u16>,
    pub usage_lamports: u64,
}

/// A [`Event::Notice`]: a message for the run's owner, with what it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Notice {
    /// The settlement batch it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// Whether that batch's trials are charged (`false`: they cost nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charged: Option<bool>,
    pub message: String,
    /// When the run is tried again, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_in_secs: Option<u64>,
    /// The daemon is stopping: the stream ends here (never recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<bool>,
    /// The trials of that batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<Vec<u16>>,
}

impl Notice {
    /// A notice that says `message` and nothing else.
    pub fn says(message: impl Into<String>) -> Self {
        Self {
            batch: None,
            charged: None,
            message: message.into(),
            retry_in_secs: None,
            stopping: None,
            trials: None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use ts_rs::TS;

    use super::*;

    /// The page's wire types, generated: `web/src/api.ts` imports them.
    const WIRE_TS: &str = "web/src/wire.ts";

    /// What regenerates it.
    const REGENERATE: &str = "SKILLTRIAL_WRITE_WIRE=1 cargo test -p skilltrial-runner --lib wire_types_are, then bash scripts/web.sh";

    /// Every wire type's TypeScript declaration, in one file. Integers are `number`: every
    /// amount the API carries is below 2^53 (lamports and µUSD of a run).
    fn rendered() -> String {
        let cfg = ts_rs::Config::new().with_large_int("number");
        let declarations = [
            Info::decl(&cfg),
            Rate::decl(&cfg),
            BuybackInfo::decl(&cfg),
            BuybackOutcome::decl(&cfg),
            Challenge::decl(&cfg),
            SignIn::decl(&cfg),
            Session::decl(&cfg),
            SignedIn::decl(&cfg),
            TreeFile::decl(&cfg),
            Tree::decl(&cfg),
            Stored::decl(&cfg),
            Terms::decl(&cfg),
            Register::decl(&cfg),
            Phase::decl(&cfg),
            RunView::decl(&cfg),
            Progress::decl(&cfg),
            Event::decl(&cfg),
            Framed::decl(&cfg),
            PhaseChange::decl(&cfg),
            Settled::decl(&cfg),
            Notice::decl(&cfg),
            ApiError::decl(&cfg),
            Check::decl(&cfg),
            Checked::decl(&cfg),
            Offer::decl(&cfg),
            OfferedProfile::decl(&cfg),
            Blockhash::decl(&cfg),
            Funds::decl(&cfg),
            HeldFunds::decl(&cfg),
            Relay::decl(&cfg),
            Relayed::decl(&cfg),
            Verification::decl(&cfg),
            VerifiedCheck::decl(&cfg),
        ];
        let mut out = format!(
            "// Generated from runner/src/api.rs by its test `wire_types_are_the_committed_typescript`:\n// do not edit. To regenerate: {REGENERATE}.\n"
        );
        for declaration in declarations {
            out.push('\n');
            out.push_str("export ");
            out.push_str(&declaration);
            out.push('\n');
        }
        out
    }

    #[test]
    fn wire_types_are_the_committed_typescript() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(WIRE_TS);
        let want = rendered();
        if std::env::var_os("SKILLTRIAL_WRITE_WIRE").is_some() {
            std::fs::write(&path, &want).unwrap();
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{WIRE_TS} is not what runner/src/api.rs generates: {REGENERATE}; and commit both"
        );
    }

    #[test]
    fn an_event_keeps_its_kind_and_data_as_stored_and_framed() {
        // Given the events as the daemon once built them as JSON maps
        let stored = [
            (
                "progress",
                serde_json::json!({"counts": {"pass": 2}, "current": ["t1", "B", 0], "done": 2, "reserved": 5, "spent": 7, "total": 4}),
            ),
            (
                "progress",
                serde_json::json!({"counts": {}, "current": null, "done": 4, "reserved": 0, "spent": 9, "status": "finished", "total": 4}),
            ),
            (
                "phase",
                serde_json::json!({"detail": null, "phase": "executing"}),
            ),
            (
                "phase",
                serde_json::json!({"detail": null, "phase": "finalized", "signature": "sig"}),
            ),
            (
                "settled",
                serde_json::json!({"batch": 1, "signature": "sig", "trials": [0, 1], "usage_lamports": 10}),
            ),
            ("notice", serde_json::json!({"message": "m"})),
            (
                "notice",
                serde_json::json!({"batch": 2, "charged": false, "message": "m", "trials": [3]}),
            ),
        ];
        for (kind, data) in stored {
            // When each is read as a typed event and written back
            let event = Event::from_parts(kind, data.clone()).unwrap();

            // Then its kind and its data are the same bytes
            assert_eq!(event.kind(), kind);
            assert_eq!(event.data().to_string(), data.to_string());
        }
        // An unknown kind is refused in words, never guessed
        let why = Event::from_parts("surprise", serde_json::json!({})).unwrap_err();
        assert!(why.to_string().contains("surprise"), "{why}");
    }
}

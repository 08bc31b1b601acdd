//! SkillTrial's pure core: everything that decides, computes or renders without touching a disk,
//! a network, a database or a clock it was not given.
//!
//! [`bundle`] imports and validates skill bundles in memory (from files or ZIP bytes); [`digest`]
//! is the one canonical content digest (bundles and packs); [`canonical`] is RFC 8785 JSON for
//! hashing; [`money`] is micro-USD with checked arithmetic; [`profile`] names models and prices;
//! [`pack`] holds the fixture packs (embedded at build time) and their golden records; [`solana`]
//! is the pack's decoder; [`checker`] scores one answer against one golden record; [`outcome`]
//! names what became of a trial; [`state`] names the other states the journal stores (run
//! status, attempt state, not-run reasons, ledger and payload kinds); [`manifest`] pins a run and
//! is THE plan function; [`prompt`] builds the pinned prompt; [`stats`] holds the paired tests;
//! [`report`] is the typed report, its builder, its hashes and its HTML view; [`settlement`]
//! defines a hosted run's evidence records and the settlement digest the program keeps.
//! [`ledger`] puts the reports of one measurement on several models side by side. [`svg`] writes
//! the pages' inline charts, every text escaped; [`live`] is a run's trials as they land, drawn
//! as the live page's grid.
//!
//! **Invariant:** no dependency here touches SQLite, HTTP, a keychain, an async runtime or Solana
//! RPC, so the same code runs in the CLI, the hosted runner and the browser. `scripts/test.sh`
//! builds this crate for `wasm32-unknown-unknown` and checks its dependency tree.

pub mod bundle;
pub mod canonical;
pub mod checker;
pub mod concurrency;
pub mod delivery;
pub mod digest;
pub mod gate;
pub mod hosted;
pub mod ledger;
pub mod live;
pub mod manifest;
pub mod money;
pub mod outcome;
pub mod pack;
pub mod profile;
pub mod prompt;
pub mod report;
pub mod settlement;
pub mod solana;
pub mod state;
pub mod stats;
pub mod svg;
pub mod time;

/// The application version recorded in manifests and printed by `--version`.
pub const APP_VERSION: &str = env!("CARGO_PKG_VERSION");

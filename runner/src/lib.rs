//! SkillTrial's off-chain library. The CLI and the hosted runner daemon are thin shells over it.
//!
//! Module map (see ARCHITECTURE.md): [`bundle`] imports and validates skill bundles entirely in
//! memory; [`digest`] is the one canonical content digest used for bundles and packs; [`pack`]
//! loads and verifies fixture packs; [`solana`] is the pack's decoder; [`checker`] scores one
//! answer against one golden record; [`outcome`] names what became of a trial; [`home`]
//! resolves where state lives. Nothing in this crate prints to a terminal or picks exit codes.

pub mod bundle;
pub mod canonical;
pub mod checker;
pub mod demo;
pub mod digest;
pub mod engine;
pub mod home;
pub mod journal;
pub mod keys;
pub mod manifest;
pub mod money;
pub mod outcome;
pub mod pack;
pub mod profile;
pub mod prompt;
pub mod provider;
pub mod report;
pub mod scripted;
pub mod solana;
pub mod stats;
pub mod store;

/// The application version recorded in manifests and printed by `--version`.
pub const APP_VERSION: &str = env!("CARGO_PKG_VERSION");

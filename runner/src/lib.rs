//! SkillTrial's off-chain library. The CLI and the hosted runner daemon are thin shells over it.
//!
//! Module map (see ARCHITECTURE.md): [`bundle`] imports and validates skill bundles entirely in
//! memory; [`digest`] is the one canonical content digest used for bundles and packs; [`home`]
//! resolves where state lives. Nothing in this crate prints to a terminal or picks exit codes.

pub mod bundle;
pub mod digest;
pub mod home;
pub mod solana;

/// The application version recorded in manifests and printed by `--version`.
pub const APP_VERSION: &str = env!("CARGO_PKG_VERSION");

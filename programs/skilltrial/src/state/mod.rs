//! Program accounts. Every type documents its fields and checks its own invariant; each
//! instruction that mutates one calls `invariant()` last.

pub mod buyback_log;
pub mod config;
pub mod fee_vault;
pub mod run;

pub use buyback_log::*;
pub use config::*;
pub use fee_vault::*;
pub use run::*;

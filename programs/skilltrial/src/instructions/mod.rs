//! One file per instruction: its arguments, its accounts, `validate()` and the handler. The
//! admin's four governance instructions share `config_update.rs`.

pub mod buyback_execute;
pub mod config_init;
pub mod config_update;
pub mod run_cancel;
pub mod run_close;
pub mod run_finalize;
pub mod run_open;
pub mod run_refund_expired;
pub mod run_settle;

pub use buyback_execute::*;
pub use config_init::*;
pub use config_update::*;
pub use run_cancel::*;
pub use run_close::*;
pub use run_finalize::*;
pub use run_open::*;
pub use run_refund_expired::*;
pub use run_settle::*;

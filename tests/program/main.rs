//! The SkillTrial program in a real Solana runtime: solana-program-test 4.2.2 (Agave 4.2.2)
//! loads the sBPF v3 `.so` built by `scripts/build-sbf.sh` from `target/deploy/` and runs every
//! instruction, the happy path of a 54-trial run and a negative test per error. Lamports are
//! checked to be conserved at the end of every test. Compute units are printed as a table.
//!
//! Instructions, addresses and error codes come from the chain client (`skilltrial-chain`), the
//! same builders the hosted runner daemon uses: these tests drive the program the way it will
//! be driven.
//!
//! - `harness` — the runtime, one `Env` per test, sending, balances and conservation;
//! - `helper_program` — test-only builtins: a no-op and a CPI forwarder;
//! - `run` — a run's life: settle, cancel, finalize, refund, close, every refusal, cost targets;
//! - `buyback` — fee-vault buybacks against the real SPL Token and Token-2022 programs;
//! - `config` — config updates and hand-overs;
//! - `idl` — the committed IDL against the program crate;
//! - `native` — the native fallback layer (`SKILLTRIAL_PROGRAM_LAYER=native`).
#![cfg(feature = "chain")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

mod buyback;
mod config;
mod harness;
mod helper_program;
mod idl;
mod native;
mod run;

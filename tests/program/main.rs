//! The SkillTrial program in a real Solana runtime: solana-program-test 4.2.2 (Agave 4.2.2)
//! loads the sBPF v3 `.so` built by `scripts/build-sbf.sh` from `target/deploy/` and runs every
//! instruction, the happy path of a 54-trial run and a negative test per error. Every
//! transaction's lamports are checked account by account against what its arguments imply.
//! Compute units are printed as a table.
//!
//! Instructions, addresses and error codes come from the chain client (`skilltrial-chain`), the
//! same builders the hosted runner daemon uses: these tests drive the program the way it will
//! be driven.
//!
//! - `audit` — a hosted report against the real Run account it was settled into;
//! - `harness` — the runtime, one `Env` per test, sending, the expected-delta ledger, events;
//! - `helper_program` — test-only builtins: a no-op and a CPI forwarder;
//! - `run` — a run's life: settle, cancel, finalize, refund, close, every refusal, cost targets;
//! - `attacks` — the run side under attack: the ledger failing, substituted accounts and run ids,
//!   re-opened runs, exact edges, pull refunds, the spending limit, events, the digest vs core;
//! - `buyback` — fee-vault buybacks against the real SPL Token and Token-2022 programs;
//! - `config` — governance: bounds, the time lock, revocation, rotation, the admin handover;
//! - `exits` — the user's exits under a rent rise, pre-funded addresses with and without
//!   SIMD-0312, a settle batch claiming `u32::MAX` trials;
//! - `idl` — the committed IDL against the program crate;
//! - `native` — the native fallback layer (`SKILLTRIAL_PROGRAM_LAYER=native`).
#![cfg(feature = "chain")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

mod attacks;
mod audit;
mod buyback;
mod config;
mod exits;
mod harness;
mod helper_program;
mod idl;
mod native;
mod run;

//! SkillTrial's on-chain program: escrows a hosted run's reserve, settles per-trial fees, refunds
//! what was not used, records the report hash and gates buybacks (SPEC §9).
//!
//! This crate is the program skeleton that pins the Anchor cohort for the whole workspace (see
//! ARCHITECTURE.md). The instructions land with the program issue; until then the program has no
//! entry point that moves lamports, and `lib.rs` stays a dispatcher only.

use anchor_lang::prelude::*;

declare_id!("SkiLLTriaL111111111111111111111111111111111");

/// The program's instruction dispatcher.
#[program]
pub mod skilltrial {}

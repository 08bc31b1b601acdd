//! SkillTrial's Solana client: what every caller of the on-chain program needs — its id and the
//! ids it works with, its derived addresses (`pda`), one builder per instruction (`ix`) and the
//! codes it refuses with (`error`). The program tests drive the program through it, as the
//! hosted runner daemon will; sending and reading over Solana RPC will live here too, so that this
//! stays the only crate that speaks Solana.
//!
//! **Invariant:** program ids, seeds and instruction layouts come from the program crate
//! (`skilltrial`, built with `no-entrypoint`); nothing here retypes them. Instruction data is the
//! program's own `skilltrial::instruction::X` through `anchor_lang::InstructionData`, account
//! metas its own `skilltrial::accounts::X` through `ToAccountMetas`, so a changed program
//! signature fails to compile here instead of silently mis-encoding.
//!
//! **Keys cross between Anchor and the host cohort here and nowhere else.** Callers use the host
//! types (`solana_pubkey::Pubkey`, `solana_instruction::Instruction`), which the Agave 4.2.2
//! runtime and RPC crates take; the program crate speaks anchor-lang 1.2.2's. Today both name
//! the same types (solana-pubkey 3 and 4 re-export `solana_address::Address`; there is one
//! solana-instruction), so the conversions below are identities — and they are the one place that
//! relies on it: a cohort bump that splits the types stops compiling in `anchor_key`,
//! `from_anchor` and `to_instruction`, and the byte-for-byte conversion goes there.

// The program crate under its own name, in every module (the workspace dependency is
// `skilltrial-program`; its lib is `skilltrial`, as the program's own paths spell it).
extern crate skilltrial_program as skilltrial;

pub mod account;
pub mod anchor;
pub mod cli_config;
pub mod error;
pub mod escrow;
pub mod failpoint;
pub mod history;
pub mod ix;
pub mod outbox;
pub mod pda;
pub mod rpc;
pub mod send;
pub mod session;
pub mod token;
pub mod venue;
pub mod verify;

/// The program's constants (limits, windows), from the program crate itself.
pub use skilltrial::constants;

use anchor_lang::prelude::{AccountMeta as AnchorAccountMeta, Pubkey as AnchorPubkey};
pub use solana_instruction::{AccountMeta, Instruction};
pub use solana_pubkey::Pubkey;

/// The program's id (`declare_id!` in the program crate).
pub const PROGRAM_ID: Pubkey = from_anchor(skilltrial::ID);
/// The System program, which `config_init` and `run_open` create accounts through.
pub const SYSTEM_PROGRAM_ID: Pubkey = from_anchor(anchor_lang::system_program::ID);
/// The upgradeable BPF loader, under which the program's ProgramData address is derived.
pub const UPGRADEABLE_LOADER_ID: Pubkey =
    from_anchor(anchor_lang::solana_program::bpf_loader_upgradeable::ID);
/// The instructions sysvar `buyback_execute` reads the burn that must follow it from.
pub const INSTRUCTIONS_SYSVAR_ID: Pubkey =
    from_anchor(anchor_lang::compat::solana_instructions_sysvar::ID);

/// A host key as the program crate's key type, for the keys inside its `Args` types
/// (`ConfigInitArgs::runner`, …). See the crate docs: the identity today, and the one place a
/// split cohort would convert.
pub fn anchor_key(key: &Pubkey) -> AnchorPubkey {
    *key
}

/// An address parsed off-chain (`core::solana::Address`, what the CLI's flags give) as the host's
/// key type: the same 32 bytes.
pub fn host_key(address: &skilltrial_core::solana::Address) -> Pubkey {
    Pubkey::new_from_array(address.0)
}

/// A program crate's key as the host's key type (see the module docs: the identity today).
const fn from_anchor(key: AnchorPubkey) -> Pubkey {
    key
}

/// An instruction to the program from its Anchor-encoded data and account metas.
fn to_instruction(data: Vec<u8>, accounts: Vec<AnchorAccountMeta>) -> Instruction {
    Instruction {
        program_id: PROGRAM_ID,
        accounts,
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids are the well-known addresses, not merely whatever the re-exports say: a wrong
    /// re-export would put every account meta at the wrong address.
    #[test]
    fn the_ids_are_the_well_known_addresses() {
        assert_eq!(
            PROGRAM_ID.to_string(),
            "SkiLLTriaL111111111111111111111111111111111"
        );
        assert_eq!(
            SYSTEM_PROGRAM_ID.to_string(),
            "11111111111111111111111111111111"
        );
        assert_eq!(
            UPGRADEABLE_LOADER_ID.to_string(),
            "BPFLoaderUpgradeab1e11111111111111111111111"
        );
        assert_eq!(
            INSTRUCTIONS_SYSVAR_ID.to_string(),
            "Sysvar1nstructions1111111111111111111111111"
        );
    }

    #[test]
    fn core_and_the_program_agree_on_the_most_trials_a_run_holds() {
        assert_eq!(
            skilltrial_core::hosted::MAX_TRIALS,
            crate::constants::MAX_TRIALS
        );
    }

    #[test]
    fn core_and_the_program_agree_on_the_least_per_request_cap() {
        assert_eq!(
            skilltrial_core::hosted::MIN_PER_REQUEST_CAP,
            crate::constants::MIN_PER_REQUEST_CAP
        );
    }

    #[test]
    fn core_and_the_program_agree_on_the_farthest_deadline() {
        assert_eq!(
            skilltrial_core::hosted::MAX_DEADLINE_SECS,
            crate::constants::MAX_DEADLINE_SECS
        );
    }
}

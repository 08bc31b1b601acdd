//! The program's derived addresses, off-chain: the config, the fee vault, the buyback log, one
//! run per (user, manifest hash), and the program's ProgramData account under the upgradeable
//! loader (whose upgrade authority alone may create the config).
//!
//! **Invariant:** program ids, seeds and instruction layouts come from the program crate; nothing
//! here retypes them. Seeds are `skilltrial::constants`' (which MUST NOT change: they derive
//! existing accounts); the derivations mirror the `seeds = [...]` of the program's account
//! constraints.

use skilltrial::constants::{BUYBACK_LOG_SEED, CONFIG_SEED, FEE_VAULT_SEED, RUN_SEED};

use crate::{PROGRAM_ID, Pubkey, UPGRADEABLE_LOADER_ID};

/// `[CONFIG_SEED]` → the program's single Config account.
pub fn config() -> Pubkey {
    find(&[CONFIG_SEED], &PROGRAM_ID)
}

/// `[FEE_VAULT_SEED]` → the fee vault that collects runner fees until a buyback.
pub fn fee_vault() -> Pubkey {
    find(&[FEE_VAULT_SEED], &PROGRAM_ID)
}

/// `[BUYBACK_LOG_SEED]` → the on-chain buyback log.
pub fn buyback_log() -> Pubkey {
    find(&[BUYBACK_LOG_SEED], &PROGRAM_ID)
}

/// `[RUN_SEED, user, manifest_hash]` → the run `user` opened for that manifest.
pub fn run(user: &Pubkey, manifest_hash: &[u8; 32]) -> Pubkey {
    find(&[RUN_SEED, user.as_ref(), manifest_hash], &PROGRAM_ID)
}

/// `[program id]` under the upgradeable loader → the program's ProgramData account, which names
/// its upgrade authority (`config_init` checks the signer against it).
pub fn program_data() -> Pubkey {
    find(&[PROGRAM_ID.as_ref()], &UPGRADEABLE_LOADER_ID)
}

/// The canonical (highest-bump) address; the program stores that bump and reuses it.
fn find(seeds: &[&[u8]], program: &Pubkey) -> Pubkey {
    Pubkey::find_program_address(seeds, program).0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds as the program documents them, typed out here on purpose: if a constant in
    /// `skilltrial::constants` ever changed, every existing account would be lost, and this fails.
    #[test]
    fn each_pda_is_derived_from_its_documented_seeds() {
        let user = Pubkey::new_from_array([5; 32]);
        let manifest = [9u8; 32];
        let expect = |seeds: &[&[u8]]| Pubkey::find_program_address(seeds, &PROGRAM_ID).0;
        assert_eq!(config(), expect(&[b"config"]));
        assert_eq!(fee_vault(), expect(&[b"fee_vault"]));
        assert_eq!(buyback_log(), expect(&[b"buyback_log"]));
        assert_eq!(
            run(&user, &manifest),
            expect(&[b"run", user.as_ref(), &manifest])
        );
    }

    /// The program checks its singletons by the addresses it derives at compile time
    /// (`constants::*_ADDRESS`); they are the canonical PDAs `config_init` creates.
    #[test]
    fn the_programs_compile_time_addresses_are_the_canonical_pdas() {
        use skilltrial::constants::{BUYBACK_LOG_ADDRESS, CONFIG_ADDRESS, FEE_VAULT_ADDRESS};
        assert_eq!(config(), CONFIG_ADDRESS);
        assert_eq!(fee_vault(), FEE_VAULT_ADDRESS);
        assert_eq!(buyback_log(), BUYBACK_LOG_ADDRESS);
    }

    #[test]
    fn a_run_is_one_per_user_and_manifest() {
        let (alice, bob) = (
            Pubkey::new_from_array([1; 32]),
            Pubkey::new_from_array([2; 32]),
        );
        let (one, two) = ([1u8; 32], [2u8; 32]);
        let runs = [
            run(&alice, &one),
            run(&alice, &two),
            run(&bob, &one),
            run(&bob, &two),
        ];
        for (i, a) in runs.iter().enumerate() {
            for b in &runs[i + 1..] {
                assert_ne!(a, b);
            }
            assert!(!a.is_on_curve(), "a PDA has no private key");
        }
        assert_eq!(
            run(&alice, &one),
            runs[0],
            "the derivation is deterministic"
        );
    }

    /// The loader's own helper (through anchor-lang) agrees on the ProgramData address.
    #[test]
    fn the_program_data_address_is_the_loaders() {
        let loaders = anchor_lang::solana_program::bpf_loader_upgradeable::get_program_data_address(
            &skilltrial::ID,
        );
        assert_eq!(program_data(), loaders);
    }
}

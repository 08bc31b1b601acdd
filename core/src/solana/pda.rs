//! Program-derived addresses and associated token accounts.
//!
//! A PDA is the first `sha256(seeds.. || [bump] || program_id || "ProgramDerivedAddress")`, for
//! bump from 255 down, that is *not* a point on the ed25519 curve (so no private key exists).

use curve25519_dalek::edwards::CompressedEdwardsY;
use sha2::{Digest, Sha256};

use super::{Address, program};

const PDA_MARKER: &[u8] = b"ProgramDerivedAddress";

/// `find_program_address`: the canonical (highest) bump and its address.
pub fn find_program_address(seeds: &[&[u8]], program_id: &Address) -> Option<(Address, u8)> {
    (0..=u8::MAX).rev().find_map(|bump| {
        let mut hasher = Sha256::new();
        for seed in seeds {
            hasher.update(seed);
        }
        hasher.update([bump]);
        hasher.update(program_id.bytes());
        hasher.update(PDA_MARKER);
        let hash: [u8; 32] = hasher.finalize().into();
        let on_curve = CompressedEdwardsY(hash).decompress().is_some();
        (!on_curve).then_some((Address(hash), bump))
    })
}

/// The associated token account of `owner` for `mint` under `token_program`.
pub fn associated_token_address(
    owner: &Address,
    mint: &Address,
    token_program: &Address,
) -> Option<Address> {
    let ata_program = Address::from_static(program::ASSOCIATED_TOKEN);
    find_program_address(
        &[owner.bytes(), token_program.bytes(), mint.bytes()],
        &ata_program,
    )
    .map(|(a, _)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The USDC token account HWbsF542… in the pack's data is the ATA of 9RvNi4p… (verified by
    /// the data's research script and, below, by the canonical crate).
    #[test]
    fn derives_a_known_mainnet_ata() {
        let owner: Address = "9RvNi4pPm8euMuPGPNQVjR8wWTPawZMvqfqA2QQmwVHC"
            .parse()
            .unwrap();
        let mint: Address = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
            .parse()
            .unwrap();
        let token = Address::from_static(program::TOKEN);
        let ata = associated_token_address(&owner, &mint, &token).unwrap();
        assert_eq!(
            ata.to_string(),
            "HWbsF542VSCxdGKcHrXuvJJnpwCEewmzdsG6KTxXMRRk"
        );
    }
}

//! The settlement digest a Run keeps (docs/program.md, "Evidence records and the settlement
//! digest"; `skilltrial_core::settlement` computes the same off-chain, and the program tests
//! compare the two): each `run_settle` batch folds in
//!
//! `next = sha256(prev ‖ evidence_hash ‖ u16_le(n) ‖ for each trial: u16_le(index) ‖ u64_le(usage))`
//!
//! starting from 32 zero bytes, where `evidence_hash` is the batch's hash over its trials'
//! evidence records. Anyone holding the report recomputes it and compares it with the account.

use crate::instructions::TrialCharge;

/// Bytes one trial adds to the digest input.
const ENTRY_BYTES: usize = 2 + 8;

/// The digest after folding one batch into `prev`. `trials` has at most `MAX_SETTLE_BATCH`
/// entries (checked by the caller), so the length fits a u16.
pub fn fold(prev: &[u8; 32], evidence_hash: &[u8; 32], trials: &[TrialCharge]) -> [u8; 32] {
    let count = u16::try_from(trials.len()).unwrap_or(u16::MAX);
    let mut entries =
        Vec::with_capacity(trials.len().saturating_mul(ENTRY_BYTES).saturating_add(2));
    entries.extend_from_slice(&count.to_le_bytes());
    for t in trials {
        entries.extend_from_slice(&t.index.to_le_bytes());
        entries.extend_from_slice(&t.usage.to_le_bytes());
    }
    solana_sha256_hasher::hashv(&[prev, evidence_hash, &entries]).to_bytes()
}

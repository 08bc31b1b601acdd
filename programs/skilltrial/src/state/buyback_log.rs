//! The buyback log: the last buybacks, as a ring buffer. Zero-copy: at 32 entries it is too
//! large to deserialize onto the 4 KiB sBPF stack, so instructions read it in place.

use anchor_lang::prelude::*;

use crate::constants::BUYBACK_LOG_LEN;
use crate::error::SkillTrialError;

/// One buyback. Every field is 8-byte aligned or a byte array, so the layout has no padding.
#[zero_copy]
#[derive(Default, Debug, PartialEq, Eq)]
pub struct BuybackEntry {
    /// Unix time.
    pub at: i64,
    /// Fee-vault lamports released.
    pub lamports_in: u64,
    /// $SKTRIAL base units burned against them.
    pub tokens_burned: u64,
    /// The burn's instruction index in its transaction.
    pub burn_index: u64,
    /// The runner's token account the burn came from (its owner was checked to be the runner
    /// that signed).
    pub token_account: Pubkey,
}

#[account(zero_copy)]
#[derive(Debug)]
pub struct BuybackLog {
    /// Buybacks recorded so far (saturating).
    pub count: u64,
    /// Next slot to write.
    pub next: u64,
    /// The entries, oldest overwritten first.
    pub entries: [BuybackEntry; BUYBACK_LOG_LEN],
    /// Canonical bump.
    pub bump: u8,
    /// Keeps the layout free of implicit padding.
    pub padding: [u8; 7],
}

impl BuybackLog {
    /// Bytes of the account after its 8-byte discriminator.
    pub const SPACE: usize = core::mem::size_of::<Self>();

    /// Appends an entry.
    pub fn push(&mut self, entry: BuybackEntry) -> Result<()> {
        let slot = usize::try_from(self.next).map_err(|_| SkillTrialError::Overflow)?;
        *self
            .entries
            .get_mut(slot)
            .ok_or(SkillTrialError::Overflow)? = entry;
        let next = slot.checked_add(1).ok_or(SkillTrialError::Overflow)? % BUYBACK_LOG_LEN;
        self.next = u64::try_from(next).map_err(|_| SkillTrialError::Overflow)?;
        self.count = self.count.saturating_add(1);
        self.invariant()
    }

    /// The write position stays inside the buffer.
    pub fn invariant(&self) -> Result<()> {
        let next = usize::try_from(self.next).map_err(|_| SkillTrialError::Overflow)?;
        require!(next < BUYBACK_LOG_LEN, SkillTrialError::Overflow);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ring keeps the newest `BUYBACK_LOG_LEN` entries: after one more, the oldest slot is
    /// overwritten, `next` wraps to 1 and `count` keeps counting.
    #[test]
    fn the_log_wraps_after_its_length_and_keeps_counting() {
        let mut log = BuybackLog {
            count: 0,
            next: 0,
            entries: [BuybackEntry::default(); BUYBACK_LOG_LEN],
            bump: 255,
            padding: [0; 7],
        };
        let len = u64::try_from(BUYBACK_LOG_LEN).unwrap();
        for at in 1..=len + 1 {
            log.push(BuybackEntry {
                at: i64::try_from(at).unwrap(),
                ..BuybackEntry::default()
            })
            .unwrap();
        }
        assert_eq!((log.next, log.count), (1, len + 1));
        assert_eq!(log.entries[0].at, i64::try_from(len + 1).unwrap());
        assert_eq!(log.entries[1].at, 2);
    }

    /// The layout is what the docs and off-chain readers assume: 64-byte entries, no padding.
    #[test]
    fn the_layout_has_no_padding() {
        assert_eq!(core::mem::size_of::<BuybackEntry>(), 64);
        assert_eq!(BuybackLog::SPACE, 8 + 8 + 64 * BUYBACK_LOG_LEN + 8);
    }
}

//! The buyback log: the last buybacks, as a ring buffer.

use anchor_lang::prelude::*;

use crate::constants::BUYBACK_LOG_LEN;
use crate::error::SkillTrialError;

#[derive(
    AnchorSerialize, AnchorDeserialize, Clone, Copy, Default, Debug, InitSpace, PartialEq, Eq,
)]
pub struct BuybackEntry {
    /// Unix time.
    pub at: i64,
    /// Fee-vault lamports released.
    pub lamports_in: u64,
    /// $SKTRIAL base units burned against them.
    pub tokens_burned: u64,
}

#[account]
#[derive(InitSpace, Debug)]
pub struct BuybackLog {
    /// Next slot to write.
    pub next: u16,
    /// Buybacks recorded so far (saturating).
    pub count: u64,
    /// The entries, oldest overwritten first.
    pub entries: [BuybackEntry; BUYBACK_LOG_LEN],
    /// Canonical bump.
    pub bump: u8,
}

impl BuybackLog {
    /// Appends an entry.
    pub fn push(&mut self, entry: BuybackEntry) -> Result<()> {
        let slot = usize::from(self.next);
        *self
            .entries
            .get_mut(slot)
            .ok_or(SkillTrialError::Overflow)? = entry;
        let next = slot.checked_add(1).ok_or(SkillTrialError::Overflow)? % BUYBACK_LOG_LEN;
        self.next = u16::try_from(next).map_err(|_| SkillTrialError::Overflow)?;
        self.count = self.count.saturating_add(1);
        self.invariant()
    }

    /// The write position stays inside the buffer.
    pub fn invariant(&self) -> Result<()> {
        require!(
            usize::from(self.next) < BUYBACK_LOG_LEN,
            SkillTrialError::Overflow
        );
        Ok(())
    }
}

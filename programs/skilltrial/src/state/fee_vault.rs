//! The fee vault: a program-owned PDA holding runner fees until a buyback releases them, and the
//! program's books — the run counter, the running totals, the runner's spending-limit window and
//! the last buyback. Every instruction that moves money through the program writes it anyway, so
//! the config stays read-only outside governance.
//!
//! What may be released is computed from the books (`total_fees − total_bought_back`), never from
//! the balance: lamports donated to the vault stay a surplus no instruction releases, and cannot
//! break the accounting. The invariant compares the books with the account's real lamports.

use anchor_lang::prelude::*;

use crate::error::SkillTrialError;

#[account]
#[derive(InitSpace, Debug)]
pub struct FeeVault {
    /// Canonical bump.
    pub bump: u8,
    /// Layout version (`ACCOUNT_VERSION`).
    pub version: u8,
    /// The id the next run opened gets: runs are numbered from 1, never reused.
    pub next_run_id: u64,
    /// Trials settled over all runs.
    pub total_trials_settled: u64,
    /// Usage settled to the runner's payout address over all runs, lamports.
    pub total_usage: u64,
    /// Runner fees paid into this vault, lamports.
    pub total_fees: u64,
    /// Fees released to buybacks, lamports.
    pub total_bought_back: u64,
    /// $SKTRIAL base units burned by buybacks.
    pub total_burned: u64,
    /// Unix time of the last buyback (0: none yet).
    pub last_buyback_ts: i64,
    /// Start of the runner's current spending-limit period.
    pub usage_period_start: i64,
    /// Lamports settled out of escrows in the current period: usage and fees together (the name
    /// predates fees counting; the layout and the IDL keep it).
    pub usage_in_period: u64,
    /// Room for fields a later version adds without a migration.
    pub reserved: [u8; 32],
}

impl FeeVault {
    /// Fees collected and not yet released to a buyback.
    pub fn unreleased(&self) -> Result<u64> {
        self.total_fees
            .checked_sub(self.total_bought_back)
            .ok_or_else(|| error!(SkillTrialError::AccountingBroken))
    }

    /// Takes the next run id.
    pub fn take_run_id(&mut self) -> Result<u64> {
        let id = self.next_run_id;
        self.next_run_id = id.checked_add(1).ok_or(SkillTrialError::Overflow)?;
        Ok(id)
    }

    /// Books `usage` (a batch's usage plus its fees: all it moves out of the run) against the
    /// runner's spending limit at `now`: a new period starts once the current one is over; what
    /// one period settles never exceeds `limit`.
    pub fn spend(&mut self, usage: u64, limit: u64, period_secs: i64, now: i64) -> Result<()> {
        let ends = self
            .usage_period_start
            .checked_add(period_secs)
            .ok_or(SkillTrialError::Overflow)?;
        if now >= ends {
            self.usage_period_start = now;
            self.usage_in_period = 0;
        }
        let used = self
            .usage_in_period
            .checked_add(usage)
            .ok_or(SkillTrialError::Overflow)?;
        require!(used <= limit, SkillTrialError::SpendingLimitExceeded);
        self.usage_in_period = used;
        Ok(())
    }

    /// The books agree with themselves and with the account: never more released than
    /// collected, and the account holds at least its rent plus every unreleased fee.
    pub fn invariant(&self, lamports: u64, rent_exempt_minimum: u64) -> Result<()> {
        let owed = self.unreleased()?;
        let needed = rent_exempt_minimum
            .checked_add(owed)
            .ok_or(SkillTrialError::Overflow)?;
        require!(lamports >= needed, SkillTrialError::AccountingBroken);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code_of as code;

    fn vault() -> FeeVault {
        FeeVault {
            bump: 255,
            version: 2,
            next_run_id: 1,
            total_trials_settled: 0,
            total_usage: 0,
            total_fees: 0,
            total_bought_back: 0,
            total_burned: 0,
            last_buyback_ts: 0,
            usage_period_start: 1_000,
            usage_in_period: 0,
            reserved: [0; 32],
        }
    }

    /// The limit holds per period, exactly at its edge; the next period starts afresh.
    #[test]
    fn the_spending_limit_holds_per_period() {
        let mut v = vault();
        v.spend(600, 1_000, 100, 1_000).unwrap();
        v.spend(400, 1_000, 100, 1_099).unwrap();
        assert_eq!(
            code(v.spend(1, 1_000, 100, 1_099)),
            u32::from(SkillTrialError::SpendingLimitExceeded)
        );
        // A refused spend books nothing.
        assert_eq!(v.usage_in_period, 1_000);
        v.spend(1_000, 1_000, 100, 1_100).unwrap();
        assert_eq!((v.usage_period_start, v.usage_in_period), (1_100, 1_000));
    }

    /// Books out of step with the lamports, or more released than collected, are refused.
    #[test]
    fn the_books_are_checked_against_the_lamports() {
        let mut v = vault();
        v.total_fees = 500;
        v.invariant(1_500, 1_000).unwrap();
        assert_eq!(
            code(v.invariant(1_499, 1_000)),
            u32::from(SkillTrialError::AccountingBroken)
        );
        v.total_bought_back = 501;
        assert_eq!(
            code(v.invariant(u64::MAX, 0)),
            u32::from(SkillTrialError::AccountingBroken)
        );
    }
}

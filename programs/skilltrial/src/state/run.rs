//! One hosted run: its escrow, which trials are settled, and where its money went.

use anchor_lang::prelude::*;

use crate::constants::{CANCEL_SETTLE_WINDOW_SECS, MAX_TRIALS, SETTLED_BITMAP_BYTES};
use crate::error::SkillTrialError;

/// Where a run is in its life. A refunded or closed run has no state: its account is gone.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, Debug, InitSpace)]
pub enum RunStatus {
    /// Escrowed; the runner may dispatch and settle until the deadline.
    Open,
    /// The user stopped new dispatches at `at`; requests already in flight may still settle for
    /// `CANCEL_SETTLE_WINDOW_SECS` (never after the deadline); the runner may finalize.
    Cancelled { at: i64 },
    /// The report hash is recorded at `at`; the remainder waits for the user's `run_close`.
    Finalized { at: i64 },
}

#[account]
#[derive(InitSpace, Debug)]
pub struct Run {
    /// Layout version (`ACCOUNT_VERSION`).
    pub version: u8,
    /// This run's number (the fee vault's counter when it opened): a closed and re-opened run at
    /// the same address is another run, and settle and finalize name the one they mean.
    pub run_id: u64,
    /// Who escrowed, cancels, reclaims.
    pub user: Pubkey,
    /// The runner the user agreed to: the only key that may settle this run, and only while it
    /// is still the config's runner (revoking or rotating the key stops it at once).
    pub runner: Pubkey,
    /// SHA-256 of the run's canonical manifest.
    pub manifest_hash: [u8; 32],
    /// Trials planned.
    pub planned_trials: u16,
    /// The most one trial's usage may charge, lamports (its upper cost at the pinned rate).
    pub per_request_cap: u64,
    /// The runner fee per executed trial the user agreed to.
    pub fee_per_trial: u64,
    /// Lamports moved into escrow (above the account's rent).
    pub escrowed: u64,
    /// Usage paid to the runner's payout address.
    pub settled_usage: u64,
    /// Fees paid to the fee vault.
    pub settled_fees: u64,
    /// Trials settled.
    pub settled_trials: u16,
    /// Settle batches applied.
    pub settle_batches: u16,
    /// One bit per trial: set once settled, so no trial settles twice.
    pub settled_bitmap: [u8; SETTLED_BITMAP_BYTES],
    /// The running settlement digest: starts at zero; each batch folds in
    /// `sha256(digest ‖ evidence_hash ‖ u16 count ‖ (u16 trial, u64 usage)…)` (docs/program.md).
    pub settle_digest: [u8; 32],
    /// Where the run is.
    pub status: RunStatus,
    /// Unix time the run opened.
    pub opened_at: i64,
    /// No settlement after this Unix time; after it (or after the cancel window) the user may
    /// refund without the runner.
    pub deadline: i64,
    /// SHA-256 of the canonical report, once finalized.
    pub report_hash: [u8; 32],
    /// Canonical bump.
    pub bump: u8,
    /// Room for fields a later version adds without a migration.
    pub reserved: [u8; 32],
}

impl Run {
    /// Lamports still in escrow: escrowed − usage − fees.
    pub fn remaining(&self) -> Result<u64> {
        self.escrowed
            .checked_sub(self.settled_usage)
            .and_then(|r| r.checked_sub(self.settled_fees))
            .ok_or_else(|| error!(SkillTrialError::ReserveExhausted))
    }

    /// The last moment a trial may settle: the deadline, or for a cancelled run the end of its
    /// in-flight window if that comes first. The user may refund alone only after it, so the two
    /// never race.
    pub fn settle_closes_at(&self) -> Result<i64> {
        Ok(match self.status {
            RunStatus::Cancelled { at } => at
                .checked_add(CANCEL_SETTLE_WINDOW_SECS)
                .ok_or(SkillTrialError::Overflow)?
                .min(self.deadline),
            RunStatus::Open | RunStatus::Finalized { .. } => self.deadline,
        })
    }

    /// Whether trial `index` is settled.
    pub fn is_settled(&self, index: u16) -> Result<bool> {
        let (byte, bit) = Self::position(index)?;
        Ok(self.settled_bitmap.get(byte).is_some_and(|b| b & bit != 0))
    }

    /// Marks trial `index` settled; refuses a second time.
    pub fn mark_settled(&mut self, index: u16) -> Result<()> {
        require!(
            index < self.planned_trials,
            SkillTrialError::TrialOutOfRange
        );
        let (byte, bit) = Self::position(index)?;
        let slot = self
            .settled_bitmap
            .get_mut(byte)
            .ok_or(SkillTrialError::TrialOutOfRange)?;
        require!(*slot & bit == 0, SkillTrialError::TrialAlreadySettled);
        *slot |= bit;
        self.settled_trials = self
            .settled_trials
            .checked_add(1)
            .ok_or(SkillTrialError::Overflow)?;
        Ok(())
    }

    fn position(index: u16) -> Result<(usize, u8)> {
        require!(index < MAX_TRIALS, SkillTrialError::TrialOutOfRange);
        let byte = usize::from(index / 8);
        let bit = 1u8 << (index % 8);
        Ok((byte, bit))
    }

    /// Money is conserved: usage + fees never exceed the escrow; fees are exactly the fee times
    /// the trials settled; settled trials never exceed the plan; and the account really holds its
    /// rent plus the remainder (the books are checked against the lamports, not only themselves).
    /// For the instructions that move lamports (`run_open`, `run_settle`).
    pub fn invariant(&self, lamports: u64, rent_exempt_minimum: u64) -> Result<()> {
        self.books()?;
        let needed = rent_exempt_minimum
            .checked_add(self.remaining()?)
            .ok_or(SkillTrialError::Overflow)?;
        require!(lamports >= needed, SkillTrialError::AccountingBroken);
        Ok(())
    }

    /// The books alone, without the lamport half of [`Run::invariant`]: for the instructions that
    /// move no lamports out of the run but a whole-balance close (`run_cancel`, `run_finalize`,
    /// `run_close`, `run_refund_expired`). Those are the user's ways out, and a rise of the Rent
    /// sysvar after the run opened must never lock them: the account's rent minimum is read at
    /// the time of the call, so a strict lamport check there could fail for every run at once,
    /// while a close pays the whole balance whatever the minimum is.
    pub fn books(&self) -> Result<()> {
        self.remaining()?;
        require!(
            self.settled_trials <= self.planned_trials,
            SkillTrialError::TrialOutOfRange
        );
        let fees = self
            .fee_per_trial
            .checked_mul(u64::from(self.settled_trials))
            .ok_or(SkillTrialError::Overflow)?;
        require!(fees == self.settled_fees, SkillTrialError::AccountingBroken);
        let usage_cap = self
            .per_request_cap
            .checked_mul(u64::from(self.settled_trials))
            .ok_or(SkillTrialError::Overflow)?;
        require!(
            self.settled_usage <= usage_cap,
            SkillTrialError::ChargeAboveCap
        );
        Ok(())
    }
}

/// The checks no transaction can reach while the program is correct (run_open escrows the
/// upper cost, so the reserve cannot run out): tested here on the state itself, so a future
/// change that makes them reachable still fails with the right error.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code_of as code;

    fn run(planned_trials: u16, escrowed: u64) -> Run {
        Run {
            version: 2,
            run_id: 1,
            user: Pubkey::new_unique(),
            runner: Pubkey::new_unique(),
            manifest_hash: [1; 32],
            planned_trials,
            per_request_cap: 50,
            fee_per_trial: 10,
            escrowed,
            settled_usage: 0,
            settled_fees: 0,
            settled_trials: 0,
            settle_batches: 0,
            settled_bitmap: [0; SETTLED_BITMAP_BYTES],
            settle_digest: [0; 32],
            status: RunStatus::Open,
            opened_at: 0,
            deadline: 10_000,
            report_hash: [0; 32],
            bump: 255,
            reserved: [0; 32],
        }
    }

    #[test]
    fn a_reserve_spent_beyond_the_escrow_is_exhausted_not_wrapped() {
        let mut r = run(2, 100);
        r.settled_usage = 90;
        r.settled_fees = 10;
        assert_eq!(r.remaining().unwrap(), 0);
        r.settled_usage = 91;
        assert_eq!(
            code(r.remaining()),
            u32::from(SkillTrialError::ReserveExhausted)
        );
        assert_eq!(
            code(r.invariant(u64::MAX, 0)),
            u32::from(SkillTrialError::ReserveExhausted)
        );
    }

    #[test]
    fn the_bitmap_settles_each_planned_trial_once() {
        let mut r = run(MAX_TRIALS, u64::MAX);
        for i in 0..MAX_TRIALS {
            r.mark_settled(i).unwrap();
        }
        assert_eq!(r.settled_trials, MAX_TRIALS);
        assert_eq!(
            code(r.mark_settled(0)),
            u32::from(SkillTrialError::TrialAlreadySettled)
        );
        assert_eq!(
            code(r.mark_settled(MAX_TRIALS)),
            u32::from(SkillTrialError::TrialOutOfRange)
        );
        let mut small = run(3, 0);
        assert_eq!(
            code(small.mark_settled(3)),
            u32::from(SkillTrialError::TrialOutOfRange)
        );
    }

    #[test]
    fn fees_out_of_step_with_settled_trials_break_the_invariant() {
        let mut r = run(2, 1_000);
        r.mark_settled(0).unwrap();
        r.settled_usage = 50;
        r.settled_fees = 9;
        assert_eq!(
            code(r.invariant(u64::MAX, 0)),
            u32::from(SkillTrialError::AccountingBroken)
        );
        r.settled_fees = 10;
        r.invariant(u64::MAX, 0).unwrap();
        r.settled_usage = 51;
        assert_eq!(
            code(r.invariant(u64::MAX, 0)),
            u32::from(SkillTrialError::ChargeAboveCap)
        );
    }

    /// The books are checked against the account's lamports: one lamport short of rent plus the
    /// remainder is refused, exactly at it is accepted.
    #[test]
    fn a_run_must_hold_its_rent_plus_its_remainder() {
        let mut r = run(2, 1_000);
        r.mark_settled(0).unwrap();
        r.settled_usage = 40;
        r.settled_fees = 10;
        r.invariant(100 + 950, 100).unwrap();
        assert_eq!(
            code(r.invariant(100 + 949, 100)),
            u32::from(SkillTrialError::AccountingBroken)
        );
    }

    /// Settling closes at the deadline; after a cancel, at the end of the in-flight window or
    /// the deadline, whichever comes first.
    #[test]
    fn settling_closes_at_the_deadline_or_the_end_of_the_cancel_window() {
        let mut r = run(2, 1_000);
        assert_eq!(r.settle_closes_at().unwrap(), 10_000);
        r.status = RunStatus::Cancelled { at: 1_000 };
        assert_eq!(
            r.settle_closes_at().unwrap(),
            1_000 + CANCEL_SETTLE_WINDOW_SECS
        );
        r.status = RunStatus::Cancelled { at: 9_900 };
        assert_eq!(r.settle_closes_at().unwrap(), 10_000);
    }
}

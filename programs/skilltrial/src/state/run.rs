//! One hosted run: its escrow, which trials are settled, and where its money went.

use anchor_lang::prelude::*;

use crate::constants::{MAX_TRIALS, SETTLED_BITMAP_BYTES};
use crate::error::SkillTrialError;

/// Where a run is in its life.
#[derive(AnchorSerialize, AnchorDeserialize, Clone, Copy, PartialEq, Eq, Debug, InitSpace)]
pub enum RunStatus {
    /// Escrowed; the runner may dispatch and settle.
    Open,
    /// The user stopped new dispatches; the runner may still finalize.
    Cancelled,
    /// The report hash is recorded and the remainder refunded.
    Finalized,
    /// The user took the remainder back after the deadline.
    Refunded,
}

#[account]
#[derive(InitSpace, Debug)]
pub struct Run {
    /// Who escrowed, cancels, reclaims.
    pub user: Pubkey,
    /// The config's runner when the run opened (a record: settling and finalizing are authorized
    /// against the config's current runner, so rotating the key moves open runs with it).
    pub runner: Pubkey,
    /// SHA-256 of the run's canonical manifest.
    pub manifest_hash: [u8; 32],
    /// Trials planned.
    pub planned_trials: u16,
    /// The most one trial's usage may charge, lamports (its upper cost at the pinned rate).
    pub per_request_cap: u64,
    /// The runner fee per executed trial, fixed at open time.
    pub fee_per_trial: u64,
    /// Lamports moved into escrow (above the account's rent).
    pub escrowed: u64,
    /// Usage paid to the runner.
    pub settled_usage: u64,
    /// Fees paid to the fee vault.
    pub settled_fees: u64,
    /// Lamports returned to the user.
    pub refunded: u64,
    /// Trials settled.
    pub settled_trials: u16,
    /// One bit per trial: set once settled, so no trial settles twice.
    pub settled_bitmap: [u8; SETTLED_BITMAP_BYTES],
    /// Where the run is.
    pub status: RunStatus,
    /// After this Unix time the user may refund without the runner.
    pub deadline: i64,
    /// Unix time of the cancel (0: not cancelled); settling stays open for in-flight requests
    /// until `CANCEL_SETTLE_WINDOW_SECS` after it.
    pub cancelled_at: i64,
    /// SHA-256 of the canonical report, once finalized.
    pub report_hash: [u8; 32],
    /// Canonical bump.
    pub bump: u8,
}

impl Run {
    /// Lamports still in escrow: escrowed − usage − fees − refunded.
    pub fn remaining(&self) -> Result<u64> {
        self.escrowed
            .checked_sub(self.settled_usage)
            .and_then(|r| r.checked_sub(self.settled_fees))
            .and_then(|r| r.checked_sub(self.refunded))
            .ok_or_else(|| error!(SkillTrialError::ReserveExhausted))
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
        require!(
            !self.is_settled(index)?,
            SkillTrialError::TrialAlreadySettled
        );
        let (byte, bit) = Self::position(index)?;
        let slot = self
            .settled_bitmap
            .get_mut(byte)
            .ok_or(SkillTrialError::TrialOutOfRange)?;
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

    /// Money is conserved: usage + fees + refunds never exceed the escrow; fees are exactly the
    /// fee times the trials settled; settled trials never exceed the plan.
    pub fn invariant(&self) -> Result<()> {
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

    fn run(planned_trials: u16, escrowed: u64) -> Run {
        Run {
            user: Pubkey::new_unique(),
            runner: Pubkey::new_unique(),
            manifest_hash: [1; 32],
            planned_trials,
            per_request_cap: 50,
            fee_per_trial: 10,
            escrowed,
            settled_usage: 0,
            settled_fees: 0,
            refunded: 0,
            settled_trials: 0,
            settled_bitmap: [0; SETTLED_BITMAP_BYTES],
            status: RunStatus::Open,
            deadline: 0,
            cancelled_at: 0,
            report_hash: [0; 32],
            bump: 255,
        }
    }

    fn code(result: Result<impl std::fmt::Debug>) -> u32 {
        match result {
            Err(Error::AnchorError(e)) => e.error_code_number,
            other => panic!("expected an Anchor error, got {other:?}"),
        }
    }

    #[test]
    fn a_reserve_spent_beyond_the_escrow_is_exhausted_not_wrapped() {
        let mut r = run(2, 100);
        r.settled_usage = 90;
        r.settled_fees = 10;
        assert_eq!(r.remaining().unwrap(), 0);
        r.refunded = 1;
        assert_eq!(
            code(r.remaining()),
            u32::from(SkillTrialError::ReserveExhausted)
        );
        assert_eq!(
            code(r.invariant()),
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
            code(r.invariant()),
            u32::from(SkillTrialError::AccountingBroken)
        );
        r.settled_fees = 10;
        r.invariant().unwrap();
        r.settled_usage = 51;
        assert_eq!(
            code(r.invariant()),
            u32::from(SkillTrialError::ChargeAboveCap)
        );
    }
}

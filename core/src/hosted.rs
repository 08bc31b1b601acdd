//! A hosted run's terms, from its manifest: what the wallet escrows and what each executed trial
//! may be charged. `skilltrial open` computes them to build `run_open`; the runner daemon
//! computes them again from the manifest it was given and refuses a Run account that holds
//! less. One function, so that the two can never disagree.

use crate::manifest::{Manifest, PlannedTrial};
use crate::money::{Lamports, MicroUsd};

/// The most trials one hosted run may hold (the program's `MAX_TRIALS`; the chain crate's tests
/// check that the two agree).
pub const MAX_TRIALS: u16 = 100;

/// The least per-request cap a run may open with, lamports (the program's `MIN_PER_REQUEST_CAP`,
/// one signature's base fee; the chain crate's tests check that the two agree). A manifest
/// whose largest request costs less at its rate still escrows this much per trial: the usage
/// charged is the real one, and what is not used comes back.
pub const MIN_PER_REQUEST_CAP: u64 = 5_000;

/// The farthest deadline a Run may set, seconds from when its escrow lands (the program's
/// `MAX_DEADLINE_SECS`; the chain crate's tests check that the two agree).
pub const MAX_DEADLINE_SECS: i64 = 7 * 24 * 60 * 60;

/// The deadline a hosted run is opened with unless its owner names one (`open`, `submit`, the
/// New-run page): a day.
pub const DEFAULT_DEADLINE_SECS: i64 = 24 * 60 * 60;

/// What a deadline must allow beyond a minimum for the escrow to land. The deadline is computed
/// from the cluster's clock before the wallet signs (after a prompt in the CLI, a wallet's
/// approval on the page), and the program and the runner judge it from when the escrow lands:
/// one allowance, read by `open`, `submit`, the runner's check and the page (through the wasm
/// crate's `hosted_terms`).
pub const LANDING_ALLOWANCE_SECS: i64 = 60;

/// The most a market-derived priority fee may be, micro-lamports per compute unit (the hosted
/// commands' `--max-compute-unit-price` default, and the runner's): 100,000 µlamports × a
/// 40,000-unit settlement = 4,000 lamports, below the 5,000-lamport signature fee.
pub const DEFAULT_PRICE_CEILING: u64 = 100_000;

/// Jupiter's Swap API v2, where a runner's buybacks swap by default off localnet.
pub const JUPITER_URL: &str = "https://api.jup.ag/swap/v2";

/// What a manifest's hosted run escrows, before the operator's fee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    /// Trials in the plan (1 to [`MAX_TRIALS`]).
    pub planned_trials: u16,
    /// The most one trial may be charged for its usage: the largest trial's upper cost at the
    /// pinned SOL/USD rate, rounded up to the lamport, and at least [`MIN_PER_REQUEST_CAP`].
    pub per_request_cap: Lamports,
    /// That largest upper cost, in µUSD.
    pub largest_reserve: MicroUsd,
}

/// Why a manifest cannot be a hosted run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermsError {
    #[error(
        "no SOL/USD rate is pinned in it, so its cost cannot be escrowed in lamports; plan it with --sol-usd <USD per SOL>"
    )]
    NoRate,
    #[error("{0} trials; a hosted run holds 1 to {MAX_TRIALS}")]
    TrialCount(usize),
    #[error("its requests have no upper cost, so there is nothing to escrow")]
    NothingToEscrow,
    #[error("{0}")]
    Rate(String),
}

impl Terms {
    /// The terms of `manifest`, whose planned trials are `trials` (`manifest::trials`).
    pub fn of(manifest: &Manifest, trials: &[PlannedTrial]) -> Result<Self, TermsError> {
        let rate = manifest.sol_usd.as_ref().ok_or(TermsError::NoRate)?;
        let planned_trials = u16::try_from(trials.len())
            .ok()
            .filter(|n| (1..=MAX_TRIALS).contains(n))
            .ok_or(TermsError::TrialCount(trials.len()))?;
        let largest_reserve = trials
            .iter()
            .map(|t| t.reserve)
            .max_by_key(|r| r.0)
            .unwrap_or(MicroUsd::ZERO);
        let per_request_cap = rate
            .lamports(largest_reserve)
            .map_err(|e| TermsError::Rate(e.to_string()))?;
        // A free priced model (the daemon's scripted demo model, an operator's own free one)
        // still escrows the program's minimum per trial: its usage is charged at zero and
        // comes back. Only a manifest without a price has nothing to bound an escrow by.
        if per_request_cap.0 == 0 && manifest.budget.price.is_none() {
            return Err(TermsError::NothingToEscrow);
        }
        Ok(Self {
            planned_trials,
            per_request_cap: Lamports(per_request_cap.0.max(MIN_PER_REQUEST_CAP)),
            largest_reserve,
        })
    }

    /// The escrow `run_open` must hold: `planned trials × (cap + fee)`; `None` on overflow.
    pub fn escrow(&self, fee_per_trial: u64) -> Option<u64> {
        self.per_request_cap
            .0
            .checked_add(fee_per_trial)
            .and_then(|each| each.checked_mul(u64::from(self.planned_trials)))
    }

    /// What a trial that spent `spent` (at cost, every attempt of it) is charged for its usage:
    /// the amount at the pinned rate, rounded up to the lamport, never above the cap (a trial's
    /// spend never exceeds its reserve, which the cap covers; the bound holds regardless).
    pub fn usage_lamports(&self, manifest: &Manifest, spent: MicroUsd) -> Result<u64, TermsError> {
        let rate = manifest.sol_usd.as_ref().ok_or(TermsError::NoRate)?;
        let lamports = rate
            .lamports(spent)
            .map_err(|e| TermsError::Rate(e.to_string()))?;
        Ok(lamports.0.min(self.per_request_cap.0))
    }
}

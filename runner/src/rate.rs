//! The operator's SOL/USD terms. The runner pays the model in USD and is repaid in lamports at
//! the rate the manifest pins, so the rate is the operator's to accept, not the user's to pick:
//! the daemon admits a manifest only when its pinned rate is within a tolerance of the
//! operator's own (`runner serve --sol-usd`) and was pinned recently (`--max-rate-age`).
//! Integer micro-USD and basis points throughout; no floats.

use skilltrial_core::manifest::SolUsd;
use skilltrial_core::money::MicroUsd;

use crate::api;

/// How far in the future a pin's time may be (the planner's clock against the daemon's).
pub const MAX_CLOCK_SKEW_SECS: i64 = 10 * 60;

/// What registration allows beyond the rate's age limit: between the check that `submit` asks
/// for and the registration come the person's approval and the escrow landing.
pub const REGISTER_GRACE_SECS: i64 = 15 * 60;

/// The largest rate the daemon takes: plan's own limit, $1,000,000 per SOL.
pub const MAX_USD_MICROS_PER_SOL: u64 = 1_000_000 * 1_000_000;

/// Basis points in a whole.
const BPS: u128 = 10_000;

/// The SOL/USD rate the operator is repaid at, and what it accepts around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperatorRate {
    /// µUSD per SOL.
    pub usd_micros_per_sol: u64,
    /// How far (in basis points of the operator's rate) a manifest's pin may be from it.
    pub tolerance_bps: u32,
    /// How old (seconds) a manifest's pin may be.
    pub max_age_secs: i64,
}

impl OperatorRate {
    /// A rate to serve with: refused (naming the flag) when it is 0 or above plan's limit, or
    /// when the tolerance is more than 100 % or the age is not positive.
    pub fn new(
        usd_micros_per_sol: u64,
        tolerance_bps: u32,
        max_age_secs: i64,
    ) -> Result<Self, String> {
        if usd_micros_per_sol == 0 || usd_micros_per_sol > MAX_USD_MICROS_PER_SOL {
            return Err(format!(
                "--sol-usd {}: a SOL/USD rate must be more than 0 and at most {}",
                MicroUsd(usd_micros_per_sol),
                MicroUsd(MAX_USD_MICROS_PER_SOL)
            ));
        }
        if u128::from(tolerance_bps) > BPS {
            return Err(format!(
                "--sol-usd-tolerance-bps {tolerance_bps}: at most 10000 (100 %)"
            ));
        }
        if max_age_secs <= 0 {
            return Err(format!(
                "--max-rate-age {max_age_secs}s: a pin's age limit must be more than 0 s"
            ));
        }
        Ok(Self {
            usd_micros_per_sol,
            tolerance_bps,
            max_age_secs,
        })
    }

    /// The rate as `plan --sol-usd` takes it (`151.25`).
    pub fn as_flag(&self) -> String {
        MicroUsd(self.usd_micros_per_sol)
            .to_string()
            .trim_start_matches('$')
            .to_owned()
    }

    /// What `GET /v1/info` publishes.
    pub fn info(&self) -> api::Rate {
        api::Rate {
            usd_micros_per_sol: self.usd_micros_per_sol,
            tolerance_bps: self.tolerance_bps,
            max_age_secs: self.max_age_secs,
        }
    }

    /// Whether `pinned` is a rate this operator is repaid at, at `now` (Unix seconds, the
    /// daemon's clock: a pin is a planner's wall-clock time), its age allowed `grace_secs`
    /// beyond the limit. The refusal names both rates and what to do.
    pub fn check(&self, pinned: &SolUsd, now: i64, grace_secs: i64) -> Result<(), String> {
        let replan = format!("re-plan with --sol-usd {}", self.as_flag());
        let ours = u128::from(self.usd_micros_per_sol);
        let theirs = u128::from(pinned.usd_micros_per_sol);
        // |theirs − ours| / ours ≤ tolerance, multiplied out: exact in u128.
        let off = theirs.abs_diff(ours).saturating_mul(BPS);
        if off > ours.saturating_mul(u128::from(self.tolerance_bps)) {
            return Err(format!(
                "the manifest pins SOL/USD at {} per SOL; this runner is repaid at {} per SOL and accepts a pinned rate within {} of it: {replan}",
                MicroUsd(pinned.usd_micros_per_sol),
                MicroUsd(self.usd_micros_per_sol),
                percent(self.tolerance_bps)
            ));
        }
        let at = skilltrial_core::time::parse_rfc3339(&pinned.at).ok_or_else(|| {
            format!(
                "the manifest's SOL/USD pin time `{}` is not an RFC 3339 UTC time: {replan}",
                pinned.at
            )
        })?;
        if at > now.saturating_add(MAX_CLOCK_SKEW_SECS) {
            return Err(format!(
                "the manifest's SOL/USD rate is pinned at {}, in the future by this runner's clock: {replan}",
                pinned.at
            ));
        }
        let age = now.saturating_sub(at);
        if age > self.max_age_secs.saturating_add(grace_secs) {
            return Err(format!(
                "the manifest's SOL/USD rate ({} per SOL) was pinned at {}, {age} s ago; this runner accepts a pin at most {} s old (its rate is {} per SOL): {replan}",
                MicroUsd(pinned.usd_micros_per_sol),
                pinned.at,
                self.max_age_secs,
                MicroUsd(self.usd_micros_per_sol)
            ));
        }
        Ok(())
    }
}

/// Basis points as a percentage: `200` → `2.00 %`.
fn percent(bps: u32) -> String {
    format!("{}.{:02} %", bps / 100, bps % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn pin(usd_micros_per_sol: u64, at: i64) -> SolUsd {
        SolUsd {
            usd_micros_per_sol,
            source: "test".to_owned(),
            at: skilltrial_core::time::rfc3339(at),
        }
    }

    fn operator() -> OperatorRate {
        OperatorRate::new(150_000_000, 200, 3600).unwrap()
    }

    #[test]
    fn a_pin_within_the_tolerance_and_fresh_is_accepted_at_both_edges() {
        // $150 ± 2 % is $147 to $153.
        for rate in [147_000_000, 150_000_000, 153_000_000] {
            operator().check(&pin(rate, NOW - 3600), NOW, 0).unwrap();
        }
    }

    #[test]
    fn a_pin_outside_the_tolerance_is_refused_naming_both_rates_and_the_fix() {
        for rate in [146_999_999, 153_000_001, 1, 1_000_000_000_000_000] {
            let why = operator().check(&pin(rate, NOW), NOW, 0).unwrap_err();
            assert!(
                why.contains("this runner is repaid at $150.00 per SOL"),
                "{why}"
            );
            assert!(why.contains("within 2.00 %"), "{why}");
            assert!(why.ends_with("re-plan with --sol-usd 150.00"), "{why}");
        }
    }

    #[test]
    fn a_stale_or_future_or_unreadable_pin_is_refused() {
        let stale = operator()
            .check(&pin(150_000_000, NOW - 3601), NOW, 0)
            .unwrap_err();
        assert!(stale.contains("3601 s ago"), "{stale}");
        assert!(stale.contains("at most 3600 s old"), "{stale}");
        // Registration allows the approval and the landing on top.
        operator()
            .check(&pin(150_000_000, NOW - 3601), NOW, REGISTER_GRACE_SECS)
            .unwrap();
        let future = operator()
            .check(&pin(150_000_000, NOW + MAX_CLOCK_SKEW_SECS + 1), NOW, 0)
            .unwrap_err();
        assert!(future.contains("in the future"), "{future}");
        let mut odd = pin(150_000_000, NOW);
        odd.at = "yesterday".to_owned();
        let unreadable = operator().check(&odd, NOW, 0).unwrap_err();
        assert!(unreadable.contains("`yesterday`"), "{unreadable}");
    }

    #[test]
    fn the_operator_rate_itself_is_bounded() {
        assert!(
            OperatorRate::new(0, 200, 3600)
                .unwrap_err()
                .contains("--sol-usd")
        );
        assert!(
            OperatorRate::new(MAX_USD_MICROS_PER_SOL + 1, 200, 3600)
                .unwrap_err()
                .contains("--sol-usd")
        );
        assert!(
            OperatorRate::new(150_000_000, 10_001, 3600)
                .unwrap_err()
                .contains("--sol-usd-tolerance-bps")
        );
        assert!(
            OperatorRate::new(150_000_000, 200, 0)
                .unwrap_err()
                .contains("--max-rate-age")
        );
    }
}

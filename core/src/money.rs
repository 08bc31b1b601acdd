//! Money: integer micro-USD (1 USD = 1,000,000 µUSD) with checked arithmetic, and lamports for
//! hosted runs. Never floats.
//!
//! Prices are µUSD per million tokens, so $3 / Mtok is `3_000_000`. The cost of `t` tokens is
//! `ceil(t × price / 1_000_000)` µUSD: rounding up, so a reservation is never short.

use std::fmt;

/// An amount of micro-USD.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct MicroUsd(pub u64);

/// Why an amount could not be parsed or computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// Not a plain decimal with at most six decimals.
    #[error(
        "`{0}` is not a USD amount (digits, optionally a point and up to 6 decimals, e.g. 4 or 0.25)"
    )]
    Parse(String),
    /// The arithmetic would overflow.
    #[error("amount overflows")]
    Overflow,
}

impl MicroUsd {
    /// Zero.
    pub const ZERO: MicroUsd = MicroUsd(0);

    /// Parses `"4"`, `"0.25"`, `"1.000001"` (a leading `$` is allowed).
    pub fn parse_usd(text: &str) -> Result<Self, MoneyError> {
        let t = text.trim().strip_prefix('$').unwrap_or(text.trim());
        let bad = || MoneyError::Parse(text.to_owned());
        let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 6 {
            return Err(bad());
        }
        let whole: u64 = whole.parse().map_err(|_| bad())?;
        let mut micros: u64 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| bad())?
        };
        for _ in frac.len()..6 {
            micros = micros.checked_mul(10).ok_or(MoneyError::Overflow)?;
        }
        whole
            .checked_mul(1_000_000)
            .and_then(|w| w.checked_add(micros))
            .map(MicroUsd)
            .ok_or(MoneyError::Overflow)
    }

    /// `self + other`, or an error on overflow.
    pub fn checked_add(self, other: MicroUsd) -> Result<MicroUsd, MoneyError> {
        self.0
            .checked_add(other.0)
            .map(MicroUsd)
            .ok_or(MoneyError::Overflow)
    }

    /// `self - other`, or `None` when it would go below zero.
    pub fn checked_sub(self, other: MicroUsd) -> Option<MicroUsd> {
        self.0.checked_sub(other.0).map(MicroUsd)
    }

    /// Sum of many amounts.
    pub fn sum(items: impl IntoIterator<Item = MicroUsd>) -> Result<MicroUsd, MoneyError> {
        items
            .into_iter()
            .try_fold(MicroUsd::ZERO, MicroUsd::checked_add)
    }
}

impl fmt::Display for MicroUsd {
    /// `$4.000000`-style with trailing zeros trimmed to at least cents: `$4.00`, `$0.061440` → `$0.06144`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / 1_000_000;
        let frac = format!("{:06}", self.0 % 1_000_000);
        let trimmed = frac.trim_end_matches('0');
        let shown = if trimmed.len() < 2 {
            &frac[..2]
        } else {
            trimmed
        };
        write!(f, "${whole}.{shown}")
    }
}

/// A price in µUSD per million tokens.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct PerMtok(pub u64);

impl PerMtok {
    /// The cost of `tokens` at this price, rounded up to the next µUSD.
    pub fn cost(self, tokens: u64) -> Result<MicroUsd, MoneyError> {
        let product = u128::from(tokens)
            .checked_mul(u128::from(self.0))
            .ok_or(MoneyError::Overflow)?;
        let micros = product.div_ceil(1_000_000);
        u64::try_from(micros)
            .map(MicroUsd)
            .map_err(|_| MoneyError::Overflow)
    }
}

/// Lamports per SOL.
pub const LAMPORTS_PER_SOL: u64 = 1_000_000_000;

/// An amount of lamports, the program's unit (hosted runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lamports(pub u64);

impl fmt::Display for Lamports {
    /// In SOL, exactly, trailing zeros trimmed: `1.5 SOL`, `0.000090153 SOL`, `0 SOL`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / LAMPORTS_PER_SOL;
        let frac = format!("{:09}", self.0 % LAMPORTS_PER_SOL);
        match frac.trim_end_matches('0') {
            "" => write!(f, "{whole} SOL"),
            shown => write!(f, "{whole}.{shown} SOL"),
        }
    }
}

impl Lamports {
    /// As people read an amount they approve: `0.0123 SOL (12,300,000 lamports)`.
    pub fn counted(&self) -> String {
        format!("{self} ({} lamports)", grouped(self.0))
    }
}

/// `1234567` as `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_lamports_as_exact_sol() {
        assert_eq!(Lamports(0).to_string(), "0 SOL");
        assert_eq!(Lamports(1).to_string(), "0.000000001 SOL");
        assert_eq!(Lamports(90_153).to_string(), "0.000090153 SOL");
        assert_eq!(Lamports(1_500_000_000).to_string(), "1.5 SOL");
        assert_eq!(Lamports(u64::MAX).to_string(), "18446744073.709551615 SOL");
    }

    #[test]
    fn parses_usd_exactly() {
        assert_eq!(MicroUsd::parse_usd("4").unwrap(), MicroUsd(4_000_000));
        assert_eq!(MicroUsd::parse_usd("$0.25").unwrap(), MicroUsd(250_000));
        assert_eq!(
            MicroUsd::parse_usd("1.000001").unwrap(),
            MicroUsd(1_000_001)
        );
        for bad in [
            "",
            "-1",
            "1.0000001",
            "1e3",
            "abc",
            ".5",
            "1,5",
            "$",
            "99999999999999999999999",
        ] {
            assert_eq!(
                MicroUsd::parse_usd(bad),
                Err(MoneyError::Parse(bad.to_owned())),
                "{bad}"
            );
        }
        assert_eq!(
            MoneyError::Parse("1e3".to_owned()).to_string(),
            "`1e3` is not a USD amount (digits, optionally a point and up to 6 decimals, e.g. 4 or 0.25)"
        );
        // 18,446,744,073,710 dollars is more µUSD than a u64 holds.
        assert_eq!(
            MicroUsd::parse_usd("18446744073710"),
            Err(MoneyError::Overflow),
            "overflow"
        );
        assert_eq!(
            MicroUsd::parse_usd("18446744073709.551615"),
            Ok(MicroUsd(u64::MAX))
        );
    }

    #[test]
    fn costs_round_up_and_never_overflow_silently() {
        let price = PerMtok(3_000_000); // $3 / Mtok = 3 µUSD per token
        assert_eq!(price.cost(1).unwrap(), MicroUsd(3));
        assert_eq!(
            PerMtok(150_000).cost(1).unwrap(),
            MicroUsd(1),
            "0.15 µUSD rounds up to 1"
        );
        assert_eq!(PerMtok(0).cost(1_000_000).unwrap(), MicroUsd(0));
        assert_eq!(PerMtok(u64::MAX).cost(u64::MAX), Err(MoneyError::Overflow));
    }

    #[test]
    fn displays_dollars() {
        assert_eq!(MicroUsd(4_000_000).to_string(), "$4.00");
        assert_eq!(MicroUsd(61_440).to_string(), "$0.06144");
        assert_eq!(MicroUsd(1).to_string(), "$0.000001");
    }
}

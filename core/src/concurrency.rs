//! How many model requests a run may have in flight at once.
//!
//! It is a setting of an invocation, not of the manifest: it changes how long a run takes, never
//! what it sends or what it finds (the engine dispatches the trials in their planned order and
//! keeps every cap exact at any setting). The journal records it per run; `status` and the
//! report show it. One (the default) is a sequential run.

use std::fmt;
use std::str::FromStr;

/// A number of requests in flight, from 1 to [`Concurrency::MAX`].
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(try_from = "u32", into = "u32")]
pub struct Concurrency(u32);

/// A concurrency outside 1 ..= [`Concurrency::MAX`], or not a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("concurrency `{0}` is not a whole number from 1 to {max}", max = Concurrency::MAX)]
pub struct ConcurrencyError(pub String);

impl Concurrency {
    /// The most requests a run may have in flight: far above what a provider's rate limit lets
    /// one key sustain, low enough that threads and sockets are never the limit.
    pub const MAX: u32 = 64;
    /// One request at a time: the default.
    pub const SEQUENTIAL: Self = Self(1);

    /// `n`, when it is from 1 to [`Concurrency::MAX`].
    pub fn new(n: u32) -> Result<Self, ConcurrencyError> {
        if (1..=Self::MAX).contains(&n) {
            Ok(Self(n))
        } else {
            Err(ConcurrencyError(n.to_string()))
        }
    }

    /// The number of requests.
    pub fn get(self) -> u32 {
        self.0
    }

    /// The number of requests, as a count of slots.
    pub fn slots(self) -> usize {
        usize::try_from(self.0).unwrap_or(1)
    }
}

impl Default for Concurrency {
    fn default() -> Self {
        Self::SEQUENTIAL
    }
}

impl fmt::Display for Concurrency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Concurrency {
    type Err = ConcurrencyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim()
            .parse::<u32>()
            .map_err(|_| ConcurrencyError(s.to_owned()))
            .and_then(|n| Self::new(n).map_err(|_| ConcurrencyError(s.to_owned())))
    }
}

impl TryFrom<u32> for Concurrency {
    type Error = ConcurrencyError;

    fn try_from(n: u32) -> Result<Self, Self::Error> {
        Self::new(n)
    }
}

impl From<Concurrency> for u32 {
    fn from(c: Concurrency) -> Self {
        c.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_concurrency_is_a_whole_number_from_one_to_the_maximum() {
        assert_eq!("1".parse::<Concurrency>(), Ok(Concurrency::SEQUENTIAL));
        assert_eq!("64".parse::<Concurrency>().map(Concurrency::get), Ok(64));
        for bad in ["0", "65", "-1", "2.5", "", "eight", "4294967296"] {
            let err = bad.parse::<Concurrency>().unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("concurrency `{bad}` is not a whole number from 1 to 64")
            );
        }
        assert!(serde_json::from_str::<Concurrency>("0").is_err());
        assert_eq!(
            serde_json::to_string(&Concurrency::new(8).unwrap()).unwrap(),
            "8"
        );
    }
}

//! Statistics for paired runs, as pure functions: Wilson intervals, the exact sign-flip
//! permutation test with the task as the unit, the exact McNemar test, and Holm's adjustment.
//!
//! Exact tests use exact arithmetic: p-values are returned as fractions (`num / den`) and as
//! `f64` for display. Reference values in the tests were computed with SciPy 1.17.1 and
//! statsmodels 0.15.0 (see each test).

/// A fraction `num / den` (a p-value of an exact test, or an observed rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Fraction {
    pub num: u128,
    pub den: u128,
}

impl Fraction {
    /// As a float, for display only.
    pub fn value(self) -> f64 {
        if self.den == 0 {
            0.0
        } else {
            self.num as f64 / self.den as f64
        }
    }
}

/// The two-sided 95% Wilson score interval for `k` successes in `n` trials.
pub fn wilson95(k: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let z = 1.959_963_984_540_054_f64;
    let n_f = n as f64;
    let p = k as f64 / n_f;
    let z2 = z * z;
    let denom = 1.0 + z2 / n_f;
    let center = (p + z2 / (2.0 * n_f)) / denom;
    let half = z * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt() / denom;
    Some(((center - half).max(0.0), (center + half).min(1.0)))
}

/// The exact two-sided McNemar test: `b` pairs where only the first arm passed, `c` where only
/// the second did. p = min(1, 2 · P[X ≤ min(b, c)]) for X ~ Binomial(b + c, 1/2).
pub fn mcnemar_exact(b: u64, c: u64) -> Fraction {
    let n = b + c;
    if n == 0 {
        return Fraction { num: 1, den: 1 };
    }
    if n > 126 {
        // Beyond exact u128 range: the normal approximation, as any statistics package would.
        let z = (b as f64 - c as f64).abs() / (n as f64).sqrt();
        let p = (1.0 - erf(z / std::f64::consts::SQRT_2)).clamp(0.0, 1.0);
        let den = 1_000_000_000_000u64;
        return Fraction {
            // p is clamped to [0, 1], so the product fits and is non-negative.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            num: (p * den as f64).round() as u128,
            den: u128::from(den),
        };
    }
    let k = u128::from(b.min(c));
    let n = u128::from(n);
    let den: u128 = 1u128 << n;
    // Σ_{i ≤ k} C(n, i), exact in u128 for n ≤ 126.
    let mut tail: u128 = 0;
    let mut choose: u128 = 1;
    for i in 0..=k {
        tail += choose;
        choose = choose * (n - i) / (i + 1);
    }
    let num = (2 * tail).min(den);
    let g = gcd128(num, den);
    let (num, den) = (num / g, den / g);
    Fraction { num, den }
}

/// The exact two-sided sign-flip permutation test of paired per-unit differences
/// `diffs[t] = num_t / den_t` (the task is the unit). All 2^T sign assignments are enumerated;
/// p = #{assignments with |Σ ±d_t| ≥ |Σ d_t|} / 2^T. At most 20 units.
pub fn sign_flip(diffs: &[(i64, u64)]) -> Option<Fraction> {
    let t = diffs.len();
    if t == 0 || t > 20 || diffs.iter().any(|(_, d)| *d == 0) {
        return None;
    }
    // A common denominator turns every difference into an exact integer.
    let lcm = diffs
        .iter()
        .fold(1u64, |acc, (_, d)| acc / gcd(acc, *d) * d);
    let scaled: Vec<i128> = diffs
        .iter()
        .map(|(n, d)| i128::from(*n) * i128::from(lcm / d))
        .collect();
    let observed: i128 = scaled.iter().sum::<i128>().abs();
    let total = 1u64 << t;
    let mut extreme = 0u64;
    for mask in 0..total {
        let s: i128 = scaled
            .iter()
            .enumerate()
            .map(|(i, v)| if mask >> i & 1 == 1 { -v } else { *v })
            .sum();
        if s.abs() >= observed {
            extreme += 1;
        }
    }
    Some(reduce(Fraction {
        num: u128::from(extreme),
        den: u128::from(total),
    }))
}

/// Holm's step-down adjustment of p-values (returned in the input order).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p[*a].total_cmp(&p[*b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let value = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(value);
        adjusted[i] = running;
    }
    adjusted
}

fn gcd128(a: u128, b: u128) -> u128 {
    if b == 0 { a.max(1) } else { gcd128(b, a % b) }
}

/// The error function (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7), for large-sample tails.
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    if x >= 0.0 { y } else { -y }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn reduce(f: Fraction) -> Fraction {
    let g = gcd128(f.num, f.den);
    Fraction {
        num: f.num / g,
        den: f.den / g,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// statsmodels.stats.proportion.proportion_confint(k, n, alpha=0.05, method='wilson')
    #[test]
    fn wilson_matches_statsmodels() {
        let reference = [
            (0, 18, 0.000000000000, 0.175879223647),
            (5, 18, 0.124997533796, 0.508726565603),
            (12, 18, 0.437494672959, 0.837212252492),
            (18, 18, 0.824120776353, 1.000000000000),
            (1, 1, 0.206549314377, 1.000000000000),
            (7, 10, 0.396778147461, 0.892208732594),
            (30, 54, 0.423756465268, 0.679975358278),
        ];
        for (k, n, lo, hi) in reference {
            let (l, h) = wilson95(k, n).unwrap();
            assert!(close(l, lo) && close(h, hi), "{k}/{n}: {l} {h}");
        }
        assert_eq!(wilson95(0, 0), None);
    }

    /// scipy.stats.binomtest(b, b + c, 0.5).pvalue
    #[test]
    fn mcnemar_matches_scipy_binomtest() {
        let reference = [
            (5, 1, 0.21875),
            (0, 6, 0.03125),
            (3, 3, 1.0),
            (9, 2, 0.0654296875),
            (0, 0, 1.0),
            (1, 0, 1.0),
            (10, 0, 0.001953125),
        ];
        for (b, c, p) in reference {
            assert!(close(mcnemar_exact(b, c).value(), p), "{b},{c}");
        }
        // Regression: more than 62 discordant pairs used to return p = 1.
        // scipy.stats.binomtest(10, 80, 0.5).pvalue = 3.161290522649495e-12
        let p = mcnemar_exact(10, 70).value();
        assert!(
            (p - 3.161290522649495e-12).abs() / 3.161290522649495e-12 < 1e-9,
            "{p}"
        );
    }

    /// scipy.stats.permutation_test((d,), sum, permutation_type='samples', alternative='two-sided')
    #[test]
    fn sign_flip_matches_scipy_permutation_test() {
        let reference: [(&[(i64, u64)], f64); 6] = [
            (&[(1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1)], 0.03125),
            (&[(1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (-1, 1)], 0.21875),
            (&[(2, 3), (1, 3), (3, 3), (0, 3), (0, 3), (-1, 3)], 0.375),
            (&[(0, 3), (0, 3), (0, 3), (0, 3), (0, 3), (0, 3)], 1.0),
            (&[(1, 1), (0, 1), (0, 1), (0, 1), (0, 1), (0, 1)], 1.0),
            (&[(3, 3), (3, 3), (3, 3), (1, 3), (2, 3), (0, 3)], 0.0625),
        ];
        for (diffs, p) in reference {
            assert!(close(sign_flip(diffs).unwrap().value(), p), "{diffs:?}");
        }
        assert_eq!(sign_flip(&[]), None);
    }

    /// statsmodels.stats.multitest.multipletests(p, method='holm')[1]
    #[test]
    fn holm_matches_statsmodels() {
        let reference: [(&[f64], &[f64]); 3] = [
            (&[0.03125, 0.0625, 0.5], &[0.09375, 0.125, 0.5]),
            (&[0.01, 0.04, 0.03], &[0.03, 0.06, 0.06]),
            (&[0.5, 0.2, 0.9], &[1.0, 0.6, 1.0]),
        ];
        for (p, adjusted) in reference {
            let got = holm(p);
            assert!(
                got.iter().zip(adjusted).all(|(a, b)| close(*a, *b)),
                "{p:?} -> {got:?}"
            );
        }
    }
}

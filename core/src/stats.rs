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

    /// The number for reading, as text (a p-value beside its exact fraction, which the JSON
    /// keeps): `0` and `1` exactly, two significant digits from 0.001 up (`0.0068`, `0.38`), and
    /// scientific notation below (`2.8e-14`), where a fraction like `1/35184372088832` or a
    /// run of zeros says nothing at a glance.
    pub fn readable(self) -> String {
        if self.num == 0 || self.den == 0 {
            return "0".to_owned();
        }
        if self.num >= self.den {
            return "1".to_owned();
        }
        let v = self.value();
        if v < 0.001 {
            return format!("{v:.1e}");
        }
        // Two significant digits: one decimal more than the first nonzero one's place.
        let (decimals, scale): (usize, u128) = if v >= 0.1 {
            (2, 100)
        } else if v >= 0.01 {
            (3, 1_000)
        } else {
            (4, 10_000)
        };
        // Rounded half up in integers (1/8 reads 0.13, not the float formatter's 0.12): a p
        // that is exactly halfway never reads smaller than it is.
        let rounded = self
            .num
            .checked_mul(scale)
            .and_then(|n| n.checked_mul(2))
            .and_then(|n| n.checked_add(self.den))
            .zip(self.den.checked_mul(2))
            .map(|(n, d)| n / d);
        let text = match rounded {
            Some(q) => format!("{}.{:0width$}", q / scale, q % scale, width = decimals),
            None => format!("{v:.decimals$}"),
        };
        let text = text.trim_end_matches('0').trim_end_matches('.');
        text.to_owned()
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

/// The largest number of discordant pairs [`mcnemar_exact`] computes in exact u128 arithmetic
/// (the denominator is 2^n).
pub const MCNEMAR_EXACT_MAX_PAIRS: u64 = 126;

/// The exact two-sided McNemar test: `b` pairs where only the first arm passed, `c` where only
/// the second did. p = min(1, 2 · P[X ≤ min(b, c)]) for X ~ Binomial(b + c, 1/2).
///
/// Up to [`MCNEMAR_EXACT_MAX_PAIRS`] discordant pairs the fraction is exact. Above that the same
/// binomial tail is summed in `f64` (relative error about 1e-13, far closer to SciPy's
/// `binomtest` than a normal approximation) and returned as a power-of-two fraction; a tail
/// below 2^-127 is reported as 2^-127, an upper bound, never as 0.
pub fn mcnemar_exact(b: u64, c: u64) -> Fraction {
    let n = b + c;
    if n == 0 {
        return Fraction { num: 1, den: 1 };
    }
    if n > MCNEMAR_EXACT_MAX_PAIRS {
        return float_fraction(2.0 * binomial_half_tail(n, b.min(c)));
    }
    let k = u128::from(b.min(c));
    let n = u128::from(n);
    let den: u128 = 1u128 << n;
    // Σ_{i ≤ k} C(n, i). C(n, i + 1) = C(n, i) · (n − i) / (i + 1) is computed with the
    // division first: after removing g = gcd(C(n, i), i + 1), the rest of i + 1 divides n − i
    // (the result is an integer and the two parts are coprime), so no intermediate exceeds
    // C(n, i + 1) < 2^124, where the plain product overflowed u128 at n = 126.
    let mut tail: u128 = 0;
    let mut choose: u128 = 1;
    for i in 0..=k {
        tail += choose;
        let g = gcd128(choose, i + 1);
        choose = (choose / g) * ((n - i) / ((i + 1) / g));
    }
    // tail ≤ 2^(n−1) + C(n, n/2) / 2 < 2^126, so doubling it fits.
    let num = (2 * tail).min(den);
    reduce(Fraction { num, den })
}

/// P[X ≤ k] for X ~ Binomial(n, 1/2), k ≤ n / 2, in `f64`. The largest term C(n, k) / 2^n is
/// built as a running product that is halved whenever it exceeds 1 (so it neither overflows nor
/// underflows early); the smaller terms follow from it by their ratios.
fn binomial_half_tail(n: u64, k: u64) -> f64 {
    let mut term = 1.0_f64;
    let mut halves = n;
    for i in 1..=k {
        term *= (n - i + 1) as f64 / i as f64;
        while term > 1.0 && halves > 0 {
            term *= 0.5;
            halves -= 1;
        }
    }
    while halves > 0 {
        let step = halves.min(1000);
        // step ≤ 1000, so it fits an i32.
        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
        let scale = 2f64.powi(-(step as i32));
        term *= scale;
        halves -= step;
    }
    let mut sum = 1.0_f64;
    let mut ratio = 1.0_f64;
    for i in (1..=k).rev() {
        ratio *= i as f64 / (n - i + 1) as f64;
        sum += ratio;
        if ratio < sum * 1e-18 {
            break;
        }
    }
    term * sum
}

/// A probability as a fraction over 2^127: exact for every `f64` in [2^-74, 1]; a positive value
/// too small to show is rounded up to 2^-127 (a p-value is never understated as 0).
fn float_fraction(p: f64) -> Fraction {
    if p.is_nan() || p >= 1.0 {
        return Fraction { num: 1, den: 1 };
    }
    let den: u128 = 1 << 127;
    // 0 ≤ p < 1, so p · 2^127 < 2^127 fits u128 and is non-negative.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let mut num = (p.max(0.0) * den as f64).round() as u128;
    if num == 0 && p > 0.0 {
        num = 1;
    }
    reduce(Fraction { num, den })
}

/// Most units the sign-flip test takes: 2^126 assignments still count exactly in a `u128`.
pub const SIGN_FLIP_MAX_UNITS: usize = 126;

/// Largest Σ|d_t| (on the common denominator) the exact count walks; beyond it the test gives
/// no p-value rather than run long. Pass/fail differences over equal repetitions stay far below.
const SIGN_FLIP_MAX_SPAN: u64 = 1 << 20;

/// The smallest two-sided p the paired test can ever give over `units` tasks (all differences
/// one sign): 2 / 2^units. `None` for no units or more than [`SIGN_FLIP_MAX_UNITS`].
pub fn smallest_two_sided_p(units: usize) -> Option<Fraction> {
    if units == 0 || units > SIGN_FLIP_MAX_UNITS {
        return None;
    }
    Some(reduce(Fraction {
        num: 2,
        den: 1u128 << units,
    }))
}

/// What a paired comparison over `tasks` tasks with `contrasts` contrasts can show at best:
/// every task moving the same way gives the smallest two-sided p, 2 / 2^tasks (the sign-flip
/// test with repetitions; the exact McNemar test over one repetition's `tasks` discordant pairs
/// gives the same), and Holm's adjustment multiplies the smallest of the contrasts by their
/// number. A pack too small for that to fall below 0.05 can never show a significant contrast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Power {
    pub tasks: usize,
    pub contrasts: usize,
    pub smallest_p: Fraction,
    pub smallest_holm_p: Fraction,
}

impl Power {
    /// The best case for `tasks` tasks and `contrasts` contrasts; `None` for no task, no
    /// contrast or more tasks than the exact tests take.
    pub fn of(tasks: usize, contrasts: usize) -> Option<Self> {
        let smallest_p = smallest_two_sided_p(tasks)?;
        let m = u128::try_from(contrasts).ok().filter(|m| *m > 0)?;
        let num = smallest_p.num.checked_mul(m)?;
        let smallest_holm_p = if num >= smallest_p.den {
            Fraction { num: 1, den: 1 }
        } else {
            reduce(Fraction {
                num,
                den: smallest_p.den,
            })
        };
        Some(Self {
            tasks,
            contrasts,
            smallest_p,
            smallest_holm_p,
        })
    }

    /// Whether some contrast could read significant at `alpha` (after Holm).
    pub fn can_reach(&self, alpha: f64) -> bool {
        self.smallest_holm_p.value() < alpha
    }
}

/// The exact two-sided sign-flip permutation test of paired per-unit differences
/// `diffs[t] = num_t / den_t` (the task is the unit): p = #{sign assignments with
/// |Σ ±d_t| ≥ |Σ d_t|} / 2^T over all 2^T assignments.
///
/// The assignments are counted, not enumerated: on a common denominator every |d_t| is an
/// integer v_t, an assignment's sum is V − 2F where V = Σ v_t and F is the sum of the flipped
/// v_t, and the number of assignments giving each F is a subset-sum count (T·V steps). At most
/// [`SIGN_FLIP_MAX_UNITS`] units.
pub fn sign_flip(diffs: &[(i64, u64)]) -> Option<Fraction> {
    let t = diffs.len();
    if t == 0 || t > SIGN_FLIP_MAX_UNITS || diffs.iter().any(|(_, d)| *d == 0) {
        return None;
    }
    // A common denominator turns every difference into an exact integer.
    let mut lcm = 1u64;
    for (_, d) in diffs {
        lcm = (lcm / gcd(lcm, *d)).checked_mul(*d)?;
    }
    let mut values = Vec::with_capacity(t);
    let mut observed: i128 = 0;
    let mut span: u64 = 0;
    for (n, d) in diffs {
        let v = n.unsigned_abs().checked_mul(lcm / d)?;
        observed += i128::from(n.signum()) * i128::from(v);
        span = span.checked_add(v)?;
        values.push(v);
    }
    if span > SIGN_FLIP_MAX_SPAN {
        return None;
    }
    let observed = observed.unsigned_abs();
    let span_len = usize::try_from(span).ok()?;
    // ways[f]: how many subsets of the units flipped so far have |d| summing to f.
    let mut ways = vec![0u128; span_len + 1];
    ways[0] = 1;
    let mut reached = 0usize;
    for v in values {
        let v = usize::try_from(v).ok()?;
        reached += v;
        // A zero difference doubles every count (both of its signs give the same sums).
        for f in (v..=reached).rev() {
            ways[f] += ways[f - v];
        }
    }
    let extreme: u128 = ways
        .iter()
        .enumerate()
        .filter(|(f, _)| {
            let sum = i128::from(span) - 2 * i128::try_from(*f).unwrap_or(i128::MAX);
            sum.unsigned_abs() >= observed
        })
        .map(|(_, w)| *w)
        .sum();
    Some(reduce(Fraction {
        num: extreme,
        den: 1u128 << t,
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

    #[test]
    fn a_p_value_reads_as_a_number_scientific_where_small() {
        let r = |num, den| Fraction { num, den }.readable();
        // The larger pack's p and Holm p (1/2^45 and 3/2^45) read as numbers, not as fractions.
        assert_eq!(r(1, 1 << 45), "2.8e-14");
        assert_eq!(r(3, 1 << 45), "8.5e-14");
        assert_eq!(r(1, 1 << 35), "2.9e-11");
        assert_eq!(r(7, 1024), "0.0068");
        assert_eq!(r(1, 32), "0.031");
        assert_eq!(r(3, 32), "0.094");
        assert_eq!(r(3, 8), "0.38");
        assert_eq!(r(1, 2), "0.5");
        // Exactly halfway rounds up, never down: a p never reads smaller than it is.
        assert_eq!(r(1, 8), "0.13");
        assert_eq!(r(1, 16), "0.063");
        assert_eq!(r(3, 16), "0.19");
        assert_eq!(r(999, 1000), "1");
        assert_eq!(r(1, 1000), "0.001");
        assert_eq!(r(1, 1001), "1.0e-3");
        assert_eq!(r(0, 8), "0");
        assert_eq!(r(8, 8), "1");
        assert_eq!(r(0, 0), "0");
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

    /// scipy.stats.binomtest(b, b + c, 0.5).pvalue (SciPy 1.17.1) at the exact limit of 126
    /// discordant pairs, where `C(n, i) · (n − i)` used to overflow u128 and panic `report`, and
    /// the exact fraction from Python's `fractions` for (60, 66).
    #[test]
    fn mcnemar_is_exact_and_does_not_overflow_at_126_pairs() {
        assert_eq!(mcnemar_exact(63, 63), Fraction { num: 1, den: 1 });
        assert_eq!(
            mcnemar_exact(60, 66),
            Fraction {
                num: 27_910_734_796_148_379_806_119_108_765_210_133_507,
                den: 42_535_295_865_117_307_932_921_825_928_971_026_432,
            }
        );
        assert!(close(
            mcnemar_exact(60, 66).value(),
            0.656_178_221_603_429_1
        ));
        assert_eq!(mcnemar_exact(66, 60), mcnemar_exact(60, 66));
        // Every split of 126 pairs, none of which may panic.
        for b in 0..=126 {
            let p = mcnemar_exact(b, 126 - b);
            assert!(p.num <= p.den && p.num > 0, "{b}: {p:?}");
        }
        // scipy.stats.binomtest(0, 126, 0.5).pvalue = 2^-125
        assert_eq!(
            mcnemar_exact(0, 126),
            Fraction {
                num: 1,
                den: 1 << 125
            }
        );
    }

    /// Above 126 pairs: scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue (SciPy 1.17.1),
    /// matched to a relative 1e-9.
    #[test]
    fn mcnemar_above_126_pairs_matches_scipy_binomtest() {
        let reference = [
            (64, 63, 1.0),
            (0, 127, 1.175_494_350_822_287_5e-38),
            (70, 100, 0.025_844_387_581_341_693),
            (100, 150, 0.001_883_300_935_076_160_2),
            (300, 200, 8.940_066_542_253_288e-6),
            (40, 120, 1.752_450_018_851_352_3e-10),
            (500, 560, 0.069_909_559_460_269_37),
        ];
        for (b, c, p) in reference {
            let got = mcnemar_exact(b, c);
            assert!(got.num <= got.den, "{b},{c}: {got:?}");
            assert!(
                (got.value() - p).abs() / p < 1e-9,
                "{b},{c}: {} vs {p}",
                got.value()
            );
        }
        // A tail too small for a fraction over 2^127 (binomtest(10, 210) is 4.7e-47) is shown
        // as 2^-127, an upper bound, never as 0.
        assert_eq!(
            mcnemar_exact(10, 200),
            Fraction {
                num: 1,
                den: 1 << 127
            }
        );
        assert_eq!(
            mcnemar_exact(0, 1000),
            Fraction {
                num: 1,
                den: 1 << 127
            }
        );
    }

    /// Over all-same-sign differences only the identity and the full flip are as extreme: 2 / 2^T,
    /// exactly, up to the 126-unit limit; beyond it (or on a zero denominator) no p-value.
    #[test]
    fn sign_flip_reaches_two_over_two_to_the_t_and_stops_at_126_units() {
        let ones = [(1_i64, 1_u64); 127];
        assert_eq!(sign_flip(&ones), None);
        for t in [1, 6, 20, 30, 126] {
            assert_eq!(sign_flip(&ones[..t]), smallest_two_sided_p(t), "{t} units");
        }
        assert_eq!(
            sign_flip(&ones[..30]),
            Some(Fraction {
                num: 1,
                den: 1 << 29
            })
        );
        assert_eq!(smallest_two_sided_p(6), Some(Fraction { num: 1, den: 32 }));
        assert_eq!(smallest_two_sided_p(0), None);
        assert_eq!(smallest_two_sided_p(127), None);
        assert_eq!(sign_flip(&[(1, 1), (1, 0)]), None, "a zero denominator");
    }

    #[test]
    fn power_says_what_a_pack_can_show() {
        let six = Power::of(6, 3).unwrap();
        assert_eq!(six.smallest_p, Fraction { num: 1, den: 32 });
        assert_eq!(six.smallest_holm_p, Fraction { num: 3, den: 32 });
        assert!(!six.can_reach(0.05), "3/32 > 0.05");
        let many = Power::of(46, 3).unwrap();
        assert_eq!(
            many.smallest_p,
            Fraction {
                num: 1,
                den: 1 << 45
            }
        );
        assert!(many.can_reach(0.05));
        assert_eq!(
            Power::of(1, 3).unwrap().smallest_holm_p,
            Fraction { num: 1, den: 1 },
            "capped at 1"
        );
        assert_eq!(Power::of(6, 0), None);
        assert_eq!(Power::of(0, 3), None);
        // The McNemar test over one repetition reaches the same bound with every pair discordant.
        assert_eq!(mcnemar_exact(6, 0), six.smallest_p);
    }

    /// Brute force over all 2^T assignments, the definition itself.
    fn sign_flip_by_enumeration(diffs: &[(i64, u64)]) -> Fraction {
        let lcm = diffs
            .iter()
            .fold(1u64, |acc, (_, d)| acc / gcd(acc, *d) * d);
        let scaled: Vec<i128> = diffs
            .iter()
            .map(|(n, d)| i128::from(*n) * i128::from(lcm / d))
            .collect();
        let observed = scaled.iter().sum::<i128>().abs();
        let total = 1u64 << diffs.len();
        let extreme = (0..total)
            .filter(|mask| {
                let s: i128 = scaled
                    .iter()
                    .enumerate()
                    .map(|(i, v)| if mask >> i & 1 == 1 { -v } else { *v })
                    .sum();
                s.abs() >= observed
            })
            .count();
        reduce(Fraction {
            num: u128::try_from(extreme).unwrap(),
            den: u128::from(total),
        })
    }

    /// The counting form equals the enumeration on many pseudo-random inputs (mixed signs, zeros,
    /// unequal denominators as when some repetitions of a task did not run).
    #[test]
    fn sign_flip_counts_exactly_what_enumeration_counts() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for _ in 0..300 {
            let t = 1 + usize::try_from(next(14)).unwrap();
            let diffs: Vec<(i64, u64)> = (0..t)
                .map(|_| {
                    let den = 1 + next(4);
                    let num =
                        i64::try_from(next(2 * den + 1)).unwrap() - i64::try_from(den).unwrap();
                    (num, den)
                })
                .collect();
            assert_eq!(
                sign_flip(&diffs),
                Some(sign_flip_by_enumeration(&diffs)),
                "{diffs:?}"
            );
        }
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

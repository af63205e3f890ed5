//! The significance test of `loadhost compare`: Welch's t-test, one-sided, on per-interval values.
//!
//! Why intervals and not tasks: the tasks of one run are not independent samples. They share the
//! machine, the target's state, connections and caches, so their latencies are correlated in time;
//! a test that treats a run's thousands of latencies as independent (Kolmogorov–Smirnov or
//! Mann–Whitney on whole histograms) calls every tiny shift "significant". An interval's value of
//! the statistic (its p50, its failure rate) is one observation per second of the run; those vary
//! as much as the run really varies, so a difference between two runs is judged against how much
//! each run moved on its own.
//!
//! Why Welch and not a rank test: a run of a few seconds has a few intervals, and an exact rank test
//! cannot reach a small p-value with them (Mann–Whitney with 3 intervals a side: never below 0.05
//! one-sided), so a 3-second run could never fail however large the shift. Welch's t uses the size
//! of the difference, not only its order, and does not assume equal variances. One outlying
//! interval inflates its side's variance, which makes the test *less* likely to reject: it errs on
//! the side of not failing a build.
//!
//! Only the incomplete beta function is needed (for Student's t); it is here, with its log-gamma,
//! so the crate needs no statistics dependency.

/// A variance no side's per-interval values can go below: what the measurement itself cannot
/// resolve, so two runs whose intervals all read the same bucket are not "infinitely" different.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Floor {
    /// A distribution statistic (percentile, mean, min, max) read from an HDR histogram: values are
    /// exact to 1/1024 of themselves, and printed to the microsecond (0.001 ms). A percentile is a
    /// bucket's edge, and two runs of one distribution whose value sits near an edge can read
    /// neighbouring buckets in every interval, so the floor is a standard deviation of one step,
    /// not the `step² / 12` of independent rounding.
    Resolution,
    /// A share (failed requests, checks): the binomial variance `p(1 − p) / n` of a unit of `n`
    /// samples at the pooled share `p`.
    Binomial,
    /// Events: the variance of a count is its mean (Poisson), so a count's floor is its mean and
    /// a rate's, r events per second over s seconds, is r / s.
    Poisson {
        /// Per second (achieved rate, requests per second) rather than per interval (counts).
        per_second: bool,
    },
    /// No floor (gauges: a value set by the plugin, not sampled).
    None,
}

/// One interval's value of a rule's statistic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    /// The statistic over the interval (its p50, its failure share, its rate).
    pub value: f64,
    /// How many samples it was measured on (tasks, requests, checks), when it is sampled.
    pub samples: Option<u64>,
    /// The interval's length in seconds.
    pub secs: f64,
}

/// Welch's test of "the new run's intervals are no worse than the base's".
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Welch {
    /// The one-sided p-value: the chance of a difference at least this large in the worse
    /// direction if the runs did not differ.
    pub p_value: f64,
    /// The t statistic, new − base.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Base intervals used.
    pub n_base: usize,
    /// New intervals used.
    pub n_new: usize,
}

/// The fewest intervals a side needs for a variance, and so for a test.
pub const MIN_UNITS: usize = 2;

/// Test whether `new` is larger (`higher_is_worse`) or smaller than `base`; `None` when a side
/// has fewer than [`MIN_UNITS`] units.
pub fn welch(base: &[Unit], new: &[Unit], floor: Floor, higher_is_worse: bool) -> Option<Welch> {
    if base.len() < MIN_UNITS || new.len() < MIN_UNITS {
        return None;
    }
    let (floor_base, floor_new) = floors(base, new, floor);
    let (mean_b, var_b) = mean_var(base);
    let (mean_n, var_n) = mean_var(new);
    let (nb, nn) = (base.len() as f64, new.len() as f64);
    let (sb, sn) = (var_b.max(floor_base) / nb, var_n.max(floor_new) / nn);
    let se = (sb + sn).sqrt();
    let diff = mean_n - mean_b;
    let worse = if higher_is_worse { diff } else { -diff };
    let df =
        if sb + sn > 0.0 { (sb + sn).powi(2) / (sb * sb / (nb - 1.0) + sn * sn / (nn - 1.0)) } else { nb + nn - 2.0 };
    let (t, p_value) = if se > 0.0 {
        let t = diff / se;
        (t, student_t_sf(if higher_is_worse { t } else { -t }, df))
    } else {
        // No spread at all (gauges that never moved): identical values say nothing differs, and
        // a difference with no noise around it is certain.
        let t = if worse > 0.0 { f64::INFINITY } else { 0.0 };
        (t.copysign(diff), if worse > 0.0 { 0.0 } else { 1.0 })
    };
    Some(Welch { p_value, t, df, n_base: base.len(), n_new: new.len() })
}

fn mean_var(units: &[Unit]) -> (f64, f64) {
    let n = units.len() as f64;
    let mean = units.iter().map(|u| u.value).sum::<f64>() / n;
    let var = units.iter().map(|u| (u.value - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var)
}

/// Each side's variance floor (per unit), from both sides pooled: under "no difference" they
/// share one mean.
fn floors(base: &[Unit], new: &[Unit], floor: Floor) -> (f64, f64) {
    let all = || base.iter().chain(new);
    let pooled_mean = all().map(|u| u.value).sum::<f64>() / all().count() as f64;
    let mean_of = |units: &[Unit], f: fn(&Unit) -> f64| units.iter().map(f).sum::<f64>() / units.len() as f64;
    match floor {
        Floor::Resolution => {
            let step = (pooled_mean.abs() / 1024.0).max(0.001);
            (step * step, step * step)
        }
        Floor::Binomial => {
            // The pooled share weighs each unit by its samples, as one big sample would.
            let (hits, total) = all().fold((0.0, 0.0), |(h, t), u| {
                let n = u.samples.unwrap_or(0) as f64;
                (h + u.value * n, t + n)
            });
            let p = if total > 0.0 { hits / total } else { pooled_mean };
            let per = |units: &[Unit]| {
                let n = mean_of(units, |u| u.samples.unwrap_or(0) as f64);
                if n > 0.0 { p * (1.0 - p) / n } else { 0.0 }
            };
            (per(base), per(new))
        }
        Floor::Poisson { per_second: false } => (pooled_mean.abs(), pooled_mean.abs()),
        Floor::Poisson { per_second: true } => {
            // A rate r over s seconds is a count r·s of variance r·s, so r has variance r / s.
            let per = |units: &[Unit]| {
                let secs = mean_of(units, |u| u.secs);
                if secs > 0.0 { pooled_mean.abs() / secs } else { 0.0 }
            };
            (per(base), per(new))
        }
        Floor::None => (0.0, 0.0),
    }
}

/// P(T > t) for Student's t with `df` degrees of freedom.
pub fn student_t_sf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 0.0 } else { 1.0 };
    }
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 { tail } else { 1.0 - tail }
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz), on the
/// side of x where it converges fast.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms: about 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let series = G[1..].iter().enumerate().fold(G[0], |sum, (i, g)| sum + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * b.abs().max(1e-300)
    }

    #[test]
    fn student_t_matches_published_tables() {
        // One-sided tail probabilities (R: pt(t, df, lower.tail = FALSE)).
        for (t, df, p) in [
            (2.0, 10.0, 0.036_694_017_385_370_2),
            (3.0, 4.0, 0.019_970_984_035_876_7),
            (1.0, 1.0, 0.25),
            (0.0, 7.0, 0.5),
            (12.706_204_736, 1.0, 0.025),
            (2.575_829_3, 1e7, 0.005),
            (-2.0, 10.0, 1.0 - 0.036_694_017_385_370_2),
            (40.0, 3.5, 4.383_220_554_687e-6),
            (5.0, 2.0, 0.018_874_775_675_311_9),
        ] {
            let got = student_t_sf(t, df);
            assert!(close(got, p, 1e-4), "t={t} df={df}: {got} vs {p}");
        }
        assert_eq!(student_t_sf(f64::INFINITY, 3.0), 0.0);
        assert!(student_t_sf(1.0, 0.0).is_nan());
    }

    #[test]
    fn ln_gamma_is_exact_on_factorials_and_half() {
        for (x, want) in [(1.0, 0.0), (2.0, 0.0), (5.0, 24f64.ln()), (11.0, 3_628_800f64.ln())] {
            assert!((ln_gamma(x) - want).abs() < 1e-12, "lnΓ({x})");
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    fn units(values: &[f64]) -> Vec<Unit> {
        values.iter().map(|&value| Unit { value, samples: Some(200), secs: 1.0 }).collect()
    }

    #[test]
    fn welch_finds_a_clear_shift_with_three_intervals_a_side() {
        let base = units(&[5.21, 5.25, 5.23]);
        let new = units(&[8.24, 8.27, 8.22]);
        let w = welch(&base, &new, Floor::Resolution, true).unwrap();
        assert!(w.p_value < 1e-5, "{w:?}");
        assert_eq!((w.n_base, w.n_new), (3, 3));
        // The same shift is no evidence that the new run is *lower*.
        assert!(welch(&base, &new, Floor::Resolution, false).unwrap().p_value > 0.99);
    }

    #[test]
    fn welch_does_not_reject_noise_nor_an_outlying_interval() {
        let base = units(&[5.2, 5.6, 5.1, 5.4]);
        let new = units(&[5.3, 5.5, 5.2, 5.6]);
        assert!(welch(&base, &new, Floor::Resolution, true).unwrap().p_value > 0.2);
        // One bad second in the new run moves its mean a lot, and its variance more.
        let spiked = units(&[5.3, 5.2, 25.0, 5.4]);
        assert!(welch(&base, &spiked, Floor::Resolution, true).unwrap().p_value > 0.1);
    }

    #[test]
    fn a_side_with_one_interval_has_no_test() {
        assert_eq!(welch(&units(&[1.0]), &units(&[1.0, 2.0]), Floor::Resolution, true), None);
    }

    #[test]
    fn identical_buckets_are_not_infinitely_different() {
        // Every interval read the same HDR bucket: the difference is one bucket, which the
        // resolution floor makes a small t rather than an infinite one.
        let base = units(&[5.24, 5.24, 5.24]);
        let new = units(&[5.245, 5.245, 5.245]);
        let w = welch(&base, &new, Floor::Resolution, true).unwrap();
        assert!(w.t.is_finite() && w.p_value > 0.01, "{w:?}");
    }

    #[test]
    fn failures_out_of_none_are_judged_by_the_binomial_floor() {
        let zero = units(&[0.0; 10]);
        // 1 failure in 200 per interval, for ten intervals: 10 of 2000 against 0 of 2000.
        let some = units(&[0.005; 10]);
        assert!(welch(&zero, &some, Floor::Binomial, true).unwrap().p_value < 0.01);
        // One failure in one interval of ten is within what nothing-changed allows.
        let mut one = units(&[0.0; 10]);
        one[3].value = 0.005;
        assert!(welch(&zero, &one, Floor::Binomial, true).unwrap().p_value > 0.05);
        // Nothing at all on either side is no difference.
        assert_eq!(welch(&zero, &zero, Floor::Binomial, true).unwrap().p_value, 1.0);
    }

    #[test]
    fn rates_are_judged_by_the_poisson_floor() {
        let base = units(&[200.0, 200.0, 200.0]);
        let lower = units(&[190.0, 190.0, 190.0]);
        // 10/s less over 3 s, with a count's own noise of √200 ≈ 14 per second: not a finding.
        assert!(welch(&base, &lower, Floor::Poisson { per_second: true }, false).unwrap().p_value > 0.05);
        let much_lower = units(&[100.0, 100.0, 100.0]);
        assert!(welch(&base, &much_lower, Floor::Poisson { per_second: true }, false).unwrap().p_value < 0.01);
    }

    /// Under "no difference" the test rejects at about its level: many draws of normal noise,
    /// three intervals a side, as a short run has.
    #[test]
    fn the_false_alarm_rate_on_noise_is_about_alpha() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut normal = move || {
            let (u, v) = (uniform().max(1e-300), uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        };
        let trials = 20_000;
        let mut rejected = 0;
        for _ in 0..trials {
            let base: Vec<f64> = (0..3).map(|_| 5.0 + 0.1 * normal()).collect();
            let new: Vec<f64> = (0..3).map(|_| 5.0 + 0.1 * normal()).collect();
            if welch(&units(&base), &units(&new), Floor::None, true).unwrap().p_value < 0.01 {
                rejected += 1;
            }
        }
        let rate = f64::from(rejected) / f64::from(trials);
        // Welch is slightly conservative at these sizes; it must not be liberal.
        assert!(rate < 0.015, "false-alarm rate {rate}");
    }
}

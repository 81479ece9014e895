//! Small statistical helpers used by tests and metrics: the chi-square goodness-of-fit test
//! and the regularised incomplete gamma function it needs.

/// `ln Γ(x)` for `x > 0` (Lanczos approximation, g = 7, 9 terms; relative error < 1e-13).
pub fn ln_gamma(x: f64) -> f64 {
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
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, &g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Upper regularised incomplete gamma `Q(a, x) = Γ(a, x) / Γ(a)` (series for `x < a + 1`,
/// Lentz continued fraction otherwise).
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let lg = ln_gamma(a);
    if x < a + 1.0 {
        let mut sum = 1.0 / a;
        let mut term = sum;
        let mut ap = a;
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        1.0 - (sum.ln() - x + a * x.ln() - lg).exp()
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (-x + a * x.ln() - lg).exp() * h
    }
}

/// Survival function of the chi-square distribution with `k` degrees of freedom:
/// `P(X > x) = Q(k/2, x/2)`.
pub fn chi2_sf(x: f64, k: f64) -> f64 {
    gamma_q(0.5 * k, 0.5 * x)
}

/// Result of [`chi_square_test`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChiSquare {
    /// The statistic `Σ (O - E)^2 / E` over the (pooled) bins.
    pub statistic: f64,
    /// Degrees of freedom: number of pooled bins minus one.
    pub dof: usize,
    /// `P(χ²_dof > statistic)`.
    pub p_value: f64,
}

/// Pearson chi-square goodness-of-fit test of observed counts against probabilities.
///
/// Bins are visited in order and merged until each pooled bin has expected count
/// `n * p >= min_expected` (a final small remainder is merged into the last pooled bin).
/// `probs` is normalised internally.
///
/// # Panics
/// If `counts.len() != probs.len()` or the probabilities sum to zero.
pub fn chi_square_test(counts: &[u64], probs: &[f64], min_expected: f64) -> ChiSquare {
    assert_eq!(
        counts.len(),
        probs.len(),
        "counts and probs differ in length"
    );
    let n: f64 = counts.iter().map(|&c| c as f64).sum();
    let psum: f64 = probs.iter().sum();
    assert!(psum > 0.0, "probabilities sum to zero");
    let mut pooled: Vec<(f64, f64)> = Vec::new();
    let (mut o, mut e) = (0.0, 0.0);
    for (&c, &p) in counts.iter().zip(probs) {
        o += c as f64;
        e += n * p / psum;
        if e >= min_expected {
            pooled.push((o, e));
            o = 0.0;
            e = 0.0;
        }
    }
    if e > 0.0 || o > 0.0 {
        match pooled.last_mut() {
            Some(last) => {
                last.0 += o;
                last.1 += e;
            }
            None => pooled.push((o, e)),
        }
    }
    let statistic: f64 = pooled.iter().map(|&(o, e)| (o - e) * (o - e) / e).sum();
    let dof = pooled.len().saturating_sub(1);
    ChiSquare {
        statistic,
        dof,
        p_value: if dof == 0 {
            1.0
        } else {
            chi2_sf(statistic, dof as f64)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_known_values() {
        assert!((ln_gamma(1.0)).abs() < 1e-12);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn chi2_sf_known_values() {
        // k = 2: sf = exp(-x/2)
        assert!((chi2_sf(3.0, 2.0) - (-1.5f64).exp()).abs() < 1e-12);
        // 95% quantile of chi2 with 10 dof is 18.307038
        assert!((chi2_sf(18.307038, 10.0) - 0.05).abs() < 1e-6);
        // 99.9% quantile with 1 dof is 10.827566
        assert!((chi2_sf(10.827566, 1.0) - 0.001).abs() < 1e-7);
    }

    #[test]
    fn chi_square_detects_mismatch() {
        let ok = chi_square_test(&[250, 250, 500], &[0.25, 0.25, 0.5], 5.0);
        assert_eq!(ok.statistic, 0.0);
        assert_eq!(ok.dof, 2);
        let bad = chi_square_test(&[400, 100, 500], &[0.25, 0.25, 0.5], 5.0);
        assert!(bad.p_value < 1e-10);
    }
}

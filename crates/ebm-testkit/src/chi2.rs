/// The outcome of a chi-square goodness-of-fit test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChiSquare {
    /// Pearson's statistic \\(\sum_k (O_k - E_k)^2 / E_k\\) over the (pooled) bins.
    pub statistic: f64,
    /// Degrees of freedom: number of pooled bins minus one.
    pub dof: usize,
    /// \\(P(\chi^2_{\text{dof}} \ge \text{statistic})\\).
    pub p_value: f64,
}

/// Pearson's chi-square test of `counts` against the exact probabilities `probs`.
///
/// Bins whose expected count is below 5 are pooled into one bin (kept only if its own expected
/// count reaches 5, otherwise merged into the largest bin), so the chi-square approximation of
/// the statistic's law holds. Probabilities are renormalised to sum to 1.
///
/// # Panics
/// If the lengths differ, a probability is negative, or there are no counts.
pub fn chi_square(counts: &[u64], probs: &[f64]) -> ChiSquare {
    assert_eq!(
        counts.len(),
        probs.len(),
        "chi_square: counts and probabilities differ in length"
    );
    assert!(
        probs.iter().all(|&p| p >= 0.0),
        "chi_square: negative probability"
    );
    let n: u64 = counts.iter().sum();
    assert!(n > 0, "chi_square: no counts");
    let total_p: f64 = probs.iter().sum();
    let n = n as f64;
    let mut bins: Vec<(f64, f64)> = Vec::new(); // (observed, expected)
    let mut pooled = (0.0, 0.0);
    for (&c, &p) in counts.iter().zip(probs) {
        let e = n * p / total_p;
        if e >= 5.0 {
            bins.push((c as f64, e));
        } else {
            pooled.0 += c as f64;
            pooled.1 += e;
        }
    }
    if pooled.1 >= 5.0 || bins.is_empty() {
        bins.push(pooled);
    } else if pooled.1 > 0.0 || pooled.0 > 0.0 {
        let largest = bins
            .iter_mut()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("bins is not empty");
        largest.0 += pooled.0;
        largest.1 += pooled.1;
    }
    let statistic: f64 = bins
        .iter()
        .map(|&(o, e)| {
            if e > 0.0 {
                (o - e) * (o - e) / e
            } else if o > 0.0 {
                f64::INFINITY
            } else {
                0.0
            }
        })
        .sum();
    ChiSquare::new(statistic, bins.len().saturating_sub(1))
}

impl ChiSquare {
    /// The test of a statistic that follows a chi-square law with `dof` degrees of freedom
    /// under the hypothesis: p-value \\(P(\chi^2_{\text{dof}} \ge \text{statistic})\\), 1 for no
    /// degrees of freedom.
    pub fn new(statistic: f64, dof: usize) -> Self {
        let p_value = if dof == 0 {
            1.0
        } else {
            regularized_gamma_q(dof as f64 / 2.0, statistic / 2.0)
        };
        Self {
            statistic,
            dof,
            p_value,
        }
    }
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9), relative error below 1e-14 for x > 0.
    const C: [f64; 9] = [
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
        return std::f64::consts::PI.ln()
            - (std::f64::consts::PI * x).sin().ln()
            - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let mut a = C[0];
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised upper incomplete gamma function \\(Q(a, x) = \Gamma(a, x) / \Gamma(a)\\),
/// by its series for \\(x < a + 1\\) and its continued fraction otherwise (relative accuracy
/// about \\(10^{-12}\\)).
pub fn regularized_gamma_q(a: f64, x: f64) -> f64 {
    assert!(a > 0.0, "regularized_gamma_q: a must be positive");
    if x <= 0.0 {
        return 1.0;
    }
    if x.is_infinite() {
        return 0.0;
    }
    let log_prefactor = -x + a * x.ln() - ln_gamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        1.0 - sum * log_prefactor.exp()
    } else {
        // Modified Lentz for the continued fraction of Gamma(a, x).
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
        log_prefactor.exp() * h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_q_matches_known_values() {
        // Q(1, x) = exp(-x); chi-square with 2 dof: p = exp(-s/2).
        for &x in &[0.1, 1.0, 3.0, 20.0] {
            assert!((regularized_gamma_q(1.0, x) - (-x).exp()).abs() < 1e-13);
        }
        // Q(1/2, x) = erfc(sqrt(x)); erfc(1) = 0.157299207050285.
        assert!((regularized_gamma_q(0.5, 1.0) - 0.157_299_207_050_285_13).abs() < 1e-12);
        // Chi-square 10 dof at 18.307 has upper tail 0.05.
        assert!((regularized_gamma_q(5.0, 18.307 / 2.0) - 0.05).abs() < 1e-4);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn chi_square_accepts_exact_and_rejects_wrong_counts() {
        let p = [0.5, 0.3, 0.2];
        let good = chi_square(&[5000, 3000, 2000], &p);
        assert_eq!(good.statistic, 0.0);
        assert_eq!(good.dof, 2);
        assert_eq!(good.p_value, 1.0);
        let bad = chi_square(&[4000, 3500, 2500], &p);
        assert!(bad.p_value < 1e-20);
        // Low-expectation bins are pooled.
        let pooled = chi_square(&[990, 5, 5], &[0.99, 0.004, 0.006]);
        assert_eq!(pooled.dof, 1);
    }
}

//! Convergence and error diagnostics of replicated runs: the Gelman–Rubin \\(\hat R\\) of
//! independent chains and the delete-one jackknife error of a statistic over groups (used by
//! the tethered profile's replicas and by BAR's groups of chains).

/// The Gelman–Rubin potential scale reduction of `R >= 2` chains of `n >= 2` samples each,
/// from their means \\(\bar x_r\\) and unbiased within-chain variances \\(s_r^2\\):
///
/// \\[ W = \frac1R \sum_r s_r^2, \qquad B = \frac{n}{R-1} \sum_r (\bar x_r - \bar x)^2,
///     \qquad \hat R = \sqrt{\frac{\frac{n-1}{n} W + \frac{B}{n}}{W}} . \\]
///
/// \\(\hat R \to 1\\) when the chains sample the same law; a tethered law with two components
/// that the replicas sample separately gives \\(B \gg W\\) and \\(\hat R \gg 1\\). NaN for
/// fewer than two chains or samples; \\(+\infty\\) if \\(W = 0 < B\\), 1 if both vanish.
pub fn gelman_rubin(means: &[f64], within: &[f64], n: usize) -> f64 {
    let r = means.len();
    if r < 2 || n < 2 || within.len() != r {
        return f64::NAN;
    }
    let mu = means.iter().sum::<f64>() / r as f64;
    let b = n as f64 * means.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (r - 1) as f64;
    let w = within.iter().sum::<f64>() / r as f64;
    if w <= 0.0 {
        return if b > 0.0 { f64::INFINITY } else { 1.0 };
    }
    let n = n as f64;
    (((n - 1.0) / n * w + b / n) / w).sqrt()
}

/// The delete-one jackknife standard error of a statistic from its `R` leave-one-out values
/// \\(\theta_{(q)}\\) (the statistic recomputed without group \\(q\\)):
///
/// \\[ \sigma_{\rm jack} = \sqrt{\frac{R-1}{R} \sum_q \big(\theta_{(q)} - \bar\theta\big)^2},
///     \qquad \bar\theta = \frac1R \sum_q \theta_{(q)} . \\]
///
/// For the mean it equals the usual standard error \\(s/\sqrt R\\); for a non-linear
/// statistic (a log density, a mode weight) it needs no derivative. NaN for fewer than two
/// values.
pub fn jackknife_error(leave_one_out: &[f64]) -> f64 {
    let r = leave_one_out.len();
    if r < 2 {
        return f64::NAN;
    }
    let mu = leave_one_out.iter().sum::<f64>() / r as f64;
    let ss: f64 = leave_one_out.iter().map(|x| (x - mu) * (x - mu)).sum();
    ((r - 1) as f64 / r as f64 * ss).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelman_rubin_exact_values() {
        // W = 1, B = 10 * var([0, 1]) = 5, V = 0.9 * 1 + 5 / 10 = 1.4.
        let r = gelman_rubin(&[0.0, 1.0], &[1.0, 1.0], 10);
        assert!((r - 1.4f64.sqrt()).abs() < 1e-15, "{r}");
        // Equal means: R = sqrt((n - 1) / n).
        let r = gelman_rubin(&[2.0, 2.0, 2.0], &[0.5, 1.0, 1.5], 4);
        assert!((r - 0.75f64.sqrt()).abs() < 1e-15, "{r}");
        // W = 2, B = 100 * var([0, 2, 4]) = 400, V = 0.99 * 2 + 4 = 5.98.
        let r = gelman_rubin(&[0.0, 2.0, 4.0], &[1.0, 2.0, 3.0], 100);
        assert!((r - (5.98f64 / 2.0).sqrt()).abs() < 1e-14, "{r}");
        assert!(gelman_rubin(&[1.0], &[1.0], 10).is_nan());
        assert!(gelman_rubin(&[1.0, 2.0], &[1.0, 1.0], 1).is_nan());
        assert_eq!(gelman_rubin(&[1.0, 2.0], &[0.0, 0.0], 5), f64::INFINITY);
        assert_eq!(gelman_rubin(&[1.0, 1.0], &[0.0, 0.0], 5), 1.0);
    }

    #[test]
    fn jackknife_of_the_mean_is_the_standard_error() {
        // Leave-one-out means of [1, 2, 3, 4]: 3, 8/3, 7/3, 2; s^2 = 5/3, s / sqrt(4).
        let loo = [3.0, 8.0 / 3.0, 7.0 / 3.0, 2.0];
        let e = jackknife_error(&loo);
        assert!((e - (5.0f64 / 12.0).sqrt()).abs() < 1e-15, "{e}");
        // (R - 1) / R * sum of squares: 1/2 * (0.5^2 + 0.5^2) = 0.25.
        assert!((jackknife_error(&[1.0, 2.0]) - 0.5).abs() < 1e-15);
        assert!(jackknife_error(&[1.0]).is_nan());
        assert_eq!(jackknife_error(&[0.7; 5]), 0.0);
    }
}

//! Numerically stable scalar functions used across the workspace.
//!
//! All functions are exact to a few ulps over the whole real line (no overflow for large
//! arguments, no cancellation for small ones).

use num_traits::Float;

/// \\(\log(1 + e^x)\\), stable for every `x`: \\(\max(x, 0) + \operatorname{log1p}(e^{-|x|})\\).
#[inline]
pub fn softplus<F: Float>(x: F) -> F {
    x.max(F::zero()) + (-x.abs()).exp().ln_1p()
}

/// \\(\log \sigma(x) = -\operatorname{softplus}(-x)\\).
#[inline]
pub fn log_sigmoid<F: Float>(x: F) -> F {
    -softplus(-x)
}

/// The logistic function \\(\sigma(x) = 1 / (1 + e^{-x})\\); saturates to exactly 0 or 1 for
/// large \\(|x|\\) and never returns NaN for finite input.
#[inline]
pub fn sigmoid<F: Float>(x: F) -> F {
    F::one() / (F::one() + (-x).exp())
}

/// \\(\log(2\cosh x) = |x| + \operatorname{log1p}(e^{-2|x|})\\), the cumulant generating
/// function of a \\(\pm 1\\) unit.
#[inline]
pub fn log_2cosh<F: Float>(x: F) -> F {
    let a = x.abs();
    a + (-(a + a)).exp().ln_1p()
}

/// \\(\log(e^a + e^b)\\) without overflow; `-inf` is the neutral element.
#[inline]
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + (-(a - b).abs()).exp().ln_1p()
}

/// \\(\log \sum_i e^{x_i}\\) in two passes (max, then shifted sum). Returns `-inf` for an empty
/// slice or when every element is `-inf`; returns `+inf` or NaN if an element is.
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return if xs.iter().any(|x| x.is_nan()) {
            f64::NAN
        } else {
            m
        };
    }
    m + xs.iter().map(|&x| (x - m).exp()).sum::<f64>().ln()
}

/// \\(\log \frac{1}{n}\sum_i e^{x_i}\\): the log of the mean of importance weights given their
/// logs.
pub fn log_mean_exp(xs: &[f64]) -> f64 {
    log_sum_exp(xs) - (xs.len() as f64).ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn softplus_matches_naive_where_naive_is_accurate_and_is_stable_elsewhere() {
        for &x in &[-20.0f64, -3.0, -0.5, 0.0, 0.7, 5.0, 20.0] {
            assert_relative_eq!(softplus(x), (1.0 + x.exp()).ln(), max_relative = 1e-12);
        }
        assert_eq!(softplus(1000.0f64), 1000.0);
        assert_relative_eq!(softplus(-1000.0f64), 0.0);
        assert!(softplus(-800.0f64) >= 0.0);
        assert_relative_eq!(softplus(-40.0f64), (-40.0f64).exp(), max_relative = 1e-12);
        assert_relative_eq!(softplus(88.0f32), 88.0f32, max_relative = 1e-6);
    }

    #[test]
    fn sigmoid_and_log_sigmoid_are_consistent() {
        for &x in &[-700.0f64, -30.0, -1.0, 0.0, 2.0, 30.0, 700.0] {
            let s = sigmoid(x);
            assert!((0.0..=1.0).contains(&s));
            if s > 0.0 {
                assert_relative_eq!(s.ln(), log_sigmoid(x), max_relative = 1e-12);
            }
        }
        assert_eq!(sigmoid(-1000.0f32), 0.0);
        assert_eq!(sigmoid(1000.0f32), 1.0);
        assert_relative_eq!(log_sigmoid(-1000.0f64), -1000.0);
    }

    #[test]
    fn log_2cosh_is_stable() {
        for &x in &[-5.0f64, -0.1, 0.0, 0.3, 7.0] {
            assert_relative_eq!(log_2cosh(x), (2.0 * x.cosh()).ln(), max_relative = 1e-12);
        }
        assert_eq!(log_2cosh(1e4f64), 1e4);
        assert_eq!(log_2cosh(-1e4f64), 1e4);
    }

    #[test]
    fn log_sum_exp_handles_extremes() {
        assert_relative_eq!(
            log_sum_exp(&[1000.0, 1000.0]),
            1000.0 + 2f64.ln(),
            max_relative = 1e-15
        );
        assert_relative_eq!(log_sum_exp(&[-1000.0, -1000.0]), -1000.0 + 2f64.ln());
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert!(log_sum_exp(&[0.0, f64::NAN]).is_nan());
        assert_relative_eq!(log_mean_exp(&[0.0, 0.0, 0.0]), 0.0);
        assert_relative_eq!(log_add_exp(3.0, 3.0), 3.0 + 2f64.ln());
        assert_eq!(log_add_exp(f64::NEG_INFINITY, 2.0), 2.0);
    }
}

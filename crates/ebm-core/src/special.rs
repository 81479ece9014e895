//! Special functions of the Gaussian family, accurate over the whole real line, and exact
//! sampling of truncated normal variables far in the tails (spec
//! `ags-barriers-analytic-models.md` §2.4).

use rand::Rng;
use rand_distr::{Distribution, Exp1, StandardNormal};

/// \\(\operatorname{erfc}(x) = 1 - \operatorname{erf}(x)\\), to about 1 ulp (musl's algorithm via
/// the `libm` crate).
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}

/// The scaled complementary error function \\(\operatorname{erfcx}(x) = e^{x^2}
/// \operatorname{erfc}(x)\\), finite and accurate (relative error \\(\lesssim 10^{-15}\\)) for every
/// \\(x\\) where it does not overflow (\\(x \gtrsim -26.6\\)).
///
/// For \\(x < 0.5\\) it is the product of `exp` and `erfc`; for \\(0.5 \le x < 26\\) the factor
/// \\(e^{x^2}\\) is computed from an exact split of \\(x^2\\) so that its rounding does not grow
/// with \\(x^2\\); beyond (where `erfc` underflows), the asymptotic series
/// \\(\frac{1}{x\sqrt\pi}\sum_k (-1)^k \frac{(2k-1)!!}{(2x^2)^k}\\).
pub fn erfcx(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.5 {
        return (x * x).exp() * libm::erfc(x);
    }
    if x < 26.0 {
        // x = hi + lo with hi on 26 bits, so hi * hi is exact and x^2 = hi^2 + lo * (x + hi).
        let hi = f64::from_bits(x.to_bits() & 0xFFFF_FFFF_F800_0000);
        let lo = x - hi;
        return (hi * hi).exp() * (lo * (x + hi)).exp() * libm::erfc(x);
    }
    let u = 1.0 / (2.0 * x * x);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..20 {
        term *= -((2 * k - 1) as f64) * u;
        sum += term;
    }
    sum / (x * std::f64::consts::PI.sqrt())
}

/// \\(\log \Phi(x)\\), the log of the standard normal distribution function, without underflow
/// for very negative \\(x\\) (where it behaves as \\(-x^2/2\\)) and without cancellation for large
/// positive \\(x\\).
pub fn log_ndtr(x: f64) -> f64 {
    let y = -x / std::f64::consts::SQRT_2;
    if x < 0.0 {
        (0.5 * erfcx(y)).ln() - 0.5 * x * x
    } else {
        (-0.5 * libm::erfc(-y)).ln_1p()
    }
}

/// \\(\frac{x^2}{2} + \log \Phi(x) = \log\Big(\sqrt{2\pi}\, e^{x^2/2}\, \Phi(x)\Big) - \tfrac12\log 2\pi\\),
/// the log-mass of a half-line Gaussian integral: with precision \\(s\\) and mode \\(m\\),
/// \\(\log \int_0^\infty e^{-s(h - m)^2/2 + s m^2/2} dh = \tfrac12 \log\frac{2\pi}{s} +
/// \texttt{log\_half\_gaussian}(m\sqrt s)\\). Stable for all \\(x\\): no cancellation between the
/// two terms for \\(x \ll 0\\).
pub fn log_half_gaussian(x: f64) -> f64 {
    if x < 0.0 {
        (0.5 * erfcx(-x / std::f64::consts::SQRT_2)).ln()
    } else {
        0.5 * x * x + (-0.5 * libm::erfc(x / std::f64::consts::SQRT_2)).ln_1p()
    }
}

/// The inverse Mills ratio \\(\lambda(x) = \varphi(x) / \Phi(x) = \sqrt{2/\pi} /
/// \operatorname{erfcx}(-x/\sqrt2)\\), finite for every \\(x\\) (it tends to 0 as
/// \\(x \to \infty\\) and behaves as \\(-x\\) as \\(x \to -\infty\\)). For \\(t \sim N(0, 1)\\),
/// \\(E[t \mid t \ge a] = \lambda(-a)\\).
pub fn inverse_mills(x: f64) -> f64 {
    (2.0 / std::f64::consts::PI).sqrt() / erfcx(-x / std::f64::consts::SQRT_2)
}

/// \\(\operatorname{Var}[t \mid t \ge a]\\) for \\(t \sim N(0, 1)\\): \\(1 + a\lambda - \lambda^2\\)
/// with \\(\lambda = \varphi(a)/Q(a)\\), and for \\(a \ge 50\\), where that formula cancels, the
/// asymptotic series \\(u - 6u^2 + 50u^3 - 518u^4 + 6354u^5\\), \\(u = 1/a^2\\) (relative error
/// below \\(10^{-12}\\)).
pub fn truncated_normal_variance(a: f64) -> f64 {
    if a >= 50.0 {
        let u = 1.0 / (a * a);
        return u * (1.0 + u * (-6.0 + u * (50.0 + u * (-518.0 + u * 6354.0))));
    }
    let l = inverse_mills(-a);
    1.0 + a * l - l * l
}

/// Draws \\(t \sim N(0, 1)\\) conditioned on \\(t \ge a\\), exactly, for any finite \\(a\\):
/// for \\(a \le 0\\) by rejection from \\(N(0,1)\\) (acceptance \\(\ge 1/2\\)); for \\(a > 0\\) by
/// Robert's (1995) exponential proposal \\(t = a + E/\lambda^*\\),
/// \\(\lambda^* = (a + \sqrt{a^2 + 4})/2\\), accepted with probability
/// \\(e^{-(t - \lambda^*)^2/2}\\) (acceptance \\(\ge 0.76\\), tending to 1 as \\(a \to \infty\\)).
/// No inverse distribution function is involved, so nothing underflows in the tails.
pub fn sample_truncated_normal_above<R: Rng + ?Sized>(a: f64, rng: &mut R) -> f64 {
    if a <= 0.0 {
        loop {
            let t: f64 = StandardNormal.sample(rng);
            if t >= a {
                return t;
            }
        }
    }
    let lambda = 0.5 * (a + (a * a + 4.0).sqrt());
    loop {
        let e: f64 = Exp1.sample(rng);
        let t = a + e / lambda;
        let d = t - lambda;
        let u: f64 = rng.random();
        if u < (-0.5 * d * d).exp() {
            return t;
        }
    }
}

// Reference values are quoted at the precision of their source (high-precision arithmetic).
#[cfg(test)]
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn erfc_and_erfcx_match_high_precision_values() {
        // Reference values computed with 60-digit arithmetic (mpmath).
        assert!(rel(erfc(1.0), 0.157_299_207_050_285_13) < 1e-15);
        assert!(rel(erfcx(10.0), 0.056_140_992_743_822_586) < 1e-15);
        assert!(rel(erfcx(30.0), 0.018_795_888_861_416_751) < 1e-15);
        // Around the switch points and in the asymptotic range, erfcx(x) * x * sqrt(pi) -> 1.
        for &x in &[0.4999, 0.5, 0.5001, 25.999, 26.0, 1e3, 1e8, 1e200] {
            let v = erfcx(x);
            assert!(v.is_finite() && v > 0.0, "erfcx({x}) = {v}");
        }
        assert!(rel(erfcx(1e8) * 1e8 * std::f64::consts::PI.sqrt(), 1.0) < 1e-15);
        // Continuity across the branch points.
        assert!(rel(erfcx(25.999_999_999), erfcx(26.0)) < 1e-10);
        // More references from 40-digit arithmetic, on both sides of each branch point.
        for (x, v) in [
            (0.7, 0.525_930_337_349_440_96),
            (5.0, 0.110_704_637_733_068_63),
            (25.9, 0.021_767_181_150_738_213),
            (26.0, 0.021_683_584_850_562_907),
            (100.0, 0.005_641_613_782_989_433),
            (-3.0, 16_205.988_853_999_587),
        ] {
            assert!(rel(erfcx(x), v) < 2e-15, "erfcx({x}) = {} vs {v}", erfcx(x));
        }
        // Negative arguments: erfcx(-x) = 2 exp(x^2) - erfcx(x).
        assert!(rel(erfcx(-2.0), 2.0 * 4f64.exp() - erfcx(2.0)) < 1e-14);
    }

    #[test]
    fn log_ndtr_is_accurate_in_both_tails() {
        // Phi(-10) = 7.619853024160526e-24.
        assert!(rel(log_ndtr(-10.0), 7.619_853_024_160_526e-24f64.ln()) < 1e-14);
        // Far tail: log Phi(x) ~ -x^2/2 - log(-x sqrt(2 pi)).
        let x = -1e4;
        let asym = -0.5 * x * x - (-x * (2.0 * std::f64::consts::PI).sqrt()).ln() - 1.0 / (x * x);
        assert!(rel(log_ndtr(x), asym) < 1e-12);
        // Upper tail: log Phi(x) = log1p(-Q(x)) ~ -Q(x); Q(10) = 7.619853024160526e-24.
        assert!(rel(log_ndtr(10.0), -7.619_853_024_160_526e-24) < 1e-12);
        assert_eq!(log_ndtr(0.0), 0.5f64.ln());
    }

    #[test]
    fn truncated_normal_variance_is_continuous_and_matches_references() {
        // V(50) from 60-digit arithmetic.
        assert!(rel(truncated_normal_variance(50.0), 3.990_431_868_038_995_5e-4) < 1e-12);
        assert!(
            rel(
                truncated_normal_variance(49.999_999),
                truncated_normal_variance(50.0)
            ) < 1e-6
        );
        // V(0) = 1 - 2/pi.
        assert!(
            rel(
                truncated_normal_variance(0.0),
                1.0 - 2.0 / std::f64::consts::PI
            ) < 1e-14
        );
        // V(-inf) = 1.
        assert!((truncated_normal_variance(-40.0) - 1.0).abs() < 1e-15);
        assert!(rel(truncated_normal_variance(1e6), 1e-12) < 1e-11);
    }

    #[test]
    fn truncated_normal_samples_have_the_exact_moments_even_far_in_the_tail() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let n = 100_000;
        for &a in &[-3.0, -0.5, 0.0, 0.7, 4.0, 30.0, 1e3] {
            let (mut s1, mut s2) = (0.0, 0.0);
            for _ in 0..n {
                let t = sample_truncated_normal_above(a, &mut rng);
                assert!(t >= a);
                s1 += t - a;
                s2 += (t - a) * (t - a);
            }
            let mean = inverse_mills(-a) - a; // E[t - a]
            let var = truncated_normal_variance(a);
            let m = s1 / n as f64;
            let v = s2 / n as f64 - m * m;
            assert!(
                (m - mean).abs() < 5.0 * (var / n as f64).sqrt(),
                "a = {a}: mean {m} vs {mean}"
            );
            // The variance estimator's standard error is about var * sqrt(2 / n) (up to kurtosis).
            assert!(rel(v, var) < 0.03, "a = {a}: variance {v} vs {var}");
        }
    }
}

//! Special functions of the Gaussian family, accurate over the whole real line, and exact
//! sampling of truncated normal variables far in the tails (the AGS paper
//! Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*, Fernandez-de-Cossio-Diaz et al., *Accelerated sampling with stacked RBMs*).
//!
//! | Function | Value | Accuracy (tested against 50-digit references) |
//! |---|---|---|
//! | [`erfc`] | \\(\operatorname{erfc}(x)\\) | about 1 ulp (musl's algorithm, `libm` crate) |
//! | [`erfcx`] | \\(e^{x^2}\operatorname{erfc}(x)\\) | \\(\lesssim 10^{-15}\\) relative wherever finite |
//! | [`ndtr`], [`log_ndtr`] | \\(\Phi(x)\\), \\(\log\Phi(x)\\) | \\(\lesssim 10^{-14}\\) relative, no underflow of the log |
//! | [`ndtri`] | \\(\Phi^{-1}(p)\\) | \\(\lesssim 10^{-15}\\) relative for \\(p \ge 5 \cdot 10^{-324}\\) |
//! | [`inverse_mills`] | \\(\varphi(x)/\Phi(x)\\) | \\(\lesssim 10^{-15}\\) relative |
//! | [`truncated_normal_mean_excess`], [`truncated_normal_variance`] | moments of \\(t \mid t \ge a\\) | \\(\lesssim 10^{-14}\\) relative, no cancellation for \\(a \gg 1\\) |
//!
//! [`sample_truncated_normal_above`] and [`sample_truncated_normal_excess`] draw
//! \\(t \sim N(0,1)\\) conditioned on \\(t \ge a\\) exactly for every finite \\(a\\): by the
//! inverse distribution function (in complementary form) for \\(a < 1\\), by Robert's (1995)
//! exponential rejection for \\(a \ge 1\\).

use crate::Scalar;
use rand::Rng;
use rand_distr::{Distribution, Exp1};
use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// \\(\operatorname{erfc}(x) = 1 - \operatorname{erf}(x)\\), to about 1 ulp (musl's algorithm via
/// the `libm` crate). Underflows to 0 for \\(x \gtrsim 27.2\\); use [`erfcx`] there.
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}

/// \\(e^{y}\\) for \\(y = x^2\\) without the \\(x^2\\)-proportional rounding error of
/// `(x * x).exp()`: \\(x = h + l\\) with \\(h\\) on 26 bits, so \\(h^2\\) is exact and
/// \\(x^2 = h^2 + l(x + h)\\).
#[inline]
fn exp_x_squared(x: f64) -> f64 {
    let hi = f64::from_bits(x.to_bits() & 0xFFFF_FFFF_F800_0000);
    let lo = x - hi;
    (hi * hi).exp() * (lo * (x + hi)).exp()
}

/// The scaled complementary error function \\(\operatorname{erfcx}(x) = e^{x^2}
/// \operatorname{erfc}(x)\\), finite and accurate (relative error \\(\lesssim 10^{-15}\\)) for every
/// \\(x\\) where it does not overflow (\\(x \gtrsim -26.6\\); below, `+inf`).
///
/// For \\(|x| < 0.5\\) it is the product of `exp` and `erfc`; for \\(-26.7 < x < 26\\) the factor
/// \\(e^{x^2}\\) is computed from an exact split of \\(x^2\\) so that its rounding does not grow
/// with \\(x^2\\); beyond (where `erfc` underflows), the asymptotic series
/// \\(\frac{1}{x\sqrt\pi}\sum_{k<20} (-1)^k \frac{(2k-1)!!}{(2x^2)^k}\\), whose truncation error
/// at \\(x \ge 26\\) is far below one ulp.
pub fn erfcx(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x.abs() < 0.5 {
        return (x * x).exp() * libm::erfc(x);
    }
    if x < 26.0 {
        if x < -26.7 {
            return f64::INFINITY;
        }
        return exp_x_squared(x) * libm::erfc(x);
    }
    let u = 1.0 / (2.0 * x * x);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..20 {
        term *= -((2 * k - 1) as f64) * u;
        sum += term;
    }
    sum / (x * PI.sqrt())
}

/// \\(\Phi(x) = \frac12\operatorname{erfc}(-x/\sqrt2)\\), the standard normal distribution
/// function, accurate in relative terms in the lower tail (no \\(1 - \cdot\\) cancellation).
/// Underflows to 0 for \\(x \lesssim -38.5\\); use [`log_ndtr`] there.
pub fn ndtr(x: f64) -> f64 {
    0.5 * libm::erfc(-x * FRAC_1_SQRT_2)
}

/// \\(\log \Phi(x)\\), the log of the standard normal distribution function, without underflow
/// for very negative \\(x\\) (\\(\log\frac12\operatorname{erfcx}(-x/\sqrt2) - x^2/2\\), which
/// behaves as \\(-x^2/2\\)) and without cancellation for large positive \\(x\\)
/// (\\(\operatorname{log1p}(-\frac12\operatorname{erfc}(x/\sqrt2))\\)).
pub fn log_ndtr(x: f64) -> f64 {
    let y = -x * FRAC_1_SQRT_2;
    if x < 0.0 {
        (0.5 * erfcx(y)).ln() - 0.5 * x * x
    } else {
        (-0.5 * libm::erfc(-y)).ln_1p()
    }
}

/// Evaluates the polynomial with coefficients `c` (constant term first) at `x` by Horner's rule.
#[inline]
fn horner(c: &[f64; 8], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ck| acc * x + ck)
}

/// The inverse \\(\Phi^{-1}(p)\\) of the standard normal distribution function, accurate in
/// both tails: relative error \\(\lesssim 10^{-15}\\) for every \\(p\\) down to the smallest
/// subnormal (\\(\Phi^{-1}(5 \cdot 10^{-324}) \approx -38.47\\)).
///
/// Wichura's algorithm AS 241 (PPND16, *Appl. Statist.* 37, 1988) on
/// \\(q = \min(p, 1 - p)\\) (exact for \\(p \ge \frac12\\)), polished by one Newton step on
/// \\(\log\Phi(x) = \log q\\) (derivative: the inverse Mills ratio), which keeps full relative
/// accuracy far in the lower tail. For quantiles of the upper tail given a small
/// \\(Q = 1 - p\\), use \\(-\Phi^{-1}(Q)\\) rather than forming \\(1 - Q\\).
///
/// Returns \\(-\infty\\) at 0, \\(+\infty\\) at 1 and NaN outside \\([0, 1]\\).
pub fn ndtri(p: f64) -> f64 {
    #[allow(clippy::excessive_precision)]
    const A: [f64; 8] = [
        3.387_132_872_796_366_608_0,
        1.331_416_678_917_843_774_5e2,
        1.971_590_950_306_551_442_7e3,
        1.373_169_376_550_946_112_5e4,
        4.592_195_393_154_987_145_7e4,
        6.726_577_092_700_870_085_3e4,
        3.343_057_558_358_812_810_5e4,
        2.509_080_928_730_122_672_7e3,
    ];
    #[allow(clippy::excessive_precision)]
    const B: [f64; 8] = [
        1.0,
        4.231_333_070_160_091_125_2e1,
        6.871_870_074_920_579_083_0e2,
        5.394_196_021_424_751_107_7e3,
        2.121_379_430_158_659_586_7e4,
        3.930_789_580_009_271_061_0e4,
        2.872_908_573_572_194_267_4e4,
        5.226_495_278_852_854_561_0e3,
    ];
    #[allow(clippy::excessive_precision)]
    const C: [f64; 8] = [
        1.423_437_110_749_683_577_34,
        4.630_337_846_156_545_295_90,
        5.769_497_221_460_691_405_50,
        3.647_848_324_763_204_605_04,
        1.270_458_252_452_368_382_58,
        2.417_807_251_774_506_117_70e-1,
        2.272_384_498_926_918_458_33e-2,
        7.745_450_142_783_414_076_40e-4,
    ];
    #[allow(clippy::excessive_precision)]
    const D: [f64; 8] = [
        1.0,
        2.053_191_626_637_758_821_87,
        1.676_384_830_183_803_849_40,
        6.897_673_349_851_000_045_50e-1,
        1.481_039_764_274_800_745_90e-1,
        1.519_866_656_361_645_719_66e-2,
        5.475_938_084_995_344_946_00e-4,
        1.050_750_071_644_416_843_24e-9,
    ];
    #[allow(clippy::excessive_precision)]
    const E: [f64; 8] = [
        6.657_904_643_501_103_777_20,
        5.463_784_911_164_114_369_90,
        1.784_826_539_917_291_335_80,
        2.965_605_718_285_048_912_30e-1,
        2.653_218_952_657_612_309_30e-2,
        1.242_660_947_388_078_438_60e-3,
        2.711_555_568_743_487_578_15e-5,
        2.010_334_399_292_288_132_65e-7,
    ];
    #[allow(clippy::excessive_precision)]
    const F: [f64; 8] = [
        1.0,
        5.998_322_065_558_879_376_90e-1,
        1.369_298_809_227_358_053_10e-1,
        1.487_536_129_085_061_485_25e-2,
        7.868_691_311_456_132_591_00e-4,
        1.846_318_317_510_054_681_80e-5,
        1.421_511_758_316_445_888_70e-7,
        2.044_263_103_389_939_785_64e-15,
    ];
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    let dq = p - 0.5;
    if dq.abs() <= 0.425 {
        let r = 0.180_625 - dq * dq;
        return dq * horner(&A, r) / horner(&B, r);
    }
    // Lower tail on q = min(p, 1 - p); 1 - p is exact for p >= 1/2 (Sterbenz).
    let q = if dq < 0.0 { p } else { 1.0 - p };
    let r = (-q.ln()).sqrt();
    let mut x = if r <= 5.0 {
        -horner(&C, r - 1.6) / horner(&D, r - 1.6)
    } else {
        -horner(&E, r - 5.0) / horner(&F, r - 5.0)
    };
    // Newton on log Phi(x) = log q: d/dx log Phi = phi / Phi = inverse_mills(x).
    x -= (log_ndtr(x) - q.ln()) / inverse_mills(x);
    if dq < 0.0 { x } else { -x }
}

/// \\(\frac{x^2}{2} + \log \Phi(x)\\), the log-mass of a half-line Gaussian integral: with
/// precision \\(s\\) and mode \\(m\\),
/// \\(\log \int_0^\infty e^{-s(h - m)^2/2 + s m^2/2} dh = \tfrac12 \log\frac{2\pi}{s} +
/// \texttt{log\_half\_gaussian}(m\sqrt s)\\). Stable for all \\(x\\): for \\(x < 0\\) it is
/// \\(\log\frac12\operatorname{erfcx}(-x/\sqrt2)\\) (no cancellation between the two terms), for
/// \\(x \ge 0\\) \\(\frac{x^2}{2} + \operatorname{log1p}(-\frac12\operatorname{erfc}(x/\sqrt2))\\)
/// (Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*, ReLU row).
pub fn log_half_gaussian(x: f64) -> f64 {
    if x < 0.0 {
        (0.5 * erfcx(-x * FRAC_1_SQRT_2)).ln()
    } else {
        0.5 * x * x + (-0.5 * libm::erfc(x * FRAC_1_SQRT_2)).ln_1p()
    }
}

/// The inverse Mills ratio \\(\lambda(x) = \varphi(x) / \Phi(x) = \sqrt{2/\pi} /
/// \operatorname{erfcx}(-x/\sqrt2)\\), finite for every \\(x\\) (it tends to 0 as
/// \\(x \to \infty\\) and behaves as \\(-x\\) as \\(x \to -\infty\\)). For \\(t \sim N(0, 1)\\),
/// \\(E[t \mid t \ge a] = \lambda(-a)\\).
pub fn inverse_mills(x: f64) -> f64 {
    (2.0 / PI).sqrt() / erfcx(-x * FRAC_1_SQRT_2)
}

/// Below this truncation point the moments of \\(t \mid t \ge a\\) come from [`inverse_mills`]
/// directly (cancellation costs at most a factor \\(\approx a^2 \le 4\\)); above, from the
/// Laplace continued fraction.
const CF_FROM: f64 = 2.0;

/// For \\(a \ge\\) [`CF_FROM`]: \\((\delta, T_2)\\) from the Laplace continued fraction of the
/// Mills ratio \\(Q(a)/\varphi(a) = 1/(a + T_1)\\), \\(T_k = k/(a + T_{k+1})\\), evaluated
/// backwards from a depth at which it has converged to below one ulp (checked in the tests
/// against 50-digit values); \\(\delta = T_1 = E[t - a \mid t \ge a]\\).
fn mills_continued_fraction(a: f64) -> (f64, f64) {
    let depth = if a < 3.0 {
        170
    } else if a < 6.0 {
        80
    } else if a < 12.0 {
        40
    } else {
        20
    };
    let mut t = 0.0;
    for k in (2..=depth).rev() {
        t = k as f64 / (a + t);
    }
    (1.0 / (a + t), t)
}

/// \\(E[t - a \mid t \ge a]\\) for \\(t \sim N(0, 1)\\): \\(\lambda(-a) - a\\) for \\(a < 2\\),
/// and the Laplace continued fraction \\(1/(a + 2/(a + 3/(a + \dots)))\\) above, so that there
/// is no cancellation when \\(a \gg 1\\) (where it behaves as \\(1/a\\)). Relative error
/// \\(\lesssim 10^{-15}\\). For \\(a \to -\infty\\) it tends to \\(-a\\).
pub fn truncated_normal_mean_excess(a: f64) -> f64 {
    if a < CF_FROM {
        inverse_mills(-a) - a
    } else {
        mills_continued_fraction(a).0
    }
}

/// \\(\operatorname{Var}[t \mid t \ge a]\\) for \\(t \sim N(0, 1)\\): \\(1 - \lambda\delta\\) with
/// \\(\lambda = \varphi(a)/Q(a)\\), \\(\delta = \lambda - a\\) for \\(a < 2\\); above, where that
/// formula cancels (it tends to \\(1/a^2\\)), the exact rewriting \\(\delta(T_2 - \delta)\\) in
/// terms of the Laplace continued fraction (\\(\delta = 1/(a + T_2)\\),
/// \\(T_2 = 2/(a + 3/(a + \dots))\\)), whose difference loses at most one bit. Relative error
/// \\(\lesssim 10^{-14}\\) everywhere (the AGS paper asks for exactly this stabilisation).
pub fn truncated_normal_variance(a: f64) -> f64 {
    if a < CF_FROM {
        let l = inverse_mills(-a);
        1.0 - l * (l - a)
    } else {
        let (d, t2) = mills_continued_fraction(a);
        d * (t2 - d)
    }
}

/// Draws \\(t - a\\) for \\(t \sim N(0, 1)\\) conditioned on \\(t \ge a\\): the excess over the
/// truncation point, returned directly so that no cancellation occurs when \\(a \gg 1\\)
/// (where the excess is \\(O(1/a)\\)). Always \\(\ge 0\\) and finite, for any finite \\(a\\).
///
/// - \\(a < 1\\): inverse distribution function with one uniform \\(u \in (0, 1]\\): the tail
///   mass above \\(t\\) is \\(uQ(a)\\), \\(Q = 1 - \Phi\\); \\(t = -\Phi^{-1}(uQ(a))\\) when
///   \\(uQ(a) < \frac12\\), else \\(t = \Phi^{-1}(\Phi(a) + (1 - u)Q(a))\\) (both sums of
///   positive terms: no complement is formed by subtraction).
/// - \\(a \ge 1\\): Robert (1995): propose \\(t = a + E/\lambda^*\\), \\(E \sim \mathrm{Exp}(1)\\),
///   \\(\lambda^* = (a + \sqrt{a^2 + 4})/2\\), accept with probability
///   \\(e^{-(t - \lambda^*)^2/2}\\) (acceptance \\(\ge 0.87\\), tending to 1 as
///   \\(a \to \infty\\)); \\(t - \lambda^* = E/\lambda^* - 2/(a + \sqrt{a^2+4})\\) is formed
///   without cancellation.
pub fn sample_truncated_normal_excess<R: Rng + ?Sized>(a: f64, rng: &mut R) -> f64 {
    if a < 1.0 {
        (inverse_cdf_above(a, rng) - a).max(0.0)
    } else {
        robert_excess(a, rng)
    }
}

/// Draws \\(t \sim N(0, 1)\\) conditioned on \\(t \ge a\\), exactly, for any finite \\(a\\) (the
/// two methods of [`sample_truncated_normal_excess`]). Far in the tail (\\(a \gg 1\\)) prefer
/// the excess form, which keeps full relative precision of \\(t - a\\).
pub fn sample_truncated_normal_above<R: Rng + ?Sized>(a: f64, rng: &mut R) -> f64 {
    if a < 1.0 {
        inverse_cdf_above(a, rng).max(a)
    } else {
        a + robert_excess(a, rng)
    }
}

/// Inverse-CDF draw of \\(t \mid t \ge a\\) (for \\(a < 1\\), where \\(Q(a) > 0.15\\)).
#[inline]
fn inverse_cdf_above<R: Rng + ?Sized>(a: f64, rng: &mut R) -> f64 {
    // u in (0, 1]: u = 1 maps to t = a, u -> 0 to t -> inf.
    let u = 1.0 - f64::uniform(rng);
    let upper = 0.5 * libm::erfc(a * FRAC_1_SQRT_2); // Q(a)
    let tail = u * upper; // P(T > t)
    if tail < 0.5 {
        -ndtri(tail)
    } else {
        let lower = 0.5 * libm::erfc(-a * FRAC_1_SQRT_2); // Phi(a)
        ndtri(lower + (1.0 - u) * upper)
    }
}

/// Robert's exponential rejection sampler, returning the excess \\(t - a\\) (\\(a \ge 1\\)).
#[inline]
fn robert_excess<R: Rng + ?Sized>(a: f64, rng: &mut R) -> f64 {
    let root = a.hypot(2.0); // sqrt(a^2 + 4) without overflow for huge a
    let lambda = 0.5 * (a + root);
    let lambda_minus_a = 2.0 / (a + root);
    loop {
        let e: f64 = Exp1.sample(rng);
        let d = e / lambda;
        let off = d - lambda_minus_a; // t - lambda*
        if f64::uniform(rng) < (-0.5 * off * off).exp() {
            return d;
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
        if a == b { 0.0 } else { ((a - b) / b).abs() }
    }

    #[test]
    fn erfc_and_erfcx_match_high_precision_values() {
        // References computed with 60-digit arithmetic (mpmath).
        assert!(rel(erfc(1.0), 0.157_299_207_050_285_130_658_779_364_917) < 1e-15);
        let mut worst = 0.0f64;
        for (x, v) in [
            (-26.0, 7.657_724_931_490_568_351_5e293),
            (-10.0, 5.376_234_283_632_270_896_8e43),
            (-3.0, 1.620_598_885_399_958_662_5e4),
            (-1.0, 5.008_980_080_762_283_466_3),
            (-0.3, 1.453_749_232_842_765_573_5),
            (0.3, 0.734_599_334_567_655_142_29),
            (0.5, 0.615_690_344_192_925_874_87),
            (2.0, 0.255_395_676_310_505_743_87),
            (5.0, 0.110_704_637_733_068_626_37),
            (10.0, 5.614_099_274_382_258_585_8e-2),
            (26.0, 2.168_358_485_056_290_661_6e-2),
            (27.0, 2.088_160_799_042_094_067_4e-2),
            (40.0, 1.410_033_598_337_781_362_5e-2),
            (1e3, 5.641_893_014_533_876_542e-4),
            (1e6, 5.641_895_835_474_741_921_6e-7),
        ] {
            let e = rel(erfcx(x), v);
            assert!(e < 2e-15, "erfcx({x}) = {} vs {v}: {e:e}", erfcx(x));
            worst = worst.max(e);
        }
        eprintln!("erfcx: worst relative error {worst:e}");
        // Continuity across the branch points, finiteness, and the asymptote x sqrt(pi) erfcx -> 1.
        for x in [-0.5, 0.5, 26.0] {
            let (below, above) = (erfcx(x - 1e-12), erfcx(x));
            assert!(rel(below, above) < 1e-11, "jump at {x}: {below} vs {above}");
        }
        assert!(rel(erfcx(1e8) * 1e8 * PI.sqrt(), 1.0) < 1e-15);
        assert!(erfcx(1e300) > 0.0 && erfcx(1e300).is_finite());
        assert_eq!(erfcx(-27.0), f64::INFINITY);
        assert!(erfcx(f64::NAN).is_nan());
        // Reflection identity erfcx(-x) = 2 exp(x^2) - erfcx(x).
        assert!(rel(erfcx(-2.0), 2.0 * 4f64.exp() - erfcx(2.0)) < 1e-15);
    }

    #[test]
    fn log_ndtr_is_accurate_in_both_tails() {
        let mut worst = 0.0f64;
        for (x, v) in [
            (-1e4, -5.000_001_012_927_891_518_1e7),
            (-300.0, -4.500_662_273_211_866_336e4),
            (-37.0, -6.890_305_855_768_905_936e2),
            (-10.0, -53.231_285_150_512_470_578),
            (-3.0, -6.607_726_221_510_349_543_3),
            (0.5, -0.368_946_415_288_656_393_07),
            (3.0, -1.350_809_964_748_193_798_8e-3),
            (10.0, -7.619_853_024_160_526_066e-24),
        ] {
            let e = rel(log_ndtr(x), v);
            assert!(e < 1e-14, "log_ndtr({x}) = {} vs {v}: {e:e}", log_ndtr(x));
            worst = worst.max(e);
        }
        eprintln!("log_ndtr: worst relative error {worst:e}");
        assert_eq!(log_ndtr(0.0), 0.5f64.ln());
        assert_eq!(log_ndtr(40.0), 0.0);
        // Phi(-10) = 7.619853024160526e-24.
        assert!(rel(ndtr(-10.0), 7.619_853_024_160_526_066e-24) < 1e-14);
    }

    #[test]
    fn ndtri_is_accurate_in_both_tails_and_inverts_ndtr() {
        let mut worst = 0.0f64;
        for (p, v) in [
            (4.940_656_458_412_465_4e-324, -38.467_405_617_144_346_251),
            (2.225_073_858_507_201_4e-308, -37.519_379_347_144_499_82),
            (1e-300, -37.047_096_299_361_199_237),
            (1e-100, -21.273_453_560_965_324_294),
            (1e-50, -14.933_337_534_788_488_981),
            (1e-20, -9.262_340_089_798_407_579_6),
            (1e-10, -6.361_340_902_404_056_199_1),
            (1e-5, -4.264_890_793_922_824_610_2),
            (0.02, -2.053_748_910_631_823_044_3),
            (0.3, -0.524_400_512_708_040_815_97),
            (0.7, 0.524_400_512_708_040_656_31),
            (0.975, 1.959_963_984_540_053_855_6),
            (0.999_999, 4.753_424_308_817_087_765_7),
        ] {
            let e = rel(ndtri(p), v);
            assert!(e < 2e-15, "ndtri({p:e}) = {} vs {v}: {e:e}", ndtri(p));
            worst = worst.max(e);
        }
        eprintln!("ndtri: worst relative error {worst:e}");
        assert_eq!(ndtri(0.5), 0.0);
        assert_eq!(ndtri(0.0), f64::NEG_INFINITY);
        assert_eq!(ndtri(1.0), f64::INFINITY);
        assert!(ndtri(-0.1).is_nan() && ndtri(1.5).is_nan() && ndtri(f64::NAN).is_nan());
        // Round trips: Phi(Phi^{-1}(p)) = p (relative, lower half) over 600 decades.
        for k in 0..=600 {
            let p = 0.5 * 10f64.powf(-(k as f64) / 2.0);
            let e = rel(ndtr(ndtri(p)), p);
            // Phi's own conditioning: d log Phi / dx * |x| * eps ~ x^2 eps.
            let x = ndtri(p);
            assert!(e < 4e-15 * (1.0 + x * x), "p = {p:e}: {e:e}");
        }
        // x -> Phi(x) -> x on the lower half, down to where Phi(x) becomes subnormal (the upper
        // half follows by symmetry; forming Phi(x) near 1 would lose the information).
        for k in 0..=370 {
            let x = -(k as f64) * 0.1;
            let y = ndtri(ndtr(x));
            assert!((y - x).abs() < 1e-14 * (1.0 + x.abs()), "{x} -> {y}");
        }
    }

    #[test]
    fn truncated_normal_moments_match_high_precision_values() {
        let mut worst = (0.0f64, 0.0f64);
        for (a, d, v) in [
            (
                -5.0,
                5.000_001_486_719_940_904_9,
                0.999_992_566_398_085_139_29,
            ),
            (
                -1.0,
                1.287_599_970_939_178_361_2,
                0.629_686_285_776_600_540_86,
            ),
            (
                0.0,
                0.797_884_560_802_865_355_88,
                0.363_380_227_632_418_656_92,
            ),
            (
                0.5,
                0.641_077_770_368_064_480_88,
                0.268_480_407_155_878_946_18,
            ),
            (
                1.0,
                0.525_135_276_160_981_209_09,
                0.199_097_665_570_348_791_55,
            ),
            (
                1.9,
                0.384_946_915_476_739_281_32,
                0.120_416_732_859_139_509_04,
            ),
            (
                2.0,
                0.373_215_532_822_840_867_3,
                0.114_279_100_414_081_256_64,
            ),
            (
                2.5,
                0.322_744_797_663_907_250_47,
                8.897_380_142_111_544_281_1e-2,
            ),
            (
                3.0,
                0.283_098_654_930_436_506_93,
                7.055_918_678_526_811_686_2e-2,
            ),
            (
                5.0,
                0.186_503_967_125_842_115_62,
                3.269_643_461_711_222_534_5e-2,
            ),
            (
                8.0,
                0.121_368_112_236_112_680_65,
                1.432_488_344_334_091_017_6e-2,
            ),
            (
                10.0,
                9.809_323_396_251_196_284_4e-2,
                9.445_377_825_656_261_164_1e-3,
            ),
            (
                30.0,
                3.325_966_743_367_703_707_1e-2,
                1.103_771_511_890_091_001_1e-3,
            ),
            (
                49.0,
                2.039_119_883_845_607_131_8e-2,
                4.154_559_255_830_531_773_5e-4,
            ),
            (
                50.0,
                1.998_403_190_563_980_941_2e-2,
                3.990_431_868_038_995_479_1e-4,
            ),
            (
                1e3,
                9.999_980_000_099_999_26e-4,
                9.999_940_000_499_994_820_1e-7,
            ),
            (1e6, 9.999_999_999_98e-7, 9.999_999_999_94e-13),
        ] {
            let (ed, ev) = (
                rel(truncated_normal_mean_excess(a), d),
                rel(truncated_normal_variance(a), v),
            );
            assert!(ed < 2e-15, "a = {a}: excess mean {ed:e}");
            assert!(ev < 1e-14, "a = {a}: variance {ev:e}");
            worst = (worst.0.max(ed), worst.1.max(ev));
        }
        eprintln!(
            "truncated normal: worst relative errors mean {:e}, variance {:e}",
            worst.0, worst.1
        );
        // Limits: a -> -inf is the full normal; a -> +inf gives 1/a and 1/a^2.
        assert_eq!(truncated_normal_variance(-40.0), 1.0);
        assert_eq!(truncated_normal_mean_excess(-1e3), 1e3);
        assert!(rel(truncated_normal_mean_excess(1e150), 1e-150) < 1e-15);
        // Continuity at the switch to the continued fraction.
        let (b, c) = (
            truncated_normal_variance(CF_FROM - 1e-12),
            truncated_normal_variance(CF_FROM),
        );
        assert!(rel(b, c) < 1e-11);
    }

    #[test]
    fn truncated_normal_samples_have_the_exact_moments_even_far_in_the_tail() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let n = 100_000;
        for &a in &[-1e3, -3.0, -0.5, 0.0, 0.7, 0.999, 1.0, 4.0, 30.0, 1e3] {
            let (mut s1, mut s2) = (0.0, 0.0);
            for _ in 0..n {
                let d = sample_truncated_normal_excess(a, &mut rng);
                assert!(d >= 0.0 && d.is_finite());
                s1 += d;
                s2 += d * d;
            }
            let mean = truncated_normal_mean_excess(a);
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
        // a = 1e200: the excess is Exp(a) to first order (variance 1e-400 underflows).
        let m = (0..n)
            .map(|_| 1e200 * sample_truncated_normal_excess(1e200, &mut rng))
            .sum::<f64>()
            / n as f64;
        assert!(
            (m - 1.0).abs() < 5.0 / (n as f64).sqrt(),
            "a = 1e200: a * mean {m}"
        );
        for &a in &[-2.0, 0.3, 5.0] {
            for _ in 0..1000 {
                assert!(sample_truncated_normal_above(a, &mut rng) >= a);
            }
        }
    }
}

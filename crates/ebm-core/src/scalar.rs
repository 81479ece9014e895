use crate::ChainRng;
use num_traits::Float;
use rand::Rng;
use std::fmt::{Debug, Display};

/// The floating-point type of parameters and chain batches: `f32` (speed) or `f64` (exact tests,
/// estimators).
///
/// The trait is sealed: the matrix-product kernel is specialised for these two types only.
/// Energies, free energies and estimators are always returned in `f64`, whatever the scalar.
pub trait Scalar:
    Float
    + nalgebra::Scalar
    + Default
    + Debug
    + Display
    + Send
    + Sync
    + serde::Serialize
    + serde::de::DeserializeOwned
    + sealed::Sealed
    + 'static
{
    /// Name of the type as it appears in file metadata (`"f32"` or `"f64"`).
    const NAME: &'static str;
    /// Lossy conversion from `f64` (rounds to nearest for `f32`).
    fn from_f64(x: f64) -> Self;
    /// Exact widening conversion to `f64`.
    fn as_f64(self) -> f64;
    /// A uniform draw in \\([0, 1)\\) using the top mantissa-width bits of one RNG output, so
    /// that `u < p` holds with probability exactly `p` for every multiple `p` of the grid
    /// spacing (\\(2^{-24}\\) for `f32`, \\(2^{-53}\\) for `f64`).
    fn uniform<R: Rng + ?Sized>(rng: &mut R) -> Self;

    /// Two independent uniform draws in \\([0, 1)\\) on the same grid as
    /// [`Scalar::uniform`]: for `f32` both come from one 64-bit output (its two halves), for
    /// `f64` from two outputs.
    fn uniform_pair<R: Rng + ?Sized>(rng: &mut R) -> (Self, Self);

    /// Replaces every `x` by the logistic function \\(\sigma(x) = 1/(1 + e^{-x})\\), in a
    /// loop the compiler vectorises. For `f32` the exponential is a branch-free Cephes-style
    /// polynomial (relative error of \\(\sigma\\) below \\(4 \cdot 10^{-7}\\), i.e. a few ulps,
    /// tested against `f64`); for `f64` it is the Cephes rational approximation (relative
    /// error below \\(10^{-15}\\), tested against the standard library). Saturates to
    /// exactly 1 for large positive `x` and to a tiny positive value (below
    /// \\(2 \cdot 10^{-38}\\), within \\(10^{-38}\\) of the exact value) for large negative `x`;
    /// NaN stays NaN.
    fn sigmoid_in_place(xs: &mut [Self]);

    /// Replaces every `x` by a draw of a two-state unit: `1` with probability
    /// \\(\sigma(x) = 1/(1 + e^{-x})\\), `lo` otherwise, one uniform per unit from `rng`.
    ///
    /// Uniforms are consumed exactly as by [`Scalar::uniform_pair`] over consecutive pairs of
    /// units (and [`Scalar::uniform`] for an odd last unit), and the comparison
    /// \\(u < \sigma(x)\\) is evaluated as \\(u\,(1 + e^{-x}) < 1\\), the same event in
    /// exact arithmetic, with the exponential of [`Scalar::sigmoid_in_place`] and no division.
    /// The exponential and the comparison run in loops the compiler vectorises (wider still
    /// inside [`crate::simd::dispatch`]); only the random numbers are drawn one by one.
    /// NaN inputs give `lo`.
    fn sample_logistic_in_place<R: Rng + ?Sized>(xs: &mut [Self], lo: Self, rng: &mut R);

    /// The logistic draws of a batch of chains, each with its own stream: for each chain `c`
    /// (column `c` of `xs`, `fields.len()` values), every `x` is replaced by the tempered field
    /// \\(z = \text{scale}\,(t + x)\\) (`t` the unit's entry of `fields`) and then by a draw of
    /// `1` with probability \\(\sigma(z)\\), `lo` otherwise, as
    /// [`Scalar::sample_logistic_in_place`] with `rngs[c]`: **bit for bit** the same draws and
    /// the same stream positions afterwards (tested).
    ///
    /// On a processor with AVX2, groups of four chains draw their uniforms from one
    /// generator whose four 64-bit lanes hold the four chains' Xoshiro256++ states, each
    /// advanced exactly as [`ChainRng`] advances it, four outputs per instruction instead of
    /// one; the remaining chains (and every chain without AVX2) use the scalar pass.
    ///
    /// # Panics
    /// If `xs.len() != fields.len() * rngs.len()`.
    #[inline(always)]
    fn sample_logistic_columns(
        xs: &mut [Self],
        fields: &[Self],
        scale: Self,
        lo: Self,
        rngs: &mut [ChainRng],
    ) {
        crate::lanes::sample_logistic_columns(xs, fields, scale, lo, rngs);
    }

    /// Replaces every `x` by \\(e^x\\), in a loop the compiler vectorises (wider still inside
    /// [`crate::simd::dispatch`]), with the exponential of [`Scalar::sigmoid_in_place`]:
    /// relative error of a few ulps against the standard library (tested). Arguments below
    /// the smallest normal result (\\(-87.3\\) for `f32`, \\(-708\\) for `f64`), including
    /// \\(-\infty\\), give exactly 0; arguments above the largest finite result saturate.
    fn exp_in_place(xs: &mut [Self]);
}

/// Units per block of [`Scalar::sample_logistic_in_place`]: the block's uniforms and
/// exponentials live on the stack, in L1.
const LOGISTIC_BLOCK: usize = 64;

/// `exp(x)` for `f32` without branches: \\(x = n \ln 2 + r\\), \\(|r| \le \ln 2 / 2\\),
/// \\(e^r\\) by the degree-5 Cephes minimax polynomial, \\(2^n\\) by exponent bits. Arguments are
/// clamped to \\([-87.3, 88.7]\\), so the result is always finite and positive.
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5 * 2^23 rounds to the nearest integer in the low mantissa bits (SSE2-friendly).
    const SHIFT: f32 = 12_582_912.0;
    let x = x.clamp(-87.3, 88.7);
    let t = x * LOG2E + SHIFT;
    let n = t - SHIFT;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    let bits = (t.to_bits() as i32 - 0x4B40_0000 + 127) << 23;
    e * f32::from_bits(bits as u32)
}

mod sealed {
    /// What the two scalars provide to this crate's passes only.
    pub trait Sealed: Sized {
        /// The comparison pass of the logistic draws: every `x` becomes `1` where
        /// \\(u\,(1 + e^{-x}) < 1\\) for its uniform `u` (same index in `u`), `lo` otherwise.
        fn logistic_draws(xs: &mut [Self], lo: Self, u: &[Self]);

        /// The uniforms of the next `units` units of four chains from their lanes, as
        /// [`crate::Scalar::sample_logistic_in_place`] draws them.
        ///
        /// # Safety
        /// The processor must support AVX2.
        #[cfg(target_arch = "x86_64")]
        unsafe fn lane_uniforms(
            lanes: &mut crate::lanes::avx2::Lanes,
            units: usize,
            out: &mut crate::lanes::LaneUniforms<Self>,
        );
    }
}

/// The [`sealed::Sealed`] passes of a scalar type `$t` with exponential `$exp` and lane
/// uniforms `$uniforms`.
macro_rules! sealed_passes {
    ($t:ty, $exp:ident, $uniforms:ident) => {
        impl sealed::Sealed for $t {
            #[inline(always)]
            fn logistic_draws(xs: &mut [Self], lo: Self, u: &[Self]) {
                for (x, &u) in xs.iter_mut().zip(u) {
                    *x = if u * (1.0 + $exp(-*x)) < 1.0 { 1.0 } else { lo };
                }
            }

            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn lane_uniforms(
                lanes: &mut crate::lanes::avx2::Lanes,
                units: usize,
                out: &mut crate::lanes::LaneUniforms<Self>,
            ) {
                // SAFETY: the caller guarantees AVX2.
                unsafe { lanes.$uniforms(units, out) }
            }
        }
    };
}

sealed_passes!(f32, exp_f32, uniforms_f32);
sealed_passes!(f64, exp_f64, uniforms_f64);

impl Scalar for f32 {
    const NAME: &'static str = "f32";
    #[inline]
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    #[inline]
    fn as_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn uniform<R: Rng + ?Sized>(rng: &mut R) -> Self {
        (rng.next_u32() >> 8) as f32 * (1.0 / (1u32 << 24) as f32)
    }
    #[inline]
    fn uniform_pair<R: Rng + ?Sized>(rng: &mut R) -> (Self, Self) {
        let bits = rng.next_u64();
        let scale = 1.0 / (1u32 << 24) as f32;
        (
            ((bits >> 40) as u32) as f32 * scale,
            (((bits >> 8) as u32) & 0x00FF_FFFF) as f32 * scale,
        )
    }
    #[inline(always)]
    fn sigmoid_in_place(xs: &mut [Self]) {
        for x in xs.iter_mut() {
            *x = 1.0 / (1.0 + exp_f32(-*x));
        }
    }
    #[inline(always)]
    fn exp_in_place(xs: &mut [Self]) {
        for x in xs.iter_mut() {
            *x = if *x < -87.3 { 0.0 } else { exp_f32(*x) };
        }
    }
    #[inline(always)]
    fn sample_logistic_in_place<R: Rng + ?Sized>(xs: &mut [Self], lo: Self, rng: &mut R) {
        const SCALE: f32 = 1.0 / (1u32 << 24) as f32;
        // The uniforms from 24-bit integers: the two halves of one 64-bit output per pair
        // (as `uniform_pair`), the top half alone for an odd last unit (as `uniform`).
        let mut u = [0.0f32; LOGISTIC_BLOCK];
        for block in xs.chunks_mut(LOGISTIC_BLOCK) {
            let u = &mut u[..block.len()];
            let mut pairs = u.chunks_exact_mut(2);
            for pair in &mut pairs {
                let r = rng.next_u64();
                pair[0] = (r >> 40) as i32 as f32 * SCALE;
                pair[1] = ((r >> 8) & 0x00FF_FFFF) as i32 as f32 * SCALE;
            }
            if let [last] = pairs.into_remainder() {
                *last = (rng.next_u32() >> 8) as i32 as f32 * SCALE;
            }
            <Self as sealed::Sealed>::logistic_draws(block, lo, u);
        }
    }
}

impl Scalar for f64 {
    const NAME: &'static str = "f64";
    #[inline]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline]
    fn as_f64(self) -> f64 {
        self
    }
    #[inline]
    fn uniform<R: Rng + ?Sized>(rng: &mut R) -> Self {
        (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    #[inline]
    fn uniform_pair<R: Rng + ?Sized>(rng: &mut R) -> (Self, Self) {
        (Self::uniform(rng), Self::uniform(rng))
    }
    #[inline(always)]
    fn sigmoid_in_place(xs: &mut [Self]) {
        for x in xs.iter_mut() {
            *x = 1.0 / (1.0 + exp_f64(-*x));
        }
    }
    #[inline(always)]
    fn exp_in_place(xs: &mut [Self]) {
        for x in xs.iter_mut() {
            *x = if *x < -708.0 { 0.0 } else { exp_f64(*x) };
        }
    }
    #[inline(always)]
    fn sample_logistic_in_place<R: Rng + ?Sized>(xs: &mut [Self], lo: Self, rng: &mut R) {
        let mut u = [0.0f64; LOGISTIC_BLOCK];
        for block in xs.chunks_mut(LOGISTIC_BLOCK) {
            let u = &mut u[..block.len()];
            for uk in u.iter_mut() {
                *uk = Self::uniform(rng);
            }
            <Self as sealed::Sealed>::logistic_draws(block, lo, u);
        }
    }
}

/// `exp(x)` for `f64` without branches: \\(x = n \ln 2 + r\\), \\(e^r\\) by the Cephes
/// rational (Padé) approximation, \\(2^n\\) by exponent bits. Arguments are clamped to
/// \\([-708, 709]\\), so the result is always finite and positive.
#[inline(always)]
pub(crate) fn exp_f64(x: f64) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    const C1: f64 = 6.931_457_519_531_25e-1;
    const C2: f64 = 1.428_606_820_309_417_3e-6;
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    let x = x.clamp(-708.0, 709.0);
    let t = x * LOG2E + SHIFT;
    let n = t - SHIFT;
    let r = x - n * C1 - n * C2;
    let rr = r * r;
    let p = ((1.261_771_930_748_105_9e-4 * rr + 3.029_944_077_074_419_6e-2) * rr + 1.0) * r;
    let q = ((3.001_985_051_386_644_5e-6 * rr + 2.524_483_403_496_841e-3) * rr
        + 2.272_655_482_081_550_3e-1)
        * rr
        + 2.0;
    let e = 1.0 + 2.0 * p / (q - p);
    let bits = ((t.to_bits() as i64 - 0x4338_0000_0000_0000 + 1023) << 52) as u64;
    e * f64::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// `exp_in_place` against the standard library over the whole range, and exactly 0 below
    /// the normal range (including minus infinity).
    #[test]
    fn vectorised_exponentials_match_the_standard_library() {
        let xs32: Vec<f32> = (0..=20_000).map(|i| -87.0 + i as f32 * 0.0087).collect();
        let mut y32 = xs32.clone();
        f32::exp_in_place(&mut y32);
        for (&x, &y) in xs32.iter().zip(&y32) {
            let e = (x as f64).exp();
            assert!(
                ((y as f64 - e) / e).abs() < 4e-7,
                "f32 exp({x}) = {y}, not {e}"
            );
        }
        let xs64: Vec<f64> = (0..=20_000).map(|i| -707.0 + i as f64 * 0.07).collect();
        let mut y64 = xs64.clone();
        f64::exp_in_place(&mut y64);
        for (&x, &y) in xs64.iter().zip(&y64) {
            assert!(
                ((y - x.exp()) / x.exp()).abs() < 1e-15,
                "f64 exp({x}) = {y}"
            );
        }
        let mut low32 = [-87.4f32, -1e4, f32::NEG_INFINITY];
        f32::exp_in_place(&mut low32);
        assert_eq!(low32, [0.0; 3]);
        let mut low64 = [-708.5, -1e5, f64::NEG_INFINITY];
        f64::exp_in_place(&mut low64);
        assert_eq!(low64, [0.0; 3]);
    }

    #[test]
    fn uniforms_are_in_the_unit_interval_and_centred() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let n = 100_000;
        let (mut s32, mut s64) = (0.0f64, 0.0f64);
        for _ in 0..n {
            let a = f32::uniform(&mut rng);
            let b = f64::uniform(&mut rng);
            assert!((0.0..1.0).contains(&a) && (0.0..1.0).contains(&b));
            s32 += a as f64;
            s64 += b;
        }
        // Standard error of a mean of n uniforms: sqrt(1/12/n) ~ 9.1e-4; allow 5 sigma.
        assert!((s32 / n as f64 - 0.5).abs() < 4.6e-3);
        assert!((s64 / n as f64 - 0.5).abs() < 4.6e-3);
    }

    #[test]
    fn fast_f32_sigmoid_is_accurate_to_a_few_ulps_everywhere() {
        let mut worst = 0.0f64;
        let mut xs: Vec<f32> = (-200_000..=200_000).map(|k| k as f32 * 1e-3).collect();
        xs.extend([
            -1e30f32, -1000.0, -88.0, -87.0, 87.0, 88.0, 89.0, 1000.0, 1e30,
        ]);
        let mut ys = xs.clone();
        f32::sigmoid_in_place(&mut ys);
        for (&x, &y) in xs.iter().zip(&ys) {
            let exact = 1.0 / (1.0 + (-(x as f64)).exp());
            assert!((0.0..=1.0).contains(&y), "sigmoid({x}) = {y}");
            if exact > 1e-37 {
                worst = worst.max(((y as f64) - exact).abs() / exact);
            } else {
                // Near and below the f32 normal range only an absolute bound is meaningful.
                assert!(((y as f64) - exact).abs() <= 1e-38, "sigmoid({x}) = {y}");
            }
        }
        assert!(worst < 4e-7, "worst relative error {worst}");
        let mut big = [100.0f32, 1e30];
        f32::sigmoid_in_place(&mut big);
        assert_eq!(big, [1.0, 1.0]);
        let mut nan = [f32::NAN];
        f32::sigmoid_in_place(&mut nan);
        assert!(nan[0].is_nan());
    }

    #[test]
    fn fast_f64_sigmoid_matches_the_standard_library() {
        let mut xs: Vec<f64> = (-800_000..=800_000).map(|k| k as f64 * 1e-3).collect();
        xs.extend([-1e300, -746.0, 746.0, 1e300]);
        let mut ys = xs.clone();
        f64::sigmoid_in_place(&mut ys);
        let mut worst = 0.0f64;
        for (&x, &y) in xs.iter().zip(&ys) {
            let exact = 1.0 / (1.0 + (-x).exp());
            assert!((0.0..=1.0).contains(&y), "sigmoid({x}) = {y}");
            if exact > 1e-300 {
                worst = worst.max((y - exact).abs() / exact);
            } else {
                assert!((y - exact).abs() <= 1e-300, "sigmoid({x}) = {y}");
            }
        }
        assert!(worst < 1e-15, "worst relative error {worst}");
    }

    #[test]
    fn uniform_pairs_are_uniform_and_independent() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let n = 200_000;
        let (mut s1, mut s2, mut s12) = (0.0f64, 0.0f64, 0.0f64);
        for _ in 0..n {
            let (a, b) = f32::uniform_pair(&mut rng);
            assert!((0.0..1.0).contains(&a) && (0.0..1.0).contains(&b));
            s1 += a as f64;
            s2 += b as f64;
            s12 += (a as f64 - 0.5) * (b as f64 - 0.5);
        }
        let n = n as f64;
        assert!((s1 / n - 0.5).abs() < 5.0 * (1.0 / 12.0 / n).sqrt());
        assert!((s2 / n - 0.5).abs() < 5.0 * (1.0 / 12.0 / n).sqrt());
        // Covariance of independent uniforms is 0 with standard error 1/(12 sqrt(n)).
        assert!((s12 / n).abs() < 5.0 / 12.0 / n.sqrt());
    }

    /// Unit by unit, the draw is the event u < sigma(x) with the uniforms of `uniform_pair`
    /// (and `uniform` for an odd last unit): the same stream, the same decisions, except
    /// where u and sigma(x) are within rounding of each other.
    fn logistic_draws_follow_the_uniform_stream<F: Scalar>(n: usize) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
        let xs: Vec<F> = (0..n)
            .map(|_| F::from_f64(rng.random_range(-12.0..12.0)))
            .collect();
        let lo = F::from_f64(-1.0);
        let mut drawn = xs.clone();
        F::sample_logistic_in_place(&mut drawn, lo, &mut Xoshiro256PlusPlus::seed_from_u64(3));
        let mut stream = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut uniforms = Vec::with_capacity(n);
        // Blocks of 64 units; within a block, pairs, then a single uniform for an odd tail.
        for block in (0..n).collect::<Vec<_>>().chunks(super::LOGISTIC_BLOCK) {
            for _ in 0..block.len() / 2 {
                let (a, b) = F::uniform_pair(&mut stream);
                uniforms.extend([a, b]);
            }
            if block.len() % 2 == 1 {
                uniforms.push(F::uniform(&mut stream));
            }
        }
        let mut undecided = 0;
        for ((x, d), u) in xs.iter().zip(&drawn).zip(&uniforms) {
            let p = 1.0 / (1.0 + (-x.as_f64()).exp());
            let u = u.as_f64();
            let expected = if u < p { 1.0 } else { -1.0 };
            if (u - p).abs() < 1e-6 {
                undecided += 1;
            } else {
                assert_eq!(d.as_f64(), expected, "x = {x}, u = {u}, p = {p}");
            }
        }
        assert!(undecided < 5, "{undecided} draws too close to call");
        // The stream was consumed exactly as the reference consumed it.
        let mut rest = xs.clone();
        let mut after = Xoshiro256PlusPlus::seed_from_u64(3);
        F::sample_logistic_in_place(&mut rest, lo, &mut after);
        assert_eq!(after.next_u64(), stream.next_u64());
    }

    #[test]
    fn logistic_draws_match_uniform_comparisons() {
        for n in [1, 2, 63, 64, 65, 200, 784, 1001] {
            logistic_draws_follow_the_uniform_stream::<f32>(n);
            logistic_draws_follow_the_uniform_stream::<f64>(n);
        }
    }

    #[test]
    fn logistic_draws_have_the_logistic_frequencies() {
        // 200 000 draws at each of a few inputs: frequency of state 1 within 5 standard
        // errors of sigma(x); saturation gives exactly 0 or 1 draws of the unlikely state.
        let n = 200_000;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(23);
        for x in [-4.0, -1.0, 0.0, 0.3, 2.5] {
            let p = 1.0 / (1.0 + f64::exp(-x));
            let mut a = vec![x as f32; n];
            f32::sample_logistic_in_place(&mut a, 0.0, &mut rng);
            let mut b = vec![x; n];
            f64::sample_logistic_in_place(&mut b, 0.0, &mut rng);
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            let fa = a.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
            let fb = b.iter().sum::<f64>() / n as f64;
            assert!((fa - p).abs() < 5.0 * sd, "f32: x = {x}: {fa} vs {p}");
            assert!((fb - p).abs() < 5.0 * sd, "f64: x = {x}: {fb} vs {p}");
            assert!(a.iter().all(|&v| v == 0.0 || v == 1.0));
            assert!(b.iter().all(|&v| v == 0.0 || v == 1.0));
        }
        let mut sure = vec![100.0f32, 1e30, -1e30, f32::NAN];
        f32::sample_logistic_in_place(&mut sure, -1.0, &mut rng);
        assert_eq!(sure[..2], [1.0, 1.0]);
        assert_eq!(sure[3], -1.0);
    }

    #[test]
    fn conversions_round_trip() {
        assert_eq!(f64::from_f64(0.1).as_f64(), 0.1);
        assert_eq!(f32::from_f64(0.5).as_f64(), 0.5);
        assert_eq!(<f32 as Scalar>::NAME, "f32");
    }
}

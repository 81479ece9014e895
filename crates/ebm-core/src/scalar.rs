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
    /// that `u < p` holds with probability exactly `p` for every representable `p`.
    fn uniform<R: Rng + ?Sized>(rng: &mut R) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

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
    fn conversions_round_trip() {
        assert_eq!(f64::from_f64(0.1).as_f64(), 0.1);
        assert_eq!(f32::from_f64(0.5).as_f64(), 0.5);
        assert_eq!(<f32 as Scalar>::NAME, "f32");
    }
}

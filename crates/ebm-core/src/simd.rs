//! Wider vector instructions for the elementwise passes, chosen at run time.
//!
//! The workspace is compiled for the baseline of its target (SSE2 on x86-64), so that one binary
//! runs on every machine. The matrix products pick their kernels at run time already (the `gemm`
//! crate); [`dispatch`] does the same for the fused elementwise passes that follow them
//! (exponentials, logistic functions, comparisons with uniforms): on an x86-64 processor with
//! AVX2 it runs its pass in a function compiled for AVX2, so that the loops the compiler
//! vectorises process 8 `f32` (4 `f64`) per instruction instead of 4 (2), and with AVX-512
//! (F, BW, DQ, VL) in one compiled for AVX-512: 16 `f32` (8 `f64`) per instruction
//! (measured in `benches/README.md`, "Alternating Gibbs sampling").
//!
//! Results are **bit-identical** on both paths: only the width of the instructions changes.
//! Fused multiply-add is not enabled (Rust never contracts `a * b + c` on its own, and enabling
//! FMA would only matter for explicit `mul_add` calls), and every IEEE operation rounds the same
//! in SSE and AVX registers. The test `dispatch_is_bit_identical` checks this on the passes
//! that use it.

/// An elementwise pass to run through [`dispatch`]: a value holding its inputs and outputs,
/// whose [`Pass::run`] is marked `#[inline(always)]` so that it is compiled into the
/// wider instances of [`dispatch`] (a closure would not do: the compiler may keep its body out of
/// line, compiled for the baseline).
pub trait Pass {
    /// What the pass returns.
    type Output;
    /// Runs the pass. Implementations should be `#[inline(always)]`, and so should the
    /// functions they call in their hot loops.
    fn run(self) -> Self::Output;
}

/// Runs `pass`, compiled for AVX-512 or AVX2 when the processor has them (x86-64), as is
/// otherwise.
///
/// Everything [`Pass::run`] inlines (the sampling passes of the binary layers,
/// [`crate::Scalar::sample_logistic_in_place`], [`crate::Scalar::sigmoid_in_place`]) is
/// compiled for the wider instructions; calls that are not inlined run their baseline code.
/// The feature test is one cached load after the first call.
#[inline]
pub fn dispatch<P: Pass>(pass: P) -> P::Output {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the processor supports these features (checked just above), the only
            // requirement of calling a function compiled with them.
            return unsafe { with_avx512(pass) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2 (checked just above), the only requirement
            // of calling a function compiled with `target_feature(enable = "avx2")`.
            return unsafe { with_avx2(pass) };
        }
    }
    pass.run()
}

/// Whether the processor has the AVX-512 subsets (F, BW, DQ, VL) that [`dispatch`] compiles
/// its wider instance for, and AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vl")
}

/// `pass.run()` compiled with AVX-512 (F, BW, DQ, VL) and AVX2 enabled.
///
/// # Safety
/// The processor must support these features ([`has_avx512`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn with_avx512<P: Pass>(pass: P) -> P::Output {
    pass.run()
}

/// `pass.run()` compiled with AVX2 enabled (AVX2 implies AVX, SSE4.2 and below).
///
/// # Safety
/// The processor must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn with_avx2<P: Pass>(pass: P) -> P::Output {
    pass.run()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scalar;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn inputs<F: Scalar>() -> Vec<F> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut xs: Vec<F> = (0..10_007)
            .map(|_| F::from_f64(rng.random_range(-30.0..30.0)))
            .collect();
        xs.extend([-1e30, -100.0, -88.5, 0.0, 88.5, 100.0, 1e30].map(F::from_f64));
        xs
    }

    fn bits<F: Scalar>(xs: &[F]) -> Vec<u64> {
        xs.iter().map(|x| x.as_f64().to_bits()).collect()
    }

    /// The two scalar passes, with a seed for the draws.
    struct Both<'a, F>(&'a mut [F], &'a mut [F], u64);

    impl<F: Scalar> Pass for Both<'_, F> {
        type Output = ();
        #[inline(always)]
        fn run(self) {
            F::sigmoid_in_place(self.0);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.2);
            F::sample_logistic_in_place(self.1, F::from_f64(-1.0), &mut rng);
        }
    }

    fn check<F: Scalar>() {
        let xs = inputs::<F>();
        let (mut a, mut b) = (xs.clone(), xs.clone());
        let (mut c, mut d) = (xs.clone(), xs);
        Both(&mut a, &mut b, 5).run();
        dispatch(Both(&mut c, &mut d, 5));
        assert_eq!(bits(&a), bits(&c));
        assert_eq!(bits(&b), bits(&d));
    }

    #[test]
    fn dispatch_is_bit_identical() {
        check::<f32>();
        check::<f64>();
    }

    struct Answer;

    impl Pass for Answer {
        type Output = u32;
        #[inline(always)]
        fn run(self) -> u32 {
            42
        }
    }

    #[test]
    fn dispatch_returns_the_pass_output() {
        assert_eq!(dispatch(Answer), 42);
    }
}

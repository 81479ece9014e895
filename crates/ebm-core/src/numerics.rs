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

/// The cumulant generating function of a binary unit summed by [`binary_cgf_sum`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryCgf {
    /// \\(x \in \{0, 1\}\\): \\(\Gamma(x) = \operatorname{softplus}(x) = \max(x, 0) +
    /// \operatorname{log1p}(e^{-|x|})\\).
    Bernoulli,
    /// \\(x \in \{-1, +1\}\\): \\(\Gamma(x) = \log 2\cosh x = |x| +
    /// \operatorname{log1p}(e^{-2|x|})\\).
    Spin,
}

/// \\(\sum_i \Gamma(\beta(\theta_i + I_i))\\) for binary units with fields `fields` and inputs
/// `inputs`, evaluated in `f64` with the stable forms of [`softplus`] and [`log_2cosh`]: the
/// cumulant generating function of a binary layer, i.e. the costly part of a free energy.
///
/// The exponential and the \\(\operatorname{log1p}\\) are branch-free polynomial evaluations
/// (the exponential of [`crate::Scalar::sigmoid_in_place`]; \\(\operatorname{log1p}(e)\\) for
/// \\(e \in [0, 1]\\) by the series of \\(2\operatorname{artanh}\\) on the reduced argument,
/// with Goldberg's correction \\(\log(1 + e) \cdot e / ((1 + e) - 1)\\) for the rounding of
/// \\(1 + e\\)), so the loop is vectorised, with AVX2 inside [`crate::simd::dispatch`]. The
/// terms are summed in index order, as the scalar sum would be; each agrees with [`softplus`]
/// and [`log_2cosh`] to a few ulps (tested).
///
/// # Panics
/// If `fields` and `inputs` differ in length.
pub fn binary_cgf_sum<F: crate::Scalar>(
    fields: &[F],
    inputs: &[F],
    beta: f64,
    kind: BinaryCgf,
) -> f64 {
    let [sum] = binary_cgf_sums(fields, inputs, [beta], kind);
    sum
}

/// [`binary_cgf_sum`] at `B` inverse temperatures in one pass, bit for bit: each
/// temperature's terms are those of [`binary_cgf_sum`], summed in index order into its own
/// sum, the `B` sums side by side (an exchange of tempering needs every state's free energy at
/// two temperatures).
///
/// # Panics
/// If `fields` and `inputs` differ in length.
pub fn binary_cgf_sums<F: crate::Scalar, const B: usize>(
    fields: &[F],
    inputs: &[F],
    betas: [f64; B],
    kind: BinaryCgf,
) -> [f64; B] {
    assert_eq!(
        fields.len(),
        inputs.len(),
        "binary_cgf_sum: one input per field"
    );
    crate::simd::dispatch(CgfSum {
        fields,
        inputs,
        betas,
        kind,
    })
}

/// The pass of [`binary_cgf_sums`].
struct CgfSum<'a, F, const B: usize> {
    fields: &'a [F],
    inputs: &'a [F],
    betas: [f64; B],
    kind: BinaryCgf,
}

/// Values per block of [`CgfSum`] (the block lives on the stack, in L1).
const CGF_BLOCK: usize = 64;

impl<F: crate::Scalar, const B: usize> crate::simd::Pass for CgfSum<'_, F, B> {
    type Output = [f64; B];
    #[inline(always)]
    fn run(self) -> [f64; B] {
        let spin = self.kind == BinaryCgf::Spin;
        // exp(-|x|) for Bernoulli units, exp(-2|x|) for spins (both scalings are exact).
        let c = if spin { -2.0 } else { -1.0 };
        let mut terms = [[0.0f64; CGF_BLOCK]; B];
        let mut sums = [0.0; B];
        for (t, i) in self
            .fields
            .chunks(CGF_BLOCK)
            .zip(self.inputs.chunks(CGF_BLOCK))
        {
            let len = t.len();
            for (terms, &beta) in terms.iter_mut().zip(&self.betas) {
                for ((out, &t), &i) in terms[..len].iter_mut().zip(t).zip(i) {
                    let x = beta * (t.as_f64() + i.as_f64());
                    let a = x.abs();
                    let linear = if spin { a } else { x.max(0.0) };
                    *out = linear + log1p_unit(crate::scalar::exp_f64(c * a));
                }
            }
            for k in 0..len {
                for (sum, terms) in sums.iter_mut().zip(&terms) {
                    *sum += terms[k];
                }
            }
        }
        sums
    }
}

/// \\(\log(1 + e)\\) for \\(e \in [0, 1]\\) (NaN stays NaN), without branches: \\(z = 1 + e =
/// 2^k m\\) with \\(m \in [1/\sqrt2, \sqrt2]\\), \\(\log m = 2\operatorname{artanh}(s)\\),
/// \\(s = (m - 1)/(m + 1)\\), \\(|s| \le 0.1716\\), by its series to \\(s^{21}\\) (truncation below
/// \\(10^{-18}\\) relative); then Goldberg's correction \\(\log z \cdot e / (z - 1)\\) makes the
/// result accurate for the \\(e\\) that \\(1 + e\\) rounds.
#[inline(always)]
fn log1p_unit(e: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let z = 1.0 + e;
    let big = z > std::f64::consts::SQRT_2;
    let m = if big { 0.5 * z } else { z };
    let k = if big { 1.0 } else { 0.0 };
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    // 1 + s2/3 + s2^2/5 + ... + s2^10/21, by Horner.
    let mut p = 1.0 / 21.0;
    for d in [19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0, 1.0] {
        p = p * s2 + 1.0 / d;
    }
    let log_z = k * LN2_HI + (2.0 * s * p + k * LN2_LO);
    let d = z - 1.0;
    if d == 0.0 { e } else { log_z * (e / d) }
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

/// The normalised law \\(p_i = e^{l_i} / \sum_j e^{l_j}\\) of unnormalised log-probabilities
/// \\(l_i\\) (for a Boltzmann law, \\(l_i = -E_i\\)), computed through [`log_sum_exp`] so that
/// no weight overflows.
pub fn normalised_exp(log_weights: &[f64]) -> Vec<f64> {
    let lz = log_sum_exp(log_weights);
    log_weights.iter().map(|l| (l - lz).exp()).collect()
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
    fn binary_cgf_sum_matches_the_scalar_forms_to_a_few_ulps() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let mut inputs: Vec<f64> = (0..20_000)
            .map(|k| {
                let scale = [1e-12, 1e-6, 0.01, 1.0, 10.0, 40.0, 800.0][k % 7];
                rng.random_range(-1.0..1.0) * scale
            })
            .collect();
        inputs.extend([
            0.0, -0.0, 1e-300, -1e-300, 36.7, -36.7, 709.0, -709.0, 1e30, -1e30,
        ]);
        let fields: Vec<f64> = (0..inputs.len())
            .map(|k| 0.1 * (k % 3) as f64 - 0.1)
            .collect();
        for beta in [1.0, 0.37, 0.0] {
            for (kind, f) in [
                (BinaryCgf::Bernoulli, softplus::<f64> as fn(f64) -> f64),
                (BinaryCgf::Spin, log_2cosh::<f64>),
            ] {
                // Each term alone, relative to the scalar form (or absolute near 0).
                for (&t, &i) in fields.iter().zip(&inputs) {
                    let (got, want) = (binary_cgf_sum(&[t], &[i], beta, kind), f(beta * (t + i)));
                    let err = (got - want).abs() / want.abs().max(1e-300);
                    assert!(
                        err < 1e-15 || (got - want).abs() < 1e-307,
                        "{kind:?} {t} + {i}: {got} vs {want}"
                    );
                }
                let want: f64 = fields
                    .iter()
                    .zip(&inputs)
                    .map(|(t, i)| f(beta * (t + i)))
                    .sum();
                let got = binary_cgf_sum(&fields, &inputs, beta, kind);
                assert!(
                    ((got - want) / want).abs() < 1e-14,
                    "{kind:?}: {got} vs {want}"
                );
                // f32 inputs are widened exactly, as `as_f64` would.
                let (f32s, i32s): (Vec<f32>, Vec<f32>) = fields
                    .iter()
                    .zip(&inputs)
                    .map(|(&t, &i)| (t as f32, i as f32))
                    .unzip();
                let want: f64 = f32s
                    .iter()
                    .zip(&i32s)
                    .map(|(&t, &i)| f(beta * (t as f64 + i as f64)))
                    .sum();
                let got = binary_cgf_sum(&f32s, &i32s, beta, kind);
                assert!(
                    ((got - want) / want).abs() < 1e-14,
                    "{kind:?} f32: {got} vs {want}"
                );
            }
        }
        assert!(binary_cgf_sum(&[0.0], &[f64::NAN], 1.0, BinaryCgf::Bernoulli).is_nan());
    }

    /// The sums at two temperatures in one pass are the sums of one pass per temperature,
    /// bit for bit (f32 and f64 inputs, both kinds, lengths on and off the block); the two
    /// temperatures exchanged (negative control) give other bits.
    #[test]
    fn binary_cgf_sums_at_two_temperatures_are_the_single_sums_bit_for_bit() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(4);
        let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for len in [0, 1, 63, 64, 200, 785] {
            let inputs: Vec<f64> = (0..len).map(|_| rng.random_range(-30.0..30.0)).collect();
            let fields: Vec<f64> = (0..len).map(|_| rng.random_range(-2.0..2.0)).collect();
            let (f32s, i32s): (Vec<f32>, Vec<f32>) = fields
                .iter()
                .zip(&inputs)
                .map(|(&t, &i)| (t as f32, i as f32))
                .unzip();
            for kind in [BinaryCgf::Bernoulli, BinaryCgf::Spin] {
                let betas = [0.37, 0.81];
                let single = |b: f64| {
                    [
                        binary_cgf_sum(&fields, &inputs, b, kind),
                        binary_cgf_sum(&f32s, &i32s, b, kind),
                    ]
                };
                let (a, b) = (single(betas[0]), single(betas[1]));
                let pair = binary_cgf_sums(&fields, &inputs, betas, kind);
                let pair32 = binary_cgf_sums(&f32s, &i32s, betas, kind);
                assert_eq!(bits(&pair), bits(&[a[0], b[0]]), "{kind:?} {len}");
                assert_eq!(bits(&pair32), bits(&[a[1], b[1]]), "{kind:?} f32 {len}");
                if len > 0 {
                    assert_ne!(bits(&pair), bits(&[b[0], a[0]]), "{kind:?} {len}");
                }
            }
        }
    }

    #[test]
    fn binary_cgf_sum_is_bit_identical_with_and_without_avx2() {
        use crate::simd::Pass;
        let inputs: Vec<f32> = (0..1001)
            .map(|k| ((k * 7919) % 2000) as f32 / 37.0 - 27.0)
            .collect();
        let fields = vec![0.25f32; inputs.len()];
        for kind in [BinaryCgf::Bernoulli, BinaryCgf::Spin] {
            let pass = || CgfSum {
                fields: &fields,
                inputs: &inputs,
                betas: [0.9, 0.4],
                kind,
            };
            let bits = |x: [f64; 2]| x.map(f64::to_bits);
            assert_eq!(bits(pass().run()), bits(crate::simd::dispatch(pass())));
        }
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

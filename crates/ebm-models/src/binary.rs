//! Binary unit layers: [`Bernoulli`] (\\(x \in \{0, 1\}\\)) and [`Spin`] (\\(x \in \{-1, +1\}\\)).

use crate::layer::{BinaryLayer, DiscreteLayer, Layer, LinearFields, NamedTensor, TensorLookup};
use ebm_core::numerics::BinaryCgf;
use ebm_core::{Error, Scalar};
use rand::Rng;

fn fields_from_tensors<F: Scalar>(
    kind: &str,
    n_units: usize,
    get: TensorLookup<'_, F>,
) -> ebm_core::Result<Vec<F>> {
    let (shape, values) = get("bias").ok_or_else(|| Error::ShapeMismatch {
        what: format!("{kind} layer"),
        expected: "a tensor named \"bias\"".into(),
        got: "none".into(),
    })?;
    if shape != [n_units] {
        return Err(Error::ShapeMismatch {
            what: format!("{kind} layer bias"),
            expected: format!("[{n_units}]"),
            got: format!("{shape:?}"),
        });
    }
    Error::check_finite(
        &format!("{kind} layer bias"),
        &values.iter().map(|v| v.as_f64()).collect::<Vec<_>>(),
    )?;
    Ok(values)
}

/// Units with values in \\(\{0, 1\}\\) and potential \\(U_i(x) = -\theta_i x\\).
///
/// Conditional law: \\(p_\beta(x_i = 1 \mid I_i) = \sigma(\beta(\theta_i + I_i))\\);
/// cumulant generating function \\(\Gamma^\beta_i(I) = \operatorname{softplus}(\beta(\theta_i + I))\\).
#[derive(Clone, Debug, PartialEq)]
pub struct Bernoulli<F: Scalar = f64> {
    /// Fields (biases) \\(\theta\\), one per unit.
    pub fields: Vec<F>,
}

impl<F: Scalar> Bernoulli<F> {
    /// A layer with the given fields.
    pub fn new(fields: Vec<F>) -> Self {
        Self { fields }
    }

    /// `n` units with zero fields.
    pub fn zeros(n: usize) -> Self {
        Self {
            fields: vec![F::zero(); n],
        }
    }

    /// Independent units with the given means \\(m_i = P(x_i = 1)\\):
    /// \\(\theta_i = \operatorname{logit}(m_i)\\), with \\(m_i\\) clipped to
    /// \\([\epsilon, 1 - \epsilon]\\), \\(\epsilon = 10^{-6}\\), so that constant sites stay finite.
    /// With zero weights this is the independent-site reference fitted to the data (its means
    /// are the data frequencies).
    pub fn from_means(means: &[f64]) -> Self {
        Self::new(
            means
                .iter()
                .map(|&m| {
                    let m = m.clamp(1e-6, 1.0 - 1e-6);
                    F::from_f64((m / (1.0 - m)).ln())
                })
                .collect(),
        )
    }
}

/// Units with values in \\(\{-1, +1\}\\) and potential \\(U_i(x) = -\theta_i x\\).
///
/// Conditional law: \\(p_\beta(x_i = +1 \mid I_i) = \sigma(2\beta(\theta_i + I_i))\\);
/// cumulant generating function \\(\Gamma^\beta_i(I) = \log 2\cosh(\beta(\theta_i + I))\\).
#[derive(Clone, Debug, PartialEq)]
pub struct Spin<F: Scalar = f64> {
    /// Fields \\(\theta\\), one per unit.
    pub fields: Vec<F>,
}

impl<F: Scalar> Spin<F> {
    /// A layer with the given fields.
    pub fn new(fields: Vec<F>) -> Self {
        Self { fields }
    }

    /// `n` units with zero fields.
    pub fn zeros(n: usize) -> Self {
        Self {
            fields: vec![F::zero(); n],
        }
    }

    /// Independent spins with the given magnetisations \\(m_i = \mathbb{E}\,x_i\\):
    /// \\(\theta_i = \operatorname{artanh}(m_i)\\), with \\(m_i\\) clipped to
    /// \\([-1 + \epsilon, 1 - \epsilon]\\), \\(\epsilon = 2 \cdot 10^{-6}\\).
    pub fn from_means(means: &[f64]) -> Self {
        Self::new(
            means
                .iter()
                .map(|&m| F::from_f64(m.clamp(-1.0 + 2e-6, 1.0 - 2e-6).atanh()))
                .collect(),
        )
    }
}

/// Chains whose potentials [`Layer::energies`] of a binary layer sums side by side.
const ENERGY_LANES: usize = 8;

/// Implements the parts of `Layer` shared by both binary layers; `$lo` is the value of state 0,
/// `$cgf` the [`BinaryCgf`] of the tempered local field \\(x = \beta(\theta + I)\\), `$scale`
/// the factor such that \\(p(\text{state } 1) = \sigma(\text{scale} \cdot x)\\) (1 for
/// \\(\{0,1\}\\), 2 for \\(\pm1\\)), `$means` replaces every tempered field \\(x\\) of a
/// slice (of any scalar) by the conditional mean given \\(x\\).
macro_rules! binary_layer {
    ($ty:ident, $kind:literal, $lo:expr, $cgf:expr, $scale:expr, $means:expr) => {
        impl<F: Scalar> Layer for $ty<F> {
            type Scalar = F;
            const KIND: &'static str = $kind;

            fn n_units(&self) -> usize {
                self.fields.len()
            }

            fn unit_statistic_range(&self, i: usize, c: &[f64]) -> Option<(f64, f64)> {
                Some(crate::layer::discrete_statistic_range(self, i, c))
            }

            crate::layer::discrete_layer_hooks!();

            fn fill_default(&self, x: &mut [F]) {
                x.fill(F::from_f64($lo));
            }

            fn energy(&self, x: &[F]) -> f64 {
                debug_assert_eq!(x.len(), self.fields.len());
                -self
                    .fields
                    .iter()
                    .zip(x)
                    .map(|(t, v)| t.as_f64() * v.as_f64())
                    .sum::<f64>()
            }

            /// Eight chains at a time, each chain's products summed in unit order
            /// from \\(-0\\) as the `f64` sum of [`Layer::energy`] does: the same numbers,
            /// with several independent additions in flight instead of one.
            fn energies(&self, xs: &[F], out: &mut [f64]) {
                let w = self.fields.len();
                assert_eq!(xs.len(), out.len() * w, "energies: configurations length");
                let lanes = out.len() / ENERGY_LANES * ENERGY_LANES;
                let (head, tail) = out.split_at_mut(lanes);
                for (o, x) in head
                    .chunks_exact_mut(ENERGY_LANES)
                    .zip(xs.chunks_exact(ENERGY_LANES * w.max(1)))
                {
                    let mut sums = [-0.0f64; ENERGY_LANES];
                    for (i, t) in self.fields.iter().enumerate() {
                        let t = t.as_f64();
                        for (j, s) in sums.iter_mut().enumerate() {
                            *s += t * x[j * w + i].as_f64();
                        }
                    }
                    for (o, s) in o.iter_mut().zip(sums) {
                        *o = -s;
                    }
                }
                for (k, o) in tail.iter_mut().enumerate() {
                    let x = &xs[(lanes + k) * w..(lanes + k + 1) * w];
                    *o = self.energy(x);
                }
            }

            fn unit_energy(&self, i: usize, x_i: &[F]) -> f64 {
                -self.fields[i].as_f64() * x_i[0].as_f64()
            }

            /// One vectorised pass ([`ebm_core::numerics::binary_cgf_sum`]).
            fn cgf(&self, inputs: &[F], beta: f64) -> f64 {
                ebm_core::numerics::binary_cgf_sum(&self.fields, inputs, beta, $cgf)
            }

            /// Two temperatures in one pass ([`ebm_core::numerics::binary_cgf_sums`]);
            /// others one pass each.
            fn cgf_at(&self, inputs: &[F], betas: &[f64], out: &mut [f64]) {
                assert_eq!(out.len(), betas.len(), "cgf_at: one output per temperature");
                if let ([a, b], [oa, ob]) = (betas, &mut *out) {
                    let sums =
                        ebm_core::numerics::binary_cgf_sums(&self.fields, inputs, [*a, *b], $cgf);
                    (*oa, *ob) = (sums[0], sums[1]);
                } else {
                    for (o, &beta) in out.iter_mut().zip(betas) {
                        *o = self.cgf(inputs, beta);
                    }
                }
            }

            // Always inlined, so that it is compiled for the wider instructions inside
            // `ebm_core::simd::dispatch`.
            #[inline(always)]
            fn sample_in_place<R: Rng + ?Sized>(&self, inputs: &mut [F], beta: f64, rng: &mut R) {
                debug_assert_eq!(inputs.len(), self.fields.len());
                // Two vectorised passes over the column: the scaled local field, then the
                // fused exponential / uniform comparison of `sample_logistic_in_place`.
                let scale = F::from_f64($scale * beta);
                for (x, &t) in inputs.iter_mut().zip(&self.fields) {
                    *x = scale * (t + *x);
                }
                F::sample_logistic_in_place(inputs, F::from_f64($lo), rng);
            }

            /// With the chains' own streams ([`ebm_core::ChainRng`]), the fused pass of
            /// [`Scalar::sample_logistic_columns`], which advances four chains' streams
            /// together: the same draws as [`Layer::sample_in_place`] chain by chain, bit for
            /// bit. Any other generator takes the chains one by one.
            #[inline(always)]
            fn sample_columns_in_place<R: Rng>(
                &self,
                columns: &mut [F],
                beta: f64,
                rngs: &mut [R],
            ) {
                match ebm_core::as_chain_rngs(rngs) {
                    Some(rngs) => F::sample_logistic_columns(
                        columns,
                        &self.fields,
                        F::from_f64($scale * beta),
                        F::from_f64($lo),
                        rngs,
                    ),
                    None => crate::layer::sample_each_column(self, columns, beta, rngs),
                }
            }

            fn mean_in_place(&self, inputs: &mut [F], beta: f64) {
                let b = F::from_f64(beta);
                for (x, &t) in inputs.iter_mut().zip(&self.fields) {
                    *x = b * (t + *x);
                }
                let means: fn(&mut [F]) = $means;
                means(inputs);
            }

            fn variance_in_place(&self, inputs: &mut [F], beta: f64) {
                let lo = $lo;
                self.mean_in_place(inputs, beta);
                // x in {lo, 1}: Var = (1 - mean)(mean - lo).
                for x in inputs.iter_mut() {
                    let m = x.as_f64();
                    *x = F::from_f64((1.0 - m) * (m - lo));
                }
            }

            fn energy_gradient(&self, x: &[F], out: &mut [f64]) {
                for (o, v) in out.iter_mut().zip(x) {
                    *o = -v.as_f64();
                }
            }

            fn expected_energy_gradient(&self, inputs: &[F], beta: f64, out: &mut [f64]) {
                // The conditional means, evaluated in f64 from the tempered fields.
                let b = F::from_f64(beta);
                for ((o, &i), &t) in out.iter_mut().zip(inputs).zip(&self.fields) {
                    *o = (b * (t + i)).as_f64();
                }
                let means: fn(&mut [f64]) = $means;
                means(out);
                for o in out.iter_mut() {
                    *o = -*o;
                }
            }

            fn tensors(&self) -> Vec<NamedTensor<F>> {
                vec![("bias", vec![self.fields.len()], self.fields.clone())]
            }

            fn from_tensors(n_units: usize, get: TensorLookup<'_, F>) -> ebm_core::Result<Self> {
                fields_from_tensors($kind, n_units, get).map(Self::new)
            }
        }

        impl<F: Scalar> DiscreteLayer for $ty<F> {
            fn unit_states(&self) -> usize {
                2
            }

            fn write_unit_state(&self, s: usize, slot: &mut [F]) {
                slot[0] = if s == 1 { F::one() } else { F::from_f64($lo) };
            }

            fn read_unit_state(&self, slot: &[F]) -> usize {
                let v = slot[0];
                if v == F::one() {
                    1
                } else {
                    assert!(
                        v == F::from_f64($lo),
                        "{} unit holds {v}, expected {} or 1",
                        $kind,
                        $lo
                    );
                    0
                }
            }
        }

        impl<F: Scalar> LinearFields for $ty<F> {
            fn add_to_fields(&mut self, delta: &[f64]) {
                assert_eq!(
                    delta.len(),
                    self.fields.len(),
                    "add_to_fields: one value per unit"
                );
                for (f, d) in self.fields.iter_mut().zip(delta) {
                    *f = F::from_f64(f.as_f64() + d);
                }
            }
        }

        impl<F: Scalar> BinaryLayer for $ty<F> {
            const LOW: f64 = $lo;
            fn fields(&self) -> &[F] {
                &self.fields
            }
            fn with_fields(fields: Vec<F>) -> Self {
                Self::new(fields)
            }
        }
    };
}

binary_layer!(
    Bernoulli,
    "bernoulli",
    0.0,
    BinaryCgf::Bernoulli,
    1.0,
    // The vectorised logistic function of `Scalar` (a few ulps in f32, < 1e-15 in f64).
    Scalar::sigmoid_in_place
);
binary_layer!(Spin, "spin", -1.0, BinaryCgf::Spin, 2.0, |xs| {
    for x in xs.iter_mut() {
        *x = x.tanh();
    }
});

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Brute-force CGF of one unit: log sum over its two states of exp(beta(-U + I x)).
    fn brute_cgf(lo: f64, theta: f64, input: f64, beta: f64) -> f64 {
        let e = |x: f64| beta * (theta * x + input * x);
        (e(lo).exp() + e(1.0).exp()).ln()
    }

    /// The potentials of a batch (`Layer::energies`, several chains side by side) are those
    /// of `Layer::energy` bit for bit, the sign of a zero sum included, for batches that do
    /// and do not fill the lanes; summing a chain in another order (negative control) gives
    /// other bits.
    #[test]
    fn batched_energies_are_the_single_chain_energies_bit_for_bit() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let fields: Vec<f64> = (0..37)
            .map(|_| rng.random_range(-3.0..3.0) * 10f64.powi(rng.random_range(-8..3)))
            .collect();
        let b = Bernoulli::new(fields.clone());
        let s = Spin::new(fields.clone());
        let negative = Bernoulli::new(vec![-1.0; 37]);
        for n in [0, 1, 7, 8, 13, 24] {
            let mut xs: Vec<f64> = (0..n * 37).map(|_| rng.random_range(0..2) as f64).collect();
            if n > 0 {
                xs[..37].fill(0.0); // a zero sum of -0 products
            }
            let spins: Vec<f64> = xs.iter().map(|x| 2.0 * x - 1.0).collect();
            for (batch, single) in [
                (batched(&b, &xs), single(&b, &xs)),
                (batched(&s, &spins), single(&s, &spins)),
                (batched(&negative, &xs), single(&negative, &xs)),
            ] {
                assert_eq!(batch, single, "{n} chains");
            }
        }
        // Negative control: one chain summed backwards differs in its last bits.
        let xs: Vec<f64> = (0..8 * 37).map(|_| rng.random_range(0..2) as f64).collect();
        let reversed: Vec<u64> = xs
            .chunks(37)
            .map(|x| {
                let sum: f64 = fields.iter().zip(x).rev().map(|(t, v)| t * v).sum();
                (-sum).to_bits()
            })
            .collect();
        assert_ne!(batched(&b, &xs), reversed);
    }

    fn batched<L: Layer<Scalar = f64>>(layer: &L, xs: &[f64]) -> Vec<u64> {
        let mut out = vec![0.0; xs.len() / layer.width()];
        layer.energies(xs, &mut out);
        out.iter().map(|e| e.to_bits()).collect()
    }

    fn single<L: Layer<Scalar = f64>>(layer: &L, xs: &[f64]) -> Vec<u64> {
        xs.chunks(layer.width())
            .map(|x| layer.energy(x).to_bits())
            .collect()
    }

    #[test]
    fn cgf_and_means_match_enumeration_over_a_grid() {
        for &theta in &[-2.0, 0.0, 0.7] {
            for &input in &[-30.0, -1.5, 0.0, 0.4, 12.0] {
                for &beta in &[0.0, 0.3, 1.0] {
                    let b = Bernoulli::new(vec![theta]);
                    let s = Spin::new(vec![theta]);
                    assert_relative_eq!(
                        b.cgf(&[input], beta),
                        brute_cgf(0.0, theta, input, beta),
                        max_relative = 1e-12
                    );
                    assert_relative_eq!(
                        s.cgf(&[input], beta),
                        brute_cgf(-1.0, theta, input, beta),
                        max_relative = 1e-12
                    );
                    // Mean = d Gamma / d I / beta; compare with the enumerated expectation.
                    let h = beta * (theta + input);
                    let mut m = [input];
                    b.mean_in_place(&mut m, beta);
                    assert_relative_eq!(m[0], 1.0 / (1.0 + (-h).exp()), max_relative = 1e-12);
                    let mut m = [input];
                    s.mean_in_place(&mut m, beta);
                    let (pp, pm) = (h.exp(), (-h).exp());
                    assert_relative_eq!(m[0], (pp - pm) / (pp + pm), max_relative = 1e-12);
                }
            }
        }
        assert_relative_eq!(Bernoulli::new(vec![0.0]).cgf(&[1e4], 1.0), 1e4);
        assert_relative_eq!(Spin::new(vec![0.0]).cgf(&[-1e4], 1.0), 1e4);
    }

    #[test]
    fn sampling_frequencies_match_conditional_probabilities() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let n = 200_000;
        for (theta, input, beta) in [(0.3f64, 0.5f64, 0.7f64), (-1.0, 0.2, 1.0)] {
            let b = Bernoulli::new(vec![theta]);
            let s = Spin::new(vec![theta]);
            let (mut nb, mut ns) = (0usize, 0usize);
            for _ in 0..n {
                let mut x = [input];
                b.sample_in_place(&mut x, beta, &mut rng);
                assert!(x[0] == 0.0 || x[0] == 1.0);
                nb += (x[0] == 1.0) as usize;
                let mut y = [input];
                s.sample_in_place(&mut y, beta, &mut rng);
                assert!(y[0] == -1.0 || y[0] == 1.0);
                ns += (y[0] == 1.0) as usize;
            }
            let pb = 1.0 / (1.0 + (-beta * (theta + input)).exp());
            let ps = 1.0 / (1.0 + (-2.0 * beta * (theta + input)).exp());
            for (count, p) in [(nb, pb), (ns, ps)] {
                let sd = (p * (1.0 - p) / n as f64).sqrt();
                assert!(
                    ((count as f64 / n as f64) - p).abs() < 5.0 * sd,
                    "{count} vs {p}"
                );
            }
        }
    }

    #[test]
    fn independent_layers_from_means_reproduce_the_means() {
        let b = Bernoulli::<f64>::from_means(&[0.2, 0.0, 1.0]);
        let mut m = [0.0; 3];
        b.mean_in_place(&mut m, 1.0);
        assert!((m[0] - 0.2).abs() < 1e-12 && m[1] < 2e-6 && m[2] > 1.0 - 2e-6);
        let s = Spin::<f64>::from_means(&[-0.4, 0.9]);
        let mut m = [0.0; 2];
        s.mean_in_place(&mut m, 1.0);
        assert!((m[0] + 0.4).abs() < 1e-12 && (m[1] - 0.9).abs() < 1e-12);
    }

    #[test]
    fn configurations_enumerate_and_index_back() {
        let b = Bernoulli::<f64>::zeros(3);
        let s = Spin::<f32>::zeros(3);
        assert_eq!(b.n_configurations(), 8);
        let mut x = [0.0f64; 3];
        let mut y = [0.0f32; 3];
        for k in 0..8u128 {
            b.write_configuration(k, &mut x);
            s.write_configuration(k, &mut y);
            assert_eq!(b.configuration_index(&x), k);
            assert_eq!(s.configuration_index(&y), k);
        }
        s.write_configuration(5, &mut y);
        assert_eq!(y, [1.0, -1.0, 1.0]);
        assert_eq!(Bernoulli::<f64>::zeros(200).n_configurations(), u128::MAX);
    }

    #[test]
    fn tensors_round_trip_and_bad_tensors_are_rejected() {
        let b = Bernoulli::new(vec![0.5f64, -1.0]);
        let t = b.tensors();
        let get = |name: &str| {
            t.iter()
                .find(|x| x.0 == name)
                .map(|x| (x.1.clone(), x.2.clone()))
        };
        assert_eq!(Bernoulli::from_tensors(2, &get).unwrap(), b);
        assert!(Bernoulli::<f64>::from_tensors(3, &get).is_err());
        let nan = |_: &str| Some((vec![1], vec![f64::NAN]));
        assert!(matches!(
            Spin::<f64>::from_tensors(1, &nan),
            Err(Error::NonFinite { .. })
        ));
        let none = |_: &str| None;
        assert!(Spin::<f64>::from_tensors(1, &none).is_err());
    }
}

//! The pseudo-log-likelihood of a dataset under an RBM with discrete visible units: exact (every
//! coordinate) and the one-coordinate stochastic estimate that scikit-learn's `BernoulliRBM`
//! reports and that "Lifted and Deterministic Even/Odd Parallel Tempering for RBM Training"
//! (paper 004) plots as its "log likelihood" (Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*).
//!
//! The pseudo-log-likelihood is **not** the log-likelihood: it needs no \\(\log Z\\), it only
//! scores how well each visible unit is predicted from all the others, and it can rise while
//! the likelihood falls (the book's training chapter gives measured numbers).

use ebm_core::numerics::log_sum_exp;
use ebm_core::{ChainRng, Error, Par, Scalar};
use ebm_models::{DiscreteLayer, Layer, Rbm};
use nalgebra::DMatrix;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Samples per batch of free-energy evaluations (each sample brings its flipped copies).
const CHUNK: usize = 128;

/// A mean pseudo-log-likelihood over a dataset, in nats per sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PseudoLogLikelihood {
    /// The mean over samples of the per-sample value.
    pub mean: f64,
    /// The standard error of the mean over samples: \\(\mathrm{sd}/\sqrt M\\) of the per-sample
    /// values (for the one-coordinate estimate it includes the spread of the coordinate draws).
    pub std_err: f64,
    /// Number of samples \\(M\\).
    pub n_data: usize,
    /// Number of visible units \\(n\\) (coordinates).
    pub n_units: usize,
}

impl PseudoLogLikelihood {
    fn of(values: &[f64], n_units: usize) -> Self {
        let m = values.len();
        let mean = values.iter().sum::<f64>() / m as f64;
        let std_err = if m > 1 {
            let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (m - 1) as f64;
            (var / m as f64).sqrt()
        } else {
            0.0
        };
        Self {
            mean,
            std_err,
            n_data: m,
            n_units,
        }
    }
}

/// The exact pseudo-log-likelihood of every column of `data` into `out`:
///
/// \\[ \mathrm{PLL}(v) = \sum_{i=1}^{n} \log P(v_i \mid v_{-i}), \qquad
/// \log P(v_i \mid v_{-i}) = -F(v) - \log \sum_{s} e^{-F(v^{i \leftarrow s})}, \\]
///
/// where \\(F = F_1\\) is the visible free energy ([`Rbm::free_energy_visible`]) and
/// \\(v^{i \leftarrow s}\\) is \\(v\\) with unit \\(i\\) set to state \\(s\\) (all
/// [`DiscreteLayer::unit_states`] states: Bernoulli, spin, Potts). For binary units this is
/// \\(\log\sigma\big(F(\tilde v^{(i)}) - F(v)\big)\\) with \\(\tilde v^{(i)}\\) the flip of
/// unit \\(i\\) (paper 004, §3.6 of its analysis). Batched: the \\(1 + n(q-1)\\) copies of a
/// chunk of samples go through one matrix product.
///
/// # Errors
/// [`Error::ShapeMismatch`] if `data` does not have one row per visible value or `out` not one
/// entry per column; [`Error::InvalidParameter`] if a unit of `data` holds no valid state of the
/// visible layer; [`Error::NonFinite`] for a non-finite free energy.
pub fn pseudo_log_likelihoods<V, H>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
    out: &mut [f64],
    par: Par,
) -> ebm_core::Result<()>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    check_data(rbm, data)?;
    Error::check_len("pseudo-log-likelihood output", data.ncols(), out.len())?;
    let n = rbm.visible().n_units();
    let mut batch = Batch::new(rbm.visible(), n * (rbm.visible().unit_states() - 1) + 1);
    for (c, outs) in out.chunks_mut(CHUNK).enumerate() {
        let first = c * CHUNK;
        batch.fill(rbm.visible(), data, first, outs.len(), |_, _| 0..n);
        batch.free_energies(rbm, par)?;
        for (k, o) in outs.iter_mut().enumerate() {
            *o = batch.conditionals(k).sum();
        }
    }
    Ok(())
}

/// The mean exact pseudo-log-likelihood of the columns of `data` (see
/// [`pseudo_log_likelihoods`]), with its standard error over samples.
///
/// # Errors
/// As [`pseudo_log_likelihoods`], and [`Error::ShapeMismatch`] if `data` has no column.
pub fn pseudo_log_likelihood<V, H>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
    par: Par,
) -> ebm_core::Result<PseudoLogLikelihood>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    non_empty(data)?;
    let mut values = vec![0.0; data.ncols()];
    pseudo_log_likelihoods(rbm, data, &mut values, par)?;
    Ok(PseudoLogLikelihood::of(&values, rbm.visible().n_units()))
}

/// The one-coordinate stochastic estimate of the pseudo-log-likelihood that paper 004 plots
/// (scikit-learn's `BernoulliRBM.score_samples`): for each sample, one unit \\(i\\) drawn
/// uniformly from \\(\{1..n\}\\) and
///
/// \\[ \widehat{\mathrm{PLL}}(v) = n \log P(v_i \mid v_{-i}), \\]
///
/// i.e. \\(n\log\sigma\big(F(\tilde v^{(i)}) - F(v)\big)\\) for binary units. Its expectation
/// over \\(i\\) is the exact \\(\mathrm{PLL}(v)\\) of [`pseudo_log_likelihoods`]: it is unbiased,
/// with a variance of order \\(n^2\\) per sample. Sample `m` draws its coordinate from `rngs[m]`
/// only, so the result does not depend on `par`; reseeding the streams identically before each
/// call (as scikit-learn does) flips the same coordinates every time.
///
/// # Errors
/// As [`pseudo_log_likelihood`], and [`Error::ShapeMismatch`] unless there is one RNG stream
/// per column of `data`.
pub fn pseudo_log_likelihood_estimate<V, H>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
    rngs: &mut [ChainRng],
    par: Par,
) -> ebm_core::Result<PseudoLogLikelihood>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    check_data(rbm, data)?;
    non_empty(data)?;
    Error::check_len("RNG streams (one per sample)", data.ncols(), rngs.len())?;
    let n = rbm.visible().n_units();
    let coordinates: Vec<usize> = rngs.iter_mut().map(|r| r.random_range(0..n)).collect();
    let mut values = vec![0.0; data.ncols()];
    let mut batch = Batch::new(rbm.visible(), rbm.visible().unit_states());
    for (c, outs) in values.chunks_mut(CHUNK).enumerate() {
        let first = c * CHUNK;
        batch.fill(rbm.visible(), data, first, outs.len(), |_, j| {
            coordinates[j]..coordinates[j] + 1
        });
        batch.free_energies(rbm, par)?;
        for (k, o) in outs.iter_mut().enumerate() {
            *o = n as f64 * batch.conditionals(k).sum::<f64>();
        }
    }
    Ok(PseudoLogLikelihood::of(&values, n))
}

fn non_empty<F: Scalar>(data: &DMatrix<F>) -> ebm_core::Result<()> {
    if data.ncols() == 0 {
        return Err(Error::ShapeMismatch {
            what: "data".into(),
            expected: "at least one sample (column)".into(),
            got: "0 columns".into(),
        });
    }
    Ok(())
}

/// Checks the width of `data` and that every unit slot holds one of the layer's states.
fn check_data<V, H>(rbm: &Rbm<V, H>, data: &DMatrix<V::Scalar>) -> ebm_core::Result<()>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let layer = rbm.visible();
    Error::check_len("data rows (visible width)", layer.width(), data.nrows())?;
    let w = layer.unit_width();
    let states = unit_states(layer);
    for (j, col) in data.column_iter().enumerate() {
        for (i, slot) in col.as_slice().chunks(w).enumerate() {
            if !states.iter().any(|s| s.as_slice() == slot) {
                return Err(Error::InvalidParameter {
                    name: "data".into(),
                    reason: format!(
                        "unit {i} of sample {j} holds {:?}, which is not a state of the visible \
                         layer",
                        slot.iter().map(|x| x.as_f64()).collect::<Vec<_>>()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The slot contents of every state of one unit.
fn unit_states<V: DiscreteLayer>(layer: &V) -> Vec<Vec<V::Scalar>> {
    (0..layer.unit_states())
        .map(|s| {
            let mut slot = vec![V::Scalar::from_f64(0.0); layer.unit_width()];
            layer.write_unit_state(s, &mut slot);
            slot
        })
        .collect()
}

/// Reusable buffers: for each sample of a chunk, the sample itself followed by its copies with
/// one unit set to each other state, for the units chosen by the caller.
struct Batch<F: Scalar> {
    /// Columns per sample: 1 + (units per sample) x (q - 1).
    per_sample: usize,
    states: Vec<Vec<F>>,
    columns: DMatrix<F>,
    free: Vec<f64>,
    /// For each sample of the chunk, the units whose conditionals are wanted.
    units: Vec<std::ops::Range<usize>>,
}

impl<F: Scalar> Batch<F> {
    fn new<V: DiscreteLayer<Scalar = F>>(layer: &V, per_sample: usize) -> Self {
        Self {
            per_sample,
            states: unit_states(layer),
            columns: DMatrix::from_element(layer.width(), 0, F::from_f64(0.0)),
            free: Vec::new(),
            units: Vec::new(),
        }
    }

    /// Writes samples `first..first + count` of `data` and their copies; `units(k, j)` gives
    /// the units of sample `j` (the `k`-th of the chunk) whose conditionals are wanted.
    fn fill<V: DiscreteLayer<Scalar = F>>(
        &mut self,
        layer: &V,
        data: &DMatrix<F>,
        first: usize,
        count: usize,
        units: impl Fn(usize, usize) -> std::ops::Range<usize>,
    ) {
        let (rows, w, q) = (data.nrows(), layer.unit_width(), self.states.len());
        let cols = count * self.per_sample;
        if self.columns.ncols() != cols {
            self.columns = DMatrix::from_element(rows, cols, F::from_f64(0.0));
        }
        self.units.clear();
        let buf = self.columns.as_mut_slice();
        for k in 0..count {
            let j = first + k;
            let v = data.column(j);
            let v = v.as_slice();
            let range = units(k, j);
            let base = k * self.per_sample;
            buf[base * rows..(base + 1) * rows].copy_from_slice(v);
            let mut col = base + 1;
            for i in range.clone() {
                let current = &v[i * w..(i + 1) * w];
                for s in self.states.iter().filter(|s| s.as_slice() != current) {
                    let c = &mut buf[col * rows..(col + 1) * rows];
                    c.copy_from_slice(v);
                    c[i * w..(i + 1) * w].copy_from_slice(s);
                    col += 1;
                }
            }
            debug_assert_eq!(col - base, 1 + range.len() * (q - 1));
            self.units.push(range);
        }
    }

    fn free_energies<V, H>(&mut self, rbm: &Rbm<V, H>, par: Par) -> ebm_core::Result<()>
    where
        V: DiscreteLayer<Scalar = F>,
        H: Layer<Scalar = F>,
    {
        self.free.resize(self.columns.ncols(), 0.0);
        rbm.free_energy_visible(&self.columns, 1.0, &mut self.free, par);
        Error::check_finite("visible free energies", &self.free)
    }

    /// \\(\log P(v_i \mid v_{-i})\\) of sample `k` of the chunk for each of its units.
    fn conditionals(&self, k: usize) -> impl Iterator<Item = f64> + '_ {
        let f = &self.free;
        let q1 = self.states.len() - 1;
        let base = k * self.per_sample;
        let own = -f[base];
        let mut terms = vec![0.0; q1 + 1];
        (0..self.units[k].len()).map(move |u| {
            terms[0] = own;
            for (t, fe) in terms[1..]
                .iter_mut()
                .zip(&f[base + 1 + u * q1..base + 1 + (u + 1) * q1])
            {
                *t = -fe;
            }
            own - log_sum_exp(&terms)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_core::RngStreams;
    use ebm_models::{Bernoulli, Potts, Spin};

    fn weights(nv: usize, nh: usize, scale: f64) -> DMatrix<f64> {
        DMatrix::from_fn(nv, nh, |i, j| {
            scale * ((i * 7 + j * 3) as f64 * 0.9).sin() + 0.1 * (i as f64 - j as f64)
        })
    }

    fn bernoulli(nv: usize, nh: usize, scale: f64) -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
        Rbm::new(
            Bernoulli::new((0..nv).map(|i| 0.3 * (i as f64).cos()).collect()),
            Bernoulli::new((0..nh).map(|j| -0.2 + 0.15 * j as f64).collect()),
            weights(nv, nh, scale),
        )
        .unwrap()
    }

    fn spin(nv: usize, nh: usize) -> Rbm<Spin<f64>, Bernoulli<f64>> {
        Rbm::new(
            Spin::new((0..nv).map(|i| 0.2 * (i as f64 + 0.5).sin()).collect()),
            Bernoulli::new(vec![0.1; nh]),
            weights(nv, nh, 0.8),
        )
        .unwrap()
    }

    /// \\(\log \sum_h e^{-E(v, h)}\\) by enumerating the hidden layer through the joint energy
    /// (independent of the free-energy code under test).
    fn brute_log_weight<V: DiscreteLayer<Scalar = f64>, H: DiscreteLayer<Scalar = f64>>(
        rbm: &Rbm<V, H>,
        v: &[f64],
    ) -> f64 {
        let hl = rbm.hidden();
        let mut h = vec![0.0; hl.width()];
        let terms: Vec<f64> = (0..hl.n_configurations())
            .map(|k| {
                hl.write_configuration(k, &mut h);
                -rbm.joint_energy(v, &h)
            })
            .collect();
        log_sum_exp(&terms)
    }

    /// \\(\sum_i \log P(v_i \mid v_{-i})\\) by enumeration: each conditional is the joint
    /// weight of `v` over the sum of the weights of its copies with unit `i` in every state.
    fn brute_pll<V: DiscreteLayer<Scalar = f64>, H: DiscreteLayer<Scalar = f64>>(
        rbm: &Rbm<V, H>,
        v: &[f64],
    ) -> f64 {
        let vl = rbm.visible();
        let w = vl.unit_width();
        let own = brute_log_weight(rbm, v);
        (0..vl.n_units())
            .map(|i| {
                let all: Vec<f64> = (0..vl.unit_states())
                    .map(|s| {
                        let mut x = v.to_vec();
                        vl.write_unit_state(s, &mut x[i * w..(i + 1) * w]);
                        brute_log_weight(rbm, &x)
                    })
                    .collect();
                own - log_sum_exp(&all)
            })
            .sum()
    }

    /// Every visible configuration of `rbm` as the columns of a matrix.
    fn all_configurations<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
        rbm: &Rbm<V, H>,
    ) -> DMatrix<f64> {
        let vl = rbm.visible();
        let n = vl.n_configurations() as usize;
        let mut m = DMatrix::zeros(vl.width(), n);
        for k in 0..n {
            vl.write_configuration(k as u128, m.column_mut(k).as_mut_slice());
        }
        m
    }

    fn check_against_brute_force<V: DiscreteLayer<Scalar = f64>, H: DiscreteLayer<Scalar = f64>>(
        rbm: &Rbm<V, H>,
    ) {
        let data = all_configurations(rbm);
        let mut out = vec![0.0; data.ncols()];
        pseudo_log_likelihoods(rbm, &data, &mut out, Par::Seq).unwrap();
        let mut par = vec![0.0; data.ncols()];
        pseudo_log_likelihoods(rbm, &data, &mut par, Par::Rayon).unwrap();
        assert_eq!(out, par, "bit-identical for any thread count");
        for (k, o) in out.iter().enumerate() {
            let b = brute_pll(rbm, data.column(k).as_slice());
            assert!((o - b).abs() < 1e-10, "configuration {k}: {o} vs {b}");
            assert!(*o < 0.0);
        }
    }

    #[test]
    fn exact_pll_equals_the_brute_force_conditionals_for_bernoulli_spin_and_potts() {
        check_against_brute_force(&bernoulli(5, 3, 1.2));
        check_against_brute_force(&spin(4, 3));
        let potts = Rbm::new(
            Potts::new(3, (0..9).map(|k| 0.1 * k as f64 - 0.4).collect()).unwrap(),
            Bernoulli::new(vec![0.2, -0.1]),
            DMatrix::from_fn(9, 2, |i, j| ((i + 2 * j) as f64).sin()),
        )
        .unwrap();
        check_against_brute_force(&potts);
    }

    /// Negative control: the binary shortcut with the wrong sign, \\(\log\sigma(F(v) -
    /// F(\tilde v))\\), differs from the brute force by far more than the tolerance.
    #[test]
    fn the_wrong_sign_fails_the_brute_force_comparison() {
        let rbm = bernoulli(5, 3, 1.2);
        let data = all_configurations(&rbm);
        let mut f = vec![0.0; data.ncols()];
        rbm.free_energy_visible(&data, 1.0, &mut f, Par::Seq);
        let worst = (0..data.ncols())
            .map(|k| {
                let v = data.column(k);
                let wrong: f64 = (0..5)
                    .map(|i| {
                        let mut x = DMatrix::from_column_slice(5, 1, v.as_slice());
                        x[i] = 1.0 - x[i];
                        let mut fx = [0.0];
                        rbm.free_energy_visible(&x, 1.0, &mut fx, Par::Seq);
                        ebm_core::numerics::log_sigmoid(f[k] - fx[0])
                    })
                    .sum();
                (wrong - brute_pll(&rbm, v.as_slice())).abs()
            })
            .fold(0.0, f64::max);
        assert!(worst > 0.1, "{worst}");
    }

    /// Mean of the one-coordinate estimate over `draws` copies of three distinct samples (each
    /// copy draws its own coordinate) against the exact mean PLL, in standard errors; and the
    /// same for the estimate without the factor n (negative control).
    fn bias_in_standard_errors<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
        rbm: &Rbm<V, H>,
        samples: [&[f64]; 3],
        draws: usize,
    ) -> (f64, f64) {
        let data = DMatrix::from_fn(samples[0].len(), draws, |i, k| samples[k % 3][i]);
        let exact = pseudo_log_likelihood(rbm, &data, Par::Seq).unwrap().mean;
        let mut rngs = RngStreams::new(11, draws);
        let est =
            pseudo_log_likelihood_estimate(rbm, &data, rngs.as_mut_slice(), Par::Rayon).unwrap();
        let n = rbm.visible().n_units() as f64;
        let z = (est.mean - exact) / est.std_err;
        let z_without_n = (est.mean / n - exact) / (est.std_err / n);
        (z, z_without_n)
    }

    /// The one-coordinate estimate is unbiased: over 20,000 independent coordinate draws its
    /// mean is within 4 standard errors of the exact PLL (Bernoulli and spin visibles); the
    /// same estimate without the factor n (negative control) fails the same test.
    #[test]
    fn the_one_coordinate_estimate_is_unbiased_and_needs_the_factor_n() {
        let b = |bits: [u8; 12]| bits.map(f64::from);
        let (x, y, z) = (
            b([1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1]),
            b([0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]),
            b([1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0]),
        );
        let (ok, control) = bias_in_standard_errors(&bernoulli(12, 4, 1.5), [&x, &y, &z], 20_000);
        assert!(ok.abs() < 4.0, "bernoulli: {ok} standard errors");
        assert!(control.abs() > 4.0, "negative control passed: {control}");
        let s = |v: [f64; 12]| v.map(|x| 2.0 * x - 1.0);
        let (ok, control) = bias_in_standard_errors(&spin(12, 3), [&s(x), &s(y), &s(z)], 20_000);
        assert!(ok.abs() < 4.0, "spin: {ok} standard errors");
        assert!(control.abs() > 4.0, "negative control passed: {control}");
    }

    #[test]
    fn the_estimate_depends_only_on_the_streams() {
        let rbm = bernoulli(8, 3, 1.0);
        let v = DMatrix::from_fn(8, 300, |i, k| ((i + k) % 3 == 0) as u8 as f64);
        let a = pseudo_log_likelihood_estimate(
            &rbm,
            &v,
            RngStreams::new(5, 300).as_mut_slice(),
            Par::Seq,
        )
        .unwrap();
        let b = pseudo_log_likelihood_estimate(
            &rbm,
            &v,
            RngStreams::new(5, 300).as_mut_slice(),
            Par::Rayon,
        )
        .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let rbm = bernoulli(4, 2, 1.0);
        let bad = DMatrix::from_element(4, 2, 0.5);
        assert!(matches!(
            pseudo_log_likelihood(&rbm, &bad, Par::Seq),
            Err(Error::InvalidParameter { .. })
        ));
        let narrow = DMatrix::from_element(3, 2, 0.0);
        assert!(matches!(
            pseudo_log_likelihood(&rbm, &narrow, Par::Seq),
            Err(Error::ShapeMismatch { .. })
        ));
        let empty = DMatrix::from_element(4, 0, 0.0);
        assert!(pseudo_log_likelihood(&rbm, &empty, Par::Seq).is_err());
        let ok = DMatrix::from_element(4, 2, 1.0);
        assert!(matches!(
            pseudo_log_likelihood_estimate(
                &rbm,
                &ok,
                RngStreams::new(0, 3).as_mut_slice(),
                Par::Seq
            ),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}

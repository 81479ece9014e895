//! Parameter updates, the zero-sum gauge of one-hot layers, and initial models.

use crate::data::TrainingData;
use crate::layers::TrainableLayer;
use crate::stats::Centre;
use ebm_core::{Error, Par, Result, RngStreams, Scalar};
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

/// Adds `step` to a layer's parameters (flattened in the order of its tensors), keeps its
/// precisions at or above `min_precision`, and rebuilds it (validating every value).
fn step_layer<L: TrainableLayer>(layer: &L, step: &[f64], min_precision: f64) -> Result<L> {
    let mut offset = 0;
    let tensors: Vec<_> = layer
        .tensors()
        .into_iter()
        .map(|(name, shape, values)| {
            let floor = L::PRECISION_TENSORS.contains(&name);
            let values: Vec<L::Scalar> = values
                .iter()
                .map(|x| {
                    let mut y = x.as_f64() + step[offset];
                    offset += 1;
                    if floor && y < min_precision {
                        y = min_precision;
                    }
                    L::Scalar::from_f64(y)
                })
                .collect();
            (name, shape, values)
        })
        .collect();
    let get = |name: &str| {
        tensors
            .iter()
            .find(|t| t.0 == name)
            .map(|t| (t.1.clone(), t.2.clone()))
    };
    L::from_tensors(layer.n_units(), &get).map_err(|e| Error::InvalidParameter {
        name: format!("{} layer after the update", L::KIND),
        reason: format!("training diverged or the step is too large: {e}"),
    })
}

/// Applies a parameter step (flattened as [`crate::Gradient::flat`]) to `rbm`: weights, then
/// each layer's tensors; for a centred step the field shifts \\(-\Delta W b\\) (visible) and
/// \\(-\Delta W^\top a\\) (hidden); precisions are floored at `min_precision`; with `gauge`, the
/// zero-sum gauge of one-hot layers is restored ([`zero_sum_gauge`]).
///
/// The passes over the weights run by columns (weights, hidden shifts) and by blocks of
/// [`ROW_BLOCK`] rows (visible shifts) on the pool with [`Par::Rayon`]; every sum runs in
/// the same order as on one thread, so the result does not depend on `par`.
pub(crate) fn apply_step<V, H>(
    rbm: Rbm<V, H>,
    step: &[f64],
    centre: Option<&Centre>,
    min_precision: f64,
    gauge: bool,
    par: Par,
) -> Result<Rbm<V, H>>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    let (visible, hidden, mut w) = rbm.into_parts();
    let (nv, nh) = w.shape();
    let nw = nv * nh;
    let pv = visible.n_parameters();
    assert_eq!(
        step.len(),
        nw + pv + hidden.n_parameters(),
        "parameter step does not match the model"
    );
    let dw = &step[..nw];
    let column = nv.max(1);
    let add = |(x, d): (&mut [V::Scalar], &[f64])| {
        for (x, d) in x.iter_mut().zip(d) {
            *x = V::Scalar::from_f64(x.as_f64() + d);
        }
    };
    match par {
        Par::Seq => w
            .as_mut_slice()
            .chunks_mut(column)
            .zip(dw.chunks(column))
            .for_each(add),
        Par::Rayon => w
            .as_mut_slice()
            .par_chunks_mut(column)
            .zip(dw.par_chunks(column))
            .for_each(add),
    }
    let mut visible = step_layer(&visible, &step[nw..nw + pv], min_precision)?;
    let mut hidden = step_layer(&hidden, &step[nw + pv..], min_precision)?;
    if let Some(c) = centre {
        // dv_i = -sum_j dW_ij b_j and dh_j = -sum_i dW_ij a_i, each sum in index order from
        // the -0.0 of `Iterator::sum`.
        let visible_shifts = |(first, out): (usize, &mut [f64])| {
            let first = first * ROW_BLOCK;
            out.fill(-0.0);
            for (j, &b) in c.hidden.iter().enumerate() {
                let rows = &dw[j * nv + first..j * nv + first + out.len()];
                for (o, &d) in out.iter_mut().zip(rows) {
                    *o += d * b;
                }
            }
            out.iter_mut().for_each(|o| *o = -*o);
        };
        let hidden_shift = |d: &[f64]| -d.iter().zip(&c.visible).map(|(d, a)| d * a).sum::<f64>();
        let mut dv = vec![0.0; nv];
        let dh: Vec<f64> = match par {
            Par::Seq => {
                dv.chunks_mut(ROW_BLOCK)
                    .enumerate()
                    .for_each(visible_shifts);
                dw.chunks(column).map(hidden_shift).collect()
            }
            Par::Rayon => {
                dv.par_chunks_mut(ROW_BLOCK)
                    .enumerate()
                    .for_each(visible_shifts);
                dw.par_chunks(column).map(hidden_shift).collect()
            }
        };
        visible.add_to_fields(&dv);
        hidden.add_to_fields(&dh);
    }
    let rbm = Rbm::new(visible, hidden, w).map_err(|e| Error::InvalidParameter {
        name: "weights after the update".into(),
        reason: format!("training diverged or the step is too large: {e}"),
    })?;
    let one_hot = rbm.visible().unit_width() > 1 || rbm.hidden().unit_width() > 1;
    if gauge && one_hot {
        zero_sum_gauge(rbm)
    } else {
        Ok(rbm)
    }
}

/// Rows per task of the visible field shifts of [`apply_step`].
const ROW_BLOCK: usize = 64;

/// The linear fields \\(\theta_{i,a} = -U_i(e_a)\\) of a one-hot layer, read through
/// [`Layer::unit_energy`] on the one-hot slots \\(e_a\\).
fn one_hot_fields<L: Layer>(layer: &L) -> Vec<f64> {
    let q = layer.unit_width();
    let mut slot = vec![L::Scalar::from_f64(0.0); q];
    let mut out = Vec::with_capacity(layer.width());
    for i in 0..layer.n_units() {
        for a in 0..q {
            slot.fill(L::Scalar::from_f64(0.0));
            slot[a] = L::Scalar::from_f64(1.0);
            out.push(-layer.unit_energy(i, &slot));
        }
    }
    out
}

/// Subtracts from each unit's fields their mean over its `q` values (a constant energy shift).
fn zero_sum_fields<L: TrainableLayer>(layer: &mut L) {
    let q = layer.unit_width();
    let fields = one_hot_fields(layer);
    let delta: Vec<f64> = fields
        .chunks(q)
        .flat_map(|u| {
            let m = u.iter().sum::<f64>() / q as f64;
            std::iter::repeat_n(-m, q)
        })
        .collect();
    layer.add_to_fields(&delta);
}

/// The zero-sum gauge of every one-hot (Potts) layer, applied to **all** parameters (peer
/// lesson rbms #27): for a one-hot visible layer with \\(q\\) values per unit, each unit's \\(q\\)
/// weight rows are shifted to zero mean for every hidden value, the removed part (linear in
/// \\(h\\)) is moved into the hidden fields, and each unit's fields are shifted to zero sum;
/// likewise for a one-hot hidden layer (weight columns, visible fields). The law is unchanged;
/// energies change by a constant. Same result as
/// [`Rbm::gauge_visible_zero_sum`] / [`Rbm::gauge_hidden_zero_sum`], written once over the
/// layer traits: a layer is one-hot when its [`Layer::unit_width`] exceeds 1, and its fields are
/// read as \\(-U_i(e_a)\\).
///
/// # Errors
/// [`Error::NonFinite`] only if the parameters were not finite.
pub fn zero_sum_gauge<V, H>(rbm: Rbm<V, H>) -> Result<Rbm<V, H>>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    let (mut visible, mut hidden, mut w) = rbm.into_parts();
    let (nv, nh) = w.shape();
    let qv = visible.unit_width();
    if qv > 1 {
        let mut delta = vec![0.0; nh];
        for (k, d) in delta.iter_mut().enumerate() {
            for i in 0..nv / qv {
                let rows = i * qv..(i + 1) * qv;
                let mean = rows.clone().map(|r| w[(r, k)].as_f64()).sum::<f64>() / qv as f64;
                for r in rows {
                    w[(r, k)] = V::Scalar::from_f64(w[(r, k)].as_f64() - mean);
                }
                *d += mean;
            }
        }
        hidden.add_to_fields(&delta);
        zero_sum_fields(&mut visible);
    }
    let qh = hidden.unit_width();
    if qh > 1 {
        let mut delta = vec![0.0; nv];
        for (r, d) in delta.iter_mut().enumerate() {
            for mu in 0..nh / qh {
                let cols = mu * qh..(mu + 1) * qh;
                let mean = cols.clone().map(|c| w[(r, c)].as_f64()).sum::<f64>() / qh as f64;
                for c in cols {
                    w[(r, c)] = V::Scalar::from_f64(w[(r, c)].as_f64() - mean);
                }
                *d += mean;
            }
        }
        visible.add_to_fields(&delta);
        zero_sum_fields(&mut hidden);
    }
    Rbm::new(visible, hidden, w)
}

/// An initial model for training from scratch (Béreux et al., *Fast training and sampling of RBMs*):
/// weights drawn i.i.d. from \\(\mathcal N(0, \sigma^2)\\) (\\(\sigma = 10^{-4}\\) in the reference
/// code; \\(\sigma = 0\\) gives the independent-site model, whose \\(\log Z\\) is exact), the visible
/// fields set from the data frequencies when `data` is given ([`TrainableLayer::with_means`],
/// the Montavon–Müller initialisation), the hidden layer as given. The weights are drawn from a
/// generator derived from `seed`.
///
/// # Errors
/// [`Error::InvalidParameter`] for \\(\sigma < 0\\) or non-finite; [`Error::ShapeMismatch`] if
/// the data do not match the visible layer.
pub fn initial_model<V, H>(
    visible: V,
    hidden: H,
    data: Option<&TrainingData<V::Scalar>>,
    weight_std: f64,
    seed: u64,
) -> Result<Rbm<V, H>>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    if !(weight_std >= 0.0 && weight_std.is_finite()) {
        return Err(Error::InvalidParameter {
            name: "weight_std".into(),
            reason: format!("must be finite and >= 0, got {weight_std}"),
        });
    }
    let visible = match data {
        Some(d) => {
            Error::check_len(
                "rows of the training data (visible width)",
                visible.width(),
                d.samples().nrows(),
            )?;
            visible.with_means(&d.means())
        }
        None => visible,
    };
    let mut rng = RngStreams::auxiliary(seed, 5);
    let normal = Normal::new(0.0, weight_std).expect("validated standard deviation");
    let w = DMatrix::from_fn(visible.width(), hidden.width(), |_, _| {
        V::Scalar::from_f64(if weight_std == 0.0 {
            0.0
        } else {
            normal.sample(&mut rng)
        })
    });
    Rbm::new(visible, hidden, w)
}

/// \\(\log Z\\) of a model without couplings (\\(W = 0\\)): the sum of the layers' cumulant
/// generating functions at zero input, \\(\sum_i \Gamma_{V,i}(0) + \sum_\mu \Gamma_{H,\mu}(0)\\),
/// exact for any pair of layers. `None` if some weight is not zero.
pub fn independent_log_partition<V, H>(rbm: &Rbm<V, H>) -> Option<f64>
where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    if rbm.weights().iter().any(|w| w.as_f64() != 0.0) {
        return None;
    }
    let zv = vec![V::Scalar::from_f64(0.0); rbm.visible().width()];
    let zh = vec![V::Scalar::from_f64(0.0); rbm.hidden().width()];
    Some(rbm.visible().cgf(&zv, 1.0) + rbm.hidden().cgf(&zh, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_models::{Bernoulli, Gaussian, LinearFields, Potts, exact};

    fn potts_bernoulli() -> Rbm<Potts<f64>, Bernoulli<f64>> {
        Rbm::new(
            Potts::new(3, vec![0.3, -0.2, 1.1, 0.5, 0.0, -0.7]).unwrap(),
            Bernoulli::new(vec![0.2, -0.4]),
            DMatrix::from_fn(6, 2, |i, j| 0.3 * i as f64 - 0.5 * j as f64 + 0.1),
        )
        .unwrap()
    }

    #[test]
    fn generic_gauge_equals_the_models_gauge_and_keeps_the_law() {
        let rbm = potts_bernoulli();
        let ours = zero_sum_gauge(rbm.clone()).unwrap();
        let theirs = rbm.gauge_visible_zero_sum().rbm;
        for (a, b) in ours.weights().iter().zip(theirs.weights().iter()) {
            assert!((a - b).abs() < 1e-14);
        }
        for (a, b) in ours.hidden().fields.iter().zip(&theirs.hidden().fields) {
            assert!((a - b).abs() < 1e-14);
        }
        for (a, b) in ours
            .visible()
            .fields()
            .iter()
            .zip(theirs.visible().fields())
        {
            assert!((a - b).abs() < 1e-14);
        }
        let p = |m: &Rbm<Potts<f64>, Bernoulli<f64>>| {
            exact::visible_probabilities(m, 1.0, Par::Seq).unwrap()
        };
        for (a, b) in p(&ours).iter().zip(p(&rbm)) {
            assert!((a - b).abs() < 1e-14);
        }
        // Hidden one-hot side, through the transposed model.
        let t = rbm.transposed();
        let g = zero_sum_gauge(t.clone()).unwrap();
        let expected = t.gauge_hidden_zero_sum().rbm;
        for (a, b) in g.weights().iter().zip(expected.weights().iter()) {
            assert!((a - b).abs() < 1e-14);
        }
    }

    /// The centred SGD step equals the reference code's formulas (the PTT paper):
    /// \\(\Delta W = \gamma\nabla W\\), \\(\Delta\theta = \gamma(\bar v - \langle v\rangle - \nabla W \bar h)\\),
    /// \\(\Delta\eta = \gamma(\bar h - \langle h\rangle - \nabla W^\top \bar v)\\).
    #[test]
    fn centred_step_matches_the_reference_formulas() {
        use crate::stats::{Gradient, Moments};
        let rbm = Rbm::new(
            Bernoulli::new(vec![0.3, -0.2, 0.5]),
            Bernoulli::new(vec![0.1, -0.4]),
            DMatrix::from_fn(3, 2, |i, j| 0.4 * i as f64 - 0.3 * j as f64),
        )
        .unwrap();
        let data =
            DMatrix::from_column_slice(3, 4, &[1., 0., 1., 1., 1., 0., 0., 0., 1., 1., 1., 1.]);
        let chains = DMatrix::from_column_slice(3, 3, &[0., 1., 1., 0., 0., 0., 1., 0., 1.]);
        let d = Moments::of_visible(&rbm, &data, None, Par::Seq);
        let m = Moments::of_visible(&rbm, &chains, None, Par::Seq);
        let g = Gradient::from_moments(&d, &m, true);
        let lr = 0.1;
        let step: Vec<f64> = g.flat().iter().map(|x| lr * x).collect();
        let new = apply_step(rbm.clone(), &step, g.centre.as_ref(), 0.05, false, Par::Seq).unwrap();
        let gw = &g.weights;
        // Cov_data(v, h) - <(v - vbar)(h - hbar)>_chains, by brute force.
        for i in 0..3 {
            for j in 0..2 {
                let cov_d = d.visible_hidden[(i, j)] - d.visible_mean[i] * d.hidden_mean[j];
                let c_m = m.visible_hidden[(i, j)]
                    - d.visible_mean[i] * m.hidden_mean[j]
                    - m.visible_mean[i] * d.hidden_mean[j]
                    + d.visible_mean[i] * d.hidden_mean[j];
                assert!((gw[(i, j)] - (cov_d - c_m)).abs() < 1e-14);
                let dw = new.weights()[(i, j)] - rbm.weights()[(i, j)];
                assert!((dw - lr * gw[(i, j)]).abs() < 1e-14);
            }
        }
        for i in 0..3 {
            let wh: f64 = (0..2).map(|j| gw[(i, j)] * d.hidden_mean[j]).sum();
            let expected = lr * (d.visible_mean[i] - m.visible_mean[i] - wh);
            let got = new.visible().fields[i] - rbm.visible().fields[i];
            assert!(
                (got - expected).abs() < 1e-14,
                "visible {i}: {got} vs {expected}"
            );
        }
        for j in 0..2 {
            let wv: f64 = (0..3).map(|i| gw[(i, j)] * d.visible_mean[i]).sum();
            let expected = lr * (d.hidden_mean[j] - m.hidden_mean[j] - wv);
            let got = new.hidden().fields[j] - rbm.hidden().fields[j];
            assert!(
                (got - expected).abs() < 1e-14,
                "hidden {j}: {got} vs {expected}"
            );
        }
    }

    /// The parameter step spread over the pool (weights by columns, visible shifts by blocks
    /// of rows) gives the numbers of one thread and of the plain formulas (each sum in index
    /// order, as `Iterator::sum`), bit for bit; the visible shifts summed in reverse order (a
    /// negative control) differ.
    #[test]
    fn centred_step_on_the_pool_is_bit_identical_to_the_plain_formulas() {
        let (nv, nh) = (150, 7);
        let rbm = Rbm::new(
            Bernoulli::new((0..nv).map(|i| 0.01 * i as f64 - 0.6).collect()),
            Bernoulli::new((0..nh).map(|j| 0.2 * j as f64 - 0.5).collect()),
            DMatrix::from_fn(nv, nh, |i, j| 0.01 * (((i * 5 + j * 3) % 13) as f64 - 6.0)),
        )
        .unwrap();
        let n = nv * nh + nv + nh;
        let step: Vec<f64> = (0..n)
            .map(|k| ((k * 37 % 101) as f64 - 50.0) * 1.3e-4)
            .collect();
        let centre = Centre {
            visible: (0..nv).map(|i| ((i * 7) % 10) as f64 / 9.7).collect(),
            hidden: (0..nh).map(|j| ((j * 3) % 5) as f64 / 4.3).collect(),
        };
        let bits = |m: &Rbm<Bernoulli, Bernoulli>| {
            let mut b: Vec<u64> = m.weights().iter().map(|x| x.to_bits()).collect();
            b.extend(m.visible().fields.iter().map(|x| x.to_bits()));
            b.extend(m.hidden().fields.iter().map(|x| x.to_bits()));
            b
        };
        let seq = apply_step(rbm.clone(), &step, Some(&centre), 0.05, true, Par::Seq).unwrap();
        let pool = apply_step(rbm.clone(), &step, Some(&centre), 0.05, true, Par::Rayon).unwrap();
        assert!(bits(&seq) == bits(&pool));
        let dw = |i: usize, j: usize| step[i + j * nv];
        let plain = |reversed: bool| {
            let mut visible = rbm.visible().clone();
            let mut hidden = rbm.hidden().clone();
            for (f, d) in visible.fields.iter_mut().zip(&step[nv * nh..nv * nh + nv]) {
                *f += d;
            }
            for (f, d) in hidden.fields.iter_mut().zip(&step[nv * nh + nv..]) {
                *f += d;
            }
            let dv: Vec<f64> = (0..nv)
                .map(|i| {
                    let terms = (0..nh).map(|j| dw(i, j) * centre.hidden[j]);
                    if reversed {
                        -terms.rev().sum::<f64>()
                    } else {
                        -terms.sum::<f64>()
                    }
                })
                .collect();
            let dh: Vec<f64> = (0..nh)
                .map(|j| -(0..nv).map(|i| dw(i, j) * centre.visible[i]).sum::<f64>())
                .collect();
            visible.add_to_fields(&dv);
            hidden.add_to_fields(&dh);
            let w = DMatrix::from_fn(nv, nh, |i, j| rbm.weights()[(i, j)] + dw(i, j));
            Rbm::new(visible, hidden, w).unwrap()
        };
        assert!(bits(&seq) == bits(&plain(false)));
        assert!(bits(&seq) != bits(&plain(true)));
    }

    #[test]
    fn independent_models_have_exact_log_z() {
        let rbm = Rbm::new(
            Bernoulli::new(vec![0.3, -1.0]),
            Gaussian::new(vec![2.0], vec![0.5]).unwrap(),
            DMatrix::zeros(2, 1),
        )
        .unwrap();
        let z = independent_log_partition(&rbm).unwrap();
        let e = exact::log_partition_by_visible(&rbm, 1.0, Par::Seq).unwrap();
        assert!((z - e).abs() < 1e-12, "{z} vs {e}");
        let coupled = initial_model(
            Bernoulli::<f64>::zeros(2),
            Bernoulli::zeros(1),
            None,
            0.1,
            1,
        )
        .unwrap();
        assert!(independent_log_partition(&coupled).is_none());
        assert!(
            initial_model(
                Bernoulli::<f64>::zeros(2),
                Bernoulli::zeros(1),
                None,
                -1.0,
                1
            )
            .is_err()
        );
    }
}

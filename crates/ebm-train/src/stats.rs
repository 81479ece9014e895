//! Sufficient statistics and the log-likelihood gradient, written once for every pair of
//! layers through [`Layer::energy_gradient`], [`Layer::expected_energy_gradient`] and
//! [`Layer::mean_in_place`].

use ebm_core::linalg::{MatRef, matmul};
use ebm_core::{CHAIN_CHUNK, Par, Scalar};
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Visible rows per block of the \\(\langle v h^\top\rangle\\) product: each block is one
/// matrix product over all chains, computed by one task, so results do not depend on the
/// number of threads. Blocks of visible rows pack only their rows of the (large) visible batch;
/// 64 rows was fastest at 784 x 200 with 2000 chains (5.1 ms against 6.5 ms for the former
/// blocks of 16 hidden units, 2 threads).
const VISIBLE_BLOCK: usize = 64;

/// Weighted averages, over a batch of visible configurations \\(v_j\\) with weights \\(w_j\\)
/// (normalised to sum to 1), of the sufficient statistics of an RBM
/// \\(E(v, h) = U_V(v) + U_H(h) - v^\top W h\\), **with the hidden layer averaged out exactly**
/// (Rao–Blackwellised: \\(h\\) enters only through \\(\mathbb E[h \mid v]\\), computed from the
/// current \\(v\\), so a stale hidden state can never leak in; peer bug rbms #31):
///
/// - `visible_hidden` \\(= \sum_j w_j\, v_j\, \mathbb E[h \mid v_j]^\top\\), `V::width() x H::width()`;
/// - `visible_mean` \\(= \sum_j w_j v_j\\), `hidden_mean` \\(= \sum_j w_j \mathbb E[h \mid v_j]\\);
/// - `visible_statistics` \\(= \sum_j w_j\, \partial U_V(v_j)/\partial\phi_V\\)
///   ([`Layer::energy_gradient`]);
/// - `hidden_statistics` \\(= \sum_j w_j\, \mathbb E[\partial U_H/\partial\phi_H \mid v_j]\\)
///   ([`Layer::expected_energy_gradient`] at the inputs \\(W^\top v_j\\)).
///
/// All at \\(\beta = 1\\). Computed with two matrix products per chunk of chains plus one fused
/// pass, in parallel over chunks and blocks whose boundaries do not depend on the thread count
/// (so [`Par::Seq`] and [`Par::Rayon`] give bit-identical moments); statistics are accumulated in
/// `f64`, the products in the model's scalar type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    /// \\(\langle v\, \mathbb E[h \mid v]^\top\rangle\\), `V::width() x H::width()`.
    pub visible_hidden: DMatrix<f64>,
    /// \\(\langle v\rangle\\), one value per visible value.
    pub visible_mean: Vec<f64>,
    /// \\(\langle \mathbb E[h \mid v]\rangle\\), one value per hidden value.
    pub hidden_mean: Vec<f64>,
    /// \\(\langle \partial U_V / \partial \phi_V\rangle\\), in the order of the visible layer's
    /// [`Layer::tensors`].
    pub visible_statistics: Vec<f64>,
    /// \\(\langle \mathbb E[\partial U_H / \partial \phi_H \mid v]\rangle\\), in the order of the
    /// hidden layer's [`Layer::tensors`].
    pub hidden_statistics: Vec<f64>,
}

/// Per-chunk partial sums of [`Moments`] (reduced in chunk order).
#[derive(Clone)]
struct Partial {
    visible_statistics: Vec<f64>,
    hidden_statistics: Vec<f64>,
    visible_mean: Vec<f64>,
    hidden_mean: Vec<f64>,
}

fn add_scaled(acc: &mut [f64], w: f64, x: &[f64]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a += w * b;
    }
}

impl Moments {
    /// The moments of the visible configurations `v` (`V::width() x n`, one per column) under
    /// `rbm`, weighted by `weights` (any non-negative values with a positive sum, normalised
    /// here) or uniformly when `None`.
    ///
    /// # Panics
    /// If `v` does not have `V::width()` rows or no column, if the weights do not match the
    /// columns or sum to zero, or if a layer is empty.
    pub fn of_visible<V, H>(
        rbm: &Rbm<V, H>,
        v: &DMatrix<V::Scalar>,
        weights: Option<&[f64]>,
        par: Par,
    ) -> Self
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        let (visible, hidden) = (rbm.visible(), rbm.hidden());
        let (nv, nh, n) = (visible.width(), hidden.width(), v.ncols());
        assert_eq!(v.nrows(), nv, "Moments::of_visible: visible width");
        assert!(
            n > 0 && nv > 0 && nh > 0,
            "Moments::of_visible: empty batch or layer"
        );
        let w: Vec<f64> = match weights {
            None => vec![1.0 / n as f64; n],
            Some(w) => {
                assert_eq!(w.len(), n, "Moments::of_visible: one weight per column");
                let total: f64 = w.iter().sum();
                assert!(total > 0.0, "Moments::of_visible: weights sum to {total}");
                w.iter().map(|x| x / total).collect()
            }
        };
        let (pv, ph) = (visible.n_parameters(), hidden.n_parameters());
        let zero = Partial {
            visible_statistics: vec![0.0; pv],
            hidden_statistics: vec![0.0; ph],
            visible_mean: vec![0.0; nv],
            hidden_mean: vec![0.0; nh],
        };
        let n_chunks = n.div_ceil(CHAIN_CHUNK);
        let mut partials = vec![zero; n_chunks];
        // Hidden means, each column scaled by its chain's weight, for the product.
        let mut means = vec![V::Scalar::from_f64(0.0); nh * n];
        let vs = v.as_slice();
        let weights_t = MatRef::col_major(rbm.weights().as_slice(), nv, nh).t();
        let chunk = |c: usize, h: &mut [V::Scalar], acc: &mut Partial| {
            let first = c * CHAIN_CHUNK;
            let cols = h.len() / nh;
            let vc = &vs[first * nv..(first + cols) * nv];
            matmul(weights_t, MatRef::col_major(vc, nv, cols), h);
            let mut hbuf = vec![0.0; ph];
            let mut vbuf = vec![0.0; pv];
            for k in 0..cols {
                let wk = w[first + k];
                let inputs = &mut h[k * nh..(k + 1) * nh];
                hidden.expected_energy_gradient(inputs, 1.0, &mut hbuf);
                add_scaled(&mut acc.hidden_statistics, wk, &hbuf);
                hidden.mean_in_place(inputs, 1.0);
                let scale = V::Scalar::from_f64(wk);
                for (a, x) in acc.hidden_mean.iter_mut().zip(inputs.iter_mut()) {
                    *a += wk * x.as_f64();
                    *x = *x * scale;
                }
                let vk = &vc[k * nv..(k + 1) * nv];
                visible.energy_gradient(vk, &mut vbuf);
                add_scaled(&mut acc.visible_statistics, wk, &vbuf);
                for (a, x) in acc.visible_mean.iter_mut().zip(vk) {
                    *a += wk * x.as_f64();
                }
            }
        };
        let step = nh * CHAIN_CHUNK;
        match par {
            Par::Seq => means
                .chunks_mut(step)
                .zip(partials.iter_mut())
                .enumerate()
                .for_each(|(c, (h, acc))| chunk(c, h, acc)),
            Par::Rayon => means
                .par_chunks_mut(step)
                .zip(partials.par_iter_mut())
                .enumerate()
                .for_each(|(c, (h, acc))| chunk(c, h, acc)),
        }
        let mut total = partials[0].clone();
        for p in &partials[1..] {
            add_scaled(&mut total.visible_statistics, 1.0, &p.visible_statistics);
            add_scaled(&mut total.hidden_statistics, 1.0, &p.hidden_statistics);
            add_scaled(&mut total.visible_mean, 1.0, &p.visible_mean);
            add_scaled(&mut total.hidden_mean, 1.0, &p.hidden_mean);
        }
        // <v h^T> = V (H diag(w))^T, by blocks of visible rows over all chains: each block
        // multiplies its rows of V by the whole (transposed, not copied) matrix of weighted
        // hidden means. Blocks are fixed in size, so the result does not depend on threads.
        let lhs = MatRef::col_major(vs, nv, n);
        let rhs = MatRef::col_major(&means, nh, n).t();
        let mut vh = vec![V::Scalar::from_f64(0.0); nv * nh];
        let block = |b: usize, out: &mut [V::Scalar]| {
            let rows = out.len() / nh;
            matmul(lhs.rows_range(b * VISIBLE_BLOCK, rows), rhs, out);
        };
        match par {
            Par::Seq => vh
                .chunks_mut(VISIBLE_BLOCK * nh)
                .enumerate()
                .for_each(|(b, o)| block(b, o)),
            Par::Rayon => vh
                .par_chunks_mut(VISIBLE_BLOCK * nh)
                .enumerate()
                .for_each(|(b, o)| block(b, o)),
        }
        // Block b holds rows b * VISIBLE_BLOCK .. of <v h^T>, column-major with its own height.
        let visible_hidden = DMatrix::from_fn(nv, nh, |i, j| {
            let (b, r) = (i / VISIBLE_BLOCK, i % VISIBLE_BLOCK);
            let rows = VISIBLE_BLOCK.min(nv - b * VISIBLE_BLOCK);
            vh[b * VISIBLE_BLOCK * nh + j * rows + r].as_f64()
        });
        Moments {
            visible_hidden,
            visible_mean: total.visible_mean,
            hidden_mean: total.hidden_mean,
            visible_statistics: total.visible_statistics,
            hidden_statistics: total.hidden_statistics,
        }
    }
}

/// The centring offsets \\((a, b)\\) of a centred gradient: the data means of the visible
/// values and of the hidden conditional means.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Centre {
    /// \\(a = \langle v\rangle_{\mathcal D}\\).
    pub visible: Vec<f64>,
    /// \\(b = \langle \mathbb E[h \mid v]\rangle_{\mathcal D}\\).
    pub hidden: Vec<f64>,
}

/// An estimate of the gradient of the mean log-likelihood
/// \\(\mathcal L = \langle -F(v)\rangle_{\mathcal D} - \log Z\\):
///
/// \\[ \frac{\partial\mathcal L}{\partial W} = \langle v h^\top\rangle_{\mathcal D} - \langle v h^\top\rangle_{\text{model}},
/// \qquad \frac{\partial\mathcal L}{\partial\phi} = -\Big\langle\frac{\partial U}{\partial\phi}\Big\rangle_{\mathcal D}
/// + \Big\langle\frac{\partial U}{\partial\phi}\Big\rangle_{\text{model}} \\]
///
/// for the parameters \\(\phi\\) of each layer (Béreux et al., *Fast training and sampling of RBMs*, in the
/// layers' own sufficient statistics; the model average is over the negative-phase samples).
///
/// **Centred** (Montavon & Müller; the PTT paper), the weight gradient is taken in the
/// parametrisation \\(-(v - a)^\top W (h - b)\\) with \\(a, b\\) the data means ([`Centre`]):
/// \\(\partial\mathcal L/\partial W = \mathrm{Cov}_{\mathcal D}(v, h) - \langle (v - a)(h - b)^\top\rangle_{\text{model}}\\).
/// A step \\(\Delta W\\) in that parametrisation is the same step on \\(W\\) together with the
/// field shifts \\(-\Delta W\, b\\) (visible) and \\(-\Delta W^\top a\\) (hidden), which the
/// trainer applies through [`ebm_models::LinearFields`]. For Bernoulli layers this is the
/// reference code's \\(\nabla\theta = \bar v - \langle v\rangle - \nabla W \bar h\\).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gradient {
    /// Gradient with respect to the weights (centred when `centre` is set).
    pub weights: DMatrix<f64>,
    /// Gradient with respect to the visible layer's parameters (order of its tensors).
    pub visible: Vec<f64>,
    /// Gradient with respect to the hidden layer's parameters.
    pub hidden: Vec<f64>,
    /// The centring offsets, for a centred gradient.
    pub centre: Option<Centre>,
}

impl Gradient {
    /// The gradient from the data moments and the model (negative-phase) moments, centred on
    /// the data means when `centred`.
    pub fn from_moments(data: &Moments, model: &Moments, centred: bool) -> Self {
        let mut weights = &data.visible_hidden - &model.visible_hidden;
        let centre = centred.then(|| {
            let (a, b) = (&data.visible_mean, &data.hidden_mean);
            // C = <v h^T> - a <h>^T - <v> b^T + a b^T, data minus model; the data terms reduce
            // to -a b^T, the model terms to -(a <h>_M^T + <v>_M b^T - a b^T).
            let (nv, nh) = weights.shape();
            for j in 0..nh {
                for i in 0..nv {
                    let data_c = -a[i] * b[j];
                    let model_c =
                        -a[i] * model.hidden_mean[j] - model.visible_mean[i] * b[j] + a[i] * b[j];
                    weights[(i, j)] += data_c - model_c;
                }
            }
            Centre {
                visible: a.clone(),
                hidden: b.clone(),
            }
        });
        let diff = |d: &[f64], m: &[f64]| d.iter().zip(m).map(|(x, y)| y - x).collect();
        Self {
            weights,
            visible: diff(&data.visible_statistics, &model.visible_statistics),
            hidden: diff(&data.hidden_statistics, &model.hidden_statistics),
            centre,
        }
    }

    /// The Euclidean norm of all components.
    pub fn norm(&self) -> f64 {
        let s: f64 = self.weights.iter().map(|x| x * x).sum::<f64>()
            + self.visible.iter().map(|x| x * x).sum::<f64>()
            + self.hidden.iter().map(|x| x * x).sum::<f64>();
        s.sqrt()
    }

    /// Number of components: weights, then visible, then hidden parameters (the order of
    /// [`Gradient::flat`]).
    pub fn len(&self) -> usize {
        self.weights.len() + self.visible.len() + self.hidden.len()
    }

    /// `true` for a model without parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All components in one vector: the weights column-major, then the visible and hidden
    /// parameters in the order of their layers' tensors.
    pub fn flat(&self) -> Vec<f64> {
        let mut g = Vec::with_capacity(self.len());
        g.extend_from_slice(self.weights.as_slice());
        g.extend_from_slice(&self.visible);
        g.extend_from_slice(&self.hidden);
        g
    }
}

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

/// The sums of one block of [`CHAIN_CHUNK`] chains, before they are added to those of the
/// other blocks. Laid out as one vector of `f64` ([`Moments::block_sums`]): the
/// \\(\langle v h^\top\rangle\\) terms by blocks of [`VISIBLE_BLOCK`] visible rows (block `b`
/// column-major with its own height), then the visible means, hidden means, visible and hidden
/// statistics.
struct Layout {
    nv: usize,
    nh: usize,
    pv: usize,
    ph: usize,
}

impl Layout {
    fn of<V: Layer, H: Layer<Scalar = V::Scalar>>(rbm: &Rbm<V, H>) -> Self {
        Self {
            nv: rbm.visible().width(),
            nh: rbm.hidden().width(),
            pv: rbm.visible().n_parameters(),
            ph: rbm.hidden().n_parameters(),
        }
    }

    /// Words of one block's sums.
    fn len(&self) -> usize {
        self.nv * self.nh + self.nv + self.nh + self.pv + self.ph
    }

    /// Words of a block's sums after its \\(\langle v h^\top\rangle\\) terms: the means and
    /// statistics.
    fn statistics_len(&self) -> usize {
        self.nv + self.nh + self.pv + self.ph
    }

    /// The block's sums split into (vh, visible mean, hidden mean, visible and hidden
    /// statistics).
    #[allow(clippy::type_complexity)]
    fn split<'a>(
        &self,
        x: &'a mut [f64],
    ) -> (
        &'a mut [f64],
        &'a mut [f64],
        &'a mut [f64],
        &'a mut [f64],
        &'a mut [f64],
    ) {
        let (vh, rest) = x.split_at_mut(self.nv * self.nh);
        let (vm, hm, vs, hs) = self.split_statistics(rest);
        (vh, vm, hm, vs, hs)
    }

    /// The means and statistics of a block's sums ([`Layout::statistics_len`] words) split
    /// into (visible mean, hidden mean, visible and hidden statistics).
    #[allow(clippy::type_complexity)]
    fn split_statistics<'a>(
        &self,
        x: &'a mut [f64],
    ) -> (&'a mut [f64], &'a mut [f64], &'a mut [f64], &'a mut [f64]) {
        let (vm, rest) = x.split_at_mut(self.nv);
        let (hm, rest) = rest.split_at_mut(self.nh);
        let (vs, hs) = rest.split_at_mut(self.pv);
        (vm, hm, vs, hs)
    }

    /// The moments from sums added over all blocks.
    fn moments(&self, mut total: Vec<f64>) -> Moments {
        let (vh, vm, hm, vs, hs) = self.split(&mut total);
        let (nv, nh) = (self.nv, self.nh);
        // Each block of visible rows is column-major with its own height: one copy per
        // block and hidden value.
        let mut visible_hidden = DMatrix::zeros(nv, nh);
        let out = visible_hidden.as_mut_slice();
        for (b, block) in vh.chunks(VISIBLE_BLOCK * nh).enumerate() {
            let rows = block.len() / nh;
            for (j, column) in block.chunks(rows).enumerate() {
                let first = j * nv + b * VISIBLE_BLOCK;
                out[first..first + rows].copy_from_slice(column);
            }
        }
        Moments {
            visible_hidden,
            visible_mean: vm.to_vec(),
            hidden_mean: hm.to_vec(),
            visible_statistics: vs.to_vec(),
            hidden_statistics: hs.to_vec(),
        }
    }
}

#[inline(always)]
fn add_scaled(acc: &mut [f64], w: f64, x: &[f64]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a += w * b;
    }
}

/// The chain weights normalised to sum to 1 (uniform for `None`), in chain order.
pub(crate) fn normalised(weights: Option<&[f64]>, n: usize) -> Vec<f64> {
    match weights {
        None => vec![1.0 / n as f64; n],
        Some(w) => {
            assert_eq!(w.len(), n, "Moments::of_visible: one weight per column");
            let total: f64 = w.iter().sum();
            assert!(total > 0.0, "Moments::of_visible: weights sum to {total}");
            w.iter().map(|x| x / total).collect()
        }
    }
}

/// One block of chains (`vc`, whole columns of `V::width()` values, at most [`CHAIN_CHUNK`]),
/// weighted by `w`: adds its means and statistics to `stats` (the words of a block's sums
/// after its \\(\langle v h^\top\rangle\\) terms, [`Layout::split_statistics`]) and leaves in
/// `h` its hidden conditional means, each scaled by its chain's weight, for the
/// \\(\langle v h^\top\rangle\\) product.
fn block_statistics<V, H>(
    rbm: &Rbm<V, H>,
    layout: &Layout,
    vc: &[V::Scalar],
    w: &[f64],
    h: &mut [V::Scalar],
    stats: &mut [f64],
) where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    let (nv, nh) = (layout.nv, layout.nh);
    let cols = w.len();
    let weights_t = MatRef::col_major(rbm.weights().as_slice(), nv, nh).t();
    matmul(weights_t, MatRef::col_major(vc, nv, cols), h);
    // The elementwise pass on the chunk while its product is in cache, compiled for the
    // wider vector instructions (bit for bit the same numbers).
    ebm_core::simd::dispatch(ChainStatistics {
        rbm,
        layout,
        vc,
        w,
        h,
        stats,
    });
}

/// The pass of [`block_statistics`] after its product: for every chain in order, its
/// weighted statistics and means are added to the block's sums, and its hidden inputs are
/// replaced by its weighted hidden conditional means.
struct ChainStatistics<'a, V: Layer, H: Layer<Scalar = V::Scalar>> {
    rbm: &'a Rbm<V, H>,
    layout: &'a Layout,
    vc: &'a [V::Scalar],
    w: &'a [f64],
    h: &'a mut [V::Scalar],
    stats: &'a mut [f64],
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> ebm_core::simd::Pass for ChainStatistics<'_, V, H> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let (visible, hidden) = (self.rbm.visible(), self.rbm.hidden());
        let (nv, nh) = (self.layout.nv, self.layout.nh);
        let (visible_mean, hidden_mean, visible_statistics, hidden_statistics) =
            self.layout.split_statistics(self.stats);
        let mut hbuf = vec![0.0; self.layout.ph];
        let mut vbuf = vec![0.0; self.layout.pv];
        for (k, &wk) in self.w.iter().enumerate() {
            let inputs = &mut self.h[k * nh..(k + 1) * nh];
            hidden.expected_energy_gradient(inputs, 1.0, &mut hbuf);
            add_scaled(hidden_statistics, wk, &hbuf);
            hidden.mean_in_place(inputs, 1.0);
            let scale = V::Scalar::from_f64(wk);
            for (a, x) in hidden_mean.iter_mut().zip(inputs.iter_mut()) {
                *a += wk * x.as_f64();
                *x = *x * scale;
            }
            let vk = &self.vc[k * nv..(k + 1) * nv];
            visible.energy_gradient(vk, &mut vbuf);
            add_scaled(visible_statistics, wk, &vbuf);
            for (a, x) in visible_mean.iter_mut().zip(vk) {
                *a += wk * x.as_f64();
            }
        }
    }
}

/// Adds to `acc` (rows `b * VISIBLE_BLOCK ..` of one block's \\(\langle v h^\top\rangle\\),
/// column-major with its own height) the product of those rows of the block of chains `vc` by
/// its weighted hidden means `h` (transposed), computed in `scratch` in the model's scalar
/// type. Every path to the moments forms exactly these products, so their sums agree bit for
/// bit however the blocks of chains are distributed.
fn add_block_product<F: Scalar>(
    b: usize,
    (nv, nh): (usize, usize),
    vc: &[F],
    h: &[F],
    scratch: &mut [F],
    acc: &mut [f64],
) {
    let (rows, cols) = (acc.len() / nh, h.len() / nh);
    let lhs = MatRef::col_major(vc, nv, cols).rows_range(b * VISIBLE_BLOCK, rows);
    let rhs = MatRef::col_major(h, nh, cols).t();
    let out = &mut scratch[..rows * nh];
    matmul(lhs, rhs, out);
    ebm_core::simd::dispatch(AddWidened { acc, x: out });
}

/// `acc += x`, each value of `x` widened to `f64`, compiled for the wider vector instructions.
struct AddWidened<'a, F> {
    acc: &'a mut [f64],
    x: &'a [F],
}

impl<F: Scalar> ebm_core::simd::Pass for AddWidened<'_, F> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        for (a, x) in self.acc.iter_mut().zip(self.x) {
            *a += x.as_f64();
        }
    }
}

impl Moments {
    /// The moments of the visible configurations `v` (`V::width() x n`, one per column) under
    /// `rbm`, weighted by `weights` (any non-negative values with a positive sum, normalised
    /// here) or uniformly when `None`.
    ///
    /// Every sum runs over blocks of [`CHAIN_CHUNK`] chains in block order: each block's
    /// terms are summed first (its part of \\(\langle v h^\top\rangle\\) by one matrix product
    /// per 64 visible rows, converted to `f64`), then the blocks' sums are added
    /// one after the other, starting from zero. The result is the same for any thread count,
    /// and equal bit for bit to [`Moments::from_block_sums`] of the blocks' sums computed
    /// anywhere ([`Moments::block_sums`], e.g. by the processes of a data-parallel run).
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
        let layout = Layout::of(rbm);
        let (nv, nh, n) = (layout.nv, layout.nh, v.ncols());
        assert_eq!(v.nrows(), nv, "Moments::of_visible: visible width");
        assert!(
            n > 0 && nv > 0 && nh > 0,
            "Moments::of_visible: empty batch or layer"
        );
        let w = normalised(weights, n);
        let n_chunks = n.div_ceil(CHAIN_CHUNK);
        // Each block's means and statistics (its <v h^T> terms are summed below, by rows),
        // and its weighted hidden means.
        let stats_len = layout.statistics_len();
        let mut blocks = vec![0.0; n_chunks * stats_len];
        let mut means = vec![V::Scalar::from_f64(0.0); nh * n];
        let vs = v.as_slice();
        let statistics = |c: usize, h: &mut [V::Scalar], acc: &mut [f64]| {
            let cols = h.len() / nh;
            let first = c * CHAIN_CHUNK;
            let vc = &vs[first * nv..(first + cols) * nv];
            block_statistics(rbm, &layout, vc, &w[first..first + cols], h, acc);
        };
        let step = nh * CHAIN_CHUNK;
        match par {
            Par::Seq => means
                .chunks_mut(step)
                .zip(blocks.chunks_mut(stats_len))
                .enumerate()
                .for_each(|(c, (h, acc))| statistics(c, h, acc)),
            Par::Rayon => means
                .par_chunks_mut(step)
                .zip(blocks.par_chunks_mut(stats_len))
                .enumerate()
                .for_each(|(c, (h, acc))| statistics(c, h, acc)),
        }
        let mut total = vec![0.0; layout.len()];
        for block in blocks.chunks(stats_len) {
            add_scaled(&mut total[nv * nh..], 1.0, block);
        }
        // <v h^T> by blocks of visible rows, each over the blocks of chains in order: the
        // same products and the same order of additions as `from_block_sums`, without
        // holding a matrix per block of chains.
        let row_block = |b: usize, acc: &mut [f64]| {
            let mut scratch = vec![V::Scalar::from_f64(0.0); VISIBLE_BLOCK * nh];
            for c in 0..n_chunks {
                let first = c * CHAIN_CHUNK;
                let cols = CHAIN_CHUNK.min(n - first);
                let vc = &vs[first * nv..(first + cols) * nv];
                let h = &means[first * nh..(first + cols) * nh];
                add_block_product(b, (nv, nh), vc, h, &mut scratch, acc);
            }
        };
        let vh = &mut total[..nv * nh];
        match par {
            Par::Seq => vh
                .chunks_mut(VISIBLE_BLOCK * nh)
                .enumerate()
                .for_each(|(b, o)| row_block(b, o)),
            Par::Rayon => vh
                .par_chunks_mut(VISIBLE_BLOCK * nh)
                .enumerate()
                .for_each(|(b, o)| row_block(b, o)),
        }
        layout.moments(total)
    }

    /// The sums of every block of [`CHAIN_CHUNK`] chains of `v` (`V::width() x n`, one chain
    /// per column) weighted by `weights` (one per chain, **already normalised** over the whole
    /// batch these chains are part of), one block after the other: the sums that
    /// [`Moments::of_visible`] adds, for a process that holds only some blocks of a batch
    /// (the first block of `v` must start a block of the whole batch). Words per block:
    /// \\(n_v n_h + n_v + n_h\\) plus the layers' parameter counts. An empty `v` has no
    /// blocks.
    ///
    /// # Panics
    /// If `v` does not have `V::width()` rows, or the weights do not match its columns.
    pub fn block_sums<V, H>(
        rbm: &Rbm<V, H>,
        v: &DMatrix<V::Scalar>,
        weights: &[f64],
        par: Par,
    ) -> Vec<f64>
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        let layout = Layout::of(rbm);
        let (nv, nh, n) = (layout.nv, layout.nh, v.ncols());
        assert_eq!(v.nrows(), nv, "Moments::block_sums: visible width");
        assert_eq!(
            weights.len(),
            n,
            "Moments::block_sums: one weight per chain"
        );
        let mut blocks = vec![0.0; n.div_ceil(CHAIN_CHUNK) * layout.len()];
        let vs = v.as_slice();
        let block = |c: usize, acc: &mut [f64]| {
            let first = c * CHAIN_CHUNK;
            let cols = CHAIN_CHUNK.min(n - first);
            let vc = &vs[first * nv..(first + cols) * nv];
            let mut h = vec![V::Scalar::from_f64(0.0); nh * cols];
            let (vh, stats) = acc.split_at_mut(nv * nh);
            block_statistics(
                rbm,
                &layout,
                vc,
                &weights[first..first + cols],
                &mut h,
                stats,
            );
            let mut scratch = vec![V::Scalar::from_f64(0.0); VISIBLE_BLOCK * nh];
            for (b, out) in vh.chunks_mut(VISIBLE_BLOCK * nh).enumerate() {
                add_block_product(b, (nv, nh), vc, &h, &mut scratch, out);
            }
        };
        match par {
            Par::Seq => blocks
                .chunks_mut(layout.len())
                .enumerate()
                .for_each(|(c, acc)| block(c, acc)),
            Par::Rayon => blocks
                .par_chunks_mut(layout.len())
                .enumerate()
                .for_each(|(c, acc)| block(c, acc)),
        }
        blocks
    }

    /// The moments from the sums of every block of a batch, in block order
    /// ([`Moments::block_sums`] of consecutive parts of the batch, joined): the blocks' sums
    /// added one after the other, starting from zero, as [`Moments::of_visible`] adds them.
    ///
    /// # Panics
    /// If `sums` is not a whole number of blocks of `rbm`'s shape, or holds none.
    pub fn from_block_sums<V, H>(rbm: &Rbm<V, H>, sums: &[f64]) -> Self
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        let layout = Layout::of(rbm);
        assert!(
            !sums.is_empty() && sums.len().is_multiple_of(layout.len()),
            "Moments::from_block_sums: {} words are not whole blocks of {}",
            sums.len(),
            layout.len()
        );
        let mut total = vec![0.0; layout.len()];
        for block in sums.chunks(layout.len()) {
            add_scaled(&mut total, 1.0, block);
        }
        layout.moments(total)
    }
}

impl Moments {
    /// Every value, in one vector: \\(\langle v h^\top\rangle\\) column-major, the visible and
    /// hidden means, the visible and hidden statistics (for a message between processes).
    pub fn to_words(&self) -> Vec<f64> {
        let mut x = self.visible_hidden.as_slice().to_vec();
        x.extend(&self.visible_mean);
        x.extend(&self.hidden_mean);
        x.extend(&self.visible_statistics);
        x.extend(&self.hidden_statistics);
        x
    }

    /// The moments of a model shaped like `rbm` from [`Moments::to_words`].
    ///
    /// # Panics
    /// If `words` does not hold moments of that shape.
    pub fn from_words<V, H>(rbm: &Rbm<V, H>, words: &[f64]) -> Self
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        let l = Layout::of(rbm);
        assert_eq!(
            words.len(),
            l.len(),
            "Moments::from_words: moments of this shape"
        );
        let (vh, rest) = words.split_at(l.nv * l.nh);
        let (vm, rest) = rest.split_at(l.nv);
        let (hm, rest) = rest.split_at(l.nh);
        let (vs, hs) = rest.split_at(l.pv);
        Moments {
            visible_hidden: DMatrix::from_column_slice(l.nv, l.nh, vh),
            visible_mean: vm.to_vec(),
            hidden_mean: hm.to_vec(),
            visible_statistics: vs.to_vec(),
            hidden_statistics: hs.to_vec(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_models::{Bernoulli, Gaussian};

    /// The per-chain statistics pass of a block, run through `ebm_core::simd::dispatch`
    /// (compiled for AVX2 on a processor that has it), gives the numbers of the same pass
    /// compiled for the baseline, bit for bit (f32 Bernoulli layers: the exponentials of the
    /// conditional means in both precisions); the same terms added in another order (the
    /// chains reversed, a negative control) give other sums.
    #[test]
    fn statistics_pass_is_bit_identical_on_the_wider_instructions() {
        let (nv, nh, cols) = (53, 37, 128);
        let rbm = Rbm::new(
            Bernoulli::<f32>::new((0..nv).map(|i| 0.03 * i as f32 - 0.7).collect()),
            Bernoulli::<f32>::new((0..nh).map(|j| 0.1 * j as f32 - 1.4).collect()),
            DMatrix::from_fn(nv, nh, |i, j| 0.3 * (((i * 7 + j * 3) % 11) as f32 - 5.0)),
        )
        .unwrap();
        let layout = Layout::of(&rbm);
        let vc: Vec<f32> = (0..nv * cols)
            .map(|k| ((k * 13) % 3 == 0) as u8 as f32)
            .collect();
        let inputs: Vec<f32> = (0..nh * cols)
            .map(|k| ((k * 29) % 101) as f32 / 9.0 - 5.5)
            .collect();
        let w: Vec<f64> = (0..cols).map(|k| (1 + k % 7) as f64 / 500.0).collect();
        let run = |(vc, inputs, w): (&[f32], &[f32], &[f64]), wide: bool| {
            let mut h = inputs.to_vec();
            let mut stats = vec![0.0; layout.statistics_len()];
            let pass = ChainStatistics {
                rbm: &rbm,
                layout: &layout,
                vc,
                w,
                h: &mut h,
                stats: &mut stats,
            };
            if wide {
                ebm_core::simd::dispatch(pass);
            } else {
                ebm_core::simd::Pass::run(pass);
            }
            let bits: Vec<u64> = stats.iter().map(|v| v.to_bits()).collect();
            (bits, h)
        };
        let (stats, h) = run((&vc, &inputs, &w), false);
        let (wide_stats, wide_h) = run((&vc, &inputs, &w), true);
        assert!(wide_stats == stats);
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert!(bits(&wide_h) == bits(&h));
        // The negative control: the chains in reverse order.
        let reversed = |x: &[f32], rows: usize| -> Vec<f32> {
            x.chunks(rows).rev().flatten().copied().collect()
        };
        let w_reversed: Vec<f64> = w.iter().rev().copied().collect();
        let (vr, ir) = (reversed(&vc, nv), reversed(&inputs, nh));
        let (reversed_stats, reversed_h) = run((&vr, &ir, &w_reversed), true);
        assert!(reversed_stats != stats);
        // The same hidden means, by chain: only the order of the sums changed.
        assert!(bits(&reversed(&reversed_h, nh)) == bits(&h));
    }

    /// `of_visible` adds the same block sums in the same order as `from_block_sums` of the
    /// blocks computed in pieces (here 128-aligned pieces of 700 weighted chains, as the
    /// processes of a data-parallel run hold them), so the two agree bit for bit; a piece that
    /// does not start a block (a negative control) forms other products and does not.
    #[test]
    fn block_sums_in_pieces_add_up_to_of_visible_bit_for_bit() {
        let (nv, nh, n) = (70, 9, 700);
        let rbm = Rbm::new(
            Gaussian::new(vec![1.5; nv], vec![0.1; nv]).unwrap(),
            Bernoulli::new((0..nh).map(|j| 0.1 * j as f64 - 0.4).collect()),
            DMatrix::from_fn(nv, nh, |i, j| 0.05 * (((i * 7 + j * 3) % 11) as f64 - 5.0)),
        )
        .unwrap();
        let v = DMatrix::from_fn(nv, n, |i, j| ((i * 13 + j * 29) % 17) as f64 / 7.0 - 1.1);
        let raw: Vec<f64> = (0..n).map(|j| 1.0 + (j % 5) as f64).collect();
        let whole = Moments::of_visible(&rbm, &v, Some(&raw), Par::Rayon);
        assert_eq!(whole, Moments::of_visible(&rbm, &v, Some(&raw), Par::Seq));
        let w = normalised(Some(&raw), n);
        let sums_of = |cuts: &[usize]| {
            let mut sums = Vec::new();
            for p in cuts.windows(2) {
                let piece = v.columns(p[0], p[1] - p[0]).into_owned();
                sums.extend(Moments::block_sums(
                    &rbm,
                    &piece,
                    &w[p[0]..p[1]],
                    Par::Rayon,
                ));
            }
            Moments::from_block_sums(&rbm, &sums)
        };
        for cuts in [&[0, n][..], &[0, 256, n], &[0, 128, 128, 512, n]] {
            assert!(sums_of(cuts) == whole, "pieces {cuts:?}");
        }
        let misaligned = sums_of(&[0, 100, n]);
        assert!(misaligned != whole);
        let close = |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).amax() < 1e-12;
        assert!(close(&misaligned.visible_hidden, &whole.visible_hidden));
    }
}

//! The generic Restricted Boltzmann Machine `Rbm<V, H>`.

use crate::layer::{BinaryLayer, Layer, LinearFields};
use crate::potts::Potts;
use ebm_core::linalg::{MatRef, matmul};
use ebm_core::{
    Chains, ConditionalSampler, EnergyModel, Error, Par, ProductCache, Scalar, for_each_chain_chunk,
};
use nalgebra::DMatrix;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// A Restricted Boltzmann Machine with visible layer `V` and hidden layer `H`:
///
/// \\[ E(v, h) = U_V(v) + U_H(h) - v^\top W h, \qquad
///     p_\beta(v, h) = e^{-\beta E(v, h)} / Z_\beta. \\]
///
/// Tracked on its visible layer, its tempered marginal is \\(p_\beta(v) \propto
/// e^{-F_\beta(v)}\\) with the tempered free energy
///
/// \\[ F_\beta(v) = \beta U_V(v) - \sum_\mu \Gamma^\beta_{H,\mu}\big((W^\top v)_\mu\big), \\]
///
/// which is what [`EnergyModel::energies`] returns. Conditional sampling of a whole batch of
/// chains is one matrix product per chunk of [`ebm_core::CHAIN_CHUNK`] chains followed by one fused pass
/// (input, probability, sample) per layer.
///
/// `W` is stored as a `V::width() x H::width()` column-major matrix.
///
/// An RBM serialises with serde (unit kinds, layer tensors and weights; used by trainer and
/// sampler checkpoints); deserialisation validates like [`Rbm::new`] and the layers'
/// [`Layer::from_tensors`]. Model files for users are written by `ebm-io` (safetensors).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    bound = "",
    into = "RbmRepr<V::Scalar>",
    try_from = "RbmRepr<V::Scalar>"
)]
pub struct Rbm<V: Layer, H: Layer<Scalar = V::Scalar>> {
    visible: V,
    hidden: H,
    weights: DMatrix<V::Scalar>,
}

/// A named tensor: name, shape, row-major values.
type Tensor<N, F> = (N, Vec<usize>, Vec<F>);

/// A named tensor in owned form.
type OwnedTensor<F> = Tensor<String, F>;

/// The serde form of an [`Rbm`]: unit kinds, sizes, each layer's named tensors and the weights.
#[derive(Clone, Serialize, Deserialize)]
#[serde(bound = "")]
struct RbmRepr<F: Scalar> {
    visible_kind: String,
    hidden_kind: String,
    visible_units: usize,
    hidden_units: usize,
    visible: Vec<OwnedTensor<F>>,
    hidden: Vec<OwnedTensor<F>>,
    weights: DMatrix<F>,
}

/// The layer of `n_units` units whose named tensors are `tensors` ([`Layer::from_tensors`],
/// looking each name up in the list).
fn layer_from<L: Layer, N: AsRef<str>>(
    n_units: usize,
    tensors: &[Tensor<N, L::Scalar>],
) -> ebm_core::Result<L> {
    let get = |name: &str| {
        tensors
            .iter()
            .find(|x| x.0.as_ref() == name)
            .map(|x| (x.1.clone(), x.2.clone()))
    };
    L::from_tensors(n_units, &get)
}

fn named<F: Scalar>(t: Vec<crate::layer::NamedTensor<F>>) -> Vec<OwnedTensor<F>> {
    t.into_iter()
        .map(|(name, shape, data)| (name.to_string(), shape, data))
        .collect()
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> From<Rbm<V, H>> for RbmRepr<V::Scalar> {
    fn from(rbm: Rbm<V, H>) -> Self {
        Self {
            visible_kind: V::KIND.into(),
            hidden_kind: H::KIND.into(),
            visible_units: rbm.visible.n_units(),
            hidden_units: rbm.hidden.n_units(),
            visible: named(rbm.visible.tensors()),
            hidden: named(rbm.hidden.tensors()),
            weights: rbm.weights,
        }
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> TryFrom<RbmRepr<V::Scalar>> for Rbm<V, H> {
    type Error = Error;

    fn try_from(r: RbmRepr<V::Scalar>) -> ebm_core::Result<Self> {
        for (side, kind, expected) in [
            ("visible", &r.visible_kind, V::KIND),
            ("hidden", &r.hidden_kind, H::KIND),
        ] {
            if kind != expected {
                return Err(Error::InvalidParameter {
                    name: format!("serialised RBM {side} units"),
                    reason: format!("kind {kind:?}, expected {expected:?}"),
                });
            }
        }
        let visible = layer_from(r.visible_units, &r.visible)?;
        let hidden = layer_from(r.hidden_units, &r.hidden)?;
        Rbm::new(visible, hidden, r.weights)
    }
}

/// A batch of RBM chains: one column per chain for each layer.
///
/// The visible layer is the tracked state; the hidden layer is auxiliary. After a Gibbs sweep
/// (hidden, then visible) each pair of columns `(v_i, h_i)` is a draw from the joint law when
/// the chain was in equilibrium; kernels that move only the visible layer leave `hidden` stale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct RbmChains<F: Scalar> {
    /// `V::width() x n_chains` visible configurations.
    pub visible: DMatrix<F>,
    /// `H::width() x n_chains` hidden configurations.
    pub hidden: DMatrix<F>,
}

impl<F: Scalar> Chains for RbmChains<F> {
    fn n_chains(&self) -> usize {
        self.visible.ncols()
    }

    /// Exchanges both layers of chain `i`.
    fn swap_chain(&mut self, other: &mut Self, i: usize) {
        ebm_core::swap_columns(&mut self.visible, &mut other.visible, i);
        ebm_core::swap_columns(&mut self.hidden, &mut other.hidden, i);
    }

    fn swap_chains_where(&mut self, other: &mut Self, which: &[bool], par: Par) {
        ebm_core::swap_columns_where(&mut self.visible, &mut other.visible, which, par);
        ebm_core::swap_columns_where(&mut self.hidden, &mut other.hidden, which, par);
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> Rbm<V, H> {
    /// Builds an RBM from its layers and a `V::width() x H::width()` weight matrix.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the weights do not match the layers,
    /// [`Error::NonFinite`] if a weight is NaN or infinite.
    pub fn new(visible: V, hidden: H, weights: DMatrix<V::Scalar>) -> ebm_core::Result<Self> {
        let expected = (visible.width(), hidden.width());
        if weights.shape() != expected {
            return Err(Error::ShapeMismatch {
                what: "RBM weights".into(),
                expected: format!(
                    "{}x{} (visible width x hidden width)",
                    expected.0, expected.1
                ),
                got: format!("{}x{}", weights.nrows(), weights.ncols()),
            });
        }
        // Checked in place (the trainer builds a model every update): the same error, index
        // in column-major order, as on a copy widened to f64.
        if let Some(index) = weights.iter().position(|w| !w.as_f64().is_finite()) {
            return Err(Error::NonFinite {
                what: "RBM weights".into(),
                index,
                value: weights.as_slice()[index].as_f64(),
            });
        }
        Ok(Self {
            visible,
            hidden,
            weights,
        })
    }

    /// The visible layer.
    pub fn visible(&self) -> &V {
        &self.visible
    }

    /// The hidden layer.
    pub fn hidden(&self) -> &H {
        &self.hidden
    }

    /// The weights \\(W\\), `V::width() x H::width()`.
    pub fn weights(&self) -> &DMatrix<V::Scalar> {
        &self.weights
    }

    /// The same model with the roles of the layers exchanged (\\(W \to W^\top\\)): the joint
    /// energy is unchanged, \\(E'(h, v) = E(v, h)\\).
    pub fn transposed(&self) -> Rbm<H, V> {
        Rbm {
            visible: self.hidden.clone(),
            hidden: self.visible.clone(),
            weights: self.weights.transpose(),
        }
    }

    /// The linear interpolation \\(\Theta_t = t\,\Theta + (1 - t)\,\Theta_{\text{other}}\\) of every
    /// parameter (weights and every layer tensor). Since the energy is linear in the
    /// parameters, \\(E_{\Theta_t} = t E_\Theta + (1 - t) E_{\Theta_{\text{other}}}\\): at
    /// \\(t = \beta\\) with a reference model this is the bridge \\(p_{\text{ref}}^{1-\beta} e^{-\beta E}\\)
    /// of AIS and PT with reference (Béreux et al., *Fast training and sampling of RBMs*).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the models differ in shape; a layer's error if an
    /// interpolated parameter is invalid (impossible for convex combinations of valid layers of
    /// this workspace).
    pub fn interpolate(&self, other: &Self, t: f64) -> ebm_core::Result<Self> {
        if self.weights.shape() != other.weights.shape() {
            return Err(Error::ShapeMismatch {
                what: "interpolated RBMs".into(),
                expected: format!("{}x{}", self.weights.nrows(), self.weights.ncols()),
                got: format!("{}x{}", other.weights.nrows(), other.weights.ncols()),
            });
        }
        fn mix<L: Layer>(a: &L, b: &L, t: f64) -> ebm_core::Result<L> {
            let tb = b.tensors();
            let mixed: Vec<_> = a
                .tensors()
                .into_iter()
                .map(|(name, shape, va)| {
                    let vb = tb.iter().find(|x| x.0 == name).map(|x| &x.2);
                    let values = va
                        .iter()
                        .enumerate()
                        .map(|(i, x)| {
                            let y = vb.map_or(x.as_f64(), |v| v[i].as_f64());
                            L::Scalar::from_f64(t * x.as_f64() + (1.0 - t) * y)
                        })
                        .collect::<Vec<_>>();
                    (name, shape, values)
                })
                .collect();
            layer_from(a.n_units(), &mixed)
        }
        let weights = self.weights.zip_map(&other.weights, |x, y| {
            V::Scalar::from_f64(t * x.as_f64() + (1.0 - t) * y.as_f64())
        });
        Rbm::new(
            mix(&self.visible, &other.visible, t)?,
            mix(&self.hidden, &other.hidden, t)?,
            weights,
        )
    }

    /// The same model in the floating-point type of `V2` (e.g. an `f64` model as `f32`): every
    /// parameter (weights and each layer tensor) converted to the nearest value of the new
    /// scalar. From `f32` to `f64` the conversion is exact; from `f64` to `f32` each parameter
    /// moves by at most half a unit in the last place (a relative \\(2^{-24}\\)).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `V2` or `H2` is not the unit kind of `V` or `H` (the
    /// scalar is the only thing that changes) or a parameter overflows the new scalar;
    /// otherwise the layers' [`Layer::from_tensors`] errors.
    pub fn to_scalar<V2: Layer, H2: Layer<Scalar = V2::Scalar>>(
        &self,
    ) -> ebm_core::Result<Rbm<V2, H2>> {
        for (side, from, to) in [
            ("visible", V::KIND, V2::KIND),
            ("hidden", H::KIND, H2::KIND),
        ] {
            if from != to {
                return Err(Error::InvalidParameter {
                    name: format!("{side} units"),
                    reason: format!("a change of scalar keeps the unit kind {from:?}, not {to:?}"),
                });
            }
        }
        fn convert<F: Scalar, G: Scalar>(what: &str, x: &[F]) -> ebm_core::Result<Vec<G>> {
            x.iter()
                .map(|v| {
                    let y = G::from_f64(v.as_f64());
                    if y.is_finite() {
                        Ok(y)
                    } else {
                        Err(Error::InvalidParameter {
                            name: what.to_string(),
                            reason: format!("{v} overflows {}", G::NAME),
                        })
                    }
                })
                .collect()
        }
        fn layer<L: Layer, L2: Layer>(a: &L) -> ebm_core::Result<L2> {
            let converted = a
                .tensors()
                .into_iter()
                .map(|(name, shape, values)| Ok((name, shape, convert(name, &values)?)))
                .collect::<ebm_core::Result<Vec<_>>>()?;
            layer_from(a.n_units(), &converted)
        }
        let (nv, nh) = self.weights.shape();
        let weights = convert("RBM weights", self.weights.as_slice())?;
        Rbm::new(
            layer(&self.visible)?,
            layer(&self.hidden)?,
            DMatrix::from_vec(nv, nh, weights),
        )
    }

    /// Takes the model apart into `(visible, hidden, weights)`.
    pub fn into_parts(self) -> (V, H, DMatrix<V::Scalar>) {
        (self.visible, self.hidden, self.weights)
    }

    /// `n_chains` chains with both layers in their default configuration
    /// (see [`Layer::fill_default`]).
    pub fn default_chains(&self, n_chains: usize) -> RbmChains<V::Scalar> {
        let mut visible = DMatrix::zeros(self.visible.width(), n_chains);
        let mut hidden = DMatrix::zeros(self.hidden.width(), n_chains);
        for j in 0..n_chains {
            self.visible
                .fill_default(visible.column_mut(j).as_mut_slice());
            self.hidden
                .fill_default(hidden.column_mut(j).as_mut_slice());
        }
        RbmChains { visible, hidden }
    }

    /// The joint energy \\(E(v, h) = U_V(v) + U_H(h) - v^\top W h\\) of one configuration
    /// (untempered).
    ///
    /// # Panics
    /// If `v` or `h` has the wrong length.
    pub fn joint_energy(&self, v: &[V::Scalar], h: &[V::Scalar]) -> f64 {
        assert_eq!(
            v.len(),
            self.visible.width(),
            "joint_energy: visible length"
        );
        assert_eq!(h.len(), self.hidden.width(), "joint_energy: hidden length");
        let mut coupling = 0.0;
        for (mu, &hm) in h.iter().enumerate() {
            if hm != V::Scalar::from_f64(0.0) {
                let col = self.weights.column(mu);
                let dot: f64 = col
                    .iter()
                    .zip(v)
                    .map(|(w, x)| w.as_f64() * x.as_f64())
                    .sum();
                coupling += dot * hm.as_f64();
            }
        }
        self.visible.energy(v) + self.hidden.energy(h) - coupling
    }

    /// The tempered visible free energies \\(F_\beta(v_i) = \beta U_V(v_i) -
    /// \sum_\mu \Gamma^\beta_{H,\mu}((W^\top v_i)_\mu)\\) of every column of `v`, so that
    /// \\(p_\beta(v) = e^{-F_\beta(v)} / Z_\beta\\).
    ///
    /// # Panics
    /// If `v` does not have `V::width()` rows or `out.len() != v.ncols()`.
    pub fn free_energy_visible(
        &self,
        v: &DMatrix<V::Scalar>,
        beta: f64,
        out: &mut [f64],
        par: Par,
    ) {
        self.free_energies_at(v, &[beta], out, par);
    }

    /// \\(F_{\\beta_j}(v_i)\\) of every column `v_i` of `v` into `out[i * betas.len() + j]`:
    /// one product \\(W^\\top v\\) per chunk of chains, then the cumulant generating function
    /// of the hidden layer at each temperature.
    fn free_energies_at(&self, v: &DMatrix<V::Scalar>, betas: &[f64], out: &mut [f64], par: Par) {
        let mut inputs = vec![V::Scalar::from_f64(0.0); self.hidden.width() * v.ncols()];
        self.free_energies_keeping(v, betas, out, &mut inputs, par);
    }

    /// [`Rbm::free_energies_at`], leaving the hidden inputs \\(W^\top v\\) in `inputs`
    /// (column-major, `H::width()` values per chain), computed per chunk of chains exactly as
    /// the product of [`ConditionalSampler::sample_hidden`].
    fn free_energies_keeping(
        &self,
        v: &DMatrix<V::Scalar>,
        betas: &[f64],
        out: &mut [f64],
        inputs: &mut [V::Scalar],
        par: Par,
    ) {
        let (nv, nh, m) = (self.visible.width(), self.hidden.width(), betas.len());
        assert_eq!(v.nrows(), nv, "free energies: visible width");
        assert_eq!(out.len(), v.ncols() * m, "free energies: output length");
        if m == 0 {
            return;
        }
        if nh == 0 {
            for_each_chain_chunk(par, m, out, &mut vec![(); v.ncols()], |first, o, ids| {
                let vs = &v.as_slice()[first * nv..(first + ids.len()) * nv];
                self.free_energies_from_inputs(vs, &[], betas, o);
            });
            return;
        }
        ebm_core::for_each_chain_chunk2(
            par,
            (nh, inputs),
            (m, out),
            &mut vec![(); v.ncols()],
            |first, inp, o, ids| {
                let cols = ids.len();
                let vs = &v.as_slice()[first * nv..(first + cols) * nv];
                matmul(
                    MatRef::col_major(self.weights.as_slice(), nv, nh).t(),
                    MatRef::col_major(vs, nv, cols),
                    inp,
                );
                self.free_energies_from_inputs(vs, inp, betas, o);
            },
        );
    }

    /// The tempered free energies of the columns `vs` (`cols` chains) from their hidden inputs
    /// `inputs` = \\(W^\top v\\): \\(F_\beta(v) = \beta U_V(v) - \Gamma^\beta_H(W^\top v)\\)
    /// at each temperature, into `out[i * betas.len() + j]`. The one place this arithmetic
    /// lives, so energies from kept inputs are bit-identical to energies with the product
    /// recomputed.
    fn free_energies_from_inputs(
        &self,
        vs: &[V::Scalar],
        inputs: &[V::Scalar],
        betas: &[f64],
        out: &mut [f64],
    ) {
        let (nv, nh, m) = (self.visible.width(), self.hidden.width(), betas.len());
        if m == 0 {
            return;
        }
        // The visible potentials of a block of chains at once (`Layer::energies`: their sums
        // side by side), then each chain's free energies.
        let mut energies = [0.0; ENERGY_BLOCK];
        for (b, o) in out.chunks_mut(ENERGY_BLOCK * m).enumerate() {
            let (first, cols) = (b * ENERGY_BLOCK, o.len() / m);
            let energies = &mut energies[..cols];
            self.visible
                .energies(&vs[first * nv..(first + cols) * nv], energies);
            for ((k, o), &energy) in o.chunks_mut(m).enumerate().zip(energies.iter()) {
                let input = &inputs[(first + k) * nh..(first + k + 1) * nh];
                self.hidden.cgf_at(input, betas, o);
                for (e, &beta) in o.iter_mut().zip(betas) {
                    *e = beta * energy - *e;
                }
            }
        }
    }

    /// The tempered hidden free energies \\(F_\beta(h_i) = \beta U_H(h_i) -
    /// \sum_i \Gamma^\beta_{V,i}((W h)_i)\\) of every column of `h`.
    ///
    /// # Panics
    /// If `h` does not have `H::width()` rows or `out.len() != h.ncols()`.
    pub fn free_energy_hidden(&self, h: &DMatrix<V::Scalar>, beta: f64, out: &mut [f64], par: Par) {
        let mut inputs =
            DMatrix::from_element(self.visible.width(), h.ncols(), V::Scalar::from_f64(0.0));
        self.visible_inputs(h, &mut inputs, par);
        self.free_energy_hidden_from_inputs(h, &inputs, beta, out, par);
    }

    /// The local inputs \\(I = W h_i\\) of the visible units for every column \\(h_i\\) of
    /// `h`, into `out` (`V::width() x n`): the product shared by [`Rbm::free_energy_hidden`]
    /// and the visible conditional, so that a caller who needs both (the exchange of stacked
    /// tempering) computes it once.
    ///
    /// # Panics
    /// On shape mismatch.
    pub fn visible_inputs(&self, h: &DMatrix<V::Scalar>, out: &mut DMatrix<V::Scalar>, par: Par) {
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        assert_eq!(h.nrows(), nh, "visible_inputs: hidden width");
        assert_eq!(out.shape(), (nv, h.ncols()), "visible_inputs: output shape");
        let mut idx = vec![(); h.ncols()];
        for_each_chain_chunk(par, nv, out.as_mut_slice(), &mut idx, |first, inp, ids| {
            let cols = ids.len();
            matmul(
                MatRef::col_major(self.weights.as_slice(), nv, nh),
                MatRef::col_major(&h.as_slice()[first * nh..(first + cols) * nh], nh, cols),
                inp,
            );
        });
    }

    /// The local inputs \\(I = W^\top v_i\\) of the hidden units for every column of `v`,
    /// into `out` (`H::width() x n`).
    ///
    /// # Panics
    /// On shape mismatch.
    pub fn hidden_inputs(&self, v: &DMatrix<V::Scalar>, out: &mut DMatrix<V::Scalar>, par: Par) {
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        assert_eq!(v.nrows(), nv, "hidden_inputs: visible width");
        assert_eq!(out.shape(), (nh, v.ncols()), "hidden_inputs: output shape");
        let mut idx = vec![(); v.ncols()];
        for_each_chain_chunk(par, nh, out.as_mut_slice(), &mut idx, |first, inp, ids| {
            let cols = ids.len();
            matmul(
                MatRef::col_major(self.weights.as_slice(), nv, nh).t(),
                MatRef::col_major(&v.as_slice()[first * nv..(first + cols) * nv], nv, cols),
                inp,
            );
        });
    }

    /// [`Rbm::free_energy_hidden`] from the visible inputs `inputs` \\(= W h\\)
    /// ([`Rbm::visible_inputs`]): \\(F_\beta(h_i) = \beta U_H(h_i) - \sum_i
    /// \Gamma^\beta_{V,i}(I_i)\\).
    ///
    /// # Panics
    /// On shape mismatch.
    pub fn free_energy_hidden_from_inputs(
        &self,
        h: &DMatrix<V::Scalar>,
        inputs: &DMatrix<V::Scalar>,
        beta: f64,
        out: &mut [f64],
        par: Par,
    ) {
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        assert_eq!(h.nrows(), nh, "free_energy_hidden: hidden width");
        assert_eq!(
            inputs.shape(),
            (nv, h.ncols()),
            "free_energy_hidden: inputs shape"
        );
        assert_eq!(out.len(), h.ncols(), "free_energy_hidden: output length");
        let mut idx = vec![(); h.ncols()];
        for_each_chain_chunk(par, 1, out, &mut idx, |first, outs, _| {
            for (k, o) in outs.iter_mut().enumerate() {
                let c = first + k;
                *o = beta * self.hidden.energy(&h.as_slice()[c * nh..(c + 1) * nh])
                    - self
                        .visible
                        .cgf(&inputs.as_slice()[c * nv..(c + 1) * nv], beta);
            }
        });
    }

    /// Draws \\(v_i \sim P_\beta(v \mid h_i)\\) for every chain from the visible inputs
    /// \\(W h_i\\) held in `visible` (e.g. by [`Rbm::visible_inputs`]), which the draws
    /// replace: the sampling pass of [`ConditionalSampler::sample_visible`] without its product.
    /// Chain `i` consumes only `rngs[i]`.
    ///
    /// # Panics
    /// On shape mismatch.
    pub fn sample_visible_from_inputs<R: Rng + Send>(
        &self,
        visible: &mut DMatrix<V::Scalar>,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        let nv = self.visible.width();
        assert_eq!(
            visible.nrows(),
            nv,
            "sample_visible_from_inputs: visible width"
        );
        for_each_chain_chunk(par, nv, visible.as_mut_slice(), rngs, |_, v, r| {
            ebm_core::simd::dispatch(SampleColumns {
                layer: &self.visible,
                columns: v,
                beta,
                rngs: r,
            });
        });
    }

    /// Draws \\(h_i \sim P_\beta(h \mid v_i)\\) for every chain from the hidden inputs
    /// \\(W^\top v_i\\) held in `hidden`, which the draws replace (as
    /// [`Rbm::sample_visible_from_inputs`]).
    ///
    /// # Panics
    /// On shape mismatch.
    pub fn sample_hidden_from_inputs<R: Rng + Send>(
        &self,
        hidden: &mut DMatrix<V::Scalar>,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        let nh = self.hidden.width();
        assert_eq!(
            hidden.nrows(),
            nh,
            "sample_hidden_from_inputs: hidden width"
        );
        for_each_chain_chunk(par, nh, hidden.as_mut_slice(), rngs, |_, h, r| {
            ebm_core::simd::dispatch(SampleColumns {
                layer: &self.hidden,
                columns: h,
                beta,
                rngs: r,
            });
        });
    }

    /// [`ConditionalSampler::sample_visible`], also leaving the visible inputs \\(W h_i\\) of
    /// every chain in `inputs` (`V::width() x n`): each chunk's product is copied while still
    /// in cache, before its sampling pass. The draws are bit for bit those of
    /// [`ConditionalSampler::sample_visible`].
    ///
    /// # Panics
    /// On shape mismatch.
    pub fn sample_visible_keeping_inputs<R: Rng + Send>(
        &self,
        x: &mut RbmChains<V::Scalar>,
        beta: f64,
        rngs: &mut [R],
        inputs: &mut DMatrix<V::Scalar>,
        par: Par,
    ) {
        self.check_visible_half_step(x);
        assert_eq!(
            inputs.shape(),
            x.visible.shape(),
            "sample_visible: inputs shape"
        );
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        let hid = x.hidden.as_slice();
        ebm_core::for_each_chain_chunk2(
            par,
            (nv, x.visible.as_mut_slice()),
            (nv, inputs.as_mut_slice()),
            rngs,
            |first, v, kept, r| {
                let hs = &hid[first * nh..(first + r.len()) * nh];
                self.visible_half_step(hs, v, Some(kept), beta, r);
            },
        );
    }

    /// Checks the shapes of a visible half-step on `x`.
    fn check_visible_half_step(&self, x: &RbmChains<V::Scalar>) {
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        assert_eq!(x.hidden.nrows(), nh, "sample_visible: hidden width");
        assert_eq!(
            x.visible.shape(),
            (nv, x.hidden.ncols()),
            "sample_visible: visible shape"
        );
    }

    /// The visible half-step on one chunk of chains: the product \\(W h\\) of the chunk's
    /// hidden configurations `hs` into `v`, copied into `keep` if given, then the sampling
    /// pass on the chunk's streams.
    fn visible_half_step<R: Rng>(
        &self,
        hs: &[V::Scalar],
        v: &mut [V::Scalar],
        keep: Option<&mut [V::Scalar]>,
        beta: f64,
        rngs: &mut [R],
    ) {
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        matmul(
            MatRef::col_major(self.weights.as_slice(), nv, nh),
            MatRef::col_major(hs, nh, rngs.len()),
            v,
        );
        if let Some(keep) = keep {
            keep.copy_from_slice(v);
        }
        ebm_core::simd::dispatch(SampleColumns {
            layer: &self.visible,
            columns: v,
            beta,
            rngs,
        });
    }

    /// Conditional means \\(E_\beta[h \mid v]\\) for every column of `v`, written into `out`
    /// (`H::width() x n`).
    ///
    /// # Panics
    /// On shape mismatch.
    pub fn hidden_means(
        &self,
        v: &DMatrix<V::Scalar>,
        beta: f64,
        out: &mut DMatrix<V::Scalar>,
        par: Par,
    ) {
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        assert_eq!(v.nrows(), nv, "hidden_means: visible width");
        assert_eq!(out.shape(), (nh, v.ncols()), "hidden_means: output shape");
        let mut idx = vec![(); v.ncols()];
        for_each_chain_chunk(par, nh, out.as_mut_slice(), &mut idx, |first, o, ids| {
            let vs = &v.as_slice()[first * nv..(first + ids.len()) * nv];
            matmul(
                MatRef::col_major(self.weights.as_slice(), nv, nh).t(),
                MatRef::col_major(vs, nv, ids.len()),
                o,
            );
            for col in o.chunks_mut(nh.max(1)) {
                self.hidden.mean_in_place(col, beta);
            }
        });
    }
}

/// Chains per block of [`Rbm::free_energies_from_inputs`] (their visible potentials live on
/// the stack).
const ENERGY_BLOCK: usize = 64;

impl<V: Layer, H: Layer<Scalar = V::Scalar>> EnergyModel for Rbm<V, H> {
    type Scalar = V::Scalar;
    type State = RbmChains<V::Scalar>;

    fn energies(&self, x: &Self::State, beta: f64, out: &mut [f64], par: Par) {
        self.free_energy_visible(&x.visible, beta, out, par);
    }

    /// One product \\(W^\top v\\) per chunk of chains, then the tempered free energy at each
    /// temperature; bit-identical to calling [`EnergyModel::energies`] per temperature.
    fn energies_at(&self, x: &Self::State, betas: &[f64], out: &mut [f64], par: Par) {
        self.free_energies_at(&x.visible, betas, out, par);
    }

    fn new_state(&self, n_chains: usize) -> Self::State {
        self.default_chains(n_chains)
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> ProductCache for Rbm<V, H> {
    /// Keeps the inputs \\(W^\top v\\) of the free energies in `kept.hidden`, and leaves
    /// `kept.visible` empty (no rows, one column per chain): moving kept products with their
    /// chains ([`Chains::swap_chain`]) then moves only the inputs.
    fn energies_at_keeping(
        &self,
        x: &Self::State,
        betas: &[f64],
        out: &mut [f64],
        kept: &mut Self::State,
        par: Par,
    ) -> bool {
        let (nh, n) = (self.hidden.width(), x.visible.ncols());
        if kept.visible.shape() != (0, n) {
            kept.visible = DMatrix::zeros(0, n);
        }
        if kept.hidden.shape() != (nh, n) {
            kept.hidden = DMatrix::from_element(nh, n, V::Scalar::from_f64(0.0));
        }
        self.free_energies_keeping(&x.visible, betas, out, kept.hidden.as_mut_slice(), par);
        true
    }

    /// The free energies from the kept inputs \\(W^\top v\\): the same numbers as
    /// [`EnergyModel::energies_at`] without the product.
    fn energies_from_kept(
        &self,
        x: &Self::State,
        betas: &[f64],
        out: &mut [f64],
        kept: &Self::State,
        par: Par,
    ) -> bool {
        let (nv, nh, m) = (self.visible.width(), self.hidden.width(), betas.len());
        let n = x.visible.ncols();
        assert_eq!(out.len(), n * m, "energies_from_kept: output length");
        if kept.hidden.shape() != (nh, n) {
            return false;
        }
        if m == 0 {
            return true;
        }
        let inputs = kept.hidden.as_slice();
        // `vec![(); n]` allocates nothing.
        ebm_core::for_each_chain_chunk(par, m, out, &mut vec![(); n], |first, o, ids| {
            let cols = ids.len();
            let vs = &x.visible.as_slice()[first * nv..(first + cols) * nv];
            let inp = &inputs[first * nh..(first + cols) * nh];
            self.free_energies_from_inputs(vs, inp, betas, o);
        });
        true
    }

    /// Takes the kept inputs as the hidden buffer of `x` (no copy) and runs the sampling pass
    /// of [`ConditionalSampler::sample_hidden`] on them.
    fn sample_hidden_from_kept<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        kept: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) -> bool {
        if kept.hidden.shape() != x.hidden.shape() {
            return false;
        }
        std::mem::swap(&mut x.hidden, &mut kept.hidden);
        self.sample_hidden_from_inputs(&mut x.hidden, beta, rngs, par);
        true
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> ConditionalSampler for Rbm<V, H> {
    fn sample_hidden<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        assert_eq!(x.visible.nrows(), nv, "sample_hidden: visible width");
        assert_eq!(
            x.hidden.shape(),
            (nh, x.visible.ncols()),
            "sample_hidden: hidden shape"
        );
        let vis = x.visible.as_slice();
        for_each_chain_chunk(par, nh, x.hidden.as_mut_slice(), rngs, |first, h, r| {
            let vs = &vis[first * nv..(first + r.len()) * nv];
            matmul(
                MatRef::col_major(self.weights.as_slice(), nv, nh).t(),
                MatRef::col_major(vs, nv, r.len()),
                h,
            );
            ebm_core::simd::dispatch(SampleColumns {
                layer: &self.hidden,
                columns: h,
                beta,
                rngs: r,
            });
        });
    }

    fn sample_visible<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        self.check_visible_half_step(x);
        let (nv, nh) = (self.visible.width(), self.hidden.width());
        let hid = x.hidden.as_slice();
        for_each_chain_chunk(par, nv, x.visible.as_mut_slice(), rngs, |first, v, r| {
            let hs = &hid[first * nh..(first + r.len()) * nh];
            self.visible_half_step(hs, v, None, beta, r);
        });
    }
}

/// The sampling pass of one layer over a chunk of chains (one column and one stream per
/// chain), run through [`ebm_core::simd::dispatch`] for the wider vector instructions.
struct SampleColumns<'a, L: Layer, R> {
    layer: &'a L,
    /// The local inputs of the layer's units, column-major, one column per chain; replaced by
    /// the draws.
    columns: &'a mut [L::Scalar],
    beta: f64,
    rngs: &'a mut [R],
}

impl<L: Layer, R: Rng> ebm_core::simd::Pass for SampleColumns<'_, L, R> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        self.layer
            .sample_columns_in_place(self.columns, self.beta, self.rngs);
    }
}

/// An RBM re-expressed in another binary parametrisation, with the energy offset that relates
/// the two: \\(E_{\text{old}}(x) = E_{\text{new}}(x') + \text{offset}\\) for corresponding
/// configurations, hence \\(\log Z^{\text{old}}_\beta = \log Z^{\text{new}}_\beta - \beta\,
/// \text{offset}\\) and the two laws are identical.
#[derive(Clone, Debug, PartialEq)]
pub struct Reparametrised<V: Layer, H: Layer<Scalar = V::Scalar>> {
    /// The model in the new parametrisation.
    pub rbm: Rbm<V, H>,
    /// \\(E_{\text{old}} - E_{\text{new}}\\), the same for every configuration.
    pub energy_offset: f64,
}

impl<V: BinaryLayer, H: BinaryLayer<Scalar = V::Scalar>> Rbm<V, H> {
    /// Re-expresses the model with binary layers `V2` and `H2` (e.g. \\(\{0,1\}\\) to
    /// \\(\{-1,+1\}\\)) so that it defines the same distribution.
    ///
    /// With the affine map of states \\(x_{\text{old}} = a x_{\text{new}} + b\\) on each side
    /// (\\(a = 2, b = -1\\) from Bernoulli to spin, \\(a = 1/2, b = 1/2\\) back):
    /// \\(W' = a_v a_h W\\), \\(\theta_V' = a_v(\theta_V + b_h W\mathbf 1)\\),
    /// \\(\theta_H' = a_h(\theta_H + b_v W^\top \mathbf 1)\\), and the energy offset is
    /// \\(-(b_v \sum\theta_V + b_h \sum\theta_H + b_v b_h \sum W)\\).
    pub fn reparametrise<V2, H2>(&self) -> Reparametrised<V2, H2>
    where
        V2: BinaryLayer<Scalar = V::Scalar>,
        H2: BinaryLayer<Scalar = V::Scalar>,
    {
        let affine = |lo_old: f64, lo_new: f64| {
            let a = (1.0 - lo_old) / (1.0 - lo_new);
            (a, lo_old - a * lo_new)
        };
        let (av, bv) = affine(V::LOW, V2::LOW);
        let (ah, bh) = affine(H::LOW, H2::LOW);
        let w = |i: usize, j: usize| self.weights[(i, j)].as_f64();
        let (nv, nh) = self.weights.shape();
        let fv: Vec<V::Scalar> = (0..nv)
            .map(|i| {
                let row: f64 = (0..nh).map(|j| w(i, j)).sum();
                V::Scalar::from_f64(av * (self.visible.fields()[i].as_f64() + bh * row))
            })
            .collect();
        let fh: Vec<V::Scalar> = (0..nh)
            .map(|j| {
                let col: f64 = (0..nv).map(|i| w(i, j)).sum();
                V::Scalar::from_f64(ah * (self.hidden.fields()[j].as_f64() + bv * col))
            })
            .collect();
        let weights = self
            .weights
            .map(|x| V::Scalar::from_f64(av * ah * x.as_f64()));
        let sum = |f: &[V::Scalar]| f.iter().map(|x| x.as_f64()).sum::<f64>();
        let sum_w: f64 = self.weights.iter().map(|x| x.as_f64()).sum();
        let c = bv * sum(self.visible.fields()) + bh * sum(self.hidden.fields()) + bv * bh * sum_w;
        Reparametrised {
            rbm: Rbm {
                visible: V2::with_fields(fv),
                hidden: H2::with_fields(fh),
                weights,
            },
            energy_offset: -c,
        }
    }
}

/// Column sums of the per-unit means of one-hot rows: for a Potts side with `q` states,
/// `c[(i, k)] = mean_a W[(i*q + a, k)]` over the rows of unit `i`, for each column `k` of `w`
/// (rows of `w` are the Potts side).
fn unit_row_means<F: Scalar>(w: &DMatrix<F>, q: usize) -> DMatrix<f64> {
    let units = w.nrows() / q;
    DMatrix::from_fn(units, w.ncols(), |i, k| {
        (0..q).map(|a| w[(i * q + a, k)].as_f64()).sum::<f64>() / q as f64
    })
}

impl<F: Scalar, H: LinearFields<Scalar = F>> Rbm<Potts<F>, H> {
    /// The zero-sum gauge of a Potts visible layer, applied to **all** parameters: each
    /// unit's fields and each unit's weight rows (for every hidden value) are shifted to sum
    /// to zero over the \\(q\\) states, and the part of \\(v^\top W h\\) this removes, which is
    /// linear in \\(h\\), is moved into the hidden fields. The law is unchanged; energies change
    /// by a constant (the returned offset). Peers shipped gauges applied to the weights only,
    /// which changes the model (the PyTorch `rbms`).
    pub fn gauge_visible_zero_sum(&self) -> Reparametrised<Potts<F>, H> {
        let q = self.visible.q();
        let c = unit_row_means(&self.weights, q);
        let mut weights = self.weights.clone();
        for k in 0..weights.ncols() {
            for r in 0..weights.nrows() {
                weights[(r, k)] = F::from_f64(weights[(r, k)].as_f64() - c[(r / q, k)]);
            }
        }
        let delta: Vec<f64> = (0..weights.ncols()).map(|k| c.column(k).sum()).collect();
        let mut hidden = self.hidden.clone();
        hidden.add_to_fields(&delta);
        let mut visible = self.visible.clone();
        let offset = -visible
            .fields()
            .chunks(q)
            .map(|u| u.iter().map(|f| f.as_f64()).sum::<f64>() / q as f64)
            .sum::<f64>();
        visible.zero_sum_fields();
        Reparametrised {
            rbm: Rbm {
                visible,
                hidden,
                weights,
            },
            energy_offset: offset,
        }
    }
}

impl<F: Scalar, V: LinearFields<Scalar = F>> Rbm<V, Potts<F>> {
    /// The zero-sum gauge of a Potts hidden layer, applied to all parameters: the mirror of
    /// [`Rbm::gauge_visible_zero_sum`], computed on the [transposed](Rbm::transposed) model.
    pub fn gauge_hidden_zero_sum(&self) -> Reparametrised<V, Potts<F>> {
        let g = self.transposed().gauge_visible_zero_sum();
        Reparametrised {
            rbm: g.rbm.transposed(),
            energy_offset: g.energy_offset,
        }
    }
}

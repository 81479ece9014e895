//! A stack of RBMs for stacked tempering (paper 002, *Accelerated sampling with stacked
//! restricted Boltzmann machines*, §3.1): RBM \\(n + 1\\) is trained on hidden representations
//! of RBM \\(n\\), so the hidden layer of RBM \\(n\\) and the visible layer of RBM \\(n + 1\\)
//! have the same size and unit type (\\(M_n = N_{n+1}\\)).

use crate::layer::Layer;
use crate::rbm::{Rbm, RbmChains};
use ebm_core::{ConditionalSampler, EnergyModel, Error, Par, ProductCache};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One RBM of a [`Stack`]: the bottom RBM (visible units `V`, the model of interest) or a
/// deeper one (units `H` on both sides, since its visible layer receives the hidden
/// configurations of the RBM below). Both sample and evaluate like an [`Rbm`] by dispatch, so
/// every kernel of the workspace explores a stack's rungs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum StackedRbm<V: Layer, H: Layer<Scalar = V::Scalar>> {
    /// RBM 1, the target.
    Bottom(Rbm<V, H>),
    /// RBM \\(n \ge 2\\).
    Upper(Rbm<H, H>),
}

/// Calls `$body` with `$r` bound to the inner RBM, whatever its type.
macro_rules! dispatch {
    ($self:expr, $r:ident => $body:expr) => {
        match $self {
            StackedRbm::Bottom($r) => $body,
            StackedRbm::Upper($r) => $body,
        }
    };
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> StackedRbm<V, H> {
    /// Number of units of the visible layer.
    pub fn n_visible(&self) -> usize {
        dispatch!(self, r => r.visible().n_units())
    }

    /// The hidden layer.
    pub fn hidden(&self) -> &H {
        dispatch!(self, r => r.hidden())
    }

    /// Width (values per chain) of the visible layer.
    pub fn visible_width(&self) -> usize {
        dispatch!(self, r => r.visible().width())
    }

    /// The hidden free energies \\(F^h(h_i) = U_H(h_i) - \sum_i \Gamma_{V,i}((W h_i)_i)\\) of
    /// every column of `h` at \\(\beta = 1\\) ([`Rbm::free_energy_hidden`]).
    pub fn free_energy_hidden(&self, h: &nalgebra::DMatrix<V::Scalar>, out: &mut [f64], par: Par) {
        dispatch!(self, r => r.free_energy_hidden(h, 1.0, out, par))
    }

    /// The visible inputs \\(W h_i\\) of every column of `h` ([`Rbm::visible_inputs`]).
    pub fn visible_inputs(
        &self,
        h: &nalgebra::DMatrix<V::Scalar>,
        out: &mut nalgebra::DMatrix<V::Scalar>,
        par: Par,
    ) {
        dispatch!(self, r => r.visible_inputs(h, out, par))
    }

    /// [`StackedRbm::free_energy_hidden`] from the visible inputs
    /// ([`Rbm::free_energy_hidden_from_inputs`]).
    pub fn free_energy_hidden_from_inputs(
        &self,
        h: &nalgebra::DMatrix<V::Scalar>,
        inputs: &nalgebra::DMatrix<V::Scalar>,
        out: &mut [f64],
        par: Par,
    ) {
        dispatch!(self, r => r.free_energy_hidden_from_inputs(h, inputs, 1.0, out, par))
    }

    /// Draws the visible layer at \\(\beta = 1\\) from the inputs it holds
    /// ([`Rbm::sample_visible_from_inputs`]).
    pub fn sample_visible_from_inputs<R: Rng + Send>(
        &self,
        visible: &mut nalgebra::DMatrix<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) {
        dispatch!(self, r => r.sample_visible_from_inputs(visible, 1.0, rngs, par))
    }

    /// One visible half-step at \\(\beta = 1\\) keeping the inputs \\(W h\\)
    /// ([`Rbm::sample_visible_keeping_inputs`]).
    pub fn sample_visible_keeping_inputs<R: Rng + Send>(
        &self,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        inputs: &mut nalgebra::DMatrix<V::Scalar>,
        par: Par,
    ) {
        dispatch!(self, r => r.sample_visible_keeping_inputs(x, 1.0, rngs, inputs, par))
    }

    /// Draws the hidden layer at \\(\beta = 1\\) from the inputs it holds
    /// ([`Rbm::sample_hidden_from_inputs`]).
    pub fn sample_hidden_from_inputs<R: Rng + Send>(
        &self,
        hidden: &mut nalgebra::DMatrix<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) {
        dispatch!(self, r => r.sample_hidden_from_inputs(hidden, 1.0, rngs, par))
    }

    /// The visible free energies \\(F^v(v_i)\\) at \\(\beta = 1\\) of every column of `v`
    /// ([`Rbm::free_energy_visible`]).
    pub fn free_energy_visible(&self, v: &nalgebra::DMatrix<V::Scalar>, out: &mut [f64], par: Par) {
        dispatch!(self, r => r.free_energy_visible(v, 1.0, out, par))
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> EnergyModel for StackedRbm<V, H> {
    type Scalar = V::Scalar;
    type State = RbmChains<V::Scalar>;

    fn energies(&self, x: &Self::State, beta: f64, out: &mut [f64], par: Par) {
        dispatch!(self, r => r.energies(x, beta, out, par))
    }

    fn energies_at(&self, x: &Self::State, betas: &[f64], out: &mut [f64], par: Par) {
        dispatch!(self, r => r.energies_at(x, betas, out, par))
    }

    fn new_state(&self, n_chains: usize) -> Self::State {
        dispatch!(self, r => r.new_state(n_chains))
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> ProductCache for StackedRbm<V, H> {
    fn energies_at_keeping(
        &self,
        x: &Self::State,
        betas: &[f64],
        out: &mut [f64],
        kept: &mut Self::State,
        par: Par,
    ) -> bool {
        dispatch!(self, r => r.energies_at_keeping(x, betas, out, kept, par))
    }

    fn sample_hidden_from_kept<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        kept: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) -> bool {
        dispatch!(self, r => r.sample_hidden_from_kept(x, kept, beta, rngs, par))
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> ConditionalSampler for StackedRbm<V, H> {
    fn sample_hidden<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        dispatch!(self, r => r.sample_hidden(x, beta, rngs, par))
    }

    fn sample_visible<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        dispatch!(self, r => r.sample_visible(x, beta, rngs, par))
    }
}

/// A stack of \\(L \ge 1\\) RBMs (paper 002, *Accelerated sampling with stacked restricted
/// Boltzmann machines*, §3.1, Fig. 2): RBM 1 (`bottom`, visible units `V`, hidden units `H`)
/// is the model of interest; RBM \\(n \ge 2\\) has units `H` on both sides and
/// \\(N_{n+1} = M_n\\) visible units, the size of the hidden layer below. The product
/// \\(\prod_n P_n(v_n, h_n)\\) is the target of stacked tempering; its \\(v_1\\)-marginal is
/// the bottom RBM's.
///
/// The unit *type* of hidden layer \\(n\\) and visible layer \\(n+1\\) is enforced by the type
/// parameters; their sizes and unit widths (e.g. the number of Potts states) are checked by
/// [`Stack::new`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Stack<V: Layer, H: Layer<Scalar = V::Scalar>> {
    rbms: Vec<StackedRbm<V, H>>,
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> Stack<V, H> {
    /// The stack `bottom`, `upper[0]`, `upper[1]`, ...
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] naming the pair if the hidden layer of RBM \\(n\\) and the
    /// visible layer of RBM \\(n + 1\\) differ in number of units or in values per unit.
    pub fn new(bottom: Rbm<V, H>, upper: Vec<Rbm<H, H>>) -> ebm_core::Result<Self> {
        let mut rbms = vec![StackedRbm::Bottom(bottom)];
        rbms.extend(upper.into_iter().map(StackedRbm::Upper));
        for n in 0..rbms.len() - 1 {
            let (below, above) = (rbms[n].hidden(), &rbms[n + 1]);
            if below.n_units() != above.n_visible() || below.width() != above.visible_width() {
                return Err(Error::ShapeMismatch {
                    what: format!(
                        "visible layer of stacked RBM {} (must equal the hidden layer of RBM {})",
                        n + 2,
                        n + 1
                    ),
                    expected: format!("{} units of width {}", below.n_units(), below.width()),
                    got: format!(
                        "{} units of width {}",
                        above.n_visible(),
                        above.visible_width()
                    ),
                });
            }
        }
        Ok(Self { rbms })
    }

    /// Number of RBMs \\(L\\).
    pub fn len(&self) -> usize {
        self.rbms.len()
    }

    /// Always false: a stack holds at least the bottom RBM.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// RBM `n` (0-based: 0 is the bottom).
    ///
    /// # Panics
    /// If `n >= len()`.
    pub fn rbm(&self, n: usize) -> &StackedRbm<V, H> {
        &self.rbms[n]
    }

    /// All RBMs, bottom first.
    pub fn rbms(&self) -> &[StackedRbm<V, H>] {
        &self.rbms
    }

    /// The bottom RBM (the model of interest).
    pub fn bottom(&self) -> &Rbm<V, H> {
        match &self.rbms[0] {
            StackedRbm::Bottom(r) => r,
            StackedRbm::Upper(_) => unreachable!("the first RBM of a stack is its bottom"),
        }
    }

    /// The RBMs above the bottom, in order.
    pub fn upper(&self) -> impl Iterator<Item = &Rbm<H, H>> {
        self.rbms[1..].iter().map(|r| match r {
            StackedRbm::Upper(r) => r,
            StackedRbm::Bottom(_) => unreachable!("only the first RBM of a stack is its bottom"),
        })
    }

    /// Takes the stack apart into its bottom and upper RBMs.
    pub fn into_parts(self) -> (Rbm<V, H>, Vec<Rbm<H, H>>) {
        let mut it = self.rbms.into_iter();
        let bottom = match it.next() {
            Some(StackedRbm::Bottom(r)) => r,
            _ => unreachable!("the first RBM of a stack is its bottom"),
        };
        let upper = it
            .map(|r| match r {
                StackedRbm::Upper(r) => r,
                StackedRbm::Bottom(_) => unreachable!("only the first RBM is the bottom"),
            })
            .collect();
        (bottom, upper)
    }

    /// Chains for every RBM, bottom first, initialised by the bottom-to-top pass of the
    /// reference code (the stacked-tempering paper): \\(h_1 \sim P_1(h \mid v)\\) from the given
    /// bottom visible configurations, \\(h_{n+1} \sim P_{n+1}(h \mid h_n)\\) up the stack;
    /// then every RBM draws \\(v_n \sim P_n(v \mid h_n)\\) and \\(h_n \sim P_n(h \mid v_n)\\).
    /// Chain `i` of every RBM consumes only `rngs[i]`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `bottom_visible` does not have the bottom visible width as
    /// rows, or `rngs` does not have one stream per column.
    pub fn bottom_to_top<R: Rng + Send>(
        &self,
        bottom_visible: &nalgebra::DMatrix<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> ebm_core::Result<Vec<RbmChains<V::Scalar>>> {
        let n = bottom_visible.ncols();
        Error::check_len(
            "rows of the bottom visible configurations",
            self.rbms[0].visible_width(),
            bottom_visible.nrows(),
        )?;
        Error::check_len("RNG streams (one per chain)", n, rngs.len())?;
        let mut input = bottom_visible.clone();
        let mut out = Vec::with_capacity(self.rbms.len());
        for rbm in &self.rbms {
            let mut x = rbm.new_state(n);
            x.visible.copy_from(&input);
            rbm.sample_hidden(&mut x, 1.0, rngs, par);
            input = x.hidden.clone();
            out.push(x);
        }
        for (rbm, x) in self.rbms.iter().zip(&mut out) {
            rbm.sample_visible(x, 1.0, rngs, par);
            rbm.sample_hidden(x, 1.0, rngs, par);
        }
        Ok(out)
    }
}

//! Static refresh of a low-rank RBM: every chain replaced by an independent draw of the static
//! (inverse-transform) sampler of *"Fast, accurate training and sampling of Restricted
//! Boltzmann Machines"* (paper 000, §4 and SI A), used at rung 0 of parallel trajectory
//! tempering when the trajectory starts at a pre-trained low-rank model.

use ebm_core::{ConditionalSampler, Kernel, Par, Result};
use ebm_models::lowrank::{LowRankBasis, Mesh};
use ebm_models::{Bernoulli, BinaryLayer, Layer, Rbm, RbmChains, Spin};
use nalgebra::DMatrix;
use rand::Rng;
use std::any::Any;

/// Evaluates `$f` with `$model` (an `&Rbm<V, H>`) seen as each of the four binary `f64` RBM
/// types in turn, the first that matches; `$none` when none does.
macro_rules! as_binary {
    ($model:expr, |$m:ident| $f:expr, $none:expr) => {{
        let any = $model as &dyn Any;
        if let Some($m) = any.downcast_ref::<Rbm<Bernoulli<f64>, Bernoulli<f64>>>() {
            $f
        } else if let Some($m) = any.downcast_ref::<Rbm<Bernoulli<f64>, Spin<f64>>>() {
            $f
        } else if let Some($m) = any.downcast_ref::<Rbm<Spin<f64>, Bernoulli<f64>>>() {
            $f
        } else if let Some($m) = any.downcast_ref::<Rbm<Spin<f64>, Spin<f64>>>() {
            $f
        } else {
            $none
        }
    }};
}

/// Relative singular-value threshold below which a direction is not part of the model's span.
const SPAN_TOL: f64 = 1e-9;

/// Replaces every chain by an independent draw of a low-rank binary RBM at inverse temperature
/// \\(\beta\\): a magnetization \\(m_k\\) from the mesh law
/// \\(p_k\propto e^{N s(m_k) - \beta H(m_k)}\\) ([`Mesh::log_probabilities`]), the visible
/// spins independent given it (Eq. 18, [`Mesh::sample`]), then \\(h\sim p_\beta(h\mid v)\\).
///
/// The model must be low-rank: in \\(\pm1\\) form, its visible fields and weight columns span at
/// most [`ebm_models::lowrank::MAX_DIRECTIONS`] dimensions (as the models of
/// `ebm_train::pretrain`, padded with `pad_hidden_in_span`). The draw follows the mesh law
/// exactly; it differs from the RBM's own law by the mesh's discretisation and the
/// saddle-point approximation of the entropy (relative \\(O(1/N)\\); the `ebm-models` lowrank
/// tests measure it on \\(\log Z\\)). Built for one model and \\(\beta\\); as a kernel it checks
/// both sizes and \\(\beta\\), and must be given the same model.
#[derive(Clone, Debug)]
pub struct LowRankRefresh {
    mesh: Mesh,
    log_weights: Vec<f64>,
    beta: f64,
    low: f64,
    n_visible: usize,
    n_hidden: usize,
}

impl LowRankRefresh {
    /// Builds the sampler of `rbm` at `beta` on a grid over its span ([`LowRankBasis::spanning`],
    /// [`Mesh::grid`]) of \\(\lfloor \text{max\_points}^{1/D}\rfloor\\) (at least 2) points per
    /// axis, \\(D\\) the dimension of the span.
    ///
    /// # Errors
    /// [`ebm_core::Error::InvalidParameter`] if `beta` is not finite and positive, the model is
    /// not low-rank, or as [`Mesh::grid`].
    pub fn new<V, H>(rbm: &Rbm<V, H>, beta: f64, max_points: usize, par: Par) -> Result<Self>
    where
        V: BinaryLayer<Scalar = f64>,
        H: BinaryLayer<Scalar = f64>,
    {
        if !(beta.is_finite() && beta > 0.0) {
            return Err(ebm_core::Error::InvalidParameter {
                name: "beta".into(),
                reason: format!("must be finite and > 0, got {beta}"),
            });
        }
        let spin = rbm.reparametrise::<Spin, Spin>().rbm;
        let (nv, nh) = spin.weights().shape();
        let span = DMatrix::from_fn(nv, nh + 1, |i, j| {
            if j == 0 {
                spin.visible().fields()[i]
            } else {
                spin.weights()[(i, j - 1)]
            }
        });
        let basis = LowRankBasis::spanning(&span, SPAN_TOL)?;
        let tempered = Rbm::new(
            Spin::new(spin.visible().fields().iter().map(|x| beta * x).collect()),
            Spin::new(spin.hidden().fields().iter().map(|x| beta * x).collect()),
            spin.weights() * beta,
        )?;
        let per_axis = (max_points as f64).powf(1.0 / basis.dim() as f64) + 1e-9;
        let mesh = Mesh::grid(&basis, (per_axis.floor() as usize).max(2), par)?;
        let log_weights = mesh.rbm_log_weights(&tempered)?;
        Ok(Self {
            mesh,
            log_weights,
            beta,
            low: V::LOW,
            n_visible: nv,
            n_hidden: nh,
        })
    }

    /// The mesh the draws come from.
    pub fn mesh(&self) -> &Mesh {
        &self.mesh
    }

    /// The model's log-weights on the mesh (\\(-\beta H(m_k)\\)).
    pub fn log_weights(&self) -> &[f64] {
        &self.log_weights
    }

    /// The inverse temperature it samples at.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The checks of a step by `kernel`: the inverse temperature and the model's size it was
    /// built for, one RNG per chain.
    ///
    /// # Panics
    /// If one fails.
    fn check_step(
        &self,
        kernel: &str,
        beta: f64,
        shape: (usize, usize),
        x: &RbmChains<f64>,
        n_rngs: usize,
    ) {
        assert!(
            beta == self.beta,
            "{kernel}: built for beta = {}, stepped at beta = {beta}",
            self.beta
        );
        assert_eq!(
            shape,
            (self.n_visible, self.n_hidden),
            "{kernel}: built for another model size"
        );
        assert_eq!(n_rngs, x.visible.ncols(), "{kernel}: one RNG per chain");
    }
}

impl<V, H> Kernel<Rbm<V, H>> for LowRankRefresh
where
    V: BinaryLayer<Scalar = f64>,
    H: BinaryLayer<Scalar = f64>,
    Rbm<V, H>: ConditionalSampler<State = RbmChains<f64>>,
{
    type Info = ();

    /// # Panics
    /// If `beta` or the layer sizes differ from those the sampler was built for, or
    /// `rngs.len()` from the number of chains.
    fn step<R: Rng + Send>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<f64>,
        rngs: &mut [R],
        par: Par,
    ) {
        self.check_step(
            "LowRankRefresh",
            beta,
            model.weights().shape(),
            x,
            rngs.len(),
        );
        let (v, _) = self
            .mesh
            .sample(&self.log_weights, rngs)
            .expect("log-weights checked at construction");
        let low = self.low;
        x.visible = v.map(|s| if s > 0.0 { 1.0 } else { low });
        model.sample_hidden(x, beta, rngs, par);
    }
}

/// Independence Metropolis–Hastings on a binary RBM with the static sampler of a low-rank
/// model as proposal: every chain proposes \\(v'\\) from the mesh law \\(q\\) of a
/// [`LowRankRefresh`] ([`Mesh::sample`]), accepts it with probability
/// \\[
///   \min\Bigl(1,\ \frac{e^{-F_\beta(v')}\,q(v)}{e^{-F_\beta(v)}\,q(v')}\Bigr)
/// \\]
/// (\\(F_\beta\\) the model's visible free energy, [`Rbm::free_energy_visible`];
/// \\(\log q\\) from [`Mesh::log_sample_densities_from`]), then draws
/// \\(h\sim p_\beta(h\mid v)\\).
///
/// Where [`LowRankRefresh`] samples the mesh law, which differs from the RBM's by the mesh's
/// discretisation and saddle-point error (on MNIST 0/1 with three directions, several nats of
/// \\(\log Z\\)), this kernel leaves the RBM's own law \\(p_\beta(v, h)\\) invariant exactly, at
/// any size: \\(q > 0\\) everywhere (each spin is drawn from a sigmoid), so the chain is also
/// irreducible, and when the mesh law is close to the model's almost every proposal is
/// accepted and each step is nearly an independent exact draw. It is the exact rung 0 of
/// parallel trajectory tempering (and of the bridge from a pre-trained model) when the hidden
/// layer is too large to enumerate. The proposal is built from the model given to
/// [`LowRankIndependence::new`]; the target is the model given to each step (the chain is
/// exact for any model of the same size; the acceptance is high only near the first).
///
/// Each step costs one mesh draw and two free energies per chain, plus \\(O(Kd)\\) for the two
/// densities (\\(K\\) mesh points, \\(d\\) directions). It reports the fraction of chains that
/// accepted their proposal.
#[derive(Clone, Debug)]
pub struct LowRankIndependence {
    refresh: LowRankRefresh,
    /// The per-point constants of \\(\log q\\) ([`Mesh::sample_density_offsets`]).
    offsets: Vec<f64>,
}

impl LowRankIndependence {
    /// The kernel whose proposal is [`LowRankRefresh::new`]`(rbm, beta, max_points, par)`.
    ///
    /// # Errors
    /// As [`LowRankRefresh::new`] and [`Mesh::sample_density_offsets`].
    pub fn new<V, H>(rbm: &Rbm<V, H>, beta: f64, max_points: usize, par: Par) -> Result<Self>
    where
        V: BinaryLayer<Scalar = f64>,
        H: BinaryLayer<Scalar = f64>,
    {
        let refresh = LowRankRefresh::new(rbm, beta, max_points, par)?;
        let offsets = refresh.mesh.sample_density_offsets(&refresh.log_weights)?;
        Ok(Self { refresh, offsets })
    }

    /// The proposal.
    pub fn proposal(&self) -> &LowRankRefresh {
        &self.refresh
    }

    /// [`LowRankIndependence::new`] for an RBM of any unit types: `None` unless both layers
    /// are binary (bernoulli or spin) with `f64` parameters, for generic callers (a negative
    /// phase or a command over every unit type) that use this kernel where it applies.
    pub fn of_any<V, H>(
        rbm: &Rbm<V, H>,
        beta: f64,
        max_points: usize,
        par: Par,
    ) -> Option<Result<Self>>
    where
        V: Layer + 'static,
        H: Layer<Scalar = V::Scalar> + 'static,
    {
        as_binary!(rbm, |m| Some(Self::new(m, beta, max_points, par)), None)
    }

    /// One step ([`Kernel::step`]) on an RBM of any unit types; `None` (nothing done) unless
    /// both layers are binary with `f64` parameters, as for [`LowRankIndependence::of_any`].
    ///
    /// # Panics
    /// As [`Kernel::step`].
    pub fn step_any<V, H, R>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> Option<f64>
    where
        V: Layer + 'static,
        H: Layer<Scalar = V::Scalar> + 'static,
        R: Rng + Send,
    {
        let x = (x as &mut dyn Any).downcast_mut::<RbmChains<f64>>()?;
        as_binary!(model, |m| Some(self.step(m, beta, x, rngs, par)), None)
    }
}

/// The \\(\pm1\\) form of binary visible configurations (1 stays 1, the low value becomes -1).
fn to_spins(v: &DMatrix<f64>) -> DMatrix<f64> {
    v.map(|s| if s > 0.0 { 1.0 } else { -1.0 })
}

impl<V, H> Kernel<Rbm<V, H>> for LowRankIndependence
where
    V: BinaryLayer<Scalar = f64>,
    H: BinaryLayer<Scalar = f64>,
    Rbm<V, H>: ConditionalSampler<State = RbmChains<f64>>,
{
    /// The fraction of chains that accepted their proposal.
    type Info = f64;

    /// # Panics
    /// As [`LowRankRefresh`]'s step: if `beta` or the layer sizes differ from those the
    /// proposal was built for, or `rngs.len()` from the number of chains.
    fn step<R: Rng + Send>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<f64>,
        rngs: &mut [R],
        par: Par,
    ) -> f64 {
        let r = &self.refresh;
        r.check_step(
            "LowRankIndependence",
            beta,
            model.weights().shape(),
            x,
            rngs.len(),
        );
        let n = x.visible.ncols();
        let densities = |spins: &DMatrix<f64>| {
            r.mesh
                .log_sample_densities_from(&self.offsets, spins)
                .expect("offsets and sizes checked at construction")
        };
        let log_q_old = densities(&to_spins(&x.visible));
        let (spins, _) = r
            .mesh
            .sample(&r.log_weights, rngs)
            .expect("log-weights checked at construction");
        let log_q_new = densities(&spins);
        let low = r.low;
        let proposal = spins.map(|s| if s > 0.0 { 1.0 } else { low });
        let (mut f_old, mut f_new) = (vec![0.0; n], vec![0.0; n]);
        model.free_energy_visible(&x.visible, beta, &mut f_old, par);
        model.free_energy_visible(&proposal, beta, &mut f_new, par);
        let mut accepted = 0usize;
        for (j, rng) in rngs.iter_mut().enumerate() {
            let log_ratio = (f_old[j] - f_new[j]) + (log_q_old[j] - log_q_new[j]);
            // One uniform per chain whatever the outcome: the streams stay aligned.
            let u: f64 = rng.random();
            if u < log_ratio.exp() {
                x.visible.set_column(j, &proposal.column(j));
                accepted += 1;
            }
        }
        model.sample_hidden(x, beta, rngs, par);
        accepted as f64 / n.max(1) as f64
    }
}

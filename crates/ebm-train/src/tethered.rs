//! Tethered Monte Carlo as the negative phase of training (TMC-RBM).
//!
//! Paper: "Learning a Restricted Boltzmann Machine using biased Monte Carlo sampling"
//! (Béreux, Decelle, Furtlehner, Seoane, SciPost Phys. 14, 032, 2023), §4.3 and Fig. 2.

use crate::layers::TrainableLayer;
use crate::negative::{NegativeInfo, NegativePhase};
use ebm_core::{ChainState, Error, Par, Result, Scalar};
use ebm_models::{DiscreteLayer, Rbm, RbmChains};
use ebm_samplers::tethered::plane::{Reconstruction2d, reconstruct_2d};
use ebm_samplers::tethered::profile::{
    ProfileSettings, Reconstruction, TmcWarning, curvature_warning, measure_targets,
    profile_chains, reconstruct, uniform_grid,
};
use ebm_samplers::tethered::{GaussianTether, OrderParameter};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// Where the tethered direction \\(\omega\\) of [`Tmc`] comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TmcDirection {
    /// The leading [`Tmc::dimensions`] visible singular vectors of the current weights
    /// \\(W\\), recomputed at every update (the reference code with its `PCA` setting off).
    Weights,
    /// Fixed directions, e.g. the data's leading principal components
    /// ([`OrderParameter::from_pca`]; the reference code with `PCA` on); as many as
    /// [`Tmc::dimensions`].
    Fixed(OrderParameter),
}

/// Tethered Monte Carlo as a [`NegativePhase`] (paper §4.3 for one order parameter, §4.2 and
/// §6.1.2 for two): \\(k\\) = [`Tmc::dimensions`] order parameters
/// \\(m_l(v) = v\cdot\omega_l/\sqrt{N_v}\\), a tensor grid of `points` targets per order
/// parameter (`points^k` grid points, the first order parameter fastest), `replicas`
/// persistent chains per grid point, chain `c` tethered by the Gaussian tether of strength
/// `alpha`, \\(\tfrac\alpha2\lVert m(v) - \hat{\mathbf m}\rVert^2\\) (Eq. 16), to grid point
/// \\(\lfloor c / \text{replicas}\rfloor\\). Before every update:
///
/// 1. the directions \\(\omega_l\\) ([`TmcDirection`]) and, for each order parameter, a
///    uniform axis of `points` targets from the minimum to the maximum projection of the
///    current minibatch, widened by `border` on each side (the grid moves with the minibatch;
///    chains keep their slot);
/// 2. `sweeps` TMC sweeps ([`ebm_samplers::tethered::Tethered`]) on every chain, the order
///    parameters time-averaged over the last `measure` (the paper's Eq. 19);
/// 3. the gradient of the potential, \\(\nabla\Omega(\hat{\mathbf m}) = \hat{\mathbf m} -
///    \langle \mathbf m\rangle_{\hat{\mathbf m}}\\) (Eqs. 12 and 17), integrated and
///    normalised to \\(p(\hat{\mathbf m}) \propto e^{-\alpha\Omega}\\): in 1D by cumulative
///    trapezoid (Eqs. 13–14, [`ebm_samplers::tethered::profile::reconstruct`]); in 2D along the
///    L-shaped path of the reference code, first along \\(\hat m_1\\) on the first row of
///    the grid, then along \\(\hat m_2\\) at each \\(\hat m_1\\) (Eq. 18,
///    \\(\Omega(\hat{\mathbf m}) = \Omega(\hat{\mathbf m}_0) + \int_{\mathcal C}
///    \nabla\Omega\cdot d\hat{\mathbf m}\\) for any path \\(\mathcal C\\);
///    [`ebm_samplers::tethered::plane::reconstruct_2d`], which also integrates along the
///    reverse path as a check), normalised by the 2D trapezoid rule;
/// 4. the chains' final configurations are weighted so that the trainer's weighted moments are
///    the canonical averages of Eq. 15,
///    \\(\langle O\rangle = \int \langle O\rangle_{\hat{\mathbf m}}\, p(\hat{\mathbf m})\,
///    d^k\hat{\mathbf m}\\): chain `c` at grid point \\((j_1, \dots, j_k)\\) gets weight
///    \\(\prod_l q^{(l)}_{j_l}\, p(\hat{\mathbf m}_{j})/\text{replicas}\\) with
///    \\(q^{(l)}\\) the trapezoid weights of axis \\(l\\) ([`NegativePhase::weights`]).
///
/// Every update also checks the tether against the hidden units' curvature bound along the
/// order parameters ([`Tmc::curvature_warning`]): at \\(\alpha \le K\\) the measurement can be
/// biased by many nats, and [`NegativeInfo::tethered_warnings`] says so.
///
/// One implementation serves both dimensions: only the reconstruction of step 3 depends on
/// \\(k\\). The paper (§8) notes that the grid's cost grows as `points^k`, which is why
/// only \\(k \le 2\\) is offered.
///
/// The hidden statistics are Rao–Blackwellised by the trainer's [`crate::Moments`] (conditional
/// means at the final \\(v\\)), a lower-variance choice than the reference code's binary
/// samples. With [`crate::Trainer::centred`] (the default) the update is the centred gradient
/// of the reference code (the tethered-MC paper: \\(\Delta W = \mathrm{Cov}_{\mathcal D}(v, h) -
/// [\langle v h^\top\rangle - \langle v\rangle \bar h^\top - \bar v\langle h\rangle^\top + \bar
/// v \bar h^\top]\\) with the visible and hidden field steps shifted by \\(-\Delta W \bar h\\),
/// \\(-\Delta W^\top \bar v\\)); with `centred = false` the plain gradient. Unlike the reference
/// code, \\(p\\) is paired with the grid point it was measured at (no one-point shift).
///
/// Visible layers must be discrete ([`DiscreteLayer`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tmc {
    /// Tether strength \\(\alpha\\) (the reference code: \\(2\cdot10^4\\)).
    pub alpha: f64,
    /// Grid points per order parameter (spacing best no larger than \\(1/\sqrt\alpha\\));
    /// the grid has `points^dimensions` points.
    pub points: usize,
    /// Chains per grid point.
    pub replicas: usize,
    /// TMC sweeps per update (the paper's Fig. 4: 10, as many as the PCD-10 baseline).
    pub sweeps: usize,
    /// The last `measure` of the sweeps are time-averaged for \\(\langle m\rangle_{\hat m}\\)
    /// (`1..=sweeps`; the reference code's `it_mean`).
    pub measure: usize,
    /// Margin added on both sides of the minibatch's range of projections (the paper: 0.1 to
    /// 0.2).
    pub border: f64,
    /// The tethered directions.
    pub direction: TmcDirection,
    /// The number of tethered order parameters: 1 (the paper's Fig. 4) or 2 (its Fig. 6).
    #[serde(default = "one")]
    pub dimensions: usize,
}

fn one() -> usize {
    1
}

/// The state of [`Tmc`]: persistent chains and the last reconstruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct TmcState<F: Scalar> {
    /// The `points * replicas` chains (grid point `c / replicas`) and their streams.
    pub chains: ChainState<RbmChains<F>>,
    /// Weights of the chains in the model average (uniform before the first update).
    pub weights: Vec<f64>,
    /// The directions used at the last update (`None` before the first).
    pub order: Option<OrderParameter>,
    /// One order parameter: \\(\Omega\\) and \\(p(\hat m)\\) reconstructed at the last update
    /// (`None` before the first, and with two order parameters).
    pub reconstruction: Option<Reconstruction>,
    /// Two order parameters: \\(\Omega\\) and \\(p(\hat m_1, \hat m_2)\\) reconstructed at the
    /// last update (`None` before the first, and with one order parameter).
    #[serde(default)]
    pub reconstruction_2d: Option<Reconstruction2d>,
}

impl Tmc {
    fn validate(&self, width: usize) -> Result<()> {
        GaussianTether::new(self.alpha)?;
        let bad = |name: &str, reason: String| {
            Err(Error::InvalidParameter {
                name: format!("Tmc::{name}"),
                reason,
            })
        };
        if self.points < 2 {
            return bad("points", format!("{}; at least 2 expected", self.points));
        }
        if !(1..=2).contains(&self.dimensions) {
            return bad(
                "dimensions",
                format!(
                    "{}; 1 or 2 order parameters expected (the grid grows as points^dimensions)",
                    self.dimensions
                ),
            );
        }
        if self.replicas == 0 || self.sweeps == 0 {
            return bad(
                "replicas / sweeps",
                format!(
                    "{} / {}; at least 1 each expected",
                    self.replicas, self.sweeps
                ),
            );
        }
        if self.measure == 0 || self.measure > self.sweeps {
            return bad(
                "measure",
                format!("{}; between 1 and sweeps = {}", self.measure, self.sweeps),
            );
        }
        if !(self.border.is_finite() && self.border > 0.0) {
            return bad("border", format!("{}; a finite value > 0", self.border));
        }
        if let TmcDirection::Fixed(o) = &self.direction
            && (o.k() != self.dimensions || o.width() != width)
        {
            return bad(
                "direction",
                format!(
                    "{} direction(s) of width {}; {} of the visible width {width} expected",
                    o.k(),
                    o.width(),
                    self.dimensions
                ),
            );
        }
        Ok(())
    }

    /// Grid points (`points^dimensions`, saturating).
    fn n_points(&self) -> usize {
        (0..self.dimensions).fold(1usize, |n, _| n.saturating_mul(self.points))
    }

    fn n_chains(&self) -> usize {
        self.n_points().saturating_mul(self.replicas)
    }

    /// The direction for `model`.
    fn order<V: DiscreteLayer, H: ebm_models::Layer<Scalar = V::Scalar>>(
        &self,
        model: &Rbm<V, H>,
    ) -> Result<OrderParameter> {
        match &self.direction {
            TmcDirection::Weights => OrderParameter::from_weights(model, self.dimensions),
            TmcDirection::Fixed(o) => Ok(o.clone()),
        }
    }

    /// One axis per order parameter, spanning the projections of the columns of `batch`
    /// widened by the border.
    fn axes<F: Scalar>(&self, order: &OrderParameter, batch: &DMatrix<F>) -> Result<Vec<Vec<f64>>> {
        let k = order.k();
        let (mut lo, mut hi) = (vec![f64::INFINITY; k], vec![f64::NEG_INFINITY; k]);
        let mut m = vec![0.0; k];
        for col in batch.column_iter() {
            order.project(col.as_slice(), &mut m);
            for l in 0..k {
                lo[l] = lo[l].min(m[l]);
                hi[l] = hi[l].max(m[l]);
            }
        }
        (0..k)
            .map(|l| uniform_grid(lo[l] - self.border, hi[l] + self.border, self.points))
            .collect()
    }

    /// Runs one TMC measurement under `model` on `state` with the grid of `batch`, and sets
    /// the weights (steps 1–4 above).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid configuration or an empty minibatch;
    /// [`Error::ShapeMismatch`] for a minibatch whose rows are not the visible values.
    pub fn measure<V, H>(
        &self,
        model: &Rbm<V, H>,
        state: &mut TmcState<V::Scalar>,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<()>
    where
        V: DiscreteLayer,
        H: ebm_models::Layer<Scalar = V::Scalar>,
    {
        self.validate(model.visible().width())?;
        Error::check_len(
            "Tmc minibatch rows (visible width)",
            model.visible().width(),
            batch.nrows(),
        )?;
        if batch.ncols() == 0 {
            return Err(Error::InvalidParameter {
                name: "Tmc minibatch".into(),
                reason: "no sample; the grid spans the minibatch's projections".into(),
            });
        }
        let order = self.order(model)?;
        let axes = self.axes(&order, batch)?;
        let k = axes.len();
        // Grid point p has axis indices (p / stride_l) % points, the first axis fastest.
        let index = |p: usize, l: usize| (p / self.points.pow(l as u32)) % self.points;
        let n = self.n_points();
        let targets: Vec<f64> = (0..n)
            .flat_map(|p| (0..k).map(move |l| (p, l)))
            .map(|(p, l)| axes[l][index(p, l)])
            .collect();
        let settings = ProfileSettings {
            alpha: self.alpha,
            replicas: self.replicas,
            burn_in: self.sweeps - self.measure,
            measure: self.measure,
        };
        let (mean, _) = measure_targets(
            model,
            &order,
            &targets,
            &settings,
            &mut state.chains,
            1.0,
            par,
        )?;
        // The gradient of the potential, one component per order parameter (Eq. 17).
        let gradient: Vec<Vec<f64>> = (0..k)
            .map(|l| {
                (0..n)
                    .map(|p| targets[p * k + l] - mean[p * k + l])
                    .collect()
            })
            .collect();
        let (log_density, rec, rec_2d) = if k == 1 {
            let rec = reconstruct(&axes[0], &gradient[0], self.alpha)?;
            (rec.log_density.clone(), Some(rec), None)
        } else {
            let rec = reconstruct_2d(&axes[0], &axes[1], &gradient[0], &gradient[1], self.alpha)?;
            (rec.log_density.clone(), None, Some(rec))
        };
        let quadrature: Vec<Vec<f64>> = axes.iter().map(|a| trapezoid_weights(a)).collect();
        for (p, w) in state.weights.chunks_mut(self.replicas).enumerate() {
            let q: f64 = (0..k).map(|l| quadrature[l][index(p, l)]).product();
            w.fill(q * log_density[p].exp() / self.replicas as f64);
        }
        state.order = Some(order);
        state.reconstruction = rec;
        state.reconstruction_2d = rec_2d;
        Ok(())
    }
}

impl Tmc {
    /// [`TmcWarning::TetherBelowCurvature`] when [`Tmc::alpha`] does not exceed the hidden
    /// units' curvature bound \\(K\\) along the order parameters of the last measurement
    /// ([`ebm_samplers::tethered::tether_curvature_bound`]): the tethered law can then have
    /// two components at some targets (a hidden unit on or off) that the chains do not
    /// connect, and the model term of the gradient is that of one component. `None` above the bound, before the first
    /// measurement, and for real-valued hidden units (no bound).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `model` is not the model the state was measured with.
    pub fn curvature_warning<V, H>(
        &self,
        model: &Rbm<V, H>,
        state: &TmcState<V::Scalar>,
    ) -> Result<Option<TmcWarning>>
    where
        V: ebm_models::Layer,
        H: ebm_models::Layer<Scalar = V::Scalar>,
    {
        match &state.order {
            Some(order) => curvature_warning(model, order, self.alpha),
            None => Ok(None),
        }
    }
}

/// The trapezoid weights of a grid: \\(\int f \approx \sum_j q_j f(x_j)\\) with
/// \\(q_j = \tfrac12 (x_{j+1} - x_{j-1})\\), one-sided at the ends.
fn trapezoid_weights(grid: &[f64]) -> Vec<f64> {
    let n = grid.len();
    (0..n)
        .map(|j| {
            let left = if j > 0 { grid[j] - grid[j - 1] } else { 0.0 };
            let right = if j + 1 < n {
                grid[j + 1] - grid[j]
            } else {
                0.0
            };
            0.5 * (left + right)
        })
        .collect()
}

impl<V, H> NegativePhase<V, H> for Tmc
where
    V: TrainableLayer + DiscreteLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    type State = TmcState<V::Scalar>;

    /// Chains with uniformly random visible units (the reference code's Bernoulli(1/2)
    /// start), streams from `seed`.
    fn init(&self, model: &Rbm<V, H>, _batch: usize, seed: u64, _par: Par) -> Result<Self::State> {
        self.validate(model.visible().width())?;
        let n = self.n_chains();
        Ok(TmcState {
            chains: profile_chains(model, n, seed),
            weights: vec![1.0 / n as f64; n],
            order: None,
            reconstruction: None,
            reconstruction_2d: None,
        })
    }

    fn chains_held(&self, _batch: usize) -> usize {
        self.n_chains()
    }

    fn check_state(&self, state: &Self::State, _batch: usize) -> Result<()> {
        let n = self.n_chains();
        let c = &state.chains;
        Error::check_len(
            "Tmc chains (points^dimensions x replicas)",
            n,
            c.chains.visible.ncols(),
        )?;
        Error::check_len("Tmc chains (hidden layer)", n, c.chains.hidden.ncols())?;
        Error::check_len("Tmc chains (streams)", n, c.rngs.len())?;
        Error::check_len("Tmc weights", n, state.weights.len())?;
        crate::negative::check_weights("Tmc weights", &state.weights, false)
    }

    /// # Errors
    /// As [`Tmc::measure`]: an invalid configuration, or a minibatch that is empty or of the
    /// wrong width (the grid is built from it), or a weight matrix without a singular
    /// direction (no hidden unit). Non-finite weights cannot occur: an [`Rbm`] holds finite
    /// parameters. On error the chains may have moved; the weights and reconstruction are
    /// those of the last successful update.
    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        self.measure(model, state, batch, par)?;
        let tethered_warnings = self.curvature_warning(model, state)?.into_iter().collect();
        let (s1, s2) = state
            .weights
            .iter()
            .fold((0.0, 0.0), |(a, b), w| (a + w, b + w * w));
        Ok(NegativeInfo {
            sweeps: self.sweeps as u64,
            chain_sweeps: (self.sweeps * self.n_chains()) as u64,
            ess: Some(s1 * s1 / (state.weights.len() as f64 * s2)),
            tethered_warnings,
            ..NegativeInfo::default()
        })
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar> {
        &state.chains.chains
    }

    fn weights<'a>(&self, state: &'a Self::State) -> Option<&'a [f64]> {
        Some(&state.weights)
    }
}

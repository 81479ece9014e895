//! Tethered Monte Carlo as the negative phase of training (TMC-RBM).
//!
//! Paper: "Learning a Restricted Boltzmann Machine using biased Monte Carlo sampling"
//! (Béreux, Decelle, Furtlehner, Seoane, SciPost Phys. 14, 032, 2023), §4.3 and Fig. 2.

use crate::layers::TrainableLayer;
use crate::negative::{NegativeInfo, NegativePhase};
use ebm_core::{ChainState, Error, Par, Result, Scalar};
use ebm_models::{DiscreteLayer, Rbm, RbmChains};
use ebm_samplers::tethered::profile::{
    ProfileSettings, Reconstruction, measure_profile, profile_chains, uniform_grid,
};
use ebm_samplers::tethered::{GaussianTether, OrderParameter};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// Where the tethered direction \\(\omega\\) of [`Tmc`] comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TmcDirection {
    /// The leading visible singular vector of the current weights \\(W\\), recomputed at every
    /// update (the reference code with its `PCA` setting off).
    Weights,
    /// A fixed direction, e.g. the data's first principal component
    /// ([`OrderParameter::from_pca`]; the reference code with `PCA` on). One direction.
    Fixed(OrderParameter),
}

/// Tethered Monte Carlo as a [`NegativePhase`] (paper §4.3): `points * replicas` persistent
/// chains, chain `c` tethered by the Gaussian tether of strength `alpha` to grid point
/// \\(\hat m_{\lfloor c / \text{replicas}\rfloor}\\). Before every update:
///
/// 1. the direction \\(\omega\\) ([`TmcDirection`]) and a uniform grid of `points` targets from
///    the minimum to the maximum projection of the current minibatch, widened by `border` on
///    each side (the grid moves with the minibatch; chains keep their slot);
/// 2. `sweeps` TMC sweeps ([`ebm_samplers::tethered::Tethered`]) on every chain, the order
///    parameter time-averaged over the last `measure` (the paper's Eq. 19);
/// 3. \\(\Omega'(\hat m_j) = \hat m_j - \langle m\rangle_{\hat m_j}\\), integrated and normalised
///    to \\(p(\hat m)\\) (Eqs. 12–14, [`ebm_samplers::tethered::profile::reconstruct`]);
/// 4. the chains' final configurations are weighted so that the trainer's weighted moments are
///    the canonical averages of Eq. 15,
///    \\(\langle O\rangle = \int \langle O\rangle_{\hat m}\, p(\hat m)\, d\hat m\\): chain `c` at
///    grid point `j` gets weight \\(q_j\, p(\hat m_j) / \text{replicas}\\) with \\(q_j\\) the
///    trapezoid weights of the grid ([`NegativePhase::weights`]).
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
/// Visible layers must be discrete ([`DiscreteLayer`]); only one order parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tmc {
    /// Tether strength \\(\alpha\\) (the reference code: \\(2\cdot10^4\\)).
    pub alpha: f64,
    /// Grid points (spacing best no larger than \\(1/\sqrt\alpha\\)).
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
    /// The tethered direction.
    pub direction: TmcDirection,
}

/// The state of [`Tmc`]: persistent chains and the last reconstruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct TmcState<F: Scalar> {
    /// The `points * replicas` chains (grid point `c / replicas`) and their streams.
    pub chains: ChainState<RbmChains<F>>,
    /// Weights of the chains in the model average (uniform before the first update).
    pub weights: Vec<f64>,
    /// The direction used at the last update (`None` before the first).
    pub order: Option<OrderParameter>,
    /// \\(\Omega\\) and \\(p(\hat m)\\) reconstructed at the last update (`None` before the
    /// first).
    pub reconstruction: Option<Reconstruction>,
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
            && (o.k() != 1 || o.width() != width)
        {
            return bad(
                "direction",
                format!(
                    "{} direction(s) of width {}; one direction of the visible width {width} expected",
                    o.k(),
                    o.width()
                ),
            );
        }
        Ok(())
    }

    fn n_chains(&self) -> usize {
        self.points * self.replicas
    }

    /// The direction for `model`.
    fn order<V: DiscreteLayer, H: ebm_models::Layer<Scalar = V::Scalar>>(
        &self,
        model: &Rbm<V, H>,
    ) -> Result<OrderParameter> {
        match &self.direction {
            TmcDirection::Weights => OrderParameter::from_weights(model, 1),
            TmcDirection::Fixed(o) => Ok(o.clone()),
        }
    }

    /// The grid spanning the projections of the columns of `batch` widened by the border.
    fn grid<F: Scalar>(&self, order: &OrderParameter, batch: &DMatrix<F>) -> Result<Vec<f64>> {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let mut m = [0.0];
        for col in batch.column_iter() {
            order.project(col.as_slice(), &mut m);
            lo = lo.min(m[0]);
            hi = hi.max(m[0]);
        }
        uniform_grid(lo - self.border, hi + self.border, self.points)
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
        let grid = self.grid(&order, batch)?;
        let settings = ProfileSettings {
            alpha: self.alpha,
            replicas: self.replicas,
            burn_in: self.sweeps - self.measure,
            measure: self.measure,
        };
        let profile =
            measure_profile(model, &order, &grid, &settings, &mut state.chains, 1.0, par)?;
        let rec = profile.reconstruct(self.alpha)?;
        let n = grid.len();
        for (j, w) in state.weights.chunks_mut(self.replicas).enumerate() {
            let left = if j > 0 { grid[j] - grid[j - 1] } else { 0.0 };
            let right = if j + 1 < n {
                grid[j + 1] - grid[j]
            } else {
                0.0
            };
            let q = 0.5 * (left + right) * rec.log_density[j].exp() / self.replicas as f64;
            w.fill(q);
        }
        state.order = Some(order);
        state.reconstruction = Some(rec);
        Ok(())
    }
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
        })
    }

    fn chains_held(&self, _batch: usize) -> usize {
        self.points.saturating_mul(self.replicas)
    }

    fn check_state(&self, state: &Self::State, _batch: usize) -> Result<()> {
        let n = self.n_chains();
        let c = &state.chains;
        Error::check_len(
            "Tmc chains (points x replicas)",
            n,
            c.chains.visible.ncols(),
        )?;
        Error::check_len("Tmc chains (hidden layer)", n, c.chains.hidden.ncols())?;
        Error::check_len("Tmc chains (streams)", n, c.rngs.len())?;
        Error::check_len("Tmc weights", n, state.weights.len())?;
        Error::check_finite("Tmc weights", &state.weights)
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
        let (s1, s2) = state
            .weights
            .iter()
            .fold((0.0, 0.0), |(a, b), w| (a + w, b + w * w));
        Ok(NegativeInfo {
            sweeps: self.sweeps as u64,
            chain_sweeps: (self.sweeps * self.n_chains()) as u64,
            ess: Some(s1 * s1 / (state.weights.len() as f64 * s2)),
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

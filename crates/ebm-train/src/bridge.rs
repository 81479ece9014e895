//! The bridged negative phase for training from a pretrained model ([`Bridged`]).

use crate::layers::TrainableLayer;
use crate::negative::{NegativeInfo, NegativePhase, Tempered, run_rounds};
use ebm_core::{ChainRng, EnergyModel, Error, Kernel, Par, Result};
use ebm_models::{Rbm, RbmChains};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    ParallelTempering, PtState, Rung0, Rung0Limits, SwapSchedule, TrajectoryLadder,
    validate_betas_to_one,
};
use nalgebra::DMatrix;

/// Parallel tempering between the pretrained model \\(\Theta_0\\) ([`Bridged::reference`])
/// and the current parameters, on the interpolated models
/// \\(t_k\Theta + (1 - t_k)\Theta_0\\). Each update runs [`Bridged::rounds`] rounds; every round
/// explores each rung (rung 0 by an exact draw when the hidden layer can be enumerated, the
/// others by [`Bridged::sweeps`] Gibbs sweeps), then proposes every neighbouring pair from the
/// bottom up ([`SwapSchedule::Sweep`], as in parallel trajectory tempering). The chains of the
/// last rung give the model average.
///
/// # Why
///
/// A low-rank pretrained start (the RCM of paper 000, [`crate::pretrain`]) already has its
/// modes, separated by barriers that Gibbs sampling does not cross (on the demo's 8x8 Ising
/// data, two modes at magnetisation \\(\pm 1\\)). Persistent chains drawn exactly from it then
/// keep their mode proportions \\(\hat p\\) for ever, while the model's own weight \\(p\\)
/// moves with the parameters. The gradient's component along the direction that sets the
/// modes' relative weight is proportional to \\(p_{\text{data}} - \hat p\\), not to
/// \\(p_{\text{data}} - p\\): it stays constant, and the model's log-odds of the modes drift
/// linearly in the number of updates, at a rate proportional to the learning rate, the
/// mismatch and the squared distance between the modes (about \\(N\\) for spins). Measured
/// by `tests/pipeline.rs` on the demo's data (one direction, 16 hidden units, exact values by
/// enumeration): PCD-10 from the pretrained start loses 1.7 nats of exact log-likelihood per
/// sample in 400 updates and the exact weight of one mode falls from 0.55 to 0.01, while the
/// same training with exact draws as the negative phase, or with [`Bridged`], keeps both modes
/// and the likelihood.
///
/// # The bridge
///
/// [`Bridged`] runs parallel tempering on the linear interpolation of the parameters,
/// \\(\Theta_k = t_k\Theta + (1 - t_k)\Theta_0\\) for \\(0 = t_0 < \dots < t_K = 1\\), from the
/// pretrained model \\(\Theta_0\\) to the current one \\(\Theta\\). Since the energy is linear in
/// the parameters, rung \\(k\\) is \\(p_0^{1 - t_k} p_\Theta^{t_k}\\) up to normalisation, the
/// same bridge as PT with reference ([`ebm_samplers::tempering::ReferenceLadder`]), but with the
/// pretrained model as the reference: rung 0 can be sampled exactly, and the bridge follows
/// the training's own path, along which the modes' weights change smoothly (the argument of
/// parallel trajectory tempering, paper 000 §3). Rung 0 is refreshed with an independent exact
/// draw every round when the hidden layer can be enumerated; otherwise, when the reference is
/// a low-rank binary RBM (as `pretrain` writes them), by a draw of its static sampler accepted
/// by Metropolis–Hastings ([`LowRankIndependence`](ebm_samplers::LowRankIndependence), exact
/// at any size, on a mesh of at most [`Bridged::LOW_RANK_MESH_POINTS`] points); otherwise by Gibbs sweeps like the other rungs
/// (and then it mixes no better than they do): the choice of [`Rung0::choose`]. The exchange is
/// the exact Metropolis ratio of [`ebm_samplers::tempering::Exchange`] for a ladder, so the
/// product of the rungs' laws is invariant and the last rung's chains sample the current model.
#[derive(Clone, Debug)]
pub struct Bridged<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> {
    reference: Rbm<V, H>,
    coefficients: Vec<f64>,
    sweeps: usize,
    rounds: usize,
    chains: usize,
    /// What explores rung 0 (the reference), chosen once.
    rung0: Rung0,
}

impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> Bridged<V, H> {
    /// The most mesh points of the static sampler that explores rung 0 of a low-rank reference
    /// too large to enumerate. Each round evaluates the proposal's density at every mesh point
    /// twice per chain (\\(O(Kd)\\)), so this is a tenth of pretraining's default mesh: a
    /// coarser mesh only lowers the acceptance, the kernel stays exact.
    pub const LOW_RANK_MESH_POINTS: usize = 10_000;

    /// The bridge from `reference` on `rungs` evenly spaced coefficients
    /// \\(t_k = k / (K - 1)\\), with `sweeps` Gibbs sweeps per rung and round, `rounds` rounds
    /// per update and `chains` systems. The hidden layer of `reference` is enumerated once when
    /// it has at most `max_enumerated` configurations (rung 0 is then refreshed exactly);
    /// beyond that, a low-rank binary reference gets the static sampler of
    /// [`LowRankIndependence`](ebm_samplers::LowRankIndependence) as rung 0's proposal.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for fewer than 2 or more than [`Tempered::MAX_RUNGS`] rungs,
    /// or no sweeps, rounds or chains;
    /// errors of the enumeration.
    pub fn new(
        reference: Rbm<V, H>,
        rungs: usize,
        sweeps: usize,
        rounds: usize,
        chains: usize,
        max_enumerated: u128,
        par: Par,
    ) -> Result<Self> {
        // Checked before the coefficients are allocated.
        if !(2..=Tempered::MAX_RUNGS).contains(&rungs) {
            return Err(Error::InvalidParameter {
                name: "Bridged::rungs".into(),
                reason: format!(
                    "the bridge needs 2 to {} rungs, got {rungs}",
                    Tempered::MAX_RUNGS
                ),
            });
        }
        let coefficients = (0..rungs)
            .map(|k| {
                if k + 1 == rungs {
                    1.0
                } else {
                    k as f64 / (rungs - 1) as f64
                }
            })
            .collect();
        let limits = Rung0Limits {
            max_enumerated,
            max_mesh_points: Self::LOW_RANK_MESH_POINTS,
        };
        let rung0 = Rung0::choose(&reference, 1.0, sweeps, limits, par).map_err(|e| {
            Error::InvalidParameter {
                name: "Bridged::reference".into(),
                reason: format!("cannot enumerate the hidden layer: {e}"),
            }
        })?;
        let bridged = Self {
            reference,
            coefficients,
            sweeps,
            rounds,
            chains,
            rung0,
        };
        bridged.as_tempered().validate()?;
        Ok(bridged)
    }

    /// The pretrained model \\(\Theta_0\\) at rung 0.
    pub fn reference(&self) -> &Rbm<V, H> {
        &self.reference
    }

    /// The coefficients \\(t_k\\), from 0 (the reference) to 1 (the current model).
    pub fn coefficients(&self) -> &[f64] {
        &self.coefficients
    }

    /// Gibbs sweeps per rung and round.
    pub fn sweeps(&self) -> usize {
        self.sweeps
    }

    /// PT rounds per update.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// Whether rung 0 is refreshed by exact draws (its hidden layer enumerated).
    pub fn exact_reference(&self) -> bool {
        matches!(self.rung0, Rung0::Exact(_))
    }

    /// Whether rung 0 is explored by Metropolis–Hastings with the static sampler of the
    /// (low-rank) reference as proposal.
    pub fn low_rank_reference(&self) -> bool {
        matches!(self.rung0, Rung0::StaticMh { .. })
    }

    /// The same shape of ladder as a [`Tempered`] phase, for the checks and counts they share.
    fn as_tempered(&self) -> Tempered {
        Tempered {
            betas: self.coefficients.clone(),
            schedule: SwapSchedule::Sweep,
            sweeps: self.sweeps,
            rounds: self.rounds,
            chains: self.chains,
        }
    }

    /// The interpolated models, rung 0 the reference itself.
    fn ladder(&self, model: &Rbm<V, H>) -> Result<TrajectoryLadder<Rbm<V, H>>> {
        let models = self
            .coefficients
            .iter()
            .map(|&t| {
                if t == 0.0 {
                    Ok(self.reference.clone())
                } else {
                    model.interpolate(&self.reference, t)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        TrajectoryLadder::new(models)
    }

    /// Replaces every chain of `x` by an exact draw of the reference (when enumerated).
    fn draw_reference(&self, x: &mut RbmChains<V::Scalar>, rngs: &mut [ChainRng], par: Par) {
        if let Rung0::Exact(e) = &self.rung0 {
            e.sample_any(&self.reference, x, rngs, par);
        }
    }
}

impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> NegativePhase<V, H>
    for Bridged<V, H>
{
    type State = PtState<RbmChains<V::Scalar>>;

    /// Every rung starts from exact draws of the reference when its hidden layer is
    /// enumerated (at the start of training the current model is the reference, so every
    /// rung is then in equilibrium); otherwise from one Gibbs sweep of the current model, like
    /// [`Tempered`] (seed them from the pretrained start's sampler).
    fn init(&self, model: &Rbm<V, H>, _batch: usize, seed: u64, par: Par) -> Result<Self::State> {
        validate_betas_to_one(&self.coefficients)?;
        self.ladder(model)?;
        let rungs = self
            .coefficients
            .iter()
            .map(|_| model.new_state(self.chains))
            .collect();
        let mut state = PtState::new(rungs, seed)?;
        for (x, rngs) in state.rungs_with_streams_mut() {
            if self.exact_reference() {
                self.draw_reference(x, rngs, par);
            } else {
                Gibbs::new(1).step(model, 1.0, x, rngs, par);
            }
        }
        Ok(state)
    }

    fn chains_held(&self, _batch: usize) -> usize {
        self.chains.saturating_mul(self.coefficients.len())
    }

    fn check_state(&self, state: &Self::State, batch: usize) -> Result<()> {
        NegativePhase::<V, H>::check_state(&self.as_tempered(), state, batch)
    }

    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        _batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        let ladder = self.ladder(model)?;
        let pt = ParallelTempering::new(Gibbs::new(self.sweeps), SwapSchedule::Sweep)
            .with_rung0_kernel(&self.rung0);
        let rounds = run_rounds(&pt, &ladder, state, self.rounds, par);
        Ok(self
            .as_tempered()
            .info(rounds.round_trips, &rounds.proposed, &rounds.totals()))
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar> {
        state.rungs().last().expect("at least one rung")
    }

    fn every_chain<'a>(&self, state: &'a Self::State) -> Vec<&'a RbmChains<V::Scalar>> {
        state.rungs().iter().collect()
    }
}

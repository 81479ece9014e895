//! The negative phase: where the model average of the gradient comes from.
//!
//! A negative phase is a configuration value implementing [`NegativePhase`]; its chains, RNG
//! streams and counters live in its [`NegativePhase::State`], an explicit serialisable value
//! that is part of the trainer state (so training resumes exactly). The trainer is generic over
//! it: persistent Gibbs chains ([`Pcd`], PCD-k), chains restarted at the data ([`Cd`], CD-k),
//! parallel tempering on a temperature ladder with any swap schedule ([`Tempered`]: PT, DEO,
//! lifted PT), and the Jarzynski / population-annealing reweighted chains ([`Jarzynski`]).
//! Trajectory, stacked and tethered samplers plug in the same way.

use crate::PersistentKernel;
use crate::layers::TrainableLayer;
use ebm_core::{ChainRng, ChainState, EnergyModel, Error, Kernel, Par, Result, RngStreams, Scalar};
use ebm_estimators::{LogMeanExp, systematic_resampling};
use ebm_models::{Layer, Rbm, RbmChains};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Exchange, ParallelTempering, PtState, SwapSchedule, TemperatureLadder, TemperatureSpec,
    validate_betas_to_one,
};
use ebm_samplers::tethered::profile::TmcWarning;
use nalgebra::DMatrix;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What the negative phase did during one update.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NegativeInfo {
    /// Gibbs sweeps applied to every chain of every rung (the cost per chain in AGS steps).
    pub sweeps: u64,
    /// Total chain-sweeps (sweeps x chains x rungs): the cost of the update's negative phase.
    pub chain_sweeps: u64,
    /// Tempered phases: the mean swap acceptance probability of each neighbouring pair
    /// \\((k, k+1)\\) during this update (empty otherwise; `NaN` for a pair with no proposal,
    /// e.g. half the pairs of an even/odd schedule in a one-round update).
    pub swap_acceptance: Vec<f64>,
    /// Tempered phases: round trips completed during this update.
    pub round_trips: u64,
    /// Reweighted phases: the relative effective sample size of the chain weights after the
    /// update, \\((\sum_r w_r)^2 / (R \sum_r w_r^2) \in [1/R, 1]\\) (Béreux et al., *Fast training and sampling of RBMs*),
    /// before any resampling.
    pub ess: Option<f64>,
    /// Reweighted phases: whether the chains were resampled after the update.
    pub resampled: bool,
    /// Tethered phases ([`crate::Tmc`]): why this update's tethered measurement may be
    /// biased; today [`TmcWarning::TetherBelowCurvature`], when the tether strength does not
    /// exceed the hidden units' curvature bound along the order parameters at the current
    /// model (empty otherwise, and for the other phases).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tethered_warnings: Vec<TmcWarning>,
}

/// A source of model samples for the negative term of the gradient.
///
/// Each update the trainer calls [`NegativePhase::sample`] at the current parameters, computes
/// the model moments of [`NegativePhase::chains`] (weighted by [`NegativePhase::weights`]),
/// updates the parameters, then calls [`NegativePhase::after_update`] with the old and new
/// models. Chain `i` of the state consumes only its own RNG stream, so the result does not
/// depend on [`Par`].
pub trait NegativePhase<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>>: Sync {
    /// The phase's chains, streams and counters (serialisable, for exact resume).
    type State: Clone + std::fmt::Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync;

    /// A fresh state for `model`, for minibatches of `batch_size` samples, with streams
    /// derived from `seed`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid configuration (no chains, no sweeps, a bad
    /// ladder).
    fn init(
        &self,
        model: &Rbm<V, H>,
        batch_size: usize,
        seed: u64,
        par: Par,
    ) -> Result<Self::State>;

    /// Moves the chains under `model` (the current parameters); `batch` is the current
    /// minibatch (`V::width() x batch_size`), used by phases that start at the data or build
    /// their sampler from it.
    ///
    /// # Errors
    /// When the phase cannot sample under these parameters or this minibatch (e.g. a tethered
    /// direction that cannot be computed from non-finite weights, or a minibatch of the wrong
    /// shape); the trainer stops with the error.
    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo>;

    /// Checks that `state` belongs to this configuration (e.g. a state loaded from a file
    /// written by a run with other settings): numbers of chains and rungs.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] naming what differs.
    fn check_state(&self, state: &Self::State, batch_size: usize) -> Result<()>;

    /// The number of chains the state holds for minibatches of `batch_size` (for the memory
    /// estimate of [`crate::Trainer::memory_estimate`]); the default, one per sample of a
    /// batch, is CD's.
    fn chains_held(&self, batch_size: usize) -> usize {
        batch_size
    }

    /// The chains whose visible configurations give the model average (after
    /// [`NegativePhase::sample`]).
    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar>;

    /// Weights of the chains in the model average (`None`: uniform).
    fn weights<'a>(&self, _state: &'a Self::State) -> Option<&'a [f64]> {
        None
    }

    /// Whether the chains (with their weights) are meant to sample the current model, so that
    /// the trainer may check them against the online estimator's chains
    /// ([`crate::LikelihoodInfo::negative_z`]); `false` for phases that start at the data
    /// every update ([`Cd`]).
    fn samples_the_model(&self) -> bool {
        true
    }

    /// Called after the parameters moved from `old` to `new` (reweighting phases update their
    /// weights here and record it in `info`). The default does nothing.
    ///
    /// # Errors
    /// [`Error::NonFinite`] when the reweighting overflows (the energies of `new` are not
    /// finite on the chains: a step too large); the state is then not fit for a resume.
    fn after_update(
        &self,
        _old: &Rbm<V, H>,
        _new: &Rbm<V, H>,
        _state: &mut Self::State,
        _info: &mut NegativeInfo,
        _par: Par,
    ) -> Result<()> {
        Ok(())
    }

    /// Every set of chains the state holds (every rung of a tempered phase), for the checks
    /// of a state read from a file; the default is [`NegativePhase::chains`].
    fn every_chain<'a>(&self, state: &'a Self::State) -> Vec<&'a RbmChains<V::Scalar>> {
        vec![self.chains(state)]
    }
}

/// Checks the weights of a weighted population: finite, non-negative, of positive sum, and
/// summing to 1 when they are stored `normalised`.
pub(crate) fn check_weights(what: &str, w: &[f64], normalised: bool) -> Result<()> {
    Error::check_finite(what, w)?;
    if let Some(index) = w.iter().position(|&x| x < 0.0) {
        return Err(Error::InvalidParameter {
            name: what.into(),
            reason: format!("must be >= 0, got {} at index {index}", w[index]),
        });
    }
    let sum: f64 = w.iter().sum();
    if !(sum > 0.0 && sum.is_finite()) || (normalised && (sum - 1.0).abs() > 1e-9) {
        let expected = if normalised {
            "1 (they are normalised)"
        } else {
            "a finite positive value"
        };
        return Err(Error::InvalidParameter {
            name: what.into(),
            reason: format!("must sum to {expected}, got {sum}"),
        });
    }
    Ok(())
}

pub(crate) fn check_count(name: &str, n: usize) -> Result<()> {
    if n == 0 {
        Err(Error::InvalidParameter {
            name: name.into(),
            reason: "must be at least 1".into(),
        })
    } else {
        Ok(())
    }
}

/// Checks a batch of chains (both layers) and its number of streams against `n`.
pub(crate) fn check_chains<F: Scalar>(
    what: &str,
    n: usize,
    x: &RbmChains<F>,
    streams: usize,
) -> Result<()> {
    Error::check_len(what, n, x.visible.ncols())?;
    Error::check_len(&format!("{what} (hidden layer)"), n, x.hidden.ncols())?;
    Error::check_len(&format!("{what} (streams)"), n, streams)
}

/// `n` chains drawn by one Gibbs sweep of `model` at `beta` from the default configuration
/// (exact draws when the model has no couplings, e.g. a fresh model with \\(W = 0\\)).
pub(crate) fn initial_chains<V: Layer, H: Layer<Scalar = V::Scalar>>(
    model: &Rbm<V, H>,
    n: usize,
    seed: u64,
    par: Par,
) -> ChainState<RbmChains<V::Scalar>> {
    let mut state = ChainState::new(model.new_state(n), seed);
    Gibbs::new(1).step(
        model,
        1.0,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        par,
    );
    state
}

/// Persistent contrastive divergence, PCD-k (Béreux et al., *Fast training and sampling of RBMs*,
/// Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*): `chains` persistent chains, each moved by `sweeps` alternating
/// Gibbs sweeps at the current parameters before every update. The chains start from one
/// sweep of the initial model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pcd {
    /// Gibbs sweeps per update (k).
    pub sweeps: usize,
    /// Number of persistent chains.
    pub chains: usize,
}

impl Pcd {
    fn validate(&self) -> Result<()> {
        check_count("Pcd::sweeps", self.sweeps)?;
        check_count("Pcd::chains", self.chains)
    }

    /// The same phase as a [`PersistentKernel`] of `sweeps`-sweep Gibbs steps, one step per
    /// update: PCD is that case, and runs through it.
    fn as_persistent(&self) -> PersistentKernel<Gibbs> {
        PersistentKernel {
            kernel: Gibbs::new(self.sweeps),
            steps: 1,
            chains: self.chains,
        }
    }
}

impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> NegativePhase<V, H> for Pcd {
    type State = ChainState<RbmChains<V::Scalar>>;

    fn init(&self, model: &Rbm<V, H>, _batch: usize, seed: u64, par: Par) -> Result<Self::State> {
        self.validate()?;
        Ok(initial_chains(model, self.chains, seed, par))
    }

    fn chains_held(&self, _batch: usize) -> usize {
        self.chains
    }

    fn check_state(&self, state: &Self::State, _batch: usize) -> Result<()> {
        self.validate()?;
        check_chains("Pcd chains", self.chains, &state.chains, state.rngs.len())
    }

    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        // One persistent-kernel step is `sweeps` AGS sweeps: report the cost in sweeps, as
        // the field documents, not in kernel steps.
        let info = self.as_persistent().sample(model, state, batch, par)?;
        Ok(NegativeInfo {
            sweeps: self.sweeps as u64,
            chain_sweeps: (self.sweeps * self.chains) as u64,
            ..info
        })
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar> {
        &state.chains
    }
}

/// Contrastive divergence, CD-k (Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*): one chain per sample of the
/// minibatch, restarted at the data before every update and moved by `sweeps` Gibbs sweeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cd {
    /// Gibbs sweeps per update (k).
    pub sweeps: usize,
}

impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> NegativePhase<V, H> for Cd {
    type State = ChainState<RbmChains<V::Scalar>>;

    fn init(&self, model: &Rbm<V, H>, batch: usize, seed: u64, _par: Par) -> Result<Self::State> {
        check_count("Cd::sweeps", self.sweeps)?;
        Ok(ChainState::new(model.new_state(batch), seed))
    }

    fn check_state(&self, state: &Self::State, batch: usize) -> Result<()> {
        check_count("Cd::sweeps", self.sweeps)?;
        check_chains(
            "Cd chains (one per sample of a batch)",
            batch,
            &state.chains,
            state.rngs.len(),
        )
    }

    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        if batch.shape() != state.chains.visible.shape() {
            return Err(Error::ShapeMismatch {
                what: "Cd minibatch (one chain per sample)".into(),
                expected: format!("{:?}", state.chains.visible.shape()),
                got: format!("{:?}", batch.shape()),
            });
        }
        state.chains.visible.copy_from(batch);
        Gibbs::new(self.sweeps).step(
            model,
            1.0,
            &mut state.chains,
            state.rngs.as_mut_slice(),
            par,
        );
        state.steps += 1;
        Ok(NegativeInfo {
            sweeps: self.sweeps as u64,
            chain_sweeps: (self.sweeps * batch.ncols()) as u64,
            ..NegativeInfo::default()
        })
    }

    fn samples_the_model(&self) -> bool {
        false
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar> {
        &state.chains
    }
}

/// Parallel tempering as the negative phase (Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*, with the
/// defects of the authors' code corrected: swap threshold in (0, 1), step alpha/B): `chains` independent systems of replicas on the temperature ladder
/// `betas` (increasing, the last equal to 1) of the current model. Each update runs `rounds`
/// PT rounds, each of `sweeps` Gibbs sweeps on every rung followed by exchanges under
/// `schedule` (stochastic or deterministic even/odd, random pair, lifted), with the exact
/// tempered free energies; the model average uses the chains at \\(\beta = 1\\) (the last rung)
/// after the exchanges. The ladder is rebuilt around the current parameters each update (a
/// copy of the model, cheap next to the sweeps). Real-valued units need every \\(\beta > 0\\).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tempered {
    /// Inverse temperatures, increasing, ending at 1.
    pub betas: Vec<f64>,
    /// Swap schedule.
    pub schedule: SwapSchedule,
    /// Gibbs sweeps per rung and round.
    pub sweeps: usize,
    /// PT rounds per update.
    pub rounds: usize,
    /// Chains (systems of replicas).
    pub chains: usize,
}

impl Tempered {
    /// The largest number of rungs accepted ([`TemperatureSpec::MAX_RUNGS`]).
    pub const MAX_RUNGS: usize = TemperatureSpec::MAX_RUNGS;

    pub(crate) fn validate(&self) -> Result<()> {
        check_count("Tempered::sweeps", self.sweeps)?;
        check_count("Tempered::rounds", self.rounds)?;
        check_count("Tempered::chains", self.chains)?;
        if !(2..=Self::MAX_RUNGS).contains(&self.betas.len()) {
            return Err(Error::InvalidParameter {
                name: "Tempered::betas".into(),
                reason: format!(
                    "parallel tempering needs 2 to {} rungs, got {}",
                    Self::MAX_RUNGS,
                    self.betas.len()
                ),
            });
        }
        validate_betas_to_one(&self.betas)
    }

    /// The update's [`Tempered::rounds`] PT rounds on `state` (every system it holds), with
    /// the counts they made.
    pub(crate) fn rounds<V, H>(
        &self,
        model: &Rbm<V, H>,
        state: &mut PtState<RbmChains<V::Scalar>>,
        par: Par,
    ) -> Rounds
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
    {
        let ladder = TemperatureLadder::new(model.clone(), self.betas.clone())
            .expect("betas validated in init");
        let pt = ParallelTempering::new(Gibbs::new(self.sweeps), self.schedule);
        run_rounds(&pt, &ladder, state, self.rounds, par)
    }

    /// What the update did, from its round trips, proposals and summed acceptance
    /// probabilities per pair.
    pub(crate) fn info(&self, round_trips: u64, proposed: &[u64], sums: &[f64]) -> NegativeInfo {
        let sweeps = (self.sweeps * self.rounds) as u64;
        NegativeInfo {
            sweeps,
            chain_sweeps: sweeps * (self.chains * self.betas.len()) as u64,
            swap_acceptance: proposed
                .iter()
                .zip(sums)
                .map(|(&n, &s)| if n == 0 { f64::NAN } else { s / n as f64 })
                .collect(),
            round_trips,
            ..NegativeInfo::default()
        }
    }
}

/// `n` rounds of `pt` on `ladder` (every system `state` holds), with their counts. The products
/// kept by the last update's exchanges belong to the previous parameters and are dropped first.
pub(crate) fn run_rounds<L, K, B>(
    pt: &ParallelTempering<K, B>,
    ladder: &L,
    state: &mut PtState<L::State>,
    n: usize,
    par: Par,
) -> Rounds
where
    L: Exchange,
    K: Kernel<L::RungModel>,
    B: Kernel<L::RungModel>,
{
    let pairs = ladder.n_exchange_rungs().saturating_sub(1);
    let blocks = state.n_chains().div_ceil(ebm_core::CHAIN_CHUNK);
    let mut counts = Rounds {
        round_trips: 0,
        proposed: vec![0; pairs],
        block_sums: vec![0.0; blocks * pairs],
    };
    if blocks == 0 {
        // A shard without systems (more processes than blocks of chains) only counts the
        // rounds.
        state.round += n as u64;
        return counts;
    }
    state.drop_kept_products();
    for _ in 0..n {
        let info = pt.step(ladder, state, par);
        for k in 0..pairs {
            counts.proposed[k] += info.proposed[k];
            for (b, s) in info.acceptance_probability_block_sums[k].iter().enumerate() {
                counts.block_sums[b * pairs + k] += s;
            }
        }
        counts.round_trips += info.round_trips;
    }
    counts
}

/// The counts of an update's PT rounds ([`Tempered::rounds`]) on the systems a state holds.
pub(crate) struct Rounds {
    /// Round trips completed.
    pub round_trips: u64,
    /// Exchanges proposed, per pair.
    pub proposed: Vec<u64>,
    /// \\(\sum \min(1, \alpha)\\) over the proposals, per block of
    /// [`ebm_core::CHAIN_CHUNK`] systems and pair (`[b * pairs + k]`, blocks in system order),
    /// each block's rounds added in round order.
    pub block_sums: Vec<f64>,
}

impl Rounds {
    /// The sums per pair: the blocks' sums added in block order (so the same for the whole
    /// run and for its shards' blocks joined in order).
    pub fn totals(&self) -> Vec<f64> {
        block_order_totals(&self.block_sums, self.proposed.len())
    }
}

/// Per pair, the sums `[b * pairs + k]` of blocks `b` added in block order.
pub(crate) fn block_order_totals(block_sums: &[f64], pairs: usize) -> Vec<f64> {
    let mut totals = vec![0.0; pairs];
    for block in block_sums.chunks(pairs.max(1)) {
        totals.iter_mut().zip(block).for_each(|(t, s)| *t += s);
    }
    totals
}

impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> NegativePhase<V, H> for Tempered {
    type State = PtState<RbmChains<V::Scalar>>;

    fn init(&self, model: &Rbm<V, H>, _batch: usize, seed: u64, par: Par) -> Result<Self::State> {
        self.validate()?;
        TemperatureLadder::new(model.clone(), self.betas.clone())?;
        if (V::REAL_VALUED || H::REAL_VALUED) && self.betas[0] <= 0.0 {
            return Err(Error::InvalidParameter {
                name: "Tempered::betas".into(),
                reason: format!(
                    "real-valued units ({} or {}) need every beta > 0, got {}",
                    V::KIND,
                    H::KIND,
                    self.betas[0]
                ),
            });
        }
        let rungs = self
            .betas
            .iter()
            .map(|_| model.new_state(self.chains))
            .collect();
        let mut state = PtState::new(rungs, seed)?;
        for (k, (x, rngs)) in state.rungs_with_streams_mut().enumerate() {
            Gibbs::new(1).step(model, self.betas[k], x, rngs, par);
        }
        Ok(state)
    }

    fn chains_held(&self, _batch: usize) -> usize {
        self.chains.saturating_mul(self.betas.len())
    }

    fn check_state(&self, state: &Self::State, _batch: usize) -> Result<()> {
        self.validate()?;
        if state.first_rung != 0 {
            return Err(Error::InvalidParameter {
                name: "Tempered first_rung".into(),
                reason: format!(
                    "a training state holds the whole ladder, from rung 0; got {}",
                    state.first_rung
                ),
            });
        }
        Error::check_len("Tempered rungs", self.betas.len(), state.rungs().len())?;
        let n = self.chains * self.betas.len();
        Error::check_len("Tempered streams (rungs x chains)", n, state.rngs.len())?;
        Error::check_len(
            "Tempered replica rows",
            self.betas.len(),
            state.replica.len(),
        )?;
        Error::check_len("Tempered lifting states", self.chains, state.lifted.len())?;
        Error::check_len(
            "Tempered round-trip records",
            self.chains,
            state.last_end.len(),
        )?;
        for r in state.rungs() {
            check_chains("Tempered chains per rung", self.chains, r, self.chains)?;
        }
        for (k, row) in state.replica.iter().enumerate() {
            Error::check_len(&format!("Tempered replica row {k}"), self.chains, row.len())?;
        }
        let shape = |x: &RbmChains<V::Scalar>| (x.visible.nrows(), x.hidden.nrows());
        if let Some(k) = state
            .rungs()
            .iter()
            .position(|r| shape(r) != shape(&state.rungs()[0]))
        {
            return Err(Error::ShapeMismatch {
                what: format!("Tempered chains of rung {k} (visible, hidden widths)"),
                expected: format!("{:?}", shape(&state.rungs()[0])),
                got: format!("{:?}", shape(&state.rungs()[k])),
            });
        }
        let rungs = self.betas.len();
        let mut seen = vec![false; rungs];
        for i in 0..self.chains {
            seen.fill(false);
            let permutation = state.replica.iter().all(|row| {
                let r = row[i] as usize;
                r < rungs && !std::mem::replace(&mut seen[r], true)
            });
            if !permutation {
                return Err(Error::InvalidParameter {
                    name: format!("Tempered replica indices of system {i}"),
                    reason: format!("must be a permutation of the rungs 0..{rungs}"),
                });
            }
            if state.lifted[i].0 as usize >= rungs {
                return Err(Error::InvalidParameter {
                    name: format!("Tempered lifted rung of system {i}"),
                    reason: format!("must be below {rungs}, got {}", state.lifted[i].0),
                });
            }
            if state.last_end[i].len() != rungs {
                return Err(Error::ShapeMismatch {
                    what: format!("Tempered round-trip records of system {i}"),
                    expected: rungs.to_string(),
                    got: state.last_end[i].len().to_string(),
                });
            }
        }
        Ok(())
    }

    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        _batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        let rounds = self.rounds(model, state, par);
        Ok(self.info(rounds.round_trips, &rounds.proposed, &rounds.totals()))
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar> {
        state.rungs().last().expect("at least one rung")
    }

    fn every_chain<'a>(&self, state: &'a Self::State) -> Vec<&'a RbmChains<V::Scalar>> {
        state.rungs().iter().collect()
    }
}

/// Jarzynski-reweighted (population-annealing) persistent chains (Béreux et al., *Fast training and sampling of RBMs*,
/// SI E): `chains` persistent chains moved by `sweeps` Gibbs sweeps at the *current*
/// parameters before the update, carrying log-weights \\(-W_r\\) that make the weighted chains
/// an unbiased representation of the current model despite the chains lagging behind it:
/// after each update \\(\Theta \to \Theta'\\),
///
/// \\[ W_r \leftarrow W_r + F_{\Theta'}(v_r) - F_\Theta(v_r) \\]
///
/// (visible free energies: the chains are tracked on \\(v\\), Eq. 37 on the marginal), and the
/// model average is \\(\sum_r e^{-W_r} o(v_r) / \sum_r e^{-W_r}\\) (Eq. 30). When the relative
/// ESS (Eq. 38, [`LogMeanExp::relative_ess`]) falls below `resample_below_ess`, the
/// chains are resampled in proportion to their weights (systematic resampling, one uniform)
/// ([`systematic_resampling`]) and every \\(W_r\\) is reset to 0; chain \\(r\\) keeps its own RNG stream.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Jarzynski {
    /// Gibbs sweeps per update.
    pub sweeps: usize,
    /// Number of chains.
    pub chains: usize,
    /// Relative ESS in \\((0, 1]\\) below which the chains are resampled (the paper suggests
    /// 0.5, the reference code 0.7).
    pub resample_below_ess: f64,
}

/// The state of [`Jarzynski`]: persistent chains and their weights.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct JarzynskiState<F: Scalar> {
    /// The chains and their streams.
    pub chains: ChainState<RbmChains<F>>,
    /// \\(-W_r\\) per chain.
    pub log_weights: Vec<f64>,
    /// The normalised weights \\(e^{-W_r} / \sum_s e^{-W_s}\\).
    pub weights: Vec<f64>,
    /// The generator of the resampling uniforms.
    pub resampling_rng: ChainRng,
    /// Number of resamplings so far.
    pub resamplings: u64,
}

fn normalised(log_weights: &[f64]) -> Vec<f64> {
    let m = log_weights
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = log_weights.iter().map(|l| (l - m).exp()).collect();
    let s: f64 = w.iter().sum();
    w.iter().map(|x| x / s).collect()
}

impl Jarzynski {
    fn validate(&self) -> Result<()> {
        check_count("Jarzynski::sweeps", self.sweeps)?;
        check_count("Jarzynski::chains", self.chains)?;
        if !(self.resample_below_ess > 0.0 && self.resample_below_ess <= 1.0) {
            return Err(Error::InvalidParameter {
                name: "Jarzynski::resample_below_ess".into(),
                reason: format!("must lie in (0, 1], got {}", self.resample_below_ess),
            });
        }
        Ok(())
    }
}

impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> NegativePhase<V, H> for Jarzynski {
    type State = JarzynskiState<V::Scalar>;

    fn init(&self, model: &Rbm<V, H>, _batch: usize, seed: u64, par: Par) -> Result<Self::State> {
        self.validate()?;
        let n = self.chains;
        Ok(JarzynskiState {
            chains: initial_chains(model, n, seed, par),
            log_weights: vec![0.0; n],
            weights: vec![1.0 / n as f64; n],
            resampling_rng: RngStreams::auxiliary(seed, 4),
            resamplings: 0,
        })
    }

    fn chains_held(&self, _batch: usize) -> usize {
        self.chains
    }

    fn check_state(&self, state: &Self::State, _batch: usize) -> Result<()> {
        self.validate()?;
        let c = &state.chains;
        check_chains("Jarzynski chains", self.chains, &c.chains, c.rngs.len())?;
        Error::check_len(
            "Jarzynski log-weights",
            self.chains,
            state.log_weights.len(),
        )?;
        Error::check_len("Jarzynski weights", self.chains, state.weights.len())?;
        Error::check_finite("Jarzynski log-weights", &state.log_weights)?;
        check_weights("Jarzynski weights", &state.weights, true)
    }

    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        _batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        let c = &mut state.chains;
        Gibbs::new(self.sweeps).step(model, 1.0, &mut c.chains, c.rngs.as_mut_slice(), par);
        c.steps += 1;
        Ok(NegativeInfo {
            sweeps: self.sweeps as u64,
            chain_sweeps: (self.sweeps * self.chains) as u64,
            ..NegativeInfo::default()
        })
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar> {
        &state.chains.chains
    }

    fn weights<'a>(&self, state: &'a Self::State) -> Option<&'a [f64]> {
        Some(&state.weights)
    }

    fn after_update(
        &self,
        old: &Rbm<V, H>,
        new: &Rbm<V, H>,
        state: &mut Self::State,
        info: &mut NegativeInfo,
        par: Par,
    ) -> Result<()> {
        let n = self.chains;
        let (mut e_old, mut e_new) = (vec![0.0; n], vec![0.0; n]);
        let x = &state.chains.chains;
        old.energies(x, 1.0, &mut e_old, par);
        new.energies(x, 1.0, &mut e_new, par);
        for ((l, a), b) in state.log_weights.iter_mut().zip(&e_old).zip(&e_new) {
            *l += a - b;
        }
        // A log-weight of -inf (a chain the new model makes impossible) is a weight of 0;
        // NaN or +inf means the energies overflowed, and all -inf leaves no weight at all.
        let none_left = state.log_weights.iter().all(|l| *l == f64::NEG_INFINITY);
        if let Some(index) = state
            .log_weights
            .iter()
            .position(|l| l.is_nan() || *l == f64::INFINITY || none_left)
        {
            return Err(Error::NonFinite {
                what: "Jarzynski log-weights after the update (the new model's energies \
                       overflow: a step too large)"
                    .into(),
                index,
                value: state.log_weights[index],
            });
        }
        let ess = LogMeanExp::of(&state.log_weights).relative_ess();
        info.ess = Some(ess);
        if ess < self.resample_below_ess {
            let u = f64::uniform(&mut state.resampling_rng);
            let picks = systematic_resampling(&state.log_weights, u);
            let old_chains = state.chains.chains.clone();
            let x = &mut state.chains.chains;
            let (rv, rh) = (x.visible.nrows(), x.hidden.nrows());
            for (i, &j) in picks.iter().enumerate() {
                x.visible.as_mut_slice()[i * rv..(i + 1) * rv]
                    .copy_from_slice(&old_chains.visible.as_slice()[j * rv..(j + 1) * rv]);
                x.hidden.as_mut_slice()[i * rh..(i + 1) * rh]
                    .copy_from_slice(&old_chains.hidden.as_slice()[j * rh..(j + 1) * rh]);
            }
            state.log_weights.fill(0.0);
            state.resamplings += 1;
            info.resampled = true;
        }
        state.weights = normalised(&state.log_weights);
        Ok(())
    }
}

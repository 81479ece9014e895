//! The trainer: configuration ([`Trainer`]), state ([`TrainState`]) and per-update information
//! ([`TrainInfo`]).

use crate::data::{BatchSampler, TrainingData, gather};
use crate::layers::TrainableLayer;
use crate::negative::{NegativeInfo, NegativePhase};
use crate::optim::{LearningRate, Optimizer, OptimizerState, Penalty};
use crate::params::{apply_step, independent_log_partition, zero_sum_gauge};
use crate::shard::{Shard, ShardedPhase, Whole};
use crate::stats::{Gradient, Moments, normalised};
use ebm_core::{ChainRng, ChainState, Error, Kernel, Observer, Par, Result, RngStreams, Scalar};
use ebm_estimators::{Ais, LogZEstimate, OnlineTrajectoryAis, Start, ais};
use ebm_io::Trajectory;
use ebm_models::exact::HiddenEnumeration;
use ebm_models::{Layer, Rbm, RbmChains};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{CheckpointSelector, ReferenceLadder, Selection};
use nalgebra::DMatrix;
use rand::RngCore;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// When to keep training checkpoints for parallel trajectory tempering (Béreux et al., *Fast training and sampling of RBMs*):
/// every `every` updates the current model is offered, with samples
/// of it (see [`SelectionAcceptance`]), to a [`CheckpointSelector`], which keeps it when the
/// estimated swap acceptance between it and the last kept model has fallen below
/// `target_acceptance`. The initial model is always kept. Kept models accumulate in the state
/// ([`TrainState::trajectory`]); with a `path`, the trajectory file is also rewritten
/// (atomically, [`ebm_io::save_trajectory`]) each time a model is kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointPolicy {
    /// Target swap acceptance between neighbouring kept models (0.25 in the paper).
    pub target_acceptance: f64,
    /// Offer the model every this many updates (1: after every update, as the reference code).
    pub every: u64,
    /// Where to write the trajectory file each time a model is kept.
    pub path: Option<PathBuf>,
    /// Which samples the acceptance is estimated from (states written before this option
    /// existed used the training's chains).
    #[serde(default = "chains_acceptance")]
    pub acceptance: SelectionAcceptance,
    /// Number of exact draws of each offered model when the acceptance is estimated from exact
    /// draws (at least 2).
    #[serde(default = "default_exact_draws")]
    pub exact_draws: usize,
}

fn chains_acceptance() -> SelectionAcceptance {
    SelectionAcceptance::Chains
}

fn default_exact_draws() -> usize {
    1000
}

impl Default for CheckpointPolicy {
    fn default() -> Self {
        Self {
            target_acceptance: 0.25,
            every: 1,
            path: None,
            acceptance: SelectionAcceptance::Auto,
            exact_draws: default_exact_draws(),
        }
    }
}

/// Hidden layers with at most this many configurations (\\(N_h \le 20\\) binary units, the
/// exact-computation rule of paper 000) can be enumerated to draw the samples of checkpoint
/// selection exactly ([`SelectionAcceptance::Exact`]).
pub const MAX_EXACT_SELECTION_CONFIGURATIONS: u128 = 1 << 20;

/// [`SelectionAcceptance::Auto`] draws exactly only up to this many hidden configurations
/// (\\(N_h \le 16\\) binary units). Selection enumerates the hidden layer of every offered model,
/// that is after every update by default: at \\(2^{16}\\) configurations that costs about as much
/// as a small update, at \\(2^{20}\\) it costs 16 times more and dominated the default training
/// (20 hidden units), where `Exact` stays available on request.
pub const AUTO_EXACT_SELECTION_CONFIGURATIONS: u128 = 1 << 16;

/// The samples from which checkpoint selection estimates the swap acceptance between the last
/// kept model and the offered one ([`ebm_samplers::tempering::swap_acceptance_with_error`]).
///
/// The PTT paper (Béreux et al., *Fast training and sampling of RBMs*) estimates it on copies of the training's persistent
/// chains. That estimate is unbiased only if those chains are equilibrium samples of their
/// models; while the model learns a new mode they are not (the chains cannot follow the change
/// of mode weights), and the estimate can be far too high: on the 64 x 16 Ising RBM of
/// `ebm reproduce ptt-mixing-ising` (seed 1) the selection estimated 0.257 for a pair whose
/// exact acceptance is 0.067 (`REPRODUCTIONS.md`). When the hidden layer can be enumerated, exact
/// draws of both models remove that bias: this is a deliberate deviation from the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SelectionAcceptance {
    /// The negative phase's persistent chains, as in the paper.
    Chains,
    /// [`CheckpointPolicy::exact_draws`] independent exact draws of each offered model, its
    /// hidden layer enumerated ([`HiddenEnumeration::of_any`]), from one RNG stream
    /// per draw held in the training state; an error unless the hidden layer has at most
    /// [`MAX_EXACT_SELECTION_CONFIGURATIONS`] configurations.
    Exact,
    /// `Exact` when the hidden layer has at most [`AUTO_EXACT_SELECTION_CONFIGURATIONS`]
    /// configurations, `Chains` otherwise.
    Auto,
}

/// Online log-likelihood during training (Béreux et al., *Fast training and sampling of RBMs*): an
/// [`OnlineTrajectoryAis`] estimator follows the run, its `chains` chains reweighted by
/// \\(F_{\text{old}} - F_{\text{new}}\\) and moved by one Gibbs sweep at the new parameters
/// after every update (about one sweep per update), starting from the exact \\(\log Z\\) of the
/// initial model; every `every` updates the train (and test) log-likelihood
/// \\(\langle -F(v)\rangle_{\mathcal D} - \log\hat Z\\) is reported ([`LikelihoodInfo`]).
///
/// The initial model's \\(\log Z\\) and chains, for any initial model (the trainer never changes
/// the initialisation to suit the estimator):
///
/// - weights all zero (e.g. [`crate::initial_model`] with \\(\sigma = 0\\)): both exact (the
///   layers' cumulant generating functions, and one Gibbs sweep, which draws exactly without
///   couplings);
/// - `initial_log_z` given (its exact value, e.g. by enumeration of a small layer,
///   `ebm_models::exact`): the chains are exact draws when the hidden layer has at most
///   [`MAX_EXACT_INITIAL_CONFIGURATIONS`] configurations, and otherwise `initial_sweeps` Gibbs
///   sweeps from one configuration, with [`ebm_estimators::Warning::AssumptionBroken`] on
///   every estimate (sweeps cannot vouch for the proportions of a multimodal model's modes,
///   and a mode the chains miss leaves no trace in the weights);
/// - otherwise (a model with couplings too large to enumerate): forward AIS with
///   `initial_ais_rungs` evenly spaced rungs from the independent-site reference with the
///   model's own fields (zero weights, exact \\(\log Z\\) and draws) to the initial model
///   (`ebm_estimators::ais` on a `ReferenceLadder`), one Gibbs sweep per rung. The online
///   estimator then continues the AIS population, weights included, so the initial model is
///   one more stretch of its annealing path: the AIS error, ESS and warnings are carried in
///   every later estimate. Small random initial weights (the default \\(\sigma = 0.01\\)) are a
///   short path; see `initial_log_z_by_ais_is_within_its_error_bar` in the tests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LikelihoodPolicy {
    /// Number of estimator chains (the reference code uses as many as persistent chains).
    pub chains: usize,
    /// Relative ESS below which the estimator resamples (0 never resamples).
    pub resample_below_ess: f64,
    /// Report the train / test log-likelihood every this many updates.
    pub every: u64,
    /// Exact \\(\log Z\\) of an initial model with couplings (of the model as given to
    /// [`Trainer::init`]; the trainer corrects it for its zero-sum gauge).
    pub initial_log_z: Option<f64>,
    /// Gibbs sweeps drawing the initial chains of a model with couplings and a given
    /// `initial_log_z` whose hidden layer is too large to draw exactly.
    pub initial_sweeps: usize,
    /// Rungs of the AIS path to an initial model with couplings when `initial_log_z` is not
    /// given (at least 2).
    #[serde(default = "default_initial_ais_rungs")]
    pub initial_ais_rungs: usize,
}

fn default_initial_ais_rungs() -> usize {
    100
}

impl Default for LikelihoodPolicy {
    fn default() -> Self {
        Self {
            chains: 1000,
            resample_below_ess: 0.5,
            every: 1,
            initial_log_z: None,
            initial_sweeps: 1000,
            initial_ais_rungs: default_initial_ais_rungs(),
        }
    }
}

/// The online log-likelihood after an update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LikelihoodInfo {
    /// The estimate of \\(\log Z\\) of the new model (with its standard error and ESS).
    pub log_z: LogZEstimate,
    /// The estimator's relative ESS after reweighting, before any resampling.
    pub relative_ess: f64,
    /// Whether the estimator resampled its chains at this update.
    pub resampled: bool,
    /// Mean log-likelihood of the training data (weighted), at the reporting interval.
    pub train: Option<f64>,
    /// Mean log-likelihood of the test data, at the reporting interval when test data are given.
    pub test: Option<f64>,
    /// At the reporting interval: the difference of the mean \\(-F(v)\\) of the negative
    /// phase's chains and of the estimator's weighted chains, in combined standard errors
    /// (each error the weighted standard deviation over the square root of the Kish ESS).
    /// Beyond [`MAX_NEGATIVE_Z`] in absolute value, one of the two
    /// samplers does not sample the current model.
    #[serde(default)]
    pub negative_z: Option<f64>,
}

/// The weighted mean log-likelihood \\(\sum_j w_j(-F(v_j))/\sum_j w_j - \log Z\\) of `data`.
pub fn mean_log_likelihood<V, H>(
    rbm: &Rbm<V, H>,
    data: &TrainingData<V::Scalar>,
    log_z: f64,
    par: Par,
) -> f64
where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    neg_free_energies(rbm, data, par).mean - log_z
}

/// The weighted mean and the largest value of \\(-F(v_j)\\) over `data`.
struct NegFreeEnergies {
    mean: f64,
    max: f64,
}

fn neg_free_energies<V, H>(
    rbm: &Rbm<V, H>,
    data: &TrainingData<V::Scalar>,
    par: Par,
) -> NegFreeEnergies
where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    let mut f = vec![0.0; data.n_samples()];
    rbm.free_energy_visible(data.samples(), 1.0, &mut f, par);
    let w = data.weights();
    let total: f64 = w.iter().sum();
    NegFreeEnergies {
        mean: -f.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / total,
        max: -f.iter().copied().fold(f64::INFINITY, f64::min),
    }
}

/// What marks the reason recorded by [`impossible_log_z`] (recorded once per run).
const IMPOSSIBLE_MARK: &str = "below the largest -F(v)";

/// For discrete visible units, every configuration has \\(p(v) = e^{-F(v)}/Z \\le 1\\), so
/// \\(\log Z \\ge \max_v -F(v)\\) over any data: an estimate below that bound would report a
/// log-likelihood above 0 for some sample. Returns the reason when `log_z` breaks the bound
/// for `data`'s largest \\(-F\\) (`None` for continuous units, whose densities may exceed 1).
fn impossible_log_z<V: TrainableLayer>(
    visible: &V,
    log_z: f64,
    stats: &NegFreeEnergies,
    update: u64,
    which: &str,
) -> Option<String> {
    (visible.discrete_configurations().is_some() && log_z < stats.max).then(|| {
        format!(
            "update {update}: the online log Z {log_z:.4} is {IMPOSSIBLE_MARK} on the {which} \
             data ({:.4}), so that sample would have a probability above 1: the estimator's \
             chains miss mass the model has (typically a mode they cannot reach), and no \
             log-likelihood is reported while the estimate stays below the bound",
            stats.max
        )
    })
}

/// [`LikelihoodInfo::negative_z`] beyond which the negative phase's chains and the online
/// estimator's chains are taken to sample different laws.
pub const MAX_NEGATIVE_Z: f64 = 6.0;

/// What marks the reason recorded when the two samplers disagree (recorded once per run).
const DISAGREE_MARK: &str = "the negative phase's chains and the estimator's";

/// The check of the negative phase against the online estimator: both hold samples of the
/// current model (the negative phase's chains, moved before the update, with their weights;
/// the estimator's chains, reweighted to the new model), so their means of \\(-F(v)\\) under the
/// current model must agree within their standard errors (each the weighted standard deviation
/// over the square root of its Kish ESS) up to the lag of one update. A difference of many
/// standard errors means that one of them misses mass the model has: typically persistent
/// chains that cannot cross between modes, whose proportions then no longer follow the model,
/// so that the gradient drives the mode weights away (a pretrained multimodal model collapses
/// onto one mode), or estimator chains that miss a mode.
struct NegativeCheck {
    z: f64,
    negative: f64,
    estimator: f64,
}

impl NegativeCheck {
    fn new<V, H>(
        model: &Rbm<V, H>,
        negative: (&RbmChains<V::Scalar>, Option<&[f64]>),
        estimator: (&RbmChains<V::Scalar>, &[f64]),
        par: Par,
    ) -> Self
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        let stats = |x: &RbmChains<V::Scalar>, w: Option<Vec<f64>>| {
            let mut f = vec![0.0; x.visible.ncols()];
            model.free_energy_visible(&x.visible, 1.0, &mut f, par);
            let w = w.unwrap_or_else(|| vec![1.0; f.len()]);
            let (s1, s2) = w.iter().fold((0.0, 0.0), |(a, b), x| (a + x, b + x * x));
            let mean = -f.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() / s1;
            let var = f
                .iter()
                .zip(&w)
                .map(|(a, b)| b * (a + mean).powi(2))
                .sum::<f64>()
                / s1;
            (mean, var / (s1 * s1 / s2))
        };
        let (neg, neg_var) = stats(negative.0, negative.1.map(<[f64]>::to_vec));
        let top = estimator
            .1
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let w = estimator.1.iter().map(|l| (l - top).exp()).collect();
        let (est, est_var) = stats(estimator.0, Some(w));
        let se = (neg_var + est_var).sqrt();
        Self {
            z: if se > 0.0 { (neg - est) / se } else { 0.0 },
            negative: neg,
            estimator: est,
        }
    }

    fn reason(&self, update: u64) -> Option<String> {
        (self.z.abs() > MAX_NEGATIVE_Z).then(|| {
            format!(
                "update {update}: {DISAGREE_MARK} chains disagree on the mean -F(v) of the \
                 current model ({:.4} against {:.4}, {:.1} standard errors): one of them does \
                 not sample it (persistent chains that cannot cross between modes no longer \
                 follow the mode weights, and the gradient then drives them away; or the \
                 estimator's chains miss a mode), so neither the training nor this estimate can \
                 be trusted (use a negative phase that mixes between modes, e.g. parallel \
                 tempering with more rungs, or a smaller learning rate)",
                self.negative, self.estimator, self.z
            )
        })
    }
}

/// Maximum-likelihood training of an [`Rbm<V, H>`](Rbm) of any pair of
/// [`TrainableLayer`]s by minibatch gradient ascent (Béreux et al., *Fast training and sampling of RBMs*):
///
/// 1. draw a minibatch of `batch_size` samples ([`TrainingData`], weighted);
/// 2. data moments with the hidden layer averaged out exactly ([`Moments::of_visible`]);
/// 3. the negative phase `negative` moves its chains at the current parameters and gives the
///    model moments ([`NegativePhase`]);
/// 4. the gradient ([`Gradient::from_moments`], centred when `centred`), the weight penalties
///    ([`Penalty`]), the optimiser step at the scheduled learning rate;
/// 5. the new parameters: precisions floored at `min_precision`, the zero-sum gauge of one-hot
///    layers restored when `zero_sum_gauge` ([`crate::zero_sum_gauge`]);
/// 6. reweighting hooks of the negative phase, checkpoint selection ([`CheckpointPolicy`]),
///    the online log-likelihood ([`LikelihoodPolicy`]).
///
/// The trainer holds configuration only; everything that changes lives in a [`TrainState`],
/// which serialises and resumes bit for bit. It prints nothing: progress goes to an
/// [`Observer`] of [`TrainInfo`] (see [`crate::observe`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trainer<P> {
    /// The negative phase.
    pub negative: P,
    /// Samples per minibatch (at most the number of training samples).
    pub batch_size: usize,
    /// Learning-rate schedule.
    pub learning_rate: LearningRate,
    /// Optimiser.
    pub optimizer: Optimizer,
    /// Weight penalties.
    pub penalty: Penalty,
    /// Strength \\(\lambda \ge 0\\) of the decorrelation penalty of hidden units
    /// ([`crate::decorrelation`], Eq. 73 of the latent-space paper), on the minibatch; 0 (the
    /// default) turns it off. Needs scalar hidden units.
    #[serde(default)]
    pub decorrelation: f64,
    /// Centred gradient (Montavon & Müller), on by default as in the reference code.
    pub centred: bool,
    /// Keep one-hot (Potts) layers in the zero-sum gauge on all parameters (default on; has
    /// no effect on other layers).
    pub zero_sum_gauge: bool,
    /// Floor of precision parameters ([`TrainableLayer::PRECISION_TENSORS`]), > 0.
    pub min_precision: f64,
    /// Checkpoint selection, if any.
    pub checkpoints: Option<CheckpointPolicy>,
    /// Online log-likelihood, if any.
    pub likelihood: Option<LikelihoodPolicy>,
}

impl<P> Trainer<P> {
    /// A trainer with the given negative phase and batch size and the defaults of the
    /// reference code: constant learning rate 0.01, plain SGD, no penalty, centred gradient,
    /// zero-sum gauge, `min_precision` 0.05, no checkpoint selection, no online likelihood.
    pub fn new(negative: P, batch_size: usize) -> Self {
        Self {
            negative,
            batch_size,
            learning_rate: LearningRate::Constant(0.01),
            optimizer: Optimizer::SGD,
            penalty: Penalty::default(),
            decorrelation: 0.0,
            centred: true,
            zero_sum_gauge: true,
            min_precision: 0.05,
            checkpoints: None,
            likelihood: None,
        }
    }

    fn validate(&self, n_samples: usize) -> Result<()> {
        if self.batch_size == 0 || self.batch_size > n_samples {
            return Err(Error::InvalidParameter {
                name: "batch_size".into(),
                reason: format!(
                    "must lie in 1..={n_samples} (the number of training samples of positive \
                     weight), got {}",
                    self.batch_size
                ),
            });
        }
        self.learning_rate.validate()?;
        self.optimizer.validate()?;
        self.penalty.validate()?;
        if !(self.decorrelation >= 0.0 && self.decorrelation.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "decorrelation".into(),
                reason: format!("must be finite and >= 0, got {}", self.decorrelation),
            });
        }
        if !(self.min_precision > 0.0 && self.min_precision.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "min_precision".into(),
                reason: format!("must be finite and > 0, got {}", self.min_precision),
            });
        }
        if let Some(c) = &self.checkpoints {
            if c.every == 0 {
                return Err(Error::InvalidParameter {
                    name: "checkpoints.every".into(),
                    reason: "must be at least 1".into(),
                });
            }
            if !(c.target_acceptance > 0.0 && c.target_acceptance < 1.0) {
                return Err(Error::InvalidParameter {
                    name: "checkpoints.target_acceptance".into(),
                    reason: format!("must lie in (0, 1), got {}", c.target_acceptance),
                });
            }
        }
        if let Some(l) = &self.likelihood
            && (l.every == 0 || l.chains < 2)
        {
            return Err(Error::InvalidParameter {
                name: "likelihood".into(),
                reason: format!("needs every >= 1 and at least 2 chains, got {l:?}"),
            });
        }
        Ok(())
    }
}

/// Everything a training run owns besides its configuration and data: the model, the
/// optimiser's moments, the negative phase's chains and streams, the minibatch order, the
/// update counter, the checkpoint selector and the kept checkpoints. Serialising it and
/// loading it later ([`TrainState::save`], [`TrainState::load`]) continues the run bit for bit.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(serialize = "S: Serialize", deserialize = "S: DeserializeOwned"))]
pub struct TrainState<V: Layer, H: Layer<Scalar = V::Scalar>, S> {
    /// The current model.
    pub model: Rbm<V, H>,
    /// Number of parameter updates done.
    pub update: u64,
    /// The optimiser's moments.
    pub optimizer: OptimizerState,
    /// The negative phase's state.
    pub negative: S,
    batches: BatchSampler,
    selector: Option<CheckpointSelector<Rbm<V, H>>>,
    kept: Vec<(u64, Rbm<V, H>)>,
    /// The last model offered to the selector and not kept (it may be kept later, see
    /// [`CheckpointSelector`]).
    #[serde(default)]
    previous_offer: Option<(u64, Rbm<V, H>)>,
    /// Kept neighbouring checkpoints whose estimated swap acceptance is below the target.
    #[serde(default)]
    below_target: Vec<PairBelowTarget>,
    /// One RNG stream per exact draw when checkpoint selection draws exactly
    /// ([`SelectionAcceptance::Exact`], also as resolved from `Auto`); `None` when it uses the
    /// training's chains.
    #[serde(default)]
    selection_draws: Option<RngStreams>,
    /// The online trajectory AIS estimator, when the likelihood is followed.
    pub likelihood: Option<OnlineTrajectoryAis<RbmChains<V::Scalar>>>,
    /// The minibatch buffers, reused from one update to the next.
    #[serde(skip)]
    buffers: BatchBuffers<V::Scalar>,
}

/// The buffers of an update's minibatch: its samples and their weights, overwritten by every
/// update (no allocation per update). Not part of the run: never serialised, and empty in a
/// clone.
#[derive(Debug)]
struct BatchBuffers<F: Scalar> {
    samples: DMatrix<F>,
    weights: Vec<f64>,
}

impl<F: Scalar> Default for BatchBuffers<F> {
    fn default() -> Self {
        Self {
            samples: DMatrix::zeros(0, 0),
            weights: Vec::new(),
        }
    }
}

impl<F: Scalar> Clone for BatchBuffers<F> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// A pair of neighbouring kept checkpoints whose estimated swap acceptance is below the target
/// of the [`CheckpointPolicy`]: the model moved that far between two consecutive offers (large
/// updates, e.g. the first ones; offer more often or lower the learning rate).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairBelowTarget {
    /// The update of the first checkpoint of the pair.
    pub from: u64,
    /// The update of the second.
    pub to: u64,
    /// Their estimated swap acceptance.
    pub acceptance: f64,
}

/// What one update did, reported to the observer after the update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainInfo {
    /// The update number (1 for the first update).
    pub update: u64,
    /// The learning rate used.
    pub learning_rate: f64,
    /// Norm of the gradient estimate (before penalties and optimiser).
    pub gradient_norm: f64,
    /// The negative phase's report.
    pub negative: NegativeInfo,
    /// The checkpoint selector's decision, when the model was offered this update.
    pub checkpoint: Option<Selection>,
    /// The online log-likelihood, when followed.
    pub likelihood: Option<LikelihoodInfo>,
}

impl<V, H, S> TrainState<V, H, S>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    /// The models kept by checkpoint selection, with their update numbers.
    pub fn checkpoints(&self) -> &[(u64, Rbm<V, H>)] {
        &self.kept
    }

    /// What checkpoint selection estimates the swap acceptance from, `Auto` resolved
    /// ([`SelectionAcceptance::Exact`] or [`SelectionAcceptance::Chains`]); `None` without
    /// checkpoint selection.
    pub fn selection_acceptance(&self) -> Option<SelectionAcceptance> {
        match (&self.selector, &self.selection_draws) {
            (None, _) => None,
            (Some(_), Some(_)) => Some(SelectionAcceptance::Exact),
            (Some(_), None) => Some(SelectionAcceptance::Chains),
        }
    }

    /// The kept neighbouring checkpoints whose estimated swap acceptance is below the target
    /// (see [`CheckpointSelector`]); empty when every pair meets it.
    pub fn checkpoint_pairs_below_target(&self) -> &[PairBelowTarget] {
        &self.below_target
    }

    /// The training trajectory for parallel trajectory tempering: the kept checkpoints
    /// followed by the current model (the final model is always kept, the PTT paper) unless it
    /// was just kept.
    pub fn trajectory(&self) -> Trajectory<V, H> {
        let mut t = Trajectory::from_checkpoints(self.kept.iter().cloned())
            .expect("kept checkpoints have increasing updates and one shape");
        if self.kept.last().is_none_or(|(u, _)| *u < self.update) {
            t.push(self.update, self.model.clone())
                .expect("the current update is the latest");
        }
        t
    }
}

impl<V, H, S> TrainState<V, H, S>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
    S: Serialize + DeserializeOwned,
{
    /// Writes the state to `path` as JSON (every float with its shortest round-trip
    /// representation, so loading restores it bit for bit), atomically, with the keys
    /// `format` ([`TRAIN_STATE_FORMAT`]), `format_version` ([`TRAIN_STATE_FORMAT_VERSION`])
    /// and a `checksum` of the content ([`ebm_io::output::write_json_checked`]).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be written (a previous file is then untouched).
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut value = serde_json::to_value(self).map_err(|e| Error::InvalidParameter {
            name: "training state".into(),
            reason: format!("cannot serialise: {e}"),
        })?;
        let map = value
            .as_object_mut()
            .expect("a training state serialises to a JSON object");
        map.insert("format".into(), TRAIN_STATE_FORMAT.into());
        map.insert("format_version".into(), TRAIN_STATE_FORMAT_VERSION.into());
        ebm_io::output::write_json_checked(path, &value)
    }

    /// Reads a state written by [`TrainState::save`] for the same layer types and negative
    /// phase, verifying its checksum. States of format version 1 (written before states
    /// carried a format, a version and a checksum) are read as they are.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read, is not a regular file or is larger than
    /// [`ebm_core::input::MAX_TEXT_BYTES`]; [`Error::Format`] if it is not JSON (with the line
    /// and column), its content does not match its checksum or a version-2 state has none
    /// (location `"checksum"`: the file was edited or is corrupted), its format or version is
    /// not one this build writes, or it is not a state of this model and negative phase
    /// (including a model whose unit kinds differ from `V` and `H`).
    pub fn load(path: &Path) -> Result<Self> {
        let mut value = ebm_io::output::read_json_checked(
            path,
            ebm_io::output::ChecksumsSince {
                version_at: "/format_version",
                // The first version that carries a checksum.
                version: 2,
            },
        )?;
        let bad = |location: &str, reason: String| Error::Format {
            path: path.to_path_buf(),
            location: location.into(),
            reason,
        };
        if let Some(map) = value.as_object_mut() {
            if let Some(format) = map.remove("format")
                && format != TRAIN_STATE_FORMAT
            {
                return Err(bad(
                    "format",
                    format!("{format}, expected \"{TRAIN_STATE_FORMAT}\""),
                ));
            }
            if let Some(version) = map.remove("format_version")
                && !(version.as_u64())
                    .is_some_and(|v| (1..=u64::from(TRAIN_STATE_FORMAT_VERSION)).contains(&v))
            {
                return Err(bad(
                    "format_version",
                    format!(
                        "{version} is not supported (this build reads versions 1 to \
                         {TRAIN_STATE_FORMAT_VERSION})"
                    ),
                ));
            }
        }
        serde_json::from_value(value).map_err(|e| {
            bad(
                "content",
                format!("not a training state of this model and negative phase: {e}"),
            )
        })
    }
}

/// The `format` of the files [`TrainState::save`] writes.
pub const TRAIN_STATE_FORMAT: &str = "ebm-train-state";

/// The version of the files [`TrainState::save`] writes: 2 carries a `checksum` (required);
/// version 1 (no `format` or version key) had none.
pub const TRAIN_STATE_FORMAT_VERSION: u32 = 2;

/// Hidden layers with at most this many configurations are enumerated to draw the online
/// estimator's initial chains exactly when the initial model has couplings and a given
/// \\(\log Z\\) (the size up to which paper 000 computes \\(\log Z\\) exactly, \\(N_h \le 20\\)).
pub const MAX_EXACT_INITIAL_CONFIGURATIONS: u128 = 1 << 20;

/// How the online estimator's initial chains are drawn when the initial \\(\log Z\\) is known.
#[derive(Clone, Copy, Debug)]
enum InitialDraws {
    /// No couplings: one Gibbs sweep draws exactly.
    Independent,
    /// Hidden layer enumerated: exact draws.
    Exact,
    /// Gibbs sweeps from one configuration (an equilibrium the weights cannot vouch for).
    Gibbs(usize),
}

/// The online estimator at the initial model (see [`LikelihoodPolicy`] for the three cases);
/// its chains use streams of their own, derived from `aux_seed`, so following the likelihood
/// does not change the training.
fn initial_estimator<V, H>(
    model: &Rbm<V, H>,
    policy: &LikelihoodPolicy,
    gauge_offset: f64,
    aux_seed: u64,
    par: Par,
) -> Result<OnlineTrajectoryAis<RbmChains<V::Scalar>>>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    // How the chains of a given log Z are drawn: `None` for the AIS path.
    let given = match (independent_log_partition(model), policy.initial_log_z) {
        (Some(z), _) => Some((z, InitialDraws::Independent)),
        (None, Some(z)) if z.is_finite() => {
            let exact = model
                .hidden()
                .discrete_configurations()
                .is_some_and(|n| n <= MAX_EXACT_INITIAL_CONFIGURATIONS);
            let draws = if exact {
                InitialDraws::Exact
            } else {
                InitialDraws::Gibbs(policy.initial_sweeps.max(1))
            };
            Some((z + gauge_offset, draws))
        }
        (None, Some(z)) => {
            return Err(Error::InvalidParameter {
                name: "likelihood.initial_log_z".into(),
                reason: format!("must be finite, got {z}"),
            });
        }
        (None, None) => None,
    };
    if let Some((log_z0, draws)) = given {
        let mut chains = ChainState::new(model.default_chains(policy.chains), aux_seed);
        let (x, rngs) = (&mut chains.chains, chains.rngs.as_mut_slice());
        match draws {
            InitialDraws::Independent => {
                Gibbs::new(1).step(model, 1.0, x, rngs, par);
            }
            InitialDraws::Exact => {
                draw_exact(model, x, rngs, par, "likelihood", "exact initial draws")?;
            }
            InitialDraws::Gibbs(sweeps) => {
                Gibbs::new(sweeps).step(model, 1.0, x, rngs, par);
            }
        }
        let mut estimator = OnlineTrajectoryAis::try_new(
            chains.chains,
            aux_seed.wrapping_add(1),
            log_z0,
            policy.resample_below_ess,
        )?;
        if let InitialDraws::Gibbs(sweeps) = draws {
            estimator.flag(format!(
                "update 0: the initial chains are {sweeps} Gibbs sweeps from one configuration, \
                 not exact draws of the initial model (its hidden layer is too large to \
                 enumerate), so a multimodal initial model is represented in proportions that \
                 no weight records (give no initial log Z: the estimator then anneals to the \
                 initial model by AIS, whose weights do record them)"
            ));
        }
        return Ok(estimator);
    }
    if policy.initial_ais_rungs < 2 {
        return Err(Error::InvalidParameter {
            name: "likelihood.initial_ais_rungs".into(),
            reason: format!(
                "an AIS path needs at least 2 rungs, got {}",
                policy.initial_ais_rungs
            ),
        });
    }
    let (nv, nh) = model.weights().shape();
    let reference = Rbm::new(
        model.visible().clone(),
        model.hidden().clone(),
        DMatrix::zeros(nv, nh),
    )?;
    let n = policy.initial_ais_rungs;
    let betas = (0..n)
        .map(|k| {
            if k + 1 == n {
                1.0
            } else {
                k as f64 / (n - 1) as f64
            }
        })
        .collect();
    let ladder = ReferenceLadder::new(model, &reference, betas)?;
    let start = Start::independent(&reference, 1.0, policy.chains, aux_seed, par)?;
    let log_z0 = start.log_z.log_z;
    let run = ais(&Ais::new(Gibbs::new(1)), &ladder, start, par);
    OnlineTrajectoryAis::from_population(run.population, log_z0, policy.resample_below_ess)
}

/// Whether checkpoint selection under `policy` draws exact samples of models with the hidden
/// layer `hidden` ([`SelectionAcceptance`]).
///
/// # Errors
/// [`Error::InvalidParameter`] for `Exact` on a hidden layer that cannot be enumerated, or
/// fewer than 2 exact draws.
/// Checks that every chain of `x` holds a valid configuration of `model`'s layers (a state
/// read from a file may hold a 2 in a Bernoulli unit).
fn check_chain_values<V, H>(what: &str, model: &Rbm<V, H>, x: &RbmChains<V::Scalar>) -> Result<()>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    check_columns(what, "visible", model.visible(), &x.visible)?;
    check_columns(what, "hidden", model.hidden(), &x.hidden)
}

/// Checks every column of `x` (one chain's slot each, column-major) against `layer`.
fn check_columns<L: TrainableLayer>(
    what: &str,
    name: &str,
    layer: &L,
    x: &DMatrix<L::Scalar>,
) -> Result<()> {
    if x.nrows() == 0 {
        return Ok(());
    }
    for (j, c) in x.as_slice().chunks(x.nrows()).enumerate() {
        layer
            .check_configuration(c)
            .map_err(|reason| Error::InvalidParameter {
                name: format!("{what}, {name} layer of chain {j}"),
                reason,
            })?;
    }
    Ok(())
}

fn exact_selection<H: TrainableLayer>(policy: &CheckpointPolicy, hidden: &H) -> Result<bool> {
    let configurations = hidden.discrete_configurations();
    let enumerable = configurations.is_some_and(|n| n <= MAX_EXACT_SELECTION_CONFIGURATIONS);
    let exact = match policy.acceptance {
        SelectionAcceptance::Chains => false,
        SelectionAcceptance::Auto => {
            configurations.is_some_and(|n| n <= AUTO_EXACT_SELECTION_CONFIGURATIONS)
        }
        SelectionAcceptance::Exact if enumerable => true,
        SelectionAcceptance::Exact => {
            return Err(Error::InvalidParameter {
                name: "selection acceptance".into(),
                reason: format!(
                    "exact draws need a discrete hidden layer of at most \
                     {MAX_EXACT_SELECTION_CONFIGURATIONS} configurations, this one has {}",
                    configurations.map_or("real values".to_string(), |n| n.to_string())
                ),
            });
        }
    };
    if exact && policy.exact_draws < 2 {
        return Err(Error::InvalidParameter {
            name: "exact draws".into(),
            reason: format!(
                "checkpoint selection needs at least 2, got {}",
                policy.exact_draws
            ),
        });
    }
    Ok(exact)
}

/// Offers `model` to `selector` with samples of it: `chains` (the training's), or, with
/// `draws`, one exact draw per stream.
fn offer<V, H>(
    selector: &mut CheckpointSelector<Rbm<V, H>>,
    model: &Rbm<V, H>,
    chains: &RbmChains<V::Scalar>,
    draws: Option<&mut RngStreams>,
    par: Par,
) -> Result<Selection>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    let Some(rngs) = draws else {
        return Ok(selector.offer(model, chains, par));
    };
    let mut exact = model.default_chains(rngs.len());
    let rngs = rngs.as_mut_slice();
    draw_exact(
        model,
        &mut exact,
        rngs,
        par,
        "selection acceptance",
        "exact draws",
    )?;
    Ok(selector.offer(model, &exact, par))
}

/// Replaces every chain of `x` by an independent exact draw of `model` at \\(\beta = 1\\), by
/// enumerating its hidden layer; an error naming `name` and `what` for real-valued hidden units.
fn draw_exact<V: Layer, H: Layer<Scalar = V::Scalar>>(
    model: &Rbm<V, H>,
    x: &mut RbmChains<V::Scalar>,
    rngs: &mut [ChainRng],
    par: Par,
    name: &str,
    what: &str,
) -> Result<()> {
    let enumeration =
        HiddenEnumeration::of_any(model, 1.0, par).ok_or_else(|| Error::InvalidParameter {
            name: name.into(),
            reason: format!("{what} need a discrete hidden layer"),
        })??;
    enumeration.sample_any(model, x, rngs, par);
    Ok(())
}

impl<P> Trainer<P> {
    /// A fresh training state for `model` and `data`, with every stream derived from `seed`:
    /// validates the configuration and the data, applies the zero-sum gauge, initialises the
    /// negative phase's chains and the optimiser, and offers the initial model to the
    /// checkpoint selector (which keeps it).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid configuration (batch size, rates,
    /// optimiser, penalties, negative phase, target acceptance);
    /// [`Error::ShapeMismatch`] if the data do not match the model's visible layer.
    pub fn init<V, H>(
        &self,
        model: Rbm<V, H>,
        data: &TrainingData<V::Scalar>,
        seed: u64,
        par: Par,
    ) -> Result<TrainState<V, H, P::State>>
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
        P: NegativePhase<V, H>,
    {
        self.validate(data.n_weighted_samples())?;
        Error::check_len(
            "rows of the training data (visible width)",
            model.visible().width(),
            data.samples().nrows(),
        )?;
        if model.visible().width() == 0 || model.hidden().width() == 0 {
            return Err(Error::InvalidParameter {
                name: "model".into(),
                reason: "both layers need at least one unit".into(),
            });
        }
        // The gauge shifts every energy by one constant c = E_given - E_gauged, hence
        // log Z by +c: measured on one configuration, it corrects a given initial log Z.
        let (model, gauge_offset) = if self.zero_sum_gauge {
            let gauged = zero_sum_gauge(model.clone())?;
            let x = model.default_chains(1);
            let (mut a, mut b) = ([0.0], [0.0]);
            model.free_energy_visible(&x.visible, 1.0, &mut a, Par::Seq);
            gauged.free_energy_visible(&x.visible, 1.0, &mut b, Par::Seq);
            (gauged, a[0] - b[0])
        } else {
            (model, 0.0)
        };
        let negative = self.negative.init(&model, self.batch_size, seed, par)?;
        let n_params =
            model.weights().len() + model.visible().n_parameters() + model.hidden().n_parameters();
        let mut state = TrainState {
            optimizer: OptimizerState::new(&self.optimizer, n_params),
            negative,
            batches: BatchSampler::new(data, RngStreams::auxiliary(seed, 3)),
            selector: None,
            kept: Vec::new(),
            previous_offer: None,
            below_target: Vec::new(),
            selection_draws: None,
            likelihood: None,
            update: 0,
            buffers: BatchBuffers::default(),
            model,
        };
        if let Some(policy) = &self.likelihood {
            state.likelihood = Some(initial_estimator(
                &state.model,
                policy,
                gauge_offset,
                seed ^ 0x9E37_79B9_7F4A_7C15,
                par,
            )?);
        }
        if let Some(policy) = &self.checkpoints {
            let mut selector = CheckpointSelector::new(policy.target_acceptance, seed)?;
            if exact_selection(policy, state.model.hidden())? {
                let stream_seed = RngStreams::auxiliary(seed, 6).next_u64();
                state.selection_draws = Some(RngStreams::new(stream_seed, policy.exact_draws));
            }
            let chains = self.negative.chains(&state.negative);
            offer(
                &mut selector,
                &state.model,
                chains,
                state.selection_draws.as_mut(),
                par,
            )?;
            state.selector = Some(selector);
            state.kept.push((0, state.model.clone()));
            if let Some(path) = &policy.path {
                ebm_io::save_trajectory(&state.trajectory(), path)?;
            }
        }
        Ok(state)
    }

    /// An estimate, in bytes, of the memory a training state of a model with `nv` visible
    /// and `nh` hidden units (widths) takes, to check it before allocating
    /// ([`Error::check_memory`]): the negative phase's chains
    /// ([`NegativePhase::chains_held`]), the online estimator's and checkpoint selection's exact draws, each with a copy for
    /// updates, a few copies of the parameters (model, gradient, optimiser moments, checkpoint
    /// selector), and a minibatch. Kept checkpoints, which accumulate during the run, are
    /// not counted.
    pub fn memory_estimate<V, H>(&self, nv: usize, nh: usize) -> u128
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
        P: NegativePhase<V, H>,
    {
        // Saturating: sizes read from the command line can be near `usize::MAX`, whose products
        // overflow even `u128`; a saturated estimate is simply refused.
        let product = |xs: &[u128]| xs.iter().fold(1u128, |p, &x| p.saturating_mul(x));
        let bytes = std::mem::size_of::<V::Scalar>() as u128;
        let width = nv as u128 + nh as u128;
        // Checkpoint selection may hold three batches of exact draws (the offer, the last kept
        // model's and the previous offer's).
        let chains = (self.negative.chains_held(self.batch_size) as u128)
            .saturating_add(self.likelihood.as_ref().map_or(0, |l| l.chains as u128))
            .saturating_add(
                self.checkpoints
                    .as_ref()
                    .map_or(0, |c| 3 * c.exact_draws as u128),
            );
        let params = product(&[nv as u128, nh as u128]).saturating_add(width);
        product(&[2, chains, width, bytes])
            .saturating_add(product(&[10, params, 8]))
            .saturating_add(product(&[2, self.batch_size as u128, width, bytes]))
    }

    /// Checks a state read from a file (e.g. to resume a run) against this trainer and the
    /// training data, so that a corrupted or edited state is an error, never a panic or a
    /// silently different run: the configuration ([`Trainer::init`]'s checks, the negative
    /// phase's [`NegativePhase::check_state`]: chain counts, ladder, replica indices, weights);
    /// the minibatch order (a permutation of the samples of positive weight); the model's
    /// visible width against the data and every stored chain's widths against the model; the
    /// optimiser's moments (one finite value per parameter); the kept checkpoints (increasing
    /// updates, none after the state's, the model's shape); the online estimator (present
    /// exactly when the likelihood is followed, finite weights unless it recorded a
    /// divergence).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`], [`Error::ShapeMismatch`] or [`Error::NonFinite`] naming
    /// the field (see [`Error::in_file`] to name the file too).
    pub fn check_state<V, H>(
        &self,
        state: &TrainState<V, H, P::State>,
        data: &TrainingData<V::Scalar>,
    ) -> Result<()>
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
        P: NegativePhase<V, H>,
    {
        self.validate(data.n_weighted_samples())?;
        state.batches.check(data)?;
        let (nv, nh) = state.model.weights().shape();
        Error::check_len(
            "model visible width (rows of the training data)",
            data.samples().nrows(),
            nv,
        )?;
        self.negative
            .check_state(&state.negative, self.batch_size)?;
        let shape = |what: &str, x: &RbmChains<V::Scalar>| -> Result<()> {
            if (x.visible.nrows(), x.hidden.nrows()) == (nv, nh) {
                Ok(())
            } else {
                Err(Error::ShapeMismatch {
                    what: format!("{what} (visible, hidden widths)"),
                    expected: format!("({nv}, {nh})"),
                    got: format!("({}, {})", x.visible.nrows(), x.hidden.nrows()),
                })
            }
        };
        for (k, x) in self
            .negative
            .every_chain(&state.negative)
            .into_iter()
            .enumerate()
        {
            shape("negative chains", x)?;
            check_chain_values(&format!("negative chains (set {k})"), &state.model, x)?;
        }
        let n_params = state.model.weights().len()
            + state.model.visible().n_parameters()
            + state.model.hidden().n_parameters();
        state.optimizer.check(&self.optimizer, n_params)?;
        let same_model = |what: &str, m: &Rbm<V, H>| -> Result<()> {
            Error::check_len(&format!("{what} visible width"), nv, m.weights().nrows())?;
            Error::check_len(&format!("{what} hidden width"), nh, m.weights().ncols())
        };
        let mut last = None;
        for (u, m) in state.kept.iter().chain(&state.previous_offer) {
            if *u > state.update || last.is_some_and(|l| *u <= l) {
                return Err(Error::InvalidParameter {
                    name: "kept checkpoints".into(),
                    reason: format!(
                        "updates must increase and not exceed the state's update {}, got {u} \
                         after {last:?}",
                        state.update
                    ),
                });
            }
            same_model("kept checkpoint", m)?;
            last = Some(*u);
        }
        match (&self.checkpoints, &state.selector) {
            (Some(policy), Some(selector)) => {
                selector.check(|m, chains| {
                    same_model("checkpoint selector model", m)?;
                    shape("checkpoint selector chains", chains)?;
                    check_chain_values("checkpoint selector chains", &state.model, chains)
                })?;
                let exact = exact_selection(policy, state.model.hidden())?;
                match &state.selection_draws {
                    Some(draws) if exact => Error::check_len(
                        "checkpoint selection's exact-draw streams (--exact-draws)",
                        policy.exact_draws,
                        draws.len(),
                    )?,
                    None if !exact => {}
                    _ => {
                        return Err(Error::InvalidParameter {
                            name: "selection_draws".into(),
                            reason: format!(
                                "the exact-draw streams of checkpoint selection must be present \
                                 exactly when it draws exactly ({:?} on this hidden layer: {})",
                                policy.acceptance,
                                if exact { "exact" } else { "on the chains" }
                            ),
                        });
                    }
                }
                if state.kept.first().map(|(u, _)| *u) != Some(0) {
                    return Err(Error::InvalidParameter {
                        name: "kept checkpoints".into(),
                        reason: "must start with the initial model, at update 0".into(),
                    });
                }
            }
            (None, None) if state.kept.is_empty() && state.previous_offer.is_none() => {}
            _ => {
                return Err(Error::InvalidParameter {
                    name: "selector".into(),
                    reason: "must be present exactly when checkpoints are selected".into(),
                });
            }
        }
        match (&self.likelihood, &state.likelihood) {
            (Some(_), Some(estimator)) => {
                estimator.check()?;
                let chains = &estimator.population().chains;
                shape("online estimator chains", chains)?;
                check_chain_values("online estimator chains", &state.model, chains)
            }
            (None, None) => Ok(()),
            _ => Err(Error::InvalidParameter {
                name: "likelihood".into(),
                reason: "the online estimator must be present exactly when the likelihood is \
                         followed"
                    .into(),
            }),
        }
    }

    /// One parameter update (see [`Trainer`]) on minibatches of `train`; returns what it did.
    /// `test` data only enter the reported log-likelihood ([`LikelihoodPolicy`]). Under
    /// [`Par::Rayon`] the update runs on a worker of the current pool ([`Par::run`]); the
    /// result is the same for any [`Par`] and thread count.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `data` is not the data the state was initialised with (its
    /// number of samples and width), or the state does not belong to this trainer's negative
    /// phase ([`NegativePhase::check_state`]); [`Error::InvalidParameter`] if an update produces invalid
    /// parameters (divergence: a step too large); errors of the negative phase
    /// ([`NegativePhase::sample`]); [`Error::Io`] if the trajectory file cannot be written.
    /// After an error the state is not fit for an exact resume.
    pub fn step<V, H>(
        &self,
        state: &mut TrainState<V, H, P::State>,
        train: &TrainingData<V::Scalar>,
        test: Option<&TrainingData<V::Scalar>>,
        par: Par,
    ) -> Result<TrainInfo>
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
        P: NegativePhase<V, H>,
    {
        self.negative
            .check_state(&state.negative, self.batch_size)?;
        // On a worker of the pool: the serial work between the update's parallel loops runs
        // where the pool is (same results, less time between the loops).
        par.run(|| {
            let sample = |m: &Rbm<V, H>, s: &mut P::State, b: &DMatrix<V::Scalar>| {
                self.negative.sample(m, s, b, par)
            };
            self.update(None::<&Whole>, &sample, state, train, test, par)
        })
    }

    /// One parameter update of a data-parallel run ([`Shard`]): this process holds the
    /// columns `shard.range(n)` of every batch of `n` chains, its shard of the negative
    /// phase's chains and streams in `state.negative` (the rest of `state` is the whole run's,
    /// the same on every process), and runs this update with every other process of the run.
    /// It moves only its chains and sums only its blocks of the minibatch and of the chains
    /// ([`Moments::block_sums`]); the processes exchange the blocks' sums, and every process
    /// adds them in block order ([`Moments::from_block_sums`]), computes the same gradient and
    /// takes the same step. The model, the optimiser's moments and the counters are therefore
    /// those of [`Trainer::step`] in one process, bit for bit, for any number of processes.
    ///
    /// Checkpoint selection and the online log-likelihood run on the root process only
    /// (selection on the training's chains first gathers them there); the other processes'
    /// `TrainInfo` has neither, and their selector, kept checkpoints and estimator are left
    /// as they were.
    ///
    /// Needs a negative phase without chain weights ([`NegativePhase::weights`] `None`, e.g.
    /// [`crate::Pcd`], [`crate::Cd`], [`crate::PersistentKernel`], [`crate::Tempered`]) whose
    /// chains (for tempering, systems of replicas) move independently given the model; it
    /// moves them with [`ShardedPhase::sample_on_shard`], which adds the phase's counts over
    /// the processes (e.g. PT's round trips and swap acceptance).
    ///
    /// # Errors
    /// As [`Trainer::step`] (the negative phase's state is not checked: it holds a shard);
    /// [`Error::InvalidParameter`] for a weighted negative phase. After an error the
    /// processes no longer agree on the exchanges to come: end the run.
    pub fn step_on_shard<V, H, D>(
        &self,
        shard: &D,
        state: &mut TrainState<V, H, P::State>,
        train: &TrainingData<V::Scalar>,
        test: Option<&TrainingData<V::Scalar>>,
        par: Par,
    ) -> Result<TrainInfo>
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
        P: ShardedPhase<V, H>,
        D: Shard,
    {
        if self.negative.weights(&state.negative).is_some() {
            return Err(Error::InvalidParameter {
                name: "negative phase".into(),
                reason: "a data-parallel run needs a negative phase without chain weights".into(),
            });
        }
        let sample = |m: &Rbm<V, H>, s: &mut P::State, b: &DMatrix<V::Scalar>| {
            self.negative.sample_on_shard(shard, m, s, b, par)
        };
        self.update(Some(shard), &sample, state, train, test, par)
    }

    /// [`Trainer::step`] after the negative phase's check, in one process (`shard` `None`)
    /// or on one shard of a data-parallel run, the negative phase moved by `sample` (on the
    /// minibatch, or this process's columns of it).
    #[allow(clippy::type_complexity)]
    fn update<V, H, D>(
        &self,
        shard: Option<&D>,
        sample: &dyn Fn(&Rbm<V, H>, &mut P::State, &DMatrix<V::Scalar>) -> Result<NegativeInfo>,
        state: &mut TrainState<V, H, P::State>,
        train: &TrainingData<V::Scalar>,
        test: Option<&TrainingData<V::Scalar>>,
        par: Par,
    ) -> Result<TrainInfo>
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
        P: NegativePhase<V, H>,
        D: Shard,
    {
        Error::check_len(
            "training samples (the data the state was initialised with)",
            state.batches.n_samples(),
            train.n_samples(),
        )?;
        Error::check_len(
            "rows of the training data (visible width)",
            state.model.visible().width(),
            train.samples().nrows(),
        )?;
        if let Some(t) = test {
            Error::check_len(
                "rows of the test data (visible width)",
                state.model.visible().width(),
                t.samples().nrows(),
            )?;
        }
        let BatchBuffers {
            samples: mut batch,
            mut weights,
        } = std::mem::take(&mut state.buffers);
        let indices = state.batches.next_batch(self.batch_size);
        gather(train, indices, &mut batch, &mut weights, par);

        let (data_moments, mut negative_info, model_moments) = match shard {
            None => {
                let data_moments = Moments::of_visible(&state.model, &batch, Some(&weights), par);
                let info = sample(&state.model, &mut state.negative, &batch)?;
                let model_moments = Moments::of_visible(
                    &state.model,
                    &self.negative.chains(&state.negative).visible,
                    self.negative.weights(&state.negative),
                    par,
                );
                (data_moments, info, model_moments)
            }
            Some(shard) => {
                // This process's columns of the minibatch, weighted as in the whole batch.
                let range = shard.range(batch.ncols());
                let local = batch.columns(range.start, range.len()).into_owned();
                let w = &normalised(Some(&weights), batch.ncols())[range];
                let data_sums = Moments::block_sums(&state.model, &local, w, par);
                let info = sample(&state.model, &mut state.negative, &local)?;
                let chains = &self.negative.chains(&state.negative).visible;
                let count = |all: &[f64]| vec![all.iter().sum()];
                let total = shard.reduce(&[chains.ncols() as f64], &count)[0];
                let w = vec![1.0 / total; chains.ncols()];
                let model_sums = Moments::block_sums(&state.model, chains, &w, par);
                // The root adds the blocks' sums in block order; every process gets the
                // moments.
                let model = &state.model;
                let add = |all: &[f64]| Moments::from_block_sums(model, all).to_words();
                let moments = |sums: &[f64]| Moments::from_words(model, &shard.reduce(sums, &add));
                (moments(&data_sums), info, moments(&model_sums))
            }
        };
        let gradient = Gradient::from_moments(&data_moments, &model_moments, self.centred);
        let mut step = gradient.flat();
        let nw = state.model.weights().len();
        self.penalty.apply(
            state.model.weights().iter().map(|w| w.as_f64()),
            &mut step[..nw],
        );
        if self.decorrelation > 0.0 {
            let g =
                crate::decorrelation::decorrelation_gradient(&state.model, &batch, Some(&weights))?;
            for (s, gi) in step[..nw].iter_mut().zip(g) {
                *s -= self.decorrelation * gi;
            }
        }
        state.buffers = BatchBuffers {
            samples: batch,
            weights,
        };
        let rate = self.learning_rate.at(state.update);
        state.optimizer.step(&self.optimizer, rate, &mut step);
        let new = apply_step(
            state.model.clone(),
            &step,
            gradient.centre.as_ref(),
            self.min_precision,
            self.zero_sum_gauge,
            par,
        )?;
        let old = std::mem::replace(&mut state.model, new);
        self.negative.after_update(
            &old,
            &state.model,
            &mut state.negative,
            &mut negative_info,
            par,
        )?;
        state.update += 1;

        let root = shard.is_none_or(Shard::is_root);
        let mut checkpoint = None;
        // Selection on the training's chains gathers them on the root first (every process
        // takes part in the gather).
        let offered = self
            .checkpoints
            .as_ref()
            .is_some_and(|policy| state.update.is_multiple_of(policy.every));
        // The negative phase's chains checked against the online estimator's at a report
        // ([`LikelihoodInfo::negative_z`]): all of them, as one process would.
        let checked = self.negative.samples_the_model()
            && self
                .likelihood
                .as_ref()
                .is_some_and(|policy| state.update.is_multiple_of(policy.every));
        let gathered = match shard {
            Some(shard) if (offered && state.selection_draws.is_none()) || checked => {
                shard.gather_chains(self.negative.chains(&state.negative))
            }
            _ => None,
        };
        if let (Some(policy), Some(selector)) = (&self.checkpoints, state.selector.as_mut())
            && state.update.is_multiple_of(policy.every)
            && root
        {
            let chains = gathered
                .as_ref()
                .unwrap_or_else(|| self.negative.chains(&state.negative));
            let selection = offer(
                selector,
                &state.model,
                chains,
                state.selection_draws.as_mut(),
                par,
            )?;
            if selection.keep_previous
                && let Some(previous) = state.previous_offer.take()
            {
                state.kept.push(previous);
            }
            if let Some(acceptance) = selection.below_target {
                state.below_target.push(PairBelowTarget {
                    from: state.kept.last().map_or(0, |(u, _)| *u),
                    to: state.update,
                    acceptance,
                });
            }
            state.previous_offer = (!selection.keep).then(|| (state.update, state.model.clone()));
            if selection.keep || selection.keep_previous {
                if selection.keep {
                    state.kept.push((state.update, state.model.clone()));
                }
                if let Some(path) = &policy.path {
                    let t = Trajectory::from_checkpoints(state.kept.iter().cloned())?;
                    ebm_io::save_trajectory(&t, path)?;
                }
            }
            checkpoint = Some(selection);
        }
        let likelihood = match (&self.likelihood, state.likelihood.as_mut()) {
            (Some(policy), Some(estimator)) if root => {
                let info = estimator.advance(&old, &state.model, &Gibbs::new(1), par);
                let report = state.update.is_multiple_of(policy.every);
                let mut log_z = info.estimate;
                let z = log_z.log_z;
                let mut ll = |data: &TrainingData<V::Scalar>, which: &str| {
                    let stats = neg_free_energies(&state.model, data, par);
                    let Some(reason) =
                        impossible_log_z(state.model.visible(), z, &stats, state.update, which)
                    else {
                        return Some(stats.mean - z);
                    };
                    if !estimator
                        .broken()
                        .is_some_and(|r| r.contains(IMPOSSIBLE_MARK))
                    {
                        estimator.flag(reason);
                        log_z = estimator.estimate();
                    }
                    None
                };
                let (train, test) = if report {
                    (ll(train, "training"), test.and_then(|t| ll(t, "test")))
                } else {
                    (None, None)
                };
                let negative_z = checked.then(|| {
                    let p = estimator.population();
                    let check = NegativeCheck::new(
                        &state.model,
                        (
                            gathered
                                .as_ref()
                                .unwrap_or_else(|| self.negative.chains(&state.negative)),
                            self.negative.weights(&state.negative),
                        ),
                        (&p.chains, &p.log_weights),
                        par,
                    );
                    if let Some(reason) = check.reason(state.update)
                        && !estimator
                            .broken()
                            .is_some_and(|r| r.contains(DISAGREE_MARK))
                    {
                        estimator.flag(reason);
                        log_z = estimator.estimate();
                    }
                    check.z
                });
                Some(LikelihoodInfo {
                    train,
                    test,
                    negative_z,
                    relative_ess: info.relative_ess,
                    resampled: info.resampled,
                    log_z,
                })
            }
            _ => None,
        };
        Ok(TrainInfo {
            update: state.update,
            learning_rate: rate,
            gradient_norm: gradient.norm(),
            negative: negative_info,
            checkpoint,
            likelihood,
        })
    }

    /// Runs `updates` updates ([`Trainer::step`]), reporting each [`TrainInfo`] to `observer`
    /// (with the update number as step).
    ///
    /// # Errors
    /// As [`Trainer::step`], or the first error the observer returns (the state then holds
    /// the update just observed).
    pub fn run<V, H, O>(
        &self,
        state: &mut TrainState<V, H, P::State>,
        train: &TrainingData<V::Scalar>,
        test: Option<&TrainingData<V::Scalar>>,
        updates: u64,
        par: Par,
        mut observer: O,
    ) -> Result<()>
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
        P: NegativePhase<V, H>,
        O: Observer<TrainInfo>,
    {
        for _ in 0..updates {
            let info = self.step(state, train, test, par)?;
            observer.observe(info.update, &info)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pcd;
    use ebm_models::Bernoulli;

    /// Sizes near `usize::MAX` saturate the estimate instead of wrapping to a small number
    /// that the memory check would accept.
    #[test]
    fn memory_estimate_saturates_instead_of_wrapping() {
        let trainer = Trainer::new(
            Pcd {
                sweeps: 1,
                chains: usize::MAX,
            },
            usize::MAX,
        );
        let huge =
            trainer.memory_estimate::<Bernoulli<f64>, Bernoulli<f64>>(usize::MAX, usize::MAX);
        assert_eq!(huge, u128::MAX);
        let small = Trainer::new(
            Pcd {
                sweeps: 1,
                chains: 10,
            },
            10,
        )
        .memory_estimate::<Bernoulli<f64>, Bernoulli<f64>>(4, 3);
        assert!(small > 0 && small < 1 << 20, "{small}");
    }
}

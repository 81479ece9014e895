//! # ebm-train
//!
//! Maximum-likelihood training of Restricted Boltzmann Machines [`Rbm<V, H>`](ebm_models::Rbm)
//! of every pair of unit layers, by minibatch gradient ascent on the log-likelihood
//!
//! \\[ \mathcal L = \langle -F(v)\rangle_{\mathcal D} - \log Z, \qquad
//! \nabla\mathcal L = \Big\langle -\frac{\partial E}{\partial\Theta}\Big\rangle_{\mathcal D}
//! - \Big\langle -\frac{\partial E}{\partial\Theta}\Big\rangle_{\text{model}} \\]
//!
//! (Béreux et al., *Fast training and sampling of RBMs*), with the data term from the layers' conditional means and
//! the model term from a negative phase.
//!
//! | Item | Role |
//! |---|---|
//! | [`Trainer`] | configuration: negative phase, batch size, learning-rate schedule, optimiser, penalties, centring, gauge, checkpoint policy, online likelihood |
//! | [`TrainState`] | the model, optimiser moments, chains, streams, counters, kept checkpoints, the online estimator; saves and resumes bit for bit |
//! | [`LikelihoodPolicy`] | online train / test log-likelihood from `ebm_estimators::OnlineTrajectoryAis`, starting at the exact \\(\log Z\\) of the initial model |
//! | [`NegativePhase`] | where model samples come from: [`Pcd`] (PCD-k), [`Cd`] (CD-k), [`Tempered`] (PT / DEO / lifted PT on a temperature ladder), [`Jarzynski`] (reweighted, ESS-triggered resampling), [`Tmc`] (tethered Monte Carlo, weighted by the reconstructed \\(p(\hat m)\\)) |
//! | [`Moments`], [`Gradient`] | sufficient statistics written once over the [`ebm_models::Layer`] trait; the (centred) gradient |
//! | [`Optimizer`], [`LearningRate`], [`Penalty`] | SGD with momentum, Adam; constant, linear and exponential schedules; L1 / L2 on the weights |
//! | [`TrainableLayer`] | data domains, visible-field initialisation from data frequencies, precision floors |
//! | [`kinds`] | models whose unit kinds are known only at run time (read from a file): one generic task run on every pair of kinds, in `f64` or `f32`, each layer asked what it supports ([`kinds::UnitLayer`]) |
//! | [`initial_model`], [`zero_sum_gauge`], [`independent_log_partition`] | model initialisation, the Potts gauge on all parameters, exact \\(\log Z\\) at \\(W = 0\\) |
//! | [`observe`] | progress line, CSV and JSON-lines logs |
//! | [`Shard`], [`Trainer::step_on_shard`] | one process of a data-parallel run (minibatch and chains sharded, gradient sums added in block order: the model of one process, bit for bit; `ebm-mpi` runs it) |
//! | [`StackTrainer`], [`sampled_representations`] | a stack of RBMs for stacked tempering, trained bottom first on sampled hidden representations |
//!
//! # Example
//! ```
//! use ebm_train::{Pcd, Trainer, TrainingData, initial_model};
//! use ebm_models::Bernoulli;
//! use ebm_core::Par;
//! use nalgebra::DMatrix;
//!
//! // 40 samples of 6 binary units: two clusters.
//! let samples = DMatrix::from_fn(6, 40, |i, j| ((i < 3) == (j % 2 == 0)) as u8 as f64);
//! let data = TrainingData::new(&Bernoulli::zeros(6), samples)?;
//! let model = initial_model(Bernoulli::zeros(6), Bernoulli::zeros(4), Some(&data), 1e-2, 7)?;
//! let trainer = Trainer::new(Pcd { sweeps: 5, chains: 64 }, 20);
//! let mut state = trainer.init(model, &data, 7, Par::Rayon)?;
//! trainer.run(&mut state, &data, None, 50, Par::Rayon, ())?;
//! assert_eq!(state.update, 50);
//! # Ok::<(), ebm_core::Error>(())
//! ```
//!
//! # Reproducibility
//!
//! Every random draw comes from streams derived from the seed given to [`Trainer::init`] (one
//! stream per chain, one for the minibatch order), and all parallel work is split at
//! boundaries independent of the thread count: a run is bit-identical for [`ebm_core::Par::Seq`]
//! and [`ebm_core::Par::Rayon`], and "n updates, save, load, N - n updates" equals N updates.

mod any_negative;
mod bridge;
mod data;
pub mod decorrelation;
mod kernel_phase;
pub mod kinds;
mod layers;
mod negative;
pub mod observe;
mod optim;
mod params;
pub mod pretrain;
mod shard;
mod stack;
mod stats;
mod tethered;
mod trainer;

pub use any_negative::{AnyNegative, AnyNegativeState, BridgeSpec, BridgedState};
pub use bridge::Bridged;
pub use data::TrainingData;
pub use kernel_phase::PersistentKernel;
pub use layers::{DiscreteTask, TrainableLayer};
pub use negative::{Cd, Jarzynski, JarzynskiState, NegativeInfo, NegativePhase, Pcd, Tempered};
pub use optim::{LearningRate, Optimizer, OptimizerState, Penalty};
pub use params::{independent_log_partition, initial_model, zero_sum_gauge};
pub use shard::{Shard, ShardedPhase, join_chain_states, shard_chain_state};
pub use stack::{StackTrainer, sampled_representations};
pub use stats::{Centre, Gradient, Moments};
pub use tethered::{Tmc, TmcDirection, TmcState};
pub use trainer::{
    AUTO_EXACT_SELECTION_CONFIGURATIONS, CheckpointPolicy, LikelihoodInfo, LikelihoodPolicy,
    MAX_EXACT_INITIAL_CONFIGURATIONS, MAX_EXACT_SELECTION_CONFIGURATIONS, MAX_NEGATIVE_Z,
    PairBelowTarget, SelectionAcceptance, TRAIN_STATE_FORMAT, TRAIN_STATE_FORMAT_VERSION,
    TrainInfo, TrainState, Trainer, mean_log_likelihood,
};

//! # ebm-estimators
//!
//! Partition functions and log-likelihoods of energy-based models, each estimate with its
//! error bar, its effective sample size, its cost and a record of how it was obtained
//! ([`LogZEstimate`]). Béreux et al., *Fast training and sampling of RBMs*.
//!
//! | Estimator | Entry point | Error bar |
//! |---|---|---|
//! | exact enumeration of the smaller layer (\\(\le 2^{24}\\) states) | [`exact_log_partition`] | none |
//! | closed forms (independent sites, \\(\beta = 0\\)) and exact draws of rung 0 | [`Start`] | none |
//! | AIS along any ladder: temperature, reference-interpolated, trajectory (offline Tr-AIS) | [`ais()`] with [`Ais`] | delta method |
//! | reverse AIS from exact or equilibrium draws of the target | [`reverse_ais`] | delta method |
//! | online trajectory AIS, advanced by a trainer after each update, with ESS resampling | [`OnlineTrajectoryAis`] | delta method |
//! | BAR and exponential averages between neighbouring rungs of PT / PTT | [`PairAccumulator`] | jackknife over chains |
//! | log-likelihood of a dataset | [`log_likelihood`] | propagated from \\(\log Z\\) |
//! | pseudo-log-likelihood of a dataset (no \\(\log Z\\)): exact, or paper 004's one-coordinate estimate | [`pseudo_log_likelihood`], [`pseudo_log_likelihood_estimate`] | over samples |
//!
//! Every annealing estimator is a sequence of one transition rule, the [`Annealer`] trait, over
//! a ladder of `ebm_samplers::tempering` ([`Ladder`](ebm_samplers::tempering::Ladder)); the
//! rule of this crate, [`Ais`], weights first and moves with the new rung's kernel second
//! (Neal's order, the PTT paper). Forward AIS gives a stochastic lower bound of \\(\log Z\\), reverse
//! AIS from exact draws a stochastic upper bound: together a sandwich.
//!
//! Estimators accumulate in `f64` whatever the model's scalar type. Chain `i` of a
//! [`Population`] consumes only RNG stream `i`, so every result is bit-identical for
//! [`Par::Seq`](ebm_core::Par) and [`Par::Rayon`](ebm_core::Par), and populations and the
//! online estimator serialise for exact resumption.
//!
//! # Example
//! ```
//! use ebm_core::Par;
//! use ebm_estimators::{Ais, Start, ais, exact_log_partition};
//! use ebm_models::{Bernoulli, Rbm};
//! use ebm_samplers::{Gibbs, tempering::TemperatureLadder};
//! use nalgebra::DMatrix;
//!
//! let rbm = Rbm::new(
//!     Bernoulli::new(vec![0.2, -0.1, 0.3, 0.0]),
//!     Bernoulli::new(vec![-0.3, 0.1]),
//!     DMatrix::from_row_slice(4, 2, &[1.0, -0.5, 0.4, 0.8, -0.7, 0.2, 0.3, 0.6]),
//! )?;
//! let exact = exact_log_partition(&rbm, 1.0, Par::Seq)?;
//! let betas: Vec<f64> = (0..=100).map(|k| k as f64 / 100.0).collect();
//! let ladder = TemperatureLadder::new(rbm.clone(), betas)?;
//! let start = Start::uniform(&rbm, 500, 7, Par::Seq)?; // exact draws at beta = 0
//! let run = ais(&Ais::new(Gibbs::new(1)), &ladder, start, Par::Seq);
//! assert!(run.estimate.covers(exact.log_z, 5.0));
//! # Ok::<(), ebm_core::Error>(())
//! ```

mod ais;
mod bar;
mod estimate;
mod exact;
mod likelihood;
mod online;
mod population;
mod pseudo;
mod ptt;
pub mod trust;

pub use ais::{
    Ais, AisRun, Annealer, Reversed, TransitionInfo, ais, ais_from_weights, reverse_ais,
    reverse_ais_from_weights,
};
pub use bar::{LadderEstimate, PairAccumulator, PairEstimate, bennett_acceptance_ratio};
pub use estimate::{
    DescribeLadder, Direction, ErrorBar, LadderKind, LogMeanExp, LogZEstimate, Method, RungLogZ,
    Side, WeightedMean, bootstrap_std_err, standard_score,
};
pub use exact::{Start, exact_log_partition};
pub use likelihood::{LogLikelihood, log_likelihood};
pub use online::{MIN_STEP_RELATIVE_ESS, OnlineAisInfo, OnlineTrajectoryAis};
pub use population::{Population, SelectChains, systematic_resampling, systematic_resampling_n};
pub use pseudo::{
    PseudoLogLikelihood, pseudo_log_likelihood, pseudo_log_likelihood_estimate,
    pseudo_log_likelihoods,
};
pub use ptt::{MAX_EXTENSION, PttEstimate, PttPlan, ptt_log_z};
pub use trust::Warning;

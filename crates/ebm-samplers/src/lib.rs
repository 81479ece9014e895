//! # ebm-samplers
//!
//! Markov kernels and the sampling driver.
//!
//! - [`Gibbs`]: alternating Gibbs sampling (AGS), written once over
//!   [`ebm_core::ConditionalSampler`]: \\(h \sim p_\beta(h \mid v)\\), then
//!   \\(v \sim p_\beta(v \mid h)\\), for every chain (Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).
//! - [`Metropolis`]: single-site Metropolis on the visible layer of an RBM with the exact
//!   tempered free-energy difference as acceptance (Roussel, Cocco and Monasson).
//! - [`SingleSiteMetropolis`]: single-site Metropolis for any model that implements the small
//!   [`LocalUpdate`] trait (a symmetric proposal for one site and the energy change it causes).
//! - [`Cycle`], [`Mixture`] and [`Repeat`]: kernels built from kernels (one after the other,
//!   one or the other at random per chain, the same one several times).
//! - [`LatentGibbs`]: hidden-space Gibbs sampling with the visible layer summed out
//!   (Algorithms 3 and 4 of Roussel, Cocco and Monasson), exact for discrete hidden units and exact by a
//!   Metropolis–Hastings correction of a grid proposal for continuous ones; [`Alternate`]
//!   (a [`Cycle`]) composes it with AGS.
//! - [`EscapeTimes`]: first-passage times of many chains between modes, with error bars
//!   (the exact Curie–Weiss reference is `ebm_models::barriers`).
//! - [`ModeTracer`], [`ModeRule`]: mode jumps per chain against the cost and mode weights
//!   with error bars, on modes fitted to the data's principal components (pc1, a plane,
//!   k-means, labels)
//! - [`ExactRefresh`]: independent exact draws for models with [`ebm_core::ExactSampling`].
//! - [`run()`]: applies a kernel repeatedly to a [`ebm_core::ChainState`], reporting to an
//!   [`ebm_core::Observer`].
//!
//! - [`tempering`]: ladders, the [`tempering::Exchange`] move and [`tempering::ParallelTempering`]
//!   with stochastic even/odd, deterministic even/odd and random-pair schedules.
//!   The same loop runs stacked tempering ([`tempering::StackLadder`],
//!   [`tempering::StackedTempering`]): a stack of RBMs exchanging hidden and visible layers.
//!
//! - [`tethered`]: Tethered Monte Carlo (order parameters, tethers, the [`tethered::Tethered`]
//!   kernel, reconstruction of \\(p(\hat m)\\) and barriers).
//!
//! Every kernel here has an exact invariance test and a detailed-balance test in the test kit.

mod combinators;
mod escape;
mod gibbs;
mod heat_bath;
pub mod latent;
mod metropolis;
mod modes;
mod refresh;
mod run;
mod single_site;
mod static_lowrank;
pub mod tempering;
pub mod tethered;

pub use combinators::{Cycle, Mixture, MixtureInfo, Repeat};
pub use escape::{EscapeSummary, EscapeTimes, Occupation};
pub use gibbs::{Gibbs, GibbsInfo};
pub use heat_bath::{FiniteAlphabet, HeatBathInfo, SingleSiteHeatBath};
pub use latent::{Alternate, Block, Grid, LatentGibbs, LatentInfo, LatentUnits};
pub use metropolis::{Metropolis, MetropolisInfo};
pub use modes::{ChainRecording, JumpCurve, ModeRule, ModeTrace, ModeTracer};
pub use refresh::ExactRefresh;
pub use run::{StepInfo, run};
pub use single_site::{LocalUpdate, Scan, SingleSiteMetropolis};
pub use static_lowrank::{LowRankIndependence, LowRankRefresh};

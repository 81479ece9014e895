//! # ebm-samplers
//!
//! Markov kernels and the sampling driver.
//!
//! - [`Gibbs`]: alternating Gibbs sampling (AGS), written once over
//!   [`ebm_core::ConditionalSampler`]: \\(h \sim p_\beta(h \mid v)\\), then
//!   \\(v \sim p_\beta(v \mid h)\\), for every chain (spec `ags-barriers-analytic-models.md` §4.1).
//! - [`Metropolis`]: single-site Metropolis on the visible layer of an RBM with the exact
//!   tempered free-energy difference as acceptance (§4.2).
//! - [`ExactRefresh`]: independent exact draws for [`ebm_core::Tractable`] models.
//! - [`run`]: applies a kernel repeatedly to a [`ebm_core::ChainState`], reporting to an
//!   [`ebm_core::Observer`].
//!
//! - [`tempering`]: ladders, the [`tempering::Exchange`] move and [`tempering::ParallelTempering`]
//!   with stochastic even/odd, deterministic even/odd and random-pair schedules.
//!
//! - [`tethered`]: Tethered Monte Carlo (order parameters, tethers, the [`tethered::Tethered`]
//!   kernel, reconstruction of \\(p(\hat m)\\) and barriers).
//!
//! Every kernel here has an exact invariance test and a detailed-balance test in the test kit.

mod gibbs;
mod metropolis;
mod refresh;
mod run;
pub mod tempering;
pub mod tethered;

pub use gibbs::{Gibbs, GibbsInfo};
pub use metropolis::{Metropolis, MetropolisInfo};
pub use refresh::ExactRefresh;
pub use run::{StepInfo, run};

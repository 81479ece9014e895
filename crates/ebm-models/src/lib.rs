//! # ebm-models
//!
//! Unit layers and the generic Restricted Boltzmann Machine [`Rbm<V, H>`](Rbm).
//!
//! - [`Layer`]: potential, cumulant generating function, conditional sampling and means of a
//!   layer of independent units; [`DiscreteLayer`] adds enumeration; [`BinaryLayer`] the linear
//!   fields of binary units.
//! - [`Bernoulli`] (\\(\{0,1\}\\)) and [`Spin`] (\\(\{-1,+1\}\\)) are distinct types; converting
//!   between their parametrisations is the explicit [`Rbm::reparametrise`].
//! - [`Rbm`] implements [`ebm_core::EnergyModel`] (visible free energy at \\(\beta\\)) and
//!   [`ebm_core::ConditionalSampler`] (batched block sampling), so every sampler of the workspace
//!   runs on it.
//! - [`exact`]: \\(\log Z\\), marginals and exact sampling by enumeration of small layers.
//!
//! # Example
//! ```
//! use ebm_models::{Bernoulli, Rbm, exact};
//! use ebm_core::Par;
//! use nalgebra::DMatrix;
//!
//! let rbm = Rbm::new(
//!     Bernoulli::new(vec![0.1, -0.2, 0.3]),
//!     Bernoulli::new(vec![0.0, 0.5]),
//!     DMatrix::from_row_slice(3, 2, &[1.0, -1.0, 0.5, 0.2, -0.3, 0.8]),
//! )?;
//! let by_v = exact::log_partition_by_visible(&rbm, 1.0, Par::Seq)?;
//! let by_h = exact::log_partition_by_hidden(&rbm, 1.0, Par::Seq)?;
//! assert!((by_v - by_h).abs() < 1e-12);
//! # Ok::<(), ebm_core::Error>(())
//! ```

pub mod action;
pub mod analytic;
pub mod barriers;
mod binary;
mod continuous;
pub mod exact;
mod layer;
pub mod low_temperature;
pub mod lowrank;
mod potts;
mod rbm;
mod stack;
pub mod structured;

pub use analytic::{CurieWeiss, Hopfield};
pub use binary::{Bernoulli, Spin};
pub use continuous::{DReLU, Gaussian, ReLU};
pub use layer::{
    BinaryLayer, DiscreteHiddenTask, DiscreteLayer, Layer, LinearFields, NamedTensor, TensorLookup,
    discrete_statistic_range,
};
pub use lowrank::{LowRankBasis, Mesh, PriorWeight};
pub use potts::Potts;
pub use rbm::{Rbm, RbmChains, Reparametrised};
pub use stack::{Stack, StackedRbm};
pub use structured::{Structured, walsh_hadamard_patterns};

/// An RBM with Bernoulli units on both sides.
pub type BernoulliRbm<F = f64> = Rbm<Bernoulli<F>, Bernoulli<F>>;
/// An RBM with spin units on both sides.
pub type SpinRbm<F = f64> = Rbm<Spin<F>, Spin<F>>;

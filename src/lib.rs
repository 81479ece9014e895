//! # ebm
//!
//! Markov-chain Monte Carlo for energy-based models, centred on Restricted Boltzmann Machines.
//!
//! This umbrella crate re-exports the workspace's crates and offers a [`prelude`]:
//!
//! | Crate | Contents |
//! |---|---|
//! | [`core`] (`ebm-core`) | traits ([`EnergyModel`](core::EnergyModel), [`ConditionalSampler`](core::ConditionalSampler), [`Kernel`](core::Kernel), [`Enumerable`](core::Enumerable), [`ExactLogPartition`](core::ExactLogPartition), [`ExactSampling`](core::ExactSampling), [`Tractable`](core::Tractable), [`ProductCache`](core::ProductCache), [`Observer`](core::Observer)), RNG streams, [`Par`](core::Par), errors, numerics |
//! | [`models`] (`ebm-models`) | unit layers and the generic [`Rbm<V, H>`](models::Rbm), exact enumeration |
//! | [`samplers`] (`ebm-samplers`) | alternating Gibbs, single-site Metropolis (RBM and generic) and heat bath (finite alphabets), kernel combinators, the sampling driver, parallel tempering (ladders, swap schedules, diagnostics, ladder construction) |
//! | [`estimators`] (`ebm-estimators`) | exact log Z, AIS, reverse AIS, trajectory AIS (offline and online), BAR from PT samples, log-likelihood with error bars |
//! | [`train`] (`ebm-train`) | PCD/CD/PT/Jarzynski training, optimisers, online log-likelihood, checkpoint trajectories, resume |
//! | [`io`] (`ebm-io`) | RBM files: safetensors + JSON metadata, atomic writes, validated loading |
//! | [`data`] (`ebm-data`) | dataset generators and loaders, PCA, mixing and sample-quality metrics |
//! | [`cuda`] (`ebm-cuda`) | the CUDA backend: Gibbs sweeps, temperature PT and PCD training of Bernoulli/spin RBMs on an NVIDIA GPU (libraries loaded at run time: nothing to install to build) |
//! | [`distributed`] (`ebm-mpi`) | sampling and PT sharded across processes (MPI behind the feature `mpi`), identical to one process |
//! | `plot` (`ebm-plot`, feature `plot`, on by default) | figures as PNG or SVG from plain data: samples over data, mode jumps, log-likelihood curves, swap acceptance, log Z against cost, tethered densities, image grids (pure Rust) |
//! | `testkit` (`ebm-testkit`, feature `testkit`, on by default) | exact invariance, detailed-balance and chi-square tests of any kernel on any [`Enumerable`](core::Enumerable) model |
//!
//! The package also builds the `ebm` command-line program (`ebm-cli`: datasets, sampling,
//! training, log-likelihood estimators, figures) behind the default feature `cli`; a library
//! user who does not want its dependencies (clap, plotters, indicatif) writes
//! `ebm = { version = "0.1", default-features = false }`.
//!
//! # Example
//! ```
//! use ebm::prelude::*;
//! use ebm::nalgebra::DMatrix;
//!
//! // A 4 x 2 Bernoulli RBM.
//! let rbm = Rbm::new(
//!     Bernoulli::new(vec![0.0; 4]),
//!     Bernoulli::new(vec![0.0; 2]),
//!     DMatrix::from_element(4, 2, 0.5),
//! )?;
//! // 256 chains, one RNG stream each, all derived from seed 42.
//! let mut state = ChainState::new(rbm.new_state(256), 42);
//! run(&rbm, &Gibbs::new(1), 1.0, &mut state, 100, Par::Rayon, ())?;
//! assert_eq!(state.steps, 100);
//! # Ok::<(), ebm::core::Error>(())
//! ```

#[cfg(feature = "cli")]
pub use ebm_cli as cli;
pub use ebm_core as core;
pub use ebm_cuda as cuda;
pub use ebm_data as data;
pub use ebm_estimators as estimators;
pub use ebm_io as io;
pub use ebm_models as models;
#[cfg(feature = "plot")]
pub use ebm_plot as plot;
pub use ebm_samplers as samplers;
#[cfg(feature = "testkit")]
pub use ebm_testkit as testkit;
pub use ebm_train as train;
pub use nalgebra;
pub use rand;

/// Sampling, parallel tempering, AIS and training sharded across processes, identical to one
/// process (the crate `ebm-mpi`), and with the feature `mpi` its MPI transport `Mpi` (the
/// crate `ebm-mpi-transport`: the processes of `mpirun -n N`).
pub mod distributed {
    pub use ebm_mpi::*;
    #[cfg(feature = "mpi")]
    pub use ebm_mpi_transport::Mpi;
}

/// The names most programs need.
pub mod prelude {
    pub use ebm_core::{
        ChainState, Chains, ConditionalSampler, EnergyModel, Enumerable, Error, Every,
        ExactLogPartition, ExactSampling, FnObserver, Kernel, Observer, Par, ProductCache,
        RngStreams, Scalar, Tractable, exact_by_enumeration, sites::SiteProduct,
    };
    pub use ebm_io::{load_rbm, read_rbm_info, save_rbm};
    pub use ebm_models::exact::Enumerated;
    pub use ebm_models::{
        Bernoulli, BinaryLayer, CurieWeiss, DReLU, DiscreteLayer, Gaussian, Hopfield, Layer, Potts,
        Rbm, RbmChains, ReLU, Spin,
    };
    pub use ebm_samplers::{
        Cycle, FiniteAlphabet, Gibbs, GibbsInfo, HeatBathInfo, LocalUpdate, Metropolis, Mixture,
        Repeat, Scan, SingleSiteHeatBath, SingleSiteMetropolis, StepInfo, run,
    };
}

/// The README's code examples, compiled and run as doctests so they cannot drift.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

//! The CUDA backend of ebm: Restricted Boltzmann Machines with Bernoulli (\\(\{0,1\}\\)) or
//! spin (\\(\{-1,+1\}\\)) units on both layers, sampled and trained on an NVIDIA GPU, in `f32` or
//! `f64`.
//!
//! - [`Gpu`]: one device, its stream, cuBLAS and the kernels (compiled at run time by NVRTC).
//!   The CUDA libraries are loaded when a [`Gpu`] is opened, so building and testing need no
//!   CUDA installation; on a machine without a GPU, [`Gpu::new`] returns
//!   [`Error::NoDevice`] with the reason ([`unavailable`] says it without opening anything).
//! - [`GpuRbm`]: a model's parameters on the device, uploaded from and downloaded to
//!   [`ebm_models::Rbm`]. [`GpuChains`]: a batch of chains resident on the device.
//! - [`GpuRbm::sweep`]: one alternating Gibbs sweep of every chain, each at its own inverse
//!   temperature: two cuBLAS products and two fused passes (fields, bias, temperature,
//!   sigmoid, draw), no host round trip.
//! - [`GpuPt`]: temperature parallel tempering, one sweep of every replica of every rung as a
//!   single batch and the even/odd exchanges decided on the device (deterministic or stochastic
//!   even/odd schedule).
//! - [`GpuPcd`]: persistent contrastive divergence (PCD-k) with the centred gradient of the
//!   reference code of Béreux et al., *Fast training and sampling of RBMs*, entirely on the
//!   device.
//!
//! Random numbers are counter-based (Philox4x32-10, [`philox4x32`]): the uniform used by unit
//! `i` of chain `c` at draw number `t` of a run is a pure function of `(seed, i, c, t)`. The same
//! seed gives the same chains run to run and whatever the number of chains sampled alongside,
//! and a test can recompute any draw on the host.
//!
//! The kernels pass the exact tests of the CPU kernels, run on a GPU by
//! `crates/ebm-cuda/tests/gpu.rs` (`scripts/gpu-check.sh` runs them with the benchmarks); on a
//! machine without a GPU those tests print why they skip.

mod device;
mod philox;
mod pt;
mod rbm;
mod run;
mod train;

pub use device::{Device, Gpu, GpuScalar, unavailable};
pub use philox::philox4x32;
pub use pt::{GpuPt, GpuSchedule};
pub use rbm::{GpuChains, GpuRbm, Units};
pub use run::{Trained, gibbs, train_pcd};
pub use train::{GpuPcd, PcdSettings};

/// Errors of the CUDA backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No usable CUDA device: the reason (missing libraries, no device, a wrong ordinal).
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// The CUDA driver, cuBLAS or the kernel compiler failed.
    #[error("CUDA error: {0}")]
    Cuda(String),
    /// What was asked is not implemented on the GPU.
    #[error("not supported on the GPU: {0}")]
    Unsupported(String),
    /// An argument is invalid (what, and what was expected).
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: String,
        /// Why it is invalid, including the expected range.
        reason: String,
    },
}

impl Error {
    pub(crate) fn driver(e: cudarc::driver::DriverError) -> Self {
        Error::Cuda(format!("driver: {e}"))
    }

    pub(crate) fn blas(e: cudarc::cublas::result::CublasError) -> Self {
        Error::Cuda(format!("cuBLAS: {e:?}"))
    }

    pub(crate) fn invalid(name: &str, reason: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name: name.into(),
            reason: reason.into(),
        }
    }
}

impl From<ebm_core::Error> for Error {
    fn from(e: ebm_core::Error) -> Self {
        Error::InvalidParameter {
            name: "model".into(),
            reason: e.to_string(),
        }
    }
}

/// Results of the CUDA backend.
pub type Result<T> = std::result::Result<T, Error>;

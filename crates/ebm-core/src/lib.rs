//! # ebm-core
//!
//! The bottom layer of the `ebm` workspace: the traits every model and algorithm is written
//! against, chain batches, per-chain random-number streams, the [`Par`] switch, typed errors and
//! numerically stable special functions.
//!
//! | Item | Role |
//! |---|---|
//! | [`EnergyModel`] | a family of Boltzmann laws \\(p_\beta(x) \propto e^{-E_\beta(x)}\\), evaluated for a batch of chains |
//! | [`ConditionalSampler`] | block sampling of one layer of a bipartite model given the other |
//! | [`Kernel`] | a Markov transition that leaves \\(p_\beta\\) invariant |
//! | [`ExactLogPartition`], [`ExactSampling`], [`Tractable`] | exact \\(\log Z\\), exact sampling, both |
//! | [`Enumerable`] | a model whose states can be listed: the reference of exact tests |
//! | [`sites`] | listing the configurations of finite-alphabet sites ([`sites::SiteProduct`]); [`exact_by_enumeration!`] |
//! | [`Observer`] | receives typed step information; `()` is the no-op observer |
//! | [`RngStreams`] | one Xoshiro256++ stream per chain, derived from one seed by jumps |
//! | [`Par`] | sequential or rayon execution, with results independent of the thread count |
//! | [`diagnostics`] | autocorrelation times, ESS, mode assignment and mode jumps |
//! | [`input`] | opening input files: regular files only, whole-file reads capped |
//!
//! ## Reproducibility
//!
//! Chain `i` consumes only stream `i`, and parallel work is split into chunks of
//! [`CHAIN_CHUNK`] chains whose boundaries do not depend on the number of threads, so every
//! result is bit-identical for [`Par::Seq`] and [`Par::Rayon`] with any pool size.

mod chains;
pub mod diagnostics;
mod error;
pub mod input;
mod lanes;
pub mod linalg;
pub mod numerics;
mod observe;
mod par;
mod rng;
mod scalar;
pub mod simd;
pub mod sites;
pub mod special;
mod traits;

pub use chains::{ChainState, Chains, swap_columns, swap_columns_where};
pub use error::{Error, Result};
pub use num_traits;
pub use observe::{Every, FnObserver, Observer};
pub use par::{CHAIN_CHUNK, Par, for_each_chain_chunk, for_each_chain_chunk2, for_each_item};
/// The `rand` this crate uses (for macros such as [`exact_by_enumeration!`]).
#[doc(hidden)]
pub use rand;
pub use rng::{ChainRng, RngStreams, as_chain_rngs};
pub use scalar::Scalar;
pub use traits::{
    ConditionalSampler, EnergyModel, Enumerable, ExactLogPartition, ExactSampling, Kernel,
    ProductCache, Tractable,
};

//! Sampling sharded across processes, with results identical to one process.
//!
//! Every chain of an ebm run draws from its own RNG stream (stream `i` of
//! [`ebm_core::RngStreams`], which does not depend on how many streams exist), and kernels
//! compute on blocks of [`ebm_core::CHAIN_CHUNK`] chains whose boundaries depend only on the
//! chain index. So a run can be cut by chains: a process that runs chains `a..b` (whole blocks,
//! [`chain_range`]) with streams `a..b` ([`ebm_core::RngStreams::select`]) computes exactly what
//! those chains compute in the whole run, and joining the shards in order gives the whole run
//! bit for bit, for any number of processes and threads. Parallel tempering is cut by system
//! (a system is one chain on every rung, and exchanges pair the chains of one system):
//! [`ebm_samplers::tempering::PtState::for_systems`]. Forward and reverse AIS without
//! resampling are cut by chain too: each chain's weights are its own, and rank 0 computes the
//! estimate from the gathered weights ([`ebm_estimators::ais_from_weights`],
//! [`ebm_estimators::reverse_ais_from_weights`]).
//!
//! The drivers ([`sample`], [`parallel_tempering`], [`ais`], [`reverse_ais`], and
//! [`ais_on_shard`] / [`reverse_ais_on_shard`] for a path walked stretch by stretch) run a
//! shard on every rank of a [`Collective`] and gather the results on rank 0. The `ebm`
//! command line built with the root package's feature `mpi` calls them: `mpirun -n K ebm
//! sample` (Gibbs) and `mpirun -n K ebm loglik ais | reverse-ais | tr-ais`. Transports:
//! - [`Solo`]: one process (the unsharded run);
//! - [`Threads`]: ranks as threads of one process, to test a sharded computation without MPI;
//! - `Mpi` (the crate `ebm-mpi-transport` with its feature `mpi`; `ebm::distributed::Mpi`):
//!   the processes of `mpirun -n N`, over a system MPI (MPICH or Open MPI; the `mpi` crate's
//!   bindings also need libclang at build time). It lives in a crate of its own so that this
//!   one, and the command line above it, compile the same with and without MPI.
//!
//! Training is sharded by [`train()`] (data-parallel: every rank holds whole blocks of the
//! minibatch and of the persistent chains; the blocks' gradient sums go to rank 0, which adds
//! them in block order, [`TrainShard`]), and the trained model is the one-process model bit for
//! bit; with a tempered negative phase each rank holds whole blocks of PT's systems on every
//! rung ([`ebm_train::Tempered`], any swap schedule), and the swap acceptance it reports is
//! added per block in block order too. `mpirun -n K ebm train --negative pcd | cd | pt` calls
//! it.
//!
//! # Costs
//!
//! A sharded run communicates once, at the end: each rank sends its chains
//! (8 bytes × values per chain × chains) and a few counters. Nothing crosses ranks during the
//! run, so `r` ranks divide the sweep time by `r` up to the block granularity: with `n`
//! chains there are `⌈n / 128⌉` blocks to deal, and ranks beyond that number idle.
//!
//! # Example
//!
//! Four ranks as threads give the chains of the one-process run:
//! ```
//! use ebm_core::{ChainState, Par};
//! use ebm_models::{Bernoulli, Rbm};
//! use ebm_mpi::{Collective, Threads, sample};
//! use ebm_samplers::{Gibbs, run};
//! use nalgebra::DMatrix;
//!
//! let rbm = Rbm::new(
//!     Bernoulli::new(vec![0.1; 6]),
//!     Bernoulli::new(vec![-0.2; 4]),
//!     DMatrix::from_fn(6, 4, |i, j| 0.3 * (i as f64 - j as f64)),
//! )
//! .unwrap();
//! let init = rbm.default_chains(300);
//! let mut whole = ChainState::new(init.clone(), 9);
//! run(&rbm, &Gibbs::new(1), 1.0, &mut whole, 20, Par::Rayon, ()).unwrap();
//!
//! let gathered = std::thread::scope(|s| {
//!     let ranks: Vec<_> = Threads::group(4)
//!         .into_iter()
//!         .map(|c| {
//!             let (rbm, init) = (&rbm, &init);
//!             s.spawn(move || sample(&c, rbm, &Gibbs::new(1), 1.0, init, 9, 20, Par::Rayon))
//!         })
//!         .collect();
//!     let mut results: Vec<_> = ranks.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
//!     results.swap_remove(0).expect("rank 0 gathers")
//! });
//! assert_eq!(gathered, whole.chains);
//! ```

mod collective;
mod drivers;
mod launch;
mod shard;
// --- data-parallel training ---
mod train;
pub use train::{TrainShard, train};
// --- end data-parallel training ---

pub use collective::{Collective, Solo, Threads};
pub use drivers::{
    PtOutcome, ais, ais_on_shard, gather_chains, parallel_tempering, reverse_ais,
    reverse_ais_on_shard, sample, shard_population,
};
pub use launch::{Launch, NotOneProcess, launch, launch_in, one_process};
pub use shard::{ShardChains, chain_range};

// --- Tempering sharded by rung ---
mod rungs;
pub use rungs::{
    RungNeighbours, RungRun, rung_range, tempering, tempering_by_rung, tempering_by_rung_from,
};
// --- End of tempering sharded by rung ---

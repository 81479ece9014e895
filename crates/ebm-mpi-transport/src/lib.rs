//! The MPI transport of [`ebm_mpi`]: `Mpi` (feature `mpi`), the processes of `mpirun -n N`
//! as a [`ebm_mpi::Collective`], over a system MPI (MPICH or Open MPI; the `mpi` crate's
//! bindings also need libclang at build time).
//!
//! The sharding itself ([`ebm_mpi`]) and the command line do not depend on this crate's
//! feature: the `ebm` program gets the transport from the root package's feature `mpi`, which
//! hands `Mpi::init` to the command line. So turning MPI on rebuilds rsmpi, this crate and
//! the root package, not the workspace. Without the feature the crate is empty.
//!
//! Gibbs sampling sharded over the processes of `mpirun` (the program `sharded-gibbs` of this
//! crate), identical to one process:
//!
//! ```text
//! cargo build --release -p ebm-mpi-transport --features mpi --bin sharded-gibbs
//! mpirun -n 2 target/release/sharded-gibbs
//! ```

#[cfg(feature = "mpi")]
mod world;
#[cfg(feature = "mpi")]
pub use world::Mpi;

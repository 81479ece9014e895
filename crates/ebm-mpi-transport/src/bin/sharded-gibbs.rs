//! Gibbs sampling sharded over the processes of `mpirun`, identical to one process:
//!
//! ```text
//! cargo build --release -p ebm-mpi-transport --features mpi --bin sharded-gibbs
//! mpirun -n 2 target/release/sharded-gibbs
//! ```
use ebm_core::Par;
use ebm_models::{Bernoulli, Rbm};
use ebm_mpi::{Collective, sample};
use ebm_mpi_transport::Mpi;
use ebm_samplers::Gibbs;
use nalgebra::DMatrix;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Once, first: the processes of `mpirun -n N` (a world of one without mpirun).
    let world = Mpi::init().ok_or("MPI was already initialised")?;
    // Every rank builds the same model and initial chains from the same inputs.
    let rbm = Rbm::new(
        Bernoulli::new(vec![-0.5; 64]),
        Bernoulli::new(vec![0.2; 32]),
        DMatrix::from_fn(64, 32, |i, j| 0.1 * (((i * 7 + j * 3) % 11) as f64 - 5.0)),
    )?;
    let init = rbm.default_chains(4096);
    // Rank r runs chains chain_range(4096, N, r) with their own streams of seed 42.
    let chains = sample(
        &world,
        &rbm,
        &Gibbs::new(1),
        1.0,
        &init,
        42,
        200,
        Par::Rayon,
    )?;
    // Rank 0 holds all 4096 chains, bit for bit those of a one-process run.
    if let Some(chains) = chains {
        let mean = chains.visible.mean();
        println!(
            "{} ranks, {} chains, mean visible unit {mean:.6}",
            world.size(),
            chains.visible.ncols()
        );
    }
    Ok(())
}

//! `mpirun -n N ebm-mpi-check OUT`: runs sharded Gibbs sampling, temperature PT (DEO),
//! trajectory PT, forward and reverse AIS over the MPI world, writes on rank 0 the gathered
//! chains, replica labels, exchange counts and AIS estimates, profile and weights to `OUT` (raw
//! little-endian words, so files from different `N` can be compared byte for byte), and
//! checks them against the one-process run computed on rank 0.
//! Exit code 0 when they agree, 1 when they differ, 2 on a usage or I/O error.

use std::process::ExitCode;

use ebm_core::{Par, RngStreams, Scalar};
use ebm_estimators::{Ais, Start};
use ebm_models::{Bernoulli, Rbm, RbmChains};
use ebm_mpi::{Collective, PtOutcome, ShardChains, Solo, parallel_tempering, sample};
use ebm_mpi_transport::Mpi;
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Exchange, ParallelTempering, SwapSchedule, TemperatureLadder, TrajectoryLadder,
};
use nalgebra::DMatrix;

const SEED: u64 = 2024;

/// A 20 x 12 Bernoulli RBM with weights drawn from `seed`, scaled by `scale`.
fn rbm(seed: u64, scale: f64) -> Rbm<Bernoulli, Bernoulli> {
    let mut g = RngStreams::auxiliary(seed, 7);
    let mut draw = |s: f64| s * (f64::uniform(&mut g) - 0.5);
    let w = DMatrix::from_fn(20, 12, |_, _| draw(scale));
    let a = (0..20).map(|_| draw(1.0)).collect();
    let b = (0..12).map(|_| draw(1.0)).collect();
    Rbm::new(Bernoulli::new(a), Bernoulli::new(b), w).expect("valid shapes")
}

/// The words of a PT outcome that must not depend on the number of ranks (all but the summed
/// acceptance probabilities, which agree to round-off).
fn pt_words(o: &PtOutcome<RbmChains<f64>>) -> Vec<u64> {
    let mut words: Vec<u64> = o.rungs.iter().flat_map(ShardChains::pack).collect();
    words.extend(o.replica.iter().flatten().map(|&r| u64::from(r)));
    words.push(o.round_trips);
    words.extend(&o.proposed);
    words.extend(&o.accepted);
    words
}

/// Every output of the three runs on the ranks of `c`, concatenated (on rank 0).
fn workloads<C: Collective>(c: &C) -> Option<Vec<u64>> {
    let target = rbm(1, 1.5);
    let init = target.default_chains(1000);
    let gibbs =
        sample(c, &target, &Gibbs::new(1), 1.0, &init, SEED, 50, Par::Rayon).expect("Gibbs run");

    let ladder = TemperatureLadder::geometric(target.clone(), 0.3, 6).expect("valid ladder");
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let rungs = vec![target.default_chains(500); ladder.n_exchange_rungs()];
    let tempered =
        parallel_tempering(c, &pt, &ladder, &rungs, SEED, 40, Par::Rayon).expect("PT run");

    let trajectory =
        TrajectoryLadder::new((1..=5).map(|t| rbm(1, 0.4 * t as f64)).collect()).expect("ladder");
    let ptt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::Sweep);
    let rungs = vec![target.default_chains(300); 5];
    let trajectory_run =
        parallel_tempering(c, &ptt, &trajectory, &rungs, SEED, 40, Par::Rayon).expect("PTT");

    let betas = (0..=20).map(|k| k as f64 / 20.0).collect();
    let annealing = TemperatureLadder::new(target.clone(), betas).expect("valid ladder");
    let start = Start::uniform(&target, 700, SEED, Par::Rayon).expect("exact start");
    let annealed =
        ebm_mpi::ais(c, &Ais::new(Gibbs::new(1)), &annealing, &start, Par::Rayon).expect("AIS run");

    let draws = Start::enumerated(&target, 1.0, 700, SEED, Par::Rayon).expect("exact draws");
    let reversed = ebm_mpi::reverse_ais(
        c,
        &Ais::new(Gibbs::new(1)),
        &annealing,
        &draws.population,
        &start.log_z,
        Par::Rayon,
    )
    .expect("reverse AIS run");

    let mut words = gibbs?.pack();
    words.extend(pt_words(&tempered?));
    words.extend(pt_words(&trajectory_run?));
    let annealed = annealed?;
    words.push(annealed.estimate.log_z.to_bits());
    words.push(annealed.estimate.std_err.to_bits());
    words.extend(annealed.profile.iter().map(|r| r.log_z.to_bits()));
    words.extend(annealed.population.log_weights.iter().map(|w| w.to_bits()));
    words.extend(annealed.population.chains.pack());
    let reversed = reversed?;
    words.push(reversed.estimate.log_z.to_bits());
    words.push(reversed.estimate.std_err.to_bits());
    words.extend(reversed.population.log_weights.iter().map(|w| w.to_bits()));
    words.extend(reversed.population.chains.pack());
    Some(words)
}

fn main() -> ExitCode {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: mpirun -n N ebm-mpi-check OUT");
        return ExitCode::from(2);
    };
    let Some(world) = Mpi::init() else {
        eprintln!("ebm-mpi-check: MPI was already initialised");
        return ExitCode::from(2);
    };
    let sharded = workloads(&world);
    let Some(sharded) = sharded else {
        return ExitCode::SUCCESS;
    };
    let bytes: Vec<u8> = sharded.iter().flat_map(|w| w.to_le_bytes()).collect();
    if let Err(e) = std::fs::write(&out, bytes) {
        eprintln!("ebm-mpi-check: cannot write {out}: {e}");
        return ExitCode::from(2);
    }
    let whole = workloads(&Solo).expect("one process is rank 0");
    if whole == sharded {
        println!(
            "{} ranks: {} words, identical to the one-process run",
            world.size(),
            whole.len()
        );
        ExitCode::SUCCESS
    } else {
        let first = whole.iter().zip(&sharded).position(|(a, b)| a != b);
        eprintln!(
            "{} ranks differ from the one-process run (lengths {} and {}, first difference at \
             word {first:?})",
            world.size(),
            sharded.len(),
            whole.len()
        );
        ExitCode::from(1)
    }
}

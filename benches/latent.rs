//! One hidden-space Gibbs sweep (Algorithm 3 of "Alternating Gibbs sampling in restricted
//! Boltzmann machines: free-energy barriers, analytic models and moves in latent space")
//! against one alternating Gibbs sweep, at the MNIST shape 784 x 200 (Bernoulli units on both
//! sides, so the hidden conditionals are exact: two candidates per unit), f32, 256 chains (two
//! chunks, both threads busy). See `benches/README.md` for the measured ratio.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::samplers::LatentGibbs;

const NV: usize = 784;
const NH: usize = 200;
const CHAINS: usize = 256;

fn model() -> Rbm<Bernoulli<f32>, Bernoulli<f32>> {
    // The deterministic weight pattern of benches/gibbs.rs.
    let w = DMatrix::from_fn(NV, NH, |i, j| {
        (0.05 * ((((i * 7919 + j * 104_729) % 1000) as f64) / 500.0 - 1.0)) as f32
    });
    Rbm::new(Bernoulli::zeros(NV), Bernoulli::zeros(NH), w).unwrap()
}

fn bench_latent(c: &mut Criterion) {
    let rbm = model();
    let mut group = c.benchmark_group(format!("latent/bernoulli/{NV}x{NH}/chains={CHAINS}/f32"));
    group.throughput(Throughput::Elements(CHAINS as u64));
    group.sample_size(10);
    let mut state = ChainState::new(rbm.new_state(CHAINS), 1);
    run(&rbm, &Gibbs::new(2), 1.0, &mut state, 1, Par::Rayon, ()).unwrap();
    group.bench_function("ags sweep", |b| {
        b.iter(|| {
            Gibbs::new(1).step(
                &rbm,
                1.0,
                &mut state.chains,
                state.rngs.as_mut_slice(),
                Par::Rayon,
            )
        })
    });
    let alg3 = LatentGibbs::single();
    group.bench_function("algorithm 3 sweep", |b| {
        b.iter(|| {
            alg3.step(
                &rbm,
                1.0,
                &mut state.chains,
                state.rngs.as_mut_slice(),
                Par::Rayon,
            )
        })
    });
    let alg4 = LatentGibbs::pair();
    group.bench_function("algorithm 4 sweep", |b| {
        b.iter(|| {
            alg4.step(
                &rbm,
                1.0,
                &mut state.chains,
                state.rngs.as_mut_slice(),
                Par::Rayon,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench_latent);
criterion_main!(benches);

//! Cost of one Tethered Monte Carlo sweep (block Gibbs on h, then N_v sequential Metropolis
//! proposals on v under the tether) next to one alternating Gibbs sweep, at the papers' MNIST
//! shape (784 x 200), 256 chains, f32, one thread. The goal: TMC at most 3x Gibbs.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::samplers::tethered::{GaussianTether, OrderParameter, Tethered};

const NV: usize = 784;
const NH: usize = 200;
const CHAINS: usize = 256;

fn model() -> Rbm<Bernoulli<f32>, Bernoulli<f32>> {
    let w = DMatrix::from_fn(NV, NH, |i, j| {
        0.05 * ((((i * 7919 + j * 104_729) % 1000) as f32) / 500.0 - 1.0)
    });
    Rbm::new(Bernoulli::zeros(NV), Bernoulli::zeros(NH), w).unwrap()
}

fn bench(c: &mut Criterion) {
    let rbm = model();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut group = c.benchmark_group(format!("tethered/{NV}x{NH}/chains={CHAINS}/f32/threads=1"));
    group.throughput(Throughput::Elements(CHAINS as u64));
    group.sample_size(10);
    let mut state = ChainState::new(rbm.new_state(CHAINS), 1);
    group.bench_function("gibbs sweep", |b| {
        b.iter(|| {
            pool.install(|| {
                Gibbs::new(1).step(
                    &rbm,
                    1.0,
                    &mut state.chains,
                    state.rngs.as_mut_slice(),
                    Par::Rayon,
                )
            })
        })
    });
    let order = OrderParameter::uniform(NV).unwrap();
    let targets = (0..CHAINS).map(|c| c as f64 / CHAINS as f64).collect();
    let tmc = Tethered::new(order, GaussianTether::new(2e4).unwrap(), targets, 1).unwrap();
    group.bench_function("tmc sweep", |b| {
        b.iter(|| {
            pool.install(|| {
                tmc.step(
                    &rbm,
                    1.0,
                    &mut state.chains,
                    state.rngs.as_mut_slice(),
                    Par::Rayon,
                )
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

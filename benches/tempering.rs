//! One parallel-tempering round (Gibbs exploration of every rung, then DEO exchanges) for a
//! Bernoulli RBM of 784 x 200 units on a 10-rung temperature ladder with 1000 chains per rung,
//! f32, 2 threads.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::samplers::tempering::{ParallelTempering, PtState, SwapSchedule, TemperatureLadder};

fn bench(c: &mut Criterion) {
    let (nv, nh, chains, rungs) = (784, 200, 1000, 10);
    let w = DMatrix::from_fn(nv, nh, |i, j| {
        0.05 * ((((i * 7919 + j * 104_729) % 1000) as f32) / 500.0 - 1.0)
    });
    let rbm = Rbm::new(Bernoulli::<f32>::zeros(nv), Bernoulli::zeros(nh), w).unwrap();
    let ladder = TemperatureLadder::geometric(rbm.clone(), 0.3, rungs).unwrap();
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let mut state = PtState::new((0..rungs).map(|_| rbm.new_state(chains)).collect(), 1).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| pt.step(&ladder, &mut state, Par::Rayon));
    let mut group = c.benchmark_group(format!(
        "pt-round/bernoulli/{nv}x{nh}/rungs={rungs}/chains={chains}/f32"
    ));
    // Work in AGS steps: one sweep per chain and rung.
    group.throughput(Throughput::Elements((rungs * chains) as u64));
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("deo", "threads=2"), |b| {
        b.iter(|| pool.install(|| pt.step(&ladder, &mut state, Par::Rayon)))
    });
    group.finish();
}

criterion_group!(tempering, bench);
criterion_main!(tempering);

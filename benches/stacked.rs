//! One stacked-tempering iteration (one AGS step on every RBM, then the DEO exchanges with
//! their refresh) against the L AGS sweeps it contains, for the MNIST0/1 stack shape of paper
//! 002 (784 -> 200 -> 100 -> 25 -> 10 Bernoulli units, L = 4), 1000 chains, f32, 2 threads.
//! The goal is an iteration costing at most 1.3x the L sweeps.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ebm::models::Stack;
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::samplers::tempering::{StackLadder, StackedTempering};

fn rbm(nv: usize, nh: usize) -> Rbm<Bernoulli<f32>, Bernoulli<f32>> {
    let w = DMatrix::from_fn(nv, nh, |i, j| {
        0.05 * ((((i * 7919 + j * 104_729) % 1000) as f32) / 500.0 - 1.0)
    });
    Rbm::new(Bernoulli::zeros(nv), Bernoulli::zeros(nh), w).unwrap()
}

fn bench(c: &mut Criterion) {
    let sizes = [784, 200, 100, 25, 10];
    let chains = 1000;
    let rbms: Vec<_> = sizes.windows(2).map(|s| rbm(s[0], s[1])).collect();
    let stack = Stack::new(rbms[0].clone(), rbms[1..].to_vec()).unwrap();
    let depth = stack.len();
    let ladder = StackLadder::new(stack);
    let st = StackedTempering::default();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut state = pool
        .install(|| st.init(&ladder, &DMatrix::zeros(784, chains), 1, Par::Rayon))
        .unwrap();
    pool.install(|| st.step(&ladder, &mut state, Par::Rayon));
    let mut ags: Vec<_> = rbms
        .iter()
        .enumerate()
        .map(|(n, r)| ChainState::new(r.new_state(chains), n as u64))
        .collect();
    let mut group = c.benchmark_group(format!(
        "stacked/bernoulli/784-200-100-25-10/chains={chains}/f32"
    ));
    // Work in AGS steps: one sweep per chain and RBM.
    group.throughput(Throughput::Elements((depth * chains) as u64));
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("st-iteration", "threads=2"), |b| {
        b.iter(|| pool.install(|| st.step(&ladder, &mut state, Par::Rayon)))
    });
    group.bench_function(BenchmarkId::new("ags-sweeps", "threads=2"), |b| {
        b.iter(|| {
            pool.install(|| {
                for (r, s) in rbms.iter().zip(ags.iter_mut()) {
                    Gibbs::new(1).step(r, 1.0, &mut s.chains, s.rngs.as_mut_slice(), Par::Rayon);
                }
            })
        })
    });
    group.finish();
}

criterion_group!(stacked, bench);
criterion_main!(stacked);

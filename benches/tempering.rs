//! One parallel-tempering round (Gibbs exploration of every rung, then the exchanges) for a
//! Bernoulli RBM of 784 x 200 units, 10 rungs with 1000 chains per rung, f32, 1 and 2 threads:
//! a geometric temperature ladder under DEO, and a trajectory ladder (10 models, as the
//! checkpoints of PTT) under the sequential sweep of PTT. Each is measured against the 10
//! Gibbs sweeps it contains (the same models and temperatures, no exchange): the goal of
//! issue 22 is a round costing at most 1.25x its sweeps.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::samplers::tempering::{
    Exchange, ParallelTempering, PtState, SwapSchedule, TemperatureLadder, TrajectoryLadder,
};

type Model = Rbm<Bernoulli<f32>, Bernoulli<f32>>;

fn rbm(nv: usize, nh: usize, scale: f32) -> Model {
    let w = DMatrix::from_fn(nv, nh, |i, j| {
        scale * ((((i * 7919 + j * 104_729) % 1000) as f32) / 500.0 - 1.0)
    });
    Rbm::new(Bernoulli::zeros(nv), Bernoulli::zeros(nh), w).unwrap()
}

/// Benchmarks one PT round on `ladder` and the Gibbs sweeps of its rungs alone.
fn round_and_sweeps<L>(
    c: &mut Criterion,
    name: &str,
    ladder: &L,
    schedule: SwapSchedule,
    chains: usize,
    pools: &[(usize, rayon::ThreadPool)],
) where
    L: Exchange<RungModel = Model, State = RbmChains<f32>>,
{
    let rungs = ladder.n_exchange_rungs();
    let pt = ParallelTempering::new(Gibbs::new(1), schedule);
    let new = |k: usize| ladder.explored(k).model.new_state(chains);
    let mut state = PtState::new((0..rungs).map(new).collect(), 1).unwrap();
    pt.step(ladder, &mut state, Par::Rayon);
    let mut alone: Vec<_> = (0..rungs)
        .map(|k| ChainState::new(new(k), k as u64))
        .collect();
    let mut group = c.benchmark_group(format!(
        "pt-round/bernoulli/784x200/{name}/rungs={rungs}/chains={chains}/f32"
    ));
    // Work in AGS steps: one sweep per chain and rung.
    group.throughput(Throughput::Elements((rungs * chains) as u64));
    group.sample_size(10);
    for (threads, pool) in pools {
        let id = format!("threads={threads}");
        group.bench_function(BenchmarkId::new("round", &id), |b| {
            b.iter(|| pool.install(|| pt.step(ladder, &mut state, Par::Rayon)))
        });
        group.bench_function(BenchmarkId::new("sweeps", &id), |b| {
            b.iter(|| {
                pool.install(|| {
                    for (k, s) in alone.iter_mut().enumerate() {
                        let rung = ladder.explored(k);
                        Gibbs::new(1).step(
                            rung.model,
                            rung.beta,
                            &mut s.chains,
                            s.rngs.as_mut_slice(),
                            Par::Rayon,
                        );
                    }
                })
            })
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let (nv, nh, chains, rungs) = (784, 200, 1000, 10);
    // Both thread counts, for the scaling of a round and of its sweeps (issue 22: at least
    // 1.85x on 2 threads).
    let pools: Vec<_> = [1, 2]
        .map(|t| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build();
            (t, pool.unwrap())
        })
        .into();
    let temperatures = TemperatureLadder::geometric(rbm(nv, nh, 0.05), 0.3, rungs).unwrap();
    round_and_sweeps(
        c,
        "temperatures-deo",
        &temperatures,
        SwapSchedule::DeterministicEvenOdd,
        chains,
        &pools,
    );
    let trajectory =
        TrajectoryLadder::new((1..=rungs).map(|k| rbm(nv, nh, 0.005 * k as f32)).collect())
            .unwrap();
    round_and_sweeps(
        c,
        "trajectory-sweep",
        &trajectory,
        SwapSchedule::Sweep,
        chains,
        &pools,
    );
}

criterion_group!(tempering, bench);
criterion_main!(tempering);

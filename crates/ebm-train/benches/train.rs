//! Training throughput: gradient updates per second for a 784 x 200 Bernoulli RBM, minibatches
//! of 2000 samples, 2000 persistent chains, k = 10 Gibbs sweeps per update (PCD-10), f32, the
//! configuration of the `rbms` peer's side-by-side script (`benches/rbms_train_bench.py`).
//! Also: the parts of an update (the sweeps alone, the two moment computations), the bare
//! GEMM pair of one sweep (the unit of the updates' floors, stated below), and one update
//! with a 10-rung tempered negative phase; the updates and the sweeps also on one thread (the
//! thread scaling of a tempered update).

#![allow(missing_docs)] // criterion_group! generates an undocumented function

use criterion::{Criterion, criterion_group, criterion_main};
use ebm_core::{ChainState, Kernel, Par, RngStreams};
use ebm_models::{Bernoulli, Rbm};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::SwapSchedule;
use ebm_train::{Moments, Pcd, Tempered, Trainer, TrainingData, initial_model};
use nalgebra::DMatrix;
use rand::Rng;
use std::time::Duration;

const NV: usize = 784;
const NH: usize = 200;
const BATCH: usize = 2000;
const CHAINS: usize = 2000;
const K: usize = 10;

/// 4000 binary samples with digit-like structure: each sample is one of 10 random prototypes
/// with 10 % of its pixels flipped.
fn data() -> TrainingData<f32> {
    let mut rng = RngStreams::auxiliary(1, 0);
    let protos: Vec<Vec<bool>> = (0..10)
        .map(|_| (0..NV).map(|_| rng.random::<f32>() < 0.3).collect())
        .collect();
    let samples = DMatrix::from_fn(NV, 2 * BATCH, |i, j| {
        let flip = rng.random::<f32>() < 0.1;
        (protos[j % 10][i] != flip) as u8 as f32
    });
    TrainingData::new(&Bernoulli::zeros(NV), samples).unwrap()
}

fn model(data: &TrainingData<f32>) -> Rbm<Bernoulli<f32>, Bernoulli<f32>> {
    initial_model(
        Bernoulli::zeros(NV),
        Bernoulli::zeros(NH),
        Some(data),
        0.01,
        3,
    )
    .unwrap()
}

/// `f` on `pool` when given, on the global pool otherwise.
fn on<R: Send>(pool: Option<&rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

fn bench(c: &mut Criterion) {
    let data = data();
    let mut group = c.benchmark_group("train/bernoulli/784x200/batch=2000/chains=2000");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(3));
    group.measurement_time(Duration::from_secs(15));

    let trainer = Trainer::new(
        Pcd {
            sweeps: K,
            chains: CHAINS,
        },
        BATCH,
    );
    let mut state = trainer.init(model(&data), &data, 1, Par::Rayon).unwrap();
    group.bench_function("pcd-10 update", |b| {
        b.iter(|| trainer.step(&mut state, &data, None, Par::Rayon).unwrap())
    });
    // The same update on one thread: the thread scaling (at least 1.85x on 2).
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    group.bench_function("pcd-10 update, 1 thread", |b| {
        b.iter(|| one.install(|| trainer.step(&mut state, &data, None, Par::Rayon).unwrap()))
    });

    let rbm = state.model.clone();
    let mut chains = ChainState::new(rbm.default_chains(CHAINS), 5);
    for (name, pool) in [
        ("10 gibbs sweeps alone", None),
        ("10 gibbs sweeps alone, 1 thread", Some(&one)),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                on(pool, || {
                    let rngs = chains.rngs.as_mut_slice();
                    Gibbs::new(K).step(&rbm, 1.0, &mut chains.chains, rngs, Par::Rayon)
                })
            })
        });
    }
    // The unit of the floors, in the same run: the bare GEMM pair of one sweep of the 2000
    // chains (W^T V, then W H, by chunks of chains on the pool). A PCD-10 update must compute
    // 12 of them (10 sweeps, the data and the chains' moments); the tempered update below
    // 6.5 (one sweep of 10 x 1000 chains is 5, the data moments 1, those of the 1000 chains at
    // beta = 1 a half) plus the products W^T v of the exchanges' free energies (2.5 pairs for
    // the 10 rungs of an even DEO round, 2 for the 8 of an odd one).
    let mut hidden_inputs = DMatrix::zeros(NH, CHAINS);
    let mut visible_inputs = DMatrix::zeros(NV, CHAINS);
    for (name, pool) in [("gemm pair", None), ("gemm pair, 1 thread", Some(&one))] {
        group.bench_function(name, |b| {
            b.iter(|| {
                on(pool, || {
                    rbm.hidden_inputs(&chains.chains.visible, &mut hidden_inputs, Par::Rayon);
                    rbm.visible_inputs(&chains.chains.hidden, &mut visible_inputs, Par::Rayon);
                })
            })
        });
    }
    let v = data.samples().columns(0, BATCH).into_owned();
    group.bench_function("moments of one batch", |b| {
        b.iter(|| Moments::of_visible(&rbm, &v, None, Par::Rayon))
    });
    group.bench_function("model clone", |b| b.iter(|| rbm.clone()));

    let tempered = Trainer::new(
        Tempered {
            betas: (0..10).map(|k| 0.3f64.powf(1.0 - k as f64 / 9.0)).collect(),
            schedule: SwapSchedule::DeterministicEvenOdd,
            sweeps: 1,
            rounds: 1,
            chains: 1000,
        },
        BATCH,
    );
    let mut pt_state = tempered.init(model(&data), &data, 1, Par::Rayon).unwrap();
    group.bench_function("tempered update (10 rungs x 1000 chains, 1 round)", |b| {
        b.iter(|| {
            tempered
                .step(&mut pt_state, &data, None, Par::Rayon)
                .unwrap()
        })
    });
    group.bench_function(
        "tempered update (10 rungs x 1000 chains, 1 round), 1 thread",
        |b| {
            b.iter(|| {
                one.install(|| {
                    tempered
                        .step(&mut pt_state, &data, None, Par::Rayon)
                        .unwrap()
                })
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

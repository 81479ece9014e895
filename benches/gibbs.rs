//! Alternating Gibbs throughput at the papers' MNIST shape (784 x 200, 2000 chains), in f32 and
//! f64, on 1 and 2 threads, next to the two bare GEMMs a sweep needs. See `benches/README.md`
//! for the measured figures and the side-by-side peer comparison.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use ebm::core::linalg::{MatRef, matmul};
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use std::hint::black_box;

const NV: usize = 784;
const NH: usize = 200;
const CHAINS: usize = 2000;

fn model<F: Scalar>() -> Rbm<Bernoulli<F>, Bernoulli<F>> {
    // Zero biases (as the peer script).
    Rbm::new(Bernoulli::zeros(NV), Bernoulli::zeros(NH), weights(NV, NH)).unwrap()
}

/// Weights ~ 0.05 * U(-1, 1)-like deterministic pattern.
fn weights<F: Scalar>(rows: usize, cols: usize) -> DMatrix<F> {
    DMatrix::from_fn(rows, cols, |i, j| {
        F::from_f64(0.05 * ((((i * 7919 + j * 104_729) % 1000) as f64) / 500.0 - 1.0))
    })
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Times one Gibbs sweep of `model` over the chains of `state` on `pool`, as benchmark `id`.
fn time_sweep<M: ConditionalSampler>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    model: &M,
    state: &mut ChainState<M::State>,
    pool: &rayon::ThreadPool,
) {
    group.bench_function(id, |b| {
        b.iter(|| {
            pool.install(|| {
                Gibbs::new(1).step(
                    model,
                    1.0,
                    &mut state.chains,
                    state.rngs.as_mut_slice(),
                    Par::Rayon,
                )
            })
        })
    });
}

fn bench_sweeps<F: Scalar>(c: &mut Criterion) {
    let rbm = model::<F>();
    let mut group = c.benchmark_group(format!(
        "gibbs/bernoulli/{NV}x{NH}/chains={CHAINS}/{}",
        F::NAME
    ));
    group.throughput(Throughput::Elements(CHAINS as u64));
    group.sample_size(20);
    for threads in [1, 2] {
        let pool = pool(threads);
        let mut state = ChainState::new(rbm.new_state(CHAINS), 1);
        pool.install(|| run(&rbm, &Gibbs::new(2), 1.0, &mut state, 1, Par::Rayon, ()).unwrap());
        let id = BenchmarkId::new("sweep", format!("threads={threads}"));
        time_sweep(&mut group, id, &rbm, &mut state, &pool);
    }
    group.finish();
}

/// The two products of a sweep of an `nv x nh` RBM, W^T V (nh x B) and W H (nv x B), with the
/// same chunking and thread split as the sampler but nothing else: the floor a sweep can reach.
fn bench_bare_gemms<F: Scalar>(c: &mut Criterion, (nv, nh): (usize, usize), threads: &[usize]) {
    let weights = weights::<F>(nv, nh);
    let v = DMatrix::<F>::from_element(nv, CHAINS, F::one());
    let h = DMatrix::<F>::from_element(nh, CHAINS, F::one());
    let mut out_h = DMatrix::<F>::zeros(nh, CHAINS);
    let mut out_v = DMatrix::<F>::zeros(nv, CHAINS);
    let w = weights.as_slice();
    let mut group = c.benchmark_group(format!("gemm-pair/{nv}x{nh}/chains={CHAINS}/{}", F::NAME));
    group.throughput(Throughput::Elements(CHAINS as u64));
    group.sample_size(20);
    for &threads in threads {
        let pool = pool(threads);
        let mut ids = vec![(); CHAINS];
        group.bench_function(
            BenchmarkId::new("two-gemms", format!("threads={threads}")),
            |b| {
                b.iter(|| {
                    pool.install(|| {
                        ebm::core::for_each_chain_chunk(
                            Par::Rayon,
                            nh,
                            out_h.as_mut_slice(),
                            &mut ids,
                            |first, o, r| {
                                let vs = &v.as_slice()[first * nv..(first + r.len()) * nv];
                                matmul(
                                    MatRef::col_major(w, nv, nh).t(),
                                    MatRef::col_major(vs, nv, r.len()),
                                    o,
                                );
                            },
                        );
                        ebm::core::for_each_chain_chunk(
                            Par::Rayon,
                            nv,
                            out_v.as_mut_slice(),
                            &mut ids,
                            |first, o, r| {
                                let hs = &h.as_slice()[first * nh..(first + r.len()) * nh];
                                matmul(
                                    MatRef::col_major(w, nv, nh),
                                    MatRef::col_major(hs, nh, r.len()),
                                    o,
                                );
                            },
                        );
                    });
                    black_box((&out_h, &out_v));
                })
            },
        );
    }
    group.finish();
}

/// One sweep of `rbm` with 2000 chains on 2 threads, as its own benchmark group.
fn bench_model<V: Layer<Scalar = f32>, H: Layer<Scalar = f32>>(
    c: &mut Criterion,
    name: &str,
    rbm: &Rbm<V, H>,
) {
    let mut group = c.benchmark_group(format!("gibbs/{name}/chains={CHAINS}/f32"));
    group.throughput(Throughput::Elements(CHAINS as u64));
    group.sample_size(10);
    let pool = pool(2);
    let mut state = ChainState::new(rbm.new_state(CHAINS), 1);
    pool.install(|| run(rbm, &Gibbs::new(2), 1.0, &mut state, 1, Par::Rayon, ()).unwrap());
    let id = BenchmarkId::new("sweep", "threads=2");
    time_sweep(&mut group, id, rbm, &mut state, &pool);
    group.finish();
}

/// Bernoulli visible layer (784) with 200 Gaussian hidden units; a Potts visible layer of the
/// protein-sequence shape (100 sites, q = 21: 2100 one-hot values) with 200 Bernoulli units.
fn bench_other_units(c: &mut Criterion) {
    let gaussian = Rbm::new(
        Bernoulli::<f32>::zeros(NV),
        Gaussian::standard(NH),
        weights(NV, NH),
    )
    .unwrap();
    bench_model(c, &format!("bernoulli-gaussian/{NV}x{NH}"), &gaussian);
    let (sites, q) = (100, 21);
    let potts = Rbm::new(
        Potts::<f32>::zeros(sites, q),
        Bernoulli::zeros(NH),
        weights(sites * q, NH),
    )
    .unwrap();
    bench_model(c, &format!("potts-q{q}-{sites}x{NH}"), &potts);
    bench_bare_gemms::<f32>(c, (sites * q, NH), &[2]);
}

/// The cost of one f32 sweep on 2 threads across sizes, with throughput counted in
/// `chains x N_v x N_h` multiply-add units: flat throughput means cost linear in the size.
/// `benches/size_sweep.py` turns the results into a table and a plot of time per unit.
/// Two lines: chains 250 -> 8000 at N_h = 200, and N_h 50 -> 800 at 2000 chains (N_v = 784).
fn bench_sizes(c: &mut Criterion) {
    let pool = pool(2);
    let lines: [(&str, Vec<(usize, usize)>); 2] = [
        (
            "chains",
            [250, 500, 1000, 2000, 4000, 8000].map(|b| (b, NH)).to_vec(),
        ),
        (
            "hidden",
            [50, 100, 200, 400, 800].map(|h| (CHAINS, h)).to_vec(),
        ),
    ];
    for (line, sizes) in lines {
        let mut group = c.benchmark_group(format!("size-sweep/{line}"));
        group.sample_size(10);
        for (chains, nh) in sizes {
            let rbm = Rbm::new(
                Bernoulli::<f32>::zeros(NV),
                Bernoulli::zeros(nh),
                weights(NV, nh),
            )
            .unwrap();
            let mut state = ChainState::new(rbm.new_state(chains), 1);
            group.throughput(Throughput::Elements((chains * NV * nh) as u64));
            let id = BenchmarkId::from_parameter(if line == "chains" { chains } else { nh });
            time_sweep(&mut group, id, &rbm, &mut state, &pool);
        }
        group.finish();
    }
}

fn benches(c: &mut Criterion) {
    bench_sizes(c);
    bench_other_units(c);
    bench_sweeps::<f32>(c);
    bench_bare_gemms::<f32>(c, (NV, NH), &[1, 2]);
    bench_sweeps::<f64>(c);
    bench_bare_gemms::<f64>(c, (NV, NH), &[1, 2]);
}

criterion_group!(gibbs, benches);
criterion_main!(gibbs);

//! Speed of the CUDA backend on one GPU, as JSON lines: Gibbs sweeps of a 784 x 200 Bernoulli
//! RBM (f32 at 2000, 20 000 and 200 000 chains, f64 at 2000 and 20 000) beside the two cuBLAS
//! products of the same sweep, a DEO tempering round against its sweep, and, given the MNIST
//! images, paper 000's training recipe (784 x 200, PCD-100, batch and chains 2000, learning
//! rate 0.01, SI Table 3) end to end.
//!
//! ```text
//! cargo run --release -p ebm-cuda --example gpu_bench -- \
//!     [--mnist IMAGES LABELS] [--updates N] [--out DIR]
//! ```
//!
//! `scripts/gpu-check.sh` runs it beside the peer's numbers on the same GPU.

use ebm_cuda::{Gpu, GpuChains, GpuPcd, GpuPt, GpuRbm, GpuScalar, GpuSchedule, PcdSettings};
use ebm_models::{Bernoulli, Rbm};
use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

const NV: usize = 784;
const NH: usize = 200;

fn model<F: GpuScalar>(seed: u64) -> Rbm<Bernoulli<F>, Bernoulli<F>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let normal = Normal::new(0.0, 0.05).unwrap();
    let w = DMatrix::from_fn(NV, NH, |_, _| F::from_f64(normal.sample(&mut rng)));
    Rbm::new(Bernoulli::zeros(NV), Bernoulli::zeros(NH), w).unwrap()
}

fn random_bits<F: GpuScalar>(rows: usize, cols: usize, seed: u64) -> DMatrix<F> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    DMatrix::from_fn(rows, cols, |_, _| {
        F::from_f64(f64::from(u8::from(rng.random::<bool>())))
    })
}

/// Seconds per call of `f`, over `reps` calls after 3 warm-up calls.
fn time(gpu: &Gpu, reps: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    gpu.synchronize().unwrap();
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    gpu.synchronize().unwrap();
    t.elapsed().as_secs_f64() / reps as f64
}

fn sweeps<F: GpuScalar>(gpu: &Arc<Gpu>, precision: &str, n: usize, reps: usize) {
    let rbm = model::<F>(1);
    let m = GpuRbm::<F>::upload(gpu, &rbm).unwrap();
    let mut c = GpuChains::upload(&m, &random_bits::<F>(NV, n, 2), 3).unwrap();
    let sweep = time(gpu, reps, || m.sweep(&mut c).unwrap());
    let products = time(gpu, reps, || m.products_only(&mut c).unwrap());
    println!(
        "{}",
        json!({"bench": "gibbs_sweep", "precision": precision, "nv": NV, "nh": NH, "chains": n,
               "chain_sweeps_per_s": n as f64 / sweep, "gemm_pair_chain_sweeps_per_s": n as f64 / products,
               "sweep_over_gemm_pair": sweep / products})
    );
}

fn pt_round(gpu: &Arc<Gpu>) {
    let (rungs, n) = (10, 1000);
    let rbm = model::<f32>(1);
    let m = GpuRbm::<f32>::upload(gpu, &rbm).unwrap();
    let mut c = GpuChains::upload(&m, &random_bits::<f32>(NV, rungs * n, 2), 3).unwrap();
    let ladder: Vec<f64> = (0..rungs).map(|k| (k + 1) as f64 / rungs as f64).collect();
    let mut pt = GpuPt::new(&m, &ladder, GpuSchedule::DeterministicEvenOdd, &mut c).unwrap();
    let round = time(gpu, 400, || pt.round(&m, &mut c).unwrap());
    let sweep = time(gpu, 400, || m.sweep(&mut c).unwrap());
    println!(
        "{}",
        json!({"bench": "deo_pt_round", "precision": "f32", "rungs": rungs, "chains_per_rung": n,
               "round_s": round, "sweep_s": sweep, "round_over_sweep": round / sweep,
               "acceptance": pt.acceptance(&m).unwrap()})
    );
}

fn mnist(gpu: &Arc<Gpu>, images: &str, labels: &str, updates: u64, out: Option<&str>) {
    let opts = ebm_data::loaders::idx::MnistOptions {
        keep_labels: Some(vec![0, 1]),
        binarize_threshold: Some(127.0),
    };
    let ds = ebm_data::loaders::idx::load_mnist(images, Some(std::path::Path::new(labels)), &opts)
        .unwrap();
    let data: DMatrix<f32> = ds.data().map(|x| x as f32);
    assert_eq!(data.nrows(), NV);
    let t = Instant::now();
    // The reference code's start from scratch: W ~ N(0, 1e-4^2), visible fields at the logits
    // of the data means, hidden fields 0; the chains uniform.
    let means: Vec<f64> = ds.data().row_iter().map(|r| r.mean()).collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
    let normal = Normal::new(0.0, 1e-4).unwrap();
    let w = DMatrix::from_fn(NV, NH, |_, _| normal.sample(&mut rng) as f32);
    let v: Bernoulli<f32> = Bernoulli::new(
        Bernoulli::<f64>::from_means(&means)
            .fields
            .iter()
            .map(|&x| x as f32)
            .collect(),
    );
    let rbm = Rbm::new(v, Bernoulli::zeros(NH), w).unwrap();
    let chains = random_bits::<f32>(NV, 2000, 7);
    let mut pcd = GpuPcd::<f32>::new(gpu, &rbm, &data, &chains, PcdSettings::paper(0)).unwrap();
    pcd.train(updates).unwrap();
    let trained: Rbm<Bernoulli<f32>, Bernoulli<f32>> = pcd.download().unwrap();
    let seconds = t.elapsed().as_secs_f64();
    if let Some(dir) = out {
        let path = std::path::Path::new(dir).join("mnist01_784x200_gpu.safetensors");
        ebm_io::save_rbm(&trained, &path).unwrap();
    }
    println!(
        "{}",
        json!({"bench": "paper000_mnist01_training", "precision": "f32", "samples": data.ncols(),
               "nv": NV, "nh": NH, "k": 100, "batch": 2000, "chains": 2000, "learning_rate": 0.01,
               "updates": updates, "seconds": seconds,
               "chain_sweeps_per_s": (updates * 100 * 2000) as f64 / seconds})
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, k: usize| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + k].clone())
    };
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "{}",
        json!({"device": gpu.name(), "compute_capability": gpu.compute_capability()})
    );
    sweeps::<f32>(&gpu, "f32", 2000, 2000);
    sweeps::<f32>(&gpu, "f32", 20_000, 400);
    sweeps::<f32>(&gpu, "f32", 200_000, 60);
    sweeps::<f64>(&gpu, "f64", 2000, 1000);
    sweeps::<f64>(&gpu, "f64", 20_000, 100);
    pt_round(&gpu);
    if let (Some(images), Some(labels)) = (flag("--mnist", 1), flag("--mnist", 2)) {
        let updates = flag("--updates", 1).map_or(10_000, |u| u.parse().unwrap());
        mnist(&gpu, &images, &labels, updates, flag("--out", 1).as_deref());
    }
}

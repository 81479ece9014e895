//! `--device` of `ebm sample` and `ebm train`: what the GPU refuses is refused before any work,
//! on any machine; on a machine without a GPU `--device cuda` is an error that says why; on a
//! GPU (`scripts/gpu-check.sh` runs this file there with `EBM_REQUIRE_GPU=1`) the runs go
//! through and write what the CPU's write.

mod common;

use std::path::Path;

use common::{fails, json, ok};
use ebm_data::{Dataset, Domain};
use nalgebra::DMatrix;

fn save_npy(path: &Path, data: DMatrix<f64>) {
    let ds = Dataset::new(data, Domain::Real).unwrap();
    ebm_data::loaders::npy::save_npy(path, &ds).unwrap();
}

/// `d.npy`: 60 binary samples of 8 values in two noisy clusters, and `m.safetensors`, a model
/// trained on them for 3 updates on the CPU.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = DMatrix::from_fn(8, 60, |i, j| {
        let on = (i < 4) == j.is_multiple_of(2);
        let flip = (i * 31 + j * 17).is_multiple_of(9);
        f64::from(u8::from(on != flip))
    });
    save_npy(&d.join("d.npy"), data);
    ok(
        d,
        "train --data d.npy --hidden-units 3 --chains 20 --batch-size 20 --updates 3 --out m.safetensors",
    );
    dir
}

/// Whether this machine has a GPU the tests may use (`EBM_REQUIRE_GPU=1` demands one).
fn has_gpu() -> bool {
    match ebm_cuda::unavailable() {
        None => true,
        Some(reason) if std::env::var("EBM_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("EBM_REQUIRE_GPU=1 but no GPU: {reason}")
        }
        Some(_) => false,
    }
}

#[test]
fn what_the_gpu_does_not_run_is_refused_before_any_work() {
    let dir = setup();
    let d = dir.path();
    fails(
        d,
        "sample --model m.safetensors --device gpu --out s.npy",
        2,
        "expected cpu, cuda or cuda:N",
    );
    fails(
        d,
        "sample --model m.safetensors --device cuda --sampler pt --out s.npy",
        1,
        "--device cuda:0: the GPU runs --sampler gibbs only",
    );
    fails(
        d,
        "sample --model m.safetensors --device cuda --trace-every 2 --data d.npy --out s.npy",
        1,
        "--trace-every and --chain-out are not available on the GPU",
    );
    let train = "train --data d.npy --hidden-units 3 --updates 5 --out t.safetensors --device cuda";
    for (extra, what) in [
        ("--negative cd", "a negative phase other than pcd"),
        ("--hidden relu", "units other than bernoulli and spin"),
        (
            "--optimizer adam",
            "an optimiser other than sgd without momentum",
        ),
        (
            "--momentum 0.5",
            "an optimiser other than sgd without momentum",
        ),
        (
            "--lr-schedule linear --final-learning-rate 0.001",
            "a learning rate that changes",
        ),
        ("--l2 0.01", "a penalty"),
        ("--uncentred", "--uncentred"),
        ("--loglik-every 2", "--loglik-every and --test"),
        ("--pll-every 2", "--pll-every"),
        (
            "--save-every 2",
            "--save-every, --stop-after and --time-limit",
        ),
        ("--target-acceptance 0.3", "checkpoint selection"),
    ] {
        fails(d, &format!("{train} {extra}"), 1, what);
    }
    assert!(!d.join("t.safetensors").exists());
}

#[test]
fn cuda_runs_on_a_gpu_and_says_why_not_elsewhere() {
    let dir = setup();
    let d = dir.path();
    let sample = "sample --model m.safetensors --device cuda --chains 50 --steps 20 --out s.npy";
    let train = "train --data d.npy --hidden-units 3 --chains 20 --batch-size 20 --updates 8 \
                 --device cuda --out g.safetensors";
    if !has_gpu() {
        fails(d, sample, 1, "no CUDA device");
        fails(d, train, 1, "no CUDA device");
        assert!(!d.join("s.npy").exists() && !d.join("g.safetensors").exists());
        return;
    }
    ok(d, sample);
    let record = json(&d.join("s.json"));
    assert_eq!(record["settings"]["device"], "cuda:0", "{record}");
    ok(d, &format!("{sample} --precision f32 --beta 0.5"));
    ok(d, train);
    let record = json(&d.join("g.json"));
    assert_eq!(record["results"]["updates"], 8, "{record}");
    // PCD's default 10 sweeps per update, on the GPU the record names.
    assert_eq!(record["results"]["negative_sweeps"], 80, "{record}");
    let device = record["results"]["device"].as_str().unwrap();
    assert!(device.starts_with("cuda:0 ("), "{device}");
    // The state resumes on the CPU.
    ok(
        d,
        "train --resume g.state.json --updates 10 --out h.safetensors",
    );
    assert_eq!(json(&d.join("h.json"))["results"]["updates"], 10);
}

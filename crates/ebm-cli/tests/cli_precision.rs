//! `--precision f32` of `ebm train` and `ebm sample`: the model file's dtype and the run
//! records, exact resume of an f32 run, refusals (a resume in another precision, options that
//! run in f64 only), f32 training against f64 training of the same seed, and f32 sampling
//! against the exact law.

mod common;
use common::{bytes, fails, json, ok, ok_stderr};

use std::path::Path;

use ebm_core::Par;
use ebm_data::{Dataset, Domain};
use ebm_models::{Bernoulli, BinaryLayer, DiscreteLayer, Rbm, exact};
use nalgebra::DMatrix;

type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

fn save_npy(path: &Path, data: DMatrix<f64>) {
    let ds = Dataset::new(data, Domain::Binary01).unwrap();
    ebm_data::loaders::npy::save_npy(path, &ds).unwrap();
}

/// Two clusters of 8 binary features (the first four on, or the last four), with a few
/// flipped bits.
fn two_clusters(n: usize) -> DMatrix<f64> {
    DMatrix::from_fn(8, n, |i, j| {
        let on = (i < 4) == j.is_multiple_of(2);
        let flip = (i * 31 + j * 17).is_multiple_of(20);
        (on != flip) as u8 as f64
    })
}

/// A 6 x 3 Bernoulli RBM with couplings strong enough to make its law clearly non-uniform.
fn small_rbm() -> Model {
    let w = DMatrix::from_fn(6, 3, |i, j| {
        if i / 2 == j {
            1.6
        } else {
            -0.4 + 0.1 * i as f64
        }
    });
    Rbm::new(
        Bernoulli::new(vec![-0.5, 0.2, -0.3, 0.4, -0.8, 0.1]),
        Bernoulli::new(vec![-0.6, 0.3, -0.2]),
        w,
    )
    .unwrap()
}

/// Every parameter of a model (weights, then the layers' fields), loaded in f64 (an f32 file
/// is widened exactly).
fn parameters(m: &Model) -> Vec<f64> {
    let mut p: Vec<f64> = m.weights().iter().copied().collect();
    p.extend(m.visible().fields());
    p.extend(m.hidden().fields());
    p
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

const TRAIN: &str = "train --data d.npy --hidden-units 3 --chains 30 --batch-size 40 --seed 11";

#[test]
fn f32_training_writes_f32_files_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), two_clusters(120));
    ok(
        d,
        &format!("{TRAIN} --updates 6 --precision f32 --out s.safetensors"),
    );
    ok(d, &format!("{TRAIN} --updates 6 --out dflt.safetensors"));
    for (stem, dtype) in [("s", "f32"), ("dflt", "f64")] {
        let info = ebm_io::read_rbm_info(&d.join(format!("{stem}.safetensors"))).unwrap();
        assert_eq!(info.dtype, dtype, "{stem}: model file");
        let t = ebm_io::read_trajectory_info(&d.join(format!("{stem}.trajectory.safetensors")))
            .unwrap();
        assert_eq!(t.dtype, dtype, "{stem}: trajectory file");
        let rec = json(&d.join(format!("{stem}.json")));
        assert_eq!(rec["results"]["precision"], dtype, "{stem}: record");
        assert_eq!(rec["settings"]["config"]["precision"], dtype, "{stem}");
        let state = json(&d.join(format!("{stem}.state.json")));
        assert_eq!(state["config"]["precision"], dtype, "{stem}: state");
    }
    // The f32 file loads in f64 (widened exactly) as any model file.
    let m: Model = ebm_io::load_rbm(&d.join("s.safetensors")).unwrap();
    assert!(parameters(&m).iter().all(|x| (*x as f32) as f64 == *x));
}

#[test]
fn f32_training_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), two_clusters(120));
    for negative in [
        "--negative pcd --sweeps 3 --optimizer adam --learning-rate 0.02",
        "--negative pt --rungs 4 --schedule deo --momentum 0.9",
    ] {
        let common =
            format!("{TRAIN} --loglik-every 5 --loglik-chains 50 --precision f32 {negative}");
        ok(d, &format!("{common} --updates 30 --out full.safetensors"));
        ok(d, &format!("{common} --updates 12 --out half.safetensors"));
        // A resumed run keeps the state's precision, given or not.
        ok(
            d,
            "train --data d.npy --resume half.state.json --updates 20 --precision f32 \
             --out mid.safetensors",
        );
        ok(
            d,
            "train --data d.npy --resume mid.state.json --updates 30 --out rest.safetensors",
        );
        assert_eq!(
            ebm_io::read_rbm_info(&d.join("rest.safetensors"))
                .unwrap()
                .dtype,
            "f32"
        );
        assert!(
            bytes(&d.join("full.safetensors")) == bytes(&d.join("rest.safetensors")),
            "{negative}: resumed model differs"
        );
        assert!(
            bytes(&d.join("full.trajectory.safetensors"))
                == bytes(&d.join("rest.trajectory.safetensors")),
            "{negative}: resumed trajectory differs"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("full.log.csv")).unwrap(),
            std::fs::read_to_string(d.join("rest.log.csv")).unwrap(),
            "{negative}: logs differ"
        );
        let a = json(&d.join("full.state.json"));
        let b = json(&d.join("rest.state.json"));
        assert_eq!(a["state"], b["state"], "{negative}: states differ");
        assert_eq!(b["config"]["precision"], "f32");
        let r = json(&d.join("rest.json"))["results"].clone();
        assert_eq!(r["precision"], "f32");
        assert_eq!(
            (r["first_update"].as_u64(), r["updates"].as_u64()),
            (Some(20), Some(30))
        );
    }
    // The f64 run of the same settings differs (the comparison can fail).
    ok(
        d,
        &format!(
            "{TRAIN} --loglik-every 5 --loglik-chains 50 --negative pt --rungs 4 --schedule deo \
             --momentum 0.9 --updates 30 --out f64.safetensors"
        ),
    );
    let (a, b): (Model, Model) = (
        ebm_io::load_rbm(&d.join("full.safetensors")).unwrap(),
        ebm_io::load_rbm(&d.join("f64.safetensors")).unwrap(),
    );
    assert_ne!(parameters(&a), parameters(&b));
}

#[test]
fn precision_mismatches_and_f64_only_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), two_clusters(120));
    ok(
        d,
        &format!("{TRAIN} --updates 4 --precision f32 --out s.safetensors"),
    );
    ok(d, &format!("{TRAIN} --updates 4 --out w.safetensors"));
    // What (the option and the state's precision), where (the state file), what is expected.
    fails(
        d,
        "train --data d.npy --resume s.state.json --updates 8 --precision f64 \
         --out r.safetensors",
        1,
        "--precision f64: s.state.json is the state of a run in f32; resume it with \
         --precision f32",
    );
    fails(
        d,
        "train --data d.npy --resume w.state.json --updates 8 --precision f32 \
         --out r.safetensors",
        1,
        "w.state.json is the state of a run in f64; resume it with --precision f64",
    );
    assert!(!d.join("r.safetensors").exists());
    fails(
        d,
        &format!("{TRAIN} --updates 4 --precision f16 --out p.safetensors"),
        2,
        "f16",
    );
    // Kinds other than bernoulli and spin run in f64 only: the error names the pair.
    fails(
        d,
        &format!("{TRAIN} --updates 4 --precision f32 --hidden gaussian --out g.safetensors"),
        1,
        "--precision f32 runs bernoulli and spin units only, this model is bernoulli-gaussian",
    );
    assert!(!d.join("g.safetensors").exists());
    ebm_io::save_rbm(&small_rbm(), &d.join("m.safetensors")).unwrap();
    for sampler in ["tmc", "stacked"] {
        fails(
            d,
            &format!(
                "sample --model m.safetensors --sampler {sampler} --precision f32 --out x.npy"
            ),
            1,
            "--precision f32",
        );
    }
}

/// The same seed in f32 and f64: the initial models differ by the rounding of f64 to f32
/// only; after a few updates the models stay as close as two f64 runs whose chains differ (f32
/// chains draw their uniforms two per 64-bit output, f64 chains one, so the runs' chains are
/// different draws), and are not the same.
#[test]
fn f32_training_follows_f64_training_of_the_same_seed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), two_clusters(120));
    // The whole data set in every minibatch: the seed acts on the initial weights and the
    // chains only.
    let common = "train --data d.npy --hidden-units 3 --chains 2000 --batch-size 120 \
                  --learning-rate 0.05 --updates 5";
    ok(
        d,
        &format!("{common} --seed 3 --init-std 0.1 --out a64.safetensors"),
    );
    ok(
        d,
        &format!("{common} --seed 3 --init-std 0.1 --precision f32 --out a32.safetensors"),
    );
    ok(
        d,
        &format!("{common} --seed 3 --init-std 0 --out z64.safetensors"),
    );
    ok(
        d,
        &format!("{common} --seed 4 --init-std 0 --out y64.safetensors"),
    );
    ok(
        d,
        &format!("{common} --seed 3 --init-std 0 --precision f32 --out z32.safetensors"),
    );
    let load = |name: &str| -> Model { ebm_io::load_rbm(&d.join(name)).unwrap() };
    let first = |name: &str| -> Model {
        let t = ebm_io::load_trajectory::<Bernoulli<f64>, Bernoulli<f64>>(&d.join(name)).unwrap();
        assert_eq!(
            t.updates()[0],
            0,
            "{name}: the first checkpoint is the initial model"
        );
        t.models()[0].clone()
    };
    // Initial models: f32 is the f64 model rounded to nearest, parameter by parameter.
    let (i64, i32) = (
        parameters(&first("a64.trajectory.safetensors")),
        parameters(&first("a32.trajectory.safetensors")),
    );
    let rounded: Vec<f64> = i64.iter().map(|&x| (x as f32) as f64).collect();
    assert_eq!(i32, rounded, "initial f32 model is not the rounded f64 one");
    assert_ne!(i32, i64, "no parameter needed rounding: the check is empty");

    // After 5 updates: close, not identical (5 updates at rate 0.05 move a parameter by at
    // most 0.25, by about 0.01 between runs whose chains differ).
    let (a64, a32) = (
        parameters(&load("a64.safetensors")),
        parameters(&load("a32.safetensors")),
    );
    let apart = max_abs_diff(&a64, &a32);
    assert!(apart > 0.0, "f32 and f64 training gave identical models");
    assert!(apart < 0.05, "f32 and f64 models are {apart} apart");
    // From zero weights, within Monte Carlo noise of two f64 runs with other chains.
    let (z64, z32, y64) = (
        parameters(&load("z64.safetensors")),
        parameters(&load("z32.safetensors")),
        parameters(&load("y64.safetensors")),
    );
    let precision_gap = max_abs_diff(&z64, &z32);
    let noise = max_abs_diff(&z64, &y64);
    assert!(precision_gap > 0.0 && noise > 0.0);
    assert!(
        precision_gap < 3.0 * noise,
        "f32 vs f64: {precision_gap}, two f64 seeds: {noise}"
    );
}

/// Gibbs, PT and latent-move chains in f32 on an f64 model file (rounded to f32, which the record and
/// stderr say) follow the exact law; an f32 file is not rounded.
#[test]
fn f32_sampling_follows_the_exact_law() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = small_rbm();
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let counts = |file: &str| -> Vec<u64> {
        let s = ebm_data::loaders::npy::load_npy(d.join(file)).unwrap();
        assert_eq!(s.n_samples(), 4000);
        let mut c = vec![0u64; rbm.visible().n_configurations() as usize];
        for j in 0..s.n_samples() {
            c[rbm.visible().configuration_index(s.sample(j)) as usize] += 1;
        }
        c
    };
    for (sampler, stem) in [
        ("gibbs", "g"),
        ("pt --rungs 4 --beta-min 0.3", "pt"),
        ("latent --ags-sweeps 1", "lt"),
    ] {
        let run = format!(
            "sample --model m.safetensors --sampler {sampler} --chains 4000 --steps 30 \
             --seed 5 --precision f32"
        );
        let stderr = ok_stderr(d, &format!("{run} --out {stem}.npy"));
        assert!(
            stderr.contains("f64 parameters are rounded to f32"),
            "{sampler}: {stderr}"
        );
        let c = counts(&format!("{stem}.npy"));
        let t = ebm_testkit::chi_square(&c, &p);
        assert!(
            t.p_value > 1e-6,
            "{sampler}: f32 samples off the exact law: {t:?}"
        );
        // Negative control: the test rejects the law at another temperature.
        let q = exact::visible_probabilities(&rbm, 0.5, Par::Seq).unwrap();
        let wrong = ebm_testkit::chi_square(&c, &q);
        assert!(wrong.p_value < 1e-6, "{sampler}: no power: {wrong:?}");
        // The exact visible means, within 5 standard errors.
        let s = ebm_data::loaders::npy::load_npy(d.join(format!("{stem}.npy"))).unwrap();
        for i in 0..6 {
            let exact_mean: f64 = (0..p.len())
                .map(|k| {
                    let mut v = vec![0.0; 6];
                    rbm.visible().write_configuration(k as u128, &mut v);
                    p[k] * v[i]
                })
                .sum();
            let mean = (0..4000).map(|j| s.sample(j)[i]).sum::<f64>() / 4000.0;
            let se = (exact_mean * (1.0 - exact_mean) / 4000.0).sqrt();
            assert!(
                (mean - exact_mean).abs() < 5.0 * se,
                "{sampler}: mean of unit {i}: {mean} vs exact {exact_mean}"
            );
        }
        let rec = json(&d.join(format!("{stem}.json")));
        assert_eq!(rec["results"]["precision"], "f32");
        assert_eq!(rec["results"]["model_dtype"], "f64");
        assert!(
            rec["results"]["rounded"]
                .as_str()
                .is_some_and(|r| r.contains("rounded to f32")),
            "{}",
            rec["results"]
        );
        assert_eq!(rec["settings"]["precision"], "f32");
    }
    // f64 chains (the default) differ from f32 chains of the same seed, and say f64.
    ok(
        d,
        "sample --model m.safetensors --chains 4000 --steps 30 --seed 5 --out g64.npy",
    );
    assert_ne!(bytes(&d.join("g.npy")), bytes(&d.join("g64.npy")));
    let rec = json(&d.join("g64.json"));
    assert_eq!(rec["results"]["precision"], "f64");
    assert!(rec["results"].get("rounded").is_none());
    // An f32 model file sampled in f32: nothing rounded.
    let m32: Rbm<Bernoulli<f32>, Bernoulli<f32>> =
        ebm_io::load_rbm(&d.join("m.safetensors")).unwrap();
    ebm_io::save_rbm(&m32, &d.join("m32.safetensors")).unwrap();
    let stderr = ok_stderr(
        d,
        "sample --model m32.safetensors --chains 100 --steps 3 --precision f32 --out h.npy",
    );
    assert!(!stderr.contains("rounded"), "{stderr}");
    let rec = json(&d.join("h.json"));
    assert_eq!(rec["results"]["model_dtype"], "f32");
    assert!(rec["results"].get("rounded").is_none());
}

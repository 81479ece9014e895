//! `ebm sample --sampler latent` end to end, against the exact law of the Curie–Weiss model:
//! hidden-space moves (Algorithm 3 of "Alternating Gibbs sampling in restricted Boltzmann
//! machines: free-energy barriers, analytic models and moves in latent space") reach both
//! modes in a few steps, where alternating Gibbs sampling from the same start stays in one.

mod common;
use common::ebm_binary;

use std::path::Path;

use assert_cmd::Command;
use ebm_models::CurieWeiss;

fn ebm(dir: &Path, args: &str) -> assert_cmd::assert::Assert {
    Command::new(ebm_binary())
        .current_dir(dir)
        .args(args.split_whitespace())
        .assert()
}

/// Fraction of the chains (rows of a CSV of ±1 values) with positive magnetisation.
fn positive_fraction(path: &Path) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    let rows: Vec<f64> = text
        .lines()
        .map(|l| l.split(',').map(|x| x.trim().parse::<f64>().unwrap()).sum())
        .collect();
    rows.iter().filter(|&&m| m > 0.0).count() as f64 / rows.len() as f64
}

#[test]
fn latent_sampler_crosses_the_curie_weiss_barrier_that_gibbs_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // N = 15 (odd: no m = 0), w = 1.5: N Δf = 6.7, exact P(m > 0) = 1/2.
    let cw = CurieWeiss::new(15, 2.25, 0.0).unwrap();
    assert!((cw.positive_mode_weight(1.0) - 0.5).abs() < 1e-12);
    ebm_io::save_rbm(&cw.to_rbm().unwrap(), &d.join("cw.safetensors")).unwrap();
    // Chains start at the default configuration (all spins -1, the negative mode).
    ebm(
        d,
        "sample --model cw.safetensors --sampler latent --chains 400 --steps 10 --seed 3 \
         --out latent.csv --quiet",
    )
    .success();
    let latent = positive_fraction(&d.join("latent.csv"));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("latent.json")).unwrap()).unwrap();
    let text = record.to_string();
    assert!(
        text.contains("\"latent\"") && text.contains("Algorithm 3"),
        "{text}"
    );
    ebm(
        d,
        "sample --model cw.safetensors --sampler latent --latent-algorithm 4 --ags-sweeps 2 \
         --chains 400 --steps 10 --seed 3 --out alt.csv --quiet",
    )
    .success();
    let alternated = positive_fraction(&d.join("alt.csv"));
    ebm(
        d,
        "sample --model cw.safetensors --sampler gibbs --chains 400 --steps 10 --seed 3 \
         --out gibbs.csv --quiet",
    )
    .success();
    let gibbs = positive_fraction(&d.join("gibbs.csv"));
    println!("P(m > 0): latent {latent}, latent + AGS {alternated}, gibbs {gibbs}, exact 0.5");
    // Binomial standard error of 400 chains: 0.025; four of them.
    assert!((latent - 0.5).abs() < 0.1, "latent {latent}");
    assert!((alternated - 0.5).abs() < 0.1, "alternated {alternated}");
    // Negative control: AGS from the same start has not left the negative mode.
    assert!(gibbs < 0.05, "gibbs {gibbs}");
}

#[test]
fn latent_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cw = CurieWeiss::new(6, 1.0, 0.0).unwrap();
    ebm_io::save_rbm(&cw.to_rbm().unwrap(), &d.join("cw.safetensors")).unwrap();
    let out = ebm(
        d,
        "sample --model cw.safetensors --sampler gibbs --ags-sweeps 2 --out x.csv",
    )
    .failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("--ags-sweeps"), "{err}");
    let out = ebm(
        d,
        "sample --model cw.safetensors --sampler latent --rungs 4 --out x.csv",
    )
    .failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("--rungs"), "{err}");
    let help = ebm(d, "sample --help").success();
    let help = String::from_utf8(help.get_output().stdout.clone()).unwrap();
    assert!(
        help.contains("latent") && help.contains("--ags-sweeps"),
        "{help}"
    );
}

//! Tethered Monte Carlo on the command line ("Learning a Restricted Boltzmann Machine using
//! biased Monte Carlo sampling", Béreux et al. 2023): `ebm sample --sampler tmc`,
//! `ebm tmc profile` and `ebm train --negative tmc`, against the exact law of a 12 x 1 RBM
//! with two unequal modes (enumerated: 4096 visible configurations).

mod common;

use std::path::Path;

use common::{bytes, csv_columns, fails, json, ok, ok_stderr};
use ebm_core::Par;
use ebm_core::numerics::log_sum_exp;
use ebm_data::{Dataset, Domain};
use ebm_models::{Bernoulli, DiscreteLayer, Gaussian, Rbm, exact};
use ebm_samplers::tethered::profile::{reconstruct, uniform_grid};
use nalgebra::DMatrix;

const N: usize = 12;
const ALPHA: f64 = 1000.0;

/// A rank-1 RBM whose visible law depends only on \\(S = \sum_i v_i\\): the hidden unit
/// switches on above \\(S = 6\\) with coupling 5, so \\(p(S)\\) has modes at \\(S \le 1\\) and
/// \\(S = 12\\) separated by 6.6 nats (Gibbs started in one mode stays there). The field
/// `shift` above the symmetric value tilts the weights: with 0.15 the left mode (\\(S < 6\\))
/// has weight 0.179.
fn bimodal(shift: f64) -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
    let lambda = 5.0;
    Rbm::new(
        Bernoulli::new(vec![-0.5 * lambda + shift; N]),
        Bernoulli::new(vec![-lambda * N as f64 * 0.5]),
        DMatrix::from_element(N, 1, lambda),
    )
    .unwrap()
}

/// The exact law of \\(m(v) = S/N\\) (the direction of `--direction weights` is
/// \\(\mathbf 1/\sqrt N\\)): values and normalised log-probabilities of all configurations.
fn exact_law(rbm: &Rbm<Bernoulli<f64>, Bernoulli<f64>>) -> (Vec<f64>, Vec<f64>) {
    let f = exact::visible_free_energies(rbm, 1.0, Par::Seq).unwrap();
    let lw: Vec<f64> = f.iter().map(|x| -x).collect();
    let lz = log_sum_exp(&lw);
    let mut v = vec![0.0; N];
    let m = (0..f.len())
        .map(|a| {
            rbm.visible().write_configuration(a as u128, &mut v);
            v.iter().sum::<f64>() / N as f64
        })
        .collect();
    (m, lw.iter().map(|x| x - lz).collect())
}

/// \\(P(m(v) < x)\\) under the exact law.
fn exact_below(law: &(Vec<f64>, Vec<f64>), x: f64) -> f64 {
    law.0
        .iter()
        .zip(&law.1)
        .filter(|(m, _)| **m < x)
        .map(|(_, l)| l.exp())
        .sum()
}

/// Exact tethered average \\(\langle m\rangle_{\hat m}\\) at every grid point.
fn exact_tethered_mean(law: &(Vec<f64>, Vec<f64>), grid: &[f64]) -> Vec<f64> {
    grid.iter()
        .map(|&g| {
            let t: Vec<f64> = law
                .0
                .iter()
                .zip(&law.1)
                .map(|(m, l)| l - 0.5 * ALPHA * (m - g) * (m - g))
                .collect();
            let z = log_sum_exp(&t);
            law.0.iter().zip(&t).map(|(m, l)| m * (l - z).exp()).sum()
        })
        .collect()
}

/// The left weight that the TMC estimate converges to with infinite statistics on `grid`:
/// the reconstruction of the exact \\(\Omega'\\) by the same quadrature, split at `saddle`.
fn exact_profile_left(law: &(Vec<f64>, Vec<f64>), grid: &[f64], saddle: f64) -> f64 {
    let mean = exact_tethered_mean(law, grid);
    let g: Vec<f64> = grid.iter().zip(&mean).map(|(a, b)| a - b).collect();
    let rec = reconstruct(grid, &g, ALPHA).unwrap();
    let s = grid
        .iter()
        .position(|&x| x == saddle)
        .expect("saddle on the grid");
    rec.cdf()[s]
}

/// Fraction of the samples (rows of an .npy file) with \\(S/N\\) below `x`.
fn samples_below(path: &Path, x: f64) -> (f64, Vec<u64>) {
    let s = ebm_data::loaders::npy::load_npy(path).unwrap();
    let mut counts = vec![0u64; N + 1];
    let mut below = 0;
    for j in 0..s.n_samples() {
        let sum: f64 = s.sample(j).iter().sum();
        counts[sum as usize] += 1;
        if sum / (N as f64) < x {
            below += 1;
        }
    }
    (below as f64 / s.n_samples() as f64, counts)
}

/// Exact \\(p(S)\\).
fn exact_counts_law(law: &(Vec<f64>, Vec<f64>)) -> Vec<f64> {
    let mut p = vec![0.0; N + 1];
    for (m, l) in law.0.iter().zip(&law.1) {
        p[(m * N as f64).round() as usize] += l.exp();
    }
    p
}

#[test]
fn tmc_sampling_returns_the_exact_mode_weights_where_gibbs_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = bimodal(0.15);
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    let law = exact_law(&rbm);
    let run = format!(
        "sample --model m.safetensors --sampler tmc --alpha {ALPHA} --grid-points 100 \
         --chains 4000 --steps 30 --gibbs-sweeps 1"
    );
    let text = ok(d, &format!("{run} --seed 5 --threads 1 --out t1.npy"));
    assert!(text.contains("mode weights (left, right)"), "{text}");
    ok(d, &format!("{run} --seed 5 --threads 2 --out t2.npy"));
    assert_eq!(
        bytes(&d.join("t1.npy")),
        bytes(&d.join("t2.npy")),
        "threads changed samples"
    );
    assert_eq!(
        json(&d.join("t1.json"))["results"],
        json(&d.join("t2.json"))["results"],
        "threads changed the results"
    );

    let rec = json(&d.join("t1.json"));
    let tmc = &rec["results"]["tmc"];
    let mw = &tmc["mode_weights"];
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    let saddle = f(&mw["barrier"]["saddle"]);
    let (left, counts) = samples_below(&d.join("t1.npy"), saddle);
    // The record's fraction is the file's (the saddle is not at a value S/N, so the two ways of
    // computing m(v) cannot fall on different sides).
    assert!(
        (saddle * N as f64).fract().abs() > 1e-6,
        "saddle {saddle} on a value of m"
    );
    assert!(
        (left - f(&mw["samples_left"])).abs() < 1e-12,
        "record vs file"
    );

    // The samples: left weight and the whole law of S against enumeration.
    let exact = exact_below(&law, saddle);
    let se = f(&mw["samples_left_se"]);
    println!("TMC samples left weight {left:.4} +- {se:.4}, exact {exact:.4} (saddle {saddle})");
    assert!((exact - 0.179).abs() < 0.01 && (0.4..0.6).contains(&saddle));
    assert!((left - exact).abs() < 4.0 * se, "{left} vs {exact}");
    let t = ebm_testkit::chi_square(&counts, &exact_counts_law(&law));
    assert!(
        t.p_value > 1e-4,
        "TMC samples off the exact law of S: {t:?}"
    );

    // p(m_hat): its left weight against the exact Omega' reconstructed on the same grid.
    let [lo, hi] = [f(&tmc["grid_range"][0]), f(&tmc["grid_range"][1])];
    let grid = uniform_grid(lo, hi, 100).unwrap();
    let expected = exact_profile_left(&law, &grid, saddle);
    let (pl, pse) = (f(&mw["profile_left"]), f(&mw["profile_left_se"]));
    println!("TMC p(m_hat) left weight {pl:.4} +- {pse:.4}, exact {expected:.4}");
    assert!(pse < 0.03, "not decisive: se {pse}");
    assert!((pl - expected).abs() < 4.0 * pse, "{pl} vs {expected}");
    assert!(
        rec["results"]["warnings"].as_array().unwrap().is_empty(),
        "{rec}"
    );

    // Negative control: Gibbs from the default start (all units off, the left mode) keeps
    // every chain there, so the same comparison fails.
    ok(
        d,
        "sample --model m.safetensors --sampler gibbs --chains 4000 --steps 30 --seed 5 \
         --out g.npy",
    );
    let (gibbs_left, gibbs_counts) = samples_below(&d.join("g.npy"), saddle);
    println!("Gibbs left weight {gibbs_left:.4}");
    assert!((gibbs_left - exact).abs() > 20.0 * se, "{gibbs_left}");
    let t = ebm_testkit::chi_square(&gibbs_counts, &exact_counts_law(&law));
    assert!(t.p_value < 1e-6, "{t:?}");

    // The book's rows (*Tethered Monte Carlo*), as measured here.
    ebm_testkit::book_quotes(
        "concepts/tethered-mc.md",
        &format!(
            "| `sample --sampler tmc` (seed 5): the same from its own profile | {pl:.4} ± \
             {pse:.4} | {expected:.4} |\n\
             | `sample --sampler tmc`: 4000 samples, 30 TMC sweeps + 1 Gibbs sweep each | \
             {left:.4} ± {se:.4} | {exact:.4} |\n\
             | `sample --sampler gibbs`, 4000 chains x 30 sweeps from all units off | \
             {gibbs_left:.4} | {exact:.4} |\n"
        ),
    );
    ebm_testkit::page_quotes(
        "REPRODUCTIONS.md",
        &format!(
            "`ebm sample --sampler tmc` returns a left-mode weight of {left:.4} ± {se:.4} in its \
             4000 samples and {pl:.4} ± {pse:.4} in its p(m̂) (exact {exact:.4} and \
             {expected:.4})"
        ),
    );
}

#[test]
fn tmc_profile_matches_the_exact_tethered_distribution() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = bimodal(0.15);
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    let text = ok(
        d,
        &format!(
            "tmc profile --model m.safetensors --alpha {ALPHA} --grid-points 101 --seed 3 --out p.csv"
        ),
    );
    assert!(text.contains("barrier at m_hat"), "{text}");
    let cols = csv_columns(&d.join("p.csv"));
    let grid = &cols["m_hat"];
    let (mean, se) = (&cols["mean_m"], &cols["std_error"]);
    let barrier = csv_columns(&d.join("p.barrier.csv"));
    let (saddle, left, left_se) = (
        barrier["saddle"][0],
        barrier["left_weight"][0],
        barrier["left_weight_se"][0],
    );
    let svg = bytes(&d.join("p.svg"));
    assert!(svg.len() > 1000 && svg.starts_with(b"<svg"), "plot");
    assert_eq!(json(&d.join("p.json"))["command"], "tmc profile");

    // The comparison with a model's exact tethered quantities: the left weight's z-score
    // against the exact Omega' reconstructed on the same grid (the error bar is propagated from
    // the replicas' spread). The mean squared z-score of <m>_m_hat per grid point is printed
    // only: where the replicas barely move (the grid's ends, the steps between values of S) their
    // spread understates the error (measured: 81 instead of about 1.4), so per-point error bars
    // are not a calibrated test here.
    let scores = |model: &Rbm<Bernoulli<f64>, Bernoulli<f64>>| {
        let law = exact_law(model);
        let exact_mean = exact_tethered_mean(&law, grid);
        let z2 = mean
            .iter()
            .zip(&exact_mean)
            .zip(se)
            .map(|((a, b), s)| ((a - b) / s.max(1e-6)).powi(2))
            .sum::<f64>()
            / grid.len() as f64;
        let expected = exact_profile_left(&law, grid, saddle);
        (z2, (left - expected) / left_se, expected)
    };
    let (z2, zw, expected) = scores(&rbm);
    println!("profile: mean z^2 {z2:.2}, left weight {left:.4} +- {left_se:.4} vs {expected:.4}");
    assert!(left_se < 0.03 && zw.abs() < 4.0, "left weight z = {zw}");
    ebm_testkit::book_quotes(
        "concepts/tethered-mc.md",
        &format!(
            "| `tmc profile` (seed 3): mass of \\\\(p(\\hat m)\\\\) left of the saddle | \
             {left:.4} ± {left_se:.4} | {expected:.4} |\n"
        ),
    );

    // Negative control: the same statistic rejects the symmetric model's exact value (0.5).
    let (_, zw, other) = scores(&bimodal(0.0));
    println!("negative control: left weight z {zw:.1} against {other:.4}");
    assert!(zw.abs() > 10.0, "the comparison has no power");
}

/// `ebm train ARGS --updates TOTAL --out NAME.safetensors` equals the same run stopped after
/// `half` updates and resumed from its state, bit for bit.
fn resumes_exactly(d: &Path, args: &str, total: u64, half: u64, name: &str) {
    ok(
        d,
        &format!("train {args} --updates {total} --out {name}.safetensors"),
    );
    ok(
        d,
        &format!("train {args} --updates {half} --out {name}-half.safetensors"),
    );
    ok(
        d,
        &format!(
            "train --data d.npy --resume {name}-half.state.json --updates {total} \
             --out {name}-rest.safetensors"
        ),
    );
    assert!(
        bytes(&d.join(format!("{name}.safetensors")))
            == bytes(&d.join(format!("{name}-rest.safetensors"))),
        "{name}: resumed model differs"
    );
}

#[test]
fn tmc_training_runs_and_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two clusters of 8 units (the first four on, or the last four), 5% noise.
    let data = DMatrix::from_fn(8, 120, |i, j| {
        let on = (i < 4) == j.is_multiple_of(2);
        let flip = (i * 31 + j * 17).is_multiple_of(20);
        (on != flip) as u8 as f64
    });
    let ds = Dataset::new(data, Domain::Binary01).unwrap();
    ebm_data::loaders::npy::save_npy(d.join("d.npy"), &ds).unwrap();
    let common = "--data d.npy --hidden-units 3 --negative tmc --alpha 400 --grid-points 11 \
                  --replicas 4 --sweeps 6 --measure 3 --batch-size 40 --seed 2";
    resumes_exactly(d, common, 20, 8, "full");
    let rec = json(&d.join("full.json"));
    let text = rec.to_string();
    assert!(text.contains("\"tmc\""), "{text}");
    // The tether against the hidden units' curvature bound, checked at every update: alpha =
    // 400 is above it all along (no such entry in the record); alpha = 1e-4 is below it at
    // every update, and the record counts them and stderr says so.
    assert!(
        rec["results"].get("tether_below_curvature").is_none(),
        "{text}"
    );
    let weak = common.replace("--alpha 400", "--alpha 0.0001");
    let stderr = ok_stderr(
        d,
        &format!("train {weak} --updates 3 --out weak.safetensors"),
    );
    assert!(
        stderr.contains("at 3 of this run's updates (the first: update 1) the tether"),
        "{stderr}"
    );
    let below = &json(&d.join("weak.json"))["results"]["tether_below_curvature"];
    assert_eq!(below["updates"], 3, "{below}");
    assert_eq!(below["alpha"], 0.0001, "{below}");
    assert!(below["max_bound"].as_f64().unwrap() > 0.0001, "{below}");
    // The plain gradient differs from the centred one (the option reaches the trainer).
    ok(
        d,
        &format!("train {common} --updates 20 --uncentred --out plain.safetensors"),
    );
    assert!(bytes(&d.join("full.safetensors")) != bytes(&d.join("plain.safetensors")));
    // Two tethered order parameters (the data's two leading principal directions, a 5 x 5
    // grid): it trains, resumes bit for bit, and the state holds the 2D reconstruction.
    let two = "--data d.npy --hidden-units 3 --negative tmc --dimensions 2 --direction pca \
               --alpha 400 --grid-points 5 --replicas 2 --sweeps 6 --measure 3 --batch-size 40 \
               --seed 2";
    resumes_exactly(d, two, 10, 4, "two");
    assert!(bytes(&d.join("two.safetensors")) != bytes(&d.join("full.safetensors")));
    let state = std::fs::read_to_string(d.join("two.state.json")).unwrap();
    assert!(
        state.contains("grid_y"),
        "no 2D reconstruction in the state"
    );
}

#[test]
fn tmc_options_are_checked_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ebm_io::save_rbm(&bimodal(0.15), &d.join("m.safetensors")).unwrap();
    let gaussian: Rbm<Gaussian<f64>, Bernoulli<f64>> = Rbm::new(
        Gaussian::new(vec![1.0; 3], vec![0.0; 3]).unwrap(),
        Bernoulli::new(vec![0.0; 2]),
        DMatrix::from_element(3, 2, 0.1),
    )
    .unwrap();
    ebm_io::save_rbm(&gaussian, &d.join("g.safetensors")).unwrap();
    let data = DMatrix::from_fn(N, 20, |i, j| ((i + j) % 2) as f64);
    let ds = Dataset::new(data, Domain::Binary01).unwrap();
    ebm_data::loaders::npy::save_npy(d.join("d.npy"), &ds).unwrap();
    let s = "sample --model m.safetensors --out s.npy";
    for (args, needle) in [
        (
            format!("{s} --sampler tmc --beta 2"),
            "--beta does not apply to --sampler tmc",
        ),
        (
            format!("{s} --sampler gibbs --alpha 10"),
            "--alpha does not apply to --sampler gibbs",
        ),
        (format!("{s} --sampler tmc --alpha -1"), "--alpha -1"),
        (
            format!("{s} --sampler tmc --direction pca"),
            "--direction pca needs --data",
        ),
        (format!("{s} --sampler tmc --grid-range 1,0"), "LO < HI"),
        (
            format!("{s} --sampler tmc --grid-points 1"),
            "--grid-points 1",
        ),
        (
            format!("{s} --sampler tmc --trace-every 2 --data d.npy"),
            "--trace-every does not apply",
        ),
        (format!("{s} --sampler tmc --border 0.2"), "--border"),
        (
            "sample --model g.safetensors --sampler tmc --out s.npy".into(),
            "discrete visible units",
        ),
        (
            "tmc profile --model m.safetensors --out p.txt".into(),
            ".csv",
        ),
        (
            "tmc profile --model m.safetensors --out p.csv --gibbs-sweeps 2".into(),
            "--gibbs-sweeps does not apply to ebm tmc profile",
        ),
        (
            "tmc profile --model g.safetensors --out p.csv".into(),
            "discrete visible units",
        ),
        (
            "train --data d.npy --out t.safetensors --alpha 5".into(),
            "--alpha does not apply to --negative pcd",
        ),
        (
            "train --data d.npy --out t.safetensors --negative tmc --chains 10".into(),
            "--chains does not apply to --negative tmc",
        ),
        (
            "train --data d.npy --out t.safetensors --negative tmc --sweeps 4 --measure 5".into(),
            "--measure 5",
        ),
        (
            "train --data d.npy --out t.safetensors --negative tmc --grid-range 0,1".into(),
            "--grid-range does not apply to --negative tmc",
        ),
        (
            "train --data d.npy --out t.safetensors --negative tmc --dimensions 3".into(),
            "--dimensions 3",
        ),
        (
            "train --data d.npy --out t.safetensors --negative tmc --dimensions 2 \
             --direction uniform"
                .into(),
            "--direction uniform is one direction",
        ),
        (
            format!("{s} --sampler tmc --dimensions 2"),
            "--dimensions does not apply to ebm sample --sampler tmc",
        ),
        (
            "tmc profile --model m.safetensors --out p.csv --dimensions 2".into(),
            "--dimensions does not apply to ebm tmc profile",
        ),
    ] {
        fails(d, &args, 1, needle);
    }
}

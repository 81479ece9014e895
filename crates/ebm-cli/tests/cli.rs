//! Drives the `ebm` binary (the root package's `src/main.rs`, a thin wrapper of
//! `ebm_cli::run`) end to end: help texts, the data commands, sampling checked against exact
//! enumeration, exact log-likelihood, figures, and failure paths that must end with one error
//! line and a non-zero exit code.

mod common;
use common::{bytes, ebm, fails, json, ok, signed_safetensors};

use std::path::Path;

use ebm_core::Par;
use ebm_data::{Dataset, Domain};
use ebm_models::{Bernoulli, DiscreteLayer, Gaussian, Rbm, Spin, exact};
use nalgebra::DMatrix;
use serde_json::Value;

/// A 6 x 3 Bernoulli RBM with couplings strong enough to make its law clearly non-uniform.
fn small_rbm() -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
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

fn save_npy(path: &Path, data: DMatrix<f64>, domain: Domain) {
    let ds = Dataset::new(data, domain).unwrap();
    ebm_data::loaders::npy::save_npy(path, &ds).unwrap();
}

/// Counts of each visible configuration among the rows of an `.npy` sample file.
fn configuration_counts(path: &Path, rbm: &Rbm<Bernoulli<f64>, Bernoulli<f64>>) -> Vec<u64> {
    let s = ebm_data::loaders::npy::load_npy(path).unwrap();
    let mut counts = vec![0u64; rbm.visible().n_configurations() as usize];
    for j in 0..s.n_samples() {
        counts[rbm.visible().configuration_index(s.sample(j)) as usize] += 1;
    }
    counts
}

/// PNG or SVG, by the extension, and not nearly empty.
fn assert_image(path: &Path) {
    let b = bytes(path);
    assert!(b.len() > 1000, "{} is nearly empty", path.display());
    match path.extension().and_then(|e| e.to_str()) {
        Some("png") => assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{}", path.display()),
        Some("svg") => {
            let s = String::from_utf8(b).unwrap();
            assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        }
        _ => panic!("unexpected figure {}", path.display()),
    }
}

// ---------------------------------------------------------------------------------------------
// Help
// ---------------------------------------------------------------------------------------------

#[test]
fn help_is_available_for_every_command() {
    let cases: &[(&str, &[&str])] = &[
        (
            "--help",
            &[
                "Usage: ebm",
                "data",
                "sample",
                "loglik",
                "plot",
                "run record",
            ],
        ),
        ("data --help", &["generate", "info", "pca"]),
        (
            "data generate --help",
            &[
                "ising",
                "bars-stripes",
                "clusters",
                "digits",
                "curie-weiss",
                "hopfield",
            ],
        ),
        ("data generate clusters --help", &["mickey", "--features"]),
        ("data generate ising --help", &["--beta", "[default: 0.44]"]),
        ("data info --help", &["one-hot", ".npy"]),
        (
            "data pca --help",
            &["--components", "--project", "--uncentered"],
        ),
        (
            "sample --help",
            &[
                "gibbs",
                "pt-ref",
                "ptt",
                "--trajectory",
                "deo",
                "lifted",
                "random-pair",
                "--trace-every",
                "--init",
            ],
        ),
        (
            "loglik --help",
            &["exact", "ais", "reverse-ais", "tr-ais", "ptt"],
        ),
        ("loglik exact --help", &["log Z", "--data"]),
        (
            "loglik ais --help",
            &[
                "--rungs",
                "--path",
                "temperature",
                "--reference-data",
                "lower bound",
                "ESS",
            ],
        ),
        (
            "loglik reverse-ais --help",
            &["--start", "--burn-in", "--samples", "upper bound"],
        ),
        (
            "loglik tr-ais --help",
            &["--trajectory", "--model", "checkpoint"],
        ),
        (
            "loglik ptt --help",
            &[
                "--trajectory",
                "--burn-in",
                "--schedule",
                "BAR",
                "jackknife",
            ],
        ),
        (
            "plot --help",
            &["samples", "jumps", "swaps", "loglik", "logz"],
        ),
        ("plot samples --help", &["--samples", "--data", ".svg"]),
        ("plot jumps --help", &["--trace-every"]),
        ("plot swaps --help", &["round trips"]),
        ("plot loglik --help", &["CSV"]),
        ("plot logz --help", &["--exact", "--group"]),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (args, expected) in cases {
        let text = ok(dir.path(), args);
        for w in *expected {
            assert!(text.contains(w), "ebm {args}: {w:?} missing from\n{text}");
        }
    }
    assert!(ok(dir.path(), "--version").starts_with("ebm "));
    // No command: the usage is shown, and it is not a success.
    let none = ebm().output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8(none.stderr).unwrap().contains("Usage:"));
}

// ---------------------------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------------------------

/// The commit a run record names: the workspace's checked-out commit (the binary under test
/// was built from this tree), `-dirty` when the tracked sources differ from it, or none outside
/// a git checkout.
fn built_from() -> serde_json::Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(commit) = git(&["rev-parse", "HEAD"]) else {
        return serde_json::Value::Null;
    };
    let sources = ["crates", "src", "build.rs", "Cargo.toml", "Cargo.lock"];
    let dirty = git(&[
        &["status", "--porcelain", "--untracked-files=no", "--"],
        &sources[..],
    ]
    .concat())
    .is_some_and(|s| !s.is_empty());
    assert_eq!(commit.len(), 40, "{commit}");
    format!("{commit}{}", if dirty { "-dirty" } else { "" }).into()
}

#[test]
fn data_generate_info_pca_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let generate = "data generate clusters two-clusters-1d --features 64 --samples 400 \
                    --domain binary --seed";
    ok(d, &format!("{generate} 5 --out two.npy"));
    let rec = json(&d.join("two.json"));
    assert_eq!(rec["format"], "ebm-run-record");
    assert_eq!(rec["command"], "data generate");
    assert_eq!(rec["seed"], 5);
    assert_eq!(rec["versions"]["ebm"], env!("CARGO_PKG_VERSION"));
    assert_eq!(rec["versions"]["commit"], built_from());
    assert_eq!(rec["settings"]["clusters"]["features"], 64);
    assert_eq!(rec["results"]["n_samples"], 400);
    assert_eq!(rec["results"]["label_counts"].as_object().unwrap().len(), 2);

    // The file holds exactly what the library generates with that seed, converted to {0,1}.
    let mut cfg = ebm_data::generators::clusters::ClusterPreset::TwoClusters1d.config();
    cfg.n_features = 64;
    cfg.n_samples = 400;
    let expected = ebm_data::generate(&ebm_data::GeneratorSpec::Clusters(cfg), 5)
        .unwrap()
        .to_domain(Domain::Binary01)
        .unwrap();
    let written = ebm_data::loaders::npy::load_npy(d.join("two.npy")).unwrap();
    assert_eq!(written.data(), expected.data());
    // Same seed, same bytes; another seed, other data.
    ok(d, &format!("{generate} 5 --out again.npy"));
    ok(d, &format!("{generate} 6 --out other.npy"));
    assert_eq!(bytes(&d.join("two.npy")), bytes(&d.join("again.npy")));
    assert_ne!(bytes(&d.join("two.npy")), bytes(&d.join("other.npy")));

    // info, as JSON and as text.
    let info: Value = serde_json::from_str(ok(d, "data info two.npy --json").trim()).unwrap();
    assert_eq!(info["command"], "data info");
    assert_eq!(info["results"]["n_samples"], 400);
    assert_eq!(info["results"]["n_features"], 64);
    assert_eq!(info["results"]["domain"], "values in {0,1}");
    let text = ok(d, "data info two.npy");
    assert!(text.contains("400 samples x 64 features"), "{text}");

    // pca: the projections are the library's, and the first component carries the clusters.
    ok(d, "data pca two.npy -k 3 --out proj.npy");
    let proj = ebm_data::loaders::npy::load_npy(d.join("proj.npy")).unwrap();
    assert_eq!((proj.n_features(), proj.n_samples()), (3, 400));
    let pca = ebm_data::pca(&written, 3, ebm_data::Centering::Centered).unwrap();
    assert_eq!(proj.data(), &pca.project(written.data()).unwrap());
    let ratio = json(&d.join("proj.json"))["results"]["explained_variance_ratio"].clone();
    let r: Vec<f64> = serde_json::from_value(ratio).unwrap();
    assert!(r[0] > 5.0 * r[1], "{r:?}");
    // --project another file on the same components, as CSV.
    ok(
        d,
        "data pca two.npy --project other.npy --out other-proj.csv",
    );
    let csv = std::fs::read_to_string(d.join("other-proj.csv")).unwrap();
    assert_eq!(csv.lines().count(), 400);
    assert_eq!(csv.lines().next().unwrap().split(',').count(), 2);
}

#[test]
fn every_generator_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (i, g) in [
        "ising --size 4 --samples 20 --burn-in 10",
        "bars-stripes --size 3 --samples 50 --noise 0.05",
        "clusters mickey --features 32 --samples 30",
        "digits",
        "curie-weiss --spins 20 --samples 30",
        "hopfield --spins 10 --patterns 2 --samples 30",
    ]
    .iter()
    .enumerate()
    {
        let out = ok(d, &format!("data generate {g} --out g{i}.csv --quiet"));
        assert_eq!(out, "", "--quiet prints nothing");
        let ds = ebm_data::load(d.join(format!("g{i}.csv")), &Default::default()).unwrap();
        assert!(ds.n_samples() > 0, "{g}");
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling, checked against exact enumeration
// ---------------------------------------------------------------------------------------------

#[test]
fn gibbs_samples_follow_the_exact_law_and_do_not_depend_on_threads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = small_rbm();
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    let run = "sample --model m.safetensors --sampler gibbs --chains 4000 --steps 30";
    let text = ok(d, &format!("{run} --seed 11 --threads 1 --out g1.npy"));
    assert!(text.contains("Gibbs (beta 1)"), "{text}");
    ok(d, &format!("{run} --seed 11 --threads 2 --out g2.npy"));
    ok(d, &format!("{run} --seed 12 --out g3.npy"));
    assert_eq!(
        bytes(&d.join("g1.npy")),
        bytes(&d.join("g2.npy")),
        "threads changed samples"
    );
    assert_ne!(
        bytes(&d.join("g1.npy")),
        bytes(&d.join("g3.npy")),
        "seed changed nothing"
    );

    // 4000 independent chains after 30 sweeps against the exact marginal law of v.
    let counts = configuration_counts(&d.join("g1.npy"), &rbm);
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let t = ebm_testkit::chi_square(&counts, &p);
    assert!(t.p_value > 1e-6, "Gibbs samples off the exact law: {t:?}");
    // Negative control: the same test rejects the law at another temperature.
    let q = exact::visible_probabilities(&rbm, 0.5, Par::Seq).unwrap();
    let wrong = ebm_testkit::chi_square(&counts, &q);
    assert!(
        wrong.p_value < 1e-6,
        "the chi-square test has no power: {wrong:?}"
    );

    let rec = json(&d.join("g1.json"));
    assert_eq!(rec["command"], "sample");
    assert_eq!(rec["seed"], 11);
    assert_eq!(rec["threads"], 1);
    assert_eq!(rec["settings"]["chains"], 4000);
    assert_eq!(
        rec["results"]["samples_shape"],
        serde_json::json!([4000, 6])
    );
    assert_eq!(rec["results"]["gibbs_sweeps_per_step"], 1);
    assert_eq!(rec["results"]["model"]["visible"], "bernoulli");
    // The reported mean free energy is that of the written samples.
    let s = ebm_data::loaders::npy::load_npy(d.join("g1.npy")).unwrap();
    let mut f = vec![0.0; s.n_samples()];
    rbm.free_energy_visible(s.data(), 1.0, &mut f, Par::Seq);
    let mean = f.iter().sum::<f64>() / f.len() as f64;
    let reported = rec["results"]["mean_free_energy"].as_f64().unwrap();
    assert!((mean - reported).abs() < 1e-9, "{mean} vs {reported}");
}

/// A ladder ending at beta* = 0.6 samples the model at 0.6 (the exact law there, and not the
/// one at 1), and the record says so; pt-ref interpolates to the model and must end at 1.
#[test]
fn parallel_tempering_samples_the_last_beta_of_the_ladder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = small_rbm();
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    ok(
        d,
        "sample --model m.safetensors --sampler pt --betas 0.1,0.3,0.6 --chains 3000 \
         --steps 25 --seed 3 --out hot.npy",
    );
    let counts = configuration_counts(&d.join("hot.npy"), &rbm);
    let at = |beta: f64| {
        let p = exact::visible_probabilities(&rbm, beta, Par::Seq).unwrap();
        ebm_testkit::chi_square(&counts, &p).p_value
    };
    assert!(
        at(0.6) > 1e-6,
        "off the exact law at beta 0.6: p = {}",
        at(0.6)
    );
    assert!(
        at(1.0) < 1e-6,
        "indistinguishable from beta 1: p = {}",
        at(1.0)
    );
    let rec = json(&d.join("hot.json"));
    assert_eq!(rec["results"]["beta"], 0.6);
    let mut f = vec![0.0; 3000];
    let s = ebm_data::loaders::npy::load_npy(d.join("hot.npy")).unwrap();
    rbm.free_energy_visible(s.data(), 0.6, &mut f, Par::Seq);
    let mean = f.iter().sum::<f64>() / f.len() as f64;
    let reported = rec["results"]["mean_free_energy"].as_f64().unwrap();
    assert!((mean - reported).abs() < 1e-9, "{mean} vs {reported}");
    fails(
        d,
        "sample --model m.safetensors --sampler pt-ref --betas 0,0.5 --out r.npy",
        1,
        "beta = 1",
    );
}

#[test]
fn parallel_tempering_targets_the_exact_law_with_every_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = small_rbm();
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    for schedule in ["seo", "deo", "random-pair", "lifted"] {
        ok(
            d,
            &format!(
                "sample --model m.safetensors --sampler pt --schedule {schedule} --rungs 4 \
                 --beta-min 0.3 --chains 3000 --steps 25 --seed 3 --out pt-{schedule}.npy"
            ),
        );
        let counts = configuration_counts(&d.join(format!("pt-{schedule}.npy")), &rbm);
        let t = ebm_testkit::chi_square(&counts, &p);
        assert!(
            t.p_value > 1e-6,
            "{schedule}: PT samples off the exact law: {t:?}"
        );
        let rec = json(&d.join(format!("pt-{schedule}.json")));
        let pt = &rec["results"]["pt"];
        assert_eq!(pt["schedule"], schedule);
        let betas: Vec<f64> = serde_json::from_value(pt["betas"].clone()).unwrap();
        assert_eq!(betas.len(), 4);
        assert!(
            (betas[0] - 0.3).abs() < 1e-12 && betas[3] == 1.0,
            "{betas:?}"
        );
        let acc: Vec<f64> = serde_json::from_value(pt["acceptance_rates"].clone()).unwrap();
        assert_eq!(acc.len(), 3);
        assert!(
            acc.iter().all(|&a| a > 0.0 && a <= 1.0),
            "{schedule}: {acc:?}"
        );
        assert_eq!(rec["results"]["gibbs_sweeps_per_step"], 4);
    }
    // pt-ref with the reference fitted to data, an explicit ladder, chains started from data;
    // identical for one and two threads.
    let data = DMatrix::from_fn(6, 50, |i, j| ((i + j) % 3 == 0) as u8 as f64);
    save_npy(&d.join("d.npy"), data, Domain::Binary01);
    let run = "sample --model m.safetensors --sampler pt-ref --betas 0,0.25,0.5,0.75,1 \
               --data d.npy --init data --chains 3000 --steps 25 --seed 4";
    ok(d, &format!("{run} --threads 1 --out ref.npy"));
    ok(d, &format!("{run} --threads 2 --out ref2.npy"));
    assert_eq!(bytes(&d.join("ref.npy")), bytes(&d.join("ref2.npy")));
    let t = ebm_testkit::chi_square(&configuration_counts(&d.join("ref.npy"), &rbm), &p);
    assert!(t.p_value > 1e-6, "pt-ref samples off the exact law: {t:?}");
    let rec = json(&d.join("ref.json"));
    assert_eq!(
        rec["results"]["pt"]["reference"],
        "visible fields from the data means"
    );
}

/// A training-like trajectory from an independent-site model to `small_rbm`, saved with its
/// updates, sampled by PTT: the target chains follow the exact law of the last checkpoint.
#[test]
fn trajectory_tempering_targets_the_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = small_rbm();
    let start = Rbm::new(
        rbm.visible().clone(),
        rbm.hidden().clone(),
        DMatrix::zeros(6, 3),
    )
    .unwrap();
    let checkpoints = (0..5).map(|k| {
        (
            10 * k as u64,
            rbm.interpolate(&start, k as f64 / 4.0).unwrap(),
        )
    });
    let trajectory = ebm_io::Trajectory::from_checkpoints(checkpoints).unwrap();
    ebm_io::save_trajectory(&trajectory, &d.join("t.safetensors")).unwrap();
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    let run = "sample --sampler ptt --trajectory t.safetensors --chains 3000 --steps 25 --seed 8";
    ok(d, &format!("{run} --out ptt.npy"));
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let t = ebm_testkit::chi_square(&configuration_counts(&d.join("ptt.npy"), &rbm), &p);
    assert!(t.p_value > 1e-6, "PTT samples off the exact law: {t:?}");
    let rec = json(&d.join("ptt.json"));
    let pt = &rec["results"]["pt"];
    assert_eq!(
        pt["checkpoint_updates"],
        serde_json::json!([0, 10, 20, 30, 40])
    );
    assert_eq!(pt["acceptance_rates"].as_array().unwrap().len(), 4);
    assert_eq!(rec["results"]["sampler"], "ptt");
    assert_eq!(rec["inputs"][0], "t.safetensors");
    // Three evenly spaced checkpoints, always the first and the last.
    ok(
        d,
        &format!("{run} --rungs 3 --schedule lifted --out ptt3.npy"),
    );
    let rec = json(&d.join("ptt3.json"));
    assert_eq!(
        rec["results"]["pt"]["checkpoint_updates"],
        serde_json::json!([0, 20, 40])
    );
    assert_eq!(rec["results"]["gibbs_sweeps_per_step"], 3);
    // Inconsistent uses.
    fails(
        d,
        "sample --sampler ptt --model m.safetensors --out s.npy",
        1,
        "--trajectory",
    );
    fails(
        d,
        "sample --trajectory t.safetensors --out s.npy",
        1,
        "--trajectory",
    );
    fails(
        d,
        &format!("{run} --rungs 9 --out s.npy"),
        1,
        "only 5 checkpoints",
    );
    fails(d, &format!("{run} --betas 0.5,1 --out s.npy"), 1, "--betas");
    fails(
        d,
        "sample --sampler ptt --trajectory m.safetensors --out s.npy",
        1,
        "m.safetensors",
    );
    fails(
        d,
        "sample --model m.safetensors --trajectory t.safetensors --out s.npy",
        2,
        "--trajectory",
    );
    fails(d, "sample --out s.npy", 2, "--model");
    assert!(!d.join("s.npy").exists());
}

/// A bimodal Curie–Weiss model (spin visibles, one Gaussian hidden unit): Gibbs stays in the
/// mode it starts in, PT moves between the modes; the traced mode jumps must show it, and the
/// jump, swap and PCA figures are drawn from the runs' files.
#[test]
fn mode_jumps_separate_gibbs_from_tempering_and_figures_are_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // beta J = 1.5: modes at m = +-0.86, a barrier of about exp(11) Gibbs sweeps.
    let cw = ebm_models::CurieWeiss::new(100, 1.5, 0.0).unwrap();
    let rbm: Rbm<Spin<f64>, Gaussian<f64>> = cw.to_rbm().unwrap();
    ebm_io::save_rbm(&rbm, &d.join("cw.safetensors")).unwrap();
    ok(
        d,
        "data generate curie-weiss --spins 100 --coupling 1.5 --beta 1 --samples 400 \
         --out cw.npy",
    );
    let common = "--model cw.safetensors --data cw.npy --init data --chains 100 --steps 200 \
                  --trace-every 5 --seed 9";
    ok(
        d,
        &format!("sample --sampler gibbs {common} --out gibbs.npy"),
    );
    ok(
        d,
        &format!("sample --sampler pt --rungs 8 --beta-min 0.4 {common} --out pt.npy"),
    );
    let g = json(&d.join("gibbs.json"));
    let t = json(&d.join("pt.json"));
    let jumps = |r: &Value| r["results"]["mode_jumps"]["mean_jumps"].as_f64().unwrap();
    let curve: Vec<f64> =
        serde_json::from_value(t["results"]["mode_jumps"]["cumulative_mean_jumps"].clone())
            .unwrap();
    assert_eq!(curve.len(), 41, "records at steps 0, 5, ..., 200");
    assert!(
        curve.windows(2).all(|w| w[0] <= w[1]),
        "cumulative jumps decrease"
    );
    assert!(
        jumps(&t) > 5.0 && jumps(&g) < 0.5,
        "PT {} vs Gibbs {} mean jumps per chain",
        jumps(&t),
        jumps(&g)
    );
    // The cost counts the sweeps of every rung.
    let sweeps: Vec<u64> =
        serde_json::from_value(t["results"]["mode_jumps"]["gibbs_sweeps"].clone()).unwrap();
    assert_eq!(sweeps[1], 5 * 8);

    for ext in ["png", "svg"] {
        ok(
            d,
            &format!("plot jumps gibbs.json pt.json --labels Gibbs,PT --out jumps.{ext}"),
        );
        ok(d, &format!("plot swaps pt.json --out swaps.{ext}"));
        ok(
            d,
            &format!("plot samples --data cw.npy --samples pt.npy --out pca.{ext}"),
        );
        for f in ["jumps", "swaps", "pca"] {
            assert_image(&d.join(format!("{f}.{ext}")));
        }
    }
    let svg = std::fs::read_to_string(d.join("jumps.svg")).unwrap();
    assert!(svg.contains("Gibbs") && svg.contains("PT"));
    let rec = json(&d.join("swaps.svg.json"));
    assert_eq!(rec["command"], "plot");
    assert_eq!(rec["results"]["figure"], "swap acceptance");
}

#[test]
fn csv_figures_are_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("ll.csv"),
        "update,train_ll,test_ll\n0,-4.2,-4.3\n100,-3.1,-3.3\n200,-2.9,\n300,-2.8,-3.0\n",
    )
    .unwrap();
    std::fs::write(
        d.join("logz.csv"),
        "# estimator comparison\nestimator,gibbs_steps,log_z\nais,100,10.2\nais,1000,10.9\n\
         ais,10000,11.02\ntr-ais,100,10.8\ntr-ais,1000,11.01\n",
    )
    .unwrap();
    for ext in ["png", "svg"] {
        ok(d, &format!("plot loglik ll.csv --out ll.{ext}"));
        ok(
            d,
            &format!("plot logz logz.csv --exact 11.03 --out logz.{ext}"),
        );
        assert_image(&d.join(format!("ll.{ext}")));
        assert_image(&d.join(format!("logz.{ext}")));
    }
    // The columns of the estimator comparison example (examples/log_z.rs) are found by name.
    std::fs::write(
        d.join("example.csv"),
        "series,estimator,ladder,rungs,samples,gibbs_sweeps,log_z,std_err,exact_log_z,error,\
         abs_error,ess,relative_ess\n\
         AIS 10,ais,temperature,10,500,5000,9.8,0.1,10.0,-0.2,0.2,300,0.6\n\
         AIS 100,ais,temperature,100,500,50000,9.97,0.03,10.0,-0.03,0.03,400,0.8\n\
         Tr-AIS,tr-ais,trajectory,20,500,10000,9.99,0.02,10.0,-0.01,0.01,450,0.9\n",
    )
    .unwrap();
    ok(d, "plot logz example.csv --out example.svg");
    assert_image(&d.join("example.svg"));
    let rec = json(&d.join("example.svg.json"));
    assert_eq!(
        rec["results"]["columns"],
        serde_json::json!(["gibbs_sweeps", "log_z"])
    );
    assert_eq!(rec["results"]["exact"], 10.0);
    assert_eq!(
        rec["results"]["drawn"],
        serde_json::json!([["AIS 10", 1], ["AIS 100", 1], ["Tr-AIS", 1]])
    );
    let drawn = |f: &str| json(&d.join(f))["results"]["drawn"].clone();
    assert_eq!(
        drawn("logz.svg.json"),
        serde_json::json!([["ais", 3], ["tr-ais", 2]])
    );
    assert_eq!(
        drawn("ll.svg.json"),
        serde_json::json!([["train data", 4], ["test data", 3]])
    );
}

// ---------------------------------------------------------------------------------------------
// Exact log-likelihood
// ---------------------------------------------------------------------------------------------

#[test]
fn exact_loglik_matches_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = small_rbm();
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    let train = DMatrix::from_fn(6, 40, |i, j| ((i * 7 + j * 3) % 5 < 2) as u8 as f64);
    let test = DMatrix::from_fn(6, 25, |i, j| ((i + 2 * j) % 4 == 0) as u8 as f64);
    save_npy(&d.join("train.npy"), train.clone(), Domain::Binary01);
    let test_ds = Dataset::new(test.clone(), Domain::Binary01).unwrap();
    std::fs::write(
        d.join("test.csv"),
        ebm_data::loaders::text::to_csv(&test_ds),
    )
    .unwrap();
    let line = ok(
        d,
        "loglik exact --model m.safetensors --data train.npy --data test.csv --json \
         --out ll.json",
    );
    let rec: Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(
        rec,
        json(&d.join("ll.json")),
        "--json prints the record it writes"
    );
    let log_z = exact::log_partition_by_visible(&rbm, 1.0, Par::Seq).unwrap();
    let got = rec["results"]["log_z"].as_f64().unwrap();
    assert!((got - log_z).abs() < 1e-10, "{got} vs {log_z}");
    assert_eq!(rec["results"]["enumeration"]["layer"], "hidden");
    for (k, data) in [train, test].iter().enumerate() {
        let mut f = vec![0.0; data.ncols()];
        rbm.free_energy_visible(data, 1.0, &mut f, Par::Seq);
        let ll = -f.iter().sum::<f64>() / f.len() as f64 - log_z;
        let r = &rec["results"]["datasets"][k];
        let got = r["mean_log_likelihood"].as_f64().unwrap();
        assert!((got - ll).abs() < 1e-10, "dataset {k}: {got} vs {ll}");
        assert!(r["standard_error"].as_f64().unwrap() > 0.0);
    }

    // Real-valued hidden units: the visible layer is enumerated. The RBM form of the
    // Curie–Weiss model has log Z = log Z_CW + (1/2) log(2 pi) at beta = 1 (spec §3.1), with
    // log Z_CW = log sum_k C(N, k) exp(J M^2 / (2N) + h M), M = 2k - N.
    let (n, j, h) = (8usize, 1.2, 0.1);
    let cw = ebm_models::CurieWeiss::new(n, j, h).unwrap();
    ebm_io::save_rbm(&cw.to_rbm().unwrap(), &d.join("cw.safetensors")).unwrap();
    let spins = DMatrix::from_fn(n, 10, |i, s| if (i + s) % 3 == 0 { 1.0 } else { -1.0 });
    save_npy(&d.join("spins.npy"), spins, Domain::Spin);
    let line = ok(
        d,
        "loglik exact --model cw.safetensors --data spins.npy --json",
    );
    let rec: Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(rec["results"]["enumeration"]["layer"], "visible");
    let ln_fact = |m: usize| (1..=m).map(|i| (i as f64).ln()).sum::<f64>();
    let terms: Vec<f64> = (0..=n)
        .map(|k| {
            let m = 2.0 * k as f64 - n as f64;
            ln_fact(n) - ln_fact(k) - ln_fact(n - k) + j / (2.0 * n as f64) * m * m + h * m
        })
        .collect();
    let expected =
        ebm_core::numerics::log_sum_exp(&terms) + 0.5 * (2.0 * std::f64::consts::PI).ln();
    let got = rec["results"]["log_z"].as_f64().unwrap();
    assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
}

// ---------------------------------------------------------------------------------------------
// Log-likelihood estimators: ais, reverse-ais, tr-ais, ptt against exact log Z
// ---------------------------------------------------------------------------------------------

/// Runs `ebm <args> --json` in `dir` and returns the record it prints.
fn record(dir: &Path, args: &str) -> Value {
    let line = ok(dir, &format!("{args} --json"));
    serde_json::from_str(line.trim()).unwrap()
}

/// Checks an estimator's record against the exact log Z: the estimate lies within 4 of its
/// own standard errors of the truth, the standard error is positive and below `max_err`, the
/// fields are there, and the log-likelihood of the first data file (whose exact value is
/// `exact_ll`) moves with log Z, its error combining both parts in quadrature.
fn check_estimate(rec: &Value, exact_log_z: f64, exact_ll: f64, max_err: f64, what: &str) {
    let r = &rec["results"];
    let log_z = r["log_z"].as_f64().unwrap();
    let se = r["std_err"].as_f64().unwrap();
    assert!(
        se > 0.0 && se < max_err,
        "{what}: standard error {se} not in (0, {max_err})"
    );
    assert!(
        (log_z - exact_log_z).abs() <= 4.0 * se,
        "{what}: log Z = {log_z} +- {se}, exact {exact_log_z}"
    );
    assert_eq!(r["estimate"]["log_z"].as_f64().unwrap(), log_z, "{what}");
    assert!(r["gibbs_sweeps"].as_u64().unwrap() > 0, "{what}");
    assert!(r["start"]["log_z"].as_f64().unwrap().is_finite(), "{what}");
    let d = &r["datasets"][0];
    let ll = d["mean_log_likelihood"].as_f64().unwrap();
    assert!(
        (ll - (exact_ll - (log_z - exact_log_z))).abs() < 1e-9,
        "{what}: LL {ll} vs exact {exact_ll} shifted by the log Z error"
    );
    let (sd, sz) = (
        d["data_standard_error"].as_f64().unwrap(),
        d["log_z_standard_error"].as_f64().unwrap(),
    );
    assert!(sd > 0.0 && sz == se, "{what}: {d}");
    let total = d["standard_error"].as_f64().unwrap();
    assert!((total - sd.hypot(sz)).abs() < 1e-12, "{what}: {d}");
}

/// The small model, a data file and a trajectory from zero weights to the model (9
/// checkpoints along the straight line in parameter space), with the exact log Z and the exact
/// mean log-likelihood of the data.
struct EstimatorFixture {
    dir: tempfile::TempDir,
    log_z: f64,
    ll: f64,
}

fn estimator_fixture() -> EstimatorFixture {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = small_rbm();
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    let train = DMatrix::from_fn(6, 40, |i, j| ((i * 7 + j * 3) % 5 < 2) as u8 as f64);
    save_npy(&d.join("train.npy"), train.clone(), Domain::Binary01);
    let start = Rbm::new(
        rbm.visible().clone(),
        rbm.hidden().clone(),
        DMatrix::zeros(6, 3),
    )
    .unwrap();
    let checkpoints = (0..9).map(|k| {
        (
            5 * k as u64,
            rbm.interpolate(&start, k as f64 / 8.0).unwrap(),
        )
    });
    let trajectory = ebm_io::Trajectory::from_checkpoints(checkpoints).unwrap();
    ebm_io::save_trajectory(&trajectory, &d.join("t.safetensors")).unwrap();
    let log_z = exact::log_partition_by_visible(&rbm, 1.0, Par::Seq).unwrap();
    let mut f = vec![0.0; train.ncols()];
    rbm.free_energy_visible(&train, 1.0, &mut f, Par::Seq);
    let ll = -f.iter().sum::<f64>() / f.len() as f64 - log_z;
    EstimatorFixture { dir, log_z, ll }
}

#[test]
fn annealing_estimators_agree_with_exact_log_z() {
    let fx = estimator_fixture();
    let d = fx.dir.path();
    let (z, ll) = (fx.log_z, fx.ll);
    let m = "--model m.safetensors --data train.npy";

    // Forward AIS: reference path (the model's fields, or fitted to the data), temperature.
    let rec = record(
        d,
        &format!("loglik ais {m} --rungs 200 --chains 1000 --seed 1 --out ais.json"),
    );
    assert_eq!(rec, json(&d.join("ais.json")), "--json prints the record");
    assert_eq!(rec["command"], "loglik ais");
    check_estimate(&rec, z, ll, 0.05, "ais (reference)");
    let r = &rec["results"];
    assert_eq!(r["estimator"], "ais");
    assert_eq!(r["annealing"]["path"], "reference");
    assert_eq!(r["annealing"]["rungs"], 200);
    assert_eq!(r["estimate"]["method"]["Ais"]["n_rungs"], 200);
    assert_eq!(r["estimate"]["method"]["Ais"]["direction"], "Forward");
    assert_eq!(r["estimate"]["method"]["Ais"]["ladder"], "Reference");
    // One Gibbs sweep per chain and rung above the start.
    assert_eq!(r["gibbs_sweeps"], 199 * 1000);
    let ess = r["ess"].as_f64().unwrap();
    assert!(ess > 500.0 && ess <= 1000.0, "ESS {ess}");
    let rec = record(
        d,
        &format!("loglik ais {m} --rungs 200 --reference-data train.npy --sweeps 2 --seed 2"),
    );
    check_estimate(&rec, z, ll, 0.05, "ais (reference fitted to data)");
    assert_eq!(rec["results"]["gibbs_sweeps"], 199 * 1000 * 2);
    let rec = record(
        d,
        &format!("loglik ais {m} --path temperature --rungs 300 --seed 3"),
    );
    check_estimate(&rec, z, ll, 0.05, "ais (temperature)");
    let log_z0 = rec["results"]["start"]["log_z"].as_f64().unwrap();
    assert!(
        (log_z0 - 9.0 * 2f64.ln()).abs() < 1e-12,
        "uniform start: {log_z0}"
    );
    // A too-short path is still unbiased for Z, and its error bar says it is worse.
    let short = record(
        d,
        &format!("loglik ais {m} --path temperature --rungs 3 --seed 3"),
    );
    let (s_short, s_long) = (
        short["results"]["std_err"].as_f64().unwrap(),
        rec["results"]["std_err"].as_f64().unwrap(),
    );
    assert!(s_short > 3.0 * s_long, "{s_short} vs {s_long}");

    // Reverse AIS from exact draws, a Gibbs burn-in and a samples file.
    let rec = record(
        d,
        &format!("loglik reverse-ais {m} --start exact --rungs 200 --seed 4"),
    );
    check_estimate(&rec, z, ll, 0.05, "reverse ais (exact)");
    assert_eq!(rec["results"]["estimator"], "reverse-ais");
    assert_eq!(
        rec["results"]["estimate"]["method"]["Ais"]["direction"],
        "Reverse"
    );
    let rec = record(
        d,
        &format!(
            "loglik reverse-ais {m} --path temperature --start gibbs --burn-in 50 --rungs 300 \
             --seed 5"
        ),
    );
    check_estimate(&rec, z, ll, 0.05, "reverse ais (gibbs)");
    assert_eq!(rec["results"]["annealing"]["burn_in_sweeps"], 50);
    assert_eq!(rec["results"]["gibbs_sweeps"], 299 * 1000 + 50 * 1000);
    ok(
        d,
        "sample --model m.safetensors --chains 800 --steps 30 --seed 6 --out s.npy",
    );
    let rec = record(
        d,
        &format!("loglik reverse-ais {m} --start samples --samples s.npy --rungs 200 --seed 7"),
    );
    check_estimate(&rec, z, ll, 0.05, "reverse ais (samples)");
    assert_eq!(rec["results"]["chains"], 800);
    assert_eq!(rec["inputs"][2], "s.npy");

    // Real-valued hidden units (the Curie–Weiss RBM, exact log Z by visible enumeration): the
    // reference path works, the temperature path cannot start at beta = 0.
    let cw = ebm_models::CurieWeiss::new(8, 1.2, 0.1)
        .unwrap()
        .to_rbm()
        .unwrap();
    ebm_io::save_rbm(&cw, &d.join("cw.safetensors")).unwrap();
    let spins = DMatrix::from_fn(8, 10, |i, s| if (i + s) % 3 == 0 { 1.0 } else { -1.0 });
    save_npy(&d.join("spins.npy"), spins.clone(), Domain::Spin);
    let cw_z = exact::log_partition_by_visible(&cw, 1.0, Par::Seq).unwrap();
    let mut f = vec![0.0; 10];
    cw.free_energy_visible(&spins, 1.0, &mut f, Par::Seq);
    let cw_ll = -f.iter().sum::<f64>() / 10.0 - cw_z;
    let rec = record(
        d,
        "loglik ais --model cw.safetensors --data spins.npy --rungs 200 --seed 8",
    );
    check_estimate(&rec, cw_z, cw_ll, 0.05, "ais (curie-weiss)");
    let rec = record(
        d,
        "loglik reverse-ais --model cw.safetensors --data spins.npy --start exact --rungs 200 \
         --seed 9",
    );
    check_estimate(&rec, cw_z, cw_ll, 0.05, "reverse ais (curie-weiss)");
    fails(
        d,
        "loglik ais --model cw.safetensors --path temperature",
        1,
        "--path reference",
    );
}

#[test]
fn trajectory_estimators_agree_with_exact_log_z() {
    let fx = estimator_fixture();
    let d = fx.dir.path();
    let (z, ll) = (fx.log_z, fx.ll);
    let t = "--trajectory t.safetensors --data train.npy";

    let rec = record(
        d,
        &format!("loglik tr-ais {t} --chains 2000 --sweeps 2 --seed 1 --out tr.json"),
    );
    assert_eq!(rec, json(&d.join("tr.json")));
    check_estimate(&rec, z, ll, 0.05, "tr-ais");
    let r = &rec["results"];
    assert_eq!(r["estimator"], "tr-ais");
    assert_eq!(r["gibbs_sweeps"], 8 * 2000 * 2);
    assert_eq!(
        r["trajectory"]["updates"],
        serde_json::json!([0, 5, 10, 15, 20, 25, 30, 35, 40])
    );
    // Rung 0 has zero weights: its log Z is exact (9 independent bits with the model's fields).
    let rbm = small_rbm();
    let profile = r["trajectory"]["log_z"].as_array().unwrap();
    assert_eq!(profile.len(), 9);
    assert_eq!(profile[0]["std_err"], 0.0);
    // Every checkpoint's log Z against its exact value.
    let start = Rbm::new(
        rbm.visible().clone(),
        rbm.hidden().clone(),
        DMatrix::zeros(6, 3),
    )
    .unwrap();
    for (k, p) in profile.iter().enumerate() {
        let m = rbm.interpolate(&start, k as f64 / 8.0).unwrap();
        let exact = exact::log_partition_by_visible(&m, 1.0, Par::Seq).unwrap();
        let (e, s) = (p["log_z"].as_f64().unwrap(), p["std_err"].as_f64().unwrap());
        assert!(
            (e - exact).abs() <= 4.0 * s + 1e-9,
            "checkpoint {k}: {e} +- {s} vs {exact}"
        );
    }
    let along = r["datasets"][0]["along_trajectory"].as_array().unwrap();
    assert_eq!(along.len(), 9);
    assert_eq!(along[8]["update"], 40);
    assert_eq!(
        along[8]["mean_log_likelihood"],
        r["datasets"][0]["mean_log_likelihood"]
    );

    // Three checkpoints of the file, and a target model appended after them; a first
    // checkpoint with non-zero weights starts from exact enumeration.
    let half = small_rbm().interpolate(&start, 0.5).unwrap();
    let steps = (0..5).map(|k| (k as u64, half.interpolate(&start, k as f64 / 4.0).unwrap()));
    let tr = ebm_io::Trajectory::from_checkpoints(steps.skip(1)).unwrap();
    ebm_io::save_trajectory(&tr, &d.join("t2.safetensors")).unwrap();
    let rec = record(
        d,
        "loglik tr-ais --trajectory t2.safetensors --rungs 3 --model m.safetensors \
         --data train.npy --chains 2000 --seed 2",
    );
    check_estimate(&rec, z, ll, 0.08, "tr-ais (appended model)");
    assert_eq!(
        rec["results"]["trajectory"]["updates"],
        serde_json::json!([1, 3, 4, null])
    );
    assert!(
        rec["results"]["start"]["description"]
            .as_str()
            .unwrap()
            .contains("enumeration")
    );

    // PTT with BAR between neighbouring checkpoints.
    let rec = record(
        d,
        &format!("loglik ptt {t} --chains 64 --steps 400 --burn-in 50 --seed 3 --out ptt.json"),
    );
    check_estimate(&rec, z, ll, 0.05, "ptt (bar)");
    let r = &rec["results"];
    assert_eq!(r["estimator"], "ptt");
    assert_eq!(r["ptt"]["pairs"].as_array().unwrap().len(), 8);
    assert_eq!(r["ptt"]["acceptance_rates"].as_array().unwrap().len(), 8);
    assert!(
        r["estimate"]["error_bar"]["Jackknife"]["groups"]
            .as_u64()
            .unwrap()
            >= 2
    );
    // The cost counts every round, burn-in included.
    assert_eq!(r["gibbs_sweeps"], 400 * 9 * 64);
    // The one-sided exponential average is no longer reported (its jackknife bar did not hold).
    assert!(r["ptt"].get("exponential_average").is_none());
}

#[test]
fn estimators_reject_bad_input_with_one_line() {
    let fx = estimator_fixture();
    let d = fx.dir.path();
    let m = "--model m.safetensors";
    // Missing files.
    fails(
        d,
        "loglik ais --model none.safetensors",
        1,
        "none.safetensors",
    );
    fails(
        d,
        "loglik tr-ais --trajectory none.safetensors",
        1,
        "none.safetensors",
    );
    fails(d, &format!("loglik ais {m} --data none.npy"), 1, "none.npy");
    // A model file given as a trajectory, and a model whose shape is not the trajectory's.
    fails(
        d,
        "loglik ptt --trajectory m.safetensors",
        1,
        "m.safetensors",
    );
    let wide = Rbm::new(
        Bernoulli::<f64>::zeros(7),
        Bernoulli::<f64>::zeros(3),
        DMatrix::zeros(7, 3),
    )
    .unwrap();
    ebm_io::save_rbm(&wide, &d.join("wide.safetensors")).unwrap();
    fails(
        d,
        "loglik tr-ais --trajectory t.safetensors --model wide.safetensors",
        1,
        "trajectory's shape",
    );
    // Counts out of range, inconsistent options.
    fails(d, &format!("loglik ais {m} --chains 0"), 2, "at least 1");
    fails(
        d,
        &format!("loglik ais {m} --chains 1"),
        1,
        "at least 2 chains",
    );
    fails(
        d,
        "loglik ptt --trajectory t.safetensors --chains 1",
        1,
        "at least 2",
    );
    fails(
        d,
        &format!("loglik ais {m} --rungs 1"),
        1,
        "at least 2 distributions",
    );
    fails(d, &format!("loglik ais {m} --sweeps nan"), 2, "--sweeps");
    fails(
        d,
        &format!("loglik ais {m} --path temperature --reference-data train.npy"),
        1,
        "--reference-data",
    );
    fails(
        d,
        &format!("loglik reverse-ais {m} --start samples"),
        2,
        "--samples",
    );
    fails(
        d,
        &format!("loglik reverse-ais {m} --start exact --burn-in 10"),
        1,
        "--burn-in",
    );
    fails(
        d,
        &format!("loglik reverse-ais {m} --start samples --samples train.npy --chains 5"),
        1,
        "--chains",
    );
    fails(
        d,
        "loglik ptt --trajectory t.safetensors --steps 10 --burn-in 10",
        1,
        "--burn-in",
    );
    fails(
        d,
        "loglik tr-ais --trajectory t.safetensors --rungs 20",
        1,
        "only 9 checkpoints",
    );
    // Data outside the visible domain, non-finite data, a potts model fitted to data.
    save_npy(
        &d.join("spins.npy"),
        DMatrix::from_element(6, 3, -1.0),
        Domain::Spin,
    );
    fails(
        d,
        &format!("loglik ais {m} --data spins.npy"),
        1,
        "bernoulli",
    );
    fails(
        d,
        "loglik tr-ais --trajectory t.safetensors --data spins.npy",
        1,
        "{0,1}",
    );
    fails(
        d,
        &format!("loglik reverse-ais {m} --start samples --samples spins.npy"),
        1,
        "spins.npy",
    );
    std::fs::write(d.join("nan.csv"), "0,1,0,1,0,1\n1,NaN,0,0,0,0\n").unwrap();
    fails(d, &format!("loglik ais {m} --data nan.csv"), 1, "nan.csv");
    // A first checkpoint with non-zero weights and no discrete layer to enumerate.
    let g = |w: f64| {
        Rbm::new(
            Gaussian::<f64>::standard(2),
            Gaussian::<f64>::standard(1),
            DMatrix::from_element(2, 1, w),
        )
        .unwrap()
    };
    let tr = ebm_io::Trajectory::from_checkpoints([(0, g(0.1)), (1, g(0.2))]).unwrap();
    ebm_io::save_trajectory(&tr, &d.join("g.safetensors")).unwrap();
    fails(
        d,
        "loglik tr-ais --trajectory g.safetensors",
        1,
        "first checkpoint has non-zero weights",
    );
    // Outputs.
    fails(
        d,
        &format!("loglik ais {m} --out m.safetensors"),
        1,
        "overwrite",
    );
    fails(
        d,
        &format!("loglik ais {m} --out no/such/dir/r.json"),
        1,
        "does not exist",
    );
}

// ---------------------------------------------------------------------------------------------
// Failure paths: one error line, non-zero exit, never a panic, nothing left behind
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_input_gives_one_clear_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ebm_io::save_rbm(&small_rbm(), &d.join("m.safetensors")).unwrap();
    let sample = "sample --model m.safetensors --chains 10";

    // Missing files.
    fails(
        d,
        "sample --model none.safetensors --out s.npy",
        1,
        "none.safetensors",
    );
    fails(d, "data info missing.npy", 1, "missing.npy");
    // Malformed files: not safetensors, a word in a CSV, an npy cut short.
    std::fs::write(d.join("junk.safetensors"), b"not a model at all").unwrap();
    fails(
        d,
        "sample --model junk.safetensors --out s.npy",
        1,
        "junk.safetensors",
    );
    std::fs::write(d.join("bad.csv"), "0,1,0\n1,x,0\n").unwrap();
    fails(d, "data info bad.csv", 1, "line 2");
    let npy = ebm_data::loaders::npy::to_npy_bytes(&DMatrix::zeros(6, 4));
    std::fs::write(d.join("cut.npy"), &npy[..npy.len() - 5]).unwrap();
    fails(d, "data pca cut.npy --out p.npy", 1, "cut.npy");
    // A model file with a NaN weight.
    let mut model = bytes(&d.join("m.safetensors"));
    let n = u64::from_le_bytes(model[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&model[8..8 + n]).unwrap();
    let at = 8 + n + header["weights"]["data_offsets"][0].as_u64().unwrap() as usize;
    model[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    // With its checksum recomputed, so that the loader reaches the values; an edit that keeps
    // the old checksum is caught as corruption (tests/cli_robust.rs).
    let signed = signed_safetensors(&model, |_| {});
    std::fs::write(d.join("nan.safetensors"), &signed).unwrap();
    fails(
        d,
        "sample --model nan.safetensors --out s.npy",
        1,
        "non-finite",
    );
    // Non-finite option values and data.
    fails(
        d,
        &format!("{sample} --beta nan --out s.npy"),
        2,
        "not a finite number",
    );
    fails(
        d,
        &format!("{sample} --beta inf --out s.npy"),
        2,
        "not a finite number",
    );
    std::fs::write(d.join("nan.csv"), "0,1,0,1,0,1\n1,NaN,0,0,0,0\n").unwrap();
    fails(
        d,
        &format!("{sample} --init data --data nan.csv --out s.npy"),
        1,
        "nan.csv",
    );
    // Inconsistent or out-of-range options.
    fails(
        d,
        &format!("{sample} --schedule deo --out s.npy"),
        1,
        "--schedule",
    );
    fails(
        d,
        &format!("{sample} --sampler pt --beta 0.5 --out s.npy"),
        1,
        "--beta",
    );
    fails(
        d,
        &format!("{sample} --sampler pt --rungs 3 --betas 0.5,1 --out s.npy"),
        2,
        "--betas",
    );
    fails(
        d,
        &format!("{sample} --sampler pt --rungs 1 --out s.npy"),
        1,
        "2 to 10000 rungs",
    );
    fails(
        d,
        &format!("{sample} --sampler pt --betas 0.5,0.2,1 --out s.npy"),
        1,
        "increase",
    );
    fails(
        d,
        &format!("{sample} --sampler pt-ref --beta-min 0.2 --out s.npy"),
        1,
        "--beta-min",
    );
    fails(d, &format!("{sample} --beta -1 --out s.npy"), 1, "> 0");
    fails(
        d,
        &format!("{sample} --trace-every 5 --out s.npy"),
        1,
        "--data",
    );
    fails(
        d,
        &format!("{sample} --mode-threshold 0.1 --out s.npy"),
        1,
        "--trace-every",
    );
    fails(
        d,
        "sample --model m.safetensors --chains 0 --out s.npy",
        2,
        "at least 1",
    );
    fails(
        d,
        &format!("{sample} --samplr pt --out s.npy"),
        2,
        "--samplr",
    );
    // Data that do not fit the model's units: +-1 values for {0,1} units, a wrong width.
    save_npy(
        &d.join("spins.npy"),
        DMatrix::from_element(6, 3, -1.0),
        Domain::Spin,
    );
    fails(
        d,
        "loglik exact --model m.safetensors --data spins.npy",
        1,
        "bernoulli",
    );
    fails(
        d,
        &format!("{sample} --data spins.npy --init data --out s.npy"),
        1,
        "{0,1}",
    );
    save_npy(&d.join("wide.npy"), DMatrix::zeros(7, 3), Domain::Binary01);
    fails(
        d,
        "loglik exact --model m.safetensors --data wide.npy",
        1,
        "7 features",
    );
    // Exact log Z of a model without a discrete layer.
    let g = Rbm::new(
        Gaussian::<f64>::standard(2),
        Gaussian::<f64>::standard(1),
        DMatrix::zeros(2, 1),
    )
    .unwrap();
    ebm_io::save_rbm(&g, &d.join("gg.safetensors")).unwrap();
    save_npy(&d.join("reals.npy"), DMatrix::zeros(2, 3), Domain::Real);
    fails(
        d,
        "loglik exact --model gg.safetensors --data reals.npy",
        1,
        "real-valued",
    );
    // Real-valued units cannot be sampled at beta = 0.
    fails(
        d,
        "sample --model gg.safetensors --sampler pt --betas 0,1 --out s.npy",
        1,
        "beta > 0",
    );
    // Outputs: an unknown format, overwriting an input, a missing directory.
    fails(d, &format!("{sample} --out s.txt"), 1, ".npy or .csv");
    fails(
        d,
        &format!("{sample} --data spins.npy --init data --out spins.npy"),
        1,
        "overwrite",
    );
    fails(
        d,
        &format!("{sample} --out no/such/dir/s.npy"),
        1,
        "does not exist",
    );
    // Figures from the wrong inputs.
    ok(d, &format!("{sample} --steps 2 --out g.npy"));
    fails(d, "plot swaps g.json --out f.png", 1, "pt-ref");
    fails(d, "plot jumps g.json --out f.png", 1, "--trace-every");
    fails(d, "plot swaps g.json --out f.jpg", 1, ".png or .svg");
    // The figure's record is g.png.json: it no longer collides with the run's record g.json,
    // so the refusal is about the input alone.
    fails(d, "plot swaps g.json --out g.png", 1, "pt-ref");
    fails(
        d,
        "plot swaps g.npy --out f.png",
        1,
        "not an ebm run record",
    );
    fails(
        d,
        "plot jumps g.json pt.json --labels a --out f.png",
        1,
        "--labels",
    );
    std::fs::write(d.join("ll.csv"), "update,train\n0,-1\n1,inf\n").unwrap();
    fails(d, "plot loglik ll.csv --out f.svg", 1, "non-finite");
    fails(
        d,
        "plot loglik ll.csv --y test --out f.svg",
        1,
        "no column \"test\"",
    );
    // Nothing was left behind by the failed runs.
    for f in [
        "s.npy",
        "s.json",
        "s.txt",
        "spins.json",
        "f.png",
        "f.svg",
        "f.json",
        "p.npy",
    ] {
        assert!(!d.join(f).exists(), "{f} written by a failed run");
    }
}

// ---------------------------------------------------------------------------------------------
// train and demo
// ---------------------------------------------------------------------------------------------

/// Two clusters of 8 binary units (first half on or second half on), 5 % of the bits flipped
/// deterministically: `n` samples.
fn two_clusters(n: usize, shift: usize) -> DMatrix<f64> {
    DMatrix::from_fn(8, n, |i, j| {
        let on = (i < 4) == (j + shift).is_multiple_of(2);
        let flip = (i * 31 + (j + shift) * 17).is_multiple_of(20);
        (on != flip) as u8 as f64
    })
}

#[test]
fn train_writes_a_model_its_trajectory_state_and_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), two_clusters(200, 0), Domain::Binary01);
    save_npy(&d.join("t.npy"), two_clusters(60, 1), Domain::Binary01);
    let out = ok(
        d,
        "train --data d.npy --test t.npy --hidden-units 4 --updates 300 --loglik-every 50 \
         --loglik-chains 500 --chains 100 --sweeps 5 --batch-size 50 --learning-rate 0.05 \
         --seed 3 --out m.safetensors",
    );
    assert!(out.contains("m.state.json"), "{out}");
    for f in [
        "m.safetensors",
        "m.trajectory.safetensors",
        "m.state.json",
        "m.log.csv",
        "m.json",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let rec = json(&d.join("m.json"));
    assert_eq!(rec["command"], "train");
    let r = &rec["results"];
    assert_eq!(r["updates"], 300);
    assert_eq!(r["first_update"], 0);
    assert_eq!(
        r["model"]["visible"], "bernoulli",
        "default kind from {{0,1}} data"
    );
    assert_eq!(r["model"]["hidden_units"], 4);
    assert_eq!(r["negative_sweeps"], 300 * 5);
    // 4 hidden units: the default selection (auto) draws the models exactly, and says so.
    assert_eq!(r["selection_acceptance"], "exact");
    assert!(out.contains("1000 exact draws of each model"), "{out}");
    let kept: Vec<u64> = r["checkpoint_updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_u64().unwrap())
        .collect();
    assert!(
        kept.len() >= 2 && kept[0] == 0 && *kept.last().unwrap() == 300,
        "{kept:?}"
    );

    // The log: a header, one row per update, log-likelihoods every 50 updates.
    let log = std::fs::read_to_string(d.join("m.log.csv")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 301);
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let (u, tr, te) = (col("update"), col("train_ll"), col("test_ll"));
    for (k, l) in lines[1..].iter().enumerate() {
        let cells: Vec<&str> = l.split(',').collect();
        assert_eq!(cells[u], (k + 1).to_string());
        assert_eq!(!cells[tr].is_empty(), (k + 1).is_multiple_of(50), "row {l}");
        assert_eq!(!cells[te].is_empty(), (k + 1).is_multiple_of(50), "row {l}");
    }
    let last: Vec<&str> = lines[300].split(',').collect();
    let online_train: f64 = last[tr].parse().unwrap();
    let online_test: f64 = last[te].parse().unwrap();
    assert_eq!(r["train_ll"][1].as_f64().unwrap(), online_train);

    // The model is a model file: its exact log-likelihood agrees with the online estimate,
    // and training on two clusters beats the uniform model's log(1/2) per bit by a margin.
    let line = ok(
        d,
        "loglik exact --model m.safetensors --data d.npy --data t.npy --json",
    );
    let exact: Value = serde_json::from_str(line.trim()).unwrap();
    let exact_train = exact["results"]["datasets"][0]["mean_log_likelihood"]
        .as_f64()
        .unwrap();
    let exact_test = exact["results"]["datasets"][1]["mean_log_likelihood"]
        .as_f64()
        .unwrap();
    assert!(
        (online_train - exact_train).abs() < 0.1,
        "online {online_train} vs exact {exact_train}"
    );
    assert!((online_test - exact_test).abs() < 0.1);
    assert!(exact_train > 8.0 * 0.5f64.ln() + 0.5, "{exact_train}");

    // The trajectory feeds trajectory tempering, the log the log-likelihood figure.
    ok(
        d,
        "sample --trajectory m.trajectory.safetensors --sampler ptt --chains 20 --steps 20 \
         --out s.npy",
    );
    ok(d, "plot loglik m.log.csv --out ll.svg");
    assert_image(&d.join("ll.svg"));
    let drawn = json(&d.join("ll.svg.json"))["results"]["drawn"].clone();
    assert_eq!(
        drawn,
        serde_json::json!([["train data", 6], ["test data", 6]])
    );

    // Other unit kinds and negative phases train as well.
    let spins = two_clusters(100, 0).map(|x| 2.0 * x - 1.0);
    save_npy(&d.join("s.npy"), spins, Domain::Spin);
    for extra in [
        "--hidden spin --negative cd --sweeps 1",
        "--chains 40 --hidden relu --negative pt --rungs 3 --schedule lifted --optimizer adam \
         --learning-rate 0.01",
        "--hidden gaussian --negative jarzynski --chains 30 --lr-schedule exponential \
         --final-learning-rate 0.001",
        "--chains 40 --hidden potts --hidden-states 3 --momentum 0.5 --l2 0.001 --uncentred",
    ] {
        ok(
            d,
            &format!(
                "train --data s.npy --hidden-units 3 --updates 20 --batch-size 25 \
                 {extra} --out k.safetensors"
            ),
        );
        let r = json(&d.join("k.json"))["results"].clone();
        assert_eq!(r["model"]["visible"], "spin", "{extra}");
        assert_eq!(r["updates"], 20, "{extra}");
    }
}

#[test]
fn train_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), two_clusters(120, 0), Domain::Binary01);
    for negative in [
        "--negative pcd --sweeps 3 --optimizer adam --learning-rate 0.02",
        "--negative pt --rungs 4 --schedule deo --momentum 0.9",
    ] {
        let common = format!(
            "--data d.npy --hidden-units 3 --chains 30 --batch-size 40 --loglik-every 5 \
             --loglik-chains 50 --seed 11 {negative}"
        );
        ok(
            d,
            &format!("train {common} --updates 30 --out full.safetensors"),
        );
        ok(
            d,
            &format!("train {common} --updates 12 --out half.safetensors"),
        );
        ok(
            d,
            "train --data d.npy --resume half.state.json --updates 30 --out rest.safetensors",
        );
        // Byte for byte: model files are written with a canonical (sorted) header.
        assert!(
            bytes(&d.join("full.safetensors")) == bytes(&d.join("rest.safetensors")),
            "{negative}: resumed model differs"
        );
        assert!(
            bytes(&d.join("full.trajectory.safetensors"))
                == bytes(&d.join("rest.trajectory.safetensors")),
            "{negative}: resumed trajectory differs"
        );
        // The resumed log continues the first part's.
        assert_eq!(
            std::fs::read_to_string(d.join("full.log.csv")).unwrap(),
            std::fs::read_to_string(d.join("rest.log.csv")).unwrap(),
            "{negative}: logs differ"
        );
        let a = json(&d.join("full.state.json"));
        let b = json(&d.join("rest.state.json"));
        assert_eq!(a["state"], b["state"], "{negative}: states differ");
        let r = json(&d.join("rest.json"))["results"].clone();
        assert_eq!(
            (r["first_update"].as_u64(), r["updates"].as_u64()),
            (Some(12), Some(30))
        );
    }
    // A shorter run differs (the comparison can fail).
    ok(
        d,
        "train --data d.npy --hidden-units 3 --chains 30 --batch-size 40 --seed 11 \
         --updates 29 --out other.safetensors",
    );
    assert!(bytes(&d.join("full.safetensors")) != bytes(&d.join("other.safetensors")));
}

#[test]
fn train_rejects_bad_input_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), two_clusters(40, 0), Domain::Binary01);
    save_npy(&d.join("other.npy"), two_clusters(40, 1), Domain::Binary01);
    let base = "train --data d.npy --hidden-units 2 --updates 5 --chains 10 --batch-size 10";
    fails(
        d,
        "train --data nope.npy --out m.safetensors",
        1,
        "nope.npy",
    );
    fails(d, &format!("{base} --out m.npy"), 1, ".safetensors");
    fails(
        d,
        &format!("{base} --out missing/m.safetensors"),
        1,
        "does not exist",
    );
    fails(
        d,
        &format!("{base} --learning-rate nan --out m.safetensors"),
        2,
        "not a finite number",
    );
    fails(
        d,
        &format!("{base} --learning-rate -0.1 --out m.safetensors"),
        1,
        "--learning-rate",
    );
    fails(
        d,
        &format!("{base} --rungs 4 --out m.safetensors"),
        1,
        "--rungs does not apply to --negative pcd",
    );
    fails(
        d,
        "train --data d.npy --negative cd --chains 5 --out m.safetensors",
        1,
        "--chains",
    );
    fails(
        d,
        &format!("{base} --lr-schedule linear --out m.safetensors"),
        1,
        "--final-learning-rate",
    );
    fails(
        d,
        "train --data d.npy --batch-size 41 --out m.safetensors",
        1,
        "--batch-size 41",
    );
    fails(
        d,
        &format!("{base} --hidden potts --out m.safetensors"),
        1,
        "--hidden-states",
    );
    // Data outside the visible units' domain.
    fails(
        d,
        &format!("{base} --visible spin --out m.safetensors"),
        1,
        "d.npy",
    );
    save_npy(
        &d.join("real.npy"),
        DMatrix::from_fn(8, 20, |i, j| (i + j) as f64 * 0.3 - 2.0),
        Domain::Real,
    );
    fails(
        d,
        "train --data real.npy --visible relu --batch-size 10 --out m.safetensors",
        1,
        "negative",
    );
    std::fs::write(d.join("nan.csv"), "0,1,0,1,0,1,0,1\n1,NaN,0,0,0,0,1,1\n").unwrap();
    fails(
        d,
        "train --data nan.csv --batch-size 2 --out m.safetensors",
        1,
        "nan.csv",
    );
    // Resume: settings from the file, the same data, a later total, a real state file.
    ok(d, &format!("{base} --out m.safetensors"));
    fails(
        d,
        "train --data d.npy --resume m.state.json --hidden-units 3 --updates 9 \
         --out r.safetensors",
        1,
        "--hidden-units cannot be given with --resume",
    );
    fails(
        d,
        "train --data other.npy --resume m.state.json --updates 9 --out r.safetensors",
        1,
        "not the training data",
    );
    fails(
        d,
        "train --data d.npy --resume m.state.json --updates 5 --out r.safetensors",
        1,
        "already at update 5",
    );
    fails(
        d,
        "train --data d.npy --resume m.json --updates 9 --out r.safetensors",
        1,
        "not a training state file",
    );
    fails(
        d,
        "train --data d.npy --resume m.state.json --updates 9 --out m.safetensors",
        1,
        "would overwrite the input",
    );
    // Too large a step diverges: an error, not a panic or a NaN model.
    let out = ebm()
        .current_dir(d)
        .args(format!("{base} --learning-rate 1e300 --out big.safetensors").split_whitespace())
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        out.status.code() == Some(1) && stderr.lines().count() == 1 || out.status.success(),
        "{stderr}"
    );
    if out.status.success() {
        let rec = json(&d.join("big.json"));
        assert!(
            rec["results"]["last_gradient_norm"]
                .as_f64()
                .unwrap()
                .is_finite()
        );
    }
}

#[test]
fn demo_quick_writes_a_consistent_report() {
    let out = ebm().args(["demo", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("--quick") && help.contains("--seed") && help.contains("Ising"));
    let out = ebm().args(["train", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--resume",
        "--negative",
        "jarzynski",
        "--loglik-every",
        "state.json",
    ] {
        assert!(help.contains(needle), "train --help lacks {needle}");
    }

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stdout = ok(d, "demo --quick --seed 2 --out demo");
    assert!(stdout.contains("report.md"), "{stdout}");
    let demo = d.join("demo");
    let report = std::fs::read_to_string(demo.join("report.md")).unwrap();
    for f in [
        "samples-gibbs.png",
        "samples-ptt.png",
        "mode-jumps.png",
        "loglik.png",
        "swaps.png",
        "images.png",
    ] {
        assert_image(&demo.join(f));
        assert!(
            report.contains(&format!("]({f})")),
            "report does not show {f}"
        );
    }
    let rec = json(&demo.join("demo.json"));
    let r = &rec["results"];
    // The report's numbers are the records' numbers.
    let data_plus = r["data_mode_plus"].as_f64().unwrap();
    assert!((0.2..=0.8).contains(&data_plus), "{data_plus}");
    assert!(report.contains(&format!("| data (reference only) | | | {data_plus:.3} |")));
    // The ground truth is the model's own exact weight, with a binomial error bar.
    let exact = r["exact_mode_plus"].as_f64().unwrap();
    let exact_se = r["exact_mode_plus_se"].as_f64().unwrap();
    let draws = r["plan"]["exact_draws"].as_f64().unwrap();
    assert!((exact_se - (exact * (1.0 - exact) / draws).sqrt()).abs() < 1e-12);
    assert!(report.contains(&format!(
        "| **model, exact** | | | **{exact:.3} ± {exact_se:.3}** |"
    )));
    // Gibbs, PT, PTref and PTT at equal sweeps, then Gibbs, PT and PTref at PTT's wall-clock:
    // every row is its sample record's numbers.
    let samplers = r["samplers"].as_array().unwrap();
    let rows: Vec<(&str, &str, String)> = [
        ("Gibbs", "sweeps", "gibbs"),
        ("PT", "sweeps", "pt"),
        ("PTref", "sweeps", "pt-ref"),
        ("PTT", "sweeps", "ptt"),
        ("Gibbs", "seconds", "gibbs-time"),
        ("PT", "seconds", "pt-time"),
        ("PTref", "seconds", "pt-ref-time"),
    ]
    .into_iter()
    .map(|(l, b, stem)| (l, b, format!("{stem}.json")))
    .collect();
    assert_eq!(samplers.len(), rows.len(), "{samplers:?}");
    let budget = r["budget_sweeps"].as_u64().unwrap();
    for (s, (name, cost, record)) in samplers.iter().zip(&rows) {
        assert_eq!(
            (s["label"].as_str(), s["budget"].as_str()),
            (Some(*name), Some(*cost))
        );
        let sample = json(&demo.join(record))["results"].clone();
        let jumps = sample["mode_jumps"].clone();
        assert_eq!(s["mean_jumps"], jumps["mean_jumps"]);
        // The weights are the sampler's own after-burn-in averages, and z is computed from them.
        let plus = s["mode_plus"].as_f64().unwrap();
        let se = s["mode_plus_se"].as_f64().unwrap();
        assert_eq!(plus, jumps["weights"][1].as_f64().unwrap());
        assert_eq!(se, jumps["weights_se"][1].as_f64().unwrap());
        let z = s["z_vs_exact"].as_f64().unwrap();
        if se > 0.0 {
            let expected = (plus - exact) / (se * se + exact_se * exact_se).sqrt();
            assert!((z - expected).abs() < 1e-9, "{name}: z {z} vs {expected}");
        }
        assert_eq!(s["warnings"], sample["warnings"]);
        let sweeps =
            sample["steps"].as_u64().unwrap() * sample["gibbs_sweeps_per_step"].as_u64().unwrap();
        assert_eq!(s["gibbs_sweeps"].as_u64().unwrap(), sweeps);
        // Equal budgets in Gibbs sweeps per chain (each run ends on a trace record, so a
        // run may stop a few steps short of the budget, never beyond it).
        if *cost == "sweeps" {
            let per_step = sample["gibbs_sweeps_per_step"].as_u64().unwrap();
            assert!(
                sweeps <= budget && budget - sweeps <= budget / 200 + per_step,
                "{record}: {sweeps} of {budget}"
            );
        }
        let label = if *cost == "sweeps" {
            "equal sweeps"
        } else {
            "equal time"
        };
        let row = format!("| {name} | {label} | {sweeps} | {plus:.3} ± {se:.3} | {z:+.1} σ");
        assert!(report.contains(&row), "report lacks {row:?}:\n{report}");
    }
    let find = |label: &str| {
        samplers
            .iter()
            .find(|s| s["label"] == label && s["budget"] == "sweeps")
            .unwrap()
    };
    // The training is paper 000's recipe: RCM pretraining, then the bridged negative phase;
    // PTT over its checkpoints agrees with the exact weight.
    assert!(
        r["commands"].as_array().unwrap().iter().any(|c| {
            let c = c.as_str().unwrap();
            c.contains("--pretrain rcm") && c.contains("--negative bridged")
        }),
        "{}",
        r["commands"]
    );
    let z = find("PTT")["z_vs_exact"].as_f64().unwrap();
    assert!(
        z.abs() <= 3.0,
        "PTT is {z} standard errors off the exact weight"
    );
    // Gibbs started in one mode stays there, and says its weights cannot be trusted.
    assert!(
        find("Gibbs")["warnings"][0]
            .as_str()
            .unwrap()
            .contains("mode changes per chain"),
        "{}",
        find("Gibbs")
    );
    assert!(report.contains("**Gibbs (equal sweeps)** does **not** give the model's weight"));
    // PTT's budget in seconds is its own time at equal sweeps.
    assert_eq!(r["budget_seconds"], find("PTT")["seconds"]);
    // The commands listed are the ones run: rerunning the Gibbs one by hand gives the same
    // samples.
    let commands: Vec<String> = r["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    let gibbs = commands
        .iter()
        .find(|c| c.contains("--sampler gibbs"))
        .unwrap()
        .replace("gibbs.npy", "again.npy");
    ok(d, gibbs.strip_prefix("ebm ").unwrap());
    assert_eq!(
        bytes(&demo.join("gibbs.npy")),
        bytes(&demo.join("again.npy"))
    );
}

/// `ebm reproduce ptt-mixing-ising --quick`: on a trained model whose exact mode weights are
/// known (hidden layer enumerated), the tempering samplers' weights agree with the exact one
/// within their error bars, while Gibbs started in one mode does not and warns; PTT refreshes
/// its first checkpoint exactly and records its index-process times; the report, CSV and
/// figure exist and carry the record's numbers.
#[test]
fn reproduce_mixing_quick_measures_against_the_exact_weights() {
    let rows = reproduce_mixing_quick("ptt-mixing-ising", &[], "");
    for row in &rows[3..5] {
        assert!(row["index_tau_int"].as_f64().unwrap() > 0.5, "{row}");
    }
    let ags = &rows[0];
    assert_eq!(ags["mean_jumps"].as_f64().unwrap(), 0.0, "{ags}");
    assert!(ags["z_vs_exact"].as_f64().unwrap().abs() > 10.0, "{ags}");
}

/// `ebm reproduce ptt-mixing-digits --quick --data FILE` (the digits 0 and 1, exported to a
/// file as a user would bring their own, e.g. the real MNIST 0 and 1): the same structural
/// facts, on the given data. `--data` is refused, with one clear line, by the claims that
/// generate their own data, and a file that cannot be read is named.
#[test]
fn reproduce_mixing_digits_quick_measures_against_the_exact_weights() {
    reproduce_mixing_quick(
        "ptt-mixing-digits",
        &[
            "data generate digits --out all.npy --labels-out labels.npy",
            "data subset all.npy --label-file labels.npy --labels 0,1 --out d01.npy",
        ],
        "--data d01.npy",
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fails(
        d,
        "reproduce logz-estimators --quick --data x.npy --out r",
        1,
        "only ptt-mixing-digits, and logz-estimators with --model, take a data file",
    );
    fails(
        d,
        "reproduce ptt-mixing-digits --quick --data missing.npy --out r",
        1,
        "missing.npy",
    );
    fails(
        d,
        "reproduce ptt-mixing-ising --quick --epochs 5 --out r",
        1,
        "only lifted-training-digits takes a number of epochs",
    );
    fails(
        d,
        "reproduce lifted-training-digits --quick --epochs 0 --out r",
        2,
        "--epochs",
    );
}

/// `ebm reproduce ptt-mixing-clusters --quick` (three clusters in a plane): the same structural
/// facts.
#[test]
fn reproduce_mixing_clusters_quick_measures_against_the_exact_weights() {
    reproduce_mixing_quick("ptt-mixing-clusters", &[], "");
}

/// Runs `ebm reproduce CLAIM --quick` and checks what holds at any budget: six samplers at equal
/// Gibbs-sweep cost (stacked tempering within one iteration of it); PT, PTref and both PTT runs
/// agree with the trained model's exact weight of mode + within 3 standard errors; AGS, started
/// inside one mode, either stays in it (and is far from the exact weight, with a warning) or
/// jumps; PTT refreshes its first checkpoint exactly and records its index-process times; the
/// report and CSV carry every row. `prepare` runs first (in the same directory), then the claim
/// with `options`; with `--data FILE`, the claim's data are the file's. Returns the rows.
fn reproduce_mixing_quick(claim: &str, prepare: &[&str], options: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for line in prepare {
        ok(d, line);
    }
    ok(
        d,
        &format!("reproduce {claim} --quick --seed 1 --out r {options}"),
    );
    let r = d.join("r");
    if let Some(file) = options.strip_prefix("--data ") {
        let (given, used) = (
            ebm_data::loaders::npy::load_npy(d.join(file)).unwrap(),
            ebm_data::loaders::npy::load_npy(r.join("data.npy")).unwrap(),
        );
        assert_eq!(given.data(), used.data(), "{claim} did not train on --data");
    }
    assert_image(&r.join("mode-jumps.png"));
    let report = std::fs::read_to_string(r.join("report.md")).unwrap();
    let csv = std::fs::read_to_string(r.join("results.csv")).unwrap();
    let rec = json(&r.join("reproduce.json"))["results"].clone();
    let exact = rec["exact_mode_plus"].as_f64().unwrap();
    assert!((0.02..0.98).contains(&exact), "{claim}: {exact}");
    let rows = rec["rows"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 6);
    assert_eq!(csv.lines().count(), 7);
    let budget = rows[0]["gibbs_sweeps"].as_u64().unwrap();
    for row in &rows {
        let label = row["label"].as_str().unwrap();
        let sweeps = row["gibbs_sweeps"].as_u64().unwrap();
        let z = row["z_vs_exact"].as_f64().unwrap();
        let warned = !row["warnings"].as_array().unwrap().is_empty();
        match label {
            "ST" => assert!(sweeps <= budget && sweeps + 3 > budget, "{row}"),
            _ => assert_eq!(sweeps, budget, "{label}"),
        }
        match label {
            "AGS" if row["mean_jumps"].as_f64().unwrap() == 0.0 => {
                assert!(
                    z.abs() > 3.0 && warned,
                    "{claim}: a stuck Gibbs must say so: {row}"
                )
            }
            "AGS" | "ST" => {}
            _ => assert!(
                z.abs() <= 3.0,
                "{claim}: {label} off the exact weight: {row}"
            ),
        }
        assert!(
            report.contains(&format!("| {label} |")),
            "{label} not in report"
        );
    }
    for stem in ["ptt", "ptt-deo"] {
        let pt = json(&r.join(format!("{stem}.json")))["results"]["pt"].clone();
        assert_eq!(pt["rung0"], "exact", "{stem}");
        // A ladder of 2 checkpoints decorrelates its index within a round: no τ to estimate.
        if let Some(tau) = pt["index_tau_int"].as_f64() {
            assert!(tau > 0.5, "{pt}");
        }
    }
    let pt = json(&r.join("pt.json"))["results"]["pt"].clone();
    assert_eq!(pt["rung0"], "gibbs");
    let verdict = rec["verdict"].as_str().unwrap();
    assert!(
        ["reproduced", "partly reproduced", "not reproduced"].contains(&verdict),
        "{verdict}"
    );
    assert!(report.contains(&verdict.to_uppercase()));
    rows
}

/// A tempering run shorter than 20 exponential autocorrelation times of its index process, or
/// whose replicas never complete a round trip, warns in its record.
#[test]
fn short_tempering_runs_warn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ebm_io::save_rbm(&small_rbm(), &d.join("m.safetensors")).unwrap();
    ok(
        d,
        "sample --model m.safetensors --sampler pt --rungs 4 --beta-min 0.05 --chains 20 \
         --steps 2 --seed 1 --out s.npy",
    );
    let rec = json(&d.join("s.json"))["results"].clone();
    // Two DEO rounds cannot carry a replica across 4 rungs and back.
    assert_eq!(rec["pt"]["round_trips"], 0);
    let warnings = rec["warnings"].to_string();
    assert!(
        warnings.contains("no replica completed a round trip"),
        "{warnings}"
    );
    // A long enough run of the same ladder does not warn.
    ok(
        d,
        "sample --model m.safetensors --sampler pt --rungs 4 --beta-min 0.05 --chains 20 \
         --steps 2000 --seed 1 --out long.npy",
    );
    let rec = json(&d.join("long.json"))["results"].clone();
    let tau = rec["pt"]["index_tau_exp"].as_f64().unwrap();
    assert!(2000.0 > 20.0 * tau, "{tau}");
    assert_eq!(rec["warnings"].as_array().unwrap().len(), 0, "{rec}");
}

/// `ebm reproduce logz-estimators --quick`: every offline estimator at every budget is compared
/// with the exact log Z of the trained model, the CSV and report carry the records' numbers,
/// and the ranking is sorted by the absolute error.
#[test]
fn reproduce_logz_quick_compares_every_estimator_with_the_exact_value() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, "reproduce logz-estimators --quick --seed 3 --out r");
    let r = d.join("r");
    assert_image(&r.join("logz.png"));
    let rec = json(&r.join("reproduce.json"))["results"].clone();
    let exact_rec = json(&r.join("exact.json"))["results"].clone();
    let exact = rec["exact_log_z"].as_f64().unwrap();
    assert_eq!(exact, exact_rec["log_z"].as_f64().unwrap());
    let rows = rec["rows"].as_array().unwrap();
    let budgets = rec["budgets"].as_array().unwrap().len();
    assert_eq!(rows.len(), 4 * budgets);
    let csv = std::fs::read_to_string(r.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), rows.len() + 1);
    for row in rows {
        let (z, err, se) = (
            row["log_z"].as_f64().unwrap(),
            row["error"].as_f64().unwrap(),
            row["std_err"].as_f64().unwrap(),
        );
        assert!((z - exact - err).abs() < 1e-9, "{row}");
        assert!(se > 0.0 && err.abs() < 5.0, "{row}");
        assert!(row["gibbs_sweeps_per_chain"].as_f64().unwrap() > 0.0);
    }
    let ranking = rec["ranking"].as_array().unwrap();
    let errors: Vec<f64> = ranking.iter().map(|x| x[1].as_f64().unwrap()).collect();
    assert!(errors.windows(2).all(|w| w[0] <= w[1]), "{errors:?}");
    let report = std::fs::read_to_string(r.join("report.md")).unwrap();
    assert!(report.contains(&format!("{exact:.4}")));
    assert!(report.contains(&rec["verdict"].as_str().unwrap().to_uppercase()));
    assert_eq!(rec["model"]["given"], false);
    // The online row carries the warnings the training raised about its estimate (seed 3's
    // quick training warns of heavy-tailed weights).
    let kinds = |v: &serde_json::Value, key: Option<&str>| -> Vec<String> {
        let list = v.as_array().unwrap().iter();
        list.map(|w| key.map_or(w, |k| &w[k]).as_str().unwrap().to_string())
            .collect()
    };
    let training = json(&r.join("model.json"))["results"]["log_z_warnings"].clone();
    assert_eq!(
        kinds(&rec["online"]["warnings"], None),
        kinds(&training, Some("kind"))
    );
    assert!(!kinds(&training, Some("kind")).is_empty(), "{training}");

    // `--model`: the same claim on a model trained elsewhere (here the one just trained, its
    // data and trajectory found through its run record) gives the same estimates, bit for bit.
    ok(
        d,
        "reproduce logz-estimators --quick --seed 3 --model r/model.safetensors --out g",
    );
    let given = json(&d.join("g/reproduce.json"))["results"].clone();
    assert_eq!(given["model"]["given"], true);
    assert_eq!(
        given["model"]["trajectory"],
        "r/model.trajectory.safetensors"
    );
    assert_eq!(given["model"]["data"], "r/ising.npy");
    assert_eq!(given["model"]["summary"], rec["model"]["summary"]);
    for key in ["exact_log_z", "rows", "online", "ranking", "verdict"] {
        assert_eq!(given[key], rec[key], "{key}");
    }
    let report = std::fs::read_to_string(d.join("g/report.md")).unwrap();
    assert!(
        report.contains("r/model.safetensors trained by `ebm train`"),
        "{report}"
    );
    // Its errors: another claim, a model without a record, a training without the online
    // log-likelihood.
    fails(
        d,
        "reproduce ptt-mixing-ising --quick --model r/model.safetensors --out x",
        1,
        "only logz-estimators takes a trained model",
    );
    fails(
        d,
        "reproduce logz-estimators --quick --model missing.safetensors --out x",
        1,
        "missing.json",
    );
    for (from, to) in [
        ("model.safetensors", "other.safetensors"),
        ("model.json", "other.json"),
    ] {
        std::fs::copy(d.join("r").join(from), d.join("r").join(to)).unwrap();
    }
    fails(
        d,
        "reproduce logz-estimators --quick --model r/other.safetensors --out x",
        1,
        "is the record of another training",
    );
    ok(
        d,
        "train --data r/ising.npy --hidden-units 4 --updates 3 --out plain.safetensors",
    );
    fails(
        d,
        "reproduce logz-estimators --quick --model plain.safetensors --out x",
        1,
        "has no online log Z (train with --loglik-every)",
    );
}

//! Drives the `ebm` binary (the root package's `src/main.rs`, a thin wrapper of
//! `ebm_cli::run`) end to end: help texts, the data commands, sampling checked against exact
//! enumeration, exact log-likelihood, figures, and failure paths that must end with one error
//! line and a non-zero exit code.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::OnceLock;

use assert_cmd::Command;
use ebm_core::Par;
use ebm_data::{Dataset, Domain};
use ebm_models::{Bernoulli, DiscreteLayer, Gaussian, Rbm, Spin, exact};
use nalgebra::DMatrix;
use serde_json::Value;

/// The `ebm` binary of the root package, built (or found up to date) by cargo in this test's
/// own target directory and profile: integration tests of `ebm-cli` do not get
/// `CARGO_BIN_EXE_ebm`, since the binary belongs to another package.
fn ebm_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // This test runs as <target>/<profile>/deps/cli-<hash>.
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test executable in <target>/<profile>/deps");
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("profile directory name");
        let cargo_profile = if profile == "debug" { "dev" } else { profile };
        let target_dir = profile_dir.parent().expect("target directory");
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = StdCommand::new(cargo)
            .current_dir(&workspace)
            .env("CARGO_TARGET_DIR", target_dir)
            .args(["build", "--quiet", "-p", "ebm", "--bin", "ebm", "--profile"])
            .arg(cargo_profile)
            .status()
            .expect("run cargo to build the ebm binary");
        assert!(status.success(), "building the ebm binary failed");
        let bin = profile_dir.join(format!("ebm{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.exists(), "{} was not built", bin.display());
        bin
    })
}

fn ebm() -> Command {
    let mut c = Command::new(ebm_binary());
    c.env_remove("RUST_BACKTRACE");
    c
}

/// Splits a command line written as one string (no argument contains a space).
fn words(args: &str) -> Vec<&str> {
    args.split_whitespace().collect()
}

/// Runs `ebm <args>` in `dir`, expecting success; returns stdout.
fn ok(dir: &Path, args: &str) -> String {
    let out = ebm().current_dir(dir).args(words(args)).output().unwrap();
    assert!(
        out.status.success(),
        "ebm {args} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `ebm <args>` in `dir`, expecting failure with exit code `code`, nothing on stdout and
/// exactly one line on stderr, `error: ...`, containing `needle`.
fn fails(dir: &Path, args: &str, code: i32, needle: &str) {
    let out = ebm().current_dir(dir).args(words(args)).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "ebm {args}: {stderr:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "ebm {args}: stderr is not one line: {stderr:?}"
    );
    assert!(lines[0].starts_with("error: "), "ebm {args}: {stderr:?}");
    assert!(
        lines[0].contains(needle),
        "ebm {args}: {stderr:?} lacks {needle:?}"
    );
    assert!(
        out.stdout.is_empty(),
        "ebm {args} printed on stdout on failure"
    );
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

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
        ("loglik --help", &["exact"]),
        ("loglik exact --help", &["log Z", "--data"]),
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
    let rec = json(&d.join("swaps.json"));
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
    let rec = json(&d.join("example.json"));
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
        drawn("logz.json"),
        serde_json::json!([["ais", 3], ["tr-ais", 2]])
    );
    assert_eq!(
        drawn("ll.json"),
        serde_json::json!([["train_ll", 4], ["test_ll", 3]])
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
    std::fs::write(d.join("nan.safetensors"), &model).unwrap();
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
        "at least 2",
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
    fails(d, "plot swaps g.json --out g.png", 1, "overwrite");
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

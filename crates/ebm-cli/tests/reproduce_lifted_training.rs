//! `ebm reproduce lifted-training-digits --quick --epochs 2` (paper 004, Fig. 2) run in-process: the
//! structural facts that hold at any budget — the files exist, the curves have the expected
//! columns and lengths, every pseudo-log-likelihood and log-likelihood is at most 0, and the
//! logged exact PLL equals the one recomputed from the saved model.

use std::path::Path;

use ebm_core::Par;
use ebm_models::{Bernoulli, Rbm};

fn rows(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let body = lines
        .map(|l| {
            l.split(',')
                .map(|x| x.parse::<f64>().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    (header, body)
}

#[test]
fn quick_reproduction_writes_consistent_curves() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let code = ebm_cli::run([
        "ebm",
        "--quiet",
        "reproduce",
        "lifted-training-digits",
        "--quick",
        "--epochs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        format!("{code:?}"),
        format!("{:?}", std::process::ExitCode::SUCCESS)
    );
    for f in [
        "report.md",
        "results.csv",
        "curves-pll.csv",
        "curves-small.csv",
        "pll.png",
        "small.png",
        "reproduce.json",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // the quick plan's sizes over the 2 epochs asked for, logged after each, plus the
    // initial model
    let (header, body) = rows(&out.join("curves-pll.csv"));
    assert_eq!(header, ["epoch", "PCD", "CD", "PT", "LPT", "DEO"]);
    assert_eq!(body.len(), 3);
    assert!(body.iter().flatten().skip(1).all(|x| x.is_finite()));
    assert!(body.iter().all(|r| r[1..].iter().all(|&x| x <= 0.0)));
    let (header, body) = rows(&out.join("curves-small.csv"));
    assert_eq!(header.len(), 11);
    assert_eq!(header[6], "PCD_ll");
    assert_eq!(body.len(), 3);
    assert!(body.iter().all(|r| r[1..].iter().all(|&x| x <= 0.0)));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("**Verdict: "));

    // The logged exact PLL of the final PCD model equals the one recomputed from its file.
    let (_, log) = rows(&out.join("pcd-h20.pll.csv"));
    let logged = log.last().unwrap()[1];
    let rbm: Rbm<Bernoulli<f64>, Bernoulli<f64>> =
        ebm_io::load_rbm(&out.join("pcd-h20.safetensors")).unwrap();
    let data = ebm_data::augment::nudge(&ebm_data::loaders::digits(), 8, 8).unwrap();
    let pll = ebm_estimators::pseudo_log_likelihood(&rbm, data.data(), Par::Seq).unwrap();
    assert!(
        (pll.mean - logged).abs() < 1e-9 * logged.abs(),
        "{} vs {logged}",
        pll.mean
    );
}

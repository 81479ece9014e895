//! The PCA projection of the clustered presets recovers the latent clusters and their weights.

use ebm_core::diagnostics::{ModeClassifier, mode_fractions};
use ebm_data::generators::clusters::{ClusterPreset, Component, Shape, clustered};
use ebm_data::{Centering, Pca};
use nalgebra::DMatrix;

/// Accuracy of nearest-centre assignment in PCA space against the generating labels, and the
/// recovered component fractions.
fn recover(
    cfg: &ebm_data::generators::clusters::ClusterConfig,
    d: usize,
    seed: u64,
) -> (f64, Vec<f64>, Vec<f64>) {
    let out = clustered(cfg, seed).unwrap();
    let pca = Pca::fit_dataset(&out.dataset, d, Centering::Centered).unwrap();
    // the leading d principal directions span the latent directions: ||P_pca ξ_α|| ≈ 1
    for a in 0..d {
        let xi = out.directions.column(a);
        let inside = (pca.components().transpose() * xi).norm();
        assert!(inside > 0.99, "direction {a}: captured norm {inside}");
    }
    // the latent centres mapped to data space (E[s | x = c] = Ξ c) and projected
    let n = cfg.n_features as f64;
    let centres: Vec<Vec<f64>> = cfg
        .components
        .iter()
        .map(|c| {
            let x = DMatrix::from_column_slice(d, 1, &c.centre);
            let mean_spins = &out.directions * x * n.sqrt();
            pca.project(&mean_spins)
                .unwrap()
                .column(0)
                .iter()
                .copied()
                .collect()
        })
        .collect();
    let rule = ModeClassifier::NearestCentre { centres };
    let labels = rule
        .assign(&pca.project(out.dataset.data()).unwrap())
        .unwrap();
    let truth = out.dataset.labels().unwrap();
    let acc = labels
        .iter()
        .zip(truth)
        .filter(|(a, b)| **a == **b as usize)
        .count() as f64
        / labels.len() as f64;
    let total: f64 = cfg.components.iter().map(|c| c.weight).sum();
    let want = cfg.components.iter().map(|c| c.weight / total).collect();
    (acc, mode_fractions(&labels, cfg.components.len()), want)
}

fn assert_weights(got: &[f64], want: &[f64], n: usize) {
    for (g, w) in got.iter().zip(want) {
        let sd = (w * (1.0 - w) / n as f64).sqrt();
        assert!(
            (g - w).abs() < 4.0 * sd + 0.002,
            "fraction {g} vs weight {w}"
        );
    }
}

#[test]
fn three_clusters_2d_unequal_weights() {
    let mut cfg = ClusterPreset::ThreeClusters2d.config();
    cfg.n_samples = 3000;
    for (c, w) in cfg.components.iter_mut().zip([0.5, 0.3, 0.2]) {
        c.weight = w;
    }
    let (acc, got, want) = recover(&cfg, 2, 1);
    // clusters 0.5 apart with spread ~0.05 + 1/√N noise: essentially no misassignment
    assert!(acc > 0.995, "accuracy {acc}");
    assert_weights(&got, &want, 3000);
}

#[test]
fn five_clusters_1d() {
    let mut cfg = ClusterPreset::FiveClusters1d.config();
    cfg.n_samples = 3000;
    for (c, w) in cfg.components.iter_mut().zip([1.0, 2.0, 3.0, 2.5, 1.5]) {
        c.weight = w;
    }
    let (acc, got, want) = recover(&cfg, 1, 2);
    assert!(acc > 0.995, "accuracy {acc}");
    assert_weights(&got, &want, 3000);
}

#[test]
fn mickey_disks_and_areas() {
    let mut cfg = ClusterPreset::Mickey.config();
    cfg.n_samples = 4000;
    let out = clustered(&cfg, 3).unwrap();
    let pca = Pca::fit_dataset(&out.dataset, 2, Centering::Centered).unwrap();
    let sq = (cfg.n_features as f64).sqrt();
    // disk k in PCA space: centre = projection of E[s | x = c_k], radius r_k √N (the map from
    // latent to projection coordinates is √N times an orthogonal map)
    let disks: Vec<(Vec<f64>, f64)> = cfg
        .components
        .iter()
        .map(|c| {
            let x = DMatrix::from_column_slice(2, 1, &c.centre);
            let m = &out.directions * x * sq;
            let centre = pca.project(&m).unwrap().column(0).iter().copied().collect();
            let Shape::Ball { radius } = c.shape else {
                unreachable!()
            };
            (centre, radius * sq)
        })
        .collect();
    let p = pca.project(out.dataset.data()).unwrap();
    // assign to the disk with the smallest scaled distance |p - c_k| / r_k
    let labels: Vec<usize> = p
        .column_iter()
        .map(|col| {
            (0..3)
                .min_by(|&a, &b| {
                    let d = |k: usize| {
                        let (c, r) = &disks[k];
                        ((col[0] - c[0]).powi(2) + (col[1] - c[1]).powi(2)).sqrt() / r
                    };
                    d(a).total_cmp(&d(b))
                })
                .unwrap()
        })
        .collect();
    let truth = out.dataset.labels().unwrap();
    let acc = labels
        .iter()
        .zip(truth)
        .filter(|(a, b)| **a == **b as usize)
        .count() as f64
        / 4000.0;
    // the ears touch the face up to a gap of ~0.02, below the 1/√N ≈ 0.03 projection noise:
    // only points near the two contact regions can be misassigned
    assert!(acc > 0.97, "accuracy {acc}");
    let got = mode_fractions(&labels, 3);
    assert_weights(&got, &[2.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0], 4000);
}

#[test]
fn two_clusters_1d_symmetric() {
    let cfg = ebm_data::generators::clusters::ClusterConfig {
        n_features: 1000,
        n_samples: 2000,
        components: vec![
            Component {
                centre: vec![-0.5],
                shape: Shape::Gaussian { std: 0.05 },
                weight: 1.0,
            },
            Component {
                centre: vec![0.5],
                shape: Shape::Gaussian { std: 0.05 },
                weight: 1.0,
            },
        ],
    };
    let (acc, got, want) = recover(&cfg, 1, 4);
    assert_eq!(acc, 1.0);
    assert_weights(&got, &want, 2000);
}

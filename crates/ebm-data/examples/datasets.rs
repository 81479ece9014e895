//! Generate the Mickey set, split it, run PCA, recover the cluster weights and compute metrics.
//!
//! Run with `cargo run -p ebm-data --release --example datasets`.

use ebm_core::diagnostics::{
    ModeClassifier, integrated_autocorrelation_time, mode_fractions, mode_jumps,
};
use ebm_data::generators::clusters::{ClusterPreset, clustered};
use ebm_data::metrics::{adversarial_accuracy, compare_projections};
use ebm_data::{Centering, Domain, Pca, loaders};
use nalgebra::DMatrix;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. the Mickey set: N = 1000 binary variables, 16 000 samples, {0,1} as the RBMs use
    let out = clustered(&ClusterPreset::Mickey.config(), 2024)?;
    let data = out.dataset.to_domain(Domain::Binary01)?;
    let (train, test) = data.split(0.6, 1)?;
    println!(
        "Mickey: {} features, {} train / {} test samples",
        data.n_features(),
        train.n_samples(),
        test.n_samples()
    );

    // 2. PCA of the training set; the first two components carry the face
    let t = std::time::Instant::now();
    let pca = Pca::fit_dataset(&train, 4, Centering::Centered)?;
    println!(
        "PCA in {:.2?}; explained variance ratios {:?}",
        t.elapsed(),
        pca.explained_variance_ratio()
            .iter()
            .map(|r| format!("{r:.3}"))
            .collect::<Vec<_>>()
    );

    // 3. cluster weights recovered by nearest centre in PC space (centres: per-component means)
    let proj = pca.project_normalized(test.data())?;
    let labels = test.labels().expect("generator labels");
    let mut centres = vec![vec![0.0; 2]; 3];
    let mut counts = [0.0; 3];
    for (j, &l) in labels.iter().enumerate() {
        for a in 0..2 {
            centres[l as usize][a] += proj[(a, j)];
        }
        counts[l as usize] += 1.0;
    }
    for (c, n) in centres.iter_mut().zip(counts) {
        c.iter_mut().for_each(|v| *v /= n);
    }
    let rule = ModeClassifier::NearestCentre { centres };
    let assigned = rule.assign(&proj.rows(0, 2).into_owned())?;
    let w = mode_fractions(&assigned, 3);
    println!(
        "nearest-centre weights (face, left ear, right ear): {w:.3?}  (areas: 0.667, 0.167, 0.167;\n \
         nearest centre is biased for disks of unequal radii: the scaled-distance rule of\n \
         tests/pca_recovers_clusters.rs recovers the areas)"
    );

    // 4. sample-quality metrics of the test set against the training set ("perfect sampler")
    let n = 2000;
    let real = train.data().columns(0, n).into_owned();
    let synth = test.data().columns(0, n).into_owned();
    let aa = adversarial_accuracy(&real, &synth)?;
    println!(
        "AA_TS(train, test) = {:.3} (0.5 = indistinguishable)",
        aa.aa_ts
    );
    let hist = compare_projections(
        &pca.project_normalized(&real)?,
        &pca.project_normalized(&synth)?,
        40,
    )?;
    for (a, h) in hist.iter().take(2).enumerate() {
        println!(
            "PC{}: TV {:.3}, Hellinger {:.3}, JS {:.4}, W1 {:.4}",
            a + 1,
            h.total_variation,
            h.hellinger,
            h.jensen_shannon,
            h.wasserstein1
        );
    }

    // 5. mixing metrics on a toy trajectory: 100 chains hopping between the face and the ears
    //    (here simply the test samples visited in order)
    let traj: Vec<Vec<usize>> = (0..50)
        .map(|t| {
            (0..100)
                .map(|c| assigned[(t * 100 + c) % assigned.len()])
                .collect()
        })
        .collect();
    let jumps = mode_jumps(&traj)?;
    println!("mode jumps per chain: {:.2} ± {:.2}", jumps.mean, jumps.sem);
    let pc1: Vec<f64> = proj.row(0).iter().copied().collect();
    let tau = integrated_autocorrelation_time(&[&pc1], 6.0)?;
    println!(
        "tau_int of PC1 along the test set: {:.2} ± {:.2} (independent samples: 0.5)",
        tau.tau, tau.std_error
    );

    // 6. the embedded digits
    let digits = loaders::digits();
    let zeros_ones = digits.filter_labels(&[0, 1])?;
    let p = Pca::fit_dataset(&zeros_ones, 1, Centering::Centered)?;
    let pc: DMatrix<f64> = p.project(zeros_ones.data())?;
    let split = ModeClassifier::Threshold {
        component: 0,
        value: 0.0,
    }
    .assign(&pc)?;
    println!(
        "digits 0/1: {} images; PC1 sign separates them into fractions {:.3?}",
        zeros_ones.n_samples(),
        mode_fractions(&split, 2)
    );
    Ok(())
}

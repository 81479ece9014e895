//! Low-rank (RCM) pre-training then PCD, against PCD from scratch at the same number of updates,
//! on Mickey-like clustered data (three disks in a 2-D latent space, weights 2/3, 1/6, 1/6).
//!
//! Both models have 20 hidden units, so their log Z is exact (enumeration of the hidden layer)
//! and their cluster weights are measured on exact i.i.d. draws from each model's own
//! equilibrium (hidden configuration from the enumerated p(h), then v | h), never on the chains.
//!
//! Run with `cargo run --release --example rcm_pretraining` (about a minute on two cores).

use ebm::core::RngStreams;
use ebm::data::generators::clusters::{ClusterPreset, clustered};
use ebm::models::exact::{log_partition_by_hidden, sample_by_hidden};
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm_train::pretrain::{PretrainConfig, RcmConfig, pad_hidden, pretrain_rcm};
use ebm_train::{Pcd, Trainer, TrainingData, initial_model, mean_log_likelihood};

type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

/// Cluster weights of `draws` exact samples of `model`: each sample goes to the nearest disk
/// centre of its latent projection.
fn cluster_weights(model: &Model, directions: &DMatrix<f64>, centres: &[[f64; 2]]) -> Vec<f64> {
    let draws = 20_000;
    let mut x = model.default_chains(draws);
    let mut rngs = RngStreams::new(99, draws);
    sample_by_hidden(model, &mut x, 1.0, rngs.as_mut_slice(), Par::Rayon).expect("20 hidden units");
    let n = directions.nrows() as f64;
    let spins = x.visible.map(|v| 2.0 * v - 1.0);
    let m = directions.transpose() * spins / n.sqrt();
    let mut w = vec![0.0; centres.len()];
    for col in m.column_iter() {
        let d = |c: &[f64; 2]| (col[0] - c[0]).powi(2) + (col[1] - c[1]).powi(2);
        let k = (0..centres.len())
            .min_by(|&a, &b| d(&centres[a]).total_cmp(&d(&centres[b])))
            .unwrap();
        w[k] += 1.0 / draws as f64;
    }
    w
}

fn main() -> Result<(), Error> {
    // ANCHOR: data
    let mut cfg = ClusterPreset::Mickey.config();
    cfg.n_features = 100;
    cfg.n_samples = 3000;
    let set = clustered(&cfg, 5).expect("valid preset");
    let spins = set.dataset.data().clone();
    let centres = [[0.0, -0.09], [-0.30, 0.27], [0.30, 0.27]];
    let data01 = spins.map(|s| (s + 1.0) / 2.0);
    let train = TrainingData::from_f64(&Bernoulli::<f64>::zeros(100), &data01)?;
    // ANCHOR_END: data

    // ANCHOR: pretrain
    let t0 = std::time::Instant::now();
    let pre = pretrain_rcm(
        &spins,
        &PretrainConfig {
            directions: 2,
            bias: true,
            points_per_dim: 30,
            rcm: RcmConfig {
                hyperplanes: 60,
                max_hidden: Some(20),
                ..RcmConfig::default()
            },
        },
        Par::Rayon,
    )?;
    // ±1 -> {0,1}, then pad to 20 hidden units.
    let pretrained: Model = pad_hidden(
        &pre.rbm.reparametrise::<Bernoulli, Bernoulli>().rbm,
        20,
        1e-4,
        3,
    )?;
    println!(
        "RCM: {} mesh points ({} rejected), {} hyperplanes kept ({} dropped), {} Newton steps, \
         {:.1} s",
        pre.mesh.len(),
        pre.mesh.rejected(),
        pre.fit.rcm.n_hidden(),
        pre.fit.dropped,
        pre.fit.iterations,
        t0.elapsed().as_secs_f64()
    );
    let offset = pre
        .rbm
        .reparametrise::<Bernoulli, Bernoulli>()
        .energy_offset;
    let exact_spin = log_partition_by_hidden(&pre.rbm, 1.0, Par::Rayon)?;
    println!(
        "low-rank log Z: mesh {:.4}, exact {:.4} (±1 model; the {{0,1}} one differs by {:.4})",
        pre.log_z_mesh, exact_spin, offset
    );
    // ANCHOR_END: pretrain

    // ANCHOR: train
    let scratch = initial_model(
        Bernoulli::zeros(100),
        Bernoulli::zeros(20),
        Some(&train),
        1e-2,
        7,
    )?;
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 10,
            chains: 500,
        },
        300,
    );
    trainer.learning_rate = ebm_train::LearningRate::Constant(0.01);
    let mut runs = Vec::new();
    for (name, model) in [("pretrained", pretrained), ("scratch", scratch)] {
        let mut state = trainer.init(model, &train, 11, Par::Rayon)?;
        if name == "pretrained" {
            // Persistent chains start from i.i.d. static draws of the low-rank model.
            let lw = pre.mesh.rbm_log_weights(&pre.rbm)?;
            let mut rngs = RngStreams::new(500, 500);
            let (v, _) = pre.mesh.sample(&lw, rngs.as_mut_slice())?;
            state.negative.chains.visible = v.map(|s| (s + 1.0) / 2.0);
        }
        runs.push((name, state));
    }
    println!("update  model       exact LL    weights (data: 0.667 0.167 0.167)");
    for block in 0..=4 {
        for (name, state) in runs.iter_mut() {
            if block > 0 {
                trainer.run(state, &train, None, 250, Par::Rayon, ())?;
            }
            let log_z = log_partition_by_hidden(&state.model, 1.0, Par::Rayon)?;
            let ll = mean_log_likelihood(&state.model, &train, log_z, Par::Rayon);
            let w = cluster_weights(&state.model, &set.directions, &centres);
            println!(
                "{:>6}  {name:<10}  {ll:>9.3}    {:.3} {:.3} {:.3}",
                state.update, w[0], w[1], w[2]
            );
        }
    }
    // ANCHOR_END: train
    Ok(())
}

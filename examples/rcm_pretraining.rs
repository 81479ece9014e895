//! Low-rank (RCM) pre-training then PCD, against PCD from scratch at the same number of updates,
//! on Mickey-like clustered data (three disks in a 2-D latent space, weights 2/3, 1/6, 1/6;
//! N = 200 visible units, 3000 samples, seed 5).
//!
//! Both models have 16 hidden units, so their log Z is exact (enumeration of the hidden layer)
//! and their cluster weights are measured on 10 000 exact i.i.d. draws from each model's own
//! equilibrium (hidden configuration from the enumerated p(h), then v | h), never on the
//! training chains. A sample belongs to the cluster whose disk centre is nearest to its
//! projection on the two latent directions; the data's weights are measured with the same rule
//! (noisy projections blur the disks, so they differ from the label frequencies, also printed).
//!
//! Run with `cargo run --release --example rcm_pretraining` (under a minute on two cores).

use ebm::core::RngStreams;
use ebm::data::generators::clusters::{ClusterPreset, clustered};
use ebm::models::exact::{log_partition_by_hidden, sample_by_hidden};
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm_train::pretrain::{PretrainConfig, RcmConfig, pad_hidden_in_span, pretrain_rcm};
use ebm_train::{LearningRate, Pcd, Trainer, TrainingData, initial_model, mean_log_likelihood};

type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

const CENTRES: [[f64; 2]; 3] = [[0.0, -0.09], [-0.30, 0.27], [0.30, 0.27]];

/// Fractions of the ±1 columns of `spins` nearest to each disk centre in the latent plane.
fn cluster_weights(spins: &DMatrix<f64>, directions: &DMatrix<f64>) -> [f64; 3] {
    let n = directions.nrows() as f64;
    let m = directions.transpose() * spins / n.sqrt();
    let mut w = [0.0; 3];
    for col in m.column_iter() {
        let d = |c: &[f64; 2]| (col[0] - c[0]).powi(2) + (col[1] - c[1]).powi(2);
        let k = (0..3)
            .min_by(|&a, &b| d(&CENTRES[a]).total_cmp(&d(&CENTRES[b])))
            .expect("three centres");
        w[k] += 1.0 / spins.ncols() as f64;
    }
    w
}

/// Cluster weights of 10 000 exact draws of `model` (hidden layer enumerated).
fn model_weights(model: &Model, directions: &DMatrix<f64>) -> Result<[f64; 3], Error> {
    let draws = 10_000;
    let mut x = model.default_chains(draws);
    let mut rngs = RngStreams::new(99, draws);
    sample_by_hidden(model, &mut x, 1.0, rngs.as_mut_slice(), Par::Rayon)?;
    Ok(cluster_weights(
        &x.visible.map(|v| 2.0 * v - 1.0),
        directions,
    ))
}

fn main() -> Result<(), Error> {
    // ANCHOR: data
    let (n, hidden) = (200, 16);
    let mut cfg = ClusterPreset::Mickey.config();
    cfg.n_features = n;
    cfg.n_samples = 3000;
    let set = clustered(&cfg, 5).expect("valid preset");
    let spins = set.dataset.data().clone();
    let data01 = spins.map(|s| (s + 1.0) / 2.0);
    let train = TrainingData::from_f64(&Bernoulli::<f64>::zeros(n), &data01)?;
    let data_w = cluster_weights(&spins, &set.directions);
    let mut label_w = [0.0; 3];
    for &l in set
        .dataset
        .labels()
        .expect("the generator labels its samples")
    {
        label_w[l as usize] += 1.0 / cfg.n_samples as f64;
    }
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
                max_hidden: Some(hidden),
                ..RcmConfig::default()
            },
        },
        Par::Rayon,
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
    // ±1 -> {0,1}, then more hidden units with random weights in the span of the basis, so the
    // padded model is still low-rank: its mesh log Z and static sampler stay exact.
    let lowrank: Model = pre.rbm.reparametrise::<Bernoulli, Bernoulli>().rbm;
    let pretrained = pad_hidden_in_span(&lowrank, &pre.basis, hidden, 1e-4, 3)?;
    let padded_spin = pretrained.reparametrise::<Spin, Spin>();
    let mesh_weights = pre.mesh.rbm_log_weights(&padded_spin.rbm)?;
    let log_z_mesh = pre.mesh.log_partition(&mesh_weights)? - padded_spin.energy_offset;
    println!(
        "pretrained log Z: mesh {log_z_mesh:.4}, exact {:.4}",
        log_partition_by_hidden(&pretrained, 1.0, Par::Rayon)?
    );
    // ANCHOR_END: pretrain

    // ANCHOR: train
    let scratch = initial_model(
        Bernoulli::zeros(n),
        Bernoulli::zeros(hidden),
        Some(&train),
        1e-2,
        7,
    )?;
    let chains = 300;
    let mut trainer = Trainer::new(Pcd { sweeps: 10, chains }, 300);
    trainer.learning_rate = LearningRate::Constant(0.01);
    println!(
        "data: labels {:.3} {:.3} {:.3}, nearest-centre {:.3} {:.3} {:.3}",
        label_w[0], label_w[1], label_w[2], data_w[0], data_w[1], data_w[2]
    );
    println!("update  model       exact LL   cluster weights     TV to data");
    for (name, model) in [("pretrained", pretrained), ("scratch", scratch)] {
        let mut state = trainer.init(model, &train, 11, Par::Rayon)?;
        if name == "pretrained" {
            // Persistent chains start from i.i.d. static draws of the pretrained model.
            let mut rngs = RngStreams::new(500, chains);
            let (v, _) = pre.mesh.sample(&mesh_weights, rngs.as_mut_slice())?;
            state.negative.chains.visible = v.map(|s| (s + 1.0) / 2.0);
        }
        for target in [0, 500, 1000, 2000] {
            let todo = target - state.update;
            if todo > 0 {
                trainer.run(&mut state, &train, None, todo, Par::Rayon, ())?;
            }
            let log_z = log_partition_by_hidden(&state.model, 1.0, Par::Rayon)?;
            let ll = mean_log_likelihood(&state.model, &train, log_z, Par::Rayon);
            let w = model_weights(&state.model, &set.directions)?;
            let tv: f64 = w.iter().zip(&data_w).map(|(a, b)| (a - b).abs()).sum();
            println!(
                "{:>6}  {name:<10}  {ll:>9.3}   {:.3} {:.3} {:.3}   {:.3}",
                state.update,
                w[0],
                w[1],
                w[2],
                tv / 2.0
            );
        }
    }
    // ANCHOR_END: train
    Ok(())
}

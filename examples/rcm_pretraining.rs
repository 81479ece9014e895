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
//!
//! With `-- --curves DIR` it instead trains, on each of three datasets, a 20-hidden-unit RBM
//! from the RCM-pretrained start and from scratch at the same budget (PCD-10, 300 chains,
//! minibatch 300, learning rate 0.01, 2000 updates), computes the exact mean log-likelihood of the
//! training data (hidden layer enumerated) every 100 updates, prints it and draws both curves in
//! `DIR/<dataset>.ll.svg` (paper 000 Fig. 2, exact instead of Tr-AIS). Datasets: the Mickey-like
//! clusters above, 8x8 Ising configurations at beta = 0.44 (2000, Swendsen–Wang, seed 1) and the
//! embedded digits 0 and 1 (360 binarised 8x8 images). About 15 minutes on two loaded cores.

use ebm::core::RngStreams;
use ebm::data::generators::clusters::{ClusterPreset, clustered};
use ebm::models::exact::{log_partition_by_hidden, sample_by_hidden};
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm_train::pretrain::{
    PretrainConfig, PretrainedStart, RcmConfig, pad_hidden_in_span, pretrain_rcm,
};
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--curves") {
        let dir = args
            .get(i + 1)
            .ok_or("--curves needs an output directory")?;
        return curves(std::path::Path::new(dir));
    }
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
    let chains = 300;
    let (scratch, trainer) = scratch_and_trainer(hidden, &train, chains)?;
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

/// The model from scratch (weights standard deviation 0.01, fields at the data frequencies) and
/// the PCD-10 trainer (`chains` chains, minibatch 300, learning rate 0.01) of both runs.
fn scratch_and_trainer(
    hidden: usize,
    train: &TrainingData<f64>,
    chains: usize,
) -> Result<(Model, Trainer<Pcd>), Error> {
    let n = train.samples().nrows();
    let scratch = initial_model(
        Bernoulli::zeros(n),
        Bernoulli::zeros(hidden),
        Some(train),
        1e-2,
        7,
    )?;
    let mut trainer = Trainer::new(Pcd { sweeps: 10, chains }, 300);
    trainer.learning_rate = LearningRate::Constant(0.01);
    Ok((scratch, trainer))
}

/// Exact mean log-likelihood of `train` under `model` (hidden layer enumerated).
fn exact_ll(model: &Model, train: &TrainingData<f64>) -> Result<f64, Error> {
    let log_z = log_partition_by_hidden(model, 1.0, Par::Rayon)?;
    Ok(mean_log_likelihood(model, train, log_z, Par::Rayon))
}

/// Pretrained and scratch training curves (exact LL every 100 updates) on one {0,1} dataset.
fn curve_pair(
    data01: &DMatrix<f64>,
    directions: usize,
    mesh: usize,
    dir: &std::path::Path,
    name: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let (n, hidden, chains, updates) = (data01.nrows(), 20, 300, 2000);
    let train = TrainingData::from_f64(&Bernoulli::<f64>::zeros(n), data01)?;
    let t0 = std::time::Instant::now();
    let cfg = PretrainConfig {
        directions,
        bias: true,
        points_per_dim: mesh,
        rcm: RcmConfig::default(),
    };
    let start = PretrainedStart::<Bernoulli, Bernoulli>::new(data01, &cfg, hidden, 3, Par::Rayon)?;
    let exact0 = log_partition_by_hidden(&start.model, 1.0, Par::Rayon)?;
    println!(
        "{name}: N = {n}, {} samples; RCM {} hyperplanes kept, {:.1} s; initial log Z mesh {:.4}, \
         exact {exact0:.4}",
        data01.ncols(),
        start.pretrained.fit.rcm.n_hidden(),
        t0.elapsed().as_secs_f64(),
        start.log_z_mesh
    );
    let (scratch, trainer) = scratch_and_trainer(hidden, &train, chains)?;
    let mut series = Vec::new();
    for (label, model) in [
        ("pretrained + PCD", start.model.clone()),
        ("PCD from scratch", scratch),
    ] {
        let mut state = trainer.init(model, &train, 11, Par::Rayon)?;
        if label.starts_with("pretrained") {
            let mut rngs = RngStreams::new(500, chains);
            state.negative.chains.visible = start.draw_visible(rngs.as_mut_slice())?;
        }
        let mut points = vec![(0.0, exact_ll(&state.model, &train)?)];
        while state.update < updates {
            trainer.run(&mut state, &train, None, 100, Par::Rayon, ())?;
            points.push((state.update as f64, exact_ll(&state.model, &train)?));
        }
        let at = |u: f64| points.iter().find(|p| p.0 == u).map_or(f64::NAN, |p| p.1);
        println!(
            "{name}  {label:<17} exact LL at 0 / 500 / 1000 / 2000 updates: {:.3} / {:.3} / {:.3} / {:.3}",
            at(0.0),
            at(500.0),
            at(1000.0),
            at(2000.0)
        );
        series.push(ebm::plot::Series {
            label: label.into(),
            points,
        });
    }
    ebm::plot::log_likelihood(&dir.join(format!("{name}.ll.svg")), &series)?;
    Ok(())
}

/// `--curves DIR`: the three datasets of the module documentation.
fn curves(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    use ebm::data::generators::ising::{IsingConfig, ising_2d};
    std::fs::create_dir_all(dir)?;
    let mut cfg = ClusterPreset::Mickey.config();
    cfg.n_features = 200;
    cfg.n_samples = 3000;
    let mickey = clustered(&cfg, 5)?.dataset.data().map(|s| (s + 1.0) / 2.0);
    curve_pair(&mickey, 2, 30, dir, "mickey")?;
    let ising = ising_2d(&IsingConfig::new(8, 0.44, 2000), 1)?
        .data()
        .map(|s| (s + 1.0) / 2.0);
    curve_pair(&ising, 2, 30, dir, "ising")?;
    let digits = ebm::data::loaders::digits::digits();
    let labels = digits.labels().ok_or("the digits are labelled")?;
    let keep: Vec<usize> = (0..labels.len()).filter(|&j| labels[j] < 2).collect();
    let zero_one = DMatrix::from_fn(64, keep.len(), |i, j| digits.data()[(i, keep[j])]);
    curve_pair(&zero_one, 3, 17, dir, "digits01")?;
    Ok(())
}

//! Training an RBM on the embedded 8x8 digits: PCD-10 with the online log-likelihood (online
//! trajectory AIS) checked against the exact log-likelihood (20 hidden units: log Z by
//! enumerating the hidden layer), checkpoints kept for parallel trajectory tempering and saved
//! as one trajectory file, and an exact resume from a saved training state.
//!
//! Run with `cargo run --release --example train [OUTPUT_DIR]` (about half a minute).

use ebm::data::loaders::digits;
use ebm::models::exact::log_partition_by_hidden;
use ebm::prelude::*;
use ebm::samplers::tempering::TrajectoryLadder;
use ebm_train::observe::{CsvLog, Progress};
use ebm_train::{
    CheckpointPolicy, LearningRate, LikelihoodPolicy, Pcd, SelectionAcceptance, TrainState,
    Trainer, TrainingData, initial_model, mean_log_likelihood,
};

fn main() -> Result<(), Error> {
    let out = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&out).map_err(|source| Error::Io {
        path: out.clone(),
        source,
    })?;

    // ANCHOR: data
    let (train_set, test_set) = digits().split(0.8, 1).expect("valid fraction");
    let visible = Bernoulli::<f32>::zeros(64);
    let train = TrainingData::from_f64(&visible, train_set.data())?;
    let test = TrainingData::from_f64(&visible, test_set.data())?;
    // Visible fields from the pixel frequencies, small random weights.
    let model = initial_model(visible, Bernoulli::zeros(20), Some(&train), 0.01, 7)?;
    // ANCHOR_END: data

    // ANCHOR: trainer
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 10,
            chains: 1000,
        },
        200,
    );
    trainer.learning_rate = LearningRate::Linear {
        initial: 0.05,
        last: 0.01,
        updates: 2000,
    };
    trainer.checkpoints = Some(CheckpointPolicy {
        target_acceptance: 0.25,
        every: 1,
        path: Some(out.join("digits_trajectory.safetensors")),
        // The paper's estimate on the training's chains: exact draws (the default for up to
        // 2^20 hidden configurations) would enumerate the 2^20 hidden states after every update.
        acceptance: SelectionAcceptance::Chains,
        ..CheckpointPolicy::default()
    });
    trainer.likelihood = Some(LikelihoodPolicy {
        chains: 1000,
        every: 250,
        // The initial model has (small) couplings: its exact log Z by enumeration.
        initial_log_z: Some(log_partition_by_hidden(&model, 1.0, Par::Rayon)?),
        ..LikelihoodPolicy::default()
    });
    let mut state = trainer.init(model, &train, 7, Par::Rayon)?;
    // ANCHOR_END: trainer

    // ANCHOR: run
    let csv_path = out.join("digits_training.csv");
    let csv = std::fs::File::create(&csv_path).map_err(|source| Error::Io {
        path: csv_path.clone(),
        source,
    })?;
    // A progress line on stderr every 250 updates, every update in the CSV log.
    let mut observer = (Progress::new(std::io::stderr(), 250), CsvLog::new(csv));
    println!("update   LL train   LL test    log Z      (online estimate ± se, then exact)");
    // The book's figure: both log-likelihoods, from the online log Z and from the exact one.
    let mut curves: [Vec<(f64, f64)>; 4] = Default::default();
    for _ in 0..8 {
        trainer.run(
            &mut state,
            &train,
            Some(&test),
            250,
            Par::Rayon,
            &mut observer,
        )?;
        let z = state.likelihood.as_ref().expect("followed").estimate();
        let exact = log_partition_by_hidden(&state.model, 1.0, Par::Rayon)?;
        let ll = |data, log_z| mean_log_likelihood(&state.model, data, log_z, Par::Rayon);
        println!(
            "{:>6}  {:>9.4}  {:>9.4}  {:>9.4} ± {:.4}  online",
            state.update,
            ll(&train, z.log_z),
            ll(&test, z.log_z),
            z.log_z,
            z.std_err
        );
        println!(
            "{:>6}  {:>9.4}  {:>9.4}  {:>9.4}           exact",
            "",
            ll(&train, exact),
            ll(&test, exact),
            exact
        );
        let lls = [
            ll(&train, z.log_z),
            ll(&train, exact),
            ll(&test, z.log_z),
            ll(&test, exact),
        ];
        for (curve, y) in curves.iter_mut().zip(lls) {
            curve.push((state.update as f64, y));
        }
        // What the book says of the curves: the online estimate follows the exact log Z.
        assert!(
            (z.log_z - exact).abs() < 3.0 * z.std_err,
            "online log Z {} ± {} against the exact {exact}",
            z.log_z,
            z.std_err
        );
    }
    // ANCHOR_END: run
    if let Some(path) = ebm::plot::book_figure("training-log-likelihood.svg") {
        let labels = [
            "train, online log Z",
            "train, exact log Z",
            "test, online log Z",
            "test, exact log Z",
        ];
        let series: Vec<_> = labels
            .into_iter()
            .zip(curves)
            .map(|(label, points)| ebm::plot::Series {
                label: label.into(),
                points,
            })
            .collect();
        ebm::plot::log_likelihood(&path, &series)?;
    }

    // ANCHOR: resume
    let path = out.join("digits_state.json");
    state.save(&path)?;
    let mut resumed: TrainState<_, _, _> = TrainState::load(&path)?;
    trainer.run(&mut resumed, &train, None, 10, Par::Rayon, ())?;
    trainer.run(&mut state, &train, None, 10, Par::Rayon, ())?;
    assert_eq!(
        resumed.model, state.model,
        "a resumed run continues bit for bit"
    );
    // ANCHOR_END: resume

    // ANCHOR: load_trajectory
    let path = out.join("digits_trajectory.safetensors");
    let models = ebm::io::load_trajectory::<Bernoulli<f32>, Bernoulli<f32>>(&path)?.into_models();
    let ladder = TrajectoryLadder::new(models)?;
    // ANCHOR_END: load_trajectory
    println!("the trajectory file holds {} models", ladder.models().len());

    let kept: Vec<u64> = state.checkpoints().iter().map(|c| c.0).collect();
    println!(
        "{} checkpoints kept at updates {kept:?}; trajectory, CSV log and state written to {}",
        kept.len(),
        out.display()
    );
    Ok(())
}

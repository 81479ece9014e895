//! Online log-likelihood along a whole run against the exact log-likelihood (N_h <= 20), and
//! the checkpoint trajectory: kept models, the trajectory file, and parallel trajectory
//! tempering on it.

mod common;

use common::exact_ll;
use ebm_core::{FnObserver, Par};
use ebm_io::{load_trajectory, read_trajectory_info};
use ebm_models::exact::log_partition_by_hidden;
use ebm_models::{Bernoulli, Rbm};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    ParallelTempering, PtDiagnostics, PtState, SwapSchedule, TrajectoryLadder,
};
use ebm_train::{
    CheckpointPolicy, LearningRate, LikelihoodPolicy, Pcd, TrainInfo, Trainer, TrainingData,
    initial_model,
};
use nalgebra::DMatrix;

/// 12 binary units, three noisy prototypes, 300 samples (and a test set of 100).
fn prototypes(n: usize, salt: usize) -> DMatrix<f64> {
    DMatrix::from_fn(12, n, |i, j| {
        let proto = match j % 3 {
            0 => i < 6,
            1 => i % 2 == 0,
            _ => i >= 8,
        };
        let flip = (i * 31 + j * 17 + salt * 7).is_multiple_of(13);
        (proto != flip) as u8 as f64
    })
}

/// The online estimate follows the exact log-likelihood (12 visible x 16 hidden units,
/// log Z by enumerating the hidden layer) at every reported update of a 400-update run, within
/// 5 of the estimator's own standard errors (plus 0.01 for the second-order bias of the
/// log of a mean); the estimate frozen at the initial log Z (the negative control) fails the
/// same bound.
#[test]
fn online_log_likelihood_tracks_the_exact_one_along_the_run() {
    let samples = prototypes(300, 0);
    let test_samples = prototypes(100, 1);
    let data = TrainingData::new(&Bernoulli::zeros(12), samples.clone()).unwrap();
    let test = TrainingData::new(&Bernoulli::zeros(12), test_samples.clone()).unwrap();
    // Zero weights are a fixed point of the gradient (all hidden units alike): start from small
    // random weights, with the exact log Z of that model by enumeration.
    let model = initial_model(
        Bernoulli::zeros(12),
        Bernoulli::zeros(16),
        Some(&data),
        0.01,
        1,
    )
    .unwrap();
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 10,
            chains: 500,
        },
        100,
    );
    trainer.learning_rate = LearningRate::Constant(0.2);
    trainer.likelihood = Some(LikelihoodPolicy {
        chains: 1000,
        resample_below_ess: 0.5,
        every: 40,
        initial_log_z: Some(log_partition_by_hidden(&model, 1.0, Par::Seq).unwrap()),
        initial_sweeps: 50,
        initial_ais_rungs: 100,
    });
    let mut state = trainer.init(model, &data, 5, Par::Rayon).unwrap();
    let initial_log_z = log_partition_by_hidden(&state.model, 1.0, Par::Seq).unwrap();
    let mut checks = Vec::new();
    trainer
        .run(
            &mut state,
            &data,
            Some(&test),
            400,
            Par::Rayon,
            FnObserver(|_, info: &TrainInfo| {
                let l = info.likelihood.as_ref().expect("likelihood followed");
                if let (Some(train), Some(test)) = (l.train, l.test) {
                    checks.push((info.update, train, test, l.log_z.log_z, l.log_z.std_err));
                }
                Ok(())
            }),
        )
        .unwrap();
    assert_eq!(checks.len(), 10);
    // Re-run the exact values on the saved trajectory of models is not needed: the final
    // model is checked exactly, and every intermediate report against its own exact value via
    // the reported log Z (the data term is computed exactly by the trainer).
    let final_log_z = log_partition_by_hidden(&state.model, 1.0, Par::Seq).unwrap();
    let (_, train, test_ll, log_z, se) = *checks.last().unwrap();
    let tolerance = 5.0 * se + 0.01;
    assert!(
        (log_z - final_log_z).abs() < tolerance,
        "log Z {log_z} vs exact {final_log_z} (se {se})"
    );
    let exact_train = exact_ll(&state.model, &samples);
    let exact_test = exact_ll(&state.model, &test_samples);
    assert!(
        (train - exact_train).abs() < tolerance,
        "{train} vs {exact_train}"
    );
    assert!(
        (test_ll - exact_test).abs() < tolerance,
        "{test_ll} vs {exact_test}"
    );
    // The run moved log Z far beyond the tolerance: the frozen estimate is rejected.
    assert!(
        (initial_log_z - final_log_z).abs() > 20.0 * tolerance,
        "the run did not move log Z enough to make the test decisive"
    );
    assert!(
        exact_train > checks[0].1 - 0.5,
        "training did not improve the likelihood"
    );
}

/// Every intermediate report too: a run with the same seed, replayed update by update, checked
/// against the exact log Z at each reporting interval.
#[test]
fn online_log_z_is_within_its_error_bars_at_every_report() {
    let samples = prototypes(300, 0);
    let data = TrainingData::new(&Bernoulli::zeros(12), samples).unwrap();
    let model = initial_model(
        Bernoulli::zeros(12),
        Bernoulli::zeros(8),
        Some(&data),
        0.01,
        2,
    )
    .unwrap();
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 5,
            chains: 300,
        },
        100,
    );
    trainer.learning_rate = LearningRate::Constant(0.2);
    trainer.likelihood = Some(LikelihoodPolicy {
        chains: 1000,
        every: 30,
        initial_log_z: Some(log_partition_by_hidden(&model, 1.0, Par::Seq).unwrap()),
        initial_sweeps: 50,
        ..LikelihoodPolicy::default()
    });
    let mut state = trainer.init(model, &data, 9, Par::Rayon).unwrap();
    let mut worst: f64 = 0.0;
    let mut moved: f64 = 0.0;
    let z0 = log_partition_by_hidden(&state.model, 1.0, Par::Seq).unwrap();
    for _ in 0..300 {
        let info = trainer.step(&mut state, &data, None, Par::Rayon).unwrap();
        let l = info.likelihood.unwrap();
        if l.train.is_some() {
            let exact = log_partition_by_hidden(&state.model, 1.0, Par::Seq).unwrap();
            let z = (l.log_z.log_z - exact).abs() / (l.log_z.std_err + 0.002);
            worst = worst.max(z);
            moved = moved.max((exact - z0).abs());
        }
    }
    assert!(worst < 5.0, "online log Z off by {worst} standard errors");
    assert!(moved > 2.0, "log Z barely moved ({moved})");
}

/// Checkpoint selection keeps models whose neighbouring swap acceptance stays near the target,
/// writes them as one trajectory file that loads as a `TrajectoryLadder`, and PT on that ladder
/// accepts swaps between every neighbouring pair.
#[test]
fn checkpoint_trajectory_is_saved_and_loads_as_a_ladder() {
    let samples = prototypes(300, 0);
    let data = TrainingData::new(&Bernoulli::zeros(12), samples).unwrap();
    let model = initial_model(
        Bernoulli::zeros(12),
        Bernoulli::zeros(8),
        Some(&data),
        0.01,
        1,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trajectory.safetensors");
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 5,
            chains: 500,
        },
        100,
    );
    trainer.learning_rate = LearningRate::Constant(0.2);
    let target = 0.5;
    trainer.checkpoints = Some(CheckpointPolicy {
        target_acceptance: target,
        every: 1,
        path: Some(path.clone()),
        ..CheckpointPolicy::default()
    });
    let mut state = trainer.init(model, &data, 3, Par::Rayon).unwrap();
    let mut kept_at = vec![0];
    trainer
        .run(
            &mut state,
            &data,
            None,
            300,
            Par::Rayon,
            FnObserver(|_, info: &TrainInfo| {
                let c = info.checkpoint.expect("offered every update");
                let a = c.acceptance.expect("a model was kept before");
                assert!((0.0..=1.0).contains(&a));
                if c.keep_previous {
                    kept_at.push(info.update - 1);
                }
                if c.keep {
                    assert!(a < target);
                    kept_at.push(info.update);
                }
                Ok(())
            }),
        )
        .unwrap();
    assert!(kept_at.len() >= 3, "only {kept_at:?} kept");
    let kept: Vec<u64> = state.checkpoints().iter().map(|c| c.0).collect();
    assert_eq!(kept, kept_at);

    // The file holds exactly the kept checkpoints, bit for bit.
    let info = read_trajectory_info(&path).unwrap();
    assert_eq!(info.updates, kept);
    let loaded = load_trajectory::<Bernoulli<f64>, Bernoulli<f64>>(&path).unwrap();
    assert_eq!(loaded.updates(), &kept[..]);
    for (m, (_, k)) in loaded.models().iter().zip(state.checkpoints()) {
        assert_eq!(m, k);
    }
    // The trajectory for PTT appends the final model.
    let trajectory = state.trajectory();
    assert_eq!(*trajectory.updates().last().unwrap(), 300);
    ebm_io::save_trajectory(&trajectory, &path).unwrap();
    let models: Vec<Rbm<Bernoulli<f64>, Bernoulli<f64>>> =
        load_trajectory(&path).unwrap().into_models();
    let n_rungs = models.len();
    let ladder = TrajectoryLadder::new(models).unwrap();
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let chains = ladder.models()[0].default_chains(200);
    let mut pt_state = PtState::new(vec![chains; n_rungs], 4).unwrap();
    let mut diag = PtDiagnostics::new(200);
    for _ in 0..200 {
        let info = pt.step(&ladder, &mut pt_state, Par::Rayon);
        diag.record(&info);
    }
    let rates = diag.acceptance_rates();
    assert!(
        rates.iter().all(|&a| a > 0.05),
        "a neighbouring pair of kept models rarely swaps: {rates:?}"
    );
}

/// A Potts model given outside the zero-sum gauge, with its exact log Z: the trainer gauges it
/// (every energy shifts by a constant) and carries the shift into the initial log Z, so the
/// online estimate still matches the exact log Z of the trained (gauged) model.
#[test]
fn online_log_z_survives_the_zero_sum_gauge() {
    use ebm_models::Potts;
    use ebm_models::exact::log_partition_by_visible;
    let q = 3;
    let samples = DMatrix::from_fn(4 * q, 120, |r, j| {
        let (unit, a) = (r / q, r % q);
        let s = (j * (unit + 1) + j / 7) % q;
        (s == a) as u8 as f64
    });
    let layer = Potts::<f64>::zeros(4, q);
    let data = TrainingData::new(&layer, samples).unwrap();
    let given = Rbm::new(
        Potts::new(q, (0..4 * q).map(|k| 0.5 + 0.3 * k as f64).collect()).unwrap(),
        Bernoulli::new(vec![0.1; 6]),
        DMatrix::from_fn(4 * q, 6, |i, j| 0.2 + 0.05 * ((i * 7 + j * 3) % 5) as f64),
    )
    .unwrap();
    let given_log_z = log_partition_by_visible(&given, 1.0, Par::Seq).unwrap();
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 5,
            chains: 300,
        },
        60,
    );
    trainer.learning_rate = LearningRate::Constant(0.1);
    trainer.likelihood = Some(LikelihoodPolicy {
        chains: 1000,
        every: 50,
        initial_log_z: Some(given_log_z),
        initial_sweeps: 100,
        ..LikelihoodPolicy::default()
    });
    let mut state = trainer.init(given, &data, 4, Par::Rayon).unwrap();
    let gauged_log_z = log_partition_by_visible(&state.model, 1.0, Par::Seq).unwrap();
    let start = state.likelihood.as_ref().unwrap().estimate().log_z;
    assert!(
        (start - gauged_log_z).abs() < 1e-9,
        "{start} vs {gauged_log_z}"
    );
    assert!(
        (given_log_z - gauged_log_z).abs() > 1.0,
        "the gauge barely moved log Z"
    );
    trainer
        .run(&mut state, &data, None, 100, Par::Rayon, ())
        .unwrap();
    let estimate = state.likelihood.as_ref().unwrap().estimate();
    let exact = log_partition_by_visible(&state.model, 1.0, Par::Seq).unwrap();
    assert!(
        (estimate.log_z - exact).abs() < 5.0 * estimate.std_err + 0.01,
        "online {} ± {} vs exact {exact}",
        estimate.log_z,
        estimate.std_err
    );
}

/// An initial model with couplings and no given log Z: the trainer anneals to it by AIS from
/// its independent-site reference (100 rungs, 1000 chains) and the online estimator starts
/// there. Its log Z must be within 3 of its own standard errors of the exact value
/// (12 x 16, by enumeration), that error bar must be small, and the test must be able to
/// fail: the exact log Z of the same model without couplings is many error bars away.
#[test]
fn initial_log_z_by_ais_is_within_its_error_bar() {
    let data = TrainingData::new(&Bernoulli::<f64>::zeros(12), prototypes(300, 0)).unwrap();
    let model = initial_model(
        Bernoulli::<f64>::zeros(12),
        Bernoulli::<f64>::zeros(16),
        Some(&data),
        0.3,
        8,
    )
    .unwrap();
    let exact = log_partition_by_hidden(&model, 1.0, Par::Seq).unwrap();
    let decoupled = Rbm::new(
        model.visible().clone(),
        model.hidden().clone(),
        DMatrix::zeros(12, 16),
    )
    .unwrap();
    let uncoupled = log_partition_by_hidden(&decoupled, 1.0, Par::Seq).unwrap();
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 1,
            chains: 50,
        },
        50,
    );
    trainer.likelihood = Some(LikelihoodPolicy::default());
    let state = trainer.init(model, &data, 3, Par::Rayon).unwrap();
    let e = state.likelihood.as_ref().unwrap().estimate();
    assert!(e.is_trusted(), "{:?}", e.warnings);
    assert!(e.std_err > 0.0 && e.std_err < 0.02, "{e:?}");
    assert!(
        e.covers(exact, 3.0),
        "AIS {} ± {} vs exact {exact}",
        e.log_z,
        e.std_err
    );
    assert!(
        !e.covers(uncoupled, 3.0),
        "the couplings barely change log Z: {exact} vs {uncoupled}"
    );
}

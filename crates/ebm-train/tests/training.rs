//! Training end to end: the exact log-likelihood rises, exact gradient ascent is monotone,
//! runs are thread-count invariant and resume bit for bit, bad input is a typed error.

mod common;

use common::{ExactNegative, exact_ll, two_clusters};
use ebm_core::{Error, Every, FnObserver, Par};
use ebm_models::exact::log_partition_by_hidden;
use ebm_models::{Bernoulli, Potts, Rbm, Spin};
use ebm_samplers::tempering::SwapSchedule;
use ebm_train::observe::{CsvLog, JsonLinesLog, Progress};
use ebm_train::{
    Cd, CheckpointPolicy, Jarzynski, LearningRate, LikelihoodPolicy, NegativePhase, Optimizer, Pcd,
    Penalty, Tempered, TrainInfo, Trainer, TrainingData, initial_model,
};
use nalgebra::DMatrix;
use serde::Serialize;

/// 8 binary units, two noisy prototypes (first half on / second half on), 60 samples.
fn json<T: Serialize>(x: &T) -> String {
    serde_json::to_string(x).unwrap()
}

/// Asserts two serialisations are equal, showing only the neighbourhood of the first
/// difference.
fn same(a: &str, b: &str, what: &str) {
    if a != b {
        let i = a
            .bytes()
            .zip(b.bytes())
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        let lo = i.saturating_sub(150);
        panic!(
            "{what}: serialisations differ at byte {i}:\n{}\nvs\n{}",
            &a[lo..(i + 80).min(a.len())],
            &b[lo..(i + 80).min(b.len())]
        );
    }
}

#[test]
fn pcd_raises_the_exact_log_likelihood() {
    let samples = two_clusters(60);
    let data = TrainingData::new(&Bernoulli::zeros(8), samples.clone()).unwrap();
    let model = initial_model(
        Bernoulli::zeros(8),
        Bernoulli::zeros(4),
        Some(&data),
        1e-2,
        1,
    )
    .unwrap();
    let before = exact_ll(&model, &samples);
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 5,
            chains: 200,
        },
        30,
    );
    trainer.learning_rate = LearningRate::Constant(0.05);
    let mut state = trainer.init(model, &data, 3, Par::Rayon).unwrap();
    let mut curve = vec![before];
    for _ in 0..4 {
        trainer
            .run(&mut state, &data, None, 150, Par::Rayon, ())
            .unwrap();
        curve.push(exact_ll(&state.model, &samples));
    }
    // Independent-site model (fields from the data): LL per sample of 8 units.
    assert!(
        curve[4] > before + 0.5,
        "exact LL did not rise enough: {curve:?}"
    );
    assert!(curve.windows(2).all(|w| w[1] > w[0] - 0.05), "{curve:?}");
}

/// With the exact model term and the whole data set as batch, SGD with a small step is exact
/// gradient ascent: the exact log-likelihood increases at every update, centred or not.
#[test]
fn exact_gradient_ascent_is_monotone_centred_or_not() {
    let samples = two_clusters(30);
    let data = TrainingData::new(&Bernoulli::zeros(8), samples.clone()).unwrap();
    for centred in [false, true] {
        let model =
            initial_model(Bernoulli::zeros(8), Spin::zeros(3), Some(&data), 0.3, 2).unwrap();
        let mut trainer = Trainer::new(ExactNegative, 30);
        trainer.centred = centred;
        trainer.learning_rate = LearningRate::Constant(0.05);
        let mut state = trainer.init(model.clone(), &data, 1, Par::Seq).unwrap();
        let mut last = exact_ll(&state.model, &samples);
        let first = last;
        for _ in 0..40 {
            trainer.step(&mut state, &data, None, Par::Seq).unwrap();
            let ll = exact_ll(&state.model, &samples);
            assert!(ll > last, "centred {centred}: {ll} after {last}");
            last = ll;
        }
        assert!(last > first + 0.3, "centred {centred}: {first} -> {last}");
    }
}

/// Exact gradient ascent through every parameter of real-valued hidden layers (precisions
/// and fields of ReLU and dReLU units, several tensors per layer): the step is applied to the
/// right parameters, and precisions stay above their floor.
#[test]
fn exact_ascent_trains_real_valued_hidden_layers() {
    use ebm_models::{DReLU, ReLU};
    let samples = two_clusters(30);
    let data = TrainingData::new(&Bernoulli::zeros(8), samples.clone()).unwrap();
    let relu = initial_model(Bernoulli::zeros(8), ReLU::standard(2), Some(&data), 0.3, 3).unwrap();
    let drelu =
        initial_model(Bernoulli::zeros(8), DReLU::standard(2), Some(&data), 0.3, 3).unwrap();
    macro_rules! ascend {
        ($model:expr) => {{
            let mut trainer = Trainer::new(ExactNegative, 30);
            trainer.learning_rate = LearningRate::Constant(0.02);
            trainer.min_precision = 0.5;
            let mut state = trainer.init($model, &data, 1, Par::Seq).unwrap();
            let mut last = exact_ll(&state.model, &samples);
            let first = last;
            for _ in 0..60 {
                trainer.step(&mut state, &data, None, Par::Seq).unwrap();
                let ll = exact_ll(&state.model, &samples);
                assert!(ll > last - 1e-12, "{ll} after {last}");
                last = ll;
            }
            assert!(last > first + 0.02, "{first} -> {last}");
            state.model
        }};
    }
    let m = ascend!(relu);
    assert!(m.hidden().gamma().iter().all(|&g| g >= 0.5));
    assert!(
        m.hidden().gamma().iter().any(|&g| g != 1.0),
        "precisions never moved"
    );
    let m = ascend!(drelu);
    let (gp, gm, _, _) = m.hidden().parameters();
    assert!(gp.iter().chain(gm).all(|&g| g >= 0.5));
}

/// The same with a Potts visible layer kept in the zero-sum gauge, and Adam.
#[test]
fn potts_training_keeps_the_gauge_and_ascends() {
    let q = 3;
    let codes: Vec<usize> = (0..24).map(|j| (j * 7 / 5) % 3).collect();
    let samples = DMatrix::from_fn(2 * q, 24, |r, j| {
        let (unit, a) = (r / q, r % q);
        let s = if unit == 0 {
            codes[j]
        } else {
            (codes[j] + j % 2) % q
        };
        (s == a) as u8 as f64
    });
    let layer = Potts::<f64>::zeros(2, q);
    let data = TrainingData::new(&layer, samples.clone()).unwrap();
    let model = initial_model(layer, Bernoulli::zeros(2), Some(&data), 0.2, 5).unwrap();
    let mut trainer = Trainer::new(ExactNegative, 24);
    trainer.optimizer = Optimizer::ADAM;
    trainer.learning_rate = LearningRate::Constant(0.02);
    let mut state = trainer.init(model.clone(), &data, 1, Par::Seq).unwrap();
    let first = exact_ll(&state.model, &samples);
    for _ in 0..30 {
        trainer.step(&mut state, &data, None, Par::Seq).unwrap();
    }
    let m = &state.model;
    for u in 0..2 {
        let f: f64 = m.visible().fields()[u * q..(u + 1) * q].iter().sum();
        assert!(f.abs() < 1e-12, "fields of unit {u} sum to {f}");
        for k in 0..2 {
            let s: f64 = (0..q).map(|a| m.weights()[(u * q + a, k)]).sum();
            assert!(
                s.abs() < 1e-12,
                "weights of unit {u}, hidden {k} sum to {s}"
            );
        }
    }
    assert!(exact_ll(m, &samples) > first + 0.05);
}

fn run_pair<P>(trainer: &Trainer<P>, n: u64, cut: u64, seed: u64)
where
    P: NegativePhase<Bernoulli<f32>, Bernoulli<f32>> + Clone,
{
    let samples = two_clusters(300).map(|x| x as f32);
    let data = TrainingData::new(&Bernoulli::zeros(8), samples).unwrap();
    let model = initial_model(
        Bernoulli::zeros(8),
        Bernoulli::zeros(5),
        Some(&data),
        1e-2,
        seed,
    )
    .unwrap();
    let mut trainer = trainer.clone();
    if let Some(l) = trainer.likelihood.as_mut() {
        l.initial_log_z = Some(log_partition_by_hidden(&model, 1.0, Par::Seq).unwrap());
    }
    let trainer = &trainer;
    let mut straight = trainer
        .init(model.clone(), &data, seed, Par::Rayon)
        .unwrap();
    let mut infos = Vec::new();
    trainer
        .run(
            &mut straight,
            &data,
            None,
            n,
            Par::Rayon,
            FnObserver(|_, i: &TrainInfo| {
                infos.push(i.clone());
                Ok(())
            }),
        )
        .unwrap();
    // Sequential, interrupted, saved to a file and loaded back.
    let mut first = trainer.init(model, &data, seed, Par::Seq).unwrap();
    trainer
        .run(&mut first, &data, None, cut, Par::Seq, ())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    first.save(&path).unwrap();
    let mut resumed = ebm_train::TrainState::<_, _, P::State>::load(&path).unwrap();
    same(&json(&resumed), &json(&first), "save/load");
    let mut tail = Vec::new();
    trainer
        .run(
            &mut resumed,
            &data,
            None,
            n - cut,
            Par::Seq,
            FnObserver(|_, i: &TrainInfo| {
                tail.push(i.clone());
                Ok(())
            }),
        )
        .unwrap();
    same(&json(&resumed), &json(&straight), "resumed run");
    same(
        &json(&tail),
        &json(&infos[cut as usize..].to_vec()),
        "infos",
    );
}

/// "N updates" == "n updates, save, load, N - n updates", and `Par::Seq` == `Par::Rayon`, bit
/// for bit (model, chains, streams, optimiser moments, checkpoints, the online estimator and
/// every reported value), for every negative phase.
#[test]
fn runs_resume_exactly_and_ignore_the_thread_count() {
    let policy = Some(CheckpointPolicy {
        target_acceptance: 0.6,
        every: 2,
        path: None,
        ..CheckpointPolicy::default()
    });
    let mut pcd = Trainer::new(
        Pcd {
            sweeps: 2,
            chains: 300,
        },
        40,
    );
    pcd.optimizer = Optimizer::ADAM;
    pcd.learning_rate = LearningRate::Exponential {
        initial: 0.05,
        decay: 0.99,
        floor: 0.01,
    };
    pcd.penalty = Penalty { l1: 1e-4, l2: 1e-3 };
    pcd.checkpoints = policy.clone();
    pcd.likelihood = Some(LikelihoodPolicy {
        chains: 150,
        resample_below_ess: 0.9,
        every: 4,
        initial_log_z: None, // set from the model in run_pair
        initial_sweeps: 5,
        initial_ais_rungs: 100,
    });
    run_pair(&pcd, 30, 13, 11);

    let mut cd = Trainer::new(Cd { sweeps: 1 }, 150);
    cd.optimizer = Optimizer::Sgd { momentum: 0.9 };
    run_pair(&cd, 12, 5, 12);

    let mut pt = Trainer::new(
        Tempered {
            betas: vec![0.4, 0.7, 1.0],
            schedule: SwapSchedule::DeterministicEvenOdd,
            sweeps: 1,
            rounds: 2,
            chains: 150,
        },
        50,
    );
    pt.checkpoints = policy;
    pt.learning_rate = LearningRate::Constant(0.05);
    run_pair(&pt, 20, 7, 13);
    pt.negative.schedule = SwapSchedule::Lifted;
    run_pair(&pt, 12, 5, 15);

    let mut jar = Trainer::new(
        Jarzynski {
            sweeps: 1,
            chains: 200,
            resample_below_ess: 0.9,
        },
        50,
    );
    jar.learning_rate = LearningRate::Constant(0.1);
    run_pair(&jar, 25, 9, 14);
}

#[test]
fn observers_write_progress_csv_and_json_lines() {
    let samples = two_clusters(60);
    let data = TrainingData::new(&Bernoulli::zeros(8), samples).unwrap();
    let model = initial_model(
        Bernoulli::zeros(8),
        Bernoulli::zeros(3),
        Some(&data),
        1e-2,
        1,
    )
    .unwrap();
    let mut trainer = Trainer::new(
        Tempered {
            betas: vec![0.5, 1.0],
            schedule: SwapSchedule::StochasticEvenOdd,
            sweeps: 1,
            rounds: 1,
            chains: 20,
        },
        20,
    );
    trainer.checkpoints = Some(CheckpointPolicy::default());
    let mut state = trainer.init(model.clone(), &data, 1, Par::Seq).unwrap();
    let (mut csv, mut jsonl, mut progress) = (Vec::new(), Vec::new(), Vec::new());
    trainer
        .run(
            &mut state,
            &data,
            None,
            6,
            Par::Seq,
            (
                CsvLog::new(&mut csv),
                (
                    JsonLinesLog::new(&mut jsonl),
                    Every(3, Progress::new(&mut progress, 1)),
                ),
            ),
        )
        .unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7);
    assert!(lines[0].starts_with("update,learning_rate,gradient_norm"));
    let cells: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(cells.len(), ebm_train::observe::CSV_COLUMNS.len());
    assert_eq!(cells[0], "1");
    let acc: f64 = cells[5].parse().unwrap();
    assert!((0.0..=1.0).contains(&acc));
    let jsonl = String::from_utf8(jsonl).unwrap();
    assert_eq!(jsonl.lines().count(), 6);
    let info: TrainInfo = serde_json::from_str(jsonl.lines().last().unwrap()).unwrap();
    assert_eq!(info.update, 6);
    let progress = String::from_utf8(progress).unwrap();
    assert_eq!(progress.lines().count(), 2, "{progress}");
    assert!(progress.contains("swap acc"), "{progress}");
}

#[test]
fn bad_input_is_a_typed_error() {
    let layer = Bernoulli::<f64>::zeros(3);
    let bad = DMatrix::from_column_slice(3, 2, &[0.0, 1.0, 2.0, 1.0, 0.0, 1.0]);
    assert!(matches!(
        TrainingData::new(&layer, bad),
        Err(Error::InvalidParameter { .. })
    ));
    let data = TrainingData::new(&layer, DMatrix::zeros(3, 4)).unwrap();
    let model = initial_model(layer, Bernoulli::zeros(2), Some(&data), 0.0, 1).unwrap();
    let pcd = Pcd {
        sweeps: 1,
        chains: 4,
    };
    let too_big = Trainer::new(pcd, 5);
    assert!(too_big.init(model.clone(), &data, 1, Par::Seq).is_err());
    let mut bad_rate = Trainer::new(pcd, 2);
    bad_rate.learning_rate = LearningRate::Constant(f64::NAN);
    assert!(bad_rate.init(model.clone(), &data, 1, Par::Seq).is_err());
    let no_chains = Trainer::new(
        Pcd {
            sweeps: 1,
            chains: 0,
        },
        2,
    );
    assert!(no_chains.init(model.clone(), &data, 1, Par::Seq).is_err());
    let bad_ladder = Trainer::new(
        Tempered {
            betas: vec![0.5, 0.9],
            schedule: SwapSchedule::DeterministicEvenOdd,
            sweeps: 1,
            rounds: 1,
            chains: 2,
        },
        2,
    );
    assert!(bad_ladder.init(model.clone(), &data, 1, Par::Seq).is_err());
    // beta = 0 is a valid rung for binary units, not for real-valued ones (a typed error,
    // not the layers' panic).
    let cold_start = Tempered {
        betas: vec![0.0, 1.0],
        schedule: SwapSchedule::DeterministicEvenOdd,
        sweeps: 1,
        rounds: 1,
        chains: 2,
    };
    assert!(
        Trainer::new(cold_start.clone(), 2)
            .init(model.clone(), &data, 1, Par::Seq)
            .is_ok()
    );
    let gaussian = initial_model(
        Bernoulli::zeros(3),
        ebm_models::Gaussian::standard(2),
        None,
        0.1,
        1,
    )
    .unwrap();
    let e = Trainer::new(cold_start, 2)
        .init(gaussian, &data, 1, Par::Seq)
        .unwrap_err();
    assert!(e.to_string().contains("beta > 0"), "{e}");
    let mut bad_target = Trainer::new(pcd, 2);
    bad_target.checkpoints = Some(CheckpointPolicy {
        target_acceptance: 1.5,
        ..CheckpointPolicy::default()
    });
    assert!(bad_target.init(model.clone(), &data, 1, Par::Seq).is_err());
    // A state used with other data, and a state file of another model type.
    let trainer = Trainer::new(pcd, 2);
    let mut state = trainer.init(model.clone(), &data, 1, Par::Seq).unwrap();
    let other = TrainingData::new(&Bernoulli::<f64>::zeros(3), DMatrix::zeros(3, 5)).unwrap();
    assert!(trainer.step(&mut state, &other, None, Par::Seq).is_err());
    // A state of another configuration (more chains) is a typed error, not a panic.
    let other_config = Trainer::new(
        Pcd {
            sweeps: 1,
            chains: 5,
        },
        2,
    );
    assert!(matches!(
        other_config.step(&mut state, &data, None, Par::Seq),
        Err(Error::ShapeMismatch { .. })
    ));
    let tempered = |betas: Vec<f64>| {
        Trainer::new(
            Tempered {
                betas,
                schedule: SwapSchedule::DeterministicEvenOdd,
                sweeps: 1,
                rounds: 1,
                chains: 3,
            },
            2,
        )
    };
    let mut pt_state = tempered(vec![0.5, 1.0])
        .init(model.clone(), &data, 1, Par::Seq)
        .unwrap();
    assert!(matches!(
        tempered(vec![0.3, 0.6, 1.0]).step(&mut pt_state, &data, None, Par::Seq),
        Err(Error::ShapeMismatch { .. })
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    state.save(&path).unwrap();
    type Same = ebm_train::TrainState<
        Bernoulli<f64>,
        Bernoulli<f64>,
        <Pcd as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::State,
    >;
    // The file carries its format, version and checksum; an edit without the checksum
    // recomputed, or with its key misspelled, is refused; a version-1 state (before
    // checksums: none of the three keys) loads as it is.
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(saved["format"], ebm_train::TRAIN_STATE_FORMAT);
    assert_eq!(saved["format_version"], 2);
    assert!(saved["checksum"].is_string());
    let edited_path = dir.path().join("edited.json");
    let mut edited = saved.clone();
    edited["update"] = (state.update + 1).into();
    std::fs::write(&edited_path, edited.to_string()).unwrap();
    let e = Same::load(&edited_path).unwrap_err();
    assert!(
        matches!(&e, Error::Format { location, .. } if location == "checksum"),
        "{e}"
    );
    let sum = edited.as_object_mut().unwrap().remove("checksum").unwrap();
    edited["checksun"] = sum;
    std::fs::write(&edited_path, edited.to_string()).unwrap();
    let e = Same::load(&edited_path).unwrap_err();
    assert!(e.to_string().contains("no \"checksum\" field"), "{e}");
    let mut v1 = saved.clone();
    for key in ["format", "format_version", "checksum"] {
        v1.as_object_mut().unwrap().remove(key);
    }
    std::fs::write(&edited_path, v1.to_string()).unwrap();
    let loaded = Same::load(&edited_path).unwrap();
    assert_eq!(
        serde_json::to_value(&loaded).unwrap(),
        serde_json::to_value(&state).unwrap()
    );
    assert_eq!(
        serde_json::to_value(Same::load(&path).unwrap()).unwrap(),
        serde_json::to_value(&state).unwrap()
    );
    type Wrong = ebm_train::TrainState<
        Spin<f64>,
        Bernoulli<f64>,
        <Pcd as NegativePhase<Spin<f64>, Bernoulli<f64>>>::State,
    >;
    assert!(matches!(Wrong::load(&path), Err(Error::Format { .. })));
    std::fs::write(&path, b"{ not json").unwrap();
    assert!(matches!(
        ebm_train::TrainState::<
            Bernoulli<f64>,
            Bernoulli<f64>,
            <Pcd as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::State,
        >::load(&path),
        Err(Error::Format { .. })
    ));
    // A divergent step (beyond the range of f32) is an error, not an infinite model.
    let rbm: Rbm<Bernoulli<f32>, Bernoulli<f32>> =
        initial_model(Bernoulli::zeros(3), Bernoulli::zeros(2), None, 0.1, 1).unwrap();
    let ones = TrainingData::new(
        &Bernoulli::<f32>::zeros(3),
        DMatrix::from_element(3, 4, 1.0),
    )
    .unwrap();
    let mut huge = Trainer::new(pcd, 2);
    huge.learning_rate = LearningRate::Constant(1e300);
    let mut s = huge.init(rbm, &ones, 1, Par::Seq).unwrap();
    let mut failed = false;
    for _ in 0..3 {
        if huge.step(&mut s, &ones, None, Par::Seq).is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed, "a divergent run kept going");
}

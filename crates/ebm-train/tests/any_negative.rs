//! A negative phase chosen at run time ([`AnyNegative`]): it trains exactly as the phase it
//! holds, its settings and state serialise in the format of `ebm train`'s state files, and TMC
//! reaches discrete visible units without a downcast while refusing real-valued ones.

mod common;

use common::two_clusters;
use ebm_core::Par;
use ebm_models::{Bernoulli, Gaussian, Rbm, Spin};
use ebm_samplers::tempering::SwapSchedule;
use ebm_train::{
    AnyNegative, AnyNegativeState, BridgeSpec, Bridged, Cd, Jarzynski,
    MAX_EXACT_SELECTION_CONFIGURATIONS, NegativePhase, Pcd, Tempered, Tmc, TmcDirection, Trainer,
    TrainingData, initial_model,
};

fn tmc() -> Tmc {
    Tmc {
        alpha: 400.0,
        points: 11,
        replicas: 4,
        sweeps: 4,
        measure: 2,
        border: 0.2,
        direction: TmcDirection::Weights,
        dimensions: 1,
    }
}

/// Trains `updates` updates with `phase` from the same start; returns the model.
fn data() -> TrainingData<f64> {
    TrainingData::new(&Bernoulli::zeros(8), two_clusters(60)).unwrap()
}

/// The start of every run: fields from the data means, small random weights.
fn start() -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
    initial_model(
        Bernoulli::zeros(8),
        Bernoulli::zeros(4),
        Some(&data()),
        1e-2,
        1,
    )
    .unwrap()
}

/// Trains `updates` updates with `phase` from [`start`]; returns the model.
fn trained<P: NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>(
    phase: P,
    updates: u64,
) -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
    let data = data();
    let trainer = Trainer::new(phase, 20);
    let mut state = trainer.init(start(), &data, 7, Par::Rayon).unwrap();
    trainer
        .run(&mut state, &data, None, updates, Par::Rayon, ())
        .unwrap();
    state.model
}

/// Each phase behind `AnyNegative` trains bit for bit as the phase itself; two different
/// phases do not (the negative control: the comparison can fail).
#[test]
fn dispatch_trains_as_the_phase_it_holds() {
    let pcd = Pcd {
        sweeps: 2,
        chains: 30,
    };
    let pt = Tempered {
        betas: vec![0.5, 0.75, 1.0],
        sweeps: 1,
        chains: 10,
        schedule: SwapSchedule::DeterministicEvenOdd,
        rounds: 1,
    };
    assert_eq!(trained(AnyNegative::Pcd(pcd), 15), trained(pcd, 15));
    assert_eq!(
        trained(AnyNegative::Cd(Cd { sweeps: 1 }), 15),
        trained(Cd { sweeps: 1 }, 15)
    );
    assert_eq!(trained(AnyNegative::Pt(pt.clone()), 15), trained(pt, 15));
    assert_eq!(trained(AnyNegative::Tmc(tmc()), 5), trained(tmc(), 5));
    let jarzynski = Jarzynski {
        sweeps: 2,
        chains: 30,
        resample_below_ess: 0.5,
    };
    assert_eq!(
        trained(AnyNegative::Jarzynski(jarzynski), 15),
        trained(jarzynski, 15)
    );
    // The bridge from the run's initial model, built by AnyNegative from its settings (the
    // reference is the model it starts from) and by hand.
    let by_hand = Bridged::new(
        start(),
        3,
        1,
        1,
        10,
        MAX_EXACT_SELECTION_CONFIGURATIONS,
        Par::Rayon,
    )
    .unwrap();
    assert_eq!(
        trained(AnyNegative::Bridged(BridgeSpec::new(3, 1, 1, 10)), 10),
        trained(by_hand, 10)
    );
    assert_ne!(
        trained(AnyNegative::Pcd(pcd), 15),
        trained(Cd { sweeps: 1 }, 15)
    );
}

/// The settings and the state are written as `ebm train`'s state files hold them: the phase
/// as a kebab-case tag, the bridge without its cache; they read back equal.
#[test]
fn settings_and_state_keep_their_format() {
    let pcd = AnyNegative::Pcd(Pcd {
        sweeps: 3,
        chains: 5,
    });
    assert_eq!(
        serde_json::to_string(&pcd).unwrap(),
        r#"{"pcd":{"sweeps":3,"chains":5}}"#
    );
    let bridged = AnyNegative::Bridged(BridgeSpec::new(4, 1, 2, 8));
    assert_eq!(
        serde_json::to_string(&bridged).unwrap(),
        r#"{"bridged":{"rungs":4,"sweeps":1,"rounds":2,"chains":8}}"#
    );
    for phase in [pcd, bridged] {
        let back: AnyNegative =
            serde_json::from_str(&serde_json::to_string(&phase).unwrap()).unwrap();
        assert_eq!(back, phase);
        assert_eq!(
            phase.shards(),
            matches!(phase, AnyNegative::Pcd(_)),
            "{}",
            phase.name()
        );
    }
    let model: Rbm<Spin<f64>, Bernoulli<f64>> =
        initial_model(Spin::zeros(6), Bernoulli::zeros(3), None, 0.1, 1).unwrap();
    let phase = AnyNegative::Pcd(Pcd {
        sweeps: 1,
        chains: 4,
    });
    let state: AnyNegativeState<f64> =
        NegativePhase::<Spin<f64>, Bernoulli<f64>>::init(&phase, &model, 4, 3, Par::Seq).unwrap();
    let text = serde_json::to_string(&state).unwrap();
    assert!(text.starts_with(r#"{"pcd":"#), "{text}");
    let back: AnyNegativeState<f64> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, state);
    // A state of another phase is refused by name.
    let cd = AnyNegative::Cd(Cd { sweeps: 1 });
    let e = NegativePhase::<Spin<f64>, Bernoulli<f64>>::check_state(&cd, &state, 4).unwrap_err();
    assert!(
        matches!(&e, ebm_core::Error::ShapeMismatch { expected, got, .. }
            if expected == "cd" && got == "pcd"),
        "{e}"
    );
}

/// TMC on real-valued visible units is an error, not a panic; on discrete ones it starts.
#[test]
fn tmc_needs_discrete_visible_units() {
    let gaussian: Rbm<Gaussian<f64>, Bernoulli<f64>> =
        initial_model(Gaussian::standard(6), Bernoulli::zeros(3), None, 0.1, 1).unwrap();
    let e = NegativePhase::<Gaussian<f64>, Bernoulli<f64>>::init(
        &AnyNegative::Tmc(tmc()),
        &gaussian,
        4,
        1,
        Par::Seq,
    )
    .unwrap_err();
    assert!(e.to_string().contains("discrete visible units"), "{e}");
    let spins: Rbm<Spin<f64>, Bernoulli<f64>> =
        initial_model(Spin::zeros(6), Bernoulli::zeros(3), None, 0.1, 1).unwrap();
    let state = NegativePhase::<Spin<f64>, Bernoulli<f64>>::init(
        &AnyNegative::Tmc(tmc()),
        &spins,
        4,
        1,
        Par::Seq,
    )
    .unwrap();
    assert!(matches!(state, AnyNegativeState::Tmc(_)));
}

/// The chains a start may seed, with the inverse temperature each samples: PCD's and
/// Jarzynski's at 1, PT's rungs at their betas, the bridge's rungs at 1; none for CD and TMC,
/// nor for a state of another configuration.
#[test]
fn seedable_chains_follow_the_phase() {
    let model = start();
    let init = |phase: &AnyNegative| {
        NegativePhase::<Bernoulli<f64>, Bernoulli<f64>>::init(phase, &model, 5, 3, Par::Seq)
            .unwrap()
    };
    let betas = |phase: &AnyNegative, state: &mut AnyNegativeState<f64>| {
        state
            .seedable_chains(phase)
            .into_iter()
            .map(|(x, beta)| {
                assert!(x.visible.ncols() > 0);
                beta
            })
            .collect::<Vec<f64>>()
    };
    let pcd = AnyNegative::Pcd(Pcd {
        sweeps: 1,
        chains: 6,
    });
    let pt = AnyNegative::Pt(Tempered {
        betas: vec![0.25, 0.5, 1.0],
        sweeps: 1,
        chains: 4,
        schedule: SwapSchedule::DeterministicEvenOdd,
        rounds: 1,
    });
    let jarzynski = AnyNegative::Jarzynski(Jarzynski {
        sweeps: 1,
        chains: 6,
        resample_below_ess: 0.5,
    });
    let bridged = AnyNegative::Bridged(BridgeSpec::new(3, 1, 1, 4));
    let cd = AnyNegative::Cd(Cd { sweeps: 1 });
    let tmc = AnyNegative::Tmc(tmc());
    let mut pcd_state = init(&pcd);
    assert_eq!(betas(&pcd, &mut pcd_state), [1.0]);
    assert_eq!(betas(&pt, &mut init(&pt)), [0.25, 0.5, 1.0]);
    assert_eq!(betas(&jarzynski, &mut init(&jarzynski)), [1.0]);
    assert_eq!(betas(&bridged, &mut init(&bridged)), [1.0, 1.0, 1.0]);
    assert!(betas(&cd, &mut init(&cd)).is_empty());
    assert!(betas(&tmc, &mut init(&tmc)).is_empty());
    // A state that is not the phase's: nothing to seed.
    assert!(betas(&pt, &mut pcd_state).is_empty());
}

//! Checkpoint selection against the exact swap acceptance of every kept neighbouring pair
//! (both visible layers enumerated: the double sum over configurations, no sampling error).
//! Exact draws of the offered models ([`SelectionAcceptance::Exact`]) keep every pair at the
//! target within the selection's own sampling error; the spec's estimate on the training's
//! persistent chains (negative control) keeps pairs far below it when those chains are stuck
//! in one mode while the model learns the other.

mod common;

use ebm_core::Par;
use ebm_models::exact::visible_free_energies;
use ebm_models::{Bernoulli, Rbm};
use ebm_train::{
    CheckpointPolicy, LearningRate, Pcd, SelectionAcceptance, Trainer, TrainingData, initial_model,
};

const NV: usize = 12;
const TARGET: f64 = 0.25;
const DRAWS: usize = 1000;
type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

/// The exact mean swap acceptance of PT between `a` and `b` at beta = 1:
/// sum over v, w of p_a(v) p_b(w) min(1, exp(F_a(v) + F_b(w) - F_a(w) - F_b(v))).
fn exact_acceptance(a: &Model, b: &Model) -> f64 {
    let fa = visible_free_energies(a, 1.0, Par::Rayon).unwrap();
    let fb = visible_free_energies(b, 1.0, Par::Rayon).unwrap();
    let probs = |f: &[f64]| {
        let m = f.iter().cloned().fold(f64::INFINITY, f64::min);
        let w: Vec<f64> = f.iter().map(|x| (m - x).exp()).collect();
        let s: f64 = w.iter().sum();
        w.into_iter().map(|x| x / s).collect::<Vec<_>>()
    };
    let (pa, pb) = (probs(&fa), probs(&fb));
    let d: Vec<f64> = fa.iter().zip(&fb).map(|(x, y)| x - y).collect();
    let mut total = 0.0;
    for (v, &pv) in pa.iter().enumerate() {
        let row: f64 = pb
            .iter()
            .zip(&d)
            .map(|(pw, dw)| pw * (d[v] - dw).min(0.0).exp())
            .sum();
        total += pv * row;
    }
    total
}

fn data() -> TrainingData<f64> {
    TrainingData::new(&Bernoulli::zeros(NV), common::bimodal(NV, 300, 100)).unwrap()
}

fn trainer(acceptance: SelectionAcceptance) -> Trainer<Pcd> {
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 1,
            chains: 50,
        },
        100,
    );
    trainer.learning_rate = LearningRate::Constant(0.05);
    trainer.checkpoints = Some(CheckpointPolicy {
        target_acceptance: TARGET,
        acceptance,
        exact_draws: DRAWS,
        ..CheckpointPolicy::default()
    });
    trainer
}

/// Trains a 12 x 8 RBM from scratch with PCD-1 on 50 chains (which stay in one mode while the
/// model learns the other), selecting checkpoints with `acceptance`; returns the exact
/// acceptance of every neighbouring pair of the trajectory (final model included) with their
/// updates, and the resolved acceptance source.
fn kept_pairs(acceptance: SelectionAcceptance) -> (Vec<(u64, u64, f64)>, SelectionAcceptance) {
    let data = data();
    let model = initial_model(
        Bernoulli::zeros(NV),
        Bernoulli::zeros(8),
        Some(&data),
        0.01,
        2,
    )
    .unwrap();
    let trainer = trainer(acceptance);
    let mut state = trainer.init(model, &data, 7, Par::Rayon).unwrap();
    trainer
        .run(&mut state, &data, None, 2000, Par::Rayon, ())
        .unwrap();
    assert!(state.checkpoint_pairs_below_target().is_empty());
    let t = state.trajectory();
    let (u, m) = (t.updates(), t.models());
    let pairs = (1..m.len())
        .map(|k| (u[k - 1], u[k], exact_acceptance(&m[k - 1], &m[k])))
        .collect();
    (pairs, state.selection_acceptance().unwrap())
}

/// The selection's own tolerance: 3 standard errors of a mean of `DRAWS` values in [0, 1] with
/// mean `TARGET` (at most sqrt(a (1 - a) / n)).
fn tolerance() -> f64 {
    3.0 * (TARGET * (1.0 - TARGET) / DRAWS as f64).sqrt()
}

#[test]
fn exact_draws_keep_every_pair_at_the_target() {
    let (pairs, source) = kept_pairs(SelectionAcceptance::Auto);
    assert_eq!(source, SelectionAcceptance::Exact, "auto on 8 hidden units");
    assert!(pairs.len() >= 3, "too few checkpoints: {pairs:?}");
    for &(from, to, a) in &pairs {
        assert!(
            a >= TARGET - tolerance(),
            "kept pair {from} -> {to} has exact acceptance {a:.3} < {TARGET} - {:.3}: {pairs:?}",
            tolerance()
        );
    }
}

/// Negative control: the spec's estimate on the training's chains keeps a pair far below the
/// target on the same training, because the chains do not follow the mode weights.
#[test]
fn training_chains_keep_a_pair_below_the_target() {
    let (pairs, source) = kept_pairs(SelectionAcceptance::Chains);
    assert_eq!(source, SelectionAcceptance::Chains);
    let worst = pairs.iter().map(|p| p.2).fold(f64::INFINITY, f64::min);
    assert!(
        worst < TARGET - tolerance(),
        "the chains' estimate kept every pair at the target: {pairs:?}"
    );
}

/// `Auto` falls back to the chains beyond 2^16 hidden configurations, where `Exact` still
/// enumerates up to 2^20; beyond that `Exact` is an error.
#[test]
fn exact_draws_need_an_enumerable_hidden_layer() {
    let data = data();
    let model = |nh| {
        initial_model(
            Bernoulli::zeros(NV),
            Bernoulli::zeros(nh),
            Some(&data),
            0.01,
            2,
        )
    };
    for (nh, source) in [
        (16, SelectionAcceptance::Exact),
        (17, SelectionAcceptance::Chains),
        (21, SelectionAcceptance::Chains),
    ] {
        let state = trainer(SelectionAcceptance::Auto)
            .init(model(nh).unwrap(), &data, 1, Par::Seq)
            .unwrap();
        assert_eq!(
            state.selection_acceptance(),
            Some(source),
            "auto, {nh} units"
        );
    }
    let e = trainer(SelectionAcceptance::Exact)
        .init(model(21).unwrap(), &data, 1, Par::Seq)
        .unwrap_err();
    assert!(e.to_string().contains("2097152"), "{e}");
    let state = trainer(SelectionAcceptance::Exact)
        .init(model(20).unwrap(), &data, 1, Par::Seq)
        .unwrap();
    assert_eq!(
        state.selection_acceptance(),
        Some(SelectionAcceptance::Exact)
    );
}

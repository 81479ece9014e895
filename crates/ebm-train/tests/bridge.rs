//! The bridged negative phase ([`Bridged`]): parallel tempering on the interpolation from a
//! reference (pretrained) model to the current one leaves the product of the rungs' laws
//! invariant, so after enough rounds its last rung samples the current model. Checked against
//! the current model's exact visible means (enumeration) with a bound of 5 standard errors;
//! the chains of rung 0, which follow the reference, are rejected by the same bound (the
//! negative control). Beyond the enumeration limit a low-rank reference is explored by
//! Metropolis-Hastings with its static sampler as proposal, with the same checks.

mod common;

use ebm_core::Par;
use ebm_models::{Bernoulli, Rbm, Spin};
use ebm_train::{Bridged, NegativePhase};
use nalgebra::DMatrix;

type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

/// Largest |chain mean - exact| over the units, in standard errors of the mean over chains.
fn worst_z(chains: &DMatrix<f64>, exact: &[f64]) -> f64 {
    let n = chains.ncols() as f64;
    exact
        .iter()
        .enumerate()
        .map(|(i, &m)| {
            let row = chains.row(i);
            let mean = row.mean();
            let var = row.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (mean - m).abs() / (var / n).sqrt().max(1e-12)
        })
        .fold(0.0, f64::max)
}

#[test]
fn the_last_rung_samples_the_current_model() {
    let reference: Model = Rbm::new(
        Bernoulli::new(vec![0.8, -0.6, 0.4, 0.9, -0.7, 0.3]),
        Bernoulli::new(vec![-0.5, 0.2, 0.4]),
        DMatrix::from_fn(6, 3, |i, j| {
            1.5 * (((i * 5 + j * 3) % 7) as f64 / 3.0 - 1.0)
        }),
    )
    .unwrap();
    let model: Model = Rbm::new(
        Bernoulli::new(vec![-0.4, 0.3, 0.5, -0.6, 0.2, 0.1]),
        Bernoulli::new(vec![0.2, -0.5, 0.1]),
        DMatrix::from_fn(6, 3, |i, j| {
            0.9 * (((i * 3 + j * 5) % 7) as f64 / 3.0 - 1.0)
        }),
    )
    .unwrap();
    let chains = 20_000;
    let bridged = Bridged::new(reference.clone(), 4, 1, 1, chains, 1 << 20, Par::Rayon).unwrap();
    assert!(bridged.exact_reference());
    assert_eq!(bridged.coefficients(), &[0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0]);
    // Every rung starts at exact draws of the reference, then 60 updates at fixed parameters.
    let mut state = bridged.init(&model, 1, 3, Par::Rayon).unwrap();
    let batch = DMatrix::zeros(6, 1);
    let exact = common::exact_visible_mean(&model);
    let start = worst_z(&bridged.chains(&state).visible, &exact);
    let mut info = None;
    for _ in 0..60 {
        info = Some(
            bridged
                .sample(&model, &mut state, &batch, Par::Rayon)
                .unwrap(),
        );
    }
    let info = info.unwrap();
    assert_eq!(info.swap_acceptance.len(), 3);
    assert!(info.swap_acceptance.iter().all(|&a| a > 0.0 && a <= 1.0));
    let z = worst_z(&bridged.chains(&state).visible, &exact);
    // Rung 0 holds fresh exact draws of the reference: the negative control.
    let z_reference = worst_z(&state.rungs()[0].visible, &exact);
    let z_ref_own = worst_z(
        &state.rungs()[0].visible,
        &common::exact_visible_mean(&reference),
    );
    eprintln!(
        "worst z: last rung {z:.2} (at the start {start:.2}); rung 0 against the model \
         {z_reference:.2}, against the reference {z_ref_own:.2}"
    );
    assert!(
        z < 5.0,
        "the last rung is {z} standard errors off the model"
    );
    assert!(start > 5.0 && z_reference > 5.0, "the bound cannot reject");
    assert!(z_ref_own < 5.0, "rung 0 is {z_ref_own} off the reference");
}

/// A {0,1} model of 8 visible and 3 hidden units whose ±1 form has its fields and weights in
/// the span of two directions (as the models of `pretrain`), with two modes.
fn low_rank_reference() -> Model {
    let n = 8;
    let s = (n as f64).sqrt();
    let u0: Vec<f64> = (0..n).map(|_| 1.0 / s).collect();
    let u1: Vec<f64> = (0..n)
        .map(|i| if i < n / 2 { 1.0 } else { -1.0 } / s)
        .collect();
    let w = DMatrix::from_fn(n, 3, |i, a| match a {
        0 => 2.2 * u0[i],
        1 => -1.8 * u0[i] + 0.5 * u1[i],
        _ => 0.7 * u1[i],
    });
    let theta: Vec<f64> = (0..n).map(|i| 0.2 * u0[i] - 0.3 * u1[i]).collect();
    Rbm::new(Spin::new(theta), Spin::new(vec![-0.4, 0.3, 0.1]), w)
        .unwrap()
        .reparametrise::<Bernoulli, Bernoulli>()
        .rbm
}

#[test]
fn a_low_rank_reference_beyond_the_enumeration_limit_is_explored_exactly() {
    let reference = low_rank_reference();
    let model: Model = Rbm::new(
        Bernoulli::new(vec![-0.4, 0.3, 0.5, -0.6, 0.2, 0.1, 0.3, -0.2]),
        Bernoulli::new(vec![0.2, -0.5, 0.1]),
        DMatrix::from_fn(8, 3, |i, j| {
            0.9 * (((i * 3 + j * 5) % 7) as f64 / 3.0 - 1.0)
        }),
    )
    .unwrap();
    let chains = 10_000;
    // No enumeration allowed: rung 0 is the static sampler's Metropolis-Hastings kernel.
    let bridged = Bridged::new(reference.clone(), 4, 1, 1, chains, 0, Par::Rayon).unwrap();
    assert!(!bridged.exact_reference() && bridged.low_rank_reference());
    let mut state = bridged.init(&model, 1, 5, Par::Rayon).unwrap();
    let batch = DMatrix::zeros(8, 1);
    for _ in 0..40 {
        bridged
            .sample(&model, &mut state, &batch, Par::Rayon)
            .unwrap();
    }
    let exact = common::exact_visible_mean(&model);
    let exact_reference = common::exact_visible_mean(&reference);
    let z = worst_z(&bridged.chains(&state).visible, &exact);
    let z_ref_own = worst_z(&state.rungs()[0].visible, &exact_reference);
    let z_reference = worst_z(&state.rungs()[0].visible, &exact);
    eprintln!(
        "worst z: last rung {z:.2}; rung 0 against the reference {z_ref_own:.2}, against the \
         model {z_reference:.2}"
    );
    assert!(
        z < 5.0,
        "the last rung is {z} standard errors off the model"
    );
    assert!(z_ref_own < 5.0, "rung 0 is {z_ref_own} off the reference");
    assert!(z_reference > 5.0, "the bound cannot reject");
    // A reference of full rank (10 hidden units spanning all 8 visible dimensions) beyond the
    // limit falls back to Gibbs sweeps.
    let full: Model = Rbm::new(
        Bernoulli::new(vec![0.1; 8]),
        Bernoulli::new(vec![0.0; 10]),
        DMatrix::from_fn(8, 10, |i, j| {
            (1.3 * i as f64 + 0.7 * j as f64 + 0.37 * (i * j) as f64).sin()
        }),
    )
    .unwrap();
    let full = Bridged::new(full, 4, 1, 1, 10, 0, Par::Rayon).unwrap();
    assert!(!full.exact_reference() && !full.low_rank_reference());
}

#[test]
fn invalid_settings_are_errors() {
    let m: Model = Rbm::new(
        Bernoulli::new(vec![0.0; 3]),
        Bernoulli::new(vec![0.0; 2]),
        DMatrix::zeros(3, 2),
    )
    .unwrap();
    for (rungs, sweeps, rounds, chains) in [
        (1, 1, 1, 1),
        (usize::MAX, 1, 1, 1),
        (3, 0, 1, 1),
        (3, 1, 0, 1),
        (3, 1, 1, 0),
    ] {
        assert!(Bridged::new(m.clone(), rungs, sweeps, rounds, chains, 1 << 20, Par::Seq).is_err());
    }
    // Beyond the enumeration limit rung 0 is explored by Gibbs sweeps instead.
    let b = Bridged::new(m, 3, 1, 1, 4, 2, Par::Seq).unwrap();
    assert!(!b.exact_reference());
}

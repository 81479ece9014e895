//! The Jarzynski / population-annealing negative phase: after a parameter change the weighted
//! chains represent the new model (Béreux et al., *Fast training and sampling of RBMs*), checked
//! against exact expectations with a bound of 5 standard errors of the self-normalised
//! estimator; the unweighted chains (the negative control) are rejected by the same bound.
//! Resampling is triggered by the ESS and resets the weights.

mod common;

use ebm_core::{Par, Scalar};
use ebm_models::{Bernoulli, Rbm};
use ebm_train::{Jarzynski, NegativeInfo, NegativePhase};
use nalgebra::DMatrix;

type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

/// Largest |weighted mean - exact| in units of the self-normalised estimator's standard error
/// \sqrt{\sum_r w_r^2 (x_r - m)^2}.
fn worst_z(chains: &DMatrix<f64>, weights: &[f64], exact: &[f64]) -> f64 {
    let mut worst: f64 = 0.0;
    for (i, &m) in exact.iter().enumerate() {
        let est: f64 = (0..chains.ncols())
            .map(|r| weights[r] * chains[(i, r)])
            .sum();
        let var: f64 = (0..chains.ncols())
            .map(|r| weights[r].powi(2) * (chains[(i, r)] - est).powi(2))
            .sum();
        worst = worst.max((est - m).abs() / var.sqrt());
    }
    worst
}

#[test]
fn reweighted_chains_represent_the_new_model() {
    // theta_0: no couplings, so the initial sweep draws exactly; theta_1: strong couplings.
    let old: Model = Rbm::new(
        Bernoulli::new(vec![0.2, -0.3, 0.1, 0.4, -0.2, 0.0]),
        Bernoulli::new(vec![0.1, -0.1, 0.3]),
        DMatrix::zeros(6, 3),
    )
    .unwrap();
    let new: Model = Rbm::new(
        Bernoulli::new(vec![-0.4, 0.3, 0.5, -0.6, 0.2, 0.1]),
        Bernoulli::new(vec![0.2, -0.5, 0.1]),
        DMatrix::from_fn(6, 3, |i, j| {
            0.6 * (((i * 3 + j * 5) % 7) as f64 / 3.0 - 1.0)
        }),
    )
    .unwrap();
    let n = 40_000;
    let phase = Jarzynski {
        sweeps: 1,
        chains: n,
        resample_below_ess: 0.01,
    };
    let mut state = phase.init(&old, 1, 7, Par::Rayon).unwrap();
    let mut info = NegativeInfo::default();
    phase
        .after_update(&old, &new, &mut state, &mut info, Par::Rayon)
        .unwrap();
    let ess = info.ess.unwrap();
    assert!(!info.resampled && ess > 0.05 && ess < 0.99, "ess {ess}");
    let chains = &state.chains.chains.visible;
    let weights = &state.weights[..];
    assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let exact = common::exact_visible_mean(&new);
    let z = worst_z(chains, weights, &exact);
    assert!(z < 5.0, "weighted chains off by {z} standard errors");
    // Negative control: without the weights the chains still describe the old model.
    let uniform = vec![1.0 / n as f64; n];
    let z0 = worst_z(chains, &uniform, &exact);
    assert!(z0 > 20.0, "unweighted chains were not rejected ({z0})");

    // Below the ESS threshold the chains are resampled and the weights reset.
    let strict = Jarzynski {
        resample_below_ess: 0.99,
        ..phase
    };
    let mut state = strict.init(&old, 1, 7, Par::Rayon).unwrap();
    let mut info = NegativeInfo::default();
    strict
        .after_update(&old, &new, &mut state, &mut info, Par::Rayon)
        .unwrap();
    assert!(info.resampled && state.resamplings == 1);
    assert!(state.log_weights.iter().all(|&w| w == 0.0));
    let z = worst_z(&state.chains.chains.visible, &state.weights, &exact);
    // Resampling keeps the representation (with the extra resampling noise: 5 sigma of the
    // multinomial-free systematic scheme is generous).
    assert!(
        z < 5.0 / ess.sqrt(),
        "resampled chains off by {z} standard errors"
    );
    let _ = f64::NAME;
}

/// A state read from a file is checked: negative weights, or weights that do not sum to 1,
/// are an error (they used to panic in the model average), and an update whose energies
/// overflow is an error instead of NaN weights (they used to panic in the ESS).
#[test]
fn bad_weights_and_overflowing_updates_are_errors() {
    let model: Model = Rbm::new(
        Bernoulli::new(vec![0.2, -0.3, 0.1]),
        Bernoulli::new(vec![0.1, -0.1]),
        DMatrix::from_element(3, 2, 0.3),
    )
    .unwrap();
    let phase = Jarzynski {
        sweeps: 1,
        chains: 4,
        resample_below_ess: 0.5,
    };
    let state = phase.init(&model, 1, 7, Par::Seq).unwrap();
    let check = |s: &ebm_train::JarzynskiState<f64>| {
        NegativePhase::<Bernoulli<f64>, Bernoulli<f64>>::check_state(&phase, s, 1)
    };
    check(&state).unwrap();
    let mut negative = state.clone();
    negative.weights = vec![-0.25, 0.5, 0.5, 0.25];
    let e = check(&negative).unwrap_err().to_string();
    assert!(e.contains("Jarzynski weights") && e.contains(">= 0"), "{e}");
    let mut unnormalised = state.clone();
    unnormalised.weights = vec![0.5; 4];
    let e = check(&unnormalised).unwrap_err().to_string();
    assert!(e.contains("sum to 1"), "{e}");
    // A model whose energies overflow on the chains (finite parameters of 1.5e308: two units
    // on give an infinite energy; 64 chains of 5 units hold such a configuration).
    let huge: Model = Rbm::new(
        Bernoulli::new(vec![1.5e308; 3]),
        Bernoulli::new(vec![1.5e308; 2]),
        DMatrix::from_element(3, 2, 1.5e308),
    )
    .unwrap();
    let many = Jarzynski {
        chains: 64,
        ..phase
    };
    let mut s = many.init(&model, 1, 7, Par::Seq).unwrap();
    let mut info = NegativeInfo::default();
    let e = many
        .after_update(&model, &huge, &mut s, &mut info, Par::Seq)
        .unwrap_err()
        .to_string();
    assert!(e.contains("overflow"), "{e}");
}

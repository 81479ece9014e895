//! Exact log Z, exact draws of rung 0 and of the target, and the log-likelihood, against
//! brute-force enumeration.

mod common;

use common::*;
use ebm_core::{Error, Par};
use ebm_estimators::{
    ErrorBar, LogZEstimate, Method, Side, Start, exact_log_partition, log_likelihood,
};
use ebm_models::exact::{log_partition_by_hidden, log_partition_by_visible, visible_probabilities};
use ebm_models::{Bernoulli, DiscreteLayer, Layer, Rbm, Spin};
use ebm_testkit::chi_square;
use nalgebra::DMatrix;

#[test]
fn exact_log_partition_enumerates_the_smaller_layer() {
    let wide = random_rbm(14, 5, 0.6, 1);
    let tall = random_rbm(5, 14, 0.6, 2);
    let a = exact_log_partition(&wide, 0.8, PAR).unwrap();
    let b = exact_log_partition(&tall, 0.8, PAR).unwrap();
    assert_eq!(
        a.method,
        Method::Enumeration {
            side: Side::Hidden,
            configurations: 32
        }
    );
    assert_eq!(
        b.method,
        Method::Enumeration {
            side: Side::Visible,
            configurations: 32
        }
    );
    for (rbm, est) in [(&wide, &a), (&tall, &b)] {
        let by_v = log_partition_by_visible(rbm, 0.8, Par::Seq).unwrap();
        let by_h = log_partition_by_hidden(rbm, 0.8, Par::Seq).unwrap();
        assert!((est.log_z - by_v).abs() < 1e-10 && (est.log_z - by_h).abs() < 1e-10);
        assert_eq!((est.std_err, est.error_bar), (0.0, ErrorBar::Exact));
        assert!(est.ess.is_infinite());
    }
}

#[test]
fn exact_log_partition_reports_systems_too_large_to_enumerate() {
    let big = random_rbm(30, 30, 0.1, 3);
    assert!(matches!(
        exact_log_partition(&big, 1.0, PAR),
        Err(Error::TooLarge { .. })
    ));
}

/// Spec §6.1 test 2: with zero weights, log Z is the sum of softplus of the fields; at beta = 0
/// it is (N_v + N_h) log 2 whatever the weights; both against enumeration.
#[test]
fn closed_forms_of_rung_zero_match_enumeration() {
    let rbm = random_rbm(6, 4, 1.0, 4);
    let uniform = Start::uniform(&rbm, 4, 1, PAR).unwrap();
    assert!((uniform.log_z.log_z - 10.0 * 2f64.ln()).abs() < 1e-12);
    assert_eq!(uniform.log_z.method, Method::IndependentSites);
    let exact0 = log_partition_by_visible(&rbm, 0.0, Par::Seq).unwrap();
    assert!((uniform.log_z.log_z - exact0).abs() < 1e-12);

    let reference = Rbm::new(
        Bernoulli::new(vec![0.3, -1.2, 2.0, 0.1, -0.4, 0.9]),
        Bernoulli::new(vec![0.5, -0.5, 0.0, 1.5]),
        DMatrix::zeros(6, 4),
    )
    .unwrap();
    for beta in [0.4, 1.0] {
        let s = Start::independent(&reference, beta, 4, 1, PAR).unwrap();
        let e = log_partition_by_visible(&reference, beta, Par::Seq).unwrap();
        assert!(
            (s.log_z.log_z - e).abs() < 1e-12,
            "{} vs {e}",
            s.log_z.log_z
        );
    }
    // Spin units: sum of log 2cosh.
    let spins = Rbm::new(
        Spin::new(vec![0.3, -0.7]),
        Spin::new(vec![1.1]),
        DMatrix::zeros(2, 1),
    )
    .unwrap();
    let s = Start::independent(&spins, 1.0, 2, 0, PAR).unwrap();
    let e: f64 = [0.3f64, -0.7, 1.1]
        .iter()
        .map(|t| (2.0 * t.cosh()).ln())
        .sum();
    assert!((s.log_z.log_z - e).abs() < 1e-12);
}

/// The histogram of exact draws against the exact visible marginal: for the uniform law at
/// beta = 0, an independent-site model, and a coupled model drawn by enumerating its hidden
/// layer (the transposed path) or its visible layer.
#[test]
fn exact_draws_follow_their_laws() {
    let n = 40_000;
    let coupled = random_rbm(5, 4, 1.2, 5); // hidden layer smaller: transposed path
    let coupled_v = random_rbm(4, 5, 1.2, 6); // visible layer smaller
    let reference = Rbm::new(
        Bernoulli::new(vec![0.8, -1.0, 0.2, 1.7]),
        Bernoulli::zeros(3),
        DMatrix::zeros(4, 3),
    )
    .unwrap();
    let cases = [
        (
            Start::uniform(&coupled, n, 1, PAR).unwrap(),
            coupled.clone(),
            0.0,
        ),
        (
            Start::independent(&reference, 1.0, n, 2, PAR).unwrap(),
            reference.clone(),
            1.0,
        ),
        (
            Start::enumerated(&coupled, 0.9, n, 3, PAR).unwrap(),
            coupled.clone(),
            0.9,
        ),
        (
            Start::enumerated(&coupled_v, 1.0, n, 4, PAR).unwrap(),
            coupled_v.clone(),
            1.0,
        ),
    ];
    for (k, (start, rbm, beta)) in cases.iter().enumerate() {
        let p = visible_probabilities(rbm, *beta, Par::Seq).unwrap();
        let mut counts = vec![0u64; p.len()];
        for col in start.population.chains.visible.column_iter() {
            counts[rbm.visible().configuration_index(col.as_slice()) as usize] += 1;
        }
        let chi = chi_square(&counts, &p);
        assert!(chi.p_value > 1e-4, "case {k}: {chi:?}");
        // The hidden layer is a draw given the visible one: its mean matches E[h | v].
        let mut means = DMatrix::zeros(rbm.hidden().width(), n);
        rbm.hidden_means(
            &start.population.chains.visible,
            *beta,
            &mut means,
            Par::Seq,
        );
        // Each entry of h - E[h | v] has mean 0 and variance at most 1/4.
        let nh = rbm.hidden().width() as f64;
        let diff = (&start.population.chains.hidden - &means).sum() / n as f64;
        assert!(
            diff.abs() < 5.0 * (0.25 * nh / n as f64).sqrt(),
            "case {k}: {diff}"
        );
        assert!(start.population.log_weights.iter().all(|&w| w == 0.0));
    }
    // Negative control: the same histogram test rejects draws of the wrong law.
    let wrong = Start::enumerated(&coupled, 0.5, n, 3, PAR).unwrap();
    let p = visible_probabilities(&coupled, 0.9, Par::Seq).unwrap();
    let mut counts = vec![0u64; p.len()];
    for col in wrong.population.chains.visible.column_iter() {
        counts[coupled.visible().configuration_index(col.as_slice()) as usize] += 1;
    }
    assert!(chi_square(&counts, &p).p_value < 1e-6);
}

#[test]
fn starts_reject_bad_input() {
    let coupled = random_rbm(3, 2, 1.0, 7);
    assert!(matches!(
        Start::independent(&coupled, 1.0, 10, 0, PAR),
        Err(Error::InvalidParameter { .. })
    ));
    let reference = Rbm::new(
        Bernoulli::<f64>::zeros(3),
        Bernoulli::zeros(2),
        DMatrix::zeros(3, 2),
    )
    .unwrap();
    for beta in [0.0, -1.0, f64::NAN] {
        assert!(Start::independent(&reference, beta, 10, 0, PAR).is_err());
    }
    assert!(Start::uniform(&coupled, 1, 0, PAR).is_err()); // one chain: no error bar possible
}

/// Spec §5.1: L = mean(-F(v)) - log Z, equal to the mean of log p(v) from enumeration; the
/// error of log Z carries over.
#[test]
fn log_likelihood_is_the_mean_exact_log_probability() {
    let rbm = random_rbm(6, 3, 1.0, 8);
    let p = visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let data = DMatrix::from_fn(6, 5, |i, j| ((i * 7 + j * 3) % 4 == 0) as u8 as f64);
    let mut expected = 0.0;
    for col in data.column_iter() {
        expected += p[rbm.visible().configuration_index(col.as_slice()) as usize].ln();
    }
    expected /= 5.0;
    let exact = exact_log_partition(&rbm, 1.0, PAR).unwrap();
    let ll = log_likelihood(&rbm, &data, &exact, PAR).unwrap();
    assert!(
        (ll.mean - expected).abs() < 1e-12,
        "{} vs {expected}",
        ll.mean
    );
    assert_eq!((ll.std_err, ll.n_data), (0.0, 5));
    // An estimate with an error bar: shifted mean, same error.
    let noisy = LogZEstimate {
        log_z: exact.log_z + 0.25,
        std_err: 0.1,
        ..exact.clone()
    };
    let ll2 = log_likelihood(&rbm, &data, &noisy, PAR).unwrap();
    assert!((ll2.mean - (expected - 0.25)).abs() < 1e-12);
    assert_eq!(ll2.std_err, 0.1);
    assert!((ll2.data_std_err - ll.data_std_err).abs() < 1e-15 && ll.data_std_err > 0.0);
    assert!(ll.mean < 0.0);
}

#[test]
fn log_likelihood_rejects_bad_data() {
    let rbm = random_rbm(4, 2, 1.0, 9);
    let z = exact_log_partition(&rbm, 1.0, PAR).unwrap();
    assert!(matches!(
        log_likelihood(&rbm, &DMatrix::zeros(3, 2), &z, PAR),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        log_likelihood(&rbm, &DMatrix::zeros(4, 0), &z, PAR),
        Err(Error::ShapeMismatch { .. })
    ));
    let mut bad = DMatrix::zeros(4, 2);
    bad[(1, 1)] = f64::NAN;
    assert!(matches!(
        log_likelihood(&rbm, &bad, &z, PAR),
        Err(Error::NonFinite { .. })
    ));
}

//! Curie–Weiss and Hopfield models against enumeration, the spec's reference values
//! (Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*), and each other.

use ebm_core::numerics::log_sum_exp;
use ebm_core::{EnergyModel, ExactLogPartition, ExactSampling, Par, RngStreams};
use ebm_models::{CurieWeiss, Hopfield};
use ebm_testkit::chi_square;
use nalgebra::DMatrix;

fn brute_log_z<M: EnergyModel<State = DMatrix<f64>>>(m: &M, n: usize, beta: f64) -> f64 {
    let mut x = DMatrix::zeros(n, 1 << n);
    for c in 0..1usize << n {
        for i in 0..n {
            x[(i, c)] = if c >> i & 1 == 1 { 1.0 } else { -1.0 };
        }
    }
    let mut e = vec![0.0; 1 << n];
    m.energies(&x, beta, &mut e, Par::Seq);
    log_sum_exp(&e.iter().map(|v| -v).collect::<Vec<_>>())
}

#[test]
fn curie_weiss_log_z_matches_enumeration_and_the_spec_reference() {
    let cw = CurieWeiss::new(10, 1.2f64.powi(2), 0.0).unwrap();
    // Spec §7.10: log sum_k C(N,k) exp(w^2 (2k-N)^2 / 2N) = 8.917079 for N = 10, w = 1.2.
    assert!((cw.log_partition(1.0) - 8.917079).abs() < 5e-7);
    for (h, beta) in [(0.0, 1.0), (0.3, 0.7), (-0.2, 1.6)] {
        let cw = CurieWeiss::new(10, 1.3, h).unwrap();
        assert!((cw.log_partition(beta) - brute_log_z(&cw, 10, beta)).abs() < 1e-11);
    }
}

#[test]
fn curie_weiss_free_energy_converges_to_the_mean_field_limit_as_in_the_spec() {
    // Spec §7.10 table: -log Z / N for w = 1.2, 1.5, 0.8 at N = 10, 100, 1000, 10^4.
    let table = [
        (1.2, [-0.891708, -0.796823, -0.787820, -0.786934], -0.786836),
        (1.5, [-1.214461, -1.144178, -1.137403, -1.136727], -1.136652),
        (
            0.8,
            [-0.738940, -0.698181, -0.693657, -0.693198],
            -std::f64::consts::LN_2,
        ),
    ];
    for (w, values, limit) in table {
        for (n, expect) in [10usize, 100, 1000, 10_000].into_iter().zip(values) {
            let cw = CurieWeiss::new(n, w * w, 0.0).unwrap();
            let got = -cw.log_partition(1.0) / n as f64;
            assert!(
                (got - expect).abs() < 2e-6,
                "w = {w}, N = {n}: {got} vs {expect}"
            );
        }
        let cw = CurieWeiss::new(100, w * w, 0.0).unwrap();
        let m = cw.mean_field_magnetisation(1.0);
        assert!((cw.mean_field_free_energy(m, 1.0) - limit).abs() < 2e-6);
    }
}

#[test]
fn curie_weiss_barriers_match_the_spec_table() {
    // Spec §7.1: (w, m*, Delta f).
    for (w, m_star, df) in [
        (1.05, 0.508161, 0.007008),
        (1.2, 0.833906, 0.093689),
        (1.5, 0.975496, 0.443505),
        (2.2, 0.999875, 1.726915),
    ] {
        let cw = CurieWeiss::new(100, w * w, 0.0).unwrap();
        assert!(
            (cw.mean_field_magnetisation(1.0) - m_star).abs() < 1e-6,
            "w = {w}"
        );
        assert!((cw.barrier(1.0) - df).abs() < 1e-6, "w = {w}");
    }
    // No barrier above the critical temperature.
    let cw = CurieWeiss::new(100, 0.9, 0.0).unwrap();
    assert!(cw.barrier(1.0).abs() < 1e-9);
}

#[test]
fn curie_weiss_exact_samples_follow_the_exact_law() {
    let cw = CurieWeiss::new(6, 1.8, 0.1).unwrap();
    let beta = 0.9;
    let n = 50_000;
    let mut x = cw.new_state(n);
    let mut rngs = RngStreams::new(11, n);
    cw.sample_exact(&mut x, beta, rngs.as_mut_slice(), Par::Seq);
    // Full configurations against exp(-beta E) / Z over the 64 states.
    let lz = cw.log_partition(beta);
    let mut p = vec![0.0; 64];
    let mut counts = vec![0u64; 64];
    for (c, pc) in p.iter_mut().enumerate() {
        let v: Vec<f64> = (0..6)
            .map(|i| if c >> i & 1 == 1 { 1.0 } else { -1.0 })
            .collect();
        *pc = (-beta * cw.energy(&v) - lz).exp();
    }
    for col in x.column_iter() {
        let c = (0..6).fold(0usize, |acc, i| acc | (((col[i] > 0.0) as usize) << i));
        counts[c] += 1;
    }
    assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let t = chi_square(&counts, &p);
    assert!(t.p_value > 1e-4, "{t:?}");
    // Negative control: the same samples do not follow the law at another temperature.
    let lz2 = cw.log_partition(0.5 * beta);
    let p2: Vec<f64> = (0..64)
        .map(|c| {
            let v: Vec<f64> = (0..6)
                .map(|i| if c >> i & 1 == 1 { 1.0 } else { -1.0 })
                .collect();
            (-0.5 * beta * cw.energy(&v) - lz2).exp()
        })
        .collect();
    assert!(chi_square(&counts, &p2).p_value < 1e-6);
    // The up-count law is symmetric without a field.
    let sym = CurieWeiss::new(9, 1.5, 0.0)
        .unwrap()
        .up_count_distribution(1.0);
    for k in 0..=9 {
        assert!((sym[k] - sym[9 - k]).abs() < 1e-15);
    }
}

#[test]
fn hopfield_log_z_matches_enumeration_and_reduces_to_curie_weiss() {
    let (n, p) = (10, 3);
    let xi = DMatrix::from_fn(
        n,
        p,
        |i, mu| if (i * 7 + mu * 3) % 5 < 2 { -1.0 } else { 1.0 },
    );
    let fields: Vec<f64> = (0..n).map(|i| 0.05 * i as f64 - 0.2).collect();
    let hop = Hopfield::new(xi.clone(), 1.4, fields).unwrap();
    for beta in [0.5, 1.0] {
        let exact = hop.log_partition_exact(beta).unwrap();
        assert!((exact - brute_log_z(&hop, n, beta)).abs() < 1e-11);
    }
    // One pattern and no field: the gauge v_i -> xi_i v_i maps it onto Curie–Weiss.
    let one = Hopfield::new(xi.columns(0, 1).clone_owned(), 1.44, vec![0.0; n]).unwrap();
    let cw = CurieWeiss::new(n, 1.44, 0.0).unwrap();
    assert!((one.log_partition_exact(1.0).unwrap() - cw.log_partition(1.0)).abs() < 1e-11);
    assert!((one.mattis_overlap(1.0) - cw.mean_field_magnetisation(1.0)).abs() < 1e-15);
    // Overlaps of a pattern with itself are 1.
    let m = hop.overlaps(&xi.columns(1, 1).clone_owned());
    assert!((m[(1, 0)] - 1.0).abs() < 1e-15);
    // Validation.
    assert!(Hopfield::new(DMatrix::from_element(3, 1, 0.5), 1.0, vec![0.0; 3]).is_err());
    assert!(Hopfield::new(DMatrix::from_element(3, 1, 1.0), 1.0, vec![0.0; 2]).is_err());
    let big = Hopfield::new(DMatrix::from_element(30, 1, 1.0), 1.0, vec![0.0; 30]).unwrap();
    assert!(big.log_partition_exact(1.0).is_err());
    assert!(CurieWeiss::new(0, 1.0, 0.0).is_err());
    assert!(CurieWeiss::new(3, f64::NAN, 0.0).is_err());
}

#[test]
fn mode_weights_and_exact_sample_sets() {
    // Without a field the two modes weigh exactly 1/2; a field tilts them.
    let sym = CurieWeiss::new(20, 1.5, 0.0).unwrap();
    assert!((sym.positive_mode_weight(1.0) - 0.5).abs() < 1e-15);
    let tilted = CurieWeiss::new(20, 1.5, 0.02).unwrap();
    let w = tilted.positive_mode_weight(1.0);
    assert!(w > 0.6 && w < 1.0, "{w}");
    let x = tilted.exact_samples(20_000, 1.0, 4);
    let frac = x.column_iter().filter(|c| c.sum() > 0.0).count() as f64
        + 0.5 * x.column_iter().filter(|c| c.sum() == 0.0).count() as f64;
    let frac = frac / 20_000.0;
    assert!(
        (frac - w).abs() < 4.0 * (w * (1.0 - w) / 20_000.0).sqrt(),
        "{frac} vs {w}"
    );

    let (n, p) = (8, 2);
    let xi = DMatrix::from_fn(n, p, |i, mu| if (i + mu) % 3 == 0 { -1.0 } else { 1.0 });
    let hop = Hopfield::new(xi, 1.6, vec![0.0; n]).unwrap();
    let probs = hop.exact_probabilities(1.0).unwrap();
    assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let s = hop.exact_samples(30_000, 1.0, 9).unwrap();
    let mut counts = vec![0u64; 1 << n];
    for c in s.column_iter() {
        counts[(0..n).fold(0usize, |a, i| a | (((c[i] > 0.0) as usize) << i))] += 1;
    }
    assert!(chi_square(&counts, &probs).p_value > 1e-4);
}

/// The listed states of both analytical models: every index round-trips, and the law they
/// define has the model's own exact log Z (closed form for Curie–Weiss, enumeration for
/// Hopfield), at two temperatures (a listing that drops or repeats states would not).
#[test]
fn listed_states_reproduce_the_exact_log_partition() {
    use ebm_core::Enumerable;
    let cw = CurieWeiss::new(7, 1.3, 0.2).unwrap();
    let patterns = DMatrix::from_fn(6, 2, |i, mu| if (i + mu) % 3 == 0 { 1.0 } else { -1.0 });
    let hop = Hopfield::new(patterns, 1.1, vec![0.1, -0.2, 0.0, 0.3, 0.0, -0.1]).unwrap();
    for beta in [0.5, 1.0] {
        let lz = cw.enumerated_log_partition(beta, Par::Seq);
        assert!((lz - cw.log_partition(beta)).abs() < 1e-12, "{lz}");
        let lz = hop.enumerated_log_partition(beta, Par::Seq);
        assert!(
            (lz - hop.log_partition_exact(beta).unwrap()).abs() < 1e-12,
            "{lz}"
        );
    }
    let mut x = cw.new_state(1);
    for k in 0..cw.n_states() {
        cw.write_state(k, &mut x, 0);
        assert_eq!(cw.state_index(&x, 0), k);
    }
    assert_eq!(hop.n_states(), 64);
}

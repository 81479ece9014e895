//! Potts layer: CGF, means and sampling against enumeration; RBMs with Potts layers against
//! brute force; the zero-sum gauge on all parameters.

use ebm_core::numerics::log_sum_exp;
use ebm_core::{Par, RngStreams};
use ebm_models::exact;
use ebm_models::{Bernoulli, DiscreteLayer, Layer, Potts, Rbm, Spin};
use ebm_testkit::chi_square;
use nalgebra::DMatrix;

fn pseudo(k: usize, scale: f64) -> f64 {
    ((k * 7919 % 1009) as f64 / 504.5 - 1.0) * scale
}

#[test]
fn cgf_and_means_match_enumeration_including_extreme_inputs() {
    let q = 4;
    let layer = Potts::new(q, (0..2 * q).map(|k| pseudo(k, 1.5)).collect()).unwrap();
    for &scale in &[0.0, 1.0, 30.0, 1e4] {
        for &beta in &[0.0, 0.5, 1.0] {
            let inputs: Vec<f64> = (0..2 * q).map(|k| pseudo(k + 3, scale)).collect();
            let mut expect = 0.0;
            let mut means = Vec::new();
            for i in 0..2 {
                let e: Vec<f64> = (0..q)
                    .map(|a| beta * (layer.fields()[i * q + a] + inputs[i * q + a]))
                    .collect();
                let lz = log_sum_exp(&e);
                expect += lz;
                means.extend(e.iter().map(|x| (x - lz).exp()));
            }
            let got = layer.cgf(&inputs, beta);
            assert!(
                (got - expect).abs() <= 1e-12 * (1.0 + expect.abs()),
                "{got} vs {expect}"
            );
            assert!(got.is_finite());
            let mut m = inputs.clone();
            layer.mean_in_place(&mut m, beta);
            for (a, b) in m.iter().zip(&means) {
                assert!((a - b).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn sampling_follows_the_softmax_in_f64_and_f32() {
    let q = 5;
    let fields: Vec<f64> = (0..q).map(|a| 0.3 * a as f64 - 0.5).collect();
    let inputs: Vec<f64> = (0..q).map(|a| pseudo(a, 1.0)).collect();
    let beta = 0.8;
    let e: Vec<f64> = (0..q).map(|a| beta * (fields[a] + inputs[a])).collect();
    let lz = log_sum_exp(&e);
    let p: Vec<f64> = e.iter().map(|x| (x - lz).exp()).collect();
    let l64 = Potts::new(q, fields.clone()).unwrap();
    let l32 = Potts::new(q, fields.iter().map(|&x| x as f32).collect()).unwrap();
    let mut rngs = RngStreams::new(1, 2);
    let (mut c64, mut c32) = (vec![0u64; q], vec![0u64; q]);
    for _ in 0..100_000 {
        let mut x = inputs.clone();
        l64.sample_in_place(&mut x, beta, &mut rngs.as_mut_slice()[0]);
        c64[l64.read_unit_state(&x)] += 1;
        let mut y: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
        l32.sample_in_place(&mut y, beta, &mut rngs.as_mut_slice()[1]);
        c32[l32.read_unit_state(&y)] += 1;
    }
    assert!(chi_square(&c64, &p).p_value > 1e-4);
    assert!(chi_square(&c32, &p).p_value > 1e-4);
    // Negative control: the counts do not fit the law at another temperature.
    let e2: Vec<f64> = (0..q)
        .map(|a| 0.5 * beta * (fields[a] + inputs[a]))
        .collect();
    let lz2 = log_sum_exp(&e2);
    let p2: Vec<f64> = e2.iter().map(|x| (x - lz2).exp()).collect();
    assert!(chi_square(&c64, &p2).p_value < 1e-12);
}

#[test]
fn construction_is_validated() {
    assert!(Potts::<f64>::new(1, vec![0.0]).is_err());
    assert!(Potts::<f64>::new(3, vec![0.0; 4]).is_err());
    assert!(Potts::<f64>::new(2, vec![0.0, f64::INFINITY]).is_err());
    let p = Potts::<f64>::zeros(3, 4);
    assert_eq!(
        (p.n_units(), p.unit_width(), p.width(), p.n_configurations()),
        (3, 4, 12, 64)
    );
    let mut x = vec![0.0; 12];
    p.fill_default(&mut x);
    assert_eq!(p.configuration_index(&x), 0);
    p.write_configuration(37, &mut x);
    assert_eq!(p.configuration_index(&x), 37);
}

/// -log sum_h exp(-beta E(v, h)) by enumerating h.
fn brute<V: DiscreteLayer<Scalar = f64>, H: DiscreteLayer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    beta: f64,
) -> Vec<f64> {
    let mut v = vec![0.0; rbm.visible().width()];
    let mut h = vec![0.0; rbm.hidden().width()];
    (0..rbm.visible().n_configurations())
        .map(|i| {
            rbm.visible().write_configuration(i, &mut v);
            let t: Vec<f64> = (0..rbm.hidden().n_configurations())
                .map(|j| {
                    rbm.hidden().write_configuration(j, &mut h);
                    -beta * rbm.joint_energy(&v, &h)
                })
                .collect();
            -log_sum_exp(&t)
        })
        .collect()
}

fn assert_close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}");
    }
}

fn potts_rbm<H: Layer<Scalar = f64>>(hidden: H, n: usize, q: usize) -> Rbm<Potts, H> {
    let w = DMatrix::from_fn(n * q, hidden.width(), |r, c| pseudo(r * 13 + c * 5, 1.2));
    Rbm::new(
        Potts::new(q, (0..n * q).map(|k| pseudo(k + 17, 0.8)).collect()).unwrap(),
        hidden,
        w,
    )
    .unwrap()
}

#[test]
fn free_energies_of_potts_rbms_match_brute_force() {
    let beta = 0.9;
    let a = potts_rbm(Bernoulli::new(vec![0.1, -0.4]), 3, 3);
    assert_close(
        &exact::visible_free_energies(&a, beta, Par::Seq).unwrap(),
        &brute(&a, beta),
        1e-12,
    );
    let b = potts_rbm(Spin::new(vec![0.2, 0.3, -0.1]), 2, 4);
    assert_close(
        &exact::visible_free_energies(&b, beta, Par::Seq).unwrap(),
        &brute(&b, beta),
        1e-12,
    );
    let c = potts_rbm(
        Potts::new(3, (0..6).map(|k| pseudo(k, 0.5)).collect()).unwrap(),
        2,
        3,
    );
    assert_close(
        &exact::visible_free_energies(&c, beta, Par::Seq).unwrap(),
        &brute(&c, beta),
        1e-12,
    );
    let lz_v = exact::log_partition_by_visible(&c, beta, Par::Seq).unwrap();
    let lz_h = exact::log_partition_by_hidden(&c, beta, Par::Seq).unwrap();
    assert!((lz_v - lz_h).abs() < 1e-12);
    // Potts hidden with binary visible.
    let d = Rbm::new(
        Spin::new(vec![0.3, -0.2, 0.1]),
        Potts::new(4, (0..8).map(|k| pseudo(k + 2, 0.7)).collect()).unwrap(),
        DMatrix::from_fn(3, 8, |r, c| pseudo(r * 3 + c, 1.0)),
    )
    .unwrap();
    assert_close(
        &exact::visible_free_energies(&d, beta, Par::Seq).unwrap(),
        &brute(&d, beta),
        1e-12,
    );
}

#[test]
fn zero_sum_gauge_fixes_every_parameter_and_preserves_the_law() {
    let beta = 0.7;
    let rbm = potts_rbm(Bernoulli::new(vec![0.1, -0.4]), 3, 3);
    let g = rbm.gauge_visible_zero_sum();
    let q = 3;
    for unit in g.rbm.visible().fields().chunks(q) {
        assert!(unit.iter().sum::<f64>().abs() < 1e-12);
    }
    for k in 0..2 {
        for i in 0..3 {
            let s: f64 = (0..q).map(|a| g.rbm.weights()[(i * q + a, k)]).sum();
            assert!(s.abs() < 1e-12);
        }
    }
    let p0 = exact::visible_probabilities(&rbm, beta, Par::Seq).unwrap();
    let p1 = exact::visible_probabilities(&g.rbm, beta, Par::Seq).unwrap();
    assert_close(&p1, &p0, 1e-12);
    let z0 = exact::log_partition_by_visible(&rbm, beta, Par::Seq).unwrap();
    let z1 = exact::log_partition_by_visible(&g.rbm, beta, Par::Seq).unwrap();
    assert!((z0 - (z1 - beta * g.energy_offset)).abs() < 1e-10);

    // Negative control: gauging the weights alone (the bug peers shipped) changes the law.
    let (v, h, mut w) = rbm.clone().into_parts();
    let w_gauged = g.rbm.weights().clone();
    w.copy_from(&w_gauged);
    let weights_only = Rbm::new(v, h, w).unwrap();
    let p2 = exact::visible_probabilities(&weights_only, beta, Par::Seq).unwrap();
    let max_diff = p2
        .iter()
        .zip(&p0)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        max_diff > 1e-3,
        "weights-only gauge should change the law, max diff {max_diff}"
    );

    // Hidden-side gauge of a Potts hidden layer.
    let d = Rbm::new(
        Spin::new(vec![0.3, -0.2, 0.1]),
        Potts::new(4, (0..8).map(|k| pseudo(k + 2, 0.7)).collect()).unwrap(),
        DMatrix::from_fn(3, 8, |r, c| pseudo(r * 3 + c, 1.0)),
    )
    .unwrap();
    let gd = d.gauge_hidden_zero_sum();
    for r in 0..3 {
        for mu in 0..2 {
            let s: f64 = (0..4).map(|a| gd.rbm.weights()[(r, mu * 4 + a)]).sum();
            assert!(s.abs() < 1e-12);
        }
    }
    let pd0 = exact::visible_probabilities(&d, beta, Par::Seq).unwrap();
    let pd1 = exact::visible_probabilities(&gd.rbm, beta, Par::Seq).unwrap();
    assert_close(&pd1, &pd0, 1e-12);
}

mod random_models {
    use super::*;
    use proptest::prelude::*;

    /// Random Potts-visible RBMs with Bernoulli or Potts hidden layers.
    fn potts_rbm_strategy()
    -> impl Strategy<Value = (usize, usize, usize, Vec<f64>, Vec<f64>, Vec<f64>)> {
        (2usize..=3, 1usize..=3, 1usize..=3).prop_flat_map(|(q, n, nh)| {
            (
                Just(q),
                Just(n),
                Just(nh),
                prop::collection::vec(-2.0f64..2.0, n * q),
                prop::collection::vec(-2.0f64..2.0, nh),
                prop::collection::vec(-2.0f64..2.0, n * q * nh),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn free_energies_and_log_z_agree_with_brute_force((q, n, nh, a, b, w) in potts_rbm_strategy(), beta in 0.1f64..1.5) {
            let rbm = Rbm::new(Potts::new(q, a).unwrap(), Bernoulli::new(b.clone()), DMatrix::from_vec(n * q, nh, w.clone())).unwrap();
            let f = exact::visible_free_energies(&rbm, beta, Par::Seq).unwrap();
            let brute_f = brute(&rbm, beta);
            for (x, y) in f.iter().zip(&brute_f) {
                prop_assert!((x - y).abs() <= 1e-10 * (1.0 + y.abs()));
            }
            let by_v = exact::log_partition_by_visible(&rbm, beta, Par::Seq).unwrap();
            let by_h = exact::log_partition_by_hidden(&rbm, beta, Par::Seq).unwrap();
            prop_assert!((by_v - by_h).abs() <= 1e-10 * (1.0 + by_v.abs()));
            // The zero-sum gauge preserves every probability of random models too.
            let g = rbm.gauge_visible_zero_sum();
            let p0 = exact::visible_probabilities(&rbm, beta, Par::Seq).unwrap();
            let p1 = exact::visible_probabilities(&g.rbm, beta, Par::Seq).unwrap();
            for (x, y) in p0.iter().zip(&p1) {
                prop_assert!((x - y).abs() < 1e-12);
            }
            // And the transposed model (Bernoulli visible, Potts hidden) has the same log Z.
            let t = rbm.transposed();
            let lz_t = exact::log_partition_by_visible(&t, beta, Par::Seq).unwrap();
            prop_assert!((lz_t - by_v).abs() <= 1e-10 * (1.0 + by_v.abs()));
        }
    }
}

/// The sampling pass before it was vectorised: the standard library's exponential, site by
/// site (the reference of the same-seed comparison below).
fn scalar_pass<F: ebm_core::Scalar, R: rand::Rng>(
    fields: &[F],
    q: usize,
    inputs: &mut [F],
    beta: f64,
    rng: &mut R,
) {
    let b = F::from_f64(beta);
    for (slot, th) in inputs.chunks_mut(q).zip(fields.chunks(q)) {
        let mut m = F::neg_infinity();
        for (x, &t) in slot.iter_mut().zip(th) {
            *x = b * (t + *x);
            m = m.max(*x);
        }
        let mut total = F::from_f64(0.0);
        for x in slot.iter_mut() {
            *x = (*x - m).exp();
            total = total + *x;
        }
        let u = F::uniform(rng) * total;
        let mut acc = F::from_f64(0.0);
        let mut chosen = q - 1;
        for (a, x) in slot.iter().enumerate() {
            acc = acc + *x;
            if u < acc {
                chosen = a;
                break;
            }
        }
        slot.fill(F::from_f64(0.0));
        slot[chosen] = F::one();
    }
}

/// Sites (of `draws` columns of 40 sites, q = 21) where the vectorised pass and the scalar
/// pass at inverse temperature `beta_ref` draw different states from the same streams.
fn mismatches<F: ebm_core::Scalar>(scale: f64, beta: f64, beta_ref: f64, draws: usize) -> usize {
    let (sites, q) = (40, 21);
    let fields: Vec<F> = (0..sites * q)
        .map(|k| F::from_f64(pseudo(k, 1.0)))
        .collect();
    let layer = Potts::new(q, fields.clone()).unwrap();
    let (mut a, mut b) = (RngStreams::new(3, 1), RngStreams::new(3, 1));
    let mut differ = 0;
    for d in 0..draws {
        let inputs: Vec<F> = (0..sites * q)
            .map(|k| F::from_f64(pseudo(k + 7 * d + 1, scale)))
            .collect();
        let (mut x, mut y) = (inputs.clone(), inputs);
        layer.sample_in_place(&mut x, beta, &mut a.as_mut_slice()[0]);
        scalar_pass(&fields, q, &mut y, beta_ref, &mut b.as_mut_slice()[0]);
        differ += x.chunks(q).zip(y.chunks(q)).filter(|(s, t)| s != t).count();
    }
    differ
}

/// The vectorised pass (one polynomial exponential over the whole column) consumes the same
/// uniforms as the scalar pass it replaced and draws the same states from them: its
/// exponential differs from the standard library's by a few ulps, which could move a draw
/// only when a uniform falls within that distance of a boundary. 240 000 sites in `f32` and
/// `f64`, inputs up to 30 in magnitude. Negative control: a reference at a 1 % different
/// temperature disagrees on many sites.
#[test]
fn vectorised_sampling_draws_the_states_of_the_scalar_pass() {
    for scale in [0.5, 3.0, 30.0] {
        for beta in [0.3, 1.0] {
            assert_eq!(
                mismatches::<f32>(scale, beta, beta, 1000),
                0,
                "f32 {scale} {beta}"
            );
            assert_eq!(
                mismatches::<f64>(scale, beta, beta, 1000),
                0,
                "f64 {scale} {beta}"
            );
        }
    }
    let control = mismatches::<f32>(3.0, 1.0, 1.01, 1000);
    assert!(
        control > 100,
        "a 1 % temperature change went unnoticed: {control}"
    );
}

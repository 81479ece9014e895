//! Exact identities of the generic RBM against brute-force enumeration.

use ebm_core::numerics::log_sum_exp;
use ebm_core::{
    ChainRng, ConditionalSampler, EnergyModel, Error, ExactLogPartition, ExactSampling, Par, Scalar,
};
use ebm_models::exact::{self, Enumerated};
use ebm_models::{Bernoulli, BinaryLayer, DiscreteLayer, Layer, Rbm, Spin};
use ebm_testkit::strategies::binary_rbm;
use nalgebra::DMatrix;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// log sum_h exp(-beta E(v, h)) by enumerating h.
fn brute_free_energy<V: DiscreteLayer<Scalar = f64>, H: DiscreteLayer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    v: &[f64],
    beta: f64,
) -> f64 {
    let mut h = vec![0.0; rbm.hidden().width()];
    let terms: Vec<f64> = (0..rbm.hidden().n_configurations())
        .map(|j| {
            rbm.hidden().write_configuration(j, &mut h);
            -beta * rbm.joint_energy(v, &h)
        })
        .collect();
    -log_sum_exp(&terms)
}

fn check_free_energies<V, H>(rbm: &Rbm<V, H>, beta: f64) -> Result<(), TestCaseError>
where
    V: DiscreteLayer<Scalar = f64>,
    H: DiscreteLayer<Scalar = f64>,
{
    let n = rbm.visible().n_configurations() as usize;
    let f = exact::visible_free_energies(rbm, beta, Par::Rayon).unwrap();
    let mut v = vec![0.0; rbm.visible().width()];
    for (k, &fk) in f.iter().enumerate().take(n) {
        rbm.visible().write_configuration(k as u128, &mut v);
        let b = brute_free_energy(rbm, &v, beta);
        prop_assert!(
            (fk - b).abs() <= 1e-10 * (1.0 + b.abs()),
            "F({k}) = {fk}, brute force {b}"
        );
    }
    let by_v = exact::log_partition_by_visible(rbm, beta, Par::Seq).unwrap();
    let by_h = exact::log_partition_by_hidden(rbm, beta, Par::Seq).unwrap();
    prop_assert!((by_v - by_h).abs() <= 1e-10 * (1.0 + by_v.abs()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn visible_free_energy_is_the_marginal_of_the_joint_bernoulli(
        rbm in binary_rbm::<Bernoulli, Bernoulli>(1..=6, 0..=5, 2.0), beta in 0.0f64..1.5
    ) {
        check_free_energies(&rbm, beta)?;
    }

    #[test]
    fn visible_free_energy_is_the_marginal_of_the_joint_spin_and_mixed(
        a in binary_rbm::<Spin, Spin>(1..=6, 1..=5, 2.0),
        b in binary_rbm::<Bernoulli, Spin>(1..=5, 1..=5, 2.0),
        c in binary_rbm::<Spin, Bernoulli>(1..=5, 1..=5, 2.0),
        beta in 0.0f64..1.5
    ) {
        check_free_energies(&a, beta)?;
        check_free_energies(&b, beta)?;
        check_free_energies(&c, beta)?;
    }

    #[test]
    fn reparametrisation_preserves_the_law_and_shifts_log_z_by_beta_offset(
        rbm in binary_rbm::<Bernoulli, Bernoulli>(1..=5, 1..=4, 1.5), beta in 0.1f64..1.5
    ) {
        let s = rbm.reparametrise::<Spin, Spin>();
        let m = rbm.reparametrise::<Spin, Bernoulli>();
        let back = s.rbm.reparametrise::<Bernoulli, Bernoulli>();
        prop_assert!((s.energy_offset + back.energy_offset).abs() < 1e-10);
        for (w0, w1) in rbm.weights().iter().zip(back.rbm.weights().iter()) {
            prop_assert!((w0 - w1).abs() < 1e-12);
        }
        let p0 = exact::visible_probabilities(&rbm, beta, Par::Seq).unwrap();
        let p1 = exact::visible_probabilities(&s.rbm, beta, Par::Seq).unwrap();
        let p2 = exact::visible_probabilities(&m.rbm, beta, Par::Seq).unwrap();
        // Configuration k has the same unit states (0 <-> -1, 1 <-> +1) in both conventions.
        for k in 0..p0.len() {
            prop_assert!((p0[k] - p1[k]).abs() < 1e-12 && (p0[k] - p2[k]).abs() < 1e-12);
        }
        let z0 = exact::log_partition_by_visible(&rbm, beta, Par::Seq).unwrap();
        let z1 = exact::log_partition_by_visible(&s.rbm, beta, Par::Seq).unwrap();
        prop_assert!((z0 - (z1 - beta * s.energy_offset)).abs() < 1e-9);
        // Energies differ by the offset configuration by configuration.
        let (mut v0, mut h0) = (vec![0.0; rbm.visible().width()], vec![0.0; rbm.hidden().width()]);
        let (mut v1, mut h1) = (v0.clone(), h0.clone());
        rbm.visible().write_configuration(1, &mut v0);
        s.rbm.visible().write_configuration(1, &mut v1);
        rbm.hidden().write_configuration(0, &mut h0);
        s.rbm.hidden().write_configuration(0, &mut h1);
        let d = rbm.joint_energy(&v0, &h0) - s.rbm.joint_energy(&v1, &h1);
        prop_assert!((d - s.energy_offset).abs() < 1e-10);
    }
}

#[test]
fn construction_validates_shapes_and_values() {
    let e = Rbm::new(
        Bernoulli::<f64>::zeros(3),
        Bernoulli::zeros(2),
        DMatrix::zeros(2, 3),
    )
    .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    assert!(e.to_string().contains("expected 3x2"), "{e}");
    let mut w = DMatrix::zeros(3, 2);
    w[(1, 1)] = f64::NAN;
    let e = Rbm::new(Bernoulli::<f64>::zeros(3), Bernoulli::zeros(2), w).unwrap_err();
    assert!(matches!(e, Error::NonFinite { index: 4, .. }), "{e}");
}

#[test]
fn enumeration_refuses_large_layers_with_a_typed_error() {
    let rbm = Rbm::new(
        Bernoulli::<f64>::zeros(30),
        Bernoulli::zeros(2),
        DMatrix::zeros(30, 2),
    )
    .unwrap();
    assert!(matches!(
        exact::log_partition_by_visible(&rbm, 1.0, Par::Seq),
        Err(Error::TooLarge { .. })
    ));
    assert!(Enumerated::new(rbm.clone()).is_err());
    // The small side is still fine: 2 hidden units.
    let lz = exact::log_partition_by_hidden(&rbm, 1.0, Par::Seq).unwrap();
    assert!((lz - 32.0 * 2f64.ln()).abs() < 1e-9);
}

#[test]
fn hidden_means_and_batched_free_energies_match_single_chain_formulas() {
    let rbm = Rbm::new(
        Spin::new(vec![0.2, -0.1, 0.3, 0.0]),
        Bernoulli::new(vec![0.5, -1.0, 0.25]),
        DMatrix::from_fn(4, 3, |i, j| 0.3 * (i as f64) - 0.2 * (j as f64) + 0.1),
    )
    .unwrap();
    let n = 150; // more than one chunk of chains
    let mut v = DMatrix::zeros(4, n);
    for k in 0..n {
        rbm.visible()
            .write_configuration((k % 16) as u128, v.column_mut(k).as_mut_slice());
    }
    let beta = 0.7;
    let mut means = DMatrix::zeros(3, n);
    rbm.hidden_means(&v, beta, &mut means, Par::Rayon);
    let mut f = vec![0.0; n];
    rbm.free_energy_visible(&v, beta, &mut f, Par::Rayon);
    for k in 0..n {
        let col = v.column(k);
        for j in 0..3 {
            let input: f64 = (0..4).map(|i| rbm.weights()[(i, j)] * col[i]).sum();
            let expect = 1.0 / (1.0 + (-beta * (rbm.hidden().fields()[j] + input)).exp());
            assert!((means[(j, k)] - expect).abs() < 1e-14);
        }
        let u_v = rbm.visible().energy(col.as_slice());
        let mut inputs: Vec<f64> = (0..3)
            .map(|j| (0..4).map(|i| rbm.weights()[(i, j)] * col[i]).sum())
            .collect();
        let g = rbm.hidden().cgf(&inputs, beta);
        assert!((f[k] - (beta * u_v - g)).abs() < 1e-12);
        inputs.clear();
    }
}

#[test]
fn enumerated_model_is_tractable_and_its_samples_follow_the_law() {
    let rbm = Rbm::new(
        Bernoulli::new(vec![0.5, -0.5, 0.0]),
        Spin::new(vec![0.2, -0.3]),
        DMatrix::from_row_slice(3, 2, &[1.0, -0.5, 0.3, 0.8, -1.2, 0.4]),
    )
    .unwrap();
    let ex = Enumerated::new(rbm.clone()).unwrap();
    let beta = 0.9;
    assert!(
        (ex.log_partition(beta) - exact::log_partition_by_hidden(&rbm, beta, Par::Seq).unwrap())
            .abs()
            < 1e-12
    );
    let n = 60_000;
    let mut x = ex.new_state(n);
    let mut rngs = ebm_core::RngStreams::new(3, n);
    ex.sample_exact(&mut x, beta, rngs.as_mut_slice(), Par::Rayon);
    let p = exact::visible_probabilities(&rbm, beta, Par::Seq).unwrap();
    let mut counts = vec![0u64; p.len()];
    for c in x.visible.column_iter() {
        counts[rbm.visible().configuration_index(c.as_slice()) as usize] += 1;
    }
    let t = ebm_testkit::chi_square(&counts, &p);
    assert!(t.p_value > 1e-4, "{t:?}");
    // Hidden units were drawn from p(h | v): all are +-1.
    assert!(x.hidden.iter().all(|&h| h == 1.0 || h == -1.0));
    // The energies the model reports are the visible free energies.
    let mut e = vec![0.0; n];
    ex.energies(&x, beta, &mut e, Par::Seq);
    let mut f = vec![0.0; n];
    rbm.free_energy_visible(&x.visible, beta, &mut f, Par::Seq);
    assert_eq!(e, f);
    // And sampling hidden units directly gives the same kind of state.
    rbm.sample_hidden(&mut x, beta, rngs.as_mut_slice(), Par::Seq);
}

#[test]
fn rbm_serde_round_trip_is_exact_and_validated() {
    use ebm_models::{Gaussian, Spin};
    let rbm = Rbm::new(
        Spin::new(vec![0.5f32, -1.0]),
        Gaussian::new(vec![1.5, 2.0, 0.5], vec![0.1, -0.2, 0.3]).unwrap(),
        DMatrix::from_row_slice(2, 3, &[0.1, 0.2, 0.3, -0.4, -0.5, 0.6]),
    )
    .unwrap();
    let json = serde_json::to_string(&rbm).unwrap();
    let back: Rbm<Spin<f32>, Gaussian<f32>> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, rbm);
    // Wrong unit kind and invalid parameters are rejected, not silently accepted.
    assert!(serde_json::from_str::<Rbm<Bernoulli<f32>, Gaussian<f32>>>(&json).is_err());
    let bad = json.replacen("1.5", "-1.5", 1);
    assert!(serde_json::from_str::<Rbm<Spin<f32>, Gaussian<f32>>>(&bad).is_err());
}

/// `to_scalar` rounds every parameter to the nearest `f32` (checked entry by entry against
/// `as f32`, including a Gaussian layer's tensors), widens back exactly, keeps the unit kinds
/// and refuses another kind and a parameter that overflows `f32`.
#[test]
fn to_scalar_rounds_each_parameter_and_refuses_a_change_of_kind() {
    use ebm_models::Gaussian;
    let rbm = Rbm::new(
        Spin::new(vec![0.1f64, -1.0 / 3.0]),
        Gaussian::new(vec![1.5, 2.0 / 7.0, 0.5], vec![0.1, -0.2, 1.0 / 9.0]).unwrap(),
        DMatrix::from_row_slice(2, 3, &[0.1, 0.2, 0.3, -0.4, -0.5, std::f64::consts::PI]),
    )
    .unwrap();
    let single: Rbm<Spin<f32>, Gaussian<f32>> = rbm.to_scalar().unwrap();
    let rounded: Vec<f32> = rbm.weights().iter().map(|&w| w as f32).collect();
    assert_eq!(single.weights().as_slice(), &rounded[..]);
    assert_eq!(single.visible().fields(), &[0.1f32, (-1.0f64 / 3.0) as f32]);
    for ((name, shape, values), (name2, shape2, values2)) in rbm
        .hidden()
        .tensors()
        .into_iter()
        .zip(single.hidden().tensors())
    {
        assert_eq!((name, shape), (name2, shape2));
        let rounded: Vec<f32> = values.iter().map(|&x| x as f32).collect();
        assert_eq!(values2, rounded, "{name}");
    }
    // Widening is exact, and rounding again changes nothing.
    let back: Rbm<Spin, Gaussian> = single.to_scalar().unwrap();
    let again: Rbm<Spin<f32>, Gaussian<f32>> = back.to_scalar().unwrap();
    assert_eq!(again, single);
    assert_ne!(back, rbm, "f64 -> f32 must round 1/3, pi and 2/7");
    // Another unit kind is refused (as is a parameter beyond f32's range).
    let other = rbm.to_scalar::<Bernoulli<f32>, Gaussian<f32>>();
    assert!(
        matches!(other, Err(Error::InvalidParameter { .. })),
        "{other:?}"
    );
    let huge = Rbm::new(
        Spin::new(vec![0.0f64, 0.0]),
        Spin::new(vec![0.0]),
        DMatrix::from_row_slice(2, 1, &[1e300, 0.0]),
    )
    .unwrap();
    let err = huge.to_scalar::<Spin<f32>, Spin<f32>>().unwrap_err();
    assert!(err.to_string().contains("overflows f32"), "{err}");
}

#[test]
fn energies_at_several_temperatures_match_energies_bit_for_bit() {
    use ebm_models::{Gaussian, Spin};
    let rbm = Rbm::new(
        Spin::new(vec![0.5, -1.0, 0.2]),
        Gaussian::new(vec![1.5, 2.0], vec![0.1, -0.2]).unwrap(),
        DMatrix::from_row_slice(3, 2, &[0.1, 0.2, 0.3, -0.4, -0.5, 0.6]),
    )
    .unwrap();
    let mut x = rbm.new_state(300);
    for (i, v) in x.visible.iter_mut().enumerate() {
        *v = if (i * 7919) % 3 == 0 { 1.0 } else { -1.0 };
    }
    let betas = [0.3, 0.7, 1.0];
    let mut all = vec![0.0; 300 * 3];
    rbm.energies_at(&x, &betas, &mut all, Par::Rayon);
    let mut one = vec![0.0; 300];
    for (j, &b) in betas.iter().enumerate() {
        rbm.energies(&x, b, &mut one, Par::Seq);
        for i in 0..300 {
            assert_eq!(
                all[i * 3 + j].to_bits(),
                one[i].to_bits(),
                "chain {i}, beta {b}"
            );
        }
    }
}

/// Exact joint draws by enumerating the hidden layer follow the exact visible marginal; the
/// same test rejects draws whose hidden layer is taken at the wrong temperature.
#[test]
fn sampling_by_hidden_enumeration_follows_the_exact_law() {
    let rbm = Rbm::new(
        Spin::new(vec![0.4, -0.2, 0.1, 0.0]),
        Bernoulli::new(vec![0.3, -0.6, 0.2]),
        DMatrix::from_row_slice(
            4,
            3,
            &[
                1.1, -0.7, 0.3, 0.5, 0.9, -1.2, -0.8, 0.2, 0.6, 0.4, -0.5, 1.0,
            ],
        ),
    )
    .unwrap();
    let beta = 0.8;
    let p = exact::visible_probabilities(&rbm, beta, Par::Seq).unwrap();
    let ph = exact::hidden_probabilities(&rbm, beta, Par::Seq).unwrap();
    assert!((ph.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let n = 60_000;
    let histogram = |draw_beta: f64| {
        let mut x = rbm.new_state(n);
        let mut rngs = ebm_core::RngStreams::new(11, n);
        // Hidden configurations from p_{draw_beta}(h), visible from p_beta(v | h).
        exact::sample_by_hidden(&rbm, &mut x, draw_beta, rngs.as_mut_slice(), Par::Rayon).unwrap();
        rbm.sample_visible(&mut x, beta, rngs.as_mut_slice(), Par::Rayon);
        let mut counts = vec![0u64; p.len()];
        for c in x.visible.column_iter() {
            counts[rbm.visible().configuration_index(c.as_slice()) as usize] += 1;
        }
        ebm_testkit::chi_square(&counts, &p)
    };
    let good = histogram(beta);
    assert!(good.p_value > 1e-4, "exact draws rejected: {good:?}");
    let wrong = histogram(0.4);
    assert!(
        wrong.p_value < 1e-6,
        "draws at the wrong temperature accepted: {wrong:?}"
    );
    // Thread-count invariance: the same streams give the same draws.
    let mut a = rbm.new_state(100);
    let mut b = rbm.new_state(100);
    exact::sample_by_hidden(
        &rbm,
        &mut a,
        beta,
        ebm_core::RngStreams::new(5, 100).as_mut_slice(),
        Par::Seq,
    )
    .unwrap();
    exact::sample_by_hidden(
        &rbm,
        &mut b,
        beta,
        ebm_core::RngStreams::new(5, 100).as_mut_slice(),
        Par::Rayon,
    )
    .unwrap();
    assert_eq!(a, b);
}

/// As a kernel, `HiddenEnumeration` leaves the joint law exactly invariant (one step from exact
/// draws, chi-square on all (v, h)); the same test rejects a sampler enumerated for another
/// model of the same shape, and stepping at another temperature panics.
#[test]
fn hidden_enumeration_kernel_is_exact_and_checks_its_model() {
    let w = [
        1.1, -0.7, 0.3, 0.5, 0.9, -1.2, -0.8, 0.2, 0.6, 0.4, -0.5, 1.0,
    ];
    let rbm = Rbm::new(
        Spin::new(vec![0.4, -0.2, 0.1, 0.0]),
        Bernoulli::new(vec![0.3, -0.6, 0.2]),
        DMatrix::from_row_slice(4, 3, &w),
    )
    .unwrap();
    let beta = 0.9;
    let kernel = exact::HiddenEnumeration::new(&rbm, beta, Par::Rayon).unwrap();
    let good = ebm_testkit::joint_invariance(&rbm, &kernel, beta, 80_000, 3);
    assert!(good.p_value > 1e-4, "exact refresh rejected: {good:?}");

    // Negative control: enumerated for a model whose weights differ by 0.3 in one entry.
    let mut w2 = w;
    w2[0] += 0.3;
    let other = Rbm::new(
        Spin::new(vec![0.4, -0.2, 0.1, 0.0]),
        Bernoulli::new(vec![0.3, -0.6, 0.2]),
        DMatrix::from_row_slice(4, 3, &w2),
    )
    .unwrap();
    let wrong = exact::HiddenEnumeration::new(&other, beta, Par::Rayon).unwrap();
    let bad = ebm_testkit::joint_invariance(&rbm, &wrong, beta, 80_000, 3);
    assert!(
        bad.p_value < 1e-6,
        "a refresh enumerated for another model accepted: {bad:?}"
    );

    let stepped_elsewhere = std::panic::catch_unwind(|| {
        let mut x = rbm.new_state(4);
        let mut rngs = ebm_core::RngStreams::new(1, 4);
        ebm_core::Kernel::step(&kernel, &rbm, 0.5, &mut x, rngs.as_mut_slice(), Par::Seq);
    });
    assert!(
        stepped_elsewhere.is_err(),
        "a step at another beta must panic"
    );
    assert!(exact::HiddenEnumeration::new(&rbm, f64::NAN, Par::Seq).is_err());
}

/// The chains' streams behind a wrapper: a generator that is not [`ChainRng`], which the
/// sampling passes therefore take chain by chain through the scalar pass.
#[derive(Clone, Debug, PartialEq)]
struct Wrapped(ChainRng);

impl rand::RngCore for Wrapped {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
}

/// Three sweeps (h | v, then v | h) of `rbm` from random configurations, with the chains'
/// streams `rngs` of seed 3 (`swap`: streams 0 and 1 exchanged), through the lane generator
/// (`ChainRng` streams) or the scalar pass (`Wrapped` streams): the configurations' bits and
/// the streams' states afterwards.
fn sweeps<V, H>(
    rbm: &Rbm<V, H>,
    n: usize,
    par: Par,
    lanes: bool,
    swap: bool,
) -> (Vec<u64>, Vec<ChainRng>)
where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    use ebm_core::RngStreams;
    let mut x = rbm.default_chains(n);
    let mut init = ChainRng::seed_from_u64(1);
    for v in x.visible.iter_mut() {
        *v = V::Scalar::from_f64(f64::from(init.random_range(0..2u8)));
    }
    let mut rngs = RngStreams::new(3, n).as_slice().to_vec();
    if swap {
        rngs.swap(0, 1);
    }
    let mut wrapped: Vec<Wrapped> = rngs.iter().cloned().map(Wrapped).collect();
    for _ in 0..3 {
        if lanes {
            rbm.sample_hidden(&mut x, 1.0, &mut rngs, par);
            rbm.sample_visible(&mut x, 0.8, &mut rngs, par);
        } else {
            rbm.sample_hidden(&mut x, 1.0, &mut wrapped, par);
            rbm.sample_visible(&mut x, 0.8, &mut wrapped, par);
        }
    }
    if !lanes {
        rngs = wrapped.into_iter().map(|w| w.0).collect();
    }
    let bits = x
        .visible
        .iter()
        .chain(x.hidden.iter())
        .map(|v| v.as_f64().to_bits())
        .collect();
    (bits, rngs)
}

fn random_rbm<F: ebm_core::Scalar, V: BinaryLayer<Scalar = F>, H: BinaryLayer<Scalar = F>>(
    nv: usize,
    nh: usize,
) -> Rbm<V, H> {
    let mut g = ChainRng::seed_from_u64(nv as u64 * 1000 + nh as u64);
    let mut field = |n: usize| {
        (0..n)
            .map(|_| F::from_f64(g.random_range(-1.0..1.0)))
            .collect()
    };
    let (a, b) = (field(nv), field(nh));
    let w = DMatrix::from_fn(nv, nh, |_, _| F::from_f64(g.random_range(-0.3..0.3)));
    Rbm::new(V::with_fields(a), H::with_fields(b), w).unwrap()
}

/// Gibbs sweeps through the lane generator (four chains' streams advanced together) are the
/// scalar sweeps bit for bit: f32 and f64, {0,1} and ±1 units, odd widths, chain counts that
/// are not multiples of four (and more than one chunk of 128), sequential and on pools of 1
/// and 2 threads; the streams end at the same positions. Negative control: two chains'
/// streams exchanged give other configurations.
#[test]
fn gibbs_sweeps_through_the_lane_generator_are_the_scalar_sweeps() {
    fn check<V, H>(nv: usize, nh: usize, n: usize)
    where
        V: BinaryLayer,
        H: BinaryLayer<Scalar = V::Scalar>,
    {
        let rbm: Rbm<V, H> = random_rbm(nv, nh);
        let reference = sweeps(&rbm, n, Par::Seq, false, false);
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for par in [Par::Seq, Par::Rayon] {
                let lanes = pool.install(|| sweeps(&rbm, n, par, true, false));
                assert!(
                    lanes == reference,
                    "{nv} x {nh}, {n} chains, {par:?}, {threads} threads"
                );
            }
        }
        let swapped = sweeps(&rbm, n, Par::Seq, true, true);
        assert_ne!(
            swapped.0, reference.0,
            "swapped streams, {nv} x {nh}, {n} chains"
        );
    }
    for (nv, nh, n) in [(37, 19, 301), (784, 200, 133), (5, 3, 6)] {
        check::<Bernoulli<f32>, Bernoulli<f32>>(nv, nh, n);
        check::<Bernoulli<f64>, Bernoulli<f64>>(nv, nh, n);
        check::<Spin<f32>, Spin<f32>>(nv, nh, n);
        check::<Spin<f64>, Spin<f64>>(nv, nh, n);
    }
}

/// A non-finite weight is refused, named by its column-major index and value (in f32 as in
/// f64); finite weights, however large, are accepted.
#[test]
fn non_finite_weights_are_refused_with_their_index() {
    let layers = || (Bernoulli::<f32>::zeros(3), Bernoulli::<f32>::zeros(2));
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut w = DMatrix::from_element(3, 2, 0.5f32);
        w[(2, 1)] = bad;
        let (v, h) = layers();
        match Rbm::new(v, h, w) {
            Err(Error::NonFinite { what, index, value }) => {
                assert_eq!((what.as_str(), index), ("RBM weights", 5));
                assert_eq!(value.to_bits(), (bad as f64).to_bits());
            }
            other => panic!("expected NonFinite, got {other:?}"),
        }
    }
    let (v, h) = layers();
    assert!(Rbm::new(v, h, DMatrix::from_element(3, 2, f32::MAX)).is_ok());
}

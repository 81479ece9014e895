//! Exact invariance and detailed-balance tests of the kernels, for every binary unit
//! combination, with negative controls that the same tests must reject.

use ebm_core::{ConditionalSampler, Kernel, Par, Scalar};
use ebm_models::{Bernoulli, BinaryLayer, DiscreteLayer, Layer, Potts, Rbm, Spin, exact};
use ebm_samplers::{Gibbs, Metropolis};
use ebm_testkit::{
    AtBeta, detailed_balance_violation, gibbs_transition_matrix, joint_invariance,
    single_site_transition_matrix, stationarity_violation, visible_invariance,
};
use nalgebra::DMatrix;
use rand::Rng;

/// Draws per invariance test: with 32 visible states, a kernel that is off by a few percent in
/// any state's mass is rejected at this size (see the negative controls).
const DRAWS: usize = 40_000;
/// A correct kernel's p-value is uniform: it falls below this once in 10^4 runs. Seeds are fixed,
/// so each test is deterministic.
const ALPHA: f64 = 1e-4;
/// A negative control must be rejected far beyond chance: a correct kernel gives a p-value
/// this small once in 10^6 runs.
const REJECT: f64 = 1e-6;

/// A 5 x 3 model with couplings of order 1 (strong enough that wrong kernels are far off).
fn model<V: BinaryLayer, H: BinaryLayer<Scalar = V::Scalar>>() -> Rbm<V, H> {
    let f = V::Scalar::from_f64;
    let w: Vec<V::Scalar> = (0..15)
        .map(|k| f(((k * 7 % 11) as f64 - 5.0) * 0.25))
        .collect();
    Rbm::new(
        V::with_fields((0..5).map(|i| f(0.3 * i as f64 - 0.6)).collect()),
        H::with_fields(vec![f(0.4), f(-0.5), f(0.1)]),
        DMatrix::from_vec(5, 3, w),
    )
    .unwrap()
}

/// Negative control: samples h at the wrong inverse temperature (then v at the right one).
struct WrongBetaGibbs(f64);
impl<M: ConditionalSampler> Kernel<M> for WrongBetaGibbs {
    type Info = ();
    fn step<R: Rng + Send>(&self, m: &M, beta: f64, x: &mut M::State, rngs: &mut [R], par: Par) {
        m.sample_hidden(x, self.0, rngs, par);
        m.sample_visible(x, beta, rngs, par);
    }
}

fn check_all_kernels<V, H>(beta: f64, seed: u64)
where
    V: BinaryLayer,
    H: BinaryLayer<Scalar = V::Scalar>,
{
    check_kernels(&model::<V, H>(), beta, seed, 0.5);
}

/// Runs the invariance tests of both kernels and their negative controls; `wrong_factor`
/// scales beta in the controls (the smaller, the more wrong the control kernel).
fn check_kernels<V, H>(rbm: &Rbm<V, H>, beta: f64, seed: u64, wrong_factor: f64)
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
{
    let rbm = rbm.clone();
    let name = format!("{}-{} {}", V::KIND, H::KIND, V::Scalar::NAME);
    let g = visible_invariance(&rbm, &Gibbs::new(1), beta, DRAWS, seed);
    assert!(
        g.p_value > ALPHA,
        "{name}: Gibbs visible invariance rejected: {g:?}"
    );
    let gj = joint_invariance(&rbm, &Gibbs::new(1), beta, DRAWS, seed + 1);
    assert!(
        gj.p_value > ALPHA,
        "{name}: Gibbs joint invariance rejected: {gj:?}"
    );
    let m = visible_invariance(&rbm, &Metropolis::new(1), beta, DRAWS, seed + 2);
    assert!(
        m.p_value > ALPHA,
        "{name}: Metropolis invariance rejected: {m:?}"
    );

    let bad = visible_invariance(
        &rbm,
        &WrongBetaGibbs(wrong_factor * beta),
        beta,
        DRAWS,
        seed + 3,
    );
    assert!(
        bad.p_value < REJECT,
        "{name}: wrong-beta Gibbs accepted: {bad:?}"
    );
    let bad = visible_invariance(
        &rbm,
        &AtBeta(Metropolis::new(1), wrong_factor * beta),
        beta,
        DRAWS,
        seed + 4,
    );
    assert!(
        bad.p_value < REJECT,
        "{name}: Metropolis at the wrong beta accepted: {bad:?}"
    );
}

#[test]
fn kernels_leave_the_target_invariant_bernoulli_bernoulli() {
    check_all_kernels::<Bernoulli<f64>, Bernoulli<f64>>(1.0, 10);
    check_all_kernels::<Bernoulli<f32>, Bernoulli<f32>>(1.0, 20);
}

#[test]
fn kernels_leave_the_target_invariant_spin_spin() {
    check_all_kernels::<Spin<f64>, Spin<f64>>(1.0, 30);
    check_all_kernels::<Spin<f32>, Spin<f32>>(0.7, 40);
}

#[test]
fn kernels_leave_the_target_invariant_mixed_layers() {
    check_all_kernels::<Bernoulli<f64>, Spin<f64>>(1.0, 50);
    check_all_kernels::<Spin<f64>, Bernoulli<f64>>(0.8, 60);
}

fn potts_model<F: Scalar, H: BinaryLayer<Scalar = F>>(q: usize, n: usize) -> Rbm<Potts<F>, H> {
    let f = |k: usize, s: f64| F::from_f64((((k * 7919) % 1009) as f64 / 504.5 - 1.0) * s);
    Rbm::new(
        Potts::new(q, (0..n * q).map(|k| f(k, 0.8)).collect()).unwrap(),
        H::with_fields(vec![f(1, 0.5), f(2, 0.5), f(3, 0.5)]),
        DMatrix::from_fn(n * q, 3, |r, c| f(r * 13 + c * 5 + 7, 1.5)),
    )
    .unwrap()
}

#[test]
fn kernels_leave_the_target_invariant_potts_visible() {
    // With 27 and 16 visible states spread over few hidden units, halving beta in the
    // controls moves the law too little for 40 000 draws; a tenth is far off.
    check_kernels(&potts_model::<f64, Bernoulli<f64>>(3, 3), 1.0, 70, 0.1);
    check_kernels(&potts_model::<f32, Spin<f32>>(4, 2), 0.9, 80, 0.1);
}

#[test]
fn kernels_leave_the_target_invariant_potts_hidden() {
    let f = |k: usize| (((k * 7919) % 1009) as f64 / 504.5 - 1.0) * 1.2;
    let rbm = Rbm::new(
        Spin::new(vec![0.2, -0.3, 0.1, 0.4]),
        Potts::new(3, (0..6).map(|k| f(k + 1) * 0.5).collect()).unwrap(),
        DMatrix::from_fn(4, 6, |r, c| f(r * 6 + c)),
    )
    .unwrap();
    check_kernels(&rbm, 1.0, 90, 0.5);
}

#[test]
fn gibbs_is_reversible_on_the_visible_marginal_and_the_wrong_beta_is_not() {
    let rbm = model::<Spin<f64>, Bernoulli<f64>>();
    for beta in [1.0, 0.4] {
        let p = exact::visible_probabilities(&rbm, beta, Par::Seq).unwrap();
        let t = gibbs_transition_matrix(&rbm, beta, beta);
        assert!(detailed_balance_violation(&p, &t) < 1e-14);
        assert!(stationarity_violation(&p, &t) < 1e-14);
        let wrong = gibbs_transition_matrix(&rbm, 0.5 * beta, beta);
        assert!(stationarity_violation(&p, &wrong) > 1e-3);
        assert!(detailed_balance_violation(&p, &wrong) > 1e-4);
    }
}

#[test]
fn metropolis_single_site_updates_satisfy_detailed_balance() {
    let rbm = model::<Bernoulli<f64>, Spin<f64>>();
    let beta = 0.9;
    let p = exact::visible_probabilities(&rbm, beta, Par::Seq).unwrap();
    for unit in 0..rbm.visible().n_units() {
        let t = single_site_transition_matrix(rbm.visible(), unit, |v, i, s| {
            Metropolis::log_acceptance(&rbm, beta, v, i, s)
        });
        assert!(detailed_balance_violation(&p, &t) < 1e-14, "unit {unit}");
        // Negative control: acceptance computed with the beta = 1 free energy.
        let wrong = single_site_transition_matrix(rbm.visible(), unit, |v, i, s| {
            Metropolis::log_acceptance(&rbm, 1.0, v, i, s)
        });
        assert!(detailed_balance_violation(&p, &wrong) > 1e-4, "unit {unit}");
    }
}

#[test]
fn metropolis_acceptance_equals_the_free_energy_difference() {
    let rbm = model::<Spin<f64>, Spin<f64>>();
    let beta = 0.8;
    let n = rbm.visible().n_configurations() as usize;
    let f = exact::visible_free_energies(&rbm, beta, Par::Seq).unwrap();
    let mut v = vec![0.0; 5];
    let mut w = vec![0.0; 5];
    for a in 0..n {
        rbm.visible().write_configuration(a as u128, &mut v);
        for i in 0..5 {
            w.copy_from_slice(&v);
            w[i] = -w[i];
            let b = rbm.visible().configuration_index(&w) as usize;
            let la = Metropolis::log_acceptance(&rbm, beta, &v, i, (w[i] > 0.0) as usize);
            assert!((la - (f[a] - f[b]).min(0.0)).abs() < 1e-12);
        }
    }
}

#[test]
fn metropolis_reports_its_acceptance() {
    let rbm = model::<Bernoulli<f64>, Bernoulli<f64>>();
    let mut state = ebm_testkit::exact_chains(&rbm, 1.0, 1000, 5);
    let info = Metropolis::new(2).step(
        &rbm,
        1.0,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        Par::Seq,
    );
    assert_eq!(info.proposals, 1000 * 2 * 5);
    assert!(info.accepted > 0 && info.accepted < info.proposals);
    let r = info.acceptance_rate();
    assert!(r > 0.0 && r < 1.0);
}

/// Both kernels on RBMs with real-valued hidden units (the visible layer is enumerated).
#[test]
fn kernels_leave_the_target_invariant_with_real_hidden_units() {
    use ebm_models::{DReLU, Gaussian, ReLU};
    let w = |nv: usize, nh: usize| {
        DMatrix::from_fn(nv, nh, |i, j| ((i * 3 + j * 7) % 5) as f64 * 0.45 - 0.8)
    };
    let spin = || Spin::new(vec![0.1, -0.2, 0.3, 0.0, 0.15]);
    let g = Rbm::new(
        spin(),
        Gaussian::new(vec![0.8, 1.5], vec![0.1, -0.3]).unwrap(),
        w(5, 2),
    )
    .unwrap();
    let r = Rbm::new(
        Potts::new(3, vec![0.1, -0.2, 0.0, 0.3, 0.2, -0.1, 0.0, 0.4, -0.3]).unwrap(),
        ReLU::new(vec![1.0, 0.6], vec![0.5, -0.2]).unwrap(),
        w(9, 2),
    )
    .unwrap();
    let d = Rbm::new(
        spin(),
        DReLU::new(
            vec![1.2, 0.7],
            vec![0.5, 2.0],
            vec![0.4, 0.0],
            vec![-0.6, 0.3],
        )
        .unwrap(),
        w(5, 2),
    )
    .unwrap();
    for (k, p) in [
        visible_invariance(&g, &Gibbs::new(1), 0.9, DRAWS, 101),
        visible_invariance(&g, &Metropolis::new(1), 0.9, DRAWS, 102),
        visible_invariance(&r, &Gibbs::new(1), 1.0, DRAWS, 103),
        visible_invariance(&r, &Metropolis::new(1), 1.0, DRAWS, 104),
        visible_invariance(&d, &Gibbs::new(1), 0.8, DRAWS, 105),
        visible_invariance(&d, &Metropolis::new(1), 0.8, DRAWS, 106),
    ]
    .iter()
    .enumerate()
    {
        assert!(p.p_value > ALPHA, "case {k}: {p:?}");
    }
    let bad = visible_invariance(&g, &AtBeta(Metropolis::new(1), 0.3), 0.9, DRAWS, 107);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

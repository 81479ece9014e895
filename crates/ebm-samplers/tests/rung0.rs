//! `tempering::Rung0`, the refresh of rung 0 chosen for an RBM: the choice follows the model
//! (exact enumeration of a small hidden layer, the static low-rank proposal of a low-rank
//! binary model too large to enumerate, Gibbs otherwise), and each refresh leaves the joint law
//! \\(p_\beta(v, h)\\) exactly invariant (chi-square on the enumerated joint). Negative controls:
//! an exact refresh built for another model, and one built at another inverse temperature, are
//! rejected.

use ebm_core::{Kernel, Par, RngStreams};
use ebm_models::{Bernoulli, BinaryLayer, Gaussian, Rbm, Spin};
use ebm_samplers::tempering::{Rung0, Rung0Limits};
use ebm_testkit::joint_invariance;
use nalgebra::DMatrix;

const DRAWS: usize = 40_000;
/// A correct kernel's p-value falls below this once in 10^4 runs (fixed seeds: deterministic).
const ALPHA: f64 = 1e-4;
/// A negative control is rejected far beyond chance.
const REJECT: f64 = 1e-6;

/// A 5 x 3 {0,1} model with couplings of order 1; `sign` flips its visible fields.
fn model(sign: f64) -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
    let w: Vec<f64> = (0..15)
        .map(|k| ((k * 7 % 11) as f64 - 5.0) * 0.25)
        .collect();
    Rbm::new(
        Bernoulli::with_fields((0..5).map(|i| sign * (0.3 * i as f64 - 0.6)).collect()),
        Bernoulli::with_fields(vec![0.4, -0.5, 0.1]),
        DMatrix::from_vec(5, 3, w),
    )
    .unwrap()
}

/// A rank-one spin model with fields and weights along one direction: low-rank, so the static
/// sampler applies.
fn low_rank(n: usize, n_hidden: usize) -> Rbm<Spin<f64>, Spin<f64>> {
    let u: Vec<f64> = (0..n)
        .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
        .collect();
    let s = (n as f64).sqrt();
    let w = DMatrix::from_fn(n, n_hidden, |i, a| u[i] / s * (0.5 + 0.1 * a as f64));
    Rbm::new(
        Spin::new(u.iter().map(|x| 0.05 * x).collect()),
        Spin::new(vec![0.0; n_hidden]),
        w,
    )
    .unwrap()
}

const ALL: Rung0Limits = Rung0Limits {
    max_enumerated: 1 << 20,
    max_mesh_points: 2_000,
};

#[test]
fn the_choice_follows_the_model() {
    let small = model(1.0);
    let r = Rung0::choose(&small, 1.0, 3, ALL, Par::Seq).unwrap();
    assert_eq!(r.name(), "exact");
    assert_eq!(r.acceptance(), None);
    // The same model with enumeration forbidden: binary and (trivially) of rank at most 3,
    // but not built from one direction: the static sampler needs a low-rank basis of the
    // fields and weights. Whatever it chooses, it is not the exact refresh.
    let no_enumeration = Rung0Limits {
        max_enumerated: 4,
        ..ALL
    };
    let r = Rung0::choose(&small, 1.0, 3, no_enumeration, Par::Seq).unwrap();
    assert_ne!(r.name(), "exact");
    // 24 hidden spins (2^24 configurations) on a rank-one model: the static proposal.
    let big = low_rank(12, 24);
    let r = Rung0::choose(&big, 1.0, 3, ALL, Par::Seq).unwrap();
    assert_eq!(r.name(), "static-mh");
    assert_eq!(r.acceptance(), None, "no step yet");
    let mut x = big.default_chains(64);
    let mut rngs = RngStreams::new(3, 64);
    for _ in 0..5 {
        r.step(&big, 1.0, &mut x, rngs.as_mut_slice(), Par::Seq);
    }
    let a = r.acceptance().expect("steps made");
    assert!((0.0..=1.0).contains(&a) && a > 0.0, "{a}");
    // The clone keeps the acceptance so far.
    assert_eq!(r.clone().acceptance(), Some(a));
    // Real-valued hidden units: neither enumeration nor the static sampler.
    let gauss = Rbm::new(
        Bernoulli::with_fields(vec![0.1; 4]),
        Gaussian::<f64>::standard(2),
        DMatrix::from_element(4, 2, 0.3),
    )
    .unwrap();
    let r = Rung0::choose(&gauss, 1.0, 3, ALL, Par::Seq).unwrap();
    assert_eq!(r.name(), "gibbs");
    // A non-finite beta cannot be enumerated.
    assert!(Rung0::choose(&small, f64::NAN, 3, ALL, Par::Seq).is_err());
}

#[test]
fn every_refresh_leaves_the_joint_law_invariant() {
    let rbm = model(1.0);
    for (beta, seed) in [(1.0, 11), (0.6, 12)] {
        let exact = Rung0::choose(&rbm, beta, 1, ALL, Par::Seq).unwrap();
        assert_eq!(exact.name(), "exact");
        let t = joint_invariance(&rbm, &exact, beta, DRAWS, seed);
        assert!(t.p_value > ALPHA, "exact, beta {beta}: {t:?}");
        let gibbs = Rung0::Gibbs(ebm_samplers::Gibbs::new(2));
        let t = joint_invariance(&rbm, &gibbs, beta, DRAWS, seed + 10);
        assert!(t.p_value > ALPHA, "gibbs, beta {beta}: {t:?}");
    }
    // The static refresh on a small rank-one model (enumeration forbidden).
    let lr = low_rank(6, 2);
    let no_enumeration = Rung0Limits {
        max_enumerated: 0,
        ..ALL
    };
    let mh = Rung0::choose(&lr, 1.0, 1, no_enumeration, Par::Seq).unwrap();
    assert_eq!(mh.name(), "static-mh");
    let t = joint_invariance(&lr, &mh, 1.0, DRAWS, 21);
    assert!(t.p_value > ALPHA, "static-mh: {t:?}");
}

#[test]
fn an_exact_refresh_of_another_model_is_rejected() {
    let rbm = model(1.0);
    // Built for the model with flipped visible fields: same sizes, another law.
    let other = Rung0::choose(&model(-1.0), 1.0, 1, ALL, Par::Seq).unwrap();
    let t = joint_invariance(&rbm, &other, 1.0, DRAWS, 31);
    assert!(t.p_value < REJECT, "{t:?}");
}

#[test]
#[should_panic(expected = "enumerated at beta")]
fn an_exact_refresh_stepped_at_another_beta_panics() {
    let rbm = model(1.0);
    let r = Rung0::choose(&rbm, 1.0, 1, ALL, Par::Seq).unwrap();
    let mut x = rbm.default_chains(4);
    let mut rngs = RngStreams::new(1, 4);
    r.step(&rbm, 0.5, &mut x, rngs.as_mut_slice(), Par::Seq);
}

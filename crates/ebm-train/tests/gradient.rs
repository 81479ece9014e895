//! The gradient estimate against finite differences of the exact log-likelihood, for every
//! pair of unit layers: data moments from the training code, model moments computed exactly
//! (all configurations of the enumerable layer weighted by their exact probabilities, through
//! the same `Moments::of_visible`), so the test checks the sufficient statistics and the
//! gradient formula with no sampling noise.

mod common;

use common::{all_configurations, perturb};
use ebm_core::{Par, Scalar};
use ebm_models::exact;
use ebm_models::{Bernoulli, DReLU, DiscreteLayer, Gaussian, Layer, Potts, Rbm, ReLU, Spin};
use ebm_train::{Gradient, Moments};
use nalgebra::DMatrix;

/// Deterministic layers of `n` units with uneven parameters, and valid visible samples.
trait Fixture: Layer<Scalar = f64> {
    fn fixture(n: usize, salt: f64) -> Self;
    fn samples(&self, n: usize) -> DMatrix<f64>;
}

fn wave(k: usize, salt: f64) -> f64 {
    ((k as f64 + 1.0) * 1.7 + salt).sin()
}

fn discrete_samples<L: DiscreteLayer<Scalar = f64>>(layer: &L, n: usize) -> DMatrix<f64> {
    let all = all_configurations(layer);
    let m = all.ncols();
    DMatrix::from_fn(layer.width(), n, |i, j| all[(i, (j * 7 + 3) % m)])
}

impl Fixture for Bernoulli<f64> {
    fn fixture(n: usize, salt: f64) -> Self {
        Bernoulli::new((0..n).map(|k| 0.8 * wave(k, salt)).collect())
    }
    fn samples(&self, n: usize) -> DMatrix<f64> {
        discrete_samples(self, n)
    }
}

impl Fixture for Spin<f64> {
    fn fixture(n: usize, salt: f64) -> Self {
        Spin::new((0..n).map(|k| 0.5 * wave(k, salt)).collect())
    }
    fn samples(&self, n: usize) -> DMatrix<f64> {
        discrete_samples(self, n)
    }
}

impl Fixture for Potts<f64> {
    fn fixture(n: usize, salt: f64) -> Self {
        Potts::new(3, (0..3 * n).map(|k| 0.7 * wave(k, salt)).collect()).unwrap()
    }
    fn samples(&self, n: usize) -> DMatrix<f64> {
        discrete_samples(self, n)
    }
}

fn real_samples(width: usize, n: usize, positive: bool) -> DMatrix<f64> {
    DMatrix::from_fn(width, n, |i, j| {
        let x = 1.3 * wave(i * 5 + j, 0.4);
        if positive { x.abs() } else { x }
    })
}

impl Fixture for Gaussian<f64> {
    fn fixture(n: usize, salt: f64) -> Self {
        Gaussian::new(
            (0..n).map(|k| 1.5 + 0.5 * wave(k, salt)).collect(),
            (0..n).map(|k| 0.4 * wave(k + 3, salt)).collect(),
        )
        .unwrap()
    }
    fn samples(&self, n: usize) -> DMatrix<f64> {
        real_samples(self.width(), n, false)
    }
}

impl Fixture for ReLU<f64> {
    fn fixture(n: usize, salt: f64) -> Self {
        ReLU::new(
            (0..n).map(|k| 1.5 + 0.5 * wave(k, salt)).collect(),
            (0..n).map(|k| 0.4 * wave(k + 3, salt)).collect(),
        )
        .unwrap()
    }
    fn samples(&self, n: usize) -> DMatrix<f64> {
        real_samples(self.width(), n, true)
    }
}

impl Fixture for DReLU<f64> {
    fn fixture(n: usize, salt: f64) -> Self {
        DReLU::new(
            (0..n).map(|k| 1.5 + 0.5 * wave(k, salt)).collect(),
            (0..n).map(|k| 1.2 + 0.3 * wave(k + 1, salt)).collect(),
            (0..n).map(|k| 0.4 * wave(k + 3, salt)).collect(),
            (0..n).map(|k| -0.3 * wave(k + 5, salt)).collect(),
        )
        .unwrap()
    }
    fn samples(&self, n: usize) -> DMatrix<f64> {
        real_samples(self.width(), n, false)
    }
}

fn model<V: Fixture, H: Fixture>() -> Rbm<V, H> {
    let v = V::fixture(3, 0.0);
    let h = H::fixture(2, 1.0);
    let w = DMatrix::from_fn(v.width(), h.width(), |i, j| 0.6 * wave(i * 11 + j * 3, 2.0));
    Rbm::new(v, h, w).unwrap()
}

/// Checks the gradient from `Moments` against central finite differences of `ll`.
fn check<V: Fixture, H: Fixture>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<f64>,
    model_moments: &Moments,
    ll: impl Fn(&Rbm<V, H>) -> f64,
) {
    let data_moments = Moments::of_visible(rbm, data, None, Par::Seq);
    let g = Gradient::from_moments(&data_moments, model_moments, false).flat();
    let eps = 1e-5;
    let mut worst: f64 = 0.0;
    for k in 0..g.len() {
        let fd = (ll(&perturb(rbm, k, eps)) - ll(&perturb(rbm, k, -eps))) / (2.0 * eps);
        let err = (fd - g[k]).abs();
        worst = worst.max(err);
        assert!(
            err < 1e-6 * (1.0 + fd.abs()),
            "{}-{}: parameter {k}: gradient {} vs finite difference {fd}",
            V::KIND,
            H::KIND,
            g[k]
        );
    }
    assert!(g.iter().any(|x| x.abs() > 1e-3), "degenerate fixture");
    assert!(worst.is_finite());
}

/// Discrete visible layer: enumerate v.
fn discrete_visible<V: Fixture + DiscreteLayer, H: Fixture>() {
    let rbm: Rbm<V, H> = model();
    let data = rbm.visible().samples(5);
    let all = all_configurations(rbm.visible());
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let exact_moments = Moments::of_visible(&rbm, &all, Some(&p), Par::Seq);
    check(&rbm, &data, &exact_moments, |m| common::exact_ll(m, &data));
}

/// Continuous visible layer: enumerate h on the transposed model, and map the moments back.
fn discrete_hidden<V: Fixture, H: Fixture + DiscreteLayer>() {
    let rbm: Rbm<V, H> = model();
    let data = rbm.visible().samples(5);
    let t = rbm.transposed();
    let all = all_configurations(t.visible());
    let f = exact::hidden_free_energies(&rbm, 1.0, Par::Seq).unwrap();
    let m = f.iter().map(|x| -x).fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = f.iter().map(|x| (-x - m).exp()).collect();
    let mt = Moments::of_visible(&t, &all, Some(&w), Par::Seq);
    let exact_moments = Moments {
        visible_hidden: mt.visible_hidden.transpose(),
        visible_mean: mt.hidden_mean,
        hidden_mean: mt.visible_mean,
        visible_statistics: mt.hidden_statistics,
        hidden_statistics: mt.visible_statistics,
    };
    let ll = |m: &Rbm<V, H>| {
        common::mean_neg_free_energy(m, &data)
            - exact::log_partition_by_hidden(m, 1.0, Par::Seq).unwrap()
    };
    check(&rbm, &data, &exact_moments, ll);
}

macro_rules! combos {
    ($runner:ident: $($name:ident => ($v:ty, $h:ty)),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $runner::<$v, $h>();
            }
        )*
    };
}

combos!(discrete_visible:
    bernoulli_bernoulli => (Bernoulli<f64>, Bernoulli<f64>),
    bernoulli_spin => (Bernoulli<f64>, Spin<f64>),
    bernoulli_potts => (Bernoulli<f64>, Potts<f64>),
    bernoulli_gaussian => (Bernoulli<f64>, Gaussian<f64>),
    bernoulli_relu => (Bernoulli<f64>, ReLU<f64>),
    bernoulli_drelu => (Bernoulli<f64>, DReLU<f64>),
    spin_bernoulli => (Spin<f64>, Bernoulli<f64>),
    spin_spin => (Spin<f64>, Spin<f64>),
    spin_potts => (Spin<f64>, Potts<f64>),
    spin_gaussian => (Spin<f64>, Gaussian<f64>),
    spin_relu => (Spin<f64>, ReLU<f64>),
    spin_drelu => (Spin<f64>, DReLU<f64>),
    potts_bernoulli => (Potts<f64>, Bernoulli<f64>),
    potts_spin => (Potts<f64>, Spin<f64>),
    potts_potts => (Potts<f64>, Potts<f64>),
    potts_gaussian => (Potts<f64>, Gaussian<f64>),
    potts_relu => (Potts<f64>, ReLU<f64>),
    potts_drelu => (Potts<f64>, DReLU<f64>),
);

combos!(discrete_hidden:
    gaussian_bernoulli => (Gaussian<f64>, Bernoulli<f64>),
    gaussian_spin => (Gaussian<f64>, Spin<f64>),
    gaussian_potts => (Gaussian<f64>, Potts<f64>),
    relu_bernoulli => (ReLU<f64>, Bernoulli<f64>),
    relu_spin => (ReLU<f64>, Spin<f64>),
    relu_potts => (ReLU<f64>, Potts<f64>),
    drelu_bernoulli => (DReLU<f64>, Bernoulli<f64>),
    drelu_spin => (DReLU<f64>, Spin<f64>),
    drelu_potts => (DReLU<f64>, Potts<f64>),
);

/// Negative control: a gradient whose hidden statistics come from sampled-like hard values
/// (the hidden conditional mean replaced by 0/1 thresholding) is rejected by the same check.
#[test]
fn a_wrong_statistic_is_caught() {
    let rbm: Rbm<Bernoulli<f64>, Bernoulli<f64>> = model();
    let data = rbm.visible().samples(5);
    let all = all_configurations(rbm.visible());
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let mut wrong = Moments::of_visible(&rbm, &all, Some(&p), Par::Seq);
    wrong.hidden_mean.iter_mut().for_each(|x| *x = x.round());
    wrong
        .hidden_statistics
        .iter_mut()
        .for_each(|x| *x = x.round());
    let result = std::panic::catch_unwind(|| {
        check(&rbm, &data, &wrong, |m| common::exact_ll(m, &data));
    });
    assert!(
        result.is_err(),
        "the broken model term passed the finite-difference check"
    );
}

/// f32 models give the same moments as f64 ones up to f32 rounding, and `Par::Seq` and
/// `Par::Rayon` give bit-identical moments on a batch spanning several chunks.
#[test]
fn moments_are_thread_count_invariant_and_f32_accurate() {
    let rbm: Rbm<Bernoulli<f64>, Potts<f64>> = model();
    let v = DMatrix::from_fn(3, 1000, |i, j| ((i * 7 + j * 13) % 3 == 0) as u8 as f64);
    let w: Vec<f64> = (0..1000).map(|j| 1.0 + (j % 5) as f64).collect();
    let a = Moments::of_visible(&rbm, &v, Some(&w), Par::Seq);
    let b = Moments::of_visible(&rbm, &v, Some(&w), Par::Rayon);
    assert_eq!(a, b);
    let (vis, hid, weights) = rbm.clone().into_parts();
    let f32_rbm = Rbm::new(
        Bernoulli::<f32>::new(vis.fields.iter().map(|&x| x as f32).collect()),
        Potts::<f32>::new(3, hid.fields().iter().map(|&x| x as f32).collect()).unwrap(),
        weights.map(|x| x as f32),
    )
    .unwrap();
    let c = Moments::of_visible(&f32_rbm, &v.map(|x| x as f32), Some(&w), Par::Rayon);
    let close = |x: &[f64], y: &[f64]| x.iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-5);
    assert!(close(
        a.visible_hidden.as_slice(),
        c.visible_hidden.as_slice()
    ));
    assert!(close(&a.hidden_statistics, &c.hidden_statistics));
    assert!(close(&a.hidden_mean, &c.hidden_mean));
    let _ = f32::NAME;
}

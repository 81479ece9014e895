//! The gradient estimate against finite differences of the exact log-likelihood, for every
//! pair of unit layers: data moments from the training code, model moments computed exactly,
//! through the same `Moments::of_visible`, so the test checks the sufficient statistics and the
//! gradient formula with no sampling noise.
//!
//! - One layer discrete: all configurations of the enumerable layer, weighted by their exact
//!   probabilities.
//! - Both layers real-valued (Gaussian, ReLU, dReLU on both sides): nothing to enumerate, but with
//!   one visible unit (and, for one pair, two) the hidden layer is summed out by its cumulant
//!   generating function, \\(p(v) \propto e^{-F(v)}\\) with \\(F(v) = U_V(v) - \Gamma_H(W^\top v)\\)
//!   (`Rbm::free_energy_visible`), so \\(\log Z = \log\int e^{-F(v)}\,dv\\) is a 1-D (2-D) integral.
//!   It is computed by composite Gauss–Legendre quadrature on the box where \\(-F\\) is within 40
//!   of its maximum, split at \\(v = 0\\) (the kink of ReLU / dReLU potentials), to \\(\sim 10^{-13}\\)
//!   (checked by doubling the nodes, and against the closed form for Gaussian x Gaussian). The
//!   exact model moments are those of the quadrature nodes weighted by \\(q_i e^{-F(v_i)}\\).
//!   Their tolerance is derived per parameter from the error analysis of central differences
//!   (`check_bounded`), and a negative control (`a_wrong_real_statistic_is_caught`) shows it
//!   rejects a wrong hidden statistic.

mod common;

use common::{VisibleQuadrature, all_configurations, composite_gauss_legendre, perturb};
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

/// Real visible and real hidden layers: `nv` visible and `nh` hidden units, couplings small
/// enough for the model to be normalisable (see [`assert_normalisable`]).
fn real_model<V: Fixture, H: Fixture>(nv: usize, nh: usize) -> Rbm<V, H> {
    let v = V::fixture(nv, 0.0);
    let h = H::fixture(nh, 1.0);
    let w = DMatrix::from_fn(nv, nh, |i, j| 0.6 * wave(i * 11 + j * 3, 2.0));
    Rbm::new(v, h, w).unwrap()
}

/// Per unit, the smallest precision of a layer (its tensors named `gamma*`: \\(\gamma\\), or
/// \\(\gamma_\pm\\) for dReLU).
fn smallest_precisions<L: Layer<Scalar = f64>>(layer: &L) -> Vec<f64> {
    let mut g = vec![f64::INFINITY; layer.n_units()];
    for (name, _, values) in layer.tensors() {
        if name.starts_with("gamma") {
            g.iter_mut().zip(values).for_each(|(a, b)| *a = a.min(b));
        }
    }
    g
}

/// Asserts \\(\int e^{-F(v)} dv < \infty\\) with a margin, and returns the smallest eigenvalue
/// of the matrix below. For large \\(|v|\\), \\(U_V(v) \ge \frac12\sum_i\gamma^V_{i}v_i^2 - O(|v|)\\)
/// and each hidden CGF grows at most like a Gaussian one with the unit's smallest precision,
/// \\(\Gamma_\mu(I) \le I^2 / (2\gamma^H_\mu) + O(|I|)\\) (a ReLU restricts the Gaussian
/// integral to a half-line, a dReLU is at most twice its larger half-Gaussian). So
/// \\(-F(v) \le -\frac12 v^\top A v + O(|v|)\\) with
/// \\(A = \mathrm{diag}(\gamma^V) - W\,\mathrm{diag}(1/\gamma^H)\,W^\top\\) (smallest precisions),
/// and \\(A \succ 0\\) makes the density integrable with Gaussian tails. For Gaussian x Gaussian
/// \\(A\\) is the Schur complement of the hidden block in the joint precision matrix (blocks
/// \\(\mathrm{diag}\,\gamma^V\\) and \\(-W\\) above \\(-W^\top\\) and \\(\mathrm{diag}\,\gamma^H\\)),
/// so the condition is also necessary: the quadratic form \\(E(v, h)\\) must be positive definite.
fn assert_normalisable<V: Fixture, H: Fixture>(rbm: &Rbm<V, H>) -> f64 {
    let (gv, gh) = (
        smallest_precisions(rbm.visible()),
        smallest_precisions(rbm.hidden()),
    );
    let w = rbm.weights();
    let a = DMatrix::from_fn(gv.len(), gv.len(), |i, j| {
        let coupling: f64 = (0..gh.len())
            .map(|mu| w[(i, mu)] * w[(j, mu)] / gh[mu])
            .sum();
        if i == j { gv[i] - coupling } else { -coupling }
    });
    let smallest = a.symmetric_eigenvalues().min();
    assert!(
        smallest > 0.25,
        "{}-{}: not safely normalisable, smallest eigenvalue {smallest}",
        V::KIND,
        H::KIND
    );
    smallest
}

/// The quadrature of a real x real model at `resolution` (1, or 2 for twice as many nodes per
/// unit): composite Gauss–Legendre on the box where \\(-F\\) is within 40 of its maximum
/// (the mass outside is below \\(e^{-40} \approx 4\cdot 10^{-18}\\) relative, the tails being
/// Gaussian, see [`assert_normalisable`]), split at 0 where ReLU / dReLU potentials have a kink
/// (ReLU visible units live on \\([0, \infty)\\)), so the integrand is analytic on every panel and
/// the rule converges geometrically. The nodes are fixed from the unperturbed model and reused
/// for every finite-difference evaluation.
fn real_quadrature<V: Fixture, H: Fixture>(
    rbm: &Rbm<V, H>,
    resolution: usize,
) -> VisibleQuadrature {
    let one_unit = rbm.visible().width() == 1;
    let (reach, step, panel, order) = if one_unit {
        (40.0, 0.01, 0.5, 20)
    } else {
        (15.0, 0.1, 2.0, 12)
    };
    let rules: Vec<_> = common::visible_support_box(rbm, reach, step, 40.0)
        .into_iter()
        .map(|(lo, hi)| {
            let breaks = if lo < 0.0 && hi > 0.0 {
                vec![lo, 0.0, hi]
            } else {
                vec![lo, hi]
            };
            composite_gauss_legendre(&breaks, panel / resolution as f64, order)
        })
        .collect();
    VisibleQuadrature::product(&rules)
}

/// Finite-difference step for the real x real pairs: the central difference has truncation
/// error \\(\frac{\epsilon^2}{6}|f'''|\\) and rounding error \\(\delta/\epsilon\\) for a function
/// evaluated to \\(\pm\delta\\); with \\(\delta \sim 10^{-12}\\) (see [`rounding_bound`]) and
/// \\(|f'''| \sim 1\\)–\\(10\\) the sum is smallest near \\((3\delta/|f'''|)^{1/3} \sim 10^{-4}\\).
const REAL_EPS: f64 = 1e-4;

/// A bound \\(\delta\\) on the absolute rounding error of the quadrature log-likelihood, over
/// `n` nodes with free energies of magnitude `scale`, in units of \\(u = 2^{-53}\\): the naive sum
/// of `n` positive terms has relative error \\(\le (n - 1)u\\); each term \\(q_i e^{-F(v_i)}\\) and
/// each data term carries the rounding of \\(F(v_i)\\) (a handful of operations and special
/// functions accurate to a few ulp, on values of magnitude `scale`), bounded very generously by
/// \\(10^4 u\\,(1 + \mathrm{scale})\\) in all.
fn rounding_bound(n: usize, scale: f64) -> f64 {
    (n as f64 + 1e4 * (1.0 + scale)) * f64::EPSILON / 2.0
}

/// Checks the gradient from `Moments` against central finite differences (step [`REAL_EPS`]) of
/// `ll`, evaluated to within `delta`, with a tolerance from the error analysis of central
/// differences rather than a fixed one: for parameter \\(k\\),
///
/// \\[ |\mathrm{fd}_k - g_k| \le \frac{\epsilon^2}{6}\,2|f'''_k| + \frac{\delta}{\epsilon}
///   + n u (1 + |g_k|) + 10^{-9}|\mathrm{fd}_k|, \\]
///
/// truncation (with \\(f'''\\) estimated by the third central difference at step \\(10^{-2}\\), its
/// own error \\(O(10^{-4} f^{(5)})\\); the factor 2 covers \\(f'''\\) varying over
/// \\([x - \epsilon, x + \epsilon]\\) and that error), rounding of the two evaluations, rounding of
/// the \\(n\\)-term weighted sums in `Moments`, and the rounding of \\(x \pm \epsilon\\) itself
/// (relative \\(u(1 + |x|)/\epsilon \le 10^{-11}\\) for \\(|x| \le 3\\)). Returns the worst
/// \\(|\mathrm{fd} - g| / (1 + |\mathrm{fd}|)\\) and the worst error-to-tolerance ratio.
fn check_bounded<V: Fixture, H: Fixture>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<f64>,
    model_moments: &Moments,
    n_nodes: usize,
    delta: f64,
    ll: impl Fn(&Rbm<V, H>) -> f64,
) -> (f64, f64) {
    let data_moments = Moments::of_visible(rbm, data, None, Par::Seq);
    let g = Gradient::from_moments(&data_moments, model_moments, false).flat();
    let (eps, h) = (REAL_EPS, 1e-2);
    let u = f64::EPSILON / 2.0;
    let (mut worst, mut worst_ratio): (f64, f64) = (0.0, 0.0);
    for k in 0..g.len() {
        let at = |t: f64| ll(&perturb(rbm, k, t));
        let fd = (at(eps) - at(-eps)) / (2.0 * eps);
        let third = (at(2.0 * h) - 2.0 * at(h) + 2.0 * at(-h) - at(-2.0 * h)) / (2.0 * h.powi(3));
        let tol = eps * eps / 6.0 * 2.0 * third.abs()
            + delta / eps
            + n_nodes as f64 * u * (1.0 + g[k].abs())
            + 1e-9 * fd.abs();
        let err = (fd - g[k]).abs();
        worst = worst.max(err / (1.0 + fd.abs()));
        worst_ratio = worst_ratio.max(err / tol);
        assert!(
            err <= tol,
            "{}-{}: parameter {k}: gradient {} vs finite difference {fd} (error {err:.2e}, \
             tolerance {tol:.2e})",
            V::KIND,
            H::KIND,
            g[k]
        );
    }
    assert!(g.iter().any(|x| x.abs() > 1e-3), "degenerate fixture");
    (worst, worst_ratio)
}

/// Real visible and real hidden layers, `nv` visible units: the model moments of the quadrature
/// (converged: doubling the nodes changes \\(\log Z\\) by \\(< 10^{-12}\\) and the gradient by
/// \\(< 10^{-10}\\)) against finite differences of \\(\langle -F\rangle_{\mathcal D} - \log Z\\).
fn real_real_units<V: Fixture, H: Fixture>(nv: usize, nh: usize) {
    let rbm: Rbm<V, H> = real_model(nv, nh);
    let margin = assert_normalisable(&rbm);
    let data = rbm.visible().samples(5);
    let quad = real_quadrature(&rbm, 1);
    let fine = real_quadrature(&rbm, 2);
    let (log_z, log_z_fine) = (quad.log_partition(&rbm), fine.log_partition(&rbm));
    assert!(
        (log_z - log_z_fine).abs() < 1e-12,
        "{}-{}: log Z {log_z} with {} nodes, {log_z_fine} with {}",
        V::KIND,
        H::KIND,
        quad.len(),
        fine.len()
    );
    let exact = |q: &VisibleQuadrature| {
        Moments::of_visible(&rbm, &q.nodes, Some(&q.probabilities(&rbm)), Par::Seq)
    };
    let model_moments = exact(&quad);
    let data_moments = Moments::of_visible(&rbm, &data, None, Par::Seq);
    let g = Gradient::from_moments(&data_moments, &model_moments, false).flat();
    let g_fine = Gradient::from_moments(&data_moments, &exact(&fine), false).flat();
    let moved = g
        .iter()
        .zip(&g_fine)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        moved < 1e-10,
        "{}-{}: gradient moved by {moved:.2e} on doubling the nodes",
        V::KIND,
        H::KIND
    );
    let mean_f = -common::mean_neg_free_energy(&rbm, &data);
    let delta = rounding_bound(quad.len(), 1.0 + mean_f.abs() + log_z.abs());
    let ll = |m: &Rbm<V, H>| common::mean_neg_free_energy(m, &data) - quad.log_partition(m);
    let (worst, ratio) = check_bounded(&rbm, &data, &model_moments, quad.len(), delta, ll);
    eprintln!(
        "{}-{} ({nv}x{nh}): {} nodes, log Z = {log_z:.12}, |doubled - log Z| = {:.1e}, \
         gradient moved {moved:.1e}, A min eigenvalue {margin:.3}, worst |fd - g| / (1 + |fd|) \
         = {worst:.2e}, worst error / tolerance = {ratio:.3}",
        V::KIND,
        H::KIND,
        quad.len(),
        (log_z - log_z_fine).abs()
    );
}

/// One real visible unit, three real hidden units.
fn real_real<V: Fixture, H: Fixture>() {
    real_real_units::<V, H>(1, 3);
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

combos!(real_real:
    gaussian_gaussian => (Gaussian<f64>, Gaussian<f64>),
    gaussian_relu => (Gaussian<f64>, ReLU<f64>),
    gaussian_drelu => (Gaussian<f64>, DReLU<f64>),
    relu_gaussian => (ReLU<f64>, Gaussian<f64>),
    relu_relu => (ReLU<f64>, ReLU<f64>),
    relu_drelu => (ReLU<f64>, DReLU<f64>),
    drelu_gaussian => (DReLU<f64>, Gaussian<f64>),
    drelu_relu => (DReLU<f64>, ReLU<f64>),
    drelu_drelu => (DReLU<f64>, DReLU<f64>),
);

/// Two real visible units (tensor-product quadrature), the pair with a kink in every direction.
#[test]
fn drelu_drelu_two_visible_units() {
    real_real_units::<DReLU<f64>, DReLU<f64>>(2, 2);
}

/// The quadrature against the closed form for Gaussian x Gaussian, where
/// \\(E = \frac12 x^\top P x - b^\top x\\) with \\(x = (v, h)\\), \\(P\\) the joint precision
/// matrix of [`assert_normalisable`] and \\(b = (\theta^V, \theta^H)\\):
/// \\(\log Z = \frac12 b^\top P^{-1} b + \frac d2\log 2\pi - \frac12\log\det P\\).
/// This checks the range, the rule and the sign conventions of \\(F\\), which the
/// gradient check alone cannot (it differentiates whatever the quadrature computes).
#[test]
fn quadrature_log_partition_matches_the_gaussian_closed_form() {
    let (x, w) = common::gauss_legendre(20);
    assert!((w.iter().sum::<f64>() - 2.0).abs() < 1e-14);
    let moment = |p: i32| x.iter().zip(&w).map(|(x, w)| w * x.powi(p)).sum::<f64>();
    assert!((moment(38) - 2.0 / 39.0).abs() < 1e-14 && moment(39).abs() < 1e-14);
    for nv in [1, 2] {
        let rbm: Rbm<Gaussian<f64>, Gaussian<f64>> = real_model(nv, 3);
        let (v, h) = (rbm.visible(), rbm.hidden());
        let d = nv + 3;
        let a = DMatrix::from_fn(d, d, |i, j| match (i < nv, j < nv) {
            (true, true) => {
                if i == j {
                    v.gamma()[i]
                } else {
                    0.0
                }
            }
            (false, false) => {
                if i == j {
                    h.gamma()[i - nv]
                } else {
                    0.0
                }
            }
            (true, false) => -rbm.weights()[(i, j - nv)],
            (false, true) => -rbm.weights()[(j, i - nv)],
        });
        let b = nalgebra::DVector::from_iterator(d, v.theta().iter().chain(h.theta()).copied());
        let chol = a.clone().cholesky().expect("positive definite");
        let log_det: f64 = 2.0 * chol.l().diagonal().iter().map(|x| x.ln()).sum::<f64>();
        let closed = 0.5 * b.dot(&chol.solve(&b))
            + 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln()
            - 0.5 * log_det;
        let quad = real_quadrature(&rbm, 1).log_partition(&rbm);
        assert!(
            (quad - closed).abs() < 1e-12,
            "{nv} visible: quadrature {quad} vs closed form {closed}"
        );
    }
}

/// Negative control for a real x real pair: the mean-field mistake
/// \\(\mathbb E[h^2/2 \mid v] \to \mathbb E[h \mid v]^2/2\\) (the conditional variance dropped) in
/// the model term of the ReLU precision statistics is rejected by the same check.
#[test]
fn a_wrong_real_statistic_is_caught() {
    let rbm: Rbm<Gaussian<f64>, ReLU<f64>> = real_model(1, 3);
    let data = rbm.visible().samples(5);
    let quad = real_quadrature(&rbm, 1);
    let p = quad.probabilities(&rbm);
    let mut wrong = Moments::of_visible(&rbm, &quad.nodes, Some(&p), Par::Seq);
    let nh = rbm.hidden().width();
    for (j, v) in quad.nodes.column_iter().enumerate() {
        let mut var: Vec<f64> = (0..nh).map(|mu| rbm.weights()[(0, mu)] * v[0]).collect();
        rbm.hidden().variance_in_place(&mut var, 1.0);
        // The first `nh` hidden statistics are those of gamma: E[h^2 / 2 | v].
        for (s, x) in wrong.hidden_statistics.iter_mut().zip(&var) {
            *s -= p[j] * x / 2.0;
        }
    }
    let mean_f = -common::mean_neg_free_energy(&rbm, &data);
    let delta = rounding_bound(
        quad.len(),
        1.0 + mean_f.abs() + quad.log_partition(&rbm).abs(),
    );
    let result = std::panic::catch_unwind(|| {
        let ll = |m: &Rbm<Gaussian<f64>, ReLU<f64>>| {
            common::mean_neg_free_energy(m, &data) - quad.log_partition(m)
        };
        check_bounded(&rbm, &data, &wrong, quad.len(), delta, ll);
    });
    assert!(
        result.is_err(),
        "the broken real x real model term passed the finite-difference check"
    );
}

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

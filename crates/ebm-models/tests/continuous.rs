//! Real-valued layers ([`Gaussian`], [`ReLU`], [`DReLU`]) against numerical quadrature and exact
//! distribution functions; RBMs with real hidden units against brute-force marginalisation;
//! exact invariance of one Gibbs sweep on them; the RBM forms of the Curie–Weiss and Hopfield
//! models; Gaussian visible units.
//!
//! The quadrature and the exact distribution functions use only the documented potentials
//! (through `Layer::unit_energy`) and the parametrisation of each side of the support as a
//! Gaussian piece of precision \\(\beta\gamma\\) and mode \\((\theta + I)/\gamma\\); they never call
//! the layers' own CGF, moments or special-function code paths (except `erfcx`/`ndtr` for
//! the closed-form truncated-normal CDF, which are tested against 50-digit values in ebm-core).

use ebm_core::special::{erfcx, ndtr};
use ebm_core::{ConditionalSampler, ExactLogPartition, Par, RngStreams};
use ebm_models::{
    Bernoulli, CurieWeiss, DReLU, DiscreteLayer, Gaussian, Hopfield, Layer, Rbm, ReLU, Spin, exact,
};
use ebm_testkit::chi_square;
use nalgebra::DMatrix;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

// ----------------------------------------------------------------------------------------------
// Quadrature
// ----------------------------------------------------------------------------------------------

/// Composite Simpson quadrature of `f` on `[a, b]` with 2 x 10 000 panels. The integrands here
/// are Gaussian bells or exponential decays spanning the interval (at least 60 e-folds), for
/// which this is accurate to about 1e-13 relative.
fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    let n = 20_000;
    let h = (b - a) / n as f64;
    let mut sum = f(a) + f(b);
    for k in 1..n {
        sum += f(a + k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
    }
    sum * h / 3.0
}

/// One side of the support, \\(h = \text{sign}\cdot u\\) with \\(u \ge 0\\), on which the tempered
/// exponent is \\(-s(u - m)^2/2\\) up to a constant. Used to choose integration ranges and for
/// the closed-form CDF of each side; the quadrature integrand itself comes from `unit_energy`.
#[derive(Clone, Copy, Debug)]
struct Side {
    s: f64,
    m: f64,
    sign: f64,
}

impl Side {
    fn plus(gamma: f64, theta: f64, input: f64, beta: f64) -> Self {
        Self {
            s: beta * gamma,
            m: (theta + input) / gamma,
            sign: 1.0,
        }
    }
    fn minus(gamma: f64, theta: f64, input: f64, beta: f64) -> Self {
        Self {
            s: beta * gamma,
            m: -(theta + input) / gamma,
            sign: -1.0,
        }
    }
    /// Standardised truncation point: \\(u\sqrt s = t - a\\), \\(t \sim N(0,1) \mid t \ge a\\).
    fn a(&self) -> f64 {
        -self.m * self.s.sqrt()
    }
    /// A range of \\(u\\) outside which the integrand is below \\(e^{-60}\\) of its maximum.
    fn range(&self) -> (f64, f64) {
        let w = 40.0 / self.s.sqrt();
        if self.m > 0.0 {
            ((self.m - w).max(0.0), self.m + w)
        } else {
            (0.0, w.min(60.0 / (self.s * -self.m).max(1e-300)))
        }
    }
}

/// The law of unit `mu` of `layer` by quadrature of \\(e^{\beta(-U(h) + I h)}\\) over `sides`.
#[derive(Debug)]
struct Quadrature {
    /// \\(\Gamma^\beta(I)\\).
    cgf: f64,
    mean: f64,
    var: f64,
    /// The largest exponent (the integrand is shifted by it); rounding of the exponents
    /// themselves limits the attainable relative accuracy to about `1e-16 * |shift|`.
    shift: f64,
    /// Probability of each side.
    p_sides: Vec<f64>,
}

fn quadrature<L: Layer<Scalar = f64>>(
    layer: &L,
    mu: usize,
    input: f64,
    beta: f64,
    sides: &[Side],
) -> Quadrature {
    let e = |h: f64| -beta * (layer.unit_energy(mu, &[h]) - input * h);
    let shift = sides
        .iter()
        .map(|sd| e(sd.sign * sd.m.max(0.0)))
        .fold(f64::NEG_INFINITY, f64::max);
    let side_integral = |sd: &Side, g: &dyn Fn(f64) -> f64| {
        let (lo, hi) = sd.range();
        simpson(
            |u| {
                let h = sd.sign * u;
                (e(h) - shift).exp() * g(h)
            },
            lo,
            hi,
        )
    };
    let masses: Vec<f64> = sides.iter().map(|sd| side_integral(sd, &|_| 1.0)).collect();
    let z: f64 = masses.iter().sum();
    let mean = sides
        .iter()
        .map(|sd| side_integral(sd, &|h| h))
        .sum::<f64>()
        / z;
    let var = sides
        .iter()
        .map(|sd| side_integral(sd, &|h| (h - mean) * (h - mean)))
        .sum::<f64>()
        / z;
    Quadrature {
        cgf: z.ln() + shift,
        mean,
        var,
        shift,
        p_sides: masses.iter().map(|m| m / z).collect(),
    }
}

/// A layer of one unit under test with the sides of its support at a given input and beta.
type SidesFn<'a> = &'a dyn Fn(f64, f64) -> Vec<Side>;

fn gaussian_sides(gamma: f64, theta: f64) -> impl Fn(f64, f64) -> Vec<Side> {
    move |i, b| {
        vec![
            Side::plus(gamma, theta, i, b),
            Side::minus(gamma, theta, i, b),
        ]
    }
}

fn relu_sides(gamma: f64, theta: f64) -> impl Fn(f64, f64) -> Vec<Side> {
    move |i, b| vec![Side::plus(gamma, theta, i, b)]
}

fn drelu_sides(gp: f64, gm: f64, tp: f64, tm: f64) -> impl Fn(f64, f64) -> Vec<Side> {
    move |i, b| vec![Side::plus(gp, tp, i, b), Side::minus(gm, tm, i, b)]
}

/// Worst errors relative to the tolerance unit \\(\epsilon_q = 10^{-12} + 10^{-15}|\text{shift}|\\).
#[derive(Default, Debug)]
struct Worst {
    cgf: f64,
    mean: f64,
    var: f64,
}

/// Compares CGF, mean_and_variance, mean_in_place and variance_in_place of unit 0 with quadrature
/// over a grid of inputs and inverse temperatures; returns the worst relative errors.
fn check_against_quadrature<L: Layer<Scalar = f64>>(
    layer: &L,
    sides: SidesFn<'_>,
    mean_and_variance: &dyn Fn(f64, f64) -> (f64, f64),
    inputs: &[f64],
    tol: f64,
) -> Worst {
    let mut worst = Worst::default();
    for &input in inputs {
        for &beta in &[0.05, 0.5, 1.0, 1.7, 2.0] {
            let q = quadrature(layer, 0, input, beta, &sides(input, beta));
            // Rounding of exponents of size |shift| limits what quadrature can deliver.
            let t = tol + 2e-16 * q.shift.abs();
            let what = format!("{} at I = {input}, beta = {beta}", L::KIND);
            let got = layer.cgf(&[input], beta);
            let (mean, var) = mean_and_variance(input, beta);
            let sd = q.var.sqrt();
            let (ec, em, ev) = (
                (got - q.cgf).abs() / (1.0 + q.cgf.abs()),
                (mean - q.mean).abs() / (q.mean.abs() + sd),
                (var - q.var).abs() / q.var,
            );
            assert!(ec <= t, "{what}: Gamma {got} vs {} ({ec:e})", q.cgf);
            assert!(em <= t, "{what}: mean {mean} vs {} ({em:e})", q.mean);
            assert!(
                ev <= 10.0 * t,
                "{what}: variance {var} vs {} ({ev:e})",
                q.var
            );
            worst.cgf = worst.cgf.max(ec);
            worst.mean = worst.mean.max(em);
            worst.var = worst.var.max(ev);
            let mut m = [input];
            layer.mean_in_place(&mut m, beta);
            assert_eq!(m[0], mean, "{what}: mean_in_place");
            let mut v = [input];
            layer.variance_in_place(&mut v, beta);
            assert_eq!(v[0], var, "{what}: variance_in_place");
        }
    }
    worst
}

const INPUTS: [f64; 13] = [
    -1e3, -200.0, -30.0, -5.0, -1.0, -0.3, 0.0, 0.8, 2.0, 6.0, 40.0, 300.0, 1e3,
];

#[test]
fn cgf_mean_and_variance_match_quadrature_over_extreme_inputs() {
    let tol = 1e-9;
    let mut report = Vec::new();
    for &(gamma, theta) in &[(1.0, 0.0), (0.7, 0.3), (3.5, -1.2)] {
        let g = Gaussian::new(vec![gamma], vec![theta]).unwrap();
        let w = check_against_quadrature(
            &g,
            &gaussian_sides(gamma, theta),
            &|i, b| g.mean_and_variance(0, i, b),
            &INPUTS,
            tol,
        );
        report.push(("gaussian", w));
        let r = ReLU::new(vec![gamma], vec![theta]).unwrap();
        let w = check_against_quadrature(
            &r,
            &relu_sides(gamma, theta),
            &|i, b| r.mean_and_variance(0, i, b),
            &INPUTS,
            tol,
        );
        report.push(("relu", w));
    }
    for &(gp, gm, tp, tm) in &[
        (1.5, 0.6, 0.2, -0.8),
        (0.4, 3.0, -2.0, 1.5),
        (1.0, 1.0, 0.0, 0.0),
    ] {
        let d = DReLU::new(vec![gp], vec![gm], vec![tp], vec![tm]).unwrap();
        let w = check_against_quadrature(
            &d,
            &drelu_sides(gp, gm, tp, tm),
            &|i, b| d.mean_and_variance(0, i, b),
            &INPUTS,
            tol,
        );
        report.push(("drelu", w));
    }
    for (kind, w) in &report {
        eprintln!("{kind}: worst relative errors {w:?}");
    }
}

#[test]
fn extreme_inputs_beyond_1e3_stay_finite_and_match_quadrature() {
    // |I| up to 1e6: exponents of size 1e12 limit quadrature to ~1e-16 * 1e12 relative on Gamma
    // (the tolerance scales with them); the layers' closed forms stay finite and accurate.
    let inputs = [-1e6, -1e5, -1e4, 1e4, 1e5, 1e6];
    let r = ReLU::new(vec![0.8], vec![0.1]).unwrap();
    check_against_quadrature(
        &r,
        &relu_sides(0.8, 0.1),
        &|i, b| r.mean_and_variance(0, i, b),
        &inputs,
        1e-9,
    );
    let d = DReLU::new(vec![1.5], vec![0.6], vec![0.2], vec![-0.8]).unwrap();
    check_against_quadrature(
        &d,
        &drelu_sides(1.5, 0.6, 0.2, -0.8),
        &|i, b| d.mean_and_variance(0, i, b),
        &inputs,
        1e-9,
    );
    // Far below the support the ReLU law is exponential with rate beta |theta + I|: mean and
    // standard deviation 1 / (beta |theta + I|), up to relative corrections O(gamma / (beta I^2)).
    let (mean, var) = r.mean_and_variance(0, -1e12, 0.5);
    let rate = 0.5 * (1e12 - 0.1);
    assert!((mean * rate - 1.0).abs() < 1e-15, "{mean}");
    assert!((var * rate * rate - 1.0).abs() < 1e-15, "{var}");
    assert!(r.cgf(&[-1e200], 1.0).is_finite() && r.cgf(&[1e150], 1.0).is_finite());
}

#[test]
fn drelu_with_equal_sides_is_exactly_gaussian() {
    let g = Gaussian::new(vec![0.7], vec![0.3]).unwrap();
    let d = DReLU::new(vec![0.7], vec![0.7], vec![0.3], vec![0.3]).unwrap();
    for &input in &[-50.0, -2.0, 0.0, 0.4, 7.0, 80.0] {
        for &beta in &[0.3, 1.0, 1.9] {
            let (gc, dc) = (g.cgf(&[input], beta), d.cgf(&[input], beta));
            assert!((gc - dc).abs() < 1e-13 * (1.0 + gc.abs()), "{gc} vs {dc}");
            let (gm, gv) = g.mean_and_variance(0, input, beta);
            let (dm, dv) = d.mean_and_variance(0, input, beta);
            assert!((gm - dm).abs() < 1e-12 * (1.0 + gm.abs()), "{gm} vs {dm}");
            assert!((gv - dv).abs() < 1e-11 * gv, "{gv} vs {dv}");
        }
    }
}

// ----------------------------------------------------------------------------------------------
// Sampling
// ----------------------------------------------------------------------------------------------

/// Asymptotic Kolmogorov–Smirnov p-value of samples already mapped through their exact CDF.
fn ks_p_value(mut u: Vec<f64>) -> f64 {
    u.sort_by(f64::total_cmp);
    let n = u.len() as f64;
    let d = u
        .iter()
        .enumerate()
        .map(|(k, &x)| (x - k as f64 / n).max((k + 1) as f64 / n - x))
        .fold(0.0, f64::max);
    let x = d * n.sqrt();
    if x < 0.3 {
        return 1.0;
    }
    let p: f64 = (1..200)
        .map(|k| 2.0 * (-1f64).powi(k - 1) * (-2.0 * (k * k) as f64 * x * x).exp())
        .sum();
    p.clamp(0.0, 1.0)
}

/// \\(P(t - a \le d \mid t \ge a)\\) for a standard normal \\(t\\) and \\(d \ge 0\\), stable for any
/// \\(a\\): \\(1 - e^{-d(2a + d)/2}\operatorname{erfcx}((a + d)/\sqrt2)/\operatorname{erfcx}(a/\sqrt2)\\)
/// for \\(a > 0\\), \\((\Phi(a + d) - \Phi(a))/\Phi(-a)\\) otherwise.
fn excess_cdf(a: f64, d: f64) -> f64 {
    let r = std::f64::consts::FRAC_1_SQRT_2;
    if a > 0.0 {
        -(-0.5 * d * (2.0 * a + d) + (erfcx((a + d) * r) / erfcx(a * r)).ln()).exp_m1()
    } else {
        (ndtr(a + d) - ndtr(a)) / ndtr(-a)
    }
}

/// The exact CDF of a unit whose support is the given sides, with side probabilities `p`.
fn sides_cdf(sides: &[Side], p: &[f64], h: f64) -> f64 {
    let mut c = 0.0;
    for (sd, &pk) in sides.iter().zip(p) {
        let u = sd.sign * h;
        let below = if u >= 0.0 {
            excess_cdf(sd.a(), u * sd.s.sqrt())
        } else {
            0.0
        };
        // + side: P(h' <= h) = G(h). - side (h' = -u'): P(h' <= h) = 1 - G(-h), which is 1 for
        // h > 0 (there `below` is 0).
        c += pk * if sd.sign > 0.0 { below } else { 1.0 - below };
    }
    c.clamp(0.0, 1.0)
}

/// Draws `n` samples of unit 0 of `layer` at `input` and `beta`, as f64.
fn draws<L: Layer>(layer: &L, input: f64, beta: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut x = [<L::Scalar as ebm_core::Scalar>::from_f64(0.0)];
    (0..n)
        .map(|_| {
            x[0] = <L::Scalar as ebm_core::Scalar>::from_f64(input);
            layer.sample_in_place(&mut x, beta, &mut rng);
            ebm_core::Scalar::as_f64(x[0])
        })
        .collect()
}

/// KS p-value of `h` against the law given by `sides` (side probabilities by quadrature of the
/// potential of `reference`), and z-scores of the sample mean and variance against `(mean, var)`.
fn law_test<L: Layer<Scalar = f64>>(
    reference: &L,
    sides: &[Side],
    input: f64,
    beta: f64,
    h: &[f64],
    (mean, var): (f64, f64),
) -> (f64, f64, f64) {
    let q = quadrature(reference, 0, input, beta, sides);
    let p = ks_p_value(h.iter().map(|&x| sides_cdf(sides, &q.p_sides, x)).collect());
    let n = h.len() as f64;
    let m = h.iter().sum::<f64>() / n;
    let v = h.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    let m4 = h.iter().map(|x| (x - m).powi(4)).sum::<f64>() / n;
    let z_mean = (m - mean) / (var / n).sqrt();
    let z_var = (v - var) / ((m4 - v * v).max(1e-300) / n).sqrt();
    (p, z_mean, z_var)
}

/// One sampling case: the layer, its law's sides, a deliberately wrong layer (same modes, 1.3
/// times the precision, i.e. wrong variance), the input and beta.
fn check_sampling<L: Layer<Scalar = f64>>(
    layer: &L,
    wrong: &L,
    sides: &[Side],
    mv: (f64, f64),
    input: f64,
    beta: f64,
    seed: u64,
) {
    let n = 100_000;
    let what = format!("{} at I = {input}, beta = {beta}", L::KIND);
    let h = draws(layer, input, beta, n, seed);
    assert!(h.iter().all(|x| x.is_finite()), "{what}: non-finite draw");
    let (p, zm, zv) = law_test(layer, sides, input, beta, &h, mv);
    eprintln!("{what}: KS p = {p:.3}, mean z = {zm:.2}, variance z = {zv:.2}");
    assert!(p > 1e-4, "{what}: KS p = {p}");
    assert!(
        zm.abs() < 5.0 && zv.abs() < 5.0,
        "{what}: z-scores {zm}, {zv}"
    );
    // Negative control: the same test rejects draws with the wrong variance.
    let bad = draws(wrong, 1.3 * input, beta, n, seed + 1000);
    let (pb, _, _) = law_test(layer, sides, input, beta, &bad, mv);
    assert!(pb < 1e-6, "{what}: wrong sampler accepted, KS p = {pb}");
}

#[test]
fn samples_follow_the_exact_laws_even_far_in_the_tails() {
    // Gaussian.
    for (k, &(gamma, theta, input, beta)) in [(0.5, 0.2, 0.7, 1.6), (2.0, -0.3, 1e3, 0.3)]
        .iter()
        .enumerate()
    {
        let g = Gaussian::new(vec![gamma], vec![theta]).unwrap();
        let wrong = Gaussian::new(vec![1.3 * gamma], vec![1.3 * theta]).unwrap();
        let sides = gaussian_sides(gamma, theta)(input, beta);
        let mv = g.mean_and_variance(0, input, beta);
        check_sampling(&g, &wrong, &sides, mv, input, beta, k as u64);
    }
    // ReLU: truncation points a = -z from -1.5 (body) to 30 and 1e3 standard deviations,
    // where naive rejection never accepts and a non-complemented inverse CDF returns inf/NaN.
    for (k, &(gamma, theta, input, beta)) in [
        (1.0, 0.0, 1.5, 1.0),
        (1.0, 0.0, 0.0, 1.0),
        (2.5, -0.4, 0.9, 0.7),
        (1.0, 0.0, -2.0, 1.0),
        (1.0, 0.0, -30.0, 1.0),
        (1.0, 0.0, -1e3, 1.0),
        (0.5, 1.0, -3e3, 0.2),
    ]
    .iter()
    .enumerate()
    {
        let r = ReLU::new(vec![gamma], vec![theta]).unwrap();
        let wrong = ReLU::new(vec![1.3 * gamma], vec![1.3 * theta]).unwrap();
        let sides = relu_sides(gamma, theta)(input, beta);
        let mv = r.mean_and_variance(0, input, beta);
        check_sampling(&r, &wrong, &sides, mv, input, beta, 10 + k as u64);
    }
    // dReLU: body cases, then both sides far in their tails (a = 30 / 45 and a = 1e3 / 500,
    // side probabilities close to 1/2 so both tails are exercised).
    for (k, &(gp, gm, tp, tm, input, beta)) in [
        (1.5, 0.6, 0.2, -0.8, -3.0, 1.0),
        (1.5, 0.6, 0.2, -0.8, 0.1, 1.0),
        (1.5, 0.6, 0.2, -0.8, 2.5, 1.3),
        (1.0, 1.0, -30.0, 45.0, 0.0, 1.0),
        (1.0, 4.0, -1e3, 1e3, 0.0, 1.0),
    ]
    .iter()
    .enumerate()
    {
        let d = DReLU::new(vec![gp], vec![gm], vec![tp], vec![tm]).unwrap();
        let wrong = DReLU::new(
            vec![1.3 * gp],
            vec![1.3 * gm],
            vec![1.3 * tp],
            vec![1.3 * tm],
        )
        .unwrap();
        let sides = drelu_sides(gp, gm, tp, tm)(input, beta);
        let mv = d.mean_and_variance(0, input, beta);
        check_sampling(&d, &wrong, &sides, mv, input, beta, 20 + k as u64);
    }
}

#[test]
fn f32_layers_sample_the_exact_law_in_the_far_tail() {
    let n = 100_000;
    // ReLU<f32> at a = 30: draws are O(1/30), stored in f32.
    let r32 = ReLU::<f32>::new(vec![1.0], vec![0.0]).unwrap();
    let r64 = ReLU::<f64>::new(vec![1.0], vec![0.0]).unwrap();
    let sides = relu_sides(1.0, 0.0)(-30.0, 1.0);
    let h = draws(&r32, -30.0, 1.0, n, 77);
    assert!(h.iter().all(|&x| x.is_finite() && x >= 0.0));
    let (p, zm, zv) = law_test(
        &r64,
        &sides,
        -30.0,
        1.0,
        &h,
        r32.mean_and_variance(0, -30.0, 1.0),
    );
    assert!(
        p > 1e-4 && zm.abs() < 5.0 && zv.abs() < 5.0,
        "f32 ReLU: {p} {zm} {zv}"
    );
    // DReLU<f32>: CGF and moments are computed in f64 and agree with the f64 layer exactly
    // when the parameters are representable.
    let d32 = DReLU::<f32>::new(vec![1.5], vec![0.5], vec![0.25], vec![-0.75]).unwrap();
    let d64 = DReLU::<f64>::new(vec![1.5], vec![0.5], vec![0.25], vec![-0.75]).unwrap();
    assert_eq!(d32.cgf(&[3.0f32], 0.8), d64.cgf(&[3.0], 0.8));
    assert_eq!(
        d32.mean_and_variance(0, 3.0, 0.8),
        d64.mean_and_variance(0, 3.0, 0.8)
    );
}

#[test]
#[should_panic(expected = "beta > 0")]
fn real_layers_refuse_beta_zero() {
    ReLU::<f64>::standard(1).cgf(&[0.5], 0.0);
}

#[test]
fn parameters_are_validated() {
    use ebm_core::Error;
    assert!(matches!(
        Gaussian::<f64>::new(vec![0.0], vec![0.0]),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        ReLU::<f64>::new(vec![1.0, 1.0], vec![0.0]),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        DReLU::<f64>::new(vec![1.0], vec![-1.0], vec![0.0], vec![0.0]),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Gaussian::<f64>::new(vec![1.0], vec![f64::NAN]),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        ReLU::<f64>::new(vec![f64::INFINITY], vec![0.0]),
        Err(Error::NonFinite { .. })
    ));
    let g = Gaussian::<f32>::standard(3);
    assert_eq!(g.gamma(), &[1.0; 3]);
    assert_eq!(g.theta(), &[0.0; 3]);
    let t = g.tensors();
    assert_eq!(
        t.iter().map(|x| (x.0, x.1.clone())).collect::<Vec<_>>(),
        vec![("gamma", vec![3]), ("theta", vec![3])]
    );
    let get = |name: &str| {
        t.iter()
            .find(|x| x.0 == name)
            .map(|x| (x.1.clone(), x.2.clone()))
    };
    assert_eq!(Gaussian::from_tensors(3, &get).unwrap(), g);
    assert!(matches!(
        Gaussian::<f32>::from_tensors(2, &get),
        Err(Error::ShapeMismatch { .. })
    ));
    let bad_gamma = |name: &str| Some((vec![1], vec![if name == "gamma" { -1.0 } else { 0.0 }]));
    assert!(matches!(
        ReLU::<f64>::from_tensors(1, &bad_gamma),
        Err(Error::InvalidParameter { .. })
    ));
    let d = DReLU::<f64>::new(
        vec![1.0, 2.0],
        vec![0.5, 1.0],
        vec![0.1, 0.2],
        vec![-0.3, 0.4],
    )
    .unwrap();
    let t = d.tensors();
    assert_eq!(
        t.iter().map(|x| x.0).collect::<Vec<_>>(),
        vec!["gamma_plus", "gamma_minus", "theta_plus", "theta_minus"]
    );
    let get = |name: &str| {
        t.iter()
            .find(|x| x.0 == name)
            .map(|x| (x.1.clone(), x.2.clone()))
    };
    assert_eq!(DReLU::from_tensors(2, &get).unwrap(), d);
    let missing = |name: &str| {
        if name == "theta_minus" {
            None
        } else {
            get(name)
        }
    };
    assert!(DReLU::<f64>::from_tensors(2, &missing).is_err());
    let mut x = [7.0f64, -7.0];
    d.fill_default(&mut x);
    assert_eq!(x, [0.0, 0.0]);
    assert_eq!(d.unit_width(), 1);
    assert_eq!(<DReLU<f64> as Layer>::KIND, "drelu");
}

// ----------------------------------------------------------------------------------------------
// RBMs with real hidden units
// ----------------------------------------------------------------------------------------------

/// \\(-\log \int e^{-\beta E(v, h)} dh\\) by quadrature; the integral factorises over hidden units,
/// so it is a sum of one-dimensional quadratures.
fn brute_free_energy<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    v: &[f64],
    beta: f64,
    sides: &dyn Fn(usize, f64) -> Vec<Side>,
) -> f64 {
    let mut total = beta * rbm.visible().energy(v);
    for mu in 0..rbm.hidden().n_units() {
        let input: f64 = (0..v.len()).map(|i| rbm.weights()[(i, mu)] * v[i]).sum();
        total -= quadrature(rbm.hidden(), mu, input, beta, &sides(mu, input)).cgf;
    }
    total
}

/// One Gibbs sweep (hidden given visible at `hidden_beta`, then visible given hidden at `beta`)
/// from exact visible samples; returns the chi-square p-value of the visible configurations.
fn gibbs_sweep_p_value<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    hidden_beta: f64,
    seed: u64,
) -> f64 {
    let p = exact::visible_probabilities(rbm, beta, Par::Seq).unwrap();
    let mut state = ebm_testkit::exact_chains(rbm, beta, 100_000, seed);
    rbm.sample_hidden(
        &mut state.chains,
        hidden_beta,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    rbm.sample_visible(
        &mut state.chains,
        beta,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    let mut counts = vec![0u64; p.len()];
    for c in state.chains.visible.column_iter() {
        counts[rbm.visible().configuration_index(c.as_slice()) as usize] += 1;
    }
    chi_square(&counts, &p).p_value
}

fn check_rbm<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    sides: &dyn Fn(usize, f64) -> Vec<Side>,
    seed: u64,
) {
    let what = format!("Rbm<{}, {}>", V::KIND, H::KIND);
    let f = exact::visible_free_energies(rbm, beta, Par::Seq).unwrap();
    let mut v = vec![0.0; rbm.visible().width()];
    for (k, fk) in f.iter().enumerate() {
        rbm.visible().write_configuration(k as u128, &mut v);
        let b = brute_free_energy(rbm, &v, beta, sides);
        assert!(
            (fk - b).abs() < 1e-10 * (1.0 + b.abs()),
            "{what}: F({k}) = {fk} vs {b}"
        );
    }
    let p = gibbs_sweep_p_value(rbm, beta, beta, seed);
    assert!(p > 1e-4, "{what}: Gibbs invariance rejected, p = {p}");
    let p_bad = gibbs_sweep_p_value(rbm, beta, 0.3 * beta, seed + 1);
    assert!(
        p_bad < 1e-12,
        "{what}: wrong-beta Gibbs accepted, p = {p_bad}"
    );
    eprintln!("{what}: Gibbs p = {p:.3}, wrong-beta p = {p_bad:e}");
}

fn weights(nv: usize, nh: usize) -> DMatrix<f64> {
    DMatrix::from_fn(nv, nh, |i, j| ((i * 3 + j * 7) % 5) as f64 * 0.45 - 0.8)
}

#[test]
fn rbms_with_real_hidden_units_match_brute_force_and_gibbs_is_exact() {
    let beta = 0.9;
    // Spin visibles, 2 Gaussian hidden units.
    let (gm, th) = ([0.8, 1.5], [0.1, -0.3]);
    let g = Rbm::new(
        Spin::new(vec![0.1, -0.2, 0.3, 0.0, 0.15]),
        Gaussian::new(gm.to_vec(), th.to_vec()).unwrap(),
        weights(5, 2),
    )
    .unwrap();
    check_rbm(
        &g,
        beta,
        &|mu, i| gaussian_sides(gm[mu], th[mu])(i, beta),
        1,
    );
    // Bernoulli visibles, 3 ReLU hidden units.
    let (gm, th) = ([1.0, 0.6, 2.0], [0.5, -0.2, -1.0]);
    let r = Rbm::new(
        Bernoulli::new(vec![0.2, -0.1, 0.0, 0.3, -0.4, 0.1]),
        ReLU::new(gm.to_vec(), th.to_vec()).unwrap(),
        weights(6, 3) * 1.5,
    )
    .unwrap();
    check_rbm(&r, beta, &|mu, i| relu_sides(gm[mu], th[mu])(i, beta), 2);
    // Spin visibles, 2 dReLU hidden units.
    let (gp, gn, tp, tn) = ([1.2, 0.7], [0.5, 2.0], [0.4, 0.0], [-0.6, 0.3]);
    let d = Rbm::new(
        Spin::new(vec![0.1, -0.2, 0.3, 0.0]),
        DReLU::new(gp.to_vec(), gn.to_vec(), tp.to_vec(), tn.to_vec()).unwrap(),
        weights(4, 2),
    )
    .unwrap();
    check_rbm(
        &d,
        beta,
        &|mu, i| drelu_sides(gp[mu], gn[mu], tp[mu], tn[mu])(i, beta),
        3,
    );
    // Bernoulli visibles, dReLU hidden units at beta = 1.6.
    let d2 = Rbm::new(
        Bernoulli::new(vec![0.3, -0.5, 0.2, 0.1, 0.0]),
        DReLU::new(gp.to_vec(), gn.to_vec(), tp.to_vec(), tn.to_vec()).unwrap(),
        weights(5, 2),
    )
    .unwrap();
    check_rbm(
        &d2,
        1.6,
        &|mu, i| drelu_sides(gp[mu], gn[mu], tp[mu], tn[mu])(i, 1.6),
        4,
    );
}

#[test]
fn curie_weiss_and_hopfield_are_gaussian_hidden_rbms() {
    // Spec §7.10: N = 10, w = 1.2: log Z_RBM = 9.836017589918926.
    let cw = CurieWeiss::new(10, 1.44, 0.0).unwrap();
    let rbm = cw.to_rbm().unwrap();
    let lz = exact::log_partition_by_visible(&rbm, 1.0, Par::Seq).unwrap();
    assert!((lz - 9.836_017_589_918_926).abs() < 1e-12, "{lz}");
    for (h, beta) in [(0.0, 1.0), (0.2, 0.6)] {
        let cw = CurieWeiss::new(8, 1.7, h).unwrap();
        let rbm = cw.to_rbm().unwrap();
        let f = exact::visible_free_energies(&rbm, beta, Par::Seq).unwrap();
        let mut v = vec![0.0; 8];
        let c = -0.5 * (2.0 * std::f64::consts::PI / beta).ln();
        for (k, fk) in f.iter().enumerate() {
            rbm.visible().write_configuration(k as u128, &mut v);
            assert!((fk - (beta * cw.energy(&v) + c)).abs() < 1e-12);
        }
        let lz_rbm = exact::log_partition_by_visible(&rbm, beta, Par::Seq).unwrap();
        assert!((lz_rbm - (cw.log_partition(beta) - c)).abs() < 1e-11);
    }
    let xi = DMatrix::from_fn(
        9,
        3,
        |i, mu| if (i * 5 + mu * 2) % 3 == 0 { -1.0 } else { 1.0 },
    );
    let hop = Hopfield::new(xi, 1.3, (0..9).map(|i| 0.05 * i as f64 - 0.2).collect()).unwrap();
    let rbm = hop.to_rbm().unwrap();
    let beta = 0.8;
    let c = -1.5 * (2.0 * std::f64::consts::PI / beta).ln();
    let lz_rbm = exact::log_partition_by_visible(&rbm, beta, Par::Seq).unwrap();
    assert!((lz_rbm - (hop.log_partition_exact(beta).unwrap() - c)).abs() < 1e-10);
    assert!(CurieWeiss::new(4, -1.0, 0.0).unwrap().to_rbm().is_err());
}

#[test]
fn real_layers_stay_finite_for_huge_inputs_in_f32() {
    // f32 parameters work and sampling stays finite for huge inputs.
    let r = ReLU::<f32>::standard(2);
    let mut rngs = RngStreams::new(1, 1);
    let mut x = [-1e6f32, 1e6];
    r.sample_in_place(&mut x, 1.0, &mut rngs.as_mut_slice()[0]);
    assert!(x.iter().all(|v| v.is_finite() && *v >= 0.0));
    assert!(x[1] > 9e5);
    let cw = CurieWeiss::new(6, 1.0, 0.0).unwrap();
    assert!(cw.log_partition(1.0).is_finite());
}

/// Gaussian visible units with discrete hidden units: the visible law is a mixture of
/// Gaussians indexed by h, whose exact weights come from enumerating the hidden layer. Chains
/// started exactly and advanced by Gibbs sweeps must keep the exact first and second moments.
#[test]
fn gaussian_visible_layer_keeps_exact_moments_under_gibbs() {
    let (nv, beta) = (4usize, 0.8);
    let gamma = vec![1.0, 2.0, 0.5, 1.5];
    let theta = vec![0.2, -0.4, 0.0, 0.6];
    let w = DMatrix::from_fn(nv, 3, |i, j| ((i * 5 + j * 3) % 7) as f64 * 0.3 - 0.9);
    let rbm = Rbm::new(
        Gaussian::new(gamma.clone(), theta.clone()).unwrap(),
        Bernoulli::new(vec![0.3, -0.2, 0.1]),
        w.clone(),
    )
    .unwrap();
    // Exact mixture: p(h) from the hidden free energies, v | h ~ N((theta + W h) / gamma, 1 / (beta gamma)).
    let fh = exact::hidden_free_energies(&rbm, beta, Par::Seq).unwrap();
    let lz = ebm_core::numerics::log_sum_exp(&fh.iter().map(|f| -f).collect::<Vec<_>>());
    let (mut mean, mut second) = (vec![0.0; nv], vec![0.0; nv]);
    let mut h = vec![0.0; 3];
    for (k, f) in fh.iter().enumerate() {
        let p = (-f - lz).exp();
        rbm.hidden().write_configuration(k as u128, &mut h);
        for i in 0..nv {
            let mu = (theta[i] + (0..3).map(|j| w[(i, j)] * h[j]).sum::<f64>()) / gamma[i];
            mean[i] += p * mu;
            second[i] += p * (mu * mu + 1.0 / (beta * gamma[i]));
        }
    }
    let n = 40_000;
    let run = |hidden_beta: f64| {
        let mut x = rbm.default_chains(n);
        let mut rngs = RngStreams::new(8, n);
        // Exact start: h from p(h), then v | h.
        let mut cdf = Vec::new();
        let mut acc = 0.0;
        for f in &fh {
            acc += (-f - lz).exp();
            cdf.push(acc);
        }
        for (mut col, rng) in x
            .hidden
            .column_iter_mut()
            .zip(rngs.as_mut_slice().iter_mut())
        {
            let u: f64 = rand::Rng::random(rng);
            let k = cdf.partition_point(|&c| c <= u * acc).min(cdf.len() - 1);
            rbm.hidden()
                .write_configuration(k as u128, col.as_mut_slice());
        }
        rbm.sample_visible(&mut x, beta, rngs.as_mut_slice(), Par::Rayon);
        for _ in 0..3 {
            rbm.sample_hidden(&mut x, hidden_beta, rngs.as_mut_slice(), Par::Rayon);
            rbm.sample_visible(&mut x, beta, rngs.as_mut_slice(), Par::Rayon);
        }
        x
    };
    let x = run(beta);
    let mut worst: f64 = 0.0;
    for i in 0..nv {
        let row = x.visible.row(i);
        let m = row.iter().sum::<f64>() / n as f64;
        let m2 = row.iter().map(|v| v * v).sum::<f64>() / n as f64;
        let sd = (second[i] - mean[i] * mean[i]).sqrt();
        // Chains are independent: standard errors of the mean and of the second moment.
        worst = worst.max((m - mean[i]).abs() / (sd / (n as f64).sqrt()));
        let sd2 = (row.iter().map(|v| (v * v - m2).powi(2)).sum::<f64>() / n as f64).sqrt();
        worst = worst.max((m2 - second[i]).abs() / (sd2 / (n as f64).sqrt()));
    }
    assert!(worst < 5.0, "largest z-score {worst}");
    // Negative control: hidden units sampled at the wrong temperature drift off.
    let y = run(0.2 * beta);
    let drift = (0..nv)
        .map(|i| {
            let m = y.visible.row(i).iter().sum::<f64>() / n as f64;
            let sd = (second[i] - mean[i] * mean[i]).sqrt();
            (m - mean[i]).abs() / (sd / (n as f64).sqrt())
        })
        .fold(0.0, f64::max);
    assert!(
        drift > 10.0,
        "wrong kernel not detected: largest z-score {drift}"
    );
}

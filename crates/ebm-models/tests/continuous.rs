//! Real-valued layers against numerical quadrature and exact distribution functions; RBMs with
//! real hidden units against brute force; exact invariance of Gibbs sampling on them; the RBM
//! forms of the Curie–Weiss and Hopfield models.

use ebm_core::special::erfcx;
use ebm_core::{ConditionalSampler, Par, RngStreams, Tractable};
use ebm_models::{
    Bernoulli, CurieWeiss, DReLU, DiscreteLayer, Gaussian, Hopfield, Layer, Rbm, ReLU, Spin, exact,
};
use ebm_testkit::chi_square;
use nalgebra::DMatrix;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Composite Simpson quadrature of `f` on `[a, b]` with 2 x 10 000 panels: the integrands
/// here are smooth bells or exponential decays spanning the interval, for which this is
/// accurate to about 1e-14 relative.
fn simpson(f: &dyn Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    let n = 20_000;
    let h = (b - a) / n as f64;
    let mut sum = f(a) + f(b);
    for k in 1..n {
        sum += f(a + k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
    }
    sum * h / 3.0
}

/// Integrates exp(beta(-U(h) + I h) - shift) h^k over one side of 0 for k = 0, 1, 2, on a range
/// that covers the integrand (mode `m`, precision `s`): returns the three integrals.
fn side_moments(e: &dyn Fn(f64) -> f64, shift: f64, s: f64, m: f64, positive: bool) -> [f64; 3] {
    let w = 40.0 / s.sqrt();
    // On h >= 0 (after reflection for the negative side) the mode is `m`.
    let (lo, hi) = if m > 0.0 {
        ((m - w).max(0.0), m + w)
    } else {
        (0.0, w.min(60.0 / (s * -m).max(1e-300)))
    };
    let sign = if positive { 1.0 } else { -1.0 };
    let mut out = [0.0; 3];
    for (k, o) in out.iter_mut().enumerate() {
        *o = simpson(
            &|u: f64| (e(sign * u) - shift).exp() * (sign * u).powi(k as i32),
            lo,
            hi,
        );
    }
    out
}

struct Case {
    gamma: f64,
    theta: f64,
}

fn check_against_quadrature<L: Layer<Scalar = f64>>(
    layer: &L,
    sides: &[(Case, bool)],
    mv: &dyn Fn(f64, f64) -> (f64, f64),
) {
    for &input in &[-1e3, -50.0, -5.0, -0.3, 0.0, 0.8, 6.0, 60.0, 1e3] {
        for &beta in &[0.2, 1.0, 1.7] {
            let e = |h: f64| -beta * (layer.unit_energy(0, &[h]) - input * h);
            // Shift by the largest exponent over the modes of the sides and 0.
            let mut shift = e(0.0);
            let mut pieces = Vec::new();
            for (c, positive) in sides {
                let s = beta * c.gamma;
                let m = if *positive {
                    (c.theta + input) / c.gamma
                } else {
                    -(c.theta + input) / c.gamma
                };
                if m > 0.0 {
                    shift = shift.max(e(if *positive { m } else { -m }));
                }
                pieces.push((s, m, *positive));
            }
            let mut tot = [0.0; 3];
            for (s, m, positive) in pieces {
                let p = side_moments(&e, shift, s, m, positive);
                for k in 0..3 {
                    tot[k] += p[k];
                }
            }
            let gamma_q = tot[0].ln() + shift;
            let got = layer.cgf(&[input], beta);
            let what = format!("{} at I = {input}, beta = {beta}", L::KIND);
            assert!(
                (got - gamma_q).abs() <= 1e-9 * (1.0 + gamma_q.abs()),
                "{what}: Gamma {got} vs {gamma_q}"
            );
            let (mean_q, var_q) = (tot[1] / tot[0], tot[2] / tot[0] - (tot[1] / tot[0]).powi(2));
            let (mean, var) = mv(input, beta);
            assert!(
                (mean - mean_q).abs() <= 1e-7 * (mean_q.abs() + var_q.sqrt()),
                "{what}: mean {mean} vs {mean_q}"
            );
            // The quadrature variance cancels when the mean is large: compare on its own scale.
            let var_tol = 1e-6 * var_q + 1e-12 * mean_q * mean_q;
            assert!(
                (var - var_q).abs() <= var_tol,
                "{what}: variance {var} vs {var_q}"
            );
            let mut m = [input];
            layer.mean_in_place(&mut m, beta);
            assert_eq!(m[0], mean);
        }
    }
}

#[test]
fn cgf_mean_and_variance_match_quadrature_over_extreme_inputs() {
    let g = Gaussian::new(vec![0.7], vec![0.3]).unwrap();
    check_against_quadrature(
        &g,
        &[
            (
                Case {
                    gamma: 0.7,
                    theta: 0.3,
                },
                true,
            ),
            (
                Case {
                    gamma: 0.7,
                    theta: 0.3,
                },
                false,
            ),
        ],
        &|i, b| g.mean_and_variance(0, i, b),
    );
    let r = ReLU::new(vec![1.3], vec![-0.4]).unwrap();
    check_against_quadrature(
        &r,
        &[(
            Case {
                gamma: 1.3,
                theta: -0.4,
            },
            true,
        )],
        &|i, b| r.mean_and_variance(0, i, b),
    );
    let d = DReLU::new(vec![1.5], vec![0.6], vec![0.2], vec![-0.8]).unwrap();
    check_against_quadrature(
        &d,
        &[
            (
                Case {
                    gamma: 1.5,
                    theta: 0.2,
                },
                true,
            ),
            (
                Case {
                    gamma: 0.6,
                    theta: -0.8,
                },
                false,
            ),
        ],
        &|i, b| d.mean_and_variance(0, i, b),
    );
}

/// Kolmogorov–Smirnov p-value (asymptotic) of samples already mapped through their CDF.
fn ks_p_value(mut u: Vec<f64>) -> f64 {
    u.sort_by(f64::total_cmp);
    let n = u.len() as f64;
    let d = u
        .iter()
        .enumerate()
        .map(|(k, &x)| (x - k as f64 / n).max((k + 1) as f64 / n - x))
        .fold(0.0, f64::max);
    let x = d * n.sqrt();
    let p: f64 = (1..100)
        .map(|k| 2.0 * (-1f64).powi(k - 1) * (-2.0 * (k * k) as f64 * x * x).exp())
        .sum();
    p.clamp(0.0, 1.0)
}

/// P(T <= a + d | T >= a) for a standard normal T, stable for any a.
fn truncated_cdf(a: f64, d: f64) -> f64 {
    let sqrt2 = std::f64::consts::SQRT_2;
    1.0 - (-d * (2.0 * a + d) / 2.0).exp() * erfcx((a + d) / sqrt2) / erfcx(a / sqrt2)
}

fn draws<L: Layer<Scalar = f64>>(
    layer: &L,
    input: f64,
    beta: f64,
    n: usize,
    seed: u64,
) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut x = [input];
            layer.sample_in_place(&mut x, beta, &mut rng);
            x[0]
        })
        .collect()
}

#[test]
fn relu_samples_follow_the_truncated_normal_law_far_in_the_tails() {
    let layer = ReLU::new(vec![1.0], vec![0.0]).unwrap();
    let wrong = ReLU::new(vec![1.3], vec![0.0]).unwrap();
    let n = 20_000;
    for (k, &z) in [-1e3, -30.0, -2.0, 0.0, 1.5].iter().enumerate() {
        // gamma = beta = 1: s = 1, m = z, truncation point a = -z.
        let a = -z;
        let h = draws(&layer, z, 1.0, n, 10 + k as u64);
        assert!(h.iter().all(|&x| x >= 0.0 && x.is_finite()));
        let p = ks_p_value(h.iter().map(|&x| truncated_cdf(a, x)).collect());
        assert!(p > 1e-4, "z = {z}: KS p = {p}");
        let (mean, var) = layer.mean_and_variance(0, z, 1.0);
        let m = h.iter().sum::<f64>() / n as f64;
        assert!(
            (m - mean).abs() < 5.0 * (var / n as f64).sqrt(),
            "z = {z}: mean {m} vs {mean}"
        );
        // Negative control: draws with the wrong precision are rejected by the same test.
        let bad = draws(&wrong, z * 1.3, 1.0, n, 20 + k as u64);
        let pb = ks_p_value(bad.iter().map(|&x| truncated_cdf(a, x)).collect());
        assert!(pb < 1e-6, "z = {z}: wrong sampler accepted, p = {pb}");
    }
}

#[test]
fn gaussian_and_drelu_samples_follow_their_laws() {
    let n = 20_000;
    let g = Gaussian::new(vec![0.5], vec![0.2]).unwrap();
    let (input, beta) = (0.7, 1.6);
    let (mean, var) = g.mean_and_variance(0, input, beta);
    let h = draws(&g, input, beta, n, 3);
    let ncdf = |x: f64| 0.5 * ebm_core::special::erfc(-x / std::f64::consts::SQRT_2);
    assert!(ks_p_value(h.iter().map(|&x| ncdf((x - mean) / var.sqrt())).collect()) > 1e-4);
    assert!(
        ks_p_value(
            h.iter()
                .map(|&x| ncdf((x - mean) / (1.2 * var.sqrt())))
                .collect()
        ) < 1e-6
    );

    // dReLU: the side is chosen with its exact probability, and each side is a truncated normal.
    let d = DReLU::new(vec![1.5], vec![0.6], vec![0.2], vec![-0.8]).unwrap();
    for (k, &input) in [-3.0, 0.1, 2.5].iter().enumerate() {
        let beta = 1.0;
        let lp = Layer::cgf(&ReLU::new(vec![1.5], vec![0.2]).unwrap(), &[input], beta);
        let lm = Layer::cgf(&ReLU::new(vec![0.6], vec![0.8]).unwrap(), &[-input], beta);
        let p_plus = 1.0 / (1.0 + (lm - lp).exp());
        let h = draws(&d, input, beta, n, 40 + k as u64);
        let frac = h.iter().filter(|&&x| x >= 0.0).count() as f64 / n as f64;
        assert!(
            (frac - p_plus).abs() < 5.0 * (p_plus * (1.0 - p_plus) / n as f64).sqrt(),
            "I = {input}: {frac} vs {p_plus}"
        );
        // Positive side: s = 1.5, m = (0.2 + I) / 1.5.
        let (s, m) = (1.5f64, (0.2 + input) / 1.5);
        let pos: Vec<f64> = h
            .iter()
            .filter(|&&x| x >= 0.0)
            .map(|&x| truncated_cdf(-m * s.sqrt(), x * s.sqrt()))
            .collect();
        if pos.len() > 500 {
            assert!(ks_p_value(pos) > 1e-4, "I = {input}: positive side");
        }
        // Negative side, reflected: h' = -h >= 0 with s = 0.6, mode -(-0.8 + I) / 0.6.
        let (s, m) = (0.6f64, -(-0.8 + input) / 0.6);
        let neg: Vec<f64> = h
            .iter()
            .filter(|&&x| x < 0.0)
            .map(|&x| truncated_cdf(-m * s.sqrt(), -x * s.sqrt()))
            .collect();
        if neg.len() > 500 {
            assert!(ks_p_value(neg) > 1e-4, "I = {input}: negative side");
        }
        let (mean, var) = d.mean_and_variance(0, input, beta);
        let mh = h.iter().sum::<f64>() / n as f64;
        assert!(
            (mh - mean).abs() < 5.0 * (var / n as f64).sqrt(),
            "I = {input}: mean {mh} vs {mean}"
        );
    }
}

#[test]
fn parameters_are_validated() {
    assert!(Gaussian::<f64>::new(vec![0.0], vec![0.0]).is_err());
    assert!(ReLU::<f64>::new(vec![1.0, 1.0], vec![0.0]).is_err());
    assert!(DReLU::<f64>::new(vec![1.0], vec![-1.0], vec![0.0], vec![0.0]).is_err());
    assert!(Gaussian::<f64>::new(vec![1.0], vec![f64::NAN]).is_err());
    let g = Gaussian::<f32>::standard(3);
    let t = g.tensors();
    let get = |name: &str| {
        t.iter()
            .find(|x| x.0 == name)
            .map(|x| (x.1.clone(), x.2.clone()))
    };
    assert_eq!(Gaussian::from_tensors(3, &get).unwrap(), g);
    assert!(Gaussian::<f32>::from_tensors(2, &get).is_err());
    let d = DReLU::<f64>::standard(2);
    let t = d.tensors();
    let get = |name: &str| {
        t.iter()
            .find(|x| x.0 == name)
            .map(|x| (x.1.clone(), x.2.clone()))
    };
    assert_eq!(DReLU::from_tensors(2, &get).unwrap(), d);
}

/// -log of the integral over h of exp(-beta E(v, h)), per unit by quadrature (it factorises).
fn brute_free_energy<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    v: &[f64],
    beta: f64,
    modes: &dyn Fn(usize, f64) -> Vec<(f64, f64, bool)>,
) -> f64 {
    let mut total = beta * rbm.visible().energy(v);
    for mu in 0..rbm.hidden().n_units() {
        let input: f64 = (0..v.len()).map(|i| rbm.weights()[(i, mu)] * v[i]).sum();
        let e = |h: f64| -beta * (rbm.hidden().unit_energy(mu, &[h]) - input * h);
        let mut shift = e(0.0);
        for &(s, m, positive) in &modes(mu, input) {
            if m > 0.0 {
                shift = shift.max(e(if positive { m } else { -m }));
            }
            let _ = s;
        }
        let mass: f64 = modes(mu, input)
            .iter()
            .map(|&(s, m, p)| side_moments(&e, shift, s, m, p)[0])
            .sum();
        total -= mass.ln() + shift;
    }
    total
}

fn check_rbm<H: Layer<Scalar = f64>>(
    rbm: &Rbm<Spin<f64>, H>,
    beta: f64,
    modes: &dyn Fn(usize, f64) -> Vec<(f64, f64, bool)>,
    seed: u64,
) {
    let f = exact::visible_free_energies(rbm, beta, Par::Seq).unwrap();
    let mut v = vec![0.0; rbm.visible().width()];
    for (k, fk) in f.iter().enumerate() {
        rbm.visible().write_configuration(k as u128, &mut v);
        let b = brute_free_energy(rbm, &v, beta, modes);
        assert!(
            (fk - b).abs() < 1e-8 * (1.0 + b.abs()),
            "{}: F({k}) = {fk} vs {b}",
            H::KIND
        );
    }
    // Exact invariance of one Gibbs sweep, and its negative control.
    let p = exact::visible_probabilities(rbm, beta, Par::Seq).unwrap();
    for (hidden_beta, expect_ok) in [(beta, true), (0.3 * beta, false)] {
        let mut state = ebm_testkit::exact_chains(rbm, beta, 40_000, seed);
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
        let t = chi_square(&counts, &p);
        if expect_ok {
            assert!(
                t.p_value > 1e-4,
                "{}: Gibbs invariance rejected {t:?}",
                H::KIND
            );
        } else {
            assert!(
                t.p_value < 1e-6,
                "{}: wrong-beta Gibbs accepted {t:?}",
                H::KIND
            );
        }
    }
}

fn weights() -> DMatrix<f64> {
    DMatrix::from_fn(5, 2, |i, j| ((i * 3 + j * 7) % 5) as f64 * 0.45 - 0.8)
}

#[test]
fn rbms_with_real_hidden_units_match_brute_force_and_gibbs_is_exact() {
    let beta = 0.9;
    let vis = Spin::new(vec![0.1, -0.2, 0.3, 0.0, 0.15]);
    let g = Rbm::new(
        vis.clone(),
        Gaussian::new(vec![0.8, 1.5], vec![0.1, -0.3]).unwrap(),
        weights(),
    )
    .unwrap();
    check_rbm(
        &g,
        beta,
        &|mu, i| {
            let (gm, th) = ([0.8, 1.5][mu], [0.1, -0.3][mu]);
            vec![
                (beta * gm, (th + i) / gm, true),
                (beta * gm, -(th + i) / gm, false),
            ]
        },
        1,
    );
    let r = Rbm::new(
        vis.clone(),
        ReLU::new(vec![1.0, 0.6], vec![0.5, -0.2]).unwrap(),
        weights(),
    )
    .unwrap();
    check_rbm(
        &r,
        beta,
        &|mu, i| {
            let (gm, th) = ([1.0, 0.6][mu], [0.5, -0.2][mu]);
            vec![(beta * gm, (th + i) / gm, true)]
        },
        2,
    );
    let d = Rbm::new(
        vis,
        DReLU::new(
            vec![1.2, 0.7],
            vec![0.5, 2.0],
            vec![0.4, 0.0],
            vec![-0.6, 0.3],
        )
        .unwrap(),
        weights(),
    )
    .unwrap();
    check_rbm(
        &d,
        beta,
        &|mu, i| {
            let (gp, gm, tp, tm) = (
                [1.2, 0.7][mu],
                [0.5, 2.0][mu],
                [0.4, 0.0][mu],
                [-0.6, 0.3][mu],
            );
            vec![
                (beta * gp, (tp + i) / gp, true),
                (beta * gm, -(tm + i) / gm, false),
            ]
        },
        3,
    );
    // Bernoulli visibles with ReLU hidden units: Gibbs invariance (free energy shares the code).
    let b = Rbm::new(
        Bernoulli::new(vec![0.2, -0.1, 0.0, 0.3, -0.4]),
        ReLU::standard(2),
        weights(),
    )
    .unwrap();
    let p = exact::visible_probabilities(&b, 1.0, Par::Seq).unwrap();
    let mut state = ebm_testkit::exact_chains(&b, 1.0, 40_000, 4);
    b.sample_hidden(
        &mut state.chains,
        1.0,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    b.sample_visible(
        &mut state.chains,
        1.0,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    let mut counts = vec![0u64; p.len()];
    for c in state.chains.visible.column_iter() {
        counts[b.visible().configuration_index(c.as_slice()) as usize] += 1;
    }
    assert!(chi_square(&counts, &p).p_value > 1e-4);
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

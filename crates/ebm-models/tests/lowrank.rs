//! Low-rank RBM: Newton for mu*(m), the Gärtner–Ellis entropy, the mesh log Z and the static
//! sampler (paper 000 Eq. 12–18; spec tests 9–10).

use ebm_core::Par;
use ebm_models::lowrank::{LowRankBasis, Mesh, PriorWeight};
use ebm_models::{Rbm, Spin, exact};
use ebm_testkit::chi_square;
use nalgebra::DMatrix;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

fn uniform(n: usize) -> LowRankBasis {
    LowRankBasis::new(DMatrix::from_element(1, n, 1.0 / (n as f64).sqrt())).unwrap()
}

/// Two orthonormal directions: uniform and a +-1 block pattern.
fn two_dirs(n: usize) -> LowRankBasis {
    let s = (n as f64).sqrt();
    LowRankBasis::new(DMatrix::from_fn(2, n, |a, i| {
        if a == 0 || i < n / 2 {
            1.0 / s
        } else {
            -1.0 / s
        }
    }))
    .unwrap()
}

fn binary_entropy(m: f64) -> f64 {
    let (p, q) = ((1.0 + m) / 2.0, (1.0 - m) / 2.0);
    -(p * p.ln() + q * q.ln())
}

#[test]
fn newton_matches_closed_form_along_uniform_direction() {
    let b = uniform(50);
    for &m in &[-0.95, -0.5, -0.1, 0.0, 0.3, 0.77, 0.99] {
        let s = b.solve(&[m]).expect("attainable");
        assert!(s.residual < 1e-10, "residual {}", s.residual);
        assert!((s.mu[0] - f64::atanh(m)).abs() < 1e-10, "mu* at {m}");
        assert!((s.entropy - binary_entropy(m)).abs() < 1e-10, "s at {m}");
    }
    // Negative control: outside the attainable interval there is no solution.
    assert!(b.solve(&[1.02]).is_none());
    assert!(b.solve(&[-1.5]).is_none());
}

#[test]
fn newton_residual_in_two_dimensions_and_infeasible_points() {
    let b = two_dirs(40);
    let mesh = Mesh::grid(&b, 30, Par::Seq).unwrap();
    // The attainable set is |m1 + m2| <= 1, |m1 - m2| <= 1 (times the bounds); half the box
    // (the corners) is infeasible.
    assert!(
        mesh.rejected() > 300 && mesh.len() > 300,
        "{} {}",
        mesh.rejected(),
        mesh.len()
    );
    for (c, m) in mesh.points().column_iter().enumerate() {
        let s = b.solve(m.as_slice()).unwrap();
        assert!(s.residual < 1e-10);
        assert_eq!(s.mu, mesh.mu().column(c).as_slice());
        assert!((m[0] + m[1]).abs() < 1.0 && (m[0] - m[1]).abs() < 1.0);
    }
    assert!(b.solve(&[0.6, 0.6]).is_none());
    // Seq and Rayon give identical meshes.
    let m2 = Mesh::grid(&b, 30, Par::Rayon).unwrap();
    assert_eq!(mesh.points(), m2.points());
    assert_eq!(mesh.entropy(), m2.entropy());
}

#[test]
fn constructors_reject_bad_input() {
    assert!(LowRankBasis::new(DMatrix::from_element(1, 4, 1.0)).is_err());
    assert!(LowRankBasis::new(DMatrix::zeros(0, 4)).is_err());
    assert!(Mesh::grid(&uniform(8), 1, Par::Seq).is_err());
    let mesh = Mesh::grid(&uniform(8), 10, Par::Seq).unwrap();
    assert!(mesh.log_partition(&[0.0; 3]).is_err());
}

/// A spin RBM with all parameters in the span of `b`.
fn lowrank_rbm(b: &LowRankBasis, theta: &[f64], w: &DMatrix<f64>, eta: &[f64]) -> Rbm<Spin, Spin> {
    let u = b.directions();
    let s = (b.n_visible() as f64).sqrt();
    let th = u.transpose() * nalgebra::DVector::from_column_slice(theta) * s;
    Rbm::new(
        Spin::new(th.as_slice().to_vec()),
        Spin::new(eta.to_vec()),
        u.transpose() * w / s,
    )
    .unwrap()
}

#[test]
fn mesh_log_partition_matches_enumeration() {
    // d = 1, uniform direction: the prior law of m is binomial, N(m) = C(N, k), k = N(1+m)/2.
    // Stirling: log C(N, k) = N s(m) - 1/2 log(2 pi N (1 - m^2)/4) + eps(m) + O(N^-3), with
    // eps(m) = -(1/(12 N)) (4/(1 - m^2) - 1). The saddle-point mesh keeps the first two terms,
    // so (the lattice sum and the mesh integral of a smooth integrand agree to far higher
    // order) exact - mesh = E_model[eps] - E_prior[eps] to first order: the derived error.
    let n = 60;
    let nn = n as f64;
    let b = uniform(n);
    let mesh = Mesh::grid(&b, 400, Par::Seq).unwrap();
    let w = DMatrix::from_row_slice(1, 2, &[2.0, -1.5]);
    let rbm = lowrank_rbm(&b, &[0.05], &w, &[0.5, 0.2]);
    let exact = exact::log_partition_by_hidden(&rbm, 1.0, Par::Seq).unwrap();
    let lw = mesh.rbm_log_weights(&rbm).unwrap();
    let sp = mesh.log_partition(&lw).unwrap();
    let eps: Vec<f64> = mesh
        .points()
        .column_iter()
        .map(|m| -(4.0 / (1.0 - m[0] * m[0]) - 1.0) / (12.0 * nn))
        .collect();
    let expect = |lp: &[f64]| lp.iter().zip(&eps).map(|(l, e)| l.exp() * e).sum::<f64>();
    let predicted = expect(&mesh.log_probabilities(&lw).unwrap())
        - expect(&mesh.log_probabilities(&vec![0.0; mesh.len()]).unwrap());
    let ld = mesh
        .clone()
        .with_prior(PriorWeight::LargeDeviation)
        .log_partition(&lw)
        .unwrap();
    eprintln!(
        "exact {exact} saddle {sp} (err {:.3e}, predicted {predicted:.3e}) LD {ld} (err {:.3e})",
        sp - exact,
        ld - exact
    );
    assert!(
        (exact - sp - predicted).abs() < 0.1 * predicted.abs() + 1e-7,
        "saddle-point error {} vs derived {predicted}",
        sp - exact
    );
    // Negative control: the large-deviation-only mesh misses the prefactor and fails the bound.
    assert!((exact - ld - predicted).abs() > 10.0 * predicted.abs());
    // The general (multivariate Edgeworth) correction reduces to Stirling's here.
    for (e, m) in mesh.saddle_point_correction().iter().zip(&eps) {
        assert!((e - m).abs() < 1e-12 * (1.0 + m.abs()), "{e} vs {m}");
    }
    let general = mesh.log_partition_correction(&lw).unwrap();
    assert!(
        (general - predicted).abs() < 0.01 * predicted.abs(),
        "{general} vs {predicted}"
    );
}

#[test]
fn static_sampler_is_exact_on_enumerable_system() {
    let n = 8;
    let b = two_dirs(n);
    let mesh = Mesh::grid(&b, 12, Par::Seq).unwrap();
    let lw: Vec<f64> = mesh
        .points()
        .column_iter()
        .map(|m| 6.0 * m[0] * m[0] + 2.0 * m[1])
        .collect();
    let states: Vec<Vec<f64>> = (0..1usize << n)
        .map(|c| {
            (0..n)
                .map(|i| if c >> i & 1 == 1 { 1.0 } else { -1.0 })
                .collect()
        })
        .collect();
    let probs: Vec<f64> = states
        .iter()
        .map(|v| mesh.sample_probability(&lw, v).unwrap())
        .collect();
    assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    // The low-rank log-density equals the direct sum at every configuration (negative
    // control: other log-weights give other densities).
    let all = DMatrix::from_fn(n, states.len(), |i, c| states[c][i]);
    let fast = mesh.log_sample_densities(&lw, &all).unwrap();
    for (f, p) in fast.iter().zip(&probs) {
        assert!((f - p.ln()).abs() < 1e-10, "{f} vs {}", p.ln());
    }
    let other: Vec<f64> = lw.iter().map(|l| -l).collect();
    let moved = mesh.log_sample_densities(&other, &all).unwrap();
    assert!(moved.iter().zip(&fast).any(|(a, b)| (a - b).abs() > 0.1));
    let draws = 40_000;
    let mut rngs: Vec<Xoshiro256PlusPlus> = (0..draws)
        .map(|j| Xoshiro256PlusPlus::seed_from_u64(17 + j as u64))
        .collect();
    let (v, _) = mesh.sample(&lw, &mut rngs).unwrap();
    let count = |v: &DMatrix<f64>| {
        let mut c = vec![0u64; 1 << n];
        for col in v.column_iter() {
            let k: usize = (0..n).map(|i| ((col[i] > 0.0) as usize) << i).sum();
            c[k] += 1;
        }
        c
    };
    let ok = chi_square(&count(&v), &probs);
    assert!(ok.p_value > 1e-3, "{ok:?}");
    // Negative control: flipping the sign of Eq. 18's field must fail the same test.
    let flipped = -v;
    let bad = chi_square(&count(&flipped), &probs);
    assert!(bad.p_value < 1e-6, "{bad:?}");
}

#[test]
fn static_sampler_reproduces_bimodal_mode_weights() {
    // 1-D p(m) with two modes, weights set by a linear tilt; N = 400 so smearing is small.
    let n = 400;
    let b = uniform(n);
    let mesh = Mesh::grid(&b, 800, Par::Seq).unwrap();
    let nn = n as f64;
    // -H(m) = N (J m^2 / 2 + h m), J = 1.5, h = 0.002: mode at m > 0 has more weight.
    let lw: Vec<f64> = mesh
        .points()
        .column_iter()
        .map(|m| nn * (0.75 * m[0] * m[0] + 0.002 * m[0]))
        .collect();
    let lp = mesh.log_probabilities(&lw).unwrap();
    let p_plus: f64 = mesh
        .points()
        .column_iter()
        .zip(&lp)
        .filter(|(m, _)| m[0] > 0.0)
        .map(|(_, l)| l.exp())
        .sum();
    assert!(p_plus > 0.65 && p_plus < 0.95, "mesh weight {p_plus}");
    let draws = 20_000;
    let mut rngs: Vec<Xoshiro256PlusPlus> = (0..draws)
        .map(|j| Xoshiro256PlusPlus::seed_from_u64(1000 + j as u64))
        .collect();
    let (v, _) = mesh.sample(&lw, &mut rngs).unwrap();
    let m = b.project(&v).unwrap();
    let plus = m.iter().filter(|&&x| x > 0.0).count() as f64 / draws as f64;
    let se = (p_plus * (1.0 - p_plus) / draws as f64).sqrt();
    assert!(
        (plus - p_plus).abs() < 5.0 * se,
        "sampled {plus} vs mesh {p_plus} (se {se})"
    );
    // Histogram of m(v) against the mesh p(m) on 4 bins whose edges lie away from the modes
    // (|m| ~ 0.86): the smearing of m(v) about m_k (std <= 1/sqrt(N) = 0.05) stays in its bin.
    let edges = [-1.0, -0.5, 0.0, 0.5];
    let bin = |x: f64| edges.iter().rposition(|&e| e <= x).unwrap_or(0);
    let mut expected = vec![0.0; 4];
    for (mk, l) in mesh.points().column_iter().zip(&lp) {
        expected[bin(mk[0])] += l.exp();
    }
    let mut counts = vec![0u64; 4];
    for &x in m.iter() {
        counts[bin(x)] += 1;
    }
    let chi = chi_square(&counts, &expected);
    assert!(chi.p_value > 1e-3, "{chi:?} {counts:?} {expected:?}");
    // Negative control: the mode weight of a sampler that ignores the tilt is 1/2, rejected.
    assert!((0.5 - p_plus).abs() > 5.0 * se);
}

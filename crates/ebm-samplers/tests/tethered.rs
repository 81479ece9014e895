//! Tethered Monte Carlo: exact tests of the kernel (transition matrices, exact invariance),
//! exact tethered quantities by enumeration, and the large exactly solvable bimodal RBM.
//! Every kernel test has a negative control (a tether with a wrong sign or a missing term)
//! that the same test must reject. Tests T1–T6 refer to the tethered-MC spec, §7.3.

use ebm_core::numerics::log_sum_exp;
use ebm_core::{ChainState, Kernel, Par, RngStreams, Scalar};
use ebm_models::{Bernoulli, BinaryLayer, DiscreteLayer, Potts, Rbm, Spin, exact};
use ebm_samplers::Gibbs;
use ebm_samplers::tethered::plane::{
    Reconstruction2d, generate_2d, measure_profile_2d, reconstruct_2d,
};
use ebm_samplers::tethered::profile::{
    ProfileSettings, Reconstruction, generate, measure_profile, profile_chains, reconstruct,
    uniform_grid,
};
use ebm_samplers::tethered::{GaussianTether, HiddenTethered, OrderParameter, Tether, Tethered};
use ebm_testkit::{
    chi_square, detailed_balance_violation, single_site_transition_matrix, stationarity_violation,
};
use nalgebra::DMatrix;

/// Negative control: the tether with the wrong sign (pushes away from the target).
struct WrongSign(f64);
impl Tether for WrongSign {
    fn bias(&self, m: &[f64], t: &[f64]) -> f64 {
        -GaussianTether::new(self.0).unwrap().bias(m, t)
    }
}

/// Negative control: the tether without its cross term \\(-\alpha m \hat m\\).
struct MissingCrossTerm(f64);
impl Tether for MissingCrossTerm {
    fn bias(&self, m: &[f64], _t: &[f64]) -> f64 {
        0.5 * self.0 * m.iter().map(|x| x * x).sum::<f64>()
    }
}

fn pseudo_random(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut g = RngStreams::auxiliary(seed, 3);
    (0..n)
        .map(|_| {
            // Box–Muller: N(0, scale^2).
            let (u, v) = (f64::uniform(&mut g).max(1e-300), f64::uniform(&mut g));
            scale * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        })
        .collect()
}

/// A random binary RBM with weights ~ N(0, 0.8^2) and fields ~ N(0, 0.3^2) (spec §7.3).
fn binary_model<V: BinaryLayer, H: BinaryLayer<Scalar = V::Scalar>>(
    nv: usize,
    nh: usize,
    seed: u64,
) -> Rbm<V, H> {
    let f = V::Scalar::from_f64;
    let w = pseudo_random(nv * nh, seed, 0.8);
    let b = pseudo_random(nv, seed + 1, 0.3);
    let c = pseudo_random(nh, seed + 2, 0.3);
    Rbm::new(
        V::with_fields(b.into_iter().map(f).collect()),
        H::with_fields(c.into_iter().map(f).collect()),
        DMatrix::from_vec(nv, nh, w.into_iter().map(f).collect()),
    )
    .unwrap()
}

/// Exact tethered joint law \\(\pi(v, h) \propto e^{-E(v,h) - B(m(v))}\\), index `a * n_h + b`.
fn tethered_joint<V, H, T>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    tether: &T,
    target: &[f64],
) -> Vec<f64>
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
    T: Tether,
{
    let (na, nb) = (
        rbm.visible().n_configurations() as usize,
        rbm.hidden().n_configurations() as usize,
    );
    let mut v = vec![V::Scalar::from_f64(0.0); rbm.visible().width()];
    let mut h = vec![V::Scalar::from_f64(0.0); rbm.hidden().width()];
    let mut m = vec![0.0; order.k()];
    let mut logw = vec![0.0; na * nb];
    for a in 0..na {
        rbm.visible().write_configuration(a as u128, &mut v);
        order.project(&v, &mut m);
        let bias = tether.bias(&m, target);
        for b in 0..nb {
            rbm.hidden().write_configuration(b as u128, &mut h);
            logw[a * nb + b] = -rbm.joint_energy(&v, &h) - bias;
        }
    }
    let lz = log_sum_exp(&logw);
    logw.iter().map(|x| (x - lz).exp()).collect()
}

fn matmul_sq(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let x = a[i * n + k];
            if x != 0.0 {
                for j in 0..n {
                    c[i * n + j] += x * b[k * n + j];
                }
            }
        }
    }
    c
}

/// Exact transition matrices on joint states of the hidden block-Gibbs update and of the
/// single-site update of each visible unit (built from the kernel's own acceptance).
fn tmc_matrices<V, H, T>(
    rbm: &Rbm<V, H>,
    kernel: &Tethered<T>,
    target: &[f64],
) -> (Vec<f64>, Vec<Vec<f64>>)
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
    T: Tether,
{
    let (na, nb) = (
        rbm.visible().n_configurations() as usize,
        rbm.hidden().n_configurations() as usize,
    );
    let n = na * nb;
    let mut v = vec![V::Scalar::from_f64(0.0); rbm.visible().width()];
    let mut h = vec![V::Scalar::from_f64(0.0); rbm.hidden().width()];
    let mut th = vec![0.0; n * n];
    for a in 0..na {
        rbm.visible().write_configuration(a as u128, &mut v);
        let e: Vec<f64> = (0..nb)
            .map(|b| {
                rbm.hidden().write_configuration(b as u128, &mut h);
                -rbm.joint_energy(&v, &h)
            })
            .collect();
        let lz = log_sum_exp(&e);
        for b in 0..nb {
            for b2 in 0..nb {
                th[(a * nb + b) * n + a * nb + b2] = (e[b2] - lz).exp();
            }
        }
    }
    let mut sites = Vec::new();
    for i in 0..rbm.visible().n_units() {
        let mut t = vec![0.0; n * n];
        for b in 0..nb {
            rbm.hidden().write_configuration(b as u128, &mut h);
            let tv = single_site_transition_matrix(rbm.visible(), i, |x, unit, s| {
                kernel.log_acceptance(rbm, 1.0, x, &h, unit, s, target)
            });
            for a in 0..na {
                for a2 in 0..na {
                    t[(a * nb + b) * n + a2 * nb + b] = tv[a * na + a2];
                }
            }
        }
        sites.push(t);
    }
    (th, sites)
}

/// Stationarity of the full sweep and detailed balance of every single-site update, for the
/// kernel built with `tether`, against the Gaussian-tethered target.
fn sweep_violations<V, H, T>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    tether: T,
    target: &[f64],
) -> (f64, f64)
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
    T: Tether,
{
    let pi = tethered_joint(
        rbm,
        order,
        &GaussianTether::new(ALPHA_SMALL).unwrap(),
        target,
    );
    let kernel = Tethered::new(order.clone(), tether, target.to_vec(), 1).unwrap();
    let (th, sites) = tmc_matrices(rbm, &kernel, target);
    let n = pi.len();
    let db = sites
        .iter()
        .map(|t| detailed_balance_violation(&pi, t))
        .fold(0.0, f64::max);
    let mut sweep = th;
    for t in &sites {
        sweep = matmul_sq(&sweep, t, n);
    }
    (stationarity_violation(&pi, &sweep), db)
}

/// Tether strength of the tiny exact systems (order parameters of O(1) spread, so the tether
/// and the energy compete).
const ALPHA_SMALL: f64 = 8.0;

fn check_t4<V, H>(rbm: Rbm<V, H>, order: OrderParameter, target: &[f64])
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
{
    let (stat, db) = sweep_violations(
        &rbm,
        &order,
        GaussianTether::new(ALPHA_SMALL).unwrap(),
        target,
    );
    assert!(stat < 1e-13, "stationarity violated: {stat:e}");
    assert!(db < 1e-13, "detailed balance violated: {db:e}");
    let (stat, db) = sweep_violations(&rbm, &order, WrongSign(ALPHA_SMALL), target);
    assert!(
        stat > 1e-3 && db > 1e-3,
        "wrong-sign tether accepted: {stat:e} {db:e}"
    );
    let (stat, db) = sweep_violations(&rbm, &order, MissingCrossTerm(ALPHA_SMALL), target);
    assert!(
        stat > 1e-3 && db > 1e-3,
        "tether without cross term accepted: {stat:e} {db:e}"
    );
}

/// T4: the exact transition matrix of one TMC sweep leaves the tethered joint law invariant
/// (to round-off) and each single-site update is in detailed balance; both fail for a
/// wrong-sign tether and for a tether missing its cross term.
#[test]
fn t4_exact_sweep_is_stationary_bernoulli_spin_and_potts() {
    let order = |rbm_w: usize, n_units: usize, seed| {
        let d = DMatrix::from_vec(rbm_w, 1, pseudo_random(rbm_w, seed, 1.0));
        OrderParameter::new(&d, n_units).unwrap()
    };
    check_t4(
        binary_model::<Bernoulli<f64>, Bernoulli<f64>>(4, 2, 11),
        order(4, 4, 5),
        &[0.4],
    );
    check_t4(
        binary_model::<Spin<f64>, Bernoulli<f64>>(4, 2, 12),
        order(4, 4, 6),
        &[-0.3],
    );
    // Two-dimensional tether.
    let d = DMatrix::from_vec(4, 2, pseudo_random(8, 9, 1.0));
    check_t4(
        binary_model::<Bernoulli<f64>, Spin<f64>>(4, 2, 13),
        OrderParameter::new(&d, 4).unwrap(),
        &[0.3, -0.2],
    );
    // Potts visibles (3 units, q = 3): the projection is linear in the one-hot encoding.
    let potts = Potts::new(3, pseudo_random(9, 21, 0.3)).unwrap();
    let rbm = Rbm::new(
        potts,
        Bernoulli::new(pseudo_random(2, 22, 0.3)),
        DMatrix::from_vec(9, 2, pseudo_random(18, 23, 0.8)),
    )
    .unwrap();
    check_t4(rbm, order(9, 3, 24), &[0.5]);
}

/// Exact draws from the Gaussian-tethered joint of a small binary RBM (visible by inversion of
/// the enumerated tethered marginal, hidden by its exact conditional), then one kernel step,
/// and the chi-square test of the visible configurations against the tethered marginal.
fn exact_invariance_p_value<T: Tether>(tether: T) -> f64 {
    let rbm = binary_model::<Bernoulli<f64>, Bernoulli<f64>>(5, 3, 31);
    let order = OrderParameter::from_weights(&rbm, 1).unwrap();
    let (alpha, target) = (20.0, 0.35);
    let f = exact::visible_free_energies(&rbm, 1.0, Par::Seq).unwrap();
    let na = f.len();
    let mut v = vec![0.0; 5];
    let mut m = [0.0];
    let logw: Vec<f64> = (0..na)
        .map(|a| {
            rbm.visible().write_configuration(a as u128, &mut v);
            order.project(&v, &mut m);
            -f[a] - 0.5 * alpha * (m[0] - target) * (m[0] - target)
        })
        .collect();
    let lz = log_sum_exp(&logw);
    let p: Vec<f64> = logw.iter().map(|x| (x - lz).exp()).collect();
    let n = 40_000;
    let mut state = ChainState::new(rbm.default_chains(n), 77);
    let mut aux = RngStreams::auxiliary(77, 1);
    for c in 0..n {
        let u = f64::uniform(&mut aux);
        let mut acc = 0.0;
        let a = p
            .iter()
            .position(|x| {
                acc += x;
                acc > u
            })
            .unwrap_or(na - 1);
        rbm.visible()
            .write_configuration(a as u128, state.chains.visible.column_mut(c).as_mut_slice());
    }
    let kernel = Tethered::new(order, tether, vec![target; n], 1).unwrap();
    kernel.step(
        &rbm,
        1.0,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    let mut counts = vec![0u64; na];
    for col in state.chains.visible.column_iter() {
        counts[rbm.visible().configuration_index(col.as_slice()) as usize] += 1;
    }
    chi_square(&counts, &p).p_value
}

/// The kernel's own step (not only its acceptance function) leaves the tethered law invariant:
/// exact draws + one step pass the chi-square test; the negative controls are rejected.
#[test]
fn t4_kernel_step_exact_invariance_with_negative_controls() {
    let good = exact_invariance_p_value(GaussianTether::new(20.0).unwrap());
    assert!(good > 1e-4, "correct kernel rejected: p = {good:e}");
    let wrong = exact_invariance_p_value(WrongSign(20.0));
    assert!(wrong < 1e-6, "wrong-sign tether accepted: p = {wrong:e}");
    let missing = exact_invariance_p_value(MissingCrossTerm(20.0));
    assert!(
        missing < 1e-6,
        "tether without cross term accepted: p = {missing:e}"
    );
}

/// T5: the incrementally maintained order parameter equals the recomputed projection after
/// many single-site updates (500 sweeps of 12 units in one step, two directions, spins).
#[test]
fn t5_incremental_order_parameter_matches_recomputed() {
    let rbm = binary_model::<Spin<f64>, Bernoulli<f64>>(12, 4, 41);
    let order = OrderParameter::from_weights(&rbm, 2).unwrap();
    let n = 16;
    let targets: Vec<f64> = (0..n).flat_map(|c| [0.1 * c as f64 - 0.8, 0.2]).collect();
    let kernel = Tethered::new(
        order.clone(),
        GaussianTether::new(50.0).unwrap(),
        targets,
        500,
    )
    .unwrap();
    let mut state = profile_chains(&rbm, n, 5);
    let info = kernel.step(
        &rbm,
        1.0,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    assert!(
        info.accepted > 1000,
        "too few moves to test anything: {}",
        info.accepted
    );
    let mut m = [0.0; 2];
    for c in 0..n {
        order.project(state.chains.visible.column(c).as_slice(), &mut m);
        for l in 0..2 {
            assert!(
                (m[l] - info.order[2 * c + l]).abs() < 1e-12,
                "chain {c}: {m:?} vs {:?}",
                &info.order[2 * c..2 * c + 2]
            );
        }
    }
}

/// Exact tethered quantities of the 12 x 4 RBM: grid, \\(\langle m\rangle_{\hat m}\\),
/// \\(\langle O\rangle_{\hat m}\\) for \\(O = v_0 \sigma(c_0 + (W^\top v)_0)\\),
/// \\(\ln p(\hat m)\\), the exact \\(\langle O \rangle\\) and the model.
struct Exact12 {
    grid: Vec<f64>,
    mean_m: Vec<f64>,
    mean_o: Vec<f64>,
    log_p: Vec<f64>,
    o: f64,
    rbm: Rbm<Bernoulli<f64>, Bernoulli<f64>>,
    order: OrderParameter,
}

fn exact12(alpha: f64, points: usize) -> Exact12 {
    let rbm = binary_model::<Bernoulli<f64>, Bernoulli<f64>>(12, 4, 51);
    let order = OrderParameter::from_weights(&rbm, 1).unwrap();
    let f = exact::visible_free_energies(&rbm, 1.0, Par::Seq).unwrap();
    let lz = log_sum_exp(&f.iter().map(|x| -x).collect::<Vec<_>>());
    let mut v = vec![0.0; 12];
    let mut mm = [0.0];
    let (mut ms, mut os) = (Vec::new(), Vec::new());
    let c0 = rbm.hidden().fields()[0];
    for a in 0..f.len() {
        rbm.visible().write_configuration(a as u128, &mut v);
        order.project(&v, &mut mm);
        ms.push(mm[0]);
        let input: f64 = c0 + (0..12).map(|i| rbm.weights()[(i, 0)] * v[i]).sum::<f64>();
        os.push(v[0] / (1.0 + (-input).exp()));
    }
    let lo = ms.iter().cloned().fold(f64::INFINITY, f64::min) - 0.3;
    let hi = ms.iter().cloned().fold(f64::NEG_INFINITY, f64::max) + 0.3;
    let grid = uniform_grid(lo, hi, points).unwrap();
    let (mut mean_m, mut mean_o, mut log_p) = (Vec::new(), Vec::new(), Vec::new());
    for &g in &grid {
        let lw: Vec<f64> = f
            .iter()
            .zip(&ms)
            .map(|(fv, m)| -fv - lz - 0.5 * alpha * (m - g) * (m - g))
            .collect();
        let l = log_sum_exp(&lw);
        let w: Vec<f64> = lw.iter().map(|x| (x - l).exp()).collect();
        mean_m.push(w.iter().zip(&ms).map(|(a, b)| a * b).sum());
        mean_o.push(w.iter().zip(&os).map(|(a, b)| a * b).sum());
        log_p.push(l + 0.5 * (alpha / (2.0 * std::f64::consts::PI)).ln());
    }
    let o = f.iter().zip(&os).map(|(fv, o)| (-fv - lz).exp() * o).sum();
    Exact12 {
        grid,
        mean_m,
        mean_o,
        log_p,
        o,
        rbm,
        order,
    }
}

/// T1: integrating the exact \\(\Omega'\\) and normalising reproduces the exact
/// \\(p(\hat m)\\) (spec §7.3: max relative deviation 3e-6 on 2001 points, alpha = 400), and a
/// sign error in \\(\Omega'\\) is caught. T2: Eq. 15 reproduces the exact canonical average.
#[test]
fn t1_t2_reconstruction_and_eq15_from_exact_tethered_averages() {
    let e = exact12(400.0, 2001);
    let g: Vec<f64> = e.grid.iter().zip(&e.mean_m).map(|(a, b)| a - b).collect();
    let r = reconstruct(&e.grid, &g, 400.0).unwrap();
    let dev = r
        .log_density
        .iter()
        .zip(&e.log_p)
        .map(|(a, b)| (a - b).exp_m1().abs())
        .fold(0.0, f64::max);
    println!("T1: max relative deviation of p = {dev:e}");
    assert!(dev < 3e-5, "reconstructed p off by {dev:e}");
    // Negative control: the wrong sign of Omega' (m - m_hat) is far off.
    let bad: Vec<f64> = g.iter().map(|x| -x).collect();
    let rb = reconstruct(&e.grid, &bad, 400.0).unwrap();
    let bad_dev = rb
        .log_density
        .iter()
        .zip(&e.log_p)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(bad_dev > 1.0, "sign error not detected: {bad_dev}");
    // T2 (Eq. 15) on the fine grid and on a training-like grid.
    let eq15 = r.canonical_average(&e.mean_o);
    println!("T2: Eq. 15 {eq15:.9} vs exact {:.9}", e.o);
    assert!(
        (eq15 - e.o).abs() < 1e-6 * e.o.abs().max(1e-3),
        "{eq15} vs {}",
        e.o
    );
    let coarse = exact12(400.0, 101);
    let gc: Vec<f64> = coarse
        .grid
        .iter()
        .zip(&coarse.mean_m)
        .map(|(a, b)| a - b)
        .collect();
    let rc = reconstruct(&coarse.grid, &gc, 400.0).unwrap();
    let eq15c = rc.canonical_average(&coarse.mean_o);
    println!("T2 (101 points): {eq15c:.9} vs exact {:.9}", e.o);
    assert!((eq15c - e.o).abs() < 1e-3, "{eq15c} vs {}", e.o);
}

/// T12 (sign conventions), on the exact 12 x 4 RBM: \\(\Omega' = \hat m - \langle m\rangle_{\hat m}\\)
/// is positive to the right of every maximum of \\(p(\hat m)\\) and negative to its left, each
/// interior maximum of the exact \\(p\\) sits where \\(\Omega'\\) crosses zero upwards, and
/// negating a direction leaves the order parameter (and so all results) unchanged. Negative
/// control: the reference code's sign-flipped gradient \\(\langle m\rangle - \hat m\\) puts
/// downward crossings at the maxima.
#[test]
fn t12_sign_conventions() {
    let e = exact12(400.0, 401);
    let g: Vec<f64> = e.grid.iter().zip(&e.mean_m).map(|(a, b)| a - b).collect();
    let n = g.len();
    let maxima: Vec<usize> = (1..n - 1)
        .filter(|&j| e.log_p[j] > e.log_p[j - 1] && e.log_p[j] >= e.log_p[j + 1])
        .collect();
    assert!(!maxima.is_empty(), "the exact p has an interior maximum");
    let upward = |g: &[f64], j: usize| g[j - 1] < 0.0 && g[j + 1] > 0.0;
    for &j in &maxima {
        assert!(
            upward(&g, j),
            "Omega' at the maximum {}: {:?}",
            e.grid[j],
            &g[j - 1..=j + 1]
        );
    }
    // Far right of the last maximum Omega' > 0, far left of the first Omega' < 0.
    assert!(g[n - 1] > 0.0 && g[0] < 0.0, "{} {}", g[0], g[n - 1]);
    // Negative control: the flipped sign has downward crossings at the same maxima.
    let flipped: Vec<f64> = g.iter().map(|x| -x).collect();
    assert!(maxima.iter().all(|&j| !upward(&flipped, j)));
    // Orientation: a negated direction gives the same order parameter.
    let d = DMatrix::from_column_slice(12, 1, e.order.scaled_direction(0));
    let neg = -d.clone();
    assert_eq!(
        OrderParameter::new(&d, 12).unwrap(),
        OrderParameter::new(&neg, 12).unwrap()
    );
}

/// T9 (2D path independence), on the exact 12 x 4 RBM with the two leading singular
/// directions of \\(W\\) and \\(\alpha = 400\\): integrating the exact \\(\nabla\Omega\\) along
/// both L-shaped paths gives the same \\(\Omega\\) up to quadrature error, and the reconstructed
/// \\(p(\hat m_1, \hat m_2)\\) is the exact one (the law of \\(\mathbf m\\) convolved with the
/// tether). Negative control: a gradient field with a curl added is path dependent.
#[test]
fn t9_two_dimensional_path_independence() {
    let alpha = 400.0;
    let rbm = binary_model::<Bernoulli<f64>, Bernoulli<f64>>(12, 4, 51);
    let order = OrderParameter::from_weights(&rbm, 2).unwrap();
    let f = exact::visible_free_energies(&rbm, 1.0, Par::Seq).unwrap();
    let lz = log_sum_exp(&f.iter().map(|x| -x).collect::<Vec<_>>());
    let mut v = vec![0.0; 12];
    let mut m = [0.0; 2];
    let ms: Vec<[f64; 2]> = (0..f.len())
        .map(|a| {
            rbm.visible().write_configuration(a as u128, &mut v);
            order.project(&v, &mut m);
            m
        })
        .collect();
    let axis = |l: usize| {
        let lo = ms.iter().map(|x| x[l]).fold(f64::INFINITY, f64::min) - 0.3;
        let hi = ms.iter().map(|x| x[l]).fold(f64::NEG_INFINITY, f64::max) + 0.3;
        uniform_grid(lo, hi, 121).unwrap()
    };
    let (gx, gy) = (axis(0), axis(1));
    let (mut dx, mut dy, mut log_p) = (Vec::new(), Vec::new(), Vec::new());
    for &y in &gy {
        for &x in &gx {
            let lw: Vec<f64> = f
                .iter()
                .zip(&ms)
                .map(|(fv, m)| -fv - lz - 0.5 * alpha * ((m[0] - x).powi(2) + (m[1] - y).powi(2)))
                .collect();
            let l = log_sum_exp(&lw);
            let (mut m0, mut m1) = (0.0, 0.0);
            for (w, m) in lw.iter().zip(&ms) {
                let p = (w - l).exp();
                m0 += p * m[0];
                m1 += p * m[1];
            }
            dx.push(x - m0);
            dy.push(y - m1);
            log_p.push(l + (alpha / (2.0 * std::f64::consts::PI)).ln());
        }
    }
    let r = reconstruct_2d(&gx, &gy, &dx, &dy, alpha).unwrap();
    let disc = r.path_discrepancy(alpha, 1e-3);
    let lmax = log_p.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let dev = r
        .log_density
        .iter()
        .zip(&log_p)
        .filter(|(_, e)| **e > lmax + 1e-3f64.ln())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!("T9: path discrepancy {disc:.2e} nats, max |ln p - exact| {dev:.2e}");
    assert!(disc < 0.05, "paths disagree by {disc} nats");
    assert!(dev < 0.05, "2D p off by {dev} in ln p");
    // Negative control: add the curl field (-(y - y_c), x - x_c) * 0.05.
    let (xc, yc) = (gx[60], gy[60]);
    let nx = gx.len();
    let cx: Vec<f64> = dx
        .iter()
        .enumerate()
        .map(|(k, d)| d - 0.05 * (gy[k / nx] - yc))
        .collect();
    let cy: Vec<f64> = dy
        .iter()
        .enumerate()
        .map(|(k, d)| d + 0.05 * (gx[k % nx] - xc))
        .collect();
    let bad = reconstruct_2d(&gx, &gy, &cx, &cy, alpha).unwrap();
    let bad_disc = bad.path_discrepancy(alpha, 1e-3);
    println!("T9 control (curl): path discrepancy {bad_disc:.2} nats");
    assert!(bad_disc > 1.0, "curl not detected: {bad_disc}");
}

/// Hidden-layer tethering: exact draws of \\((v, h)\\) from
/// \\(\pi(v, h) \propto e^{-E(v,h) - B(m(h))}\\) (3 visible x 5 hidden units, joint law
/// enumerated), one step of [`HiddenTethered`], chi-square over the 256 joint states.
fn hidden_invariance_p_value<T: Tether>(tether: T) -> f64 {
    let rbm = binary_model::<Bernoulli<f64>, Bernoulli<f64>>(3, 5, 41);
    let t = rbm.transposed();
    let order = OrderParameter::from_weights(&t, 1).unwrap();
    let (alpha, target) = (20.0, 0.3);
    // Joint law with index a * 8 + b (a hidden, b visible configuration).
    let p = tethered_joint(&t, &order, &GaussianTether::new(alpha).unwrap(), &[target]);
    let (nh_conf, nv_conf) = (32usize, 8usize);
    let n = 40_000;
    let mut state = ChainState::new(rbm.default_chains(n), 91);
    let mut aux = RngStreams::auxiliary(91, 1);
    for c in 0..n {
        let u = f64::uniform(&mut aux);
        let mut acc = 0.0;
        let k = p
            .iter()
            .position(|x| {
                acc += x;
                acc > u
            })
            .unwrap_or(p.len() - 1);
        let (a, b) = (k / nv_conf, k % nv_conf);
        rbm.hidden()
            .write_configuration(a as u128, state.chains.hidden.column_mut(c).as_mut_slice());
        rbm.visible()
            .write_configuration(b as u128, state.chains.visible.column_mut(c).as_mut_slice());
    }
    let kernel = HiddenTethered::new(order, tether, vec![target; n], 1).unwrap();
    kernel.step(
        &rbm,
        1.0,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    let mut counts = vec![0u64; nh_conf * nv_conf];
    for c in 0..n {
        let a = rbm
            .hidden()
            .configuration_index(state.chains.hidden.column(c).as_slice()) as usize;
        let b = rbm
            .visible()
            .configuration_index(state.chains.visible.column(c).as_slice())
            as usize;
        counts[a * nv_conf + b] += 1;
    }
    chi_square(&counts, &p).p_value
}

/// The hidden-tethered kernel leaves its target law invariant (exact draws, one step,
/// chi-square); the wrong-sign and missing-cross-term tethers are rejected.
#[test]
fn hidden_tethering_exact_invariance_with_negative_controls() {
    let good = hidden_invariance_p_value(GaussianTether::new(20.0).unwrap());
    let sign = hidden_invariance_p_value(WrongSign(20.0));
    let cross = hidden_invariance_p_value(MissingCrossTerm(20.0));
    println!(
        "hidden tether: p = {good:.3}; wrong sign p = {sign:e}; missing cross term p = {cross:e}"
    );
    assert!(good > 1e-3, "p = {good}");
    assert!(sign < 1e-6 && cross < 1e-6, "{sign} {cross}");
}

/// T3: the kernel's \\(\langle m \rangle_{\hat m}\\) on the 12 x 4 RBM agrees with the exact
/// tethered average within 5 standard errors at several targets.
#[test]
fn t3_kernel_tethered_averages_match_exact() {
    let e = exact12(400.0, 21);
    let picks = [4usize, 8, 12, 16];
    let grid: Vec<f64> = picks.iter().map(|&j| e.grid[j]).collect();
    let settings = ProfileSettings {
        alpha: 400.0,
        replicas: 64,
        burn_in: 50,
        measure: 400,
    };
    let mut state = profile_chains(&e.rbm, grid.len() * 64, 9);
    let prof = measure_profile(
        &e.rbm,
        &e.order,
        &grid,
        &settings,
        &mut state,
        1.0,
        Par::Rayon,
    )
    .unwrap();
    for (q, &j) in picks.iter().enumerate() {
        let z = (prof.mean_order[q] - e.mean_m[j]) / prof.std_error[q];
        println!(
            "T3: m_hat = {:.4}: kernel {:.5} ± {:.5}, exact {:.5}",
            grid[q], prof.mean_order[q], prof.std_error[q], e.mean_m[j]
        );
        assert!(z.abs() < 5.0, "m_hat {}: z = {z}", grid[q]);
    }
}

/// The rank-1, uniform-coupling RBM of spec §7.3 (T6): \\(N_v = 1000\\), \\(N_h = 1\\),
/// \\(w = \lambda\\), fields `b`, hidden field \\(-\lambda N_v / 2\\), with its exact
/// tethered probability from the 1D sum over \\(S = \sum_i v_i\\). The modes are equal for
/// \\(b = -\lambda/2\\).
///
/// We use \\(\lambda = 1\\) (canonical barrier 30.3 nats), not the spec's \\(\lambda = 4\\):
/// there the hidden unit switches at \\(S = N_v/2\\) with a jump of \\(\lambda N_v = 4000\\) in
/// the slope of \\(\ln p(m)\\), which makes the *tethered* law itself bimodal at
/// \\(\hat m = 0.5\\) for any practical \\(\alpha\\) (83 nats at \\(\alpha = 2\cdot 10^4\\),
/// by exact summation), so no TMC run can equilibrate there. At \\(\lambda = 1\\) that dip
/// is 4.5 nats at \\(\alpha = 2\cdot10^4\\) and 0.5 nats at \\(\alpha = 10^5\\), the value used.
const LAMBDA: f64 = 1.0;

fn rank_one(b: f64) -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
    let (n, lambda) = (1000, LAMBDA);
    Rbm::new(
        Bernoulli::new(vec![b; n]),
        Bernoulli::new(vec![-lambda * n as f64 * 0.5]),
        DMatrix::from_element(n, 1, lambda),
    )
    .unwrap()
}

fn rank_one_exact(b: f64, alpha: f64, grid: &[f64]) -> Reconstruction {
    let (n, lambda) = (1000usize, LAMBDA);
    let mut lnc = vec![0.0; n + 1];
    for s in 1..=n {
        lnc[s] = lnc[s - 1] + ((n - s + 1) as f64 / s as f64).ln();
    }
    let lps: Vec<f64> = (0..=n)
        .map(|s| {
            let x = lambda * (s as f64 - 0.5 * n as f64);
            lnc[s]
                + b * s as f64
                + if x > 0.0 {
                    x + (-x).exp().ln_1p()
                } else {
                    x.exp().ln_1p()
                }
        })
        .collect();
    let values: Vec<f64> = (0..=n).map(|s| s as f64 / n as f64).collect();
    Reconstruction::exact(&values, &lps, grid, alpha).unwrap()
}

/// T6: TMC reconstructs the two equal peaks and the barrier of the rank-1 RBM, and the
/// unequal weights of a slightly different field, while plain Gibbs never crosses.
#[test]
fn t6_rank_one_bimodal_rbm_at_1000_visibles() {
    let alpha = 1e5;
    let grid = uniform_grid(0.3, 0.7, 151).unwrap();
    let order = OrderParameter::uniform(1000).unwrap();
    let settings = ProfileSettings {
        alpha,
        replicas: 8,
        burn_in: 50,
        measure: 150,
    };
    for (b, seed) in [(-0.5 * LAMBDA, 1u64), (-0.5 * LAMBDA + 0.003, 2)] {
        let rbm = rank_one(b);
        let exact = rank_one_exact(b, alpha, &grid).barrier().unwrap();
        let mut state = profile_chains(&rbm, grid.len() * settings.replicas, seed);
        let prof =
            measure_profile(&rbm, &order, &grid, &settings, &mut state, 1.0, Par::Rayon).unwrap();
        let rec = prof.reconstruct(alpha).unwrap();
        let got = rec.barrier().unwrap();
        // Standard error of ln(w_left / w_right) ~ alpha * (integral of Omega' between the
        // modes), propagated from the replicas' spread.
        let h = grid[1] - grid[0];
        let var: f64 = grid
            .iter()
            .zip(&prof.std_error)
            .filter(|(g, _)| **g >= got.left_mode && **g <= got.right_mode)
            .map(|(_, se)| (h * se).powi(2))
            .sum();
        let sigma = alpha * var.sqrt();
        let lr = |w: f64| (w / (1.0 - w)).ln();
        println!(
            "T6 ln(w_left/w_right): TMC {:.3} ± {sigma:.3}, exact {:.3}",
            lr(got.left_weight),
            lr(exact.left_weight)
        );
        println!("T6 b = {b}: exact {exact:?}\n            TMC   {got:?}");
        assert!(
            (got.left_mode - exact.left_mode).abs() <= 0.009,
            "left mode"
        );
        assert!(
            (got.right_mode - exact.right_mode).abs() <= 0.009,
            "right mode"
        );
        assert!(sigma < 0.3, "not decisive: sigma = {sigma}");
        assert!(
            (lr(got.left_weight) - lr(exact.left_weight)).abs() < 4.0 * sigma,
            "mode weights"
        );
        assert!(
            (got.from_left - exact.from_left).abs() < 0.1 * exact.from_left,
            "barrier"
        );
        if b == -0.5 * LAMBDA {
            assert!((exact.left_weight - 0.5).abs() < 1e-6);
        } else {
            assert!(
                exact.left_weight < 0.4,
                "the shifted field must unbalance the modes"
            );
        }
    }
    // Plain Gibbs from the left mode never reaches m = 0.5 in 2000 sweeps.
    let rbm = rank_one(-0.5 * LAMBDA);
    let mut state = ChainState::new(rbm.default_chains(64), 3);
    let mut max_m: f64 = 0.0;
    for _ in 0..2000 {
        Gibbs::new(1).step(
            &rbm,
            1.0,
            &mut state.chains,
            state.rngs.as_mut_slice(),
            Par::Rayon,
        );
        for col in state.chains.visible.column_iter() {
            max_m = max_m.max(col.sum() / 1000.0);
        }
    }
    println!("T6: Gibbs max m over 64 chains x 2000 sweeps = {max_m}");
    assert!(max_m < 0.5, "Gibbs crossed: {max_m}");
}

/// T7 (mode weights): generation by \\(\hat m \sim p\\) and 30 TMC sweeps returns the model's
/// exact mode weights of the rank-1 RBM with unequal modes.
#[test]
fn t7_generated_mode_weights_match_exact() {
    let (alpha, b) = (1e5, -0.5 * LAMBDA + 0.003);
    let grid = uniform_grid(0.3, 0.7, 151).unwrap();
    let rbm = rank_one(b);
    let exact = rank_one_exact(b, alpha, &grid);
    let w_exact = exact.barrier().unwrap().left_weight;
    let order = OrderParameter::uniform(1000).unwrap();
    let n = 4000;
    let state = generate(&rbm, &order, &exact, alpha, n, 30, 4, Par::Rayon).unwrap();
    let left = state
        .state
        .chains
        .visible
        .column_iter()
        .filter(|c| c.sum() < 500.0)
        .count() as f64
        / n as f64;
    let se = (w_exact * (1.0 - w_exact) / n as f64).sqrt();
    println!("T7: generated left weight {left:.4}, exact {w_exact:.4} (se {se:.4})");
    assert!((left - w_exact).abs() < 5.0 * se, "{left} vs {w_exact}");
}

/// Two order parameters end to end, on the exact 12 x 4 RBM with the two leading singular
/// directions of \\(W\\) (\\(\alpha = 400\\), 41 x 41 grid, 4 chains x 100 measured sweeps per
/// point): the measured \\(\nabla\Omega\\) is path independent to within its noise, and samples
/// generated with targets drawn from the reconstructed 2D \\(p\\) have the exact means of every
/// visible unit and of both order parameters. Negative control: targets drawn uniformly over
/// the grid (a flat \\(p\\)) fail the same comparison.
#[test]
fn two_order_parameters_measure_reconstruct_and_generate() {
    let alpha = 400.0;
    let rbm = binary_model::<Bernoulli<f64>, Bernoulli<f64>>(12, 4, 51);
    let order = OrderParameter::from_weights(&rbm, 2).unwrap();
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let mut v = vec![0.0; 12];
    let mut m = [0.0; 2];
    let (mut mean_v, mut mean_m) = (vec![0.0; 12], [0.0; 2]);
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for (a, pa) in p.iter().enumerate() {
        rbm.visible().write_configuration(a as u128, &mut v);
        order.project(&v, &mut m);
        for l in 0..2 {
            mean_m[l] += pa * m[l];
            lo[l] = lo[l].min(m[l]);
            hi[l] = hi[l].max(m[l]);
        }
        for (s, x) in mean_v.iter_mut().zip(&v) {
            *s += pa * x;
        }
    }
    let gx = uniform_grid(lo[0] - 0.2, hi[0] + 0.2, 41).unwrap();
    let gy = uniform_grid(lo[1] - 0.2, hi[1] + 0.2, 41).unwrap();
    let settings = ProfileSettings {
        alpha,
        replicas: 4,
        burn_in: 50,
        measure: 100,
    };
    let prof = measure_profile_2d(&rbm, &order, &gx, &gy, &settings, 7, Par::Rayon).unwrap();
    let rec = prof.reconstruct(alpha).unwrap();
    let disc = rec.path_discrepancy(alpha, 1e-2);
    println!("2D: path discrepancy of the measured gradient {disc:.3} nats");
    assert!(disc < 1.0, "{disc}");

    let n = 4000;
    let compare = |r: &Reconstruction2d| -> f64 {
        let g = generate_2d(&rbm, &order, r, alpha, n, 30, 8, Par::Rayon).unwrap();
        let x = &g.state.chains.visible;
        let mut worst: f64 = 0.0;
        for i in 0..12 {
            let f = x.row(i).sum() / n as f64;
            let se = (mean_v[i] * (1.0 - mean_v[i]) / n as f64).sqrt();
            worst = worst.max(((f - mean_v[i]) / se).abs());
        }
        let mut mm = [0.0; 2];
        for l in 0..2 {
            let vals: Vec<f64> = x
                .column_iter()
                .map(|c| {
                    order.project(c.as_slice(), &mut mm);
                    mm[l]
                })
                .collect();
            let mu = vals.iter().sum::<f64>() / n as f64;
            let sd = (vals.iter().map(|a| (a - mu).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
            worst = worst.max(((mu - mean_m[l]) / (sd / (n as f64).sqrt())).abs());
        }
        worst
    };
    let z = compare(&rec);
    println!("2D generation: max |z| over the 12 unit means and 2 order parameters {z:.2}");
    assert!(z < 4.5, "2D generation off the exact means: max |z| = {z}");
    let flat = Reconstruction2d {
        log_density: vec![0.0; rec.log_density.len()],
        ..rec.clone()
    };
    let z_flat = compare(&flat);
    println!("2D generation with flat targets (control): max |z| {z_flat:.1}");
    assert!(z_flat > 10.0, "the comparison has no power: {z_flat}");
}

/// `tilted_visible` draws the product law whose mean order parameter is the target: on
/// Bernoulli, spin and Potts layers with a direction of unequal entries, the mean of m over
/// 4000 draws is within 4 standard errors of each target, targets beyond the range give the
/// configurations at its ends, and a perturbed target is told apart (negative control).
#[test]
fn tilted_starts_have_the_target_mean() {
    fn check<V: DiscreteLayer<Scalar = f64>>(visible: V, targets: [f64; 2]) {
        let n = visible.n_units();
        let width = visible.width();
        let rbm = Rbm::new(
            visible,
            Bernoulli::new(vec![0.0]),
            DMatrix::from_element(width, 1, 0.0),
        )
        .unwrap();
        let d = DMatrix::from_fn(width, 1, |i, _| 0.5 + (i % 7) as f64 / 7.0);
        let order = OrderParameter::new(&d, n).unwrap();
        let ends = order.range(rbm.visible()).unwrap()[0];
        for target in targets {
            let draws = 4000;
            let mut state = ChainState::new(rbm.default_chains(draws), 3);
            ebm_samplers::tethered::tilted_visible(
                &rbm,
                &order,
                &vec![target; draws],
                &mut state.chains,
                state.rngs.as_mut_slice(),
            );
            let values = order.project_columns(&state.chains.visible);
            let mean = values.iter().sum::<f64>() / draws as f64;
            let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (draws - 1) as f64;
            let se = (var / draws as f64).sqrt();
            let clamped = target.clamp(ends.0, ends.1);
            if clamped != target {
                assert!((mean - clamped).abs() < 1e-9, "{mean} vs the end {clamped}");
                continue;
            }
            assert!(
                (mean - target).abs() < 4.0 * se,
                "{mean} +- {se} vs {target}"
            );
            assert!((mean - (target + 20.0 * se)).abs() > 4.0 * se, "control");
        }
    }
    check(Bernoulli::new(vec![0.0; 40]), [0.3, 2.0]);
    check(Spin::new(vec![0.0; 40]), [-0.2, -9.0]);
    check(Potts::new(3, vec![0.0; 60]).unwrap(), [0.4, 0.9]);
}

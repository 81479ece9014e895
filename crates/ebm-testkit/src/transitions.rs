use crate::chi2::{ChiSquare, chi_square};
use crate::enumerable::{exact_draws, invariance, one_step_from_exact};
use ebm_core::numerics::log_sum_exp;
use ebm_core::{ChainState, Kernel, Scalar};
use ebm_models::{DiscreteLayer, Layer, Rbm, RbmChains};

/// `n` independent exact draws of \\((v, h)\\) from the tempered joint \\(p_\beta(v, h)\\) of a
/// small RBM, as a chain state whose RNG streams are derived from `seed` (the same streams
/// made the draws and drive any kernel applied next): [`crate::exact_draws`] on the RBM's
/// visible configurations, completed by \\(h \sim p_\beta(h \mid v)\\).
///
/// # Panics
/// If the visible layer cannot be enumerated.
pub fn exact_chains<V, H>(
    rbm: &Rbm<V, H>,
    beta: f64,
    n: usize,
    seed: u64,
) -> ChainState<RbmChains<V::Scalar>>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    exact_draws(rbm, beta, n, seed)
}

/// The exact invariance test on the visible marginal: [`crate::invariance`] on the RBM's
/// visible configurations. A kernel that leaves \\(p_\beta(v)\\) invariant gives a uniform
/// p-value.
///
/// # Panics
/// If the visible layer cannot be enumerated.
pub fn visible_invariance<V, H, K>(
    rbm: &Rbm<V, H>,
    kernel: &K,
    beta: f64,
    n: usize,
    seed: u64,
) -> ChiSquare
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
    K: Kernel<Rbm<V, H>>,
{
    invariance(rbm, kernel, beta, n, seed)
}

/// The exact joint law \\(p_\beta(v, h) = e^{-\beta E(v, h)} / Z_\beta\\) of a small RBM with
/// both layers discrete, indexed by `v_index + n_v * h_index`.
///
/// # Panics
/// If the product of the configuration counts exceeds \\(2^{24}\\).
pub fn joint_probabilities<V, H>(rbm: &Rbm<V, H>, beta: f64) -> Vec<f64>
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
{
    let (nv, nh) = (
        rbm.visible().n_configurations(),
        rbm.hidden().n_configurations(),
    );
    assert!(
        nv.saturating_mul(nh) <= 1 << 24,
        "joint_probabilities: too many states"
    );
    let (nv, nh) = (nv as usize, nh as usize);
    let mut v = vec![V::Scalar::zero(); rbm.visible().width()];
    let mut h = vec![V::Scalar::zero(); rbm.hidden().width()];
    let mut logp = vec![0.0; nv * nh];
    for j in 0..nh {
        rbm.hidden().write_configuration(j as u128, &mut h);
        for i in 0..nv {
            rbm.visible().write_configuration(i as u128, &mut v);
            logp[i + nv * j] = -beta * rbm.joint_energy(&v, &h);
        }
    }
    let lz = log_sum_exp(&logp);
    logp.iter().map(|l| (l - lz).exp()).collect()
}

/// The two conditional laws of a joint law `p[v + n_v h]` over `n_v x n_h` states (e.g. from
/// [`joint_probabilities`]): \\(p(h \mid v)\\) as `[v][h]` and \\(p(v \mid h)\\) as `[h][v]`.
///
/// # Panics
/// If `p.len() != n_v * n_h`.
pub fn conditionals(p: &[f64], n_v: usize, n_h: usize) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    assert_eq!(
        p.len(),
        n_v * n_h,
        "conditionals: one probability per joint state"
    );
    let h_given_v = (0..n_v)
        .map(|v| {
            let z: f64 = (0..n_h).map(|h| p[v + n_v * h]).sum();
            (0..n_h).map(|h| p[v + n_v * h] / z).collect()
        })
        .collect();
    let v_given_h = (0..n_h)
        .map(|h| {
            let z: f64 = (0..n_v).map(|v| p[v + n_v * h]).sum();
            (0..n_v).map(|v| p[v + n_v * h] / z).collect()
        })
        .collect();
    (h_given_v, v_given_h)
}

/// The exact invariance test on the joint law \\(p_\beta(v, h)\\): as [`visible_invariance`],
/// but the pair of both layers is tested after the step (for kernels that maintain `h`).
///
/// # Panics
/// If the joint state space cannot be enumerated.
pub fn joint_invariance<V, H, K>(
    rbm: &Rbm<V, H>,
    kernel: &K,
    beta: f64,
    n: usize,
    seed: u64,
) -> ChiSquare
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
    K: Kernel<Rbm<V, H>>,
{
    let state = one_step_from_exact(rbm, kernel, beta, n, seed);
    let p = joint_probabilities(rbm, beta);
    let nv = rbm.visible().n_configurations() as usize;
    let mut counts = vec![0u64; p.len()];
    for (vc, hc) in state
        .chains
        .visible
        .column_iter()
        .zip(state.chains.hidden.column_iter())
    {
        let i = rbm.visible().configuration_index(vc.as_slice()) as usize;
        let j = rbm.hidden().configuration_index(hc.as_slice()) as usize;
        counts[i + nv * j] += 1;
    }
    chi_square(&counts, &p)
}

/// The exact transition matrix (row-major, `T[x * n + y]`) on visible configurations of one
/// alternating Gibbs sweep that samples \\(h\\) at `beta_hidden` and then \\(v\\) at
/// `beta_visible`:
/// \\(T(v, v') = \sum_h p_{\beta_h}(h \mid v)\, p_{\beta_v}(v' \mid h)\\), with the
/// conditionals computed from the joint energy. With equal betas it is reversible with respect
/// to \\(p_\beta(v)\\); with different betas (a wrong kernel) it is not.
pub fn gibbs_transition_matrix<V, H>(
    rbm: &Rbm<V, H>,
    beta_hidden: f64,
    beta_visible: f64,
) -> Vec<f64>
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
{
    let nv = rbm.visible().n_configurations() as usize;
    let nh = rbm.hidden().n_configurations() as usize;
    let mut v = vec![V::Scalar::zero(); rbm.visible().width()];
    let mut h = vec![V::Scalar::zero(); rbm.hidden().width()];
    let mut e = vec![0.0; nv * nh]; // e[i * nh + j] = E(v_i, h_j)
    for i in 0..nv {
        rbm.visible().write_configuration(i as u128, &mut v);
        for j in 0..nh {
            rbm.hidden().write_configuration(j as u128, &mut h);
            e[i * nh + j] = rbm.joint_energy(&v, &h);
        }
    }
    // p(h_j | v_i) at beta_hidden and p(v_k | h_j) at beta_visible.
    let mut p_h = vec![0.0; nv * nh];
    for i in 0..nv {
        let row: Vec<f64> = (0..nh).map(|j| -beta_hidden * e[i * nh + j]).collect();
        let lz = log_sum_exp(&row);
        for j in 0..nh {
            p_h[i * nh + j] = (row[j] - lz).exp();
        }
    }
    let mut p_v = vec![0.0; nh * nv]; // p_v[j * nv + k]
    for j in 0..nh {
        let col: Vec<f64> = (0..nv).map(|k| -beta_visible * e[k * nh + j]).collect();
        let lz = log_sum_exp(&col);
        for k in 0..nv {
            p_v[j * nv + k] = (col[k] - lz).exp();
        }
    }
    let mut t = vec![0.0; nv * nv];
    for i in 0..nv {
        for j in 0..nh {
            let a = p_h[i * nh + j];
            for k in 0..nv {
                t[i * nv + k] += a * p_v[j * nv + k];
            }
        }
    }
    t
}

/// The exact transition matrix of one single-site Metropolis update of unit `unit` of a
/// discrete layer: from configuration `x`, a state `s` different from the current one is
/// proposed with probability \\(1/(q-1)\\) and accepted with probability
/// \\(e^{\texttt{log\_accept}(x, \texttt{unit}, s)}\\); the remaining mass stays on `x`.
pub fn single_site_transition_matrix<L: DiscreteLayer>(
    layer: &L,
    unit: usize,
    log_accept: impl Fn(&[L::Scalar], usize, usize) -> f64,
) -> Vec<f64> {
    let n = layer.n_configurations() as usize;
    let q = layer.unit_states();
    let uw = layer.unit_width();
    let mut x = vec![L::Scalar::zero(); layer.width()];
    let mut y = x.clone();
    let mut t = vec![0.0; n * n];
    for a in 0..n {
        layer.write_configuration(a as u128, &mut x);
        let cur = layer.read_unit_state(&x[unit * uw..(unit + 1) * uw]);
        let mut stay = 1.0;
        for s in (0..q).filter(|&s| s != cur) {
            let p = log_accept(&x, unit, s).exp() / (q - 1) as f64;
            y.copy_from_slice(&x);
            layer.write_unit_state(s, &mut y[unit * uw..(unit + 1) * uw]);
            t[a * n + layer.configuration_index(&y) as usize] += p;
            stay -= p;
        }
        t[a * n + a] += stay;
    }
    t
}

/// \\(\max_{x, y} |p(x) T(x, y) - p(y) T(y, x)|\\) for a row-major transition matrix: zero
/// (to rounding) exactly when `T` satisfies detailed balance with respect to `p`.
pub fn detailed_balance_violation(p: &[f64], t: &[f64]) -> f64 {
    let n = p.len();
    assert_eq!(t.len(), n * n, "detailed_balance_violation: matrix size");
    let mut worst: f64 = 0.0;
    for x in 0..n {
        for y in 0..n {
            worst = worst.max((p[x] * t[x * n + y] - p[y] * t[y * n + x]).abs());
        }
    }
    worst
}

/// \\(\max_y |\sum_x p(x) T(x, y) - p(y)|\\): zero exactly when `p` is stationary for `T`.
pub fn stationarity_violation(p: &[f64], t: &[f64]) -> f64 {
    let n = p.len();
    assert_eq!(t.len(), n * n, "stationarity_violation: matrix size");
    (0..n)
        .map(|y| ((0..n).map(|x| p[x] * t[x * n + y]).sum::<f64>() - p[y]).abs())
        .fold(0.0, f64::max)
}

trait ZeroExt {
    fn zero() -> Self;
}
impl<F: Scalar> ZeroExt for F {
    fn zero() -> Self {
        F::from_f64(0.0)
    }
}

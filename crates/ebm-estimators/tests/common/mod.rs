//! Models shared by the accuracy tests: random RBMs, "trained-like" RBMs with strong clustered
//! couplings, and a training-like trajectory from an independent-site model to a target.
#![allow(dead_code)]

use ebm_core::{Par, RngStreams};
use ebm_models::{Bernoulli, Rbm};
use nalgebra::DMatrix;
use rand::Rng;

pub type Brbm = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

/// A standard normal draw (Box-Muller).
pub fn normal(rng: &mut impl Rng) -> f64 {
    let u: f64 = rng.random::<f64>().max(1e-300);
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// An RBM with Gaussian weights of standard deviation `scale` and fields of standard deviation
/// 0.5.
pub fn random_rbm(nv: usize, nh: usize, scale: f64, seed: u64) -> Brbm {
    let mut rng = RngStreams::auxiliary(seed, 7);
    let w = DMatrix::from_fn(nv, nh, |_, _| scale * normal(&mut rng));
    let a = (0..nv).map(|_| 0.5 * normal(&mut rng)).collect();
    let b = (0..nh).map(|_| 0.5 * normal(&mut rng)).collect();
    Rbm::new(Bernoulli::new(a), Bernoulli::new(b), w).unwrap()
}

/// Prototypes of the clustered model: `clusters` random binary patterns of length `nv`.
pub fn prototypes(nv: usize, clusters: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = RngStreams::auxiliary(seed, 8);
    (0..clusters)
        .map(|_| {
            (0..nv)
                .map(|_| (rng.random::<f64>() < 0.5) as u8 as f64)
                .collect()
        })
        .collect()
}

/// A "trained-like" RBM: hidden unit `a` detects prototype `a % clusters` with weights
/// `strength * (2 xi_i - 1)` (plus a little noise) and a bias that switches it on only near
/// its prototype, as an RBM trained on clustered data ends up; the law has one sharp mode per
/// prototype, separated by barriers Gibbs sampling does not cross at beta = 1.
pub fn clustered_rbm(nv: usize, nh: usize, clusters: usize, strength: f64, seed: u64) -> Brbm {
    let xi = prototypes(nv, clusters, seed);
    let mut rng = RngStreams::auxiliary(seed, 9);
    let w = DMatrix::from_fn(nv, nh, |i, a| {
        strength * (2.0 * xi[a % clusters][i] - 1.0) + 0.1 * normal(&mut rng)
    });
    let eta = (0..nh)
        .map(|a| {
            let ones: f64 = xi[a % clusters].iter().sum();
            -strength * (ones - 1.5)
        })
        .collect();
    let theta = (0..nv).map(|_| -0.2 + 0.1 * normal(&mut rng)).collect();
    Rbm::new(Bernoulli::new(theta), Bernoulli::new(eta), w).unwrap()
}

/// The independent-site starting point of a trajectory: visible fields from the mean of the
/// prototypes (the "data frequencies"), zero hidden fields and weights.
pub fn independent_start(target: &Brbm, means: &[f64]) -> Brbm {
    let nh = target.hidden().fields.len();
    Rbm::new(
        Bernoulli::from_means(means),
        Bernoulli::zeros(nh),
        DMatrix::zeros(means.len(), nh),
    )
    .unwrap()
}

fn smoothstep(x: f64) -> f64 {
    let x = x.clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

/// A training-like path from `start` (zero weights) to `target`: the visible fields move
/// linearly, while the hidden units of cluster `c` (unit `a` has cluster `a % clusters`) switch
/// on one cluster after the other, as modes appear one by one during training.
pub fn trajectory_model(start: &Brbm, target: &Brbm, clusters: usize, t: f64) -> Brbm {
    let ramp = |a: usize| {
        let c = (a % clusters) as f64;
        let t0 = 0.5 * c / clusters as f64;
        smoothstep((t - t0) / 0.5)
    };
    let (nv, nh) = target.weights().shape();
    let w = DMatrix::from_fn(nv, nh, |i, a| ramp(a) * target.weights()[(i, a)]);
    let eta = (0..nh)
        .map(|a| ramp(a) * target.hidden().fields[a])
        .collect();
    let theta = (0..nv)
        .map(|i| {
            let s = start.visible().fields[i];
            s + t * (target.visible().fields[i] - s)
        })
        .collect();
    Rbm::new(Bernoulli::new(theta), Bernoulli::new(eta), w).unwrap()
}

/// `n + 1` checkpoints of the trajectory at `t = 0, 1/n, ..., 1`.
pub fn trajectory(start: &Brbm, target: &Brbm, clusters: usize, n: usize) -> Vec<Brbm> {
    (0..=n)
        .map(|j| trajectory_model(start, target, clusters, j as f64 / n as f64))
        .collect()
}

/// Mean of the prototypes, per visible unit.
pub fn prototype_means(xi: &[Vec<f64>]) -> Vec<f64> {
    let nv = xi[0].len();
    (0..nv)
        .map(|i| xi.iter().map(|p| p[i]).sum::<f64>() / xi.len() as f64)
        .collect()
}

/// Linear grid 0, 1/n, ..., 1.
pub fn linear_betas(n: usize) -> Vec<f64> {
    (0..=n).map(|k| k as f64 / n as f64).collect()
}

pub const PAR: Par = Par::Rayon;

/// The accuracy criterion of the estimator tests: the error is within 5 of the estimator's own
/// standard errors, and that standard error is below `max_se` (so that passing means
/// something). Returns the z-score.
pub fn check_accuracy(
    est: &ebm_estimators::LogZEstimate,
    exact: f64,
    max_se: f64,
) -> Result<f64, String> {
    let z = (est.log_z - exact) / est.std_err;
    if est.std_err.is_nan() || est.std_err > max_se {
        return Err(format!(
            "standard error {} above {max_se} (estimate {} vs exact {exact})",
            est.std_err, est.log_z
        ));
    }
    if z.abs() > 5.0 {
        return Err(format!(
            "estimate {} vs exact {exact}: error {:+.4} is {z:.1} standard errors ({})",
            est.log_z,
            est.log_z - exact,
            est.std_err
        ));
    }
    Ok(z)
}

/// Panics unless [`check_accuracy`] passes.
pub fn assert_accurate(est: &ebm_estimators::LogZEstimate, exact: f64, max_se: f64, what: &str) {
    if let Err(e) = check_accuracy(est, exact, max_se) {
        panic!("{what}: {e}");
    }
}

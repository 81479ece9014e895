//! Clustered binary data living in a low-dimensional subspace (tethered-MC paper, PTT paper).
//!
//! The papers do not define their generators (tethered-MC paper: "the paper does not define the
//! generator"), so this module fixes one, documented here:
//!
//! 1. Draw a latent point `x ∈ R^d` from a mixture of components (isotropic Gaussians or uniform
//!    balls), recording the component index as the sample's label.
//! 2. Build `d` mutually orthogonal `±1` patterns `ξ_α ∈ {-1,+1}^N`: Walsh functions on `2^k`
//!    equal blocks of variables (`2^k >= d`, `N` divisible by `2^k`), then one random permutation of
//!    the variables (seeded). `ξ_0` is the all-ones vector, so the 1D sets lie along
//!    `u = 1/√N` as in the tethered-MC paper §6.1.1.
//! 3. Draw independent spins with `P(s_i = +1) = (1 + μ_i)/2`, `μ_i = Σ_α x_α ξ_αi` (clamped to
//!    `[-1, 1]`; the presets keep `Σ_α |x_α| <= 1` except in far Gaussian tails, so no clamping).
//!
//! Then the order parameters `m_α(s) = s·ξ_α / N` satisfy `E[m_α | x] = x_α` exactly and
//! `Var[m_α | x] = Σ_i (1 - μ_i²)/N² <= 1/N`: the projection on the pattern directions reproduces
//! the latent shape up to noise of order `1/√N`, and the leading principal components of the data
//! span the pattern directions (tested in `tests/pca_recovers_clusters.rs`).

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::dataset::{Dataset, Domain};
use crate::error::{Error, Result};

/// Shape of one mixture component in latent space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Isotropic Gaussian with standard deviation `std` per latent coordinate.
    Gaussian {
        /// Standard deviation (>= 0).
        std: f64,
    },
    /// Uniform in the `d`-ball of radius `radius` (a segment for d = 1, a disk for d = 2).
    Ball {
        /// Radius (>= 0).
        radius: f64,
    },
}

/// One mixture component.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// Centre in latent space (length `d`, the same for every component).
    pub centre: Vec<f64>,
    /// Shape around the centre.
    pub shape: Shape,
    /// Relative weight (> 0; normalised over components).
    pub weight: f64,
}

/// Parameters of [`clustered`].
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// Number of binary variables `N`.
    pub n_features: usize,
    /// Number of samples.
    pub n_samples: usize,
    /// Mixture components (at least one).
    pub components: Vec<Component>,
}

/// The papers' artificial sets (tethered-MC paper, PTT paper). Sample counts not given by
/// the papers are this crate's choice and marked so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterPreset {
    /// "Mickey": three uniform disks (face and two ears) in 2D, weights proportional to area
    /// (2/3, 1/6, 1/6); `N = 1000`, 16 000 samples (PTT paper).
    Mickey,
    /// Two balanced Gaussian clusters at `m = ±0.5` (std 0.05) along `u = 1/√N`; `N = 1000`;
    /// 10 000 samples (count: this crate's choice). Tethered-MC §6.1.1.
    TwoClusters1d,
    /// Five balanced Gaussian clusters at `m = -0.8, -0.4, 0, 0.4, 0.8` (std 0.04) along one
    /// direction; `N = 1000`; 10 000 samples (count: this crate's choice). Tethered-MC Fig. 1–3.
    FiveClusters1d,
    /// Three balanced Gaussian clusters (std 0.05) in 2D at `(-0.45,-0.2), (0.45,-0.2), (0,0.3)`:
    /// the two lower ones coincide on the second coordinate; `N = 1000`; 10 000 samples (count:
    /// this crate's choice). Tethered-MC §6.1.2.
    ThreeClusters2d,
    /// Three balanced Gaussian clusters (std 0.08) in 2D at `(-0.25,-0.25), (0.25,-0.25),
    /// (0,0.45)`, the setting of the tethered-MC paper's Fig. 6: clusters that "superimpose
    /// when projected on a single direction". On the second coordinate (the data's first
    /// principal direction) the two lower clusters coincide; on the first (the second principal
    /// direction) the three centres are 0.25 apart, about 3 (N = 1000) or 2 (N = 100) standard
    /// deviations of the projected clusters, so they overlap; in the plane every pair is at
    /// least 0.5 apart. `N = 1000`; 10 000 samples (count: this crate's choice).
    ThreeClustersOverlap2d,
}

impl ClusterPreset {
    /// All presets.
    pub const ALL: [ClusterPreset; 5] = [
        ClusterPreset::Mickey,
        ClusterPreset::TwoClusters1d,
        ClusterPreset::FiveClusters1d,
        ClusterPreset::ThreeClusters2d,
        ClusterPreset::ThreeClustersOverlap2d,
    ];

    /// The preset's configuration (edit it to change sizes).
    pub fn config(self) -> ClusterConfig {
        let g = |centre: Vec<f64>, std: f64| Component {
            centre,
            shape: Shape::Gaussian { std },
            weight: 1.0,
        };
        let disk = |centre: Vec<f64>, radius: f64| Component {
            centre,
            shape: Shape::Ball { radius },
            weight: radius * radius,
        };
        let (n_samples, components) = match self {
            ClusterPreset::Mickey => (
                16_000,
                vec![
                    disk(vec![0.0, -0.09], 0.30),
                    disk(vec![-0.30, 0.27], 0.15),
                    disk(vec![0.30, 0.27], 0.15),
                ],
            ),
            ClusterPreset::TwoClusters1d => (10_000, vec![g(vec![-0.5], 0.05), g(vec![0.5], 0.05)]),
            ClusterPreset::FiveClusters1d => (
                10_000,
                [-0.8, -0.4, 0.0, 0.4, 0.8]
                    .iter()
                    .map(|&c| g(vec![c], 0.04))
                    .collect(),
            ),
            ClusterPreset::ThreeClusters2d => (
                10_000,
                vec![
                    g(vec![-0.45, -0.2], 0.05),
                    g(vec![0.45, -0.2], 0.05),
                    g(vec![0.0, 0.3], 0.05),
                ],
            ),
            ClusterPreset::ThreeClustersOverlap2d => (
                10_000,
                vec![
                    g(vec![-0.25, -0.25], 0.08),
                    g(vec![0.25, -0.25], 0.08),
                    g(vec![0.0, 0.45], 0.08),
                ],
            ),
        };
        ClusterConfig {
            n_features: 1000,
            n_samples,
            components,
        }
    }

    /// Parses `mickey`, `two-clusters-1d`, `five-clusters-1d`, `three-clusters-2d`,
    /// `three-clusters-overlap-2d`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "mickey" => ClusterPreset::Mickey,
            "two-clusters-1d" => ClusterPreset::TwoClusters1d,
            "five-clusters-1d" => ClusterPreset::FiveClusters1d,
            "three-clusters-2d" => ClusterPreset::ThreeClusters2d,
            "three-clusters-overlap-2d" => ClusterPreset::ThreeClustersOverlap2d,
            _ => return None,
        })
    }
}

/// Output of [`clustered`].
#[derive(Debug, Clone)]
pub struct ClusteredData {
    /// `N x n_samples` [`Domain::Spin`] data; labels are the component indices.
    pub dataset: Dataset,
    /// `d x n_samples` latent points.
    pub latent: DMatrix<f64>,
    /// `N x d` orthonormal directions `ξ_α / √N`.
    pub directions: DMatrix<f64>,
}

/// Orthogonal `±1` patterns: column `α` of the result is Walsh function `α` on `2^k` equal blocks.
fn walsh_patterns(n: usize, d: usize) -> Result<DMatrix<f64>> {
    let mut blocks = 1usize;
    while blocks < d {
        blocks *= 2;
    }
    if n == 0 || !n.is_multiple_of(blocks) {
        return Err(Error::InvalidArgument(format!(
            "{d} orthogonal patterns need N divisible by {blocks}, got N = {n}"
        )));
    }
    let len = n / blocks;
    Ok(DMatrix::from_fn(n, d, |i, a| {
        let b = i / len;
        if (a & b).count_ones().is_multiple_of(2) {
            1.0
        } else {
            -1.0
        }
    }))
}

/// Generates clustered binary data (see the module documentation). Deterministic given `seed`.
///
/// # Errors
/// [`Error::InvalidArgument`] if there is no component, the latent dimensions differ or are not in
/// `1..=16`, a weight is not positive, a shape parameter is negative, or `N` is not divisible by
/// the number of Walsh blocks.
pub fn clustered(cfg: &ClusterConfig, seed: u64) -> Result<ClusteredData> {
    let d = cfg
        .components
        .first()
        .ok_or_else(|| Error::InvalidArgument("no mixture component".into()))?
        .centre
        .len();
    if !(1..=16).contains(&d) {
        return Err(Error::InvalidArgument(format!(
            "latent dimension {d} not in 1..=16"
        )));
    }
    for (k, c) in cfg.components.iter().enumerate() {
        let bad_shape = match c.shape {
            Shape::Gaussian { std } => !(std >= 0.0 && std.is_finite()),
            Shape::Ball { radius } => !(radius >= 0.0 && radius.is_finite()),
        };
        if c.centre.len() != d || !(c.weight > 0.0 && c.weight.is_finite()) || bad_shape {
            return Err(Error::InvalidArgument(format!(
                "component {k}: needs a centre of dimension {d}, a positive weight and a non-negative shape parameter"
            )));
        }
    }
    let n = cfg.n_features;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let base = walsh_patterns(n, d)?;
    // random permutation of the variables
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        perm.swap(i, rng.random_range(0..=i));
    }
    let xi = DMatrix::from_fn(n, d, |i, a| base[(perm[i], a)]);
    let total: f64 = cfg.components.iter().map(|c| c.weight).sum();
    let mut latent = DMatrix::zeros(d, cfg.n_samples);
    let mut labels = Vec::with_capacity(cfg.n_samples);
    let mut data = DMatrix::zeros(n, cfg.n_samples);
    let mut x = vec![0.0; d];
    for j in 0..cfg.n_samples {
        let mut u = rng.random::<f64>() * total;
        let mut k = cfg.components.len() - 1;
        for (idx, c) in cfg.components.iter().enumerate() {
            if u < c.weight {
                k = idx;
                break;
            }
            u -= c.weight;
        }
        let comp = &cfg.components[k];
        match comp.shape {
            Shape::Gaussian { std } => {
                for (xa, ca) in x.iter_mut().zip(&comp.centre) {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    *xa = ca + std * z;
                }
            }
            Shape::Ball { radius } => loop {
                // rejection from the cube [-1,1]^d
                for xa in x.iter_mut() {
                    *xa = 2.0 * rng.random::<f64>() - 1.0;
                }
                if x.iter().map(|v| v * v).sum::<f64>() <= 1.0 {
                    for (xa, ca) in x.iter_mut().zip(&comp.centre) {
                        *xa = ca + radius * *xa;
                    }
                    break;
                }
            },
        }
        labels.push(k as u32);
        latent.column_mut(j).copy_from_slice(&x);
        let col = &mut data.as_mut_slice()[j * n..(j + 1) * n];
        for (i, s) in col.iter_mut().enumerate() {
            let mu: f64 = (0..d)
                .map(|a| x[a] * xi[(i, a)])
                .sum::<f64>()
                .clamp(-1.0, 1.0);
            *s = if rng.random::<f64>() < 0.5 * (1.0 + mu) {
                1.0
            } else {
                -1.0
            };
        }
    }
    let directions = xi / (n as f64).sqrt();
    Ok(ClusteredData {
        dataset: Dataset::new(data, Domain::Spin)?.with_labels(labels)?,
        latent,
        directions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_testkit::chi_square;

    #[test]
    fn directions_are_orthonormal() {
        for d in 1..=8 {
            let cfg = ClusterConfig {
                n_features: 1000,
                n_samples: 1,
                components: vec![Component {
                    centre: vec![0.0; d],
                    shape: Shape::Gaussian { std: 0.1 },
                    weight: 1.0,
                }],
            };
            let out = clustered(&cfg, 3).unwrap();
            let g = out.directions.transpose() * &out.directions;
            assert!((g - DMatrix::identity(d, d)).abs().max() < 1e-12, "d = {d}");
            assert!(
                out.directions
                    .column(0)
                    .iter()
                    .all(|&v| (v - 1.0 / 1000f64.sqrt()).abs() < 1e-15)
            );
        }
        let mut bad = ClusterPreset::ThreeClusters2d.config();
        bad.n_features = 999;
        assert!(clustered(&bad, 0).is_err());
    }

    #[test]
    fn pattern_projection_reproduces_latent_points() {
        let mut cfg = ClusterPreset::Mickey.config();
        cfg.n_samples = 3000;
        let out = clustered(&cfg, 1).unwrap();
        let n = cfg.n_features as f64;
        // m_α = s·ξ_α/N = (s·directions_α)/√N has mean x_α and sd <= 1/√N
        let m = out.directions.transpose() * out.dataset.data() / n.sqrt();
        let dev = (&m - &out.latent).abs().max();
        assert!(dev < 5.5 / n.sqrt(), "max deviation {dev}");
        // and the deviations are not degenerate (the spins are random): rms close to 1/√N
        let rms = ((&m - &out.latent).norm_squared() / (2.0 * 3000.0)).sqrt();
        assert!(rms > 0.8 / n.sqrt() && rms < 1.0 / n.sqrt(), "rms {rms}");
        // latent points of each disk lie inside it
        for (j, &k) in out.dataset.labels().unwrap().iter().enumerate() {
            let c = &cfg.components[k as usize];
            let Shape::Ball { radius } = c.shape else {
                unreachable!()
            };
            let r2 = (out.latent[(0, j)] - c.centre[0]).powi(2)
                + (out.latent[(1, j)] - c.centre[1]).powi(2);
            assert!(r2 <= radius * radius + 1e-12);
        }
    }

    #[test]
    fn component_frequencies_match_weights() {
        let mut cfg = ClusterPreset::Mickey.config();
        cfg.n_samples = 6000;
        cfg.n_features = 8;
        let out = clustered(&cfg, 2).unwrap();
        let mut counts = vec![0u64; 3];
        for &k in out.dataset.labels().unwrap() {
            counts[k as usize] += 1;
        }
        let t = chi_square(&counts, &[4.0, 1.0, 1.0]);
        assert!(t.p_value > 1e-4, "{counts:?}");
        let wrong = chi_square(&counts, &[1.0, 1.0, 1.0]);
        assert!(wrong.p_value < 1e-10);
    }

    #[test]
    fn presets_and_determinism() {
        for p in ClusterPreset::ALL {
            let cfg = p.config();
            assert_eq!(cfg.n_features, 1000);
            // presets keep Σ|x_α| <= 1 at the centres +- 3 std / radius
            for c in &cfg.components {
                let spread = match c.shape {
                    Shape::Gaussian { std } => 3.0 * std,
                    Shape::Ball { radius } => radius,
                };
                let l1: f64 = c.centre.iter().map(|v| v.abs() + spread).sum();
                assert!(l1 <= 1.0, "{p:?}");
            }
        }
        assert_eq!(ClusterPreset::Mickey.config().n_samples, 16_000);
        assert_eq!(
            ClusterPreset::from_name("mickey"),
            Some(ClusterPreset::Mickey)
        );
        let mut cfg = ClusterPreset::TwoClusters1d.config();
        cfg.n_samples = 20;
        let a = clustered(&cfg, 5).unwrap();
        let b = clustered(&cfg, 5).unwrap();
        assert_eq!(a.dataset, b.dataset);
        assert_ne!(a.dataset, clustered(&cfg, 6).unwrap().dataset);
    }
}

//! Principal component analysis, centred and uncentred (PTT paper;
//! tethered-MC paper: the paper centres, its code does not, so both are offered).
//!
//! With data columns `x_j` (layout `n_features x n_samples`) and weights `w_j`
//! (`W = Σ_j w_j`), the fitted matrix is
//!
//! - centred: the covariance `C = Σ_j w_j (x_j - μ)(x_j - μ)^T / W`, `μ = Σ_j w_j x_j / W`;
//! - uncentred: the second-moment matrix `C = Σ_j w_j x_j x_j^T / W` (`μ = 0`); its eigenvectors
//!   are the right singular vectors of the samples-as-rows data matrix.
//!
//! The leading `k` eigenpairs `C u_a = λ_a u_a`, `λ_1 >= λ_2 >= ...`, are the principal directions
//! and variances. `C` is accumulated by GEMM over blocks of samples (`N² n` multiply-adds), then
//! decomposed by nalgebra's symmetric eigensolver (`O(N³)`).
//!
//! Sign convention: each direction is oriented so that the sum of its entries is `>= 0`
//! (tethered-MC paper "sign: mean >= 0"); if that sum is exactly 0, the first non-zero entry is
//! positive. Directions whose entries sum to almost 0 can change sign under tiny perturbations
//! of the data.

use nalgebra::{DMatrix, DVector, SymmetricEigen};

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::linalg::{gemm_into, matmul};

/// Whether the data mean is subtracted before the decomposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Centering {
    /// Covariance about the (weighted) mean.
    Centered,
    /// Second moments about zero (plain SVD of the data).
    Uncentered,
}

/// A fitted PCA: the mean, the leading directions and their variances.
#[derive(Debug, Clone, PartialEq)]
pub struct Pca {
    mean: DVector<f64>,
    components: DMatrix<f64>,
    variances: Vec<f64>,
    total_variance: f64,
    centering: Centering,
}

const BLOCK: usize = 2048;

/// The weighted covariance (centred) or second-moment (uncentred) matrix `C` of the module
/// documentation, `n_features x n_features`, and the mean used (zero if uncentred).
///
/// # Errors
/// [`Error::Shape`] if `weights` has the wrong length; [`Error::InvalidArgument`] for no samples,
/// negative / non-finite weights or a zero total weight.
pub fn covariance(
    data: &DMatrix<f64>,
    weights: Option<&[f64]>,
    centering: Centering,
) -> Result<(DMatrix<f64>, DVector<f64>)> {
    let (nf, ns) = data.shape();
    if ns == 0 {
        return Err(Error::InvalidArgument("PCA of an empty dataset".into()));
    }
    if let Some(w) = weights {
        if w.len() != ns {
            return Err(Error::Shape(format!(
                "{} weights for {ns} samples",
                w.len()
            )));
        }
        if w.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(Error::InvalidArgument(
                "weights must be finite and >= 0".into(),
            ));
        }
    }
    let total: f64 = weights.map_or(ns as f64, |w| w.iter().sum());
    if total <= 0.0 {
        return Err(Error::InvalidArgument("total weight is zero".into()));
    }
    let w_of = |j: usize| weights.map_or(1.0, |w| w[j]);
    let mut mean = DVector::zeros(nf);
    if centering == Centering::Centered {
        for j in 0..ns {
            mean.axpy(w_of(j) / total, &data.column(j), 1.0);
        }
    }
    let mut cov = DMatrix::zeros(nf, nf);
    let mut block = DMatrix::zeros(nf, BLOCK.min(ns));
    let mut start = 0;
    let mut first = true;
    while start < ns {
        let len = BLOCK.min(ns - start);
        if block.ncols() != len {
            block = DMatrix::zeros(nf, len);
        }
        for c in 0..len {
            let j = start + c;
            let s = (w_of(j) / total).sqrt();
            let src = &data.as_slice()[j * nf..(j + 1) * nf];
            let dst = &mut block.as_mut_slice()[c * nf..(c + 1) * nf];
            for ((d, &x), &m) in dst.iter_mut().zip(src).zip(mean.iter()) {
                *d = s * (x - m);
            }
        }
        gemm_into(&mut cov, !first, &block, false, &block, true, 1.0);
        first = false;
        start += len;
    }
    // symmetrise exactly (gemm's blocking can leave 1-ulp asymmetries)
    for i in 0..nf {
        for j in 0..i {
            let v = 0.5 * (cov[(i, j)] + cov[(j, i)]);
            cov[(i, j)] = v;
            cov[(j, i)] = v;
        }
    }
    Ok((cov, mean))
}

impl Pca {
    /// Fits the leading `k` components of an `n_features x n_samples` matrix with optional
    /// per-sample weights (see the module documentation).
    ///
    /// # Errors
    /// As [`covariance`], and [`Error::InvalidArgument`] if `k > n_features` or a value is not
    /// finite.
    pub fn fit(
        data: &DMatrix<f64>,
        weights: Option<&[f64]>,
        k: usize,
        centering: Centering,
    ) -> Result<Pca> {
        let nf = data.nrows();
        if k > nf {
            return Err(Error::InvalidArgument(format!(
                "{k} components requested from {nf} features"
            )));
        }
        if let Some(p) = data.iter().position(|x| !x.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "non-finite value at feature {}, sample {}",
                p % nf.max(1),
                p / nf.max(1)
            )));
        }
        let (cov, mean) = covariance(data, weights, centering)?;
        let total_variance = cov.trace();
        let eig = SymmetricEigen::new(cov);
        let mut order: Vec<usize> = (0..nf).collect();
        order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
        let mut components = DMatrix::zeros(nf, k);
        let mut variances = Vec::with_capacity(k);
        for (c, &idx) in order.iter().take(k).enumerate() {
            let mut v = eig.eigenvectors.column(idx).into_owned();
            let s = v.sum();
            let flip = if s != 0.0 {
                s < 0.0
            } else {
                v.iter().find(|x| **x != 0.0).is_some_and(|x| *x < 0.0)
            };
            if flip {
                v.neg_mut();
            }
            components.set_column(c, &v);
            variances.push(eig.eigenvalues[idx].max(0.0));
        }
        Ok(Pca {
            mean,
            components,
            variances,
            total_variance,
            centering,
        })
    }

    /// Fits on a [`Dataset`], using its weights.
    ///
    /// # Errors
    /// As [`Pca::fit`].
    pub fn fit_dataset(ds: &Dataset, k: usize, centering: Centering) -> Result<Pca> {
        Self::fit(ds.data(), Some(ds.weights()), k, centering)
    }

    /// The mean subtracted before projecting (zero for [`Centering::Uncentered`]).
    pub fn mean(&self) -> &DVector<f64> {
        &self.mean
    }
    /// `n_features x k` matrix of orthonormal principal directions, column `a` = `u_{a+1}`.
    pub fn components(&self) -> &DMatrix<f64> {
        &self.components
    }
    /// The variances `λ_1 >= ... >= λ_k` along the directions (eigenvalues of `C`).
    pub fn variances(&self) -> &[f64] {
        &self.variances
    }
    /// Fraction of the total variance `trace(C)` along each direction, `λ_a / trace(C)`.
    pub fn explained_variance_ratio(&self) -> Vec<f64> {
        self.variances
            .iter()
            .map(|v| {
                if self.total_variance > 0.0 {
                    v / self.total_variance
                } else {
                    0.0
                }
            })
            .collect()
    }
    /// Centred or uncentred.
    pub fn centering(&self) -> Centering {
        self.centering
    }
    /// Number of components `k`.
    pub fn n_components(&self) -> usize {
        self.components.ncols()
    }

    /// Projects columns (data samples or chains, `n_features x n`): returns the `k x n` matrix
    /// `U^T (x_j - μ)`.
    ///
    /// # Errors
    /// [`Error::Shape`] if `x` does not have `n_features` rows.
    pub fn project(&self, x: &DMatrix<f64>) -> Result<DMatrix<f64>> {
        if x.nrows() != self.mean.len() {
            return Err(Error::Shape(format!(
                "projecting {} features with a PCA fitted on {}",
                x.nrows(),
                self.mean.len()
            )));
        }
        let mut p = matmul(&self.components, true, x, false);
        let shift = self.components.tr_mul(&self.mean);
        for mut col in p.column_iter_mut() {
            col -= &shift;
        }
        Ok(p)
    }

    /// [`Pca::project`] divided by `√N` (`N = n_features`): the order parameters
    /// `m_a = u_a·(x - μ)/√N` of the PTT reference code (PTT paper) and of the tethered-MC
    /// paper (`m = v·ω/√N`).
    ///
    /// # Errors
    /// As [`Pca::project`].
    pub fn project_normalized(&self, x: &DMatrix<f64>) -> Result<DMatrix<f64>> {
        let s = (self.mean.len() as f64).sqrt();
        Ok(self.project(x)? / s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn gaussian(nf: usize, ns: usize, scales: &[f64], seed: u64) -> DMatrix<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        DMatrix::from_fn(nf, ns, |i, _| {
            let z: f64 = StandardNormal.sample(&mut rng);
            scales[i] * z + i as f64
        })
    }

    #[test]
    fn matches_svd_of_centred_data() {
        let x = gaussian(6, 500, &[3.0, 0.5, 2.0, 1.0, 0.2, 1.5], 1);
        let pca = Pca::fit(&x, None, 3, Centering::Centered).unwrap();
        let mean = x.column_mean();
        let mut xc = x.clone();
        for mut c in xc.column_iter_mut() {
            c -= &mean;
        }
        let svd = xc.clone().svd(true, false);
        let mut sv: Vec<f64> = svd.singular_values.iter().map(|s| s * s / 500.0).collect();
        sv.sort_by(|a, b| b.total_cmp(a));
        for a in 0..3 {
            assert!((pca.variances()[a] - sv[a]).abs() < 1e-9 * sv[0]);
            // u_a is an eigenvector of the covariance with eigenvalue λ_a
            let u = pca.components().column(a);
            let cu = &xc * (xc.transpose() * u) / 500.0;
            assert!((cu - pca.variances()[a] * u).norm() < 1e-9);
            assert!(u.sum() >= 0.0);
        }
        let g = pca.components().transpose() * pca.components();
        assert!((g - DMatrix::identity(3, 3)).abs().max() < 1e-12);
        // largest variances are along features 0 (scale 3) and 2 (scale 2)
        assert!(pca.components()[(0, 0)].abs() > 0.99);
        assert!(pca.components()[(2, 1)].abs() > 0.99);
        let ratio: f64 = pca.explained_variance_ratio().iter().sum();
        assert!(ratio < 1.0 && ratio > 0.8);
    }

    #[test]
    fn uncentred_uses_second_moments() {
        // data constant = c: covariance 0, second moment c c^T with eigenvalue |c|^2
        let c = DVector::from_vec(vec![1.0, 2.0, -2.0]);
        let x = DMatrix::from_fn(3, 10, |i, _| c[i]);
        let pca = Pca::fit(&x, None, 1, Centering::Uncentered).unwrap();
        assert!((pca.variances()[0] - 9.0).abs() < 1e-12);
        let u = pca.components().column(0);
        assert!((u - &c / 3.0).norm() < 1e-12);
        assert_eq!(pca.mean().norm(), 0.0);
        let centred = Pca::fit(&x, None, 1, Centering::Centered).unwrap();
        assert!(centred.variances()[0].abs() < 1e-12);
    }

    #[test]
    fn integer_weights_equal_duplication() {
        let x = gaussian(4, 50, &[1.0, 2.0, 0.5, 1.0], 2);
        let w: Vec<f64> = (0..50).map(|j| (j % 3) as f64).collect();
        let mut cols = Vec::new();
        for j in 0..50 {
            for _ in 0..(j % 3) {
                cols.push(j);
            }
        }
        let dup = x.select_columns(&cols);
        let a = Pca::fit(&x, Some(&w), 4, Centering::Centered).unwrap();
        let b = Pca::fit(&dup, None, 4, Centering::Centered).unwrap();
        assert!((a.components() - b.components()).abs().max() < 1e-9);
        for (p, q) in a.variances().iter().zip(b.variances()) {
            assert!((p - q).abs() < 1e-10);
        }
    }

    #[test]
    fn projection_is_u_transpose_x_minus_mean() {
        let x = gaussian(5, 3000, &[1.0, 2.0, 0.5, 1.0, 3.0], 3);
        let pca = Pca::fit(&x, None, 2, Centering::Centered).unwrap();
        let p = pca.project(&x).unwrap();
        let j = 17;
        let direct = pca.components().transpose() * (x.column(j) - pca.mean());
        assert!((p.column(j) - direct).norm() < 1e-10);
        // the projections have mean 0 and variance λ_a
        for a in 0..2 {
            let row = p.row(a);
            assert!(row.mean().abs() < 1e-10);
            let var = row.iter().map(|v| v * v).sum::<f64>() / 3000.0;
            assert!((var - pca.variances()[a]).abs() < 1e-9 * var);
        }
        let pn = pca.project_normalized(&x).unwrap();
        assert!((pn * 5f64.sqrt() - p).abs().max() < 1e-12);
        assert!(pca.project(&DMatrix::zeros(4, 1)).is_err());
        assert!(Pca::fit(&x, None, 6, Centering::Centered).is_err());
    }

    #[test]
    fn blocked_accumulation_matches_single_block() {
        // more samples than one GEMM block
        let x = gaussian(3, 2 * BLOCK + 77, &[1.0, 1.0, 1.0], 4);
        let (c, _) = covariance(&x, None, Centering::Uncentered).unwrap();
        let direct = &x * x.transpose() / x.ncols() as f64;
        assert!((c - direct).abs().max() < 1e-9);
    }
}

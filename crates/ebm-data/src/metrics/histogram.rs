//! Distances between the distributions of data and samples on the leading principal components
//! (PTT paper: 1-D histograms of samples vs data projected on PC1, PC2, ...).
//!
//! For two histograms `p`, `q` on common bins (normalised to 1):
//! total variation `TV = (1/2) Σ_b |p_b - q_b| ∈ [0,1]`; Hellinger
//! `H = sqrt(1 - Σ_b sqrt(p_b q_b)) ∈ [0,1]`; Jensen–Shannon
//! `JS = (1/2) KL(p‖m) + (1/2) KL(q‖m)`, `m = (p+q)/2`, in nats, `∈ [0, ln 2]`. Bins: `bins`
//! equal-width bins over `[min, max]` of the union of both samples. Also the exact 1-D
//! Wasserstein-1 distance between the empirical distributions, `W1 = ∫ |F_a(x) - F_b(x)| dx`.

use nalgebra::DMatrix;

use crate::error::{Error, Result};

/// Histogram distances between two 1-D samples (module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramDistance {
    /// Total variation distance.
    pub total_variation: f64,
    /// Hellinger distance.
    pub hellinger: f64,
    /// Jensen–Shannon divergence (nats).
    pub jensen_shannon: f64,
    /// Exact Wasserstein-1 distance between the empirical distributions (bin-free).
    pub wasserstein1: f64,
}

/// Normalised histogram of `x` in `bins` equal bins over `[lo, hi]` (the last bin is closed).
pub fn histogram(x: &[f64], bins: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut h = vec![0.0; bins];
    let width = (hi - lo) / bins as f64;
    for &v in x {
        let b = if width > 0.0 {
            (((v - lo) / width) as usize).min(bins - 1)
        } else {
            0
        };
        h[b] += 1.0;
    }
    let n = x.len().max(1) as f64;
    h.iter_mut().for_each(|v| *v /= n);
    h
}

/// Exact `W1 = ∫ |F_a - F_b| dx` between two empirical distributions.
///
/// # Panics
/// If either sample is empty or holds NaN.
pub fn wasserstein_1d(a: &[f64], b: &[f64]) -> f64 {
    assert!(!a.is_empty() && !b.is_empty(), "empty sample");
    let mut sa = a.to_vec();
    let mut sb = b.to_vec();
    sa.sort_by(|x, y| x.partial_cmp(y).expect("NaN in sample"));
    sb.sort_by(|x, y| x.partial_cmp(y).expect("NaN in sample"));
    let (na, nb) = (sa.len() as f64, sb.len() as f64);
    let (mut i, mut j) = (0, 0);
    let mut last = sa[0].min(sb[0]);
    let mut w = 0.0;
    while i < sa.len() || j < sb.len() {
        let next = match (sa.get(i), sb.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => unreachable!(),
        };
        w += (i as f64 / na - j as f64 / nb).abs() * (next - last);
        while i < sa.len() && sa[i] == next {
            i += 1;
        }
        while j < sb.len() && sb[j] == next {
            j += 1;
        }
        last = next;
    }
    w
}

/// Histogram distances between samples `a` and `b` (module documentation).
///
/// # Errors
/// [`Error::InvalidArgument`] if a sample is empty, holds a non-finite value or `bins == 0`.
pub fn histogram_distance(a: &[f64], b: &[f64], bins: usize) -> Result<HistogramDistance> {
    if a.is_empty() || b.is_empty() || bins == 0 {
        return Err(Error::InvalidArgument(
            "histogram distance needs two non-empty samples and bins >= 1".into(),
        ));
    }
    if a.iter().chain(b).any(|x| !x.is_finite()) {
        return Err(Error::InvalidArgument("non-finite value".into()));
    }
    let lo = a.iter().chain(b).cloned().fold(f64::INFINITY, f64::min);
    let hi = a.iter().chain(b).cloned().fold(f64::NEG_INFINITY, f64::max);
    let p = histogram(a, bins, lo, hi);
    let q = histogram(b, bins, lo, hi);
    let mut tv = 0.0;
    let mut bc = 0.0;
    let mut js = 0.0;
    for (&x, &y) in p.iter().zip(&q) {
        tv += 0.5 * (x - y).abs();
        bc += (x * y).sqrt();
        let m = 0.5 * (x + y);
        if x > 0.0 {
            js += 0.5 * x * (x / m).ln();
        }
        if y > 0.0 {
            js += 0.5 * y * (y / m).ln();
        }
    }
    Ok(HistogramDistance {
        total_variation: tv,
        hellinger: (1.0 - bc).max(0.0).sqrt(),
        jensen_shannon: js.max(0.0),
        wasserstein1: wasserstein_1d(a, b),
    })
}

/// [`histogram_distance`] for each row (principal component) of two `k x n` projection matrices
/// (e.g. `pca.project(data)` and `pca.project(chains)`).
///
/// # Errors
/// [`Error::Shape`] if the row counts differ; otherwise as [`histogram_distance`].
pub fn compare_projections(
    data: &DMatrix<f64>,
    samples: &DMatrix<f64>,
    bins: usize,
) -> Result<Vec<HistogramDistance>> {
    if data.nrows() != samples.nrows() {
        return Err(Error::Shape(format!(
            "{} components vs {}",
            data.nrows(),
            samples.nrows()
        )));
    }
    (0..data.nrows())
        .map(|a| {
            let x: Vec<f64> = data.row(a).iter().copied().collect();
            let y: Vec<f64> = samples.row(a).iter().copied().collect();
            histogram_distance(&x, &y, bins)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_and_disjoint() {
        let a = [0.0, 1.0, 2.0, 3.0];
        let same = histogram_distance(&a, &a, 4).unwrap();
        assert_eq!(same.total_variation, 0.0);
        assert!(same.hellinger.abs() < 1e-7);
        assert_eq!(same.jensen_shannon, 0.0);
        assert_eq!(same.wasserstein1, 0.0);
        let b = [10.0, 11.0];
        let d = histogram_distance(&a, &b, 10).unwrap();
        assert!((d.total_variation - 1.0).abs() < 1e-15);
        assert!((d.hellinger - 1.0).abs() < 1e-15);
        assert!((d.jensen_shannon - 2f64.ln()).abs() < 1e-15);
        // W1 between U{0,1,2,3} and U{10,11}: mean difference 10.5 - 1.5 = 9 (disjoint supports)
        assert!((d.wasserstein1 - 9.0).abs() < 1e-12);
    }

    #[test]
    fn known_partial_overlap() {
        // a in bins [0,1,1,1] / 4... use 2 bins on [0, 1]: a = {0,0,0,1} -> p = (3/4, 1/4),
        // b = {0,1,1,1} -> q = (1/4, 3/4)
        let d = histogram_distance(&[0.0, 0.0, 0.0, 1.0], &[0.0, 1.0, 1.0, 1.0], 2).unwrap();
        assert!((d.total_variation - 0.5).abs() < 1e-15);
        let bc = 2.0 * (3.0f64 / 16.0).sqrt();
        assert!((d.hellinger - (1.0 - bc).sqrt()).abs() < 1e-15);
        let js = 0.75 * (1.5f64).ln() + 0.25 * (0.5f64).ln();
        assert!((d.jensen_shannon - js).abs() < 1e-15);
        // W1 = |F_a - F_b| = 1/2 on [0, 1)
        assert!((d.wasserstein1 - 0.5).abs() < 1e-15);
    }

    #[test]
    fn wasserstein_shift_and_unequal_sizes() {
        let a: Vec<f64> = (0..100).map(|i| i as f64 * 0.01).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 0.3).collect();
        assert!((wasserstein_1d(&a, &b) - 0.3).abs() < 1e-12);
        // point mass at 0 vs {0, 1}: F differs by 1/2 on [0, 1)
        assert!((wasserstein_1d(&[0.0], &[0.0, 1.0]) - 0.5).abs() < 1e-15);
    }

    #[test]
    fn per_component() {
        let d = DMatrix::from_row_slice(2, 3, &[0.0, 1.0, 2.0, 5.0, 5.0, 5.0]);
        let s = DMatrix::from_row_slice(2, 3, &[0.0, 1.0, 2.0, 6.0, 6.0, 6.0]);
        let r = compare_projections(&d, &s, 5).unwrap();
        assert_eq!(r[0].total_variation, 0.0);
        assert!((r[1].total_variation - 1.0).abs() < 1e-15);
        assert!((r[1].wasserstein1 - 1.0).abs() < 1e-15);
        assert!(compare_projections(&d, &DMatrix::zeros(1, 3), 5).is_err());
    }
}

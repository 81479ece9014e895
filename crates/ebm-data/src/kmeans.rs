//! k-means clustering of points (one per column), to define the modes of a dataset by its
//! clusters (`ebm sample --modes kmeans:K`).
//!
//! Lloyd's algorithm (Lloyd 1982) from k-means++ seeds (Arthur & Vassilvitskii 2007): each
//! iteration assigns every point to its nearest centre, then moves each centre to the mean of
//! its points, which never increases the inertia
//! \\(\sum_j \min_a \lVert x_j - c_a \rVert^2\\); it stops when no assignment changes. Several
//! seedings are tried and the one of least inertia is kept. Deterministic given the seed.

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};

/// The result of [`kmeans`].
#[derive(Clone, Debug, PartialEq)]
pub struct KMeans {
    /// Cluster centres, one per column (`dim x k`).
    pub centres: DMatrix<f64>,
    /// Cluster of each point.
    pub labels: Vec<usize>,
    /// \\(\sum_j \lVert x_j - c_{\ell_j} \rVert^2\\).
    pub inertia: f64,
    /// Lloyd iterations of the kept seeding.
    pub iterations: usize,
}

/// Squared distance between column `j` of `x` and column `a` of `c`.
fn dist2(x: &DMatrix<f64>, j: usize, c: &DMatrix<f64>, a: usize) -> f64 {
    x.column(j)
        .iter()
        .zip(c.column(a).iter())
        .map(|(p, q)| (p - q) * (p - q))
        .sum()
}

/// The nearest centre of column `j` (ties to the lowest index) and its squared distance.
fn nearest(x: &DMatrix<f64>, j: usize, c: &DMatrix<f64>) -> (usize, f64) {
    (0..c.ncols()).fold((0, f64::INFINITY), |best, a| {
        let d = dist2(x, j, c, a);
        if d < best.1 { (a, d) } else { best }
    })
}

/// k-means++ seeds: the first centre uniform, each next one a point drawn with probability
/// proportional to its squared distance to the nearest centre so far.
fn seeds(x: &DMatrix<f64>, k: usize, rng: &mut impl Rng) -> DMatrix<f64> {
    let n = x.ncols();
    let mut c = DMatrix::zeros(x.nrows(), k);
    c.set_column(0, &x.column(rng.random_range(0..n)));
    let mut d: Vec<f64> = (0..n).map(|j| dist2(x, j, &c, 0)).collect();
    for a in 1..k {
        let total: f64 = d.iter().sum();
        let pick = if total > 0.0 {
            let mut u = rng.random::<f64>() * total;
            d.iter()
                .position(|&w| {
                    u -= w;
                    u < 0.0
                })
                .unwrap_or(n - 1)
        } else {
            rng.random_range(0..n)
        };
        c.set_column(a, &x.column(pick));
        for (j, dj) in d.iter_mut().enumerate() {
            *dj = dj.min(dist2(x, j, &c, a));
        }
    }
    c
}

/// Lloyd iterations from `centres` until no assignment changes or `max_iter` iterations.
fn lloyd(x: &DMatrix<f64>, mut centres: DMatrix<f64>, max_iter: usize) -> KMeans {
    let (n, k) = (x.ncols(), centres.ncols());
    let mut labels: Vec<usize> = (0..n).map(|j| nearest(x, j, &centres).0).collect();
    let mut iterations = 0;
    while iterations < max_iter {
        iterations += 1;
        let mut sums = DMatrix::zeros(x.nrows(), k);
        let mut counts = vec![0usize; k];
        for (j, &l) in labels.iter().enumerate() {
            let mut col = sums.column_mut(l);
            col += x.column(j);
            counts[l] += 1;
        }
        for a in 0..k {
            // An empty cluster keeps its centre.
            if counts[a] > 0 {
                centres.set_column(a, &(sums.column(a) / counts[a] as f64));
            }
        }
        let next: Vec<usize> = (0..n).map(|j| nearest(x, j, &centres).0).collect();
        if next == labels {
            break;
        }
        labels = next;
    }
    let inertia = (0..n).map(|j| dist2(x, j, &centres, labels[j])).sum();
    KMeans {
        centres,
        labels,
        inertia,
        iterations,
    }
}

/// Clusters the columns of `points` (`dim x n`) into `k` clusters: `restarts` k-means++
/// seedings (at least 1), each followed by at most `max_iter` Lloyd iterations; returns the
/// clustering of least inertia.
///
/// # Errors
/// [`Error::InvalidArgument`] for `k == 0`, fewer points than `k`, or a non-finite coordinate.
pub fn kmeans(
    points: &DMatrix<f64>,
    k: usize,
    restarts: usize,
    max_iter: usize,
    seed: u64,
) -> Result<KMeans> {
    if k == 0 || points.ncols() < k {
        return Err(Error::InvalidArgument(format!(
            "k-means: {k} clusters of {} points (need 1 <= k <= points)",
            points.ncols()
        )));
    }
    if points.iter().any(|v| !v.is_finite()) {
        return Err(Error::InvalidArgument(
            "k-means: the points have a non-finite coordinate".into(),
        ));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut best: Option<KMeans> = None;
    for _ in 0..restarts.max(1) {
        let run = lloyd(points, seeds(points, k, &mut rng), max_iter);
        if best.as_ref().is_none_or(|b| run.inertia < b.inertia) {
            best = Some(run);
        }
    }
    Ok(best.expect("at least one restart"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three tight blobs in the plane, 30 points each, at known centres.
    fn blobs() -> (DMatrix<f64>, Vec<usize>) {
        let centres = [(0.0, 0.0), (10.0, 0.0), (0.0, 10.0)];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut truth = Vec::new();
        let x = DMatrix::from_fn(2, 90, |i, j| {
            let c = centres[j % 3];
            if i == 0 {
                truth.push(j % 3);
            }
            (if i == 0 { c.0 } else { c.1 }) + rng.random::<f64>() - 0.5
        });
        (x, truth)
    }

    /// Whether two labellings are the same partition (up to renaming).
    fn same_partition(a: &[usize], b: &[usize]) -> bool {
        let pairs = |l: &[usize]| -> Vec<bool> {
            (0..l.len())
                .flat_map(|i| (0..l.len()).map(move |j| (i, j)))
                .map(|(i, j)| l[i] == l[j])
                .collect()
        };
        pairs(a) == pairs(b)
    }

    #[test]
    fn separated_blobs_are_recovered_and_a_crippled_run_is_not() {
        let (x, truth) = blobs();
        let r = kmeans(&x, 3, 5, 100, 1).unwrap();
        assert!(same_partition(&r.labels, &truth));
        // The centres are the blob means: inertia of 90 points uniform in a unit square.
        assert!(r.inertia < 90.0 * 2.0 / 12.0 * 1.5, "inertia {}", r.inertia);
        // Negative control: two centres in one blob and no iteration cannot find the
        // partition, and its inertia is far larger.
        let mut bad = DMatrix::zeros(2, 3);
        bad.set_column(0, &x.column(0));
        bad.set_column(1, &x.column(3));
        bad.set_column(2, &x.column(1));
        let crippled = lloyd(&x, bad, 0);
        assert!(!same_partition(&crippled.labels, &truth));
        assert!(crippled.inertia > 10.0 * r.inertia);
        // Deterministic given the seed.
        assert_eq!(kmeans(&x, 3, 5, 100, 1).unwrap(), r);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let (x, _) = blobs();
        assert!(kmeans(&x, 0, 1, 10, 0).is_err());
        assert!(kmeans(&x.columns(0, 2).into_owned(), 3, 1, 10, 0).is_err());
        let mut nan = x.clone();
        nan[(0, 0)] = f64::NAN;
        assert!(kmeans(&nan, 2, 1, 10, 0).is_err());
    }
}

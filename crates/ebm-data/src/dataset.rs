//! The [`Dataset`] type: a data matrix with one column per sample, sample weights, a value
//! [`Domain`], optional integer labels, a seeded train/test split and explicit domain conversions.
//!
//! # Layout
//!
//! `data` is an `n_features x n_samples` column-major [`DMatrix<f64>`]: **sample `j` is column `j`**
//! and is contiguous in memory. This is the layout of the samplers' chain batches (one column per
//! chain), so a dataset can seed chains and chains can be scored against data without a transpose.
//! Files store samples as rows; the loaders transpose.

use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};

/// The set of values a dataset's entries take.
///
/// Conversions between domains are explicit ([`Dataset::to_domain`]); a dataset is never
/// reinterpreted silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Binary variables `v_i ∈ {0, 1}`.
    Binary01,
    /// Ising spins `s_i ∈ {-1, +1}`, with `s = 2v - 1`.
    Spin,
    /// Categorical (Potts) variables stored as integer codes `x_i ∈ {0, ..., q-1}` (one row per site).
    Categorical {
        /// Number of states.
        q: usize,
    },
    /// One-hot encoded Potts variables: site `i` occupies rows `i*q .. (i+1)*q`, and state `a` of
    /// site `i` is row `i*q + a`; each block holds exactly one `1`, the other entries are `0`.
    OneHot {
        /// Number of states per site.
        q: usize,
    },
    /// Arbitrary finite reals.
    Real,
}

impl Domain {
    /// Checks that `x` is a valid entry of this domain (for [`Domain::OneHot`] only `x ∈ {0,1}`
    /// is checked here; the one-per-block rule is checked by [`check_domain`]).
    pub fn admits(&self, x: f64) -> bool {
        match *self {
            Domain::Binary01 | Domain::OneHot { .. } => x == 0.0 || x == 1.0,
            Domain::Spin => x == -1.0 || x == 1.0,
            Domain::Categorical { q } => x >= 0.0 && x.fract() == 0.0 && x < q as f64,
            Domain::Real => x.is_finite(),
        }
    }
}

/// Checks every entry of `data` (layout `n_features x n_samples`) against `domain`.
///
/// # Errors
/// [`Error::Domain`] naming the first offending entry (feature, sample, value), or a one-hot block
/// without exactly one `1`, or a one-hot row count that is not a multiple of `q`.
pub fn check_domain(data: &DMatrix<f64>, domain: Domain) -> Result<()> {
    match domain {
        Domain::Categorical { q } | Domain::OneHot { q } if q == 0 => {
            return Err(Error::Domain("q must be at least 1".into()));
        }
        _ => {}
    }
    for (j, col) in data.column_iter().enumerate() {
        for (i, &x) in col.iter().enumerate() {
            if !domain.admits(x) {
                return Err(Error::Domain(format!(
                    "entry (feature {i}, sample {j}) = {x} is not in {domain:?}"
                )));
            }
        }
    }
    if let Domain::OneHot { q } = domain {
        if !data.nrows().is_multiple_of(q) {
            return Err(Error::Domain(format!(
                "one-hot data with q = {q} needs a multiple of q rows, got {}",
                data.nrows()
            )));
        }
        for (j, col) in data.column_iter().enumerate() {
            for site in 0..data.nrows() / q {
                let ones: f64 = col.rows(site * q, q).sum();
                if ones != 1.0 {
                    return Err(Error::Domain(format!(
                        "one-hot block of site {site} in sample {j} has {ones} ones, expected exactly 1"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// A data matrix (one column per sample), per-sample weights, a value domain and optional labels.
///
/// Invariants (checked by the constructors): every entry is in `domain`; `weights.len() ==
/// n_samples`, weights are finite and `>= 0`; `labels`, if present, has one entry per sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    data: DMatrix<f64>,
    weights: Vec<f64>,
    domain: Domain,
    labels: Option<Vec<u32>>,
}

impl Dataset {
    /// A dataset with unit weights and no labels from an `n_features x n_samples` matrix.
    ///
    /// # Errors
    /// [`Error::Domain`] if an entry is outside `domain` (see [`check_domain`]).
    pub fn new(data: DMatrix<f64>, domain: Domain) -> Result<Self> {
        check_domain(&data, domain)?;
        let n = data.ncols();
        Ok(Dataset {
            data,
            weights: vec![1.0; n],
            domain,
            labels: None,
        })
    }

    /// Builds a dataset from samples given as rows (`rows[j]` is sample `j`).
    ///
    /// # Errors
    /// [`Error::Shape`] if the rows have different lengths; [`Error::Domain`] as in [`Dataset::new`].
    pub fn from_rows(rows: &[Vec<f64>], domain: Domain) -> Result<Self> {
        let nf = rows.first().map_or(0, Vec::len);
        if let Some((j, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != nf) {
            return Err(Error::Shape(format!(
                "row {j} has {} entries, row 0 has {nf}",
                r.len()
            )));
        }
        let data = DMatrix::from_fn(nf, rows.len(), |i, j| rows[j][i]);
        Self::new(data, domain)
    }

    /// Replaces the sample weights.
    ///
    /// # Errors
    /// [`Error::Shape`] on a length mismatch, [`Error::InvalidArgument`] for a negative or
    /// non-finite weight or an all-zero weight vector (with at least one sample).
    pub fn with_weights(mut self, weights: Vec<f64>) -> Result<Self> {
        if weights.len() != self.n_samples() {
            return Err(Error::Shape(format!(
                "{} weights for {} samples",
                weights.len(),
                self.n_samples()
            )));
        }
        if let Some((j, w)) = weights
            .iter()
            .enumerate()
            .find(|(_, w)| !(w.is_finite() && **w >= 0.0))
        {
            return Err(Error::InvalidArgument(format!(
                "weight {j} = {w} is not finite and non-negative"
            )));
        }
        if !weights.is_empty() && weights.iter().all(|&w| w == 0.0) {
            return Err(Error::InvalidArgument("all weights are zero".into()));
        }
        self.weights = weights;
        Ok(self)
    }

    /// Attaches one integer label per sample (digit class, cluster index, ...).
    ///
    /// # Errors
    /// [`Error::Shape`] on a length mismatch.
    pub fn with_labels(mut self, labels: Vec<u32>) -> Result<Self> {
        if labels.len() != self.n_samples() {
            return Err(Error::Shape(format!(
                "{} labels for {} samples",
                labels.len(),
                self.n_samples()
            )));
        }
        self.labels = Some(labels);
        Ok(self)
    }

    /// The `n_features x n_samples` data matrix (sample `j` is column `j`).
    pub fn data(&self) -> &DMatrix<f64> {
        &self.data
    }
    /// Consumes the dataset and returns its data matrix.
    pub fn into_data(self) -> DMatrix<f64> {
        self.data
    }
    /// Per-sample weights (1 unless set).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }
    /// The value domain.
    pub fn domain(&self) -> Domain {
        self.domain
    }
    /// Per-sample labels, if any.
    pub fn labels(&self) -> Option<&[u32]> {
        self.labels.as_deref()
    }
    /// Number of samples (columns).
    pub fn n_samples(&self) -> usize {
        self.data.ncols()
    }
    /// Number of features (rows).
    pub fn n_features(&self) -> usize {
        self.data.nrows()
    }
    /// Sample `j` as a contiguous slice.
    ///
    /// # Panics
    /// If `j >= n_samples()`.
    pub fn sample(&self, j: usize) -> &[f64] {
        let nf = self.n_features();
        &self.data.as_slice()[j * nf..(j + 1) * nf]
    }

    /// The weighted mean sample `Σ_j w_j x_j / Σ_j w_j` (zero vector for an empty dataset).
    pub fn weighted_mean(&self) -> DVector<f64> {
        let total: f64 = self.weights.iter().sum();
        let mut m = DVector::zeros(self.n_features());
        if total == 0.0 {
            return m;
        }
        for (col, &w) in self.data.column_iter().zip(&self.weights) {
            m.axpy(w / total, &col, 1.0);
        }
        m
    }

    /// The samples with the given indices, in that order (with their weights and labels).
    ///
    /// # Panics
    /// If an index is out of range.
    pub fn select(&self, indices: &[usize]) -> Dataset {
        let data = self.data.select_columns(indices);
        Dataset {
            data,
            weights: indices.iter().map(|&j| self.weights[j]).collect(),
            domain: self.domain,
            labels: self
                .labels
                .as_ref()
                .map(|l| indices.iter().map(|&j| l[j]).collect()),
        }
    }

    /// Keeps only the samples whose label is in `keep` (e.g. `&[0, 1]` for MNIST 0/1).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the dataset has no labels.
    pub fn filter_labels(&self, keep: &[u32]) -> Result<Dataset> {
        let labels = self
            .labels
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("dataset has no labels to filter on".into()))?;
        let idx: Vec<usize> = (0..labels.len())
            .filter(|&j| keep.contains(&labels[j]))
            .collect();
        Ok(self.select(&idx))
    }

    /// Seeded random train/test split.
    ///
    /// A uniform random permutation of the samples is drawn by Fisher–Yates with
    /// `Xoshiro256PlusPlus::seed_from_u64(seed)`; the first `round(train_fraction * n)` samples
    /// of the permutation form the training set, the rest the test set; each part keeps the
    /// original sample order. The papers use `train_fraction = 0.6` (PTT paper).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `0 <= train_fraction <= 1`.
    pub fn split(&self, train_fraction: f64, seed: u64) -> Result<(Dataset, Dataset)> {
        if !(0.0..=1.0).contains(&train_fraction) {
            return Err(Error::InvalidArgument(format!(
                "train fraction {train_fraction} not in [0, 1]"
            )));
        }
        let n = self.n_samples();
        let mut perm: Vec<usize> = (0..n).collect();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        for i in (1..n).rev() {
            let k = rng.random_range(0..=i);
            perm.swap(i, k);
        }
        let n_train = ((train_fraction * n as f64).round() as usize).min(n);
        let mut train = perm[..n_train].to_vec();
        let mut test = perm[n_train..].to_vec();
        train.sort_unstable();
        test.sort_unstable();
        Ok((self.select(&train), self.select(&test)))
    }

    /// Re-labels the domain after checking every value against it: the explicit way to say that
    /// loaded [`Domain::Real`] numbers are, e.g., `{0,1}` data. Values are not changed.
    ///
    /// # Errors
    /// [`Error::Domain`] if a value is outside `domain` (see [`check_domain`]).
    pub fn reinterpret(mut self, domain: Domain) -> Result<Dataset> {
        check_domain(&self.data, domain)?;
        self.domain = domain;
        Ok(self)
    }

    /// Binarises any dataset: `x > threshold -> 1`, else `0`; the result is [`Domain::Binary01`].
    pub fn binarize(&self, threshold: f64) -> Dataset {
        Dataset {
            data: self.data.map(|x| if x > threshold { 1.0 } else { 0.0 }),
            weights: self.weights.clone(),
            domain: Domain::Binary01,
            labels: self.labels.clone(),
        }
    }

    /// Converts the dataset to another domain.
    ///
    /// Discrete domains are converted through categorical codes `c ∈ {0..q-1}`:
    /// `Binary01: c = v` (q = 2), `Spin: c = (s + 1)/2` (q = 2, so `s = 2v - 1`),
    /// `Categorical{q}: c = x`, `OneHot{q}: c = index of the 1 in the site's block`.
    /// A conversion is defined when both domains have the same `q`; for example
    /// `Binary01 -> OneHot{2}` maps `v` to the block `[1 - v, v]`. Any domain converts to
    /// [`Domain::Real`] (values unchanged). `Real` converts to nothing else: use
    /// [`Dataset::binarize`].
    ///
    /// # Errors
    /// [`Error::Domain`] if the conversion is not defined.
    pub fn to_domain(&self, target: Domain) -> Result<Dataset> {
        if target == self.domain {
            return Ok(self.clone());
        }
        let with = |data: DMatrix<f64>| Dataset {
            data,
            weights: self.weights.clone(),
            domain: target,
            labels: self.labels.clone(),
        };
        if target == Domain::Real {
            return Ok(with(self.data.clone()));
        }
        let q_of = |d: Domain| match d {
            Domain::Binary01 | Domain::Spin => Some(2),
            Domain::Categorical { q } | Domain::OneHot { q } => Some(q),
            Domain::Real => None,
        };
        let (Some(qs), Some(qt)) = (q_of(self.domain), q_of(target)) else {
            return Err(Error::Domain(format!(
                "no conversion from {:?} to {target:?} (use binarize for real data)",
                self.domain
            )));
        };
        if qs != qt {
            return Err(Error::Domain(format!(
                "cannot convert {:?} (q = {qs}) to {target:?} (q = {qt})",
                self.domain
            )));
        }
        let q = qs;
        // codes: n_sites x n_samples
        let codes: DMatrix<usize> = match self.domain {
            Domain::Binary01 | Domain::Categorical { .. } => self.data.map(|x| x as usize),
            Domain::Spin => self.data.map(|s| if s > 0.0 { 1 } else { 0 }),
            Domain::OneHot { q } => {
                let sites = self.n_features() / q;
                DMatrix::from_fn(sites, self.n_samples(), |i, j| {
                    (0..q)
                        .find(|&a| self.data[(i * q + a, j)] == 1.0)
                        .expect("validated one-hot block")
                })
            }
            Domain::Real => unreachable!(),
        };
        let data = match target {
            Domain::Binary01 | Domain::Categorical { .. } => codes.map(|c| c as f64),
            Domain::Spin => codes.map(|c| 2.0 * c as f64 - 1.0),
            Domain::OneHot { q } => {
                let mut m = DMatrix::zeros(codes.nrows() * q, codes.ncols());
                for j in 0..codes.ncols() {
                    for i in 0..codes.nrows() {
                        m[(i * q + codes[(i, j)], j)] = 1.0;
                    }
                }
                m
            }
            Domain::Real => unreachable!(),
        };
        let _ = q;
        Ok(with(data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin() -> Dataset {
        Dataset::from_rows(
            &[
                vec![0.0, 1.0, 1.0],
                vec![1.0, 0.0, 0.0],
                vec![1.0, 1.0, 1.0],
            ],
            Domain::Binary01,
        )
        .unwrap()
    }

    #[test]
    fn layout_is_one_column_per_sample() {
        let d = bin();
        assert_eq!((d.n_features(), d.n_samples()), (3, 3));
        assert_eq!(d.sample(1), &[1.0, 0.0, 0.0]);
        assert_eq!(d.data()[(1, 0)], 1.0);
    }

    #[test]
    fn domain_validation_rejects_bad_values() {
        assert!(Dataset::from_rows(&[vec![0.0, 2.0]], Domain::Binary01).is_err());
        assert!(Dataset::from_rows(&[vec![0.0, 1.0]], Domain::Spin).is_err());
        assert!(Dataset::from_rows(&[vec![2.5]], Domain::Categorical { q: 3 }).is_err());
        assert!(Dataset::from_rows(&[vec![3.0]], Domain::Categorical { q: 3 }).is_err());
        assert!(Dataset::from_rows(&[vec![1.0, 1.0, 0.0]], Domain::OneHot { q: 3 }).is_err());
        assert!(Dataset::from_rows(&[vec![1.0, 0.0]], Domain::OneHot { q: 3 }).is_err());
        assert!(Dataset::from_rows(&[vec![f64::NAN]], Domain::Real).is_err());
        assert!(Dataset::from_rows(&[vec![0.0, 1.0], vec![0.0]], Domain::Real).is_err());
    }

    #[test]
    fn binary_spin_onehot_roundtrips() {
        let d = bin();
        let s = d.to_domain(Domain::Spin).unwrap();
        assert_eq!(s.sample(0), &[-1.0, 1.0, 1.0]);
        let oh = d.to_domain(Domain::OneHot { q: 2 }).unwrap();
        assert_eq!(oh.n_features(), 6);
        // v = 0 -> [1, 0], v = 1 -> [0, 1]
        assert_eq!(oh.sample(0), &[1.0, 0.0, 0.0, 1.0, 0.0, 1.0]);
        assert_eq!(s.to_domain(Domain::Binary01).unwrap(), d);
        assert_eq!(oh.to_domain(Domain::Binary01).unwrap(), d);
        assert_eq!(oh.to_domain(Domain::Spin).unwrap(), s);
        assert_eq!(s.to_domain(Domain::OneHot { q: 2 }).unwrap(), oh);
        let c = d.to_domain(Domain::Categorical { q: 2 }).unwrap();
        assert_eq!(c.data(), d.data());
        assert!(d.to_domain(Domain::OneHot { q: 3 }).is_err());
        let r = d.to_domain(Domain::Real).unwrap();
        assert!(r.to_domain(Domain::Binary01).is_err());
        assert_eq!(r.binarize(0.5).data(), d.data());
        assert_eq!(r.clone().reinterpret(Domain::Binary01).unwrap(), d);
        assert!(r.reinterpret(Domain::Spin).is_err());
    }

    #[test]
    fn categorical_onehot_roundtrip() {
        let c = Dataset::from_rows(
            &[vec![0.0, 2.0, 1.0], vec![2.0, 2.0, 0.0]],
            Domain::Categorical { q: 3 },
        )
        .unwrap();
        let oh = c.to_domain(Domain::OneHot { q: 3 }).unwrap();
        assert_eq!(oh.sample(0), &[1., 0., 0., 0., 0., 1., 0., 1., 0.]);
        check_domain(oh.data(), Domain::OneHot { q: 3 }).unwrap();
        assert_eq!(oh.to_domain(Domain::Categorical { q: 3 }).unwrap(), c);
    }

    #[test]
    fn split_is_a_seeded_partition() {
        let n = 1000;
        let d = Dataset::new(
            DMatrix::from_fn(2, n, |i, j| (i * n + j) as f64),
            Domain::Real,
        )
        .unwrap()
        .with_labels((0..n as u32).collect())
        .unwrap();
        let (tr, te) = d.split(0.6, 7).unwrap();
        assert_eq!((tr.n_samples(), te.n_samples()), (600, 400));
        let mut all: Vec<u32> = tr.labels().unwrap().to_vec();
        all.extend_from_slice(te.labels().unwrap());
        all.sort_unstable();
        assert_eq!(all, (0..n as u32).collect::<Vec<_>>());
        // columns travel with their labels
        for (k, &l) in tr.labels().unwrap().iter().enumerate() {
            assert_eq!(tr.sample(k)[0], l as f64);
        }
        let (tr2, _) = d.split(0.6, 7).unwrap();
        assert_eq!(tr, tr2);
        let (tr3, _) = d.split(0.6, 8).unwrap();
        assert_ne!(tr, tr3);
        // every sample lands in the training set with probability 0.6: a check that the
        // permutation is not biased towards low indices (first half holds ~300 +- 4 sigma)
        let low = tr.labels().unwrap().iter().filter(|&&l| l < 500).count() as f64;
        assert!((low - 300.0).abs() < 4.0 * (1000.0f64 * 0.24 * 0.25).sqrt());
        assert!(d.split(1.5, 0).is_err());
    }

    #[test]
    fn weights_and_mean() {
        let d = bin().with_weights(vec![1.0, 0.0, 3.0]).unwrap();
        let m = d.weighted_mean();
        assert_eq!(m.as_slice(), &[0.75, 1.0, 1.0]);
        assert!(bin().with_weights(vec![1.0, -1.0, 1.0]).is_err());
        assert!(bin().with_weights(vec![1.0]).is_err());
        assert!(bin().with_weights(vec![0.0; 3]).is_err());
    }

    #[test]
    fn filter_labels_keeps_requested_classes() {
        let d = bin().with_labels(vec![0, 5, 1]).unwrap();
        let f = d.filter_labels(&[0, 1]).unwrap();
        assert_eq!(f.labels().unwrap(), &[0, 1]);
        assert_eq!(f.sample(1), &[1.0, 1.0, 1.0]);
        assert!(bin().filter_labels(&[0]).is_err());
    }
}

//! Training data in the chains' layout, and the minibatch sampler.

use crate::layers::TrainableLayer;
use ebm_core::{CHAIN_CHUNK, ChainRng, Error, Par, Result, Scalar};
use nalgebra::DMatrix;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// A weighted dataset of visible configurations, validated against a visible layer: an
/// `width x n_samples` matrix with **one column per sample** (the layout of chain batches, so
/// batches are copied column by column) and one non-negative weight per sample.
///
/// The weights enter every data average as \\(\langle o\rangle_{\mathcal D} = \sum_j w_j
/// o(v_j) / \sum_j w_j\\) over the samples of a minibatch (and of the whole set for
/// log-likelihoods).
#[derive(Clone, Debug, PartialEq)]
pub struct TrainingData<F: Scalar> {
    samples: DMatrix<F>,
    weights: Vec<f64>,
}

impl<F: Scalar> TrainingData<F> {
    /// Unit-weight data from `samples` (`visible.width() x n_samples`).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the number of rows is not the layer's width or there is no
    /// sample; [`Error::InvalidParameter`] naming the sample whose column is not a valid
    /// configuration of `visible` (e.g. a 0.5 for Bernoulli units, a Potts slot that is not
    /// one-hot, a non-finite value).
    pub fn new<V: TrainableLayer<Scalar = F>>(visible: &V, samples: DMatrix<F>) -> Result<Self> {
        Error::check_len(
            "rows of the training data (visible width)",
            visible.width(),
            samples.nrows(),
        )?;
        if samples.ncols() == 0 {
            return Err(Error::ShapeMismatch {
                what: "training data".into(),
                expected: "at least one sample".into(),
                got: "0 samples".into(),
            });
        }
        for (j, col) in samples.column_iter().enumerate() {
            let x: Vec<F> = col.iter().copied().collect();
            visible
                .check_configuration(&x)
                .map_err(|reason| Error::InvalidParameter {
                    name: format!("training data sample {j}"),
                    reason,
                })?;
        }
        let n = samples.ncols();
        Ok(Self {
            samples,
            weights: vec![1.0; n],
        })
    }

    /// Converts an `f64` matrix (e.g. `ebm_data::Dataset::data`, same layout) and validates it
    /// as [`TrainingData::new`].
    ///
    /// # Errors
    /// As [`TrainingData::new`].
    pub fn from_f64<V: TrainableLayer<Scalar = F>>(
        visible: &V,
        samples: &DMatrix<f64>,
    ) -> Result<Self> {
        Self::new(visible, samples.map(F::from_f64))
    }

    /// The same data with per-sample weights.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] unless there is one weight per sample;
    /// [`Error::InvalidParameter`] for a negative or non-finite weight or all weights zero.
    pub fn with_weights(mut self, weights: Vec<f64>) -> Result<Self> {
        Error::check_len("sample weights", self.samples.ncols(), weights.len())?;
        if let Some(k) = weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(Error::InvalidParameter {
                name: format!("weight of sample {k}"),
                reason: format!("must be finite and >= 0, got {}", weights[k]),
            });
        }
        if weights.iter().all(|&w| w == 0.0) {
            return Err(Error::InvalidParameter {
                name: "sample weights".into(),
                reason: "all weights are zero".into(),
            });
        }
        self.weights = weights;
        Ok(self)
    }

    /// The samples, one per column.
    pub fn samples(&self) -> &DMatrix<F> {
        &self.samples
    }

    /// The sample weights.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Number of samples.
    pub fn n_samples(&self) -> usize {
        self.samples.ncols()
    }

    /// Number of samples of positive weight (the ones minibatches are drawn from).
    pub fn n_weighted_samples(&self) -> usize {
        self.weights.iter().filter(|&&w| w > 0.0).count()
    }

    /// The weighted mean of every value of a chain's slot over the whole set (the data
    /// frequencies for discrete units).
    pub fn means(&self) -> Vec<f64> {
        let total: f64 = self.weights.iter().sum();
        let mut m = vec![0.0; self.samples.nrows()];
        for (col, &w) in self.samples.column_iter().zip(&self.weights) {
            for (mi, x) in m.iter_mut().zip(col.iter()) {
                *mi += w * x.as_f64();
            }
        }
        m.iter_mut().for_each(|x| *x /= total);
        m
    }
}

/// Draws minibatches of a fixed size: the samples are visited in a random order, batch after
/// batch; when fewer than a batch remain, the order is reshuffled (the incomplete tail is
/// dropped, as in the reference training code, Béreux et al., *Fast training and sampling of RBMs*). Part of
/// the trainer state, so a resumed run draws the same batches.
///
/// Samples of zero weight never enter a batch (they would not contribute, and a batch of them
/// only would have no weight at all).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BatchSampler {
    rng: ChainRng,
    order: Vec<u32>,
    next: usize,
    n_samples: usize,
}

impl BatchSampler {
    pub(crate) fn new<F: Scalar>(data: &TrainingData<F>, rng: ChainRng) -> Self {
        let order: Vec<u32> = (0..data.n_samples() as u32)
            .filter(|&j| data.weights[j as usize] > 0.0)
            .collect();
        Self {
            rng,
            next: order.len(), // forces a shuffle before the first batch
            order,
            n_samples: data.n_samples(),
        }
    }

    /// Number of samples of the data set the sampler was built for.
    pub(crate) fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// Checks a sampler read from a file against `data`: built for as many samples, its order
    /// a permutation of the samples of positive weight, its position inside it.
    pub(crate) fn check<F: Scalar>(&self, data: &TrainingData<F>) -> Result<()> {
        let bad = |name: &str, reason: String| {
            Err(Error::InvalidParameter {
                name: format!("batches.{name}"),
                reason,
            })
        };
        if self.n_samples != data.n_samples() {
            return bad(
                "n_samples",
                format!(
                    "must equal the number of training samples, {}, got {}",
                    data.n_samples(),
                    self.n_samples
                ),
            );
        }
        let positive = data.weights.iter().filter(|&&w| w > 0.0).count();
        let mut seen = vec![false; data.n_samples()];
        let permutation = self.order.len() == positive
            && self.order.iter().all(|&j| {
                let j = j as usize;
                j < seen.len() && data.weights[j] > 0.0 && !std::mem::replace(&mut seen[j], true)
            });
        if !permutation {
            return bad(
                "order",
                format!(
                    "must be a permutation of the {positive} samples of positive weight (each \
                     index once, below {})",
                    data.n_samples()
                ),
            );
        }
        if self.next > self.order.len() {
            return bad(
                "next",
                format!("must be at most {}, got {}", self.order.len(), self.next),
            );
        }
        Ok(())
    }

    /// The indices of the next batch of `size` samples (`size <=` the number of samples of
    /// positive weight).
    pub(crate) fn next_batch(&mut self, size: usize) -> &[u32] {
        if self.next + size > self.order.len() {
            self.order.sort_unstable();
            self.order.shuffle(&mut self.rng);
            self.next = 0;
        }
        let batch = &self.order[self.next..self.next + size];
        self.next += size;
        batch
    }
}

/// Copies the samples `indices` of `data` into `batch` (`width x indices.len()`, reallocated
/// only when its shape differs) and their weights into `weights`; the columns are copied by
/// chunks of [`CHAIN_CHUNK`] on the pool with [`Par::Rayon`].
pub(crate) fn gather<F: Scalar>(
    data: &TrainingData<F>,
    indices: &[u32],
    batch: &mut DMatrix<F>,
    weights: &mut Vec<f64>,
    par: Par,
) {
    let rows = data.samples.nrows();
    if batch.shape() != (rows, indices.len()) {
        *batch = DMatrix::zeros(rows, indices.len());
    }
    weights.clear();
    weights.extend(indices.iter().map(|&j| data.weights[j as usize]));
    let src = data.samples.as_slice();
    let copy = |(columns, chunk): (&mut [F], &[u32])| {
        for (column, &j) in columns.chunks_mut(rows.max(1)).zip(chunk) {
            let j = j as usize;
            column.copy_from_slice(&src[j * rows..(j + 1) * rows]);
        }
    };
    let step = (rows * CHAIN_CHUNK).max(1);
    match par {
        Par::Seq => batch
            .as_mut_slice()
            .chunks_mut(step)
            .zip(indices.chunks(CHAIN_CHUNK))
            .for_each(copy),
        Par::Rayon => batch
            .as_mut_slice()
            .par_chunks_mut(step)
            .zip(indices.par_chunks(CHAIN_CHUNK))
            .for_each(copy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_models::Bernoulli;
    use rand::SeedableRng;

    #[test]
    fn data_are_validated() {
        let layer = Bernoulli::<f64>::zeros(2);
        let ok = DMatrix::from_column_slice(2, 2, &[0.0, 1.0, 1.0, 1.0]);
        let d = TrainingData::new(&layer, ok.clone()).unwrap();
        assert_eq!(d.means(), vec![0.5, 1.0]);
        let bad = DMatrix::from_column_slice(2, 2, &[0.0, 1.0, 0.5, 1.0]);
        let e = TrainingData::new(&layer, bad).unwrap_err();
        assert!(e.to_string().contains("sample 1"), "{e}");
        assert!(TrainingData::new(&Bernoulli::<f64>::zeros(3), ok.clone()).is_err());
        assert!(d.clone().with_weights(vec![1.0]).is_err());
        assert!(d.clone().with_weights(vec![1.0, -1.0]).is_err());
        assert!(d.clone().with_weights(vec![0.0, 0.0]).is_err());
        let w = d.with_weights(vec![3.0, 1.0]).unwrap();
        assert_eq!(w.means(), vec![0.25, 1.0]);
    }

    #[test]
    fn batches_cover_each_epoch_once_and_skip_zero_weights() {
        let layer = Bernoulli::<f64>::zeros(1);
        let data = TrainingData::new(&layer, DMatrix::zeros(1, 11)).unwrap();
        let mut w = vec![1.0; 11];
        w[4] = 0.0;
        let data = data.with_weights(w).unwrap();
        assert_eq!(data.n_weighted_samples(), 10);
        let mut s = BatchSampler::new(&data, ChainRng::seed_from_u64(1));
        assert_eq!(s.n_samples(), 11);
        let mut seen: Vec<u32> = Vec::new();
        for _ in 0..3 {
            seen.extend_from_slice(s.next_batch(3));
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 9);
        assert!(!seen.contains(&4));
        // The tenth sample is dropped this epoch; the next batch starts a new permutation.
        let b = s.next_batch(3).to_vec();
        assert_eq!(b.len(), 3);
    }
}

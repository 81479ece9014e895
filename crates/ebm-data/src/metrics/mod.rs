//! Sample-quality metrics that compare generated samples with data: adversarial accuracy and
//! privacy loss, histogram distances on principal components. The mixing diagnostics
//! (autocorrelation times, ESS, mode assignment and jumps) are in `ebm_core::diagnostics`.

pub mod adversarial;
pub mod histogram;

pub use adversarial::{AdversarialAccuracy, adversarial_accuracy, privacy_loss};
pub use histogram::{HistogramDistance, compare_projections, histogram_distance, wasserstein_1d};

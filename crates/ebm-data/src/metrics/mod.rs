//! Sample-quality and mixing metrics: mode assignment and jumps, autocorrelation times and ESS,
//! adversarial accuracy and privacy loss, histogram distances on principal components.

pub mod adversarial;
pub mod autocorr;
pub mod histogram;
pub mod modes;

pub use adversarial::{AdversarialAccuracy, adversarial_accuracy, privacy_loss};
pub use autocorr::{
    ExponentialTime, IntegratedTime, autocorrelation, effective_sample_size,
    exponential_autocorrelation_time, importance_ess_fraction, integrated_autocorrelation_time,
};
pub use histogram::{HistogramDistance, compare_projections, histogram_distance, wasserstein_1d};
pub use modes::{
    JumpStats, ModeClassifier, WindowedWeights, count_jumps, mode_fractions, mode_jumps,
    windowed_mode_weights,
};

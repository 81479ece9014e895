//! Mixing diagnostics that samplers, estimators and the command line share: autocorrelation
//! times and effective sample sizes ([`autocorr`]), the Gelman–Rubin \\(\hat R\\) and the
//! jackknife error of replicated runs ([`convergence`]), and mode assignment, mode jumps and
//! windowed mode weights ([`modes`]).
//!
//! They sit in the bottom crate so that the tempering diagnostics of `ebm-samplers`, the
//! estimators and the reports all use one implementation. The sample-quality metrics that
//! compare samples with data (histogram distances, adversarial accuracy) stay in `ebm-data`.

pub mod autocorr;
pub mod convergence;
pub mod modes;

pub use autocorr::{
    ExponentialTime, IntegratedTime, autocorrelation, effective_sample_size,
    exponential_autocorrelation_time, importance_ess_fraction, integrated_autocorrelation_time,
};
pub use convergence::{gelman_rubin, jackknife_error};
pub use modes::{
    JumpStats, ModeClassifier, WindowedWeights, count_jumps, mode_fractions, mode_jumps,
    windowed_mode_weights,
};

//! The typed result of every estimator: \\(\log Z\\) with its standard error, the effective
//! sample size, the cost, and a record of the method and settings that produced it.

use crate::trust::Warning;
use ebm_samplers::tempering::{Concat, ReferenceLadder, TemperatureLadder, TrajectoryLadder};
use serde::{Deserialize, Serialize};

/// An estimate of \\(\log Z\\) of one distribution.
///
/// `std_err` is the estimated standard deviation of `log_z` (the method is in `error_bar`), so
/// `log_z ± 2 std_err` is an approximate 95% interval. `ess` is the effective number of
/// independent samples behind the estimate (its definition depends on the method, see
/// [`Method`]); for exact values it is \\(+\infty\\) and `std_err` is 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogZEstimate {
    /// The estimate of \\(\log Z\\).
    pub log_z: f64,
    /// Its standard error.
    pub std_err: f64,
    /// Effective sample size (absolute).
    pub ess: f64,
    /// Number of samples the estimate is built from: chains for annealing, samples per rung
    /// (rounds x chains) for estimators from parallel tempering, 0 for exact values.
    pub n_samples: usize,
    /// The cost: kernel steps summed over all chains (for `Gibbs::new(1)` this is the number of
    /// alternating Gibbs sweeps; exact draws and enumeration count 0).
    pub kernel_steps: u64,
    /// Which estimator and settings produced the estimate.
    pub method: Method,
    /// How `std_err` was obtained.
    pub error_bar: ErrorBar,
    /// Estimators from importance weights: the fraction of the total weight carried by the
    /// largest chain, \\(\max_i e^{w_i} / \sum_j e^{w_j}\\) (`None` for other estimators).
    #[serde(default)]
    pub largest_weight_fraction: Option<f64>,
    /// Why the estimate or its error bar should not be trusted; empty when every check of
    /// [`crate::trust`] passed. See [`LogZEstimate::is_trusted`].
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

impl LogZEstimate {
    /// The exact \\(\log Z_\beta\\) of a model that has one
    /// ([`ebm_core::ExactLogPartition`]), as an estimate ([`Method::Tractable`]): e.g. the
    /// reference at the bottom rung of a ladder that BAR chains its ratios from.
    pub fn of_model<M: ebm_core::ExactLogPartition + ?Sized>(model: &M, beta: f64) -> Self {
        Self::exact(model.log_partition(beta), Method::Tractable)
    }

    /// An exact value (zero standard error, infinite ESS).
    pub fn exact(log_z: f64, method: Method) -> Self {
        Self {
            log_z,
            std_err: 0.0,
            ess: f64::INFINITY,
            n_samples: 0,
            kernel_steps: 0,
            method,
            error_bar: ErrorBar::Exact,
            largest_weight_fraction: None,
            warnings: Vec::new(),
        }
    }

    /// Whether no warning was raised (the rule is in [`crate::trust`]). An untrusted estimate
    /// may still be right; a trusted one is calibrated on the models of the calibration suite
    /// but can still miss a mode that no chain visited.
    pub fn is_trusted(&self) -> bool {
        self.warnings.is_empty()
    }

    /// Adds `warning` unless an equal one is already there.
    pub fn warn(&mut self, warning: Warning) {
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// Whether the estimate is within `k` standard errors of `truth` **or** carries a warning:
    /// the criterion of the calibration suite (an estimate is honest when its error bar holds
    /// or it says that it cannot be trusted).
    pub fn covers_or_warns(&self, truth: f64, k: f64) -> bool {
        self.covers(truth, k) || !self.is_trusted()
    }

    /// The ESS relative to the number of samples, in \\([0, 1]\\) (1 for exact values).
    pub fn relative_ess(&self) -> f64 {
        if self.n_samples == 0 {
            1.0
        } else {
            self.ess / self.n_samples as f64
        }
    }

    /// \\((\hat{\log Z} - \log Z_{\text{true}}) / \sigma\\): the error in units of the standard
    /// error (`0` for an exact value that matches, \\(\pm\infty\\) for one that does not).
    pub fn z_score(&self, truth: f64) -> f64 {
        let d = self.log_z - truth;
        if d == 0.0 { 0.0 } else { d / self.std_err }
    }

    /// Whether \\(|\hat{\log Z} - \log Z_{\text{true}}| \le k\,\sigma\\).
    pub fn covers(&self, truth: f64, k: f64) -> bool {
        (self.log_z - truth).abs() <= k * self.std_err
    }
}

/// How a standard error was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorBar {
    /// No sampling error (exact enumeration or closed form).
    Exact,
    /// Delta method on the log of a mean of importance weights (see [`LogMeanExp`]), summed in
    /// quadrature over the segments separated by resampling.
    DeltaMethod,
    /// The larger of the delta-method error and the standard deviation of the log mean weight
    /// over bootstrap resamplings of the chains ([`crate::trust::BOOTSTRAP_RESAMPLES`]; segments
    /// before a resampling, if any, contribute their delta-method error in quadrature): an error
    /// bar that does not collapse when a few chains dominate (see [`crate::trust`]). After a
    /// resampling, the error is at least the genealogy-based one of
    /// [`crate::Population::lineage_variance`].
    LargerOfDeltaAndBootstrap {
        /// Number of bootstrap resamples.
        resamples: usize,
    },
    /// Delete-one-group jackknife over `groups` groups of chains (or of consecutive rounds when
    /// there are too few chains), which accounts for the autocorrelation of each chain.
    Jackknife {
        /// Number of groups.
        groups: usize,
    },
}

/// Which layer an exact computation enumerated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// The visible layer.
    Visible,
    /// The hidden layer.
    Hidden,
}

/// Whether an annealing run went from the tractable rung to the target or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    /// From rung 0 (exact draws, known \\(\log Z_0\\)) to the target: AIS, a stochastic lower
    /// bound (\\(\mathbb E[\log \hat Z] \le \log Z\\)).
    Forward,
    /// From exact or equilibrium draws of the target down to rung 0: reverse AIS, a stochastic
    /// upper bound when the draws are exact.
    Reverse,
}

/// The estimator and settings behind a [`LogZEstimate`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Method {
    /// Exact enumeration of one layer of an RBM (Béreux et al., *Fast training and sampling of RBMs*).
    Enumeration {
        /// The enumerated layer.
        side: Side,
        /// Number of configurations summed.
        configurations: u64,
    },
    /// Closed form of a model whose units are independent (zero couplings, or
    /// \\(\beta = 0\\)): the sum of the single-unit log partition functions.
    IndependentSites,
    /// The model's own [`ebm_core::ExactLogPartition::log_partition`].
    Tractable,
    /// Annealed importance sampling along a ladder (the PTT paper).
    Ais {
        /// Forward (AIS) or reverse (reverse AIS).
        direction: Direction,
        /// The kind of ladder.
        ladder: LadderKind,
        /// Number of rungs, both ends included.
        n_rungs: usize,
        /// Resampling threshold on the relative ESS, if resampling was enabled.
        resample_below_ess: Option<f64>,
        /// Number of resampling events.
        resamplings: u64,
    },
    /// Online trajectory AIS, advanced by a trainer after each parameter update (the PTT paper).
    OnlineTrajectoryAis {
        /// Number of parameter updates followed.
        updates: u64,
        /// Resampling threshold on the relative ESS.
        resample_below_ess: f64,
        /// Number of resampling events.
        resamplings: u64,
    },
    /// Bennett's acceptance ratio between neighbouring rungs of a parallel-tempering run,
    /// chained from rung 0 (the PTT paper).
    BennettAcceptanceRatio {
        /// The kind of ladder.
        ladder: LadderKind,
        /// Number of rungs.
        n_rungs: usize,
        /// Number of PT rounds recorded.
        rounds: u64,
    },
    /// The one-sided exponential average (free-energy perturbation) from each rung to the next,
    /// chained from rung 0 (the PTT paper, the reference code's estimator).
    ExponentialAverage {
        /// The kind of ladder.
        ladder: LadderKind,
        /// Number of rungs.
        n_rungs: usize,
        /// Number of PT rounds recorded.
        rounds: u64,
    },
}

/// What kind of path a ladder is, recorded in a [`Method`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LadderKind {
    /// One model at increasing inverse temperatures from `beta_min` to `beta_max`: the
    /// estimate is \\(\log Z\\) at `beta_max`.
    Temperature {
        /// The inverse temperature of rung 0 (0 for the uniform start).
        beta_min: f64,
        /// The inverse temperature of the last rung, the target (1 for the model itself; records
        /// written before ladders could end elsewhere have none and read as 1).
        #[serde(default = "one")]
        beta_max: f64,
    },
    /// Parameters interpolated from an independent-site reference.
    Reference,
    /// Checkpoints of a training trajectory.
    Trajectory,
    /// Two or more ladders one after the other.
    Concatenated(Vec<LadderKind>),
    /// A ladder run from its last rung to its first.
    Reversed(Box<LadderKind>),
    /// A user-defined ladder.
    Custom(String),
}

fn one() -> f64 {
    1.0
}

/// Describes a ladder for the record of an estimate. Implemented for the ladders of
/// `ebm_samplers::tempering` and for [`crate::Reversed`]; a user-defined ladder implements it in
/// one line with [`LadderKind::Custom`].
pub trait DescribeLadder {
    /// The kind of this ladder.
    fn kind(&self) -> LadderKind;
}

impl<M: ebm_core::EnergyModel> DescribeLadder for TemperatureLadder<M> {
    fn kind(&self) -> LadderKind {
        LadderKind::Temperature {
            beta_min: self.betas()[0],
            beta_max: self.betas()[self.betas().len() - 1],
        }
    }
}

impl<M> DescribeLadder for ReferenceLadder<M> {
    fn kind(&self) -> LadderKind {
        LadderKind::Reference
    }
}

impl<M> DescribeLadder for TrajectoryLadder<M> {
    fn kind(&self) -> LadderKind {
        LadderKind::Trajectory
    }
}

impl<A: DescribeLadder, B: DescribeLadder> DescribeLadder for Concat<A, B> {
    fn kind(&self) -> LadderKind {
        let mut parts = Vec::new();
        for k in [self.0.kind(), self.1.kind()] {
            match k {
                LadderKind::Concatenated(inner) => parts.extend(inner),
                other => parts.push(other),
            }
        }
        LadderKind::Concatenated(parts)
    }
}

/// The log of the mean of importance weights given their logs, with the delta-method standard
/// error and the Kish effective sample size:
///
/// \\[ \hat\ell = \log \frac1n \sum_i e^{w_i}, \qquad
///     \mathrm{ESS} = \frac{(\sum_i e^{w_i})^2}{\sum_i e^{2 w_i}}, \qquad
///     \sigma_{\hat\ell}^2 \approx \frac{\hat s^2}{n \bar W^2} = \frac{n/\mathrm{ESS} - 1}{n - 1}, \\]
///
/// where \\(\bar W\\) and \\(\hat s^2\\) are the sample mean and (unbiased) variance of
/// \\(W_i = e^{w_i}\\): the first-order (delta-method) error of \\(\log \bar W\\). All sums are
/// shifted by \\(\max_i w_i\\) (Béreux et al., *Fast training and sampling of RBMs*). The relative ESS
/// \\(\mathrm{ESS}/n \in [1/n, 1]\\) is the PTT paper's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogMeanExp {
    /// \\(\hat\ell\\).
    pub log_mean: f64,
    /// \\(\sigma_{\hat\ell}\\) (`NaN` for fewer than two weights).
    pub std_err: f64,
    /// The Kish effective sample size.
    pub ess: f64,
    /// Number of weights.
    pub n: usize,
}

impl LogMeanExp {
    /// Summarises the log weights `log_w`.
    ///
    /// # Panics
    /// If `log_w` is empty or holds NaN or \\(+\infty\\) (programmer misuse: weights come from
    /// finite energies).
    pub fn of(log_w: &[f64]) -> Self {
        assert!(!log_w.is_empty(), "LogMeanExp::of: no weights");
        let m = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!(
            m < f64::INFINITY && !log_w.iter().any(|w| w.is_nan()),
            "LogMeanExp::of: log weights must not be NaN or +inf"
        );
        let n = log_w.len();
        if m == f64::NEG_INFINITY {
            return Self {
                log_mean: f64::NEG_INFINITY,
                std_err: f64::NAN,
                ess: 0.0,
                n,
            };
        }
        let (mut s1, mut s2) = (0.0, 0.0);
        for &w in log_w {
            let x = (w - m).exp();
            s1 += x;
            s2 += x * x;
        }
        let ess = s1 * s1 / s2;
        let nf = n as f64;
        let std_err = if n < 2 {
            f64::NAN
        } else {
            ((nf / ess - 1.0).max(0.0) / (nf - 1.0)).sqrt()
        };
        Self {
            log_mean: m + (s1 / nf).ln(),
            std_err,
            ess,
            n,
        }
    }

    /// The relative ESS, \\(\mathrm{ESS}/n\\).
    pub fn relative_ess(&self) -> f64 {
        self.ess / self.n as f64
    }
}

/// The bootstrap standard error of \\(\log \frac1n \sum_i e^{w_i}\\): the standard deviation of
/// the statistic over `resamples` resamplings of the weights with replacement, drawn from a
/// generator seeded with `seed`. An alternative to the delta method of [`LogMeanExp`] that does
/// not linearise the logarithm (useful with few chains or heavy-tailed weights).
///
/// # Panics
/// If `log_w` has fewer than two values, `resamples < 2`, or a weight is NaN or \\(+\infty\\).
pub fn bootstrap_std_err(log_w: &[f64], resamples: usize, seed: u64) -> f64 {
    use rand::Rng;
    assert!(
        log_w.len() >= 2 && resamples >= 2,
        "bootstrap_std_err: need at least two weights and two resamples"
    );
    let mut rng = ebm_core::RngStreams::auxiliary(seed, 0);
    let n = log_w.len();
    let mut sample = vec![0.0; n];
    let stats: Vec<f64> = (0..resamples)
        .map(|_| {
            for s in sample.iter_mut() {
                *s = log_w[rng.random_range(0..n)];
            }
            LogMeanExp::of(&sample).log_mean
        })
        .collect();
    let mean = stats.iter().sum::<f64>() / resamples as f64;
    (stats.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (resamples - 1) as f64).sqrt()
}

/// \\(\log Z\\) of one rung of a ladder, with its standard error: an entry of the profile of an
/// estimate along a ladder (e.g. the log-likelihood of every checkpoint of a trajectory).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RungLogZ {
    /// The estimate of \\(\log Z_k\\).
    pub log_z: f64,
    /// Its standard error.
    pub std_err: f64,
}

/// A difference in standard errors, `difference / se`: 0 when two values are equal with no
/// spread at all (e.g. every draw of both in the same mode: they agree), \(\pm\infty\) when
/// they differ with none.
pub fn standard_score(difference: f64, se: f64) -> f64 {
    if se > 0.0 {
        difference / se
    } else if difference == 0.0 {
        0.0
    } else {
        difference.signum() * f64::INFINITY
    }
}

/// A weighted mean with its standard error, through Kish's effective sample size
/// \(n_{\text{eff}} = (\sum w)^2 / \sum w^2\):
/// \(\mathrm{se} = \sqrt{\widehat{\mathrm{Var}}_w / (n_{\text{eff}} - 1)}\) with the weighted
/// (biased) variance \(\widehat{\mathrm{Var}}_w\), which is the usual \(s/\sqrt n\) for unit
/// weights (a weighted dataset's mean log-likelihood, for instance).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WeightedMean {
    /// \(\sum_i w_i x_i / \sum_i w_i\) (`NaN` when the weights do not sum to a positive value).
    pub mean: f64,
    /// Its standard error (`NaN` for \(n_{\text{eff}} \le 1\)).
    pub std_err: f64,
    /// Kish's \(n_{\text{eff}}\).
    pub ess: f64,
}

impl WeightedMean {
    /// The weighted mean of `x` with weights `w` (of the same length, non-negative).
    pub fn of(x: &[f64], w: &[f64]) -> Self {
        debug_assert_eq!(x.len(), w.len());
        let sw: f64 = w.iter().sum();
        let sw2: f64 = w.iter().map(|v| v * v).sum();
        if sw <= 0.0 {
            return Self {
                mean: f64::NAN,
                std_err: f64::NAN,
                ess: 0.0,
            };
        }
        let mean = x.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / sw;
        let var = x
            .iter()
            .zip(w)
            .map(|(a, b)| b * (a - mean).powi(2))
            .sum::<f64>()
            / sw;
        let ess = sw * sw / sw2;
        let std_err = if ess > 1.0 {
            (var / (ess - 1.0)).sqrt()
        } else {
            f64::NAN
        };
        Self { mean, std_err, ess }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_mean_exp_of_equal_weights_has_full_ess_and_no_error() {
        let s = LogMeanExp::of(&[1.5; 10]);
        assert!((s.log_mean - 1.5).abs() < 1e-15);
        assert!((s.ess - 10.0).abs() < 1e-12);
        assert_eq!(s.std_err, 0.0);
        assert!((s.relative_ess() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn log_mean_exp_of_one_dominant_weight_has_unit_ess() {
        let mut w = vec![-1e3; 8];
        w[3] = 0.0;
        let s = LogMeanExp::of(&w);
        assert!((s.ess - 1.0).abs() < 1e-12);
        assert!((s.log_mean + 8f64.ln()).abs() < 1e-12);
        // (n/ESS - 1)/(n - 1) = 1.
        assert!((s.std_err - 1.0).abs() < 1e-12);
    }

    #[test]
    fn delta_method_matches_the_direct_formula_and_is_shift_invariant() {
        let w = [0.3, -1.2, 2.0, 0.7, -0.4, 1.1];
        let s = LogMeanExp::of(&w);
        let x: Vec<f64> = w.iter().map(|v: &f64| v.exp()).collect();
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert!((s.log_mean - mean.ln()).abs() < 1e-14);
        assert!((s.std_err - (var / n).sqrt() / mean).abs() < 1e-14);
        let shifted: Vec<f64> = w.iter().map(|v| v + 700.0).collect();
        let t = LogMeanExp::of(&shifted);
        assert!((t.log_mean - s.log_mean - 700.0).abs() < 1e-10);
        assert!((t.std_err - s.std_err).abs() < 1e-14);
        assert!((t.ess - s.ess).abs() < 1e-12);
    }

    #[test]
    fn bootstrap_agrees_with_the_delta_method_on_light_tailed_weights() {
        let w: Vec<f64> = (0..400)
            .map(|i| 0.3 * ((i * 37 % 101) as f64 / 50.0 - 1.0))
            .collect();
        let delta = LogMeanExp::of(&w).std_err;
        let boot = bootstrap_std_err(&w, 400, 3);
        assert!((boot / delta - 1.0).abs() < 0.15, "{boot} vs {delta}");
    }

    #[test]
    fn coverage_helpers() {
        let e = LogZEstimate {
            log_z: 1.0,
            std_err: 0.1,
            ess: 50.0,
            n_samples: 100,
            kernel_steps: 1000,
            method: Method::Tractable,
            error_bar: ErrorBar::DeltaMethod,
            largest_weight_fraction: None,
            warnings: Vec::new(),
        };
        assert!(e.covers(1.15, 2.0) && !e.covers(1.25, 2.0));
        assert!((e.z_score(0.8) - 2.0).abs() < 1e-12);
        assert!((e.relative_ess() - 0.5).abs() < 1e-15);
        let x = LogZEstimate::exact(2.0, Method::IndependentSites);
        assert_eq!(x.z_score(2.0), 0.0);
        assert!(x.covers(2.0, 0.0));
    }

    #[test]
    fn weighted_error_matches_the_unweighted_formula() {
        let x = [1.0, 2.0, 4.0, 7.0];
        let m = WeightedMean::of(&x, &[1.0; 4]);
        assert_eq!((m.mean, m.ess), (3.5, 4.0));
        let var = x.iter().map(|v| (v - 3.5f64).powi(2)).sum::<f64>() / 3.0;
        assert!((m.std_err - (var / 4.0).sqrt()).abs() < 1e-12);
        // Weights 2 are the same as every value twice, but the ESS (and the error) is Kish's.
        let m2 = WeightedMean::of(&x, &[2.0; 4]);
        assert_eq!((m2.mean, m2.std_err, m2.ess), (m.mean, m.std_err, m.ess));
        // One value carries all the weight: its mean, no error bar.
        let one = WeightedMean::of(&x, &[0.0, 0.0, 5.0, 0.0]);
        assert_eq!((one.mean, one.ess), (4.0, 1.0));
        assert!(one.std_err.is_nan());
        assert!(WeightedMean::of(&x, &[0.0; 4]).mean.is_nan());
    }

    /// Equal values with no spread agree (0 standard errors); different ones with no spread
    /// are infinitely far apart, with the sign of the difference.
    #[test]
    fn a_difference_without_spread_is_zero_or_infinite() {
        assert_eq!(standard_score(1.0, 0.5), 2.0);
        assert_eq!(standard_score(0.0, 0.0), 0.0);
        assert_eq!(standard_score(0.1, 0.0), f64::INFINITY);
        assert_eq!(standard_score(-0.1, 0.0), f64::NEG_INFINITY);
    }
}

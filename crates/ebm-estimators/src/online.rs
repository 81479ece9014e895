//! Online trajectory AIS: \\(\log Z\\) of the current model during training, for about one
//! Gibbs sweep per parameter update (spec `ptt-trais-rcm.md` §2.7).

use crate::ais::weight_then_move;
use crate::estimate::{LogZEstimate, Method};
use crate::population::{Population, SelectChains};
use ebm_core::{Chains, EnergyModel, Error, Kernel, Par};
use ebm_samplers::tempering::Rung;
use serde::{Deserialize, Serialize};

/// Online trajectory annealed importance sampling: a weighted population of chains that follows
/// a training run, the successive models \\(\Theta_0, \Theta_1, \dots\\) forming the annealing
/// path (spec `ptt-trais-rcm.md` §2.7). After each parameter update
/// \\(\Theta_{\text{old}} \to \Theta_{\text{new}}\\) the trainer calls [`advance`](Self::advance):
///
/// 1. reweight at the current states (which a kernel at \\(\Theta_{\text{old}}\\) produced):
///    \\(w_i \mathrel{+}= E_{\text{old}}(x_i) - E_{\text{new}}(x_i)\\), both at \\(\beta = 1\\);
/// 2. if the relative ESS \\(\mathrm{ESS}/n\\) fell below the threshold, resample the chains
///    (systematic), carry \\(\log\frac1n\sum_i e^{w_i}\\) into \\(\log Z\\) and reset the weights;
/// 3. one `kernel` step at \\(\Theta_{\text{new}}\\).
///
/// This is Neal's order ([`crate::Ais`]), for which the estimate of \\(Z\\) is unbiased without
/// resampling; the paper's description moves first and weights after, which is biased at
/// second order in the update size (spec §2.7, remark). Resampling before the move lets the
/// kernel separate the copies of a chain. The estimate is
///
/// \\[ \log \hat Z_t = \log Z_0 + \sum_{\text{resamplings}} \log\frac1n\sum_i e^{w_i}
///     + \log\frac1n\sum_i e^{w_i}, \\]
///
/// with the delta-method variances of the segments added ([`crate::Population::log_ratio`]).
///
/// The whole state (chains, weights, carried \\(\log Z\\), RNG streams, counters) serialises, so a
/// training checkpoint resumes the estimator bit for bit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound(serialize = "S: Serialize", deserialize = "S: Deserialize<'de>"))]
pub struct OnlineTrajectoryAis<S> {
    population: Population<S>,
    log_z0: f64,
    resample_below_ess: f64,
    updates: u64,
}

/// What one [`OnlineTrajectoryAis::advance`] did, and the estimate after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OnlineAisInfo {
    /// Number of updates followed so far (this one included).
    pub update: u64,
    /// Relative ESS after reweighting (before any resampling): the monitored quantity.
    pub relative_ess: f64,
    /// Whether the chains were resampled at this update.
    pub resampled: bool,
    /// The estimate of \\(\log Z\\) of the new model.
    pub estimate: LogZEstimate,
}

impl<S: Chains + Clone + SelectChains> OnlineTrajectoryAis<S> {
    /// `chains`: exact (or equilibrium) draws from the initial model, whose exact log Z is
    /// `log_z0`; `seed` derives one RNG stream per chain; the chains are resampled whenever the
    /// relative ESS falls below `resample_below_ess` (the paper's example 0.5; 0 never resamples).
    ///
    /// # Panics
    /// Unless there are at least two chains, `log_z0` is finite and `resample_below_ess` lies in
    /// \\([0, 1]\\) ([`OnlineTrajectoryAis::try_new`] reports these as errors instead).
    pub fn new(chains: S, seed: u64, log_z0: f64, resample_below_ess: f64) -> Self {
        match Self::try_new(chains, seed, log_z0, resample_below_ess) {
            Ok(s) => s,
            Err(e) => panic!("OnlineTrajectoryAis::new: {e}"),
        }
    }

    /// As [`OnlineTrajectoryAis::new`], reporting invalid arguments as errors.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for fewer than two chains, a non-finite `log_z0` or a
    /// threshold outside \\([0, 1]\\).
    pub fn try_new(
        chains: S,
        seed: u64,
        log_z0: f64,
        resample_below_ess: f64,
    ) -> ebm_core::Result<Self> {
        if !log_z0.is_finite() {
            return Err(Error::InvalidParameter {
                name: "log_z0".into(),
                reason: format!("must be finite, got {log_z0}"),
            });
        }
        if !(0.0..=1.0).contains(&resample_below_ess) {
            return Err(Error::InvalidParameter {
                name: "resample_below_ess".into(),
                reason: format!(
                    "a relative ESS threshold must lie in [0, 1], got {resample_below_ess}"
                ),
            });
        }
        Ok(Self {
            population: Population::new(chains, seed)?,
            log_z0,
            resample_below_ess,
            updates: 0,
        })
    }

    /// After a parameter update old -> new: log w += E_old(x) - E_new(x) (at beta = 1),
    /// then one `kernel` step at `new`; resample (systematic) if ESS/n < threshold.
    ///
    /// The resampling, when triggered, happens between the reweighting and the kernel step
    /// (see the type's documentation). Chain `i` consumes only its own stream, so the result
    /// is the same for every [`Par`].
    ///
    /// # Panics
    /// If the chains do not match the models' shape.
    pub fn advance<M, K>(&mut self, old: &M, new: &M, kernel: &K, par: Par) -> OnlineAisInfo
    where
        M: EnergyModel<State = S>,
        K: Kernel<M>,
    {
        let info = weight_then_move(
            kernel,
            Some(self.resample_below_ess),
            Rung {
                model: old,
                beta: 1.0,
            },
            Rung {
                model: new,
                beta: 1.0,
            },
            &mut self.population,
            par,
        );
        self.updates += 1;
        OnlineAisInfo {
            update: self.updates,
            relative_ess: info.relative_ess,
            resampled: info.resampled,
            estimate: self.estimate(),
        }
    }

    /// The current log Z estimate with its error bar and ESS: \\(\log \hat Z\\) of the last
    /// model passed to [`advance`](Self::advance) (of the initial model before the first
    /// update), its standard error (the larger of the delta-method and bootstrap errors of the
    /// current weights, the delta-method variance of the segments before resamplings added),
    /// the Kish ESS and largest-weight fraction of the current weights with the warnings of
    /// [`crate::trust`], and the cost so far (updates x chains kernel steps).
    pub fn estimate(&self) -> LogZEstimate {
        let r = self.population.log_ratio();
        crate::ais::ais_estimate(
            self.log_z0 + r.log_mean,
            0.0,
            &self.population,
            self.population.steps(),
            Method::OnlineTrajectoryAis {
                updates: self.updates,
                resample_below_ess: self.resample_below_ess,
                resamplings: self.population.resamplings(),
            },
        )
    }

    /// The weighted population (chains, log weights, RNG streams): e.g. weighted samples of the
    /// current model.
    pub fn population(&self) -> &Population<S> {
        &self.population
    }

    /// Number of updates followed.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// The exact \\(\log Z_0\\) of the initial model.
    pub fn log_z0(&self) -> f64 {
        self.log_z0
    }
}

//! Online trajectory AIS: \\(\log Z\\) of the current model during training, for about one
//! Gibbs sweep per parameter update (Béreux et al., *Fast training and sampling of RBMs*).

use crate::estimate::{LogZEstimate, Method};
use crate::population::{Population, SelectChains};
use crate::trust::Warning;
use ebm_core::{Chains, EnergyModel, Error, Kernel, Par};
use ebm_samplers::tempering::Rung;
use serde::{Deserialize, Serialize};

/// Online trajectory annealed importance sampling: a weighted population of chains that follows
/// a training run, the successive models \\(\Theta_0, \Theta_1, \dots\\) forming the annealing
/// path (Béreux et al., *Fast training and sampling of RBMs*). After each parameter update
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
/// second order in the update size (the PTT paper). Resampling before the move lets the
/// kernel separate the copies of a chain. The estimate is
///
/// \\[ \log \hat Z_t = \log Z_0 + \sum_{\text{resamplings}} \log\frac1n\sum_i e^{w_i}
///     + \log\frac1n\sum_i e^{w_i}, \\]
///
/// with the delta-method variances of the segments added ([`crate::Population::log_ratio`]).
///
/// Its assumptions are checked at every update: when one update alone leaves a relative ESS of
/// its weight increments below [`MIN_STEP_RELATIVE_ESS`] (steps too large for one kernel step
/// to follow), or the energies become non-finite (diverged parameters), every later estimate
/// carries [`Warning::AssumptionBroken`] with the first update that broke them; after
/// divergence the estimate is `NaN` and nothing panics. The genealogy error bar and the
/// [`Warning::LineageCollapse`] warning follow resampling ([`crate::trust`]).
///
/// The whole state (chains, weights, carried \\(\log Z\\), RNG streams, counters) serialises, so a
/// training checkpoint resumes the estimator bit for bit.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(serialize = "S: Serialize", deserialize = "S: Deserialize<'de>"))]
pub struct OnlineTrajectoryAis<S> {
    population: Population<S>,
    log_z0: f64,
    resample_below_ess: f64,
    updates: u64,
    /// Why the estimator's assumptions broke, from the first update that broke them.
    #[serde(default)]
    broken: Option<String>,
    /// Whether the weights became non-finite (the estimate is then `NaN`).
    #[serde(default)]
    diverged: bool,
    #[serde(skip)]
    previous: Vec<f64>,
}

/// The relative ESS of the weight increments of a single update below which the update is
/// too large for the chains to follow ([`Warning::AssumptionBroken`]): one parameter update
/// must change the law little, so that one kernel step keeps the chains close to it.
pub const MIN_STEP_RELATIVE_ESS: f64 = 0.1;

/// Equality of everything but the internal buffer.
impl<S: PartialEq> PartialEq for OnlineTrajectoryAis<S> {
    fn eq(&self, other: &Self) -> bool {
        self.population == other.population
            && self.log_z0 == other.log_z0
            && self.resample_below_ess == other.resample_below_ess
            && self.updates == other.updates
            && self.broken == other.broken
            && self.diverged == other.diverged
    }
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
        check_arguments(log_z0, resample_below_ess)?;
        Self::from_population(Population::new(chains, seed)?, log_z0, resample_below_ess)
    }

    /// Continues a weighted population already carried along an annealing path from a
    /// distribution whose exact \\(\log Z\\) is `log_z0` to the initial model of the training
    /// run, e.g. the population of an [`crate::ais()`] run from an independent-site reference to
    /// an initial model with couplings: the training trajectory is then one more stretch of the
    /// same path, and the weights, carried log ratios, genealogy and error of that first
    /// stretch stay in every later [`estimate`](Self::estimate). The population's RNG streams
    /// continue.
    ///
    /// # Errors
    /// As [`OnlineTrajectoryAis::try_new`].
    pub fn from_population(
        population: Population<S>,
        log_z0: f64,
        resample_below_ess: f64,
    ) -> ebm_core::Result<Self> {
        check_arguments(log_z0, resample_below_ess)?;
        Ok(Self {
            population,
            log_z0,
            resample_below_ess,
            updates: 0,
            broken: None,
            diverged: false,
            previous: Vec::new(),
        })
    }

    /// Checks an estimator read from a file: valid arguments (as
    /// [`OnlineTrajectoryAis::try_new`]), a consistent population, and finite weights unless
    /// the estimator records its own divergence.
    ///
    /// # Errors
    /// As [`OnlineTrajectoryAis::try_new`] and [`Population::check`].
    pub fn check(&self) -> ebm_core::Result<()> {
        check_arguments(self.log_z0, self.resample_below_ess)?;
        if self.population.chains.n_chains() < 2 {
            return Err(Error::InvalidParameter {
                name: "online estimator chains".into(),
                reason: "needs at least 2 chains".into(),
            });
        }
        self.population.check(self.diverged)
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
        self.updates += 1;
        let t = self.updates;
        if self.diverged {
            return self.info(f64::NAN, false);
        }
        let (from, to) = (
            Rung {
                model: old,
                beta: 1.0,
            },
            Rung {
                model: new,
                beta: 1.0,
            },
        );
        self.previous.clone_from(&self.population.log_weights);
        self.population.reweight(from, to, par);
        let w = &self.population.log_weights;
        if w.iter().any(|x| !x.is_finite()) {
            self.population.log_weights.clone_from(&self.previous);
            self.diverged = true;
            self.broken.get_or_insert_with(|| {
                format!(
                    "update {t}: the energies became non-finite (parameters diverged, e.g. a \
                     learning rate far too large); the online log Z is not computed any more"
                )
            });
            return self.info(f64::NAN, false);
        }
        let step_ess = relative_ess_of_increments(w, &self.previous);
        if step_ess < MIN_STEP_RELATIVE_ESS {
            self.broken.get_or_insert_with(|| {
                format!(
                    "update {t}: one parameter update left a relative ESS of {step_ess:.3} \
                     (< {MIN_STEP_RELATIVE_ESS}): the steps are too large for one kernel step \
                     to follow (lower the learning rate); the estimate is biased from there on"
                )
            });
        }
        let relative_ess = self.population.relative_ess();
        let resampled = relative_ess < self.resample_below_ess;
        if resampled {
            self.population.resample();
        }
        self.population.advance_chains(kernel, to, par);
        self.info(relative_ess, resampled)
    }

    fn info(&self, relative_ess: f64, resampled: bool) -> OnlineAisInfo {
        OnlineAisInfo {
            update: self.updates,
            relative_ess,
            resampled,
            estimate: self.estimate(),
        }
    }

    /// Records that an assumption of the estimator broke, found by a check outside it (e.g.
    /// initial chains that are not exact draws, or an estimate below a bound that \\(\log Z\\)
    /// cannot be below): every later estimate carries [`Warning::AssumptionBroken`] with the
    /// reason (after the reasons already recorded).
    pub fn flag(&mut self, reason: String) {
        match &mut self.broken {
            Some(r) => {
                r.push_str("; then ");
                r.push_str(&reason);
            }
            None => self.broken = Some(reason),
        }
    }

    /// Why the estimator's assumptions broke (first occurrence), if they did.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// The current log Z estimate with its error bar and ESS: \\(\log \hat Z\\) of the last
    /// model passed to [`advance`](Self::advance) (of the initial model before the first
    /// update), its standard error (the larger of the delta-method and bootstrap errors of the
    /// current weights, the delta-method variance of the segments before resamplings added),
    /// the Kish ESS and largest-weight fraction of the current weights with the warnings of
    /// [`crate::trust`], and the cost so far (updates x chains kernel steps).
    pub fn estimate(&self) -> LogZEstimate {
        let r = self.population.log_ratio();
        let mut e = crate::ais::ais_estimate(
            self.log_z0 + r.log_mean,
            0.0,
            &self.population,
            self.population.steps(),
            Method::OnlineTrajectoryAis {
                updates: self.updates,
                resample_below_ess: self.resample_below_ess,
                resamplings: self.population.resamplings(),
            },
        );
        if let Some(reason) = &self.broken {
            e.warn(Warning::AssumptionBroken {
                reason: reason.clone(),
            });
        }
        if self.diverged {
            e.log_z = f64::NAN;
            e.std_err = f64::NAN;
        }
        e
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

fn check_arguments(log_z0: f64, resample_below_ess: f64) -> ebm_core::Result<()> {
    if !log_z0.is_finite() {
        Err(Error::InvalidParameter {
            name: "log_z0".into(),
            reason: format!("must be finite, got {log_z0}"),
        })
    } else if !(0.0..=1.0).contains(&resample_below_ess) {
        Err(Error::InvalidParameter {
            name: "resample_below_ess".into(),
            reason: format!(
                "a relative ESS threshold must lie in [0, 1], got {resample_below_ess}"
            ),
        })
    } else {
        Ok(())
    }
}

/// The relative Kish ESS of the increments `now - before` of one reweighting.
fn relative_ess_of_increments(now: &[f64], before: &[f64]) -> f64 {
    let m = now
        .iter()
        .zip(before)
        .map(|(a, b)| a - b)
        .fold(f64::NEG_INFINITY, f64::max);
    let (mut s1, mut s2) = (0.0, 0.0);
    for (a, b) in now.iter().zip(before) {
        let x = (a - b - m).exp();
        s1 += x;
        s2 += x * x;
    }
    s1 * s1 / s2 / now.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_models::{Bernoulli, Rbm};
    use ebm_samplers::Gibbs;
    use nalgebra::DMatrix;

    fn rbm(w: f64) -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
        Rbm::new(
            Bernoulli::new(vec![0.0; 4]),
            Bernoulli::new(vec![0.0; 3]),
            DMatrix::from_element(4, 3, w),
        )
        .unwrap()
    }

    #[test]
    fn small_steps_are_trusted_huge_steps_are_flagged_and_divergence_does_not_panic() {
        let m0 = rbm(0.0);
        let chains = m0.default_chains(200);
        let mut o = OnlineTrajectoryAis::new(chains, 1, (7.0f64) * 2f64.ln(), 0.5);
        o.advance(&m0, &rbm(0.01), &Gibbs::new(1), Par::Seq);
        assert!(o.broken().is_none());
        assert!(o.estimate().is_trusted(), "{:?}", o.estimate().warnings);
        // A huge step: the increments concentrate on a few chains.
        o.advance(&rbm(0.01), &rbm(30.0), &Gibbs::new(1), Par::Seq);
        assert!(o.broken().is_some_and(|r| r.contains("update 2")));
        let e = o.estimate();
        assert!(
            e.warnings
                .iter()
                .any(|w| matches!(w, Warning::AssumptionBroken { .. }))
        );
        // Infinite parameters: no panic, a NaN estimate with the warning.
        let info = o.advance(&rbm(30.0), &rbm(1e308), &Gibbs::new(1), Par::Seq);
        assert!(info.estimate.log_z.is_nan() && !info.estimate.is_trusted());
        let info = o.advance(&rbm(1e308), &rbm(1.0), &Gibbs::new(1), Par::Seq);
        assert!(info.estimate.log_z.is_nan());
    }
}

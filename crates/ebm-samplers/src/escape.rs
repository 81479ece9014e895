//! First-passage (escape) times of many chains from one mode to another (paper "Alternating
//! Gibbs sampling in restricted Boltzmann machines: free-energy barriers, analytic models and
//! moves in latent space", Sec. III A; Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).

use crate::StepInfo;
use ebm_core::{Observer, Result};

/// An observer of [`crate::run()`] recording, for every chain, the first step after which the
/// chain is in a target set (`in_target(chains, i)`), e.g. "magnetisation below
/// \\(-m^*/2\\)" for a chain started in the \\(+m^*\\) mode of the Curie–Weiss model. Later
/// visits are ignored. The exact reference for the Curie–Weiss model is
/// [`ebm_models::barriers::ReducedChain::mean_first_passage`].
pub struct EscapeTimes<F> {
    in_target: F,
    times: Vec<Option<u64>>,
}

impl<F> std::fmt::Debug for EscapeTimes<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EscapeTimes")
            .field("times", &self.times)
            .finish_non_exhaustive()
    }
}

/// Mean escape time over the chains that escaped, with its standard error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EscapeSummary {
    /// Chains that reached the target.
    pub escaped: usize,
    /// Chains that had not reached it yet (their times are not in the mean, which is then
    /// biased low: run until this is zero).
    pub censored: usize,
    /// Mean first-passage time of the escaped chains, in kernel steps.
    pub mean: f64,
    /// Standard error of the mean: sample standard deviation over \\(\sqrt{\text{escaped}}\\).
    pub std_error: f64,
}

impl<F> EscapeTimes<F> {
    /// Records escapes of `n_chains` chains into the set given by `in_target`, counting steps
    /// from the start of the run (step numbers as passed by [`crate::run()`]).
    pub fn new(n_chains: usize, in_target: F) -> Self {
        Self {
            in_target,
            times: vec![None; n_chains],
        }
    }

    /// The escape step of each chain (`None`: not yet).
    pub fn times(&self) -> &[Option<u64>] {
        &self.times
    }

    /// Whether every chain has escaped.
    pub fn all_escaped(&self) -> bool {
        self.times.iter().all(Option::is_some)
    }

    /// Mean and standard error over the escaped chains.
    pub fn summary(&self) -> EscapeSummary {
        let t: Vec<f64> = self.times.iter().flatten().map(|&x| x as f64).collect();
        let n = t.len() as f64;
        let mean = t.iter().sum::<f64>() / n;
        let var = t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        EscapeSummary {
            escaped: t.len(),
            censored: self.times.len() - t.len(),
            mean,
            std_error: (var / n).sqrt(),
        }
    }
}

impl<'a, I, S, F: Fn(&S, usize) -> bool> Observer<StepInfo<'a, I, S>> for EscapeTimes<F> {
    fn observe(&mut self, step: u64, info: &StepInfo<'a, I, S>) -> Result<()> {
        for (i, t) in self.times.iter_mut().enumerate() {
            if t.is_none() && (self.in_target)(info.chains, i) {
                *t = Some(step);
            }
        }
        Ok(())
    }
}

/// An observer of [`crate::run()`] recording the fraction of time spent in each of `n_states`
/// labelled states (paper "Alternating Gibbs sampling in restricted Boltzmann machines:
/// free-energy barriers, analytic models and moves in latent space", Fig. 15 d/e: the fraction
/// of time in each Mattis state). After every step, `label(chains, i)` assigns chain `i` to a
/// state (`Some(k)`, `k < n_states`) or to none (`None`, e.g. between modes); the fraction of
/// state `k` is the number of (step, chain) observations labelled `k` over all observations.
/// Compare it with the model's exact state weights, not with the data's.
pub struct Occupation<F> {
    label: F,
    counts: Vec<u64>,
    unlabelled: u64,
}

impl<F> std::fmt::Debug for Occupation<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Occupation")
            .field("counts", &self.counts)
            .field("unlabelled", &self.unlabelled)
            .finish_non_exhaustive()
    }
}

impl<F> Occupation<F> {
    /// Counts visits to `n_states` states given by `label`.
    pub fn new(n_states: usize, label: F) -> Self {
        Self {
            label,
            counts: vec![0; n_states],
            unlabelled: 0,
        }
    }

    /// Observations per state.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Observations assigned to no state.
    pub fn unlabelled(&self) -> u64 {
        self.unlabelled
    }

    /// The fraction of observations in each state (all zero before the first step); the
    /// fractions and that of the unlabelled observations sum to one.
    pub fn fractions(&self) -> Vec<f64> {
        let total = (self.counts.iter().sum::<u64>() + self.unlabelled) as f64;
        self.counts
            .iter()
            .map(|&c| if total > 0.0 { c as f64 / total } else { 0.0 })
            .collect()
    }
}

impl<'a, I, S: ebm_core::Chains, F: Fn(&S, usize) -> Option<usize>> Observer<StepInfo<'a, I, S>>
    for Occupation<F>
{
    fn observe(&mut self, _step: u64, info: &StepInfo<'a, I, S>) -> Result<()> {
        let n_chains = ebm_core::Chains::n_chains(info.chains);
        for i in 0..n_chains {
            match (self.label)(info.chains, i) {
                Some(k) if k < self.counts.len() => self.counts[k] += 1,
                Some(k) => {
                    return Err(ebm_core::Error::InvalidParameter {
                        name: "Occupation label".into(),
                        reason: format!(
                            "state {k} of chain {i} is not below {}",
                            self.counts.len()
                        ),
                    });
                }
                None => self.unlabelled += 1,
            }
        }
        Ok(())
    }
}

//! A weighted population of chains: the state of every importance-sampling estimator.

use crate::estimate::LogMeanExp;
use ebm_core::{ChainRng, Chains, EnergyModel, Error, Kernel, Par, RngStreams, Scalar};
use ebm_models::RbmChains;
use ebm_samplers::tempering::Rung;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// Chain batches from which a new batch can be assembled by picking chains by index, with
/// repetitions: what resampling needs. Implemented for the chain types of the workspace
/// (`DMatrix` columns and [`RbmChains`]); a user-defined state implements it in a few lines.
pub trait SelectChains: Chains {
    /// The batch whose chain `i` is a copy of chain `ancestors[i]` of `self`.
    ///
    /// # Panics
    /// If an ancestor index is out of range.
    fn select_chains(&self, ancestors: &[usize]) -> Self;
}

fn select_columns<F: Scalar>(m: &DMatrix<F>, ancestors: &[usize]) -> DMatrix<F> {
    let rows = m.nrows();
    let mut out = DMatrix::zeros(rows, ancestors.len());
    for (i, &a) in ancestors.iter().enumerate() {
        out.as_mut_slice()[i * rows..(i + 1) * rows]
            .copy_from_slice(&m.as_slice()[a * rows..(a + 1) * rows]);
    }
    out
}

impl<F: Scalar> SelectChains for DMatrix<F> {
    fn select_chains(&self, ancestors: &[usize]) -> Self {
        select_columns(self, ancestors)
    }
}

impl<F: Scalar> SelectChains for RbmChains<F> {
    fn select_chains(&self, ancestors: &[usize]) -> Self {
        RbmChains {
            visible: select_columns(&self.visible, ancestors),
            hidden: select_columns(&self.hidden, ancestors),
        }
    }
}

/// Systematic resampling: with normalised weights \\(p_i \propto e^{w_i}\\) and one uniform
/// \\(u \in [0, 1)\\), ancestor \\(k\\) is the index \\(i\\) whose cumulative weight interval
/// contains \\((u + k)/n\\), for \\(k = 0, \dots, n-1\\). Every index is copied
/// \\(\lfloor n p_i \rfloor\\) or \\(\lceil n p_i \rceil\\) times, the expected count is exactly
/// \\(n p_i\\), and the ancestors come out sorted (Béreux et al., *Fast training and sampling of RBMs*, the reference
/// code's scheme). Indices of zero weight are never selected.
///
/// # Panics
/// If `log_w` is empty, holds NaN or \\(+\infty\\), every weight is zero, or \\(u \notin [0, 1)\\).
pub fn systematic_resampling(log_w: &[f64], u: f64) -> Vec<usize> {
    systematic_resampling_n(log_w, log_w.len(), u)
}

/// [`systematic_resampling`] drawing `n` ancestors from any number of weights (ancestor
/// \\(k\\) at \\((u + k)/n\\)): each index is copied \\(\lfloor n p_i \rfloor\\) or
/// \\(\lceil n p_i \rceil\\) times, \\(n p_i\\) in expectation, e.g. to keep one draw of several
/// per chain.
///
/// # Panics
/// As [`systematic_resampling`].
pub fn systematic_resampling_n(log_w: &[f64], n: usize, u: f64) -> Vec<usize> {
    assert!(!log_w.is_empty(), "systematic_resampling: no weights");
    assert!(
        (0.0..1.0).contains(&u),
        "systematic_resampling: u = {u} is not in [0, 1)"
    );
    let m = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(
        m.is_finite() && !log_w.iter().any(|w| w.is_nan()),
        "systematic_resampling: weights must be finite, not NaN, and not all zero"
    );
    let w: Vec<f64> = log_w.iter().map(|&x| (x - m).exp()).collect();
    let total: f64 = w.iter().sum();
    let last_positive = w.iter().rposition(|&x| x > 0.0).expect("max weight is 1");
    let mut ancestors = Vec::with_capacity(n);
    let (mut i, mut cum) = (0, w[0]);
    for k in 0..n {
        let pos = (u + k as f64) / n as f64 * total;
        while pos >= cum && i < last_positive {
            i += 1;
            cum += w[i];
        }
        ancestors.push(i);
    }
    ancestors
}

/// A weighted population of chains carried along an annealing path: the chains, one log
/// importance weight and one RNG stream per chain, and what earlier resamplings carried over.
///
/// After annealing from a distribution with normaliser \\(Z_a\\) to one with \\(Z_b\\), the
/// weighted chains target \\(p_b\\) and
///
/// \\[ \log\frac{Z_b}{Z_a} \approx c + \log\frac1n\sum_i e^{w_i} \\]
///
/// ([`Population::log_ratio`]), where \\(c\\) is the sum of the log mean weights at each earlier
/// resampling (weights are reset to 0 when the chains are resampled). Serialisable (chains,
/// weights, RNG streams and counters), so a checkpoint resumes exactly.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(serialize = "S: Serialize", deserialize = "S: Deserialize<'de>"))]
pub struct Population<S> {
    /// The chains.
    pub chains: S,
    /// The log importance weight \\(w_i\\) of each chain.
    pub log_weights: Vec<f64>,
    /// Stream `i` drives chain `i`.
    pub rngs: RngStreams,
    resample_rng: ChainRng,
    carried_log_ratio: f64,
    carried_variance: f64,
    /// The founder (index among the chains before the first resampling) of every chain.
    #[serde(default)]
    founders: Vec<usize>,
    resamplings: u64,
    steps: u64,
    #[serde(skip)]
    scratch: Vec<f64>,
}

/// Equality of everything but the internal energy buffer.
impl<S: PartialEq> PartialEq for Population<S> {
    fn eq(&self, other: &Self) -> bool {
        self.chains == other.chains
            && self.log_weights == other.log_weights
            && self.rngs == other.rngs
            && self.resample_rng == other.resample_rng
            && self.carried_log_ratio == other.carried_log_ratio
            && self.carried_variance == other.carried_variance
            && self.founders == other.founders
            && self.resamplings == other.resamplings
            && self.steps == other.steps
    }
}

/// The log ratio since the start of a run: `carried` (the log mean weights of the segments
/// before resamplings, with their variance) plus the current segment's `current`.
pub(crate) fn carried_ratio(
    carried: f64,
    carried_variance: f64,
    current: LogMeanExp,
) -> LogMeanExp {
    LogMeanExp {
        log_mean: carried + current.log_mean,
        std_err: (carried_variance + current.std_err * current.std_err).sqrt(),
        ..current
    }
}

impl<S: Chains> Population<S> {
    /// A population of `chains` with zero log weights and one RNG stream per chain derived from
    /// `seed` ([`RngStreams::new`]); the resampling uniforms come from an auxiliary generator
    /// of the same seed.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for fewer than two chains (no error bar is possible).
    pub fn new(chains: S, seed: u64) -> ebm_core::Result<Self> {
        let n = chains.n_chains();
        if n < 2 {
            return Err(Error::InvalidParameter {
                name: "chains".into(),
                reason: format!(
                    "an importance-sampling population needs at least 2 chains, got {n}"
                ),
            });
        }
        Ok(Self {
            rngs: RngStreams::new(seed, n),
            resample_rng: RngStreams::auxiliary(seed, 1),
            chains,
            log_weights: vec![0.0; n],
            carried_log_ratio: 0.0,
            carried_variance: 0.0,
            founders: (0..n).collect(),
            resamplings: 0,
            steps: 0,
            scratch: Vec::new(),
        })
    }

    /// Number of chains.
    pub fn n_chains(&self) -> usize {
        self.log_weights.len()
    }

    /// Kernel steps applied to each chain so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Number of resamplings so far.
    pub fn resamplings(&self) -> u64 {
        self.resamplings
    }

    /// The importance-sampling estimate of \\(\log(Z_b / Z_a)\\) since the start, with its
    /// standard error: the carried log ratio of earlier resamplings plus the log mean of the
    /// current weights; the variances of the segments between resamplings are added (each
    /// segment's by the delta method of [`LogMeanExp`]). `ess` is the Kish ESS of the current
    /// weights.
    pub fn log_ratio(&self) -> LogMeanExp {
        carried_ratio(
            self.carried_log_ratio,
            self.carried_variance,
            LogMeanExp::of(&self.log_weights),
        )
    }

    /// This never-resampled population with other chains, weights, streams and step count:
    /// how a run annealed in shards (consecutive ranges of chains, each with its own streams,
    /// e.g. on several processes) cuts its start into shards and joins them again. Everything
    /// else (the resampling generator, the genealogy) is that of a population never
    /// resampled.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if this population was resampled (resampling draws
    /// ancestors across all chains, which shards cannot do) or chains, weights and streams
    /// differ in number.
    pub fn with_chains(
        &self,
        chains: S,
        log_weights: Vec<f64>,
        rngs: RngStreams,
        steps: u64,
    ) -> ebm_core::Result<Self> {
        let n = log_weights.len();
        if self.resamplings > 0 || chains.n_chains() != n || rngs.len() != n {
            return Err(Error::InvalidParameter {
                name: "population".into(),
                reason: format!(
                    "a shard needs a never-resampled population (this one has {} \
                     resamplings) and as many chains and streams as weights ({}, {}, {n})",
                    self.resamplings,
                    chains.n_chains(),
                    rngs.len()
                ),
            });
        }
        Ok(Self {
            chains,
            log_weights,
            rngs,
            resample_rng: self.resample_rng.clone(),
            carried_log_ratio: 0.0,
            carried_variance: 0.0,
            founders: (0..n).collect(),
            resamplings: 0,
            steps,
            scratch: Vec::new(),
        })
    }

    /// The variance carried over from the segments before the last resampling (delta method).
    pub(crate) fn carried_variance(&self) -> f64 {
        self.carried_variance
    }

    /// After at least one resampling: the Chan–Lai estimate of the relative variance of the
    /// estimate of \\(Z\\) from the genealogy of the chains (Chan and Lai 2013, "A general theory
    /// of particle filters in hidden Markov models and some applications"),
    ///
    /// \\[ \hat V = \sum_{e=1}^{n} \Big(\sum_{i:\,E_i = e} \bar w_i - \frac1n\Big)^2, \\]
    ///
    /// where \\(E_i\\) is the founder of chain \\(i\\) (its ancestor before the first resampling)
    /// and \\(\bar w_i\\) its normalised current weight; without resampling it reduces to the
    /// delta method. It accounts for the correlation resampling creates between chains: when all
    /// chains descend from a few founders it tends to 1. Returns \\(\hat V\\) (the variance of
    /// \\(\log\hat Z\\) to first order) and the number of distinct founders among the chains;
    /// `None` without resampling (or for a population restored from a record without genealogy).
    pub fn lineage_variance(&self) -> Option<(f64, usize)> {
        let n = self.log_weights.len();
        if self.resamplings == 0 || self.founders.len() != n {
            return None;
        }
        let m = self
            .log_weights
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        if !m.is_finite() {
            return None;
        }
        let total: f64 = self.log_weights.iter().map(|w| (w - m).exp()).sum();
        let mut share = vec![0.0; n];
        let mut seen = vec![false; n];
        for (&e, &w) in self.founders.iter().zip(&self.log_weights) {
            share[e] += (w - m).exp() / total;
            seen[e] = true;
        }
        let inv = 1.0 / n as f64;
        let var = share.iter().map(|g| (g - inv) * (g - inv)).sum();
        Some((var, seen.iter().filter(|s| **s).count()))
    }

    /// The log of the total current weight of the descendants of each founder (each chain
    /// before the first resampling), \\(\log \sum_{i: E_i = e} e^{w_i}\\) for \\(e = 1..n\\)
    /// (\\(-\infty\\) for a founder without descendants): the importance weights of the
    /// independent units of the run. Without resampling (or for a population restored from a
    /// record without genealogy) these are the chains' own log weights.
    pub fn founder_log_weights(&self) -> Vec<f64> {
        let n = self.log_weights.len();
        if self.resamplings == 0 || self.founders.len() != n {
            return self.log_weights.clone();
        }
        let m = self
            .log_weights
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let mut total = vec![0.0; n];
        for (&e, &w) in self.founders.iter().zip(&self.log_weights) {
            total[e] += (w - m).exp();
        }
        total.iter().map(|t| m + t.ln()).collect()
    }

    /// Checks a population read from a file: one log weight and one stream per chain, every
    /// founder index below the number of chains, and (unless `allow_non_finite`) finite log
    /// weights.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`], [`Error::InvalidParameter`] or [`Error::NonFinite`] naming
    /// the field.
    pub fn check(&self, allow_non_finite: bool) -> ebm_core::Result<()> {
        let n = self.chains.n_chains();
        Error::check_len(
            "population log_weights (one per chain)",
            n,
            self.log_weights.len(),
        )?;
        Error::check_len("population rngs (one per chain)", n, self.rngs.len())?;
        if !self.founders.is_empty() {
            Error::check_len(
                "population founders (one per chain)",
                n,
                self.founders.len(),
            )?;
        }
        if let Some(&f) = self.founders.iter().find(|&&f| f >= n) {
            return Err(Error::InvalidParameter {
                name: "population founders".into(),
                reason: format!("must be chain indices below {n}, got {f}"),
            });
        }
        if !allow_non_finite {
            Error::check_finite("population log_weights", &self.log_weights)?;
        }
        Ok(())
    }

    /// The current relative ESS of the weights, \\(\mathrm{ESS}/n\\).
    pub fn relative_ess(&self) -> f64 {
        LogMeanExp::of(&self.log_weights).relative_ess()
    }

    /// The importance-weight increment of a change of distribution at fixed states:
    /// \\(w_i \mathrel{+}= E_{\text{from}}(x_i) - E_{\text{to}}(x_i)\\), each energy at its rung's
    /// own inverse temperature, accumulated in `f64`.
    ///
    /// # Panics
    /// If the chains do not match the models' shape.
    pub fn reweight<M: EnergyModel<State = S>>(
        &mut self,
        from: Rung<'_, M>,
        to: Rung<'_, M>,
        par: Par,
    ) {
        let n = self.n_chains();
        self.scratch.resize(2 * n, 0.0);
        let (e_from, e_to) = self.scratch.split_at_mut(n);
        from.model.energies(&self.chains, from.beta, e_from, par);
        to.model.energies(&self.chains, to.beta, e_to, par);
        for ((w, a), b) in self
            .log_weights
            .iter_mut()
            .zip(e_from.iter())
            .zip(e_to.iter())
        {
            *w += a - b;
        }
    }

    /// One step of `kernel` at `rung` on every chain (chain `i` consuming stream `i`); counts
    /// one kernel step.
    pub fn advance_chains<M, K>(&mut self, kernel: &K, rung: Rung<'_, M>, par: Par) -> K::Info
    where
        M: EnergyModel<State = S>,
        K: Kernel<M>,
    {
        self.steps += 1;
        kernel.step(
            rung.model,
            rung.beta,
            &mut self.chains,
            self.rngs.as_mut_slice(),
            par,
        )
    }
}

impl<S: SelectChains> Population<S> {
    /// Resamples the chains by [`systematic_resampling`] of their weights (one uniform from
    /// the population's auxiliary generator), carries \\(\log\frac1n\sum_i e^{w_i}\\) and its
    /// variance over, and resets every weight to 0: [`Population::log_ratio`] is unchanged by
    /// the call. Chain `i` keeps its own RNG stream, so copies of one ancestor evolve
    /// independently afterwards.
    pub fn resample(&mut self) {
        let current = LogMeanExp::of(&self.log_weights);
        let u = f64::uniform(&mut self.resample_rng);
        let ancestors = systematic_resampling(&self.log_weights, u);
        self.chains = self.chains.select_chains(&ancestors);
        if self.founders.len() == ancestors.len() {
            self.founders = ancestors.iter().map(|&a| self.founders[a]).collect();
        }
        self.carried_log_ratio += current.log_mean;
        self.carried_variance += current.std_err * current.std_err;
        self.log_weights.fill(0.0);
        self.resamplings += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systematic_resampling_n_keeps_n_of_a_larger_pool_in_proportion() {
        // 12 weights, 4 kept: weights 2, 1, 1 at indices 3, 7, 11 and zero elsewhere.
        let mut log_w = vec![f64::NEG_INFINITY; 12];
        log_w[3] = 2f64.ln();
        log_w[7] = 0.0;
        log_w[11] = 0.0;
        for u in [0.0, 0.3, 0.7, 0.99] {
            let a = systematic_resampling_n(&log_w, 4, u);
            assert_eq!(a.len(), 4);
            assert_eq!(a.iter().filter(|&&i| i == 3).count(), 2, "{a:?}");
            assert_eq!(a.iter().filter(|&&i| i == 7).count(), 1, "{a:?}");
            assert_eq!(a.iter().filter(|&&i| i == 11).count(), 1, "{a:?}");
        }
        // n = len is the square case.
        assert_eq!(
            systematic_resampling_n(&log_w, 12, 0.4),
            systematic_resampling(&log_w, 0.4)
        );
    }

    #[test]
    fn systematic_resampling_copies_floor_or_ceil_of_n_p() {
        let log_w: Vec<f64> = [0.1, 2.0, 0.5, 0.0, 1.2, 0.05, 3.0, 0.7]
            .iter()
            .map(|p: &f64| if *p == 0.0 { f64::NEG_INFINITY } else { p.ln() })
            .collect();
        let total: f64 = log_w.iter().map(|w| w.exp()).sum();
        let n = log_w.len();
        for k in 0..50 {
            let u = k as f64 / 50.0;
            let a = systematic_resampling(&log_w, u);
            assert_eq!(a.len(), n);
            assert!(a.windows(2).all(|p| p[0] <= p[1]), "sorted");
            for i in 0..n {
                let count = a.iter().filter(|&&x| x == i).count() as f64;
                let np = n as f64 * log_w[i].exp() / total;
                assert!(
                    count >= np.floor() && count <= np.ceil(),
                    "{i}: {count} vs {np}"
                );
            }
        }
    }

    #[test]
    fn systematic_resampling_expected_counts_are_exact() {
        // Averaging over a fine grid of u gives E[count_i] = n p_i up to the grid spacing.
        let log_w = [0.3f64.ln(), 0.1f64.ln(), 0.6f64.ln()];
        let grid = 10_000;
        let mut counts = [0.0; 3];
        for k in 0..grid {
            for a in systematic_resampling(&log_w, (k as f64 + 0.5) / grid as f64) {
                counts[a] += 1.0 / grid as f64;
            }
        }
        for (c, p) in counts.iter().zip([0.9, 0.3, 1.8]) {
            assert!((c - p).abs() < 1e-3, "{c} vs {p}");
        }
    }

    #[test]
    fn zero_weights_are_never_selected_and_selection_copies_columns() {
        let log_w = [f64::NEG_INFINITY, 0.0, f64::NEG_INFINITY];
        assert_eq!(systematic_resampling(&log_w, 0.999), vec![1, 1, 1]);
        let m = DMatrix::from_column_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let s = m.select_chains(&[2, 0, 2]);
        assert_eq!(s.as_slice(), &[5.0, 6.0, 1.0, 2.0, 5.0, 6.0]);
    }

    #[test]
    fn resampling_keeps_the_log_ratio_and_resets_weights() {
        let chains = DMatrix::from_fn(1, 6, |_, j| j as f64);
        let mut p = Population::new(chains, 3).unwrap();
        p.log_weights = vec![0.1, -2.0, 1.5, 0.3, -0.7, 2.2];
        let before = p.log_ratio();
        p.resample();
        let after = p.log_ratio();
        assert!((before.log_mean - after.log_mean).abs() < 1e-14);
        assert!((before.std_err - after.std_err).abs() < 1e-14);
        assert!(p.log_weights.iter().all(|&w| w == 0.0));
        assert_eq!(p.resamplings(), 1);
        assert!(Population::new(DMatrix::<f64>::zeros(1, 1), 0).is_err());
    }
}

use super::pt::PtInfo;
use serde::{Deserialize, Serialize};

/// Diagnostics of a PT run accumulated from the [`PtInfo`] of each round: per-pair acceptance
/// rates, the communication barrier estimated from the rejection rates, and the round-trip
/// rate.
///
/// With rejection rates \\(r_k = 1 - \hat a_k\\), the global communication barrier of
/// non-reversible PT is estimated by \\(\hat\Lambda = \sum_k r_k\\) (Syed et al.; the PTT paper
/// Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*), and the round-trip rate DEO would reach with perfect exploration by
/// \\(1/(2 + 2\sum_k r_k/(1 - r_k))\\); comparing it with the measured round-trip rate tells how
/// much the exploration limits communication.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PtDiagnostics {
    /// Rounds accumulated.
    pub rounds: u64,
    /// Number of systems (chains per rung), from the first round's proposals.
    pub systems: u64,
    /// Proposals per pair.
    pub proposed: Vec<u64>,
    /// Sum of acceptance probabilities per pair.
    pub acceptance_probability_sum: Vec<f64>,
    /// Round trips completed.
    pub round_trips: u64,
}

impl PtDiagnostics {
    /// An empty accumulator for a run with `systems` chains per rung.
    pub fn new(systems: usize) -> Self {
        Self {
            systems: systems as u64,
            ..Self::default()
        }
    }

    /// Adds one round.
    pub fn record(&mut self, info: &PtInfo) {
        if self.proposed.is_empty() {
            self.proposed = vec![0; info.proposed.len()];
            self.acceptance_probability_sum = vec![0.0; info.proposed.len()];
        }
        for k in 0..self.proposed.len() {
            self.proposed[k] += info.proposed[k];
            self.acceptance_probability_sum[k] += info.acceptance_probability_sum[k];
        }
        self.round_trips += info.round_trips;
        self.rounds += 1;
    }

    /// Mean acceptance probability per pair (NaN for a pair never proposed).
    pub fn acceptance_rates(&self) -> Vec<f64> {
        self.proposed
            .iter()
            .zip(&self.acceptance_probability_sum)
            .map(|(&n, &s)| s / n as f64)
            .collect()
    }

    /// \\(\hat\Lambda = \sum_k (1 - \hat a_k)\\).
    pub fn communication_barrier(&self) -> f64 {
        self.acceptance_rates().iter().map(|a| 1.0 - a).sum()
    }

    /// \\(1/(2 + 2\sum_k r_k/(1 - r_k))\\): the DEO round-trip rate per system and round under
    /// perfect exploration, given the measured rejection rates.
    pub fn ideal_deo_round_trip_rate(&self) -> f64 {
        let s: f64 = self.acceptance_rates().iter().map(|a| (1.0 - a) / a).sum();
        1.0 / (2.0 + 2.0 * s)
    }

    /// Measured round trips per system and round.
    pub fn round_trip_rate(&self) -> f64 {
        self.round_trips as f64 / (self.rounds * self.systems) as f64
    }
}

/// The replica index process of a PT run: for every system and replica, the rung it occupied
/// after each recorded round, \\(n_{i,r}(t)\\), and its autocorrelation times (the PTT paper
/// Béreux et al., *Fast training and sampling of RBMs*, after Banos et al. 2010).
///
/// The normalised autocorrelation \\(\rho(t)\\) pools all series around their common mean;
/// \\(\tau_{\text{int}} = \frac12 + \sum_{t=1}^{W} \rho(t)\\) with Sokal's automatic window
/// \\(W \ge 6\tau_{\text{int}}\\) (the PTT paper prints the sum from \\(t = 0\\), which adds 1: a
/// typo), and \\(\tau_{\text{exp}}\\) from a weighted fit of \\(\log\rho(t)\\) at large
/// \\(t\\). A run of at least \\(20\tau_{\text{exp}}\\) rounds is a conservative
/// thermalisation time; \\(\tau_{\text{int}}\\) is the time between independent index
/// configurations. Both are computed by `ebm_core::diagnostics::autocorr`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexProcess {
    n_rungs: usize,
    /// Only systems `0..max_systems` are recorded (`None`: all).
    max_systems: Option<usize>,
    /// `series[i * n_rungs + r]`: the rungs of replica `r` of system `i`, one per round.
    series: Vec<Vec<u32>>,
}

impl IndexProcess {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty record that keeps only the first `max_systems` systems of each state (its
    /// memory is then bounded by `max_systems` x rungs x rounds, whatever the number of chains;
    /// the systems are independent, so the times estimated from a subset are unbiased).
    pub fn with_max_systems(max_systems: usize) -> Self {
        Self {
            max_systems: Some(max_systems),
            ..Self::default()
        }
    }

    /// Appends the current rung of every replica of `state` (of its first systems, see
    /// [`IndexProcess::with_max_systems`]).
    ///
    /// # Panics
    /// If `state` has a different number of rungs or systems than the states recorded before.
    pub fn record<S: ebm_core::Chains>(&mut self, state: &super::PtState<S>) {
        self.record_replicas(&state.replica);
    }

    /// [`IndexProcess::record`] from the replica labels alone: `replica[k][i]` is the replica
    /// at rung `k` of system `i` (as in [`super::PtState`]); systems beyond the kept ones may
    /// be missing.
    ///
    /// # Panics
    /// As [`IndexProcess::record`].
    pub fn record_replicas(&mut self, replica: &[Vec<u32>]) {
        let k_max = replica.len();
        let systems = replica.first().map_or(0, Vec::len);
        let n = self.max_systems.map_or(systems, |m| m.min(systems));
        if self.series.is_empty() {
            self.n_rungs = k_max;
            self.series = vec![Vec::new(); k_max * n];
        }
        assert_eq!(
            self.series.len(),
            k_max * n,
            "IndexProcess: the recorded states had {} replicas in all, this one {}",
            self.series.len(),
            k_max * n
        );
        for (k, replicas) in replica.iter().enumerate() {
            for (i, &r) in replicas.iter().take(n).enumerate() {
                self.series[i * k_max + r as usize].push(k as u32);
            }
        }
    }

    /// The memory, in bytes, of the index process of a run of `rounds` rounds on `rungs`
    /// rungs recording `systems` systems: a `u32` per system, rung and round, copied to `f64`
    /// when its autocorrelation is computed. It grows with the run, so a caller checks it
    /// before the run starts.
    pub fn bytes(rounds: u128, rungs: usize, systems: usize) -> u128 {
        [rounds, rungs as u128, systems as u128, 4 + 8]
            .into_iter()
            .fold(1u128, u128::saturating_mul)
    }

    /// Number of rounds recorded.
    pub fn rounds(&self) -> usize {
        self.series.first().map_or(0, Vec::len)
    }

    /// The rungs visited by replica `replica` of system `system`, one per recorded round.
    ///
    /// # Panics
    /// If the indices are out of range.
    pub fn series(&self, system: usize, replica: usize) -> &[u32] {
        assert!(replica < self.n_rungs, "replica {replica} out of range");
        &self.series[system * self.n_rungs + replica]
    }

    fn as_f64(&self) -> Vec<Vec<f64>> {
        self.series
            .iter()
            .map(|s| s.iter().map(|&k| k as f64).collect())
            .collect()
    }

    /// The normalised autocorrelation \\(\rho(t)\\), \\(t = 0..=\\) `max_lag`, of the index
    /// process, pooled over all replicas and systems.
    ///
    /// # Errors
    /// [`ebm_core::Error::InvalidParameter`] with too few rounds, `max_lag >=` the number of rounds, or a
    /// ladder of one rung (constant index).
    pub fn autocorrelation(&self, max_lag: usize) -> ebm_core::Result<Vec<f64>> {
        let s = self.as_f64();
        let refs: Vec<&[f64]> = s.iter().map(Vec::as_slice).collect();
        ebm_core::diagnostics::autocorrelation(&refs, max_lag).map_err(index_error)
    }

    /// The integrated autocorrelation time of the index process, in rounds, with its error.
    ///
    /// # Errors
    /// As [`IndexProcess::autocorrelation`].
    pub fn integrated_time(&self) -> ebm_core::Result<ebm_core::diagnostics::IntegratedTime> {
        let s = self.as_f64();
        let refs: Vec<&[f64]> = s.iter().map(Vec::as_slice).collect();
        ebm_core::diagnostics::integrated_autocorrelation_time(&refs, 6.0).map_err(index_error)
    }

    /// The exponential autocorrelation time of the index process, in rounds.
    ///
    /// # Errors
    /// As [`IndexProcess::autocorrelation`], or no measurable correlation at lag 1.
    pub fn exponential_time(&self) -> ebm_core::Result<ebm_core::diagnostics::ExponentialTime> {
        let s = self.as_f64();
        let refs: Vec<&[f64]> = s.iter().map(Vec::as_slice).collect();
        ebm_core::diagnostics::exponential_autocorrelation_time(&refs).map_err(index_error)
    }

    /// The exponential and integrated autocorrelation times, in rounds, where they can be
    /// measured (`None` for an error of [`IndexProcess::exponential_time`] or
    /// [`IndexProcess::integrated_time`], or a time that is not finite: too few rounds, or an
    /// index that forgets its rung within a round).
    pub fn measured_times(&self) -> (Option<f64>, Option<f64>) {
        let finite = |x: f64| x.is_finite().then_some(x);
        (
            self.exponential_time().ok().and_then(|t| finite(t.tau)),
            self.integrated_time().ok().and_then(|t| finite(t.tau)),
        )
    }
}

fn index_error(e: ebm_core::Error) -> ebm_core::Error {
    ebm_core::Error::InvalidParameter {
        name: "replica index process".into(),
        reason: e.to_string(),
    }
}

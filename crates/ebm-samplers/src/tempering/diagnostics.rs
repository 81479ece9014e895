use super::pt::PtInfo;
use serde::{Deserialize, Serialize};

/// Diagnostics of a PT run accumulated from the [`PtInfo`] of each round: per-pair acceptance
/// rates, the communication barrier estimated from the rejection rates, and the round-trip
/// rate.
///
/// With rejection rates \\(r_k = 1 - \hat a_k\\), the global communication barrier of
/// non-reversible PT is estimated by \\(\hat\Lambda = \sum_k r_k\\) (Syed et al.; spec
/// `lifted-deo-pt.md` §5.2), and the round-trip rate DEO would reach with perfect exploration by
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

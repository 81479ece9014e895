//! The PT run loop: rounds of [`ParallelTempering::step`] on any [`Exchange`] (a temperature
//! ladder, a ladder with a reference, a trajectory, a stack), with the run's diagnostics, its
//! replica index process and the warnings that say when its samples cannot be trusted.
//!
//! ```
//! use ebm_core::{EnergyModel, Par};
//! use ebm_models::CurieWeiss;
//! use ebm_samplers::tempering::{ParallelTempering, PtState, SwapSchedule, TemperatureLadder};
//! use ebm_samplers::SingleSiteMetropolis;
//!
//! let model = CurieWeiss::new(20, 1.0, 0.0).unwrap();
//! let ladder = TemperatureLadder::geometric(model, 0.3, 6).unwrap();
//! let rungs = (0..6).map(|_| ladder.model().new_state(32)).collect();
//! let mut state = PtState::new(rungs, 7).unwrap();
//! let pt = ParallelTempering::new(SingleSiteMetropolis::new(1), SwapSchedule::DeterministicEvenOdd);
//! let report = pt.run(&ladder, &mut state, 2000, Par::Seq, ()).unwrap();
//! assert_eq!(report.diagnostics.rounds, 2000);
//! for w in &report.warnings {
//!     eprintln!("warning: {w}");
//! }
//! ```

use super::{Exchange, IndexProcess, ParallelTempering, PtDiagnostics, PtState};
use ebm_core::{Kernel, Observer, Par, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The systems (chains per rung) whose replica index process a run records by default: the
/// systems are independent, so the first 64 estimate its autocorrelation times without bias,
/// in memory bounded by 64 × rungs × rounds whatever the number of chains.
pub const INDEX_SYSTEMS: usize = 64;

/// Rounds a PT run must last, in exponential autocorrelation times of its replica index
/// process, before its samples are taken as equilibrated: Sokal's conservative thermalisation
/// time, the criterion of Béreux et al., *Fast training and sampling of RBMs*, SI B.1.
pub const THERMALISATION_TAU_EXP: f64 = 20.0;

/// Why the samples of a PT run should not be trusted ([`PtReport::warnings`]). The
/// [`Display`](fmt::Display) text is the sentence the command line prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PtWarning {
    /// No replica went from rung 0 to the target and back: the ladder did not communicate, so
    /// the target's chains never met what rung 0 explores.
    NoRoundTrip {
        /// Rounds run.
        rounds: u64,
    },
    /// The run lasted fewer than [`THERMALISATION_TAU_EXP`] exponential autocorrelation times
    /// of its replica index process.
    RunTooShort {
        /// Rounds run.
        rounds: u64,
        /// The exponential autocorrelation time of the index process, in rounds.
        tau_exp: f64,
    },
}

impl fmt::Display for PtWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PtWarning::NoRoundTrip { rounds } => write!(
                f,
                "no replica completed a round trip between rung 0 and the target in {rounds} \
                 rounds: the ladder did not communicate, so the target's samples are not \
                 equilibrated"
            ),
            PtWarning::RunTooShort { rounds, tau_exp } => write!(
                f,
                "the run lasted {rounds} rounds, fewer than {THERMALISATION_TAU_EXP} exponential \
                 autocorrelation times of the replica index process (tau_exp = {tau_exp:.1} \
                 rounds): it may not have equilibrated; run at least {} rounds",
                (THERMALISATION_TAU_EXP * tau_exp).ceil()
            ),
        }
    }
}

/// What a PT run measured: the exchange diagnostics of every round, the replica index process
/// of its first systems with its autocorrelation times, and the warnings of the rule below.
///
/// The rule: [`PtWarning::NoRoundTrip`] when no replica completed a round trip on a ladder of
/// at least two rungs (a run of no round, or on one rung, has nothing to communicate);
/// [`PtWarning::RunTooShort`] when the run lasted fewer than [`THERMALISATION_TAU_EXP`]
/// exponential times \\(\tau_{\text{exp}}\\) of the index process. A run whose times cannot be
/// measured (too few rounds, or an index that forgets its rung within a round) is judged by its
/// round trips alone.
#[derive(Clone, Debug, PartialEq)]
pub struct PtReport {
    /// Acceptance rates per pair, communication barrier, round trips.
    pub diagnostics: PtDiagnostics,
    /// The replica index process of the first systems (every round of the run).
    pub index: IndexProcess,
    /// Exponential autocorrelation time of the index process, in rounds (`None`: not
    /// measurable from this run).
    pub index_tau_exp: Option<f64>,
    /// Integrated autocorrelation time of the index process, in rounds (`None`: not
    /// measurable).
    pub index_tau_int: Option<f64>,
    /// Why the run's samples should not be trusted; empty when nothing was detected.
    pub warnings: Vec<PtWarning>,
}

impl PtReport {
    /// The report of a run from what it recorded: its times measured from `index`, its
    /// warnings by the rule of the type's documentation, over the `diagnostics.rounds` rounds.
    pub fn new(diagnostics: PtDiagnostics, index: IndexProcess) -> Self {
        let (index_tau_exp, index_tau_int) = index.measured_times();
        let rounds = diagnostics.rounds;
        let mut warnings = Vec::new();
        if diagnostics.round_trips == 0 && !diagnostics.proposed.is_empty() {
            warnings.push(PtWarning::NoRoundTrip { rounds });
        }
        if let Some(tau_exp) =
            index_tau_exp.filter(|&t| (rounds as f64) < THERMALISATION_TAU_EXP * t)
        {
            warnings.push(PtWarning::RunTooShort { rounds, tau_exp });
        }
        Self {
            diagnostics,
            index,
            index_tau_exp,
            index_tau_int,
            warnings,
        }
    }

    /// Whether no warning was raised.
    pub fn is_trusted(&self) -> bool {
        self.warnings.is_empty()
    }

    /// The run record's summary of this report: `schedule` names the swap schedule (`deo`,
    /// `seo`, `sweep`, ...) and `rung0` what explores rung 0 (`gibbs`, `exact`, `static-mh`,
    /// `kernel`); the ladder's fields (`betas`, `checkpoint_updates`, `reference`,
    /// `rung0_acceptance`) are left empty for the caller, who knows the ladder.
    pub fn summary(&self, schedule: &str, rung0: &str) -> PtSummary {
        let finite = |x: f64| x.is_finite().then_some(x);
        let diagnostics = &self.diagnostics;
        PtSummary {
            schedule: schedule.into(),
            betas: Vec::new(),
            checkpoint_updates: None,
            reference: None,
            acceptance_rates: diagnostics
                .acceptance_rates()
                .into_iter()
                .map(finite)
                .collect(),
            communication_barrier: finite(diagnostics.communication_barrier()),
            round_trips: diagnostics.round_trips,
            round_trip_rate: diagnostics.round_trip_rate(),
            ideal_deo_round_trip_rate: finite(diagnostics.ideal_deo_round_trip_rate()),
            rung0: rung0.into(),
            rung0_acceptance: None,
            index_tau_exp: self.index_tau_exp,
            index_tau_int: self.index_tau_int,
        }
    }

    /// The warnings as the sentences a user reads.
    pub fn warning_messages(&self) -> Vec<String> {
        self.warnings.iter().map(ToString::to_string).collect()
    }
}

/// A PT run's diagnostics as its run record keeps them ([`PtReport::summary`]): the report's
/// numbers (a non-finite value as `null`) with what names the run (its schedule, what explores
/// rung 0, its ladder).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PtSummary {
    /// `seo`, `deo`, `random-pair`, `lifted` or `sweep`.
    pub schedule: String,
    /// The ladder's inverse temperatures (pt), interpolation coefficients (pt-ref), 1 for
    /// every checkpoint (ptt) and for every RBM of the stack (stacked tempering).
    pub betas: Vec<f64>,
    /// ptt: the training update of the checkpoint at each rung.
    pub checkpoint_updates: Option<Vec<u64>>,
    /// What rung 0 of pt-ref is: fields from data means or the model's own.
    pub reference: Option<String>,
    /// Mean swap acceptance probability of each neighbouring pair (null if never proposed).
    pub acceptance_rates: Vec<Option<f64>>,
    /// \\(\hat\Lambda = \sum_k (1 - \hat a_k)\\).
    pub communication_barrier: Option<f64>,
    /// Round trips completed, summed over systems.
    pub round_trips: u64,
    /// Round trips per system and round.
    pub round_trip_rate: f64,
    /// The DEO round-trip rate under perfect exploration given the acceptance rates.
    pub ideal_deo_round_trip_rate: Option<f64>,
    /// How rung 0 was explored: `gibbs`, `exact` (an independent exact draw every round,
    /// the hidden layer of the first checkpoint enumerated: PTT as in paper 000), or
    /// `static-mh` (a draw of the static sampler of a low-rank first checkpoint, accepted by
    /// Metropolis-Hastings against the checkpoint's own law: exact at any size).
    pub rung0: String,
    /// `static-mh` only: the mean fraction of rung 0's chains that accepted their proposal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rung0_acceptance: Option<f64>,
    /// Exponential autocorrelation time of the replica index process, in rounds (Béreux et
    /// al., *Fast training and sampling of RBMs*), from the first [`INDEX_SYSTEMS`] systems;
    /// null when it could not be estimated.
    pub index_tau_exp: Option<f64>,
    /// Integrated autocorrelation time of the replica index process, in rounds; null when it
    /// could not be estimated.
    pub index_tau_int: Option<f64>,
}

impl<K, B> ParallelTempering<K, B> {
    /// Runs `rounds` rounds of [`ParallelTempering::step`] on `ladder` from `state`, shows the
    /// target's chains (the last rung) to `observer` after every round (rounds numbered from
    /// 1), and returns the [`PtReport`] of these rounds: the diagnostics of every round and
    /// the replica index process of the first [`INDEX_SYSTEMS`] systems.
    ///
    /// The state after the call is the one `rounds` calls of [`ParallelTempering::step`]
    /// leave, bit for bit, whatever `par`; running `n` rounds, then `m`, gives the state of
    /// `n + m` rounds (each report covers its own rounds).
    ///
    /// # Errors
    /// The first error of `observer`; the state then holds the round just observed.
    ///
    /// # Panics
    /// As [`ParallelTempering::step`]: a state whose rungs do not match the ladder.
    pub fn run<L, O>(
        &self,
        ladder: &L,
        state: &mut PtState<L::State>,
        rounds: u64,
        par: Par,
        mut observer: O,
    ) -> Result<PtReport>
    where
        L: Exchange,
        K: Kernel<L::RungModel>,
        B: Kernel<L::RungModel>,
        O: Observer<L::State>,
    {
        let mut diagnostics = PtDiagnostics::new(state.n_chains());
        let mut index = IndexProcess::with_max_systems(INDEX_SYSTEMS);
        for r in 1..=rounds {
            let info = self.step(ladder, state, par);
            diagnostics.record(&info);
            index.record(state);
            let target = state.rungs().last().expect("a PT state has rungs");
            observer.observe(r, target)?;
        }
        Ok(PtReport::new(diagnostics, index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SingleSiteMetropolis;
    use crate::tempering::{SwapSchedule, TemperatureLadder};
    use ebm_core::EnergyModel;
    use ebm_models::CurieWeiss;

    fn pt_on(
        betas: Vec<f64>,
    ) -> (
        TemperatureLadder<CurieWeiss>,
        PtState<nalgebra::DMatrix<f64>>,
    ) {
        let ladder = TemperatureLadder::new(CurieWeiss::new(30, 1.0, 0.0).unwrap(), betas).unwrap();
        let rungs = (0..ladder.betas().len())
            .map(|_| ladder.model().new_state(32))
            .collect();
        (ladder, PtState::new(rungs, 11).unwrap())
    }

    /// `run` leaves the state that repeated `step`s leave, records every round, and its report
    /// is the one built from a hand-written loop.
    #[test]
    fn run_equals_the_hand_written_loop() {
        let pt = ParallelTempering::new(
            SingleSiteMetropolis::new(1),
            SwapSchedule::DeterministicEvenOdd,
        );
        let (ladder, start) = pt_on(vec![0.2, 0.5, 0.8, 1.2]);
        let mut by_run = start.clone();
        let mut seen = 0;
        let report = pt
            .run(
                &ladder,
                &mut by_run,
                300,
                Par::Seq,
                ebm_core::FnObserver(|r: u64, _: &nalgebra::DMatrix<f64>| {
                    seen = r;
                    Ok(())
                }),
            )
            .unwrap();
        let mut by_hand = start;
        let mut diagnostics = PtDiagnostics::new(32);
        let mut index = IndexProcess::with_max_systems(INDEX_SYSTEMS);
        for _ in 0..300 {
            diagnostics.record(&pt.step(&ladder, &mut by_hand, Par::Seq));
            index.record(&by_hand);
        }
        assert_eq!(seen, 300);
        assert_eq!(by_run, by_hand);
        assert_eq!(report, PtReport::new(diagnostics, index));
        assert_eq!(report.diagnostics.rounds, 300);
    }

    /// A ladder that communicates, run long enough, raises nothing; the same ladder run for a
    /// few rounds is flagged too short; a ladder with a gap no swap crosses completes no round
    /// trip and is flagged (the negative controls).
    #[test]
    fn warnings_follow_the_rule() {
        let pt = ParallelTempering::new(
            SingleSiteMetropolis::new(1),
            SwapSchedule::DeterministicEvenOdd,
        );
        let betas: Vec<f64> = (0..12).map(|k| 0.2 + 0.1 * k as f64).collect();
        let (ladder, mut state) = pt_on(betas.clone());
        let long = pt.run(&ladder, &mut state, 4000, Par::Seq, ()).unwrap();
        assert!(long.is_trusted(), "{:?}", long.warnings);
        let tau = long.index_tau_exp.expect("measured");
        assert!(tau > 1.0 && 20.0 * tau < 4000.0, "tau_exp {tau}");

        let (ladder, mut state) = pt_on(betas);
        let short = pt.run(&ladder, &mut state, 50, Par::Seq, ()).unwrap();
        assert!(
            short
                .warnings
                .iter()
                .any(|w| matches!(w, PtWarning::RunTooShort { rounds: 50, .. })),
            "{:?} (tau_exp {:?})",
            short.warnings,
            short.index_tau_exp
        );

        // Between beta 0.2 and beta 50 the energies of a 30-spin Curie-Weiss model differ by
        // tens of nats: no exchange is ever accepted.
        let (ladder, mut state) = pt_on(vec![0.2, 50.0]);
        let stuck = pt.run(&ladder, &mut state, 500, Par::Seq, ()).unwrap();
        assert_eq!(stuck.diagnostics.round_trips, 0);
        assert_eq!(stuck.warnings, vec![PtWarning::NoRoundTrip { rounds: 500 }]);
    }

    /// The summary carries the report's numbers, a pair never proposed (the ideal DEO rate
    /// without any rate) as `None`, the names given, and the ladder's fields empty.
    #[test]
    fn the_summary_carries_the_report() {
        let pt = ParallelTempering::new(
            SingleSiteMetropolis::new(1),
            SwapSchedule::DeterministicEvenOdd,
        );
        let (ladder, mut state) = pt_on(vec![0.2, 0.6, 1.0]);
        let report = pt.run(&ladder, &mut state, 200, Par::Seq, ()).unwrap();
        let s = report.summary("deo", "gibbs");
        let d = &report.diagnostics;
        let rates: Vec<Option<f64>> = d.acceptance_rates().into_iter().map(Some).collect();
        assert_eq!(s.acceptance_rates, rates);
        assert_eq!(s.communication_barrier, Some(d.communication_barrier()));
        assert_eq!(
            (s.round_trips, s.round_trip_rate),
            (d.round_trips, d.round_trip_rate())
        );
        assert_eq!(
            (s.index_tau_exp, s.index_tau_int),
            (report.index_tau_exp, report.index_tau_int)
        );
        assert_eq!((s.schedule.as_str(), s.rung0.as_str()), ("deo", "gibbs"));
        assert!(s.betas.is_empty() && s.checkpoint_updates.is_none() && s.reference.is_none());

        // One round of DEO proposes one of the two pairs: the other's rate is undefined, and
        // so is the barrier.
        let (ladder, mut state) = pt_on(vec![0.2, 0.6, 1.0]);
        let none = pt.run(&ladder, &mut state, 1, Par::Seq, ()).unwrap();
        let s = none.summary("deo", "gibbs");
        assert_eq!(s.acceptance_rates.len(), 2);
        assert_eq!(s.acceptance_rates.iter().filter(|r| r.is_none()).count(), 1);
        assert_eq!(s.communication_barrier, None);
        assert_eq!(
            none.warning_messages(),
            none.warnings
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>()
        );
        let stuck = PtReport {
            warnings: vec![PtWarning::NoRoundTrip { rounds: 3 }],
            ..none
        };
        assert_eq!(
            stuck.warning_messages(),
            vec![PtWarning::NoRoundTrip { rounds: 3 }.to_string()]
        );
    }

    /// The warnings print the command line's sentences.
    #[test]
    fn warnings_read_as_sentences() {
        let w = PtWarning::RunTooShort {
            rounds: 10,
            tau_exp: 2.04,
        };
        assert_eq!(
            w.to_string(),
            "the run lasted 10 rounds, fewer than 20 exponential autocorrelation times of the \
             replica index process (tau_exp = 2.0 rounds): it may not have equilibrated; run at \
             least 41 rounds"
        );
        assert!(
            PtWarning::NoRoundTrip { rounds: 3 }
                .to_string()
                .starts_with(
                    "no replica completed a round trip between rung 0 and the target in 3"
                )
        );
    }
}

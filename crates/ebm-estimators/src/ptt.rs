//! \\(\log Z\\) of every rung of a ladder from parallel tempering and Bennett's acceptance
//! ratio: on a trajectory of training checkpoints ([`ebm_samplers::tempering::TrajectoryLadder`])
//! this is the PTT + BAR estimator of Béreux et al., *Fast training and sampling of RBMs*
//! (paper 000, §3.3), on a temperature ladder the classic PT + BAR.
//!
//! The run is a burn-in, then recorded rounds after each of which BAR's energy differences are
//! taken ([`PairAccumulator::record_pt`]); its length follows a [`PttPlan`]. The plan can be
//! adaptive: the burn-in is then extended to [`trust::BURN_IN_TAU_EXP`] exponential
//! autocorrelation times of the replica index process measured during it, and the recorded
//! rounds to [`trust::RECORDED_TAU_INT`] integrated times measured at the end of the burn-in,
//! each at most [`MAX_EXTENSION`] times the plan. Whatever the plan, the estimate carries
//! [`trust::run_length_warning`] of the times measured on the recorded rounds, besides BAR's
//! own warnings.

use crate::trust;
use crate::{DescribeLadder, LadderEstimate, LogZEstimate, PairAccumulator};
use ebm_core::{EnergyModel, Error, Kernel, Par, ProductCache, Result};
use ebm_samplers::tempering::{
    INDEX_SYSTEMS, IndexProcess, Ladder, ParallelTempering, PtDiagnostics, PtState,
};
use serde::{Deserialize, Serialize};

/// The longest adaptive burn-in or recording, in multiples of its plan.
pub const MAX_EXTENSION: u64 = 10;

/// How long a PT + BAR run lasts: rounds of burn-in, then recorded rounds, either as given or
/// extended with the measured index process (see [`ptt_log_z`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PttPlan {
    /// Rounds of burn-in (the least, when adaptive).
    pub burn_in: u64,
    /// Recorded rounds (the least, when adaptive).
    pub recorded: u64,
    /// Whether the burn-in is extended to [`trust::BURN_IN_TAU_EXP`] exponential times.
    pub adaptive_burn_in: bool,
    /// Whether the recorded rounds are extended to [`trust::RECORDED_TAU_INT`] integrated
    /// times.
    pub adaptive: bool,
}

impl PttPlan {
    /// The default plan for a ladder of `rungs` rungs: a burn-in of \\(\max(10K, 200)\\) rounds
    /// (or `burn_in`, which is then not extended) and \\(\max(100K, 1800)\\) recorded rounds,
    /// both extended with the measured index process.
    pub fn adaptive(rungs: usize, burn_in: Option<u64>) -> Self {
        let k = rungs as u64;
        Self {
            burn_in: burn_in.unwrap_or((10 * k).max(200)),
            recorded: (100 * k).max(1800),
            adaptive_burn_in: burn_in.is_none(),
            adaptive: true,
        }
    }

    /// `rounds` rounds in all, of which `burn_in` (by default a tenth) are burn-in; nothing is
    /// extended.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when the burn-in leaves no recorded round.
    pub fn fixed(rounds: u64, burn_in: Option<u64>) -> Result<Self> {
        let b = burn_in.unwrap_or(rounds / 10);
        if b >= rounds {
            return Err(Error::InvalidParameter {
                name: "burn_in".into(),
                reason: format!(
                    "{b}: must be less than the {rounds} rounds of the run (the rounds after it \
                     are the samples)"
                ),
            });
        }
        Ok(Self {
            burn_in: b,
            recorded: rounds - b,
            adaptive_burn_in: false,
            adaptive: false,
        })
    }

    /// Checks that a run of `n_chains` systems can have an error bar: BAR's jackknife needs
    /// at least 2 recorded rounds or 8 chains.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] otherwise.
    pub fn check(&self, n_chains: usize) -> Result<()> {
        if self.recorded < 2 && n_chains < 8 {
            return Err(Error::InvalidParameter {
                name: "rounds".into(),
                reason: format!(
                    "{}: the error bar needs at least 2 recorded rounds or 8 chains",
                    self.burn_in + self.recorded
                ),
            });
        }
        Ok(())
    }

    /// The most rounds of burn-in and of recording the plan can run.
    pub fn longest(&self) -> (u64, u64) {
        let longest =
            |adaptive: bool, n: u64| n.saturating_mul(if adaptive { MAX_EXTENSION } else { 1 });
        (
            longest(self.adaptive_burn_in, self.burn_in),
            longest(self.adaptive, self.recorded),
        )
    }

    /// The memory, in bytes, that the run's records can grow to on `rungs` rungs of
    /// `n_chains` systems: the replica index process over the longest run
    /// ([`IndexProcess::bytes`]) and BAR's works (an `f64` per pair of rungs, chain and
    /// direction each recorded round, and a copy of them for the estimate).
    pub fn record_bytes(&self, rungs: usize, n_chains: usize) -> u128 {
        let (burn_in, recorded) = self.longest();
        let index = IndexProcess::bytes(
            u128::from(burn_in).saturating_add(recorded.into()),
            rungs,
            n_chains.min(INDEX_SYSTEMS),
        );
        let works = [
            recorded.into(),
            rungs.saturating_sub(1) as u128,
            n_chains as u128,
            2 * 2 * 8,
        ]
        .into_iter()
        .fold(1u128, u128::saturating_mul);
        index.saturating_add(works)
    }

    /// The burn-in: the plan's, extended (when adaptive) to [`trust::BURN_IN_TAU_EXP`]
    /// exponential times `tau_exp`.
    fn burn_in_for(&self, tau_exp: Option<f64>) -> u64 {
        if !self.adaptive_burn_in {
            return self.burn_in;
        }
        let needed = (trust::BURN_IN_TAU_EXP * tau_exp.unwrap_or(0.0)).ceil() as u64;
        needed.clamp(self.burn_in, self.burn_in.saturating_mul(MAX_EXTENSION))
    }

    /// The recorded rounds: the plan's, extended (when adaptive) to [`trust::RECORDED_TAU_INT`]
    /// integrated times `tau_int`.
    fn recorded_for(&self, tau_int: Option<f64>) -> u64 {
        if !self.adaptive {
            return self.recorded;
        }
        let needed = (trust::RECORDED_TAU_INT * tau_int.unwrap_or(0.0)).ceil() as u64;
        needed.clamp(self.recorded, self.recorded.saturating_mul(MAX_EXTENSION))
    }
}

/// The result of [`ptt_log_z`].
#[derive(Clone, Debug, PartialEq)]
pub struct PttEstimate {
    /// BAR's \\(\log\hat Z\\) of the last rung with its warnings (BAR's and the run length's),
    /// of every rung, and of every pair.
    pub ladder: LadderEstimate,
    /// Rounds of burn-in run.
    pub burn_in: u64,
    /// Rounds recorded.
    pub recorded: u64,
    /// Exchange diagnostics of every round (burn-in included).
    pub diagnostics: PtDiagnostics,
    /// Exponential autocorrelation time of the index process over the recorded rounds, in
    /// rounds (`None`: not measurable).
    pub index_tau_exp: Option<f64>,
    /// Integrated autocorrelation time likewise.
    pub index_tau_int: Option<f64>,
}

/// \\(\log Z\\) of every rung of `ladder` by PT + BAR (on a trajectory of checkpoints, the
/// PTT + BAR estimator of Béreux et al., *Fast training and sampling of RBMs*), from `state`
/// (whose rung 0 should hold draws of rung 0, e.g. exact ones, and whose other rungs any
/// start), chained from `log_z0`, the \\(\log Z\\) of rung 0 (with its error, if any):
/// `plan.burn_in` rounds of `pt` (extended when the plan is adaptive), then recorded rounds.
/// `progress(done, planned)` is called after every round (`planned` grows when the plan is
/// extended).
///
/// An adaptive plan extends the burn-in to [`trust::BURN_IN_TAU_EXP`] exponential
/// autocorrelation times of the replica index process measured during it, and the recorded
/// rounds to [`trust::RECORDED_TAU_INT`] integrated times measured at the end of the burn-in,
/// each at most [`MAX_EXTENSION`] times the plan.
///
/// The estimate carries BAR's warnings ([`PairAccumulator::bar`]) and the run-length warning
/// of the index process measured on the recorded rounds ([`trust::run_length_warning`]).
/// The result depends on the initial state and its streams, not on `par`.
///
/// # Errors
/// [`Error::InvalidParameter`] for a plan that cannot give an error bar ([`PttPlan::check`]);
/// [`Error::ShapeMismatch`] for a state whose rungs do not match the ladder; BAR's errors.
pub fn ptt_log_z<L, K, B>(
    pt: &ParallelTempering<K, B>,
    ladder: &L,
    state: &mut PtState<<L::Model as EnergyModel>::State>,
    log_z0: &LogZEstimate,
    plan: &PttPlan,
    par: Par,
    mut progress: impl FnMut(u64, u64),
) -> Result<PttEstimate>
where
    L: Ladder<Model: ProductCache> + DescribeLadder,
    K: Kernel<L::Model>,
    B: Kernel<L::Model>,
{
    plan.check(state.n_chains())?;
    Error::check_len("rungs of the state", ladder.n_rungs(), state.rungs().len())?;
    let mut diagnostics = PtDiagnostics::new(state.n_chains());
    let mut pairs = PairAccumulator::new(ladder.n_rungs())?;
    let mut round = |state: &mut PtState<_>, index: &mut IndexProcess| {
        diagnostics.record(&pt.step(ladder, state, par));
        index.record(state);
    };
    // Burn-in, extended (when adaptive) once its planned rounds have measured the index.
    let mut early = IndexProcess::with_max_systems(INDEX_SYSTEMS);
    let (mut burn_in, mut target) = (0, plan.burn_in);
    while burn_in < target {
        round(state, &mut early);
        burn_in += 1;
        if burn_in == plan.burn_in {
            target = plan.burn_in_for(early.measured_times().0);
        }
        progress(burn_in, target + plan.recorded);
    }
    let recorded = plan.recorded_for(early.measured_times().1);
    let mut index = IndexProcess::with_max_systems(INDEX_SYSTEMS);
    for r in 1..=recorded {
        round(state, &mut index);
        pairs.record_pt(ladder, state, par)?;
        progress(burn_in + r, burn_in + recorded);
    }
    let (tau_exp, tau_int) = index.measured_times();
    let mut estimate = pairs.bar(log_z0)?;
    if let Some(w) = trust::run_length_warning(burn_in, recorded, tau_exp, tau_int) {
        estimate.estimate.warn(w);
    }
    Ok(PttEstimate {
        ladder: estimate,
        burn_in,
        recorded,
        diagnostics,
        index_tau_exp: tau_exp,
        index_tau_int: tau_int,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        let p = PttPlan::adaptive(5, None);
        assert_eq!((p.burn_in, p.recorded), (200, 1800));
        assert_eq!(p.longest(), (2000, 18000));
        assert_eq!(p.burn_in_for(Some(50.0)), 1000);
        assert_eq!(p.burn_in_for(Some(500.0)), 2000);
        assert_eq!(p.recorded_for(Some(1.0)), 1800);
        assert_eq!(p.recorded_for(Some(30.0)), 3000);
        let given = PttPlan::adaptive(30, Some(7));
        assert_eq!((given.burn_in, given.recorded), (7, 3000));
        assert_eq!(given.burn_in_for(Some(50.0)), 7);
        let f = PttPlan::fixed(400, Some(50)).unwrap();
        assert_eq!((f.burn_in, f.recorded, f.longest()), (50, 350, (50, 350)));
        assert_eq!(f.recorded_for(Some(30.0)), 350);
        assert_eq!(PttPlan::fixed(100, None).unwrap().burn_in, 10);
        assert!(PttPlan::fixed(10, Some(10)).is_err());
        let one = PttPlan::fixed(10, Some(9)).unwrap();
        assert!(one.check(4).is_err());
        assert!(one.check(8).is_ok());
    }
}

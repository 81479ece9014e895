//! What the tempering samplers of the command line share (`ebm sample --sampler pt / pt-ref /
//! ptt / stacked`, `ebm loglik ptt`, `ebm train --negative pt`, the custom-model commands of
//! [`crate::custom`]): the ladder options and their defaults, the swap schedule named on the
//! command line, the checkpoints kept as rungs, and the record's summary of a [`PtReport`].

use std::path::Path;

use ebm_samplers::tempering::{self, PtReport, SwapSchedule, TemperatureSpec};
use serde::{Deserialize, Serialize};

use crate::cli::ScheduleArg;
use crate::error::{CliError, Result};

/// Default number of rungs of `sample --sampler pt | pt-ref` and `train --negative pt`.
pub(crate) const DEFAULT_RUNGS: usize = TemperatureSpec::DEFAULT_RUNGS;

/// The temperature ladder of `--betas`, or of `--rungs` (default
/// [`TemperatureSpec::DEFAULT_RUNGS`]) geometric from `--beta-min` (default
/// [`TemperatureSpec::DEFAULT_BETA_MIN`]) to 1.
fn temperature_spec(
    rungs: Option<usize>,
    betas: Option<&[f64]>,
    beta_min: Option<f64>,
) -> TemperatureSpec {
    match betas {
        Some(b) => TemperatureSpec::Betas(b.to_vec()),
        None => TemperatureSpec::Geometric {
            rungs: rungs.unwrap_or(DEFAULT_RUNGS),
            beta_min: beta_min.unwrap_or(TemperatureSpec::DEFAULT_BETA_MIN),
        },
    }
}

/// The option behind an error of [`TemperatureSpec::check`], as the user gave it.
fn ladder_error(e: ebm_core::Error, rungs: Option<usize>, beta_min: Option<f64>) -> CliError {
    match e {
        ebm_core::Error::InvalidParameter { name, reason } => {
            let option = match name.as_str() {
                "rungs" => format!("--rungs {}", rungs.unwrap_or(DEFAULT_RUNGS)),
                "beta_min" => format!(
                    "--beta-min {}",
                    beta_min.unwrap_or(TemperatureSpec::DEFAULT_BETA_MIN)
                ),
                _ => "--betas".into(),
            };
            CliError::new(format!("{option}: {reason}"))
        }
        e => e.into(),
    }
}

/// Checks the ladder options of `sample --sampler pt | pt-ref | ptt` and `train --negative
/// pt` ([`TemperatureSpec::check`]): 2 to [`TemperatureSpec::MAX_RUNGS`] rungs (`--rungs`) or
/// inverse temperatures (`--betas`), and `--beta-min` in \\((0, 1)\\). The values themselves
/// are checked by the ladder.
pub(crate) fn check_ladder_sizes(
    rungs: Option<usize>,
    betas: Option<&[f64]>,
    beta_min: Option<f64>,
) -> Result<()> {
    temperature_spec(rungs, betas, beta_min)
        .check()
        .map_err(|e| ladder_error(e, rungs, beta_min))
}

/// The inverse temperatures of a temperature ladder: `--betas`, or `--rungs` geometric from
/// `--beta-min` to 1 ([`TemperatureSpec::betas`]).
pub(crate) fn temperature_betas(
    rungs: Option<usize>,
    betas: Option<&[f64]>,
    beta_min: Option<f64>,
) -> Result<Vec<f64>> {
    temperature_spec(rungs, betas, beta_min)
        .betas()
        .map_err(|e| ladder_error(e, rungs, beta_min))
}

/// Parallel-tempering diagnostics of a run ([`PtReport`]).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct PtSummary {
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
    /// Exponential and integrated autocorrelation times of the replica index process, in
    /// rounds (Béreux et al., *Fast training and sampling of RBMs*), from the first 64 systems; null when they could
    /// not be estimated.
    pub index_tau_exp: Option<f64>,
    pub index_tau_int: Option<f64>,
}

/// The swap schedule of `--schedule`, and its name in the record.
pub(crate) fn schedule_of(s: ScheduleArg) -> (SwapSchedule, &'static str) {
    match s {
        ScheduleArg::Seo => (SwapSchedule::StochasticEvenOdd, "seo"),
        ScheduleArg::Deo => (SwapSchedule::DeterministicEvenOdd, "deo"),
        ScheduleArg::RandomPair => (SwapSchedule::RandomPair, "random-pair"),
        ScheduleArg::Lifted => (SwapSchedule::Lifted, "lifted"),
        ScheduleArg::Sweep => (SwapSchedule::Sweep, "sweep"),
    }
}

/// How a PT run names its swap schedule and what explores its rung 0, as its record says
/// (`schedule`, `rung0`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PtNames<'a> {
    /// The swap schedule (`deo`, `seo`, `sweep`, ...).
    pub schedule: &'a str,
    /// What explores rung 0 (`gibbs`, `exact`, `static-mh`, `kernel`).
    pub rung0: &'a str,
}

/// The record's summary of a PT run (the betas left empty) and its warnings, as sentences.
pub(crate) fn pt_summary(report: &PtReport, names: PtNames<'_>) -> (PtSummary, Vec<String>) {
    let finite = |x: f64| x.is_finite().then_some(x);
    let diagnostics = &report.diagnostics;
    let summary = PtSummary {
        schedule: names.schedule.into(),
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
        rung0: names.rung0.into(),
        rung0_acceptance: None,
        index_tau_exp: report.index_tau_exp,
        index_tau_int: report.index_tau_int,
    };
    let warnings = report.warnings.iter().map(ToString::to_string).collect();
    (summary, warnings)
}

/// The indices of the checkpoints of `file` (`n` of them) kept as rungs: all of them, or
/// `--rungs` evenly spaced ones ([`ebm_samplers::tempering::kept_checkpoints`]).
pub(crate) fn kept_checkpoints(n: usize, rungs: Option<usize>, file: &Path) -> Result<Vec<usize>> {
    tempering::kept_checkpoints(n, rungs).map_err(|e| match (e, rungs) {
        (ebm_core::Error::InvalidParameter { name, .. }, Some(k)) if name == "rungs" && k > n => {
            CliError::new(format!(
                "--rungs {k}: {} has only {n} checkpoints",
                file.display()
            ))
        }
        (ebm_core::Error::InvalidParameter { name, reason }, Some(k)) if name == "rungs" => {
            CliError::new(format!("--rungs {k}: {reason}"))
        }
        (ebm_core::Error::InvalidParameter { reason, .. }, _) => {
            CliError::new(format!("{}: {reason}", file.display()))
        }
        (e, _) => e.into(),
    })
}

//! What the tempering samplers of the command line share (`ebm sample --sampler pt / pt-ref /
//! ptt / stacked`, `ebm loglik ptt`, `ebm train --negative pt`, the custom-model commands of
//! [`crate::custom`]): the ladder options and their defaults, the swap schedule named on the
//! command line, and the checkpoints kept as rungs.

use std::path::Path;

use ebm_samplers::tempering::{self, SwapSchedule, TemperatureSpec};

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

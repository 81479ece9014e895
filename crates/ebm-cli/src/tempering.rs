//! What the tempering samplers of the command line share (`ebm sample --sampler pt / pt-ref /
//! ptt / stacked`, `ebm loglik ptt`, `ebm train --negative pt`, the custom-model commands of
//! [`crate::custom`]): the ladder options and their defaults, the swap schedule named on the
//! command line, the checkpoints kept as rungs, and the record's summary of a [`PtReport`].

use std::path::Path;

use ebm_samplers::tempering::{PtReport, SwapSchedule, geometric_betas};
use ebm_train::Tempered;
use serde::{Deserialize, Serialize};

use crate::cli::ScheduleArg;
use crate::error::{CliError, Result, bail};

/// Default number of rungs of `sample --sampler pt | pt-ref` and `train --negative pt`.
pub(crate) const DEFAULT_RUNGS: usize = 10;
/// Default smallest inverse temperature of their geometric ladder.
pub(crate) const DEFAULT_BETA_MIN: f64 = 0.1;

/// Checks the ladder options of `sample --sampler pt | pt-ref | ptt` and `train --negative
/// pt`: 2 to [`Tempered::MAX_RUNGS`] rungs (`--rungs`) or inverse temperatures (`--betas`), and
/// `--beta-min` in \\((0, 1)\\). The values themselves are checked by the ladder.
pub(crate) fn check_ladder_sizes(
    rungs: Option<usize>,
    betas: Option<&[f64]>,
    beta_min: Option<f64>,
) -> Result<()> {
    let max = Tempered::MAX_RUNGS;
    if let Some(k) = rungs
        && !(2..=max).contains(&k)
    {
        bail!("--rungs {k}: parallel tempering needs 2 to {max} rungs");
    }
    if let Some(b) = betas
        && !(2..=max).contains(&b.len())
    {
        bail!(
            "--betas: parallel tempering needs 2 to {max} inverse temperatures, got {}",
            b.len()
        );
    }
    if let Some(b) = beta_min
        && !(b > 0.0 && b < 1.0)
    {
        bail!("--beta-min {b}: the smallest inverse temperature must be in (0, 1)");
    }
    Ok(())
}

/// The inverse temperatures of a temperature ladder: `--betas`, or `--rungs` (default
/// [`DEFAULT_RUNGS`]) geometric from `--beta-min` (default [`DEFAULT_BETA_MIN`]) to 1
/// ([`geometric_betas`]), after [`check_ladder_sizes`].
pub(crate) fn temperature_betas(
    rungs: Option<usize>,
    betas: Option<&[f64]>,
    beta_min: Option<f64>,
) -> Result<Vec<f64>> {
    check_ladder_sizes(rungs, betas, beta_min)?;
    match betas {
        Some(b) => Ok(b.to_vec()),
        None => geometric_betas(
            beta_min.unwrap_or(DEFAULT_BETA_MIN),
            rungs.unwrap_or(DEFAULT_RUNGS),
        )
        .map_err(|e| CliError::new(format!("--beta-min: {e}"))),
    }
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

/// The indices of the checkpoints kept as rungs: all of them, or `rungs` evenly spaced ones
/// (rounded to the nearest index), always the first and the last.
pub(crate) fn kept_checkpoints(n: usize, rungs: Option<usize>, file: &Path) -> Result<Vec<usize>> {
    if n < 2 {
        bail!(
            "{}: trajectory tempering needs at least 2 checkpoints, the file has {n}",
            file.display()
        );
    }
    let Some(k) = rungs else {
        return Ok((0..n).collect());
    };
    if k > n {
        bail!("--rungs {k}: {} has only {n} checkpoints", file.display());
    }
    // i (n - 1) / (k - 1), rounded; strictly increasing because k <= n.
    Ok((0..k)
        .map(|i| (2 * i * (n - 1) + (k - 1)) / (2 * (k - 1)))
        .collect())
}

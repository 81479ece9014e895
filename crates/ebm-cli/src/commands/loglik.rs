//! `ebm loglik`: \\(\log Z\\) of a model and the log-likelihood of data, exactly by
//! enumeration (`exact`) or estimated with an error bar by annealed importance sampling
//! (`ais`, `reverse-ais`), trajectory AIS (`tr-ais`) and parallel trajectory tempering with
//! Bennett's acceptance ratio (`ptt`). The estimators are those of `ebm-estimators`; this
//! module loads, checks, dispatches and reports.

use std::path::{Path, PathBuf};

use ebm_core::{EnergyModel, Par, RngStreams, Scalar};
use ebm_data::Dataset;
use ebm_estimators::trust::{self, Sandwich, SandwichCheck};
use ebm_estimators::{
    Ais, Annealer, DescribeLadder, LadderKind, LogZEstimate, Method, PairEstimate, Population,
    PttPlan, RungLogZ, Start, TransitionInfo, Warning, WeightedMean, ptt_log_z,
};
use ebm_models::{Rbm, RbmChains};
use ebm_mpi::Collective;
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Ladder, ParallelTempering, PtState, Rung, TemperatureLadder, TrajectoryLadder, even_betas,
};
use indicatif::ProgressBar;
use rand::Rng;
use serde::Serialize;

use crate::cli::{
    AnnealingPathArgs, EstimatorArgs, ExactArgs, LoglikCommand, PathArg, PttArgs, ReverseAisArgs,
    ReverseStartArg, TrajectoryArgs,
};
use crate::error::{CliError, Result, bail};
use crate::files::{check_outputs, load_dataset};
use crate::models::{
    Enumeration, KindsTask, ModelSummary, RbmTask, UnitLayer, check_chain_memory, describe,
    exact_log_partition, exact_start, free_energies, uniform_start, visible_data, with_kinds,
    with_model, zero_weights,
};
use crate::record::Context;
use crate::tempering::{kept_checkpoints, schedule_of};

/// Runs one `ebm loglik` subcommand.
pub(super) fn execute(c: &LoglikCommand, ctx: &Context) -> Result<()> {
    match c {
        LoglikCommand::Exact(args) => exact(args, ctx),
        LoglikCommand::Ais(args) => annealing(&args.path, &args.common, None, args, ctx),
        LoglikCommand::ReverseAis(args) => {
            annealing(&args.path, &args.common, Some(args), args, ctx)
        }
        LoglikCommand::TrAis(args) => trajectory(&args.trajectory, &args.common, None, args, ctx),
        LoglikCommand::Ptt(args) => {
            trajectory(&args.trajectory, &args.common, Some(args), args, ctx)
        }
    }
}

/// What `ebm loglik exact` reports.
#[derive(Serialize, Debug)]
struct ExactResults {
    model: ModelSummary,
    /// \\(\log Z\\) at \\(\beta = 1\\).
    log_z: f64,
    /// Which layer was enumerated.
    enumeration: Enumeration,
    /// One entry per data file.
    datasets: Vec<DatasetLikelihood>,
}

/// The log-likelihood of one data file.
#[derive(Serialize, Debug)]
struct DatasetLikelihood {
    path: PathBuf,
    n_samples: usize,
    /// \\(\frac1n \sum_j -F(v_j) - \log Z\\) (weighted by the sample weights).
    mean_log_likelihood: f64,
    /// Standard error of the mean over samples.
    standard_error: f64,
    /// Mean visible free energy \\(\frac1n \sum_j F(v_j)\\).
    mean_free_energy: f64,
}

fn exact(args: &ExactArgs, ctx: &Context) -> Result<()> {
    let mut inputs: Vec<&Path> = vec![&args.model];
    inputs.extend(args.data.iter().map(PathBuf::as_path));
    if let Some(out) = &args.out {
        check_outputs(&[out], &inputs)?;
    }
    let data = args
        .data
        .iter()
        .map(|p| load_dataset(p))
        .collect::<Result<Vec<_>>>()?;
    let (model, results) = with_model(&args.model, ExactTask { args, data })?;
    ctx.say(format!(
        "{model}: log Z = {:.10} (enumerating {} {} configurations)",
        results.log_z, results.enumeration.configurations, results.enumeration.layer
    ));
    for d in &results.datasets {
        ctx.say(format!(
            "{}: {} samples, mean log-likelihood {:.6} +- {:.6} (mean free energy {:.6})",
            d.path.display(),
            d.n_samples,
            d.mean_log_likelihood,
            d.standard_error,
            d.mean_free_energy
        ));
    }
    ctx.finish(
        "loglik exact",
        None,
        args,
        &inputs,
        &[],
        &results,
        args.out.as_deref(),
    )
}

struct ExactTask<'a> {
    args: &'a ExactArgs,
    data: Vec<Dataset>,
}

impl RbmTask for ExactTask<'_> {
    type Output = (String, ExactResults);
    type Error = CliError;

    fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
        self,
        rbm: Rbm<V, H>,
        _file: &Path,
    ) -> Result<Self::Output> {
        // Validate every data file before the (possibly long) enumeration.
        let mut checked = Vec::new();
        for (ds, path) in self.data.into_iter().zip(&self.args.data) {
            if ds.n_samples() == 0 {
                bail!("{}: no samples", path.display());
            }
            checked.push((visible_data(rbm.visible(), ds, path)?, path));
        }
        let (log_z, enumeration) = exact_log_partition(&rbm, 1.0, Par::Rayon).map_err(|e| {
            CliError::new(format!(
                "{e}. For a model this large, estimate log Z and the log-likelihood with an \
                 error bar: `ebm loglik ais --model {} --data ...`, or `ebm loglik tr-ais \
                 --trajectory {} --data ...` along its training",
                self.args.model.display(),
                self.args
                    .model
                    .with_extension("trajectory.safetensors")
                    .display()
            ))
        })?;
        if !log_z.is_finite() {
            bail!(
                "{}: log Z is {log_z}, not finite: the model's energies overflow f64 (a \
                 parameter too large)",
                self.args.model.display()
            );
        }
        let datasets = checked
            .into_iter()
            .map(|(ds, path)| {
                let f = free_energies(&rbm, ds.data(), 1.0);
                let neg: Vec<f64> = f.iter().map(|x| -x).collect();
                let WeightedMean {
                    mean: mean_neg_f,
                    std_err: se,
                    ..
                } = WeightedMean::of(&neg, ds.weights());
                let mean_log_likelihood = finite_likelihood(path, mean_neg_f - log_z)?;
                Ok(DatasetLikelihood {
                    path: path.clone(),
                    n_samples: ds.n_samples(),
                    mean_log_likelihood,
                    standard_error: se,
                    mean_free_energy: -mean_neg_f,
                })
            })
            .collect::<Result<_>>()?;
        Ok((
            describe(&rbm),
            ExactResults {
                model: ModelSummary::of(&rbm),
                log_z,
                enumeration,
                datasets,
            },
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// The estimators
// ---------------------------------------------------------------------------------------------

/// Default number of chains of the annealing estimators.
const DEFAULT_CHAINS: usize = 1000;
/// Default number of systems of replicas of `ptt`.
const DEFAULT_PTT_CHAINS: usize = 100;
/// Default burn-in of `reverse-ais --start gibbs`, in Gibbs sweeps.
const DEFAULT_BURN_IN_SWEEPS: u64 = 1000;
/// A reference path is annealed in stretches of at most this many rungs, each built when it is
/// reached, so that a long path never holds all its interpolated models at once.
const SEGMENT_RUNGS: usize = 64;

/// What every estimator of `ebm loglik` reports.
#[derive(Serialize, Debug)]
struct EstimateResults {
    /// `ais`, `reverse-ais`, `tr-ais` or `ptt`.
    estimator: &'static str,
    /// A one-line description of the estimator and its settings.
    description: String,
    /// The target model's unit kinds and sizes.
    model: ModelSummary,
    /// The estimate of \\(\log Z\\) of the target at \\(\beta = 1\\).
    log_z: f64,
    /// Its standard error (delta method for AIS, jackknife over chains for PTT).
    std_err: f64,
    /// Effective sample size behind the estimate (Kish, of the final importance weights for
    /// AIS; the smallest over neighbouring pairs for PTT).
    ess: Option<f64>,
    /// Number of chains (systems of replicas for ptt).
    chains: usize,
    /// Total cost in Gibbs sweeps, summed over chains, burn-in included.
    gibbs_sweeps: u64,
    /// The tractable distribution the path starts from, and its exact \\(\log Z\\).
    start: StartSummary,
    /// The library's typed estimate (method and settings, error-bar kind, cost in kernel
    /// steps).
    estimate: LogZEstimate,
    /// `ais` and `reverse-ais`: the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    annealing: Option<AnnealingSummary>,
    /// `tr-ais` and `ptt`: the checkpoints and their \\(\log Z\\).
    #[serde(skip_serializing_if = "Option::is_none")]
    trajectory: Option<TrajectorySummary>,
    /// `ptt`: the tempering run and the per-pair estimates.
    #[serde(skip_serializing_if = "Option::is_none")]
    ptt: Option<PttSummary>,
    /// One entry per data file.
    datasets: Vec<EstimatedLikelihood>,
}

/// The tractable start of a path.
#[derive(Serialize, Debug)]
struct StartSummary {
    /// What it is.
    description: String,
    /// Its exact \\(\log Z\\).
    log_z: f64,
}

/// The path of `ais` and `reverse-ais`.
#[derive(Serialize, Debug)]
struct AnnealingSummary {
    /// `reference` or `temperature`.
    path: &'static str,
    /// Number of distributions, both ends included.
    rungs: usize,
    /// Gibbs sweeps per distribution.
    sweeps_per_rung: usize,
    /// The reference's visible fields (reference path).
    #[serde(skip_serializing_if = "Option::is_none")]
    reference: Option<String>,
    /// `reverse-ais`: where the samples of the model came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    model_samples: Option<String>,
    /// `reverse-ais --start gibbs`: the burn-in, in Gibbs sweeps per chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    burn_in_sweeps: Option<u64>,
    /// `reverse-ais`: forward AIS on the same path with as many chains, and the check of the
    /// sandwich AIS <= log Z <= reverse AIS (a gap or an inversion beyond 3 combined standard
    /// errors warns both estimates).
    #[serde(skip_serializing_if = "Option::is_none")]
    sandwich: Option<SandwichSummary>,
}

/// The forward half of the AIS / reverse-AIS sandwich.
#[derive(Serialize, Debug)]
struct SandwichSummary {
    /// The forward AIS estimate (a stochastic lower bound), with the sandwich's warning.
    ais: LogZEstimate,
    /// [`ebm_estimators::trust::sandwich`]: the verdict (`consistent`, `gap`, `inverted`), the
    /// gap reverse minus forward in nats and in combined standard errors.
    check: SandwichCheck,
}

/// What `reverse-ais` calls exact draws of the model.
const EXACT_DRAWS: &str = "exact draws by enumeration";

/// The error of `reverse-ais` when the model cannot be enumerated for exact draws.
fn reverse_start_error(start: Option<ReverseStartArg>, e: CliError) -> CliError {
    match start {
        Some(_) => CliError::new(format!("--start exact: {e}")),
        None => CliError::new(format!(
            "reverse AIS needs equilibrium draws of the model, and by default it draws them \
             exactly by enumeration, which is not possible here ({e}). Give samples of the model \
             with --start samples --samples FILE (e.g. from `ebm sample --sampler pt`), or ask \
             for --start gibbs; both are flagged 'start not at equilibrium', since their \
             equilibrium cannot be checked"
        )),
    }
}

/// The rungs of `tr-ais` and `ptt`.
#[derive(Serialize, Debug)]
struct TrajectorySummary {
    /// The training update of every rung (`null` for a `--model` appended after the last
    /// checkpoint).
    updates: Vec<Option<u64>>,
    /// \\(\log Z\\) of every rung with its standard error (rung 0 exact).
    log_z: Vec<RungLogZ>,
}

/// The tempering run of `ptt`.
#[derive(Serialize, Debug)]
struct PttSummary {
    /// `seo`, `deo`, `random-pair` or `lifted`.
    schedule: &'static str,
    /// Rounds run.
    rounds: u64,
    /// Rounds discarded before recording.
    burn_in: u64,
    /// Exponential autocorrelation time of the replica index process over the recorded
    /// rounds (of its first systems), in rounds.
    index_tau_exp: Option<f64>,
    /// Its integrated autocorrelation time.
    index_tau_int: Option<f64>,
    /// Mean swap acceptance probability of each neighbouring pair.
    acceptance_rates: Vec<Option<f64>>,
    /// BAR estimate of \\(\log(Z_{t+1}/Z_t)\\) for each neighbouring pair.
    pairs: Vec<PairEstimate>,
}

/// The log-likelihood of one data file under an estimated \\(\log Z\\).
#[derive(Serialize, Debug)]
struct EstimatedLikelihood {
    path: PathBuf,
    n_samples: usize,
    /// \\(\frac1n \sum_j -F(v_j) - \log \hat Z\\) (weighted by the sample weights).
    mean_log_likelihood: f64,
    /// \\(\sqrt{\mathrm{se}_{\text{data}}^2 + \mathrm{se}_{\log Z}^2}\\).
    standard_error: f64,
    /// Standard error of the mean of \\(-F(v)\\) over the samples.
    data_standard_error: f64,
    /// Standard error of \\(\log \hat Z\\).
    log_z_standard_error: f64,
    /// Mean visible free energy \\(\frac1n \sum_j F(v_j)\\).
    mean_free_energy: f64,
    /// `tr-ais` and `ptt`: the mean log-likelihood under every rung of the trajectory.
    #[serde(skip_serializing_if = "Option::is_none")]
    along_trajectory: Option<Vec<RungLikelihood>>,
}

/// The log-likelihood of a data file under one checkpoint.
#[derive(Serialize, Debug)]
struct RungLikelihood {
    /// Training update of the checkpoint (`null` for an appended `--model`).
    update: Option<u64>,
    mean_log_likelihood: f64,
    standard_error: f64,
}

/// `ll`, the mean log-likelihood of the data file `path`, if it is finite; an error
/// otherwise (free energies that overflow f64 give \\(\pm\infty\\) or NaN, never a result).
fn finite_likelihood(path: &Path, ll: f64) -> Result<f64> {
    if !ll.is_finite() {
        bail!(
            "{}: the mean log-likelihood is {ll}, not finite: the model's free energies of \
             these data overflow f64 (a parameter too large)",
            path.display()
        );
    }
    Ok(ll)
}

/// The mean log-likelihood of `ds` under `rbm` given \\(\log \hat Z \pm\\) `log_z_se`.
fn likelihood<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    ds: &Dataset,
    path: &Path,
    log_z: f64,
    log_z_se: f64,
) -> Result<EstimatedLikelihood> {
    let f = free_energies(rbm, ds.data(), 1.0);
    let neg: Vec<f64> = f.iter().map(|x| -x).collect();
    let WeightedMean {
        mean: mean_neg_f,
        std_err: se,
        ..
    } = WeightedMean::of(&neg, ds.weights());
    Ok(EstimatedLikelihood {
        path: path.to_path_buf(),
        n_samples: ds.n_samples(),
        mean_log_likelihood: finite_likelihood(path, mean_neg_f - log_z)?,
        standard_error: (se * se + log_z_se * log_z_se).sqrt(),
        data_standard_error: se,
        log_z_standard_error: log_z_se,
        mean_free_energy: -mean_neg_f,
        along_trajectory: None,
    })
}

/// Checks every data file against the model's visible units.
fn check_data<V: UnitLayer>(
    layer: &V,
    data: Vec<Dataset>,
    paths: &[PathBuf],
) -> Result<Vec<(Dataset, PathBuf)>> {
    data.into_iter()
        .zip(paths)
        .map(|(ds, path)| {
            if ds.n_samples() == 0 {
                bail!("{}: no samples", path.display());
            }
            Ok((visible_data(layer, ds, path)?, path.clone()))
        })
        .collect()
}

fn chains_of(common: &EstimatorArgs, default: usize) -> Result<usize> {
    let n = common.chains.unwrap_or(default);
    if n < 2 {
        bail!(
            "--chains {n}: the estimators need at least 2 chains (the error bar comes from \
             their spread)"
        );
    }
    Ok(n)
}

/// A seed for the exact draws that start a run, distinct from the streams of the run itself.
fn start_seed(seed: u64) -> u64 {
    RngStreams::auxiliary(seed, 3).random()
}

/// Prints the summary of an estimate and writes its record.
fn report<S: Serialize>(
    command: &str,
    seed: u64,
    settings: &S,
    inputs: &[&Path],
    out: Option<&Path>,
    model: &str,
    r: &EstimateResults,
    ctx: &Context,
) -> Result<()> {
    ctx.say(format!("{} on a {model}", r.description));
    ctx.say(format!(
        "start: {} (log Z = {:.6})",
        r.start.description, r.start.log_z
    ));
    // AIS: of the chains; PTT: the forward plus reverse sizes of the worst pair.
    let ess = r.ess.map_or_else(String::new, |e| match r.ptt {
        None => format!("ESS {e:.1} of {} chains; ", r.estimate.n_samples),
        Some(_) => format!("ESS {e:.1} over the worst pair; "),
    });
    let trust = if r.estimate.is_trusted() {
        String::new()
    } else {
        format!(
            "; NOT TRUSTED: {} warning(s), see stderr and the record",
            r.estimate.warnings.len()
        )
    };
    let largest = r
        .estimate
        .largest_weight_fraction
        .map_or_else(String::new, |f| {
            format!("largest weight {:.1}%; ", 100.0 * f)
        });
    ctx.say(format!(
        "log Z = {:.6} +- {:.6} ({ess}{largest}{} Gibbs sweeps{trust})",
        r.log_z, r.std_err, r.gibbs_sweeps
    ));
    for w in &r.estimate.warnings {
        ctx.warn(w.to_string());
    }
    if let Some(s) = r.annealing.as_ref().and_then(|a| a.sandwich.as_ref()) {
        ctx.say(format!(
            "sandwich: AIS {:.6} +- {:.6} <= log Z <= reverse AIS {:.6} +- {:.6} ({})",
            s.ais.log_z,
            s.ais.std_err,
            r.log_z,
            r.std_err,
            match s.check.verdict {
                Sandwich::Consistent => "consistent".to_string(),
                Sandwich::Gap => format!(
                    "GAP of {:.1} standard errors: at least one estimate is off by more than its \
                     error bar",
                    s.check.z
                ),
                Sandwich::Inverted => "INVERTED".to_string(),
                Sandwich::Undefined => "UNDEFINED".to_string(),
            }
        ));
    }
    if let Some(p) = &r.ptt {
        let rates: Vec<String> = p
            .acceptance_rates
            .iter()
            .map(|a| a.map_or("-".into(), |a| format!("{a:.2}")))
            .collect();
        ctx.say(format!("swap acceptance per pair: [{}]", rates.join(", ")));
    }
    for d in &r.datasets {
        ctx.say(format!(
            "{}: {} samples, mean log-likelihood {:.6} +- {:.6} (data {:.6}, log Z {:.6}; mean \
             free energy {:.6})",
            d.path.display(),
            d.n_samples,
            d.mean_log_likelihood,
            d.standard_error,
            d.data_standard_error,
            d.log_z_standard_error,
            d.mean_free_energy
        ));
    }
    ctx.finish(command, Some(seed), settings, inputs, &[], r, out)
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// An [`Annealer`] that advances a progress bar after every transition of the wrapped one.
struct WithProgress<'a, A> {
    inner: &'a A,
    bar: ProgressBar,
}

impl<M: EnergyModel, A: Annealer<M>> Annealer<M> for WithProgress<'_, A> {
    fn transition(
        &self,
        from: Rung<'_, M>,
        to: Rung<'_, M>,
        population: &mut Population<M::State>,
        par: Par,
    ) -> TransitionInfo {
        let info = self.inner.transition(from, to, population, par);
        self.bar.inc(1);
        info
    }

    fn resample_below_ess(&self) -> Option<f64> {
        self.inner.resample_below_ess()
    }
}

impl<A> Drop for WithProgress<'_, A> {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

// ---------------------------------------------------------------------------------------------
// ais and reverse-ais
// ---------------------------------------------------------------------------------------------

/// `ais` and `reverse-ais` (with `reverse`); `settings` are the command's arguments, for the
/// record.
fn annealing<S: Serialize>(
    p: &AnnealingPathArgs,
    common: &EstimatorArgs,
    reverse: Option<&ReverseAisArgs>,
    settings: &S,
    ctx: &Context,
) -> Result<()> {
    let n_chains = match reverse {
        Some(r) if r.start == Some(ReverseStartArg::Samples) => {
            if common.chains.is_some() {
                bail!("--chains does not apply to --start samples (one chain per sample)");
            }
            0
        }
        _ => chains_of(common, DEFAULT_CHAINS)?,
    };
    if p.rungs < 2 {
        bail!(
            "--rungs {}: a path needs at least 2 distributions (its start and the model)",
            p.rungs
        );
    }
    if p.reference_data.is_some() && p.path != PathArg::Reference {
        bail!("--reference-data applies only to --path reference");
    }
    if let Some(r) = reverse {
        if r.burn_in.is_some() && r.start != Some(ReverseStartArg::Gibbs) {
            bail!("--burn-in applies only to --start gibbs");
        }
        if r.samples.is_some() && r.start != Some(ReverseStartArg::Samples) {
            bail!("--samples needs --start samples");
        }
    }
    let mut inputs: Vec<&Path> = vec![&p.model];
    inputs.extend(common.data.iter().map(PathBuf::as_path));
    inputs.extend(p.reference_data.as_deref());
    inputs.extend(reverse.and_then(|r| r.samples.as_deref()));
    if let Some(out) = &common.out {
        check_outputs(&[out], &inputs)?;
    }
    let data = common
        .data
        .iter()
        .map(|p| load_dataset(p))
        .collect::<Result<Vec<_>>>()?;
    let reference_data = p.reference_data.as_deref().map(load_dataset).transpose()?;
    let samples = reverse
        .and_then(|r| r.samples.as_deref())
        .map(load_dataset)
        .transpose()?;
    let task = AnnealingTask {
        p,
        common,
        reverse,
        ctx,
        n_chains,
        data,
        reference_data,
        samples,
    };
    let Some((model, results)) = with_model(&p.model, task)? else {
        return Ok(());
    };
    let command = if reverse.is_some() {
        "loglik reverse-ais"
    } else {
        "loglik ais"
    };
    report(
        command,
        common.seed,
        settings,
        &inputs,
        common.out.as_deref(),
        &model,
        &results,
        ctx,
    )
}

struct AnnealingTask<'a> {
    p: &'a AnnealingPathArgs,
    common: &'a EstimatorArgs,
    reverse: Option<&'a ReverseAisArgs>,
    ctx: &'a Context,
    /// Chains (0 for `--start samples`: one per sample).
    n_chains: usize,
    data: Vec<Dataset>,
    reference_data: Option<Dataset>,
    samples: Option<Dataset>,
}

/// The path of `ais` and `reverse-ais`.
enum AnnealPath<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>> {
    /// The model at inverse temperatures from 0.
    Temperature(TemperatureLadder<Rbm<V, H>>),
    /// Interpolated parameters from a zero-weight reference, built stretch by stretch.
    Reference {
        model: Rbm<V, H>,
        reference: Rbm<V, H>,
        betas: Vec<f64>,
    },
}

/// The index ranges `[lo, hi]` of the stretches of a path of `n` rungs: consecutive stretches
/// share their end rung.
fn segments(n: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut lo = 0;
    while lo + 1 < n {
        let hi = (lo + SEGMENT_RUNGS).min(n - 1);
        out.push((lo, hi));
        lo = hi;
    }
    out
}

/// A stretch of a reference-interpolated path: the models
/// \\(\beta\Theta + (1 - \beta)\Theta_{\text{ref}}\\) at some of its \\(\beta\\)s, all at
/// temperature 1 (the rungs of `ebm_samplers::tempering::ReferenceLadder`, which would hold
/// the whole path at once).
struct ReferenceSegment<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>> {
    models: Vec<Rbm<V, H>>,
}

impl<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>> ReferenceSegment<V, H> {
    fn new(model: &Rbm<V, H>, reference: &Rbm<V, H>, betas: &[f64]) -> Result<Self> {
        let models = betas
            .iter()
            .map(|&b| model.interpolate(reference, b))
            .collect::<ebm_core::Result<Vec<_>>>()?;
        Ok(Self { models })
    }
}

impl<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>> Ladder for ReferenceSegment<V, H> {
    type Model = Rbm<V, H>;

    fn n_rungs(&self) -> usize {
        self.models.len()
    }

    fn rung(&self, k: usize) -> Rung<'_, Rbm<V, H>> {
        Rung {
            model: &self.models[k],
            beta: 1.0,
        }
    }
}

impl<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>> DescribeLadder
    for ReferenceSegment<V, H>
{
    fn kind(&self) -> LadderKind {
        LadderKind::Reference
    }
}

/// The totals of an estimate made of several stretches: its cost and number of rungs.
fn set_totals(e: &mut LogZEstimate, kernel_steps_per_chain: u64, n_rungs_total: usize) {
    e.kernel_steps = kernel_steps_per_chain * e.n_samples as u64;
    if let Method::Ais { n_rungs, .. } = &mut e.method {
        *n_rungs = n_rungs_total;
    }
}

impl<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>> AnnealPath<V, H> {
    /// `temperature` or `reference`, as `--path` spells it.
    fn name(&self) -> &'static str {
        match self {
            Self::Temperature(_) => "temperature",
            Self::Reference { .. } => "reference",
        }
    }

    fn n_rungs(&self) -> usize {
        match self {
            Self::Temperature(l) => l.n_rungs(),
            Self::Reference { betas, .. } => betas.len(),
        }
    }

    /// `n` exact draws of the path's tractable start, with its exact \\(\log Z\\).
    fn start(&self, n: usize, seed: u64) -> Result<Start<RbmChains<f64>>> {
        match self {
            Self::Temperature(l) => uniform_start(l.model(), n, seed, Par::Rayon),
            Self::Reference { reference, .. } => {
                Ok(Start::independent(reference, 1.0, n, seed, Par::Rayon)?)
            }
        }
    }

    /// Forward AIS from `start` to the model, sharded by chain over the processes of `world`
    /// ([`ebm_mpi::ais`], equal to [`ebm_estimators::ais`]), stretch by stretch on a reference
    /// path (the shards and their weights carry over, and each stretch starts from the running
    /// estimate, so the last one returns the estimate of the whole path). Rank 0 returns the
    /// estimate, equal bit for bit for any number of processes; the other ranks `None`.
    fn forward<A: Annealer<Rbm<V, H>>>(
        &self,
        world: &dyn Collective,
        annealer: &A,
        start: Start<RbmChains<f64>>,
    ) -> Result<Option<LogZEstimate>> {
        let (model, reference, betas) = match self {
            Self::Temperature(l) => {
                let run = ebm_mpi::ais(world, annealer, l, &start, Par::Rayon)?;
                return Ok(run.map(|r| r.estimate));
            }
            Self::Reference {
                model,
                reference,
                betas,
            } => (model, reference, betas),
        };
        let Start {
            population,
            log_z: log_z0,
        } = start;
        let steps0 = population.steps();
        let mut local = ebm_mpi::shard_population(world, &population)?;
        drop(population);
        // Known on rank 0 only (the other ranks anneal their chains and send the weights).
        let mut running = Some(log_z0.clone());
        for (lo, hi) in segments(betas.len()) {
            let ladder = ReferenceSegment::new(model, reference, &betas[lo..=hi])?;
            let at = running.as_ref().map_or(0.0, |r| r.log_z);
            let begin = LogZEstimate::exact(at, log_z0.method.clone());
            let run =
                ebm_mpi::ais_on_shard(world, annealer, &ladder, &mut local, begin, Par::Rayon)?;
            running = run.map(|r| r.estimate);
        }
        Ok(running.map(|mut running| {
            running.std_err = running.std_err.hypot(log_z0.std_err);
            // Rank 0 holds the first chains: its step count is every chain's.
            set_totals(&mut running, local.steps() - steps0, betas.len());
            running
        }))
    }

    /// Reverse AIS from samples of the model down to the path's start, whose exact
    /// \\(\log Z\\) is `log_z0`, sharded by chain over the processes of `world`: `local` is
    /// this process's shard of the samples ([`ebm_mpi::shard_population`]). Stretch by
    /// stretch from the top on a reference path, which sums the same log weights
    /// ([`ebm_mpi::reverse_ais_on_shard`], equal to [`ebm_estimators::reverse_ais`]). Rank 0
    /// returns the estimate, equal bit for bit for any number of processes; the other ranks
    /// `None`.
    fn reverse<A: Annealer<Rbm<V, H>>>(
        &self,
        world: &dyn Collective,
        annealer: &A,
        mut local: Population<RbmChains<f64>>,
        log_z0: &LogZEstimate,
    ) -> Result<Option<LogZEstimate>> {
        let (model, reference, betas) = match self {
            Self::Temperature(l) => {
                let run = ebm_mpi::reverse_ais_on_shard(
                    world,
                    annealer,
                    l,
                    &mut local,
                    log_z0,
                    Par::Rayon,
                )?;
                return Ok(run.map(|r| r.estimate));
            }
            Self::Reference {
                model,
                reference,
                betas,
            } => (model, reference, betas),
        };
        let steps0 = local.steps();
        // Each stretch subtracts its log mean weight ratio from the running value (known on
        // rank 0 only).
        let mut running = Some(log_z0.clone());
        for (lo, hi) in segments(betas.len()).into_iter().rev() {
            let ladder = ReferenceSegment::new(model, reference, &betas[lo..=hi])?;
            let at = running.as_ref().map_or(0.0, |r| r.log_z);
            let begin = LogZEstimate::exact(at, log_z0.method.clone());
            let run = ebm_mpi::reverse_ais_on_shard(
                world,
                annealer,
                &ladder,
                &mut local,
                &begin,
                Par::Rayon,
            )?;
            running = run.map(|r| r.estimate);
        }
        Ok(running.map(|mut running| {
            running.std_err = running.std_err.hypot(log_z0.std_err);
            set_totals(&mut running, local.steps() - steps0, betas.len());
            running
        }))
    }
}

impl RbmTask for AnnealingTask<'_> {
    /// `None` on the ranks other than 0 of a sharded run.
    type Output = Option<(String, EstimateResults)>;
    type Error = CliError;

    fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
        self,
        rbm: Rbm<V, H>,
        file: &Path,
    ) -> Result<Self::Output> {
        let (p, common) = (self.p, self.common);
        let data = check_data(rbm.visible(), self.data, &common.data)?;
        // The chains, and the inverse temperatures of the path.
        check_chain_memory("annealing", &rbm, self.n_chains, 1, 8 * p.rungs as u128)?;
        let (path, reference) = annealing_path(p, &rbm, file, self.reference_data)?;
        let start_what = match &path {
            AnnealPath::Temperature(_) => "the uniform law (beta = 0)".to_string(),
            AnnealPath::Reference { .. } => format!(
                "the independent-site reference (zero weights; {})",
                reference.as_deref().unwrap_or_default()
            ),
        };
        let run = match self.reverse {
            None => forward_run(p, common, self.ctx, &path, self.n_chains)?,
            Some(r) => {
                let model = (&rbm, &path);
                reverse_run(p, common, r, self.ctx, model, self.n_chains, self.samples)?
            }
        };
        let Some(AnnealRun {
            estimate,
            start_log_z,
            chains,
            burn_in,
            model_samples,
            description,
            sandwich,
        }) = run
        else {
            // Another rank than 0 of a sharded run: rank 0 reports.
            return Ok(None);
        };
        if !estimate.log_z.is_finite() {
            bail!(
                "the estimate of log Z is not finite ({}): the importance weights over- or \
                 underflowed; use more rungs",
                estimate.log_z
            );
        }
        let datasets = data
            .iter()
            .map(|(ds, path)| likelihood(&rbm, ds, path, estimate.log_z, estimate.std_err))
            .collect::<Result<_>>()?;
        // Kernel steps of the path do --sweeps sweeps each; the burn-in ran single sweeps.
        // (The forward run of the sandwich records its own cost in its estimate.)
        let gibbs_sweeps =
            estimate.kernel_steps * common.sweeps as u64 + burn_in.unwrap_or(0) * chains as u64;
        Ok(Some((
            describe(&rbm),
            EstimateResults {
                estimator: if self.reverse.is_some() {
                    "reverse-ais"
                } else {
                    "ais"
                },
                description,
                model: ModelSummary::of(&rbm),
                log_z: estimate.log_z,
                std_err: estimate.std_err,
                ess: finite(estimate.ess),
                chains,
                gibbs_sweeps,
                start: StartSummary {
                    description: start_what,
                    log_z: start_log_z,
                },
                annealing: Some(AnnealingSummary {
                    path: path.name(),
                    rungs: p.rungs,
                    sweeps_per_rung: common.sweeps,
                    reference,
                    model_samples,
                    burn_in_sweeps: burn_in,
                    sandwich,
                }),
                trajectory: None,
                ptt: None,
                estimate,
                datasets,
            },
        )))
    }
}

/// What an `ais` or `reverse-ais` run gives to its record.
struct AnnealRun {
    estimate: LogZEstimate,
    /// The exact \\(\log Z\\) of the path's start.
    start_log_z: f64,
    chains: usize,
    /// `reverse-ais --start gibbs`: the burn-in in sweeps per chain.
    burn_in: Option<u64>,
    /// `reverse-ais`: where the samples of the model came from.
    model_samples: Option<String>,
    description: String,
    /// `reverse-ais`: the forward half of the sandwich.
    sandwich: Option<SandwichSummary>,
}

/// The path of `--path`, with the description of a reference path's visible fields: the
/// means of `--reference-data` (`reference_data`, its file) or the model's own.
fn annealing_path<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    p: &AnnealingPathArgs,
    rbm: &Rbm<V, H>,
    file: &Path,
    reference_data: Option<Dataset>,
) -> Result<(AnnealPath<V, H>, Option<String>)> {
    match p.path {
        PathArg::Temperature => {
            if V::REAL_VALUED || H::REAL_VALUED {
                bail!(
                    "--path temperature starts at beta = 0, where the real-valued units of \
                     {} have no probability law; use --path reference",
                    file.display()
                );
            }
            let ladder = TemperatureLadder::new(rbm.clone(), even_betas(p.rungs)?)?;
            Ok((AnnealPath::Temperature(ladder), None))
        }
        PathArg::Reference => {
            let (visible, what) = match (reference_data, &p.reference_data) {
                (Some(ds), Some(rp)) => {
                    let ds = visible_data(rbm.visible(), ds, rp)?;
                    let Some(layer) = V::from_means(ds.weighted_mean().as_slice()) else {
                        bail!(
                            "--reference-data: a reference fitted to data needs bernoulli \
                             or spin visible units, the model's are {}",
                            V::KIND
                        );
                    };
                    (
                        layer,
                        format!("visible fields from the means of {}", rp.display()),
                    )
                }
                _ => (
                    rbm.visible().clone(),
                    "the model's own visible fields".into(),
                ),
            };
            let reference = Rbm::new(visible, rbm.hidden().clone(), zero_weights(rbm))?;
            let path = AnnealPath::Reference {
                model: rbm.clone(),
                reference,
                betas: even_betas(p.rungs)?,
            };
            Ok((path, Some(what)))
        }
    }
}

/// `ais`: forward AIS along `path` from `n_chains` draws of its start. `None` on the ranks
/// other than 0 of a sharded run.
fn forward_run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    p: &AnnealingPathArgs,
    common: &EstimatorArgs,
    ctx: &Context,
    path: &AnnealPath<V, H>,
    n_chains: usize,
) -> Result<Option<AnnealRun>> {
    let kernel = Ais::new(Gibbs::new(common.sweeps));
    let start = path.start(n_chains, common.seed)?;
    let log_z0 = start.log_z.log_z;
    let annealer = WithProgress {
        inner: &kernel,
        bar: ctx.progress((path.n_rungs() - 1) as u64, "ais"),
    };
    let Some(estimate) = path.forward(ctx.world(), &annealer, start)? else {
        return Ok(None);
    };
    let description = format!(
        "AIS ({} path, {} rungs, {n_chains} chains, {} Gibbs sweeps per rung)",
        path.name(),
        p.rungs,
        common.sweeps
    );
    Ok(Some(AnnealRun {
        estimate,
        start_log_z: log_z0,
        chains: n_chains,
        burn_in: None,
        model_samples: None,
        description,
        sandwich: None,
    }))
}

/// The samples of the model that `reverse-ais` starts from (`--start`), the burn-in they still
/// need (`--start gibbs`), and what they are.
fn reverse_population<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    common: &EstimatorArgs,
    r: &ReverseAisArgs,
    (rbm, path): (&Rbm<V, H>, &AnnealPath<V, H>),
    n_chains: usize,
    samples: Option<Dataset>,
) -> Result<(Population<RbmChains<f64>>, Option<u64>, String)> {
    Ok(match r.start {
        Some(ReverseStartArg::Gibbs) => {
            // Burnt in by the caller, each process its own chains.
            let sweeps = r.burn_in.unwrap_or(DEFAULT_BURN_IN_SWEEPS);
            let population = path.start(n_chains, common.seed)?.population;
            let what = format!("{sweeps} Gibbs sweeps of the model from draws of the path's start");
            (population, Some(sweeps), what)
        }
        None | Some(ReverseStartArg::Exact) => {
            let start = exact_start(rbm, 1.0, n_chains, common.seed, Par::Rayon)
                .map_err(|e| reverse_start_error(r.start, e.into()))?;
            (start.population, None, EXACT_DRAWS.into())
        }
        Some(ReverseStartArg::Samples) => {
            let (ds, sp) = match (samples, &r.samples) {
                (Some(ds), Some(sp)) => (ds, sp),
                _ => bail!("--start samples needs --samples FILE"),
            };
            let ds = visible_data(rbm.visible(), ds, sp)?;
            if ds.n_samples() < 2 {
                bail!(
                    "{}: {} sample(s); reverse AIS needs at least 2 (one chain each)",
                    sp.display(),
                    ds.n_samples()
                );
            }
            let mut chains = rbm.default_chains(ds.n_samples());
            chains.visible.copy_from(ds.data());
            let mut population = Population::new(chains, common.seed)?;
            use ebm_core::ConditionalSampler;
            rbm.sample_hidden(
                &mut population.chains,
                1.0,
                population.rngs.as_mut_slice(),
                Par::Rayon,
            );
            let what = format!("the {} samples of {}", ds.n_samples(), sp.display());
            (population, None, what)
        }
    })
}

/// `reverse-ais`: reverse AIS along `path` from samples of the model
/// ([`reverse_population`]), then forward AIS on the same path with as many chains, and the
/// sandwich check between the two. `None` on the ranks other than 0 of a sharded run.
fn reverse_run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    p: &AnnealingPathArgs,
    common: &EstimatorArgs,
    r: &ReverseAisArgs,
    ctx: &Context,
    (rbm, path): (&Rbm<V, H>, &AnnealPath<V, H>),
    n_chains: usize,
    samples: Option<Dataset>,
) -> Result<Option<AnnealRun>> {
    let kernel = Ais::new(Gibbs::new(common.sweeps));
    let transitions = (path.n_rungs() - 1) as u64;
    let log_z0 = path.start(2, 0)?.log_z;
    let (population, burn_in, what) =
        reverse_population(common, r, (rbm, path), n_chains, samples)?;
    let chains = population.n_chains();
    let world = ctx.world();
    let mut local = ebm_mpi::shard_population(world, &population)?;
    drop(population);
    if let Some(sweeps) = burn_in {
        let bar = ctx.progress(sweeps, "burn-in");
        let target = Rung {
            model: rbm,
            beta: 1.0,
        };
        for _ in 0..sweeps {
            local.advance_chains(&Gibbs::new(1), target, Par::Rayon);
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    let annealer = WithProgress {
        inner: &kernel,
        bar: ctx.progress(transitions, "reverse ais"),
    };
    let e = path.reverse(world, &annealer, local, &log_z0)?;
    drop(annealer);
    // The sandwich: forward AIS on the same path with as many chains.
    let forward_start = path.start(chains, common.seed)?;
    let annealer = WithProgress {
        inner: &kernel,
        bar: ctx.progress(transitions, "ais (sandwich)"),
    };
    let forward = path.forward(world, &annealer, forward_start)?;
    let (Some(mut estimate), Some(mut forward)) = (e, forward) else {
        return Ok(None);
    };
    if what != EXACT_DRAWS {
        estimate.warn(Warning::StartNotAtEquilibrium {
            start: what.clone(),
        });
    }
    let check = trust::sandwich(&mut forward, &mut estimate);
    let description = format!(
        "reverse AIS ({} path, {} rungs, {chains} chains, {} Gibbs sweeps per rung; samples: \
         {what})",
        path.name(),
        p.rungs,
        common.sweeps
    );
    Ok(Some(AnnealRun {
        estimate,
        start_log_z: log_z0.log_z,
        chains,
        burn_in,
        model_samples: Some(what),
        description,
        sandwich: Some(SandwichSummary {
            ais: forward,
            check,
        }),
    }))
}

// ---------------------------------------------------------------------------------------------
// tr-ais and ptt
// ---------------------------------------------------------------------------------------------

/// `tr-ais` and `ptt` (with `ptt`); `settings` are the command's arguments, for the record.
fn trajectory<S: Serialize>(
    t: &TrajectoryArgs,
    common: &EstimatorArgs,
    ptt: Option<&PttArgs>,
    settings: &S,
    ctx: &Context,
) -> Result<()> {
    let n_chains = chains_of(
        common,
        if ptt.is_some() {
            DEFAULT_PTT_CHAINS
        } else {
            DEFAULT_CHAINS
        },
    )?;
    let mut inputs: Vec<&Path> = vec![&t.trajectory];
    inputs.extend(t.model.as_deref());
    inputs.extend(common.data.iter().map(PathBuf::as_path));
    if let Some(out) = &common.out {
        check_outputs(&[out], &inputs)?;
    }
    let info = ebm_io::read_trajectory_info(&t.trajectory)?;
    if let Some(m) = &t.model {
        let mi = ebm_io::read_rbm_info(m)?;
        if (mi.visible.as_str(), mi.hidden.as_str())
            != (info.visible.as_str(), info.hidden.as_str())
            || (mi.visible_units, mi.hidden_units) != (info.visible_units, info.hidden_units)
        {
            bail!(
                "{} is a {}-{} RBM with {} x {} units, but the checkpoints of {} are {}-{} RBMs \
                 with {} x {} units; the model must have the trajectory's shape",
                m.display(),
                mi.visible,
                mi.hidden,
                mi.visible_units,
                mi.hidden_units,
                t.trajectory.display(),
                info.visible,
                info.hidden,
                info.visible_units,
                info.hidden_units
            );
        }
    }
    let data = common
        .data
        .iter()
        .map(|p| load_dataset(p))
        .collect::<Result<Vec<_>>>()?;
    let task = TrajectoryTask {
        t,
        common,
        ptt,
        ctx,
        n_chains,
        data,
    };
    let Some((model, results)) = with_kinds(&info.visible, &info.hidden, &t.trajectory, task)?
    else {
        return Ok(());
    };
    let command = if ptt.is_some() {
        "loglik ptt"
    } else {
        "loglik tr-ais"
    };
    report(
        command,
        common.seed,
        settings,
        &inputs,
        common.out.as_deref(),
        &model,
        &results,
        ctx,
    )
}

struct TrajectoryTask<'a> {
    t: &'a TrajectoryArgs,
    common: &'a EstimatorArgs,
    ptt: Option<&'a PttArgs>,
    ctx: &'a Context,
    n_chains: usize,
    data: Vec<Dataset>,
}

/// How long `ptt` runs: the burn-in and recorded rounds given (`--steps`, `--burn-in`), or the
/// defaults that grow with the number of checkpoints, extended with the measured index process
/// (see `ebm loglik ptt --help`).
fn ptt_plan(args: &PttArgs, k: usize, n_chains: usize) -> Result<PttPlan> {
    let plan = match args.steps {
        None => PttPlan::adaptive(k, args.burn_in),
        Some(steps) => PttPlan::fixed(steps, args.burn_in).map_err(|_| {
            CliError::new(format!(
                "--burn-in {}: must be less than --steps {steps} (the rounds after it are the \
                 samples)",
                args.burn_in.unwrap_or(steps / 10)
            ))
        })?,
    };
    plan.check(n_chains).map_err(|_| {
        CliError::new(format!(
            "--steps {}: the error bar needs at least 2 recorded rounds or 8 chains",
            plan.burn_in + plan.recorded
        ))
    })?;
    Ok(plan)
}

/// Exact draws of the first checkpoint and its exact \\(\log Z\\): in closed form when its
/// weights are zero (training from scratch), by enumeration otherwise.
fn first_checkpoint_start<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    first: &Rbm<V, H>,
    n: usize,
    seed: u64,
    file: &Path,
) -> Result<(Start<RbmChains<f64>>, String)> {
    if first.weights().iter().all(|w| w.as_f64() == 0.0) {
        let start = Start::independent(first, 1.0, n, seed, Par::Rayon)?;
        Ok((
            start,
            "the first checkpoint, independent sites (zero weights)".into(),
        ))
    } else {
        let start = exact_start(first, 1.0, n, seed, Par::Rayon).map_err(|e| {
            CliError::new(format!(
                "{}: the first checkpoint has non-zero weights, so its log Z must be computed by \
                 enumeration, which is not possible: {e}",
                file.display()
            ))
        })?;
        Ok((start, "the first checkpoint, by exact enumeration".into()))
    }
}

/// Whether two RBMs of the same kinds have the same parameters.
fn same_parameters<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    args: &Rbm<V, H>,
    b: &Rbm<V, H>,
) -> bool {
    args.weights() == b.weights()
        && args.visible().tensors() == b.visible().tensors()
        && args.hidden().tensors() == b.hidden().tensors()
}

impl KindsTask for TrajectoryTask<'_> {
    /// `None` on the ranks other than 0 of a sharded tr-ais run.
    type Output = Option<(String, EstimateResults)>;
    type Error = CliError;

    fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(self) -> Result<Self::Output> {
        let TrajectoryTask {
            t,
            common,
            ptt,
            ctx,
            n_chains,
            data,
        } = self;
        let file = &t.trajectory;
        let (models, updates) = trajectory_rungs::<V, H>(t, ptt, n_chains)?;
        let data = check_data(models[0].visible(), data, &common.data)?;
        let (start, start_what) =
            first_checkpoint_start(&models[0], n_chains, start_seed(common.seed), file)?;
        let log_z0 = start.log_z.clone();
        let ladder = TrajectoryLadder::new(models)?;
        let run = match ptt {
            None => tr_ais_run(common, ctx, &ladder, &start, n_chains)?,
            Some(a) => Some(ptt_run(a, common, ctx, &ladder, start, n_chains)?),
        };
        let Some(TrajectoryRun {
            estimate,
            profile,
            ptt: ptt_summary,
            description,
        }) = run
        else {
            // Another rank than 0 of a sharded run: rank 0 reports.
            return Ok(None);
        };
        if let Some(bad) = profile.iter().position(|r| !r.log_z.is_finite()) {
            bail!(
                "the estimate of log Z of rung {bad} is not finite: the checkpoints are too far \
                 apart for their laws to overlap; keep more checkpoints"
            );
        }
        let target = ladder.models().last().expect("at least 2 rungs");
        let datasets = data
            .iter()
            .map(|(ds, path)| {
                let mut d = likelihood(target, ds, path, estimate.log_z, estimate.std_err)?;
                let rungs = (&profile[..], &updates[..]);
                d.along_trajectory = Some(likelihood_along(ladder.models(), rungs, ds, path)?);
                Ok(d)
            })
            .collect::<Result<_>>()?;
        Ok(Some((
            describe(target),
            EstimateResults {
                estimator: if ptt.is_some() { "ptt" } else { "tr-ais" },
                description,
                model: ModelSummary::of(target),
                log_z: estimate.log_z,
                std_err: estimate.std_err,
                ess: finite(estimate.ess),
                chains: n_chains,
                gibbs_sweeps: estimate.kernel_steps * common.sweeps as u64,
                start: StartSummary {
                    description: start_what,
                    log_z: log_z0.log_z,
                },
                annealing: None,
                trajectory: Some(TrajectorySummary {
                    updates,
                    log_z: profile,
                }),
                ptt: ptt_summary,
                estimate,
                datasets,
            },
        )))
    }
}

/// The models of the rungs of a trajectory and the training update of each (`None` for an
/// appended `--model`).
type TrajectoryRungs<V, H> = (Vec<Rbm<V, H>>, Vec<Option<u64>>);

/// The rungs of `tr-ais` and `ptt`: the kept checkpoints of `--trajectory` (`--rungs`), then
/// `--model` when it differs from the last, with the training update of each (`None` for the
/// appended model); checks that the chains and records fit in memory.
fn trajectory_rungs<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    t: &TrajectoryArgs,
    ptt: Option<&PttArgs>,
    n_chains: usize,
) -> Result<TrajectoryRungs<V, H>> {
    let file = &t.trajectory;
    let trajectory = ebm_io::load_trajectory::<V, H>(file)?;
    let file_updates = trajectory.updates().to_vec();
    let all = trajectory.into_models();
    let n = all.len();
    if n == 0 {
        bail!("{}: the trajectory has no checkpoint", file.display());
    }
    let keep = match (n, t.rungs) {
        (1, Some(k)) if k > 1 => bail!("--rungs {k}: {} has only 1 checkpoint", file.display()),
        (1, _) => vec![0],
        _ => kept_checkpoints(n, t.rungs, file)?,
    };
    // ptt holds a replica per kept checkpoint and records its index process and BAR's
    // works every round; trajectory AIS walks one set of chains.
    let (copies, records) = match ptt {
        Some(a) => (
            keep.len(),
            ptt_plan(a, keep.len(), n_chains)?.record_bytes(keep.len(), n_chains),
        ),
        None => (1, 0),
    };
    check_chain_memory(
        "the trajectory's chains and records",
        &all[0],
        n_chains,
        copies,
        records,
    )?;
    let mut updates: Vec<Option<u64>> = keep.iter().map(|&i| Some(file_updates[i])).collect();
    let mut models: Vec<Rbm<V, H>> = keep.iter().map(|&i| all[i].clone()).collect();
    drop(all);
    if let Some(m) = &t.model {
        let target = ebm_io::load_rbm::<V, H>(m)?;
        if target.weights().shape() != models[0].weights().shape() {
            let (a, b) = (target.weights().shape(), models[0].weights().shape());
            bail!(
                "{}: weights of shape {} x {}, but the checkpoints of {} have {} x {}",
                m.display(),
                a.0,
                a.1,
                file.display(),
                b.0,
                b.1
            );
        }
        let last = models.last().expect("at least one checkpoint");
        if !same_parameters(last, &target) {
            models.push(target);
            updates.push(None);
        }
    }
    if models.len() < 2 {
        bail!(
            "{}: a single checkpoint and no different --model: there is no path to anneal \
             along (its log Z is exact: use `ebm loglik exact`)",
            file.display()
        );
    }
    Ok((models, updates))
}

/// What a `tr-ais` or `ptt` run gives to its record.
struct TrajectoryRun {
    estimate: LogZEstimate,
    /// \\(\log Z\\) of every rung.
    profile: Vec<RungLogZ>,
    /// `ptt`: the tempering run.
    ptt: Option<PttSummary>,
    description: String,
}

/// `tr-ais`: AIS through the checkpoints of `ladder` from `start`. `None` on the ranks other
/// than 0 of a sharded run.
fn tr_ais_run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    common: &EstimatorArgs,
    ctx: &Context,
    ladder: &TrajectoryLadder<Rbm<V, H>>,
    start: &Start<RbmChains<f64>>,
    n_chains: usize,
) -> Result<Option<TrajectoryRun>> {
    let k = ladder.models().len();
    let kernel = Ais::new(Gibbs::new(common.sweeps));
    let annealer = WithProgress {
        inner: &kernel,
        bar: ctx.progress((k - 1) as u64, "tr-ais"),
    };
    let run = ebm_mpi::ais(ctx.world(), &annealer, ladder, start, Par::Rayon)?;
    Ok(run.map(|run| TrajectoryRun {
        estimate: run.estimate,
        profile: run.profile,
        ptt: None,
        description: format!(
            "trajectory AIS ({k} checkpoints, {n_chains} chains, {} Gibbs sweeps per \
             checkpoint)",
            common.sweeps
        ),
    }))
}

/// `ptt`: parallel trajectory tempering on `ladder`, every rung starting from `start`'s
/// chains, and \\(\log Z\\) by BAR between neighbours ([`ptt_log_z`] with the plan of
/// [`ptt_plan`]).
fn ptt_run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    a: &PttArgs,
    common: &EstimatorArgs,
    ctx: &Context,
    ladder: &TrajectoryLadder<Rbm<V, H>>,
    start: Start<RbmChains<f64>>,
    n_chains: usize,
) -> Result<TrajectoryRun> {
    let k = ladder.models().len();
    let rungs = vec![start.population.chains; k];
    let mut state = PtState::new(rungs, common.seed)?;
    let (schedule, name) = schedule_of(a.schedule);
    let pt = ParallelTempering::new(Gibbs::new(common.sweeps), schedule);
    let plan = ptt_plan(a, k, n_chains)?;
    let bar = ctx.progress(plan.burn_in + plan.recorded, "ptt");
    let run = ptt_log_z(
        &pt,
        ladder,
        &mut state,
        &start.log_z,
        &plan,
        Par::Rayon,
        |d, p| {
            bar.set_length(p);
            bar.set_position(d);
        },
    )?;
    bar.finish_and_clear();
    let (burn_in, recorded) = (run.burn_in, run.recorded);
    let summary = PttSummary {
        schedule: name,
        rounds: burn_in + recorded,
        burn_in,
        index_tau_exp: run.index_tau_exp,
        index_tau_int: run.index_tau_int,
        acceptance_rates: run
            .diagnostics
            .acceptance_rates()
            .into_iter()
            .map(finite)
            .collect(),
        pairs: run.ladder.pairs,
    };
    let description = format!(
        "PTT + BAR ({k} checkpoints, {n_chains} systems, {recorded} rounds after {burn_in} \
         burn-in, {name} swaps, {} Gibbs sweeps per checkpoint and round)",
        common.sweeps
    );
    Ok(TrajectoryRun {
        estimate: run.ladder.estimate,
        profile: run.ladder.profile,
        ptt: Some(summary),
        description,
    })
}

/// The mean log-likelihood of the data file `ds` (`path`) under every rung: its model, its
/// \\(\log Z\\) and the training update of its checkpoint.
fn likelihood_along<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    models: &[Rbm<V, H>],
    (profile, updates): (&[RungLogZ], &[Option<u64>]),
    ds: &Dataset,
    path: &Path,
) -> Result<Vec<RungLikelihood>> {
    models
        .iter()
        .zip(profile)
        .zip(updates)
        .map(|((m, z), &update)| {
            let l = likelihood(m, ds, path, z.log_z, z.std_err)?;
            Ok(RungLikelihood {
                update,
                mean_log_likelihood: l.mean_log_likelihood,
                standard_error: l.standard_error,
            })
        })
        .collect()
}

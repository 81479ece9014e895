//! A command line for a model of your own, with the run records, summaries, warnings and error
//! reporting of `ebm`: a `main` of a few lines calls [`run_model`] (any model whose chains are
//! matrices, one column per chain) or [`run_tractable_model`] (a model with exact draws and
//! exact \\(\log Z\\), which also gets `log-z`).
//!
//! - `PROGRAM sample --out FILE`: parallel tempering on a temperature ladder of the model
//!   (`--rungs` inverse temperatures spaced geometrically from `--beta-min` to 1, or exactly
//!   `--betas`, whose last value is the target), exploring every rung with the given kernel and
//!   exchanging neighbours by `--schedule` (default deterministic even/odd). Writes the target
//!   rung's chains (one row per chain, `.npy` or `.csv`) and the run record beside them
//!   (`FILE.json`: the ladder, swap acceptance rates, round trips, the autocorrelation times of
//!   the replica index process), warning when the run did not equilibrate — the same
//!   diagnostics and warnings as `ebm sample --sampler pt`.
//! - `PROGRAM log-z --out FILE.json`: \\(\log Z_{\beta}\\) at `--beta` (default 1) by annealed
//!   importance sampling from exact draws at \\(\beta = 0\\) through `--rungs` evenly spaced
//!   temperatures, with its error bar and warnings, beside the model's exact value.
//!
//! The book's "Adding it to the command line" page walks through a complete program.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use ebm_core::{Kernel, Par, ProductCache, Tractable};
use ebm_estimators::{Ais, Start, ais};
use ebm_samplers::tempering::{ParallelTempering, PtState, PtSummary, TemperatureLadder};
use nalgebra::DMatrix;
use serde::Serialize;

use crate::cli::{ScheduleArg, finite_f64, positive_u64, positive_usize};
use crate::error::{CliError, Result, bail};
use crate::files::{check_matrix_output, check_outputs, write_samples};
use crate::progress::ProgressObserver;
use crate::record::{Context, record_path_for};
use crate::tempering::{schedule_of, temperature_betas};

/// The command line of a custom model.
#[derive(Debug, Parser)]
struct ModelCli {
    /// Print the run record as one JSON line on stdout instead of the summary.
    #[arg(long, global = true)]
    json: bool,
    /// No summary, warnings or progress bars (the run record keeps the warnings).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Parallel tempering on a temperature ladder of the model; writes the target's chains.
    Sample(ModelSampleArgs),
    /// log Z by annealed importance sampling from beta = 0, beside the exact value.
    LogZ(ModelLogZArgs),
}

/// `sample`: the options of `ebm sample --sampler pt` that do not depend on the model.
#[derive(Debug, Args, Serialize)]
struct ModelSampleArgs {
    /// Independent systems of replicas.
    #[arg(long, default_value_t = 1000, value_parser = positive_usize)]
    chains: usize,
    /// Rounds of exploration (one kernel step per rung) and exchange.
    #[arg(long, default_value_t = 1000, value_parser = positive_u64)]
    rounds: u64,
    /// Number of rungs of the geometric ladder, 2 to 10000.
    #[arg(long, default_value_t = 8, value_parser = positive_usize)]
    rungs: usize,
    /// Smallest inverse temperature of the geometric ladder, in (0, 1).
    #[arg(long, default_value_t = 0.1, value_parser = finite_f64)]
    beta_min: f64,
    /// The ladder itself, comma-separated, strictly increasing; its last value is the target.
    #[arg(long, value_delimiter = ',', value_parser = finite_f64, allow_negative_numbers = true,
          conflicts_with_all = ["rungs", "beta_min"])]
    betas: Option<Vec<f64>>,
    /// Swap schedule.
    #[arg(long, value_enum, default_value_t = ScheduleArg::Deo)]
    #[serde(skip)]
    schedule: ScheduleArg,
    /// Seed: every system gets its own random stream derived from it.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The target rung's chains, one row per chain: .npy or .csv (the record goes to FILE.json).
    #[arg(short, long, value_name = "FILE")]
    out: PathBuf,
}

/// `log-z`: AIS from beta = 0.
#[derive(Debug, Args, Serialize)]
struct ModelLogZArgs {
    /// The inverse temperature whose log Z is estimated (> 0).
    #[arg(long, default_value_t = 1.0, value_parser = finite_f64)]
    beta: f64,
    /// Temperatures of the annealing path, evenly spaced from 0 to --beta, at least 2.
    #[arg(long, default_value_t = 200, value_parser = positive_usize)]
    rungs: usize,
    /// Annealed chains.
    #[arg(long, default_value_t = 1000, value_parser = positive_usize)]
    chains: usize,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The run record (JSON).
    #[arg(short, long, value_name = "FILE")]
    out: PathBuf,
}

/// What `sample` records.
#[derive(Serialize)]
struct SampleRecord {
    model: String,
    /// The target's inverse temperature (the ladder's last).
    beta: f64,
    /// Mean energy \\(E_\beta\\) of the written chains.
    mean_energy: f64,
    pt: PtSummary,
    warnings: Vec<String>,
}

/// What `log-z` records.
#[derive(Serialize)]
struct LogZRecord {
    model: String,
    beta: f64,
    ais: ebm_estimators::LogZEstimate,
    exact: f64,
}

/// Runs the command line `args` (program name first, as [`std::env::args_os`]) of `model`,
/// called `name` in records and summaries, sampled with `kernel` at every rung: `sample` only
/// (`log-z` is refused with a clear error; see [`run_tractable_model`]). Returns the exit code
/// as [`crate::run`] does.
pub fn run_model<M, K, I, T>(name: &str, model: M, kernel: K, args: I) -> ExitCode
where
    M: ProductCache<Scalar = f64, State = DMatrix<f64>>,
    K: Kernel<M>,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_commands(args, |command, ctx| match command {
        ModelCommand::Sample(args) => sample(name, model, kernel, args, ctx),
        ModelCommand::LogZ(_) => bail!(
            "log-z needs exact draws and the exact log Z of the model at beta = 0 \
             (ebm_core::Tractable): use run_tractable_model"
        ),
    })
}

/// [`run_model`] for a model with exact draws and exact \\(\log Z\\), which also gets `log-z`.
pub fn run_tractable_model<M, K, I, T>(name: &str, model: M, kernel: K, args: I) -> ExitCode
where
    M: Tractable + ProductCache<Scalar = f64, State = DMatrix<f64>>,
    K: Kernel<M>,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_commands(args, |command, ctx| match command {
        ModelCommand::Sample(args) => sample(name, model, kernel, args, ctx),
        ModelCommand::LogZ(args) => log_z(name, model, kernel, args, ctx),
    })
}

/// Parses `args` and runs the command they name with its run context.
fn run_commands<I, T>(args: I, run: impl FnOnce(&ModelCommand, &Context) -> Result<()>) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    crate::run_parsed(args, |cli: &ModelCli, arguments| {
        // Launched by mpirun, a custom command line refuses rather than repeat its work on
        // every process (only `ebm`'s own commands are sharded).
        let world = crate::world::one_process("a custom model's command line")?;
        let ctx = Context::new(cli.quiet, cli.json, arguments, world);
        run(&cli.command, &ctx)
    })
}

fn sample<M, K>(name: &str, model: M, kernel: K, a: &ModelSampleArgs, ctx: &Context) -> Result<()>
where
    M: ProductCache<Scalar = f64, State = DMatrix<f64>>,
    K: Kernel<M>,
{
    check_matrix_output(&a.out)?;
    let record = record_path_for(&a.out);
    check_outputs(&[a.out.as_path(), record.as_path()], &[])?;
    let betas = temperature_betas(Some(a.rungs), a.betas.as_deref(), Some(a.beta_min))?;
    let ladder = TemperatureLadder::new(model, betas)
        .map_err(|e| CliError::new(format!("the ladder: {e}")))?;
    let betas = ladder.betas().to_vec();
    let beta = betas[betas.len() - 1];
    let (schedule, schedule_name) = schedule_of(a.schedule);
    let pt = ParallelTempering::new(kernel, schedule);
    let rungs = betas.iter().map(|_| ladder.model().new_state(a.chains));
    let mut state = PtState::new(rungs.collect(), a.seed)?;
    let progress = ProgressObserver(ctx.progress(a.rounds, "pt"));
    let report = pt.run(&ladder, &mut state, a.rounds, Par::Rayon, progress)?;
    let mut summary = report.summary(schedule_name, "kernel");
    let warnings = report.warning_messages();
    summary.betas = betas;
    let target = state.into_rungs().pop().expect("at least one rung");
    let mut energies = vec![0.0; a.chains];
    ladder
        .model()
        .energies(&target, beta, &mut energies, Par::Rayon);
    write_samples(&a.out, &target)?;
    for w in &warnings {
        ctx.warn(w);
    }
    let mean_energy = energies.iter().sum::<f64>() / a.chains as f64;
    ctx.say(format!(
        "{name}: {} chains at beta {beta} after {} rounds of PT ({schedule_name}), mean energy \
         {mean_energy:.4}, {} round trips: {}",
        a.chains,
        a.rounds,
        summary.round_trips,
        a.out.display()
    ));
    let results = SampleRecord {
        model: name.into(),
        beta,
        mean_energy,
        pt: summary,
        warnings,
    };
    ctx.finish(
        "sample",
        Some(a.seed),
        a,
        &[],
        &[&a.out],
        &results,
        Some(&record),
    )
}

fn log_z<M, K>(name: &str, model: M, kernel: K, a: &ModelLogZArgs, ctx: &Context) -> Result<()>
where
    M: Tractable + ProductCache<Scalar = f64, State = DMatrix<f64>>,
    K: Kernel<M>,
{
    check_outputs(&[a.out.as_path()], &[])?;
    if a.beta <= 0.0 || a.rungs < 2 {
        bail!(
            "--beta {} --rungs {}: AIS needs a target beta > 0 and at least 2 rungs",
            a.beta,
            a.rungs
        );
    }
    let betas = (0..a.rungs)
        .map(|k| a.beta * k as f64 / (a.rungs - 1) as f64)
        .collect();
    let start = Start::tractable(&model, 0.0, a.chains, a.seed, Par::Rayon)?;
    let exact = model.log_partition(a.beta);
    let ladder = TemperatureLadder::new(model, betas)?;
    let run = ais(&Ais::new(kernel), &ladder, start, Par::Rayon);
    let estimate = run.estimate;
    for w in &estimate.warnings {
        ctx.warn(w.to_string());
    }
    ctx.say(format!(
        "{name}: log Z at beta {} = {:.4} +- {:.4} (AIS, {} rungs, {} chains); exact {exact:.4}",
        a.beta, estimate.log_z, estimate.std_err, a.rungs, a.chains
    ));
    let results = LogZRecord {
        model: name.into(),
        beta: a.beta,
        ais: estimate,
        exact,
    };
    ctx.finish("log-z", Some(a.seed), a, &[], &[], &results, Some(&a.out))
}

//! `ebm train-stack` (a stack of RBMs for stacked tempering, trained with `ebm-train`) and
//! the stacked sampler of `ebm sample` (`--sampler stacked --stack FILE`).
//!
//! Stack files (a JSON manifest and one RBM file per RBM) are read and written by `ebm-io`
//! ([`ebm_io::save_stack`], [`ebm_io::load_stack`]).

use std::path::{Path, PathBuf};

use ebm_core::{Observer, Par};
use ebm_data::Domain;
use ebm_models::{Stack, StackedRbm};
use ebm_samplers::tempering::{StackLadder, StackedTempering};
use ebm_train::{StackTrainer, Trainer, TrainingData};
use serde::Serialize;

use super::sample::{
    ModeTracer, SampleOutcome, SamplerRun, TemperedRun, initial_chains, outcome, tempering,
};
use crate::cli::{OptimizerArg, SampleArgs, ScheduleArg, TrainSettings, TrainStackArgs};
use crate::error::{CliError, Result, bail};
use crate::files::check_outputs;
use crate::models::{CliLayer, KindsTask, ModelSummary, describe, visible_data, with_kinds};
use crate::progress::ProgressObserver;
use crate::record::Context;
use crate::tempering::{PtNames, schedule_of};
use ebm_train::AnyNegative;

/// Loads the stack in `path` ([`ebm_io::load_stack`]) and runs `task` on it, with the unit
/// types named in the bottom RBM's file (the upper RBMs must have the bottom's hidden kind on
/// both sides).
fn with_stack<T: StackTask>(path: &Path, task: T) -> Result<T::Output> {
    struct Load<'a, T> {
        path: &'a Path,
        task: T,
    }
    impl<T: StackTask> KindsTask for Load<'_, T> {
        type Output = T::Output;
        fn run<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(self) -> Result<T::Output> {
            let stack: Stack<V, H> = ebm_io::load_stack(self.path)?;
            self.task.run(stack, self.path)
        }
    }
    let first = ebm_io::read_stack_manifest(path)?.swap_remove(0);
    let info = ebm_io::read_rbm_info(&first)?;
    with_kinds(&info.visible, &info.hidden, &first, Load { path, task })
}

/// Work to do with a loaded stack, generic over its unit types.
trait StackTask {
    type Output;
    fn run<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
        self,
        stack: Stack<V, H>,
        path: &Path,
    ) -> Result<Self::Output>;
}

// ---------------------------------------------------------------------------------------------
// ebm train-stack
// ---------------------------------------------------------------------------------------------

/// What `ebm train-stack` reports in its run record.
#[derive(Serialize, Debug)]
struct TrainStackResults {
    /// The RBMs, bottom first.
    rbms: Vec<ModelSummary>,
    /// The RBM files written, bottom first.
    files: Vec<PathBuf>,
    /// Parameter updates per RBM.
    updates_per_rbm: u64,
    /// Training samples of the bottom RBM (after --keep-labels).
    samples: usize,
}

/// `ebm train-stack`: trains the stack on --data ([`StackTrainer`]) and writes the RBM files,
/// the manifest and the run record.
pub(super) fn train(args: &TrainStackArgs, ctx: &Context) -> Result<()> {
    let rbm_files = ebm_io::stack_rbm_paths(&args.out, args.hidden_units.len())?;
    let record = args.out.with_extension("record.json");
    let mut outputs: Vec<&Path> = vec![&args.out];
    outputs.extend(rbm_files.iter().map(PathBuf::as_path));
    let mut all_outputs = outputs.clone();
    all_outputs.push(&record);
    check_outputs(&all_outputs, &[&args.data])?;
    let load = ebm_data::LoadOptions {
        idx_labels: args.labels.clone(),
        keep_labels: args.keep_labels.clone(),
        binarize: args.binarize,
        ..Default::default()
    };
    let mut ds = ebm_data::load(&args.data, &load)
        .map_err(|e| CliError::new(format!("--data {}: {e}", args.data.display())))?;
    if let Some(q) = args.visible_states {
        ds = match ds.domain() {
            Domain::OneHot { q: dq } if dq == q => ds,
            Domain::OneHot { q: dq } => bail!(
                "--visible-states {q}: {} holds one-hot data of {dq} states",
                args.data.display()
            ),
            _ => ebm_data::Dataset::new(ds.data().clone(), Domain::Categorical { q }).map_err(
                |e| {
                    CliError::new(format!(
                        "--visible-states {q}: {} does not hold codes 0..{q}: {e}",
                        args.data.display()
                    ))
                },
            )?,
        };
    }
    let (visible, q) = match super::train::inferred_domain(&ds) {
        Domain::Binary01 => ("bernoulli", None),
        Domain::Spin => ("spin", None),
        Domain::OneHot { q } | Domain::Categorical { q } => ("potts", Some(q)),
        Domain::Real => bail!(
            "--data {}: train-stack handles {{0,1}}, {{-1,+1}}, one-hot or categorical data, \
             got real values",
            args.data.display()
        ),
    };
    let ds = super::train::potts_ready(ds, q, &args.data)?;
    let trainer = trainer(args, &ds)?;
    let samples = ds.n_samples();
    let task = Train {
        args,
        ctx,
        ds,
        q,
        trainer,
    };
    let rbms = with_kinds(visible, "bernoulli", &args.data, task)?;
    let results = TrainStackResults {
        rbms,
        files: rbm_files.clone(),
        updates_per_rbm: args.updates,
        samples,
    };
    ctx.finish(
        "train-stack",
        Some(args.seed),
        args,
        &[&args.data],
        &outputs,
        &results,
        Some(&record),
    )
}

/// The trainer of every RBM of the stack: the options of train-stack resolved and checked by
/// `ebm train`'s rules (negative phase, its ladder, batch size, learning rate), with Adam, and
/// without `ebm train`'s checkpoint selection (a stack keeps only its trained RBMs).
fn trainer(args: &TrainStackArgs, ds: &ebm_data::Dataset) -> Result<Trainer<AnyNegative>> {
    let samples = ds.weights().iter().filter(|&&w| w > 0.0).count();
    let settings = TrainSettings {
        negative: args.negative,
        sweeps: args.sweeps,
        chains: Some(args.chains),
        ladder: args.ladder.clone(),
        optimizer: Some(OptimizerArg::Adam),
        learning_rate: Some(args.learning_rate),
        batch_size: Some(args.batch_size.min(samples)),
        ..TrainSettings::default()
    };
    let mut trainer =
        super::train::resolve(&settings, crate::models::Precision::F64, args.updates, ds)?.trainer;
    trainer.checkpoints = None;
    Ok(trainer)
}

/// The training of `ebm train-stack` once the visible unit type is known.
struct Train<'a> {
    args: &'a TrainStackArgs,
    ctx: &'a Context,
    ds: ebm_data::Dataset,
    /// Potts states of the visible units (one-hot data).
    q: Option<usize>,
    trainer: Trainer<AnyNegative>,
}

impl KindsTask for Train<'_> {
    type Output = Vec<ModelSummary>;

    fn run<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
        self,
    ) -> Result<Vec<ModelSummary>> {
        let Train {
            args,
            ctx,
            ds,
            q,
            trainer,
        } = self;
        let units = ds.n_features() / q.unwrap_or(1);
        let visible = V::with_units(units, q).map_err(CliError::new)?;
        let ds = visible_data(&visible, ds, &args.data)?;
        let data =
            TrainingData::new(&visible, ds.data().clone())?.with_weights(ds.weights().to_vec())?;
        let hidden = args
            .hidden_units
            .iter()
            .map(|&m| H::with_units(m, None).map_err(CliError::new))
            .collect::<Result<Vec<_>>>()?;
        let depth = args.hidden_units.len() as u64;
        let mut progress = ProgressObserver(ctx.progress(args.updates * depth, "train-stack"));
        let stack = StackTrainer {
            trainer,
            updates: args.updates,
            weight_std: 0.01,
        }
        .train(
            visible,
            hidden,
            &data,
            args.seed,
            Par::Rayon,
            |n, u, info| progress.observe(n as u64 * args.updates + u, info),
        )?;
        ebm_io::save_stack(&stack, &args.out)?;
        ctx.say(format!("stack: {}", args.out.display()));
        let mut summaries = Vec::new();
        for (n, r) in stack.rbms().iter().enumerate() {
            let (line, summary) = match r {
                StackedRbm::Bottom(r) => (describe(r), ModelSummary::of(r)),
                StackedRbm::Upper(r) => (describe(r), ModelSummary::of(r)),
            };
            ctx.say(format!("RBM {}: {line}", n + 1));
            summaries.push(summary);
        }
        Ok(summaries)
    }
}

// ---------------------------------------------------------------------------------------------
// ebm sample --sampler stacked
// ---------------------------------------------------------------------------------------------

/// Runs `--steps` iterations of stacked tempering on the stack in `path` (`--sweeps` AGS steps
/// per RBM, then the exchanges of the schedule, default deterministic even/odd, each followed
/// by its exact refresh) with the PT rounds, diagnostics and warnings of the other tempering
/// samplers ([`tempering`]); the samples are the bottom RBM's visible configurations. Under
/// `mpirun -n K` the RBMs are sharded over the K processes by rung, and rank 0, which holds
/// the bottom RBM, returns what one process would; the other ranks return `None`.
pub(super) fn sample(
    args: &SampleArgs,
    ctx: &Context,
    data: Option<ebm_data::Dataset>,
    path: &Path,
) -> Result<Option<SampleOutcome>> {
    struct Run<'a> {
        args: &'a SampleArgs,
        ctx: &'a Context,
        data: Option<ebm_data::Dataset>,
    }
    impl StackTask for Run<'_> {
        type Output = Option<SampleOutcome>;
        fn run<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
            self,
            stack: Stack<V, H>,
            _path: &Path,
        ) -> Result<Option<SampleOutcome>> {
            let Run { args, ctx, data } = self;
            let bottom = stack.bottom().clone();
            let data = match (data, &args.data) {
                (Some(ds), Some(p)) => Some(visible_data(bottom.visible(), ds, p)?),
                _ => None,
            };
            let start = initial_chains(&bottom, args, data.as_ref())?;
            let (schedule, schedule_name) = schedule_of(args.schedule.unwrap_or(ScheduleArg::Deo));
            let mut st = StackedTempering::new(schedule);
            st.pt.kernel.sweeps = args.sweeps;
            let depth = stack.len();
            let ladder = StackLadder::new(stack);
            let state = st.init(&ladder, &start.visible, args.seed, Par::Rayon)?;
            let mut tracer = ModeTracer::new(args, data.as_ref())?;
            tracer.record(0, &state.rungs()[depth - 1].visible)?;
            let engine = st.engine(&ladder);
            let names = PtNames {
                schedule: schedule_name,
                rung0: "gibbs",
            };
            let Some(TemperedRun {
                target,
                summary: mut pt,
                warnings,
            }) = tempering(args, ctx, (&engine, &ladder), state, &mut tracer, names)?
            else {
                return Ok(None);
            };
            pt.betas = vec![1.0; depth];
            let description = format!("ST ({schedule_name}, {depth} RBMs)");
            let run = SamplerRun::tempered(target.visible, 1.0, args.sweeps, description, pt);
            let mut out = outcome(args, &bottom, run, tracer, warnings)?;
            out.model = format!("stack of {depth} RBMs, bottom {}", out.model);
            Ok(Some(out))
        }
    }
    with_stack(path, Run { args, ctx, data })
}

//! `ebm train-stack` (a stack of RBMs for stacked tempering, trained with `ebm-train`) and
//! the stacked sampler of `ebm sample` (`--sampler stacked --stack FILE`).
//!
//! A stack file is a small JSON manifest (format `ebm-stack`, version 1) listing one RBM file
//! per RBM, bottom first, by file name relative to the manifest's directory; each RBM file is
//! an ordinary `ebm-rbm` safetensors file.

use std::path::{Path, PathBuf};

use ebm_core::{Observer, Par};
use ebm_data::Domain;
use ebm_models::{Rbm, Stack};
use ebm_samplers::tempering::{StackLadder, StackedTempering};
use ebm_train::{LearningRate, Optimizer, Pcd, StackTrainer, Trainer, TrainingData};
use serde::{Deserialize, Serialize};

use super::sample::{ModeTracer, SampleOutcome, initial_chains, outcome, pt_rounds, schedule_of};
use crate::cli::{SampleArgs, ScheduleArg, TrainStackArgs};
use crate::error::{CliError, Result, bail};
use crate::files::{check_outputs, load_dataset};
use crate::models::{CliLayer, KindsTask, ModelSummary, describe, visible_data, with_kinds};
use crate::progress::ProgressObserver;
use crate::record::Context;

/// The `format` value of stack manifests.
const STACK_FORMAT: &str = "ebm-stack";
/// The version of the manifest layout.
const STACK_FORMAT_VERSION: u32 = 1;

/// The stack manifest.
#[derive(Serialize, Deserialize, Debug)]
struct Manifest {
    format: String,
    format_version: u32,
    /// RBM files, bottom first, relative to the manifest's directory.
    rbms: Vec<String>,
}

/// The RBM files of the stack in `path`, bottom first, validated.
fn read_manifest(path: &Path) -> Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::new(format!(
            "{}: cannot read the stack file: {e}",
            path.display()
        ))
    })?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| {
        CliError::new(format!(
            "{}: not a stack file (JSON manifest): {e}",
            path.display()
        ))
    })?;
    if m.format != STACK_FORMAT || m.format_version != STACK_FORMAT_VERSION {
        bail!(
            "{}: format {:?} version {}, expected {STACK_FORMAT:?} version {STACK_FORMAT_VERSION}",
            path.display(),
            m.format,
            m.format_version
        );
    }
    if m.rbms.is_empty() {
        bail!("{}: the stack lists no RBM", path.display());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    Ok(m.rbms.iter().map(|f| dir.join(f)).collect())
}

/// Loads the stack in `path` and runs `task` on it, with the unit types named in the bottom
/// RBM's file (the upper RBMs must have the bottom's hidden kind on both sides).
fn with_stack<T: StackTask>(path: &Path, task: T) -> Result<T::Output> {
    struct Load<'a, T> {
        files: Vec<PathBuf>,
        path: &'a Path,
        task: T,
    }
    impl<T: StackTask> KindsTask for Load<'_, T> {
        type Output = T::Output;
        fn run<V: CliLayer, H: CliLayer>(self) -> Result<T::Output> {
            let bottom: Rbm<V, H> = ebm_io::load_rbm(&self.files[0])?;
            let upper = self.files[1..]
                .iter()
                .map(|f| ebm_io::load_rbm::<H, H>(f).map_err(CliError::from))
                .collect::<Result<Vec<_>>>()?;
            let stack = Stack::new(bottom, upper)
                .map_err(|e| CliError::new(format!("{}: {e}", self.path.display())))?;
            self.task.run(stack, self.path)
        }
    }
    let files = read_manifest(path)?;
    let first = files[0].clone();
    let info = ebm_io::read_rbm_info(&first)?;
    with_kinds(
        &info.visible,
        &info.hidden,
        &first,
        Load { files, path, task },
    )
}

/// Work to do with a loaded stack, generic over its unit types.
trait StackTask {
    type Output;
    fn run<V: CliLayer, H: CliLayer>(self, stack: Stack<V, H>, path: &Path)
    -> Result<Self::Output>;
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
}

/// The files of a stack written to `out`: the manifest `out`, the RBM files
/// `<stem>.rbm<n>.safetensors` next to it (their names relative to the manifest) and the run
/// record `<stem>.record.json`.
struct StackFiles {
    names: Vec<String>,
    rbms: Vec<PathBuf>,
    record: PathBuf,
}

impl StackFiles {
    fn of(out: &Path, depth: usize) -> Result<Self> {
        let stem = match (out.extension().and_then(|e| e.to_str()), out.file_stem()) {
            (Some("json"), Some(stem)) => stem.to_string_lossy().into_owned(),
            _ => bail!(
                "--out {}: the stack file is a JSON manifest, give a .json path",
                out.display()
            ),
        };
        let dir = out.parent().unwrap_or(Path::new(""));
        let names: Vec<String> = (1..=depth)
            .map(|n| format!("{stem}.rbm{n}.safetensors"))
            .collect();
        Ok(Self {
            rbms: names.iter().map(|n| dir.join(n)).collect(),
            names,
            record: out.with_extension("record.json"),
        })
    }
}

/// `ebm train-stack`: trains the stack on --data ([`StackTrainer`]) and writes the RBM files,
/// the manifest and the run record.
pub(super) fn train(a: &TrainStackArgs, ctx: &Context) -> Result<()> {
    let files = StackFiles::of(&a.out, a.hidden_units.len())?;
    let mut outputs: Vec<&Path> = vec![&a.out];
    outputs.extend(files.rbms.iter().map(PathBuf::as_path));
    let mut all_outputs = outputs.clone();
    all_outputs.push(&files.record);
    check_outputs(&all_outputs, &[&a.data])?;
    let mut ds = load_dataset(&a.data)?;
    if let Some(q) = a.visible_states {
        ds = match ds.domain() {
            Domain::OneHot { q: dq } if dq == q => ds,
            Domain::OneHot { q: dq } => bail!(
                "--visible-states {q}: {} holds one-hot data of {dq} states",
                a.data.display()
            ),
            _ => ebm_data::Dataset::new(ds.data().clone(), Domain::Categorical { q }).map_err(
                |e| {
                    CliError::new(format!(
                        "--visible-states {q}: {} does not hold codes 0..{q}: {e}",
                        a.data.display()
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
            a.data.display()
        ),
    };
    let ds = super::train::potts_ready(ds, q, &a.data)?;
    let task = Train {
        a,
        ctx,
        ds,
        q,
        files: &files,
    };
    let rbms = with_kinds(visible, "bernoulli", &a.data, task)?;
    let manifest = Manifest {
        format: STACK_FORMAT.into(),
        format_version: STACK_FORMAT_VERSION,
        rbms: files.names.clone(),
    };
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| CliError::new(format!("cannot encode the stack manifest: {e}")))?;
    ebm_io::write_atomically(&a.out, |w| {
        w.write_all(text.as_bytes())?;
        w.write_all(b"\n")
    })?;
    ctx.say(format!("stack: {}", a.out.display()));
    let results = TrainStackResults {
        rbms,
        files: files.rbms.clone(),
        updates_per_rbm: a.updates,
    };
    ctx.finish(
        "train-stack",
        Some(a.seed),
        a,
        &[&a.data],
        &outputs,
        &results,
        Some(&files.record),
    )
}

/// The training of `ebm train-stack` once the visible unit type is known.
struct Train<'a> {
    a: &'a TrainStackArgs,
    ctx: &'a Context,
    ds: ebm_data::Dataset,
    /// Potts states of the visible units (one-hot data).
    q: Option<usize>,
    files: &'a StackFiles,
}

impl KindsTask for Train<'_> {
    type Output = Vec<ModelSummary>;

    fn run<V: CliLayer, H: CliLayer>(self) -> Result<Vec<ModelSummary>> {
        let Train {
            a,
            ctx,
            ds,
            q,
            files,
        } = self;
        let units = ds.n_features() / q.unwrap_or(1);
        let visible = V::with_units(units, q).map_err(CliError::new)?;
        let ds = visible_data(&visible, ds, &a.data)?;
        let data =
            TrainingData::new(&visible, ds.data().clone())?.with_weights(ds.weights().to_vec())?;
        let hidden = a
            .hidden_units
            .iter()
            .map(|&m| H::with_units(m, None).map_err(CliError::new))
            .collect::<Result<Vec<_>>>()?;
        let mut trainer = Trainer::new(
            Pcd {
                sweeps: a.sweeps,
                chains: a.chains,
            },
            a.batch_size.min(data.n_weighted_samples()),
        );
        trainer.optimizer = Optimizer::ADAM;
        trainer.learning_rate = LearningRate::Constant(a.learning_rate);
        let depth = a.hidden_units.len() as u64;
        let mut progress = ProgressObserver(ctx.progress(a.updates * depth, "train-stack"));
        let stack = StackTrainer {
            trainer,
            updates: a.updates,
            weight_std: 0.01,
        }
        .train(visible, hidden, &data, a.seed, Par::Rayon, |n, u, info| {
            progress.observe(n as u64 * a.updates + u, info)
        })?;
        let (bottom, upper) = stack.into_parts();
        ebm_io::save_rbm(&bottom, &files.rbms[0])?;
        ctx.say(format!("RBM 1: {}", describe(&bottom)));
        let mut summaries = vec![ModelSummary::of(&bottom)];
        for (n, r) in upper.iter().enumerate() {
            ebm_io::save_rbm(r, &files.rbms[n + 1])?;
            ctx.say(format!("RBM {}: {}", n + 2, describe(r)));
            summaries.push(ModelSummary::of(r));
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
/// samplers ([`pt_rounds`]); the samples are the bottom RBM's visible configurations.
pub(super) fn sample(
    a: &SampleArgs,
    ctx: &Context,
    data: Option<ebm_data::Dataset>,
    path: &Path,
) -> Result<SampleOutcome> {
    struct Run<'a> {
        a: &'a SampleArgs,
        ctx: &'a Context,
        data: Option<ebm_data::Dataset>,
    }
    impl StackTask for Run<'_> {
        type Output = SampleOutcome;
        fn run<V: CliLayer, H: CliLayer>(
            self,
            stack: Stack<V, H>,
            _path: &Path,
        ) -> Result<SampleOutcome> {
            let Run { a, ctx, data } = self;
            let bottom = stack.bottom().clone();
            let data = match (data, &a.data) {
                (Some(ds), Some(p)) => Some(visible_data(bottom.visible(), ds, p)?),
                _ => None,
            };
            let start = initial_chains(&bottom, a, data.as_ref())?;
            let (schedule, schedule_name) = schedule_of(a.schedule.unwrap_or(ScheduleArg::Deo));
            let mut st = StackedTempering::new(schedule);
            st.pt.kernel.sweeps = a.sweeps;
            let depth = stack.len();
            let ladder = StackLadder::new(stack);
            let mut state = st.init(&ladder, &start.visible, a.seed, Par::Rayon)?;
            let mut tracer = ModeTracer::new(a, data.as_ref())?;
            let (mut pt, warnings) = pt_rounds(
                a,
                ctx,
                &mut state,
                &mut tracer,
                (schedule_name, "gibbs"),
                |s| st.step(&ladder, s, Par::Rayon).exchanges,
            )?;
            pt.betas = vec![1.0; depth];
            let samples = state
                .rungs
                .pop()
                .expect("a stack has a bottom rung")
                .visible;
            let run = (
                samples,
                1.0,
                (a.sweeps * depth) as u64,
                format!("ST ({schedule_name}, {depth} RBMs)"),
                Some(pt),
            );
            let mut out = outcome(a, &bottom, run, tracer, warnings)?;
            out.model = format!("stack of {depth} RBMs, bottom {}", out.model);
            Ok(out)
        }
    }
    with_stack(path, Run { a, ctx, data })
}

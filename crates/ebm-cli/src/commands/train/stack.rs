//! `ebm train-stack`: a stack of RBMs for stacked tempering, trained with `ebm-train`
//! ([`StackTrainer`]) with the negative phases and settings of `ebm train`.
//!
//! Stack files (a JSON manifest and one RBM file per RBM) are written by `ebm-io`
//! ([`ebm_io::save_stack`]).

use std::path::{Path, PathBuf};

use ebm_core::{Observer, Par};
use ebm_data::Domain;
use ebm_models::StackedRbm;
use ebm_train::{StackTrainer, Trainer, TrainingData};
use serde::Serialize;

use crate::cli::{OptimizerArg, TrainSettings, TrainStackArgs};
use crate::error::{CliError, Result, bail};
use crate::files::check_outputs;
use crate::models::{KindsTask, ModelSummary, UnitLayer, describe, visible_data, with_kinds};
use crate::progress::ProgressObserver;
use crate::record::Context;
use ebm_train::AnyNegative;

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
pub(in crate::commands) fn train(args: &TrainStackArgs, ctx: &Context) -> Result<()> {
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
    let (visible, q) = match super::inferred_domain(&ds) {
        Domain::Binary01 => ("bernoulli", None),
        Domain::Spin => ("spin", None),
        Domain::OneHot { q } | Domain::Categorical { q } => ("potts", Some(q)),
        Domain::Real => bail!(
            "--data {}: train-stack handles {{0,1}}, {{-1,+1}}, one-hot or categorical data, \
             got real values",
            args.data.display()
        ),
    };
    let ds = super::potts_ready(ds, q, &args.data)?;
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
        super::resolve(&settings, crate::models::Precision::F64, args.updates, ds)?.trainer;
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
    type Error = CliError;

    fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
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

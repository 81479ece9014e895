//! `ebm` commands run in-process, one after the other, as a user would type them: what
//! `ebm demo` and `ebm reproduce` are made of. A [`Runner`] runs command lines with
//! placeholders for paths and keeps them for the report; [`DemoPlan`] sizes a run;
//! [`ising_and_training`] and [`train_for_ptt`] are the data and training steps they share;
//! [`mode_plus`] and [`exact_mode_plus`] measure the weight of a mode in samples and, exactly,
//! in a model.

use std::path::Path;
use std::time::Instant;

use clap::Parser;
use ebm_core::diagnostics::{ModeClassifier, mode_fractions};
use ebm_core::{Par, RngStreams};
use ebm_data::{Centering, Dataset};
use ebm_models::{Bernoulli, Layer, Rbm};
use serde::Serialize;

use crate::cli::Cli;
use crate::error::{CliError, Result, bail};
use crate::record::{Context, read_record};
use crate::results::TrainResults;

/// The sizes of a demo run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DemoPlan {
    /// Linear size L of the Ising lattice (L x L spins).
    pub(crate) lattice: usize,
    /// Inverse temperature of the Ising data (critical point 0.4407).
    pub(crate) beta: f64,
    /// Training samples.
    pub(crate) train_samples: usize,
    /// Test samples.
    pub(crate) test_samples: usize,
    /// Hidden units.
    pub(crate) hidden_units: usize,
    /// Parameter updates.
    pub(crate) updates: u64,
    /// Online log-likelihood every this many updates.
    pub(crate) loglik_every: u64,
    /// Rungs of the tempered negative phase of the training (the bridge from the pretrained
    /// model in the demo, the temperature ladder in `ebm reproduce`).
    pub(crate) train_rungs: usize,
    /// Persistent chains (systems of replicas) of the training.
    pub(crate) train_chains: usize,
    /// Learning rate.
    pub(crate) learning_rate: f64,
    /// Chains of each sampler.
    pub(crate) chains: usize,
    /// PTT rounds (Gibbs gets rounds x rungs sweeps).
    pub(crate) ptt_rounds: u64,
    /// Rungs of PTT (checkpoints kept evenly spaced along the trajectory).
    pub(crate) max_rungs: usize,
    /// Rungs of the demo's temperature (`pt`) and reference (`pt-ref`) ladders, run beside
    /// PTT at the same cost.
    pub(crate) pt_rungs: usize,
    /// Exact draws of the trained model (hidden layer enumerated) giving its mode weights.
    pub(crate) exact_draws: usize,
}

impl DemoPlan {
    pub(crate) fn new(quick: bool) -> Self {
        if quick {
            Self {
                lattice: 5,
                beta: 0.6,
                train_samples: 400,
                test_samples: 200,
                hidden_units: 6,
                updates: 150,
                loglik_every: 25,
                train_rungs: 4,
                train_chains: 100,
                learning_rate: 0.02,
                chains: 100,
                ptt_rounds: 400,
                max_rungs: 8,
                pt_rungs: 4,
                exact_draws: 20_000,
            }
        } else {
            Self {
                lattice: 8,
                beta: 0.6,
                train_samples: 2000,
                test_samples: 1000,
                hidden_units: 16,
                updates: 2000,
                loglik_every: 100,
                train_rungs: 5,
                train_chains: 300,
                learning_rate: 0.01,
                chains: 500,
                ptt_rounds: 4000,
                max_rungs: 12,
                pt_rungs: 8,
                exact_draws: 100_000,
            }
        }
    }
}

/// Runs one `ebm` command line in this process (quietly, one process, its records naming the
/// commit of `ctx`), as the user would type it after `ebm`; returns the line for the report.
fn run_command(ctx: &Context, line: &[String]) -> Result<String> {
    let mut argv = vec!["ebm".to_string(), "--quiet".to_string()];
    argv.extend(line.iter().cloned());
    let cli = Cli::try_parse_from(&argv)
        .map_err(|e| CliError::new(format!("demo: internal command line rejected: {e}")))?;
    let program = crate::Program {
        mpi: None,
        commit: ctx.commit(),
    };
    crate::commands::execute(&cli, argv, program)?;
    Ok(format!("ebm {}", line.join(" ")))
}

fn args(s: &str, paths: &[(&str, &Path)]) -> Vec<String> {
    s.split_whitespace()
        .map(|w| match paths.iter().find(|(k, _)| *k == w) {
            Some((_, p)) => p.display().to_string(),
            None => w.to_string(),
        })
        .collect()
}

/// Runs `ebm` command lines in-process, with `@NAME` placeholders replaced by paths, and keeps
/// the lines run (for the report) and their durations.
pub(crate) struct Runner<'a> {
    /// What the progress lines start with (`demo`, `reproduce`).
    pub prefix: &'static str,
    /// Placeholder -> path.
    pub paths: Vec<(&'static str, &'a Path)>,
    /// The command lines run so far, as a user would type them.
    pub commands: Vec<String>,
}

impl Runner<'_> {
    /// Runs one command line (saying `what` first, unless empty); returns its duration in
    /// seconds.
    pub fn step(&mut self, ctx: &Context, what: &str, line: &str) -> Result<f64> {
        self.step_with(ctx, what, line, &[])
    }

    /// As [`Runner::step`], with placeholders of this line only (e.g. its own record file).
    pub fn step_with(
        &mut self,
        ctx: &Context,
        what: &str,
        line: &str,
        extra: &[(&str, &Path)],
    ) -> Result<f64> {
        if !what.is_empty() {
            ctx.say(format!("{}: {what}", self.prefix));
        }
        let t = Instant::now();
        let mut paths: Vec<(&str, &Path)> = self.paths.clone();
        paths.extend_from_slice(extra);
        self.commands.push(run_command(ctx, &args(line, &paths))?);
        Ok(t.elapsed().as_secs_f64())
    }
}

/// The demo's data and training: Ising configurations at `plan.beta` (train and test files at
/// `@DATA` and `@TEST`), then a spin-bernoulli RBM trained ([`train_for_ptt`], pretrained
/// when `pretrained`) with the online log-likelihood and a checkpoint trajectory (`@MODEL`, its `.trajectory.safetensors`, `.json`
/// and `.log.csv`). The checkpoints are selected at swap acceptance 0.25, paper 000's value for
/// PTT ladders (`ebm train`'s own default, 0.7, suits trajectory AIS). Returns the training's
/// duration and its run record.
pub(crate) fn ising_and_training(
    plan: &DemoPlan,
    seed: u64,
    pretrained: bool,
    model: &Path,
    runner: &mut Runner,
    ctx: &Context,
) -> Result<(f64, TrainResults)> {
    let l = plan.lattice;
    let beta = plan.beta;
    runner.step(
        ctx,
        &format!(
            "{} equilibrium configurations of the {l}x{l} Ising model at beta = {beta} (below \
             the critical 0.4407: two modes, magnetisation near +1 or -1)",
            plan.train_samples
        ),
        &format!(
            "data generate ising --size {l} --beta {beta} --samples {} --seed {seed} --out @DATA",
            plan.train_samples
        ),
    )?;
    runner.step(
        ctx,
        "test configurations (another seed)",
        &format!(
            "data generate ising --size {l} --beta {beta} --samples {} --seed {} --out @TEST",
            plan.test_samples,
            seed.wrapping_add(1000)
        ),
    )?;
    let recipe = Recipe {
        visible: "spin",
        with_test: true,
        pretrained,
    };
    let t_train = train_for_ptt(plan, seed, recipe, model, runner, ctx)?;
    let trained = read_record::<TrainResults>(&model.with_extension("json"), "train")?.results;
    Ok((t_train, trained))
}

/// What [`train_for_ptt`] trains.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recipe {
    /// The visible units: `spin` or `bernoulli`.
    pub visible: &'static str,
    /// Whether the log-likelihood is also scored on `@TEST`.
    pub with_test: bool,
    /// Whether the model starts from the RCM pretraining (trained with `--negative bridged`)
    /// rather than from scratch (`--negative pt`).
    pub pretrained: bool,
}

/// The training of the demo and of `ebm reproduce ptt-mixing-*`: an RBM with `visible` units
/// (`spin`, `bernoulli`) and `plan.hidden_units` bernoulli hidden units trained on `@DATA` (and
/// scored on `@TEST` when `with_test`) with the online log-likelihood and a checkpoint trajectory
/// selected at swap acceptance 0.25. From scratch the negative phase is parallel tempering on
/// a temperature ladder; when `pretrained`, the model starts from the RCM on one direction
/// plus the bias (paper 000's recipe) and the negative phase is parallel tempering on the
/// bridge from it to the current model (`--negative bridged`, which keeps the pretrained
/// modes where persistent chains lose them). The checkpoints are estimated on exact draws of the
/// models (`--selection-acceptance`'s default for these enumerable hidden layers) (`@MODEL` and
/// its `.trajectory.safetensors`). Fails unless at least 2 checkpoints were kept. Returns the
/// training's duration.
pub(crate) fn train_for_ptt(
    plan: &DemoPlan,
    seed: u64,
    recipe: Recipe,
    model: &Path,
    runner: &mut Runner,
    ctx: &Context,
) -> Result<f64> {
    let Recipe {
        visible,
        with_test,
        pretrained,
    } = recipe;
    let t_train = runner.step(
        ctx,
        &format!(
            "training a {visible}-bernoulli RBM ({} hidden units), {} updates with {} ({} \
             rungs), online log-likelihood and checkpoint trajectory",
            plan.hidden_units,
            plan.updates,
            if pretrained {
                "RCM pretraining, then parallel tempering on the bridge from the pretrained \
                 model as the negative phase"
            } else {
                "a parallel-tempering negative phase"
            },
            plan.train_rungs
        ),
        &format!(
            "train --data @DATA{} --visible {visible} --hidden bernoulli --hidden-units {} \
             {} --rungs {} --sweeps 1 --chains {} --learning-rate {} \
             --batch-size 100 --updates {} --loglik-every {} --target-acceptance 0.25 \
             --seed {seed} --out @MODEL",
            if with_test { " --test @TEST" } else { "" },
            plan.hidden_units,
            if pretrained {
                "--pretrain rcm --rcm-directions 1 --rcm-mesh 100 --negative bridged"
            } else {
                "--negative pt"
            },
            plan.train_rungs,
            plan.train_chains,
            plan.learning_rate,
            plan.updates,
            plan.loglik_every
        ),
    )?;
    let trained = read_record::<TrainResults>(&model.with_extension("json"), "train")?.results;
    if trained.checkpoint_updates.len() < 2 {
        bail!(
            "{}: the training kept {} checkpoint(s); trajectory tempering needs 2 (a bug in \
             the settings, please report it)",
            runner.prefix,
            trained.checkpoint_updates.len()
        );
    }
    Ok(t_train)
}

/// Fraction of the `samples` (one per column) whose projection on the first principal component of
/// `data` (centred) is at least `threshold`: the same classification as `ebm sample
/// --trace-every --mode-threshold`.
pub(crate) fn mode_plus(
    data: &Dataset,
    samples: &nalgebra::DMatrix<f64>,
    threshold: f64,
) -> Result<f64> {
    let pca = ebm_data::pca(data, 1, Centering::Centered)?;
    let p = pca.project(samples)?;
    let labels = ModeClassifier::Threshold {
        component: 0,
        value: threshold,
    }
    .assign(&p)?;
    Ok(mode_fractions(&labels, 2)[1])
}

/// The weight of mode + (the same classification as [`mode_plus`]) of the RBM in `model`
/// (`V` visible and bernoulli hidden units), and its standard error, from `n` independent exact
/// draws: hidden configurations by enumeration of the hidden layer, then visible units from
/// their exact conditional law.
pub(crate) fn exact_mode_plus<V: Layer<Scalar = f64>>(
    model: &Path,
    data: &Dataset,
    threshold: f64,
    n: usize,
    seed: u64,
) -> Result<(f64, f64)> {
    let rbm: Rbm<V, Bernoulli<f64>> = ebm_io::load_rbm(model)?;
    let mut x = rbm.default_chains(n);
    let mut rngs = RngStreams::new(seed ^ 0x5eed_e4ac, n);
    ebm_models::exact::sample_by_hidden(&rbm, &mut x, 1.0, rngs.as_mut_slice(), Par::Rayon)?;
    let plus = mode_plus(data, &x.visible, threshold)?;
    Ok((plus, (plus * (1.0 - plus) / n as f64).sqrt()))
}

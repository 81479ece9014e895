//! `ebm sample`: Gibbs sampling and parallel tempering on a model file.

mod device;
mod latent;
mod stacked;

use std::path::Path;

use ebm_core::{ChainState, Kernel, Par, RngStreams, Scalar};
use ebm_data::Dataset;
use ebm_models::{Rbm, RbmChains};
use ebm_samplers::tempering::{
    INDEX_SYSTEMS, Ladder, ParallelTempering, PtState, PtSummary, ReferenceLadder, Rung0,
    Rung0Limits, SplitExchange, TemperatureLadder, TrajectoryLadder, even_betas,
};
use ebm_samplers::{Gibbs, run};
use nalgebra::DMatrix;
use rand::Rng;

use crate::cli::{InitArg, LatentAlgorithmArg, ModeRuleArg, SampleArgs, SamplerArg, ScheduleArg};
use crate::error::{CliError, Result, bail};
use crate::files::{check_matrix_output, check_outputs, load_dataset, write_samples};
use crate::models::{
    KindsTask, ModelSummary, Precision, UnitLayer, check_chain_memory, describe, free_energies,
    in_f64, visible_data, with_kinds_in, zero_weights,
};
use crate::progress::ProgressObserver;
use crate::record::{Context, record_path_for};
use crate::results::{ChainSummary, SampleResults};
use crate::tempering::{
    DEFAULT_RUNGS, PtNames, check_ladder_sizes, kept_checkpoints, schedule_of, temperature_betas,
};
use crate::trace;
use ebm_samplers::{ChainRecording, JumpCurve, ModeTrace, ModeTracer};

fn not_for(option: &str, sampler: &str, hint: &str) -> CliError {
    CliError::new(format!(
        "{option} does not apply to --sampler {sampler}{hint}"
    ))
}

/// Checks the options that must agree whatever the model.
fn check_options(args: &SampleArgs) -> Result<()> {
    let sampler = sampler_name(args.sampler);
    check_sampler_inputs(args, sampler)?;
    crate::tmc::check_sample_options(args, sampler)?;
    if args.sampler == SamplerArg::Tmc {
        return Ok(());
    }
    check_ladder_options(args, sampler)?;
    check_trace_options(args)
}

/// What each sampler samples (a model, a trajectory or a stack) and in which precision.
fn check_sampler_inputs(args: &SampleArgs, sampler: &str) -> Result<()> {
    if Precision::from(args.precision) == Precision::F32
        && matches!(args.sampler, SamplerArg::Tmc | SamplerArg::Stacked)
    {
        bail!(
            "--precision f32 is not available with --sampler {sampler}, which runs in f64 only; \
             drop --precision f32"
        );
    }
    if args.sampler == SamplerArg::Ptt && args.trajectory.is_none() {
        bail!("--sampler ptt needs --trajectory FILE (the checkpoints of a training run)");
    }
    if args.sampler == SamplerArg::Stacked && args.stack.is_none() {
        bail!("--sampler stacked needs --stack FILE (written by `ebm train-stack`)");
    }
    if args.sampler != SamplerArg::Stacked && args.stack.is_some() {
        return Err(not_for(
            "--stack",
            sampler,
            " (only stacked samples a stack; give the model with --model)",
        ));
    }
    if args.sampler != SamplerArg::Ptt && args.trajectory.is_some() {
        return Err(not_for(
            "--trajectory",
            sampler,
            " (only ptt samples along a trajectory; give the model with --model)",
        ));
    }
    if args.sampler != SamplerArg::Latent
        && (args.ags_sweeps > 0 || args.latent_algorithm != LatentAlgorithmArg::Single)
    {
        return Err(not_for(
            "--ags-sweeps/--latent-algorithm",
            sampler,
            " (they set --sampler latent)",
        ));
    }
    Ok(())
}

/// The ladder options (`--rungs`, `--beta-min`, `--betas`, `--beta`, `--schedule`) of each
/// sampler.
fn check_ladder_options(args: &SampleArgs, sampler: &str) -> Result<()> {
    match args.sampler {
        SamplerArg::Tmc => {}
        SamplerArg::Gibbs | SamplerArg::Latent => {
            for (set, name) in [
                (args.rungs.is_some(), "--rungs"),
                (args.beta_min.is_some(), "--beta-min"),
                (args.betas.is_some(), "--betas"),
                (args.schedule.is_some(), "--schedule"),
            ] {
                if set {
                    return Err(not_for(
                        name,
                        sampler,
                        " (it sets the ladder of pt and pt-ref)",
                    ));
                }
            }
            if let Some(b) = args.beta
                && b <= 0.0
            {
                bail!("--beta {b}: the inverse temperature must be > 0");
            }
        }
        SamplerArg::Stacked => {
            for (set, name) in [
                (args.rungs.is_some(), "--rungs"),
                (args.beta_min.is_some(), "--beta-min"),
                (args.betas.is_some(), "--betas"),
                (args.beta.is_some(), "--beta"),
            ] {
                if set {
                    return Err(not_for(
                        name,
                        sampler,
                        " (its rungs are the RBMs of the stack, all at beta = 1)",
                    ));
                }
            }
        }
        SamplerArg::Pt | SamplerArg::PtRef | SamplerArg::Ptt => {
            if args.sampler == SamplerArg::Ptt {
                for (set, name) in [
                    (args.beta_min.is_some(), "--beta-min"),
                    (args.betas.is_some(), "--betas"),
                ] {
                    if set {
                        return Err(not_for(
                            name,
                            sampler,
                            " (its rungs are the trajectory's checkpoints; choose how many with --rungs)",
                        ));
                    }
                }
            }
            if args.beta.is_some() {
                return Err(not_for(
                    "--beta",
                    sampler,
                    " (the ladder's last rung is the target; for pt, end --betas at the beta wanted)",
                ));
            }
            if args.sampler == SamplerArg::PtRef && args.beta_min.is_some() {
                return Err(not_for(
                    "--beta-min",
                    sampler,
                    " (its rungs are evenly spaced from the reference at 0; use --betas)",
                ));
            }
            check_ladder_sizes(args.rungs, args.betas.as_deref(), args.beta_min)?;
        }
    }
    Ok(())
}

/// The data, the start and the mode trace (`--data`, `--init`, `--trace-every`, `--modes`,
/// `--mode-threshold`, `--chain-out`).
fn check_trace_options(args: &SampleArgs) -> Result<()> {
    let uses_data = args.init == InitArg::Data
        || args.trace_every.is_some()
        || (args.sampler == SamplerArg::PtRef && args.data.is_some());
    if args.data.is_none() {
        if args.init == InitArg::Data {
            bail!("--init data needs --data FILE");
        }
        if args.trace_every.is_some() && args.chain_out.is_none() {
            bail!(
                "--trace-every needs --data FILE (the modes are read on the data's PCA) or \
                 --chain-out FILE (the configurations of chain 0)"
            );
        }
        if args.modes.is_some() {
            bail!("--modes needs --data FILE (the modes are defined on the data)");
        }
    } else if !uses_data {
        bail!("--data is used only by --sampler pt-ref, --init data or --trace-every; none is set");
    }
    if args.mode_threshold.is_some() && args.trace_every.is_none() {
        bail!("--mode-threshold needs --trace-every");
    }
    if args.modes.is_some() && args.trace_every.is_none() {
        bail!("--modes needs --trace-every N (the steps at which modes are recorded)");
    }
    if args.mode_threshold.is_some() && args.modes.as_ref().is_some_and(|m| *m != ModeRuleArg::Pc1)
    {
        bail!("--mode-threshold sets the boundary of --modes pc1 only");
    }
    if let Some(c) = &args.chain_out {
        check_matrix_output(c)?;
    }
    Ok(())
}

fn sampler_name(s: SamplerArg) -> &'static str {
    match s {
        SamplerArg::Gibbs => "gibbs",
        SamplerArg::Pt => "pt",
        SamplerArg::PtRef => "pt-ref",
        SamplerArg::Ptt => "ptt",
        SamplerArg::Stacked => "stacked",
        SamplerArg::Latent => "latent",
        SamplerArg::Tmc => "tmc",
    }
}

pub(super) fn execute(args: &SampleArgs, ctx: &Context) -> Result<()> {
    check_options(args)?;
    device::check_sample(args, ctx)?;
    // Gibbs runs sharded by chain, PT on a ladder and stacked tempering on a stack sharded by
    // rung (rank 0 holds the target, so it traces it); the other samplers run in one process.
    let by_rung = matches!(
        args.sampler,
        SamplerArg::Pt | SamplerArg::PtRef | SamplerArg::Ptt | SamplerArg::Stacked
    );
    if args.sampler != SamplerArg::Gibbs && !by_rung {
        ctx.one_process(&format!("--sampler {}", sampler_name(args.sampler)))?;
    }
    if !by_rung && (args.trace_every.is_some() || args.chain_out.is_some()) {
        ctx.one_process(
            "--trace-every and --chain-out with --sampler gibbs (they follow chains that \
             different processes run)",
        )?;
    }
    check_matrix_output(&args.out)?;
    let record = record_path_for(&args.out);
    let source: &Path = match (&args.model, &args.trajectory, &args.stack) {
        (Some(m), _, _) => m,
        (None, Some(t), _) => t,
        (None, None, Some(s)) => s,
        (None, None, None) => {
            bail!("give the model with --model FILE (or --trajectory FILE for ptt)")
        }
    };
    let mut inputs: Vec<&Path> = vec![source];
    if let Some(d) = &args.data {
        inputs.push(d);
    }
    if let Some(ModeRuleArg::Labels { file }) = &args.modes {
        inputs.push(file);
    }
    let mut outputs: Vec<&Path> = vec![&args.out];
    outputs.extend(args.chain_out.as_deref());
    check_outputs(&[outputs.as_slice(), &[&record]].concat(), &inputs)?;
    let data = args.data.as_deref().map(load_dataset).transpose()?;
    let outcome = if args.sampler == SamplerArg::Stacked {
        stacked::sample(args, ctx, data, source)?
    } else {
        sample_model(args, ctx, data, source)?
    };
    // The other ranks of a sharded run sent their chains to rank 0, which writes.
    let Some(outcome) = outcome else {
        return Ok(());
    };
    write_samples(&args.out, &outcome.samples)?;
    if let (Some(path), Some(chain)) = (&args.chain_out, &outcome.chain) {
        write_samples(path, &chain.states)?;
        ctx.say(format!(
            "chain 0 at {} steps: {}",
            chain.steps.len(),
            path.display()
        ));
    }
    say_outcome(ctx, args, &outcome);
    let r = &outcome.results;
    ctx.finish(
        "sample",
        Some(args.seed),
        args,
        &inputs,
        &[&args.out],
        r,
        Some(&record),
    )
}

/// Samples the model (or trajectory) in `source` with the unit kinds its header names, in
/// the precision of `--precision`; `None` on the ranks of a sharded run other than 0.
fn sample_model(
    args: &SampleArgs,
    ctx: &Context,
    data: Option<Dataset>,
    source: &Path,
) -> Result<Option<SampleOutcome>> {
    let (visible, hidden, dtype) = if args.trajectory.is_some() {
        let info = ebm_io::read_trajectory_info(source)?;
        (info.visible, info.hidden, info.dtype)
    } else {
        let info = ebm_io::read_rbm_info(source)?;
        (info.visible, info.hidden, info.dtype)
    };
    // f32 parameters are widened exactly; f64 ones are rounded to nearest.
    let rounded =
        (Precision::from(args.precision) == Precision::F32 && dtype == f64::NAME).then(|| {
            format!(
                "{}: the model's f64 parameters are rounded to f32 (--precision f32)",
                source.display()
            )
        });
    if let Some(note) = &rounded {
        ctx.warn(note);
    }
    let task = SampleTask { args, ctx, data };
    let outcome = with_kinds_in(args.precision.into(), &visible, &hidden, source, task)?;
    Ok(outcome.map(|mut o| {
        o.results.model_dtype = Some(dtype);
        o.results.rounded = rounded;
        o
    }))
}

/// What `ebm sample` says of a run: the sampler and its cost, the ladder's swaps, the modes,
/// TMC's profile, the warnings and the samples' mean free energy.
fn say_outcome(ctx: &Context, args: &SampleArgs, outcome: &SampleOutcome) {
    let r = &outcome.results;
    ctx.say(format!(
        "{} on a {}: {} chains x {} steps ({} Gibbs sweeps per chain), seed {}",
        r.description,
        outcome.model,
        r.chains,
        r.steps,
        r.steps * r.gibbs_sweeps_per_step,
        args.seed
    ));
    if let Some(pt) = &r.pt {
        let rates: Vec<String> = pt
            .acceptance_rates
            .iter()
            .map(|a| a.map_or("-".into(), |a| format!("{a:.2}")))
            .collect();
        ctx.say(format!("swap acceptance per pair: [{}]", rates.join(", ")));
        ctx.say(format!(
            "round trips: {} ({:.4} per system and round; ideal DEO with these rates {})",
            pt.round_trips,
            pt.round_trip_rate,
            pt.ideal_deo_round_trip_rate
                .map_or("-".into(), |x| format!("{x:.4}"))
        ));
    }
    if let Some(j) = &r.mode_jumps {
        say_modes(ctx, j);
    }
    if let Some(t) = &r.tmc {
        crate::tmc::report(ctx, t);
    }
    for w in &r.warnings {
        ctx.warn(w);
    }
    ctx.say(format!(
        "mean free energy of the samples {:.6}; samples: {}",
        r.mean_free_energy,
        args.out.display()
    ));
}

/// The summary lines of the modes: the rule, the jumps and the weights by mode.
fn say_modes(ctx: &Context, j: &JumpCurve) {
    let by_mode = |values: &[f64], se: Option<&[f64]>| -> String {
        values
            .iter()
            .enumerate()
            .map(|(m, v)| {
                let name = j.modes.get(m).map_or(m.to_string(), Clone::clone);
                match se.and_then(|s| s.get(m)) {
                    Some(s) => format!("{name}: {v:.3} +- {s:.3}"),
                    None => format!("{name}: {v:.3}"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    ctx.say(format!("modes ({}): {}", j.modes.len(), j.rule));
    ctx.say(format!(
        "data in each mode: {}",
        by_mode(&j.data_fractions, None)
    ));
    ctx.say(format!(
        "mode jumps per chain: {:.3} +- {:.3}; final fractions: {}",
        j.mean_jumps,
        j.sem,
        by_mode(&j.final_mode_fractions, None)
    ));
    ctx.say(format!(
        "mode weights after burn-in ({} of {} records, over chains): {}",
        j.steps.len() - j.burn_in_records,
        j.steps.len(),
        by_mode(&j.weights, Some(&j.weights_se))
    ));
}

struct SampleTask<'a> {
    args: &'a SampleArgs,
    ctx: &'a Context,
    data: Option<Dataset>,
}

pub(super) struct SampleOutcome {
    pub(super) samples: DMatrix<f64>,
    pub(super) chain: Option<ChainRecording>,
    pub(super) model: String,
    pub(super) results: SampleResults,
}

/// The checkpoints of a trajectory: training updates and models, in order.
type Checkpoints<V, H> = (Vec<u64>, Vec<Rbm<V, H>>);

impl<F: Scalar> KindsTask<F> for SampleTask<'_> {
    /// `None` on the ranks other than 0 of a sharded run.
    type Output = Option<SampleOutcome>;
    type Error = CliError;

    fn run<V: UnitLayer<Scalar = F>, H: UnitLayer<Scalar = F>>(
        self,
    ) -> Result<Option<SampleOutcome>> {
        let SampleTask { args, ctx, data } = self;
        let (rbm, file, checkpoints) = load_target::<V, H>(args)?;
        let data = match (data, &args.data) {
            (Some(ds), Some(path)) => Some(visible_data(rbm.visible(), ds, path)?),
            _ => None,
        };
        check_sampling_memory(args, &rbm, checkpoints.as_ref())?;
        let chains = initial_chains(&rbm, args, data.as_ref())?;
        let mut tracer = trace::tracer(args, data.as_ref())?;
        let mut run_warnings = Vec::new();
        let mut tmc = None;
        // A tempering sampler's warnings go with its run.
        let tempered = |run: LadderRun<F>, warnings: &mut Vec<String>| {
            run.map(|(run, w)| {
                *warnings = w;
                run
            })
        };
        let run = match args.sampler {
            SamplerArg::Gibbs => gibbs(args, ctx, &rbm, chains, &mut tracer)?,
            SamplerArg::Latent => {
                tracer.record(0, &chains.visible)?;
                Some(latent::run_latent(&rbm, args, ctx, chains, &mut tracer)?)
            }
            SamplerArg::Pt => {
                let run = pt(args, ctx, &rbm, file, chains, &mut tracer)?;
                tempered(run, &mut run_warnings)
            }
            SamplerArg::PtRef => {
                let run = pt_ref(args, ctx, &rbm, data.as_ref(), chains, &mut tracer)?;
                tempered(run, &mut run_warnings)
            }
            SamplerArg::Tmc => {
                let task = crate::tmc::SampleTmc {
                    args,
                    data: data.as_ref(),
                };
                let Some(r) = in_f64(&rbm, task)? else {
                    bail!("--sampler tmc runs in f64 only; drop --precision f32");
                };
                run_warnings = r.warnings;
                tmc = Some(r.summary);
                // In f64 (the only scalar in_f64 runs): the conversion is the identity.
                Some(SamplerRun {
                    samples: r.samples.map(F::from_f64),
                    beta: 1.0,
                    sweeps_per_step: r.sweeps_per_step,
                    description: r.description,
                    pt: None,
                })
            }
            SamplerArg::Stacked => bail!("--sampler stacked samples a stack (--stack FILE)"),
            SamplerArg::Ptt => {
                let checkpoints = checkpoints.expect("checked: ptt has --trajectory");
                let run = ptt(args, ctx, checkpoints, file, chains, &mut tracer)?;
                tempered(run, &mut run_warnings)
            }
        };
        // `None`: a rank of a sharded run other than 0.
        let Some(run) = run else {
            return Ok(None);
        };
        let mut o = outcome(args, &rbm, run, tracer, run_warnings)?;
        o.results.tmc = tmc;
        Ok(Some(o))
    }
}

/// The model to sample, the file it came from, and a trajectory's checkpoints.
type Loaded<'a, V, H> = (Rbm<V, H>, &'a Path, Option<Checkpoints<V, H>>);

/// The model to sample (`--model`, or the last checkpoint of `--trajectory`), its file, and
/// the trajectory's updates and checkpoints.
fn load_target<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &SampleArgs,
) -> Result<Loaded<'_, V, H>> {
    Ok(match (&args.model, &args.trajectory) {
        (Some(m), _) => (ebm_io::load_rbm(m)?, m, None),
        (None, Some(t)) => {
            let trajectory = ebm_io::load_trajectory::<V, H>(t)?;
            let updates = trajectory.updates().to_vec();
            let models = trajectory.into_models();
            let Some(target) = models.last().cloned() else {
                bail!("{}: the trajectory has no checkpoint", t.display());
            };
            (target, t, Some((updates, models)))
        }
        (None, None) => bail!("no model file"),
    })
}

/// Refuses a run whose chains (on every rung) and traces would not fit in memory.
fn check_sampling_memory<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &SampleArgs,
    rbm: &Rbm<V, H>,
    checkpoints: Option<&Checkpoints<V, H>>,
) -> Result<()> {
    let copies = match args.sampler {
        SamplerArg::Pt | SamplerArg::PtRef => args
            .betas
            .as_ref()
            .map_or(args.rungs.unwrap_or(DEFAULT_RUNGS), Vec::len),
        SamplerArg::Ptt => checkpoints.map_or(1, |(_, m)| m.len()),
        _ => 1,
    };
    // The modes of every chain and the configuration of chain 0, at every record; the
    // replica index process of a ladder, every round.
    let records = args.trace_every.map_or(0, |n| args.steps / n.max(1) + 1) as u128;
    let index = if copies > 1 {
        ebm_samplers::tempering::IndexProcess::bytes(
            args.steps.into(),
            copies,
            args.chains.min(INDEX_SYSTEMS),
        )
    } else {
        0
    };
    let traced = records
        .saturating_mul(args.chains as u128 + rbm.visible().width() as u128)
        .saturating_mul(8)
        .saturating_add(index);
    check_chain_memory(
        "sampling (chains and traces)",
        rbm,
        args.chains,
        copies,
        traced,
    )
}

/// `--sampler gibbs`: on the GPU (`--device cuda`), sharded over the processes of an MPI
/// run (`None` on the ranks other than 0), or here with the tracer.
fn gibbs<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &SampleArgs,
    ctx: &Context,
    rbm: &Rbm<V, H>,
    chains: RbmChains<V::Scalar>,
    tracer: &mut ModeTracer,
) -> Result<Option<SamplerRun<V::Scalar>>> {
    let beta = args.beta.unwrap_or(1.0);
    let kernel = Gibbs::new(args.sweeps);
    let world = ctx.world();
    let samples = if args.device != ebm_cuda::Device::Cpu {
        let sweeps = args.steps.saturating_mul(args.sweeps as u64);
        let job = (beta, sweeps, args.seed);
        device::sample(ctx, args.device, rbm, &chains.visible, job)?
    } else if world.size() > 1 {
        // Each rank runs its chains; rank 0 gathers them (checked: no tracer).
        let gathered = ebm_mpi::sample(
            world,
            rbm,
            &kernel,
            beta,
            &chains,
            args.seed,
            args.steps,
            Par::Rayon,
        )?;
        let Some(gathered) = gathered else {
            return Ok(None);
        };
        gathered.visible
    } else {
        let mut state = ChainState::new(chains, args.seed);
        tracer.record(0, &state.chains.visible)?;
        let progress = ProgressObserver(ctx.progress(args.steps, "gibbs"));
        let observers = (progress, tracer);
        run(
            rbm,
            &kernel,
            beta,
            &mut state,
            args.steps,
            Par::Rayon,
            observers,
        )?;
        state.chains.visible
    };
    Ok(Some(SamplerRun {
        samples,
        beta,
        sweeps_per_step: args.sweeps as u64,
        description: format!("Gibbs (beta {beta})"),
        pt: None,
    }))
}

/// A tempering sampler's run and its warnings (`None` on the ranks other than 0).
type LadderRun<F> = Option<(SamplerRun<F>, Vec<String>)>;

/// `--sampler pt`: the temperature ladder of `--betas` or the geometric one of `--beta-min`
/// and `--rungs`; its last rung is the target.
fn pt<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &SampleArgs,
    ctx: &Context,
    rbm: &Rbm<V, H>,
    file: &Path,
    chains: RbmChains<V::Scalar>,
    tracer: &mut ModeTracer,
) -> Result<LadderRun<V::Scalar>> {
    let betas = temperature_betas(args.rungs, args.betas.as_deref(), args.beta_min)?;
    let ladder = TemperatureLadder::new(rbm.clone(), betas)
        .map_err(|e| CliError::new(format!("--betas: {e}")))?;
    if (V::REAL_VALUED || H::REAL_VALUED) && ladder.betas()[0] <= 0.0 {
        bail!(
            "--betas: {} has real-valued units, whose conditional laws need beta > 0, \
             but the ladder starts at {}",
            file.display(),
            ladder.betas()[0]
        );
    }
    let betas = ladder.betas().to_vec();
    // The last rung is the target: the model at its own temperature unless --betas ends
    // elsewhere.
    let target = betas[betas.len() - 1];
    ladder_run(args, ctx, &ladder, chains, tracer, |pt| {
        pt.betas = betas;
        // The target is named only when the ladder does not end at the model itself.
        let at = if target == 1.0 {
            String::new()
        } else {
            format!(", target beta {target}")
        };
        let desc = format!("PT ({}, {} rungs{at})", pt.schedule, pt.betas.len());
        (target, desc)
    })
}

/// `--sampler pt-ref`: the ladder from the independent-site reference (visible fields from
/// the data's means, or the model's own) to the model.
fn pt_ref<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &SampleArgs,
    ctx: &Context,
    rbm: &Rbm<V, H>,
    data: Option<&Dataset>,
    chains: RbmChains<V::Scalar>,
    tracer: &mut ModeTracer,
) -> Result<LadderRun<V::Scalar>> {
    let betas = match &args.betas {
        Some(b) => b.clone(),
        None => even_betas(args.rungs.unwrap_or(DEFAULT_RUNGS))
            .map_err(|e| CliError::new(format!("--rungs: {e}")))?,
    };
    let (reference_visible, reference) =
        match data.and_then(|ds| V::from_means(ds.weighted_mean().as_slice())) {
            Some(layer) => (layer, "visible fields from the data means"),
            None => (rbm.visible().clone(), "the model's own visible fields"),
        };
    let reference_rbm = Rbm::new(reference_visible, rbm.hidden().clone(), zero_weights(rbm))?;
    let ladder = ReferenceLadder::new(rbm, &reference_rbm, betas.clone())
        .map_err(|e| CliError::new(format!("--betas: {e}")))?;
    ladder_run(args, ctx, &ladder, chains, tracer, |pt| {
        pt.betas = betas;
        pt.reference = Some(reference.into());
        let desc = format!("PT-ref ({}, {} rungs)", pt.schedule, pt.betas.len());
        (1.0, desc)
    })
}

/// `--sampler ptt`: tempering along the kept checkpoints of the trajectory.
fn ptt<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &SampleArgs,
    ctx: &Context,
    (updates, models): Checkpoints<V, H>,
    file: &Path,
    chains: RbmChains<V::Scalar>,
    tracer: &mut ModeTracer,
) -> Result<LadderRun<V::Scalar>> {
    let keep = kept_checkpoints(models.len(), args.rungs, file)?;
    let ladder = TrajectoryLadder::new(keep.iter().map(|&i| models[i].clone()).collect())?;
    ladder_run(args, ctx, &ladder, chains, tracer, |pt| {
        pt.betas = vec![1.0; keep.len()];
        pt.checkpoint_updates = Some(keep.iter().map(|&i| updates[i]).collect());
        let desc = format!("PTT ({}, {} checkpoints)", pt.schedule, keep.len());
        (1.0, desc)
    })
}

/// Runs PT on `ladder` ([`run_pt`]) and makes the sampler's run of it: `describe` completes
/// the summary (ladder, reference or checkpoints) and returns the target's inverse temperature
/// and the description. `None` on the ranks other than 0 of a sharded run.
fn ladder_run<V, H, L>(
    args: &SampleArgs,
    ctx: &Context,
    ladder: &L,
    chains: RbmChains<V::Scalar>,
    tracer: &mut ModeTracer,
    describe: impl FnOnce(&mut PtSummary) -> (f64, String),
) -> Result<LadderRun<V::Scalar>>
where
    V: UnitLayer,
    H: UnitLayer<Scalar = V::Scalar>,
    L: Ladder<Model = Rbm<V, H>>,
{
    let Some(TemperedRun {
        target: samples,
        summary: mut pt,
        warnings,
    }) = run_pt(args, ctx, ladder, chains, tracer)?
    else {
        return Ok(None);
    };
    let (beta, desc) = describe(&mut pt);
    let run = SamplerRun::tempered(samples, beta, args.sweeps, desc, pt);
    Ok(Some((run, warnings)))
}

/// What a sampler produced, before its samples are traced and recorded.
pub(super) struct SamplerRun<F: Scalar> {
    /// The target's final visible configurations, one column per chain, in the run's scalar.
    pub samples: DMatrix<F>,
    /// Their inverse temperature.
    pub beta: f64,
    /// Gibbs sweeps per chain and step (every rung's for a tempering sampler; a latent or a
    /// tethered sweep counted as one).
    pub sweeps_per_step: u64,
    /// The sampler and its settings, in words (the record's `description`).
    pub description: String,
    /// The tempering diagnostics, for the samplers that have a ladder.
    pub pt: Option<PtSummary>,
}

impl<F: Scalar> SamplerRun<F> {
    /// The run of a tempering sampler whose rungs (`pt.betas`, one per rung) each made
    /// `sweeps` Gibbs sweeps per step, and whose target is at `beta`.
    pub(super) fn tempered(
        samples: DMatrix<F>,
        beta: f64,
        sweeps: usize,
        description: String,
        pt: PtSummary,
    ) -> Self {
        let rungs = pt.betas.len() as u64;
        Self {
            samples,
            beta,
            sweeps_per_step: sweeps as u64 * rungs,
            description,
            pt: Some(pt),
        }
    }
}

/// The outcome of a run of `--sampler` on `rbm` (the target): the samples' mean free energy,
/// the mode jumps and weights traced, and the warnings. The samples are written in `f64`
/// (exact for `f32` chains).
pub(super) fn outcome<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &SampleArgs,
    rbm: &Rbm<V, H>,
    run: SamplerRun<V::Scalar>,
    tracer: ModeTracer,
    run_warnings: Vec<String>,
) -> Result<SampleOutcome> {
    let SamplerRun {
        samples,
        beta,
        sweeps_per_step,
        description,
        pt,
    } = run;
    let f = free_energies(rbm, &samples, beta);
    let mean_free_energy = f.iter().sum::<f64>() / f.len().max(1) as f64;
    let ModeTrace {
        curve: mode_jumps,
        mut warnings,
        chain,
    } = trace::finish(tracer, sweeps_per_step)?;
    warnings.extend(run_warnings);
    let chain_summary = chain
        .as_ref()
        .zip(args.chain_out.as_ref())
        .map(|(c, file)| ChainSummary {
            file: file.clone(),
            steps: c.steps.clone(),
        });
    Ok(SampleOutcome {
        chain,
        model: describe(rbm),
        results: SampleResults {
            sampler: sampler_name(args.sampler).into(),
            description,
            model: ModelSummary::of(rbm),
            chains: args.chains,
            steps: args.steps,
            gibbs_sweeps_per_step: sweeps_per_step,
            beta,
            samples_shape: [samples.ncols(), samples.nrows()],
            mean_free_energy,
            pt,
            mode_jumps,
            chain: chain_summary,
            warnings,
            tmc: None,
            precision: args.precision.into(),
            model_dtype: None,
            rounded: None,
        },
        samples: samples.map(Scalar::as_f64),
    })
}

/// What a tempering run returns: its target's state (the chains, or their visible
/// configurations), its diagnostics and its warnings.
pub(crate) struct TemperedRun<T> {
    /// The state of the target rung at the end.
    pub target: T,
    /// The diagnostics of the ladder and of its replica index process.
    pub summary: PtSummary,
    /// Why the samples may not be trusted.
    pub warnings: Vec<String>,
}

/// Below this mean acceptance of rung 0's static proposals a PTT run warns.
const MIN_RUNG0_ACCEPTANCE: f64 = 0.1;

/// Runs `--steps` rounds of PT on `ladder`, every rung starting from `chains`; returns the
/// visible configurations of the target rung, the diagnostics and the run's warnings.
///
/// PTT refreshes rung 0 with an exact draw every round when the first checkpoint's hidden
/// layer can be enumerated (paper 000, SI B: "a fresh independent sample at the bottom each
/// step"); PTT on a larger low-rank first checkpoint (a `--pretrain rcm` model) proposes the
/// static sampler of paper 000's draw every round and accepts it by Metropolis-Hastings
/// (exact for the checkpoint's own law; the record keeps the acceptance, and the run warns
/// below 0.1); other samplers, and PTT on other first checkpoints, explore rung 0 with Gibbs.
/// The rounds and their warnings are those of [`ParallelTempering::run`]. Under `mpirun -n K` the rungs
/// are sharded over the K processes ([`ebm_mpi::tempering_by_rung`]) and rank 0, which holds
/// the target, returns what one process would; the other ranks return `None`.
fn run_pt<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>, L: Ladder<Model = Rbm<V, H>>>(
    args: &SampleArgs,
    ctx: &Context,
    ladder: &L,
    chains: RbmChains<V::Scalar>,
    tracer: &mut ModeTracer,
) -> Result<Option<TemperedRun<DMatrix<V::Scalar>>>> {
    // PTT proposes every pair each round, bottom up (Béreux et al., *Fast training and sampling of RBMs*): a
    // configuration at the first checkpoint can climb several rungs in one round.
    let default = match args.sampler {
        SamplerArg::Ptt => ScheduleArg::Sweep,
        _ => ScheduleArg::Deo,
    };
    let (schedule, schedule_name) = schedule_of(args.schedule.unwrap_or(default));
    let rung0 = if args.sampler == SamplerArg::Ptt {
        let bottom = ladder.rung(0);
        Rung0::choose(
            bottom.model,
            bottom.beta,
            args.sweeps,
            Rung0Limits::PTT,
            Par::Rayon,
        )?
    } else {
        Rung0::Gibbs(Gibbs::new(args.sweeps))
    };
    let rung0_name = rung0.name();
    let pt = ParallelTempering::new(Gibbs::new(args.sweeps), schedule).with_rung0_kernel(rung0);
    tracer.record(0, &chains.visible)?;
    let state = PtState::new(vec![chains; ladder.n_rungs()], args.seed)?;
    let names = PtNames {
        schedule: schedule_name,
        rung0: rung0_name,
    };
    let run = tempering(args, ctx, (&pt, ladder), state, tracer, names)?;
    let rung0_acceptance = pt.rung0_kernel.as_ref().and_then(Rung0::acceptance);
    Ok(run.map(|mut run| {
        if let Some(acceptance) = rung0_acceptance {
            run.summary.rung0_acceptance = Some(acceptance);
            if acceptance < MIN_RUNG0_ACCEPTANCE {
                run.warnings.push(format!(
                    "rung 0 accepted {acceptance:.3} of its static proposals: it samples the \
                     first checkpoint exactly but refreshes slowly (the mesh's law is far from \
                     the checkpoint's), so PTT's bottom rung is not a fresh draw every round"
                ));
            }
        }
        TemperedRun {
            target: run.target.visible,
            summary: run.summary,
            warnings: run.warnings,
        }
    }))
}

/// Runs `--steps` rounds of `pt` on `ladder` (a ladder or a stack) from `state`, whose last
/// rung is the target; returns the target's chains, the diagnostics and the warnings of
/// [`ParallelTempering::run`]. Under `mpirun -n K` the rungs are sharded over the K processes
/// ([`ebm_mpi::tempering`]) and rank 0, which holds the target, returns what one process
/// would, bit for bit; the other ranks return `None`.
pub(crate) fn tempering<F, L, K, B>(
    args: &SampleArgs,
    ctx: &Context,
    (pt, ladder): (&ParallelTempering<K, B>, &L),
    mut state: PtState<RbmChains<F>>,
    tracer: &mut ModeTracer,
    names: PtNames<'_>,
) -> Result<Option<TemperedRun<RbmChains<F>>>>
where
    F: Scalar,
    L: SplitExchange<State = RbmChains<F>>,
    L::Part: ebm_mpi::ShardChains,
    K: Kernel<L::RungModel>,
    B: Kernel<L::RungModel>,
{
    let progress = ProgressObserver(ctx.progress(args.steps, sampler_name(args.sampler)));
    let observer = (progress, tracer);
    let report = ebm_mpi::tempering(
        ctx.world(),
        pt,
        ladder,
        &mut state,
        args.steps,
        Par::Rayon,
        observer,
    )?;
    let Some(report) = report else {
        return Ok(None);
    };
    let summary = report.summary(names.schedule, names.rung0);
    let warnings = report.warning_messages();
    let target = state.into_rungs().pop().expect("at least two rungs");
    Ok(Some(TemperedRun {
        target,
        summary,
        warnings,
    }))
}

/// The starting chains: every unit in its default state, or data samples drawn with the seed
/// (from an auxiliary stream, so the chains' own streams are untouched).
pub(super) fn initial_chains<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    a: &SampleArgs,
    data: Option<&Dataset>,
) -> Result<RbmChains<V::Scalar>> {
    let mut chains = rbm.default_chains(a.chains);
    if a.init == InitArg::Data {
        let ds = data.expect("checked: --init data has --data");
        if ds.n_samples() == 0 {
            bail!("--init data: the data file has no samples");
        }
        let mut rng = RngStreams::auxiliary(a.seed, 0);
        for j in 0..a.chains {
            let k = rng.random_range(0..ds.n_samples());
            let mut column = chains.visible.column_mut(j);
            for (x, &d) in column.iter_mut().zip(ds.sample(k)) {
                *x = V::Scalar::from_f64(d);
            }
        }
    }
    Ok(chains)
}

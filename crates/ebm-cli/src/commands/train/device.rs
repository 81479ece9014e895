//! `ebm train --device cuda`: what the GPU trains, checked before any work, and the call into
//! `ebm_cuda`.

use ebm_cuda::{Device, PcdSettings};
use ebm_train::{AnyNegative, AnyNegativeState};
use ebm_train::{LearningRate, Optimizer, TrainState, TrainingData};

use super::TrainConfig;
use crate::cli::TrainArgs;
use crate::error::{Result, bail};
use crate::gpu::{open, usable};
use crate::models::UnitLayer;
use crate::record::Context;

/// The units the GPU trains.
const GPU_UNITS: [&str; 2] = ["bernoulli", "spin"];

/// Checks that `ebm train --device cuda` asks for what the GPU trains (see `--device` in
/// `ebm train --help`), before any work.
pub(super) fn check_train(args: &TrainArgs, config: &TrainConfig, ctx: &Context) -> Result<()> {
    let d = args.device;
    if d == Device::Cpu {
        return Ok(());
    }
    let t = &config.trainer;
    let s = &args.settings;
    let refused = [
        (
            !matches!(t.negative, AnyNegative::Pcd(_)),
            "a negative phase other than pcd",
        ),
        (
            !GPU_UNITS.contains(&config.visible.as_str())
                || !GPU_UNITS.contains(&config.hidden.as_str()),
            "units other than bernoulli and spin",
        ),
        (
            t.optimizer != (Optimizer::Sgd { momentum: 0.0 }),
            "an optimiser other than sgd without momentum",
        ),
        (
            !matches!(t.learning_rate, LearningRate::Constant(_))
                || !config.learning_rate_changes.is_empty(),
            "a learning rate that changes",
        ),
        (
            t.penalty.l1 != 0.0 || t.penalty.l2 != 0.0 || t.decorrelation != 0.0,
            "a penalty",
        ),
        (!t.centred, "--uncentred"),
        (
            t.likelihood.is_some() || args.test.is_some(),
            "--loglik-every and --test",
        ),
        (args.pll_every.is_some(), "--pll-every"),
        (
            args.save_every.is_some() || args.stop_after.is_some() || args.time_limit.is_some(),
            "--save-every, --stop-after and --time-limit",
        ),
        (
            s.target_acceptance.is_some()
                || s.checkpoint_every.is_some()
                || s.selection_acceptance.is_some()
                || s.selection_draws.is_some(),
            "checkpoint selection (--target-acceptance, --checkpoint-every, --selection-*)",
        ),
    ];
    if let Some((_, what)) = refused.iter().find(|r| r.0) {
        bail!(
            "--device {d}: {what} is not available on the GPU (it trains bernoulli and spin \
             units with --negative pcd, plain SGD at a constant learning rate and the centred \
             gradient; see --device in ebm train --help)"
        );
    }
    ctx.one_process(&format!("--device {d}"))?;
    usable(d)
}

/// What [`train`] did: the GPU (`cuda:N (name)`) and the sweeps per chain of its negative
/// phase.
pub(super) struct GpuTraining {
    pub device: String,
    pub sweeps: u64,
}

/// `todo` PCD updates of `state` on the GPU of `device` (checked by [`check_train`]): the
/// model, the persistent chains and the update count of `state` are replaced by the GPU's.
/// The GPU's random numbers are its own, seeded from the run's seed and the first update (so a
/// resumed run does not repeat its numbers).
pub(super) fn train<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    ctx: &Context,
    device: Device,
    config: &TrainConfig,
    state: &mut TrainState<V, H, AnyNegativeState<V::Scalar>>,
    data: &TrainingData<V::Scalar>,
    todo: u64,
) -> Result<GpuTraining> {
    let (AnyNegative::Pcd(pcd), LearningRate::Constant(rate)) =
        (&config.trainer.negative, config.trainer.learning_rate)
    else {
        bail!("--device {device}: the GPU trains with --negative pcd at a constant rate");
    };
    let w = data.weights();
    if w.iter().any(|x| *x != w[0]) {
        bail!("--device {device}: the GPU trains on unweighted data only");
    }
    let AnyNegativeState::Pcd(chains) = &mut state.negative else {
        bail!("--device {device}: the state's chains are not those of pcd");
    };
    let gpu = open(ctx, device)?;
    let settings = PcdSettings {
        sweeps: pcd.sweeps,
        batch_size: config.trainer.batch_size,
        learning_rate: rate,
        seed: config
            .seed
            .wrapping_add(state.update.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
    };
    let (model, visible, hidden) = ebm_cuda::train_pcd(
        &gpu,
        &state.model,
        data.samples(),
        &chains.chains.visible,
        settings,
        todo,
    )?;
    state.model = model;
    chains.chains.visible = visible;
    chains.chains.hidden = hidden;
    state.update += todo;
    ctx.warn(format!(
        "--device {device}: updates {} to {} ran on the GPU; the log has no rows for them, no \
         checkpoint was selected among them, and the record's last gradient norm is not \
         computed",
        state.update - todo + 1,
        state.update
    ));
    Ok(GpuTraining {
        device: format!("{device} ({})", gpu.name()),
        sweeps: todo.saturating_mul(pcd.sweeps as u64),
    })
}

//! `ebm sample --device cuda`: what the GPU samples, checked before any work, and the call
//! into `ebm_cuda`.

use ebm_cuda::Device;
use ebm_models::Rbm;
use nalgebra::DMatrix;

use crate::cli::{SampleArgs, SamplerArg};
use crate::error::{Result, bail};
use crate::gpu::{open, usable};
use crate::models::UnitLayer;
use crate::record::Context;

/// Checks that `ebm sample --device cuda` asks for what the GPU runs: Gibbs sampling of
/// bernoulli or spin units in one process, without traces.
pub(super) fn check_sample(args: &SampleArgs, ctx: &Context) -> Result<()> {
    let d = args.device;
    if d == Device::Cpu {
        return Ok(());
    }
    if args.sampler != SamplerArg::Gibbs {
        bail!(
            "--device {d}: the GPU runs --sampler gibbs only (run the other samplers on the cpu)"
        );
    }
    if args.trace_every.is_some() || args.chain_out.is_some() {
        bail!("--device {d}: --trace-every and --chain-out are not available on the GPU");
    }
    ctx.one_process(&format!("--device {d}"))?;
    usable(d)
}

/// `sweeps` Gibbs sweeps at `beta` of every chain of `start` on the GPU of `device`; the final
/// visible configurations.
pub(super) fn sample<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    ctx: &Context,
    device: Device,
    rbm: &Rbm<V, H>,
    start: &DMatrix<V::Scalar>,
    (beta, sweeps, seed): (f64, u64, u64),
) -> Result<DMatrix<V::Scalar>> {
    let gpu = open(ctx, device)?;
    Ok(ebm_cuda::gibbs(&gpu, rbm, start, beta, sweeps, seed)?)
}

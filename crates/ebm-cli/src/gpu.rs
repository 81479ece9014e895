//! What `--device cuda` of `ebm sample` and `ebm train` share: the check that this machine has
//! a usable GPU, and opening it.

use std::sync::Arc;

use ebm_cuda::{Device, Gpu};

use crate::error::{Result, bail};
use crate::record::Context;

/// An error, before any work, when this machine has no usable GPU.
pub(crate) fn usable(d: Device) -> Result<()> {
    match ebm_cuda::unavailable() {
        Some(reason) => bail!("--device {d}: no CUDA device: {reason}"),
        None => Ok(()),
    }
}

/// Opens the GPU of `device` and says which it is.
pub(crate) fn open(ctx: &Context, device: Device) -> Result<Arc<Gpu>> {
    let gpu = Gpu::open(device)?;
    ctx.say(format!("device {device}: {}", gpu.name()));
    Ok(gpu)
}

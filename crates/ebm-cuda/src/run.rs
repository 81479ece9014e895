//! One call per job, for programs that only want the result: [`gibbs`] and [`train_pcd`]
//! (the command line's `--device cuda`). They take models of either scalar and compute in it:
//! `f32` models in `f32`, `f64` models in `f64`.

use crate::device::{Gpu, GpuScalar};
use crate::rbm::{GpuChains, GpuRbm};
use crate::train::{GpuPcd, PcdSettings};
use crate::{Error, Result};
use ebm_core::Scalar;
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;
use std::sync::Arc;

/// `sweeps` alternating Gibbs sweeps at inverse temperature `beta` of `rbm` on the GPU, from
/// the visible configurations `start` (`nv x n`, one column per chain), with the random
/// numbers of `seed` ([`GpuRbm::sweep`]); returns the final visible configurations.
///
/// # Errors
/// [`Error::InvalidParameter`] for a `beta` that is not finite and positive or a start of the
/// wrong shape; as [`GpuRbm::upload`] and [`GpuRbm::sweep`] otherwise.
pub fn gibbs<V, H>(
    gpu: &Arc<Gpu>,
    rbm: &Rbm<V, H>,
    start: &DMatrix<V::Scalar>,
    beta: f64,
    sweeps: u64,
    seed: u64,
) -> Result<DMatrix<V::Scalar>>
where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    if !(beta.is_finite() && beta > 0.0) {
        return Err(Error::invalid(
            "beta",
            format!("must be finite and > 0, got {beta}"),
        ));
    }
    if V::Scalar::NAME == "f32" {
        sweep_all(GpuRbm::<f32>::upload(gpu, rbm)?, start, beta, sweeps, seed)
    } else {
        sweep_all(GpuRbm::<f64>::upload(gpu, rbm)?, start, beta, sweeps, seed)
    }
}

/// `sweeps` sweeps at `beta` of chains of `model` started at `start`; their final visible
/// configurations in the scalar of `start`.
fn sweep_all<F: GpuScalar, S: Scalar>(
    model: GpuRbm<F>,
    start: &DMatrix<S>,
    beta: f64,
    sweeps: u64,
    seed: u64,
) -> Result<DMatrix<S>> {
    let mut chains = GpuChains::upload(&model, start, seed)?;
    chains.set_betas(&vec![beta; start.ncols()])?;
    model.sweeps(&mut chains, sweeps)?;
    chains.visible_as()
}

/// The outcome of [`train_pcd`]: the trained model and the persistent chains' final visible and
/// hidden configurations.
pub type Trained<V, H, F> = (Rbm<V, H>, DMatrix<F>, DMatrix<F>);

/// `updates` PCD updates of `rbm` on the GPU ([`GpuPcd`]) on the columns of `data`, the
/// persistent chains starting at the columns of `chains`.
///
/// # Errors
/// As [`GpuPcd::new`] and [`GpuPcd::update`].
pub fn train_pcd<V, H>(
    gpu: &Arc<Gpu>,
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
    chains: &DMatrix<V::Scalar>,
    settings: PcdSettings,
    updates: u64,
) -> Result<Trained<V, H, V::Scalar>>
where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    fn run<F: GpuScalar, V: Layer, H: Layer<Scalar = V::Scalar>>(
        mut pcd: GpuPcd<F>,
        updates: u64,
    ) -> Result<Trained<V, H, V::Scalar>> {
        pcd.train(updates)?;
        let (v, h) = pcd.download_chains()?;
        Ok((pcd.download()?, v, h))
    }
    if V::Scalar::NAME == "f32" {
        run(
            GpuPcd::<f32>::new(gpu, rbm, data, chains, settings)?,
            updates,
        )
    } else {
        run(
            GpuPcd::<f64>::new(gpu, rbm, data, chains, settings)?,
            updates,
        )
    }
}

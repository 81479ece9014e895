//! Model files and unit kinds: the kinds are read from the file's header, and one generic task
//! is run on the `Rbm<V, H>` of those kinds (every visible x hidden combination of the six unit
//! types, in `f64`, or in the precision a command chooses with `--precision`), so each command
//! is written once.

use ebm_core::{Par, Scalar};
use ebm_estimators::Start;
use ebm_models::{Layer, Rbm, RbmChains};
use nalgebra::DMatrix;

use crate::error::{Result, bail};

pub(crate) use ebm_train::kinds::{
    Enumeration, F64Task, KindsTask, LatentTask, Precision, RbmTask, UnitLayer, domain_name,
    exact_log_partition, exact_start, in_f64, visible_data, with_kinds, with_kinds_in, with_model,
};

/// A one-line description of a model: `bernoulli-spin RBM, 10 x 6 units`.
pub(crate) fn describe<V: Layer, H: Layer<Scalar = V::Scalar>>(rbm: &Rbm<V, H>) -> String {
    format!(
        "{}-{} RBM, {} x {} units",
        V::KIND,
        H::KIND,
        rbm.visible().n_units(),
        rbm.hidden().n_units()
    )
}

/// The kinds and sizes of a model, for run records.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub(crate) struct ModelSummary {
    /// Visible unit kind.
    pub visible: String,
    /// Hidden unit kind.
    pub hidden: String,
    /// Number of visible units.
    pub visible_units: usize,
    /// Number of hidden units.
    pub hidden_units: usize,
}

impl ModelSummary {
    pub fn of<V: Layer, H: Layer<Scalar = V::Scalar>>(rbm: &Rbm<V, H>) -> Self {
        Self {
            visible: V::KIND.into(),
            hidden: H::KIND.into(),
            visible_units: rbm.visible().n_units(),
            hidden_units: rbm.hidden().n_units(),
        }
    }
}

/// `n_chains` exact draws of `rbm` at \\(\beta = 0\\), the uniform law of a model whose layers
/// are discrete, with \\(\log Z_0\\) the logarithm of the number of configurations: rung 0 of a
/// temperature path ([`Start::uniform`]), after checking that both layers are discrete.
pub(crate) fn uniform_start<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    n_chains: usize,
    seed: u64,
    par: Par,
) -> Result<Start<RbmChains<f64>>> {
    if V::REAL_VALUED || H::REAL_VALUED {
        bail!(
            "a temperature path starts at beta = 0, where the {} units of this {}-{} RBM have no \
             probability law; use the reference path (--path reference)",
            if V::REAL_VALUED { V::KIND } else { H::KIND },
            V::KIND,
            H::KIND
        );
    }
    Ok(Start::uniform(rbm, n_chains, seed, par)?)
}

/// The visible free energies \\(F_\beta(v_j)\\) of every column of `data`.
pub(crate) fn free_energies<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
    beta: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; data.ncols()];
    rbm.free_energy_visible(data, beta, &mut out, Par::Rayon);
    out
}

/// Checks, before allocating, that `chains` chains of `rbm`'s units, `copies` of each (one per
/// rung of a ladder), each with a copy for updates, plus `extra` bytes, fit in the memory
/// available: sizes from the command line (`--chains 1e12`, `--rungs 1e9`) are a typed error,
/// not an aborted allocation.
///
/// # Errors
/// The [`ebm_core::Error::InsufficientMemory`] of [`ebm_core::Error::check_memory`].
pub(crate) fn check_chain_memory<V: Layer, H: Layer<Scalar = V::Scalar>>(
    what: &str,
    rbm: &Rbm<V, H>,
    chains: usize,
    copies: usize,
    extra: u128,
) -> Result<()> {
    let width = rbm.visible().width() as u128 + rbm.hidden().width() as u128;
    let bytes = [chains as u128, copies as u128, width, 16]
        .into_iter()
        .fold(1u128, u128::saturating_mul)
        .saturating_add(extra);
    Ok(ebm_core::Error::check_memory(what, bytes)?)
}

/// An all-zero weight matrix of the model's shape, for independent-site references.
pub(crate) fn zero_weights<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
) -> DMatrix<V::Scalar> {
    let (r, c) = rbm.weights().shape();
    DMatrix::from_element(r, c, V::Scalar::from_f64(0.0))
}

//! Model files and unit kinds: the kinds are read from the file's header, and one generic task
//! is run on the `Rbm<V, H>` of those kinds (every visible x hidden combination of the six unit
//! types, in `f64`, or in the precision a command chooses with `--precision`), so each command
//! is written once.

use std::path::Path;

use ebm_core::{Par, Scalar};
use ebm_data::{Dataset, Domain};
use ebm_estimators::Start;
use ebm_models::{Layer, Rbm, RbmChains};
use nalgebra::DMatrix;

use crate::error::{CliError, Result, bail};

pub(crate) use ebm_train::kinds::{
    Enumeration, F64Task, KindsTask, LatentTask, Precision, RbmTask, UnitLayer,
    exact_log_partition, exact_start, in_f64, with_kinds, with_kinds_in, with_model,
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

/// Checks that a dataset can be the visible configurations of `layer`: as many features as the
/// layer has values per chain, and every value in the layer's domain. Loaded real numbers are
/// re-labelled with the layer's domain after the check; data already in another discrete domain
/// is converted when the conversion is defined (e.g. one-hot with the same `q`).
pub(crate) fn visible_data<V: UnitLayer>(layer: &V, ds: Dataset, file: &Path) -> Result<Dataset> {
    if ds.n_features() != layer.width() {
        bail!(
            "{}: {} features per sample, but the model's {} visible layer has {} values per \
             configuration",
            file.display(),
            ds.n_features(),
            V::KIND,
            layer.width()
        );
    }
    let want = layer.data_domain();
    let ds = if ds.domain() == want {
        ds
    } else if ds.domain() == Domain::Real {
        ds.reinterpret(want).map_err(|e| {
            CliError::new(format!(
                "{}: the data do not fit the model's {} visible units ({}): {e}",
                file.display(),
                V::KIND,
                domain_name(want)
            ))
        })?
    } else {
        ds.to_domain(want).map_err(|e| {
            CliError::new(format!(
                "{}: {} data cannot be given to {} visible units: {e}",
                file.display(),
                domain_name(ds.domain()),
                V::KIND
            ))
        })?
    };
    layer
        .check_values(ds.data())
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    Ok(ds)
}

/// A short name of a domain for messages and records.
pub(crate) fn domain_name(d: Domain) -> String {
    match d {
        Domain::Binary01 => "values in {0,1}".into(),
        Domain::Spin => "values in {-1,+1}".into(),
        Domain::Categorical { q } => format!("categories 0..{}", q.saturating_sub(1)),
        Domain::OneHot { q } => format!("one-hot blocks of {q} states"),
        Domain::Real => "real values".into(),
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

/// Weighted mean and its standard error, with Kish's effective sample size
/// \\(n_{\text{eff}} = (\sum w)^2 / \sum w^2\\):
/// \\(\mathrm{se} = \sqrt{\widehat{\mathrm{Var}}_w / (n_{\text{eff}} - 1)}\\) with the weighted
/// (biased) variance \\(\widehat{\mathrm{Var}}_w\\), which is the usual \\(s/\sqrt n\\) for unit
/// weights.
pub(crate) fn weighted_mean_and_error(x: &[f64], w: &[f64]) -> (f64, f64) {
    let sw: f64 = w.iter().sum();
    let sw2: f64 = w.iter().map(|v| v * v).sum();
    if sw <= 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = x.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / sw;
    let var = x
        .iter()
        .zip(w)
        .map(|(a, b)| b * (a - mean).powi(2))
        .sum::<f64>()
        / sw;
    let n_eff = sw * sw / sw2;
    let se = if n_eff > 1.0 {
        (var / (n_eff - 1.0)).sqrt()
    } else {
        f64::NAN
    };
    (mean, se)
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

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_models::{Bernoulli, ReLU};

    #[test]
    fn weighted_error_matches_the_unweighted_formula() {
        let x = [1.0, 2.0, 4.0, 7.0];
        let (m, se) = weighted_mean_and_error(&x, &[1.0; 4]);
        assert_eq!(m, 3.5);
        let var = x.iter().map(|v| (v - 3.5f64).powi(2)).sum::<f64>() / 3.0;
        assert!((se - (var / 4.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn data_must_fit_the_visible_units() {
        let layer = Bernoulli::<f64>::zeros(2);
        let p = Path::new("d.npy");
        let ok = Dataset::new(
            DMatrix::from_row_slice(2, 2, &[0.0, 1.0, 1.0, 1.0]),
            Domain::Real,
        );
        assert_eq!(
            visible_data(&layer, ok.unwrap(), p).unwrap().domain(),
            Domain::Binary01
        );
        let spins = Dataset::new(DMatrix::from_element(2, 3, -1.0), Domain::Real).unwrap();
        let e = visible_data(&layer, spins, p).unwrap_err().to_string();
        assert!(e.contains("bernoulli") && e.contains("{0,1}"), "{e}");
        let wide = Dataset::new(DMatrix::zeros(3, 1), Domain::Real).unwrap();
        assert!(visible_data(&layer, wide, p).is_err());
        let neg = Dataset::new(DMatrix::from_element(1, 1, -0.5), Domain::Real).unwrap();
        let e = visible_data(&ReLU::<f64>::standard(1), neg, p).unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
    }
}

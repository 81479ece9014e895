//! The log-likelihood of a dataset under an RBM, given an estimate of its \\(\log Z\\).

use crate::estimate::LogZEstimate;
use ebm_core::{Error, Par, Scalar};
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// The mean log-likelihood of a dataset, \\(\mathcal L = \langle -F(v)\rangle_{\mathcal D} - \log
/// Z\\) (Béreux et al., *Fast training and sampling of RBMs*), with its error bars.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogLikelihood {
    /// \\(\mathcal L\\), in nats per sample.
    pub mean: f64,
    /// The standard error propagated from \\(\log Z\\): the error of \\(\mathcal L\\) as the
    /// log-likelihood of *this* dataset (the data term is computed exactly).
    pub std_err: f64,
    /// \\(\mathrm{sd}(-F(v))/\sqrt{M}\\) over the \\(M\\) samples: the additional error when
    /// \\(\mathcal L\\) is read as an estimate of the expected log-likelihood of the law the
    /// data were drawn from (e.g. a test set).
    pub data_std_err: f64,
    /// Number of samples \\(M\\).
    pub n_data: usize,
    /// The \\(\log Z\\) estimate used.
    pub log_z: LogZEstimate,
}

/// The log-likelihood of `data` (one visible configuration per column, as chains are stored)
/// under `rbm`:
///
/// \\[ \mathcal L = \frac1M \sum_{m=1}^M -F(v^{(m)}) - \log Z, \\]
///
/// with the visible free energies \\(F = F_1\\) of [`Rbm::free_energy_visible`] and `log_z` from
/// any estimator of this crate (exact, AIS, trajectory AIS, BAR); its standard error carries
/// over to [`LogLikelihood::std_err`].
///
/// # Errors
/// [`Error::ShapeMismatch`] if `data` does not have one row per visible value or has no
/// column; [`Error::NonFinite`] for a non-finite data value or free energy.
pub fn log_likelihood<V, H>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
    log_z: &LogZEstimate,
    par: Par,
) -> ebm_core::Result<LogLikelihood>
where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    Error::check_len(
        "data rows (visible width)",
        rbm.visible().width(),
        data.nrows(),
    )?;
    if data.ncols() == 0 {
        return Err(Error::ShapeMismatch {
            what: "data".into(),
            expected: "at least one sample (column)".into(),
            got: "0 columns".into(),
        });
    }
    let flat: Vec<f64> = data.iter().map(|x| x.as_f64()).collect();
    Error::check_finite("data", &flat)?;
    let m = data.ncols();
    let mut f = vec![0.0; m];
    rbm.free_energy_visible(data, 1.0, &mut f, par);
    Error::check_finite("visible free energies of the data", &f)?;
    let mean_neg_f = -f.iter().sum::<f64>() / m as f64;
    let data_std_err = if m > 1 {
        let var = f.iter().map(|x| (-x - mean_neg_f).powi(2)).sum::<f64>() / (m - 1) as f64;
        (var / m as f64).sqrt()
    } else {
        0.0
    };
    Ok(LogLikelihood {
        mean: mean_neg_f - log_z.log_z,
        std_err: log_z.std_err,
        data_std_err,
        n_data: m,
        log_z: log_z.clone(),
    })
}

//! `ebm train --pll-every N`: the training data's pseudo-log-likelihood (exact and paper 004's
//! one-coordinate estimate) and, when a layer can be enumerated, its exact log-likelihood,
//! logged to `<model>.pll.csv` every N updates.

use std::fmt::Write as _;

use ebm_core::{Par, RngStreams};
use ebm_models::Rbm;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};
use crate::models::{UnitLayer, exact_log_partition};

/// The columns of `<model>.pll.csv`.
pub(crate) const PLL_COLUMNS: [&str; 7] = [
    "update",
    "pll",
    "pll_std_err",
    "pll_estimate",
    "pll_estimate_std_err",
    "log_z",
    "exact_ll",
];

/// One row of the log: the mean over the training samples (unweighted) of the exact
/// pseudo-log-likelihood, of its one-coordinate estimate (the coordinates drawn from RNG
/// streams re-created from the same seed at every row, as scikit-learn reseeds, so each sample
/// flips the same coordinate every time), and the exact \\(\log Z\\) and log-likelihood when
/// the model can be enumerated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PllRow {
    pub update: u64,
    pub pll: f64,
    pub pll_std_err: f64,
    pub pll_estimate: f64,
    pub pll_estimate_std_err: f64,
    pub log_z: Option<f64>,
    pub exact_ll: Option<f64>,
}

/// The rows logged so far, as CSV text (header first).
pub(crate) struct PllLog {
    seed: u64,
    exact: bool,
    pub text: String,
    pub last: Option<PllRow>,
}

impl PllLog {
    /// A log whose estimates use streams from `seed`; `exact`: also the exact log-likelihood.
    pub fn new(seed: u64, exact: bool) -> Self {
        Self {
            seed,
            exact,
            text: format!("{}\n", PLL_COLUMNS.join(",")),
            last: None,
        }
    }

    /// Computes and appends the row of `model` at `update` on `data` (one sample per column).
    pub fn record<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
        &mut self,
        update: u64,
        model: &Rbm<V, H>,
        data: &DMatrix<V::Scalar>,
    ) -> Result<()> {
        let unavailable = || {
            CliError::new(format!(
                "--pll-every: the pseudo-log-likelihood needs discrete visible units, not {}",
                V::KIND
            ))
        };
        let exact = V::pseudo_log_likelihood_as_visible(model, data, None, Par::Rayon)
            .ok_or_else(unavailable)??;
        let mut rngs = RngStreams::new(self.seed, data.ncols());
        let estimate =
            V::pseudo_log_likelihood_as_visible(model, data, Some(rngs.as_mut_slice()), Par::Rayon)
                .ok_or_else(unavailable)??;
        let (log_z, exact_ll) = if self.exact {
            let (log_z, _) = exact_log_partition(model, 1.0, Par::Rayon)?;
            let mut f = vec![0.0; data.ncols()];
            model.free_energy_visible(data, 1.0, &mut f, Par::Rayon);
            let mean_neg_f = -f.iter().sum::<f64>() / f.len() as f64;
            (Some(log_z), Some(mean_neg_f - log_z))
        } else {
            (None, None)
        };
        let row = PllRow {
            update,
            pll: exact.mean,
            pll_std_err: exact.std_err,
            pll_estimate: estimate.mean,
            pll_estimate_std_err: estimate.std_err,
            log_z,
            exact_ll,
        };
        let opt = |x: Option<f64>| x.map_or_else(String::new, |v| v.to_string());
        let _ = writeln!(
            self.text,
            "{},{},{},{},{},{},{}",
            row.update,
            row.pll,
            row.pll_std_err,
            row.pll_estimate,
            row.pll_estimate_std_err,
            opt(row.log_z),
            opt(row.exact_ll)
        );
        self.last = Some(row);
        Ok(())
    }
}

//! `ebm loglik exact`: exact \\(\log Z\\) by enumeration and the log-likelihood of data.

use std::path::{Path, PathBuf};

use ebm_core::Par;
use ebm_data::Dataset;
use ebm_models::Rbm;
use serde::Serialize;

use crate::cli::ExactArgs;
use crate::error::{Result, bail};
use crate::files::{check_outputs, load_dataset};
use crate::models::{
    CliLayer, Enumeration, ModelSummary, RbmTask, describe, exact_log_partition, free_energies,
    visible_data, weighted_mean_and_error, with_model,
};
use crate::record::Context;

/// What `ebm loglik exact` reports.
#[derive(Serialize, Debug)]
struct ExactResults {
    model: ModelSummary,
    /// \\(\log Z\\) at \\(\beta = 1\\).
    log_z: f64,
    /// Which layer was enumerated.
    enumeration: Enumeration,
    /// One entry per data file.
    datasets: Vec<DatasetLikelihood>,
}

/// The log-likelihood of one data file.
#[derive(Serialize, Debug)]
struct DatasetLikelihood {
    path: PathBuf,
    n_samples: usize,
    /// \\(\frac1n \sum_j -F(v_j) - \log Z\\) (weighted by the sample weights).
    mean_log_likelihood: f64,
    /// Standard error of the mean over samples.
    standard_error: f64,
    /// Mean visible free energy \\(\frac1n \sum_j F(v_j)\\).
    mean_free_energy: f64,
}

pub(super) fn exact(a: &ExactArgs, ctx: &Context) -> Result<()> {
    let mut inputs: Vec<&Path> = vec![&a.model];
    inputs.extend(a.data.iter().map(PathBuf::as_path));
    if let Some(out) = &a.out {
        check_outputs(&[out], &inputs)?;
    }
    let data = a
        .data
        .iter()
        .map(|p| load_dataset(p))
        .collect::<Result<Vec<_>>>()?;
    let (model, results) = with_model(&a.model, ExactTask { a, data })?;
    ctx.say(format!(
        "{model}: log Z = {:.10} (enumerating {} {} configurations)",
        results.log_z, results.enumeration.configurations, results.enumeration.layer
    ));
    for d in &results.datasets {
        ctx.say(format!(
            "{}: {} samples, mean log-likelihood {:.6} +- {:.6} (mean free energy {:.6})",
            d.path.display(),
            d.n_samples,
            d.mean_log_likelihood,
            d.standard_error,
            d.mean_free_energy
        ));
    }
    ctx.finish(
        "loglik exact",
        None,
        a,
        &inputs,
        &[],
        &results,
        a.out.as_deref(),
    )
}

struct ExactTask<'a> {
    a: &'a ExactArgs,
    data: Vec<Dataset>,
}

impl RbmTask for ExactTask<'_> {
    type Output = (String, ExactResults);

    fn run<V: CliLayer, H: CliLayer>(self, rbm: Rbm<V, H>, _file: &Path) -> Result<Self::Output> {
        // Validate every data file before the (possibly long) enumeration.
        let mut checked = Vec::new();
        for (ds, path) in self.data.into_iter().zip(&self.a.data) {
            if ds.n_samples() == 0 {
                bail!("{}: no samples", path.display());
            }
            checked.push((visible_data(rbm.visible(), ds, path)?, path));
        }
        let (log_z, enumeration) = exact_log_partition(&rbm, 1.0, Par::Rayon)?;
        let datasets = checked
            .into_iter()
            .map(|(ds, path)| {
                let f = free_energies(&rbm, ds.data(), 1.0);
                let neg: Vec<f64> = f.iter().map(|x| -x).collect();
                let (mean_neg_f, se) = weighted_mean_and_error(&neg, ds.weights());
                DatasetLikelihood {
                    path: path.clone(),
                    n_samples: ds.n_samples(),
                    mean_log_likelihood: mean_neg_f - log_z,
                    standard_error: se,
                    mean_free_energy: -mean_neg_f,
                }
            })
            .collect();
        Ok((
            describe(&rbm),
            ExactResults {
                model: ModelSummary::of(&rbm),
                log_z,
                enumeration,
                datasets,
            },
        ))
    }
}

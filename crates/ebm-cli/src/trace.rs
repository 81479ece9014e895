//! What `ebm sample --trace-every` records: the mode of every target chain (by the rule of
//! `--modes`, on the data's principal components) and, with `--chain-out`, the configurations
//! of chain 0.

use std::path::Path;

use ebm_core::diagnostics::{ModeClassifier, mode_fractions, mode_jumps, windowed_mode_weights};
use ebm_core::{Observer, Scalar};
use ebm_data::{Centering, Dataset, Pca};
use ebm_models::RbmChains;
use ebm_samplers::{GibbsInfo, StepInfo};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::cli::{ModeRuleArg, SampleArgs};
use crate::error::{CliError, Result, bail};
use crate::files::load_dataset;

/// At most this many principal components carry a k-means or labels rule.
const MAX_MODE_COMPONENTS: usize = 10;
/// k-means seedings tried, and Lloyd iterations per seeding.
const KMEANS_RESTARTS: usize = 10;
const KMEANS_ITERATIONS: usize = 300;

/// Mean cumulative mode jumps per chain against the cost, and the mode weights.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct JumpCurve {
    /// How configurations were assigned to modes, in words (`--modes`).
    #[serde(default)]
    pub rule: String,
    /// The name of each mode.
    #[serde(default)]
    pub modes: Vec<String>,
    /// Fraction of the data in each mode under the rule.
    #[serde(default)]
    pub data_fractions: Vec<f64>,
    /// Steps between two records.
    pub record_every: u64,
    /// Step of each record (0 = the starting states).
    pub steps: Vec<u64>,
    /// Cost of each record in Gibbs sweeps per chain.
    pub gibbs_sweeps: Vec<u64>,
    /// Mean over chains of the number of jumps up to each record.
    pub cumulative_mean_jumps: Vec<f64>,
    /// Mean number of jumps per chain over the run.
    pub mean_jumps: f64,
    /// Its standard error over chains.
    pub sem: f64,
    /// Fraction of the chains in each mode at the last record.
    pub final_mode_fractions: Vec<f64>,
    /// Records discarded as burn-in before the mode weights are averaged: the first half.
    #[serde(default)]
    pub burn_in_records: usize,
    /// Mode weights averaged over the records after burn-in and over chains
    /// ([`ebm_core::diagnostics::windowed_mode_weights`]).
    #[serde(default)]
    pub weights: Vec<f64>,
    /// Their standard errors over independent chains.
    #[serde(default)]
    pub weights_se: Vec<f64>,
    /// Largest difference of the weights between the two halves of the window, in combined
    /// standard errors.
    #[serde(default)]
    pub weights_drift: f64,
    /// Mean mode changes per chain after burn-in.
    #[serde(default)]
    pub window_mean_jumps: f64,
}

/// The configurations of chain 0 recorded with `--chain-out` (one column per record).
#[derive(Debug)]
pub(crate) struct ChainRecording {
    /// Step of each record.
    pub steps: Vec<u64>,
    /// `n_visible x records`.
    pub states: DMatrix<f64>,
}

/// The modes of `--trace-every`: a rule on the data's leading principal components.
struct ModeRule {
    pca: Pca,
    classifier: ModeClassifier,
    description: String,
    names: Vec<String>,
    data_fractions: Vec<f64>,
}

impl ModeRule {
    /// The rule of `--modes` (default `pc1`) fitted to `ds`.
    fn new(args: &SampleArgs, ds: &Dataset) -> Result<Self> {
        let fit = |k: usize| {
            ebm_data::pca(ds, k.min(ds.n_features()), Centering::Centered)
                .map_err(|e| CliError::new(format!("--trace-every: PCA of the data: {e}")))
        };
        match args.modes.clone().unwrap_or(ModeRuleArg::Pc1) {
            ModeRuleArg::Pc1 => {
                let t = args.mode_threshold.unwrap_or(0.0);
                let classifier = ModeClassifier::Threshold {
                    component: 0,
                    value: t,
                };
                let description = format!(
                    "pc1: mode 1 if the first principal component of the data is >= {t}, else \
                     mode 0"
                );
                let names = vec![format!("PC1 < {t}"), format!("PC1 >= {t}")];
                Self::fitted(fit(1)?, classifier, description, names, ds)
            }
            ModeRuleArg::PcPlane { a: x, b: y, c } => {
                if ds.n_features() < 2 {
                    bail!("--modes pc-plane needs data with at least 2 features");
                }
                let plane = format!("{x} PC1 + {y} PC2 + {c}");
                let classifier = ModeClassifier::HalfPlane {
                    normal: vec![x, y],
                    offset: c,
                };
                let description =
                    format!("pc-plane: mode 1 if {plane} >= 0 on the data's PCA, else mode 0");
                let names = vec![format!("{plane} < 0"), format!("{plane} >= 0")];
                Self::fitted(fit(2)?, classifier, description, names, ds)
            }
            ModeRuleArg::Kmeans { k } => Self::kmeans(k, args.seed, ds, fit),
            ModeRuleArg::Labels { file } => Self::labels(&file, ds, fit),
        }
    }

    /// `--modes kmeans:K`: the nearest of `k` k-means centres of the data (seeded by `seed`)
    /// on its first principal components (`fit` fits the data's PCA).
    fn kmeans(
        k: usize,
        seed: u64,
        ds: &Dataset,
        fit: impl Fn(usize) -> Result<Pca>,
    ) -> Result<Self> {
        if ds.n_samples() < k {
            bail!(
                "--modes kmeans:{k}: the data have only {} samples",
                ds.n_samples()
            );
        }
        let pca = fit(k.min(MAX_MODE_COMPONENTS))?;
        let x = pca.project(ds.data())?;
        let km = ebm_data::kmeans::kmeans(&x, k, KMEANS_RESTARTS, KMEANS_ITERATIONS, seed)?;
        let centres = km
            .centres
            .column_iter()
            .map(|c| c.iter().copied().collect());
        let description = format!(
            "kmeans:{k}: the nearest of {k} k-means centres of the data (seed {seed}) on its \
             first {} principal components",
            pca.n_components()
        );
        let classifier = ModeClassifier::NearestCentre {
            centres: centres.collect(),
        };
        let names = (1..=k).map(|i| format!("cluster {i}")).collect();
        Self::fitted(pca, classifier, description, names, ds)
    }

    /// `--modes labels:FILE`: the nearest class centre of the data's labels in `file` on its
    /// first principal components (`fit` fits the data's PCA).
    fn labels(file: &Path, ds: &Dataset, fit: impl Fn(usize) -> Result<Pca>) -> Result<Self> {
        let labels = read_labels(file, ds.n_samples())?;
        let mut classes: Vec<u32> = labels.clone();
        classes.sort_unstable();
        classes.dedup();
        if classes.len() < 2 {
            bail!(
                "--modes labels:{}: one label only ({}); modes need at least two",
                file.display(),
                classes[0]
            );
        }
        let pca = fit(classes.len().min(MAX_MODE_COMPONENTS))?;
        let x = pca.project(ds.data())?;
        let centres = classes
            .iter()
            .map(|&c| {
                let members: Vec<usize> = (0..labels.len()).filter(|&j| labels[j] == c).collect();
                (0..x.nrows())
                    .map(|i| members.iter().map(|&j| x[(i, j)]).sum::<f64>() / members.len() as f64)
                    .collect()
            })
            .collect();
        let description = format!(
            "labels:{}: the nearest class centre of the data's {} labels on its first {} \
             principal components",
            file.display(),
            classes.len(),
            pca.n_components()
        );
        let names = classes.iter().map(|c| format!("label {c}")).collect();
        Self::fitted(
            pca,
            ModeClassifier::NearestCentre { centres },
            description,
            names,
            ds,
        )
    }

    /// The rule of `classifier` on the data's projection `pca`, with the data's own fractions
    /// of each mode.
    fn fitted(
        pca: Pca,
        classifier: ModeClassifier,
        description: String,
        names: Vec<String>,
        ds: &Dataset,
    ) -> Result<Self> {
        let data_labels = classifier.assign(&pca.project(ds.data())?)?;
        let data_fractions = mode_fractions(&data_labels, classifier.n_modes());
        Ok(Self {
            pca,
            classifier,
            description,
            names,
            data_fractions,
        })
    }
}

/// Reads a labels file: one integer >= 0 per data row, in a one-column data file.
pub(crate) fn read_labels(path: &Path, n_rows: usize) -> Result<Vec<u32>> {
    let ds = load_dataset(path)?;
    if ds.n_features() != 1 {
        bail!(
            "{}: a labels file has one column (one integer label per data row), this one has {}",
            path.display(),
            ds.n_features()
        );
    }
    if ds.n_samples() != n_rows {
        bail!(
            "{}: {} labels for {n_rows} data rows; give one label per row",
            path.display(),
            ds.n_samples()
        );
    }
    ds.data()
        .iter()
        .enumerate()
        .map(|(j, &v)| {
            if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64 {
                Ok(v as u32)
            } else {
                bail!(
                    "{}: row {}: label {v} is not a whole number >= 0",
                    path.display(),
                    j + 1
                )
            }
        })
        .collect()
}

/// Records the mode of every target chain, and the configuration of chain 0, every `every`
/// steps (an observer of the run).
pub(crate) struct ModeTracer {
    state: Option<TraceState>,
}

struct TraceState {
    every: u64,
    steps: Vec<u64>,
    modes: Option<(ModeRule, Vec<Vec<usize>>)>,
    chain: Option<Vec<f64>>,
}

impl ModeTracer {
    /// A tracer for `--trace-every` (modes with `data`, chain 0 with `--chain-out`), or one
    /// that records nothing.
    pub(crate) fn new(args: &SampleArgs, data: Option<&Dataset>) -> Result<Self> {
        let Some(every) = args.trace_every else {
            return Ok(Self { state: None });
        };
        let modes = data
            .map(|ds| ModeRule::new(args, ds).map(|r| (r, Vec::new())))
            .transpose()?;
        Ok(Self {
            state: Some(TraceState {
                every,
                steps: Vec::new(),
                modes,
                chain: args.chain_out.as_ref().map(|_| Vec::new()),
            }),
        })
    }

    /// Records the visible configurations of every chain at `step` (one chain per column, in
    /// the run's scalar, widened exactly to `f64`) if it is a recorded step.
    pub(crate) fn record<F: Scalar>(
        &mut self,
        step: u64,
        visible: &DMatrix<F>,
    ) -> ebm_core::Result<()> {
        let Some(s) = &mut self.state else {
            return Ok(());
        };
        if !step.is_multiple_of(s.every) {
            return Ok(());
        }
        let visible = &visible.map(F::as_f64);
        if let Some((rule, labels)) = &mut s.modes {
            let to_core = |e: ebm_data::Error| ebm_core::Error::Observer(Box::new(e));
            let projected = rule.pca.project(visible).map_err(to_core)?;
            labels.push(rule.classifier.assign(&projected)?);
        }
        if let Some(chain) = &mut s.chain {
            chain.extend(visible.column(0).iter());
        }
        s.steps.push(step);
        Ok(())
    }

    /// The jump curve and mode weights, the warnings of the weights' checks, and the
    /// recorded chain.
    pub(crate) fn finish(
        self,
        sweeps_per_step: u64,
    ) -> Result<(Option<JumpCurve>, Vec<String>, Option<ChainRecording>)> {
        let Some(s) = self.state else {
            return Ok((None, Vec::new(), None));
        };
        let chain = s.chain.map(|flat| {
            let n = flat.len() / s.steps.len().max(1);
            ChainRecording {
                steps: s.steps.clone(),
                states: DMatrix::from_vec(n, s.steps.len(), flat),
            }
        });
        let Some((rule, labels)) = s.modes else {
            return Ok((None, Vec::new(), chain));
        };
        let n_modes = rule.classifier.n_modes();
        let stats = mode_jumps(&labels)?;
        let last = labels.last().map(Vec::as_slice).unwrap_or(&[]);
        let burn_in = labels.len() / 2;
        let window = windowed_mode_weights(&labels, burn_in, n_modes).map_err(|e| {
            CliError::new(format!(
                "--trace-every {}: {e} (record more often or run more steps)",
                s.every
            ))
        })?;
        let warnings = window.warnings();
        let curve = JumpCurve {
            rule: rule.description,
            modes: rule.names,
            data_fractions: rule.data_fractions,
            record_every: s.every,
            gibbs_sweeps: s.steps.iter().map(|t| t * sweeps_per_step).collect(),
            steps: s.steps,
            cumulative_mean_jumps: stats.cumulative_mean,
            mean_jumps: stats.mean,
            sem: stats.sem,
            final_mode_fractions: mode_fractions(last, n_modes),
            burn_in_records: burn_in,
            weights_drift: window.drift,
            window_mean_jumps: window.mean_jumps,
            weights: window.weights.clone(),
            weights_se: window.se.clone(),
        };
        Ok((Some(curve), warnings, chain))
    }
}

impl<F: Scalar> Observer<StepInfo<'_, GibbsInfo, RbmChains<F>>> for ModeTracer {
    fn observe(
        &mut self,
        step: u64,
        info: &StepInfo<'_, GibbsInfo, RbmChains<F>>,
    ) -> ebm_core::Result<()> {
        self.record(step, &info.chains.visible)
    }
}

/// PT rounds report the chains of the target rung.
impl<F: Scalar> Observer<RbmChains<F>> for ModeTracer {
    fn observe(&mut self, step: u64, target: &RbmChains<F>) -> ebm_core::Result<()> {
        self.record(step, &target.visible)
    }
}

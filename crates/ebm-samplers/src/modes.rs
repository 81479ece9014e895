//! Mode jumps and mode weights of a run: every chain's configuration assigned to a mode by a
//! rule fitted on the data's leading principal components ([`ModeRule`]), recorded every few
//! steps by an observer of the run ([`ModeTracer`]: plain Gibbs through [`crate::run()`], or
//! the target rung of a parallel-tempering run), and summarised as the jumps per chain against
//! the cost and the mode weights after burn-in with their error bars ([`JumpCurve`]).
//!
//! The jumps are the mixing measure of Béreux et al., *Fast training and sampling of RBMs*
//! (Fig. 4: mode changes per chain at equal cost); the weights are
//! [`ebm_core::diagnostics::windowed_mode_weights`], which warns when the chains did not mix.
//!
//! ```
//! use ebm_core::Par;
//! use ebm_data::{Dataset, Domain};
//! use ebm_models::{Bernoulli, Rbm};
//! use ebm_samplers::{Gibbs, ModeRule, ModeTracer, run};
//! use ebm_core::ChainState;
//! use ebm_core::EnergyModel;
//! use nalgebra::DMatrix;
//!
//! // Two modes of 6 units: all on or all off.
//! let data = DMatrix::from_fn(6, 40, |_, j| (j % 2) as f64);
//! let ds = Dataset::new(data, Domain::Binary01)?;
//! let rule = ModeRule::pc1(&ds, 0.0)?;
//! assert_eq!(rule.data_fractions(), &[0.5, 0.5]);
//! let rbm = Rbm::new(Bernoulli::<f64>::zeros(6), Bernoulli::zeros(2), DMatrix::zeros(6, 2))?;
//! let mut state = ChainState::new(rbm.new_state(200), 1);
//! let mut tracer = ModeTracer::new(10, Some(rule), false);
//! tracer.record(0, &state.chains.visible)?;
//! run(&rbm, &Gibbs::new(1), 1.0, &mut state, 200, Par::Seq, &mut tracer)?;
//! let trace = tracer.finish(1)?;
//! let curve = trace.curve.expect("modes were traced");
//! // Independent units: about half the chains in each mode, many jumps.
//! assert!((curve.weights[1] - 0.5).abs() < 0.1);
//! assert!(curve.mean_jumps > 5.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ebm_core::diagnostics::{ModeClassifier, mode_fractions, mode_jumps, windowed_mode_weights};
use ebm_core::{Error, Observer, Result, Scalar};
use ebm_data::{Centering, Dataset, Pca};
use ebm_models::RbmChains;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::{GibbsInfo, StepInfo};

/// At most this many principal components carry a k-means or labels rule.
const MAX_MODE_COMPONENTS: usize = 10;
/// k-means seedings tried, and Lloyd iterations per seeding.
const KMEANS_RESTARTS: usize = 10;
const KMEANS_ITERATIONS: usize = 300;

/// An error of the data crate, as the invalid parameter `name`.
fn data_error(name: &str) -> impl Fn(ebm_data::Error) -> Error + '_ {
    move |e| Error::InvalidParameter {
        name: name.into(),
        reason: e.to_string(),
    }
}

/// How configurations are assigned to modes: a [`ModeClassifier`] on the projection of the
/// visible configurations on the data's leading principal components, with a description,
/// the modes' names and the data's own fraction in each mode.
#[derive(Clone, Debug)]
pub struct ModeRule {
    pca: Pca,
    classifier: ModeClassifier,
    description: String,
    names: Vec<String>,
    data_fractions: Vec<f64>,
}

impl ModeRule {
    fn fit_pca(ds: &Dataset, k: usize) -> Result<Pca> {
        ebm_data::pca(ds, k.min(ds.n_features()), Centering::Centered).map_err(|e| {
            Error::InvalidParameter {
                name: "data".into(),
                reason: format!("PCA of the data: {e}"),
            }
        })
    }

    /// Two modes: mode 1 where the first principal component of `ds` is at least
    /// `threshold`, mode 0 below (two modes such as the Ising model's).
    ///
    /// # Errors
    /// When the data's PCA cannot be fitted.
    pub fn pc1(ds: &Dataset, threshold: f64) -> Result<Self> {
        let t = threshold;
        let classifier = ModeClassifier::Threshold {
            component: 0,
            value: t,
        };
        let description = format!(
            "pc1: mode 1 if the first principal component of the data is >= {t}, else mode 0"
        );
        let names = vec![format!("PC1 < {t}"), format!("PC1 >= {t}")];
        Self::fitted(Self::fit_pca(ds, 1)?, classifier, description, names, ds)
    }

    /// Two modes: mode 1 where \\(a\,\mathrm{PC}_1 + b\,\mathrm{PC}_2 + c \ge 0\\) on the
    /// data's first two principal components.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for data with fewer than 2 features; when the data's PCA
    /// cannot be fitted.
    pub fn pc_plane(ds: &Dataset, a: f64, b: f64, c: f64) -> Result<Self> {
        if ds.n_features() < 2 {
            return Err(Error::InvalidParameter {
                name: "data".into(),
                reason: "a plane of two principal components needs data with at least 2 \
                         features"
                    .into(),
            });
        }
        let plane = format!("{a} PC1 + {b} PC2 + {c}");
        let classifier = ModeClassifier::HalfPlane {
            normal: vec![a, b],
            offset: c,
        };
        let description =
            format!("pc-plane: mode 1 if {plane} >= 0 on the data's PCA, else mode 0");
        let names = vec![format!("{plane} < 0"), format!("{plane} >= 0")];
        Self::fitted(Self::fit_pca(ds, 2)?, classifier, description, names, ds)
    }

    /// `k` modes: the nearest of `k` k-means centres of `ds` (seeded by `seed`, 10 seedings)
    /// on its first \\(\min(k, 10)\\) principal components.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for fewer samples than `k`; when the PCA or k-means fails.
    pub fn kmeans(ds: &Dataset, k: usize, seed: u64) -> Result<Self> {
        if ds.n_samples() < k {
            return Err(Error::InvalidParameter {
                name: "k".into(),
                reason: format!(
                    "{k} clusters, but the data have only {} samples",
                    ds.n_samples()
                ),
            });
        }
        let pca = Self::fit_pca(ds, k.min(MAX_MODE_COMPONENTS))?;
        let x = pca.project(ds.data()).map_err(data_error("data"))?;
        let km = ebm_data::kmeans::kmeans(&x, k, KMEANS_RESTARTS, KMEANS_ITERATIONS, seed)
            .map_err(data_error("k"))?;
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

    /// One mode per class of `labels` (one per sample of `ds`, read from `source`, which the
    /// description names): the nearest class centre on the data's first
    /// \\(\min(\text{classes}, 10)\\) principal components.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for a label count other than the number of samples;
    /// [`Error::InvalidParameter`] for fewer than two classes; when the PCA fails.
    pub fn labels(ds: &Dataset, labels: &[u32], source: &str) -> Result<Self> {
        Error::check_len("labels", ds.n_samples(), labels.len())?;
        let mut classes: Vec<u32> = labels.to_vec();
        classes.sort_unstable();
        classes.dedup();
        if classes.len() < 2 {
            return Err(Error::InvalidParameter {
                name: "labels".into(),
                reason: format!(
                    "one label only ({}); modes need at least two",
                    classes.first().map_or("none".into(), u32::to_string)
                ),
            });
        }
        let pca = Self::fit_pca(ds, classes.len().min(MAX_MODE_COMPONENTS))?;
        let x = pca.project(ds.data()).map_err(data_error("data"))?;
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
            "labels:{source}: the nearest class centre of the data's {} labels on its first {} \
             principal components",
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
        let projected = pca.project(ds.data()).map_err(data_error("data"))?;
        let data_labels = classifier.assign(&projected)?;
        let data_fractions = mode_fractions(&data_labels, classifier.n_modes());
        Ok(Self {
            pca,
            classifier,
            description,
            names,
            data_fractions,
        })
    }

    /// The mode of every column of `visible` (one configuration per column).
    ///
    /// # Errors
    /// When the configurations do not have the data's number of features.
    pub fn assign(&self, visible: &DMatrix<f64>) -> Result<Vec<usize>> {
        let projected = self
            .pca
            .project(visible)
            .map_err(data_error("configurations"))?;
        self.classifier.assign(&projected)
    }

    /// The rule in words.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The name of each mode.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The fraction of the data in each mode.
    pub fn data_fractions(&self) -> &[f64] {
        &self.data_fractions
    }

    /// The number of modes.
    pub fn n_modes(&self) -> usize {
        self.classifier.n_modes()
    }
}

/// Mean cumulative mode jumps per chain against the cost, and the mode weights.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct JumpCurve {
    /// How configurations were assigned to modes, in words ([`ModeRule::description`]).
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

/// The configurations of chain 0 recorded over a run (one column per record).
#[derive(Debug, Clone, PartialEq)]
pub struct ChainRecording {
    /// Step of each record.
    pub steps: Vec<u64>,
    /// `n_visible x records`.
    pub states: DMatrix<f64>,
}

/// What a [`ModeTracer`] found: the jump curve and mode weights (when it had a rule), the
/// warnings of the weights' checks (the chains did not mix, the weights drift), and chain 0's
/// configurations (when it kept them).
#[derive(Debug, Clone, PartialEq)]
pub struct ModeTrace {
    /// The jumps and weights.
    pub curve: Option<JumpCurve>,
    /// Why the weights may not be trusted.
    pub warnings: Vec<String>,
    /// Chain 0 over the run.
    pub chain: Option<ChainRecording>,
}

/// Records the mode of every chain by a [`ModeRule`], and the configuration of chain 0, every
/// `every` steps: an [`Observer`] of [`crate::run()`] (Gibbs chains) and of a parallel
/// tempering run (the chains of its target rung). Step 0 (the starting states) is recorded by
/// calling [`ModeTracer::record`] before the run.
#[derive(Debug)]
pub struct ModeTracer {
    state: Option<TraceState>,
}

#[derive(Debug)]
struct TraceState {
    every: u64,
    steps: Vec<u64>,
    modes: Option<(ModeRule, Vec<Vec<usize>>)>,
    chain: Option<Vec<f64>>,
}

impl ModeTracer {
    /// Records every `every` steps (at least 1) the modes by `rule` (if any) and, with
    /// `keep_chain0`, the configuration of chain 0.
    pub fn new(every: u64, rule: Option<ModeRule>, keep_chain0: bool) -> Self {
        Self {
            state: Some(TraceState {
                every: every.max(1),
                steps: Vec::new(),
                modes: rule.map(|r| (r, Vec::new())),
                chain: keep_chain0.then(Vec::new),
            }),
        }
    }

    /// A tracer that records nothing.
    pub fn off() -> Self {
        Self { state: None }
    }

    /// Steps between two records (`None` for [`ModeTracer::off`]).
    pub fn every(&self) -> Option<u64> {
        self.state.as_ref().map(|s| s.every)
    }

    /// Records the visible configurations of every chain at `step` (one chain per column, in
    /// the run's scalar, widened exactly to `f64`) if it is a recorded step.
    ///
    /// # Errors
    /// When the configurations do not fit the rule's data.
    pub fn record<F: Scalar>(&mut self, step: u64, visible: &DMatrix<F>) -> Result<()> {
        let Some(s) = &mut self.state else {
            return Ok(());
        };
        if !step.is_multiple_of(s.every) {
            return Ok(());
        }
        let visible = &visible.map(F::as_f64);
        if let Some((rule, labels)) = &mut s.modes {
            labels.push(rule.assign(visible)?);
        }
        if let Some(chain) = &mut s.chain {
            chain.extend(visible.column(0).iter());
        }
        s.steps.push(step);
        Ok(())
    }

    /// The jump curve and mode weights (records of the first half are burn-in), the warnings
    /// of the weights' checks, and the recorded chain; `sweeps_per_step` converts steps to
    /// Gibbs sweeps per chain (every rung's, for tempering).
    ///
    /// # Errors
    /// Too few records or chains for the jumps and weights.
    pub fn finish(self, sweeps_per_step: u64) -> Result<ModeTrace> {
        let Some(s) = self.state else {
            return Ok(ModeTrace {
                curve: None,
                warnings: Vec::new(),
                chain: None,
            });
        };
        let chain = s.chain.map(|flat| {
            let n = flat.len() / s.steps.len().max(1);
            ChainRecording {
                steps: s.steps.clone(),
                states: DMatrix::from_vec(n, s.steps.len(), flat),
            }
        });
        let Some((rule, labels)) = s.modes else {
            return Ok(ModeTrace {
                curve: None,
                warnings: Vec::new(),
                chain,
            });
        };
        let n_modes = rule.n_modes();
        let stats = mode_jumps(&labels)?;
        let last = labels.last().map(Vec::as_slice).unwrap_or(&[]);
        let burn_in = labels.len() / 2;
        let window = windowed_mode_weights(&labels, burn_in, n_modes)?;
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
        Ok(ModeTrace {
            curve: Some(curve),
            warnings,
            chain,
        })
    }
}

impl<F: Scalar> Observer<StepInfo<'_, GibbsInfo, RbmChains<F>>> for ModeTracer {
    fn observe(&mut self, step: u64, info: &StepInfo<'_, GibbsInfo, RbmChains<F>>) -> Result<()> {
        self.record(step, &info.chains.visible)
    }
}

/// Parallel-tempering rounds report the chains of the target rung.
impl<F: Scalar> Observer<RbmChains<F>> for ModeTracer {
    fn observe(&mut self, step: u64, target: &RbmChains<F>) -> Result<()> {
        self.record(step, &target.visible)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_data::Domain;

    /// 40 samples of 6 binary units: all on (odd samples) or all off (even ones).
    fn two_clusters() -> Dataset {
        Dataset::new(
            DMatrix::from_fn(6, 40, |_, j| (j % 2) as f64),
            Domain::Binary01,
        )
        .unwrap()
    }

    /// `n` chains of 6 units, chain `j` all on when `on(j)`.
    fn chains(n: usize, on: impl Fn(usize) -> bool) -> DMatrix<f64> {
        DMatrix::from_fn(6, n, |_, j| f64::from(u8::from(on(j))))
    }

    #[test]
    fn rules_split_the_data_into_its_clusters() {
        let ds = two_clusters();
        let labels: Vec<u32> = (0..40).map(|j| (j % 2) as u32).collect();
        for rule in [
            ModeRule::pc1(&ds, 0.0).unwrap(),
            ModeRule::pc_plane(&ds, 1.0, 0.0, 0.0).unwrap(),
            ModeRule::kmeans(&ds, 2, 3).unwrap(),
            ModeRule::labels(&ds, &labels, "labels.npy").unwrap(),
        ] {
            assert_eq!(rule.data_fractions(), &[0.5, 0.5], "{}", rule.description());
            let modes = rule.assign(&chains(4, |j| j < 2)).unwrap();
            assert_eq!(modes[0], modes[1], "{}", rule.description());
            assert_eq!(modes[2], modes[3]);
            assert_ne!(modes[0], modes[2], "{}", rule.description());
        }
        let e = ModeRule::kmeans(&ds, 41, 3).unwrap_err().to_string();
        assert!(e.contains("the data have only 40 samples"), "{e}");
        let e = ModeRule::labels(&ds, &[7; 40], "l")
            .unwrap_err()
            .to_string();
        assert!(e.contains("one label only (7)"), "{e}");
        assert!(ModeRule::labels(&ds, &labels[..39], "l").is_err());
    }

    /// Chain `j` is in mode `(t + j) % 2` at record `t` for `flip` chains and stays in mode 0
    /// for the others: the flipping chains jump at every record.
    fn trace(n: usize, flip: usize, records: u64, every: u64) -> ModeTrace {
        let rule = ModeRule::pc1(&two_clusters(), 0.0).unwrap();
        let on = rule.assign(&chains(1, |_| true)).unwrap()[0];
        let mut tracer = ModeTracer::new(every, Some(rule), true);
        for step in 0..records * every {
            let t = (step / every) as usize;
            let x = chains(n, |j| j < flip && (t + j) % 2 == on);
            tracer.record(step, &x).unwrap();
        }
        tracer.finish(3).unwrap()
    }

    #[test]
    fn jumps_and_weights_are_counted_from_the_records() {
        let t = trace(4, 4, 10, 5);
        let c = t.curve.unwrap();
        assert_eq!(c.steps, (0..10).map(|r| 5 * r).collect::<Vec<_>>());
        assert_eq!(c.gibbs_sweeps, (0..10).map(|r| 15 * r).collect::<Vec<_>>());
        assert_eq!(
            c.cumulative_mean_jumps,
            (0..10).map(f64::from).collect::<Vec<_>>()
        );
        assert_eq!((c.mean_jumps, c.sem), (9.0, 0.0));
        assert_eq!(c.burn_in_records, 5);
        assert_eq!(c.weights, vec![0.5, 0.5]);
        assert_eq!(c.final_mode_fractions, vec![0.5, 0.5]);
        let chain = t.chain.unwrap();
        assert_eq!(chain.states.shape(), (6, 10));
        assert_eq!(chain.steps, c.steps);
    }

    /// Negative control: chains that never leave their mode count no jumps, and the weights
    /// say they cannot be trusted.
    #[test]
    fn stuck_chains_count_no_jumps_and_warn() {
        let t = trace(4, 0, 10, 1);
        let c = t.curve.unwrap();
        assert_eq!(c.mean_jumps, 0.0);
        assert_eq!(c.weights, vec![1.0, 0.0]);
        assert!(!t.warnings.is_empty());
    }

    #[test]
    fn a_tracer_that_is_off_records_nothing() {
        let mut off = ModeTracer::off();
        off.record(0, &chains(2, |_| true)).unwrap();
        assert_eq!(off.every(), None);
        let t = off.finish(1).unwrap();
        assert!(t.curve.is_none() && t.chain.is_none() && t.warnings.is_empty());
    }
}

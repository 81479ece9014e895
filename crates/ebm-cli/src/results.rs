//! What the commands report in their run records and read back from each other's (`ebm plot`
//! and `ebm demo` read `sample`'s, `ebm reproduce` reads `sample`'s and `train`'s), and the
//! files of a training run: the record types shared between commands.

use std::path::{Path, PathBuf};

use ebm_train::SelectionAcceptance;
use serde::{Deserialize, Serialize};

use crate::models::{ModelSummary, Precision};
use crate::pll_log::PllRow;
use crate::tmc::TmcSummary;
use ebm_samplers::JumpCurve;
use ebm_samplers::tempering::PtSummary;

/// What `ebm sample` reports in its run record (read back by `ebm plot jumps | swaps`).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct SampleResults {
    /// `gibbs`, `pt`, `pt-ref` or `ptt`.
    pub sampler: String,
    /// A short description for legends, e.g. `PT (deo, 10 rungs)`.
    pub description: String,
    /// The model's unit kinds and sizes.
    pub model: ModelSummary,
    /// Number of chains (systems of replicas for PT).
    pub chains: usize,
    /// Steps (PT rounds) done.
    pub steps: u64,
    /// Gibbs sweeps per chain and step: `sweeps` for Gibbs, `sweeps x rungs` for PT.
    pub gibbs_sweeps_per_step: u64,
    /// Inverse temperature of the written samples.
    pub beta: f64,
    /// Shape of the written samples: `[chains, visible values]`.
    pub samples_shape: [usize; 2],
    /// Mean visible free energy \\(F_\beta(v)\\) of the written samples.
    pub mean_free_energy: f64,
    /// Parallel-tempering diagnostics.
    pub pt: Option<PtSummary>,
    /// Mode jumps of the target chains (with `--trace-every`).
    pub mode_jumps: Option<JumpCurve>,
    /// The configurations of chain 0 over time (with `--chain-out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainSummary>,
    /// Why the mode weights cannot be trusted, if they cannot (also printed on stderr).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Tethered Monte Carlo: settings, barrier and mode weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmc: Option<TmcSummary>,
    /// The scalar the chains ran in (`--precision`); the samples are written as before.
    #[serde(default)]
    pub precision: Precision,
    /// The scalar of the model file: an `f64` file sampled in `f32` was rounded to nearest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_dtype: Option<String>,
    /// What was rounded, when the model file's parameters were rounded to `--precision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounded: Option<String>,
}

/// Where `--chain-out` wrote chain 0, and the step of each row.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct ChainSummary {
    /// The file, as given.
    pub file: std::path::PathBuf,
    /// Step of each row.
    pub steps: Vec<u64>,
}

/// The files of a run, named after the model file.
pub(crate) struct TrainOutputs {
    pub model: PathBuf,
    pub trajectory: PathBuf,
    pub state: PathBuf,
    pub log: PathBuf,
    pub record: PathBuf,
    /// The pseudo-log-likelihood log of `--pll-every`.
    pub pll: PathBuf,
}

impl TrainOutputs {
    /// The files of the run that writes `model`.
    pub fn of(model: &Path) -> Self {
        Self {
            model: model.to_path_buf(),
            trajectory: model.with_extension("trajectory.safetensors"),
            state: model.with_extension("state.json"),
            log: model.with_extension("log.csv"),
            record: model.with_extension("json"),
            pll: model.with_extension("pll.csv"),
        }
    }
}

/// What `ebm train` reports in its run record.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct TrainResults {
    /// The model's unit kinds and sizes.
    pub model: ModelSummary,
    /// The negative phase (`pcd`, `cd`, `pt`, `jarzynski`).
    pub negative: String,
    /// Update the run started from (0, or the resumed state's).
    pub first_update: u64,
    /// Updates done in total.
    pub updates: u64,
    /// Gibbs sweeps per chain of the negative phase during this run.
    pub negative_sweeps: u64,
    /// Training updates of the checkpoints in the trajectory file (the final model last).
    pub checkpoint_updates: Vec<u64>,
    /// Neighbouring kept checkpoints whose estimated swap acceptance is below
    /// --target-acceptance (the model moved that far between two consecutive offers).
    #[serde(default)]
    pub checkpoint_pairs_below_target: Vec<ebm_train::PairBelowTarget>,
    /// What the checkpoint selection estimated the swap acceptance from (`exact` draws or the
    /// training's `chains`; `auto` resolved); also in the trajectory file's metadata.
    #[serde(default)]
    pub selection_acceptance: Option<SelectionAcceptance>,
    /// The last online estimate of \\(\log Z\\) and its standard error.
    pub log_z: Option<[f64; 2]>,
    /// Why the online estimate of \\(\log Z\\) (and so the log-likelihood) is not to be trusted
    /// (ESS, weight concentration, lineage collapse, steps too large, divergence); empty if it is.
    #[serde(default)]
    pub log_z_warnings: Vec<ebm_estimators::Warning>,
    /// The last logged mean log-likelihood of the training data (update, value).
    pub train_ll: Option<(u64, f64)>,
    /// The last logged mean log-likelihood of the test data (update, value).
    pub test_ll: Option<(u64, f64)>,
    /// Norm of the last gradient estimate (0 when the updates of this run ran on a GPU, which
    /// does not compute it; see `device`).
    pub last_gradient_norm: f64,
    /// The last row of the `--pll-every` log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pll: Option<PllRow>,
    /// What `--pretrain rcm` did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pretrain: Option<PretrainReport>,
    /// The scalar the run trained in (`--precision`); the model file is written in it.
    #[serde(default)]
    pub precision: Precision,
    /// `--negative tmc`: the updates of this run whose tether was not above the hidden units'
    /// curvature bound (their gradient may be biased).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tether_below_curvature: Option<TetherBelowCurvature>,
    /// `--device cuda`: the GPU the updates of this run ran on (`cuda:N (name)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// The updates of this run whose TMC negative phase had its tether at or below the hidden
/// units' curvature bound ([`ebm_train::Tmc::curvature_warning`]): their model term may come
/// from one component of a split tethered law.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct TetherBelowCurvature {
    /// The first such update.
    pub first_update: u64,
    /// How many updates of this run.
    pub updates: u64,
    /// The tether strength.
    pub alpha: f64,
    /// The largest curvature bound met.
    pub max_bound: f64,
}

/// What the pre-training did, for the run record.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PretrainReport {
    /// Principal directions plus the bias direction.
    pub dimensions: usize,
    /// Mesh points kept (Newton converged) and rejected.
    pub mesh_points: usize,
    /// Grid points outside the attainable region.
    pub mesh_rejected: usize,
    /// RCM objective (mean log-likelihood of the projected data, up to a constant) at the end.
    pub rcm_objective: f64,
    /// Hyperplanes kept after decimation, and dropped.
    pub hyperplanes_kept: usize,
    /// Hyperplanes dropped by decimation and the cap on hidden units.
    pub hyperplanes_dropped: usize,
    /// Newton iterations of the fit, over all refits.
    pub newton_iterations: usize,
    /// Final projected-gradient norm.
    pub gradient_norm: f64,
    /// \\(\log Z\\) of the initial (padded, still low-rank) model from the mesh.
    pub log_z_mesh: f64,
    /// Its exact \\(\log Z\\), when the hidden layer can be enumerated.
    pub log_z_exact: Option<f64>,
    /// Wall-clock seconds of the pre-training.
    pub seconds: f64,
    /// The figure of the data against static draws of the model.
    pub figure: PathBuf,
    /// How PCD's persistent chains were drawn: `exact` (hidden layer enumerated) or
    /// `resampled` (static draws importance-resampled to the model); absent for the other
    /// negative phases, which keep their own initial chains.
    #[serde(default)]
    pub chains_start: Option<String>,
    /// The static sampler against the model ([`PretrainedStart::check_static`](ebm_train::pretrain::PretrainedStart::check_static)): \\(\log Z\\) by
    /// importance sampling, its standard error and the relative ESS.
    #[serde(default)]
    pub static_check: Option<StaticCheckReport>,
    /// What cannot be trusted in the start (also printed on stderr).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// [`PretrainReport::static_check`].
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct StaticCheckReport {
    /// \\(\log Z\\) of the initial model by importance sampling from the static sampler.
    pub log_z: f64,
    /// Its standard error.
    pub std_err: f64,
    /// Kish ESS over the number of static draws.
    pub relative_ess: f64,
}

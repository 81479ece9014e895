//! `ebm train`: trains an RBM on a data file with `ebm-train`, writes the model, the
//! checkpoint trajectory, the training state (for `--resume`), a CSV log and the run record.

mod device;
mod pretrain;
pub(super) mod stack;

use std::path::{Path, PathBuf};

use ebm_core::{Observer, Par, Scalar};
use ebm_data::{Dataset, Domain};
use ebm_models::Layer;
use ebm_samplers::tethered::profile::TmcWarning;
use ebm_train::observe::CsvLog;
use ebm_train::{
    AnyNegative, AnyNegativeState, BridgeSpec, Cd, CheckpointPolicy, Jarzynski, LearningRate,
    LikelihoodPolicy, Optimizer, Pcd, Penalty, SelectionAcceptance, Tempered, TrainInfo,
    TrainState, Trainer, TrainingData, initial_model,
};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::cli::{
    LrScheduleArg, NegativeArg, OptimizerArg, ScheduleArg, SelectionAcceptanceArg, TrainArgs,
    TrainSettings, UnitArg,
};
use crate::error::{CliError, Result, bail};
use crate::files::{check_outputs, load_dataset};
use crate::models::{
    KindsTask, ModelSummary, Precision, UnitLayer, describe, exact_log_partition, visible_data,
    with_kinds_in,
};
use crate::pll_log::PllLog;
use crate::progress::ProgressObserver;
use crate::record::{Context, RecordText, write_record};
use crate::results::{PretrainReport, TetherBelowCurvature, TrainOutputs, TrainResults};
use crate::tempering::temperature_betas;

/// The `format` value of training state files.
const STATE_FORMAT: &str = "ebm-train-state";
/// The version of the state file layout written. Version 2 is version 1 with the checksum
/// required (version-1 files are still read: those written before checksums have none).
const STATE_FORMAT_VERSION: u32 = 2;
/// The oldest version of the state file layout read.
const OLDEST_STATE_FORMAT_VERSION: u32 = 1;
/// Where state files record their version, and the version from which every state file
/// carries a checksum.
const STATE_CHECKSUMS: ebm_io::output::ChecksumsSince = ebm_io::output::ChecksumsSince {
    version_at: "/format_version",
    version: 2,
};
/// Largest number of configurations enumerated for the exact \\(\log Z\\) of an initial model
/// with couplings (the start of the online log-likelihood).
const MAX_INITIAL_ENUMERATION: u128 = 1 << 22;

/// The default target swap acceptance between kept checkpoints: 0.7, the reference code's
/// value for the log-likelihood checkpoints (Béreux et al., *Fast training and sampling of RBMs*). For trajectory AIS
/// the variance of the log weights of a pair with swap acceptance a is about
/// s^2 = 2 [Phi^-1(a/2)]^2 (Gaussian works): 2.6 at 0.25 but 0.3 at 0.7, so a few
/// checkpoints at 0.25 leave almost no effective samples; PTT mixes as well at 0.7 (its
/// round-trip rate depends on the summed rejections, not their number) for about three times
/// the rungs of 0.25.
const DEFAULT_TARGET_ACCEPTANCE: f64 = 0.7;

// ---------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------

/// The resolved settings of a run (every default filled in): stored in the state file, so
/// that `--resume` continues with exactly these.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TrainConfig {
    /// Seed of every stream.
    pub seed: u64,
    /// Visible unit kind.
    pub visible: String,
    /// Hidden unit kind.
    pub hidden: String,
    /// Number of hidden units.
    pub hidden_units: usize,
    /// States per visible Potts unit.
    pub visible_states: Option<usize>,
    /// States per hidden Potts unit.
    pub hidden_states: Option<usize>,
    /// Standard deviation of the initial weights.
    pub init_std: f64,
    /// The scalar of the model, the chains, the gradient and the optimiser (`f64` in state
    /// files written before it was recorded).
    #[serde(default)]
    pub precision: Precision,
    /// The trainer: negative phase, batch size, learning rate, optimiser, penalties, centring,
    /// checkpoint selection and online log-likelihood.
    pub trainer: Trainer<AnyNegative>,
    /// `--pretrain rcm`: the low-rank initial model's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pretrain: Option<pretrain::PretrainSettings>,
    /// The `--updates` of the first run: the span of a learning-rate schedule (`None` in
    /// state files written before it was recorded).
    #[serde(default)]
    pub schedule_updates: Option<u64>,
    /// Learning rates set on resume (`--learning-rate` with `--resume`): from each `update`
    /// on, the constant `rate`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learning_rate_changes: Vec<LearningRateChange>,
}

impl TrainConfig {
    /// Checks the settings read from a state file against what the command line accepts
    /// (the trainer's and the negative phase's own settings are checked by
    /// [`Trainer::check_state`]); returns an error naming the field.
    fn check(&self) -> ebm_core::Result<()> {
        let invalid = |name: &str, reason: String| ebm_core::Error::InvalidParameter {
            name: format!("config.{name}"),
            reason,
        };
        for (name, kind, states) in [
            ("visible_states", &self.visible, self.visible_states),
            ("hidden_states", &self.hidden, self.hidden_states),
        ] {
            match (kind.as_str() == "potts", states) {
                (true, Some(q)) if q >= 1 => {}
                (true, _) => {
                    return Err(invalid(
                        name,
                        format!("potts units need a number of states >= 1, got {states:?}"),
                    ));
                }
                (false, None) => {}
                (false, Some(_)) => {
                    return Err(invalid(
                        name,
                        format!("applies to potts units only, the layer is {kind}"),
                    ));
                }
            }
        }
        if self.hidden_units == 0 {
            return Err(invalid("hidden_units", "must be at least 1".into()));
        }
        if !(self.init_std >= 0.0 && self.init_std.is_finite()) {
            return Err(invalid(
                "init_std",
                format!("must be finite and >= 0, got {}", self.init_std),
            ));
        }
        if self.schedule_updates == Some(0) {
            return Err(invalid("schedule_updates", "must be at least 1".into()));
        }
        let mut last = 0;
        for c in &self.learning_rate_changes {
            if !(c.rate > 0.0 && c.rate.is_finite()) || c.update < last {
                return Err(invalid(
                    "learning_rate_changes",
                    format!(
                        "rates must be finite and > 0, at non-decreasing updates; got {} at update {} after update {last}",
                        c.rate, c.update
                    ),
                ));
            }
            last = c.update;
        }
        Ok(())
    }
}

/// A learning rate set on resume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LearningRateChange {
    /// The update the resumed run started from.
    pub update: u64,
    /// The constant rate from then on.
    pub rate: f64,
}

/// The default visible kind of data in `domain`: discrete data have one; for real values
/// the kind is never guessed (a stray 0.5 in binary data would silently give Gaussian units),
/// so `--visible` must be given.
fn default_visible(domain: Domain, data: &Dataset) -> Result<UnitArg> {
    Ok(match domain {
        Domain::Binary01 => UnitArg::Bernoulli,
        Domain::Spin => UnitArg::Spin,
        Domain::OneHot { .. } | Domain::Categorical { .. } => UnitArg::Potts,
        Domain::Real => {
            let x = data.data();
            let odd = x
                .iter()
                .position(|&v| !(v == 0.0 || v == 1.0 || v == -1.0))
                .map_or(String::new(), |k| {
                    // One column per sample.
                    let (row, col) = (k % x.nrows(), k / x.nrows());
                    format!(" (e.g. {} in sample {col}, column {row})", x[k])
                });
            bail!(
                "the training data are not all in {{0,1}} or {{-1,+1}}{odd}: give the visible \
                 unit kind with --visible (gaussian, relu or drelu for real values; bernoulli \
                 or spin after fixing the data)"
            )
        }
    })
}

/// The data's domain as loaded, refined for real-valued files whose entries all lie in
/// {0,1} or {-1,+1} (e.g. a .npy of 0/1 values), so that the default visible kind fits them.
pub(super) fn inferred_domain(ds: &Dataset) -> Domain {
    if ds.domain() != Domain::Real {
        return ds.domain();
    }
    let x = ds.data();
    if x.iter().all(|&v| v == 0.0 || v == 1.0) {
        Domain::Binary01
    } else if x.iter().all(|&v| v == -1.0 || v == 1.0) {
        Domain::Spin
    } else {
        Domain::Real
    }
}

fn not_for(option: &str, negative: &str) -> CliError {
    CliError::new(format!("{option} does not apply to --negative {negative}"))
}

/// Resolves the options of a fresh run in `precision` against the data.
pub(super) fn resolve(
    s: &TrainSettings,
    precision: Precision,
    updates: u64,
    data: &Dataset,
) -> Result<TrainConfig> {
    let units = resolve_units(s, data)?;
    let negative = resolve_negative(s, units.visible, data)?;
    let trainer = resolve_trainer(s, negative, updates, data)?;
    let init_std = s.init_std.unwrap_or(0.01);
    if init_std < 0.0 {
        bail!("--init-std {init_std}: must be >= 0");
    }
    let trainer = with_policies(s, trainer)?;
    Ok(TrainConfig {
        seed: s.seed.unwrap_or(0),
        visible: units.visible.kind().into(),
        hidden: units.hidden.kind().into(),
        hidden_units: s.hidden_units.unwrap_or(20),
        visible_states: units.visible_states,
        hidden_states: units.hidden_states,
        init_std,
        precision,
        trainer,
        pretrain: pretrain::resolve(s, units.visible, units.hidden)?,
        schedule_updates: Some(updates),
        learning_rate_changes: Vec::new(),
    })
}

/// The unit kinds of a fresh run and the states of Potts layers.
struct Units {
    visible: UnitArg,
    hidden: UnitArg,
    visible_states: Option<usize>,
    hidden_states: Option<usize>,
}

/// `--visible` (default: from the data's domain), `--hidden` and their Potts states.
fn resolve_units(s: &TrainSettings, data: &Dataset) -> Result<Units> {
    let domain = inferred_domain(data);
    let visible = match s.visible {
        Some(v) => v,
        None => default_visible(domain, data)?,
    };
    let hidden = s.hidden.unwrap_or(UnitArg::Bernoulli);
    let visible_states = match (visible, s.visible_states, domain) {
        (UnitArg::Potts, Some(q), _) => Some(q),
        (UnitArg::Potts, None, Domain::OneHot { q } | Domain::Categorical { q }) => Some(q),
        (UnitArg::Potts, None, _) => bail!(
            "--visible potts: give the number of states with --visible-states (the data are \
             not one-hot or categorical)"
        ),
        (_, Some(_), _) => bail!("--visible-states applies to --visible potts only"),
        (_, None, _) => None,
    };
    let hidden_states = match (hidden, s.hidden_states) {
        (UnitArg::Potts, Some(q)) => Some(q),
        (UnitArg::Potts, None) => bail!("--hidden potts needs --hidden-states Q"),
        (_, Some(_)) => bail!("--hidden-states applies to --hidden potts only"),
        (_, None) => None,
    };
    Ok(Units {
        visible,
        hidden,
        visible_states,
        hidden_states,
    })
}

/// The negative phase of `--negative` (default pcd) with its options, each refused where it
/// does not apply.
fn resolve_negative(s: &TrainSettings, visible: UnitArg, data: &Dataset) -> Result<AnyNegative> {
    let negative_arg = s.negative.unwrap_or(NegativeArg::Pcd);
    let neg = match negative_arg {
        NegativeArg::Pcd => "pcd",
        NegativeArg::Cd => "cd",
        NegativeArg::Pt => "pt",
        NegativeArg::Jarzynski => "jarzynski",
        NegativeArg::Tmc => "tmc",
        NegativeArg::Bridged => "bridged",
    };
    let pt = negative_arg == NegativeArg::Pt;
    let bridged = negative_arg == NegativeArg::Bridged;
    for (set, name, allowed) in [
        (s.ladder.rungs.is_some(), "--rungs", pt || bridged),
        (s.ladder.beta_min.is_some(), "--beta-min", pt),
        (s.ladder.betas.is_some(), "--betas", pt),
        (s.ladder.schedule.is_some(), "--schedule", pt),
        (s.ladder.rounds.is_some(), "--rounds", pt || bridged),
    ] {
        if set && !allowed {
            return Err(not_for(name, neg));
        }
    }
    if negative_arg != NegativeArg::Jarzynski && s.resample_below.is_some() {
        return Err(not_for("--resample-below", neg));
    }
    if negative_arg == NegativeArg::Cd && s.chains.is_some() {
        return Err(not_for(
            "--chains",
            "cd (its chains start at the minibatch: one per sample of --batch-size)",
        ));
    }
    let sweeps = s.sweeps.unwrap_or(if pt || bridged { 1 } else { 10 });
    let chains = s.chains.unwrap_or(500);
    let tmc = crate::tmc::negative(s, neg, visible, sweeps, data)?;
    Ok(match negative_arg {
        NegativeArg::Pcd => AnyNegative::Pcd(Pcd { sweeps, chains }),
        NegativeArg::Cd => AnyNegative::Cd(Cd { sweeps }),
        NegativeArg::Pt => AnyNegative::Pt(Tempered {
            betas: pt_ladder(s)?,
            schedule: crate::tempering::schedule_of(s.ladder.schedule.unwrap_or(ScheduleArg::Deo))
                .0,
            sweeps,
            rounds: s.ladder.rounds.unwrap_or(1),
            chains,
        }),
        NegativeArg::Jarzynski => {
            let r = s.resample_below.unwrap_or(0.5);
            if !(r > 0.0 && r <= 1.0) {
                bail!("--resample-below {r}: the relative ESS threshold must lie in (0, 1]");
            }
            AnyNegative::Jarzynski(Jarzynski {
                sweeps,
                chains,
                resample_below_ess: r,
            })
        }
        NegativeArg::Tmc => AnyNegative::Tmc(tmc.expect("built for --negative tmc")),
        NegativeArg::Bridged => {
            let (k, max) = (s.ladder.rungs.unwrap_or(5), Tempered::MAX_RUNGS);
            if !(2..=max).contains(&k) {
                bail!("--rungs {k}: the bridge needs 2 to {max} rungs");
            }
            let rounds = s.ladder.rounds.unwrap_or(1);
            if rounds == 0 {
                bail!("--rounds 0: at least one round per update");
            }
            if chains == 0 || sweeps == 0 {
                bail!("--chains and --sweeps must be at least 1");
            }
            AnyNegative::Bridged(BridgeSpec::new(k, sweeps, rounds, chains))
        }
    })
}

/// The temperature ladder of `--negative pt`: `--betas`, or `--rungs` geometric from
/// `--beta-min` to 1.
fn pt_ladder(s: &TrainSettings) -> Result<Vec<f64>> {
    let l = &s.ladder;
    let betas = temperature_betas(l.rungs, l.betas.as_deref(), l.beta_min)?;
    if betas.last() != Some(&1.0) || betas.windows(2).any(|w| w[0] >= w[1]) || betas[0] < 0.0 {
        bail!("--betas: the ladder must be strictly increasing from >= 0 to exactly 1");
    }
    Ok(betas)
}

/// The trainer of `negative`: batch size, learning rate and its schedule over `updates`,
/// optimiser, penalties and centring.
fn resolve_trainer(
    s: &TrainSettings,
    negative: AnyNegative,
    updates: u64,
    data: &Dataset,
) -> Result<Trainer<AnyNegative>> {
    let n = data.weights().iter().filter(|&&w| w > 0.0).count();
    let batch_size = s.batch_size.unwrap_or(100.min(n));
    if batch_size > n {
        bail!("--batch-size {batch_size}: the training data have only {n} samples");
    }
    let mut trainer = Trainer::new(negative, batch_size);
    trainer.learning_rate = learning_rate(s, updates)?;
    trainer.optimizer = match s.optimizer.unwrap_or(OptimizerArg::Sgd) {
        OptimizerArg::Sgd => {
            let m = s.momentum.unwrap_or(0.0);
            if !(0.0..1.0).contains(&m) {
                bail!("--momentum {m}: must lie in [0, 1)");
            }
            Optimizer::Sgd { momentum: m }
        }
        OptimizerArg::Adam => {
            if s.momentum.is_some() {
                bail!("--momentum applies to --optimizer sgd only");
            }
            Optimizer::ADAM
        }
    };
    let (l1, l2) = (s.l1.unwrap_or(0.0), s.l2.unwrap_or(0.0));
    if l1 < 0.0 || l2 < 0.0 {
        bail!("--l1 and --l2 must be >= 0, got {l1} and {l2}");
    }
    trainer.penalty = Penalty { l1, l2 };
    trainer.centred = !s.uncentred;
    Ok(trainer)
}

/// `--learning-rate` (default 0.01) and its `--lr-schedule` over the run's `updates`.
fn learning_rate(s: &TrainSettings, updates: u64) -> Result<LearningRate> {
    let rate = s.learning_rate.unwrap_or(0.01);
    if rate <= 0.0 {
        bail!("--learning-rate {rate}: must be > 0");
    }
    let schedule = s.lr_schedule.unwrap_or(LrScheduleArg::Constant);
    Ok(match (schedule, s.final_learning_rate) {
        (LrScheduleArg::Constant, None) => LearningRate::Constant(rate),
        (LrScheduleArg::Constant, Some(_)) => {
            bail!("--final-learning-rate needs --lr-schedule linear or exponential")
        }
        (_, None) => bail!("--lr-schedule linear or exponential needs --final-learning-rate"),
        (_, Some(last)) if last <= 0.0 => {
            bail!("--final-learning-rate {last}: must be > 0")
        }
        (LrScheduleArg::Linear, Some(last)) => LearningRate::Linear {
            initial: rate,
            last,
            updates,
        },
        (LrScheduleArg::Exponential, Some(last)) => {
            if last > rate {
                bail!(
                    "--lr-schedule exponential decays: --final-learning-rate {last} must not \
                     exceed --learning-rate {rate}"
                );
            }
            LearningRate::Exponential {
                initial: rate,
                decay: (last / rate).powf(1.0 / updates as f64),
                floor: last,
            }
        }
    })
}

/// The trainer with its checkpoint selection (`--target-acceptance`, `--checkpoint-every`,
/// `--selection-*`) and its online log-likelihood (`--loglik-every`, `--loglik-chains`).
fn with_policies(
    s: &TrainSettings,
    mut trainer: Trainer<AnyNegative>,
) -> Result<Trainer<AnyNegative>> {
    let target = s.target_acceptance.unwrap_or(DEFAULT_TARGET_ACCEPTANCE);
    if !(target > 0.0 && target < 1.0) {
        bail!("--target-acceptance {target}: must lie in (0, 1)");
    }
    if s.loglik_chains.is_some() && s.loglik_every.is_none() {
        bail!("--loglik-chains needs --loglik-every");
    }
    let loglik_chains = s.loglik_chains.unwrap_or(1000);
    if loglik_chains < 2 {
        bail!("--loglik-chains {loglik_chains}: needs at least 2 chains");
    }
    trainer.checkpoints = Some(CheckpointPolicy {
        target_acceptance: target,
        every: s.checkpoint_every.unwrap_or(1),
        path: None,
        acceptance: match s
            .selection_acceptance
            .unwrap_or(SelectionAcceptanceArg::Auto)
        {
            SelectionAcceptanceArg::Exact => SelectionAcceptance::Exact,
            SelectionAcceptanceArg::Chains => SelectionAcceptance::Chains,
            SelectionAcceptanceArg::Auto => SelectionAcceptance::Auto,
        },
        exact_draws: s.selection_draws.unwrap_or(1000),
    });
    trainer.likelihood = s.loglik_every.map(|every| LikelihoodPolicy {
        chains: loglik_chains,
        every,
        ..LikelihoodPolicy::default()
    });
    Ok(trainer)
}

/// The learning rate of a resumed run: the state's schedule, which must span the resumed
/// run's `--updates` to continue it exactly, or the constant `--learning-rate` given on
/// resume (recorded in the configuration).
fn resume_learning_rate(
    config: &mut TrainConfig,
    update: u64,
    a: &TrainArgs,
    state: &Path,
) -> Result<()> {
    if let Some(rate) = a.settings.learning_rate {
        if !(rate > 0.0 && rate.is_finite()) {
            bail!("--learning-rate {rate}: must be finite and > 0");
        }
        config.trainer.learning_rate = LearningRate::Constant(rate);
        config
            .learning_rate_changes
            .push(LearningRateChange { update, rate });
        return Ok(());
    }
    if matches!(config.trainer.learning_rate, LearningRate::Constant(_))
        || config.schedule_updates == Some(a.updates)
    {
        return Ok(());
    }
    let span = config
        .schedule_updates
        .map_or("an unrecorded number of".to_string(), |n| n.to_string());
    bail!(
        "{}: the run's learning-rate schedule spans {span} updates, not --updates {}: resume \
         with the first run's --updates to continue it bit for bit, or give --learning-rate R \
         to continue at the constant rate R (recorded in the state and the run record)",
        state.display(),
        a.updates
    )
}

/// The training options given on the command line (rejected with `--resume`).
fn given_settings(s: &TrainSettings) -> Vec<String> {
    let value = serde_json::to_value(s).unwrap_or_default();
    let Some(map) = value.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter(|(k, v)| {
            // --learning-rate on resume sets a new constant rate (`resume_learning_rate`).
            *k != "learning_rate" && !(v.is_null() || *v == &serde_json::Value::Bool(false))
        })
        .map(|(k, _)| format!("--{}", k.replace('_', "-")))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// State file
// ---------------------------------------------------------------------------------------------

/// A fingerprint of the training data, to refuse resuming on other data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DataFingerprint {
    /// Number of samples.
    pub samples: usize,
    /// Values per sample.
    pub features: usize,
    /// FNV-1a hash of the values and weights (as `f64` bits), hexadecimal.
    pub hash: String,
}

impl DataFingerprint {
    fn of(ds: &Dataset) -> Self {
        let mut h = ebm_io::Fnv1a::new();
        for x in ds.data().iter().chain(ds.weights()) {
            h.update(&x.to_bits().to_le_bytes());
        }
        Self {
            samples: ds.n_samples(),
            features: ds.n_features(),
            hash: h.hex(),
        }
    }
}

/// The training state file: the settings, the data fingerprint and the library's
/// [`TrainState`] (which resumes bit for bit).
#[derive(Serialize, Deserialize)]
struct StateFile<S> {
    format: String,
    format_version: u32,
    config: TrainConfig,
    data: DataFingerprint,
    state: S,
    /// The log written with the state (`None` in states written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log: Option<LogDigest>,
}

/// What a state records of the log written with it, so that a resume carries that log, and
/// no other, into the resumed one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct LogDigest {
    /// Its length in bytes.
    bytes: u64,
    /// The FNV-1a hash of its bytes ([`ebm_io::Fnv1a`]), in hexadecimal.
    checksum: String,
}

impl LogDigest {
    fn of(text: &str) -> Self {
        let mut h = ebm_io::Fnv1a::new();
        h.update(text.as_bytes());
        Self {
            bytes: text.len() as u64,
            checksum: h.hex(),
        }
    }
}

/// Completes an interrupted commit of the output set a state file belongs to
/// (`<model>.state.json` of `<model>.safetensors`), unless a run is writing that set.
fn recover_set_of(state: &Path) -> Result<()> {
    let name = state.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(stem) = name.strip_suffix(".state.json") else {
        return Ok(());
    };
    let model = state.with_file_name(format!("{stem}.safetensors"));
    if let Ok(_lock) = ebm_io::output::OutputLock::acquire(&model) {
        ebm_io::output::StagedOutputs::recover(&model)?;
    }
    Ok(())
}

/// What is read of a state file before the data: the update it is at.
#[derive(Deserialize)]
struct StateHeader {
    update: u64,
}

/// The log of the resumed run, read from beside its state (`<model>.state.json` ->
/// `<model>.log.csv`; `None` when there is none, which the caller reports) and checked against
/// it: the log the state was written with (its length and checksum), or, for a state that
/// predates the record, a log whose rows are numbered by increasing updates ending at the
/// state's. Anything else — truncated, edited, another run's, a row that is not an update — is
/// refused: a resumed log is the uninterrupted run's, bit for bit, or starts afresh.
fn previous_log(state: &Path, digest: Option<&LogDigest>, update: u64) -> Result<Option<String>> {
    let Some(path) = log_of_state(state) else {
        return Ok(None);
    };
    let refuse = |what: String| -> CliError {
        CliError::new(format!(
            "{}: {what}; the log of the resumed run must be the one written with {} (restore \
             it, or move it away to start the resumed log afresh)",
            path.display(),
            state.display()
        ))
    };
    let text = match ebm_core::input::read_regular(&path, ebm_core::input::MAX_TEXT_BYTES) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text".into()))?,
        Err(_) if !path.exists() => return Ok(None),
        Err(e) => return Err(refuse(format!("cannot read it: {e}"))),
    };
    match digest {
        Some(d) => {
            let found = LogDigest::of(&text);
            if &found != d {
                return Err(refuse(format!(
                    "{} bytes with checksum {}, the state was written with {} bytes with \
                     checksum {} (truncated, edited or another run's)",
                    found.bytes, found.checksum, d.bytes, d.checksum
                )));
            }
        }
        None => {
            let mut last = 0;
            for (k, l) in text.lines().enumerate().skip(1) {
                match l.split(',').next().and_then(|u| u.parse::<u64>().ok()) {
                    Some(u) if u > last => last = u,
                    _ => {
                        return Err(refuse(format!(
                            "row {} is not the row of an update after {last}: {l:?}",
                            k + 1
                        )));
                    }
                }
            }
            if last != update && !text.is_empty() {
                return Err(refuse(format!(
                    "its last row is update {last}, the state is at update {update}"
                )));
            }
        }
    }
    Ok(Some(text))
}

/// Reads a state file (a regular file, see [`ebm_io::output::read_json_checked`]), verifies
/// its checksum (required from version 2 on), format and version; returns its content and
/// header.
fn read_state_header(path: &Path) -> Result<(serde_json::Value, StateFile<StateHeader>)> {
    let value = ebm_io::output::read_json_checked(path, STATE_CHECKSUMS)?;
    if value.get("format").and_then(|f| f.as_str()) != Some(STATE_FORMAT) {
        bail!(
            "{} is not a training state file (no \"format\": \"{STATE_FORMAT}\"); it is \
             written by `ebm train` as <model>.state.json",
            path.display()
        );
    }
    let header: StateFile<StateHeader> = serde_json::from_value(value.clone()).map_err(|e| {
        CliError::new(format!(
            "{}: malformed training state file: {e}",
            path.display()
        ))
    })?;
    if !(OLDEST_STATE_FORMAT_VERSION..=STATE_FORMAT_VERSION).contains(&header.format_version) {
        bail!(
            "{}: training state format version {} is not supported (this program reads \
             versions {OLDEST_STATE_FORMAT_VERSION} to {STATE_FORMAT_VERSION})",
            path.display(),
            header.format_version
        );
    }
    Ok((value, header))
}

// ---------------------------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------------------------

impl TrainOutputs {
    /// The files a run of `args` reads.
    fn inputs(args: &TrainArgs) -> Vec<&Path> {
        [
            Some(args.data.as_path()),
            args.test.as_deref(),
            args.resume.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The files a run writes besides its record (the PLL log with `--pll-every`).
    fn written(&self, pll: bool) -> Vec<&Path> {
        let mut written: Vec<&Path> = vec![&self.model, &self.trajectory, &self.state, &self.log];
        if pll {
            written.push(&self.pll);
        }
        written
    }
}

pub(super) fn execute(args: &TrainArgs, ctx: &Context) -> Result<Option<TrainResults>> {
    let deadline = args
        .time_limit
        .map(|s| std::time::Instant::now() + std::time::Duration::from_secs(s));
    let (out, _lock) = lock_outputs(args, ctx)?;
    let resume = read_resume(args, ctx)?;
    let data = load_dataset(&args.data)?;
    let test = args.test.as_deref().map(load_dataset).transpose()?;
    let config = match &resume {
        Some(r) => r.config.clone(),
        None => resolve(
            &args.settings,
            args.precision.map(Precision::from).unwrap_or_default(),
            args.updates,
            &data,
        )?,
    };
    device::check_train(args, &config, ctx)?;
    check_processes(args, ctx, &config)?;
    let (visible, hidden, precision) = (
        config.visible.clone(),
        config.hidden.clone(),
        config.precision,
    );
    let exact_draws = config.trainer.checkpoints.as_ref().map(|p| p.exact_draws);
    let task = TrainTask {
        args,
        ctx,
        config,
        data,
        test,
        resume: resume.map(|r| (r.path, r.value, r.data, r.log)),
        out: &out,
        deadline,
    };
    crate::signals::install();
    let Some(outcome) = with_kinds_in(precision, &visible, &hidden, &args.data, task)? else {
        // Not rank 0: it reports and writes.
        return Ok(None);
    };
    say_outcome(ctx, &outcome.results, outcome.model.as_str(), exact_draws);
    ctx.say(format!(
        "model: {}\ntrajectory: {}\nstate (for --resume): {}\nlog: {}",
        out.model.display(),
        out.trajectory.display(),
        out.state.display(),
        out.log.display()
    ));
    // The record was committed with the outputs it describes.
    ctx.report_record(Some(&out.record), &outcome.record)?;
    let r = &outcome.results;
    if outcome.timed_out {
        ctx.warn(format!(
            "stopped by --time-limit after update {} of {}: every output is written; continue \
             with --resume {} --updates {}",
            r.updates,
            args.updates,
            out.state.display(),
            args.updates
        ));
    }
    if let Some(signal) = outcome.interrupted {
        return Err(CliError::with_exit_code(
            format!(
                "interrupted by {} after update {} of {}: every output is written; continue \
                 with --resume {} --updates {}",
                crate::signals::name(signal),
                r.updates,
                args.updates,
                out.state.display(),
                args.updates
            ),
            crate::signals::exit_code(signal),
        ));
    }
    Ok(Some(outcome.results))
}

/// The outputs of `--out` checked against the inputs, and, before any work, their lock
/// (listing the outputs for other commands to see, see
/// `ebm_io::output::written_by_another_run`) and the completion of a commit an earlier run on
/// these outputs was killed in. Under mpirun, rank 0 alone locks, recovers and writes, once
/// every rank has checked the outputs (to which its lock would look like another run's); the
/// others wait for it and hold no lock.
fn lock_outputs(
    args: &TrainArgs,
    ctx: &Context,
) -> Result<(TrainOutputs, Option<ebm_io::output::OutputLock>)> {
    let ext = args.out.extension().and_then(|e| e.to_str());
    if ext != Some("safetensors") {
        bail!(
            "--out {}: the model file must have the extension .safetensors",
            args.out.display()
        );
    }
    let out = TrainOutputs::of(&args.out);
    let inputs = TrainOutputs::inputs(args);
    let written: [&Path; 6] = [
        &out.model,
        &out.trajectory,
        &out.state,
        &out.log,
        &out.record,
        &out.pll,
    ];
    check_outputs(&written, &inputs)?;
    let world = ctx.world();
    world.gather(&[]);
    let lock = world
        .is_root()
        .then(|| ebm_io::output::OutputLock::acquire_for(&out.model, &written))
        .transpose()?;
    if world.is_root() && ebm_io::output::StagedOutputs::recover(&out.model)? {
        ctx.warn(format!(
            "completed the writing of {} and its companions, interrupted in an earlier run",
            out.model.display()
        ));
    }
    world.broadcast(&[]);
    Ok((out, lock))
}

/// What `--resume` reads from a state file before the run: the file, its content, the
/// configuration it records (checked, with the learning rate of the updates to come), the data
/// it was trained on and what it records of its log.
struct Resume<'a> {
    path: &'a Path,
    value: serde_json::Value,
    config: TrainConfig,
    data: DataFingerprint,
    log: Option<LogDigest>,
}

/// Reads `--resume`, if given: refuses settings given beside it (they come from the state file)
/// and another `--precision` than the state's; completes an interrupted commit of the state's
/// set of files first (rank 0).
fn read_resume<'a>(args: &'a TrainArgs, ctx: &Context) -> Result<Option<Resume<'a>>> {
    let Some(path) = &args.resume else {
        return Ok(None);
    };
    let given = given_settings(&args.settings);
    if !given.is_empty() {
        bail!(
            "{} cannot be given with --resume: the settings come from the state file",
            given.join(", ")
        );
    }
    let world = ctx.world();
    if world.is_root() {
        recover_set_of(path)?;
    }
    world.broadcast(&[]);
    let (value, header) = read_state_header(path)?;
    header
        .config
        .check()
        .map_err(|e| CliError::from(e.in_file(path)))?;
    let mut config = header.config;
    if let Some(p) = args.precision.map(Precision::from)
        && p != config.precision
    {
        bail!(
            "--precision {p}: {} is the state of a run in {}; resume it with \
             --precision {} (or without --precision: a resumed run keeps the state's)",
            path.display(),
            config.precision,
            config.precision
        );
    }
    resume_learning_rate(&mut config, header.state.update, args, path)?;
    Ok(Some(Resume {
        path: path.as_path(),
        value,
        config,
        data: header.data,
        log: header.log,
    }))
}

/// Under `mpirun -n K` (K > 1), refuses what runs in one process only: a negative phase that
/// does not shard, `--pretrain` and `--time-limit`.
fn check_processes(args: &TrainArgs, ctx: &Context, config: &TrainConfig) -> Result<()> {
    if ctx.world().size() > 1 {
        if !config.trainer.negative.shards() {
            ctx.one_process(&format!("--negative {}", config.trainer.negative.name()))?;
        }
        if config.pretrain.is_some() {
            ctx.one_process("--pretrain")?;
        }
        if args.time_limit.is_some() {
            ctx.one_process("--time-limit")?;
        }
    }
    Ok(())
}

/// Says what the run did: updates and checkpoints, the source of checkpoint selection's
/// acceptance (`exact_draws`: the draws of exact selection), neighbouring checkpoints below the
/// target acceptance, the online log-likelihood with its warnings, and the updates whose TMC
/// tether was below the curvature bound.
fn say_outcome(ctx: &Context, r: &TrainResults, model: &str, exact_draws: Option<usize>) {
    ctx.say(format!(
        "{} trained with {}: updates {} -> {}, {} checkpoints kept",
        model,
        r.negative,
        r.first_update,
        r.updates,
        r.checkpoint_updates.len()
    ));
    if let (Some(source), Some(draws)) = (r.selection_acceptance, exact_draws) {
        ctx.say(format!(
            "checkpoint selection: swap acceptance estimated on {}",
            selection_source(source, draws)
        ));
    }
    for p in &r.checkpoint_pairs_below_target {
        ctx.warn(format!(
            "checkpoints {} and {} have an estimated swap acceptance of {:.3}, below \
             --target-acceptance: the model moved that far in --checkpoint-every updates \
             (offer it more often or lower the learning rate)",
            p.from, p.to, p.acceptance
        ));
    }
    if let Some([z, se]) = r.log_z {
        let ll = |x: Option<(u64, f64)>| x.map_or("-".into(), |(_, v)| format!("{v:.4}"));
        ctx.say(format!(
            "online log Z {z:.4} +- {se:.4}; log-likelihood train {} test {}",
            ll(r.train_ll),
            ll(r.test_ll)
        ));
        for w in &r.log_z_warnings {
            ctx.warn(format!("online log-likelihood: {w}"));
        }
    }
    if let Some(t) = &r.tether_below_curvature {
        ctx.warn(format!(
            "--negative tmc: at {} of this run's updates (the first: update {}) the tether \
             alpha = {:.3e} was not above K = {:.3e} (the largest), the downward curvature the \
             hidden units can give the free energy along the tethered direction: the tethered \
             law can split in two components the chains do not connect, and the model term of \
             the gradient be that of one; use --alpha above {:.3e} with a grid spacing \
             below 1/sqrt(alpha)",
            t.updates,
            t.first_update,
            t.alpha,
            t.max_bound,
            1.25 * t.max_bound
        ));
    }
}

/// The settings as recorded: the command line's paths and the resolved configuration.
#[derive(Serialize)]
struct RecordedSettings<'a> {
    data: &'a Path,
    test: Option<&'a Path>,
    out: &'a Path,
    resume: Option<&'a Path>,
    updates: u64,
    config: &'a TrainConfig,
}

struct TrainTask<'a> {
    args: &'a TrainArgs,
    ctx: &'a Context,
    config: TrainConfig,
    data: Dataset,
    test: Option<Dataset>,
    /// `--resume`: the state file, its content, the data it was trained on and what it
    /// records of the log written with it ([`previous_log`]).
    resume: Option<(
        &'a Path,
        serde_json::Value,
        DataFingerprint,
        Option<LogDigest>,
    )>,
    /// `--time-limit`: the run stops after the first update that ends past it.
    deadline: Option<std::time::Instant>,
    out: &'a TrainOutputs,
}

struct TrainOutcome {
    model: String,
    results: TrainResults,
    /// The run record, written with the outputs.
    record: RecordText,
    /// The signal that stopped the run early.
    interrupted: Option<i32>,
    /// Whether `--time-limit` stopped the run.
    timed_out: bool,
}

/// What checkpoint selection estimated the swap acceptance on, for the log and the trajectory
/// file's metadata.
fn selection_source(source: SelectionAcceptance, draws: usize) -> String {
    match source {
        SelectionAcceptance::Chains => "the training's persistent chains".into(),
        _ => format!("{draws} exact draws of each model (hidden layer enumerated)"),
    }
}

/// Puts data in the form the visible layer takes (categorical codes become one-hot blocks).
pub(super) fn potts_ready(ds: Dataset, q: Option<usize>, file: &Path) -> Result<Dataset> {
    match (ds.domain(), q) {
        (Domain::Categorical { q: dq }, Some(q)) => {
            if dq > q {
                bail!(
                    "{}: categorical data with {dq} states do not fit potts units of {q} states",
                    file.display()
                );
            }
            ds.to_domain(Domain::OneHot { q }).map_err(|e| {
                CliError::new(format!("{}: cannot one-hot encode: {e}", file.display()))
            })
        }
        _ => Ok(ds),
    }
}

/// The training data in the scalar of `layer` (the values of discrete domains are exact in
/// `f32`; real values are rounded).
fn training_data<V: UnitLayer>(layer: &V, ds: &Dataset) -> Result<TrainingData<V::Scalar>> {
    Ok(TrainingData::from_f64(layer, ds.data())?.with_weights(ds.weights().to_vec())?)
}

impl<'a, F: Scalar> KindsTask<F> for TrainTask<'a> {
    /// `None` on the ranks other than 0 of a data-parallel run.
    type Output = Option<TrainOutcome>;
    type Error = CliError;

    fn run<V: UnitLayer<Scalar = F>, H: UnitLayer<Scalar = F>>(
        self,
    ) -> Result<Option<TrainOutcome>> {
        let TrainTask {
            args,
            ctx,
            config,
            data,
            test,
            resume,
            out,
            deadline,
        } = self;
        let (layer, data, test) = visible_training_data::<V, H>(args, &config, data, test)?;
        let fingerprint = DataFingerprint::of(&data);
        let train = training_data(&layer, &data)?;
        let test = test
            .as_ref()
            .map(|t| training_data(&layer, t))
            .transpose()?;

        let (mut state, pretrain) = match &resume {
            Some((path, value, expected, _)) => {
                let expected = (*path, value, expected);
                let state = resumed_state::<V, H>(args, &config, expected, &fingerprint, &train)?;
                (state, None)
            }
            None => fresh_state::<V, H>(args, ctx, &config, layer, data.data(), &train)?,
        };
        let first = state.update;
        if args.updates <= first {
            bail!(
                "--updates {}: the state is already at update {first}; give a larger total",
                args.updates
            );
        }
        // This invocation ends at --updates, or earlier with --stop-after.
        let stop = args
            .stop_after
            .map_or(args.updates, |n| first.saturating_add(n).min(args.updates));
        let todo = stop - first;
        let exact_ll = enumerable(state.model.visible(), state.model.hidden());
        let mut rec = Recording {
            tracker: Tracker::default(),
            log: CsvLog::new(Vec::new()),
            pll: args.pll_every.map(|_| PllLog::new(config.seed, exact_ll)),
            interrupt: Interrupt::new(deadline),
        };
        // The resumed log, checked against the state (after the state's own checks).
        let previous = match resume.as_ref() {
            Some((p, _, _, digest)) => resumed_log(ctx, p, digest.as_ref(), first)?,
            None => String::new(),
        };
        let outputs = Outputs {
            args,
            ctx,
            out,
            config: &config,
            fingerprint: &fingerprint,
            previous_log: &previous,
            first,
            pretrain: pretrain.as_ref(),
        };
        let mut interrupted = None;
        if args.device != ebm_cuda::Device::Cpu {
            let gpu = device::train(ctx, args.device, &config, &mut state, &train, todo)?;
            rec.tracker.sweeps += gpu.sweeps;
            rec.tracker.device = Some(gpu.device);
        } else {
            let data = (&train, test.as_ref());
            interrupted = train_in_stretches(&outputs, &mut state, data, stop, &mut rec)?;
        }
        if !ctx.world().is_root() {
            return Ok(None);
        }
        let (results, record) =
            outputs.write(&state, &rec.tracker, rec.log.get_ref(), rec.pll.as_ref())?;
        Ok(Some(TrainOutcome {
            model: describe(&state.model),
            results,
            record,
            interrupted,
            timed_out: rec.interrupt.timed_out,
        }))
    }
}

/// The visible layer that the data file's values fit (`--visible` with the data's width,
/// one-hot blocks for Potts units), with the training and test data checked against it; checks
/// first that the run's chains, model and optimiser fit in memory.
fn visible_training_data<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &TrainArgs,
    config: &TrainConfig,
    data: Dataset,
    test: Option<Dataset>,
) -> Result<(V, Dataset, Option<Dataset>)> {
    let q = config.visible_states;
    let data = potts_ready(data, q, &args.data)?;
    let width = data.n_features();
    let units = match q {
        Some(q) => {
            if width % q != 0 {
                bail!(
                    "{}: {width} values per sample are not whole one-hot blocks of {q} \
                     states (potts units)",
                    args.data.display()
                );
            }
            width / q
        }
        None => width,
    };
    // Before any allocation of the run's size.
    let nh = config
        .hidden_units
        .saturating_mul(config.hidden_states.unwrap_or(1));
    ebm_core::Error::check_memory(
        "training (chains, model and optimiser)",
        config.trainer.memory_estimate::<V, H>(width, nh),
    )?;
    let layer = V::with_units(units, q).map_err(|e| CliError::new(format!("--visible: {e}")))?;
    let data = visible_data(&layer, data, &args.data)?;
    let test = match (test, &args.test) {
        (Some(t), Some(path)) => {
            let t = potts_ready(t, q, path)?;
            Some(visible_data(&layer, t, path)?)
        }
        _ => None,
    };
    Ok((layer, data, test))
}

/// What a run records while it trains: the summary's tracker, the CSV log, the `--pll-every`
/// log and the observer that stops it on a signal or at `--time-limit`.
struct Recording {
    tracker: Tracker,
    log: CsvLog<Vec<u8>>,
    pll: Option<PllLog>,
    interrupt: Interrupt,
}

/// Trains on the CPU from `state` up to update `stop`, in stretches ending at the multiples of
/// `--pll-every` (each followed by a PLL row) and of `--save-every` (each followed by a save of
/// every output); sharded over the processes under `mpirun`. Returns the signal that
/// interrupted the run, if one did.
fn train_in_stretches<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    outputs: &Outputs<'_>,
    state: &mut CliState<V, H>,
    (train, test): (&TrainingData<V::Scalar>, Option<&TrainingData<V::Scalar>>),
    stop: u64,
    rec: &mut Recording,
) -> Result<Option<i32>> {
    let (args, ctx, trainer) = (outputs.args, outputs.ctx, &outputs.config.trainer);
    let mut progress = ProgressObserver(ctx.progress(stop - state.update, "train"));
    if let Some(p) = rec.pll.as_mut() {
        p.record(state.update, &state.model, train.samples())?;
    }
    let boundary = |every: Option<u64>, u: u64| every.map_or(u64::MAX, |n| (u / n + 1) * n);
    while state.update < stop {
        let next = boundary(args.pll_every, state.update)
            .min(boundary(args.save_every, state.update))
            .min(stop);
        let stretch = next - state.update;
        // The interrupt observer comes last: every other one has seen the update.
        let observers = (
            &mut progress,
            ((&mut rec.tracker, &mut rec.log), &mut rec.interrupt),
        );
        let world = ctx.world();
        let done = if world.size() > 1 {
            let par = Par::Rayon;
            ebm_mpi::train(world, trainer, state, train, test, stretch, par, observers)
        } else {
            trainer.run(state, train, test, stretch, Par::Rayon, observers)
        };
        match (done, crate::signals::received()) {
            (Err(ebm_core::Error::Observer(_)), Some(signal)) => return Ok(Some(signal)),
            (Err(ebm_core::Error::Observer(_)), None) if rec.interrupt.timed_out => break,
            (done, _) => done?,
        }
        if let Some(p) = rec.pll.as_mut()
            && args
                .pll_every
                .is_some_and(|n| state.update.is_multiple_of(n) || state.update == stop)
        {
            p.record(state.update, &state.model, train.samples())?;
        }
        if args
            .save_every
            .is_some_and(|n| state.update.is_multiple_of(n))
            && state.update < stop
            && ctx.world().is_root()
        {
            outputs.write(state, &rec.tracker, rec.log.get_ref(), rec.pll.as_ref())?;
        }
    }
    Ok(None)
}

/// A training state of the command line's negative phases.
type CliState<V, H> = TrainState<V, H, AnyNegativeState<<V as Layer>::Scalar>>;

/// The state of `--resume`, `(file, content, fingerprint of its data)`, after checking that
/// `fingerprint` (the data given) is its training data and that the state fits the run.
fn resumed_state<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &TrainArgs,
    config: &TrainConfig,
    (path, value, expected): (&Path, &serde_json::Value, &DataFingerprint),
    fingerprint: &DataFingerprint,
    train: &TrainingData<V::Scalar>,
) -> Result<CliState<V, H>> {
    if expected != fingerprint {
        bail!(
            "{}: these are not the training data of the state {} ({} samples x {} \
             values, hash {}; the state was trained on {} x {}, hash {})",
            args.data.display(),
            path.display(),
            fingerprint.samples,
            fingerprint.features,
            fingerprint.hash,
            expected.samples,
            expected.features,
            expected.hash
        );
    }
    let file: StateFile<CliState<V, H>> = serde_json::from_value(value.clone())
        .map_err(|e| CliError::new(format!("{}: malformed training state: {e}", path.display())))?;
    config
        .trainer
        .check_state(&file.state, train)
        .map_err(|e| e.in_file(path))?;
    Ok(file.state)
}

/// The state of a fresh run: the initial model (random weights, or `--pretrain`'s fit of
/// `data`) with the negative phase's chains, the initial log Z of the online log-likelihood
/// when it is known exactly, and the pretraining's summary.
fn fresh_state<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    args: &TrainArgs,
    ctx: &Context,
    config: &TrainConfig,
    layer: V,
    data: &DMatrix<f64>,
    train: &TrainingData<V::Scalar>,
) -> Result<(CliState<V, H>, Option<PretrainReport>)> {
    let hidden = H::with_units(config.hidden_units, config.hidden_states)
        .map_err(|e| CliError::new(format!("--hidden: {e}")))?;
    let start = config
        .pretrain
        .as_ref()
        .map(|p| {
            let figure = args.out.with_extension("pretrain.svg");
            let n = config.hidden_units;
            pretrain::Pretrained::<V, H>::fit(p, data, n, config.seed, ctx, &figure)
        })
        .transpose()?;
    let model = match &start {
        Some(s) => s.model().clone(),
        None => initial_model(layer, hidden, Some(train), config.init_std, config.seed)?,
    };
    let mut trainer = config.trainer.clone();
    if let Some(policy) = trainer.likelihood.as_mut() {
        if let Some(s) = &start {
            policy.initial_log_z = s.exact_log_z();
        } else if config.init_std > 0.0 && enumerable(model.visible(), model.hidden()) {
            // Exact by enumeration; otherwise the trainer anneals to the initial model by AIS
            // (the initialisation never depends on --loglik-every).
            policy.initial_log_z = Some(exact_log_partition(&model, 1.0, Par::Rayon)?.0);
        }
    }
    let mut state = trainer.init(model, train, config.seed, Par::Rayon)?;
    let pretrain = match start {
        Some(s) => Some(s.seed_chains(&trainer.negative, &mut state.negative, config.seed, ctx)?),
        None => None,
    };
    Ok((state, pretrain))
}

/// The log written beside the resumed state `state`, checked against its digest; empty, with
/// a warning, when there is none.
fn resumed_log(
    ctx: &Context,
    state: &Path,
    digest: Option<&LogDigest>,
    first: u64,
) -> Result<String> {
    Ok(previous_log(state, digest, first)?.unwrap_or_else(|| {
        ctx.warn(format!(
            "no log beside {} ({}): the log of the resumed run starts at update {}, without the \
             rows of updates 1 to {first}",
            state.display(),
            log_of_state(state).map_or("no <model>.log.csv name".into(), |l| l
                .display()
                .to_string()),
            first + 1
        ));
        String::new()
    }))
}

/// Stops a run between updates when SIGINT or SIGTERM was received ([`crate::signals`]);
/// after the first update, announces the run to a test waiting on
/// [`crate::signals::READY_ENV`], if set.
struct Interrupt {
    ready: Option<PathBuf>,
    /// `--time-limit`: when the run stops after the current update.
    deadline: Option<std::time::Instant>,
    /// Whether the deadline stopped the run.
    timed_out: bool,
}

impl Interrupt {
    fn new(deadline: Option<std::time::Instant>) -> Self {
        Self {
            ready: std::env::var_os(crate::signals::READY_ENV).map(PathBuf::from),
            deadline,
            timed_out: false,
        }
    }
}

impl Observer<TrainInfo> for Interrupt {
    fn observe(&mut self, _step: u64, _info: &TrainInfo) -> ebm_core::Result<()> {
        if let Some(path) = self.ready.take() {
            crate::signals::announce_ready(&path)?;
        }
        if let Some(signal) = crate::signals::received() {
            return Err(ebm_core::Error::Observer(
                format!("interrupted by {}", crate::signals::name(signal)).into(),
            ));
        }
        if self
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
        {
            self.timed_out = true;
            return Err(ebm_core::Error::Observer("--time-limit reached".into()));
        }
        Ok(())
    }
}

/// What the outputs of a run are written from, besides the state.
struct Outputs<'a> {
    args: &'a TrainArgs,
    ctx: &'a Context,
    out: &'a TrainOutputs,
    config: &'a TrainConfig,
    fingerprint: &'a DataFingerprint,
    /// The rows of the resumed run's log up to the resumed update.
    previous_log: &'a str,
    /// The update this invocation started from.
    first: u64,
    /// What `--pretrain` did.
    pretrain: Option<&'a PretrainReport>,
}

impl Outputs<'_> {
    /// Writes the model, the trajectory (kept checkpoints and the current model), the state,
    /// the log (`rows`: this invocation's CSV log), the PLL log and the run record of the
    /// state as one unit ([`ebm_io::output::StagedOutputs`]: the record never disagrees with
    /// the files it describes); returns the results and the record.
    fn write<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
        &self,
        state: &TrainState<V, H, AnyNegativeState<V::Scalar>>,
        tracker: &Tracker,
        rows: &[u8],
        pll: Option<&PllLog>,
    ) -> Result<(TrainResults, RecordText)> {
        let out = self.out;
        let mut set = ebm_io::output::StagedOutputs::begin(&out.model)?;
        let mut meta = std::collections::BTreeMap::new();
        meta.insert("training_update".to_string(), state.update.to_string());
        ebm_io::save_rbm_with_metadata(&state.model, &set.stage(&out.model), &meta)?;
        let trajectory = state.trajectory();
        let mut trajectory_meta = std::collections::BTreeMap::new();
        if let (Some(source), Some(policy)) = (
            state.selection_acceptance(),
            self.config.trainer.checkpoints.as_ref(),
        ) {
            trajectory_meta.insert(
                "selection_acceptance".to_string(),
                selection_source(source, policy.exact_draws),
            );
        }
        ebm_io::save_trajectory_with_metadata(
            &trajectory,
            &set.stage(&out.trajectory),
            &trajectory_meta,
        )?;
        let rows = std::str::from_utf8(rows).expect("the CSV log is UTF-8");
        let text = merge_logs(self.previous_log, rows);
        let file = StateFile {
            format: STATE_FORMAT.into(),
            format_version: STATE_FORMAT_VERSION,
            config: self.config.clone(),
            data: self.fingerprint.clone(),
            state,
            log: Some(LogDigest::of(&text)),
        };
        ebm_io::output::write_json_checked(&set.stage(&out.state), &file)?;
        ebm_io::write_atomically(&set.stage(&out.log), |w| w.write_all(text.as_bytes()))?;
        if let Some(p) = pll {
            ebm_io::write_atomically(&set.stage(&out.pll), |w| w.write_all(p.text.as_bytes()))?;
        }
        let results = self.results(state, tracker, trajectory.updates(), pll);
        let args = self.args;
        let settings = RecordedSettings {
            data: &args.data,
            test: args.test.as_deref(),
            out: &args.out,
            resume: args.resume.as_deref(),
            updates: args.updates,
            config: self.config,
        };
        let record = self.ctx.record(
            "train",
            Some(self.config.seed),
            &settings,
            &TrainOutputs::inputs(args),
            &out.written(pll.is_some()),
            &results,
        )?;
        write_record(&set.stage(&out.record), &record)?;
        set.commit()?;
        Ok((results, record))
    }

    /// What the run record reports of `state`.
    fn results<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
        &self,
        state: &TrainState<V, H, AnyNegativeState<V::Scalar>>,
        tracker: &Tracker,
        checkpoint_updates: &[u64],
        pll: Option<&PllLog>,
    ) -> TrainResults {
        let likelihood = state.likelihood.as_ref().map(|l| l.estimate());
        TrainResults {
            model: ModelSummary::of(&state.model),
            negative: self.config.trainer.negative.name().to_string(),
            first_update: self.first,
            updates: state.update,
            negative_sweeps: tracker.sweeps,
            checkpoint_updates: checkpoint_updates.to_vec(),
            checkpoint_pairs_below_target: state.checkpoint_pairs_below_target().to_vec(),
            selection_acceptance: state.selection_acceptance(),
            log_z: likelihood.as_ref().map(|e| [e.log_z, e.std_err]),
            log_z_warnings: likelihood.map_or_else(Vec::new, |e| e.warnings),
            train_ll: tracker.train,
            test_ll: tracker.test,
            last_gradient_norm: tracker.gradient_norm,
            pll: pll.and_then(|p| p.last.clone()),
            pretrain: self.pretrain.cloned(),
            precision: self.config.precision,
            tether_below_curvature: tracker.tether.clone(),
            device: tracker.device.clone(),
        }
    }
}

/// Whether the smaller discrete layer of `v`, `h` has at most [`MAX_INITIAL_ENUMERATION`]
/// configurations.
fn enumerable<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(v: &V, h: &H) -> bool {
    [v.discrete_configurations(), h.discrete_configurations()]
        .into_iter()
        .flatten()
        .min()
        .is_some_and(|n| n <= MAX_INITIAL_ENUMERATION)
}

/// The log written next to a state file: `<model>.state.json` -> `<model>.log.csv`.
fn log_of_state(state: &Path) -> Option<PathBuf> {
    let name = state.file_name()?.to_str()?;
    let stem = name.strip_suffix(".state.json")?;
    Some(state.with_file_name(format!("{stem}.log.csv")))
}

/// The previous log's rows followed by the new rows (whose header is dropped when the previous
/// log has the same one).
fn merge_logs(previous: &str, new: &str) -> String {
    let (Some(old_header), Some(new_header)) = (previous.lines().next(), new.lines().next()) else {
        return format!("{previous}{new}");
    };
    if old_header == new_header {
        let body = new.split_once('\n').map_or("", |(_, b)| b);
        format!("{previous}{body}")
    } else {
        new.to_string()
    }
}

/// Keeps what the summary and the record report.
#[derive(Default)]
struct Tracker {
    sweeps: u64,
    /// The GPU of `--device cuda`, as `cuda:N (name)`.
    device: Option<String>,
    train: Option<(u64, f64)>,
    test: Option<(u64, f64)>,
    gradient_norm: f64,
    tether: Option<TetherBelowCurvature>,
}

impl Observer<TrainInfo> for Tracker {
    fn observe(&mut self, step: u64, info: &TrainInfo) -> ebm_core::Result<()> {
        self.sweeps += info.negative.sweeps;
        self.gradient_norm = info.gradient_norm;
        for w in &info.negative.tethered_warnings {
            if let TmcWarning::TetherBelowCurvature { alpha, bound } = *w {
                let t = self.tether.get_or_insert(TetherBelowCurvature {
                    first_update: step,
                    updates: 0,
                    alpha,
                    max_bound: bound,
                });
                t.updates += 1;
                t.max_bound = t.max_bound.max(bound);
            }
        }
        if let Some(l) = &info.likelihood {
            if let Some(v) = l.train {
                self.train = Some((step, v));
            }
            if let Some(v) = l.test {
                self.test = Some((step, v));
            }
        }
        Ok(())
    }
}

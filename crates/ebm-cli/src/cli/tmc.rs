//! The options of Tethered Monte Carlo, shared by `ebm sample --sampler tmc`,
//! `ebm train --negative tmc` and `ebm tmc profile` (each rejects those that do not apply).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

use super::{finite_f64, positive_usize};

/// `ebm tmc ...`
#[derive(Subcommand, Debug)]
pub(crate) enum TmcCommand {
    /// Measure the tethered potential of a model along one direction: write m_hat, the mean
    /// of m at each m_hat, Omega', Omega and p(m_hat) as CSV, the barrier between its two
    /// deepest modes as a one-row CSV, and a plot of ln p(m_hat).
    #[command(long_about = TMC_PROFILE_LONG_ABOUT)]
    Profile(TmcProfileArgs),
}

const TMC_PROFILE_LONG_ABOUT: &str = "\
Tethered Monte Carlo (paper 001: Béreux, Decelle, Furtlehner, Seoane, SciPost Phys. 14, 032):
chains tethered by a Gaussian tether of strength --alpha to each of --grid-points targets m_hat
measure <m>_m_hat by time averages over --measure sweeps after --burn-in sweeps, on --replicas
chains per target; Omega'(m_hat) = m_hat - <m>_m_hat is integrated (trapezoid) to Omega and
normalised in log space to p(m_hat) ∝ exp(-alpha Omega). The barrier is ln p(mode) - ln
p(saddle) in nats; the left weight is the mass of p(m_hat) left of the saddle. The replicas of
each target start spread over the grid's range, so that a target whose tethered law has two
components makes them disagree; R-hat (Gelman-Rubin) compares their spread with their
fluctuations, and a point with R-hat > 1.1 is warned about. The errors of ln p and of the left
weight are a jackknife over replicas plus the change when every second grid point is dropped.

Outputs:
  OUT (.csv)          m_hat, mean_m, std_error, omega_prime, omega, log_p, p, log_p_error, rhat
  OUT.barrier.csv     left_mode, saddle, right_mode, from_left, from_right, left_weight,
                      left_weight_se (header only when p has no interior dip)
  --plot FILE         ln p(m_hat) (SVG or PNG by the extension; default OUT with .svg)
  OUT.json            the run record (settings, barrier, warnings)";

/// `ebm tmc profile`
#[derive(Args, Debug, Serialize)]
pub(crate) struct TmcProfileArgs {
    /// RBM model file (safetensors); its visible units must be discrete.
    #[arg(short, long, value_name = "FILE")]
    pub model: PathBuf,
    /// Data file: the direction of --direction pca and the grid range (projections +- --border).
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// Output CSV of the profile; the barrier, plot and run record are named after it.
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// The plot of ln p(m_hat) (.svg or .png) [default: OUT with .svg].
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Seed: every chain gets its own random stream derived from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The tethered direction and grid.
    #[command(flatten)]
    pub tmc: TmcOptions,
    /// Worker threads.
    #[command(flatten)]
    #[serde(skip)]
    pub threads: super::Threads,
}

/// Where the tethered direction comes from.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum DirectionArg {
    /// The leading visible singular vector of the weights W.
    Weights,
    /// The first principal component of --data (centred).
    Pca,
    /// The uniform direction 1/sqrt(N): m is the mean of the visible values (not for Potts).
    Uniform,
}

impl DirectionArg {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DirectionArg::Weights => "weights",
            DirectionArg::Pca => "pca",
            DirectionArg::Uniform => "uniform",
        }
    }
}

/// Tethered Monte Carlo settings (unset options take the defaults of each command).
#[derive(Args, Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TmcOptions {
    /// tmc: the tethered direction [default: weights].
    #[arg(long, value_enum)]
    pub direction: Option<DirectionArg>,
    /// tmc: tether strength alpha > 0 [default: 20000, the paper's].
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub alpha: Option<f64>,
    /// tmc: number of targets m_hat of the uniform grid, at least 2 [default: sample and
    /// profile: enough for a spacing of 1/sqrt(alpha), at least 51 and at most 1001; train: 50].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub grid_points: Option<usize>,
    /// tmc (sample, profile): the grid's ends LO,HI [default: the data's projections +-
    /// --border with --data, otherwise the range m can take +- 5/sqrt(alpha)].
    #[arg(
        long,
        value_name = "LO,HI",
        value_delimiter = ',',
        value_parser = finite_f64,
        allow_negative_numbers = true
    )]
    pub grid_range: Option<Vec<f64>>,
    /// tmc: margin added to the data's range of projections on both sides [default: 0.1].
    #[arg(long, value_parser = finite_f64, allow_negative_numbers = true)]
    pub border: Option<f64>,
    /// tmc: chains per grid point [default: sample and profile 8, train 4].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub replicas: Option<usize>,
    /// tmc (sample, profile): TMC sweeps discarded before measuring [default: 50].
    #[arg(long, value_name = "N")]
    pub burn_in: Option<usize>,
    /// tmc: TMC sweeps whose order parameter is time-averaged [default: sample and profile
    /// 150; train: 5, at most --sweeps].
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub measure: Option<usize>,
    /// tmc (sample): unconstrained Gibbs sweeps after the TMC sweeps [default: 0].
    #[arg(long, value_name = "N")]
    pub gibbs_sweeps: Option<usize>,
    /// tmc (train): number of tethered order parameters, 1 or 2 (two directions: the
    /// leading two of --direction weights or pca, a tensor grid of --grid-points^2 targets)
    /// [default: 1].
    #[arg(long, value_name = "K", value_parser = positive_usize)]
    pub dimensions: Option<usize>,
}

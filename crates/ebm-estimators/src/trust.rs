//! When an estimate can be trusted: the typed warnings every [`crate::LogZEstimate`] carries,
//! the documented rule that raises them, and the error bar that still holds at low effective
//! sample size (the larger of the delta-method and a bootstrap-over-chains error).
//!
//! # The rule
//!
//! An estimate is *trusted* when its list of warnings is empty. The checks, by estimator:
//!
//! | Warning | Raised when | Estimators |
//! |---|---|---|
//! | [`Warning::LowEss`] | Kish ESS of the final importance weights \\(< 30\\) ([`MIN_ESS`]); for BAR / exponential average: the smallest over neighbouring pairs of the ESS of the work weights \\(< 30\\) | AIS, reverse AIS, Tr-AIS, online Tr-AIS, BAR, exponential average |
//! | [`Warning::WeightConcentration`] | the largest chain carries more than 10% ([`MAX_WEIGHT_FRACTION`]) of the total importance weight | AIS, reverse AIS, Tr-AIS, online Tr-AIS |
//! | [`Warning::HeavyTailedWeights`] | the Pareto shape \\(\hat k\\) ([`pareto_k`]) of the weights of the independent units (the chains; after resampling, the total weight of each founder's descendants) exceeds \\(\min(1 - 1/\log_{10} n, 0.7)\\) ([`max_pareto_k`]) | AIS, reverse AIS, Tr-AIS, online Tr-AIS |
//! | [`Warning::NotEquilibrated`] | the estimates from the first and the second half of the recorded rounds differ by more than 3 combined standard errors ([`HALVES_Z`]) | BAR, exponential average (from PT / PTT) |
//! | [`Warning::PoorOverlap`] | for some pair of neighbouring rungs, an off-diagonal element of BAR's overlap matrix is below 0.03 ([`MIN_OVERLAP`], [`crate::PairEstimate::overlap`]) | BAR, exponential average |
//! | [`Warning::RunTooShort`] | the burn-in is shorter than 20 exponential autocorrelation times of the replica index process, or the recorded rounds fewer than 100 integrated times ([`BURN_IN_TAU_EXP`], [`RECORDED_TAU_INT`]); each time is checked when it was measured | PTT / PT estimates (added by the caller, who measures the index process) |
//! | [`Warning::TooFewRounds`] | fewer than 50 recorded rounds ([`MIN_RECORDED_ROUNDS`]): too few to establish the index process's times at all, so neither check above can pass | PTT / PT estimates (added by the caller) |
//! | [`Warning::StartNotAtEquilibrium`] | reverse AIS started from draws that are not known to be exact draws of the target (Gibbs runs, user samples) | reverse AIS (added by the caller, who knows where the draws came from) |
//! | [`Warning::LineageCollapse`] | after resampling, fewer than 30 distinct initial chains ([`MIN_ESS`]) have descendants | AIS with resampling, online Tr-AIS |
//! | [`Warning::SandwichGap`] | reverse AIS exceeds forward AIS by more than 3 combined standard errors ([`HALVES_Z`]) | both, when run together ([`sandwich`]) |
//! | [`Warning::SandwichInverted`] | forward AIS exceeds reverse AIS by more than 3 combined standard errors ([`HALVES_Z`]) | both, when run together ([`sandwich`]) |
//! | [`Warning::SandwichUndefined`] | an estimate or error bar of the sandwich is not a number, or both estimates are infinite | both, when run together ([`sandwich`]) |
//! | [`Warning::AssumptionBroken`] | an online estimator detected that its assumptions no longer hold (e.g. parameter steps too large for one kernel step to follow) | online Tr-AIS (added by the trainer) |
//!
//! Why these thresholds: the delta-method error of \\(\log\frac1n\sum_i e^{w_i}\\) is a
//! first-order expansion that needs many comparable weights; with a Kish ESS of a few, the
//! estimate is dominated by a handful of chains and both the estimate and its error bar are
//! unreliable (measured once, not re-measured here: AIS with ESS \\(\approx 2\\) had a true error of 1.35 nats for a
//! reported 0.02). At ESS \\(\ge 30\\) with no chain above 10% of the weight, the calibration
//! suite (`crates/ebm-estimators/tests/calibration.rs`) finds the error bars calibrated on the
//! enumerable models it tests. A trusted estimate is not a guarantee: a mode that *no* chain
//! ever visited leaves no trace in the weights (the weights are then all similar and the
//! estimate is biased low with a small error bar); the warnings catch what the samples can show.
//! A second view of the model catches it: reverse AIS from exact draws, whose chains start in
//! every mode, and the [`sandwich`] check of the two.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Kish ESS below which an estimate from importance weights is flagged [`Warning::LowEss`].
pub const MIN_ESS: f64 = 30.0;

/// Fraction of the total importance weight carried by one chain above which an estimate is
/// flagged [`Warning::WeightConcentration`].
pub const MAX_WEIGHT_FRACTION: f64 = 0.1;

/// The largest Pareto shape \\(\hat k\\) ([`pareto_k`]) of `n` importance weights for which
/// their mean is trusted: \\(\min(1 - 1/\log_{10} n, 0.7)\\), the sample-size dependent
/// threshold of Vehtari et al. (2024, §3.2.4): above it, the relative error of the mean of
/// \\(n\\) weights with \\(\lfloor 1/\hat k\rfloor\\) moments is not yet small, and its estimated
/// error bar is unreliable. (0.667 for 1000 chains, 0.5 for 100.)
pub fn max_pareto_k(n: usize) -> f64 {
    (1.0 - 1.0 / (n as f64).log10()).min(0.7)
}

/// Number of combined standard errors by which the estimates from the two halves of a run may
/// differ before [`Warning::NotEquilibrated`] is raised.
pub const HALVES_Z: f64 = 3.0;

/// Burn-in of a PT / PTT estimate, in exponential autocorrelation times of its replica index
/// process: the conservative thermalisation time of Béreux et al., *Fast training and sampling of RBMs* SI B.1.
pub const BURN_IN_TAU_EXP: f64 = 20.0;

/// Recorded rounds of a PT / PTT estimate, in integrated autocorrelation times of its replica
/// index process: 50 independent index configurations per system (\\(n / 2\tau_{\text{int}}\\)),
/// enough for the jackknife over chains to see the between-rung fluctuations.
pub const RECORDED_TAU_INT: f64 = 100.0;

/// The fewest recorded rounds of a PT / PTT estimate: [`RECORDED_TAU_INT`] integrated times
/// of an index process that forgets its rung every round (\\(\tau_{\text{int}} = 1/2\\)). A
/// shorter run can neither measure the autocorrelation of its index process (Sokal's window
/// needs several times \\(\tau_{\text{int}}\\) within half the run) nor meet
/// [`RECORDED_TAU_INT`], whatever the time is: it gets [`Warning::TooFewRounds`].
pub const MIN_RECORDED_ROUNDS: u64 = (RECORDED_TAU_INT / 2.0) as u64;

/// The smallest off-diagonal element of the two-state overlap matrix of BAR
/// ([`crate::PairEstimate::overlap`]) for which a pair of rungs is trusted: Klimovich, Shirts
/// and Mobley (2015, *J. Comput. Aided Mol. Des.* 29, "Guidelines for the analysis of free
/// energy calculations") recommend at least 0.03 between neighbouring states.
pub const MIN_OVERLAP: f64 = 0.03;

/// Number of bootstrap resamples behind [`crate::ErrorBar::LargerOfDeltaAndBootstrap`].
pub const BOOTSTRAP_RESAMPLES: usize = 200;

/// Seed of the bootstrap over chains (fixed: the error bar is a deterministic function of the
/// weights, the same for every thread count).
const BOOTSTRAP_SEED: u64 = 0x00b0_075e;

/// Why an estimate (or its error bar) should not be trusted. Printed by the CLI on stderr and
/// written in its run record; see the [module documentation](self) for the rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Warning {
    /// Too few effective samples for the error bar to mean anything.
    LowEss {
        /// The effective sample size.
        ess: f64,
        /// The threshold ([`MIN_ESS`]).
        threshold: f64,
    },
    /// One chain carries a large share of the total importance weight.
    WeightConcentration {
        /// \\(\max_i e^{w_i} / \sum_j e^{w_j}\\).
        largest_weight_fraction: f64,
        /// The threshold ([`MAX_WEIGHT_FRACTION`]).
        threshold: f64,
    },
    /// The upper tail of the importance weights is heavy (Pareto shape above [`max_pareto_k`]):
    /// the mean is dominated by rare chains the run may or may not have drawn, so neither the
    /// estimate nor its error bar is reliable, even when the ESS looks sufficient. Typical of a
    /// path that crosses a mode split faster than the kernel moves chains between the modes.
    HeavyTailedWeights {
        /// The Pareto shape \\(\hat k\\) of the weights ([`pareto_k`]).
        pareto_k: f64,
        /// The threshold ([`max_pareto_k`] of the number of weights).
        threshold: f64,
    },
    /// The two halves of the recorded samples give incompatible estimates: the sampler had not
    /// reached equilibrium (burn-in too short) or mixes too slowly for the run's length.
    NotEquilibrated {
        /// \\(\log\hat Z\\) from the first half of the recorded rounds.
        first_half: f64,
        /// \\(\log\hat Z\\) from the second half.
        second_half: f64,
        /// Their difference in units of the combined standard error.
        z: f64,
    },
    /// A parallel-tempering run too short for the measured autocorrelation of its replica
    /// index process: the burn-in below [`BURN_IN_TAU_EXP`] exponential times, or the recorded
    /// rounds below [`RECORDED_TAU_INT`] integrated times.
    RunTooShort {
        /// Rounds discarded as burn-in.
        burn_in: u64,
        /// Rounds recorded.
        recorded: u64,
        /// Exponential autocorrelation time of the index process, in rounds (`None`: not
        /// measurable from this run).
        tau_exp: Option<f64>,
        /// Integrated autocorrelation time of the index process, in rounds (`None`: not
        /// measurable from this run).
        tau_int: Option<f64>,
    },
    /// A parallel-tempering run that recorded fewer than [`MIN_RECORDED_ROUNDS`] rounds: too
    /// few to establish the autocorrelation of its replica index process, so nothing shows
    /// that the replicas travelled the ladder or that the rungs reached equilibrium (and the
    /// halves of the run are too short to compare).
    TooFewRounds {
        /// Rounds recorded.
        recorded: u64,
        /// The fewest trusted ([`MIN_RECORDED_ROUNDS`]).
        minimum: u64,
    },
    /// Two neighbouring rungs whose laws overlap too little for Bennett's acceptance ratio:
    /// the smaller off-diagonal element of their overlap matrix
    /// ([`crate::PairEstimate::overlap`]) is below [`MIN_OVERLAP`]. The samples of either rung
    /// rarely fall where the other rung puts its mass, so the ratio of their partition
    /// functions, and its error bar, rest on a few draws.
    PoorOverlap {
        /// The pair \\((k, k+1)\\), by its lower rung \\(k\\) (the pair with the smallest
        /// overlap).
        pair: usize,
        /// Its overlap.
        overlap: f64,
        /// The threshold ([`MIN_OVERLAP`]).
        threshold: f64,
    },
    /// Reverse AIS started from draws that are not exact draws of the target: the estimate is
    /// an upper bound of \\(\log Z\\) only as far as the draws are in equilibrium, and a start
    /// confined to some modes biases it (in either direction) without any trace in the weights.
    StartNotAtEquilibrium {
        /// Where the draws came from.
        start: String,
    },
    /// Forward AIS (a stochastic lower bound) came out above reverse AIS (a stochastic upper
    /// bound from equilibrium draws) by more than [`HALVES_Z`] combined standard errors: at
    /// least one of the two is biased beyond its error bar (typically reverse AIS from draws
    /// that miss a mode).
    SandwichInverted {
        /// The forward AIS estimate.
        ais: f64,
        /// The reverse AIS estimate.
        reverse_ais: f64,
        /// `(ais - reverse_ais) / combined standard error`.
        z: f64,
    },
    /// Reverse AIS (a stochastic upper bound) came out above forward AIS (a stochastic lower
    /// bound) by more than [`HALVES_Z`] combined standard errors: the two bracket \\(\log Z\\)
    /// in expectation, but at least one is biased beyond its error bar, typically forward AIS
    /// whose chains all missed a mode (its weights then look healthy).
    SandwichGap {
        /// The forward AIS estimate.
        ais: f64,
        /// The reverse AIS estimate.
        reverse_ais: f64,
        /// `(reverse_ais - ais) / combined standard error`.
        z: f64,
    },
    /// The AIS / reverse-AIS sandwich cannot be checked: an estimate or its error bar is not a
    /// number, or both estimates are infinite.
    SandwichUndefined {
        /// The forward AIS estimate.
        ais: f64,
        /// The reverse AIS estimate.
        reverse_ais: f64,
    },
    /// After resampling, all chains descend from few of the initial chains (founders): the
    /// estimate rests on these few independent lineages.
    LineageCollapse {
        /// Number of distinct founders among the chains.
        lineages: usize,
        /// The threshold ([`MIN_ESS`]).
        threshold: f64,
    },
    /// An online estimator's assumptions no longer hold (e.g. a parameter update too large for
    /// one kernel step to follow, or a collapse of the weights).
    AssumptionBroken {
        /// What broke, and when.
        reason: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LowEss { ess, threshold } => write!(
                f,
                "low effective sample size: ESS {ess:.1} < {threshold}; the estimate rests on a \
                 few chains and its error bar is not reliable (use more chains, more rungs or \
                 more sweeps per rung)"
            ),
            Self::WeightConcentration {
                largest_weight_fraction,
                threshold,
            } => write!(
                f,
                "weight concentration: one chain carries {:.1}% of the total weight (> {:.0}%); \
                 the estimate and its error bar are not reliable (use more rungs or more sweeps \
                 per rung)",
                100.0 * largest_weight_fraction,
                100.0 * threshold
            ),
            Self::HeavyTailedWeights {
                pareto_k,
                threshold,
            } => write!(
                f,
                "heavy-tailed weights: Pareto k = {pareto_k:.2} > {threshold:.2}; the mean \
                 weight is dominated by rare chains, so the estimate and its error bar are not \
                 reliable even if the ESS looks fine (typical of a path crossing a mode split; \
                 use more rungs, more sweeps per rung, or PTT)"
            ),
            Self::NotEquilibrated {
                first_half,
                second_half,
                z,
            } => write!(
                f,
                "not equilibrated: the two halves of the run give log Z = {first_half:.4} and \
                 {second_half:.4} ({z:.1} standard errors apart); use a longer burn-in or more \
                 steps"
            ),
            Self::RunTooShort {
                burn_in,
                recorded,
                tau_exp,
                tau_int,
            } => {
                let time =
                    |t: &Option<f64>| t.map_or("not measurable".into(), |t| format!("{t:.1}"));
                write!(
                    f,
                    "run too short: {burn_in} rounds of burn-in and {recorded} recorded, for a \
                     replica index process with tau_exp = {} and tau_int = {} rounds (needed: \
                     {BURN_IN_TAU_EXP} tau_exp of burn-in and {RECORDED_TAU_INT} tau_int \
                     recorded); run longer",
                    time(tau_exp),
                    time(tau_int)
                )
            }
            Self::TooFewRounds { recorded, minimum } => write!(
                f,
                "too few rounds: {recorded} recorded (< {minimum}); the autocorrelation of the \
                 replica index process cannot be established from so few, so nothing shows that \
                 the rungs reached equilibrium and the error bar is not reliable; run longer"
            ),
            Self::PoorOverlap {
                pair,
                overlap,
                threshold,
            } => write!(
                f,
                "poor overlap: rungs {pair} and {} overlap {overlap:.4} (< {threshold}); their \
                 log Z difference rests on a few draws and its error bar is not reliable (add \
                 rungs between them or run longer)",
                pair + 1
            ),
            Self::StartNotAtEquilibrium { start } => write!(
                f,
                "start not at equilibrium: reverse AIS started from {start}, not from exact \
                 draws of the model; it is an upper bound of log Z only if these are \
                 equilibrium draws, and a start missing modes biases it without any sign in \
                 the weights or the error bar"
            ),
            Self::SandwichInverted {
                ais,
                reverse_ais,
                z,
            } => write!(
                f,
                "sandwich inverted: AIS (a lower bound) gives log Z = {ais:.4}, above reverse \
                 AIS (an upper bound) at {reverse_ais:.4}, {z:.1} standard errors apart; at \
                 least one of them is biased beyond its error bar"
            ),
            Self::SandwichGap {
                ais,
                reverse_ais,
                z,
            } => write!(
                f,
                "sandwich gap: AIS (a lower bound) gives log Z = {ais:.4} and reverse AIS (an \
                 upper bound) {reverse_ais:.4}, {z:.1} standard errors apart; at least one of \
                 them is biased beyond its error bar (typically forward chains that all missed \
                 a mode, whose weights then look healthy); when reverse AIS started from exact \
                 draws, log Z lies between them in expectation: take the gap as the error"
            ),
            Self::SandwichUndefined { ais, reverse_ais } => write!(
                f,
                "sandwich undefined: AIS gives log Z = {ais} and reverse AIS {reverse_ais} (or \
                 an error bar is not a number), so the two cannot be compared; neither can be \
                 trusted"
            ),
            Self::LineageCollapse {
                lineages,
                threshold,
            } => write!(
                f,
                "lineage collapse: after resampling, all chains descend from {lineages} of the \
                 initial chains (< {threshold}); the estimate rests on these few lineages and \
                 its error bar is not reliable (use more chains or a finer path)"
            ),
            Self::AssumptionBroken { reason } => write!(f, "assumption broken: {reason}"),
        }
    }
}

/// The fraction of the total importance weight carried by the largest weight,
/// \\(\max_i e^{w_i} / \sum_j e^{w_j}\\), from log weights (`NaN` if all are \\(-\infty\\)).
pub fn largest_weight_fraction(log_w: &[f64]) -> f64 {
    let m = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY || m.is_nan() {
        return f64::NAN;
    }
    1.0 / log_w.iter().map(|w| (w - m).exp()).sum::<f64>()
}

/// The warnings about a set of importance weights with Kish ESS `ess` and largest normalised
/// weight `largest` (see the module documentation for the rule).
pub fn weight_warnings(ess: f64, largest: f64) -> Vec<Warning> {
    let mut out = Vec::new();
    if ess.is_nan() || ess < MIN_ESS {
        out.push(Warning::LowEss {
            ess,
            threshold: MIN_ESS,
        });
    }
    if largest.is_nan() || largest > MAX_WEIGHT_FRACTION {
        out.push(Warning::WeightConcentration {
            largest_weight_fraction: largest,
            threshold: MAX_WEIGHT_FRACTION,
        });
    }
    out
}

/// Difference of log importance weights below which [`pareto_k`] counts a whole tail as tied:
/// far above the rounding of a log weight summed over thousands of rungs (about
/// \\(10^{-12}\\)), far below a spread that could let a few weights dominate a mean.
const TIE: f64 = 1e-9;

/// The Pareto shape \\(\hat k\\) of the upper tail of the importance weights \\(e^{w_i}\\)
/// (Vehtari, Simpson, Gelman, Yao and Gabry 2024, "Pareto smoothed importance sampling", JMLR
/// 25): the \\(M = \lceil\min(n/5, 3\sqrt n)\rceil\\) largest weights, minus the next one, are fitted
/// by a generalised Pareto distribution (the profile-likelihood estimator of Zhang and Stephens
/// 2009, with the weakly informative prior of the paper that shrinks \\(\hat k\\) towards 0.5
/// by \\(10/(M + 10)\\)). The weights have \\(\lfloor 1/k\rfloor\\) finite moments: above
/// \\(k = 1/2\\) their variance is infinite, so neither the delta method nor the bootstrap
/// describes the error, and the mean converges only slowly. Weights tied with the threshold
/// are left out of the fit; `NaN` when fewer than 5 exceedances remain (too few weights, or a
/// tail of ties), or when the largest weight exceeds the threshold by less than a relative
/// \\(10^{-9}\\) (a tail within the rounding of the log weights).
pub fn pareto_k(log_w: &[f64]) -> f64 {
    let n = log_w.len();
    let m = (0.2 * n as f64).min(3.0 * (n as f64).sqrt()).ceil() as usize;
    if n < 5 || m < 2 || m >= n {
        return f64::NAN;
    }
    let mut sorted: Vec<f64> = log_w.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let top = sorted[0];
    if !top.is_finite() {
        return f64::NAN;
    }
    // Exceedances over the (M+1)-th largest weight, increasing, in units of the largest:
    // e^{w - top} (1 - e^{threshold - w}), free of cancellation for weights next to the
    // threshold and of overflow far above it. Weights tied with the threshold (a discrete
    // model puts many chains on one configuration) are not exceedances. A tail that lies
    // entirely within a relative TIE of the threshold is a tail of ties: the log weights then
    // differ only by the rounding of their sums (a path whose every chain stays in one mode
    // gives weights equal to 1e-11, whose fitted "tail" is rounding noise and cannot dominate
    // the mean). One weight beyond TIE, and the whole tail is fitted.
    let threshold = sorted[m];
    if top - threshold <= TIE {
        return f64::NAN;
    }
    let x: Vec<f64> = sorted[..m]
        .iter()
        .rev()
        .map(|w| (w - top).exp() * -(threshold - w).exp_m1())
        .filter(|&v| v > 0.0)
        .collect();
    let m = x.len();
    if m < 5 {
        return f64::NAN;
    }
    let (largest, quartile) = (x[m - 1], x[((m as f64) / 4.0 + 0.5) as usize - 1]);
    // Zhang-Stephens: a grid of theta < 1/max(x), weighted by the profile likelihood.
    let mf = m as f64;
    let grid = 30 + (mf.sqrt() as usize);
    let theta: Vec<f64> = (1..=grid)
        .map(|j| 1.0 / largest + (1.0 - (grid as f64 / (j as f64 - 0.5)).sqrt()) / (3.0 * quartile))
        .collect();
    let k_of = |t: f64| x.iter().map(|v| (-t * v).ln_1p()).sum::<f64>() / mf;
    let profile: Vec<f64> = theta
        .iter()
        .map(|&t| {
            let k = k_of(t);
            mf * ((-t / k).ln() - k - 1.0)
        })
        .collect();
    let weights: Vec<f64> = profile
        .iter()
        .map(|l| 1.0 / profile.iter().map(|o| (o - l).exp()).sum::<f64>())
        .collect();
    let total: f64 = weights.iter().filter(|w| w.is_finite()).sum();
    let t: f64 = theta
        .iter()
        .zip(&weights)
        .filter(|(_, w)| w.is_finite())
        .map(|(t, w)| t * w)
        .sum::<f64>()
        / total;
    let k = k_of(t);
    (mf * k + 10.0 * 0.5) / (mf + 10.0)
}

/// [`Warning::HeavyTailedWeights`] when the Pareto shape of `log_w` exceeds [`max_pareto_k`]
/// (nothing when it cannot be fitted).
pub fn tail_warning(log_w: &[f64]) -> Option<Warning> {
    let k = pareto_k(log_w);
    let threshold = max_pareto_k(log_w.len());
    (k > threshold).then_some(Warning::HeavyTailedWeights {
        pareto_k: k,
        threshold,
    })
}

/// The run-length warning of a PT / PTT estimate (times of the replica index process, in
/// rounds): [`Warning::RunTooShort`] when `burn_in` rounds are fewer than [`BURN_IN_TAU_EXP`]
/// `tau_exp` or `recorded` rounds fewer than [`RECORDED_TAU_INT`] `tau_int`, each time checked
/// when it was measured; otherwise [`Warning::TooFewRounds`] when fewer than
/// [`MIN_RECORDED_ROUNDS`] rounds were recorded, whatever was measured (so a run too short to
/// measure its times is never silent). A long run whose times cannot be measured (an index
/// that forgets its rung within a round) gets no warning.
pub fn run_length_warning(
    burn_in: u64,
    recorded: u64,
    tau_exp: Option<f64>,
    tau_int: Option<f64>,
) -> Option<Warning> {
    let short_burn_in = tau_exp.is_some_and(|t| (burn_in as f64) < BURN_IN_TAU_EXP * t);
    let short_record = tau_int.is_some_and(|t| (recorded as f64) < RECORDED_TAU_INT * t);
    if short_burn_in || short_record {
        Some(Warning::RunTooShort {
            burn_in,
            recorded,
            tau_exp,
            tau_int,
        })
    } else {
        (recorded < MIN_RECORDED_ROUNDS).then_some(Warning::TooFewRounds {
            recorded,
            minimum: MIN_RECORDED_ROUNDS,
        })
    }
}

/// Checks the AIS / reverse-AIS sandwich (bidirectional Monte Carlo, Grosse, Ghahramani and
/// Adams 2015): \\(\mathbb E[\log\hat Z_{\text{AIS}}] \le \log Z \le
/// \mathbb E[\log\hat Z_{\text{rev}}]\\) when reverse AIS starts from exact draws of the
/// model. With honest error bars the two estimates lie within a few combined standard errors
/// of each other, so the gap \\(\log\hat Z_{\text{rev}} - \log\hat Z_{\text{AIS}}\\) checks
/// both:
///
/// - above [`HALVES_Z`] combined standard errors, both estimates get [`Warning::SandwichGap`]:
///   at least one is biased beyond its error bar. This is what sees forward AIS whose chains
///   all missed a mode, whose weights are then alike and whose error bar small (the blind spot
///   of the weight checks); the gap bounds its error, in expectation, when the reverse chains
///   were exact draws;
/// - below \\(-\\)[`HALVES_Z`], both get [`Warning::SandwichInverted`] (typically reverse AIS
///   from draws that miss a mode);
/// - an undefined gap (a `NaN` estimate or error bar, or two infinite estimates) gives both
///   [`Warning::SandwichUndefined`].
///
/// The combined error bar is floored at the rounding of the estimates, so two exact values
/// that agree to rounding are consistent.
pub fn sandwich(
    forward: &mut crate::LogZEstimate,
    reverse: &mut crate::LogZEstimate,
) -> SandwichCheck {
    let gap = reverse.log_z - forward.log_z;
    // The error bars, floored at the rounding of the estimates (two exact values that agree
    // to rounding are consistent).
    let magnitude = |x: f64| if x.is_finite() { x.abs() } else { 0.0 };
    let rounding = 1e-12 * (1.0 + magnitude(forward.log_z).max(magnitude(reverse.log_z)));
    let combined = forward.std_err.hypot(reverse.std_err);
    let z = if combined.is_nan() {
        f64::NAN
    } else if gap == 0.0 {
        0.0
    } else {
        gap / combined.max(rounding)
    };
    let (ais, reverse_ais) = (forward.log_z, reverse.log_z);
    let (verdict, warning) = if z.is_nan() {
        let w = Warning::SandwichUndefined { ais, reverse_ais };
        (Sandwich::Undefined, Some(w))
    } else if z > HALVES_Z {
        let w = Warning::SandwichGap {
            ais,
            reverse_ais,
            z,
        };
        (Sandwich::Gap, Some(w))
    } else if z < -HALVES_Z {
        let w = Warning::SandwichInverted {
            ais,
            reverse_ais,
            z: -z,
        };
        (Sandwich::Inverted, Some(w))
    } else {
        (Sandwich::Consistent, None)
    };
    if let Some(w) = warning {
        forward.warn(w.clone());
        reverse.warn(w);
    }
    SandwichCheck { verdict, gap, z }
}

/// What [`sandwich`] found.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SandwichCheck {
    /// Consistent, a gap, or inverted.
    pub verdict: Sandwich,
    /// \\(\log\hat Z_{\text{rev}} - \log\hat Z_{\text{AIS}}\\), in nats.
    pub gap: f64,
    /// The gap in combined standard errors.
    pub z: f64,
}

/// The verdict of [`sandwich`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sandwich {
    /// The two estimates lie within [`HALVES_Z`] combined standard errors of each other.
    Consistent,
    /// Reverse AIS lies above forward AIS by more than [`HALVES_Z`] combined standard errors
    /// ([`Warning::SandwichGap`]).
    Gap,
    /// Forward AIS lies above reverse AIS by more than [`HALVES_Z`] combined standard errors
    /// ([`Warning::SandwichInverted`]).
    Inverted,
    /// The gap is undefined ([`Warning::SandwichUndefined`]).
    Undefined,
}

/// The standard error of \\(\log\frac1n\sum_i e^{w_i}\\) that still holds at low ESS as far as
/// the samples allow: the larger of the delta-method error `delta` and the bootstrap over
/// chains ([`crate::bootstrap_std_err`], [`BOOTSTRAP_RESAMPLES`] resamples, fixed seed). The
/// delta method linearises the logarithm and collapses when a few weights dominate (its
/// variance estimate misses the tail the sample has not seen); the bootstrap keeps the
/// non-linearity (a resample that misses the dominant chain moves the log mean by a lot).
pub(crate) fn robust_std_err(log_w: &[f64], delta: f64) -> f64 {
    if log_w.len() < 2 || log_w.iter().all(|w| *w == f64::NEG_INFINITY) {
        return delta;
    }
    let boot = crate::bootstrap_std_err(log_w, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED);
    if delta.is_nan() {
        boot
    } else {
        delta.max(boot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_flags_low_ess_and_concentration_and_nothing_else() {
        assert!(weight_warnings(1000.0, 0.001).is_empty());
        assert_eq!(weight_warnings(29.0, 0.05).len(), 1);
        assert!(matches!(
            weight_warnings(500.0, 0.2)[0],
            Warning::WeightConcentration { .. }
        ));
        assert_eq!(weight_warnings(2.0, 0.7).len(), 2);
        assert_eq!(weight_warnings(f64::NAN, f64::NAN).len(), 2);
    }

    /// The three verdicts at the 3-standard-error edges, on both sides, and a NaN estimate.
    #[test]
    fn the_sandwich_flags_a_gap_and_an_inversion_beyond_three_standard_errors() {
        let method = crate::Method::Enumeration {
            side: crate::Side::Hidden,
            configurations: 1,
        };
        let est = |z: f64, se: f64| {
            let mut e = crate::LogZEstimate::exact(z, method.clone());
            e.std_err = se;
            e
        };
        // Combined standard error 0.5: gaps of 1.45 and -1.45 are within 3 of it.
        for (forward, reverse, se, verdict) in [
            (10.0, 11.45, 0.3, Sandwich::Consistent),
            (10.0, 8.55, 0.3, Sandwich::Consistent),
            (10.0, 11.55, 0.3, Sandwich::Gap),
            (10.0, 8.45, 0.3, Sandwich::Inverted),
            (f64::NAN, 10.0, 0.3, Sandwich::Undefined),
            (f64::INFINITY, f64::INFINITY, 0.3, Sandwich::Undefined),
            (10.0, 10.0, f64::NAN, Sandwich::Undefined),
            // Exact values: equal, equal to rounding, and different.
            (10.0, 10.0, 0.0, Sandwich::Consistent),
            (10.0, 10.0 + 1e-14, 0.0, Sandwich::Consistent),
            (10.0, 10.001, 0.0, Sandwich::Gap),
            // A forward run that underflowed lies below any reverse estimate.
            (f64::NEG_INFINITY, 10.0, 0.3, Sandwich::Gap),
        ] {
            let (mut f, mut r) = (est(forward, se), est(reverse, 4.0 * se / 3.0));
            let check = sandwich(&mut f, &mut r);
            assert_eq!(check.verdict, verdict, "{forward} vs {reverse}");
            let flagged = match verdict {
                Sandwich::Consistent => 0,
                _ => 1,
            };
            assert_eq!((f.warnings.len(), r.warnings.len()), (flagged, flagged));
            if (forward, reverse) == (10.0, 11.55) {
                assert!((check.z - 1.55 / 0.5).abs() < 1e-12);
                assert!(matches!(f.warnings[0], Warning::SandwichGap { .. }));
            }
        }
    }

    #[test]
    fn largest_weight_fraction_of_equal_and_dominant_weights() {
        assert!((largest_weight_fraction(&[3.0; 8]) - 0.125).abs() < 1e-15);
        let mut w = vec![-1e3; 8];
        w[2] = 5.0;
        assert!((largest_weight_fraction(&w) - 1.0).abs() < 1e-12);
        assert!(largest_weight_fraction(&[f64::NEG_INFINITY; 3]).is_nan());
    }

    #[test]
    fn the_robust_error_is_never_below_the_delta_method_and_grows_with_a_heavy_tail() {
        // 999 small weights and one that carries ~90% of the total: the delta-method error is
        // ~1 but the bootstrap sees that dropping the big chain moves the log mean by ~2.3.
        let mut w = vec![0.0; 1000];
        w[17] = (9000.0f64).ln();
        let delta = crate::LogMeanExp::of(&w).std_err;
        let robust = robust_std_err(&w, delta);
        assert!(robust >= delta);
        assert!(robust > 1.0, "{robust} (delta {delta})");
        let light: Vec<f64> = (0..400).map(|i| 0.01 * (i % 13) as f64).collect();
        let d = crate::LogMeanExp::of(&light).std_err;
        assert!(robust_std_err(&light, d) < 1.3 * d);
    }

    #[test]
    fn pareto_k_recovers_the_tail_of_pareto_weights_and_flags_heavy_ones() {
        // Weights at the quantiles of a Pareto law with shape k: W = u^(-k).
        let pareto = |k: f64| -> Vec<f64> {
            (0..1000)
                .map(|i| -k * ((i as f64 + 0.5) / 1000.0).ln())
                .collect()
        };
        for k in [0.2, 0.5, 0.9] {
            let est = pareto_k(&pareto(k));
            assert!((est - k).abs() < 0.1, "{k}: {est}");
        }
        assert!(tail_warning(&pareto(0.3)).is_none());
        assert!(matches!(
            tail_warning(&pareto(0.9)),
            Some(Warning::HeavyTailedWeights { .. })
        ));
        assert!((max_pareto_k(1000) - 2.0 / 3.0).abs() < 1e-12);
        assert!((max_pareto_k(100_000) - 0.7).abs() < 1e-12);
        // Equal weights (a tail of ties) and too few weights: no fit.
        assert!(pareto_k(&[1.0; 500]).is_nan());
        // The same heavy tail within the rounding of the log weights (a spread of 1e-12 around
        // 97.4, as forward AIS gives when every chain stays in one mode) is a tail of ties, and
        // is fitted and flagged at full scale.
        let scaled = |s: f64| -> Vec<f64> { pareto(0.9).iter().map(|w| 97.4 + s * w).collect() };
        assert!(pareto_k(&scaled(1e-12)).is_nan());
        assert!(tail_warning(&scaled(1e-12)).is_none());
        assert!(tail_warning(&scaled(1.0)).is_some());
        // A threshold of zero weight (chains whose weight underflowed) is fitted.
        let mut zero = vec![f64::NEG_INFINITY; 1000];
        zero[..50].copy_from_slice(&pareto(0.9)[..50]);
        assert!(pareto_k(&zero).is_finite());
        assert!(pareto_k(&[0.0, 1.0, 2.0]).is_nan());
    }

    #[test]
    fn run_length_rule_checks_every_measured_time_and_never_passes_a_few_rounds() {
        let too_short = |w: Option<Warning>| matches!(w, Some(Warning::RunTooShort { .. }));
        let too_few = |w: Option<Warning>| matches!(w, Some(Warning::TooFewRounds { .. }));
        // Long enough for both times: no warning (the negative control).
        assert!(run_length_warning(100, 1000, Some(5.0), Some(10.0)).is_none());
        // Each time alone is enough to flag a short run (tau_exp unmeasured, tau_int measured).
        assert!(too_short(run_length_warning(100, 1000, None, Some(10.1))));
        assert!(too_short(run_length_warning(99, 1000, Some(5.0), None)));
        // The 40-sweep run of paper 000 Fig. 3: 1 burn-in round, 3 recorded, tau_int 1.47.
        assert!(too_short(run_length_warning(1, 3, None, Some(1.47))));
        // Nothing measurable: a long run is trusted (the index forgets its rung within a
        // round), a short one is not.
        assert!(run_length_warning(0, MIN_RECORDED_ROUNDS, None, None).is_none());
        assert!(too_few(run_length_warning(
            0,
            MIN_RECORDED_ROUNDS - 1,
            None,
            None
        )));
        // Even with tiny measured times.
        assert!(too_few(run_length_warning(10, 40, Some(0.1), Some(0.3))));
        assert_eq!(MIN_RECORDED_ROUNDS, 50);
    }

    #[test]
    fn warnings_print_what_they_mean() {
        let s = Warning::LowEss {
            ess: 2.0,
            threshold: MIN_ESS,
        }
        .to_string();
        assert!(s.contains("ESS 2.0 < 30"), "{s}");
        let j = serde_json::to_string(&Warning::NotEquilibrated {
            first_half: 1.0,
            second_half: 2.0,
            z: 4.0,
        })
        .unwrap();
        assert!(j.contains("\"kind\":\"not_equilibrated\""), "{j}");
    }
}

//! \\(\log Z\\) from parallel-tempering samples: Bennett's acceptance ratio (BAR) and the
//! one-sided exponential average between neighbouring rungs, chained from a tractable rung 0
//! (Béreux et al., *Fast training and sampling of RBMs*).

use crate::estimate::{
    DescribeLadder, ErrorBar, LadderKind, LogMeanExp, LogZEstimate, Method, RungLogZ,
};
use crate::trust::{HALVES_Z, MIN_ESS, MIN_OVERLAP, Warning};
use ebm_core::diagnostics::jackknife_error;
use ebm_core::numerics::sigmoid;
use ebm_core::{Chains, EnergyModel, Error, Par};
use ebm_samplers::tempering::{Ladder, PtState};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The estimate of \\(\Delta_k = \log(Z_{k+1}/Z_k)\\) for one pair of neighbouring rungs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairEstimate {
    /// \\(\hat\Delta_k\\).
    pub delta_log_z: f64,
    /// Its standard error.
    pub std_err: f64,
    /// Kish ESS of the forward weights \\(e^{-u_F}\\) (samples of rung \\(k\\) reweighted to
    /// \\(k+1\\)): how much the two laws overlap seen from below.
    pub forward_ess: f64,
    /// Kish ESS of the reverse weights \\(e^{-u_R}\\) (samples of rung \\(k+1\\) reweighted to
    /// \\(k\\)).
    pub reverse_ess: f64,
    /// BAR's overlap diagnostic: the smaller off-diagonal element of the two-state overlap
    /// matrix at \\(\hat\Delta\\) (Shirts and Chodera 2008; Klimovich et al. 2015),
    /// \\(\min(O_{01}, O_{10}) = S / \max(n_F, n_R)\\) with
    /// \\(S = \sum_x p_0(x)\,p_1(x)\\) over all \\(N = n_F + n_R\\) draws, where
    /// \\(p_1(x) = \sigma(-(M + u + \hat\Delta)) = 1 - p_0(x)\\) is the probability that a
    /// draw \\(x\\) of the pooled sample came from rung \\(k+1\\) (\\(u\\) its work written
    /// forwards). 1/2 for identical laws with \\(n_F = n_R\\), near 0 when neither rung's draws
    /// fall where the other puts its mass; below [`crate::trust::MIN_OVERLAP`] the pair raises
    /// [`Warning::PoorOverlap`]. (For independent draws, BAR's variance is
    /// \\((1 - O_{01} - O_{10}) / S\\).) `NaN` in records written before it existed.
    #[serde(default = "not_recorded")]
    pub overlap: f64,
}

fn not_recorded() -> f64 {
    f64::NAN
}

/// BAR, the self-consistent Bennett acceptance ratio for two laws \\(p_0 \propto e^{-E_0}\\)
/// and \\(p_1 \propto e^{-E_1}\\), from forward works \\(u_F = E_1(x) - E_0(x)\\) on
/// \\(n_F\\) draws \\(x \sim p_0\\) and reverse works \\(u_R = E_0(y) - E_1(y)\\) on \\(n_R\\)
/// draws \\(y \sim p_1\\). The estimate \\(\hat\Delta\\) of \\(\Delta = \log(Z_1/Z_0)\\) solves
///
/// \\[ \sum_{i=1}^{n_F} \frac{1}{1 + e^{M + u_{F,i} + \Delta}}
///   = \sum_{j=1}^{n_R} \frac{1}{1 + e^{-M + u_{R,j} - \Delta}},
///   \qquad M = \log\frac{n_F}{n_R}, \\]
///
/// whose left side decreases and right side increases in \\(\Delta\\): the root is unique. It
/// is found in `f64` by a safeguarded Newton iteration inside an expanding bracket. The
/// standard error is the asymptotic one for independent draws (Shirts et al. 2003),
///
/// \\[ \sigma^2 = \frac1N\Big[\Big\langle \frac{1}{2 + 2\cosh(M + u + \hat\Delta)}\Big\rangle^{-1}
///     - \frac{N}{n_F} - \frac{N}{n_R}\Big], \\]
///
/// the average running over all \\(N = n_F + n_R\\) works written forwards (\\(u = u_F\\) and
/// \\(u = -u_R\\)). For correlated draws (Markov chains) use [`PairAccumulator`], whose errors
/// come from a jackknife over chains.
///
/// # Errors
/// [`Error::InvalidParameter`] if either side is empty or holds a non-finite value.
pub fn bennett_acceptance_ratio(
    forward_work: &[f64],
    reverse_work: &[f64],
) -> ebm_core::Result<PairEstimate> {
    for (name, w) in [
        ("forward_work", forward_work),
        ("reverse_work", reverse_work),
    ] {
        if w.is_empty() {
            return Err(Error::InvalidParameter {
                name: name.into(),
                reason: "BAR needs at least one work value on each side".into(),
            });
        }
        Error::check_finite(name, w)?;
    }
    let works = Works {
        forward: vec![forward_work],
        reverse: vec![reverse_work],
    };
    let delta = works.solve(None);
    let (nf, nr) = works.counts();
    let n = nf + nr;
    let mean_f = works.overlap_sum(delta) / n;
    let var = ((1.0 / mean_f - n / nf - n / nr) / n).max(0.0);
    Ok(PairEstimate {
        delta_log_z: delta,
        std_err: var.sqrt(),
        forward_ess: LogMeanExp::of(&negated(forward_work)).ess,
        reverse_ess: LogMeanExp::of(&negated(reverse_work)).ess,
        overlap: works.overlap(delta),
    })
}

/// \\(1 / (2 + 2\cosh x) = \sigma(x)\sigma(-x)\\).
fn overlap(x: f64) -> f64 {
    let s = sigmoid(x);
    s * sigmoid(-x)
}

fn negated(x: &[f64]) -> Vec<f64> {
    x.iter().map(|v| -v).collect()
}

/// The works of one pair of rungs, as lists of slices (groups of draws).
struct Works<'a> {
    forward: Vec<&'a [f64]>,
    reverse: Vec<&'a [f64]>,
}

impl Works<'_> {
    fn counts(&self) -> (f64, f64) {
        let c = |v: &[&[f64]]| v.iter().map(|s| s.len()).sum::<usize>() as f64;
        (c(&self.forward), c(&self.reverse))
    }

    /// \\(S = \sum_x p_0(x) p_1(x)\\) at `delta` over all works (see
    /// [`PairEstimate::overlap`]).
    fn overlap_sum(&self, delta: f64) -> f64 {
        let (nf, nr) = self.counts();
        let m = (nf / nr).ln();
        let sum = |v: &[&[f64]], sign: f64| {
            v.iter()
                .flat_map(|s| s.iter())
                .map(|&u| overlap(m + sign * u + delta))
                .sum::<f64>()
        };
        sum(&self.forward, 1.0) + sum(&self.reverse, -1.0)
    }

    /// [`PairEstimate::overlap`] at `delta`.
    fn overlap(&self, delta: f64) -> f64 {
        let (nf, nr) = self.counts();
        self.overlap_sum(delta) / nf.max(nr)
    }

    /// The BAR residual \\(g(\Delta)\\) (left minus right side) and its derivative (negative).
    fn residual(&self, m: f64, delta: f64) -> (f64, f64) {
        let (mut g, mut dg) = (0.0, 0.0);
        for s in &self.forward {
            for &u in *s {
                let p = sigmoid(-(m + u + delta));
                g += p;
                dg -= p * (1.0 - p);
            }
        }
        for s in &self.reverse {
            for &u in *s {
                let p = sigmoid(-(-m + u - delta));
                g -= p;
                dg -= p * (1.0 - p);
            }
        }
        (g, dg)
    }

    /// One-sided estimates \\(\log\langle e^{-u_F}\rangle\\) and \\(-\log\langle e^{-u_R}\rangle\\),
    /// an initial guess for the root.
    fn exponential_guess(&self) -> f64 {
        let flat = |v: &[&[f64]]| {
            v.iter()
                .flat_map(|s| s.iter().map(|u| -u))
                .collect::<Vec<_>>()
        };
        let f = LogMeanExp::of(&flat(&self.forward)).log_mean;
        let r = -LogMeanExp::of(&flat(&self.reverse)).log_mean;
        0.5 * (f + r)
    }

    /// The root of the BAR equation, from `guess` (or the one-sided estimates).
    fn solve(&self, guess: Option<f64>) -> f64 {
        let (nf, nr) = self.counts();
        let m = (nf / nr).ln();
        let x0 = guess.unwrap_or_else(|| self.exponential_guess());
        // Expanding bracket: g(-inf) = n_F > 0, g(+inf) = -n_R < 0.
        let (mut lo, mut hi) = (x0 - 0.5, x0 + 0.5);
        let mut step = 1.0;
        while self.residual(m, lo).0 < 0.0 {
            hi = lo;
            lo -= step;
            step *= 2.0;
        }
        step = 1.0;
        while self.residual(m, hi).0 > 0.0 {
            lo = hi;
            hi += step;
            step *= 2.0;
        }
        let mut x = x0.clamp(lo, hi);
        for _ in 0..200 {
            let (g, dg) = self.residual(m, x);
            if g == 0.0 {
                return x;
            }
            if g > 0.0 {
                lo = x;
            } else {
                hi = x;
            }
            let newton = x - g / dg;
            let next = if dg < 0.0 && newton > lo && newton < hi {
                newton
            } else {
                0.5 * (lo + hi)
            };
            let tol = 1e-13 * (1.0 + next.abs());
            if (next - x).abs() <= tol || hi - lo <= tol {
                return next;
            }
            x = next;
        }
        x
    }
}

/// Accumulates, after each round of parallel tempering (or any sampler that keeps equilibrium
/// chains at every rung of a ladder), the energy differences between neighbouring rungs:
/// for pair \\((k, k+1)\\) the forward works \\(u_F = E_{k+1}(x) - E_k(x)\\) of the chains
/// \\(x\\) at rung \\(k\\) and the reverse works \\(u_R = E_k(y) - E_{k+1}(y)\\) of the chains
/// \\(y\\) at rung \\(k+1\\), each energy at its rung's own inverse temperature. Only these
/// differences are stored, not the samples (2 values per pair, chain and round).
///
/// From them, [`PairAccumulator::bar`] (Bennett's acceptance ratio with both sides) and
/// [`PairAccumulator::exponential_average`] (\\(\hat\Delta_k = \log\langle e^{-u_F}\rangle\\), the
/// reference code's estimator) chain the pair estimates from \\(\log Z_0\\) of a tractable rung
/// 0 to every rung:
///
/// \\[ \log \hat Z_k = \log Z_0 + \sum_{j < k} \hat\Delta_j. \\]
///
/// The draws of successive rounds are correlated, and each rung's draws enter two pairs, so the
/// standard errors come from a delete-one-group **jackknife** over groups of chains (chains are
/// independent systems of replicas): up to 16 groups when there are at least 8 chains, otherwise
/// 16 groups of consecutive rounds. The jackknife is applied to the whole chained sum, so the
/// correlations between pairs are accounted for.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PairAccumulator {
    n_rungs: usize,
    n_chains: usize,
    rounds: u64,
    pt_rounds: Option<u64>,
    ladder: Option<LadderKind>,
    /// `forward[k][t * n_chains + i]`: \\(u_F\\) of chain `i` at round `t` for pair `k`.
    forward: Vec<Vec<f64>>,
    /// `reverse[k][t * n_chains + i]`: \\(u_R\\) likewise.
    reverse: Vec<Vec<f64>>,
    #[serde(skip)]
    scratch: Vec<f64>,
}

/// The result of a ladder estimator from parallel-tempering samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LadderEstimate {
    /// The estimate of \\(\log Z\\) of the last rung (the target).
    pub estimate: LogZEstimate,
    /// \\(\log \hat Z_k\\) of every rung, rung 0 being the given \\(\log Z_0\\).
    pub profile: Vec<RungLogZ>,
    /// The estimate for each neighbouring pair.
    pub pairs: Vec<PairEstimate>,
}

/// The most jackknife groups used.
const JACKKNIFE_GROUPS: usize = 16;

/// With at least this many chains, jackknife groups are groups of chains.
const MIN_CHAINS_FOR_CHAIN_GROUPS: usize = 8;

impl PairAccumulator {
    /// An empty accumulator for a ladder of `n_rungs` rungs.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for fewer than two rungs.
    pub fn new(n_rungs: usize) -> ebm_core::Result<Self> {
        if n_rungs < 2 {
            return Err(Error::InvalidParameter {
                name: "n_rungs".into(),
                reason: format!("a ladder estimator needs at least 2 rungs, got {n_rungs}"),
            });
        }
        Ok(Self {
            n_rungs,
            n_chains: 0,
            rounds: 0,
            pt_rounds: None,
            ladder: None,
            forward: vec![Vec::new(); n_rungs - 1],
            reverse: vec![Vec::new(); n_rungs - 1],
            scratch: Vec::new(),
        })
    }

    /// Number of recorded rounds.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Records the chains of every rung after one round: `rungs[k]` holds draws of rung `k` of
    /// `ladder` (e.g. `PtState::rungs`). Three energy evaluations per rung.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the number of rungs differs from the accumulator's or the
    /// ladder's, or the number of chains differs between rungs or from earlier rounds;
    /// [`Error::InvalidParameter`] for zero chains.
    ///
    /// # Panics
    /// If the chains do not match the models' shape (as the energy evaluation does).
    pub fn record<L>(
        &mut self,
        ladder: &L,
        rungs: &[<L::Model as EnergyModel>::State],
        par: Par,
    ) -> ebm_core::Result<()>
    where
        L: Ladder + DescribeLadder,
    {
        Error::check_len("rungs recorded", self.n_rungs, rungs.len())?;
        Error::check_len("rungs of the ladder", self.n_rungs, ladder.n_rungs())?;
        let n = rungs[0].n_chains();
        if n == 0 {
            return Err(Error::InvalidParameter {
                name: "rungs".into(),
                reason: "no chains to record".into(),
            });
        }
        for r in rungs {
            Error::check_len("chains per rung", n, r.n_chains())?;
        }
        if self.rounds > 0 {
            Error::check_len("chains per rung (as in earlier rounds)", self.n_chains, n)?;
        }
        self.n_chains = n;
        self.ladder.get_or_insert_with(|| ladder.kind());
        self.scratch.resize(2 * n, 0.0);
        let (e_self, e_other) = self.scratch.split_at_mut(n);
        for (k, x) in rungs.iter().enumerate() {
            let r = ladder.rung(k);
            r.model.energies(x, r.beta, e_self, par);
            if k + 1 < self.n_rungs {
                let up = ladder.rung(k + 1);
                up.model.energies(x, up.beta, e_other, par);
                self.forward[k].extend(e_other.iter().zip(e_self.iter()).map(|(a, b)| a - b));
            }
            if k > 0 {
                let down = ladder.rung(k - 1);
                down.model.energies(x, down.beta, e_other, par);
                self.reverse[k - 1].extend(e_other.iter().zip(e_self.iter()).map(|(a, b)| a - b));
            }
        }
        self.rounds += 1;
        Ok(())
    }

    /// Records the rungs of a parallel-tempering state after a round (see
    /// [`PairAccumulator::record`]) and remembers the state's round counter, so that the cost
    /// of the estimate counts every PT round, including those before the first record
    /// (burn-in) and between records (thinning): `round x rungs x chains` kernel steps.
    ///
    /// # Errors
    /// As [`PairAccumulator::record`].
    pub fn record_pt<L>(
        &mut self,
        ladder: &L,
        state: &PtState<<L::Model as EnergyModel>::State>,
        par: Par,
    ) -> ebm_core::Result<()>
    where
        L: Ladder + DescribeLadder,
    {
        self.record(ladder, state.rungs(), par)?;
        self.pt_rounds = Some(state.round);
        Ok(())
    }

    /// Bennett's acceptance ratio for every pair ([`bennett_acceptance_ratio`]), chained from
    /// `log_z0` (the exact \\(\log Z\\) of rung 0, whose error, if any, is added in
    /// quadrature). Jackknife errors (see the type's documentation); the ESS of the result is
    /// the smallest over pairs of `forward_ess + reverse_ess`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if nothing was recorded or there are fewer than two
    /// jackknife groups (at least two chains with 8 or more chains, or two rounds).
    pub fn bar(&self, log_z0: &LogZEstimate) -> ebm_core::Result<LadderEstimate> {
        self.chain(log_z0, true)
    }

    /// The one-sided exponential average \\(\hat\Delta_k = \log\frac1N\sum e^{-u_F}\\) for every
    /// pair (free-energy perturbation from rung \\(k\\) to \\(k+1\\)), chained from `log_z0`.
    /// Unbiased for \\(Z_{k+1}/Z_k\\) but with a large variance when the laws overlap poorly;
    /// for comparison with [`PairAccumulator::bar`]. The ESS of the result is the smallest
    /// `forward_ess` over pairs.
    ///
    /// # Errors
    /// As [`PairAccumulator::bar`].
    pub fn exponential_average(&self, log_z0: &LogZEstimate) -> ebm_core::Result<LadderEstimate> {
        self.chain(log_z0, false)
    }

    /// The jackknife groups of the recorded values.
    fn grouping(&self) -> ebm_core::Result<Grouping> {
        let (chains, rounds) = (self.n_chains, self.rounds as usize);
        if chains >= MIN_CHAINS_FOR_CHAIN_GROUPS {
            Ok(Grouping {
                chains,
                groups: chains.min(JACKKNIFE_GROUPS),
                by_round: None,
            })
        } else if rounds >= 2 {
            Ok(Grouping {
                chains,
                groups: rounds.min(JACKKNIFE_GROUPS),
                by_round: Some(rounds),
            })
        } else {
            Err(Error::InvalidParameter {
                name: "recorded rounds".into(),
                reason: format!(
                    "error bars need at least {MIN_CHAINS_FOR_CHAIN_GROUPS} chains or 2 rounds; \
                     got {chains} chains and {rounds} rounds"
                ),
            })
        }
    }

    /// The estimate with its warnings: [`Warning::LowEss`] when the smallest pair ESS is below
    /// [`MIN_ESS`], [`Warning::PoorOverlap`] when the smallest pair overlap
    /// ([`PairEstimate::overlap`]) is below [`MIN_OVERLAP`], [`Warning::NotEquilibrated`] when
    /// the estimates from the first and second halves of the recorded rounds differ by more
    /// than [`HALVES_Z`] combined standard errors.
    fn chain(&self, log_z0: &LogZEstimate, bar: bool) -> ebm_core::Result<LadderEstimate> {
        let mut out = self.chain_unchecked(log_z0, bar)?;
        let e = &mut out.estimate;
        if e.ess.is_nan() || e.ess < MIN_ESS {
            e.warn(Warning::LowEss {
                ess: e.ess,
                threshold: MIN_ESS,
            });
        }
        let worst = out
            .pairs
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.overlap.total_cmp(&b.1.overlap))
            .map(|(k, p)| (k, p.overlap));
        if let Some((pair, overlap)) = worst
            && (overlap.is_nan() || overlap < MIN_OVERLAP)
        {
            e.warn(Warning::PoorOverlap {
                pair,
                overlap,
                threshold: MIN_OVERLAP,
            });
        }
        if let Some((first, second)) = self.halves() {
            let a = first.chain_unchecked(log_z0, bar)?.estimate;
            let b = second.chain_unchecked(log_z0, bar)?.estimate;
            let z = (a.log_z - b.log_z).abs() / a.std_err.hypot(b.std_err);
            if z.is_nan() || z > HALVES_Z {
                e.warn(Warning::NotEquilibrated {
                    first_half: a.log_z,
                    second_half: b.log_z,
                    z,
                });
            }
        }
        Ok(out)
    }

    /// The recorded rounds split into their first and second halves, when each half can have
    /// an error bar (at least 2 rounds each).
    fn halves(&self) -> Option<(Self, Self)> {
        let rounds = self.rounds as usize;
        if rounds < 4 {
            return None;
        }
        let cut = rounds / 2 * self.n_chains;
        let part = |lo: usize, hi: Option<usize>| {
            let take = |v: &Vec<Vec<f64>>| {
                v.iter()
                    .map(|x| x[lo..hi.unwrap_or(x.len())].to_vec())
                    .collect()
            };
            let n = (hi.unwrap_or(rounds * self.n_chains) - lo) / self.n_chains;
            Self {
                rounds: n as u64,
                pt_rounds: None,
                forward: take(&self.forward),
                reverse: take(&self.reverse),
                scratch: Vec::new(),
                ladder: self.ladder.clone(),
                ..*self
            }
        };
        Some((part(0, Some(cut)), part(cut, None)))
    }

    fn chain_unchecked(
        &self,
        log_z0: &LogZEstimate,
        bar: bool,
    ) -> ebm_core::Result<LadderEstimate> {
        if self.rounds == 0 {
            return Err(Error::InvalidParameter {
                name: "recorded rounds".into(),
                reason: "nothing was recorded".into(),
            });
        }
        let grouping = self.grouping()?;
        let n_groups = grouping.groups;
        let split = |data: &[f64]| {
            let mut g = vec![Vec::new(); n_groups];
            for (e, &x) in data.iter().enumerate() {
                g[grouping.of(e)].push(x);
            }
            g
        };
        // Per pair: the full-data estimate and the leave-one-group-out estimates.
        let per_pair: Vec<(PairEstimate, Vec<f64>)> = (0..self.n_rungs - 1)
            .into_par_iter()
            .map(|k| {
                let (fwd, rev) = (split(&self.forward[k]), split(&self.reverse[k]));
                let estimate = |skip: Option<usize>, guess: Option<f64>| {
                    let works = Works {
                        forward: all_but(&fwd, skip),
                        reverse: all_but(&rev, skip),
                    };
                    if bar {
                        works.solve(guess)
                    } else {
                        let w: Vec<f64> = works
                            .forward
                            .iter()
                            .flat_map(|s| s.iter().map(|u| -u))
                            .collect();
                        LogMeanExp::of(&w).log_mean
                    }
                };
                let full = estimate(None, None);
                let loo: Vec<f64> = (0..n_groups)
                    .map(|g| estimate(Some(g), Some(full)))
                    .collect();
                let all = Works {
                    forward: vec![&self.forward[k]],
                    reverse: vec![&self.reverse[k]],
                };
                let pair = PairEstimate {
                    delta_log_z: full,
                    std_err: jackknife_error(&loo),
                    forward_ess: LogMeanExp::of(&negated(&self.forward[k])).ess,
                    reverse_ess: LogMeanExp::of(&negated(&self.reverse[k])).ess,
                    overlap: all.overlap(full),
                };
                (pair, loo)
            })
            .collect();
        let var0 = log_z0.std_err * log_z0.std_err;
        let mut profile = vec![RungLogZ {
            log_z: log_z0.log_z,
            std_err: log_z0.std_err,
        }];
        let (mut sum, mut loo_sums) = (0.0, vec![0.0; n_groups]);
        for (pair, loo) in &per_pair {
            sum += pair.delta_log_z;
            for (s, d) in loo_sums.iter_mut().zip(loo) {
                *s += d;
            }
            let se = jackknife_error(&loo_sums);
            profile.push(RungLogZ {
                log_z: log_z0.log_z + sum,
                std_err: (var0 + se * se).sqrt(),
            });
        }
        let pairs: Vec<PairEstimate> = per_pair.into_iter().map(|(p, _)| p).collect();
        let ess = pairs
            .iter()
            .map(|p| {
                if bar {
                    p.forward_ess + p.reverse_ess
                } else {
                    p.forward_ess
                }
            })
            .fold(f64::INFINITY, f64::min);
        let ladder = self
            .ladder
            .clone()
            .unwrap_or(LadderKind::Custom("unknown".into()));
        let (n_rungs, rounds) = (self.n_rungs, self.rounds);
        let method = if bar {
            Method::BennettAcceptanceRatio {
                ladder,
                n_rungs,
                rounds,
            }
        } else {
            Method::ExponentialAverage {
                ladder,
                n_rungs,
                rounds,
            }
        };
        let last = *profile.last().expect("at least two rungs");
        let cost_rounds = self.pt_rounds.unwrap_or(self.rounds);
        Ok(LadderEstimate {
            estimate: LogZEstimate {
                log_z: last.log_z,
                std_err: last.std_err,
                ess,
                n_samples: self.rounds as usize * self.n_chains,
                kernel_steps: cost_rounds * (self.n_rungs * self.n_chains) as u64,
                method,
                error_bar: ErrorBar::Jackknife { groups: n_groups },
                largest_weight_fraction: None,
                warnings: Vec::new(),
            },
            profile,
            pairs,
        })
    }
}

/// Jackknife groups of the values `t * chains + i` (round `t`, chain `i`): contiguous blocks of
/// chains, or of rounds when `by_round` holds the number of rounds.
struct Grouping {
    chains: usize,
    groups: usize,
    by_round: Option<usize>,
}

impl Grouping {
    fn of(&self, e: usize) -> usize {
        match self.by_round {
            None => (e % self.chains) * self.groups / self.chains,
            Some(rounds) => (e / self.chains) * self.groups / rounds,
        }
    }
}

/// The groups of `v` except group `skip`.
fn all_but(v: &[Vec<f64>], skip: Option<usize>) -> Vec<&[f64]> {
    v.iter()
        .enumerate()
        .filter(|(g, _)| Some(*g) != skip)
        .map(|(_, s)| s.as_slice())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_of_identical_laws_is_zero_with_zero_error() {
        let p = bennett_acceptance_ratio(&[0.0; 50], &[0.0; 30]).unwrap();
        assert!(p.delta_log_z.abs() < 1e-12);
        assert!(p.std_err < 1e-6);
    }

    #[test]
    fn bar_is_exact_for_a_constant_energy_shift() {
        // E_1 = E_0 + c: u_F = c, u_R = -c, and log(Z_1/Z_0) = -c, for any sample sizes.
        for &c in &[-30.0, -1.3, 0.0, 0.4, 25.0] {
            let p = bennett_acceptance_ratio(&[c; 7], &[-c; 19]).unwrap();
            assert!((p.delta_log_z + c).abs() < 1e-9, "{c}: {}", p.delta_log_z);
        }
    }

    #[test]
    fn bar_solves_its_equation() {
        let f: Vec<f64> = (0..40).map(|i| 1.0 + 0.1 * (i % 7) as f64).collect();
        let r: Vec<f64> = (0..25).map(|i| -0.5 + 0.2 * (i % 5) as f64).collect();
        let p = bennett_acceptance_ratio(&f, &r).unwrap();
        let m = (40.0f64 / 25.0).ln();
        let lhs: f64 = f
            .iter()
            .map(|u| 1.0 / (1.0 + (m + u + p.delta_log_z).exp()))
            .sum();
        let rhs: f64 = r
            .iter()
            .map(|u| 1.0 / (1.0 + (-m + u - p.delta_log_z).exp()))
            .sum();
        assert!((lhs - rhs).abs() < 1e-10 * lhs, "{lhs} vs {rhs}");
    }

    #[test]
    fn overlap_is_one_half_for_identical_laws_small_for_separated_ones_and_gives_the_variance() {
        // Identical laws (up to a constant energy shift), equal sizes: p_0 = p_1 = 1/2.
        for c in [0.0, 7.0] {
            let p = bennett_acceptance_ratio(&[c; 40], &[-c; 40]).unwrap();
            assert!((p.overlap - 0.5).abs() < 1e-9, "{c}: {}", p.overlap);
        }
        // Each side's draws are e^-12 less likely under the other law: almost no overlap.
        let p = bennett_acceptance_ratio(&[12.0; 40], &[12.0; 40]).unwrap();
        assert!(p.overlap < 1e-4, "{}", p.overlap);
        // The asymptotic variance is (1 - O_01 - O_10) / S, with S = overlap * max(n_F, n_R).
        let f: Vec<f64> = (0..60).map(|i| 0.5 + 0.13 * (i % 9) as f64).collect();
        let r: Vec<f64> = (0..25).map(|i| -0.2 + 0.21 * (i % 4) as f64).collect();
        let p = bennett_acceptance_ratio(&f, &r).unwrap();
        let s = p.overlap * 60.0;
        let (o01, o10) = (s / 60.0, s / 25.0);
        assert!(
            (p.std_err.powi(2) - (1.0 - o01 - o10) / s).abs() < 1e-12,
            "{} vs {}",
            p.std_err.powi(2),
            (1.0 - o01 - o10) / s
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(bennett_acceptance_ratio(&[], &[1.0]).is_err());
        assert!(bennett_acceptance_ratio(&[f64::NAN], &[1.0]).is_err());
        assert!(PairAccumulator::new(1).is_err());
    }

    #[test]
    fn jackknife_of_a_mean_is_the_standard_error_of_the_mean() {
        let x = [1.0, 4.0, 2.0, 8.0, 5.0];
        let n = x.len() as f64;
        let total: f64 = x.iter().sum();
        let loo: Vec<f64> = x.iter().map(|v| (total - v) / (n - 1.0)).collect();
        let mean = total / n;
        let sd = (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        assert!((jackknife_error(&loo) - sd / n.sqrt()).abs() < 1e-12);
    }
}

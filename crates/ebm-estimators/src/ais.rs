//! Annealed importance sampling, written once over ladders: forward AIS along any ladder
//! (temperature, reference-interpolated, training trajectory, concatenations), reverse AIS,
//! and the transition that the online trajectory estimator applies after each training update.

use crate::estimate::{
    DescribeLadder, Direction, ErrorBar, LadderKind, LogMeanExp, LogZEstimate, Method, RungLogZ,
};
use crate::exact::Start;
use crate::population::{Population, SelectChains};
use ebm_core::{EnergyModel, Error, Kernel, Par};
use ebm_samplers::tempering::{Ladder, Rung};
use serde::{Deserialize, Serialize};

/// One annealing transition: carries a weighted [`Population`] from the law of one rung to the
/// law of the next. Every estimator of this crate that moves along a ladder (forward AIS,
/// reverse AIS, offline and online trajectory AIS) is a sequence of such transitions, so a
/// transition rule is written once and runs on every ladder.
///
/// Contract: if the weighted chains target \\(p_{\text{from}}\\) on entry, in the sense that
/// \\(\mathbb E \sum_i e^{w_i} g(x_i) = c\, Z_{\text{from}}\, \mathbb E_{p_\text{from}} g\\) for
/// every function \\(g\\) (with the constant \\(c\\) carried by the population), then on exit
/// the same holds with \\(p_{\text{to}}\\) and \\(Z_{\text{to}}\\). [`Ais`] is the
/// implementation of this crate.
pub trait Annealer<M: EnergyModel>: Sync {
    /// Carries `population` from rung `from` to rung `to`.
    ///
    /// # Panics
    /// If the population's chains do not match the models' shape.
    fn transition(
        &self,
        from: Rung<'_, M>,
        to: Rung<'_, M>,
        population: &mut Population<M::State>,
        par: Par,
    ) -> TransitionInfo;

    /// The relative-ESS threshold below which the population is resampled, if any (recorded in
    /// [`Method::Ais`]).
    fn resample_below_ess(&self) -> Option<f64> {
        None
    }
}

/// What one annealing transition did.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransitionInfo {
    /// Relative ESS of the weights after reweighting (before any resampling).
    pub relative_ess: f64,
    /// Whether the population was resampled.
    pub resampled: bool,
}

/// Neal's annealed importance sampling transition (Béreux et al., *Fast training and sampling of RBMs*): **first**
/// reweight at the current states,
///
/// \\[ w_i \mathrel{+}= E_{\text{from}}(x_i) - E_{\text{to}}(x_i), \\]
///
/// **then** move every chain with one step of `kernel` at the **new** rung. The current
/// states were produced by a kernel that leaves the previous law invariant (or are exact draws
/// of rung 0), which is what makes \\(\mathbb E[\frac1n\sum_i e^{w_i}] = Z_K / Z_0\\) exact. Moving
/// with the new rung's kernel *before* weighting — the ordering of a peer library's
/// code (the PyTorch `rbms`) — biases the estimate upwards; the accuracy tests reject
/// it. (Moving with the *previous* rung's kernel and then weighting is also exact: it is the
/// same scheme with the kernels shifted by one rung.)
///
/// Optionally, when the relative ESS after reweighting falls below a threshold, the population
/// is resampled ([`Population::resample`], systematic) before the move, carrying \\(\log Z\\)
/// over: a sequential Monte Carlo / population-annealing variant (the PTT paper) that the online
/// trajectory estimator uses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ais<K> {
    /// The kernel applied at each new rung (e.g. `Gibbs::new(1)`).
    pub kernel: K,
    resample_below_ess: Option<f64>,
}

fn check_threshold(threshold: f64) -> ebm_core::Result<()> {
    if (0.0..=1.0).contains(&threshold) {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "resample_below_ess".into(),
            reason: format!("a relative ESS threshold must lie in [0, 1], got {threshold}"),
        })
    }
}

impl<K> Ais<K> {
    /// AIS moving with `kernel`, without resampling.
    pub fn new(kernel: K) -> Self {
        Self {
            kernel,
            resample_below_ess: None,
        }
    }

    /// The same transition, resampling whenever the relative ESS after reweighting falls below
    /// `threshold` (0 never resamples, 1 resamples at every transition with unequal weights).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `threshold` lies in \\([0, 1]\\).
    pub fn with_resampling(self, threshold: f64) -> ebm_core::Result<Self> {
        check_threshold(threshold)?;
        Ok(Self {
            resample_below_ess: Some(threshold),
            ..self
        })
    }
}

/// Reweight, resample if the relative ESS is below `threshold`, move with `kernel` at `to`.
pub(crate) fn weight_then_move<M, K>(
    kernel: &K,
    threshold: Option<f64>,
    from: Rung<'_, M>,
    to: Rung<'_, M>,
    population: &mut Population<M::State>,
    par: Par,
) -> TransitionInfo
where
    M: EnergyModel,
    M::State: SelectChains,
    K: Kernel<M>,
{
    population.reweight(from, to, par);
    let relative_ess = population.relative_ess();
    let resampled = threshold.is_some_and(|t| relative_ess < t);
    if resampled {
        population.resample();
    }
    population.advance_chains(kernel, to, par);
    TransitionInfo {
        relative_ess,
        resampled,
    }
}

impl<M, K> Annealer<M> for Ais<K>
where
    M: EnergyModel,
    M::State: SelectChains,
    K: Kernel<M>,
{
    fn transition(
        &self,
        from: Rung<'_, M>,
        to: Rung<'_, M>,
        population: &mut Population<M::State>,
        par: Par,
    ) -> TransitionInfo {
        weight_then_move(
            &self.kernel,
            self.resample_below_ess,
            from,
            to,
            population,
            par,
        )
    }

    fn resample_below_ess(&self) -> Option<f64> {
        self.resample_below_ess
    }
}

/// A ladder run backwards: rung `k` is rung `n - 1 - k` of the wrapped ladder. Reverse AIS is
/// forward annealing along it.
#[derive(Debug)]
pub struct Reversed<'a, L>(pub &'a L);

impl<L> Clone for Reversed<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L> Copy for Reversed<'_, L> {}

impl<L: Ladder> Ladder for Reversed<'_, L> {
    type Model = L::Model;

    fn n_rungs(&self) -> usize {
        self.0.n_rungs()
    }

    fn rung(&self, k: usize) -> Rung<'_, L::Model> {
        self.0.rung(self.0.n_rungs() - 1 - k)
    }
}

impl<L: DescribeLadder> DescribeLadder for Reversed<'_, L> {
    fn kind(&self) -> LadderKind {
        LadderKind::Reversed(Box::new(self.0.kind()))
    }
}

/// The result of an annealing run.
#[derive(Clone, Debug)]
pub struct AisRun<S> {
    /// The estimate of \\(\log Z\\) of the target (the last rung of the ladder).
    pub estimate: LogZEstimate,
    /// Forward runs: the running estimate of \\(\log Z_k\\) at every rung `k` (rung 0 is the
    /// start's exact value), e.g. the log partition function of every checkpoint of a
    /// trajectory. Reverse runs: empty.
    pub profile: Vec<RungLogZ>,
    /// The final population: weighted draws of the target (forward) or of rung 0 (reverse).
    pub population: Population<S>,
}

/// Runs `annealer` over every neighbouring pair of `ladder` in order and returns the
/// population with the log-ratio estimates after each rung.
fn anneal<L, A>(
    annealer: &A,
    ladder: &L,
    population: &mut Population<<L::Model as EnergyModel>::State>,
    par: Par,
) -> Vec<crate::estimate::LogMeanExp>
where
    L: Ladder,
    A: Annealer<L::Model>,
{
    let mut ratios = Vec::with_capacity(ladder.n_rungs());
    for k in 1..ladder.n_rungs() {
        annealer.transition(ladder.rung(k - 1), ladder.rung(k), population, par);
        ratios.push(population.log_ratio());
    }
    ratios
}

/// The estimate at the end of an annealing run over `population`: `log_z` with the error
/// `other_var` (variance of the start's \\(\log Z_0\\)) combined with the robust error of the
/// population's log mean weight ([`crate::trust::robust_std_err`] on the current segment, the
/// delta-method variance of the segments before a resampling), the ESS and the largest-weight
/// fraction of the final weights, and the warnings of [`crate::trust`] (the tail of the weights
/// aggregated by founder, [`Population::founder_log_weights`]).
pub(crate) fn ais_estimate<S: ebm_core::Chains>(
    log_z: f64,
    other_var: f64,
    population: &Population<S>,
    population_steps: u64,
    method: Method,
) -> LogZEstimate {
    let w = &population.log_weights;
    let current = LogMeanExp::of(w);
    let se = crate::trust::robust_std_err(w, current.std_err);
    let largest = crate::trust::largest_weight_fraction(w);
    let n = population.log_weights.len();
    let mut std_err = (other_var + population.carried_variance() + se * se).sqrt();
    // The rule applies to the independent units: the chains, or after resampling the
    // founders with the total weight of their descendants.
    let units = population.founder_log_weights();
    let mut warnings = crate::trust::weight_warnings(
        LogMeanExp::of(&units).ess,
        crate::trust::largest_weight_fraction(&units),
    );
    warnings.extend(crate::trust::tail_warning(&units));
    if let Some((var, lineages)) = population.lineage_variance() {
        std_err = std_err.max((other_var + var).sqrt());
        if (lineages as f64) < crate::trust::MIN_ESS {
            warnings.push(crate::Warning::LineageCollapse {
                lineages,
                threshold: crate::trust::MIN_ESS,
            });
        }
    }
    LogZEstimate {
        log_z,
        std_err,
        ess: current.ess,
        n_samples: n,
        kernel_steps: population_steps * n as u64,
        method,
        error_bar: ErrorBar::LargerOfDeltaAndBootstrap {
            resamples: crate::trust::BOOTSTRAP_RESAMPLES,
        },
        largest_weight_fraction: Some(largest),
        warnings,
    }
}

/// Forward annealed importance sampling along `ladder` from exact draws of its rung 0
/// (Béreux et al., *Fast training and sampling of RBMs*):
///
/// \\[ x^{(0)} \sim p_0, \qquad w \mathrel{+}= E_{k-1}(x^{(k-1)}) - E_k(x^{(k-1)}), \qquad
///     x^{(k)} \sim T_k(x^{(k-1)}, \cdot), \qquad k = 1, \dots, K, \\]
///
/// \\[ \log \hat Z_K = \log Z_0 + \log \frac1n \sum_i e^{w_i}, \\]
///
/// with the transitions of `annealer` (normally [`Ais`]). The estimate of \\(Z_K\\) is
/// unbiased, so \\(\log \hat Z_K\\) is a stochastic lower bound: \\(\mathbb E[\log\hat Z_K] \le
/// \log Z_K\\). The standard error is the larger of the delta-method and the bootstrap-over-
/// chains error of the log mean weight ([`crate::trust`]; segments before a resampling add their
/// delta-method variance), combined with the error of `start.log_z`; the estimate carries the
/// ESS and largest-weight fraction of its final weights and the warnings of [`crate::trust`]
/// ([`Warning::LowEss`](crate::Warning::LowEss),
/// [`Warning::WeightConcentration`](crate::Warning::WeightConcentration)). The `profile`
/// entries below the last rung carry delta-method errors only.
///
/// One function serves every ladder: temperature AIS from the uniform law
/// ([`Start::uniform`] on a `TemperatureLadder` starting at \\(\beta = 0\\)), AIS with an
/// independent-site reference ([`Start::independent`] on a `ReferenceLadder`), and offline
/// trajectory AIS over saved checkpoints ([`Start::independent`] or [`Start::enumerated`] for
/// the first checkpoint, on a `TrajectoryLadder`).
///
/// `start` must hold exact draws of rung 0 of `ladder`, with that rung's \\(\log Z_0\\). This is
/// **not checked**, and cannot be in general: a [`Start`] is a population and a number, and
/// the [`Ladder`] trait exposes rung 0 only as an energy function, so neither the law the draws
/// came from nor the model whose \\(\log Z\\) was computed can be compared with rung 0 (models
/// have no equality, and a statistical test that draws are from \\(p_0\\) would need its
/// normaliser and marginals, which the trait does not give). Build starts with the constructors
/// of [`Start`] from the same model and \\(\beta\\) as rung 0 ([`Start::uniform`] for a
/// temperature ladder from \\(\beta = 0\\), [`Start::independent`] with the ladder's reference,
/// [`Start::enumerated`] for the first checkpoint): then rung 0 and the start agree by
/// construction. Draws of another law bias the estimate silently (wrong weights from the first
/// transition on), and a wrong \\(\log Z_0\\) shifts it by the difference. The CLI builds the
/// start and the ladder from the same model, so its paths satisfy this.
///
/// The cost is one kernel step per chain and rung above 0.
pub fn ais<L, A>(
    annealer: &A,
    ladder: &L,
    start: Start<<L::Model as EnergyModel>::State>,
    par: Par,
) -> AisRun<<L::Model as EnergyModel>::State>
where
    L: Ladder + DescribeLadder,
    A: Annealer<L::Model>,
{
    let Start {
        mut population,
        log_z: log_z0,
    } = start;
    let steps0 = population.steps();
    let resamplings0 = population.resamplings();
    let base = population.log_ratio();
    let ratios = anneal(annealer, ladder, &mut population, par);
    forward_run(
        ladder,
        annealer.resample_below_ess(),
        log_z0,
        (base, ratios),
        population,
        (steps0, resamplings0),
    )
}

/// Forward AIS from the log weights of its chains at the start and after every rung, for a
/// run whose chains were annealed apart and joined ([`Population::with_chains`];
/// `ebm_mpi::ais` shards AIS across processes this way): `initial` are the start's weights,
/// `after_rung[k - 1]` the weights of all chains after the transition to rung `k`, in chain
/// order, `population` the joined final population, `start_steps` its step count at the start
/// and `log_z0` rung 0's. Without resampling every chain's weights are its own, so this gives
/// exactly what [`ais`] gives on the whole population: the same estimate, error bar,
/// warnings and profile, bit for bit.
///
/// # Errors
/// [`ebm_core::Error::InvalidParameter`] if `population` was resampled, or the weights do not
/// hold one vector per rung above 0 with one weight per chain, ending with the population's.
pub fn ais_from_weights<L, S>(
    ladder: &L,
    log_z0: LogZEstimate,
    initial: &[f64],
    after_rung: &[Vec<f64>],
    population: Population<S>,
    start_steps: u64,
) -> ebm_core::Result<AisRun<S>>
where
    L: Ladder + DescribeLadder,
    S: ebm_core::Chains,
{
    let n = population.n_chains();
    let shapes_agree = after_rung.len() + 1 == ladder.n_rungs()
        && initial.len() == n
        && after_rung.iter().all(|w| w.len() == n)
        && after_rung
            .last()
            .is_none_or(|w| *w == population.log_weights);
    if population.resamplings() > 0 || !shapes_agree || start_steps > population.steps() {
        return Err(Error::InvalidParameter {
            name: "after_rung".into(),
            reason: format!(
                "expected a never-resampled population and {} weight vectors of {n} chains \
                 ending with the population's weights (got {} resamplings and {} vectors)",
                ladder.n_rungs().saturating_sub(1),
                population.resamplings(),
                after_rung.len()
            ),
        });
    }
    let ratio = |w: &[f64]| crate::population::carried_ratio(0.0, 0.0, LogMeanExp::of(w));
    let ratios = after_rung.iter().map(|w| ratio(w)).collect();
    Ok(forward_run(
        ladder,
        None,
        log_z0,
        (ratio(initial), ratios),
        population,
        (start_steps, 0),
    ))
}

/// The result of a forward run: the profile of \\(\log Z_k\\) from rung 0's `log_z0` and the
/// log ratios after each rung (`base` at the start), and the estimate of the last rung.
fn forward_run<L, S>(
    ladder: &L,
    resample_below_ess: Option<f64>,
    log_z0: LogZEstimate,
    (base, ratios): (LogMeanExp, Vec<LogMeanExp>),
    population: Population<S>,
    (steps0, resamplings0): (u64, u64),
) -> AisRun<S>
where
    L: Ladder + DescribeLadder,
    S: ebm_core::Chains,
{
    let var0 = log_z0.std_err * log_z0.std_err;
    let mut profile = vec![RungLogZ {
        log_z: log_z0.log_z,
        std_err: log_z0.std_err,
    }];
    profile.extend(ratios.iter().map(|r| RungLogZ {
        log_z: log_z0.log_z + r.log_mean - base.log_mean,
        std_err: (var0 + r.std_err * r.std_err).sqrt(),
    }));
    let last = *profile.last().expect("rung 0 is always there");
    let estimate = ais_estimate(
        last.log_z,
        var0,
        &population,
        population.steps() - steps0,
        Method::Ais {
            direction: Direction::Forward,
            ladder: ladder.kind(),
            n_rungs: ladder.n_rungs(),
            resample_below_ess,
            resamplings: population.resamplings() - resamplings0,
        },
    );
    AisRun {
        estimate,
        profile,
        population,
    }
}

/// Reverse annealed importance sampling: starting from draws of the **target** (the last rung
/// of `ladder`), anneal down to rung 0, whose exact \\(\log Z_0\\) is `log_z0`:
///
/// \\[ w \mathrel{+}= E_{k}(x) - E_{k-1}(x), \quad x \sim T_{k-1}(x, \cdot), \quad
///     k = K, \dots, 1, \qquad
///     \log \hat Z_K = \log Z_0 - \log \frac1n \sum_i e^{w_i}. \\]
///
/// The mean weight estimates \\(Z_0 / Z_K\\) without bias when the starting draws are exact
/// (e.g. [`Start::enumerated`] on the target), so \\(\log\hat Z_K\\) is then a stochastic
/// **upper** bound; with forward [`ais`] it sandwiches \\(\log Z_K\\). From equilibrium (PT,
/// long Gibbs) draws the bound holds only as far as the draws are in equilibrium, and draws
/// confined to some of the modes bias the estimate without any sign in the weights (measured
/// on a bimodal 16 x 20 RBM from 1000 Gibbs sweeps in one mode: \\(-1.0\\) nat with
/// an error bar of 0.008). This function cannot know where `target` came from: a caller that did not
/// draw it exactly must add [`Warning::StartNotAtEquilibrium`](crate::Warning::StartNotAtEquilibrium)
/// to the estimate ([`LogZEstimate::warn`]), as the CLI does. Same transitions, same error
/// bars and weight warnings as [`ais`]; the returned profile is empty.
pub fn reverse_ais<L, A>(
    annealer: &A,
    ladder: &L,
    target: Population<<L::Model as EnergyModel>::State>,
    log_z0: &LogZEstimate,
    par: Par,
) -> AisRun<<L::Model as EnergyModel>::State>
where
    L: Ladder + DescribeLadder,
    A: Annealer<L::Model>,
{
    let mut population = target;
    let steps0 = population.steps();
    let resamplings0 = population.resamplings();
    let base = population.log_ratio();
    let ratios = anneal(annealer, &Reversed(ladder), &mut population, par);
    let last = ratios.last().copied();
    reverse_run(
        ladder,
        annealer.resample_below_ess(),
        log_z0,
        (base, last),
        population,
        (steps0, resamplings0),
    )
}

/// Reverse AIS from the log weights of its chains at the start, for a run whose chains were
/// annealed apart and joined ([`Population::with_chains`]; `ebm_mpi::reverse_ais` shards
/// reverse AIS across processes this way): `initial` are the weights of all chains at the
/// start, in chain order, `population` the joined final population (annealed down to rung 0),
/// `start_steps` its step count at the start. Without resampling every chain's weights are its
/// own, so this gives exactly what [`reverse_ais`] gives on the whole population: the same
/// estimate, error bar and warnings, bit for bit.
///
/// # Errors
/// [`ebm_core::Error::InvalidParameter`] if `population` was resampled or `initial` does not
/// hold one weight per chain.
pub fn reverse_ais_from_weights<L, S>(
    ladder: &L,
    log_z0: &LogZEstimate,
    initial: &[f64],
    population: Population<S>,
    start_steps: u64,
) -> ebm_core::Result<AisRun<S>>
where
    L: Ladder + DescribeLadder,
    S: ebm_core::Chains,
{
    let n = population.n_chains();
    if population.resamplings() > 0 || initial.len() != n || start_steps > population.steps() {
        return Err(Error::InvalidParameter {
            name: "initial".into(),
            reason: format!(
                "expected a never-resampled population and the initial weights of its {n} \
                 chains (got {} resamplings and {} weights)",
                population.resamplings(),
                initial.len()
            ),
        });
    }
    let base = crate::population::carried_ratio(0.0, 0.0, LogMeanExp::of(initial));
    let last = (ladder.n_rungs() > 1).then(|| population.log_ratio());
    Ok(reverse_run(
        ladder,
        None,
        log_z0,
        (base, last),
        population,
        (start_steps, 0),
    ))
}

/// The result of a reverse run: the estimate from rung 0's `log_z0` and the log ratios at the
/// start (`base`) and after the last transition (`last`, `None` for a ladder of one rung).
fn reverse_run<L, S>(
    ladder: &L,
    resample_below_ess: Option<f64>,
    log_z0: &LogZEstimate,
    (base, last): (LogMeanExp, Option<LogMeanExp>),
    population: Population<S>,
    (steps0, resamplings0): (u64, u64),
) -> AisRun<S>
where
    L: Ladder + DescribeLadder,
    S: ebm_core::Chains,
{
    let log_ratio = last.map_or(0.0, |r| r.log_mean - base.log_mean);
    let estimate = ais_estimate(
        log_z0.log_z - log_ratio,
        log_z0.std_err * log_z0.std_err,
        &population,
        population.steps() - steps0,
        Method::Ais {
            direction: Direction::Reverse,
            ladder: Reversed(ladder).kind(),
            n_rungs: ladder.n_rungs(),
            resample_below_ess,
            resamplings: population.resamplings() - resamplings0,
        },
    );
    AisRun {
        estimate,
        profile: Vec::new(),
        population,
    }
}

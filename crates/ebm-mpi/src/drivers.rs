//! Sharded runs: every rank runs its own chains, rank 0 gathers the whole run.

use ebm_core::{ChainState, Chains, EnergyModel, Error, Kernel, Par, Result, RngStreams};
use ebm_estimators::{
    AisRun, Annealer, DescribeLadder, LogZEstimate, Population, Reversed, Start, ais_from_weights,
    reverse_ais_from_weights,
};
use ebm_samplers::run;
use ebm_samplers::tempering::Ladder;
use ebm_samplers::tempering::{Exchange, ParallelTempering, PtState};

use crate::{Collective, ShardChains, chain_range};

/// Sends each rank's batch of chains to rank 0, which returns them joined in rank order
/// (shaped like `like`); the other ranks return `None`.
pub fn gather_chains<C: Collective + ?Sized, S: ShardChains>(
    c: &C,
    local: &S,
    like: &S,
) -> Option<S> {
    let mut message = vec![local.n_chains() as u64];
    message.extend(local.pack());
    let parts = c.gather(&message)?;
    let parts: Vec<S> = parts
        .iter()
        .map(|m| S::unpack(like, m[0] as usize, &m[1..]))
        .collect();
    Some(S::concat(like, &parts))
}

/// `steps` steps of `kernel` on the chains of `init` with streams from `seed`, sharded over the
/// ranks of `c`: rank `r` runs the chains [`chain_range`]`(n, size, r)` of the `n` in `init`.
/// Rank 0 returns every chain after the run; the other ranks return `None`.
///
/// The chains equal bit for bit those of the one-process run
/// `run(model, kernel, beta, &mut ChainState::new(init, seed), steps, par, ())`, for any
/// number of ranks and threads: each chain keeps its own stream, and a shard holds whole
/// blocks of [`ebm_core::CHAIN_CHUNK`] chains, the unit in which kernels compute.
///
/// Every rank must pass the same `model`, `kernel`, `beta`, `init`, `seed` and `steps`.
///
/// # Errors
/// An error of the kernel's run on this rank's shard (then the ranks no longer agree on the
/// gathers to come: end the program).
pub fn sample<C, M, K>(
    c: &C,
    model: &M,
    kernel: &K,
    beta: f64,
    init: &M::State,
    seed: u64,
    steps: u64,
    par: Par,
) -> Result<Option<M::State>>
where
    C: Collective + ?Sized,
    M: EnergyModel,
    M::State: ShardChains,
    K: Kernel<M>,
{
    let range = chain_range(init.n_chains(), c.size(), c.rank());
    let mut state = ChainState {
        chains: init.select(range.clone()),
        rngs: RngStreams::select(seed, range),
        steps: 0,
    };
    run(model, kernel, beta, &mut state, steps, par, ())?;
    Ok(gather_chains(c, &state.chains, init))
}

/// What a sharded PT run gathers on rank 0.
#[derive(Clone, Debug, PartialEq)]
pub struct PtOutcome<S> {
    /// The chains of every rung, rung `k` at index `k` (the last rung is the target).
    pub rungs: Vec<S>,
    /// `replica[k][i]`: the replica now at rung `k` of system `i` (as in [`PtState`]).
    pub replica: Vec<Vec<u32>>,
    /// Rounds run.
    pub rounds: u64,
    /// Round trips completed, summed over systems.
    pub round_trips: u64,
    /// Exchanges proposed, per pair, summed over rounds and systems.
    pub proposed: Vec<u64>,
    /// Exchanges accepted, per pair.
    pub accepted: Vec<u64>,
    /// Sum of \\(\min(1, \alpha)\\) over proposals, per pair: each rank's sum, added in rank
    /// order. The one number not bit-identical to the one-process run, whose sum runs over all
    /// systems in one order: it agrees to round-off.
    pub acceptance_probability_sum: Vec<f64>,
}

/// `rounds` rounds of `pt` on `ladder` from the chains `init[k]` of every rung, with streams
/// from `seed`, sharded over the ranks of `c` by system: rank `r` runs systems
/// [`chain_range`]`(n, size, r)` on every rung ([`PtState::for_systems`]). Exchanges pair the
/// chains of one system, so no state crosses ranks during the run; rank 0 gathers the chains,
/// replica labels and exchange counts at the end and returns them.
///
/// Chains, replica labels, proposals, acceptances and round trips equal bit for bit those of
/// the one-process run `pt.step(ladder, &mut PtState::new(init, seed)?, par)` repeated
/// `rounds` times, for any number of ranks; the summed acceptance probabilities agree to
/// round-off ([`PtOutcome::acceptance_probability_sum`]).
///
/// Sharding by system divides the chains, not the ladder: each rank holds every rung of its
/// systems. It scales a run with many chains per rung; a ladder too long for one process
/// needs rungs sharded across ranks, which this function does not do.
///
/// # Errors
/// [`ebm_core::Error::InvalidParameter`] for no rungs, [`ebm_core::Error::ShapeMismatch`]
/// for rungs of different sizes (the same on every rank).
pub fn parallel_tempering<C, L, K, B>(
    c: &C,
    pt: &ParallelTempering<K, B>,
    ladder: &L,
    init: &[L::State],
    seed: u64,
    rounds: u64,
    par: Par,
) -> Result<Option<PtOutcome<L::State>>>
where
    C: Collective + ?Sized,
    L: Exchange,
    L::State: ShardChains,
    K: Kernel<L::RungModel>,
    B: Kernel<L::RungModel>,
{
    let total = init.first().map_or(0, Chains::n_chains);
    let range = chain_range(total, c.size(), c.rank());
    let rungs = init.iter().map(|x| x.select(range.clone())).collect();
    let mut state = PtState::for_systems(rungs, seed, total, range.start)?;
    let pairs = init.len().saturating_sub(1);
    let mut proposed = vec![0u64; pairs];
    let mut accepted = vec![0u64; pairs];
    let mut probability = vec![0.0f64; pairs];
    // A rank with no systems (more ranks than blocks of chains) has nothing to run.
    let rounds_here = if range.is_empty() { 0 } else { rounds };
    for _ in 0..rounds_here {
        let info = pt.step(ladder, &mut state, par);
        for k in 0..pairs {
            proposed[k] += info.proposed[k];
            accepted[k] += info.accepted[k];
            probability[k] += info.acceptance_probability_sum[k];
        }
    }
    // One message per rung of chains, then the labels and counts of this shard.
    let mut gathered = Vec::with_capacity(init.len());
    for (x, like) in state.rungs().iter().zip(init) {
        gathered.push(gather_chains(c, x, like));
    }
    let mut counts: Vec<u64> = state
        .replica
        .iter()
        .flat_map(|r| r.iter().map(|&l| u64::from(l)))
        .collect();
    counts.push(state.round_trips);
    counts.extend(&proposed);
    counts.extend(&accepted);
    counts.extend(probability.iter().map(|p| p.to_bits()));
    let Some(parts) = c.gather(&counts) else {
        return Ok(None);
    };
    let k = init.len();
    let mut outcome = PtOutcome {
        rungs: gathered.into_iter().map(|g| g.expect("rank 0")).collect(),
        replica: vec![Vec::with_capacity(total); k],
        rounds,
        round_trips: 0,
        proposed: vec![0; pairs],
        accepted: vec![0; pairs],
        acceptance_probability_sum: vec![0.0; pairs],
    };
    for m in &parts {
        let n = (m.len() - 1 - 3 * pairs) / k.max(1);
        for (r, labels) in outcome.replica.iter_mut().enumerate() {
            labels.extend(m[r * n..(r + 1) * n].iter().map(|&l| l as u32));
        }
        let rest = &m[k * n..];
        outcome.round_trips += rest[0];
        for p in 0..pairs {
            outcome.proposed[p] += rest[1 + p];
            outcome.accepted[p] += rest[1 + pairs + p];
            outcome.acceptance_probability_sum[p] += f64::from_bits(rest[1 + 2 * pairs + p]);
        }
    }
    Ok(Some(outcome))
}

/// Forward annealed importance sampling ([`ebm_estimators::ais`]) along `ladder` from
/// `start`, sharded over the ranks of `c` by chain: rank `r` anneals the chains
/// [`chain_range`]`(n, size, r)` of the start's `n` with their own streams
/// ([`shard_population`], then [`ais_on_shard`]); rank 0 gathers weights, chains and streams
/// and computes the estimate ([`ais_from_weights`]). The run (estimate, error bar, warnings,
/// profile of \\(\log Z_k\\), final population) equals bit for bit that of `ais(annealer,
/// ladder, start.clone(), par)` in one process, for any number of ranks.
///
/// Every rank must pass the same `start` (drawn from the same seed). Communication: once, at
/// the end, the chains' weights at every rung (8 bytes × chains × rungs), their final states
/// and their streams.
///
/// # Errors
/// [`Error::InvalidParameter`] for an annealer that resamples (resampling draws ancestors
/// across all chains, which shards cannot do) or a start that was resampled; errors of
/// [`ais_from_weights`] on rank 0.
pub fn ais<C, L, A, S>(
    c: &C,
    annealer: &A,
    ladder: &L,
    start: &Start<S>,
    par: Par,
) -> Result<Option<AisRun<S>>>
where
    C: Collective + ?Sized,
    L: Ladder + DescribeLadder,
    L::Model: EnergyModel<State = S>,
    A: Annealer<L::Model>,
    S: ShardChains,
{
    let mut local = shard_population(c, &start.population)?;
    ais_on_shard(c, annealer, ladder, &mut local, start.log_z.clone(), par)
}

/// This rank's chains of a never-resampled population (the chains [`chain_range`]`(n, size,
/// rank)` of its `n`, with their weights and streams), for [`ais_on_shard`].
///
/// # Errors
/// [`Error::InvalidParameter`] if `whole` was resampled.
pub fn shard_population<C, S>(c: &C, whole: &Population<S>) -> Result<Population<S>>
where
    C: Collective + ?Sized,
    S: ShardChains,
{
    let range = chain_range(whole.n_chains(), c.size(), c.rank());
    whole.with_chains(
        whole.chains.select(range.clone()),
        whole.log_weights[range.clone()].to_vec(),
        whole.rngs.subset(range),
        whole.steps(),
    )
}

/// One stretch of a sharded forward AIS run: every rank anneals its shard `local` (from
/// [`shard_population`], or left by the previous stretch) along `ladder`, then rank 0 gathers
/// the weights, chains and streams of every shard and returns the run of the whole population
/// from `log_z0` (the other ranks return `None` and may pass any `log_z0`). `local` is left
/// annealed, so a long path can be walked stretch by stretch (as `ebm loglik ais` does, to
/// hold only part of the path's models at once), each stretch equal bit for bit to the same
/// stretch of [`ebm_estimators::ais`] on the whole population.
///
/// # Errors
/// As [`ais`].
pub fn ais_on_shard<C, L, A, S>(
    c: &C,
    annealer: &A,
    ladder: &L,
    local: &mut Population<S>,
    log_z0: LogZEstimate,
    par: Par,
) -> Result<Option<AisRun<S>>>
where
    C: Collective + ?Sized,
    L: Ladder + DescribeLadder,
    L::Model: EnergyModel<State = S>,
    A: Annealer<L::Model>,
    S: ShardChains,
{
    let Some(g) = anneal_and_gather(c, annealer, ladder, local, true, par)? else {
        return Ok(None);
    };
    let (initial, after_rung) = g.weights.split_first().expect("the start's weights");
    ais_from_weights(
        ladder,
        log_z0,
        initial,
        after_rung,
        g.population,
        g.start_steps,
    )
    .map(Some)
}

/// Reverse annealed importance sampling ([`ebm_estimators::reverse_ais`]) from `target`
/// (draws of the last rung of `ladder`) down to rung 0, whose exact \\(\log Z_0\\) is
/// `log_z0`, sharded over the ranks of `c` by chain: rank `r` anneals the chains
/// [`chain_range`]`(n, size, r)` of the `n` with their own streams ([`shard_population`],
/// then [`reverse_ais_on_shard`]); rank 0 gathers the weights, chains and streams and computes
/// the estimate ([`reverse_ais_from_weights`]). The run (estimate, error bar, warnings, final
/// population) equals bit for bit that of `reverse_ais(annealer, ladder, target.clone(),
/// log_z0, par)` in one process, for any number of ranks.
///
/// # Errors
/// As [`ais`].
pub fn reverse_ais<C, L, A, S>(
    c: &C,
    annealer: &A,
    ladder: &L,
    target: &Population<S>,
    log_z0: &LogZEstimate,
    par: Par,
) -> Result<Option<AisRun<S>>>
where
    C: Collective + ?Sized,
    L: Ladder + DescribeLadder,
    L::Model: EnergyModel<State = S>,
    A: Annealer<L::Model>,
    S: ShardChains,
{
    let mut local = shard_population(c, target)?;
    reverse_ais_on_shard(c, annealer, ladder, &mut local, log_z0, par)
}

/// One stretch of a sharded reverse AIS run, as [`ais_on_shard`] is of a forward one: every
/// rank anneals its shard `local` down `ladder` (from its last rung to rung 0), then rank 0
/// returns the run of the whole population (the other ranks `None`; they may pass any
/// `log_z0`).
///
/// # Errors
/// As [`ais`].
pub fn reverse_ais_on_shard<C, L, A, S>(
    c: &C,
    annealer: &A,
    ladder: &L,
    local: &mut Population<S>,
    log_z0: &LogZEstimate,
    par: Par,
) -> Result<Option<AisRun<S>>>
where
    C: Collective + ?Sized,
    L: Ladder + DescribeLadder,
    L::Model: EnergyModel<State = S>,
    A: Annealer<L::Model>,
    S: ShardChains,
{
    let reversed = Reversed(ladder);
    let Some(g) = anneal_and_gather(c, annealer, &reversed, local, false, par)? else {
        return Ok(None);
    };
    reverse_ais_from_weights(ladder, log_z0, &g.weights[0], g.population, g.start_steps).map(Some)
}

/// What rank 0 gathers from the shards of an annealing run.
struct Gathered<S> {
    /// The weights of all chains at the start, then after every rung (or, without
    /// `every_rung`, nothing more: the final weights are the population's).
    weights: Vec<Vec<f64>>,
    /// The joined final population.
    population: Population<S>,
    /// Its step count at the start.
    start_steps: u64,
}

/// Anneals this rank's shard `local` along `ladder`, then gathers on rank 0 the weights at the
/// start (and after every rung with `every_rung`), the chains and their streams, joined in
/// rank order.
fn anneal_and_gather<C, L, A, S>(
    c: &C,
    annealer: &A,
    ladder: &L,
    local: &mut Population<S>,
    every_rung: bool,
    par: Par,
) -> Result<Option<Gathered<S>>>
where
    C: Collective + ?Sized,
    L: Ladder,
    L::Model: EnergyModel<State = S>,
    A: Annealer<L::Model>,
    S: ShardChains,
{
    if annealer.resample_below_ess().is_some() || local.resamplings() > 0 {
        return Err(Error::InvalidParameter {
            name: "annealer".into(),
            reason: "sharded AIS cannot resample: resampling draws ancestors across all \
                     chains; run AIS with resampling in one process"
                .into(),
        });
    }
    let len = local.n_chains();
    let start_steps = local.steps();
    let mut weights = vec![local.log_weights.clone()];
    for k in 1..ladder.n_rungs() {
        if len > 0 {
            annealer.transition(ladder.rung(k - 1), ladder.rung(k), local, par);
        }
        if every_rung {
            weights.push(local.log_weights.clone());
        }
    }
    // Message: chains, steps, the weights kept, the final weights, the chains' states, their
    // streams.
    let streams = serde_json::to_vec(&local.rngs).expect("streams serialise");
    let mut message = vec![len as u64, local.steps()];
    let kept = weights.iter().flatten().chain(&local.log_weights);
    message.extend(kept.map(|w| w.to_bits()));
    message.extend(local.chains.pack());
    message.push(streams.len() as u64);
    message.extend(streams.iter().map(|&b| u64::from(b)));
    let Some(parts) = c.gather(&message) else {
        return Ok(None);
    };
    // Rank 0's shard is the template of the whole: same shape, seed and resampling stream.
    let like = &*local;
    let mut weights = vec![Vec::new(); weights.len()];
    let mut last = Vec::new();
    let (mut chains, mut rngs) = (Vec::new(), Vec::new());
    let mut steps = start_steps;
    for m in &parts {
        let (len, part_steps) = (m[0] as usize, m[1]);
        if len == 0 {
            continue;
        }
        steps = part_steps;
        let mut at = 2;
        for w in weights.iter_mut().chain(std::iter::once(&mut last)) {
            w.extend(m[at..at + len].iter().map(|&b| f64::from_bits(b)));
            at += len;
        }
        let packed = like.chains.width() * len;
        chains.push(S::unpack(&like.chains, len, &m[at..at + packed]));
        at += packed;
        let bytes: Vec<u8> = m[at + 1..at + 1 + m[at] as usize]
            .iter()
            .map(|&b| b as u8)
            .collect();
        rngs.push(
            serde_json::from_slice(&bytes).map_err(|e| Error::InvalidParameter {
                name: "streams".into(),
                reason: format!("a rank sent streams that do not parse: {e}"),
            })?,
        );
    }
    let population = like.with_chains(
        S::concat(&like.chains, &chains),
        last,
        RngStreams::join(like.rngs.seed(), &rngs),
        steps,
    )?;
    Ok(Some(Gathered {
        weights,
        population,
        start_steps,
    }))
}

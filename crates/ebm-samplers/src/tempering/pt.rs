use super::ladder::{Exchange, KeptProducts, SplitExchange};
use ebm_core::{CHAIN_CHUNK, Chains, Error, Kernel, Par, RngStreams, Scalar};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Which neighbouring pairs \\((k, k+1)\\) are proposed for exchange after each exploration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SwapSchedule {
    /// Stochastic even/odd (SEO): each round, independently for each system of replicas, all
    /// even pairs or all odd pairs with probability 1/2 each. Reversible.
    StochasticEvenOdd,
    /// Deterministic even/odd (DEO, non-reversible): even pairs on even rounds, odd pairs on odd
    /// rounds (Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*). Each half
    /// leaves the product target invariant; their alternation is not reversible and moves replicas
    /// ballistically.
    DeterministicEvenOdd,
    /// One uniformly random adjacent pair per round and system. Reversible.
    RandomPair,
    /// Every adjacent pair, in sequence from the bottom to the top, every round: the schedule of
    /// parallel trajectory tempering (Béreux et al., *Fast training and sampling of RBMs*,
    /// "sequential neighbour swaps, bottom to top"). Each exchange sees the states left by the one
    /// below it, so a fresh configuration injected at rung 0 (an exact refresh) can climb several
    /// rungs in one round. Each exchange leaves the product target invariant; the sweep is not
    /// reversible.
    Sweep,
    /// Lifted PT (Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*, with the
    /// corrected involution): each system carries one lifted replica at rung \\(\eta\\) with a
    /// direction \\(\varepsilon = \pm1\\) ([`PtState::lifted`]); each round proposes the single
    /// exchange \\((\eta, \eta + \varepsilon)\\). On acceptance the lifted replica moves and keeps
    /// its direction (reversing it when it lands on an end); on rejection the direction reverses at
    /// interior rungs and is kept at the ends. Leaves \\(\tilde P \times \mathrm{Unif}(\mathcal
    /// X)\\) invariant, non-reversibly.
    Lifted,
}

impl SwapSchedule {
    /// Every schedule, for runs and tests that compare them all.
    pub const ALL: [SwapSchedule; 5] = [
        SwapSchedule::StochasticEvenOdd,
        SwapSchedule::DeterministicEvenOdd,
        SwapSchedule::RandomPair,
        SwapSchedule::Sweep,
        SwapSchedule::Lifted,
    ];
}

/// Parallel tempering: explore every rung with `kernel`, then propose exchanges between
/// neighbouring rungs according to `schedule`, each accepted with the exact Metropolis ratio of
/// the product target ([`Exchange::log_accept`]).
///
/// The chains of a [`PtState`] form `n` independent systems of replicas: chain `i` of every rung
/// belongs to system `i`, and exchanges happen within a system.
///
/// Rung 0 can be explored by a different kernel `B` ([`ParallelTempering::with_rung0_kernel`]),
/// typically [`crate::ExactRefresh`] when the ladder's models are [`ebm_core::Tractable`]: every
/// round then injects independent exact draws at the bottom, as PTT does with its exactly sampled
/// first model (the PTT paper Béreux et al., *Fast training and sampling of RBMs*). For RBM ladders
/// whose rung 0 is at \\(\beta = 0\\) or is an independent-site reference (zero weights), one Gibbs
/// sweep at rung 0 already is an exact draw, because neither conditional depends on the other layer
/// there.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParallelTempering<K, B = K> {
    /// The kernel that explores each rung at its own inverse temperature.
    pub kernel: K,
    /// The swap schedule.
    pub schedule: SwapSchedule,
    /// The kernel used at rung 0 instead of `kernel`, if any.
    pub rung0_kernel: Option<B>,
}

/// The state of a PT run: the chains of every rung, their RNG streams, which replica sits where,
/// and the round counter. Serialisable: a checkpoint resumes exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtState<S> {
    /// `rungs[k]` holds the chains of rung `k` (chain `i` belongs to system `i`). Private, so
    /// that every write goes through [`PtState::rungs_mut`], which drops the kept products:
    /// they stay valid by construction.
    rungs: Vec<S>,
    /// Streams of all chains: rung `k`, chain `i` uses stream `k * n_chains + i`. The swap
    /// uniform of pair `(k, k+1)` comes from the lower rung's stream; the schedule's per-system
    /// choices from rung 0's.
    pub rngs: RngStreams,
    /// `replica[k][i]`: the index of the replica (its starting rung) now at rung `k` of system `i`.
    pub replica: Vec<Vec<u32>>,
    /// `last_end[i][r]`: which end of the ladder replica `r` of system `i` visited last
    /// (`None` before it reached either; `Some(false)` rung 0, `Some(true)` the last rung).
    pub last_end: Vec<Vec<Option<bool>>>,
    /// Round trips completed so far, summed over systems and replicas (see [`PtInfo`]).
    pub round_trips: u64,
    /// Lifted PT only: per system, the rung \\(\eta\\) of the lifted replica and its direction
    /// (`true` = towards the last rung). Starts at rung 0 moving up.
    pub lifted: Vec<(u32, bool)>,
    /// Number of rounds done.
    pub round: u64,
    /// The rung of `rungs[0]`: 0 for a state holding the whole ladder, else the first rung
    /// of the block this process holds ([`PtState::for_rungs`]).
    #[serde(default)]
    pub first_rung: usize,
    /// Per rung, the products the last exchange kept for the next exploration
    /// ([`Exchange::log_accept_keeping`]), and the exchange's scratch vectors. Not saved: a
    /// resumed state recomputes them, with the same results; not compared by `==`.
    #[serde(skip, default = "Kept::default")]
    kept: Kept<S>,
}

/// The kept products of a [`PtState`], and the per-system vectors of its exchanges (reused, so
/// a round allocates none): a cache, so clones start without it and every two caches compare
/// equal.
#[derive(Debug)]
struct Kept<S> {
    /// Per rung held, the products the last exchange kept.
    products: Vec<KeptProducts<S>>,
    /// Per system, the pair (or pair parity) it proposes this round.
    choice: Vec<usize>,
    /// Per system, the log acceptance of the pair at hand.
    log_alpha: Vec<f64>,
    /// Per system, whether the pair at hand is proposed, and accepted.
    proposed: Vec<bool>,
    accept: Vec<bool>,
}

impl<S> Default for Kept<S> {
    fn default() -> Self {
        Self {
            products: Vec::new(),
            choice: Vec::new(),
            log_alpha: Vec::new(),
            proposed: Vec::new(),
            accept: Vec::new(),
        }
    }
}

impl<S> Clone for Kept<S> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<S> PartialEq for Kept<S> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<S: Chains> PtState<S> {
    /// A state from the initial chains of every rung (all with the same number of chains), with
    /// streams derived from `seed` and replica `k` at rung `k`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no rungs; [`Error::ShapeMismatch`] if rungs differ in
    /// their number of chains.
    pub fn new(rungs: Vec<S>, seed: u64) -> ebm_core::Result<Self> {
        let n = rungs.first().map_or(0, |r| r.n_chains());
        Self::for_systems(rungs, seed, n, 0)
    }

    /// The state of systems `first..first + n` of a run of `total` systems, where `n` is the
    /// number of chains per rung in `rungs`: the state [`PtState::new`] would give those
    /// systems in the whole run (rung `k`, system `i` draws from stream `k * total + i`).
    /// PT acts on every system separately (its chains, streams, replica labels and lifting
    /// variables; the DEO parity depends only on the round), so running the shards of a run
    /// separately, with their chains on whole [`ebm_core::CHAIN_CHUNK`] blocks, gives the
    /// whole run's states bit for bit: the guarantee behind sharding over processes.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no rungs or systems beyond `total`;
    /// [`Error::ShapeMismatch`] if rungs differ in their number of chains.
    pub fn for_systems(
        rungs: Vec<S>,
        seed: u64,
        total: usize,
        first: usize,
    ) -> ebm_core::Result<Self> {
        let k = rungs.len();
        Self::build(rungs, seed, (total, first), (0, k))
    }

    /// The state of rungs `first..first + rungs.len()` of a ladder of `n_rungs` rungs, every
    /// system on each: the block of rungs one process holds in a run sharded by rung
    /// (rung `k`, system `i` draws from stream `k * n + i`, as in [`PtState::new`]), advanced
    /// by [`ParallelTempering::step_linked`]. The replica labels of the block start at its
    /// rungs; the last-visited ends (`last_end`) and lifting variables (`lifted`) are those of
    /// the whole run, and a block keeps them up to date for the replicas it holds and the
    /// lifted replicas on its rungs.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no rungs or a block beyond `n_rungs`;
    /// [`Error::ShapeMismatch`] if rungs differ in their number of chains.
    pub fn for_rungs(
        rungs: Vec<S>,
        seed: u64,
        first: usize,
        n_rungs: usize,
    ) -> ebm_core::Result<Self> {
        if first
            .checked_add(rungs.len())
            .is_none_or(|end| end > n_rungs)
        {
            return Err(Error::InvalidParameter {
                name: "rungs".into(),
                reason: format!(
                    "rungs {first}..{first}+{} lie beyond the ladder's {n_rungs}",
                    rungs.len()
                ),
            });
        }
        let n = rungs.first().map_or(0, |r| r.n_chains());
        Self::build(rungs, seed, (n, 0), (first, n_rungs))
    }

    /// The block of rungs `rungs` of this state (which holds every rung): what
    /// [`PtState::for_rungs`] gives for a fresh state, for a state at any point of a run (e.g.
    /// after [`super::StackedTempering::init`]): the chains, streams and replica labels of
    /// those rungs; the last-visited ends, lifting variables, round trips and round count of
    /// the whole run.
    ///
    /// # Panics
    /// If the state does not hold every rung from 0, or `rungs` is empty or lies beyond them.
    pub fn block(&self, rungs: Range<usize>) -> Self
    where
        S: Clone,
    {
        assert!(
            self.first_rung == 0 && !rungs.is_empty() && rungs.end <= self.rungs.len(),
            "block {rungs:?} of a state of {} rungs from rung {}",
            self.rungs.len(),
            self.first_rung
        );
        let n = self.n_chains();
        Self {
            rungs: self.rungs[rungs.clone()].to_vec(),
            rngs: self.rngs.subset(rungs.start * n..rungs.end * n),
            replica: self.replica[rungs.clone()].to_vec(),
            last_end: self.last_end.clone(),
            round_trips: self.round_trips,
            lifted: self.lifted.clone(),
            round: self.round,
            first_rung: rungs.start,
            kept: Kept::default(),
        }
    }

    /// Systems `first..first + n` of `total` on rungs `rung..rung + rungs.len()` of `k`.
    fn build(
        rungs: Vec<S>,
        seed: u64,
        (total, first): (usize, usize),
        (rung, k): (usize, usize),
    ) -> ebm_core::Result<Self> {
        let n = rungs
            .first()
            .map(|r| r.n_chains())
            .ok_or_else(|| Error::InvalidParameter {
                name: "rungs".into(),
                reason: "parallel tempering needs at least one rung".into(),
            })?;
        for r in &rungs {
            Error::check_len("chains per rung", n, r.n_chains())?;
        }
        if first.checked_add(n).is_none_or(|end| end > total) {
            return Err(Error::InvalidParameter {
                name: "systems".into(),
                reason: format!("systems {first}..{first}+{n} lie beyond the run's {total}"),
            });
        }
        let held = rung..rung + rungs.len();
        let streams = held
            .clone()
            .flat_map(|r| (first..first + n).map(move |i| r * total + i));
        Ok(Self {
            replica: held.map(|r| vec![r as u32; n]).collect(),
            last_end: vec![
                (0..k)
                    .map(|r| match r {
                        0 => Some(false),
                        r if r == k - 1 => Some(true),
                        _ => None,
                    })
                    .collect();
                n
            ],
            round_trips: 0,
            lifted: vec![(0, true); n],
            rngs: RngStreams::select(seed, streams),
            rungs,
            round: 0,
            first_rung: rung,
            kept: Kept::default(),
        })
    }

    /// Number of chains (systems of replicas).
    pub fn n_chains(&self) -> usize {
        self.rungs[0].n_chains()
    }

    /// The chains of every rung held: `rungs()[k]` those of rung `first_rung + k` (chain `i`
    /// belongs to system `i`).
    pub fn rungs(&self) -> &[S] {
        &self.rungs
    }

    /// The chains of every rung, to write: drops the products the last exchange kept
    /// ([`PtState::drop_kept_products`]), which belong to the chains as they were.
    ///
    /// # Invariant
    /// The kept products of a state ([`KeptProducts`]) are valid by construction: the last
    /// exchange computed them from the rungs' current configurations, and only the PT loop,
    /// which moves them with the chains it swaps and drops them when it changes a rung in any
    /// other way (an exploration, a swap across a block boundary), writes the rungs besides
    /// this method, which drops them. So the next exploration reuses them without checking
    /// them against the chains, and draws exactly what it would draw with every product
    /// recomputed. What the state cannot see is a change of the ladder's models: after one,
    /// call [`PtState::drop_kept_products`].
    pub fn rungs_mut(&mut self) -> &mut [S] {
        self.drop_kept_products();
        &mut self.rungs
    }

    /// The chains of every rung with their streams (rung `k` with streams `k * n..(k + 1) *
    /// n` of [`PtState::rngs`], `n` chains per rung), to write (e.g. to draw initial states
    /// by a few sweeps per rung): drops the kept products, as [`PtState::rungs_mut`].
    pub fn rungs_with_streams_mut(
        &mut self,
    ) -> impl Iterator<Item = (&mut S, &mut [ebm_core::ChainRng])> {
        self.drop_kept_products();
        let n = self.n_chains().max(1);
        self.rungs
            .iter_mut()
            .zip(self.rngs.as_mut_slice().chunks_mut(n))
    }

    /// The chains of every rung, by value (the state is consumed).
    pub fn into_rungs(self) -> Vec<S> {
        self.rungs
    }

    /// Drops the products the last exchange kept for the next exploration
    /// ([`KeptProducts`]): they were computed under the ladder's models, so a caller that
    /// goes on with other models (e.g. a training run's negative phase after a parameter
    /// update) must drop them first, or the next exploration draws from the old models'
    /// conditionals. A cloned or deserialised state starts without them.
    ///
    /// The products are marked stale, not freed: their buffers are rewritten by the next
    /// exchange (a training run drops them before every update, and allocating tens of
    /// megabytes each time cost about 7 % of a tempered update in page faults and zeroing).
    pub fn drop_kept_products(&mut self) {
        for kept in &mut self.kept.products {
            kept.valid = false;
        }
    }

    /// Systems `range` of a state holding every rung, on every rung, with their streams,
    /// replica labels, last-visited ends and lifting variables: the shard of the run one
    /// process holds when systems are divided among processes (`select(x, range)` gives the
    /// chains `range` of a batch `x`). Every system evolves on its own (see
    /// [`PtState::for_systems`]), so the shards advanced separately, whole
    /// [`CHAIN_CHUNK`] blocks each, and joined by [`PtState::join_systems`] give the state of
    /// the whole run bit for bit. The first shard (`range.start == 0`) carries the state's
    /// [`PtState::round_trips`], the others start at 0 (the join adds them).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a state holding a block of rungs
    /// ([`PtState::for_rungs`]) or a range beyond the systems.
    pub fn systems(
        &self,
        range: Range<usize>,
        select: impl Fn(&S, Range<usize>) -> S,
    ) -> ebm_core::Result<Self> {
        let (n, k) = (self.n_chains(), self.rungs.len());
        if self.first_rung != 0 || k != self.last_end.first().map_or(k, Vec::len) {
            return Err(Error::InvalidParameter {
                name: "PtState::systems".into(),
                reason: "needs a state holding every rung".into(),
            });
        }
        if range.start > range.end || range.end > n || self.rngs.len() != n * k {
            return Err(Error::InvalidParameter {
                name: "PtState::systems".into(),
                reason: format!(
                    "systems {range:?} of a state of {n} systems on {k} rungs ({} streams)",
                    self.rngs.len()
                ),
            });
        }
        let streams: Vec<RngStreams> = (0..k)
            .map(|r| self.rngs.subset(r * n + range.start..r * n + range.end))
            .collect();
        Ok(Self {
            rungs: self
                .rungs
                .iter()
                .map(|x| select(x, range.clone()))
                .collect(),
            rngs: RngStreams::join(self.rngs.seed(), &streams),
            replica: self
                .replica
                .iter()
                .map(|r| r[range.clone()].to_vec())
                .collect(),
            last_end: self.last_end[range.clone()].to_vec(),
            round_trips: if range.start == 0 {
                self.round_trips
            } else {
                0
            },
            lifted: self.lifted[range].to_vec(),
            round: self.round,
            first_rung: 0,
            kept: Kept::default(),
        })
    }

    /// The shards of [`PtState::systems`], in system order, joined into the whole run's
    /// state (`concat` joins batches of chains in order); the round trips are added.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no parts, or parts of other rung counts, rounds or
    /// seeds.
    pub fn join_systems(parts: Vec<Self>, concat: impl Fn(&[&S]) -> S) -> ebm_core::Result<Self> {
        let first = parts.first().ok_or_else(|| Error::InvalidParameter {
            name: "PtState::join_systems".into(),
            reason: "no shards to join".into(),
        })?;
        let (k, round, seed) = (first.rungs.len(), first.round, first.rngs.seed());
        if let Some(p) = parts
            .iter()
            .find(|p| (p.rungs.len(), p.round, p.rngs.seed(), p.first_rung) != (k, round, seed, 0))
        {
            return Err(Error::InvalidParameter {
                name: "PtState::join_systems".into(),
                reason: format!(
                    "shards of {k} rungs at round {round} (seed {seed}) cannot take one of {} \
                     rungs at round {} (seed {}, first rung {})",
                    p.rungs.len(),
                    p.round,
                    p.rngs.seed(),
                    p.first_rung
                ),
            });
        }
        let mut streams = Vec::with_capacity(k * parts.len());
        for r in 0..k {
            for p in &parts {
                let n = p.n_chains();
                streams.push(p.rngs.subset(r * n..(r + 1) * n));
            }
        }
        Ok(Self {
            rungs: (0..k)
                .map(|r| concat(&parts.iter().map(|p| &p.rungs[r]).collect::<Vec<_>>()))
                .collect(),
            rngs: RngStreams::join(seed, &streams),
            replica: (0..k)
                .map(|r| {
                    parts
                        .iter()
                        .flat_map(|p| p.replica[r].iter().copied())
                        .collect()
                })
                .collect(),
            last_end: parts
                .iter()
                .flat_map(|p| p.last_end.iter().cloned())
                .collect(),
            round_trips: parts.iter().map(|p| p.round_trips).sum(),
            lifted: parts
                .iter()
                .flat_map(|p| p.lifted.iter().copied())
                .collect(),
            round,
            first_rung: 0,
            kept: Kept::default(),
        })
    }
}

/// What one PT round did: per neighbouring pair \\((k, k+1)\\), how many exchanges were proposed
/// and accepted over all systems, and the sum of acceptance probabilities (a lower-variance
/// estimate of the acceptance rate); and the round trips completed.
///
/// A round trip is counted each time a replica reaches the target (last rung) having last visited
/// rung 0: once per rung 0 -> target -> rung 0 cycle (the first crossing of a replica counts too,
/// which does not change the long-run rate). The round-trip rate per system and round is \\(1/(2 +
/// 2\sum_k r_k/(1 - r_k))\\) for DEO and \\(1/(2K + 2\sum_k r_k/(1-r_k))\\) for SEO with \\(K\\)
/// pairs and rejection rates \\(r_k\\), when exploration refreshes each rung exactly (Kadan, Syed
/// and Wøien, *Lifted parallel tempering for training RBMs*); a test checks both.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtInfo {
    /// Round trips completed during this round, summed over systems.
    pub round_trips: u64,
    /// Exchanges proposed, per pair.
    pub proposed: Vec<u64>,
    /// Exchanges accepted, per pair.
    pub accepted: Vec<u64>,
    /// Sum over proposals of \\(\min(1, \alpha)\\), per pair.
    pub acceptance_probability_sum: Vec<f64>,
    /// The same sums per block of [`CHAIN_CHUNK`] systems: `[k][b]` sums the proposals of
    /// pair `k` by systems `b * CHAIN_CHUNK..(b + 1) * CHAIN_CHUNK` of the state, in system
    /// order. Blocks do not depend on how the systems are divided among processes
    /// ([`PtState::systems`]), so sums added block by block in block order are the same for
    /// any division (the tempered negative phase of `ebm-train` reports its swap acceptance
    /// this way).
    #[serde(default)]
    pub acceptance_probability_block_sums: Vec<Vec<f64>>,
}

/// A neighbour of a block of rungs ([`PtState::for_rungs`]): the process holding the rungs
/// just below the block, or just above it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The holder of the rungs below (towards rung 0).
    Below,
    /// The holder of the rungs above (towards the target).
    Above,
}

/// How [`ParallelTempering::step_linked`] reaches the processes holding the neighbouring
/// blocks of rungs: messages of `u64` words (values as `f64` bit patterns, so exact),
/// delivered in the order sent, and the swap of chosen chains of two boundary rungs. `S` is
/// what an exchange moves ([`SplitExchange::Part`]): a ladder's whole state, or one layer
/// of a stack's.
///
/// The round's messages alternate between two neighbours (the block above sends first), so
/// an implementation may block in [`RungLink::send`] until the message is received.
pub trait RungLink<S> {
    /// Sends `words` to the neighbour `to`.
    fn send(&mut self, to: Side, words: &[u64]);

    /// Receives the next message from the neighbour `from`.
    fn receive(&mut self, from: Side) -> Vec<u64>;

    /// Swaps chains `which` of `x` with the same chains of the neighbour `with`'s batch, which
    /// calls this with the same `which`.
    fn swap_chains(&mut self, with: Side, x: &mut S, which: &[usize]);
}

/// What a round needs across the boundaries of a block of rungs: the messages of its
/// [`RungLink`] and the per-state energies, moving parts and refreshes of a
/// [`SplitExchange`]. [`ParallelTempering::step`] runs the round on every rung with
/// [`Unlinked`], which has no boundary; [`ParallelTempering::step_linked`] on a block with
/// [`Linked`].
trait Boundary<L: Exchange> {
    /// [`RungLink::send`].
    fn send(&mut self, to: Side, words: &[u64]);

    /// [`RungLink::receive`].
    fn receive(&mut self, from: Side) -> Vec<u64>;

    /// [`SplitExchange::pair_energies`].
    fn pair_energies(&self, ladder: &L, k: usize, x: &L::State, upper: bool, out: &mut [f64]);

    /// [`SplitExchange::log_accept_from_energies`].
    fn log_accept_from_energies(
        &self,
        ladder: &L,
        k: usize,
        lo: &[f64],
        hi: &[f64],
        out: &mut [f64],
    );

    /// Swaps the moving parts ([`SplitExchange::part_mut`]) of chains `which` of `x` with the
    /// neighbour `with`.
    fn swap_parts(&mut self, ladder: &L, with: Side, k: usize, x: &mut L::State, which: &[usize]);

    /// [`SplitExchange::refresh`].
    fn refresh(
        &self,
        ladder: &L,
        k: usize,
        x: &mut L::State,
        upper: bool,
        rngs: &mut [ebm_core::ChainRng],
    );
}

/// The boundary of a state that holds every rung: there is none, so no method is called.
struct Unlinked;

impl<L: Exchange> Boundary<L> for Unlinked {
    fn send(&mut self, _: Side, _: &[u64]) {
        unreachable!("a state holding every rung has no neighbour")
    }

    fn receive(&mut self, _: Side) -> Vec<u64> {
        unreachable!("a state holding every rung has no neighbour")
    }

    fn pair_energies(&self, _: &L, _: usize, _: &L::State, _: bool, _: &mut [f64]) {
        unreachable!("a state holding every rung has no neighbour")
    }

    fn log_accept_from_energies(&self, _: &L, _: usize, _: &[f64], _: &[f64], _: &mut [f64]) {
        unreachable!("a state holding every rung has no neighbour")
    }

    fn swap_parts(&mut self, _: &L, _: Side, _: usize, _: &mut L::State, _: &[usize]) {
        unreachable!("a state holding every rung has no neighbour")
    }

    fn refresh(&self, _: &L, _: usize, _: &mut L::State, _: bool, _: &mut [ebm_core::ChainRng]) {
        unreachable!("a state holding every rung has no neighbour")
    }
}

/// The boundaries of a block of rungs: the neighbours reached through `link`, at `par`.
struct Linked<'a, Lk: ?Sized> {
    link: &'a mut Lk,
    par: Par,
}

impl<L, Lk> Boundary<L> for Linked<'_, Lk>
where
    L: SplitExchange,
    Lk: RungLink<L::Part> + ?Sized,
{
    fn send(&mut self, to: Side, words: &[u64]) {
        self.link.send(to, words);
    }

    fn receive(&mut self, from: Side) -> Vec<u64> {
        self.link.receive(from)
    }

    fn pair_energies(&self, ladder: &L, k: usize, x: &L::State, upper: bool, out: &mut [f64]) {
        ladder.pair_energies(k, x, upper, out, self.par);
    }

    fn log_accept_from_energies(
        &self,
        ladder: &L,
        k: usize,
        lo: &[f64],
        hi: &[f64],
        out: &mut [f64],
    ) {
        ladder.log_accept_from_energies(k, lo, hi, out);
    }

    fn swap_parts(&mut self, ladder: &L, with: Side, k: usize, x: &mut L::State, which: &[usize]) {
        let upper = with == Side::Below;
        self.link
            .swap_chains(with, ladder.part_mut(k, x, upper), which);
    }

    fn refresh(
        &self,
        ladder: &L,
        k: usize,
        x: &mut L::State,
        upper: bool,
        rngs: &mut [ebm_core::ChainRng],
    ) {
        ladder.refresh(k, x, upper, rngs, self.par);
    }
}

impl<K> ParallelTempering<K> {
    /// PT with the given exploration kernel (on every rung) and schedule.
    pub fn new(kernel: K, schedule: SwapSchedule) -> Self {
        Self {
            kernel,
            schedule,
            rung0_kernel: None,
        }
    }
}

impl<K, B> ParallelTempering<K, B> {
    /// The same PT with rung 0 explored by `rung0_kernel` (e.g. [`crate::ExactRefresh`]).
    pub fn with_rung0_kernel<B2>(self, rung0_kernel: B2) -> ParallelTempering<K, B2> {
        ParallelTempering {
            kernel: self.kernel,
            schedule: self.schedule,
            rung0_kernel: Some(rung0_kernel),
        }
    }

    /// One round: exploration of every rung, then the exchanges of the schedule. Under
    /// [`Par::Rayon`] the round runs on a worker of the current pool ([`Par::run`]) and the
    /// rungs explore at once; the result is the same for any [`Par`] and thread count.
    ///
    /// # Panics
    /// If the state does not have one batch per rung of `ladder`.
    pub fn step<L>(&self, ladder: &L, state: &mut PtState<L::State>, par: Par) -> PtInfo
    where
        L: Exchange,
        K: Kernel<L::RungModel>,
        B: Kernel<L::RungModel>,
    {
        assert_eq!(
            state.rungs.len(),
            ladder.n_exchange_rungs(),
            "PtState has {} rungs, the ladder {}",
            state.rungs.len(),
            ladder.n_exchange_rungs()
        );
        // On a worker of the pool: the serial work between the round's parallel loops runs
        // where the pool is ([`Par::run`]: same results, less time between the loops).
        par.run(|| self.round(ladder, state, &mut Unlinked, par))
    }

    /// One round on a block of rungs ([`PtState::for_rungs`]), the blocks below and above it
    /// held by other processes reached through `link`: the round [`ParallelTempering::step`]
    /// runs on the whole ladder, restricted to this block, with the same draws. On a state
    /// holding every rung `link` is never used, and this is [`ParallelTempering::step`].
    ///
    /// Every block explores its rungs and runs the exchanges of its own pairs, in the order of the
    /// one-process round (pairs bottom up). A pair \\((k, k+1)\\) across the boundary with the
    /// block above is decided by this block, which holds rung \\(k\\) and so the stream of its swap
    /// uniforms: the block above sends the energies of its states at the two rungs
    /// ([`SplitExchange::pair_energies`], \\(2n\\) numbers for \\(n\\) systems), this block
    /// computes \\(\log\alpha\\) with the one-process formula
    /// ([`SplitExchange::log_accept_from_energies`]), draws the uniforms, and sends up the
    /// decisions; then the two blocks swap the moving parts ([`SplitExchange::part_mut`]: whole
    /// chains, or a stack's exchanged layers) of the accepted exchanges only, with their replica
    /// labels and last-visited ends. An exchange that then refreshes both rungs
    /// ([`Exchange::refreshes`]) draws from rung \\(k\\)'s streams: this block lends them to the
    /// block above (four words per stream), which refreshes its state and returns them, and this
    /// block refreshes its own ([`SplitExchange::refresh`]). Such a refresh touches every chain of
    /// both rungs, so under schedules whose systems choose different pairs its pairs run bottom up
    /// across the blocks, as the sweep schedule's do. The schedule's choice per system (drawn from
    /// rung 0's streams by SEO and random-pair) travels up with the decisions; the lifted replica's
    /// position is known to the block holding it, which announces a proposal down its boundary. So
    /// every chain keeps its own stream, and the blocks together compute exactly the one-process
    /// round. The kept products ([`KeptProducts`]) of the two rungs of a boundary pair are dropped
    /// (they only save work).
    ///
    /// Each block returns the counts of the pairs it decides (zero for the others) and, if it
    /// holds the last rung, the round trips; the sums over blocks are the one-process
    /// [`PtInfo`].
    ///
    /// # Panics
    /// If the state holds rungs beyond the ladder.
    pub fn step_linked<L, Lk>(
        &self,
        ladder: &L,
        state: &mut PtState<L::State>,
        link: &mut Lk,
        par: Par,
    ) -> PtInfo
    where
        L: SplitExchange,
        K: Kernel<L::RungModel>,
        B: Kernel<L::RungModel>,
        Lk: RungLink<L::Part> + ?Sized,
    {
        self.round(ladder, state, &mut Linked { link, par }, par)
    }

    /// The round of [`ParallelTempering::step_linked`] on the rungs `state` holds, across the
    /// boundaries `link` ([`Unlinked`] when it holds every rung).
    fn round<L, Bd>(
        &self,
        ladder: &L,
        state: &mut PtState<L::State>,
        link: &mut Bd,
        par: Par,
    ) -> PtInfo
    where
        L: Exchange,
        K: Kernel<L::RungModel>,
        B: Kernel<L::RungModel>,
        Bd: Boundary<L>,
    {
        let n_rungs = ladder.n_exchange_rungs();
        let (a, held) = (state.first_rung, state.rungs.len());
        let b = a + held;
        assert!(
            held > 0 && b <= n_rungs,
            "PtState holds rungs {a}..{b}, the ladder has {n_rungs}"
        );
        let n = state.n_chains();
        let mut streams: Vec<&mut [ebm_core::ChainRng]> =
            state.rngs.as_mut_slice().chunks_mut(n.max(1)).collect();
        let Kept {
            products: kept,
            choice,
            log_alpha,
            proposed,
            accept,
        } = &mut state.kept;
        kept.resize_with(held, KeptProducts::default);
        // Every rung explores with its own chains and streams, so the rungs run at once: under
        // `Par::Rayon` as tasks of one parallel loop, whose chunks the pool balances across
        // rungs (one loop instead of one per rung and half-sweep, with no pool-wide wait in
        // between). The same draws as one rung after the other.
        let mut rungs: Vec<_> = state
            .rungs
            .iter_mut()
            .zip(streams.iter_mut())
            .zip(kept.iter_mut())
            .collect();
        ebm_core::for_each_item(par, &mut rungs, &|j, ((x, rngs), kept)| {
            let rung = ladder.explored(a + j);
            match (&self.rung0_kernel, a + j) {
                (Some(bottom), 0) => {
                    bottom.step(rung.model, rung.beta, x, rngs, par);
                }
                _ => {
                    explore(&self.kernel, rung, x, kept, rngs, par);
                }
            }
            kept.valid = false;
        });
        let n_pairs = n_rungs.saturating_sub(1);
        let mut info = PtInfo {
            round_trips: 0,
            proposed: vec![0; n_pairs],
            accepted: vec![0; n_pairs],
            acceptance_probability_sum: vec![0.0; n_pairs],
            acceptance_probability_block_sums: vec![vec![0.0; n.div_ceil(CHAIN_CHUNK)]; n_pairs],
        };
        if n_pairs == 0 {
            state.round += 1;
            return info;
        }
        // Which pair parity (or which single pair) each system proposes this round. SEO and
        // random-pair draw it from rung 0's streams: a block above rung 0 receives it from
        // below. Lifted: the pair of the lifted replica, known where it is (usize::MAX
        // elsewhere).
        let drawn = matches!(
            self.schedule,
            SwapSchedule::StochasticEvenOdd | SwapSchedule::RandomPair
        );
        choice.clear();
        match self.schedule {
            SwapSchedule::DeterministicEvenOdd => choice.resize(n, (state.round % 2) as usize),
            SwapSchedule::Sweep => choice.resize(n, 0),
            _ if drawn && a > 0 => {}
            SwapSchedule::StochasticEvenOdd => {
                choice.extend(streams[0].iter_mut().map(|r| (r.next_u32() >> 31) as usize))
            }
            SwapSchedule::RandomPair => {
                choice.extend(streams[0].iter_mut().map(|r| r.random_range(0..n_pairs)))
            }
            // The pair (eta, eta + eps) is indexed by its lower rung.
            SwapSchedule::Lifted => {
                choice.extend(state.lifted.iter().map(|&(eta, up)| match eta as usize {
                    eta if !(a..b).contains(&eta) => usize::MAX,
                    eta if up => eta,
                    eta => eta - 1,
                }))
            }
        }
        let proposes = |c: usize, k: usize| match self.schedule {
            SwapSchedule::RandomPair | SwapSchedule::Lifted => c == k,
            SwapSchedule::Sweep => true,
            _ => k % 2 == c,
        };
        // DEO proposes no pair of the other parity: such a boundary needs no message.
        let possible = |k: usize| {
            self.schedule != SwapSchedule::DeterministicEvenOdd
                || k % 2 == (state.round % 2) as usize
        };
        // The choices drawn at rung 0 travel up the blocks before any exchange.
        if drawn && a > 0 {
            choice.extend(link.receive(Side::Below).iter().map(|&c| c as usize));
        }
        if drawn && b < n_rungs {
            let words: Vec<u64> = choice.iter().map(|&c| c as u64).collect();
            link.send(Side::Above, &words);
        }
        for v in [&mut *proposed, &mut *accept] {
            v.clear();
            v.resize(n, false);
        }
        log_alpha.clear();
        log_alpha.resize(n, 0.0);
        let below = a > 0 && possible(a - 1);
        let above = b < n_rungs && possible(b - 1);
        // Sweep proposes every pair of every system, bottom up: an exchange sees the states the
        // one below left, so a block waits for the boundary below before its own pairs. The
        // other schedules propose at most one of two neighbouring pairs per system, so the
        // pairs of a round commute (they touch other systems' chains, whose energies no other
        // pair uses): every block runs its own pairs at once, then the boundaries. Not so for
        // an exchange that refreshes every chain of its two rungs (a stack) under a schedule
        // whose systems choose different pairs: neighbouring pairs then touch the same chains
        // and run bottom up too. (Under DEO the pairs of a round share no rung.)
        let sequential = self.schedule == SwapSchedule::Sweep
            || (ladder.refreshes() && self.schedule != SwapSchedule::DeterministicEvenOdd);
        let plan = if sequential {
            [
                Phase::EnergiesDown,
                Phase::FromBelow,
                Phase::Own,
                Phase::Above,
            ]
        } else {
            [
                Phase::Own,
                Phase::EnergiesDown,
                Phase::Above,
                Phase::FromBelow,
            ]
        };
        for phase in plan {
            match phase {
                Phase::EnergiesDown if below => {
                    // The energies of this block's states at rungs a - 1 and a, and which
                    // systems' lifted replica (here, at rung a, moving down) proposes the pair.
                    let k = a - 1;
                    let mut e = vec![0.0; 2 * n];
                    link.pair_energies(ladder, k, &state.rungs[0], true, &mut e);
                    let mut message: Vec<u64> = e.iter().map(|v| v.to_bits()).collect();
                    if self.schedule == SwapSchedule::Lifted {
                        message.extend(choice.iter().map(|&c| u64::from(c == k)));
                    }
                    link.send(Side::Below, &message);
                }
                Phase::FromBelow if below => {
                    let k = a - 1;
                    let decided = link.receive(Side::Below);
                    for i in 0..n {
                        proposed[i] = decided[i] == 1;
                        accept[i] = decided[n + i] == 1;
                    }
                    let which: Vec<usize> = (0..n).filter(|&i| accept[i]).collect();
                    let departing = departing(&state.replica[0], &state.last_end, &which);
                    link.send(Side::Below, &departing);
                    let x = &mut state.rungs[0];
                    link.swap_parts(ladder, Side::Below, k, x, &which);
                    // The refresh draws from rung k's streams, lent by the block below: the
                    // upper state's first, as in one process.
                    if ladder.refreshes() && proposed.iter().any(|&p| p) {
                        let mut lent = streams_from_words(&link.receive(Side::Below));
                        link.refresh(ladder, k, x, true, &mut lent);
                        link.send(Side::Below, &stream_words(&lent));
                    }
                    arrive(
                        &mut state.replica[0],
                        &mut state.last_end,
                        &which,
                        &decided[2 * n..],
                    );
                    if self.schedule == SwapSchedule::Lifted {
                        for i in (0..n).filter(|&i| proposed[i]) {
                            let from = if choice[i] == k {
                                (a, false)
                            } else {
                                (k, true)
                            };
                            state.lifted[i] =
                                lifted_update((from.0 as u32, from.1), accept[i], n_rungs);
                        }
                    }
                    kept[0].valid = false;
                }
                Phase::Own => {
                    for k in a..b - 1 {
                        for i in 0..n {
                            proposed[i] = proposes(choice[i], k);
                        }
                        if !proposed.iter().any(|&p| p) {
                            continue;
                        }
                        let j = k - a;
                        let (lower, upper) = state.rungs.split_at_mut(j + 1);
                        let (lo, hi) = (&mut lower[j], &mut upper[0]);
                        let (kept_lower, kept_upper) = kept.split_at_mut(j + 1);
                        let (kept_lo, kept_hi) = (&mut kept_lower[j], &mut kept_upper[0]);
                        ladder.log_accept_keeping(k, lo, hi, log_alpha, [kept_lo, kept_hi], par);
                        decide(k, proposed, log_alpha, streams[j], accept, &mut info);
                        ladder.exchange_keeping(
                            k,
                            lo,
                            hi,
                            accept,
                            streams[j],
                            [kept_lo, kept_hi],
                            par,
                        );
                        let (rl, ru) = state.replica.split_at_mut(j + 1);
                        for i in 0..n {
                            if accept[i] {
                                std::mem::swap(&mut rl[j][i], &mut ru[0][i]);
                            }
                        }
                        if self.schedule == SwapSchedule::Lifted {
                            for i in (0..n).filter(|&i| proposed[i]) {
                                state.lifted[i] =
                                    lifted_update(state.lifted[i], accept[i], n_rungs);
                            }
                        }
                    }
                }
                Phase::Above if above => {
                    let (k, j) = (b - 1, held - 1);
                    let x = &mut state.rungs[j];
                    let energies = link.receive(Side::Above);
                    let e_hi: Vec<f64> = energies[..2 * n]
                        .iter()
                        .map(|&v| f64::from_bits(v))
                        .collect();
                    for i in 0..n {
                        proposed[i] = proposes(choice[i], k)
                            || (self.schedule == SwapSchedule::Lifted && energies[2 * n + i] == 1);
                    }
                    let any = proposed.iter().any(|&p| p);
                    if any {
                        let mut e_lo = vec![0.0; 2 * n];
                        link.pair_energies(ladder, k, x, false, &mut e_lo);
                        link.log_accept_from_energies(ladder, k, &e_lo, &e_hi, log_alpha);
                    }
                    decide(k, proposed, log_alpha, streams[j], accept, &mut info);
                    let which: Vec<usize> = (0..n).filter(|&i| accept[i]).collect();
                    let mut message: Vec<u64> = Vec::with_capacity(2 * n + 2 * which.len());
                    message.extend(proposed.iter().map(|&p| u64::from(p)));
                    message.extend(accept.iter().map(|&p| u64::from(p)));
                    message.extend(departing(&state.replica[j], &state.last_end, &which));
                    link.send(Side::Above, &message);
                    let arrived = link.receive(Side::Above);
                    link.swap_parts(ladder, Side::Above, k, x, &which);
                    if ladder.refreshes() && any {
                        link.send(Side::Above, &stream_words(streams[j]));
                        let back = streams_from_words(&link.receive(Side::Above));
                        streams[j].clone_from_slice(&back);
                        link.refresh(ladder, k, x, false, streams[j]);
                    }
                    arrive(&mut state.replica[j], &mut state.last_end, &which, &arrived);
                    if self.schedule == SwapSchedule::Lifted {
                        for i in (0..n).filter(|&i| proposed[i]) {
                            let from = if choice[i] == k {
                                (k, true)
                            } else {
                                (b, false)
                            };
                            state.lifted[i] =
                                lifted_update((from.0 as u32, from.1), accept[i], n_rungs);
                        }
                    }
                    kept[j].valid = false;
                }
                _ => {}
            }
        }
        info.round_trips +=
            update_round_trips(&state.replica, &mut state.last_end, a == 0, b == n_rungs);
        state.round_trips += info.round_trips;
        state.round += 1;
        info
    }
}

/// The phases of a round's exchanges on a block of rungs ([`ParallelTempering::step_linked`]).
#[derive(Clone, Copy)]
enum Phase {
    /// Send the energies of the block's first rung to the block below.
    EnergiesDown,
    /// Receive the decisions of the pair across the boundary below; swap the accepted chains.
    FromBelow,
    /// The pairs within the block, bottom up.
    Own,
    /// Decide the pair across the boundary above; swap the accepted chains.
    Above,
}

/// The exchange decisions of pair `k`: for every proposing system `i`, accept with probability
/// \\(\min(1, \alpha_i)\\) from a uniform of the lower rung's stream `rngs[i]`; counts into
/// `info`.
fn decide(
    k: usize,
    proposed: &[bool],
    log_alpha: &[f64],
    rngs: &mut [ebm_core::ChainRng],
    accept: &mut [bool],
    info: &mut PtInfo,
) {
    for i in 0..proposed.len() {
        accept[i] = false;
        if proposed[i] {
            let a = log_alpha[i].min(0.0);
            let u = f64::uniform(&mut rngs[i]);
            accept[i] = u.ln() < a;
            info.proposed[k] += 1;
            info.accepted[k] += accept[i] as u64;
            let p = a.exp();
            info.acceptance_probability_sum[k] += p;
            info.acceptance_probability_block_sums[k][i / CHAIN_CHUNK] += p;
        }
    }
}

/// The states of `streams`, four words each (a Xoshiro256++ state is 256 bits): how a block
/// lends the streams of its boundary rung to the block above, exactly ([`streams_from_words`]).
fn stream_words(streams: &[ebm_core::ChainRng]) -> Vec<u64> {
    streams.iter().flat_map(|r| r.words()).collect()
}

/// The streams written by [`stream_words`].
///
/// # Panics
/// If the number of words is not a multiple of four (a neighbour that does not follow the
/// protocol).
fn streams_from_words(words: &[u64]) -> Vec<ebm_core::ChainRng> {
    assert_eq!(words.len() % 4, 0, "stream states of four words each");
    words
        .chunks_exact(4)
        .map(|s| ebm_core::ChainRng::from_words([s[0], s[1], s[2], s[3]]))
        .collect()
}

/// The label and last-visited end of the replicas leaving the systems `which` of a rung
/// (`labels`) across a block boundary: two words each.
fn departing(labels: &[u32], last_end: &[Vec<Option<bool>>], which: &[usize]) -> Vec<u64> {
    let end = |e: Option<bool>| e.map_or(0, |top| 1 + u64::from(top));
    which
        .iter()
        .flat_map(|&i| [u64::from(labels[i]), end(last_end[i][labels[i] as usize])])
        .collect()
}

/// Records the replicas arriving at the systems `which` of a rung (`labels`), as written by
/// [`departing`] on the other side.
fn arrive(labels: &mut [u32], last_end: &mut [Vec<Option<bool>>], which: &[usize], words: &[u64]) {
    assert_eq!(
        words.len(),
        2 * which.len(),
        "labels of the arriving replicas"
    );
    for (&i, w) in which.iter().zip(words.chunks(2)) {
        labels[i] = w[0] as u32;
        last_end[i][labels[i] as usize] = [None, Some(false), Some(true)][w[1] as usize];
    }
}

/// One exploration step of a rung with `kernel`. When the kernel begins with a block draw of
/// \\(h \mid v\\) (Gibbs) and the last exchange kept that draw's product for the rung's current
/// state, the draw uses it ([`ebm_core::ProductCache::sample_hidden_from_kept`]) instead of
/// recomputing it: the same numbers, so the same chains.
fn explore<M, K, R>(
    kernel: &K,
    rung: super::Rung<'_, M>,
    x: &mut M::State,
    kept: &mut KeptProducts<M::State>,
    rngs: &mut [R],
    par: Par,
) -> K::Info
where
    M: ebm_core::ProductCache,
    K: Kernel<M>,
    R: Rng + Send,
{
    if kernel.begins_with_hidden_draw()
        && kept.valid
        && let Some(own) = kept.own.as_mut()
        && rung
            .model
            .sample_hidden_from_kept(x, own, rung.beta, rngs, par)
    {
        kept.valid = false;
        return kernel.step_after_hidden(rung.model, rung.beta, x, rngs, par);
    }
    kernel.step(rung.model, rung.beta, x, rngs, par)
}

/// The lifted replica's move: \\(\phi\\) on acceptance (move, bounce on landing at an end),
/// the corrected involution \\(S\\) on rejection (reverse at interior rungs, identity at the
/// ends).
fn lifted_update((eta, up): (u32, bool), accepted: bool, n_rungs: usize) -> (u32, bool) {
    let last = (n_rungs - 1) as u32;
    if accepted {
        let eta = if up { eta + 1 } else { eta - 1 };
        let up = if eta == 0 || eta == last { !up } else { up };
        (eta, up)
    } else if eta == 0 || eta == last {
        (eta, up)
    } else {
        (eta, !up)
    }
}

/// Records which end of the ladder each replica at rung 0 or at the last rung has reached, and
/// returns the number of replicas that arrived at the last rung having last visited rung 0.
/// `replica` holds the labels of a block of rungs: `bottom` if it starts at rung 0, `top` if
/// it ends at the last rung.
fn update_round_trips(
    replica: &[Vec<u32>],
    last_end: &mut [Vec<Option<bool>>],
    bottom: bool,
    top: bool,
) -> u64 {
    let last_rung = replica.len() - 1;
    let mut trips = 0;
    for (i, ends) in last_end.iter_mut().enumerate() {
        if bottom {
            ends[replica[0][i] as usize] = Some(false);
        }
        if top {
            let last = &mut ends[replica[last_rung][i] as usize];
            if *last == Some(false) {
                trips += 1;
            }
            *last = Some(true);
        }
    }
    trips
}

#[cfg(test)]
mod tests {
    use super::{ParallelTempering, PtState, SwapSchedule, lifted_update};
    use crate::Gibbs;
    use crate::tempering::{Exchange, TemperatureLadder};
    use ebm_core::Par;
    use ebm_models::exact::visible_probabilities;
    use ebm_models::{Bernoulli, DiscreteLayer, Rbm, RbmChains};
    use nalgebra::DMatrix;

    const BETAS: [f64; 3] = [0.3, 0.65, 1.0];

    /// The lifting states \\((\eta, \varepsilon)\\) of three rungs: all but (0, down), (2, up).
    const LIFTS: [(u32, bool); 4] = [(0, true), (1, false), (1, true), (2, false)];

    /// The exact transition matrix of one lifted exchange (no exploration) on
    /// (x_0, x_1, x_2, lift) for a 2 x 2 Bernoulli RBM, with `update` the lifting move, and
    /// the target pi = prod_k p_k(x_k) / |X|. State index: x_0 + 4 x_1 + 16 x_2 + 64 lift.
    fn lifted_kernel(update: fn((u32, bool), bool, usize) -> (u32, bool)) -> (Vec<f64>, Vec<f64>) {
        let rbm = Rbm::new(
            Bernoulli::new(vec![0.8, -1.1]),
            Bernoulli::new(vec![-0.5, 0.7]),
            DMatrix::from_row_slice(2, 2, &[2.5, -1.9, -2.2, 1.6]),
        )
        .unwrap();
        let ladder = TemperatureLadder::new(rbm.clone(), BETAS.to_vec()).unwrap();
        let p: Vec<Vec<f64>> = BETAS
            .iter()
            .map(|&b| visible_probabilities(&rbm, b, Par::Seq).unwrap())
            .collect();
        let n = 64 * LIFTS.len();
        let mut pi = vec![0.0; n];
        let mut k = vec![0.0; n * n];
        let one = |x: usize| {
            let mut c = rbm.default_chains(1);
            rbm.visible()
                .write_configuration(x as u128, c.visible.as_mut_slice());
            c
        };
        for z in 0..n {
            let x = [z % 4, (z / 4) % 4, (z / 16) % 4];
            let lift = LIFTS[z / 64];
            pi[z] = p[0][x[0]] * p[1][x[1]] * p[2][x[2]] / LIFTS.len() as f64;
            let lo = if lift.1 { lift.0 } else { lift.0 - 1 } as usize;
            let mut log_alpha = [0.0];
            ladder.log_accept(lo, &one(x[lo]), &one(x[lo + 1]), &mut log_alpha, Par::Seq);
            let alpha = log_alpha[0].min(0.0).exp();
            let index = |x: [usize; 3], l: (u32, bool)| {
                x[0] + 4 * x[1] + 16 * x[2] + 64 * LIFTS.iter().position(|&m| m == l).unwrap()
            };
            let mut swapped = x;
            swapped.swap(lo, lo + 1);
            k[z * n + index(swapped, update(lift, true, 3))] += alpha;
            k[z * n + index(x, update(lift, false, 3))] += 1.0 - alpha;
        }
        (pi, k)
    }

    /// Lifted PT (Kadan, Syed and Wøien), by exact enumeration: the lifted
    /// exchange leaves pi invariant, satisfies skew-detailed balance
    /// pi(z) K(z, z') = pi(S z') K(S z', S z) with the corrected involution S, and is not
    /// reversible; keeping the direction on rejection (no involution) breaks invariance.
    #[test]
    fn lifted_exchange_is_skew_reversible_and_invariant_by_enumeration() {
        let (pi, k) = lifted_kernel(lifted_update);
        let n = pi.len();
        let involution = |z: usize| {
            let (eta, up) = LIFTS[z / 64];
            let s = if eta == 0 || eta == 2 {
                (eta, up)
            } else {
                (eta, !up)
            };
            z % 64 + 64 * LIFTS.iter().position(|&m| m == s).unwrap()
        };
        let (mut stationarity, mut skew, mut reversible) = (0.0f64, 0.0f64, 0.0f64);
        for j in 0..n {
            let flow: f64 = (0..n).map(|i| pi[i] * k[i * n + j]).sum();
            stationarity = stationarity.max((flow - pi[j]).abs());
            for i in 0..n {
                let (si, sj) = (involution(i), involution(j));
                skew = skew.max((pi[i] * k[i * n + j] - pi[sj] * k[sj * n + si]).abs());
                reversible = reversible.max((pi[i] * k[i * n + j] - pi[j] * k[j * n + i]).abs());
            }
        }
        assert!(
            stationarity < 1e-15,
            "invariance violated by {stationarity}"
        );
        assert!(skew < 1e-15, "skew-detailed balance violated by {skew}");
        assert!(reversible > 1e-4, "unexpectedly reversible: {reversible}");

        // Negative control: momentum kept on rejection (the involution dropped).
        fn no_involution((eta, up): (u32, bool), accepted: bool, n: usize) -> (u32, bool) {
            if accepted {
                lifted_update((eta, up), true, n)
            } else {
                (eta, up)
            }
        }
        let (pi, k) = lifted_kernel(no_involution);
        let worst = (0..n)
            .map(|j| ((0..n).map(|i| pi[i] * k[i * n + j]).sum::<f64>() - pi[j]).abs())
            .fold(0.0, f64::max);
        assert!(
            worst > 1e-3,
            "lifting without the involution kept the target: {worst}"
        );
    }

    /// A 10 x 7 Bernoulli RBM with weights `scale` times a fixed pattern.
    fn rbm(scale: f64) -> Rbm<Bernoulli, Bernoulli> {
        Rbm::new(
            Bernoulli::zeros(10),
            Bernoulli::new(vec![-0.2; 7]),
            DMatrix::from_fn(10, 7, |i, j| scale * (((i + 2 * j) % 5) as f64 - 2.0) / 4.0),
        )
        .unwrap()
    }

    fn cols(x: &RbmChains<f64>, r: std::ops::Range<usize>) -> RbmChains<f64> {
        RbmChains {
            visible: x.visible.columns(r.start, r.len()).into_owned(),
            hidden: x.hidden.columns(r.start, r.len()).into_owned(),
        }
    }

    fn concat(parts: &[&RbmChains<f64>]) -> RbmChains<f64> {
        let n = parts.iter().map(|p| p.visible.ncols()).sum();
        let layer = |f: fn(&RbmChains<f64>) -> &DMatrix<f64>| {
            let rows = f(parts[0]).nrows();
            DMatrix::from_iterator(rows, n, parts.iter().flat_map(|p| f(p).iter().copied()))
        };
        RbmChains {
            visible: layer(|c| &c.visible),
            hidden: layer(|c| &c.hidden),
        }
    }

    /// Systems 0..256 and 256..300 (whole blocks of 128) advanced separately and joined are
    /// the whole run, for every schedule: chains, streams, labels, lifting, round trips, and
    /// the acceptance sums per block; joined out of order (negative control) they are not.
    #[test]
    fn shards_of_systems_advanced_separately_join_into_the_whole_run() {
        let model = rbm(2.0);
        let ladder = TemperatureLadder::new(model.clone(), BETAS.to_vec()).unwrap();
        for schedule in SwapSchedule::ALL {
            let pt = ParallelTempering::new(Gibbs::new(1), schedule);
            let rungs = BETAS.iter().map(|_| model.default_chains(300)).collect();
            let mut whole = PtState::new(rungs, 7).unwrap();
            let mut parts: Vec<_> = [0..256, 256..300]
                .into_iter()
                .map(|r| whole.systems(r, cols).unwrap())
                .collect();
            for _ in 0..5 {
                let info = pt.step(&ladder, &mut whole, Par::Rayon);
                let infos: Vec<_> = parts
                    .iter_mut()
                    .map(|p| pt.step(&ladder, p, Par::Rayon))
                    .collect();
                for k in 0..BETAS.len() - 1 {
                    let blocks: Vec<f64> = infos
                        .iter()
                        .flat_map(|i| i.acceptance_probability_block_sums[k].clone())
                        .collect();
                    assert_eq!(blocks, info.acceptance_probability_block_sums[k]);
                    let sum: f64 = blocks.iter().sum();
                    assert!((sum - info.acceptance_probability_sum[k]).abs() < 1e-9);
                }
                let trips: u64 = infos.iter().map(|i| i.round_trips).sum();
                assert_eq!(trips, info.round_trips);
            }
            let joined = PtState::join_systems(parts.clone(), concat).unwrap();
            assert!(joined == whole, "{schedule:?}");
            parts.reverse();
            let wrong = PtState::join_systems(parts, concat).unwrap();
            assert!(wrong != whole, "{schedule:?}: order went unnoticed");
        }
    }

    /// The products an exchange keeps belong to the ladder's model: after a change of model,
    /// a state that dropped them moves as a fresh copy of itself does (which starts without
    /// them); one that kept them (negative control) draws from the old model and differs.
    #[test]
    fn kept_products_are_dropped_before_a_change_of_model() {
        let (old, new) = (rbm(1.0), rbm(1.5));
        let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
        let before = TemperatureLadder::new(old.clone(), BETAS.to_vec()).unwrap();
        let run = || {
            let rungs = BETAS.iter().map(|_| old.default_chains(300)).collect();
            let mut state = PtState::new(rungs, 3).unwrap();
            for _ in 0..3 {
                pt.step(&before, &mut state, Par::Rayon);
            }
            state
        };
        let after = TemperatureLadder::new(new, BETAS.to_vec()).unwrap();
        let mut fresh = run().clone();
        pt.step(&after, &mut fresh, Par::Rayon);
        let mut dropped = run();
        dropped.drop_kept_products();
        pt.step(&after, &mut dropped, Par::Rayon);
        assert!(dropped == fresh);
        let mut stale = run();
        pt.step(&after, &mut stale, Par::Rayon);
        assert!(stale != fresh, "stale products went unnoticed");
    }

    /// The kept products are valid by construction: a state whose rungs are written through
    /// [`PtState::rungs_mut`] between rounds moves as a state freshly built from the written
    /// rungs (with the same streams, labels and counters) does, for every schedule; writing
    /// the rungs behind the state's back, its kept products left in place (negative control),
    /// draws \\(h \mid v\\) from the old configurations and differs.
    #[test]
    fn rungs_written_through_rungs_mut_move_as_a_freshly_built_state() {
        let model = rbm(1.5);
        let ladder = TemperatureLadder::new(model.clone(), BETAS.to_vec()).unwrap();
        let flip = |rungs: &mut [RbmChains<f64>]| {
            for x in rungs {
                x.visible.apply(|v| *v = 1.0 - *v);
            }
        };
        for schedule in SwapSchedule::ALL {
            let pt = ParallelTempering::new(Gibbs::new(1), schedule);
            let run = || {
                let rungs = BETAS.iter().map(|_| model.default_chains(200)).collect();
                let mut state = PtState::new(rungs, 5).unwrap();
                for _ in 0..3 {
                    pt.step(&ladder, &mut state, Par::Rayon);
                }
                assert!(state.kept.products.iter().any(|k| k.valid), "{schedule:?}");
                state
            };
            let mut written = run();
            flip(written.rungs_mut());
            assert!(written.kept.products.iter().all(|k| k.products().is_none()));
            let mut fresh = PtState::new(written.rungs().to_vec(), 0).unwrap();
            fresh.rngs = written.rngs.clone();
            fresh.replica = written.replica.clone();
            fresh.last_end = written.last_end.clone();
            fresh.round_trips = written.round_trips;
            fresh.lifted = written.lifted.clone();
            fresh.round = written.round;
            assert!(fresh == written);
            let mut stale = run();
            flip(&mut stale.rungs);
            assert!(stale == written);
            for s in [&mut written, &mut fresh, &mut stale] {
                pt.step(&ladder, s, Par::Rayon);
            }
            assert!(written == fresh, "{schedule:?}");
            assert!(
                stale != fresh,
                "{schedule:?}: stale products went unnoticed"
            );
        }
    }

    #[test]
    fn lifted_moves_follow_phi_on_acceptance_and_the_corrected_involution_on_rejection() {
        // 4 rungs: ends 0 and 3.
        assert_eq!(lifted_update((1, true), true, 4), (2, true)); // keep momentum
        assert_eq!(lifted_update((2, true), true, 4), (3, false)); // land on the end: bounce
        assert_eq!(lifted_update((1, false), true, 4), (0, true)); // land on the other end
        assert_eq!(lifted_update((2, true), false, 4), (2, false)); // interior reject: reverse
        assert_eq!(lifted_update((1, false), false, 4), (1, true)); // (1, -1) reverses too
        assert_eq!(lifted_update((0, true), false, 4), (0, true)); // end reject: identity
        assert_eq!(lifted_update((3, false), false, 4), (3, false));
        // Two rungs: every accepted move lands on an end.
        assert_eq!(lifted_update((0, true), true, 2), (1, false));
    }
}

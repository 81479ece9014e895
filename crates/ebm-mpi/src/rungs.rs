//! Parallel tempering sharded by rung: blocks of contiguous rungs on different ranks,
//! exchanges across blocks decided from the neighbours' energies.

use std::ops::Range;

use ebm_core::{Error, Kernel, Observer, Par, Result, RngStreams};
use ebm_samplers::tempering::{
    INDEX_SYSTEMS, IndexProcess, ParallelTempering, PtDiagnostics, PtReport, PtState, RungLink,
    Side, SplitExchange,
};

use crate::{Collective, ShardChains};

/// The rungs `rank` of `ranks` processes holds out of `n_rungs`: contiguous blocks dealt from
/// the top as evenly as possible (the first `n_rungs % ranks` ranks take one more), so rank 0
/// holds the target (the last rung) and rank `r + 1` the block just below rank `r`'s. Ranks
/// beyond the number of rungs get an empty range.
///
/// # Panics
/// If `ranks == 0` or `rank >= ranks`.
///
/// # Example
/// ```
/// use ebm_mpi::rung_range;
/// // 7 rungs on 3 ranks: 3, 2 and 2 rungs, the target on rank 0.
/// assert_eq!(rung_range(7, 3, 0), 4..7);
/// assert_eq!(rung_range(7, 3, 1), 2..4);
/// assert_eq!(rung_range(7, 3, 2), 0..2);
/// ```
pub fn rung_range(n_rungs: usize, ranks: usize, rank: usize) -> Range<usize> {
    assert!(rank < ranks, "rank {rank} of {ranks} processes");
    let (per, extra) = (n_rungs / ranks, n_rungs % ranks);
    let above = rank * per + rank.min(extra);
    let count = per + usize::from(rank < extra);
    n_rungs - above - count..n_rungs - above
}

/// The [`RungLink`] of a rank's block of rungs ([`rung_range`]) over a [`Collective`]: the
/// block below is held by rank `rank + 1`, the block above by rank `rank - 1`.
#[derive(Debug)]
pub struct RungNeighbours<'a, C: ?Sized> {
    c: &'a C,
}

impl<'a, C: Collective + ?Sized> RungNeighbours<'a, C> {
    /// The neighbours of this rank's block in `c`.
    pub fn new(c: &'a C) -> Self {
        Self { c }
    }

    fn rank_of(&self, side: Side) -> usize {
        match side {
            Side::Below => self.c.rank() + 1,
            Side::Above => self.c.rank() - 1,
        }
    }
}

/// `S` is the part of a state that an exchange moves ([`SplitExchange::part_mut`]): whole chains
/// for a ladder, one layer for a stack.
impl<C: Collective + ?Sized, S: ShardChains> RungLink<S> for RungNeighbours<'_, C> {
    fn send(&mut self, to: Side, words: &[u64]) {
        self.c.send(self.rank_of(to), words);
    }

    fn receive(&mut self, from: Side) -> Vec<u64> {
        self.c.receive(self.rank_of(from))
    }

    /// The lower block sends its chains first, the upper one receives first: the order never
    /// has both wait in a send.
    fn swap_chains(&mut self, with: Side, x: &mut S, which: &[usize]) {
        if which.is_empty() {
            return;
        }
        let mine = x.pack_chains(which);
        let rank = self.rank_of(with);
        let theirs = match with {
            Side::Above => {
                self.c.send(rank, &mine);
                self.c.receive(rank)
            }
            Side::Below => {
                let theirs = self.c.receive(rank);
                self.c.send(rank, &mine);
                theirs
            }
        };
        x.unpack_chains(which, &theirs);
    }
}

/// What a rung-sharded PT run gathers on rank 0.
#[derive(Clone, Debug, PartialEq)]
pub struct RungRun<S> {
    /// The state of the whole run after its rounds, as the one-process run leaves it (chains,
    /// streams, replica labels, last-visited ends, lifting variables, round trips, rounds).
    pub state: PtState<S>,
    /// The exchange diagnostics of every round.
    pub diagnostics: PtDiagnostics,
    /// The replica index process of the first systems ([`IndexProcess::with_max_systems`]).
    pub index: IndexProcess,
}

/// `rounds` rounds of `pt` on `ladder` from the chains `init[k]` of every rung, with streams
/// from `seed`, sharded over the ranks of `c` by rung: rank `r` holds the rungs
/// [`rung_range`]`(K, size, r)` of every system ([`PtState::for_rungs`]) and runs
/// [`ParallelTempering::step_linked`] on them, exchanging with the ranks of the neighbouring
/// blocks. After every round rank 0, which holds the target, shows its chains to `observe`
/// (round, chains); its first error is returned after the run (the ranks finish together).
/// At the end rank 0 gathers the whole state, the diagnostics and the index process of the
/// first `index_systems` systems, and returns them; the other ranks return `None`.
///
/// Everything gathered equals bit for bit what the one-process run `pt.step(ladder, &mut
/// PtState::new(init, seed)?, par)` repeated `rounds` times leaves (its [`PtState`],
/// [`PtDiagnostics::record`] of every round's [`ebm_samplers::tempering::PtInfo`],
/// [`IndexProcess::record`] of every round), for any number of ranks: each chain keeps its own
/// stream, and each exchange is decided by the rank holding its lower rung from the same energies,
/// with the same uniform, as in one process.
///
/// Communication per round, for \\(n\\) systems, across each of the `size - 1` block boundaries
/// whose pair is proposed: \\(2n\\) energies down the ladder (plus \\(n\\) flags for the lifted
/// schedule), \\(2n\\) decision words up, and the moving parts of the accepted exchanges both ways
/// ([`SplitExchange::part_mut`]: whole chains for a ladder, one layer for a stack), with two words
/// of labels each. An exchange that refreshes its two rungs
/// ([`ebm_samplers::tempering::Exchange::refreshes`], a stack) draws from the lower rung's streams
/// on both sides: the lower block lends them up (\\(4n\\) words, the 256-bit stream states) and
/// gets them back advanced. The pairs of a round are decided bottom up, as in one process, so the
/// exchange phase passes from block to block; the exploration, the bulk of a round, runs on all
/// blocks at once.
///
/// # Errors
/// [`Error::InvalidParameter`] for no rungs; [`Error::ShapeMismatch`] for rungs of different
/// sizes;
/// the first error of `observe` on rank 0.
#[allow(clippy::too_many_arguments)]
pub fn tempering_by_rung<C, L, K, B>(
    c: &C,
    pt: &ParallelTempering<K, B>,
    ladder: &L,
    init: &[L::State],
    seed: u64,
    rounds: u64,
    index_systems: usize,
    par: Par,
    observe: impl FnMut(u64, &L::State) -> Result<()>,
) -> Result<Option<RungRun<L::State>>>
where
    C: Collective + ?Sized,
    L: SplitExchange,
    L::State: ShardChains,
    L::Part: ShardChains,
    K: Kernel<L::RungModel>,
    B: Kernel<L::RungModel>,
{
    Error::check_len("rungs", ladder.n_exchange_rungs(), init.len())?;
    let start = PtState::new(init.to_vec(), seed)?;
    tempering_by_rung_from(c, pt, ladder, &start, rounds, index_systems, par, observe)
}

/// `rounds` rounds of `pt` on `ladder` from `state`, on the ranks of `c`: on one rank
/// [`ParallelTempering::run`], on several [`tempering_by_rung_from`] (the rungs sharded over
/// the ranks). Rank 0, which holds the target, shows its chains to `observer` after every
/// round, returns the [`PtReport`] of the run and leaves in `state` the state of the whole run,
/// bit for bit what one process leaves; the other ranks return `None`.
///
/// # Errors
/// As [`ParallelTempering::run`] and [`tempering_by_rung_from`].
pub fn tempering<C, L, K, B, O>(
    c: &C,
    pt: &ParallelTempering<K, B>,
    ladder: &L,
    state: &mut PtState<L::State>,
    rounds: u64,
    par: Par,
    mut observer: O,
) -> Result<Option<PtReport>>
where
    C: Collective + ?Sized,
    L: SplitExchange,
    L::State: ShardChains,
    L::Part: ShardChains,
    K: Kernel<L::RungModel>,
    B: Kernel<L::RungModel>,
    O: Observer<L::State>,
{
    if c.size() == 1 {
        return pt.run(ladder, state, rounds, par, observer).map(Some);
    }
    let observe = |round: u64, target: &L::State| observer.observe(round, target);
    let run = tempering_by_rung_from(c, pt, ladder, state, rounds, INDEX_SYSTEMS, par, observe)?;
    Ok(run.map(|run| {
        *state = run.state;
        PtReport::new(run.diagnostics, run.index)
    }))
}

/// [`tempering_by_rung`] from the state `start` of the whole run (which every rank passes),
/// e.g. the state that [`ebm_samplers::tempering::StackedTempering::init`] leaves (its
/// bottom-to-top pass draws from the target rung's streams): rank `r` runs the block
/// [`PtState::block`]`(`[`rung_range`]`(K, size, r))` and rank 0 gathers what `rounds`
/// rounds of `pt.step(ladder, &mut start.clone(), par)` leave, bit for bit.
///
/// # Errors
/// As [`tempering_by_rung`]; [`Error::InvalidParameter`] for a `start` that is a block of
/// rungs rather than a whole run.
#[allow(clippy::too_many_arguments)]
pub fn tempering_by_rung_from<C, L, K, B>(
    c: &C,
    pt: &ParallelTempering<K, B>,
    ladder: &L,
    start: &PtState<L::State>,
    rounds: u64,
    index_systems: usize,
    par: Par,
    mut observe: impl FnMut(u64, &L::State) -> Result<()>,
) -> Result<Option<RungRun<L::State>>>
where
    C: Collective + ?Sized,
    L: SplitExchange,
    L::State: ShardChains,
    L::Part: ShardChains,
    K: Kernel<L::RungModel>,
    B: Kernel<L::RungModel>,
{
    let k = start.rungs().len();
    if start.first_rung != 0 {
        return Err(Error::InvalidParameter {
            name: "start".into(),
            reason: format!(
                "the state of a whole run starts at rung 0, this block at rung {}",
                start.first_rung
            ),
        });
    }
    Error::check_len("rungs", ladder.n_exchange_rungs(), k)?;
    let held = rung_range(k, c.size(), c.rank());
    let init = start.rungs();
    let n = start.n_chains();
    let m = index_systems.min(n);
    let mut diagnostics = PtDiagnostics::new(n);
    // Per round, the labels of the first `m` systems on this block's rungs.
    let mut labels: Vec<u64> = Vec::new();
    let mut state = None;
    let mut failed = None;
    if !held.is_empty() {
        let mut s = start.block(held.clone());
        let mut link = RungNeighbours::new(c);
        for r in 1..=rounds {
            let info = pt.step_linked(ladder, &mut s, &mut link, par);
            diagnostics.record(&info);
            for row in &s.replica {
                labels.extend(row[..m].iter().map(|&l| u64::from(l)));
            }
            if c.is_root() && failed.is_none() {
                failed = observe(r, s.rungs().last().expect("rank 0 holds the target")).err();
            }
        }
        state = Some(s);
    }
    // The block's part of the whole state, its diagnostics and its index labels.
    let mut message = vec![held.start as u64, held.len() as u64];
    let mut chains = Vec::new();
    let mut streams = Vec::new();
    if let Some(s) = &state {
        for (row, x) in s.replica.iter().zip(s.rungs()) {
            message.extend(row.iter().map(|&l| u64::from(l)));
            message.extend(
                row.iter()
                    .enumerate()
                    .map(|(i, &l)| s.last_end[i][l as usize].map_or(0, |top| 1 + u64::from(top))),
            );
            chains.extend(x.pack());
        }
        message.extend(s.lifted.iter().flat_map(|&(eta, up)| {
            let here = held.contains(&(eta as usize));
            [u64::from(here), u64::from(eta), u64::from(up)]
        }));
        message.push(s.round_trips - start.round_trips);
        streams = serde_json::to_vec(&s.rngs).expect("streams serialise");
    }
    let pairs = k.saturating_sub(1);
    if diagnostics.proposed.is_empty() {
        diagnostics.proposed = vec![0; pairs];
        diagnostics.acceptance_probability_sum = vec![0.0; pairs];
    }
    message.extend(&diagnostics.proposed);
    message.extend(
        diagnostics
            .acceptance_probability_sum
            .iter()
            .map(|p| p.to_bits()),
    );
    message.push(diagnostics.round_trips);
    message.push(labels.len() as u64);
    message.extend(labels);
    message.push(streams.len() as u64);
    message.extend(streams.iter().map(|&b| u64::from(b)));
    message.extend(chains);
    let Some(parts) = c.gather(&message) else {
        return Ok(None);
    };
    if let Some(e) = failed {
        return Err(e);
    }
    let mut whole = start.clone();
    whole.round += rounds;
    let seed = start.rngs.seed();
    let mut rung_streams = vec![RngStreams::new(seed, 0); k];
    let mut index_rows: Vec<Vec<Vec<u32>>> = vec![vec![Vec::with_capacity(m); k]; rounds as usize];
    let (mut proposed, mut probability, mut trips) = (vec![0; pairs], vec![0.0; pairs], 0);
    for p in &parts {
        let (start, len) = (p[0] as usize, p[1] as usize);
        let mut cursor = Cursor { words: p, at: 2 };
        let mut words = |count: usize| cursor.take(count);
        if len > 0 {
            for r in start..start + len {
                let row: Vec<u32> = words(n).iter().map(|&l| l as u32).collect();
                for (i, &end) in words(n).iter().enumerate() {
                    whole.last_end[i][row[i] as usize] =
                        [None, Some(false), Some(true)][end as usize];
                }
                whole.replica[r] = row;
            }
            for (i, w) in words(3 * n).chunks(3).enumerate() {
                if w[0] == 1 {
                    whole.lifted[i] = (w[1] as u32, w[2] == 1);
                }
            }
            whole.round_trips += words(1)[0];
        }
        for (q, &w) in proposed.iter_mut().zip(words(pairs)) {
            *q += w;
        }
        for (q, &w) in probability.iter_mut().zip(words(pairs)) {
            *q += f64::from_bits(w);
        }
        trips += words(1)[0];
        let count = words(1)[0] as usize;
        let recorded = words(count);
        if len * m > 0 {
            for (round, rows) in recorded.chunks(len * m).enumerate() {
                for (j, row) in rows.chunks(m).enumerate() {
                    index_rows[round][start + j] = row.iter().map(|&l| l as u32).collect();
                }
            }
        }
        let count = words(1)[0] as usize;
        let bytes: Vec<u8> = words(count).iter().map(|&b| b as u8).collect();
        if len > 0 {
            let s: RngStreams =
                serde_json::from_slice(&bytes).map_err(|e| Error::InvalidParameter {
                    name: "streams".into(),
                    reason: format!("a rank sent streams that do not parse: {e}"),
                })?;
            for (j, r) in (start..start + len).enumerate() {
                rung_streams[r] = s.subset(j * n..(j + 1) * n);
            }
            // Rungs may differ in shape (the RBMs of a stack).
            for r in start..start + len {
                whole.rungs_mut()[r] = L::State::unpack(&init[r], n, words(init[r].width() * n));
            }
        }
    }
    whole.rngs = RngStreams::join(seed, &rung_streams);
    diagnostics.proposed = proposed;
    diagnostics.acceptance_probability_sum = probability;
    diagnostics.round_trips = trips;
    diagnostics.rounds = rounds;
    if rounds == 0 {
        diagnostics = PtDiagnostics::new(n);
    }
    let mut index = IndexProcess::with_max_systems(index_systems);
    for rows in &index_rows {
        index.record_replicas(rows);
    }
    Ok(Some(RungRun {
        state: whole,
        diagnostics,
        index,
    }))
}

/// Reads a gathered message in order.
struct Cursor<'a> {
    words: &'a [u64],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, count: usize) -> &'a [u64] {
        let w = &self.words[self.at..self.at + count];
        self.at += count;
        w
    }
}

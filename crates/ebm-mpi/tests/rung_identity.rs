//! Parallel tempering sharded by rung (blocks of rungs on different ranks, here threads)
//! equals the one-process run bit for bit: states, streams, replica labels, last-visited ends,
//! lifting variables, swap statistics and the replica index process; for temperature and
//! trajectory ladders and for stacked tempering; with negative controls that break it.

mod common;

use common::{on_all_ranks, rbm};
use ebm_core::{Kernel, Par};
use ebm_models::{Bernoulli, Rbm, RbmChains, Stack, StackedRbm};
use ebm_mpi::{
    Collective, RungNeighbours, RungRun, ShardChains, Threads, rung_range, tempering_by_rung,
    tempering_by_rung_from,
};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Exchange, IndexProcess, ParallelTempering, PtDiagnostics, PtInfo, PtState, Rung, RungLink,
    Side, SplitExchange, StackLadder, StackedTempering, SwapSchedule, TemperatureLadder,
    TrajectoryLadder,
};
use nalgebra::DMatrix;
use rand::Rng;

/// Systems per rung.
const SYSTEMS: usize = 40;
const ROUNDS: u64 = 30;
const SEED: u64 = 11;
/// Systems whose index process is recorded (fewer than all, as in the command line).
const INDEX_SYSTEMS: usize = 16;

/// The one-process run, recorded as the command line records it.
fn whole<L, B>(
    pt: &ParallelTempering<Gibbs, B>,
    ladder: &L,
    init: &[RbmChains<f64>],
) -> RungRun<RbmChains<f64>>
where
    L: Exchange<State = RbmChains<f64>>,
    Gibbs: Kernel<L::RungModel>,
    B: Kernel<L::RungModel>,
{
    let state = PtState::new(init.to_vec(), SEED).unwrap();
    recorded(state, |s| pt.step(ladder, s, Par::Rayon))
}

/// `ROUNDS` rounds of `round` from `state`, recorded as the command line records them.
fn recorded(
    mut state: PtState<RbmChains<f64>>,
    mut round: impl FnMut(&mut PtState<RbmChains<f64>>) -> PtInfo,
) -> RungRun<RbmChains<f64>> {
    let mut diagnostics = PtDiagnostics::new(SYSTEMS);
    let mut index = IndexProcess::with_max_systems(INDEX_SYSTEMS);
    for _ in 0..ROUNDS {
        diagnostics.record(&round(&mut state));
        index.record(&state);
    }
    RungRun {
        state,
        diagnostics,
        index,
    }
}

/// The run sharded by rung over `ranks` threads, gathered on rank 0; checks that rank 0 saw
/// the target's chains after every round.
fn sharded<L, B>(
    ranks: usize,
    pt: &ParallelTempering<Gibbs, B>,
    ladder: &L,
    init: &[RbmChains<f64>],
) -> RungRun<RbmChains<f64>>
where
    L: SplitExchange<State = RbmChains<f64>, Part = RbmChains<f64>>,
    Gibbs: Kernel<L::RungModel>,
    B: Kernel<L::RungModel>,
{
    on_rank_0(ranks, |c, observe| {
        tempering_by_rung(
            c,
            pt,
            ladder,
            init,
            SEED,
            ROUNDS,
            INDEX_SYSTEMS,
            Par::Rayon,
            observe,
        )
    })
}

/// Runs a sharded run on `ranks` threads; returns rank 0's gathered run, checking that rank 0
/// saw the target's chains after every round and that the other ranks return nothing.
fn on_rank_0(
    ranks: usize,
    run: impl Fn(
        &Threads,
        &mut dyn FnMut(u64, &RbmChains<f64>) -> ebm_core::Result<()>,
    ) -> ebm_core::Result<Option<RungRun<RbmChains<f64>>>>
    + Sync,
) -> RungRun<RbmChains<f64>> {
    let mut results = on_all_ranks(ranks, |c| {
        let mut seen = 0;
        let run = run(c, &mut |round, target| {
            seen += 1;
            assert_eq!((round, target.visible.ncols()), (seen, SYSTEMS));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, if c.is_root() { ROUNDS } else { 0 });
        run
    });
    assert!(results[1..].iter().all(Option::is_none), "rank 0 gathers");
    results.swap_remove(0).expect("rank 0 gathers")
}

fn assert_same(sharded: &RungRun<RbmChains<f64>>, whole: &RungRun<RbmChains<f64>>, what: &str) {
    assert_eq!(sharded.state, whole.state, "{what}: state");
    assert_eq!(
        sharded.diagnostics, whole.diagnostics,
        "{what}: swap statistics"
    );
    assert_eq!(sharded.index, whole.index, "{what}: index process");
}

/// A run worth comparing: every pair exchanged, and (but with one random pair a round, too
/// slow for these few rounds) replicas crossed the whole ladder.
fn assert_mixes(whole: &RungRun<RbmChains<f64>>, schedule: SwapSchedule, what: &str) {
    let d = &whole.diagnostics;
    assert!(
        d.acceptance_rates().iter().all(|&a| a > 0.05),
        "{what}: {:?}",
        d.acceptance_rates()
    );
    if schedule != SwapSchedule::RandomPair {
        assert!(d.round_trips > 0, "{what}: no round trip");
    }
}

fn chains(n_rungs: usize) -> Vec<RbmChains<f64>> {
    vec![rbm(3.0).default_chains(SYSTEMS); n_rungs]
}

/// Seven rungs: blocks of 7; 4 + 3; 3 + 2 + 2; 2 + 2 + 2 + 1 on 1 to 4 ranks.
#[test]
fn pt_sharded_by_rung_equals_the_one_process_run_for_every_schedule() {
    let ladder = TemperatureLadder::geometric(rbm(3.0), 0.2, 7).unwrap();
    let init = chains(7);
    for schedule in SwapSchedule::ALL {
        let pt = ParallelTempering::new(Gibbs::new(1), schedule);
        let whole = whole(&pt, &ladder, &init);
        assert_mixes(&whole, schedule, &format!("{schedule:?}"));
        for ranks in 1..=4 {
            let what = format!("PT {schedule:?} on {ranks} ranks");
            assert_same(&sharded(ranks, &pt, &ladder, &init), &whole, &what);
        }
    }
}

/// The entry the command line calls, [`ebm_mpi::tempering`]: on one rank it is
/// [`ParallelTempering::run`], on several the run sharded by rung; either way rank 0 returns
/// the report of the one-process run (index process of the first
/// [`ebm_samplers::tempering::INDEX_SYSTEMS`] systems) and leaves its state, the others `None`.
#[test]
fn tempering_on_any_number_of_ranks_reports_the_one_process_run() {
    let ladder = TemperatureLadder::geometric(rbm(3.0), 0.2, 5).unwrap();
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let start = PtState::new(chains(5), SEED).unwrap();
    let mut whole = start.clone();
    let report = pt.run(&ladder, &mut whole, ROUNDS, Par::Rayon, ()).unwrap();
    assert!(report.diagnostics.round_trips > 0);
    for ranks in 1..=3 {
        let results = on_all_ranks(ranks, |c| {
            let mut state = start.clone();
            let mut seen = 0;
            let observer = ebm_core::FnObserver(|round: u64, _: &RbmChains<f64>| {
                seen = round;
                Ok(())
            });
            let run = ebm_mpi::tempering(c, &pt, &ladder, &mut state, ROUNDS, Par::Rayon, observer)
                .unwrap();
            assert_eq!(seen, if c.is_root() { ROUNDS } else { 0 });
            run.map(|report| (report, state))
        });
        assert!(results[1..].iter().all(Option::is_none), "rank 0 gathers");
        let (sharded, state) = results.into_iter().next().unwrap().expect("rank 0 gathers");
        assert_eq!(sharded, report, "{ranks} ranks: report");
        assert_eq!(state, whole, "{ranks} ranks: state");
    }
}

/// PTT: distinct models on the rungs (each rank evaluates its states under both models of a
/// boundary pair), rung 0 refreshed by its own kernel; and more ranks than rungs.
#[test]
fn ptt_sharded_by_rung_equals_the_one_process_run() {
    let ladder = TrajectoryLadder::new((0..6).map(|t| rbm(0.6 * t as f64)).collect()).unwrap();
    let init = chains(6);
    for schedule in [
        SwapSchedule::Sweep,
        SwapSchedule::DeterministicEvenOdd,
        SwapSchedule::StochasticEvenOdd,
        SwapSchedule::Lifted,
    ] {
        let pt = ParallelTempering::new(Gibbs::new(1), schedule).with_rung0_kernel(Gibbs::new(3));
        let whole = whole(&pt, &ladder, &init);
        assert_mixes(&whole, schedule, &format!("PTT {schedule:?}"));
        for ranks in 2..=4 {
            let what = format!("PTT {schedule:?} on {ranks} ranks");
            assert_same(&sharded(ranks, &pt, &ladder, &init), &whole, &what);
        }
    }
    let short = TrajectoryLadder::new((0..3).map(|t| rbm(t as f64)).collect()).unwrap();
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::Sweep);
    let whole = whole(&pt, &short, &chains(3));
    assert_same(
        &sharded(4, &pt, &short, &chains(3)),
        &whole,
        "3 rungs on 4 ranks",
    );
}

#[test]
fn rung_blocks_tile_the_ladder_from_the_top() {
    for n_rungs in [1, 2, 5, 7, 100] {
        for ranks in 1..=6 {
            let mut top = n_rungs;
            for rank in 0..ranks {
                let r = rung_range(n_rungs, ranks, rank);
                assert_eq!(r.end, top, "{n_rungs} rungs, {ranks} ranks, rank {rank}");
                let sizes = (n_rungs / ranks, n_rungs.div_ceil(ranks));
                assert!(r.len() == sizes.0 || r.len() == sizes.1);
                top = r.start;
            }
            assert_eq!(top, 0);
        }
    }
}

/// A link that corrupts the energies a block sends down: \\(E_{k+1}\\) replaced by \\(E_k\\), the
/// energy at the wrong rung. Each boundary exchange sends `.2` messages down, the energies
/// first: then the labels of the replicas leaving, and for a stack the lent streams back.
struct WrongRung<'a>(RungNeighbours<'a, Threads>, usize, usize);

impl<S: ShardChains> RungLink<S> for WrongRung<'_> {
    fn send(&mut self, to: Side, words: &[u64]) {
        let mut words = words.to_vec();
        if to == Side::Below {
            if self.1.is_multiple_of(self.2) {
                for i in 0..SYSTEMS {
                    words[2 * i + 1] = words[2 * i];
                }
            }
            self.1 += 1;
        }
        RungLink::<S>::send(&mut self.0, to, &words);
    }

    fn receive(&mut self, from: Side) -> Vec<u64> {
        RungLink::<S>::receive(&mut self.0, from)
    }

    fn swap_chains(&mut self, with: Side, x: &mut S, which: &[usize]) {
        self.0.swap_chains(with, x, which);
    }
}

/// Negative controls, on 2 ranks (rungs 4..7 on rank 0, 0..4 on rank 1): the target block's
/// chains after the run differ from the one-process run's when the boundary energies are
/// those of the wrong rung, or when a rank draws from streams of its own (seeded by its rank)
/// instead of its chains' streams; the same loop with neither fault reproduces them, so the
/// comparison can fail.
#[test]
fn wrong_boundary_energies_or_rank_local_streams_break_the_identity() {
    let ladder = TemperatureLadder::geometric(rbm(3.0), 0.2, 7).unwrap();
    let init = chains(7);
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let whole = whole(&pt, &ladder, &init);
    let top = rung_range(7, 2, 0);
    let target_block = |wrong_rung: bool, local_seed: bool| {
        let blocks = on_all_ranks(2, |c| {
            let held = rung_range(7, 2, c.rank());
            let seed = if local_seed {
                SEED + c.rank() as u64
            } else {
                SEED
            };
            let mut s =
                PtState::for_rungs(init[held.clone()].to_vec(), seed, held.start, 7).unwrap();
            let mut link = WrongRung(RungNeighbours::new(c), 0, 2);
            for _ in 0..ROUNDS {
                if wrong_rung {
                    pt.step_linked(&ladder, &mut s, &mut link, Par::Rayon);
                } else {
                    pt.step_linked(&ladder, &mut s, &mut link.0, Par::Rayon);
                }
            }
            s.into_rungs()
        });
        blocks.into_iter().next().unwrap()
    };
    assert_eq!(target_block(false, false), whole.state.rungs()[top.clone()]);
    assert_ne!(target_block(true, false), whole.state.rungs()[top.clone()]);
    assert_ne!(target_block(false, true), whole.state.rungs()[top]);
}

/// A stack of five Bernoulli RBMs, 10 -> 7 -> 5 -> 4 -> 3 -> 2: the common RBM at the bottom,
/// then narrower RBMs with deterministic fields and weights.
fn stack() -> Stack<Bernoulli, Bernoulli> {
    let upper = |nv: usize, nh: usize| {
        Rbm::new(
            Bernoulli::new((0..nv).map(|i| 0.1 - 0.07 * i as f64).collect()),
            Bernoulli::new((0..nh).map(|j| 0.05 * j as f64 - 0.1).collect()),
            DMatrix::from_fn(nv, nh, |i, j| ((2 * i + 3 * j) % 5) as f64 / 5.0 - 0.3),
        )
        .unwrap()
    };
    Stack::new(
        rbm(1.5),
        vec![upper(7, 5), upper(5, 4), upper(4, 3), upper(3, 2)],
    )
    .unwrap()
}

/// The one-process stacked-tempering run ([`StackedTempering::step`]) from its initial state
/// ([`StackedTempering::init`], whose bottom-to-top pass draws from the target's streams).
fn stacked_whole(
    st: &StackedTempering,
    ladder: &StackLadder<Bernoulli, Bernoulli>,
) -> (PtState<RbmChains<f64>>, RungRun<RbmChains<f64>>) {
    let bottom = DMatrix::from_fn(10, SYSTEMS, |i, j| ((i * j + i) % 3 == 0) as u8 as f64);
    let start = st.init(ladder, &bottom, SEED, Par::Rayon).unwrap();
    let whole = recorded(start.clone(), |s| st.step(ladder, s, Par::Rayon).exchanges);
    (start, whole)
}

/// `pt` on a stack sharded by rung over `ranks` threads from the whole state `start`.
fn stacked_sharded<L, K>(
    ranks: usize,
    pt: &ParallelTempering<K>,
    ladder: &L,
    start: &PtState<RbmChains<f64>>,
) -> RungRun<RbmChains<f64>>
where
    L: SplitExchange<State = RbmChains<f64>, Part = DMatrix<f64>>,
    K: Kernel<L::RungModel> + Sync,
{
    on_rank_0(ranks, |c, observe| {
        let par = Par::Rayon;
        tempering_by_rung_from(c, pt, ladder, start, ROUNDS, INDEX_SYSTEMS, par, observe)
    })
}

/// Stacked tempering sharded by rung: the exchange of \\(h_n\\) with \\(v_{n+1}\\) across a
/// boundary is decided from the energies of the two moving layers, moves only those layers,
/// and its refresh draws from the lower rung's streams on both sides. Five RBMs: blocks of 5;
/// 3 + 2; 2 + 2 + 1; 2 + 1 + 1 + 1 on 1 to 4 ranks; every schedule.
#[test]
fn stacked_tempering_sharded_by_rung_equals_the_one_process_run_for_every_schedule() {
    let ladder = StackLadder::new(stack());
    for schedule in SwapSchedule::ALL {
        let st = StackedTempering::new(schedule);
        let (start, whole) = stacked_whole(&st, &ladder);
        assert_mixes(&whole, schedule, &format!("ST {schedule:?}"));
        for ranks in 1..=4 {
            let what = format!("ST {schedule:?} on {ranks} ranks");
            let run = stacked_sharded(ranks, &st.engine(&ladder), &ladder, &start);
            assert_same(&run, &whole, &what);
        }
    }
}

/// The stack's exchange with its refresh hidden from the PT loop ([`Exchange::refreshes`]
/// false): the blocks no longer lend the lower rung's streams to refresh the upper rung of a
/// boundary pair (nor refresh it at all), as a sharded run that forgot the refresh would do.
struct Unrefreshed<'a>(&'a StackLadder<Bernoulli, Bernoulli>);

impl Exchange for Unrefreshed<'_> {
    type State = RbmChains<f64>;
    type RungModel = StackedRbm<Bernoulli, Bernoulli>;

    fn n_exchange_rungs(&self) -> usize {
        self.0.n_exchange_rungs()
    }

    fn explored(&self, k: usize) -> Rung<'_, Self::RungModel> {
        self.0.explored(k)
    }

    fn log_accept(&self, k: usize, lo: &Self::State, hi: &Self::State, out: &mut [f64], par: Par) {
        self.0.log_accept(k, lo, hi, out, par);
    }

    fn exchange<R: Rng + Send>(
        &self,
        k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        rngs: &mut [R],
        par: Par,
    ) {
        self.0.exchange(k, lo, hi, accept, rngs, par);
    }
}

impl SplitExchange for Unrefreshed<'_> {
    type Part = DMatrix<f64>;

    fn pair_energies(&self, k: usize, x: &Self::State, upper: bool, out: &mut [f64], par: Par) {
        self.0.pair_energies(k, x, upper, out, par);
    }

    fn log_accept_from_energies(&self, k: usize, lo: &[f64], hi: &[f64], out: &mut [f64]) {
        self.0.log_accept_from_energies(k, lo, hi, out);
    }

    fn part_mut<'a>(&self, k: usize, x: &'a mut Self::State, upper: bool) -> &'a mut DMatrix<f64> {
        self.0.part_mut(k, x, upper)
    }
}

/// Negative controls for stacked tempering on 2 ranks (DEO; rungs 3..5 on rank 0, 0..3 on
/// rank 1, so pair (2, 3) crosses): the gathered run differs from the one-process run when the
/// boundary energies are those of the wrong rung, or when the boundary exchange skips its
/// refresh; the same comparison without a fault holds (above), so it can fail.
#[test]
fn stacked_boundary_without_refresh_or_with_wrong_energies_breaks_the_identity() {
    let ladder = StackLadder::new(stack());
    let st = StackedTempering::new(SwapSchedule::DeterministicEvenOdd);
    let (start, whole) = stacked_whole(&st, &ladder);
    let pt = st.engine(&ladder);
    let unrefreshed = stacked_sharded(2, &pt, &Unrefreshed(&ladder), &start);
    assert_ne!(
        unrefreshed.state.rungs(),
        whole.state.rungs(),
        "no refresh at the boundary"
    );
    let wrong = on_all_ranks(2, |c| {
        let held = rung_range(5, 2, c.rank());
        let mut s = start.block(held);
        let mut link = WrongRung(RungNeighbours::new(c), 0, 3);
        for _ in 0..ROUNDS {
            pt.step_linked(&ladder, &mut s, &mut link, Par::Rayon);
        }
        s.into_rungs()
    });
    assert_ne!(
        wrong[0],
        whole.state.rungs()[3..5],
        "wrong boundary energies"
    );
}

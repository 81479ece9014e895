//! Sharded runs equal the one-process run bit for bit, for any number of ranks (here threads;
//! `crates/ebm-mpi-transport/tests/mpirun.rs` runs the same drivers over MPI processes).

mod common;

use common::{on_all_ranks, rbm};
use ebm_core::{ChainState, Par, RngStreams};
use ebm_models::{Rbm, RbmChains, Spin};
use ebm_mpi::{
    Collective, PtOutcome, ShardChains, Threads, chain_range, parallel_tempering, sample,
};
use ebm_samplers::tempering::{
    Exchange, ParallelTempering, PtState, SwapSchedule, TemperatureLadder, TrajectoryLadder,
};
use ebm_samplers::{Gibbs, run};
use nalgebra::DMatrix;

/// 300 chains: blocks of 128, 128 and 44, so shards differ in size and one is partial.
const CHAINS: usize = 300;

/// Runs `f` on every rank of a group of `ranks` threads; returns rank 0's result.
fn on_ranks<T: Send>(ranks: usize, f: impl Fn(&Threads) -> Option<T> + Sync) -> T {
    let mut results = on_all_ranks(ranks, f);
    assert!(
        results[1..].iter().all(Option::is_none),
        "only rank 0 gathers"
    );
    results.swap_remove(0).expect("rank 0 gathers")
}

#[test]
fn sharded_gibbs_equals_the_one_process_run() {
    let rbm = rbm(2.0);
    let init = rbm.default_chains(CHAINS);
    let mut whole = ChainState::new(init.clone(), 17);
    run(&rbm, &Gibbs::new(2), 0.9, &mut whole, 25, Par::Rayon, ()).unwrap();
    for ranks in 1..=4 {
        let gathered = on_ranks(ranks, |c| {
            sample(c, &rbm, &Gibbs::new(2), 0.9, &init, 17, 25, Par::Rayon).unwrap()
        });
        assert_eq!(gathered, whole.chains, "{ranks} ranks");
    }
}

#[test]
fn sharded_gibbs_on_spins_equals_the_one_process_run() {
    let w = DMatrix::from_fn(6, 5, |i, j| 0.3 * (i as f64 - 2.0 * j as f64 + 1.0) / 3.0);
    let rbm = Rbm::new(Spin::new(vec![0.1; 6]), Spin::new(vec![-0.2; 5]), w).unwrap();
    let init = rbm.default_chains(CHAINS);
    let mut whole = ChainState::new(init.clone(), 3);
    run(&rbm, &Gibbs::new(1), 1.0, &mut whole, 30, Par::Seq, ()).unwrap();
    let gathered = on_ranks(3, |c| {
        sample(c, &rbm, &Gibbs::new(1), 1.0, &init, 3, 30, Par::Rayon).unwrap()
    });
    assert_eq!(gathered, whole.chains);
}

/// The one-process PT run, in the shape the sharded driver returns.
fn pt_whole<L: Exchange<State = RbmChains<f64>>>(
    pt: &ParallelTempering<Gibbs>,
    ladder: &L,
    init: &[RbmChains<f64>],
    rounds: u64,
) -> PtOutcome<RbmChains<f64>>
where
    Gibbs: ebm_core::Kernel<L::RungModel>,
{
    let mut state = PtState::new(init.to_vec(), 5).unwrap();
    let pairs = init.len() - 1;
    let mut o = PtOutcome {
        rungs: Vec::new(),
        replica: Vec::new(),
        rounds,
        round_trips: 0,
        proposed: vec![0; pairs],
        accepted: vec![0; pairs],
        acceptance_probability_sum: vec![0.0; pairs],
    };
    for _ in 0..rounds {
        let info = pt.step(ladder, &mut state, Par::Rayon);
        for k in 0..pairs {
            o.proposed[k] += info.proposed[k];
            o.accepted[k] += info.accepted[k];
            o.acceptance_probability_sum[k] += info.acceptance_probability_sum[k];
        }
    }
    o.round_trips = state.round_trips;
    o.rungs = state.rungs().to_vec();
    o.replica = state.replica;
    o
}

fn assert_same_run(
    sharded: &PtOutcome<RbmChains<f64>>,
    whole: &PtOutcome<RbmChains<f64>>,
    what: &str,
) {
    assert_eq!(sharded.rungs, whole.rungs, "{what}: chains");
    assert_eq!(sharded.replica, whole.replica, "{what}: replica labels");
    assert_eq!(sharded.proposed, whole.proposed, "{what}: proposals");
    assert_eq!(sharded.accepted, whole.accepted, "{what}: acceptances");
    assert_eq!(
        sharded.round_trips, whole.round_trips,
        "{what}: round trips"
    );
    assert!(
        whole.accepted.iter().all(|&a| a > 0),
        "{what}: exchanges happened"
    );
    for (a, b) in sharded
        .acceptance_probability_sum
        .iter()
        .zip(&whole.acceptance_probability_sum)
    {
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{what}: {a} against {b}");
    }
}

#[test]
fn sharded_pt_equals_the_one_process_run_for_every_schedule() {
    let ladder = TemperatureLadder::geometric(rbm(3.0), 0.2, 5).unwrap();
    let init = vec![ladder_model_chains(); 5];
    for schedule in SwapSchedule::ALL {
        let pt = ParallelTempering::new(Gibbs::new(1), schedule);
        let whole = pt_whole(&pt, &ladder, &init, 40);
        assert!(
            whole.round_trips > 0,
            "{schedule:?}: the ladder communicates"
        );
        for ranks in [2, 3] {
            let sharded = on_ranks(ranks, |c| {
                parallel_tempering(c, &pt, &ladder, &init, 5, 40, Par::Rayon).unwrap()
            });
            assert_same_run(&sharded, &whole, &format!("{schedule:?} on {ranks} ranks"));
        }
    }
}

fn ladder_model_chains() -> RbmChains<f64> {
    rbm(3.0).default_chains(CHAINS)
}

#[test]
fn sharded_trajectory_tempering_equals_the_one_process_run() {
    let ladder = TrajectoryLadder::new((1..=4).map(|t| rbm(t as f64)).collect()).unwrap();
    let init = vec![ladder_model_chains(); 4];
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::Sweep);
    let whole = pt_whole(&pt, &ladder, &init, 30);
    let sharded = on_ranks(4, |c| {
        parallel_tempering(c, &pt, &ladder, &init, 5, 30, Par::Seq).unwrap()
    });
    assert_same_run(&sharded, &whole, "PTT on 4 ranks");
}

/// Negative control: a shard seeded as a run of its own (streams `0..len` instead of its
/// chains' own streams) does not reproduce the run, so the identity above can fail. And an
/// observation: a cut inside a block, with the chains' own streams, also reproduces it here,
/// because these kernels' arithmetic for one chain does not depend on the other chains of its
/// block; [`chain_range`] still cuts at whole blocks, the unit in which kernels may compute.
#[test]
fn shards_seeded_on_their_own_do_not_reproduce_the_run() {
    let rbm = rbm(2.0);
    let init = rbm.default_chains(CHAINS);
    let mut whole = ChainState::new(init.clone(), 17);
    run(&rbm, &Gibbs::new(1), 1.0, &mut whole, 10, Par::Seq, ()).unwrap();
    let parts: Vec<RbmChains<f64>> = (0..2)
        .map(|r| {
            let range = chain_range(CHAINS, 2, r);
            let mut shard = ChainState::new(init.select(range), 17);
            run(&rbm, &Gibbs::new(1), 1.0, &mut shard, 10, Par::Seq, ()).unwrap();
            shard.chains
        })
        .collect();
    let naive = RbmChains::concat(&init, &parts);
    assert_eq!(
        naive.visible.columns(0, 128),
        whole.chains.visible.columns(0, 128)
    );
    assert_ne!(naive, whole.chains, "shard 1 reused streams 0.. of shard 0");

    let uneven = [0..100, 100..CHAINS];
    let parts: Vec<RbmChains<f64>> = uneven
        .iter()
        .map(|range| {
            let mut shard = ChainState {
                chains: init.select(range.clone()),
                rngs: RngStreams::select(17, range.clone()),
                steps: 0,
            };
            run(&rbm, &Gibbs::new(1), 1.0, &mut shard, 10, Par::Seq, ()).unwrap();
            shard.chains
        })
        .collect();
    assert_eq!(RbmChains::concat(&init, &parts), whole.chains);
}

#[test]
fn sharded_ais_equals_the_one_process_run() {
    use ebm_estimators::{Ais, Start};
    let target = rbm(2.5);
    let ladder =
        TemperatureLadder::new(target.clone(), (0..=12).map(|k| k as f64 / 12.0).collect())
            .unwrap();
    let start = Start::uniform(&target, CHAINS, 31, Par::Rayon).unwrap();
    let annealer = Ais::new(Gibbs::new(1));
    let whole = ebm_estimators::ais(&annealer, &ladder, start.clone(), Par::Rayon);
    assert!(whole.estimate.log_z.is_finite());
    for ranks in [1, 2, 4] {
        let sharded = on_ranks(ranks, |c| {
            ebm_mpi::ais(c, &annealer, &ladder, &start, Par::Rayon).unwrap()
        });
        assert_eq!(sharded.estimate, whole.estimate, "{ranks} ranks: estimate");
        assert_eq!(sharded.profile, whole.profile, "{ranks} ranks: profile");
        assert!(
            sharded.population == whole.population,
            "{ranks} ranks: population"
        );
    }
    // Resampling couples chains across shards: refused on every rank.
    let resampling = Ais::new(Gibbs::new(1)).with_resampling(0.5).unwrap();
    let refused = std::thread::scope(|s| {
        let handles: Vec<_> = Threads::group(2)
            .into_iter()
            .map(|c| {
                let (resampling, ladder, start) = (&resampling, &ladder, &start);
                s.spawn(move || ebm_mpi::ais(&c, resampling, ladder, start, Par::Seq).is_err())
            })
            .collect();
        handles.into_iter().all(|h| h.join().unwrap())
    });
    assert!(refused);
}

/// A path walked stretch by stretch (as `ebm loglik ais` walks long reference paths): each
/// rank keeps its shard between stretches ([`ebm_mpi::ais_on_shard`]), and every stretch's
/// run equals that of the whole population.
#[test]
fn sharded_ais_stretch_by_stretch_equals_the_one_process_run() {
    use ebm_estimators::{Ais, LogZEstimate, Start};
    let models: Vec<_> = (0..=16).map(|k| rbm(2.5 * k as f64 / 16.0)).collect();
    let stretches = [0..=6, 6..=11, 11..=16];
    let ladder = |r: &std::ops::RangeInclusive<usize>| {
        TrajectoryLadder::new(models[r.clone()].to_vec()).unwrap()
    };
    let start = Start::enumerated(&models[0], 1.0, CHAINS, 5, Par::Rayon).unwrap();
    let annealer = Ais::new(Gibbs::new(1));
    let mut population = start.population.clone();
    let mut whole = Vec::new();
    for r in &stretches {
        let from = LogZEstimate::exact(
            whole
                .last()
                .map_or(start.log_z.log_z, |e: &LogZEstimate| e.log_z),
            start.log_z.method.clone(),
        );
        let begin = Start {
            population,
            log_z: from,
        };
        let run = ebm_estimators::ais(&annealer, &ladder(r), begin, Par::Rayon);
        population = run.population;
        whole.push(run.estimate);
    }
    for ranks in [1, 2, 3] {
        let sharded = on_ranks(ranks, |c| {
            let mut local = ebm_mpi::shard_population(c, &start.population).unwrap();
            let mut estimates: Option<Vec<LogZEstimate>> = c.is_root().then(Vec::new);
            for r in &stretches {
                let at = estimates
                    .as_ref()
                    .and_then(|e| e.last())
                    .map_or(start.log_z.log_z, |e| e.log_z);
                let begin = LogZEstimate::exact(at, start.log_z.method.clone());
                let run =
                    ebm_mpi::ais_on_shard(c, &annealer, &ladder(r), &mut local, begin, Par::Rayon);
                let run = run.unwrap();
                assert_eq!(run.is_some(), c.is_root());
                if let (Some(e), Some(run)) = (estimates.as_mut(), run) {
                    e.push(run.estimate);
                }
            }
            estimates
        });
        assert_eq!(sharded, whole, "{ranks} ranks");
    }
}

#[test]
fn sharded_reverse_ais_equals_the_one_process_run() {
    use ebm_estimators::{Ais, Start};
    let target = rbm(2.5);
    let ladder =
        TemperatureLadder::new(target.clone(), (0..=12).map(|k| k as f64 / 12.0).collect())
            .unwrap();
    let log_z0 = Start::uniform(&target, 2, 0, Par::Seq).unwrap().log_z;
    let draws = Start::enumerated(&target, 1.0, CHAINS, 8, Par::Rayon)
        .unwrap()
        .population;
    let annealer = Ais::new(Gibbs::new(1));
    let whole = ebm_estimators::reverse_ais(&annealer, &ladder, draws.clone(), &log_z0, Par::Rayon);
    assert!(whole.estimate.log_z.is_finite());
    for ranks in [1, 2, 4] {
        let sharded = on_ranks(ranks, |c| {
            ebm_mpi::reverse_ais(c, &annealer, &ladder, &draws, &log_z0, Par::Rayon).unwrap()
        });
        assert_eq!(sharded.estimate, whole.estimate, "{ranks} ranks: estimate");
        assert!(
            sharded.population == whole.population,
            "{ranks} ranks: population"
        );
    }
    // Negative control: the same draws annealed with other streams give another estimate.
    let (chains, weights) = (draws.chains.clone(), draws.log_weights.clone());
    let reseeded = draws.with_chains(chains, weights, RngStreams::new(9, CHAINS), draws.steps());
    let other =
        ebm_estimators::reverse_ais(&annealer, &ladder, reseeded.unwrap(), &log_z0, Par::Rayon);
    assert_ne!(other.estimate.log_z, whole.estimate.log_z);
}

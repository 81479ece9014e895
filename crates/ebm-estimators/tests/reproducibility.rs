//! Every estimator gives bit-identical results for `Par::Seq` and `Par::Rayon` (chain `i`
//! consumes only stream `i`; parallel work is split into chunks independent of the thread
//! count). 300 chains span three chunks of 128.

mod common;

use common::*;
use ebm_core::Par;
use ebm_estimators::{Ais, OnlineTrajectoryAis, PairAccumulator, Start, ais, reverse_ais};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{ParallelTempering, PtState, SwapSchedule, TemperatureLadder};

const CHAINS: usize = 300;

#[test]
fn forward_and_reverse_ais_are_thread_count_invariant() {
    let rbm = clustered_rbm(16, 20, 3, 1.5, 2);
    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(40)).unwrap();
    let smc = Ais::new(Gibbs::new(1)).with_resampling(0.7).unwrap();
    let runs: Vec<_> = [Par::Seq, Par::Rayon]
        .into_iter()
        .map(|par| {
            let fwd = ais(
                &smc,
                &ladder,
                Start::uniform(&rbm, CHAINS, 1, par).unwrap(),
                par,
            );
            let target = Start::enumerated(&rbm, 1.0, CHAINS, 2, par).unwrap();
            let z0 = Start::uniform(&rbm, 2, 0, par).unwrap().log_z;
            let rev = reverse_ais(&smc, &ladder, target.population, &z0, par);
            (fwd, rev)
        })
        .collect();
    assert_eq!(runs[0].0.estimate, runs[1].0.estimate);
    assert_eq!(runs[0].0.profile, runs[1].0.profile);
    assert_eq!(runs[0].0.population, runs[1].0.population);
    assert_eq!(runs[0].1.estimate, runs[1].1.estimate);
    assert_eq!(runs[0].1.population, runs[1].1.population);
}

#[test]
fn online_trajectory_ais_is_thread_count_invariant() {
    let target = clustered_rbm(16, 20, 3, 1.5, 2);
    let start_model = independent_start(&target, &prototype_means(&prototypes(16, 3, 2)));
    let models = trajectory(&start_model, &target, 3, 100);
    let runs: Vec<_> = [Par::Seq, Par::Rayon]
        .into_iter()
        .map(|par| {
            let start = Start::independent(&start_model, 1.0, CHAINS, 3, par).unwrap();
            let mut online =
                OnlineTrajectoryAis::new(start.population.chains, 4, start.log_z.log_z, 0.8);
            let infos: Vec<_> = (1..models.len())
                .map(|j| online.advance(&models[j - 1], &models[j], &Gibbs::new(1), par))
                .collect();
            (online, infos)
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn pt_estimators_are_thread_count_invariant() {
    let rbm = clustered_rbm(16, 20, 3, 1.5, 2);
    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(9)).unwrap();
    let z0 = Start::uniform(&rbm, 2, 0, Par::Seq).unwrap().log_z;
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let runs: Vec<_> = [Par::Seq, Par::Rayon]
        .into_iter()
        .map(|par| {
            let rungs = (0..10).map(|_| rbm.default_chains(CHAINS)).collect();
            let mut state = PtState::new(rungs, 5).unwrap();
            let mut acc = PairAccumulator::new(10).unwrap();
            for _ in 0..50 {
                pt.step(&ladder, &mut state, par);
                acc.record_pt(&ladder, &state, par).unwrap();
            }
            (acc.bar(&z0).unwrap(), acc.exponential_average(&z0).unwrap())
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}

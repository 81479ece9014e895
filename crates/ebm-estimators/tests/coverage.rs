//! Do the error bars mean what they say? Over 40 independent runs (fixed seeds), the interval
//! estimate +- 2 standard errors must contain the exact log Z about 95.4% of the time and
//! +- 1 standard error about 68.3% of the time.
//!
//! Bounds (binomial, n = 40): at 2 sigma, P(X <= 32 | p = 0.9545) = 4e-4, so we require at least
//! 33 covering runs (error bars too small fail this); at 1 sigma, P(X <= 18 | p = 0.6827) =
//! 2e-3 and P(X >= 36) = 1.3e-3, so we require 19 to 35 (error bars too large fail the upper
//! bound: with standard errors twice too large about 38 runs would be covered at 1 sigma).

mod common;

use common::*;
use ebm_estimators::{
    Ais, LogZEstimate, OnlineTrajectoryAis, PairAccumulator, Start, ais, exact_log_partition,
};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{ParallelTempering, PtState, SwapSchedule, TemperatureLadder};

const RUNS: u64 = 40;

fn check_coverage(what: &str, estimates: &[LogZEstimate], exact: f64) {
    assert_eq!(estimates.len(), RUNS as usize);
    let within = |k: f64| estimates.iter().filter(|e| e.covers(exact, k)).count();
    let (one, two) = (within(1.0), within(2.0));
    eprintln!("{what}: {one}/40 within 1 se, {two}/40 within 2 se");
    assert!(
        two >= 33,
        "{what}: only {two}/40 runs within 2 standard errors"
    );
    assert!(
        (19..=35).contains(&one),
        "{what}: {one}/40 runs within 1 standard error (expected about 27)"
    );
}

#[test]
fn ais_error_bars_cover_the_truth() {
    let rbm = random_rbm(12, 20, 0.7, 1);
    let exact = exact_log_partition(&rbm, 1.0, PAR).unwrap().log_z;
    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(30)).unwrap();
    let estimates: Vec<_> = (0..RUNS)
        .map(|s| {
            let start = Start::uniform(&rbm, 200, 1000 + s, PAR).unwrap();
            ais(&Ais::new(Gibbs::new(1)), &ladder, start, PAR).estimate
        })
        .collect();
    check_coverage("AIS", &estimates, exact);
}

#[test]
fn online_trajectory_ais_error_bars_cover_the_truth() {
    let target = clustered_rbm(16, 20, 3, 1.5, 2);
    let start_model = independent_start(&target, &prototype_means(&prototypes(16, 3, 2)));
    let models = trajectory(&start_model, &target, 3, 300);
    let exact = exact_log_partition(&target, 1.0, PAR).unwrap().log_z;
    let estimates: Vec<_> = (0..RUNS)
        .map(|s| {
            let start = Start::independent(&start_model, 1.0, 200, 2000 + s, PAR).unwrap();
            let mut online =
                OnlineTrajectoryAis::new(start.population.chains, 3000 + s, start.log_z.log_z, 0.5);
            for j in 1..models.len() {
                online.advance(&models[j - 1], &models[j], &Gibbs::new(1), PAR);
            }
            online.estimate()
        })
        .collect();
    check_coverage("online Tr-AIS", &estimates, exact);
}

#[test]
fn bar_jackknife_error_bars_cover_the_truth() {
    let rbm = random_rbm(12, 20, 0.7, 1);
    let exact = exact_log_partition(&rbm, 1.0, PAR).unwrap().log_z;
    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(7)).unwrap();
    let z0 = Start::uniform(&rbm, 2, 0, PAR).unwrap().log_z;
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let estimates: Vec<_> = (0..RUNS)
        .map(|s| {
            let rungs = (0..8).map(|_| rbm.default_chains(16)).collect();
            let mut state = PtState::new(rungs, 4000 + s).unwrap();
            let mut acc = PairAccumulator::new(8).unwrap();
            for r in 0..250 {
                pt.step(&ladder, &mut state, PAR);
                if r >= 50 {
                    acc.record_pt(&ladder, &state, PAR).unwrap();
                }
            }
            acc.bar(&z0).unwrap().estimate
        })
        .collect();
    check_coverage("BAR", &estimates, exact);
}

//! log Z from parallel-tempering samples: BAR and the exponential average between neighbouring
//! rungs, chained from rung 0, on temperature and trajectory ladders (PT and PTT), against
//! exact values (Béreux et al., *Fast training and sampling of RBMs*).

mod common;

use common::*;
use ebm_core::{EnergyModel, Error, Par};
use ebm_estimators::{
    ErrorBar, LadderKind, Method, PairAccumulator, PttPlan, Start, Warning,
    bennett_acceptance_ratio, exact_log_partition, ptt_log_z,
};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Ladder, ParallelTempering, PtState, SwapSchedule, TemperatureLadder, TrajectoryLadder,
};

/// Runs DEO parallel tempering with one Gibbs sweep per rung and round, records every round
/// after `burn_in`, and returns the accumulator.
fn pt_run<L>(ladder: &L, chains: usize, burn_in: usize, rounds: usize, seed: u64) -> PairAccumulator
where
    L: Ladder<Model = Brbm> + ebm_estimators::DescribeLadder,
{
    let k = ladder.n_rungs();
    let rungs = (0..k)
        .map(|r| ladder.rung(r).model.new_state(chains))
        .collect();
    let mut state = PtState::new(rungs, seed).unwrap();
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let mut acc = PairAccumulator::new(k).unwrap();
    for r in 0..burn_in + rounds {
        pt.step(ladder, &mut state, PAR);
        if r >= burn_in {
            acc.record_pt(ladder, &state, PAR).unwrap();
        }
    }
    acc
}

/// PT on 20 temperatures of the clustered model (rung 0 at beta = 0, which one Gibbs sweep
/// samples exactly): BAR and the exponential average of every rung against exact log Z_beta.
#[test]
fn bar_and_exponential_average_from_temperature_pt_are_accurate() {
    let rbm = clustered_rbm(16, 20, 3, 1.5, 2);
    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(19)).unwrap();
    let acc = pt_run(&ladder, 64, 100, 400, 1);
    assert_eq!(acc.rounds(), 400);
    let z0 = Start::uniform(&rbm, 2, 0, PAR).unwrap().log_z;
    let bar = acc.bar(&z0).unwrap();
    let exp = acc.exponential_average(&z0).unwrap();
    for est in [&bar, &exp] {
        for (k, r) in est.profile.iter().enumerate() {
            let exact = exact_log_partition(&rbm, ladder.betas()[k], PAR)
                .unwrap()
                .log_z;
            assert!(
                (r.log_z - exact).abs() <= 5.0 * r.std_err + 1e-10 && r.std_err < 0.1,
                "{:?} rung {k}: {} +- {} vs {exact}",
                est.estimate.method,
                r.log_z,
                r.std_err
            );
        }
    }
    let exact = exact_log_partition(&rbm, 1.0, PAR).unwrap().log_z;
    // The negative control of the overlap check: neighbouring rungs of this fine ladder overlap.
    assert!(bar.pairs.iter().all(|p| p.overlap > 0.1), "{:?}", bar.pairs);
    assert!(
        !bar.estimate
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::PoorOverlap { .. })),
        "{:?}",
        bar.estimate.warnings
    );
    assert_accurate(&bar.estimate, exact, 0.1, "BAR");
    assert_accurate(&exp.estimate, exact, 0.1, "exponential average");
    assert_eq!(
        bar.estimate.method,
        Method::BennettAcceptanceRatio {
            ladder: LadderKind::Temperature {
                beta_min: 0.0,
                beta_max: 1.0,
            },
            n_rungs: 20,
            rounds: 400,
        }
    );
    assert_eq!(bar.estimate.error_bar, ErrorBar::Jackknife { groups: 16 });
    assert_eq!(bar.estimate.n_samples, 400 * 64);
    assert_eq!(bar.estimate.kernel_steps, 500 * 20 * 64);
    assert_eq!(bar.pairs.len(), 19);
    // The exponential average uses one side of each pair only.
    assert!(bar.estimate.ess > exp.estimate.ess);
}

/// PTT: PT along 12 checkpoints of the training-like trajectory (rung 0 is the independent-site
/// start, which one Gibbs sweep samples exactly): the BAR profile matches the exact log Z of
/// every checkpoint.
#[test]
fn bar_from_trajectory_tempering_matches_every_checkpoint() {
    let TrajectoryCase { models, ladder, z0 } = TrajectoryCase::new(1.5, 11);
    let acc = pt_run(&ladder, 64, 100, 400, 2);
    let bar = acc.bar(&z0).unwrap();
    for (k, r) in bar.profile.iter().enumerate() {
        let exact = exact_log_partition(&models[k], 1.0, PAR).unwrap().log_z;
        assert!(
            (r.log_z - exact).abs() <= 5.0 * r.std_err + 1e-10 && r.std_err < 0.1,
            "checkpoint {k}: {} +- {} vs {exact}",
            r.log_z,
            r.std_err
        );
    }
}

/// BAR straight from beta = 0 to beta = 1 of a random 40 x 6 RBM (two rungs, no ladder
/// between): the laws hardly overlap (measured: 0.013), and the estimate says so
/// ([`Warning::PoorOverlap`] on pair 0).
#[test]
fn bar_across_a_gap_between_two_rungs_warns_of_poor_overlap() {
    let rbm = random_rbm(40, 6, 1.0, 3);
    let ladder = TemperatureLadder::new(rbm.clone(), vec![0.0, 1.0]).unwrap();
    let acc = pt_run(&ladder, 64, 50, 200, 3);
    let z0 = Start::uniform(&rbm, 2, 0, PAR).unwrap().log_z;
    let bar = acc.bar(&z0).unwrap();
    let overlap = bar.pairs[0].overlap;
    assert!(overlap < 0.03, "{overlap}");
    assert!(
        bar.estimate.warnings.contains(&Warning::PoorOverlap {
            pair: 0,
            overlap,
            threshold: 0.03
        }),
        "{:?}",
        bar.estimate.warnings
    );
}

/// BAR on independent exact draws of two laws (a random RBM at beta = 0.6 and 0.8), with its
/// asymptotic standard error.
#[test]
fn bar_on_independent_exact_draws() {
    let rbm = random_rbm(10, 6, 0.8, 3);
    let (b0, b1) = (0.6, 0.8);
    let x0 = Start::enumerated(&rbm, b0, 3000, 1, PAR)
        .unwrap()
        .population
        .chains;
    let x1 = Start::enumerated(&rbm, b1, 2000, 2, PAR)
        .unwrap()
        .population
        .chains;
    let energies = |x: &ebm_models::RbmChains<f64>, beta: f64| {
        let mut e = vec![0.0; x.visible.ncols()];
        rbm.energies(x, beta, &mut e, Par::Seq);
        e
    };
    let fwd: Vec<f64> = energies(&x0, b1)
        .iter()
        .zip(energies(&x0, b0))
        .map(|(a, b)| a - b)
        .collect();
    let rev: Vec<f64> = energies(&x1, b0)
        .iter()
        .zip(energies(&x1, b1))
        .map(|(a, b)| a - b)
        .collect();
    let p = bennett_acceptance_ratio(&fwd, &rev).unwrap();
    let exact = exact_log_partition(&rbm, b1, PAR).unwrap().log_z
        - exact_log_partition(&rbm, b0, PAR).unwrap().log_z;
    let z = (p.delta_log_z - exact) / p.std_err;
    assert!(
        z.abs() < 5.0 && p.std_err < 0.05,
        "{} +- {} vs {exact}",
        p.delta_log_z,
        p.std_err
    );
    assert!(p.forward_ess > 0.0 && p.forward_ess <= 3000.0);
}

#[test]
fn accumulator_rejects_mismatched_input() {
    let rbm = random_rbm(4, 3, 0.5, 4);
    let ladder = TemperatureLadder::new(rbm.clone(), vec![0.0, 0.5, 1.0]).unwrap();
    let mut acc = PairAccumulator::new(3).unwrap();
    let z0 = Start::uniform(&rbm, 2, 0, PAR).unwrap().log_z;
    assert!(matches!(acc.bar(&z0), Err(Error::InvalidParameter { .. })));
    let two = vec![rbm.new_state(4), rbm.new_state(4)];
    assert!(matches!(
        acc.record(&ladder, &two, PAR),
        Err(Error::ShapeMismatch { .. })
    ));
    let uneven = vec![rbm.new_state(4), rbm.new_state(4), rbm.new_state(5)];
    assert!(acc.record(&ladder, &uneven, PAR).is_err());
    let ok = vec![rbm.new_state(4), rbm.new_state(4), rbm.new_state(4)];
    acc.record(&ladder, &ok, PAR).unwrap();
    // One round of four chains: too few for a jackknife.
    assert!(acc.bar(&z0).is_err());
    acc.record(&ladder, &ok, PAR).unwrap();
    assert!(acc.bar(&z0).is_ok());
    let more = vec![rbm.new_state(5), rbm.new_state(5), rbm.new_state(5)];
    assert!(acc.record(&ladder, &more, PAR).is_err());
}

/// A training-like trajectory of `n` checkpoints (independent sites at the clusters' means,
/// then couplings growing towards a 16 x 20 RBM with 3 clusters of `strength`), its ladder,
/// and the exact log Z of its first checkpoint.
struct TrajectoryCase {
    models: Vec<Brbm>,
    ladder: TrajectoryLadder<Brbm>,
    z0: ebm_estimators::LogZEstimate,
}

impl TrajectoryCase {
    fn new(strength: f64, n: usize) -> Self {
        let target = clustered_rbm(16, 20, 3, strength, 2);
        let start = independent_start(&target, &prototype_means(&prototypes(16, 3, 2)));
        let models = trajectory(&start, &target, 3, n);
        let ladder = TrajectoryLadder::new(models.clone()).unwrap();
        let z0 = Start::independent(&start, 1.0, 2, 0, PAR).unwrap().log_z;
        Self { models, ladder, z0 }
    }

    /// A PT state of 64 systems, every rung at its default configuration, seed 2.
    fn fresh(&self) -> PtState<ebm_models::RbmChains<f64>> {
        let rungs = (0..self.models.len())
            .map(|r| self.ladder.rung(r).model.new_state(64))
            .collect();
        PtState::new(rungs, 2).unwrap()
    }
}

/// The PTT + BAR run API on a training-like trajectory towards weaker clusters (strength 0.7;
/// at 1.5 the index process of this ladder has tau_exp of about 700 rounds): its profile
/// matches the exact log Z of every checkpoint within 3 reported errors and its long fixed run raises no warning; the
/// same estimate as the hand-written loop (same rounds, same records); a run too short for its
/// index process is flagged (the negative control).
#[test]
fn ptt_log_z_matches_every_checkpoint_and_flags_short_runs() {
    let case = TrajectoryCase::new(0.7, 11);
    let (models, ladder, z0) = (&case.models, &case.ladder, &case.z0);
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let fresh = || case.fresh();
    let plan = PttPlan::fixed(2500, Some(500)).unwrap();
    let mut last = (0, 0);
    let run = ptt_log_z(&pt, ladder, &mut fresh(), z0, &plan, PAR, |d, p| {
        last = (d, p)
    })
    .unwrap();
    assert_eq!(last, (2500, 2500));
    assert_eq!(
        (run.burn_in, run.recorded, run.diagnostics.rounds),
        (500, 2000, 2500)
    );
    for (k, r) in run.ladder.profile.iter().enumerate() {
        let exact = exact_log_partition(&models[k], 1.0, PAR).unwrap().log_z;
        assert!(
            (r.log_z - exact).abs() <= 3.0 * r.std_err + 1e-10 && r.std_err < 0.1,
            "checkpoint {k}: {} +- {} vs {exact}",
            r.log_z,
            r.std_err
        );
    }
    assert!(
        run.ladder.estimate.warnings.is_empty(),
        "{:?} (tau_exp {:?}, tau_int {:?})",
        run.ladder.estimate.warnings,
        run.index_tau_exp,
        run.index_tau_int
    );
    // The same rounds by hand: the same BAR estimate.
    let mut state = fresh();
    let mut acc = PairAccumulator::new(models.len()).unwrap();
    for r in 0..2500 {
        pt.step(ladder, &mut state, PAR);
        if r >= 500 {
            acc.record_pt(ladder, &state, PAR).unwrap();
        }
    }
    let by_hand = acc.bar(z0).unwrap();
    assert_eq!(run.ladder.profile, by_hand.profile);
    assert_eq!(run.ladder.estimate.log_z, by_hand.estimate.log_z);

    // 70 recorded rounds: enough to measure the index process (tau_int about 10 rounds), far
    // fewer than the 100 tau_int the rule asks.
    let short = ptt_log_z(
        &pt,
        ladder,
        &mut fresh(),
        z0,
        &PttPlan::fixed(80, Some(10)).unwrap(),
        PAR,
        |_, _| {},
    )
    .unwrap();
    assert!(
        short
            .ladder
            .estimate
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::RunTooShort { recorded: 70, .. })),
        "{:?}",
        short.ladder.estimate.warnings
    );
}

/// The adaptive plan: on a trajectory towards stronger clusters (strength 1.0, 6 checkpoints:
/// tau_exp about 25 rounds, tau_int about 18) the default burn-in of 200 rounds is extended to
/// 20 tau_exp and the recording beyond its 1800 rounds to 100 tau_int; the planned total shown
/// to `progress` grows with them; and the estimate equals that of a fixed plan of the same
/// lengths (the extension changes how long the run is, not what it computes).
#[test]
fn ptt_log_z_extends_an_adaptive_plan_with_the_measured_index_process() {
    let case = TrajectoryCase::new(1.0, 6);
    let (models, ladder, z0) = (&case.models, &case.ladder, &case.z0);
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let fresh = || case.fresh();
    let plan = PttPlan::adaptive(models.len(), None);
    assert_eq!((plan.burn_in, plan.recorded), (200, 1800));
    let mut planned = Vec::new();
    let run = ptt_log_z(&pt, ladder, &mut fresh(), z0, &plan, PAR, |d, p| {
        planned.push((d, p))
    })
    .unwrap();
    assert!(
        run.burn_in > 200 && run.recorded > 1800,
        "{} + {}",
        run.burn_in,
        run.recorded
    );
    let total = run.burn_in + run.recorded;
    assert_eq!(run.diagnostics.rounds, total);
    assert_eq!(planned.len() as u64, total);
    assert_eq!(planned.first(), Some(&(1, 2000)));
    assert_eq!(planned.last(), Some(&(total, total)));
    let fixed = PttPlan::fixed(total, Some(run.burn_in)).unwrap();
    let same = ptt_log_z(&pt, ladder, &mut fresh(), z0, &fixed, PAR, |_, _| {}).unwrap();
    assert_eq!(same.ladder.profile, run.ladder.profile);
    assert_eq!(same.ladder.estimate.warnings, run.ladder.estimate.warnings);
    let last = models.last().unwrap();
    let exact = exact_log_partition(last, 1.0, PAR).unwrap().log_z;
    let z = &run.ladder.estimate;
    assert!(
        (z.log_z - exact).abs() <= 3.0 * z.std_err + 1e-10,
        "{} +- {} vs {exact}",
        z.log_z,
        z.std_err
    );
}

//! Trajectory AIS: offline over saved checkpoints and online during a (synthetic) training run,
//! against the exact log Z of every checkpoint; exact resumption of the online estimator
//! (Béreux et al., *Fast training and sampling of RBMs*).

mod common;

use common::*;
use ebm_core::Par;
use ebm_estimators::{
    Ais, LadderKind, Method, OnlineTrajectoryAis, Start, ais, exact_log_partition,
};
use ebm_models::RbmChains;
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::TrajectoryLadder;

/// The fixture: a trained-like clustered RBM (16 x 20) reached from an independent-site model
/// with the data frequencies as visible fields, along a path on which the three modes appear
/// one after the other.
fn path(n: usize) -> (Brbm, Vec<Brbm>) {
    let target = clustered_rbm(16, 20, 3, 1.5, 2);
    let start = independent_start(&target, &prototype_means(&prototypes(16, 3, 2)));
    let models = trajectory(&start, &target, 3, n);
    (start, models)
}

/// Offline Tr-AIS over 100 checkpoints with one Gibbs sweep per checkpoint: the profile
/// matches the exact log Z of every 10th checkpoint within 5 standard errors (and standard
/// errors below 0.1).
#[test]
fn offline_trajectory_ais_tracks_every_checkpoint() {
    let (start_model, models) = path(100);
    let ladder = TrajectoryLadder::new(models.clone()).unwrap();
    let start = Start::independent(&start_model, 1.0, 1000, 1, PAR).unwrap();
    let run = ais(&Ais::new(Gibbs::new(1)), &ladder, start, PAR);
    assert!(matches!(
        run.estimate.method,
        Method::Ais {
            ladder: LadderKind::Trajectory,
            n_rungs: 101,
            ..
        }
    ));
    for j in (0..=100).step_by(10) {
        let exact = exact_log_partition(&models[j], 1.0, PAR).unwrap().log_z;
        let r = run.profile[j];
        assert!(
            (r.log_z - exact).abs() <= 5.0 * r.std_err + 1e-10 && r.std_err < 0.1,
            "checkpoint {j}: {} +- {} vs exact {exact}",
            r.log_z,
            r.std_err
        );
    }
}

/// Online Tr-AIS along 1000 small updates (one Gibbs sweep each, resampling below a relative
/// ESS of 0.5): the running estimate matches the exact log Z of the current model at every
/// 100th update.
#[test]
fn online_trajectory_ais_tracks_the_training_run() {
    let (start_model, models) = path(1000);
    let start = Start::independent(&start_model, 1.0, 1000, 2, PAR).unwrap();
    let mut online = OnlineTrajectoryAis::new(start.population.chains, 3, start.log_z.log_z, 0.5);
    assert_eq!(online.estimate().log_z, start.log_z.log_z);
    let mut resampled = 0;
    for j in 1..models.len() {
        let info = online.advance(&models[j - 1], &models[j], &Gibbs::new(1), PAR);
        assert_eq!(info.update, j as u64);
        assert!(info.relative_ess > 0.0 && info.relative_ess <= 1.0);
        resampled += info.resampled as u64;
        if info.resampled {
            assert!(info.relative_ess < 0.5);
        }
        if j % 100 == 0 {
            let exact = exact_log_partition(&models[j], 1.0, PAR).unwrap().log_z;
            assert_accurate(&info.estimate, exact, 0.15, &format!("update {j}"));
            assert_eq!(info.estimate.kernel_steps, j as u64 * 1000);
        }
    }
    assert!(resampled > 0, "the test should exercise resampling");
    assert_eq!(
        online.estimate().method,
        Method::OnlineTrajectoryAis {
            updates: 1000,
            resample_below_ess: 0.5,
            resamplings: resampled,
        }
    );
}

/// A trainer checkpoint: serialising the estimator mid-run and resuming gives bit-identical
/// results (weights, chains, RNG streams, carried log Z), including resamplings after the
/// checkpoint.
#[test]
fn online_estimator_resumes_bit_identically() {
    let (start_model, models) = path(200);
    let start = Start::independent(&start_model, 1.0, 300, 4, PAR).unwrap();
    let mut online = OnlineTrajectoryAis::new(start.population.chains, 5, start.log_z.log_z, 0.9);
    for j in 1..=100 {
        online.advance(&models[j - 1], &models[j], &Gibbs::new(1), PAR);
    }
    let json = serde_json::to_string(&online).unwrap();
    let mut resumed: OnlineTrajectoryAis<RbmChains<f64>> = serde_json::from_str(&json).unwrap();
    assert_eq!(resumed, online);
    let before = online.estimate().method.clone();
    for j in 101..=200 {
        let a = online.advance(&models[j - 1], &models[j], &Gibbs::new(1), PAR);
        let b = resumed.advance(&models[j - 1], &models[j], &Gibbs::new(1), PAR);
        assert_eq!(a, b, "update {j}");
    }
    assert_eq!(resumed, online);
    let (
        Method::OnlineTrajectoryAis {
            resamplings: r0, ..
        },
        Method::OnlineTrajectoryAis {
            resamplings: r1, ..
        },
    ) = (before, online.estimate().method)
    else {
        unreachable!()
    };
    assert!(r1 > r0, "no resampling after the checkpoint");
}

#[test]
fn online_estimator_rejects_bad_arguments() {
    let (start_model, _) = path(1);
    let chains = || {
        Start::independent(&start_model, 1.0, 4, 0, Par::Seq)
            .unwrap()
            .population
            .chains
    };
    assert!(OnlineTrajectoryAis::try_new(chains(), 0, 1.0, 1.5).is_err());
    assert!(OnlineTrajectoryAis::try_new(chains(), 0, 1.0, -0.1).is_err());
    assert!(OnlineTrajectoryAis::try_new(chains(), 0, f64::NAN, 0.5).is_err());
    assert!(OnlineTrajectoryAis::try_new(chains(), 0, 1.0, 0.5).is_ok());
    let one = start_model.default_chains(1);
    assert!(OnlineTrajectoryAis::try_new(one, 0, 1.0, 0.5).is_err());
}

#[test]
#[should_panic(expected = "OnlineTrajectoryAis::new")]
fn online_estimator_new_panics_on_bad_threshold() {
    let (start_model, _) = path(1);
    let chains = Start::independent(&start_model, 1.0, 4, 0, Par::Seq)
        .unwrap()
        .population
        .chains;
    let _ = OnlineTrajectoryAis::new(chains, 0, 1.0, 2.0);
}

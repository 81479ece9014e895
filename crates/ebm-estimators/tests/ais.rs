//! Forward and reverse AIS along temperature, reference and concatenated ladders against exact
//! log Z, with the negative control of the wrong step order (Béreux et al., *Fast training and sampling of RBMs*;
//! the wrong order is that of a peer library).

mod common;

use common::*;
use ebm_core::{EnergyModel, Kernel, Par};
use ebm_estimators::{
    Ais, Annealer, Direction, ErrorBar, LadderKind, Method, Population, Start, TransitionInfo, ais,
    exact_log_partition, reverse_ais,
};
use ebm_models::{Bernoulli, Rbm};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{Concat, ReferenceLadder, Rung, TemperatureLadder, TrajectoryLadder};

/// Test-only variant with the peer bug: move with the NEW rung's kernel, then weight at the
/// moved state (the order of a peer library's AIS).
struct MoveThenWeight<K>(K);

impl<M: EnergyModel, K: Kernel<M>> Annealer<M> for MoveThenWeight<K> {
    fn transition(
        &self,
        from: Rung<'_, M>,
        to: Rung<'_, M>,
        population: &mut Population<M::State>,
        par: Par,
    ) -> TransitionInfo {
        population.advance_chains(&self.0, to, par);
        population.reweight(from, to, par);
        TransitionInfo {
            relative_ess: population.relative_ess(),
            resampled: false,
        }
    }
}

/// Moving with the PREVIOUS rung's kernel and then weighting is Neal's scheme with the kernels
/// shifted by one rung: exact, and accepted by the same test.
struct MovePreviousThenWeight<K>(K);

impl<M: EnergyModel, K: Kernel<M>> Annealer<M> for MovePreviousThenWeight<K> {
    fn transition(
        &self,
        from: Rung<'_, M>,
        to: Rung<'_, M>,
        population: &mut Population<M::State>,
        par: Par,
    ) -> TransitionInfo {
        population.advance_chains(&self.0, from, par);
        population.reweight(from, to, par);
        TransitionInfo {
            relative_ess: population.relative_ess(),
            resampled: false,
        }
    }
}

fn temperature_ais<A: Annealer<Brbm>>(
    annealer: &A,
    rbm: &Brbm,
    rungs: usize,
    chains: usize,
    seed: u64,
) -> ebm_estimators::AisRun<ebm_models::RbmChains<f64>> {
    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(rungs)).unwrap();
    let start = Start::uniform(rbm, chains, seed, PAR).unwrap();
    ais(annealer, &ladder, start, PAR)
}

/// Temperature AIS from the uniform law (beta = 0) on a random RBM and on a trained-like RBM
/// with strong clustered couplings (three sharp modes that Gibbs sampling does not connect at
/// beta = 1), both with 20 hidden units. Tolerance: within 5 standard errors, standard error
/// below 0.1.
#[test]
fn temperature_ais_is_accurate() {
    let gibbs = Ais::new(Gibbs::new(1));
    let random = random_rbm(12, 20, 0.7, 1);
    let exact = exact_log_partition(&random, 1.0, PAR).unwrap().log_z;
    let run = temperature_ais(&gibbs, &random, 100, 1000, 11);
    assert_accurate(&run.estimate, exact, 0.1, "random RBM");
    assert_eq!(
        run.estimate.method,
        Method::Ais {
            direction: Direction::Forward,
            ladder: LadderKind::Temperature {
                beta_min: 0.0,
                beta_max: 1.0,
            },
            n_rungs: 101,
            resample_below_ess: None,
            resamplings: 0,
        }
    );
    assert_eq!(run.estimate.kernel_steps, 100 * 1000);
    assert_eq!(
        run.estimate.error_bar,
        ErrorBar::LargerOfDeltaAndBootstrap { resamples: 200 }
    );
    assert!(run.estimate.is_trusted(), "{:?}", run.estimate.warnings);
    assert!(run.estimate.largest_weight_fraction.unwrap() < 0.01);
    assert_eq!(run.profile.len(), 101);
    assert!(run.estimate.relative_ess() > 0.5 && run.estimate.relative_ess() <= 1.0);

    let clustered = clustered_rbm(16, 20, 3, 1.5, 2);
    let exact = exact_log_partition(&clustered, 1.0, PAR).unwrap().log_z;
    let run = temperature_ais(&gibbs, &clustered, 300, 1000, 12);
    assert_accurate(&run.estimate, exact, 0.1, "clustered RBM");
}

/// The negative control: the peer's order (move with the new rung's kernel, then weight) is
/// biased upwards by about the sum over rungs of the chi-square divergences of neighbouring
/// laws; with 30 rungs and 2000 chains the same accuracy test rejects it decisively, while the
/// correct order and the shifted-kernel order pass.
#[test]
fn the_wrong_step_order_is_rejected() {
    for seed in [1, 21] {
        let rbm = random_rbm(12, 20, 0.7, seed);
        let exact = exact_log_partition(&rbm, 1.0, PAR).unwrap().log_z;
        let right = temperature_ais(&Ais::new(Gibbs::new(1)), &rbm, 30, 2000, 5);
        assert_accurate(&right.estimate, exact, 0.1, "Neal's order");
        let shifted = temperature_ais(&MovePreviousThenWeight(Gibbs::new(1)), &rbm, 30, 2000, 6);
        assert_accurate(
            &shifted.estimate,
            exact,
            0.1,
            "previous kernel, then weight",
        );
        let wrong = temperature_ais(&MoveThenWeight(Gibbs::new(1)), &rbm, 30, 2000, 5);
        let z = (wrong.estimate.log_z - exact) / wrong.estimate.std_err;
        eprintln!(
            "seed {seed}: right {:+.4} +- {:.4}, shifted {:+.4}, wrong {:+.4} (z = {z:.1})",
            right.estimate.log_z - exact,
            right.estimate.std_err,
            shifted.estimate.log_z - exact,
            wrong.estimate.log_z - exact
        );
        assert!(
            check_accuracy(&wrong.estimate, exact, 0.1).is_err() && z > 8.0,
            "the move-then-weight order was not rejected: z = {z}"
        );
    }
}

/// AIS with an independent-site reference whose visible fields are the "data frequencies"
/// (the mean of the prototypes), spec §2.5, on the clustered model.
#[test]
fn reference_ais_is_accurate() {
    let target = clustered_rbm(16, 20, 3, 1.5, 2);
    let reference = independent_start(&target, &prototype_means(&prototypes(16, 3, 2)));
    let exact = exact_log_partition(&target, 1.0, PAR).unwrap().log_z;
    let ladder = ReferenceLadder::new(&target, &reference, linear_betas(300)).unwrap();
    let start = Start::independent(&reference, 1.0, 1000, 3, PAR).unwrap();
    let run = ais(&Ais::new(Gibbs::new(1)), &ladder, start, PAR);
    assert_accurate(&run.estimate, exact, 0.1, "reference AIS");
    assert!(matches!(
        run.estimate.method,
        Method::Ais {
            ladder: LadderKind::Reference,
            ..
        }
    ));
}

/// A wider trained-like model with the full 20 hidden units, whose exact log Z needs the
/// enumeration of 2^20 hidden configurations; forward AIS from the uniform law and reverse AIS
/// from exact draws of the target (drawn through the same hidden enumeration).
#[test]
fn forward_and_reverse_ais_on_twenty_hidden_units() {
    let rbm = clustered_rbm(40, 20, 4, 1.0, 4);
    let exact = exact_log_partition(&rbm, 1.0, PAR).unwrap();
    assert!(matches!(
        exact.method,
        Method::Enumeration {
            configurations: 1_048_576,
            ..
        }
    ));
    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(300)).unwrap();
    let gibbs = Ais::new(Gibbs::new(1));
    let run = ais(
        &gibbs,
        &ladder,
        Start::uniform(&rbm, 500, 8, PAR).unwrap(),
        PAR,
    );
    assert_accurate(&run.estimate, exact.log_z, 0.15, "forward AIS, 40 x 20");
    let target = Start::enumerated(&rbm, 1.0, 500, 9, PAR).unwrap();
    let z0 = Start::uniform(&rbm, 2, 0, PAR).unwrap().log_z;
    let rev = reverse_ais(&gibbs, &ladder, target.population, &z0, PAR);
    assert_accurate(&rev.estimate, exact.log_z, 0.15, "reverse AIS, 40 x 20");
    assert!(matches!(
        rev.estimate.method,
        Method::Ais {
            direction: Direction::Reverse,
            ladder: LadderKind::Reversed(_),
            ..
        }
    ));
}

/// The stochastic sandwich: E[log Z_AIS] <= log Z <= E[log Z_reverse] (Jensen: both mean
/// weights are unbiased, for Z_K / Z_0 and Z_0 / Z_K). With 10 rungs and 20 chains per run on
/// the strongly clustered model the two biases are large; over 200 independent runs each mean
/// lies on its side of the truth by more than 4 standard errors of the mean. With 300 rungs and
/// 500 chains both are accurate.
#[test]
fn forward_and_reverse_ais_sandwich_log_z() {
    use ebm_estimators::SelectChains;
    let rbm = clustered_rbm(16, 20, 3, 2.0, 3);
    let exact = exact_log_partition(&rbm, 1.0, PAR).unwrap().log_z;
    let z0 = Start::uniform(&rbm, 2, 0, PAR).unwrap().log_z;
    let gibbs = Ais::new(Gibbs::new(1));
    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(10)).unwrap();
    let (runs, chains) = (200, 20);
    let exact_draws = Start::enumerated(&rbm, 1.0, runs * chains, 99, PAR).unwrap();
    let (mut fwd, mut rev) = (Vec::new(), Vec::new());
    for r in 0..runs {
        let start = Start::uniform(&rbm, chains, r as u64, PAR).unwrap();
        fwd.push(ais(&gibbs, &ladder, start, PAR).estimate.log_z - exact);
        let mine: Vec<usize> = (r * chains..(r + 1) * chains).collect();
        let target =
            Population::new(exact_draws.population.chains.select_chains(&mine), r as u64).unwrap();
        rev.push(
            reverse_ais(&gibbs, &ladder, target, &z0, PAR)
                .estimate
                .log_z
                - exact,
        );
    }
    let mean_sem = |v: &[f64]| {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        (m, sd / n.sqrt())
    };
    let (f, f_sem) = mean_sem(&fwd);
    let (r, r_sem) = mean_sem(&rev);
    eprintln!("sandwich: forward {f:+.3} +- {f_sem:.3}, reverse {r:+.3} +- {r_sem:.3}");
    assert!(f < -4.0 * f_sem, "forward mean error {f} +- {f_sem}");
    assert!(r > 4.0 * r_sem, "reverse mean error {r} +- {r_sem}");

    let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(300)).unwrap();
    let f = ais(
        &gibbs,
        &ladder,
        Start::uniform(&rbm, 500, 7, PAR).unwrap(),
        PAR,
    );
    assert_accurate(&f.estimate, exact, 0.1, "forward, 300 rungs");
    let target = Start::enumerated(&rbm, 1.0, 500, 8, PAR).unwrap();
    let r = reverse_ais(&gibbs, &ladder, target.population, &z0, PAR);
    assert_accurate(&r.estimate, exact, 0.15, "reverse, 300 rungs");
}

/// A visible law with two modes split by the one hidden unit: \\(h = 0\\) leaves the \\(n\\)
/// visible units independent with field 0.5 (a broad mode, dominant at high temperature),
/// \\(h = 1\\) adds a coupling of 3 to each, with hidden field `c` (a narrow mode, \\(-c\\) nats of
/// energy to climb, dominant at \\(\beta = 1\\)). Its exact \\(\log Z\\) is a sum of two terms.
fn split_model(n: usize, c: f64) -> (Brbm, f64) {
    let rbm = Rbm::new(
        Bernoulli::new(vec![0.5; n]),
        Bernoulli::new(vec![c]),
        nalgebra::DMatrix::from_element(n, 1, 3.0),
    )
    .unwrap();
    let softplus = |x: f64| x.exp().ln_1p();
    let n = n as f64;
    let exact = ebm_core::numerics::log_sum_exp(&[n * softplus(0.5), c + n * softplus(3.5)]);
    (rbm, exact)
}

/// The blind spot of the weight checks and the check that sees it. Forward AIS on
/// [`split_model`] with 80 visible units freezes every chain in the broad mode before the
/// narrow one takes over: its weights are alike (no warning) and it is off by 4.5 nats with an
/// error bar of a few hundredths. Reverse AIS from exact draws starts in the narrow mode
/// (5000 chains: it crosses the same mode switch downwards, where few chains find the broad
/// mode, so its own weights are uneven); the sandwich flags the gap on both estimates. Negative control: at 24 units and 400 rungs
/// the chains follow the mode switch, and the two agree without a warning.
#[test]
fn the_sandwich_gap_catches_forward_ais_that_missed_a_mode() {
    use ebm_estimators::Warning;
    use ebm_estimators::trust::{Sandwich, sandwich};
    let gibbs = Ais::new(Gibbs::new(1));
    let mut verdicts = Vec::new();
    for (n, c, rungs) in [(80, -200.0, 100), (24, -60.0, 400)] {
        let (rbm, exact) = split_model(n, c);
        assert!(
            (exact_log_partition(&rbm, 1.0, PAR).unwrap().log_z - exact).abs() < 1e-9,
            "the closed form"
        );
        let ladder = TemperatureLadder::new(rbm.clone(), linear_betas(rungs)).unwrap();
        let start = Start::uniform(&rbm, 500, 1, PAR).unwrap();
        let z0 = start.log_z.clone();
        let mut forward = ais(&gibbs, &ladder, start, PAR).estimate;
        let target = Start::enumerated(&rbm, 1.0, 5000, 2, PAR).unwrap();
        let mut reverse = reverse_ais(&gibbs, &ladder, target.population, &z0, PAR).estimate;
        let (f, r) = (forward.clone(), reverse.clone());
        let check = sandwich(&mut forward, &mut reverse);
        eprintln!(
            "n = {n}: exact {exact:.3}, forward {:.3} +- {:.3} (ESS {:.0}, {:?}), reverse \
             {:.3} +- {:.3} (ESS {:.0}); {check:?}",
            f.log_z, f.std_err, f.ess, f.warnings, r.log_z, r.std_err, r.ess
        );
        let gap_warning = |e: &ebm_estimators::LogZEstimate| {
            e.warnings
                .iter()
                .any(|w| matches!(w, Warning::SandwichGap { .. }))
        };
        if n == 80 {
            // The blind spot: trusted, and wrong by far more than its error bar.
            assert!(f.is_trusted(), "{:?}", f.warnings);
            assert!(
                exact - f.log_z > 2.0 && exact - f.log_z > 20.0 * f.std_err,
                "{f:?}"
            );
            assert_eq!(check.verdict, Sandwich::Gap);
            assert!(gap_warning(&forward) && gap_warning(&reverse));
            assert!(
                check.gap > exact - f.log_z - 3.0 * r.std_err,
                "the gap bounds the error"
            );
        } else {
            assert_accurate(&f, exact, 0.2, "forward, 24 units");
            assert_eq!(check.verdict, Sandwich::Consistent);
            assert!(!gap_warning(&forward) && !gap_warning(&reverse));
            assert_eq!(forward.warnings, f.warnings, "nothing added");
        }
        verdicts.push(check.verdict);
    }
    assert_eq!(verdicts, [Sandwich::Gap, Sandwich::Consistent]);
}

/// Spec §6.1 test 2: annealing from an independent model to itself returns its log Z exactly,
/// with zero variance and full ESS (up to the rounding of the interpolated parameters of the
/// reference ladder; bit for bit along a trajectory of identical models).
#[test]
fn annealing_an_independent_model_to_itself_is_exact() {
    let reference = Rbm::new(
        Bernoulli::new(vec![0.4, -1.0, 0.7]),
        Bernoulli::new(vec![0.2, -0.3]),
        nalgebra::DMatrix::zeros(3, 2),
    )
    .unwrap();
    let start = Start::independent(&reference, 1.0, 50, 1, PAR).unwrap();
    let exact = start.log_z.log_z;
    let ladder = ReferenceLadder::new(&reference, &reference, linear_betas(10)).unwrap();
    let run = ais(&Ais::new(Gibbs::new(1)), &ladder, start, PAR);
    assert!((run.estimate.log_z - exact).abs() < 1e-13);
    assert!(run.estimate.std_err < 1e-14);
    assert!((run.estimate.ess - 50.0).abs() < 1e-9);
    let trajectory = TrajectoryLadder::new(vec![reference.clone(); 5]).unwrap();
    let start = Start::independent(&reference, 1.0, 50, 2, PAR).unwrap();
    let run = ais(&Ais::new(Gibbs::new(1)), &trajectory, start, PAR);
    assert_eq!((run.estimate.log_z, run.estimate.std_err), (exact, 0.0));
}

/// Any ladder: a temperature ladder of the first checkpoint of a trajectory from beta = 0,
/// followed by the trajectory (`Concat`), annealed in one run; and population annealing
/// (resampling below a relative ESS of 0.5) on the same path.
#[test]
fn concatenated_ladders_and_resampling() {
    let target = clustered_rbm(16, 20, 3, 1.5, 2);
    let first = clustered_rbm(16, 20, 3, 0.5, 2);
    let checkpoints: Vec<Brbm> = (0..=60)
        .map(|j| first.interpolate(&target, 1.0 - j as f64 / 60.0).unwrap())
        .collect();
    let ladder = Concat(
        TemperatureLadder::new(first.clone(), linear_betas(100)).unwrap(),
        TrajectoryLadder::new(checkpoints[1..].to_vec()).unwrap(),
    );
    let exact = exact_log_partition(&target, 1.0, PAR).unwrap().log_z;
    let plain = ais(
        &Ais::new(Gibbs::new(1)),
        &ladder,
        Start::uniform(&first, 1000, 4, PAR).unwrap(),
        PAR,
    );
    assert_accurate(&plain.estimate, exact, 0.1, "concatenated ladder");
    let exact_first = exact_log_partition(&first, 1.0, PAR).unwrap().log_z;
    let at_first = plain.profile[100];
    assert!(
        ((at_first.log_z - exact_first) / at_first.std_err).abs() < 5.0,
        "profile at the junction: {} vs {exact_first}",
        at_first.log_z
    );
    let smc = Ais::new(Gibbs::new(1)).with_resampling(0.5).unwrap();
    let resampled = ais(
        &smc,
        &ladder,
        Start::uniform(&first, 1000, 5, PAR).unwrap(),
        PAR,
    );
    assert_accurate(&resampled.estimate, exact, 0.1, "with resampling");
    match resampled.estimate.method {
        Method::Ais {
            ladder: LadderKind::Concatenated(ref parts),
            resample_below_ess: Some(t),
            resamplings,
            ..
        } => {
            assert_eq!(parts.len(), 2);
            assert_eq!(t, 0.5);
            assert!(resamplings > 0, "no resampling happened");
        }
        ref m => panic!("unexpected method {m:?}"),
    }
    assert!(Ais::new(Gibbs::new(1)).with_resampling(1.5).is_err());
}

/// Estimators accumulate in f64 for f32 models: AIS on the f32 copy of a model is as accurate
/// against the exact log Z of the f32 parameters.
#[test]
fn f32_models_are_estimated_in_f64() {
    let rbm = random_rbm(12, 20, 0.7, 1);
    let (v, h, w) = rbm.into_parts();
    let f32_rbm = Rbm::new(
        Bernoulli::new(v.fields.iter().map(|&x| x as f32).collect()),
        Bernoulli::new(h.fields.iter().map(|&x| x as f32).collect()),
        w.map(|x| x as f32),
    )
    .unwrap();
    let exact = exact_log_partition(&f32_rbm, 1.0, PAR).unwrap().log_z;
    let ladder = TemperatureLadder::new(f32_rbm.clone(), linear_betas(100)).unwrap();
    let run = ais(
        &Ais::new(Gibbs::new(1)),
        &ladder,
        Start::uniform(&f32_rbm, 1000, 3, Par::Rayon).unwrap(),
        Par::Rayon,
    );
    assert_accurate(&run.estimate, exact, 0.1, "f32 model");
}

/// The uniform start is the law at beta = 0 only for discrete layers: with a real-valued
/// layer it is an error naming the units, not draws of a law that does not exist; with
/// discrete layers its log Z_0 is log(2^n_v 2^n_h).
#[test]
fn uniform_start_needs_discrete_layers() {
    use ebm_models::Gaussian;
    use nalgebra::DMatrix;
    let rbm = Rbm::new(
        Bernoulli::<f64>::zeros(3),
        Gaussian::standard(2),
        DMatrix::from_element(3, 2, 0.5),
    )
    .unwrap();
    let err = Start::uniform(&rbm, 4, 1, PAR).unwrap_err().to_string();
    assert!(
        err.contains("gaussian units have no law at beta = 0"),
        "{err}"
    );
    let binary = Rbm::new(
        Bernoulli::<f64>::new(vec![0.3, -1.0, 2.0]),
        Bernoulli::new(vec![0.5, 0.1]),
        DMatrix::from_element(3, 2, 0.5),
    )
    .unwrap();
    let start = Start::uniform(&binary, 4, 1, PAR).unwrap();
    assert!((start.log_z.log_z - 5.0 * 2f64.ln()).abs() < 1e-12);
}

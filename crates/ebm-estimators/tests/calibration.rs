//! The calibration suite (issue "estimators that know when they are wrong"): over a matrix of
//! small enumerable models (Bernoulli and spin units, unimodal and strongly bimodal) and every
//! estimator with the defaults of its `ebm loglik` subcommand, repeated seeds, an estimate is
//! *honest* when
//!
//! \\[ |\log\hat Z - \log Z| \le 3\,\hat\sigma \quad\text{or}\quad \text{it carries a warning}, \\]
//!
//! and every cell of the matrix must be honest in at least 95% of its runs. With `RUNS = 40`
//! runs per cell that is at most 2 dishonest runs; a calibrated 3-sigma bar fails a run with
//! probability 0.003, so 3 or more failures happen with probability < 3e-4 per cell.
//!
//! The negative control shrinks every reported error bar tenfold (a tenfold too confident
//! estimator): the same criterion must then fail in at least one cell, which it does only
//! because the estimates are not flagged wholesale. A second guard asserts that the warnings
//! are not raised on the easy (unimodal) cells, where the error bars alone must hold: an
//! estimator that warned on every run would pass the criterion vacuously.
//!
//! Trajectory AIS (offline and online) has its own test, `trajectory_ais_is_honest`: through
//! a bimodal split it is honest only by its warnings (the heavy tail of the weights and the
//! founder-level ESS, `ebm_estimators::trust`), along a unimodal path by its error bars.
//!
//! Defaults (as `ebm loglik`): `ais` and `reverse-ais` 1000 rungs of the reference path
//! (the model's own fields, zero weights), 1000 chains, 1 sweep per rung; `reverse-ais`
//! exact draws of the model; `tr-ais` 1000 chains over every checkpoint; `ptt` 100 systems,
//! 2000 rounds after 200 of burn-in, DEO swaps, 1 sweep per rung.

mod common;

use common::*;
use ebm_estimators::{
    Ais, LogZEstimate, OnlineTrajectoryAis, PairAccumulator, Start, ais, exact_log_partition,
    reverse_ais,
};
use ebm_models::{Rbm, Spin};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    ParallelTempering, PtState, ReferenceLadder, SwapSchedule, TrajectoryLadder,
};
use nalgebra::DMatrix;

const RUNS: u64 = 20;
/// The least number of honest runs out of `n`: 95%, rounded up.
fn min_honest(n: usize) -> usize {
    (0.95 * n as f64).ceil() as usize
}

type Srbm = Rbm<Spin<f64>, Spin<f64>>;

/// One cell of the matrix: the exact value and the estimates of every run.
struct Cell {
    name: String,
    exact: f64,
    estimates: Vec<LogZEstimate>,
    /// Whether this cell is easy enough that its error bars alone must hold (no warning may be
    /// needed).
    easy: bool,
}

impl Cell {
    fn honest(&self, shrink: f64) -> usize {
        self.estimates
            .iter()
            .filter(|e| (e.log_z - self.exact).abs() <= 3.0 * e.std_err / shrink || !e.is_trusted())
            .count()
    }

    fn warned(&self) -> usize {
        self.estimates.iter().filter(|e| !e.is_trusted()).count()
    }

    fn summary(&self) -> String {
        let z: Vec<f64> = self
            .estimates
            .iter()
            .map(|e| e.z_score(self.exact))
            .collect();
        let rms = (z.iter().map(|x| x * x).sum::<f64>() / z.len() as f64).sqrt();
        let mean_err = self
            .estimates
            .iter()
            .map(|e| e.log_z - self.exact)
            .sum::<f64>()
            / z.len() as f64;
        let mean_se = self.estimates.iter().map(|e| e.std_err).sum::<f64>() / z.len() as f64;
        format!(
            "{}: honest {}/{}, warned {}, within 3 se {}, rms z {rms:.2}, mean error \
             {mean_err:+.4}, mean se {mean_se:.4}",
            self.name,
            self.honest(1.0),
            self.estimates.len(),
            self.warned(),
            self.estimates
                .iter()
                .filter(|e| e.covers(self.exact, 3.0))
                .count()
        )
    }
}

fn linear(n: usize) -> Vec<f64> {
    (0..n)
        .map(|k| {
            if k + 1 == n {
                1.0
            } else {
                k as f64 / (n - 1) as f64
            }
        })
        .collect()
}

/// The reference of the CLI's default path: the model's own fields, zero weights.
fn reference<V: ebm_models::Layer<Scalar = f64>, H: ebm_models::Layer<Scalar = f64>>(
    m: &Rbm<V, H>,
) -> Rbm<V, H> {
    let (nv, nh) = m.weights().shape();
    Rbm::new(
        m.visible().clone(),
        m.hidden().clone(),
        DMatrix::zeros(nv, nh),
    )
    .unwrap()
}

/// A spin RBM with the couplings and fields of a Bernoulli one, halved (spins are +-1).
fn spin_of(b: &Brbm) -> Srbm {
    let half = |v: &[f64]| v.iter().map(|x| 0.5 * x).collect::<Vec<_>>();
    let fields = |l: &ebm_models::Bernoulli<f64>| {
        use ebm_models::BinaryLayer;
        half(l.fields())
    };
    Rbm::new(
        Spin::new(fields(b.visible())),
        Spin::new(fields(b.hidden())),
        b.weights() * 0.5,
    )
    .unwrap()
}

macro_rules! ais_cells {
    ($model:expr, $name:expr, $easy:expr, $seed:expr) => {{
        let m = $model;
        let exact = exact_log_partition(&m, 1.0, PAR).unwrap().log_z;
        let r = reference(&m);
        let ladder = ReferenceLadder::new(&m, &r, linear(1000)).unwrap();
        let forward = (0..RUNS)
            .map(|s| {
                let start = Start::independent(&r, 1.0, 1000, $seed + s, PAR).unwrap();
                ais(&Ais::new(Gibbs::new(1)), &ladder, start, PAR).estimate
            })
            .collect();
        let z0 = Start::independent(&r, 1.0, 2, 0, PAR).unwrap().log_z;
        let backward = (0..RUNS)
            .map(|s| {
                let target = Start::enumerated(&m, 1.0, 1000, $seed + 500 + s, PAR).unwrap();
                reverse_ais(
                    &Ais::new(Gibbs::new(1)),
                    &ladder,
                    target.population,
                    &z0,
                    PAR,
                )
                .estimate
            })
            .collect();
        vec![
            Cell {
                name: format!("ais, {}", $name),
                exact,
                estimates: forward,
                easy: $easy,
            },
            Cell {
                name: format!("reverse-ais (exact start), {}", $name),
                exact,
                estimates: backward,
                easy: $easy,
            },
        ]
    }};
}

/// The CLI's `tr-ais` (1000 chains, every checkpoint, 1 sweep) and online Tr-AIS (1000
/// chains, resampling below relative ESS 0.5) along `models`.
fn trajectory_cells(models: Vec<Brbm>, name: &str, seed: u64, easy: bool) -> Vec<Cell> {
    let target = models.last().unwrap().clone();
    let exact = exact_log_partition(&target, 1.0, PAR).unwrap().log_z;
    let first = models[0].clone();
    let k = models.len();
    let ladder = TrajectoryLadder::new(models.clone()).unwrap();
    let tr = (0..RUNS)
        .map(|s| {
            let start = Start::independent(&first, 1.0, 1000, seed + s, PAR).unwrap();
            ais(&Ais::new(Gibbs::new(1)), &ladder, start, PAR).estimate
        })
        .collect();
    let online = (0..RUNS)
        .map(|s| {
            let start = Start::independent(&first, 1.0, 1000, seed + 100 + s, PAR).unwrap();
            let mut o = OnlineTrajectoryAis::new(
                start.population.chains,
                seed + 200 + s,
                start.log_z.log_z,
                0.5,
            );
            for j in 1..k {
                o.advance(&models[j - 1], &models[j], &Gibbs::new(1), PAR);
            }
            o.estimate()
        })
        .collect();
    vec![
        Cell {
            name: format!("tr-ais, {name}"),
            exact,
            estimates: tr,
            easy,
        },
        Cell {
            name: format!("online tr-ais, {name}"),
            exact,
            estimates: online,
            easy,
        },
    ]
}

/// Runs of `ptt` with its defaults (100 systems, 2000 rounds after 200 of burn-in, DEO) along
/// `models`.
const PTT_RUNS: u64 = 10;

fn ptt_cell(models: Vec<Brbm>, name: &str, seed: u64) -> Cell {
    let target = models.last().unwrap().clone();
    let exact = exact_log_partition(&target, 1.0, PAR).unwrap().log_z;
    let first = models[0].clone();
    let k = models.len();
    let ladder = TrajectoryLadder::new(models).unwrap();
    let z0 = Start::independent(&first, 1.0, 2, 0, PAR).unwrap().log_z;
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let ptt = (0..PTT_RUNS)
        .map(|s| {
            let start = Start::independent(&first, 1.0, 100, seed + 300 + s, PAR).unwrap();
            let mut state = PtState::new(vec![start.population.chains; k], seed + 400 + s).unwrap();
            let mut acc = PairAccumulator::new(k).unwrap();
            for round in 1..=2000 {
                pt.step(&ladder, &mut state, PAR);
                if round > 200 {
                    acc.record_pt(&ladder, &state, PAR).unwrap();
                }
            }
            acc.bar(&z0).unwrap().estimate
        })
        .collect();
    Cell {
        name: format!("ptt + BAR, {name}"),
        exact,
        estimates: ptt,
        easy: false,
    }
}

fn lap(t: std::time::Instant, what: &str) {
    eprintln!("{what}: {:.1} s", t.elapsed().as_secs_f64());
}

/// The models of the matrix: unimodal and strongly bimodal, Bernoulli and spin.
fn models() -> (Brbm, Brbm) {
    (
        random_rbm(10, 8, 0.5, 11),
        clustered_rbm(12, 10, 2, 2.0, 12),
    )
}

/// The cells that must be honest: AIS and reverse AIS (exact start) on three models, PTT + BAR
/// on a training-like trajectory through the bimodal split.
fn matrix() -> Vec<Cell> {
    let t = std::time::Instant::now();
    let (unimodal, bimodal) = models();
    let mut cells = Vec::new();
    cells.extend(ais_cells!(unimodal, "bernoulli unimodal 10x8", true, 1_000));
    lap(t, "bernoulli unimodal");
    cells.extend(ais_cells!(
        bimodal.clone(),
        "bernoulli bimodal 12x10",
        false,
        2_000
    ));
    lap(t, "bernoulli bimodal");
    cells.extend(ais_cells!(
        spin_of(&bimodal),
        "spin bimodal 12x10",
        false,
        4_000
    ));
    lap(t, "spin bimodal");
    let start = independent_start(&bimodal, &prototype_means(&prototypes(12, 2, 12)));
    cells.push(ptt_cell(
        trajectory(&start, &bimodal, 2, 20),
        "bimodal 12x10 trajectory, 20 checkpoints",
        5_000,
    ));
    lap(t, "ptt");
    cells
}

/// Prints every cell (and its trusted misses), asserts that every cell is honest in at least
/// 95% of its runs and that easy cells raised no warning; returns the cells that the negative
/// control (error bars divided by 10) makes fail.
fn check(cells: &[Cell]) -> Vec<&str> {
    for c in cells {
        eprintln!("{}", c.summary());
        for (i, e) in c.estimates.iter().enumerate() {
            if e.is_trusted() && !e.covers(c.exact, 3.0) {
                eprintln!(
                    "  run {i} trusted but off: {:+.3} for a standard error of {:.3} (ESS {:.0})",
                    e.log_z - c.exact,
                    e.std_err,
                    e.ess
                );
            }
        }
    }
    for c in cells {
        assert!(
            c.honest(1.0) >= min_honest(c.estimates.len()),
            "{}",
            c.summary()
        );
        if c.easy {
            assert_eq!(c.warned(), 0, "{}: warnings on an easy cell", c.name);
        }
    }
    cells
        .iter()
        .filter(|c| c.honest(10.0) < min_honest(c.estimates.len()))
        .map(|c| c.name.as_str())
        .collect()
}

#[test]
fn every_estimator_is_honest_and_shrunk_error_bars_are_caught() {
    let cells = matrix();
    let failing = check(&cells);
    eprintln!("negative control (error bars / 10) fails: {failing:?}");
    assert!(
        failing.len() >= cells.len() / 2,
        "shrunk error bars pass the calibration criterion in too many cells: only {failing:?} fail"
    );
}

/// Offline and online Tr-AIS with the CLI defaults along two training-like trajectories of 20
/// checkpoints: through a bimodal split (12 x 10; one Gibbs sweep per checkpoint cannot move
/// mass between the modes as the trajectory separates them, so the estimates are off by up to
/// a nat) and along a unimodal path (10 x 8). Both must be honest; on the unimodal path the
/// error bars alone must hold (no warning), and ten times too small error bars must fail
/// there (the negative control: on the split, the weights' heavy tail flags the runs, see
/// `ebm_estimators::trust`).
///
/// Measured with 100 runs per cell instead of 20 (same seeds from 5000): through the split,
/// Tr-AIS 95/100 honest (95 warned; the 5 trusted misses are about -1 nat with error bars of
/// 0.1 and ESS 50-115: the mode that appears second was reached by too few chains, which the
/// weights cannot show), online Tr-AIS 98/100 (98 warned); on the unimodal path 100/100 with
/// no warning and rms z 0.99 and 1.07. Before the founder-level and tail checks: 17/20 and
/// 16/20.
#[test]
fn trajectory_ais_is_honest() {
    let t = std::time::Instant::now();
    let (unimodal, bimodal) = models();
    let start = independent_start(&bimodal, &prototype_means(&prototypes(12, 2, 12)));
    let mut cells = trajectory_cells(
        trajectory(&start, &bimodal, 2, 20),
        "bimodal 12x10 trajectory, 20 checkpoints",
        5_000,
        false,
    );
    let start = independent_start(&unimodal, &[0.5; 10]);
    cells.extend(trajectory_cells(
        trajectory(&start, &unimodal, 1, 20),
        "unimodal 10x8 trajectory, 20 checkpoints",
        6_000,
        true,
    ));
    lap(t, "trajectories");
    let failing = check(&cells);
    eprintln!("negative control (error bars / 10) fails: {failing:?}");
    assert!(
        cells
            .iter()
            .filter(|c| c.easy)
            .all(|c| failing.contains(&c.name.as_str())),
        "shrunk error bars pass the criterion on the unimodal path: only {failing:?} fail"
    );
}

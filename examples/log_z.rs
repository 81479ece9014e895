//! Estimating log Z of one RBM every way the library knows, against the exact value: the error
//! |estimate - exact| versus the cost in Gibbs sweeps, in the spirit of Fig. 3 of Béreux et al.
//! (Béreux et al., *Fast training and sampling of RBMs*).
//!
//! A Bernoulli RBM with 40 visible and 20 hidden units is trained on four noisy prototypes
//! (clustered data) by a bare-bones PCD loop that stands in for the `ebm-train` crate; the loop
//! advances the online trajectory estimator after every update and keeps checkpoints for
//! parallel trajectory tempering. The trained model has four sharp modes; its exact log Z
//! comes from enumerating its 2^20 hidden configurations.
//!
//! Run with `cargo run --release --example log_z [-- results.csv]`; the optional argument is a
//! path where the table is also written as CSV, one row per estimate: `series` names the
//! estimator and its ladder, `rungs` the length of the path, `samples` the chains (annealing)
//! or the samples per rung (PTT), `gibbs_sweeps` the cost (Gibbs sweeps summed over chains),
//! `abs_error` the error against `exact_log_z`, `ess` and `relative_ess` the effective sample
//! size. With `EBM_FIGURES=book/src/figures` it also draws the book's figure of every estimate
//! against its cost.

use ebm::core::{ChainState, EnergyModel, Error, Par, RngStreams};
use ebm::models::{Bernoulli, Rbm, RbmChains};
use ebm::nalgebra::DMatrix;
use ebm::rand::Rng;
use ebm::samplers::tempering::{
    CheckpointSelector, Ladder, ParallelTempering, PtState, ReferenceLadder, SwapSchedule,
    TemperatureLadder, TrajectoryLadder,
};
use ebm::samplers::{Gibbs, run};
use ebm_estimators::{
    Ais, Direction, LadderKind, LogZEstimate, Method, OnlineTrajectoryAis, PairAccumulator, Start,
    ais, exact_log_partition, log_likelihood, reverse_ais,
};
use std::fmt::Write as _;

type Brbm = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

const NV: usize = 40;
const NH: usize = 20;
const CHAINS: usize = 1000;

/// Four random prototypes and 1000 noisy copies of them (5% of the bits flipped), one sample
/// per column.
fn clustered_data(seed: u64) -> DMatrix<f64> {
    let mut rng = RngStreams::auxiliary(seed, 0);
    let xi: Vec<Vec<f64>> = (0..4)
        .map(|_| (0..NV).map(|_| rng.random_bool(0.5) as u8 as f64).collect())
        .collect();
    DMatrix::from_fn(NV, 1000, |i, m| {
        let bit = xi[m % 4][i];
        if rng.random_bool(0.05) {
            1.0 - bit
        } else {
            bit
        }
    })
}

/// The training run: every model of the trajectory, the online estimate of the last one, and
/// the checkpoints kept for PTT.
struct Training {
    trajectory: Vec<Brbm>,
    online: LogZEstimate,
    kept: Vec<Brbm>,
}

// ANCHOR: training
/// Bare-bones PCD-5 (plain gradient ascent on the log-likelihood, 500 persistent chains, the
/// whole dataset as batch), starting from the independent-site model `reference` with small
/// random weights. After each update the online trajectory estimator takes one Gibbs sweep
/// and the checkpoint selector decides whether to keep the model for PTT.
fn train(
    data: &DMatrix<f64>,
    reference: &Brbm,
    updates: usize,
    par: Par,
) -> Result<Training, Error> {
    let (lr, n_chains) = (0.02, 500);
    let mut rng = RngStreams::auxiliary(2, 0);
    let (v0, h0, _) = reference.clone().into_parts();
    let w0 = DMatrix::from_fn(NV, NH, |_, _| 0.01 * (rng.random::<f64>() - 0.5));
    let mut rbm = Rbm::new(v0, h0, w0)?;
    // Both sets of chains start from exact draws of the reference, close to the initial model.
    let start = Start::independent(reference, 1.0, n_chains, 3, par)?;
    let mut chains = ChainState::new(start.population.chains, 4);
    // ANCHOR: online
    let start = Start::independent(reference, 1.0, CHAINS, 5, par)?;
    let mut online = OnlineTrajectoryAis::new(start.population.chains, 6, start.log_z.log_z, 0.5);
    let mut selector = CheckpointSelector::new(0.25, 7)?;
    // The trajectory starts at the exactly solvable reference.
    online.advance(reference, &rbm, &Gibbs::new(1), par);
    // Then, after every parameter update: online.advance(&old, &new, &Gibbs::new(1), par).
    // ANCHOR_END: online
    let mut trajectory = vec![reference.clone(), rbm.clone()];
    let mut kept = Vec::new();
    let (m, n) = (data.ncols() as f64, n_chains as f64);
    let mut h_data = DMatrix::zeros(NH, data.ncols());
    let mut h_model = DMatrix::zeros(NH, n_chains);
    for update in 0..updates {
        if selector.offer(&rbm, &chains.chains, par).keep {
            kept.push(rbm.clone());
        }
        run(&rbm, &Gibbs::new(5), 1.0, &mut chains, 1, par, ())?;
        rbm.hidden_means(data, 1.0, &mut h_data, par);
        rbm.hidden_means(&chains.chains.visible, 1.0, &mut h_model, par);
        let v_model = &chains.chains.visible;
        let dw = data * h_data.transpose() / m - v_model * h_model.transpose() / n;
        let dv = data.column_mean() - v_model.column_mean();
        let dh = h_data.column_mean() - h_model.column_mean();
        let (v, h, w) = rbm.clone().into_parts();
        let next = Rbm::new(
            Bernoulli::new(
                v.fields
                    .iter()
                    .zip(dv.iter())
                    .map(|(a, d)| a + lr * d)
                    .collect(),
            ),
            Bernoulli::new(
                h.fields
                    .iter()
                    .zip(dh.iter())
                    .map(|(a, d)| a + lr * d)
                    .collect(),
            ),
            w + lr * dw,
        )?;
        online.advance(&rbm, &next, &Gibbs::new(1), par);
        rbm = next;
        trajectory.push(rbm.clone());
        if update + 1 == updates {
            kept.push(rbm.clone()); // always keep the final model
        }
    }
    Ok(Training {
        trajectory,
        online: online.estimate(),
        kept,
    })
}
// ANCHOR_END: training

/// One row of the comparison table.
struct Row {
    series: String,
    rungs: usize,
    estimate: LogZEstimate,
}

fn betas(rungs: usize) -> Vec<f64> {
    (0..=rungs).map(|k| k as f64 / rungs as f64).collect()
}

fn main() -> Result<(), Error> {
    let csv_path = std::env::args().nth(1);
    let par = Par::Rayon;
    let clock = std::time::Instant::now();

    let data = clustered_data(1);
    let means: Vec<f64> = data.row_iter().map(|r| r.mean()).collect();
    // Independent sites with the data frequencies: the reference and the start of training.
    let reference = Rbm::new(
        Bernoulli::from_means(&means),
        Bernoulli::zeros(NH),
        DMatrix::zeros(NV, NH),
    )?;
    let training = train(&data, &reference, 1500, par)?;
    let rbm = training.trajectory.last().expect("non-empty").clone();
    println!(
        "trained {} updates, {} checkpoints kept for PTT, {:.1} s; online estimator: {:?}",
        training.trajectory.len() - 2,
        training.kept.len(),
        clock.elapsed().as_secs_f64(),
        training.online.method
    );
    // ANCHOR: exact
    // Enumerates the 2^20 hidden configurations (the smaller layer).
    let exact = exact_log_partition(&rbm, 1.0, par)?;
    // ANCHOR_END: exact
    println!(
        "exact log Z = {:.4} ({:?}), {:.1} s",
        exact.log_z,
        exact.method,
        clock.elapsed().as_secs_f64()
    );
    let mut rows = Vec::new();
    let gibbs = Ais::new(Gibbs::new(1));

    for rungs in [10, 30, 100, 300, 1000] {
        // ANCHOR: ais
        let ladder = TemperatureLadder::new(rbm.clone(), betas(rungs))?;
        let start = Start::uniform(&rbm, CHAINS, 10, par)?; // exact draws at beta = 0
        let run = ais(&gibbs, &ladder, start, par);
        // ANCHOR_END: ais
        rows.push(Row {
            series: "AIS (temperature)".into(),
            rungs: rungs + 1,
            estimate: run.estimate,
        });
    }
    for rungs in [30, 300] {
        // ANCHOR: reverse
        let ladder = TemperatureLadder::new(rbm.clone(), betas(rungs))?;
        let target = Start::enumerated(&rbm, 1.0, CHAINS, 11, par)?; // exact draws of the target
        let log_z0 = Start::uniform(&rbm, 2, 0, par)?.log_z; // (N_v + N_h) log 2
        let run = reverse_ais(&gibbs, &ladder, target.population, &log_z0, par);
        // ANCHOR_END: reverse
        rows.push(Row {
            series: "reverse AIS (temperature)".into(),
            rungs: rungs + 1,
            estimate: run.estimate,
        });
    }
    for rungs in [10, 30, 100, 300, 1000] {
        // ANCHOR: reference
        let ladder = ReferenceLadder::new(&rbm, &reference, betas(rungs))?;
        let start = Start::independent(&reference, 1.0, CHAINS, 12, par)?;
        let run = ais(&gibbs, &ladder, start, par);
        // ANCHOR_END: reference
        rows.push(Row {
            series: "AIS (reference)".into(),
            rungs: rungs + 1,
            estimate: run.estimate,
        });
    }
    for every in [150, 50, 15, 5] {
        // ANCHOR: offline
        // Every `every`-th model of the trajectory (which starts at the reference), and the last.
        let last = training.trajectory.len() - 1;
        let mut picked: Vec<usize> = (0..last).step_by(every).collect();
        picked.push(last);
        let checkpoints = picked.iter().map(|&k| training.trajectory[k].clone());
        let ladder = TrajectoryLadder::new(checkpoints.collect())?;
        let start = Start::independent(&reference, 1.0, CHAINS, 13, par)?;
        let run = ais(&gibbs, &ladder, start, par);
        // run.profile[k] is log Z of checkpoint picked[k]: the log-likelihood along training.
        // ANCHOR_END: offline
        rows.push(Row {
            series: "Tr-AIS offline".into(),
            rungs: run.profile.len(),
            estimate: run.estimate,
        });
    }
    rows.push(Row {
        series: "Tr-AIS online".into(),
        rungs: training.trajectory.len(),
        estimate: training.online.clone(),
    });
    // ANCHOR: ptt
    // PTT on the kept checkpoints, below them the reference (sampled exactly by its Gibbs
    // sweep): BAR's energy differences are recorded after every round.
    let mut models = vec![reference.clone()];
    models.extend(training.kept.iter().cloned());
    let ladder = TrajectoryLadder::new(models)?;
    let n_rungs = ladder.n_rungs();
    let rungs: Vec<RbmChains<f64>> = (0..n_rungs).map(|_| rbm.new_state(100)).collect();
    let mut state = PtState::new(rungs, 18)?;
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let mut pairs = PairAccumulator::new(n_rungs)?;
    let log_z0 = Start::independent(&reference, 1.0, 2, 0, par)?.log_z;
    let mut ptt = Vec::new();
    for round in 1..=2000 {
        pt.step(&ladder, &mut state, par);
        if round > 200 {
            pairs.record_pt(&ladder, &state, par)?;
        }
        if [400, 1000, 2000].contains(&round) {
            ptt.push((pairs.bar(&log_z0)?, pairs.exponential_average(&log_z0)?));
        }
    }
    // ANCHOR_END: ptt
    for (bar, exp) in ptt {
        for (series, e) in [("PTT + BAR", bar), ("PTT + exponential average", exp)] {
            rows.push(Row {
                series: series.into(),
                rungs: n_rungs,
                estimate: e.estimate,
            });
        }
    }

    // ANCHOR: likelihood
    let ll_exact = log_likelihood(&rbm, &data, &exact, par)?;
    let ll_online = log_likelihood(&rbm, &data, &training.online, par)?;
    // ANCHOR_END: likelihood

    let mut table = format!(
        "{:<27} {:>6} {:>10} {:>10} {:>8} {:>8} {:>7}\n",
        "estimator", "rungs", "sweeps", "log Z", "std err", "|error|", "ESS/n"
    );
    let mut csv = String::from(
        "series,estimator,ladder,rungs,samples,gibbs_sweeps,log_z,std_err,exact_log_z,error,\
         abs_error,ess,relative_ess\n",
    );
    for r in &rows {
        let e = &r.estimate;
        let err = e.log_z - exact.log_z;
        writeln!(
            table,
            "{:<27} {:>6} {:>10} {:>10.4} {:>8.4} {:>8.4} {:>7.3}",
            r.series,
            r.rungs,
            e.kernel_steps,
            e.log_z,
            e.std_err,
            err.abs(),
            e.relative_ess()
        )
        .expect("write to a string");
        let (estimator, ladder) = describe(e);
        writeln!(
            csv,
            "{},{estimator},{ladder},{},{},{},{},{},{},{},{},{},{}",
            r.series,
            r.rungs,
            e.n_samples,
            e.kernel_steps,
            e.log_z,
            e.std_err,
            exact.log_z,
            err,
            err.abs(),
            e.ess,
            e.relative_ess()
        )
        .expect("write to a string");
    }
    print!("{table}");
    // Every estimate says when it cannot be trusted.
    for r in rows.iter().filter(|r| !r.estimate.warnings.is_empty()) {
        for w in &r.estimate.warnings {
            println!("warning: {} ({} rungs): {w}", r.series, r.rungs);
        }
    }
    // The book's figure: every estimate against its cost, with the exact value (written where
    // EBM_FIGURES points).
    if let Some(path) = ebm::plot::book_figure("log-z-cost.svg") {
        let mut series: Vec<ebm::plot::Series> = Vec::new();
        // (An estimate without a cost, if any, has no place on a log-scaled axis.)
        for r in rows.iter().filter(|r| r.estimate.kernel_steps > 0) {
            let point = (r.estimate.kernel_steps as f64, r.estimate.log_z);
            match series.iter_mut().find(|s| s.label == r.series) {
                Some(s) => s.points.push(point),
                None => series.push(ebm::plot::Series {
                    label: r.series.clone(),
                    points: vec![point],
                }),
            }
        }
        ebm::plot::log_z_versus_cost(&path, &series, Some(exact.log_z), true)?;
    }
    println!(
        "log-likelihood of the data: {:.4} (exact log Z), {:.4} +- {:.4} (online Tr-AIS)",
        ll_exact.mean, ll_online.mean, ll_online.std_err
    );
    if let Some(path) = csv_path {
        std::fs::write(&path, csv).map_err(|source| Error::Io {
            path: path.clone().into(),
            source,
        })?;
        println!("table written to {path}");
    }
    println!("total time {:.1} s", clock.elapsed().as_secs_f64());
    Ok(())
}

/// Short names of the estimator and of its ladder, for the CSV file.
fn describe(e: &LogZEstimate) -> (&'static str, String) {
    match &e.method {
        Method::Ais {
            direction, ladder, ..
        } => (
            if *direction == Direction::Forward {
                "ais"
            } else {
                "reverse_ais"
            },
            ladder_name(ladder),
        ),
        Method::OnlineTrajectoryAis { .. } => ("online_trajectory_ais", "trajectory".into()),
        Method::BennettAcceptanceRatio { ladder, .. } => ("bar", ladder_name(ladder)),
        Method::ExponentialAverage { ladder, .. } => ("exponential_average", ladder_name(ladder)),
        _ => ("other", "none".into()),
    }
}

fn ladder_name(kind: &LadderKind) -> String {
    match kind {
        LadderKind::Temperature { .. } => "temperature".into(),
        LadderKind::Reference => "reference".into(),
        LadderKind::Trajectory => "trajectory".into(),
        LadderKind::Reversed(inner) => format!("reversed_{}", ladder_name(inner)),
        LadderKind::Concatenated(parts) => {
            let names: Vec<String> = parts.iter().map(ladder_name).collect();
            names.join("+")
        }
        LadderKind::Custom(name) => name.replace([',', '\n'], " "),
    }
}

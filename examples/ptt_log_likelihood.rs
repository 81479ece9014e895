//! The library's run APIs, without the command line: train an RBM on the embedded 8x8 digits
//! keeping checkpoints for parallel trajectory tempering, sample the trained model with PTT and
//! read the run's diagnostics and warnings (`ParallelTempering::run`), and estimate its
//! log-likelihood by PTT + BAR (`ptt_log_z`). The RBM has 12 hidden units, so every number is
//! checked against enumeration.
//!
//! Run with `cargo run --release --example ptt_log_likelihood` (a few seconds).

use ebm::data::loaders::digits;
use ebm::estimators::{PttPlan, Start, exact_log_partition, ptt_log_z};
use ebm::prelude::*;
use ebm::samplers::tempering::{
    Ladder, ParallelTempering, PtState, SwapSchedule, TrajectoryLadder,
};
use ebm_train::{
    CheckpointPolicy, LearningRate, Pcd, Trainer, TrainingData, initial_model, mean_log_likelihood,
};

fn main() -> Result<(), Error> {
    let par = Par::Rayon;
    // ANCHOR: train
    let visible = Bernoulli::<f64>::zeros(64);
    let data = TrainingData::from_f64(&visible, digits().data())?;
    let model = initial_model(visible, Bernoulli::zeros(12), Some(&data), 0.01, 3)?;
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 10,
            chains: 500,
        },
        100,
    );
    trainer.learning_rate = LearningRate::Constant(0.05);
    // Keep a model whenever the swap acceptance with the last kept one would fall below 0.7
    // (estimated from exact draws: 2^12 hidden configurations are enumerated).
    trainer.checkpoints = Some(CheckpointPolicy {
        target_acceptance: 0.7,
        ..CheckpointPolicy::default()
    });
    let mut state = trainer.init(model, &data, 3, par)?;
    trainer.run(&mut state, &data, None, 800, par, ())?;
    let mut checkpoints: Vec<_> = state.checkpoints().iter().map(|(_, m)| m.clone()).collect();
    if checkpoints.last() != Some(&state.model) {
        checkpoints.push(state.model.clone()); // the trained model is the target rung
    }
    let ladder = TrajectoryLadder::new(checkpoints)?;
    // ANCHOR_END: train
    let k = ladder.n_rungs();
    println!("{k} rungs: the checkpoints kept along 800 updates of PCD-10 and the trained model");

    // ANCHOR: sample
    // Every rung starts from exact draws of the first checkpoint (its hidden layer enumerated),
    // as PTT does; DEO swaps, one Gibbs sweep per rung and round.
    let first = &ladder.models()[0];
    let start = Start::enumerated(first, 1.0, 200, 4, par)?;
    let rungs = vec![start.population.chains.clone(); k];
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let mut sampling = PtState::new(rungs.clone(), 5)?;
    let report = pt.run(&ladder, &mut sampling, 2000, par, ())?;
    let rates: Vec<String> = report
        .diagnostics
        .acceptance_rates()
        .iter()
        .map(|a| format!("{a:.2}"))
        .collect();
    println!(
        "PTT: swap acceptances [{}], {} round trips, index tau_exp {:?} rounds",
        rates.join(", "),
        report.diagnostics.round_trips,
        report.index_tau_exp.map(|t| t.round())
    );
    for w in &report.warnings {
        println!("PTT warning: {w}");
    }
    // ANCHOR_END: sample

    // ANCHOR: loglik
    // log Z of every checkpoint by BAR, chained from the first checkpoint's exact log Z; the
    // run's length adapts to the replica index process it measures.
    let plan = PttPlan::adaptive(k, None);
    let mut estimating = PtState::new(rungs, 6)?;
    let run = ptt_log_z(
        &pt,
        &ladder,
        &mut estimating,
        &start.log_z,
        &plan,
        par,
        |_, _| {},
    )?;
    let z = &run.ladder.estimate;
    let target = ladder.models().last().expect("at least one checkpoint");
    let ll = mean_log_likelihood(target, &data, z.log_z, par);
    println!(
        "PTT + BAR: log Z = {:.3} ± {:.3} after {} + {} rounds; log-likelihood {ll:.3}",
        z.log_z, z.std_err, run.burn_in, run.recorded
    );
    for w in &z.warnings {
        println!("estimate warning: {w:?}");
    }
    // ANCHOR_END: loglik

    let exact = exact_log_partition(target, 1.0, par)?.log_z;
    let ll_exact = mean_log_likelihood(target, &data, exact, par);
    println!("exact:     log Z = {exact:.3}; log-likelihood {ll_exact:.3}");
    assert!(
        (z.log_z - exact).abs() <= 4.0 * z.std_err + 1e-9,
        "PTT + BAR {} ± {} against the exact {exact}",
        z.log_z,
        z.std_err
    );
    Ok(())
}

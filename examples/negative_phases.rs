//! Training with a negative phase chosen at run time (`ebm_train::AnyNegative`), as `ebm
//! train --negative` does, from the library: the same trainer runs PCD, CD, parallel tempering,
//! Jarzynski reweighting and tethered Monte Carlo on the embedded 8x8 digits, and each trained
//! RBM (12 hidden units) is scored by its exact log-likelihood.
//!
//! Run with `cargo run --release --example negative_phases [NAME...]` (names among pcd, cd,
//! pt, jarzynski, tmc; all by default; a few seconds).

use ebm::data::loaders::digits;
use ebm::models::exact::log_partition_by_hidden;
use ebm::prelude::*;
use ebm::samplers::tempering::SwapSchedule;
use ebm_train::{
    AnyNegative, Cd, Jarzynski, LearningRate, Pcd, Tempered, Tmc, TmcDirection, Trainer,
    TrainingData, initial_model, mean_log_likelihood,
};

// ANCHOR: choose
/// The phase named `name`, with small settings.
fn negative(name: &str) -> Option<AnyNegative> {
    Some(match name {
        "pcd" => AnyNegative::Pcd(Pcd {
            sweeps: 5,
            chains: 200,
        }),
        "cd" => AnyNegative::Cd(Cd { sweeps: 1 }),
        "pt" => AnyNegative::Pt(Tempered {
            betas: vec![0.4, 0.6, 0.8, 1.0],
            schedule: SwapSchedule::DeterministicEvenOdd,
            sweeps: 1,
            rounds: 1,
            chains: 100,
        }),
        "jarzynski" => AnyNegative::Jarzynski(Jarzynski {
            sweeps: 5,
            chains: 200,
            resample_below_ess: 0.5,
        }),
        "tmc" => AnyNegative::Tmc(Tmc {
            alpha: 400.0,
            points: 21,
            replicas: 8,
            sweeps: 5,
            measure: 2,
            border: 0.2,
            direction: TmcDirection::Weights,
            dimensions: 1,
        }),
        _ => return None,
    })
}
// ANCHOR_END: choose

fn main() -> Result<(), Error> {
    let par = Par::Rayon;
    let names: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = if names.is_empty() {
        vec!["pcd", "cd", "pt", "jarzynski", "tmc"]
    } else {
        names.iter().map(String::as_str).collect()
    };
    let visible = Bernoulli::<f64>::zeros(64);
    let data = TrainingData::from_f64(&visible, digits().data())?;
    let start = initial_model(visible, Bernoulli::zeros(12), Some(&data), 0.01, 1)?;
    let ll = |model: &Rbm<Bernoulli<f64>, Bernoulli<f64>>| -> Result<f64, Error> {
        let log_z = log_partition_by_hidden(model, 1.0, par)?;
        Ok(mean_log_likelihood(model, &data, log_z, par))
    };
    println!("initial model: exact log-likelihood {:.3}", ll(&start)?);
    for name in names {
        let Some(phase) = negative(name) else {
            eprintln!("unknown negative phase {name} (pcd, cd, pt, jarzynski or tmc)");
            std::process::exit(2);
        };
        // ANCHOR: train
        let mut trainer = Trainer::new(phase, 100);
        trainer.learning_rate = LearningRate::Constant(0.1);
        let mut state = trainer.init(start.clone(), &data, 2, par)?;
        trainer.run(&mut state, &data, None, 1000, par, ())?;
        // ANCHOR_END: train
        let after = ll(&state.model)?;
        println!("{name:>9}: exact log-likelihood after 1000 updates {after:.3}");
        assert!(after > ll(&start)?, "{name} did not learn");
    }
    Ok(())
}

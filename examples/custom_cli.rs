//! The model of the book's "Extending" part on the command line: `ebm::cli::custom` gives it
//! `sample` (parallel tempering with run records and warnings) and `log-z` (AIS beside the
//! exact value) in a `main` of a few lines.
//!
//! `cargo run --release --example custom_cli -- sample --out chains.npy` samples it;
//! `cargo run --release --example custom_cli -- --help` lists the options. Without arguments it
//! runs both commands into a temporary directory and checks their records: the chains at the
//! target follow the exact law (chi-square), and AIS agrees with the exact log Z.

#[path = "extending/ising_chain.rs"]
mod ising_chain;

use std::process::ExitCode;

// ANCHOR: main
use ebm::cli::custom::run_tractable_model;
use ising_chain::{HeatBath, IsingChain};

/// `custom_cli sample --out chains.npy`, `custom_cli log-z --out logz.json`, `--help`.
fn program(args: Vec<String>) -> ExitCode {
    let model = IsingChain {
        n: 10,
        coupling: 0.6,
        field: 0.1,
    };
    // The user's own kernel (any `Kernel<IsingChain>`: the library's, composed, ...).
    let kernel = HeatBath { scale: 1.0 };
    run_tractable_model("ising-chain", model, kernel, args)
}
// ANCHOR_END: main

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() > 1 {
        return program(args);
    }
    match self_check() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `sample` at beta = 0.7 (a ladder ending below 1) and `log-z`, and checks the outputs
/// against the model's exact law and exact log Z.
fn self_check() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("ebm-custom-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = |f: &str| dir.join(f).display().to_string();
    let run = |line: String| {
        let args =
            std::iter::once("custom_cli".to_string()).chain(line.split(' ').map(String::from));
        match program(args.collect()) {
            code if code == ExitCode::SUCCESS => Ok(()),
            _ => Err(format!("`{line}` failed")),
        }
    };
    // ANCHOR: run
    run(format!(
        "sample --betas 0.1,0.2,0.35,0.5,0.7 --chains 4000 --rounds 200 --seed 1 --out {}",
        path("chains.npy")
    ))?;
    run(format!(
        "log-z --rungs 100 --chains 500 --seed 2 --out {}",
        path("logz.json")
    ))?;
    // ANCHOR_END: run
    let model = IsingChain {
        n: 10,
        coupling: 0.6,
        field: 0.1,
    };
    let chains = ebm::data::loaders::npy::load_npy(path("chains.npy"))?;
    let fit = ebm::testkit::goodness_of_fit(&model, chains.data(), 0.7);
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path("logz.json"))?)?;
    let (ais, std_err, exact) = (
        record["results"]["ais"]["log_z"]
            .as_f64()
            .unwrap_or(f64::NAN),
        record["results"]["ais"]["std_err"]
            .as_f64()
            .unwrap_or(f64::NAN),
        record["results"]["exact"].as_f64().unwrap_or(f64::NAN),
    );
    println!(
        "sample at beta 0.7: chi-square p-value {:.3} against the exact law; \
         log-z: AIS {ais:.4} +- {std_err:.4}, exact {exact:.4}",
        fit.p_value
    );
    std::fs::remove_dir_all(&dir)?;
    if fit.p_value < 1e-4 {
        return Err(format!("the sampled chains are off the exact law: {fit:?}").into());
    }
    if (ais - exact).abs() > 4.0 * std_err + 1e-3 {
        return Err("AIS disagrees with the exact log Z".into());
    }
    Ok(())
}

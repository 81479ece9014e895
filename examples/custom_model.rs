//! Plugging in your own energy model, from start to finish: a periodic 1D Ising chain
//! \\(E(s) = -J \sum_i s_i s_{i+1} - h \sum_i s_i\\), listed for the exact tests, with a
//! heat-bath kernel written by the user and the library's generic single-site Metropolis;
//! both tested exactly with `ebm::testkit` (with a broken kernel as negative control), composed,
//! run under parallel tempering (deterministic even/odd swaps) and used to estimate log Z by
//! AIS and by BAR on the PT samples, against the exact value.
//!
//! The book's "Extending" part walks through this file. Run with
//! `cargo run --release --example custom_model` (a few seconds). With
//! `EBM_FIGURES=book/src/figures`, it also draws the book's figure of AIS estimates against the
//! number of temperatures with `ebm::plot` (the default feature `plot`).

//!
//! The model and the heat-bath kernel are in `extending/ising_chain.rs`.

#[path = "extending/ising_chain.rs"]
mod ising_chain;

use ebm::estimators::{Ais, LogZEstimate, PairAccumulator, Start, ais};
use ebm::prelude::*;
use ebm::samplers::tempering::{ParallelTempering, PtState, SwapSchedule, TemperatureLadder};
use ebm::testkit::{AtBeta, goodness_of_fit, invariance};
use ising_chain::{HeatBath, IsingChain};

/// Draws per exact test, and the p-value below which a test rejects.
const DRAWS: usize = 50_000;
const ALPHA: f64 = 1e-4;

fn main() -> Result<(), Error> {
    let model = IsingChain {
        n: 10,
        coupling: 0.6,
        field: 0.1,
    };
    let beta = 1.0;

    // ANCHOR: test
    // Draw 50 000 states exactly, take one step, compare with the exact law (chi-square).
    let good = invariance(&model, &HeatBath { scale: 1.0 }, beta, DRAWS, 1);
    let metropolis = invariance(&model, &SingleSiteMetropolis::new(1), beta, DRAWS, 2);
    // Negative control: the same test must reject a kernel at the wrong temperature.
    let broken = invariance(&model, &HeatBath { scale: 0.7 }, beta, DRAWS, 3);
    println!(
        "exact invariance test, p-values: heat bath {:.3}, Metropolis {:.3}, broken heat bath {:.1e}",
        good.p_value, metropolis.p_value, broken.p_value
    );
    assert!(good.p_value > ALPHA && metropolis.p_value > ALPHA);
    assert!(broken.p_value < ALPHA, "the broken kernel must be rejected");
    // The library's heat bath needs only each site's alphabet (`FiniteAlphabet`); `AtBeta`
    // runs any kernel at a fixed other temperature: a ready-made negative control.
    let library = invariance(&model, &SingleSiteHeatBath::new(1), beta, DRAWS, 4);
    let at_half = AtBeta(SingleSiteHeatBath::new(1), 0.5 * beta);
    let elsewhere = invariance(&model, &at_half, beta, DRAWS, 5);
    assert!(library.p_value > ALPHA && elsewhere.p_value < ALPHA);
    // ANCHOR_END: test

    // ANCHOR: compose
    // One heat-bath sweep then two Metropolis sweeps; or, per chain, one of the two at random.
    let cycle = Cycle::new(
        HeatBath { scale: 1.0 },
        Repeat::new(SingleSiteMetropolis::new(1), 2),
    );
    let mixture = Mixture::new(HeatBath { scale: 1.0 }, SingleSiteMetropolis::new(1), 0.25)?;
    let c = invariance(&model, &cycle, beta, DRAWS, 4);
    let m = invariance(&model, &mixture, beta, DRAWS, 5);
    println!(
        "composed kernels, p-values: cycle {:.3}, mixture {:.3}",
        c.p_value, m.p_value
    );
    assert!(c.p_value > ALPHA && m.p_value > ALPHA);
    // ANCHOR_END: compose

    // ANCHOR: pt
    // Eight rungs from beta = 0.2 to 1, deterministic even/odd swaps, 2000 independent systems.
    let ladder = TemperatureLadder::geometric(model, 0.2, 8)?;
    let (systems, rounds) = (2000, 300);
    let rungs = ladder
        .betas()
        .iter()
        .map(|_| ladder.model().new_state(systems))
        .collect();
    let mut pt_state = PtState::new(rungs, 6)?;
    let pt = ParallelTempering::new(cycle, SwapSchedule::DeterministicEvenOdd);
    let mut pairs = PairAccumulator::new(ladder.betas().len())?;
    for round in 0..rounds {
        pt.step(&ladder, &mut pt_state, Par::Rayon);
        if round >= 50 {
            pairs.record_pt(&ladder, &pt_state, Par::Rayon)?; // for BAR below
        }
    }
    // The target rung of the 2000 systems against the exact law.
    let fit = goodness_of_fit(ladder.model(), pt_state.rungs().last().unwrap(), beta);
    println!(
        "PT/DEO, target rung after {rounds} rounds: chi-square p-value {:.3}",
        fit.p_value
    );
    assert!(fit.p_value > ALPHA);
    // ANCHOR_END: pt

    // ANCHOR: logz
    let model = ladder.model();
    let exact = model.log_partition(beta);
    // AIS from exact draws at beta = 0 (the model is Tractable) through 200 temperatures.
    let betas: Vec<f64> = (0..=200).map(|k| k as f64 / 200.0).collect();
    let start = Start::tractable(model, 0.0, 1000, 7, Par::Rayon)?;
    let annealing = TemperatureLadder::new(model.clone(), betas)?;
    let run = ais(
        &Ais::new(SingleSiteMetropolis::new(1)),
        &annealing,
        start,
        Par::Rayon,
    );
    // BAR on the PT samples, chained from the exact log Z of the lowest rung.
    let log_z0 = LogZEstimate::of_model(model, ladder.betas()[0]);
    let bar = pairs.bar(&log_z0)?.estimate;
    println!(
        "log Z: exact {exact:.4}, AIS {:.4} +- {:.4}, BAR {:.4} +- {:.4}",
        run.estimate.log_z, run.estimate.std_err, bar.log_z, bar.std_err
    );
    for (name, e) in [("AIS", &run.estimate), ("BAR", &bar)] {
        assert!(
            (e.log_z - exact).abs() < 4.0 * e.std_err + 1e-3,
            "{name} is off"
        );
    }
    // ANCHOR_END: logz

    if let Some(path) = ebm::plot::book_figure("custom-model-ais.svg") {
        let sweep = ais_figure(model, exact, &path)?;
        // The page's table of these numbers, beside the figure.
        let mut table = format!(
            "| estimate | log Z |\n|---|---|\n| exact (enumeration) | {exact:.4} |\n\
             | AIS, 201 temperatures | {:.4} ± {:.4} |\n| BAR on the PT samples | {:.4} ± {:.4} |\n",
            run.estimate.log_z, run.estimate.std_err, bar.log_z, bar.std_err
        );
        for (temperatures, e) in sweep {
            table += &format!(
                "| AIS, {temperatures} temperatures | {:.4} ± {:.4} |\n",
                e.log_z, e.std_err
            );
        }
        let path = path.with_extension("md");
        std::fs::write(&path, table).map_err(|source| Error::Io { path, source })?;
    }
    Ok(())
}

/// AIS estimates (with two standard errors either side) against the number of temperatures
/// from beta = 0 to 1, with the exact log Z as a horizontal line; returns each number of
/// temperatures with its estimate, each checked to lie within two of its standard errors of the
/// exact value (what the page says).
fn ais_figure(
    model: &IsingChain,
    exact: f64,
    path: &std::path::Path,
) -> Result<Vec<(usize, LogZEstimate)>, Error> {
    use ebm::core::Par::Rayon;
    let (mut low, mut mid, mut high) = (Vec::new(), Vec::new(), Vec::new());
    let mut sweep = Vec::new();
    for (i, steps) in [3usize, 10, 30, 100, 300].into_iter().enumerate() {
        let betas: Vec<f64> = (0..=steps).map(|k| k as f64 / steps as f64).collect();
        let start = Start::tractable(model, 0.0, 1000, 100 + i as u64, Rayon)?;
        let ladder = TemperatureLadder::new(model.clone(), betas)?;
        let e = ais(
            &Ais::new(SingleSiteMetropolis::new(1)),
            &ladder,
            start,
            Rayon,
        )
        .estimate;
        let x = (steps + 1) as f64;
        println!(
            "AIS with {x} temperatures: {:.4} +- {:.4}",
            e.log_z, e.std_err
        );
        assert!(
            (e.log_z - exact).abs() < 2.0 * e.std_err,
            "AIS with {x} temperatures"
        );
        mid.push((x, e.log_z));
        low.push((x, e.log_z - 2.0 * e.std_err));
        high.push((x, e.log_z + 2.0 * e.std_err));
        sweep.push((steps + 1, e));
    }
    let series = |label: &str, points| ebm::plot::Series {
        label: label.into(),
        points,
    };
    let all = [
        series("AIS, 1000 chains", mid),
        series("- 2 s.e.", low),
        series("+ 2 s.e.", high),
    ];
    ebm::plot::log_z_versus_cost(path, &all, Some(exact), true)?;
    println!("figure written to {}", path.display());
    Ok(sweep)
}

//! Plugging in your own energy model, from start to finish: a periodic 1D Ising chain
//! \\(E(s) = -J \sum_i s_i s_{i+1} - h \sum_i s_i\\), listed for the exact tests, with a
//! heat-bath kernel written by the user and the library's generic single-site Metropolis;
//! both tested exactly with `ebm::testkit` (with a broken kernel as negative control), composed,
//! run under parallel tempering (deterministic even/odd swaps) and used to estimate log Z by
//! AIS and by BAR on the PT samples, against the exact value.
//!
//! The book's "Extending" part walks through this file. Run with
//! `cargo run --release --example custom_model` (a few seconds). With a path,
//! `cargo run --release --example custom_model -- book/src/figures/custom-model-ais.svg`, it
//! also draws the book's figure of AIS estimates against the number of temperatures (needs the
//! default feature `cli`, whose plotting module it uses).

// ANCHOR: model
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::rand::Rng;

/// A periodic chain of `n` spins; a batch of chains is an `n x B` matrix of +-1 values.
#[derive(Clone)]
struct IsingChain {
    n: usize,
    coupling: f64,
    field: f64,
}

impl IsingChain {
    fn energy(&self, s: &[f64]) -> f64 {
        let n = self.n;
        (0..n)
            .map(|i| -self.coupling * s[i] * s[(i + 1) % n] - self.field * s[i])
            .sum()
    }

    /// The field felt by spin `i`: \\(J (s_{i-1} + s_{i+1}) + h\\).
    fn local_field(&self, s: &[f64], i: usize) -> f64 {
        let n = self.n;
        self.coupling * (s[(i + n - 1) % n] + s[(i + 1) % n]) + self.field
    }
}

impl EnergyModel for IsingChain {
    type Scalar = f64;
    type State = DMatrix<f64>;

    /// The tempered energy is beta * E: every unit is tracked, nothing is summed out.
    fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], _par: Par) {
        for (o, col) in out.iter_mut().zip(x.column_iter()) {
            *o = beta * self.energy(col.as_slice());
        }
    }

    fn new_state(&self, n_chains: usize) -> DMatrix<f64> {
        DMatrix::from_element(self.n, n_chains, 1.0)
    }
}
// ANCHOR_END: model

// ANCHOR: enumerable
/// State k lists the spins by the bits of k: bit i set means s_i = +1.
impl Enumerable for IsingChain {
    fn n_states(&self) -> usize {
        1 << self.n
    }

    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        for (i, s) in x.column_mut(chain).iter_mut().enumerate() {
            *s = if (k >> i) & 1 == 1 { 1.0 } else { -1.0 };
        }
    }

    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        let col = x.column(chain);
        (0..self.n).filter(|&i| col[i] > 0.0).map(|i| 1 << i).sum()
    }
}

/// Small enough to list: exact log Z and exact draws come with the listing.
impl ExactLogPartition for IsingChain {
    fn log_partition(&self, beta: f64) -> f64 {
        self.enumerated_log_partition(beta, Par::Rayon)
    }
}

impl ExactSampling for IsingChain {
    fn sample_exact<R: Rng + Send>(&self, x: &mut DMatrix<f64>, beta: f64, r: &mut [R], p: Par) {
        self.sample_enumerated(x, beta, r, p);
    }
}
// ANCHOR_END: enumerable

// ANCHOR: local
/// A spin flip and the energy change it causes: all the library's single-site Metropolis
/// kernel needs.
impl LocalUpdate for IsingChain {
    fn n_sites(&self) -> usize {
        self.n
    }

    fn propose<R: Rng>(&self, s: &[f64], i: usize, _rng: &mut R) -> f64 {
        -s[i]
    }

    fn energy_change(&self, s: &[f64], i: usize, value: f64, beta: f64) -> f64 {
        -beta * (value - s[i]) * self.local_field(s, i)
    }
}
// ANCHOR_END: local

// ANCHOR: kernel
/// One heat-bath sweep: each spin in turn is drawn from its exact conditional law
/// p(s_i = +1 | rest) = sigmoid(2 beta_eff h_i), h_i the local field. `scale` multiplies beta
/// in that law: 1 is the correct kernel, anything else a deliberately broken one.
struct HeatBath {
    scale: f64,
}

impl Kernel<IsingChain> for HeatBath {
    type Info = ();

    fn step<R: Rng + Send>(
        &self,
        m: &IsingChain,
        beta: f64,
        x: &mut DMatrix<f64>,
        rngs: &mut [R],
        _par: Par,
    ) {
        // Chain j consumes only rngs[j]: reproducible whatever the thread count.
        for (mut col, rng) in x.column_iter_mut().zip(rngs.iter_mut()) {
            for i in 0..m.n {
                let h = m.local_field(col.as_slice(), i);
                let p_up = 1.0 / (1.0 + (-2.0 * self.scale * beta * h).exp());
                col[i] = if f64::uniform(rng) < p_up { 1.0 } else { -1.0 };
            }
        }
    }
}
// ANCHOR_END: kernel

use ebm::estimators::{Ais, PairAccumulator, Start, ais};
use ebm::samplers::tempering::{ParallelTempering, PtState, SwapSchedule, TemperatureLadder};
use ebm::testkit::{goodness_of_fit, invariance};

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
    let fit = goodness_of_fit(ladder.model(), pt_state.rungs.last().unwrap(), beta);
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
    let log_z0 = Start::tractable(model, ladder.betas()[0], 2, 0, Par::Rayon)?.log_z;
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

    if let Some(path) = std::env::args().nth(1) {
        ais_figure(model, exact, std::path::Path::new(&path))?;
    }
    Ok(())
}

/// AIS estimates (with two standard errors either side) against the number of temperatures
/// from beta = 0 to 1, with the exact log Z as a horizontal line.
#[cfg(feature = "cli")]
fn ais_figure(model: &IsingChain, exact: f64, path: &std::path::Path) -> Result<(), Error> {
    use ebm::core::Par::Rayon;
    let (mut low, mut mid, mut high) = (Vec::new(), Vec::new(), Vec::new());
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
        mid.push((x, e.log_z));
        low.push((x, e.log_z - 2.0 * e.std_err));
        high.push((x, e.log_z + 2.0 * e.std_err));
    }
    let series = |label: &str, points| ebm_cli::plot::Series {
        label: label.into(),
        points,
    };
    let all = [
        series("AIS, 1000 chains", mid),
        series("- 2 s.e.", low),
        series("+ 2 s.e.", high),
    ];
    ebm_cli::plot::log_z_versus_cost(path, &all, Some(exact), true)?;
    println!("figure written to {}", path.display());
    Ok(())
}

#[cfg(not(feature = "cli"))]
fn ais_figure(_: &IsingChain, _: f64, path: &std::path::Path) -> Result<(), Error> {
    eprintln!("{}: figures need the feature `cli`", path.display());
    Ok(())
}

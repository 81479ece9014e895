//! Exercises 2 and 3 of the book's *Exercises* page (worked solutions): what the exact tests of
//! `ebm::testkit` see and do not see, on the book's periodic Ising chain.
//!
//! - A kernel that does nothing passes the one-step invariance and detailed-balance tests;
//!   only a measure of mixing exposes it: the autocorrelation of the energy along a run never
//!   decays, so its integrated time grows with the length of the run.
//! - A heat bath with an off-by-one error (spin i drawn from the field of spin i + 1) fails
//!   the invariance test.
//!
//! Run with `cargo run --release --example exercise_kernels` (a second). The numbers it prints
//! are the ones the page shows (written where `EBM_FIGURES` points).

#[path = "extending/ising_chain.rs"]
mod ising_chain;

use ebm::core::diagnostics::integrated_autocorrelation_time;
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::rand::Rng;
use ebm::testkit::{detailed_balance, exact_draws, invariance};
use ising_chain::{HeatBath, IsingChain};

// ANCHOR: stay
/// The identity kernel: every chain stays where it is.
struct Stay;

impl Kernel<IsingChain> for Stay {
    type Info = ();

    fn step<R: Rng + Send>(
        &self,
        _: &IsingChain,
        _: f64,
        _: &mut DMatrix<f64>,
        _: &mut [R],
        _: Par,
    ) {
    }
}
// ANCHOR_END: stay

// ANCHOR: off_by_one
/// The heat bath of `ising_chain.rs` with an off-by-one error: spin `i` is drawn from the
/// local field of spin `i + 1`.
struct OffByOne;

impl Kernel<IsingChain> for OffByOne {
    type Info = ();

    fn step<R: Rng + Send>(
        &self,
        m: &IsingChain,
        beta: f64,
        x: &mut DMatrix<f64>,
        rngs: &mut [R],
        _par: Par,
    ) {
        for (mut col, rng) in x.column_iter_mut().zip(rngs.iter_mut()) {
            for i in 0..m.n {
                let h = m.local_field(col.as_slice(), (i + 1) % m.n);
                let p_up = 1.0 / (1.0 + (-2.0 * beta * h).exp());
                col[i] = if f64::uniform(rng) < p_up { 1.0 } else { -1.0 };
            }
        }
    }
}
// ANCHOR_END: off_by_one

/// The integrated autocorrelation time, in steps, of the energy of 100 chains along `steps`
/// steps of `kernel` from exact draws.
fn energy_tau<K: Kernel<IsingChain>>(model: &IsingChain, kernel: &K, steps: usize) -> f64 {
    let mut state = exact_draws(model, 1.0, 100, 5);
    let mut series: Vec<Vec<f64>> = (0..100).map(|_| Vec::with_capacity(steps)).collect();
    for _ in 0..steps {
        kernel.step(
            model,
            1.0,
            &mut state.chains,
            state.rngs.as_mut_slice(),
            Par::Seq,
        );
        for (s, col) in series.iter_mut().zip(state.chains.column_iter()) {
            s.push(model.energy(col.as_slice()));
        }
    }
    let views: Vec<&[f64]> = series.iter().map(Vec::as_slice).collect();
    integrated_autocorrelation_time(&views, 6.0)
        .expect("the chains' energies vary")
        .tau
}

/// A p-value as the page writes it (one below the smallest double is "< 1e-300").
fn p_value(p: f64) -> String {
    if p < 1e-300 {
        "< 1e-300".into()
    } else {
        format!("{p:.3}")
    }
}

fn main() -> Result<(), Error> {
    let model = IsingChain {
        n: 8,
        coupling: 0.6,
        field: 0.2,
    };
    // ANCHOR: tests
    let (n, seed) = (100_000, 3);
    let rows = [
        (
            "heat bath",
            invariance(&model, &HeatBath { scale: 1.0 }, 1.0, n, seed),
        ),
        (
            "does nothing: invariance",
            invariance(&model, &Stay, 1.0, n, seed),
        ),
        (
            "does nothing: detailed balance",
            detailed_balance(&model, &Stay, 1.0, n, seed),
        ),
        (
            "off-by-one heat bath",
            invariance(&model, &OffByOne, 1.0, n, seed),
        ),
    ];
    // The energy's autocorrelation time along runs of 500 and of 2000 steps.
    let tau = |kernel: &dyn Fn(usize) -> f64| [kernel(500), kernel(2000)];
    let taus = [
        (
            "heat bath",
            tau(&|s| energy_tau(&model, &HeatBath { scale: 1.0 }, s)),
        ),
        ("does nothing", tau(&|s| energy_tau(&model, &Stay, s))),
    ];
    // ANCHOR_END: tests
    let mut table = String::from("| kernel and test | p-value |\n|---|---|\n");
    for (name, test) in &rows {
        println!("{name:<32} p-value {:.3e}", test.p_value);
        table += &format!("| {name} | {} |\n", p_value(test.p_value));
    }
    table += "\n| kernel | tau_int of the energy, run of 500 steps | run of 2000 steps |\n\
              |---|---|---|\n";
    for (name, [short, long]) in &taus {
        println!(
            "{name:<32} tau_int of the energy: {short:.2} (500 steps), {long:.2} (2000 steps)"
        );
        table += &format!("| {name} | {short:.2} | {long:.2} |\n");
    }
    // What the page says: the correct heat bath and the kernel that does nothing pass the
    // one-step tests, the off-by-one heat bath fails, and only the autocorrelation of the
    // energy tells the useless kernel apart.
    assert!(rows[0].1.p_value > 1e-3 && rows[1].1.p_value > 1e-3 && rows[2].1.p_value > 1e-3);
    assert!(
        rows[3].1.p_value < 1e-6,
        "the off-by-one heat bath must fail"
    );
    // The heat bath forgets its energy within a few steps whatever the run's length; the
    // kernel that does nothing never does, so its "time" is a fixed fraction of the run.
    let ([hb_short, hb_long], [stay_short, stay_long]) = (taus[0].1, taus[1].1);
    assert!(hb_short < 5.0 && hb_long < 5.0);
    assert!(stay_short > 0.4 * 500.0 && stay_long > 0.4 * 2000.0);
    if let Some(path) = ebm::plot::book_figure("exercise-kernels.md") {
        std::fs::write(&path, table).map_err(|source| Error::Io { path, source })?;
    }
    Ok(())
}

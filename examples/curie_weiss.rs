//! Why plain Gibbs sampling is not enough: the Curie–Weiss model below its critical
//! temperature is bimodal with two exactly equal modes (m > 0 and m < 0), yet alternating Gibbs
//! sampling on its RBM form (spin visibles, one Gaussian hidden unit) stays in the mode it
//! starts in, because crossing costs a time of order exp(N Δf). Parallel tempering on a
//! temperature ladder (deterministic even/odd swaps) recovers the exact mode weights.
//!
//! Run with `cargo run --release --example curie_weiss`.

use ebm::prelude::*;
use ebm::samplers::tempering::{
    Ladder, ParallelTempering, PtDiagnostics, PtState, SwapSchedule, TemperatureLadder,
};

/// The density of the magnetisation per spin \\(m = 2k/N - 1\\) (\\(k\\) spins up) from the
/// probability of each up count `p[k]`, over bins of 3 consecutive counts (symmetric about
/// \\(m = 0\\) when \\(N + 1\\) is a multiple of 3), at each bin's middle count.
fn density(p: &[f64]) -> Vec<(f64, f64)> {
    let n = (p.len() - 1) as f64;
    assert_eq!(p.len() % 3, 0, "N + 1 must be a multiple of 3");
    p.chunks(3)
        .enumerate()
        .map(|(b, q)| {
            let m = 2.0 * (3 * b + 1) as f64 / n - 1.0;
            (m, q.iter().sum::<f64>() / (3.0 * 2.0 / n))
        })
        .collect()
}

/// The fraction of the chains of `v` (one column each, spins) with each up count.
fn up_counts(v: &ebm::nalgebra::DMatrix<f64>, counts: &mut [f64]) {
    for c in v.column_iter() {
        counts[c.iter().filter(|&&s| s > 0.0).count()] += 1.0;
    }
}

fn main() -> Result<(), Error> {
    let (n, w) = (200, 1.2);
    let cw = CurieWeiss::new(n, w * w, 0.0)?;
    let rbm = cw.to_rbm()?; // Rbm<Spin<f64>, Gaussian<f64>>, W = w / sqrt(N)
    let beta = 1.0;

    let (chains, sweeps) = (500, 2000);
    // Every chain starts in the + mode (all spins up).
    let mut state = ChainState::new(rbm.new_state(chains), 1);
    state.chains.visible.fill(1.0);
    let mut plus_fraction = Vec::new();
    run(
        &rbm,
        &Gibbs::new(1),
        beta,
        &mut state,
        sweeps,
        Par::Rayon,
        FnObserver(|step, info: &StepInfo<'_, _, RbmChains<f64>>| {
            if step % 500 == 0 {
                let plus = info
                    .chains
                    .visible
                    .column_iter()
                    .filter(|c| c.sum() > 0.0)
                    .count();
                plus_fraction.push((step, plus as f64 / chains as f64));
            }
            Ok(())
        }),
    )?;

    // Exact answers from the magnetisation distribution.
    let exact_plus = cw.positive_mode_weight(beta);
    let m_star = cw.mean_field_magnetisation(beta);
    println!(
        "Curie–Weiss, N = {n}, w = {w} (beta J = {:.2}): modes at m = ±{m_star:.3}",
        w * w
    );
    println!(
        "barrier Δf = {:.4} per spin, so a mode switch takes of the order of exp(N Δf) = {:.1e} sweeps",
        cw.barrier(beta),
        (n as f64 * cw.barrier(beta)).exp()
    );
    println!("exact weight of the + mode: {exact_plus:.3}");
    for (step, f) in &plus_fraction {
        println!(
            "after {step:>5} Gibbs sweeps of {chains} chains started at m = +1: fraction in + mode = {f:.3}"
        );
    }
    let m_mean = state
        .chains
        .visible
        .column_iter()
        .map(|c| c.sum() / n as f64)
        .sum::<f64>()
        / chains as f64;
    println!("sampled mean magnetisation {m_mean:.3}; exact mean magnetisation 0 (by symmetry)");
    assert!(
        plus_fraction.iter().all(|&(_, f)| f == 1.0),
        "a Gibbs chain left the + mode"
    );
    println!("Gibbs sampling is stuck in one mode.\n");

    // Parallel tempering: 12 rungs from beta = 0.3 (unimodal, beta J < 1) to 1, DEO swaps,
    // every chain of every rung starting in the + mode.
    let ladder = TemperatureLadder::geometric(rbm.clone(), 0.3, 12)?;
    let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
    let (systems, rounds, burn_in) = (100, 2000, 200);
    let rungs = (0..ladder.n_rungs())
        .map(|_| {
            let mut x = rbm.new_state(systems);
            x.visible.fill(1.0);
            x
        })
        .collect();
    let mut pt_state = PtState::new(rungs, 2)?;
    let (mut plus, mut total) = (0usize, 0usize);
    let mut pt_counts = vec![0.0; n + 1];
    let mut diagnostics = PtDiagnostics::new(systems);
    for round in 0..rounds {
        diagnostics.record(&pt.step(&ladder, &mut pt_state, Par::Rayon));
        if round >= burn_in {
            let target = pt_state.rungs().last().expect("at least one rung");
            plus += target
                .visible
                .column_iter()
                .filter(|c| c.sum() > 0.0)
                .count();
            total += systems;
            up_counts(&target.visible, &mut pt_counts);
        }
    }
    let w = plus as f64 / total as f64;
    println!(
        "parallel tempering, {} rungs (beta from 0.3 to 1), DEO swaps, {systems} systems x {rounds} rounds:",
        ladder.n_rungs()
    );
    let rates: Vec<String> = diagnostics
        .acceptance_rates()
        .iter()
        .map(|a| format!("{a:.2}"))
        .collect();
    println!("swap acceptance per pair: [{}]", rates.join(", "));
    println!(
        "communication barrier {:.2}; round trips per system and round {:.3} (ideal DEO with these rates: {:.3})",
        diagnostics.communication_barrier(),
        diagnostics.round_trip_rate(),
        diagnostics.ideal_deo_round_trip_rate()
    );
    println!("weight of the + mode at beta = 1: {w:.3} (exact {exact_plus:.3}; Gibbs: 1.000)");

    // The book's figure: the law of m, exact and as each sampler saw it (written where
    // EBM_FIGURES points).
    if let Some(path) = ebm::plot::book_figure("curie-weiss-magnetisation.svg") {
        let mut ags_counts = vec![0.0; n + 1];
        up_counts(&state.chains.visible, &mut ags_counts);
        let fractions = |c: Vec<f64>| {
            let total: f64 = c.iter().sum();
            c.into_iter().map(|x| x / total).collect::<Vec<_>>()
        };
        let series = [
            ("exact", cw.up_count_distribution(beta)),
            ("Gibbs, 500 chains after 2000 sweeps", fractions(ags_counts)),
            ("parallel tempering, target rung", fractions(pt_counts)),
        ]
        .map(|(label, p)| ebm::plot::Series {
            label: label.into(),
            points: density(&p),
        });
        ebm::plot::line_chart(
            &path,
            "Curie–Weiss, N = 200, beta J = 1.44",
            ("magnetisation per spin m", "probability density"),
            &series,
        )?;
    }
    Ok(())
}

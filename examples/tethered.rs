//! Tethered Monte Carlo on a bimodal RBM whose answer is known exactly.
//!
//! The rank-1 RBM with N_v = 1000 Bernoulli visibles, one hidden unit, uniform couplings
//! lambda = 1, visible fields b and hidden field -lambda N_v / 2 has two modes of the mean
//! activity m = S / N_v separated by a barrier of about 30 nats; its law of S is a 1D sum, so
//! p(m_hat), the barrier and the mode weights are exact. Plain Gibbs sampling never crosses;
//! TMC measures <m> at fixed m_hat on a grid, integrates Omega' = m_hat - <m> and recovers both
//! peaks, the barrier and the weights; drawing m_hat from p and running 30 TMC sweeps
//! generates samples with the model's mode weights.
//!
//! Run with `cargo run --release --example tethered` (about 30 s on two shared cores). With
//! `EBM_FIGURES=book/src/figures` it also draws the book's figure of ln p(m_hat), TMC against
//! exact.

use ebm::prelude::*;
use ebm::samplers::tethered::OrderParameter;
use ebm::samplers::tethered::profile::{
    ProfileSettings, Reconstruction, generate, measure_profile, profile_chains, uniform_grid,
};

const N: usize = 1000;
const LAMBDA: f64 = 1.0;

fn model(b: f64) -> Result<Rbm<Bernoulli<f64>, Bernoulli<f64>>, Error> {
    Rbm::new(
        Bernoulli::new(vec![b; N]),
        Bernoulli::new(vec![-LAMBDA * N as f64 / 2.0]),
        ebm::nalgebra::DMatrix::from_element(N, 1, LAMBDA),
    )
}

/// ln p(S) up to a constant: ln C(N, S) + b S + ln(1 + e^{lambda (S - N/2)}).
fn log_weights(b: f64) -> Vec<f64> {
    let mut ln_binom = 0.0;
    (0..=N)
        .map(|s| {
            if s > 0 {
                ln_binom += ((N - s + 1) as f64 / s as f64).ln();
            }
            let x = LAMBDA * (s as f64 - N as f64 / 2.0);
            ln_binom + b * s as f64 + x.max(0.0) + (-x.abs()).exp().ln_1p()
        })
        .collect()
}

fn main() -> Result<(), Error> {
    let b = -LAMBDA / 2.0 + 0.003; // slightly unequal modes
    let rbm = model(b)?;
    let (alpha, par) = (1e5, Par::Rayon);
    let grid = uniform_grid(0.3, 0.7, 151)?;
    let order = OrderParameter::uniform(N)?;

    // Exact reference: the canonical law of m = S / N convolved with the tether's Gaussian.
    let values: Vec<f64> = (0..=N).map(|s| s as f64 / N as f64).collect();
    let exact = Reconstruction::exact(&values, &log_weights(b), &grid, alpha)?;
    let exact_barrier = exact.barrier().expect("the model is bimodal");

    // ANCHOR: profile
    // TMC: 8 chains per grid point, 50 sweeps burn-in, 150 sweeps time-averaged.
    let settings = ProfileSettings {
        alpha,
        replicas: 8,
        burn_in: 50,
        measure: 150,
    };
    let mut state = profile_chains(&rbm, grid.len() * settings.replicas, 1);
    let profile = measure_profile(&rbm, &order, &grid, &settings, &mut state, 1.0, par)?;
    let reconstruction = profile.reconstruct(alpha)?;
    let tmc = reconstruction.barrier().expect("TMC finds two modes");
    // ANCHOR_END: profile
    if let Some(path) = ebm::plot::book_figure("tethered-profile.svg") {
        let curve = |label: &str, r: &Reconstruction| ebm::plot::Series {
            label: label.into(),
            points: r
                .grid
                .iter()
                .copied()
                .zip(r.log_density.iter().copied())
                .collect(),
        };
        let title = format!(
            "rank-1 RBM, N = {N}, alpha = {alpha:.0e}: barrier {:.1} nats (exact {:.1})",
            tmc.from_left, exact_barrier.from_left
        );
        let series = [
            curve("exact", &exact),
            curve("TMC, 8 replicas x 150 sweeps", &reconstruction),
        ];
        ebm::plot::tethered_log_density(&path, &title, &series)?;
    }

    println!("                     exact     TMC");
    println!(
        "left mode        {:9.4} {:9.4}",
        exact_barrier.left_mode, tmc.left_mode
    );
    println!(
        "right mode       {:9.4} {:9.4}",
        exact_barrier.right_mode, tmc.right_mode
    );
    println!(
        "barrier (nats)   {:9.3} {:9.3}",
        exact_barrier.from_left, tmc.from_left
    );
    println!(
        "left weight      {:9.4} {:9.4}",
        exact_barrier.left_weight, tmc.left_weight
    );

    // Plain Gibbs from v = 0 (left mode): the largest m any of 64 chains reaches.
    let mut gibbs = ChainState::new(rbm.default_chains(64), 2);
    let mut max_m: f64 = 0.0;
    for _ in 0..2000 {
        Gibbs::new(1).step(&rbm, 1.0, &mut gibbs.chains, gibbs.rngs.as_mut_slice(), par);
        for col in gibbs.chains.visible.column_iter() {
            max_m = max_m.max(col.sum() / N as f64);
        }
    }
    println!(
        "Gibbs, 64 chains x 2000 sweeps from the left mode: max m = {max_m:.3} (saddle at 0.5)"
    );

    // ANCHOR: generate
    // Generation: m_hat ~ p (here the exact p), 30 TMC sweeps per sample.
    let n = 4000;
    let samples = generate(&rbm, &order, &exact, alpha, n, 30, 3, par)?;
    let left = samples
        .state
        .chains
        .visible
        .column_iter()
        .filter(|c| c.sum() < N as f64 / 2.0)
        .count() as f64
        / n as f64;
    // ANCHOR_END: generate
    let se = (left * (1.0 - left) / n as f64).sqrt();
    println!(
        "TMC generation ({n} samples, 30 sweeps): left weight {left:.4} ± {se:.4}, exact {:.4}",
        exact_barrier.left_weight
    );
    Ok(())
}

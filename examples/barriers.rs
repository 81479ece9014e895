//! Why Gibbs sampling gets stuck, measured: escape times of alternating Gibbs sampling (AGS)
//! between the two modes of the Curie–Weiss model against the exact mean first-passage time
//! of the reduced chain on the magnetisation, their growth as exp(N Δf), and the hidden-space
//! move (Algorithm 3) that removes the barrier.
//!
//! Run with `cargo run --release --example barriers`.

use ebm::models::barriers::{ReducedChain, ReducedSampler};
use ebm::prelude::*;
use ebm::samplers::{EscapeTimes, LatentGibbs};

/// Measured escape times (AGS and Algorithm 3) from S0 ≈ m* N until m <= -m*/2.
fn measure(
    cw: &CurieWeiss,
    k0: usize,
    m: f64,
    chains: usize,
    latent: bool,
) -> Result<(f64, f64), Error> {
    let rbm = cw.to_rbm()?;
    let n = cw.n();
    let mut state = ChainState::new(rbm.new_state(chains), 7);
    for mut col in state.chains.visible.column_iter_mut() {
        for (i, x) in col.iter_mut().enumerate() {
            *x = if i < k0 { 1.0 } else { -1.0 };
        }
    }
    let mut esc = EscapeTimes::new(chains, |c: &RbmChains<f64>, i: usize| {
        c.visible.column(i).sum() <= -m / 2.0 * n as f64
    });
    while !esc.all_escaped() {
        if latent {
            run(
                &rbm,
                &LatentGibbs::single(),
                1.0,
                &mut state,
                10,
                Par::Rayon,
                &mut esc,
            )?;
        } else {
            run(
                &rbm,
                &Gibbs::new(1),
                1.0,
                &mut state,
                200,
                Par::Rayon,
                &mut esc,
            )?;
        }
    }
    let s = esc.summary();
    Ok((s.mean, s.std_error))
}

fn main() -> Result<(), Error> {
    let w: f64 = 1.2;
    let barrier = CurieWeiss::new(10, w * w, 0.0)?.barrier(1.0);
    println!("Curie–Weiss, w = {w}: barrier Δf = {barrier:.5} per spin");
    println!();
    println!(
        "{:>4} {:>14} {:>20} {:>16} {:>20}",
        "N", "exact MFPT", "AGS measured", "exact relax.", "Algorithm 3"
    );
    let mut exact_log = Vec::new();
    for n in [20usize, 30, 40] {
        let cw = CurieWeiss::new(n, w * w, 0.0)?;
        let m = cw.mean_field_magnetisation(1.0);
        let chain = ReducedChain::new(&cw, 1.0, ReducedSampler::Ags)?;
        let k0 = chain.mode_state(m);
        let exact = chain.mean_first_passage(m / 2.0)?[k0];
        let (ags, ags_se) = measure(&cw, k0, m, 400, false)?;
        let (lat, lat_se) = measure(&cw, k0, m, 400, true)?;
        println!(
            "{n:>4} {exact:>14.1} {:>20} {:>16.1} {:>20}",
            format!("{ags:.1} ± {ags_se:.1}"),
            chain.relaxation_time(),
            format!("{lat:.2} ± {lat_se:.2}")
        );
        exact_log.push((n, exact.ln()));
    }
    println!();
    println!("Slope of log τ against N (exact reduced chain), approaching Δf = {barrier:.5}:");
    let mut prev: Option<(usize, f64)> = None;
    for n in (40..=200).step_by(40) {
        let cw = CurieWeiss::new(n, w * w, 0.0)?;
        let m = cw.mean_field_magnetisation(1.0);
        let chain = ReducedChain::new(&cw, 1.0, ReducedSampler::Ags)?;
        let tau = chain.mean_first_passage(m / 2.0)?[chain.mode_state(m)];
        if let Some((n0, l0)) = prev {
            println!(
                "  N = {n0:>3} -> {n:>3}: τ = {tau:.4e}, slope {:.5}",
                (tau.ln() - l0) / (n - n0) as f64
            );
        }
        prev = Some((n, tau.ln()));
    }
    Ok(())
}

//! The Hopfield model at the paper's size (paper 003, Fig. 15 d and e): pair moves in hidden
//! space (Algorithm 4) visit every Mattis state when each hidden unit carries one pattern, and
//! are stuck again when the same model's weights are rotated.
//!
//! N = 128 spins, M = 6 Walsh–Hadamard patterns (pattern μ is bit μ of the site index), w =
//! 1.5, as the RBM with 6 Gaussian hidden units and weights \\(W = (w/\sqrt N)\,\xi\\)
//! (aligned) or \\(W O\\) with a fixed orthogonal \\(O\\) (rotated: the same law over the
//! spins). With these patterns a permutation of the sites permutes the patterns, and flipping
//! every spin flips their signs, so the 12 Mattis states \\(\pm\xi^\mu\\) have exactly equal
//! weights: the ground truth is 1/12 each, no sampling needed. Chains all start at
//! \\(\xi^1\\) and are run by alternating Gibbs sampling (AGS), by AGS with one sweep of
//! Algorithm 4 per step, and by AGS with as many steps as Algorithm 4's time allows; every
//! step, each chain is assigned to the Mattis state of largest overlap.
//!
//! Run with `cargo run --release --example hopfield_latent -- [--seeds 1,2,3] [--steps S]
//! [--record DIR]`.

use ebm::core::FnObserver;
use ebm::models::analytic::Hopfield;
use ebm::models::walsh_hadamard_patterns;
use ebm::prelude::*;
use ebm::samplers::{Grid, LatentGibbs, StepInfo};
use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::time::Instant;

#[path = "common/reproduction.rs"]
mod reproduction;
use reproduction::{Options, invalid, mean_se, write_record};

type Model = Rbm<Spin<f64>, Gaussian<f64>>;

const N: usize = 128;
const P: usize = 6;
const W: f64 = 1.5;
const CHAINS: usize = 32;
/// Steps dropped before the occupations are counted.
const BURN_IN: u64 = 100;
/// AGS steps per Algorithm 4 step at equal time.
const AGS_FACTOR: u64 = 1300;

/// A fixed orthogonal matrix: the Q factor of a seeded uniform matrix.
fn rotation(p: usize) -> DMatrix<f64> {
    let mut rng = ebm::core::ChainRng::seed_from_u64(2024);
    DMatrix::from_fn(p, p, |_, _| rng.random::<f64>() - 0.5)
        .qr()
        .q()
}

/// The Mattis state of largest overlap: `2 mu` for \\(+\xi^\mu\\), `2 mu + 1` for
/// \\(-\xi^\mu\\).
fn mattis_state(patterns: &DMatrix<f64>, v: &[f64]) -> usize {
    let mut best = (0, 0.0f64);
    for (mu, xi) in patterns.column_iter().enumerate() {
        let overlap: f64 = xi.iter().zip(v).map(|(a, b)| a * b).sum();
        if overlap.abs() > best.1.abs() {
            best = (2 * mu + usize::from(overlap < 0.0), overlap);
        }
    }
    best.0
}

/// What one sampler did: per state, the mean occupation over chains and its standard error;
/// state switches per chain-step; seconds.
struct Visits {
    steps: u64,
    occupation: Vec<(f64, f64)>,
    switches: f64,
    seconds: f64,
}

fn visits(
    rbm: &Model,
    patterns: &DMatrix<f64>,
    latent: Option<&LatentGibbs>,
    steps: u64,
    seed: u64,
) -> Result<Visits, Error> {
    let mut state = ChainState::new(rbm.new_state(CHAINS), seed);
    for mut col in state.chains.visible.column_iter_mut() {
        col.copy_from(&patterns.column(0));
    }
    let mut counts = vec![vec![0u64; 2 * P]; CHAINS];
    let mut last = vec![0usize; CHAINS];
    let mut switches = 0u64;
    let start = Instant::now();
    let mut tally = |step: u64, chains: &RbmChains<f64>| {
        for (c, col) in chains.visible.column_iter().enumerate() {
            let s = mattis_state(patterns, col.as_slice());
            switches += u64::from(s != last[c]);
            last[c] = s;
            if step > BURN_IN {
                counts[c][s] += 1;
            }
        }
        Ok(())
    };
    match latent {
        Some(k) => {
            let observer = FnObserver(|step, i: &StepInfo<'_, _, _>| tally(step, i.chains));
            run(rbm, k, 1.0, &mut state, steps, Par::Rayon, observer)?;
        }
        None => {
            let observer = FnObserver(|step, i: &StepInfo<'_, _, _>| tally(step, i.chains));
            run(
                rbm,
                &Gibbs::new(1),
                1.0,
                &mut state,
                steps,
                Par::Rayon,
                observer,
            )?;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let counted = (steps - BURN_IN) as f64;
    let occupation = (0..2 * P)
        .map(|s| {
            let x: Vec<f64> = counts.iter().map(|c| c[s] as f64 / counted).collect();
            mean_se(&x)
        })
        .collect();
    Ok(Visits {
        steps,
        occupation,
        switches: switches as f64 / (steps as f64 * CHAINS as f64),
        seconds,
    })
}

/// The largest offset of a state's occupation from the exact 1/12, in its standard errors
/// (infinite when a state is never visited by any chain while the exact weight is not 0).
fn largest_offset(v: &Visits) -> f64 {
    let exact = 1.0 / (2 * P) as f64;
    v.occupation
        .iter()
        .map(|&(m, se)| {
            if se > 0.0 {
                (m - exact).abs() / se
            } else {
                f64::INFINITY
            }
        })
        .fold(0.0, f64::max)
}

fn main() -> Result<(), Error> {
    let o = Options::parse(&["--seeds", "--steps", "--record"])?;
    let (seeds, steps) = (o.seeds(&[1, 2, 3])?, o.get("--steps", 400u64)?);
    if steps <= BURN_IN + 1 {
        let reason = format!("must exceed the burn-in of {BURN_IN} steps, got {steps}");
        return Err(invalid("--steps", reason));
    }
    let patterns = walsh_hadamard_patterns(N, P)?;
    let aligned = Hopfield::new(patterns.clone(), W * W, vec![0.0; N])?.to_rbm()?;
    let (v, h, w) = aligned.clone().into_parts();
    let rotated = Rbm::new(v, h, w * rotation(P))?;
    // The hidden value of the unit carrying a Mattis state is about w sqrt(N) = 17: a grid of
    // ±24 holds it with seven standard deviations to spare.
    let latent = LatentGibbs {
        grid: Grid {
            points: 32,
            half_width: 24.0,
        },
        ..LatentGibbs::pair()
    };
    for &seed in &seeds {
        let mut out = serde_json::Map::new();
        for (name, rbm) in [("aligned", &aligned), ("rotated", &rotated)] {
            let runs = [
                ("ags", visits(rbm, &patterns, None, steps, seed)?),
                ("alg4", visits(rbm, &patterns, Some(&latent), steps, seed)?),
                (
                    "ags_equal_time",
                    visits(rbm, &patterns, None, steps * AGS_FACTOR, seed)?,
                ),
            ];
            let mut samplers = serde_json::Map::new();
            for (sampler, v) in &runs {
                let offset = largest_offset(v);
                println!(
                    "seed {seed}, {name}, {sampler}: {} steps, {:.4} switches per step, \
                     occupation of xi^1 {:.3} ± {:.3}, largest offset from 1/12 {offset:.1} s.e., {:.1} s",
                    v.steps, v.switches, v.occupation[0].0, v.occupation[0].1, v.seconds
                );
                let occupation: Vec<[f64; 2]> = v.occupation.iter().map(|&(m, s)| [m, s]).collect();
                samplers.insert(
                    sampler.to_string(),
                    json!({
                        "steps": v.steps,
                        "switches_per_step": v.switches,
                        "occupation": occupation,
                        "largest_offset_se": if offset.is_finite() { json!(offset) } else { json!(null) },
                        "seconds": v.seconds,
                    }),
                );
            }
            out.insert(name.to_string(), serde_json::Value::Object(samplers));
        }
        if let Some(dir) = o.record() {
            let settings = json!({"n": N, "patterns": P, "w": W, "chains": CHAINS,
                "burn_in": BURN_IN, "ags_factor": AGS_FACTOR, "grid_points": latent.grid.points,
                "grid_half_width": latent.grid.half_width});
            write_record(&dir, seed, settings, out)?;
        }
    }
    Ok(())
}

//! Bars and Stripes (paper 003, Figs. 9, 13 and 14): moves in hidden space help when each
//! hidden unit codes one independent feature, and only then.
//!
//! An RBM with ±1 visible units and 2L Gaussian (quadratic) hidden units is trained by PCD on
//! all 2^(L+1) - 2 Bars-and-Stripes images of size L x L, with and without an L1 penalty on
//! the weights, and then:
//!
//! - **Fig. 13**, what each hidden unit codes: the largest share of a unit's squared weights on
//!   one line of the image (a row or a column). A unit coding one bar or one stripe has a share
//!   near 1, a unit spread evenly over the image 1/L.
//! - **Figs. 9 and 14**, how chains move: chains started at uniformly drawn stripe images are
//!   run by alternating Gibbs sampling (AGS), by AGS with one sweep of hidden-space Gibbs
//!   updates per step (Algorithm 3), and by AGS with as many steps as Algorithm 3's wall-clock
//!   time allows, and read every 25 steps (the paper's frames). Counted after the first frames
//!   (the burn-in): how often the nearest bars-or-stripes pattern changes between frames, how
//!   often the class (bars / stripes) changes (also counted during the burn-in, from the
//!   uniform starts) and, over the frames that are exactly a stripe image, the mean number of
//!   rows on against its exact value under the model within the stripes. The exact value needs
//!   no sampling: with Gaussian hidden units the unnormalised probability of every image is in
//!   closed form, and there are 2^L stripe images.
//!
//! Run with `cargo run --release --example bas_latent -- [--size L] [--seeds 1,2,3]
//! [--updates N] [--record DIR]` (about 35 minutes for the defaults on two cores). With
//! `--record DIR` each seed's numbers are written to `DIR/seedK.json`, from which
//! `tests/reproductions.rs` renders the table of REPRODUCTIONS.md.

use ebm::core::{ChainRng, FnObserver};
use ebm::data::generators::bars_stripes::bars_and_stripes_all;
use ebm::prelude::*;
use ebm::samplers::{Grid, LatentGibbs, LatentInfo, StepInfo};
use ebm::train::{LearningRate, Pcd, Penalty, Trainer, TrainingData, initial_model};
use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[path = "common/reproduction.rs"]
mod reproduction;
use reproduction::{Options, invalid, mean_se, write_record};

type Model = Rbm<Spin<f64>, Gaussian<f64>>;

/// The run's settings (command-line options in brackets).
struct Settings {
    /// Image side L [--size].
    size: usize,
    /// Seeds of the trainings and chains [--seeds].
    seeds: Vec<u64>,
    /// L1 strength of the regularised training [--l1].
    l1: f64,
    /// PCD updates of each training [--updates].
    updates: u64,
    /// Chains per sampler [--chains].
    chains: usize,
    /// Frames read per chain [--frames], and steps between frames.
    frames: usize,
    frame_steps: u64,
    /// Frames dropped before counting.
    burn_frames: usize,
    /// AGS steps per Algorithm-3 step at equal cost [--ags-factor].
    ags_factor: u64,
    /// Width of a cell of Algorithm 3's grid proposal, in units of the narrowest hidden
    /// unit's standard deviation \\(1/\sqrt{\gamma}\\).
    cell: f64,
    /// Where the per-seed records go [--record].
    record: Option<PathBuf>,
}

fn settings() -> Result<Settings, Error> {
    let o = Options::parse(&[
        "--size",
        "--seeds",
        "--l1",
        "--updates",
        "--chains",
        "--frames",
        "--ags-factor",
        "--record",
    ])?;
    let s = Settings {
        size: o.get("--size", 10)?,
        seeds: o.seeds(&[1, 2, 3])?,
        l1: o.get("--l1", 0.01)?,
        updates: o.get("--updates", 4000)?,
        chains: o.get("--chains", 64)?,
        frames: o.get("--frames", 80)?,
        frame_steps: 25,
        burn_frames: 8,
        ags_factor: o.get("--ags-factor", 2000)?,
        cell: 0.3,
        record: o.record(),
    };
    if !(3..=12).contains(&s.size) {
        return Err(invalid(
            "--size",
            format!("must be in 3..=12, got {}", s.size),
        ));
    }
    if s.chains < 2 || s.frames <= s.burn_frames + 1 {
        let reason = format!("need at least 2 chains and {} frames", s.burn_frames + 2);
        return Err(invalid("--chains/--frames", reason));
    }
    Ok(s)
}

/// PCD-10 on every Bars-and-Stripes image (as ±1), 2L Gaussian hidden units, with the given
/// L1 strength on the weights.
fn train(data: &DMatrix<f64>, s: &Settings, l1: f64, seed: u64) -> Result<Model, Error> {
    let visible = Spin::<f64>::zeros(s.size * s.size);
    let train = TrainingData::from_f64(&visible, data)?;
    let hidden = Gaussian::standard(2 * s.size);
    let model = initial_model(visible, hidden, Some(&train), 0.01, seed)?;
    let pcd = Pcd {
        sweeps: 10,
        chains: 200,
    };
    let mut trainer = Trainer::new(pcd, 100);
    trainer.learning_rate = LearningRate::Constant(0.01);
    trainer.penalty = Penalty { l1, l2: 0.0 };
    let mut state = trainer.init(model, &train, seed, Par::Rayon)?;
    trainer.run(&mut state, &train, None, s.updates, Par::Rayon, ())?;
    Ok(state.model)
}

/// Algorithm 3's grid for the Gaussian hidden units, centred on each unit's prior mode
/// \\(\theta_\mu / \gamma_\mu\\) (see `LatentUnits`): wide enough for every conditional mean
/// \\((\theta_\mu + (W^\top v)_\mu) / \gamma_\mu\\) of the training images plus five standard
/// deviations, in cells of `cell` times the narrowest standard deviation. The grid only
/// shapes the proposal (the move is exact on any grid); a grid that misses the strongly
/// magnetised values would never propose them.
fn grid(model: &Model, data: &DMatrix<f64>, cell: f64) -> Grid {
    let gamma = model.hidden().gamma();
    let inputs = model.weights().transpose() * data;
    let reach = inputs
        .row_iter()
        .zip(gamma)
        .map(|(row, g)| row.amax() / g + 5.0 / g.sqrt())
        .fold(0.0, f64::max);
    let sigma = gamma
        .iter()
        .map(|g| 1.0 / g.sqrt())
        .fold(f64::INFINITY, f64::min);
    Grid {
        points: (2.0 * reach / (cell * sigma)).ceil() as usize,
        half_width: reach,
    }
}

/// Fig. 13: each hidden unit's largest share of its squared weights on one row or column.
fn focus(model: &Model, size: usize) -> Vec<f64> {
    let w = model.weights();
    (0..w.ncols())
        .map(|mu| {
            let col = w.column(mu);
            let total: f64 = col.iter().map(|x| x * x).sum();
            let row = |r: usize| (0..size).map(|c| col[r * size + c].powi(2)).sum::<f64>();
            let column = |c: usize| (0..size).map(|r| col[r * size + c].powi(2)).sum::<f64>();
            let best = (0..size).map(|k| row(k).max(column(k))).fold(0.0, f64::max);
            best / total
        })
        .collect()
}

/// A pattern: its class (0: stripes, constant rows; 1: bars, constant columns) and the bit
/// mask of the lines on. The all-on and all-off images count as stripes here.
type Pattern = (u8, u32);

/// The class of a pattern, `None` for the all-on and all-off images, which are both bars and
/// stripes (a chain that passes through them has not changed class).
fn class(pattern: Pattern, size: usize) -> Option<u8> {
    (pattern.1 != 0 && pattern.1 != (1 << size) - 1).then_some(pattern.0)
}

/// The nearest bars-or-stripes pattern of a ±1 image and its Hamming distance.
fn nearest(v: &[f64], size: usize) -> (Pattern, usize) {
    // Majority vote per line; `at(line, k)` is pixel k of the line.
    let decode = |at: &dyn Fn(usize, usize) -> f64| {
        let (mut mask, mut dist) = (0u32, 0usize);
        for line in 0..size {
            let on = (0..size).filter(|&k| at(line, k) > 0.0).count();
            if 2 * on > size {
                mask |= 1 << line;
                dist += size - on;
            } else {
                dist += on;
            }
        }
        (mask, dist)
    };
    let (rows, by_rows) = decode(&|r, c| v[r * size + c]);
    let (cols, by_cols) = decode(&|c, r| v[r * size + c]);
    let full = (1u32 << size) - 1;
    if by_cols < by_rows && cols != 0 && cols != full {
        ((1, cols), by_cols)
    } else if by_cols < by_rows {
        ((0, if cols == 0 { 0 } else { full }), by_cols)
    } else {
        ((0, rows), by_rows)
    }
}

/// The stripe image with the rows of `mask` on, as ±1 pixels.
fn stripe(mask: u32, size: usize) -> impl Iterator<Item = f64> {
    (0..size * size).map(move |i| {
        if mask >> (i / size) & 1 == 1 {
            1.0
        } else {
            -1.0
        }
    })
}

/// The exact mean number of rows on under the model restricted to the 2^L stripe images
/// (each weighted by \\(e^{-F(v)}\\), the visible free energy in closed form).
fn exact_rows_on(model: &Model, size: usize) -> f64 {
    let count = 1usize << size;
    let mut v = DMatrix::zeros(size * size, count);
    for (mask, mut col) in v.column_iter_mut().enumerate() {
        col.iter_mut()
            .zip(stripe(mask as u32, size))
            .for_each(|(x, y)| *x = y);
    }
    let mut f = vec![0.0; count];
    model.free_energy_visible(&v, 1.0, &mut f, Par::Rayon);
    let least = f.iter().copied().fold(f64::INFINITY, f64::min);
    let (mut norm, mut sum) = (0.0, 0.0);
    for (mask, fe) in f.iter().enumerate() {
        let p = (least - fe).exp();
        norm += p;
        sum += p * (mask as u32).count_ones() as f64;
    }
    sum / norm
}

/// What one sampler did on one model.
struct Moves {
    steps_per_frame: u64,
    /// Pattern changes per frame: mean and standard error over chains.
    changes: (f64, f64),
    /// Class changes (from bars to stripes or back, passing through the all-on or all-off
    /// image or not), all chains together: during the burn-in frames and after them.
    switches: (usize, usize),
    /// Frames more than L/2 pixels from every pattern.
    noisy: f64,
    /// Mean rows on over the frames that are exactly a stripe image: mean and standard error
    /// over the chains that have such frames, and how many chains that is.
    rows_on: (f64, f64, usize),
    /// Algorithm 3's acceptance of its grid proposals (1 for AGS).
    acceptance: f64,
    seconds: f64,
}

/// Runs `chains` chains from uniformly drawn stripe images, `frames` frames of
/// `steps_per_frame` steps of AGS (`latent == None`) or of Algorithm 3, and counts.
fn moves(
    model: &Model,
    s: &Settings,
    latent: Option<&LatentGibbs>,
    steps_per_frame: u64,
    seed: u64,
) -> Result<Moves, Error> {
    let mut state = ChainState::new(model.new_state(s.chains), seed);
    // Each chain starts at a stripe image drawn uniformly (not from the model's law).
    let mut rng = ChainRng::seed_from_u64(seed);
    let mut last: Vec<Pattern> = Vec::with_capacity(s.chains);
    for mut col in state.chains.visible.column_iter_mut() {
        let mask = rng.random_range(0..1u32 << s.size);
        col.iter_mut()
            .zip(stripe(mask, s.size))
            .for_each(|(x, y)| *x = y);
        last.push((0, mask));
    }
    let (mut proposed, mut accepted) = (0u64, 0u64);
    let mut count = FnObserver(|_, step: &StepInfo<'_, _, _>| {
        let info: &LatentInfo = step.kernel;
        proposed += info.grid_proposed;
        accepted += info.grid_accepted;
        Ok(())
    });
    let mut changes = vec![0usize; s.chains];
    let mut rows = vec![Vec::new(); s.chains];
    let (mut switches, mut noisy) = ((0, 0), 0);
    // The last class each chain was definitely in (its start is a stripe image).
    let mut definite = vec![0u8; s.chains];
    let start = Instant::now();
    for frame in 0..s.frames {
        match latent {
            Some(k) => run(
                model,
                k,
                1.0,
                &mut state,
                steps_per_frame,
                Par::Rayon,
                &mut count,
            )?,
            None => run(
                model,
                &Gibbs::new(1),
                1.0,
                &mut state,
                steps_per_frame,
                Par::Rayon,
                (),
            )
            .map(|_| None)?,
        };
        for (c, col) in state.chains.visible.column_iter().enumerate() {
            let (pattern, distance) = nearest(col.as_slice(), s.size);
            noisy += usize::from(2 * distance > s.size);
            if let Some(k) = class(pattern, s.size) {
                let switched = usize::from(k != definite[c]);
                if frame < s.burn_frames {
                    switches.0 += switched;
                } else {
                    switches.1 += switched;
                }
                definite[c] = k;
            }
            if frame >= s.burn_frames {
                changes[c] += usize::from(pattern != last[c]);
                if distance == 0 && pattern.0 == 0 {
                    rows[c].push(pattern.1.count_ones() as f64);
                }
            }
            last[c] = pattern;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let counted = (s.frames - s.burn_frames) as f64;
    let rates: Vec<f64> = changes.iter().map(|&k| k as f64 / counted).collect();
    let per_chain: Vec<f64> = rows
        .iter()
        .filter(|r| !r.is_empty())
        .map(|r| r.iter().sum::<f64>() / r.len() as f64)
        .collect();
    let (rows_mean, rows_se) = mean_se(&per_chain);
    Ok(Moves {
        steps_per_frame,
        changes: mean_se(&rates),
        switches,
        noisy: noisy as f64 / (s.frames * s.chains) as f64,
        rows_on: (rows_mean, rows_se, per_chain.len()),
        acceptance: if proposed == 0 {
            1.0
        } else {
            accepted as f64 / proposed as f64
        },
        seconds,
    })
}

fn moves_json(m: &Moves, exact: f64) -> serde_json::Value {
    json!({
        "steps_per_frame": m.steps_per_frame,
        "changes_per_frame": m.changes.0,
        "changes_per_frame_se": m.changes.1,
        "class_switches": m.switches.1,
        "class_switches_burn_in": m.switches.0,
        "noisy_frames": m.noisy,
        "rows_on": m.rows_on.0,
        "rows_on_se": m.rows_on.1,
        "rows_on_chains": m.rows_on.2,
        "rows_on_offset_se": (m.rows_on.0 - exact) / m.rows_on.1,
        "grid_acceptance": m.acceptance,
        "seconds": m.seconds,
    })
}

fn main() -> Result<(), Error> {
    let s = settings()?;
    let data = bars_and_stripes_all(s.size)
        .map_err(|e| invalid("--size", e.to_string()))?
        .data()
        .map(|x| 2.0 * x - 1.0);
    println!(
        "{0} x {0} Bars and Stripes, {1} images, {2} Gaussian hidden units, PCD-10 x {3} updates",
        s.size,
        data.ncols(),
        2 * s.size,
        s.updates
    );
    for &seed in &s.seeds {
        let mut record = serde_json::Map::new();
        for (name, l1) in [("l1", s.l1), ("plain", 0.0)] {
            let model = train(&data, &s, l1, seed)?;
            let f = focus(&model, s.size);
            let exact = exact_rows_on(&model, s.size);
            let focused = f.iter().filter(|&&x| x > 0.5).count();
            let (mean_focus, _) = mean_se(&f);
            println!(
                "seed {seed}, L1 {l1}: mean focus {mean_focus:.3}, {focused} of {} units above 0.5; exact rows on within stripes {exact:.3}",
                f.len()
            );
            let latent = LatentGibbs {
                grid: grid(&model, &data, s.cell),
                ..LatentGibbs::single()
            };
            println!(
                "  Algorithm 3's grid: {} cells over ±{:.2} around each unit's prior mode",
                latent.grid.points, latent.grid.half_width
            );
            let chain_seed = 1000 + seed;
            let runs = [
                ("ags", moves(&model, &s, None, s.frame_steps, chain_seed)?),
                (
                    "alg3",
                    moves(&model, &s, Some(&latent), s.frame_steps, chain_seed)?,
                ),
                (
                    "ags_equal_cost",
                    moves(&model, &s, None, s.frame_steps * s.ags_factor, chain_seed)?,
                ),
            ];
            let mut samplers = serde_json::Map::new();
            for (sampler, m) in &runs {
                println!(
                    "  {sampler:>15}: {:>6} steps/frame, pattern changes/frame {:.3} ± {:.3}, class switches {} (burn-in {}), noisy frames {:.3}, rows on {:.3} ± {:.3} ({} chains), acceptance {:.3}, {:.1} s",
                    m.steps_per_frame,
                    m.changes.0,
                    m.changes.1,
                    m.switches.1,
                    m.switches.0,
                    m.noisy,
                    m.rows_on.0,
                    m.rows_on.1,
                    m.rows_on.2,
                    m.acceptance,
                    m.seconds
                );
                samplers.insert(sampler.to_string(), moves_json(m, exact));
            }
            record.insert(
                name.into(),
                json!({
                    "l1": l1,
                    "focus": f,
                    "exact_rows_on": exact,
                    "grid_points": latent.grid.points,
                    "grid_half_width": latent.grid.half_width,
                    "samplers": samplers,
                }),
            );
        }
        if let Some(dir) = &s.record {
            let settings = json!({
                "size": s.size, "updates": s.updates, "chains": s.chains, "frames": s.frames,
                "frame_steps": s.frame_steps, "burn_frames": s.burn_frames,
                "ags_factor": s.ags_factor, "grid_cell": s.cell,
            });
            write_record(dir, seed, settings, record)?;
        }
    }
    Ok(())
}

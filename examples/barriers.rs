//! Why Gibbs sampling gets stuck, measured: escape times of alternating Gibbs sampling (AGS)
//! between the two modes of the Curie–Weiss model against the exact mean first-passage time
//! of the reduced chain on the magnetisation, their growth as exp(N Δf), and the hidden-space
//! move (Algorithm 3) that removes the barrier.
//!
//! It also minimises the large-N AGS action Φ over paths of T steps (it approaches Δf from
//! above) and writes the plot of log τ against N (exact and measured) as an SVG file.
//!
//! Run with `cargo run --release --example barriers [plot.svg]`.

use ebm::models::action::CwAction;
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
    let mut measured = Vec::new();
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
        measured.push((n, ags, ags_se));
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

    println!();
    let action = CwAction::new(1.1)?;
    let m = action.m_star();
    println!(
        "Minimal AGS action Φ(T) from m* to -m* at w = 1.1 (Δf = {:.6}):",
        action.barrier()
    );
    for t in [5, 10, 25, 50, 100] {
        let min = action.minimise(m, -m, t)?;
        println!(
            "  T = {t:>3}: Φ = {:.6}, Φ - Δf = {:.2e}",
            min.action,
            min.action - action.barrier()
        );
    }

    let path = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("barriers_log_tau.svg"));
    let exact: Vec<(f64, f64)> = (10..=100)
        .step_by(5)
        .map(|n| {
            let cw = CurieWeiss::new(n, w * w, 0.0)?;
            let m = cw.mean_field_magnetisation(1.0);
            let chain = ReducedChain::new(&cw, 1.0, ReducedSampler::Ags)?;
            let tau = chain.mean_first_passage(m / 2.0)?[chain.mode_state(m)];
            Ok((n as f64, tau.ln()))
        })
        .collect::<Result<_, Error>>()?;
    std::fs::write(&path, svg(&exact, &measured, barrier)).map_err(|e| Error::Io {
        path: path.clone(),
        source: e,
    })?;
    println!();
    println!("Plot of log τ against N: {}", path.display());
    Ok(())
}

/// A minimal SVG plot: the exact log τ(N) as a line, the measured escape times as points
/// with 2-standard-error bars, and a dashed line of slope Δf through the last exact point.
fn svg(exact: &[(f64, f64)], measured: &[(usize, f64, f64)], slope: f64) -> String {
    let (w, h, pad) = (560.0, 380.0, 50.0);
    let (x0, x1) = (exact[0].0, exact[exact.len() - 1].0);
    let (y0, y1) = (0.0, exact[exact.len() - 1].1.ceil());
    let px = |x: f64| pad + (x - x0) / (x1 - x0) * (w - 2.0 * pad);
    let py = |y: f64| h - pad - (y - y0) / (y1 - y0) * (h - 2.0 * pad);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{pad}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{cx}\" y=\"{lx}\" text-anchor=\"middle\">N (spins)</text>\n\
         <text x=\"14\" y=\"{cy}\" transform=\"rotate(-90 14 {cy})\" \
         text-anchor=\"middle\">log τ (AGS steps)</text>\n",
        b = h - pad,
        r = w - pad,
        cx = w / 2.0,
        lx = h - 12.0,
        cy = h / 2.0,
    );
    for k in 0..=4 {
        let x = x0 + (x1 - x0) * k as f64 / 4.0;
        let y = y0 + (y1 - y0) * k as f64 / 4.0;
        out += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{x:.0}</text>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{y:.1}</text>\n",
            px(x),
            h - pad + 16.0,
            pad - 6.0,
            py(y) + 4.0
        );
    }
    let line: Vec<String> = exact
        .iter()
        .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
        .collect();
    out += &format!(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"steelblue\" stroke-width=\"2\"/>\n",
        line.join(" ")
    );
    let (xl, yl) = exact[exact.len() - 1];
    out += &format!(
        "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"gray\" \
         stroke-dasharray=\"5,4\"/>\n",
        px(x0),
        py(yl - slope * (xl - x0)),
        px(xl),
        py(yl)
    );
    for (n, tau, se) in measured {
        let (x, y) = (px(*n as f64), py(tau.ln()));
        let (lo, hi) = (py((tau - 2.0 * se).ln()), py((tau + 2.0 * se).ln()));
        out += &format!(
            "<line x1=\"{x:.1}\" y1=\"{lo:.1}\" x2=\"{x:.1}\" y2=\"{hi:.1}\" stroke=\"firebrick\"/>\n\
             <circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"firebrick\"/>\n"
        );
    }
    out += &format!(
        "<text x=\"{l}\" y=\"{t}\" fill=\"steelblue\">exact MFPT (reduced chain)</text>\n\
         <text x=\"{l}\" y=\"{t2}\" fill=\"firebrick\">measured AGS (± 2 s.e.)</text>\n\
         <text x=\"{l}\" y=\"{t3}\" fill=\"gray\">slope Δf = {slope:.5}</text>\n</svg>\n",
        l = pad + 10.0,
        t = pad + 5.0,
        t2 = pad + 21.0,
        t3 = pad + 37.0
    );
    out
}

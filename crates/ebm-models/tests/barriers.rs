//! The exact reduced Curie–Weiss chains against the reference values of spec
//! Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling* (computed there independently).

use ebm_models::CurieWeiss;
use ebm_models::barriers::{ReducedChain, ReducedSampler};

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// (w, N, AGS MFPT, AGS relaxation time, MH MFPT in sweeps) from the §7.3 table.
const TABLE: [(f64, usize, f64, f64, f64); 4] = [
    (1.2, 20, 107.16, 50.9, 58.48),
    (1.2, 40, 695.59, 347.5, 367.70),
    (1.5, 10, 805.26, 403.4, 401.61),
    (1.5, 16, 11330.0, 5695.0, 5213.7),
];

#[test]
fn mean_first_passage_times_and_relaxation_times_match_the_reference_table() {
    for (w, n, ags, relax, mh) in TABLE {
        let cw = CurieWeiss::new(n, w * w, 0.0).unwrap();
        let m = cw.mean_field_magnetisation(1.0);
        let chain = ReducedChain::new(&cw, 1.0, ReducedSampler::Ags).unwrap();
        // Rows sum to one and the exact law is stationary.
        let t = chain.matrix();
        for k in 0..=n {
            assert!((t.row(k).sum() - 1.0).abs() < 1e-9);
            let flow: f64 = (0..=n).map(|j| chain.stationary()[j] * t[(j, k)]).sum();
            assert!((flow - chain.stationary()[k]).abs() < 1e-9);
        }
        let s0 = chain.mode_state(m);
        let tau = chain.mean_first_passage(m / 2.0).unwrap()[s0];
        assert!(rel(tau, ags) < 2e-3, "w {w} N {n}: AGS {tau} vs {ags}");
        let r = chain.relaxation_time();
        assert!(
            rel(r, relax) < 3e-3,
            "w {w} N {n}: relaxation {r} vs {relax}"
        );
        let chain = ReducedChain::new(&cw, 1.0, ReducedSampler::Metropolis).unwrap();
        let tau = chain.mean_first_passage(m / 2.0).unwrap()[s0] / n as f64;
        assert!(rel(tau, mh) < 2e-3, "w {w} N {n}: MH {tau} vs {mh}");
    }
}

/// Spec §7.1/§7.3: the local slope of log τ against N approaches Δf (0.09369 at w = 1.2).
#[test]
fn escape_time_slope_approaches_the_barrier() {
    let w: f64 = 1.2;
    let tau = |n: usize| {
        let cw = CurieWeiss::new(n, w * w, 0.0).unwrap();
        let m = cw.mean_field_magnetisation(1.0);
        let chain = ReducedChain::new(&cw, 1.0, ReducedSampler::Ags).unwrap();
        chain.mean_first_passage(m / 2.0).unwrap()[chain.mode_state(m)]
    };
    let df = CurieWeiss::new(10, w * w, 0.0).unwrap().barrier(1.0);
    assert!(rel(df, 0.093689) < 1e-4, "{df}");
    let slope = (tau(160).ln() - tau(140).ln()) / 20.0;
    assert!(rel(slope, 0.09358) < 2e-3, "slope {slope}");
    assert!(rel(slope, df) < 0.01, "slope {slope} vs barrier {df}");
    let early = (tau(60).ln() - tau(40).ln()) / 20.0;
    assert!(
        (df - slope).abs() < (df - early).abs(),
        "{early} {slope} {df}"
    );
}

#[test]
fn invalid_models_are_rejected() {
    let cw = CurieWeiss::new(10, 1.0, 0.5).unwrap();
    assert!(ReducedChain::new(&cw, 1.0, ReducedSampler::Ags).is_err());
    let cw = CurieWeiss::new(10, 1.0, 0.0).unwrap();
    assert!(ReducedChain::new(&cw, 0.0, ReducedSampler::Ags).is_err());
}

/// Spec §10.5: the escape-time slopes of AGS (in steps) and of single-site Metropolis (in
/// sweeps) against N agree, both approaching Δf, from the exact reduced chains (w = 1.2,
/// N = 60 -> 80, where both are within 2-5% of each other as the spec expects).
#[test]
fn ags_and_metropolis_escape_slopes_agree() {
    let w: f64 = 1.2;
    let tau = |n: usize, sampler: ReducedSampler| {
        let cw = CurieWeiss::new(n, w * w, 0.0).unwrap();
        let m = cw.mean_field_magnetisation(1.0);
        let chain = ReducedChain::new(&cw, 1.0, sampler).unwrap();
        let steps = chain.mean_first_passage(m / 2.0).unwrap()[chain.mode_state(m)];
        // Metropolis counts single-site proposals: N of them make one sweep.
        match sampler {
            ReducedSampler::Metropolis => steps / n as f64,
            _ => steps,
        }
    };
    let slope = |s: ReducedSampler| (tau(80, s).ln() - tau(60, s).ln()) / 20.0;
    let (ags, mh) = (
        slope(ReducedSampler::Ags),
        slope(ReducedSampler::Metropolis),
    );
    let df = CurieWeiss::new(10, w * w, 0.0).unwrap().barrier(1.0);
    eprintln!("slopes: AGS {ags}, MH {mh}, barrier {df}");
    assert!(rel(mh, ags) < 0.05, "AGS {ags} vs MH {mh}");
    assert!(rel(ags, df) < 0.05 && rel(mh, df) < 0.05);
}

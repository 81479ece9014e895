//! The Curie–Weiss AGS action Φ (Eq. 17 of "Alternating Gibbs sampling in restricted Boltzmann
//! machines: free-energy barriers, analytic models and moves in latent space") against the
//! independently computed minima of Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*, and the exact
//! step costs of the instanton and relaxation maps (§10.8).

use ebm_models::action::{AgsPath, CwAction};

/// Spec §7.2, w = 1.1: (T, Φ_min(T)), given to 6 decimals.
const PHI_MIN: [(usize, f64); 3] = [(25, 0.030894), (50, 0.026533), (100, 0.026306)];

#[test]
fn minimal_action_reproduces_the_reference_values_and_approaches_the_barrier() {
    let a = CwAction::new(1.1).unwrap();
    let (m, df) = (a.m_star(), a.barrier());
    assert!(
        (m - 0.669929).abs() < 1e-6 && (df - 0.026306).abs() < 1e-6,
        "{m} {df}"
    );
    let mut prev = f64::INFINITY;
    for (t, reference) in PHI_MIN {
        let min = a.minimise(m, -m, t).unwrap();
        assert!(
            min.gradient_norm < 1e-9,
            "T = {t}: gradient {}",
            min.gradient_norm
        );
        assert!(
            (min.action - reference).abs() < 1e-6,
            "T = {t}: Φ = {:.7} vs {reference}",
            min.action
        );
        // From above, decreasing in T.
        assert!(
            min.action > df && min.action < prev,
            "T = {t}: {}",
            min.action
        );
        prev = min.action;
    }
    // Other w of §7.2.
    for (w, t, reference) in [(1.3, 10, 0.212481), (1.5, 6, 0.504246), (1.5, 16, 0.443737)] {
        let a = CwAction::new(w).unwrap();
        let phi = a.minimise(a.m_star(), -a.m_star(), t).unwrap().action;
        assert!(
            (phi - reference).abs() < 1e-6,
            "w {w} T {t}: {phi} vs {reference}"
        );
    }
}

/// Negative control: a path that is not minimised (the smooth tanh switch the minimiser starts
/// from, with h at the midpoint) fails the same tolerance, and so does the minimum at a
/// slightly different w.
#[test]
fn unminimised_paths_and_wrong_couplings_fail_the_reference() {
    let a = CwAction::new(1.1).unwrap();
    let m = a.m_star();
    let t = 25;
    let ms: Vec<f64> = (0..=t)
        .map(|k| -m * (0.3 * (k as f64 - 12.5)).tanh() / (0.3f64 * 12.5).tanh())
        .collect();
    let hs: Vec<f64> = (0..t).map(|k| 0.55 * (ms[k] + ms[k + 1])).collect();
    let naive = a.action(&AgsPath { m: ms, h: hs });
    assert!((naive - 0.030894).abs() > 1e-3, "{naive}");
    let b = CwAction::new(1.105).unwrap();
    let phi = b.minimise(b.m_star(), -b.m_star(), t).unwrap().action;
    assert!((phi - 0.030894).abs() > 1e-4, "{phi}");
}

/// Spec §10.8: instanton steps cost exactly f(m^{t+1}) - f(m^t) (Eq. 20), relaxation steps
/// cost zero (Eq. 22); instanton from m* climbs to 0, relaxation from near 0 descends to ±m*.
#[test]
fn instanton_and_relaxation_step_costs_are_exact() {
    for w in [1.1, 1.3, 1.5] {
        let a = CwAction::new(w).unwrap();
        let ms = a.m_star();
        let mut m = ms * 0.99;
        let mut climbed = 0.0;
        for _ in 0..300 {
            let (h, next) = a.instanton_step(m);
            let cost = a.step_cost(m, h, next);
            let df = a.free_energy(next) - a.free_energy(m);
            assert!((cost - df).abs() < 1e-14, "w {w}: {cost} vs {df}");
            assert!(cost >= -1e-15);
            climbed += cost;
            m = next;
        }
        assert!(m.abs() < 1e-3, "instanton fixed point 0, got {m}");
        assert!((climbed - (a.free_energy(m) - a.free_energy(ms * 0.99))).abs() < 1e-12);
        let mut m = -1e-3;
        for _ in 0..200 {
            let (h, next) = a.relaxation_step(m);
            let cost = a.step_cost(m, h, next);
            assert!(cost.abs() < 1e-15, "w {w}: relaxation cost {cost}");
            m = next;
        }
        assert!(
            (m + ms).abs() < 1e-12,
            "relaxation fixed point -m*, got {m}"
        );
        // Negative control: a relaxation step with a perturbed hidden value costs more.
        let (h, next) = a.relaxation_step(0.3);
        assert!(a.step_cost(0.3, h * 1.05, next) > 1e-5);
        let (h, next) = a.instanton_step(0.3);
        let df = a.free_energy(next) - a.free_energy(0.3);
        assert!((a.step_cost(0.3, h * 1.05, next) - df).abs() > 1e-5);
    }
}

#[test]
fn gradient_matches_finite_differences_and_bad_input_is_rejected() {
    let a = CwAction::new(1.2).unwrap();
    let path = AgsPath {
        m: vec![0.8, 0.3, -0.2, -0.7],
        h: vec![0.5, 0.1, -0.6],
    };
    let g = a.gradient(&path);
    let eps = 1e-6;
    for (k, gk) in g.iter().enumerate() {
        let mut p = path.clone();
        let mut q = path.clone();
        if k % 2 == 0 {
            p.h[k / 2] += eps;
            q.h[k / 2] -= eps;
        } else {
            p.m[k / 2 + 1] += eps;
            q.m[k / 2 + 1] -= eps;
        }
        let fd = (a.action(&p) - a.action(&q)) / (2.0 * eps);
        assert!((fd - gk).abs() < 1e-7, "component {k}: {fd} vs {gk}");
    }
    assert!(CwAction::new(0.0).is_err() && CwAction::new(f64::NAN).is_err());
    assert!(a.minimise(0.5, -0.5, 0).is_err());
    assert!(a.minimise(1.0, -0.5, 5).is_err());
}

//! Exact tests of the library's single-site heat bath on a model whose sites take three values
//! (the spin-1 Blume–Capel chain of `examples/extending/blume_capel.rs`, the book's example)
//! and on the Curie–Weiss model, each with negative controls it must reject: a model whose
//! energy change is halved, and the kernel run at another temperature.

#[path = "../examples/extending/blume_capel.rs"]
mod blume_capel;

use blume_capel::BlumeCapel;
use ebm::prelude::*;
use ebm::testkit::{AtBeta, detailed_balance, invariance};

/// Draws per test: with 81 states, a kernel off by a few percent is rejected at this size.
const DRAWS: usize = 80_000;
/// A correct kernel's p-value falls below this once in 10^4 runs (seeds are fixed).
const ALPHA: f64 = 1e-4;
/// A negative control must be rejected far beyond chance.
const REJECT: f64 = 1e-6;
const BETA: f64 = 1.0;

fn model() -> BlumeCapel {
    BlumeCapel::new(4, 1.1, 0.4, 0.3)
}

#[test]
fn the_energy_change_and_the_listing_agree_with_the_energy() {
    let m = model();
    assert_eq!(m.n_states(), 81);
    let mut x = m.new_state(1);
    let mut e = [0.0; 2];
    for k in 0..m.n_states() {
        m.write_state(k, &mut x, 0);
        assert_eq!(m.state_index(&x, 0), k);
        for site in 0..m.n() {
            for &value in m.alphabet(site) {
                let mut y = x.clone();
                y[site] = value;
                m.energies(&x, 0.7, &mut e[..1], Par::Seq);
                m.energies(&y, 0.7, &mut e[1..], Par::Seq);
                let d = m.energy_change(x.column(0).as_slice(), site, value, 0.7);
                assert!((d - (e[1] - e[0])).abs() < 1e-12);
            }
        }
    }
    // The log Z of `exact_by_enumeration!` is the sum over the 81 states.
    let direct: f64 = (0..81)
        .map(|k| {
            m.write_state(k, &mut x, 0);
            (-m.energy(x.column(0).as_slice())).exp()
        })
        .sum();
    assert!((m.log_partition(1.0) - direct.ln()).abs() < 1e-12);
}

#[test]
fn the_heat_bath_is_exact_and_broken_versions_are_rejected() {
    let m = model();
    let systematic = SingleSiteHeatBath::new(1);
    let random = systematic.with_scan(Scan::Random);
    let t = invariance(&m, &systematic, BETA, DRAWS, 1);
    assert!(
        t.p_value > ALPHA,
        "systematic sweep: invariance rejected: {t:?}"
    );
    let t = invariance(&m, &random, BETA, DRAWS, 2);
    assert!(
        t.p_value > ALPHA,
        "random sweep: invariance rejected: {t:?}"
    );
    let db = detailed_balance(&m, &random, BETA, DRAWS, 3);
    assert!(
        db.p_value > ALPHA,
        "random scan: detailed balance rejected: {db:?}"
    );
    // Metropolis on the same model, with the proposal among the other two values.
    let t = invariance(&m, &SingleSiteMetropolis::new(1), BETA, DRAWS, 4);
    assert!(t.p_value > ALPHA, "Metropolis: invariance rejected: {t:?}");
    // Negative controls: a halved energy change, and the right kernel at the wrong beta.
    let wrong = BlumeCapel {
        scale: 0.5,
        ..model()
    };
    let t = invariance(&wrong, &systematic, BETA, DRAWS, 5);
    assert!(t.p_value < REJECT, "halved energy change passed: {t:?}");
    let db = detailed_balance(&wrong, &random, BETA, DRAWS, 6);
    assert!(
        db.p_value < REJECT,
        "halved energy change: detailed balance passed: {db:?}"
    );
    let t = invariance(&m, &AtBeta(systematic, 0.3), BETA, DRAWS, 7);
    assert!(t.p_value < REJECT, "heat bath at beta 0.3 passed: {t:?}");
}

#[test]
fn the_heat_bath_is_exact_on_curie_weiss() {
    let m = CurieWeiss::new(5, 1.3, 0.25).unwrap();
    let t = invariance(&m, &SingleSiteHeatBath::new(1), BETA, 60_000, 8);
    assert!(t.p_value > ALPHA, "{t:?}");
    let t = invariance(
        &m,
        &AtBeta(SingleSiteHeatBath::new(1), 0.2),
        BETA,
        60_000,
        9,
    );
    assert!(t.p_value < REJECT, "{t:?}");
}

#[test]
fn the_heat_bath_reports_its_updates_and_does_not_depend_on_the_thread_count() {
    let m = model();
    let run = |par| {
        let mut state = ChainState::new(m.new_state(1000), 10);
        let info = SingleSiteHeatBath::new(3).with_scan(Scan::Random).step(
            &m,
            BETA,
            &mut state.chains,
            state.rngs.as_mut_slice(),
            par,
        );
        (state.chains, info)
    };
    let (chains, info) = run(Par::Rayon);
    assert_eq!((chains, info), run(Par::Seq));
    assert_eq!(info.updates, 3 * 4 * 1000);
    assert!(info.changed > 0 && info.changed < info.updates, "{info:?}");
    // At beta 0 the three values are equally likely: a third of the updates keep the value a
    // site held (20 000 updates: the standard deviation of the fraction is 0.0033).
    let mut state = ChainState::new(m.new_state(5000), 11);
    let info = SingleSiteHeatBath::new(1).step(
        &m,
        0.0,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    let kept = 1.0 - info.change_rate();
    assert!((kept - 1.0 / 3.0).abs() < 0.015, "kept {kept}");
}

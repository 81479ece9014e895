//! Exact tests of the generic single-site Metropolis kernel and of the kernel combinators on the
//! Curie–Weiss model (its 2^5 spin configurations listed), with negative controls.

use ebm_core::{EnergyModel, Enumerable, Kernel, Par};
use ebm_models::CurieWeiss;
use ebm_samplers::{Cycle, LocalUpdate, Mixture, Repeat, Scan, SingleSiteMetropolis};
use ebm_testkit::{AtBeta, detailed_balance, invariance};
use nalgebra::DMatrix;
use rand::Rng;

/// Draws per test: with 32 states, a kernel off by a few percent is rejected at this size.
const DRAWS: usize = 60_000;
/// A correct kernel's p-value falls below this once in 10^4 runs (seeds are fixed).
const ALPHA: f64 = 1e-4;
/// A negative control must be rejected far beyond chance.
const REJECT: f64 = 1e-6;
const BETA: f64 = 1.0;

fn model() -> CurieWeiss {
    CurieWeiss::new(5, 1.3, 0.25).unwrap()
}

/// Negative control: the Curie–Weiss model whose local energy change is off by a factor, so
/// Metropolis on it targets another law than the one its energies define.
struct WrongDelta(CurieWeiss, f64);

impl EnergyModel for WrongDelta {
    type Scalar = f64;
    type State = DMatrix<f64>;
    fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], par: Par) {
        self.0.energies(x, beta, out, par);
    }
    fn new_state(&self, n: usize) -> DMatrix<f64> {
        self.0.new_state(n)
    }
}

impl Enumerable for WrongDelta {
    fn n_states(&self) -> usize {
        self.0.n_states()
    }
    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        self.0.write_state(k, x, chain);
    }
    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        self.0.state_index(x, chain)
    }
}

impl LocalUpdate for WrongDelta {
    fn n_sites(&self) -> usize {
        self.0.n_sites()
    }
    fn propose<R: Rng>(&self, x: &[f64], site: usize, rng: &mut R) -> f64 {
        self.0.propose(x, site, rng)
    }
    fn energy_change(&self, x: &[f64], site: usize, value: f64, beta: f64) -> f64 {
        self.1 * self.0.energy_change(x, site, value, beta)
    }
}

fn accept<M: Enumerable, K: Kernel<M>>(what: &str, m: &M, k: &K, seed: u64) {
    let t = invariance(m, k, BETA, DRAWS, seed);
    assert!(t.p_value > ALPHA, "{what}: invariance rejected: {t:?}");
}

fn reject<M: Enumerable, K: Kernel<M>>(what: &str, m: &M, k: &K, seed: u64) {
    let t = invariance(m, k, BETA, DRAWS, seed);
    assert!(t.p_value < REJECT, "{what}: a broken kernel passed: {t:?}");
}

#[test]
fn curie_weiss_energy_change_agrees_with_its_energy() {
    let m = model();
    let mut x = m.new_state(1);
    let mut e = [0.0; 2];
    for k in 0..m.n_states() {
        m.write_state(k, &mut x, 0);
        for site in 0..m.n() {
            let mut y = x.clone();
            y[site] = -y[site];
            m.energies(&x, 0.7, &mut e[..1], Par::Seq);
            m.energies(&y, 0.7, &mut e[1..], Par::Seq);
            let d = m.energy_change(x.column(0).as_slice(), site, y[site], 0.7);
            assert!((d - (e[1] - e[0])).abs() < 1e-12);
        }
    }
}

#[test]
fn single_site_metropolis_is_exact_and_a_wrong_energy_change_is_not() {
    let m = model();
    let systematic = SingleSiteMetropolis::new(1);
    let random = systematic.with_scan(Scan::Random);
    accept("systematic sweep", &m, &systematic, 1);
    accept("random sweep", &m, &random, 2);
    let db = detailed_balance(&m, &random, BETA, DRAWS, 3);
    assert!(
        db.p_value > ALPHA,
        "random scan: detailed balance rejected: {db:?}"
    );
    let wrong = WrongDelta(model(), 0.5);
    reject("halved energy change", &wrong, &systematic, 4);
    let db = detailed_balance(&wrong, &random, BETA, DRAWS, 5);
    assert!(
        db.p_value < REJECT,
        "halved energy change: detailed balance passed: {db:?}"
    );
}

#[test]
fn single_site_metropolis_reports_its_acceptance() {
    let m = model();
    let mut state = ebm_core::ChainState::new(m.new_state(100), 6);
    let info = SingleSiteMetropolis::new(2).step(
        &m,
        BETA,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    assert_eq!(info.proposals, 2 * 5 * 100);
    assert!(
        info.accepted > 0 && info.accepted < info.proposals,
        "{info:?}"
    );
}

#[test]
fn single_site_metropolis_does_not_depend_on_the_thread_count() {
    let m = model();
    let run = |par| {
        let mut state = ebm_core::ChainState::new(m.new_state(1000), 7);
        SingleSiteMetropolis::new(3).step(
            &m,
            BETA,
            &mut state.chains,
            state.rngs.as_mut_slice(),
            par,
        );
        state.chains
    };
    assert_eq!(run(Par::Seq), run(Par::Rayon));
}

#[test]
fn cycle_is_exact_and_a_broken_part_is_caught() {
    let m = model();
    let good = SingleSiteMetropolis::new(1);
    let bad = AtBeta(good, 0.4 * BETA);
    accept(
        "cycle",
        &m,
        &Cycle::new(good, good.with_scan(Scan::Random)),
        10,
    );
    reject(
        "cycle with a broken first part",
        &m,
        &Cycle::new(bad, good),
        11,
    );
    reject(
        "cycle with a broken second part",
        &m,
        &Cycle::new(good, bad),
        12,
    );
}

#[test]
fn mixture_is_exact_reversible_and_a_broken_part_is_caught() {
    let m = model();
    let random = SingleSiteMetropolis::new(1).with_scan(Scan::Random);
    let bad = AtBeta(random, 0.4 * BETA);
    let mix = Mixture::new(random, Repeat::new(random, 2), 0.3).unwrap();
    accept("mixture", &m, &mix, 20);
    // A mixture of reversible kernels is reversible.
    let db = detailed_balance(&m, &mix, BETA, DRAWS, 21);
    assert!(
        db.p_value > ALPHA,
        "mixture: detailed balance rejected: {db:?}"
    );
    reject(
        "mixture with a broken part",
        &m,
        &Mixture::new(random, bad, 0.5).unwrap(),
        22,
    );
    // The coin is per chain: with p = 1 the broken part is never kept.
    accept(
        "mixture with p = 1",
        &m,
        &Mixture::new(random, bad, 1.0).unwrap(),
        23,
    );
    assert!(Mixture::new(random, bad, 1.5).is_err());
    assert!(Mixture::new(random, bad, f64::NAN).is_err());
}

#[test]
fn mixture_chooses_each_kernel_with_its_probability() {
    let m = model();
    let k = SingleSiteMetropolis::new(1);
    let mut state = ebm_core::ChainState::new(m.new_state(20_000), 24);
    let info = Mixture::new(k, k, 0.3).unwrap().step(
        &m,
        BETA,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    // Binomial(20000, 0.3): standard deviation 65.
    assert!((info.chose_first as f64 - 6000.0).abs() < 400.0, "{info:?}");
}

#[test]
fn repeat_is_exact_and_a_broken_kernel_is_caught() {
    let m = model();
    let good = SingleSiteMetropolis::new(1);
    accept("repeat", &m, &Repeat::new(good, 3), 30);
    reject(
        "repeated broken kernel",
        &m,
        &Repeat::new(AtBeta(good, 0.4 * BETA), 3),
        31,
    );
    let info = Repeat::new(good, 3).step(
        &m,
        BETA,
        &mut m.new_state(4),
        &mut ebm_core::RngStreams::new(1, 4).as_mut_slice().to_vec(),
        Par::Seq,
    );
    assert_eq!(info.len(), 3);
}

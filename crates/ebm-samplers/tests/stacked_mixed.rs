//! A ladder of the bottom RBM joined to a stack at the target ([`MixedLadder`]), with a
//! temperature ladder and with a trajectory ladder (an earlier checkpoint below the target):
//! the exact transition matrices of one sweep of exchanges on every joint state (invariance of
//! the product law to round-off, failing without either refresh); exact draws of the product
//! law on every rung, one PT round of every exchange (sweep schedule) and a chi-square test of
//! the joint states, with the same two negative controls (no refresh at the junction; no hidden
//! refresh after the ladder's swap); and the constructor's typed error.

use ebm_core::{Chains, Par};
use ebm_models::{Bernoulli, DiscreteLayer, Layer, Rbm, RbmChains, Stack, StackedRbm};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Exchange, Ladder, MixedLadder, ParallelTempering, PtState, Rung, StackLadder, SwapSchedule,
    TemperatureLadder, TrajectoryLadder,
};
use ebm_testkit::{
    chi_square, conditionals, exact_chains, joint_probabilities, stationarity_violation,
};
use nalgebra::DMatrix;
use rand::Rng;

type B = Bernoulli;
type Model = StackedRbm<B, B>;

/// A 2 -> 1 bottom RBM and a 1 -> 1 RBM above it, with couplings of order 2.
fn stack() -> Stack<B, B> {
    let r1 = Rbm::new(
        B::new(vec![0.6, -0.9]),
        B::new(vec![-0.4]),
        DMatrix::from_row_slice(2, 1, &[2.1, -1.7]),
    )
    .unwrap();
    let r2 = Rbm::new(
        B::new(vec![0.8]),
        B::new(vec![-1.1]),
        DMatrix::from_row_slice(1, 1, &[2.4]),
    )
    .unwrap();
    Stack::new(r1, vec![r2]).unwrap()
}

/// An earlier "checkpoint" of the bottom RBM: weaker couplings, other fields.
fn checkpoint() -> Rbm<B, B> {
    Rbm::new(
        B::new(vec![0.2, -0.3]),
        B::new(vec![0.1]),
        DMatrix::from_row_slice(2, 1, &[0.7, -0.5]),
    )
    .unwrap()
}

const BETA0: f64 = 0.35;

/// The bottom RBM at beta = 0.35 and 1, then the stack.
fn with_temperatures() -> MixedLadder<TemperatureLadder<Model>, B, B> {
    let s = stack();
    let ladder = TemperatureLadder::new(StackedRbm::Bottom(s.bottom().clone()), vec![BETA0, 1.0]);
    MixedLadder::new(ladder.unwrap(), StackLadder::new(s)).unwrap()
}

/// The checkpoint and the bottom RBM (the trajectory's last model), then the stack.
fn with_trajectory() -> MixedLadder<TrajectoryLadder<Model>, B, B> {
    let s = stack();
    let ladder = TrajectoryLadder::new(vec![checkpoint(), s.bottom().clone()]).unwrap();
    MixedLadder::new(ladder.map(StackedRbm::Bottom), StackLadder::new(s)).unwrap()
}

/// The three rungs' RBMs and inverse temperatures.
fn rungs<A: Ladder<Model = Model>>(m: &MixedLadder<A, B, B>) -> Vec<(Rbm<B, B>, f64)> {
    (0..3)
        .map(|k| {
            let r = m.explored(k);
            let rbm = match r.model {
                StackedRbm::Bottom(r) => r.clone(),
                StackedRbm::Upper(r) => r.clone(),
            };
            (rbm, r.beta)
        })
        .collect()
}

/// Negative controls: the mixed ladder without one of its refreshes, at the junction (the
/// stack's swap alone) when `.1`, else in the ladder part (whole chains swapped by the visible
/// free energies, hidden layers left as they were).
struct NoRefresh<X>(X, bool);

impl<A: Ladder<Model = Model>> Exchange for NoRefresh<MixedLadder<A, B, B>> {
    type State = RbmChains<f64>;
    type RungModel = Model;
    fn n_exchange_rungs(&self) -> usize {
        self.0.n_exchange_rungs()
    }
    fn explored(&self, k: usize) -> Rung<'_, Model> {
        self.0.explored(k)
    }
    fn log_accept(&self, k: usize, lo: &Self::State, hi: &Self::State, out: &mut [f64], par: Par) {
        self.0.log_accept(k, lo, hi, out, par)
    }
    fn exchange<R: Rng + Send>(
        &self,
        k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        rngs: &mut [R],
        par: Par,
    ) {
        let junction = k >= self.0.target();
        if junction != self.1 {
            return self.0.exchange(k, lo, hi, accept, rngs, par);
        }
        for (i, &a) in accept.iter().enumerate() {
            match (a, junction) {
                (true, true) => ebm_core::swap_columns(&mut lo.hidden, &mut hi.visible, i),
                (true, false) => lo.swap_chain(hi, i),
                (false, _) => {}
            }
        }
    }
}

/// One chain of `rbm` in configuration (`v`, `h`) (configuration indices).
fn chain(rbm: &Rbm<B, B>, v: usize, h: usize) -> RbmChains<f64> {
    let mut c = rbm.default_chains(1);
    rbm.visible()
        .write_configuration(v as u128, c.visible.as_mut_slice());
    rbm.hidden()
        .write_configuration(h as u128, c.hidden.as_mut_slice());
    c
}

/// The exact kernels of the two exchanges of `ladder` (pair 0 in the ladder, pair 1 at the
/// junction) on the 256 joint states (index s0 + 8 s1 + 64 s2, rung k's state
/// s_k = v + n_v h), with the acceptances of the implemented `log_accept`; the refreshes as
/// `MixedLadder` documents them, or none (`ladder_refresh`, `junction_refresh` false: the
/// negative controls). Returns (target, pair-0 kernel, pair-1 kernel).
fn exact_kernels<A: Ladder<Model = Model>>(
    ladder: &MixedLadder<A, B, B>,
    ladder_refresh: bool,
    junction_refresh: bool,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let r = rungs(ladder);
    let p: Vec<Vec<f64>> = r.iter().map(|(m, b)| joint_probabilities(m, *b)).collect();
    let (h0_v, _) = conditionals(&p[0], 4, 2);
    let (h1_v, v1_h) = conditionals(&p[1], 4, 2);
    let (h2_v, _) = conditionals(&p[2], 2, 2);
    let n = 256;
    let split = |a: usize| {
        [
            (a % 8 % 4, a % 8 / 4),
            (a / 8 % 8 % 4, a / 8 % 8 / 4),
            (a / 64 % 2, a / 64 / 2),
        ]
    };
    let idx = |s: [(usize, usize); 3]| {
        (s[0].0 + 4 * s[0].1) + 8 * (s[1].0 + 4 * s[1].1) + 64 * (s[2].0 + 2 * s[2].1)
    };
    let pi: Vec<f64> = (0..n)
        .map(|a| {
            let s = split(a);
            p[0][s[0].0 + 4 * s[0].1] * p[1][s[1].0 + 4 * s[1].1] * p[2][s[2].0 + 2 * s[2].1]
        })
        .collect();
    let alpha = |k: usize, lo: (usize, usize), hi: (usize, usize)| {
        let mut la = [0.0];
        let (a, b) = (&r[k].0, &r[k + 1].0);
        ladder.log_accept(
            k,
            &chain(a, lo.0, lo.1),
            &chain(b, hi.0, hi.1),
            &mut la,
            Par::Seq,
        );
        la[0].min(0.0).exp()
    };
    let (mut t0, mut t1) = (vec![0.0; n * n], vec![0.0; n * n]);
    for a in 0..n {
        let s = split(a);
        // Pair 0: whole chains, then h ~ p_k(h | v) on both rungs.
        let al = alpha(0, s[0], s[1]);
        for (prob, (x0, x1)) in [(al, (s[1], s[0])), (1.0 - al, (s[0], s[1]))] {
            if ladder_refresh {
                for (g0, g1) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    let q = h0_v[x0.0][g0] * h1_v[x1.0][g1];
                    t0[a * n + idx([(x0.0, g0), (x1.0, g1), s[2]])] += prob * q;
                }
            } else {
                t0[a * n + idx([x0, x1, s[2]])] += prob;
            }
        }
        // Pair 1 (junction): swap h_1 with v_2, then v_1 ~ p_1(v | h_1), h_2 ~ p_2(h | v_2).
        let al = alpha(1, s[1], s[2]);
        for (prob, (h1, v2)) in [(al, (s[2].0, s[1].1)), (1.0 - al, (s[1].1, s[2].0))] {
            if junction_refresh {
                for v1 in 0..4 {
                    for h2 in 0..2 {
                        let q = v1_h[h1][v1] * h2_v[v2][h2];
                        t1[a * n + idx([s[0], (v1, h1), (v2, h2)])] += prob * q;
                    }
                }
            } else {
                t1[a * n + idx([s[0], (s[1].0, h1), (v2, s[2].1)])] += prob;
            }
        }
    }
    (pi, t0, t1)
}

fn product(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in (0..n).filter(|&k| a[i * n + k] != 0.0) {
            for j in 0..n {
                c[i * n + j] += a[i * n + k] * b[k * n + j];
            }
        }
    }
    c
}

/// The largest stationarity violation of pair 0, pair 1 and the sweep (pair 0 then pair 1).
fn violations<A: Ladder<Model = Model>>(
    ladder: &MixedLadder<A, B, B>,
    ladder_refresh: bool,
    junction_refresh: bool,
) -> [f64; 3] {
    let (pi, t0, t1) = exact_kernels(ladder, ladder_refresh, junction_refresh);
    [
        stationarity_violation(&pi, &t0),
        stationarity_violation(&pi, &t1),
        stationarity_violation(&pi, &product(&t0, &t1, pi.len())),
    ]
}

fn check_exact<A: Ladder<Model = Model>>(ladder: &MixedLadder<A, B, B>, name: &str) {
    let ok = violations(ladder, true, true);
    println!("{name}: with both refreshes {ok:?}");
    assert!(
        ok.iter().all(|&e| e < 1e-15),
        "{name}: not invariant {ok:?}"
    );
    let no_ladder = violations(ladder, false, true);
    let no_junction = violations(ladder, true, false);
    println!(
        "{name}: without the ladder's refresh {no_ladder:?}, without the junction's {no_junction:?}"
    );
    // The pair whose refresh is dropped breaks invariance (the other pair stays exact).
    assert!(
        no_ladder[0] > 1e-3 && no_ladder[1] < 1e-15,
        "{name}: {no_ladder:?}"
    );
    assert!(
        no_junction[1] > 1e-3 && no_junction[0] < 1e-15,
        "{name}: {no_junction:?}"
    );
}

/// Exact transition matrices: each exchange of the mixed ladder, and the sweep of both,
/// leave the product of the three joint laws invariant to round-off, for the temperature and
/// the trajectory ladder; dropping either refresh breaks it by more than 1e-3.
#[test]
fn mixed_ladders_are_exactly_invariant_and_fail_without_either_refresh() {
    check_exact(&with_temperatures(), "temperature");
    check_exact(&with_trajectory(), "trajectory");
}

/// Exact draws of the product law on the three rungs, one sweep of exchanges (no
/// exploration), chi-square of the 8 x 8 x 4 joint states.
fn p_value<X: Exchange<State = RbmChains<f64>, RungModel = Model>>(
    ladder: &X,
    models: &[(Rbm<B, B>, f64)],
    seed: u64,
) -> f64 {
    const DRAWS: usize = 100_000;
    let chains = models
        .iter()
        .enumerate()
        .map(|(k, (m, b))| exact_chains(m, *b, DRAWS, seed + k as u64).chains)
        .collect();
    let mut state = PtState::new(chains, seed + 3).unwrap();
    let pt = ParallelTempering::new(Gibbs::new(0), SwapSchedule::Sweep);
    let info = pt.step(ladder, &mut state, Par::Rayon);
    assert!(info.accepted.iter().all(|&a| a > 1000), "{info:?}");
    let p: Vec<Vec<f64>> = models
        .iter()
        .map(|(m, b)| joint_probabilities(m, *b))
        .collect();
    let index = |r: &Rbm<B, B>, c: &RbmChains<f64>, i: usize| {
        let v = r
            .visible()
            .configuration_index(c.visible.column(i).as_slice()) as usize;
        let h = r
            .hidden()
            .configuration_index(c.hidden.column(i).as_slice()) as usize;
        v + (1 << r.visible().n_units()) * h
    };
    let mut counts = vec![0u64; 8 * 8 * 4];
    for i in 0..DRAWS {
        let s: Vec<usize> = (0..3)
            .map(|k| index(&models[k].0, &state.rungs()[k], i))
            .collect();
        counts[s[0] + 8 * s[1] + 64 * s[2]] += 1;
    }
    let law: Vec<f64> = (0..256)
        .map(|s| p[0][s % 8] * p[1][(s / 8) % 8] * p[2][s / 64])
        .collect();
    assert_eq!(state.rungs()[2].n_chains(), DRAWS);
    chi_square(&counts, &law).p_value
}

fn check_sampled<A: Ladder<Model = Model> + Clone>(ladder: MixedLadder<A, B, B>, name: &str) {
    assert_eq!(ladder.n_exchange_rungs(), 3);
    assert_eq!(ladder.target(), 1);
    assert_eq!(ladder.explored(1).beta, 1.0);
    assert!(matches!(ladder.explored(2).model, StackedRbm::Upper(_)));
    let models = rungs(&ladder);
    let p = p_value(&ladder, &models, 5);
    assert!(p > 1e-3, "{name}: mixed ladder rejected: p = {p}");
    for junction in [true, false] {
        let p = p_value(&NoRefresh(ladder.clone(), junction), &models, 5);
        assert!(
            p < 1e-9,
            "{name}: negative control (junction {junction}) passed: p = {p}"
        );
    }
}

#[test]
fn mixed_ladders_keep_the_product_law_and_fail_without_either_refresh() {
    check_sampled(with_temperatures(), "temperature");
    check_sampled(with_trajectory(), "trajectory");
}

/// A ladder of another model than the stack's bottom RBM cannot be joined to the stack.
#[test]
fn a_ladder_that_does_not_end_at_the_bottom_rbm_is_rejected() {
    let other = Rbm::new(
        B::new(vec![0.0, 0.0]),
        B::new(vec![0.0]),
        DMatrix::zeros(2, 1),
    )
    .unwrap();
    let ladder = TemperatureLadder::new(StackedRbm::Bottom(other), vec![0.5, 1.0]).unwrap();
    let e = MixedLadder::new(ladder, StackLadder::new(stack())).unwrap_err();
    assert!(e.to_string().contains("another model"), "{e}");
    // A trajectory that ends at an earlier checkpoint, not at the bottom RBM.
    let t = TrajectoryLadder::new(vec![stack().bottom().clone(), checkpoint()]).unwrap();
    let e = MixedLadder::new(t.map(StackedRbm::Bottom), StackLadder::new(stack())).unwrap_err();
    assert!(e.to_string().contains("another model"), "{e}");
}

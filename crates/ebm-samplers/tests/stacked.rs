//! Stacked tempering (paper 002): exact transition matrices of the exchange with and without
//! its mandatory refresh on an enumerable 3 -> 2 -> 2 stack, the implemented PT step against the
//! exact product law (chi-square, with the no-refresh variant as negative control), the mirror
//! test, antisymmetry and detailed balance of the exchange under proptest (Bernoulli, spin,
//! Potts), agreement of a 7 -> 5 -> 3 -> 2 stack with the exact marginals, and cost accounting.

use ebm_core::{Chains, Par};
use ebm_models::{Bernoulli, DiscreteLayer, Potts, Rbm, RbmChains, Spin, Stack, StackedRbm, exact};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Exchange, ParallelTempering, PtState, Rung, StackLadder, StackedTempering, SwapSchedule,
};
use ebm_testkit::{
    chi_square, conditionals, exact_chains, joint_probabilities, stationarity_violation,
};
use nalgebra::DMatrix;
use proptest::prelude::*;
use rand::Rng;

type B = Bernoulli;

fn rbm(nv: usize, nh: usize, g: &[f64], c: &[f64], w: &[f64]) -> Rbm<B, B> {
    Rbm::new(
        B::new(g.to_vec()),
        B::new(c.to_vec()),
        DMatrix::from_row_slice(nv, nh, w),
    )
    .unwrap()
}

/// A random-looking 3 -> 2 -> 2 Bernoulli stack with couplings of order 1-2.
fn tiny_stack() -> Stack<B, B> {
    let r1 = rbm(
        3,
        2,
        &[0.4, -0.7, 0.2],
        &[-0.3, 0.6],
        &[1.6, -1.1, -0.9, 1.8, 1.2, 0.7],
    );
    let r2 = rbm(2, 2, &[0.9, -1.2], &[0.5, -0.4], &[-1.7, 1.3, 2.0, 0.8]);
    Stack::new(r1, vec![r2]).unwrap()
}

/// One chain of `rbm` in configuration (`v`, `h`) (configuration indices).
fn chain<V: DiscreteLayer, H: DiscreteLayer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    v: usize,
    h: usize,
) -> RbmChains<V::Scalar> {
    let mut c = rbm.default_chains(1);
    rbm.visible()
        .write_configuration(v as u128, c.visible.as_mut_slice());
    rbm.hidden()
        .write_configuration(h as u128, c.hidden.as_mut_slice());
    c
}

/// The exact kernels of the 3 -> 2 -> 2 stack on its 512 joint states
/// (index v1 + 8 h1 + 32 v2 + 128 h2), with the acceptance from the implemented
/// [`StackLadder::log_accept`]: (target, exchange, exchange then one AGS step per RBM).
fn tiny_kernels(refresh: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let stack = tiny_stack();
    let (r1, r2) = (
        stack.bottom().clone(),
        stack.upper().next().unwrap().clone(),
    );
    let ladder = StackLadder::new(stack);
    let (p1, p2) = (joint_probabilities(&r1, 1.0), joint_probabilities(&r2, 1.0));
    let (h1_v1, v1_h1) = conditionals(&p1, 8, 4);
    let (h2_v2, v2_h2) = conditionals(&p2, 4, 4);
    let n = 512;
    let idx = |v1: usize, h1: usize, v2: usize, h2: usize| v1 + 8 * h1 + 32 * v2 + 128 * h2;
    let mut pi = vec![0.0; n];
    let mut ex = vec![0.0; n * n];
    let mut ags = vec![0.0; n * n];
    for h2 in 0..4 {
        for v2 in 0..4 {
            for h1 in 0..4 {
                for v1 in 0..8 {
                    let a = idx(v1, h1, v2, h2);
                    pi[a] = p1[v1 + 8 * h1] * p2[v2 + 4 * h2];
                    // Rung 0 is the top RBM (2), rung 1 the bottom RBM (1).
                    let mut la = [0.0];
                    ladder.log_accept(
                        0,
                        &chain(&r2, v2, h2),
                        &chain(&r1, v1, h1),
                        &mut la,
                        Par::Seq,
                    );
                    let alpha = la[0].min(0.0).exp();
                    for (prob, (nh1, nv2)) in [(alpha, (v2, h1)), (1.0 - alpha, (h1, v2))] {
                        if refresh {
                            for nv1 in 0..8 {
                                for nh2 in 0..4 {
                                    ex[a * n + idx(nv1, nh1, nv2, nh2)] +=
                                        prob * v1_h1[nh1][nv1] * h2_v2[nv2][nh2];
                                }
                            }
                        } else {
                            ex[a * n + idx(v1, nh1, nv2, h2)] += prob;
                        }
                    }
                }
            }
        }
    }
    // One AGS step per RBM: h ~ p(h | v), then v ~ p(v | h).
    let mut step = vec![0.0; n * n];
    for a in 0..n {
        let (v1, v2) = (a % 8, (a / 32) % 4);
        for nh1 in 0..4 {
            for nv1 in 0..8 {
                let p1 = h1_v1[v1][nh1] * v1_h1[nh1][nv1];
                for nh2 in 0..4 {
                    for nv2 in 0..4 {
                        step[a * n + idx(nv1, nh1, nv2, nh2)] +=
                            p1 * h2_v2[v2][nh2] * v2_h2[nh2][nv2];
                    }
                }
            }
        }
    }
    for a in 0..n {
        for b in (0..n).filter(|&b| ex[a * n + b] != 0.0) {
            let e = ex[a * n + b];
            for c in 0..n {
                ags[a * n + c] += e * step[b * n + c];
            }
        }
    }
    (pi, ex, ags)
}

/// Spec §9.4-9.5 and §10: exchange + refresh leaves prod_n P_n(v_n, h_n) invariant to
/// round-off, alone and followed by one AGS step per RBM; without the refresh it does not,
/// by ~1e-2 (exchange alone) and ~1e-3..1e-4 (with AGS), the magnitudes of spec §10.
#[test]
fn exchange_with_refresh_is_exactly_invariant_and_without_is_not() {
    let (pi, ex, full) = tiny_kernels(true);
    for k in [&ex, &full] {
        for a in 0..pi.len() {
            let row: f64 = k[a * pi.len()..(a + 1) * pi.len()].iter().sum();
            assert!((row - 1.0).abs() < 1e-12, "row {a} sums to {row}");
        }
    }
    let (e_ex, e_full) = (
        stationarity_violation(&pi, &ex),
        stationarity_violation(&pi, &full),
    );
    println!("with refresh: exchange {e_ex:.1e}, exchange + AGS {e_full:.1e}");
    assert!(e_ex < 1e-15, "exchange + refresh not invariant: {e_ex}");
    assert!(
        e_full < 1e-15,
        "exchange + refresh + AGS not invariant: {e_full}"
    );

    let (pi, ex, full) = tiny_kernels(false);
    let (e_ex, e_full) = (
        stationarity_violation(&pi, &ex),
        stationarity_violation(&pi, &full),
    );
    println!("without refresh: exchange {e_ex:.1e}, exchange + AGS {e_full:.1e}");
    assert!(
        e_ex > 3e-3,
        "exchange without refresh looked invariant: {e_ex}"
    );
    assert!(
        e_full > 5e-5,
        "exchange + AGS without refresh looked invariant: {e_full}"
    );
}

/// The implemented exchange swaps exactly h_n and v_{n+1} of the accepted chains.
#[test]
fn exchange_swaps_the_hidden_below_with_the_visible_above() {
    let stack = tiny_stack();
    let (r1, r2) = (
        stack.bottom().clone(),
        stack.upper().next().unwrap().clone(),
    );
    let ladder = StackLadder::new(stack);
    let mut lo = chain(&r2, 1, 2);
    let mut hi = chain(&r1, 5, 3);
    let mut rngs = ebm_core::RngStreams::new(1, 1);
    ladder.exchange(0, &mut lo, &mut hi, &[true], rngs.as_mut_slice(), Par::Seq);
    assert_eq!(r1.hidden().configuration_index(hi.hidden.as_slice()), 1);
    assert_eq!(r2.visible().configuration_index(lo.visible.as_slice()), 3);
    ladder.exchange(0, &mut lo, &mut hi, &[false], rngs.as_mut_slice(), Par::Seq);
    assert_eq!(r1.hidden().configuration_index(hi.hidden.as_slice()), 1);
    assert_eq!(r2.visible().configuration_index(lo.visible.as_slice()), 3);
}

/// The stack ladder with its exchange but without the refresh (the negative control).
struct NoRefresh(StackLadder<B, B>);

impl Exchange for NoRefresh {
    type State = RbmChains<f64>;
    type RungModel = StackedRbm<B, B>;
    fn n_exchange_rungs(&self) -> usize {
        self.0.n_exchange_rungs()
    }
    fn explored(&self, k: usize) -> Rung<'_, StackedRbm<B, B>> {
        self.0.explored(k)
    }
    fn log_accept(&self, k: usize, lo: &Self::State, hi: &Self::State, out: &mut [f64], par: Par) {
        self.0.log_accept(k, lo, hi, out, par)
    }
    fn exchange<R: Rng + Send>(
        &self,
        _k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        _rngs: &mut [R],
        _par: Par,
    ) {
        for (i, &a) in accept.iter().enumerate() {
            if a {
                ebm_core::swap_columns(&mut hi.hidden, &mut lo.visible, i);
            }
        }
    }
}

/// Exact draws of every RBM's joint law, one exchange round of the PT loop (no exploration),
/// and a chi-square test of the 512 joint states against the exact product law.
fn pt_exchange_p_value<X: Exchange<State = RbmChains<f64>, RungModel = StackedRbm<B, B>>>(
    ladder: &X,
    seed: u64,
) -> f64 {
    const DRAWS: usize = 100_000;
    let stack = tiny_stack();
    let (r1, r2) = (
        stack.bottom().clone(),
        stack.upper().next().unwrap().clone(),
    );
    let rungs = vec![
        exact_chains(&r2, 1.0, DRAWS, seed).chains,
        exact_chains(&r1, 1.0, DRAWS, seed + 1).chains,
    ];
    let mut state = PtState::new(rungs, seed + 2).unwrap();
    ParallelTempering::new(Gibbs::new(0), SwapSchedule::DeterministicEvenOdd).step(
        ladder,
        &mut state,
        Par::Rayon,
    );
    let (p1, p2) = (joint_probabilities(&r1, 1.0), joint_probabilities(&r2, 1.0));
    let mut counts = vec![0u64; 512];
    let (top, bottom) = (&state.rungs()[0], &state.rungs()[1]);
    for i in 0..DRAWS {
        let v1 = r1
            .visible()
            .configuration_index(bottom.visible.column(i).as_slice()) as usize;
        let h1 = r1
            .hidden()
            .configuration_index(bottom.hidden.column(i).as_slice()) as usize;
        let v2 = r2
            .visible()
            .configuration_index(top.visible.column(i).as_slice()) as usize;
        let h2 = r2
            .hidden()
            .configuration_index(top.hidden.column(i).as_slice()) as usize;
        counts[(v1 + 8 * h1) + 32 * (v2 + 4 * h2)] += 1;
    }
    let p: Vec<f64> = (0..512).map(|s| p1[s % 32] * p2[s / 32]).collect();
    chi_square(&counts, &p).p_value
}

/// The implemented PT round on the stack keeps the exact product law (chi-square); the same
/// round without the refresh is rejected decisively.
#[test]
fn pt_round_on_a_stack_keeps_the_product_law_and_fails_without_refresh() {
    let p = pt_exchange_p_value(&StackLadder::new(tiny_stack()), 11);
    assert!(p > 1e-3, "stacked exchange rejected: p = {p}");
    let p = pt_exchange_p_value(&NoRefresh(StackLadder::new(tiny_stack())), 11);
    assert!(p < 1e-9, "negative control passed: p = {p}");
}

/// Spec §9.6: with RBM 2 = mirror(RBM 1) (W' = W^T, g' = c, c' = g), P^v_2 = P^h_1, so
/// Delta F = 0 and the exchange is accepted with probability exactly 1 for every state.
#[test]
fn a_mirrored_pair_always_exchanges() {
    fn check<L: DiscreteLayer<Scalar = f64>>(r1: Rbm<L, L>) {
        let r2 = r1.transposed();
        let (nv, nh) = (
            r1.visible().n_configurations() as usize,
            r1.hidden().n_configurations() as usize,
        );
        let ladder = StackLadder::new(Stack::new(r1.clone(), vec![r2.clone()]).unwrap());
        for v1 in 0..nv {
            for h1 in 0..nh {
                for v2 in 0..nh {
                    for h2 in 0..nv {
                        let mut la = [f64::NAN];
                        ladder.log_accept(
                            0,
                            &chain(&r2, v2, h2),
                            &chain(&r1, v1, h1),
                            &mut la,
                            Par::Seq,
                        );
                        assert_eq!(la[0].min(0.0).exp(), 1.0, "log acceptance {}", la[0]);
                    }
                }
            }
        }
    }
    check(rbm(
        3,
        4,
        &[0.3, -1.2, 0.8],
        &[1.1, -0.4, 0.2, -0.9],
        &[
            1.5, -2.1, 0.3, 0.9, -0.6, 1.7, -1.3, 0.4, 2.2, -0.8, 1.0, -1.9,
        ],
    ));
    check(
        Rbm::new(
            Spin::new(vec![0.5, -0.3]),
            Spin::new(vec![0.2, 0.7, -1.0]),
            DMatrix::from_row_slice(2, 3, &[1.2, -0.8, 0.6, -1.5, 0.9, 0.4]),
        )
        .unwrap(),
    );
}

/// Spec §9.7 and §9.4 on the collapsed pair (h_n, v_{n+1}): Delta F is antisymmetric under
/// the swap, e^{-Delta F} equals the exact ratio of marginals (the Z's cancel), and the
/// exchange satisfies detailed balance with respect to P^h_1 x P^v_2. Returns the worst errors.
fn exchange_errors<V, H>(r1: Rbm<V, H>, r2: Rbm<H, H>) -> (f64, f64, f64)
where
    V: DiscreteLayer<Scalar = f64>,
    H: DiscreteLayer<Scalar = f64>,
{
    let nh = r1.hidden().n_configurations() as usize;
    let ph1 = exact::hidden_probabilities(&r1, 1.0, Par::Seq).unwrap();
    let pv2 = exact::visible_probabilities(&r2, 1.0, Par::Seq).unwrap();
    let ladder = StackLadder::new(Stack::new(r1.clone(), vec![r2.clone()]).unwrap());
    let log_alpha = |h1: usize, v2: usize| {
        let mut la = [0.0];
        ladder.log_accept(0, &chain(&r2, v2, 0), &chain(&r1, 0, h1), &mut la, Par::Seq);
        la[0]
    };
    let (mut anti, mut ratio, mut balance) = (0.0f64, 0.0f64, 0.0f64);
    for h1 in 0..nh {
        for v2 in 0..nh {
            let (fwd, bwd) = (log_alpha(h1, v2), log_alpha(v2, h1));
            anti = anti.max((fwd + bwd).abs());
            let exact_log_ratio = (pv2[h1] * ph1[v2]).ln() - (pv2[v2] * ph1[h1]).ln();
            ratio = ratio.max((fwd - exact_log_ratio).abs());
            // pi(a) K(a -> b) vs pi(b) K(b -> a) for a = (h1, v2), b = (v2, h1).
            let flow = |h: usize, v: usize, la: f64| ph1[h] * pv2[v] * la.min(0.0).exp();
            balance = balance.max((flow(h1, v2, fwd) - flow(v2, h1, bwd)).abs());
        }
    }
    (anti, ratio, balance)
}

fn fields(n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(-2.0..2.0f64, n)
}

fn weights(r: usize, c: usize) -> impl Strategy<Value = DMatrix<f64>> {
    prop::collection::vec(-2.5..2.5f64, r * c).prop_map(move |w| DMatrix::from_vec(r, c, w))
}

fn assert_small((anti, ratio, balance): (f64, f64, f64)) -> Result<(), TestCaseError> {
    prop_assert!(anti < 1e-12, "antisymmetry {anti}");
    prop_assert!(ratio < 1e-10, "ratio {ratio}");
    prop_assert!(balance < 1e-14, "detailed balance {balance}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn bernoulli_exchange_is_antisymmetric_and_balanced(
        (g, c, w, c2, w2) in (1usize..=4, 1usize..=3, 1usize..=3).prop_flat_map(|(nv, nh, nh2)| {
            (fields(nv), fields(nh), weights(nv, nh), fields(nh2), weights(nh, nh2))
        }),
    ) {
        let nh = c.len();
        let r1 = Rbm::new(B::new(g), B::new(c), w).unwrap();
        let r2 = Rbm::new(B::new(vec![0.3; nh]), B::new(c2), w2).unwrap();
        assert_small(exchange_errors(r1, r2))?;
    }

    #[test]
    fn spin_exchange_is_antisymmetric_and_balanced(
        (g, c, w, g2, c2, w2) in (1usize..=4, 1usize..=3, 1usize..=3).prop_flat_map(|(nv, nh, nh2)| {
            (fields(nv), fields(nh), weights(nv, nh), fields(nh), fields(nh2), weights(nh, nh2))
        }),
    ) {
        let r1 = Rbm::new(Spin::new(g), Spin::new(c), w).unwrap();
        let r2 = Rbm::new(Spin::new(g2), Spin::new(c2), w2).unwrap();
        assert_small(exchange_errors(r1, r2))?;
    }

    /// Potts (q = 3) bottom visible layer and Potts (q = 3) hidden layers throughout.
    #[test]
    fn potts_exchange_is_antisymmetric_and_balanced(
        (g, c, w, g2, c2, w2) in (1usize..=2, 1usize..=2, 1usize..=2).prop_flat_map(|(nv, nh, nh2)| {
            (fields(3 * nv), fields(3 * nh), weights(3 * nv, 3 * nh),
             fields(3 * nh), fields(3 * nh2), weights(3 * nh, 3 * nh2))
        }),
    ) {
        let r1 = Rbm::new(Potts::new(3, g).unwrap(), Potts::new(3, c).unwrap(), w).unwrap();
        let r2 = Rbm::new(Potts::new(3, g2).unwrap(), Potts::new(3, c2).unwrap(), w2).unwrap();
        assert_small(exchange_errors(r1, r2))?;
    }
}

/// A Potts bottom with Bernoulli hidden layers: the exchange only sees the Bernoulli layers,
/// but F^h_1 carries the Potts cumulant generating function.
#[test]
fn potts_bottom_exchange_is_balanced() {
    let r1 = Rbm::new(
        Potts::new(3, vec![0.2, -0.5, 0.9, -1.0, 0.4, 0.1]).unwrap(),
        B::new(vec![0.3, -0.6, 0.8]),
        DMatrix::from_row_slice(
            6,
            3,
            &[
                1.2, -0.7, 0.3, -1.4, 0.9, 0.5, 0.8, -0.2, -1.1, 0.6, 1.5, -0.9, -0.3, 0.4, 1.7,
                1.0, -1.2, 0.2,
            ],
        ),
    )
    .unwrap();
    let r2 = rbm(
        3,
        2,
        &[0.5, -0.2, 0.1],
        &[-0.4, 0.6],
        &[1.1, -0.9, 0.4, 1.3, -1.6, 0.7],
    );
    let (anti, ratio, balance) = exchange_errors(r1, r2);
    assert!(
        anti < 1e-12 && ratio < 1e-10 && balance < 1e-14,
        "{anti} {ratio} {balance}"
    );
}

/// Stack construction rejects a hidden layer n that does not match the visible layer n + 1,
/// in number of units or in values per unit (Potts states), with a typed error.
#[test]
fn mismatched_layers_are_rejected() {
    let r1 = rbm(3, 2, &[0.0; 3], &[0.0; 2], &[0.0; 6]);
    let r2 = rbm(3, 2, &[0.0; 3], &[0.0; 2], &[0.0; 6]);
    let err = Stack::new(r1, vec![r2]).unwrap_err();
    assert!(
        matches!(err, ebm_core::Error::ShapeMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("stacked RBM 2"), "{err}");
    let p1 = Rbm::new(
        Potts::<f64>::zeros(2, 3),
        Potts::zeros(2, 3),
        DMatrix::zeros(6, 6),
    )
    .unwrap();
    let p2 = Rbm::new(Potts::zeros(2, 2), Potts::zeros(1, 2), DMatrix::zeros(4, 2)).unwrap();
    assert!(matches!(
        Stack::new(p1, vec![p2]),
        Err(ebm_core::Error::ShapeMismatch { .. })
    ));
}

/// A random Bernoulli RBM with weights and fields uniform in [-scale, scale].
fn random_rbm(nv: usize, nh: usize, scale: f64, seed: u64) -> Rbm<B, B> {
    let mut rng = ebm_core::RngStreams::auxiliary(seed, 0);
    let mut u =
        |n: usize| -> Vec<f64> { (0..n).map(|_| rng.random_range(-scale..scale)).collect() };
    let (g, c, w) = (u(nv), u(nh), u(nv * nh));
    Rbm::new(B::new(g), B::new(c), DMatrix::from_vec(nv, nh, w)).unwrap()
}

/// Spec §9.8 (the authors' test, made exact): a random 7 -> 5 -> 3 -> 2 stack, 20 000 chains
/// started from all-zero bottom configurations by the bottom-to-top pass, 150 ST iterations;
/// the visible configurations of every RBM (7, 5 and 3 units) are tested by chi-square against
/// that RBM's exact marginal (the product target has each RBM's own law as its marginal).
#[test]
fn seven_five_three_two_stack_matches_exact_marginals() {
    let r1 = random_rbm(7, 5, 1.0, 1);
    let r2 = random_rbm(5, 3, 1.0, 2);
    let r3 = random_rbm(3, 2, 1.0, 3);
    let stack = Stack::new(r1.clone(), vec![r2.clone(), r3.clone()]).unwrap();
    let ladder = StackLadder::new(stack);
    let st = StackedTempering::default();
    let n = 20_000;
    let mut state = st
        .init(&ladder, &DMatrix::zeros(7, n), 5, Par::Rayon)
        .unwrap();
    let mut accepted = vec![0u64; 2];
    for _ in 0..150 {
        let info = st.step(&ladder, &mut state, Par::Rayon);
        for k in 0..2 {
            accepted[k] += info.exchanges.accepted[k];
        }
    }
    assert!(
        accepted.iter().all(|&a| a > 1000),
        "too few exchanges: {accepted:?}"
    );
    // Rung 2 is RBM 1 (the bottom), rung 1 RBM 2, rung 0 RBM 3.
    let p = |counts: Vec<u64>, probs: Vec<f64>| chi_square(&counts, &probs).p_value;
    let counts = |layer: &B, x: &DMatrix<f64>| {
        let mut c = vec![0u64; layer.n_configurations() as usize];
        for col in x.column_iter() {
            c[layer.configuration_index(col.as_slice()) as usize] += 1;
        }
        c
    };
    let p1 = p(
        counts(r1.visible(), &state.rungs()[2].visible),
        exact::visible_probabilities(&r1, 1.0, Par::Seq).unwrap(),
    );
    let p2 = p(
        counts(r2.visible(), &state.rungs()[1].visible),
        exact::visible_probabilities(&r2, 1.0, Par::Seq).unwrap(),
    );
    let p3 = p(
        counts(r3.visible(), &state.rungs()[0].visible),
        exact::visible_probabilities(&r3, 1.0, Par::Seq).unwrap(),
    );
    println!("p-values: bottom {p1:.3}, middle {p2:.3}, top {p3:.3}; accepted {accepted:?}");
    for (name, p) in [("bottom", p1), ("middle", p2), ("top", p3)] {
        assert!(p > 1e-4, "{name} marginal rejected: p = {p}");
    }
}

/// Spec §9.12: one ST iteration costs L AGS steps; under the deterministic even/odd schedule
/// every adjacent pair is proposed once every two iterations, for every chain.
#[test]
fn cost_accounting_counts_l_ags_steps_per_iteration() {
    let stack = Stack::new(
        random_rbm(6, 4, 0.5, 7),
        vec![
            random_rbm(4, 3, 0.5, 8),
            random_rbm(3, 2, 0.5, 9),
            random_rbm(2, 2, 0.5, 10),
        ],
    )
    .unwrap();
    let ladder = StackLadder::new(stack);
    let st = StackedTempering::default();
    let n = 10;
    let mut state = st
        .init(&ladder, &DMatrix::zeros(6, n), 1, Par::Seq)
        .unwrap();
    assert_eq!(state.rungs().len(), 4);
    assert_eq!(state.rungs()[0].hidden.nrows(), 2, "rung 0 is the top RBM");
    assert_eq!(
        state.rungs()[3].visible.nrows(),
        6,
        "the last rung is the bottom RBM"
    );
    let mut ags = 0;
    let mut proposed = [0u64; 3];
    for _ in 0..10 {
        let info = st.step(&ladder, &mut state, Par::Seq);
        ags += info.ags_steps;
        for k in 0..3 {
            proposed[k] += info.exchanges.proposed[k];
        }
    }
    assert_eq!(ags, 4 * 10);
    assert_eq!(proposed, [5 * n as u64; 3]);
    assert_eq!(state.round, 10);
    assert!(state.rungs().iter().all(|r| r.n_chains() == n));
}

/// `StackedTempering::step` explores with a kernel that keeps the product \\(W_n h_n\\) of each
/// RBM's last half-step for the next exchange: the chains are bit for bit those of the plain PT
/// loop with [`Gibbs`] on the same ladder, which recomputes every product, under every
/// schedule. (Changing any kept input, e.g. adding 1e-3 to it, makes this test fail.)
#[test]
fn kept_products_give_the_chains_of_the_plain_pt_loop() {
    let stack = Stack::new(
        random_rbm(7, 5, 1.0, 1),
        vec![random_rbm(5, 4, 1.0, 2), random_rbm(4, 3, 1.0, 3)],
    )
    .unwrap();
    for schedule in [
        SwapSchedule::DeterministicEvenOdd,
        SwapSchedule::StochasticEvenOdd,
        SwapSchedule::Sweep,
        SwapSchedule::Lifted,
    ] {
        let st = StackedTempering::new(schedule);
        let (kept, plain) = (
            StackLadder::new(stack.clone()),
            StackLadder::new(stack.clone()),
        );
        let init = |l: &StackLadder<B, B>| st.init(l, &DMatrix::zeros(7, 300), 3, Par::Rayon);
        let (mut a, mut b) = (init(&kept).unwrap(), init(&plain).unwrap());
        for _ in 0..30 {
            st.step(&kept, &mut a, Par::Rayon);
            st.pt.step(&plain, &mut b, Par::Rayon);
        }
        assert!(a == b, "{schedule:?}: the kept products changed the chains");
    }
}

/// The run is bit-identical for sequential and parallel execution.
#[test]
fn stacked_tempering_is_reproducible_across_thread_counts() {
    let stack = Stack::new(random_rbm(7, 5, 1.0, 1), vec![random_rbm(5, 3, 1.0, 2)]).unwrap();
    let ladder = StackLadder::new(stack);
    let st = StackedTempering::new(SwapSchedule::StochasticEvenOdd);
    let run = |par| {
        let mut s = st.init(&ladder, &DMatrix::zeros(7, 300), 3, par).unwrap();
        for _ in 0..20 {
            st.step(&ladder, &mut s, par);
        }
        s
    };
    assert_eq!(run(Par::Seq), run(Par::Rayon));
}

#[test]
fn init_rejects_bad_bottom_configurations() {
    let ladder = StackLadder::new(tiny_stack());
    let st = StackedTempering::default();
    assert!(
        st.init(&ladder, &DMatrix::zeros(4, 3), 1, Par::Seq)
            .is_err()
    );
    assert!(
        st.init(&ladder, &DMatrix::zeros(3, 0), 1, Par::Seq)
            .is_err()
    );
}

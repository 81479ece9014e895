//! A temperature ladder of the bottom RBM joined to a stack at the target ([`MixedLadder`]):
//! exact draws of the product law on every rung, one PT round of every exchange (sweep
//! schedule), and a chi-square test of the joint states against the exact product law, with
//! two negative controls (no refresh at the junction; no hidden refresh after the temperature
//! swap); and the constructor's typed error.

use ebm_core::{Chains, Par};
use ebm_models::{Bernoulli, DiscreteLayer, Layer, Rbm, RbmChains, Stack, StackedRbm};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Exchange, MixedLadder, ParallelTempering, PtState, Rung, StackLadder, SwapSchedule,
    TemperatureLadder,
};
use ebm_testkit::{chi_square, exact_chains, joint_probabilities};
use nalgebra::DMatrix;
use rand::Rng;

type B = Bernoulli;
type Mixed = MixedLadder<TemperatureLadder<StackedRbm<B, B>>, B, B>;

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

const BETAS: [f64; 2] = [0.35, 1.0];

fn mixed() -> Mixed {
    let s = stack();
    let ladder = TemperatureLadder::new(StackedRbm::Bottom(s.bottom().clone()), BETAS.to_vec());
    MixedLadder::new(ladder.unwrap(), StackLadder::new(s)).unwrap()
}

/// Negative controls: the mixed ladder without one of its refreshes, at the junction (the
/// stack's swap alone) when `.1`, else in the temperature part (whole chains swapped by the
/// visible free energies, hidden layers left as they were).
struct NoRefresh(Mixed, bool);

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

/// Exact draws of the product law on the three rungs (bottom RBM at 0.35 and 1, RBM 2), one
/// sweep of exchanges (no exploration), chi-square of the 8 x 8 x 4 joint states.
fn p_value<X: Exchange<State = RbmChains<f64>, RungModel = StackedRbm<B, B>>>(
    ladder: &X,
    seed: u64,
) -> f64 {
    const DRAWS: usize = 100_000;
    let s = stack();
    let (r1, r2) = (s.bottom().clone(), s.upper().next().unwrap().clone());
    let rungs = vec![
        exact_chains(&r1, BETAS[0], DRAWS, seed).chains,
        exact_chains(&r1, BETAS[1], DRAWS, seed + 1).chains,
        exact_chains(&r2, 1.0, DRAWS, seed + 2).chains,
    ];
    let mut state = PtState::new(rungs, seed + 3).unwrap();
    let pt = ParallelTempering::new(Gibbs::new(0), SwapSchedule::Sweep);
    let info = pt.step(ladder, &mut state, Par::Rayon);
    assert!(info.accepted.iter().all(|&a| a > 1000), "{info:?}");
    let p = [
        joint_probabilities(&r1, BETAS[0]),
        joint_probabilities(&r1, BETAS[1]),
        joint_probabilities(&r2, 1.0),
    ];
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
        let (a, b) = (
            index(&r1, &state.rungs[0], i),
            index(&r1, &state.rungs[1], i),
        );
        counts[a + 8 * b + 64 * index(&r2, &state.rungs[2], i)] += 1;
    }
    let law: Vec<f64> = (0..256)
        .map(|s| p[0][s % 8] * p[1][(s / 8) % 8] * p[2][s / 64])
        .collect();
    assert_eq!(state.rungs[2].n_chains(), DRAWS);
    chi_square(&counts, &law).p_value
}

#[test]
fn mixed_ladder_keeps_the_product_law_and_fails_without_either_refresh() {
    let ladder = mixed();
    assert_eq!(ladder.n_exchange_rungs(), 3);
    assert_eq!(ladder.target(), 1);
    assert_eq!(ladder.explored(1).beta, 1.0);
    assert!(matches!(ladder.explored(2).model, StackedRbm::Upper(_)));
    let p = p_value(&ladder, 5);
    assert!(p > 1e-3, "mixed ladder rejected: p = {p}");
    for junction in [true, false] {
        let p = p_value(&NoRefresh(mixed(), junction), 5);
        assert!(
            p < 1e-9,
            "negative control (junction {junction}) passed: p = {p}"
        );
    }
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
}

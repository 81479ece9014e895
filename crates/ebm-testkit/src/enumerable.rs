//! Exact tests of any kernel on any [`Enumerable`] model.

use crate::chi2::{ChiSquare, chi_square};
use ebm_core::{ChainState, EnergyModel, Enumerable, Kernel, Par};
use rand::Rng;
use std::collections::BTreeMap;

/// The largest number of states the exact tests list (\\(2^{24}\\)).
pub const MAX_STATES: usize = 1 << 24;

fn checked_states<M: Enumerable + ?Sized>(model: &M) -> usize {
    let n = model.n_states();
    assert!(
        (1..=MAX_STATES).contains(&n),
        "exact tests: the model lists {n} states, expected between 1 and {MAX_STATES}"
    );
    n
}

/// `n` independent exact draws from \\(p_\beta\\) of an [`Enumerable`] model, as a chain state
/// whose RNG streams are derived from `seed` (the same streams made the draws and drive any
/// kernel applied next), by [`Enumerable::sample_enumerated`].
///
/// # Panics
/// If the model lists no states or more than [`MAX_STATES`].
pub fn exact_draws<M: Enumerable>(
    model: &M,
    beta: f64,
    n: usize,
    seed: u64,
) -> ChainState<M::State> {
    checked_states(model);
    let mut state = ChainState::new(model.new_state(n), seed);
    model.sample_enumerated(
        &mut state.chains,
        beta,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    state
}

/// How many chains of `x` are in each state of the model.
///
/// # Panics
/// If the model lists no states or more than [`MAX_STATES`].
pub fn state_counts<M: Enumerable>(model: &M, x: &M::State) -> Vec<u64> {
    let mut counts = vec![0u64; checked_states(model)];
    for chain in 0..ebm_core::Chains::n_chains(x) {
        counts[model.state_index(x, chain)] += 1;
    }
    counts
}

/// Chi-square goodness of fit of the chains of `x` (independent draws, e.g. the chains of many
/// independent runs) against the exact law \\(p_\beta\\).
///
/// # Panics
/// As [`state_counts`], or if `x` holds no chains.
pub fn goodness_of_fit<M: Enumerable>(model: &M, x: &M::State, beta: f64) -> ChiSquare {
    chi_square(
        &state_counts(model, x),
        &model.probabilities(beta, Par::Rayon),
    )
}

/// The **exact invariance test** of any kernel on any [`Enumerable`] model: draws `n` states
/// exactly from \\(p_\beta\\) ([`exact_draws`]), applies one step of `kernel` at `beta`, and
/// tests the states reached against \\(p_\beta\\) by a chi-square test. A kernel that leaves
/// \\(p_\beta\\) invariant gives a uniform p-value; one that does not is rejected given enough
/// draws.
///
/// # Panics
/// As [`exact_draws`].
pub fn invariance<M: Enumerable, K: Kernel<M>>(
    model: &M,
    kernel: &K,
    beta: f64,
    n: usize,
    seed: u64,
) -> ChiSquare {
    let state = one_step_from_exact(model, kernel, beta, n, seed);
    goodness_of_fit(model, &state.chains, beta)
}

/// Negative control for exact tests: the kernel `.0` run at the fixed inverse temperature `.1`
/// whatever the target's. A correct kernel at the wrong temperature targets the wrong law, so
/// every exact test must reject it.
#[derive(Clone, Copy, Debug)]
pub struct AtBeta<K>(pub K, pub f64);

impl<M: EnergyModel, K: Kernel<M>> Kernel<M> for AtBeta<K> {
    type Info = K::Info;

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        _beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> K::Info {
        self.0.step(model, self.1, x, rngs, par)
    }
}

/// `n` exact draws from \\(p_\beta\\) after one step of `kernel`.
pub(crate) fn one_step_from_exact<M: Enumerable, K: Kernel<M>>(
    model: &M,
    kernel: &K,
    beta: f64,
    n: usize,
    seed: u64,
) -> ChainState<M::State> {
    let mut state = exact_draws(model, beta, n, seed);
    kernel.step(
        model,
        beta,
        &mut state.chains,
        state.rngs.as_mut_slice(),
        Par::Rayon,
    );
    state
}

/// The **detailed-balance test** of any kernel on any [`Enumerable`] model, a statistical test
/// that needs no transition matrix: draw \\(x \sim p_\beta\\) exactly, take one step to \\(y\\),
/// and count the pairs \\((x, y)\\). Detailed balance,
/// \\(p(x) T(x, y) = p(y) T(y, x)\\), says the law of the pair is symmetric, so given
/// \\(c_{xy} + c_{yx}\\) the count \\(c_{xy}\\) is binomial with probability 1/2; Bowker's
/// statistic \\(\sum_{x < y} (c_{xy} - c_{yx})^2 / (c_{xy} + c_{yx})\\) is then chi-square
/// with one degree of freedom per pair (pairs seen fewer than 10 times are left out).
///
/// A kernel that leaves \\(p_\beta\\) invariant without being reversible (a systematic-scan
/// sweep, a cycle of reversible kernels) is rejected by this test and passes [`invariance`].
///
/// # Panics
/// As [`exact_draws`].
pub fn detailed_balance<M: Enumerable, K: Kernel<M>>(
    model: &M,
    kernel: &K,
    beta: f64,
    n: usize,
    seed: u64,
) -> ChiSquare {
    skew_detailed_balance(model, kernel, beta, n, seed, |k| k)
}

/// The **skew-detailed-balance test** of a lifted kernel (one whose state carries a direction
/// that the kernel keeps or flips, as the index process of non-reversible tempering):
/// \\(p(x) T(x, y) = p(\iota y) T(\iota y, \iota x)\\) for the involution \\(\iota\\) on state
/// indices given by `flip` (which must leave \\(p_\beta\\) unchanged). As
/// [`detailed_balance`], which is the case \\(\iota = \mathrm{id}\\), the count of pairs
/// \\((x, y)\\) is compared with that of \\((\iota y, \iota x)\\).
///
/// # Panics
/// As [`exact_draws`], or if `flip` maps an index out of range.
pub fn skew_detailed_balance<M: Enumerable, K: Kernel<M>>(
    model: &M,
    kernel: &K,
    beta: f64,
    n: usize,
    seed: u64,
    flip: impl Fn(usize) -> usize,
) -> ChiSquare {
    // The same seed gives the same exact draws: `before` is the state `after` stepped from.
    let before = exact_draws(model, beta, n, seed);
    let after = one_step_from_exact(model, kernel, beta, n, seed);
    let n_states = checked_states(model);
    let mut pairs: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for chain in 0..n {
        let x = model.state_index(&before.chains, chain);
        let y = model.state_index(&after.chains, chain);
        *pairs.entry((x, y)).or_default() += 1;
    }
    let mut statistic = 0.0;
    let mut dof = 0;
    for (&(x, y), &a) in &pairs {
        let mirror = (flip(y), flip(x));
        assert!(
            mirror.0 < n_states && mirror.1 < n_states,
            "skew_detailed_balance: flip maps a state out of range"
        );
        // Each unordered pair once: from its smaller member, or from the one seen if the
        // other never was.
        let b = pairs.get(&mirror).copied().unwrap_or(0);
        if mirror == (x, y) || (b > 0 && mirror < (x, y)) {
            continue;
        }
        let total = (a + b) as f64;
        if total >= 10.0 {
            statistic += (a as f64 - b as f64).powi(2) / total;
            dof += 1;
        }
    }
    ChiSquare::new(statistic, dof)
}

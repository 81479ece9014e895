//! The generic exact tests of `ebm::testkit` on the model a user writes by following the book
//! (the periodic 1D Ising chain of `examples/extending/ising_chain.rs`, one definition shared
//! with the examples), each with negative controls it must reject.

#[path = "../examples/extending/ising_chain.rs"]
mod ising_chain;

use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::rand::Rng;
use ebm::samplers::Scan;
use ebm::testkit::{
    detailed_balance, exact_draws, goodness_of_fit, invariance, skew_detailed_balance,
};
use ising_chain::{HeatBath, IsingChain};

/// Draws per test: with 64 (or 128) states, a kernel off by a few percent is rejected.
const DRAWS: usize = 100_000;
/// A correct kernel's p-value falls below this once in 10^4 runs (seeds are fixed).
const ALPHA: f64 = 1e-4;
/// A negative control must be rejected far beyond chance.
const REJECT: f64 = 1e-6;

fn chain() -> IsingChain {
    IsingChain {
        n: 6,
        coupling: 0.7,
        field: 0.2,
    }
}

/// Single-site Metropolis at `n` random sites per step: reversible.
fn random_flips() -> SingleSiteMetropolis {
    SingleSiteMetropolis {
        sweeps: 1,
        scan: Scan::Random,
    }
}

/// A kernel run at `scale` times the inverse temperature it is given: a broken kernel.
struct WrongBeta<K> {
    kernel: K,
    scale: f64,
}

impl<M: EnergyModel, K: Kernel<M>> Kernel<M> for WrongBeta<K> {
    type Info = K::Info;

    fn step<R: Rng + Send>(
        &self,
        m: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> K::Info {
        self.kernel.step(m, self.scale * beta, x, rngs, par)
    }
}

/// The chain with one more row per state, a direction \\(\pm 1\\) that the energy ignores:
/// the state space of a lifted kernel.
struct Lifted(IsingChain);

impl EnergyModel for Lifted {
    type Scalar = f64;
    type State = DMatrix<f64>;

    fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], _par: Par) {
        for (o, col) in out.iter_mut().zip(x.column_iter()) {
            *o = beta * self.0.energy(&col.as_slice()[..self.0.n]);
        }
    }

    fn new_state(&self, n_chains: usize) -> DMatrix<f64> {
        DMatrix::from_element(self.0.n + 1, n_chains, 1.0)
    }
}

/// State k lists the spins and then the direction by the bits of k (bit i set: +1).
impl Enumerable for Lifted {
    fn n_states(&self) -> usize {
        1 << (self.0.n + 1)
    }

    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        for (i, s) in x.column_mut(chain).iter_mut().enumerate() {
            *s = if (k >> i) & 1 == 1 { 1.0 } else { -1.0 };
        }
    }

    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        let col = x.column(chain);
        (0..=self.0.n)
            .filter(|&i| col[i] > 0.0)
            .map(|i| 1 << i)
            .sum()
    }
}

/// Rotates the periodic chain by one site in its direction; with `flip_direction`, also
/// reverses the direction. The law is translation invariant, so the rotation leaves it
/// invariant without being reversible.
struct Rotate {
    flip_direction: bool,
}

impl Kernel<Lifted> for Rotate {
    type Info = ();

    fn step<R: Rng + Send>(
        &self,
        m: &Lifted,
        _beta: f64,
        x: &mut DMatrix<f64>,
        _rngs: &mut [R],
        _par: Par,
    ) {
        let n = m.0.n;
        for mut col in x.column_iter_mut() {
            if col[n] > 0.0 {
                col.as_mut_slice()[..n].rotate_left(1);
            } else {
                col.as_mut_slice()[..n].rotate_right(1);
            }
            if self.flip_direction {
                col[n] = -col[n];
            }
        }
    }
}

#[test]
fn exact_draws_follow_the_exact_law() {
    let m = chain();
    let draws = exact_draws(&m, 1.0, DRAWS, 1);
    let fit = goodness_of_fit(&m, &draws.chains, 1.0);
    assert!(fit.p_value > ALPHA, "{fit:?}");
    // Negative control: the same draws tested against the law at another temperature.
    let bad = goodness_of_fit(&m, &draws.chains, 0.8);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

#[test]
fn enumerated_log_partition_matches_a_direct_sum() {
    let m = chain();
    let mut x = m.new_state(1);
    let mut z = 0.0;
    for k in 0..m.n_states() {
        m.write_state(k, &mut x, 0);
        assert_eq!(m.state_index(&x, 0), k);
        z += (-0.9 * m.energy(x.column(0).as_slice())).exp();
    }
    let lz = m.enumerated_log_partition(0.9, Par::Seq);
    assert!((lz - z.ln()).abs() < 1e-12, "{lz} vs {}", z.ln());
}

#[test]
fn invariance_accepts_correct_kernels_and_rejects_a_wrong_beta() {
    let m = chain();
    let good = invariance(&m, &random_flips(), 1.0, DRAWS, 2);
    assert!(good.p_value > ALPHA, "{good:?}");
    let heat_bath = invariance(&m, &HeatBath { scale: 1.0 }, 1.0, DRAWS, 11);
    assert!(heat_bath.p_value > ALPHA, "{heat_bath:?}");
    let broken = WrongBeta {
        kernel: random_flips(),
        scale: 0.8,
    };
    let bad = invariance(&m, &broken, 1.0, DRAWS, 3);
    assert!(bad.p_value < REJECT, "{bad:?}");
    let bad = invariance(&m, &HeatBath { scale: 0.8 }, 1.0, DRAWS, 12);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

#[test]
fn detailed_balance_accepts_random_flips_and_rejects_a_rotation() {
    let m = chain();
    let good = detailed_balance(&m, &random_flips(), 1.0, DRAWS, 4);
    assert!(good.p_value > ALPHA, "{good:?}");
    // The rotation is invariant (so the invariance test cannot see it) but not reversible.
    let lifted = Lifted(chain());
    let rotate = Rotate {
        flip_direction: false,
    };
    let inv = invariance(&lifted, &rotate, 1.0, DRAWS, 5);
    assert!(inv.p_value > ALPHA, "{inv:?}");
    let bad = detailed_balance(&lifted, &rotate, 1.0, DRAWS, 6);
    assert!(bad.p_value < REJECT, "{bad:?}");
    // Negative control of the test itself: wrong-beta flips are not reversible w.r.t. p.
    let broken = WrongBeta {
        kernel: random_flips(),
        scale: 0.8,
    };
    let bad = detailed_balance(&m, &broken, 1.0, DRAWS, 7);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

#[test]
fn skew_detailed_balance_accepts_a_lifted_rotation() {
    let m = Lifted(chain());
    let n = m.0.n;
    // The involution flips the direction row (bit n of the state index).
    let flip = |k: usize| k ^ (1 << n);
    let lifted = Rotate {
        flip_direction: false,
    };
    let good = skew_detailed_balance(&m, &lifted, 1.0, DRAWS, 8, flip);
    assert!(good.p_value > ALPHA, "{good:?}");
    // Negative control: flipping the direction after each move breaks skew-detailed balance.
    let broken = Rotate {
        flip_direction: true,
    };
    let bad = skew_detailed_balance(&m, &broken, 1.0, DRAWS, 10, flip);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

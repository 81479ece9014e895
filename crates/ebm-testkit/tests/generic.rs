//! The generic exact tests on a model written as a user would (a periodic 1D Ising chain that
//! implements `Enumerable`), each with negative controls it must reject.

use ebm_core::{EnergyModel, Enumerable, Kernel, Par, Scalar};
use ebm_testkit::{
    detailed_balance, exact_draws, goodness_of_fit, invariance, skew_detailed_balance,
};
use nalgebra::DMatrix;
use rand::Rng;

/// Draws per test: with 64 (or 128) states, a kernel off by a few percent is rejected.
const DRAWS: usize = 100_000;
/// A correct kernel's p-value falls below this once in 10^4 runs (seeds are fixed).
const ALPHA: f64 = 1e-4;
/// A negative control must be rejected far beyond chance.
const REJECT: f64 = 1e-6;

/// A periodic chain of `n` spins, \\(E(s) = -J \sum_i s_i s_{i+1} - h \sum_i s_i\\); with
/// `lifted`, each chain carries one more row, a direction \\(\pm 1\\) that the energy ignores.
struct IsingChain {
    n: usize,
    coupling: f64,
    field: f64,
    lifted: bool,
}

impl IsingChain {
    fn new(lifted: bool) -> Self {
        Self {
            n: 6,
            coupling: 0.7,
            field: 0.2,
            lifted,
        }
    }

    fn rows(&self) -> usize {
        self.n + usize::from(self.lifted)
    }

    fn energy(&self, s: &[f64]) -> f64 {
        let n = self.n;
        (0..n)
            .map(|i| -self.coupling * s[i] * s[(i + 1) % n] - self.field * s[i])
            .sum()
    }
}

impl EnergyModel for IsingChain {
    type Scalar = f64;
    type State = DMatrix<f64>;

    fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], _par: Par) {
        for (o, col) in out.iter_mut().zip(x.column_iter()) {
            *o = beta * self.energy(col.as_slice());
        }
    }

    fn new_state(&self, n_chains: usize) -> DMatrix<f64> {
        DMatrix::from_element(self.rows(), n_chains, 1.0)
    }
}

impl Enumerable for IsingChain {
    fn n_states(&self) -> usize {
        1 << self.rows()
    }

    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        for (i, s) in x.column_mut(chain).iter_mut().enumerate() {
            *s = if (k >> i) & 1 == 1 { 1.0 } else { -1.0 };
        }
    }

    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        x.column(chain)
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0.0)
            .map(|(i, _)| 1 << i)
            .sum()
    }
}

/// Metropolis spin flips at `n` random sites: reversible. `scale` multiplies beta in the
/// acceptance (1 is correct; anything else is a broken kernel).
struct RandomFlips {
    scale: f64,
}

impl Kernel<IsingChain> for RandomFlips {
    type Info = ();

    fn step<R: Rng + Send>(
        &self,
        m: &IsingChain,
        beta: f64,
        x: &mut DMatrix<f64>,
        rngs: &mut [R],
        _par: Par,
    ) {
        let n = m.n;
        for (mut col, rng) in x.column_iter_mut().zip(rngs.iter_mut()) {
            for _ in 0..n {
                let i = rng.random_range(0..n);
                let neighbours = col[(i + n - 1) % n] + col[(i + 1) % n];
                let delta = 2.0 * col[i] * (m.coupling * neighbours + m.field);
                if f64::uniform(rng) < (-self.scale * beta * delta).exp() {
                    col[i] = -col[i];
                }
            }
        }
    }
}

/// Rotates the periodic chain by one site, in the direction of the lift row (left without a
/// lift); with `flip_direction`, also reverses the direction. The law is translation invariant,
/// so the rotation leaves it invariant without being reversible.
struct Rotate {
    flip_direction: bool,
}

impl Kernel<IsingChain> for Rotate {
    type Info = ();

    fn step<R: Rng + Send>(
        &self,
        m: &IsingChain,
        _beta: f64,
        x: &mut DMatrix<f64>,
        _rngs: &mut [R],
        _par: Par,
    ) {
        let n = m.n;
        for mut col in x.column_iter_mut() {
            let direction = if m.lifted { col[n] } else { 1.0 };
            if direction > 0.0 {
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
    let m = IsingChain::new(false);
    let draws = exact_draws(&m, 1.0, DRAWS, 1);
    let fit = goodness_of_fit(&m, &draws.chains, 1.0);
    assert!(fit.p_value > ALPHA, "{fit:?}");
    // Negative control: the same draws tested against the law at another temperature.
    let bad = goodness_of_fit(&m, &draws.chains, 0.8);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

#[test]
fn enumerated_log_partition_matches_a_direct_sum() {
    let m = IsingChain::new(false);
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
fn invariance_accepts_random_flips_and_rejects_a_wrong_beta() {
    let m = IsingChain::new(false);
    let good = invariance(&m, &RandomFlips { scale: 1.0 }, 1.0, DRAWS, 2);
    assert!(good.p_value > ALPHA, "{good:?}");
    let bad = invariance(&m, &RandomFlips { scale: 0.8 }, 1.0, DRAWS, 3);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

#[test]
fn detailed_balance_accepts_random_flips_and_rejects_a_rotation() {
    let m = IsingChain::new(false);
    let good = detailed_balance(&m, &RandomFlips { scale: 1.0 }, 1.0, DRAWS, 4);
    assert!(good.p_value > ALPHA, "{good:?}");
    // The rotation is invariant (so the invariance test cannot see it) but not reversible.
    let rotate = Rotate {
        flip_direction: false,
    };
    let inv = invariance(&m, &rotate, 1.0, DRAWS, 5);
    assert!(inv.p_value > ALPHA, "{inv:?}");
    let bad = detailed_balance(&m, &rotate, 1.0, DRAWS, 6);
    assert!(bad.p_value < REJECT, "{bad:?}");
    // Negative control of the test itself: a wrong-beta Metropolis flips is not reversible w.r.t. p.
    let bad = detailed_balance(&m, &RandomFlips { scale: 0.8 }, 1.0, DRAWS, 7);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

#[test]
fn skew_detailed_balance_accepts_a_lifted_rotation() {
    let m = IsingChain::new(true);
    let n = m.n;
    // The involution flips the direction row (bit n of the state index).
    let flip = |k: usize| k ^ (1 << n);
    let lifted = Rotate {
        flip_direction: false,
    };
    let good = skew_detailed_balance(&m, &lifted, 1.0, DRAWS, 8, flip);
    assert!(good.p_value > ALPHA, "{good:?}");
    let not_reversible = detailed_balance(&m, &lifted, 1.0, DRAWS, 9);
    assert!(not_reversible.p_value < REJECT, "{not_reversible:?}");
    // Negative control: flipping the direction after each move breaks skew-detailed balance.
    let broken = Rotate {
        flip_direction: true,
    };
    let bad = skew_detailed_balance(&m, &broken, 1.0, DRAWS, 10, flip);
    assert!(bad.p_value < REJECT, "{bad:?}");
}

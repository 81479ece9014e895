//! Exercise (worked solution): the replica-exchange move of parallel tempering must use the
//! difference of inverse temperatures in its acceptance ratio. Write the swap move on two
//! replicas of a Curie–Weiss model at \\(\beta_0 < \beta_1\\), list the joint states, and show
//! with the exact invariance test that the correct ratio passes and the one with the
//! \\(\beta\\)s left out fails.
//!
//! Run with `cargo run --release --example exercise_swap` (a second).

use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::rand::Rng;
use ebm::testkit::invariance;

// ANCHOR: product
/// Two replicas of a Curie–Weiss model at inverse temperatures `betas[0] < betas[1]`, stacked in
/// one column per chain (rows `0..n` replica 0, rows `n..2n` replica 1). The target is the
/// product law \\(p_{\beta_0}(x_0)\, p_{\beta_1}(x_1)\\): its energy is
/// \\(\beta_0 E(x_0) + \beta_1 E(x_1)\\) (the `beta` argument is ignored).
struct TwoReplicas {
    model: CurieWeiss,
    betas: [f64; 2],
}

impl TwoReplicas {
    fn energies_of(&self, col: &[f64]) -> [f64; 2] {
        let n = self.model.n();
        [self.model.energy(&col[..n]), self.model.energy(&col[n..])]
    }
}

impl EnergyModel for TwoReplicas {
    type Scalar = f64;
    type State = DMatrix<f64>;

    fn energies(&self, x: &DMatrix<f64>, _beta: f64, out: &mut [f64], _par: Par) {
        for (o, col) in out.iter_mut().zip(x.column_iter()) {
            let [e0, e1] = self.energies_of(col.as_slice());
            *o = self.betas[0] * e0 + self.betas[1] * e1;
        }
    }

    fn new_state(&self, n_chains: usize) -> DMatrix<f64> {
        DMatrix::from_element(2 * self.model.n(), n_chains, 1.0)
    }
}

impl Enumerable for TwoReplicas {
    fn n_states(&self) -> usize {
        1 << (2 * self.model.n())
    }

    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        for (i, s) in x.column_mut(chain).iter_mut().enumerate() {
            *s = if (k >> i) & 1 == 1 { 1.0 } else { -1.0 };
        }
    }

    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        let col = x.column(chain);
        (0..col.len())
            .filter(|&i| col[i] > 0.0)
            .map(|i| 1 << i)
            .sum()
    }
}
// ANCHOR_END: product

// ANCHOR: swap
/// Proposes to exchange the two replicas; accepts with probability
/// \\(\min(1, e^{(\beta_1 - \beta_0)(E(x_1) - E(x_0))})\\), or, with `forget_betas`, with the
/// wrong \\(\min(1, e^{E(x_1) - E(x_0)})\\).
struct Swap {
    forget_betas: bool,
}

impl Kernel<TwoReplicas> for Swap {
    type Info = ();

    fn step<R: Rng + Send>(
        &self,
        m: &TwoReplicas,
        _beta: f64,
        x: &mut DMatrix<f64>,
        rngs: &mut [R],
        _par: Par,
    ) {
        let n = m.model.n();
        for (mut col, rng) in x.column_iter_mut().zip(rngs.iter_mut()) {
            let [e0, e1] = m.energies_of(col.as_slice());
            let d_beta = if self.forget_betas {
                1.0
            } else {
                m.betas[1] - m.betas[0]
            };
            let log_accept = d_beta * (e1 - e0);
            if log_accept >= 0.0 || f64::uniform(rng) < log_accept.exp() {
                let (lo, hi) = col.as_mut_slice().split_at_mut(n);
                lo.swap_with_slice(hi);
            }
        }
    }
}
// ANCHOR_END: swap

fn main() -> Result<(), Error> {
    // ANCHOR: test
    let target = TwoReplicas {
        model: CurieWeiss::new(5, 1.2, 0.3)?,
        betas: [0.4, 1.0],
    };
    let right = invariance(
        &target,
        &Swap {
            forget_betas: false,
        },
        1.0,
        100_000,
        1,
    );
    let wrong = invariance(&target, &Swap { forget_betas: true }, 1.0, 100_000, 2);
    println!("swap with beta_1 - beta_0: p-value {:.3}", right.p_value);
    println!("swap without the betas:    p-value {:.1e}", wrong.p_value);
    assert!(right.p_value > 1e-4, "the correct swap must pass");
    assert!(wrong.p_value < 1e-6, "the swap without the betas must fail");
    // ANCHOR_END: test
    // The page's table of these p-values (written where EBM_FIGURES points).
    if let Some(path) = ebm::plot::book_figure("exercise-swap.md") {
        let p = |p: f64| {
            if p < 1e-300 {
                "< 1e-300".to_string()
            } else {
                format!("{p:.3}")
            }
        };
        let table = format!(
            "| swap | p-value of the invariance test |\n|---|---|\n\
             | with beta_1 - beta_0 | {} |\n| without the betas | {} |\n",
            p(right.p_value),
            p(wrong.p_value)
        );
        std::fs::write(&path, table).map_err(|source| Error::Io { path, source })?;
    }
    Ok(())
}

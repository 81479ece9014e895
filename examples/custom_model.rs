//! Plugging in your own energy model: a periodic 1D Ising chain
//! \\(E(s) = -J \sum_i s_i s_{i+1} - h \sum_i s_i\\) with a heat-bath kernel written by the
//! user, driven by the library's `run` and checked against exact enumeration.
//!
//! Run with `cargo run --release --example custom_model`.

// ANCHOR: model
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::rand::Rng;

/// A periodic chain of `n` spins; a batch of chains is an `n x B` matrix of +-1 values.
struct IsingChain {
    n: usize,
    coupling: f64,
    field: f64,
}

impl IsingChain {
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

    /// The tempered energy is beta * E: every unit is tracked, nothing is summed out.
    fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], _par: Par) {
        for (o, col) in out.iter_mut().zip(x.column_iter()) {
            *o = beta * self.energy(col.as_slice());
        }
    }

    fn new_state(&self, n_chains: usize) -> DMatrix<f64> {
        DMatrix::from_element(self.n, n_chains, 1.0)
    }
}
// ANCHOR_END: model

// ANCHOR: kernel
/// One heat-bath sweep: each spin in turn is drawn from its exact conditional law
/// p(s_i = +1 | rest) = sigmoid(2 beta (J (s_{i-1} + s_{i+1}) + h)).
struct HeatBath;

impl Kernel<IsingChain> for HeatBath {
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
        // Chain j consumes only rngs[j]: reproducible whatever the thread count.
        for (mut col, rng) in x.column_iter_mut().zip(rngs.iter_mut()) {
            for i in 0..n {
                let local = m.coupling * (col[(i + n - 1) % n] + col[(i + 1) % n]) + m.field;
                let p_up = 1.0 / (1.0 + (-2.0 * beta * local).exp());
                col[i] = if f64::uniform(rng) < p_up { 1.0 } else { -1.0 };
            }
        }
    }
}
// ANCHOR_END: kernel

fn main() -> Result<(), Error> {
    // ANCHOR: run
    let model = IsingChain {
        n: 10,
        coupling: 0.6,
        field: 0.1,
    };
    let beta = 1.0;
    let mut state = ChainState::new(model.new_state(2000), 7);
    run(&model, &HeatBath, beta, &mut state, 100, Par::Seq, ())?;
    let mut e = vec![0.0; 2000];
    model.energies(&state.chains, beta, &mut e, Par::Seq);
    let sampled = e.iter().sum::<f64>() / e.len() as f64;
    // ANCHOR_END: run

    // Exact mean energy by enumerating the 2^10 configurations.
    let (mut z, mut ez) = (0.0, 0.0);
    let mut s = vec![0.0; model.n];
    for k in 0..1u32 << model.n {
        for (i, si) in s.iter_mut().enumerate() {
            *si = if k >> i & 1 == 1 { 1.0 } else { -1.0 };
        }
        let en = model.energy(&s);
        z += (-beta * en).exp();
        ez += en * (-beta * en).exp();
    }
    println!(
        "1D Ising chain, n = {}, J = {}, h = {}",
        model.n, model.coupling, model.field
    );
    println!(
        "exact <E> = {:.4}, heat bath (2000 chains x 100 sweeps) <E> = {sampled:.4}",
        ez / z
    );
    Ok(())
}

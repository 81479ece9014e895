//! The model of the book's "Extending" part: a periodic 1D Ising chain
//! \\(E(s) = -J \sum_i s_i s_{i+1} - h \sum_i s_i\\), listed for the exact tests, with a spin-flip
//! `LocalUpdate` and a heat-bath kernel written by the user. A module, not an example: the
//! examples `custom_model` and `custom_cli` and the generic tests of the test kit
//! (`tests/testkit.rs`) all use this one definition.

// ANCHOR: model
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::rand::Rng;

/// A periodic chain of `n` spins; a batch of chains is an `n x B` matrix of +-1 values.
#[derive(Clone)]
pub struct IsingChain {
    pub n: usize,
    pub coupling: f64,
    pub field: f64,
}

impl IsingChain {
    pub fn energy(&self, s: &[f64]) -> f64 {
        let n = self.n;
        (0..n)
            .map(|i| -self.coupling * s[i] * s[(i + 1) % n] - self.field * s[i])
            .sum()
    }

    /// The field felt by spin `i`: \\(J (s_{i-1} + s_{i+1}) + h\\).
    pub fn local_field(&self, s: &[f64], i: usize) -> f64 {
        let n = self.n;
        self.coupling * (s[(i + n - 1) % n] + s[(i + 1) % n]) + self.field
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

/// What parallel tempering may keep between an exchange's energies and the next sweep (an
/// RBM keeps its product W^T v): nothing here, so the defaults are the whole impl.
impl ProductCache for IsingChain {}
// ANCHOR_END: model

// ANCHOR: enumerable
/// State k lists the spins by the bits of k: bit i set means s_i = +1.
impl Enumerable for IsingChain {
    fn n_states(&self) -> usize {
        1 << self.n
    }

    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        for (i, s) in x.column_mut(chain).iter_mut().enumerate() {
            *s = if (k >> i) & 1 == 1 { 1.0 } else { -1.0 };
        }
    }

    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        let col = x.column(chain);
        (0..self.n).filter(|&i| col[i] > 0.0).map(|i| 1 << i).sum()
    }
}

// Small enough to list: exact log Z and exact draws come with the listing.
exact_by_enumeration!(IsingChain);
// ANCHOR_END: enumerable

// ANCHOR: local
/// A spin flip and the energy change it causes: all the library's single-site Metropolis
/// kernel needs.
impl LocalUpdate for IsingChain {
    fn n_sites(&self) -> usize {
        self.n
    }

    fn propose<R: Rng>(&self, s: &[f64], i: usize, _rng: &mut R) -> f64 {
        -s[i]
    }

    fn energy_change(&self, s: &[f64], i: usize, value: f64, beta: f64) -> f64 {
        -beta * (value - s[i]) * self.local_field(s, i)
    }
}

/// The values of a site: all the library's single-site heat bath needs besides the energy
/// change.
impl FiniteAlphabet for IsingChain {
    fn alphabet(&self, _site: usize) -> &[f64] {
        &[-1.0, 1.0]
    }
}
// ANCHOR_END: local

// ANCHOR: kernel
/// One heat-bath sweep: each spin in turn is drawn from its exact conditional law
/// p(s_i = +1 | rest) = sigmoid(2 beta_eff h_i), h_i the local field. `scale` multiplies beta
/// in that law: 1 is the correct kernel, anything else a deliberately broken one.
pub struct HeatBath {
    pub scale: f64,
}

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
        // Chain j consumes only rngs[j]: reproducible whatever the thread count.
        for (mut col, rng) in x.column_iter_mut().zip(rngs.iter_mut()) {
            for i in 0..m.n {
                let h = m.local_field(col.as_slice(), i);
                let p_up = 1.0 / (1.0 + (-2.0 * self.scale * beta * h).exp());
                col[i] = if f64::uniform(rng) < p_up { 1.0 } else { -1.0 };
            }
        }
    }
}
// ANCHOR_END: kernel

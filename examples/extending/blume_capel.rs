//! A model whose sites take three values: the periodic spin-1 (Blume–Capel) chain
//! \\(E(s) = -J \sum_i s_i s_{i+1} + D \sum_i s_i^2 - h \sum_i s_i\\), \\(s_i \in \{-1, 0, 1\}\\),
//! listed with `SiteProduct`, made tractable by `exact_by_enumeration!` and sampled by the
//! library's `SingleSiteHeatBath`. A module, not an example: the book's "Kernels" page and the
//! exact tests of the heat bath (`tests/heat_bath.rs`) share this one definition.

use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::rand::Rng;

// ANCHOR: model
/// A periodic chain of spin-1 sites; a batch of chains is an `n x B` matrix of values in
/// {-1, 0, 1}. `scale` multiplies the energy change its local updates see: 1 is the model,
/// anything else a deliberately broken one (its updates target another law than its energy).
pub struct BlumeCapel {
    pub sites: SiteProduct<f64>,
    pub coupling: f64,
    pub anisotropy: f64,
    pub field: f64,
    pub scale: f64,
}

impl BlumeCapel {
    /// `n` sites.
    pub fn new(n: usize, coupling: f64, anisotropy: f64, field: f64) -> Self {
        Self {
            sites: SiteProduct::uniform(&[-1.0, 0.0, 1.0], n),
            coupling,
            anisotropy,
            field,
            scale: 1.0,
        }
    }

    pub fn n(&self) -> usize {
        self.sites.n_sites()
    }

    pub fn energy(&self, s: &[f64]) -> f64 {
        let n = self.n();
        (0..n)
            .map(|i| {
                -self.coupling * s[i] * s[(i + 1) % n] + self.anisotropy * s[i] * s[i]
                    - self.field * s[i]
            })
            .sum()
    }
}

impl EnergyModel for BlumeCapel {
    type Scalar = f64;
    type State = DMatrix<f64>;

    fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], _par: Par) {
        for (o, col) in out.iter_mut().zip(x.column_iter()) {
            *o = beta * self.energy(col.as_slice());
        }
    }

    fn new_state(&self, n_chains: usize) -> DMatrix<f64> {
        DMatrix::zeros(self.n(), n_chains)
    }
}
// ANCHOR_END: model

// ANCHOR: listing
/// The 3^n configurations, numbered by `SiteProduct` (site 0 the fastest digit).
impl Enumerable for BlumeCapel {
    fn n_states(&self) -> usize {
        self.sites.n_states()
    }

    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        self.sites.write(k, x.column_mut(chain).as_mut_slice());
    }

    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        self.sites.index(x.column(chain).as_slice())
    }
}

// Exact log Z and exact draws by listing: `Tractable`.
exact_by_enumeration!(BlumeCapel);
// ANCHOR_END: listing

// ANCHOR: local
impl LocalUpdate for BlumeCapel {
    fn n_sites(&self) -> usize {
        self.n()
    }

    /// One of the two other values, uniformly: a symmetric proposal (for Metropolis).
    fn propose<R: Rng>(&self, s: &[f64], i: usize, rng: &mut R) -> f64 {
        let k = self.sites.alphabet(i).iter().position(|&v| v == s[i]);
        let shift = 1 + rng.random_range(0..2);
        self.sites.alphabet(i)[(k.unwrap_or(0) + shift) % 3]
    }

    fn energy_change(&self, s: &[f64], i: usize, value: f64, beta: f64) -> f64 {
        let n = self.n();
        let neighbours = s[(i + n - 1) % n] + s[(i + 1) % n];
        let d = value - s[i];
        let delta = -self.coupling * d * neighbours
            + self.anisotropy * (value * value - s[i] * s[i])
            - self.field * d;
        self.scale * beta * delta
    }
}

/// The heat bath needs the values of each site besides the energy change.
impl FiniteAlphabet for BlumeCapel {
    fn alphabet(&self, site: usize) -> &[f64] {
        self.sites.alphabet(site)
    }
}
// ANCHOR_END: local

use crate::MetropolisInfo;
use ebm_core::{EnergyModel, Kernel, Par, Scalar, for_each_chain_chunk};
use nalgebra::DMatrix;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// What [`SingleSiteMetropolis`] needs of a model whose chains are columns of values (one
/// column per chain, one value per site): a symmetric proposal for one site and the change of
/// tempered energy it would cause.
pub trait LocalUpdate: EnergyModel<State = DMatrix<<Self as EnergyModel>::Scalar>> {
    /// Number of sites of a chain (the sites are `0..n_sites()`, the first rows of a column).
    fn n_sites(&self) -> usize;

    /// A proposed new value for `site` of configuration `x` (one chain). The proposal must be
    /// symmetric, \\(q(x \to x') = q(x' \to x)\\), e.g. a spin flip or a uniform choice among
    /// the other states of a site.
    fn propose<R: Rng>(&self, x: &[Self::Scalar], site: usize, rng: &mut R) -> Self::Scalar;

    /// \\(E_\beta(x') - E_\beta(x)\\), where \\(x'\\) is `x` with `site` set to `value`; it
    /// must agree with [`EnergyModel::energies`] (the exact tests check the law that function
    /// defines).
    fn energy_change(&self, x: &[Self::Scalar], site: usize, value: Self::Scalar, beta: f64)
    -> f64;
}

/// The order in which [`SingleSiteMetropolis`] visits sites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scan {
    /// Sites `0, 1, …, n - 1` in turn: each update is reversible, the sweep only invariant.
    #[default]
    Systematic,
    /// `n` sites drawn uniformly at random: the sweep is reversible.
    Random,
}

/// Single-site Metropolis for any [`LocalUpdate`] model: at each visited site, propose a new
/// value \\(x_i'\\) and accept it with probability \\(\min(1, e^{-\Delta E_\beta})\\), where
/// \\(\Delta E_\beta = E_\beta(x') - E_\beta(x)\\) (Metropolis et al., 1953). With a symmetric
/// proposal each update satisfies detailed balance with respect to
/// \\(p_\beta \propto e^{-E_\beta}\\), so a sweep leaves it invariant.
///
/// Chain `j` consumes only `rngs[j]`; chains run in parallel in chunks whose boundaries do not
/// depend on the thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SingleSiteMetropolis {
    /// Sweeps (of `n_sites` updates) per step.
    pub sweeps: usize,
    /// Site order.
    pub scan: Scan,
}

impl SingleSiteMetropolis {
    /// `sweeps` systematic sweeps per step.
    pub fn new(sweeps: usize) -> Self {
        Self {
            sweeps,
            scan: Scan::Systematic,
        }
    }

    /// The same kernel with another site order.
    pub fn with_scan(self, scan: Scan) -> Self {
        Self { scan, ..self }
    }
}

impl<M: LocalUpdate> Kernel<M> for SingleSiteMetropolis {
    type Info = MetropolisInfo;

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut DMatrix<M::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> MetropolisInfo {
        let (proposals, accepted) = site_updates(
            model,
            self.sweeps,
            self.scan,
            x,
            rngs,
            par,
            |col, site, rng| {
                let value = model.propose(col, site, rng);
                let delta = model.energy_change(col, site, value, beta);
                let accept = delta <= 0.0 || f64::uniform(rng) < (-delta).exp();
                accept.then_some(value)
            },
        );
        MetropolisInfo {
            proposals,
            accepted,
        }
    }
}

/// Runs `sweeps` sweeps of single-site updates over every chain of `x` (a column per chain,
/// sites visited in the order of `scan`): `update(chain, site, rng)` returns the new value of
/// the site, or `None` to leave it. Chain `j` consumes only `rngs[j]`, in chunks whose
/// boundaries do not depend on the thread count. Returns the updates made and the number that
/// set a value (`Some`).
///
/// # Panics
/// If a chain holds fewer values than the model has sites.
pub(crate) fn site_updates<M: LocalUpdate, R: Rng + Send>(
    model: &M,
    sweeps: usize,
    scan: Scan,
    x: &mut DMatrix<M::Scalar>,
    rngs: &mut [R],
    par: Par,
    update: impl Fn(&[M::Scalar], usize, &mut R) -> Option<M::Scalar> + Sync,
) -> (u64, u64) {
    let rows = x.nrows();
    let n = model.n_sites();
    assert!(
        n <= rows,
        "single-site updates: {n} sites, chains of {rows} values"
    );
    let set = AtomicU64::new(0);
    for_each_chain_chunk(par, rows, x.as_mut_slice(), rngs, |_, chunk, r| {
        let mut k_set = 0u64;
        for (col, rng) in chunk.chunks_mut(rows.max(1)).zip(r.iter_mut()) {
            for k in 0..sweeps * n {
                let site = match scan {
                    Scan::Systematic => k % n,
                    Scan::Random => rng.random_range(0..n),
                };
                if let Some(value) = update(col, site, rng) {
                    col[site] = value;
                    k_set += 1;
                }
            }
        }
        set.fetch_add(k_set, Ordering::Relaxed);
    });
    ((sweeps * n * x.ncols()) as u64, set.into_inner())
}

/// Spin flips of the Curie–Weiss model: flipping \\(v_i\\) changes the magnetisation sum
/// \\(M\\) by \\(-2 v_i\\), so \\(\Delta E = -\frac{J}{2N}[(M - 2v_i)^2 - M^2] + 2 h v_i\\).
impl LocalUpdate for ebm_models::CurieWeiss {
    fn n_sites(&self) -> usize {
        self.n()
    }

    fn propose<R: Rng>(&self, x: &[f64], site: usize, _rng: &mut R) -> f64 {
        -x[site]
    }

    fn energy_change(&self, x: &[f64], site: usize, value: f64, beta: f64) -> f64 {
        let m: f64 = x[..self.n()].iter().sum();
        let m_new = m + value - x[site];
        let j = self.coupling() / (2.0 * self.n() as f64);
        beta * (-j * (m_new * m_new - m * m) - self.field() * (m_new - m))
    }
}

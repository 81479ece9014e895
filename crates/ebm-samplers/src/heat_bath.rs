//! Single-site heat bath for models whose sites take values in a finite alphabet.

use crate::single_site::site_updates;
use crate::{LocalUpdate, Scan};
use ebm_core::{Kernel, Par, Scalar};
use nalgebra::DMatrix;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// What [`SingleSiteHeatBath`] needs beyond [`LocalUpdate`]: the finite set of values each
/// site takes (spins \\(\pm 1\\), the three states of a spin-1 site, the colours of a Potts
/// site, ...).
pub trait FiniteAlphabet: LocalUpdate {
    /// The values `site` can take: at least one, without repetition, and including the value
    /// every chain holds at that site.
    fn alphabet(&self, site: usize) -> &[Self::Scalar];
}

/// What a heat-bath step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeatBathInfo {
    /// Site updates made (chains x sweeps x sites).
    pub updates: u64,
    /// Updates that drew a value other than the one the site held.
    pub changed: u64,
}

impl HeatBathInfo {
    /// Fraction of updates that changed the site's value (0 when none were made).
    pub fn change_rate(&self) -> f64 {
        if self.updates == 0 {
            0.0
        } else {
            self.changed as f64 / self.updates as f64
        }
    }
}

/// Single-site heat bath (Gibbs sampling one site at a time) for any [`FiniteAlphabet`]
/// model: each visited site \\(i\\) is redrawn from its exact conditional law given the
/// others,
/// \\[ p_\beta(x_i = a \mid x_{-i}) = \frac{e^{-\Delta E_\beta(a)}}{\sum_{b} e^{-\Delta E_\beta(b)}}, \\]
/// with \\(\Delta E_\beta(a) = E_\beta(x_{i \to a}) - E_\beta(x)\\) from
/// [`LocalUpdate::energy_change`] and \\(a, b\\) over [`FiniteAlphabet::alphabet`]. Each update
/// satisfies detailed balance with respect to \\(p_\beta \propto e^{-E_\beta}\\); a
/// systematic sweep ([`Scan::Systematic`]) is invariant, a random one ([`Scan::Random`])
/// reversible. Unlike [`crate::SingleSiteMetropolis`], it never proposes the value a site
/// already has in vain, and does not use [`LocalUpdate::propose`].
///
/// The value is drawn in one pass over the alphabet, without a buffer: value \\(a_k\\)
/// replaces the value drawn so far with probability \\(w_k / \sum_{l \le k} w_l\\)
/// (\\(w = e^{-\Delta E_\beta}\\), summed in log space), which leaves value \\(a\\) drawn with
/// probability \\(w_a / \sum_b w_b\\). It costs one uniform number per value of the alphabet.
///
/// Chain `j` consumes only `rngs[j]`; chains run in parallel in chunks whose boundaries do not
/// depend on the thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SingleSiteHeatBath {
    /// Sweeps (of `n_sites` updates) per step.
    pub sweeps: usize,
    /// Site order.
    pub scan: Scan,
}

impl SingleSiteHeatBath {
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

/// Draws one value of `site` of chain `col` from its conditional law (see
/// [`SingleSiteHeatBath`]); returns it.
fn draw<M: FiniteAlphabet, R: Rng>(
    model: &M,
    col: &[M::Scalar],
    site: usize,
    beta: f64,
    rng: &mut R,
) -> M::Scalar {
    let alphabet = model.alphabet(site);
    let mut chosen = col[site];
    let mut log_total = f64::NEG_INFINITY;
    for &value in alphabet {
        let log_weight = -model.energy_change(col, site, value, beta);
        if log_weight == f64::NEG_INFINITY {
            continue;
        }
        log_total = ebm_core::numerics::log_add_exp(log_total, log_weight);
        if f64::uniform(rng) < (log_weight - log_total).exp() {
            chosen = value;
        }
    }
    chosen
}

impl<M: FiniteAlphabet> Kernel<M> for SingleSiteHeatBath {
    type Info = HeatBathInfo;

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut DMatrix<M::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> HeatBathInfo {
        let (updates, changed) = site_updates(
            model,
            self.sweeps,
            self.scan,
            x,
            rngs,
            par,
            |col, site, rng| {
                let value = draw(model, col, site, beta, rng);
                (value != col[site]).then_some(value)
            },
        );
        HeatBathInfo { updates, changed }
    }
}

/// The spins of the Curie–Weiss model take the values \\(\pm 1\\).
impl FiniteAlphabet for ebm_models::CurieWeiss {
    fn alphabet(&self, _site: usize) -> &[f64] {
        &[-1.0, 1.0]
    }
}

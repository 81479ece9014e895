use ebm_core::{ConditionalSampler, Kernel, Par};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Alternating Gibbs sampling: each sweep draws \\(h \sim p_\beta(h \mid v)\\) and then
/// \\(v \sim p_\beta(v \mid h)\\) for every chain.
///
/// Each half-sweep is exact block sampling, so a sweep leaves the tempered joint law
/// \\(p_\beta(v, h)\\) and its visible marginal \\(p_\beta(v)\\) invariant; the induced chain on
/// \\(v\\) is reversible with respect to \\(p_\beta(v)\\). After a sweep from an equilibrium
/// \\(v\\), the pair \\((v, h)\\) held in the state is a draw from the joint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gibbs {
    /// Number of sweeps per step (k of PCD-k).
    pub sweeps: usize,
}

impl Default for Gibbs {
    fn default() -> Self {
        Self { sweeps: 1 }
    }
}

impl Gibbs {
    /// A kernel doing `sweeps` sweeps per step.
    pub fn new(sweeps: usize) -> Self {
        Self { sweeps }
    }
}

/// What a Gibbs step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GibbsInfo {
    /// Sweeps applied to each chain (the cost in AGS steps).
    pub sweeps: usize,
}

// ANCHOR: kernel
impl<M: ConditionalSampler> Kernel<M> for Gibbs {
    type Info = GibbsInfo;

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> GibbsInfo {
        for _ in 0..self.sweeps {
            model.sample_hidden(x, beta, rngs, par);
            model.sample_visible(x, beta, rngs, par);
        }
        GibbsInfo {
            sweeps: self.sweeps,
        }
    }

    fn begins_with_hidden_draw(&self) -> bool {
        self.sweeps > 0
    }

    /// The visible half of the first sweep, then the remaining sweeps.
    fn step_after_hidden<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> GibbsInfo {
        if self.sweeps == 0 {
            return self.step(model, beta, x, rngs, par);
        }
        model.sample_visible(x, beta, rngs, par);
        Gibbs::new(self.sweeps - 1).step(model, beta, x, rngs, par);
        GibbsInfo {
            sweeps: self.sweeps,
        }
    }
}
// ANCHOR_END: kernel

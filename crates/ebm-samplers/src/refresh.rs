use ebm_core::{ExactSampling, Kernel, Par};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Replaces every chain by an independent exact draw from \\(p_\beta\\) of a model with
/// [`ExactSampling`] (it needs no exact \\(\log Z\\)): trivially invariant. Used to refresh the reference rung of a ladder, and as the
/// "perfect explorer" under which the round-trip theory of tempering is exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactRefresh;

impl<M: ExactSampling> Kernel<M> for ExactRefresh {
    type Info = ();

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) {
        model.sample_exact(x, beta, rngs, par);
    }
}

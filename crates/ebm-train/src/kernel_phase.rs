//! Persistent chains moved by any kernel: the negative phase for samplers other than
//! alternating Gibbs sampling, e.g. the hidden-space moves
//! [`ebm_samplers::LatentGibbs`] (Algorithms 3 and 4 of "Alternating Gibbs sampling in
//! restricted Boltzmann machines: free-energy barriers, analytic models and moves in latent
//! space") alone or alternated with AGS ([`ebm_samplers::Alternate`]).

use crate::negative::{check_chains, check_count, initial_chains};
use crate::{NegativeInfo, NegativePhase, TrainableLayer};
use ebm_core::{ChainState, Kernel, Par, Result};
use ebm_models::{Rbm, RbmChains};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// PCD with an arbitrary kernel: `chains` persistent chains, each moved by `steps` steps of
/// `kernel` at the current parameters before every update, starting (like [`crate::Pcd`]) from
/// one Gibbs sweep of the initial model. With `kernel = Gibbs::new(k)` and `steps = 1` it is
/// [`crate::Pcd`] with `sweeps = k`, bit for bit. Any kernel that leaves the model's law
/// invariant gives a valid persistent negative phase.
///
/// Its [`NegativeInfo`] counts one kernel step as one sweep, since the cost of a step in AGS
/// sweeps depends on the kernel; [`crate::Pcd`], which knows it, reports `k` sweeps per step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PersistentKernel<K> {
    /// The kernel.
    pub kernel: K,
    /// Kernel steps per update.
    pub steps: usize,
    /// Number of persistent chains.
    pub chains: usize,
}

impl<V, H, K> NegativePhase<V, H> for PersistentKernel<K>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
    K: Kernel<Rbm<V, H>> + Sync,
{
    type State = ChainState<RbmChains<V::Scalar>>;

    fn init(&self, model: &Rbm<V, H>, _batch: usize, seed: u64, par: Par) -> Result<Self::State> {
        check_count("PersistentKernel::steps", self.steps)?;
        check_count("PersistentKernel::chains", self.chains)?;
        Ok(initial_chains(model, self.chains, seed, par))
    }

    fn chains_held(&self, _batch: usize) -> usize {
        self.chains
    }

    fn check_state(&self, state: &Self::State, _batch: usize) -> Result<()> {
        check_count("PersistentKernel::steps", self.steps)?;
        check_chains(
            "PersistentKernel chains",
            self.chains,
            &state.chains,
            state.rngs.len(),
        )
    }

    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        _batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        for _ in 0..self.steps {
            self.kernel.step(
                model,
                1.0,
                &mut state.chains,
                state.rngs.as_mut_slice(),
                par,
            );
        }
        state.steps += 1;
        Ok(NegativeInfo {
            sweeps: self.steps as u64,
            chain_sweeps: (self.steps * self.chains) as u64,
            ..NegativeInfo::default()
        })
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar> {
        &state.chains
    }
}

//! The processes of a data-parallel training run, as the trainer sees them
//! ([`crate::Trainer::step_on_shard`]); the crate `ebm-mpi` implements them over MPI and over
//! threads.

use crate::{NegativePhase, Pcd, PersistentKernel, TrainableLayer};
use ebm_core::{ChainState, Error, Kernel, Result, RngStreams, Scalar};
use ebm_models::{Rbm, RbmChains};
use nalgebra::DMatrix;
use std::ops::Range;

/// One process of a data-parallel training run: which columns of a batch it holds, and the
/// two exchanges an update needs.
///
/// Every process must call the exchanges the same number of times, in the same order.
pub trait Shard {
    /// The columns of a batch of `total` chains (or minibatch samples) this process holds:
    /// whole blocks of [`ebm_core::CHAIN_CHUNK`] columns (a block of the batch is never split),
    /// the ranges of the processes tiling `0..total` in process order.
    fn range(&self, total: usize) -> Range<usize>;

    /// `true` on the process that runs checkpoint selection and the online likelihood and
    /// writes the outputs.
    fn is_root(&self) -> bool;

    /// `total` of every process's `local` values joined in process order, computed on the
    /// root process and returned on every process.
    fn reduce(&self, local: &[f64], total: &dyn Fn(&[f64]) -> Vec<f64>) -> Vec<f64>;

    /// Every process's chains joined in process order, returned on the root process (`None`
    /// on the others).
    fn gather_chains<F: Scalar>(&self, local: &RbmChains<F>) -> Option<RbmChains<F>>;
}

/// The one-process run, as a shard of itself (never exchanges anything).
pub(crate) struct Whole;

impl Shard for Whole {
    fn range(&self, total: usize) -> Range<usize> {
        0..total
    }

    fn is_root(&self) -> bool {
        true
    }

    fn reduce(&self, local: &[f64], total: &dyn Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
        total(local)
    }

    fn gather_chains<F: Scalar>(&self, local: &RbmChains<F>) -> Option<RbmChains<F>> {
        Some(local.clone())
    }
}

/// A negative phase whose chains can be divided among the processes of a data-parallel run
/// ([`crate::Trainer::step_on_shard`]): chain `i` keeps its own stream whichever process
/// holds it, so the shards joined in order are the one-process state.
pub trait ShardedPhase<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>>:
    NegativePhase<V, H>
{
    /// The chains `range` of `state`, with their streams: one process's shard.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if this phase cannot be sharded (e.g. a variant of a
    /// phase chosen at run time), [`Error::ShapeMismatch`] if `range` is not in the state.
    fn shard(&self, state: &Self::State, range: Range<usize>) -> Result<Self::State>;

    /// The shards of every process, in process order, joined into the whole run's state.
    ///
    /// # Errors
    /// As [`ShardedPhase::shard`].
    fn join(&self, parts: Vec<Self::State>) -> Result<Self::State>;
}

/// The chains `range` of a batch of persistent chains, with their streams.
///
/// # Errors
/// [`Error::ShapeMismatch`] if `range` extends beyond the chains.
pub fn shard_chain_state<F: Scalar>(
    state: &ChainState<RbmChains<F>>,
    range: Range<usize>,
) -> Result<ChainState<RbmChains<F>>> {
    let n = state.chains.visible.ncols();
    if range.start > range.end || range.end > n || state.rngs.len() != n {
        return Err(Error::ShapeMismatch {
            what: "shard of the chains".into(),
            expected: format!("a range within 0..{n} ({} streams)", state.rngs.len()),
            got: format!("{range:?}"),
        });
    }
    let cols = |x: &DMatrix<F>| x.columns(range.start, range.len()).into_owned();
    Ok(ChainState {
        chains: RbmChains {
            visible: cols(&state.chains.visible),
            hidden: cols(&state.chains.hidden),
        },
        rngs: state.rngs.subset(range),
        steps: state.steps,
    })
}

/// Shards of a batch of persistent chains joined in order ([`shard_chain_state`] undone).
///
/// # Errors
/// [`Error::ShapeMismatch`] for no parts, or parts of other widths or step counts.
pub fn join_chain_states<F: Scalar>(
    parts: Vec<ChainState<RbmChains<F>>>,
) -> Result<ChainState<RbmChains<F>>> {
    let first = parts.first().ok_or_else(|| Error::ShapeMismatch {
        what: "shards of the chains".into(),
        expected: "at least one".into(),
        got: "none".into(),
    })?;
    let (nv, nh, steps) = (
        first.chains.visible.nrows(),
        first.chains.hidden.nrows(),
        first.steps,
    );
    for p in &parts {
        let shape = (p.chains.visible.nrows(), p.chains.hidden.nrows(), p.steps);
        if shape != (nv, nh, steps) {
            return Err(Error::ShapeMismatch {
                what: "shard of the chains (visible, hidden widths, steps)".into(),
                expected: format!("({nv}, {nh}, {steps})"),
                got: format!("{shape:?}"),
            });
        }
    }
    let n = parts.iter().map(|p| p.chains.visible.ncols()).sum();
    let layer = |rows: usize, f: fn(&RbmChains<F>) -> &DMatrix<F>| {
        DMatrix::from_iterator(
            rows,
            n,
            parts.iter().flat_map(|p| f(&p.chains).iter().copied()),
        )
    };
    let chains = RbmChains {
        visible: layer(nv, |c| &c.visible),
        hidden: layer(nh, |c| &c.hidden),
    };
    let rngs: Vec<RngStreams> = parts.iter().map(|p| p.rngs.clone()).collect();
    Ok(ChainState {
        chains,
        rngs: RngStreams::join(first.rngs.seed(), &rngs),
        steps,
    })
}

impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> ShardedPhase<V, H> for Pcd {
    fn shard(&self, state: &Self::State, range: Range<usize>) -> Result<Self::State> {
        shard_chain_state(state, range)
    }

    fn join(&self, parts: Vec<Self::State>) -> Result<Self::State> {
        join_chain_states(parts)
    }
}

impl<V, H, K> ShardedPhase<V, H> for PersistentKernel<K>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
    K: Kernel<Rbm<V, H>> + Sync,
{
    fn shard(&self, state: &Self::State, range: Range<usize>) -> Result<Self::State> {
        shard_chain_state(state, range)
    }

    fn join(&self, parts: Vec<Self::State>) -> Result<Self::State> {
        join_chain_states(parts)
    }
}

//! The processes of a data-parallel training run, as the trainer sees them
//! ([`crate::Trainer::step_on_shard`]); the crate `ebm-mpi` implements them over MPI and over
//! threads.

use crate::negative::block_order_totals;
use crate::{Cd, NegativeInfo, NegativePhase, Pcd, PersistentKernel, Tempered, TrainableLayer};
use ebm_core::{ChainState, Error, Kernel, Par, Result, RngStreams, Scalar};
use ebm_models::{Rbm, RbmChains};
use ebm_samplers::tempering::PtState;
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

    /// [`NegativePhase::sample`] on this process's shard `state` (and its columns `batch` of
    /// the minibatch), every process of the run calling it together: returns the
    /// [`NegativeInfo`] of the whole run, its counts added over the processes through
    /// `shard` in a fixed order. The default, for phases whose info does not depend on the
    /// chains held (e.g. PCD), runs [`NegativePhase::sample`].
    ///
    /// # Errors
    /// As [`NegativePhase::sample`].
    fn sample_on_shard<D: Shard>(
        &self,
        shard: &D,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        let _ = shard;
        self.sample(model, state, batch, par)
    }
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
    Ok(ChainState {
        chains: select_chains(&state.chains, range.clone()),
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
    let chains = concat_chains(&parts.iter().map(|p| &p.chains).collect::<Vec<_>>());
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

/// CD's chains are the minibatch's: a process holds the chains of its columns of the
/// minibatch, and the chain-sweeps are added over the processes.
impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> ShardedPhase<V, H> for Cd {
    fn shard(&self, state: &Self::State, range: Range<usize>) -> Result<Self::State> {
        shard_chain_state(state, range)
    }

    fn join(&self, parts: Vec<Self::State>) -> Result<Self::State> {
        join_chain_states(parts)
    }

    fn sample_on_shard<D: Shard>(
        &self,
        shard: &D,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        let mut info = self.sample(model, state, batch, par)?;
        let sum = |all: &[f64]| vec![all.iter().sum()];
        info.chain_sweeps = shard.reduce(&[info.chain_sweeps as f64], &sum)[0] as u64;
        Ok(info)
    }
}

/// Parallel tempering divided by system (chain `i` of every rung, [`PtState::systems`]):
/// each process runs every rung of its systems, exchanges pair chains of one system, so no
/// chain crosses processes during an update. The model average uses the last rung's chains
/// of every process (added block by block like any chains); the round trips, proposals and
/// acceptance probabilities are added over the processes, the latter per block of
/// [`ebm_core::CHAIN_CHUNK`] systems in block order, as one process adds them.
impl<V: TrainableLayer, H: TrainableLayer<Scalar = V::Scalar>> ShardedPhase<V, H> for Tempered {
    fn shard(&self, state: &Self::State, range: Range<usize>) -> Result<Self::State> {
        state.systems(range, select_chains)
    }

    fn join(&self, parts: Vec<Self::State>) -> Result<Self::State> {
        PtState::join_systems(parts, concat_chains)
    }

    fn sample_on_shard<D: Shard>(
        &self,
        shard: &D,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        _batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        let rounds = self.rounds(model, state, par);
        let pairs = rounds.proposed.len();
        // This process's words: how many follow, the round trips and proposals (integers,
        // exact as f64 far beyond any run), then its blocks' sums in block order.
        let mut local = vec![(1 + pairs + rounds.block_sums.len()) as f64];
        local.push(rounds.round_trips as f64);
        local.extend(rounds.proposed.iter().map(|&p| p as f64));
        local.extend(&rounds.block_sums);
        let add = |all: &[f64]| {
            let (mut counts, mut blocks) = (vec![0.0; 1 + pairs], Vec::new());
            let mut rest = all;
            while let Some((&len, tail)) = rest.split_first() {
                let (part, next) = tail.split_at(len as usize);
                counts.iter_mut().zip(part).for_each(|(c, x)| *c += x);
                blocks.extend_from_slice(&part[1 + pairs..]);
                rest = next;
            }
            counts.extend(block_order_totals(&blocks, pairs));
            counts
        };
        let total = shard.reduce(&local, &add);
        let proposed: Vec<u64> = total[1..=pairs].iter().map(|&p| p as u64).collect();
        Ok(self.info(total[0] as u64, &proposed, &total[1 + pairs..]))
    }
}

/// The chains `range` of a batch.
fn select_chains<F: Scalar>(x: &RbmChains<F>, range: Range<usize>) -> RbmChains<F> {
    let cols = |m: &DMatrix<F>| m.columns(range.start, range.len()).into_owned();
    RbmChains {
        visible: cols(&x.visible),
        hidden: cols(&x.hidden),
    }
}

/// Batches of chains joined in order.
fn concat_chains<F: Scalar>(parts: &[&RbmChains<F>]) -> RbmChains<F> {
    let n = parts.iter().map(|p| p.visible.ncols()).sum();
    let layer = |f: fn(&RbmChains<F>) -> &DMatrix<F>| {
        let rows = parts.first().map_or(0, |p| f(p).nrows());
        DMatrix::from_iterator(rows, n, parts.iter().flat_map(|p| f(p).iter().copied()))
    };
    RbmChains {
        visible: layer(|c| &c.visible),
        hidden: layer(|c| &c.hidden),
    }
}

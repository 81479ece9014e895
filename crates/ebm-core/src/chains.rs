use crate::{RngStreams, Scalar};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// A batch of Markov chains advanced together.
///
/// The convention of the workspace is one column per chain: a batch of `B` configurations of
/// `n` values is an `n x B` column-major matrix, so each chain is a contiguous slice.
pub trait Chains: Clone + Send + Sync {
    /// Number of chains in the batch.
    fn n_chains(&self) -> usize;

    /// Exchanges chain `i` of `self` with chain `i` of `other` (the replica-exchange move).
    ///
    /// # Panics
    /// If `i` is out of range or the two batches differ in shape.
    fn swap_chain(&mut self, other: &mut Self, i: usize);
}

/// Swaps column `i` of two matrices of the same shape.
pub fn swap_columns<F: Scalar>(a: &mut DMatrix<F>, b: &mut DMatrix<F>, i: usize) {
    assert_eq!(a.shape(), b.shape(), "swap_chain: batches differ in shape");
    let rows = a.nrows();
    a.as_mut_slice()[i * rows..(i + 1) * rows]
        .swap_with_slice(&mut b.as_mut_slice()[i * rows..(i + 1) * rows]);
}

impl<F: Scalar> Chains for DMatrix<F> {
    fn n_chains(&self) -> usize {
        self.ncols()
    }

    fn swap_chain(&mut self, other: &mut Self, i: usize) {
        swap_columns(self, other, i);
    }
}

/// Everything a sampling run owns besides the model: the chains, one RNG stream per chain and
/// the number of steps taken.
///
/// This is the value to checkpoint: serialising it and deserialising it later continues the run
/// bit for bit (the RNG streams are part of it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainState<S> {
    /// The chains.
    pub chains: S,
    /// Stream `i` drives chain `i`.
    pub rngs: RngStreams,
    /// Number of kernel steps applied so far.
    pub steps: u64,
}

impl<S: Chains> ChainState<S> {
    /// Bundles chains with fresh streams derived from `seed`.
    pub fn new(chains: S, seed: u64) -> Self {
        let rngs = RngStreams::new(seed, chains.n_chains());
        Self {
            chains,
            rngs,
            steps: 0,
        }
    }
}

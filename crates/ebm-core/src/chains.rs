use crate::{CHAIN_CHUNK, Par, RngStreams, Scalar};
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

    /// Exchanges chain `i` of `self` with chain `i` of `other` wherever `which[i]`: the same
    /// as [`Chains::swap_chain`] for each, which the default calls one after the other; a
    /// batch of matrices overrides it to swap by chunks of chains on the pool
    /// ([`swap_columns_where`]).
    ///
    /// # Panics
    /// If `which` does not have one entry per chain or the two batches differ in shape.
    fn swap_chains_where(&mut self, other: &mut Self, which: &[bool], par: Par) {
        let _ = par;
        assert_eq!(
            which.len(),
            self.n_chains(),
            "swap_chains_where: one flag per chain"
        );
        for (i, _) in which.iter().enumerate().filter(|(_, w)| **w) {
            self.swap_chain(other, i);
        }
    }
}

/// Swaps column `i` of two matrices of the same shape wherever `which[i]`, by chunks of
/// [`CHAIN_CHUNK`] columns on the pool under [`Par::Rayon`].
///
/// # Panics
/// If the matrices differ in shape or `which` does not have one entry per column.
pub fn swap_columns_where<F: Scalar>(
    a: &mut DMatrix<F>,
    b: &mut DMatrix<F>,
    which: &[bool],
    par: Par,
) {
    assert_eq!(a.shape(), b.shape(), "swap_chain: batches differ in shape");
    assert_eq!(
        which.len(),
        a.ncols(),
        "swap_chains_where: one flag per chain"
    );
    let rows = a.nrows();
    if rows == 0 {
        return;
    }
    let step = rows * CHAIN_CHUNK;
    let swap = |(c, (x, y)): (usize, (&mut [F], &mut [F]))| {
        let flags = &which[c * CHAIN_CHUNK..];
        for ((x, y), _) in x
            .chunks_mut(rows)
            .zip(y.chunks_mut(rows))
            .zip(flags)
            .filter(|(_, w)| **w)
        {
            x.swap_with_slice(y);
        }
    };
    let (a, b) = (a.as_mut_slice(), b.as_mut_slice());
    match par {
        Par::Seq => a
            .chunks_mut(step)
            .zip(b.chunks_mut(step))
            .enumerate()
            .for_each(swap),
        Par::Rayon => {
            use rayon::prelude::*;
            a.par_chunks_mut(step)
                .zip(b.par_chunks_mut(step))
                .enumerate()
                .for_each(swap)
        }
    }
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

    fn swap_chains_where(&mut self, other: &mut Self, which: &[bool], par: Par) {
        swap_columns_where(self, other, which, par);
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

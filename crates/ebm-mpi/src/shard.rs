//! Which chains a process runs, and how chain batches are cut, sent and joined.

use std::ops::Range;

use ebm_core::{CHAIN_CHUNK, Chains, Scalar};
use ebm_models::RbmChains;
use nalgebra::DMatrix;

/// The chains `rank` of `ranks` processes runs out of `total`: a run of whole
/// [`CHAIN_CHUNK`] blocks, the blocks dealt as evenly as possible in rank order (the first
/// `blocks % ranks` ranks take one more), so the shards tile `0..total` in order.
///
/// Whole blocks matter: the kernels process chains in blocks of [`CHAIN_CHUNK`] whose
/// boundaries depend only on the chain index, so a shard made of whole blocks performs, for
/// each of its chains, exactly the arithmetic of the unsharded run. Ranks beyond the number
/// of blocks get an empty range.
///
/// # Panics
/// If `ranks == 0` or `rank >= ranks`.
///
/// # Example
/// ```
/// use ebm_mpi::chain_range;
/// // 300 chains = blocks of 128, 128 and 44: two ranks run 0..256 and 256..300.
/// assert_eq!(chain_range(300, 2, 0), 0..256);
/// assert_eq!(chain_range(300, 2, 1), 256..300);
/// ```
pub fn chain_range(total: usize, ranks: usize, rank: usize) -> Range<usize> {
    assert!(rank < ranks, "rank {rank} of {ranks} processes");
    let blocks = total.div_ceil(CHAIN_CHUNK);
    let (per, extra) = (blocks / ranks, blocks % ranks);
    let first = rank * per + rank.min(extra);
    let count = per + usize::from(rank < extra);
    let at = |block: usize| (block * CHAIN_CHUNK).min(total);
    at(first)..at(first + count)
}

/// A batch of chains that can be cut into shards, flattened for a message and joined again.
///
/// Values travel as the bit patterns of `f64` (`u64`), so a round trip is exact for `f32` and
/// `f64` chains alike.
pub trait ShardChains: Chains {
    /// The chains `range` of the batch, in order.
    fn select(&self, range: Range<usize>) -> Self;

    /// Number of values of one chain (words of [`ShardChains::pack`] per chain).
    fn width(&self) -> usize;

    /// Every value of the batch, chain after chain, as `f64` bits.
    fn pack(&self) -> Vec<u64>;

    /// The batch of `n_chains` chains shaped like `like` (same layers, any number of chains)
    /// from values written by [`ShardChains::pack`].
    ///
    /// # Panics
    /// If `bits` does not hold `n_chains` chains of that shape.
    fn unpack(like: &Self, n_chains: usize, bits: &[u64]) -> Self;

    /// The batches one after the other (chain `i` of `parts[1]` follows the last of
    /// `parts[0]`), shaped like `like`.
    fn concat(like: &Self, parts: &[Self]) -> Self;

    /// The values of chains `which` (in that order), as [`ShardChains::pack`] writes a batch
    /// of them.
    fn pack_chains(&self, which: &[usize]) -> Vec<u64>;

    /// Overwrites chains `which` with values written by [`ShardChains::pack_chains`].
    ///
    /// # Panics
    /// If `bits` does not hold `which.len()` chains of this shape.
    fn unpack_chains(&mut self, which: &[usize], bits: &[u64]);
}

impl<F: Scalar> ShardChains for DMatrix<F> {
    fn select(&self, range: Range<usize>) -> Self {
        self.columns(range.start, range.len()).into_owned()
    }

    fn width(&self) -> usize {
        self.nrows()
    }

    fn pack(&self) -> Vec<u64> {
        self.iter().map(|x| x.as_f64().to_bits()).collect()
    }

    fn unpack(like: &Self, n_chains: usize, bits: &[u64]) -> Self {
        let rows = like.nrows();
        assert_eq!(
            bits.len(),
            rows * n_chains,
            "{} values do not hold {n_chains} chains of {rows}",
            bits.len()
        );
        DMatrix::from_iterator(
            rows,
            n_chains,
            bits.iter().map(|&b| F::from_f64(f64::from_bits(b))),
        )
    }

    fn pack_chains(&self, which: &[usize]) -> Vec<u64> {
        which
            .iter()
            .flat_map(|&i| {
                self.column(i)
                    .iter()
                    .map(|x| x.as_f64().to_bits())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn unpack_chains(&mut self, which: &[usize], bits: &[u64]) {
        let rows = self.nrows();
        assert_eq!(
            bits.len(),
            rows * which.len(),
            "values of {} chains",
            which.len()
        );
        for (&i, chain) in which.iter().zip(bits.chunks(rows.max(1))) {
            for (x, &b) in self.column_mut(i).iter_mut().zip(chain) {
                *x = F::from_f64(f64::from_bits(b));
            }
        }
    }

    fn concat(like: &Self, parts: &[Self]) -> Self {
        let n = parts.iter().map(Chains::n_chains).sum();
        DMatrix::from_iterator(
            like.nrows(),
            n,
            parts.iter().flat_map(|p| p.iter().copied()),
        )
    }
}

impl<F: Scalar> ShardChains for RbmChains<F> {
    fn select(&self, range: Range<usize>) -> Self {
        RbmChains {
            visible: self.visible.select(range.clone()),
            hidden: self.hidden.select(range),
        }
    }

    fn width(&self) -> usize {
        self.visible.nrows() + self.hidden.nrows()
    }

    /// The visible values of every chain, then the hidden values of every chain.
    fn pack(&self) -> Vec<u64> {
        let mut bits = self.visible.pack();
        bits.extend(self.hidden.pack());
        bits
    }

    fn unpack(like: &Self, n_chains: usize, bits: &[u64]) -> Self {
        let split = like.visible.nrows() * n_chains;
        assert!(
            bits.len() >= split,
            "{} values do not hold {n_chains} visible chains",
            bits.len()
        );
        RbmChains {
            visible: DMatrix::unpack(&like.visible, n_chains, &bits[..split]),
            hidden: DMatrix::unpack(&like.hidden, n_chains, &bits[split..]),
        }
    }

    /// The visible values of the chains, then their hidden values.
    fn pack_chains(&self, which: &[usize]) -> Vec<u64> {
        let mut bits = self.visible.pack_chains(which);
        bits.extend(self.hidden.pack_chains(which));
        bits
    }

    fn unpack_chains(&mut self, which: &[usize], bits: &[u64]) {
        let split = (self.visible.nrows() * which.len()).min(bits.len());
        self.visible.unpack_chains(which, &bits[..split]);
        self.hidden.unpack_chains(which, &bits[split..]);
    }

    fn concat(like: &Self, parts: &[Self]) -> Self {
        let layer = |f: fn(&Self) -> &DMatrix<F>, like: &DMatrix<F>| {
            let layers: Vec<DMatrix<F>> = parts.iter().map(|p| f(p).clone()).collect();
            DMatrix::concat(like, &layers)
        };
        RbmChains {
            visible: layer(|p| &p.visible, &like.visible),
            hidden: layer(|p| &p.hidden, &like.hidden),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_tile_the_chains_in_whole_blocks() {
        for total in [0, 1, 127, 128, 129, 300, 1000, 2000] {
            for ranks in 1..=5 {
                let mut next = 0;
                for rank in 0..ranks {
                    let r = chain_range(total, ranks, rank);
                    assert_eq!(r.start, next, "total {total}, ranks {ranks}, rank {rank}");
                    assert!(r.start.is_multiple_of(CHAIN_CHUNK) || r.is_empty());
                    assert!(r.end == total || r.end.is_multiple_of(CHAIN_CHUNK));
                    next = r.end;
                }
                assert_eq!(next, total);
            }
        }
        // Balanced: 16 blocks over 3 ranks are 6, 5 and 5 blocks.
        assert_eq!(chain_range(2000, 3, 0), 0..768);
        assert_eq!(chain_range(2000, 3, 1), 768..1408);
        assert_eq!(chain_range(2000, 3, 2), 1408..2000);
    }

    #[test]
    fn batches_round_trip_exactly() {
        let x = RbmChains {
            visible: DMatrix::from_fn(3, 5, |i, j| (i as f32 + 0.1) * (j as f32 - 2.3)),
            hidden: DMatrix::from_fn(2, 5, |i, j| (i * 10 + j) as f32),
        };
        let parts = [x.select(0..2), x.select(2..2), x.select(2..5)];
        assert_eq!(RbmChains::concat(&x, &parts), x);
        assert_eq!(RbmChains::unpack(&x, 5, &x.pack()), x);
        assert_eq!(parts[2].visible.column(0), x.visible.column(2));
        let mut y = RbmChains {
            visible: DMatrix::zeros(3, 5),
            hidden: DMatrix::zeros(2, 5),
        };
        y.unpack_chains(&[4, 1], &x.pack_chains(&[4, 1]));
        assert_eq!(y.visible.column(4), x.visible.column(4));
        assert_eq!(y.hidden.column(1), x.hidden.column(1));
        assert_eq!(y.hidden.column(0).sum(), 0.0);
    }
}

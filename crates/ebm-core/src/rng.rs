use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// The random-number generator of one chain: Xoshiro256++ (fast, 256-bit state, serialisable,
/// with a `jump()` that advances by \\(2^{128}\\) draws to give non-overlapping streams).
pub type ChainRng = Xoshiro256PlusPlus;

/// One independent RNG stream per chain, all derived from one user seed.
///
/// Stream `i` is the master generator `Xoshiro256PlusPlus::seed_from_u64(seed)` advanced by `i`
/// jumps of \\(2^{128}\\) steps, so streams never overlap in practice and stream `i` does not
/// depend on how many streams were created. Streams serialise with serde, so a checkpoint holds
/// the exact position of every chain.
///
/// # Example
/// ```
/// use ebm_core::RngStreams;
/// let a = RngStreams::new(7, 4);
/// let b = RngStreams::new(7, 8);
/// assert_eq!(a.as_slice()[3], b.as_slice()[3]); // stream i does not depend on the count
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RngStreams {
    seed: u64,
    streams: Vec<ChainRng>,
}

impl RngStreams {
    /// Creates `n` streams from `seed`.
    pub fn new(seed: u64, n: usize) -> Self {
        Self::select(seed, 0..n)
    }

    /// The streams of the given indices, in the given order: entry `j` is stream `indices[j]`
    /// of [`RngStreams::new`]`(seed, n)` for any `n` above it. A process that runs only some
    /// chains of a larger run (one shard of the chains across processes) draws exactly what
    /// those chains would draw in the whole run. [`RngStreams::seed`] is `seed`.
    ///
    /// Cost: one jump per index up to the largest (fewer for increasing indices, which are
    /// reached by continuing the jumps).
    ///
    /// # Example
    /// ```
    /// use ebm_core::RngStreams;
    /// let all = RngStreams::new(7, 10);
    /// let some = RngStreams::select(7, [3, 4, 9]);
    /// assert_eq!(some.as_slice()[2], all.as_slice()[9]);
    /// ```
    pub fn select(seed: u64, indices: impl IntoIterator<Item = usize>) -> Self {
        let start = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut master, mut at) = (start.clone(), 0usize);
        let streams = indices
            .into_iter()
            .map(|i| {
                if i < at {
                    (master, at) = (start.clone(), 0);
                }
                while at < i {
                    master.jump();
                    at += 1;
                }
                master.clone()
            })
            .collect();
        Self { seed, streams }
    }

    /// The streams `range`, in their current positions (a shard of a run's streams).
    ///
    /// # Panics
    /// If `range` extends beyond the streams.
    pub fn subset(&self, range: std::ops::Range<usize>) -> Self {
        Self {
            seed: self.seed,
            streams: self.streams[range].to_vec(),
        }
    }

    /// The streams of `parts` one after the other (shards joined in order), with the seed
    /// `seed`.
    pub fn join(seed: u64, parts: &[RngStreams]) -> Self {
        Self {
            seed,
            streams: parts
                .iter()
                .flat_map(|p| p.streams.iter().cloned())
                .collect(),
        }
    }

    /// A single generator for work that is not tied to a chain (e.g. drawing an initial
    /// configuration), derived from the same seed by a `long_jump` (\\(2^{192}\\) steps) so it
    /// never overlaps the chain streams. `purpose` selects one of several such generators.
    pub fn auxiliary(seed: u64, purpose: u64) -> ChainRng {
        let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
        for _ in 0..=purpose {
            g.long_jump();
        }
        g
    }

    /// The seed the streams were derived from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of streams.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// `true` when there are no streams.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// The streams, stream `i` for chain `i`.
    pub fn as_slice(&self) -> &[ChainRng] {
        &self.streams
    }

    /// The streams, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [ChainRng] {
        &mut self.streams
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn streams_are_distinct_and_reproducible() {
        let mut a = RngStreams::new(11, 3);
        let mut b = RngStreams::new(11, 3);
        let xa: Vec<u64> = a.as_mut_slice().iter_mut().map(|r| r.next_u64()).collect();
        let xb: Vec<u64> = b.as_mut_slice().iter_mut().map(|r| r.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa[0], xa[1]);
        assert_ne!(xa[1], xa[2]);
        assert_ne!(RngStreams::new(12, 1), RngStreams::new(11, 1));
    }

    #[test]
    fn selected_streams_are_those_of_the_whole_run() {
        let all = RngStreams::new(21, 12);
        let picks = [0, 5, 6, 11, 2, 2];
        let some = RngStreams::select(21, picks);
        for (j, &i) in picks.iter().enumerate() {
            assert_eq!(
                some.as_slice()[j],
                all.as_slice()[i],
                "entry {j} (stream {i})"
            );
        }
        assert_eq!(some.seed(), 21);
        assert_eq!(RngStreams::select(21, 0..12), all);
        let parts = [all.subset(0..5), all.subset(5..5), all.subset(5..12)];
        assert_eq!(RngStreams::join(21, &parts), all);
        // Negative control: another seed gives other streams.
        assert_ne!(RngStreams::select(22, [5]).as_slice()[0], all.as_slice()[5]);
    }

    #[test]
    fn auxiliary_generators_differ_from_chain_streams() {
        let s = RngStreams::new(5, 2);
        let mut aux0 = RngStreams::auxiliary(5, 0);
        let mut aux1 = RngStreams::auxiliary(5, 1);
        let mut c0 = s.as_slice()[0].clone();
        let v = c0.next_u64();
        assert_ne!(aux0.next_u64(), v);
        assert_ne!(aux1.next_u64(), v);
    }

    #[test]
    fn streams_serialise_exactly() {
        let mut s = RngStreams::new(3, 2);
        s.as_mut_slice()[1].next_u64();
        let json = serde_json::to_string(&s).unwrap();
        let mut t: RngStreams = serde_json::from_str(&json).unwrap();
        assert_eq!(s, t);
        assert_eq!(
            s.as_mut_slice()[1].next_u64(),
            t.as_mut_slice()[1].next_u64()
        );
    }
}

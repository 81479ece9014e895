use rand::rand_core::impls::fill_bytes_via_next;
use rand::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// The random-number generator of one chain: Xoshiro256++ (Blackman and Vigna, *Scrambled
/// linear pseudorandom number generators*, 2021), with a 256-bit state, serialisable, and a
/// [`ChainRng::jump`] that advances by \\(2^{128}\\) draws to give non-overlapping streams.
///
/// The same generator as `rand_xoshiro::Xoshiro256PlusPlus`, output for output (seeding,
/// jumps, `next_u32` as the top half of `next_u64`, `fill_bytes`) and in its serde form (a
/// struct `Xoshiro256PlusPlus` with the field `s`, so checkpoints read either way); tested
/// against that crate. It is this crate's own type so that the sampling passes can load the
/// states of several chains into the lanes of one vector register
/// ([`crate::Scalar::sample_logistic_columns`]) and advance each chain's stream exactly as
/// the scalar generator does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename = "Xoshiro256PlusPlus")]
pub struct ChainRng {
    pub(crate) s: [u64; 4],
}

impl ChainRng {
    /// The generator's 256-bit state as four words: what [`ChainRng::from_words`] restores,
    /// exactly (the field `s` of the serde form).
    pub fn words(&self) -> [u64; 4] {
        self.s
    }

    /// The generator whose state is `s`, as written by [`ChainRng::words`] (and as the serde
    /// form reads it; unlike [`SeedableRng::from_seed`], no word is changed).
    pub fn from_words(s: [u64; 4]) -> Self {
        Self { s }
    }

    /// Advances the state by \\(2^{128}\\) outputs.
    pub fn jump(&mut self) {
        self.jump_by([
            0x180e_c6d3_3cfd_0aba,
            0xd5a6_1266_f0c9_392c,
            0xa958_2618_e03f_c9aa,
            0x39ab_dc45_29b1_661c,
        ]);
    }

    /// Advances the state by \\(2^{192}\\) outputs.
    pub fn long_jump(&mut self) {
        self.jump_by([
            0x76e1_5d3e_fefd_cbbf,
            0xc500_4e44_1c52_2fb3,
            0x7771_0069_854e_e241,
            0x3910_9bb0_2acb_e635,
        ]);
    }

    /// Applies the jump polynomial `poly` (bit `b` of word `w` is the coefficient of
    /// \\(T^{64 w + b}\\), \\(T\\) the generator's linear step): the state
    /// \\(\sum_k c_k T^k s\\) over GF(2).
    fn jump_by(&mut self, poly: [u64; 4]) {
        let mut acc = [0u64; 4];
        for word in poly {
            for b in 0..64 {
                if (word >> b) & 1 == 1 {
                    for (a, s) in acc.iter_mut().zip(self.s) {
                        *a ^= s;
                    }
                }
                self.next_u64();
            }
        }
        self.s = acc;
    }
}

impl RngCore for ChainRng {
    /// The top half of [`RngCore::next_u64`] (the low bits of the xoshiro family have weak
    /// linear dependencies).
    #[inline]
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    #[inline(always)]
    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        fill_bytes_via_next(self, dest);
    }
}

impl SeedableRng for ChainRng {
    type Seed = [u8; 32];

    /// The state is the seed's four little-endian words; the all-zero seed (a fixed point of
    /// the generator) is replaced by `seed_from_u64(0)`.
    fn from_seed(seed: [u8; 32]) -> Self {
        if seed.iter().all(|&b| b == 0) {
            return Self::seed_from_u64(0);
        }
        let mut s = [0u64; 4];
        for (w, bytes) in s.iter_mut().zip(seed.chunks_exact(8)) {
            *w = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        }
        Self { s }
    }

    /// The state from four outputs of SplitMix64 seeded with `seed`.
    fn seed_from_u64(seed: u64) -> Self {
        Self::from_rng(&mut rand_xoshiro::SplitMix64::seed_from_u64(seed))
    }
}

/// `rngs` as chain streams when their type is [`ChainRng`], for the passes that advance
/// several chains' streams at once; `None` for any other generator.
pub fn as_chain_rngs<R>(rngs: &mut [R]) -> Option<&mut [ChainRng]> {
    if typeid::of::<R>() == std::any::TypeId::of::<ChainRng>() {
        // SAFETY: `R` is `ChainRng`: their type ids are equal, and `ChainRng` has no lifetime
        // parameter that the lifetime-erased id of `R` could hide.
        Some(unsafe { &mut *(rngs as *mut [R] as *mut [ChainRng]) })
    } else {
        None
    }
}

/// One independent RNG stream per chain, all derived from one user seed.
///
/// Stream `i` is the master generator `ChainRng::seed_from_u64(seed)` advanced by `i`
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
        let start = ChainRng::seed_from_u64(seed);
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
        let mut g = ChainRng::seed_from_u64(seed);
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

    #[test]
    fn words_restore_the_state_exactly_as_the_serde_form() {
        let mut a = ChainRng::seed_from_u64(11);
        a.jump();
        a.next_u64();
        let words = a.words();
        let json: serde_json::Value = serde_json::to_value(&a).unwrap();
        assert_eq!(json["s"], serde_json::json!(words));
        let mut back = ChainRng::from_words(words);
        assert_eq!(back, a);
        assert_eq!(back.next_u64(), a.next_u64());
        // Negative control: any one word changed gives another stream (word 1 or 2 only from
        // the second output on, so four outputs are compared).
        let outputs = |w: [u64; 4]| {
            let mut r = ChainRng::from_words(w);
            [0; 4].map(|_| r.next_u64())
        };
        for k in 0..4 {
            let mut other = words;
            other[k] ^= 1;
            assert_ne!(outputs(other), outputs(words), "word {k}");
        }
    }

    /// The reference: `rand_xoshiro`'s generator, output for output, for several seeds,
    /// after jumps and long jumps, through `next_u32`, `fill_bytes` and `from_seed`, and in
    /// its serde form.
    #[test]
    fn chain_rng_is_rand_xoshiro_s_xoshiro256plusplus() {
        use rand_xoshiro::Xoshiro256PlusPlus as Reference;
        for seed in [0u64, 1, 7, 0xdead_beef, u64::MAX] {
            let (mut a, mut b) = (
                ChainRng::seed_from_u64(seed),
                Reference::seed_from_u64(seed),
            );
            for round in 0..4 {
                for _ in 0..1000 {
                    assert_eq!(a.next_u64(), b.next_u64(), "seed {seed}, round {round}");
                }
                assert_eq!(a.next_u32(), b.next_u32());
                let (mut x, mut y) = ([0u8; 13], [0u8; 13]);
                a.fill_bytes(&mut x);
                b.fill_bytes(&mut y);
                assert_eq!(x, y);
                match round {
                    0 => (a.jump(), b.jump()),
                    1 => (a.long_jump(), b.long_jump()),
                    _ => ((), ()),
                };
            }
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, serde_json::to_string(&b).unwrap());
            let mut back: Reference = serde_json::from_str(&json).unwrap();
            assert_eq!(back.next_u64(), a.next_u64());
        }
        let mut seed = [0u8; 32];
        for (k, s) in seed.iter_mut().enumerate() {
            *s = (k as u8).wrapping_mul(37);
        }
        for seed in [seed, [0; 32]] {
            assert_eq!(
                ChainRng::from_seed(seed).next_u64(),
                Reference::from_seed(seed).next_u64()
            );
        }
        // Negative control: the comparison sees a one-step shift.
        let (mut a, mut b) = (ChainRng::seed_from_u64(3), Reference::seed_from_u64(3));
        a.next_u64();
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn only_chain_rngs_are_seen_as_chain_rngs() {
        let mut chains = vec![ChainRng::seed_from_u64(1); 3];
        assert_eq!(as_chain_rngs(&mut chains).map(|r| r.len()), Some(3));
        let mut others = vec![rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1); 3];
        assert!(as_chain_rngs(&mut others).is_none());
    }
}

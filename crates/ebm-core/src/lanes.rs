//! Four chains' Xoshiro256++ streams advanced together, one per 64-bit lane of an AVX2
//! register, for the logistic draws of [`crate::Scalar::sample_logistic_columns`].
//!
//! Lane `l` holds chain `l`'s exact state and applies the scalar generator's step to it, so
//! each chain's output sequence is the one [`ChainRng`] would give, output for output: the
//! lanes change how fast the outputs come, never which outputs a chain sees. The outputs are
//! turned into uniforms on the grids of [`crate::Scalar::uniform_pair`] (`f32`: the two 24-bit
//! halves of one output for two consecutive units) and [`crate::Scalar::uniform`] (`f64`: the
//! top 53 bits of one output per unit), then transposed so that each chain's uniforms are
//! contiguous for the vectorised comparison pass. Tested against the scalar generator and the
//! scalar pass, with broken variants (a wrong rotation, permuted lanes) as negative controls.

use crate::{ChainRng, Scalar};

/// Chains advanced together.
pub const LANES: usize = 4;

/// Units per block: a block's uniforms for the four chains (4 KB in `f64`) stay in L1 between
/// their generation and the comparison pass that reads them.
pub const LANE_BLOCK: usize = 128;

/// The uniforms of one block, one row per chain.
pub type LaneUniforms<F> = [[F; LANE_BLOCK]; LANES];

/// Replaces, for each chain `c` (column `c` of `xs`, `fields.len()` values), every `x` by
/// \\(z = \text{scale}\,(t + x)\\) and then by a draw of `1` with probability \\(\sigma(z)\\),
/// `lo` otherwise, consuming `rngs[c]` exactly as [`Scalar::sample_logistic_in_place`] does.
/// Groups of four chains run on the lanes of one generator when the processor has AVX2; the
/// other chains (and every chain without AVX2) run the scalar pass.
#[inline(always)]
pub(crate) fn sample_logistic_columns<F: Scalar>(
    xs: &mut [F],
    fields: &[F],
    scale: F,
    lo: F,
    rngs: &mut [ChainRng],
) {
    #[cfg(target_arch = "x86_64")]
    let wide = crate::simd::has_avx512();
    #[cfg(not(target_arch = "x86_64"))]
    let wide = false;
    sample_logistic_columns_with(xs, fields, scale, lo, rngs, wide);
}

/// [`sample_logistic_columns`], its groups of four chains compiled for AVX-512 if `wide`
/// (which the processor must then support), for AVX2 otherwise.
#[inline(always)]
fn sample_logistic_columns_with<F: Scalar>(
    xs: &mut [F],
    fields: &[F],
    scale: F,
    lo: F,
    rngs: &mut [ChainRng],
    wide: bool,
) {
    let width = fields.len();
    assert_eq!(
        xs.len(),
        width * rngs.len(),
        "sample_logistic_columns: {} values do not hold {} chains of {width}",
        xs.len(),
        rngs.len()
    );
    if width == 0 {
        return;
    }
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(not(target_arch = "x86_64"))]
    let _ = wide;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        let groups = xs
            .chunks_exact_mut(LANES * width)
            .zip(rngs.chunks_exact_mut(LANES));
        for (columns, group) in groups {
            // SAFETY: the processor supports the features of the function called (checked
            // just above), the only requirement of a function compiled for them.
            unsafe {
                if wide {
                    avx2::sample_group_avx512(columns, fields, scale, lo, group)
                } else {
                    avx2::sample_group_avx2(columns, fields, scale, lo, group)
                }
            };
            done += LANES;
        }
    }
    for (column, rng) in xs[done * width..]
        .chunks_exact_mut(width)
        .zip(&mut rngs[done..])
    {
        scale_fields(column, fields, scale);
        F::sample_logistic_in_place(column, lo, rng);
    }
}

/// `x = scale * (t + x)` over one column.
#[inline(always)]
fn scale_fields<F: Scalar>(column: &mut [F], fields: &[F], scale: F) {
    for (x, &t) in column.iter_mut().zip(fields) {
        *x = scale * (t + *x);
    }
}

#[cfg(target_arch = "x86_64")]
pub mod avx2 {
    use super::{LANE_BLOCK, LANES, LaneUniforms, scale_fields};
    use crate::{ChainRng, Scalar};
    use std::arch::x86_64::*;

    /// The states of four chains, word `i` of chain `l` in lane `l` of `s[i]`. `ROT` and
    /// `ROT_C` (= 64 - `ROT`) are the output rotation of Xoshiro256++ (23, 41), parameters
    /// only so that the tests can build a broken generator.
    #[derive(Clone, Copy, Debug)]
    pub struct Lanes<const ROT: i32 = 23, const ROT_C: i32 = 41> {
        s: [__m256i; 4],
    }

    /// `x` rotated left by `L` bits in each lane (`R` = 64 - `L`).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn rotl<const L: i32, const R: i32>(x: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_slli_epi64::<L>(x), _mm256_srli_epi64::<R>(x))
    }

    /// The 4 x 4 transpose of 64-bit words: entry `l` of the result holds lane `l` of `a`,
    /// `b`, `c`, `d` in that order.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn transpose(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> [__m256i; 4] {
        let (ab_lo, ab_hi) = (_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
        let (cd_lo, cd_hi) = (_mm256_unpacklo_epi64(c, d), _mm256_unpackhi_epi64(c, d));
        [
            _mm256_permute2x128_si256::<0x20>(ab_lo, cd_lo),
            _mm256_permute2x128_si256::<0x20>(ab_hi, cd_hi),
            _mm256_permute2x128_si256::<0x31>(ab_lo, cd_lo),
            _mm256_permute2x128_si256::<0x31>(ab_hi, cd_hi),
        ]
    }

    impl<const ROT: i32, const ROT_C: i32> Lanes<ROT, ROT_C> {
        /// The states of the four chains `rngs`.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub(crate) fn load(rngs: &[ChainRng]) -> Self {
            assert_eq!(rngs.len(), LANES);
            let mut s = [_mm256_setzero_si256(); 4];
            for (i, v) in s.iter_mut().enumerate() {
                let w = [rngs[0].s[i], rngs[1].s[i], rngs[2].s[i], rngs[3].s[i]];
                // SAFETY: `w` holds the 32 bytes read.
                *v = unsafe { _mm256_loadu_si256(w.as_ptr().cast()) };
            }
            Self { s }
        }

        /// Writes the states back into the four chains `rngs`.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub(crate) fn store(&self, rngs: &mut [ChainRng]) {
            assert_eq!(rngs.len(), LANES);
            for (i, &v) in self.s.iter().enumerate() {
                let mut w = [0u64; LANES];
                // SAFETY: `w` holds the 32 bytes written.
                unsafe { _mm256_storeu_si256(w.as_mut_ptr().cast(), v) };
                for (rng, w) in rngs.iter_mut().zip(w) {
                    rng.s[i] = w;
                }
            }
        }

        /// One step of every lane: the next output of each chain, in its lane.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub(crate) fn next(&mut self) -> __m256i {
            let [s0, s1, s2, s3] = self.s;
            let out = _mm256_add_epi64(rotl::<ROT, ROT_C>(_mm256_add_epi64(s0, s3)), s0);
            let t = _mm256_slli_epi64::<17>(s1);
            let s2 = _mm256_xor_si256(s2, s0);
            let s3 = _mm256_xor_si256(s3, s1);
            let s1 = _mm256_xor_si256(s1, s2);
            let s0 = _mm256_xor_si256(s0, s3);
            let s2 = _mm256_xor_si256(s2, t);
            let s3 = rotl::<45, 19>(s3);
            self.s = [s0, s1, s2, s3];
            out
        }

        /// The next four outputs of every chain, chain `l`'s in entry `l`.
        #[inline]
        #[target_feature(enable = "avx2")]
        fn next4(&mut self) -> [__m256i; 4] {
            let (a, b) = (self.next(), self.next());
            let (c, d) = (self.next(), self.next());
            transpose(a, b, c, d)
        }

        /// The next output of every chain, chain `l`'s in entry `l`.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub(crate) fn next_words(&mut self) -> [u64; LANES] {
            let mut w = [0u64; LANES];
            // SAFETY: `w` holds the 32 bytes written.
            unsafe { _mm256_storeu_si256(w.as_mut_ptr().cast(), self.next()) };
            w
        }

        /// The `f32` uniforms of the next `units` units of every chain (`units / 2` outputs,
        /// rounded up: unit `2k` takes the top 24 bits of output `k`, unit `2k + 1` bits 8 to
        /// 31, as [`Scalar::uniform_pair`]; an odd last unit takes the top 24 bits, as
        /// [`Scalar::uniform`]), chain `l`'s in `out[l][..units]`.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub(crate) fn uniforms_f32(&mut self, units: usize, out: &mut LaneUniforms<f32>) {
            assert!(units <= LANE_BLOCK);
            const SCALE: f32 = 1.0 / (1u32 << 24) as f32;
            let steps = units.div_ceil(2);
            let scale = _mm256_set1_ps(SCALE);
            let mut k = 0;
            while k + 4 <= steps {
                for (row, w) in out.iter_mut().zip(self.next4()) {
                    // 32-bit halves swapped: [hi(k), lo(k), hi(k+1), ...], each >> 8.
                    let bits = _mm256_srli_epi32::<8>(_mm256_shuffle_epi32::<0xB1>(w));
                    let u = _mm256_mul_ps(_mm256_cvtepi32_ps(bits), scale);
                    // SAFETY: the range holds the 8 values written.
                    unsafe { _mm256_storeu_ps(row[2 * k..2 * k + 8].as_mut_ptr(), u) };
                }
                k += 4;
            }
            // An odd last unit also writes out[l][units], one past its end: in bounds, since `units`
            // is odd and at most LANE_BLOCK, and never used.
            for k in k..steps {
                for (row, w) in out.iter_mut().zip(self.next_words()) {
                    row[2 * k] = (w >> 40) as u32 as f32 * SCALE;
                    row[2 * k + 1] = ((w >> 8) as u32 & 0x00FF_FFFF) as f32 * SCALE;
                }
            }
        }

        /// The `f64` uniforms of the next `units` units of every chain (one output per unit,
        /// its top 53 bits, as [`Scalar::uniform`]), chain `l`'s in `out[l][..units]`.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub(crate) fn uniforms_f64(&mut self, units: usize, out: &mut LaneUniforms<f64>) {
            assert!(units <= LANE_BLOCK);
            const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
            let scale = _mm256_set1_pd(SCALE);
            // y = w >> 11 < 2^53 converted exactly as hi * 2^32 + lo: each part by the
            // exponent trick (2^84 + hi * 2^32 and 2^52 + lo are exact doubles), the sum exact
            // because it is an integer below 2^53.
            let (e84, e52) = (_mm256_set1_pd(2f64.powi(84)), _mm256_set1_pd(2f64.powi(52)));
            let (b84, b52) = (_mm256_castpd_si256(e84), _mm256_castpd_si256(e52));
            let low = _mm256_set1_epi64x(0xFFFF_FFFF);
            let mut k = 0;
            while k + 4 <= units {
                for (row, w) in out.iter_mut().zip(self.next4()) {
                    let y = _mm256_srli_epi64::<11>(w);
                    let hi = _mm256_or_si256(_mm256_srli_epi64::<32>(y), b84);
                    let lo = _mm256_or_si256(_mm256_and_si256(y, low), b52);
                    let hi = _mm256_sub_pd(_mm256_castsi256_pd(hi), e84);
                    let lo = _mm256_sub_pd(_mm256_castsi256_pd(lo), e52);
                    let u = _mm256_mul_pd(_mm256_add_pd(hi, lo), scale);
                    // SAFETY: the range holds the 4 values written.
                    unsafe { _mm256_storeu_pd(row[k..k + 4].as_mut_ptr(), u) };
                }
                k += 4;
            }
            for k in k..units {
                for (row, w) in out.iter_mut().zip(self.next_words()) {
                    row[k] = (w >> 11) as f64 * SCALE;
                }
            }
        }
    }

    /// [`super::sample_logistic_columns`] for four chains (`columns`: four columns of
    /// `fields.len()` values), block by block: the uniforms of a block for the four chains,
    /// then each chain's fields and comparisons over the block.
    ///
    /// # Safety
    /// The processor must support AVX2; inline it only into functions compiled for AVX2 (the
    /// two below), so that the comparison pass gets their vector width.
    #[inline(always)]
    unsafe fn sample_group<F: Scalar>(
        columns: &mut [F],
        fields: &[F],
        scale: F,
        lo: F,
        rngs: &mut [ChainRng],
    ) {
        let width = fields.len();
        // SAFETY (every call below): the caller guarantees AVX2.
        let mut lanes = unsafe { Lanes::<23, 41>::load(rngs) };
        let mut u = [[F::zero(); LANE_BLOCK]; LANES];
        for start in (0..width).step_by(LANE_BLOCK) {
            let units = LANE_BLOCK.min(width - start);
            unsafe { F::lane_uniforms(&mut lanes, units, &mut u) };
            let fields = &fields[start..start + units];
            for (l, u) in u.iter().enumerate() {
                let x = &mut columns[l * width + start..l * width + start + units];
                scale_fields(x, fields, scale);
                F::logistic_draws(x, lo, &u[..units]);
            }
        }
        unsafe { lanes.store(rngs) };
    }

    /// `$name`: [`sample_group`] compiled for the target features `$features`, which include
    /// AVX2.
    macro_rules! instance {
        ($(#[$doc:meta])* $name:ident, $features:literal) => {
            $(#[$doc])*
            #[target_feature(enable = $features)]
            pub(super) fn $name<F: Scalar>(
                columns: &mut [F],
                fields: &[F],
                scale: F,
                lo: F,
                rngs: &mut [ChainRng],
            ) {
                // SAFETY: this function runs with AVX2.
                unsafe { sample_group(columns, fields, scale, lo, rngs) }
            }
        };
    }

    instance!(
        /// [`sample_group`] compiled for AVX2.
        sample_group_avx2,
        "avx2"
    );
    instance!(
        /// [`sample_group`] compiled for AVX-512 (the generator keeps its four 256-bit lanes;
        /// the comparison pass runs on 512-bit registers).
        sample_group_avx512,
        "avx2,avx512f,avx512bw,avx512dq,avx512vl"
    );
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::avx2::Lanes;
    use super::*;
    use crate::RngStreams;
    use rand::{Rng, RngCore, SeedableRng};

    fn avx2() -> bool {
        let has = std::arch::is_x86_feature_detected!("avx2");
        if !has {
            eprintln!("no AVX2 on this processor: the lane generator is not exercised");
        }
        has
    }

    /// Lane `l` of a generator loaded from `rngs` gives chain `l`'s outputs, for many steps,
    /// and writes back its state; a wrong rotation or permuted lanes do not.
    #[test]
    fn lanes_give_each_chain_its_own_outputs() {
        if !avx2() {
            return;
        }
        let mut scalar = RngStreams::new(31, LANES).as_slice().to_vec();
        let mut loaded = scalar.clone();
        // SAFETY (for every call below): AVX2 is present.
        let mut lanes = unsafe { Lanes::<23, 41>::load(&loaded) };
        for step in 0..20_000 {
            let w = unsafe { lanes.next_words() };
            for (l, rng) in scalar.iter_mut().enumerate() {
                assert_eq!(w[l], rng.next_u64(), "lane {l}, step {step}");
            }
        }
        unsafe { lanes.store(&mut loaded) };
        assert_eq!(loaded, scalar);
        // Negative controls: the output rotation off by one, the lanes loaded in another order.
        let start = RngStreams::new(31, LANES).as_slice().to_vec();
        let first: Vec<u64> = start.iter().map(|r| r.clone().next_u64()).collect();
        let wrong_rotation = unsafe { Lanes::<22, 42>::load(&start).next_words() };
        let reversed: Vec<ChainRng> = start.iter().rev().cloned().collect();
        let permuted = unsafe { Lanes::<23, 41>::load(&reversed).next_words() };
        for l in 0..LANES {
            assert_ne!(wrong_rotation[l], first[l], "wrong rotation, lane {l}");
            assert_ne!(permuted[l], first[l], "permuted lanes, lane {l}");
        }
    }

    /// The uniforms of a block for any number of units, odd or even: those of
    /// `uniform_pair` / `uniform` from each chain's stream, in the order
    /// `sample_logistic_in_place` consumes them, and the streams then at the same position.
    #[test]
    fn lane_uniforms_are_the_scalar_uniforms() {
        if !avx2() {
            return;
        }
        fn check<F: Scalar>(fill: impl Fn(&mut Lanes, usize, &mut LaneUniforms<F>)) {
            let mut scalar = RngStreams::new(5, LANES).as_slice().to_vec();
            let mut lanes = unsafe { Lanes::load(&scalar) };
            let mut out = [[F::zero(); LANE_BLOCK]; LANES];
            for units in [1, 2, 3, 7, 8, 9, 16, 17, 63, 64, 127, 128, 5, 1] {
                fill(&mut lanes, units, &mut out);
                for (l, rng) in scalar.iter_mut().enumerate() {
                    let mut expected = Vec::with_capacity(units + 1);
                    for _ in 0..units / 2 {
                        let (a, b) = F::uniform_pair(rng);
                        expected.extend([a, b]);
                    }
                    if units % 2 == 1 {
                        expected.push(F::uniform(rng));
                    }
                    let got: Vec<u64> = out[l][..units]
                        .iter()
                        .map(|u| u.as_f64().to_bits())
                        .collect();
                    let want: Vec<u64> = expected.iter().map(|u| u.as_f64().to_bits()).collect();
                    assert_eq!(got, want, "{} units, lane {l}", units);
                }
            }
            let mut back = scalar.clone();
            unsafe { lanes.store(&mut back) };
            assert_eq!(back, scalar);
        }
        check::<f32>(|lanes, units, out| unsafe { lanes.uniforms_f32(units, out) });
        check::<f64>(|lanes, units, out| unsafe { lanes.uniforms_f64(units, out) });
    }

    /// The batch pass equals the scalar pass chain by chain, bit for bit, for chain counts
    /// that are not multiples of four and widths across the block size, with saturating and
    /// NaN fields; a permutation of the streams changes it (negative control).
    #[test]
    fn batch_logistic_draws_are_the_scalar_draws() {
        fn check<F: Scalar>(n_chains: usize, width: usize) {
            let mut g = ChainRng::seed_from_u64(width as u64);
            let fields: Vec<F> = (0..width)
                .map(|_| F::from_f64(g.random_range(-2.0..2.0)))
                .collect();
            let mut xs: Vec<F> = (0..width * n_chains)
                .map(|_| F::from_f64(g.random_range(-6.0..6.0)))
                .collect();
            let len = xs.len();
            for (k, special) in [f64::NAN, 1e30, -1e30, 0.0].into_iter().enumerate() {
                xs[k * 7 % len] = F::from_f64(special);
            }
            let (scale, lo) = (F::from_f64(0.7), F::from_f64(-1.0));
            let rngs = RngStreams::new(9, n_chains);
            let (mut b, mut rb) = (xs.clone(), rngs.as_slice().to_vec());
            for (col, rng) in b.chunks_exact_mut(width).zip(&mut rb) {
                for (x, &t) in col.iter_mut().zip(&fields) {
                    *x = scale * (t + *x);
                }
                F::sample_logistic_in_place(col, lo, rng);
            }
            let bits = |v: &[F]| v.iter().map(|x| x.as_f64().to_bits()).collect::<Vec<_>>();
            // Both instances of the groups' pass (AVX2, and AVX-512 where present).
            for wide in [false, crate::simd::has_avx512()] {
                let (mut a, mut ra) = (xs.clone(), rngs.as_slice().to_vec());
                sample_logistic_columns_with(&mut a, &fields, scale, lo, &mut ra, wide);
                assert_eq!(
                    bits(&a),
                    bits(&b),
                    "{n_chains} chains of {width}, wide {wide}"
                );
                assert_eq!(
                    ra, rb,
                    "{n_chains} x {width}, wide {wide}: stream positions"
                );
            }
            if n_chains >= 2 && width >= 8 {
                let mut rc = rngs.as_slice().to_vec();
                rc.swap(0, 1);
                let mut c = xs.clone();
                F::sample_logistic_columns(&mut c, &fields, scale, lo, &mut rc);
                assert_ne!(bits(&c), bits(&b), "swapped streams, {n_chains} x {width}");
            }
        }
        for n_chains in [1, 3, 4, 5, 8, 11] {
            for width in [1, 2, 7, 8, 33, 127, 128, 129, 300] {
                check::<f32>(n_chains, width);
                check::<f64>(n_chains, width);
            }
        }
    }
}

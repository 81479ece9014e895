//! Bars and Stripes (MacKay; AGS paper).
//!
//! An `n x n` binary image is a *stripe* pattern if every row is constant (all zeros or all
//! ones) and a *bar* pattern if every column is constant. There are `2^n` stripe patterns and
//! `2^n` bar patterns; the all-zero and all-one images are both, so there are exactly
//! `2^(n+1) - 2` distinct patterns (the AGS paper prints `2^(n+1) - 1`; AGS paper).
//! Pixel `(r, c)` is feature `r*n + c`; values are in [`Domain::Binary01`].

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::dataset::{Dataset, Domain};
use crate::error::{Error, Result};

fn check_n(n: usize) -> Result<()> {
    if !(1..=30).contains(&n) {
        return Err(Error::InvalidArgument(format!(
            "Bars and Stripes size n = {n} must be in 1..=30"
        )));
    }
    Ok(())
}

/// The pattern with index `k` in `0 .. 2^(n+1) - 2`: indices `0 .. 2^n` are stripe patterns
/// (row `r` on iff bit `r` of `k` is set), indices `2^n ..` are the bar patterns whose column
/// mask `m` is neither 0 nor all ones (column `c` on iff bit `c` of `m` is set), in increasing
/// order of `m`.
fn pattern(n: usize, k: u64, out: &mut [f64]) {
    let full = 1u64 << n;
    if k < full {
        for r in 0..n {
            let v = (k >> r & 1) as f64;
            out[r * n..(r + 1) * n].iter_mut().for_each(|x| *x = v);
        }
    } else {
        let m = k - full + 1; // 1 ..= 2^n - 2
        for r in 0..n {
            for c in 0..n {
                out[r * n + c] = (m >> c & 1) as f64;
            }
        }
    }
}

/// Number of distinct `n x n` Bars-and-Stripes patterns, `2^(n+1) - 2`.
pub fn bars_and_stripes_count(n: usize) -> u64 {
    (1u64 << (n + 1)) - 2
}

/// Whether an `n x n` binary image (row-major) is a bars-or-stripes pattern.
pub fn is_bars_and_stripes(image: &[f64], n: usize) -> bool {
    let rows_const = (0..n).all(|r| (0..n).all(|c| image[r * n + c] == image[r * n]));
    let cols_const = (0..n).all(|c| (0..n).all(|r| image[r * n + c] == image[c]));
    rows_const || cols_const
}

/// All `2^(n+1) - 2` distinct patterns, one column each, with unit weights.
///
/// # Errors
/// [`Error::InvalidArgument`] unless `1 <= n <= 12` (the set has `2^(n+1) - 2` columns).
pub fn bars_and_stripes_all(n: usize) -> Result<Dataset> {
    if !(1..=12).contains(&n) {
        return Err(Error::InvalidArgument(format!(
            "enumerating Bars and Stripes needs 1 <= n <= 12, got {n}"
        )));
    }
    let count = bars_and_stripes_count(n) as usize;
    let mut data = DMatrix::zeros(n * n, count);
    for k in 0..count {
        pattern(
            n,
            k as u64,
            &mut data.as_mut_slice()[k * n * n..(k + 1) * n * n],
        );
    }
    Dataset::new(data, Domain::Binary01)
}

/// `n_samples` patterns drawn uniformly among the `2^(n+1) - 2` distinct patterns, then each
/// pixel flipped independently with probability `noise`. Labels: the pattern index (see the
/// module documentation for the order), before noise. Deterministic given `seed`.
///
/// (MacKay's original recipe, "choose an orientation, then each line on with probability 1/2",
/// gives the all-0 and all-1 images twice the weight of the others; here every distinct
/// pattern has probability `1/(2^(n+1) - 2)`.)
///
/// # Errors
/// [`Error::InvalidArgument`] unless `1 <= n <= 30` and `0 <= noise <= 1`.
pub fn bars_and_stripes_sample(
    n: usize,
    n_samples: usize,
    noise: f64,
    seed: u64,
) -> Result<Dataset> {
    check_n(n)?;
    if !(0.0..=1.0).contains(&noise) {
        return Err(Error::InvalidArgument(format!(
            "pixel noise {noise} not in [0, 1]"
        )));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let count = bars_and_stripes_count(n);
    let mut data = DMatrix::zeros(n * n, n_samples);
    let mut labels = Vec::with_capacity(n_samples);
    for j in 0..n_samples {
        let k = rng.random_range(0..count);
        labels.push(k as u32);
        let out = &mut data.as_mut_slice()[j * n * n..(j + 1) * n * n];
        pattern(n, k, out);
        if noise > 0.0 {
            for x in out.iter_mut() {
                if rng.random::<f64>() < noise {
                    *x = 1.0 - *x;
                }
            }
        }
    }
    Dataset::new(data, Domain::Binary01)?.with_labels(labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_testkit::chi_square;
    use std::collections::HashSet;

    #[test]
    fn exact_pattern_counts() {
        for n in 1..=6 {
            let d = bars_and_stripes_all(n).unwrap();
            assert_eq!(d.n_samples() as u64, (1u64 << (n + 1)) - 2);
            let distinct: HashSet<Vec<u64>> = (0..d.n_samples())
                .map(|j| d.sample(j).iter().map(|x| x.to_bits()).collect())
                .collect();
            assert_eq!(distinct.len(), d.n_samples(), "n = {n}");
            assert!((0..d.n_samples()).all(|j| is_bars_and_stripes(d.sample(j), n)));
        }
        // independent count for n = 3 by brute force over all 2^9 images
        let brute = (0u32..512)
            .filter(|&b| {
                let img: Vec<f64> = (0..9).map(|i| (b >> i & 1) as f64).collect();
                is_bars_and_stripes(&img, 3)
            })
            .count();
        assert_eq!(brute, 14);
    }

    #[test]
    fn samples_are_uniform_over_patterns() {
        let n = 3;
        let d = bars_and_stripes_sample(n, 14_000, 0.0, 5).unwrap();
        let mut counts = vec![0u64; 14];
        let all = bars_and_stripes_all(n).unwrap();
        for (j, &k) in d.labels().unwrap().iter().enumerate() {
            counts[k as usize] += 1;
            assert_eq!(d.sample(j), all.sample(k as usize));
        }
        let t = chi_square(&counts, &[1.0; 14]);
        assert!(t.p_value > 1e-4, "{t:?}");
    }

    #[test]
    fn pixel_noise_rate() {
        let (n, ns, p) = (4, 4000, 0.05);
        let d = bars_and_stripes_sample(n, ns, p, 6).unwrap();
        let clean = bars_and_stripes_all(n).unwrap();
        let flips: f64 = d
            .labels()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(j, &k)| {
                d.sample(j)
                    .iter()
                    .zip(clean.sample(k as usize))
                    .filter(|(a, b)| a != b)
                    .count() as f64
            })
            .sum();
        let trials = (ns * n * n) as f64;
        let sd = (trials * p * (1.0 - p)).sqrt();
        assert!((flips - trials * p).abs() < 4.0 * sd);
        assert!(bars_and_stripes_sample(4, 1, 1.5, 0).is_err());
        assert!(bars_and_stripes_all(13).is_err());
    }
}

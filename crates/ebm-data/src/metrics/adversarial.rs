//! Nearest-neighbour adversarial accuracy `AA_TS` and privacy loss (PTT paper; Yale et al.
//! 2020).
//!
//! Real set `T` and synthetic set `S` (columns of `n_features x n` matrices). With `d` the squared
//! Euclidean distance (for `{0,1}` data it is the Hamming distance, for `±1` data 4 x Hamming, so
//! nearest neighbours are the Hamming ones):
//!
//! - `d_TS(i) = min_s d(t_i, s)`, `d_TT(i) = min_{i' != i} d(t_i, t_i')` (leave-one-out), and
//!   `d_ST`, `d_SS` likewise for synthetic samples;
//! - `AA_True = (1/n_T) Σ_i 1[d_TS(i) > d_TT(i)]`, `AA_Synth = (1/n_S) Σ_j 1[d_ST(j) > d_SS(j)]`,
//!   `AA_TS = (AA_True + AA_Synth)/2` (Yale convention: the accuracy of the 1-NN
//!   real-vs-synthetic classifier; 0.5 when the sets are indistinguishable, near 0 when the
//!   synthetic samples copy the real ones, near 1 when they are far from them).
//!
//! **Ties** (frequent with binary data) count 1/2 instead of 0: with this choice two i.i.d. sets
//! give `AA ≈ 0.5` also for discrete data (with the strict inequality they would give less).
//!
//! Privacy loss: `AA_TS(test, S) - AA_TS(train, S)`, positive when the synthetic set is closer to
//! the training set than to held-out data (memorisation).

use nalgebra::DMatrix;

use crate::error::{Error, Result};
use crate::linalg::matmul;

const QUERY_BLOCK: usize = 512;

/// For every column of `queries`, the smallest squared distance to a column of `refs`; with
/// `same_set` the set is the same and column `i` skips reference `i` (leave-one-out).
fn nn_sq_distances(queries: &DMatrix<f64>, refs: &DMatrix<f64>, same_set: bool) -> Vec<f64> {
    let qn: Vec<f64> = queries.column_iter().map(|c| c.norm_squared()).collect();
    let rn: Vec<f64> = refs.column_iter().map(|c| c.norm_squared()).collect();
    let mut out = vec![f64::INFINITY; queries.ncols()];
    let mut start = 0;
    while start < queries.ncols() {
        let len = QUERY_BLOCK.min(queries.ncols() - start);
        let q = queries.columns(start, len).into_owned();
        // dots[(r, c)] = refs_r · q_c  (n_ref x len), column c contiguous
        let dots = matmul(refs, true, &q, false);
        for c in 0..len {
            let i = start + c;
            let col = dots.column(c);
            let mut best = f64::INFINITY;
            for (r, &dot) in col.iter().enumerate() {
                if same_set && r == i {
                    continue;
                }
                // clamp tiny negative round-off
                let d = (qn[i] + rn[r] - 2.0 * dot).max(0.0);
                if d < best {
                    best = d;
                }
            }
            out[i] = best;
        }
        start += len;
    }
    out
}

/// `AA_True`, `AA_Synth` and `AA_TS` (module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdversarialAccuracy {
    /// Fraction of real samples whose nearest neighbour is real.
    pub aa_true: f64,
    /// Fraction of synthetic samples whose nearest neighbour is synthetic.
    pub aa_synth: f64,
    /// `(aa_true + aa_synth)/2`.
    pub aa_ts: f64,
}

fn score(cross: &[f64], own: &[f64]) -> f64 {
    let s: f64 = cross
        .iter()
        .zip(own)
        .map(|(c, o)| {
            if c > o {
                1.0
            } else if c == o {
                0.5
            } else {
                0.0
            }
        })
        .sum();
    s / cross.len() as f64
}

/// Nearest-neighbour adversarial accuracy of a real and a synthetic set (columns are samples).
///
/// Cost: `O((n_T + n_S)² N)` through GEMM in blocks of 512 queries.
///
/// # Errors
/// [`Error::Shape`] if the feature counts differ; [`Error::InvalidArgument`] if a set has fewer
/// than 2 samples.
pub fn adversarial_accuracy(
    real: &DMatrix<f64>,
    synthetic: &DMatrix<f64>,
) -> Result<AdversarialAccuracy> {
    if real.nrows() != synthetic.nrows() {
        return Err(Error::Shape(format!(
            "real data has {} features, synthetic {}",
            real.nrows(),
            synthetic.nrows()
        )));
    }
    if real.ncols() < 2 || synthetic.ncols() < 2 {
        return Err(Error::InvalidArgument(
            "AA_TS needs at least 2 real and 2 synthetic samples".into(),
        ));
    }
    let d_ts = nn_sq_distances(real, synthetic, false);
    let d_tt = nn_sq_distances(real, real, true);
    let d_st = nn_sq_distances(synthetic, real, false);
    let d_ss = nn_sq_distances(synthetic, synthetic, true);
    let aa_true = score(&d_ts, &d_tt);
    let aa_synth = score(&d_st, &d_ss);
    Ok(AdversarialAccuracy {
        aa_true,
        aa_synth,
        aa_ts: 0.5 * (aa_true + aa_synth),
    })
}

/// Privacy loss `AA_TS(test, S) - AA_TS(train, S)` (PTT paper).
///
/// # Errors
/// As [`adversarial_accuracy`].
pub fn privacy_loss(
    train: &DMatrix<f64>,
    test: &DMatrix<f64>,
    synthetic: &DMatrix<f64>,
) -> Result<f64> {
    Ok(
        adversarial_accuracy(test, synthetic)?.aa_ts
            - adversarial_accuracy(train, synthetic)?.aa_ts,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn bernoulli(nf: usize, n: usize, p: f64, seed: u64) -> DMatrix<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        DMatrix::from_fn(nf, n, |_, _| f64::from(u8::from(rng.random::<f64>() < p)))
    }

    #[test]
    fn nn_distances_match_brute_force() {
        let a = bernoulli(9, 700, 0.5, 1);
        let b = bernoulli(9, 40, 0.3, 2);
        let fast = nn_sq_distances(&a, &b, false);
        let loo = nn_sq_distances(&a, &a, true);
        for i in [0, 13, 511, 512, 699] {
            let brute = (0..40)
                .map(|j| (a.column(i) - b.column(j)).norm_squared())
                .fold(f64::INFINITY, f64::min);
            assert_eq!(fast[i], brute);
            let brute_loo = (0..700)
                .filter(|&j| j != i)
                .map(|j| (a.column(i) - a.column(j)).norm_squared())
                .fold(f64::INFINITY, f64::min);
            assert_eq!(loo[i], brute_loo);
        }
    }

    #[test]
    fn same_distribution_gives_one_half() {
        // continuous-looking data: no ties
        let n = 1000;
        let real = bernoulli(40, n, 0.3, 3);
        let synth = bernoulli(40, n, 0.3, 4);
        let aa = adversarial_accuracy(&real, &synth).unwrap();
        // each indicator is a Bernoulli(1/2)-like variable: sd of the mean ≈ 0.5/√n ≈ 0.016
        assert!((aa.aa_true - 0.5).abs() < 0.07, "{aa:?}");
        assert!((aa.aa_synth - 0.5).abs() < 0.07, "{aa:?}");
        assert!((aa.aa_ts - 0.5).abs() < 0.05, "{aa:?}");
        // a different distribution is detected
        let far = bernoulli(40, n, 0.6, 5);
        assert!(adversarial_accuracy(&real, &far).unwrap().aa_ts > 0.9);
    }

    #[test]
    fn copies_of_the_training_set() {
        let train = bernoulli(50, 400, 0.5, 6);
        let test = bernoulli(50, 400, 0.5, 7);
        let synth = train.clone();
        let aa_train = adversarial_accuracy(&train, &synth).unwrap();
        // every real sample has its copy at distance 0 < d_TT: AA = 0
        assert_eq!(aa_train.aa_true, 0.0);
        assert_eq!(aa_train.aa_synth, 0.0);
        let loss = privacy_loss(&train, &test, &synth).unwrap();
        assert!(loss > 0.4, "privacy loss {loss}");
        assert!(adversarial_accuracy(&train, &bernoulli(49, 10, 0.5, 0)).is_err());
    }
}

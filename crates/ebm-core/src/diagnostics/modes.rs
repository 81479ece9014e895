//! Mode assignment on principal components and jumps between modes (PTT paper).
//!
//! Projections are `k x n` matrices (one column per sample or chain, as returned by
//! `ebm_data::Pca::project`). A chain trajectory is recorded as `labels_by_time[t][c]`, the mode of
//! chain `c` at recorded time `t`; a *jump* is a change of label between consecutive recorded times.

use nalgebra::DMatrix;

use crate::error::{Error, Result};

/// A rule mapping a projected point `p ∈ R^k` to a mode label.
#[derive(Debug, Clone, PartialEq)]
pub enum ModeClassifier {
    /// Label 1 if `p[component] >= value`, else 0.
    Threshold {
        /// Index of the principal component.
        component: usize,
        /// Threshold.
        value: f64,
    },
    /// Label 1 if `normal·p + offset >= 0`, else 0 (the PTT paper's dashed line in the
    /// (PC1, PC2) plane; PTT paper).
    HalfPlane {
        /// Normal vector (length `<= k`; missing entries count as 0).
        normal: Vec<f64>,
        /// Offset.
        offset: f64,
    },
    /// Label `argmin_a |p - centre_a|²` (ties to the lowest index).
    NearestCentre {
        /// Cluster centres in projection space (each of length `<= k`).
        centres: Vec<Vec<f64>>,
    },
}

impl ModeClassifier {
    /// Number of labels the rule can return.
    pub fn n_modes(&self) -> usize {
        match self {
            ModeClassifier::NearestCentre { centres } => centres.len(),
            _ => 2,
        }
    }

    /// Mode of one projected point.
    ///
    /// # Panics
    /// If the rule refers to a component index `>= p.len()`.
    pub fn assign_one(&self, p: &[f64]) -> usize {
        match self {
            ModeClassifier::Threshold { component, value } => usize::from(p[*component] >= *value),
            ModeClassifier::HalfPlane { normal, offset } => {
                let s: f64 = normal.iter().zip(p).map(|(a, b)| a * b).sum::<f64>() + offset;
                assert!(normal.len() <= p.len(), "normal longer than the projection");
                usize::from(s >= 0.0)
            }
            ModeClassifier::NearestCentre { centres } => {
                let mut best = (0, f64::INFINITY);
                for (a, c) in centres.iter().enumerate() {
                    assert!(c.len() <= p.len(), "centre longer than the projection");
                    let d: f64 = c.iter().zip(p).map(|(x, y)| (x - y) * (x - y)).sum();
                    if d < best.1 {
                        best = (a, d);
                    }
                }
                best.0
            }
        }
    }

    /// Modes of every column of a `k x n` projection matrix.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the rule needs more components than the projection has;
    /// [`Error::InvalidParameter`] for a nearest-centre rule without centres.
    pub fn assign(&self, projections: &DMatrix<f64>) -> Result<Vec<usize>> {
        let need = match self {
            ModeClassifier::Threshold { component, .. } => component + 1,
            ModeClassifier::HalfPlane { normal, .. } => normal.len(),
            ModeClassifier::NearestCentre { centres } => {
                if centres.is_empty() {
                    return Err(Error::InvalidParameter {
                        name: "centres".into(),
                        reason: "a nearest-centre rule needs at least one centre".into(),
                    });
                }
                centres.iter().map(Vec::len).max().unwrap_or(0)
            }
        };
        if need > projections.nrows() {
            return Err(Error::ShapeMismatch {
                what: "projection components needed by the mode rule".into(),
                expected: format!("at least {need}"),
                got: projections.nrows().to_string(),
            });
        }
        Ok(projections
            .column_iter()
            .map(|c| self.assign_one(c.as_slice()))
            .collect())
    }
}

/// Fraction of samples in each mode `0..n_modes` (labels `>= n_modes` are ignored but counted in
/// the denominator).
pub fn mode_fractions(labels: &[usize], n_modes: usize) -> Vec<f64> {
    let mut f = vec![0.0; n_modes];
    for &l in labels {
        if l < n_modes {
            f[l] += 1.0;
        }
    }
    let n = labels.len().max(1) as f64;
    f.iter_mut().for_each(|x| *x /= n);
    f
}

/// Number of label changes between consecutive entries of one chain's label sequence.
pub fn count_jumps(labels: &[usize]) -> usize {
    labels.windows(2).filter(|w| w[0] != w[1]).count()
}

/// Per-chain jump counts and their mean with the standard error of the mean.
#[derive(Debug, Clone, PartialEq)]
pub struct JumpStats {
    /// Jumps of each chain over the whole trajectory.
    pub per_chain: Vec<usize>,
    /// Mean over chains.
    pub mean: f64,
    /// Standard error of the mean (sample standard deviation / √chains; 0 for one chain).
    pub sem: f64,
    /// Mean over chains of the cumulative number of jumps up to each recorded time
    /// (entry 0 is 0): the "jumps vs steps" curve of PTT Fig. 4.
    pub cumulative_mean: Vec<f64>,
}

/// Jump statistics of a trajectory `labels_by_time[t][c]` (time-major: one label vector per
/// recorded time, one entry per chain).
///
/// # Errors
/// [`Error::ShapeMismatch`] if the label vectors have different lengths; [`Error::InvalidParameter`] if
/// there is no recorded time or no chain.
pub fn mode_jumps(labels_by_time: &[Vec<usize>]) -> Result<JumpStats> {
    let n_chains = labels_by_time.first().map_or(0, Vec::len);
    if n_chains == 0 {
        return Err(Error::InvalidParameter {
            name: "labels_by_time".into(),
            reason: "no chain or no recorded time".into(),
        });
    }
    if let Some(t) = labels_by_time.iter().position(|l| l.len() != n_chains) {
        return Err(Error::ShapeMismatch {
            what: format!("chains recorded at time {t}"),
            expected: n_chains.to_string(),
            got: labels_by_time[t].len().to_string(),
        });
    }
    let mut per_chain = vec![0usize; n_chains];
    let mut cumulative_mean = vec![0.0];
    let mut total = 0usize;
    for w in labels_by_time.windows(2) {
        for (c, (a, b)) in w[0].iter().zip(&w[1]).enumerate() {
            if a != b {
                per_chain[c] += 1;
                total += 1;
            }
        }
        cumulative_mean.push(total as f64 / n_chains as f64);
    }
    let mean = total as f64 / n_chains as f64;
    let sem = if n_chains > 1 {
        let var = per_chain
            .iter()
            .map(|&j| (j as f64 - mean).powi(2))
            .sum::<f64>()
            / (n_chains - 1) as f64;
        (var / n_chains as f64).sqrt()
    } else {
        0.0
    };
    Ok(JumpStats {
        per_chain,
        mean,
        sem,
        cumulative_mean,
    })
}

/// Mode weights estimated as time averages over a window of recorded times, with error bars
/// from independent chains, and the checks that say when they cannot be trusted.
///
/// Each chain's weight of mode \\(k\\) is the fraction of its records in the window that are in
/// \\(k\\); the estimate is the mean over chains and its standard error the standard deviation
/// over chains divided by \\(\sqrt{\text{chains}}\\). Because the chains are independent, this error
/// bar is honest whatever the autocorrelation along each chain, **provided** the chains are in
/// equilibrium during the window. Two checks test that:
///
/// - `drift`: the weights over the first and the second half of the window, compared mode by
///   mode in units of their combined standard error; a chain population still relaxing gives a
///   large value (the window started before equilibrium);
/// - `mean_jumps`: mode changes per chain inside the window; chains that never change mode
///   report the mode they started in, not the model's weights, and their spread across chains
///   (hence the error bar) reflects only the starting points.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowedWeights {
    /// First recorded time index of the window (records before it are discarded as burn-in).
    pub first_record: usize,
    /// Number of records in the window.
    pub records: usize,
    /// Time-averaged weight of each mode.
    pub weights: Vec<f64>,
    /// Standard error of each weight over independent chains.
    pub se: Vec<f64>,
    /// Largest \\(|w_k^{(1)} - w_k^{(2)}| / \sqrt{se_1^2 + se_2^2}\\) over modes between the two
    /// halves of the window (0 when both halves agree exactly).
    pub drift: f64,
    /// Mean number of mode changes per chain inside the window.
    pub mean_jumps: f64,
}

impl WindowedWeights {
    /// Drift above this many combined standard errors is reported as not equilibrated.
    pub const DRIFT_LIMIT: f64 = 4.0;
    /// Fewer mode changes per chain than this inside the window are reported as too few to
    /// estimate the weights.
    pub const MIN_JUMPS: f64 = 10.0;

    /// Plain-language warnings when the estimate cannot be trusted (empty when both checks
    /// pass).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.mean_jumps < Self::MIN_JUMPS {
            w.push(format!(
                "only {:.2} mode changes per chain after burn-in (fewer than {}): the mode \
                 weights reflect where the chains started, not the model, and their error bars \
                 cannot be trusted; run longer, or use a tempering sampler",
                self.mean_jumps,
                Self::MIN_JUMPS
            ));
        }
        if self.drift > Self::DRIFT_LIMIT {
            w.push(format!(
                "the mode weights of the two halves after burn-in differ by {:.1} standard \
                 errors (limit {}): the chains had not reached equilibrium; run longer",
                self.drift,
                Self::DRIFT_LIMIT
            ));
        }
        w
    }
}

/// Time-averaged mode weights of a trajectory `labels_by_time[t][c]` (time-major, as
/// [`mode_jumps`]) over the records `first_record..`, with their checks ([`WindowedWeights`]).
/// Labels `>= n_modes` count in no mode.
///
/// # Errors
/// [`Error::ShapeMismatch`] if the label vectors have different lengths; [`Error::InvalidParameter`] if
/// there is no chain, `n_modes` is 0, or the window has fewer than 2 records.
pub fn windowed_mode_weights(
    labels_by_time: &[Vec<usize>],
    first_record: usize,
    n_modes: usize,
) -> Result<WindowedWeights> {
    let window = labels_by_time.get(first_record..).unwrap_or(&[]);
    if window.len() < 2 || n_modes == 0 {
        return Err(Error::InvalidParameter {
            name: "first_record".into(),
            reason: format!(
                "mode weights need at least 2 records after burn-in and at least one mode (got {} \
                 records from record {first_record}, {n_modes} modes)",
                window.len()
            ),
        });
    }
    let jumps = mode_jumps(window)?;
    let n_chains = window[0].len();
    // Per-chain fractions of the records in [from, to) spent in each mode.
    let fractions = |from: usize, to: usize| -> Vec<Vec<f64>> {
        let mut f = vec![vec![0.0; n_modes]; n_chains];
        for labels in &window[from..to] {
            for (c, &l) in labels.iter().enumerate() {
                if l < n_modes {
                    f[c][l] += 1.0;
                }
            }
        }
        let len = (to - from) as f64;
        f.iter_mut().flatten().for_each(|x| *x /= len);
        f
    };
    let mean_se = |f: &[Vec<f64>]| -> (Vec<f64>, Vec<f64>) {
        let n = f.len() as f64;
        (0..n_modes)
            .map(|k| {
                let m = f.iter().map(|c| c[k]).sum::<f64>() / n;
                let var = if f.len() > 1 {
                    f.iter().map(|c| (c[k] - m).powi(2)).sum::<f64>() / (n - 1.0)
                } else {
                    0.0
                };
                (m, (var / n).sqrt())
            })
            .unzip()
    };
    let (weights, se) = mean_se(&fractions(0, window.len()));
    let half = window.len() / 2;
    let (w1, s1) = mean_se(&fractions(0, half));
    let (w2, s2) = mean_se(&fractions(half, window.len()));
    let drift = (0..n_modes)
        .map(|k| {
            let d = (w1[k] - w2[k]).abs();
            let s = (s1[k].powi(2) + s2[k].powi(2)).sqrt();
            if d == 0.0 {
                0.0
            } else if s == 0.0 {
                f64::INFINITY
            } else {
                d / s
            }
        })
        .fold(0.0, f64::max);
    Ok(WindowedWeights {
        first_record,
        records: window.len(),
        weights,
        se,
        drift,
        mean_jumps: jumps.mean,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn classifiers() {
        let p = DMatrix::from_column_slice(2, 4, &[1.0, 0.0, -1.0, 0.0, 0.2, 3.0, -0.5, -3.0]);
        let th = ModeClassifier::Threshold {
            component: 0,
            value: 0.0,
        };
        assert_eq!(th.assign(&p).unwrap(), vec![1, 0, 1, 0]);
        let hp = ModeClassifier::HalfPlane {
            normal: vec![1.0, 1.0],
            offset: 0.0,
        };
        assert_eq!(hp.assign(&p).unwrap(), vec![1, 0, 1, 0]);
        let hp2 = ModeClassifier::HalfPlane {
            normal: vec![0.0, -1.0],
            offset: 1.0,
        };
        assert_eq!(hp2.assign(&p).unwrap(), vec![1, 1, 0, 1]);
        let nc = ModeClassifier::NearestCentre {
            centres: vec![vec![1.0, 0.0], vec![-1.0, 0.0], vec![0.0, 3.0]],
        };
        assert_eq!(nc.assign(&p).unwrap(), vec![0, 1, 2, 1]);
        assert!(
            ModeClassifier::Threshold {
                component: 2,
                value: 0.0
            }
            .assign(&p)
            .is_err()
        );
        assert_eq!(mode_fractions(&[0, 1, 1, 2], 3), vec![0.25, 0.5, 0.25]);
    }

    #[test]
    fn jump_counting() {
        assert_eq!(count_jumps(&[0, 0, 1, 1, 0, 2, 2]), 3);
        assert_eq!(count_jumps(&[]), 0);
        let traj = vec![vec![0, 0], vec![1, 0], vec![1, 0], vec![0, 1]];
        let s = mode_jumps(&traj).unwrap();
        assert_eq!(s.per_chain, vec![2, 1]);
        assert_eq!(s.mean, 1.5);
        assert!((s.sem - 0.5).abs() < 1e-15);
        assert_eq!(s.cumulative_mean, vec![0.0, 0.5, 0.5, 1.5]);
        assert!(mode_jumps(&[vec![0], vec![0, 1]]).is_err());
        assert!(mode_jumps(&[]).is_err());
    }

    #[test]
    fn jumps_of_a_telegraph_process() {
        // each chain switches mode with probability p per step: E[jumps] = p (T - 1)
        let (p, t_len, chains) = (0.02, 2001, 400);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut state = vec![0usize; chains];
        let mut traj = vec![state.clone()];
        for _ in 1..t_len {
            for s in state.iter_mut() {
                if rng.random::<f64>() < p {
                    *s ^= 1;
                }
            }
            traj.push(state.clone());
        }
        let st = mode_jumps(&traj).unwrap();
        let expect = p * (t_len - 1) as f64;
        assert!(
            (st.mean - expect).abs() < 4.0 * st.sem,
            "{} vs {expect}",
            st.mean
        );
        // binomial sd per chain sqrt(40 * 0.98) ≈ 6.26; sem ≈ 0.31
        assert!((st.sem - (expect * (1.0 - p) / chains as f64).sqrt()).abs() < 0.05);
    }

    /// Independent two-state chains at known weights: the estimate covers the truth within its
    /// error bar; a population still relaxing from one mode is flagged by the drift check, and
    /// chains stuck where they started by the jump check.
    #[test]
    fn windowed_weights_cover_the_truth_and_flag_relaxation_and_stuck_chains() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let (chains, records, p) = (400, 200, 0.3);
        // Equilibrium: i.i.d. labels with P(mode 1) = p.
        let labels: Vec<Vec<usize>> = (0..records)
            .map(|_| {
                (0..chains)
                    .map(|_| (rng.random::<f64>() < p) as usize)
                    .collect()
            })
            .collect();
        let w = windowed_mode_weights(&labels, 0, 2).unwrap();
        assert!((w.weights[1] - p).abs() < 4.0 * w.se[1], "{w:?}");
        assert!((w.weights[0] + w.weights[1] - 1.0).abs() < 1e-12);
        assert!(w.drift < WindowedWeights::DRIFT_LIMIT, "{w:?}");
        assert!(w.warnings().is_empty(), "{:?}", w.warnings());
        // Relaxation: P(mode 1) grows from 0 to p along the window.
        let relaxing: Vec<Vec<usize>> = (0..records)
            .map(|t| {
                let q = p * t as f64 / records as f64;
                (0..chains)
                    .map(|_| (rng.random::<f64>() < q) as usize)
                    .collect()
            })
            .collect();
        let r = windowed_mode_weights(&relaxing, 0, 2).unwrap();
        assert!(r.drift > WindowedWeights::DRIFT_LIMIT, "{r:?}");
        assert_eq!(r.warnings().len(), 1);
        // Stuck: every chain keeps its starting mode (30 % start in mode 1).
        let stuck: Vec<Vec<usize>> = (0..records)
            .map(|_| {
                (0..chains)
                    .map(|c| (c * 10 < chains * 3) as usize)
                    .collect()
            })
            .collect();
        let s = windowed_mode_weights(&stuck, 0, 2).unwrap();
        assert_eq!(s.mean_jumps, 0.0);
        assert_eq!(s.drift, 0.0);
        assert!(
            s.warnings()[0].contains("mode changes"),
            "{:?}",
            s.warnings()
        );
        // The window must hold two records.
        assert!(windowed_mode_weights(&labels, records - 1, 2).is_err());
    }
}

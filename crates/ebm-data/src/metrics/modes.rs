//! Mode assignment on principal components and jumps between modes (PTT spec §5.2).
//!
//! Projections are `k x n` matrices (one column per sample or chain, as returned by
//! [`crate::Pca::project`]). A chain trajectory is recorded as `labels_by_time[t][c]`, the mode of
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
    /// (PC1, PC2) plane; PTT spec §5.2).
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
    /// [`Error::Shape`] if the rule needs more components than the projection has;
    /// [`Error::InvalidArgument`] for a nearest-centre rule without centres.
    pub fn assign(&self, projections: &DMatrix<f64>) -> Result<Vec<usize>> {
        let need = match self {
            ModeClassifier::Threshold { component, .. } => component + 1,
            ModeClassifier::HalfPlane { normal, .. } => normal.len(),
            ModeClassifier::NearestCentre { centres } => {
                if centres.is_empty() {
                    return Err(Error::InvalidArgument("no cluster centre".into()));
                }
                centres.iter().map(Vec::len).max().unwrap_or(0)
            }
        };
        if need > projections.nrows() {
            return Err(Error::Shape(format!(
                "mode rule needs {need} components, projection has {}",
                projections.nrows()
            )));
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
/// [`Error::Shape`] if the label vectors have different lengths; [`Error::InvalidArgument`] if
/// there is no recorded time or no chain.
pub fn mode_jumps(labels_by_time: &[Vec<usize>]) -> Result<JumpStats> {
    let n_chains = labels_by_time.first().map_or(0, Vec::len);
    if n_chains == 0 {
        return Err(Error::InvalidArgument(
            "no chain or no recorded time".into(),
        ));
    }
    if let Some(t) = labels_by_time.iter().position(|l| l.len() != n_chains) {
        return Err(Error::Shape(format!(
            "time {t} has {} chains, time 0 has {n_chains}",
            labels_by_time[t].len()
        )));
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
}

//! Free-energy barriers of the Curie–Weiss model and the exact reduced chains of its samplers
//! on the magnetisation (paper "Alternating Gibbs sampling in restricted Boltzmann machines:
//! free-energy barriers, analytic models and moves in latent space", Sec. III A; the AGS paper
//! Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).
//!
//! The barrier \\(\Delta f = f(0) - f(m^*)\\) and the free energy per spin \\(f(m)\\) are
//! [`CurieWeiss::barrier`] and [`CurieWeiss::mean_field_free_energy`]. This module gives the
//! finite-\\(N\\) ground truth for escape times: both AGS and single-spin Metropolis on the CW
//! model only see \\(S = \sum_i v_i\\), so their laws on \\(S\\) are exact Markov chains on
//! \\(N + 1\\) states, from which mean first-passage times and relaxation times follow by linear
//! algebra. Escape times grow as \\(e^{N \Delta f}\\).

use crate::CurieWeiss;
use ebm_core::Error;
use ebm_core::numerics::{log_sigmoid, log_sum_exp};
use nalgebra::{DMatrix, DVector};

/// Which sampler a [`ReducedChain`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReducedSampler {
    /// One alternating Gibbs step of the RBM form \\(W_i = \sqrt{J/N}\\) with one Gaussian
    /// hidden unit: \\(h \sim \mathcal N(wS/\sqrt N, 1/\beta)\\), then each spin is \\(+1\\) with
    /// probability \\(\sigma(2\beta w h/\sqrt N)\\). The Gaussian integral uses 1801 nodes over
    /// \\(\pm 9\\) standard deviations.
    Ags,
    /// One single-spin Metropolis proposal (a uniformly chosen spin flipped with probability
    /// \\(\min(1, e^{-\beta \Delta E})\\)); \\(N\\) steps make a sweep.
    Metropolis,
}

/// The exact transition matrix of a sampler of the zero-field Curie–Weiss model on
/// \\(S = \sum_i v_i \in \{-N, -N+2, \dots, N\}\\) (state index \\(k = (S + N)/2\\), the number of
/// up spins), at inverse temperature \\(\beta\\).
#[derive(Clone, Debug)]
pub struct ReducedChain {
    n: usize,
    matrix: DMatrix<f64>,
    stationary: Vec<f64>,
}

impl ReducedChain {
    /// The reduced chain of `sampler` on `model` at `beta`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a non-zero field, a negative coupling or
    /// \\(\beta \le 0\\).
    pub fn new(model: &CurieWeiss, beta: f64, sampler: ReducedSampler) -> ebm_core::Result<Self> {
        if model.field() != 0.0 || model.coupling() < 0.0 || beta.is_nan() || beta <= 0.0 {
            return Err(Error::InvalidParameter {
                name: "ReducedChain".into(),
                reason: format!(
                    "needs zero field, J >= 0 and beta > 0; got h = {}, J = {}, beta = {beta}",
                    model.field(),
                    model.coupling()
                ),
            });
        }
        let n = model.n();
        let nf = n as f64;
        let mut t = DMatrix::zeros(n + 1, n + 1);
        match sampler {
            ReducedSampler::Ags => {
                let w = model.coupling().sqrt();
                let sd = 1.0 / beta.sqrt();
                let nodes = 1801;
                let z: Vec<f64> = (0..nodes)
                    .map(|i| -9.0 + 18.0 * i as f64 / (nodes - 1) as f64)
                    .collect();
                let gw: Vec<f64> = z.iter().map(|z| -0.5 * z * z).collect();
                let lz = log_sum_exp(&gw);
                let lbin = crate::analytic::log_binomials(n);
                for k in 0..=n {
                    let s = 2.0 * k as f64 - nf;
                    let mut row = vec![Vec::with_capacity(nodes); n + 1];
                    for (zi, g) in z.iter().zip(&gw) {
                        let h = w * s / nf.sqrt() + sd * zi;
                        let a = 2.0 * beta * w * h / nf.sqrt();
                        let (lp, lq) = (log_sigmoid(a), log_sigmoid(-a));
                        for (k2, r) in row.iter_mut().enumerate() {
                            r.push(g - lz + lbin[k2] + k2 as f64 * lp + (n - k2) as f64 * lq);
                        }
                    }
                    for (k2, r) in row.iter().enumerate() {
                        t[(k, k2)] = log_sum_exp(r).exp();
                    }
                }
            }
            ReducedSampler::Metropolis => {
                for k in 0..=n {
                    let mut stay = 1.0;
                    for (k2, p_pick) in [
                        (k.wrapping_sub(1), k as f64 / nf),
                        (k + 1, (n - k) as f64 / nf),
                    ] {
                        if k2 > n || p_pick == 0.0 {
                            continue;
                        }
                        let de = model.energy_of_up_count(k2) - model.energy_of_up_count(k);
                        let p = p_pick * (-beta * de).exp().min(1.0);
                        t[(k, k2)] = p;
                        stay -= p;
                    }
                    t[(k, k)] = stay;
                }
            }
        }
        Ok(Self {
            n,
            matrix: t,
            stationary: model.up_count_distribution(beta),
        })
    }

    /// The transition matrix, `T[(k, k')]` from \\(k\\) to \\(k'\\) up spins.
    pub fn matrix(&self) -> &DMatrix<f64> {
        &self.matrix
    }

    /// The stationary law of the number of up spins (the model's exact law).
    pub fn stationary(&self) -> &[f64] {
        &self.stationary
    }

    /// The start state of the escape-time tables: the number of up spins \\(k\\) whose
    /// \\(S = 2k - N\\) is nearest to \\(m^* N\\).
    pub fn mode_state(&self, m_star: f64) -> usize {
        let nf = self.n as f64;
        (((m_star * nf + nf) / 2.0).round() as usize).min(self.n)
    }

    /// Mean first-passage times into the target set \\(\{k : S \le -m_{\rm target} N\}\\) from
    /// every state (zero inside the target), by solving \\((1 - T_{BB})\tau = 1\\) on the
    /// complement \\(B\\).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the linear system is singular (target unreachable).
    pub fn mean_first_passage(&self, m_target: f64) -> ebm_core::Result<Vec<f64>> {
        let nf = self.n as f64;
        let outside: Vec<usize> = (0..=self.n)
            .filter(|&k| 2.0 * k as f64 - nf > -m_target * nf)
            .collect();
        let b = outside.len();
        let a = DMatrix::from_fn(b, b, |i, j| {
            f64::from(u8::from(i == j)) - self.matrix[(outside[i], outside[j])]
        });
        let tau = a
            .lu()
            .solve(&DVector::from_element(b, 1.0))
            .ok_or_else(|| Error::InvalidParameter {
                name: "m_target".into(),
                reason: "the target set is not reachable".into(),
            })?;
        let mut out = vec![0.0; self.n + 1];
        for (i, &k) in outside.iter().enumerate() {
            out[k] = tau[i];
        }
        Ok(out)
    }

    /// The relaxation time \\(1 / (1 - |\lambda_2|)\\), from the second-largest eigenvalue modulus
    /// of the (reversible) chain, computed on the symmetrised matrix
    /// \\(D^{1/2} T D^{-1/2}\\) with \\(D = \operatorname{diag}(\pi)\\).
    pub fn relaxation_time(&self) -> f64 {
        let s: Vec<f64> = self.stationary.iter().map(|p| p.sqrt()).collect();
        let m = DMatrix::from_fn(self.n + 1, self.n + 1, |i, j| {
            let a = s[i] * self.matrix[(i, j)] / s[j];
            let b = s[j] * self.matrix[(j, i)] / s[i];
            0.5 * (a + b)
        });
        let mut ev: Vec<f64> = m.symmetric_eigenvalues().iter().map(|x| x.abs()).collect();
        ev.sort_by(|a, b| b.total_cmp(a));
        1.0 / (1.0 - ev[1])
    }
}

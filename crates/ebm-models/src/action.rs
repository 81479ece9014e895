//! The large-\\(N\\) action of alternating Gibbs sampling on the Curie–Weiss model and its
//! minimiser (paper "Alternating Gibbs sampling in restricted Boltzmann machines: free-energy
//! barriers, analytic models and moves in latent space", Sec. III A, Eqs. 16–22, Fig. 3;
//! Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).
//!
//! After rescaling \\(h \to h/\sqrt N\\), the probability that \\(T\\) AGS steps of the RBM form
//! of the Curie–Weiss model (\\(W_i = w/\sqrt N\\), one Gaussian hidden unit) lead from
//! magnetisation \\(m^0\\) to \\(m^T\\) is, to leading order in \\(N\\),
//! \\(e^{-N \min \Phi}\\), with the action \\(\Phi = \sum_{t=0}^{T-1} \delta\Phi(t \to t+1)\\) and
//!
//! \\[ \delta\Phi(t \to t+1) = \tfrac12 (h^{t+1} - w m^t)^2 + \log 2\cosh(w h^{t+1})
//!     - w m^{t+1} h^{t+1} - \mathcal S(m^{t+1}) \qquad \text{(Eq. 17)}, \\]
//!
//! minimised over the intermediate \\(h^1..h^T\\) and \\(m^1..m^{T-1}\\). Two exact step maps
//! give the large-\\(T\\) structure: the *instanton* (ascent, Eq. 19) costs exactly
//! \\(f(m^{t+1}) - f(m^t)\\) per step and the *relaxation* (descent, Eq. 21) costs zero, with
//! \\(f(m) = -\frac{w^2}{2}m^2 - \mathcal S(m)\\). So \\(\min\Phi \to \Delta f = f(0) - f(m^*)\\)
//! from above as \\(T\\) grows: alternating Gibbs sampling crosses the Curie–Weiss barrier no
//! faster than single-spin Metropolis.

use crate::analytic::{binary_entropy, mean_field_magnetisation};
use ebm_core::Error;
use ebm_core::numerics::log_2cosh;
use nalgebra::{DMatrix, DVector};

/// The AGS action of the Curie–Weiss model with weight scale \\(w\\) (coupling \\(w^2\\)) in the
/// large-\\(N\\) limit (module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CwAction {
    w: f64,
}

/// A path of \\(T\\) AGS steps in reduced variables: magnetisations \\(m^0..m^T\\) and hidden
/// values \\(h^1..h^T\\) (rescaled by \\(\sqrt N\\)); `h[t]` is \\(h^{t+1}\\), drawn from
/// \\(m^t\\), and `m[t + 1]` is drawn from it.
#[derive(Clone, Debug, PartialEq)]
pub struct AgsPath {
    /// \\(m^0, \dots, m^T\\) (length \\(T + 1\\)).
    pub m: Vec<f64>,
    /// \\(h^1, \dots, h^T\\) (length \\(T\\)).
    pub h: Vec<f64>,
}

impl AgsPath {
    /// Number of steps \\(T\\).
    pub fn steps(&self) -> usize {
        self.h.len()
    }
}

/// The result of [`CwAction::minimise`].
#[derive(Clone, Debug, PartialEq)]
pub struct ActionMinimum {
    /// The minimising path.
    pub path: AgsPath,
    /// Its action \\(\Phi\\).
    pub action: f64,
    /// Largest absolute component of the gradient of \\(\Phi\\) at the path (zero at an exact
    /// stationary point).
    pub gradient_norm: f64,
    /// Newton iterations of the best start.
    pub iterations: usize,
}

impl CwAction {
    /// The action at weight scale `w` (Curie–Weiss coupling \\(w^2\\)).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `w` is finite and positive.
    pub fn new(w: f64) -> ebm_core::Result<Self> {
        if !(w.is_finite() && w > 0.0) {
            return Err(Error::InvalidParameter {
                name: "w".into(),
                reason: format!("the weight scale must be finite and > 0, got {w}"),
            });
        }
        Ok(Self { w })
    }

    /// The weight scale \\(w\\).
    pub fn w(&self) -> f64 {
        self.w
    }

    /// Free energy per spin \\(f(m) = -\frac{w^2}{2}m^2 - \mathcal S(m)\\) (Eq. 11 and the text
    /// after it); the same as [`crate::CurieWeiss::mean_field_free_energy`] at \\(J = w^2\\),
    /// \\(\beta = 1\\).
    pub fn free_energy(&self, m: f64) -> f64 {
        -0.5 * self.w * self.w * m * m - binary_entropy(m)
    }

    /// The positive minimum \\(m^* = \tanh(w^2 m^*)\\) of \\(f\\) (0 for \\(w \le 1\\)).
    pub fn m_star(&self) -> f64 {
        mean_field_magnetisation(self.w * self.w, 0.0)
    }

    /// The barrier \\(\Delta f = f(0) - f(m^*)\\) (Eq. 12, sign corrected).
    pub fn barrier(&self) -> f64 {
        self.free_energy(0.0) - self.free_energy(self.m_star())
    }

    /// The cost \\(\delta\Phi(t \to t+1)\\) of one step \\(m^t \to h^{t+1} \to m^{t+1}\\) (Eq. 17);
    /// \\(+\infty\\) for \\(|m^{t+1}| > 1\\).
    pub fn step_cost(&self, m: f64, h_next: f64, m_next: f64) -> f64 {
        if m_next.abs() > 1.0 {
            return f64::INFINITY;
        }
        let w = self.w;
        let d = h_next - w * m;
        0.5 * d * d + log_2cosh(w * h_next) - w * m_next * h_next - binary_entropy(m_next)
    }

    /// The action \\(\Phi = \sum_t \delta\Phi(t \to t+1)\\) of a path (Eq. 16).
    ///
    /// # Panics
    /// If `path.m.len() != path.h.len() + 1`.
    pub fn action(&self, path: &AgsPath) -> f64 {
        assert_eq!(
            path.m.len(),
            path.h.len() + 1,
            "AgsPath: m has T + 1 values"
        );
        (0..path.steps())
            .map(|t| self.step_cost(path.m[t], path.h[t], path.m[t + 1]))
            .sum()
    }

    /// One instanton (ascent) step (Eq. 19): \\(m^{t+1} = \operatorname{arctanh}(m^t)/w^2\\),
    /// \\(h^{t+1} = w m^{t+1}\\); returns \\((h^{t+1}, m^{t+1})\\). Its cost is exactly
    /// \\(f(m^{t+1}) - f(m^t)\\) (Eq. 20).
    pub fn instanton_step(&self, m: f64) -> (f64, f64) {
        let m_next = m.atanh() / (self.w * self.w);
        (self.w * m_next, m_next)
    }

    /// One relaxation (thermalisation) step (Eq. 21): \\(h^{t+1} = w m^t\\),
    /// \\(m^{t+1} = \tanh(w^2 m^t)\\); returns \\((h^{t+1}, m^{t+1})\\). Its cost is exactly 0
    /// (Eq. 22).
    pub fn relaxation_step(&self, m: f64) -> (f64, f64) {
        (self.w * m, (self.w * self.w * m).tanh())
    }

    /// Gradient of \\(\Phi\\) with respect to the free variables, ordered
    /// \\(h^1, m^1, h^2, m^2, \dots, m^{T-1}, h^T\\) (\\(2T - 1\\) values):
    /// \\(\partial_{h^{t+1}}\Phi = (h^{t+1} - w m^t) + w\tanh(w h^{t+1}) - w m^{t+1}\\) and
    /// \\(\partial_{m^t}\Phi = -w(h^{t+1} - w m^t) - w h^t + \operatorname{arctanh}(m^t)\\).
    pub fn gradient(&self, path: &AgsPath) -> Vec<f64> {
        let (w, t_len) = (self.w, path.steps());
        let mut g = vec![0.0; 2 * t_len - 1];
        for t in 0..t_len {
            g[2 * t] = (path.h[t] - w * path.m[t]) + w * (w * path.h[t]).tanh() - w * path.m[t + 1];
        }
        for t in 1..t_len {
            g[2 * t - 1] = -w * (path.h[t] - w * path.m[t]) - w * path.h[t - 1] + path.m[t].atanh();
        }
        g
    }

    /// The Hessian of \\(\Phi\\) in the variable order of [`CwAction::gradient`] (banded).
    fn hessian(&self, path: &AgsPath) -> DMatrix<f64> {
        let (w, t_len) = (self.w, path.steps());
        let n = 2 * t_len - 1;
        let mut hs = DMatrix::zeros(n, n);
        for t in 0..t_len {
            let th = (w * path.h[t]).tanh();
            hs[(2 * t, 2 * t)] = 1.0 + w * w * (1.0 - th * th);
            if t >= 1 {
                // h^{t+1} with m^t.
                hs[(2 * t, 2 * t - 1)] = -w;
                hs[(2 * t - 1, 2 * t)] = -w;
                let m = path.m[t];
                hs[(2 * t - 1, 2 * t - 1)] = w * w + 1.0 / (1.0 - m * m);
            }
            if t + 1 < t_len {
                // h^{t+1} with m^{t+1}.
                hs[(2 * t, 2 * t + 1)] = -w;
                hs[(2 * t + 1, 2 * t)] = -w;
            }
        }
        hs
    }

    /// The minimum of \\(\Phi\\) over paths of `steps` AGS steps from \\(m^0\\) = `m_start` to
    /// \\(m^T\\) = `m_end` (both fixed), over \\(h^1..h^T\\) and \\(m^1..m^{T-1} \in (-1, 1)\\).
    ///
    /// Method: damped Newton (Levenberg–Marquardt) with the analytic gradient and Hessian,
    /// from six deterministic tanh-shaped switching profiles (switch at \\(T/4\\), \\(T/2\\),
    /// \\(3T/4\\); two steepnesses), keeping the lowest action. Each run stops when the largest
    /// gradient component is below \\(10^{-11}\\) or after 500 iterations.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `steps == 0` or an end point outside \\((-1, 1)\\).
    pub fn minimise(
        &self,
        m_start: f64,
        m_end: f64,
        steps: usize,
    ) -> ebm_core::Result<ActionMinimum> {
        if steps == 0 {
            return Err(Error::InvalidParameter {
                name: "steps".into(),
                reason: "a path needs at least one AGS step".into(),
            });
        }
        for (name, m) in [("m_start", m_start), ("m_end", m_end)] {
            if !(m.is_finite() && m.abs() < 1.0) {
                return Err(Error::InvalidParameter {
                    name: name.into(),
                    reason: format!("a magnetisation must lie in (-1, 1), got {m}"),
                });
            }
        }
        let t_len = steps;
        let mut best: Option<ActionMinimum> = None;
        for centre in [0.25, 0.5, 0.75] {
            for steep in [0.3, 1.5] {
                let t0 = centre * t_len as f64;
                let mid = 0.5 * (m_start + m_end);
                let half = 0.5 * (m_start - m_end);
                let mut m: Vec<f64> = (0..=t_len)
                    .map(|t| (mid - half * (steep * (t as f64 - t0)).tanh()).clamp(-0.999, 0.999))
                    .collect();
                m[0] = m_start;
                m[t_len] = m_end;
                let h = (0..t_len)
                    .map(|t| 0.5 * self.w * (m[t] + m[t + 1]))
                    .collect();
                let found = self.newton(AgsPath { m, h });
                if best.as_ref().is_none_or(|b| found.action < b.action) {
                    best = Some(found);
                }
            }
        }
        Ok(best.expect("at least one start"))
    }

    /// Levenberg–Marquardt descent of \\(\Phi\\) from `path`.
    fn newton(&self, mut path: AgsPath) -> ActionMinimum {
        let t_len = path.steps();
        let mut phi = self.action(&path);
        let mut lambda = 1e-3;
        let mut iterations = 0;
        for it in 0..500 {
            iterations = it;
            let g = self.gradient(&path);
            let gmax = g.iter().fold(0.0f64, |a, b| a.max(b.abs()));
            if gmax < 1e-11 {
                break;
            }
            let hs = self.hessian(&path);
            let gv = DVector::from_vec(g);
            let mut improved = false;
            for _ in 0..60 {
                let mut a = hs.clone();
                for i in 0..a.nrows() {
                    a[(i, i)] += lambda;
                }
                let Some(chol) = a.cholesky() else {
                    lambda *= 10.0;
                    continue;
                };
                let step = chol.solve(&-&gv);
                let mut trial = path.clone();
                for t in 0..t_len {
                    trial.h[t] += step[2 * t];
                    if t >= 1 {
                        trial.m[t] += step[2 * t - 1];
                    }
                }
                let ok = trial.m.iter().all(|m| m.abs() < 1.0);
                let phi_trial = if ok {
                    self.action(&trial)
                } else {
                    f64::INFINITY
                };
                if phi_trial <= phi {
                    path = trial;
                    phi = phi_trial;
                    lambda = (lambda * 0.3).max(1e-12);
                    improved = true;
                    break;
                }
                lambda *= 10.0;
            }
            if !improved {
                break;
            }
        }
        let g = self.gradient(&path);
        ActionMinimum {
            gradient_norm: g.iter().fold(0.0f64, |a, b| a.max(b.abs())),
            action: self.action(&path),
            path,
            iterations,
        }
    }
}

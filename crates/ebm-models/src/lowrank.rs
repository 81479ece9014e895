//! The low-rank RBM of *"Fast, accurate training and sampling of Restricted Boltzmann Machines"*
//! (paper 000, Eq. 3–18, SI A): a \\(\pm1\\) RBM whose couplings and visible fields lie in the
//! span of \\(d \le 4\\) principal directions (plus an optional bias direction \\(u_0\\)), so that
//! its marginal energy depends on \\(v\\) only through the magnetizations
//! \\(m_\alpha(v) = u_\alpha\cdot v/\sqrt{N}\\).
//!
//! - [`LowRankBasis`]: the orthonormal directions \\(U\\) (\\(d\times N\\), rows \\(u_\alpha\\)).
//! - [`LowRankBasis::solve`]: Newton's method for \\(\mu^*(m)\\), the tilt at which the uniform prior
//!   on \\(\{-1,+1\}^N\\) has mean magnetization \\(m\\) (Eq. 16):
//!   \\(m_\alpha = N^{-1/2}\sum_i u_{\alpha i}\tanh(\sqrt N \sum_\beta u_{\beta i}\mu^*_\beta)\\),
//!   and the Gärtner–Ellis entropy per spin (Eq. 12–15)
//!   \\(s(m) = N^{-1}\sum_i \log 2\cosh(\sqrt N\sum_\beta u_{\beta i}\mu^*_\beta) - m\cdot\mu^*\\).
//! - [`Mesh`]: a regular grid of cell centres over the box of attainable magnetizations
//!   \\(|m_\alpha| \le \lVert u_\alpha\rVert_1/\sqrt N\\); points where Newton does not converge
//!   (outside the attainable region, or numerically saturated) are dropped.
//! - [`Mesh::log_partition`]: the low-rank \\(\log Z\\) from the mesh, \\(\log Z \approx
//!   N\log 2 + \log \sum_k e^{-H(m_k) + \lambda_k} - \log\sum_k e^{\lambda_k}\\) with
//!   \\(\lambda_k = N s_k - \frac12\log\det C_k\\): \\(2^N\\) times the prior average of
//!   \\(e^{-H(m)}\\), the prior law of \\(m\\) replaced by its saddle-point density on the mesh
//!   (\\(C_k = \nabla^2\varphi(\mu^*_k)\\) is the covariance of \\(\sqrt N m\\) under the
//!   tilted prior; the paper's code omits this prefactor, see [`PriorWeight`]). For \\(d = 1\\)
//!   along the uniform direction the neglected term is Stirling's
//!   \\(\epsilon(m) = -(4/(1-m^2) - 1)/(12N)\\), so the error is
//!   \\(E_{\text{model}}[\epsilon] - E_{\text{prior}}[\epsilon] = O(1/N)\\) (tested).
//! - [`Mesh::sample`]: the static sampler of paper 000 §4 (inverse transform on the mesh, then
//!   independent spins with \\(P(v_i=+1\mid m) = \sigma(2\sqrt N\sum_\alpha u_{\alpha i}\mu^*_\alpha)\\),
//!   Eq. 18): i.i.d. draws, no Markov chain.
//! - [`Mesh::rbm_log_weights`]: \\(-H(m_k)\\) of a spin RBM whose parameters lie in the span of
//!   the basis (the exact marginal energy, log cosh included).
//!
//! - [`Mesh::snap`]: the kept points nearest to given magnetizations (projected data), i.e. the
//!   cells in which the mesh law holds them.
//! - [`Mesh::log_partition_correction`]: the \\(O(1/N)\\) error of the mesh \\(\log Z\\) from the
//!   next (Edgeworth) term of the saddle-point expansion.
//!
//! All formulas are for \\(\pm1\\) visible units; \\(\{0,1\}\\) data are handled by \\(s = 2v-1\\)
//! and [`crate::Rbm::reparametrise`]. Potts (one-hot) units are not supported. For them the
//! directions would live in \\(\mathbb R^{Nq}\\), orthogonal to the per-site constants (the
//! one-hot gauge); \\(\log 2\cosh x_i\\) in \\(\varphi\\) becomes \\(\log\sum_c e^{x_{ic}}\\), \\(\tanh\\)
//! in Eq. 16 a per-site softmax, the Hessian \\(\sum_i u_i^\top(\mathrm{diag}\,p_i -
//! p_ip_i^\top)u_i\\), the attainable region the projection of a product of simplices, and the
//! static sampler draws each site from its softmax; the RCM on \\(m\\) is unchanged.

use ebm_core::numerics::{log_2cosh, log_sum_exp, sigmoid};
use ebm_core::{Error, Par, Result};
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rayon::prelude::*;

use crate::{BinaryLayer, Rbm, Spin};

/// Maximum number of directions (principal directions plus the bias direction).
pub const MAX_DIRECTIONS: usize = 5;

/// Newton's stopping rule: \\(\lVert\Delta\mu\rVert_\infty \le\\) this (the paper's code value).
pub const NEWTON_STEP_TOL: f64 = 1e-10;
/// A point is accepted only if the residual of Eq. 16 is at most this (\\(\infty\\)-norm).
pub const NEWTON_RESIDUAL_TOL: f64 = 1e-10;
const NEWTON_MAX_ITER: usize = 200;

fn invalid(name: &str, reason: String) -> Error {
    Error::InvalidParameter {
        name: name.into(),
        reason,
    }
}

/// Orthonormal directions \\(u_1..u_d\\) (rows of a \\(d\times N\\) matrix) on which a low-rank
/// \\(\pm1\\) RBM is built (paper 000 Eq. 3, 20).
#[derive(Clone, Debug, PartialEq)]
pub struct LowRankBasis {
    u: DMatrix<f64>,
}

/// The solution of Eq. 16 at one magnetization.
#[derive(Clone, Debug, PartialEq)]
pub struct NewtonSolution {
    /// \\(\mu^*(m)\\).
    pub mu: Vec<f64>,
    /// The entropy per spin \\(s(m) = \varphi(\mu^*) - m\cdot\mu^* + \log 2\\) (nats).
    pub entropy: f64,
    /// \\(\log\det\nabla^2\varphi(\mu^*)\\), with
    /// \\(\nabla^2\varphi_{\alpha\beta} = \sum_i u_{\alpha i}u_{\beta i}(1-\tanh^2 x_i)\\).
    pub log_det_hessian: f64,
    /// \\(\lVert m - \nabla\varphi(\mu^*)\rVert_\infty\\).
    pub residual: f64,
    /// Newton iterations used.
    pub iterations: usize,
}

impl LowRankBasis {
    /// Validates the directions: `u` is \\(d\times N\\) with \\(1\le d\le\\) [`MAX_DIRECTIONS`],
    /// finite, with orthonormal rows (to 1e-8).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] otherwise.
    pub fn new(u: DMatrix<f64>) -> Result<Self> {
        let (d, n) = u.shape();
        if d == 0 || d > MAX_DIRECTIONS || n == 0 {
            return Err(invalid(
                "directions",
                format!("expected 1..={MAX_DIRECTIONS} rows and >= 1 column, got {d} x {n}"),
            ));
        }
        if let Some(i) = u.iter().position(|x| !x.is_finite()) {
            return Err(Error::NonFinite {
                what: "directions".into(),
                index: i,
                value: u[i],
            });
        }
        let g = &u * u.transpose();
        for a in 0..d {
            for b in 0..d {
                let want = if a == b { 1.0 } else { 0.0 };
                if (g[(a, b)] - want).abs() > 1e-8 {
                    return Err(invalid(
                        "directions",
                        format!("rows must be orthonormal; u_{a}.u_{b} = {}", g[(a, b)]),
                    ));
                }
            }
        }
        Ok(Self { u })
    }

    /// An orthonormal basis of the span of the columns of `vectors` (\\(N\times k\\)): the left
    /// singular vectors whose singular values exceed `rel_tol` times the largest. A model whose
    /// visible fields and weight columns (in \\(\pm1\\) form) lie in this span is a low-rank
    /// RBM on it (paper 000 §4), whatever basis of the span was used to build it.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the span is \\(\{0\}\\), has more than
    /// [`MAX_DIRECTIONS`] dimensions, or `rel_tol` is not in \\((0, 1)\\).
    pub fn spanning(vectors: &DMatrix<f64>, rel_tol: f64) -> Result<Self> {
        if !(rel_tol > 0.0 && rel_tol < 1.0) || vectors.nrows() == 0 {
            return Err(invalid(
                "spanning",
                format!(
                    "need rel_tol in (0, 1) and vectors of >= 1 row, got {rel_tol} and {} rows",
                    vectors.nrows()
                ),
            ));
        }
        let svd = vectors.clone().svd(true, false);
        let u = svd.u.expect("requested");
        let top = svd.singular_values.amax();
        let keep: Vec<usize> = (0..svd.singular_values.len())
            .filter(|&k| top > 0.0 && svd.singular_values[k] > rel_tol * top)
            .collect();
        if keep.is_empty() || keep.len() > MAX_DIRECTIONS {
            return Err(invalid(
                "spanning",
                format!(
                    "the vectors span {} dimensions; a low-rank basis has 1..={MAX_DIRECTIONS}",
                    keep.len()
                ),
            ));
        }
        Self::new(DMatrix::from_fn(keep.len(), vectors.nrows(), |a, i| {
            u[(i, keep[a])]
        }))
    }

    /// The \\(d\times N\\) matrix \\(U\\).
    pub fn directions(&self) -> &DMatrix<f64> {
        &self.u
    }

    /// Number of directions \\(d\\).
    pub fn dim(&self) -> usize {
        self.u.nrows()
    }

    /// Number of visible units \\(N\\).
    pub fn n_visible(&self) -> usize {
        self.u.ncols()
    }

    /// Magnetizations \\(m = U v/\sqrt N\\) of the columns of `v` (\\(N\times n\\)), as \\(d\times n\\).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `v` does not have \\(N\\) rows.
    pub fn project(&self, v: &DMatrix<f64>) -> Result<DMatrix<f64>> {
        if v.nrows() != self.n_visible() {
            return Err(Error::ShapeMismatch {
                what: "configurations to project".into(),
                expected: format!("{} rows", self.n_visible()),
                got: format!("{} rows", v.nrows()),
            });
        }
        Ok(&self.u * v / (self.n_visible() as f64).sqrt())
    }

    /// Largest attainable \\(|m_\alpha|\\): \\(\lVert u_\alpha\rVert_1/\sqrt N\\).
    pub fn bounds(&self) -> Vec<f64> {
        let s = (self.n_visible() as f64).sqrt();
        self.u
            .row_iter()
            .map(|r| r.iter().map(|x| x.abs()).sum::<f64>() / s)
            .collect()
    }

    /// Local fields \\(x_i = \sqrt N\sum_\alpha u_{\alpha i}\mu_\alpha\\).
    fn fields(&self, mu: &[f64], x: &mut [f64]) {
        let s = (self.n_visible() as f64).sqrt();
        for (i, xi) in x.iter_mut().enumerate() {
            *xi = s * (0..self.dim()).map(|a| self.u[(a, i)] * mu[a]).sum::<f64>();
        }
    }

    /// \\(\psi(\mu) = \varphi(\mu) - m\cdot\mu\\) with \\(\varphi = N^{-1}\sum_i\log 2\cosh x_i\\).
    fn psi(&self, mu: &[f64], m: &[f64], x: &mut [f64]) -> f64 {
        self.fields(mu, x);
        let n = self.n_visible() as f64;
        x.iter().map(|&xi| log_2cosh(xi)).sum::<f64>() / n
            - m.iter().zip(mu).map(|(a, b)| a * b).sum::<f64>()
    }

    /// Gradient \\(\nabla\varphi\\) and Hessian \\(\nabla^2\varphi\\) at the fields `x`.
    fn grad_hess(&self, x: &[f64]) -> (DVector<f64>, DMatrix<f64>) {
        let d = self.dim();
        let s = (self.n_visible() as f64).sqrt();
        let mut g = DVector::zeros(d);
        let mut h = DMatrix::zeros(d, d);
        for (i, &xi) in x.iter().enumerate() {
            let t = xi.tanh();
            let c = 1.0 - t * t;
            for a in 0..d {
                let ua = self.u[(a, i)];
                g[a] += ua * t / s;
                for b in 0..=a {
                    h[(a, b)] += ua * self.u[(b, i)] * c;
                }
            }
        }
        for a in 0..d {
            for b in 0..a {
                h[(b, a)] = h[(a, b)];
            }
        }
        (g, h)
    }

    /// Solves Eq. 16 for \\(\mu^*(m)\\) by damped Newton from \\(\mu=0\\) (backtracking on the
    /// convex \\(\psi(\mu) = \varphi(\mu) - m\cdot\mu\\)), stopping when
    /// \\(\lVert\Delta\mu\rVert_\infty\le\\) [`NEWTON_STEP_TOL`]. Returns `None` if \\(m\\) is not
    /// attainable (no convergence, a singular Hessian, or a residual above
    /// [`NEWTON_RESIDUAL_TOL`]).
    ///
    /// # Panics
    /// If `m.len() != self.dim()`.
    pub fn solve(&self, m: &[f64]) -> Option<NewtonSolution> {
        assert_eq!(m.len(), self.dim(), "solve: magnetization length");
        let d = self.dim();
        let mut mu = vec![0.0; d];
        let mut trial = vec![0.0; d];
        let mut x = vec![0.0; self.n_visible()];
        let mut psi = self.psi(&mu, m, &mut x);
        for it in 1..=NEWTON_MAX_ITER {
            let (g, h) = self.grad_hess(&x);
            let r = DVector::from_column_slice(m) - g;
            let step = h.cholesky()?.solve(&r);
            // Armijo backtracking: psi decreases along step since grad psi = -r.
            let slope = -r.dot(&step);
            let mut t = 1.0;
            let mut accepted = false;
            // Close to the solution the full step is taken (quadratic convergence); psi can no
            // longer resolve the decrease at machine precision there.
            let tries = if step.amax() < 1e-6 { 0 } else { 60 };
            if tries == 0 {
                for a in 0..d {
                    trial[a] = mu[a] + step[a];
                }
                psi = self.psi(&trial, m, &mut x);
                accepted = true;
            }
            for _ in 0..tries {
                for a in 0..d {
                    trial[a] = mu[a] + t * step[a];
                }
                let p = self.psi(&trial, m, &mut x);
                if p.is_finite() && p <= psi + 1e-4 * t * slope {
                    psi = p;
                    accepted = true;
                    break;
                }
                t *= 0.5;
            }
            if !accepted {
                // No decrease possible at machine precision: accept only if already converged.
                self.fields(&mu, &mut x);
                return self.finish(m, mu, &x, it);
            }
            mu.copy_from_slice(&trial);
            if mu.iter().any(|v| v.abs() > 1e6) {
                return None;
            }
            if step.amax() * t <= NEWTON_STEP_TOL {
                return self.finish(m, mu, &x, it);
            }
        }
        None
    }

    fn finish(
        &self,
        m: &[f64],
        mu: Vec<f64>,
        x: &[f64],
        iterations: usize,
    ) -> Option<NewtonSolution> {
        let (g, h) = self.grad_hess(x);
        let residual = (0..self.dim())
            .map(|a| (m[a] - g[a]).abs())
            .fold(0.0, f64::max);
        if residual.is_nan() || residual > NEWTON_RESIDUAL_TOL {
            return None;
        }
        let chol = h.cholesky()?;
        let log_det_hessian = 2.0 * chol.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
        if !log_det_hessian.is_finite() {
            return None;
        }
        let n = self.n_visible() as f64;
        let entropy = x.iter().map(|&xi| log_2cosh(xi)).sum::<f64>() / n
            - m.iter().zip(&mu).map(|(a, b)| a * b).sum::<f64>();
        Some(NewtonSolution {
            mu,
            entropy,
            log_det_hessian,
            residual,
            iterations,
        })
    }
}

/// How the prior mass of a mesh cell is approximated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PriorWeight {
    /// \\(e^{N s(m_k)}\\): the large-deviation (Gärtner–Ellis) term only, as in the paper's code.
    LargeDeviation,
    /// \\(e^{N s(m_k)}\,\det C_k^{-1/2}\\): the saddle-point density including its Gaussian
    /// prefactor, accurate to \\(O(1/N)\\) relative (the default).
    #[default]
    SaddlePoint,
}

/// Converged mesh points over the attainable magnetization space, with \\(\mu^*\\), \\(s\\) and
/// \\(\log\det C\\) at each (paper 000 SI A "discretization of the longitudinal space").
#[derive(Clone, Debug)]
pub struct Mesh {
    basis: LowRankBasis,
    points: DMatrix<f64>,
    mu: DMatrix<f64>,
    entropy: Vec<f64>,
    log_det: Vec<f64>,
    lo: Vec<f64>,
    spacing: Vec<f64>,
    per_dim: usize,
    /// Grid index of each kept point (increasing).
    grid_ids: Vec<usize>,
    rejected: usize,
    prior: PriorWeight,
}

impl Mesh {
    /// Builds a grid of `points_per_dim` cell centres per axis over the box
    /// \\([-b_\alpha, b_\alpha]\\), \\(b_\alpha\\) = [`LowRankBasis::bounds`], solves Eq. 16 at
    /// every point and keeps the converged ones. Deterministic for any [`Par`].
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `points_per_dim < 2`, the grid exceeds \\(10^7\\) points, or
    /// no point converges.
    pub fn grid(basis: &LowRankBasis, points_per_dim: usize, par: Par) -> Result<Self> {
        let b = basis.bounds();
        let lo: Vec<f64> = b.iter().map(|x| -x).collect();
        Self::grid_on_box(basis, &lo, &b, points_per_dim, par)
    }

    /// As [`Mesh::grid`] on the box \\([\mathrm{lo}_\alpha, \mathrm{hi}_\alpha]\\).
    ///
    /// # Errors
    /// As [`Mesh::grid`]; also if the box has the wrong dimension or is empty.
    pub fn grid_on_box(
        basis: &LowRankBasis,
        lo: &[f64],
        hi: &[f64],
        points_per_dim: usize,
        par: Par,
    ) -> Result<Self> {
        let d = basis.dim();
        if lo.len() != d
            || hi.len() != d
            || lo
                .iter()
                .zip(hi)
                .any(|(a, b)| a >= b || a.is_nan() || b.is_nan())
        {
            return Err(invalid(
                "mesh box",
                format!("expected {d} intervals lo < hi, got lo = {lo:?}, hi = {hi:?}"),
            ));
        }
        let total = (points_per_dim as f64).powi(d as i32);
        if points_per_dim < 2 || total > 1e7 {
            return Err(invalid(
                "points_per_dim",
                format!("need >= 2 and at most 1e7 points in all, got {points_per_dim}^{d}"),
            ));
        }
        let total = total as usize;
        let spacing: Vec<f64> = (0..d)
            .map(|a| (hi[a] - lo[a]) / points_per_dim as f64)
            .collect();
        let point = |k: usize| -> Vec<f64> {
            let mut r = k;
            (0..d)
                .map(|a| {
                    let j = r % points_per_dim;
                    r /= points_per_dim;
                    lo[a] + (j as f64 + 0.5) * spacing[a]
                })
                .collect()
        };
        let solve = |k: usize| basis.solve(&point(k)).map(|s| (k, s));
        let solved: Vec<(usize, NewtonSolution)> = match par {
            Par::Seq => (0..total).filter_map(solve).collect(),
            Par::Rayon => (0..total).into_par_iter().filter_map(solve).collect(),
        };
        if solved.is_empty() {
            return Err(invalid(
                "mesh",
                "no mesh point lies in the attainable region".into(),
            ));
        }
        let kept = solved.len();
        let mut points = DMatrix::zeros(d, kept);
        let mut mu = DMatrix::zeros(d, kept);
        let mut entropy = Vec::with_capacity(kept);
        let mut log_det = Vec::with_capacity(kept);
        let mut grid_ids = Vec::with_capacity(kept);
        for (c, (k, s)) in solved.into_iter().enumerate() {
            points.column_mut(c).copy_from_slice(&point(k));
            mu.column_mut(c).copy_from_slice(&s.mu);
            entropy.push(s.entropy);
            log_det.push(s.log_det_hessian);
            grid_ids.push(k);
        }
        Ok(Self {
            basis: basis.clone(),
            points,
            mu,
            entropy,
            log_det,
            lo: lo.to_vec(),
            spacing,
            per_dim: points_per_dim,
            grid_ids,
            rejected: total - kept,
            prior: PriorWeight::default(),
        })
    }

    /// Chooses how the prior mass of a cell is weighted (default [`PriorWeight::SaddlePoint`]).
    pub fn with_prior(mut self, prior: PriorWeight) -> Self {
        self.prior = prior;
        self
    }

    /// The basis the mesh was built on.
    pub fn basis(&self) -> &LowRankBasis {
        &self.basis
    }

    /// The kept points \\(m_k\\) as columns (\\(d\times K\\)).
    pub fn points(&self) -> &DMatrix<f64> {
        &self.points
    }

    /// \\(\mu^*(m_k)\\) as columns.
    pub fn mu(&self) -> &DMatrix<f64> {
        &self.mu
    }

    /// \\(s(m_k)\\), entropy per spin.
    pub fn entropy(&self) -> &[f64] {
        &self.entropy
    }

    /// Grid step per axis.
    pub fn spacing(&self) -> &[f64] {
        &self.spacing
    }

    /// Number of kept points \\(K\\).
    pub fn len(&self) -> usize {
        self.entropy.len()
    }

    /// Always false (construction fails on an empty mesh).
    pub fn is_empty(&self) -> bool {
        self.entropy.is_empty()
    }

    /// Number of grid points dropped because Newton did not converge there.
    pub fn rejected(&self) -> usize {
        self.rejected
    }

    /// Index of the kept point nearest to `m`, distances measured in grid steps per axis: the
    /// point of the grid cell holding `m` when it was kept, else the nearest by search. This is
    /// the cell in which the mesh law holds a magnetization (such as a projected data point)
    /// that may lie outside the kept region.
    ///
    /// # Panics
    /// If `m.len() != self.basis().dim()`.
    pub fn nearest(&self, m: &[f64]) -> usize {
        let d = self.basis.dim();
        assert_eq!(m.len(), d, "nearest: magnetization length");
        let mut k = 0;
        for a in (0..d).rev() {
            let j = ((m[a] - self.lo[a]) / self.spacing[a]).floor();
            let j = j.clamp(0.0, (self.per_dim - 1) as f64) as usize;
            k = k * self.per_dim + j;
        }
        if let Ok(c) = self.grid_ids.binary_search(&k) {
            return c;
        }
        let dist = |c: usize| -> f64 {
            (0..d)
                .map(|a| ((self.points[(a, c)] - m[a]) / self.spacing[a]).powi(2))
                .sum()
        };
        (0..self.len())
            .min_by(|&a, &b| dist(a).total_cmp(&dist(b)))
            .expect("a mesh has at least one point")
    }

    /// The kept points nearest to the columns of `m` (\\(d\times n\\)), as columns
    /// ([`Mesh::nearest`]): the magnetizations as the mesh law sees them.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `m` does not have \\(d\\) rows.
    pub fn snap(&self, m: &DMatrix<f64>) -> Result<DMatrix<f64>> {
        let d = self.basis.dim();
        if m.nrows() != d {
            return Err(Error::ShapeMismatch {
                what: "magnetizations to snap to the mesh".into(),
                expected: format!("{d} rows"),
                got: format!("{} rows", m.nrows()),
            });
        }
        let idx: Vec<usize> = (0..m.ncols())
            .into_par_iter()
            .map(|j| self.nearest(m.column(j).as_slice()))
            .collect();
        Ok(DMatrix::from_fn(d, m.ncols(), |a, j| {
            self.points[(a, idx[j])]
        }))
    }

    /// The next term of the saddle-point expansion of the prior density of \\(m\\) at each kept
    /// point (the leading error of [`PriorWeight::SaddlePoint`]): under the tilted prior at
    /// \\(\mu^*_k\\) the spins are independent with means \\(t_i = \tanh x_i\\), and
    /// \\(S = \sqrt N m = \sum_i u_{\cdot i} v_i\\) has cumulants
    /// \\(\kappa_{abc} = \sum_i u_{ai}u_{bi}u_{ci}\,(-2t_i(1-t_i^2))\\),
    /// \\(\kappa_{abcd} = \sum_i u_{ai}u_{bi}u_{ci}u_{di}\,(-2(1-t_i^2)(1-3t_i^2))\\) and
    /// covariance \\(C\\). The density is the saddle-point one times
    /// \\(e^{\epsilon_k}\\), \\(\epsilon = \rho_4/8 - \rho_{13}^2/8 - \rho_{23}^2/12 + O(N^{-2})\\),
    /// with \\(\rho_4 = \kappa_{abcd}C^{ab}C^{cd}\\),
    /// \\(\rho_{13}^2 = \kappa_{abc}\kappa_{def}C^{ab}C^{cd}C^{ef}\\),
    /// \\(\rho_{23}^2 = \kappa_{abc}\kappa_{def}C^{ad}C^{be}C^{cf}\\) (McCullagh 1987, §6.3;
    /// Barndorff-Nielsen & Cox 1989, §4.3). For \\(d = 1\\) along the uniform direction it is
    /// Stirling's \\(-(3 + m^2)/(12N(1-m^2))\\).
    ///
    /// Hence the mesh \\(\log Z\\) ([`Mesh::log_partition`]) misses
    /// \\(\log E_{\text{model}}[e^{\epsilon}] - \log E_{\text{prior}}[e^{\epsilon}]\\) (both
    /// averages over the mesh laws), which [`Mesh::log_partition_correction`] returns.
    pub fn saddle_point_correction(&self) -> Vec<f64> {
        let d = self.basis.dim();
        let n = self.basis.n_visible();
        let u = self.basis.directions();
        (0..self.len())
            .into_par_iter()
            .map(|k| {
                let mut x = vec![0.0; n];
                self.basis.fields(self.mu.column(k).as_slice(), &mut x);
                let (_, h) = self.basis.grad_hess(&x);
                let Some(chol) = h.cholesky() else {
                    return f64::NAN;
                };
                // Whitened directions w_i = L^{-1} u_i, so that C becomes the identity.
                let w = chol
                    .l()
                    .solve_lower_triangular(u)
                    .expect("positive definite");
                let mut t3 = vec![0.0; d * d * d];
                let mut rho4 = 0.0;
                for (i, &xi) in x.iter().enumerate() {
                    let t = xi.tanh();
                    let c = 1.0 - t * t;
                    let k3 = -2.0 * t * c;
                    let k4 = -2.0 * c * (1.0 - 3.0 * t * t);
                    let wi = w.column(i);
                    rho4 += k4 * wi.norm_squared().powi(2);
                    for a in 0..d {
                        for b in 0..d {
                            let ab = k3 * wi[a] * wi[b];
                            for e in 0..d {
                                t3[(a * d + b) * d + e] += ab * wi[e];
                            }
                        }
                    }
                }
                let rho23: f64 = t3.iter().map(|v| v * v).sum();
                let rho13: f64 = (0..d)
                    .map(|a| (0..d).map(|b| t3[(a * d + b) * d + b]).sum::<f64>().powi(2))
                    .sum();
                rho4 / 8.0 - rho13 / 8.0 - rho23 / 12.0
            })
            .collect()
    }

    /// The leading correction to [`Mesh::log_partition`] of the model with log-weights
    /// `log_weights`: \\(\log\sum_k p_k e^{\epsilon_k} - \log\sum_k \pi_k e^{\epsilon_k}\\),
    /// \\(p\\) the model's mesh law, \\(\pi\\) the prior's, \\(\epsilon\\) =
    /// [`Mesh::saddle_point_correction`]; \\(O(1/N)\\). The remaining error is the mesh
    /// quadrature and \\(O(N^{-2})\\).
    ///
    /// # Errors
    /// As [`Mesh::log_probabilities`].
    pub fn log_partition_correction(&self, log_weights: &[f64]) -> Result<f64> {
        let eps = self.saddle_point_correction();
        let lp = self.log_probabilities(log_weights)?;
        let prior = self.log_prior();
        let lz = log_sum_exp(&prior);
        let model: Vec<f64> = lp.iter().zip(&eps).map(|(l, e)| l + e).collect();
        let base: Vec<f64> = prior.iter().zip(&eps).map(|(l, e)| l - lz + e).collect();
        Ok(log_sum_exp(&model) - log_sum_exp(&base))
    }

    /// \\(\log\\) prior mass of each cell, up to a common constant (see [`PriorWeight`]).
    pub fn log_prior(&self) -> Vec<f64> {
        let n = self.basis.n_visible() as f64;
        self.entropy
            .iter()
            .zip(&self.log_det)
            .map(|(s, ld)| match self.prior {
                PriorWeight::LargeDeviation => n * s,
                PriorWeight::SaddlePoint => n * s - 0.5 * ld,
            })
            .collect()
    }

    fn check_len(&self, log_weights: &[f64]) -> Result<()> {
        if log_weights.len() != self.len() {
            return Err(Error::ShapeMismatch {
                what: "mesh log-weights".into(),
                expected: format!("{}", self.len()),
                got: format!("{}", log_weights.len()),
            });
        }
        if let Some(i) = log_weights.iter().position(|x| x.is_nan()) {
            return Err(Error::NonFinite {
                what: "mesh log-weights".into(),
                index: i,
                value: f64::NAN,
            });
        }
        Ok(())
    }

    /// The mesh law \\(p_k \propto \text{prior}_k\, e^{\ell_k}\\) of the model whose (unnormalised)
    /// log-weight in \\(m\\) is \\(\ell_k = -H(m_k)\\) (Eq. 11), as log-probabilities.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] / [`Error::NonFinite`] for a wrong length or a NaN.
    pub fn log_probabilities(&self, log_weights: &[f64]) -> Result<Vec<f64>> {
        self.check_len(log_weights)?;
        let a: Vec<f64> = self
            .log_prior()
            .iter()
            .zip(log_weights)
            .map(|(p, l)| p + l)
            .collect();
        let z = log_sum_exp(&a);
        Ok(a.into_iter().map(|x| x - z).collect())
    }

    /// Low-rank \\(\log Z = \log\sum_v e^{-H(m(v))}\\) from the mesh (module documentation).
    ///
    /// # Errors
    /// As [`Mesh::log_probabilities`].
    pub fn log_partition(&self, log_weights: &[f64]) -> Result<f64> {
        self.check_len(log_weights)?;
        let prior = self.log_prior();
        let a: Vec<f64> = prior.iter().zip(log_weights).map(|(p, l)| p + l).collect();
        Ok(
            self.basis.n_visible() as f64 * std::f64::consts::LN_2 + log_sum_exp(&a)
                - log_sum_exp(&prior),
        )
    }

    /// \\(\ell_k = -H(m_k)\\) of a spin RBM whose visible fields and weight columns lie in the
    /// span of the basis: with \\(t = U\theta\\) and \\(P = UW\\),
    /// \\(-H(m) = \sqrt N\, t\cdot m + \sum_a \log 2\cosh(\eta_a + \sqrt N P_{\cdot a}\cdot m)\\)
    /// (Eq. 4 / 19–21, with the \\(\log 2\\) of the hidden sum kept).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the RBM has the wrong number of visible units;
    /// [`Error::InvalidParameter`] if its parameters leave the span (relative residual > 1e-8).
    pub fn rbm_log_weights(&self, rbm: &Rbm<Spin<f64>, Spin<f64>>) -> Result<Vec<f64>> {
        let u = self.basis.directions();
        let n = self.basis.n_visible();
        if rbm.weights().nrows() != n {
            return Err(Error::ShapeMismatch {
                what: "RBM visible units".into(),
                expected: format!("{n}"),
                got: format!("{}", rbm.weights().nrows()),
            });
        }
        let theta = DVector::from_column_slice(rbm.visible().fields());
        let t = u * &theta;
        let p = u * rbm.weights();
        let off_theta = (&theta - u.transpose() * &t).norm();
        let off_w = (rbm.weights() - u.transpose() * &p).norm();
        let scale = 1.0 + theta.norm() + rbm.weights().norm();
        if off_theta + off_w > 1e-8 * scale {
            return Err(invalid(
                "rbm",
                format!(
                    "parameters leave the span of the basis (residual {:.3e})",
                    off_theta + off_w
                ),
            ));
        }
        let s = (n as f64).sqrt();
        let eta = rbm.hidden().fields();
        Ok(self
            .points
            .column_iter()
            .map(|m| {
                let lin = s * t.dot(&m);
                let hid: f64 = (0..eta.len())
                    .map(|a| log_2cosh(eta[a] + s * p.column(a).dot(&m)))
                    .sum();
                lin + hid
            })
            .collect())
    }

    /// Static sampling (paper 000 §4; SI A): `n` i.i.d. draws of \\(\pm1\\) configurations
    /// (columns of the \\(N\times n\\) result) by inverse transform on the mesh law
    /// [`Mesh::log_probabilities`] of `log_weights`, then independent spins with
    /// \\(P(v_i=+1) = \sigma(2\sqrt N\sum_\alpha u_{\alpha i}\mu^*_\alpha(m_k))\\) (Eq. 18). Also
    /// returns the drawn mesh indices. Draw \\(j\\) uses `rngs[j]` only.
    ///
    /// # Errors
    /// As [`Mesh::log_probabilities`].
    pub fn sample<R: Rng>(
        &self,
        log_weights: &[f64],
        rngs: &mut [R],
    ) -> Result<(DMatrix<f64>, Vec<usize>)> {
        let lp = self.log_probabilities(log_weights)?;
        let mut cdf = Vec::with_capacity(lp.len());
        let mut acc = 0.0;
        for l in &lp {
            acc += l.exp();
            cdf.push(acc);
        }
        let nv = self.basis.n_visible();
        let mut out = DMatrix::zeros(nv, rngs.len());
        let mut idx = Vec::with_capacity(rngs.len());
        let mut x = vec![0.0; nv];
        for (j, rng) in rngs.iter_mut().enumerate() {
            let r: f64 = rng.random::<f64>() * acc;
            let k = cdf.partition_point(|&c| c <= r).min(cdf.len() - 1);
            idx.push(k);
            self.basis.fields(self.mu.column(k).as_slice(), &mut x);
            for (i, &xi) in x.iter().enumerate() {
                let p = sigmoid(2.0 * xi);
                out[(i, j)] = if rng.random::<f64>() < p { 1.0 } else { -1.0 };
            }
        }
        Ok((out, idx))
    }

    /// The exact law of [`Mesh::sample`] at a configuration `v` (\\(\pm1\\)):
    /// \\(\sum_k p_k\prod_i P(v_i\mid m_k)\\), for exactness tests on small \\(N\\).
    ///
    /// # Errors
    /// As [`Mesh::log_probabilities`], and [`Error::ShapeMismatch`] for a wrong `v` length.
    pub fn sample_probability(&self, log_weights: &[f64], v: &[f64]) -> Result<f64> {
        let nv = self.basis.n_visible();
        if v.len() != nv {
            return Err(Error::ShapeMismatch {
                what: "configuration".into(),
                expected: format!("{nv}"),
                got: format!("{}", v.len()),
            });
        }
        let lp = self.log_probabilities(log_weights)?;
        let mut x = vec![0.0; nv];
        let mut total = 0.0;
        for (k, l) in lp.iter().enumerate() {
            self.basis.fields(self.mu.column(k).as_slice(), &mut x);
            let lv: f64 = x
                .iter()
                .zip(v)
                .map(|(&xi, &vi)| ebm_core::numerics::log_sigmoid(2.0 * xi * vi))
                .sum();
            total += (l + lv).exp();
        }
        Ok(total)
    }

    /// \\(\log q(v)\\) of the law \\(q\\) of [`Mesh::sample`] at each column of `v` (\\(\pm1\\),
    /// \\(N\times n\\)), for importance weights of static draws against a model.
    ///
    /// The fields are low-rank, \\(x_{ik} = \sqrt N\sum_\alpha u_{\alpha i}\mu^*_{\alpha k}\\), so
    /// \\(\log\prod_i P(v_i\mid m_k) = \sum_i [x_{ik}v_i - \log 2\cosh x_{ik}]
    /// = N\,\mu^*_k\cdot m(v) - c_k\\) with \\(m(v) = Uv/\sqrt N\\) and
    /// \\(c_k = \sum_i\log 2\cosh x_{ik}\\) computed once: \\(O(KN)\\) once, then \\(O(Kd)\\) per
    /// configuration, where [`Mesh::sample_probability`] costs \\(O(KN)\\) per configuration.
    ///
    /// # Errors
    /// As [`Mesh::log_probabilities`] and [`LowRankBasis::project`].
    pub fn log_sample_densities(&self, log_weights: &[f64], v: &DMatrix<f64>) -> Result<Vec<f64>> {
        let offsets = self.sample_density_offsets(log_weights)?;
        self.log_sample_densities_from(&offsets, v)
    }

    /// The per-point constants \\(c_k = \log p_k - \sum_i \log 2\cosh x_{ik}\\) of
    /// [`Mesh::log_sample_densities`] (\\(O(KN)\\)), to be computed once for repeated
    /// evaluations by [`Mesh::log_sample_densities_from`].
    ///
    /// # Errors
    /// As [`Mesh::log_probabilities`].
    pub fn sample_density_offsets(&self, log_weights: &[f64]) -> Result<Vec<f64>> {
        let lp = self.log_probabilities(log_weights)?;
        let nv = self.basis.n_visible();
        Ok((0..self.len())
            .into_par_iter()
            .map_init(
                || vec![0.0; nv],
                |x, k| {
                    self.basis.fields(self.mu.column(k).as_slice(), x);
                    lp[k] - x.iter().map(|&xi| log_2cosh(xi)).sum::<f64>()
                },
            )
            .collect())
    }

    /// [`Mesh::log_sample_densities`] from the constants of [`Mesh::sample_density_offsets`]:
    /// \\(\log q(v) = \log\sum_k e^{c_k + N\mu^*_k\cdot m(v)}\\), \\(O(Kd)\\) per column, without
    /// allocating per column (a running log-sum-exp).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `offsets` does not have one value per mesh
    /// point; as [`LowRankBasis::project`].
    pub fn log_sample_densities_from(&self, offsets: &[f64], v: &DMatrix<f64>) -> Result<Vec<f64>> {
        if offsets.len() != self.len() {
            return Err(Error::ShapeMismatch {
                what: "mesh offsets".into(),
                expected: format!("{}", self.len()),
                got: format!("{}", offsets.len()),
            });
        }
        let m = self.basis.project(v)?;
        let nv = self.basis.n_visible();
        let n = nv as f64;
        Ok(m.column_iter()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|mj| {
                // Running log-sum-exp: (max so far, sum of exp(a - max)).
                let (max, sum) = offsets.iter().zip(self.mu.column_iter()).fold(
                    (f64::NEG_INFINITY, 0.0),
                    |(max, sum), (c, mu)| {
                        let a = c + n * mu.dot(&mj);
                        if a == f64::NEG_INFINITY {
                            (max, sum)
                        } else if a <= max {
                            (max, sum + (a - max).exp())
                        } else {
                            (a, sum * (max - a).exp() + 1.0)
                        }
                    },
                );
                max + sum.ln()
            })
            .collect())
    }
}

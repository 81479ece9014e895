//! Low-rank pre-training with the Restricted Coulomb Machine (RCM) of *"Fast, accurate training
//! and sampling of Restricted Boltzmann Machines"* (paper 000, §4 and SI A, Eq. 19–27).
//!
//! The data are projected on \\(d\\) principal directions (optionally plus the bias direction
//! \\(u_0\\), the normalised data mean with its components on \\(u_1..u_d\\) removed), giving
//! magnetizations \\(m = Uv/\sqrt N\\) of \\(\pm1\\) configurations. A low-rank \\(\pm1\\) RBM
//! with \\(W = U^\top w\\) has marginal law in \\(m\\)
//! \\(p(m)\propto e^{N s(m) + N\theta\cdot m + \sum_a \log\cosh(q_a (n_a\cdot m + z_a))}\\)
//! (Eq. 21 with Eq. 24: \\(q_a = \sqrt N \lVert w_{\cdot a}\rVert\\), \\(n_a = w_{\cdot a}/
//! \lVert w_{\cdot a}\rVert\\), \\(z_a = \eta_a/q_a\\)). The RCM replaces
//! \\(\log\cosh x\\) by \\(|x| - \log 2\\) (Eq. 22) and fixes a family of hyperplanes
//! \\((n_a, z_a)\\); the log-likelihood of the projected data is then concave in
//! \\((N\theta, q)\\), with gradients (Eq. 25–26)
//! \\(\partial_{q_a} J = E_D|n_a\cdot m + z_a| - E_{\text{RCM}}|n_a\cdot m + z_a|\\) and
//! \\(\partial_{N\theta_\alpha} J = E_D m_\alpha - E_{\text{RCM}} m_\alpha\\), the model averages
//! taken on the [`Mesh`], the data averages over the data snapped to their nearest mesh points
//! (which keeps \\(J\\) bounded; [`RcmObjective`]). It is maximised over \\(q\ge 0\\) by
//! projected Newton steps (the
//! Hessian is minus the mesh covariance of the sufficient statistics) with a backtracking line
//! search, so the objective never decreases. Hyperplanes with \\(q_a\\) below a threshold (where
//! \\(\log\cosh\\) is not close to \\(|x| - \log 2\\)) are dropped and the rest refitted
//! (decimation), optionally keeping at most a given number of hidden units.
//!
//! [`Rcm::to_spin_rbm`] maps the result to an ordinary \\(\pm1\\) RBM (\\(w_{\alpha a} = q_a
//! n_{\alpha a}/\sqrt N\\), \\(\eta_a = q_a z_a\\), \\(W = U^\top w\\), \\(\theta_i = \sqrt N
//! (U^\top\theta)_i\\)); [`ebm_models::Rbm::reparametrise`] converts it to \\(\{0,1\}\\) units and
//! [`pad_hidden`] adds hidden units, after which the [`crate::Trainer`] continues with PCD.

use ebm_core::numerics::log_sum_exp;
use ebm_core::{Error, Par, Result, Scalar};
use ebm_data::pca::{Centering, Pca};
use ebm_estimators::{LogMeanExp, systematic_resampling_n};
use ebm_models::lowrank::{LowRankBasis, Mesh};
use ebm_models::{BinaryLayer, Layer, Rbm, Spin};
use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

fn invalid(name: &str, reason: String) -> Error {
    Error::InvalidParameter {
        name: name.into(),
        reason,
    }
}

/// A Restricted Coulomb Machine: hyperplanes \\(n_a\cdot m + z_a = 0\\) with weights
/// \\(q_a\ge0\\), and the projected visible field \\(\theta\\) (paper 000 Eq. 23–24).
#[derive(Clone, Debug, PartialEq)]
pub struct Rcm {
    /// Unit normals as columns (\\(d\times H\\)).
    pub normals: DMatrix<f64>,
    /// Offsets \\(z_a\\).
    pub offsets: Vec<f64>,
    /// Weights \\(q_a \ge 0\\).
    pub q: Vec<f64>,
    /// Projected visible field \\(\theta_\alpha\\) (the model has \\(e^{N\theta\cdot m}\\)).
    pub theta: Vec<f64>,
}

impl Rcm {
    /// Number of hyperplanes (hidden units).
    pub fn n_hidden(&self) -> usize {
        self.q.len()
    }

    /// The projected RBM parameters \\(w_{\alpha a} = q_a n_{\alpha a}/\sqrt N\\) (\\(d\times H\\))
    /// and \\(\eta_a = q_a z_a\\) (inverse of Eq. 24).
    pub fn projected(&self, n_visible: usize) -> (DMatrix<f64>, Vec<f64>) {
        let s = (n_visible as f64).sqrt();
        let mut w = self.normals.clone();
        for (a, mut col) in w.column_iter_mut().enumerate() {
            col *= self.q[a] / s;
        }
        let eta = self
            .q
            .iter()
            .zip(&self.offsets)
            .map(|(q, z)| q * z)
            .collect();
        (w, eta)
    }

    /// Eq. 24: the RCM of projected RBM parameters `w` (\\(d\times H\\)), `eta` and `theta`.
    /// A zero column of `w` gives \\(q_a = 0\\), \\(n_a = e_1\\), \\(z_a = 0\\).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the lengths disagree.
    pub fn from_projected(
        w: &DMatrix<f64>,
        eta: &[f64],
        theta: &[f64],
        n_visible: usize,
    ) -> Result<Self> {
        if eta.len() != w.ncols() || theta.len() != w.nrows() {
            return Err(Error::ShapeMismatch {
                what: "projected RBM parameters".into(),
                expected: format!("eta of {} and theta of {}", w.ncols(), w.nrows()),
                got: format!("{} and {}", eta.len(), theta.len()),
            });
        }
        let s = (n_visible as f64).sqrt();
        let mut normals = w.clone();
        let mut q = Vec::with_capacity(w.ncols());
        let mut offsets = Vec::with_capacity(w.ncols());
        for (a, mut col) in normals.column_iter_mut().enumerate() {
            let norm = col.norm();
            if norm > 0.0 {
                col /= norm;
                q.push(s * norm);
                offsets.push(eta[a] / (s * norm));
            } else {
                col.fill(0.0);
                col[0] = 1.0;
                q.push(0.0);
                offsets.push(0.0);
            }
        }
        Ok(Self {
            normals,
            offsets,
            q,
            theta: theta.to_vec(),
        })
    }

    /// The \\(\pm1\\) RBM of the RCM on `basis` (paper 000 SI A; the module documentation): its
    /// marginal in \\(m\\) is the RCM with \\(|x| - \log 2\\) replaced by \\(\log\cosh x\\).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the basis dimension differs from the RCM's.
    pub fn to_spin_rbm(&self, basis: &LowRankBasis) -> Result<Rbm<Spin, Spin>> {
        if basis.dim() != self.normals.nrows() {
            return Err(Error::ShapeMismatch {
                what: "RCM basis".into(),
                expected: format!("{} directions", self.normals.nrows()),
                got: format!("{}", basis.dim()),
            });
        }
        let n = basis.n_visible();
        let (w, eta) = self.projected(n);
        let u = basis.directions();
        let theta = u.transpose() * DVector::from_column_slice(&self.theta) * (n as f64).sqrt();
        Rbm::new(
            Spin::new(theta.as_slice().to_vec()),
            Spin::new(eta),
            u.transpose() * w,
        )
    }

    /// \\(\log\\) weights \\(N\theta\cdot m_k + \sum_a q_a|n_a\cdot m_k + z_a|\\) of the RCM on the
    /// mesh points (up to the constant \\(-H\log 2\\)).
    pub fn mesh_log_weights(&self, mesh: &Mesh) -> Vec<f64> {
        let stats = sufficient_statistics(mesh.points(), &self.normals, &self.offsets);
        let n = mesh.basis().n_visible() as f64;
        let y: Vec<f64> = self
            .theta
            .iter()
            .map(|t| n * t)
            .chain(self.q.iter().copied())
            .collect();
        (stats * DVector::from_vec(y)).as_slice().to_vec()
    }
}

/// Rows: points; columns: \\([m_1..m_d, |n_1\cdot m + z_1|, ..]\\).
fn sufficient_statistics(points: &DMatrix<f64>, normals: &DMatrix<f64>, z: &[f64]) -> DMatrix<f64> {
    let d = points.nrows();
    let k = points.ncols();
    let h = z.len();
    let proj = points.transpose() * normals; // k x h
    DMatrix::from_fn(k, d + h, |r, c| {
        if c < d {
            points[(c, r)]
        } else {
            (proj[(r, c - d)] + z[c - d]).abs()
        }
    })
}

/// The concave RCM objective for fixed hyperplanes: in natural parameters
/// \\(y = (N\theta, q)\\) and statistics \\(T(m) = (m, |n_a\cdot m + z_a|)\\),
/// \\(J(y) = y\cdot E_D T - \log\sum_k e^{\lambda_k + y\cdot T(m_k)}\\) (\\(\lambda_k\\) the
/// mesh prior, [`Mesh::log_prior`]), i.e. the mean log-likelihood of the projected data up to a
/// constant; \\(\nabla J = E_D T - E_{\text{mesh}} T\\) (Eq. 25–26).
///
/// The data enter snapped to their nearest mesh points ([`Mesh::snap`]): \\(E_D T\\) is an
/// average of mesh statistics, so it lies in their convex hull and \\(J\\) is bounded above
/// (\\(J\\) is then the log-likelihood of the data binned on the mesh, at most minus their
/// entropy). With the raw projections it is not: data beyond the converged mesh points (on 8x8
/// Ising configurations at \\(\beta = 0.44\\), \\(m_1 = \pm 1\\) where the outermost kept
/// points have \\(|m_1| = 0.94\\)) make \\(q|n\cdot m + z| + N\theta\cdot m\\) positive on the
/// data and zero on the whole mesh for a plane just inside them, \\(J\\) grows without bound
/// along it, and the ascent diverges (\\(q = 3\cdot10^8\\), exact \\(\log Z\\)
/// \\(3\cdot10^8\\)).
#[derive(Clone, Debug)]
pub struct RcmObjective {
    stats: DMatrix<f64>,
    data_mean: DVector<f64>,
    prior: Vec<f64>,
    d: usize,
    n_visible: usize,
}

impl RcmObjective {
    /// Builds the objective from the mesh, the projected data `data_m` (\\(d\times M\\)) and the
    /// hyperplanes (`normals` \\(d\times H\\), `offsets`).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] on inconsistent shapes; [`Error::InvalidParameter`] for no data.
    pub fn new(
        mesh: &Mesh,
        data_m: &DMatrix<f64>,
        normals: &DMatrix<f64>,
        offsets: &[f64],
    ) -> Result<Self> {
        let d = mesh.basis().dim();
        if data_m.nrows() != d || normals.nrows() != d || normals.ncols() != offsets.len() {
            return Err(Error::ShapeMismatch {
                what: "RCM objective".into(),
                expected: format!("{d} rows in data and normals, one offset per normal"),
                got: format!(
                    "data {}x{}, normals {}x{}, {} offsets",
                    data_m.nrows(),
                    data_m.ncols(),
                    normals.nrows(),
                    normals.ncols(),
                    offsets.len()
                ),
            });
        }
        if data_m.ncols() == 0 {
            return Err(invalid("data", "no samples".into()));
        }
        let ds = sufficient_statistics(&mesh.snap(data_m)?, normals, offsets);
        let data_mean = ds.row_mean().transpose();
        Ok(Self {
            stats: sufficient_statistics(mesh.points(), normals, offsets),
            data_mean,
            prior: mesh.log_prior(),
            d,
            n_visible: mesh.basis().n_visible(),
        })
    }

    /// Number of parameters \\(d + H\\).
    pub fn n_params(&self) -> usize {
        self.stats.ncols()
    }

    /// \\(J(y)\\), \\(\nabla J(y)\\) and the mesh probabilities \\(p_k\\).
    pub fn evaluate(&self, y: &[f64]) -> (f64, DVector<f64>, Vec<f64>) {
        let yv = DVector::from_column_slice(y);
        let l = &self.stats * &yv;
        let a: Vec<f64> = l.iter().zip(&self.prior).map(|(x, p)| x + p).collect();
        let lz = log_sum_exp(&a);
        let p: Vec<f64> = a.iter().map(|x| (x - lz).exp()).collect();
        let model = self.stats.tr_mul(&DVector::from_column_slice(&p));
        let j = yv.dot(&self.data_mean) - lz;
        (j, &self.data_mean - model, p)
    }

    /// Covariance of the statistics `cols` under the mesh law `p` (minus the Hessian of
    /// \\(J\\) restricted to them): \\(O(K\,|\text{cols}|^2)\\), so Newton steps cost only
    /// the free parameters (hyperplanes at \\(q = 0\\) with a negative gradient are left out).
    fn covariance(&self, p: &[f64], cols: &[usize]) -> DMatrix<f64> {
        let k = self.stats.nrows();
        let mut tw = DMatrix::zeros(k, cols.len());
        let mut mean = DVector::zeros(cols.len());
        for (c, &i) in cols.iter().enumerate() {
            let src = self.stats.column(i);
            let mut dst = tw.column_mut(c);
            let mut m = 0.0;
            for r in 0..k {
                m += p[r] * src[r];
                dst[r] = p[r].sqrt() * src[r];
            }
            mean[c] = m;
        }
        tw.tr_mul(&tw) - &mean * mean.transpose()
    }

    /// The natural parameters of an [`Rcm`] with these hyperplanes.
    pub fn natural(&self, theta: &[f64], q: &[f64]) -> Vec<f64> {
        let n = self.n_visible as f64;
        theta
            .iter()
            .map(|t| n * t)
            .chain(q.iter().copied())
            .collect()
    }
}

/// Settings of [`fit_rcm`].
#[derive(Clone, Debug, PartialEq)]
pub struct RcmConfig {
    /// Initial number of hyperplanes (paper 000 Table 5: 100).
    pub hyperplanes: usize,
    /// Decimation threshold: hyperplanes with \\(q_a\\) below it are dropped and the rest refitted.
    /// The default 5 corresponds to the reference code's \\(q > 500/N\\) in its normalisation
    /// (\\(q^{\text{code}}/N_h\\) inside the \\(N[\cdot]\\) bracket, \\(N_h = 100\\)); at
    /// \\(q = 5\\), \\(\log\cosh(qx)\\) and \\(q|x| - \log 2\\) differ by < 0.02 for \\(|x| > 0.2\\).
    pub min_q: f64,
    /// Keep at most this many hyperplanes (largest \\(q\\)) after decimation.
    pub max_hidden: Option<usize>,
    /// Maximum Newton iterations per fit.
    pub max_iter: usize,
    /// Stop when the projected gradient's \\(\infty\\)-norm is below this.
    pub tol: f64,
    /// Seed of the hyperplane family.
    pub seed: u64,
}

impl Default for RcmConfig {
    fn default() -> Self {
        Self {
            hyperplanes: 100,
            min_q: 5.0,
            max_hidden: None,
            max_iter: 500,
            tol: 1e-7,
            seed: 0,
        }
    }
}

/// What [`fit_rcm`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct RcmFit {
    /// The fitted machine (after decimation).
    pub rcm: Rcm,
    /// \\(J\\) after every accepted step, across all refits (non-decreasing within a fit).
    pub objective: Vec<f64>,
    /// Newton iterations in all.
    pub iterations: usize,
    /// Final projected-gradient \\(\infty\\)-norm.
    pub gradient_norm: f64,
    /// Hyperplanes dropped by decimation.
    pub dropped: usize,
    /// Number of fits (1 + refits after decimation).
    pub fits: usize,
}

/// Least fraction of the data that each hyperplane of [`hyperplane_family`] leaves on either
/// side. A plane that splits off only a few points at the edge of the mesh has a weight \\(q_a\\)
/// that the data hardly determine, and the fit can make it very large; the kink of such a plane
/// is then much sharper than the mesh spacing, and the mesh no longer represents the RBM (on 8x8
/// Ising data, \\(q = 186\\) on one plane and an exact \\(\log Z\\) 23 above the mesh one).
pub const MIN_SIDE_FRACTION: f64 = 0.1;

/// The fixed hyperplane family: Gaussian random normals in the span of the directions that carry
/// couplings (the bias direction, if any, is row 0 and gets a zero component), each through a
/// data point drawn among those whose projection on the normal lies between the
/// [`MIN_SIDE_FRACTION`] and \\(1 -\\) [`MIN_SIDE_FRACTION`] quantiles
/// (\\(z_a = -n_a\cdot m_j\\)), so the planes cut the data. [`fit_rcm`] passes the data snapped
/// to the mesh ([`Mesh::snap`]), so every plane passes through a mesh point.
///
/// # Errors
/// [`Error::InvalidParameter`] for zero hyperplanes or no coupled direction.
pub fn hyperplane_family(
    data_m: &DMatrix<f64>,
    count: usize,
    bias_direction: bool,
    seed: u64,
) -> Result<(DMatrix<f64>, Vec<f64>)> {
    let d = data_m.nrows();
    let first = usize::from(bias_direction);
    if count == 0 || d <= first || data_m.ncols() == 0 {
        return Err(invalid(
            "hyperplanes",
            format!("need >= 1 hyperplane, data and a coupled direction (d = {d})"),
        ));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut normals = DMatrix::zeros(d, count);
    let mut offsets = Vec::with_capacity(count);
    for a in 0..count {
        loop {
            for r in first..d {
                normals[(r, a)] = StandardNormal.sample(&mut rng);
            }
            let norm = normals.column(a).norm();
            if norm > 1e-8 {
                normals.column_mut(a).unscale_mut(norm);
                break;
            }
        }
        let mut proj: Vec<f64> = (data_m.transpose() * normals.column(a))
            .iter()
            .copied()
            .collect();
        proj.sort_by(f64::total_cmp);
        let lo = (MIN_SIDE_FRACTION * proj.len() as f64) as usize;
        let hi = (proj.len() - lo).max(lo + 1);
        offsets.push(-proj[rng.random_range(lo..hi)]);
    }
    Ok((normals, offsets))
}

fn optimise(
    obj: &RcmObjective,
    y: &mut [f64],
    cfg: &RcmConfig,
    trace: &mut Vec<f64>,
) -> (usize, f64) {
    let d = obj.d;
    let np = obj.n_params();
    let (mut j, mut g, mut p) = obj.evaluate(y);
    let proj_norm = |y: &[f64], g: &DVector<f64>| {
        (0..np)
            .map(|i| {
                if i >= d && y[i] <= 0.0 {
                    g[i].max(0.0)
                } else {
                    g[i].abs()
                }
            })
            .fold(0.0, f64::max)
    };
    trace.push(j);
    let mut it = 0;
    while it < cfg.max_iter && proj_norm(y, &g) > cfg.tol {
        it += 1;
        let free: Vec<usize> = (0..np)
            .filter(|&i| i < d || y[i] > 0.0 || g[i] > 0.0)
            .collect();
        let mut sub = obj.covariance(&p, &free);
        let ridge = 1e-10 * (1.0 + sub.diagonal().amax());
        for a in 0..free.len() {
            sub[(a, a)] += ridge;
        }
        let rhs = DVector::from_iterator(free.len(), free.iter().map(|&i| g[i]));
        let mut dir = vec![0.0; np];
        match sub.cholesky() {
            Some(c) => {
                let s = c.solve(&rhs);
                for (a, &i) in free.iter().enumerate() {
                    dir[i] = s[a];
                }
            }
            None => {
                for &i in &free {
                    dir[i] = g[i];
                }
            }
        }
        let mut improved = false;
        for use_gradient in [false, true] {
            if use_gradient {
                let scale = 1.0 / (1.0 + g.amax());
                for i in 0..np {
                    dir[i] = if free.contains(&i) { g[i] * scale } else { 0.0 };
                }
            }
            let mut t = 1.0;
            for _ in 0..40 {
                let trial: Vec<f64> = (0..np)
                    .map(|i| {
                        let v = y[i] + t * dir[i];
                        if i >= d { v.max(0.0) } else { v }
                    })
                    .collect();
                let (jt, gt, pt) = obj.evaluate(&trial);
                let gain: f64 = (0..np).map(|i| g[i] * (trial[i] - y[i])).sum();
                if jt.is_finite() && jt >= j + 1e-4 * gain.max(0.0) && jt >= j {
                    y.copy_from_slice(&trial);
                    (j, g, p) = (jt, gt, pt);
                    improved = true;
                    break;
                }
                t *= 0.5;
            }
            if improved {
                break;
            }
        }
        if !improved {
            break;
        }
        trace.push(j);
    }
    (it, proj_norm(y, &g))
}

/// Fits an RCM to the projected data `data_m` (\\(d\times M\\)) on `mesh` (module
/// documentation): hyperplanes from [`hyperplane_family`], projected Newton ascent from
/// \\(q = 0\\), \\(\theta = 0\\), then decimation and refits until every kept \\(q_a\ge\\)
/// `min_q` (and at most `max_hidden` remain).
///
/// # Errors
/// As [`hyperplane_family`] and [`RcmObjective::new`]; [`Error::InvalidParameter`] for a
/// non-finite `min_q`/`tol` or if decimation removes every hyperplane.
pub fn fit_rcm(
    mesh: &Mesh,
    data_m: &DMatrix<f64>,
    bias_direction: bool,
    cfg: &RcmConfig,
) -> Result<RcmFit> {
    if !(cfg.min_q.is_finite() && cfg.min_q >= 0.0 && cfg.tol.is_finite() && cfg.tol > 0.0) {
        return Err(invalid(
            "rcm config",
            format!(
                "min_q must be finite >= 0 and tol > 0, got {} and {}",
                cfg.min_q, cfg.tol
            ),
        ));
    }
    let (mut normals, mut offsets) = hyperplane_family(
        &mesh.snap(data_m)?,
        cfg.hyperplanes,
        bias_direction,
        cfg.seed,
    )?;
    let d = data_m.nrows();
    let n = mesh.basis().n_visible() as f64;
    let mut y = vec![0.0; d + offsets.len()];
    let mut trace = Vec::new();
    let mut iterations = 0;
    let mut fits = 0;
    let mut dropped = 0;
    loop {
        let obj = RcmObjective::new(mesh, data_m, &normals, &offsets)?;
        let (it, gn) = optimise(&obj, &mut y, cfg, &mut trace);
        iterations += it;
        fits += 1;
        let q = &y[d..];
        let mut keep: Vec<usize> = (0..q.len()).filter(|&a| q[a] >= cfg.min_q).collect();
        if let Some(cap) = cfg.max_hidden {
            keep.sort_by(|&a, &b| q[b].total_cmp(&q[a]).then(a.cmp(&b)));
            keep.truncate(cap);
            keep.sort_unstable();
        }
        if keep.is_empty() {
            return Err(invalid(
                "rcm decimation",
                format!("no hyperplane has q >= {}; lower min_q", cfg.min_q),
            ));
        }
        if keep.len() == q.len() || fits > 20 {
            let rcm = Rcm {
                normals,
                offsets,
                q: q.to_vec(),
                theta: y[..d].iter().map(|t| t / n).collect(),
            };
            return Ok(RcmFit {
                rcm,
                objective: trace,
                iterations,
                gradient_norm: gn,
                dropped,
                fits,
            });
        }
        dropped += q.len() - keep.len();
        normals = DMatrix::from_fn(d, keep.len(), |r, c| normals[(r, keep[c])]);
        offsets = keep.iter().map(|&a| offsets[a]).collect();
        y = y[..d]
            .iter()
            .copied()
            .chain(keep.iter().map(|&a| y[d + a]))
            .collect();
    }
}

/// The low-rank basis of ±1 data `spins` (\\(N\times M\\)): the first `d` principal directions
/// (uncentred PCA), or with `bias` the centred PCA plus \\(u_0\\) = the data mean minus its
/// components on \\(u_1..u_d\\), normalised, as row 0 (paper 000 §1.6, SI A.3).
///
/// # Errors
/// [`Error::InvalidParameter`] if `d` is not in 1..=4, PCA fails, or the mean lies in the span.
pub fn lowrank_basis(spins: &DMatrix<f64>, d: usize, bias: bool) -> Result<LowRankBasis> {
    if !(1..=4).contains(&d) {
        return Err(invalid("directions", format!("expected 1..=4, got {d}")));
    }
    let centering = if bias {
        Centering::Centered
    } else {
        Centering::Uncentered
    };
    let pca = Pca::fit(spins, None, d, centering).map_err(|e| invalid("pca", e.to_string()))?;
    let comps = pca.components().transpose(); // d x N
    if !bias {
        return LowRankBasis::new(comps);
    }
    let mean = spins.column_mean();
    let mut b = mean.clone();
    for r in comps.row_iter() {
        let r = r.transpose();
        b -= &r * r.dot(&mean);
    }
    let norm = b.norm();
    if norm < 1e-8 * (1.0 + mean.norm()) {
        return Err(invalid(
            "bias direction",
            "the data mean lies in the span of the principal directions".into(),
        ));
    }
    let mut u = DMatrix::zeros(d + 1, spins.nrows());
    u.row_mut(0).copy_from(&(b / norm).transpose());
    u.rows_mut(1, d).copy_from(&comps);
    LowRankBasis::new(u)
}

/// Settings of [`pretrain_rcm`].
#[derive(Clone, Debug, PartialEq)]
pub struct PretrainConfig {
    /// Principal directions \\(d\\) (1..=4).
    pub directions: usize,
    /// Add the bias direction \\(u_0\\).
    pub bias: bool,
    /// Mesh points per axis (the box of attainable magnetizations).
    pub points_per_dim: usize,
    /// The RCM fit.
    pub rcm: RcmConfig,
}

/// The outcome of [`pretrain_rcm`].
#[derive(Clone, Debug)]
pub struct Pretrained {
    /// The low-rank basis (row 0 is \\(u_0\\) with `bias`).
    pub basis: LowRankBasis,
    /// Whether row 0 of the basis is the bias direction \\(u_0\\).
    pub bias: bool,
    /// The mesh.
    pub mesh: Mesh,
    /// The RCM fit.
    pub fit: RcmFit,
    /// The \\(\pm1\\) RBM of the RCM.
    pub rbm: Rbm<Spin, Spin>,
    /// Its low-rank \\(\log Z\\) on the mesh ([`Mesh::log_partition`] with the exact
    /// \\(\log\cosh\\) marginal energy).
    pub log_z_mesh: f64,
}

/// The pipeline of paper 000 §4 / SI A on ±1 data `spins` (\\(N\times M\\)): basis, mesh, RCM
/// fit with decimation, map to a ±1 RBM and its mesh \\(\log Z\\). Convert to \\(\{0,1\}\\) with
/// [`Rbm::reparametrise`] and add units with [`pad_hidden`].
///
/// # Errors
/// As [`lowrank_basis`], [`Mesh::grid`] and [`fit_rcm`]; [`Error::InvalidParameter`] if
/// `spins` holds values other than ±1.
pub fn pretrain_rcm(spins: &DMatrix<f64>, cfg: &PretrainConfig, par: Par) -> Result<Pretrained> {
    if let Some(i) = spins.iter().position(|&x| x != 1.0 && x != -1.0) {
        return Err(invalid(
            "data",
            format!("expected ±1 values, found {} at flat index {i}", spins[i]),
        ));
    }
    let basis = lowrank_basis(spins, cfg.directions, cfg.bias)?;
    let mesh = Mesh::grid(&basis, cfg.points_per_dim, par)?;
    let data_m = basis.project(spins)?;
    let fit = fit_rcm(&mesh, &data_m, cfg.bias, &cfg.rcm)?;
    let rbm = fit.rcm.to_spin_rbm(&basis)?;
    let log_z_mesh = mesh.log_partition(&mesh.rbm_log_weights(&rbm)?)?;
    Ok(Pretrained {
        basis,
        bias: cfg.bias,
        mesh,
        fit,
        rbm,
        log_z_mesh,
    })
}

/// Appends hidden units up to `total` with zero fields and weights \\(\mathcal N(0, \sigma^2)\\)
/// (seeded), as the reference code does before PCD (paper 000 SI A).
///
/// # Errors
/// [`Error::InvalidParameter`] if `total` is below the current size or `std` is negative.
pub fn pad_hidden<V, H>(rbm: &Rbm<V, H>, total: usize, std: f64, seed: u64) -> Result<Rbm<V, H>>
where
    V: BinaryLayer,
    H: BinaryLayer<Scalar = V::Scalar>,
{
    let (nv, nh) = rbm.weights().shape();
    if total < nh || std.is_nan() || std < 0.0 {
        return Err(invalid(
            "pad_hidden",
            format!("total {total} must be >= {nh} and std {std} >= 0"),
        ));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut w = DMatrix::from_element(nv, total, V::Scalar::from_f64(0.0));
    for j in 0..total {
        for i in 0..nv {
            w[(i, j)] = if j < nh {
                rbm.weights()[(i, j)]
            } else {
                let x: f64 = StandardNormal.sample(&mut rng);
                V::Scalar::from_f64(std * x)
            };
        }
    }
    let mut fields = rbm.hidden().fields().to_vec();
    fields.resize(total, V::Scalar::from_f64(0.0));
    Rbm::new(rbm.visible().clone(), H::with_fields(fields), w)
}

/// Appends hidden units up to `total` whose weight columns lie in the span of `basis`:
/// \\(W_{\cdot j} = U^\top r_j\\) with \\(r_{\alpha j}\sim\mathcal N(0, \sigma^2 N/D)\\) (\\(D\\)
/// rows of \\(U\\), so \\(E\lVert W_{\cdot j}\rVert^2 = \sigma^2 N\\) as for [`pad_hidden`]) and
/// zero fields. The padded model is still a low-rank RBM on `basis` (its marginal energy depends
/// on \\(v\\) only through \\(m = Uv/\sqrt N\\)), so its \\(\log Z\\) is known on the mesh and
/// [`Mesh::sample`] draws from it; the random directions \\(r_j\\) break the symmetry between
/// the new units, which PCD then moves out of the span. For \\(\{0,1\}\\) layers the span is that
/// of the \\(\pm1\\) form (the same, since reparametrising only rescales \\(W\\) and adds
/// multiples of its columns to the visible fields).
///
/// # Errors
/// [`Error::InvalidParameter`] as [`pad_hidden`]; [`Error::ShapeMismatch`] if `basis` has another
/// number of visible units.
pub fn pad_hidden_in_span<V, H>(
    rbm: &Rbm<V, H>,
    basis: &LowRankBasis,
    total: usize,
    std: f64,
    seed: u64,
) -> Result<Rbm<V, H>>
where
    V: BinaryLayer,
    H: BinaryLayer<Scalar = V::Scalar>,
{
    let (nv, nh) = rbm.weights().shape();
    if basis.n_visible() != nv {
        return Err(Error::ShapeMismatch {
            what: "low-rank basis".into(),
            expected: format!("{nv} visible units"),
            got: format!("{}", basis.n_visible()),
        });
    }
    if total < nh || std.is_nan() || std < 0.0 {
        return Err(invalid(
            "pad_hidden_in_span",
            format!("total {total} must be >= {nh} and std {std} >= 0"),
        ));
    }
    let u = basis.directions();
    let scale = std * (nv as f64 / u.nrows() as f64).sqrt();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let r = DMatrix::from_fn(u.nrows(), total - nh, |_, _| {
        let z: f64 = StandardNormal.sample(&mut rng);
        scale * z
    });
    let extra = u.transpose() * r;
    let w = DMatrix::from_fn(nv, total, |i, j| {
        if j < nh {
            rbm.weights()[(i, j)]
        } else {
            V::Scalar::from_f64(extra[(i, j - nh)])
        }
    });
    let mut fields = rbm.hidden().fields().to_vec();
    fields.resize(total, V::Scalar::from_f64(0.0));
    Rbm::new(rbm.visible().clone(), H::with_fields(fields), w)
}

/// A pretrained starting point for PCD in the binary unit kinds `V`, `H` (paper 000 §4, SI A
/// steps 7–9): the RCM fit on the data, its RBM reparametrised to `V`, `H` and padded in the
/// span of the basis ([`pad_hidden_in_span`], so it is still low-rank), its mesh \\(\log Z\\),
/// and the static sampler of it for the initial persistent chains.
#[derive(Clone, Debug)]
pub struct PretrainedStart<V: Layer, H: Layer<Scalar = V::Scalar>> {
    /// The pipeline's outcome ([`pretrain_rcm`]).
    pub pretrained: Pretrained,
    /// The padded RBM in the training units: the initial model of PCD.
    pub model: Rbm<V, H>,
    /// The model's log-weights on the mesh ([`Mesh::rbm_log_weights`] of its \\(\pm1\\) form).
    pub log_weights: Vec<f64>,
    /// The model's \\(\log Z\\) from the mesh ([`Mesh::log_partition`], minus the
    /// reparametrisation's energy offset).
    pub log_z_mesh: f64,
    /// The lower state of `V` (0 or -1).
    low: f64,
}

impl<V, H> PretrainedStart<V, H>
where
    V: BinaryLayer<Scalar = f64>,
    H: BinaryLayer<Scalar = f64>,
{
    /// Runs [`pretrain_rcm`] on `data` (\\(N\times M\\), values in `V`'s states, e.g. \\(\{0,1\}\\)
    /// for [`ebm_models::Bernoulli`]), with at most `hidden` hyperplanes kept, converts the RBM
    /// to `V`, `H` and pads it to `hidden` units with [`pad_hidden_in_span`] (standard deviation
    /// \\(10^{-4}\\), as the reference code's padding, seeded with `seed`).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `data` holds a value that is not one of `V`'s two states
    /// (named with its position) or `hidden` is 0; otherwise as [`pretrain_rcm`].
    pub fn new(
        data: &DMatrix<f64>,
        cfg: &PretrainConfig,
        hidden: usize,
        seed: u64,
        par: Par,
    ) -> Result<Self> {
        let low = V::LOW;
        if let Some(k) = data.iter().position(|&x| x != low && x != 1.0) {
            let (i, j) = (k % data.nrows(), k / data.nrows());
            return Err(invalid(
                "data",
                format!(
                    "RCM pre-training needs binary data in the visible units' states {{{low}, 1}}, \
                     found {} at sample {j}, feature {i}",
                    data[k]
                ),
            ));
        }
        if hidden == 0 {
            return Err(invalid("hidden", "needs at least one hidden unit".into()));
        }
        let spins = data.map(|x| if x == 1.0 { 1.0 } else { -1.0 });
        let mut cfg = cfg.clone();
        cfg.rcm.max_hidden = Some(cfg.rcm.max_hidden.map_or(hidden, |m| m.min(hidden)));
        let pretrained = pretrain_rcm(&spins, &cfg, par)?;
        let converted = pretrained.rbm.reparametrise::<V, H>().rbm;
        let model = pad_hidden_in_span(&converted, &pretrained.basis, hidden, 1e-4, seed)?;
        let spin = model.reparametrise::<Spin, Spin>();
        let log_weights = pretrained.mesh.rbm_log_weights(&spin.rbm)?;
        let log_z_mesh = pretrained.mesh.log_partition(&log_weights)? - spin.energy_offset;
        Ok(Self {
            pretrained,
            model,
            log_weights,
            log_z_mesh,
            low,
        })
    }
}

impl<V, H> PretrainedStart<V, H>
where
    V: Layer<Scalar = f64>,
    H: Layer<Scalar = f64>,
{
    /// Static draws of [`PretrainedStart::model`] ([`Mesh::sample`]): one visible configuration
    /// per RNG stream, as columns, in `V`'s states. Draw \\(j\\) uses `rngs[j]` only.
    ///
    /// # Errors
    /// As [`Mesh::sample`].
    pub fn draw_visible<R: Rng>(&self, rngs: &mut [R]) -> Result<DMatrix<f64>> {
        let (v, _) = self.pretrained.mesh.sample(&self.log_weights, rngs)?;
        let low = self.low;
        Ok(v.map(|s| if s > 0.0 { 1.0 } else { low }))
    }

    /// How well the static sampler represents [`PretrainedStart::model`]: importance sampling
    /// of \\(e^{-F(v)}\\) by the sampler's own law \\(q\\) ([`Mesh::log_sample_densities`]),
    /// one static draw per RNG stream.
    ///
    /// The RCM is fitted on the mesh, and the static sampler draws the mesh's saddle-point
    /// law, which equals the RBM's only as the mesh is refined and \\(N\\) grows. The weights
    /// \\(w_j = e^{-F(v_j)}/q(v_j)\\) are all equal to \\(Z\\) when the two laws agree, so their
    /// log-mean-exp estimates \\(\log Z\\) for any number of hidden units, and their relative
    /// ESS measures the mismatch. Measured on MNIST 0/1 (784 pixels, 20 hidden units, 3
    /// directions plus the bias on a mesh of \\(17^4\\) points) the two laws differ by 7.9 nats
    /// of \\(\log Z\\) and put 0.55 and 0.75 on the digit 1: persistent chains started from
    /// static draws then do not sample the model they start (book, *Low-rank pre-training*).
    ///
    /// # Errors
    /// As [`Mesh::sample`].
    pub fn check_static<R: Rng>(&self, rngs: &mut [R], par: Par) -> Result<StaticCheck> {
        let (_, log_w) = self.weighted_draws(rngs, 1, par)?;
        Ok(StaticCheck {
            log_z: LogMeanExp::of(&log_w),
        })
    }

    /// Static draws corrected to [`PretrainedStart::model`] by importance resampling: for each
    /// RNG stream `oversample` static draws, weighed as in [`PretrainedStart::check_static`],
    /// then one draw per stream kept by systematic resampling on the normalised weights (one
    /// uniform from `rngs[0]`). As the pool grows the kept draws follow the model's law, the
    /// proportions of its modes included, whatever the mesh's saddle-point error, as long as
    /// the sampler covers the model's support; the returned check says how many draws
    /// effectively count. Same streams, same draws.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `oversample` 0 or no streams; otherwise as
    /// [`Mesh::sample`].
    pub fn draw_visible_resampled<R: Rng>(
        &self,
        rngs: &mut [R],
        oversample: usize,
        par: Par,
    ) -> Result<(DMatrix<f64>, StaticCheck)> {
        if oversample == 0 || rngs.is_empty() {
            return Err(Error::InvalidParameter {
                name: "oversample".into(),
                reason: "importance resampling needs at least one draw per stream".into(),
            });
        }
        let (pool, log_w) = self.weighted_draws(rngs, oversample, par)?;
        let check = StaticCheck {
            log_z: LogMeanExp::of(&log_w),
        };
        let u = rngs[0].random::<f64>();
        let kept = systematic_resampling_n(&log_w, rngs.len(), u);
        let out = pool.select_columns(&kept);
        Ok((out, check))
    }

    /// `oversample` static draws per stream (in `V`'s states) and their log importance
    /// weights \\(-F(v) - \log q(v)\\) against the model.
    fn weighted_draws<R: Rng>(
        &self,
        rngs: &mut [R],
        oversample: usize,
        par: Par,
    ) -> Result<(DMatrix<f64>, Vec<f64>)> {
        let mesh = &self.pretrained.mesh;
        let n = rngs.len();
        let mut spins = DMatrix::zeros(mesh.basis().n_visible(), n * oversample);
        for r in 0..oversample {
            let (s, _) = mesh.sample(&self.log_weights, rngs)?;
            spins.columns_mut(r * n, n).copy_from(&s);
        }
        let log_q = mesh.log_sample_densities(&self.log_weights, &spins)?;
        let low = self.low;
        let v = spins.map(|s| if s > 0.0 { 1.0 } else { low });
        let mut f = vec![0.0; v.ncols()];
        self.model.free_energy_visible(&v, 1.0, &mut f, par);
        let log_w = f.iter().zip(&log_q).map(|(f, q)| -f - q).collect();
        Ok((v, log_w))
    }

    /// The data and `n` static draws projected on the first two coupled directions (rows 1 and
    /// 2 of the basis with the bias direction, rows 0 and 1 without; row 0 and 1 when there is
    /// only one coupled direction), as \\((m_a, m_b)\\) points, with the row indices used.
    ///
    /// # Errors
    /// As [`PretrainedStart::draw_visible`] and [`LowRankBasis::project`].
    pub fn projections<R: Rng>(
        &self,
        data: &DMatrix<f64>,
        rngs: &mut [R],
    ) -> Result<ProjectedPair> {
        let basis = &self.pretrained.basis;
        let rows = if self.pretrained.bias && basis.dim() > 2 {
            (1, 2)
        } else {
            (0, 1.min(basis.dim() - 1))
        };
        let spins = |x: &DMatrix<f64>| x.map(|v| if v == 1.0 { 1.0 } else { -1.0 });
        let pairs = |m: DMatrix<f64>| -> Vec<(f64, f64)> {
            m.column_iter().map(|c| (c[rows.0], c[rows.1])).collect()
        };
        let model = pairs(basis.project(&spins(&self.draw_visible(rngs)?))?);
        let data = pairs(basis.project(&spins(data))?);
        Ok(ProjectedPair { rows, data, model })
    }
}

/// Relative ESS below which [`StaticCheck::trusted`] fails: fewer than one static draw in ten
/// counts, so the draws' proportions (of the modes, among others) are not the model's.
pub const MIN_STATIC_RELATIVE_ESS: f64 = 0.1;

/// The outcome of [`PretrainedStart::check_static`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StaticCheck {
    /// \\(\log Z\\) of the model by importance sampling from the static sampler, with its
    /// delta-method error and Kish ESS.
    pub log_z: LogMeanExp,
}

impl StaticCheck {
    /// ESS over the number of draws, in \\([1/n, 1]\\); 1 when the sampler's law is the model's.
    pub fn relative_ess(&self) -> f64 {
        self.log_z.ess / self.log_z.n as f64
    }

    /// Whether the static draws represent the model ([`MIN_STATIC_RELATIVE_ESS`]).
    pub fn trusted(&self) -> bool {
        self.relative_ess() >= MIN_STATIC_RELATIVE_ESS
    }
}

/// Projections of data and model draws on two directions of a low-rank basis
/// ([`PretrainedStart::projections`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectedPair {
    /// The two rows of the basis.
    pub rows: (usize, usize),
    /// \\((m_a, m_b)\\) of each data sample.
    pub data: Vec<(f64, f64)>,
    /// \\((m_a, m_b)\\) of each static draw of the model.
    pub model: Vec<(f64, f64)>,
}

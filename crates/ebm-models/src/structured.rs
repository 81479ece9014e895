//! The structured multimodal RBM and its large-\\(N\\) landscape (paper "Alternating Gibbs
//! sampling in restricted Boltzmann machines: free-energy barriers, analytic models and moves
//! in latent space", Sec. III C, Eqs. 42–61; Roussel, Cocco and
//! Monasson), and Walsh–Hadamard patterns for the Hopfield model.
//!
//! Every visible spin connects to one or two of \\(M\\) quadratic hidden units, always with
//! weight \\(w/\sqrt N\\). A fraction \\(\alpha_{\mu\mu}\\) of the spins connects only to
//! \\(h_\mu\\) and a fraction \\(\alpha_{\mu\nu}\\) to both \\(h_\mu\\) and \\(h_\nu\\) (Eq. 43).
//! With hidden values rescaled by \\(\sqrt N\\), the hidden-space effective energy per spin is
//!
//! \\[ e(h) = \sum_\mu \frac{h_\mu^2}{2} - \sum_\mu \alpha_{\mu\mu}\log 2\cosh(w h_\mu)
//!     - \sum_{\mu<\nu}\alpha_{\mu\nu}\log 2\cosh\big(w(h_\mu + h_\nu)\big), \\]
//!
//! whose critical points coincide with those of the free energy \\(f(\mathbf m)\\) of Eq. (47)
//! (with \\(m_{\mu\mu} = \tanh(w h_\mu)\\), \\(m_{\mu\nu} = \tanh(w(h_\mu + h_\nu))\\)), with
//! equal values. The optimal large-\\(T\\) AGS path between minima costs the sum of the uphill
//! free-energy increments along a sequence of critical points (Eq. 56): a small overlap makes
//! flipping the hidden units one at a time cheaper than flipping them together, and on a ring of
//! overlaps the cheapest order follows the ring.

use crate::{Gaussian, Rbm, Spin};
use ebm_core::Error;
use ebm_core::numerics::log_2cosh;
use nalgebra::{DMatrix, DVector};

/// The structured model: weight scale \\(w\\) and the symmetric \\(M \times M\\) matrix of
/// block fractions \\(\alpha_{\mu\nu}\\) (module documentation), quadratic hidden units
/// \\(\mathcal U(h) = h^2/2\\).
#[derive(Clone, Debug, PartialEq)]
pub struct Structured {
    w: f64,
    overlaps: DMatrix<f64>,
}

/// The diagonal fraction of a ring of overlaps (the AGS paper).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingDiagonal {
    /// \\(\alpha_{\mu\mu} = 1/M - \alpha\\): the fractions partition the spins.
    Partition,
    /// \\(\alpha_{\mu\mu} = 1/M - (M-1)\alpha/2\\) as printed in the paper (the all-pairs
    /// normalisation; for a ring with \\(M \ge 4\\) the fractions do not sum to 1).
    Paper,
}

/// A critical point of \\(e(h)\\).
#[derive(Clone, Debug, PartialEq)]
pub struct CriticalPoint {
    /// Hidden values (rescaled by \\(\sqrt N\\)).
    pub h: Vec<f64>,
    /// \\(e(h)\\).
    pub energy: f64,
    /// Morse index: the number of negative Hessian eigenvalues (0 for a minimum, 1 for a
    /// saddle crossed by a minimum-energy path).
    pub index: usize,
}

/// One flip of [`Structured::flip_sequence`].
#[derive(Clone, Debug, PartialEq)]
pub struct Flip {
    /// The flipped hidden unit.
    pub unit: usize,
    /// The highest point of the minimum-energy path (a saddle of \\(e\\)).
    pub saddle: CriticalPoint,
    /// The minimum reached.
    pub minimum: CriticalPoint,
    /// The uphill increment \\(e(\text{saddle}) - e(\text{current})\\).
    pub barrier: f64,
}

impl Structured {
    /// A model from its block fractions: `overlaps[(mu, nu)]` \\(= \alpha_{\mu\nu}\\).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a non-positive or non-finite `w`, an empty or
    /// non-square matrix, a negative, non-finite or asymmetric entry, or fractions summing
    /// (over \\(\mu \le \nu\\)) to more than 1.
    pub fn new(w: f64, overlaps: DMatrix<f64>) -> ebm_core::Result<Self> {
        let bad = |reason: String| Error::InvalidParameter {
            name: "structured model".into(),
            reason,
        };
        if !(w.is_finite() && w > 0.0) {
            return Err(bad(format!("w must be finite and > 0, got {w}")));
        }
        let m = overlaps.nrows();
        if m == 0 || overlaps.ncols() != m {
            return Err(bad(format!(
                "the overlap matrix must be square and non-empty, got {} x {}",
                m,
                overlaps.ncols()
            )));
        }
        for mu in 0..m {
            for nu in 0..m {
                let a = overlaps[(mu, nu)];
                if !(a.is_finite() && a >= 0.0) {
                    return Err(bad(format!(
                        "alpha[{mu}][{nu}] = {a}, expected a finite fraction >= 0"
                    )));
                }
                if (a - overlaps[(nu, mu)]).abs() > 1e-12 {
                    return Err(bad(format!(
                        "alpha[{mu}][{nu}] = {a} differs from alpha[{nu}][{mu}] = {}",
                        overlaps[(nu, mu)]
                    )));
                }
            }
        }
        let s = upper_sum(&overlaps);
        if s > 1.0 + 1e-9 {
            return Err(bad(format!(
                "the fractions alpha[mu][nu] (mu <= nu) sum to {s} > 1"
            )));
        }
        Ok(Self { w, overlaps })
    }

    /// Overlaps \\(\alpha\\) between neighbours on a ring of `m` hidden units (\\(\mu\\) and
    /// \\(\mu \pm 1 \bmod M\\)), with the diagonal of `diagonal` (Sec. III C 4).
    ///
    /// # Errors
    /// As [`Structured::new`], and [`Error::InvalidParameter`] for `m < 3` or a negative
    /// diagonal.
    pub fn ring(m: usize, w: f64, alpha: f64, diagonal: RingDiagonal) -> ebm_core::Result<Self> {
        if m < 3 {
            return Err(Error::InvalidParameter {
                name: "m".into(),
                reason: format!("a ring needs at least 3 hidden units, got {m}"),
            });
        }
        let d = match diagonal {
            RingDiagonal::Partition => 1.0 / m as f64 - alpha,
            RingDiagonal::Paper => 1.0 / m as f64 - (m as f64 - 1.0) * alpha / 2.0,
        };
        let mut a = DMatrix::zeros(m, m);
        for mu in 0..m {
            a[(mu, mu)] = d;
            a[(mu, (mu + 1) % m)] = alpha;
            a[((mu + 1) % m, mu)] = alpha;
        }
        Self::new(w, a)
    }

    /// Overlap \\(\alpha\\) between every pair of `m` hidden units, diagonal
    /// \\(1/M - (M-1)\alpha/2\\) so the fractions sum to 1 (Sec. III C; for \\(M = 2\\) this is
    /// the Fig. 6 model, \\(\alpha_{11} = \alpha_{22} = (1-\alpha)/2\\)).
    ///
    /// # Errors
    /// As [`Structured::new`] (e.g. a negative diagonal).
    pub fn all_pairs(m: usize, w: f64, alpha: f64) -> ebm_core::Result<Self> {
        let d = 1.0 / m.max(1) as f64 - (m as f64 - 1.0) * alpha / 2.0;
        let a = DMatrix::from_fn(m, m, |i, j| if i == j { d } else { alpha });
        Self::new(w, a)
    }

    /// The model of a finite adjacency \\(a_{i\mu} \in \{0, 1\}\\) (`N x M`, Eq. 42): the
    /// fractions of Eq. (43).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an entry other than 0 or 1, a spin connected to no
    /// hidden unit or to more than two, or no spins; errors of [`Structured::new`].
    pub fn from_adjacency(adjacency: &DMatrix<f64>, w: f64) -> ebm_core::Result<Self> {
        let (n, m) = adjacency.shape();
        if n == 0 || m == 0 {
            return Err(Error::InvalidParameter {
                name: "adjacency".into(),
                reason: format!("needs at least one spin and one hidden unit, got {n} x {m}"),
            });
        }
        let mut a = DMatrix::zeros(m, m);
        for i in 0..n {
            let row: Vec<usize> = (0..m).filter(|&mu| adjacency[(i, mu)] == 1.0).collect();
            if let Some(mu) = (0..m).find(|&mu| !matches!(adjacency[(i, mu)], 0.0 | 1.0)) {
                return Err(Error::InvalidParameter {
                    name: "adjacency".into(),
                    reason: format!(
                        "entry ({i}, {mu}) is {}, expected 0 or 1",
                        adjacency[(i, mu)]
                    ),
                });
            }
            match row.as_slice() {
                [mu] => a[(*mu, *mu)] += 1.0,
                [mu, nu] => {
                    a[(*mu, *nu)] += 1.0;
                    a[(*nu, *mu)] += 1.0;
                }
                _ => {
                    return Err(Error::InvalidParameter {
                        name: "adjacency".into(),
                        reason: format!(
                            "spin {i} connects to {} hidden units, expected 1 or 2",
                            row.len()
                        ),
                    });
                }
            }
        }
        Self::new(w, a / n as f64)
    }

    /// The weight scale \\(w\\).
    pub fn w(&self) -> f64 {
        self.w
    }

    /// Number of hidden units \\(M\\).
    pub fn n_hidden(&self) -> usize {
        self.overlaps.nrows()
    }

    /// The block fractions \\(\alpha_{\mu\nu}\\).
    pub fn overlaps(&self) -> &DMatrix<f64> {
        &self.overlaps
    }

    /// Integer block sizes for `n` spins: `sizes[(mu, nu)]` spins connect to \\(\mu\\) and
    /// \\(\nu\\) (symmetric; the diagonal holds the single-unit blocks), by largest-remainder
    /// rounding of \\(\alpha_{\mu\nu} n\\) so that the sizes (\\(\mu \le \nu\\)) sum to `n`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `n == 0` or if the fractions do not sum to 1 (they must
    /// partition the spins, e.g. not [`RingDiagonal::Paper`] for \\(M \ge 4\\)).
    pub fn block_sizes(&self, n: usize) -> ebm_core::Result<DMatrix<usize>> {
        let s = upper_sum(&self.overlaps);
        if n == 0 || (s - 1.0).abs() > 1e-9 {
            return Err(Error::InvalidParameter {
                name: "block sizes".into(),
                reason: format!("need n > 0 and fractions summing to 1; got n = {n}, sum = {s}"),
            });
        }
        let m = self.n_hidden();
        let mut cells = Vec::new();
        for mu in 0..m {
            for nu in mu..m {
                let x = self.overlaps[(mu, nu)] * n as f64;
                cells.push((mu, nu, x.floor() as usize, x - x.floor()));
            }
        }
        let assigned: usize = cells.iter().map(|c| c.2).sum();
        let mut by_remainder: Vec<usize> = (0..cells.len()).collect();
        by_remainder.sort_by(|&a, &b| cells[b].3.total_cmp(&cells[a].3).then(a.cmp(&b)));
        for &k in by_remainder.iter().take(n.saturating_sub(assigned)) {
            cells[k].2 += 1;
        }
        let mut sizes = DMatrix::zeros(m, m);
        for (mu, nu, c, _) in cells {
            sizes[(mu, nu)] = c;
            sizes[(nu, mu)] = c;
        }
        Ok(sizes)
    }

    /// The `n x M` adjacency of [`Structured::block_sizes`]: spins in blocks, first the
    /// single-unit blocks \\(\mu = 0, 1, \dots\\), then the pairs \\(\mu < \nu\\) in
    /// lexicographic order.
    ///
    /// # Errors
    /// As [`Structured::block_sizes`].
    pub fn adjacency(&self, n: usize) -> ebm_core::Result<DMatrix<f64>> {
        let sizes = self.block_sizes(n)?;
        let m = self.n_hidden();
        let mut a = DMatrix::zeros(n, m);
        let mut i = 0;
        for mu in 0..m {
            for _ in 0..sizes[(mu, mu)] {
                a[(i, mu)] = 1.0;
                i += 1;
            }
        }
        for mu in 0..m {
            for nu in mu + 1..m {
                for _ in 0..sizes[(mu, nu)] {
                    a[(i, mu)] = 1.0;
                    a[(i, nu)] = 1.0;
                    i += 1;
                }
            }
        }
        Ok(a)
    }

    /// The finite RBM with `n` spins: spin visibles without fields, \\(M\\) standard Gaussian
    /// hidden units and \\(W_{i\mu} = (w/\sqrt n)\, a_{i\mu}\\) with the adjacency of
    /// [`Structured::adjacency`].
    ///
    /// # Errors
    /// As [`Structured::block_sizes`].
    pub fn to_rbm(&self, n: usize) -> ebm_core::Result<Rbm<Spin<f64>, Gaussian<f64>>> {
        let a = self.adjacency(n)?;
        Rbm::new(
            Spin::new(vec![0.0; n]),
            Gaussian::standard(self.n_hidden()),
            a * (self.w / (n as f64).sqrt()),
        )
    }

    /// The hidden-space energy per spin \\(e(h)\\) (module documentation).
    ///
    /// # Panics
    /// If `h.len() != M`.
    pub fn energy(&self, h: &[f64]) -> f64 {
        let m = self.n_hidden();
        assert_eq!(h.len(), m, "Structured::energy: one value per hidden unit");
        let w = self.w;
        let mut e = 0.0;
        for mu in 0..m {
            e += 0.5 * h[mu] * h[mu] - self.overlaps[(mu, mu)] * log_2cosh(w * h[mu]);
            for nu in mu + 1..m {
                e -= self.overlaps[(mu, nu)] * log_2cosh(w * (h[mu] + h[nu]));
            }
        }
        e
    }

    /// The gradient of \\(e(h)\\):
    /// \\(h_\mu - w\alpha_{\mu\mu}\tanh(wh_\mu) - w\sum_{\nu\ne\mu}\alpha_{\mu\nu}\tanh(w(h_\mu+h_\nu))\\).
    pub fn gradient(&self, h: &[f64]) -> Vec<f64> {
        let m = self.n_hidden();
        let w = self.w;
        (0..m)
            .map(|mu| {
                let mut g = h[mu] - w * self.overlaps[(mu, mu)] * (w * h[mu]).tanh();
                for nu in (0..m).filter(|&nu| nu != mu) {
                    g -= w * self.overlaps[(mu, nu)] * (w * (h[mu] + h[nu])).tanh();
                }
                g
            })
            .collect()
    }

    fn hessian(&self, h: &[f64]) -> DMatrix<f64> {
        let m = self.n_hidden();
        let w = self.w;
        let sech2 = |x: f64| 1.0 - x.tanh().powi(2);
        let mut hs = DMatrix::zeros(m, m);
        for mu in 0..m {
            hs[(mu, mu)] = 1.0 - w * w * self.overlaps[(mu, mu)] * sech2(w * h[mu]);
            for nu in (0..m).filter(|&nu| nu != mu) {
                let c = w * w * self.overlaps[(mu, nu)] * sech2(w * (h[mu] + h[nu]));
                hs[(mu, mu)] -= c;
                hs[(mu, nu)] -= c;
            }
        }
        hs
    }

    /// The free energy per spin of Eq. (47) for quadratic units, at block magnetisations
    /// `m[(mu, nu)]` \\(= m_{\mu\nu}\\) (symmetric):
    /// \\(f = -\sum_\mu \frac12\big(w\sum_\nu\alpha_{\mu\nu}m_{\mu\nu}\big)^2 -
    /// \sum_{\mu\le\nu}\alpha_{\mu\nu}\mathcal S(m_{\mu\nu})\\).
    pub fn free_energy(&self, m: &DMatrix<f64>) -> f64 {
        let k = self.n_hidden();
        let mut f = 0.0;
        for mu in 0..k {
            let input: f64 = (0..k)
                .map(|nu| self.w * self.overlaps[(mu, nu)] * m[(mu, nu)])
                .sum();
            f -= 0.5 * input * input;
            for nu in mu..k {
                f -= self.overlaps[(mu, nu)] * crate::analytic::binary_entropy(m[(mu, nu)]);
            }
        }
        f
    }

    /// The block magnetisations of hidden values \\(h\\) at a critical point (Eq. 48):
    /// \\(m_{\mu\mu} = \tanh(wh_\mu)\\), \\(m_{\mu\nu} = \tanh(w(h_\mu + h_\nu))\\).
    pub fn block_magnetisations(&self, h: &[f64]) -> DMatrix<f64> {
        let k = self.n_hidden();
        DMatrix::from_fn(k, k, |mu, nu| {
            if mu == nu {
                (self.w * h[mu]).tanh()
            } else {
                (self.w * (h[mu] + h[nu])).tanh()
            }
        })
    }

    /// The critical point of \\(e\\) reached by Newton's method on \\(\nabla e = 0\\) from
    /// `start` (steps limited to length 0.5), to a gradient below \\(10^{-13}\\); its Morse
    /// index from the analytic Hessian.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `start` has the wrong length or Newton's method does not
    /// converge in 200 iterations (e.g. a singular Hessian).
    pub fn critical_point(&self, start: &[f64]) -> ebm_core::Result<CriticalPoint> {
        let m = self.n_hidden();
        Error::check_len("Structured::critical_point start", m, start.len())?;
        let mut h = start.to_vec();
        for _ in 0..200 {
            let g = self.gradient(&h);
            if g.iter().all(|x| x.abs() < 1e-13) {
                let index = self
                    .hessian(&h)
                    .symmetric_eigenvalues()
                    .iter()
                    .filter(|&&l| l < 0.0)
                    .count();
                return Ok(CriticalPoint {
                    energy: self.energy(&h),
                    h,
                    index,
                });
            }
            let Some(step) = self.hessian(&h).lu().solve(&DVector::from_vec(g)) else {
                break;
            };
            let len = step.norm();
            let scale = if len > 0.5 { 0.5 / len } else { 1.0 };
            for (x, d) in h.iter_mut().zip(step.iter()) {
                *x -= scale * d;
            }
        }
        Err(Error::InvalidParameter {
            name: "start".into(),
            reason: format!("Newton's method found no critical point from {start:?}"),
        })
    }

    /// The local minimum of \\(e\\) reached by damped Newton descent (Levenberg–Marquardt,
    /// every accepted step lowers \\(e\\)) from `start`, to a gradient below \\(10^{-13}\\).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `start` has the wrong length or the descent stalls.
    pub fn local_minimum(&self, start: &[f64]) -> ebm_core::Result<CriticalPoint> {
        Error::check_len(
            "Structured::local_minimum start",
            self.n_hidden(),
            start.len(),
        )?;
        let mut h = start.to_vec();
        let mut e = self.energy(&h);
        let mut lambda = 1e-3;
        for _ in 0..1000 {
            let g = self.gradient(&h);
            if g.iter().all(|x| x.abs() < 1e-13) {
                return Ok(self.point(h));
            }
            let gv = DVector::from_vec(g);
            let hs = self.hessian(&h);
            let mut moved = false;
            for _ in 0..60 {
                let a = &hs + DMatrix::identity(h.len(), h.len()) * lambda;
                if let Some(ch) = a.cholesky() {
                    let step = ch.solve(&gv);
                    let trial: Vec<f64> = h.iter().zip(step.iter()).map(|(x, d)| x - d).collect();
                    let et = self.energy(&trial);
                    if et <= e {
                        h = trial;
                        e = et;
                        lambda = (lambda * 0.3).max(1e-12);
                        moved = true;
                        break;
                    }
                }
                lambda *= 10.0;
            }
            if !moved {
                break;
            }
        }
        Err(Error::InvalidParameter {
            name: "start".into(),
            reason: format!("the descent from {start:?} did not converge"),
        })
    }

    fn point(&self, h: Vec<f64>) -> CriticalPoint {
        let index = self
            .hessian(&h)
            .symmetric_eigenvalues()
            .iter()
            .filter(|&&l| l < 0.0)
            .count();
        CriticalPoint {
            energy: self.energy(&h),
            h,
            index,
        }
    }

    /// Sets `h[u] = x` and minimises \\(e\\) over the other units by Newton's method from
    /// the current values (warm start); returns \\(\partial e / \partial h_u\\) there.
    fn relax_others(&self, h: &mut [f64], u: usize, x: f64) -> f64 {
        h[u] = x;
        let m = self.n_hidden();
        let others: Vec<usize> = (0..m).filter(|&k| k != u).collect();
        for _ in 0..200 {
            let g = self.gradient(h);
            if others.iter().all(|&k| g[k].abs() < 1e-14) || others.is_empty() {
                break;
            }
            let hs = self.hessian(h);
            let sub = DMatrix::from_fn(others.len(), others.len(), |a, b| {
                hs[(others[a], others[b])]
            });
            let rhs = DVector::from_iterator(others.len(), others.iter().map(|&k| g[k]));
            let Some(step) = sub.lu().solve(&rhs) else {
                break;
            };
            let len = step.norm();
            let scale = if len > 0.2 { 0.2 / len } else { 1.0 };
            for (a, &k) in others.iter().enumerate() {
                h[k] -= scale * step[a];
            }
        }
        self.gradient(h)[u]
    }

    /// All critical points of \\(e\\) that [`Structured::critical_point`] reaches from the
    /// starts in `values`\\(^M\\) (every combination of the given per-unit values), without
    /// duplicates (positions within \\(10^{-8}\\)), sorted by energy. Starts from which Newton's
    /// method does not converge are skipped. The landscape's metastable states (index 0) and
    /// mountain passes (index 1) are among them when the grid is fine enough.
    pub fn critical_points(&self, values: &[f64]) -> Vec<CriticalPoint> {
        let m = self.n_hidden();
        let total = values.len().pow(m as u32);
        let mut found: Vec<CriticalPoint> = Vec::new();
        for c in 0..total {
            let mut rest = c;
            let start: Vec<f64> = (0..m)
                .map(|_| {
                    let v = values[rest % values.len()];
                    rest /= values.len();
                    v
                })
                .collect();
            if let Ok(cp) = self.critical_point(&start) {
                let dup = found
                    .iter()
                    .any(|f| f.h.iter().zip(&cp.h).all(|(a, b)| (a - b).abs() < 1e-8));
                if !dup {
                    found.push(cp);
                }
            }
        }
        found.sort_by(|a, b| a.energy.total_cmp(&b.energy));
        found
    }

    /// Flips hidden units one at a time in `order`, starting from the local minimum nearest
    /// `start`. Each flip follows the minimum-energy path with the flipped unit \\(h_u\\) as
    /// the reaction coordinate: \\(h_u\\) is moved from its value towards the opposite sign
    /// while the other units are kept at their conditional minimum, the saddle is where
    /// \\(\partial e / \partial h_u\\) first vanishes (bisection to machine precision), and the
    /// next minimum is reached by descent just past it. The barrier is
    /// \\(e(\text{saddle}) - e(\text{current})\\); the total over the flips is the large-\\(T\\)
    /// AGS action of that flip order (Eq. 56).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a unit index out of range, or if a flip meets no
    /// saddle before \\(h_u\\) reaches twice its opposite value (no metastable state on the
    /// other side); errors of [`Structured::local_minimum`].
    pub fn flip_sequence(&self, start: &[f64], order: &[usize]) -> ebm_core::Result<Vec<Flip>> {
        let mut current = self.local_minimum(start)?;
        let mut out = Vec::with_capacity(order.len());
        for &u in order {
            if u >= self.n_hidden() {
                return Err(Error::InvalidParameter {
                    name: "order".into(),
                    reason: format!("unit {u} out of range 0..{}", self.n_hidden()),
                });
            }
            let x0 = current.h[u];
            let dir = if x0 >= 0.0 { -1.0 } else { 1.0 };
            let dx = x0.abs().max(1e-3) / 100.0;
            let mut h = current.h.clone();
            let mut prev = (x0, h.clone());
            let mut bracket = None;
            for k in 1..=300 {
                let x = x0 + dir * dx * k as f64;
                let slope = dir * self.relax_others(&mut h, u, x);
                if slope <= 0.0 {
                    bracket = Some((prev, (x, h.clone())));
                    break;
                }
                prev = (x, h.clone());
            }
            let Some(((mut lo, mut h_lo), (mut hi, _))) = bracket else {
                return Err(Error::InvalidParameter {
                    name: "order".into(),
                    reason: format!("flipping unit {u} meets no saddle: no metastable state"),
                });
            };
            for _ in 0..80 {
                let mid = 0.5 * (lo + hi);
                let mut hm = h_lo.clone();
                let slope = dir * self.relax_others(&mut hm, u, mid);
                if slope > 0.0 {
                    lo = mid;
                    h_lo = hm;
                } else {
                    hi = mid;
                }
            }
            let mut hs = h_lo.clone();
            self.relax_others(&mut hs, u, 0.5 * (lo + hi));
            let saddle = self.point(hs.clone());
            hs[u] += dir * dx;
            let minimum = self.local_minimum(&hs)?;
            let barrier = saddle.energy - current.energy;
            current = minimum.clone();
            out.push(Flip {
                unit: u,
                saddle,
                minimum,
                barrier,
            });
        }
        Ok(out)
    }
}

fn upper_sum(a: &DMatrix<f64>) -> f64 {
    let m = a.nrows();
    (0..m)
        .flat_map(|mu| (mu..m).map(move |nu| (mu, nu)))
        .map(|(mu, nu)| a[(mu, nu)])
        .sum()
}

/// Walsh–Hadamard patterns for the Hopfield model: pattern \\(\mu\\) is column \\(2^\mu\\) of
/// the Sylvester–Hadamard matrix, \\(\xi^\mu_i = (-1)^{\text{bit } \mu \text{ of } i}\\). For
/// `n` a multiple of \\(2^P\\) the patterns are exactly orthogonal and the site types
/// \\((\xi^1_i, \dots, \xi^P_i)\\) take each of the \\(2^P\\) sign vectors equally often (the
/// orthogonal patterns assumed by the large-\\(N\\) theory, the AGS paper). Returns an
/// `n x p` matrix of \\(\pm1\\).
///
/// # Errors
/// [`Error::InvalidParameter`] for `p == 0` or if `n` is not a positive multiple of
/// \\(2^p\\).
pub fn walsh_hadamard_patterns(n: usize, p: usize) -> ebm_core::Result<DMatrix<f64>> {
    if p == 0 || p >= usize::BITS as usize || n == 0 || !n.is_multiple_of(1usize << p) {
        return Err(Error::InvalidParameter {
            name: "walsh_hadamard_patterns".into(),
            reason: format!("need p >= 1 and n a positive multiple of 2^p; got n = {n}, p = {p}"),
        });
    }
    Ok(DMatrix::from_fn(n, p, |i, mu| {
        if i >> mu & 1 == 0 { 1.0 } else { -1.0 }
    }))
}

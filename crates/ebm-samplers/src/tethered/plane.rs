//! Two order parameters: measurement of \\(\langle \mathbf m\rangle_{\hat{\mathbf m}}\\) on a
//! tensor grid ([`measure_profile_2d`]), reconstruction of \\(\Omega(\hat m_1, \hat m_2)\\) and
//! \\(p(\hat m_1, \hat m_2)\\) from the measured gradient
//! \\(\nabla\Omega = \langle \hat{\mathbf m} - \mathbf m\rangle_{\hat{\mathbf m}}\\) (paper, Eqs.
//! 16–18), by integration along two L-shaped paths whose difference is a consistency check,
//! and generation of samples with targets drawn from the 2D \\(p\\) ([`generate_2d`]).
//!
//! Paper: "Learning a Restricted Boltzmann Machine using biased Monte Carlo sampling"
//! (Béreux, Decelle, Furtlehner, Seoane, 2023), §4.2.

use super::order::{GaussianTether, OrderParameter};
use super::profile::{Generated, ProfileSettings, generate_at, measure_targets, profile_chains};
use ebm_core::{Error, Par, Result, RngStreams, Scalar};
use ebm_models::{DiscreteLayer, Layer, Rbm};
use serde::{Deserialize, Serialize};

/// Measured \\(\langle \mathbf m\rangle_{\hat{\mathbf m}}\\) on a tensor grid (two order
/// parameters; values at index `i + nx * j` for \\((x_i, y_j)\\), x fastest).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile2d {
    /// The grid of the first order parameter.
    pub grid_x: Vec<f64>,
    /// The grid of the second order parameter.
    pub grid_y: Vec<f64>,
    /// \\(\langle m_1\rangle\\) at every grid point.
    pub mean_x: Vec<f64>,
    /// \\(\langle m_2\rangle\\) at every grid point.
    pub mean_y: Vec<f64>,
    /// Standard errors of `mean_x` over the replicas (NaN with a single replica).
    pub std_error_x: Vec<f64>,
    /// Standard errors of `mean_y`.
    pub std_error_y: Vec<f64>,
}

impl Profile2d {
    /// \\(\nabla\Omega = \hat{\mathbf m} - \langle\mathbf m\rangle\\) integrated along both
    /// L-shaped paths and normalised ([`reconstruct_2d`]).
    ///
    /// # Errors
    /// As [`reconstruct_2d`].
    pub fn reconstruct(&self, alpha: f64) -> Result<Reconstruction2d> {
        let nx = self.grid_x.len();
        let gx: Vec<f64> = (0..self.mean_x.len())
            .map(|k| self.grid_x[k % nx] - self.mean_x[k])
            .collect();
        let gy: Vec<f64> = (0..self.mean_y.len())
            .map(|k| self.grid_y[k / nx] - self.mean_y[k])
            .collect();
        reconstruct_2d(&self.grid_x, &self.grid_y, &gx, &gy, alpha)
    }
}

/// Measures \\(\langle \mathbf m\rangle_{\hat{\mathbf m}}\\) at every point of the tensor grid
/// `grid_x x grid_y` for two order parameters (`order.k() == 2`): `settings.replicas` chains
/// per point from uniformly random visible units (streams from `seed`), each tethered with the
/// Gaussian tether, `burn_in` sweeps, then `measure` sweeps time-averaged (paper, Eqs. 17 and
/// 19). The cost is `nx * ny * replicas` chains: the paper (§8) notes that a grid in more
/// dimensions quickly becomes impractical, which is why only one and two order parameters have
/// reconstruction helpers (the kernel itself takes any \\(k\\)).
///
/// # Errors
/// [`Error::InvalidParameter`] if `order` does not have two directions, for an axis with fewer
/// than 2 points or not strictly increasing, or invalid settings.
pub fn measure_profile_2d<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    grid_x: &[f64],
    grid_y: &[f64],
    settings: &ProfileSettings,
    seed: u64,
    par: Par,
) -> Result<Profile2d>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    check_axis("grid_x", grid_x)?;
    check_axis("grid_y", grid_y)?;
    if order.k() != 2 {
        return Err(Error::InvalidParameter {
            name: "order".into(),
            reason: format!("{} directions; a 2D profile needs two", order.k()),
        });
    }
    let targets: Vec<f64> = grid_y
        .iter()
        .flat_map(|&y| grid_x.iter().flat_map(move |&x| [x, y]))
        .collect();
    let mut state = profile_chains(rbm, grid_x.len() * grid_y.len() * settings.replicas, seed);
    let (mean, se) = measure_targets(rbm, order, &targets, settings, &mut state, 1.0, par)?;
    let every =
        |v: &[f64], l: usize| -> Vec<f64> { v.iter().skip(l).step_by(2).copied().collect() };
    Ok(Profile2d {
        grid_x: grid_x.to_vec(),
        grid_y: grid_y.to_vec(),
        mean_x: every(&mean, 0),
        mean_y: every(&mean, 1),
        std_error_x: every(&se, 0),
        std_error_y: every(&se, 1),
    })
}

/// Generates equilibrium samples with two order parameters: draws `n` targets
/// \\(\hat{\mathbf m} \sim p\\) from `reconstruction` ([`Reconstruction2d::quantile`] with
/// two uniforms from an auxiliary stream of `seed`), then runs `sweeps` TMC sweeps on one chain
/// per target from uniformly random visible units (paper §4.1, 2D; Eq. 15 with
/// \\(O = \delta_{v, v_0}\\) makes the mixture the Boltzmann law up to grid discretisation and
/// equilibration at fixed \\(\hat{\mathbf m}\\)).
///
/// # Errors
/// [`Error::InvalidParameter`] if `order` does not have two directions, `sweeps == 0` or
/// `alpha` is not positive.
#[allow(clippy::too_many_arguments)]
pub fn generate_2d<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    reconstruction: &Reconstruction2d,
    alpha: f64,
    n: usize,
    sweeps: usize,
    seed: u64,
    par: Par,
) -> Result<Generated<V::Scalar>>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    if order.k() != 2 {
        return Err(Error::InvalidParameter {
            name: "order".into(),
            reason: format!(
                "{} directions; generation from a 2D profile needs two",
                order.k()
            ),
        });
    }
    let mut aux = RngStreams::auxiliary(seed, 0);
    let targets: Vec<f64> = (0..n)
        .flat_map(|_| {
            let (u, v) = (f64::uniform(&mut aux), f64::uniform(&mut aux));
            reconstruction.quantile(u, v)
        })
        .collect();
    generate_at(rbm, order, targets, alpha, sweeps, seed, par)
}

/// \\(\Omega\\) and \\(p\\) on an `nx x ny` tensor grid (values at index `i + nx * j` for
/// \\((x_i, y_j)\\), x fastest).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reconstruction2d {
    /// The grid of the first order parameter.
    pub grid_x: Vec<f64>,
    /// The grid of the second order parameter.
    pub grid_y: Vec<f64>,
    /// \\(\Omega(x_i, y_j) - \Omega(x_0, y_0)\\) along the path x first (along \\(y = y_0\\)),
    /// then y (at fixed \\(x_i\\)), cumulative trapezoid (the reference code's path).
    pub omega: Vec<f64>,
    /// The same along the reverse path: y first (at \\(x = x_0\\)), then x.
    pub omega_reverse: Vec<f64>,
    /// \\(\ln p(x_i, y_j)\\) from `omega`, normalised so that the 2D trapezoid integral of
    /// \\(p\\) is 1.
    pub log_density: Vec<f64>,
}

impl Reconstruction2d {
    /// The largest path discrepancy in nats, \\(\alpha \max |\Omega - \Omega_{\rm reverse}|\\)
    /// over the grid points where \\(p\\) is at least `min_density` times its maximum (where
    /// both paths' values matter). By Eq. 18 it vanishes for an exact gradient up to
    /// quadrature error; a large value means non-equilibrated grid points (the tethered-MC paper).
    pub fn path_discrepancy(&self, alpha: f64, min_density: f64) -> f64 {
        let max = self
            .log_density
            .iter()
            .cloned()
            .fold(f64::NEG_INFINITY, f64::max);
        let floor = max + min_density.ln();
        self.omega
            .iter()
            .zip(&self.omega_reverse)
            .zip(&self.log_density)
            .filter(|(_, l)| **l >= floor)
            .map(|((a, b), _)| alpha * (a - b).abs())
            .fold(0.0, f64::max)
    }

    /// A target \\((x, y)\\) with \\(y\\) at cumulative probability `u` of the marginal
    /// \\(p(y)\\) and \\(x\\) at cumulative probability `v` of the conditional \\(p(x \mid y)\\)
    /// (inverse CDFs, trapezoid cumulative sums, linear within a grid interval; the conditional
    /// is that of the grid row nearest to the drawn \\(y\\)): \\((x, y) \sim p\\) up to the grid
    /// discretisation when `u`, `v` are independent uniforms. This replaces the reference
    /// code's lookup, whose indices are off by one (the tethered-MC paper).
    pub fn quantile(&self, u: f64, v: f64) -> [f64; 2] {
        let nx = self.grid_x.len();
        let p: Vec<f64> = self.log_density.iter().map(|l| l.exp()).collect();
        let py: Vec<f64> = (0..self.grid_y.len())
            .map(|j| trapezoid(&self.grid_x, &p[j * nx..(j + 1) * nx]))
            .collect();
        let (y, j, t) = inverse_cdf(&self.grid_y, &py, u);
        let row = if t < 0.5 { j - 1 } else { j };
        let (x, _, _) = inverse_cdf(&self.grid_x, &p[row * nx..(row + 1) * nx], v);
        [x, y]
    }

    /// The marginal \\(p(x_i) = \int p(x_i, y)\, dy\\) (trapezoid).
    pub fn marginal_x(&self) -> Vec<f64> {
        let nx = self.grid_x.len();
        (0..nx)
            .map(|i| {
                let col: Vec<f64> = (0..self.grid_y.len())
                    .map(|j| self.log_density[i + nx * j].exp())
                    .collect();
                trapezoid(&self.grid_y, &col)
            })
            .collect()
    }
}

/// The point at cumulative probability `u` of the density `p` on `grid` (trapezoid
/// cumulative sums, linear within an interval), with the interval `(j - 1, j)` it falls in and
/// its position `t` in it.
fn inverse_cdf(grid: &[f64], p: &[f64], u: f64) -> (f64, usize, f64) {
    let mut c = vec![0.0; p.len()];
    for j in 1..p.len() {
        c[j] = c[j - 1] + 0.5 * (grid[j] - grid[j - 1]) * (p[j] + p[j - 1]);
    }
    let u = u.clamp(0.0, 1.0) * c[c.len() - 1];
    let j = c.partition_point(|&x| x < u).clamp(1, c.len() - 1);
    let t = if c[j] > c[j - 1] {
        (u - c[j - 1]) / (c[j] - c[j - 1])
    } else {
        0.0
    };
    (grid[j - 1] + t * (grid[j] - grid[j - 1]), j, t)
}

fn trapezoid(x: &[f64], y: &[f64]) -> f64 {
    x.windows(2)
        .zip(y.windows(2))
        .map(|(x, y)| 0.5 * (x[1] - x[0]) * (y[0] + y[1]))
        .sum()
}

fn check_axis(name: &str, grid: &[f64]) -> Result<()> {
    if grid.len() < 2
        || grid.iter().any(|x| !x.is_finite())
        || grid.windows(2).any(|w| w[1] <= w[0])
    {
        return Err(Error::InvalidParameter {
            name: name.into(),
            reason: format!(
                "{} points; at least 2 finite, strictly increasing values expected",
                grid.len()
            ),
        });
    }
    Ok(())
}

/// Reconstructs \\(\Omega\\) and \\(p\\) on the tensor grid `grid_x x grid_y` from the two
/// components of \\(\nabla\Omega\\) at every grid point (`gradient_x`, `gradient_y`, index
/// `i + nx * j`), along both L-shaped paths (Eq. 18 holds for any path), and normalises
/// \\(e^{-\alpha\Omega}\\) in log space with the 2D trapezoid rule.
///
/// # Errors
/// [`Error::InvalidParameter`] for an axis with fewer than 2 points or not strictly
/// increasing, or a non-positive `alpha`; [`Error::ShapeMismatch`] for gradients of the wrong
/// length; [`Error::NonFinite`] for a non-finite gradient.
pub fn reconstruct_2d(
    grid_x: &[f64],
    grid_y: &[f64],
    gradient_x: &[f64],
    gradient_y: &[f64],
    alpha: f64,
) -> Result<Reconstruction2d> {
    check_axis("grid_x", grid_x)?;
    check_axis("grid_y", grid_y)?;
    GaussianTether::new(alpha)?;
    let (nx, ny) = (grid_x.len(), grid_y.len());
    for (what, g) in [("gradient_x", gradient_x), ("gradient_y", gradient_y)] {
        if g.len() != nx * ny {
            return Err(Error::ShapeMismatch {
                what: what.into(),
                expected: format!("{} values ({nx} x {ny} grid)", nx * ny),
                got: format!("{}", g.len()),
            });
        }
        if let Some(index) = g.iter().position(|x| !x.is_finite()) {
            return Err(Error::NonFinite {
                what: what.into(),
                index,
                value: g[index],
            });
        }
    }
    let at = |i: usize, j: usize| i + nx * j;
    // x first along y_0, then y at each x_i.
    let mut omega = vec![0.0; nx * ny];
    for i in 1..nx {
        omega[at(i, 0)] = omega[at(i - 1, 0)]
            + 0.5 * (grid_x[i] - grid_x[i - 1]) * (gradient_x[at(i, 0)] + gradient_x[at(i - 1, 0)]);
    }
    for j in 1..ny {
        for i in 0..nx {
            omega[at(i, j)] = omega[at(i, j - 1)]
                + 0.5
                    * (grid_y[j] - grid_y[j - 1])
                    * (gradient_y[at(i, j)] + gradient_y[at(i, j - 1)]);
        }
    }
    // y first along x_0, then x at each y_j.
    let mut reverse = vec![0.0; nx * ny];
    for j in 1..ny {
        reverse[at(0, j)] = reverse[at(0, j - 1)]
            + 0.5 * (grid_y[j] - grid_y[j - 1]) * (gradient_y[at(0, j)] + gradient_y[at(0, j - 1)]);
    }
    for j in 0..ny {
        for i in 1..nx {
            reverse[at(i, j)] = reverse[at(i - 1, j)]
                + 0.5
                    * (grid_x[i] - grid_x[i - 1])
                    * (gradient_x[at(i, j)] + gradient_x[at(i - 1, j)]);
        }
    }
    let mut log_density: Vec<f64> = omega.iter().map(|o| -alpha * o).collect();
    let max = log_density
        .iter()
        .cloned()
        .fold(f64::NEG_INFINITY, f64::max);
    log_density.iter_mut().for_each(|x| *x -= max);
    let rows: Vec<f64> = (0..ny)
        .map(|j| {
            let row: Vec<f64> = (0..nx).map(|i| log_density[at(i, j)].exp()).collect();
            trapezoid(grid_x, &row)
        })
        .collect();
    let log_norm = trapezoid(grid_y, &rows).ln();
    log_density.iter_mut().for_each(|x| *x -= log_norm);
    Ok(Reconstruction2d {
        grid_x: grid_x.to_vec(),
        grid_y: grid_y.to_vec(),
        omega,
        omega_reverse: reverse,
        log_density,
    })
}

//! Two order parameters: reconstruction of \\(\Omega(\hat m_1, \hat m_2)\\) and
//! \\(p(\hat m_1, \hat m_2)\\) on a tensor grid from the measured gradient
//! \\(\nabla\Omega = \langle \hat{\mathbf m} - \mathbf m\rangle_{\hat{\mathbf m}}\\) (paper, Eqs.
//! 16–18), by integration along two L-shaped paths whose difference is a consistency check.
//!
//! Paper: "Learning a Restricted Boltzmann Machine using biased Monte Carlo sampling"
//! (Béreux, Decelle, Furtlehner, Seoane, 2023), §4.2.

use super::order::GaussianTether;
use ebm_core::{Error, Result};
use serde::{Deserialize, Serialize};

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
    /// quadrature error; a large value means non-equilibrated grid points (spec §2.8).
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

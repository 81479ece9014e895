//! The one-dimensional TMC pipeline: a uniform grid of targets \\(\hat m_j\\), measurement of
//! \\(\Omega'(\hat m_j) = \hat m_j - \langle m \rangle_{\hat m_j}\\) by time averages over
//! several chains per grid point (paper, Eqs. 12 and 19), cumulative trapezoid quadrature to
//! \\(\Omega\\) (Eq. 13), log-space normalisation to \\(p(\hat m)\\) (Eq. 14), barriers, the
//! canonical-average integral (Eq. 15) and generation of equilibrium samples by drawing
//! \\(\hat m \sim p\\) and running short TMC runs (paper §4.1).
//!
//! Paper: "Learning a Restricted Boltzmann Machine using biased Monte Carlo sampling"
//! (Béreux, Decelle, Furtlehner, Seoane, 2023).

use super::kernel::{Tethered, randomize_visible};
use super::order::{GaussianTether, OrderParameter};
use ebm_core::{ChainState, Error, Kernel, Par, Result, RngStreams, Scalar};
use ebm_models::{DiscreteLayer, Layer, Rbm, RbmChains};
use serde::{Deserialize, Serialize};

/// A uniform grid of `n >= 2` targets from `lo` to `hi` (both included).
///
/// The paper takes `[lo, hi]` as the range of the data projections widened by a border of 0.1
/// to 0.2, so that \\(p(\hat m)\\) is negligible outside; a spacing no larger than
/// \\(1/\sqrt\alpha\\) keeps the quadratures accurate.
///
/// # Errors
/// [`Error::InvalidParameter`] unless `lo < hi`, both finite, and `n >= 2`.
pub fn uniform_grid(lo: f64, hi: f64, n: usize) -> Result<Vec<f64>> {
    if !(lo.is_finite() && hi.is_finite() && lo < hi) || n < 2 {
        return Err(Error::InvalidParameter {
            name: "grid".into(),
            reason: format!(
                "[{lo}, {hi}] with {n} points; finite lo < hi and at least 2 points expected"
            ),
        });
    }
    let h = (hi - lo) / (n - 1) as f64;
    Ok((0..n)
        .map(|j| if j + 1 == n { hi } else { lo + h * j as f64 })
        .collect())
}

/// How [`measure_profile`] runs the chains.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileSettings {
    /// Tether strength \\(\alpha\\) (the paper uses \\(2 \cdot 10^4\\)).
    pub alpha: f64,
    /// Chains per grid point.
    pub replicas: usize,
    /// TMC sweeps discarded before measuring.
    pub burn_in: usize,
    /// TMC sweeps whose order parameter is time-averaged (Eq. 19).
    pub measure: usize,
}

/// Measured \\(\langle m \rangle_{\hat m}\\) on a grid (one order parameter).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The targets \\(\hat m_j\\).
    pub grid: Vec<f64>,
    /// \\(\langle m \rangle_{\hat m_j}\\): time average over the measured sweeps and over the
    /// replicas of grid point `j`.
    pub mean_order: Vec<f64>,
    /// Standard error of `mean_order[j]` from the spread of the replicas' time averages (NaN
    /// with a single replica).
    pub std_error: Vec<f64>,
}

impl Profile {
    /// \\(\Omega'(\hat m_j) = \hat m_j - \langle m \rangle_{\hat m_j}\\) (paper, Eq. 12).
    pub fn gradient(&self) -> Vec<f64> {
        self.grid
            .iter()
            .zip(&self.mean_order)
            .map(|(g, m)| g - m)
            .collect()
    }

    /// The reconstruction of \\(\Omega\\) and \\(p(\hat m)\\) from this profile.
    ///
    /// # Errors
    /// As [`reconstruct`].
    pub fn reconstruct(&self, alpha: f64) -> Result<Reconstruction> {
        reconstruct(&self.grid, &self.gradient(), alpha)
    }
}

/// Chains for [`measure_profile`]: `grid_len * replicas` chains with uniformly random visible
/// configurations (the paper's non-informative start), streams derived from `seed`.
pub fn profile_chains<V, H>(
    rbm: &Rbm<V, H>,
    n_chains: usize,
    seed: u64,
) -> ChainState<RbmChains<V::Scalar>>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let mut state = ChainState::new(rbm.default_chains(n_chains), seed);
    randomize_visible(rbm, &mut state.chains, state.rngs.as_mut_slice());
    state
}

/// Measures \\(\langle m \rangle_{\hat m}\\) at every grid point: chain `c` of `state` is
/// tethered to `grid[c / replicas]` with the Gaussian tether, runs `burn_in` TMC sweeps, then
/// `measure` sweeps whose order parameter is averaged (paper, Eq. 19). `state` is left at the
/// final configuration, so persistent chains can be reused (e.g. across training updates).
///
/// # Errors
/// [`Error::InvalidParameter`] if `order` has more than one direction, `replicas` or
/// `measure` is 0, `alpha` is not positive, or `state` does not hold
/// `grid.len() * replicas` chains; errors of [`uniform_grid`]-like validation of `grid`.
pub fn measure_profile<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    grid: &[f64],
    settings: &ProfileSettings,
    state: &mut ChainState<RbmChains<V::Scalar>>,
    beta: f64,
    par: Par,
) -> Result<Profile>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    check_grid(grid)?;
    if order.k() != 1 {
        return Err(Error::InvalidParameter {
            name: "order".into(),
            reason: format!(
                "{} directions; a 1D profile needs one (see plane::measure_profile_2d for two)",
                order.k()
            ),
        });
    }
    let (mean_order, std_error) = measure_targets(rbm, order, grid, settings, state, beta, par)?;
    Ok(Profile {
        grid: grid.to_vec(),
        mean_order,
        std_error,
    })
}

/// The measurement shared by the 1D and 2D profiles and by the tethered negative phase of
/// training: `targets` holds one `k`-dimensional target per grid point (`k = order.k()`);
/// chain `c` of `state` is tethered to point `c / replicas` with the Gaussian tether, runs
/// `burn_in` sweeps, then `measure` sweeps whose order parameters are averaged (paper, Eq. 19).
/// Returns the means \(\langle m_l \rangle_{\hat{\mathbf m}}\) and their standard errors over
/// replicas, `k` per grid point (point-major). `state` is left at the final configuration.
///
/// # Errors
/// [`Error::InvalidParameter`] if `replicas` or `measure` is 0 or `alpha` is not positive;
/// [`Error::ShapeMismatch`] if `targets.len()` is not a multiple of `k` or `state` does not
/// hold `targets.len() / k * replicas` chains.
pub fn measure_targets<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    targets: &[f64],
    settings: &ProfileSettings,
    state: &mut ChainState<RbmChains<V::Scalar>>,
    beta: f64,
    par: Par,
) -> Result<(Vec<f64>, Vec<f64>)>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let (r, k) = (settings.replicas, order.k());
    if r == 0 || settings.measure == 0 {
        return Err(Error::InvalidParameter {
            name: "profile settings".into(),
            reason: format!(
                "replicas = {r}, measure = {}; at least one replica and one measured sweep expected",
                settings.measure
            ),
        });
    }
    if !targets.len().is_multiple_of(k) {
        return Err(Error::ShapeMismatch {
            what: "tethered targets".into(),
            expected: format!("a multiple of {k} values ({k} per grid point)"),
            got: format!("{}", targets.len()),
        });
    }
    let points = targets.len() / k;
    let n = points * r;
    if state.chains.visible.ncols() != n {
        return Err(Error::ShapeMismatch {
            what: "profile chains".into(),
            expected: format!("{points} grid points x {r} replicas = {n} chains"),
            got: format!("{} chains", state.chains.visible.ncols()),
        });
    }
    let per_chain: Vec<f64> = targets
        .chunks(k)
        .flat_map(|t| std::iter::repeat_n(t, r).flatten().copied())
        .collect();
    let kernel = Tethered::new(
        order.clone(),
        GaussianTether::new(settings.alpha)?,
        per_chain,
        1,
    )?;
    for _ in 0..settings.burn_in {
        kernel.step(rbm, beta, &mut state.chains, state.rngs.as_mut_slice(), par);
        state.steps += 1;
    }
    let mut sums = vec![0.0; n * k];
    for _ in 0..settings.measure {
        let info = kernel.step(rbm, beta, &mut state.chains, state.rngs.as_mut_slice(), par);
        state.steps += 1;
        for (s, m) in sums.iter_mut().zip(&info.order) {
            *s += m;
        }
    }
    let t = settings.measure as f64;
    let mut mean = Vec::with_capacity(points * k);
    let mut std_error = Vec::with_capacity(points * k);
    for chunk in sums.chunks(r * k) {
        for l in 0..k {
            let means: Vec<f64> = (0..r).map(|c| chunk[c * k + l] / t).collect();
            let mu = means.iter().sum::<f64>() / r as f64;
            let var = if r > 1 {
                means.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (r - 1) as f64
            } else {
                f64::NAN
            };
            mean.push(mu);
            std_error.push((var / r as f64).sqrt());
        }
    }
    Ok((mean, std_error))
}

fn check_grid(grid: &[f64]) -> Result<()> {
    if grid.len() < 2 {
        return Err(Error::InvalidParameter {
            name: "grid".into(),
            reason: format!("{} points; at least 2 expected", grid.len()),
        });
    }
    if let Some(index) = grid.iter().position(|x| !x.is_finite()) {
        return Err(Error::NonFinite {
            what: "grid".into(),
            index,
            value: grid[index],
        });
    }
    if let Some(j) = grid.windows(2).position(|w| w[1] <= w[0]) {
        return Err(Error::InvalidParameter {
            name: "grid".into(),
            reason: format!("not strictly increasing at point {}", j + 1),
        });
    }
    Ok(())
}

/// The effective potential and tethered probability reconstructed from \\(\Omega'\\) on a grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reconstruction {
    /// The targets \\(\hat m_j\\).
    pub grid: Vec<f64>,
    /// \\(\Omega(\hat m_j) - \Omega(\hat m_0)\\) by cumulative trapezoid quadrature of
    /// \\(\Omega'\\) (Eq. 13).
    pub omega: Vec<f64>,
    /// \\(\ln p(\hat m_j)\\), normalised so that the trapezoid integral of
    /// \\(p\\) over the grid is 1 (Eq. 14).
    pub log_density: Vec<f64>,
}

/// A free-energy barrier between two modes of \\(p(\hat m)\\).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Barrier {
    /// Grid value of the left mode.
    pub left_mode: f64,
    /// Grid value of the saddle (the minimum of \\(p\\) between the modes).
    pub saddle: f64,
    /// Grid value of the right mode.
    pub right_mode: f64,
    /// \\(\ln p(\text{left mode}) - \ln p(\text{saddle})\\) in nats: the barrier
    /// \\(\alpha[\Omega(\hat m^*) - \Omega(\hat m_{\rm left})]\\) seen from the left mode.
    pub from_left: f64,
    /// The same from the right mode.
    pub from_right: f64,
    /// \\(\int p\\) left of the saddle (trapezoid, linear interpolation at the saddle).
    pub left_weight: f64,
}

/// Reconstructs \\(\Omega\\) and \\(p(\hat m)\\) from \\(\Omega'\\) on a grid:
/// \\(\Omega_j = \sum_{i<j} \tfrac12 (\hat m_{i+1} - \hat m_i)(\Omega'_i + \Omega'_{i+1})\\),
/// \\(\ln p_j = -\alpha\Omega_j - \ln \int e^{-\alpha\Omega}\\), computed after subtracting the
/// maximum so that nothing overflows (paper, Eqs. 13–14).
///
/// # Errors
/// [`Error::InvalidParameter`] for fewer than 2 points, a grid that is not strictly
/// increasing, lengths that differ or a non-positive `alpha`; [`Error::NonFinite`] for a
/// non-finite value.
pub fn reconstruct(grid: &[f64], gradient: &[f64], alpha: f64) -> Result<Reconstruction> {
    check_grid(grid)?;
    if gradient.len() != grid.len() {
        return Err(Error::ShapeMismatch {
            what: "potential gradient".into(),
            expected: format!("{} values (one per grid point)", grid.len()),
            got: format!("{}", gradient.len()),
        });
    }
    if let Some(index) = gradient.iter().position(|x| !x.is_finite()) {
        return Err(Error::NonFinite {
            what: "potential gradient".into(),
            index,
            value: gradient[index],
        });
    }
    GaussianTether::new(alpha)?;
    let mut omega = vec![0.0; grid.len()];
    for j in 1..grid.len() {
        omega[j] = omega[j - 1] + 0.5 * (grid[j] - grid[j - 1]) * (gradient[j] + gradient[j - 1]);
    }
    let mut log_density: Vec<f64> = omega.iter().map(|o| -alpha * o).collect();
    let max = log_density
        .iter()
        .cloned()
        .fold(f64::NEG_INFINITY, f64::max);
    log_density.iter_mut().for_each(|x| *x -= max);
    let dens: Vec<f64> = log_density.iter().map(|x| x.exp()).collect();
    let log_norm = trapezoid(grid, &dens).ln();
    log_density.iter_mut().for_each(|x| *x -= log_norm);
    Ok(Reconstruction {
        grid: grid.to_vec(),
        omega,
        log_density,
    })
}

fn trapezoid(x: &[f64], y: &[f64]) -> f64 {
    x.windows(2)
        .zip(y.windows(2))
        .map(|(x, y)| 0.5 * (x[1] - x[0]) * (y[0] + y[1]))
        .sum()
}

impl Reconstruction {
    /// The exact tethered probability of a model whose order parameter takes the values
    /// `values` with unnormalised log weights `log_weights` (e.g. by enumeration, or by a
    /// 1D sum for symmetric models): the canonical law of \\(m\\) convolved with a Gaussian
    /// of variance \\(1/\alpha\\),
    /// \\(p(\hat m) = \sum_m p(m) \sqrt{\alpha/2\pi}\, e^{-\alpha (m - \hat m)^2/2}\\),
    /// and \\(\Omega = -\ln p / \alpha\\) up to a constant. The reference that TMC estimates
    /// are compared with.
    ///
    /// # Errors
    /// As [`reconstruct`] for the grid and `alpha`; [`Error::ShapeMismatch`] if `values` and
    /// `log_weights` differ in length or are empty.
    pub fn exact(values: &[f64], log_weights: &[f64], grid: &[f64], alpha: f64) -> Result<Self> {
        check_grid(grid)?;
        GaussianTether::new(alpha)?;
        if values.len() != log_weights.len() || values.is_empty() {
            return Err(Error::ShapeMismatch {
                what: "canonical law of the order parameter".into(),
                expected: format!(
                    "as many log weights as values ({}), at least one",
                    values.len()
                ),
                got: format!("{}", log_weights.len()),
            });
        }
        let lz = ebm_core::numerics::log_sum_exp(log_weights);
        let half_log = 0.5 * (alpha / (2.0 * std::f64::consts::PI)).ln();
        let mut terms = vec![0.0; values.len()];
        let log_density: Vec<f64> = grid
            .iter()
            .map(|&g| {
                for ((t, m), l) in terms.iter_mut().zip(values).zip(log_weights) {
                    *t = l - lz - 0.5 * alpha * (m - g) * (m - g);
                }
                ebm_core::numerics::log_sum_exp(&terms) + half_log
            })
            .collect();
        let omega = log_density
            .iter()
            .map(|l| (log_density[0] - l) / alpha)
            .collect();
        Ok(Self {
            grid: grid.to_vec(),
            omega,
            log_density,
        })
    }

    /// \\(p(\hat m_j)\\).
    pub fn density(&self) -> Vec<f64> {
        self.log_density.iter().map(|x| x.exp()).collect()
    }

    /// The cumulative distribution at the grid points (trapezoid; 0 at the first, 1 at the
    /// last).
    pub fn cdf(&self) -> Vec<f64> {
        let p = self.density();
        let mut c = vec![0.0; p.len()];
        for j in 1..p.len() {
            c[j] = c[j - 1] + 0.5 * (self.grid[j] - self.grid[j - 1]) * (p[j] + p[j - 1]);
        }
        let total = c[c.len() - 1];
        c.iter_mut().for_each(|x| *x /= total);
        c
    }

    /// The canonical average \\(\langle O \rangle = \int \langle O \rangle_{\hat m}\,
    /// p(\hat m)\, d\hat m\\) (paper, Eq. 15) by the trapezoid rule, from the tethered averages
    /// `values[j]` \\(= \langle O \rangle_{\hat m_j}\\).
    ///
    /// # Panics
    /// If `values.len()` differs from the grid's.
    pub fn canonical_average(&self, values: &[f64]) -> f64 {
        assert_eq!(values.len(), self.grid.len(), "canonical_average: length");
        let pv: Vec<f64> = self
            .log_density
            .iter()
            .zip(values)
            .map(|(l, v)| l.exp() * v)
            .collect();
        trapezoid(&self.grid, &pv)
    }

    /// The target whose cumulative probability is `u` in `[0, 1]` (inverse CDF, linear within
    /// a grid interval): \\(\hat m \sim p\\) when `u` is uniform.
    pub fn quantile(&self, u: f64) -> f64 {
        let c = self.cdf();
        let u = u.clamp(0.0, 1.0);
        let j = c.partition_point(|&x| x < u).clamp(1, c.len() - 1);
        let (c0, c1) = (c[j - 1], c[j]);
        let t = if c1 > c0 { (u - c0) / (c1 - c0) } else { 0.0 };
        self.grid[j - 1] + t * (self.grid[j] - self.grid[j - 1])
    }

    /// The deepest barrier: over all pairs of grid points \\(i < j\\), the one maximising
    /// \\(\min(\ln p_i, \ln p_j) - \min_{i<s<j} \ln p_s\\); `None` if \\(p\\) has no interior
    /// dip (unimodal on the grid).
    pub fn barrier(&self) -> Option<Barrier> {
        let lp = &self.log_density;
        let n = lp.len();
        let mut best: Option<(f64, usize, usize, usize)> = None;
        for i in 0..n {
            let mut low = (f64::INFINITY, i);
            for j in i + 1..n {
                if j > i + 1 && lp[j - 1] < low.0 {
                    low = (lp[j - 1], j - 1);
                }
                let depth = lp[i].min(lp[j]) - low.0;
                if depth > 0.0 && best.is_none_or(|b| depth > b.0) {
                    best = Some((depth, i, low.1, j));
                }
            }
        }
        let (_, i, s, j) = best?;
        // Extend each side to its own maximum (the pair found may stop short of the peak).
        let li = (0..s).max_by(|&a, &b| lp[a].total_cmp(&lp[b])).unwrap_or(i);
        let rj = (s + 1..n)
            .max_by(|&a, &b| lp[a].total_cmp(&lp[b]))
            .unwrap_or(j);
        let c = self.cdf();
        Some(Barrier {
            left_mode: self.grid[li],
            saddle: self.grid[s],
            right_mode: self.grid[rj],
            from_left: lp[li] - lp[s],
            from_right: lp[rj] - lp[s],
            left_weight: c[s],
        })
    }
}

/// Samples generated by [`generate`].
#[derive(Clone, Debug)]
pub struct Generated<F: Scalar> {
    /// The chains after the TMC runs (their RNG streams can continue them).
    pub state: ChainState<RbmChains<F>>,
    /// The targets \\(\hat m\\) drawn, `k` per chain (chain `c` at `targets[c * k..(c + 1) *
    /// k]`).
    pub targets: Vec<f64>,
}

/// Generates equilibrium samples with TMC (paper §4.1): draws `n` targets
/// \\(\hat m \sim p\\) by inverse CDF from `reconstruction`, starts every chain from uniformly
/// random visible units, and runs `sweeps` TMC sweeps at its target. Mixing over
/// \\(\hat m \sim p(\hat m)\\) and sampling \\(p_{\hat m}(v)\\) gives the Boltzmann law exactly
/// (Eq. 15 with \\(O = \delta_{v, v_0}\\)), up to grid discretisation and incomplete
/// equilibration at fixed \\(\hat m\\).
///
/// # Errors
/// [`Error::InvalidParameter`] for `sweeps == 0`, a multi-dimensional `order` or a
/// non-positive `alpha`.
#[allow(clippy::too_many_arguments)]
pub fn generate<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    reconstruction: &Reconstruction,
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
    if order.k() != 1 {
        return Err(Error::InvalidParameter {
            name: "order".into(),
            reason: format!(
                "{} directions; generation from a 1D profile needs 1",
                order.k()
            ),
        });
    }
    let mut aux = RngStreams::auxiliary(seed, 0);
    let targets: Vec<f64> = (0..n)
        .map(|_| reconstruction.quantile(f64::uniform(&mut aux)))
        .collect();
    generate_at(rbm, order, targets, alpha, sweeps, seed, par)
}

/// Runs `sweeps` TMC sweeps on one chain per target (`k` values each, `k = order.k()`),
/// every chain from uniformly random visible units with its stream from `seed`.
pub(super) fn generate_at<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    targets: Vec<f64>,
    alpha: f64,
    sweeps: usize,
    seed: u64,
    par: Par,
) -> Result<Generated<V::Scalar>>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let n = targets.len() / order.k();
    let kernel = Tethered::new(
        order.clone(),
        GaussianTether::new(alpha)?,
        targets.clone(),
        sweeps,
    )?;
    let mut state = profile_chains(rbm, n, seed);
    kernel.step(rbm, 1.0, &mut state.chains, state.rngs.as_mut_slice(), par);
    state.steps += 1;
    Ok(Generated { state, targets })
}

/// Settings of [`sample`]: the profile measurement, then the generation runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingSettings {
    /// How \\(\langle m\rangle_{\hat m}\\) is measured on the grid.
    pub profile: ProfileSettings,
    /// TMC sweeps at each drawn target (the paper: 30 for its 5-cluster model).
    pub sweeps: usize,
    /// Unconstrained Gibbs sweeps applied after the TMC sweeps (the reference code: 2; 0
    /// returns the tethered samples as they are).
    pub gibbs_sweeps: usize,
}

/// The two mode weights of \\(p(\hat m)\\) split at its deepest barrier, measured twice.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModeWeights {
    /// The barrier separating the modes ([`Reconstruction::barrier`]).
    pub barrier: Barrier,
    /// \\(\int p(\hat m)\, d\hat m\\) left of the saddle (= `barrier.left_weight`).
    pub profile_left: f64,
    /// Its standard error, propagated linearly from the standard errors of
    /// \\(\langle m\rangle_{\hat m_j}\\) (independent replicas per grid point) through the
    /// quadrature and the normalisation; NaN with a single replica.
    pub profile_left_se: f64,
    /// Fraction of the generated samples whose order parameter \\(m(v)\\) lies left of the
    /// saddle.
    pub samples_left: f64,
    /// Its binomial standard error (the samples are independent).
    pub samples_left_se: f64,
}

/// What [`measure`] returns: the profile from fresh chains, its reconstruction, the deepest
/// barrier with the standard error of the weight left of it, and why the result may not be
/// trusted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// \\(\langle m \rangle_{\hat m}\\) on the grid.
    pub profile: Profile,
    /// \\(\Omega\\) and \\(p(\hat m)\\).
    pub reconstruction: Reconstruction,
    /// The deepest barrier of \\(p(\hat m)\\), if it has an interior dip.
    pub barrier: Option<Barrier>,
    /// Standard error of `barrier.left_weight`, propagated linearly from the standard errors
    /// of \\(\langle m\rangle_{\hat m_j}\\) (independent replicas per grid point) through the
    /// quadrature and the normalisation; NaN with a single replica or without a barrier.
    pub left_weight_se: f64,
    /// Conditions under which the reconstruction is not reliable (a grid cutting \\(p\\), a
    /// coarse grid, no error bars, uncertain mode weights).
    pub warnings: Vec<String>,
}

/// Measures the tethered profile of `rbm` from scratch and reconstructs \\(p(\hat m)\\):
/// `grid.len() * settings.replicas` chains from uniformly random visible units with streams
/// from `seed` ([`profile_chains`], [`measure_profile`], [`reconstruct`]), then the deepest
/// barrier, the error of its mode weights and the warnings.
///
/// # Errors
/// As [`measure_profile`].
pub fn measure<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    grid: &[f64],
    settings: &ProfileSettings,
    seed: u64,
    par: Par,
) -> Result<Measured>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let mut chains = profile_chains(rbm, grid.len() * settings.replicas, seed);
    let profile = measure_profile(rbm, order, grid, settings, &mut chains, 1.0, par)?;
    let reconstruction = profile.reconstruct(settings.alpha)?;
    let barrier = reconstruction.barrier();
    let left_weight_se = barrier.map_or(f64::NAN, |b| {
        left_weight_error(&profile, &reconstruction, &b, settings.alpha)
    });
    let warnings = profile_warnings(&reconstruction, settings, barrier, left_weight_se);
    Ok(Measured {
        profile,
        reconstruction,
        barrier,
        left_weight_se,
        warnings,
    })
}

/// What [`sample`] returns.
#[derive(Clone, Debug)]
pub struct Sampled<F: Scalar> {
    /// The profile and \\(p(\hat m)\\) the targets were drawn from.
    pub measured: Measured,
    /// The samples (after the optional Gibbs sweeps) and the targets drawn.
    pub generated: Generated<F>,
    /// The order parameter \\(m(v)\\) of every sample.
    pub order: Vec<f64>,
    /// The mode weights, when \\(p(\hat m)\\) has an interior dip.
    pub modes: Option<ModeWeights>,
    /// The warnings of the measurement, and a disagreement between the samples' and
    /// \\(p\\)'s mode weights.
    pub warnings: Vec<String>,
}

/// TMC sampling (paper §4.1, the tethered-MC paper) in one call: measures \\(p(\hat m)\\) on `grid`
/// ([`measure`], streams from `seed`), draws `n` targets \\(\hat m \sim p\\) by inverse CDF
/// and runs `settings.sweeps` TMC sweeps at each from a uniformly random start ([`generate`],
/// streams from `seed + 1`), then `settings.gibbs_sweeps` unconstrained Gibbs sweeps. The
/// mode weights it reports are the model's (from \\(p\\) and from the samples), not the
/// data's.
///
/// Every chain consumes only its own stream: the result does not depend on `par` or the
/// thread count.
///
/// # Errors
/// As [`measure_profile`] and [`generate`]; [`Error::InvalidParameter`] if `n == 0`.
pub fn sample<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    grid: &[f64],
    settings: &SamplingSettings,
    n: usize,
    seed: u64,
    par: Par,
) -> Result<Sampled<V::Scalar>>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    if n == 0 {
        return Err(Error::InvalidParameter {
            name: "samples".into(),
            reason: "0; at least one sample expected".into(),
        });
    }
    let p = &settings.profile;
    let measured = measure(rbm, order, grid, p, seed, par)?;
    let mut generated = generate(
        rbm,
        order,
        &measured.reconstruction,
        p.alpha,
        n,
        settings.sweeps,
        seed.wrapping_add(1),
        par,
    )?;
    if settings.gibbs_sweeps > 0 {
        let s = &mut generated.state;
        crate::Gibbs::new(settings.gibbs_sweeps).step(
            rbm,
            1.0,
            &mut s.chains,
            s.rngs.as_mut_slice(),
            par,
        );
        s.steps += 1;
    }
    let mut m = [0.0];
    let values: Vec<f64> = generated
        .state
        .chains
        .visible
        .column_iter()
        .map(|c| {
            order.project(c.as_slice(), &mut m);
            m[0]
        })
        .collect();
    let modes = measured.barrier.map(|barrier| {
        let left = values.iter().filter(|&&x| x < barrier.saddle).count() as f64 / n as f64;
        ModeWeights {
            barrier,
            profile_left: barrier.left_weight,
            profile_left_se: measured.left_weight_se,
            samples_left: left,
            samples_left_se: (left * (1.0 - left) / n as f64).sqrt(),
        }
    });
    let mut warnings = measured.warnings.clone();
    if let Some(m) = &modes {
        let z = (m.samples_left - m.profile_left)
            / (m.samples_left_se.powi(2) + m.profile_left_se.powi(2)).sqrt();
        if z.abs() > 4.0 {
            warnings.push(format!(
                "the samples' left weight {:.3} +- {:.3} disagrees with p(m_hat)'s {:.3} +- {:.3} \
                 ({z:.1} standard errors): the TMC runs at fixed m_hat may be too short",
                m.samples_left, m.samples_left_se, m.profile_left, m.profile_left_se
            ));
        }
    }
    Ok(Sampled {
        measured,
        generated,
        order: values,
        modes,
        warnings,
    })
}

/// Trapezoid weights of `x[range]` (the end points get half an interval).
fn trapezoid_weights(x: &[f64], lo: usize, hi: usize) -> Vec<f64> {
    let mut t = vec![0.0; x.len()];
    for j in lo..hi {
        let h = 0.5 * (x[j + 1] - x[j]);
        t[j] += h;
        t[j + 1] += h;
    }
    t
}

/// Standard error of the left weight \\(w = W_L/(W_L + W_R)\\): with \\(x = \ln(W_L/W_R)\\),
/// \\(\partial x/\partial \Omega'_i = -\alpha\,(E_L[\partial\Omega/\partial\Omega'_i] -
/// E_R[\partial\Omega/\partial\Omega'_i])\\), where \\(E_{L,R}\\) average over each side of the
/// saddle with the weights \\(p_j\\) times the trapezoid weights, and
/// \\(\partial\Omega_j/\partial\Omega'_i\\) are the cumulative-trapezoid coefficients; the
/// grid points' errors are independent, so \\(\sigma_x^2 = \sum_i (\partial x/\partial
/// \Omega'_i)^2 \sigma_i^2\\) and \\(\sigma_w = w(1-w)\sigma_x\\).
fn left_weight_error(
    profile: &Profile,
    rec: &Reconstruction,
    barrier: &Barrier,
    alpha: f64,
) -> f64 {
    let g = &rec.grid;
    let n = g.len();
    let s = g.iter().position(|&x| x == barrier.saddle).unwrap_or(0);
    let p = rec.density();
    let side = |lo: usize, hi: usize| -> Vec<f64> {
        let t = trapezoid_weights(g, lo, hi);
        let w: Vec<f64> = t.iter().zip(&p).map(|(a, b)| a * b).collect();
        let total: f64 = w.iter().sum();
        w.iter().map(|x| x / total).collect()
    };
    let (wl, wr) = (side(0, s), side(s, n - 1));
    // dOmega_j/dOmega'_i for the cumulative trapezoid: h_i/2 [1 <= i <= j] + h_{i+1}/2 [i+1 <= j].
    let coef = |i: usize, j: usize| {
        let mut c = 0.0;
        if i >= 1 && i <= j {
            c += 0.5 * (g[i] - g[i - 1]);
        }
        if i < j {
            c += 0.5 * (g[i + 1] - g[i]);
        }
        c
    };
    let mut var = 0.0;
    for i in 0..n {
        let d: f64 = (0..n).map(|j| (wl[j] - wr[j]) * coef(i, j)).sum();
        var += (alpha * d * profile.std_error[i]).powi(2);
    }
    let w = barrier.left_weight;
    w * (1.0 - w) * var.sqrt()
}

/// The warnings of [`measure`].
fn profile_warnings(
    rec: &Reconstruction,
    settings: &ProfileSettings,
    barrier: Option<Barrier>,
    left_weight_se: f64,
) -> Vec<String> {
    let mut w = Vec::new();
    let lp = &rec.log_density;
    let max = lp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let edge = lp[0].max(lp[lp.len() - 1]) - max;
    if edge > -10.0 {
        w.push(format!(
            "p(m_hat) at the grid's ends is e^{edge:.1} of its maximum: the grid may cut the \
             distribution; widen it"
        ));
    }
    let h = rec.grid.windows(2).map(|x| x[1] - x[0]).fold(0.0, f64::max);
    if h > 1.0 / settings.alpha.sqrt() {
        w.push(format!(
            "grid spacing {h:.3e} exceeds 1/sqrt(alpha) = {:.3e}: the quadrature of Omega' is \
             coarse; use more grid points",
            1.0 / settings.alpha.sqrt()
        ));
    }
    if settings.replicas < 2 {
        w.push(
            "one replica per grid point: p(m_hat) and the mode weights have no error bars".into(),
        );
    }
    if let Some(b) = barrier
        && left_weight_se > 0.05
    {
        w.push(format!(
            "the mode weights of p(m_hat) are uncertain (left weight {:.3} +- {left_weight_se:.3}): \
             use more replicas or measured sweeps",
            b.left_weight
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconstruction_of_a_quadratic_potential_is_a_gaussian() {
        // Omega' = s (m - 0.5) gives p ∝ exp(-alpha s (m - 0.5)^2 / 2).
        let grid = uniform_grid(0.0, 1.0, 2001).unwrap();
        let (alpha, s) = (100.0, 2.0);
        let g: Vec<f64> = grid.iter().map(|m| s * (m - 0.5)).collect();
        let r = reconstruct(&grid, &g, alpha).unwrap();
        let var = 1.0 / (alpha * s);
        for (m, lp) in grid.iter().zip(&r.log_density) {
            let exact = -(m - 0.5) * (m - 0.5) / (2.0 * var)
                - (2.0 * std::f64::consts::PI * var).ln() / 2.0;
            assert!((lp - exact).abs() < 1e-5, "{m}: {lp} vs {exact}");
        }
        assert!((r.quantile(0.5) - 0.5).abs() < 1e-9);
        assert!(r.barrier().is_none());
        assert!((r.canonical_average(&grid) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        assert!(uniform_grid(1.0, 0.0, 10).is_err());
        assert!(uniform_grid(0.0, 1.0, 1).is_err());
        assert!(reconstruct(&[0.0, 0.0], &[0.0, 0.0], 1.0).is_err());
        assert!(reconstruct(&[0.0, 1.0], &[0.0], 1.0).is_err());
        assert!(reconstruct(&[0.0, 1.0], &[0.0, f64::NAN], 1.0).is_err());
        assert!(reconstruct(&[0.0, 1.0], &[0.0, 0.0], 0.0).is_err());
    }
}

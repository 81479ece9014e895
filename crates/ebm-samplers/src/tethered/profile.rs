//! The one-dimensional TMC pipeline: a uniform grid of targets \\(\hat m_j\\), measurement of
//! \\(\Omega'(\hat m_j) = \hat m_j - \langle m \rangle_{\hat m_j}\\) by time averages over
//! several chains per grid point (paper, Eqs. 12 and 19), cumulative trapezoid quadrature to
//! \\(\Omega\\) (Eq. 13), log-space normalisation to \\(p(\hat m)\\) (Eq. 14), barriers, the
//! canonical-average integral (Eq. 15) and generation of equilibrium samples by drawing
//! \\(\hat m \sim p\\) and running short TMC runs (paper §4.1).
//!
//! Paper: "Learning a Restricted Boltzmann Machine using biased Monte Carlo sampling"
//! (Béreux, Decelle, Furtlehner, Seoane, 2023).

use super::kernel::{Tethered, randomize_visible, tilted_visible};
use super::order::{GaussianTether, OrderParameter};
use ebm_core::diagnostics::{gelman_rubin, jackknife_error};
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
    /// The replicas' time averages of \\(m\\), `replicas` per grid point (point-major): what
    /// the jackknife of [`measure`] leaves out one replica at a time.
    #[serde(default)]
    pub replica_means: Vec<f64>,
    /// The Gelman–Rubin \\(\hat R\\) of the replicas at every grid point ([`gelman_rubin`]);
    /// NaN with a single replica or a single measured sweep.
    #[serde(default)]
    pub rhat: Vec<f64>,
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
    one_direction(
        order,
        "a 1D profile needs one (see plane::measure_profile_2d for two)",
    )?;
    let reps = measure_replicas(rbm, order, grid, settings, state, beta, par)?;
    let (mean_order, std_error) = reps.reduce();
    let rhat = (0..grid.len())
        .map(|j| {
            gelman_rubin(
                &reps.point_means(j, 0),
                &reps.point_within(j, 0),
                reps.sweeps,
            )
        })
        .collect();
    Ok(Profile {
        grid: grid.to_vec(),
        mean_order,
        std_error,
        replica_means: reps.means,
        rhat,
    })
}

/// The measurement shared by the 1D and 2D profiles and by the tethered negative phase of
/// training: `targets` holds one `k`-dimensional target per grid point (`k = order.k()`);
/// chain `c` of `state` is tethered to point `c / replicas` with the Gaussian tether, runs
/// `burn_in` sweeps, then `measure` sweeps whose order parameters are averaged (paper, Eq. 19).
/// Returns the means \\(\langle m_l \rangle_{\hat{\mathbf m}}\\) and their standard errors over
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
    let reps = measure_replicas(rbm, order, targets, settings, state, beta, par)?;
    Ok(reps.reduce())
}

/// Per-chain time averages of the order parameters and their within-chain variances, as
/// measured by [`measure_replicas`].
pub(super) struct ReplicaStats {
    /// Replicas per grid point.
    replicas: usize,
    /// Order parameters per target.
    k: usize,
    /// Measured sweeps per chain.
    sweeps: usize,
    /// \\(\bar m_{c,l}\\): the time average of chain `c`, component `l`, at `c * k + l`.
    means: Vec<f64>,
    /// The chains' unbiased within-chain variances of \\(m_l\\), same layout.
    within: Vec<f64>,
}

impl ReplicaStats {
    /// The grid points' means over replicas and their standard errors (point-major, `k` per
    /// point).
    fn reduce(&self) -> (Vec<f64>, Vec<f64>) {
        let (r, k) = (self.replicas, self.k);
        let mut mean = Vec::new();
        let mut std_error = Vec::new();
        for chunk in self.means.chunks(r * k) {
            for l in 0..k {
                let means: Vec<f64> = (0..r).map(|c| chunk[c * k + l]).collect();
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
        (mean, std_error)
    }

    /// Component `l` of the time averages of the replicas of grid point `j`.
    fn point_means(&self, j: usize, l: usize) -> Vec<f64> {
        let (r, k) = (self.replicas, self.k);
        (0..r).map(|c| self.means[(j * r + c) * k + l]).collect()
    }

    /// The same for the within-chain variances.
    fn point_within(&self, j: usize, l: usize) -> Vec<f64> {
        let (r, k) = (self.replicas, self.k);
        (0..r).map(|c| self.within[(j * r + c) * k + l]).collect()
    }
}

/// [`measure_targets`] keeping every chain's time average and within-chain variance.
fn measure_replicas<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    targets: &[f64],
    settings: &ProfileSettings,
    state: &mut ChainState<RbmChains<V::Scalar>>,
    beta: f64,
    par: Par,
) -> Result<ReplicaStats>
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
    let kernel = tether_points(order, targets, r, settings.alpha, state)?;
    for _ in 0..settings.burn_in {
        kernel.step(rbm, beta, &mut state.chains, state.rngs.as_mut_slice(), par);
        state.steps += 1;
    }
    let n = state.chains.visible.ncols();
    let mut sums = vec![0.0; n * k];
    let mut squares = vec![0.0; n * k];
    for _ in 0..settings.measure {
        let info = kernel.step(rbm, beta, &mut state.chains, state.rngs.as_mut_slice(), par);
        state.steps += 1;
        for ((s, q), m) in sums.iter_mut().zip(squares.iter_mut()).zip(&info.order) {
            *s += m;
            *q += m * m;
        }
    }
    let t = settings.measure as f64;
    let means: Vec<f64> = sums.iter().map(|s| s / t).collect();
    let within = squares
        .iter()
        .zip(&means)
        .map(|(q, mu)| {
            if settings.measure > 1 {
                ((q - t * mu * mu) / (t - 1.0)).max(0.0)
            } else {
                f64::NAN
            }
        })
        .collect();
    Ok(ReplicaStats {
        replicas: r,
        k,
        sweeps: settings.measure,
        means,
        within,
    })
}

/// The Gaussian-tether kernel for `replicas` chains per target point (`order.k()` values per
/// point in `targets`), after checking that `state` holds that many chains.
fn tether_points<F: Scalar>(
    order: &OrderParameter,
    targets: &[f64],
    replicas: usize,
    alpha: f64,
    state: &ChainState<RbmChains<F>>,
) -> Result<Tethered<GaussianTether>> {
    let k = order.k();
    if !targets.len().is_multiple_of(k) {
        return Err(Error::ShapeMismatch {
            what: "tethered targets".into(),
            expected: format!("a multiple of {k} values ({k} per grid point)"),
            got: format!("{}", targets.len()),
        });
    }
    let points = targets.len() / k;
    let n = points * replicas;
    if state.chains.visible.ncols() != n {
        return Err(Error::ShapeMismatch {
            what: "profile chains".into(),
            expected: format!("{points} grid points x {replicas} replicas = {n} chains"),
            got: format!("{} chains", state.chains.visible.ncols()),
        });
    }
    let per_chain: Vec<f64> = targets
        .chunks(k)
        .flat_map(|t| std::iter::repeat_n(t, replicas).flatten().copied())
        .collect();
    Tethered::new(order.clone(), GaussianTether::new(alpha)?, per_chain, 1)
}

/// Sweeps of [`disperse_chains`].
pub const DISPERSAL_SWEEPS: usize = 10;

/// Half-width of the dispersal of [`disperse_chains`], in tether widths \\(1/\sqrt\alpha\\).
pub const DISPERSAL_WIDTHS: f64 = 5.0;

/// Starts the replicas of every grid point spread around it, so that a tethered law with two
/// components at some \\(\hat m\\) (a barrier in the hidden or visible configurations that
/// the tether does not remove) shows up as replicas that disagree, not as replicas that all
/// fell into the same component and agree on a wrong mean.
///
/// Replica \\(r\\) of \\(R\\) at \\(\hat m_j\\) starts at \\(d_{jr} = \hat m_j + w\,(2r/(R-1) - 1)\\),
/// \\(w = \\) [`DISPERSAL_WIDTHS`]\\(/\sqrt\alpha\\), stratified from one side of the target to the
/// other (components of a tethered law lie a few tether widths apart): its visible units are
/// drawn from the product law tilted to \\(d_{jr}\\) ([`tilted_visible`]), then it runs
/// [`DISPERSAL_SWEEPS`] TMC sweeps tethered (with `alpha`) to \\(d_{jr}\\), from where its
/// burn-in reaches the target after a short way. With one replica, its start is drawn tilted to
/// the target itself and nothing else is done. The sweeps are counted in `state.steps`; every
/// chain consumes only its own stream.
///
/// Why short ways: a chain that crosses most of the range to its target under a strong tether
/// is biased towards where it came from for hundreds of sweeps ([`tilted_visible`]).
///
/// # Errors
/// As [`measure_profile`] for `grid`, `replicas`, `alpha` and the number of chains.
pub fn disperse_chains<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    grid: &[f64],
    replicas: usize,
    alpha: f64,
    state: &mut ChainState<RbmChains<V::Scalar>>,
    par: Par,
) -> Result<()>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    check_grid(grid)?;
    one_direction(order, "dispersal needs one")?;
    if replicas == 0 {
        return Err(Error::InvalidParameter {
            name: "replicas".into(),
            reason: "0; at least one expected".into(),
        });
    }
    // Checks the shape (the targets themselves are replaced below).
    tether_points(order, grid, replicas, alpha, state)?;
    let width = DISPERSAL_WIDTHS / alpha.sqrt();
    let offsets: Vec<f64> = match replicas {
        1 => vec![0.0],
        _ => (0..replicas)
            .map(|r| width * (2.0 * r as f64 / (replicas - 1) as f64 - 1.0))
            .collect(),
    };
    let starts: Vec<f64> = grid
        .iter()
        .flat_map(|g| offsets.iter().map(move |o| g + o))
        .collect();
    tilted_visible(
        rbm,
        order,
        &starts,
        &mut state.chains,
        state.rngs.as_mut_slice(),
    );
    if replicas < 2 {
        return Ok(());
    }
    let kernel = Tethered::new(
        order.clone(),
        GaussianTether::new(alpha)?,
        starts,
        DISPERSAL_SWEEPS,
    )?;
    kernel.step(rbm, 1.0, &mut state.chains, state.rngs.as_mut_slice(), par);
    state.steps += 1;
    Ok(())
}

/// [`Error::InvalidParameter`] naming `why` unless `order` has exactly one direction.
fn one_direction(order: &OrderParameter, why: &str) -> Result<()> {
    if order.k() == 1 {
        return Ok(());
    }
    Err(Error::InvalidParameter {
        name: "order".into(),
        reason: format!("{} directions; {why}", order.k()),
    })
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
    /// Its error ([`Measured::left_weight_se`]: jackknife over replicas plus discretisation);
    /// NaN with a single replica.
    pub profile_left_se: f64,
    /// Fraction of the generated samples whose order parameter \\(m(v)\\) lies left of the
    /// saddle.
    pub samples_left: f64,
    /// Its binomial standard error (the samples are independent).
    pub samples_left_se: f64,
}

/// \\(\hat R\\) above which [`measure`] warns that a grid point's replicas did not converge
/// to one law ([`TmcWarning::NotConverged`]).
pub const RHAT_LIMIT: f64 = 1.1;

/// Shift of the left mode weight between the grid and every second grid point above which
/// [`measure`] warns ([`TmcWarning::DiscretisationError`]), if it also exceeds three times
/// the jackknife error (the shift holds the noise of the dropped points too).
pub const DISCRETISATION_LIMIT: f64 = 0.02;

/// Why a TMC profile, its \\(p(\hat m)\\) or its mode weights may not be trusted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TmcWarning {
    /// \\(p(\hat m)\\) at the grid's ends is only `e^edge_log_ratio` of its maximum: the grid
    /// may cut the distribution.
    GridCutsDistribution {
        /// \\(\ln p\\) at the larger end minus its maximum (nats).
        edge_log_ratio: f64,
    },
    /// The grid spacing exceeds \\(1/\sqrt\alpha\\).
    CoarseGrid {
        /// The largest spacing.
        spacing: f64,
        /// \\(1/\sqrt\alpha\\).
        limit: f64,
    },
    /// One replica per grid point: no error bars and no \\(\hat R\\).
    NoErrorBars,
    /// At `points` grid points the replicas' \\(\hat R\\) exceeds [`RHAT_LIMIT`]: the
    /// tethered law there has components that the runs do not connect (or they are too
    /// short), so \\(\langle m\rangle_{\hat m}\\), \\(p(\hat m)\\) and the mode weights are
    /// biased by an amount the error bars need not cover.
    NotConverged {
        /// How many grid points exceed the limit.
        points: usize,
        /// The index of the worst one.
        point: usize,
        /// Its target \\(\hat m\\).
        m_hat: f64,
        /// Its \\(\hat R\\).
        rhat: f64,
    },
    /// The left weight changes by more than [`DISCRETISATION_LIMIT`] and three jackknife
    /// errors when the quadrature uses every second grid point.
    DiscretisationError {
        /// \\(|w_h - w_{2h}|\\).
        left_weight_shift: f64,
    },
    /// The error of the left weight exceeds 0.05.
    UncertainWeights {
        /// The left weight.
        left_weight: f64,
        /// Its error (jackknife plus discretisation).
        error: f64,
    },
    /// The tether is weaker than the hidden units can bend the free energy along the order
    /// parameter ([`super::tether_curvature_bound`]): the tethered law can have two
    /// components at some targets, and \\(p(\hat m)\\) and the mode weights can be wrong by
    /// many nats whatever the replicas say.
    TetherBelowCurvature {
        /// The tether strength \\(\alpha\\).
        alpha: f64,
        /// The bound \\(K\\) that \\(\alpha\\) should exceed.
        bound: f64,
    },
    /// The generated samples' left weight disagrees with \\(p(\hat m)\\)'s by more than 4
    /// standard errors ([`sample`]).
    SamplesDisagree {
        /// The samples' left weight.
        samples_left: f64,
        /// Its binomial standard error.
        samples_left_se: f64,
        /// \\(p(\hat m)\\)'s left weight.
        profile_left: f64,
        /// Its error.
        profile_left_se: f64,
    },
}

impl std::fmt::Display for TmcWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::GridCutsDistribution { edge_log_ratio } => write!(
                f,
                "p(m_hat) at the grid's ends is e^{edge_log_ratio:.1} of its maximum: the grid \
                 may cut the distribution; widen it"
            ),
            Self::CoarseGrid { spacing, limit } => write!(
                f,
                "grid spacing {spacing:.3e} exceeds 1/sqrt(alpha) = {limit:.3e}: the quadrature \
                 of Omega' is coarse; use more grid points"
            ),
            Self::NoErrorBars => write!(
                f,
                "one replica per grid point: p(m_hat) and the mode weights have no error bars"
            ),
            Self::NotConverged {
                points,
                point,
                m_hat,
                rhat,
            } => write!(
                f,
                "the replicas disagree (R-hat > {RHAT_LIMIT}) at {points} grid point(s), worst \
                 R-hat {rhat:.2} at m_hat = {m_hat:.4} (point {point}): the tethered law there \
                 has components the runs do not connect, so p(m_hat) and the mode weights may be \
                 biased beyond their error bars; use a larger alpha, longer burn-in or more \
                 replicas"
            ),
            Self::DiscretisationError { left_weight_shift } => write!(
                f,
                "the left weight moves by {left_weight_shift:.3} when every second grid point is \
                 dropped: the quadrature is not converged; use more grid points"
            ),
            Self::UncertainWeights { left_weight, error } => write!(
                f,
                "the mode weights of p(m_hat) are uncertain (left weight {left_weight:.3} +- \
                 {error:.3}): use more replicas or measured sweeps"
            ),
            Self::TetherBelowCurvature { alpha, bound } => write!(
                f,
                "alpha = {alpha:.3e} is below K = {bound:.3e}, the largest downward curvature the \
                 hidden units can give the free energy along the direction: the tethered law can \
                 have two components (a hidden unit on or off) that the chains do not connect, \
                 so p(m_hat) and the mode weights can be wrong by many nats whatever R-hat says; \
                 use alpha above K (e.g. {:.2e}) with a grid spacing below 1/sqrt(alpha) and a \
                 burn-in of thousands of sweeps (strong tethers accept few moves)",
                1.25 * bound
            ),
            Self::SamplesDisagree {
                samples_left,
                samples_left_se,
                profile_left,
                profile_left_se,
            } => {
                let z = (samples_left - profile_left)
                    / (samples_left_se.powi(2) + profile_left_se.powi(2)).sqrt();
                write!(
                    f,
                    "the samples' left weight {samples_left:.3} +- {samples_left_se:.3} disagrees \
                     with p(m_hat)'s {profile_left:.3} +- {profile_left_se:.3} ({z:.1} standard \
                     errors): the TMC runs at fixed m_hat may be too short"
                )
            }
        }
    }
}

/// What [`measure`] returns: the profile from dispersed fresh chains, its reconstruction, the
/// deepest barrier, the errors of \\(\ln p\\) and of the weight left of the barrier, and why
/// the result may not be trusted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// \\(\langle m \rangle_{\hat m}\\) on the grid, with every replica's mean and
    /// \\(\hat R\\).
    pub profile: Profile,
    /// \\(\Omega\\) and \\(p(\hat m)\\).
    pub reconstruction: Reconstruction,
    /// The deepest barrier of \\(p(\hat m)\\), if it has an interior dip.
    pub barrier: Option<Barrier>,
    /// Error of `barrier.left_weight`: `left_weight_jackknife + left_weight_discretisation`;
    /// NaN with a single replica or without a barrier.
    pub left_weight_se: f64,
    /// The delete-one-replica jackknife error of the left weight ([`jackknife_error`]).
    #[serde(default)]
    pub left_weight_jackknife: f64,
    /// \\(|w_h - w_{2h}|\\): the change of the left weight when the quadrature uses every
    /// second grid point (the trapezoid rule's error is \\(O(h^2)\\) where \\(\Omega'\\) is
    /// smooth, so this bounds it by about three times; where \\(\Omega'\\) jumps it is
    /// \\(O(h)\\) and this measures it directly).
    #[serde(default)]
    pub left_weight_discretisation: f64,
    /// Error of \\(\ln p(\hat m_j)\\) at every grid point: the jackknife over replicas plus
    /// the same grid-versus-every-second-point difference (at the points dropped, the larger
    /// of their neighbours').
    #[serde(default)]
    pub log_p_error: Vec<f64>,
    /// Conditions under which the reconstruction is not reliable.
    pub warnings: Vec<TmcWarning>,
}

impl Measured {
    /// No warning was raised.
    pub fn is_trusted(&self) -> bool {
        self.warnings.is_empty()
    }
}

/// Measures the tethered profile of `rbm` from scratch and reconstructs \\(p(\hat m)\\) with
/// error bars that say when it cannot be trusted:
///
/// 1. `grid.len() * settings.replicas` chains with streams from `seed` ([`profile_chains`]),
///    each started a few tether widths to one side or the other of its target
///    ([`disperse_chains`]), so that a tethered law with two components makes the replicas
///    disagree, while no chain has far to travel;
/// 2. the profile ([`measure_profile`]) with the replicas' \\(\hat R\\) at every point, and
///    its reconstruction ([`reconstruct`]) and deepest barrier;
/// 3. the errors: a delete-one-replica jackknife ([`jackknife_error`]) of \\(\ln p(\hat m_j)\\)
///    and of the left weight (the replicas of different grid points are independent, so
///    dropping replica \\(q\\) at every point leaves \\(R\\) independent groups), plus the
///    discretisation error \\(|I_h - I_{2h}|\\) of the same quantity reconstructed from every
///    second grid point, added linearly (it is a bias, not noise);
/// 4. the warnings ([`TmcWarning`]), among them [`TmcWarning::TetherBelowCurvature`] when the
///    hidden units are discrete and `settings.alpha` does not exceed
///    [`super::tether_curvature_bound`].
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
    check_grid(grid)?;
    let mut chains = profile_chains(rbm, grid.len() * settings.replicas, seed);
    if order.k() == 1 && settings.replicas > 0 {
        disperse_chains(
            rbm,
            order,
            grid,
            settings.replicas,
            settings.alpha,
            &mut chains,
            par,
        )?;
    }
    let profile = measure_profile(rbm, order, grid, settings, &mut chains, 1.0, par)?;
    let mut measured = assess(profile, settings)?;
    measured
        .warnings
        .extend(curvature_warning(rbm, order, settings.alpha)?);
    Ok(measured)
}

/// [`TmcWarning::TetherBelowCurvature`] when the tether strength `alpha` does not exceed the
/// hidden units' curvature bound \\(K\\) along `order` ([`super::tether_curvature_bound`]);
/// `None` above it, and for real-valued hidden units (no bound).
///
/// # Errors
/// [`ebm_core::Error::ShapeMismatch`] if the visible width differs from the order
/// parameter's.
pub fn curvature_warning<V, H>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    alpha: f64,
) -> Result<Option<TmcWarning>>
where
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    let bound = super::tether_curvature_bound(rbm, order)?;
    Ok(bound
        .filter(|&k| alpha <= k)
        .map(|bound| TmcWarning::TetherBelowCurvature { alpha, bound }))
}

/// Steps 2–4 of [`measure`] for a profile measured by other means (e.g. with persistent
/// chains by [`measure_profile`]): its reconstruction, deepest barrier, the jackknife and
/// discretisation errors of \\(\ln p\\) and of the left weight, and the warnings.
/// `settings.alpha` reconstructs; `settings.replicas` only decides [`TmcWarning::NoErrorBars`]
/// (the jackknife takes the replicas from `profile.replica_means`).
///
/// # Errors
/// As [`reconstruct`].
pub fn assess(profile: Profile, settings: &ProfileSettings) -> Result<Measured> {
    let reconstruction = profile.reconstruct(settings.alpha)?;
    let barrier = reconstruction.barrier();
    let e = profile_errors(&profile, &reconstruction, barrier.as_ref(), settings.alpha)?;
    let left_weight_se = e.left_jackknife + e.left_discretisation;
    let warnings = profile_warnings(
        &profile,
        &reconstruction,
        settings,
        barrier,
        left_weight_se,
        e.left_jackknife,
        e.left_discretisation,
    );
    Ok(Measured {
        profile,
        reconstruction,
        barrier,
        left_weight_se,
        left_weight_jackknife: e.left_jackknife,
        left_weight_discretisation: e.left_discretisation,
        log_p_error: e.log_p,
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
    pub warnings: Vec<TmcWarning>,
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
    let values = order.project_columns(&generated.state.chains.visible);
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
            warnings.push(TmcWarning::SamplesDisagree {
                samples_left: m.samples_left,
                samples_left_se: m.samples_left_se,
                profile_left: m.profile_left,
                profile_left_se: m.profile_left_se,
            });
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

/// The errors computed by [`measure`].
struct ProfileErrors {
    /// Error of \\(\ln p\\) per grid point (jackknife plus discretisation).
    log_p: Vec<f64>,
    /// Jackknife error of the left weight (NaN without a barrier or with one replica).
    left_jackknife: f64,
    /// \\(|w_h - w_{2h}|\\) (NaN without a barrier, 0 on fewer than 3 points).
    left_discretisation: f64,
}

/// The cumulative distribution of `rec` at `m` (linear between grid points).
fn cdf_at(rec: &Reconstruction, m: f64) -> f64 {
    let c = rec.cdf();
    let g = &rec.grid;
    let j = g.partition_point(|&x| x < m).clamp(1, g.len() - 1);
    let t = ((m - g[j - 1]) / (g[j] - g[j - 1])).clamp(0.0, 1.0);
    c[j - 1] + t * (c[j] - c[j - 1])
}

/// Jackknife over replicas and grid-versus-every-second-point discretisation errors of
/// \\(\ln p\\) and of the weight left of `barrier.saddle` (see [`measure`]).
fn profile_errors(
    profile: &Profile,
    rec: &Reconstruction,
    barrier: Option<&Barrier>,
    alpha: f64,
) -> Result<ProfileErrors> {
    let g = &profile.grid;
    let n = g.len();
    let r = profile.replica_means.len().checked_div(n).unwrap_or(0);
    // Jackknife: drop replica q at every grid point.
    let mut lp_loo = vec![Vec::with_capacity(r); n];
    let mut w_loo = Vec::with_capacity(r);
    if r >= 2 && profile.replica_means.len() == n * r {
        for q in 0..r {
            let gradient: Vec<f64> = (0..n)
                .map(|j| {
                    let reps = &profile.replica_means[j * r..(j + 1) * r];
                    let mean = (reps.iter().sum::<f64>() - reps[q]) / (r - 1) as f64;
                    g[j] - mean
                })
                .collect();
            let rq = reconstruct(g, &gradient, alpha)?;
            for (l, x) in lp_loo.iter_mut().zip(&rq.log_density) {
                l.push(*x);
            }
            if let Some(b) = barrier {
                w_loo.push(cdf_at(&rq, b.saddle));
            }
        }
    }
    let mut log_p: Vec<f64> = lp_loo.iter().map(|l| jackknife_error(l)).collect();
    let left_jackknife = match barrier {
        Some(_) => jackknife_error(&w_loo),
        None => f64::NAN,
    };
    // Discretisation: the same reconstruction from every second point.
    let mut left_discretisation = barrier.map_or(f64::NAN, |_| 0.0);
    if n >= 3 {
        let coarse: Vec<usize> = (0..n).step_by(2).collect();
        let cg: Vec<f64> = coarse.iter().map(|&j| g[j]).collect();
        let gradient = profile.gradient();
        let cgrad: Vec<f64> = coarse.iter().map(|&j| gradient[j]).collect();
        let rc = reconstruct(&cg, &cgrad, alpha)?;
        let even: Vec<f64> = coarse
            .iter()
            .zip(&rc.log_density)
            .map(|(&j, l)| (rec.log_density[j] - l).abs())
            .collect();
        for (j, e) in log_p.iter_mut().enumerate() {
            let d = if j % 2 == 0 {
                even[j / 2]
            } else {
                let right = even.get(j.div_ceil(2)).copied().unwrap_or(0.0);
                even[j / 2].max(right)
            };
            *e = if e.is_nan() { d } else { *e + d };
        }
        if let Some(b) = barrier {
            left_discretisation = (b.left_weight - cdf_at(&rc, b.saddle)).abs();
        }
    }
    if r < 2 {
        log_p.iter_mut().for_each(|e| *e = f64::NAN);
    }
    Ok(ProfileErrors {
        log_p,
        left_jackknife,
        left_discretisation,
    })
}

/// The warnings of [`measure`].
fn profile_warnings(
    profile: &Profile,
    rec: &Reconstruction,
    settings: &ProfileSettings,
    barrier: Option<Barrier>,
    left_weight_se: f64,
    left_jackknife: f64,
    left_discretisation: f64,
) -> Vec<TmcWarning> {
    let mut w = Vec::new();
    let lp = &rec.log_density;
    let max = lp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let edge = lp[0].max(lp[lp.len() - 1]) - max;
    if edge > -10.0 {
        w.push(TmcWarning::GridCutsDistribution {
            edge_log_ratio: edge,
        });
    }
    let h = rec.grid.windows(2).map(|x| x[1] - x[0]).fold(0.0, f64::max);
    let limit = 1.0 / settings.alpha.sqrt();
    if h > limit {
        w.push(TmcWarning::CoarseGrid { spacing: h, limit });
    }
    if settings.replicas < 2 {
        w.push(TmcWarning::NoErrorBars);
    }
    let over: Vec<usize> = (0..profile.rhat.len())
        .filter(|&j| profile.rhat[j] > RHAT_LIMIT)
        .collect();
    if let Some(&point) = over
        .iter()
        .max_by(|&&a, &&b| profile.rhat[a].total_cmp(&profile.rhat[b]))
    {
        w.push(TmcWarning::NotConverged {
            points: over.len(),
            point,
            m_hat: profile.grid[point],
            rhat: profile.rhat[point],
        });
    }
    // |w_h - w_2h| also holds the noise of the dropped points (about one jackknife error):
    // warn only when it is both large and well above that noise.
    if left_discretisation > DISCRETISATION_LIMIT.max(3.0 * left_jackknife) {
        w.push(TmcWarning::DiscretisationError {
            left_weight_shift: left_discretisation,
        });
    }
    if let Some(b) = barrier
        && left_weight_se > 0.05
    {
        w.push(TmcWarning::UncertainWeights {
            left_weight: b.left_weight,
            error: left_weight_se,
        });
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
    fn assess_flags_disagreeing_replicas_and_reports_errors() {
        // A flat gradient Omega' = m - 0.5 (a Gaussian p) measured by two replicas per point,
        // which disagree by 0.2 at point 10 only.
        let grid = uniform_grid(0.0, 1.0, 21).unwrap();
        let n = grid.len();
        let mut replica_means = Vec::new();
        let mut rhat = Vec::new();
        for (j, &g) in grid.iter().enumerate() {
            let m = 0.5 + 0.5 * (g - 0.5) - if j == 10 { 0.1 } else { 0.0 };
            let d = if j == 10 { 0.1 } else { 1e-3 };
            replica_means.extend([m - d, m + d]);
            rhat.push(gelman_rubin(&[m - d, m + d], &[1e-4, 1e-4], 100));
        }
        let mean_order: Vec<f64> = replica_means
            .chunks(2)
            .map(|c| 0.5 * (c[0] + c[1]))
            .collect();
        let profile = Profile {
            grid: grid.clone(),
            mean_order,
            std_error: vec![1e-3; n],
            replica_means,
            rhat,
        };
        let settings = ProfileSettings {
            alpha: 20.0,
            replicas: 2,
            burn_in: 0,
            measure: 100,
        };
        let m = assess(profile, &settings).unwrap();
        assert_eq!(m.log_p_error.len(), n);
        assert!(m.log_p_error.iter().all(|e| e.is_finite() && *e >= 0.0));
        let nc = m
            .warnings
            .iter()
            .find_map(|w| match w {
                TmcWarning::NotConverged { points, point, .. } => Some((*points, *point)),
                _ => None,
            })
            .expect("NotConverged");
        assert_eq!(nc, (1, 10));
        assert!(!m.is_trusted());
        assert!(m.warnings.iter().all(|w| !w.to_string().is_empty()));
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

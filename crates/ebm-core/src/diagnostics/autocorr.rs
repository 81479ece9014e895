//! Autocorrelation times and effective sample sizes (PTT paper; tethered-MC paper).
//!
//! For series `x_i(s)`, `i = 1..R` (chains), `s = 0..n_i-1`, with the common mean `x̄` over all
//! points, the normalised autocorrelation is
//!
//! `ρ(t) = C(t)/C(0)`, `C(t) = Σ_i Σ_{s < n_i - t} (x_i(s) - x̄)(x_i(s+t) - x̄) / Σ_i (n_i - t)`,
//!
//! the "mean over i and t0" of PTT paper. Conventions (Sokal 1997):
//!
//! - integrated time `τ_int = 1/2 + Σ_{t=1}^{W} ρ(t)`; the variance of a sample mean of `n`
//!   correlated points is `2 τ_int Var(x)/n`, so the effective sample size is `n / (2 τ_int)`.
//!   For an AR(1) series `x_{s+1} = ρ x_s + ε`: `τ_int = (1+ρ)/(2(1-ρ))` and `2τ_int = (1+ρ)/(1-ρ)`.
//!   The PTT paper prints the sum from `t = 0`, which adds 1 (PTT paper); this crate
//!   uses Sokal's form.
//! - automatic window: the smallest `W` with `W >= c τ_int(W)` (`c = 6` is the tethered-MC
//!   paper's κ; Sokal recommends 4–10). Sokal's error estimate:
//!   `σ(τ_int) ≈ τ_int sqrt(2(2W+1)/n)`.
//! - exponential time: `ρ(t) ~ A exp(-t/τ_exp)` at large `t`; for AR(1), `τ_exp = -1/ln ρ`.

use crate::error::{Error, Result};

fn invalid(name: &str, reason: String) -> Error {
    Error::InvalidParameter {
        name: name.into(),
        reason,
    }
}

fn constant() -> Error {
    invalid("series", "the series is constant (zero variance)".into())
}

fn check(series: &[&[f64]]) -> Result<(f64, usize, usize)> {
    let total: usize = series.iter().map(|s| s.len()).sum();
    let min_len = series.iter().map(|s| s.len()).min().unwrap_or(0);
    if series.is_empty() || min_len < 2 {
        return Err(invalid(
            "series",
            "autocorrelation needs at least one series, each of length >= 2".into(),
        ));
    }
    if series.iter().any(|s| s.iter().any(|x| !x.is_finite())) {
        return Err(invalid("series", "a value is NaN or infinite".into()));
    }
    let mean = series.iter().flat_map(|s| s.iter()).sum::<f64>() / total as f64;
    Ok((mean, total, min_len))
}

struct Acf<'a> {
    series: &'a [&'a [f64]],
    mean: f64,
    c0: f64,
}

impl<'a> Acf<'a> {
    fn new(series: &'a [&'a [f64]], mean: f64) -> Self {
        let mut a = Acf {
            series,
            mean,
            c0: 1.0,
        };
        a.c0 = a.cov(0);
        a
    }
    fn cov(&self, t: usize) -> f64 {
        let (mut sum, mut count) = (0.0, 0usize);
        for s in self.series {
            if s.len() > t {
                let m = self.mean;
                sum += s[..s.len() - t]
                    .iter()
                    .zip(&s[t..])
                    .map(|(a, b)| (a - m) * (b - m))
                    .sum::<f64>();
                count += s.len() - t;
            }
        }
        sum / count as f64
    }
    fn rho(&self, t: usize) -> f64 {
        self.cov(t) / self.c0
    }
}

/// `ρ(t)` for `t = 0..=max_lag` (see the module documentation); `ρ(0) = 1`.
///
/// # Errors
/// [`Error::InvalidParameter`] for no series, a series shorter than 2, non-finite values, a
/// constant series (zero variance) or `max_lag >=` the shortest length.
pub fn autocorrelation(series: &[&[f64]], max_lag: usize) -> Result<Vec<f64>> {
    let (mean, _, min_len) = check(series)?;
    if max_lag >= min_len {
        return Err(invalid(
            "max_lag",
            format!("{max_lag} must be below the shortest series length {min_len}"),
        ));
    }
    let acf = Acf::new(series, mean);
    if acf.c0 <= 0.0 {
        return Err(constant());
    }
    Ok((0..=max_lag).map(|t| acf.rho(t)).collect())
}

/// Result of [`integrated_autocorrelation_time`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntegratedTime {
    /// `τ_int = 1/2 + Σ_{t=1}^{W} ρ(t)` (Sokal convention).
    pub tau: f64,
    /// The automatic window `W`.
    pub window: usize,
    /// Sokal's error estimate `τ sqrt(2(2W+1)/n)`.
    pub std_error: f64,
    /// Total number of points `n = Σ_i n_i`.
    pub n_points: usize,
    /// `false` if the window condition was not met before `W` reached half the shortest series
    /// (the series is too short for a reliable estimate; `tau` is then a lower bound).
    pub converged: bool,
}

impl IntegratedTime {
    /// Effective sample size `n / (2 τ_int)`.
    pub fn ess(&self) -> f64 {
        self.n_points as f64 / (2.0 * self.tau)
    }
}

/// Integrated autocorrelation time with Sokal's automatic window `W >= c τ_int(W)`.
///
/// # Errors
/// As [`autocorrelation`], and [`Error::InvalidParameter`] if `c <= 0` or if the windowed sum is
/// not positive (a strongly anticorrelated series, e.g. an index process that alternates every
/// step: `τ_int` is then undefined rather than tiny).
pub fn integrated_autocorrelation_time(series: &[&[f64]], c: f64) -> Result<IntegratedTime> {
    let (mean, n, min_len) = check(series)?;
    if !(c > 0.0 && c.is_finite()) {
        return Err(invalid(
            "c",
            format!("window constant {c} must be finite and > 0"),
        ));
    }
    let acf = Acf::new(series, mean);
    if acf.c0 <= 0.0 {
        return Err(constant());
    }
    let mut tau = 0.5;
    let mut window = 0;
    let mut converged = false;
    let max_w = min_len / 2;
    for w in 1..=max_w.max(1) {
        if w >= min_len {
            break;
        }
        tau += acf.rho(w);
        window = w;
        if w as f64 >= c * tau {
            converged = true;
            break;
        }
    }
    if tau <= 0.0 {
        return Err(invalid(
            "series",
            format!(
                "the windowed sum gives tau_int = {tau:.3} <= 0 (an anticorrelated series): \
                 the integrated time is not defined for it"
            ),
        ));
    }
    Ok(IntegratedTime {
        tau,
        window,
        std_error: tau * (2.0 * (2 * window + 1) as f64 / n as f64).sqrt(),
        n_points: n,
        converged,
    })
}

/// Effective sample size `n / (2 τ_int)` with the automatic window `c = 6`.
///
/// # Errors
/// As [`integrated_autocorrelation_time`].
pub fn effective_sample_size(series: &[&[f64]]) -> Result<f64> {
    Ok(integrated_autocorrelation_time(series, 6.0)?.ess())
}

/// Result of [`exponential_autocorrelation_time`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExponentialTime {
    /// `τ_exp` from the fit `ln ρ(t) ≈ a - t/τ_exp`.
    pub tau: f64,
    /// The lags `(t_first, t_last)` used in the fit.
    pub fit_range: (usize, usize),
}

/// Exponential autocorrelation time by a weighted least-squares fit of `ln ρ(t)` against `t`.
///
/// Range (automatic): `t_last` is the last lag of the initial run of lags with
/// `ρ(t) > 3 σ_B(t)`, where `σ_B(t)² = (1 + 2 Σ_{s=1}^{t-1} ρ(s)²)/n` is Bartlett's variance of
/// `ρ(t)`; `t_first = max(1, t_last/3)` discards the short-time transient. Weights `ρ(t)²/σ_B(t)²`
/// (the inverse variance of `ln ρ(t)` by the delta method). With a single usable lag,
/// `τ_exp = -1/ln ρ(1)`.
///
/// # Errors
/// As [`autocorrelation`]; [`Error::InvalidParameter`] if `ρ(1)` is not significantly positive
/// (no measurable correlation: `τ_exp` is below one step).
pub fn exponential_autocorrelation_time(series: &[&[f64]]) -> Result<ExponentialTime> {
    let (mean, n, min_len) = check(series)?;
    let acf = Acf::new(series, mean);
    if acf.c0 <= 0.0 {
        return Err(constant());
    }
    let mut rhos = vec![1.0];
    let mut sum_sq = 0.0;
    let mut sigmas = vec![0.0];
    for t in 1..min_len / 2 {
        let r = acf.rho(t);
        let sigma = ((1.0 + 2.0 * sum_sq) / n as f64).sqrt();
        if r <= 3.0 * sigma {
            break;
        }
        rhos.push(r);
        sigmas.push(sigma);
        sum_sq += r * r;
    }
    let t_last = rhos.len() - 1;
    if t_last == 0 {
        return Err(invalid(
            "series",
            "rho(1) is not significantly positive: no measurable exponential time".into(),
        ));
    }
    if t_last == 1 {
        return Ok(ExponentialTime {
            tau: -1.0 / rhos[1].min(1.0 - 1e-15).ln(),
            fit_range: (1, 1),
        });
    }
    let t_first = (t_last / 3).max(1);
    let (mut sw, mut st, mut sy, mut stt, mut sty) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for t in t_first..=t_last {
        let w = (rhos[t] / sigmas[t]).powi(2);
        let (x, y) = (t as f64, rhos[t].ln());
        sw += w;
        st += w * x;
        sy += w * y;
        stt += w * x * x;
        sty += w * x * y;
    }
    let slope = (sw * sty - st * sy) / (sw * stt - st * st);
    if slope.is_nan() || slope >= 0.0 {
        return Err(invalid(
            "series",
            "the autocorrelation does not decay over the fit range".into(),
        ));
    }
    Ok(ExponentialTime {
        tau: -1.0 / slope,
        fit_range: (t_first, t_last),
    })
}

/// Normalised importance-sampling ESS of PTT Eq. 38, from log-weights `ℓ_r = -W_r`:
/// `ESS = (R^{-1} Σ_r e^{ℓ_r})² / (R^{-1} Σ_r e^{2ℓ_r}) ∈ [1/R, 1]`, computed after shifting
/// by `max_r ℓ_r` (PTT paper). 1 for equal weights, `1/R` for one non-zero weight.
///
/// # Errors
/// [`Error::InvalidParameter`] for an empty slice or a NaN / `+∞` log-weight, or if every weight is 0.
pub fn importance_ess_fraction(log_weights: &[f64]) -> Result<f64> {
    if log_weights.is_empty()
        || log_weights
            .iter()
            .any(|x| x.is_nan() || *x == f64::INFINITY)
    {
        return Err(invalid(
            "log_weights",
            "must be non-empty, not NaN and not +inf".into(),
        ));
    }
    let m = log_weights
        .iter()
        .cloned()
        .fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return Err(invalid("log_weights", "every weight is zero".into()));
    }
    let r = log_weights.len() as f64;
    let (s1, s2) = log_weights.iter().fold((0.0, 0.0), |(a, b), &l| {
        let w = (l - m).exp();
        (a + w, b + w * w)
    });
    Ok((s1 / r).powi(2) / (s2 / r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, StandardNormal};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn ar1(rho: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let s = (1.0 - rho * rho).sqrt();
        let mut x: f64 = StandardNormal.sample(&mut rng);
        (0..n)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                x = rho * x + s * z;
                x
            })
            .collect()
    }

    #[test]
    fn ar1_integrated_time() {
        for (rho, seed) in [(0.5, 1), (0.9, 2), (0.97, 3)] {
            let x = ar1(rho, 400_000, seed);
            let it = integrated_autocorrelation_time(&[&x], 6.0).unwrap();
            let exact = (1.0 + rho) / (2.0 * (1.0 - rho));
            assert!(it.converged);
            assert!(
                (it.tau - exact).abs() < 4.0 * it.std_error,
                "rho {rho}: {it:?} vs {exact}"
            );
            // the error bar is informative (a few percent), not vacuous
            assert!(it.std_error < 0.05 * exact);
            assert!((it.ess() - 400_000.0 * (1.0 - rho) / (1.0 + rho)).abs() < 0.1 * it.ess());
        }
    }

    #[test]
    fn iid_series_has_tau_one_half() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let x: Vec<f64> = (0..100_000).map(|_| rng.random::<f64>()).collect();
        let it = integrated_autocorrelation_time(&[&x], 6.0).unwrap();
        assert!((it.tau - 0.5).abs() < 4.0 * it.std_error, "{it:?}");
        assert!(exponential_autocorrelation_time(&[&x]).is_err());
    }

    #[test]
    fn ar1_exponential_time() {
        for (rho, seed) in [(0.8, 5), (0.95, 6)] {
            let x = ar1(rho, 1_000_000, seed);
            let te = exponential_autocorrelation_time(&[&x]).unwrap();
            let exact = -1.0 / f64::ln(rho);
            assert!(
                (te.tau - exact).abs() < 0.08 * exact,
                "rho {rho}: {te:?} vs {exact}"
            );
        }
    }

    #[test]
    fn two_state_chain_pooled_over_chains() {
        // symmetric two-state Markov chain flipping with prob p: rho(t) = (1-2p)^t
        let p = 0.05;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let chains: Vec<Vec<f64>> = (0..50)
            .map(|_| {
                let mut s = if rng.random::<bool>() { 1.0 } else { -1.0 };
                (0..10_000)
                    .map(|_| {
                        if rng.random::<f64>() < p {
                            s = -s;
                        }
                        s
                    })
                    .collect()
            })
            .collect();
        let refs: Vec<&[f64]> = chains.iter().map(|c| c.as_slice()).collect();
        let lam: f64 = 1.0 - 2.0 * p;
        let exact = 0.5 + lam / (1.0 - lam);
        let it = integrated_autocorrelation_time(&refs, 6.0).unwrap();
        assert!(
            (it.tau - exact).abs() < 4.0 * it.std_error,
            "{it:?} vs {exact}"
        );
        let acf = autocorrelation(&refs, 3).unwrap();
        assert_eq!(acf[0], 1.0);
        assert!((acf[1] - lam).abs() < 0.01);
        assert!((acf[3] - lam.powi(3)).abs() < 0.02);
    }

    #[test]
    fn anticorrelated_series_has_no_integrated_time() {
        // A series that alternates every step (a two-rung index process swapping every round):
        // rho(1) = -1, so the windowed sum is 1/2 - 1 < 0 and tau_int is undefined.
        let x: Vec<f64> = (0..200).map(|s| (s % 2) as f64).collect();
        let err = integrated_autocorrelation_time(&[&x], 6.0).unwrap_err();
        assert!(err.to_string().contains("anticorrelated"), "{err}");
        // Control: a mildly anticorrelated AR(1) series (rho = -0.3) keeps a positive time
        // below the independent value 1/2, (1 + rho) / (2 (1 - rho)) = 0.269.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut y = vec![0.0f64; 20_000];
        for s in 1..y.len() {
            y[s] = -0.3 * y[s - 1] + rng.random::<f64>() - 0.5;
        }
        let it = integrated_autocorrelation_time(&[&y], 6.0).unwrap();
        assert!(it.tau > 0.0 && it.tau < 0.5, "{it:?}");
    }

    #[test]
    fn importance_ess_limits() {
        assert!((importance_ess_fraction(&[3.0; 10]).unwrap() - 1.0).abs() < 1e-15);
        let mut lw = vec![f64::NEG_INFINITY; 10];
        lw[3] = 1000.0;
        assert!((importance_ess_fraction(&lw).unwrap() - 0.1).abs() < 1e-15);
        // two equal weights out of four: (2/4)^2 / (2/4) = 1/2; shift invariance with huge logs
        let v = importance_ess_fraction(&[1e5, 1e5, -1e300, f64::NEG_INFINITY]).unwrap();
        assert!((v - 0.5).abs() < 1e-15);
        assert!(importance_ess_fraction(&[]).is_err());
        assert!(importance_ess_fraction(&[f64::NAN]).is_err());
    }

    #[test]
    fn rejects_bad_input() {
        assert!(autocorrelation(&[&[1.0, 1.0, 1.0]], 1).is_err());
        assert!(autocorrelation(&[&[1.0]], 0).is_err());
        assert!(autocorrelation(&[&[1.0, 2.0, 3.0]], 3).is_err());
        assert!(integrated_autocorrelation_time(&[&[1.0, 2.0, 1.0]], 0.0).is_err());
    }
}

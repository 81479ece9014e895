//! Analytically tractable models of spin systems: Curie–Weiss and Hopfield
//! (Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).
//!
//! Both are energy models over \\(N\\) spins \\(v_i = \pm 1\\) tracked as an `N x B` matrix (one
//! column per chain), with closed forms for their partition functions and mean-field free
//! energies. Their RBM representations (spin visibles, Gaussian hidden units) are given by
//! `to_rbm` and tested as identities.

use crate::{Gaussian, Rbm, Spin};
use ebm_core::linalg::{MatRef, matmul};
use ebm_core::numerics::{log_sum_exp, normalised_exp};
use ebm_core::{
    EnergyModel, Enumerable, Error, ExactLogPartition, ExactSampling, Par, ProductCache, Scalar,
};
use nalgebra::DMatrix;
use rand::Rng;

/// Binary entropy per spin at magnetisation \\(m\\):
/// \\(\mathcal S(m) = -\sum_{\sigma=\pm1} \frac{1+\sigma m}{2}\log\frac{1+\sigma m}{2}\\).
pub fn binary_entropy(m: f64) -> f64 {
    let term = |p: f64| if p <= 0.0 { 0.0 } else { -p * p.ln() };
    term((1.0 + m) / 2.0) + term((1.0 - m) / 2.0)
}

/// The largest solution of \\(m = \tanh(a m + b)\\) reached by iteration from \\(m = 1\\)
/// (the positive spontaneous magnetisation for \\(a > 1, b = 0\\)), to machine precision.
pub fn mean_field_magnetisation(a: f64, b: f64) -> f64 {
    let mut m = 1.0f64;
    for _ in 0..100_000 {
        // Newton on g(m) = m - tanh(a m + b), guarded by a plain iteration if it leaves [-1, 1].
        let t = (a * m + b).tanh();
        let g = m - t;
        let dg = 1.0 - a * (1.0 - t * t);
        let next = if dg.abs() > 1e-12 { m - g / dg } else { t };
        let next = if (-1.0..=1.0).contains(&next) {
            next
        } else {
            t
        };
        if (next - m).abs() < 1e-16 {
            return next;
        }
        m = next;
    }
    m
}

/// \\(\log \binom{n}{k}\\) for all \\(k = 0..=n\\), by exact cumulative sums of logs.
pub(crate) fn log_binomials(n: usize) -> Vec<f64> {
    let mut lf = vec![0.0; n + 1];
    for i in 1..=n {
        lf[i] = lf[i - 1] + (i as f64).ln();
    }
    (0..=n).map(|k| lf[n] - lf[k] - lf[n - k]).collect()
}

/// The Curie–Weiss model of \\(N\\) spins with coupling \\(J\\) and field \\(h\\):
///
/// \\[ E(v) = -\frac{J}{2N}\Big(\sum_i v_i\Big)^2 - h \sum_i v_i, \\]
///
/// (the sum over pairs includes \\(i = j\\), as in the AGS paper with \\(J = w^2\\)). Its energy
/// depends only on the magnetisation \\(m = \frac1N \sum_i v_i\\), so \\(Z_\beta\\) and the exact
/// law of \\(m\\) are sums over \\(N + 1\\) values, and exact sampling is exact for any \\(N\\).
/// For \\(h = 0\\) and \\(\beta J > 1\\) the law is bimodal, with modes at \\(\pm m^*\\),
/// \\(m^* = \tanh(\beta J m^*)\\).
#[derive(Clone, Debug, PartialEq)]
pub struct CurieWeiss {
    n: usize,
    coupling: f64,
    field: f64,
}

impl CurieWeiss {
    /// A model of `n` spins.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `n == 0` or a parameter is not finite.
    pub fn new(n: usize, coupling: f64, field: f64) -> ebm_core::Result<Self> {
        if n == 0 {
            return Err(Error::InvalidParameter {
                name: "n".into(),
                reason: "the Curie–Weiss model needs at least one spin".into(),
            });
        }
        if !coupling.is_finite() || !field.is_finite() {
            return Err(Error::InvalidParameter {
                name: "coupling/field".into(),
                reason: format!("must be finite, got J = {coupling}, h = {field}"),
            });
        }
        Ok(Self { n, coupling, field })
    }

    /// Number of spins.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Coupling \\(J\\).
    pub fn coupling(&self) -> f64 {
        self.coupling
    }

    /// Field \\(h\\).
    pub fn field(&self) -> f64 {
        self.field
    }

    /// Energy of a configuration with \\(k\\) spins up (magnetisation \\(M = 2k - N\\)).
    pub fn energy_of_up_count(&self, k: usize) -> f64 {
        let m = (2 * k) as f64 - self.n as f64;
        -self.coupling / (2.0 * self.n as f64) * m * m - self.field * m
    }

    /// Energy of one configuration of \\(\pm 1\\) spins.
    pub fn energy(&self, v: &[f64]) -> f64 {
        let m: f64 = v.iter().sum();
        -self.coupling / (2.0 * self.n as f64) * m * m - self.field * m
    }

    /// The exact law of the number of up spins, `p[k]` for \\(k = 0..=N\\), at `beta`:
    /// \\(p_k \propto \binom{N}{k} e^{-\beta E_k}\\).
    pub fn up_count_distribution(&self, beta: f64) -> Vec<f64> {
        normalised_exp(&self.log_up_count_weights(beta))
    }

    fn log_up_count_weights(&self, beta: f64) -> Vec<f64> {
        log_binomials(self.n)
            .iter()
            .enumerate()
            .map(|(k, lb)| lb - beta * self.energy_of_up_count(k))
            .collect()
    }

    /// The exact probability that the magnetisation is positive, counting \\(m = 0\\) (even
    /// \\(N\\)) as half: the weight of the \\(+\\) mode of the bimodal law. It is 1/2 without a
    /// field and moves away from 1/2 with one, which makes the model a test case with exactly
    /// known mode weights for samplers that must jump between modes.
    pub fn positive_mode_weight(&self, beta: f64) -> f64 {
        let p = self.up_count_distribution(beta);
        let n = self.n;
        p.iter()
            .enumerate()
            .map(|(k, pk)| match (2 * k).cmp(&n) {
                std::cmp::Ordering::Greater => *pk,
                std::cmp::Ordering::Equal => 0.5 * pk,
                std::cmp::Ordering::Less => 0.0,
            })
            .sum()
    }

    /// `n_samples` independent exact samples at `beta` as an `N x n_samples` matrix of
    /// \\(\pm 1\\) (one column per sample), from RNG streams derived from `seed`.
    pub fn exact_samples(&self, n_samples: usize, beta: f64, seed: u64) -> DMatrix<f64> {
        let mut x = self.new_state(n_samples);
        let mut rngs = ebm_core::RngStreams::new(seed, n_samples);
        self.sample_exact(&mut x, beta, rngs.as_mut_slice(), Par::Seq);
        x
    }

    /// Mean-field (large-\\(N\\)) free energy per spin in units of \\(k_B T\\):
    /// \\(f_\beta(m) = -\beta(J m^2 / 2 + h m) - \mathcal S(m)\\), so that
    /// \\(P(m) \asymp e^{-N f_\beta(m)}\\).
    pub fn mean_field_free_energy(&self, m: f64, beta: f64) -> f64 {
        -beta * (self.coupling * m * m / 2.0 + self.field * m) - binary_entropy(m)
    }

    /// The positive mean-field magnetisation \\(m^* = \tanh(\beta(J m^* + h))\\).
    pub fn mean_field_magnetisation(&self, beta: f64) -> f64 {
        mean_field_magnetisation(beta * self.coupling, beta * self.field)
    }

    /// The RBM representation (the AGS paper): \\(N\\) spin visibles with fields \\(h\\), one
    /// Gaussian hidden unit (\\(\gamma = 1, \theta = 0\\)) and weights \\(W_{i1} = \sqrt{J/N}\\).
    /// Summing out the hidden unit gives \\(F_\beta(v) = \beta E(v) - \frac12 \log\frac{2\pi}{\beta}\\),
    /// so both define the same law and \\(\log Z^{\rm RBM}_\beta = \log Z_\beta +
    /// \frac12\log\frac{2\pi}{\beta}\\). Requires \\(J \ge 0\\).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative coupling (no real weights represent it).
    pub fn to_rbm(&self) -> ebm_core::Result<Rbm<Spin<f64>, Gaussian<f64>>> {
        if self.coupling < 0.0 {
            return Err(Error::InvalidParameter {
                name: "coupling".into(),
                reason: format!(
                    "the Gaussian-hidden RBM form needs J >= 0, got {}",
                    self.coupling
                ),
            });
        }
        let w = (self.coupling / self.n as f64).sqrt();
        Rbm::new(
            Spin::new(vec![self.field; self.n]),
            Gaussian::standard(1),
            DMatrix::from_element(self.n, 1, w),
        )
    }

    /// The free-energy barrier per spin between the modes, \\(\Delta f = f(0) - f(m^*)\\)
    /// (the AGS paper, with the sign typo of Eq. 12 corrected); mode switches take a time
    /// \\(\sim e^{N \Delta f}\\) for Metropolis and for alternating Gibbs sampling.
    pub fn barrier(&self, beta: f64) -> f64 {
        let m = self.mean_field_magnetisation(beta);
        self.mean_field_free_energy(0.0, beta) - self.mean_field_free_energy(m, beta)
    }
}

impl EnergyModel for CurieWeiss {
    type Scalar = f64;
    type State = DMatrix<f64>;

    fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], _par: Par) {
        assert_eq!(x.nrows(), self.n, "CurieWeiss::energies: spins per chain");
        assert_eq!(
            out.len(),
            x.ncols(),
            "CurieWeiss::energies: one output per chain"
        );
        for (o, col) in out.iter_mut().zip(x.column_iter()) {
            *o = beta * self.energy(col.as_slice());
        }
    }

    fn new_state(&self, n_chains: usize) -> DMatrix<f64> {
        DMatrix::from_element(self.n, n_chains, 1.0)
    }
}

/// Nothing kept between energies and sweeps (the defaults).
impl ProductCache for CurieWeiss {}

impl ExactLogPartition for CurieWeiss {
    fn log_partition(&self, beta: f64) -> f64 {
        log_sum_exp(&self.log_up_count_weights(beta))
    }
}

/// Spin configurations listed by the bits of \\(k\\): bit \\(i\\) set means \\(v_i = +1\\).
/// Exact tests can list up to about \\(2^{20}\\) of them; the exact law for larger \\(N\\) is
/// the law of the up count ([`CurieWeiss::up_count_distribution`]).
impl Enumerable for CurieWeiss {
    fn n_states(&self) -> usize {
        spin_configurations(self.n)
    }

    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        write_spins(k, x.column_mut(chain).as_mut_slice());
    }

    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        spins_index(x.column(chain).as_slice())
    }
}

/// \\(2^n\\), saturating at `usize::MAX`.
fn spin_configurations(n: usize) -> usize {
    u32::try_from(n)
        .ok()
        .and_then(|n| 1usize.checked_shl(n))
        .unwrap_or(usize::MAX)
}

/// Writes configuration `k` of \\(\pm 1\\) spins: bit \\(i\\) of `k` set means `v[i] = +1`.
fn write_spins(k: usize, v: &mut [f64]) {
    for (i, s) in v.iter_mut().enumerate() {
        *s = if i < usize::BITS as usize && (k >> i) & 1 == 1 {
            1.0
        } else {
            -1.0
        };
    }
}

/// The inverse of [`write_spins`].
fn spins_index(v: &[f64]) -> usize {
    v.iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(i, _)| 1usize << i)
        .sum()
}

impl ExactSampling for CurieWeiss {
    /// Draws the number of up spins from its exact law, then which spins are up uniformly
    /// (a partial Fisher–Yates shuffle).
    fn sample_exact<R: Rng + Send>(
        &self,
        x: &mut DMatrix<f64>,
        beta: f64,
        rngs: &mut [R],
        _par: Par,
    ) {
        assert_eq!(
            x.nrows(),
            self.n,
            "CurieWeiss::sample_exact: spins per chain"
        );
        assert_eq!(
            rngs.len(),
            x.ncols(),
            "CurieWeiss::sample_exact: one RNG per chain"
        );
        let p = self.up_count_distribution(beta);
        let mut cdf = Vec::with_capacity(p.len());
        let mut acc = 0.0;
        for q in &p {
            acc += q;
            cdf.push(acc);
        }
        let mut idx: Vec<usize> = (0..self.n).collect();
        for (mut col, rng) in x.column_iter_mut().zip(rngs.iter_mut()) {
            let u = f64::uniform(rng) * acc;
            let k = cdf.partition_point(|&c| c <= u).min(self.n);
            for (i, j) in idx.iter_mut().enumerate() {
                *j = i;
            }
            col.fill(-1.0);
            for i in 0..k {
                let j = rng.random_range(i..self.n);
                idx.swap(i, j);
                col[idx[i]] = 1.0;
            }
        }
    }
}

/// The Hopfield model with \\(P\\) patterns \\(\xi^\mu \in \{\pm1\}^N\\), coupling \\(J = w^2\\)
/// and fields \\(h_i\\):
///
/// \\[ E(v) = -\frac{J}{2N}\sum_{\mu}\Big(\sum_i \xi^\mu_i v_i\Big)^2 - \sum_i h_i v_i \\]
///
/// (the AGS paper). For \\(\beta J > 1\\) its global minima in the large-\\(N\\) limit with
/// \\(P/N \to 0\\) are the \\(2P\\) Mattis states, with overlap \\(m^* = \tanh(\beta J m^*)\\) with
/// one pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct Hopfield {
    patterns: DMatrix<f64>,
    coupling: f64,
    fields: Vec<f64>,
}

/// Largest number of spins [`Hopfield::log_partition_exact`] enumerates.
pub const HOPFIELD_MAX_ENUMERATION: usize = 24;

impl Hopfield {
    /// A model with the given `N x P` patterns (entries \\(\pm 1\\)), coupling and fields.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for entries other than \\(\pm1\\), no spins, or non-finite
    /// parameters; [`Error::ShapeMismatch`] if `fields.len() != N`.
    pub fn new(patterns: DMatrix<f64>, coupling: f64, fields: Vec<f64>) -> ebm_core::Result<Self> {
        if patterns.nrows() == 0 {
            return Err(Error::InvalidParameter {
                name: "patterns".into(),
                reason: "need at least one spin".into(),
            });
        }
        if let Some(k) = patterns.iter().position(|&x| x != 1.0 && x != -1.0) {
            return Err(Error::InvalidParameter {
                name: "patterns".into(),
                reason: format!("entry {k} is {}, expected +1 or -1", patterns.as_slice()[k]),
            });
        }
        Error::check_len("Hopfield fields", patterns.nrows(), fields.len())?;
        Error::check_finite("Hopfield fields", &fields)?;
        if !coupling.is_finite() {
            return Err(Error::InvalidParameter {
                name: "coupling".into(),
                reason: format!("must be finite, got {coupling}"),
            });
        }
        Ok(Self {
            patterns,
            coupling,
            fields,
        })
    }

    /// The `N x P` patterns.
    pub fn patterns(&self) -> &DMatrix<f64> {
        &self.patterns
    }

    /// Coupling \\(J = w^2\\).
    pub fn coupling(&self) -> f64 {
        self.coupling
    }

    /// Fields \\(h_i\\).
    pub fn fields(&self) -> &[f64] {
        &self.fields
    }

    /// Overlaps \\(m_\mu = \frac1N \sum_i \xi^\mu_i v_i\\) of every chain: a `P x B` matrix.
    pub fn overlaps(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        let (n, p) = self.patterns.shape();
        assert_eq!(x.nrows(), n, "Hopfield::overlaps: spins per chain");
        let mut out = DMatrix::zeros(p, x.ncols());
        matmul(
            MatRef::col_major(self.patterns.as_slice(), n, p).t(),
            MatRef::col_major(x.as_slice(), n, x.ncols()),
            out.as_mut_slice(),
        );
        out /= n as f64;
        out
    }

    /// \\(\log Z_\beta\\) by enumerating the \\(2^N\\) configurations.
    ///
    /// # Errors
    /// [`Error::TooLarge`] for \\(N >\\) [`HOPFIELD_MAX_ENUMERATION`].
    pub fn log_partition_exact(&self, beta: f64) -> ebm_core::Result<f64> {
        let mut terms = Vec::new();
        self.for_each_energy_batch(beta, |e| terms.extend(e.iter().map(|v| -v)))?;
        Ok(log_sum_exp(&terms))
    }

    /// Calls `f` with the tempered energies of consecutive batches of all \\(2^N\\)
    /// configurations, in the order of their index.
    fn for_each_energy_batch(&self, beta: f64, mut f: impl FnMut(&[f64])) -> ebm_core::Result<()> {
        let n = self.patterns.nrows();
        if n > HOPFIELD_MAX_ENUMERATION {
            return Err(Error::TooLarge {
                what: "the Hopfield model".into(),
                states: 1u128 << n.min(127),
                limit: 1u128 << HOPFIELD_MAX_ENUMERATION,
            });
        }
        let total = 1usize << n;
        let batch = 4096.min(total);
        let mut e = vec![0.0; batch];
        let mut start = 0;
        while start < total {
            let len = batch.min(total - start);
            let x = DMatrix::from_fn(
                n,
                len,
                |i, k| if (start + k) >> i & 1 == 1 { 1.0 } else { -1.0 },
            );
            self.energies(&x, beta, &mut e[..len], Par::Seq);
            f(&e[..len]);
            start += len;
        }
        Ok(())
    }

    /// The exact probabilities of all \\(2^N\\) configurations at `beta`; configuration `c`
    /// has \\(v_i = +1\\) where bit `i` of `c` is set.
    ///
    /// # Errors
    /// [`Error::TooLarge`] for \\(N >\\) [`HOPFIELD_MAX_ENUMERATION`].
    pub fn exact_probabilities(&self, beta: f64) -> ebm_core::Result<Vec<f64>> {
        let mut log_w = Vec::new();
        self.for_each_energy_batch(beta, |e| log_w.extend(e.iter().map(|v| -v)))?;
        Ok(normalised_exp(&log_w))
    }

    /// `n_samples` independent exact samples at `beta` (by enumeration and inversion of the
    /// cumulative distribution), as an `N x n_samples` matrix of \\(\pm1\\).
    ///
    /// # Errors
    /// [`Error::TooLarge`] for \\(N >\\) [`HOPFIELD_MAX_ENUMERATION`].
    pub fn exact_samples(
        &self,
        n_samples: usize,
        beta: f64,
        seed: u64,
    ) -> ebm_core::Result<DMatrix<f64>> {
        let p = self.exact_probabilities(beta)?;
        let n = self.patterns.nrows();
        let mut cdf = Vec::with_capacity(p.len());
        let mut acc = 0.0;
        for q in &p {
            acc += q;
            cdf.push(acc);
        }
        let mut rng = ebm_core::RngStreams::auxiliary(seed, 0);
        let mut x = DMatrix::zeros(n, n_samples);
        for mut col in x.column_iter_mut() {
            let u = f64::uniform(&mut rng) * acc;
            let c = cdf.partition_point(|&v| v <= u).min(p.len() - 1);
            for i in 0..n {
                col[i] = if c >> i & 1 == 1 { 1.0 } else { -1.0 };
            }
        }
        Ok(x)
    }

    /// The RBM representation with "aligned" weights (the AGS paper): spin visibles with
    /// the model's fields, \\(P\\) standard Gaussian hidden units and
    /// \\(W_{i\mu} = \sqrt{J/N}\,\xi^\mu_i\\); \\(F_\beta(v) = \beta E(v) - \frac P2\log\frac{2\pi}{\beta}\\).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative coupling.
    pub fn to_rbm(&self) -> ebm_core::Result<Rbm<Spin<f64>, Gaussian<f64>>> {
        if self.coupling < 0.0 {
            return Err(Error::InvalidParameter {
                name: "coupling".into(),
                reason: format!(
                    "the Gaussian-hidden RBM form needs J >= 0, got {}",
                    self.coupling
                ),
            });
        }
        let (n, p) = self.patterns.shape();
        let scale = (self.coupling / n as f64).sqrt();
        Rbm::new(
            Spin::new(self.fields.clone()),
            Gaussian::standard(p),
            &self.patterns * scale,
        )
    }

    /// Large-\\(N\\) free energy per spin of a Mattis state with overlap \\(m\\) (in units of
    /// \\(k_B T\\), zero fields): \\(f_\beta(m) = -\beta J m^2/2 - \mathcal S(m)\\).
    pub fn mattis_free_energy(&self, m: f64, beta: f64) -> f64 {
        -beta * self.coupling * m * m / 2.0 - binary_entropy(m)
    }

    /// The Mattis overlap \\(m^* = \tanh(\beta J m^*)\\).
    pub fn mattis_overlap(&self, beta: f64) -> f64 {
        mean_field_magnetisation(beta * self.coupling, 0.0)
    }
}

impl EnergyModel for Hopfield {
    type Scalar = f64;
    type State = DMatrix<f64>;

    fn energies(&self, x: &DMatrix<f64>, beta: f64, out: &mut [f64], _par: Par) {
        let n = self.patterns.nrows() as f64;
        assert_eq!(
            out.len(),
            x.ncols(),
            "Hopfield::energies: one output per chain"
        );
        let m = self.overlaps(x);
        for (k, o) in out.iter_mut().enumerate() {
            let quad: f64 = m.column(k).iter().map(|v| v * v).sum();
            let lin: f64 = x
                .column(k)
                .iter()
                .zip(&self.fields)
                .map(|(a, b)| a * b)
                .sum();
            *o = beta * (-self.coupling * n / 2.0 * quad - lin);
        }
    }

    fn new_state(&self, n_chains: usize) -> DMatrix<f64> {
        DMatrix::from_element(self.patterns.nrows(), n_chains, 1.0)
    }
}

/// Nothing kept between energies and sweeps (the defaults).
impl ProductCache for Hopfield {}

/// Spin configurations listed by the bits of \\(k\\), as for [`CurieWeiss`]; exact tests list
/// up to about \\(2^{20}\\) of them.
impl Enumerable for Hopfield {
    fn n_states(&self) -> usize {
        spin_configurations(self.patterns.nrows())
    }

    fn write_state(&self, k: usize, x: &mut DMatrix<f64>, chain: usize) {
        write_spins(k, x.column_mut(chain).as_mut_slice());
    }

    fn state_index(&self, x: &DMatrix<f64>, chain: usize) -> usize {
        spins_index(x.column(chain).as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_and_magnetisation_satisfy_their_identities() {
        assert!((binary_entropy(0.0) - 2f64.ln()).abs() < 1e-15);
        assert_eq!(binary_entropy(1.0), 0.0);
        // log 2cosh x = S(tanh x) + x tanh x (the AGS paper).
        for &x in &[0.1, 0.7, 2.0] {
            let t = f64::tanh(x);
            assert!(((2.0 * x.cosh()).ln() - (binary_entropy(t) + x * t)).abs() < 1e-14);
        }
        let m = mean_field_magnetisation(1.21, 0.0);
        assert!((m - (1.21 * m).tanh()).abs() < 1e-15 && m > 0.3);
        assert!(mean_field_magnetisation(0.8, 0.0).abs() < 1e-6);
    }
}

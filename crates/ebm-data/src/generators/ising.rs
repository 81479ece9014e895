//! Equilibrium configurations of the 2D ferromagnetic Ising model by the Swendsen–Wang cluster
//! algorithm.
//!
//! Model: `L x L` periodic square lattice, spins `s_i ∈ {-1,+1}`, energy
//! `E(s) = -Σ_<ij> s_i s_j` (each nearest-neighbour bond once, `J = 1`, no field), Boltzmann
//! weight `exp(-β E)`. The PTT paper's "Ising 2D" set is 20 000 configurations at `β = 0.44` on
//! an 8 x 8 lattice (PTT paper; the lattice size is an inference there).
//!
//! Swendsen–Wang sweep: every bond between equal neighbours is activated with probability
//! `p = 1 - exp(-2β)`; the connected components of active bonds are flipped independently with
//! probability 1/2. The move leaves the Boltzmann distribution invariant, is ergodic and aperiodic
//! (at `β = 0` it draws independent uniform spins). Between two returned samples the generator
//! runs [`IsingConfig::sweeps_between`] sweeps.

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::dataset::{Dataset, Domain};
use crate::error::{Error, Result};

/// Parameters of [`ising_2d`].
#[derive(Debug, Clone, PartialEq)]
pub struct IsingConfig {
    /// Linear lattice size `L` (the dataset has `L^2` features, site `(r, c)` is feature `r*L + c`).
    pub l: usize,
    /// Inverse temperature `β >= 0` (critical point `β_c = ln(1 + √2)/2 ≈ 0.4407`).
    pub beta: f64,
    /// Number of configurations returned.
    pub n_samples: usize,
    /// Swendsen–Wang sweeps discarded before the first sample (from a random start).
    pub burn_in_sweeps: usize,
    /// Swendsen–Wang sweeps between two returned samples (>= 1).
    pub sweeps_between: usize,
}

impl IsingConfig {
    /// `L`, `β`, `n_samples` with 200 burn-in sweeps and 5 sweeps between samples.
    pub fn new(l: usize, beta: f64, n_samples: usize) -> Self {
        IsingConfig {
            l,
            beta,
            n_samples,
            burn_in_sweeps: 200,
            sweeps_between: 5,
        }
    }

    /// The PTT paper's set: `L = 8`, `β = 0.44`, 20 000 samples (PTT paper).
    pub fn ptt_paper() -> Self {
        Self::new(8, 0.44, 20_000)
    }
}

/// A Swendsen–Wang Markov chain on the `L x L` periodic lattice (exposed for diagnostics).
#[derive(Debug, Clone)]
pub struct SwendsenWang {
    l: usize,
    p_bond: f64,
    spins: Vec<i8>,
    parent: Vec<u32>,
    flip: Vec<u8>,
    rng: Xoshiro256PlusPlus,
}

impl SwendsenWang {
    /// A chain at inverse temperature `beta`, started from independent uniform spins.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `l < 2`, `l*l >= 2^32` or `beta` is negative or not finite.
    pub fn new(l: usize, beta: f64, seed: u64) -> Result<Self> {
        if l < 2 || (l as u64) * (l as u64) >= u32::MAX as u64 {
            return Err(Error::InvalidArgument(format!(
                "Ising lattice size L = {l} must be in 2..65536"
            )));
        }
        if !(beta.is_finite() && beta >= 0.0) {
            return Err(Error::InvalidArgument(format!(
                "inverse temperature {beta} must be finite and >= 0"
            )));
        }
        let n = l * l;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let spins = (0..n)
            .map(|_| if rng.random::<bool>() { 1 } else { -1 })
            .collect();
        Ok(SwendsenWang {
            l,
            p_bond: -(-2.0 * beta).exp_m1(),
            spins,
            parent: vec![0; n],
            flip: vec![0; n],
            rng,
        })
    }

    fn find(&mut self, mut i: u32) -> u32 {
        while self.parent[i as usize] != i {
            let g = self.parent[self.parent[i as usize] as usize];
            self.parent[i as usize] = g;
            i = g;
        }
        i
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a as u32), self.find(b as u32));
        if ra != rb {
            // attach the larger index to the smaller: deterministic, keeps trees shallow enough
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi as usize] = lo;
        }
    }

    /// One Swendsen–Wang sweep.
    pub fn sweep(&mut self) {
        let l = self.l;
        let n = l * l;
        for (i, p) in self.parent.iter_mut().enumerate() {
            *p = i as u32;
        }
        for r in 0..l {
            for c in 0..l {
                let i = r * l + c;
                let right = r * l + (c + 1) % l;
                let down = ((r + 1) % l) * l + c;
                for j in [right, down] {
                    if self.spins[i] == self.spins[j] && self.rng.random::<f64>() < self.p_bond {
                        self.union(i, j);
                    }
                }
            }
        }
        self.flip.iter_mut().for_each(|f| *f = 2);
        for i in 0..n {
            let root = self.find(i as u32) as usize;
            if self.flip[root] == 2 {
                self.flip[root] = u8::from(self.rng.random::<bool>());
            }
            if self.flip[root] == 1 {
                self.spins[i] = -self.spins[i];
            }
        }
    }

    /// The current spins, site `(r, c)` at index `r*L + c`.
    pub fn spins(&self) -> &[i8] {
        &self.spins
    }

    /// Energy `E = -Σ_<ij> s_i s_j` of the current state.
    pub fn energy(&self) -> f64 {
        let s: Vec<f64> = self.spins.iter().map(|&x| x as f64).collect();
        ising_energy(&s, self.l)
    }
}

/// Energy `E(s) = -Σ_<ij> s_i s_j` of a configuration on the `L x L` periodic lattice, site
/// `(r, c)` at index `r*L + c`, each bond counted once.
///
/// # Panics
/// If `spins.len() != l*l`.
pub fn ising_energy(spins: &[f64], l: usize) -> f64 {
    assert_eq!(spins.len(), l * l, "spins must have L^2 entries");
    let mut e = 0.0;
    for r in 0..l {
        for c in 0..l {
            let s = spins[r * l + c];
            e -= s * (spins[r * l + (c + 1) % l] + spins[((r + 1) % l) * l + c]);
        }
    }
    e
}

/// Equilibrium samples of the 2D Ising model (see the module documentation), as a
/// [`Domain::Spin`] dataset of `L^2` features and `n_samples` columns.
///
/// Deterministic given `seed`.
///
/// # Errors
/// As [`SwendsenWang::new`], and [`Error::InvalidArgument`] if `sweeps_between == 0`.
pub fn ising_2d(cfg: &IsingConfig, seed: u64) -> Result<Dataset> {
    if cfg.sweeps_between == 0 {
        return Err(Error::InvalidArgument("sweeps_between must be >= 1".into()));
    }
    let mut sw = SwendsenWang::new(cfg.l, cfg.beta, seed)?;
    for _ in 0..cfg.burn_in_sweeps {
        sw.sweep();
    }
    let n = cfg.l * cfg.l;
    let mut data = DMatrix::zeros(n, cfg.n_samples);
    for j in 0..cfg.n_samples {
        for _ in 0..cfg.sweeps_between {
            sw.sweep();
        }
        for (dst, &s) in data.column_mut(j).iter_mut().zip(sw.spins()) {
            *dst = s as f64;
        }
    }
    Dataset::new(data, Domain::Spin)
}

/// Complete elliptic integral of the first kind `K(k) = ∫_0^{π/2} dθ / sqrt(1 - k² sin² θ)`,
/// by the arithmetic–geometric mean `K(k) = π / (2 AGM(1, sqrt(1 - k²)))`, for `0 <= k < 1`.
pub fn elliptic_k(k: f64) -> f64 {
    let (mut a, mut b) = (1.0f64, (1.0 - k * k).sqrt());
    for _ in 0..60 {
        let (an, bn) = (0.5 * (a + b), (a * b).sqrt());
        a = an;
        b = bn;
        if (a - b).abs() <= 1e-16 * a {
            break;
        }
    }
    std::f64::consts::PI / (2.0 * a)
}

/// Onsager's exact internal energy per spin of the infinite 2D Ising model (`J = 1`):
///
/// `u(β) = -coth(2β) [1 + (2/π)(2 tanh²(2β) - 1) K(κ)]`, `κ = 2 sinh(2β) / cosh²(2β)`.
///
/// At `β_c` the product `(2 tanh²(2β) - 1) K(κ)` tends to 0 and `u = -√2`; this function
/// returns that limit when `κ` rounds to 1.
pub fn onsager_energy_per_spin(beta: f64) -> f64 {
    let t = 2.0 * beta;
    let kappa = 2.0 * t.sinh() / (t.cosh() * t.cosh());
    let coth = 1.0 / t.tanh();
    if kappa >= 1.0 - 1e-15 {
        return -coth;
    }
    let th = t.tanh();
    -coth * (1.0 + 2.0 / std::f64::consts::PI * (2.0 * th * th - 1.0) * elliptic_k(kappa))
}

/// Exact distributions of the energy and of `|M| = |Σ_i s_i|` for a small lattice, by enumeration
/// of all `2^(L²)` states.
#[derive(Debug, Clone, PartialEq)]
pub struct IsingExact {
    /// `(E, P(E))` for every attainable energy, increasing in `E`.
    pub energy: Vec<(f64, f64)>,
    /// `(|M|, P(|M|))` for every attainable `|M|`, increasing.
    pub abs_magnetisation: Vec<(f64, f64)>,
    /// Mean energy per spin `<E>/L²`.
    pub mean_energy_per_spin: f64,
}

/// Enumerates the `L x L` periodic Ising model at inverse temperature `beta` (see [`IsingExact`]).
///
/// # Errors
/// [`Error::InvalidArgument`] unless `2 <= L <= 5` (`2^25` states at most).
pub fn ising_exact(l: usize, beta: f64) -> Result<IsingExact> {
    if !(2..=5).contains(&l) {
        return Err(Error::InvalidArgument(format!(
            "exact enumeration needs 2 <= L <= 5, got {l}"
        )));
    }
    let n = l * l;
    let n_bonds = 2 * n;
    // energies are -2B..2B in steps of 4 (index (E + 2N)/2), |M| in 0..=N
    let mut pe = vec![0.0f64; 2 * n_bonds + 1];
    let mut pm = vec![0.0f64; n + 1];
    let mut z = 0.0;
    let mut esum = 0.0;
    // Weight relative to the ground state to avoid overflow.
    let mut spins = vec![0.0f64; n];
    for state in 0u64..(1u64 << n) {
        let mut m = 0i64;
        for (i, s) in spins.iter_mut().enumerate() {
            *s = if state >> i & 1 == 1 { 1.0 } else { -1.0 };
            m += *s as i64;
        }
        let e = ising_energy(&spins, l);
        let w = (-beta * (e + n_bonds as f64)).exp();
        pe[(e + n_bonds as f64) as usize] += w;
        pm[m.unsigned_abs() as usize] += w;
        z += w;
        esum += w * e;
    }
    let energy = pe
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0.0)
        .map(|(k, w)| (k as f64 - n_bonds as f64, w / z))
        .collect();
    let abs_magnetisation = pm
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0.0)
        .map(|(k, w)| (k as f64, w / z))
        .collect();
    Ok(IsingExact {
        energy,
        abs_magnetisation,
        mean_energy_per_spin: esum / z / n as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebm_testkit::chi_square;

    fn histogram(values: &[f64], support: &[(f64, f64)]) -> (Vec<u64>, Vec<f64>) {
        let mut counts = vec![0u64; support.len()];
        for v in values {
            let k = support
                .iter()
                .position(|(x, _)| x == v)
                .unwrap_or_else(|| panic!("value {v} outside the exact support"));
            counts[k] += 1;
        }
        (counts, support.iter().map(|s| s.1).collect())
    }

    fn sample_stats(beta: f64, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut cfg = IsingConfig::new(4, beta, 20_000);
        cfg.sweeps_between = 3;
        let d = ising_2d(&cfg, seed).unwrap();
        let e: Vec<f64> = (0..d.n_samples())
            .map(|j| ising_energy(d.sample(j), 4))
            .collect();
        let m: Vec<f64> = (0..d.n_samples())
            .map(|j| d.sample(j).iter().sum::<f64>().abs())
            .collect();
        (e, m)
    }

    #[test]
    fn l4_matches_exact_enumeration() {
        for (beta, seed) in [(0.3, 1), (0.44, 2), (0.6, 3)] {
            let exact = ising_exact(4, beta).unwrap();
            let (e, m) = sample_stats(beta, seed);
            let (ce, pe) = histogram(&e, &exact.energy);
            let (cm, pm) = histogram(&m, &exact.abs_magnetisation);
            let te = chi_square(&ce, &pe);
            let tm = chi_square(&cm, &pm);
            assert!(te.p_value > 1e-4, "beta {beta}: energy {te:?}");
            assert!(tm.p_value > 1e-4, "beta {beta}: |M| {tm:?}");
        }
    }

    #[test]
    fn l4_test_detects_wrong_temperature() {
        // Samples at beta = 0.40 must be rejected against the exact law at beta = 0.44:
        // shows the chi-square test above has power.
        let exact = ising_exact(4, 0.44).unwrap();
        let (e, _) = sample_stats(0.40, 4);
        let (ce, pe) = histogram(&e, &exact.energy);
        assert!(chi_square(&ce, &pe).p_value < 1e-6);
    }

    #[test]
    fn exact_enumeration_facts() {
        // beta = 0: E uniform over states -> mean 0; P(|M| = 0) = C(16, 8) / 2^16.
        let ex = ising_exact(4, 0.0).unwrap();
        assert!(ex.mean_energy_per_spin.abs() < 1e-12);
        assert!((ex.abs_magnetisation[0].1 - 12870.0 / 65536.0).abs() < 1e-12);
        // ground states: 2 of them with E = -32
        let hot = ising_exact(4, 0.0).unwrap();
        assert_eq!(hot.energy[0], (-32.0, 2.0 / 65536.0));
        let ex2 = ising_exact(2, 0.3).unwrap();
        let total: f64 = ex2.energy.iter().map(|x| x.1).sum();
        assert!((total - 1.0).abs() < 1e-12);
    }

    #[test]
    fn onsager_known_values() {
        // critical point: u = -sqrt(2)
        let bc = (1.0 + 2f64.sqrt()).ln() / 2.0;
        assert!((onsager_energy_per_spin(bc) + 2f64.sqrt()).abs() < 1e-6);
        assert!((onsager_energy_per_spin(bc - 1e-9) + 2f64.sqrt()).abs() < 1e-5);
        // high-temperature expansion: ln Z / N = ln 2 + 2 ln cosh β + t^4 + O(t^6), t = tanh β,
        // so u = -2t - 4t³(1 - t²) + O(t^5); at β = 0.05 the t³ term (5e-4) is resolved.
        let b = 0.05f64;
        let t = b.tanh();
        let series = -2.0 * t - 4.0 * t.powi(3) * (1.0 - t * t);
        assert!((onsager_energy_per_spin(b) - series).abs() < 1e-5);
        // low temperature: u -> -2
        assert!((onsager_energy_per_spin(3.0) + 2.0).abs() < 1e-9);
        // K(0) = π/2, K(1/√2) = Γ(1/4)²/(4√π) = 1.8540746773013719
        assert!((elliptic_k(0.0) - std::f64::consts::FRAC_PI_2).abs() < 1e-15);
        assert!((elliptic_k(0.5f64.sqrt()) - 1.854_074_677_301_372).abs() < 1e-13);
    }

    #[test]
    fn large_lattice_matches_onsager() {
        for (beta, seed) in [(0.3, 11), (0.4, 12), (0.6, 13)] {
            let l = 32;
            let cfg = IsingConfig {
                l,
                beta,
                n_samples: 1600,
                burn_in_sweeps: 100,
                sweeps_between: 1,
            };
            let d = ising_2d(&cfg, seed).unwrap();
            let e: Vec<f64> = (0..d.n_samples())
                .map(|j| ising_energy(d.sample(j), l) / (l * l) as f64)
                .collect();
            // batch means: 40 batches of 40 sweeps, much longer than the SW correlation time
            let means: Vec<f64> = e.chunks(40).map(|c| c.iter().sum::<f64>() / 40.0).collect();
            let mu = means.iter().sum::<f64>() / means.len() as f64;
            let var =
                means.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (means.len() - 1) as f64;
            let se = (var / means.len() as f64).sqrt();
            let exact = onsager_energy_per_spin(beta);
            assert!(
                (mu - exact).abs() < 4.0 * se + 1e-3,
                "beta {beta}: {mu} vs Onsager {exact} (se {se})"
            );
            assert!(se < 0.01);
        }
    }

    #[test]
    fn deterministic_and_validated() {
        let cfg = IsingConfig::new(5, 0.44, 10);
        assert_eq!(ising_2d(&cfg, 9).unwrap(), ising_2d(&cfg, 9).unwrap());
        assert_ne!(ising_2d(&cfg, 9).unwrap(), ising_2d(&cfg, 10).unwrap());
        assert!(ising_2d(&IsingConfig::new(1, 0.4, 1), 0).is_err());
        assert!(ising_2d(&IsingConfig::new(4, -1.0, 1), 0).is_err());
        assert_eq!(ising_2d(&cfg, 9).unwrap().domain(), Domain::Spin);
    }
}

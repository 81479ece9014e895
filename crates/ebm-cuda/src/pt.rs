//! Temperature parallel tempering on the device.

use crate::device::GpuScalar;
use crate::rbm::{GpuChains, GpuRbm, grid};
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, PushKernelArg};
use nalgebra::DMatrix;

/// Which neighbouring pairs are proposed for exchange after each sweep (the even/odd schedules
/// of the CPU's `ebm_samplers::SwapSchedule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuSchedule {
    /// Deterministic even/odd (DEO, non-reversible): pairs \\((0,1), (2,3), \dots\\) on even
    /// rounds, \\((1,2), (3,4), \dots\\) on odd rounds.
    DeterministicEvenOdd,
    /// Stochastic even/odd (SEO, reversible): even or odd pairs with probability 1/2 each
    /// round, the same choice for every system.
    StochasticEvenOdd,
}

/// Temperature parallel tempering of an RBM on the device: `n` independent systems of
/// replicas, one replica per rung of an increasing ladder \\(0 \le \beta_0 < \dots <
/// \beta_{R-1}\\), each system's replicas exchanged between neighbouring rungs with the exact
/// Metropolis ratio of the product of the tempered marginals \\(\prod_k p_{\beta_k}(v_k)\\):
///
/// \\[ \log\alpha = F_{\beta_k}(v_k) + F_{\beta_{k+1}}(v_{k+1}) - F_{\beta_k}(v_{k+1}) -
/// F_{\beta_{k+1}}(v_k), \\]
///
/// with the free energies of [`GpuRbm::free_energies`].
///
/// A round is one [`GpuRbm::sweep`] of all \\(R n\\) replicas as one batch (each chain at its
/// rung's temperature), the free energies of every replica at its own and its partner's
/// temperature (one kernel), and the exchanges (one kernel, uniforms drawn on the device). The
/// configurations never move: an accepted exchange swaps the two chains' temperatures and the
/// rung-to-chain map, so a round costs little more than its sweep.
pub struct GpuPt {
    ladder: Vec<f64>,
    n: usize,
    schedule: GpuSchedule,
    slot_of: CudaSlice<i32>,
    rung_of: CudaSlice<i32>,
    ladder_dev: CudaSlice<f64>,
    f_own: CudaSlice<f64>,
    f_other: CudaSlice<f64>,
    accepted: CudaSlice<u64>,
    proposed: Vec<u64>,
    rounds: u64,
    log_alpha_shift: f64,
}

impl std::fmt::Debug for GpuPt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuPt")
            .field("ladder", &self.ladder)
            .field("n", &self.n)
            .field("schedule", &self.schedule)
            .field("rounds", &self.rounds)
            .finish_non_exhaustive()
    }
}

impl GpuPt {
    /// Tempering over `ladder` for `chains`, which hold `ladder.len() * n` chains: chain
    /// `k * n + i` starts as the replica of system `i` at rung `k` (its temperature is set
    /// here).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a ladder that is not increasing in `[0, inf)` or has
    /// fewer than two rungs, or a number of chains that is not a multiple of its length.
    pub fn new<F: GpuScalar>(
        model: &GpuRbm<F>,
        ladder: &[f64],
        schedule: GpuSchedule,
        chains: &mut GpuChains<F>,
    ) -> Result<Self> {
        let r = ladder.len();
        let increasing = ladder.windows(2).all(|w| w[0] < w[1]);
        let valid = r >= 2 && increasing && ladder[0] >= 0.0 && ladder[r - 1].is_finite();
        if !valid {
            return Err(Error::invalid(
                "ladder",
                format!("expected at least two increasing values in [0, inf), got {ladder:?}"),
            ));
        }
        let total = chains.n_chains();
        if !total.is_multiple_of(r) {
            return Err(Error::invalid(
                "chains",
                format!("{total} chains do not split into {r} rungs"),
            ));
        }
        let n = total / r;
        let gpu = model.gpu();
        let slots: Vec<i32> = (0..total as i32).collect();
        let rungs: Vec<i32> = (0..total).map(|s| (s / n) as i32).collect();
        let betas: Vec<f64> = (0..total).map(|s| ladder[s / n]).collect();
        chains.set_betas(&betas)?;
        Ok(Self {
            ladder: ladder.to_vec(),
            n,
            schedule,
            slot_of: gpu.upload(&slots)?,
            rung_of: gpu.upload(&rungs)?,
            ladder_dev: gpu.upload(ladder)?,
            f_own: gpu.zeros(total)?,
            f_other: gpu.zeros(total)?,
            accepted: gpu.zeros(r)?,
            proposed: vec![0; r],
            rounds: 0,
            log_alpha_shift: 0.0,
        })
    }

    /// The number of systems of replicas.
    pub fn n_systems(&self) -> usize {
        self.n
    }

    /// The ladder's inverse temperatures.
    pub fn ladder(&self) -> &[f64] {
        &self.ladder
    }

    /// One round: a sweep of every replica, then the exchanges of this round's pairs.
    ///
    /// # Errors
    /// As [`GpuRbm::sweep`]; [`Error::InvalidParameter`] for chains of another size.
    pub fn round<F: GpuScalar>(
        &mut self,
        model: &GpuRbm<F>,
        chains: &mut GpuChains<F>,
    ) -> Result<()> {
        let r = self.ladder.len();
        if chains.n_chains() != r * self.n {
            return Err(Error::invalid(
                "chains",
                format!("expected {} chains, got {}", r * self.n, chains.n_chains()),
            ));
        }
        model.sweep(chains)?;
        let parity = match self.schedule {
            GpuSchedule::DeterministicEvenOdd => (self.rounds % 2) as i32,
            GpuSchedule::StochasticEvenOdd => {
                let e = chains.draws.next();
                (crate::philox::draw(u32::MAX, u32::MAX, e, chains.draws.seed)[0] & 1) as i32
            }
        };
        let pairing = Some((&self.rung_of, &self.ladder_dev, r as u32, parity));
        model.free_energies_into(chains, pairing, &mut self.f_own, &mut self.f_other)?;
        let pairs = (r - parity as usize) / 2;
        for p in 0..pairs {
            self.proposed[2 * p + parity as usize] += self.n as u64;
        }
        let gpu = model.gpu();
        let [k0, k1] = crate::philox::key(chains.draws.seed);
        let event = chains.draws.next();
        let (rr, nn) = (r as u32, self.n as u32);
        let k = &F::kernels(gpu).pt_exchange;
        let mut b = gpu.stream().launch_builder(k);
        b.arg(&mut self.slot_of)
            .arg(&mut self.rung_of)
            .arg(&mut chains.beta);
        b.arg(&self.ladder_dev).arg(&self.f_own).arg(&self.f_other);
        b.arg(&rr).arg(&nn).arg(&parity).arg(&self.log_alpha_shift);
        b.arg(&k0).arg(&k1).arg(&event).arg(&mut self.accepted);
        // SAFETY: maps of r * n entries, betas and free energies per chain, r counters.
        unsafe { b.launch(grid(pairs * self.n)) }.map_err(Error::driver)?;
        self.rounds += 1;
        Ok(())
    }

    /// The visible configurations of the replicas at rung `k` (`nv x n`, system `i` in column
    /// `i`).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a rung off the ladder; [`Error::Cuda`].
    pub fn rung_visible<F: GpuScalar>(
        &self,
        chains: &GpuChains<F>,
        k: usize,
    ) -> Result<DMatrix<F>> {
        if k >= self.ladder.len() {
            return Err(Error::invalid("rung", format!("{k} is off the ladder")));
        }
        let gpu = chains.gpu_ref();
        let slots = gpu.download(&self.slot_of, self.ladder.len() * self.n)?;
        let all = chains.visible()?;
        let nv = all.nrows();
        Ok(DMatrix::from_fn(nv, self.n, |u, i| {
            all[(u, slots[k * self.n + i] as usize)]
        }))
    }

    /// The acceptance rate of each pair `(k, k + 1)` over the rounds so far (`R - 1` values,
    /// NaN for a pair never proposed).
    ///
    /// # Errors
    /// [`Error::Cuda`] if the copy fails.
    pub fn acceptance<F: GpuScalar>(&self, model: &GpuRbm<F>) -> Result<Vec<f64>> {
        let r = self.ladder.len();
        let acc = model.gpu().download(&self.accepted, r)?;
        Ok((0..r - 1)
            .map(|k| acc[k] as f64 / self.proposed[k] as f64)
            .collect())
    }

    /// Makes every later exchange accepted whatever its ratio: a wrong kernel, for the negative
    /// controls of the exact tests.
    #[doc(hidden)]
    pub fn accept_every_exchange(&mut self) {
        self.log_alpha_shift = f64::INFINITY;
    }
}

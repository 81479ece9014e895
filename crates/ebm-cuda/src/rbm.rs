//! An RBM's parameters and a batch of chains on the device; the alternating Gibbs sweep and
//! the free energies.

use crate::device::{Gpu, GpuScalar};
use crate::{Error, Result};
use cudarc::cublas::GemmConfig;
use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use ebm_core::Scalar;
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;
use std::sync::Arc;

/// The unit kinds the GPU samples: binary units whose conditional law is a logistic draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Units {
    /// \\(\{0, 1\}\\) units ([`ebm_models::Bernoulli`]).
    Bernoulli,
    /// \\(\{-1, +1\}\\) units ([`ebm_models::Spin`]).
    Spin,
}

impl Units {
    /// The kind of a layer type, or why the GPU cannot sample it.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for any kind but `bernoulli` and `spin`.
    pub fn of<L: Layer>(side: &str) -> Result<Self> {
        match L::KIND {
            "bernoulli" => Ok(Units::Bernoulli),
            "spin" => Ok(Units::Spin),
            k => Err(Error::Unsupported(format!(
                "{side} units of kind {k:?}: the CUDA backend samples bernoulli and spin units"
            ))),
        }
    }

    /// `(scale, lo)`: \\(P(1) = \sigma(\text{scale}\cdot x)\\) for a tempered field \\(x\\);
    /// `lo` the value of the other state.
    fn logistic(self) -> (f64, f64) {
        match self {
            Units::Bernoulli => (1.0, 0.0),
            Units::Spin => (2.0, -1.0),
        }
    }
}

/// A grid-stride launch over `total` elements: 256 threads a block, at most 8192 blocks.
pub(crate) fn grid(total: usize) -> LaunchConfig {
    let blocks = total.div_ceil(256).clamp(1, 8192) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// One warp per item, eight warps a block.
pub(crate) fn warps(items: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (items.div_ceil(8).max(1) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The parameters of an [`Rbm`] of binary units on the device: `W` (`nv x nh`, column-major as
/// on the host), the visible fields \\(\theta\\) and the hidden fields \\(\eta\\), with
/// \\(E(v, h) = -\theta^\top v - \eta^\top h - v^\top W h\\).
pub struct GpuRbm<F: GpuScalar> {
    pub(crate) gpu: Arc<Gpu>,
    pub(crate) visible: Units,
    pub(crate) hidden: Units,
    pub(crate) nv: usize,
    pub(crate) nh: usize,
    pub(crate) w: CudaSlice<F>,
    pub(crate) theta: CudaSlice<F>,
    pub(crate) eta: CudaSlice<F>,
}

impl<F: GpuScalar> std::fmt::Debug for GpuRbm<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuRbm")
            .field("gpu", &self.gpu.name())
            .field("visible", &self.visible)
            .field("hidden", &self.hidden)
            .field("nv", &self.nv)
            .field("nh", &self.nh)
            .finish_non_exhaustive()
    }
}

/// The fields (`bias` tensor) of a binary layer, in the scalar `F`.
fn fields<L: Layer, F: Scalar>(layer: &L) -> Vec<F> {
    let tensors = layer.tensors();
    let bias = tensors.iter().find(|t| t.0 == "bias");
    bias.map(|t| convert(&t.2)).unwrap_or_default()
}

/// Values in another scalar (exact when `A` and `B` are the same type or `A` is `f32`).
pub(crate) fn convert<A: Scalar, B: Scalar>(x: &[A]) -> Vec<B> {
    x.iter().map(|v| B::from_f64(v.as_f64())).collect()
}

impl<F: GpuScalar> GpuRbm<F> {
    /// Uploads an RBM of Bernoulli or spin units, its parameters converted to `F` (exact for
    /// a model in `F`; an `f64` model is rounded to nearest for `F = f32`).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for other unit kinds; [`Error::Cuda`] if the copy fails.
    pub fn upload<V, H>(gpu: &Arc<Gpu>, rbm: &Rbm<V, H>) -> Result<Self>
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        let (visible, hidden) = (Units::of::<V>("visible")?, Units::of::<H>("hidden")?);
        let (nv, nh) = rbm.weights().shape();
        if nv == 0 || nh == 0 {
            return Err(Error::invalid(
                "model",
                "an RBM with no visible or no hidden unit",
            ));
        }
        Ok(Self {
            gpu: gpu.clone(),
            visible,
            hidden,
            nv,
            nh,
            w: gpu.upload(&convert::<_, F>(rbm.weights().as_slice()))?,
            theta: gpu.upload(&fields::<_, F>(rbm.visible()))?,
            eta: gpu.upload(&fields::<_, F>(rbm.hidden()))?,
        })
    }

    /// The model back on the host, in the scalar of `V` (exact for `F`, or `f64` from `f32`).
    ///
    /// # Errors
    /// [`Error::Unsupported`] if `V` and `H` are not the uploaded kinds; [`Error::Cuda`] if
    /// the copy fails.
    pub fn download<V, H>(&self) -> Result<Rbm<V, H>>
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        if Units::of::<V>("visible")? != self.visible || Units::of::<H>("hidden")? != self.hidden {
            return Err(Error::Unsupported(format!(
                "downloading a {:?} x {:?} model as {} x {}",
                self.visible,
                self.hidden,
                V::KIND,
                H::KIND
            )));
        }
        let theta: Vec<V::Scalar> = convert(&self.gpu.download(&self.theta, self.nv)?);
        let eta: Vec<V::Scalar> = convert(&self.gpu.download(&self.eta, self.nh)?);
        let w = convert(&self.gpu.download(&self.w, self.nv * self.nh)?);
        let layer = |n: usize, f: Vec<V::Scalar>| {
            move |name: &str| (name == "bias").then(|| (vec![n], f.clone()))
        };
        let v = V::from_tensors(self.nv, &layer(self.nv, theta))?;
        let h = H::from_tensors(self.nh, &layer(self.nh, eta))?;
        Ok(Rbm::new(v, h, DMatrix::from_vec(self.nv, self.nh, w))?)
    }

    /// The device the model lives on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// `(visible, hidden)` unit counts.
    pub fn shape(&self) -> (usize, usize) {
        (self.nv, self.nh)
    }

    /// `c = W^T v` (`hin`, `nh x n`) for the `n` chains of `v`.
    pub(crate) fn hidden_inputs(
        &self,
        v: &CudaSlice<F>,
        out: &mut CudaSlice<F>,
        n: usize,
    ) -> Result<()> {
        let cfg = GemmConfig {
            transa: CUBLAS_OP_T,
            transb: CUBLAS_OP_N,
            m: self.nh as i32,
            n: n as i32,
            k: self.nv as i32,
            alpha: F::one(),
            lda: self.nv as i32,
            ldb: self.nv as i32,
            beta: F::zero(),
            ldc: self.nh as i32,
        };
        // SAFETY: w is nv x nh, v nv x n and out nh x n, column-major.
        unsafe { F::gemm(self.gpu.blas(), cfg, &self.w, v, out) }
    }

    /// `W h` (`nv x n`) for the `n` chains of `h`.
    fn visible_inputs(&self, h: &CudaSlice<F>, out: &mut CudaSlice<F>, n: usize) -> Result<()> {
        let cfg = GemmConfig {
            transa: CUBLAS_OP_N,
            transb: CUBLAS_OP_N,
            m: self.nv as i32,
            n: n as i32,
            k: self.nh as i32,
            alpha: F::one(),
            lda: self.nv as i32,
            ldb: self.nh as i32,
            beta: F::zero(),
            ldc: self.nv as i32,
        };
        // SAFETY: w is nv x nh, h nh x n and out nv x n, column-major.
        unsafe { F::gemm(self.gpu.blas(), cfg, &self.w, h, out) }
    }

    /// Conditional means of the hidden units given their inputs, at beta = 1.
    pub(crate) fn hidden_means(
        &self,
        inputs: &CudaSlice<F>,
        out: &mut CudaSlice<F>,
        n: usize,
    ) -> Result<()> {
        let gpu = &self.gpu;
        let nh = self.nh;
        let (scale, lo) = self.hidden.logistic();
        let (scale, lo) = (F::from_f64(scale), F::from_f64(lo));
        let (units, total) = (nh as u32, (nh * n) as u64);
        let k = &F::kernels(gpu).binary_means;
        let mut l = gpu.stream().launch_builder(k);
        l.arg(inputs).arg(out).arg(&self.eta);
        l.arg(&units).arg(&total).arg(&scale).arg(&lo);
        // SAFETY: inputs and out are nh x n, eta nh.
        unsafe { l.launch(grid(nh * n)) }.map_err(Error::driver)?;
        Ok(())
    }

    /// Draws one binary layer from its local inputs, each chain at its own temperature.
    fn sample_layer(
        &self,
        units: Units,
        inputs: &CudaSlice<F>,
        out: &mut CudaSlice<F>,
        bias: &CudaSlice<F>,
        beta: &CudaSlice<F>,
        width: usize,
        n: usize,
        rng: &mut Draws,
    ) -> Result<()> {
        let (scale, lo) = units.logistic();
        let (scale, lo) = (F::from_f64(scale), F::from_f64(lo));
        let (width32, total) = (width as u32, (width * n) as u64);
        let [k0, k1] = crate::philox::key(rng.seed);
        let event = rng.next();
        let k = &F::kernels(&self.gpu).sample_binary;
        let mut b = self.gpu.stream().launch_builder(k);
        b.arg(inputs).arg(out).arg(bias).arg(beta);
        b.arg(&width32).arg(&total).arg(&scale).arg(&lo);
        b.arg(&k0).arg(&k1).arg(&event);
        // SAFETY: the buffers hold width x n values, bias width, beta n.
        unsafe { b.launch(grid(width * n)) }.map_err(Error::driver)?;
        Ok(())
    }

    /// Checks that `chains` were made for this model's sizes.
    fn check(&self, chains: &GpuChains<F>) -> Result<()> {
        if (chains.nv, chains.nh) != (self.nv, self.nh) {
            return Err(Error::invalid(
                "chains",
                format!(
                    "made for a {} x {} model, used with a {} x {} one",
                    chains.nv, chains.nh, self.nv, self.nh
                ),
            ));
        }
        Ok(())
    }

    /// One alternating Gibbs sweep of every chain, each at the inverse temperature of its
    /// column of [`GpuChains::set_betas`]: \\(h \sim p_\beta(h \mid v)\\), then
    /// \\(v \sim p_\beta(v \mid h)\\), with
    /// \\(P(x_i = 1 \mid \cdot) = \sigma(s\,\beta(\phi_i + I_i))\\) for the local field
    /// \\(I\\) (\\(W^\top v\\) or \\(W h\\)), the unit's field \\(\phi_i\\), and
    /// \\(s = 1\\) for \\(\{0,1\}\\), \\(2\\) for \\(\{-1,+1\}\\) units. It leaves every
    /// tempered joint law \\(p_\beta(v, h)\\) invariant.
    ///
    /// Queued on the device's stream: two cuBLAS products and two sampling passes, plus the
    /// product \\(W^\top v\\) of the new state, kept for the next sweep and for free energies.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for chains of another model size; [`Error::Cuda`].
    pub fn sweep(&self, chains: &mut GpuChains<F>) -> Result<()> {
        self.check(chains)?;
        let c = chains;
        if !c.hin_valid {
            self.hidden_inputs(&c.visible, &mut c.hin, c.n)?;
        }
        self.sample_layer(
            self.hidden,
            &c.hin,
            &mut c.hidden,
            &self.eta,
            &c.beta,
            self.nh,
            c.n,
            &mut c.draws,
        )?;
        self.visible_inputs(&c.hidden, &mut c.vin, c.n)?;
        self.sample_layer(
            self.visible,
            &c.vin,
            &mut c.visible,
            &self.theta,
            &c.beta,
            self.nv,
            c.n,
            &mut c.draws,
        )?;
        self.hidden_inputs(&c.visible, &mut c.hin, c.n)?;
        c.hin_valid = true;
        Ok(())
    }

    /// The two matrix products of a sweep alone (\\(W^\top v\\), then \\(W h\\)), without the
    /// sampling passes: the floor a sweep is measured against in the benchmarks.
    ///
    /// # Errors
    /// As [`GpuRbm::sweep`].
    #[doc(hidden)]
    pub fn products_only(&self, chains: &mut GpuChains<F>) -> Result<()> {
        self.check(chains)?;
        let c = chains;
        self.hidden_inputs(&c.visible, &mut c.hin, c.n)?;
        self.visible_inputs(&c.hidden, &mut c.vin, c.n)?;
        c.hin_valid = false;
        Ok(())
    }

    /// `k` sweeps ([`GpuRbm::sweep`]).
    ///
    /// # Errors
    /// As [`GpuRbm::sweep`].
    pub fn sweeps(&self, chains: &mut GpuChains<F>, k: u64) -> Result<()> {
        for _ in 0..k {
            self.sweep(chains)?;
        }
        Ok(())
    }

    /// The free energy of every chain's visible configuration at the chain's inverse
    /// temperature, in `f64`: \\(F_\beta(v) = -\beta\,\theta^\top v - \sum_\mu
    /// \Gamma_H\big(\beta(\eta_\mu + (W^\top v)_\mu)\big)\\), with \\(\Gamma_H\\) the
    /// softplus (\\(\{0,1\}\\)) or \\(\log 2\cosh\\) (\\(\{-1,+1\}\\)): the quantity
    /// [`ebm_core::EnergyModel::energies`] returns for an [`Rbm`].
    ///
    /// # Errors
    /// As [`GpuRbm::sweep`].
    pub fn free_energies(&self, chains: &mut GpuChains<F>) -> Result<Vec<f64>> {
        self.check(chains)?;
        self.refresh_inputs(chains)?;
        let mut out = self.gpu.zeros::<f64>(chains.n)?;
        let mut unused = self.gpu.zeros::<f64>(1)?;
        self.free_energies_into(chains, None, &mut out, &mut unused)?;
        self.gpu.download(&out, chains.n)
    }

    /// Computes \\(W^\top v\\) of the chains if the model or the chains changed since.
    pub(crate) fn refresh_inputs(&self, c: &mut GpuChains<F>) -> Result<()> {
        if !c.hin_valid {
            self.hidden_inputs(&c.visible, &mut c.hin, c.n)?;
            c.hin_valid = true;
        }
        Ok(())
    }

    /// Queues the free-energy kernel; with `pairing = (rung_of, ladder, rungs, parity)` also
    /// each chain's free energy at its exchange partner's temperature (`other`).
    pub(crate) fn free_energies_into(
        &self,
        c: &GpuChains<F>,
        pairing: Option<(&CudaSlice<i32>, &CudaSlice<f64>, u32, i32)>,
        own: &mut CudaSlice<f64>,
        other: &mut CudaSlice<f64>,
    ) -> Result<()> {
        let k = &F::kernels(&self.gpu).free_energies;
        let (nv, nh, n) = (self.nv as u32, self.nh as u32, c.n as u32);
        let spin = i32::from(self.hidden == Units::Spin);
        let null = 0u64;
        let mut b = self.gpu.stream().launch_builder(k);
        b.arg(&c.visible)
            .arg(&c.hin)
            .arg(&self.theta)
            .arg(&self.eta)
            .arg(&c.beta);
        b.arg(&nv).arg(&nh).arg(&n).arg(&spin);
        let (rungs, parity) = match pairing {
            Some((rung_of, ladder, rungs, parity)) => {
                b.arg(rung_of).arg(ladder);
                (rungs, parity)
            }
            None => {
                b.arg(&null).arg(&null);
                (0, 0)
            }
        };
        b.arg(&rungs).arg(&parity).arg(own).arg(other);
        // SAFETY: v is nv x n, hin nh x n, the outputs n long (other: only with a pairing).
        unsafe { b.launch(warps(c.n)) }.map_err(Error::driver)?;
        Ok(())
    }
}

/// The draw counter of a run: its seed and the number of the next draw (one per half-step or
/// exchange round, shared by all chains).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Draws {
    pub seed: u64,
    pub event: u64,
}

impl Draws {
    pub(crate) fn next(&mut self) -> u64 {
        let e = self.event;
        self.event += 1;
        e
    }
}

/// A batch of `n` chains of an RBM on the device: visible and hidden configurations
/// (`nv x n`, `nh x n`, one column per chain), each chain's inverse temperature, the products
/// \\(W^\top v\\) kept between sweeps, and the run's draw counter.
pub struct GpuChains<F: GpuScalar> {
    pub(crate) nv: usize,
    pub(crate) nh: usize,
    pub(crate) n: usize,
    pub(crate) visible: CudaSlice<F>,
    pub(crate) hidden: CudaSlice<F>,
    pub(crate) hin: CudaSlice<F>,
    pub(crate) vin: CudaSlice<F>,
    pub(crate) beta: CudaSlice<F>,
    pub(crate) hin_valid: bool,
    pub(crate) draws: Draws,
    gpu: Arc<Gpu>,
}

impl<F: GpuScalar> std::fmt::Debug for GpuChains<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuChains")
            .field("nv", &self.nv)
            .field("nh", &self.nh)
            .field("n", &self.n)
            .field("draws", &self.draws)
            .finish_non_exhaustive()
    }
}

impl<F: GpuScalar> GpuChains<F> {
    /// Chains of `model` starting at the visible configurations `visible` (`nv x n`, one column
    /// per chain), all at inverse temperature 1, with the random numbers of `seed`. The hidden
    /// layer starts at zero; the first sweep draws it.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a wrong number of rows or no chain; [`Error::Cuda`].
    /// The values are converted to `F` (exact for the model's configurations).
    pub fn upload<S: Scalar>(model: &GpuRbm<F>, visible: &DMatrix<S>, seed: u64) -> Result<Self> {
        let (nv, nh, n) = (model.nv, model.nh, visible.ncols());
        if visible.nrows() != nv || n == 0 {
            return Err(Error::invalid(
                "visible",
                format!(
                    "expected {nv} rows (the visible units) and at least one chain, got {} x {n}",
                    visible.nrows()
                ),
            ));
        }
        if n > i32::MAX as usize / nv.max(nh) {
            return Err(Error::invalid("visible", format!("{n} chains is too many")));
        }
        let gpu = model.gpu.clone();
        Ok(Self {
            nv,
            nh,
            n,
            visible: gpu.upload(&convert::<S, F>(visible.as_slice()))?,
            hidden: gpu.zeros(nh * n)?,
            hin: gpu.zeros(nh * n)?,
            vin: gpu.zeros(nv * n)?,
            beta: gpu.upload(&vec![F::one(); n])?,
            hin_valid: false,
            draws: Draws { seed, event: 0 },
            gpu,
        })
    }

    pub(crate) fn gpu_ref(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The number of chains.
    pub fn n_chains(&self) -> usize {
        self.n
    }

    /// Sets every chain's inverse temperature (one value per chain).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a wrong length or a value outside `[0, inf)`.
    pub fn set_betas(&mut self, betas: &[f64]) -> Result<()> {
        if betas.len() != self.n || !betas.iter().all(|b| b.is_finite() && *b >= 0.0) {
            return Err(Error::invalid(
                "betas",
                format!("expected {} finite values >= 0", self.n),
            ));
        }
        let b: Vec<F> = betas.iter().map(|&b| F::from_f64(b)).collect();
        self.gpu
            .stream()
            .memcpy_htod(&b, &mut self.beta)
            .map_err(Error::driver)
    }

    /// The visible configurations (`nv x n`).
    ///
    /// # Errors
    /// [`Error::Cuda`] if the copy fails.
    pub fn visible(&self) -> Result<DMatrix<F>> {
        self.visible_as()
    }

    /// The hidden configurations (`nh x n`) drawn by the last sweep.
    ///
    /// # Errors
    /// [`Error::Cuda`] if the copy fails.
    pub fn hidden(&self) -> Result<DMatrix<F>> {
        self.hidden_as()
    }

    /// [`GpuChains::visible`] in another scalar (the configurations are exact in any).
    ///
    /// # Errors
    /// [`Error::Cuda`] if the copy fails.
    pub fn visible_as<S: Scalar>(&self) -> Result<DMatrix<S>> {
        let v = self.gpu.download(&self.visible, self.nv * self.n)?;
        Ok(DMatrix::from_vec(self.nv, self.n, convert(&v)))
    }

    /// [`GpuChains::hidden`] in another scalar.
    ///
    /// # Errors
    /// [`Error::Cuda`] if the copy fails.
    pub fn hidden_as<S: Scalar>(&self) -> Result<DMatrix<S>> {
        let h = self.gpu.download(&self.hidden, self.nh * self.n)?;
        Ok(DMatrix::from_vec(self.nh, self.n, convert(&h)))
    }

    /// The number of draws made so far (half-steps and exchange rounds): with the seed, the
    /// position of the run's random numbers.
    pub fn draws_made(&self) -> u64 {
        self.draws.event
    }
}

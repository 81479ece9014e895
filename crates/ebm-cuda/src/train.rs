//! Persistent contrastive divergence on the device.

use crate::device::{Gpu, GpuScalar};
use crate::rbm::{GpuChains, GpuRbm, grid};
use crate::{Error, Result};
use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
use cudarc::cublas::{GemmConfig, GemvConfig};
use cudarc::driver::{CudaSlice, PushKernelArg};
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::sync::Arc;

/// The settings of [`GpuPcd`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcdSettings {
    /// Gibbs sweeps of the persistent chains per update (k; 0 uses the chains as they are).
    pub sweeps: usize,
    /// Training samples per minibatch, in `1..=n_samples`.
    pub batch_size: usize,
    /// The constant learning rate \\(\gamma > 0\\) of plain SGD.
    pub learning_rate: f64,
    /// Seed of the minibatch order and of the chains' random numbers.
    pub seed: u64,
}

impl PcdSettings {
    /// Paper 000's recipe (SI Table 3): k = 100, batch 2000, learning rate 0.01.
    pub fn paper(seed: u64) -> Self {
        Self {
            sweeps: 100,
            batch_size: 2000,
            learning_rate: 0.01,
            seed,
        }
    }
}

/// PCD-k training of an RBM of binary units on the device (Tieleman 2008; the recipe of
/// Béreux et al., *Fast training and sampling of RBMs*, SI Table 3: batch 2000, 2000 persistent
/// chains, k = 100, learning rate 0.01, plain SGD), the same update as the CPU trainer
/// `ebm_train::Trainer` with a Gibbs negative phase and the centred gradient:
///
/// 1. a minibatch \\(\mathcal B\\) of `batch_size` training samples, shuffled minibatches
///    cycled over the data, the last incomplete one of each pass dropped;
/// 2. `k` Gibbs sweeps of the persistent chains \\(\mathcal M\\) at the current parameters;
/// 3. the data means \\(a = \langle v\rangle_{\mathcal B}\\), \\(b = \langle
///    \mathbb E[h\mid v]\rangle_{\mathcal B}\\) and the model means \\(\langle v\rangle_{\mathcal
///    M}\\), \\(\langle \mathbb E[h \mid v]\rangle_{\mathcal M}\\) (the hidden layer averaged
///    out exactly on both sides);
/// 4. the centred gradient \\(\nabla W = \mathrm{Cov}_{\mathcal B}(v, h) - \langle (v - a)(h -
///    b)^\top\rangle_{\mathcal M}\\) and the step \\(W \mathrel{+}= \gamma\nabla W\\),
///    \\(\theta \mathrel{+}= \gamma(a - \langle v\rangle_{\mathcal M} - \nabla W\, b)\\),
///    \\(\eta \mathrel{+}= \gamma(b - \langle h\rangle_{\mathcal M} - \nabla W^\top a)\\).
///
/// Everything but the minibatch order (drawn on the host, one upload per pass over the data)
/// runs on the device's stream; an update makes no host round trip.
pub struct GpuPcd<F: GpuScalar> {
    model: GpuRbm<F>,
    chains: GpuChains<F>,
    k: usize,
    batch_size: usize,
    learning_rate: f64,
    data: CudaSlice<F>,
    n_data: usize,
    order: Vec<u32>,
    order_dev: CudaSlice<u32>,
    next: usize,
    shuffle: Xoshiro256PlusPlus,
    batch: CudaSlice<F>,
    batch_inputs: CudaSlice<F>,
    batch_means: CudaSlice<F>,
    chain_means: CudaSlice<F>,
    grad: CudaSlice<F>,
    ones: CudaSlice<F>,
    a: CudaSlice<F>,
    b: CudaSlice<F>,
    vm: CudaSlice<F>,
    hm: CudaSlice<F>,
    gb: CudaSlice<F>,
    ga: CudaSlice<F>,
    updates: u64,
}

impl<F: GpuScalar> std::fmt::Debug for GpuPcd<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuPcd")
            .field("model", &self.model)
            .field("k", &self.k)
            .field("batch_size", &self.batch_size)
            .field("learning_rate", &self.learning_rate)
            .field("updates", &self.updates)
            .finish_non_exhaustive()
    }
}

impl<F: GpuScalar> GpuPcd<F> {
    /// A trainer of `rbm` on the columns of `data` (`nv x n_samples`), with the persistent
    /// chains starting at the columns of `chains` (`nv x n_chains`).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for shapes that do not match the model, a batch size outside
    /// `1..=n_samples`, or a learning rate that is not finite and positive;
    /// [`Error::Unsupported`] for unit kinds the GPU does not sample; [`Error::Cuda`].
    pub fn new<V, H>(
        gpu: &Arc<Gpu>,
        rbm: &Rbm<V, H>,
        data: &DMatrix<V::Scalar>,
        chains: &DMatrix<V::Scalar>,
        settings: PcdSettings,
    ) -> Result<Self>
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        let model = GpuRbm::upload(gpu, rbm)?;
        Self::on_device(gpu, model, data, chains, settings)
    }

    /// [`GpuPcd::new`] once the model is on the device: generic over the scalar of the data
    /// only, so that it is compiled once per scalar rather than once per pair of unit kinds.
    fn on_device<S: ebm_core::Scalar>(
        gpu: &Arc<Gpu>,
        model: GpuRbm<F>,
        data: &DMatrix<S>,
        chains: &DMatrix<S>,
        settings: PcdSettings,
    ) -> Result<Self> {
        let PcdSettings {
            sweeps: k,
            batch_size,
            learning_rate,
            seed,
        } = settings;
        let (nv, nh) = model.shape();
        let n_data = data.ncols();
        if data.nrows() != nv {
            return Err(Error::invalid(
                "data",
                format!("{} rows, expected {nv} (the visible units)", data.nrows()),
            ));
        }
        if batch_size == 0 || batch_size > n_data {
            return Err(Error::invalid(
                "batch_size",
                format!("must lie in 1..={n_data} (the training samples), got {batch_size}"),
            ));
        }
        if !(learning_rate.is_finite() && learning_rate > 0.0) {
            return Err(Error::invalid(
                "learning_rate",
                format!("must be finite and > 0, got {learning_rate}"),
            ));
        }
        let chains = GpuChains::upload(&model, chains, seed)?;
        let r = chains.n_chains();
        let order: Vec<u32> = (0..n_data as u32).collect();
        Ok(Self {
            k,
            batch_size,
            learning_rate,
            data: gpu.upload(&crate::rbm::convert::<_, F>(data.as_slice()))?,
            n_data,
            order_dev: gpu.upload(&order)?,
            order,
            // The first pass is shuffled too: `next` starts past the end.
            next: n_data,
            shuffle: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x005e_ed0f_da7a),
            batch: gpu.zeros(nv * batch_size)?,
            batch_inputs: gpu.zeros(nh * batch_size)?,
            batch_means: gpu.zeros(nh * batch_size)?,
            chain_means: gpu.zeros(nh * r)?,
            grad: gpu.zeros(nv * nh)?,
            ones: gpu.upload(&vec![F::one(); batch_size.max(r)])?,
            a: gpu.zeros(nv)?,
            b: gpu.zeros(nh)?,
            vm: gpu.zeros(nv)?,
            hm: gpu.zeros(nh)?,
            gb: gpu.zeros(nv)?,
            ga: gpu.zeros(nh)?,
            updates: 0,
            model,
            chains,
        })
    }

    /// The number of updates made.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// The model on the device.
    pub fn model(&self) -> &GpuRbm<F> {
        &self.model
    }

    /// The persistent chains.
    pub fn chains(&self) -> &GpuChains<F> {
        &self.chains
    }

    /// `n` updates.
    ///
    /// # Errors
    /// [`Error::Cuda`] if a device operation fails.
    pub fn train(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            self.update()?;
        }
        Ok(())
    }

    /// Puts the next minibatch in `batch`, reshuffling after each pass.
    fn next_batch(&mut self) -> Result<()> {
        let gpu = self.model.gpu().clone();
        if self.next + self.batch_size > self.n_data {
            self.order.shuffle(&mut self.shuffle);
            gpu.stream()
                .memcpy_htod(&self.order, &mut self.order_dev)
                .map_err(Error::driver)?;
            self.next = 0;
        }
        let (nv, bs) = (self.model.shape().0, self.batch_size);
        let idx = self.order_dev.slice(self.next..self.next + bs);
        let (rows, total) = (nv as u32, (nv * bs) as u64);
        let k = &F::kernels(&gpu).gather_columns;
        let mut l = gpu.stream().launch_builder(k);
        l.arg(&self.data)
            .arg(&idx)
            .arg(&mut self.batch)
            .arg(&rows)
            .arg(&total);
        // SAFETY: data is nv x n_data, idx bs indices below n_data, batch nv x bs.
        unsafe { l.launch(grid(nv * bs)) }.map_err(Error::driver)?;
        self.next += bs;
        Ok(())
    }

    /// One update (the four steps of [`GpuPcd`]).
    ///
    /// # Errors
    /// [`Error::Cuda`] if a device operation fails.
    pub fn update(&mut self) -> Result<()> {
        let gpu = self.model.gpu().clone();
        let (nv, nh) = self.model.shape();
        let (bs, r) = (self.batch_size, self.chains.n_chains());
        self.next_batch()?;
        let m = &self.model;
        m.hidden_inputs(&self.batch, &mut self.batch_inputs, bs)?;
        m.hidden_means(&self.batch_inputs, &mut self.batch_means, bs)?;
        m.sweeps(&mut self.chains, self.k as u64)?;
        m.refresh_inputs(&mut self.chains)?;
        m.hidden_means(&self.chains.hin, &mut self.chain_means, r)?;
        let blas = gpu.blas();
        let (inv_b, inv_r) = (F::from_f64(1.0 / bs as f64), F::from_f64(1.0 / r as f64));
        let outer = |n: usize, alpha: F, beta: F| GemmConfig {
            transa: CUBLAS_OP_N,
            transb: CUBLAS_OP_T,
            m: nv as i32,
            n: nh as i32,
            k: n as i32,
            alpha,
            lda: nv as i32,
            ldb: nh as i32,
            beta,
            ldc: nv as i32,
        };
        let mean = |rows: usize, n: usize, alpha: F| GemvConfig {
            trans: CUBLAS_OP_N,
            m: rows as i32,
            n: n as i32,
            alpha,
            lda: rows as i32,
            incx: 1,
            beta: F::zero(),
            incy: 1,
        };
        // SAFETY: every buffer holds the matrix or vector its configuration describes:
        // batch nv x bs, batch_means nh x bs, chains nv x r and nh x r, grad nv x nh.
        unsafe {
            F::gemm(
                blas,
                outer(bs, inv_b, F::zero()),
                &self.batch,
                &self.batch_means,
                &mut self.grad,
            )?;
            F::gemm(
                blas,
                outer(r, -inv_r, F::one()),
                &self.chains.visible,
                &self.chain_means,
                &mut self.grad,
            )?;
            F::gemv(
                blas,
                mean(nv, bs, inv_b),
                &self.batch,
                &self.ones,
                &mut self.a,
            )?;
            F::gemv(
                blas,
                mean(nh, bs, inv_b),
                &self.batch_means,
                &self.ones,
                &mut self.b,
            )?;
            F::gemv(
                blas,
                mean(nv, r, inv_r),
                &self.chains.visible,
                &self.ones,
                &mut self.vm,
            )?;
            F::gemv(
                blas,
                mean(nh, r, inv_r),
                &self.chain_means,
                &self.ones,
                &mut self.hm,
            )?;
        }
        let kernels = F::kernels(&gpu);
        let (nv32, nh32) = (nv as u32, nh as u32);
        let mut l = gpu.stream().launch_builder(&kernels.centre_gradient);
        l.arg(&mut self.grad)
            .arg(&self.a)
            .arg(&self.b)
            .arg(&self.vm)
            .arg(&self.hm);
        l.arg(&nv32).arg(&nh32);
        // SAFETY: grad is nv x nh, a and vm nv, b and hm nh.
        unsafe { l.launch(grid(nv * nh)) }.map_err(Error::driver)?;
        let times = |trans, rows: usize, cols: usize| GemvConfig {
            trans,
            m: rows as i32,
            n: cols as i32,
            alpha: F::one(),
            lda: rows as i32,
            incx: 1,
            beta: F::zero(),
            incy: 1,
        };
        // SAFETY: grad is nv x nh, b nh, a nv, gb nv, ga nh.
        unsafe {
            F::gemv(
                blas,
                times(CUBLAS_OP_N, nv, nh),
                &self.grad,
                &self.b,
                &mut self.gb,
            )?;
            F::gemv(
                blas,
                times(CUBLAS_OP_T, nv, nh),
                &self.grad,
                &self.a,
                &mut self.ga,
            )?;
        }
        let lr = F::from_f64(self.learning_rate);
        let m = &mut self.model;
        let mut l = gpu.stream().launch_builder(&kernels.sgd_step);
        l.arg(&mut m.w)
            .arg(&mut m.theta)
            .arg(&mut m.eta)
            .arg(&self.grad);
        l.arg(&self.a)
            .arg(&self.b)
            .arg(&self.vm)
            .arg(&self.hm)
            .arg(&self.gb)
            .arg(&self.ga);
        l.arg(&lr).arg(&nv32).arg(&nh32);
        // SAFETY: w and grad are nv x nh; theta, a, vm, gb nv; eta, b, hm, ga nh.
        unsafe { l.launch(grid(nv * nh + nv + nh)) }.map_err(Error::driver)?;
        // The chains' kept products W^T v belong to the old parameters.
        self.chains.hin_valid = false;
        self.updates += 1;
        Ok(())
    }

    /// The persistent chains' visible and hidden configurations on the host.
    ///
    /// # Errors
    /// [`Error::Cuda`] if the copy fails.
    pub fn download_chains<S: ebm_core::Scalar>(&self) -> Result<(DMatrix<S>, DMatrix<S>)> {
        Ok((self.chains.visible_as()?, self.chains.hidden_as()?))
    }

    /// The trained model on the host.
    ///
    /// # Errors
    /// As [`GpuRbm::download`].
    pub fn download<V, H>(&self) -> Result<Rbm<V, H>>
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        self.model.download()
    }
}

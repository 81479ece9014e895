//! The GPU: its CUDA context and stream, cuBLAS handle and the compiled kernels.

use crate::{Error, Result};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, Gemv, GemvConfig};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    DeviceRepr, ValidAsZeroBits,
};
use cudarc::nvrtc::{CompileOptions, Ptx, compile_ptx_with_opts};
use ebm_core::Scalar;
use std::fmt;
use std::sync::Arc;

/// The CUDA source of every kernel (`kernels.cu`), compiled at run time by NVRTC.
const SOURCE: &str = include_str!("kernels.cu");

/// Where a computation runs: `cpu`, or the CUDA device `cuda` (device 0) / `cuda:N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Device {
    /// The host's cores (the rest of the library).
    #[default]
    Cpu,
    /// The CUDA device of this ordinal.
    Cuda(u32),
}

impl std::str::FromStr for Device {
    type Err = String;

    /// `cpu`, `cuda` (device 0) or `cuda:N`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            _ => match s.strip_prefix("cuda:").map(str::parse::<u32>) {
                Some(Ok(n)) => Ok(Device::Cuda(n)),
                _ => Err(format!(
                    "unknown device {s:?}: expected cpu, cuda or cuda:N (N the device's ordinal)"
                )),
            },
        }
    }
}

/// Written as its text (`cpu`, `cuda:N`), e.g. in run records.
impl serde::Serialize for Device {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// The kernels of `kernels.cu` compiled for one scalar type.
#[derive(Debug)]
#[doc(hidden)]
pub struct Kernels {
    pub(crate) sample_binary: CudaFunction,
    pub(crate) binary_means: CudaFunction,
    pub(crate) free_energies: CudaFunction,
    pub(crate) pt_exchange: CudaFunction,
    pub(crate) gather_columns: CudaFunction,
    pub(crate) centre_gradient: CudaFunction,
    pub(crate) sgd_step: CudaFunction,
}

impl Kernels {
    fn load(module: &Arc<CudaModule>) -> Result<Self> {
        let f = |name: &str| module.load_function(name).map_err(Error::driver);
        Ok(Self {
            sample_binary: f("sample_binary")?,
            binary_means: f("binary_means")?,
            free_energies: f("free_energies")?,
            pt_exchange: f("pt_exchange")?,
            gather_columns: f("gather_columns")?,
            centre_gradient: f("centre_gradient")?,
            sgd_step: f("sgd_step")?,
        })
    }
}

/// One CUDA device ready for work: a context, one stream on which everything is queued in
/// order (no host round trip inside a sweep or a tempering round), a cuBLAS handle on that
/// stream, and the kernels compiled for `f32` and `f64` for the device's compute capability.
pub struct Gpu {
    ordinal: usize,
    name: String,
    capability: (i32, i32),
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    f32: Kernels,
    f64: Kernels,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("capability", &self.capability)
            .finish_non_exhaustive()
    }
}

/// Why no CUDA device can be used on this machine, or `None` when the CUDA driver, cuBLAS and
/// NVRTC libraries load and at least one device is present. Costs no device memory.
pub fn unavailable() -> Option<String> {
    // SAFETY: only tries to open the shared libraries by their usual names.
    let libs = unsafe {
        [
            (
                "the CUDA driver (libcuda)",
                cudarc::driver::sys::is_culib_present(),
            ),
            (
                "cuBLAS (libcublas)",
                cudarc::cublas::sys::is_culib_present(),
            ),
            ("NVRTC (libnvrtc)", cudarc::nvrtc::sys::is_culib_present()),
        ]
    };
    let missing: Vec<&str> = libs.iter().filter(|l| !l.1).map(|l| l.0).collect();
    if !missing.is_empty() {
        return Some(format!(
            "{} not found: this machine has no CUDA installation the loader can see (install \
             the NVIDIA driver and the CUDA 13 libraries, or add their folder to \
             LD_LIBRARY_PATH)",
            missing.join(", ")
        ));
    }
    match CudaContext::device_count() {
        Ok(0) => Some("the CUDA driver reports no device".into()),
        Ok(_) => None,
        Err(e) => Some(format!("the CUDA driver failed to start: {e}")),
    }
}

/// The kernels compiled by NVRTC for `real` (`float` or `double`), as PTX for the compute
/// capability `capability` (the driver compiles it for the chip when the module loads).
fn compile(real: &str, capability: (i32, i32)) -> Result<Ptx> {
    let mut options = vec![format!("-DREAL={real}")];
    if real == "double" {
        options.push("-DREAL_IS_DOUBLE".into());
    }
    options.push(format!(
        "--gpu-architecture=compute_{}{}",
        capability.0, capability.1
    ));
    compile_ptx_with_opts(
        SOURCE,
        CompileOptions {
            options,
            name: Some(format!("ebm_cuda_{real}.cu")),
            ..Default::default()
        },
    )
    .map_err(|e| Error::Cuda(format!("compiling the kernels for {real}: {e}")))
}

impl Gpu {
    /// Opens CUDA device `ordinal` and compiles the kernels for it (NVRTC, about a second).
    ///
    /// # Errors
    /// [`Error::NoDevice`] with the reason when the CUDA libraries are missing, the driver
    /// reports no device, or `ordinal` is not one of its devices; [`Error::Cuda`] when the
    /// driver, cuBLAS or the kernel compiler fails.
    pub fn new(ordinal: usize) -> Result<Arc<Self>> {
        if let Some(reason) = unavailable() {
            return Err(Error::NoDevice(reason));
        }
        let count = CudaContext::device_count().map_err(Error::driver)?;
        if ordinal >= count as usize {
            return Err(Error::NoDevice(format!(
                "device cuda:{ordinal} asked for, but the driver reports {count} device(s) \
                 (cuda:0..cuda:{})",
                count - 1
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(Error::driver)?;
        let name = ctx.name().map_err(Error::driver)?;
        let capability = ctx.compute_capability().map_err(Error::driver)?;
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(stream.clone()).map_err(Error::blas)?;
        let compile = |real: &str| -> Result<Kernels> {
            let ptx = compile(real, capability)?;
            let module = ctx.load_module(ptx).map_err(Error::driver)?;
            Kernels::load(&module)
        };
        let (f32, f64) = (compile("float")?, compile("double")?);
        Ok(Arc::new(Self {
            ordinal,
            name,
            capability,
            stream,
            blas,
            f32,
            f64,
        }))
    }

    /// Opens the device a [`Device`] names.
    ///
    /// # Errors
    /// As [`Gpu::new`]; [`Error::Unsupported`] for [`Device::Cpu`].
    pub fn open(device: Device) -> Result<Arc<Self>> {
        match device {
            Device::Cuda(n) => Self::new(n as usize),
            Device::Cpu => Err(Error::Unsupported("Gpu::open(Device::Cpu)".into())),
        }
    }

    /// The device's name, as the driver reports it (e.g. `NVIDIA H200`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.capability
    }

    /// Waits until everything queued so far has run.
    ///
    /// # Errors
    /// [`Error::Cuda`] if a queued operation failed.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(Error::driver)
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub(crate) fn blas(&self) -> &CudaBlas {
        &self.blas
    }

    /// A zeroed device buffer of `n` values.
    pub(crate) fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, n: usize) -> Result<CudaSlice<T>> {
        self.stream.alloc_zeros(n.max(1)).map_err(Error::driver)
    }

    /// A device copy of `values`.
    pub(crate) fn upload<T: DeviceRepr>(&self, values: &[T]) -> Result<CudaSlice<T>> {
        if values.is_empty() {
            return Err(Error::Unsupported("an empty buffer".into()));
        }
        self.stream.clone_htod(values).map_err(Error::driver)
    }

    /// A host copy of the first `n` values of `x`.
    pub(crate) fn download<T: DeviceRepr + Default + Clone>(
        &self,
        x: &CudaSlice<T>,
        n: usize,
    ) -> Result<Vec<T>> {
        let mut out = vec![T::default(); n];
        self.stream
            .memcpy_dtoh(&x.slice(..n), &mut out)
            .map_err(Error::driver)?;
        Ok(out)
    }
}

/// The scalars the GPU computes in: `f32` and `f64`.
pub trait GpuScalar: Scalar + DeviceRepr + ValidAsZeroBits + Default + Unpin {
    /// The kernels compiled for this scalar.
    #[doc(hidden)]
    fn kernels(gpu: &Gpu) -> &Kernels;

    /// `C = alpha op(A) op(B) + beta C` by cuBLAS.
    ///
    /// # Safety
    /// The buffers must hold the matrices `cfg` describes.
    #[doc(hidden)]
    unsafe fn gemm<A: DevicePtr<Self>, B: DevicePtr<Self>, C: DevicePtrMut<Self>>(
        blas: &CudaBlas,
        cfg: GemmConfig<Self>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<()>;

    /// `y = alpha op(A) x + beta y` by cuBLAS.
    ///
    /// # Safety
    /// The buffers must hold the matrix and vectors `cfg` describes.
    #[doc(hidden)]
    unsafe fn gemv<A: DevicePtr<Self>, X: DevicePtr<Self>, Y: DevicePtrMut<Self>>(
        blas: &CudaBlas,
        cfg: GemvConfig<Self>,
        a: &A,
        x: &X,
        y: &mut Y,
    ) -> Result<()>;
}

macro_rules! gpu_scalar {
    ($t:ty, $field:ident) => {
        impl GpuScalar for $t {
            fn kernels(gpu: &Gpu) -> &Kernels {
                &gpu.$field
            }

            unsafe fn gemm<A: DevicePtr<Self>, B: DevicePtr<Self>, C: DevicePtrMut<Self>>(
                blas: &CudaBlas,
                cfg: GemmConfig<Self>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<()> {
                // SAFETY: the caller's contract.
                unsafe { Gemm::gemm(blas, cfg, a, b, c) }.map_err(Error::blas)
            }

            unsafe fn gemv<A: DevicePtr<Self>, X: DevicePtr<Self>, Y: DevicePtrMut<Self>>(
                blas: &CudaBlas,
                cfg: GemvConfig<Self>,
                a: &A,
                x: &X,
                y: &mut Y,
            ) -> Result<()> {
                // SAFETY: the caller's contract.
                unsafe { Gemv::gemv(blas, cfg, a, x, y) }.map_err(Error::blas)
            }
        }
    };
}

gpu_scalar!(f32, f32);
gpu_scalar!(f64, f64);

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel source compiles for both scalars wherever NVRTC can be loaded (no GPU
    /// needed); elsewhere the test says why it checks nothing.
    #[test]
    fn kernels_compile_with_nvrtc() {
        // SAFETY: only tries to open the library.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: NVRTC (libnvrtc) is not installed here");
            return;
        }
        for real in ["float", "double"] {
            let ptx = compile(real, (9, 0)).unwrap();
            let text = ptx.to_src();
            for name in ["sample_binary", "free_energies", "pt_exchange", "sgd_step"] {
                assert!(text.contains(name), "{real}: no {name} in the PTX");
            }
        }
        // A negative control: a source error is reported, not swallowed.
        let bad = compile_ptx_with_opts(
            "extern \"C\" __global__ void k() { x; }",
            Default::default(),
        );
        assert!(bad.is_err());
    }

    #[test]
    fn devices_parse_and_print() {
        for (s, d) in [
            ("cpu", Device::Cpu),
            ("cuda", Device::Cuda(0)),
            ("cuda:3", Device::Cuda(3)),
        ] {
            assert_eq!(s.parse::<Device>().unwrap(), d);
        }
        assert_eq!(Device::Cuda(2).to_string(), "cuda:2");
        for bad in ["gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA"] {
            let e = bad.parse::<Device>().unwrap_err();
            assert!(e.contains("expected cpu, cuda or cuda:N"), "{e}");
        }
    }
}

//! Models whose unit types are known only at run time: a file's header names the visible and
//! hidden kinds (`bernoulli`, `spin`, `potts`, `gaussian`, `relu`, `drelu`), and one generic
//! task is run on the [`Rbm<V, H>`] of those kinds, for every visible x hidden combination, in
//! `f64` or in the [`Precision`] the caller chooses. A program (the `ebm` command line, a
//! language binding) is then written once, generic over [`UnitLayer`], and asks each layer what
//! it supports instead of matching on names.
//!
//! ```
//! use ebm_data::Domain;
//! use ebm_train::kinds::{KindsTask, UnitLayer, with_kinds};
//! use std::path::Path;
//!
//! /// The model's kinds, and whether its visible units are discrete.
//! struct Describe;
//! impl KindsTask for Describe {
//!     type Output = (String, bool);
//!     type Error = ebm_core::Error;
//!     fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
//!         self,
//!     ) -> ebm_core::Result<(String, bool)> {
//!         let v = V::with_units(6, None).expect("6 units");
//!         Ok((format!("{}-{}", V::KIND, H::KIND), v.data_domain() != Domain::Real))
//!     }
//! }
//! let (name, discrete) = with_kinds("spin", "gaussian", Path::new("model.json"), Describe)?;
//! assert_eq!(name, "spin-gaussian");
//! assert!(discrete);
//! let unknown = with_kinds("ising", "gaussian", Path::new("model.json"), Describe);
//! assert!(unknown.unwrap_err().to_string().contains("unit kind \"ising\""));
//! # Ok::<(), ebm_core::Error>(())
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use ebm_core::{ChainRng, EnergyModel, ExactSampling, Par, Scalar};
use ebm_data::{Dataset, Domain};
use ebm_estimators::{LogZEstimate, Method, Population, PseudoLogLikelihood, Start};
use ebm_models::{Bernoulli, DReLU, Gaussian, Layer, Potts, Rbm, RbmChains, ReLU, Spin, exact};
use ebm_samplers::latent::LatentUnits;
use nalgebra::DMatrix;

use crate::TrainableLayer;

/// What a program that learns a model's unit types at run time (from a file's header) can ask
/// of each type beyond [`Layer`] and [`TrainableLayer`] (which says whether its units are
/// real-valued, i.e. whose conditionals exist only at \\(\beta > 0\\)): its data domain, exact
/// \\(\log Z\\) and exact draws by enumeration, latent-space moves, the pseudo-log-likelihood.
/// Each answer is `None` where the type has no such capability, so a caller generic over
/// `UnitLayer` never downcasts.
///
/// Implemented for every unit type in both precisions (`f32` and `f64`, [`Layer::Scalar`]):
/// data are loaded in `f64` and checked there ([`UnitLayer::check_values`]); everything on the
/// model is in its own scalar.
pub trait UnitLayer: TrainableLayer + NewLayer + 'static {
    /// The same unit kind in `f64` (see [`in_f64`]).
    type InF64: UnitLayer<Scalar = f64>;

    /// The value domain of this layer's configurations, as data must be given.
    fn data_domain(&self) -> Domain;

    /// Checks beyond the domain (e.g. non-negative values for ReLU units).
    fn check_values(&self, _data: &DMatrix<f64>) -> std::result::Result<(), String> {
        Ok(())
    }

    /// \\(\log Z_\beta\\) of `rbm` by enumerating this (visible) layer, for discrete layers;
    /// `None` (the default) for the others.
    fn log_partition_as_visible<H: Layer<Scalar = Self::Scalar>>(
        rbm: &Rbm<Self, H>,
        beta: f64,
        par: Par,
    ) -> Option<ebm_core::Result<f64>> {
        let _ = (rbm, beta, par);
        None
    }

    /// The independent-site layer whose unit means are `means` (the data means), where the
    /// layer type has such a constructor; `None` (the default) otherwise.
    fn from_means(means: &[f64]) -> Option<Self> {
        let _ = means;
        None
    }

    /// Replaces every chain by an exact draw of `rbm` at `beta`, enumerating this (visible)
    /// layer ([`exact::Enumerated`]), for discrete layers; `None` (the default) for the others.
    fn sample_exact_as_visible<H: Layer<Scalar = Self::Scalar>>(
        rbm: &Rbm<Self, H>,
        chains: &mut RbmChains<Self::Scalar>,
        beta: f64,
        rngs: &mut [ChainRng],
        par: Par,
    ) -> Option<ebm_core::Result<()>> {
        let _ = (rbm, chains, beta, rngs, par);
        None
    }

    /// Runs `task` on `rbm`, whose hidden layer is this one, when its units have latent-space
    /// moves ([`LatentUnits`]: bernoulli, spin, gaussian and relu units); `None` for the others.
    /// Static dispatch: those layers override it, so no caller downcasts.
    fn on_latent_hidden<V: UnitLayer<Scalar = Self::Scalar>, T: LatentTask<V>>(
        rbm: &Rbm<V, Self>,
        task: T,
    ) -> Option<T::Output> {
        let _ = (rbm, task);
        None
    }

    /// The mean pseudo-log-likelihood of `data` under `rbm`, for discrete (visible) layers:
    /// exact without `rngs`, the one-coordinate estimate with one RNG stream per sample
    /// ([`ebm_estimators::pseudo_log_likelihood`] and
    /// [`ebm_estimators::pseudo_log_likelihood_estimate`]); `None` (the default) for
    /// real-valued layers.
    fn pseudo_log_likelihood_as_visible<H: Layer<Scalar = Self::Scalar>>(
        rbm: &Rbm<Self, H>,
        data: &DMatrix<Self::Scalar>,
        rngs: Option<&mut [ChainRng]>,
        par: Par,
    ) -> Option<ebm_core::Result<PseudoLogLikelihood>> {
        let _ = (rbm, data, rngs, par);
        None
    }
}

/// Work on an RBM whose hidden units have latent-space moves, for
/// [`UnitLayer::on_latent_hidden`].
pub trait LatentTask<V: UnitLayer> {
    /// What the task returns.
    type Output;
    /// Runs the task on `rbm`.
    fn run<H: UnitLayer<Scalar = V::Scalar> + LatentUnits>(self, rbm: &Rbm<V, H>) -> Self::Output;
}

/// The override of [`UnitLayer::on_latent_hidden`] for a layer with latent-space moves.
macro_rules! latent_hidden {
    ($latent:ident) => {
        fn on_latent_hidden<V: UnitLayer<Scalar = Self::Scalar>, T: LatentTask<V>>(
            rbm: &Rbm<V, Self>,
            task: T,
        ) -> Option<T::Output> {
            Some(task.run(rbm))
        }
    };
}

macro_rules! discrete_layer {
    ($ty:ident, $domain:expr, $from_means:expr $(, $latent:ident)?) => {
        impl<F: Scalar> UnitLayer for $ty<F> {
            $(latent_hidden!($latent);)?
            type InF64 = $ty<f64>;

            fn data_domain(&self) -> Domain {
                #[allow(clippy::redundant_closure_call)]
                ($domain)(self)
            }

            fn log_partition_as_visible<H: Layer<Scalar = Self::Scalar>>(
                rbm: &Rbm<Self, H>,
                beta: f64,
                par: Par,
            ) -> Option<ebm_core::Result<f64>> {
                Some(exact::log_partition_by_visible(rbm, beta, par))
            }

            fn from_means(means: &[f64]) -> Option<Self> {
                #[allow(clippy::redundant_closure_call)]
                ($from_means)(means)
            }

            fn sample_exact_as_visible<H: Layer<Scalar = Self::Scalar>>(
                rbm: &Rbm<Self, H>,
                chains: &mut RbmChains<Self::Scalar>,
                beta: f64,
                rngs: &mut [ChainRng],
                par: Par,
            ) -> Option<ebm_core::Result<()>> {
                Some(
                    exact::Enumerated::new(rbm.clone())
                        .map(|e| e.sample_exact(chains, beta, rngs, par)),
                )
            }

            fn pseudo_log_likelihood_as_visible<H: Layer<Scalar = Self::Scalar>>(
                rbm: &Rbm<Self, H>,
                data: &DMatrix<Self::Scalar>,
                rngs: Option<&mut [ChainRng]>,
                par: Par,
            ) -> Option<ebm_core::Result<PseudoLogLikelihood>> {
                Some(match rngs {
                    None => ebm_estimators::pseudo_log_likelihood(rbm, data, par),
                    Some(r) => ebm_estimators::pseudo_log_likelihood_estimate(rbm, data, r, par),
                })
            }
        }
    };
}

discrete_layer!(
    Bernoulli,
    |_: &Self| Domain::Binary01,
    |m: &[f64]| Some(Bernoulli::from_means(m)),
    latent
);
discrete_layer!(
    Spin,
    |_: &Self| Domain::Spin,
    |m: &[f64]| Some(Spin::from_means(m)),
    latent
);
discrete_layer!(
    Potts,
    |p: &Self| Domain::OneHot { q: p.q() },
    |_: &[f64]| None
);

macro_rules! real_layer {
    ($ty:ident, $check:expr $(, $latent:ident)?) => {
        impl<F: Scalar> UnitLayer for $ty<F> {
            $(latent_hidden!($latent);)?
            type InF64 = $ty<f64>;

            fn data_domain(&self) -> Domain {
                Domain::Real
            }

            fn check_values(&self, data: &DMatrix<f64>) -> std::result::Result<(), String> {
                #[allow(clippy::redundant_closure_call)]
                ($check)(data)
            }
        }
    };
}

fn any_real(_: &DMatrix<f64>) -> std::result::Result<(), String> {
    Ok(())
}

fn non_negative(data: &DMatrix<f64>) -> std::result::Result<(), String> {
    match data.iter().position(|&x| x < 0.0) {
        None => Ok(()),
        Some(p) => {
            let nf = data.nrows().max(1);
            Err(format!(
                "entry (feature {}, sample {}) = {} is negative; relu units take values >= 0",
                p % nf,
                p / nf,
                data[p]
            ))
        }
    }
}

real_layer!(Gaussian, any_real, latent);
real_layer!(ReLU, non_negative, latent);
real_layer!(DReLU, any_real);

/// A fresh layer of a unit type, for training a new model.
pub trait NewLayer: Sized {
    /// `n` units at zero fields (unit precisions for real-valued units); `q` is the number of
    /// states of a Potts unit and must be given for Potts layers only.
    fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String>;
}

fn no_states(kind: &str, q: Option<usize>) -> std::result::Result<(), String> {
    match q {
        None => Ok(()),
        Some(_) => Err(format!(
            "{kind} units have no number of states (only potts units do)"
        )),
    }
}

/// [`NewLayer`] for the unit types without a number of states, made by `$make(n)`.
macro_rules! new_layer_without_states {
    ($($ty:ident => $make:ident),*) => {$(
        impl<F: Scalar> NewLayer for $ty<F> {
            fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String> {
                no_states(<$ty<F> as Layer>::KIND, q).map(|()| $ty::$make(n))
            }
        }
    )*};
}

new_layer_without_states!(
    Bernoulli => zeros,
    Spin => zeros,
    Gaussian => standard,
    ReLU => standard,
    DReLU => standard
);

impl<F: Scalar> NewLayer for Potts<F> {
    fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String> {
        match q {
            Some(q) if q >= 2 => Ok(Potts::zeros(n, q)),
            Some(q) => Err(format!("potts units need at least 2 states, got {q}")),
            None => Err("potts units need their number of states".into()),
        }
    }
}

/// The floating-point precision a model is run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision: parameters, chains, gradients and optimiser state in `f32`.
    F32,
    /// Double precision (the default).
    #[default]
    F64,
}

impl Precision {
    /// The name of the scalar type, as in model file headers (`"f32"` or `"f64"`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => f32::NAME,
            Precision::F64 => f64::NAME,
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Data that cannot be the visible configurations of a model ([`visible_data`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    /// The data's file.
    pub file: PathBuf,
    /// What does not fit.
    pub reason: String,
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.reason)
    }
}

impl std::error::Error for DataError {}

/// Checks that a dataset can be the visible configurations of `layer`: as many features as the
/// layer has values per chain, and every value in the layer's domain. Loaded real numbers are
/// re-labelled with the layer's domain after the check; data already in another discrete domain
/// is converted when the conversion is defined (e.g. one-hot with the same `q`).
///
/// # Errors
/// [`DataError`] naming `file`: another number of features, values outside the layer's
/// domain, or values the layer refuses ([`UnitLayer::check_values`]).
pub fn visible_data<V: UnitLayer>(
    layer: &V,
    ds: Dataset,
    file: &Path,
) -> Result<Dataset, DataError> {
    let error = |reason: String| DataError {
        file: file.to_path_buf(),
        reason,
    };
    if ds.n_features() != layer.width() {
        return Err(error(format!(
            "{} features per sample, but the model's {} visible layer has {} values per \
             configuration",
            ds.n_features(),
            V::KIND,
            layer.width()
        )));
    }
    let want = layer.data_domain();
    let ds = if ds.domain() == want {
        ds
    } else if ds.domain() == Domain::Real {
        ds.reinterpret(want).map_err(|e| {
            error(format!(
                "the data do not fit the model's {} visible units ({}): {e}",
                V::KIND,
                domain_name(want)
            ))
        })?
    } else {
        ds.to_domain(want).map_err(|e| {
            error(format!(
                "{} data cannot be given to {} visible units: {e}",
                domain_name(ds.domain()),
                V::KIND
            ))
        })?
    };
    layer.check_values(ds.data()).map_err(error)?;
    Ok(ds)
}

/// A short name of a domain for messages and records.
pub fn domain_name(d: Domain) -> String {
    match d {
        Domain::Binary01 => "values in {0,1}".into(),
        Domain::Spin => "values in {-1,+1}".into(),
        Domain::Categorical { q } => format!("categories 0..{}", q.saturating_sub(1)),
        Domain::OneHot { q } => format!("one-hot blocks of {q} states"),
        Domain::Real => "real values".into(),
    }
}

/// Why a model's unit kinds cannot be run: a kind that is not one of [`KINDS`], or a pair
/// of kinds outside [`F32_KINDS`] asked for in `f32`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindError {
    /// `kind`, named in the header of `file`, is not one of [`KINDS`].
    UnknownKind {
        /// The kind as written.
        kind: String,
        /// The file whose header names it.
        file: PathBuf,
    },
    /// The pair `visible`-`hidden` of `file` runs in `f64` only.
    NotInF32 {
        /// The visible kind.
        visible: String,
        /// The hidden kind.
        hidden: String,
        /// The model's file.
        file: PathBuf,
    },
}

impl KindError {
    /// The model's file.
    pub fn file(&self) -> &Path {
        match self {
            KindError::UnknownKind { file, .. } | KindError::NotInF32 { file, .. } => file,
        }
    }

    /// What is wrong, without the file's name.
    pub fn reason(&self) -> String {
        match self {
            KindError::UnknownKind { kind, .. } => format!(
                "unit kind \"{kind}\" is not supported by this program (supported: {})",
                KINDS.join(", ")
            ),
            KindError::NotInF32 {
                visible, hidden, ..
            } => format!(
                "--precision f32 runs {} units only, this model is {visible}-{hidden}: use \
                 --precision f64",
                F32_KINDS.join(" and ")
            ),
        }
    }
}

impl fmt::Display for KindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file().display(), self.reason())
    }
}

impl std::error::Error for KindError {}

/// The error of a task run on run-time kinds: the task's own, which must hold the dispatch's
/// [`KindError`] and the library's [`ebm_core::Error`] (a model file that cannot be loaded).
pub trait TaskError: From<KindError> + From<ebm_core::Error> {}

impl<E: From<KindError> + From<ebm_core::Error>> TaskError for E {}

impl From<KindError> for ebm_core::Error {
    fn from(e: KindError) -> Self {
        ebm_core::Error::Format {
            path: e.file().to_path_buf(),
            location: "header".into(),
            reason: e.reason(),
        }
    }
}

/// A computation generic over the unit types, which are known only at run time, in the
/// scalar `F` (`f64` unless the caller chooses, see [`with_kinds_in`]).
pub trait KindsTask<F: Scalar = f64> {
    /// What the task returns.
    type Output;
    /// Its error.
    type Error: TaskError;
    /// Runs the task with the layer types `V` and `H`.
    fn run<V: UnitLayer<Scalar = F>, H: UnitLayer<Scalar = F>>(
        self,
    ) -> Result<Self::Output, Self::Error>;
}

/// A computation on an RBM whose unit types are known only at run time, in the scalar `F`.
pub trait RbmTask<F: Scalar = f64> {
    /// What the task returns.
    type Output;
    /// Its error.
    type Error: TaskError;
    /// Runs the task on the loaded model (read from `file`).
    fn run<V: UnitLayer<Scalar = F>, H: UnitLayer<Scalar = F>>(
        self,
        rbm: Rbm<V, H>,
        file: &Path,
    ) -> Result<Self::Output, Self::Error>;
}

/// The unit kinds that can be run, as model file headers name them.
pub const KINDS: [&str; 6] = ["bernoulli", "spin", "potts", "gaussian", "relu", "drelu"];

/// Runs `task` with the layer types named `visible` and `hidden` (as written in the header of
/// `file`), every combination of the six unit types, in the scalar `F`.
///
/// # Errors
/// [`KindError::UnknownKind`] for a kind not in [`KINDS`]; the task's own errors.
pub fn with_kinds<F: Scalar, T: KindsTask<F>>(
    visible: &str,
    hidden: &str,
    file: &Path,
    task: T,
) -> Result<T::Output, T::Error> {
    match visible {
        "bernoulli" => with_hidden::<Bernoulli<F>, _>(hidden, file, task),
        "spin" => with_hidden::<Spin<F>, _>(hidden, file, task),
        "potts" => with_hidden::<Potts<F>, _>(hidden, file, task),
        "gaussian" => with_hidden::<Gaussian<F>, _>(hidden, file, task),
        "relu" => with_hidden::<ReLU<F>, _>(hidden, file, task),
        "drelu" => with_hidden::<DReLU<F>, _>(hidden, file, task),
        _ => Err(unknown_kind(visible, file).into()),
    }
}

/// [`with_kinds`] once the visible layer type `V` is known.
fn with_hidden<V: UnitLayer, T: KindsTask<V::Scalar>>(
    hidden: &str,
    file: &Path,
    task: T,
) -> Result<T::Output, T::Error> {
    match hidden {
        "bernoulli" => task.run::<V, Bernoulli<V::Scalar>>(),
        "spin" => task.run::<V, Spin<V::Scalar>>(),
        "potts" => task.run::<V, Potts<V::Scalar>>(),
        "gaussian" => task.run::<V, Gaussian<V::Scalar>>(),
        "relu" => task.run::<V, ReLU<V::Scalar>>(),
        "drelu" => task.run::<V, DReLU<V::Scalar>>(),
        _ => Err(unknown_kind(hidden, file).into()),
    }
}

fn unknown_kind(kind: &str, file: &Path) -> KindError {
    KindError::UnknownKind {
        kind: kind.into(),
        file: file.into(),
    }
}

/// The unit kinds that run in `f32`: the binary ones, the papers' models. The others (Potts,
/// Gaussian, ReLU, dReLU) run in `f64` only: every pair of kinds a program runs is compiled
/// once per precision, and the second copy of all 36 pairs made the `ebm` program's release
/// build several minutes longer.
pub const F32_KINDS: [&str; 2] = ["bernoulli", "spin"];

/// [`with_kinds`] in the chosen `precision`: `task` is instantiated in `f64` for every pair of
/// kinds and in `f32` for the pairs of [`F32_KINDS`] (only the callers that offer a choice of
/// precision pay for the second copy).
///
/// # Errors
/// [`KindError::NotInF32`] for another pair in `f32`; as [`with_kinds`] otherwise.
pub fn with_kinds_in<T, O, E>(
    precision: Precision,
    visible: &str,
    hidden: &str,
    file: &Path,
    task: T,
) -> Result<O, E>
where
    T: KindsTask<f32, Output = O, Error = E> + KindsTask<f64, Output = O, Error = E>,
    E: TaskError,
{
    fn binary_hidden<V: UnitLayer<Scalar = f32>, T: KindsTask<f32>>(
        hidden: &str,
        task: T,
    ) -> Result<T::Output, T::Error> {
        match hidden {
            "bernoulli" => task.run::<V, Bernoulli<f32>>(),
            _ => task.run::<V, Spin<f32>>(),
        }
    }
    match precision {
        Precision::F64 => with_kinds::<f64, T>(visible, hidden, file, task),
        Precision::F32 if F32_KINDS.contains(&visible) && F32_KINDS.contains(&hidden) => {
            match visible {
                "bernoulli" => binary_hidden::<Bernoulli<f32>, T>(hidden, task),
                _ => binary_hidden::<Spin<f32>, T>(hidden, task),
            }
        }
        Precision::F32 => Err(KindError::NotInF32 {
            visible: visible.into(),
            hidden: hidden.into(),
            file: file.into(),
        }
        .into()),
    }
}

/// Loads the RBM in `path` with the unit types its header names (parameters in `F`: an
/// `f32` file is widened exactly to `f64`, an `f64` file rounded to `f32`) and runs `task` on
/// it.
///
/// # Errors
/// A file that cannot be read or loaded ([`ebm_io::load_rbm`]); as [`with_kinds`] otherwise.
pub fn with_model<F: Scalar, T: RbmTask<F>>(path: &Path, task: T) -> Result<T::Output, T::Error> {
    struct Load<'a, T> {
        path: &'a Path,
        task: T,
    }
    impl<F: Scalar, T: RbmTask<F>> KindsTask<F> for Load<'_, T> {
        type Output = T::Output;
        type Error = T::Error;
        fn run<V: UnitLayer<Scalar = F>, H: UnitLayer<Scalar = F>>(
            self,
        ) -> Result<T::Output, T::Error> {
            let rbm = ebm_io::load_rbm::<V, H>(self.path)?;
            self.task.run(rbm, self.path)
        }
    }
    let info = ebm_io::read_rbm_info(path)?;
    with_kinds(&info.visible, &info.hidden, path, Load { path, task })
}

/// Work on a model in `f64` only: a feature whose library code is `f64`-only, reached from
/// code generic over the scalar ([`in_f64`]).
pub trait F64Task {
    /// What the task returns.
    type Output;
    /// Its error.
    type Error: TaskError;
    /// Runs the task on `rbm`.
    fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
        self,
        rbm: &Rbm<V, H>,
    ) -> Result<Self::Output, Self::Error>;
}

/// Runs `task` on `rbm` if its scalar is `f64`; `None` (nothing run) for an `f32` model. The
/// task sees a copy of the model with its kinds named in `f64` ([`UnitLayer::InF64`], through
/// [`Rbm::to_scalar`]): the same parameters bit for bit.
///
/// # Errors
/// The task's.
pub fn in_f64<V, H, T>(rbm: &Rbm<V, H>, task: T) -> Result<Option<T::Output>, T::Error>
where
    V: UnitLayer,
    H: UnitLayer<Scalar = V::Scalar>,
    T: F64Task,
{
    if V::Scalar::NAME != f64::NAME {
        return Ok(None);
    }
    // The same kinds in f64: a copy of the parameters, exact since the scalar is f64.
    let rbm = rbm.to_scalar::<V::InF64, H::InF64>()?;
    task.run(&rbm).map(Some)
}

/// Which layer exact \\(\log Z\\) enumerates, and how many configurations it has.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct Enumeration {
    /// `"visible"` or `"hidden"`.
    pub layer: String,
    /// Number of configurations summed over.
    pub configurations: f64,
}

/// Exact \\(\log Z_\beta\\) of `rbm`, enumerating its smaller discrete layer (the hidden layer
/// through the transposed model, whose joint energy is the same).
///
/// # Errors
/// [`ebm_core::Error::InvalidParameter`] when both layers are real-valued;
/// [`ebm_core::Error::TooLarge`] when the smaller discrete layer has too many configurations.
pub fn exact_log_partition<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    par: Par,
) -> ebm_core::Result<(f64, Enumeration)> {
    let nv = rbm.visible().discrete_configurations();
    let nh = rbm.hidden().discrete_configurations();
    let use_hidden = match (nv, nh) {
        (Some(a), Some(b)) => b < a,
        (None, Some(_)) => true,
        (Some(_), None) => false,
        (None, None) => {
            return Err(ebm_core::Error::InvalidParameter {
                name: "model".into(),
                reason: format!(
                    "exact log Z needs a discrete layer to enumerate, but both layers of this \
                     {}-{} RBM are real-valued",
                    V::KIND,
                    H::KIND
                ),
            });
        }
    };
    let (log_z, layer, n) = if use_hidden {
        let t = rbm.transposed();
        let z = H::log_partition_as_visible(&t, beta, par).expect("hidden layer is discrete")?;
        (z, "hidden", nh.unwrap_or(0))
    } else {
        let z = V::log_partition_as_visible(rbm, beta, par).expect("visible layer is discrete")?;
        (z, "visible", nv.unwrap_or(0))
    };
    Ok((
        log_z,
        Enumeration {
            layer: layer.into(),
            configurations: n as f64,
        },
    ))
}

/// `n_chains` exact draws of `rbm` at `beta` with its exact \\(\log Z_\beta\\), by enumerating
/// the smaller discrete layer as [`exact_log_partition`] does (the hidden layer through the
/// transposed model, whose draws are transposed back): the start of reverse AIS from exact
/// samples, or the first checkpoint of a trajectory with non-zero weights. Chain `i` consumes
/// stream `i` of `seed`.
///
/// # Errors
/// As [`exact_log_partition`]; as [`Population::new`].
pub fn exact_start<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    n_chains: usize,
    seed: u64,
    par: Par,
) -> ebm_core::Result<Start<RbmChains<f64>>> {
    let (log_z, how) = exact_log_partition(rbm, beta, par)?;
    let mut population = Population::new(rbm.new_state(n_chains), seed)?;
    let rngs = population.rngs.as_mut_slice();
    let chains = &mut population.chains;
    let drawn = if how.layer == "hidden" {
        let mut t = RbmChains {
            visible: std::mem::replace(&mut chains.hidden, DMatrix::zeros(0, 0)),
            hidden: std::mem::replace(&mut chains.visible, DMatrix::zeros(0, 0)),
        };
        let drawn = H::sample_exact_as_visible(&rbm.transposed(), &mut t, beta, rngs, par);
        chains.visible = t.hidden;
        chains.hidden = t.visible;
        drawn
    } else {
        V::sample_exact_as_visible(rbm, chains, beta, rngs, par)
    };
    drawn.expect("exact_log_partition enumerated a discrete layer")?;
    let side = if how.layer == "hidden" {
        ebm_estimators::Side::Hidden
    } else {
        ebm_estimators::Side::Visible
    };
    Ok(Start {
        population,
        log_z: LogZEstimate::exact(
            log_z,
            Method::Enumeration {
                side,
                configurations: how.configurations as u64,
            },
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds and scalar a task was run with, and what the visible layer supports.
    struct Names;
    impl<F: Scalar> KindsTask<F> for Names {
        type Output = (String, String, &'static str, bool, bool);
        type Error = ebm_core::Error;
        fn run<V: UnitLayer<Scalar = F>, H: UnitLayer<Scalar = F>>(
            self,
        ) -> ebm_core::Result<Self::Output> {
            let q = (V::KIND == "potts").then_some(3);
            let v = V::with_units(2, q).expect("a layer of 2 units");
            let h = H::with_units(1, (H::KIND == "potts").then_some(3)).expect("1 unit");
            let (nv, nh) = (v.width(), h.width());
            let rbm = Rbm::new(v, h, DMatrix::zeros(nv, nh))?;
            let enumerable = V::log_partition_as_visible(&rbm, 1.0, Par::Seq).is_some();
            let from_means = V::from_means(&[0.5, 0.5]).is_some();
            Ok((
                V::KIND.into(),
                H::KIND.into(),
                F::NAME,
                enumerable,
                from_means,
            ))
        }
    }

    #[test]
    fn every_pair_of_kinds_runs_with_its_types() {
        let file = Path::new("m.json");
        for v in KINDS {
            for h in KINDS {
                let (vk, hk, scalar, enumerable, from_means) =
                    with_kinds::<f64, _>(v, h, file, Names).unwrap();
                assert_eq!((vk.as_str(), hk.as_str(), scalar), (v, h, "f64"));
                assert_eq!(
                    enumerable,
                    ["bernoulli", "spin", "potts"].contains(&v),
                    "{v}"
                );
                assert_eq!(from_means, ["bernoulli", "spin"].contains(&v), "{v}");
                let in_f32 = with_kinds_in(Precision::F32, v, h, file, Names);
                if F32_KINDS.contains(&v) && F32_KINDS.contains(&h) {
                    assert_eq!(in_f32.unwrap().2, "f32");
                } else {
                    let e = in_f32.unwrap_err().to_string();
                    assert_eq!(
                        e,
                        format!(
                            "malformed file m.json at header: --precision f32 runs \
                             bernoulli and spin units only, this model is {v}-{h}: use \
                             --precision f64"
                        )
                    );
                }
            }
        }
    }

    #[test]
    fn an_unknown_kind_is_an_error_naming_it_and_the_file() {
        let e = with_kinds::<f64, _>("bernoulli", "ising", Path::new("m.json"), Names).unwrap_err();
        let expected = "unit kind \"ising\" is not supported by this program (supported: \
                        bernoulli, spin, potts, gaussian, relu, drelu)";
        assert_eq!(
            e.to_string(),
            format!("malformed file m.json at header: {expected}")
        );
        let direct = KindError::UnknownKind {
            kind: "ising".into(),
            file: "m.json".into(),
        };
        assert_eq!(direct.to_string(), format!("m.json: {expected}"));
    }

    #[test]
    fn a_model_file_is_run_with_the_kinds_of_its_header() {
        struct Width;
        impl RbmTask for Width {
            type Output = (&'static str, usize, usize);
            type Error = ebm_core::Error;
            fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
                self,
                rbm: Rbm<V, H>,
                _file: &Path,
            ) -> ebm_core::Result<Self::Output> {
                Ok((H::KIND, rbm.visible().width(), rbm.hidden().width()))
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        let rbm = Rbm::new(
            Spin::<f64>::zeros(4),
            ReLU::standard(3),
            DMatrix::from_element(4, 3, 0.1),
        )
        .unwrap();
        ebm_io::save_rbm(&rbm, &path).unwrap();
        assert_eq!(with_model(&path, Width).unwrap(), ("relu", 4, 3));
    }

    #[test]
    fn f64_only_work_is_skipped_for_an_f32_model() {
        struct Sum;
        impl F64Task for Sum {
            type Output = f64;
            type Error = ebm_core::Error;
            fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
                self,
                rbm: &Rbm<V, H>,
            ) -> ebm_core::Result<f64> {
                Ok(rbm.weights().sum())
            }
        }
        let w = DMatrix::from_element(2, 1, 0.25);
        let r64 = Rbm::new(Bernoulli::<f64>::zeros(2), Spin::zeros(1), w.clone()).unwrap();
        assert_eq!(in_f64(&r64, Sum).unwrap(), Some(0.5));
        let r32 = Rbm::new(Bernoulli::<f32>::zeros(2), Spin::zeros(1), w.cast()).unwrap();
        assert_eq!(in_f64(&r32, Sum).unwrap(), None);

        // The task sees the model's kinds and every parameter as they are.
        struct Same<'a>(&'a Rbm<Potts<f64>, ReLU<f64>>);
        impl F64Task for Same<'_> {
            type Output = bool;
            type Error = ebm_core::Error;
            fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
                self,
                rbm: &Rbm<V, H>,
            ) -> ebm_core::Result<bool> {
                Ok((V::KIND, H::KIND) == ("potts", "relu")
                    && rbm.weights() == self.0.weights()
                    && rbm.visible().tensors() == self.0.visible().tensors()
                    && rbm.hidden().tensors() == self.0.hidden().tensors())
            }
        }
        let v = Potts::new(3, vec![0.5, -0.25, 0.125, 0.0, 1.5, -2.0]).unwrap();
        let h = ReLU::new(vec![1.5, 0.75], vec![-0.5, 0.25]).unwrap();
        let (nv, nh) = (v.width(), h.width());
        let rbm = Rbm::new(
            v,
            h,
            DMatrix::from_fn(nv, nh, |i, j| 0.1 * i as f64 - 0.3 * j as f64),
        )
        .unwrap();
        assert_eq!(in_f64(&rbm, Same(&rbm)).unwrap(), Some(true));
    }

    /// A 4 x 2 model whose smaller layer is the hidden one.
    fn bernoulli_spin_4x2() -> Rbm<Bernoulli<f64>, Spin<f64>> {
        Rbm::new(
            Bernoulli::new(vec![0.1, -0.2, 0.3, 0.0]),
            Spin::new(vec![0.5, -0.5]),
            DMatrix::from_row_slice(4, 2, &[1.0, -1.0, 0.5, 0.25, -0.3, 0.8, 0.2, 0.1]),
        )
        .unwrap()
    }

    #[test]
    fn exact_log_z_enumerates_the_smaller_layer_and_agrees_both_ways() {
        let rbm = bernoulli_spin_4x2();
        let (z, how) = exact_log_partition(&rbm, 1.0, Par::Seq).unwrap();
        assert_eq!(how.layer, "hidden");
        assert_eq!(how.configurations, 4.0);
        let by_v = exact::log_partition_by_visible(&rbm, 1.0, Par::Seq).unwrap();
        assert!((z - by_v).abs() < 1e-12, "{z} vs {by_v}");

        let g = Rbm::new(
            Gaussian::<f64>::standard(2),
            Gaussian::standard(1),
            DMatrix::zeros(2, 1),
        )
        .unwrap();
        assert!(exact_log_partition(&g, 1.0, Par::Seq).is_err());
    }

    /// Exact draws through the transposed model (the hidden layer is the smaller one) are
    /// transposed back: the visible configurations follow \\(e^{-F(v)}/Z\\) (16 states,
    /// 20 000 draws, each frequency within 5 standard errors), and the start's \\(\log Z\\) is
    /// the exact one.
    #[test]
    fn exact_start_draws_the_model_through_its_smaller_layer() {
        let rbm = bernoulli_spin_4x2();
        let n = 20_000;
        let start = exact_start(&rbm, 1.0, n, 3, Par::Seq).unwrap();
        let (log_z, how) = exact_log_partition(&rbm, 1.0, Par::Seq).unwrap();
        assert_eq!(how.layer, "hidden");
        assert_eq!(start.log_z.log_z, log_z);
        let v = &start.population.chains.visible;
        assert_eq!(v.shape(), (4, n));
        let mut counts = [0usize; 16];
        for j in 0..n {
            let code = (0..4).fold(0, |c, i| 2 * c + (v[(i, j)] > 0.5) as usize);
            counts[code] += 1;
        }
        let configs = DMatrix::from_fn(4, 16, |i, c| ((c >> (3 - i)) & 1) as f64);
        let mut f = vec![0.0; 16];
        rbm.free_energy_visible(&configs, 1.0, &mut f, Par::Seq);
        for (c, &count) in counts.iter().enumerate() {
            let p = (-f[c] - log_z).exp();
            let se = (p * (1.0 - p) / n as f64).sqrt();
            let freq = count as f64 / n as f64;
            assert!((freq - p).abs() < 5.0 * se, "state {c}: {freq} vs {p}");
        }
    }

    #[test]
    fn fresh_layers_check_their_number_of_states() {
        assert_eq!(
            Spin::<f64>::with_units(3, Some(2)).unwrap_err(),
            "spin units have no number of states (only potts units do)"
        );
        assert_eq!(ReLU::<f32>::with_units(3, None).unwrap().n_units(), 3);
        assert_eq!(Potts::<f64>::with_units(2, Some(4)).unwrap().width(), 8);
        assert!(Potts::<f64>::with_units(2, Some(1)).is_err());
        assert!(Potts::<f64>::with_units(2, None).is_err());
    }

    #[test]
    fn data_must_fit_the_visible_units() {
        let layer = Bernoulli::<f64>::zeros(2);
        let p = Path::new("d.npy");
        let ok = Dataset::new(
            DMatrix::from_row_slice(2, 2, &[0.0, 1.0, 1.0, 1.0]),
            Domain::Real,
        );
        assert_eq!(
            visible_data(&layer, ok.unwrap(), p).unwrap().domain(),
            Domain::Binary01
        );
        let spins = Dataset::new(DMatrix::from_element(2, 3, -1.0), Domain::Real).unwrap();
        let e = visible_data(&layer, spins, p).unwrap_err().to_string();
        assert!(e.contains("bernoulli") && e.contains("{0,1}"), "{e}");
        let wide = Dataset::new(DMatrix::zeros(3, 1), Domain::Real).unwrap();
        assert!(visible_data(&layer, wide, p).is_err());
        let neg = Dataset::new(DMatrix::from_element(1, 1, -0.5), Domain::Real).unwrap();
        let e = visible_data(&ReLU::<f64>::standard(1), neg, p).unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
    }
}

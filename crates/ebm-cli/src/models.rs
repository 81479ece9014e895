//! Model files and unit kinds: the kinds are read from the file's header, and one generic task
//! is run on the `Rbm<V, H>` of those kinds (every visible x hidden combination of the six unit
//! types, in `f64`, or in the precision a command chooses with `--precision`), so each command
//! is written once.

use std::path::Path;

use ebm_core::{ChainRng, EnergyModel, ExactSampling, Par, Scalar};
use ebm_data::{Dataset, Domain};
use ebm_estimators::{LogZEstimate, Method, Population, PseudoLogLikelihood, Start};
use ebm_models::{Bernoulli, DReLU, Gaussian, Layer, Potts, Rbm, RbmChains, ReLU, Spin, exact};
use nalgebra::DMatrix;

use ebm_samplers::latent::LatentUnits;

use crate::error::{CliError, Result, bail};

/// What the command line needs to know about a unit type beyond [`Layer`] and
/// [`ebm_train::TrainableLayer`] (which says whether its units are real-valued, i.e. whose
/// conditionals exist only at \\(\beta > 0\\)).
///
/// Implemented for every unit type in both precisions (`f32` and `f64`, [`Layer::Scalar`]):
/// data are loaded in `f64` and checked there ([`CliLayer::check_values`]); everything on the
/// model is in its own scalar.
pub(crate) trait CliLayer: ebm_train::TrainableLayer + NewLayer + 'static {
    /// The value domain of this layer's configurations, as data must be given.
    fn data_domain(&self) -> Domain;

    /// Checks beyond the domain (e.g. non-negative values for ReLU units).
    fn check_values(&self, _data: &DMatrix<f64>) -> std::result::Result<(), String> {
        Ok(())
    }

    /// \\(\log Z_\beta\\) of `rbm` by enumerating this (visible) layer, for discrete layers.
    fn log_partition_as_visible<H: Layer<Scalar = Self::Scalar>>(
        rbm: &Rbm<Self, H>,
        beta: f64,
        par: Par,
    ) -> Option<ebm_core::Result<f64>>;

    /// The independent-site layer whose unit means are `means` (the data means), where the
    /// layer type has such a constructor.
    fn from_means(means: &[f64]) -> Option<Self>;

    /// Replaces every chain by an exact draw of `rbm` at `beta`, enumerating this (visible)
    /// layer ([`exact::Enumerated`]), for discrete layers.
    fn sample_exact_as_visible<H: Layer<Scalar = Self::Scalar>>(
        rbm: &Rbm<Self, H>,
        chains: &mut RbmChains<Self::Scalar>,
        beta: f64,
        rngs: &mut [ChainRng],
        par: Par,
    ) -> Option<ebm_core::Result<()>>;

    /// Runs `task` on `rbm`, whose hidden layer is this one, when its units have latent-space
    /// moves ([`LatentUnits`]: bernoulli, spin, gaussian and relu units); `None` for the others.
    /// Static dispatch: those layers override it, so no caller downcasts.
    fn on_latent_hidden<V: CliLayer<Scalar = Self::Scalar>, T: LatentTask<V>>(
        rbm: &Rbm<V, Self>,
        task: T,
    ) -> Option<T::Output> {
        let _ = (rbm, task);
        None
    }

    /// The mean pseudo-log-likelihood of `data` under `rbm`, for discrete (visible) layers:
    /// exact without `rngs`, the one-coordinate estimate with one RNG stream per sample
    /// ([`ebm_estimators::pseudo_log_likelihood`] and
    /// [`ebm_estimators::pseudo_log_likelihood_estimate`]).
    fn pseudo_log_likelihood_as_visible<H: Layer<Scalar = Self::Scalar>>(
        rbm: &Rbm<Self, H>,
        data: &DMatrix<Self::Scalar>,
        rngs: Option<&mut [ChainRng]>,
        par: Par,
    ) -> Option<ebm_core::Result<PseudoLogLikelihood>>;
}

/// Work on an RBM whose hidden units have latent-space moves, for
/// [`CliLayer::on_latent_hidden`].
pub(crate) trait LatentTask<V: CliLayer> {
    /// What the task returns.
    type Output;
    /// Runs the task on `rbm`.
    fn run<H: CliLayer<Scalar = V::Scalar> + LatentUnits>(self, rbm: &Rbm<V, H>) -> Self::Output;
}

/// The override of [`CliLayer::on_latent_hidden`] for a layer with latent-space moves.
macro_rules! latent_hidden {
    ($latent:ident) => {
        fn on_latent_hidden<V: CliLayer<Scalar = Self::Scalar>, T: LatentTask<V>>(
            rbm: &Rbm<V, Self>,
            task: T,
        ) -> Option<T::Output> {
            Some(task.run(rbm))
        }
    };
}

macro_rules! discrete_layer {
    ($ty:ident, $domain:expr, $from_means:expr $(, $latent:ident)?) => {
        impl<F: Scalar> CliLayer for $ty<F> {
            $(latent_hidden!($latent);)?

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
        impl<F: Scalar> CliLayer for $ty<F> {
            $(latent_hidden!($latent);)?

            fn data_domain(&self) -> Domain {
                Domain::Real
            }

            fn check_values(&self, data: &DMatrix<f64>) -> std::result::Result<(), String> {
                #[allow(clippy::redundant_closure_call)]
                ($check)(data)
            }

            fn log_partition_as_visible<H: Layer<Scalar = Self::Scalar>>(
                _rbm: &Rbm<Self, H>,
                _beta: f64,
                _par: Par,
            ) -> Option<ebm_core::Result<f64>> {
                None
            }

            fn from_means(_means: &[f64]) -> Option<Self> {
                None
            }

            fn sample_exact_as_visible<H: Layer<Scalar = Self::Scalar>>(
                _rbm: &Rbm<Self, H>,
                _chains: &mut RbmChains<Self::Scalar>,
                _beta: f64,
                _rngs: &mut [ChainRng],
                _par: Par,
            ) -> Option<ebm_core::Result<()>> {
                None
            }

            fn pseudo_log_likelihood_as_visible<H: Layer<Scalar = Self::Scalar>>(
                _rbm: &Rbm<Self, H>,
                _data: &DMatrix<Self::Scalar>,
                _rngs: Option<&mut [ChainRng]>,
                _par: Par,
            ) -> Option<ebm_core::Result<PseudoLogLikelihood>> {
                None
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
pub(crate) trait NewLayer: Sized {
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

impl<F: Scalar> NewLayer for Bernoulli<F> {
    fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String> {
        no_states("bernoulli", q).map(|()| Bernoulli::zeros(n))
    }
}

impl<F: Scalar> NewLayer for Spin<F> {
    fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String> {
        no_states("spin", q).map(|()| Spin::zeros(n))
    }
}

impl<F: Scalar> NewLayer for Potts<F> {
    fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String> {
        match q {
            Some(q) if q >= 2 => Ok(Potts::zeros(n, q)),
            Some(q) => Err(format!("potts units need at least 2 states, got {q}")),
            None => Err("potts units need their number of states".into()),
        }
    }
}

impl<F: Scalar> NewLayer for Gaussian<F> {
    fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String> {
        no_states("gaussian", q).map(|()| Gaussian::standard(n))
    }
}

impl<F: Scalar> NewLayer for ReLU<F> {
    fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String> {
        no_states("relu", q).map(|()| ReLU::standard(n))
    }
}

impl<F: Scalar> NewLayer for DReLU<F> {
    fn with_units(n: usize, q: Option<usize>) -> std::result::Result<Self, String> {
        no_states("drelu", q).map(|()| DReLU::standard(n))
    }
}

/// The floating-point precision a command runs a model in (`--precision`).
#[derive(
    clap::ValueEnum,
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Precision {
    /// Single precision: parameters, chains, gradients and optimiser state in `f32`.
    F32,
    /// Double precision (the default).
    #[default]
    F64,
}

impl Precision {
    /// The name of the scalar type, as in model file headers (`"f32"` or `"f64"`).
    pub(crate) fn name(self) -> &'static str {
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

/// A computation generic over the unit types, which are known only at run time, in the
/// scalar `F` (`f64` unless the command chooses, see [`with_kinds_in`]).
pub(crate) trait KindsTask<F: Scalar = f64> {
    /// What the task returns.
    type Output;
    /// Runs the task with the layer types `V` and `H`.
    fn run<V: CliLayer<Scalar = F>, H: CliLayer<Scalar = F>>(self) -> Result<Self::Output>;
}

/// A computation on an RBM whose unit types are known only at run time, in the scalar `F`.
pub(crate) trait RbmTask<F: Scalar = f64> {
    /// What the task returns.
    type Output;
    /// Runs the task on the loaded model.
    fn run<V: CliLayer<Scalar = F>, H: CliLayer<Scalar = F>>(
        self,
        rbm: Rbm<V, H>,
        file: &Path,
    ) -> Result<Self::Output>;
}

/// The unit kinds this program handles.
pub(crate) const KINDS: [&str; 6] = ["bernoulli", "spin", "potts", "gaussian", "relu", "drelu"];

/// Runs `task` with the layer types named `visible` and `hidden` (as written in the header of
/// `file`), every combination of the six unit types, in the scalar `F`.
pub(crate) fn with_kinds<F: Scalar, T: KindsTask<F>>(
    visible: &str,
    hidden: &str,
    file: &Path,
    task: T,
) -> Result<T::Output> {
    match visible {
        "bernoulli" => with_hidden::<Bernoulli<F>, _>(hidden, file, task),
        "spin" => with_hidden::<Spin<F>, _>(hidden, file, task),
        "potts" => with_hidden::<Potts<F>, _>(hidden, file, task),
        "gaussian" => with_hidden::<Gaussian<F>, _>(hidden, file, task),
        "relu" => with_hidden::<ReLU<F>, _>(hidden, file, task),
        "drelu" => with_hidden::<DReLU<F>, _>(hidden, file, task),
        _ => Err(unknown_kind(visible, file)),
    }
}

/// [`with_kinds`] once the visible layer type `V` is known.
fn with_hidden<V: CliLayer, T: KindsTask<V::Scalar>>(
    hidden: &str,
    file: &Path,
    task: T,
) -> Result<T::Output> {
    match hidden {
        "bernoulli" => task.run::<V, Bernoulli<V::Scalar>>(),
        "spin" => task.run::<V, Spin<V::Scalar>>(),
        "potts" => task.run::<V, Potts<V::Scalar>>(),
        "gaussian" => task.run::<V, Gaussian<V::Scalar>>(),
        "relu" => task.run::<V, ReLU<V::Scalar>>(),
        "drelu" => task.run::<V, DReLU<V::Scalar>>(),
        _ => Err(unknown_kind(hidden, file)),
    }
}

fn unknown_kind(kind: &str, file: &Path) -> CliError {
    CliError::new(format!(
        "{}: unit kind \"{kind}\" is not supported by this program (supported: {})",
        file.display(),
        KINDS.join(", ")
    ))
}

/// The unit kinds `--precision f32` runs: the binary ones, the papers' models. The others
/// (Potts, Gaussian, ReLU, dReLU) run in `f64` only: every pair of kinds a command runs is
/// compiled once per precision, and the second copy of all 36 pairs made the program's release
/// build several minutes longer.
pub(crate) const F32_KINDS: [&str; 2] = ["bernoulli", "spin"];

/// [`with_kinds`] in the chosen `precision`: `task` is instantiated in `f64` for every pair of
/// kinds and in `f32` for the pairs of [`F32_KINDS`] (only the commands with `--precision`
/// pay for the second copy); another pair in `f32` is an error naming it.
pub(crate) fn with_kinds_in<T, O>(
    precision: Precision,
    visible: &str,
    hidden: &str,
    file: &Path,
    task: T,
) -> Result<O>
where
    T: KindsTask<f32, Output = O> + KindsTask<f64, Output = O>,
{
    fn binary_hidden<V: CliLayer<Scalar = f32>, T: KindsTask<f32>>(
        hidden: &str,
        task: T,
    ) -> Result<T::Output> {
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
        Precision::F32 => bail!(
            "{}: --precision f32 runs {} units only, this model is {visible}-{hidden}: use \
             --precision f64",
            file.display(),
            F32_KINDS.join(" and ")
        ),
    }
}

/// Loads the RBM in `path` with the unit types its header names (parameters in `F`: an
/// `f32` file is widened exactly to `f64`, an `f64` file rounded to `f32`) and runs `task` on
/// it.
pub(crate) fn with_model<F: Scalar, T: RbmTask<F>>(path: &Path, task: T) -> Result<T::Output> {
    struct Load<'a, T> {
        path: &'a Path,
        task: T,
    }
    impl<F: Scalar, T: RbmTask<F>> KindsTask<F> for Load<'_, T> {
        type Output = T::Output;
        fn run<V: CliLayer<Scalar = F>, H: CliLayer<Scalar = F>>(self) -> Result<T::Output> {
            let rbm = ebm_io::load_rbm::<V, H>(self.path)?;
            self.task.run(rbm, self.path)
        }
    }
    let info = ebm_io::read_rbm_info(path)?;
    with_kinds(&info.visible, &info.hidden, path, Load { path, task })
}

/// Work on a model in `f64` only: a feature whose library code is `f64`-only, reached from a
/// command generic over the scalar ([`in_f64`]).
pub(crate) trait F64Task {
    /// What the task returns.
    type Output;
    /// Runs the task on `rbm`.
    fn run<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
        self,
        rbm: &Rbm<V, H>,
    ) -> Result<Self::Output>;
}

/// Runs `task` on `rbm` if its scalar is `f64`; `None` (nothing run) for an `f32` model.
pub(crate) fn in_f64<V, H, T>(rbm: &Rbm<V, H>, task: T) -> Result<Option<T::Output>>
where
    V: CliLayer,
    H: CliLayer<Scalar = V::Scalar>,
    T: F64Task,
{
    struct Go<'a, T> {
        rbm: &'a dyn std::any::Any,
        task: T,
    }
    impl<T: F64Task> KindsTask<f64> for Go<'_, T> {
        type Output = Option<T::Output>;
        fn run<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
            self,
        ) -> Result<Option<T::Output>> {
            let rbm = self.rbm.downcast_ref::<Rbm<V, H>>();
            rbm.map(|r| self.task.run(r)).transpose()
        }
    }
    if V::Scalar::NAME != f64::NAME {
        return Ok(None);
    }
    with_kinds::<f64, _>(V::KIND, H::KIND, Path::new(V::KIND), Go { rbm, task })
}

/// A one-line description of a model: `bernoulli-spin RBM, 10 x 6 units`.
pub(crate) fn describe<V: Layer, H: Layer<Scalar = V::Scalar>>(rbm: &Rbm<V, H>) -> String {
    format!(
        "{}-{} RBM, {} x {} units",
        V::KIND,
        H::KIND,
        rbm.visible().n_units(),
        rbm.hidden().n_units()
    )
}

/// The kinds and sizes of a model, for run records.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub(crate) struct ModelSummary {
    /// Visible unit kind.
    pub visible: String,
    /// Hidden unit kind.
    pub hidden: String,
    /// Number of visible units.
    pub visible_units: usize,
    /// Number of hidden units.
    pub hidden_units: usize,
}

impl ModelSummary {
    pub fn of<V: Layer, H: Layer<Scalar = V::Scalar>>(rbm: &Rbm<V, H>) -> Self {
        Self {
            visible: V::KIND.into(),
            hidden: H::KIND.into(),
            visible_units: rbm.visible().n_units(),
            hidden_units: rbm.hidden().n_units(),
        }
    }
}

/// Checks that a dataset can be the visible configurations of `layer`: as many features as the
/// layer has values per chain, and every value in the layer's domain. Loaded real numbers are
/// re-labelled with the layer's domain after the check; data already in another discrete domain
/// is converted when the conversion is defined (e.g. one-hot with the same `q`).
pub(crate) fn visible_data<V: CliLayer>(layer: &V, ds: Dataset, file: &Path) -> Result<Dataset> {
    if ds.n_features() != layer.width() {
        bail!(
            "{}: {} features per sample, but the model's {} visible layer has {} values per \
             configuration",
            file.display(),
            ds.n_features(),
            V::KIND,
            layer.width()
        );
    }
    let want = layer.data_domain();
    let ds = if ds.domain() == want {
        ds
    } else if ds.domain() == Domain::Real {
        ds.reinterpret(want).map_err(|e| {
            CliError::new(format!(
                "{}: the data do not fit the model's {} visible units ({}): {e}",
                file.display(),
                V::KIND,
                domain_name(want)
            ))
        })?
    } else {
        ds.to_domain(want).map_err(|e| {
            CliError::new(format!(
                "{}: {} data cannot be given to {} visible units: {e}",
                file.display(),
                domain_name(ds.domain()),
                V::KIND
            ))
        })?
    };
    layer
        .check_values(ds.data())
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    Ok(ds)
}

/// A short name of a domain for messages and records.
pub(crate) fn domain_name(d: Domain) -> String {
    match d {
        Domain::Binary01 => "values in {0,1}".into(),
        Domain::Spin => "values in {-1,+1}".into(),
        Domain::Categorical { q } => format!("categories 0..{}", q.saturating_sub(1)),
        Domain::OneHot { q } => format!("one-hot blocks of {q} states"),
        Domain::Real => "real values".into(),
    }
}

/// Which layer exact \\(\log Z\\) enumerates, and how many configurations it has.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub(crate) struct Enumeration {
    /// `"visible"` or `"hidden"`.
    pub layer: String,
    /// Number of configurations summed over.
    pub configurations: f64,
}

/// Exact \\(\log Z_\beta\\) of `rbm`, enumerating its smaller discrete layer (the hidden layer
/// through the transposed model, whose joint energy is the same).
pub(crate) fn exact_log_partition<V: CliLayer, H: CliLayer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    par: Par,
) -> Result<(f64, Enumeration)> {
    let nv = rbm.visible().discrete_configurations();
    let nh = rbm.hidden().discrete_configurations();
    let use_hidden = match (nv, nh) {
        (Some(a), Some(b)) => b < a,
        (None, Some(_)) => true,
        (Some(_), None) => false,
        (None, None) => bail!(
            "exact log Z needs a discrete layer to enumerate, but both layers of this {}-{} \
             RBM are real-valued",
            V::KIND,
            H::KIND
        ),
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
pub(crate) fn exact_start<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    n_chains: usize,
    seed: u64,
    par: Par,
) -> Result<Start<RbmChains<f64>>> {
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

/// `n_chains` exact draws of `rbm` at \\(\beta = 0\\), the uniform law of a model whose layers
/// are discrete, with \\(\log Z_0\\) the logarithm of the number of configurations: rung 0 of a
/// temperature path. One Gibbs sweep at \\(\beta = 0\\) is an exact draw there, since neither
/// conditional depends on the other layer (as `ebm_estimators::Start::uniform`, whose bounds
/// the run-time unit kinds cannot name).
pub(crate) fn uniform_start<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    n_chains: usize,
    seed: u64,
    par: Par,
) -> Result<Start<RbmChains<f64>>> {
    if V::REAL_VALUED || H::REAL_VALUED {
        bail!(
            "a temperature path starts at beta = 0, where the {} units of this {}-{} RBM have no \
             probability law; use the reference path (--path reference)",
            if V::REAL_VALUED { V::KIND } else { H::KIND },
            V::KIND,
            H::KIND
        );
    }
    let mut population = Population::new(rbm.new_state(n_chains), seed)?;
    use ebm_core::ConditionalSampler;
    rbm.sample_hidden(
        &mut population.chains,
        0.0,
        population.rngs.as_mut_slice(),
        par,
    );
    rbm.sample_visible(
        &mut population.chains,
        0.0,
        population.rngs.as_mut_slice(),
        par,
    );
    let log_z0 = rbm.visible().cgf(&vec![0.0; rbm.visible().width()], 0.0)
        + rbm.hidden().cgf(&vec![0.0; rbm.hidden().width()], 0.0);
    Ok(Start {
        population,
        log_z: LogZEstimate::exact(log_z0, Method::IndependentSites),
    })
}

/// The visible free energies \\(F_\beta(v_j)\\) of every column of `data`.
pub(crate) fn free_energies<V: CliLayer, H: CliLayer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
    beta: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; data.ncols()];
    rbm.free_energy_visible(data, beta, &mut out, Par::Rayon);
    out
}

/// Weighted mean and its standard error, with Kish's effective sample size
/// \\(n_{\text{eff}} = (\sum w)^2 / \sum w^2\\):
/// \\(\mathrm{se} = \sqrt{\widehat{\mathrm{Var}}_w / (n_{\text{eff}} - 1)}\\) with the weighted
/// (biased) variance \\(\widehat{\mathrm{Var}}_w\\), which is the usual \\(s/\sqrt n\\) for unit
/// weights.
pub(crate) fn weighted_mean_and_error(x: &[f64], w: &[f64]) -> (f64, f64) {
    let sw: f64 = w.iter().sum();
    let sw2: f64 = w.iter().map(|v| v * v).sum();
    if sw <= 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = x.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / sw;
    let var = x
        .iter()
        .zip(w)
        .map(|(a, b)| b * (a - mean).powi(2))
        .sum::<f64>()
        / sw;
    let n_eff = sw * sw / sw2;
    let se = if n_eff > 1.0 {
        (var / (n_eff - 1.0)).sqrt()
    } else {
        f64::NAN
    };
    (mean, se)
}

/// Checks, before allocating, that `chains` chains of `rbm`'s units, `copies` of each (one per
/// rung of a ladder), each with a copy for updates, plus `extra` bytes, fit in the memory
/// available: sizes from the command line (`--chains 1e12`, `--rungs 1e9`) are a typed error,
/// not an aborted allocation.
///
/// # Errors
/// The [`ebm_core::Error::InsufficientMemory`] of [`ebm_core::Error::check_memory`].
pub(crate) fn check_chain_memory<V: Layer, H: Layer<Scalar = V::Scalar>>(
    what: &str,
    rbm: &Rbm<V, H>,
    chains: usize,
    copies: usize,
    extra: u128,
) -> Result<()> {
    let width = rbm.visible().width() as u128 + rbm.hidden().width() as u128;
    let bytes = [chains as u128, copies as u128, width, 16]
        .into_iter()
        .fold(1u128, u128::saturating_mul)
        .saturating_add(extra);
    Ok(ebm_core::Error::check_memory(what, bytes)?)
}

/// An all-zero weight matrix of the model's shape, for independent-site references.
pub(crate) fn zero_weights<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
) -> DMatrix<V::Scalar> {
    let (r, c) = rbm.weights().shape();
    DMatrix::from_element(r, c, V::Scalar::from_f64(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_log_z_enumerates_the_smaller_layer_and_agrees_both_ways() {
        let rbm = Rbm::new(
            Bernoulli::new(vec![0.1, -0.2, 0.3, 0.0]),
            Spin::new(vec![0.5, -0.5]),
            DMatrix::from_row_slice(4, 2, &[1.0, -1.0, 0.5, 0.25, -0.3, 0.8, 0.2, 0.1]),
        )
        .unwrap();
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

    #[test]
    fn weighted_error_matches_the_unweighted_formula() {
        let x = [1.0, 2.0, 4.0, 7.0];
        let (m, se) = weighted_mean_and_error(&x, &[1.0; 4]);
        assert_eq!(m, 3.5);
        let var = x.iter().map(|v| (v - 3.5f64).powi(2)).sum::<f64>() / 3.0;
        assert!((se - (var / 4.0).sqrt()).abs() < 1e-12);
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

//! Tethered Monte Carlo on the command line ("Learning a Restricted Boltzmann Machine using
//! biased Monte Carlo sampling", Béreux, Decelle, Furtlehner, Seoane 2023), shared by
//! `ebm tmc profile` (the command itself is in `commands/tmc.rs`), `ebm sample --sampler tmc`
//! and the negative phase of `ebm train --negative tmc`: the options and their checks, the
//! direction, grid and settings resolved against a model ([`Plan`]), the record's
//! [`TmcSummary`], the sampler's run and the negative phase. Each command resolves the
//! options, calls one library function ([`ebm_samplers::tethered::profile::measure`],
//! [`ebm_samplers::tethered::profile::sample`], or the trainer with [`ebm_train::Tmc`]) and
//! reports.

use ebm_core::Par;
use ebm_data::{Centering, Dataset};
use ebm_models::{DiscreteLayer, Layer, Rbm};
use ebm_samplers::tethered::OrderParameter;
use ebm_samplers::tethered::profile::{
    self, Barrier, Measured, ModeWeights, ProfileSettings, SamplingSettings, uniform_grid,
};
use ebm_train::{DiscreteTask, Tmc, TmcDirection, TrainableLayer};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::cli::{DirectionArg, SampleArgs, SamplerArg, TmcOptions, TrainSettings, UnitArg};
use crate::error::{CliError, Result, bail};
use crate::models::{F64Task, UnitLayer, check_chain_memory};
use crate::record::Context;

/// The paper's tether strength.
const DEFAULT_ALPHA: f64 = 2e4;
/// Default margin around the data's projections (the paper: 0.1 to 0.2).
const DEFAULT_BORDER: f64 = 0.1;
/// Without data, the grid extends this many tether widths \\(1/\sqrt\alpha\\) beyond the
/// range \\(m\\) can take (\\(p\\) is then below \\(e^{-12.5}\\) of its value at the end).
const TETHER_WIDTHS: f64 = 5.0;
/// Bounds of the default number of grid points.
const MIN_POINTS: usize = 51;
const MAX_POINTS: usize = 1001;

// ---------------------------------------------------------------------------------------------
// Discrete visible units
// ---------------------------------------------------------------------------------------------

pub(crate) fn not_discrete(what: &str) -> String {
    format!(
        "{what} needs discrete visible units (bernoulli, spin or potts): tethered Monte Carlo \
         moves one visible unit at a time"
    )
}

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

/// The TMC options given on the command line, as `--name`.
fn given(o: &TmcOptions) -> Vec<String> {
    let value = serde_json::to_value(o).unwrap_or_default();
    value.as_object().map_or_else(Vec::new, |map| {
        map.iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, _)| format!("--{}", k.replace('_', "-")))
            .collect()
    })
}

/// Rejects the options in `names` if given, as not applying to `what`.
pub(crate) fn reject(o: &TmcOptions, names: &[&str], what: &str, why: &str) -> Result<()> {
    match given(o).into_iter().find(|g| names.contains(&g.as_str())) {
        Some(g) => bail!("{g} does not apply to {what}{why}"),
        None => Ok(()),
    }
}

/// Checks the options of `ebm sample` that concern TMC: none for other samplers; for tmc, no
/// ladder, temperature, initialisation or tracing option, and `--data` only where it is used.
pub(crate) fn check_sample_options(args: &SampleArgs, sampler: &str) -> Result<()> {
    if args.sampler != SamplerArg::Tmc {
        if let Some(g) = given(&args.tmc).first() {
            bail!("{g} does not apply to --sampler {sampler} (it sets --sampler tmc)");
        }
        return Ok(());
    }
    for (set, name) in [
        (args.rungs.is_some(), "--rungs"),
        (args.beta_min.is_some(), "--beta-min"),
        (args.betas.is_some(), "--betas"),
        (args.schedule.is_some(), "--schedule"),
        (args.beta.is_some(), "--beta"),
        (args.init != crate::cli::InitArg::Default, "--init"),
        (args.trace_every.is_some(), "--trace-every"),
        (args.mode_threshold.is_some(), "--mode-threshold"),
    ] {
        if set {
            bail!(
                "{name} does not apply to --sampler tmc (its chains start from random visible \
                 units at beta = 1; it reports the mode weights of p(m_hat) and of its samples)"
            );
        }
    }
    reject_dimensions(&args.tmc, "ebm sample --sampler tmc")?;
    check_data_use(&args.tmc, args.data.is_some())
}

/// `--dimensions` is for `ebm train --negative tmc` only: profiles and sampling on the
/// command line tether one order parameter.
pub(crate) fn reject_dimensions(o: &TmcOptions, what: &str) -> Result<()> {
    reject(
        o,
        &["--dimensions"],
        what,
        " (it tethers one order parameter; two are for ebm train --negative tmc)",
    )
}

/// `--data` must be used (by `--direction pca` or the grid), `--border` needs the data's grid.
pub(crate) fn check_data_use(o: &TmcOptions, data: bool) -> Result<()> {
    let pca = o.direction == Some(DirectionArg::Pca);
    if pca && !data {
        bail!("--direction pca needs --data FILE (the direction is its first principal component)");
    }
    if o.border.is_some() && (o.grid_range.is_some() || !data) {
        bail!(
            "--border widens the range of the data's projections: it needs --data and no --grid-range"
        );
    }
    if data && !pca && o.grid_range.is_some() {
        bail!("--data is used only by --direction pca or for the grid range; --grid-range is set");
    }
    Ok(())
}

/// The direction, grid and profile settings resolved against a model.
pub(crate) struct Plan {
    pub order: OrderParameter,
    pub grid: Vec<f64>,
    pub settings: ProfileSettings,
    pub summary: TmcSummary,
}

fn direction<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    arg: DirectionArg,
    data: Option<&Dataset>,
) -> Result<OrderParameter> {
    let n = rbm.visible().n_units();
    Ok(match arg {
        DirectionArg::Weights => OrderParameter::from_weights(rbm, 1)
            .map_err(|e| CliError::new(format!("--direction weights: {e}")))?,
        DirectionArg::Pca => {
            let ds = data.expect("checked: --direction pca has --data");
            let pca = ebm_data::pca(ds, 1, Centering::Centered)
                .map_err(|e| CliError::new(format!("--direction pca: PCA of the data: {e}")))?;
            OrderParameter::from_pca(&pca, 1, n)?
        }
        DirectionArg::Uniform => {
            if rbm.visible().width() != n {
                bail!(
                    "--direction uniform: the visible units are one-hot ({} values for {n} \
                     units), on which a uniform projection is constant; use weights or pca",
                    rbm.visible().width()
                );
            }
            OrderParameter::uniform(n)?
        }
    })
}

pub(crate) fn plan<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    o: &TmcOptions,
    data: Option<&Dataset>,
) -> Result<Plan> {
    let dir = o.direction.unwrap_or(DirectionArg::Weights);
    let order = direction(rbm, dir, data)?;
    let alpha = o.alpha.unwrap_or(DEFAULT_ALPHA);
    if alpha <= 0.0 {
        bail!("--alpha {alpha}: the tether strength must be > 0");
    }
    let (lo, hi) = match (&o.grid_range, data) {
        (Some(r), _) if r.len() != 2 => {
            bail!("--grid-range: two values LO,HI expected, got {}", r.len())
        }
        (Some(r), _) => (r[0], r[1]),
        (None, Some(ds)) => {
            let border = o.border.unwrap_or(DEFAULT_BORDER);
            if border < 0.0 {
                bail!("--border {border}: must be >= 0");
            }
            if ds.n_samples() == 0 {
                bail!("--data: the data file has no samples");
            }
            let mut m = [0.0];
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for j in 0..ds.n_samples() {
                order.project(ds.sample(j), &mut m);
                lo = lo.min(m[0]);
                hi = hi.max(m[0]);
            }
            (lo - border, hi + border)
        }
        (None, None) => {
            let (lo, hi) = order.range(rbm.visible())?[0];
            let pad = TETHER_WIDTHS / alpha.sqrt();
            (lo - pad, hi + pad)
        }
    };
    if lo >= hi {
        bail!("--grid-range {lo},{hi}: LO < HI expected");
    }
    let points = o.grid_points.unwrap_or_else(|| {
        (((hi - lo) * alpha.sqrt()).ceil() as usize + 1).clamp(MIN_POINTS, MAX_POINTS)
    });
    let replicas = o.replicas.unwrap_or(8);
    check_chain_memory(
        "tethered chains (--grid-points x --replicas)",
        rbm,
        points.saturating_mul(replicas),
        1,
        8 * points as u128,
    )?;
    let grid = uniform_grid(lo, hi, points)
        .map_err(|e| CliError::new(format!("--grid-points {points}: {e}")))?;
    let settings = ProfileSettings {
        alpha,
        replicas,
        burn_in: o.burn_in.unwrap_or(50),
        measure: o.measure.unwrap_or(150),
    };
    let summary = TmcSummary {
        direction: dir,
        alpha,
        grid_range: [lo, hi],
        grid_points: points,
        replicas: settings.replicas,
        burn_in: settings.burn_in,
        measure: settings.measure,
        profile_chain_sweeps: (points as u64)
            .saturating_mul(settings.replicas as u64)
            .saturating_mul((settings.burn_in as u64).saturating_add(settings.measure as u64)),
        barrier: None,
        left_weight_se: None,
        sweeps: None,
        gibbs_sweeps: None,
        mode_weights: None,
    };
    Ok(Plan {
        order,
        grid,
        settings,
        summary,
    })
}

/// What a TMC run reports in its record.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct TmcSummary {
    /// Where the tethered direction comes from.
    pub direction: DirectionArg,
    /// Tether strength.
    pub alpha: f64,
    /// The grid's ends.
    pub grid_range: [f64; 2],
    /// Number of grid points.
    pub grid_points: usize,
    /// Chains per grid point of the profile.
    pub replicas: usize,
    /// Sweeps discarded, then time-averaged, by the profile.
    pub burn_in: usize,
    pub measure: usize,
    /// Cost of the profile in TMC chain-sweeps.
    pub profile_chain_sweeps: u64,
    /// The deepest barrier of p(m_hat) (null if unimodal on the grid).
    pub barrier: Option<Barrier>,
    /// Error of the barrier's left weight: jackknife over replicas plus discretisation (null
    /// without a barrier or error bars).
    pub left_weight_se: Option<f64>,
    /// Sampling: TMC sweeps at each drawn target, then unconstrained Gibbs sweeps.
    pub sweeps: Option<usize>,
    pub gibbs_sweeps: Option<usize>,
    /// Sampling: the mode weights from p(m_hat) and from the samples.
    pub mode_weights: Option<ModeWeights>,
}

impl TmcSummary {
    pub(crate) fn with_measured(mut self, m: &Measured) -> Self {
        self.barrier = m.barrier;
        self.left_weight_se = Some(m.left_weight_se).filter(|x| x.is_finite());
        self
    }
}

// ---------------------------------------------------------------------------------------------
// ebm sample --sampler tmc
// ---------------------------------------------------------------------------------------------

/// What a TMC run hands back to `ebm sample`.
pub(crate) struct TmcRun {
    /// The samples, one column per chain.
    pub samples: DMatrix<f64>,
    /// Legend text.
    pub description: String,
    /// TMC plus Gibbs sweeps per sample.
    pub sweeps_per_step: u64,
    /// The record's `tmc` entry.
    pub summary: TmcSummary,
    /// Why the result may not be trusted.
    pub warnings: Vec<String>,
}

struct SampleTask<'a> {
    args: &'a SampleArgs,
    data: Option<&'a Dataset>,
}

impl<H: TrainableLayer<Scalar = f64>> DiscreteTask<H> for SampleTask<'_> {
    type Output = Result<TmcRun>;

    fn run<V: DiscreteLayer<Scalar = H::Scalar> + TrainableLayer>(
        self,
        rbm: &Rbm<V, H>,
    ) -> Result<TmcRun> {
        let args = self.args;
        let plan = plan(rbm, &args.tmc, self.data)?;
        let sweeps = args.steps as usize * args.sweeps;
        let gibbs_sweeps = args.tmc.gibbs_sweeps.unwrap_or(0);
        let settings = SamplingSettings {
            profile: plan.settings,
            sweeps,
            gibbs_sweeps,
        };
        let out = profile::sample(
            rbm,
            &plan.order,
            &plan.grid,
            &settings,
            args.chains,
            args.seed,
            Par::Rayon,
        )?;
        let summary = TmcSummary {
            sweeps: Some(sweeps),
            gibbs_sweeps: Some(gibbs_sweeps),
            mode_weights: out.modes,
            ..plan.summary.with_measured(&out.measured)
        };
        let s = &summary;
        Ok(TmcRun {
            samples: out.generated.state.chains.visible,
            description: format!(
                "TMC (alpha {}, {} grid points x {} replicas, {sweeps} TMC + {gibbs_sweeps} Gibbs \
                 sweeps per sample)",
                s.alpha, s.grid_points, s.replicas
            ),
            sweeps_per_step: ((sweeps + gibbs_sweeps) as u64).div_ceil(args.steps),
            summary,
            warnings: out.warnings.iter().map(ToString::to_string).collect(),
        })
    }
}

/// `ebm sample --sampler tmc` (in `f64`) on a model (the options were checked by
/// [`check_sample_options`]): TMC sampling by [`profile::sample`].
pub(crate) struct SampleTmc<'a> {
    /// The command line.
    pub args: &'a SampleArgs,
    /// `--data`, in the visible units' domain.
    pub data: Option<&'a Dataset>,
}

impl F64Task for SampleTmc<'_> {
    type Output = TmcRun;
    type Error = CliError;
    fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
        self,
        rbm: &Rbm<V, H>,
    ) -> Result<TmcRun> {
        let SampleTmc { args, data } = self;
        V::on_discrete(rbm, SampleTask { args, data })
            .unwrap_or_else(|| Err(CliError::new(not_discrete("--sampler tmc"))))
    }
}

/// The lines `ebm sample` prints about a TMC run.
pub(crate) fn report(ctx: &Context, s: &TmcSummary) {
    let Some(m) = &s.mode_weights else {
        ctx.say("p(m_hat) has no interior dip on the grid: one mode, no mode weights");
        return;
    };
    ctx.say(format!(
        "barrier at m_hat = {:.4} between modes at {:.4} and {:.4}: {:.2} nats from the left, \
         {:.2} from the right",
        m.barrier.saddle,
        m.barrier.left_mode,
        m.barrier.right_mode,
        m.barrier.from_left,
        m.barrier.from_right
    ));
    ctx.say(format!(
        "mode weights (left, right): p(m_hat) {:.4}, {:.4} +- {:.4}; samples {:.4}, {:.4} +- {:.4}",
        m.profile_left,
        1.0 - m.profile_left,
        m.profile_left_se,
        m.samples_left,
        1.0 - m.samples_left,
        m.samples_left_se
    ));
}

// ---------------------------------------------------------------------------------------------
// ebm train --negative tmc
// ---------------------------------------------------------------------------------------------

/// Checks the TMC options of `ebm train` and builds the negative phase when `--negative tmc`
/// (`None` for other phases, which may not be given TMC options). The grid spans each
/// minibatch's projections widened by `--border`; `--direction pca` fixes the data's first
/// principal component, `weights` (the default) recomputes the leading singular vector of
/// \\(W\\) at every update.
pub(crate) fn negative(
    s: &TrainSettings,
    negative: &str,
    visible: UnitArg,
    sweeps: usize,
    data: &Dataset,
) -> Result<Option<Tmc>> {
    if negative != "tmc" {
        if let Some(g) = given(&s.tmc).first() {
            bail!("{g} does not apply to --negative {negative} (it sets --negative tmc)");
        }
        return Ok(None);
    }
    let o = &s.tmc;
    reject(
        o,
        &["--grid-range", "--burn-in", "--gibbs-sweeps"],
        "--negative tmc",
        " (the grid spans each minibatch's projections +- --border; the first --sweeps minus \
         --measure sweeps are the burn-in)",
    )?;
    if s.chains.is_some() {
        bail!(
            "--chains does not apply to --negative tmc (its chains are --grid-points x --replicas)"
        );
    }
    if !matches!(visible, UnitArg::Bernoulli | UnitArg::Spin | UnitArg::Potts) {
        bail!("{}, not {}", not_discrete("--negative tmc"), visible.kind());
    }
    let dimensions = o.dimensions.unwrap_or(1);
    if dimensions > 2 {
        bail!(
            "--dimensions {dimensions}: 1 or 2 tethered order parameters (the grid has \
             --grid-points^dimensions points)"
        );
    }
    let direction = match o.direction.unwrap_or(DirectionArg::Weights) {
        DirectionArg::Weights => TmcDirection::Weights,
        d if visible == UnitArg::Potts => bail!(
            "--direction {}: with potts visible units use --direction weights",
            d.name()
        ),
        DirectionArg::Pca => {
            let pca = ebm_data::pca(data, dimensions, Centering::Centered)
                .map_err(|e| CliError::new(format!("--direction pca: PCA of the data: {e}")))?;
            TmcDirection::Fixed(OrderParameter::from_pca(
                &pca,
                dimensions,
                data.n_features(),
            )?)
        }
        DirectionArg::Uniform if dimensions > 1 => bail!(
            "--direction uniform is one direction; --dimensions {dimensions} needs weights or pca"
        ),
        DirectionArg::Uniform => TmcDirection::Fixed(OrderParameter::uniform(data.n_features())?),
    };
    let measure = o.measure.unwrap_or(5.min(sweeps));
    if measure > sweeps {
        bail!("--measure {measure}: at most --sweeps ({sweeps}) sweeps can be averaged");
    }
    let tmc = Tmc {
        alpha: o.alpha.unwrap_or(DEFAULT_ALPHA),
        points: o.grid_points.unwrap_or(50),
        replicas: o.replicas.unwrap_or(4),
        sweeps,
        measure,
        border: o.border.unwrap_or(DEFAULT_BORDER),
        direction,
        dimensions,
    };
    if tmc.alpha <= 0.0 || tmc.border <= 0.0 || tmc.points < 2 {
        bail!(
            "--negative tmc: --alpha {} and --border {} must be > 0, --grid-points {} at least 2",
            tmc.alpha,
            tmc.border,
            tmc.points
        );
    }
    Ok(Some(tmc))
}

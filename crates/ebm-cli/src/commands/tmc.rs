//! Tethered Monte Carlo on the command line ("Learning a Restricted Boltzmann Machine using
//! biased Monte Carlo sampling", Béreux, Decelle, Furtlehner, Seoane 2023): `ebm tmc profile`,
//! `ebm sample --sampler tmc` and the negative phase of `ebm train --negative tmc`. Each
//! resolves the options, calls one library function
//! ([`ebm_samplers::tethered::profile::measure`], [`ebm_samplers::tethered::profile::sample`],
//! or the trainer with [`ebm_train::Tmc`]) and reports.

use std::path::Path;

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

use crate::cli::{
    DirectionArg, SampleArgs, SamplerArg, TmcCommand, TmcOptions, TmcProfileArgs, TrainSettings,
    UnitArg,
};
use crate::error::{CliError, Result, bail};
use crate::files::{check_outputs, load_dataset};
use crate::models::{
    CliLayer, F64Task, ModelSummary, RbmTask, check_chain_memory, describe, visible_data,
    with_model,
};
use crate::record::{Context, record_path_for};
use ebm_plot::{ImageFormat, Series, tethered_log_density};

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

fn not_discrete(what: &str) -> String {
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
fn reject(o: &TmcOptions, names: &[&str], what: &str, why: &str) -> Result<()> {
    match given(o).into_iter().find(|g| names.contains(&g.as_str())) {
        Some(g) => bail!("{g} does not apply to {what}{why}"),
        None => Ok(()),
    }
}

/// Checks the options of `ebm sample` that concern TMC: none for other samplers; for tmc, no
/// ladder, temperature, initialisation or tracing option, and `--data` only where it is used.
pub(super) fn check_sample_options(args: &SampleArgs, sampler: &str) -> Result<()> {
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
fn reject_dimensions(o: &TmcOptions, what: &str) -> Result<()> {
    reject(
        o,
        &["--dimensions"],
        what,
        " (it tethers one order parameter; two are for ebm train --negative tmc)",
    )
}

/// `--data` must be used (by `--direction pca` or the grid), `--border` needs the data's grid.
fn check_data_use(o: &TmcOptions, data: bool) -> Result<()> {
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
struct Plan {
    order: OrderParameter,
    grid: Vec<f64>,
    settings: ProfileSettings,
    summary: TmcSummary,
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

fn plan<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
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
    fn with_measured(mut self, m: &Measured) -> Self {
        self.barrier = m.barrier;
        self.left_weight_se = Some(m.left_weight_se).filter(|x| x.is_finite());
        self
    }
}

// ---------------------------------------------------------------------------------------------
// ebm sample --sampler tmc
// ---------------------------------------------------------------------------------------------

/// What a TMC run hands back to `ebm sample`.
pub(super) struct TmcRun {
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
pub(super) struct SampleTmc<'a> {
    /// The command line.
    pub args: &'a SampleArgs,
    /// `--data`, in the visible units' domain.
    pub data: Option<&'a Dataset>,
}

impl F64Task for SampleTmc<'_> {
    type Output = TmcRun;
    fn run<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
        self,
        rbm: &Rbm<V, H>,
    ) -> Result<TmcRun> {
        let SampleTmc { args, data } = self;
        V::on_discrete(rbm, SampleTask { args, data })
            .unwrap_or_else(|| Err(CliError::new(not_discrete("--sampler tmc"))))
    }
}

/// The lines `ebm sample` prints about a TMC run.
pub(super) fn report(ctx: &Context, s: &TmcSummary) {
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
pub(super) fn negative(
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

// ---------------------------------------------------------------------------------------------
// ebm tmc profile
// ---------------------------------------------------------------------------------------------

/// What `ebm tmc profile` reports in its run record.
#[derive(Serialize, Deserialize, Debug, Clone)]
struct ProfileResults {
    model: ModelSummary,
    tmc: TmcSummary,
    warnings: Vec<String>,
}

struct ProfileTask<'a> {
    args: &'a TmcProfileArgs,
    data: Option<Dataset>,
}

impl RbmTask for ProfileTask<'_> {
    type Output = (Measured, TmcSummary, String, ModelSummary);

    fn run<V: CliLayer<Scalar = f64>, H: CliLayer<Scalar = f64>>(
        self,
        rbm: Rbm<V, H>,
        file: &Path,
    ) -> Result<Self::Output> {
        let data = match (self.data, &self.args.data) {
            (Some(ds), Some(path)) => Some(visible_data(rbm.visible(), ds, path)?),
            _ => None,
        };
        struct Go<'a> {
            args: &'a TmcProfileArgs,
            data: Option<&'a Dataset>,
        }
        impl<H: TrainableLayer<Scalar = f64>> DiscreteTask<H> for Go<'_> {
            type Output = Result<(Measured, TmcSummary)>;
            fn run<V: DiscreteLayer<Scalar = H::Scalar> + TrainableLayer>(
                self,
                rbm: &Rbm<V, H>,
            ) -> Self::Output {
                let plan = plan(rbm, &self.args.tmc, self.data)?;
                let m = profile::measure(
                    rbm,
                    &plan.order,
                    &plan.grid,
                    &plan.settings,
                    self.args.seed,
                    Par::Rayon,
                )?;
                let summary = plan.summary.with_measured(&m);
                Ok((m, summary))
            }
        }
        let (m, summary) = V::on_discrete(
            &rbm,
            Go {
                args: self.args,
                data: data.as_ref(),
            },
        )
        .unwrap_or_else(|| {
            Err(CliError::new(format!(
                "{}: {}",
                file.display(),
                not_discrete("ebm tmc profile")
            )))
        })?;
        Ok((m, summary, describe(&rbm), ModelSummary::of(&rbm)))
    }
}

/// The profile table of `ebm tmc profile` (`--out`): per grid point, m_hat, the tethered
/// mean of m, its error, Omega', Omega, ln p, p, the error of ln p and R-hat.
fn profile_csv(m: &Measured) -> String {
    let rec = &m.reconstruction;
    let gradient = m.profile.gradient();
    let p = rec.density();
    let mut csv =
        String::from("m_hat,mean_m,std_error,omega_prime,omega,log_p,p,log_p_error,rhat\n");
    for j in 0..rec.grid.len() {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            rec.grid[j],
            m.profile.mean_order[j],
            m.profile.std_error[j],
            gradient[j],
            rec.omega[j],
            rec.log_density[j],
            p[j],
            m.log_p_error[j],
            m.profile.rhat[j]
        ));
    }
    csv
}

/// The barrier table of `ebm tmc profile` (`*.barrier.csv`): the header, and one row when
/// p(m_hat) has an interior dip.
fn barrier_csv(m: &Measured) -> String {
    let mut barrier_csv = String::from(
        "left_mode,saddle,right_mode,from_left,from_right,left_weight,left_weight_se\n",
    );
    if let Some(b) = &m.barrier {
        barrier_csv.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            b.left_mode,
            b.saddle,
            b.right_mode,
            b.from_left,
            b.from_right,
            b.left_weight,
            m.left_weight_se
        ));
    }
    barrier_csv
}

/// What `ebm tmc profile` says of the profile and of its barrier.
fn say_profile(ctx: &Context, description: &str, summary: &TmcSummary, m: &Measured, seed: u64) {
    ctx.say(format!(
        "TMC profile of a {description}: direction {}, alpha {}, {} grid points on [{:.4}, {:.4}] \
         x {} replicas, {} + {} sweeps, seed {}",
        summary.direction.name(),
        summary.alpha,
        summary.grid_points,
        summary.grid_range[0],
        summary.grid_range[1],
        summary.replicas,
        summary.burn_in,
        summary.measure,
        seed
    ));
    match &m.barrier {
        Some(b) => ctx.say(format!(
            "barrier at m_hat = {:.4} between modes at {:.4} and {:.4}: {:.2} nats from the \
             left, {:.2} from the right; left weight {:.4} +- {:.4}",
            b.saddle,
            b.left_mode,
            b.right_mode,
            b.from_left,
            b.from_right,
            b.left_weight,
            m.left_weight_se
        )),
        None => ctx.say("p(m_hat) has no interior dip on the grid (one mode)"),
    }
}

/// Runs `ebm tmc ...`.
pub(super) fn execute(c: &TmcCommand, ctx: &Context) -> Result<()> {
    match c {
        TmcCommand::Profile(args) => profile_command(args, ctx),
    }
}

fn profile_command(args: &TmcProfileArgs, ctx: &Context) -> Result<()> {
    reject(
        &args.tmc,
        &["--gibbs-sweeps"],
        "ebm tmc profile",
        " (it sets the sampling of ebm sample --sampler tmc)",
    )?;
    reject_dimensions(&args.tmc, "ebm tmc profile")?;
    check_data_use(&args.tmc, args.data.is_some())?;
    if args.out.extension().and_then(|e| e.to_str()) != Some("csv") {
        bail!(
            "--out {}: the profile is written as .csv",
            args.out.display()
        );
    }
    let plot = args
        .plot
        .clone()
        .unwrap_or_else(|| args.out.with_extension("svg"));
    ImageFormat::from_path(&plot).map_err(|e| CliError::new(format!("--plot: {e}")))?;
    let barrier_path = args.out.with_extension("barrier.csv");
    let record = record_path_for(&args.out);
    let mut inputs: Vec<&Path> = vec![&args.model];
    if let Some(d) = &args.data {
        inputs.push(d);
    }
    check_outputs(&[&args.out, &barrier_path, &plot, &record], &inputs)?;
    let data = args.data.as_deref().map(load_dataset).transpose()?;
    let (m, summary, description, model) = with_model(&args.model, ProfileTask { args, data })?;

    let tables = [
        (&args.out, profile_csv(&m)),
        (&barrier_path, barrier_csv(&m)),
    ];
    for (path, text) in &tables {
        ebm_io::write_atomically(path, |w| w.write_all(text.as_bytes()))?;
    }
    let title = match &m.barrier {
        Some(b) => format!(
            "TMC, alpha = {}: barrier {:.2} nats (left), left weight {:.3}",
            summary.alpha, b.from_left, b.left_weight
        ),
        None => format!("TMC, alpha = {}: no barrier on the grid", summary.alpha),
    };
    let series = [Series {
        label: "ln p(m_hat)".into(),
        points: m
            .reconstruction
            .grid
            .iter()
            .copied()
            .zip(m.reconstruction.log_density.iter().copied())
            .collect(),
    }];
    tethered_log_density(&plot, &title, &series)?;

    say_profile(ctx, &description, &summary, &m, args.seed);
    for w in &m.warnings {
        ctx.warn(w.to_string());
    }
    ctx.say(format!(
        "profile: {}; barrier: {}; plot: {}",
        args.out.display(),
        barrier_path.display(),
        plot.display()
    ));
    let results = ProfileResults {
        model,
        tmc: summary,
        warnings: m.warnings.iter().map(ToString::to_string).collect(),
    };
    ctx.finish(
        "tmc profile",
        Some(args.seed),
        args,
        &inputs,
        &[&args.out, &barrier_path, &plot],
        &results,
        Some(&record),
    )
}

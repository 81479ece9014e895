//! `ebm tmc profile`: measures \\(\ln p(\hat m)\\) of a model along one order parameter by
//! tethered Monte Carlo ([`ebm_samplers::tethered::profile::measure`]), with its barrier and
//! mode weights, and writes the profile, the barrier table, a figure and the run record. The
//! options and their resolution are shared with `ebm sample --sampler tmc` ([`crate::tmc`]).

use std::path::Path;

use ebm_core::Par;
use ebm_data::Dataset;
use ebm_models::{DiscreteLayer, Rbm};
use ebm_samplers::tethered::profile::{self, Measured};
use ebm_train::{DiscreteTask, TrainableLayer};
use serde::{Deserialize, Serialize};

use crate::cli::{TmcCommand, TmcProfileArgs};
use crate::error::{CliError, Result, bail};
use crate::files::{check_outputs, load_dataset};
use crate::models::{ModelSummary, RbmTask, UnitLayer, describe, visible_data, with_model};
use crate::record::{Context, record_path_for};
use crate::tmc::{TmcSummary, check_data_use, not_discrete, plan, reject, reject_dimensions};
use ebm_plot::{ImageFormat, Series, tethered_log_density};

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
    type Error = CliError;

    fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
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

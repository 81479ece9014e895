//! `ebm train --pretrain rcm`: the initial model of a training run fitted by the Restricted
//! Coulomb Machine (paper 000 §4, SI A) with [`ebm_train::pretrain::PretrainedStart`], the
//! persistent chains drawn from its static sampler, and the figure of the data against the
//! low-rank model on two directions.

use std::path::Path;

use ebm_core::{ChainRng, Par, RngStreams, Scalar};
use ebm_models::exact::HiddenEnumeration;
use ebm_models::{Bernoulli, BinaryLayer, Layer, Rbm, Spin};
use ebm_train::pretrain::{PretrainConfig, PretrainedStart, RcmConfig, StaticCheck};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::cli::{PretrainArg, TrainSettings, UnitArg};
use crate::error::{CliError, Result, bail};
use crate::models::{UnitLayer, exact_log_partition};
use crate::record::Context;
use crate::results::{PretrainReport, StaticCheckReport};
use ebm_train::{AnyNegative, AnyNegativeState};

/// Largest number of mesh points of the default `--rcm-mesh`.
const DEFAULT_MESH_POINTS: f64 = 1e5;
/// Hidden layers with at most this many configurations get the exact \\(\log Z\\) next to the
/// mesh one in the record.
pub(super) const MAX_EXACT_HIDDEN: u128 = 1 << 20;
/// Gap between the exact and the mesh \\(\log Z\\) of the pretrained model beyond which the
/// run warns that the mesh's law is not the model's (measured on MNIST 0/1 at 784 x 20 with 3
/// directions: 7.9 nats on \\(17^4\\) mesh points, 2.4 on \\(30^4\\), 0.007 with 1 direction).
const MAX_LOG_Z_GAP: f64 = 1.0;
/// Gap beyond which the fit has diverged and the run stops (a diverged fit's exact
/// \\(\log Z\\) reached \\(3\cdot10^8\\)).
const MAX_LOG_Z_GAP_FATAL: f64 = 100.0;
/// Static draws of the model in the figure.
const FIGURE_DRAWS: usize = 5000;

/// The resolved pre-training settings (stored in the state file with the rest).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PretrainSettings {
    /// Principal directions (the bias direction comes in addition).
    pub directions: usize,
    /// Initial hyperplanes of the RCM.
    pub hyperplanes: usize,
    /// Mesh points per axis.
    pub mesh: usize,
}

/// The settings of `--pretrain`, validated against the unit kinds (`None` without it).
pub(super) fn resolve(
    s: &TrainSettings,
    visible: UnitArg,
    hidden: UnitArg,
) -> Result<Option<PretrainSettings>> {
    let Some(PretrainArg::Rcm) = s.pretrain else {
        for (set, name) in [
            (s.rcm_directions.is_some(), "--rcm-directions"),
            (s.rcm_hyperplanes.is_some(), "--rcm-hyperplanes"),
            (s.rcm_mesh.is_some(), "--rcm-mesh"),
        ] {
            if set {
                bail!("{name} applies to --pretrain rcm only");
            }
        }
        return Ok(None);
    };
    let binary = |u: UnitArg| matches!(u, UnitArg::Bernoulli | UnitArg::Spin);
    if !binary(visible) || !binary(hidden) {
        bail!(
            "--pretrain rcm needs binary units ({{0,1}} bernoulli or {{-1,+1}} spin) on both \
             layers, got --visible {} and --hidden {}",
            visible.kind(),
            hidden.kind()
        );
    }
    let directions = s.rcm_directions.unwrap_or(3);
    if !(1..=4).contains(&directions) {
        bail!(
            "--rcm-directions {directions}: the low-rank model takes 1 to 4 principal directions \
             (the mesh grows as points^(d+1))"
        );
    }
    let dims = directions as i32 + 1;
    let mesh = match s.rcm_mesh {
        Some(m) if m < 2 => bail!("--rcm-mesh {m}: needs at least 2 points per axis"),
        Some(m) if (m as f64).powi(dims) > 1e7 => {
            bail!("--rcm-mesh {m}: {m}^{dims} mesh points exceed the limit of 10^7; give fewer")
        }
        Some(m) => m,
        None => DEFAULT_MESH_POINTS.powf(1.0 / dims as f64).floor() as usize,
    };
    let hyperplanes = s.rcm_hyperplanes.unwrap_or(100);
    // Each hyperplane: a normal and an offset in the d + 1 dimensions, and its gradient.
    ebm_core::Error::check_memory(
        "--rcm-hyperplanes",
        (hyperplanes as u128).saturating_mul(32 * (dims as u128 + 1)),
    )?;
    Ok(Some(PretrainSettings {
        directions,
        hyperplanes,
        mesh,
    }))
}

/// The pre-trained initial model of a run in the run's unit types and scalar: the low-rank fit
/// runs in `f64` ([`Start`]), and an `f32` run starts from that model rounded to `f32`
/// ([`Rbm::to_scalar`]), whose exact \\(\log Z\\) is computed again when the hidden layer can be
/// enumerated (the rounding moves it by about \\(10^{-7}\\) of the energies' scale, still more
/// than the online estimate should inherit unseen).
pub(super) struct Pretrained<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>> {
    model: Rbm<V, H>,
    report: PretrainReport,
    sampler: Box<dyn StaticSampler>,
}

/// The static sampler of the `f64` fit, whatever its unit types: what [`Pretrained`] needs of
/// [`PretrainedStart`] after the fit.
trait StaticSampler {
    /// [`PretrainedStart::check_static`].
    fn check(&self, rngs: &mut [ChainRng], par: Par) -> ebm_core::Result<StaticCheck>;
    /// [`PretrainedStart::draw_visible_resampled`].
    fn draw_resampled(
        &self,
        rngs: &mut [ChainRng],
        oversample: usize,
        par: Par,
    ) -> ebm_core::Result<(DMatrix<f64>, StaticCheck)>;
}

impl<V: Layer<Scalar = f64>, H: Layer<Scalar = f64>> StaticSampler for PretrainedStart<V, H> {
    fn check(&self, rngs: &mut [ChainRng], par: Par) -> ebm_core::Result<StaticCheck> {
        self.check_static(rngs, par)
    }

    fn draw_resampled(
        &self,
        rngs: &mut [ChainRng],
        oversample: usize,
        par: Par,
    ) -> ebm_core::Result<(DMatrix<f64>, StaticCheck)> {
        self.draw_visible_resampled(rngs, oversample, par)
    }
}

impl<V: UnitLayer, H: UnitLayer<Scalar = V::Scalar>> Pretrained<V, H> {
    /// Fits the RCM on `data` in `f64` ([`Start::fit`], binary units only) and converts its
    /// model to the run's scalar.
    pub(super) fn fit(
        s: &PretrainSettings,
        data: &DMatrix<f64>,
        hidden: usize,
        seed: u64,
        ctx: &Context,
        figure: &Path,
    ) -> Result<Self> {
        let args = FitArgs {
            settings: s,
            data,
            hidden,
            seed,
            ctx,
            figure,
        };
        match (V::KIND, H::KIND) {
            ("bernoulli", "bernoulli") => Start::<Bernoulli, Bernoulli>::fit(args)?.in_run(ctx),
            ("bernoulli", "spin") => Start::<Bernoulli, Spin>::fit(args)?.in_run(ctx),
            ("spin", "bernoulli") => Start::<Spin, Bernoulli>::fit(args)?.in_run(ctx),
            ("spin", "spin") => Start::<Spin, Spin>::fit(args)?.in_run(ctx),
            (v, h) => bail!("--pretrain rcm needs binary units, got {v}-{h}"),
        }
    }

    /// The initial model.
    pub(super) fn model(&self) -> &Rbm<V, H> {
        &self.model
    }

    /// The initial model's exact \\(\log Z\\), when its hidden layer was enumerated. The mesh
    /// value is not offered: its saddle-point error is not in the online estimate's error bar,
    /// so without the exact value the estimator anneals to the initial model by AIS.
    pub(super) fn exact_log_z(&self) -> Option<f64> {
        self.report.log_z_exact
    }

    /// Draws the persistent chains of PCD and Jarzynski, and every rung of a PT or bridged
    /// negative phase, from the pretrained model (CD and TMC keep their own initial chains). When its hidden
    /// layer has at most [`MAX_EXACT_HIDDEN`] configurations, each rung gets exact draws of
    /// \\(p_\beta\\) at its own inverse temperature. Otherwise every rung starts from static
    /// draws importance-resampled to the model at \\(\beta = 1\\)
    /// ([`PretrainedStart::draw_visible_resampled`], four per chain), then the hidden layer
    /// given them at the rung's \\(\beta\\): a valid start from which the hotter rungs relax
    /// quickly. Raw static draws follow the mesh's saddle-point law, not the model's: on MNIST
    /// 0/1 at 784 x 20 they put 0.55 on the digit 1 where the model puts 0.75, and chains that
    /// cannot cross between the modes keep that error. Seeding keeps the first updates right;
    /// it does not keep the modes when the chains cannot cross between them (see
    /// [`ebm_train::Bridged`]). Warns
    /// (stderr and record) when the static draws do not represent the model. Consumes the
    /// report.
    pub(super) fn seed_chains(
        self,
        phase: &AnyNegative,
        negative: &mut AnyNegativeState<V::Scalar>,
        seed: u64,
        ctx: &Context,
    ) -> Result<PretrainReport> {
        let mut report = self.report;
        let rungs = negative.seedable_chains(phase);
        if rungs.is_empty() {
            return Ok(report);
        }
        let model = &self.model;
        let enumerable = model
            .hidden()
            .discrete_configurations()
            .is_some_and(|c| c <= MAX_EXACT_HIDDEN);
        let mut check = None;
        // Rung k's streams; k = 0 (PCD's only rung) keeps the streams of earlier versions.
        let streams = |k: usize, n: usize| {
            RngStreams::new(
                (seed ^ 0x57A7).wrapping_add((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                n,
            )
        };
        for (k, (chains, beta)) in rungs.into_iter().enumerate() {
            let n = chains.visible.ncols();
            let mut rngs = streams(k, n);
            if enumerable {
                HiddenEnumeration::of_any(model, beta, Par::Rayon)
                    .ok_or_else(|| CliError::new("exact draws need a discrete hidden layer"))??
                    .sample_any(model, chains, rngs.as_mut_slice(), Par::Rayon);
                if check.is_none() {
                    check = Some(self.sampler.check(rngs.as_mut_slice(), Par::Rayon)?);
                }
            } else {
                let (v, c) = self
                    .sampler
                    .draw_resampled(rngs.as_mut_slice(), 4, Par::Rayon)?;
                chains.visible = v.map(V::Scalar::from_f64);
                ebm_core::ConditionalSampler::sample_hidden(
                    model,
                    chains,
                    beta,
                    rngs.as_mut_slice(),
                    Par::Rayon,
                );
                check.get_or_insert(c);
            }
        }
        let Some(check) = check else {
            return Ok(report);
        };
        report.chains_start = Some(if enumerable { "exact" } else { "resampled" }.into());
        report.static_check = Some(StaticCheckReport {
            log_z: check.log_z.log_mean,
            std_err: check.log_z.std_err,
            relative_ess: check.relative_ess(),
        });
        if !check.trusted() {
            let line = format!(
                "pre-training: the static sampler does not represent the pretrained model \
                 (relative ESS {:.4} of its draws against the model, below {}){}; try a finer \
                 --rcm-mesh or fewer --rcm-directions",
                check.relative_ess(),
                ebm_train::pretrain::MIN_STATIC_RELATIVE_ESS,
                if enumerable {
                    ", though the persistent chains are exact draws"
                } else {
                    ", so the resampled persistent chains rest on few distinct draws"
                }
            );
            ctx.warn(&line);
            report.warnings.push(line);
        }
        Ok(report)
    }
}

/// The pre-trained initial model of a run, with its mesh \\(\log Z\\) and static sampler.
struct Start<V: Layer<Scalar = f64>, H: Layer<Scalar = f64>> {
    start: PretrainedStart<V, H>,
    report: PretrainReport,
}

/// The arguments of [`Start::fit`].
struct FitArgs<'a> {
    /// `--rcm-*`: directions, mesh and hyperplanes.
    settings: &'a PretrainSettings,
    /// The training data, one sample per column, in the visible units' states.
    data: &'a DMatrix<f64>,
    /// The hidden units of the model to train (the fitted model is padded to them).
    hidden: usize,
    /// Seed of the fit, of its static draws and of the figure's samples.
    seed: u64,
    /// Where the fit reports.
    ctx: &'a Context,
    /// The figure of the low-rank model's samples over the data.
    figure: &'a Path,
}

impl<V, H> Start<V, H>
where
    V: UnitLayer<Scalar = f64> + BinaryLayer,
    H: UnitLayer<Scalar = f64> + BinaryLayer,
{
    /// Fits the RCM on `data` (one sample per column, in the visible units' states), pads the
    /// model to `hidden` units, reports and draws the figure `figure`.
    fn fit(args: FitArgs<'_>) -> Result<Self> {
        let t0 = std::time::Instant::now();
        args.ctx.say(format!(
            "pre-training: RCM on {} directions plus the bias direction, mesh of {}^{} points, \
             {} hyperplanes",
            args.settings.directions,
            args.settings.mesh,
            args.settings.directions + 1,
            args.settings.hyperplanes
        ));
        let cfg = PretrainConfig {
            directions: args.settings.directions,
            bias: true,
            points_per_dim: args.settings.mesh,
            rcm: RcmConfig {
                hyperplanes: args.settings.hyperplanes,
                seed: args.seed,
                ..RcmConfig::default()
            },
        };
        let start =
            PretrainedStart::<V, H>::new(args.data, &cfg, args.hidden, args.seed, Par::Rayon)?;
        let log_z_exact = match start.model.hidden().discrete_configurations() {
            Some(n) if n <= MAX_EXACT_HIDDEN => {
                Some(exact_log_partition(&start.model, 1.0, Par::Rayon)?.0)
            }
            _ => None,
        };
        let warnings = Self::check_log_z(&start, log_z_exact, args.ctx)?;
        Self::draw_figure(&start, args.data, args.seed, args.figure)?;
        let pre = &start.pretrained;
        let report = PretrainReport {
            dimensions: pre.basis.dim(),
            mesh_points: pre.mesh.len(),
            mesh_rejected: pre.mesh.rejected(),
            rcm_objective: pre.fit.objective.last().copied().unwrap_or(f64::NAN),
            hyperplanes_kept: pre.fit.rcm.n_hidden(),
            hyperplanes_dropped: pre.fit.dropped,
            newton_iterations: pre.fit.iterations,
            gradient_norm: pre.fit.gradient_norm,
            log_z_mesh: start.log_z_mesh,
            log_z_exact,
            seconds: t0.elapsed().as_secs_f64(),
            figure: args.figure.to_path_buf(),
            chains_start: None,
            static_check: None,
            warnings,
        };
        args.ctx.say(format!(
            "pre-training: {} mesh points kept ({} outside the attainable region), RCM objective \
             {:.5}, {} hyperplanes kept ({} dropped), {} Newton steps; initial log Z {:.4} (mesh){}; \
             {:.1} s; figure {}",
            report.mesh_points,
            report.mesh_rejected,
            report.rcm_objective,
            report.hyperplanes_kept,
            report.hyperplanes_dropped,
            report.newton_iterations,
            report.log_z_mesh,
            log_z_exact.map_or(String::new(), |z| format!(", {z:.4} (exact)")),
            report.seconds,
            args.figure.display()
        ));
        Ok(Self { start, report })
    }

    /// The pretrained model's exact log Z (`log_z_exact`, when its hidden layer can be
    /// enumerated) against the mesh's: an error when the mesh lost the model's mass, a warning
    /// (returned, and said) when its saddle-point law is off.
    fn check_log_z(
        start: &PretrainedStart<V, H>,
        log_z_exact: Option<f64>,
        ctx: &Context,
    ) -> Result<Vec<String>> {
        let mut warnings = Vec::new();
        if let Some(z) = log_z_exact {
            let gap = (z - start.log_z_mesh).abs();
            if gap > MAX_LOG_Z_GAP_FATAL {
                bail!(
                    "--pretrain rcm failed: the pretrained model's log Z is {z:.4} exactly but \
                     {:.4} on the mesh, so the mesh does not hold its mass (the projected data \
                     lie where the mesh has no converged point and the fit diverged: {} Newton \
                     steps, gradient {:.2e}); try fewer --rcm-directions or a finer --rcm-mesh",
                    start.log_z_mesh,
                    start.pretrained.fit.iterations,
                    start.pretrained.fit.gradient_norm
                );
            }
            if gap > MAX_LOG_Z_GAP {
                let line = format!(
                    "pre-training: the pretrained model's log Z is {z:.4} exactly but {:.4} on \
                     the mesh: the mesh's saddle-point law is not the model's, so its static \
                     draws are not the model's either (the persistent chains are drawn exactly \
                     instead, and the online log-likelihood starts from the exact log Z); a \
                     finer --rcm-mesh narrows the gap",
                    start.log_z_mesh
                );
                ctx.warn(&line);
                warnings.push(line);
            }
        }
        Ok(warnings)
    }

    /// The figure of the low-rank model's samples over the data, on the two first directions.
    fn draw_figure(
        start: &PretrainedStart<V, H>,
        data: &DMatrix<f64>,
        seed: u64,
        figure: &Path,
    ) -> Result<()> {
        let pre = &start.pretrained;
        let draws = FIGURE_DRAWS.min(10 * data.ncols()).max(1);
        let mut rngs = RngStreams::new(seed ^ 0xF16, draws);
        let pair = start.projections(data, rngs.as_mut_slice())?;
        let name = |r: usize| {
            if pre.bias && r == 0 {
                "m0 (bias direction)".to_string()
            } else {
                format!("m{r} (direction {r})")
            }
        };
        ebm_plot::samples_over_data(
            figure,
            &pair.data,
            &pair.model,
            "samples of the low-rank model",
            (&name(pair.rows.0), &name(pair.rows.1)),
        )?;
        Ok(())
    }

    /// The run's initial model: the fitted one in the unit types and scalar of the run. In
    /// `f32` its exact \\(\log Z\\) (when the hidden layer can be enumerated) is computed again,
    /// in `f64` arithmetic on the rounded parameters, and said on stderr.
    fn in_run<V2: UnitLayer, H2: UnitLayer<Scalar = V2::Scalar>>(
        mut self,
        ctx: &Context,
    ) -> Result<Pretrained<V2, H2>>
    where
        V: 'static,
        H: 'static,
    {
        let model: Rbm<V2, H2> = self.start.model.to_scalar().map_err(|e| {
            CliError::new(format!(
                "--pretrain rcm: the fitted model does not fit in {} ({e}); use --precision f64",
                V2::Scalar::NAME
            ))
        })?;
        if V2::Scalar::NAME != f64::NAME && self.report.log_z_exact.is_some() {
            let rounded: Rbm<V, H> = model.to_scalar()?;
            let z = exact_log_partition(&rounded, 1.0, Par::Rayon)?.0;
            ctx.say(format!(
                "pre-training: the initial model rounded to {}: log Z {z:.4} (exact)",
                V2::Scalar::NAME
            ));
            self.report.log_z_exact = Some(z);
        }
        Ok(Pretrained {
            model,
            report: self.report,
            sampler: Box::new(self.start),
        })
    }
}

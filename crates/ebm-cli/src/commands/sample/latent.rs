//! `ebm sample --sampler latent`: hidden-space Gibbs moves (Algorithm 3 or 4 of "Alternating
//! Gibbs sampling in restricted Boltzmann machines: free-energy barriers, analytic models and
//! moves in latent space"), optionally alternated with alternating Gibbs sweeps. The kernel is
//! [`ebm_samplers::Alternate`] of [`Gibbs`] and [`LatentGibbs`], run by [`ebm_samplers::run`].

use ebm_core::{ChainState, Observer, Par, Scalar};
use ebm_models::{Rbm, RbmChains};
use ebm_samplers::latent::LatentUnits;
use ebm_samplers::{Alternate, Gibbs, LatentGibbs, LatentInfo, StepInfo, run};

use super::SamplerRun;
use crate::cli::{LatentAlgorithmArg, SampleArgs};
use crate::error::{Result, bail};
use crate::models::{LatentTask, UnitLayer};
use crate::progress::ProgressObserver;
use crate::record::Context;

/// Forwards the chains of every step to an observer of chains (the mode tracer).
struct Chains<O>(O);

impl<I, F: Scalar, O: Observer<RbmChains<F>>> Observer<StepInfo<'_, I, RbmChains<F>>>
    for Chains<O>
{
    fn observe(&mut self, step: u64, info: &StepInfo<'_, I, RbmChains<F>>) -> ebm_core::Result<()> {
        self.0.observe(step, info.chains)
    }
}

/// Runs `--steps` steps of `--ags-sweeps` AGS sweeps followed by a latent step of `--sweeps`
/// hidden-space sweeps, from `chains`, reporting every step's chains to `tracer`.
///
/// # Errors
/// For hidden layers without latent moves (Potts, dReLU), and errors of the run.
pub(super) fn run_latent<V, H, O>(
    rbm: &Rbm<V, H>,
    a: &SampleArgs,
    ctx: &Context,
    chains: RbmChains<V::Scalar>,
    tracer: O,
) -> Result<SamplerRun<V::Scalar>>
where
    V: UnitLayer,
    H: UnitLayer<Scalar = V::Scalar>,
    O: Observer<RbmChains<V::Scalar>>,
{
    let task = LatentRun {
        a,
        ctx,
        chains,
        tracer,
    };
    H::on_latent_hidden(rbm, task).unwrap_or_else(|| {
        bail!(
            "--sampler latent needs bernoulli, spin, gaussian or relu hidden units; this model's \
             hidden layer has none of these kinds"
        )
    })
}

/// [`go`] as a task on the hidden layer's type ([`UnitLayer::on_latent_hidden`]).
struct LatentRun<'a, F: Scalar, O> {
    a: &'a SampleArgs,
    ctx: &'a Context,
    chains: RbmChains<F>,
    tracer: O,
}

impl<V: UnitLayer, O: Observer<RbmChains<V::Scalar>>> LatentTask<V>
    for LatentRun<'_, V::Scalar, O>
{
    type Output = Result<SamplerRun<V::Scalar>>;

    fn run<H: UnitLayer<Scalar = V::Scalar> + LatentUnits>(self, rbm: &Rbm<V, H>) -> Self::Output {
        go(rbm, self.a, self.ctx, self.chains, self.tracer)
    }
}

fn go<V, H, O>(
    rbm: &Rbm<V, H>,
    a: &SampleArgs,
    ctx: &Context,
    chains: RbmChains<V::Scalar>,
    tracer: O,
) -> Result<SamplerRun<V::Scalar>>
where
    V: UnitLayer,
    H: UnitLayer<Scalar = V::Scalar> + LatentUnits,
    O: Observer<RbmChains<V::Scalar>>,
{
    let beta = a.beta.unwrap_or(1.0);
    let latent = LatentGibbs {
        sweeps: a.sweeps,
        ..match a.latent_algorithm {
            LatentAlgorithmArg::Single => LatentGibbs::single(),
            LatentAlgorithmArg::Pair => LatentGibbs::pair(),
        }
    };
    let kernel = Alternate {
        first: Gibbs::new(a.ags_sweeps),
        second: latent,
    };
    let mut state = ChainState::new(chains, a.seed);
    let mut totals = LatentInfo::default();
    let sum = ebm_core::FnObserver(
        |_, i: &StepInfo<'_, (ebm_samplers::GibbsInfo, LatentInfo), RbmChains<V::Scalar>>| {
            let l = &i.kernel.1;
            totals.grid_proposed += l.grid_proposed;
            totals.grid_accepted += l.grid_accepted;
            Ok(())
        },
    );
    let progress = ProgressObserver(ctx.progress(a.steps, "latent"));
    run(
        rbm,
        &kernel,
        beta,
        &mut state,
        a.steps,
        Par::Rayon,
        (progress, (Chains(tracer), sum)),
    )?;
    let algorithm = match a.latent_algorithm {
        LatentAlgorithmArg::Single => "Algorithm 3, single units",
        LatentAlgorithmArg::Pair => "Algorithm 4, pairs",
    };
    let grid = if totals.grid_proposed > 0 {
        format!(
            ", grid-move acceptance {:.3}",
            totals.grid_accepted as f64 / totals.grid_proposed as f64
        )
    } else {
        String::new()
    };
    Ok(SamplerRun {
        samples: state.chains.visible,
        beta,
        sweeps_per_step: (a.ags_sweeps + a.sweeps) as u64,
        description: format!(
            "latent Gibbs ({algorithm}; {} AGS + {} latent sweeps per step, beta {beta}{grid})",
            a.ags_sweeps, a.sweeps
        ),
        pt: None,
    })
}

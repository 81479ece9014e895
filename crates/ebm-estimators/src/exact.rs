//! Exact \\(\log Z\\) (enumeration of the smaller layer, closed forms) and exact draws: the
//! tractable rung 0 of every annealing path, and the exact target samples of reverse AIS.

use crate::estimate::{LogZEstimate, Method, Side};
use crate::population::Population;
use ebm_core::{ConditionalSampler, EnergyModel, Error, ExactSampling, Par, Scalar, Tractable};
use ebm_models::exact::{Enumerated, log_partition_by_hidden, log_partition_by_visible};
use ebm_models::{DiscreteLayer, Layer, Rbm, RbmChains};

/// \\(\log Z_\beta\\) of an RBM with two discrete layers by enumerating the layer with fewer
/// configurations and summing the other out analytically (Béreux et al., *Fast training and sampling of RBMs*):
///
/// \\[ \log Z_\beta = \log \sum_h e^{-F_\beta(h)} \quad\text{or}\quad \log \sum_v e^{-F_\beta(v)}, \\]
///
/// through [`ebm_models::exact`] (batched matrix products, chunks in parallel, `f64` sums).
/// For \\(2^{20}\\) configurations the cost is dominated by the \\(2^{20} \times N\\) unit CGFs of
/// the other layer's \\(N\\) units (measured on two busy cores: 1 s for \\(N = 40\\), 2 s for
/// \\(N = 100\\), 19 s for \\(N = 784\\), most of it in the scalar `log1p` of the softplus).
///
/// # Errors
/// [`Error::TooLarge`] when the smaller layer has more than
/// [`ebm_models::exact::MAX_ENUMERATION`] configurations.
pub fn exact_log_partition<V, H>(
    rbm: &Rbm<V, H>,
    beta: f64,
    par: Par,
) -> ebm_core::Result<LogZEstimate>
where
    V: DiscreteLayer,
    H: DiscreteLayer<Scalar = V::Scalar>,
{
    let (nv, nh) = (
        rbm.visible().n_configurations(),
        rbm.hidden().n_configurations(),
    );
    let (side, configurations, log_z) = if nh <= nv {
        (Side::Hidden, nh, log_partition_by_hidden(rbm, beta, par)?)
    } else {
        (Side::Visible, nv, log_partition_by_visible(rbm, beta, par)?)
    };
    Ok(LogZEstimate::exact(
        log_z,
        Method::Enumeration {
            side,
            configurations: configurations as u64,
        },
    ))
}

/// \\(\log Z_\beta\\) of an RBM whose units are independent at \\(\beta\\): all weights zero,
/// or \\(\beta = 0\\). Then \\(Z_\beta = \prod_i \sum_{v_i} e^{-\beta U_i(v_i)}
/// \prod_\mu \sum_{h_\mu} e^{-\beta U_\mu(h_\mu)}\\), i.e. the sum of both layers' CGFs at zero
/// input: \\((N_v + N_h)\log 2\\) at \\(\beta = 0\\) for binary units, \\(\sum_i
/// \operatorname{softplus}(\beta\theta_i) + \sum_\mu \operatorname{softplus}(\beta\eta_\mu)\\) for a
/// Bernoulli reference (the PTT paper).
fn independent_log_z<V: Layer, H: Layer<Scalar = V::Scalar>>(rbm: &Rbm<V, H>, beta: f64) -> f64 {
    let zero = V::Scalar::from_f64(0.0);
    rbm.visible().cgf(&vec![zero; rbm.visible().width()], beta)
        + rbm.hidden().cgf(&vec![zero; rbm.hidden().width()], beta)
}

fn check_beta(beta: f64) -> ebm_core::Result<()> {
    if beta.is_finite() && beta > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "beta".into(),
            reason: format!("must be finite and > 0, got {beta}"),
        })
    }
}

fn check_zero_weights<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
) -> ebm_core::Result<()> {
    match rbm.weights().iter().position(|w| w.as_f64() != 0.0) {
        None => Ok(()),
        Some(k) => Err(Error::InvalidParameter {
            name: "reference model".into(),
            reason: format!(
                "independent sites need zero weights; weight {k} (column-major) is {}",
                rbm.weights()[k]
            ),
        }),
    }
}

/// The tractable start of an annealing path: a [`Population`] of independent exact draws from
/// a distribution together with its exact \\(\log Z\\). Chain `i` of the draws consumed stream
/// `i` of the population, which continues from there.
#[derive(Clone, Debug)]
pub struct Start<S> {
    /// Exact draws, with zero log weights.
    pub population: Population<S>,
    /// The exact \\(\log Z\\) of the distribution they were drawn from.
    pub log_z: LogZEstimate,
}

impl<S: ebm_core::Chains> Start<S> {
    /// Draws `n_chains` exact samples of a [`Tractable`] model at `beta` (its
    /// [`ExactSampling::sample_exact`] and [`ebm_core::ExactLogPartition::log_partition`]).
    ///
    /// # Errors
    /// As [`Population::new`].
    pub fn tractable<M: Tractable<State = S>>(
        model: &M,
        beta: f64,
        n_chains: usize,
        seed: u64,
        par: Par,
    ) -> ebm_core::Result<Self> {
        let mut population = Population::new(model.new_state(n_chains), seed)?;
        model.sample_exact(
            &mut population.chains,
            beta,
            population.rngs.as_mut_slice(),
            par,
        );
        Ok(Self {
            population,
            log_z: LogZEstimate::of_model(model, beta),
        })
    }
}

impl<F: Scalar> Start<RbmChains<F>> {
    /// Rung \\(\beta = 0\\) of a temperature ladder of an RBM with discrete layers: the uniform
    /// law on all configurations, \\(\log Z_0 = \log(|\mathcal V|\,|\mathcal H|)\\). The draws
    /// are one Gibbs sweep at \\(\beta = 0\\), which is exact there (neither conditional
    /// depends on the other layer).
    ///
    /// The layers need only be [`Layer`]s, so that code generic over unit kinds chosen at run
    /// time can call it; a real-valued layer, which has no law at \\(\beta = 0\\) (its
    /// cumulant generating function diverges), is an error.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when a layer is not discrete
    /// ([`Layer::discrete_configurations`] is `None`); as [`Population::new`].
    pub fn uniform<V, H>(
        rbm: &Rbm<V, H>,
        n_chains: usize,
        seed: u64,
        par: Par,
    ) -> ebm_core::Result<Self>
    where
        V: Layer<Scalar = F>,
        H: Layer<Scalar = F>,
    {
        for (side, discrete) in [
            (V::KIND, rbm.visible().discrete_configurations()),
            (H::KIND, rbm.hidden().discrete_configurations()),
        ] {
            if discrete.is_none() {
                return Err(Error::InvalidParameter {
                    name: "beta".into(),
                    reason: format!(
                        "0 (the uniform start) needs discrete units, but {side} units have no \
                         law at beta = 0"
                    ),
                });
            }
        }
        let mut population = Population::new(rbm.new_state(n_chains), seed)?;
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
        Ok(Self {
            population,
            log_z: LogZEstimate::exact(independent_log_z(rbm, 0.0), Method::IndependentSites),
        })
    }

    /// Exact draws of an independent-site RBM (all weights zero, any unit types) at
    /// \\(\beta > 0\\), e.g. the reference of a [`ebm_samplers::tempering::ReferenceLadder`]
    /// or the zero-weight first checkpoint of a training trajectory: one Gibbs sweep (exact,
    /// since the conditionals do not depend on the other layer) and the closed-form
    /// \\(\log Z_\beta = \sum_i \Gamma_i(0) + \sum_\mu \Gamma_\mu(0)\\) (the PTT paper: with visible
    /// fields from the data frequencies, \\(\log Z_{\text{ref}} = N_h \log 2 + \sum_i
    /// \operatorname{softplus}(\theta^{\text{ref}}_i)\\)).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if a weight is not zero or `beta` is not finite and positive;
    /// as [`Population::new`].
    pub fn independent<V, H>(
        rbm: &Rbm<V, H>,
        beta: f64,
        n_chains: usize,
        seed: u64,
        par: Par,
    ) -> ebm_core::Result<Self>
    where
        V: Layer<Scalar = F>,
        H: Layer<Scalar = F>,
    {
        check_zero_weights(rbm)?;
        check_beta(beta)?;
        let mut population = Population::new(rbm.new_state(n_chains), seed)?;
        rbm.sample_hidden(
            &mut population.chains,
            beta,
            population.rngs.as_mut_slice(),
            par,
        );
        rbm.sample_visible(
            &mut population.chains,
            beta,
            population.rngs.as_mut_slice(),
            par,
        );
        Ok(Self {
            population,
            log_z: LogZEstimate::exact(independent_log_z(rbm, beta), Method::IndependentSites),
        })
    }

    /// Exact draws of a small RBM with discrete layers at `beta`, by enumeration of the layer
    /// with fewer configurations: that layer is drawn from its exact marginal (inversion of
    /// the enumerated cumulative distribution), then the other from its conditional law. With
    /// \\(\log Z_\beta\\) from [`exact_log_partition`]. These are also the exact target
    /// samples reverse AIS starts from.
    ///
    /// # Errors
    /// As [`exact_log_partition`] and [`Population::new`].
    pub fn enumerated<V, H>(
        rbm: &Rbm<V, H>,
        beta: f64,
        n_chains: usize,
        seed: u64,
        par: Par,
    ) -> ebm_core::Result<Self>
    where
        V: DiscreteLayer<Scalar = F>,
        H: DiscreteLayer<Scalar = F>,
    {
        let log_z = exact_log_partition(rbm, beta, par)?;
        let mut population = Population::new(rbm.new_state(n_chains), seed)?;
        let rngs = population.rngs.as_mut_slice();
        if matches!(
            log_z.method,
            Method::Enumeration {
                side: Side::Hidden,
                ..
            }
        ) {
            // Enumerate the hidden layer: sample the transposed model, whose visible layer is
            // our hidden one, and transpose the chains back.
            let t = Enumerated::new(rbm.transposed())?;
            let chains = &mut population.chains;
            let mut tc = RbmChains {
                visible: std::mem::replace(&mut chains.hidden, nalgebra::DMatrix::zeros(0, 0)),
                hidden: std::mem::replace(&mut chains.visible, nalgebra::DMatrix::zeros(0, 0)),
            };
            t.sample_exact(&mut tc, beta, rngs, par);
            chains.visible = tc.hidden;
            chains.hidden = tc.visible;
        } else {
            Enumerated::new(rbm.clone())?.sample_exact(&mut population.chains, beta, rngs, par);
        }
        Ok(Self { population, log_z })
    }
}

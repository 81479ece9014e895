//! Exact computations on small RBMs by enumerating one discrete layer.
//!
//! \\[ \log Z_\beta = \log \sum_v e^{-F_\beta(v)} = \log \sum_h e^{-F_\beta(h)}, \\]
//!
//! summed over the configurations of whichever layer is enumerated, in batches through the
//! same batched free-energy code as sampling (matrix products, chunks of chains in parallel).

use crate::layer::{DiscreteHiddenTask, DiscreteLayer, Layer};
use crate::rbm::{Rbm, RbmChains};
use ebm_core::numerics::{log_sum_exp, normalised_exp};
use ebm_core::{
    ConditionalSampler, EnergyModel, Enumerable, Error, ExactLogPartition, ExactSampling, Kernel,
    Par, ProductCache, Scalar,
};
use nalgebra::DMatrix;
use rand::Rng;

/// The largest number of configurations enumerated (\\(2^{24}\\)).
pub const MAX_ENUMERATION: u128 = 1 << 24;

/// Configurations are enumerated in batches of this many columns.
const BATCH: usize = 4096;

fn check_size<L: DiscreteLayer>(layer: &L, what: &str) -> ebm_core::Result<usize> {
    let n = layer.n_configurations();
    if n > MAX_ENUMERATION {
        return Err(Error::TooLarge {
            what: what.into(),
            states: n,
            limit: MAX_ENUMERATION,
        });
    }
    Ok(n as usize)
}

/// Calls `f(first_index, batch)` for consecutive batches of the layer's configurations, each
/// batch a `width x len` matrix whose column `k` is configuration `first_index + k`.
fn for_each_configuration_batch<L: DiscreteLayer>(
    layer: &L,
    n: usize,
    mut f: impl FnMut(usize, &DMatrix<L::Scalar>),
) {
    let mut start = 0;
    while start < n {
        let len = BATCH.min(n - start);
        let mut x = DMatrix::zeros(layer.width(), len);
        for k in 0..len {
            layer.write_configuration((start + k) as u128, x.column_mut(k).as_mut_slice());
        }
        f(start, &x);
        start += len;
    }
}

/// The tempered free energies \\(F_\beta(v)\\) of every visible configuration, in the order of
/// [`DiscreteLayer::write_configuration`].
///
/// # Errors
/// [`Error::TooLarge`] beyond [`MAX_ENUMERATION`] configurations.
pub fn visible_free_energies<V, H>(
    rbm: &Rbm<V, H>,
    beta: f64,
    par: Par,
) -> ebm_core::Result<Vec<f64>>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let n = check_size(rbm.visible(), "the visible layer")?;
    let mut out = vec![0.0; n];
    for_each_configuration_batch(rbm.visible(), n, |start, x| {
        rbm.free_energy_visible(x, beta, &mut out[start..start + x.ncols()], par);
    });
    Ok(out)
}

/// The tempered free energies \\(F_\beta(h)\\) of every hidden configuration.
///
/// # Errors
/// [`Error::TooLarge`] beyond [`MAX_ENUMERATION`] configurations.
pub fn hidden_free_energies<V, H>(
    rbm: &Rbm<V, H>,
    beta: f64,
    par: Par,
) -> ebm_core::Result<Vec<f64>>
where
    V: Layer,
    H: DiscreteLayer<Scalar = V::Scalar>,
{
    let n = check_size(rbm.hidden(), "the hidden layer")?;
    let mut out = vec![0.0; n];
    for_each_configuration_batch(rbm.hidden(), n, |start, x| {
        rbm.free_energy_hidden(x, beta, &mut out[start..start + x.ncols()], par);
    });
    Ok(out)
}

/// \\(\log Z_\beta\\) by enumerating the visible layer.
///
/// # Errors
/// [`Error::TooLarge`] beyond [`MAX_ENUMERATION`] configurations.
pub fn log_partition_by_visible<V, H>(rbm: &Rbm<V, H>, beta: f64, par: Par) -> ebm_core::Result<f64>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let f = visible_free_energies(rbm, beta, par)?;
    Ok(log_sum_exp(&f.iter().map(|x| -x).collect::<Vec<_>>()))
}

/// \\(\log Z_\beta\\) by enumerating the hidden layer.
///
/// # Errors
/// [`Error::TooLarge`] beyond [`MAX_ENUMERATION`] configurations.
pub fn log_partition_by_hidden<V, H>(rbm: &Rbm<V, H>, beta: f64, par: Par) -> ebm_core::Result<f64>
where
    V: Layer,
    H: DiscreteLayer<Scalar = V::Scalar>,
{
    let f = hidden_free_energies(rbm, beta, par)?;
    Ok(log_sum_exp(&f.iter().map(|x| -x).collect::<Vec<_>>()))
}

/// The exact visible marginal \\(p_\beta(v)\\) of every configuration (summing to 1).
///
/// # Errors
/// [`Error::TooLarge`] beyond [`MAX_ENUMERATION`] configurations.
pub fn visible_probabilities<V, H>(
    rbm: &Rbm<V, H>,
    beta: f64,
    par: Par,
) -> ebm_core::Result<Vec<f64>>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let neg: Vec<f64> = visible_free_energies(rbm, beta, par)?
        .iter()
        .map(|x| -x)
        .collect();
    Ok(normalised_exp(&neg))
}

/// A small RBM with an enumerable visible layer, made [`ebm_core::Tractable`]: exact \\(\log Z_\beta\\)
/// and exact sampling of \\((v, h)\\) from the tempered joint (v by inversion of the enumerated
/// marginal, then h from \\(p_\beta(h \mid v)\\)). Each call enumerates afresh, so it is meant for
/// systems of up to about \\(2^{20}\\) visible configurations.
#[derive(Clone, Debug)]
pub struct Enumerated<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>> {
    rbm: Rbm<V, H>,
}

impl<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>> Enumerated<V, H> {
    /// Wraps `rbm`.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the visible layer has more than [`MAX_ENUMERATION`] configurations.
    pub fn new(rbm: Rbm<V, H>) -> ebm_core::Result<Self> {
        check_size(rbm.visible(), "the visible layer")?;
        Ok(Self { rbm })
    }

    /// The wrapped model.
    pub fn rbm(&self) -> &Rbm<V, H> {
        &self.rbm
    }
}

impl<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>> EnergyModel for Enumerated<V, H> {
    type Scalar = V::Scalar;
    type State = RbmChains<V::Scalar>;

    fn energies(&self, x: &Self::State, beta: f64, out: &mut [f64], par: Par) {
        self.rbm.energies(x, beta, out, par);
    }

    fn new_state(&self, n_chains: usize) -> Self::State {
        self.rbm.new_state(n_chains)
    }
}

/// Nothing kept between energies and sweeps (the defaults).
impl<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>> ProductCache for Enumerated<V, H> {}

/// Block sampling delegates to the wrapped RBM, so the usual kernels (Gibbs) run on an
/// enumerated model too: a ladder of `Enumerated` models can be explored by Gibbs and refreshed
/// exactly by [`ExactSampling::sample_exact`] in the same run.
impl<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>> ConditionalSampler for Enumerated<V, H> {
    fn sample_hidden<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        self.rbm.sample_hidden(x, beta, rngs, par);
    }

    fn sample_visible<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        self.rbm.sample_visible(x, beta, rngs, par);
    }
}

impl<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>> ExactLogPartition for Enumerated<V, H> {
    fn log_partition(&self, beta: f64) -> f64 {
        log_partition_by_visible(&self.rbm, beta, Par::Rayon)
            .expect("size checked in Enumerated::new")
    }
}

impl<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>> ExactSampling for Enumerated<V, H> {
    fn sample_exact<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        self.rbm.sample_enumerated(x, beta, rngs, par);
    }
}

/// An RBM lists the configurations of its visible layer, in the order of
/// [`DiscreteLayer::write_configuration`]; its energy is the tempered free energy
/// \\(F_\beta(v)\\), so the listed law is the visible marginal \\(p_\beta(v)\\), and
/// [`Enumerable::complete`] draws \\(h \sim p_\beta(h \mid v)\\).
impl<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>> Enumerable for Rbm<V, H> {
    fn n_states(&self) -> usize {
        usize::try_from(self.visible().n_configurations()).unwrap_or(usize::MAX)
    }

    fn write_state(&self, k: usize, x: &mut RbmChains<V::Scalar>, chain: usize) {
        self.visible()
            .write_configuration(k as u128, x.visible.column_mut(chain).as_mut_slice());
    }

    fn state_index(&self, x: &RbmChains<V::Scalar>, chain: usize) -> usize {
        self.visible()
            .configuration_index(x.visible.column(chain).as_slice()) as usize
    }

    /// [`visible_free_energies`], in batches.
    ///
    /// # Panics
    /// Beyond [`MAX_ENUMERATION`] configurations.
    fn log_weights(&self, beta: f64, par: Par) -> Vec<f64> {
        let f = visible_free_energies(self, beta, par).expect("enumerable visible layer");
        f.iter().map(|x| -x).collect()
    }

    fn complete<R: Rng + Send>(
        &self,
        x: &mut RbmChains<V::Scalar>,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        self.sample_hidden(x, beta, rngs, par);
    }
}

/// The exact hidden marginal \\(p_\beta(h)\\) of every hidden configuration (summing to 1), in
/// the order of [`DiscreteLayer::write_configuration`].
///
/// # Errors
/// [`Error::TooLarge`] beyond [`MAX_ENUMERATION`] configurations.
pub fn hidden_probabilities<V, H>(
    rbm: &Rbm<V, H>,
    beta: f64,
    par: Par,
) -> ebm_core::Result<Vec<f64>>
where
    V: Layer,
    H: DiscreteLayer<Scalar = V::Scalar>,
{
    let neg: Vec<f64> = hidden_free_energies(rbm, beta, par)?
        .iter()
        .map(|x| -x)
        .collect();
    Ok(normalised_exp(&neg))
}

/// Exact draws of \\((v, h)\\) from the tempered joint \\(p_\beta(v, h)\\) of one RBM, by
/// enumerating its **hidden** layer once: \\(h\\) by inversion of the enumerated marginal
/// \\(p_\beta(h) \propto e^{-F_\beta(h)}\\) (its cumulative distribution is kept), then
/// \\(v \sim p_\beta(v \mid h)\\) from the model's own conditional sampler.
///
/// This is the ground truth for models with a large visible layer and a small discrete hidden
/// layer (paper 000, *Fast training and sampling of Restricted Boltzmann Machines*, computes
/// exact log-likelihoods the same way for \\(N_h \le 20\\)), whose visible layer may even be
/// real-valued. As a [`Kernel`] it is the exact refresh of rung 0 of parallel trajectory
/// tempering when the first checkpoint has a small hidden layer: every step replaces each chain
/// by an independent exact draw, which leaves \\(p_\beta\\) trivially invariant.
///
/// The sampler belongs to the model and inverse temperature it was built for; used as a kernel,
/// it checks the inverse temperature and the layer sizes, and must be given the same model.
#[derive(Clone, Debug)]
pub struct HiddenEnumeration {
    beta: f64,
    n_visible: usize,
    n_hidden: usize,
    /// Cumulative (unnormalised) marginal of the hidden configurations.
    cdf: Vec<f64>,
}

impl HiddenEnumeration {
    /// Enumerates the hidden configurations of `rbm` at `beta`.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the hidden layer has more than [`MAX_ENUMERATION`]
    /// configurations; [`Error::InvalidParameter`] for a non-finite `beta`.
    pub fn new<V, H>(rbm: &Rbm<V, H>, beta: f64, par: Par) -> ebm_core::Result<Self>
    where
        V: Layer,
        H: DiscreteLayer<Scalar = V::Scalar>,
    {
        if !beta.is_finite() {
            return Err(Error::InvalidParameter {
                name: "beta".into(),
                reason: format!("must be finite, got {beta}"),
            });
        }
        let p = hidden_probabilities(rbm, beta, par)?;
        let mut acc = 0.0;
        let cdf = p
            .iter()
            .map(|q| {
                acc += q;
                acc
            })
            .collect();
        Ok(Self {
            beta,
            n_visible: rbm.visible().width(),
            n_hidden: rbm.hidden().width(),
            cdf,
        })
    }

    /// The inverse temperature it samples at.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// [`HiddenEnumeration::new`] for an RBM of any unit types: `None` when its hidden units
    /// are real-valued (through [`Layer::on_discrete_hidden`], no downcast), for code generic
    /// over every layer.
    ///
    /// # Errors
    /// As [`HiddenEnumeration::new`].
    pub fn of_any<V, H>(rbm: &Rbm<V, H>, beta: f64, par: Par) -> Option<ebm_core::Result<Self>>
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
    {
        struct Build {
            beta: f64,
            par: Par,
        }
        impl<V: Layer> DiscreteHiddenTask<V> for Build {
            type Output = ebm_core::Result<HiddenEnumeration>;
            fn run<H: DiscreteLayer<Scalar = V::Scalar>>(self, rbm: &Rbm<V, H>) -> Self::Output {
                HiddenEnumeration::new(rbm, self.beta, self.par)
            }
        }
        H::on_discrete_hidden(rbm, Build { beta, par })
    }

    /// [`HiddenEnumeration::sample`] on an RBM of any unit types; `None` (nothing drawn) when
    /// its hidden units are real-valued, which no enumeration was built for.
    ///
    /// # Panics
    /// As [`HiddenEnumeration::sample`].
    pub fn sample_any<V, H, R>(
        &self,
        rbm: &Rbm<V, H>,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> Option<()>
    where
        V: Layer,
        H: Layer<Scalar = V::Scalar>,
        R: Rng + Send,
    {
        struct Draw<'a, F: Scalar, R> {
            enumeration: &'a HiddenEnumeration,
            x: &'a mut RbmChains<F>,
            rngs: &'a mut [R],
            par: Par,
        }
        impl<V: Layer, R: Rng + Send> DiscreteHiddenTask<V> for Draw<'_, V::Scalar, R> {
            type Output = ();
            fn run<H: DiscreteLayer<Scalar = V::Scalar>>(self, rbm: &Rbm<V, H>) {
                self.enumeration.sample(rbm, self.x, self.rngs, self.par);
            }
        }
        let draw = Draw {
            enumeration: self,
            x,
            rngs,
            par,
        };
        H::on_discrete_hidden(rbm, draw)
    }

    /// Replaces every chain of `x` by an independent exact draw from \\(p_\beta(v, h)\\) of
    /// `rbm`, the model this sampler was built from. Chain `i` consumes only `rngs[i]`; the
    /// result does not depend on `par`.
    ///
    /// # Panics
    /// If `rngs.len()` differs from the number of chains, or the layer sizes from the model's
    /// this sampler was built for.
    pub fn sample<V, H, R>(
        &self,
        rbm: &Rbm<V, H>,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) where
        V: Layer,
        H: DiscreteLayer<Scalar = V::Scalar>,
        R: Rng + Send,
    {
        assert_eq!(
            rngs.len(),
            x.hidden.ncols(),
            "HiddenEnumeration: one RNG per chain"
        );
        assert!(
            rbm.visible().width() == self.n_visible && rbm.hidden().width() == self.n_hidden,
            "HiddenEnumeration: built for a {}x{} model, given {}x{}",
            self.n_visible,
            self.n_hidden,
            rbm.visible().width(),
            rbm.hidden().width()
        );
        let total = *self.cdf.last().expect("at least one hidden configuration");
        let w = self.n_hidden;
        for (col, rng) in x
            .hidden
            .as_mut_slice()
            .chunks_mut(w.max(1))
            .zip(rngs.iter_mut())
        {
            let u = f64::uniform(rng) * total;
            let k = self
                .cdf
                .partition_point(|&c| c <= u)
                .min(self.cdf.len() - 1);
            rbm.hidden().write_configuration(k as u128, col);
        }
        rbm.sample_visible(x, self.beta, rngs, par);
    }
}

impl<V, H> Kernel<Rbm<V, H>> for HiddenEnumeration
where
    V: Layer,
    H: DiscreteLayer<Scalar = V::Scalar>,
    Rbm<V, H>: ConditionalSampler<State = RbmChains<V::Scalar>>,
{
    type Info = ();

    /// # Panics
    /// If `beta` is not the inverse temperature the sampler was built for, or as
    /// [`HiddenEnumeration::sample`].
    fn step<R: Rng + Send>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) {
        assert!(
            beta == self.beta,
            "HiddenEnumeration: built for beta = {}, stepped at beta = {beta}",
            self.beta
        );
        self.sample(model, x, rngs, par);
    }
}

/// Replaces every chain of `x` by an independent exact draw of \\((v, h)\\) from the tempered
/// joint \\(p_\beta(v, h)\\), by enumerating the hidden layer (see [`HiddenEnumeration`],
/// which keeps the enumeration for repeated draws).
///
/// Chain `i` consumes only `rngs[i]`; the result does not depend on `par`.
///
/// # Errors
/// [`Error::TooLarge`] if the hidden layer has more than [`MAX_ENUMERATION`] configurations.
///
/// # Panics
/// If `rngs.len() != x.visible.ncols()` or `x` does not have the model's shape.
pub fn sample_by_hidden<V, H, R>(
    rbm: &Rbm<V, H>,
    x: &mut RbmChains<V::Scalar>,
    beta: f64,
    rngs: &mut [R],
    par: Par,
) -> ebm_core::Result<()>
where
    V: Layer,
    H: DiscreteLayer<Scalar = V::Scalar>,
    R: Rng + Send,
{
    HiddenEnumeration::new(rbm, beta, par)?.sample(rbm, x, rngs, par);
    Ok(())
}

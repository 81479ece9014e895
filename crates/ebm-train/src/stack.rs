//! Layer-by-layer training of a stack of RBMs for stacked tempering (paper 002, *Accelerated
//! sampling with stacked restricted Boltzmann machines*, §3.1): RBM 1 learns the data; RBM
//! \\(n + 1\\) learns one sampled hidden representation \\(h \sim P_n(h \mid v^k)\\) of each
//! training point \\(v^k\\) of RBM \\(n\\). Each RBM is trained once, with the ordinary
//! [`Trainer`], and frozen; there is no joint fine-tuning.

use crate::data::TrainingData;
use crate::layers::TrainableLayer;
use crate::negative::NegativePhase;
use crate::params::initial_model;
use crate::trainer::{TrainInfo, Trainer};
use ebm_core::{ConditionalSampler, Error, Observer, Par, Result, RngStreams};
use ebm_models::{Rbm, Stack};

/// The training set of the RBM above `rbm`: for each sample \\(v^k\\) of `data` (in order,
/// weights kept), **one draw** \\(h^k \sim P(h \mid v^k)\\) of `rbm` at \\(\beta = 1\\), not the
/// conditional mean (paper 002, §3.1: the representations are "obtained by sampling the
/// conditional probabilities"). Sample `k` uses stream `k` of streams derived from `seed`, so
/// the result is fixed by the seed and independent of `par`.
///
/// # Errors
/// [`Error::ShapeMismatch`] if the data do not match the visible layer of `rbm`.
pub fn sampled_representations<V, H>(
    rbm: &Rbm<V, H>,
    data: &TrainingData<V::Scalar>,
    seed: u64,
    par: Par,
) -> Result<TrainingData<V::Scalar>>
where
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    Error::check_len(
        "rows of the training data (visible width)",
        rbm.visible().width(),
        data.samples().nrows(),
    )?;
    let mut chains = rbm.default_chains(data.n_samples());
    chains.visible.copy_from(data.samples());
    let mut rngs = RngStreams::new(seed, data.n_samples());
    rbm.sample_hidden(&mut chains, 1.0, rngs.as_mut_slice(), par);
    TrainingData::new(rbm.hidden(), chains.hidden)?.with_weights(data.weights().to_vec())
}

/// Trains a [`Stack`] bottom first (paper 002, §3.1): RBM 1 with visible units `visible` and
/// hidden units `hidden[0]` on the data, then RBM \\(n + 1\\) with visible units like
/// `hidden[n - 1]` and hidden units `hidden[n]` on [`sampled_representations`] of the data of
/// RBM \\(n\\). Every RBM is initialised by [`initial_model`] (visible fields from its data's
/// frequencies, weights of standard deviation `weight_std`) and trained for `updates` updates
/// of `trainer`.
#[derive(Clone, Debug, PartialEq)]
pub struct StackTrainer<P> {
    /// The trainer of every RBM of the stack.
    pub trainer: Trainer<P>,
    /// Parameter updates per RBM.
    pub updates: u64,
    /// Standard deviation of the initial weights.
    pub weight_std: f64,
}

/// Reports `(rbm index, update, info)` to a closure; the adapter between [`Trainer::run`] and
/// the per-layer observer of [`StackTrainer::train`].
struct PerLayer<'a, F>(usize, &'a mut F);

impl<F: FnMut(usize, u64, &TrainInfo) -> Result<()>> Observer<TrainInfo> for PerLayer<'_, F> {
    fn observe(&mut self, step: u64, info: &TrainInfo) -> Result<()> {
        (self.1)(self.0, step, info)
    }
}

impl<P> StackTrainer<P> {
    /// Trains the stack; `observer(n, update, info)` sees every update of RBM `n` (0-based,
    /// 0 the bottom). RBM `n` uses seeds derived from `seed` and `n` (training and the
    /// representations passed up), so the stack is fixed by `seed`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no hidden layer; as [`Trainer::init`] and
    /// [`Trainer::run`] for each RBM, and [`Stack::new`].
    pub fn train<V, H, F>(
        &self,
        visible: V,
        hidden: Vec<H>,
        data: &TrainingData<V::Scalar>,
        seed: u64,
        par: Par,
        mut observer: F,
    ) -> Result<Stack<V, H>>
    where
        V: TrainableLayer,
        H: TrainableLayer<Scalar = V::Scalar>,
        P: NegativePhase<V, H> + NegativePhase<H, H>,
        F: FnMut(usize, u64, &TrainInfo) -> Result<()>,
    {
        let mut layers = hidden.into_iter();
        let first = layers.next().ok_or_else(|| Error::InvalidParameter {
            name: "hidden".into(),
            reason: "a stack needs at least one hidden layer".into(),
        })?;
        let seed_of = |n: usize| seed ^ (n as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let model = initial_model(visible, first.clone(), Some(data), self.weight_std, seed)?;
        let mut state = self.trainer.init(model, data, seed, par)?;
        self.trainer.run(
            &mut state,
            data,
            None,
            self.updates,
            par,
            PerLayer(0, &mut observer),
        )?;
        let bottom = state.model;
        let mut below_data = sampled_representations(&bottom, data, seed_of(0), par)?;
        let mut below_hidden = first;
        let mut upper: Vec<Rbm<H, H>> = Vec::new();
        for (n, h) in layers.enumerate().map(|(i, h)| (i + 1, h)) {
            let model = initial_model(
                below_hidden,
                h.clone(),
                Some(&below_data),
                self.weight_std,
                seed_of(n),
            )?;
            let mut state = self.trainer.init(model, &below_data, seed_of(n), par)?;
            self.trainer.run(
                &mut state,
                &below_data,
                None,
                self.updates,
                par,
                PerLayer(n, &mut observer),
            )?;
            below_data = sampled_representations(&state.model, &below_data, seed_of(n), par)?;
            below_hidden = h;
            upper.push(state.model);
        }
        Stack::new(bottom, upper)
    }
}

use crate::{Chains, Par, Scalar};
use rand::Rng;

/// A family of Boltzmann distributions \\(p_\beta(x) \propto e^{-E_\beta(x)}\\) over a state
/// space, indexed by the inverse temperature \\(\beta\\), evaluated for a whole batch of chains.
///
/// For an RBM whose chains are tracked on the visible layer, \\(E_\beta\\) is the tempered
/// free energy \\(F_\beta(v)\\) of the marginal law of \\(v\\) in the tempered joint
/// \\(e^{-\beta E(v, h)}\\); it is *not* \\(\beta F_1(v)\\) in general. Implementations must
/// return the energy of exactly the law their samplers sample: acceptance tests elsewhere rely
/// on it.
pub trait EnergyModel: Sync {
    /// Floating-point type of the parameters and chains.
    type Scalar: Scalar;
    /// A batch of chains (see [`Chains`]).
    type State: Chains;

    /// Writes \\(E_\beta(x_i)\\) for every chain `i` of `x` into `out`.
    ///
    /// # Panics
    /// If `out.len() != x.n_chains()` or `x` does not have the model's shape.
    // ANCHOR: energies
    fn energies(&self, x: &Self::State, beta: f64, out: &mut [f64], par: Par);
    // ANCHOR_END: energies

    /// Writes \\(E_{\beta_j}(x_i)\\) for every chain `i` of `x` and every inverse temperature
    /// `betas[j]` into `out[i * betas.len() + j]`.
    ///
    /// The default calls [`EnergyModel::energies`] once per temperature. Models whose energy
    /// at several temperatures shares most of its cost override it (an RBM computes the
    /// inputs \\(W^\top v\\) once): a temperature-ladder exchange needs each state's energy at
    /// two neighbouring temperatures.
    ///
    /// # Panics
    /// If `out.len() != x.n_chains() * betas.len()` or `x` does not have the model's shape.
    fn energies_at(&self, x: &Self::State, betas: &[f64], out: &mut [f64], par: Par) {
        let (n, m) = (x.n_chains(), betas.len());
        assert_eq!(out.len(), n * m, "energies_at: output length");
        let mut e = vec![0.0; n];
        for (j, &beta) in betas.iter().enumerate() {
            self.energies(x, beta, &mut e, par);
            for (i, v) in e.iter().enumerate() {
                out[i * m + j] = *v;
            }
        }
    }

    /// A batch of `n_chains` chains in a valid initial configuration (all units in their first
    /// state); callers draw random or exact initial states from it.
    fn new_state(&self, n_chains: usize) -> Self::State;
}

/// A product that an energy evaluation and the next block Gibbs sweep share, kept between
/// them so that it is computed once: for an RBM, the hidden inputs \\(W^\top v\\) that both
/// the free energy \\(F_\beta(v)\\) and the draw of \\(h \mid v\\) start from.
///
/// Parallel tempering evaluates every state's energy at two temperatures before it exchanges
/// states, then explores each rung with a Gibbs sweep that begins with \\(h \mid v\\): with a
/// kept product the sweep skips the largest product of the round. A model with nothing to
/// keep implements the trait with an empty body (every method has a default that keeps
/// nothing and computes as [`EnergyModel`] does):
///
/// ```
/// # use ebm_core::{EnergyModel, Par, ProductCache};
/// # use nalgebra::DMatrix;
/// # struct Ising;
/// # impl EnergyModel for Ising {
/// #     type Scalar = f64;
/// #     type State = DMatrix<f64>;
/// #     fn energies(&self, _: &DMatrix<f64>, _: f64, _: &mut [f64], _: Par) {}
/// #     fn new_state(&self, n: usize) -> DMatrix<f64> { DMatrix::zeros(1, n) }
/// # }
/// impl ProductCache for Ising {}
/// ```
///
/// The caller owns the kept buffer and is responsible for its freshness: a product kept for a
/// state is valid until that state or the model changes, and nothing here checks it.
pub trait ProductCache: EnergyModel {
    /// [`EnergyModel::energies_at`], also writing into `kept` the product that the first
    /// half-step of a block Gibbs sweep from `x` computes, when the energies need the same one
    /// (for an RBM: \\(W^\top v\\), in `kept.hidden`), so that
    /// [`ProductCache::sample_hidden_from_kept`] can draw \\(h \mid v\\) without recomputing
    /// it. Returns whether it kept anything; the default keeps nothing. `kept` may hold any
    /// state of the same model (its buffers are reused); only the product is written (the
    /// rest of `kept` is unspecified), so `kept` belongs to `x` as it is now: the caller
    /// tracks whether `x` has changed since.
    ///
    /// # Panics
    /// As [`EnergyModel::energies_at`].
    fn energies_at_keeping(
        &self,
        x: &Self::State,
        betas: &[f64],
        out: &mut [f64],
        kept: &mut Self::State,
        par: Par,
    ) -> bool {
        let _ = kept;
        self.energies_at(x, betas, out, par);
        false
    }

    /// [`EnergyModel::energies_at`] computed from the product that
    /// [`ProductCache::energies_at_keeping`] left in `kept`, bit for bit the same numbers, and
    /// returns `true`; or returns `false`, writing nothing, if `kept` does not have the shape
    /// of a product for `x` or the model keeps no product (the default). The caller
    /// guarantees that this model computed `kept` from the current configurations of `x`
    /// (nothing checks them: a stale product gives wrong energies). A parallel-tempering
    /// round that proposes every neighbouring pair in turn uses it for the rung whose product
    /// the previous pair kept.
    ///
    /// # Panics
    /// As [`EnergyModel::energies_at`].
    fn energies_from_kept(
        &self,
        x: &Self::State,
        betas: &[f64],
        out: &mut [f64],
        kept: &Self::State,
        par: Par,
    ) -> bool {
        let _ = (x, betas, out, kept, par);
        false
    }

    /// Draws \\(h \sim p_\beta(h \mid v)\\) for every chain of `x` from the product kept by
    /// [`ProductCache::energies_at_keeping`], bit for bit as
    /// [`ConditionalSampler::sample_hidden`] would (same numbers, same random numbers from
    /// each chain's stream), and returns `true`; or returns `false`, touching nothing, if
    /// `kept` does not have the shape of a product for `x` or the model keeps no product (the
    /// default). As for [`ProductCache::energies_from_kept`], the caller guarantees that this
    /// model computed `kept` from the current configurations of `x`. The contents of `kept`
    /// are unspecified afterwards.
    fn sample_hidden_from_kept<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        kept: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) -> bool {
        let _ = (x, kept, beta, rngs, par);
        false
    }
}

/// Block sampling of a bipartite model: each layer given the other, for every chain, at inverse
/// temperature \\(\beta\\). Alternating Gibbs sampling is written once on top of this trait.
///
/// Chain `i` consumes only `rngs[i]`.
pub trait ConditionalSampler: EnergyModel {
    /// Replaces the hidden layer of every chain by a draw from \\(p_\beta(h \mid v)\\).
    ///
    /// # Panics
    /// If `rngs.len() != x.n_chains()`.
    fn sample_hidden<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    );

    /// Replaces the visible layer of every chain by a draw from \\(p_\beta(v \mid h)\\).
    ///
    /// # Panics
    /// If `rngs.len() != x.n_chains()`.
    fn sample_visible<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    );
}

/// A Markov transition that leaves \\(p_\beta\\) of `M` exactly invariant.
///
/// A kernel value holds configuration only (e.g. a number of sweeps); the chains and their RNG
/// streams are passed in, and each step returns a small typed info value.
pub trait Kernel<M: EnergyModel + ?Sized>: Sync {
    /// What one step reports (acceptance rates, counts).
    type Info: Clone + std::fmt::Debug;

    /// Applies the transition once to every chain of `x`; chain `i` consumes only `rngs[i]`.
    ///
    /// # Panics
    /// If `rngs.len() != x.n_chains()` or `x` does not match the model's shape.
    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> Self::Info;

    /// Whether [`Kernel::step`] begins with the exact block draw
    /// [`ConditionalSampler::sample_hidden`] (alternating Gibbs sampling does): a caller that
    /// already holds that draw's product (parallel tempering, whose exchange computed it for
    /// the free energies) then draws \\(h \mid v\\) itself and calls
    /// [`Kernel::step_after_hidden`]. The default is `false`.
    fn begins_with_hidden_draw(&self) -> bool {
        false
    }

    /// The rest of [`Kernel::step`] after its first hidden draw (see
    /// [`Kernel::begins_with_hidden_draw`]): the two together give the same result as
    /// [`Kernel::step`], bit for bit. The default (for kernels that do not begin with that
    /// draw) runs the whole step.
    ///
    /// # Panics
    /// As [`Kernel::step`].
    fn step_after_hidden<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> Self::Info {
        self.step(model, beta, x, rngs, par)
    }
}

/// A borrowed kernel is the same kernel: a caller that keeps an expensive kernel (an
/// enumeration, a mesh) lends it to each run instead of cloning it.
impl<M: EnergyModel + ?Sized, K: Kernel<M> + ?Sized> Kernel<M> for &K {
    type Info = K::Info;

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> Self::Info {
        (**self).step(model, beta, x, rngs, par)
    }

    fn begins_with_hidden_draw(&self) -> bool {
        (**self).begins_with_hidden_draw()
    }

    fn step_after_hidden<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> Self::Info {
        (**self).step_after_hidden(model, beta, x, rngs, par)
    }
}

/// A model with an exact \\(\log Z_\beta\\) (a closed form, a sum over few values, an
/// enumeration): the exact reference of annealing and of log-likelihood estimates. A model may
/// offer it without offering exact sampling (see [`ExactSampling`]).
pub trait ExactLogPartition: EnergyModel {
    /// \\(\log Z_\beta = \log \sum_x e^{-E_\beta(x)}\\) (an integral for continuous states).
    fn log_partition(&self, beta: f64) -> f64;
}

/// A model that draws independent exact samples from \\(p_\beta\\): the exact refresh of
/// tempering and rung 0 of trajectory tempering. A model may offer it without an exact
/// \\(\log Z_\beta\\) (see [`ExactLogPartition`]).
pub trait ExactSampling: EnergyModel {
    /// Replaces every chain of `x` by an independent exact draw from \\(p_\beta\\).
    ///
    /// # Panics
    /// If `rngs.len() != x.n_chains()`.
    fn sample_exact<R: Rng + Send>(&self, x: &mut Self::State, beta: f64, rngs: &mut [R], par: Par);
}

/// A model with both an exact \\(\log Z_\beta\\) and exact sampling: rung 0 of annealing and of
/// trajectory tempering, and the reference of exact tests. Implemented automatically for every
/// model that implements [`ExactLogPartition`] and [`ExactSampling`]; algorithms ask for the
/// smaller trait they need.
pub trait Tractable: ExactLogPartition + ExactSampling {}

impl<M: ExactLogPartition + ExactSampling + ?Sized> Tractable for M {}

/// A model whose states can be listed: the reference of the exact tests of the test kit
/// (`ebm-testkit`), which compare what a kernel does with the exact law
/// \\(p_\beta(k) = e^{-E_\beta(k)} / Z_\beta\\) over the states \\(k = 0, \dots, n - 1\\).
///
/// The states listed are those of the part of the chain the energy describes. When a chain
/// carries more than that (an RBM tracked on its visible layer also holds a hidden layer),
/// [`Enumerable::complete`] draws the rest from its exact conditional law, so that a listed
/// state followed by `complete` is an exact draw of the whole chain.
///
/// Implement [`Enumerable::n_states`], [`Enumerable::write_state`] and
/// [`Enumerable::state_index`]; the probabilities follow from [`EnergyModel::energies`].
pub trait Enumerable: EnergyModel {
    /// Number of states \\(n\\) (saturating at `usize::MAX`; exact tests need it small).
    fn n_states(&self) -> usize;

    /// Writes state `k < n_states()` into chain `chain` of `x`.
    ///
    /// # Panics
    /// If `k` or `chain` is out of range.
    fn write_state(&self, k: usize, x: &mut Self::State, chain: usize);

    /// The index \\(k\\) of the state of chain `chain` of `x` (the inverse of
    /// [`Enumerable::write_state`]).
    ///
    /// # Panics
    /// If `chain` is out of range or the chain does not hold a valid state.
    fn state_index(&self, x: &Self::State, chain: usize) -> usize;

    /// Draws the part of every chain that the listed states do not describe from its exact
    /// conditional law given the listed part. The default does nothing (every part of a chain
    /// is listed).
    fn complete<R: Rng + Send>(&self, x: &mut Self::State, beta: f64, rngs: &mut [R], par: Par) {
        let _ = (x, beta, rngs, par);
    }

    /// The unnormalised log-probabilities \\(-E_\beta(k)\\) of every state, computed by
    /// [`EnergyModel::energies`] on a batch holding all states.
    fn log_weights(&self, beta: f64, par: Par) -> Vec<f64> {
        let n = self.n_states();
        let mut x = self.new_state(n);
        for k in 0..n {
            self.write_state(k, &mut x, k);
        }
        let mut e = vec![0.0; n];
        self.energies(&x, beta, &mut e, par);
        e.iter().map(|e| -e).collect()
    }

    /// The exact law \\(p_\beta(k)\\) of every state (summing to 1).
    fn probabilities(&self, beta: f64, par: Par) -> Vec<f64> {
        crate::numerics::normalised_exp(&self.log_weights(beta, par))
    }

    /// \\(\log Z_\beta\\) by summing over every state: what an implementation of
    /// [`ExactLogPartition`] for a small model can return.
    fn enumerated_log_partition(&self, beta: f64, par: Par) -> f64 {
        crate::numerics::log_sum_exp(&self.log_weights(beta, par))
    }

    /// Replaces every chain of `x` by an independent exact draw from \\(p_\beta\\): chain `i`
    /// draws its state index from `rngs[i]` by inversion of [`Enumerable::probabilities`], then
    /// [`Enumerable::complete`] draws the rest. What an implementation of [`ExactSampling`] for
    /// a small model can call.
    ///
    /// # Panics
    /// If `rngs.len() != x.n_chains()`.
    fn sample_enumerated<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        assert_eq!(
            rngs.len(),
            x.n_chains(),
            "sample_enumerated: one RNG per chain"
        );
        let p = self.probabilities(beta, par);
        let mut cdf = Vec::with_capacity(p.len());
        let mut acc = 0.0;
        for q in &p {
            acc += q;
            cdf.push(acc);
        }
        for (chain, rng) in rngs.iter_mut().enumerate() {
            let u = f64::uniform(rng) * acc;
            let k = cdf.partition_point(|&c| c <= u).min(p.len() - 1);
            self.write_state(k, x, chain);
        }
        self.complete(x, beta, rngs, par);
    }
}

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
    fn energies(&self, x: &Self::State, beta: f64, out: &mut [f64], par: Par);

    /// Writes \(E_{\beta_j}(x_i)\) for every chain `i` of `x` and every inverse temperature
    /// `betas[j]` into `out[i * betas.len() + j]`.
    ///
    /// The default calls [`EnergyModel::energies`] once per temperature. Models whose energy
    /// at several temperatures shares most of its cost override it (an RBM computes the
    /// inputs \(W^\top v\) once): a temperature-ladder exchange needs each state's energy at
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

    /// [`EnergyModel::energies_at`], also writing into `kept` the product that the first
    /// half-step of a block Gibbs sweep from `x` computes, when the energies need the same one
    /// (for an RBM: \(W^\top v\), with a copy of \(v\)), so that
    /// [`EnergyModel::sample_hidden_from_kept`] can draw \(h \mid v\) without recomputing
    /// it. Returns whether it kept anything; the default keeps nothing. `kept` may hold any
    /// state of the same model (its buffers are reused).
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

    /// Draws \(h \sim p_\beta(h \mid v)\) for every chain of `x` from the product kept by
    /// [`EnergyModel::energies_at_keeping`], bit for bit as
    /// [`ConditionalSampler::sample_hidden`] would (same numbers, same random numbers from
    /// each chain's stream), and returns `true`; or returns `false`, touching nothing, if
    /// `kept` does not belong to the current configurations of `x` or the model keeps no
    /// product (the default). The contents of `kept` are unspecified afterwards.
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

    /// A batch of `n_chains` chains in a valid initial configuration (all units in their first
    /// state); callers draw random or exact initial states from it.
    fn new_state(&self, n_chains: usize) -> Self::State;
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
    /// the free energies) then draws \(h \mid v\) itself and calls
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

/// A model with exact \\(\log Z_\beta\\) and exact sampling: rung 0 of annealing and of
/// trajectory tempering, and the reference of exact tests.
pub trait Tractable: EnergyModel {
    /// \\(\log Z_\beta = \log \sum_x e^{-E_\beta(x)}\\) (an integral for continuous states).
    fn log_partition(&self, beta: f64) -> f64;

    /// Replaces every chain of `x` by an independent exact draw from \\(p_\beta\\).
    ///
    /// # Panics
    /// If `rngs.len() != x.n_chains()`.
    fn sample_exact<R: Rng + Send>(&self, x: &mut Self::State, beta: f64, rngs: &mut [R], par: Par);
}

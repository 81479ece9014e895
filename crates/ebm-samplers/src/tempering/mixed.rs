//! A ladder of the bottom RBM of a stack joined to the stack at the target: one linear ladder
//! \\([\text{rung } 0, \dots, \text{rung } K - 1 = \text{bottom RBM}] + [\text{RBM } 2, \dots,
//! \text{RBM } L]\\) whose target (the bottom RBM at \\(\beta = 1\\)) is an interior rung,
//! combining parallel tempering (a [`super::TemperatureLadder`]) or parallel trajectory
//! tempering (a [`super::TrajectoryLadder`] of checkpoints ending at the bottom RBM) with
//! stacked tempering (paper 002, *Accelerated sampling with stacked restricted Boltzmann
//! machines*, §5, "combine with PTT").

use super::ladder::{Exchange, Ladder, Rung};
use super::stacked::StackLadder;
use ebm_core::{ConditionalSampler, Error, Par};
use ebm_models::{Layer, RbmChains, StackedRbm};
use rand::Rng;

/// A ladder `ladder` of the bottom RBM whose last rung is the bottom RBM at
/// \\(\beta = 1\\) (a [`super::TemperatureLadder`] of [`StackedRbm::Bottom`], or a
/// [`super::TrajectoryLadder`] of checkpoints ending at the bottom RBM, wrapped by
/// [`super::TrajectoryLadder::map`]`(StackedRbm::Bottom)`), followed by
/// the upper RBMs of `stack`: rungs \\(0, \dots, K - 1\\) are the ladder's, rung \\(K - 1\\) is
/// the target, and rung \\(K + m - 2\\) holds RBM \\(m = 2, \dots, L\\).
///
/// Pairs inside the ladder exchange whole chains with the ladder's own Metropolis ratio
/// ([`Exchange`] of a [`Ladder`]), then redraw both hidden layers given the visible ones; the
/// pair \\((K - 1, K)\\) and the pairs above it are the
/// stack's pairs, with its exchange of \\(h_n\\) and \\(v_{n+1}\\) and its mandatory refresh
/// ([`StackLadder`]). Each exchange leaves its pair's product law invariant, so the PT loop
/// on this ladder samples \\(\prod_k p_k\\): the target rung's chains follow the bottom RBM.
/// The loop's round-trip diagnostics run between rung 0 (the hottest rung) and the top of the
/// stack, not to the target.
#[derive(Clone, Debug)]
pub struct MixedLadder<A, V: Layer, H: Layer<Scalar = V::Scalar>> {
    ladder: A,
    stack: StackLadder<V, H>,
}

impl<A, V, H> MixedLadder<A, V, H>
where
    A: Ladder<Model = StackedRbm<V, H>>,
    V: Layer + PartialEq,
    H: Layer<Scalar = V::Scalar> + PartialEq,
{
    /// Joins `ladder` to `stack` at the target.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless the last rung of `ladder` is the stack's bottom RBM
    /// at \\(\beta = 1\\).
    pub fn new(ladder: A, stack: StackLadder<V, H>) -> ebm_core::Result<Self> {
        let last = ladder.rung(ladder.n_rungs() - 1);
        let is_bottom = matches!(last.model, StackedRbm::Bottom(r) if r == stack.stack().bottom());
        if !is_bottom || last.beta != 1.0 {
            return Err(Error::InvalidParameter {
                name: "ladder".into(),
                reason: format!(
                    "its last rung must be the stack's bottom RBM at beta = 1, got {} at beta = {}",
                    if is_bottom {
                        "the bottom RBM"
                    } else {
                        "another model"
                    },
                    last.beta
                ),
            });
        }
        Ok(Self { ladder, stack })
    }
}

impl<A, V, H> MixedLadder<A, V, H>
where
    A: Ladder<Model = StackedRbm<V, H>>,
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    /// The rung of the target (the bottom RBM at \\(\beta = 1\\)): the ladder's last.
    pub fn target(&self) -> usize {
        self.ladder.n_rungs() - 1
    }

    /// The stack's pair index of this ladder's pair \\((j, j + 1)\\), \\(j \ge\\)
    /// [`MixedLadder::target`]: rung \\(j\\) holds RBM \\(n = j - K + 2\\), and the stack's pair
    /// of RBM \\(n + 1\\) (its lower rung) with RBM \\(n\\) is \\(L - n - 1\\).
    fn stack_pair(&self, j: usize) -> usize {
        let n = j - self.target() + 1;
        self.stack.stack().len() - n - 1
    }
}

impl<A, V, H> Exchange for MixedLadder<A, V, H>
where
    A: Ladder<Model = StackedRbm<V, H>>,
    V: Layer,
    H: Layer<Scalar = V::Scalar>,
{
    type State = RbmChains<V::Scalar>;
    type RungModel = StackedRbm<V, H>;

    fn n_exchange_rungs(&self) -> usize {
        self.ladder.n_rungs() + self.stack.stack().len() - 1
    }

    fn explored(&self, k: usize) -> Rung<'_, StackedRbm<V, H>> {
        let target = self.target();
        if k <= target {
            self.ladder.rung(k)
        } else {
            // RBM k - K + 2 (1-based) sits at the stack's rung L - (k - K + 2).
            self.stack
                .explored(self.stack.stack().len() + target - k - 1)
        }
    }

    /// The ladder's ratio inside the ladder; above the target, the stack's
    /// ([`StackLadder::delta_free_energy`]) with the roles of the two rungs exchanged (here the
    /// lower rung holds the lower RBM).
    fn log_accept(&self, k: usize, lo: &Self::State, hi: &Self::State, out: &mut [f64], par: Par) {
        if k < self.target() {
            self.ladder.log_accept(k, lo, hi, out, par);
        } else {
            self.stack.log_accept(self.stack_pair(k), hi, lo, out, par);
        }
    }

    /// Inside the ladder, whole chains, then the exact refresh \\(h \sim P_{\beta}(h \mid v)\\)
    /// on both rungs; above the target, the stack's exchange with its refresh.
    ///
    /// The ladder's ratio is that of the visible marginals (free energies), so its swap is
    /// valid for the \\(v\\)'s only; a plain PT loop does not care, since every Gibbs sweep
    /// first redraws \\(h \mid v\\). Here the stack's exchange at the target uses \\(h_1\\)
    /// directly, so the hidden layers are redrawn after each temperature swap (the product
    /// of the joint laws is then invariant; without it, it is not: see the tests).
    fn exchange<R: Rng + Send>(
        &self,
        k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        rngs: &mut [R],
        par: Par,
    ) {
        if k < self.target() {
            self.ladder.exchange(k, lo, hi, accept, rngs, par);
            for (x, rung) in [(lo, self.ladder.rung(k)), (hi, self.ladder.rung(k + 1))] {
                rung.model.sample_hidden(x, rung.beta, rngs, par);
            }
        } else {
            self.stack
                .exchange(self.stack_pair(k), hi, lo, accept, rngs, par);
        }
    }
}

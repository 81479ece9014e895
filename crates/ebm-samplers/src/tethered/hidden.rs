use super::kernel::{Tethered, TetheredInfo};
use super::order::{OrderParameter, Tether};
use ebm_core::{Kernel, Par, Result};
use ebm_models::{DiscreteLayer, Layer, Rbm, RbmChains};
use rand::Rng;

/// Hidden-layer tethering (the variant of the paper's footnote 1 and §8; experimental in the
/// reference code): the tether acts on order parameters of the **hidden** layer,
/// \\(m(h) = h \cdot \omega / \sqrt{N_h}\\), and the target law is
/// \\(p_{\hat m}(v, h) \propto e^{-\beta E(v, h) - B(m(h); \hat m)}\\). One sweep draws
/// \\(v \sim p_\beta(v \mid h)\\) by block Gibbs (the visibles stay conditionally independent,
/// since the tether does not involve them), then visits the hidden units in order with
/// single-site Metropolis under the tether. The sequential part then costs \\(N_h\\) proposals
/// instead of \\(N_v\\).
///
/// Implemented as the visible-tethered kernel [`Tethered`] on the transposed model
/// (\\(E'(h, v) = E(v, h)\\), [`Rbm::transposed`]) with the layers of the chains exchanged for
/// the step, so both kernels share one tested Metropolis rule. The transposed model is built at
/// each step (one copy of \\(W\\), negligible next to the sweeps for the sizes TMC is used at).
/// Chain `c` consumes only `rngs[c]`.
#[derive(Clone, Debug)]
pub struct HiddenTethered<T: Tether> {
    inner: Tethered<T>,
}

impl<T: Tether> HiddenTethered<T> {
    /// A kernel doing `sweeps` sweeps per step, tethering the hidden order parameters `order`
    /// (of the hidden layer's width, e.g. [`OrderParameter::from_weights`] of
    /// [`Rbm::transposed`]) of chain `c` to `targets[c * k..(c + 1) * k]`.
    ///
    /// # Errors
    /// As [`Tethered::new`].
    pub fn new(order: OrderParameter, tether: T, targets: Vec<f64>, sweeps: usize) -> Result<Self> {
        Ok(Self {
            inner: Tethered::new(order, tether, targets, sweeps)?,
        })
    }

    /// The underlying visible-tethered kernel (acting on the transposed model).
    pub fn inner(&self) -> &Tethered<T> {
        &self.inner
    }
}

impl<V, H, T> Kernel<Rbm<V, H>> for HiddenTethered<T>
where
    V: Layer,
    H: DiscreteLayer<Scalar = V::Scalar>,
    T: Tether,
{
    /// As [`Tethered`]'s, with `order` the hidden order parameters.
    type Info = TetheredInfo;

    /// # Panics
    /// As [`Tethered`]'s step, for the hidden layer.
    fn step<R: Rng + Send>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> TetheredInfo {
        let transposed = model.transposed();
        let mut swapped = RbmChains {
            visible: std::mem::take(&mut x.hidden),
            hidden: std::mem::take(&mut x.visible),
        };
        let info = self.inner.step(&transposed, beta, &mut swapped, rngs, par);
        x.visible = swapped.hidden;
        x.hidden = swapped.visible;
        info
    }
}

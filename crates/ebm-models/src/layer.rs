//! Unit layers: the per-unit potentials from which every RBM is built.
//!
//! A layer is a collection of `n_units` independent units, unit `i` occupying a slot of
//! [`Layer::unit_width`] consecutive values in a chain's column (1 for scalar units). In an RBM
//! with energy
//!
//! \\[ E(v, h) = U_V(v) + U_H(h) - v^\top W h, \\]
//!
//! a layer provides its potential \\(U(x) = \sum_i U_i(x_i)\\), the tempered cumulant
//! generating function of each unit given its input \\(I_i\\) from the other layer,
//!
//! \\[ \Gamma^\beta_i(I) = \log \sum_{x} e^{\beta(-U_i(x) + I x)} \\]
//!
//! (an integral for continuous units), and exact sampling from the conditional law
//! \\(p_\beta(x_i \mid I_i) = e^{\beta(-U_i(x_i) + I_i x_i) - \Gamma^\beta_i(I_i)}\\).
//! Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*.

use ebm_core::Scalar;
use rand::Rng;

use crate::Rbm;

/// A named parameter tensor of a layer: `(name, shape, values)`, values in row-major order.
pub type NamedTensor<F> = (&'static str, Vec<usize>, Vec<F>);

/// Looks up a tensor of a layer by name, returning its shape and row-major values.
pub type TensorLookup<'a, F> = &'a dyn Fn(&str) -> Option<(Vec<usize>, Vec<F>)>;

/// A layer of independent units with a potential, a cumulant generating function and a
/// conditional sampler. Methods act on one chain (a contiguous slice); the RBM loops over
/// chains, so there is no per-element dynamic dispatch.
pub trait Layer: Clone + std::fmt::Debug + Send + Sync {
    /// Floating-point type of the parameters.
    type Scalar: Scalar;

    /// Name used in model files (e.g. `"bernoulli"`).
    const KIND: &'static str;

    /// Number of units.
    fn n_units(&self) -> usize;

    /// Number of values per unit in a chain's column (1 for scalar units, `q` for one-hot Potts).
    fn unit_width(&self) -> usize {
        1
    }

    /// Number of values per chain: `n_units() * unit_width()`.
    fn width(&self) -> usize {
        self.n_units() * self.unit_width()
    }

    /// The smallest and largest value of the linear statistic \\(c \cdot x_i\\) over the
    /// states \\(x_i\\) of unit `i` (`c` has one coefficient per value of a unit,
    /// [`Layer::unit_width`]), for units with finitely many states; `None` (the default) for
    /// real-valued units. By Popoviciu's inequality the conditional variance of the statistic
    /// is then at most \\((\max - \min)^2 / 4\\) whatever the unit's input: what tethered Monte
    /// Carlo needs to bound how sharply a hidden unit can bend the free energy
    /// (`ebm_samplers::tethered::tether_curvature_bound`).
    ///
    /// # Panics
    /// If `i >= n_units()` or `c.len() != unit_width()` (discrete layers).
    fn unit_statistic_range(&self, i: usize, c: &[f64]) -> Option<(f64, f64)> {
        let _ = (i, c);
        None
    }

    /// Number of configurations of the layer when its units are discrete
    /// ([`DiscreteLayer::n_configurations`] of Bernoulli, spin and Potts layers); `None` (the
    /// default) for real-valued units.
    fn discrete_configurations(&self) -> Option<u128> {
        None
    }

    /// Runs `task` on `rbm`, whose hidden layer is this one, when this layer is a
    /// [`DiscreteLayer`] (Bernoulli, spin, Potts); `None` (the default) otherwise.
    ///
    /// Static dispatch: the discrete layers override it, so code generic over any [`Layer`]
    /// (rung 0 of parallel tempering, an exact start, training's exact checks) reaches the
    /// enumeration of the hidden layer without a downcast, e.g.
    /// [`HiddenEnumeration::of_any`](crate::exact::HiddenEnumeration::of_any).
    fn on_discrete_hidden<V, T>(rbm: &Rbm<V, Self>, task: T) -> Option<T::Output>
    where
        Self: Sized,
        V: Layer<Scalar = Self::Scalar>,
        T: DiscreteHiddenTask<V>,
    {
        let _ = (rbm, task);
        None
    }

    /// Writes a valid default configuration into one chain's slot (zero for real and
    /// \\(\{0,1\}\\) units, \\(-1\\) for spins, state 0 for Potts).
    fn fill_default(&self, x: &mut [Self::Scalar]) {
        x.fill(Self::Scalar::from_f64(0.0));
    }

    /// The potential \\(U(x) = \sum_i U_i(x_i)\\) of one chain's configuration `x`
    /// (untempered; the tempered potential is \\(\beta U\\)).
    fn energy(&self, x: &[Self::Scalar]) -> f64;

    /// [`Layer::energy`] of consecutive configurations `xs` (`out.len()` chains of
    /// [`Layer::width`] values each) into `out`, bit for bit. The default calls it chain by
    /// chain; a layer whose potential is one sequential sum per chain overrides it to run the
    /// sums of several chains side by side (each in its own order, so the same numbers).
    ///
    /// # Panics
    /// If `xs.len() != out.len() * self.width()`.
    fn energies(&self, xs: &[Self::Scalar], out: &mut [f64]) {
        let w = self.width();
        assert_eq!(xs.len(), out.len() * w, "energies: configurations length");
        for (k, o) in out.iter_mut().enumerate() {
            *o = self.energy(&xs[k * w..(k + 1) * w]);
        }
    }

    /// The potential \\(U_i(x_i)\\) of unit `i` alone, given its slot `x_i`.
    fn unit_energy(&self, i: usize, x_i: &[Self::Scalar]) -> f64;

    /// \\(\sum_i \Gamma^\beta_i(I_i)\\) for one chain's inputs `inputs` (the couplings' part
    /// only: the layer adds its own fields).
    fn cgf(&self, inputs: &[Self::Scalar], beta: f64) -> f64;

    /// [`Layer::cgf`] of one chain's inputs at each of `betas` into `out`, bit for bit. The
    /// default calls it per temperature; binary layers evaluate two temperatures in one pass
    /// ([`ebm_core::numerics::binary_cgf_sums`]), as a tempering exchange needs them.
    ///
    /// # Panics
    /// If `out.len() != betas.len()`.
    fn cgf_at(&self, inputs: &[Self::Scalar], betas: &[f64], out: &mut [f64]) {
        assert_eq!(out.len(), betas.len(), "cgf_at: one output per temperature");
        for (o, &beta) in out.iter_mut().zip(betas) {
            *o = self.cgf(inputs, beta);
        }
    }

    /// Overwrites `inputs` (one chain's inputs from the other layer) with a draw from
    /// \\(p_\beta(x \mid I)\\), consuming `rng`.
    fn sample_in_place<R: Rng + ?Sized>(&self, inputs: &mut [Self::Scalar], beta: f64, rng: &mut R);

    /// [`Layer::sample_in_place`] on each chain of a chunk: `columns` holds one column of
    /// [`Layer::width`] inputs per chain, chain `c` consuming only `rngs[c]`. Layers may
    /// override it with a pass over several chains at once that gives the same draws bit for
    /// bit (the binary layers advance four chains' streams together).
    #[inline(always)]
    fn sample_columns_in_place<R: Rng>(
        &self,
        columns: &mut [Self::Scalar],
        beta: f64,
        rngs: &mut [R],
    ) {
        sample_each_column(self, columns, beta, rngs);
    }

    /// Overwrites `inputs` with the conditional mean \\(E_\beta[x \mid I]\\).
    fn mean_in_place(&self, inputs: &mut [Self::Scalar], beta: f64);

    /// Overwrites `inputs` with the conditional variance \\(\operatorname{Var}_\beta[x \mid I]\\)
    /// of each value (for one-hot Potts slots, the variance of each indicator).
    fn variance_in_place(&self, inputs: &mut [Self::Scalar], beta: f64);

    /// Number of parameters: the total size of [`Layer::tensors`].
    fn n_parameters(&self) -> usize {
        self.tensors().iter().map(|t| t.2.len()).sum()
    }

    /// Writes \\(\partial U(x) / \partial \phi_k\\) for every parameter \\(\phi_k\\) (in the order
    /// of [`Layer::tensors`], flattened) into `out` (length [`Layer::n_parameters`]): the
    /// sufficient statistics of the layer for log-likelihood gradients of a visible layer.
    fn energy_gradient(&self, x: &[Self::Scalar], out: &mut [f64]);

    /// Writes \\(E_\beta[\partial U / \partial \phi_k \mid I]\\) into `out`: the statistics of a
    /// hidden layer given its inputs. They satisfy
    /// \\(\partial \Gamma^\beta(I) / \partial \phi_k = -\beta\, E_\beta[\partial U / \partial \phi_k \mid I]\\),
    /// which the tests check by finite differences.
    fn expected_energy_gradient(&self, inputs: &[Self::Scalar], beta: f64, out: &mut [f64]);

    /// The parameters as named flat tensors `(name, shape, values)`, for model files.
    fn tensors(&self) -> Vec<NamedTensor<Self::Scalar>>;

    /// Rebuilds a layer from the tensors written by [`Layer::tensors`].
    ///
    /// # Errors
    /// Missing tensors, wrong shapes, non-finite or out-of-range values.
    fn from_tensors(n_units: usize, get: TensorLookup<'_, Self::Scalar>) -> ebm_core::Result<Self>;
}

/// Work on an RBM whose hidden layer is discrete, for [`Layer::on_discrete_hidden`].
pub trait DiscreteHiddenTask<V: Layer> {
    /// What the task returns.
    type Output;
    /// Runs the task on `rbm`.
    fn run<H: DiscreteLayer<Scalar = V::Scalar>>(self, rbm: &Rbm<V, H>) -> Self::Output;
}

/// The overrides of [`Layer::discrete_configurations`] and [`Layer::on_discrete_hidden`] in the
/// `Layer` implementation of a [`DiscreteLayer`].
macro_rules! discrete_layer_hooks {
    () => {
        fn discrete_configurations(&self) -> Option<u128> {
            Some($crate::DiscreteLayer::n_configurations(self))
        }

        fn on_discrete_hidden<V, T>(rbm: &$crate::Rbm<V, Self>, task: T) -> Option<T::Output>
        where
            V: $crate::Layer<Scalar = Self::Scalar>,
            T: $crate::DiscreteHiddenTask<V>,
        {
            Some(task.run(rbm))
        }
    };
}
pub(crate) use discrete_layer_hooks;

/// A layer whose units take finitely many values, which can therefore be enumerated (exact
/// tests, exact \\(\log Z\\)) and updated one unit at a time (single-site Metropolis).
pub trait DiscreteLayer: Layer {
    /// Number of states of one unit (2 for binary units, `q` for Potts).
    fn unit_states(&self) -> usize;

    /// Writes state `s < unit_states()` into a unit's slot.
    fn write_unit_state(&self, s: usize, slot: &mut [Self::Scalar]);

    /// Reads the state index of a unit's slot.
    ///
    /// # Panics
    /// If the slot does not hold a valid state of this layer.
    fn read_unit_state(&self, slot: &[Self::Scalar]) -> usize;

    /// Number of configurations of the whole layer, saturating at `u128::MAX`.
    fn n_configurations(&self) -> u128 {
        let q = self.unit_states() as u128;
        (0..self.n_units()).fold(1u128, |acc, _| acc.saturating_mul(q))
    }

    /// Writes configuration number `index` (mixed radix, unit 0 least significant) into `x`.
    fn write_configuration(&self, mut index: u128, x: &mut [Self::Scalar]) {
        let q = self.unit_states() as u128;
        let w = self.unit_width();
        for i in 0..self.n_units() {
            self.write_unit_state((index % q) as usize, &mut x[i * w..(i + 1) * w]);
            index /= q;
        }
    }

    /// The index of configuration `x` (inverse of [`DiscreteLayer::write_configuration`]).
    fn configuration_index(&self, x: &[Self::Scalar]) -> u128 {
        let q = self.unit_states() as u128;
        let w = self.unit_width();
        (0..self.n_units()).rev().fold(0u128, |acc, i| {
            acc * q + self.read_unit_state(&x[i * w..(i + 1) * w]) as u128
        })
    }
}

/// A layer whose potential has a linear term per value of its configuration vector, so a
/// linear field can be added to it: \\(U(x) \to U(x) - \delta^\top x\\). Gauge fixing and
/// reparametrisations move terms of \\(v^\top W h\\) that are linear in one layer into that
/// layer's fields through this trait.
pub trait LinearFields: Layer {
    /// Adds `delta[k]` to the field of value `k` of a chain's configuration vector
    /// (`delta.len() == width()`).
    ///
    /// # Panics
    /// If `delta` does not have `width()` values.
    fn add_to_fields(&mut self, delta: &[f64]);
}

/// A layer of binary units with one linear field per unit: \\(U_i(x) = -\theta_i x\\) with
/// \\(x\\) in \\(\{0, 1\}\\) ([`crate::Bernoulli`]) or \\(\{-1, +1\}\\) ([`crate::Spin`]).
/// Converting between the two parametrisations goes through these fields.
pub trait BinaryLayer: DiscreteLayer {
    /// The value of state 0 (0 for Bernoulli, -1 for spins); state 1 is always +1.
    const LOW: f64;
    /// The fields \\(\theta\\).
    fn fields(&self) -> &[Self::Scalar];
    /// Builds the layer from its fields.
    fn with_fields(fields: Vec<Self::Scalar>) -> Self;
}

/// The default of [`Layer::sample_columns_in_place`]: one chain after the other.
#[inline(always)]
pub(crate) fn sample_each_column<L: Layer, R: Rng>(
    layer: &L,
    columns: &mut [L::Scalar],
    beta: f64,
    rngs: &mut [R],
) {
    let width = layer.width().max(1);
    for (col, rng) in columns.chunks_mut(width).zip(rngs.iter_mut()) {
        layer.sample_in_place(col, beta, rng);
    }
}

/// [`Layer::unit_statistic_range`] of a discrete layer, by enumerating the states of unit `i`.
///
/// # Panics
/// If `i >= layer.n_units()` or `c.len() != layer.unit_width()`.
pub fn discrete_statistic_range<L: DiscreteLayer>(layer: &L, i: usize, c: &[f64]) -> (f64, f64) {
    assert!(i < layer.n_units(), "unit {i} of {}", layer.n_units());
    assert_eq!(
        c.len(),
        layer.unit_width(),
        "one coefficient per value of a unit"
    );
    let mut slot = vec![L::Scalar::from_f64(0.0); layer.unit_width()];
    (0..layer.unit_states()).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
        layer.write_unit_state(s, &mut slot);
        let t: f64 = slot.iter().zip(c).map(|(x, c)| x.as_f64() * c).sum();
        (lo.min(t), hi.max(t))
    })
}

#[cfg(test)]
mod tests {
    use crate::{Bernoulli, Gaussian, Layer, Potts, Spin};

    /// The range of a linear statistic of one unit: {0, c} for {0,1} units, {-c, c} for
    /// spins, the smallest and largest coefficient for one-hot Potts units, none for
    /// real-valued units.
    #[test]
    fn unit_statistic_ranges() {
        assert_eq!(
            Bernoulli::<f64>::zeros(2).unit_statistic_range(1, &[3.0]),
            Some((0.0, 3.0))
        );
        assert_eq!(
            Bernoulli::<f32>::zeros(1).unit_statistic_range(0, &[-2.0]),
            Some((-2.0, 0.0))
        );
        assert_eq!(
            Spin::<f64>::zeros(1).unit_statistic_range(0, &[3.0]),
            Some((-3.0, 3.0))
        );
        assert_eq!(
            Potts::<f64>::zeros(2, 3).unit_statistic_range(1, &[1.0, -2.0, 0.5]),
            Some((-2.0, 1.0))
        );
        assert_eq!(
            Gaussian::<f64>::standard(1).unit_statistic_range(0, &[1.0]),
            None
        );
    }
}

//! What training needs from a unit layer beyond [`Layer`]: the domain of its values (to validate
//! data), the independent-unit fields that reproduce given means (the visible-field
//! initialisation from data frequencies), which of its tensors are precisions (kept
//! positive by the optimiser), and whether its units are real-valued (no \\(\beta = 0\\) rung).
//!
//! The gradient itself needs nothing unit-specific: it is written once over
//! [`Layer::energy_gradient`], [`Layer::expected_energy_gradient`] and [`Layer::mean_in_place`]
//! (see [`crate::Moments`]).

use ebm_core::Scalar;
use ebm_models::{
    Bernoulli, DReLU, DiscreteLayer, Gaussian, Layer, LinearFields, Potts, Rbm, ReLU, Spin,
};

/// A layer the trainer can update: a [`Layer`] with linear fields (used by the centred
/// gradient and the Potts zero-sum gauge), a value domain and a data-driven field
/// initialisation.
pub trait TrainableLayer: Layer + LinearFields + 'static {
    /// Names of the tensors (see [`Layer::tensors`]) that are precisions \\(\gamma > 0\\): after
    /// each update the trainer keeps them at or above its `min_precision`.
    const PRECISION_TENSORS: &'static [&'static str] = &[];

    /// `true` for real-valued units, whose conditional laws need \\(\beta > 0\\) (their cumulant
    /// generating function diverges at \\(\beta = 0\\)): tempered negative phases check it.
    const REAL_VALUED: bool = false;

    /// Checks that one chain's slot `x` (length [`Layer::width`]) is a valid configuration of
    /// the layer; returns a description of the first invalid value otherwise.
    fn check_configuration(&self, x: &[Self::Scalar]) -> Result<(), String>;

    /// The same layer with its fields set so that its units, **alone** (zero input from the
    /// other layer, \\(\beta = 1\\)), have means `means` (one per value of a chain's slot,
    /// length [`Layer::width`]): the visible-field initialisation from data frequencies
    /// (Béreux et al., *Fast training and sampling of RBMs*). Other parameters (precisions) are kept.
    ///
    /// Means at the edge of the domain are clipped so that the fields stay finite:
    /// Bernoulli \\(\theta = \operatorname{logit}(m)\\) and spin
    /// \\(\theta = \operatorname{artanh}(m)\\) as their `from_means`, Potts
    /// \\(\theta_a = \log \max(m_a, 10^{-6})\\) shifted to zero sum, Gaussian
    /// \\(\theta = \gamma m\\). ReLU and dReLU layers are returned unchanged (no closed form; they
    /// are hidden layers in practice).
    fn with_means(&self, means: &[f64]) -> Self;

    /// Runs `task` on `rbm`, whose visible layer is this one, when its units are discrete
    /// (Bernoulli, spin or Potts: the units single-site moves apply to, e.g. tethered Monte
    /// Carlo, [`crate::Tmc`]); `None` for real-valued units. Static dispatch: the discrete
    /// layers override it, so a caller generic over any layer reaches the discrete code
    /// without a downcast.
    fn on_discrete<H, T>(rbm: &Rbm<Self, H>, task: T) -> Option<T::Output>
    where
        Self: Sized,
        H: TrainableLayer<Scalar = Self::Scalar>,
        T: DiscreteTask<H>,
    {
        let _ = (rbm, task);
        None
    }
}

/// Work on an RBM whose visible units are discrete, for [`TrainableLayer::on_discrete`].
pub trait DiscreteTask<H: TrainableLayer> {
    /// What the task returns.
    type Output;
    /// Runs the task on `rbm`.
    fn run<V: DiscreteLayer<Scalar = H::Scalar> + TrainableLayer>(
        self,
        rbm: &Rbm<V, H>,
    ) -> Self::Output;
}

/// The discrete-layer method of [`TrainableLayer`]: the task on a discrete visible layer.
macro_rules! discrete_visible_task {
    () => {
        fn on_discrete<H, T>(rbm: &Rbm<Self, H>, task: T) -> Option<T::Output>
        where
            H: TrainableLayer<Scalar = Self::Scalar>,
            T: DiscreteTask<H>,
        {
            Some(task.run(rbm))
        }
    };
}

fn check_values<F: Scalar>(
    kind: &str,
    x: &[F],
    ok: impl Fn(f64) -> bool,
    expected: &str,
) -> Result<(), String> {
    match x.iter().position(|v| !ok(v.as_f64())) {
        None => Ok(()),
        Some(i) => Err(format!(
            "value {} at position {i} is not a {kind} value ({expected})",
            x[i]
        )),
    }
}

impl<F: Scalar> TrainableLayer for Bernoulli<F> {
    discrete_visible_task!();

    fn check_configuration(&self, x: &[F]) -> Result<(), String> {
        check_values("bernoulli", x, |v| v == 0.0 || v == 1.0, "0 or 1")
    }

    fn with_means(&self, means: &[f64]) -> Self {
        Bernoulli::from_means(means)
    }
}

impl<F: Scalar> TrainableLayer for Spin<F> {
    discrete_visible_task!();

    fn check_configuration(&self, x: &[F]) -> Result<(), String> {
        check_values("spin", x, |v| v == -1.0 || v == 1.0, "-1 or +1")
    }

    fn with_means(&self, means: &[f64]) -> Self {
        Spin::from_means(means)
    }
}

impl<F: Scalar> TrainableLayer for Potts<F> {
    discrete_visible_task!();

    fn check_configuration(&self, x: &[F]) -> Result<(), String> {
        check_values("potts", x, |v| v == 0.0 || v == 1.0, "one-hot 0 or 1")?;
        let q = self.q();
        for (i, slot) in x.chunks(q).enumerate() {
            let ones = slot.iter().filter(|v| v.as_f64() == 1.0).count();
            if ones != 1 {
                return Err(format!(
                    "potts unit {i} has {ones} ones in its one-hot slot, expected exactly 1"
                ));
            }
        }
        Ok(())
    }

    fn with_means(&self, means: &[f64]) -> Self {
        let fields: Vec<F> = means
            .iter()
            .map(|&m| F::from_f64(m.max(1e-6).ln()))
            .collect();
        let mut layer = Potts::new(self.q(), fields).expect("finite fields, same q and width");
        layer.zero_sum_fields();
        layer
    }
}

impl<F: Scalar> TrainableLayer for Gaussian<F> {
    const PRECISION_TENSORS: &'static [&'static str] = &["gamma"];
    const REAL_VALUED: bool = true;

    fn check_configuration(&self, x: &[F]) -> Result<(), String> {
        check_values("gaussian", x, f64::is_finite, "finite")
    }

    fn with_means(&self, means: &[f64]) -> Self {
        let theta = self
            .gamma()
            .iter()
            .zip(means)
            .map(|(g, &m)| F::from_f64(g.as_f64() * m))
            .collect();
        Gaussian::new(self.gamma().to_vec(), theta).expect("finite fields, positive precisions")
    }
}

impl<F: Scalar> TrainableLayer for ReLU<F> {
    const PRECISION_TENSORS: &'static [&'static str] = &["gamma"];
    const REAL_VALUED: bool = true;

    fn check_configuration(&self, x: &[F]) -> Result<(), String> {
        check_values("relu", x, |v| v >= 0.0 && v.is_finite(), "finite and >= 0")
    }

    fn with_means(&self, _means: &[f64]) -> Self {
        self.clone()
    }
}

impl<F: Scalar> TrainableLayer for DReLU<F> {
    const PRECISION_TENSORS: &'static [&'static str] = &["gamma_plus", "gamma_minus"];
    const REAL_VALUED: bool = true;

    fn check_configuration(&self, x: &[F]) -> Result<(), String> {
        check_values("drelu", x, f64::is_finite, "finite")
    }

    fn with_means(&self, _means: &[f64]) -> Self {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_initialisation_reproduces_the_means() {
        let b = Bernoulli::<f64>::zeros(3).with_means(&[0.2, 0.5, 0.9]);
        let mut m = [0.0; 3];
        b.mean_in_place(&mut m, 1.0);
        assert!(
            m.iter()
                .zip([0.2, 0.5, 0.9])
                .all(|(a, b)| (a - b).abs() < 1e-12)
        );
        let p = Potts::<f64>::zeros(2, 3).with_means(&[0.2, 0.3, 0.5, 1.0, 0.0, 0.0]);
        let mut m = [0.0; 6];
        p.mean_in_place(&mut m, 1.0);
        assert!((m[0] - 0.2).abs() < 1e-12 && (m[2] - 0.5).abs() < 1e-12);
        assert!(m[3] > 1.0 - 3e-6 && m[4] < 2e-6);
        assert!(p.fields()[..3].iter().sum::<f64>().abs() < 1e-12);
        let g = Gaussian::<f64>::new(vec![2.0], vec![0.0])
            .unwrap()
            .with_means(&[1.5]);
        assert_eq!(g.mean_and_variance(0, 0.0, 1.0).0, 1.5);
    }

    #[test]
    fn domains_are_checked() {
        assert!(
            Bernoulli::<f32>::zeros(2)
                .check_configuration(&[0.0, 1.0])
                .is_ok()
        );
        assert!(
            Bernoulli::<f32>::zeros(2)
                .check_configuration(&[0.0, -1.0])
                .is_err()
        );
        assert!(Spin::<f64>::zeros(1).check_configuration(&[0.0]).is_err());
        let p = Potts::<f64>::zeros(2, 2);
        assert!(p.check_configuration(&[0.0, 1.0, 1.0, 0.0]).is_ok());
        let e = p.check_configuration(&[1.0, 1.0, 1.0, 0.0]).unwrap_err();
        assert!(e.contains("unit 0"), "{e}");
        assert!(
            ReLU::<f64>::standard(1)
                .check_configuration(&[-0.5])
                .is_err()
        );
        assert!(
            Gaussian::<f64>::standard(1)
                .check_configuration(&[f64::NAN])
                .is_err()
        );
    }
}

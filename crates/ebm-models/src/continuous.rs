//! Real-valued hidden units: [`Gaussian`], [`ReLU`] and double-ReLU ([`DReLU`]).
//!
//! Potentials use the same sign convention as the binary layers, the field entering as
//! \\(\theta + I\\): \\(U(h) = \frac{\gamma}{2}h^2 - \theta h\\) on the unit's support. Tempering
//! multiplies the whole exponent, \\(p_\beta(h \mid I) \propto e^{\beta(-U(h) + I h)}\\), so each
//! conditional is a (possibly truncated) Gaussian with precision \\(s = \beta\gamma\\) and mode
//! \\(m = (\theta + I)/\gamma\\). Their cumulant generating functions diverge at \\(\beta = 0\\)
//! (the conditional law is then an improper flat density), so these layers require
//! \\(\beta > 0\\): every method taking `beta` panics otherwise rather than return an infinite or
//! NaN value.
//!
//! Everything is evaluated in `f64`, also for `f32` parameters, with the stable forms of the AGS paper
//! Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling* and Fernandez-de-Cossio-Diaz et al., *Accelerated sampling with stacked RBMs*: the scaled
//! complementary error function [`ebm_core::special::erfcx`] (no overflow or cancellation for
//! large \\(|I|\\)), moments of truncated normals from
//! [`ebm_core::special::truncated_normal_mean_excess`] and
//! [`ebm_core::special::truncated_normal_variance`] (no cancellation far in the tail), and exact
//! truncated-normal draws by [`ebm_core::special::sample_truncated_normal_excess`], which returns
//! the distance to the truncation point directly so that \\(h\\) keeps full relative precision
//! even when the mode is thousands of standard deviations below 0.
//!
//! Sign convention (shared with the binary layers and Fernandez-de-Cossio-Diaz et al., *Accelerated sampling with stacked RBMs*): fields enter
//! with a minus sign in the potential, \\(U \ni -\theta h\\). The AGS paper
//! Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling* and Tubiana et al. (2019) write \\(+\theta h\\), so their
//! \\(\theta\\) (and their \\(\theta_\pm\\) for dReLU) is our \\(-\theta\\).

use crate::layer::{Layer, LinearFields, NamedTensor, TensorLookup};
use ebm_core::numerics::log_add_exp;
use ebm_core::special::{
    log_half_gaussian, sample_truncated_normal_excess, truncated_normal_mean_excess,
    truncated_normal_variance,
};
use ebm_core::{Error, Scalar};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

const LOG_2PI: f64 = 1.837_877_066_409_345_5;

fn check_params<F: Scalar>(
    kind: &str,
    name: &str,
    values: &[F],
    n: usize,
    positive: bool,
) -> ebm_core::Result<()> {
    Error::check_len(&format!("{kind} layer {name}"), n, values.len())?;
    let v: Vec<f64> = values.iter().map(|x| x.as_f64()).collect();
    Error::check_finite(&format!("{kind} layer {name}"), &v)?;
    if positive && let Some(k) = v.iter().position(|&x| x <= 0.0) {
        return Err(Error::InvalidParameter {
            name: format!("{kind} layer {name}[{k}]"),
            reason: format!("must be > 0 (a precision), got {}", v[k]),
        });
    }
    Ok(())
}

fn tensor<F: Scalar>(
    kind: &str,
    get: TensorLookup<'_, F>,
    name: &str,
    n: usize,
) -> ebm_core::Result<Vec<F>> {
    let (shape, values) = get(name).ok_or_else(|| Error::ShapeMismatch {
        what: format!("{kind} layer"),
        expected: format!("a tensor named \"{name}\""),
        got: "none".into(),
    })?;
    if shape != [n] {
        return Err(Error::ShapeMismatch {
            what: format!("{kind} layer {name}"),
            expected: format!("[{n}]"),
            got: format!("{shape:?}"),
        });
    }
    Ok(values)
}

/// Precision \\(s = \beta\gamma\\) and mode \\(m = (\theta + I)/\gamma\\) of a tempered unit.
#[inline]
fn precision_and_mode(gamma: f64, theta: f64, input: f64, beta: f64) -> (f64, f64) {
    assert!(
        beta > 0.0,
        "real-valued units need beta > 0 (their CGF diverges at beta = 0), got {beta}"
    );
    (beta * gamma, (theta + input) / gamma)
}

/// \\(\log \int_0^\infty e^{\beta(-\gamma h^2/2 + (\theta + I) h)} dh\\) for precision `s`, mode `m`.
#[inline]
fn half_line_log_mass(s: f64, m: f64) -> f64 {
    0.5 * (LOG_2PI - s.ln()) + log_half_gaussian(m * s.sqrt())
}

/// Mean and variance of \\(h \ge 0\\) with density \\(\propto e^{-s(h - m)^2/2}\\): with
/// \\(h = (t - a)/\sqrt s\\), \\(t \sim N(0,1) \mid t \ge a\\), \\(a = -m\sqrt s\\).
#[inline]
fn half_line_moments(s: f64, m: f64) -> (f64, f64) {
    let a = -m * s.sqrt();
    (
        truncated_normal_mean_excess(a) / s.sqrt(),
        truncated_normal_variance(a) / s,
    )
}

/// A draw of \\(h \ge 0\\) with density \\(\propto e^{-s(h - m)^2/2}\\), exact and finite for every
/// finite mode (see [`half_line_moments`]); allocation-free.
#[inline]
fn sample_half_line<R: Rng + ?Sized>(s: f64, m: f64, rng: &mut R) -> f64 {
    let r = s.sqrt();
    sample_truncated_normal_excess(-m * r, rng) / r
}

/// Gaussian units: \\(U(h) = \frac{\gamma}{2}h^2 - \theta h\\), \\(h \in \mathbb R\\).
///
/// \\(p_\beta(h \mid I) = \mathcal N\big(\frac{\theta + I}{\gamma}, \frac{1}{\beta\gamma}\big)\\),
/// \\(\Gamma^\beta(I) = \frac{\beta(\theta + I)^2}{2\gamma} + \frac12\log\frac{2\pi}{\beta\gamma}\\)
/// (Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*, Fernandez-de-Cossio-Diaz et al., *Accelerated sampling with stacked RBMs*). With
/// \\(\gamma = 1, \theta = 0\\) and spin visibles the RBM is a Hopfield (one unit: Curie–Weiss)
/// model.
///
/// # Panics
/// Every method taking `beta` panics unless \\(\beta > 0\\) (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Gaussian<F: Scalar = f64> {
    gamma: Vec<F>,
    theta: Vec<F>,
}

impl<F: Scalar> Gaussian<F> {
    /// Conditional mean \\((\theta_i + I)/\gamma_i\\) and variance \\(1/(\beta\gamma_i)\\) of unit
    /// `i` given its input `input` (the coupling part only) at `beta`.
    ///
    /// # Panics
    /// If `beta <= 0` or `i` is out of range.
    pub fn mean_and_variance(&self, i: usize, input: f64, beta: f64) -> (f64, f64) {
        let (s, m) =
            precision_and_mode(self.gamma[i].as_f64(), self.theta[i].as_f64(), input, beta);
        (m, 1.0 / s)
    }
}

/// ReLU units (Tubiana et al.): \\(U(h) = \frac{\gamma}{2}h^2 - \theta h\\) for \\(h \ge 0\\),
/// \\(+\infty\\) for \\(h < 0\\).
///
/// \\(p_\beta(h \mid I)\\) is \\(\mathcal N(m, 1/s)\\) truncated to \\(h \ge 0\\), and with
/// \\(z = m\sqrt s\\): \\(\Gamma^\beta(I) = \frac12\log\frac{2\pi}{s} + \frac{z^2}{2} + \log\Phi(z)\\),
/// evaluated as \\(\log(\operatorname{erfcx}(-z/\sqrt2)/2)\\) for \\(z < 0\\) and
/// \\(\frac{z^2}{2} + \operatorname{log1p}(-\frac12\operatorname{erfc}(z/\sqrt2))\\) for
/// \\(z \ge 0\\) (Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*; Tubiana et al. 2019). Here
/// \\(s = \beta\gamma\\) and \\(m = (\theta + I)/\gamma\\).
///
/// # Panics
/// Every method taking `beta` panics unless \\(\beta > 0\\) (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct ReLU<F: Scalar = f64> {
    gamma: Vec<F>,
    theta: Vec<F>,
}

impl<F: Scalar> ReLU<F> {
    /// Conditional mean \\(\frac{z + \lambda(z)}{\sqrt s}\\) and variance
    /// \\(\frac{1 - z\lambda - \lambda^2}{s}\\) (\\(\lambda = \varphi(z)/\Phi(z)\\),
    /// \\(z = m\sqrt s\\)) of unit `i`, evaluated as \\(\delta(-z)/\sqrt s\\) and \\(V(-z)/s\\) with
    /// [`ebm_core::special::truncated_normal_mean_excess`] \\(\delta\\) and
    /// [`ebm_core::special::truncated_normal_variance`] \\(V\\): no cancellation when
    /// \\(z \ll 0\\), where the mean tends to \\(1/(\sqrt s\,|z|)\\) and the variance to
    /// \\(1/(s z^2)\\) (relative error \\(\lesssim 10^{-14}\\) everywhere).
    ///
    /// # Panics
    /// If `beta <= 0` or `i` is out of range.
    pub fn mean_and_variance(&self, i: usize, input: f64, beta: f64) -> (f64, f64) {
        let (s, m) =
            precision_and_mode(self.gamma[i].as_f64(), self.theta[i].as_f64(), input, beta);
        half_line_moments(s, m)
    }
}

/// Constructors, accessors, parameter tensors and field shifts shared by the two layers with
/// one precision \\(\gamma\\) and one field \\(\theta\\) per unit.
macro_rules! gamma_theta_layer {
    ($ty:ident, $kind:literal) => {
        impl<F: Scalar> $ty<F> {
            /// A layer with precisions `gamma` (> 0) and fields `theta`.
            ///
            /// # Errors
            /// Lengths differ, a value is not finite, or a precision is not positive.
            pub fn new(gamma: Vec<F>, theta: Vec<F>) -> ebm_core::Result<Self> {
                check_params($kind, "gamma", &gamma, gamma.len(), true)?;
                check_params($kind, "theta", &theta, gamma.len(), false)?;
                Ok(Self { gamma, theta })
            }

            /// `n` units with \\(\gamma = 1\\), \\(\theta = 0\\).
            pub fn standard(n: usize) -> Self {
                Self {
                    gamma: vec![F::one(); n],
                    theta: vec![F::zero(); n],
                }
            }

            /// Precisions \\(\gamma\\).
            pub fn gamma(&self) -> &[F] {
                &self.gamma
            }

            /// Fields \\(\theta\\).
            pub fn theta(&self) -> &[F] {
                &self.theta
            }

            fn theta_len(&self) -> usize {
                self.theta.len()
            }

            fn gamma_theta_tensors(&self) -> Vec<NamedTensor<F>> {
                let n = self.theta.len();
                vec![
                    ("gamma", vec![n], self.gamma.clone()),
                    ("theta", vec![n], self.theta.clone()),
                ]
            }

            fn from_gamma_theta_tensors(
                n_units: usize,
                get: TensorLookup<'_, F>,
            ) -> ebm_core::Result<Self> {
                Self::new(
                    tensor($kind, get, "gamma", n_units)?,
                    tensor($kind, get, "theta", n_units)?,
                )
            }

            /// \\(\partial U / \partial(\gamma, \theta) = (h^2/2, -h)\\).
            fn gamma_theta_energy_gradient(&self, x: &[F], out: &mut [f64]) {
                let n = x.len();
                for (i, v) in x.iter().enumerate() {
                    let h = v.as_f64();
                    out[i] = 0.5 * h * h;
                    out[n + i] = -h;
                }
            }

            /// \\(E[(h^2/2, -h) \mid I]\\) from the conditional mean and variance.
            fn gamma_theta_expected_gradient(&self, inputs: &[F], beta: f64, out: &mut [f64]) {
                let n = inputs.len();
                for (i, v) in inputs.iter().enumerate() {
                    let (m, var) = self.mean_and_variance(i, v.as_f64(), beta);
                    out[i] = 0.5 * (var + m * m);
                    out[n + i] = -m;
                }
            }
        }

        impl<F: Scalar> LinearFields for $ty<F> {
            fn add_to_fields(&mut self, delta: &[f64]) {
                add_fields(&mut self.theta, delta);
            }
        }
    };
}

gamma_theta_layer!(Gaussian, "gaussian");
gamma_theta_layer!(ReLU, "relu");

/// Double-ReLU units (Tubiana et al. 2019): two half-Gaussians joined at 0,
/// \\(U(h) = \frac{\gamma_+}{2}h^2 - \theta_+ h\\) for \\(h \ge 0\\) and
/// \\(U(h) = \frac{\gamma_-}{2}h^2 - \theta_- h\\) for \\(h < 0\\) — exactly the convention of
/// Fernandez-de-Cossio-Diaz et al., *Accelerated sampling with stacked RBMs*.
///
/// **Sign of \\(\theta_-\\).** Both fields enter as \\(\theta_\pm + I\\), like every other layer of
/// the workspace, so each side is a Gaussian piece with precision \\(\beta\gamma_\pm\\) and mode
/// \\((\theta_\pm + I)/\gamma_\pm\\), and increasing either \\(\theta_+\\) or \\(\theta_-\\) increases
/// \\(\mathbb{E}\,h\\). With \\(\gamma_+ = \gamma_-\\) and \\(\theta_+ = \theta_-\\) the unit is exactly a
/// [`Gaussian`] (tested). Tubiana et al. and Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling* write
/// \\(U = \frac{\gamma_+}{2}h_+^2 + \theta_+ h_+ + \frac{\gamma_-}{2}h_-^2 + \theta_- h_-\\) with
/// \\(h_+ = \max(h, 0)\\), \\(h_- = \min(h, 0)\\): their \\(\theta_\pm\\) is our \\(-\theta_\pm\\).
///
/// \\(\Gamma^\beta = \log(e^{L_+} + e^{L_-})\\) with \\(L_+ = \Gamma^\beta_{\rm ReLU}(\gamma_+, \theta_+; I)\\)
/// and \\(L_- = \Gamma^\beta_{\rm ReLU}(\gamma_-, -\theta_-; -I)\\) the stable log-masses of the
/// two half-lines (the AGS paper: `logaddexp` of two ReLU terms); sampling picks the side
/// \\(h \ge 0\\) with its exact probability \\(e^{L_+ - \Gamma^\beta}\\), then draws the truncated
/// normal of that side.
///
/// # Panics
/// Every method taking `beta` panics unless \\(\beta > 0\\) (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct DReLU<F: Scalar = f64> {
    gamma_plus: Vec<F>,
    gamma_minus: Vec<F>,
    theta_plus: Vec<F>,
    theta_minus: Vec<F>,
}

/// Precisions, modes and log-masses of the two sides of a dReLU unit.
struct Sides {
    s_plus: f64,
    m_plus: f64,
    s_minus: f64,
    m_minus: f64,
    log_plus: f64,
    log_minus: f64,
}

impl<F: Scalar> DReLU<F> {
    /// A layer from its four parameter vectors (precisions > 0).
    ///
    /// # Errors
    /// Lengths differ, a value is not finite, or a precision is not positive.
    pub fn new(
        gamma_plus: Vec<F>,
        gamma_minus: Vec<F>,
        theta_plus: Vec<F>,
        theta_minus: Vec<F>,
    ) -> ebm_core::Result<Self> {
        let n = gamma_plus.len();
        check_params("drelu", "gamma_plus", &gamma_plus, n, true)?;
        check_params("drelu", "gamma_minus", &gamma_minus, n, true)?;
        check_params("drelu", "theta_plus", &theta_plus, n, false)?;
        check_params("drelu", "theta_minus", &theta_minus, n, false)?;
        Ok(Self {
            gamma_plus,
            gamma_minus,
            theta_plus,
            theta_minus,
        })
    }

    /// `n` units with \\(\gamma_\pm = 1\\), \\(\theta_\pm = 0\\) (a standard Gaussian).
    pub fn standard(n: usize) -> Self {
        Self {
            gamma_plus: vec![F::one(); n],
            gamma_minus: vec![F::one(); n],
            theta_plus: vec![F::zero(); n],
            theta_minus: vec![F::zero(); n],
        }
    }

    /// The parameters `(gamma_plus, gamma_minus, theta_plus, theta_minus)`.
    pub fn parameters(&self) -> (&[F], &[F], &[F], &[F]) {
        (
            &self.gamma_plus,
            &self.gamma_minus,
            &self.theta_plus,
            &self.theta_minus,
        )
    }

    fn sides(&self, i: usize, input: f64, beta: f64) -> Sides {
        let (s_plus, m_plus) = precision_and_mode(
            self.gamma_plus[i].as_f64(),
            self.theta_plus[i].as_f64(),
            input,
            beta,
        );
        let (s_minus, m_minus) = precision_and_mode(
            self.gamma_minus[i].as_f64(),
            self.theta_minus[i].as_f64(),
            input,
            beta,
        );
        Sides {
            s_plus,
            m_plus,
            s_minus,
            m_minus,
            log_plus: half_line_log_mass(s_plus, m_plus),
            // h < 0: reflect, h' = -h >= 0 has mode -m_minus.
            log_minus: half_line_log_mass(s_minus, -m_minus),
        }
    }

    /// Conditional mean \\(p_+\mu_+ + p_-\mu_-\\) and variance (law of total variance)
    /// \\(p_+v_+ + p_-v_- + p_+p_-(\mu_+ - \mu_-)^2\\) of unit `i`, where \\(p_\pm\\) are the side
    /// probabilities and \\(\mu_\pm, v_\pm\\) the stable truncated-normal moments of each side (as
    /// for [`ReLU::mean_and_variance`]); every term of the variance is non-negative.
    ///
    /// # Panics
    /// If `beta <= 0` or `i` is out of range.
    pub fn mean_and_variance(&self, i: usize, input: f64, beta: f64) -> (f64, f64) {
        let sd = self.sides(i, input, beta);
        let g = log_add_exp(sd.log_plus, sd.log_minus);
        let (p_plus, p_minus) = ((sd.log_plus - g).exp(), (sd.log_minus - g).exp());
        let (mp, vp) = half_line_moments(sd.s_plus, sd.m_plus);
        let (mm, vm) = half_line_moments(sd.s_minus, -sd.m_minus);
        let (mm, vm) = (-mm, vm);
        let mean = p_plus * mp + p_minus * mm;
        let var = p_plus * vp + p_minus * vm + p_plus * p_minus * (mp - mm) * (mp - mm);
        (mean, var)
    }
}

macro_rules! real_layer_common {
    () => {
        type Scalar = F;

        fn n_units(&self) -> usize {
            self.theta_len()
        }

        fn energy(&self, x: &[F]) -> f64 {
            (0..x.len())
                .map(|i| self.unit_energy(i, &x[i..i + 1]))
                .sum()
        }

        fn cgf(&self, inputs: &[F], beta: f64) -> f64 {
            (0..inputs.len())
                .map(|i| self.unit_cgf(i, inputs[i].as_f64(), beta))
                .sum()
        }

        fn mean_in_place(&self, inputs: &mut [F], beta: f64) {
            for (i, x) in inputs.iter_mut().enumerate() {
                *x = F::from_f64(self.mean_and_variance(i, x.as_f64(), beta).0);
            }
        }

        fn variance_in_place(&self, inputs: &mut [F], beta: f64) {
            for (i, x) in inputs.iter_mut().enumerate() {
                *x = F::from_f64(self.mean_and_variance(i, x.as_f64(), beta).1);
            }
        }
    };
}

impl<F: Scalar> Gaussian<F> {
    fn unit_cgf(&self, i: usize, input: f64, beta: f64) -> f64 {
        let (s, m) =
            precision_and_mode(self.gamma[i].as_f64(), self.theta[i].as_f64(), input, beta);
        0.5 * s * m * m + 0.5 * (LOG_2PI - s.ln())
    }
}

impl<F: Scalar> ReLU<F> {
    fn unit_cgf(&self, i: usize, input: f64, beta: f64) -> f64 {
        let (s, m) =
            precision_and_mode(self.gamma[i].as_f64(), self.theta[i].as_f64(), input, beta);
        half_line_log_mass(s, m)
    }
}

impl<F: Scalar> DReLU<F> {
    fn theta_len(&self) -> usize {
        self.theta_plus.len()
    }
    fn unit_cgf(&self, i: usize, input: f64, beta: f64) -> f64 {
        let sd = self.sides(i, input, beta);
        log_add_exp(sd.log_plus, sd.log_minus)
    }
}

impl<F: Scalar> Layer for Gaussian<F> {
    real_layer_common!();
    const KIND: &'static str = "gaussian";

    fn energy_gradient(&self, x: &[F], out: &mut [f64]) {
        self.gamma_theta_energy_gradient(x, out);
    }

    fn expected_energy_gradient(&self, inputs: &[F], beta: f64, out: &mut [f64]) {
        self.gamma_theta_expected_gradient(inputs, beta, out);
    }

    fn unit_energy(&self, i: usize, x_i: &[F]) -> f64 {
        let h = x_i[0].as_f64();
        0.5 * self.gamma[i].as_f64() * h * h - self.theta[i].as_f64() * h
    }

    fn sample_in_place<R: Rng + ?Sized>(&self, inputs: &mut [F], beta: f64, rng: &mut R) {
        for (i, x) in inputs.iter_mut().enumerate() {
            let (s, m) = precision_and_mode(
                self.gamma[i].as_f64(),
                self.theta[i].as_f64(),
                x.as_f64(),
                beta,
            );
            let z: f64 = StandardNormal.sample(rng);
            *x = F::from_f64(m + z / s.sqrt());
        }
    }

    fn tensors(&self) -> Vec<NamedTensor<F>> {
        self.gamma_theta_tensors()
    }

    fn from_tensors(n_units: usize, get: TensorLookup<'_, F>) -> ebm_core::Result<Self> {
        Self::from_gamma_theta_tensors(n_units, get)
    }
}

impl<F: Scalar> Layer for ReLU<F> {
    real_layer_common!();
    const KIND: &'static str = "relu";

    fn energy_gradient(&self, x: &[F], out: &mut [f64]) {
        self.gamma_theta_energy_gradient(x, out);
    }

    fn expected_energy_gradient(&self, inputs: &[F], beta: f64, out: &mut [f64]) {
        self.gamma_theta_expected_gradient(inputs, beta, out);
    }

    fn unit_energy(&self, i: usize, x_i: &[F]) -> f64 {
        let h = x_i[0].as_f64();
        if h < 0.0 {
            return f64::INFINITY;
        }
        0.5 * self.gamma[i].as_f64() * h * h - self.theta[i].as_f64() * h
    }

    fn sample_in_place<R: Rng + ?Sized>(&self, inputs: &mut [F], beta: f64, rng: &mut R) {
        for (i, x) in inputs.iter_mut().enumerate() {
            let (s, m) = precision_and_mode(
                self.gamma[i].as_f64(),
                self.theta[i].as_f64(),
                x.as_f64(),
                beta,
            );
            *x = F::from_f64(sample_half_line(s, m, rng));
        }
    }

    fn tensors(&self) -> Vec<NamedTensor<F>> {
        self.gamma_theta_tensors()
    }

    fn from_tensors(n_units: usize, get: TensorLookup<'_, F>) -> ebm_core::Result<Self> {
        Self::from_gamma_theta_tensors(n_units, get)
    }
}

impl<F: Scalar> Layer for DReLU<F> {
    real_layer_common!();
    const KIND: &'static str = "drelu";

    /// Parameters in the order `gamma_plus, gamma_minus, theta_plus, theta_minus`.
    fn energy_gradient(&self, x: &[F], out: &mut [f64]) {
        let n = x.len();
        out.fill(0.0);
        for (i, v) in x.iter().enumerate() {
            let h = v.as_f64();
            if h >= 0.0 {
                out[i] = 0.5 * h * h;
                out[2 * n + i] = -h;
            } else {
                out[n + i] = 0.5 * h * h;
                out[3 * n + i] = -h;
            }
        }
    }

    fn expected_energy_gradient(&self, inputs: &[F], beta: f64, out: &mut [f64]) {
        let n = inputs.len();
        for (i, v) in inputs.iter().enumerate() {
            let sd = self.sides(i, v.as_f64(), beta);
            let g = log_add_exp(sd.log_plus, sd.log_minus);
            let (p_plus, p_minus) = ((sd.log_plus - g).exp(), (sd.log_minus - g).exp());
            let (mp, vp) = half_line_moments(sd.s_plus, sd.m_plus);
            let (mm, vm) = half_line_moments(sd.s_minus, -sd.m_minus); // moments of -h on h < 0
            out[i] = 0.5 * p_plus * (vp + mp * mp);
            out[n + i] = 0.5 * p_minus * (vm + mm * mm);
            out[2 * n + i] = -p_plus * mp;
            out[3 * n + i] = p_minus * mm;
        }
    }

    fn unit_energy(&self, i: usize, x_i: &[F]) -> f64 {
        let h = x_i[0].as_f64();
        if h >= 0.0 {
            0.5 * self.gamma_plus[i].as_f64() * h * h - self.theta_plus[i].as_f64() * h
        } else {
            0.5 * self.gamma_minus[i].as_f64() * h * h - self.theta_minus[i].as_f64() * h
        }
    }

    fn sample_in_place<R: Rng + ?Sized>(&self, inputs: &mut [F], beta: f64, rng: &mut R) {
        for (i, x) in inputs.iter_mut().enumerate() {
            let sd = self.sides(i, x.as_f64(), beta);
            let p_plus = (sd.log_plus - log_add_exp(sd.log_plus, sd.log_minus)).exp();
            let u: f64 = rng.random();
            let h = if u < p_plus {
                sample_half_line(sd.s_plus, sd.m_plus, rng)
            } else {
                // h' = -h >= 0 has mode -m_minus.
                -sample_half_line(sd.s_minus, -sd.m_minus, rng)
            };
            *x = F::from_f64(h);
        }
    }

    fn tensors(&self) -> Vec<NamedTensor<F>> {
        let n = self.theta_plus.len();
        vec![
            ("gamma_plus", vec![n], self.gamma_plus.clone()),
            ("gamma_minus", vec![n], self.gamma_minus.clone()),
            ("theta_plus", vec![n], self.theta_plus.clone()),
            ("theta_minus", vec![n], self.theta_minus.clone()),
        ]
    }

    fn from_tensors(n_units: usize, get: TensorLookup<'_, F>) -> ebm_core::Result<Self> {
        Self::new(
            tensor("drelu", get, "gamma_plus", n_units)?,
            tensor("drelu", get, "gamma_minus", n_units)?,
            tensor("drelu", get, "theta_plus", n_units)?,
            tensor("drelu", get, "theta_minus", n_units)?,
        )
    }
}

fn add_fields<F: Scalar>(theta: &mut [F], delta: &[f64]) {
    assert_eq!(
        delta.len(),
        theta.len(),
        "add_to_fields: one value per unit"
    );
    for (t, d) in theta.iter_mut().zip(delta) {
        *t = F::from_f64(t.as_f64() + d);
    }
}

impl<F: Scalar> LinearFields for DReLU<F> {
    /// A linear term \\(\delta h\\) shifts both \\(\theta_+\\) and \\(\theta_-\\).
    fn add_to_fields(&mut self, delta: &[f64]) {
        add_fields(&mut self.theta_plus, delta);
        add_fields(&mut self.theta_minus, delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drelu_potential_follows_the_documented_sign_convention() {
        let d = DReLU::new(vec![2.0], vec![0.5], vec![0.3], vec![-0.7]).unwrap();
        // h >= 0: gamma_plus h^2 / 2 - theta_plus h; h < 0: gamma_minus h^2 / 2 - theta_minus h.
        assert_eq!(d.unit_energy(0, &[1.5]), 0.5 * 2.0 * 2.25 - 0.3 * 1.5);
        assert_eq!(d.unit_energy(0, &[-1.5]), 0.5 * 0.5 * 2.25 - 0.7 * 1.5);
        assert_eq!(d.energy(&[1.5]), d.unit_energy(0, &[1.5]));
        let r = ReLU::new(vec![1.0], vec![0.0]).unwrap();
        assert_eq!(r.unit_energy(0, &[-1e-300]), f64::INFINITY);
        // Raising theta_minus raises the mean (it is a field like theta_plus).
        let up = DReLU::new(vec![2.0], vec![0.5], vec![0.3], vec![-0.2]).unwrap();
        assert!(up.mean_and_variance(0, 0.1, 1.0).0 > d.mean_and_variance(0, 0.1, 1.0).0);
    }

    #[test]
    fn adding_to_the_fields_is_shifting_the_input() {
        let mut d = DReLU::new(vec![2.0], vec![0.5], vec![0.3], vec![-0.7]).unwrap();
        let before = d.cgf(&[0.9], 1.3);
        d.add_to_fields(&[0.4]);
        assert!((d.cgf(&[0.5], 1.3) - before).abs() < 1e-14);
        let mut g = Gaussian::new(vec![0.7], vec![0.1]).unwrap();
        let before = g.mean_and_variance(0, -2.0, 0.6);
        g.add_to_fields(&[-1.0]);
        assert_eq!(g.mean_and_variance(0, -1.0, 0.6), before);
    }

    #[test]
    fn half_line_helpers_are_exact_in_the_far_tail() {
        // Mode -1e3 standard deviations: h is exponential with rate s |m| to relative 1e-6.
        let (s, m) = (2.0, -1e3 / 2f64.sqrt());
        let (mean, var) = half_line_moments(s, m);
        assert!((mean * s * -m - 1.0).abs() < 3e-6 && (var * (s * m).powi(2) - 1.0).abs() < 1e-5);
        let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(3);
        for _ in 0..100 {
            let h = sample_half_line(s, m, &mut rng);
            assert!(h.is_finite() && (0.0..1.0).contains(&h));
        }
        assert!(half_line_log_mass(s, -1e200).is_finite());
    }
}

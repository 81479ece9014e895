//! Potts units: categorical variables with `q` states, stored one-hot.

use crate::layer::{DiscreteLayer, Layer, LinearFields, NamedTensor, TensorLookup};
use ebm_core::{Error, Scalar};
use rand::Rng;

/// A layer of `n_units` Potts units with `q` states each, stored one-hot: unit `i` occupies the
/// slot `x[i*q .. (i+1)*q]`, which holds a single 1. Potential
/// \\(U_i(x_i) = -\sum_a \theta_{i,a} x_{i,a}\\), so that with inputs \\(I_{i,a}\\)
///
/// \\[ p_\beta(x_i = a \mid I) = \frac{e^{\beta(\theta_{i,a} + I_{i,a})}}{\sum_b e^{\beta(\theta_{i,b} + I_{i,b})}},
/// \qquad \Gamma^\beta_i(I) = \log \sum_a e^{\beta(\theta_{i,a} + I_{i,a})}, \\]
///
/// evaluated with the maximum subtracted (Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).
/// In an RBM the weights have `n_units * q` rows: \\(W_{(i,a),\mu}\\).
///
/// The parametrisation has a gauge freedom: adding a constant to the \\(q\\) fields of a unit
/// does not change the law. [`Potts::zero_sum_fields`] and the RBM's zero-sum gauges
/// ([`crate::Rbm::gauge_visible_zero_sum`]) fix it on *all* parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Potts<F: Scalar = f64> {
    q: usize,
    /// Fields \\(\theta_{i,a}\\) at index `i * q + a`.
    fields: Vec<F>,
}

impl<F: Scalar> Potts<F> {
    /// A layer of `fields.len() / q` units with the given fields (`fields[i * q + a]`).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `q < 2` or `fields.len()` is not a multiple of `q`;
    /// [`Error::NonFinite`] for a NaN or infinite field.
    pub fn new(q: usize, fields: Vec<F>) -> ebm_core::Result<Self> {
        if q < 2 {
            return Err(Error::InvalidParameter {
                name: "q".into(),
                reason: format!("a Potts unit needs at least 2 states, got {q}"),
            });
        }
        if !fields.len().is_multiple_of(q) {
            return Err(Error::InvalidParameter {
                name: "fields".into(),
                reason: format!(
                    "{} fields is not a whole number of units of q = {q} states",
                    fields.len()
                ),
            });
        }
        Error::check_finite(
            "Potts fields",
            &fields.iter().map(|f| f.as_f64()).collect::<Vec<_>>(),
        )?;
        Ok(Self { q, fields })
    }

    /// `n_units` units with `q` states and zero fields.
    ///
    /// # Panics
    /// If `q < 2`.
    pub fn zeros(n_units: usize, q: usize) -> Self {
        assert!(q >= 2, "Potts::zeros: q must be at least 2");
        Self {
            q,
            fields: vec![F::from_f64(0.0); n_units * q],
        }
    }

    /// Number of states per unit.
    pub fn q(&self) -> usize {
        self.q
    }

    /// The fields, `fields()[i * q + a]` for unit `i`, state `a`.
    pub fn fields(&self) -> &[F] {
        &self.fields
    }

    /// Subtracts from each unit's fields their mean over the `q` states. The law of the layer
    /// (and of any RBM containing it) is unchanged; the potential changes by a constant.
    pub fn zero_sum_fields(&mut self) {
        for unit in self.fields.chunks_mut(self.q) {
            let mean = unit.iter().map(|f| f.as_f64()).sum::<f64>() / unit.len() as f64;
            for f in unit {
                *f = F::from_f64(f.as_f64() - mean);
            }
        }
    }
}

/// The largest value of a slot, by four independent running maxima (the maximum does not
/// depend on the order, so this is the value of a sequential scan, without its chain of
/// dependent comparisons). `-inf` for an empty slot.
#[inline(always)]
fn slot_max<F: Scalar>(slot: &[F]) -> F {
    let mut m = [F::neg_infinity(); 4];
    let mut quads = slot.chunks_exact(4);
    for c in &mut quads {
        for (m, &x) in m.iter_mut().zip(c) {
            *m = m.max(x);
        }
    }
    for &x in quads.remainder() {
        m[0] = m[0].max(x);
    }
    m[0].max(m[1]).max(m[2].max(m[3]))
}

/// Overwrites one unit's inputs `slot` by \\(e^{\beta(\theta_a + I_a) - \max}\\) and returns
/// their sum (the max-shifted softmax numerators and normaliser).
#[inline]
fn unnormalised_softmax<F: Scalar>(slot: &mut [F], fields: &[F], beta: F) -> F {
    let mut m = F::neg_infinity();
    for (x, &t) in slot.iter_mut().zip(fields) {
        *x = beta * (t + *x);
        m = m.max(*x);
    }
    let mut total = F::from_f64(0.0);
    for x in slot.iter_mut() {
        *x = (*x - m).exp();
        total = total + *x;
    }
    total
}

impl<F: Scalar> Layer for Potts<F> {
    type Scalar = F;
    const KIND: &'static str = "potts";

    fn unit_statistic_range(&self, i: usize, c: &[f64]) -> Option<(f64, f64)> {
        Some(crate::layer::discrete_statistic_range(self, i, c))
    }

    crate::layer::discrete_layer_hooks!();

    fn n_units(&self) -> usize {
        self.fields.len() / self.q
    }

    fn unit_width(&self) -> usize {
        self.q
    }

    fn fill_default(&self, x: &mut [F]) {
        for slot in x.chunks_mut(self.q) {
            slot.fill(F::from_f64(0.0));
            slot[0] = F::one();
        }
    }

    fn energy(&self, x: &[F]) -> f64 {
        -self
            .fields
            .iter()
            .zip(x)
            .map(|(t, v)| t.as_f64() * v.as_f64())
            .sum::<f64>()
    }

    fn unit_energy(&self, i: usize, x_i: &[F]) -> f64 {
        let q = self.q;
        -self.fields[i * q..(i + 1) * q]
            .iter()
            .zip(x_i)
            .map(|(t, v)| t.as_f64() * v.as_f64())
            .sum::<f64>()
    }

    fn cgf(&self, inputs: &[F], beta: f64) -> f64 {
        let q = self.q;
        let mut total = 0.0;
        for (inp, th) in inputs.chunks(q).zip(self.fields.chunks(q)) {
            let m = inp
                .iter()
                .zip(th)
                .map(|(i, t)| beta * (t.as_f64() + i.as_f64()))
                .fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = inp
                .iter()
                .zip(th)
                .map(|(i, t)| (beta * (t.as_f64() + i.as_f64()) - m).exp())
                .sum();
            total += m + s.ln();
        }
        total
    }

    /// Four passes over the column: the scaled fields \\(\beta(\theta + I)\\), each site's
    /// maximum subtracted, one vectorised exponential over the whole column
    /// ([`Scalar::exp_in_place`]), then per site the total, one uniform (as
    /// [`Scalar::uniform`]) and the categorical search. Always inlined, so that it is compiled
    /// for the wider instructions inside [`ebm_core::simd::dispatch`].
    #[inline(always)]
    fn sample_in_place<R: Rng + ?Sized>(&self, inputs: &mut [F], beta: f64, rng: &mut R) {
        let b = F::from_f64(beta);
        for (x, &t) in inputs.iter_mut().zip(&self.fields) {
            *x = b * (t + *x);
        }
        for slot in inputs.chunks_mut(self.q) {
            let m = slot_max(slot);
            for x in slot.iter_mut() {
                *x = *x - m;
            }
        }
        F::exp_in_place(inputs);
        let zero = F::from_f64(0.0);
        for slot in inputs.chunks_mut(self.q) {
            // Inverse CDF: the cumulative sums in place (the total is the last), then the
            // first state whose cumulative weight exceeds u, counted without branches: the
            // sums do not decrease, so that state's index is the number of sums <= u (capped
            // at the last state). The same sums in the same order as a running search, so the
            // same draws.
            let mut acc = zero;
            for x in slot.iter_mut() {
                acc = acc + *x;
                *x = acc;
            }
            let u = F::uniform(rng) * acc;
            let below = slot.iter().map(|&c| usize::from(c <= u)).sum::<usize>();
            let chosen = below.min(slot.len() - 1);
            slot.fill(zero);
            slot[chosen] = F::one();
        }
    }

    fn mean_in_place(&self, inputs: &mut [F], beta: f64) {
        let b = F::from_f64(beta);
        for (slot, th) in inputs.chunks_mut(self.q).zip(self.fields.chunks(self.q)) {
            let total = unnormalised_softmax(slot, th, b);
            for x in slot.iter_mut() {
                *x = *x / total;
            }
        }
    }

    fn variance_in_place(&self, inputs: &mut [F], beta: f64) {
        self.mean_in_place(inputs, beta);
        for x in inputs.iter_mut() {
            *x = *x * (F::one() - *x);
        }
    }

    fn energy_gradient(&self, x: &[F], out: &mut [f64]) {
        for (o, v) in out.iter_mut().zip(x) {
            *o = -v.as_f64();
        }
    }

    fn expected_energy_gradient(&self, inputs: &[F], beta: f64, out: &mut [f64]) {
        let q = self.q;
        for ((o, inp), th) in out
            .chunks_mut(q)
            .zip(inputs.chunks(q))
            .zip(self.fields.chunks(q))
        {
            let m = inp
                .iter()
                .zip(th)
                .map(|(i, t)| beta * (t.as_f64() + i.as_f64()))
                .fold(f64::NEG_INFINITY, f64::max);
            let mut total = 0.0;
            for ((ok, i), t) in o.iter_mut().zip(inp).zip(th) {
                *ok = (beta * (t.as_f64() + i.as_f64()) - m).exp();
                total += *ok;
            }
            for ok in o.iter_mut() {
                *ok = -*ok / total;
            }
        }
    }

    fn tensors(&self) -> Vec<NamedTensor<F>> {
        vec![("fields", vec![self.n_units(), self.q], self.fields.clone())]
    }

    fn from_tensors(n_units: usize, get: TensorLookup<'_, F>) -> ebm_core::Result<Self> {
        let (shape, values) = get("fields").ok_or_else(|| Error::ShapeMismatch {
            what: "potts layer".into(),
            expected: "a tensor named \"fields\"".into(),
            got: "none".into(),
        })?;
        if shape.len() != 2 || shape[0] != n_units {
            return Err(Error::ShapeMismatch {
                what: "potts layer fields".into(),
                expected: format!("[{n_units}, q]"),
                got: format!("{shape:?}"),
            });
        }
        Self::new(shape[1], values)
    }
}

impl<F: Scalar> DiscreteLayer for Potts<F> {
    fn unit_states(&self) -> usize {
        self.q
    }

    fn write_unit_state(&self, s: usize, slot: &mut [F]) {
        slot.fill(F::from_f64(0.0));
        slot[s] = F::one();
    }

    fn read_unit_state(&self, slot: &[F]) -> usize {
        let mut found = None;
        for (a, &x) in slot.iter().enumerate() {
            if x == F::one() {
                assert!(found.is_none(), "Potts slot {slot:?} is not one-hot");
                found = Some(a);
            } else {
                assert!(x == F::from_f64(0.0), "Potts slot {slot:?} is not one-hot");
            }
        }
        found.unwrap_or_else(|| panic!("Potts slot {slot:?} is not one-hot"))
    }
}

impl<F: Scalar> LinearFields for Potts<F> {
    fn add_to_fields(&mut self, delta: &[f64]) {
        assert_eq!(
            delta.len(),
            self.fields.len(),
            "add_to_fields: one value per field"
        );
        for (f, d) in self.fields.iter_mut().zip(delta) {
            *f = F::from_f64(f.as_f64() + d);
        }
    }
}

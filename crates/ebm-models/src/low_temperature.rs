//! The low-temperature copy trick (Eq. 65 of "Alternating Gibbs sampling in restricted
//! Boltzmann machines: free-energy barriers, analytic models and moves in latent space",
//! taken there from its ref. \[43\]; Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).
//!
//! Copying every hidden unit \\(k\\) times (same weights, same potential) and multiplying the
//! visible potential by \\(k\\) gives an RBM whose visible marginal is
//!
//! \\[ P_k(v) \propto e^{-k U_V(v)} \prod_{c=1}^k \prod_\mu e^{\Gamma_\mu((W^\top v)_\mu)}
//!     = P(v)^k, \\]
//!
//! the original law at inverse temperature \\(k\\), while each AGS half-step stays a block draw
//! (the \\(k\\) copies are drawn independently given \\(v\\), and \\(v\\) sees the sum of their inputs).

use crate::{BinaryLayer, Layer, Rbm};
use ebm_core::{Error, Scalar};
use nalgebra::DMatrix;

/// The \\(k\\)-copy RBM of `rbm` (module documentation): hidden units \\(c M + \mu\\) for copy
/// \\(c < k\\) are copies of unit \\(\mu\\), the weight matrix is \\([W, W, \dots, W]\\) and the
/// visible fields are multiplied by \\(k\\). Alternating Gibbs sampling on it at \\(\beta = 1\\)
/// samples \\(P(v)^k / \sum_{v'} P(v')^k\\).
///
/// # Errors
/// [`Error::InvalidParameter`] for `k == 0` or if a hidden-layer tensor is not per-unit (its
/// first dimension is not the number of units); errors of the hidden layer's
/// [`Layer::from_tensors`].
pub fn beta_copies<V, H>(rbm: &Rbm<V, H>, k: usize) -> ebm_core::Result<Rbm<V, H>>
where
    V: BinaryLayer,
    H: Layer<Scalar = V::Scalar>,
{
    if k == 0 {
        return Err(Error::InvalidParameter {
            name: "k".into(),
            reason: "the number of copies must be at least 1".into(),
        });
    }
    let m = rbm.hidden().n_units();
    let tensors = rbm.hidden().tensors();
    let mut tiled = Vec::with_capacity(tensors.len());
    for (name, shape, data) in tensors {
        if shape.first() != Some(&m) {
            return Err(Error::InvalidParameter {
                name: format!("hidden tensor {name}"),
                reason: format!("shape {shape:?} is not per-unit (first dimension {m})"),
            });
        }
        let mut s = shape.clone();
        s[0] = m * k;
        let d: Vec<V::Scalar> = (0..k).flat_map(|_| data.iter().copied()).collect();
        tiled.push((name, s, d));
    }
    let get = |name: &str| {
        tiled
            .iter()
            .find(|t| t.0 == name)
            .map(|t| (t.1.clone(), t.2.clone()))
    };
    let hidden = H::from_tensors(m * k, &get)?;
    let kf = V::Scalar::from_f64(k as f64);
    let visible = V::with_fields(rbm.visible().fields().iter().map(|&f| f * kf).collect());
    let w = rbm.weights();
    let weights = DMatrix::from_fn(w.nrows(), m * k, |i, j| w[(i, j % m)]);
    Rbm::new(visible, hidden, weights)
}

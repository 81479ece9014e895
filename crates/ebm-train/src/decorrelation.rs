//! The decorrelation penalty of hidden units (Eq. 73 of "Alternating Gibbs sampling in
//! restricted Boltzmann machines: free-energy barriers, analytic models and moves in latent
//! space"; Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).
//!
//! \\[ P(W) = \frac{1}{L}\sum_{\ell=1}^L \sum_{\mu\ne\nu}\big|f_\mu(v^\ell)\,f_\nu(v^\ell)\big|,
//!     \qquad f_\mu(v) = \Gamma_\mu'\big(I_\mu(v)\big) = E[h_\mu \mid v], \\]
//!
//! subtracted from the log-likelihood with a strength \\(\lambda\\) ([`crate::Trainer::decorrelation`]).
//! It favours representations where each sample activates one hidden unit strongly: trained on
//! Hopfield samples, the paper's RBMs learn rotated (delocalised) weights without it and one
//! unit per pattern with \\(\lambda = 10^{-3}\\) (Fig. 16). With \\(S = \sum_\nu |f_\nu|\\),
//! \\(\sum_{\mu\ne\nu}|f_\mu f_\nu| = S^2 - \sum_\mu f_\mu^2\\), so
//!
//! \\[ \frac{\partial P}{\partial W_{i\mu}} = \frac1L\sum_\ell 2\operatorname{sign}(f_\mu)
//!     \big(S - |f_\mu|\big)\,\Gamma_\mu''(I_\mu)\, v_i^\ell. \\]
//!
//! Like the L1/L2 [`crate::Penalty`], it acts on the weights only.

use ebm_core::linalg::{MatRef, matmul};
use ebm_core::{Error, Result, Scalar};
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;

/// Conditional means and their slopes, each `M x B`.
type MeansAndSlopes<F> = (DMatrix<F>, DMatrix<F>);

/// The hidden inputs \\(W^\top v\\), conditional means \\(f\\) and their derivatives
/// \\(\Gamma''\\) (conditional variances) of the columns of `v`.
fn means_and_slopes<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    v: &DMatrix<V::Scalar>,
) -> Result<MeansAndSlopes<V::Scalar>> {
    if rbm.hidden().unit_width() != 1 {
        return Err(Error::InvalidParameter {
            name: "decorrelation".into(),
            reason: format!(
                "the penalty needs scalar hidden units, got units of width {}",
                rbm.hidden().unit_width()
            ),
        });
    }
    Error::check_len(
        "decorrelation: visible rows",
        rbm.visible().width(),
        v.nrows(),
    )?;
    let (nv, nh, b) = (v.nrows(), rbm.hidden().width(), v.ncols());
    let mut inputs = DMatrix::from_element(nh, b, V::Scalar::from_f64(0.0));
    matmul(
        MatRef::col_major(rbm.weights().as_slice(), nv, nh).t(),
        MatRef::col_major(v.as_slice(), nv, b),
        inputs.as_mut_slice(),
    );
    let mut f = inputs.clone();
    let mut d = inputs;
    for (mut fc, mut dc) in f.column_iter_mut().zip(d.column_iter_mut()) {
        rbm.hidden().mean_in_place(fc.as_mut_slice(), 1.0);
        rbm.hidden().variance_in_place(dc.as_mut_slice(), 1.0);
    }
    Ok((f, d))
}

/// Normalised sample weights (uniform for `None`).
fn sample_weights(n: usize, weights: Option<&[f64]>) -> Result<Vec<f64>> {
    match weights {
        None => Ok(vec![1.0 / n as f64; n]),
        Some(w) => {
            Error::check_len("decorrelation: sample weights", n, w.len())?;
            let total: f64 = w.iter().sum();
            Ok(w.iter().map(|x| x / total).collect())
        }
    }
}

/// The penalty \\(P(W)\\) (module documentation) over the columns of `v`, averaged with the
/// sample `weights` (`None`: uniform).
///
/// # Errors
/// [`Error::InvalidParameter`] for hidden units that are not scalar (Potts);
/// [`Error::ShapeMismatch`] for a wrong number of rows or weights.
pub fn decorrelation_penalty<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    v: &DMatrix<V::Scalar>,
    weights: Option<&[f64]>,
) -> Result<f64> {
    let (f, _) = means_and_slopes(rbm, v)?;
    let w = sample_weights(v.ncols(), weights)?;
    Ok(f.column_iter()
        .zip(&w)
        .map(|(c, wl)| {
            let s: f64 = c.iter().map(|x| x.as_f64().abs()).sum();
            let sq: f64 = c.iter().map(|x| x.as_f64().powi(2)).sum();
            wl * (s * s - sq)
        })
        .sum())
}

/// The gradient \\(\partial P / \partial W\\) (module documentation) as a column-major
/// `N x M` vector (the order of `rbm.weights().as_slice()`).
///
/// # Errors
/// As [`decorrelation_penalty`].
pub fn decorrelation_gradient<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    v: &DMatrix<V::Scalar>,
    weights: Option<&[f64]>,
) -> Result<Vec<f64>> {
    let (f, d) = means_and_slopes(rbm, v)?;
    let w = sample_weights(v.ncols(), weights)?;
    let (m, b) = f.shape();
    // Coefficients c[mu, l] = 2 w_l sign(f) (S - |f|) Γ''; gradient = V c^T.
    let mut c = DMatrix::<f64>::zeros(m, b);
    for l in 0..b {
        let s: f64 = f.column(l).iter().map(|x| x.as_f64().abs()).sum();
        for mu in 0..m {
            let fm = f[(mu, l)].as_f64();
            let sign = if fm > 0.0 {
                1.0
            } else if fm < 0.0 {
                -1.0
            } else {
                0.0
            };
            c[(mu, l)] = 2.0 * w[l] * sign * (s - fm.abs()) * d[(mu, l)].as_f64();
        }
    }
    let vf = DMatrix::from_fn(v.nrows(), b, |i, l| v[(i, l)].as_f64());
    Ok((vf * c.transpose()).as_slice().to_vec())
}

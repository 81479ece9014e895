use ebm_core::{Error, Result, Scalar};
use ebm_data::pca::Pca;
use ebm_models::{DiscreteLayer, Layer, Rbm};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// \\(k \ge 1\\) linear order parameters of a visible configuration,
/// \\(m_l(v) = v \cdot \omega_l / \sqrt{N_v}\\) (paper, Eq. 6), where \\(N_v\\) is the number
/// of visible units and \\(v\\) is the layer's value vector (for one-hot Potts units, a
/// direction has one entry per state of each unit, so a projection is a linear function of the
/// one-hot encoding).
///
/// A single-site change \\(v_i \to v_i'\\) moves each order parameter by
/// \\(\Delta m_l = (v_i' - v_i) \cdot \omega_{l,i} / \sqrt{N_v}\\); kernels keep \\(m\\) up to date
/// with these increments.
///
/// Sign convention: every direction is oriented so that the sum of its entries is \\(\ge 0\\)
/// (for a first direction close to \\(\mathbf 1/\sqrt{N_v}\\), \\(m\\) is then close to the
/// mean activity).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderParameter {
    /// Number of values per chain (the visible layer's width).
    width: usize,
    /// \\(\omega_l / \sqrt{N_v}\\), direction `l` at `scaled[l * width..(l + 1) * width]`.
    scaled: Vec<f64>,
    /// Number of directions.
    k: usize,
}

impl OrderParameter {
    /// Order parameters along the columns of `directions` (`width x k`, one direction per
    /// column), for a layer of `n_units` units; each column is oriented by the sign
    /// convention, and used as given otherwise (no normalisation).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if there is no direction or no unit;
    /// [`Error::NonFinite`] for a NaN or infinite entry.
    pub fn new(directions: &DMatrix<f64>, n_units: usize) -> Result<Self> {
        let (width, k) = directions.shape();
        if k == 0 || width == 0 || n_units == 0 {
            return Err(Error::InvalidParameter {
                name: "order-parameter directions".into(),
                reason: format!(
                    "{width} x {k} matrix for {n_units} units; at least one direction and one unit expected"
                ),
            });
        }
        if let Some(index) = directions.iter().position(|x| !x.is_finite()) {
            return Err(Error::NonFinite {
                what: "order-parameter directions".into(),
                index,
                value: directions.as_slice()[index],
            });
        }
        let scale = 1.0 / (n_units as f64).sqrt();
        let mut scaled = Vec::with_capacity(width * k);
        for col in directions.column_iter() {
            let sign = if orientation_flips(col.as_slice()) {
                -1.0
            } else {
                1.0
            };
            scaled.extend(col.iter().map(|x| sign * x * scale));
        }
        Ok(Self { width, scaled, k })
    }

    /// The uniform direction \\(\omega = \mathbf 1/\sqrt{N_v}\\), for which \\(m\\) is the mean
    /// of the visible values (binary scalar layers).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `n_units == 0`.
    pub fn uniform(n_units: usize) -> Result<Self> {
        let d = DMatrix::from_element(n_units, 1, 1.0 / (n_units.max(1) as f64).sqrt());
        Self::new(&d, n_units)
    }

    /// The leading `k` principal directions of a fitted PCA of the data (centred or
    /// uncentred, as fitted; the paper uses the data's principal components), for a layer of
    /// `n_units` units.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the PCA has fewer than `k` components or `k == 0`.
    pub fn from_pca(pca: &Pca, k: usize, n_units: usize) -> Result<Self> {
        let c = pca.components();
        if k == 0 || k > c.ncols() {
            return Err(Error::InvalidParameter {
                name: "k".into(),
                reason: format!("{k} directions requested from a PCA with {}", c.ncols()),
            });
        }
        Self::new(&c.columns(0, k).into_owned(), n_units)
    }

    /// The leading `k` visible-space singular vectors of the weights \\(W = U \Sigma V^\top\\)
    /// of `rbm` (the directions the paper's §5 shows aligning with the data's principal
    /// components during training).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `k == 0` or `k > min(width, n_hidden)`.
    pub fn from_weights<V: Layer, H: Layer<Scalar = V::Scalar>>(
        rbm: &Rbm<V, H>,
        k: usize,
    ) -> Result<Self> {
        let w = rbm.weights().map(|x| x.as_f64());
        let (rows, rank) = (w.nrows(), w.nrows().min(w.ncols()));
        if k == 0 || k > rank {
            return Err(Error::InvalidParameter {
                name: "k".into(),
                reason: format!(
                    "{k} singular directions requested from a weight matrix of rank at most {rank}"
                ),
            });
        }
        let svd = w.svd(true, false);
        let u = svd.u.expect("svd: U requested");
        let mut order: Vec<usize> = (0..svd.singular_values.len()).collect();
        order.sort_by(|&a, &b| svd.singular_values[b].total_cmp(&svd.singular_values[a]));
        let mut d = DMatrix::zeros(rows, k);
        for (c, &idx) in order.iter().take(k).enumerate() {
            d.set_column(c, &u.column(idx));
        }
        Self::new(&d, rbm.visible().n_units())
    }

    /// The smallest and largest value of each order parameter over all configurations of the
    /// discrete layer `layer` (one `(min, max)` pair per direction). The projection is a sum
    /// of one term per unit, so each bound is the sum of the units' own bounds; no enumeration
    /// is needed. This is the range a grid of targets must cover when no data are at hand.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if the layer's width differs from [`OrderParameter::width`].
    pub fn range<L: DiscreteLayer>(&self, layer: &L) -> Result<Vec<(f64, f64)>> {
        Error::check_len(
            "order-parameter width (visible values)",
            self.width,
            layer.width(),
        )?;
        let (w, q) = (layer.unit_width(), layer.unit_states());
        let mut slot = vec![L::Scalar::from_f64(0.0); w];
        let mut out = vec![(0.0, 0.0); self.k];
        for (l, bounds) in out.iter_mut().enumerate() {
            let d = self.scaled_direction(l);
            for i in 0..layer.n_units() {
                let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
                for s in 0..q {
                    layer.write_unit_state(s, &mut slot);
                    let x: f64 = d[i * w..(i + 1) * w]
                        .iter()
                        .zip(&slot)
                        .map(|(a, b)| a * b.as_f64())
                        .sum();
                    lo = lo.min(x);
                    hi = hi.max(x);
                }
                bounds.0 += lo;
                bounds.1 += hi;
            }
        }
        Ok(out)
    }

    /// Number of order parameters \\(k\\).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Number of values per chain the directions act on.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The scaled direction \\(\omega_l / \sqrt{N_v}\\).
    ///
    /// # Panics
    /// If `l >= k()`.
    pub fn scaled_direction(&self, l: usize) -> &[f64] {
        &self.scaled[l * self.width..(l + 1) * self.width]
    }

    /// Writes \\(m_l(x)\\) for every `l` into `out` (length `k`).
    ///
    /// # Panics
    /// If `x.len() != width()` or `out.len() != k()`.
    pub fn project<F: Scalar>(&self, x: &[F], out: &mut [f64]) {
        assert_eq!(x.len(), self.width, "OrderParameter::project: width");
        assert_eq!(out.len(), self.k, "OrderParameter::project: output length");
        for (l, o) in out.iter_mut().enumerate() {
            *o = self
                .scaled_direction(l)
                .iter()
                .zip(x)
                .map(|(w, v)| w * v.as_f64())
                .sum();
        }
    }

    /// The order parameters of every column of `x` (one configuration per column), `k` per
    /// configuration: configuration `c` at `c * k..(c + 1) * k`.
    ///
    /// # Panics
    /// If `x.nrows() != width()`.
    pub fn project_columns<F: Scalar>(&self, x: &DMatrix<F>) -> Vec<f64> {
        let mut out = vec![0.0; x.ncols() * self.k];
        for (col, m) in x.column_iter().zip(out.chunks_mut(self.k.max(1))) {
            self.project(col.as_slice(), m);
        }
        out
    }

    /// Writes into `out` the order parameters `m` plus their change when the values at
    /// offsets `first..first + old.len()` of a configuration go from `old` to `new`.
    #[inline(always)]
    pub(crate) fn add_increment<F: Scalar>(
        &self,
        first: usize,
        old: &[F],
        new: &[F],
        m: &[f64],
        out: &mut [f64],
    ) {
        for (l, (o, &ml)) in out.iter_mut().zip(m).enumerate() {
            let w = &self.scaled[l * self.width + first..];
            let mut d = 0.0;
            for ((wc, n), o) in w.iter().zip(new).zip(old) {
                d += wc * (n.as_f64() - o.as_f64());
            }
            *o = ml + d;
        }
    }
}

/// Whether a direction must be negated by the sign convention (sum of entries `>= 0`; if it
/// is exactly 0, the first non-zero entry positive).
fn orientation_flips(d: &[f64]) -> bool {
    let s: f64 = d.iter().sum();
    if s != 0.0 {
        s < 0.0
    } else {
        d.iter().find(|x| **x != 0.0).is_some_and(|x| *x < 0.0)
    }
}

/// The largest downward curvature that the hidden units can give the free energy along the
/// order parameters, \\(K = \max_l \sum_a \tfrac14 (\max_{x_a} c_{la} \cdot x_a - \min_{x_a}
/// c_{la} \cdot x_a)^2\\) with \\(c_{la}\\) the columns of \\(W^\top u_l\\) for unit \\(a\\) and
/// \\(u_l = \sigma_l / \lVert\sigma_l\rVert^2\\) (\\(\sigma_l = \omega_l/\sqrt{N_v}\\), so that
/// moving \\(v\\) by \\(t\,u_l\\) moves \\(m_l\\) by \\(t\\)); `None` when a hidden unit takes
/// real values ([`Layer::unit_statistic_range`]).
///
/// Why it matters: summing out \\(h\\) gives the free energy \\(F(v) = U(v) - \sum_a
/// \log \sum_{h_a} e^{h_a \cdot (W^\top v)_a + \dots}\\), whose second derivative along
/// \\(u_l\\) is \\(-\sum_a \operatorname{Var}(c_{la} \cdot h_a \mid v) \ge -K\\) (the visible
/// potential is linear in the layer's values; Popoviciu's inequality bounds each variance).
/// The Gaussian tether adds \\(+\alpha\\). With \\(\alpha > K\\) the tethered law is log-concave
/// along the order parameter at every target; with \\(\alpha < K\\) it can have two components
/// at some targets (a hidden unit on or off),
/// separated by more than the tether's width, between which the chains need not move: the
/// measured \\(\langle m\rangle_{\hat m}\\) is then that of one component and \\(p(\hat m)\\) can be
/// wrong by many nats, which replicas alone need not reveal. For a rank-1 Bernoulli RBM with
/// couplings \\(w\\) along the uniform direction, \\(K = N_v^2 w^2 / 4\\) (\\(3.6 \cdot 10^5\\) for
/// \\(N_v = 400\\), \\(w = 3\\), against the paper's \\(\alpha = 2\cdot10^4\\)).
///
/// # Errors
/// [`Error::ShapeMismatch`] if the visible width differs from [`OrderParameter::width`].
pub fn tether_curvature_bound<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
) -> Result<Option<f64>> {
    let w = rbm.weights();
    Error::check_len(
        "order-parameter width (visible values)",
        order.width(),
        w.nrows(),
    )?;
    let hidden = rbm.hidden();
    let uw = hidden.unit_width();
    let mut worst: f64 = 0.0;
    for l in 0..order.k() {
        let sigma = order.scaled_direction(l);
        let norm2: f64 = sigma.iter().map(|x| x * x).sum();
        if norm2 == 0.0 {
            continue;
        }
        let c: Vec<f64> = w
            .column_iter()
            .map(|col| {
                col.iter()
                    .zip(sigma)
                    .map(|(x, s)| x.as_f64() * s)
                    .sum::<f64>()
                    / norm2
            })
            .collect();
        let mut k = 0.0;
        for (a, ca) in c.chunks(uw.max(1)).enumerate() {
            let Some((lo, hi)) = hidden.unit_statistic_range(a, ca) else {
                return Ok(None);
            };
            k += 0.25 * (hi - lo) * (hi - lo);
        }
        worst = worst.max(k);
    }
    Ok(Some(worst))
}

/// A bias \\(B(m; \hat m)\\) on the order parameters, added to the (untempered) energy of the
/// tethered ensemble: \\(p_{\hat m}(v, h) \propto e^{-\beta E(v,h) - B(m(v); \hat m)}\\).
///
/// The paper uses the Gaussian tether ([`GaussianTether`]); other biases (umbrella windows,
/// flat-bottom wells) implement this trait. The reconstruction in [`super::profile`] assumes
/// the Gaussian form.
pub trait Tether: Sync {
    /// \\(B(m; \hat m)\\) for order parameters `m` and target `target` (both of length `k`).
    fn bias(&self, m: &[f64], target: &[f64]) -> f64;
}

/// The Gaussian tether \\(B(m; \hat m) = \tfrac{\alpha}{2} \lVert m - \hat m \rVert^2\\) of the
/// paper (Eqs. 8 and 16); the paper uses \\(\alpha = 2 \cdot 10^4\\). The tether is not scaled
/// by the inverse temperature.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GaussianTether {
    alpha: f64,
}

impl GaussianTether {
    /// A tether of strength `alpha`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `alpha` is finite and positive.
    pub fn new(alpha: f64) -> Result<Self> {
        if !(alpha.is_finite() && alpha > 0.0) {
            return Err(Error::InvalidParameter {
                name: "alpha".into(),
                reason: format!("{alpha}; a finite positive tether strength expected"),
            });
        }
        Ok(Self { alpha })
    }

    /// The strength \\(\alpha\\).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl Tether for GaussianTether {
    #[inline(always)]
    fn bias(&self, m: &[f64], target: &[f64]) -> f64 {
        let s: f64 = m.iter().zip(target).map(|(a, b)| (a - b) * (a - b)).sum();
        0.5 * self.alpha * s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_convention_and_projection() {
        let d = DMatrix::from_column_slice(4, 1, &[-0.5, -0.5, -0.5, -0.5]);
        let o = OrderParameter::new(&d, 4).unwrap();
        let mut m = [0.0];
        o.project(&[1.0f64, 1.0, 0.0, 0.0], &mut m);
        assert!((m[0] - 0.5).abs() < 1e-12);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        assert!(OrderParameter::new(&DMatrix::zeros(3, 0), 3).is_err());
        assert!(OrderParameter::new(&DMatrix::from_element(2, 1, f64::NAN), 2).is_err());
        assert!(GaussianTether::new(-1.0).is_err());
        assert!(GaussianTether::new(f64::INFINITY).is_err());
    }
}

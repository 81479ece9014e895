//! Exact helpers shared by the integration tests: exact log-likelihood by enumeration, an
//! exact negative phase (all configurations weighted by their exact probabilities), parameter
//! perturbations for finite differences.
#![allow(dead_code)]

use ebm_core::{Par, Result, Scalar};
use ebm_models::exact;
use ebm_models::{DiscreteLayer, Layer, Rbm, RbmChains};
use ebm_train::{NegativeInfo, NegativePhase, TrainableLayer};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// Mean of -F(v) over the columns of `data` (uniform weights).
/// `n` samples of 8 binary units from two clusters (prototypes 11110000 and 00001111, two
/// samples in three from the first), about one unit in eleven flipped.
pub fn two_clusters(n: usize) -> DMatrix<f64> {
    DMatrix::from_fn(8, n, |i, j| {
        let proto = (i < 4) == (j % 3 != 0);
        let flip = (i * 31 + j * 17) % 11 == 0;
        (proto != flip) as u8 as f64
    })
}

pub fn mean_neg_free_energy<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
) -> f64 {
    let mut f = vec![0.0; data.ncols()];
    rbm.free_energy_visible(data, 1.0, &mut f, Par::Seq);
    -f.iter().sum::<f64>() / f.len() as f64
}

/// Exact mean log-likelihood of `data` (visible layer enumerated).
pub fn exact_ll<V: DiscreteLayer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    data: &DMatrix<V::Scalar>,
) -> f64 {
    mean_neg_free_energy(rbm, data) - exact::log_partition_by_visible(rbm, 1.0, Par::Seq).unwrap()
}

/// Every configuration of a discrete layer, one per column.
pub fn all_configurations<L: DiscreteLayer>(layer: &L) -> DMatrix<L::Scalar> {
    let n = layer.n_configurations() as usize;
    let mut x = DMatrix::zeros(layer.width(), n);
    for k in 0..n {
        layer.write_configuration(k as u128, x.column_mut(k).as_mut_slice());
    }
    x
}

/// The model term computed exactly: all visible configurations weighted by p(v).
#[derive(Clone, Copy, Debug)]
pub struct ExactNegative;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct ExactState<F: Scalar> {
    pub chains: RbmChains<F>,
    pub weights: Vec<f64>,
}

impl<V, H> NegativePhase<V, H> for ExactNegative
where
    V: DiscreteLayer + TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
{
    type State = ExactState<V::Scalar>;

    fn init(&self, model: &Rbm<V, H>, _b: usize, _seed: u64, _par: Par) -> Result<Self::State> {
        let visible = all_configurations(model.visible());
        let n = visible.ncols();
        let mut chains = model.default_chains(n);
        chains.visible = visible;
        Ok(ExactState {
            chains,
            weights: vec![1.0 / n as f64; n],
        })
    }

    fn check_state(&self, _state: &Self::State, _batch: usize) -> Result<()> {
        Ok(())
    }

    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut Self::State,
        _batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> Result<NegativeInfo> {
        state.weights = exact::visible_probabilities(model, 1.0, par)?;
        Ok(NegativeInfo::default())
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<V::Scalar> {
        &state.chains
    }

    fn weights<'a>(&self, state: &'a Self::State) -> Option<&'a [f64]> {
        Some(&state.weights)
    }
}

/// `rbm` with flat parameter `k` (order of `Gradient::flat`: weights column-major, then the
/// visible and hidden tensors) shifted by `eps`.
pub fn perturb<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    k: usize,
    eps: f64,
) -> Rbm<V, H> {
    fn shift<L: Layer>(layer: &L, k: usize, eps: f64) -> L {
        let mut i = 0;
        let tensors: Vec<_> = layer
            .tensors()
            .into_iter()
            .map(|(name, shape, values)| {
                let values: Vec<L::Scalar> = values
                    .into_iter()
                    .map(|x| {
                        let y = if i == k {
                            L::Scalar::from_f64(x.as_f64() + eps)
                        } else {
                            x
                        };
                        i += 1;
                        y
                    })
                    .collect();
                (name, shape, values)
            })
            .collect();
        let get = |n: &str| {
            tensors
                .iter()
                .find(|t| t.0 == n)
                .map(|t| (t.1.clone(), t.2.clone()))
        };
        L::from_tensors(layer.n_units(), &get).unwrap()
    }
    let (v, h, mut w) = rbm.clone().into_parts();
    let nw = w.len();
    let pv = v.n_parameters();
    if k < nw {
        w.as_mut_slice()[k] = V::Scalar::from_f64(w.as_slice()[k].as_f64() + eps);
        Rbm::new(v, h, w).unwrap()
    } else if k < nw + pv {
        Rbm::new(shift(&v, k - nw, eps), h, w).unwrap()
    } else {
        Rbm::new(v, shift(&h, k - nw - pv, eps), w).unwrap()
    }
}

/// The Gauss–Legendre rule of order `n` on \\([-1, 1]\\): nodes (roots of \\(P_n\\), by Newton
/// from the Tricomi guess) and weights \\(2 / ((1 - x^2) P_n'(x)^2)\\); exact for polynomials of
/// degree \\(\le 2n - 1\\).
pub fn gauss_legendre(n: usize) -> (Vec<f64>, Vec<f64>) {
    assert!(n >= 2, "gauss_legendre: order {n}");
    let (mut nodes, mut weights) = (vec![0.0; n], vec![0.0; n]);
    for i in 0..n {
        let mut z = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
        let mut dp = 1.0;
        for _ in 0..100 {
            // P_n(z) by the three-term recurrence; p0 = P_{n-1}.
            let (mut p0, mut p1) = (1.0, z);
            for k in 2..=n {
                let k = k as f64;
                let p2 = ((2.0 * k - 1.0) * z * p1 - (k - 1.0) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            dp = n as f64 * (z * p1 - p0) / (z * z - 1.0);
            let dz = p1 / dp;
            z -= dz;
            if dz.abs() < 1e-16 {
                break;
            }
        }
        nodes[i] = z;
        weights[i] = 2.0 / ((1.0 - z * z) * dp * dp);
    }
    (nodes, weights)
}

/// The composite Gauss–Legendre rule of `order` nodes per panel on
/// \\([b_0, b_{\text{last}}]\\): each interval between consecutive `breaks` (where the
/// integrand may have a kink) is cut into equal panels no wider than `panel`.
pub fn composite_gauss_legendre(breaks: &[f64], panel: f64, order: usize) -> (Vec<f64>, Vec<f64>) {
    let (x, w) = gauss_legendre(order);
    let (mut nodes, mut weights) = (Vec::new(), Vec::new());
    for pair in breaks.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(b > a, "composite_gauss_legendre: breaks {breaks:?}");
        let panels = ((b - a) / panel).ceil() as usize;
        let width = (b - a) / panels as f64;
        for p in 0..panels {
            let centre = a + (p as f64 + 0.5) * width;
            for (xi, wi) in x.iter().zip(&w) {
                nodes.push(centre + 0.5 * width * xi);
                weights.push(0.5 * width * wi);
            }
        }
    }
    (nodes, weights)
}

/// A quadrature rule over the visible space of an RBM with real visible units: one node per
/// column of `nodes` (`V::width() x n`) with weight `weights[i] > 0`. With the hidden layer
/// summed out by its CGF, \\(Z = \int e^{-F(v)} dv \approx \sum_i q_i e^{-F(v_i)}\\).
#[derive(Clone, Debug)]
pub struct VisibleQuadrature {
    pub nodes: DMatrix<f64>,
    pub weights: Vec<f64>,
}

impl VisibleQuadrature {
    /// The tensor product of one 1-D rule per visible unit (unit 0 varying fastest).
    pub fn product(rules: &[(Vec<f64>, Vec<f64>)]) -> Self {
        let n: usize = rules.iter().map(|r| r.0.len()).product();
        let mut nodes = DMatrix::zeros(rules.len(), n);
        let mut weights = vec![1.0; n];
        for j in 0..n {
            let mut rest = j;
            for (d, (x, w)) in rules.iter().enumerate() {
                nodes[(d, j)] = x[rest % x.len()];
                weights[j] *= w[rest % x.len()];
                rest /= x.len();
            }
        }
        Self { nodes, weights }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// \\(\log q_i - F(v_i)\\) for every node.
    pub fn log_terms<V: Layer<Scalar = f64>, H: Layer<Scalar = f64>>(
        &self,
        rbm: &Rbm<V, H>,
    ) -> Vec<f64> {
        let mut f = vec![0.0; self.len()];
        rbm.free_energy_visible(&self.nodes, 1.0, &mut f, Par::Seq);
        f.iter()
            .zip(&self.weights)
            .map(|(f, q)| q.ln() - f)
            .collect()
    }

    /// \\(\log \sum_i q_i e^{-F(v_i)}\\).
    pub fn log_partition<V: Layer<Scalar = f64>, H: Layer<Scalar = f64>>(
        &self,
        rbm: &Rbm<V, H>,
    ) -> f64 {
        let t = self.log_terms(rbm);
        let m = t.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        m + t.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
    }

    /// The normalised weights \\(q_i e^{-F(v_i)} / Z\\): the model's law on the nodes.
    pub fn probabilities<V: Layer<Scalar = f64>, H: Layer<Scalar = f64>>(
        &self,
        rbm: &Rbm<V, H>,
    ) -> Vec<f64> {
        let log_z = self.log_partition(rbm);
        self.log_terms(rbm)
            .iter()
            .map(|x| (x - log_z).exp())
            .collect()
    }
}

/// The box (one interval per visible unit) outside which the visible log density
/// \\(-F(v)\\) is more than `drop` below its maximum, found on a grid of spacing `step` over
/// \\([-\text{reach}, \text{reach}]\\) per unit (spacing `step / 2` over \\([0, \text{reach}]\\)
/// for a unit whose potential is infinite at \\(v < 0\\), e.g. ReLU, whose interval then starts
/// at 0), widened by one grid step.
///
/// # Panics
/// If the log density has not dropped by `drop` before the edge of the scanned region (the
/// model may not be normalisable, or `reach` is too small).
pub fn visible_support_box<V: Layer<Scalar = f64>, H: Layer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
    reach: f64,
    step: f64,
    drop: f64,
) -> Vec<(f64, f64)> {
    let nv = rbm.visible().width();
    let half_line: Vec<bool> = (0..nv)
        .map(|i| rbm.visible().unit_energy(i, &[-1.0]).is_infinite())
        .collect();
    let per = (2.0 * reach / step).round() as usize + 1;
    let coord = |d: usize, k: usize| {
        if half_line[d] {
            k as f64 * step * 0.5
        } else {
            -reach + k as f64 * step
        }
    };
    let n = per.pow(nv as u32);
    let grid = DMatrix::from_fn(nv, n, |d, j| coord(d, (j / per.pow(d as u32)) % per));
    let mut f = vec![0.0; n];
    rbm.free_energy_visible(&grid, 1.0, &mut f, Par::Seq);
    let top = f.iter().map(|x| -x).fold(f64::NEG_INFINITY, f64::max);
    let mut bounds = vec![(f64::INFINITY, f64::NEG_INFINITY); nv];
    for (j, fj) in f.iter().enumerate() {
        if -fj > top - drop {
            for (d, b) in bounds.iter_mut().enumerate() {
                b.0 = b.0.min(grid[(d, j)]);
                b.1 = b.1.max(grid[(d, j)]);
            }
        }
    }
    bounds
        .iter()
        .enumerate()
        .map(|(d, &(lo, hi))| {
            let (first, last) = (coord(d, 0), coord(d, per - 1));
            assert!(
                (half_line[d] || lo > first + step) && hi < last - step,
                "visible unit {d}: log density within {drop} of its maximum on [{lo}, {hi}], \
                 the edge of the scan [{first}, {last}]"
            );
            let lo = if half_line[d] { 0.0 } else { lo - step };
            (lo, hi + step)
        })
        .collect()
}

/// `n_a` noisy copies of mode A (the first half of the `nv` units on) and `n_b` of mode B (the
/// second half on), one sample per column; about one unit in 23 flipped, so every sample is
/// much closer to its own mode.
pub fn bimodal(nv: usize, n_a: usize, n_b: usize) -> DMatrix<f64> {
    DMatrix::from_fn(nv, n_a + n_b, |i, j| {
        let proto = if j < n_a { i < nv / 2 } else { i >= nv / 2 };
        let flip = (i * 31 + j * 17) % 23 == 0;
        (proto != flip) as u8 as f64
    })
}

/// The exact mean of every visible unit of `rbm` (its visible layer enumerated).
pub fn exact_visible_mean<V: DiscreteLayer<Scalar = f64>, H: Layer<Scalar = f64>>(
    rbm: &Rbm<V, H>,
) -> Vec<f64> {
    let p = exact::visible_probabilities(rbm, 1.0, Par::Seq).unwrap();
    let n = rbm.visible().width();
    let mut x = vec![0.0; n];
    let mut m = vec![0.0; n];
    for (k, pk) in p.iter().enumerate() {
        rbm.visible().write_configuration(k as u128, &mut x);
        for i in 0..n {
            m[i] += pk * x[i];
        }
    }
    m
}

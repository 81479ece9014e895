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
    ) -> NegativeInfo {
        state.weights = exact::visible_probabilities(model, 1.0, par).unwrap();
        NegativeInfo::default()
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

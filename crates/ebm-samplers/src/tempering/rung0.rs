//! What explores rung 0 of parallel tempering on an RBM ladder, chosen once for the bottom
//! rung's model: an independent exact draw every round where the hidden layer can be
//! enumerated, a Metropolis–Hastings step with the static low-rank sampler as proposal where
//! the model is a low-rank binary RBM (a model of RCM pre-training), Gibbs sweeps otherwise.
//!
//! Paper 000 (Béreux et al., *Fast training and sampling of RBMs*, SI B) refreshes the first
//! checkpoint of trajectory tempering with "a fresh independent sample at the bottom each step";
//! both refreshes here leave the bottom model's law exactly invariant, so the PT chain stays
//! exact whatever rung 0 does. Used by `ebm sample --sampler ptt` and by the bridge from a
//! pre-trained model (`ebm_train::Bridged`).

use std::sync::Mutex;

use ebm_core::{ConditionalSampler, Kernel, Par, Result};
use ebm_models::exact::HiddenEnumeration;
use ebm_models::{Layer, Rbm, RbmChains};
use rand::Rng;

use crate::{Gibbs, LowRankIndependence};

/// When [`Rung0::choose`] takes each refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rung0Limits {
    /// The hidden layer is enumerated when it has at most this many configurations.
    pub max_enumerated: u128,
    /// The static sampler's mesh has at most this many points.
    pub max_mesh_points: usize,
}

impl Rung0Limits {
    /// The limits of `ebm sample --sampler ptt`: \\(2^{20}\\) hidden configurations
    /// (\\(N_h \le 20\\) binary units, as in paper 000) and a mesh of \\(10^5\\) points.
    pub const PTT: Self = Self {
        max_enumerated: 1 << 20,
        max_mesh_points: 100_000,
    };
}

/// What explores rung 0 of parallel tempering on an RBM ladder, chosen once for the bottom
/// rung's model by [`Rung0::choose`] (Béreux et al., *Fast training and sampling of RBMs*, SI B:
/// "a fresh independent sample at the bottom each step"). Every refresh leaves the bottom
/// model's law exactly invariant. A kernel on any RBM; the exact and the static refresh belong
/// to the model and inverse temperature they were built for (as [`HiddenEnumeration`] and
/// [`LowRankIndependence`]), and must be stepped on them.
#[derive(Debug)]
pub enum Rung0 {
    /// The same Gibbs sweeps as every other rung.
    Gibbs(Gibbs),
    /// An independent exact draw every round, by enumerating the hidden layer.
    Exact(HiddenEnumeration),
    /// One Metropolis–Hastings step every round with the static low-rank sampler as proposal
    /// (exact for the model's own law, at any size); keeps its acceptance.
    StaticMh {
        /// The kernel (boxed: its mesh is much larger than the other variants).
        kernel: Box<LowRankIndependence>,
        /// The sum of the steps' acceptance fractions, and the number of steps.
        acceptance: Mutex<(f64, u64)>,
    },
}

impl Clone for Rung0 {
    fn clone(&self) -> Self {
        match self {
            Rung0::Gibbs(g) => Rung0::Gibbs(*g),
            Rung0::Exact(e) => Rung0::Exact(e.clone()),
            Rung0::StaticMh { kernel, acceptance } => Rung0::StaticMh {
                kernel: kernel.clone(),
                acceptance: Mutex::new(*acceptance.lock().unwrap_or_else(|e| e.into_inner())),
            },
        }
    }
}

impl Rung0 {
    /// The refresh of `model` at `beta`: [`Rung0::Exact`] if its hidden layer is discrete
    /// with at most `limits.max_enumerated` configurations, else [`Rung0::StaticMh`] if both
    /// layers are binary with `f64` parameters and the static sampler can be built on a mesh of
    /// at most `limits.max_mesh_points` points (a low-rank model), else `sweeps` Gibbs sweeps.
    ///
    /// # Errors
    /// If the enumeration fails ([`HiddenEnumeration::new`]: a non-finite `beta`).
    pub fn choose<V, H>(
        model: &Rbm<V, H>,
        beta: f64,
        sweeps: usize,
        limits: Rung0Limits,
        par: Par,
    ) -> Result<Self>
    where
        V: Layer + 'static,
        H: Layer<Scalar = V::Scalar> + 'static,
    {
        let enumerable = model
            .hidden()
            .discrete_configurations()
            .is_some_and(|n| n <= limits.max_enumerated);
        if enumerable && let Some(e) = HiddenEnumeration::of_any(model, beta, par) {
            return Ok(Rung0::Exact(e?));
        }
        Ok(
            match LowRankIndependence::of_any(model, beta, limits.max_mesh_points, par) {
                Some(Ok(kernel)) => Rung0::StaticMh {
                    kernel: Box::new(kernel),
                    acceptance: Mutex::new((0.0, 0)),
                },
                _ => Rung0::Gibbs(Gibbs::new(sweeps)),
            },
        )
    }

    /// The refresh's name in run records: `exact`, `static-mh` or `gibbs`.
    pub fn name(&self) -> &'static str {
        match self {
            Rung0::Gibbs(_) => "gibbs",
            Rung0::Exact(_) => "exact",
            Rung0::StaticMh { .. } => "static-mh",
        }
    }

    /// The mean fraction of chains that accepted their static proposal over the steps so far:
    /// `None` before the first step and for the other refreshes.
    pub fn acceptance(&self) -> Option<f64> {
        match self {
            Rung0::StaticMh { acceptance, .. } => {
                let (sum, steps) = *acceptance.lock().unwrap_or_else(|e| e.into_inner());
                (steps > 0).then(|| sum / steps as f64)
            }
            _ => None,
        }
    }
}

impl<V, H> Kernel<Rbm<V, H>> for Rung0
where
    V: Layer + 'static,
    H: Layer<Scalar = V::Scalar> + 'static,
    Rbm<V, H>: ConditionalSampler<State = RbmChains<V::Scalar>>,
{
    type Info = ();

    /// # Panics
    /// As the refresh's own step: if the model's sizes (or, for the exact and static refreshes,
    /// `beta`) differ from those it was built for, or `rngs.len()` from the number of chains.
    fn step<R: Rng + Send>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) {
        match self {
            Rung0::Gibbs(g) => {
                g.step(model, beta, x, rngs, par);
            }
            Rung0::Exact(e) => {
                assert!(
                    beta == e.beta(),
                    "Rung0: enumerated at beta = {}, stepped at beta = {beta}",
                    e.beta()
                );
                e.sample_any(model, x, rngs, par)
                    .expect("an enumeration is built for discrete hidden layers only");
            }
            Rung0::StaticMh { kernel, acceptance } => {
                let accepted = kernel
                    .step_any(model, beta, x, rngs, par)
                    .expect("the static refresh is built for binary f64 RBMs only");
                let mut a = acceptance.lock().unwrap_or_else(|e| e.into_inner());
                a.0 += accepted;
                a.1 += 1;
            }
        }
    }
}

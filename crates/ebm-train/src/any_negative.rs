//! A negative phase chosen at run time: [`AnyNegative`] holds one of the phases of this crate
//! (PCD, CD, PT, Jarzynski, TMC, the bridge from a pretrained model) and dispatches to it,
//! with its state [`AnyNegativeState`], so that a trainer over any of them is instantiated
//! once per pair of unit types and its state file says which phase it ran. What `ebm train
//! --negative` builds, and what a library user builds from a setting read at run time.
//!
//! TMC needs discrete visible units; it is reached through [`TrainableLayer::on_discrete`]
//! (static dispatch), and on other units its `init` and `sample` return an error.

use std::any::Any;
use std::sync::Arc;

use ebm_core::{ChainState, Par, Scalar};
use ebm_models::{Bernoulli, DiscreteLayer, Rbm, RbmChains};
use ebm_samplers::tempering::PtState;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use crate::{
    Bridged, Cd, DiscreteTask, Jarzynski, JarzynskiState, NegativeInfo, NegativePhase, Pcd,
    ShardedPhase, Tempered, Tmc, TmcState, TrainableLayer,
};

/// One of the negative phases of this crate, chosen at run time: the trainer is generic over
/// its negative phase, and this enum dispatches to the chosen one (so the training code is
/// instantiated once per pair of unit types). Serialised as a one-key object named after the
/// phase (`{"pcd": {...}}`), the form `ebm train`'s state files hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnyNegative {
    /// PCD-k.
    Pcd(Pcd),
    /// CD-k.
    Cd(Cd),
    /// Parallel tempering on a temperature ladder.
    Pt(Tempered),
    /// Reweighted chains with resampling.
    Jarzynski(Jarzynski),
    /// Tethered Monte Carlo.
    Tmc(Tmc),
    /// Parallel tempering on the bridge from the run's initial model.
    Bridged(BridgeSpec),
}

/// The settings of a [`Bridged`] phase chosen at run time. Its reference, the run's initial
/// model, lives in the state ([`BridgedState`]), so that a resumed run bridges from
/// the same model; the phase built from it (with the enumeration of its hidden layer) is kept
/// for the run in a cache that is neither saved nor compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BridgeSpec {
    /// Rungs of the bridge, the reference and the current model included.
    pub rungs: usize,
    /// Gibbs sweeps per rung and round.
    pub sweeps: usize,
    /// PT rounds per update.
    pub rounds: usize,
    /// Systems (chains per rung).
    pub chains: usize,
    #[serde(skip)]
    cache: BridgeCache,
}

/// A built phase (a [`Bridged`] of the run's unit types) and the reference it was built from.
type BuiltBridge = (serde_json::Value, Arc<dyn Any + Send + Sync>);

/// The phase last built by [`BridgeSpec::phase`], with the reference it was built from.
#[derive(Clone, Debug, Default)]
struct BridgeCache(Arc<std::sync::Mutex<Option<BuiltBridge>>>);

impl PartialEq for BridgeCache {
    /// A cache is not part of the settings.
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl BridgeSpec {
    /// `rounds` rounds of PT per update on a bridge of `rungs` rungs (the reference and the
    /// current model included), `chains` systems, `sweeps` Gibbs sweeps per rung and round.
    pub fn new(rungs: usize, sweeps: usize, rounds: usize, chains: usize) -> Self {
        Self {
            rungs,
            sweeps,
            rounds,
            chains,
            cache: BridgeCache::default(),
        }
    }

    /// The library phase bridging from `reference` (an [`Rbm`] in its serde form), built once
    /// per reference.
    fn phase<V, H>(&self, reference: &serde_json::Value) -> ebm_core::Result<Arc<Bridged<V, H>>>
    where
        V: TrainableLayer + 'static,
        H: TrainableLayer<Scalar = V::Scalar> + 'static,
    {
        let mut cache = self.cache.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((r, phase)) = cache.as_ref()
            && r == reference
            && let Ok(phase) = phase.clone().downcast::<Bridged<V, H>>()
        {
            return Ok(phase);
        }
        let model: Rbm<V, H> = serde_json::from_value(reference.clone()).map_err(|e| {
            ebm_core::Error::InvalidParameter {
                name: "bridged reference model".into(),
                reason: format!("not a valid {}-{} model: {e}", V::KIND, H::KIND),
            }
        })?;
        let phase = Arc::new(Bridged::new(
            model,
            self.rungs,
            self.sweeps,
            self.rounds,
            self.chains,
            crate::MAX_EXACT_SELECTION_CONFIGURATIONS,
            Par::Rayon,
        )?);
        *cache = Some((reference.clone(), phase.clone()));
        Ok(phase)
    }
}

/// The state of a [`BridgeSpec`] phase: the replicas and the reference model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct BridgedState<F: Scalar> {
    /// Replicas of every rung.
    pub pt: PtState<RbmChains<F>>,
    /// The run's initial model, in its serde form.
    pub reference: serde_json::Value,
}

/// The state of an [`AnyNegative`] in the scalar `F` of the run: the state of the chosen
/// phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", bound = "")]
pub enum AnyNegativeState<F: Scalar> {
    /// Persistent chains of PCD.
    Pcd(ChainState<RbmChains<F>>),
    /// Chains of CD.
    Cd(ChainState<RbmChains<F>>),
    /// Replicas of PT.
    Pt(PtState<RbmChains<F>>),
    /// Weighted chains of Jarzynski.
    Jarzynski(JarzynskiState<F>),
    /// Tethered chains of TMC.
    Tmc(TmcState<F>),
    /// Replicas of the bridge and its reference.
    Bridged(BridgedState<F>),
}

impl AnyNegative {
    /// The phase's name, as `ebm train --negative` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            AnyNegative::Pcd(_) => "pcd",
            AnyNegative::Cd(_) => "cd",
            AnyNegative::Pt(_) => "pt",
            AnyNegative::Jarzynski(_) => "jarzynski",
            AnyNegative::Tmc(_) => "tmc",
            AnyNegative::Bridged(_) => "bridged",
        }
    }
}

impl<F: Scalar> AnyNegativeState<F> {
    /// The persistent chains of this state that a start can seed (from a pretrained model, for
    /// instance), each with the inverse temperature of the law it samples under `phase`, the
    /// configuration this state belongs to: PCD's and Jarzynski's chains at \\(\beta = 1\\),
    /// every rung of PT at its own \\(\beta\\), every rung of the bridge at 1 (at the start
    /// each is the reference itself). Empty for CD (whose chains restart from the data) and TMC
    /// (whose chains are tethered), and when `phase` is not this state's configuration.
    pub fn seedable_chains<'a>(
        &'a mut self,
        phase: &AnyNegative,
    ) -> Vec<(&'a mut RbmChains<F>, f64)> {
        match (phase, self) {
            (AnyNegative::Pcd(_), AnyNegativeState::Pcd(s)) => vec![(&mut s.chains, 1.0)],
            (AnyNegative::Jarzynski(_), AnyNegativeState::Jarzynski(s)) => {
                vec![(&mut s.chains.chains, 1.0)]
            }
            (AnyNegative::Pt(p), AnyNegativeState::Pt(s)) => s
                .rungs_mut()
                .iter_mut()
                .zip(p.betas.iter().copied())
                .collect(),
            (AnyNegative::Bridged(_), AnyNegativeState::Bridged(s)) => {
                s.pt.rungs_mut().iter_mut().map(|x| (x, 1.0)).collect()
            }
            _ => Vec::new(),
        }
    }
}

fn state_name<F: Scalar>(s: &AnyNegativeState<F>) -> &'static str {
    match s {
        AnyNegativeState::Pcd(_) => "pcd",
        AnyNegativeState::Cd(_) => "cd",
        AnyNegativeState::Pt(_) => "pt",
        AnyNegativeState::Jarzynski(_) => "jarzynski",
        AnyNegativeState::Tmc(_) => "tmc",
        AnyNegativeState::Bridged(_) => "bridged",
    }
}

const MISMATCH: &str = "the negative phase's state is checked against its configuration first";

/// [`Tmc`] needs discrete visible units: `init` and `sample` reach them through
/// [`TrainableLayer::on_discrete`] (an error on real-valued units); its other methods do not
/// depend on the visible type and go through the nominal `Bernoulli` instance.
impl<V, H> NegativePhase<V, H> for AnyNegative
where
    V: TrainableLayer + 'static,
    H: TrainableLayer<Scalar = V::Scalar> + 'static,
{
    type State = AnyNegativeState<V::Scalar>;

    fn init(
        &self,
        model: &Rbm<V, H>,
        batch_size: usize,
        seed: u64,
        par: Par,
    ) -> ebm_core::Result<AnyNegativeState<V::Scalar>> {
        Ok(match self {
            AnyNegative::Pcd(p) => AnyNegativeState::Pcd(NegativePhase::<V, H>::init(
                p, model, batch_size, seed, par,
            )?),
            AnyNegative::Cd(p) => AnyNegativeState::Cd(NegativePhase::<V, H>::init(
                p, model, batch_size, seed, par,
            )?),
            AnyNegative::Pt(p) => AnyNegativeState::Pt(NegativePhase::<V, H>::init(
                p, model, batch_size, seed, par,
            )?),
            AnyNegative::Jarzynski(p) => AnyNegativeState::Jarzynski(NegativePhase::<V, H>::init(
                p, model, batch_size, seed, par,
            )?),
            AnyNegative::Tmc(p) => AnyNegativeState::Tmc(
                V::on_discrete(
                    model,
                    TmcInit {
                        tmc: p,
                        batch: batch_size,
                        seed,
                        par,
                    },
                )
                .unwrap_or_else(|| Err(not_discrete()))?,
            ),
            AnyNegative::Bridged(p) => {
                let reference =
                    serde_json::to_value(model).map_err(|e| ebm_core::Error::InvalidParameter {
                        name: "bridged reference model".into(),
                        reason: e.to_string(),
                    })?;
                let pt = p
                    .phase::<V, H>(&reference)?
                    .init(model, batch_size, seed, par)?;
                AnyNegativeState::Bridged(BridgedState { pt, reference })
            }
        })
    }

    fn sample(
        &self,
        model: &Rbm<V, H>,
        state: &mut AnyNegativeState<V::Scalar>,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> ebm_core::Result<NegativeInfo> {
        match (self, state) {
            (AnyNegative::Pcd(p), AnyNegativeState::Pcd(s)) => p.sample(model, s, batch, par),
            (AnyNegative::Cd(p), AnyNegativeState::Cd(s)) => p.sample(model, s, batch, par),
            (AnyNegative::Pt(p), AnyNegativeState::Pt(s)) => p.sample(model, s, batch, par),
            (AnyNegative::Jarzynski(p), AnyNegativeState::Jarzynski(s)) => {
                p.sample(model, s, batch, par)
            }
            (AnyNegative::Tmc(p), AnyNegativeState::Tmc(s)) => V::on_discrete(
                model,
                TmcSample {
                    tmc: p,
                    state: s,
                    batch,
                    par,
                },
            )
            .unwrap_or_else(|| Err(not_discrete())),
            (AnyNegative::Bridged(p), AnyNegativeState::Bridged(s)) => p
                .phase::<V, H>(&s.reference)?
                .sample(model, &mut s.pt, batch, par),
            _ => unreachable!("{MISMATCH}"),
        }
    }

    fn chains_held(&self, batch_size: usize) -> usize {
        match self {
            AnyNegative::Pcd(p) => NegativePhase::<V, H>::chains_held(p, batch_size),
            AnyNegative::Cd(p) => NegativePhase::<V, H>::chains_held(p, batch_size),
            AnyNegative::Pt(p) => NegativePhase::<V, H>::chains_held(p, batch_size),
            AnyNegative::Jarzynski(p) => NegativePhase::<V, H>::chains_held(p, batch_size),
            AnyNegative::Tmc(p) => {
                NegativePhase::<Bernoulli<V::Scalar>, H>::chains_held(p, batch_size)
            }
            AnyNegative::Bridged(p) => p.chains.saturating_mul(p.rungs),
        }
    }

    fn check_state(
        &self,
        state: &AnyNegativeState<V::Scalar>,
        batch_size: usize,
    ) -> ebm_core::Result<()> {
        match (self, state) {
            (AnyNegative::Pcd(p), AnyNegativeState::Pcd(s)) => {
                NegativePhase::<V, H>::check_state(p, s, batch_size)
            }
            (AnyNegative::Cd(p), AnyNegativeState::Cd(s)) => {
                NegativePhase::<V, H>::check_state(p, s, batch_size)
            }
            (AnyNegative::Pt(p), AnyNegativeState::Pt(s)) => {
                NegativePhase::<V, H>::check_state(p, s, batch_size)
            }
            (AnyNegative::Jarzynski(p), AnyNegativeState::Jarzynski(s)) => {
                NegativePhase::<V, H>::check_state(p, s, batch_size)
            }
            (AnyNegative::Tmc(p), AnyNegativeState::Tmc(s)) => {
                NegativePhase::<Bernoulli<V::Scalar>, H>::check_state(p, s, batch_size)
            }
            (AnyNegative::Bridged(p), AnyNegativeState::Bridged(s)) => p
                .phase::<V, H>(&s.reference)?
                .check_state(&s.pt, batch_size),
            (p, s) => Err(ebm_core::Error::ShapeMismatch {
                what: "negative phase state".into(),
                expected: p.name().into(),
                got: state_name(s).into(),
            }),
        }
    }

    fn chains<'a>(&self, state: &'a AnyNegativeState<V::Scalar>) -> &'a RbmChains<V::Scalar> {
        match (self, state) {
            (AnyNegative::Pcd(p), AnyNegativeState::Pcd(s)) => NegativePhase::<V, H>::chains(p, s),
            (AnyNegative::Cd(p), AnyNegativeState::Cd(s)) => NegativePhase::<V, H>::chains(p, s),
            (AnyNegative::Pt(p), AnyNegativeState::Pt(s)) => NegativePhase::<V, H>::chains(p, s),
            (AnyNegative::Jarzynski(p), AnyNegativeState::Jarzynski(s)) => {
                NegativePhase::<V, H>::chains(p, s)
            }
            (AnyNegative::Tmc(p), AnyNegativeState::Tmc(s)) => {
                NegativePhase::<Bernoulli<V::Scalar>, H>::chains(p, s)
            }
            (AnyNegative::Bridged(_), AnyNegativeState::Bridged(s)) => {
                s.pt.rungs().last().expect("at least two rungs")
            }
            _ => unreachable!("{MISMATCH}"),
        }
    }

    fn every_chain<'a>(
        &self,
        state: &'a AnyNegativeState<V::Scalar>,
    ) -> Vec<&'a RbmChains<V::Scalar>> {
        match (self, state) {
            (AnyNegative::Pt(_), AnyNegativeState::Pt(s)) => s.rungs().iter().collect(),
            (AnyNegative::Bridged(_), AnyNegativeState::Bridged(s)) => {
                s.pt.rungs().iter().collect()
            }
            _ => vec![NegativePhase::<V, H>::chains(self, state)],
        }
    }

    fn samples_the_model(&self) -> bool {
        !matches!(self, AnyNegative::Cd(_))
    }

    fn weights<'a>(&self, state: &'a AnyNegativeState<V::Scalar>) -> Option<&'a [f64]> {
        match (self, state) {
            (AnyNegative::Pcd(p), AnyNegativeState::Pcd(s)) => NegativePhase::<V, H>::weights(p, s),
            (AnyNegative::Cd(p), AnyNegativeState::Cd(s)) => NegativePhase::<V, H>::weights(p, s),
            (AnyNegative::Pt(p), AnyNegativeState::Pt(s)) => NegativePhase::<V, H>::weights(p, s),
            (AnyNegative::Jarzynski(p), AnyNegativeState::Jarzynski(s)) => {
                NegativePhase::<V, H>::weights(p, s)
            }
            (AnyNegative::Tmc(p), AnyNegativeState::Tmc(s)) => {
                NegativePhase::<Bernoulli<V::Scalar>, H>::weights(p, s)
            }
            (AnyNegative::Bridged(_), AnyNegativeState::Bridged(_)) => None,
            _ => unreachable!("{MISMATCH}"),
        }
    }

    fn after_update(
        &self,
        old: &Rbm<V, H>,
        new: &Rbm<V, H>,
        state: &mut AnyNegativeState<V::Scalar>,
        info: &mut NegativeInfo,
        par: Par,
    ) -> ebm_core::Result<()> {
        match (self, state) {
            (AnyNegative::Pcd(p), AnyNegativeState::Pcd(s)) => {
                p.after_update(old, new, s, info, par)
            }
            (AnyNegative::Cd(p), AnyNegativeState::Cd(s)) => p.after_update(old, new, s, info, par),
            (AnyNegative::Pt(p), AnyNegativeState::Pt(s)) => p.after_update(old, new, s, info, par),
            (AnyNegative::Jarzynski(p), AnyNegativeState::Jarzynski(s)) => {
                p.after_update(old, new, s, info, par)
            }
            (AnyNegative::Tmc(_), AnyNegativeState::Tmc(_))
            | (AnyNegative::Bridged(_), AnyNegativeState::Bridged(_)) => Ok(()),
            _ => unreachable!("{MISMATCH}"),
        }
    }
}

// Data-parallel training.

/// PCD and CD shard their chains, PT its systems (see [`AnyNegative::shards`]); the other
/// phases return an error.
impl<V, H> ShardedPhase<V, H> for AnyNegative
where
    V: TrainableLayer + 'static,
    H: TrainableLayer<Scalar = V::Scalar> + 'static,
{
    fn shard(
        &self,
        state: &AnyNegativeState<V::Scalar>,
        range: std::ops::Range<usize>,
    ) -> ebm_core::Result<AnyNegativeState<V::Scalar>> {
        Ok(match (self, state) {
            (AnyNegative::Pcd(p), AnyNegativeState::Pcd(s)) => {
                AnyNegativeState::Pcd(ShardedPhase::<V, H>::shard(p, s, range)?)
            }
            (AnyNegative::Cd(p), AnyNegativeState::Cd(s)) => {
                AnyNegativeState::Cd(ShardedPhase::<V, H>::shard(p, s, range)?)
            }
            (AnyNegative::Pt(p), AnyNegativeState::Pt(s)) => {
                AnyNegativeState::Pt(ShardedPhase::<V, H>::shard(p, s, range)?)
            }
            _ => return Err(not_sharded(self.name())),
        })
    }

    fn join(
        &self,
        parts: Vec<AnyNegativeState<V::Scalar>>,
    ) -> ebm_core::Result<AnyNegativeState<V::Scalar>> {
        let name = self.name();
        // The parts as states of the variant, joined by its phase.
        macro_rules! join {
            ($variant:ident, $phase:expr) => {{
                let parts = parts
                    .into_iter()
                    .map(|s| match s {
                        AnyNegativeState::$variant(s) => Ok(s),
                        _ => Err(not_sharded(name)),
                    })
                    .collect::<ebm_core::Result<Vec<_>>>()?;
                AnyNegativeState::$variant(ShardedPhase::<V, H>::join($phase, parts)?)
            }};
        }
        Ok(match self {
            AnyNegative::Pcd(p) => join!(Pcd, p),
            AnyNegative::Cd(p) => join!(Cd, p),
            AnyNegative::Pt(p) => join!(Pt, p),
            _ => return Err(not_sharded(name)),
        })
    }

    fn sample_on_shard<D: crate::Shard>(
        &self,
        shard: &D,
        model: &Rbm<V, H>,
        state: &mut AnyNegativeState<V::Scalar>,
        batch: &DMatrix<V::Scalar>,
        par: Par,
    ) -> ebm_core::Result<NegativeInfo> {
        match (self, state) {
            (AnyNegative::Pcd(p), AnyNegativeState::Pcd(s)) => {
                p.sample_on_shard(shard, model, s, batch, par)
            }
            (AnyNegative::Cd(p), AnyNegativeState::Cd(s)) => {
                p.sample_on_shard(shard, model, s, batch, par)
            }
            (AnyNegative::Pt(p), AnyNegativeState::Pt(s)) => {
                p.sample_on_shard(shard, model, s, batch, par)
            }
            _ => Err(not_sharded(self.name())),
        }
    }
}

impl AnyNegative {
    /// Whether the phase runs sharded over processes ([`ShardedPhase`]): PCD, CD and PT
    /// (chains, or PT's systems on every rung); the others refuse.
    pub fn shards(&self) -> bool {
        matches!(
            self,
            AnyNegative::Pcd(_) | AnyNegative::Cd(_) | AnyNegative::Pt(_)
        )
    }
}

fn not_sharded(negative: &str) -> ebm_core::Error {
    ebm_core::Error::InvalidParameter {
        name: "negative phase".into(),
        reason: format!("{negative} does not run sharded over processes"),
    }
}

/// [`Tmc::init`] on a model whose visible units are discrete.
struct TmcInit<'a> {
    tmc: &'a Tmc,
    batch: usize,
    seed: u64,
    par: Par,
}

impl<H: TrainableLayer> DiscreteTask<H> for TmcInit<'_> {
    type Output = ebm_core::Result<TmcState<H::Scalar>>;
    fn run<V: DiscreteLayer<Scalar = H::Scalar> + TrainableLayer>(
        self,
        rbm: &Rbm<V, H>,
    ) -> Self::Output {
        self.tmc.init(rbm, self.batch, self.seed, self.par)
    }
}

/// [`Tmc::sample`] on a model whose visible units are discrete.
struct TmcSample<'a, F: Scalar> {
    tmc: &'a Tmc,
    state: &'a mut TmcState<F>,
    batch: &'a DMatrix<F>,
    par: Par,
}

impl<H: TrainableLayer> DiscreteTask<H> for TmcSample<'_, H::Scalar> {
    type Output = ebm_core::Result<NegativeInfo>;
    fn run<V: DiscreteLayer<Scalar = H::Scalar> + TrainableLayer>(
        self,
        rbm: &Rbm<V, H>,
    ) -> Self::Output {
        self.tmc.sample(rbm, self.state, self.batch, self.par)
    }
}

/// The error of the TMC phase on real-valued visible units.
fn not_discrete() -> ebm_core::Error {
    ebm_core::Error::InvalidParameter {
        name: "visible units".into(),
        reason: "the TMC negative phase needs discrete visible units (bernoulli, spin or \
                 potts): tethered Monte Carlo moves one visible unit at a time"
            .into(),
    }
}

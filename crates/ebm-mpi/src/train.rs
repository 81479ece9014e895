//! Data-parallel training: the minibatch and the persistent chains of every update sharded
//! across ranks, the gradient's sums added in block order, the model of one process.

use ebm_core::{Error, Observer, Par, Result, Scalar};
use ebm_models::RbmChains;
use ebm_train::{
    Shard, ShardedPhase, TrainInfo, TrainState, TrainableLayer, Trainer, TrainingData,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::ops::Range;

use crate::{Collective, chain_range, gather_chains};

/// The ranks of a [`Collective`] as the processes of a data-parallel training run
/// ([`ebm_train::Trainer::step_on_shard`]): rank `r` holds the columns
/// [`chain_range`]`(n, size, r)` of every batch of `n` (whole blocks, in rank order), and
/// rank 0 adds the blocks' sums and sends the result to every rank.
#[derive(Debug)]
pub struct TrainShard<'a, C: ?Sized>(pub &'a C);

impl<C: Collective + ?Sized> Shard for TrainShard<'_, C> {
    fn range(&self, total: usize) -> Range<usize> {
        chain_range(total, self.0.size(), self.0.rank())
    }

    fn is_root(&self) -> bool {
        self.0.is_root()
    }

    fn reduce(&self, local: &[f64], total: &dyn Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
        let bits: Vec<u64> = local.iter().map(|x| x.to_bits()).collect();
        let result: Vec<u64> = self.0.gather(&bits).map_or_else(Vec::new, |parts| {
            let joined: Vec<f64> = parts.iter().flatten().map(|&b| f64::from_bits(b)).collect();
            total(&joined).iter().map(|x| x.to_bits()).collect()
        });
        self.0
            .broadcast(&result)
            .into_iter()
            .map(f64::from_bits)
            .collect()
    }

    fn gather_chains<F: Scalar>(&self, local: &RbmChains<F>) -> Option<RbmChains<F>> {
        gather_chains(self.0, local, local)
    }
}

/// Rank 0's value, on every rank, through its JSON text (exact: floats are written with
/// their shortest round-trip representation).
fn broadcast_json<C, T>(c: &C, value: Option<&T>) -> Result<T>
where
    C: Collective + ?Sized,
    T: Serialize + DeserializeOwned,
{
    let bytes = value.map_or_else(Vec::new, |v| serde_json::to_vec(v).expect("serialises"));
    let words = c.broadcast(&to_words(&bytes));
    serde_json::from_slice(&from_words(&words)).map_err(|e| Error::InvalidParameter {
        name: "training state".into(),
        reason: format!("rank 0 sent a state that does not parse: {e}"),
    })
}

/// Bytes as words (the length first, 8 bytes a word).
fn to_words(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![bytes.len() as u64];
    words.extend(bytes.chunks(8).map(|c| {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(b)
    }));
    words
}

fn from_words(words: &[u64]) -> Vec<u8> {
    let len = words.first().map_or(0, |&l| l as usize);
    let mut bytes: Vec<u8> = words[1..].iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.truncate(len);
    bytes
}

/// `updates` updates of `trainer` ([`Trainer::step`]) on `state`, data-parallel over the
/// ranks of `c`: rank `r` moves the persistent chains [`chain_range`]`(n, size, r)` of the
/// `n` (each with its own stream) and sums its blocks of every minibatch and of the chains;
/// rank 0 adds the blocks' sums in block order ([`TrainShard`],
/// [`ebm_train::Trainer::step_on_shard`]), so every rank takes the step of the one-process
/// run. Each [`TrainInfo`] goes to `observer` on its rank (rank 0's carries checkpoint
/// selection and the online likelihood, which run there only).
///
/// Every rank passes the same `trainer`, `state` (the whole run's, e.g. from
/// [`Trainer::init`] with the same seed, or loaded from the same file), data and `updates`.
/// On return every rank holds the state of the one-process run after the same updates, bit
/// for bit, for any number of ranks: rank 0 joins the chains and sends the whole state to
/// the other ranks (one message of the state's JSON text per call).
///
/// The ranks agree after every update whether to go on: when an observer fails on any rank
/// (e.g. an interrupt), every rank stops after that update, the state is joined as above, and
/// the first failing rank's error is returned there (the others return
/// [`Error::Observer`] too).
///
/// # Errors
/// Errors of [`Trainer::step_on_shard`] and of the negative phase's sharding (a phase
/// chosen at run time that cannot be sharded); after such an error the ranks no longer agree
/// on the exchanges to come: end the program.
#[allow(clippy::too_many_arguments)]
pub fn train<C, V, H, P, O>(
    c: &C,
    trainer: &Trainer<P>,
    state: &mut TrainState<V, H, P::State>,
    train: &TrainingData<V::Scalar>,
    test: Option<&TrainingData<V::Scalar>>,
    updates: u64,
    par: Par,
    mut observer: O,
) -> Result<()>
where
    C: Collective + ?Sized,
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
    P: ShardedPhase<V, H>,
    O: Observer<TrainInfo>,
{
    let shard = TrainShard(c);
    trainer
        .negative
        .check_state(&state.negative, trainer.batch_size)?;
    let n = trainer.negative.chains(&state.negative).visible.ncols();
    let local = trainer.negative.shard(&state.negative, shard.range(n))?;
    state.negative = local;
    let mut stopped = Ok(());
    for _ in 0..updates {
        let info = trainer.step_on_shard(&shard, state, train, test, par)?;
        let mine = observer.observe(info.update, &info);
        let failed = u64::from(mine.is_err());
        let any = c.gather(&[failed]).map(|p| p.iter().flatten().sum::<u64>());
        let any = c.broadcast(&[any.unwrap_or(0)])[0];
        if any > 0 {
            stopped = mine.and(Err(Error::Observer(
                "another process of the run stopped it".into(),
            )));
            break;
        }
    }
    join(c, trainer, state)?;
    stopped
}

/// Every rank's shard of the chains joined on rank 0, then rank 0's whole state sent to every
/// rank.
fn join<C, V, H, P>(
    c: &C,
    trainer: &Trainer<P>,
    state: &mut TrainState<V, H, P::State>,
) -> Result<()>
where
    C: Collective + ?Sized,
    V: TrainableLayer,
    H: TrainableLayer<Scalar = V::Scalar>,
    P: ShardedPhase<V, H>,
{
    let mine = serde_json::to_vec(&state.negative).expect("the chains serialise");
    if let Some(parts) = c.gather(&to_words(&mine)) {
        let parts = parts
            .iter()
            .map(|p| {
                serde_json::from_slice(&from_words(p)).map_err(|e| Error::InvalidParameter {
                    name: "negative phase".into(),
                    reason: format!("a rank sent chains that do not parse: {e}"),
                })
            })
            .collect::<Result<Vec<P::State>>>()?;
        state.negative = trainer.negative.join(parts)?;
    }
    *state = broadcast_json(c, c.is_root().then_some(&*state))?;
    Ok(())
}

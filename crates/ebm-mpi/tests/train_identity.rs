//! Data-parallel training equals one-process training bit for bit, for any number of ranks
//! (here threads; `tests/cli_mpi.rs` runs `ebm train` over MPI processes).

mod common;

use common::on_all_ranks;
use ebm_core::{FnObserver, Par};
use ebm_models::{Bernoulli, RbmChains};
use ebm_mpi::{Collective, Threads, TrainShard, train};
use ebm_samplers::tempering::SwapSchedule;
use ebm_train::{
    CheckpointPolicy, LikelihoodPolicy, NegativePhase, Optimizer, Pcd, SelectionAcceptance, Shard,
    ShardedPhase, Tempered, TrainInfo, TrainState, Trainer, TrainingData, initial_model,
};
use nalgebra::DMatrix;

/// 600 chains and minibatches of 600: blocks of 128 (four) and 88, so that two and three ranks
/// hold several blocks each and one block is partial.
const CHAINS: usize = 600;
const UPDATES: u64 = 6;

/// 700 weighted samples of 10 binary values in two noisy clusters.
fn data() -> TrainingData<f64> {
    let samples = DMatrix::from_fn(10, 700, |i, j| {
        let cluster = j % 2 == 0;
        let flip = (i * 31 + j * 17) % 9 == 0;
        f64::from(u8::from((i < 5) == cluster) ^ u8::from(flip))
    });
    let weights = (0..700).map(|j| 1.0 + (j % 3) as f64).collect();
    TrainingData::new(&Bernoulli::zeros(10), samples)
        .unwrap()
        .with_weights(weights)
        .unwrap()
}

/// PCD-2 with Adam, checkpoint selection on the training's chains (gathered on rank 0) and
/// the online likelihood: every part of the state that a sharded run could get wrong.
fn trainer() -> Trainer<Pcd> {
    let mut t = with_adam_and_selection(Pcd {
        sweeps: 2,
        chains: CHAINS,
    });
    t.likelihood = Some(LikelihoodPolicy {
        chains: 100,
        ..LikelihoodPolicy::default()
    });
    t
}

/// `negative` on minibatches of `CHAINS`, with Adam and checkpoint selection on the
/// training's chains.
fn with_adam_and_selection<P>(negative: P) -> Trainer<P> {
    let mut t = Trainer::new(negative, CHAINS);
    t.optimizer = Optimizer::ADAM;
    t.learning_rate = ebm_train::LearningRate::Constant(0.05);
    t.checkpoints = Some(CheckpointPolicy {
        acceptance: SelectionAcceptance::Chains,
        target_acceptance: 0.9,
        ..CheckpointPolicy::default()
    });
    t
}

fn fresh<P: NegativePhase<Bernoulli, Bernoulli>>(
    trainer: &Trainer<P>,
    data: &TrainingData<f64>,
) -> TrainState<Bernoulli, Bernoulli, P::State> {
    let model = initial_model(
        Bernoulli::zeros(10),
        Bernoulli::zeros(7),
        Some(data),
        0.1,
        5,
    )
    .unwrap();
    trainer.init(model, data, 11, Par::Rayon).unwrap()
}

/// Everything a state holds, as its saved text.
fn text<S: serde::Serialize>(state: &S) -> String {
    serde_json::to_string(state).unwrap()
}

#[test]
fn data_parallel_training_equals_one_process_on_one_to_four_ranks_with_a_resume() {
    // Selection on the training's chains (gathered on rank 0), then on exact draws (7 hidden
    // units: `Auto` draws exactly, from streams of its own, on rank 0).
    for acceptance in [SelectionAcceptance::Chains, SelectionAcceptance::Auto] {
        let mut trainer = trainer();
        if let Some(policy) = trainer.checkpoints.as_mut() {
            policy.acceptance = acceptance;
        }
        identity_on_one_to_four_ranks(&trainer, &data());
    }
}

/// An observer keeping every report as its text.
fn recorder(seen: &mut Vec<String>) -> impl ebm_core::Observer<TrainInfo> + '_ {
    FnObserver(move |_: u64, info: &TrainInfo| {
        seen.push(text(info));
        Ok(())
    })
}

/// `UPDATES` updates in one process against `train` on 1 to 4 thread ranks, stopped halfway
/// and resumed from the saved text: every rank's state, and rank 0's reports (what the log is
/// written from: swap acceptance, round trips, checkpoints, likelihood) are those of one
/// process.
fn identity_on_one_to_four_ranks<P>(trainer: &Trainer<P>, data: &TrainingData<f64>)
where
    P: ShardedPhase<Bernoulli, Bernoulli>,
{
    let mut whole = fresh(trainer, data);
    let mut reports = Vec::new();
    trainer
        .run(
            &mut whole,
            data,
            None,
            UPDATES,
            Par::Rayon,
            recorder(&mut reports),
        )
        .unwrap();
    assert!(whole.checkpoints().len() > 1, "selection kept models");
    let expected = text(&whole);
    let (first, rest) = (UPDATES / 2, UPDATES - UPDATES / 2);
    for ranks in 1..=4 {
        let results = on_all_ranks(ranks, |c| {
            let mut seen = Vec::new();
            let mut state = fresh(trainer, data);
            train(
                c,
                trainer,
                &mut state,
                data,
                None,
                first,
                Par::Rayon,
                recorder(&mut seen),
            )
            .unwrap();
            // Resume from the saved text, as from a state file.
            let mut state: TrainState<_, _, P::State> =
                serde_json::from_str(&text(&state)).unwrap();
            train(
                c,
                trainer,
                &mut state,
                data,
                None,
                rest,
                Par::Rayon,
                recorder(&mut seen),
            )
            .unwrap();
            (text(&state), seen)
        });
        for (rank, (state, _)) in results.iter().enumerate() {
            assert!(
                state == &expected,
                "{ranks} ranks, {:?}: rank {rank}'s state differs",
                whole.selection_acceptance()
            );
        }
        for (a, b) in results[0].1.iter().zip(&reports) {
            assert_eq!(a, b, "{ranks} ranks: rank 0's reports differ");
        }
        assert_eq!(results[0].1.len(), reports.len());
    }
}

/// What a [`RankOrder`] shard adds on each rank before rank 0 adds the ranks' totals.
enum Summed {
    /// The moments' blocks (of this many values).
    Moments(usize),
    /// The tempered phase's acceptance probabilities per block (its message: `[len, round
    /// trips, proposals (3 pairs), block sums]`, the first word counting the others).
    Acceptance,
}

/// A shard that adds its own blocks first and sends rank 0 one sum per rank: the reduction in
/// rank order instead of block order.
struct RankOrder<'a>(TrainShard<'a, Threads>, Summed);

/// The sums of `values` taken `width` at a time.
fn chunk_sums(values: &[f64], width: usize) -> Vec<f64> {
    let mut sum = vec![0.0; width];
    for b in values.chunks(width) {
        sum.iter_mut().zip(b).for_each(|(s, x)| *s += x);
    }
    sum
}

impl Shard for RankOrder<'_> {
    fn range(&self, total: usize) -> std::ops::Range<usize> {
        self.0.range(total)
    }
    fn is_root(&self) -> bool {
        self.0.is_root()
    }
    fn reduce(&self, local: &[f64], total: &dyn Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
        const PAIRS: usize = 3;
        let mine = match self.1 {
            Summed::Moments(block) if local.len() > block => chunk_sums(local, block),
            Summed::Acceptance
                if local.len() > 2 + PAIRS && local[0] == (local.len() - 1) as f64 =>
            {
                let mut mine = local[..2 + PAIRS].to_vec();
                mine.extend(chunk_sums(&local[2 + PAIRS..], PAIRS));
                mine[0] = (mine.len() - 1) as f64;
                mine
            }
            _ => local.to_vec(),
        };
        self.0.reduce(&mine, total)
    }
    fn gather_chains<F: ebm_core::Scalar>(&self, local: &RbmChains<F>) -> Option<RbmChains<F>> {
        self.0.gather_chains(local)
    }
}

/// The model after `UPDATES` updates on every rank, with the first streams on every rank
/// (`bad_streams`) or the reduction in rank order (`rank_order`).
fn models_with(
    ranks: usize,
    trainer: &Trainer<Pcd>,
    data: &TrainingData<f64>,
    bad_streams: bool,
    rank_order: bool,
) -> Vec<String> {
    on_all_ranks(ranks, |c| {
        let mut state = fresh(trainer, data);
        let shard = TrainShard(c);
        let range = shard.range(CHAINS);
        let mut local = ebm_train::shard_chain_state(&state.negative, range.clone()).unwrap();
        if bad_streams {
            // Every rank takes the first streams (as they stand) instead of its own.
            local.rngs = state.negative.rngs.subset(0..range.len());
        }
        state.negative = local;
        // Nh (7) * Nv (10) + means and fields of both layers.
        let wrapped = RankOrder(TrainShard(c), Summed::Moments(10 * 7 + 2 * (10 + 7)));
        for _ in 0..UPDATES {
            if rank_order {
                trainer.step_on_shard(&wrapped, &mut state, data, None, Par::Rayon)
            } else {
                trainer.step_on_shard(&shard, &mut state, data, None, Par::Rayon)
            }
            .unwrap();
        }
        serde_json::to_string(&state.model).unwrap()
    })
}

#[test]
fn a_reduction_in_rank_order_or_a_reused_stream_breaks_the_identity() {
    let (mut trainer, data) = (trainer(), data());
    // Negative controls on the model alone: no selection, no likelihood.
    trainer.checkpoints = None;
    trainer.likelihood = None;
    let mut whole = fresh(&trainer, &data);
    trainer
        .run(&mut whole, &data, None, UPDATES, Par::Rayon, ())
        .unwrap();
    let expected = serde_json::to_string(&whole.model).unwrap();
    // The harness itself: the correct shard gives the model on 3 ranks.
    assert!(
        models_with(3, &trainer, &data, false, false)
            .iter()
            .all(|m| m == &expected)
    );
    // Rank order: 2 ranks hold blocks 0-2 and 3-4, 3 ranks 0-1, 2-3 and 4; the sums of
    // blocks 3 + 4 (and 2 + 3) are added before the running total, so the rounding differs.
    // On one rank the rank order is the block order.
    assert!(models_with(1, &trainer, &data, false, true)[0] == expected);
    for ranks in [2, 3] {
        let models = models_with(ranks, &trainer, &data, false, true);
        assert!(
            models[0] != expected,
            "{ranks} ranks: rank order went unnoticed"
        );
    }
    // Reused streams: on one rank the first streams are the right ones.
    assert!(models_with(1, &trainer, &data, true, false)[0] == expected);
    for ranks in [2, 3] {
        let models = models_with(ranks, &trainer, &data, true, false);
        assert!(
            models[0] != expected,
            "{ranks} ranks: reused streams went unnoticed"
        );
    }
}

#[test]
fn the_ranks_stop_together_when_an_observer_fails_on_one() {
    let (trainer, data) = (trainer(), data());
    let mut whole = fresh(&trainer, &data);
    trainer
        .run(&mut whole, &data, None, 2, Par::Rayon, ())
        .unwrap();
    let results = on_all_ranks(3, |c| {
        let mut state = fresh(&trainer, &data);
        let rank = c.rank();
        // Rank 1 fails after update 2, as an interrupted process would.
        let observer = FnObserver(move |update: u64, _: &ebm_train::TrainInfo| {
            if rank == 1 && update == 2 {
                Err(ebm_core::Error::Observer("interrupted".into()))
            } else {
                Ok(())
            }
        });
        let done = train(
            c,
            &trainer,
            &mut state,
            &data,
            None,
            UPDATES,
            Par::Rayon,
            observer,
        );
        (done.is_err(), state.update, text(&state))
    });
    for (failed, update, state) in &results {
        assert!(failed);
        assert_eq!(*update, 2);
        assert!(
            state == &text(&whole),
            "the state after the stop is the one-process state"
        );
    }
}

/// PT on 4 rungs (rung 0 at beta 0.05), one sweep and 2 rounds per update, `chains` systems
/// and minibatches of 600, Adam, selection on the training's chains.
fn tempered(schedule: SwapSchedule, chains: usize) -> Trainer<Tempered> {
    with_adam_and_selection(Tempered {
        betas: vec![0.05, 0.3, 0.6, 1.0],
        schedule,
        sweeps: 1,
        rounds: 2,
        chains,
    })
}

#[test]
fn training_with_a_tempered_negative_phase_equals_one_process_for_every_schedule() {
    let data = data();
    // 600 systems: five blocks, uneven over 2, 3 and 4 ranks.
    for schedule in SwapSchedule::ALL {
        identity_on_one_to_four_ranks(&tempered(schedule, CHAINS), &data);
    }
    // 300 systems: three blocks, so the fourth rank holds none.
    identity_on_one_to_four_ranks(&tempered(SwapSchedule::Lifted, 300), &data);
}

/// Rank 0's reports and state after `UPDATES` updates of `trainer` on `ranks` thread ranks,
/// with every rank taking the streams of the first systems (`bad_streams`) or the swap
/// acceptance reduced in rank order (`rank_order`).
fn tempered_run(
    ranks: usize,
    trainer: &Trainer<Tempered>,
    data: &TrainingData<f64>,
    bad_streams: bool,
    rank_order: bool,
) -> (Vec<String>, String) {
    let mut results = on_all_ranks(ranks, |c| {
        let mut state = fresh(trainer, data);
        let shard = TrainShard(c);
        let range = shard.range(CHAINS);
        let mut local = ShardedPhase::<Bernoulli, Bernoulli>::shard(
            &trainer.negative,
            &state.negative,
            range.clone(),
        )
        .unwrap();
        if bad_streams {
            let first = ShardedPhase::<Bernoulli, Bernoulli>::shard(
                &trainer.negative,
                &state.negative,
                0..range.len(),
            )
            .unwrap();
            local.rngs = first.rngs;
        }
        state.negative = local;
        let mut reports = Vec::new();
        for _ in 0..UPDATES {
            let info = if rank_order {
                trainer.step_on_shard(
                    &RankOrder(TrainShard(c), Summed::Acceptance),
                    &mut state,
                    data,
                    None,
                    Par::Rayon,
                )
            } else {
                trainer.step_on_shard(&shard, &mut state, data, None, Par::Rayon)
            };
            reports.push(text(&info.unwrap().negative));
        }
        (reports, text(&state.model))
    });
    results.swap_remove(0)
}

#[test]
fn tempered_training_breaks_with_reused_streams_or_a_rank_order_acceptance_sum() {
    let data = data();
    for schedule in [SwapSchedule::DeterministicEvenOdd, SwapSchedule::Lifted] {
        let mut trainer = tempered(schedule, CHAINS);
        trainer.checkpoints = None;
        let mut whole = fresh(&trainer, &data);
        let mut reports = Vec::new();
        for _ in 0..UPDATES {
            let info = trainer.step(&mut whole, &data, None, Par::Rayon).unwrap();
            reports.push(text(&info.negative));
        }
        let expected = (reports, text(&whole.model));
        // The harness: the correct shard gives the one-process run on 3 ranks, and so do
        // both breakages on one rank (its streams are the first; its rank order is the
        // block order).
        assert!(tempered_run(3, &trainer, &data, false, false) == expected);
        assert!(tempered_run(1, &trainer, &data, true, false) == expected);
        assert!(tempered_run(1, &trainer, &data, false, true) == expected);
        for ranks in [2, 3] {
            let (reports, model) = tempered_run(ranks, &trainer, &data, true, false);
            assert!(
                model != expected.1 && reports != expected.0,
                "{schedule:?}, {ranks} ranks: reused streams went unnoticed"
            );
            // The rank-order sum leaves the chains and the model alone but changes the
            // reported swap acceptance (the rounding of 1 to 4 of the 6 updates' sums here).
            let (reports, model) = tempered_run(ranks, &trainer, &data, false, true);
            assert!(model == expected.1);
            assert!(
                reports != expected.0,
                "{schedule:?}, {ranks} ranks: the rank-order acceptance sum went unnoticed"
            );
        }
    }
}

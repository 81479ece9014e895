//! Same seed, same chains: for any thread count, and across a checkpoint.

use ebm::nalgebra::DMatrix;
use ebm::prelude::*;

fn model() -> Rbm<Bernoulli<f32>, Spin<f32>> {
    let (nv, nh) = (30, 12);
    let w = DMatrix::from_fn(nv, nh, |i, j| {
        (((i * 31 + j * 17) % 23) as f32 - 11.0) * 0.05
    });
    Rbm::new(
        Bernoulli::new((0..nv).map(|i| (i % 5) as f32 * 0.1 - 0.2).collect()),
        Spin::new((0..nh).map(|j| (j % 3) as f32 * 0.2 - 0.2).collect()),
        w,
    )
    .unwrap()
}

/// 300 chains span three chunks of `CHAIN_CHUNK` = 128, so two threads really split the work.
const CHAINS: usize = 300;

fn sample<K: Kernel<Rbm<Bernoulli<f32>, Spin<f32>>>>(
    kernel: &K,
    threads: usize,
    par: Par,
) -> ChainState<RbmChains<f32>> {
    let rbm = model();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut state = ChainState::new(rbm.new_state(CHAINS), 2024);
        run(&rbm, kernel, 0.8, &mut state, 25, par, ()).unwrap();
        state
    })
}

#[test]
fn chains_are_bit_identical_for_any_thread_count() {
    let reference = sample(&Gibbs::new(2), 1, Par::Seq);
    assert_eq!(reference.steps, 25);
    for (threads, par) in [(1, Par::Rayon), (2, Par::Rayon), (2, Par::Seq)] {
        let other = sample(&Gibbs::new(2), threads, par);
        assert_eq!(other, reference, "Gibbs with {threads} threads, {par:?}");
    }
    let m1 = sample(&Metropolis::new(1), 1, Par::Seq);
    let m2 = sample(&Metropolis::new(1), 2, Par::Rayon);
    assert_eq!(m1, m2, "Metropolis");
    // The run did move: chains differ from their initial state and from each other.
    let first = reference.chains.visible.column(0).clone_owned();
    assert!(reference.chains.visible.column_iter().any(|c| c != first));
}

#[test]
fn a_different_seed_gives_different_chains() {
    let rbm = model();
    let mut a = ChainState::new(rbm.new_state(CHAINS), 1);
    let mut b = ChainState::new(rbm.new_state(CHAINS), 2);
    run(&rbm, &Gibbs::new(1), 1.0, &mut a, 3, Par::Rayon, ()).unwrap();
    run(&rbm, &Gibbs::new(1), 1.0, &mut b, 3, Par::Rayon, ()).unwrap();
    assert_ne!(a.chains, b.chains);
}

#[test]
fn saving_and_restoring_the_state_continues_the_run_exactly() {
    let rbm = model();
    let kernel = Gibbs::new(1);
    let mut straight = ChainState::new(rbm.new_state(CHAINS), 77);
    run(&rbm, &kernel, 1.0, &mut straight, 40, Par::Rayon, ()).unwrap();

    let mut first = ChainState::new(rbm.new_state(CHAINS), 77);
    run(&rbm, &kernel, 1.0, &mut first, 15, Par::Rayon, ()).unwrap();
    let saved = serde_json::to_string(&first).unwrap();
    drop(first);
    let mut resumed: ChainState<RbmChains<f32>> = serde_json::from_str(&saved).unwrap();
    assert_eq!(resumed.steps, 15);
    run(&rbm, &kernel, 1.0, &mut resumed, 25, Par::Seq, ()).unwrap();
    assert_eq!(resumed, straight);
}

#[test]
fn observers_see_every_step_and_can_stop_the_run() {
    let rbm = model();
    let mut state = ChainState::new(rbm.new_state(8), 5);
    let mut seen = Vec::new();
    let obs = FnObserver(
        |step: u64, info: &StepInfo<'_, ebm::samplers::GibbsInfo, RbmChains<f32>>| {
            seen.push((step, info.kernel.sweeps, info.chains.n_chains()));
            Ok(())
        },
    );
    run(
        &rbm,
        &Gibbs::new(3),
        1.0,
        &mut state,
        4,
        Par::Seq,
        Every(2, obs),
    )
    .unwrap();
    assert_eq!(seen, vec![(2, 3, 8), (4, 3, 8)]);

    let stop = FnObserver(
        |step: u64, _: &StepInfo<'_, ebm::samplers::GibbsInfo, RbmChains<f32>>| {
            if step == 7 {
                Err(Error::Observer("enough".into()))
            } else {
                Ok(())
            }
        },
    );
    let err = run(&rbm, &Gibbs::new(1), 1.0, &mut state, 10, Par::Seq, stop).unwrap_err();
    assert!(err.to_string().contains("enough"));
    assert_eq!(
        state.steps, 7,
        "the run stops at the step whose observer failed"
    );
}

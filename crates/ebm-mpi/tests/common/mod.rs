//! Helpers shared by the identity tests: a small RBM and a group of thread ranks.

#![allow(dead_code)] // each test file uses its own subset

use ebm_models::{Bernoulli, Rbm};
use ebm_mpi::Threads;
use nalgebra::DMatrix;

/// A 10 x 7 Bernoulli RBM with deterministic fields and weights scaled by `scale`.
pub fn rbm(scale: f64) -> Rbm<Bernoulli, Bernoulli> {
    Rbm::new(
        Bernoulli::new((0..10).map(|i| 0.2 - 0.05 * i as f64).collect()),
        Bernoulli::new((0..7).map(|j| 0.1 * j as f64 - 0.3).collect()),
        DMatrix::from_fn(10, 7, |i, j| {
            scale * ((3 * i + 5 * j) % 7) as f64 / 7.0 - 0.4
        }),
    )
    .unwrap()
}

/// Runs `f` on every rank of a group of `ranks` threads; returns every rank's result, in rank
/// order.
pub fn on_all_ranks<T: Send>(ranks: usize, f: impl Fn(&Threads) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let handles: Vec<_> = Threads::group(ranks)
            .into_iter()
            .map(|c| {
                let f = &f;
                s.spawn(move || f(&c))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

//! Deterministic against stochastic even/odd swaps, seen through one replica: the rung of the
//! replica that starts at rung 0, round after round, on the same temperature ladder of the
//! Curie–Weiss RBM. Under DEO an accepted swap keeps the replica moving in the same
//! direction, so it crosses the ladder ballistically; under SEO it diffuses.
//!
//! Run with `cargo run --release --example swap_schedules` (a second); it prints the round
//! trips of each schedule and draws the book's figure when `EBM_FIGURES` names a directory.

use ebm::prelude::*;
use ebm::samplers::tempering::{
    Ladder, ParallelTempering, PtState, SwapSchedule, TemperatureLadder,
};

fn main() -> Result<(), Error> {
    // ANCHOR: index
    let rbm = CurieWeiss::new(50, 1.44, 0.0)?.to_rbm()?;
    let ladder = TemperatureLadder::geometric(rbm, 0.3, 12)?;
    let (systems, rounds) = (64, 2000);
    let mut series = Vec::new();
    let mut trips = Vec::new();
    for (name, schedule) in [
        (
            "deterministic even/odd (DEO)",
            SwapSchedule::DeterministicEvenOdd,
        ),
        ("stochastic even/odd (SEO)", SwapSchedule::StochasticEvenOdd),
    ] {
        let rungs = (0..ladder.n_rungs())
            .map(|_| ladder.model().new_state(systems))
            .collect();
        let mut state = PtState::new(rungs, 9)?;
        let pt = ParallelTempering::new(Gibbs::new(1), schedule);
        let report = pt.run(&ladder, &mut state, rounds, Par::Rayon, ())?;
        // The rung of replica 0 (it starts at rung 0) of system 0, after every round.
        let path = report.index.series(0, 0);
        let per_system = report.diagnostics.round_trip_rate();
        println!(
            "{name}: {per_system:.4} round trips per system and round (ideal DEO with these \
             acceptances: {:.4})",
            report.diagnostics.ideal_deo_round_trip_rate()
        );
        series.push(ebm::plot::Series {
            label: format!("{name}, {per_system:.4} round trips per system and round"),
            points: path
                .iter()
                .take(300)
                .enumerate()
                .map(|(round, &rung)| ((round + 1) as f64, f64::from(rung)))
                .collect(),
        });
        trips.push(per_system);
    }
    // ANCHOR_END: index
    // What the book says: DEO completes more round trips than SEO on the same ladder.
    assert!(
        trips[0] > trips[1],
        "round trips per system and round: {trips:?}"
    );
    if let Some(path) = ebm::plot::book_figure("swap-schedules.svg") {
        ebm::plot::line_chart(
            &path,
            "The rung of one replica, 12 rungs (Curie–Weiss, N = 50)",
            ("round", "rung (0: beta = 0.3, 11: the target)"),
            &series,
        )?;
    }
    Ok(())
}

//! Why alternating Gibbs sampling gets stuck, in one picture: the magnetisation of one Gibbs
//! chain on the RBM form of the Curie–Weiss model (spin visibles, one Gaussian hidden unit) at
//! \\(\beta J = 1.44\\), for three sizes \\(N\\). The two modes \\(\pm m^*\\) are exactly
//! equally likely at every size, but the free-energy barrier between them grows with \\(N\\)
//! (\\(N \Delta f\\)), and the chain's time between switches grows as \\(e^{N \Delta f}\\).
//!
//! Run with `cargo run --release --example gibbs_traces`; it prints each size's barrier and
//! switch count, and draws the book's figure when `EBM_FIGURES` names a directory.

use ebm::prelude::*;

fn main() -> Result<(), Error> {
    // ANCHOR: traces
    let (coupling, sweeps) = (1.44, 2000);
    let mut series = Vec::new();
    let mut switches = Vec::new();
    for n in [12, 36, 200] {
        let cw = CurieWeiss::new(n, coupling, 0.0)?;
        let rbm = cw.to_rbm()?;
        let m_star = cw.mean_field_magnetisation(1.0);
        // One chain, started in the + mode (all spins up).
        let mut state = ChainState::new(rbm.new_state(1), 3);
        state.chains.visible.fill(1.0);
        let (mut trace, mut mode, mut count) = (Vec::new(), 1.0, 0);
        run(
            &rbm,
            &Gibbs::new(1),
            1.0,
            &mut state,
            sweeps,
            Par::Seq,
            FnObserver(|step, info: &StepInfo<'_, _, RbmChains<f64>>| {
                let m = info.chains.visible.sum() / n as f64;
                // A switch: the chain reaches the other mode's half-way point.
                if m * mode < -m_star / 2.0 {
                    mode = -mode;
                    count += 1;
                }
                trace.push((step as f64, m));
                Ok(())
            }),
        )?;
        println!(
            "N = {n:>3}: barrier N Δf = {:.2} (exp(N Δf) = {:.1e}); {count} switches in \
             {sweeps} sweeps",
            n as f64 * cw.barrier(1.0),
            (n as f64 * cw.barrier(1.0)).exp()
        );
        series.push(ebm::plot::Series {
            label: format!("N = {n}"),
            points: trace,
        });
        switches.push(count);
    }
    // ANCHOR_END: traces
    // What the book says of the traces: fewer switches as N grows, none at N = 200.
    assert!(
        switches[0] > switches[1] && switches[1] > 0 && switches[2] == 0,
        "switches per size: {switches:?}"
    );
    if let Some(path) = ebm::plot::book_figure("gibbs-traces.svg") {
        ebm::plot::line_chart(
            &path,
            "One Gibbs chain on the Curie–Weiss model, beta J = 1.44",
            ("Gibbs sweeps", "magnetisation per spin m"),
            &series,
        )?;
    }
    Ok(())
}

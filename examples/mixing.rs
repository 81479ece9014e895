//! Mode jumps at equal cost: plain Gibbs against parallel tempering on a temperature ladder
//! (PT), on a ladder from an independent-site reference fitted to data (PT-ref), and on a
//! trajectory of models with growing couplings (PTT, stochastic and deterministic even/odd
//! swaps), and stacked tempering (ST, a stack of the model and a Gaussian RBM fitted to its
//! hidden representations), for a bimodal Curie–Weiss model whose mode weights are known
//! exactly.
//!
//! The cost of every sampler is counted in Gibbs sweeps per system: a PT round on a ladder of
//! R rungs costs R sweeps. Each sampler gets the same budget; the table reports how often the
//! target rung changes mode per 1000 sweeps and the weight of the + mode it sees, against the
//! exact weight.
//!
//! Run with `cargo run --release --example mixing`. With `EBM_FIGURES=book/src/figures` it also
//! draws the book's figure of the swap acceptance of every ladder pair.

use ebm::models::Stack;
use ebm::prelude::*;
use ebm::samplers::tempering::{
    Ladder, ParallelTempering, PtDiagnostics, PtState, ReferenceLadder, StackLadder,
    StackedTempering, SwapSchedule, TemperatureLadder, TrajectoryLadder, equalised_schedule,
    select_rungs,
};
use ebm_train::{TrainingData, sampled_representations};

type Model = Rbm<Spin<f64>, Gaussian<f64>>;

/// Mode labels with hysteresis: + once the magnetisation exceeds `threshold`, - once it falls
/// below `-threshold`, unchanged in between (so that fluctuations around m = 0 are not jumps).
fn update_labels(x: &RbmChains<f64>, labels: &mut [bool], threshold: f64) {
    let n = x.visible.nrows() as f64;
    for (label, column) in labels.iter_mut().zip(x.visible.column_iter()) {
        let m = column.sum() / n;
        if m > threshold {
            *label = true;
        } else if m < -threshold {
            *label = false;
        }
    }
}

/// What one sampler did with the budget.
struct Outcome {
    name: &'static str,
    rungs: usize,
    jumps_per_1000_sweeps: f64,
    plus_weight: f64,
    details: String,
    /// The swap acceptance of every pair and the round trips, for the book's figure (PT runs).
    swaps: Option<ebm::plot::SwapRun>,
}

/// Runs PT on `ladder` for `budget` Gibbs sweeps per system, every replica starting in the +
/// mode, and measures jumps and the + mode weight at the target rung after `burn_in` rounds.
fn run_pt<L: Ladder<Model = Model>>(
    name: &'static str,
    ladder: &L,
    schedule: SwapSchedule,
    (systems, budget, threshold): (usize, usize, f64),
    seed: u64,
) -> Result<Outcome, Error> {
    let k = ladder.n_rungs();
    let rounds = budget / k;
    let burn_in = rounds / 10;
    let rungs = (0..k)
        .map(|r| {
            let mut x = ladder.rung(r).model.new_state(systems);
            x.visible.fill(1.0);
            x
        })
        .collect();
    // ANCHOR: pt_loop
    let mut state = PtState::new(rungs, seed)?;
    let pt = ParallelTempering::new(Gibbs::new(1), schedule);
    let mut labels = vec![true; systems];
    let (mut jumps, mut plus, mut total) = (0usize, 0usize, 0usize);
    // After every round (numbered from 1) the observer sees the target rung's chains.
    let observer = FnObserver(|round: u64, target: &RbmChains<f64>| {
        let before = labels.clone();
        update_labels(target, &mut labels, threshold);
        if round > burn_in as u64 {
            jumps += before.iter().zip(&labels).filter(|(a, b)| a != b).count();
            plus += labels.iter().filter(|&&l| l).count();
            total += systems;
        }
        Ok(())
    });
    let report = pt.run(ladder, &mut state, rounds as u64, Par::Rayon, observer)?;
    for w in &report.warnings {
        eprintln!("{name}: warning: {w}");
    }
    // ANCHOR_END: pt_loop
    let rates = report.diagnostics.acceptance_rates();
    let min_rate = rates.iter().cloned().fold(1.0, f64::min);
    let tau = report
        .index_tau_int
        .map_or("n/a".to_string(), |t| format!("{t:.0}"));
    let d = &report.diagnostics;
    let swaps = ebm::plot::SwapRun {
        label: name.into(),
        acceptance: rates.iter().map(|&a| a.is_finite().then_some(a)).collect(),
        round_trip_rate: d.round_trip_rate(),
        ideal_deo_round_trip_rate: Some(d.ideal_deo_round_trip_rate()),
    };
    Ok(Outcome {
        name,
        rungs: k,
        jumps_per_1000_sweeps: 1000.0 * jumps as f64
            / (systems as f64 * ((rounds - burn_in) * k) as f64),
        plus_weight: plus as f64 / total as f64,
        details: format!(
            "min acceptance {min_rate:.2}, barrier {:.2}, round trips/system {:.2}, tau_int(index) {tau} rounds",
            report.diagnostics.communication_barrier(),
            state.round_trips as f64 / systems as f64,
        ),
        swaps: Some(swaps),
    })
}

/// Ten interpolation coefficients from 0 to 1, evenly spaced and then equalised three times
/// with the rejection rates measured in short pilot runs (the barrier-based schedule of
/// non-reversible PT).
fn equalised_reference_betas(
    rbm: &Model,
    reference: &Model,
    systems: usize,
) -> Result<Vec<f64>, Error> {
    // ANCHOR: equalise
    let mut betas: Vec<f64> = (0..10).map(|i| i as f64 / 9.0).collect();
    for pilot in 0..3 {
        let ladder = ReferenceLadder::new(rbm, reference, betas.clone())?;
        let rungs = (0..ladder.n_rungs())
            .map(|_| rbm.new_state(systems))
            .collect();
        let mut state = PtState::new(rungs, 100 + pilot)?;
        let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
        let pilot = pt.run(&ladder, &mut state, 300, Par::Rayon, ())?;
        let rates = pilot.diagnostics.acceptance_rates();
        betas = equalised_schedule(&betas, &rates, betas.len())?;
    }
    // ANCHOR_END: equalise
    Ok(betas)
}

fn main() -> Result<(), Error> {
    // N = 120 spins, beta J = 1.5, a small field favouring the - mode.
    let (n, coupling, field) = (120, 1.5, -0.004);
    let cw = CurieWeiss::new(n, coupling, field)?;
    let rbm = cw.to_rbm()?;
    let exact_plus = cw.positive_mode_weight(1.0);
    let threshold = 0.5 * cw.mean_field_magnetisation(1.0);
    let (systems, budget) = (100, 12_000);
    let settings = (systems, budget, threshold);
    println!(
        "Curie–Weiss N = {n}, beta J = {coupling}, field {field}: modes at m = ±{:.2}, exact + mode weight {exact_plus:.3}",
        cw.mean_field_magnetisation(1.0)
    );
    println!(
        "budget: {budget} Gibbs sweeps per system, {systems} systems, all started in the + mode\n"
    );

    let mut outcomes = Vec::new();

    // Plain Gibbs.
    let mut gibbs = ChainState::new(rbm.new_state(systems), 1);
    gibbs.chains.visible.fill(1.0);
    let mut labels = vec![true; systems];
    let (mut jumps, mut plus, mut total) = (0usize, 0usize, 0usize);
    for sweep in 0..budget {
        Gibbs::new(1).step(
            &rbm,
            1.0,
            &mut gibbs.chains,
            gibbs.rngs.as_mut_slice(),
            Par::Rayon,
        );
        let before = labels.clone();
        update_labels(&gibbs.chains, &mut labels, threshold);
        if sweep >= budget / 10 {
            jumps += before.iter().zip(&labels).filter(|(a, b)| a != b).count();
            plus += labels.iter().filter(|&&l| l).count();
            total += systems;
        }
    }
    outcomes.push(Outcome {
        name: "Gibbs",
        rungs: 1,
        jumps_per_1000_sweeps: 1000.0 * jumps as f64 / total as f64,
        plus_weight: plus as f64 / total as f64,
        details: String::new(),
        swaps: None,
    });

    // PT on a temperature ladder chosen for a neighbour acceptance of 0.3 (greedy scan of 200
    // temperatures from beta = 0.3, where the model is unimodal).
    let grid: Vec<f64> = (0..200)
        .map(|i| 0.3 + 0.7 * i as f64 / 199.0)
        .map(|b: f64| b.min(1.0))
        .collect();
    // ANCHOR: greedy
    let mut scan = ChainState::new(rbm.new_state(400), 3);
    let temperatures = TemperatureLadder::with_target_acceptance(
        rbm.clone(),
        grid,
        &Gibbs::new(1),
        &mut scan,
        10,
        0.3,
        Par::Rayon,
    )?;
    // ANCHOR_END: greedy
    outcomes.push(run_pt(
        "PT (temperature, DEO)",
        &temperatures,
        SwapSchedule::DeterministicEvenOdd,
        settings,
        4,
    )?);

    // PT with reference: independent spins fitted to the magnetisations of exact data samples,
    // interpolated to the model. Two references: the data means as they are (the mean of a
    // two-mode mixture lies between the modes, closer to the heavier one), and the means of
    // the data symmetrised under the global spin flip that maps one mode onto the other (zero).
    let data = cw.exact_samples(2000, 1.0, 5);
    let data_means: Vec<f64> = data.row_iter().map(|r| r.mean()).collect();
    for (name, means, seed) in [
        ("PT-ref, data means (DEO)", data_means, 6),
        ("PT-ref, symmetrised (DEO)", vec![0.0; n], 16),
    ] {
        let reference = Rbm::new(
            Spin::from_means(&means),
            Gaussian::new(vec![1.0], vec![0.0])?,
            ebm::nalgebra::DMatrix::zeros(n, 1),
        )?;
        let betas = equalised_reference_betas(&rbm, &reference, systems)?;
        let with_reference = ReferenceLadder::new(&rbm, &reference, betas)?;
        outcomes.push(run_pt(
            name,
            &with_reference,
            SwapSchedule::DeterministicEvenOdd,
            settings,
            seed,
        )?);
    }

    // PTT: a "training trajectory" of 100 models whose coupling grows from 0.2 to beta J,
    // thinned offline to neighbour acceptance >= 0.25 (Béreux et al., *Fast training and sampling of RBMs*).
    // ANCHOR: ptt
    let trajectory = (0..100)
        .map(|t| CurieWeiss::new(n, 0.2 + (coupling - 0.2) * t as f64 / 99.0, field)?.to_rbm())
        .collect::<Result<Vec<_>, _>>()?;
    let fine = TrajectoryLadder::new(trajectory.clone())?;
    let mut scan = ChainState::new(rbm.new_state(400), 7);
    let kept = select_rungs(&fine, &Gibbs::new(1), &mut scan, 10, 0.25, Par::Rayon)?;
    let ptt = TrajectoryLadder::new(kept.iter().map(|&t| trajectory[t].clone()).collect())?;
    // ANCHOR_END: ptt
    outcomes.push(run_pt(
        "PTT (stochastic even/odd)",
        &ptt,
        SwapSchedule::StochasticEvenOdd,
        settings,
        8,
    )?);
    outcomes.push(run_pt(
        "DEO-PTT",
        &ptt,
        SwapSchedule::DeterministicEvenOdd,
        settings,
        9,
    )?);

    // Stacked tempering (paper 002) with a stack of two RBMs: the model, and above it a
    // Gaussian-Gaussian RBM fitted by maximum likelihood to one sampled hidden representation
    // h ~ P(h | v) of each exact data sample. With zero coupling its visible marginal is a
    // Gaussian, whose maximum-likelihood fit is the sample mean and variance of the h's; it
    // covers both modes of h, so the exchange proposes the bottom a fresh h from either mode.
    // One iteration costs one Gibbs sweep per RBM.
    // ANCHOR: st
    let visible = Spin::zeros(n);
    let hs = sampled_representations(
        &rbm,
        &TrainingData::from_f64(&visible, &data)?,
        10,
        Par::Rayon,
    )?;
    let h = hs.samples().row(0);
    let (mean, var) = (h.mean(), h.variance());
    let above = Rbm::new(
        Gaussian::new(vec![1.0 / var], vec![mean / var])?,
        Gaussian::standard(1),
        ebm::nalgebra::DMatrix::zeros(1, 1),
    )?;
    let ladder = StackLadder::new(Stack::new(rbm.clone(), vec![above])?);
    let st = StackedTempering::default();
    let mut state = st.init(
        &ladder,
        &ebm::nalgebra::DMatrix::from_element(n, systems, 1.0),
        11,
        Par::Rayon,
    )?;
    let mut diagnostics = PtDiagnostics::new(systems);
    let (mut labels, mut sweeps) = (vec![true; systems], 0);
    let (mut jumps, mut plus, mut total) = (0usize, 0usize, 0usize);
    while sweeps < budget {
        let info = st.step(&ladder, &mut state, Par::Rayon);
        sweeps += info.ags_steps as usize;
        diagnostics.record(&info.exchanges);
        let before = labels.clone();
        update_labels(StackedTempering::bottom(&state), &mut labels, threshold);
        if sweeps > budget / 10 {
            jumps += before.iter().zip(&labels).filter(|(a, b)| a != b).count();
            plus += labels.iter().filter(|&&l| l).count();
            total += systems;
        }
    }
    // ANCHOR_END: st
    outcomes.push(Outcome {
        name: "ST (2 RBMs, DEO)",
        rungs: 2,
        jumps_per_1000_sweeps: 1000.0 * jumps as f64 / (2 * total) as f64,
        plus_weight: plus as f64 / total as f64,
        details: format!(
            "exchange acceptance {:.2}, round trips/system {:.2}",
            diagnostics.acceptance_rates()[0],
            state.round_trips as f64 / systems as f64
        ),
        swaps: None,
    });

    println!(
        "{:<28} {:>5} {:>22} {:>14}",
        "sampler", "rungs", "jumps / 1000 sweeps", "+ mode weight"
    );
    for o in &outcomes {
        println!(
            "{:<28} {:>5} {:>22.3} {:>8.3} ({exact_plus:.3})  {}",
            o.name, o.rungs, o.jumps_per_1000_sweeps, o.plus_weight, o.details
        );
    }
    // The book's table of this run (written where EBM_FIGURES points, beside its figures).
    if let Some(path) = ebm::plot::book_figure("tempering-equal-cost.md") {
        let mut table = format!(
            "| sampler | rungs | mode jumps per 1000 sweeps | + mode weight (exact {exact_plus:.3}) \
             | details |\n|---|---|---|---|---|\n"
        );
        for o in &outcomes {
            table += &format!(
                "| {} | {} | {:.1} | {:.3} | {} |\n",
                o.name, o.rungs, o.jumps_per_1000_sweeps, o.plus_weight, o.details
            );
        }
        std::fs::write(&path, table).map_err(|source| Error::Io { path, source })?;
    }
    // The book's figure: the swap acceptance of every pair of each PT ladder, with its round
    // trips (written where EBM_FIGURES points).
    if let Some(path) = ebm::plot::book_figure("tempering-swaps.svg") {
        let runs: Vec<_> = outcomes.iter().filter_map(|o| o.swaps.clone()).collect();
        ebm::plot::swap_acceptance(&path, &runs)?;
    }
    println!(
        "\nThe data-mean reference sits between the modes, nearer the heavier one: along its path the \
         other mode appears only close to the target, through a first-order jump that the \
         replicas cross rarely, so the estimate depends on where the chains started. A reference \
         with the symmetry of the modes avoids it."
    );
    Ok(())
}

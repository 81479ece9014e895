//! Stacked tempering (paper 002, *Accelerated sampling with stacked restricted Boltzmann
//! machines*) against alternating Gibbs sampling (AGS) and parallel tempering (PT) at equal
//! cost, on an RBM trained on the 2D Ising model below its critical temperature: two modes
//! (magnetisation + and -) that AGS does not cross.
//!
//! 1. Ising configurations (8 x 8, beta = 0.5 > beta_c = 0.44) by Swendsen–Wang.
//! 2. A stack 64 spins -> 12 -> 6 -> 2 Bernoulli units, trained bottom first, each RBM on one
//!    sampled hidden representation per data point of the RBM below.
//! 3. The bottom RBM's exact + mode weight, by enumerating its 12 hidden units (given h the
//!    spins are independent, so the law of the magnetisation is a Poisson-binomial sum).
//! 4. 50 chains per sampler, all started in the + mode, the same budget of AGS steps per chain
//!    (ST: 3 per iteration; PT and PTT: one per replica per round): mode switches per 10^5 AGS
//!    steps and the + mode weight seen by the bottom RBM, against the exact weight. PTT runs on
//!    the checkpoints of RBM 1 trained again alone (the same model), its first checkpoint
//!    refreshed exactly every round.
//!
//! Run with `cargo run --release --example stacked_tempering` (well under a minute);
//! `cargo run --release --example stacked_tempering -- stack.rbm1.safetensors` prints the exact
//! + mode weight of a 64-spin bottom RBM saved by `ebm train-stack` instead.

use ebm::data::generators::ising::{IsingConfig, ising_2d};
use ebm::models::Stack;
use ebm::models::exact::{HiddenEnumeration, hidden_probabilities};
use ebm::prelude::*;
use ebm::samplers::tempering::{
    ParallelTempering, PtState, StackLadder, StackedTempering, SwapSchedule, TemperatureLadder,
    TrajectoryLadder,
};
use ebm_train::{
    CheckpointPolicy, LearningRate, Optimizer, StackTrainer, Tempered, Trainer, TrainingData,
    initial_model,
};

type Bottom = Rbm<Spin, Bernoulli>;

/// Rung 0 of PTT: an independent exact draw of the first checkpoint every round.
struct ExactFirst(HiddenEnumeration);

impl Kernel<Bottom> for ExactFirst {
    type Info = ();

    fn step<R: ebm::rand::Rng + Send>(
        &self,
        model: &Bottom,
        _beta: f64,
        x: &mut RbmChains<f64>,
        rngs: &mut [R],
        par: Par,
    ) {
        self.0.sample(model, x, rngs, par);
    }
}

/// The exact + mode weight of the bottom RBM, \\(P(M > 0) / P(M \ne 0)\\) with
/// \\(M = \sum_i v_i\\): the hidden layer is enumerated, and given \\(h\\) the number of
/// + spins is a sum of independent Bernoulli variables (dynamic programming over the units).
fn exact_plus_weight(rbm: &Bottom) -> Result<f64, Error> {
    let ph = hidden_probabilities(rbm, 1.0, Par::Rayon)?;
    let (n, nh) = (rbm.visible().n_units(), rbm.hidden().n_units());
    let mut h = vec![0.0; nh];
    let (mut plus, mut minus) = (0.0, 0.0);
    for (c, &p) in ph.iter().enumerate() {
        rbm.hidden().write_configuration(c as u128, &mut h);
        // counts[k] = P(k spins are +1 | h).
        let mut counts = vec![0.0; n + 1];
        counts[0] = 1.0;
        for i in 0..n {
            let field: f64 = rbm.visible().fields()[i]
                + (0..nh)
                    .map(|mu| rbm.weights()[(i, mu)] * h[mu])
                    .sum::<f64>();
            let up = 1.0 / (1.0 + (-2.0 * field).exp());
            for k in (0..=i + 1).rev() {
                let stay = if k <= i { counts[k] * (1.0 - up) } else { 0.0 };
                let from = if k > 0 { counts[k - 1] * up } else { 0.0 };
                counts[k] = stay + from;
            }
        }
        for (k, q) in counts.iter().enumerate() {
            match (2 * k).cmp(&n) {
                std::cmp::Ordering::Greater => plus += p * q,
                std::cmp::Ordering::Less => minus += p * q,
                std::cmp::Ordering::Equal => {}
            }
        }
    }
    Ok(plus / (plus + minus))
}

/// Mode switches and + mode time fraction of a batch of bottom chains, observed once per
/// iteration after a burn-in. A chain switches when its magnetisation per spin crosses to the
/// other side of \\(\pm\\)`threshold` (hysteresis: fluctuations around 0 are not switches);
/// the weight counts the sign of \\(M\\) at each observation (\\(M = 0\\) excluded), as the exact
/// weight, per chain, so that the chains (independent) give an error bar.
struct Modes {
    label: Vec<bool>,
    switches: u64,
    plus: Vec<u64>,
    signed: Vec<u64>,
    /// (AGS steps per chain, mean recorded switches per chain), for the book's figure.
    curve: Vec<(f64, f64)>,
}

impl Modes {
    fn new(n: usize) -> Self {
        Self {
            label: vec![true; n],
            switches: 0,
            plus: vec![0; n],
            signed: vec![0; n],
            curve: Vec::new(),
        }
    }

    /// Adds a point of the figure's curve at `cost` AGS steps per chain, at most one per
    /// `every` steps.
    fn trace(&mut self, cost: usize, every: usize) {
        let due = self
            .curve
            .last()
            .is_none_or(|&(c, _)| cost >= c as usize + every);
        if due {
            let per_chain = self.switches as f64 / self.label.len() as f64;
            self.curve.push((cost as f64, per_chain));
        }
    }

    fn observe(&mut self, v: &ebm::nalgebra::DMatrix<f64>, threshold: f64, record: bool) {
        let n = v.nrows() as f64;
        for (i, col) in v.column_iter().enumerate() {
            let m = col.sum();
            if record && m != 0.0 {
                self.signed[i] += 1;
                self.plus[i] += (m > 0.0) as u64;
            }
            let label = &mut self.label[i];
            let new = if m / n > threshold {
                true
            } else if m / n < -threshold {
                false
            } else {
                *label
            };
            self.switches += (record && new != *label) as u64;
            *label = new;
        }
    }

    /// The + weight over all recorded observations and its standard error across chains.
    fn weight(&self) -> (f64, f64) {
        let total = self.plus.iter().sum::<u64>() as f64 / self.signed.iter().sum::<u64>() as f64;
        let per_chain: Vec<f64> = self
            .plus
            .iter()
            .zip(&self.signed)
            .map(|(&p, &s)| p as f64 / s.max(1) as f64)
            .collect();
        let n = per_chain.len() as f64;
        let mean = per_chain.iter().sum::<f64>() / n;
        let var = per_chain.iter().map(|w| (w - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (total, (var / n).sqrt())
    }
}

fn main() -> Result<(), Error> {
    // ANCHOR: mixed
    use ebm::models::StackedRbm;
    use ebm::nalgebra::DMatrix;
    use ebm::samplers::tempering::MixedLadder;
    let rbm = |nv: usize, nh: usize, w: f64| {
        Rbm::new(
            Bernoulli::zeros(nv),
            Bernoulli::zeros(nh),
            DMatrix::from_element(nv, nh, w),
        )
    };
    let (early, bottom, top) = (rbm(3, 2, 0.1)?, rbm(3, 2, 1.5)?, rbm(2, 1, 0.8)?);
    let stack = Stack::new(bottom.clone(), vec![top])?;
    let checkpoints = TrajectoryLadder::new(vec![early, bottom])?;
    let ladder = MixedLadder::new(checkpoints.map(StackedRbm::Bottom), StackLadder::new(stack))?;
    assert_eq!(ladder.target(), 1); // rung 0: the early checkpoint; rung 2: the top RBM
    // ANCHOR_END: mixed

    // `-- FILE`: only the exact + mode weight of the spin -> Bernoulli RBM in FILE (e.g. the
    // bottom RBM of a stack trained by `ebm train-stack`, as in the book's command-line section).
    if let Some(path) = std::env::args().nth(1) {
        let rbm: Bottom = load_rbm(std::path::Path::new(&path))?;
        println!(
            "exact + mode weight of {path}: {:.4}",
            exact_plus_weight(&rbm)?
        );
        return Ok(());
    }
    let start = std::time::Instant::now();
    // ANCHOR: train
    let ising = ising_2d(&IsingConfig::new(8, 0.5, 2000), 1).expect("valid Ising settings");
    let visible = Spin::zeros(64);
    let data = TrainingData::from_f64(&visible, ising.data())?;
    // Parallel tempering in the negative phase, so that the model learns both modes (PCD
    // chains stuck in one mode unbalance them).
    let mut trainer = Trainer::new(
        Tempered {
            betas: (1..=8).map(|k| k as f64 / 8.0).collect(),
            schedule: SwapSchedule::DeterministicEvenOdd,
            sweeps: 1,
            rounds: 2,
            chains: 100,
        },
        100,
    );
    trainer.optimizer = Optimizer::ADAM;
    trainer.learning_rate = LearningRate::Constant(0.005);
    let bottom_trainer = trainer.clone();
    let stack: Stack<Spin, Bernoulli> = StackTrainer {
        trainer,
        updates: 1500,
        weight_std: 0.01,
    }
    .train(
        visible,
        vec![
            Bernoulli::zeros(12),
            Bernoulli::zeros(6),
            Bernoulli::zeros(2),
        ],
        &data,
        2,
        Par::Rayon,
        |_, _, _| Ok(()),
    )?;
    // ANCHOR_END: train
    let bottom = stack.bottom().clone();
    let exact = exact_plus_weight(&bottom)?;
    let depth = stack.len();
    println!(
        "stack 64 -> 12 -> 6 -> 2 trained on 2000 Ising 8x8 configurations at beta = 0.5 ({:.1} s)",
        start.elapsed().as_secs_f64()
    );
    println!("exact + mode weight of the bottom RBM: {exact:.4}\n");

    let (chains, budget, threshold) = (50usize, 120_000usize, 0.3);
    let all_plus = ebm::nalgebra::DMatrix::from_element(64, chains, 1.0);
    // Observations in the first fifth of the budget are discarded (burn-in).
    let burn_in = budget / 5;
    let per_1e5 = |switches: u64| 1e5 * switches as f64 / (chains * (budget - burn_in)) as f64;
    // The book's table: one row per sampler, as printed.
    let measured = std::cell::RefCell::new(Vec::<(String, u64, f64, f64)>::new());
    let table = std::cell::RefCell::new(format!(
        "| sampler | AGS steps per iteration | switches per 10^5 AGS steps | + weight ± s.e. \
         (exact {exact:.3}) |\n|---|---|---|---|\n"
    ));
    let row = |name: String, cost: usize, m: &Modes| {
        let (w, se) = m.weight();
        let switches = per_1e5(m.switches);
        println!("{name:<30} {cost:>8} {switches:>22.1} {w:>9.3} ± {se:.3} ({exact:.3})");
        *table.borrow_mut() += &format!("| {name} | {cost} | {switches:.1} | {w:.3} ± {se:.3} |\n");
        measured.borrow_mut().push((name, m.switches, w, se));
    };
    // The figure's curves: mean cumulative switches per chain (after the burn-in) against AGS
    // steps per chain, a point every `every` steps.
    let every = budget / 240;
    let mut curves: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    println!(
        "{:<30} {:>8} {:>22} {:>24}",
        "sampler", "AGS/iter", "switches / 1e5 AGS", "+ weight ± s.e. (exact)"
    );

    // Plain AGS on the bottom RBM.
    let mut ags = ChainState::new(bottom.new_state(chains), 3);
    ags.chains.visible.copy_from(&all_plus);
    let mut modes = Modes::new(chains);
    for t in 0..budget {
        Gibbs::new(1).step(
            &bottom,
            1.0,
            &mut ags.chains,
            ags.rngs.as_mut_slice(),
            Par::Rayon,
        );
        modes.observe(&ags.chains.visible, threshold, t >= burn_in);
        modes.trace(t + 1, every);
    }
    row("AGS".into(), 1, &modes);
    curves.push(("AGS".to_string(), modes.curve.clone()));

    // PT with uniform inverse temperatures in [0, 1] (the paper's baseline), R replicas.
    for replicas in [depth, 10] {
        let betas = (0..replicas)
            .map(|k| k as f64 / (replicas - 1) as f64)
            .collect();
        let ladder = TemperatureLadder::new(bottom.clone(), betas)?;
        let rungs = (0..replicas)
            .map(|_| {
                let mut x = bottom.new_state(chains);
                x.visible.copy_from(&all_plus);
                x
            })
            .collect();
        let mut state = PtState::new(rungs, 4)?;
        let pt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::DeterministicEvenOdd);
        let mut modes = Modes::new(chains);
        for round in 0..budget / replicas {
            pt.step(&ladder, &mut state, Par::Rayon);
            let record = round * replicas >= burn_in;
            modes.observe(&state.rungs()[replicas - 1].visible, threshold, record);
            modes.trace((round + 1) * replicas, every);
        }
        let name = format!("PT, {replicas} uniform betas (DEO)");
        row(name.clone(), replicas, &modes);
        curves.push((name, modes.curve.clone()));
    }

    // PTT: RBM 1 trained again alone, with the same trainer, seed and initial model as in the
    // stack (so the same final model, checked below), keeping checkpoints for the trajectory
    // ladder (target swap acceptance 0.25); the first checkpoint is refreshed exactly every
    // round by enumerating its 12 hidden units (paper 000).
    let mut checkpointing = bottom_trainer;
    checkpointing.checkpoints = Some(CheckpointPolicy::default());
    let init = initial_model(Spin::zeros(64), Bernoulli::zeros(12), Some(&data), 0.01, 2)?;
    let mut training = checkpointing.init(init, &data, 2, Par::Rayon)?;
    checkpointing.run(&mut training, &data, None, 1500, Par::Rayon, ())?;
    assert_eq!(
        &training.model, &bottom,
        "RBM 1 retrained with checkpoints differs"
    );
    let models = training.trajectory().into_models();
    let k = models.len();
    let exact0 = ExactFirst(HiddenEnumeration::new(&models[0], 1.0, Par::Rayon)?);
    let ladder = TrajectoryLadder::new(models)?;
    let rungs = (0..k)
        .map(|_| {
            let mut x = bottom.new_state(chains);
            x.visible.copy_from(&all_plus);
            x
        })
        .collect();
    let mut state = PtState::new(rungs, 6)?;
    let ptt = ParallelTempering::new(Gibbs::new(1), SwapSchedule::Sweep).with_rung0_kernel(exact0);
    let mut modes = Modes::new(chains);
    for round in 0..budget / k {
        ptt.step(&ladder, &mut state, Par::Rayon);
        modes.observe(
            &state.rungs()[k - 1].visible,
            threshold,
            round * k >= burn_in,
        );
        modes.trace((round + 1) * k, every);
    }
    let name = format!("PTT, {k} checkpoints (sweep)");
    row(name.clone(), k, &modes);
    curves.push((name, modes.curve.clone()));

    // ANCHOR: st
    let ladder = StackLadder::new(stack);
    let st = StackedTempering::default();
    let mut state = st.init(&ladder, &all_plus, 5, Par::Rayon)?;
    let mut modes = Modes::new(chains);
    let (mut ags_steps, mut accepted, mut proposed) =
        (0u64, vec![0u64; depth - 1], vec![0u64; depth - 1]);
    while ags_steps < budget as u64 {
        let record = ags_steps >= burn_in as u64;
        let info = st.step(&ladder, &mut state, Par::Rayon);
        ags_steps += info.ags_steps;
        for k in 0..depth - 1 {
            accepted[k] += info.exchanges.accepted[k];
            proposed[k] += info.exchanges.proposed[k];
        }
        modes.observe(&StackedTempering::bottom(&state).visible, threshold, record);
        modes.trace(ags_steps as usize, every);
    }
    // ANCHOR_END: st
    let name = format!("ST, {depth} RBMs (DEO)");
    row(name.clone(), depth, &modes);
    curves.push((name, modes.curve.clone()));
    let rates: Vec<String> = accepted
        .iter()
        .zip(&proposed)
        .rev()
        .enumerate()
        .map(|(n, (a, p))| format!("RBM {} <-> {}: {:.3}", n + 1, n + 2, *a as f64 / *p as f64))
        .collect();
    println!("\nST exchange acceptance: {}", rates.join(", "));
    // What the book says of this run: AGS never leaves the + mode; ST switches most often at
    // equal cost; every tempered sampler's + weight is within 3 standard errors of the exact.
    let measured = measured.into_inner();
    let (ags_run, tempered) = measured.split_first().expect("AGS ran first");
    assert!(ags_run.1 == 0 && ags_run.2 == 1.0, "AGS left the + mode");
    let st_switches = tempered.last().expect("ST ran last").1;
    for (name, switches, w, se) in tempered {
        assert!(
            *switches <= st_switches,
            "{name} switches more often than ST"
        );
        assert!(
            (w - exact).abs() < 3.0 * se,
            "{name}: + weight {w} ± {se}, exact {exact}"
        );
    }
    // The book's table and figure of this run (written where EBM_FIGURES points).
    if let Some(path) = ebm::plot::book_figure("stacked-tempering.md") {
        let text = format!(
            "{}\nST exchange acceptance: {}.\n",
            table.borrow(),
            rates.join(", ")
        );
        std::fs::write(&path, text).map_err(|source| Error::Io { path, source })?;
    }
    if let Some(path) = ebm::plot::book_figure("stacked-tempering-switches.svg") {
        let series: Vec<_> = curves
            .into_iter()
            .map(|(label, points)| ebm::plot::Series { label, points })
            .collect();
        ebm::plot::mode_jumps(&path, &series)?;
    }
    println!("total time {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

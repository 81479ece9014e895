//! TMC-trained (two tethered order parameters) against PCD-10-trained RBMs on three clusters
//! that overlap on either coordinate alone (paper 001, Fig. 6, with the PCD comparison of its
//! Fig. 4 carried over to 2D).
//!
//! The data: the preset `three-clusters-overlap-2d` of `ebm data generate clusters` at N_v = 100
//! binary units (three balanced Gaussian clusters in a plane; the two lower ones coincide on the
//! data's first principal direction, the three centres are about two projected standard
//! deviations apart on the second). Two RBMs with 12 hidden units are trained from the same
//! initial model for the same number of updates, batch and learning rate, with the same number
//! of chain-sweeps per update: the tethered negative phase on the data's two leading principal
//! directions (17 x 17 grid x 2 chains x 10 TMC sweeps, p(m_hat_1, m_hat_2) reconstructed along
//! the L-shaped path), and PCD-10 with as many chains. Each model's OWN equilibrium weights of
//! the three clusters are then computed exactly: the hidden layer is enumerated, and given h the
//! visible units are independent, so the joint law of the active counts (n_A, n_B) on the two
//! halves of the units that the generator's second pattern separates is a product of two
//! Poisson-binomial laws; (n_A, n_B) fix the generator's two coordinates, and a configuration
//! belongs to the cluster whose centre is nearest. The data are classified the same way.
//!
//! Run with `cargo run --release --example tmc_training_2d` (a few minutes on two shared
//! cores); `-- --quick` runs the small budget that `tests/tmc_training_2d.rs` checks;
//! `-- --points N --replicas R` changes the TMC grid (PCD gets as many chains).

use ebm::core::numerics::log_sum_exp;
use ebm::data::generators::clusters::{ClusterPreset, clustered};
use ebm::data::{Centering, Domain};
use ebm::models::exact::hidden_free_energies;
use ebm::prelude::*;
use ebm::samplers::tethered::OrderParameter;
use ebm::train::{
    LearningRate, NegativePhase, Pcd, Tmc, TmcDirection, Trainer, TrainingData, initial_model,
};
use std::time::Instant;

type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

/// The sizes of one run.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Visible units (even: the generator's two halves).
    pub nv: usize,
    /// Hidden units (enumerated: at most 20).
    pub nh: usize,
    /// Data samples.
    pub samples: usize,
    /// Parameter updates of each trainer.
    pub updates: u64,
    /// Minibatch size.
    pub batch: usize,
    /// TMC grid points per order parameter.
    pub points: usize,
    /// TMC chains per grid point.
    pub replicas: usize,
    /// Tether strength.
    pub alpha: f64,
    /// Learning rate of both trainers.
    pub rate: f64,
}

impl Budget {
    /// The reproduction's budget.
    pub fn full() -> Self {
        Budget {
            nv: 100,
            nh: 12,
            samples: 1500,
            updates: 3000,
            batch: 100,
            points: 17,
            replicas: 2,
            alpha: 400.0,
            rate: 0.05,
        }
    }

    /// The budget the tests run (seconds).
    pub fn quick() -> Self {
        Budget {
            nv: 40,
            nh: 6,
            samples: 300,
            updates: 60,
            batch: 50,
            points: 7,
            replicas: 2,
            alpha: 400.0,
            rate: 0.05,
        }
    }
}

/// What one run measured (cluster weights in the order of the preset's centres).
#[derive(Clone, Debug)]
pub struct Fig6 {
    /// The data's cluster weights (nearest-centre classification).
    pub data: [f64; 3],
    /// The TMC-trained model's exact cluster weights.
    pub tmc_exact: [f64; 3],
    /// The same model's weights by its own last 2D reconstruction (chain weights summed over
    /// the grid points nearest to each cluster's mean projection).
    pub tmc_own: [f64; 3],
    /// The PCD-trained model's exact cluster weights.
    pub pcd_exact: [f64; 3],
    /// The fractions of PCD's persistent chains in each cluster at the end of training.
    pub pcd_chains: [f64; 3],
    /// Total probability of each exact law (1 up to rounding).
    pub exact_totals: [f64; 2],
    /// Chain-sweeps per update of TMC and of PCD.
    pub chain_sweeps: [u64; 2],
    /// Grid points per axis of the TMC reconstruction.
    pub grid: [usize; 2],
    /// Path discrepancy of the last reconstruction, nats, where p > 1e-3 max.
    pub path_discrepancy: f64,
    /// Per tethered order parameter: the smallest distance between two clusters' mean
    /// projections in units of the largest within-cluster standard deviation of the
    /// projections (below about 2 the two clusters overlap on that coordinate).
    pub separation: [f64; 2],
    /// Wall time of the two trainings, seconds.
    pub seconds: [f64; 2],
}

/// The preset's latent centres.
fn centres() -> Vec<[f64; 2]> {
    ClusterPreset::ThreeClustersOverlap2d
        .config()
        .components
        .iter()
        .map(|c| [c.centre[0], c.centre[1]])
        .collect()
}

/// The nearest centre to the generator coordinates of a configuration with `na` of the `half`
/// units of half A and `nb` of half B active (spin s = 2v - 1): x_0 = sum s / N, x_1 =
/// (sum_A s - sum_B s) / N.
fn cluster(na: usize, nb: usize, half: usize) -> usize {
    let n = (2 * half) as f64;
    let x0 = (2.0 * (na + nb) as f64 - n) / n;
    let x1 = 2.0 * (na as f64 - nb as f64) / n;
    let d = |c: &[f64; 2]| (c[0] - x0).powi(2) + (c[1] - x1).powi(2);
    let cs = centres();
    (0..3)
        .min_by(|&a, &b| d(&cs[a]).total_cmp(&d(&cs[b])))
        .unwrap()
}

/// The cluster of a configuration `v` (units of half A where `in_a`).
fn label(v: &[f64], in_a: &[bool]) -> usize {
    let na = v.iter().zip(in_a).filter(|(v, a)| **a && **v > 0.5).count();
    let nb = v
        .iter()
        .zip(in_a)
        .filter(|(v, a)| !**a && **v > 0.5)
        .count();
    cluster(na, nb, in_a.len() / 2)
}

/// Cluster weights of the columns of `x`.
fn classify(x: &ebm::nalgebra::DMatrix<f64>, in_a: &[bool]) -> [f64; 3] {
    let mut w = [0.0; 3];
    for col in x.column_iter() {
        w[label(col.as_slice(), in_a)] += 1.0 / x.ncols() as f64;
    }
    w
}

/// The Poisson-binomial law of the number of successes among independent units with success
/// probabilities `q`.
fn poisson_binomial(q: impl Iterator<Item = f64>, n: usize) -> Vec<f64> {
    let mut dp = vec![0.0; n + 1];
    dp[0] = 1.0;
    for (i, q) in q.enumerate() {
        for s in (0..=i + 1).rev() {
            dp[s] = dp[s] * (1.0 - q) + if s > 0 { dp[s - 1] * q } else { 0.0 };
        }
    }
    dp
}

/// The exact cluster weights of `rbm` and the total probability: sum over the hidden
/// configurations of p(h) times the product law of (n_A, n_B) given h.
fn exact_weights(rbm: &Model, in_a: &[bool]) -> Result<([f64; 3], f64), Error> {
    let nh = rbm.hidden().n_units();
    let half = in_a.len() / 2;
    let neg: Vec<f64> = hidden_free_energies(rbm, 1.0, Par::Rayon)?
        .iter()
        .map(|x| -x)
        .collect();
    let log_z = log_sum_exp(&neg);
    let (w, b) = (rbm.weights(), rbm.visible().fields());
    let labels: Vec<usize> = (0..(half + 1) * (half + 1))
        .map(|k| cluster(k % (half + 1), k / (half + 1), half))
        .collect();
    let (mut weights, mut total) = ([0.0; 3], 0.0);
    let mut h = vec![0.0; nh];
    for (k, lf) in neg.iter().enumerate() {
        rbm.hidden().write_configuration(k as u128, &mut h);
        let q: Vec<f64> = (0..in_a.len())
            .map(|i| {
                let x = b[i] + (0..nh).map(|a| w[(i, a)] * h[a]).sum::<f64>();
                1.0 / (1.0 + (-x).exp())
            })
            .collect();
        let pick = |side: bool| q.iter().zip(in_a).filter(move |(_, a)| **a == side);
        let la = poisson_binomial(pick(true).map(|(q, _)| *q), half);
        let lb = poisson_binomial(pick(false).map(|(q, _)| *q), half);
        let ph = (lf - log_z).exp();
        for (nb, pb) in lb.iter().enumerate() {
            for (na, pa) in la.iter().enumerate() {
                let p = ph * pa * pb;
                weights[labels[na + (half + 1) * nb]] += p;
                total += p;
            }
        }
    }
    Ok((weights, total))
}

/// Trains both RBMs on the preset's data at `budget` and measures the cluster weights.
pub fn run(budget: &Budget, seed: u64, par: Par) -> Result<Fig6, Box<dyn std::error::Error>> {
    let mut cfg = ClusterPreset::ThreeClustersOverlap2d.config();
    cfg.n_features = budget.nv;
    cfg.n_samples = budget.samples;
    let generated = clustered(&cfg, seed)?;
    let in_a: Vec<bool> = generated
        .directions
        .column(1)
        .iter()
        .map(|&x| x > 0.0)
        .collect();
    let binary = generated.dataset.to_domain(Domain::Binary01)?;
    let data = TrainingData::new(&Bernoulli::zeros(budget.nv), binary.data().clone())?;
    let init = initial_model(
        Bernoulli::zeros(budget.nv),
        Bernoulli::zeros(budget.nh),
        Some(&data),
        1e-2,
        seed,
    )?;
    let rate = LearningRate::Constant(budget.rate);

    // ANCHOR: trainers
    // The tethered directions: the data's two leading (centred) principal components.
    let pca = ebm::data::pca(&binary, 2, Centering::Centered)?;
    let order = OrderParameter::from_pca(&pca, 2, budget.nv)?;
    let tmc = Tmc {
        alpha: budget.alpha,
        points: budget.points,
        replicas: budget.replicas,
        sweeps: 10,
        measure: 5,
        border: 0.1,
        direction: TmcDirection::Fixed(order),
        dimensions: 2,
    };
    let chains = budget.points * budget.points * budget.replicas;
    let mut tmc_trainer = Trainer::new(tmc.clone(), budget.batch);
    tmc_trainer.learning_rate = rate;
    let pcd = Pcd { sweeps: 10, chains };
    let mut pcd_trainer = Trainer::new(pcd, budget.batch);
    pcd_trainer.learning_rate = rate;
    // ANCHOR_END: trainers

    let t0 = Instant::now();
    let mut tmc_state = tmc_trainer.init(init.clone(), &data, seed, par)?;
    tmc_trainer.run(&mut tmc_state, &data, None, budget.updates, par, ())?;
    let tmc_time = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let mut pcd_state = pcd_trainer.init(init, &data, seed, par)?;
    pcd_trainer.run(&mut pcd_state, &data, None, budget.updates, par, ())?;
    let pcd_time = t0.elapsed().as_secs_f64();

    // ANCHOR: exact
    let (tmc_exact, tmc_total) = exact_weights(&tmc_state.model, &in_a)?;
    let (pcd_exact, pcd_total) = exact_weights(&pcd_state.model, &in_a)?;
    // ANCHOR_END: exact
    let data_weights = classify(data.samples(), &in_a);
    let pcd_chains = classify(
        &NegativePhase::<Bernoulli<f64>, Bernoulli<f64>>::chains(&pcd, &pcd_state.negative).visible,
        &in_a,
    );

    // TMC's own weights: each grid point goes to the cluster whose data mean projection is
    // nearest; the chain weights (p times the quadrature weights) are summed per cluster.
    let state = &tmc_state.negative;
    let rec = state
        .reconstruction_2d
        .as_ref()
        .expect("2D TMC reconstructs in 2D");
    let order = state.order.as_ref().expect("trained");
    let mut means = [[0.0; 2]; 3];
    let mut squares = [[0.0; 2]; 3];
    let mut counts = [0.0f64; 3];
    let mut m = [0.0; 2];
    for col in data.samples().column_iter() {
        let k = label(col.as_slice(), &in_a);
        order.project(col.as_slice(), &mut m);
        means[k][0] += m[0];
        means[k][1] += m[1];
        squares[k][0] += m[0] * m[0];
        squares[k][1] += m[1] * m[1];
        counts[k] += 1.0;
    }
    for (mean, c) in means.iter_mut().zip(counts) {
        mean.iter_mut().for_each(|x| *x /= c.max(1.0));
    }
    let separation = [0, 1].map(|l| {
        let sd = (0..3)
            .map(|k| {
                (squares[k][l] / counts[k].max(1.0) - means[k][l].powi(2))
                    .max(0.0)
                    .sqrt()
            })
            .fold(0.0, f64::max);
        let gap = [(0, 1), (0, 2), (1, 2)]
            .iter()
            .map(|&(a, b)| (means[a][l] - means[b][l]).abs())
            .fold(f64::INFINITY, f64::min);
        gap / sd
    });
    let nx = rec.grid_x.len();
    let mut tmc_own = [0.0; 3];
    for (c, w) in state.weights.iter().enumerate() {
        let p = c / budget.replicas;
        let (x, y) = (rec.grid_x[p % nx], rec.grid_y[p / nx]);
        let d = |k: usize| (means[k][0] - x).powi(2) + (means[k][1] - y).powi(2);
        let k = (0..3).min_by(|&a, &b| d(a).total_cmp(&d(b))).unwrap();
        tmc_own[k] += w;
    }
    let own_total: f64 = tmc_own.iter().sum();
    tmc_own.iter_mut().for_each(|x| *x /= own_total);
    Ok(Fig6 {
        data: data_weights,
        tmc_exact,
        tmc_own,
        pcd_exact,
        pcd_chains,
        exact_totals: [tmc_total, pcd_total],
        chain_sweeps: [
            (tmc.sweeps * chains) as u64,
            (pcd.sweeps * pcd.chains) as u64,
        ],
        grid: [rec.grid_x.len(), rec.grid_y.len()],
        path_discrepancy: rec.path_discrepancy(budget.alpha, 1e-3),
        separation,
        seconds: [tmc_time, pcd_time],
    })
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mut budget = if args.iter().any(|a| a == "--quick") {
        Budget::quick()
    } else {
        Budget::full()
    };
    // `--points N --replicas R`: another split of the same kind of grid.
    for (flag, field) in [
        ("--points", &mut budget.points),
        ("--replicas", &mut budget.replicas),
    ] {
        if let Some(i) = args.iter().position(|a| a == flag) {
            *field = args
                .get(i + 1)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{flag}: a positive integer expected"))?;
        }
    }
    let seed = 5;
    let r = run(&budget, seed, Par::Rayon)?;
    println!(
        "{} updates, batch {}, learning rate {}, seed {seed}; N_v = {}, N_h = {}; \
         {} chain-sweeps per update each (TMC {} x {} grid x {} chains x 10 sweeps, alpha {})",
        budget.updates,
        budget.batch,
        budget.rate,
        budget.nv,
        budget.nh,
        r.chain_sweeps[0],
        r.grid[0],
        r.grid[1],
        budget.replicas,
        budget.alpha
    );
    let row = |name: &str, w: &[f64; 3], t: Option<f64>| {
        let time = t.map_or(String::new(), |t| format!("{t:9.1}"));
        println!("{name:<34} {:7.3} {:7.3} {:7.3}  {time}", w[0], w[1], w[2]);
    };
    println!("cluster weights                     lower-l lower-r   upper  time (s)");
    row("data", &r.data, None);
    row("TMC-trained, exact", &r.tmc_exact, Some(r.seconds[0]));
    row("TMC-trained, its own last p(m_hat)", &r.tmc_own, None);
    row("PCD-10-trained, exact", &r.pcd_exact, Some(r.seconds[1]));
    row("PCD-10 persistent chains", &r.pcd_chains, None);
    let tv =
        |a: &[f64; 3], b: &[f64; 3]| 0.5 * a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>();
    println!(
        "total variation to the data: TMC-RBM {:.3}, PCD-RBM {:.3}; TMC's own p vs its exact: {:.3}; \
         PCD chains vs its exact: {:.3}",
        tv(&r.tmc_exact, &r.data),
        tv(&r.pcd_exact, &r.data),
        tv(&r.tmc_own, &r.tmc_exact),
        tv(&r.pcd_chains, &r.pcd_exact)
    );
    println!(
        "last 2D reconstruction: path discrepancy {:.2} nats (where p > 1e-3 of its maximum)",
        r.path_discrepancy
    );
    println!(
        "closest pair of clusters on each tethered coordinate alone: {:.2} and {:.2} \
         within-cluster standard deviations apart",
        r.separation[0], r.separation[1]
    );
    Ok(())
}

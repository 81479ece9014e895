//! Exact tests of the hidden-space kernels (Algorithms 3 and 4): exact transition matrices
//! built from the kernel's own block conditional, chi-square tests of one step of the kernel
//! from exact draws, negative controls that the same tests must reject, and the analytic-model
//! behaviour (Curie–Weiss i.i.d. samples, Hopfield aligned vs rotated weights).

use ebm_core::{ChainState, EnergyModel, Kernel, Par};
use ebm_models::analytic::{CurieWeiss, Hopfield};
use ebm_models::exact::{hidden_probabilities, visible_probabilities};
use ebm_models::{Bernoulli, DiscreteLayer, Gaussian, Layer, Rbm, Spin};
use ebm_samplers::latent::block_log_weights;
use ebm_samplers::{Alternate, Gibbs, Grid, LatentGibbs};
use ebm_testkit::{
    AtBeta, detailed_balance_violation, joint_invariance, stationarity_violation,
    visible_invariance,
};
use nalgebra::DMatrix;
use rand::Rng;

const DRAWS: usize = 40_000;
/// A correct kernel's p-value falls below this once in 10^4 runs (seeds are fixed).
const ALPHA: f64 = 1e-4;
/// A negative control must be rejected far beyond chance.
const REJECT: f64 = 1e-6;

/// A 5 x 4 spin-visible, Bernoulli-hidden model with couplings of order 1.
fn model() -> Rbm<Spin<f64>, Bernoulli<f64>> {
    let w: Vec<f64> = (0..20).map(|k| ((k * 7 % 11) as f64 - 5.0) * 0.3).collect();
    Rbm::new(
        Spin::new((0..5).map(|i| 0.3 * i as f64 - 0.6).collect()),
        Bernoulli::new(vec![0.4, -0.5, 0.1, -0.2]),
        DMatrix::from_vec(5, 4, w),
    )
    .unwrap()
}

type Model = Rbm<Spin<f64>, Bernoulli<f64>>;

/// How a block is redrawn in the exact matrices.
#[derive(Clone, Copy)]
enum Update {
    /// The kernel's block conditional (exact Gibbs).
    Joint,
    /// Negative control: the block conditional at a wrong inverse temperature.
    WrongBeta(f64),
    /// Negative control: each unit of the block drawn from its own single-unit conditional
    /// given the *old* values of the others (a parallel, "Jacobi" update of the pair).
    Parallel,
}

fn input_of(rbm: &Model, h: &[f64]) -> Vec<f64> {
    let w = rbm.weights();
    (0..w.nrows())
        .map(|i| (0..w.ncols()).map(|u| w[(i, u)] * h[u]).sum())
        .collect()
}

fn probs(logw: &[f64]) -> Vec<f64> {
    let m = logw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = logw.iter().map(|l| (l - m).exp()).sum();
    logw.iter().map(|l| (l - m).exp() / z).collect()
}

/// The exact transition matrix on hidden configurations of one block update of `units`.
fn block_matrix(rbm: &Model, beta: f64, units: &[usize], how: Update) -> Vec<f64> {
    let layer = rbm.hidden();
    let n = layer.n_configurations() as usize;
    let nh = layer.width();
    let grid = Grid::default();
    let mut t = vec![0.0; n * n];
    let mut h = vec![0.0; nh];
    let mut trial = vec![0.0; rbm.visible().width()];
    let mut logw = Vec::new();
    for a in 0..n {
        layer.write_configuration(a as u128, &mut h);
        let input = input_of(rbm, &h);
        // Distribution over the 2^|units| block values (first unit least significant).
        let p: Vec<f64> = match how {
            Update::Joint | Update::WrongBeta(_) => {
                let b = if let Update::WrongBeta(b) = how {
                    b
                } else {
                    beta
                };
                block_log_weights(rbm, b, &grid, units, &h, &input, &mut trial, &mut logw);
                probs(&logw)
            }
            Update::Parallel => {
                let single: Vec<Vec<f64>> = units
                    .iter()
                    .map(|&u| {
                        block_log_weights(
                            rbm,
                            beta,
                            &grid,
                            &[u],
                            &h,
                            &input,
                            &mut trial,
                            &mut logw,
                        );
                        probs(&logw)
                    })
                    .collect();
                (0..1usize << units.len())
                    .map(|k| (0..units.len()).map(|j| single[j][(k >> j) & 1]).product())
                    .collect()
            }
        };
        for (k, pk) in p.iter().enumerate() {
            let mut g = h.clone();
            for (j, &u) in units.iter().enumerate() {
                g[u] = ((k >> j) & 1) as f64;
            }
            t[a * n + layer.configuration_index(&g) as usize] += pk;
        }
    }
    t
}

fn matmul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let x = a[i * n + k];
            for j in 0..n {
                c[i * n + j] += x * b[k * n + j];
            }
        }
    }
    c
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for pos in 0..=p.len() {
            let mut q = p.clone();
            q.insert(pos, n - 1);
            out.push(q);
        }
    }
    out
}

/// The exact matrix of one sweep: the average over scan orders (random permutation, cut into
/// blocks of `size`) of the product of the block matrices.
fn sweep_matrix(rbm: &Model, beta: f64, size: usize, how: Update) -> Vec<f64> {
    let n = rbm.hidden().n_configurations() as usize;
    let perms = permutations(rbm.hidden().n_units());
    let mut t = vec![0.0; n * n];
    for p in &perms {
        let mut k: Vec<f64> = (0..n * n)
            .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
            .collect();
        for block in p.chunks(size) {
            k = matmul(&k, &block_matrix(rbm, beta, block, how), n);
        }
        for (x, y) in t.iter_mut().zip(&k) {
            *x += y / perms.len() as f64;
        }
    }
    t
}

/// The induced chain on v (Eq. C2): \\(h \sim p(h|v)\\), the sweep, \\(v' \sim p(v'|h')\\).
fn visible_matrix(rbm: &Model, beta: f64, k: &[f64]) -> Vec<f64> {
    let nv = rbm.visible().n_configurations() as usize;
    let nh = rbm.hidden().n_configurations() as usize;
    let joint = ebm_testkit::joint_probabilities(rbm, beta); // v + nv * h
    let pv: Vec<f64> = (0..nv)
        .map(|i| (0..nh).map(|j| joint[i + nv * j]).sum())
        .collect();
    let ph: Vec<f64> = (0..nh)
        .map(|j| (0..nv).map(|i| joint[i + nv * j]).sum())
        .collect();
    let mut t = vec![0.0; nv * nv];
    for v in 0..nv {
        for h in 0..nh {
            let a = joint[v + nv * h] / pv[v];
            for h2 in 0..nh {
                let b = a * k[h * nh + h2];
                if b == 0.0 {
                    continue;
                }
                for v2 in 0..nv {
                    t[v * nv + v2] += b * joint[v2 + nv * h2] / ph[h2];
                }
            }
        }
    }
    t
}

#[test]
fn algorithms_3_and_4_exact_matrices_are_invariant_and_reversible() {
    let rbm = model();
    for beta in [1.0, 0.7] {
        let ph = hidden_probabilities(&rbm, beta, Par::Seq).unwrap();
        let pv = visible_probabilities(&rbm, beta, Par::Seq).unwrap();
        for size in [1, 2] {
            let k = sweep_matrix(&rbm, beta, size, Update::Joint);
            assert!(stationarity_violation(&ph, &k) < 1e-13, "size {size}");
            assert!(detailed_balance_violation(&ph, &k) < 1e-13, "size {size}");
            let t = visible_matrix(&rbm, beta, &k);
            assert!(stationarity_violation(&pv, &t) < 1e-13);
            assert!(detailed_balance_violation(&pv, &t) < 1e-13);
            // Not trivial: the sweep moves mass.
            let stay: f64 = (0..ph.len()).map(|i| k[i * ph.len() + i]).sum::<f64>();
            assert!(stay < 0.9 * ph.len() as f64);
        }
    }
}

#[test]
fn wrong_conditionals_break_the_exact_matrices() {
    let rbm = model();
    let beta = 1.0;
    let ph = hidden_probabilities(&rbm, beta, Par::Seq).unwrap();
    for size in [1, 2] {
        let k = sweep_matrix(&rbm, beta, size, Update::WrongBeta(1.3));
        let s = stationarity_violation(&ph, &k);
        assert!(s > 1e-3, "wrong beta, size {size}: {s}");
    }
    let k = sweep_matrix(&rbm, beta, 2, Update::Parallel);
    let s = stationarity_violation(&ph, &k);
    assert!(s > 1e-3, "parallel pair update: {s}");
}

#[test]
fn one_latent_step_from_exact_draws_keeps_the_joint_law() {
    let rbm = model();
    for (kernel, seed) in [(LatentGibbs::single(), 11), (LatentGibbs::pair(), 12)] {
        let c = joint_invariance(&rbm, &kernel, 1.0, DRAWS, seed);
        assert!(c.p_value > ALPHA, "{kernel:?}: {c:?}");
        let bad = joint_invariance(&rbm, &AtBeta(kernel, 1.6), 1.0, DRAWS, seed);
        assert!(bad.p_value < REJECT, "negative control {kernel:?}: {bad:?}");
    }
}

/// Spin visibles with Gaussian hidden units: the grid proposal with the Metropolis–Hastings
/// correction is exact even on a grid of 4 cells (a heat-bath draw on such a grid would put
/// every h on 4 values); with the sign flip as well. Negative control: the same kernel at a
/// wrong temperature.
#[test]
fn grid_proposal_with_mh_correction_is_exact_for_gaussian_hidden_units() {
    let w: Vec<f64> = (0..10).map(|k| ((k * 5 % 7) as f64 - 3.0) * 0.5).collect();
    let rbm = Rbm::new(
        Spin::new(vec![0.2, -0.1, 0.0, 0.3, -0.4]),
        Gaussian::new(vec![1.0, 1.5], vec![0.3, -0.2]).unwrap(),
        DMatrix::from_vec(5, 2, w),
    )
    .unwrap();
    let fine = LatentGibbs::single();
    let coarse = LatentGibbs {
        grid: Grid {
            points: 4,
            half_width: 3.0,
        },
        sign_flip: true,
        ..LatentGibbs::pair()
    };
    for (kernel, seed) in [(fine, 21), (coarse, 22)] {
        // Two steps: the second starts from a state the first produced.
        let two = Alternate {
            first: kernel,
            second: kernel,
        };
        let c = visible_invariance(&rbm, &two, 1.0, DRAWS, seed);
        assert!(c.p_value > ALPHA, "{kernel:?}: {c:?}");
        let bad = visible_invariance(&rbm, &AtBeta(two, 1.5), 1.0, DRAWS, seed);
        assert!(bad.p_value < REJECT, "negative control {kernel:?}: {bad:?}");
    }
}

fn sign_changes(m: &[Vec<f64>]) -> (u64, u64) {
    let (mut changes, mut total) = (0, 0);
    for chain in m {
        for w in chain.windows(2) {
            total += 1;
            changes += u64::from(w[0].signum() != w[1].signum());
        }
    }
    (changes, total)
}

/// Curie–Weiss with one hidden unit: Algorithm 3 draws h from its exact marginal, so the
/// magnetisation changes sign in half the steps; AGS never does (barrier N Δf ≈ 45).
#[test]
fn algorithm_3_on_curie_weiss_gives_independent_samples() {
    let w = 1.5;
    let cw = CurieWeiss::new(101, w * w, 0.0).unwrap();
    let rbm = cw.to_rbm().unwrap();
    let (chains, steps) = (32, 200);
    let run = |kernel: &dyn Fn(&mut ChainState<ebm_models::RbmChains<f64>>)| {
        let mut state = ChainState::new(rbm.default_chains(chains), 5);
        state.chains.visible.fill(1.0);
        let mut m = vec![Vec::new(); chains];
        for _ in 0..steps {
            kernel(&mut state);
            for (j, col) in state.chains.visible.column_iter().enumerate() {
                m[j].push(col.sum() / 101.0);
            }
        }
        m
    };
    let latent = LatentGibbs {
        grid: Grid {
            points: 200,
            half_width: 20.0,
        },
        ..LatentGibbs::single()
    };
    let m_latent = run(&|s| {
        latent.step(&rbm, 1.0, &mut s.chains, s.rngs.as_mut_slice(), Par::Rayon);
    });
    let (c, n) = sign_changes(&m_latent);
    let frac = c as f64 / n as f64;
    let sd = (0.25 / n as f64).sqrt();
    assert!(
        (frac - 0.5).abs() < 5.0 * sd,
        "latent sign changes {frac} over {n}"
    );
    // The mode weight and |m| match the exact law.
    let p = cw.up_count_distribution(1.0);
    let exact_abs_m: f64 = p
        .iter()
        .enumerate()
        .map(|(k, pk)| pk * ((2 * k) as f64 / 101.0 - 1.0).abs())
        .sum();
    let all: Vec<f64> = m_latent.iter().flatten().map(|x| x.abs()).collect();
    let mean_abs = all.iter().sum::<f64>() / all.len() as f64;
    assert!(
        (mean_abs - exact_abs_m).abs() < 0.005,
        "{mean_abs} vs {exact_abs_m}"
    );
    let gibbs = Gibbs::new(1);
    let m_ags = run(&|s| {
        gibbs.step(&rbm, 1.0, &mut s.chains, s.rngs.as_mut_slice(), Par::Rayon);
    });
    assert_eq!(sign_changes(&m_ags).0, 0);
}

/// The 2M Mattis state (pattern, sign) nearest to `v`.
fn mattis_state(patterns: &DMatrix<f64>, v: &[f64]) -> usize {
    let (n, p) = patterns.shape();
    let mut best = (0, 0.0f64);
    for mu in 0..p {
        let o: f64 = (0..n).map(|i| patterns[(i, mu)] * v[i]).sum::<f64>() / n as f64;
        if o.abs() > best.1.abs() {
            best = (2 * mu + usize::from(o < 0.0), o);
        }
    }
    best.0
}

/// A random orthogonal matrix (Gram–Schmidt of a fixed pseudo-random matrix).
fn rotation(p: usize) -> DMatrix<f64> {
    let mut rng = ebm_core::RngStreams::auxiliary(2024, 0);
    let mut q = DMatrix::from_fn(p, p, |_, _| rng.random::<f64>() - 0.5);
    for j in 0..p {
        for k in 0..j {
            let d = q.column(j).dot(&q.column(k));
            let ck = q.column(k).clone_owned();
            q.column_mut(j).axpy(-d, &ck, 1.0);
        }
        let nrm = q.column(j).norm();
        q.column_mut(j).scale_mut(1.0 / nrm);
    }
    let err = (q.transpose() * &q - DMatrix::identity(p, p)).abs().max();
    assert!(err < 1e-12, "rotation not orthogonal: {err}");
    q
}

/// Spec §10.7: Hopfield, N = 64, M = 6, w = 1.5, Walsh–Hadamard patterns. Algorithm 4 with
/// aligned weights visits all 12 Mattis states with roughly equal frequency; with rotated
/// weights \\(W O\\) (the same model) it switches state at least ten times less often
/// (measured: 276 vs 5 switches in 480 chain-steps), and AGS never switches in either.
#[test]
fn hopfield_aligned_vs_rotated_under_algorithm_4() {
    let (n, p, w) = (64, 6, 1.5);
    let patterns = ebm_models::walsh_hadamard_patterns(n, p).unwrap();
    let hop = Hopfield::new(patterns.clone(), w * w, vec![0.0; n]).unwrap();
    let aligned = hop.to_rbm().unwrap();
    let (v, hl, wm) = aligned.clone().into_parts();
    let rotated = Rbm::new(v, hl, wm * rotation(p)).unwrap();
    let kernel = LatentGibbs {
        grid: Grid {
            points: 30,
            half_width: 15.0,
        },
        ..LatentGibbs::pair()
    };
    let (chains, steps) = (8, 60);
    let visits = |rbm: &Rbm<Spin<f64>, Gaussian<f64>>, latent: bool| {
        let mut state = ChainState::new(rbm.default_chains(chains), 9);
        for j in 0..chains {
            state
                .chains
                .visible
                .column_mut(j)
                .copy_from(&patterns.column(0));
        }
        let mut counts = vec![vec![0u64; 2 * p]; chains];
        let mut last = vec![0usize; chains];
        let mut switches = 0u64;
        for _ in 0..steps {
            if latent {
                kernel.step(
                    rbm,
                    1.0,
                    &mut state.chains,
                    state.rngs.as_mut_slice(),
                    Par::Rayon,
                );
            } else {
                Gibbs::new(1).step(
                    rbm,
                    1.0,
                    &mut state.chains,
                    state.rngs.as_mut_slice(),
                    Par::Rayon,
                );
            }
            for (j, col) in state.chains.visible.column_iter().enumerate() {
                let s = mattis_state(&patterns, col.as_slice());
                counts[j][s] += 1;
                switches += u64::from(s != last[j]);
                last[j] = s;
            }
        }
        (counts, switches)
    };
    let total =
        |c: &[Vec<u64>]| -> Vec<u64> { (0..2 * p).map(|s| c.iter().map(|x| x[s]).sum()).collect() };
    let (a, a_switches) = visits(&aligned, true);
    let a = total(&a);
    let expected = (chains * steps) as f64 / (2 * p) as f64;
    eprintln!("aligned, Algorithm 4: {a:?}, {a_switches} switches");
    assert!(a_switches > 100, "aligned: {a_switches} switches");
    for &c in &a {
        assert!(
            (c as f64) > 0.5 * expected && (c as f64) < 1.6 * expected,
            "aligned visits {a:?}"
        );
    }
    let (c, r_switches) = visits(&rotated, true);
    eprintln!(
        "rotated, Algorithm 4: {:?}, {r_switches} switches",
        total(&c)
    );
    assert!(
        10 * r_switches < a_switches,
        "rotated: {r_switches} switches"
    );
    let mut ags_switches = Vec::new();
    for (rbm, latent, name) in [
        (&aligned, false, "aligned, AGS"),
        (&rotated, false, "rotated, AGS"),
    ] {
        let (c, switches) = visits(rbm, latent);
        let c = total(&c);
        eprintln!("{name}: {c:?}, {switches} switches");
        assert_eq!(switches, 0, "{name}: {c:?}");
        ags_switches.push(switches);
    }
    let table = format!(
        "| weights | Algorithm 4 switches | AGS switches |\n|---|---|---|\n\
         | aligned | {a_switches} (all {} Mattis states, each {}–{} of {} visits) | {} |\n\
         | rotated | {r_switches} | {} |\n",
        2 * p,
        a.iter().min().unwrap(),
        a.iter().max().unwrap(),
        chains * steps,
        ags_switches[0],
        ags_switches[1]
    );
    ebm_testkit::book_quotes("concepts/barriers.md", &table);
}

/// Spec §10.11: the visible marginal of the k-copy RBM is \\(P(v)^k / \sum P^k\\) (exact, by
/// enumeration), and AGS on it samples that law (chi-square after 30 sweeps from a fixed start,
/// 20000 chains); negative control: the same draws tested against \\(P^{k-1}\\) are rejected.
#[test]
fn beta_copy_ags_samples_the_powered_marginal() {
    let rbm = model();
    let p = visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let power = |k: usize| -> Vec<f64> {
        let q: Vec<f64> = p.iter().map(|x| x.powi(k as i32)).collect();
        let z: f64 = q.iter().sum();
        q.iter().map(|x| x / z).collect()
    };
    for k in [2usize, 3] {
        let copies = ebm_models::low_temperature::beta_copies(&rbm, k).unwrap();
        assert_eq!(copies.hidden().n_units(), 4 * k);
        let pk = visible_probabilities(&copies, 1.0, Par::Seq).unwrap();
        let target = power(k);
        let err = pk
            .iter()
            .zip(&target)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-12, "k = {k}: {err}");
        let mut state = ChainState::new(copies.default_chains(20_000), 40 + k as u64);
        Gibbs::new(30).step(
            &copies,
            1.0,
            &mut state.chains,
            state.rngs.as_mut_slice(),
            Par::Rayon,
        );
        let mut counts = vec![0u64; p.len()];
        for col in state.chains.visible.column_iter() {
            counts[rbm.visible().configuration_index(col.as_slice()) as usize] += 1;
        }
        let good = ebm_testkit::chi_square(&counts, &target);
        assert!(good.p_value > ALPHA, "k = {k}: {good:?}");
        let bad = ebm_testkit::chi_square(&counts, &power(k - 1));
        assert!(bad.p_value < REJECT, "negative control k = {k}: {bad:?}");
    }
    assert!(ebm_models::low_temperature::beta_copies(&rbm, 0).is_err());
}

/// Measured AGS escape times of the Curie–Weiss RBM against the exact mean first-passage time
/// of the reduced chain (spec §7.3: 695.6 at N = 40, w = 1.2; 805.3 at N = 10, w = 1.5), from
/// \\(S_0 \approx m^* N\\) until \\(m \le -m^*/2\\); Algorithm 3 escapes in a few steps.
#[test]
fn ags_escape_times_match_the_exact_mean_first_passage_time() {
    use ebm_models::barriers::{ReducedChain, ReducedSampler};
    use ebm_samplers::{EscapeTimes, run};
    let mut table = String::from(
        "| w | N | exact MFPT (AGS steps) | measured AGS | Algorithm 3 |\n|---|---|---|---|---|\n",
    );
    for (w, n, seed) in [(1.2f64, 40usize, 3u64), (1.5, 10, 4)] {
        let cw = CurieWeiss::new(n, w * w, 0.0).unwrap();
        let m = cw.mean_field_magnetisation(1.0);
        let chain = ReducedChain::new(&cw, 1.0, ReducedSampler::Ags).unwrap();
        let k0 = chain.mode_state(m);
        let exact = chain.mean_first_passage(m / 2.0).unwrap()[k0];
        let rbm = cw.to_rbm().unwrap();
        let chains = 500;
        let start = || {
            let mut s = ChainState::new(rbm.default_chains(chains), seed);
            for mut col in s.chains.visible.column_iter_mut() {
                for (i, x) in col.iter_mut().enumerate() {
                    *x = if i < k0 { 1.0 } else { -1.0 };
                }
            }
            s
        };
        let target = |c: &ebm_models::RbmChains<f64>, i: usize| {
            c.visible.column(i).sum() <= -m / 2.0 * n as f64
        };
        let mut state = start();
        let mut esc = EscapeTimes::new(chains, target);
        let mut steps = 0;
        while !esc.all_escaped() && steps < 40 * exact as u64 {
            run(
                &rbm,
                &Gibbs::new(1),
                1.0,
                &mut state,
                500,
                Par::Rayon,
                &mut esc,
            )
            .unwrap();
            steps += 200;
        }
        let s = esc.summary();
        let ags = format!("{:.1} ± {:.1}", s.mean, s.std_error);
        eprintln!("w {w} N {n}: AGS escape {ags} (exact {exact:.1})");
        assert_eq!(s.censored, 0);
        assert!(
            (s.mean - exact).abs() < 4.0 * s.std_error,
            "{s:?} vs {exact}"
        );
        // Negative control: the exact time of a different N is rejected by the same test.
        let other = CurieWeiss::new(n + 4, w * w, 0.0).unwrap();
        let oc = ReducedChain::new(&other, 1.0, ReducedSampler::Ags).unwrap();
        let wrong = oc.mean_first_passage(m / 2.0).unwrap()[oc.mode_state(m)];
        assert!(
            (s.mean - wrong).abs() > 4.0 * s.std_error,
            "{s:?} vs {wrong}"
        );
        // Algorithm 3 removes the barrier.
        let mut state = start();
        let mut esc = EscapeTimes::new(chains, target);
        let latent = LatentGibbs::single();
        run(&rbm, &latent, 1.0, &mut state, 60, Par::Rayon, &mut esc).unwrap();
        let s = esc.summary();
        eprintln!(
            "w {w} N {n}: Algorithm 3 escape {:.2} ± {:.2}",
            s.mean, s.std_error
        );
        assert_eq!(s.censored, 0);
        assert!(s.mean < 5.0, "{s:?}");
        table += &format!(
            "| {w} | {n} | {exact:.1} | {ags} | {:.2} ± {:.2} |\n",
            s.mean, s.std_error
        );
    }
    ebm_testkit::book_quotes("concepts/barriers.md", &table);
}

/// Chain i consumes only stream i, in chunks independent of the thread count: the same
/// chains after sequential and parallel steps (300 chains: three chunks, sign flips and grid
/// moves on Gaussian units).
#[test]
fn latent_steps_are_bit_identical_for_any_thread_count() {
    let cw = CurieWeiss::new(12, 1.5, 0.0).unwrap();
    let rbm = cw.to_rbm().unwrap();
    let k = LatentGibbs {
        sign_flip: true,
        ..LatentGibbs::pair()
    };
    let run = |par: Par| {
        let mut st = ChainState::new(rbm.new_state(300), 5);
        let mut info = Vec::new();
        for _ in 0..5 {
            info.push(k.step(&rbm, 1.0, &mut st.chains, st.rngs.as_mut_slice(), par));
        }
        (st.chains, info)
    };
    let (a, ia) = run(Par::Seq);
    let (b, ib) = run(Par::Rayon);
    assert_eq!(a, b);
    assert_eq!(ia, ib);
    assert_eq!(ia[0].flips_proposed, 300);
    assert!(ia[0].grid_proposed >= 300 && ia[0].grid_accepted > 0);
}

/// The fraction of time per state (paper 003, Fig. 15 d/e) with the [`Occupation`] observer:
/// on Curie–Weiss (N = 101, w = 1.5, exact weight 1/2 per mode) Algorithm 3 spends half its
/// time in each mode, within 5 binomial standard errors of independent draws; AGS started in
/// mode + spends all of it there (control). Labels outside the declared states are an error.
#[test]
fn occupation_gives_the_fraction_of_time_per_mode() {
    use ebm_samplers::{Occupation, run};
    let n = 101;
    let cw = CurieWeiss::new(n, 1.5 * 1.5, 0.0).unwrap();
    let rbm = cw.to_rbm().unwrap();
    let label = |c: &ebm_models::RbmChains<f64>, i: usize| {
        let m: f64 = c.visible.column(i).sum();
        Some(usize::from(m < 0.0))
    };
    let latent = LatentGibbs {
        grid: Grid {
            points: 200,
            half_width: 20.0,
        },
        ..LatentGibbs::single()
    };
    let (chains, steps) = (32, 200);
    let start = || {
        let mut state = ChainState::new(rbm.default_chains(chains), 11);
        state.chains.visible.fill(1.0);
        state
    };
    let mut occ = Occupation::new(2, label);
    let mut state = start();
    run(&rbm, &latent, 1.0, &mut state, steps, Par::Rayon, &mut occ).unwrap();
    let f = occ.fractions();
    assert_eq!(occ.counts().iter().sum::<u64>(), chains as u64 * steps);
    assert!((f[0] + f[1] - 1.0).abs() < 1e-12 && occ.unlabelled() == 0);
    let sd = (0.25 / (chains as f64 * steps as f64)).sqrt();
    assert!((f[0] - 0.5).abs() < 5.0 * sd, "latent fractions {f:?}");
    let mut occ = Occupation::new(2, label);
    let mut state = start();
    run(
        &rbm,
        &Gibbs::new(1),
        1.0,
        &mut state,
        steps,
        Par::Rayon,
        &mut occ,
    )
    .unwrap();
    assert_eq!(occ.fractions(), vec![1.0, 0.0], "AGS must stay in mode +");
    let mut bad = Occupation::new(1, label);
    let mut state = start();
    state.chains.visible.fill(-1.0);
    assert!(
        run(
            &rbm,
            &Gibbs::new(1),
            1.0,
            &mut state,
            1,
            Par::Rayon,
            &mut bad
        )
        .is_err()
    );
}

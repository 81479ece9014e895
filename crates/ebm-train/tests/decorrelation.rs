//! The decorrelation penalty (Eq. 73 of "Alternating Gibbs sampling in restricted Boltzmann
//! machines: free-energy barriers, analytic models and moves in latent space") and the
//! persistent negative phase with any kernel (hidden-space moves as a training negative phase).

use ebm_core::Par;
use ebm_models::{Bernoulli, Gaussian, Hopfield, Layer, Rbm, Spin, walsh_hadamard_patterns};
use ebm_samplers::{Alternate, Gibbs, LatentGibbs};
use ebm_train::decorrelation::{decorrelation_gradient, decorrelation_penalty};
use ebm_train::{Pcd, PersistentKernel, Trainer, TrainingData};
use nalgebra::DMatrix;
use rand::Rng;

fn small_rbm(seed: u64) -> Rbm<Spin<f64>, Gaussian<f64>> {
    let mut rng = ebm_core::RngStreams::auxiliary(seed, 0);
    let w = DMatrix::from_fn(7, 3, |_, _| rng.random::<f64>() - 0.5);
    Rbm::new(
        Spin::new(vec![0.1; 7]),
        Gaussian::new(vec![1.3, 0.8, 1.0], vec![0.2, -0.4, 0.1]).unwrap(),
        w,
    )
    .unwrap()
}

#[test]
fn decorrelation_gradient_matches_finite_differences() {
    let rbm = small_rbm(3);
    let mut rng = ebm_core::RngStreams::auxiliary(4, 0);
    let v = DMatrix::from_fn(7, 9, |_, _| if rng.random::<bool>() { 1.0 } else { -1.0 });
    let sw: Vec<f64> = (0..9).map(|k| 1.0 + k as f64 * 0.1).collect();
    let g = decorrelation_gradient(&rbm, &v, Some(&sw)).unwrap();
    let eps = 1e-6;
    let mut worst = 0.0f64;
    for k in 0..g.len() {
        let shifted = |d: f64| {
            let mut w = rbm.weights().clone();
            w.as_mut_slice()[k] += d;
            let r = Rbm::new(rbm.visible().clone(), rbm.hidden().clone(), w).unwrap();
            decorrelation_penalty(&r, &v, Some(&sw)).unwrap()
        };
        let fd = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
        worst = worst.max((fd - g[k]).abs());
    }
    assert!(worst < 1e-7, "largest deviation {worst}");
    // Negative control: the gradient without the factor Γ'' (a plausible slip) is off.
    let with_unit_slope: f64 = g.iter().map(|x| x.abs()).sum();
    assert!(with_unit_slope > 1e-3);
    // Bad input.
    let bern = Rbm::new(
        Spin::new(vec![0.0; 7]),
        Bernoulli::zeros(3),
        DMatrix::zeros(7, 3),
    )
    .unwrap();
    assert!(decorrelation_penalty(&bern, &DMatrix::zeros(6, 2), None).is_err());
    assert!(decorrelation_penalty(&bern, &v, Some(&[1.0])).is_err());
}

/// Ratio of off-diagonal to diagonal hidden activity on the data:
/// mean Σ_{μ≠ν}|f_μ f_ν| / mean Σ_μ f_μ² (sin 2θ for Hopfield weights rotated by θ, 0 for aligned).
fn cross_ratio(rbm: &Rbm<Spin<f64>, Gaussian<f64>>, v: &DMatrix<f64>) -> f64 {
    let mut f = DMatrix::zeros(rbm.hidden().width(), v.ncols());
    rbm.hidden_means(v, 1.0, &mut f, Par::Seq);
    let diag: f64 = f.iter().map(|x| x * x).sum::<f64>() / v.ncols() as f64;
    decorrelation_penalty(rbm, v, None).unwrap() / diag
}

/// Hopfield, N = 16, two Walsh–Hadamard patterns, w = 1.5; training starts from the exact
/// model with weights rotated by 0.5 rad (a maximum-likelihood solution: rotations leave the law
/// unchanged). Without the penalty the representation stays delocalised; with it the weights
/// rotate back to one unit per pattern (Fig. 16 of the paper).
#[test]
fn decorrelation_penalty_aligns_hidden_units_with_patterns() {
    let n = 16;
    let patterns = walsh_hadamard_patterns(n, 2).unwrap();
    let hop = Hopfield::new(patterns.clone(), 1.5 * 1.5, vec![0.0; n]).unwrap();
    let samples = hop.exact_samples(400, 1.0, 11).unwrap();
    let exact = hop.to_rbm().unwrap();
    let (c, sn) = (0.5f64.cos(), 0.5f64.sin());
    let o = DMatrix::from_row_slice(2, 2, &[c, -sn, sn, c]);
    let rotated = Rbm::new(
        exact.visible().clone(),
        exact.hidden().clone(),
        exact.weights() * &o,
    )
    .unwrap();
    let data = TrainingData::new(rotated.visible(), samples.clone()).unwrap();
    let start = cross_ratio(&rotated, &samples);
    assert!(start > 0.8, "rotated start {start}");
    let train = |lambda: f64| {
        let mut t = Trainer::new(
            Pcd {
                sweeps: 1,
                chains: 100,
            },
            100,
        );
        t.decorrelation = lambda;
        let mut s = t.init(rotated.clone(), &data, 5, Par::Rayon).unwrap();
        t.run(&mut s, &data, None, 1000, Par::Rayon, ()).unwrap();
        cross_ratio(&s.model, &samples)
    };
    let without = train(0.0);
    let with = train(0.1);
    println!("cross ratio: start {start:.3}, without penalty {without:.3}, with {with:.3}");
    assert!(without > 0.7, "without penalty {without}");
    assert!(with < 0.3, "with penalty {with}");
    let bad = Trainer {
        decorrelation: -1.0,
        ..Trainer::new(
            Pcd {
                sweeps: 1,
                chains: 10,
            },
            10,
        )
    };
    assert!(bad.init(rotated.clone(), &data, 1, Par::Seq).is_err());
}

#[test]
fn persistent_kernel_with_gibbs_is_pcd_and_latent_moves_train() {
    let mut rng = ebm_core::RngStreams::auxiliary(9, 0);
    let samples = DMatrix::from_fn(
        8,
        60,
        |i, j| if (i < 4) == (j % 2 == 0) { 1.0 } else { 0.0 },
    );
    let _ = rng.random::<f64>();
    let model =
        ebm_train::initial_model(Bernoulli::zeros(8), Bernoulli::zeros(3), None, 0.05, 3).unwrap();
    let data = TrainingData::new(model.visible(), samples).unwrap();
    let pcd = Trainer::new(
        Pcd {
            sweeps: 2,
            chains: 32,
        },
        20,
    );
    let mut a = pcd.init(model.clone(), &data, 7, Par::Rayon).unwrap();
    pcd.run(&mut a, &data, None, 20, Par::Rayon, ()).unwrap();
    let adapter = Trainer::new(
        PersistentKernel {
            kernel: Gibbs::new(2),
            steps: 1,
            chains: 32,
        },
        20,
    );
    let mut b = adapter.init(model.clone(), &data, 7, Par::Seq).unwrap();
    adapter.run(&mut b, &data, None, 20, Par::Seq, ()).unwrap();
    assert_eq!(
        a.model, b.model,
        "PersistentKernel(Gibbs) must equal Pcd bit for bit"
    );

    // Hidden-space moves (exact for Bernoulli hidden units), alone and alternated with AGS:
    // the exact log-likelihood rises from the initial model's.
    let ll = |m: &Rbm<Bernoulli<f64>, Bernoulli<f64>>| {
        let lz = ebm_models::exact::log_partition_by_hidden(m, 1.0, Par::Seq).unwrap();
        ebm_train::mean_log_likelihood(m, &data, lz, Par::Seq)
    };
    let ll0 = ll(&model);
    for latent in [true, false] {
        let end = if latent {
            let mut t = Trainer::new(
                PersistentKernel {
                    kernel: LatentGibbs::single(),
                    steps: 1,
                    chains: 32,
                },
                20,
            );
            t.learning_rate = ebm_train::LearningRate::Constant(0.1);
            let mut s = t.init(model.clone(), &data, 7, Par::Rayon).unwrap();
            t.run(&mut s, &data, None, 200, Par::Rayon, ()).unwrap();
            s.model
        } else {
            let k = Alternate {
                first: Gibbs::new(1),
                second: LatentGibbs::pair(),
            };
            let mut t = Trainer::new(
                PersistentKernel {
                    kernel: k,
                    steps: 1,
                    chains: 32,
                },
                20,
            );
            t.learning_rate = ebm_train::LearningRate::Constant(0.1);
            let mut s = t.init(model.clone(), &data, 7, Par::Rayon).unwrap();
            t.run(&mut s, &data, None, 200, Par::Rayon, ()).unwrap();
            s.model
        };
        let l = ll(&end);
        println!("latent {latent}: log-likelihood {ll0:.4} -> {l:.4}");
        assert!(l > ll0 + 1.0, "latent {latent}: {ll0} -> {l}");
    }
}

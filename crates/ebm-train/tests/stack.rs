//! Stack training (paper 002 §3.1; spec tests §9.11): the data of RBM n + 1 are one sampled
//! hidden representation per data point, of the right size and domain, fixed by the seed and
//! distributed as P_n(h | v) (chi-square against the exact conditional); the stack trainer
//! trains every RBM in order.

use ebm_core::{Par, RngStreams};
use ebm_models::{Bernoulli, DiscreteLayer, Potts, Rbm, Spin};
use ebm_testkit::chi_square;
use ebm_train::{
    LearningRate, Optimizer, Pcd, StackTrainer, Trainer, TrainingData, sampled_representations,
};
use nalgebra::DMatrix;
use rand::Rng;

fn random_rbm<L: ebm_models::BinaryLayer<Scalar = f64>>(
    nv: usize,
    nh: usize,
    seed: u64,
) -> Rbm<L, L> {
    let mut rng = RngStreams::auxiliary(seed, 0);
    let mut u = |n: usize| -> Vec<f64> { (0..n).map(|_| rng.random_range(-1.5..1.5)).collect() };
    let (g, c, w) = (u(nv), u(nh), u(nv * nh));
    Rbm::new(
        L::with_fields(g),
        L::with_fields(c),
        DMatrix::from_vec(nv, nh, w),
    )
    .unwrap()
}

/// Two planted clusters of `n` binary units (each unit of a sample flipped with prob. 0.1).
fn two_clusters(n: usize, k: usize, seed: u64) -> DMatrix<f64> {
    let mut rng = RngStreams::auxiliary(seed, 1);
    DMatrix::from_fn(n, k, |i, j| {
        let centre = ((i < n / 2) == (j % 2 == 0)) as u8 as f64;
        if rng.random::<f64>() < 0.1 {
            1.0 - centre
        } else {
            centre
        }
    })
}

#[test]
fn representations_are_one_conditional_draw_per_data_point() {
    let rbm: Rbm<Bernoulli, Bernoulli> = random_rbm(5, 3, 1);
    // One data point repeated K times: its K representations are K independent draws of
    // P(h | v), tested against the exact product of sigmoids.
    let k = 20_000;
    let v = DMatrix::from_fn(5, k, |i, _| (i % 2) as f64);
    let data = TrainingData::new(rbm.visible(), v.clone()).unwrap();
    let reps = sampled_representations(&rbm, &data, 7, Par::Rayon).unwrap();
    assert_eq!(
        reps.samples().shape(),
        (3, k),
        "M_n rows, one column per data point"
    );
    assert!(
        reps.samples().iter().all(|&x| x == 0.0 || x == 1.0),
        "samples, not means"
    );
    let mut means = DMatrix::zeros(3, 1);
    rbm.hidden_means(&v.columns(0, 1).into_owned(), 1.0, &mut means, Par::Seq);
    let probs: Vec<f64> = (0..8)
        .map(|c| {
            (0..3)
                .map(|mu| {
                    if c >> mu & 1 == 1 {
                        means[mu]
                    } else {
                        1.0 - means[mu]
                    }
                })
                .product()
        })
        .collect();
    let mut counts = vec![0u64; 8];
    for col in reps.samples().column_iter() {
        counts[rbm.hidden().configuration_index(col.as_slice()) as usize] += 1;
    }
    let p = chi_square(&counts, &probs).p_value;
    assert!(p > 1e-4, "representations are not P(h | v) draws: p = {p}");
    // Negative control: the same test on the draws of another data point fails.
    let other = DMatrix::from_fn(5, k, |i, _| ((i + 1) % 2) as f64);
    let other = TrainingData::new(rbm.visible(), other).unwrap();
    let wrong = sampled_representations(&rbm, &other, 7, Par::Rayon).unwrap();
    let mut counts = vec![0u64; 8];
    for col in wrong.samples().column_iter() {
        counts[rbm.hidden().configuration_index(col.as_slice()) as usize] += 1;
    }
    assert!(chi_square(&counts, &probs).p_value < 1e-9);

    // Fixed by the seed and independent of the thread count; another seed differs.
    let again = sampled_representations(&rbm, &data, 7, Par::Seq).unwrap();
    assert_eq!(again.samples(), reps.samples());
    let other_seed = sampled_representations(&rbm, &data, 8, Par::Seq).unwrap();
    assert_ne!(other_seed.samples(), reps.samples());
}

#[test]
fn spin_representations_are_spins() {
    let rbm: Rbm<Spin, Spin> = random_rbm(4, 6, 3);
    let data = TrainingData::new(
        rbm.visible(),
        DMatrix::from_fn(4, 50, |i, j| if (i + j) % 3 == 0 { 1.0 } else { -1.0 }),
    )
    .unwrap();
    let reps = sampled_representations(&rbm, &data, 1, Par::Seq).unwrap();
    assert_eq!(reps.samples().shape(), (6, 50));
    assert!(reps.samples().iter().all(|&x| x == 1.0 || x == -1.0));
    let bad = TrainingData::new(&Spin::<f64>::zeros(3), DMatrix::from_element(3, 2, 1.0)).unwrap();
    assert!(sampled_representations(&rbm, &bad, 1, Par::Seq).is_err());
}

fn trainer() -> StackTrainer<Pcd> {
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 2,
            chains: 32,
        },
        32,
    );
    trainer.optimizer = Optimizer::ADAM;
    trainer.learning_rate = LearningRate::Constant(0.02);
    StackTrainer {
        trainer,
        updates: 30,
        weight_std: 0.01,
    }
}

#[test]
fn stack_trainer_trains_every_rbm_in_order_and_is_seeded() {
    let data = TrainingData::new(&Bernoulli::zeros(12), two_clusters(12, 200, 4)).unwrap();
    let hidden = vec![
        Bernoulli::zeros(6),
        Bernoulli::zeros(4),
        Bernoulli::zeros(2),
    ];
    let mut seen = Vec::new();
    let stack = trainer()
        .train(
            Bernoulli::zeros(12),
            hidden.clone(),
            &data,
            9,
            Par::Rayon,
            |n, u, _| {
                seen.push((n, u));
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(stack.len(), 3);
    assert_eq!(seen.len(), 90);
    assert_eq!(seen[0], (0, 1));
    assert_eq!(seen[30], (1, 1));
    assert_eq!(seen[89], (2, 30));
    let sizes: Vec<(usize, usize)> = stack.upper().map(|r| r.weights().shape()).collect();
    assert_eq!(stack.bottom().weights().shape(), (12, 6));
    assert_eq!(sizes, vec![(6, 4), (4, 2)]);
    // Trained: the bottom weights moved away from their initial scale.
    assert!(stack.bottom().weights().amax() > 0.1);
    let again = trainer()
        .train(
            Bernoulli::zeros(12),
            hidden.clone(),
            &data,
            9,
            Par::Seq,
            |_, _, _| Ok(()),
        )
        .unwrap();
    assert_eq!(again, stack, "a stack is fixed by its seed");
    assert!(
        trainer()
            .train(
                Bernoulli::zeros(12),
                Vec::<Bernoulli>::new(),
                &data,
                9,
                Par::Seq,
                |_, _, _| Ok(())
            )
            .is_err()
    );
}

#[test]
fn a_potts_bottom_trains_under_bernoulli_layers() {
    // 4 sites with 3 states, two planted sequences.
    let k = 100;
    let samples = DMatrix::from_fn(12, k, |r, j| {
        let (site, state) = (r / 3, r % 3);
        let s = if j % 2 == 0 { site % 3 } else { (site + 1) % 3 };
        (s == state) as u8 as f64
    });
    let data = TrainingData::new(&Potts::zeros(4, 3), samples).unwrap();
    let stack = trainer()
        .train(
            Potts::zeros(4, 3),
            vec![Bernoulli::zeros(5), Bernoulli::zeros(2)],
            &data,
            2,
            Par::Rayon,
            |_, _, _| Ok(()),
        )
        .unwrap();
    assert_eq!(stack.len(), 2);
    assert_eq!(stack.bottom().weights().shape(), (12, 5));
}

//! The exact tests of the CUDA kernels, run on a GPU. On a machine without one each test prints
//! why it checks nothing and passes, unless `EBM_REQUIRE_GPU=1` (as `scripts/gpu-check.sh`
//! sets it), which turns a missing GPU into a failure.

use ebm_core::{Enumerable, Par};
use ebm_cuda::{Error, Gpu, GpuChains, GpuPcd, GpuPt, GpuRbm, GpuScalar, GpuSchedule, PcdSettings};

fn settings(sweeps: usize, batch_size: usize, learning_rate: f64, seed: u64) -> PcdSettings {
    PcdSettings {
        sweeps,
        batch_size,
        learning_rate,
        seed,
    }
}
use ebm_models::{Bernoulli, DiscreteLayer, Layer, Rbm, Spin};
use ebm_testkit::{chi_square, exact_chains, joint_probabilities};
use nalgebra::DMatrix;
use std::sync::Arc;

/// The GPU, or `None` (with the reason on stderr) where there is none and none is required.
fn gpu() -> Option<Arc<Gpu>> {
    match ebm_cuda::unavailable() {
        None => Some(Gpu::new(0).expect("opening cuda:0")),
        Some(reason) if std::env::var("EBM_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("EBM_REQUIRE_GPU=1 but no GPU: {reason}")
        }
        Some(reason) => {
            eprintln!("skipped: {reason}");
            None
        }
    }
}

/// A small RBM with strong couplings (5 x 3 units, both layers enumerable).
fn small<
    V: Layer<Scalar = F> + FromFields<F>,
    H: Layer<Scalar = F> + FromFields<F>,
    F: GpuScalar,
>() -> Rbm<V, H> {
    let w = DMatrix::from_fn(5, 3, |i, j| {
        F::from_f64(0.9 * (((i * 3 + j * 7) % 5) as f64 - 2.0) / 2.0)
    });
    let a = (0..5).map(|i| F::from_f64(0.3 * i as f64 - 0.5)).collect();
    let b = (0..3).map(|j| F::from_f64(0.4 - 0.35 * j as f64)).collect();
    Rbm::new(V::with_fields(a), H::with_fields(b), w).unwrap()
}

/// Binary layers built from their fields.
trait FromFields<F> {
    fn with_fields(f: Vec<F>) -> Self;
}
impl<F: GpuScalar> FromFields<F> for Bernoulli<F> {
    fn with_fields(f: Vec<F>) -> Self {
        Bernoulli::new(f)
    }
}
impl<F: GpuScalar> FromFields<F> for Spin<F> {
    fn with_fields(f: Vec<F>) -> Self {
        Spin::new(f)
    }
}

/// One GPU sweep at `beta_kernel` from `n` exact draws of \\(p_\beta\\); the chi-square
/// p-value of the joint \\((v, h)\\) reached against \\(p_\beta(v, h)\\).
fn one_sweep_p_value<V, H, F>(gpu: &Arc<Gpu>, rbm: &Rbm<V, H>, beta: f64, beta_kernel: f64) -> f64
where
    F: GpuScalar,
    V: DiscreteLayer<Scalar = F>,
    H: DiscreteLayer<Scalar = F>,
{
    let n = 100_000;
    let start = exact_chains(rbm, beta, n, 11);
    let model = GpuRbm::<F>::upload(gpu, rbm).unwrap();
    let mut chains = GpuChains::upload(&model, &start.chains.visible, 5).unwrap();
    chains.set_betas(&vec![beta_kernel; n]).unwrap();
    model.sweep(&mut chains).unwrap();
    let (v, h) = (chains.visible().unwrap(), chains.hidden().unwrap());
    let p = joint_probabilities(rbm, beta);
    let nvc = rbm.visible().n_configurations() as usize;
    let mut counts = vec![0u64; p.len()];
    for (vc, hc) in v.column_iter().zip(h.column_iter()) {
        let i = rbm.visible().configuration_index(vc.as_slice()) as usize;
        let j = rbm.hidden().configuration_index(hc.as_slice()) as usize;
        counts[i + nvc * j] += 1;
    }
    chi_square(&counts, &p).p_value
}

/// One sweep from exact draws leaves the joint law invariant, for {0,1} and {-1,+1} units, in
/// f64 and f32, at beta = 1 and a tempered beta; a sweep at the wrong temperature (negative
/// control) is rejected.
#[test]
fn gibbs_sweep_leaves_the_joint_law_invariant() {
    let Some(gpu) = gpu() else { return };
    let bb = small::<Bernoulli<f64>, Bernoulli<f64>, f64>();
    let sb = small::<Spin<f32>, Bernoulli<f32>, f32>();
    let bs = small::<Bernoulli<f32>, Spin<f32>, f32>();
    for beta in [1.0, 0.6] {
        let ps = [
            one_sweep_p_value(&gpu, &bb, beta, beta),
            one_sweep_p_value(&gpu, &sb, beta, beta),
            one_sweep_p_value(&gpu, &bs, beta, beta),
        ];
        eprintln!("beta {beta}: p-values {ps:?}");
        assert!(ps.iter().all(|&p| p > 1e-4), "beta {beta}: {ps:?}");
    }
    let wrong = one_sweep_p_value(&gpu, &bb, 1.0, 0.75);
    eprintln!("negative control (sweep at 0.75 from p_1): p = {wrong:e}");
    assert!(
        wrong < 1e-8,
        "a sweep at the wrong temperature passed: p = {wrong}"
    );
}

/// The GPU's free energies are the CPU's (`EnergyModel::energies`).
#[test]
fn free_energies_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    fn check<V, H, F>(gpu: &Arc<Gpu>, rbm: &Rbm<V, H>, beta: f64, tol: f64)
    where
        F: GpuScalar,
        V: DiscreteLayer<Scalar = F>,
        H: DiscreteLayer<Scalar = F>,
    {
        let x = exact_chains(rbm, 0.5, 300, 3).chains.visible;
        let model = GpuRbm::<F>::upload(gpu, rbm).unwrap();
        let mut chains = GpuChains::upload(&model, &x, 1).unwrap();
        chains.set_betas(&vec![beta; 300]).unwrap();
        let got = model.free_energies(&mut chains).unwrap();
        let mut want = vec![0.0; 300];
        rbm.free_energy_visible(&x, beta, &mut want, Par::Seq);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{g} vs {w}");
        }
    }
    check(
        &gpu,
        &small::<Bernoulli<f64>, Bernoulli<f64>, f64>(),
        0.7,
        1e-12,
    );
    check(&gpu, &small::<Spin<f64>, Spin<f64>, f64>(), 1.0, 1e-12);
    check(&gpu, &small::<Bernoulli<f32>, Spin<f32>, f32>(), 1.3, 1e-5);
}

/// The visible configurations of the chains of each rung of a tempering run, as counts over
/// the model's visible configurations.
fn rung_counts<F: GpuScalar, V: DiscreteLayer<Scalar = F>, H: Layer<Scalar = F>>(
    rbm: &Rbm<V, H>,
    x: &DMatrix<F>,
) -> Vec<u64> {
    let mut counts = vec![0u64; rbm.visible().n_configurations() as usize];
    for c in x.column_iter() {
        counts[rbm.visible().configuration_index(c.as_slice()) as usize] += 1;
    }
    counts
}

/// The smallest chi-square p-value over the rungs after `rounds` tempering rounds from exact
/// draws of every rung's tempered law, and the acceptance rates.
fn pt_p_value(
    gpu: &Arc<Gpu>,
    schedule: GpuSchedule,
    rounds: usize,
    accept_all: bool,
) -> (f64, Vec<f64>) {
    let rbm = small::<Bernoulli<f64>, Bernoulli<f64>, f64>();
    let ladder = [0.2, 0.5, 0.8, 1.0];
    let n = 60_000;
    let mut start = DMatrix::zeros(5, ladder.len() * n);
    for (k, &beta) in ladder.iter().enumerate() {
        let x = exact_chains(&rbm, beta, n, 100 + k as u64).chains.visible;
        start.columns_mut(k * n, n).copy_from(&x);
    }
    let model = GpuRbm::<f64>::upload(gpu, &rbm).unwrap();
    let mut chains = GpuChains::upload(&model, &start, 9).unwrap();
    let mut pt = GpuPt::new(&model, &ladder, schedule, &mut chains).unwrap();
    if accept_all {
        pt.accept_every_exchange();
    }
    for _ in 0..rounds {
        pt.round(&model, &mut chains).unwrap();
    }
    let mut worst: f64 = 1.0;
    for (k, &beta) in ladder.iter().enumerate() {
        let x = pt.rung_visible(&chains, k).unwrap();
        let p = chi_square(&rung_counts(&rbm, &x), &rbm.probabilities(beta, Par::Seq)).p_value;
        worst = worst.min(p);
    }
    (worst, pt.acceptance(&model).unwrap())
}

/// Tempering rounds (sweep + exchanges decided on the device) from exact draws of every rung
/// leave each rung's tempered law invariant, for both schedules; exchanges accepted without
/// the Metropolis test (negative control) are rejected.
#[test]
fn pt_rounds_leave_every_rung_invariant() {
    let Some(gpu) = gpu() else { return };
    for schedule in [
        GpuSchedule::DeterministicEvenOdd,
        GpuSchedule::StochasticEvenOdd,
    ] {
        let (p, acc) = pt_p_value(&gpu, schedule, 3, false);
        eprintln!("{schedule:?}: worst rung p = {p}, acceptance {acc:?}");
        assert!(p > 1e-4, "{schedule:?}: p = {p}");
        assert!(acc.iter().all(|a| *a > 0.05 && *a < 1.0), "{acc:?}");
    }
    let (p, _) = pt_p_value(&gpu, GpuSchedule::DeterministicEvenOdd, 3, true);
    eprintln!("negative control (every exchange accepted): worst rung p = {p:e}");
    assert!(p < 1e-8, "unchecked exchanges passed: p = {p}");
}

/// A chain's random numbers depend on the seed and its own index only: the first chains of a
/// batch draw what they draw alone, the same seed repeats a run bit for bit, another seed does
/// not (negative control).
#[test]
fn streams_are_addressable_and_reproducible() {
    let Some(gpu) = gpu() else { return };
    let rbm = small::<Bernoulli<f32>, Bernoulli<f32>, f32>();
    let x = exact_chains(&rbm, 1.0, 64, 1).chains.visible;
    let model = GpuRbm::<f32>::upload(&gpu, &rbm).unwrap();
    let run = |cols: usize, seed: u64| {
        let mut c = GpuChains::upload(&model, &x.columns(0, cols).into_owned(), seed).unwrap();
        model.sweeps(&mut c, 7).unwrap();
        c.visible().unwrap()
    };
    let (all, few) = (run(64, 42), run(5, 42));
    assert_eq!(all.columns(0, 5), few);
    assert_eq!(run(64, 42), all);
    assert_ne!(run(64, 43), all);
}

/// The hidden draws of a sweep are the host's Philox numbers compared with the conditional
/// probabilities: `h = 1` exactly when `u < sigmoid(beta (eta + W^T v))`, with `u` made from
/// the first two words of the block `(j, chain, 0)` in f64.
#[test]
fn draws_are_the_documented_philox_numbers() {
    let Some(gpu) = gpu() else { return };
    let rbm = small::<Bernoulli<f64>, Bernoulli<f64>, f64>();
    let n = 2000;
    let x = exact_chains(&rbm, 1.0, n, 4).chains.visible;
    let model = GpuRbm::<f64>::upload(&gpu, &rbm).unwrap();
    let seed = 0x1234_5678_9abc;
    let mut c = GpuChains::upload(&model, &x, seed).unwrap();
    c.set_betas(&vec![0.9; n]).unwrap();
    model.sweep(&mut c).unwrap();
    let h = c.hidden().unwrap();
    let inputs = rbm.weights().transpose() * &x;
    let eta = &rbm.hidden().fields;
    let mut checked = 0;
    for chain in 0..n {
        for j in 0..3 {
            let r = ebm_cuda::philox4x32(
                [j as u32, chain as u32, 0, 0],
                [seed as u32, (seed >> 32) as u32],
            );
            let (hi, lo) = (r[0], r[1]);
            let u = (((u64::from(hi) << 32) | u64::from(lo)) >> 11) as f64 * 2f64.powi(-53);
            let p = 1.0 / (1.0 + (-0.9 * (eta[j] + inputs[(j, chain)])).exp());
            if (u - p).abs() > 1e-12 {
                assert_eq!(
                    h[(j, chain)],
                    f64::from(u8::from(u < p)),
                    "chain {chain} unit {j}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 5900);
}

/// One PCD update with k = 0 and the whole data as the batch is the CPU trainer's centred
/// step (`Moments`, `Gradient::from_moments`) to rounding; the uncentred step differs.
#[test]
fn pcd_update_is_the_centred_step() {
    use ebm_train::{Gradient, Moments};
    let Some(gpu) = gpu() else { return };
    let (nv, nh) = (6, 4);
    let rbm = Rbm::new(
        Bernoulli::new((0..nv).map(|i| 0.2 * i as f64 - 0.4).collect()),
        Bernoulli::new((0..nh).map(|j| 0.3 - 0.2 * j as f64).collect()),
        DMatrix::from_fn(nv, nh, |i, j| 0.1 * ((i * 5 + j * 3) % 7) as f64 - 0.3),
    )
    .unwrap();
    let bit = |k: usize| f64::from(u8::from(((k * 2654435761usize) >> 7).is_multiple_of(3)));
    let data = DMatrix::from_fn(nv, 40, |i, c| bit(i * 40 + c));
    let chains = DMatrix::from_fn(nv, 30, |i, c| bit(i * 30 + c + 977));
    let lr = 0.05;
    let mut pcd = GpuPcd::<f64>::new(&gpu, &rbm, &data, &chains, settings(0, 40, lr, 1)).unwrap();
    pcd.update().unwrap();
    let got: Rbm<Bernoulli, Bernoulli> = pcd.download().unwrap();
    let d = Moments::of_visible(&rbm, &data, None, Par::Seq);
    let m = Moments::of_visible(&rbm, &chains, None, Par::Seq);
    let expect = |centred: bool| {
        let g = Gradient::from_moments(&d, &m, centred);
        let (a, b) = (&d.visible_mean, &d.hidden_mean);
        let w = rbm.weights() + &g.weights * lr;
        let (ca, cb) = if centred {
            (a.clone(), b.clone())
        } else {
            (vec![0.0; nv], vec![0.0; nh])
        };
        let gb = &g.weights * DMatrix::from_vec(nh, 1, cb);
        let ga = g.weights.transpose() * DMatrix::from_vec(nv, 1, ca);
        let theta: Vec<f64> = (0..nv)
            .map(|i| rbm.visible().fields[i] + lr * (a[i] - m.visible_mean[i] - gb[i]))
            .collect();
        let eta: Vec<f64> = (0..nh)
            .map(|j| rbm.hidden().fields[j] + lr * (b[j] - m.hidden_mean[j] - ga[j]))
            .collect();
        (w, theta, eta)
    };
    let (w, theta, eta) = expect(true);
    let close = |x: &[f64], y: &[f64]| x.iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-12);
    assert!(close(got.weights().as_slice(), w.as_slice()));
    assert!(close(&got.visible().fields, &theta));
    assert!(close(&got.hidden().fields, &eta));
    let (w0, _, _) = expect(false);
    assert!(
        !close(w0.as_slice(), w.as_slice()),
        "the control does not differ"
    );
}

/// PCD-10 on the GPU raises the exact log-likelihood of a small model on two-prototype data,
/// from the independent model at the data means to within reach of the data's entropy bound.
#[test]
fn pcd_training_raises_the_exact_log_likelihood() {
    let Some(gpu) = gpu() else { return };
    let (nv, nh, n) = (10, 4, 1000);
    let proto = |p: usize, i: usize| f64::from(u8::from((i + p).is_multiple_of(2)));
    let data = DMatrix::from_fn(nv, n, |i, c| {
        let flip = (c * 7919 + i * 104729) % 10 == 0;
        let x = proto(c % 2, i);
        if flip { 1.0 - x } else { x }
    });
    let means: Vec<f64> = data.row_iter().map(|r| r.mean()).collect();
    let rbm = Rbm::new(
        Bernoulli::from_means(&means),
        Bernoulli::zeros(nh),
        DMatrix::from_fn(nv, nh, |i, j| 1e-3 * (((i * 3 + j) % 5) as f64 - 2.0)),
    )
    .unwrap();
    let ll = |m: &Rbm<Bernoulli, Bernoulli>| {
        let log_z = ebm_models::exact::log_partition_by_hidden(m, 1.0, Par::Seq).unwrap();
        let mut f = vec![0.0; n];
        m.free_energy_visible(&data, 1.0, &mut f, Par::Seq);
        -f.iter().sum::<f64>() / n as f64 - log_z
    };
    let chains = DMatrix::from_fn(nv, 500, |i, c| {
        f64::from(u8::from((i * 31 + c * 17) % 2 == 0))
    });
    let mut pcd =
        GpuPcd::<f64>::new(&gpu, &rbm, &data, &chains, settings(10, 100, 0.05, 3)).unwrap();
    pcd.train(1500).unwrap();
    let trained: Rbm<Bernoulli, Bernoulli> = pcd.download().unwrap();
    let (before, after) = (ll(&rbm), ll(&trained));
    eprintln!("exact log-likelihood: {before:.4} -> {after:.4}");
    // Each sample: a prototype (log 2) and 10 bits flipped with probability 0.1: the data's
    // entropy per sample is about log 2 + 10 H(0.1) = 3.94 nats; the independent model is
    // near 10 log 2 = 6.93.
    assert!(before < -6.5, "{before}");
    assert!(after > -4.6, "training did not fit: {before} -> {after}");
}

/// A missing device is an error that says why, never a panic.
#[test]
fn a_missing_device_is_a_clear_error() {
    match ebm_cuda::unavailable() {
        Some(reason) => {
            let e = Gpu::new(0).unwrap_err();
            assert!(matches!(e, Error::NoDevice(_)), "{e}");
            assert!(e.to_string().contains(&reason), "{e}");
        }
        None => {
            let e = Gpu::new(4096).unwrap_err();
            assert!(e.to_string().contains("cuda:4096"), "{e}");
        }
    }
}

/// `ebm_cuda::gibbs` computes in the model's own scalar: the chains of the step-by-step API in
/// that scalar, bit for bit, for an f32 and an f64 model.
#[test]
fn the_one_call_functions_compute_in_the_models_scalar() {
    let Some(gpu) = gpu() else { return };
    fn check<F: GpuScalar>(gpu: &Arc<Gpu>) {
        let rbm = small::<Bernoulli<F>, Spin<F>, F>();
        let start = exact_chains(&rbm, 1.0, 300, 8).chains.visible;
        let got = ebm_cuda::gibbs(gpu, &rbm, &start, 0.8, 5, 21).unwrap();
        let model = GpuRbm::<F>::upload(gpu, &rbm).unwrap();
        let mut c = GpuChains::upload(&model, &start, 21).unwrap();
        c.set_betas(&[0.8; 300]).unwrap();
        model.sweeps(&mut c, 5).unwrap();
        assert_eq!(got, c.visible().unwrap());
        assert!(ebm_cuda::gibbs(gpu, &rbm, &start, 0.0, 5, 21).is_err());
    }
    check::<f32>(&gpu);
    check::<f64>(&gpu);
}

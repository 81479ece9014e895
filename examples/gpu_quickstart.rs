//! The CUDA backend in a page: Gibbs sampling, parallel tempering and PCD training of a small
//! RBM on the GPU, each checked against the model's exact law (enumeration on the host). On a
//! machine without a GPU it prints why and exits 0.
//!
//! ```text
//! cargo run --release --example gpu_quickstart
//! ```

use ebm::core::{Enumerable, Par};
use ebm::cuda::{Gpu, GpuChains, GpuPcd, GpuPt, GpuRbm, GpuSchedule, PcdSettings};
use ebm::models::{Bernoulli, DiscreteLayer, Rbm};
use ebm::nalgebra::DMatrix;

/// Total-variation distance between the empirical law of the columns of `x` and `p`.
fn tv(rbm: &Rbm<Bernoulli, Bernoulli>, x: &DMatrix<f64>, p: &[f64]) -> f64 {
    let mut q = vec![0.0; p.len()];
    for c in x.column_iter() {
        q[rbm.visible().configuration_index(c.as_slice()) as usize] += 1.0 / x.ncols() as f64;
    }
    0.5 * p.iter().zip(&q).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ANCHOR: open
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("{e}");
            return Ok(());
        }
    };
    println!(
        "{} (compute capability {:?})",
        gpu.name(),
        gpu.compute_capability()
    );
    // ANCHOR_END: open

    // ANCHOR: gibbs
    // A bimodal 8 x 4 RBM: two opposite patterns, each favoured by two hidden units.
    let w = DMatrix::from_fn(8, 4, |i, j| {
        let s = if (i < 4) == (j < 2) { 1.0 } else { -1.0 };
        1.2 * s
    });
    let rbm = Rbm::new(Bernoulli::new(vec![-0.6; 8]), Bernoulli::zeros(4), w)?;
    let exact = rbm.probabilities(1.0, Par::Rayon);
    // 50 000 chains from all-zero, 200 sweeps each, on the device.
    let start = DMatrix::zeros(8, 50_000);
    let samples = ebm::cuda::gibbs(&gpu, &rbm, &start, 1.0, 200, 7)?;
    let d = tv(&rbm, &samples, &exact);
    println!("Gibbs: total variation to the exact law {d:.4}");
    assert!(d < 0.02);
    // ANCHOR_END: gibbs

    // ANCHOR: tempering
    // Four rungs of 20 000 systems, deterministic even/odd exchanges decided on the device.
    let model = GpuRbm::<f64>::upload(&gpu, &rbm)?;
    let mut chains = GpuChains::upload(&model, &DMatrix::<f64>::zeros(8, 4 * 20_000), 11)?;
    let ladder = [0.25, 0.5, 0.75, 1.0];
    let mut pt = GpuPt::new(
        &model,
        &ladder,
        GpuSchedule::DeterministicEvenOdd,
        &mut chains,
    )?;
    for _ in 0..200 {
        pt.round(&model, &mut chains)?;
    }
    let target = pt.rung_visible(&chains, 3)?;
    let d = tv(&rbm, &target, &exact);
    println!(
        "PT: acceptance {:?}, total variation {d:.4}",
        pt.acceptance(&model)?
    );
    assert!(d < 0.02);
    // ANCHOR_END: tempering

    // ANCHOR: training
    // PCD-10 on samples of the model itself: the trained model's law approaches it.
    let data = samples.columns(0, 5000).into_owned();
    let init = Rbm::new(
        Bernoulli::zeros(8),
        Bernoulli::zeros(4),
        DMatrix::from_element(8, 4, 0.01),
    )?;
    let settings = PcdSettings {
        sweeps: 10,
        batch_size: 500,
        learning_rate: 0.05,
        seed: 3,
    };
    let mut pcd = GpuPcd::<f64>::new(
        &gpu,
        &init,
        &data,
        &start.columns(0, 1000).into_owned(),
        settings,
    )?;
    pcd.train(2000)?;
    let trained: Rbm<Bernoulli, Bernoulli> = pcd.download()?;
    let p = trained.probabilities(1.0, Par::Rayon);
    let d = 0.5
        * p.iter()
            .zip(&exact)
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>();
    println!("PCD: total variation between the trained model's law and the source's {d:.4}");
    assert!(d < 0.1);
    // ANCHOR_END: training
    Ok(())
}

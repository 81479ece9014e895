//! RCM fit time (paper 000 SI Table 5: d = 3 directions, 100 hyperplanes): the mesh is built
//! once, the bench times `fit_rcm` (projected Newton ascent with decimation) on it. Data: four
//! Gaussian clusters in a 3-D latent space, N = 1000 visible units, 4000 samples; mesh of
//! 30 points per axis (27 000 grid points over the box, those in the attainable region kept).

#![allow(missing_docs)] // criterion_group! generates an undocumented function

use criterion::{Criterion, criterion_group, criterion_main};
use ebm_core::Par;
use ebm_data::generators::clusters::{ClusterConfig, ClusterPreset, Component, Shape, clustered};
use ebm_models::lowrank::Mesh;
use ebm_train::pretrain::{RcmConfig, fit_rcm, lowrank_basis};

fn bench(c: &mut Criterion) {
    let mut cfg: ClusterConfig = ClusterPreset::ThreeClusters2d.config();
    cfg.n_features = 1000;
    cfg.n_samples = 4000;
    cfg.components = [
        [0.4, 0.0, 0.0],
        [-0.4, 0.2, 0.0],
        [0.0, -0.4, 0.3],
        [0.0, 0.2, -0.4],
    ]
    .iter()
    .map(|c| Component {
        centre: c.to_vec(),
        shape: Shape::Gaussian { std: 0.05 },
        weight: 1.0,
    })
    .collect();
    let spins = clustered(&cfg, 1).unwrap().dataset.data().clone();
    let basis = lowrank_basis(&spins, 3, false).unwrap();
    let mesh = Mesh::grid(&basis, 30, Par::Rayon).unwrap();
    let data_m = basis.project(&spins).unwrap();
    let rcm = RcmConfig::default();
    eprintln!(
        "mesh: {} points kept, {} rejected",
        mesh.len(),
        mesh.rejected()
    );
    let t0 = std::time::Instant::now();
    let fit = fit_rcm(&mesh, &data_m, false, &rcm).unwrap();
    eprintln!(
        "fit: {} Newton steps, {} fits, {} hyperplanes kept, {:.2} s",
        fit.iterations,
        fit.fits,
        fit.rcm.n_hidden(),
        t0.elapsed().as_secs_f64()
    );
    let mut g = c.benchmark_group("rcm");
    g.sample_size(10);
    g.bench_function("fit_d3_h100_mesh30", |b| {
        b.iter(|| fit_rcm(&mesh, &data_m, false, &rcm).unwrap())
    });
    g.bench_function("mesh_d3_30", |b| {
        b.iter(|| Mesh::grid(&basis, 30, Par::Rayon).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

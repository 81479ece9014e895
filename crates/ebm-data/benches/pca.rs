#![allow(missing_docs)]
//! PCA throughput at the target size: 1000 variables x 50 000 samples (binary data).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ebm_data::generators::clusters::{ClusterPreset, clustered};
use ebm_data::{Centering, Pca};

fn bench_pca(c: &mut Criterion) {
    let mut cfg = ClusterPreset::Mickey.config();
    cfg.n_samples = 50_000;
    let data = clustered(&cfg, 42).expect("preset is valid").dataset;
    let mut group = c.benchmark_group("pca");
    group.sample_size(10);
    for centering in [Centering::Centered, Centering::Uncentered] {
        group.bench_with_input(
            BenchmarkId::new(format!("{centering:?}"), "1000x50000/k=10"),
            &data,
            |b, d| b.iter(|| Pca::fit(d.data(), None, 10, centering).expect("valid input")),
        );
    }
    group.finish();
}

criterion_group!(benches, bench_pca);
criterion_main!(benches);

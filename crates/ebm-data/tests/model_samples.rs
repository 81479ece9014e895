//! Exact samples of the analytical models through the dataset API, with known mode weights.

use ebm_data::{Domain, GeneratorSpec, generate};
use ebm_models::CurieWeiss;

#[test]
fn curie_weiss_samples_have_the_exact_mode_weight() {
    let (n, coupling, field, beta, n_samples) = (30, 1.5, 0.01, 1.0, 20_000);
    let ds = generate(
        &GeneratorSpec::CurieWeiss {
            n,
            coupling,
            field,
            beta,
            n_samples,
        },
        3,
    )
    .unwrap();
    assert_eq!(ds.domain(), Domain::Spin);
    assert_eq!((ds.n_features(), ds.n_samples()), (n, n_samples));
    let w = CurieWeiss::new(n, coupling, field)
        .unwrap()
        .positive_mode_weight(beta);
    // Even n: m = 0 has probability > 0 and counts half in the exact weight, label 0 here.
    let p0 = CurieWeiss::new(n, coupling, field)
        .unwrap()
        .up_count_distribution(beta)[n / 2];
    let expected = w - 0.5 * p0;
    let frac = ds.labels().unwrap().iter().filter(|&&l| l == 1).count() as f64 / n_samples as f64;
    let sd = (expected * (1.0 - expected) / n_samples as f64).sqrt();
    assert!((frac - expected).abs() < 5.0 * sd, "{frac} vs {expected}");
    // Deterministic in the seed.
    let again = generate(
        &GeneratorSpec::CurieWeiss {
            n,
            coupling,
            field,
            beta,
            n_samples,
        },
        3,
    )
    .unwrap();
    assert_eq!(again.data(), ds.data());
    assert!(
        generate(
            &GeneratorSpec::CurieWeiss {
                n: 0,
                coupling,
                field,
                beta,
                n_samples
            },
            3
        )
        .is_err()
    );
}

#[test]
fn hopfield_samples_sit_near_the_patterns() {
    let spec = GeneratorSpec::Hopfield {
        n: 16,
        n_patterns: 2,
        coupling: 2.0,
        beta: 1.0,
        n_samples: 5_000,
    };
    let ds = generate(&spec, 11).unwrap();
    assert_eq!((ds.n_features(), ds.n_samples()), (16, 5_000));
    let labels = ds.labels().unwrap();
    // Both patterns are visited by exact sampling (by symmetry each has weight about 1/2).
    let ones = labels.iter().filter(|&&l| l == 1).count();
    assert!(ones > 1_000 && ones < 4_000, "{ones}");
    assert!(
        generate(
            &GeneratorSpec::Hopfield {
                n: 30,
                n_patterns: 1,
                coupling: 1.0,
                beta: 1.0,
                n_samples: 1
            },
            1
        )
        .is_err()
    );
}

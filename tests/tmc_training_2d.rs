//! The quick budget of the Fig. 6 reproduction (`examples/tmc_training_2d.rs`, paper 001): the
//! structural facts that hold at any budget — equal chain-sweeps per update, a 2D
//! reconstruction on the full grid with a finite path discrepancy, exact laws that sum to 1,
//! weight vectors that are distributions, and data weights near the preset's balanced 1/3.

#[path = "../examples/tmc_training_2d.rs"]
mod fig6;

use ebm::core::Par;

#[test]
fn quick_fig6_reproduction_is_consistent() {
    let budget = fig6::Budget::quick();
    let r = fig6::run(&budget, 5, Par::Rayon).unwrap();
    assert_eq!(r.chain_sweeps[0], r.chain_sweeps[1]);
    assert_eq!(r.grid, [budget.points, budget.points]);
    assert!(r.path_discrepancy.is_finite());
    for t in r.exact_totals {
        assert!((t - 1.0).abs() < 1e-9, "exact law sums to {t}");
    }
    for w in [r.data, r.tmc_exact, r.tmc_own, r.pcd_exact, r.pcd_chains] {
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{w:?}");
        assert!(w.iter().all(|x| (0.0..=1.0).contains(x)), "{w:?}");
    }
    // Separated only in the plane: on each tethered coordinate alone, two clusters overlap
    // (their mean projections are less than 3 within-cluster standard deviations apart).
    assert!(r.separation.iter().all(|&s| s < 3.0), "{:?}", r.separation);
    // Balanced clusters: binomial standard error sqrt(2/9/300) = 0.027.
    for w in r.data {
        assert!((w - 1.0 / 3.0).abs() < 0.1, "data weights {:?}", r.data);
    }
    // The same seed gives the same result, whatever the thread count.
    let s = fig6::run(&budget, 5, Par::Seq).unwrap();
    assert_eq!(format!("{:?}", r.tmc_exact), format!("{:?}", s.tmc_exact));
    assert_eq!(format!("{:?}", r.pcd_exact), format!("{:?}", s.pcd_exact));
}

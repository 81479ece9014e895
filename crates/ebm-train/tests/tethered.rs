//! The tethered (TMC) negative phase, with one and two order parameters, against the exact
//! model moments of an enumerable RBM, with negative controls (the same chains without the
//! p(m̂) weighting, with p shifted by a grid point, with a 1D weight or a mesh missing a
//! region in 2D), exact resume and thread-count independence, and typed errors for bad
//! configurations.

mod common;

use common::all_configurations;
use ebm_core::{Par, RngStreams, Scalar};
use ebm_models::{Bernoulli, Rbm, exact};
use ebm_samplers::tethered::OrderParameter;
use ebm_train::{Moments, NegativePhase, Tmc, TmcDirection, Trainer, TrainingData};
use nalgebra::DMatrix;

fn pseudo_random(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut g = RngStreams::auxiliary(seed, 3);
    (0..n)
        .map(|_| {
            let (u, v) = (f64::uniform(&mut g).max(1e-300), f64::uniform(&mut g));
            scale * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        })
        .collect()
}

type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

/// A random 10 x 4 binary RBM, weights ~ N(0, 0.8^2), fields ~ N(0, 0.3^2).
fn model() -> Model {
    let (nv, nh) = (10, 4);
    Rbm::new(
        Bernoulli::new(pseudo_random(nv, 12, 0.3)),
        Bernoulli::new(pseudo_random(nh, 13, 0.3)),
        DMatrix::from_vec(nv, nh, pseudo_random(nv * nh, 11, 0.8)),
    )
    .unwrap()
}

fn phase() -> Tmc {
    Tmc {
        alpha: 400.0,
        points: 41,
        replicas: 48,
        sweeps: 10,
        measure: 5,
        border: 0.2,
        direction: TmcDirection::Weights,
        dimensions: 1,
    }
}

/// The moments as one vector: <v>, <E[h|v]>, <v E[h|v]^T>.
fn flat(m: &Moments) -> Vec<f64> {
    let mut x = m.visible_mean.clone();
    x.extend_from_slice(&m.hidden_mean);
    x.extend(m.visible_hidden.iter());
    x
}

/// The largest |z| (mean over `runs` against `exact`, standard error from the spread of the
/// runs, floored at 1e-4) and the largest absolute difference, over all moments.
fn deviation(runs: &[Vec<f64>], exact: &[f64]) -> (f64, f64) {
    let n = runs.len() as f64;
    let (mut zmax, mut dmax) = (0.0f64, 0.0f64);
    for (i, e) in exact.iter().enumerate() {
        let mean = runs.iter().map(|r| r[i]).sum::<f64>() / n;
        let var = runs.iter().map(|r| (r[i] - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let se = (var / n).sqrt().max(1e-4);
        zmax = zmax.max((mean - e).abs() / se);
        dmax = dmax.max((mean - e).abs());
    }
    (zmax, dmax)
}

/// What [`judge`] expects of a set of runs: `Accept(z, d)`, max |z| and max |diff| below the
/// bounds; `Reject(z, d)`, both above them (a negative control).
#[derive(Clone, Copy)]
enum Verdict {
    Accept(f64, f64),
    Reject(f64, f64),
}

/// Prints and checks the deviation of `runs` from `exact` ([`deviation`]).
fn judge(name: &str, runs: &[Vec<f64>], exact: &[f64], verdict: Verdict) {
    let (z, d) = deviation(runs, exact);
    println!("{name}: max |z| = {z:.2}, max |diff| = {d:.4}");
    match verdict {
        Verdict::Accept(zb, db) => assert!(z < zb && d < db, "{name}: z {z}, diff {d}"),
        Verdict::Reject(zb, db) => {
            assert!(z > zb && d > db, "{name} not rejected: z {z}, diff {d}")
        }
    }
}

#[test]
fn tmc_negative_moments_reweighted_by_p_match_exact_moments() {
    let rbm = model();
    let all = all_configurations(rbm.visible());
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let exact = flat(&Moments::of_visible(&rbm, &all, Some(&p), Par::Seq));
    let tmc = phase();
    let mut state =
        <Tmc as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::init(&tmc, &rbm, 1, 5, Par::Rayon)
            .unwrap();
    // The grid spans the projections of every configuration (the batch), plus the border.
    let (rounds, burn) = (40, 3);
    let (mut weighted, mut uniform, mut shifted) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds + burn {
        let info = tmc.sample(&rbm, &mut state, &all, Par::Rayon).unwrap();
        assert!(info.ess.unwrap() > 0.0 && info.ess.unwrap() <= 1.0);
        if r < burn {
            continue;
        }
        let x = &state.chains.chains.visible;
        weighted.push(flat(&Moments::of_visible(
            &rbm,
            x,
            Some(&state.weights),
            Par::Seq,
        )));
        // Negative control: the same chains, every grid point weighted equally.
        uniform.push(flat(&Moments::of_visible(&rbm, x, None, Par::Seq)));
        // Negative control: p(m̂) paired with the next grid point (the reference code's
        // one-point shift).
        let r = tmc.replicas;
        let mut w = vec![0.0; state.weights.len()];
        w[r..].copy_from_slice(&state.weights[..state.weights.len() - r]);
        shifted.push(flat(&Moments::of_visible(&rbm, x, Some(&w), Par::Seq)));
    }
    judge("weighted", &weighted, &exact, Verdict::Accept(5.0, 0.01));
    judge(
        "uniform (control)",
        &uniform,
        &exact,
        Verdict::Reject(20.0, 0.05),
    );
    judge(
        "shifted p (control)",
        &shifted,
        &exact,
        Verdict::Reject(8.0, 0.02),
    );
    // The reconstructed p(m̂) is the exact one (the law of m convolved with the tether).
    let order = state.order.clone().unwrap();
    let rec = state.reconstruction.clone().unwrap();
    let mut m = [0.0];
    let values: Vec<f64> = all
        .column_iter()
        .map(|c| {
            order.project(c.as_slice(), &mut m);
            m[0]
        })
        .collect();
    let log_p: Vec<f64> = p.iter().map(|x| x.ln()).collect();
    let exact_rec =
        ebm_samplers::tethered::profile::Reconstruction::exact(&values, &log_p, &rec.grid, 400.0)
            .unwrap();
    let l1: f64 = exact_rec
        .density()
        .iter()
        .zip(rec.density())
        .map(|(a, b)| (a - b).abs() * (rec.grid[1] - rec.grid[0]))
        .sum();
    println!("L1 distance of the last p(m̂) to the exact: {l1:.4}");
    assert!(l1 < 0.05, "p(m̂) L1 distance {l1}");
}

/// Two tethered order parameters (the leading two singular directions of W) on a 21 x 21
/// grid: the moments weighted by the 2D reconstruction of p(m̂) (L-shaped path, 2D trapezoid)
/// are the exact model moments, and the reconstructed p(m̂) is the exact law of m convolved
/// with the tether. Negative controls: the same chains weighted by the 1D reconstruction of the
/// first order parameter only (p(m̂_1) spread uniformly over m̂_2: the wrong reconstruction
/// weight), and by the 2D p with the upper half of the m̂_2 axis missing from the mesh.
#[test]
fn tmc_2d_negative_moments_match_exact_moments() {
    let rbm = model();
    let all = all_configurations(rbm.visible());
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let exact = flat(&Moments::of_visible(&rbm, &all, Some(&p), Par::Seq));
    let tmc = Tmc {
        points: 21,
        replicas: 16,
        dimensions: 2,
        ..phase()
    };
    let mut state =
        <Tmc as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::init(&tmc, &rbm, 1, 5, Par::Rayon)
            .unwrap();
    let (n, r) = (tmc.points, tmc.replicas);
    let (rounds, burn) = (30, 3);
    let (mut weighted, mut marginal, mut cut) = (Vec::new(), Vec::new(), Vec::new());
    // p(m̂) averaged over the rounds (the grid is that of `all`, the same every round).
    let mut mean_p = vec![0.0; n * n];
    for round in 0..rounds + burn {
        tmc.sample(&rbm, &mut state, &all, Par::Rayon).unwrap();
        if round < burn {
            continue;
        }
        let rec = state.reconstruction_2d.as_ref().unwrap();
        for (m, l) in mean_p.iter_mut().zip(&rec.log_density) {
            *m += l.exp() / rounds as f64;
        }
        let x = &state.chains.chains.visible;
        weighted.push(flat(&Moments::of_visible(
            &rbm,
            x,
            Some(&state.weights),
            Par::Seq,
        )));
        // Control: the first order parameter's marginal only.
        let px = rec.marginal_x();
        let w: Vec<f64> = (0..n * n * r).map(|c| px[(c / r) % n]).collect();
        marginal.push(flat(&Moments::of_visible(&rbm, x, Some(&w), Par::Seq)));
        // Control: grid points with m̂_2 index >= n / 2 missing.
        let w: Vec<f64> = state
            .weights
            .iter()
            .enumerate()
            .map(|(c, w)| if c / r / n < n / 2 { *w } else { 0.0 })
            .collect();
        cut.push(flat(&Moments::of_visible(&rbm, x, Some(&w), Par::Seq)));
    }
    judge("2D weighted", &weighted, &exact, Verdict::Accept(5.0, 0.01));
    let control = Verdict::Reject(20.0, 0.03);
    judge("1D marginal weight (control)", &marginal, &exact, control);
    judge("half mesh (control)", &cut, &exact, control);
    // The reconstructed p(m̂), averaged over the rounds, against the exact law of m convolved
    // with the 2D tether.
    let order = state.order.clone().unwrap();
    assert_eq!(order.k(), 2);
    let rec = state.reconstruction_2d.clone().unwrap();
    assert!(state.reconstruction.is_none());
    let mut m = [0.0; 2];
    let values: Vec<[f64; 2]> = all
        .column_iter()
        .map(|c| {
            order.project(c.as_slice(), &mut m);
            m
        })
        .collect();
    let (gx, gy) = (&rec.grid_x, &rec.grid_y);
    let (hx, hy) = (gx[1] - gx[0], gy[1] - gy[0]);
    let alpha = tmc.alpha;
    let mut l1 = 0.0;
    for (j, y) in gy.iter().enumerate() {
        for (i, x) in gx.iter().enumerate() {
            let exact_p: f64 = values
                .iter()
                .zip(&p)
                .map(|(v, pv)| {
                    let d2 = (v[0] - x).powi(2) + (v[1] - y).powi(2);
                    pv * alpha / (2.0 * std::f64::consts::PI) * (-0.5 * alpha * d2).exp()
                })
                .sum();
            l1 += (exact_p - mean_p[i + n * j]).abs() * hx * hy;
        }
    }
    println!(
        "L1 distance of the mean 2D p(m̂) to the exact: {l1:.4}; last path discrepancy {:.3} nats",
        rec.path_discrepancy(alpha, 1e-3)
    );
    assert!(l1 < 0.1, "2D p(m̂) L1 distance {l1}");
}

fn two_clusters() -> TrainingData<f64> {
    // 60 samples of 10 units: 2/3 near all-ones on the first half, 1/3 on the second half.
    let x = DMatrix::from_fn(10, 60, |i, j| {
        let first = j % 3 != 0;
        let on = (i < 5) == first;
        let flip = (i * 7 + j * 13) % 11 == 0;
        (on != flip) as u8 as f64
    });
    TrainingData::new(&Bernoulli::zeros(10), x).unwrap()
}

#[test]
fn tmc_training_resumes_exactly_and_ignores_thread_count() {
    let data = two_clusters();
    let init = ebm_train::initial_model(
        Bernoulli::zeros(10),
        Bernoulli::zeros(3),
        Some(&data),
        1e-2,
        3,
    )
    .unwrap();
    let tmc = Tmc {
        points: 11,
        replicas: 4,
        ..phase()
    };
    for (centred, dimensions) in [(true, 1), (false, 1), (true, 2)] {
        let tmc = Tmc {
            dimensions,
            points: if dimensions == 2 { 5 } else { tmc.points },
            ..tmc.clone()
        };
        let trainer = Trainer {
            centred,
            ..Trainer::new(tmc.clone(), 20)
        };
        let mut a = trainer.init(init.clone(), &data, 9, Par::Rayon).unwrap();
        trainer.run(&mut a, &data, None, 6, Par::Rayon, ()).unwrap();
        let mut b = trainer.init(init.clone(), &data, 9, Par::Seq).unwrap();
        trainer.run(&mut b, &data, None, 3, Par::Seq, ()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        b.save(&path).unwrap();
        let mut c = ebm_train::TrainState::load(&path).unwrap();
        trainer.run(&mut c, &data, None, 3, Par::Seq, ()).unwrap();
        assert_eq!(
            a.model, c.model,
            "centred = {centred}, dimensions {dimensions}"
        );
        assert_eq!(a.negative, c.negative);
        assert_eq!(
            (
                a.negative.reconstruction.is_some(),
                a.negative.reconstruction_2d.is_some()
            ),
            (dimensions == 1, dimensions == 2)
        );
        assert_ne!(a.model, init);
    }
}

#[test]
fn bad_tmc_configurations_are_typed_errors() {
    let rbm = model();
    let bad = [
        Tmc {
            alpha: 0.0,
            ..phase()
        },
        Tmc {
            points: 1,
            ..phase()
        },
        Tmc {
            replicas: 0,
            ..phase()
        },
        Tmc {
            measure: 11,
            ..phase()
        },
        Tmc {
            measure: 0,
            ..phase()
        },
        Tmc {
            border: f64::NAN,
            ..phase()
        },
        Tmc {
            direction: TmcDirection::Fixed(OrderParameter::uniform(7).unwrap()),
            ..phase()
        },
        Tmc {
            dimensions: 0,
            ..phase()
        },
        Tmc {
            dimensions: 3,
            ..phase()
        },
        // One fixed direction for two order parameters.
        Tmc {
            direction: TmcDirection::Fixed(OrderParameter::uniform(10).unwrap()),
            dimensions: 2,
            ..phase()
        },
    ];
    for t in bad {
        let r =
            <Tmc as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::init(&t, &rbm, 1, 1, Par::Seq);
        assert!(r.is_err(), "{t:?} accepted");
    }
    let t = phase();
    let s = <Tmc as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::init(&t, &rbm, 1, 1, Par::Seq)
        .unwrap();
    let other = Tmc {
        replicas: 3,
        ..phase()
    };
    assert!(
        <Tmc as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::check_state(&other, &s, 1).is_err()
    );
}

/// `sample` returns a typed error, not a panic, when the grid cannot be built from the
/// minibatch (no sample, or the wrong width); the trainer passes it on. (The direction from
/// the weights cannot fail: an `Rbm` holds finite parameters only.) The same state then
/// samples with a valid minibatch.
#[test]
fn sample_errors_are_typed() {
    let rbm = model();
    let t = Tmc {
        points: 5,
        replicas: 2,
        ..phase()
    };
    let mut s =
        <Tmc as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::init(&t, &rbm, 1, 1, Par::Seq)
            .unwrap();
    let batch = all_configurations(rbm.visible());
    for bad in [DMatrix::<f64>::zeros(10, 0), DMatrix::<f64>::zeros(9, 4)] {
        let e = t.sample(&rbm, &mut s, &bad, Par::Seq).unwrap_err();
        assert!(
            matches!(
                e,
                ebm_core::Error::InvalidParameter { .. } | ebm_core::Error::ShapeMismatch { .. }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("minibatch"), "{e}");
    }
    // Control: the same state and phase sample with a valid minibatch.
    let info = t.sample(&rbm, &mut s, &batch, Par::Seq).unwrap();
    assert!(info.ess.unwrap() > 0.0);
}

/// Every update checks the tether against the hidden units' curvature bound along the order
/// parameter: a rank-1 RBM of 20 {0,1} units and one Bernoulli hidden unit with couplings 3
/// along the uniform direction has \\(K = N^2 w^2 / 4 = 900\\) there. TMC at alpha = 500 warns
/// at every update (a tethered law that can split, `TmcWarning::TetherBelowCurvature` with
/// that bound); at alpha = 1200 (the control) it does not.
#[test]
fn tmc_updates_warn_when_the_tether_is_below_the_curvature_bound() {
    use ebm_samplers::tethered::profile::TmcWarning;
    let n = 20;
    let rbm = Rbm::new(
        Bernoulli::new(vec![-1.5; n]),
        Bernoulli::new(vec![-30.0]),
        DMatrix::from_element(n, 1, 3.0),
    )
    .unwrap();
    let batch = DMatrix::from_fn(n, 8, |i, j| ((i + j) % 2) as f64);
    for (alpha, warned) in [(500.0, true), (1200.0, false)] {
        let t = Tmc {
            alpha,
            points: 11,
            replicas: 2,
            sweeps: 4,
            measure: 2,
            direction: TmcDirection::Fixed(OrderParameter::uniform(n).unwrap()),
            ..phase()
        };
        let mut s =
            <Tmc as NegativePhase<Bernoulli<f64>, Bernoulli<f64>>>::init(&t, &rbm, 8, 1, Par::Seq)
                .unwrap();
        assert_eq!(
            t.curvature_warning(&rbm, &s).unwrap(),
            None,
            "before a measurement"
        );
        for _ in 0..2 {
            let info = t.sample(&rbm, &mut s, &batch, Par::Seq).unwrap();
            match info.tethered_warnings.as_slice() {
                [TmcWarning::TetherBelowCurvature { alpha: a, bound }] => {
                    assert!(warned, "alpha {alpha}: warned, K = {bound}");
                    assert_eq!(*a, alpha);
                    assert!((bound - 900.0).abs() < 1e-9, "K = {bound}");
                }
                [] => assert!(!warned, "alpha {alpha}: no warning"),
                other => panic!("alpha {alpha}: {other:?}"),
            }
        }
    }
}

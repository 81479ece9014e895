//! Models saved by the `rbms` PyTorch package: the fixtures in `tests/fixtures/rbms` were
//! trained and saved by the real package (`make_fixture.py`), which also wrote the free
//! energies it computes itself on 20 random configurations at every checkpoint. The loaded
//! models must give the same free energies to round-off; a misread layout must not.

use ebm_core::{Error, Par};
use ebm_io::{load_rbm, load_trajectory, rbms, read_rbm_info, read_trajectory_info};
use ebm_models::{Bernoulli, Layer, Potts, Rbm, Spin};
use nalgebra::DMatrix;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rbms")
        .join(name)
}

/// rbms's record: the configurations (one per row, rbms's encoding) and, per checkpoint,
/// the update, the free energies and the largest hidden input.
struct Reference {
    configurations: Vec<Vec<f64>>,
    checkpoints: Vec<(u64, Vec<f64>, f64)>,
}

fn reference(name: &str) -> Reference {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
    let rows = |x: &Value| -> Vec<f64> {
        x.as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_f64().unwrap())
            .collect()
    };
    Reference {
        configurations: v["configurations"]
            .as_array()
            .unwrap()
            .iter()
            .map(rows)
            .collect(),
        checkpoints: v["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["update"].as_u64().unwrap(),
                    rows(&c["free_energy"]),
                    c["max_hidden_input"].as_f64().unwrap(),
                )
            })
            .collect(),
    }
}

/// The largest |F_ebm - F_rbms| over the configurations (columns of `v`).
fn max_difference<V: Layer<Scalar = f64>>(
    rbm: &Rbm<V, Bernoulli>,
    v: &DMatrix<f64>,
    expected: &[f64],
) -> f64 {
    let mut f = vec![0.0; v.ncols()];
    rbm.free_energy_visible(v, 1.0, &mut f, Par::Seq);
    f.iter()
        .zip(expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

/// Round-off of the free energies of these small models (|F| < 10, a dozen terms in f64).
const ROUND_OFF: f64 = 1e-12;

/// Bernoulli configurations as the columns of a matrix.
fn bernoulli_columns(r: &Reference) -> DMatrix<f64> {
    let n = r.configurations[0].len();
    DMatrix::from_fn(n, r.configurations.len(), |i, k| r.configurations[k][i])
}

/// Categorical configurations (rbms's encoding) one-hot, as the columns of a matrix.
fn one_hot_columns(r: &Reference, q: usize) -> DMatrix<f64> {
    let n = r.configurations[0].len();
    DMatrix::from_fn(n * q, r.configurations.len(), |row, k| {
        f64::from(r.configurations[k][row / q] as usize == row % q)
    })
}

#[test]
fn bernoulli_free_energies_equal_the_ones_rbms_computed_at_every_checkpoint() {
    let r = reference("bernoulli.json");
    let v = bernoulli_columns(&r);
    let path = fixture("bernoulli.h5");
    let trajectory = load_trajectory::<Bernoulli, Bernoulli>(&path).unwrap();
    let updates: Vec<u64> = r.checkpoints.iter().map(|c| c.0).collect();
    assert_eq!(trajectory.updates(), updates.as_slice());
    for ((update, expected, max_input), model) in r.checkpoints.iter().zip(trajectory.models()) {
        // rbms replaces softplus(x) by x above 10; the fixture stays below.
        assert!(
            *max_input < 10.0,
            "update {update}: hidden input {max_input}"
        );
        let d = max_difference(model, &v, expected);
        assert!(d < ROUND_OFF, "update {update}: |dF| = {d:e}");
    }
    // The last checkpoint has learnt something: its free energies are not the first one's.
    let (first, last) = (&r.checkpoints[0].1, &r.checkpoints.last().unwrap().1);
    assert!(first.iter().zip(last).any(|(a, b)| (a - b).abs() > 0.1));

    // As a model file: the last checkpoint.
    let rbm: Rbm<Bernoulli, Bernoulli> = load_rbm(&path).unwrap();
    assert_eq!(&rbm, trajectory.models().last().unwrap());
    let info = read_rbm_info(&path).unwrap();
    assert_eq!(info.format, rbms::RBMS_FORMAT);
    assert_eq!(
        (info.visible.as_str(), info.hidden.as_str()),
        ("bernoulli", "bernoulli")
    );
    assert_eq!((info.visible_units, info.hidden_units), (12, 5));
    assert_eq!(info.dtype, "f64");
    assert_eq!(info.extra["rbms_model_type"], "BBRBM");
    assert_eq!(info.extra["rbms_update"], "300");
    let tinfo = read_trajectory_info(&path).unwrap();
    assert_eq!(tinfo.updates, updates);
    // Any checkpoint by its update.
    let at17: Rbm<Bernoulli, Bernoulli> = rbms::load_checkpoint(&path, 17).unwrap();
    assert_eq!(&at17, &trajectory.models()[2]);
    let e = rbms::load_checkpoint::<Bernoulli, Bernoulli>(&path, 18).unwrap_err();
    assert!(e.to_string().contains("[1, 4, 17, 72, 300]"), "{e}");
}

#[test]
fn potts_free_energies_equal_the_ones_rbms_computed_at_every_checkpoint() {
    let r = reference("potts.json");
    let q = 3;
    let v = one_hot_columns(&r, q);
    let path = fixture("potts.h5");
    let trajectory = load_trajectory::<Potts, Bernoulli>(&path).unwrap();
    assert_eq!(trajectory.len(), r.checkpoints.len());
    for ((update, expected, max_input), model) in r.checkpoints.iter().zip(trajectory.models()) {
        assert!(
            *max_input < 10.0,
            "update {update}: hidden input {max_input}"
        );
        assert_eq!((model.visible().q(), model.visible().n_units()), (q, 6));
        let d = max_difference(model, &v, expected);
        assert!(d < ROUND_OFF, "update {update}: |dF| = {d:e}");
    }
    let info = read_rbm_info(&path).unwrap();
    assert_eq!((info.visible.as_str(), info.visible_units), ("potts", 6));
    assert_eq!(info.extra["rbms_model_type"], "PBRBM");
}

/// Negative controls: the plausible misreadings of the layout give other free energies, far
/// above round-off, so the tests above can tell them apart.
#[test]
fn misread_layouts_fail_the_free_energy_comparison() {
    // Bernoulli: the weight matrix read column-major (transposed storage).
    let r = reference("bernoulli.json");
    let expected = &r.checkpoints.last().unwrap().1;
    let rbm: Rbm<Bernoulli, Bernoulli> = load_rbm(&fixture("bernoulli.h5")).unwrap();
    let w = rbm.weights();
    let row_major: Vec<f64> = (0..w.nrows())
        .flat_map(|i| w.row(i).iter().copied().collect::<Vec<_>>())
        .collect();
    let transposed = Rbm::new(
        rbm.visible().clone(),
        rbm.hidden().clone(),
        DMatrix::from_column_slice(w.nrows(), w.ncols(), &row_major),
    )
    .unwrap();
    let v = bernoulli_columns(&r);
    let d = max_difference(&transposed, &v, expected);
    assert!(d > 0.1, "transposed weights: |dF| = {d:e}");
    // The visible bias taken with the opposite sign (an energy instead of a field).
    let flipped = Rbm::new(
        Bernoulli::new(rbm.visible().fields.iter().map(|a| -a).collect()),
        rbm.hidden().clone(),
        rbm.weights().clone(),
    )
    .unwrap();
    let d = max_difference(&flipped, &v, expected);
    assert!(d > 0.1, "sign-flipped visible bias: |dF| = {d:e}");

    // Potts: the one-hot slots read state-major (row a * N_v + i instead of i * q + a).
    let r = reference("potts.json");
    let expected = &r.checkpoints.last().unwrap().1;
    let rbm: Rbm<Potts, Bernoulli> = load_rbm(&fixture("potts.h5")).unwrap();
    let (n, q) = (rbm.visible().n_units(), rbm.visible().q());
    let state_major = |i: usize| (i % q) * n + i / q;
    let fields = rbm.visible().fields();
    let misread = Rbm::new(
        Potts::new(q, (0..n * q).map(|k| fields[state_major(k)]).collect()).unwrap(),
        rbm.hidden().clone(),
        DMatrix::from_fn(n * q, rbm.weights().ncols(), |k, mu| {
            rbm.weights()[(state_major(k), mu)]
        }),
    )
    .unwrap();
    let d = max_difference(&misread, &one_hot_columns(&r, q), expected);
    assert!(d > 0.1, "state-major Potts layout: |dF| = {d:e}");
}

#[test]
fn float32_files_load_exactly_widened() {
    // rbms's default dtype: the last Bernoulli checkpoint saved in f32 by rbms's save_model.
    let path = fixture("bernoulli-f32.h5");
    assert_eq!(read_rbm_info(&path).unwrap().dtype, "f32");
    let f32_model: Rbm<Bernoulli, Bernoulli> = load_rbm(&path).unwrap();
    let f64_model: Rbm<Bernoulli, Bernoulli> = load_rbm(&fixture("bernoulli.h5")).unwrap();
    for (a, b) in f32_model.weights().iter().zip(f64_model.weights().iter()) {
        assert_eq!(*a, f64::from(*b as f32));
    }
    // And to an f32 model.
    let small: Rbm<Bernoulli<f32>, Bernoulli<f32>> = load_rbm(&path).unwrap();
    assert_eq!(small.weights()[(3, 2)] as f64, f32_model.weights()[(3, 2)]);
}

fn format_error(e: Error, needle: &str) {
    match &e {
        Error::Format { reason, .. } | Error::NonFinite { what: reason, .. } => {
            assert!(e.to_string().contains(needle), "{e}");
            assert!(!reason.is_empty());
        }
        other => panic!("expected a format error containing {needle:?}, got {other:?}"),
    }
}

#[test]
fn malformed_and_foreign_hdf5_files_are_typed_errors() {
    // An HDF5 data file (rbms's own dataset format), not a model.
    format_error(
        load_rbm::<Bernoulli, Bernoulli>(&fixture("foreign.h5")).unwrap_err(),
        "without a \"model_type\" dataset",
    );
    format_error(
        read_rbm_info(&fixture("foreign.h5")).unwrap_err(),
        "not a model saved by the `rbms` package",
    );
    format_error(
        read_rbm_info(&fixture("unknown-model.h5")).unwrap_err(),
        "rbms model type \"GRBM\" is not supported",
    );
    format_error(
        load_rbm::<Bernoulli, Bernoulli>(&fixture("bad-shape.h5")).unwrap_err(),
        "weight_matrix [5, 12]; expected vbias [N_v], hbias [N_h], weight_matrix [N_v, N_h]",
    );
    format_error(
        load_rbm::<Bernoulli, Bernoulli>(&fixture("nan.h5")).unwrap_err(),
        "update_1/params/vbias",
    );
    // Other unit types than the file's.
    format_error(
        load_rbm::<Spin, Spin>(&fixture("bernoulli.h5")).unwrap_err(),
        "file holds an rbms BBRBM (bernoulli-bernoulli RBM), requested spin-spin",
    );
    format_error(
        load_trajectory::<Bernoulli, Bernoulli>(&fixture("potts.h5")).unwrap_err(),
        "requested bernoulli-bernoulli",
    );

    // Broken files: the signature then zeros, and truncations of a real file. Errors, never a
    // panic.
    let dir = tempfile::tempdir().unwrap();
    let zeros = dir.path().join("zeros.h5");
    let mut bytes = rbms::HDF5_SIGNATURE.to_vec();
    bytes.extend_from_slice(&[0u8; 300]);
    std::fs::write(&zeros, &bytes).unwrap();
    format_error(
        read_rbm_info(&zeros).unwrap_err(),
        "cannot read the HDF5 file",
    );
    // A truncated file is an error, or (cut in bytes the model does not use) the same model.
    let real = std::fs::read(fixture("bernoulli.h5")).unwrap();
    let full: Rbm<Bernoulli, Bernoulli> = load_rbm(&fixture("bernoulli.h5")).unwrap();
    let cut = dir.path().join("cut.h5");
    let mut refused = 0;
    for len in (8..real.len()).step_by(1999).chain([real.len() / 2]) {
        std::fs::write(&cut, &real[..len]).unwrap();
        match load_rbm::<Bernoulli, Bernoulli>(&cut) {
            Ok(rbm) => assert_eq!(rbm, full, "cut at {len}"),
            Err(e) => {
                assert!(matches!(e, Error::Format { .. }), "cut at {len}: {e:?}");
                refused += 1;
            }
        }
        let _ = load_trajectory::<Bernoulli, Bernoulli>(&cut);
    }
    assert!(refused > 30, "{refused} truncations refused");
}

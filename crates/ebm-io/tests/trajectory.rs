//! Trajectory files: exact round trips of every checkpoint and its update, the documented
//! layout, and typed errors for bad trajectories and bad files.

use ebm_core::Error;
use ebm_io::{
    RESERVED_TRAJECTORY_KEYS, TRAJECTORY_FORMAT, Trajectory, load_trajectory, read_trajectory_info,
    save_trajectory, save_trajectory_with_metadata,
};
use ebm_models::{Bernoulli, Gaussian, Layer, Potts, Rbm, Spin};
use nalgebra::DMatrix;
use std::collections::BTreeMap;
use std::path::Path;

fn bs(k: usize) -> Rbm<Bernoulli<f32>, Spin<f32>> {
    let t = k as f32;
    Rbm::new(
        Bernoulli::new(vec![0.1 * t, -0.25, 1e-7]),
        Spin::new(vec![-0.5 + t, -0.0]),
        DMatrix::from_fn(3, 2, |i, j| 0.1 * i as f32 - 0.37 * j as f32 + t / 3.0),
    )
    .unwrap()
}

fn trajectory() -> Trajectory<Bernoulli<f32>, Spin<f32>> {
    Trajectory::from_checkpoints([(0, bs(0)), (7, bs(1)), (150, bs(2))]).unwrap()
}

fn expect_format<T: std::fmt::Debug>(r: Result<T, Error>, needles: &[&str]) {
    match r {
        Err(Error::Format {
            location, reason, ..
        }) => {
            let text = format!("{location}: {reason}");
            for n in needles {
                assert!(text.contains(n), "'{text}' lacks '{n}'");
            }
        }
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn trajectories_round_trip_bit_exactly_with_their_updates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.safetensors");
    let t = trajectory();
    let mut extra = BTreeMap::new();
    extra.insert("run".to_string(), "seed 7".to_string());
    save_trajectory_with_metadata(&t, &path, &extra).unwrap();
    let back: Trajectory<Bernoulli<f32>, Spin<f32>> = load_trajectory(&path).unwrap();
    assert_eq!(back, t);
    let bits = |m: &Rbm<Bernoulli<f32>, Spin<f32>>| -> Vec<u32> {
        m.weights()
            .iter()
            .chain(&m.visible().fields)
            .chain(&m.hidden().fields)
            .map(|x| x.to_bits())
            .collect()
    };
    for (a, b) in back.models().iter().zip(t.models()) {
        assert_eq!(bits(a), bits(b));
    }
    let info = read_trajectory_info(&path).unwrap();
    assert_eq!(info.updates, vec![0, 7, 150]);
    assert_eq!(
        (info.visible.as_str(), info.hidden.as_str()),
        ("bernoulli", "spin")
    );
    assert_eq!((info.visible_units, info.hidden_units), (3, 2));
    assert_eq!(info.dtype, "f32");
    assert_eq!(info.extra.get("run").map(String::as_str), Some("seed 7"));
    assert_eq!(info.tensors.get("checkpoint.2.weights"), Some(&vec![3, 2]));
    assert_eq!(
        info.tensors.get("checkpoint.0.visible.bias"),
        Some(&vec![3])
    );
    assert_eq!(info.tensors.len(), 9);
    // f32 files load as f64 models exactly.
    let wide: Trajectory<Bernoulli<f64>, Spin<f64>> = load_trajectory(&path).unwrap();
    assert_eq!(
        wide.models()[1].weights()[(2, 1)],
        t.models()[1].weights()[(2, 1)] as f64
    );
    // Other layer kinds.
    let potts = |k: f64| {
        Rbm::new(
            Potts::new(3, vec![0.1, k, -0.3, 0.0, 0.2, 0.4]).unwrap(),
            Gaussian::new(vec![1.0, 2.0 + k], vec![k, -0.5]).unwrap(),
            DMatrix::from_fn(6, 2, |i, j| k + i as f64 - j as f64),
        )
        .unwrap()
    };
    let pg = Trajectory::from_checkpoints([(3, potts(0.5)), (4, potts(1.5))]).unwrap();
    save_trajectory(&pg, &path).unwrap();
    assert_eq!(
        load_trajectory::<Potts<f64>, Gaussian<f64>>(&path).unwrap(),
        pg
    );
    // An empty trajectory is a valid file too.
    save_trajectory(&Trajectory::<Bernoulli<f32>, Spin<f32>>::new(), &path).unwrap();
    assert!(
        load_trajectory::<Bernoulli<f32>, Spin<f32>>(&path)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn invalid_trajectories_are_rejected() {
    let mut t = trajectory();
    assert!(matches!(
        t.push(150, bs(3)),
        Err(Error::InvalidParameter { .. })
    ));
    let other = Rbm::new(Bernoulli::zeros(4), Spin::zeros(2), DMatrix::zeros(4, 2)).unwrap();
    assert!(matches!(
        t.push(200, other),
        Err(Error::ShapeMismatch { .. })
    ));
    assert_eq!(t.len(), 3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.safetensors");
    let mut extra = BTreeMap::new();
    extra.insert(RESERVED_TRAJECTORY_KEYS[9].to_string(), "1".to_string());
    assert!(save_trajectory_with_metadata(&t, &path, &extra).is_err());
    assert!(!path.exists());
}

/// Rewrites the JSON header of a safetensors file with `edit`, keeping the data section, and
/// recomputes its checksum (as a deliberate edit would).
fn edit_header(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    edit(&mut header);
    let mut json = serde_json::to_vec(&header).unwrap();
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    out.extend_from_slice(&bytes[8 + n..]);
    // Re-signed, so that the loader reaches the edited content (without, any edit is caught
    // by the checksum first, tests/output.rs).
    std::fs::write(path, ebm_io::sign_safetensors(&out).unwrap()).unwrap();
}

#[test]
fn bad_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.safetensors");
    let load = |p: &Path| load_trajectory::<Bernoulli<f32>, Spin<f32>>(p);
    save_trajectory(&trajectory(), &path).unwrap();
    expect_format(
        load_trajectory::<Spin<f32>, Spin<f32>>(&path),
        &["metadata", "bernoulli-spin", "spin-spin"],
    );
    // A model file is not a trajectory file, and vice versa.
    let model = dir.path().join("m.safetensors");
    ebm_io::save_rbm(&bs(0), &model).unwrap();
    expect_format(load(&model), &["metadata", TRAJECTORY_FORMAT]);
    expect_format(
        ebm_io::load_rbm::<Bernoulli<f32>, Spin<f32>>(&path),
        &["ebm-rbm"],
    );
    // Metadata that disagrees with itself.
    let set = |key: &'static str, value: &'static str| {
        save_trajectory(&trajectory(), &path).unwrap();
        edit_header(&path, |h| {
            h["__metadata__"][key] = serde_json::Value::String(value.into());
        });
    };
    set("updates", "0,7");
    expect_format(load(&path), &["2 updates listed for 3 checkpoints"]);
    set("updates", "0,7,7");
    expect_format(load(&path), &["increase strictly"]);
    set("updates", "0,x,9");
    expect_format(read_trajectory_info(&path), &["\"x\""]);
    set("checkpoints", "2");
    expect_format(load(&path), &["updates listed"]);
    // A tensor of no checkpoint, and a missing tensor.
    save_trajectory(&trajectory(), &path).unwrap();
    edit_header(&path, |h| {
        let t = h["checkpoint.2.weights"].clone();
        h.as_object_mut().unwrap().remove("checkpoint.2.weights");
        h["checkpoint.9.weights"] = t;
    });
    expect_format(load(&path), &["checkpoint.9.weights", "belongs to none"]);
    save_trajectory(&trajectory(), &path).unwrap();
    edit_header(&path, |h| {
        let t = h["checkpoint.1.hidden.bias"].clone();
        h.as_object_mut()
            .unwrap()
            .remove("checkpoint.1.hidden.bias");
        h["checkpoint.1.hidden.scale"] = t;
    });
    expect_format(load(&path), &["checkpoint.1.hidden"]);
    // Truncated and garbage files.
    save_trajectory(&trajectory(), &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    expect_format(load(&path), &["truncated"]);
    std::fs::write(&path, b"not a file").unwrap();
    expect_format(load(&path), &["byte 0"]);
    assert!(matches!(
        load(&dir.path().join("missing")),
        Err(Error::Io { .. })
    ));
    let _ = Bernoulli::<f32>::zeros(1).width();
}

//! Model files: exact round trips, and a typed error (never a panic) for every kind of bad file.

use ebm_core::{Error, Par};
use ebm_io::{
    RBM_FORMAT_VERSION, load_rbm, read_rbm_info, save_rbm, save_rbm_with_metadata, write_atomically,
};
use ebm_models::{Bernoulli, Potts, Rbm, Spin, exact};
use nalgebra::DMatrix;
use proptest::prelude::*;
use safetensors::tensor::{Dtype, TensorView};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

fn model<F: ebm_core::Scalar>() -> Rbm<Bernoulli<F>, Spin<F>> {
    let f = F::from_f64;
    Rbm::new(
        Bernoulli::new(vec![f(0.1), f(-0.25), f(1e-7), f(3.5)]),
        Spin::new(vec![f(-0.5), f(0.75), f(0.0)]),
        DMatrix::from_fn(4, 3, |i, j| f(0.1 * i as f64 - 0.37 * j as f64 + 1.0 / 3.0)),
    )
    .unwrap()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn round_trips_are_bit_exact_for_every_binary_combination_and_dtype() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    let a = model::<f64>();
    save_rbm(&a, &p).unwrap();
    let b: Rbm<Bernoulli<f64>, Spin<f64>> = load_rbm(&p).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        exact::log_partition_by_visible(&a, 1.0, Par::Seq).unwrap(),
        exact::log_partition_by_visible(&b, 1.0, Par::Seq).unwrap()
    );
    let a32 = model::<f32>();
    save_rbm(&a32, &p).unwrap();
    let b32: Rbm<Bernoulli<f32>, Spin<f32>> = load_rbm(&p).unwrap();
    assert_eq!(a32, b32);
    // An f32 file loads as f64 exactly (widening), and reports its dtype.
    let widened: Rbm<Bernoulli<f64>, Spin<f64>> = load_rbm(&p).unwrap();
    assert_eq!(widened.weights()[(1, 2)], a32.weights()[(1, 2)] as f64);
    assert_eq!(read_rbm_info(&p).unwrap().dtype, "f32");

    let ss = a.reparametrise::<Spin<f64>, Spin<f64>>().rbm;
    save_rbm(&ss, &p).unwrap();
    assert_eq!(load_rbm::<Spin<f64>, Spin<f64>>(&p).unwrap(), ss);
    let bb = a.reparametrise::<Bernoulli<f64>, Bernoulli<f64>>().rbm;
    save_rbm(&bb, &p).unwrap();
    assert_eq!(load_rbm::<Bernoulli<f64>, Bernoulli<f64>>(&p).unwrap(), bb);
    let potts = Rbm::new(
        Potts::new(3, (0..6).map(|k| k as f64 * 0.1).collect()).unwrap(),
        Bernoulli::new(vec![0.2, -0.2]),
        DMatrix::from_fn(6, 2, |i, j| (i + 2 * j) as f64 * 0.05),
    )
    .unwrap();
    save_rbm(&potts, &p).unwrap();
    assert_eq!(load_rbm::<Potts<f64>, Bernoulli<f64>>(&p).unwrap(), potts);
    let gauss = ebm_models::CurieWeiss::new(6, 1.3, 0.1)
        .unwrap()
        .to_rbm()
        .unwrap();
    save_rbm(&gauss, &p).unwrap();
    assert_eq!(
        load_rbm::<Spin<f64>, ebm_models::Gaussian<f64>>(&p).unwrap(),
        gauss
    );
    let drelu = Rbm::new(
        Spin::<f32>::new(vec![0.1, 0.2]),
        ebm_models::DReLU::new(vec![1.0f32], vec![2.0], vec![0.5], vec![-0.5]).unwrap(),
        DMatrix::from_row_slice(2, 1, &[0.3f32, -0.7]),
    )
    .unwrap();
    save_rbm(&drelu, &p).unwrap();
    assert_eq!(
        load_rbm::<Spin<f32>, ebm_models::DReLU<f32>>(&p).unwrap(),
        drelu
    );
    // A non-positive precision in a file is rejected by the layer, naming the side.
    assert!(load_rbm::<Spin<f32>, ebm_models::ReLU<f32>>(&p).is_err());
}

#[test]
fn metadata_is_readable_without_loading_and_extra_entries_survive() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    let mut extra = BTreeMap::new();
    extra.insert("description".to_string(), "test model".to_string());
    save_rbm_with_metadata(&model::<f64>(), &p, &extra).unwrap();
    let info = read_rbm_info(&p).unwrap();
    assert_eq!(
        (info.visible.as_str(), info.hidden.as_str()),
        ("bernoulli", "spin")
    );
    assert_eq!((info.visible_units, info.hidden_units), (4, 3));
    assert_eq!(info.format_version, RBM_FORMAT_VERSION);
    assert_eq!(info.extra, extra);
    let mut reserved = BTreeMap::new();
    reserved.insert("visible".to_string(), "spin".to_string());
    assert!(matches!(
        save_rbm_with_metadata(&model::<f64>(), &p, &reserved),
        Err(Error::InvalidParameter { .. })
    ));
}

fn expect_format(result: Result<Rbm<Bernoulli<f64>, Spin<f64>>, Error>, needle: &str) {
    match result {
        Err(Error::Format {
            reason,
            location,
            path,
        }) => {
            let text = format!("{location}: {reason}");
            assert!(text.contains(needle), "message '{text}' lacks '{needle}'");
            assert!(path.to_string_lossy().contains("safetensors"));
        }
        other => panic!("expected a format error containing '{needle}', got {other:?}"),
    }
}

#[test]
fn unreadable_empty_truncated_and_garbage_files_are_rejected() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    assert!(matches!(
        load_rbm::<Bernoulli<f64>, Spin<f64>>(&p),
        Err(Error::Io { .. })
    ));
    std::fs::write(&p, b"").unwrap();
    expect_format(load_rbm(&p), "header");
    std::fs::write(&p, b"this is not a model file at all").unwrap();
    expect_format(load_rbm(&p), "not a valid safetensors");
    // Header length far beyond the file.
    let mut huge = u64::MAX.to_le_bytes().to_vec();
    huge.extend_from_slice(b"{}");
    std::fs::write(&p, &huge).unwrap();
    expect_format(load_rbm(&p), "not a valid safetensors");
    // Truncations at every kind of offset.
    save_rbm(&model::<f64>(), &p).unwrap();
    let full = std::fs::read(&p).unwrap();
    for cut in [1, 7, 8, 9, 40, full.len() / 2, full.len() - 1] {
        std::fs::write(&p, &full[..cut]).unwrap();
        expect_format(load_rbm(&p), "not a valid safetensors");
    }
}

/// Writes a safetensors file with the given f64 tensors and metadata.
fn write_raw(path: &Path, tensors: &[(&str, Vec<usize>, Vec<f64>)], meta: &[(&str, &str)]) {
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(n, s, v)| {
            (
                n.to_string(),
                s.clone(),
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            )
        })
        .collect();
    let views: Vec<(String, TensorView<'_>)> = bytes
        .iter()
        .map(|(n, s, b)| {
            (
                n.clone(),
                TensorView::new(Dtype::F64, s.clone(), b).unwrap(),
            )
        })
        .collect();
    let meta: HashMap<String, String> = meta
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    std::fs::write(
        path,
        safetensors::tensor::serialize(views, Some(meta)).unwrap(),
    )
    .unwrap();
}

const META: [(&str, &str); 7] = [
    ("format", "ebm-rbm"),
    ("format_version", "1"),
    ("visible", "bernoulli"),
    ("hidden", "spin"),
    ("visible_units", "2"),
    ("hidden_units", "1"),
    ("dtype", "f64"),
];

fn good_tensors() -> Vec<(&'static str, Vec<usize>, Vec<f64>)> {
    vec![
        ("weights", vec![2, 1], vec![0.5, -0.5]),
        ("visible.bias", vec![2], vec![0.1, 0.2]),
        ("hidden.bias", vec![1], vec![0.3]),
    ]
}

fn with_meta(key: &str, value: &str) -> Vec<(&'static str, String)> {
    META.iter()
        .map(|(k, v)| {
            (
                *k,
                if *k == key {
                    value.to_string()
                } else {
                    v.to_string()
                },
            )
        })
        .collect()
}

#[test]
fn wrong_metadata_is_rejected_with_what_was_found() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    write_raw(&p, &good_tensors(), &META);
    assert!(
        load_rbm::<Bernoulli<f64>, Spin<f64>>(&p).is_ok(),
        "the hand-written file is valid"
    );
    for (key, value, needle) in [
        ("format", "pytorch", "format is \"pytorch\""),
        ("format_version", "2", "format_version 2 is not supported"),
        ("format_version", "x", "not a number"),
        ("dtype", "bf16", "dtype"),
        ("visible_units", "-3", "visible_units"),
    ] {
        let m = with_meta(key, value);
        let m: Vec<(&str, &str)> = m.iter().map(|(k, v)| (*k, v.as_str())).collect();
        write_raw(&p, &good_tensors(), &m);
        expect_format(load_rbm(&p), needle);
    }
    write_raw(&p, &good_tensors(), &[]);
    expect_format(load_rbm(&p), "missing key");
    write_raw(&p, &good_tensors(), &META);
    match load_rbm::<Spin<f64>, Spin<f64>>(&p) {
        Err(Error::Format { reason, .. }) => {
            assert!(
                reason.contains("file holds a bernoulli-spin RBM, requested spin-spin"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn wrong_tensors_are_rejected_by_name() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    let mut t = good_tensors();
    t.remove(0);
    write_raw(&p, &t, &META);
    expect_format(load_rbm(&p), "tensor \"weights\": missing");
    let mut t = good_tensors();
    t.remove(1);
    write_raw(&p, &t, &META);
    expect_format(load_rbm(&p), "bias");
    let mut t = good_tensors();
    t[0] = ("weights", vec![1, 2], vec![0.5, -0.5]);
    write_raw(&p, &t, &META);
    expect_format(load_rbm(&p), "expected [2, 1]");
    let mut t = good_tensors();
    t[2] = ("hidden.bias", vec![2], vec![0.3, 0.1]);
    write_raw(&p, &t, &META);
    expect_format(load_rbm(&p), "hidden");
    for (k, name) in [(0usize, "weights"), (1, "visible.bias")] {
        let mut t = good_tensors();
        t[k].2[1] = f64::NAN;
        write_raw(&p, &t, &META);
        match load_rbm::<Bernoulli<f64>, Spin<f64>>(&p) {
            Err(Error::NonFinite { what, index, .. }) => {
                assert!(
                    what.contains(name) && what.contains("m.safetensors"),
                    "{what}"
                );
                assert_eq!(index, 1);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn failed_writes_leave_the_old_file_and_no_temporary_file() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    save_rbm(&model::<f64>(), &p).unwrap();
    let before = std::fs::read(&p).unwrap();
    let err = write_atomically(&p, |w| {
        w.write_all(b"partial")?;
        Err(std::io::Error::other("disk full"))
    })
    .unwrap_err();
    assert!(matches!(err, Error::Io { .. }) && err.to_string().contains("disk full"));
    assert_eq!(std::fs::read(&p).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "temporary files left behind: {names:?}");
    // A missing directory is an I/O error naming the file.
    let e = save_rbm(
        &model::<f64>(),
        &dir.path().join("no/such/dir/m.safetensors"),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Io { .. }) && e.to_string().contains("m.safetensors"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let dir = tmp();
        let p = dir.path().join("m.safetensors");
        std::fs::write(&p, &bytes).unwrap();
        let _ = load_rbm::<Bernoulli<f64>, Spin<f64>>(&p);
        let _ = read_rbm_info(&p);
    }

    #[test]
    fn corrupted_valid_files_never_panic(pos in 0usize..4096, byte in any::<u8>()) {
        let dir = tmp();
        let p = dir.path().join("m.safetensors");
        save_rbm(&model::<f64>(), &p).unwrap();
        let mut bytes = std::fs::read(&p).unwrap();
        let k = pos % bytes.len();
        bytes[k] = byte;
        std::fs::write(&p, &bytes).unwrap();
        let _ = load_rbm::<Bernoulli<f64>, Spin<f64>>(&p);
    }
}

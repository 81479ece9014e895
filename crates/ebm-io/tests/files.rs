//! Model files: exact round trips, the on-disk layout, atomic writes, and a typed error (never
//! a panic) for every kind of bad file.

use ebm_core::{Error, Par, Scalar};
use ebm_io::{
    CONVENTION, RBM_FORMAT_VERSION, load_rbm, read_rbm_info, save_rbm, save_rbm_with_metadata,
    write_atomically,
};
use ebm_models::{
    Bernoulli, BinaryLayer, DReLU, DiscreteLayer, Gaussian, Layer, Potts, Rbm, ReLU, Spin, exact,
};
use nalgebra::DMatrix;
use proptest::prelude::*;
use safetensors::SafeTensors;
use safetensors::tensor::{Dtype, TensorView};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A 4x3 RBM with awkward values (thirds, a tiny field, negative zero).
fn model<V, H>() -> Rbm<V, H>
where
    V: BinaryLayer,
    H: BinaryLayer<Scalar = V::Scalar>,
{
    let f = <V::Scalar as Scalar>::from_f64;
    Rbm::new(
        V::with_fields(vec![f(0.1), f(-0.25), f(1e-7), f(3.5)]),
        H::with_fields(vec![f(-0.5), f(0.75), f(-0.0)]),
        DMatrix::from_fn(4, 3, |i, j| f(0.1 * i as f64 - 0.37 * j as f64 + 1.0 / 3.0)),
    )
    .unwrap()
}

fn bs() -> Rbm<Bernoulli<f64>, Spin<f64>> {
    model()
}

fn bits<F: Scalar>(values: &[F]) -> Vec<u64> {
    values.iter().map(|v| v.as_f64().to_bits()).collect()
}

/// Every parameter of `rbm` as bit patterns: weights (column-major), then layer tensors.
fn parameter_bits<V: Layer, H: Layer<Scalar = V::Scalar>>(rbm: &Rbm<V, H>) -> Vec<u64> {
    let mut out = bits(rbm.weights().as_slice());
    for t in rbm
        .visible()
        .tensors()
        .into_iter()
        .chain(rbm.hidden().tensors())
    {
        out.extend(bits(&t.2));
    }
    out
}

/// Saves and loads `rbm`, asserting a bit-exact round trip and identical free energies.
fn assert_round_trip<V, H>(rbm: &Rbm<V, H>, path: &Path)
where
    V: DiscreteLayer + PartialEq,
    H: Layer<Scalar = V::Scalar> + PartialEq,
{
    save_rbm(rbm, path).unwrap();
    let back: Rbm<V, H> = load_rbm(path).unwrap();
    assert_eq!(&back, rbm);
    assert_eq!(parameter_bits(&back), parameter_bits(rbm));
    let f = |m: &Rbm<V, H>| bits(&exact::visible_free_energies(m, 1.0, Par::Seq).unwrap());
    assert_eq!(f(&back), f(rbm));
    let log_z = |m: &Rbm<V, H>| {
        exact::log_partition_by_visible(m, 1.0, Par::Seq)
            .unwrap()
            .to_bits()
    };
    assert_eq!(log_z(&back), log_z(rbm));
    let info = read_rbm_info(path).unwrap();
    assert_eq!(info.dtype, V::Scalar::NAME);
    assert_eq!(
        (info.visible.as_str(), info.hidden.as_str()),
        (V::KIND, H::KIND)
    );
}

#[test]
fn binary_rbms_round_trip_bit_exactly_in_f32_and_f64() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    assert_round_trip(&model::<Bernoulli<f64>, Bernoulli<f64>>(), &p);
    assert_round_trip(&model::<Spin<f64>, Spin<f64>>(), &p);
    assert_round_trip(&model::<Bernoulli<f64>, Spin<f64>>(), &p);
    assert_round_trip(&model::<Spin<f64>, Bernoulli<f64>>(), &p);
    assert_round_trip(&model::<Bernoulli<f32>, Bernoulli<f32>>(), &p);
    assert_round_trip(&model::<Spin<f32>, Spin<f32>>(), &p);
    assert_round_trip(&model::<Bernoulli<f32>, Spin<f32>>(), &p);
    assert_round_trip(&model::<Spin<f32>, Bernoulli<f32>>(), &p);
    // Negative zero survives (PartialEq alone would not notice).
    let back: Rbm<Spin<f32>, Bernoulli<f32>> = load_rbm(&p).unwrap();
    assert!(back.hidden().fields()[2].is_sign_negative());
}

#[test]
fn other_layer_kinds_round_trip() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    let potts = Rbm::new(
        Potts::new(3, (0..6).map(|k| k as f64 * 0.1).collect()).unwrap(),
        Bernoulli::new(vec![0.2, -0.2]),
        DMatrix::from_fn(6, 2, |i, j| (i + 2 * j) as f64 * 0.05),
    )
    .unwrap();
    assert_round_trip(&potts, &p);
    assert_eq!(read_rbm_info(&p).unwrap().tensors["weights"], vec![6, 2]);

    let gauss = ebm_models::CurieWeiss::new(6, 1.3, 0.1)
        .unwrap()
        .to_rbm()
        .unwrap();
    save_rbm(&gauss, &p).unwrap();
    let back: Rbm<Spin<f64>, Gaussian<f64>> = load_rbm(&p).unwrap();
    assert_eq!(back, gauss);
    assert_eq!(parameter_bits(&back), parameter_bits(&gauss));

    let drelu = Rbm::new(
        Spin::<f32>::new(vec![0.1, 0.2]),
        DReLU::new(vec![1.0f32], vec![2.0], vec![0.5], vec![-0.5]).unwrap(),
        DMatrix::from_row_slice(2, 1, &[0.3f32, -0.7]),
    )
    .unwrap();
    save_rbm(&drelu, &p).unwrap();
    assert_eq!(load_rbm::<Spin<f32>, DReLU<f32>>(&p).unwrap(), drelu);
    // Continuous hidden layers have different kinds even when their tensors look alike.
    assert!(load_rbm::<Spin<f32>, ReLU<f32>>(&p).is_err());
}

#[test]
fn weights_are_stored_row_major_with_the_documented_metadata() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    let rbm = bs();
    save_rbm(&rbm, &p).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut names = st.names();
    names.sort();
    assert_eq!(names, ["hidden.bias", "visible.bias", "weights"]);
    let w = st.tensor("weights").unwrap();
    assert_eq!((w.dtype(), w.shape()), (Dtype::F64, &[4usize, 3][..]));
    let flat: Vec<f64> = w
        .data()
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for i in 0..4 {
        for j in 0..3 {
            assert_eq!(flat[i * 3 + j], rbm.weights()[(i, j)], "W[{i}][{j}]");
        }
    }
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let meta = header.metadata().as_ref().unwrap();
    for (k, v) in [
        ("format", "ebm-rbm"),
        ("format_version", "2"),
        ("visible", "bernoulli"),
        ("hidden", "spin"),
        ("visible_units", "4"),
        ("hidden_units", "3"),
        ("dtype", "f64"),
        ("convention", CONVENTION),
    ] {
        assert_eq!(meta.get(k).map(String::as_str), Some(v), "metadata key {k}");
    }
    // And the checksum of the content (16 hexadecimal digits).
    assert!(
        meta["checksum"].len() == 16 && meta["checksum"].chars().all(|c| c.is_ascii_hexdigit())
    );
    assert_eq!(meta.len(), 9);
    // f32 models are written as F32 tensors.
    save_rbm(&model::<Bernoulli<f32>, Spin<f32>>(), &p).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    assert!(st.iter().all(|(_, t)| t.dtype() == Dtype::F32));
}

#[test]
fn files_convert_between_f32_and_f64_explicitly() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    // f32 -> f64 is exact widening.
    let a32 = model::<Bernoulli<f32>, Spin<f32>>();
    save_rbm(&a32, &p).unwrap();
    let wide: Rbm<Bernoulli<f64>, Spin<f64>> = load_rbm(&p).unwrap();
    assert_eq!(
        wide.weights().as_slice(),
        a32.weights().map(|w| w as f64).as_slice()
    );
    assert_eq!(wide.visible().fields()[2], 1e-7f32 as f64);
    // f64 -> f32 rounds to nearest, which reproduces the f32 model built from the same values.
    save_rbm(&bs(), &p).unwrap();
    let narrow: Rbm<Bernoulli<f32>, Spin<f32>> = load_rbm(&p).unwrap();
    assert_eq!(narrow, a32);
    // A value beyond the f32 range is an error, not an infinity.
    write_raw(
        &p,
        &[
            ("weights", vec![2, 1], vec![1e300, 0.0]),
            ("visible.bias", vec![2], vec![0.1, 0.2]),
            ("hidden.bias", vec![1], vec![0.3]),
        ],
        &META,
    );
    assert!(load_rbm::<Bernoulli<f64>, Spin<f64>>(&p).is_ok());
    match load_rbm::<Bernoulli<f32>, Spin<f32>>(&p) {
        Err(Error::InvalidParameter { name, reason }) => {
            assert!(
                name.contains("weights") && reason.contains("overflows f32"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn metadata_is_readable_without_loading_and_extra_entries_survive() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    let mut extra = BTreeMap::new();
    extra.insert("description".to_string(), "test model".to_string());
    extra.insert("step".to_string(), "1200".to_string());
    save_rbm_with_metadata(&bs(), &p, &extra).unwrap();
    let info = read_rbm_info(&p).unwrap();
    assert_eq!(info.kinds(), "bernoulli-spin");
    assert_eq!((info.visible_units, info.hidden_units), (4, 3));
    assert_eq!(info.format_version, RBM_FORMAT_VERSION);
    assert_eq!(info.dtype, "f64");
    assert_eq!(info.convention, CONVENTION);
    assert_eq!(info.extra, extra);
    let shapes: Vec<(&str, &[usize])> = info
        .tensors
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    assert_eq!(
        shapes,
        [
            ("hidden.bias", &[3usize][..]),
            ("visible.bias", &[4][..]),
            ("weights", &[4, 3][..])
        ]
    );
    // The info serialises (for a CLI's JSON output).
    let json = serde_json::to_string(&info).unwrap();
    assert!(json.contains("\"visible\":\"bernoulli\""), "{json}");
    // The extra entries do not disturb loading.
    assert_eq!(load_rbm::<Bernoulli<f64>, Spin<f64>>(&p).unwrap(), bs());
    // Reserved keys are refused, and nothing is written.
    let q = dir.path().join("other.safetensors");
    let mut reserved = BTreeMap::new();
    reserved.insert("visible".to_string(), "spin".to_string());
    assert!(matches!(
        save_rbm_with_metadata(&bs(), &q, &reserved),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(!q.exists());
}

#[test]
fn the_same_model_always_gives_the_same_bytes() {
    // safetensors writes its metadata from a HashMap, whose order differs between maps: the
    // header is rewritten in sorted order, so every save of one model is byte-identical.
    let dir = tmp();
    let mut extra = BTreeMap::new();
    for k in 0..12 {
        extra.insert(format!("key{k}"), format!("value {k}"));
    }
    let first = dir.path().join("0.safetensors");
    save_rbm_with_metadata(&bs(), &first, &extra).unwrap();
    let bytes = std::fs::read(&first).unwrap();
    for i in 1..8 {
        let p = dir.path().join(format!("{i}.safetensors"));
        save_rbm_with_metadata(&bs(), &p, &extra).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "save {i} differs");
    }
    // The header is sorted JSON padded to 8 bytes, and the file still loads.
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(n % 8, 0);
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    let h = header.find("\"hidden.bias\"").unwrap();
    let v = header.find("\"visible.bias\"").unwrap();
    let w = header.find("\"weights\"").unwrap();
    assert!(
        header.starts_with("{\"__metadata__\":") && h < v && v < w,
        "{header}"
    );
    let mut names: Vec<String> = (0..12).map(|k| format!("\"key{k}\"")).collect();
    names.sort();
    let positions: Vec<usize> = names
        .iter()
        .map(|k| header.find(k.as_str()).unwrap())
        .collect();
    assert!(positions.windows(2).all(|p| p[0] < p[1]), "{header}");
    assert_eq!(load_rbm::<Bernoulli<f64>, Spin<f64>>(&first).unwrap(), bs());
}

/// Asserts a format error whose "location: reason" contains every needle.
fn expect_format<T: std::fmt::Debug>(result: Result<T, Error>, needles: &[&str]) {
    match result {
        Err(Error::Format {
            reason,
            location,
            path,
        }) => {
            let text = format!("{location}: {reason}");
            for needle in needles {
                assert!(text.contains(needle), "message '{text}' lacks '{needle}'");
            }
            assert!(path.to_string_lossy().contains(".safetensors"));
        }
        other => panic!("expected a format error containing {needles:?}, got {other:?}"),
    }
}

fn load_bs(p: &Path) -> ebm_core::Result<Rbm<Bernoulli<f64>, Spin<f64>>> {
    load_rbm(p)
}

#[test]
fn unreadable_empty_garbage_and_truncated_files_are_rejected_with_offsets() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    for e in [load_bs(&p).unwrap_err(), read_rbm_info(&p).unwrap_err()] {
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("m.safetensors"), "{e}");
    }
    std::fs::write(&p, b"").unwrap();
    expect_format(
        load_bs(&p),
        &["byte 0", "shorter than the 8-byte header length"],
    );
    expect_format(read_rbm_info(&p), &["byte 0"]);
    std::fs::write(&p, b"this is not a model file at all").unwrap();
    expect_format(load_bs(&p), &["byte 0", "not a valid safetensors"]);
    // Header length beyond the safetensors limit.
    let mut huge = u64::MAX.to_le_bytes().to_vec();
    huge.extend_from_slice(b"{}");
    std::fs::write(&p, &huge).unwrap();
    expect_format(load_bs(&p), &["byte 0", "exceeds the limit"]);
    expect_format(read_rbm_info(&p), &["exceeds the limit"]);
    // Header length within the limit but beyond the file.
    let mut long = 1000u64.to_le_bytes().to_vec();
    long.extend_from_slice(b"{}");
    std::fs::write(&p, &long).unwrap();
    expect_format(
        load_bs(&p),
        &["byte 0", "runs past the end of the 10-byte file"],
    );
    expect_format(read_rbm_info(&p), &["runs past the end"]);
    // A header that is not JSON, and one that is not UTF-8: the offset points into the header.
    let mut bad_json = 4u64.to_le_bytes().to_vec();
    bad_json.extend_from_slice(b"{x}}");
    std::fs::write(&p, &bad_json).unwrap();
    expect_format(load_bs(&p), &["byte 9", "bad JSON header"]);
    let mut not_utf8 = 4u64.to_le_bytes().to_vec();
    not_utf8.extend_from_slice(b"{\"\xff}");
    std::fs::write(&p, &not_utf8).unwrap();
    expect_format(load_bs(&p), &["byte 10", "not UTF-8"]);

    // Truncation anywhere: in the prefix, in the header, in the data section.
    save_rbm(&bs(), &p).unwrap();
    let full = std::fs::read(&p).unwrap();
    let header_end = 8 + u64::from_le_bytes(full[..8].try_into().unwrap()) as usize;
    for cut in [
        1,
        7,
        8,
        9,
        40,
        header_end - 1,
        header_end,
        header_end + 5,
        full.len() - 1,
    ] {
        std::fs::write(&p, &full[..cut]).unwrap();
        let needle = if cut < 8 {
            "shorter than the 8-byte header length"
        } else if cut < header_end {
            "runs past the end"
        } else {
            "(truncated?)"
        };
        expect_format(load_bs(&p), &[needle]);
        expect_format(read_rbm_info(&p), &[needle]);
    }
    std::fs::write(&p, &full[..header_end + 5]).unwrap();
    expect_format(load_bs(&p), &[&format!("byte {header_end} (tensor data)")]);
    // Every truncation is an error (never a panic, never a partial model).
    for cut in 0..full.len() {
        std::fs::write(&p, &full[..cut]).unwrap();
        assert!(load_bs(&p).is_err(), "cut at {cut}");
    }
    // Trailing bytes are rejected too.
    let mut longer = full.clone();
    longer.extend_from_slice(b"junk");
    std::fs::write(&p, &longer).unwrap();
    expect_format(load_bs(&p), &["tensor data", "the file has"]);
}

/// Writes a safetensors file with the given f64 tensors and metadata.
fn write_raw(path: &Path, tensors: &[(&str, Vec<usize>, Vec<f64>)], meta: &[(&str, &str)]) {
    let raw: Vec<_> = tensors
        .iter()
        .map(|(n, s, v)| {
            let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            (n.to_string(), s.clone(), b, Dtype::F64)
        })
        .collect();
    write_bytes(path, &raw, meta);
}

fn write_bytes(
    path: &Path,
    tensors: &[(String, Vec<usize>, Vec<u8>, Dtype)],
    meta: &[(&str, &str)],
) {
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, s, b, d)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    let meta: HashMap<String, String> = meta
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let meta = (!meta.is_empty()).then_some(meta);
    std::fs::write(path, safetensors::tensor::serialize(views, meta).unwrap()).unwrap();
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
        .map(|(k, v)| (*k, if *k == key { value } else { v }.to_string()))
        .collect()
}

#[test]
fn wrong_metadata_is_rejected_with_what_was_found() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    write_raw(&p, &good_tensors(), &META);
    assert!(load_bs(&p).is_ok(), "the hand-written file is valid");
    for (key, value, needle) in [
        (
            "format",
            "pytorch",
            "format is \"pytorch\", expected \"ebm-rbm\"",
        ),
        ("format_version", "3", "format_version 3 is not supported"),
        ("format_version", "0", "format_version 0 is not supported"),
        ("format_version", "x", "not a number"),
        ("dtype", "bf16", "dtype \"bf16\""),
        ("visible_units", "-3", "visible_units \"-3\""),
    ] {
        let m = with_meta(key, value);
        let m: Vec<(&str, &str)> = m.iter().map(|(k, v)| (*k, v.as_str())).collect();
        write_raw(&p, &good_tensors(), &m);
        expect_format(load_bs(&p), &["metadata", needle]);
        expect_format(read_rbm_info(&p), &[needle]);
    }
    let m = with_meta("format_version", "3");
    let m: Vec<(&str, &str)> = m.iter().map(|(k, v)| (*k, v.as_str())).collect();
    write_raw(&p, &good_tensors(), &m);
    expect_format(load_bs(&p), &["written by a newer ebm"]);
    // Version 1 files without a checksum (`META`, written before checksums) load; a version-2
    // file must have one.
    let m = with_meta("format_version", "2");
    let m: Vec<(&str, &str)> = m.iter().map(|(k, v)| (*k, v.as_str())).collect();
    write_raw(&p, &good_tensors(), &m);
    expect_format(load_bs(&p), &["checksum", "format version 2"]);
    // A plain safetensors file (no metadata) and one missing a key.
    write_raw(&p, &good_tensors(), &[]);
    expect_format(load_bs(&p), &["no __metadata__"]);
    write_raw(&p, &good_tensors(), &META[..6]);
    expect_format(load_bs(&p), &["missing key \"dtype\""]);
    // Unit kinds other than the requested ones: both are named.
    write_raw(&p, &good_tensors(), &META);
    expect_format(
        load_rbm::<Spin<f64>, Spin<f64>>(&p),
        &["file holds a bernoulli-spin RBM, requested spin-spin"],
    );
    expect_format(
        load_rbm::<Spin<f64>, Bernoulli<f64>>(&p),
        &["file holds a bernoulli-spin RBM, requested spin-bernoulli"],
    );
}

#[test]
fn wrong_tensors_are_rejected_by_name() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    let write = |t: &[(&str, Vec<usize>, Vec<f64>)]| write_raw(&p, t, &META);

    let mut t = good_tensors();
    t.remove(0);
    write(&t);
    expect_format(load_bs(&p), &["tensor \"weights\": missing"]);
    let mut t = good_tensors();
    t.remove(1);
    write(&t);
    expect_format(load_bs(&p), &["visible layer", "bias"]);
    let mut t = good_tensors();
    t[0] = ("weights", vec![1, 2], vec![0.5, -0.5]);
    write(&t);
    expect_format(
        load_bs(&p),
        &["tensor \"weights\"", "shape [1, 2], expected [2, 1]"],
    );
    let mut t = good_tensors();
    t[2] = ("hidden.bias", vec![2], vec![0.3, 0.1]);
    write(&t);
    expect_format(load_bs(&p), &["hidden layer", "bias", "[1]", "[2]"]);
    // Metadata and tensors disagree on the number of units.
    let m = with_meta("visible_units", "3");
    let m: Vec<(&str, &str)> = m.iter().map(|(k, v)| (*k, v.as_str())).collect();
    write_raw(&p, &good_tensors(), &m);
    expect_format(load_bs(&p), &["visible layer", "[3]"]);
    // A tensor the model does not have.
    let mut t = good_tensors();
    t.push(("visible.scale", vec![2], vec![1.0, 1.0]));
    write(&t);
    expect_format(load_bs(&p), &["tensor \"visible.scale\"", "unexpected"]);
    let mut t = good_tensors();
    t.push(("momentum", vec![1], vec![1.0]));
    write(&t);
    expect_format(load_bs(&p), &["tensor \"momentum\"", "unexpected"]);
    // A tensor whose dtype disagrees with the metadata, or is not a float.
    let mut raw: Vec<_> = good_tensors()
        .into_iter()
        .map(|(n, s, v)| {
            let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            (n.to_string(), s, b, Dtype::F64)
        })
        .collect();
    raw[2] = (
        "hidden.bias".into(),
        vec![1],
        0.3f32.to_le_bytes().to_vec(),
        Dtype::F32,
    );
    write_bytes(&p, &raw, &META);
    expect_format(
        load_bs(&p),
        &["tensor \"hidden.bias\"", "F32 disagrees", "\"f64\""],
    );
    raw[2] = ("hidden.bias".into(), vec![1], vec![0; 8], Dtype::I64);
    write_bytes(&p, &raw, &META);
    expect_format(load_bs(&p), &["tensor \"hidden.bias\"", "I64"]);

    // Non-finite values, named by tensor and flat row-major index.
    for (k, name, value) in [
        (0usize, "weights", f64::NAN),
        (0, "weights", f64::NEG_INFINITY),
        (1, "visible.bias", f64::NAN),
        (2, "hidden.bias", f64::INFINITY),
    ] {
        let mut t = good_tensors();
        let index = t[k].2.len() - 1;
        t[k].2[index] = value;
        write(&t);
        match load_bs(&p) {
            Err(Error::NonFinite {
                what,
                index: i,
                value: v,
            }) => {
                assert!(
                    what.contains(name) && what.contains("m.safetensors"),
                    "{what}"
                );
                assert_eq!(i, index);
                assert!(v.is_nan() == value.is_nan() && (v.is_nan() || v == value));
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // Parameters that a layer rejects (a non-positive precision) name the side.
    write_raw(
        &p,
        &[
            ("weights", vec![1, 1], vec![0.5]),
            ("visible.bias", vec![1], vec![0.0]),
            ("hidden.gamma", vec![1], vec![0.0]),
            ("hidden.theta", vec![1], vec![0.0]),
        ],
        &[
            ("format", "ebm-rbm"),
            ("format_version", "1"),
            ("visible", "spin"),
            ("hidden", "gaussian"),
            ("visible_units", "1"),
            ("hidden_units", "1"),
            ("dtype", "f64"),
        ],
    );
    expect_format(
        load_rbm::<Spin<f64>, Gaussian<f64>>(&p),
        &["hidden layer", "gamma", "> 0"],
    );
}

fn dir_entries(dir: &Path) -> Vec<std::ffi::OsString> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    names
}

#[test]
fn failed_writes_leave_the_old_file_and_no_temporary_file() {
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    save_rbm(&bs(), &p).unwrap();
    let before = std::fs::read(&p).unwrap();
    let err = write_atomically(&p, |w| {
        w.write_all(&[0u8; 100_000])?; // more than the buffer: really reaches the temp file
        Err(std::io::Error::other("disk full"))
    })
    .unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("disk full") && err.to_string().contains("m.safetensors"));
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert_eq!(dir_entries(dir.path()), ["m.safetensors"]);
    assert_eq!(load_bs(&p).unwrap(), bs());

    // A failed first write leaves nothing at all.
    let q = dir.path().join("new.safetensors");
    assert!(write_atomically(&q, |_| Err(std::io::Error::other("no"))).is_err());
    assert!(!q.exists());
    assert_eq!(dir_entries(dir.path()), ["m.safetensors"]);

    // A successful save replaces the content and leaves no temporary file.
    save_rbm(&model::<Spin<f64>, Spin<f64>>(), &p).unwrap();
    assert_eq!(dir_entries(dir.path()), ["m.safetensors"]);
    assert_eq!(read_rbm_info(&p).unwrap().kinds(), "spin-spin");

    // A missing directory is an I/O error naming the file.
    let e = save_rbm(&bs(), &dir.path().join("no/such/dir/m.safetensors")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }) && e.to_string().contains("m.safetensors"));
}

#[cfg(unix)]
#[test]
fn atomic_writes_give_ordinary_permissions_and_keep_existing_ones() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp();
    let p = dir.path().join("m.safetensors");
    save_rbm(&bs(), &p).unwrap();
    // The mode of an ordinary new file (0o666 minus the umask), not the 0o600 of a temporary
    // file.
    let plain = dir.path().join("plain");
    std::fs::write(&plain, b"x").unwrap();
    let mode = |q: &Path| std::fs::metadata(q).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&p), mode(&plain));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    save_rbm(&bs(), &p).unwrap();
    assert_eq!(mode(&p), 0o640);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let dir = tmp();
        let p = dir.path().join("m.safetensors");
        std::fs::write(&p, &bytes).unwrap();
        prop_assert!(load_bs(&p).is_err());
        prop_assert!(read_rbm_info(&p).is_err());
    }

    #[test]
    fn arbitrary_headers_never_panic(header in "[{}\\[\\]\":,0-9a-zA-Z_. ]{0,200}", tail in 0usize..64) {
        // A well-formed length prefix followed by JSON-like text and some data bytes.
        let dir = tmp();
        let p = dir.path().join("m.safetensors");
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend(std::iter::repeat_n(0x3fu8, tail));
        std::fs::write(&p, &bytes).unwrap();
        let _ = load_bs(&p);
        let _ = read_rbm_info(&p);
    }

    #[test]
    fn corrupted_valid_files_never_panic(pos in 0usize..4096, byte in any::<u8>()) {
        let dir = tmp();
        let p = dir.path().join("m.safetensors");
        save_rbm(&bs(), &p).unwrap();
        let mut bytes = std::fs::read(&p).unwrap();
        let k = pos % bytes.len();
        bytes[k] = byte;
        std::fs::write(&p, &bytes).unwrap();
        let _ = load_bs(&p);
        let _ = load_rbm::<Bernoulli<f32>, Spin<f32>>(&p);
        let _ = read_rbm_info(&p);
    }

    #[test]
    fn any_finite_parameters_round_trip_bit_exactly(
        w in prop::collection::vec(any::<f64>().prop_filter("finite", |x| x.is_finite()), 6),
        a in prop::collection::vec(any::<f64>().prop_filter("finite", |x| x.is_finite()), 3),
        b in prop::collection::vec(any::<f64>().prop_filter("finite", |x| x.is_finite()), 2),
    ) {
        let dir = tmp();
        let p = dir.path().join("m.safetensors");
        let rbm = Rbm::new(Spin::new(a), Bernoulli::new(b), DMatrix::from_vec(3, 2, w)).unwrap();
        save_rbm(&rbm, &p).unwrap();
        let back: Rbm<Spin<f64>, Bernoulli<f64>> = load_rbm(&p).unwrap();
        prop_assert_eq!(parameter_bits(&back), parameter_bits(&rbm));
    }
}

//! Stack files: a saved stack loads back identical (Bernoulli bottom, spin units above, f32
//! and f64); corrupted or inconsistent manifests are typed errors naming the file, and a
//! failed save leaves no manifest behind.

use ebm_core::Error;
use ebm_io::{load_stack, read_stack_manifest, save_stack, stack_rbm_paths};
use ebm_models::{Bernoulli, Rbm, Spin, Stack};
use nalgebra::DMatrix;
use std::path::Path;

fn rbm<V, H>(v: V, h: H, nv: usize, nh: usize) -> Rbm<V, H>
where
    V: ebm_models::Layer<Scalar = f64>,
    H: ebm_models::Layer<Scalar = f64>,
{
    let w = DMatrix::from_fn(nv, nh, |i, j| 0.1 * (i as f64) - 0.3 * (j as f64) + 0.05);
    Rbm::new(v, h, w).unwrap()
}

fn stack() -> Stack<Bernoulli, Spin> {
    let bottom = rbm(
        Bernoulli::new(vec![0.2, -0.1, 0.4, 0.0]),
        Spin::new(vec![0.3, -0.2, 0.1]),
        4,
        3,
    );
    let r2 = rbm(
        Spin::new(vec![0.1, 0.0, -0.5]),
        Spin::new(vec![0.7, 0.2]),
        3,
        2,
    );
    let r3 = rbm(Spin::new(vec![-0.3, 0.9]), Spin::new(vec![0.4]), 2, 1);
    Stack::new(bottom, vec![r2, r3]).unwrap()
}

fn format_error_at(e: &Error, file: &Path, needle: &str) {
    match e {
        Error::Format { path, .. } => assert_eq!(path, file, "{e}"),
        other => panic!("expected a format error, got {other}"),
    }
    assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
}

#[test]
fn a_saved_stack_loads_back_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    let s = stack();
    let files = save_stack(&s, &path).unwrap();
    assert_eq!(files, stack_rbm_paths(&path, 3).unwrap());
    assert_eq!(files[2], dir.path().join("s.rbm3.safetensors"));
    assert_eq!(read_stack_manifest(&path).unwrap(), files);
    assert_eq!(load_stack::<Bernoulli, Spin>(&path).unwrap(), s);
    // Saved again over itself (atomic replacement), and read in f32.
    save_stack(&s, &path).unwrap();
    let f32s = load_stack::<Bernoulli<f32>, Spin<f32>>(&path).unwrap();
    assert_eq!(f32s.len(), 3);
    // Other unit types than the files hold: the RBM file's error, naming it.
    let e = load_stack::<Spin, Spin>(&path).unwrap_err();
    assert!(e.to_string().contains("s.rbm1.safetensors"), "{e}");
    // A manifest path that is not .json.
    assert!(matches!(
        save_stack(&s, &dir.path().join("s.safetensors")),
        Err(Error::InvalidParameter { .. })
    ));
}

#[test]
fn corrupted_manifests_are_typed_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    save_stack(&stack(), &path).unwrap();
    let good = std::fs::read_to_string(&path).unwrap();
    // A saved manifest carries a checksum: an edit (the RBMs swapped) without recomputing it
    // is refused, and so is a current-version manifest whose checksum key is gone.
    let swapped = good
        .replacen("s.rbm1", "s.rbmX", 1)
        .replacen("s.rbm2", "s.rbm1", 1);
    let swapped = swapped.replacen("s.rbmX", "s.rbm2", 1);
    assert_ne!(swapped, good);
    let unsigned = good.replacen("\"checksum\"", "\"checksun\"", 1);
    let cases: [(&str, &str); 9] = [
        (&swapped, "checksum"),
        (&unsigned, "no \"checksum\" field"),
        (&good[..good.len() / 2], "line"),
        ("[1, 2]", "not a stack manifest"),
        (
            r#"{"format": "ebm-rbm", "format_version": 1, "rbms": ["a"]}"#,
            "expected \"ebm-stack\"",
        ),
        (
            r#"{"format": "ebm-stack", "format_version": "two", "rbms": ["a"]}"#,
            "not a stack manifest",
        ),
        (
            r#"{"format": "ebm-stack", "format_version": 1, "rbms": []}"#,
            "lists no RBM",
        ),
        (
            r#"{"format": "ebm-stack", "format_version": 1, "rbms": ["../s.rbm1.safetensors"]}"#,
            "not a plain file name",
        ),
        (
            r#"{"format": "ebm-stack", "format_version": 1, "rbms": ["s.rbm1.safetensors"], "x": 1}"#,
            "unknown field",
        ),
    ];
    for (text, needle) in cases {
        std::fs::write(&path, text).unwrap();
        format_error_at(
            &load_stack::<Bernoulli, Spin>(&path).unwrap_err(),
            &path,
            needle,
        );
    }
    // A signed manifest of a version from the future.
    ebm_io::output::write_json_checked(
        &path,
        &serde_json::json!({"format": "ebm-stack", "format_version": 3, "rbms": ["a"]}),
    )
    .unwrap();
    format_error_at(
        &load_stack::<Bernoulli, Spin>(&path).unwrap_err(),
        &path,
        "version 3, expected \"ebm-stack\" version 1 to 2",
    );
    // Binary bytes (e.g. an RBM file given as the stack).
    std::fs::write(&path, [0x93u8, b'N', b'U', b'M', 0xff, 0x00]).unwrap();
    format_error_at(
        &load_stack::<Bernoulli, Spin>(&path).unwrap_err(),
        &path,
        "not a stack manifest: not valid JSON",
    );
    // RBMs that do not nest: RBM 3 directly above RBM 1.
    std::fs::write(
        &path,
        r#"{"format": "ebm-stack", "format_version": 1,
            "rbms": ["s.rbm1.safetensors", "s.rbm3.safetensors"]}"#,
    )
    .unwrap();
    format_error_at(
        &load_stack::<Bernoulli, Spin>(&path).unwrap_err(),
        &path,
        "visible layer of stacked RBM 2",
    );
    // A listed file that is missing: an I/O error naming it.
    std::fs::remove_file(dir.path().join("s.rbm3.safetensors")).unwrap();
    std::fs::write(&path, &good).unwrap();
    let e = load_stack::<Bernoulli, Spin>(&path).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path.ends_with("s.rbm3.safetensors")),
        "{e}"
    );
    // No manifest at all.
    let e = load_stack::<Bernoulli, Spin>(&dir.path().join("none.json")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

#[test]
fn a_failed_save_writes_no_manifest() {
    let dir = tempfile::tempdir().unwrap();
    // The first RBM file's name is taken by a directory: its save fails before the manifest.
    std::fs::create_dir(dir.path().join("s.rbm1.safetensors")).unwrap();
    let path = dir.path().join("s.json");
    assert!(save_stack(&stack(), &path).is_err());
    assert!(!path.exists());
}

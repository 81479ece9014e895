//! Integrity of written files: checksums of model and trajectory tensors and of JSON
//! documents (a flipped byte fails to load), the output lock, and committed output sets.

use ebm_core::Error;
use ebm_io::output::{
    ChecksumsSince, OutputLock, StagedOutputs, committed_sets_writing, read_json_checked,
    write_json_checked, written_by_another_run,
};
use ebm_io::{Trajectory, load_rbm, load_trajectory, save_rbm, save_trajectory, sign_safetensors};
use ebm_models::{Bernoulli, Rbm, Spin};
use nalgebra::DMatrix;
use std::path::Path;

fn model(shift: f64) -> Rbm<Bernoulli<f64>, Spin<f64>> {
    Rbm::new(
        Bernoulli::new(vec![0.1 + shift, -0.25, 3.5]),
        Spin::new(vec![-0.5, 0.75]),
        DMatrix::from_fn(3, 2, |i, j| 0.1 * i as f64 - 0.37 * j as f64 + shift),
    )
    .unwrap()
}

/// Flips 4 bytes at `at` (from the end when negative) of the file.
fn flip(path: &Path, at: isize) {
    let mut bytes = std::fs::read(path).unwrap();
    let k = if at < 0 {
        (bytes.len() as isize + at) as usize
    } else {
        at as usize
    };
    for b in &mut bytes[k..k + 4] {
        *b ^= 0x01;
    }
    std::fs::write(path, bytes).unwrap();
}

fn assert_checksum_error<T: std::fmt::Debug>(r: Result<T, Error>) {
    match r {
        Err(Error::Format { location, .. }) => assert_eq!(location, "checksum"),
        other => panic!("expected a checksum error, got {other:?}"),
    }
}

/// The JSON documents of these tests record their version at `/v`; checksums are required
/// from version 2 on.
const SINCE: ChecksumsSince = ChecksumsSince {
    version_at: "/v",
    version: 2,
};

/// The header of a safetensors file as JSON, and the offset of its data section.
fn header_of(bytes: &[u8]) -> (serde_json::Value, usize) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    (serde_json::from_slice(&bytes[8..8 + n]).unwrap(), 8 + n)
}

/// A safetensors file with `header` and the data section of `bytes` (from `data`).
fn with_header(header: &serde_json::Value, bytes: &[u8], data: usize) -> Vec<u8> {
    let mut json = serde_json::to_vec(header).unwrap();
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    out.extend_from_slice(&bytes[data..]);
    out
}

#[test]
fn flipped_bytes_in_model_and_trajectory_tensors_fail_to_load() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.safetensors");
    save_rbm(&model(0.0), &p).unwrap();
    // Control: the intact file loads.
    let _: Rbm<Bernoulli<f64>, Spin<f64>> = load_rbm(&p).unwrap();
    // The low bits of a weight: still a finite, valid model, caught only by the checksum.
    flip(&p, -8);
    assert_checksum_error(load_rbm::<Bernoulli<f64>, Spin<f64>>(&p));

    let t = Trajectory::from_checkpoints([(0, model(0.0)), (5, model(0.5))]).unwrap();
    let q = dir.path().join("t.safetensors");
    save_trajectory(&t, &q).unwrap();
    let _: Trajectory<Bernoulli<f64>, Spin<f64>> = load_trajectory(&q).unwrap();
    flip(&q, -16);
    assert_checksum_error(load_trajectory::<Bernoulli<f64>, Spin<f64>>(&q));
}

#[test]
fn edited_metadata_fails_the_checksum_and_old_files_without_one_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.safetensors");
    save_rbm(&model(0.0), &p).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    // The convention string is free text nobody else checks.
    let at = bytes.windows(9).position(|w| w == b"row-major").unwrap();
    bytes[at..at + 3].copy_from_slice(b"col");
    std::fs::write(&p, &bytes).unwrap();
    assert_checksum_error(load_rbm::<Bernoulli<f64>, Spin<f64>>(&p));

    // A file of format version 1 written without a checksum (before checksums existed) is
    // read as before; the same file as version 2 (the current one) is refused.
    save_rbm(&model(0.0), &p).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let (mut header, data) = header_of(&bytes);
    let meta = header["__metadata__"].as_object_mut().unwrap();
    meta.remove("checksum");
    assert_eq!(meta["format_version"], "2");
    std::fs::write(&p, with_header(&header, &bytes, data)).unwrap();
    assert_checksum_error(load_rbm::<Bernoulli<f64>, Spin<f64>>(&p));
    header["__metadata__"]["format_version"] = "1".into();
    std::fs::write(&p, with_header(&header, &bytes, data)).unwrap();
    let back: Rbm<Bernoulli<f64>, Spin<f64>> = load_rbm(&p).unwrap();
    assert_eq!(back, model(0.0));
    assert_eq!(ebm_io::read_rbm_info(&p).unwrap().format_version, 1);
}

#[test]
fn json_documents_carry_a_verified_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    let doc = serde_json::json!({"a": [1.5, 0.1, 3], "b": {"c": "x", "d": 1e-300}});
    write_json_checked(&p, &doc).unwrap();
    assert_eq!(read_json_checked(&p, SINCE).unwrap(), doc);
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replace("1.5", "2.5")).unwrap();
    assert_checksum_error(read_json_checked(&p, SINCE));
    // Without a checksum, a document of a version before checksums (or without a version)
    // is read as is.
    std::fs::write(&p, doc.to_string()).unwrap();
    assert_eq!(read_json_checked(&p, SINCE).unwrap(), doc);
    let old = serde_json::json!({"v": 1, "a": 2});
    std::fs::write(&p, old.to_string()).unwrap();
    assert_eq!(read_json_checked(&p, SINCE).unwrap(), old);
    // Not JSON: a format error with the line.
    std::fs::write(&p, "{\n nope").unwrap();
    assert!(matches!(
        read_json_checked(&p, SINCE),
        Err(Error::Format { .. })
    ));
}

#[test]
fn a_misspelled_or_removed_checksum_key_is_refused_in_current_versions() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    let doc = serde_json::json!({"v": 2, "rate": 0.1});
    write_json_checked(&p, &doc).unwrap();
    // "checksum" renamed by one letter, and the content edited: refused, naming the field.
    let text = std::fs::read_to_string(&p).unwrap();
    let renamed = text.replace("\"checksum\"", "\"checksun\"");
    assert_ne!(renamed, text);
    std::fs::write(&p, renamed.replace("0.1", "0.9")).unwrap();
    assert_checksum_error(read_json_checked(&p, SINCE));
    let e = read_json_checked(&p, SINCE).unwrap_err().to_string();
    assert!(e.contains("s.json") && e.contains("\"checksum\""), "{e}");
    // Removed: the same.
    std::fs::write(&p, doc.to_string()).unwrap();
    assert_checksum_error(read_json_checked(&p, SINCE));

    // Model and trajectory files: the metadata key renamed, then a weight edited.
    let m = dir.path().join("m.safetensors");
    save_rbm(&model(0.0), &m).unwrap();
    let t = dir.path().join("t.safetensors");
    let traj = Trajectory::from_checkpoints([(0, model(0.0)), (5, model(0.5))]).unwrap();
    save_trajectory(&traj, &t).unwrap();
    for p in [&m, &t] {
        let bytes = std::fs::read(p).unwrap();
        let (mut header, data) = header_of(&bytes);
        let meta = header["__metadata__"].as_object_mut().unwrap();
        let sum = meta.remove("checksum").unwrap();
        meta.insert("checksun".into(), sum);
        let mut edited = with_header(&header, &bytes, data);
        let n = edited.len();
        edited[n - 3] ^= 0x01;
        std::fs::write(p, edited).unwrap();
    }
    assert_checksum_error(load_rbm::<Bernoulli<f64>, Spin<f64>>(&m));
    let e = load_rbm::<Bernoulli<f64>, Spin<f64>>(&m)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("m.safetensors") && e.contains("\"checksum\""),
        "{e}"
    );
    assert_checksum_error(load_trajectory::<Bernoulli<f64>, Spin<f64>>(&t));
}

#[test]
fn signing_an_edited_file_makes_it_load() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.safetensors");
    save_rbm(&model(0.0), &p).unwrap();
    let written = std::fs::read(&p).unwrap();
    // Signing a file as written changes nothing.
    assert_eq!(sign_safetensors(&written).unwrap(), written);
    let (mut header, data) = header_of(&written);
    header["__metadata__"]["note"] = "edited".into();
    let edited = with_header(&header, &written, data);
    std::fs::write(&p, &edited).unwrap();
    assert_checksum_error(load_rbm::<Bernoulli<f64>, Spin<f64>>(&p));
    std::fs::write(&p, sign_safetensors(&edited).unwrap()).unwrap();
    assert_eq!(
        load_rbm::<Bernoulli<f64>, Spin<f64>>(&p).unwrap(),
        model(0.0)
    );
    assert!(sign_safetensors(b"not safetensors").is_err());
}

#[test]
fn a_second_lock_on_the_same_outputs_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = dir.path().join("m.safetensors");
    let lock = OutputLock::acquire(&anchor).unwrap();
    let e = OutputLock::acquire(&anchor).unwrap_err();
    assert!(e.to_string().contains("another run"), "{e}");
    // Other outputs are independent; a released lock can be taken again.
    OutputLock::acquire(&dir.path().join("other.safetensors")).unwrap();
    drop(lock);
    OutputLock::acquire(&anchor).unwrap();
    // A missing directory is reported before any work.
    let e = OutputLock::acquire(&dir.path().join("nope/m.safetensors")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

#[test]
fn a_set_staged_with_relative_paths_commits_from_another_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let here = std::env::current_dir().unwrap();
    std::env::set_current_dir(&run_dir).unwrap();
    let mut set = StagedOutputs::begin(Path::new("m.safetensors")).unwrap();
    let staged = set.stage(Path::new("m.txt"));
    std::env::set_current_dir(here).unwrap();
    std::fs::write(&staged, "x").unwrap();
    set.commit().unwrap();
    assert_eq!(std::fs::read_to_string(run_dir.join("m.txt")).unwrap(), "x");
}

#[test]
fn output_sets_are_committed_as_a_unit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let anchor = d.join("m.safetensors");
    let targets = [d.join("m.a"), d.join("m.b")];
    let write_set = |text: &str, commit: bool| {
        let mut set = StagedOutputs::begin(&anchor).unwrap();
        for t in &targets {
            std::fs::write(set.stage(t), text).unwrap();
        }
        if commit {
            set.commit().unwrap();
        }
    };
    let read = || targets.clone().map(|t| std::fs::read_to_string(t).unwrap());
    write_set("one", true);
    assert_eq!(read(), ["one", "one"]);
    // A run that fails while staging (an error, e.g. a full disk, drops the set): the old
    // set stays and the staging directory is removed at once.
    write_set("two", false);
    assert_eq!(read(), ["one", "one"]);
    assert!(!d.join(".m.safetensors.staging").exists());
    assert!(!StagedOutputs::recover(&anchor).unwrap());
    assert_eq!(read(), ["one", "one"]);
    // A run killed after the commit point, with one file moved: recovery finishes it.
    let mut set = StagedOutputs::begin(&anchor).unwrap();
    let staged: Vec<_> = targets.iter().map(|t| set.stage(t)).collect();
    for s in &staged {
        std::fs::write(s, "three").unwrap();
    }
    let staging = staged[0].parent().unwrap().to_path_buf();
    let manifest: Vec<(String, std::path::PathBuf)> = staged
        .iter()
        .zip(&targets)
        .map(|(s, t)| (s.file_name().unwrap().to_string_lossy().into(), t.clone()))
        .collect();
    std::fs::write(
        staging.join("COMMITTED"),
        serde_json::to_vec(&manifest).unwrap(),
    )
    .unwrap();
    std::fs::rename(&staged[0], &targets[0]).unwrap();
    assert_eq!(read(), ["three", "one"]);
    // A reader of any file of the set finds the set to finish first; of another file, none.
    assert_eq!(committed_sets_writing(&targets[1]), vec![anchor.clone()]);
    assert!(committed_sets_writing(&d.join("m.c")).is_empty());
    // Dropping the set whose manifest is written keeps its staging for the recovery.
    drop(set);
    assert!(staging.exists());
    assert!(StagedOutputs::recover(&anchor).unwrap());
    assert_eq!(read(), ["three", "three"]);
    assert!(!staging.exists());
}

/// `path` with the header entry of tensor `name` claiming `shape` (8-byte values from offset
/// 0): a header that promises far more data than the file holds.
fn claim(path: &Path, name: &str, shape: [u64; 2]) {
    let raw = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(raw[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&raw[8..8 + n]).unwrap();
    header[name]["shape"] = serde_json::json!(shape);
    header[name]["data_offsets"] = serde_json::json!([0u64, 8 * shape[0] * shape[1]]);
    let text = header.to_string();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&raw[8 + n..]);
    std::fs::write(path, out).unwrap();
}

#[test]
fn headers_claiming_huge_tensors_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.safetensors");
    save_rbm(&model(0.0), &p).unwrap();
    // 8 * 10^18 bytes of weights: an allocation would abort the process.
    claim(&p, "weights", [1_000_000_000_000, 1_000_000]);
    for r in [
        load_rbm::<Bernoulli<f64>, Spin<f64>>(&p).map(|_| ()),
        ebm_io::read_rbm_info(&p).map(|_| ()),
    ] {
        match r {
            Err(Error::Format { path, .. }) => assert_eq!(path, p),
            other => panic!("expected a format error, got {other:?}"),
        }
    }
    let q = dir.path().join("t.safetensors");
    save_trajectory(
        &Trajectory::from_checkpoints([(0, model(0.0))]).unwrap(),
        &q,
    )
    .unwrap();
    claim(&q, "checkpoint.0.weights", [1_000_000_000_000, 1_000_000]);
    assert!(matches!(
        load_trajectory::<Bernoulli<f64>, Spin<f64>>(&q),
        Err(Error::Format { .. })
    ));
}

#[test]
fn a_run_in_progress_tells_which_files_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model = d.join("k.safetensors");
    let (record, trajectory) = (d.join("k.json"), d.join("k.trajectory.safetensors"));
    let elsewhere = d.join("k.samples.npy");
    // No lock file, then a lock file left by a finished run: nothing in progress.
    assert_eq!(written_by_another_run(&record), None);
    drop(OutputLock::acquire_for(&model, &[&model, &record, &trajectory]).unwrap());
    assert_eq!(written_by_another_run(&record), None);
    // A run holding the lock and listing its outputs: those are refused, others are not.
    // (Another open of the lock file conflicts with it, as another process's would.)
    let lock = OutputLock::acquire_for(&model, &[&model, &record, &trajectory]).unwrap();
    let held = Some(d.join("k.lock"));
    assert_eq!(written_by_another_run(&record), held);
    assert_eq!(written_by_another_run(&trajectory), held);
    assert_eq!(written_by_another_run(&elsewhere), None);
    assert_eq!(written_by_another_run(&d.join("j.json")), None);
    // Asking does not take the lock from its holder.
    assert!(OutputLock::acquire(&model).is_err());
    drop(lock);
    // Two commands asking at once (the ranks of one mpirun) do not see each other's question
    // as a run in progress: asking takes a shared lock, which only an exclusive holder blocks.
    let asking = std::fs::File::open(d.join("k.lock")).unwrap();
    asking.try_lock_shared().unwrap();
    assert_eq!(written_by_another_run(&record), None);
    drop(asking);
    let lock = OutputLock::acquire_for(&model, &[&model, &record, &trajectory]).unwrap();
    drop(lock);
    // A lock held without a list covers every file named after it.
    let bare = OutputLock::acquire(&model).unwrap();
    assert_eq!(written_by_another_run(&elsewhere), held);
    drop(bare);
    assert_eq!(written_by_another_run(&elsewhere), None);
}

//! Long training runs that survive (issue 19): the state file of `--resume` is checked field by
//! field (and by checksum) against the run, resume equals the uninterrupted run (schedules
//! included), outputs are locked and committed as a unit, runs save periodically and on
//! SIGINT/SIGTERM, and no input — file or argument — makes the program panic.

mod common;

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use common::{bytes, ebm, ebm_binary, fails, json, ok};
use ebm_data::{Dataset, Domain};
use nalgebra::DMatrix;
use proptest::prelude::*;
use serde_json::Value;

fn save_npy(path: &Path, data: DMatrix<f64>) {
    let ds = Dataset::new(data, Domain::Real).unwrap();
    ebm_data::loaders::npy::save_npy(path, &ds).unwrap();
}

/// `n` binary samples of `width` values in two noisy clusters.
fn clusters(width: usize, n: usize) -> DMatrix<f64> {
    DMatrix::from_fn(width, n, |i, j| {
        let on = (i < width / 2) == j.is_multiple_of(2);
        let flip = (i * 31 + j * 17).is_multiple_of(20);
        (on != flip) as u8 as f64
    })
}

const PCD: &str = "--hidden-units 3 --chains 20 --batch-size 10 --loglik-every 5 \
                   --loglik-chains 20 --seed 3 --negative pcd --sweeps 2 --optimizer adam";
const PT: &str = "--hidden-units 3 --chains 10 --batch-size 10 --seed 3 --negative pt --rungs 4 \
                  --momentum 0.5";

/// A directory with `d.npy` (8 x 40 binary) and the states of a PCD and a PT run of 6 updates
/// (`pcd.state.json`, `pt.state.json`).
fn trained() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    for (name, opts) in [("pcd", PCD), ("pt", PT)] {
        ok(
            d,
            &format!("train --data d.npy {opts} --updates 6 --out {name}.safetensors"),
        );
    }
    dir
}

/// The state file `name` with the JSON value at `pointer` replaced by `value` and without its
/// checksum (a file edited by hand; with the checksum, any edit is caught by it first).
fn edited(d: &Path, name: &str, pointer: &str, value: Value) -> String {
    let mut state = json(&d.join(format!("{name}.state.json")));
    state.as_object_mut().unwrap().remove("checksum");
    *state
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the state")) = value;
    let out = format!("bad-{name}.state.json");
    std::fs::write(d.join(&out), state.to_string()).unwrap();
    out
}

fn resume(d: &Path, state: &str, extra: &str) -> std::process::Output {
    ebm()
        .current_dir(d)
        .args(
            format!("train --data d.npy --resume {state} --updates 9 --out r.safetensors {extra}")
                .split_whitespace(),
        )
        .output()
        .unwrap()
}

/// A failure that is a clean error: a non-zero exit other than a panic's, one `error:` line,
/// no panic message.
fn assert_clean_failure(out: &std::process::Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{what}: {stderr}"
    );
    let code = out.status.code();
    assert!(
        code.is_some_and(|c| c != 0 && c != 101),
        "{what}: {code:?} {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
    assert!(stderr.starts_with("error: "), "{what}: {stderr}");
}

#[test]
fn every_listed_state_corruption_is_a_typed_error_naming_file_and_field() {
    let dir = trained();
    let d = dir.path();
    // Control: the unedited state resumes.
    let good = resume(d, "pcd.state.json", "");
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    let order: Vec<u32> = (0..40).map(|_| 0).collect();
    let pt = json(&d.join("pt.state.json"));
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        ("pcd", "/config/trainer/batch_size", 0.into(), "batch_size"),
        (
            "pcd",
            "/config/trainer/batch_size",
            1_000_000.into(),
            "batch_size",
        ),
        ("pcd", "/state/batches/order", order.into(), "batches.order"),
        ("pcd", "/state/batches/next", 10_000.into(), "batches.next"),
        (
            "pcd",
            "/state/optimizer/first",
            Value::Array(vec![0.0.into()]),
            "optimizer.first",
        ),
        (
            "pcd",
            "/state/optimizer/second",
            Value::Array(vec![]),
            "optimizer.second",
        ),
        (
            "pcd",
            "/config/trainer/learning_rate",
            serde_json::json!({"Constant": -0.1}),
            "learning_rate",
        ),
        (
            "pcd",
            "/config/trainer/learning_rate",
            serde_json::json!({"Constant": 0.0}),
            "learning_rate",
        ),
        (
            "pcd",
            "/config/trainer/negative/pcd/sweeps",
            0.into(),
            "sweeps",
        ),
        (
            "pcd",
            "/config/trainer/negative/pcd/chains",
            21.into(),
            "Pcd chains",
        ),
        (
            "pcd",
            "/state/likelihood/population/log_weights/0",
            Value::Null,
            "malformed",
        ),
        (
            "pcd",
            "/state/likelihood/population/log_weights",
            Value::Array(vec![0.0.into()]),
            "log_weights",
        ),
        ("pcd", "/state/kept/0/0", 1000.into(), "kept checkpoints"),
        (
            "pt",
            "/config/trainer/negative/pt/betas/1",
            0.01.into(),
            "betas",
        ),
        (
            "pt",
            "/config/trainer/negative/pt/betas",
            serde_json::json!([1.0]),
            "rungs",
        ),
        ("pt", "/state/negative/pt/replica/0/0", 7.into(), "replica"),
        // Two rungs holding the same replica.
        (
            "pt",
            "/state/negative/pt/replica/1/0",
            pt["state"]["negative"]["pt"]["replica"][0][0].clone(),
            "replica",
        ),
        ("pt", "/state/negative/pt/lifted/0/0", 9.into(), "lifted"),
        (
            "pt",
            "/config/trainer/negative/pt/rounds",
            0.into(),
            "rounds",
        ),
        (
            "pt",
            "/config/trainer/negative/pt/sweeps",
            0.into(),
            "sweeps",
        ),
    ];
    for (name, pointer, value, needle) in cases {
        let file = edited(d, name, pointer, value.clone());
        let out = resume(d, &file, "");
        let what = format!("{name} {pointer} = {value}");
        assert_clean_failure(&out, &what);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&file),
            "{what}: the file is not named: {stderr}"
        );
        assert!(
            stderr.contains(needle),
            "{what}: {needle:?} not in {stderr}"
        );
    }
}

#[test]
fn flipped_bytes_in_a_state_or_model_fail_their_checksum() {
    let dir = trained();
    let d = dir.path();
    let text = std::fs::read_to_string(d.join("pcd.state.json")).unwrap();
    // A digit of the update counter: still a valid state, caught by the checksum.
    let edited = text.replacen("\"update\":6", "\"update\":5", 1);
    assert_ne!(edited, text);
    std::fs::write(d.join("flipped.state.json"), edited).unwrap();
    fails(
        d,
        "train --data d.npy --resume flipped.state.json --updates 9 --out r.safetensors",
        1,
        "checksum",
    );
    let mut model = bytes(&d.join("pcd.safetensors"));
    let n = model.len();
    for b in &mut model[n - 12..n - 8] {
        *b ^= 0x10;
    }
    std::fs::write(d.join("flipped.safetensors"), model).unwrap();
    fails(
        d,
        "loglik exact --model flipped.safetensors --data d.npy",
        1,
        "checksum",
    );
    ok(d, "loglik exact --model pcd.safetensors --data d.npy");
}

/// Replaces one value of a JSON document, chosen by `pick`, by one of a set of hostile values,
/// or drops an array element.
fn mutate(v: &mut Value, pick: usize, with: usize) {
    let mut leaves = Vec::new();
    collect(v, String::new(), &mut leaves);
    let pointer = &leaves[pick % leaves.len()];
    let target = v.pointer_mut(pointer).unwrap();
    let hostile = [
        Value::from(0),
        Value::from(-1),
        Value::from(1e308),
        Value::from(-1e308),
        Value::from(0.5),
        Value::from(u64::MAX),
        Value::from(4_294_967_296u64),
        Value::Null,
        Value::Array(vec![]),
        Value::from("x"),
    ];
    match (&mut *target, with % (hostile.len() + 1)) {
        (Value::Array(a), k) if k == hostile.len() && !a.is_empty() => {
            a.pop();
        }
        (t, k) => *t = hostile[k % hostile.len()].clone(),
    }
}

/// The JSON pointers of every number and every array of `v`.
fn collect(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Number(_) => out.push(at),
        Value::Array(a) => {
            out.push(at.clone());
            for (k, x) in a.iter().enumerate() {
                collect(x, format!("{at}/{k}"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                collect(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Structured mutations of valid state files: resuming either works or fails cleanly.
    #[test]
    fn mutated_states_never_panic(pt in any::<bool>(), pick in any::<usize>(), with in any::<usize>()) {
        let dir = STATES.get_or_init(trained);
        let d = dir.path();
        let name = if pt { "pt" } else { "pcd" };
        let mut state = json(&d.join(format!("{name}.state.json")));
        state.as_object_mut().unwrap().remove("checksum");
        mutate(&mut state, pick, with);
        let file = format!("fuzz-{name}-{pick}-{with}.state.json");
        std::fs::write(d.join(&file), state.to_string()).unwrap();
        let out = ebm()
            .current_dir(d)
            .args(format!("train --data d.npy --resume {file} --updates 8 --out fuzz-{pick}-{with}.safetensors").split_whitespace())
            .output()
            .unwrap();
        if !out.status.success() {
            assert_clean_failure(&out, &file);
        }
    }

    /// Structured mutations of the metadata and tensors of a valid model file: reading it
    /// either works or fails cleanly.
    #[test]
    fn mutated_models_never_panic(pick in any::<usize>(), with in any::<usize>()) {
        let dir = STATES.get_or_init(trained);
        let d = dir.path();
        let raw = bytes(&d.join("pcd.safetensors"));
        let n = u64::from_le_bytes(raw[..8].try_into().unwrap()) as usize;
        let mut header: Value = serde_json::from_slice(&raw[8..8 + n]).unwrap();
        let meta = header["__metadata__"].as_object_mut().unwrap();
        meta.remove("checksum");
        // Metadata values are strings: mutate them as numbers where they are numbers.
        let keys: Vec<String> = meta.keys().cloned().collect();
        let key = &keys[pick % keys.len()];
        let hostile = ["0", "-1", "1e308", "NaN", "18446744073709551615", "4294967296", "potts", ""];
        meta.insert(key.clone(), hostile[with % hostile.len()].into());
        let text = header.to_string();
        let mut file = (text.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(text.as_bytes());
        file.extend_from_slice(&raw[8 + n..]);
        let name = format!("fuzz-{pick}-{with}.safetensors");
        std::fs::write(d.join(&name), file).unwrap();
        for cmd in [format!("loglik exact --model {name} --data d.npy"), format!("sample --model {name} --chains 2 --steps 2 --out s-{pick}-{with}.npy")] {
            let out = ebm().current_dir(d).args(cmd.split_whitespace()).output().unwrap();
            if !out.status.success() {
                assert_clean_failure(&out, &cmd);
            }
        }
    }
}

static STATES: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();

#[test]
fn extreme_arguments_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    let base = "train --data d.npy --updates 3 --out m.safetensors";
    for extra in [
        "--batch-size 0",
        "--batch-size 1000000",
        "--learning-rate 0",
        "--learning-rate -1",
        "--learning-rate NaN",
        "--learning-rate inf",
        "--updates 0",
        "--updates -5",
        "--sweeps 0",
        "--chains 0",
        "--hidden-units 0",
        "--hidden-units 1e9",
        "--hidden-units 1000000000000",
        "--chains 100000000000",
        "--negative pt --rungs 1000000000",
        "--negative pt --rungs 1",
        "--negative pt --betas 1",
        "--negative pt --betas 0.5,0.5,1",
        "--negative pt --betas NaN,1",
        "--negative pt --rounds 0",
        "--negative pt --beta-min 0",
        "--momentum 1e308",
        "--init-std 1e308",
        "--init-std NaN",
        "--l2 -1",
        "--loglik-every 1 --loglik-chains 100000000000",
        "--target-acceptance 1",
        "--seed -1",
    ] {
        run_extreme(d, &format!("{base} {extra}"), true);
    }
    // Accepted values that make training diverge: a clean error or a finished run.
    for extra in ["--learning-rate 1e308", "--l2 1e308", "--l1 1e308"] {
        run_extreme(d, &format!("{base} {extra}"), false);
    }
}

/// Runs `ebm <args>`: never a panic; a failure (required when `must_fail`) is one clean line
/// with exit code 1 or 2.
fn run_extreme(d: &Path, args: &str, must_fail: bool) {
    {
        let extra = args;
        let out = ebm()
            .current_dir(d)
            .args(args.split_whitespace())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{extra}: {stderr}");
        assert!(!must_fail || !out.status.success(), "{extra} was accepted");
        if !out.status.success() {
            assert!(
                out.status.code().is_some_and(|c| c == 1 || c == 2),
                "{extra}: {:?} {stderr}",
                out.status.code()
            );
            assert_eq!(stderr.lines().count(), 1, "{extra}: {stderr}");
        }
    }
}

#[test]
fn sizes_beyond_memory_are_a_typed_error_before_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    fails(
        d,
        "train --data d.npy --updates 3 --hidden-units 1000000000000 --out m.safetensors",
        1,
        "MiB of memory",
    );
    fails(
        d,
        "train --data d.npy --updates 3 --chains 100000000000 --out m.safetensors",
        1,
        "MiB of memory",
    );
    fails(
        d,
        "train --data d.npy --updates 3 --negative pt --betas 1 --out m.safetensors",
        1,
        "2 to 10000 inverse temperatures",
    );
    fails(
        d,
        "train --data d.npy --updates 3 --negative pt --rungs 1000000000 --out m.safetensors",
        1,
        "2 to 10000 rungs",
    );
}

#[test]
fn a_schedule_resumes_bit_for_bit_and_a_new_rate_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    let common = "--data d.npy --hidden-units 3 --chains 20 --batch-size 10 --seed 5 \
                  --lr-schedule linear --learning-rate 0.05 --final-learning-rate 0.001";
    ok(
        d,
        &format!("train {common} --updates 20 --out full.safetensors"),
    );
    ok(
        d,
        &format!("train {common} --updates 20 --stop-after 8 --out half.safetensors"),
    );
    assert_eq!(json(&d.join("half.state.json"))["state"]["update"], 8);
    // Resuming the schedule over another total is refused, with the way out.
    fails(
        d,
        "train --data d.npy --resume half.state.json --updates 30 --out rest.safetensors",
        1,
        "schedule spans 20 updates",
    );
    ok(
        d,
        "train --data d.npy --resume half.state.json --updates 20 --out rest.safetensors",
    );
    assert!(bytes(&d.join("full.safetensors")) == bytes(&d.join("rest.safetensors")));
    assert_eq!(
        json(&d.join("full.state.json"))["state"],
        json(&d.join("rest.state.json"))["state"]
    );
    // A new rate on resume is honoured and recorded (state and run record).
    ok(
        d,
        "train --data d.npy --resume half.state.json --updates 30 --learning-rate 0.002 \
         --out new.safetensors",
    );
    let change = serde_json::json!([{"update": 8, "rate": 0.002}]);
    assert_eq!(
        json(&d.join("new.state.json"))["config"]["learning_rate_changes"],
        change
    );
    assert_eq!(
        json(&d.join("new.json"))["settings"]["config"]["learning_rate_changes"],
        change
    );
    let log = std::fs::read_to_string(d.join("new.log.csv")).unwrap();
    assert!(
        log.lines().last().unwrap().starts_with("30,0.002,"),
        "{log}"
    );
    assert!(bytes(&d.join("full.safetensors")) != bytes(&d.join("new.safetensors")));
}

#[test]
fn the_visible_kind_is_never_guessed_from_stray_values() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut x = clusters(8, 40);
    x[(3, 7)] = 0.5;
    save_npy(&d.join("half.npy"), x);
    fails(
        d,
        "train --data half.npy --updates 2 --out m.safetensors",
        1,
        "0.5 in sample 7, column 3",
    );
    ok(
        d,
        "train --data half.npy --visible gaussian --updates 2 --out m.safetensors",
    );
    save_npy(&d.join("empty.npy"), DMatrix::zeros(5, 0));
    fails(d, "data info empty.npy", 1, "no samples");
}

#[test]
fn a_second_run_on_the_same_outputs_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    let lock = ebm_io::output::OutputLock::acquire(&d.join("m.safetensors")).unwrap();
    ebm_binary(); // built before the clock starts
    let started = Instant::now();
    fails(
        d,
        "train --data d.npy --updates 3 --out m.safetensors",
        1,
        "another run is writing the outputs",
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!d.join("m.state.json").exists());
    drop(lock);
    ok(d, "train --data d.npy --updates 3 --out m.safetensors");
    // An unwritable output directory is reported before any work.
    fails(
        d,
        "train --data d.npy --updates 3 --out missing/m.safetensors",
        1,
        "missing",
    );
}

/// A run long enough to be killed in the middle: about a second or two in release mode.
const LONG: &str = "--data big.npy --hidden-units 40 --chains 400 --batch-size 50 --sweeps 5 \
                    --seed 9 --updates 300";

fn big(d: &Path) {
    save_npy(&d.join("big.npy"), clusters(60, 400));
}

fn spawn(d: &Path, args: &str) -> std::process::Child {
    StdCommand::new(ebm_binary())
        .current_dir(d)
        .args(args.split_whitespace())
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The update recorded in the model file and in the state file: one output set.
fn assert_one_set(d: &Path, stem: &str) -> u64 {
    // As a reader does: complete a commit the kill may have interrupted.
    ebm_io::output::StagedOutputs::recover(&d.join(format!("{stem}.safetensors"))).unwrap();
    let state = json(&d.join(format!("{stem}.state.json")));
    let update = state["state"]["update"].as_u64().unwrap();
    let raw = bytes(&d.join(format!("{stem}.safetensors")));
    let n = u64::from_le_bytes(raw[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&raw[8..8 + n]).unwrap();
    assert_eq!(
        header["__metadata__"]["training_update"],
        Value::from(update.to_string()),
        "model and state of {stem} are from different updates"
    );
    update
}

#[test]
fn killed_runs_resume_to_the_uninterrupted_model_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    big(d);
    let started = Instant::now();
    ok(d, &format!("train {LONG} --out full.safetensors"));
    let full = started.elapsed();
    let mut resumed = 0;
    // Kill points spread over the run (SIGKILL: no chance to save anything).
    for (k, fraction) in [0.3, 0.55, 0.8].into_iter().enumerate() {
        let stem = format!("k{k}");
        let mut child = spawn(
            d,
            &format!("train {LONG} --save-every 7 --out {stem}.safetensors"),
        );
        std::thread::sleep(full.mul_f64(fraction));
        child.kill().unwrap();
        child.wait().unwrap();
        if !d.join(format!("{stem}.state.json")).exists() {
            continue;
        }
        let update = assert_one_set(d, &stem);
        assert!(update.is_multiple_of(7) || update == 300, "{update}");
        if update == 300 {
            continue;
        }
        ok(
            d,
            &format!(
                "train --data big.npy --resume {stem}.state.json --updates 300 --out r{k}.safetensors"
            ),
        );
        assert!(
            bytes(&d.join("full.safetensors")) == bytes(&d.join(format!("r{k}.safetensors"))),
            "resumed from update {update}: the model differs"
        );
        assert!(
            bytes(&d.join("full.trajectory.safetensors"))
                == bytes(&d.join(format!("r{k}.trajectory.safetensors")))
        );
        resumed += 1;
    }
    assert!(
        resumed >= 1,
        "no kill landed in the middle of the run ({full:?})"
    );
}

#[test]
fn sigint_and_sigterm_save_a_resumable_state_and_exit_with_their_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    big(d);
    let started = std::time::Instant::now();
    ok(d, &format!("train {LONG} --out full.safetensors"));
    let full = started.elapsed();
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let stem = format!("s{signal}");
        let child = spawn(d, &format!("train {LONG} --out {stem}.safetensors"));
        // Signal in the middle of the run, measured on this machine (a fixed delay outlasted
        // the whole run on an idle machine).
        std::thread::sleep(full.mul_f64(0.5));
        let status = StdCommand::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{stderr}");
        assert!(
            stderr.contains(&format!("interrupted by SIG{signal}")),
            "{stderr}"
        );
        let update = assert_one_set(d, &stem);
        assert!(update < 300, "the run ended before the signal: {update}");
        assert_eq!(
            json(&d.join(format!("{stem}.json")))["results"]["updates"],
            update
        );
        ok(
            d,
            &format!(
                "train --data big.npy --resume {stem}.state.json --updates 300 --out r{signal}.safetensors"
            ),
        );
        assert!(
            bytes(&d.join("full.safetensors")) == bytes(&d.join(format!("r{signal}.safetensors")))
        );
    }
}

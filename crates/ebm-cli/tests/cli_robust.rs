//! Long training runs that survive, and hostile files: the state file of `--resume` is checked field by
//! field (and by checksum) against the run, resume equals the uninterrupted run (schedules
//! included), outputs are locked and committed as a unit, runs save periodically and on
//! SIGINT/SIGTERM, and no input — file or argument — makes the program panic.

mod common;

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use common::{
    bytes, ebm, ebm_binary, fails, json, ok, ok_stderr, run_within, signed_safetensors,
    write_signed_json,
};
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

/// The state file `name` with the JSON value at `pointer` replaced by `value` and its checksum
/// recomputed (a file edited deliberately; without, any edit is caught by the checksum first).
fn edited(d: &Path, name: &str, pointer: &str, value: Value) -> String {
    let mut state = json(&d.join(format!("{name}.state.json")));
    *state
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the state")) = value;
    let out = format!("bad-{name}.state.json");
    write_signed_json(&d.join(&out), state);
    // The log written with the state, beside it (without, the resume warns that its log
    // starts afresh).
    std::fs::copy(
        d.join(format!("{name}.log.csv")),
        d.join(format!("bad-{name}.log.csv")),
    )
    .unwrap();
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
        // Fields the command line would reject, and fields that used to panic.
        (
            "pcd",
            "/config/trainer/checkpoints/target_acceptance",
            3.into(),
            "target_acceptance",
        ),
        (
            "pcd",
            "/config/trainer/checkpoints/target_acceptance",
            (-1).into(),
            "target_acceptance",
        ),
        (
            "pcd",
            "/state/kept",
            Value::Array(vec![]),
            "kept checkpoints",
        ),
        ("pcd", "/config/visible_states", 0.into(), "visible_states"),
        ("pcd", "/config/hidden_units", 0.into(), "hidden_units"),
        (
            "pcd",
            "/state/selection_draws",
            Value::Null,
            "selection_draws",
        ),
        (
            "pcd",
            "/state/negative/pcd/chains/visible/0/0",
            2.into(),
            "not a bernoulli value",
        ),
        (
            "pt",
            "/state/negative/pt/first_rung",
            1.into(),
            "first_rung",
        ),
        (
            "pt",
            "/state/negative/pt/rungs/0/visible/0/0",
            (-1).into(),
            "not a bernoulli value",
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
fn a_state_with_a_huge_learning_rate_fails_cleanly_or_resumes() {
    let dir = trained();
    let d = dir.path();
    let file = edited(
        d,
        "pcd",
        "/config/trainer/learning_rate",
        serde_json::json!({"Constant": 1e308}),
    );
    let out = resume(d, &file, "");
    if !out.status.success() {
        assert_clean_failure(&out, "learning rate 1e308");
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
        write_signed_json(&d.join(&file), state);
        std::fs::copy(
            d.join(format!("{name}.log.csv")),
            d.join(format!("fuzz-{name}-{pick}-{with}.log.csv")),
        )
        .unwrap();
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
        let file = signed_safetensors(&raw, |header| {
            let meta = header["__metadata__"].as_object_mut().unwrap();
            meta.remove("checksum");
            // Metadata values are strings: mutate them as numbers where they are numbers.
            let keys: Vec<String> = meta.keys().cloned().collect();
            let key = &keys[pick % keys.len()];
            let hostile = ["0", "-1", "1e308", "NaN", "18446744073709551615", "4294967296", "potts", ""];
            meta.insert(key.clone(), hostile[with % hostile.len()].into());
        });
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

/// Hostile values given to every option that takes one.
const HOSTILE: [&str; 6] = ["0", "-1", "NaN", "inf", "1e308", "1000000000000"];

/// The options of the tethered Monte Carlo of `sample --sampler tmc` and `train --negative tmc`.
const TMC_OPTIONS: &[&str] = &[
    "--direction",
    "--alpha",
    "--grid-points",
    "--border",
    "--replicas",
    "--burn-in",
    "--measure",
    "--gibbs-sweeps",
];

/// Base command lines, each with the options tried on it.
type Bases = &'static [(&'static str, &'static [&'static str])];

/// Every command (but `demo` and `reproduce`, whole tours whose only numbers are the seed and
/// the thread count) with base command lines that run in a moment; `OUT` is replaced by a
/// name unique to each run. The options listed with a base line are tried on it (they need its
/// sampler or negative phase); every other option on the first line.
const COMMANDS: &[(&str, Bases)] = &[
    (
        "data generate ising",
        &[("--size 4 --samples 5 --burn-in 2 --out OUT.npy", &[])],
    ),
    (
        "data generate bars-stripes",
        &[("--size 3 --samples 5 --out OUT.npy", &[])],
    ),
    (
        "data generate clusters",
        &[("mickey --features 8 --samples 5 --out OUT.npy", &[])],
    ),
    ("data generate digits", &[("--out OUT.npy", &[])]),
    (
        "data generate curie-weiss",
        &[("--spins 6 --samples 5 --out OUT.npy", &[])],
    ),
    (
        "data generate hopfield",
        &[("--spins 6 --samples 5 --out OUT.npy", &[])],
    ),
    (
        "data generate potts",
        &[("--sites 4 --states 3 --samples 5 --out OUT.npy", &[])],
    ),
    ("data info", &[("d.npy", &[])]),
    ("data pca", &[("d.npy --out OUT.npy", &[])]),
    (
        "data split",
        &[("d.npy --train OUTa.npy --test OUTb.npy", &[])],
    ),
    ("data binarize", &[("d.npy --out OUT.npy", &[])]),
    (
        "data subset",
        &[("d.npy --label-file l.npy --labels 1 --out OUT.npy", &[])],
    ),
    (
        "sample",
        &[
            (
                "--model m.safetensors --chains 4 --steps 3 --out OUT.npy",
                &[],
            ),
            (
                "--model m.safetensors --sampler pt --rungs 3 --chains 4 --steps 3 --data d.npy \
                 --trace-every 1 --out OUT.npy",
                &[
                    "--rungs",
                    "--beta-min",
                    "--betas",
                    "--schedule",
                    "--trace-every",
                    "--mode-threshold",
                    "--modes",
                ],
            ),
            (
                "--model m.safetensors --sampler latent --chains 4 --steps 3 --out OUT.npy",
                &["--ags-sweeps", "--latent-algorithm"],
            ),
            (
                "--model m.safetensors --sampler tmc --grid-points 3 --replicas 2 --burn-in 2 \
                 --measure 2 --out OUT.npy",
                TMC_OPTIONS,
            ),
        ],
    ),
    (
        "train",
        &[
            (
                "--data d.npy --updates 3 --hidden-units 3 --chains 10 --batch-size 10 --out OUT.safetensors",
                &[],
            ),
            (
                "--data d.npy --updates 3 --hidden-units 3 --chains 10 --batch-size 10 \
                 --negative pt --rungs 3 --out OUT.safetensors",
                &["--rungs", "--beta-min", "--betas", "--schedule", "--rounds"],
            ),
            (
                "--data d.npy --updates 3 --hidden-units 3 --chains 10 --batch-size 10 \
                 --negative jarzynski --out OUT.safetensors",
                &["--resample-below"],
            ),
            (
                "--data d.npy --updates 3 --hidden-units 3 --batch-size 10 --negative tmc \
                 --grid-points 3 --replicas 2 --burn-in 2 --measure 2 --out OUT.safetensors",
                TMC_OPTIONS,
            ),
            (
                "--data d.npy --updates 3 --hidden-units 3 --chains 10 --batch-size 10 \
                 --pretrain rcm --out OUT.safetensors",
                &["--rcm-directions", "--rcm-hyperplanes", "--rcm-mesh"],
            ),
            (
                "--data d.npy --updates 3 --hidden-units 3 --chains 10 --batch-size 10 \
                 --lr-schedule linear --final-learning-rate 0.001 --out OUT.safetensors",
                &["--final-learning-rate"],
            ),
            (
                "--data d.npy --updates 3 --hidden-units 3 --chains 10 --batch-size 10 \
                 --optimizer sgd --momentum 0.5 --loglik-every 1 --loglik-chains 10 \
                 --out OUT.safetensors",
                &["--momentum", "--loglik-chains"],
            ),
            (
                "--data d.npy --resume m.state.json --updates 9 --out OUT.safetensors",
                &["--updates", "--stop-after", "--save-every", "--pll-every"],
            ),
        ],
    ),
    (
        "train-stack",
        &[(
            "--data d.npy --hidden-units 3,2 --updates 3 --chains 10 --batch-size 10 --out OUT.safetensors",
            &[],
        )],
    ),
    (
        "loglik exact",
        &[("--model m.safetensors --data d.npy", &[])],
    ),
    (
        "loglik ais",
        &[(
            "--model m.safetensors --rungs 5 --chains 4 --data d.npy",
            &[],
        )],
    ),
    (
        "loglik reverse-ais",
        &[(
            "--model m.safetensors --rungs 5 --chains 4 --start gibbs --burn-in 3",
            &[],
        )],
    ),
    (
        "loglik tr-ais",
        &[("--trajectory m.trajectory.safetensors --chains 4", &[])],
    ),
    (
        "loglik ptt",
        &[(
            "--trajectory m.trajectory.safetensors --chains 4 --steps 5 --burn-in 1",
            &[],
        )],
    ),
    (
        "plot samples",
        &[("--data d.npy --samples d.npy --out OUT.svg", &[])],
    ),
    ("plot images", &[("d.npy --out OUT.svg", &[])]),
    ("plot chain", &[("s.json --out OUT.svg", &[])]),
    ("plot jumps", &[("s.json --out OUT.svg", &[])]),
    ("plot swaps", &[("s.json --out OUT.svg", &[])]),
    ("plot loglik", &[("m.log.csv --out OUT.svg", &[])]),
    ("plot logz", &[("m.log.csv --out OUT.svg", &[])]),
    (
        "tmc profile",
        &[(
            "--model m.safetensors --grid-points 3 --replicas 2 --burn-in 2 --measure 2 --out OUT.csv",
            &[],
        )],
    ),
];

/// The options of `ebm <command>` that take a value other than a file, from its `--help`.
fn value_options(d: &Path, command: &str) -> Vec<String> {
    let help = ok(d, &format!("{command} --help"));
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("-")
                .and_then(|r| r.get(1..3).filter(|c| *c == ", ").and(r.get(3..)))
                .unwrap_or(l);
            let (name, rest) = l.strip_prefix("--")?.split_once(' ')?;
            let value = rest.strip_prefix('<')?.split('>').next()?;
            (!["FILE", "DIR", "STATE"].contains(&value)).then(|| format!("--{name}"))
        })
        .collect()
}

/// `base` with `option value` in place of any value of `option` it has.
fn with_option(base: &str, option: &str, value: &str) -> String {
    let mut words: Vec<&str> = base.split_whitespace().collect();
    if let Some(k) = words.iter().position(|w| *w == option) {
        words.drain(k..(k + 2).min(words.len()));
    }
    format!("{} {option} {value}", words.join(" "))
}

/// Runs `ebm <args>` for at most a few seconds: a run that has not ended by then has passed
/// validation and is working (e.g. on 10^12 steps); one that ended must have ended cleanly.
fn run_bounded(d: &Path, args: &str) {
    let Some(out) = run_within(d, args, Duration::from_secs(3), false) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "ebm {args}: {stderr}"
    );
    assert!(
        out.status.code().is_some_and(|c| c <= 2),
        "ebm {args}: {:?} {stderr}",
        out.status
    );
}

#[test]
fn every_value_option_of_every_command_survives_hostile_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    save_npy(
        &d.join("l.npy"),
        DMatrix::from_fn(1, 40, |_, j| (j % 2) as f64),
    );
    ok(
        d,
        "train --data d.npy --updates 4 --hidden-units 3 --chains 10 --batch-size 10 --out m.safetensors",
    );
    ok(
        d,
        "sample --model m.safetensors --sampler pt --rungs 3 --chains 4 --steps 6 --data d.npy \
           --trace-every 2 --chain-out c.npy --out s.npy",
    );
    let mut runs = Vec::new();
    for (command, bases) in COMMANDS {
        let options = value_options(d, command);
        for option in options {
            let (base, _) = bases
                .iter()
                .find(|(_, owned)| owned.contains(&option.as_str()))
                .unwrap_or(&bases[0]);
            for value in HOSTILE {
                runs.push(format!("{command} {}", with_option(base, &option, value)));
            }
        }
    }
    assert!(runs.len() > 500, "{}", runs.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(run) = runs.get(k) else { break };
                    run_bounded(d, &run.replace("OUT", &format!("o{k}")));
                }
            });
        }
    });
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
    // Every command sized from the command line: sample, loglik, tmc, data generate.
    ok(
        d,
        "train --data d.npy --updates 3 --hidden-units 3 --chains 10 --batch-size 10 \
         --out m.safetensors",
    );
    let huge = "1000000000000";
    for args in [
        format!("sample --model m.safetensors --chains {huge} --steps 2 --out s.npy"),
        format!(
            "sample --model m.safetensors --chains 4 --steps {huge} --data d.npy --trace-every 1 --out s.npy"
        ),
        format!("sample --model m.safetensors --sampler tmc --replicas {huge} --out s.npy"),
        format!("loglik ais --model m.safetensors --chains {huge}"),
        format!("loglik ais --model m.safetensors --rungs {huge}"),
        format!("loglik reverse-ais --model m.safetensors --rungs {huge}"),
        format!("loglik tr-ais --trajectory m.trajectory.safetensors --chains {huge}"),
        format!("loglik ptt --trajectory m.trajectory.safetensors --chains {huge}"),
        format!("tmc profile --model m.safetensors --grid-points {huge} --out p.csv"),
        format!("data generate ising --samples {huge} --out g.npy"),
        format!("data generate hopfield --patterns {huge} --out g.npy"),
    ] {
        fails(d, &args, 1, "MiB of memory");
    }
    fails(
        d,
        "sample --model m.safetensors --sampler pt --rungs 1000000000 --out s.npy",
        1,
        "2 to 10000 rungs",
    );
    fails(
        d,
        "loglik ais --model m.safetensors --threads 1000000",
        1,
        "at most 1024 worker threads",
    );
    // A header that claims more data than its file holds is refused before allocating.
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let mut header =
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 1000000), }".to_string();
    header.push_str(&" ".repeat(117 - header.len()));
    header.push('\n');
    npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
    npy.extend_from_slice(header.as_bytes());
    npy.extend_from_slice(&[0u8; 32]);
    std::fs::write(d.join("huge.npy"), npy).unwrap();
    for command in [
        "data info huge.npy",
        "train --data huge.npy --out h.safetensors",
    ] {
        fails(d, command, 1, "expected 8000000000000000000");
    }
    let raw = bytes(&d.join("m.safetensors"));
    let n = u64::from_le_bytes(raw[..8].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&raw[8..8 + n]).unwrap();
    header["weights"]["shape"] = serde_json::json!([1_000_000_000_000u64, 1_000_000]);
    header["weights"]["data_offsets"] = serde_json::json!([0, 8_000_000_000_000_000_000u64]);
    let text = header.to_string();
    let mut model = (text.len() as u64).to_le_bytes().to_vec();
    model.extend_from_slice(text.as_bytes());
    model.extend_from_slice(&raw[8 + n..]);
    std::fs::write(d.join("huge.safetensors"), model).unwrap();
    fails(
        d,
        "loglik exact --model huge.safetensors --data d.npy",
        1,
        "huge.safetensors",
    );
}

#[test]
fn records_used_as_inputs_are_checked_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    ok(
        d,
        "train --data d.npy --updates 3 --hidden-units 3 --chains 10 --batch-size 10 \
         --out m.safetensors",
    );
    ok(
        d,
        "sample --model m.safetensors --sampler pt --rungs 3 --chains 4 --steps 8 --data d.npy \
         --trace-every 2 --chain-out c.npy --out s.npy",
    );
    let plots = |record: &str| {
        [
            format!("plot swaps {record} --out w.svg"),
            format!("plot jumps {record} --out j.svg"),
            format!("plot chain {record} --shape 2x4 --out c.svg"),
        ]
    };
    // Control: the record as written draws every figure.
    for command in plots("s.json") {
        ok(d, &command);
    }
    let record = json(&d.join("s.json"));
    // An edit without its checksum recomputed is caught first: a figure draws only what
    // `ebm sample` computed. The first ladder's inverse temperature, still in range:
    let mut edited = record.clone();
    *edited.pointer_mut("/results/pt/betas/0").unwrap() = 0.5.into();
    std::fs::write(d.join("unsigned.json"), edited.to_string()).unwrap();
    fails(
        d,
        "plot swaps unsigned.json --out u.svg",
        1,
        "unsigned.json at checksum: the content does not match its checksum",
    );
    // The checksum key misspelled, in a record of format version 2, is refused ...
    let mut renamed = record.clone();
    assert_eq!(renamed["versions"]["record_format"], 2);
    let sum = renamed.as_object_mut().unwrap().remove("checksum").unwrap();
    renamed["checksun"] = sum;
    std::fs::write(d.join("renamed.json"), renamed.to_string()).unwrap();
    fails(
        d,
        "plot swaps renamed.json --out u.svg",
        1,
        "renamed.json at checksum: no \"checksum\" field",
    );
    // ... while a record of version 1, written before records carried one, is drawn.
    let mut old = record.clone();
    old.as_object_mut().unwrap().remove("checksum");
    old["versions"]["record_format"] = 1.into();
    std::fs::write(d.join("v1.json"), old.to_string()).unwrap();
    ok(d, "plot swaps v1.json --out v1.svg");
    let reversed = |pointer: &str| {
        let mut v = record.pointer(pointer).unwrap().as_array().unwrap().clone();
        v.reverse();
        Value::Array(v)
    };
    let mut shorter = record["results"]["pt"]["acceptance_rates"]
        .as_array()
        .unwrap()
        .clone();
    shorter.pop();
    for (pointer, value, field) in [
        (
            "/results/pt/betas",
            reversed("/results/pt/betas"),
            "results.pt.betas",
        ),
        (
            "/results/pt/acceptance_rates",
            Value::Array(shorter),
            "results.pt.acceptance_rates",
        ),
        (
            "/results/pt/acceptance_rates/0",
            1.5.into(),
            "results.pt.acceptance_rates",
        ),
        (
            "/results/mode_jumps/gibbs_sweeps",
            reversed("/results/mode_jumps/gibbs_sweeps"),
            "results.mode_jumps.gibbs_sweeps",
        ),
        (
            "/results/mode_jumps/steps",
            reversed("/results/mode_jumps/steps"),
            "results.mode_jumps.steps",
        ),
        (
            "/results/chain/steps",
            reversed("/results/chain/steps"),
            "results.chain.steps",
        ),
    ] {
        let mut edited = record.clone();
        *edited.pointer_mut(pointer).unwrap() = value;
        // Signed, as a deliberate edit would be: the field checks are reached.
        write_signed_json(&d.join("bad.json"), edited);
        let figure = match field.split('.').nth(1) {
            Some("pt") => 0,
            Some("mode_jumps") => 1,
            _ => 2,
        };
        let command = &plots("bad.json")[figure];
        let out = ebm()
            .current_dir(d)
            .args(command.split_whitespace())
            .output()
            .unwrap();
        assert_clean_failure(&out, command);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("bad.json") && stderr.contains(field),
            "{command} ({pointer}): {stderr}"
        );
    }
}

#[test]
fn resuming_on_other_data_of_the_same_shape_is_refused() {
    let dir = trained();
    let d = dir.path();
    let mut other = clusters(8, 40);
    other[(0, 0)] = 1.0 - other[(0, 0)];
    save_npy(&d.join("other.npy"), other);
    let out = ebm()
        .current_dir(d)
        .args(
            "train --data other.npy --resume pcd.state.json --updates 9 --out r.safetensors"
                .split_whitespace(),
        )
        .output()
        .unwrap();
    assert_clean_failure(&out, "other data");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let state = json(&d.join("pcd.state.json"));
    let hash = state["data"]["hash"].as_str().unwrap();
    assert!(
        stderr.contains("other.npy")
            && stderr.contains("not the training data")
            && stderr.contains(hash),
        "{stderr}"
    );
    // Control: the training data themselves resume.
    ok(
        d,
        "train --data d.npy --resume pcd.state.json --updates 9 --out r.safetensors",
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

/// A resumed run carries the previous log's rows up to its state; a malformed row of that log
/// is dropped with a warning naming the file (it used to vanish silently). Control: an intact
/// log resumes without the warning.
/// A resume carries the log written with the state, and no other: a log
/// missing, truncated, with a row inserted or prepended, or from another run, is refused
/// before any work (it used to be merged, dropped or prepended silently).
#[test]
fn a_resumed_log_must_be_the_one_written_with_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    let train = "train --data d.npy --hidden-units 3 --chains 20 --batch-size 10";
    ok(
        d,
        &format!("{train} --seed 5 --updates 6 --stop-after 3 --out h.safetensors"),
    );
    ok(
        d,
        &format!("{train} --seed 6 --updates 6 --stop-after 3 --out other.safetensors"),
    );
    ok(
        d,
        &format!("{train} --seed 5 --updates 6 --out whole.safetensors"),
    );
    let log = std::fs::read_to_string(d.join("h.log.csv")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1 + 3, "{log}");
    let resume = "train --data d.npy --resume h.state.json --updates 6 --out r.safetensors";
    // Control: the intact log resumes into the uninterrupted run's log, bit for bit.
    ok(d, resume);
    assert_eq!(
        std::fs::read(d.join("r.log.csv")).unwrap(),
        std::fs::read(d.join("whole.log.csv")).unwrap()
    );
    let with_rows = |rows: &[&str]| rows.join("\n") + "\n";
    let mut garbage = lines.clone();
    garbage.insert(2, "garbage,row");
    let mut prepended = lines.clone();
    prepended.insert(1, lines[1]);
    let foreign = std::fs::read_to_string(d.join("other.log.csv")).unwrap();
    assert_ne!(foreign, log);
    for (what, text) in [
        ("a garbage row", with_rows(&garbage)),
        ("truncated", with_rows(&lines[..3])),
        ("a row prepended", with_rows(&prepended)),
        ("another run's", foreign),
    ] {
        std::fs::write(d.join("h.log.csv"), text).unwrap();
        let out = ebm()
            .current_dir(d)
            .args(
                resume
                    .replace("r.safetensors", "x.safetensors")
                    .split_whitespace(),
            )
            .output()
            .unwrap();
        assert_clean_failure(&out, what);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("h.log.csv") && stderr.contains("written with h.state.json"),
            "{what}: {stderr}"
        );
        assert!(!d.join("x.safetensors").exists(), "{what}: it ran");
    }
    // No log at all (a state copied alone): the resumed log starts afresh, said on stderr.
    std::fs::remove_file(d.join("h.log.csv")).unwrap();
    let stderr = ok_stderr(d, &resume.replace("r.safetensors", "y.safetensors"));
    assert!(
        stderr.contains("warning: no log beside h.state.json (h.log.csv): the log of the resumed run starts at update 4"),
        "{stderr}"
    );
    let fresh = std::fs::read_to_string(d.join("y.log.csv")).unwrap();
    assert_eq!(fresh.lines().count(), 1 + 3, "{fresh}");
    // A state written before the log was recorded (format version 1, no checksum, no
    // digest): the log must number its rows by increasing updates ending at the state's.
    let mut old = json(&d.join("h.state.json"));
    let obj = old.as_object_mut().unwrap();
    obj.remove("checksum");
    assert!(obj.remove("log").is_some());
    obj.insert("format_version".into(), 1.into());
    std::fs::write(d.join("v1.state.json"), old.to_string()).unwrap();
    std::fs::write(d.join("v1.log.csv"), with_rows(&lines[..3])).unwrap();
    fails(
        d,
        "train --data d.npy --resume v1.state.json --updates 6 --out v.safetensors",
        1,
        "its last row is update 2, the state is at update 3",
    );
    std::fs::write(d.join("v1.log.csv"), &log).unwrap();
    ok(
        d,
        "train --data d.npy --resume v1.state.json --updates 6 --out v.safetensors",
    );
    assert_eq!(
        std::fs::read(d.join("v.log.csv")).unwrap(),
        std::fs::read(d.join("whole.log.csv")).unwrap()
    );
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

/// A training run in progress has committed nothing yet, so no record
/// says which files are its; its lock lists them, and another command that would write one of
/// them (`sample --out k.npy` writes `k.json`) is refused before any work.
#[test]
fn a_command_does_not_write_over_the_files_of_a_run_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    ok(d, "train --data d.npy --updates 3 --out m.safetensors");
    // The lock a training run leaves lists every output it writes.
    let listed = std::fs::read_to_string(d.join("m.lock")).unwrap();
    for name in [
        "m.safetensors",
        "m.trajectory.safetensors",
        "m.state.json",
        "m.log.csv",
        "m.json",
    ] {
        assert!(
            listed.lines().any(|l| l == name),
            "{name} not in {listed:?}"
        );
    }
    // Run k in progress (here this test process holds its lock, as `ebm train` does).
    let k = d.join("k.safetensors");
    let written = [
        k.clone(),
        d.join("k.trajectory.safetensors"),
        d.join("k.state.json"),
        d.join("k.log.csv"),
        d.join("k.json"),
    ];
    let refs: Vec<&Path> = written.iter().map(|p| p.as_path()).collect();
    let lock = ebm_io::output::OutputLock::acquire_for(&k, &refs).unwrap();
    let sample = "sample --model m.safetensors --chains 2 --steps 2";
    fails(
        d,
        &format!("{sample} --out k.npy"),
        1,
        "cannot write k.json: another run is writing the outputs named after it",
    );
    assert!(!d.join("k.npy").exists());
    fails(
        d,
        "train --data d.npy --updates 3 --out k.trajectory.safetensors",
        1,
        "another run is writing",
    );
    // Files the run does not write are not refused.
    ok(d, &format!("{sample} --out k.samples.npy"));
    drop(lock);
    ok(d, &format!("{sample} --out k.npy"));
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

/// The update recorded in the model file, the state file and the run record: one output set.
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
    assert_eq!(
        json(&d.join(format!("{stem}.json")))["results"]["updates"],
        update,
        "the run record of {stem} describes another update than its outputs"
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
    // Resumes the killed run `stem` (outputs at `update`) and compares it with the full run.
    let resume = |k: usize, stem: &str, update: u64| {
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
    };
    let short = LONG.replace("--updates 300", "--updates 3");
    let long = |stem: &str| format!("train {LONG} --save-every 7 --out {stem}.safetensors");
    // Kill points spread over the run (SIGKILL: no chance to save anything), each on the
    // outputs of an earlier short run: whatever the kill interrupts, the model, state and
    // record on disk are one set, the earlier run's or a periodic save's. A kill that misses
    // the run (before the first periodic save, or after the end) resumes nothing.
    for (k, fraction) in [0.3, 0.55, 0.8].into_iter().enumerate() {
        let stem = format!("k{k}");
        ok(d, &format!("train {short} --out {stem}.safetensors"));
        let mut child = spawn(d, &long(&stem));
        std::thread::sleep(full.mul_f64(fraction));
        child.kill().unwrap();
        child.wait().unwrap();
        let update = assert_one_set(d, &stem);
        assert!(
            update.is_multiple_of(7) || update == 3 || update == 300,
            "{update}"
        );
        if update != 3 && update != 300 {
            resume(k, &stem, update);
        }
    }
    // One kill that lands mid-run on any machine: as soon as the record on disk shows the first
    // periodic save, the run is killed wherever it is (computing or writing a later save).
    let stem = "k3";
    ok(d, &format!("train {short} --out {stem}.safetensors"));
    let mut child = spawn(d, &long(stem));
    let watched = Instant::now();
    let saved = || {
        std::fs::read(d.join(format!("{stem}.json")))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["results"]["updates"].as_u64())
            .is_some_and(|u| u >= 7)
    };
    while !saved() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its first periodic save was seen"
        );
        assert!(
            watched.elapsed() < Duration::from_secs(120),
            "no periodic save"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let update = assert_one_set(d, stem);
    assert!(
        update.is_multiple_of(7) && update < 300,
        "killed after its first periodic save, the run left update {update}"
    );
    resume(3, stem, update);
}

/// Spawns `ebm train <args>` with the test hook `EBM_SIGNAL_READY`: the run creates the file
/// `marker` once its SIGINT/SIGTERM handlers are installed and an update is done, then waits
/// for a signal. Returns the child once the marker exists, so that a signal sent now stops
/// the run at that update, whatever the speed of the machine.
fn spawn_ready(d: &Path, args: &str, marker: &str) -> std::process::Child {
    let mut child = StdCommand::new(ebm_binary())
        .current_dir(d)
        .args(args.split_whitespace())
        .env("EBM_SIGNAL_READY", d.join(marker))
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !d.join(marker).exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("`ebm {args}` ended ({status}) without announcing itself");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "`ebm {args}` did not announce itself"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child
}

#[test]
fn sigint_and_sigterm_save_a_resumable_state_and_exit_with_their_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    big(d);
    let run = LONG.replace("--updates 300", "--updates 40");
    ok(d, &format!("train {run} --out full.safetensors"));
    // SIGINT after update 1 of a fresh run, then SIGTERM after update 2 of its resumed run:
    // each run announces itself (the test hook) and stops at that update, so the signal
    // can never arrive after the run has finished.
    let resumed =
        "train --data big.npy --resume sINT.state.json --updates 40 --out sTERM.safetensors";
    for (signal, code, args, at) in [
        ("INT", 130, format!("train {run} --out sINT.safetensors"), 1),
        ("TERM", 143, resumed.to_string(), 2),
    ] {
        let stem = format!("s{signal}");
        let child = spawn_ready(d, &args, &format!("ready-{signal}"));
        let status = StdCommand::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "interrupted by SIG{signal} after update {at} of 40"
            )),
            "{stderr}"
        );
        assert_eq!(assert_one_set(d, &stem), at);
        assert_eq!(
            json(&d.join(format!("{stem}.json")))["results"]["updates"],
            at
        );
    }
    ok(
        d,
        "train --data big.npy --resume sTERM.state.json --updates 40 --out r.safetensors",
    );
    for file in ["safetensors", "trajectory.safetensors"] {
        assert!(
            bytes(&d.join(format!("full.{file}"))) == bytes(&d.join(format!("r.{file}"))),
            "{file}: resumed twice after signals, not the uninterrupted run"
        );
    }
}

#[test]
fn a_renamed_checksum_key_does_not_let_an_edit_through() {
    let dir = trained();
    let d = dir.path();
    // The state's "checksum" key misspelled by one letter, and the learning rate edited.
    let text = std::fs::read_to_string(d.join("pcd.state.json")).unwrap();
    let renamed = text.replacen("\"checksum\"", "\"checksun\"", 1);
    assert_ne!(renamed, text);
    let mut state: Value = serde_json::from_str(&renamed).unwrap();
    *state.pointer_mut("/config/trainer/learning_rate").unwrap() =
        serde_json::json!({"Constant": 0.5});
    std::fs::write(d.join("renamed.state.json"), state.to_string()).unwrap();
    fails(
        d,
        "train --data d.npy --resume renamed.state.json --updates 9 --out r.safetensors",
        1,
        "renamed.state.json at checksum: no \"checksum\" field",
    );
    // A state of format version 1 without a checksum (written before checksums) resumes.
    let mut old = json(&d.join("pcd.state.json"));
    old.as_object_mut().unwrap().remove("checksum");
    assert_eq!(old["format_version"], 2);
    old["format_version"] = 1.into();
    std::fs::write(d.join("v1.state.json"), old.to_string()).unwrap();
    ok(
        d,
        "train --data d.npy --resume v1.state.json --updates 9 --out r1.safetensors",
    );
    // The model's metadata key misspelled, and a weight edited.
    let model = bytes(&d.join("pcd.safetensors"));
    let n = u64::from_le_bytes(model[..8].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&model[8..8 + n]).unwrap();
    let meta = header["__metadata__"].as_object_mut().unwrap();
    let sum = meta.remove("checksum").unwrap();
    meta.insert("checksun".into(), sum);
    let text = header.to_string();
    let mut file = (text.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(text.as_bytes());
    file.extend_from_slice(&model[8 + n..]);
    let last = file.len() - 3;
    file[last] ^= 0x01;
    std::fs::write(d.join("renamed.safetensors"), file).unwrap();
    fails(
        d,
        "loglik exact --model renamed.safetensors --data d.npy",
        1,
        "renamed.safetensors at checksum: the metadata has no \"checksum\" entry",
    );
}

/// Runs `ebm <args>` in `d` and expects it to fail within 30 s (a hang on a FIFO or an
/// endless device fails the test instead of blocking it), as [`fails`] checks: exit code 1,
/// one `error:` line containing every needle.
fn fails_quickly(d: &Path, args: &str, needles: &[&str]) {
    let out = run_within(d, args, Duration::from_secs(30), true)
        .unwrap_or_else(|| panic!("ebm {args}: still running after 30 s"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "ebm {args}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "ebm {args}: {stderr}");
    assert!(stderr.starts_with("error: "), "ebm {args}: {stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "ebm {args}: {stderr} lacks {needle:?}"
        );
    }
    assert!(out.stdout.is_empty(), "ebm {args}: printed on stdout");
}

#[test]
#[cfg(unix)]
fn fifos_and_devices_as_inputs_are_refused_at_once() {
    let dir = trained();
    let d = dir.path();
    for name in [
        "fifo.npy",
        "fifo.csv",
        "fifo.safetensors",
        "fifo.state.json",
    ] {
        let made = StdCommand::new("mkfifo")
            .arg(d.join(name))
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {name}");
    }
    let fifo = ["fifo", "a FIFO", "expected a regular file"];
    for args in [
        "train --data fifo.npy --hidden-units 3 --updates 2 --out f1.safetensors",
        "data info fifo.csv",
        "sample --model fifo.safetensors --chains 2 --steps 2 --out f2.npy",
        "loglik exact --model fifo.safetensors --data d.npy",
        "train --data d.npy --resume fifo.state.json --updates 9 --out f3.safetensors",
    ] {
        fails_quickly(d, args, &fifo);
    }
    // /dev/zero, directly and through a symbolic link with the extension of the input.
    for name in ["zero.csv", "zero.state.json", "zero.safetensors"] {
        std::os::unix::fs::symlink("/dev/zero", d.join(name)).unwrap();
    }
    let device = ["a character device", "expected a regular file"];
    for args in [
        "data info zero.csv",
        "train --data zero.csv --hidden-units 3 --updates 2 --out z1.safetensors",
        "train --data d.npy --resume zero.state.json --updates 9 --out z2.safetensors",
        "train --data d.npy --resume /dev/zero --updates 9 --out z3.safetensors",
        "loglik exact --model zero.safetensors --data d.npy",
        "train --data d.npy --resume /dev/urandom --updates 9 --out z4.safetensors",
    ] {
        fails_quickly(d, args, &device);
    }
    // A directory.
    std::fs::create_dir(d.join("dir.npy")).unwrap();
    fails_quickly(
        d,
        "data info dir.npy",
        &["dir.npy", "a directory", "expected a regular file"],
    );
}

/// An output that would overwrite a file of another run's output set is
/// refused before any work (`sample --out k.npy` wrote its record over the training record
/// `k.json`; `train --out k.trajectory.safetensors` overwrote run k's trajectory); writing
/// one's own outputs again is not.
#[test]
fn an_output_name_that_would_overwrite_another_runs_file_is_refused() {
    let dir = trained();
    let d = dir.path();
    let before = (
        bytes(&d.join("pcd.json")),
        bytes(&d.join("pcd.trajectory.safetensors")),
    );
    fails(
        d,
        "sample --model pcd.safetensors --chains 2 --steps 2 --out pcd.npy",
        1,
        "output pcd.json would overwrite a file of another run's outputs (ebm train, recorded in",
    );
    fails(
        d,
        "train --data d.npy --hidden-units 3 --updates 2 --batch-size 10 \
         --out pcd.trajectory.safetensors",
        1,
        "output pcd.trajectory.safetensors would overwrite a file of another run's outputs",
    );
    assert!(!d.join("pcd.npy").exists());
    assert_eq!(
        before,
        (
            bytes(&d.join("pcd.json")),
            bytes(&d.join("pcd.trajectory.safetensors"))
        )
    );
    // Controls: the same commands under other names, each twice (its own outputs rewritten).
    for _ in 0..2 {
        ok(
            d,
            "sample --model pcd.safetensors --chains 2 --steps 2 --out s.npy",
        );
        ok(
            d,
            "train --data d.npy --hidden-units 3 --updates 2 --batch-size 10 --out t.safetensors",
        );
    }
}

/// An output directory where no file can be created fails before any work
/// (`/proc` refuses new files even to root, for whom permissions do not hold), where `sample`,
/// `loglik`, `tmc` and `data generate` used to fail only after computing.
#[test]
#[cfg(target_os = "linux")]
fn an_unwritable_output_directory_fails_before_any_work() {
    let dir = trained();
    let d = dir.path();
    for args in [
        "sample --model pcd.safetensors --chains 2 --steps 1000000000 --out /proc/s.npy",
        "loglik ais --model pcd.safetensors --data d.npy --chains 100000 --rungs 1000000 \
         --out /proc/l.json",
        "tmc profile --model pcd.safetensors --grid-points 3 --replicas 2 --burn-in 1000000000 \
         --measure 2 --out /proc/t.csv",
        "data generate clusters mickey --features 8 --samples 10 --out /proc/g.npy",
    ] {
        fails_quickly(d, args, &["cannot write /proc/", "is not writable"]);
    }
}

/// A run killed after the commit point of its outputs, before the renames,
/// leaves a committed staging directory; the next command that reads any file of that set
/// (here `sample` reading the model) finishes the commit first, so that it never reads a set
/// half at one update and half at another.
#[test]
fn a_command_reading_a_set_finishes_its_interrupted_commit_first() {
    let dir = trained();
    let d = dir.path();
    let staging = d.join(".pcd.safetensors.staging");
    std::fs::create_dir(&staging).unwrap();
    let mut record = json(&d.join("pcd.json"));
    record["marker"] = "committed, not yet renamed".into();
    std::fs::write(staging.join("0-pcd.json"), record.to_string()).unwrap();
    std::fs::copy(d.join("pcd.safetensors"), staging.join("1-pcd.safetensors")).unwrap();
    let here = std::fs::canonicalize(d).unwrap();
    let manifest = [
        ("0-pcd.json", here.join("pcd.json")),
        ("1-pcd.safetensors", here.join("pcd.safetensors")),
    ];
    std::fs::write(
        staging.join("COMMITTED"),
        serde_json::to_vec(&manifest).unwrap(),
    )
    .unwrap();
    ok(
        d,
        "sample --model pcd.safetensors --chains 2 --steps 2 --out s.npy",
    );
    assert!(!staging.exists());
    assert_eq!(
        json(&d.join("pcd.json"))["marker"],
        "committed, not yet renamed"
    );
}

/// The replica index process of a tempering run (and BAR's works in `loglik
/// ptt`) grows with every round; the memory check counts it, so that a run whose records would
/// not fit is a typed error before any work, where it used to grow without bound.
#[test]
fn tempering_records_that_would_outgrow_memory_are_refused_before_the_run() {
    let dir = trained();
    let d = dir.path();
    for args in [
        "sample --model pcd.safetensors --sampler pt --chains 64 --rungs 1000 \
         --steps 100000000 --out s1.npy",
        "sample --sampler ptt --trajectory pcd.trajectory.safetensors --chains 64 \
         --steps 1000000000000 --out s2.npy",
        "loglik ptt --trajectory pcd.trajectory.safetensors --data d.npy --chains 64 \
         --steps 1000000000000",
    ] {
        fails_quickly(d, args, &["needs about", "MiB of memory"]);
    }
    // Control: the same runs at a reasonable length work.
    ok(
        d,
        "sample --model pcd.safetensors --sampler pt --chains 64 --rungs 10 --steps 20 --out s3.npy",
    );
}

/// A model whose free energies overflow f64 (one weight of 1e308) gives no
/// log-likelihood: `inf +- inf` with exit code 0 used to be printed; now it is an error naming
/// the data and the cause. The same model with a weight of 1 is the control.
#[test]
fn an_overflowing_log_likelihood_is_an_error_not_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    for (name, w) in [("huge", 1e308), ("fine", 1.0)] {
        let mut weights = DMatrix::zeros(8, 3);
        weights[(0, 0)] = w;
        let rbm = ebm_models::Rbm::new(
            ebm_models::Bernoulli::<f64>::zeros(8),
            ebm_models::Bernoulli::<f64>::zeros(3),
            weights,
        )
        .unwrap();
        ebm_io::save_rbm(&rbm, &d.join(format!("{name}.safetensors"))).unwrap();
    }
    for command in ["loglik exact", "loglik ais --chains 50 --rungs 20"] {
        fails(
            d,
            &format!("{command} --model huge.safetensors --data d.npy"),
            1,
            "not finite",
        );
        ok(
            d,
            &format!("{command} --model fine.safetensors --data d.npy"),
        );
    }
}

/// `--time-limit` stops a run after the first update past the limit, every
/// output written and a warning saying how to continue (exit code 0); the state resumes to the
/// uninterrupted run bit for bit.
#[test]
fn a_time_limit_stops_a_run_with_a_resumable_state() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_npy(&d.join("d.npy"), clusters(8, 40));
    let train = "train --data d.npy --hidden-units 3 --chains 20 --batch-size 10 --seed 5";
    let started = Instant::now();
    let out = ebm()
        .current_dir(d)
        .args(
            format!("{train} --updates 100000000 --time-limit 1 --out t.safetensors")
                .split_whitespace(),
        )
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("stopped by --time-limit after update")
            && stderr.contains("--resume t.state.json --updates 100000000"),
        "{stderr}"
    );
    let stopped = json(&d.join("t.state.json"))["state"]["update"]
        .as_u64()
        .unwrap();
    assert!(stopped > 0 && stopped < 100_000_000, "{stopped}");
    let end = stopped + 5;
    ok(
        d,
        &format!("train --data d.npy --resume t.state.json --updates {end} --out r.safetensors"),
    );
    ok(
        d,
        &format!("{train} --updates {end} --out whole.safetensors"),
    );
    assert_eq!(
        bytes(&d.join("r.safetensors")),
        bytes(&d.join("whole.safetensors"))
    );
}

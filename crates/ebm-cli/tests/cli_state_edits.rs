//! Every field of the state file of every negative phase, edited to every
//! hostile value with a valid checksum (a deliberate edit), resumes or fails cleanly: exit
//! code at most 2, no panic, one `error:` line. A state is checked against what the command
//! line would accept and against the run, field by field.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{json, ok, run_within, write_signed_json};
use ebm_data::{Dataset, Domain};
use nalgebra::DMatrix;
use serde_json::Value;

/// Every negative phase (and the Potts units, the pretrained start and the online
/// log-likelihood, whose settings and state live in the same file), each a run of 4 updates
/// on 8 x 40 binary data (`d.npy`), the pretrained one on 64 x 200 (`p.npy`: the RCM needs
/// more than 8 units).
const RUNS: [(&str, &str, &str); 7] = [
    (
        "pcd",
        "d.npy",
        "--negative pcd --sweeps 2 --chains 10 --loglik-every 2 --loglik-chains 10 \
         --optimizer adam",
    ),
    ("cd", "d.npy", "--negative cd --sweeps 1 --momentum 0.5"),
    (
        "pt",
        "d.npy",
        "--negative pt --rungs 3 --chains 6 --lr-schedule linear --final-learning-rate 0.001",
    ),
    ("jarzynski", "d.npy", "--negative jarzynski --chains 10"),
    (
        "tmc",
        "d.npy",
        "--negative tmc --alpha 400 --grid-points 5 --replicas 2 --sweeps 2 --measure 2",
    ),
    (
        "bridged",
        "p.npy",
        "--pretrain rcm --rcm-directions 1 --rcm-mesh 60 --rcm-hyperplanes 40 \
         --negative bridged --rungs 3 --chains 6",
    ),
    (
        "potts",
        "q.npy",
        "--visible potts --visible-states 2 --hidden potts --hidden-states 2 --negative pcd \
         --sweeps 1 --chains 6",
    ),
];

/// The JSON pointers of every field of `v`: every object member and, of an array, the array
/// itself and its first element (recursively; the other elements are the same field).
fn fields(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Array(a) if !a.is_empty() => fields(&a[0], format!("{at}/0"), out),
        Value::Object(m) => {
            for (k, x) in m {
                if at.is_empty() && k == "checksum" {
                    continue;
                }
                fields(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        _ => {}
    }
}

/// The hostile values a field is set to: by its type (a number off by one, negated or zero;
/// an array emptied, with one element dropped or repeated, or reversed; a boolean flipped),
/// and three of a list of every JSON type and of the edges of the integer and float ranges,
/// chosen by `salt` so that the fields of one type between them meet every value of the
/// list.
fn edits(v: &Value, salt: usize) -> Vec<Value> {
    let list: [Value; 11] = [
        (-1).into(),
        2.into(),
        0.5.into(),
        1e308.into(),
        (-1e308).into(),
        u64::MAX.into(),
        4_294_967_296u64.into(),
        Value::Null,
        "x".into(),
        Value::Array(vec![]),
        serde_json::json!({}),
    ];
    let mut out: Vec<Value> = (0..3)
        .map(|k| list[(salt + 4 * k) % list.len()].clone())
        .collect();
    match v {
        Value::Array(a) if !a.is_empty() => {
            out.push(Value::Array(vec![]));
            out.push(Value::Array(a[..a.len() - 1].to_vec()));
            let mut longer = a.clone();
            longer.push(a[0].clone());
            out.push(Value::Array(longer));
            if a.len() > 1 {
                out.push(Value::Array(a.iter().rev().cloned().collect()));
            }
        }
        Value::Bool(b) => out.push((!b).into()),
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.extend([0.into(), (x + 1.0).into(), (-x).into()]);
            }
        }
        _ => out.push(0.into()),
    }
    out.retain(|e| e != v);
    out
}

/// Whether the run `name` edits the field at `pointer`: the first run edits every field, the
/// others those of their own (the negative phase's settings and state, the layers, the
/// pretraining); the fields every run shares are edited once.
fn own_field(name: &str, pointer: &str) -> bool {
    name == RUNS[0].0
        || [
            "/config/trainer/negative",
            "/state/negative",
            "/config/visible",
            "/config/hidden",
            "/config/pretrain",
            "/state/model",
        ]
        .iter()
        .any(|p| pointer.starts_with(p))
}

/// Resumes `state` for at most a few seconds: a run still going by then has passed
/// validation and is working (an edited sweep count may ask for 2^32 sweeps); one that ended
/// must have ended cleanly. Returns the failure, if any.
fn resume_bounded(d: &Path, data: &str, state: &str, updates: u64, out: &str) -> Option<String> {
    let args = format!("train --data {data} --resume {state} --updates {updates} --out {out}");
    let done = run_within(d, &args, Duration::from_secs(2), false)?;
    let stderr = String::from_utf8_lossy(&done.stderr);
    let code = done.status.code();
    let clean = !stderr.contains("panicked")
        && !stderr.contains("internal error")
        && code.is_some_and(|c| c <= 2)
        && (code == Some(0) || stderr.lines().any(|l| l.starts_with("error: ")));
    (!clean).then(|| format!("{code:?} {}", stderr.trim()))
}

#[test]
fn every_field_of_every_negative_phase_state_edited_resumes_or_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = DMatrix::from_fn(8, 40, |i, j| {
        let on = (i < 4) == j.is_multiple_of(2);
        let flip = (i * 31 + j * 17).is_multiple_of(20);
        (on != flip) as u8 as f64
    });
    let ds = Dataset::new(data, Domain::Binary01).unwrap();
    ebm_data::loaders::npy::save_npy(d.join("d.npy"), &ds).unwrap();
    // 4 Potts sites of 2 states, one-hot: site s in state bit s of the binary sample.
    let one_hot = DMatrix::from_fn(8, 40, |i, j| {
        (ds.data()[(i / 2, j)] as usize == i % 2) as u8 as f64
    });
    let ds = Dataset::new(one_hot, Domain::OneHot { q: 2 }).unwrap();
    ebm_data::loaders::npy::save_npy(d.join("q.npy"), &ds).unwrap();
    ok(
        d,
        "data generate clusters mickey --features 64 --samples 200 --domain binary --seed 3 \
         --out p.npy",
    );
    let mut cases = Vec::new();
    let mut states = std::collections::HashMap::new();
    for (name, data, options) in RUNS {
        ok(
            d,
            &format!(
                "--quiet train --data {data} --hidden-units 3 --batch-size 10 --seed 3 \
                 --updates 6 --stop-after 4 {options} --out {name}.safetensors"
            ),
        );
        // Control: the unedited state resumes.
        assert_eq!(
            resume_bounded(
                d,
                data,
                &format!("{name}.state.json"),
                6,
                &format!("{name}-r.safetensors")
            ),
            None,
            "{name}"
        );
        let state = json(&d.join(format!("{name}.state.json")));
        let mut pointers = Vec::new();
        fields(&state, String::new(), &mut pointers);
        for pointer in pointers
            .into_iter()
            .filter(|p| !p.is_empty() && own_field(name, p))
        {
            let salt = cases.len();
            for value in edits(state.pointer(&pointer).unwrap(), salt) {
                cases.push((name, data, pointer.clone(), value));
            }
        }
        states.insert(name, state);
    }
    eprintln!("{} edits", cases.len());
    assert!(cases.len() > 1000, "{} edits", cases.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((name, data, pointer, value)) = cases.get(k) else {
                        break;
                    };
                    let mut edited = states[name].clone();
                    *edited.pointer_mut(pointer).unwrap() = value.clone();
                    let file = format!("in{k}.state.json");
                    write_signed_json(&d.join(&file), edited);
                    std::fs::copy(
                        d.join(format!("{name}.log.csv")),
                        d.join(format!("in{k}.log.csv")),
                    )
                    .unwrap();
                    if let Some(f) = resume_bounded(d, data, &file, 6, &format!("e{k}.safetensors"))
                    {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{name} {pointer} = {value}: {f}"));
                    }
                    for f in std::fs::read_dir(d).unwrap().flatten() {
                        let n = f.file_name().to_string_lossy().into_owned();
                        if n.starts_with(&format!("e{k}.")) || n.starts_with(&format!("in{k}.")) {
                            let _ = std::fs::remove_file(f.path());
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} edits fail uncleanly:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

//! `ebm train --pretrain rcm` end to end: the run record's pre-training report (mesh log Z
//! against the exact log Z of the initial model), the figure, the trajectory starting at the
//! pre-trained model, and the clear one-line errors for bad input.

mod common;
use common::ebm_binary;

use std::path::Path;
use std::process::Command;

use ebm_core::Par;
use ebm_models::{Bernoulli, Rbm, exact};
use serde_json::Value;

/// Runs `ebm <args>` in `dir`; returns (success, stderr).
fn ebm(dir: &Path, args: &str) -> (bool, String) {
    let out = Command::new(ebm_binary())
        .current_dir(dir)
        .args(args.split_whitespace())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `ebm <args>` must fail with one `error:` line containing `needle`.
fn fails(dir: &Path, args: &str, needle: &str) {
    let (ok, stderr) = ebm(dir, args);
    assert!(!ok, "ebm {args} succeeded");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "ebm {args}: {stderr:?}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(needle),
        "ebm {args}: {stderr:?} lacks {needle:?}"
    );
}

/// Writes `dir/name`: 1500 binary samples of the Mickey clusters on 64 features (seed 3).
fn mickey(dir: &Path, name: &str) {
    let (ok, err) = ebm(
        dir,
        &format!(
            "data generate clusters mickey --features 64 --samples 1500 --domain binary \
             --seed 3 --out {name}"
        ),
    );
    assert!(ok, "{err}");
}

#[test]
fn pretrained_run_reports_and_starts_from_the_low_rank_model() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mickey(d, "mickey.npy");
    let (ok, err) = ebm(
        d,
        "--quiet train --data mickey.npy --pretrain rcm --rcm-directions 2 --rcm-mesh 24 \
         --rcm-hyperplanes 40 --hidden-units 10 --updates 20 --out m.safetensors",
    );
    assert!(ok, "{err}");
    assert!(d.join("m.pretrain.svg").is_file());
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("m.json")).unwrap()).unwrap();
    let p = &record["results"]["pretrain"];
    eprintln!("{p}");
    assert_eq!(p["dimensions"], 3);
    let kept = p["hyperplanes_kept"].as_u64().unwrap();
    assert!((1..=10).contains(&kept));
    assert!(p["mesh_points"].as_u64().unwrap() > 0);
    assert!(p["rcm_objective"].as_f64().unwrap().is_finite());
    // The mesh log Z of the initial model is within its discretisation error (well below 0.05
    // at N = 64, cf. the ebm-train tests) of the exact one.
    let (mesh, exact_z) = (
        p["log_z_mesh"].as_f64().unwrap(),
        p["log_z_exact"].as_f64().unwrap(),
    );
    assert!((mesh - exact_z).abs() < 0.05, "{mesh} vs {exact_z}");
    // 10 hidden units: the persistent chains are exact draws, and the static sampler's
    // importance weights against the model give its exact log Z.
    assert_eq!(p["chains_start"], "exact");
    let check = &p["static_check"];
    let (z, se) = (
        check["log_z"].as_f64().unwrap(),
        check["std_err"].as_f64().unwrap(),
    );
    assert!(
        (z - exact_z).abs() < 3.0 * se + 0.01,
        "{check} vs {exact_z}"
    );
    assert!(check["relative_ess"].as_f64().unwrap() > 0.1, "{check}");
    assert_eq!(p["warnings"].as_array().map(Vec::len), Some(0), "{p}");
    // The trajectory's first checkpoint is the pre-trained model: its exact log Z is the one
    // reported.
    let traj = ebm_io::load_trajectory::<Bernoulli<f64>, Bernoulli<f64>>(
        &d.join("m.trajectory.safetensors"),
    )
    .unwrap();
    let first: &Rbm<Bernoulli<f64>, Bernoulli<f64>> = &traj.models()[0];
    let z0 = exact::log_partition_by_hidden(first, 1.0, Par::Seq).unwrap();
    assert!((z0 - exact_z).abs() < 1e-9, "{z0} vs {exact_z}");
}

/// Every rung of a PT or bridged negative phase, and Jarzynski's chains, start from exact draws
/// of the pretrained model (at each rung's own inverse temperature), as PCD's do; PT's and
/// Jarzynski's used to start from one sweep of a single configuration.
#[test]
fn tempered_and_reweighted_chains_start_from_the_pretrained_model() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mickey(d, "mickey.npy");
    for (name, negative) in [
        ("pt", "--negative pt --rungs 3"),
        ("jz", "--negative jarzynski"),
        ("br", "--negative bridged --rungs 3"),
    ] {
        let (ok, err) = ebm(
            d,
            &format!(
                "--quiet train --data mickey.npy --pretrain rcm --rcm-directions 1 \
                 --rcm-mesh 60 --rcm-hyperplanes 40 --hidden-units 8 --updates 2 {negative} \
                 --out {name}.safetensors"
            ),
        );
        assert!(ok, "{negative}: {err}");
        let record: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join(format!("{name}.json"))).unwrap())
                .unwrap();
        let p = &record["results"]["pretrain"];
        assert_eq!(p["chains_start"], "exact", "{negative}: {p}");
        assert!(p["static_check"]["relative_ess"].as_f64().is_some(), "{p}");
    }
    // The bridge's reference (the pretrained model) lives in the state: a run stopped and
    // resumed equals the uninterrupted one bit for bit.
    let run = "--quiet train --data mickey.npy --pretrain rcm --rcm-directions 1 --rcm-mesh 60 \
               --rcm-hyperplanes 40 --hidden-units 8 --updates 6 --negative bridged --rungs 3 \
               --loglik-every 3";
    for args in [
        format!("{run} --out whole.safetensors"),
        format!("{run} --stop-after 3 --out half.safetensors"),
        "--quiet train --data mickey.npy --resume half.state.json --updates 6 --out \
         resumed.safetensors"
            .to_string(),
    ] {
        let (ok, err) = ebm(d, &args);
        assert!(ok, "{args}: {err}");
    }
    for ext in ["safetensors", "log.csv", "trajectory.safetensors"] {
        let read = |name: &str| std::fs::read(d.join(format!("{name}.{ext}"))).unwrap();
        assert_eq!(read("whole"), read("resumed"), "{ext}");
    }
}

#[test]
fn bad_pretraining_input_gives_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ok, err) = ebm(
        d,
        "data generate clusters mickey --features 32 --samples 200 --domain binary --out b.npy",
    );
    assert!(ok, "{err}");
    let base = "train --data b.npy --updates 2 --out m.safetensors";
    fails(
        d,
        &format!("{base} --pretrain rcm --rcm-directions 0"),
        "--rcm-directions 0",
    );
    fails(
        d,
        &format!("{base} --pretrain rcm --rcm-directions 5"),
        "1 to 4 principal directions",
    );
    fails(
        d,
        &format!("{base} --rcm-directions 2"),
        "--pretrain rcm only",
    );
    fails(
        d,
        &format!("{base} --pretrain rcm --visible gaussian"),
        "needs binary units",
    );
    fails(
        d,
        &format!("{base} --pretrain rcm --rcm-directions 4 --rcm-mesh 100"),
        "exceed the limit",
    );
    // Real-valued data cannot feed binary units.
    std::fs::write(d.join("r.csv"), "0.5,1\n0,1\n1,0\n").unwrap();
    let (ok, _) = ebm(
        d,
        "train --data r.csv --pretrain rcm --visible bernoulli --updates 2 --out r.safetensors",
    );
    assert!(!ok);
}

#[test]
fn ptt_refreshes_a_large_low_rank_first_checkpoint_statically() {
    // 24 hidden units are too many to enumerate: rung 0 (the pretrained, still low-rank model)
    // is refreshed by the static sampler, and the record says so.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mickey(d, "d.npy");
    let (ok, err) = ebm(
        d,
        "--quiet train --data d.npy --pretrain rcm --rcm-directions 2 --rcm-mesh 24 \
         --rcm-hyperplanes 40 --hidden-units 24 --updates 5 --out m.safetensors",
    );
    assert!(ok, "{err}");
    // 24 hidden units: too many to draw exactly, so the persistent chains are static draws
    // importance-resampled to the model, and the record says how many count.
    let train: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("m.json")).unwrap()).unwrap();
    let p = &train["results"]["pretrain"];
    assert_eq!(p["chains_start"], "resampled", "{p}");
    assert!(
        p["static_check"]["relative_ess"].as_f64().unwrap() > 0.1,
        "{p}"
    );
    let (ok, err) = ebm(
        d,
        "--quiet sample --sampler ptt --trajectory m.trajectory.safetensors --chains 50 \
         --steps 20 --out s.npy",
    );
    assert!(ok, "{err}");
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("s.json")).unwrap()).unwrap();
    let pt = &record["results"]["pt"];
    assert_eq!(pt["rung0"], "static-mh", "{pt}");
    let acceptance = pt["rung0_acceptance"].as_f64().unwrap();
    assert!(acceptance > 0.0 && acceptance <= 1.0, "{pt}");
}

/// `--precision f32` pre-trains in f64 and starts from that model rounded to f32: the f32
/// trajectory's first checkpoint is the f64 run's, rounded entry by entry; the record's exact
/// log Z is the rounded model's own; the persistent chains are drawn as in f64 (exactly with
/// 10 hidden units, by importance resampling with 24).
#[test]
fn f32_runs_start_from_the_f64_fit_rounded() {
    type Single = Rbm<Bernoulli<f32>, Bernoulli<f32>>;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mickey(d, "mickey.npy");
    for (hidden, chains) in [(10, "exact"), (24, "resampled")] {
        let mut records = Vec::new();
        for precision in ["f64", "f32"] {
            let (ok, err) = ebm(
                d,
                &format!(
                    "--quiet train --data mickey.npy --pretrain rcm --rcm-directions 2 \
                     --rcm-mesh 24 --rcm-hyperplanes 40 --hidden-units {hidden} --updates 3 \
                     --precision {precision} --out {precision}-{hidden}.safetensors"
                ),
            );
            assert!(ok, "{precision}, {hidden} hidden: {err}");
            let path = d.join(format!("{precision}-{hidden}.json"));
            let record: Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            assert_eq!(record["results"]["precision"], precision);
            records.push(record["results"]["pretrain"].clone());
        }
        let trajectory = |p: &str| d.join(format!("{p}-{hidden}.trajectory.safetensors"));
        let double = ebm_io::load_trajectory::<Bernoulli, Bernoulli>(&trajectory("f64")).unwrap();
        let single =
            ebm_io::load_trajectory::<Bernoulli<f32>, Bernoulli<f32>>(&trajectory("f32")).unwrap();
        let rounded: Single = double.models()[0].to_scalar().unwrap();
        assert_eq!(single.models()[0], rounded, "{hidden} hidden units");
        let (p64, p32) = (&records[0], &records[1]);
        assert_eq!(p64["log_z_mesh"], p32["log_z_mesh"], "the same fit");
        assert_eq!(p32["chains_start"], chains, "{p32}");
        assert_eq!(p32["warnings"].as_array().map(Vec::len), Some(0), "{p32}");
        if hidden == 10 {
            let widened: Rbm<Bernoulli, Bernoulli> = rounded.to_scalar().unwrap();
            let z = exact::log_partition_by_hidden(&widened, 1.0, Par::Seq).unwrap();
            let reported = p32["log_z_exact"].as_f64().unwrap();
            assert!((reported - z).abs() < 1e-9, "{reported} vs {z}");
        } else {
            assert!(p32["log_z_exact"].is_null(), "{p32}");
        }
    }
}

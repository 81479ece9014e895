//! `mpirun -n K ebm sample` and `mpirun -n K ebm loglik ais` (feature `mpi`): every process
//! runs its shard of the chains, rank 0 writes outputs byte-identical to a one-process run,
//! and its record says how many processes ran. Without the feature, a program started by an
//! MPI launcher refuses to run instead of duplicating the work and racing on the outputs.
//! The MPI tests need `mpirun` on the PATH (`.ci/run` installs MPICH).

#[path = "../crates/ebm-cli/tests/common/mod.rs"]
mod common;

use std::path::Path;

use common::*;
use ebm_models::{Bernoulli, Rbm};
use nalgebra::DMatrix;

/// Writes `m.safetensors` in `dir`, a 20 x 12 Bernoulli RBM with weights strong enough to
/// couple the units, and `t.safetensors`, a trajectory of 6 checkpoints from zero weights to
/// it.
fn save_model(dir: &Path) {
    let w = DMatrix::from_fn(20, 12, |i, j| 0.15 * (((i * 7 + j * 5) % 11) as f64 - 5.0));
    let visible = Bernoulli::new((0..20).map(|i| 0.05 * (i % 4) as f64 - 0.1).collect());
    let hidden = Bernoulli::new((0..12).map(|j| 0.1 - 0.02 * j as f64).collect());
    let rbm = Rbm::new(visible.clone(), hidden.clone(), w).unwrap();
    let start = Rbm::new(visible, hidden, DMatrix::zeros(20, 12)).unwrap();
    let checkpoints = (0..6).map(|k| (10 * k as u64, rbm.interpolate(&start, k as f64 / 5.0)));
    let checkpoints = checkpoints.map(|(u, m)| (u, m.unwrap()));
    let trajectory = ebm_io::Trajectory::from_checkpoints(checkpoints).unwrap();
    ebm_io::save_trajectory(&trajectory, &dir.join("t.safetensors")).unwrap();
    ebm_io::save_rbm(&rbm, &dir.join("m.safetensors")).unwrap();
}

#[cfg(not(feature = "mpi"))]
#[test]
fn a_program_without_the_feature_refuses_to_run_as_one_of_several_mpi_processes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_model(d);
    let run = "sample --model m.safetensors --chains 10 --steps 2 --out s.npy";
    // MPICH / Intel MPI, Open MPI, MVAPICH2, Slurm's srun; PMIx and Hydra's per-node count
    // (rank 2 of PMIx: at least 3 processes).
    for (variable, value, says) in [
        ("PMI_SIZE", "3", "one of 3 processes"),
        ("OMPI_COMM_WORLD_SIZE", "3", "one of 3 processes"),
        ("MV2_COMM_WORLD_SIZE", "3", "one of 3 processes"),
        ("SLURM_STEP_NUM_TASKS", "3", "one of 3 processes"),
        ("PMIX_RANK", "2", "one of at least 3 processes"),
        ("MPI_LOCALNRANKS", "3", "one of at least 3 processes"),
    ] {
        let out = ebm()
            .current_dir(d)
            .env(variable, value)
            .args(run.split_whitespace())
            .output();
        let out = out.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{variable}: {stderr}");
        assert!(
            stderr.contains(says)
                && stderr.contains(variable)
                && stderr.contains("without the feature `mpi`"),
            "{stderr}"
        );
        assert!(!d.join("s.npy").exists(), "a refused run wrote its output");
    }
    // Negative controls: a launcher that started this process alone, and a Slurm batch
    // script (one task of a job of 4) are no reason to refuse.
    for (variable, value) in [("PMI_SIZE", "1"), ("SLURM_NTASKS", "4")] {
        let out = ebm()
            .current_dir(d)
            .env(variable, value)
            .args(run.split_whitespace())
            .output();
        assert!(out.unwrap().status.success(), "{variable}={value}");
        assert!(d.join("s.npy").exists());
        std::fs::remove_file(d.join("s.npy")).unwrap();
    }
}

/// Runs `mpirun -n ranks ebm <args>` in `dir` (oversubscribed beyond the cores); returns its
/// output.
#[cfg(feature = "mpi")]
fn mpirun(dir: &Path, ranks: usize, args: &str) -> std::process::Output {
    std::process::Command::new("mpirun")
        .current_dir(dir)
        .args(["-n", &ranks.to_string()])
        .arg(ebm_binary())
        .args(args.split_whitespace())
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("mpirun runs (install MPICH: apt-get install mpich libmpich-dev)")
}

/// A run record without its `ranks` (checked to be `ranks`), its wall-clock time and its
/// checksum (which covers both): what must not depend on the number of processes.
#[cfg(feature = "mpi")]
fn record_without_ranks(path: &Path, ranks: u64) -> serde_json::Value {
    let mut record = json(path);
    let fields = record.as_object_mut().unwrap();
    assert_eq!(
        fields.remove("ranks"),
        Some(serde_json::Value::from(ranks)),
        "{}",
        path.display()
    );
    fields.remove("elapsed_seconds").expect("a wall-clock time");
    assert!(
        fields.remove("checksum").is_some_and(|c| c.is_string()),
        "{}: no checksum",
        path.display()
    );
    record
}

/// The files `files` that `ebm args` wrote in `one` (one process) and in `sharded` (`ranks`
/// processes) are the same: sample files byte for byte, run records apart from `ranks`, the
/// elapsed time and the checksum.
#[cfg(feature = "mpi")]
fn assert_same_files(one: &Path, sharded: &Path, ranks: usize, args: &str, files: &[&str]) {
    for file in files {
        let (a, b) = (one.join(file), sharded.join(file));
        if file.ends_with(".json") {
            assert_eq!(
                record_without_ranks(&b, ranks as u64),
                record_without_ranks(&a, 1),
                "{ranks} ranks, ebm {args}: {file}"
            );
        } else {
            assert!(bytes(&a) == bytes(&b), "{ranks} ranks, ebm {args}: {file}");
        }
    }
}

/// The commands compared, each with the files it writes (a sample file, then records).
#[cfg(feature = "mpi")]
const RUNS: [(&str, &[&str]); 5] = [
    // 300 chains: blocks of 128, 128 and 44, so shards differ in size and one is partial.
    (
        "sample --model ../m.safetensors --chains 300 --steps 40 --seed 7 --out s.npy",
        &["s.npy", "s.json"],
    ),
    // 150 rungs: the reference path is walked in three stretches of at most 64 transitions.
    (
        "loglik ais --model ../m.safetensors --rungs 150 --chains 300 --seed 3 --out ais.json",
        &["ais.json"],
    ),
    (
        "loglik ais --model ../m.safetensors --path temperature --rungs 60 --chains 300 \
         --seed 3 --out t.json",
        &["t.json"],
    ),
    // Burn-in, reverse AIS in two stretches and the forward run of the sandwich.
    (
        "loglik reverse-ais --model ../m.safetensors --start gibbs --burn-in 20 --rungs 100 \
         --chains 300 --seed 3 --out rev.json",
        &["rev.json"],
    ),
    (
        "loglik tr-ais --trajectory ../t.safetensors --chains 300 --seed 5 --out tr.json",
        &["tr.json"],
    ),
];

#[cfg(feature = "mpi")]
#[test]
fn sample_and_ais_on_one_two_and_three_processes_write_what_one_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_model(d);
    let runs = |sub: &str, ranks: Option<usize>| {
        let at = d.join(sub);
        std::fs::create_dir(&at).unwrap();
        for (args, _) in RUNS {
            let args = format!("{args} --threads 1");
            let Some(ranks) = ranks else {
                ok(&at, &args);
                continue;
            };
            let out = mpirun(&at, ranks, &args);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{ranks} ranks, ebm {args}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // Rank 0 alone reports.
            assert_eq!(stdout.matches("record: ").count(), 1, "{stdout}");
        }
        at
    };
    let one = runs("one", None);
    for ranks in [1, 2, 3] {
        let sharded = runs(&ranks.to_string(), Some(ranks));
        for (args, files) in RUNS {
            assert_same_files(&one, &sharded, ranks, args, files);
        }
    }
    // Negative control: the comparison sees a change of seed.
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    ok(&other, &RUNS[0].0.replace("--seed 7", "--seed 8"));
    assert!(bytes(&other.join("s.npy")) != bytes(&one.join("s.npy")));
    ok(&other, &RUNS[1].0.replace("--seed 3", "--seed 4"));
    let log_z = |p: &Path| json(p)["results"]["log_z"].as_f64().unwrap();
    assert_ne!(log_z(&other.join("ais.json")), log_z(&one.join("ais.json")));
}

#[cfg(feature = "mpi")]
#[test]
fn commands_not_sharded_yet_refuse_to_run_on_several_processes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_model(d);
    for (args, needle) in [
        (
            "sample --model m.safetensors --sampler tmc --chains 10 --steps 2 --out s.npy",
            "--sampler tmc does not run sharded",
        ),
        (
            "loglik ptt --trajectory t.safetensors --chains 10 --out r.json",
            "this command does not run sharded",
        ),
    ] {
        let out = mpirun(d, 2, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "ebm {args} ran on 2 processes");
        assert!(stderr.contains(needle), "{stderr}");
    }
    assert!(!d.join("s.npy").exists() && !d.join("r.json").exists());
}

// --- data-parallel training ---

/// The files the resumed `ebm train --out m.safetensors` writes, the record last.
#[cfg(feature = "mpi")]
const TRAIN_FILES: [&str; 5] = [
    "m.safetensors",
    "m.trajectory.safetensors",
    "m.state.json",
    "m.log.csv",
    "m.json",
];

/// `first` (writing `a.safetensors` and its state, with `--threads 1`) then a resume from
/// `a.state.json` to update 8 with a save at update 6, in one process and under `mpirun -n`
/// 1, 2 and 3: every file of the resumed run is the same (the record apart from `ranks`, the
/// elapsed time and the checksum). Negative control: the comparison sees a change of seed.
#[cfg(feature = "mpi")]
fn train_identity(first: &str) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 400 samples of 20 binary values in two noisy clusters.
    let samples = DMatrix::from_fn(20, 400, |i, j| {
        let flip = (i * 31 + j * 17) % 7 == 0;
        f64::from(u8::from((i < 10) == (j % 2 == 0)) ^ u8::from(flip))
    });
    let ds = ebm_data::Dataset::new(samples, ebm_data::Domain::Binary01).unwrap();
    ebm_data::loaders::npy::save_npy(d.join("d.npy"), &ds).unwrap();
    let resume = "train --data ../d.npy --resume a.state.json --updates 8 --save-every 3 \
                  --threads 1 --out m.safetensors";
    let runs = |sub: &str, ranks: Option<usize>| {
        let at = d.join(sub);
        std::fs::create_dir(&at).unwrap();
        for args in [first, resume] {
            let Some(ranks) = ranks else {
                ok(&at, args);
                continue;
            };
            let out = mpirun(&at, ranks, args);
            assert!(
                out.status.success(),
                "{ranks} ranks, ebm {args}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(stdout.matches("record: ").count(), 1, "{stdout}");
        }
        at
    };
    let one = runs("one", None);
    assert_eq!(json(&one.join("m.json"))["results"]["updates"], 8);
    for ranks in [1, 2, 3] {
        let sharded = runs(&ranks.to_string(), Some(ranks));
        for file in TRAIN_FILES {
            let (a, b) = (one.join(file), sharded.join(file));
            if file == "m.json" {
                assert_eq!(
                    record_without_ranks(&b, ranks as u64),
                    record_without_ranks(&a, 1),
                    "{ranks} ranks, ebm {first}: {file}"
                );
            } else {
                assert!(bytes(&a) == bytes(&b), "{ranks} ranks, ebm {first}: {file}");
            }
        }
    }
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    ok(&other, &first.replace("--seed 5", "--seed 6"));
    assert!(bytes(&other.join("a.safetensors")) != bytes(&one.join("a.safetensors")));
}

#[cfg(feature = "mpi")]
#[test]
fn train_on_one_two_and_three_processes_writes_what_one_process_writes() {
    // 300 chains and minibatches of 300: blocks of 128, 128 and 44. Selection on the
    // training's chains (gathered on rank 0) and the online likelihood (run there).
    train_identity(
        "train --data ../d.npy --hidden-units 8 --chains 300 --batch-size 300 --sweeps 2 \
         --updates 4 --loglik-every 2 --loglik-chains 100 --selection-acceptance chains \
         --seed 5 --threads 1 --out a.safetensors",
    );
}

#[cfg(feature = "mpi")]
#[test]
fn train_with_a_tempered_or_cd_negative_phase_on_several_processes_writes_what_one_process_writes()
{
    // PT: 300 systems (blocks of 128, 128 and 44) on 4 rungs, lifted exchanges (the state
    // carries each system's lifted replica), 2 rounds per update; the log carries the swap
    // acceptance and round trips added over the processes. CD: chains of the minibatch.
    for negative in [
        "--negative pt --rungs 4 --beta-min 0.3 --schedule lifted --rounds 2 --chains 300",
        "--negative cd",
    ] {
        train_identity(&format!(
            "train --data ../d.npy --hidden-units 8 --batch-size 300 {negative} --updates 4 \
             --selection-acceptance chains --seed 5 --threads 1 --out a.safetensors"
        ));
    }
}

#[cfg(feature = "mpi")]
#[test]
fn train_phases_not_sharded_refuse_to_run_on_several_processes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ds = ebm_data::Dataset::new(
        DMatrix::from_fn(6, 40, |i, j| ((i + j) % 2) as f64),
        ebm_data::Domain::Binary01,
    )
    .unwrap();
    ebm_data::loaders::npy::save_npy(d.join("d.npy"), &ds).unwrap();
    for (negative, needle) in [
        (
            "--negative jarzynski",
            "--negative jarzynski does not run sharded",
        ),
        ("--negative tmc", "--negative tmc does not run sharded"),
        ("--pretrain rcm", "--pretrain does not run sharded"),
    ] {
        let args = format!(
            "train --data d.npy --hidden-units 2 --batch-size 10 --updates 2 {negative} \
             --out m.safetensors"
        );
        let out = mpirun(d, 2, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "ebm {args} ran on 2 processes");
        assert!(stderr.contains(needle), "{stderr}");
    }
    assert!(!d.join("m.safetensors").exists());
}
// --- end data-parallel training ---

// --- Parallel tempering sharded by rung ---

/// Runs every command of `runs` (arguments, the files it writes) with one thread in `d/one`
/// (one process, no `mpirun`), then under `mpirun -n 1`, `-n 2` and `-n 3` in `d/1`, `d/2`
/// and `d/3`, and asserts that the files are the same ([`assert_same_files`]); returns
/// `d/one`.
#[cfg(feature = "mpi")]
fn same_on_one_two_and_three_processes(d: &Path, runs: &[(&str, &[&str])]) -> std::path::PathBuf {
    let one = d.join("one");
    std::fs::create_dir(&one).unwrap();
    for (args, _) in runs {
        ok(&one, &format!("{args} --threads 1"));
    }
    for ranks in [1, 2, 3] {
        let at = d.join(ranks.to_string());
        std::fs::create_dir(&at).unwrap();
        for (args, files) in runs {
            let out = mpirun(&at, ranks, &format!("{args} --threads 1"));
            assert!(
                out.status.success(),
                "{ranks} ranks, ebm {args}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_same_files(&one, &at, ranks, args, files);
        }
    }
    one
}

/// `mpirun -n K ebm sample --sampler pt | ptt`: the rungs in blocks on the K processes (rank 0
/// holds the target and traces it); samples, the chain-0 trace and the record (swap
/// statistics, round trips, index process times) equal those of one process.
#[cfg(feature = "mpi")]
#[test]
fn pt_and_ptt_sharded_by_rung_write_what_one_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_model(d);
    let runs: [(&str, &[&str]); 3] = [
        (
            "sample --model ../m.safetensors --sampler pt --rungs 7 --chains 60 --steps 40 \
             --seed 7 --trace-every 10 --chain-out c.npy --out pt.npy",
            &["pt.npy", "c.npy", "pt.json"],
        ),
        (
            "sample --model ../m.safetensors --sampler pt --rungs 5 --schedule lifted \
             --chains 60 --steps 40 --seed 8 --out lifted.npy",
            &["lifted.npy", "lifted.json"],
        ),
        // Rung 0 refreshed exactly, every pair proposed bottom up.
        (
            "sample --trajectory ../t.safetensors --sampler ptt --chains 60 --steps 40 --seed 9 \
             --out ptt.npy",
            &["ptt.npy", "ptt.json"],
        ),
    ];
    let one = same_on_one_two_and_three_processes(d, &runs);
    let record = json(&one.join("pt.json"));
    assert!(record["results"]["pt"]["round_trips"].as_u64().unwrap() > 0);
    // Negative control: the comparison sees a change of seed.
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    ok(&other, &runs[2].0.replace("--seed 9", "--seed 10"));
    assert!(bytes(&other.join("ptt.npy")) != bytes(&one.join("ptt.npy")));
}

/// `mpirun -n K ebm sample --sampler stacked`: the RBMs of a stack of four (20 -> 12 -> 6 -> 4
/// -> 3, the bottom the model of [`save_model`]) in blocks of rungs on the K processes, the
/// exchange across a block boundary decided from the energies of the two moving layers;
/// samples, the chain-0 trace and the record equal those of one process, under the reference
/// schedule (DEO) and under SEO (whose pairs run bottom up across the blocks).
#[cfg(feature = "mpi")]
#[test]
fn stacked_tempering_sharded_by_rung_writes_what_one_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    save_model(d);
    let upper = |nv: usize, nh: usize| {
        let w = DMatrix::from_fn(nv, nh, |i, j| 0.4 * (((i * 3 + j * 5) % 7) as f64 - 3.0));
        let visible = Bernoulli::new((0..nv).map(|i| 0.1 - 0.05 * (i % 3) as f64).collect());
        let hidden = Bernoulli::new((0..nh).map(|j| 0.02 * j as f64).collect());
        Rbm::new(visible, hidden, w).unwrap()
    };
    let bottom: Rbm<Bernoulli, Bernoulli> = ebm_io::load_rbm(&d.join("m.safetensors")).unwrap();
    let stack = ebm_models::Stack::new(bottom, vec![upper(12, 6), upper(6, 4), upper(4, 3)]);
    ebm_io::save_stack(&stack.unwrap(), &d.join("stack.json")).unwrap();
    let runs: [(&str, &[&str]); 2] = [
        (
            "sample --sampler stacked --stack ../stack.json --chains 60 --steps 40 --seed 7 \
             --trace-every 10 --chain-out c.npy --out st.npy",
            &["st.npy", "c.npy", "st.json"],
        ),
        (
            "sample --sampler stacked --stack ../stack.json --schedule seo --chains 60 \
             --steps 40 --seed 8 --out seo.npy",
            &["seo.npy", "seo.json"],
        ),
    ];
    let one = same_on_one_two_and_three_processes(d, &runs);
    let accepted = json(&one.join("st.json"))["results"]["pt"]["acceptance_rates"].clone();
    let rates: Vec<f64> = serde_json::from_value(accepted).unwrap();
    assert!(
        rates.iter().all(|&a| a > 0.0),
        "exchanges accepted: {rates:?}"
    );
    // Negative control: the comparison sees a change of seed.
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    ok(&other, &runs[1].0.replace("--seed 8", "--seed 9"));
    assert!(bytes(&other.join("seo.npy")) != bytes(&one.join("seo.npy")));
}

// --- End of parallel tempering sharded by rung ---

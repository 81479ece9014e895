//! `ebm train-stack` and `ebm sample --sampler stacked` end to end: the files, the record with
//! the tempering diagnostics, samples that follow the bottom RBM's exact law and do not depend
//! on the number of threads, and one-line errors for bad input.

mod common;
use common::{fails, json, ok};

use std::path::Path;

use ebm_core::Par;
use ebm_models::{DiscreteLayer, Rbm, Spin, exact};

/// A stack trained on 3 x 3 Ising data, sampled by stacked tempering: the files and the record
/// (acceptance per pair, round trips, index process, cost of L AGS steps per iteration), the
/// bottom samples against the bottom RBM's exact law (chi-square), the same bytes for 1 and 2
/// threads, and the errors of wrong combinations of options.
#[test]
fn train_stack_then_sample_stacked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(
        d,
        "data generate ising --size 3 --beta 0.3 --samples 300 --out ising.npy --quiet",
    );
    ok(
        d,
        "train-stack --data ising.npy --hidden-units 5,3,2 --out stack.json --updates 60 \
         --chains 20 --batch-size 30 --sweeps 2 --seed 1 --quiet",
    );
    for f in [
        "stack.json",
        "stack.rbm1.safetensors",
        "stack.rbm2.safetensors",
        "stack.rbm3.safetensors",
        "stack.record.json",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let rec = json(&d.join("stack.record.json"));
    assert_eq!(rec["command"], "train-stack");
    let rbms = rec["results"]["rbms"].as_array().unwrap();
    assert_eq!(rbms.len(), 3);
    assert_eq!(rbms[0]["visible"], "spin");

    let run = "sample --sampler stacked --stack stack.json --chains 2000 --steps 40 --seed 2 \
               --quiet";
    ok(d, &format!("{run} --threads 1 --out st.npy"));
    ok(d, &format!("{run} --threads 2 --out st2.npy"));
    assert_eq!(
        std::fs::read(d.join("st.npy")).unwrap(),
        std::fs::read(d.join("st2.npy")).unwrap(),
        "stacked tempering depends on the number of threads"
    );
    let rec = json(&d.join("st.json"));
    let r = &rec["results"];
    assert_eq!(r["sampler"], "stacked");
    assert_eq!(r["gibbs_sweeps_per_step"], 3, "one AGS step per RBM");
    assert_eq!(r["samples_shape"], serde_json::json!([2000, 9]));
    let pt = &r["pt"];
    assert_eq!(pt["schedule"], "deo");
    let acc = pt["acceptance_rates"].as_array().unwrap();
    assert_eq!(acc.len(), 2);
    assert!(
        acc.iter()
            .all(|a| a.as_f64().is_some_and(|a| a > 0.0 && a <= 1.0))
    );
    assert!(pt["round_trips"].as_u64().unwrap() > 0);
    assert!(pt["index_tau_int"].as_f64().is_some());

    // The bottom chains follow the bottom RBM's exact law.
    let bottom: Rbm<Spin<f64>, ebm_models::Bernoulli<f64>> =
        ebm_io::load_rbm(&d.join("stack.rbm1.safetensors")).unwrap();
    let p = exact::visible_probabilities(&bottom, 1.0, Par::Seq).unwrap();
    let s = ebm_data::loaders::npy::load_npy(d.join("st.npy")).unwrap();
    let mut counts = vec![0u64; p.len()];
    for j in 0..s.n_samples() {
        counts[bottom.visible().configuration_index(s.sample(j)) as usize] += 1;
    }
    let t = ebm_testkit::chi_square(&counts, &p);
    assert!(t.p_value > 1e-6, "ST samples off the exact law: {t:?}");

    // Bad input: one line naming the problem.
    fails(
        d,
        "sample --sampler stacked --chains 5 --out x.npy",
        2,
        "--model",
    );
    fails(
        d,
        "sample --sampler gibbs --stack stack.json --out x.npy",
        1,
        "--stack",
    );
    fails(
        d,
        "sample --sampler stacked --stack stack.json --rungs 3 --out x.npy",
        1,
        "--rungs",
    );
    fails(
        d,
        "train-stack --data ising.npy --hidden-units 6 --out stack2.safetensors",
        1,
        ".json",
    );
    fails(
        d,
        "train-stack --data ising.npy --hidden-units 6,0 --out s3.json",
        2,
        "--hidden-units",
    );
    fails(
        d,
        "train-stack --data missing.npy --hidden-units 6 --out s4.json",
        1,
        "missing.npy",
    );
    // A manifest whose RBMs do not fit together, and one naming a missing file.
    std::fs::write(
        d.join("bad.json"),
        r#"{"format": "ebm-stack", "format_version": 1,
            "rbms": ["stack.rbm1.safetensors", "stack.rbm3.safetensors"]}"#,
    )
    .unwrap();
    fails(
        d,
        "sample --sampler stacked --stack bad.json --out x.npy",
        1,
        "visible layer of stacked RBM 2",
    );
    std::fs::write(
        d.join("gone.json"),
        r#"{"format": "ebm-stack", "format_version": 1,
            "rbms": ["stack.rbm1.safetensors", "nowhere.safetensors"]}"#,
    )
    .unwrap();
    fails(
        d,
        "sample --sampler stacked --stack gone.json --out x.npy",
        1,
        "nowhere.safetensors",
    );
    fails(
        d,
        "sample --sampler stacked --stack ising.npy --out x.npy",
        1,
        "not a stack manifest",
    );
    std::fs::write(d.join("other.json"), r#"{"rbms": 3}"#).unwrap();
    fails(
        d,
        "sample --sampler stacked --stack other.json --out x.npy",
        1,
        "not a stack manifest",
    );
}

/// Planted multimodal Potts data (`ebm data generate potts`, the stand-in for lattice proteins)
/// train a stack with a Potts bottom, sampled by stacked tempering; bad codes are refused.
#[test]
fn potts_data_train_and_sample_a_stack() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(
        d,
        "data generate potts --sites 12 --states 3 --modes 2 --mutation 0.05 --samples 600 \
         --seed 3 --out potts.npy --quiet",
    );
    let rec = json(&d.join("potts.json"));
    assert_eq!(rec["command"], "data generate");
    ok(
        d,
        "train-stack --data potts.npy --visible-states 3 --hidden-units 6,3 --out ps.json \
         --updates 60 --chains 20 --batch-size 50 --sweeps 2 --seed 1 --quiet",
    );
    let rec = json(&d.join("ps.record.json"));
    assert_eq!(rec["results"]["rbms"][0]["visible"], "potts");
    ok(
        d,
        "sample --sampler stacked --stack ps.json --chains 200 --steps 50 --seed 2 \
         --out pst.npy --quiet",
    );
    let r = &json(&d.join("pst.json"))["results"];
    assert_eq!(r["samples_shape"], serde_json::json!([200, 36]));
    assert_eq!(r["gibbs_sweeps_per_step"], 2);
    let s = ebm_data::loaders::npy::load_npy(d.join("pst.npy")).unwrap();
    for j in 0..s.n_samples() {
        for block in s.sample(j).chunks(3) {
            assert_eq!(block.iter().sum::<f64>(), 1.0, "not one-hot: {block:?}");
        }
    }
    let acc = r["pt"]["acceptance_rates"][0].as_f64().unwrap();
    assert!(acc > 0.0 && acc <= 1.0, "{acc}");
    fails(
        d,
        "train-stack --data potts.npy --visible-states 2 --hidden-units 4 --out bad.json",
        1,
        "--visible-states 2",
    );
}

/// An IDX image file (u8 pixels) with its label file, as MNIST ships them.
fn write_idx(dir: &Path, images: &[[u8; 16]], labels: &[u8]) {
    let mut img = vec![0, 0, 0x08, 3];
    for d in [images.len() as u32, 4, 4] {
        img.extend_from_slice(&d.to_be_bytes());
    }
    img.extend(images.iter().flatten());
    std::fs::write(dir.join("img-ubyte"), img).unwrap();
    let mut lab = vec![0, 0, 0x08, 1];
    lab.extend_from_slice(&(labels.len() as u32).to_be_bytes());
    lab.extend_from_slice(labels);
    std::fs::write(dir.join("lab-ubyte"), lab).unwrap();
}

/// MNIST-style IDX data: `train-stack --labels --keep-labels 0,1 --binarize 127` keeps the
/// images of the two digits, binarised, and trains the stack on them; with the parallel-tempering
/// negative phase of `ebm train` (`--negative pt`), whose options are checked as there.
#[test]
fn train_stack_reads_idx_digits_with_pt() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 4 x 4 "digits": a vertical bar (1), a ring (0), a cross (7), with one flipped pixel each.
    let bar = [0, 200, 0, 0, 0, 200, 0, 0, 0, 200, 0, 0, 0, 200, 0, 0];
    let ring = [
        200, 200, 200, 200, 200, 0, 0, 200, 200, 0, 0, 200, 200, 200, 200, 200,
    ];
    let cross = [
        200, 0, 0, 200, 0, 200, 200, 0, 0, 200, 200, 0, 200, 0, 0, 200,
    ];
    let (mut images, mut labels) = (Vec::new(), Vec::new());
    for k in 0..60 {
        let (mut x, l) = match k % 3 {
            0 => (ring, 0),
            1 => (bar, 1),
            _ => (cross, 7),
        };
        x[k % 16] = if x[k % 16] > 127 { 10 } else { 250 };
        images.push(x);
        labels.push(l);
    }
    write_idx(d, &images, &labels);
    let train = "train-stack --data img-ubyte --labels lab-ubyte --keep-labels 0,1 \
                 --binarize 127 --hidden-units 6,3 --out digits.json --updates 30 --chains 20 \
                 --batch-size 20 --seed 1 --quiet";
    ok(d, &format!("{train} --negative pt --rungs 3"));
    let rec = json(&d.join("digits.record.json"));
    let r = &rec["results"];
    assert_eq!(r["samples"], 40, "the 40 images of digits 0 and 1");
    assert_eq!(r["rbms"][0]["visible"], "bernoulli");
    assert_eq!(r["rbms"][0]["visible_units"], 16);
    assert_eq!(rec["settings"]["negative"], "pt");
    ok(
        d,
        "sample --sampler stacked --stack digits.json --chains 50 --steps 20 --out s.npy --quiet",
    );
    // Without binarisation the pixels are real values; a ladder option without pt; labels
    // kept without a label file.
    fails(
        d,
        "train-stack --data img-ubyte --hidden-units 4 --out a.json",
        1,
        "got real values",
    );
    fails(
        d,
        &format!("{train} --rungs 3").replace("digits.json", "b.json"),
        1,
        "--rungs does not apply to --negative pcd",
    );
    fails(
        d,
        "train-stack --data img-ubyte --keep-labels 0,1 --binarize 127 --hidden-units 4 --out c.json",
        1,
        "label",
    );
}

//! The command line a researcher lives in: image grids and chain strips, the
//! labels of the figures (read from the SVG text), user-defined modes whose weights are checked
//! against the model's exact weights under the same rule, data preparation commands, shell
//! completions and man pages, and the error messages written for a command-line user.

mod common;
use common::{ebm, fails, json, ok};

use std::path::Path;

use ebm_core::Par;
use ebm_data::{Centering, Dataset, Domain};
use ebm_models::{Bernoulli, DiscreteLayer, Rbm, exact};
use nalgebra::DMatrix;

fn save_npy(path: &Path, data: DMatrix<f64>) {
    let ds = Dataset::new(data, Domain::Real).unwrap();
    ebm_data::loaders::npy::save_npy(path, &ds).unwrap();
}

fn load(path: &Path) -> DMatrix<f64> {
    ebm_data::loaders::npy::load_npy(path).unwrap().into_data()
}

fn svg(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The text elements of an SVG figure, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// Whether the figure has a text element reading exactly `label`.
fn has_text(svg: &str, label: &str) -> bool {
    texts(svg).iter().any(|t| t == label)
}

/// Number of rectangles filled with `colour` (e.g. `#000000`).
fn filled_rects(svg: &str, colour: &str) -> usize {
    let fill = format!("fill=\"{colour}\"");
    svg.split("<rect")
        .skip(1)
        .filter(|r| r.split('>').next().unwrap_or("").contains(&fill))
        .count()
}

/// A 6 x 3 Bernoulli RBM with three clear groups of visible units (a multimodal law that
/// Gibbs sampling still mixes in a few sweeps).
fn small_rbm() -> Rbm<Bernoulli<f64>, Bernoulli<f64>> {
    let w = DMatrix::from_fn(6, 3, |i, j| if i / 2 == j { 2.5 } else { -1.0 });
    Rbm::new(
        Bernoulli::new(vec![-1.0; 6]),
        Bernoulli::new(vec![-1.5, -1.2, -1.8]),
        w,
    )
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Figures
// ---------------------------------------------------------------------------------------------

#[test]
fn image_grids_draw_every_value_domain_and_say_which() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 2 x 3 images: binary, spin, Potts codes (q = 3) and the same Potts rows one-hot.
    let bin = DMatrix::from_fn(6, 5, |i, j| ((i + j) % 2) as f64);
    save_npy(&d.join("bin.npy"), bin.clone());
    save_npy(&d.join("spin.npy"), bin.map(|v| 2.0 * v - 1.0));
    let codes = DMatrix::from_fn(6, 4, |i, j| ((i + j) % 3) as f64);
    save_npy(&d.join("codes.npy"), codes.clone());
    let onehot = DMatrix::from_fn(18, 4, |r, j| f64::from(codes[(r / 3, j)] as usize == r % 3));
    save_npy(&d.join("onehot.npy"), onehot);
    save_npy(&d.join("real.npy"), bin.map(|v| 3.5 * v - 7.0));

    ok(
        d,
        "plot images bin.npy bin.npy --labels Gibbs,PTT --shape 2x3 --out b.svg",
    );
    let s = svg(&d.join("b.svg"));
    assert!(s.contains("Gibbs") && s.contains("PTT"), "panel titles");
    assert!(s.contains("values in [0, 1]: white 0, black 1"));
    // 2 panels x 5 images x 6 pixels, each a filled rectangle: 0 white, 1 black.
    let black = filled_rects(&s, "#000000");
    assert_eq!(black, 2 * 15, "one black pixel per 1 in the data");
    ok(d, "plot images spin.npy --shape 2x3 --out s.svg");
    assert!(svg(&d.join("s.svg")).contains("white -1, black +1"));
    ok(
        d,
        "plot images codes.npy --states 3 --shape 2x3 --labels q3 --out c.svg",
    );
    ok(
        d,
        "plot images onehot.npy --states 3 --shape 2x3 --labels q3 --out o.svg",
    );
    let (c, o) = (svg(&d.join("c.svg")), svg(&d.join("o.svg")));
    assert!(c.contains("3 Potts states, one colour each"));
    // The one-hot rows are drawn as their argmax: the same picture as the codes.
    let body = |s: &str| s[s.find("<rect").unwrap()..].to_string();
    assert_eq!(
        body(&c),
        body(&o),
        "one-hot drawn differently from its codes"
    );
    ok(d, "plot images real.npy --shape 2x3 --count 2 --out r.png");
    let rec = json(&d.join("r.png.json"));
    assert_eq!(
        rec["results"]["drawn"],
        serde_json::json!([["real.npy", 2]])
    );

    // Shapes: a non-square row needs --shape; a wrong one is named.
    fails(
        d,
        "plot images bin.npy --out x.png",
        1,
        "not a square image; give its shape with --shape HxW",
    );
    fails(
        d,
        "plot images bin.npy --shape 2x2 --out x.png",
        1,
        "--shape 2x2 has 4 pixels, but bin.npy has 6 sites",
    );
    fails(
        d,
        "plot images bin.npy --shape 2by3 --out x.png",
        2,
        "is not HxW",
    );
    fails(
        d,
        "plot images spin.npy --shape 2x3 --states 3 --out x.png",
        1,
        "neither one-hot blocks",
    );
    fails(
        d,
        "plot images bin.npy spin.npy --shape 2x3 --out x.png",
        1,
        "draw them in separate figures",
    );
}

#[test]
fn a_chain_is_recorded_over_time_and_drawn_as_a_strip() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ebm_io::save_rbm(&small_rbm(), &d.join("m.safetensors")).unwrap();
    ok(
        d,
        "sample --model m.safetensors --chains 7 --steps 60 --trace-every 4 --seed 2 \
         --chain-out chain.npy --out s.npy",
    );
    let rec = json(&d.join("s.json"));
    let steps: Vec<u64> = serde_json::from_value(rec["results"]["chain"]["steps"].clone()).unwrap();
    assert_eq!(steps, (0..=15).map(|k| 4 * k).collect::<Vec<_>>());
    let chain = load(&d.join("chain.npy"));
    assert_eq!(chain.shape(), (6, 16));
    // The last record is chain 0's final state, the first its start (all zeros).
    assert_eq!(chain.column(15), load(&d.join("s.npy")).column(0));
    assert!(chain.column(0).iter().all(|&v| v == 0.0));
    ok(d, "plot chain s.json --shape 2x3 --count 5 --out chain.svg");
    let s = svg(&d.join("chain.svg"));
    for step in ["step 0", "step 16", "step 32", "step 44", "step 60"] {
        assert!(has_text(&s, step), "{step} missing");
    }
    assert!(s.contains("Gibbs (beta 1): chain 0 over 60 steps"));
    fails(d, "plot chain m.json --out x.png", 1, "cannot read m.json");
    ok(
        d,
        "sample --model m.safetensors --chains 7 --steps 10 --out plain.npy",
    );
    fails(
        d,
        "plot chain plain.json --out x.png",
        1,
        "has no recorded chain",
    );
    fails(
        d,
        "sample --model m.safetensors --chain-out c.npy --out t.npy",
        2,
        "--trace-every",
    );
}

/// Every output is checked before any work: one named twice (the same path written two ways)
/// is refused, distinct outputs are not.
#[test]
fn an_output_written_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ebm_io::save_rbm(&small_rbm(), &d.join("m.safetensors")).unwrap();
    let run = "sample --model m.safetensors --chains 3 --steps 4 --trace-every 2 --out s.npy";
    fails(
        d,
        &format!("{run} --chain-out ./s.npy"),
        1,
        "s.npy would be written twice",
    );
    assert!(!d.join("s.npy").exists(), "an output was written");
    ok(d, &format!("{run} --chain-out c.npy"));
    assert!(d.join("s.npy").exists() && d.join("c.npy").exists());
}

/// The value parsers of the options refuse non-finite numbers and zero counts, naming the
/// option, before reading any file.
#[test]
fn option_values_are_checked_when_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (args, needle) in [
        (
            "sample --model m.json --beta nan --out s.npy",
            "nan is not a finite number",
        ),
        (
            "sample --model m.json --beta inf --out s.npy",
            "inf is not a finite number",
        ),
        (
            "sample --model m.json --beta x --out s.npy",
            "\"x\" is not a number",
        ),
        (
            "sample --model m.json --chains 0 --out s.npy",
            "must be at least 1",
        ),
        (
            "sample --model m.json --chains x --out s.npy",
            "\"x\" is not a positive whole number",
        ),
        (
            "train --data d.npy --updates 0 --out m.json",
            "must be at least 1",
        ),
    ] {
        let option = args.split_whitespace().nth(3).unwrap();
        fails(d, args, 2, option);
        fails(d, args, 2, needle);
    }
    // The control: a finite --beta and positive counts are parsed, and the run then stops at
    // the missing model file.
    fails(
        d,
        "sample --model m.json --beta 0.5 --chains 2 --out s.npy",
        1,
        "m.json",
    );
}

/// A table that cannot be drawn says where: the line, the column and the cell.
#[test]
fn csv_tables_report_the_line_and_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("t.csv"), "# log\nupdate,train_ll\n0,-1.5\n\n10,x\n").unwrap();
    fails(
        d,
        "plot loglik t.csv --y train_ll --out t.svg",
        1,
        "t.csv at line 5, column \"train_ll\": \"x\" is not a number",
    );
    std::fs::write(d.join("t.csv"), "update,train_ll\n0,inf\n").unwrap();
    fails(
        d,
        "plot loglik t.csv --y train_ll --out t.svg",
        1,
        "non-finite value inf",
    );
    std::fs::write(d.join("t.csv"), "update,train_ll\n0\n").unwrap();
    fails(
        d,
        "plot loglik t.csv --out t.svg",
        1,
        "line 2: 1 cells, the header has 2 columns",
    );
    std::fs::write(d.join("t.csv"), "update,train_ll\n0,-1.5\n10,-1.2\n").unwrap();
    fails(
        d,
        "plot loglik t.csv --y test_ll --out t.svg",
        1,
        "its columns are update, train_ll",
    );
    ok(d, "plot loglik t.csv --y train_ll --out t.svg");
}

#[test]
fn figure_labels_say_what_is_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("m.log.csv"),
        "update,gradient_norm,train_ll,test_ll\n0,3.1,-4.2,-4.3\n100,2.0,-3.1,-3.3\n200,1.5,-2.9,\n",
    )
    .unwrap();
    ok(d, "plot loglik m.log.csv --out ll.svg");
    let s = svg(&d.join("ll.svg"));
    assert!(
        has_text(&s, "Log-likelihood") && has_text(&s, "train data") && has_text(&s, "test data")
    );
    assert!(!s.contains("train_ll"), "raw column name in the legend");
    ok(d, "plot loglik m.log.csv --y gradient_norm --out g.svg");
    let s = svg(&d.join("g.svg"));
    assert!(
        has_text(&s, "gradient norm"),
        "title and legend name the column"
    );
    assert!(
        !s.contains("Log-likelihood") && !s.contains("log-likelihood"),
        "{s}"
    );
    assert!(has_text(&s, "parameter updates"));

    // Samples and swaps name the sampler; the swap figure has one informative panel.
    ebm_io::save_rbm(&small_rbm(), &d.join("m.safetensors")).unwrap();
    ok(
        d,
        "data generate bars-stripes --size 2 --samples 50 --out d.npy",
    );
    save_npy(
        &d.join("d6.npy"),
        DMatrix::from_fn(6, 50, |i, j| ((i * 7 + j * 3) % 2) as f64),
    );
    ok(
        d,
        "sample --model m.safetensors --sampler pt --rungs 3 --beta-min 0.5 --chains 20 \
         --steps 50 --out pt.npy",
    );
    ok(
        d,
        "plot samples --data d6.npy --samples pt.npy --out pca.svg",
    );
    assert!(svg(&d.join("pca.svg")).contains("PT (deo, 3 rungs) (20)"));
    ok(d, "plot swaps pt.json --out swaps.svg");
    let s = svg(&d.join("swaps.svg"));
    assert!(s.contains("PT (deo, 3 rungs): "), "the run's legend entry");
    assert!(s.contains("round trips per system and round"));
    assert!(
        !has_text(&s, "Round trips") && !has_text(&s, "run"),
        "the old right panel"
    );
    // --threads is not offered where it does nothing.
    fails(
        d,
        "plot swaps pt.json --threads 2 --out t.svg",
        2,
        "--threads",
    );
    let help = ok(d, "plot images --help");
    assert!(!help.contains("--threads"));
}

// ---------------------------------------------------------------------------------------------
// Modes
// ---------------------------------------------------------------------------------------------

/// The exact weight of each mode of `rbm` under the nearest-centre rule with `centres` on the
/// projections of `pca`: the enumerated visible law summed over each mode's configurations.
fn exact_mode_weights(
    rbm: &Rbm<Bernoulli<f64>, Bernoulli<f64>>,
    pca: &ebm_data::Pca,
    centres: &[Vec<f64>],
) -> Vec<f64> {
    let p = exact::visible_probabilities(rbm, 1.0, Par::Seq).unwrap();
    let rule = ebm_core::diagnostics::ModeClassifier::NearestCentre {
        centres: centres.to_vec(),
    };
    let mut w = vec![0.0; centres.len()];
    let mut x = vec![0.0; 6];
    for (i, pi) in p.iter().enumerate() {
        rbm.visible().write_configuration(i as u128, &mut x);
        let proj = pca.project(&DMatrix::from_column_slice(6, 1, &x)).unwrap();
        w[rule.assign(&proj).unwrap()[0]] += pi;
    }
    w
}

/// The record's mode weights against `exact`: every mode within 4 standard errors (and the
/// errors small enough to mean something).
fn within_error_bars(rec: &serde_json::Value, exact: &[f64]) -> bool {
    let m = &rec["results"]["mode_jumps"];
    let w: Vec<f64> = serde_json::from_value(m["weights"].clone()).unwrap();
    let se: Vec<f64> = serde_json::from_value(m["weights_se"].clone()).unwrap();
    assert_eq!(w.len(), exact.len());
    assert!(se.iter().all(|&s| s < 0.02), "{se:?}");
    w.iter()
        .zip(&se)
        .zip(exact)
        .all(|((w, s), e)| (w - e).abs() <= 4.0 * s + 1e-3)
}

#[test]
fn user_defined_modes_have_the_exact_weights_and_say_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rbm = small_rbm();
    ebm_io::save_rbm(&rbm, &d.join("m.safetensors")).unwrap();
    // Data: exact draws of the model, labelled by the group of units that is on (0, 1, 2).
    let n = 600;
    let p = exact::visible_probabilities(&rbm, 1.0, Par::Seq).unwrap();
    let mut x = vec![0.0; 6];
    let mut rows = Vec::new();
    let mut labels = Vec::new();
    let mut u = 0.5f64;
    for j in 0..n {
        // A deterministic low-discrepancy stream through the cumulative law.
        u = (u + 0.618_033_988_75).fract();
        let mut c = 0.0;
        let i = p.iter().position(|&pi| {
            c += pi;
            c > u
        });
        rbm.visible()
            .write_configuration(i.unwrap_or(p.len() - 1) as u128, &mut x);
        let groups: Vec<f64> = (0..3).map(|g| x[2 * g] + x[2 * g + 1]).collect();
        let top = (0..3)
            .max_by(|&a, &b| groups[a].total_cmp(&groups[b]).then(b.cmp(&a)))
            .unwrap();
        labels.push(top as f64);
        rows.extend_from_slice(&x);
        let _ = j;
    }
    let data = DMatrix::from_column_slice(6, n, &rows);
    save_npy(&d.join("d.npy"), data.clone());
    save_npy(&d.join("l.npy"), DMatrix::from_row_slice(1, n, &labels));
    let run = "sample --model m.safetensors --data d.npy --init data --chains 400 --steps 300 \
               --trace-every 3 --seed 5";
    let out = ok(d, &format!("{run} --modes labels:l.npy --out lab.npy"));
    assert!(
        out.contains("modes (3): labels:l.npy: the nearest class centre"),
        "{out}"
    );
    assert!(
        out.contains("label 0: ") && out.contains("label 2: "),
        "{out}"
    );
    ok(d, &format!("{run} --modes kmeans:3 --out km.npy"));

    // The same rules, rebuilt here from the data: class centres, and k-means (same seed).
    let ds = Dataset::new(data, Domain::Real).unwrap();
    let pca = ebm_data::pca(&ds, 3, Centering::Centered).unwrap();
    let proj = pca.project(ds.data()).unwrap();
    let class_centres: Vec<Vec<f64>> = (0..3)
        .map(|c| {
            let members: Vec<usize> = (0..n).filter(|&j| labels[j] == c as f64).collect();
            (0..3)
                .map(|k| members.iter().map(|&j| proj[(k, j)]).sum::<f64>() / members.len() as f64)
                .collect()
        })
        .collect();
    let km = ebm_data::kmeans::kmeans(&proj, 3, 10, 300, 5).unwrap();
    let km_centres: Vec<Vec<f64>> = km
        .centres
        .column_iter()
        .map(|c| c.iter().copied().collect())
        .collect();
    for (file, centres) in [("lab.json", &class_centres), ("km.json", &km_centres)] {
        let rec = json(&d.join(file));
        let exact = exact_mode_weights(&rbm, &pca, centres);
        assert!(
            within_error_bars(&rec, &exact),
            "{file}: {} vs exact {exact:?}",
            rec["results"]["mode_jumps"]["weights"]
        );
        // Negative control: the same check rejects the weights of the modes relabelled.
        let mut shifted = exact.clone();
        shifted.rotate_left(1);
        assert!(
            !within_error_bars(&rec, &shifted),
            "{file}: the check has no power"
        );
        let rule = rec["results"]["mode_jumps"]["rule"].as_str().unwrap();
        assert!(
            rule.starts_with(&file[..2].replace("la", "labels").replace("km", "kmeans")),
            "{rule}"
        );
    }
    // The default rule is said too.
    ok(d, &format!("{run} --out pc.npy"));
    let rule = json(&d.join("pc.json"))["results"]["mode_jumps"]["rule"].clone();
    assert!(
        rule.as_str()
            .unwrap()
            .starts_with("pc1: mode 1 if the first principal component")
    );

    fails(
        d,
        &format!("{run} --modes kmeans:1 --out x.npy"),
        2,
        "K >= 2",
    );
    fails(
        d,
        &format!("{run} --modes labels:d.npy --out x.npy"),
        1,
        "a labels file has one column",
    );
    fails(
        d,
        &format!("{run} --modes kmeans:3 --mode-threshold 1 --out x.npy"),
        1,
        "--modes pc1 only",
    );
    save_npy(&d.join("short.npy"), DMatrix::from_element(1, 5, 1.0));
    fails(
        d,
        &format!("{run} --modes labels:short.npy --out x.npy"),
        1,
        "5 labels for 600 data rows",
    );
}

// ---------------------------------------------------------------------------------------------
// Data preparation, completions, man pages
// ---------------------------------------------------------------------------------------------

#[test]
fn data_split_binarize_and_subset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(
        d,
        "data generate digits --out digits.npy --labels-out labels.npy",
    );
    let x = load(&d.join("digits.npy"));
    let labels = load(&d.join("labels.npy"));
    assert_eq!((x.ncols(), labels.shape()), (1797, (1, 1797)));

    ok(
        d,
        "data split digits.npy --train-fraction 0.75 --seed 3 --train a.npy --test b.npy",
    );
    let (a, b) = (load(&d.join("a.npy")), load(&d.join("b.npy")));
    assert_eq!((a.ncols(), b.ncols()), (1348, 449));
    // Together the two parts are the data, row for row (as multisets).
    let key = |m: &DMatrix<f64>| -> Vec<Vec<u64>> {
        let mut k: Vec<Vec<u64>> = m
            .column_iter()
            .map(|c| c.iter().map(|v| v.to_bits()).collect())
            .collect();
        k.sort();
        k
    };
    let mut both = DMatrix::zeros(64, 1797);
    both.columns_mut(0, 1348).copy_from(&a);
    both.columns_mut(1348, 449).copy_from(&b);
    assert_eq!(key(&both), key(&x));
    assert_eq!(json(&d.join("a.json"))["command"], "data split");

    ok(
        d,
        "data subset digits.npy --label-file labels.npy --labels 0,1 --out s.npy --labels-out sl.npy",
    );
    let (s, sl) = (load(&d.join("s.npy")), load(&d.join("sl.npy")));
    let keep: Vec<usize> = (0..1797).filter(|&j| labels[j] <= 1.0).collect();
    assert_eq!(s.ncols(), keep.len());
    assert_eq!(s.ncols(), 178 + 182);
    for (k, &j) in keep.iter().enumerate() {
        assert_eq!(s.column(k), x.column(j));
        assert_eq!(sl[k], labels[j]);
    }

    save_npy(
        &d.join("grey.npy"),
        DMatrix::from_fn(3, 4, |i, j| (i * 4 + j) as f64),
    );
    ok(d, "data binarize grey.npy --threshold 5 --out g01.npy");
    ok(
        d,
        "data binarize grey.npy --threshold 5 --domain spin --out gpm.npy",
    );
    let g = load(&d.join("g01.npy"));
    assert_eq!(g, DMatrix::from_fn(3, 4, |i, j| f64::from(i * 4 + j > 5)));
    assert_eq!(load(&d.join("gpm.npy")), g.map(|v| 2.0 * v - 1.0));

    fails(
        d,
        "data split digits.npy --train-fraction 1 --train a2.npy --test b2.npy",
        1,
        "leave the test file empty",
    );
    fails(
        d,
        "data subset digits.npy --label-file labels.npy --labels 42 --out z.npy",
        1,
        "no sample of digits.npy",
    );
    fails(
        d,
        "data subset digits.npy --label-file digits.npy --labels 1 --out z.npy",
        1,
        "a labels file has one column",
    );
    fails(
        d,
        "data generate ising --size 3 --samples 5 --out i.npy --labels-out il.npy",
        1,
        "gives no labels",
    );
}

#[test]
fn data_split_carries_the_labels_with_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Row j is (j, j^2) and its label is j mod 7: each output row names its source row.
    let n = 60;
    save_npy(
        &d.join("x.npy"),
        DMatrix::from_fn(2, n, |i, j| (j * (1 + i * j)) as f64),
    );
    save_npy(
        &d.join("l.npy"),
        DMatrix::from_fn(1, n, |_, j| (j % 7) as f64),
    );
    ok(
        d,
        "data split x.npy --seed 5 --train a.npy --test b.npy --label-file l.npy \
         --train-labels al.npy --test-labels bl.npy",
    );
    ok(d, "data split x.npy --seed 5 --train a0.npy --test b0.npy");
    let mut seen = vec![false; n];
    for (data, labels, plain) in [("a", "al", "a0"), ("b", "bl", "b0")] {
        let (x, l) = (
            load(&d.join(format!("{data}.npy"))),
            load(&d.join(format!("{labels}.npy"))),
        );
        // The labels do not change the split of the data.
        assert_eq!(x, load(&d.join(format!("{plain}.npy"))));
        assert_eq!(l.shape(), (1, x.ncols()));
        for (k, row) in x.column_iter().enumerate() {
            let j = row[0] as usize;
            assert_eq!(l[k], (j % 7) as f64, "{data}: row {k} (data row {j})");
            seen[j] = true;
        }
    }
    assert!(
        seen.iter().all(|&s| s),
        "every row lands in one of the parts"
    );
    let rec = json(&d.join("a.json"));
    assert_eq!(rec["outputs"].as_array().map(Vec::len), Some(4), "{rec}");

    let missing = ebm()
        .current_dir(d)
        .args("data split x.npy --train a2.npy --test b2.npy --label-file l.npy".split(' '))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--train-labels"));
    fails(
        d,
        "data split x.npy --train a3.npy --test b3.npy --label-file x.npy \
         --train-labels c.npy --test-labels e.npy",
        1,
        "a labels file has one column",
    );
}

#[test]
fn completions_and_man_pages_cover_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = ok(d, &format!("completions {shell}"));
        for word in ["ebm", "images", "chain", "subset", "--modes", "--chain-out"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    fails(d, "completions tcsh", 2, "tcsh");
    let out = ok(d, "man --out man");
    assert!(out.contains("man pages in man"), "{out}");
    for page in [
        "ebm.1",
        "ebm-sample.1",
        "ebm-plot-images.1",
        "ebm-data-subset.1",
        "ebm-completions.1",
    ] {
        let text = std::fs::read_to_string(d.join("man").join(page)).unwrap();
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
    }
    let sample = std::fs::read_to_string(d.join("man/ebm-sample.1")).unwrap();
    assert!(sample.contains("kmeans:K"), "the long help is in the page");
}

// ---------------------------------------------------------------------------------------------
// Error messages for a command-line user
// ---------------------------------------------------------------------------------------------

/// A fixture of ebm-io: models trained and saved by the `rbms` package.
fn rbms_fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ebm-io/tests/fixtures/rbms")
        .join(name)
}

#[test]
fn models_saved_by_rbms_are_read_wherever_a_model_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for f in ["bernoulli.h5", "potts.h5"] {
        std::fs::copy(rbms_fixture(f), d.join(f)).unwrap();
    }
    // The exact log-likelihood of the last checkpoint, against the model loaded by the library.
    let rbm: Rbm<Bernoulli, Bernoulli> = ebm_io::load_rbm(&d.join("bernoulli.h5")).unwrap();
    save_npy(
        &d.join("x.npy"),
        DMatrix::from_fn(12, 6, |i, j| ((i * 5 + j * 3 + i * j) % 2) as f64),
    );
    let rec: serde_json::Value = serde_json::from_str(
        ok(
            d,
            "loglik exact --model bernoulli.h5 --data x.npy --json --out ll.json",
        )
        .trim(),
    )
    .unwrap();
    let log_z = exact::log_partition_by_visible(&rbm, 1.0, Par::Seq).unwrap();
    let got = rec["results"]["log_z"].as_f64().unwrap();
    assert!((got - log_z).abs() < 1e-10, "{got} vs {log_z}");
    // Sampling a model, and PTT along the file's checkpoints (a trajectory).
    ok(
        d,
        "sample --model potts.h5 --chains 4 --steps 3 --out p.npy",
    );
    assert_eq!(load(&d.join("p.npy")).shape(), (18, 4));
    ok(
        d,
        "sample --trajectory bernoulli.h5 --sampler ptt --chains 4 --steps 3 --out t.npy",
    );
    assert_eq!(load(&d.join("t.npy")).shape(), (12, 4));
}

#[test]
fn foreign_and_oversized_inputs_get_messages_that_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An HDF5 file (the signature, then anything): read as an rbms model, and refused as a
    // broken HDF5 file; an HDF5 file that is no model: what ebm reads instead.
    let mut h5 = b"\x89HDF\r\n\x1a\n".to_vec();
    h5.extend_from_slice(&[0u8; 200]);
    std::fs::write(d.join("model.h5"), &h5).unwrap();
    ok(
        d,
        "data generate bars-stripes --size 2 --samples 20 --out d.npy",
    );
    fails(
        d,
        "loglik exact --model model.h5 --data d.npy",
        1,
        "cannot read the HDF5 file",
    );
    std::fs::copy(rbms_fixture("foreign.h5"), d.join("data.h5")).unwrap();
    fails(
        d,
        "sample --model data.h5 --out s.npy",
        1,
        "not a model saved by the `rbms` package: ebm reads rbms's BBRBM and PBRBM",
    );
    // A data file of unknown extension: the formats ebm reads, and no library hint.
    let e = stderr_of(d, "data info model.h5");
    assert!(
        e.contains("ebm reads .npy (NumPy), .csv/.tsv/.txt/.dat"),
        "{e}"
    );
    assert!(
        e.contains("It is an HDF5 file") && e.contains("numpy.save"),
        "{e}"
    );
    // An HDF5 file given as data is most likely an rbms model: say where models go.
    assert!(e.contains("give it as --model or --trajectory"), "{e}");
    assert!(!e.contains("LoadOptions"), "{e}");
    // A model too large to enumerate: the estimators that can.
    let big = Rbm::new(
        Bernoulli::new(vec![0.0; 30]),
        Bernoulli::new(vec![0.0; 30]),
        DMatrix::from_element(30, 30, 0.01),
    )
    .unwrap();
    ebm_io::save_rbm(&big, &d.join("big.safetensors")).unwrap();
    save_npy(&d.join("d30.npy"), DMatrix::zeros(30, 4));
    fails(
        d,
        "loglik exact --model big.safetensors --data d30.npy",
        1,
        "`ebm loglik ais --model big.safetensors",
    );
    fails(
        d,
        "loglik exact --model big.safetensors --data d30.npy",
        1,
        "`ebm loglik tr-ais --trajectory big.trajectory.safetensors",
    );
    // The binarisation of the embedded digits is documented.
    let help = ok(d, "data generate digits --help");
    assert!(help.contains("pixel > 8 -> 1"), "{help}");
}

fn stderr_of(dir: &Path, args: &str) -> String {
    let out = ebm()
        .current_dir(dir)
        .args(args.split_whitespace())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    String::from_utf8(out.stderr).unwrap()
}

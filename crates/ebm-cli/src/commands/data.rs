//! `ebm data generate | info | pca`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use ebm_data::generators::clusters::{ClusterConfig, ClusterPreset};
use ebm_data::generators::ising::IsingConfig;
use ebm_data::{Centering, Dataset, Domain, Format, GeneratorSpec};
use serde::Serialize;

use crate::cli::{
    BinarizeArgs, DataCommand, DomainArg, GenerateCommon, Generator, InfoArgs, PcaArgs, PresetArg,
    SplitArgs, SubsetArgs,
};
use crate::error::{CliError, Result, bail};
use crate::files::{check_matrix_output, check_outputs, load_dataset, write_samples};
use crate::models::domain_name;
use crate::record::{Context, record_path_for};

pub(super) fn execute(cmd: &DataCommand, ctx: &Context) -> Result<()> {
    match cmd {
        DataCommand::Generate(g) => generate(g, ctx),
        DataCommand::Info(args) => info(args, ctx),
        DataCommand::Pca(args) => pca(args, ctx),
        DataCommand::Split(args) => split(args, ctx),
        DataCommand::Binarize(args) => binarize(args, ctx),
        DataCommand::Subset(args) => subset(args, ctx),
    }
}

/// The values a generator holds (its samples, and the patterns it draws them around), an
/// upper bound checked against the memory available before generating.
fn generated_values(spec: &GeneratorSpec) -> u128 {
    let product = |xs: &[usize]| xs.iter().fold(1u128, |p, &x| p.saturating_mul(x as u128));
    match spec {
        GeneratorSpec::Ising(c) => product(&[c.l, c.l, c.n_samples]),
        GeneratorSpec::BarsAndStripes { n, n_samples, .. } => product(&[*n, *n, *n_samples]),
        GeneratorSpec::Clusters(c) => product(&[c.n_features, c.n_samples]),
        GeneratorSpec::CurieWeiss { n, n_samples, .. } => product(&[*n, *n_samples]),
        GeneratorSpec::Hopfield {
            n,
            n_patterns,
            n_samples,
            ..
        } => product(&[*n, n_patterns.saturating_add(*n_samples)]),
        GeneratorSpec::PlantedPotts(p) => {
            product(&[p.n_sites, p.q, p.n_modes.saturating_add(p.n_samples)])
        }
        _ => 0,
    }
}

/// What `data generate` and `data info` report about a dataset.
#[derive(Serialize, Debug)]
struct DatasetSummary {
    n_samples: usize,
    n_features: usize,
    /// The domain the values fit, e.g. `values in {0,1}`.
    domain: String,
    min: f64,
    max: f64,
    /// Mean of all entries (weighted by the sample weights).
    mean: f64,
    /// Smallest and largest per-feature mean.
    feature_mean_range: [f64; 2],
    /// Number of distinct samples.
    distinct_samples: usize,
    /// Samples per label, when the data have labels.
    label_counts: Option<BTreeMap<u32, usize>>,
}

/// The narrowest of {0,1}, {-1,+1} that fits real-valued data, or the dataset's own domain.
fn detected_domain(ds: &Dataset) -> Domain {
    if ds.domain() != Domain::Real {
        return ds.domain();
    }
    [Domain::Binary01, Domain::Spin]
        .into_iter()
        .find(|&d| ebm_data::dataset::check_domain(ds.data(), d).is_ok())
        .unwrap_or(Domain::Real)
}

fn summarise(ds: &Dataset) -> DatasetSummary {
    let x = ds.data();
    let means = ds.weighted_mean();
    let distinct: HashSet<Vec<u64>> = x
        .column_iter()
        .map(|c| c.iter().map(|v| v.to_bits()).collect())
        .collect();
    let label_counts = ds.labels().map(|labels| {
        let mut m = BTreeMap::new();
        for &l in labels {
            *m.entry(l).or_insert(0) += 1;
        }
        m
    });
    let fold =
        |f: fn(f64, f64) -> f64, init: f64, it: &mut dyn Iterator<Item = f64>| it.fold(init, f);
    DatasetSummary {
        n_samples: ds.n_samples(),
        n_features: ds.n_features(),
        domain: domain_name(detected_domain(ds)),
        min: fold(f64::min, f64::INFINITY, &mut x.iter().copied()),
        max: fold(f64::max, f64::NEG_INFINITY, &mut x.iter().copied()),
        mean: if means.is_empty() { 0.0 } else { means.mean() },
        feature_mean_range: [
            fold(f64::min, f64::INFINITY, &mut means.iter().copied()),
            fold(f64::max, f64::NEG_INFINITY, &mut means.iter().copied()),
        ],
        distinct_samples: distinct.len(),
        label_counts,
    }
}

fn say_summary(ctx: &Context, s: &DatasetSummary) {
    ctx.say(format!(
        "{} samples x {} features, {}; values in [{}, {}], mean {:.4} (per feature {:.4} .. {:.4}); {} distinct samples",
        s.n_samples,
        s.n_features,
        s.domain,
        s.min,
        s.max,
        s.mean,
        s.feature_mean_range[0],
        s.feature_mean_range[1],
        s.distinct_samples
    ));
    if let Some(labels) = &s.label_counts {
        let parts: Vec<String> = labels.iter().map(|(l, n)| format!("{l}: {n}")).collect();
        ctx.say(format!("labels: {}", parts.join(", ")));
    }
}

/// The generator a `data generate` subcommand names: its name, its specification and the
/// options every generator shares.
fn generator_spec(g: &Generator) -> (&'static str, GeneratorSpec, &GenerateCommon) {
    match g {
        Generator::Ising {
            size,
            beta,
            samples,
            burn_in,
            sweeps_between,
            common,
        } => {
            let mut cfg = IsingConfig::new(*size, *beta, *samples);
            cfg.burn_in_sweeps = *burn_in;
            cfg.sweeps_between = *sweeps_between;
            ("ising", GeneratorSpec::Ising(cfg), common)
        }
        Generator::BarsStripes {
            size,
            samples,
            noise,
            common,
        } => (
            "bars-stripes",
            GeneratorSpec::BarsAndStripes {
                n: *size,
                n_samples: *samples,
                noise: *noise,
            },
            common,
        ),
        Generator::Clusters {
            preset,
            features,
            samples,
            common,
        } => {
            let cfg = cluster_config(*preset, *features, *samples);
            ("clusters", GeneratorSpec::Clusters(cfg), common)
        }
        Generator::Digits { common, .. } => ("digits", GeneratorSpec::Digits, common),
        Generator::CurieWeiss {
            spins,
            coupling,
            field,
            beta,
            samples,
            common,
        } => (
            "curie-weiss",
            GeneratorSpec::CurieWeiss {
                n: *spins,
                coupling: *coupling,
                field: *field,
                beta: *beta,
                n_samples: *samples,
            },
            common,
        ),
        Generator::Hopfield {
            spins,
            patterns,
            coupling,
            beta,
            samples,
            common,
        } => (
            "hopfield",
            GeneratorSpec::Hopfield {
                n: *spins,
                n_patterns: *patterns,
                coupling: *coupling,
                beta: *beta,
                n_samples: *samples,
            },
            common,
        ),
        Generator::Potts {
            sites,
            states,
            modes,
            mutation,
            samples,
            common,
        } => (
            "potts",
            GeneratorSpec::PlantedPotts(ebm_data::generators::potts::PlantedPotts {
                n_sites: *sites,
                q: *states,
                n_modes: *modes,
                mutation: *mutation,
                n_samples: *samples,
            }),
            common,
        ),
    }
}

/// The clustered set `preset`, with `features` and `samples` when given.
fn cluster_config(
    preset: PresetArg,
    features: Option<usize>,
    samples: Option<usize>,
) -> ClusterConfig {
    let preset = match preset {
        PresetArg::Mickey => ClusterPreset::Mickey,
        PresetArg::TwoClusters1d => ClusterPreset::TwoClusters1d,
        PresetArg::FiveClusters1d => ClusterPreset::FiveClusters1d,
        PresetArg::ThreeClusters2d => ClusterPreset::ThreeClusters2d,
        PresetArg::ThreeClustersOverlap2d => ClusterPreset::ThreeClustersOverlap2d,
    };
    let mut cfg = preset.config();
    if let Some(n) = features {
        cfg.n_features = n;
    }
    if let Some(n) = samples {
        cfg.n_samples = n;
    }
    cfg
}

/// Runs `ebm data generate`: the generator's data (and labels) written, the summary said.
fn generate(g: &Generator, ctx: &Context) -> Result<()> {
    let (name, spec, common) = generator_spec(g);
    let out = common.out.as_path();
    check_matrix_output(out)?;
    let record = record_path_for(out);
    let mut outputs = vec![out];
    if let Some(l) = &common.labels_out {
        check_matrix_output(l)?;
        outputs.push(l);
    }
    check_outputs(&[outputs.as_slice(), &[&record]].concat(), &[])?;

    ebm_core::Error::check_memory(
        &format!("data generate {name}"),
        generated_values(&spec).saturating_mul(16),
    )?;
    let mut ds = ebm_data::generate(&spec, common.seed)
        .map_err(|e| CliError::new(format!("{name}: {e}")))?;
    if let Generator::Digits { nudge: true, .. } = g {
        ds = ebm_data::augment::nudge(&ds, 8, 8)
            .map_err(|e| CliError::new(format!("--nudge: {e}")))?;
    }
    if let Some(d) = common.domain {
        let target = match d {
            DomainArg::Spin => Domain::Spin,
            DomainArg::Binary => Domain::Binary01,
        };
        ds = ds
            .to_domain(target)
            .map_err(|e| CliError::new(format!("--domain: cannot convert the {name} data: {e}")))?;
    }
    if let Some(l) = &common.labels_out
        && ds.labels().is_none()
    {
        bail!(
            "--labels-out {}: the {name} generator gives no labels",
            l.display()
        );
    }
    write_samples(out, ds.data())?;
    if let Some(l) = &common.labels_out {
        write_labels(l, ds.labels().unwrap_or(&[]))?;
    }
    let summary = summarise(&ds);
    ctx.say(format!("{name}: wrote {}", out.display()));
    say_summary(ctx, &summary);
    ctx.finish(
        "data generate",
        Some(common.seed),
        g,
        &[],
        &outputs,
        &summary,
        Some(&record),
    )
}

/// Writes labels as a one-column matrix file.
fn write_labels(path: &Path, labels: &[u32]) -> Result<()> {
    let m = nalgebra::DMatrix::from_iterator(1, labels.len(), labels.iter().map(|&l| f64::from(l)));
    write_samples(path, &m)
}

/// Checks the outputs of a command that reads `file` and writes matrix files, the first of
/// which names the run record; returns the record's path.
fn data_outputs(file: &Path, outputs: &[&Path]) -> Result<std::path::PathBuf> {
    for o in outputs {
        check_matrix_output(o)?;
    }
    let record = record_path_for(outputs[0]);
    check_outputs(&[outputs, &[&record]].concat(), &[file])?;
    Ok(record)
}

/// Loads `file` with the labels of `label_file`: the IDX label file of IDX data, or one
/// integer per row of any other format.
fn load_labelled(file: &Path, label_file: &Path) -> Result<ebm_data::Dataset> {
    if Format::from_path(file) == Some(Format::Idx) {
        let opts = ebm_data::LoadOptions {
            idx_labels: Some(label_file.to_path_buf()),
            ..Default::default()
        };
        Ok(ebm_data::load(file, &opts)?)
    } else {
        let ds = load_dataset(file)?;
        let labels = crate::trace::read_labels(label_file, ds.n_samples())?;
        Ok(ds.with_labels(labels)?)
    }
}

fn split(args: &SplitArgs, ctx: &Context) -> Result<()> {
    let mut outputs = vec![args.train.as_path(), args.test.as_path()];
    outputs.extend(args.train_labels.as_deref());
    outputs.extend(args.test_labels.as_deref());
    let record = data_outputs(&args.file, &outputs)?;
    let ds = match &args.label_file {
        Some(l) => load_labelled(&args.file, l)?,
        None => load_dataset(&args.file)?,
    };
    let (train, test) = ds
        .split(args.train_fraction, args.seed)
        .map_err(|e| CliError::new(format!("--train-fraction {}: {e}", args.train_fraction)))?;
    if train.n_samples() == 0 || test.n_samples() == 0 {
        bail!(
            "--train-fraction {}: {} samples would leave the {} file empty; choose a fraction \
             in (0, 1) that leaves at least one sample on each side",
            args.train_fraction,
            ds.n_samples(),
            if train.n_samples() == 0 {
                "training"
            } else {
                "test"
            }
        );
    }
    write_samples(&args.train, train.data())?;
    write_samples(&args.test, test.data())?;
    for (out, part) in [(&args.train_labels, &train), (&args.test_labels, &test)] {
        if let Some(l) = out {
            write_labels(l, part.labels().unwrap_or(&[]))?;
        }
    }
    let results = [summarise(&train), summarise(&test)];
    ctx.say(format!(
        "{}: {} samples -> {} ({}) and {} ({})",
        args.file.display(),
        ds.n_samples(),
        args.train.display(),
        train.n_samples(),
        args.test.display(),
        test.n_samples()
    ));
    ctx.finish(
        "data split",
        Some(args.seed),
        args,
        &[
            &[args.file.as_path()],
            args.label_file.as_deref().as_slice(),
        ]
        .concat(),
        &outputs,
        &results,
        Some(&record),
    )
}

fn binarize(args: &BinarizeArgs, ctx: &Context) -> Result<()> {
    let record = data_outputs(&args.file, &[&args.out])?;
    let ds = load_dataset(&args.file)?.binarize(args.threshold);
    let ds = match args.domain {
        DomainArg::Binary => ds,
        DomainArg::Spin => ds.to_domain(Domain::Spin)?,
    };
    write_samples(&args.out, ds.data())?;
    let summary = summarise(&ds);
    ctx.say(format!(
        "{}: values > {} -> {}: wrote {}",
        args.file.display(),
        args.threshold,
        match args.domain {
            DomainArg::Binary => "1, else 0",
            DomainArg::Spin => "+1, else -1",
        },
        args.out.display()
    ));
    say_summary(ctx, &summary);
    ctx.finish(
        "data binarize",
        None,
        args,
        &[&args.file],
        &[&args.out],
        &summary,
        Some(&record),
    )
}

fn subset(args: &SubsetArgs, ctx: &Context) -> Result<()> {
    let mut outputs = vec![args.out.as_path()];
    outputs.extend(args.labels_out.as_deref());
    let record = data_outputs(&args.file, &outputs)?;
    let ds = load_labelled(&args.file, &args.label_file)?;
    let kept = ds
        .filter_labels(&args.labels)
        .map_err(|e| CliError::new(format!("--labels: {e}")))?;
    if kept.n_samples() == 0 {
        bail!(
            "--labels {}: no sample of {} has one of these labels",
            args.labels
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            args.file.display()
        );
    }
    write_samples(&args.out, kept.data())?;
    if let Some(l) = &args.labels_out {
        write_labels(l, kept.labels().unwrap_or(&[]))?;
    }
    let summary = summarise(&kept);
    ctx.say(format!(
        "{}: kept {} of {} samples: wrote {}",
        args.file.display(),
        kept.n_samples(),
        ds.n_samples(),
        args.out.display()
    ));
    say_summary(ctx, &summary);
    ctx.finish(
        "data subset",
        None,
        args,
        &[&args.file, &args.label_file],
        &outputs,
        &summary,
        Some(&record),
    )
}

fn format_name(path: &Path) -> &'static str {
    match Format::from_path(path) {
        Some(Format::Npy) => "npy",
        Some(Format::Text) => "text",
        Some(Format::Idx) => "idx",
        Some(Format::Fasta) => "fasta",
        None => "unknown",
    }
}

fn info(args: &InfoArgs, ctx: &Context) -> Result<()> {
    if let Some(out) = &args.out {
        check_outputs(&[out], &[&args.file])?;
    }
    let ds = load_dataset(&args.file)?;
    if ds.n_samples() == 0 {
        bail!(
            "{}: the file holds no samples (0 rows of {} values): no range or means to report",
            args.file.display(),
            ds.n_features()
        );
    }
    let summary = summarise(&ds);
    ctx.say(format!(
        "{} ({})",
        args.file.display(),
        format_name(&args.file)
    ));
    say_summary(ctx, &summary);
    ctx.finish(
        "data info",
        None,
        args,
        &[&args.file],
        &[],
        &summary,
        args.out.as_deref(),
    )
}

/// What `data pca` reports.
#[derive(Serialize, Debug)]
struct PcaResults {
    components: usize,
    centering: &'static str,
    /// Variance along each component.
    variances: Vec<f64>,
    /// Fraction of the total variance along each component.
    explained_variance_ratio: Vec<f64>,
    /// Number of samples projected.
    n_projected: usize,
}

fn pca(args: &PcaArgs, ctx: &Context) -> Result<()> {
    let out = args.out.as_path();
    check_matrix_output(out)?;
    let record = record_path_for(out);
    let mut inputs: Vec<&Path> = vec![&args.file];
    if let Some(p) = &args.project {
        inputs.push(p);
    }
    check_outputs(&[out, &record], &inputs)?;
    let ds = load_dataset(&args.file)?;
    if args.components > ds.n_features() {
        bail!(
            "--components {}: {} has only {} features",
            args.components,
            args.file.display(),
            ds.n_features()
        );
    }
    let centering = if args.uncentered {
        Centering::Uncentered
    } else {
        Centering::Centered
    };
    let fitted = ebm_data::pca(&ds, args.components, centering)?;
    let target = match &args.project {
        Some(p) => load_dataset(p)?,
        None => ds,
    };
    let projected = fitted.project(target.data()).map_err(|e| {
        CliError::new(format!(
            "--project {}: {e}",
            args.project.as_deref().unwrap_or(&args.file).display()
        ))
    })?;
    write_samples(out, &projected)?;
    let results = PcaResults {
        components: args.components,
        centering: if args.uncentered {
            "uncentered"
        } else {
            "centered"
        },
        variances: fitted.variances().to_vec(),
        explained_variance_ratio: fitted.explained_variance_ratio(),
        n_projected: projected.ncols(),
    };
    let ratios: Vec<String> = results
        .explained_variance_ratio
        .iter()
        .map(|r| format!("{:.1}%", 100.0 * r))
        .collect();
    ctx.say(format!(
        "PCA of {} ({}): explained variance {}; wrote {} projections to {}",
        args.file.display(),
        results.centering,
        ratios.join(", "),
        results.n_projected,
        out.display()
    ));
    ctx.finish(
        "data pca",
        None,
        args,
        &inputs,
        &[out],
        &results,
        Some(&record),
    )
}

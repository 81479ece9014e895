//! `ebm plot ...`: reads the files the other commands write and calls [`ebm_plot`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ebm_data::{Centering, Dataset, Domain};
use serde::Serialize;

use crate::cli::ImageOptions;
use crate::cli::PlotCommand;
use crate::error::{CliError, Result, bail};
use crate::files::{check_outputs, load_dataset};
use crate::record::{Context, read_record, record_path_for};
use crate::results::SampleResults;
use ebm_plot::Table;
use ebm_plot::{self as plot, ImageFormat, ImagePanel, PixelValues, Series, SwapRun};

/// What a plot's run record reports.
#[derive(Serialize, Debug)]
struct PlotResults {
    /// The figure kind.
    figure: &'static str,
    /// Curves, bars or point sets drawn, by label, with their number of points.
    drawn: Vec<(String, usize)>,
    /// The CSV columns of the x and y axes, for figures drawn from a table.
    #[serde(skip_serializing_if = "Option::is_none")]
    columns: Option<[String; 2]>,
    /// The exact value drawn as a line, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    exact: Option<f64>,
}

pub(super) fn execute(cmd: &PlotCommand, ctx: &Context) -> Result<()> {
    let (out, inputs): (&Path, Vec<&Path>) = match cmd {
        PlotCommand::Samples {
            data, samples, out, ..
        } => (out, vec![data, samples]),
        PlotCommand::Images { files, out, .. } => {
            (out, files.iter().map(PathBuf::as_path).collect())
        }
        PlotCommand::Chain { record, out, .. } => (out, vec![record]),
        PlotCommand::Jumps { records, out, .. } | PlotCommand::Swaps { records, out, .. } => {
            (out, records.iter().map(PathBuf::as_path).collect())
        }
        PlotCommand::Loglik { csv, out, .. } | PlotCommand::Logz { csv, out, .. } => {
            (out, vec![csv])
        }
    };
    ImageFormat::from_path(out)?;
    let record = figure_record_path(out);
    check_outputs(&[out, &record], &inputs)?;
    let results = match cmd {
        PlotCommand::Samples {
            data,
            samples,
            uncentered,
            out,
        } => samples_figure(data, samples, *uncentered, out)?,
        PlotCommand::Images {
            files,
            labels,
            image,
            count,
            out,
        } => images_figure(files, labels.as_deref(), image, *count, out)?,
        PlotCommand::Chain {
            record,
            image,
            count,
            out,
        } => chain_figure(record, image, *count, out)?,
        PlotCommand::Jumps {
            records,
            labels,
            out,
        } => jumps_figure(records, labels.as_deref(), out)?,
        PlotCommand::Swaps {
            records,
            labels,
            out,
        } => swaps_figure(records, labels.as_deref(), out)?,
        PlotCommand::Loglik { csv, x, y, out } => {
            loglik_figure(csv, x.as_deref(), y.as_deref(), out)?
        }
        PlotCommand::Logz {
            csv,
            x,
            y,
            group,
            exact,
            linear_x,
            out,
        } => logz_figure(
            csv,
            x.as_deref(),
            y.as_deref(),
            group.as_deref(),
            *exact,
            !*linear_x,
            out,
        )?,
    };
    ctx.say(format!("{} figure: {}", results.figure, out.display()));
    ctx.finish("plot", None, cmd, &inputs, &[out], &results, Some(&record))
}

fn samples_figure(
    data: &Path,
    samples: &Path,
    uncentered: bool,
    out: &Path,
) -> Result<PlotResults> {
    let ds = load_dataset(data)?;
    let sm = load_dataset(samples)?;
    if ds.n_features() != sm.n_features() {
        bail!(
            "{} has {} features per sample, {} has {}",
            samples.display(),
            sm.n_features(),
            data.display(),
            ds.n_features()
        );
    }
    if ds.n_features() < 2 {
        bail!(
            "{}: a PC1-PC2 plane needs at least 2 features, the data have {}",
            data.display(),
            ds.n_features()
        );
    }
    let centering = if uncentered {
        Centering::Uncentered
    } else {
        Centering::Centered
    };
    let pca = ebm_data::pca(&ds, 2, centering)?;
    let pairs = |m: &nalgebra::DMatrix<f64>| -> Vec<(f64, f64)> {
        m.column_iter().map(|c| (c[0], c[1])).collect()
    };
    let pd = pairs(&pca.project(ds.data())?);
    let ps = pairs(&pca.project(sm.data())?);
    let ratio = pca.explained_variance_ratio();
    let labels = (
        format!("PC1 ({:.1}% of the variance)", 100.0 * ratio[0]),
        format!("PC2 ({:.1}%)", 100.0 * ratio[1]),
    );
    let name = source_label(samples);
    plot::samples_over_data(out, &pd, &ps, &name, (&labels.0, &labels.1))?;
    Ok(PlotResults {
        figure: "samples over data",
        drawn: vec![("data".into(), pd.len()), (name, ps.len())],
        columns: None,
        exact: None,
    })
}

/// Reads the run record of `ebm sample` at `path` and checks the fields the figures draw
/// against one another: the ladder (at least 2 rungs; finite inverse temperatures >= 0,
/// increasing, for pt and pt-ref (a pt ladder may end at any beta), all 1 with increasing
/// checkpoint updates for ptt, all 1 for stacked tempering, whose rungs are the RBMs of its
/// stack), one swap
/// acceptance in [0, 1] per neighbouring pair, increasing steps and non-decreasing costs of
/// the mode jumps and of the recorded chain, one value per step.
fn read_sample_record(path: &Path) -> Result<SampleResults> {
    let r = read_record::<SampleResults>(path, "sample")?.results;
    let bad = |field: &str, expected: &str| {
        CliError::new(format!(
            "{}: field results.{field}: expected {expected}; the record is not one `ebm \
             sample` wrote",
            path.display()
        ))
    };
    let increasing = |x: &[u64]| x.windows(2).all(|w| w[0] < w[1]);
    if let Some(pt) = &r.pt {
        let b = &pt.betas;
        // Stacked tempering's rungs are the RBMs of its stack, each at beta 1.
        let stacked = r.sampler == "stacked";
        let n_rungs = b.len();
        let ladder_ok = match &pt.checkpoint_updates {
            Some(u) => {
                if u.len() != b.len() || !increasing(u) {
                    return Err(bad(
                        "pt.checkpoint_updates",
                        "one increasing training update per rung",
                    ));
                }
                b.iter().all(|&x| x == 1.0)
            }
            None if stacked => b.iter().all(|&x| x == 1.0),
            None => {
                b.iter().all(|x| x.is_finite() && *x >= 0.0) && b.windows(2).all(|w| w[0] < w[1])
            }
        };
        if n_rungs < 2 || !ladder_ok {
            return Err(bad(
                "pt.betas",
                "at least 2 finite inverse temperatures >= 0, increasing (all 1 for ptt and for \
                 stacked tempering)",
            ));
        }
        if pt.acceptance_rates.len() != n_rungs - 1
            || pt
                .acceptance_rates
                .iter()
                .flatten()
                .any(|a| !(0.0..=1.0).contains(a))
        {
            return Err(bad(
                "pt.acceptance_rates",
                &format!(
                    "{} rates in [0, 1], one per pair of neighbouring rungs",
                    n_rungs - 1
                ),
            ));
        }
        if !(pt.round_trip_rate >= 0.0 && pt.round_trip_rate.is_finite()) {
            return Err(bad("pt.round_trip_rate", "a finite rate >= 0"));
        }
    }
    if let Some(j) = &r.mode_jumps {
        let n = j.steps.len();
        if !increasing(&j.steps) {
            return Err(bad("mode_jumps.steps", "increasing steps"));
        }
        if j.gibbs_sweeps.len() != n || j.gibbs_sweeps.windows(2).any(|w| w[0] > w[1]) {
            return Err(bad(
                "mode_jumps.gibbs_sweeps",
                "one non-decreasing cost per recorded step",
            ));
        }
        let c = &j.cumulative_mean_jumps;
        if c.len() != n
            || c.iter().any(|x| x.is_nan() || *x < 0.0)
            || c.windows(2).any(|w| w[0] > w[1])
        {
            return Err(bad(
                "mode_jumps.cumulative_mean_jumps",
                "one non-decreasing count >= 0 per recorded step",
            ));
        }
    }
    if let Some(c) = &r.chain
        && !increasing(&c.steps)
    {
        return Err(bad("chain.steps", "increasing steps"));
    }
    Ok(r)
}

/// Checks that `--labels` has one entry per input (`n` of them, each a `what`).
fn check_labels(labels: Option<&[String]>, n: usize, what: &str) -> Result<()> {
    match labels {
        Some(l) if l.len() != n => bail!(
            "--labels has {} entries for {n} {what}s; give one label per {what}",
            l.len()
        ),
        _ => Ok(()),
    }
}

/// Reads the `ebm sample` records and pairs each with its label.
fn sample_records(
    records: &[PathBuf],
    labels: Option<&[String]>,
) -> Result<Vec<(String, PathBuf, SampleResults)>> {
    check_labels(labels, records.len(), "record")?;
    records
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let r = read_sample_record(p)?;
            let label = labels.map_or_else(|| r.description.clone(), |l| l[i].clone());
            Ok((label, p.clone(), r))
        })
        .collect()
}

fn jumps_figure(records: &[PathBuf], labels: Option<&[String]>, out: &Path) -> Result<PlotResults> {
    let mut series = Vec::new();
    for (label, path, r) in sample_records(records, labels)? {
        let Some(j) = r.mode_jumps else {
            bail!(
                "{} has no mode jumps: run `ebm sample` with --data and --trace-every",
                path.display()
            );
        };
        let points = j
            .gibbs_sweeps
            .iter()
            .zip(&j.cumulative_mean_jumps)
            .map(|(&x, &y)| (x as f64, y))
            .collect();
        series.push(Series { label, points });
    }
    plot::mode_jumps(out, &series)?;
    Ok(PlotResults {
        figure: "mode jumps",
        drawn: drawn(&series),
        columns: None,
        exact: None,
    })
}

fn swaps_figure(records: &[PathBuf], labels: Option<&[String]>, out: &Path) -> Result<PlotResults> {
    let mut runs = Vec::new();
    for (label, path, r) in sample_records(records, labels)? {
        let Some(pt) = r.pt else {
            bail!(
                "{} is a {} run: swap statistics need --sampler pt, pt-ref or ptt",
                path.display(),
                r.sampler
            );
        };
        runs.push(SwapRun {
            label,
            acceptance: pt.acceptance_rates,
            round_trip_rate: pt.round_trip_rate,
            ideal_deo_round_trip_rate: pt.ideal_deo_round_trip_rate,
        });
    }
    plot::swap_acceptance(out, &runs)?;
    Ok(PlotResults {
        figure: "swap acceptance",
        drawn: runs
            .iter()
            .map(|r| (r.label.clone(), r.acceptance.len()))
            .collect(),
        columns: None,
        exact: None,
    })
}

fn loglik_figure(
    csv: &Path,
    x: Option<&str>,
    y: Option<&[String]>,
    out: &Path,
) -> Result<PlotResults> {
    let t = Table::read(csv)?;
    let xk = match x {
        Some(name) => t.column(name)?,
        None => 0,
    };
    let yk: Vec<usize> = match y {
        Some(names) => names
            .iter()
            .map(|n| t.column(n))
            .collect::<ebm_core::Result<_>>()?,
        // The log of `ebm train`: its log-likelihood columns, not every diagnostic.
        None if t.columns.iter().any(|c| c == "train_ll") => (0..t.columns.len())
            .filter(|&k| {
                k != xk
                    && ["train_ll", "test_ll"].contains(&t.columns[k].as_str())
                    && t.is_numeric(k)
            })
            .collect(),
        None => (0..t.columns.len())
            .filter(|&k| k != xk && t.is_numeric(k))
            .collect(),
    };
    if yk.is_empty() {
        bail!(
            "{}: no numeric column to draw besides \"{}\"",
            csv.display(),
            t.columns[xk]
        );
    }
    let xs = t.numbers(xk)?;
    let mut series = Vec::new();
    for &k in &yk {
        let ys = t.numbers(k)?;
        let points = xs
            .iter()
            .zip(&ys)
            .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
            .collect();
        series.push(Series {
            label: column_title(&t.columns[k]),
            points,
        });
    }
    let names: Vec<&str> = yk.iter().map(|&k| t.columns[k].as_str()).collect();
    let x_label = match t.columns[xk].as_str() {
        "update" | "updates" => "parameter updates".to_string(),
        other => column_title(other),
    };
    let figure = if names.iter().all(|n| LOGLIK_COLUMNS.contains(n)) {
        plot::line_chart(
            out,
            "Log-likelihood",
            (&x_label, "mean log-likelihood"),
            &series,
        )?;
        "log-likelihood"
    } else {
        let title = names.iter().map(|n| column_title(n)).collect::<Vec<_>>();
        let y_label = if title.len() == 1 {
            title[0].as_str()
        } else {
            "value"
        };
        plot::line_chart(out, &title.join(", "), (&x_label, y_label), &series)?;
        "training log"
    };
    Ok(PlotResults {
        figure,
        drawn: drawn(&series),
        columns: None,
        exact: None,
    })
}

/// The log-likelihood columns of a training log.
const LOGLIK_COLUMNS: [&str; 2] = ["train_ll", "test_ll"];

/// A column's name for a title or legend: the log-likelihood columns in words, others with
/// spaces for underscores.
fn column_title(name: &str) -> String {
    match name {
        "train_ll" => "train data".into(),
        "test_ll" => "test data".into(),
        "log_z" => "log Z".into(),
        other => other.replace('_', " "),
    }
}

/// The record of a figure: the figure's file name with `.json` appended (`fig.png.json`), so
/// that it never replaces the record of the command that wrote the figure's inputs (`ebm
/// sample --out ptt.npy` writes `ptt.json`).
pub(super) fn figure_record_path(figure: &Path) -> PathBuf {
    let mut name = figure.as_os_str().to_owned();
    name.push(".json");
    PathBuf::from(name)
}

/// What to call the rows of a file in a legend or title: the sampler, when the file was
/// written by `ebm sample` (its record beside it says so), else the file name.
fn source_label(file: &Path) -> String {
    read_record::<SampleResults>(&record_path_for(file), "sample")
        .map(|r| r.results.description)
        .unwrap_or_else(|_| {
            file.file_name().map_or_else(
                || file.display().to_string(),
                |n| n.to_string_lossy().into(),
            )
        })
}

/// Configurations as images: the pixel values of each row and how they map to colours.
struct Images {
    rows: Vec<Vec<f64>>,
    values: PixelValues,
    shape: (usize, usize),
}

/// Reads the rows `which` of `ds` (from `file`) as images (see `ebm plot images --help`).
fn images_of(ds: &Dataset, file: &Path, opts: &ImageOptions, which: &[usize]) -> Result<Images> {
    let n = ds.n_features();
    let x = ds.data();
    let column = |j: usize| x.column(j).iter().copied().collect::<Vec<f64>>();
    let fits = |d: Domain| ebm_data::dataset::check_domain(x, d).is_ok();
    let (values, rows): (PixelValues, Vec<Vec<f64>>) = match (opts.states, ds.domain()) {
        (Some(q), _) | (None, Domain::OneHot { q } | Domain::Categorical { q }) => {
            if n.is_multiple_of(q) && fits(Domain::OneHot { q }) && q > 1 {
                // One-hot blocks: the state of each site is the position of its 1.
                let argmax = |j: usize| -> Vec<f64> {
                    x.column(j)
                        .as_slice()
                        .chunks(q)
                        .map(|b| b.iter().position(|&v| v == 1.0).unwrap_or(0) as f64)
                        .collect()
                };
                (
                    PixelValues::Categorical { q },
                    which.iter().map(|&j| argmax(j)).collect(),
                )
            } else if fits(Domain::Categorical { q }) {
                (
                    PixelValues::Categorical { q },
                    which.iter().map(|&j| column(j)).collect(),
                )
            } else {
                bail!(
                    "{}: --states {q}: the rows are neither one-hot blocks of {q} values nor \
                     state codes 0..{}",
                    file.display(),
                    q - 1
                );
            }
        }
        _ if fits(Domain::Binary01) => (
            PixelValues::Binary,
            which.iter().map(|&j| column(j)).collect(),
        ),
        _ if fits(Domain::Spin) => (
            PixelValues::Spin,
            which.iter().map(|&j| column(j)).collect(),
        ),
        _ => {
            let rows: Vec<Vec<f64>> = which.iter().map(|&j| column(j)).collect();
            let lo = rows.iter().flatten().copied().fold(f64::INFINITY, f64::min);
            let hi = rows
                .iter()
                .flatten()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            (PixelValues::Real { lo, hi }, rows)
        }
    };
    let sites = rows.first().map_or(n, Vec::len);
    let shape = match opts.shape {
        Some((h, w)) if h * w == sites => (h, w),
        Some((h, w)) => bail!(
            "--shape {h}x{w} has {} pixels, but {} has {sites} sites per row",
            h * w,
            file.display()
        ),
        None => {
            let side = (sites as f64).sqrt().round() as usize;
            if side * side != sites {
                bail!(
                    "{}: {sites} sites per row is not a square image; give its shape with \
                     --shape HxW",
                    file.display()
                );
            }
            (side, side)
        }
    };
    Ok(Images {
        rows,
        values,
        shape,
    })
}

/// The one colour mapping of several files: the same kind for all, real ranges merged.
fn common_values(files: &[PathBuf], images: &[Images]) -> Result<PixelValues> {
    let mut values = images[0].values;
    for (f, im) in files.iter().zip(images).skip(1) {
        values = match (values, im.values) {
            (PixelValues::Real { lo, hi }, PixelValues::Real { lo: l, hi: h }) => {
                PixelValues::Real {
                    lo: lo.min(l),
                    hi: hi.max(h),
                }
            }
            (a, b) if a == b => a,
            (a, b) => bail!(
                "{} holds other values ({b:?}) than {} ({a:?}); draw them in separate figures",
                f.display(),
                files[0].display()
            ),
        };
    }
    Ok(values)
}

fn images_figure(
    files: &[PathBuf],
    labels: Option<&[String]>,
    opts: &ImageOptions,
    count: usize,
    out: &Path,
) -> Result<PlotResults> {
    check_labels(labels, files.len(), "file")?;
    let images = files
        .iter()
        .map(|f| {
            let ds = load_dataset(f)?;
            let rows: Vec<usize> = (0..ds.n_samples().min(count)).collect();
            images_of(&ds, f, opts, &rows)
        })
        .collect::<Result<Vec<_>>>()?;
    let values = common_values(files, &images)?;
    let shape = images[0].shape;
    if let Some((f, im)) = files.iter().zip(&images).find(|(_, im)| im.shape != shape) {
        bail!(
            "{} has {}x{} images, {} has {}x{}",
            f.display(),
            im.shape.0,
            im.shape.1,
            files[0].display(),
            shape.0,
            shape.1
        );
    }
    let panels: Vec<ImagePanel> = files
        .iter()
        .zip(images)
        .enumerate()
        .map(|(i, (f, im))| ImagePanel {
            title: labels.map_or_else(|| source_label(f), |l| l[i].clone()),
            images: im.rows,
            captions: Vec::new(),
        })
        .collect();
    let most = panels.iter().map(|p| p.images.len()).max().unwrap_or(1);
    let columns = opts
        .columns
        .unwrap_or_else(|| (most as f64).sqrt().ceil() as usize);
    plot::image_grid(out, &panels, shape, columns, values)?;
    Ok(PlotResults {
        figure: "images",
        drawn: panels
            .iter()
            .map(|p| (p.title.clone(), p.images.len()))
            .collect(),
        columns: None,
        exact: None,
    })
}

/// `count` indices evenly spaced in `0..n`, always the first and the last.
fn evenly_spaced(n: usize, count: usize) -> Vec<usize> {
    if count >= n || n < 2 {
        return (0..n).collect();
    }
    if count < 2 {
        return vec![n - 1];
    }
    (0..count)
        .map(|i| (2 * i * (n - 1) + (count - 1)) / (2 * (count - 1)))
        .collect()
}

fn chain_figure(
    record: &Path,
    opts: &ImageOptions,
    count: usize,
    out: &Path,
) -> Result<PlotResults> {
    let r = read_sample_record(record)?;
    let Some(chain) = r.chain else {
        bail!(
            "{} has no recorded chain: run `ebm sample` with --trace-every N and --chain-out FILE",
            record.display()
        );
    };
    // The chain file as given to `ebm sample`, else beside the record.
    let file = if chain.file.exists() {
        chain.file.clone()
    } else {
        let name = chain.file.file_name().unwrap_or(chain.file.as_os_str());
        record.parent().unwrap_or(Path::new(".")).join(name)
    };
    let ds = load_dataset(&file)?;
    if ds.n_samples() != chain.steps.len() {
        bail!(
            "{}: {} rows, but the record {} lists {} recorded steps",
            file.display(),
            ds.n_samples(),
            record.display(),
            chain.steps.len()
        );
    }
    let frames = evenly_spaced(ds.n_samples(), count);
    let im = images_of(&ds, &file, opts, &frames)?;
    let panel = ImagePanel {
        title: format!("{}: chain 0 over {} steps", r.description, r.steps),
        images: im.rows,
        captions: frames
            .iter()
            .map(|&k| format!("step {}", chain.steps[k]))
            .collect(),
    };
    let columns = opts.columns.unwrap_or(10);
    plot::image_grid(
        out,
        std::slice::from_ref(&panel),
        im.shape,
        columns,
        im.values,
    )?;
    Ok(PlotResults {
        figure: "chain",
        drawn: vec![(panel.title, frames.len())],
        columns: None,
        exact: None,
    })
}

fn logz_figure(
    csv: &Path,
    x: Option<&str>,
    y: Option<&str>,
    group: Option<&str>,
    exact: Option<f64>,
    log_cost: bool,
    out: &Path,
) -> Result<PlotResults> {
    let t = Table::read(csv)?;
    let numeric: Vec<usize> = (0..t.columns.len()).filter(|&k| t.is_numeric(k)).collect();
    // The first numeric column among `names`, in that order of preference.
    let preferred = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| numeric.iter().copied().find(|&k| t.columns[k] == *n))
    };
    let xk = match x {
        Some(n) => t.column(n)?,
        None => preferred(&COST_COLUMNS)
            .or_else(|| numeric.first().copied())
            .ok_or_else(|| no_column(csv, "cost", "x", numeric.len()))?,
    };
    let yk = match y {
        Some(n) => t.column(n)?,
        None => preferred(&ESTIMATE_COLUMNS)
            .or_else(|| numeric.iter().copied().find(|&k| k != xk))
            .ok_or_else(|| no_column(csv, "estimate", "y", numeric.len()))?,
    };
    // The exact value from the file when it has one constant `exact_log_z` column and the
    // estimates are log Z themselves.
    let exact = match exact {
        Some(v) => Some(v),
        None if t.columns[yk] == "log_z" => match t.column("exact_log_z") {
            Ok(k) if t.is_numeric(k) => {
                let v: Vec<f64> = t.numbers(k)?.into_iter().flatten().collect();
                v.first().copied().filter(|&a| v.iter().all(|&b| b == a))
            }
            _ => None,
        },
        None => None,
    };
    let gk = match group {
        Some(g) => Some(t.column(g)?),
        None => (0..t.columns.len()).find(|&k| !t.is_numeric(k)),
    };
    let xs = t.numbers(xk)?;
    let ys = t.numbers(yk)?;
    let names: Vec<&str> = match gk {
        Some(k) => t.texts(k),
        None => vec![t.columns[yk].as_str(); xs.len()],
    };
    let mut groups: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for ((x, y), name) in xs.iter().zip(&ys).zip(&names) {
        if let (Some(x), Some(y)) = (x, y) {
            if !groups.contains_key(name) {
                order.push(name);
            }
            groups.entry(name).or_default().push((*x, *y));
        }
    }
    let series: Vec<Series> = order
        .into_iter()
        .map(|name| {
            let mut points = groups.remove(name).unwrap_or_default();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: name.to_string(),
                points,
            }
        })
        .collect();
    plot::log_z_versus_cost(out, &series, exact, log_cost)?;
    Ok(PlotResults {
        figure: "log Z versus cost",
        drawn: drawn(&series),
        columns: Some([t.columns[xk].clone(), t.columns[yk].clone()]),
        exact,
    })
}

/// Cost columns `plot logz` looks for, in order, when --x is not given.
const COST_COLUMNS: [&str; 4] = ["gibbs_sweeps", "gibbs_steps", "cost", "sweeps"];
/// Estimate columns `plot logz` looks for, in order, when --y is not given.
const ESTIMATE_COLUMNS: [&str; 3] = ["log_z", "estimate", "log_z_estimate"];

fn no_column(csv: &Path, what: &str, option: &str, numeric: usize) -> CliError {
    CliError::new(format!(
        "{}: cannot choose the {what} column (the file has {numeric} numeric columns); name it \
         with --{option}",
        csv.display()
    ))
}

fn drawn(series: &[Series]) -> Vec<(String, usize)> {
    series
        .iter()
        .map(|s| (s.label.clone(), s.points.len()))
        .collect()
}

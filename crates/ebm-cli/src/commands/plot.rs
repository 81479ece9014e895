//! `ebm plot ...`: reads the files the other commands write and calls [`crate::plot`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ebm_data::Centering;
use serde::Serialize;

use super::sample::SampleResults;
use crate::cli::PlotCommand;
use crate::error::{CliError, Result, bail};
use crate::files::{Table, check_outputs, load_dataset};
use crate::plot::{self, ImageFormat, Series, SwapRun};
use crate::record::{Context, read_record, record_path_for};

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
        PlotCommand::Jumps { records, out, .. } | PlotCommand::Swaps { records, out, .. } => {
            (out, records.iter().map(PathBuf::as_path).collect())
        }
        PlotCommand::Loglik { csv, out, .. } | PlotCommand::Logz { csv, out, .. } => {
            (out, vec![csv])
        }
    };
    ImageFormat::from_path(out)?;
    let record = record_path_for(out);
    check_outputs(&[out, &record], &inputs)?;
    let results = match cmd {
        PlotCommand::Samples {
            data,
            samples,
            uncentered,
            out,
        } => samples_figure(data, samples, *uncentered, out)?,
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
    plot::samples_over_data(out, &pd, &ps, (&labels.0, &labels.1))?;
    Ok(PlotResults {
        figure: "samples over data",
        drawn: vec![("data".into(), pd.len()), ("samples".into(), ps.len())],
        columns: None,
        exact: None,
    })
}

/// Reads the `ebm sample` records and pairs each with its label.
fn sample_records(
    records: &[PathBuf],
    labels: Option<&[String]>,
) -> Result<Vec<(String, PathBuf, SampleResults)>> {
    if let Some(l) = labels
        && l.len() != records.len()
    {
        bail!(
            "--labels has {} entries for {} records; give one label per record",
            l.len(),
            records.len()
        );
    }
    records
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let r = read_record::<SampleResults>(p, "sample")?.results;
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
        if j.gibbs_sweeps.len() != j.cumulative_mean_jumps.len() {
            bail!(
                "{}: {} costs for {} jump counts in mode_jumps",
                path.display(),
                j.gibbs_sweeps.len(),
                j.cumulative_mean_jumps.len()
            );
        }
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
        Some(names) => names.iter().map(|n| t.column(n)).collect::<Result<_>>()?,
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
    for k in yk {
        let ys = t.numbers(k)?;
        let points = xs
            .iter()
            .zip(&ys)
            .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
            .collect();
        series.push(Series {
            label: t.columns[k].clone(),
            points,
        });
    }
    plot::log_likelihood(out, &series)?;
    Ok(PlotResults {
        figure: "log-likelihood",
        drawn: drawn(&series),
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

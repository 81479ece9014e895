//! `logz-estimators` (paper 000, Fig. 3): the absolute error of \\(\log Z\\) against the budget
//! in Gibbs sweeps per chain, for temperature AIS, AIS from a data-fitted reference, offline
//! trajectory AIS and PTT with Bennett's acceptance ratio, on an RBM trained on 2D Ising
//! configurations (or a model trained by `ebm train`, `--model`) whose hidden layer is small
//! enough to give the exact \\(\log Z\\). The online trajectory-AIS estimate of the training run
//! is reported beside them (its cost is the training's own negative phase).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ebm_estimators::standard_score;
use serde::Serialize;
use serde_json::Value;

use super::output_dir;
use crate::cli::ReproduceArgs;
use crate::error::{CliError, Result, bail};
use crate::models::ModelSummary;
use crate::pipeline::{DemoPlan, Runner, ising_and_training};
use crate::record::{Context, read_record};
use crate::results::{TrainOutputs, TrainResults};

const PAPER_000_FIG3: &str = "Overall, the online Tr-AIS estimation consistently outperforms the \
    other methods, and only the PTT estimation yields similar results in offline analyses \
    (paper 000, Fig. 3: error of the log-likelihood against the number of Gibbs steps for AIS, \
    AIS with a reference, Tr-AIS offline and online, and PTT).";

/// One estimate at one budget.
#[derive(Debug, Serialize, Clone)]
struct LogZRow {
    estimator: String,
    /// Gibbs sweeps per chain actually spent (burn-in included).
    gibbs_sweeps_per_chain: f64,
    log_z: f64,
    std_err: f64,
    ess: Option<f64>,
    /// estimate - exact.
    error: f64,
    /// |error| / std_err: above 3, the error bar does not cover the truth.
    z: f64,
    /// The kinds of the warnings the estimate itself raised (`estimate.warnings` of its
    /// record): a row off by more than 3 s.e. with a warning is honest, one without is not.
    warnings: Vec<String>,
    /// AIS rows: reverse AIS on the same path from exact draws of the model, `[log Z, std
    /// err]`, the second view whose gap to the forward estimate is checked
    /// (`sandwich_gap` among the warnings when it exceeds 3 combined standard errors). Its
    /// sweeps are the check's, not counted in the row's budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    reverse_ais: Option<[f64; 2]>,
}

/// What `ebm reproduce logz-estimators` measured.
#[derive(Debug, Serialize)]
struct LogZResults {
    claim: &'static str,
    paper_statement: &'static str,
    /// The demo's sizes, for the model trained here (`None` with `--model`).
    plan: Option<DemoPlan>,
    /// The model whose \\(\log Z\\) is estimated, with its data and checkpoint trajectory.
    model: TrainedModel,
    exact_log_z: f64,
    chains: usize,
    budgets: Vec<u64>,
    rows: Vec<LogZRow>,
    /// The online trajectory-AIS estimate at the end of training.
    online: Option<LogZRow>,
    /// Mean |error| at the largest budget, per estimator, best first.
    ranking: Vec<(String, f64)>,
    verdict: String,
    reason: String,
    commands: Vec<String>,
}

/// The trained model of the claim: the demo's RBM trained here on Ising configurations, or the
/// one `--model` names (trained by `ebm train`, whose run record beside it gives its data, its
/// checkpoint trajectory and its online \\(\log Z\\)).
#[derive(Debug, Serialize)]
struct TrainedModel {
    #[serde(flatten)]
    files: ModelFiles,
    /// Its unit kinds and sizes.
    summary: ModelSummary,
    /// Whether it is the model given by `--model` (not trained here).
    given: bool,
}

/// The files of the claim's model.
#[derive(Debug, Serialize, Clone)]
struct ModelFiles {
    /// The model file (the last checkpoint).
    model: PathBuf,
    /// Its training data (the reference of reference AIS).
    data: PathBuf,
    /// Its checkpoint trajectory (Tr-AIS and PTT).
    trajectory: PathBuf,
}

/// The model of `--model`, from its run record `MODEL.json` (beside it, as `ebm train` writes
/// them): its trajectory (`MODEL.trajectory.safetensors`, also beside it), its data (`--data`,
/// or the training's `--data` as the record gives it, relative to where the training ran) and
/// the training's results.
fn given_model(args: &ReproduceArgs, model: &Path) -> Result<(ModelFiles, TrainResults)> {
    let files = TrainOutputs::of(model);
    let record = read_record::<TrainResults>(&files.record, "train")
        .map_err(|e| CliError::new(format!("--model {}: {e}", model.display())))?;
    let named = |p: &Path| p.file_name() == model.file_name();
    if !record.outputs.iter().any(|o| named(o)) {
        bail!(
            "--model {}: {} is the record of another training (its model is not among its \
             outputs)",
            model.display(),
            files.record.display()
        );
    }
    if record.results.log_z.is_none() {
        bail!(
            "--model {}: its training has no online log Z (train with --loglik-every)",
            model.display()
        );
    }
    let data = match &args.data {
        Some(d) => d.clone(),
        None => {
            let recorded = record.settings["data"].as_str().map(PathBuf::from);
            match recorded {
                Some(d) if d.exists() => d,
                Some(d) => bail!(
                    "--model {}: its training data {} (as its record gives it) is not here; \
                     give it with --data",
                    model.display(),
                    d.display()
                ),
                None => bail!(
                    "--model {}: its record names no training data; give it with --data",
                    model.display()
                ),
            }
        }
    };
    let files = ModelFiles {
        model: model.to_path_buf(),
        data,
        trajectory: files.trajectory,
    };
    Ok((files, record.results))
}

pub(super) fn logz_estimators(args: &ReproduceArgs, ctx: &Context) -> Result<()> {
    let started = Instant::now();
    let plan = DemoPlan::new(args.quick);
    let dir = output_dir(args, "logz-estimators")?;
    let p = |name: &str| dir.join(name);
    let given = args
        .model
        .as_deref()
        .map(|m| given_model(args, m))
        .transpose()?;
    let files = match &given {
        Some((f, _)) => f.clone(),
        None => ModelFiles::trained_in(&dir),
    };
    let test = p("ising-test.npy");
    let ModelFiles {
        model,
        data,
        trajectory,
    } = &files;
    let (exact_rec, report, csv, figure) = (
        p("exact.json"),
        p("report.md"),
        p("results.csv"),
        p("logz.png"),
    );
    let records = p("records");
    create_dir(&records)?;
    let mut runner = Runner {
        prefix: "reproduce",
        paths: vec![
            ("@DATA", data),
            ("@TEST", &test),
            ("@MODEL", model),
            ("@TRAJ", trajectory),
            ("@EXACT", &exact_rec),
            ("@CSV", &csv),
            ("@FIG", &figure),
        ],
        commands: Vec::new(),
    };
    let seed = args.seed;
    let trained = match given {
        Some((_, trained)) => trained,
        None => ising_and_training(&plan, seed, false, model, &mut runner, ctx)?.1,
    };
    let exact = exact_log_z(ctx, &mut runner, &exact_rec)?;
    let k = trained.checkpoint_updates.len() as u64;
    let (chains, budgets) = budgets(args.quick);
    let rows = run_estimators(
        ctx,
        &mut runner,
        &records,
        (&budgets, k),
        (chains, seed),
        exact,
    )?;
    let online = online_row(&trained, exact);
    write_csv(&csv, &rows, exact)?;
    runner.step(ctx, "figure", "plot logz @CSV --out @FIG")?;

    let largest = *budgets.last().expect("budgets");
    let ranking = ranking(&rows, online.as_ref());
    let (verdict, reason) = verdict(&ranking, &rows, largest);
    let results = LogZResults {
        claim: "logz-estimators",
        paper_statement: PAPER_000_FIG3,
        plan: args.model.is_none().then_some(plan),
        model: TrainedModel {
            files: files.clone(),
            summary: trained.model.clone(),
            given: args.model.is_some(),
        },
        exact_log_z: exact,
        chains,
        budgets,
        rows,
        online,
        ranking,
        verdict: verdict.into(),
        reason,
        commands: std::mem::take(&mut runner.commands),
    };
    ebm_io::write_atomically(&report, |w| {
        w.write_all(report_text(args, &results, &dir).as_bytes())
    })?;
    for (label, e) in &results.ranking {
        ctx.say(format!("reproduce: {label:<18} |error| {e:.4}"));
    }
    super::finish(
        args,
        ctx,
        &dir,
        (&results.verdict, &results.reason),
        started,
        &report,
        &[&report, &csv, &figure],
        &results,
    )
}

/// The chains of every run and the budgets of the comparison, in Gibbs sweeps per chain.
fn budgets(quick: bool) -> (usize, Vec<u64>) {
    if quick {
        (200, vec![30, 120])
    } else {
        (500, vec![50, 200, 800, 3200])
    }
}

impl ModelFiles {
    /// The files of the model this claim trains in `dir` (on the Ising data it generates).
    fn trained_in(dir: &Path) -> Self {
        Self {
            model: dir.join("model.safetensors"),
            data: dir.join("ising.npy"),
            trajectory: dir.join("model.trajectory.safetensors"),
        }
    }
}

/// Creates the directory `dir` (and its parents) if missing.
fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))
}

/// The exact \\(\log Z\\) of `@MODEL` (`ebm loglik exact`, recorded in `record`).
fn exact_log_z(ctx: &Context, runner: &mut Runner<'_>, record: &Path) -> Result<f64> {
    runner.step(
        ctx,
        "exact log Z (hidden layer enumerated)",
        "loglik exact --model @MODEL --data @DATA --out @EXACT",
    )?;
    read_record::<Value>(record, "loglik exact")?.results["log_z"]
        .as_f64()
        .ok_or_else(|| CliError::new("reproduce: the exact record has no log_z"))
}

/// The training's online estimate as a row, with the warnings the training raised about it.
fn online_row(trained: &TrainResults, exact: f64) -> Option<LogZRow> {
    trained.log_z.map(|[z, se]| LogZRow {
        warnings: trained
            .log_z_warnings
            .iter()
            .filter_map(|w| {
                serde_json::to_value(w).ok()?["kind"]
                    .as_str()
                    .map(String::from)
            })
            .collect(),
        ..row("Tr-AIS online", f64::NAN, z, se, None, exact)
    })
}

/// The estimators compared: (label, command, path of `reverse-ais`). AIS runs as
/// `reverse-ais`, whose forward run is `loglik ais` with the same seed, checked against reverse
/// AIS from exact draws (the sandwich).
const ESTIMATORS: [(&str, &str, &str); 4] = [
    ("AIS (temperature)", "loglik reverse-ais", "temperature"),
    ("AIS (reference)", "loglik reverse-ais", "reference"),
    ("Tr-AIS offline", "loglik tr-ais", ""),
    ("PTT + BAR", "loglik ptt", ""),
];

/// Runs every estimator of [`ESTIMATORS`] at every budget `b` of Gibbs sweeps per chain
/// (`budgets`, on a trajectory of `k` checkpoints), each with `chains` chains and `seed`,
/// writing its record in `records`; returns a row per run, against the `exact` log Z.
fn run_estimators(
    ctx: &Context,
    runner: &mut Runner<'_>,
    records: &Path,
    (budgets, k): (&[u64], u64),
    (chains, seed): (usize, u64),
    exact: f64,
) -> Result<Vec<LogZRow>> {
    let mut rows = Vec::new();
    for &b in budgets {
        for (label, command, path) in ESTIMATORS {
            let options = estimator_options(command, path, b, k);
            let stem = format!(
                "{}-{b}",
                label
                    .to_lowercase()
                    .replace([' ', '(', ')', '+'], "-")
                    .replace("--", "-")
                    .trim_matches('-')
            );
            let record = records.join(format!("{stem}.json"));
            runner.step_with(
                ctx,
                &format!("{label}, {b} Gibbs sweeps per chain"),
                &format!("{command} {options} --chains {chains} --seed {seed} --out @REC"),
                &[("@REC", &record)],
            )?;
            rows.push(read_row(&record, (label, command), chains, exact)?);
        }
    }
    Ok(rows)
}

/// The options of `command` for a budget of `b` Gibbs sweeps per chain on a trajectory of `k`
/// checkpoints: `b + 1` rungs of one sweep for AIS on `path`, `(K - 1)` transitions of
/// `b / (K - 1)` sweeps for trajectory AIS, `b / K` rounds of one sweep per rung for PTT (a
/// fifth of them burn-in).
fn estimator_options(command: &str, path: &str, b: u64, k: u64) -> String {
    match command {
        "loglik reverse-ais" => {
            let reference = if path == "reference" {
                " --reference-data @DATA"
            } else {
                ""
            };
            format!("--model @MODEL --path {path}{reference} --rungs {}", b + 1)
        }
        "loglik tr-ais" => format!(
            "--trajectory @TRAJ --sweeps {}",
            (b / (k - 1).max(1)).max(1)
        ),
        _ => {
            let rounds = (b / k).max(5);
            format!(
                "--trajectory @TRAJ --steps {rounds} --burn-in {}",
                rounds / 5
            )
        }
    }
}

/// The row of the run of `command` (`label`) recorded in `record`, with `chains` chains,
/// against the `exact` log Z: for `reverse-ais`, the forward run of its sandwich, with the
/// sandwich's verdict among its warnings and the reverse estimate beside it.
fn read_row(
    record: &Path,
    (label, command): (&str, &str),
    chains: usize,
    exact: f64,
) -> Result<LogZRow> {
    let r = read_record::<Value>(record, command)?.results;
    let lacks = || {
        CliError::new(format!(
            "reproduce: {} lacks log_z, std_err or the sweeps",
            record.display()
        ))
    };
    let (log_z, se) = (r["log_z"].as_f64(), r["std_err"].as_f64());
    let (Some(log_z), Some(se)) = (log_z, se) else {
        return Err(lacks());
    };
    let kinds = |e: &Value| -> Vec<String> {
        e["warnings"]
            .as_array()
            .map(|ws| {
                ws.iter()
                    .filter_map(|w| w["kind"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    if command == "loglik reverse-ais" {
        let annealing = &r["annealing"];
        let f = &annealing["sandwich"]["ais"];
        let (Some(z), Some(e), Some(steps), Some(sweeps)) = (
            f["log_z"].as_f64(),
            f["std_err"].as_f64(),
            f["kernel_steps"].as_f64(),
            annealing["sweeps_per_rung"].as_f64(),
        ) else {
            return Err(lacks());
        };
        let per_chain = steps * sweeps / chains as f64;
        Ok(LogZRow {
            warnings: kinds(f),
            reverse_ais: Some([log_z, se]),
            ..row(label, per_chain, z, e, f["ess"].as_f64(), exact)
        })
    } else {
        let Some(sweeps) = r["gibbs_sweeps"].as_f64() else {
            return Err(lacks());
        };
        let ess = r["ess"].as_f64();
        Ok(LogZRow {
            warnings: kinds(&r["estimate"]),
            ..row(label, sweeps / chains as f64, log_z, se, ess, exact)
        })
    }
}

/// The estimators by the absolute error of their largest budget (their last row), the online
/// estimate among them, smallest first.
fn ranking(rows: &[LogZRow], online: Option<&LogZRow>) -> Vec<(String, f64)> {
    let mut ranking: Vec<(String, f64)> = ESTIMATORS
        .iter()
        .map(|(label, _, _)| {
            let r = rows
                .iter()
                .rev()
                .find(|r| r.estimator == *label)
                .expect("one row per estimator and budget");
            (label.to_string(), r.error.abs())
        })
        .collect();
    if let Some(o) = online {
        ranking.push((o.estimator.clone(), o.error.abs()));
    }
    ranking.sort_by(|a, b| a.1.total_cmp(&b.1));
    ranking
}

fn row(
    label: &str,
    sweeps: f64,
    log_z: f64,
    std_err: f64,
    ess: Option<f64>,
    exact: f64,
) -> LogZRow {
    let error = log_z - exact;
    LogZRow {
        estimator: label.into(),
        gibbs_sweeps_per_chain: sweeps,
        log_z,
        std_err,
        ess,
        error,
        z: standard_score(error.abs(), std_err),
        warnings: Vec::new(),
        reverse_ais: None,
    }
}

/// Reproduced when online Tr-AIS has the smallest error at the largest budget and PTT is the
/// best offline estimator; partly when one of the two holds; not reproduced otherwise. Every
/// estimate whose error bar misses the truth by more than 3 standard errors is named.
fn verdict(ranking: &[(String, f64)], rows: &[LogZRow], largest: u64) -> (&'static str, String) {
    let online_best = ranking.first().is_some_and(|r| r.0 == "Tr-AIS online");
    let offline_best = ranking
        .iter()
        .find(|r| r.0 != "Tr-AIS online")
        .is_some_and(|r| r.0 == "PTT + BAR");
    let order: Vec<String> = ranking.iter().map(|(l, e)| format!("{l} {e:.3}")).collect();
    let uncovered: Vec<String> = rows
        .iter()
        .filter(|r| r.z > 3.0)
        .map(|r| {
            format!(
                "{} at {:.0} sweeps ({:.1} s.e.)",
                r.estimator, r.gibbs_sweeps_per_chain, r.z
            )
        })
        .collect();
    let mut how = format!(
        "|error| of log Z at the largest budget ({largest} Gibbs sweeps per chain; online \
         Tr-AIS at the end of training), best first: {}",
        order.join(", ")
    );
    if !uncovered.is_empty() {
        let _ = write!(
            how,
            "; error bars that miss the exact value by more than 3 s.e.: {}",
            uncovered.join(", ")
        );
    }
    let v = match (online_best, offline_best) {
        (true, true) => "reproduced",
        (false, false) => "not reproduced",
        _ => "partly reproduced",
    };
    (v, how)
}

fn write_csv(path: &Path, rows: &[LogZRow], exact: f64) -> Result<()> {
    let mut s = String::from("estimator,gibbs_sweeps,log_z,std_err,ess,error,exact_log_z\n");
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{}",
            r.estimator,
            r.gibbs_sweeps_per_chain,
            r.log_z,
            r.std_err,
            r.ess.map_or(String::new(), |e| e.to_string()),
            r.error,
            exact
        );
    }
    ebm_io::write_atomically(path, |w| w.write_all(s.as_bytes()))?;
    Ok(())
}

fn report_text(args: &ReproduceArgs, r: &LogZResults, dir: &Path) -> String {
    let mut s = super::report_head(
        "paper 000, Fig. 3 — error of log Z against cost",
        r.paper_statement,
        &r.verdict,
        &r.reason,
    );
    let m = &r.model;
    let size = format!(
        "{} x {} {}-{} ",
        m.summary.visible_units, m.summary.hidden_units, m.summary.visible, m.summary.hidden
    );
    let what = if m.given {
        format!(
            "The {size}RBM {} trained by `ebm train` (its run record beside it) on {}, with \
             its checkpoint trajectory {} and the online log-likelihood",
            m.files.model.display(),
            m.files.data.display(),
            m.files.trajectory.display()
        )
    } else {
        format!(
            "The {size}RBM of `ebm demo`, trained here with the online log-likelihood, so its \
             trajectory and online Tr-AIS estimate exist"
        )
    };
    let _ = writeln!(
        s,
        "**Setting** (seed {}{}). {what}. Ground truth: its exact log Z = {:.4} (hidden layer \
         enumerated). Every offline estimator ran {} chains at each budget (Gibbs sweeps per \
         chain: {:?}). AIS (reference) starts from the independent-site model fitted to the \
         data means. Each AIS run is checked against reverse AIS on the same path from exact \
         draws of the model (`ebm loglik reverse-ais`, as many chains; its sweeps are the \
         check's, not the budget's): a gap beyond 3 combined standard errors warns \
         `sandwich_gap`.\n",
        args.seed,
        if args.quick { ", quick mode" } else { "" },
        r.exact_log_z,
        r.chains,
        r.budgets
    );
    let _ = writeln!(
        s,
        "| estimator | Gibbs sweeps per chain | log Z | error | std. error | abs. error / s.e. | ESS | its warnings |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for x in r.rows.iter().chain(r.online.iter()) {
        let _ = writeln!(
            s,
            "| {} | {} | {:.4} | {:+.4} | {:.4} | {:.1}{} | {} | {} |",
            x.estimator,
            if x.gibbs_sweeps_per_chain.is_finite() {
                format!("{:.0}", x.gibbs_sweeps_per_chain)
            } else {
                "training".into()
            },
            x.log_z,
            x.error,
            x.std_err,
            x.z,
            if x.z > 3.0 { " ✗" } else { "" },
            x.ess.map_or("-".into(), |e| format!("{e:.0}")),
            if x.warnings.is_empty() {
                "-".to_string()
            } else {
                x.warnings.join(", ")
            }
        );
    }
    let _ = writeln!(
        s,
        "\n✗: the error bar misses the exact log Z by more than 3 standard errors. The last \
         column lists the warnings the estimate raised itself (its `ebm loglik` record): a ✗ row \
         with a warning told its user not to trust it; a ✗ row without one is a confident wrong \
         answer."
    );
    let _ = writeln!(s, "\n![log Z against cost](logz.png)\n");
    s.push_str(&super::commands_section(dir, &r.commands));
    s
}

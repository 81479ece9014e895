//! `ebm demo`: the program's tour. It runs ordinary commands in-process (each parsed from the
//! command line it prints, so that every step can be rerun by hand), reads their run records
//! and writes a short report with figures.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ebm_estimators::standard_score;
use ebm_models::Spin;
use serde::Serialize;

use crate::cli::DemoArgs;
use crate::error::{CliError, Result, bail};
use crate::files::load_dataset;
use crate::pipeline::{DemoPlan, Runner, exact_mode_plus, ising_and_training, mode_plus};
use crate::record::{Context, read_record};
use crate::results::SampleResults;

/// What the demo reports in its run record (and report.md).
#[derive(Debug, Serialize)]
struct DemoResults {
    plan: DemoPlan,
    /// The commands run, in order.
    commands: Vec<String>,
    /// Fraction of the data (train) with PC1 >= 0 ("mode +").
    data_mode_plus: f64,
    /// The trained model's own weight of mode +, from exact draws (hidden layer enumerated),
    /// and its standard error.
    exact_mode_plus: f64,
    exact_mode_plus_se: f64,
    /// Rungs of PTT and the training updates of their checkpoints.
    ptt_checkpoints: Vec<u64>,
    /// Gibbs sweeps per chain given to each sampler at equal sweeps.
    budget_sweeps: u64,
    /// Seconds given to each sampler at equal wall-clock: PTT's own time at equal sweeps.
    budget_seconds: f64,
    /// Per sampler and budget: label, weight of mode +, its agreement with the exact weight,
    /// mode jumps, cost and warnings. Gibbs, PT, PTref and PTT at equal sweeps, then Gibbs,
    /// PT and PTref at equal wall-clock.
    samplers: Vec<SamplerSummary>,
    /// Last logged train / test log-likelihood.
    train_ll: Option<f64>,
    test_ll: Option<f64>,
    /// The standard error of the online log Z at the end of training (that of both
    /// log-likelihoods: their data terms are exact means over the files).
    log_z_std_err: Option<f64>,
    /// The online estimate's warnings at the end of training.
    log_z_warnings: Vec<String>,
    /// Files written.
    report: PathBuf,
    figures: Vec<PathBuf>,
}

/// The cost at which the demo's samplers are compared.
#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Budget {
    /// The same number of Gibbs sweeps per chain (a tempering round costs one sweep per rung).
    Sweeps,
    /// About the same wall-clock time as PTT: the number of sweeps scaled by the speed each
    /// sampler showed at equal sweeps (the time actually taken is reported beside it).
    Seconds,
}

impl Budget {
    fn describe(self) -> &'static str {
        match self {
            Self::Sweeps => "equal sweeps",
            Self::Seconds => "equal time",
        }
    }
}

#[derive(Debug, Serialize, Clone)]
struct SamplerSummary {
    label: String,
    /// The cost at which it was compared.
    budget: Budget,
    /// Gibbs sweeps per chain it ran.
    gibbs_sweeps: u64,
    /// Weight of mode + averaged over the second half of the run and over chains.
    mode_plus: f64,
    /// Its standard error over independent chains.
    mode_plus_se: f64,
    /// (mode_plus - exact) / combined standard error.
    z_vs_exact: f64,
    /// Mode changes per chain after burn-in.
    window_jumps: f64,
    mean_jumps: f64,
    jumps_sem: f64,
    /// Swap acceptance between neighbouring rungs (tempering samplers; empty for Gibbs).
    acceptance: Vec<Option<f64>>,
    seconds: f64,
    /// The sampler's own warnings about its mode weights.
    warnings: Vec<String>,
}

impl SamplerSummary {
    /// Whether the sampler's weight agrees with the exact one within 3 combined standard
    /// errors and its own checks passed.
    fn agrees(&self) -> bool {
        self.within_error_bars() && self.warnings.is_empty()
    }

    /// Whether the weight is within 3 combined standard errors of the exact one.
    fn within_error_bars(&self) -> bool {
        self.z_vs_exact.abs() <= 3.0
    }

    /// The one-word verdict of the console line.
    fn verdict(&self) -> &'static str {
        match (self.within_error_bars(), self.warnings.is_empty()) {
            (true, true) => "agrees",
            (true, false) => "within 3 standard errors, but warned",
            (false, _) => "does not agree",
        }
    }

    /// `label (equal sweeps)`.
    fn name(&self) -> String {
        format!("{} ({})", self.label, self.budget.describe())
    }
}

/// A sampler of the demo's comparison: its label, its output files' stem, the `ebm sample`
/// options that choose it and the Gibbs sweeps per chain one of its steps costs.
struct Contender {
    label: &'static str,
    stem: &'static str,
    options: String,
    sweeps_per_step: u64,
}

/// The steps of a run of `sweeps` Gibbs sweeps per chain at `per_step` sweeps a step, and its
/// trace interval (about 200 records): the steps are rounded down to whole steps and to a
/// multiple of the interval, so that the last record is the end of the run.
fn steps_and_trace(sweeps: u64, per_step: u64) -> (u64, u64) {
    let steps = (sweeps / per_step.max(1)).max(1);
    let trace = (steps / 200).max(1);
    (steps - steps % trace, trace)
}

/// Runs `c` for about `sweeps` Gibbs sweeps per chain ([`steps_and_trace`]), its samples and
/// run record in `dir/{stem}{suffix}.npy` and `.json`, and summarises its weight of mode +
/// against the model's exact `(weight, standard error)`.
#[allow(clippy::too_many_arguments)]
fn run_contender(
    runner: &mut Runner,
    ctx: &Context,
    c: &Contender,
    budget: Budget,
    sweeps: u64,
    (chains, seed): (usize, u64),
    (dir, suffix): (&Path, &str),
    (exact, exact_se): (f64, f64),
) -> Result<SamplerSummary> {
    let (steps, trace) = steps_and_trace(sweeps, c.sweeps_per_step);
    let out = dir.join(format!("{}{suffix}.npy", c.stem));
    let seconds = runner.step_with(
        ctx,
        &format!(
            "{} ({}): {chains} chains x {} sweeps",
            c.label,
            budget.describe(),
            steps * c.sweeps_per_step
        ),
        &format!(
            "sample {} --chains {chains} --steps {steps} --data @DATA --trace-every {trace} \
             --seed {seed} --out @OUT",
            c.options
        ),
        &[("@OUT", &out)],
    )?;
    let r = read_record::<SampleResults>(&out.with_extension("json"), "sample")?.results;
    let jumps = r
        .mode_jumps
        .ok_or_else(|| CliError::new("demo: a sample record has no mode jumps"))?;
    let (plus, se) = match (jumps.weights.get(1), jumps.weights_se.get(1)) {
        (Some(&w), Some(&s)) => (w, s),
        _ => bail!("demo: a sample record has no mode weights"),
    };
    let combined = (se * se + exact_se * exact_se).sqrt();
    Ok(SamplerSummary {
        label: c.label.into(),
        budget,
        gibbs_sweeps: r.steps * r.gibbs_sweeps_per_step,
        mode_plus: plus,
        mode_plus_se: se,
        z_vs_exact: standard_score(plus - exact, combined),
        window_jumps: jumps.window_mean_jumps,
        mean_jumps: jumps.mean_jumps,
        jumps_sem: jumps.sem,
        acceptance: r.pt.map(|p| p.acceptance_rates).unwrap_or_default(),
        seconds,
        warnings: r.warnings,
    })
}

pub(super) fn execute(args: &DemoArgs, ctx: &Context) -> Result<()> {
    let started = Instant::now();
    let plan = DemoPlan::new(args.quick);
    let dir = &args.out;
    if dir.exists() && !dir.is_dir() {
        bail!("--out {}: exists and is not a directory", dir.display());
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
    let files = DemoFiles::in_dir(dir);
    let seed = args.seed;
    let mut runner = Runner {
        prefix: "demo",
        paths: files.placeholders(),
        commands: Vec::new(),
    };
    let (t_train, trained) = ising_and_training(&plan, seed, true, &files.model, &mut runner, ctx)?;
    let kept = trained.checkpoint_updates.len();
    let rungs = kept.min(plan.max_rungs);
    let budget = plan.ptt_rounds * rungs as u64;

    // The ground truth: the trained model's own weight of mode +.
    let ds = load_dataset(&files.data)?;
    let data_plus = mode_plus(&ds, ds.data(), 0.0)?;
    ctx.say(format!(
        "demo: the trained model's exact mode weights, from {} exact draws (its {} hidden \
         units enumerated)",
        plan.exact_draws, plan.hidden_units
    ));
    let exact = exact_mode_plus::<Spin<f64>>(&files.model, &ds, 0.0, plan.exact_draws, seed)?;

    // Every sampler starts from the same configuration (every spin -1, inside one mode).
    let pt_rungs = plan.pt_rungs as u64;
    let contenders = contenders(pt_rungs, rungs);
    ctx.say(format!(
        "demo: sampling the final model with Gibbs, PT ({pt_rungs} temperatures), PTref \
         ({pt_rungs} rungs from an independent-site reference) and PTT ({rungs} of the {kept} \
         checkpoints): {} chains x {budget} Gibbs sweeps each, then Gibbs, PT and PTref again \
         for PTT's wall-clock time",
        plan.chains
    ));
    let common = (plan.chains, seed);
    let (samplers, budget_seconds) =
        run_contenders(&mut runner, ctx, &contenders, budget, common, dir, exact)?;
    draw_figures(&mut runner, ctx)?;

    let ptt_info = read_record::<SampleResults>(&files.ptt_record, "sample")?.results;
    let pt = ptt_info
        .pt
        .ok_or_else(|| CliError::new("demo: the PTT record has no tempering diagnostics"))?;
    let results = DemoResults {
        plan: plan.clone(),
        commands: std::mem::take(&mut runner.commands),
        data_mode_plus: data_plus,
        exact_mode_plus: exact.0,
        exact_mode_plus_se: exact.1,
        ptt_checkpoints: pt.checkpoint_updates.clone().unwrap_or_default(),
        budget_sweeps: budget,
        budget_seconds,
        samplers,
        train_ll: trained.train_ll.map(|x| x.1),
        test_ll: trained.test_ll.map(|x| x.1),
        log_z_std_err: trained.log_z.map(|[_, se]| se),
        log_z_warnings: trained
            .log_z_warnings
            .iter()
            .map(ToString::to_string)
            .collect(),
        report: files.report.clone(),
        figures: files.figures.to_vec(),
    };
    let text = report_text(args, &results, t_train, dir);
    ebm_io::write_atomically(&files.report, |w| w.write_all(text.as_bytes()))?;
    say_results(ctx, &results);
    ctx.say(format!(
        "demo: done in {:.0} s; report: {}\ndemo: figures and every intermediate file in {}",
        started.elapsed().as_secs_f64(),
        files.report.display(),
        dir.display()
    ));
    let inputs: [&Path; 0] = [];
    let outputs: Vec<&Path> = std::iter::once(files.report.as_path())
        .chain(files.figures.iter().map(PathBuf::as_path))
        .collect();
    ctx.finish(
        "demo",
        Some(args.seed),
        args,
        &inputs,
        &outputs,
        &results,
        Some(&dir.join("demo.json")),
    )
}

/// The files of a demo run in its directory.
struct DemoFiles {
    data: PathBuf,
    test: PathBuf,
    model: PathBuf,
    trajectory: PathBuf,
    log: PathBuf,
    pt_record: PathBuf,
    ptref_record: PathBuf,
    gibbs_record: PathBuf,
    ptt_record: PathBuf,
    gibbs: PathBuf,
    ptt: PathBuf,
    /// Samples of Gibbs and of PTT over the data, mode jumps, log-likelihood, swaps, images.
    figures: [PathBuf; 6],
    report: PathBuf,
}

impl DemoFiles {
    fn in_dir(dir: &Path) -> Self {
        let p = |name: &str| dir.join(name);
        Self {
            data: p("ising.npy"),
            test: p("ising-test.npy"),
            model: p("model.safetensors"),
            trajectory: p("model.trajectory.safetensors"),
            log: p("model.log.csv"),
            pt_record: p("pt.json"),
            ptref_record: p("pt-ref.json"),
            gibbs_record: p("gibbs.json"),
            ptt_record: p("ptt.json"),
            gibbs: p("gibbs.npy"),
            ptt: p("ptt.npy"),
            figures: [
                p("samples-gibbs.png"),
                p("samples-ptt.png"),
                p("mode-jumps.png"),
                p("loglik.png"),
                p("swaps.png"),
                p("images.png"),
            ],
            report: p("report.md"),
        }
    }

    /// The placeholders of the command lines the demo runs, and their paths.
    fn placeholders(&self) -> Vec<(&'static str, &Path)> {
        vec![
            ("@DATA", &self.data),
            ("@TEST", &self.test),
            ("@MODEL", &self.model),
            ("@TRAJ", &self.trajectory),
            ("@LOG", &self.log),
            ("@GIBBS", &self.gibbs),
            ("@PTT", &self.ptt),
            ("@GREC", &self.gibbs_record),
            ("@PREC", &self.ptt_record),
            ("@TREC", &self.pt_record),
            ("@RREC", &self.ptref_record),
            ("@FIG_G", &self.figures[0]),
            ("@FIG_P", &self.figures[1]),
            ("@FIG_J", &self.figures[2]),
            ("@FIG_L", &self.figures[3]),
            ("@FIG_S", &self.figures[4]),
            ("@FIG_I", &self.figures[5]),
        ]
    }
}

/// The samplers the demo compares, from the same start: Gibbs, PT and PTref on `pt_rungs`
/// rungs, PTT on `rungs` checkpoints.
fn contenders(pt_rungs: u64, rungs: usize) -> [Contender; 4] {
    [
        Contender {
            label: "Gibbs",
            stem: "gibbs",
            options: "--model @MODEL --sampler gibbs".into(),
            sweeps_per_step: 1,
        },
        Contender {
            label: "PT",
            stem: "pt",
            options: format!("--model @MODEL --sampler pt --rungs {pt_rungs}"),
            sweeps_per_step: pt_rungs,
        },
        Contender {
            label: "PTref",
            stem: "pt-ref",
            options: format!("--model @MODEL --sampler pt-ref --rungs {pt_rungs}"),
            sweeps_per_step: pt_rungs,
        },
        Contender {
            label: "PTT",
            stem: "ptt",
            options: format!("--trajectory @TRAJ --sampler ptt --rungs {rungs} --schedule sweep"),
            sweeps_per_step: rungs as u64,
        },
    ]
}

/// Runs every contender for `budget` Gibbs sweeps per chain, then Gibbs, PT and PTref again
/// for the wall-clock time PTT took (each at its own measured speed); returns their summaries,
/// in that order, and PTT's time.
fn run_contenders(
    runner: &mut Runner<'_>,
    ctx: &Context,
    contenders: &[Contender; 4],
    budget: u64,
    common: (usize, u64),
    dir: &Path,
    exact: (f64, f64),
) -> Result<(Vec<SamplerSummary>, f64)> {
    let mut samplers = Vec::new();
    for c in contenders {
        let s = run_contender(
            runner,
            ctx,
            c,
            Budget::Sweeps,
            budget,
            common,
            (dir, ""),
            exact,
        )?;
        samplers.push(s);
    }
    let budget_seconds = samplers[3].seconds;
    for (c, at_equal_sweeps) in contenders[..3].iter().zip(samplers.clone()) {
        let speed = at_equal_sweeps.gibbs_sweeps as f64 / at_equal_sweeps.seconds.max(1e-9);
        let sweeps = (speed * budget_seconds).round() as u64;
        let s = run_contender(
            runner,
            ctx,
            c,
            Budget::Seconds,
            sweeps.max(c.sweeps_per_step),
            common,
            (dir, "-time"),
            exact,
        )?;
        samplers.push(s);
    }
    Ok((samplers, budget_seconds))
}

/// The demo's figures, drawn by `ebm plot` from the files of the runs.
fn draw_figures(runner: &mut Runner<'_>, ctx: &Context) -> Result<()> {
    let mut step = |what: &str, line: &str| runner.step(ctx, what, line);
    step(
        "figures",
        "plot samples --data @DATA --samples @GIBBS --out @FIG_G",
    )?;
    step("", "plot samples --data @DATA --samples @PTT --out @FIG_P")?;
    step(
        "",
        "plot jumps @GREC @TREC @RREC @PREC --labels Gibbs,PT,PTref,PTT --out @FIG_J",
    )?;
    step("", "plot loglik @LOG --out @FIG_L")?;
    step(
        "",
        "plot swaps @TREC @RREC @PREC --labels PT,PTref,PTT --out @FIG_S",
    )?;
    step(
        "",
        "plot images @GIBBS @PTT --labels Gibbs,PTT --count 36 --out @FIG_I",
    )?;
    Ok(())
}

/// Says the mode weights: the model's exact one, the data's, and each sampler's with its
/// jumps, time and warnings.
fn say_results(ctx: &Context, results: &DemoResults) {
    ctx.say(format!(
        "demo: weight of mode + (PC1 >= 0): the model's exact {:.3} +- {:.3}; the data {:.3}",
        results.exact_mode_plus, results.exact_mode_plus_se, results.data_mode_plus
    ));
    for x in &results.samplers {
        ctx.say(format!(
            "demo: {:<24} {:.3} +- {:.3} ({:+.1} s.e., {}); {:.2} +- {:.2} mode jumps per \
             chain in {} sweeps, {:.1} s",
            format!("{}:", x.name()),
            x.mode_plus,
            x.mode_plus_se,
            x.z_vs_exact,
            x.verdict(),
            x.mean_jumps,
            x.jumps_sem,
            x.gibbs_sweeps,
            x.seconds
        ));
        for w in &x.warnings {
            ctx.warn(format!("{}: {w}", x.name()));
        }
    }
}

/// The pair of neighbouring rungs with the lowest swap acceptance, `(k, acceptance)` for the
/// pair (k, k + 1); `None` without any measured pair.
fn lowest_pair(acceptance: &[Option<f64>]) -> Option<(usize, f64)> {
    acceptance
        .iter()
        .enumerate()
        .filter_map(|(k, a)| a.map(|a| (k, a)))
        .min_by(|x, y| x.1.total_cmp(&y.1))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The demo's report (report.md): the setting, the mode weights against the exact ones with
/// a verdict per sampler, the ladders' acceptances, the online log-likelihood, the figures and
/// the commands.
fn report_text(args: &DemoArgs, r: &DemoResults, train_seconds: f64, dir: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# ebm demo: Gibbs sampling, parallel tempering and trajectory tempering\n"
    );
    write_setting(&mut s, args, r, train_seconds);
    write_weights(&mut s, r);
    write_verdicts(&mut s, r);
    write_acceptance_and_loglik(&mut s, r);
    write_figures_and_commands(&mut s, r, dir);
    s
}

/// The data, the training and the samplers compared.
fn write_setting(s: &mut String, args: &DemoArgs, r: &DemoResults, train_seconds: f64) {
    let plan = &r.plan;
    let _ = writeln!(
        s,
        "Seed {}{}. Data: {} equilibrium configurations of the {l}x{l} 2D Ising model at \
         beta = {} (below the critical point 0.4407), drawn by Swendsen–Wang: two modes, \
         most spins +1 or most spins -1. A spin-bernoulli RBM with {} hidden units was \
         pretrained on them as in paper 000 (a low-rank model fitted by the Restricted Coulomb \
         Machine on the first principal direction plus the bias), then trained ({} updates; \
         negative phase: parallel tempering on {} rungs of the bridge from the pretrained \
         model to the current one, `--negative bridged`; {:.0} s) while its checkpoints were \
         kept for parallel trajectory tempering (PTT), whose first rung is the pretrained \
         model, refreshed by an exact draw every round.\n",
        args.seed,
        if args.quick {
            " (quick mode: a smaller run)"
        } else {
            ""
        },
        plan.train_samples,
        plan.beta,
        plan.hidden_units,
        plan.updates,
        plan.train_rungs,
        train_seconds,
        l = plan.lattice,
    );
    let _ = writeln!(
        s,
        "The final model was then sampled by plain Gibbs sampling, by parallel tempering on \
         {pt} inverse temperatures spaced geometrically from 0.1 to 1 (PT, deterministic \
         even/odd exchanges), by parallel tempering on {pt} rungs interpolating from an \
         independent-site reference with the data's mean fields to the model (PTref) and by \
         PTT over {} checkpoints (every neighbouring pair proposed for exchange each round, \
         from the bottom up, as in the PTT paper), each with {} chains starting from the same \
         configuration (every spin -1, i.e. inside one mode). They were compared twice: at \
         the same budget of {} Gibbs sweeps per chain (a tempering round costs one sweep per \
         rung), and at the same wall-clock as PTT ({:.1} s; the sweeps of Gibbs, PT and \
         PTref set from the speed each showed at equal sweeps; the time each took is in the \
         table).\n",
        r.ptt_checkpoints.len(),
        plan.chains,
        r.budget_sweeps,
        r.budget_seconds,
        pt = plan.pt_rungs,
    );
}

/// The table of mode weights against the model's exact one.
fn write_weights(s: &mut String, r: &DemoResults) {
    let plan = &r.plan;
    let _ = writeln!(s, "## Mode weights against the model's exact ones\n");
    let _ = writeln!(
        s,
        "A configuration is in mode + when its projection on the first principal component of \
         the data is at least 0 (the data mean), else in mode -. The **ground truth** is the \
         trained model's own weight of mode +, computed from {} independent exact draws (all \
         2^{} hidden configurations enumerated, then the visible units drawn from their exact \
         conditional law); the data's weight is shown for reference only, since a trained \
         model need not reproduce it. Each sampler's weight is averaged over the second half \
         of its run (the first half is burn-in) and over its chains; its error bar is the \
         spread over the independent chains. Jumps are changes of mode along each chain, \
         recorded about 200 times per run (± standard error over chains; after burn-in in \
         parentheses). ✗ marks a weight more than 3 standard errors from the exact one or \
         warned by its own sampler.\n",
        plan.exact_draws, plan.hidden_units
    );
    let _ = writeln!(
        s,
        "| | budget | Gibbs sweeps per chain | weight of mode + | vs exact | mode jumps per \
         chain | time |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        s,
        "| **model, exact** | | | **{:.3} ± {:.3}** | | | |",
        r.exact_mode_plus, r.exact_mode_plus_se
    );
    for x in &r.samplers {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} ± {:.3} | {:+.1} σ{} | {:.2} ± {:.2} ({:.2}) | {:.1} s |",
            x.label,
            x.budget.describe(),
            x.gibbs_sweeps,
            x.mode_plus,
            x.mode_plus_se,
            x.z_vs_exact,
            if x.agrees() { "" } else { " ✗" },
            x.mean_jumps,
            x.jumps_sem,
            x.window_jumps,
            x.seconds
        );
    }
    let _ = writeln!(
        s,
        "| data (reference only) | | | {:.3} | | | |",
        r.data_mode_plus
    );
}

/// One verdict per sampler: agrees, warned, or wrong (and whether it said so).
fn write_verdicts(s: &mut String, r: &DemoResults) {
    let _ = writeln!(s);
    for x in &r.samplers {
        let name = x.name();
        let verdict = if x.agrees() {
            format!(
                "**{name}** agrees with the model's exact weight ({:+.1} standard errors) and \
                 its chains changed mode {:.1} times each after burn-in.",
                x.z_vs_exact, x.window_jumps
            )
        } else if x.within_error_bars() {
            format!(
                "**{name}** is within {:+.1} combined standard errors of the model's exact \
                 weight, but its own checks warn that the run may be too short for this to be \
                 a guarantee: {}",
                x.z_vs_exact,
                x.warnings.join("; ")
            )
        } else if x.warnings.is_empty() {
            format!(
                "**{name}** does **not** agree with the model's exact weight ({:+.1} combined \
                 standard errors) although its own checks passed: its run was too short to \
                 forget its start, or its error bar is too small.",
                x.z_vs_exact
            )
        } else {
            format!(
                "**{name}** does **not** give the model's weight ({:+.1} combined standard \
                 errors), and says so itself: {}",
                x.z_vs_exact,
                x.warnings.join("; ")
            )
        };
        let _ = writeln!(s, "{verdict}\n");
    }
}

/// The ladders' swap acceptances, PTT's checkpoints and the online log-likelihood with its
/// warnings.
fn write_acceptance_and_loglik(s: &mut String, r: &DemoResults) {
    let _ = writeln!(
        s,
        "Swap acceptance between neighbouring rungs at equal sweeps (a ladder's lowest pair is \
         where its replicas cross most rarely; the round trips between its ends, which carry \
         the mode changes down and up, are in each sampler's warnings and run record):\n"
    );
    for x in r.samplers.iter().filter(|x| x.budget == Budget::Sweeps) {
        if let Some((k, low)) = lowest_pair(&x.acceptance) {
            let rates: Vec<String> = x
                .acceptance
                .iter()
                .map(|a| a.map_or("-".into(), |a| format!("{a:.2}")))
                .collect();
            let _ = writeln!(
                s,
                "- {}: [{}]; lowest {low:.3} between rungs {k} and {}.",
                x.label,
                rates.join(", "),
                k + 1
            );
        }
    }
    let _ = writeln!(
        s,
        "\nPTT's rungs are the checkpoints at training updates {:?}.\n",
        r.ptt_checkpoints
    );
    if let (Some(tr), Some(te)) = (r.train_ll, r.test_ll) {
        let se = r.log_z_std_err.unwrap_or(f64::NAN);
        let _ = writeln!(
            s,
            "Online log-likelihood at the end of training (trajectory AIS): train {tr:.3} ± \
             {se:.3}, test {te:.3} ± {se:.3} per sample (the standard error of the online \
             log Z).\n"
        );
    }
    if !r.log_z_warnings.is_empty() {
        let _ = writeln!(s, "Warnings of the online log-likelihood:\n");
        for w in &r.log_z_warnings {
            let _ = writeln!(s, "- {w}");
        }
        let _ = writeln!(s);
    }
}

/// The figures and the commands that made them.
fn write_figures_and_commands(s: &mut String, r: &DemoResults, dir: &Path) {
    let _ = writeln!(s, "## Figures\n");
    for (title, f) in [
        ("Gibbs samples over the data, PC1–PC2", &r.figures[0]),
        ("PTT samples over the data, PC1–PC2", &r.figures[1]),
        (
            "Mode jumps against cost in Gibbs sweeps (equal sweeps)",
            &r.figures[2],
        ),
        ("Log-likelihood during training", &r.figures[3]),
        ("Swap acceptance of PT, PTref and PTT", &r.figures[4]),
        (
            "The first 36 chains of each sampler as spin images (white -1, black +1)",
            &r.figures[5],
        ),
    ] {
        let _ = writeln!(s, "![{title}]({})\n", file_name(f));
    }
    let _ = writeln!(s, "## Commands\n");
    let _ = writeln!(
        s,
        "Every step is an ordinary `ebm` command, run in-process by the demo (its outputs in \
         {}); any of them can be rerun or changed by hand:\n",
        dir.display()
    );
    let _ = writeln!(s, "```console");
    for c in &r.commands {
        let _ = writeln!(s, "{c}");
    }
    let _ = writeln!(s, "```");
}

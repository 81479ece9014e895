//! # ebm-cli
//!
//! The `ebm` command line, as a library: the root package's `ebm` binary is a short `main`
//! calling [`run_program`]. The program is a thin layer over the workspace's crates: it
//! parses and validates options, loads files, dispatches on the unit kinds of a model file,
//! attaches progress bars as [`ebm_core::Observer`]s, and writes outputs. No sampling or
//! estimation algorithm lives here.
//!
//! | Command | What it does | Library calls |
//! |---|---|---|
//! | `ebm data generate` | writes a dataset of the papers (Ising, Bars and Stripes, clustered sets, digits, Curie–Weiss, Hopfield) | [`ebm_data::generate`] |
//! | `ebm data info` | sizes, value domain, means of a data file | [`ebm_data::load`] |
//! | `ebm data pca` | projections on the leading principal components | [`ebm_data::pca()`] |
//! | `ebm demo` | the tour: Ising data, training, Gibbs vs trajectory tempering at equal cost, a report with figures | the other commands, run in-process |
//! | `ebm train` | trains an RBM of any unit pair (PCD, CD, PT, Jarzynski; SGD or Adam; online log-likelihood; checkpoint trajectory; exact resume) | [`ebm_train`] |
//! | `ebm sample` | Gibbs sampling, parallel tempering on a temperature ladder (SEO, DEO, random-pair or lifted swaps), on a reference-interpolated ladder, or on the checkpoints of a training trajectory (PTT) | [`ebm_samplers`] |
//! | `ebm loglik exact` | exact \\(\log Z\\) by enumeration and the log-likelihood of data | [`ebm_models::exact`] |
//! | `ebm loglik ais` | \\(\log Z\\) by annealed importance sampling along a reference-interpolated or temperature path, with its error bar and ESS, and the log-likelihood of data | [`ebm_estimators::ais`] |
//! | `ebm loglik reverse-ais` | the same path walked down from model samples (Gibbs burn-in, exact draws or a samples file): a stochastic upper bound | [`ebm_estimators::reverse_ais`] |
//! | `ebm loglik tr-ais` | trajectory AIS through the checkpoints of a training run: \\(\log Z\\) and the log-likelihood at every checkpoint | [`ebm_estimators::ais`] on a trajectory ladder |
//! | `ebm loglik ptt` | parallel trajectory tempering over the checkpoints, \\(\log Z\\) by Bennett's acceptance ratio between neighbours | [`ebm_estimators::PairAccumulator`] |
//! | `ebm plot` | PNG or SVG figures from the files the other commands write | [`ebm_plot`] |
//!
//! Every command writes a JSON *run record* next to its outputs (settings, seed, versions,
//! inputs, outputs and results), prints a short summary (or the record itself with `--json`),
//! and reports bad input as one line `error: ...` on stderr with exit code 1 (2 for a
//! command line that does not parse). Nothing a user passes makes it panic.
//!
//! Built with the root package's feature `mpi` (which passes the MPI transport to
//! [`run_program`]), `ebm sample --sampler gibbs` and `ebm loglik ais |
//! reverse-ais | tr-ais` started by `mpirun -n K` run sharded by chain over the K processes
//! ([`ebm_mpi`]): rank 0 writes outputs byte-identical to one process's, and the record's
//! `ranks` says how many ran. `ebm sample --sampler pt | pt-ref | ptt | stacked` runs sharded
//! by rung (blocks of rungs, or of a stack's RBMs, on the K processes,
//! [`ebm_mpi::tempering_by_rung_from`]) and `ebm train
//! --negative pcd` data-parallel (minibatch and chains sharded, [`ebm_mpi::train`]), with the
//! same guarantee. Other commands refuse to run on several processes, and so does a program
//! built without the feature.
//!
//! The figures are drawn by the library crate [`ebm_plot`] (one function per figure kind,
//! taking plain data). The [`custom`] module gives a model of your own a command line of the same kind (`sample` and
//! `log-z`, with run records) in a few lines of `main`.

mod cli;
mod commands;
pub mod custom;
mod error;
mod files;
mod gpu;
mod models;
mod pipeline;
mod pll_log;
mod progress;
mod record;
mod results;
mod signals;
mod tempering;
mod tmc;
mod trace;
mod world;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

pub use error::CliError;
pub use world::MpiInit;

/// What the program running the command line brings to it; the root package's `main` fills it
/// in, and [`run`] runs without either.
#[derive(Debug, Clone, Copy, Default)]
pub struct Program {
    /// Joins the MPI world when an MPI launcher started the program (`None`: a program
    /// started as one of several processes refuses to run, as each would do the whole work).
    pub mpi: Option<MpiInit>,
    /// The git commit the program was built from, written into every run record
    /// (`versions.commit`); `None` when it is not known.
    pub commit: Option<&'static str>,
}

/// Exit code of a run that failed on its input (a file, an option value, a model).
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of a command line that does not parse (unknown option, missing argument).
pub const EXIT_USAGE: u8 = 2;
/// Exit code of `ebm train` stopped by SIGINT (Ctrl-C): 128 + 2, the shell's convention.
/// The run finished its current update and wrote every output, its state resumable with
/// `--resume`. SIGTERM gives 128 + 15 = 143 the same way.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs the `ebm` program on `args` (the first item is the program name, as in
/// [`std::env::args_os`]) and returns its exit code: 0 on success, [`EXIT_FAILURE`] when the
/// input is rejected, [`EXIT_USAGE`] when the command line does not parse.
///
/// Errors are printed as a single line `error: <what went wrong>` on stderr; `--help` and
/// `--version` print to stdout and succeed. A panic (a bug, never a reaction to user input) is
/// caught and reported the same way with exit code 101.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_program(args, Program::default())
}

/// [`run`] in a program that brings what [`Program`] holds: when an MPI launcher started it,
/// `program.mpi` initialises MPI and returns the world (`None` if MPI was already initialised),
/// and the sharded commands run over its processes; `program.commit` goes into the run
/// records. The root package's `main` passes `ebm_mpi_transport::Mpi::init` when built with its
/// feature `mpi`, and the commit its build script found.
pub fn run_program<I, T>(args: I, program: Program) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_parsed(args, |cli: &cli::Cli, arguments| {
        commands::execute(cli, arguments, program)
    })
}

/// Parses `args` as a `C`, runs `execute` on it with the command line as given (for the run
/// record) and returns the exit code, reporting errors and panics as [`run`] describes.
fn run_parsed<C, I, T>(
    args: I,
    execute: impl FnOnce(&C, Vec<String>) -> error::Result<()>,
) -> ExitCode
where
    C: Parser,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let arguments: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli = match C::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return report_clap_error(e),
    };
    // A bug must still end with one line and a non-zero code, not a backtrace dump.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "error: internal error (a bug in ebm, please report it): {}{at}",
            one_line(&msg)
        );
    }));
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute(&cli, arguments)));
    let _ = std::panic::take_hook();
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
        Err(_) => ExitCode::from(101),
    }
}

/// `--help` and `--version` go to stdout with success; parse errors become one line on stderr.
fn report_clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // `ebm` or `ebm data` alone: show the help, but do not report success.
            let _ = e.print();
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            // clap's message, its argument list and tips, without the usage block.
            let text = e.render().to_string();
            let message: Vec<&str> = text
                .split("\n\n")
                .take_while(|p| {
                    let p = p.trim_start();
                    !p.starts_with("Usage:") && !p.starts_with("For more information")
                })
                .collect();
            let message = one_line(&message.join(" ")).replace(" tip: ", "; tip: ");
            let message = message.trim_start_matches("error: ");
            let _ = writeln!(std::io::stderr(), "error: {message} (see --help)");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Collapses a message to one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

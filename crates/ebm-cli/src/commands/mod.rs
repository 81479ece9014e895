//! The commands: each parses nothing (clap did), validates what clap cannot, calls the
//! libraries, writes its outputs and its run record.

mod data;
mod loglik;
mod plot;
mod sample;

use crate::cli::{Cli, Command, LoglikCommand};
use crate::error::{CliError, Result};
use crate::record::Context;

/// Runs the parsed command line; `arguments` is the command line as given, for the record.
pub(crate) fn execute(cli: &Cli, arguments: Vec<String>) -> Result<()> {
    let ctx = Context::new(cli.global.quiet, cli.global.json, arguments);
    let go = || match &cli.command {
        Command::Data(d) => data::execute(d, &ctx),
        Command::Sample(a) => sample::execute(a, &ctx),
        Command::Loglik(LoglikCommand::Exact(a)) => loglik::exact(a, &ctx),
        Command::Plot(p) => plot::execute(p, &ctx),
    };
    match cli.global.threads {
        None => go(),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| CliError::new(format!("cannot start {n} worker threads: {e}")))?
            .install(go),
    }
}

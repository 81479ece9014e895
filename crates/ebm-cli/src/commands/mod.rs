//! The commands: each parses nothing (clap did), validates what clap cannot, calls the
//! libraries, writes its outputs and its run record.

mod data;
mod demo;
mod help;
mod latent;
mod loglik;
mod pll_log;
mod plot;
mod pretrain;
mod reproduce;
pub(crate) mod sample;
mod stack;
mod tmc;
mod trace;
mod train;

use crate::cli::{Cli, Command, DataCommand, LoglikCommand, TmcCommand};
use crate::error::{CliError, Result};
use crate::record::Context;

/// Runs the parsed command line; `arguments` is the command line as given, for the record.
pub(crate) fn execute(cli: &Cli, arguments: Vec<String>) -> Result<()> {
    let ctx = Context::new(cli.global.quiet, cli.global.json, arguments);
    let go = || match &cli.command {
        Command::Data(d) => data::execute(d, &ctx),
        Command::Sample(a) => sample::execute(a, &ctx),
        Command::Train(a) => train::execute(a, &ctx).map(|_| ()),
        Command::TrainStack(a) => stack::train(a, &ctx),
        Command::Demo(a) => demo::execute(a, &ctx),
        Command::Reproduce(a) => reproduce::execute(a, &ctx),
        Command::Loglik(l) => loglik::execute(l, &ctx),
        Command::Plot(p) => plot::execute(p, &ctx),
        Command::Tmc(t) => tmc::execute(t, &ctx),
        Command::Completions { shell } => help::completions(*shell),
        Command::Man { out } => help::man_pages(out, &ctx),
    };
    match threads(&cli.command) {
        None => go(),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| CliError::new(format!("cannot start {n} worker threads: {e}")))?
            .install(go),
    }
}

/// `--threads` of the commands that offer it.
fn threads(command: &Command) -> Option<usize> {
    let t = match command {
        Command::Data(DataCommand::Pca(a)) => a.threads,
        Command::Sample(a) => a.threads,
        Command::Train(a) => a.threads,
        Command::TrainStack(a) => a.threads,
        Command::Demo(a) => a.threads,
        Command::Reproduce(a) => a.threads,
        Command::Loglik(LoglikCommand::Exact(a)) => a.threads,
        Command::Loglik(LoglikCommand::Ais(a)) => a.common.threads,
        Command::Loglik(LoglikCommand::ReverseAis(a)) => a.common.threads,
        Command::Loglik(LoglikCommand::TrAis(a)) => a.common.threads,
        Command::Loglik(LoglikCommand::Ptt(a)) => a.common.threads,
        Command::Tmc(TmcCommand::Profile(a)) => a.threads,
        Command::Data(_) | Command::Plot(_) | Command::Completions { .. } | Command::Man { .. } => {
            return None;
        }
    };
    t.n
}

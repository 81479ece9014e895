//! The commands: each parses nothing (clap did), validates what clap cannot, calls the
//! libraries, writes its outputs and its run record.

mod data;
mod demo;
mod help;
mod loglik;
mod plot;
mod reproduce;
mod sample;
mod tmc;
mod train;

use crate::cli::{Cli, Command, DataCommand, LoglikCommand, TmcCommand};
use crate::error::{CliError, Result};
use crate::record::Context;
use crate::world::world;

/// Runs the parsed command line; `arguments` is the command line as given, for the record;
/// `program` joins the MPI world when a launcher started the program and names the commit
/// ([`crate::run_program`]).
pub(crate) fn execute(cli: &Cli, arguments: Vec<String>, program: crate::Program) -> Result<()> {
    // MPI is initialised and finalised on the thread that runs the command.
    let go = || {
        let world = world(program.mpi)?;
        let ctx = Context::new(cli.global.quiet, cli.global.json, arguments, world)
            .with_commit(program.commit);
        run(&cli.command, &ctx)
    };
    match threads(&cli.command) {
        None => go(),
        Some(n) if n > MAX_THREADS => Err(CliError::new(format!(
            "--threads {n}: at most {MAX_THREADS} worker threads (0: one per core)"
        ))),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| CliError::new(format!("cannot start {n} worker threads: {e}")))?
            .install(go),
    }
}

/// The largest `--threads`: far more than any machine's cores, it keeps an absurd value from
/// starting threads until the system refuses.
const MAX_THREADS: usize = 1024;

/// Runs one command.
fn run(command: &Command, ctx: &Context) -> Result<()> {
    let sharded = matches!(
        command,
        Command::Sample(_)
            | Command::Train(_)
            | Command::Loglik(
                LoglikCommand::Ais(_) | LoglikCommand::ReverseAis(_) | LoglikCommand::TrAis(_)
            )
    );
    if !sharded {
        ctx.one_process("this command")?;
    }
    match command {
        Command::Data(d) => data::execute(d, ctx),
        Command::Sample(args) => sample::execute(args, ctx),
        Command::Train(args) => train::execute(args, ctx).map(|_| ()),
        Command::TrainStack(args) => train::stack::train(args, ctx),
        Command::Demo(args) => demo::execute(args, ctx),
        Command::Reproduce(args) => reproduce::execute(args, ctx),
        Command::Loglik(l) => loglik::execute(l, ctx),
        Command::Plot(p) => plot::execute(p, ctx),
        Command::Tmc(t) => tmc::execute(t, ctx),
        Command::Completions { shell } => help::completions(*shell),
        Command::Man { out } => help::man_pages(out, ctx),
    }
}

/// `--threads` of the commands that offer it.
fn threads(command: &Command) -> Option<usize> {
    let t = match command {
        Command::Data(DataCommand::Pca(a)) => a.threads,
        Command::Sample(args) => args.threads,
        Command::Train(args) => args.threads,
        Command::TrainStack(args) => args.threads,
        Command::Demo(args) => args.threads,
        Command::Reproduce(args) => args.threads,
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

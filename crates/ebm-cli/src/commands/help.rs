//! `ebm completions SHELL` and `ebm man --out DIR`: shell completion scripts and man pages,
//! generated from the clap definitions (the same source as `--help`).

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::error::{CliError, Result};
use crate::record::Context;

/// Prints the completion script of `shell` on stdout.
pub(super) fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "ebm", &mut script);
    // A reader that stops early (`| head`) is not an error.
    match std::io::stdout().write_all(&script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::new(format!(
            "cannot write the completion script: {e}"
        ))),
        _ => Ok(()),
    }
}

/// Writes `ebm.1` and one page per command and subcommand to `dir`.
pub(super) fn man_pages(dir: &Path, ctx: &Context) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
    let cmd = Cli::command();
    clap_mangen::generate_to(cmd, dir).map_err(|e| {
        CliError::new(format!(
            "cannot write the man pages to {}: {e}",
            dir.display()
        ))
    })?;
    let pages = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "1"))
                .count()
        })
        .unwrap_or(0);
    ctx.say(format!("{pages} man pages in {}", dir.display()));
    Ok(())
}

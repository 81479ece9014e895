//! Run records: the JSON file every command writes next to its outputs, and the context that
//! prints summaries, shows progress and writes the record.

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use ebm_mpi::Collective;

use crate::error::{CliError, Result};

/// The `format` value of run records.
pub(crate) const RECORD_FORMAT: &str = "ebm-run-record";
/// The version of the record layout. Version 2 added the `checksum` of the record's content
/// (required from it on); version-1 records, written before, are read without one.
pub(crate) const RECORD_FORMAT_VERSION: u32 = 2;

/// Where records say their version, and the first version that carries a checksum.
const RECORD_CHECKSUMS: ebm_io::output::ChecksumsSince = ebm_io::output::ChecksumsSince {
    version_at: "/versions/record_format",
    version: 2,
};

/// Versions of what produced a record.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Versions {
    /// Version of the `ebm` program (the workspace version).
    pub ebm: String,
    /// Version of the record layout.
    pub record_format: u32,
    /// The git commit the program was built from, with `-dirty` when its tracked sources
    /// (`crates/`, `src/`, `build.rs`, `Cargo.toml`, `Cargo.lock`) differed from it; absent
    /// when it was not built from a git checkout of the workspace (and in records written
    /// before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// A run record: what was run, with which settings and seed, on which inputs, what it wrote
/// and what it found.
#[derive(Serialize, Deserialize, Debug)]
pub(crate) struct Record<S, R> {
    /// Always [`RECORD_FORMAT`].
    pub format: String,
    /// The command, e.g. `"sample"` or `"data generate"`.
    pub command: String,
    /// Program and format versions.
    pub versions: Versions,
    /// The command line as given.
    pub arguments: Vec<String>,
    /// The seed, for commands that draw random numbers.
    pub seed: Option<u64>,
    /// Worker threads used (results do not depend on it).
    pub threads: usize,
    /// Processes that ran the command (ranks of `mpirun -n K`, 1 otherwise; results do not
    /// depend on it).
    #[serde(default = "one")]
    pub ranks: usize,
    /// Every option, with defaults filled in.
    pub settings: S,
    /// Files read.
    pub inputs: Vec<PathBuf>,
    /// Files written (besides the record itself).
    pub outputs: Vec<PathBuf>,
    /// What the command computed.
    pub results: R,
    /// Wall-clock time of the command, in seconds.
    pub elapsed_seconds: f64,
}

fn one() -> usize {
    1
}

/// Where a command reports to: summary lines, progress bars, the record; and the processes
/// it runs on.
#[derive(Debug)]
pub(crate) struct Context {
    quiet: bool,
    json: bool,
    arguments: Vec<String>,
    started: Instant,
    world: Box<dyn Collective>,
    /// The commit the program was built from, for the records ([`crate::Program::commit`]).
    commit: Option<&'static str>,
}

impl Context {
    /// Only rank 0 of `world` prints: the other ranks are quiet.
    pub fn new(
        quiet: bool,
        json: bool,
        arguments: Vec<String>,
        world: Box<dyn Collective>,
    ) -> Self {
        Self {
            quiet: quiet || !world.is_root(),
            json: json && world.is_root(),
            arguments,
            started: Instant::now(),
            world,
            commit: None,
        }
    }

    /// The context of a program built from `commit` (written into every record).
    pub fn with_commit(self, commit: Option<&'static str>) -> Self {
        Self { commit, ..self }
    }

    /// The commit the program was built from, if known.
    pub fn commit(&self) -> Option<&'static str> {
        self.commit
    }

    /// The processes the command runs on ([`ebm_mpi::Solo`] outside `mpirun`).
    pub fn world(&self) -> &dyn Collective {
        &*self.world
    }

    /// Fails when the command runs on several processes: `what` is not sharded, and every
    /// process would run it whole and write the same outputs.
    pub fn one_process(&self, what: &str) -> Result<()> {
        let n = self.world.size();
        if n > 1 {
            return Err(CliError::new(format!(
                "{what} does not run sharded over MPI processes (this is one of {n}); run it \
                 in one process, without mpirun (sharded: `ebm sample --sampler gibbs` without \
                 --trace-every/--chain-out, `ebm sample --sampler pt | pt-ref | ptt | stacked`, \
                 `ebm loglik ais | reverse-ais | tr-ais`, and `ebm train --negative pcd | cd | \
                 pt` without --pretrain)"
            )));
        }
        Ok(())
    }

    /// Prints a summary line on stdout (not with `--quiet` or `--json`).
    pub fn say(&self, line: impl AsRef<str>) {
        if !self.quiet && !self.json {
            println!("{}", line.as_ref());
        }
    }

    /// Prints `warning: line` on stderr (not with `--quiet`; the run record keeps it anyway).
    pub fn warn(&self, line: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("warning: {}", line.as_ref());
        }
    }

    /// A progress bar of `len` steps on stderr, with rate and ETA. Hidden with `--quiet` or
    /// `--json`, and by indicatif itself when stderr is not a terminal.
    pub fn progress(&self, len: u64, what: &str) -> ProgressBar {
        if self.quiet || self.json {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, ETA {eta})",
        )
        .expect("valid progress template");
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        bar
    }

    /// Builds the record, writes it to `record_path` (if any, atomically) and prints it with
    /// `--json`.
    pub fn finish<S: Serialize, R: Serialize>(
        &self,
        command: &str,
        seed: Option<u64>,
        settings: &S,
        inputs: &[&Path],
        outputs: &[&Path],
        results: &R,
        record_path: Option<&Path>,
    ) -> Result<()> {
        let record = self.record(command, seed, settings, inputs, outputs, results)?;
        if let Some(path) = record_path {
            write_record(path, &record)?;
        }
        self.report_record(record_path, &record)
    }

    /// The run record of `command` (see [`Record`]), as JSON text; the elapsed time is
    /// measured now.
    pub fn record<S: Serialize, R: Serialize>(
        &self,
        command: &str,
        seed: Option<u64>,
        settings: &S,
        inputs: &[&Path],
        outputs: &[&Path],
        results: &R,
    ) -> Result<RecordText> {
        let record = Record {
            format: RECORD_FORMAT.to_string(),
            command: command.to_string(),
            versions: Versions {
                ebm: env!("CARGO_PKG_VERSION").to_string(),
                record_format: RECORD_FORMAT_VERSION,
                commit: self.commit.map(str::to_string),
            },
            arguments: self.arguments.clone(),
            seed,
            threads: rayon::current_num_threads(),
            ranks: self.world.size(),
            settings,
            inputs: inputs.iter().map(|p| p.to_path_buf()).collect(),
            outputs: outputs.iter().map(|p| p.to_path_buf()).collect(),
            results,
            elapsed_seconds: self.started.elapsed().as_secs_f64(),
        };
        let encode =
            |e: serde_json::Error| CliError::new(format!("cannot encode the run record: {e}"));
        let mut value = serde_json::to_value(&record).map_err(encode)?;
        ebm_io::output::sign_json(&mut value)?;
        Ok(RecordText {
            file: serde_json::to_string_pretty(&value).map_err(encode)? + "\n",
            line: serde_json::to_string(&value).map_err(encode)?,
        })
    }

    /// Reports a record written to `path` (if any), and prints it with `--json`.
    pub fn report_record(&self, path: Option<&Path>, record: &RecordText) -> Result<()> {
        if let Some(path) = path {
            self.say(format!("record: {}", path.display()));
        }
        if self.json {
            println!("{}", record.line);
        }
        Ok(())
    }
}

/// A run record encoded for its file (indented) and for `--json` (one line).
#[derive(Debug)]
pub(crate) struct RecordText {
    file: String,
    line: String,
}

/// Writes a run record to `path` atomically.
pub(crate) fn write_record(path: &Path, record: &RecordText) -> Result<()> {
    ebm_io::write_atomically(path, |w| w.write_all(record.file.as_bytes()))?;
    Ok(())
}

/// The record written next to `output`: the same path with the extension `.json`.
pub(crate) fn record_path_for(output: &Path) -> PathBuf {
    output.with_extension("json")
}

/// Reads a run record of `command` from `path`, with the settings left untyped and the
/// results decoded as `R`. Its checksum is verified first (required from record format
/// version 2 on): a record edited by hand is refused, so a figure or a reproduction draws only
/// what a command computed.
pub(crate) fn read_record<R: for<'de> Deserialize<'de>>(
    path: &Path,
    command: &str,
) -> Result<Record<serde_json::Value, R>> {
    let bytes = crate::files::read_input(path)?;
    let mut value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        CliError::new(format!(
            "{} is not an ebm run record: not valid JSON (line {}, column {}): {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let format = value.get("format").and_then(|f| f.as_str());
    if format != Some(RECORD_FORMAT) {
        return Err(CliError::new(format!(
            "{} is not an ebm run record (no \"format\": \"{RECORD_FORMAT}\")",
            path.display()
        )));
    }
    ebm_io::output::verify_json_checksum(path, &mut value, RECORD_CHECKSUMS)?;
    let found = value.get("command").and_then(|c| c.as_str()).unwrap_or("?");
    if found != command {
        return Err(CliError::new(format!(
            "{} is the record of `ebm {found}`, expected one of `ebm {command}`",
            path.display()
        )));
    }
    serde_json::from_value(value).map_err(|e| {
        CliError::new(format!(
            "{}: unexpected content in the record of `ebm {command}`: {e}",
            path.display()
        ))
    })
}

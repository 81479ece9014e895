//! Reading and writing the files of the command line: datasets and matrices (through
//! `ebm-data`), atomic writes (through `ebm-io`), and CSV tables with a header for plots.
//!
//! Every input is read through [`ebm_core::input`]: only regular files (a FIFO, a device or a
//! directory is refused before it is opened), whole-file reads capped.

use std::path::{Path, PathBuf};

use ebm_data::{Dataset, Domain, LoadOptions};
use nalgebra::DMatrix;

use crate::error::{CliError, Result, bail};

/// Loads a data file with the default options (format from the extension).
pub(crate) fn load_dataset(path: &Path) -> Result<Dataset> {
    if ebm_data::Format::from_path(path).is_none() {
        let what = foreign_format(path).map_or(String::new(), |f| {
            // An HDF5 file given as data is most likely a model of the `rbms` package.
            let model = if f.starts_with("an HDF5") {
                " If it holds a model or trajectory of the `rbms` package, give it as --model \
                 or --trajectory (ebm reads those directly); a data array in it"
            } else {
                " Its array"
            };
            format!(
                " It is {f}.{model} must be exported to .npy or .csv first (e.g. with \
                 numpy.save or numpy.savetxt)."
            )
        });
        bail!(
            "cannot read {}: the extension does not say which data format it is; ebm reads \
             .npy (NumPy), .csv/.tsv/.txt/.dat (one sample per line), IDX (MNIST, *-ubyte) and \
             FASTA (.fasta/.fa/.aln) files.{what}",
            path.display()
        );
    }
    Ok(ebm_data::load(path, &LoadOptions::default())?)
}

/// Reads the whole text input `path` (a table, a run record, a log): a regular file of at most
/// [`ebm_core::input::MAX_TEXT_BYTES`] ([`ebm_core::input::read_regular`]).
pub(crate) fn read_input(path: &Path) -> Result<Vec<u8>> {
    ebm_core::input::read_regular(path, ebm_core::input::MAX_TEXT_BYTES)
        .map_err(|e| CliError::new(format!("cannot read {}: {e}", path.display())))
}

/// What kind of foreign file `path` is, from its first bytes, if recognised (`None` also for a
/// file that cannot be opened or is not a regular file).
pub(crate) fn foreign_format(path: &Path) -> Option<&'static str> {
    use std::io::Read;
    let mut magic = [0u8; 8];
    let n = ebm_core::input::open_regular(path)
        .ok()?
        .read(&mut magic)
        .ok()?;
    ebm_io::foreign_format(&magic[..n])
}

/// Formats a matrix can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MatrixFormat {
    Npy,
    Csv,
}

fn matrix_format(path: &Path) -> Result<MatrixFormat> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("npy") => Ok(MatrixFormat::Npy),
        Some("csv") => Ok(MatrixFormat::Csv),
        _ => bail!(
            "cannot tell the format of output file {}: use the extension .npy or .csv",
            path.display()
        ),
    }
}

/// Checks, before any work is done, that `path` can be written as a matrix file.
pub(crate) fn check_matrix_output(path: &Path) -> Result<()> {
    matrix_format(path).map(|_| ())
}

/// Writes an `n_columns x n_rows`-oriented matrix `m` (one column per sample, the layout of
/// datasets and chain batches) as one row per column of `m`: `.npy` (`<f8`, C order) or
/// `.csv`, atomically.
pub(crate) fn write_samples(path: &Path, m: &DMatrix<f64>) -> Result<()> {
    let bytes = match matrix_format(path)? {
        MatrixFormat::Npy => ebm_data::loaders::npy::to_npy_bytes(m),
        MatrixFormat::Csv => {
            let ds = Dataset::new(m.clone(), Domain::Real)?;
            ebm_data::loaders::text::to_csv(&ds).into_bytes()
        }
    };
    ebm_io::write_atomically(path, |w| w.write_all(&bytes))?;
    Ok(())
}

/// What every command does with its files before any work:
/// - finishes the commit of any output set an input belongs to, left unfinished by a run killed
///   during it ([`ebm_io::output::committed_sets_writing`]; skipped while a run holds that
///   set's lock), so that no command reads a set half at one update and half at another;
/// - checks that every output's directory exists and is writable (a file is created and
///   removed in it), so that a command never computes for nothing;
/// - refuses an output that would overwrite an input file, another output (the run record is
///   the output's name with `.json`), a file of another run's output set ([`owner_record`]),
///   or a file a run in progress is writing and has not committed yet
///   ([`ebm_io::output::written_by_another_run`]).
pub(crate) fn check_outputs(outputs: &[&Path], inputs: &[&Path]) -> Result<()> {
    for input in inputs {
        for anchor in ebm_io::output::committed_sets_writing(input) {
            if let Ok(_lock) = ebm_io::output::OutputLock::acquire(&anchor) {
                ebm_io::output::StagedOutputs::recover(&anchor)?;
            }
        }
    }
    let mut probed = Vec::new();
    for o in outputs {
        let dir = o
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            bail!(
                "cannot write {}: the directory {} does not exist",
                o.display(),
                dir.display()
            );
        }
        if !probed.contains(&dir) {
            writable(dir).map_err(|e| {
                CliError::new(format!(
                    "cannot write {}: the directory {} is not writable ({e})",
                    o.display(),
                    dir.display()
                ))
            })?;
            probed.push(dir);
        }
    }
    for o in outputs {
        let co = canonical(o);
        for i in inputs {
            if co == canonical(i) {
                bail!(
                    "output {} would overwrite the input {}; choose another output name",
                    o.display(),
                    i.display()
                );
            }
        }
    }
    for (k, a) in outputs.iter().enumerate() {
        if outputs[k + 1..]
            .iter()
            .any(|b| canonical(a) == canonical(b))
        {
            bail!(
                "{} would be written twice (the run record is the output's name with .json); \
                 choose another output name",
                a.display()
            );
        }
    }
    for o in outputs {
        if let Some(lock) = ebm_io::output::written_by_another_run(o) {
            bail!(
                "cannot write {}: another run is writing the outputs named after it, {} among \
                 them (it holds the lock {}); wait for it to finish or choose another output \
                 name",
                o.display(),
                o.file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
                lock.display()
            );
        }
    }
    let ours: Vec<PathBuf> = outputs.iter().map(|o| canonical(o)).collect();
    for o in outputs {
        if let Some((record, command)) = owner_record(o, &ours) {
            bail!(
                "output {} would overwrite a file of another run's outputs ({command}, recorded \
                 in {}); choose another output name",
                o.display(),
                record.display()
            );
        }
    }
    Ok(())
}

/// `p` canonicalised; for a file not there yet, its directory canonicalised and its name kept.
fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        p.file_name().map_or(dir.clone(), |n| dir.join(n))
    })
}

/// Whether files can be created in `dir`: creates and removes an empty file.
fn writable(dir: &Path) -> std::io::Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let probe = dir.join(format!(".ebm-write-check-{}-{nanos}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

/// The run record, and its command, of another run's output set that the existing file
/// `output` belongs to, if any: `output` is itself a run record (`X.json`, with the fields
/// `command` and `outputs`) that lists none of `ours` (this run's outputs, canonical), or a file
/// listed in the `outputs` of a record beside it named after a prefix of its name (`k.json`
/// for `k.trajectory.safetensors`) that is not among `ours`. Rewriting one's own outputs (the
/// same command again, or a resume into them) is allowed.
fn owner_record(output: &Path, ours: &[PathBuf]) -> Option<(PathBuf, String)> {
    if !output.is_file() {
        return None;
    }
    let output = canonical(output);
    let name = output.file_name()?.to_str()?;
    let dir = output.parent()?;
    let read = |record: &Path| -> Option<(String, Vec<String>)> {
        let bytes = ebm_core::input::read_regular(record, ebm_core::input::MAX_TEXT_BYTES).ok()?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        let command = v.get("command")?.as_str()?.to_string();
        let names = v
            .get("outputs")?
            .as_array()?
            .iter()
            .filter_map(|o| Some(Path::new(o.as_str()?).file_name()?.to_str()?.to_string()))
            .collect();
        Some((command, names))
    };
    let listed_ours = |names: &[String]| {
        ours.iter().any(|o| {
            o.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| names.iter().any(|m| m == n))
        })
    };
    if name.ends_with(".json")
        && let Some((command, names)) = read(&output)
        && !names.is_empty()
        && !listed_ours(&names)
    {
        return Some((output.clone(), format!("ebm {command}")));
    }
    let mut prefix = name;
    while let Some((head, _)) = prefix.rsplit_once('.') {
        prefix = head;
        let record = dir.join(format!("{prefix}.json"));
        if record == output || ours.contains(&record) {
            continue;
        }
        if let Some((command, names)) = read(&record)
            && names.iter().any(|n| n == name)
        {
            return Some((record, format!("ebm {command}")));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_may_not_overwrite_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("run.json");
        std::fs::write(&input, "{}").unwrap();
        let same = dir.path().join(".").join("run.json");
        assert!(check_outputs(&[&same], &[&input]).is_err());
        let other = dir.path().join("fig.json");
        assert!(check_outputs(&[&other], &[&input]).is_ok());
        assert!(check_outputs(&[&other, &other], &[]).is_err());
    }
}

//! The output set of a run: an advisory lock on it, JSON files with a checksum, and a commit
//! that replaces every file of the set as a unit.
//!
//! - [`OutputLock::acquire`] takes an exclusive advisory lock (`flock` on Unix) on a lock file
//!   next to the outputs, so that a second run writing the same outputs fails at once with a
//!   clear message instead of mixing its files with the first run's. The lock is released when
//!   the value is dropped or the process ends (even when killed); the lock file itself stays.
//!   Creating it is also the check, before any work, that the output directory is writable.
//!   [`OutputLock::acquire_for`] also lists the run's outputs in the lock file, so that
//!   [`written_by_another_run`] tells any other command that it would write over a file of a
//!   run in progress, before that run has committed anything.
//! - [`StagedOutputs`]: every file of the set is first written to a staging directory next to
//!   the outputs; [`StagedOutputs::commit`] then writes a manifest (the commit point) and
//!   renames each file into place. A run killed before the manifest leaves the previous set
//!   untouched; a run killed after it leaves a committed staging directory that
//!   [`StagedOutputs::recover`] (called under the lock by the next run on the same outputs)
//!   finishes. Readers never see a half-written file (each rename is atomic).
//! - [`write_json_checked`] / [`read_json_checked`]: JSON documents carrying a `checksum` of
//!   their content, verified on reading, and required in every document of a format version
//!   that has them ([`ChecksumsSince`]).
//!
//! # Example
//! ```
//! use ebm_io::output::{OutputLock, StagedOutputs};
//! let dir = tempfile::tempdir().unwrap();
//! let model = dir.path().join("m.safetensors");
//! let lock = OutputLock::acquire(&model)?;
//! // A second lock on the same outputs fails at once.
//! assert!(OutputLock::acquire(&model).is_err());
//! let mut set = StagedOutputs::begin(&model)?;
//! let a = set.stage(&dir.path().join("m.txt"));
//! ebm_io::write_atomically(&a, |w| w.write_all(b"new"))?;
//! set.commit()?;
//! assert_eq!(std::fs::read(dir.path().join("m.txt")).unwrap(), b"new");
//! drop(lock);
//! # Ok::<(), ebm_core::Error>(())
//! ```

use std::fs::File;
use std::path::{Path, PathBuf};

use ebm_core::{Error, Result};

use crate::{Fnv1a, format_error, io_error, write_atomically};

/// An exclusive advisory lock on the outputs named after `anchor` (see the
/// [module docs](self)); released on drop.
#[derive(Debug)]
pub struct OutputLock {
    path: PathBuf,
    _file: File,
}

impl OutputLock {
    /// Locks the outputs named after `anchor` (e.g. the model file) through the lock file
    /// `anchor` with the extension `.lock`, created if needed.
    ///
    /// # Errors
    /// [`Error::Io`] if the lock file cannot be created (the directory is missing or not
    /// writable), or if another process holds the lock (kind
    /// [`std::io::ErrorKind::WouldBlock`], with a message saying so).
    pub fn acquire(anchor: &Path) -> Result<Self> {
        let path = anchor.with_extension("lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_error(&path))?;
        match file.try_lock() {
            // Held: the list of outputs a previous holder left ([`OutputLock::acquire_for`])
            // is no longer true.
            Ok(()) => match file.set_len(0) {
                Ok(()) => Ok(Self { path, _file: file }),
                Err(e) => Err(io_error(&path)(e)),
            },
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Io {
                path: path.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    format!(
                        "another run is writing the outputs {} (it holds this lock); wait for \
                         it to finish or choose another output name",
                        anchor.display()
                    ),
                ),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(io_error(&path)(e)),
        }
    }

    /// [`OutputLock::acquire`], then writes the file names of `outputs` (one per line) into
    /// the lock file, for [`written_by_another_run`] to tell other commands which files this
    /// run is writing.
    ///
    /// # Errors
    /// As [`OutputLock::acquire`]; [`Error::Io`] if the names cannot be written.
    pub fn acquire_for(anchor: &Path, outputs: &[&Path]) -> Result<Self> {
        use std::io::Write;
        let lock = Self::acquire(anchor)?;
        let names: String = outputs
            .iter()
            .filter_map(|o| o.file_name()?.to_str())
            .map(|n| format!("{n}\n"))
            .collect();
        let mut file = &lock._file;
        file.set_len(0)
            .and_then(|()| file.write_all(names.as_bytes()))
            .map_err(io_error(&lock.path))?;
        Ok(lock)
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The lock file of a run in progress, in another process, that writes `output`, if any: a
/// lock `P.lock` beside `output`, for a prefix `P` of its name (`k.lock` for `k.json` or
/// `k.trajectory.safetensors`), that another process holds ([`OutputLock`]) and whose list
/// of outputs ([`OutputLock::acquire_for`]) names `output`, or is empty (a lock taken without
/// a list). A lock file left by a finished run is not held, and ignored.
///
/// A run's first outputs appear only when it commits them, so this is how a command tells,
/// before any work, that it would write over the files of a run still in progress. Call it
/// before taking one's own lock: a lock this process holds reads as held. Asking takes a
/// shared lock for an instant, so a run that tries to take the lock at that very instant is
/// told that another run holds it.
pub fn written_by_another_run(output: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let name = output.file_name()?.to_str()?;
    let mut prefix = name;
    while let Some((head, _)) = prefix.rsplit_once('.') {
        prefix = head;
        let lock = output.with_file_name(format!("{prefix}.lock"));
        let Ok(mut file) = ebm_core::input::open_regular(&lock) else {
            continue;
        };
        // A shared lock: two commands asking at once (the ranks of one mpirun) do not see
        // each other's question as a run in progress; only an exclusive holder blocks it.
        if !matches!(
            file.try_lock_shared(),
            Err(std::fs::TryLockError::WouldBlock)
        ) {
            continue;
        }
        let mut names = String::new();
        let listed = (&mut file).take(1 << 20).read_to_string(&mut names).is_ok();
        if !listed || names.trim().is_empty() || names.lines().any(|n| n == name) {
            return Some(lock);
        }
    }
    None
}

/// The name of the manifest that marks a staging directory as committed.
const MANIFEST: &str = "COMMITTED";

/// Files of one output set being written (see the [module docs](self)).
#[derive(Debug)]
pub struct StagedOutputs {
    dir: PathBuf,
    files: Vec<(PathBuf, PathBuf)>,
}

/// The staging directory of the outputs named after `anchor`.
fn staging_dir(anchor: &Path) -> PathBuf {
    let name = anchor
        .file_name()
        .map_or_else(|| "ebm".into(), |n| n.to_string_lossy().into_owned());
    anchor.with_file_name(format!(".{name}.staging"))
}

impl StagedOutputs {
    /// Starts a set of outputs named after `anchor`: finishes or removes what an interrupted
    /// earlier commit left ([`StagedOutputs::recover`]) and creates an empty staging
    /// directory. Call it while holding the [`OutputLock`].
    ///
    /// # Errors
    /// [`Error::Io`] if the staging directory cannot be created.
    pub fn begin(anchor: &Path) -> Result<Self> {
        Self::recover(anchor)?;
        // Absolute paths throughout, so that a recovery from another working directory finds
        // the staged files and their targets.
        let dir = staging_dir(&std::path::absolute(anchor).map_err(io_error(anchor))?);
        std::fs::create_dir(&dir).map_err(io_error(&dir))?;
        Ok(Self {
            dir,
            files: Vec::new(),
        })
    }

    /// The staging path where the file `target` of the set is to be written.
    pub fn stage(&mut self, target: &Path) -> PathBuf {
        let name = format!(
            "{}-{}",
            self.files.len(),
            target
                .file_name()
                .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned())
        );
        let staged = self.dir.join(name);
        let target = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
        self.files.push((staged.clone(), target));
        staged
    }

    /// Commits the set: writes the manifest (from then on the set counts as written), renames
    /// every staged file over its target, removes the staging directory.
    ///
    /// # Errors
    /// [`Error::Io`] if a file was not staged or a step fails (after the manifest, the next
    /// [`StagedOutputs::recover`] completes the commit).
    pub fn commit(self) -> Result<()> {
        for (staged, _) in &self.files {
            if !staged.is_file() {
                return Err(io_error(staged)(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "an output of the set was not written",
                )));
            }
        }
        let manifest: Vec<(String, PathBuf)> = self
            .files
            .iter()
            .map(|(s, t)| {
                let name = s.file_name().expect("staged files have names");
                (name.to_string_lossy().into_owned(), t.clone())
            })
            .collect();
        let json = serde_json::to_vec(&manifest).expect("paths serialise");
        write_atomically(&self.dir.join(MANIFEST), |w| w.write_all(&json))?;
        finish(&self.dir, &manifest)
    }

    /// Completes or discards what an interrupted commit of the outputs named after `anchor`
    /// left: a committed staging directory is finished (its files renamed into place), an
    /// uncommitted one removed. Returns whether a commit was completed.
    ///
    /// # Errors
    /// [`Error::Format`] for an unreadable manifest; [`Error::Io`] if a step fails.
    pub fn recover(anchor: &Path) -> Result<bool> {
        let dir = staging_dir(anchor);
        if !dir.exists() {
            return Ok(false);
        }
        let manifest_path = dir.join(MANIFEST);
        let completed =
            match ebm_core::input::read_regular(&manifest_path, ebm_core::input::MAX_TEXT_BYTES) {
                Ok(bytes) => {
                    let manifest: Vec<(String, PathBuf)> = serde_json::from_slice(&bytes)
                        .map_err(|e| format_error(&manifest_path, "manifest", e.to_string()))?;
                    finish(&dir, &manifest)?;
                    true
                }
                Err(_) => false,
            };
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io_error(&dir))?;
        }
        Ok(completed)
    }
}

/// A set that was never committed (an error, e.g. a full disk, or a panic before
/// [`StagedOutputs::commit`]) removes its staging directory; one whose manifest was written is
/// left for [`StagedOutputs::recover`] to finish.
impl Drop for StagedOutputs {
    fn drop(&mut self) {
        if self.dir.exists() && !self.dir.join(MANIFEST).exists() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The anchors of the committed but unfinished output sets (a staging directory with its
/// manifest, left by a run killed during its commit) among whose targets is `file`: the sets
/// to finish ([`StagedOutputs::recover`], under their [`OutputLock`]) before `file` is read, so
/// that a command never reads one file of a set at the new update and another at the old.
/// Unreadable directories and manifests count as none.
pub fn committed_sets_writing(file: &Path) -> Vec<PathBuf> {
    let Ok(target) = std::path::absolute(file) else {
        return Vec::new();
    };
    let dir = target.parent().unwrap_or(Path::new("/")).to_path_buf();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut anchors = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(anchor) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".staging"))
        else {
            continue;
        };
        let manifest = entry.path().join(MANIFEST);
        let Ok(bytes) = ebm_core::input::read_regular(&manifest, ebm_core::input::MAX_TEXT_BYTES)
        else {
            continue;
        };
        let Ok(files) = serde_json::from_slice::<Vec<(String, PathBuf)>>(&bytes) else {
            continue;
        };
        if files.iter().any(|(_, t)| *t == target) {
            anchors.push(dir.join(anchor));
        }
    }
    anchors
}

/// Renames the staged files of `manifest` into place (those already moved are skipped) and
/// removes the staging directory.
fn finish(dir: &Path, manifest: &[(String, PathBuf)]) -> Result<()> {
    for (name, target) in manifest {
        let staged = dir.join(name);
        if staged.exists() {
            std::fs::rename(&staged, target).map_err(io_error(target))?;
        }
    }
    if let Some(parent) = manifest.first().and_then(|(_, t)| t.parent())
        && let Ok(d) = File::open(if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        })
    {
        let _ = d.sync_all();
    }
    std::fs::remove_dir_all(dir).map_err(io_error(dir))
}

/// The key of the checksum in JSON documents written by [`write_json_checked`].
const JSON_CHECKSUM: &str = "checksum";

fn json_checksum(value: &serde_json::Value) -> String {
    let mut h = Fnv1a::new();
    h.update(&serde_json::to_vec(value).expect("a JSON value serialises"));
    h.hex()
}

/// Adds to the JSON object `value` (which must not have a `checksum` key) a `checksum` of the
/// rest of its content, as [`write_json_checked`] writes and [`verify_json_checksum`] checks;
/// for documents written in another layout (indented, or printed).
///
/// # Errors
/// [`Error::InvalidParameter`] if `value` is not such an object.
pub fn sign_json(value: &mut serde_json::Value) -> Result<()> {
    let checksum = json_checksum(value);
    let map = value
        .as_object_mut()
        .filter(|m| !m.contains_key(JSON_CHECKSUM))
        .ok_or_else(|| Error::InvalidParameter {
            name: "JSON document".into(),
            reason: "must be an object without a \"checksum\" key".into(),
        })?;
    map.insert(JSON_CHECKSUM.into(), checksum.into());
    Ok(())
}

/// Writes `document` (which must serialise to a JSON object without a `checksum` key) to
/// `path` atomically, adding a `checksum` of the rest of its content ([`sign_json`]).
///
/// # Errors
/// [`Error::InvalidParameter`] if the document is not such an object; [`Error::Io`] if the
/// file cannot be written.
pub fn write_json_checked(path: &Path, document: &impl serde::Serialize) -> Result<()> {
    let bad = |reason: String| Error::InvalidParameter {
        name: "JSON document".into(),
        reason,
    };
    let mut value = serde_json::to_value(document).map_err(|e| bad(e.to_string()))?;
    sign_json(&mut value)?;
    let json = serde_json::to_vec(&value).map_err(|e| bad(e.to_string()))?;
    write_atomically(path, |w| w.write_all(&json))
}

/// Where a JSON format records its version, and the first version whose documents all carry
/// a checksum: what [`read_json_checked`] needs to tell a document written before checksums
/// (read as is) from one whose checksum was removed or misspelled (refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChecksumsSince {
    /// The JSON pointer of the version number in the document (e.g. `"/format_version"`).
    pub version_at: &'static str,
    /// The first version in which every document carries a checksum.
    pub version: u64,
}

/// Reads a JSON document from `path` (a regular file of at most
/// [`ebm_core::input::MAX_TEXT_BYTES`]) and verifies its `checksum`; returns it without the
/// checksum.
///
/// A document without a checksum is read as is only when its version (at
/// [`ChecksumsSince::version_at`]) is a number below [`ChecksumsSince::version`]: one written
/// before checksums were introduced. A document without a version is left to the caller's
/// checks of its format.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, is not a regular file or is too large;
/// [`Error::Format`] if it is not JSON (with the line and column), its content does not match
/// its checksum, or it has no checksum although its version requires one (location
/// `"checksum"`).
pub fn read_json_checked(path: &Path, since: ChecksumsSince) -> Result<serde_json::Value> {
    let bytes = ebm_core::input::read_regular(path, ebm_core::input::MAX_TEXT_BYTES)
        .map_err(io_error(path))?;
    let mut value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        format_error(
            path,
            format!("line {} column {}", e.line(), e.column()),
            format!("not valid JSON: {e}"),
        )
    })?;
    verify_json_checksum(path, &mut value, since)?;
    Ok(value)
}

/// Verifies and removes the `checksum` of the JSON document `value` read from `path` (see
/// [`read_json_checked`], which reads and parses the file first): a document without a
/// checksum passes only when its version (at [`ChecksumsSince::version_at`]) is a number below
/// [`ChecksumsSince::version`], or it has no version (left to the caller's format checks).
///
/// # Errors
/// [`Error::Format`] (location `"checksum"`) if the content does not match the checksum, or
/// there is none although the version requires one.
pub fn verify_json_checksum(
    path: &Path,
    value: &mut serde_json::Value,
    since: ChecksumsSince,
) -> Result<()> {
    let recorded = value.as_object_mut().and_then(|m| m.remove(JSON_CHECKSUM));
    let Some(recorded) = recorded else {
        return match value.pointer(since.version_at).and_then(|v| v.as_u64()) {
            Some(v) if v >= since.version => Err(format_error(
                path,
                "checksum",
                format!(
                    "no \"{JSON_CHECKSUM}\" field, which every document of format version {v} \
                     carries: the key was removed or misspelled (the file was edited or is \
                     corrupted)"
                ),
            )),
            _ => Ok(()),
        };
    };
    let actual = json_checksum(value);
    if recorded.as_str() != Some(actual.as_str()) {
        return Err(format_error(
            path,
            "checksum",
            format!(
                "the content does not match its checksum (recorded {recorded}, computed \
                 {actual}): the file is corrupted or was edited"
            ),
        ));
    }
    Ok(())
}

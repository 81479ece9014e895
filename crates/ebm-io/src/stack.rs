//! Stack files (format `ebm-stack`, version 2): the RBMs of a [`Stack`] for stacked tempering,
//! one ordinary `ebm-rbm` file per RBM, listed bottom first by a small JSON manifest carrying a
//! checksum of its content ([`crate::output::write_json_checked`]):
//!
//! ```json
//! { "format": "ebm-stack", "format_version": 2,
//!   "rbms": ["stack.rbm1.safetensors", "stack.rbm2.safetensors"], "checksum": "..." }
//! ```
//!
//! Version 1 manifests (without a checksum, written before it) are read as before; a version-2
//! manifest without its `checksum` is refused.
//!
//! The RBM file names are relative to the manifest's directory. [`save_stack`] writes every
//! file atomically ([`crate::write_atomically`]), the RBM files first and the manifest last, so
//! a manifest never names a file that was not written. [`load_stack`] validates the manifest
//! (format, version, at least one RBM, plain file names), every RBM file ([`crate::load_rbm`])
//! and the nesting of the layers ([`Stack::new`]); every failure is a typed error naming the
//! file.

use crate::{format_error, load_rbm, save_rbm};
use ebm_core::{Error, Result};
use ebm_models::{Layer, Stack};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The value of the `format` key of stack manifests.
pub const STACK_FORMAT: &str = "ebm-stack";
/// The version of the stack manifest written by this crate: 2, with a checksum (it reads 1
/// and 2).
pub const STACK_FORMAT_VERSION: u32 = 2;

/// Manifests carry a checksum from version 2 on.
const STACK_CHECKSUMS: crate::output::ChecksumsSince = crate::output::ChecksumsSince {
    version_at: "/format_version",
    version: 2,
};

/// The manifest as stored.
#[derive(Serialize, Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Manifest {
    format: String,
    format_version: u32,
    /// RBM files, bottom first, relative to the manifest's directory.
    rbms: Vec<String>,
}

/// The RBM files that [`save_stack`] writes for a stack of `depth` RBMs with manifest `path`:
/// `<stem>.rbm<n>.safetensors` next to it, `n = 1..=depth` (1 the bottom).
///
/// # Errors
/// [`Error::InvalidParameter`] unless `path` is a `.json` file name.
pub fn stack_rbm_paths(path: &Path, depth: usize) -> Result<Vec<PathBuf>> {
    let stem = match (path.extension().and_then(|e| e.to_str()), path.file_stem()) {
        (Some("json"), Some(stem)) => stem.to_string_lossy().into_owned(),
        _ => {
            return Err(Error::InvalidParameter {
                name: "stack file".into(),
                reason: format!(
                    "{}: the stack file is a JSON manifest, give a .json path",
                    path.display()
                ),
            });
        }
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    Ok((1..=depth)
        .map(|n| dir.join(format!("{stem}.rbm{n}.safetensors")))
        .collect())
}

/// Saves `stack`: its RBMs to the files of [`stack_rbm_paths`], then the manifest to `path`,
/// each atomically. Returns the RBM files, bottom first.
///
/// # Errors
/// As [`stack_rbm_paths`]; [`Error::Io`] if a file cannot be written.
pub fn save_stack<V: Layer, H: Layer<Scalar = V::Scalar>>(
    stack: &Stack<V, H>,
    path: &Path,
) -> Result<Vec<PathBuf>> {
    let files = stack_rbm_paths(path, stack.len())?;
    save_rbm(stack.bottom(), &files[0])?;
    for (rbm, file) in stack.upper().zip(&files[1..]) {
        save_rbm(rbm, file)?;
    }
    let manifest = Manifest {
        format: STACK_FORMAT.into(),
        format_version: STACK_FORMAT_VERSION,
        rbms: files
            .iter()
            .map(|f| {
                f.file_name()
                    .expect("named above")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect(),
    };
    crate::output::write_json_checked(path, &manifest)?;
    Ok(files)
}

/// Reads and validates the manifest in `path`: the RBM files it lists, bottom first, resolved
/// against the manifest's directory (the files themselves are not read).
///
/// # Errors
/// [`Error::Io`] if `path` cannot be read, is not a regular file or is larger than
/// [`ebm_core::input::MAX_TEXT_BYTES`]; [`Error::Format`] naming `path` if it is not JSON
/// (the location is the line and column), does not match its checksum or lacks one in
/// version 2 ([`crate::output::read_json_checked`]), is not of the manifest's shape, has
/// another format or version, lists no RBM, or names a file outside its directory (an
/// absolute path or one with directory components).
pub fn read_stack_manifest(path: &Path) -> Result<Vec<PathBuf>> {
    let value = crate::output::read_json_checked(path, STACK_CHECKSUMS).map_err(|e| match e {
        Error::Format {
            path,
            location,
            reason,
        } if reason.starts_with("not valid JSON") => Error::Format {
            path,
            location,
            reason: format!("not a stack manifest: {reason}"),
        },
        e => e,
    })?;
    let m: Manifest = serde_json::from_value(value)
        .map_err(|e| format_error(path, "manifest", format!("not a stack manifest: {e}")))?;
    if m.format != STACK_FORMAT || !(1..=STACK_FORMAT_VERSION).contains(&m.format_version) {
        return Err(format_error(
            path,
            "format",
            format!(
                "format {:?} version {}, expected {STACK_FORMAT:?} version 1 to \
                 {STACK_FORMAT_VERSION}",
                m.format, m.format_version
            ),
        ));
    }
    if m.rbms.is_empty() {
        return Err(format_error(path, "rbms", "the stack lists no RBM"));
    }
    let dir = path.parent().unwrap_or(Path::new(""));
    m.rbms
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let name = Path::new(f);
            if name.file_name().is_none_or(|n| n != name.as_os_str()) {
                return Err(format_error(
                    path,
                    format!("rbms[{k}]"),
                    format!(
                        "{f:?} is not a plain file name (the RBM files sit next to the manifest)"
                    ),
                ));
            }
            Ok(dir.join(name))
        })
        .collect()
}

/// Loads the stack saved in `path` with visible units `V` at the bottom and units `H` above.
///
/// # Errors
/// As [`read_stack_manifest`]; as [`crate::load_rbm`] for each RBM file (naming it);
/// [`Error::Format`] naming `path` if the RBMs do not nest (hidden layer of RBM \\(n\\) unlike
/// the visible layer of RBM \\(n + 1\\), [`Stack::new`]).
pub fn load_stack<V: Layer, H: Layer<Scalar = V::Scalar>>(path: &Path) -> Result<Stack<V, H>> {
    let files = read_stack_manifest(path)?;
    let bottom = load_rbm::<V, H>(&files[0])?;
    let upper = files[1..]
        .iter()
        .map(|f| load_rbm::<H, H>(f))
        .collect::<Result<Vec<_>>>()?;
    Stack::new(bottom, upper).map_err(|e| format_error(path, "rbms", e.to_string()))
}

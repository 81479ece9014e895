//! # ebm-io
//!
//! RBM model files: one [safetensors](https://huggingface.co/docs/safetensors) file holding the
//! weights and every layer parameter, with a small JSON metadata header (format name and
//! version, unit types, numbers of units, dtype, energy convention).
//!
//! - [`save_rbm`] writes **atomically** ([`write_atomically`]): to a temporary file in the
//!   destination's directory, flushed to disk, then renamed over the destination. A failed save
//!   leaves any previous file untouched and no temporary file behind.
//! - [`load_rbm`] validates everything and never panics on arbitrary bytes: unreadable,
//!   truncated or non-safetensors files, wrong format or version, unit types other than the ones
//!   requested, missing, unexpected or misshapen tensors and non-finite values are typed errors
//!   naming the file and the byte offset or tensor.
//! - [`read_rbm_info`] reads the header alone (not the tensor data), so a program can dispatch
//!   on the unit types before choosing the types to load with.
//! - [`save_trajectory`] / [`load_trajectory`] / [`read_trajectory_info`]: the checkpoints of a
//!   training run ([`Trajectory`]) in one file of the same kind, each checkpoint's tensors
//!   prefixed by `checkpoint.<k>.`, with the training update of every checkpoint in the
//!   metadata (format `ebm-trajectory`, version 2). Parallel trajectory tempering loads it as a
//!   ladder.
//! - [`save_stack`] / [`load_stack`] / [`read_stack_manifest`]: the RBMs of a stack for stacked
//!   tempering, one RBM file each, listed by a JSON manifest (format `ebm-stack`, version 1;
//!   module [`stack`]).
//! - Models trained by the `rbms` PyTorch package: [`read_rbm_info`], [`load_rbm`],
//!   [`read_trajectory_info`] and [`load_trajectory`] also read its HDF5 files (the last
//!   checkpoint as a model, every checkpoint as a trajectory), mapped exactly to [`Rbm`]
//!   (module [`rbms`], pure Rust, no HDF5 C library).
//!
//! # File layout (format `ebm-rbm`, version 2)
//!
//! Tensors, all of one dtype (`F32` or `F64`, little-endian, row-major as safetensors requires):
//!
//! | Tensor | Shape | Content |
//! |---|---|---|
//! | `weights` | `[visible width, hidden width]` | element `(i, j)` is \\(W_{ij}\\) |
//! | `visible.<name>` | per layer | every tensor of [`ebm_models::Layer::tensors`] of the visible layer |
//! | `hidden.<name>` | per layer | the same for the hidden layer |
//!
//! The `__metadata__` string map holds `format` (`"ebm-rbm"`), `format_version` (`"2"`),
//! `visible` and `hidden` ([`ebm_models::Layer::KIND`]), `visible_units` and `hidden_units`,
//! `dtype` (`"f32"` or `"f64"`), `convention` ([`CONVENTION`]), any free-form entries passed
//! to [`save_rbm_with_metadata`], and `checksum`: the FNV-1a hash ([`Fnv1a`]) of the canonical
//! header without it and of the tensor data, verified on loading.
//!
//! Version 2 differs from version 1 only in that the checksum is required: a version-2 file
//! without one (the key removed or misspelled) is refused. Version-1 files are still read,
//! with their checksum verified if they have one (those written before checksums have none).
//! Model and trajectory files are read only from regular files (not FIFOs or devices,
//! [`ebm_core::input`]).
//!
//! # Float types
//!
//! A file written in `f32` loads as an `f64` model exactly (widening), and an `f64` file loads
//! as an `f32` model by rounding to nearest; a value that overflows `f32` is an error, never a
//! silent infinity. [`RbmFileInfo::dtype`] tells which type a file was written in.
//!
//! # Example
//! ```
//! use ebm_io::{load_rbm, read_rbm_info, save_rbm};
//! use ebm_models::{Bernoulli, Rbm, Spin};
//! use nalgebra::DMatrix;
//!
//! let rbm = Rbm::new(
//!     Bernoulli::new(vec![0.1, -0.2, 0.3]),
//!     Spin::new(vec![0.5, -0.5]),
//!     DMatrix::from_row_slice(3, 2, &[1.0, -1.0, 0.5, 0.25, -0.3, 0.8]),
//! )?;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("model.safetensors");
//! save_rbm(&rbm, &path)?;
//!
//! let info = read_rbm_info(&path)?;
//! assert_eq!((info.visible.as_str(), info.hidden.as_str()), ("bernoulli", "spin"));
//! let back: Rbm<Bernoulli, Spin> = load_rbm(&path)?;
//! assert_eq!(back, rbm);
//! // Asking for other unit types is a clear error, not a silent reinterpretation.
//! assert!(load_rbm::<Spin, Spin>(&path).is_err());
//! # Ok::<(), ebm_core::Error>(())
//! ```

use ebm_core::{Error, Result, Scalar};
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;
use safetensors::tensor::{Dtype, Metadata, TensorView};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

pub mod output;
pub mod rbms;
pub mod stack;
pub use stack::{load_stack, read_stack_manifest, save_stack, stack_rbm_paths};

/// The value of the `format` metadata key of RBM files.
pub const RBM_FORMAT: &str = "ebm-rbm";
/// The version of the RBM file format written by this crate (the newest it reads; it reads
/// version 1 too). Version 2 is version 1 with the checksum required
/// ([`CHECKSUMS_SINCE_VERSION`]).
pub const RBM_FORMAT_VERSION: u32 = 2;
/// The energy convention recorded in every file (metadata key `convention`).
pub const CONVENTION: &str = "E(v,h) = U_V(v) + U_H(h) - v^T W h; bernoulli units in {0,1}, spin units in {-1,+1}, \
potts units one-hot; weights[i][j] = W_ij, row-major";

/// Metadata keys written by the format itself, which [`save_rbm_with_metadata`] refuses as
/// free-form entries.
pub const RESERVED_METADATA_KEYS: [&str; 9] = [
    "checksum",
    "format",
    "format_version",
    "visible",
    "hidden",
    "visible_units",
    "hidden_units",
    "dtype",
    "convention",
];

/// Length of the little-endian `u64` header-length prefix of a safetensors file.
const PREFIX: usize = 8;
/// Largest JSON header accepted (the limit of the safetensors crate).
const MAX_HEADER: u64 = 100_000_000;

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn format_error(path: &Path, location: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        location: location.into(),
        reason: reason.into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

/// Writes a file atomically: `write` fills a temporary file created in `path`'s directory,
/// which is flushed and synced to disk and then renamed over `path`. If `write` or any step
/// fails, `path` keeps its previous content (or stays absent) and the temporary file is
/// removed.
///
/// The new file keeps the permissions of the file it replaces; a new file gets the usual
/// `0o666` minus the process umask on Unix. After the rename the directory is synced too (best
/// effort: a failure there is ignored, since the new content is already in place).
///
/// This is the building block of every file this workspace writes (models, trajectories,
/// chain checkpoints).
///
/// # Errors
/// [`Error::Io`] naming `path` for any failure, including the one `write` returns.
///
/// # Example
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("notes.txt");
/// ebm_io::write_atomically(&path, |w| w.write_all(b"hello"))?;
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
/// # Ok::<(), ebm_core::Error>(())
/// ```
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut write = Some(write);
    write_atomically_with(path, &mut |w| {
        (write.take().expect("the writer is called once"))(w)
    })
}

/// [`write_atomically`] with the writer as a trait object: the body is compiled once, not
/// once for every writer of every model type.
fn write_atomically_with(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let io = io_error(path);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let prefix = match path.file_name() {
        Some(name) => format!(".{}.", name.to_string_lossy()),
        None => ".ebm.".to_string(),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    let permissions = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Some(m.permissions()),
        _ => default_permissions(),
    };
    if let Some(p) = permissions {
        builder.permissions(p);
    }
    // From here on, dropping `tmp` (on any early return) deletes the temporary file.
    let mut tmp = builder.tempfile_in(&dir).map_err(&io)?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(&io)?;
        w.flush().map_err(&io)?;
    }
    tmp.as_file().sync_all().map_err(&io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(unix)]
fn default_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(std::fs::Permissions::from_mode(0o666))
}

#[cfg(not(unix))]
fn default_permissions() -> Option<std::fs::Permissions> {
    None
}

fn dtype_of<F: Scalar>() -> Dtype {
    if F::NAME == "f32" {
        Dtype::F32
    } else {
        Dtype::F64
    }
}

/// Little-endian bytes of `values` in the on-disk width of `F`.
fn to_le_bytes<F: Scalar>(values: &[F]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(values));
    for v in values {
        if F::NAME == "f32" {
            // Exact: `v` is an f32 widened to f64.
            out.extend_from_slice(&(v.as_f64() as f32).to_le_bytes());
        } else {
            out.extend_from_slice(&v.as_f64().to_le_bytes());
        }
    }
    out
}

/// Rejects free-form metadata that would override a key of `format` itself.
fn check_extra_keys(
    extra: &BTreeMap<String, String>,
    reserved: &[&str],
    format: &str,
) -> Result<()> {
    match extra.keys().find(|k| reserved.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(Error::InvalidParameter {
            name: k.clone(),
            reason: format!("\"{k}\" is a reserved metadata key of the {format} format"),
        }),
    }
}

/// Saves `rbm` to `path` (safetensors with metadata, see the [crate docs](crate)),
/// atomically.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written (any previous file at `path` is then
/// untouched).
pub fn save_rbm<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    path: &Path,
) -> Result<()> {
    save_rbm_with_metadata(rbm, path, &BTreeMap::new())
}

/// Saves `rbm` like [`save_rbm`], adding the free-form `extra` entries to the metadata
/// (e.g. a `description`, the training step). They come back in [`RbmFileInfo::extra`]. Keys
/// of the format itself ([`RESERVED_METADATA_KEYS`]) cannot be overridden.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written; [`Error::InvalidParameter`] if `extra` uses a
/// reserved key (nothing is written then).
pub fn save_rbm_with_metadata<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    path: &Path,
    extra: &BTreeMap<String, String>,
) -> Result<()> {
    check_extra_keys(extra, &RESERVED_METADATA_KEYS, RBM_FORMAT)?;
    let mut metadata: HashMap<String, String> =
        extra.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (k, v) in [
        ("format", RBM_FORMAT.to_string()),
        ("format_version", RBM_FORMAT_VERSION.to_string()),
        ("visible", V::KIND.to_string()),
        ("hidden", H::KIND.to_string()),
        ("visible_units", rbm.visible().n_units().to_string()),
        ("hidden_units", rbm.hidden().n_units().to_string()),
        ("dtype", V::Scalar::NAME.to_string()),
        ("convention", CONVENTION.to_string()),
    ] {
        metadata.insert(k.to_string(), v);
    }

    let owned = model_tensors(rbm, "");
    write_tensors::<V::Scalar>(path, &owned, metadata)
}

/// The tensors of one model as `(name, shape, little-endian bytes)`, every name prefixed by
/// `prefix`: `<prefix>weights`, `<prefix>visible.<name>`, `<prefix>hidden.<name>`.
fn model_tensors<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    prefix: &str,
) -> Vec<(String, Vec<usize>, Vec<u8>)> {
    let (nv, nh) = rbm.weights().shape();
    // nalgebra is column-major: the transpose's storage is W in row-major order.
    let weights = rbm.weights().transpose();
    let mut owned: Vec<(String, Vec<usize>, Vec<u8>)> = vec![(
        format!("{prefix}weights"),
        vec![nv, nh],
        to_le_bytes(weights.as_slice()),
    )];
    for (side, tensors) in [
        ("visible", rbm.visible().tensors()),
        ("hidden", rbm.hidden().tensors()),
    ] {
        for (name, shape, values) in tensors {
            owned.push((
                format!("{prefix}{side}.{name}"),
                shape,
                to_le_bytes(&values),
            ));
        }
    }
    owned
}

/// Serialises `owned` tensors of dtype `F` with `metadata` into a safetensors file at `path`,
/// atomically.
fn write_tensors<F: Scalar>(
    path: &Path,
    owned: &[(String, Vec<usize>, Vec<u8>)],
    metadata: HashMap<String, String>,
) -> Result<()> {
    let dtype = dtype_of::<F>();
    let views = owned
        .iter()
        .map(|(name, shape, bytes)| {
            TensorView::new(dtype, shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| Error::InvalidParameter {
                    name: name.clone(),
                    reason: format!("tensor does not match its declared shape: {e}"),
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let bytes = safetensors::tensor::serialize(views, Some(metadata)).map_err(|e| {
        Error::InvalidParameter {
            name: "model".into(),
            reason: format!("cannot serialise: {e}"),
        }
    })?;
    let bytes = sign_safetensors(&bytes)?;
    write_atomically(path, |w| w.write_all(&bytes))
}

/// The metadata key of the checksum of model and trajectory files.
const CHECKSUM_KEY: &str = "checksum";

/// The first format version of model and trajectory files in which every file carries a
/// checksum (metadata key `checksum`): a file of this version or later without one is
/// refused. Files of version 1 were written both before and after checksums were introduced;
/// one without a checksum is read without this check.
pub const CHECKSUMS_SINCE_VERSION: u32 = 2;

/// The oldest format version of model and trajectory files read.
const OLDEST_FORMAT_VERSION: u32 = 1;

/// Sets the `checksum` metadata entry of the serialised safetensors file `bytes` to the
/// checksum of the rest of its content (replacing any previous one), with the header in
/// canonical order: what [`save_rbm`] and [`save_trajectory`] write. For programs that edit
/// these files deliberately; the loaders refuse an edited file whose checksum was not
/// recomputed.
///
/// # Errors
/// [`Error::InvalidParameter`] if `bytes` is not a safetensors file whose metadata values are
/// strings.
pub fn sign_safetensors(bytes: &[u8]) -> Result<Vec<u8>> {
    let checksum = content_checksum(bytes);
    checksum
        .and_then(|c| canonical_header(bytes.to_vec(), Some(&c)))
        .map_err(|reason| Error::InvalidParameter {
            name: "safetensors file".into(),
            reason: format!("cannot compute its checksum: {reason}"),
        })
}

/// The 64-bit FNV-1a hash, fed in pieces: a cheap checksum that detects accidental
/// corruption (flipped or truncated bytes) of the files this crate writes; it is not a
/// cryptographic hash.
///
/// # Example
/// ```
/// let mut h = ebm_io::Fnv1a::new();
/// h.update(b"a");
/// assert_eq!(h.hex(), "af63dc4c8601ec8c");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(u64);

impl Fnv1a {
    /// The hash of nothing (the FNV offset basis).
    pub fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    /// Feeds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash as 16 hexadecimal digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

impl Default for Fnv1a {
    fn default() -> Self {
        Self::new()
    }
}

/// The checksum of a serialised safetensors file with a canonical header: the FNV-1a hash of
/// the canonical JSON header without its `checksum` metadata entry, then of the tensor data.
fn content_checksum(bytes: &[u8]) -> std::result::Result<String, String> {
    let malformed = || "unexpected safetensors layout".to_string();
    let len_bytes: [u8; 8] = bytes.get(..8).ok_or_else(malformed)?.try_into().unwrap();
    let n = usize::try_from(u64::from_le_bytes(len_bytes)).map_err(|_| malformed())?;
    let header = bytes
        .get(8..8usize.checked_add(n).ok_or_else(malformed)?)
        .ok_or_else(malformed)?;
    let mut entries: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| e.to_string())?;
    if let Some(meta) = entries.get_mut("__metadata__") {
        let mut map: BTreeMap<String, String> =
            serde_json::from_value(meta.take()).map_err(|e| e.to_string())?;
        map.remove(CHECKSUM_KEY);
        *meta = serde_json::to_value(map).map_err(|e| e.to_string())?;
    }
    let text = serde_json::to_string(&entries).map_err(|e| e.to_string())?;
    let mut h = Fnv1a::new();
    h.update(text.as_bytes());
    h.update(&bytes[8 + n..]);
    Ok(h.hex())
}

/// Verifies the checksum of a model or trajectory file read whole: files written by this
/// crate carry one ([`CHECKSUM_KEY`]), and every file of format version
/// [`CHECKSUMS_SINCE_VERSION`] or later must. A file of version 1 without one (written before
/// checksums were introduced) is read without this check; a file of a version this build does
/// not read is left to the metadata checks, which refuse it.
fn verify_checksum(path: &Path, header: &Metadata, bytes: &[u8]) -> Result<()> {
    let meta = header.metadata().as_ref();
    let version = meta
        .and_then(|m| m.get("format_version"))
        .and_then(|v| v.parse::<u32>().ok());
    if version.is_some_and(|v| v > RBM_FORMAT_VERSION.max(TRAJECTORY_FORMAT_VERSION)) {
        return Ok(());
    }
    let Some(expected) = meta.and_then(|m| m.get(CHECKSUM_KEY)) else {
        return match version {
            Some(v) if v >= CHECKSUMS_SINCE_VERSION => Err(format_error(
                path,
                "checksum",
                format!(
                    "the metadata has no \"{CHECKSUM_KEY}\" entry, which every file of format \
                     version {v} carries: the key was removed or misspelled (the file was \
                     edited or is corrupted)"
                ),
            )),
            _ => Ok(()),
        };
    };
    let actual = content_checksum(bytes).map_err(|e| format_error(path, "header", e))?;
    if &actual != expected {
        return Err(format_error(
            path,
            "checksum",
            format!(
                "the content does not match its checksum (recorded {expected}, computed \
                 {actual}): the file is corrupted"
            ),
        ));
    }
    Ok(())
}

/// Rewrites the JSON header of serialised safetensors `bytes` with its keys in sorted order
/// (tensor entries and the `__metadata__` map), so that the same model always gives the same
/// file, byte for byte: `safetensors` writes the metadata from a `HashMap`, whose order varies
/// from one map to the next. The data section and the offsets into it are unchanged; the
/// header is padded with spaces to a multiple of 8 bytes, as `safetensors` does.
///
/// With `checksum`, the metadata entry [`CHECKSUM_KEY`] is set to it.
fn canonical_header(
    bytes: Vec<u8>,
    checksum: Option<&str>,
) -> std::result::Result<Vec<u8>, String> {
    let malformed = || "unexpected safetensors layout".to_string();
    let len_bytes: [u8; 8] = bytes.get(..8).ok_or_else(malformed)?.try_into().unwrap();
    let n = usize::try_from(u64::from_le_bytes(len_bytes)).map_err(|_| malformed())?;
    let header = bytes.get(8..8 + n).ok_or_else(malformed)?;
    let mut entries: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| e.to_string())?;
    if checksum.is_some() {
        entries
            .entry("__metadata__".into())
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    }
    let mut sorted = BTreeMap::new();
    for (key, value) in entries {
        let value = if key == "__metadata__" {
            let mut map: BTreeMap<String, String> =
                serde_json::from_value(value).map_err(|e| e.to_string())?;
            if let Some(c) = checksum {
                map.insert(CHECKSUM_KEY.into(), c.into());
            }
            serde_json::to_value(map).map_err(|e| e.to_string())?
        } else {
            value
        };
        sorted.insert(key, value);
    }
    let mut text = serde_json::to_string(&sorted).map_err(|e| e.to_string())?;
    text.extend(std::iter::repeat_n(
        ' ',
        text.len().next_multiple_of(8) - text.len(),
    ));
    let mut out = Vec::with_capacity(8 + text.len() + bytes.len() - 8 - n);
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&bytes[8 + n..]);
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

/// The metadata of an RBM file, as read by [`read_rbm_info`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RbmFileInfo {
    /// The file format: [`RBM_FORMAT`], or [`rbms::RBMS_FORMAT`] for a model saved by the
    /// `rbms` Python package.
    pub format: String,
    /// Format version (see [`RBM_FORMAT_VERSION`]; 0 for an rbms file, which has none).
    pub format_version: u32,
    /// Kind of the visible layer ([`Layer::KIND`], e.g. `"bernoulli"`).
    pub visible: String,
    /// Kind of the hidden layer.
    pub hidden: String,
    /// Number of visible units.
    pub visible_units: usize,
    /// Number of hidden units.
    pub hidden_units: usize,
    /// The float type the file was written in: `"f32"` or `"f64"`.
    pub dtype: String,
    /// The energy convention recorded in the file (see [`CONVENTION`]).
    pub convention: String,
    /// Shape of every tensor, by name (`weights`, `visible.<name>`, `hidden.<name>`).
    pub tensors: BTreeMap<String, Vec<usize>>,
    /// Free-form entries added by the writer ([`save_rbm_with_metadata`]).
    pub extra: BTreeMap<String, String>,
}

impl RbmFileInfo {
    /// `"<visible>-<hidden>"`, e.g. `"bernoulli-spin"`.
    pub fn kinds(&self) -> String {
        format!("{}-{}", self.visible, self.hidden)
    }

    fn from_header(path: &Path, header: &Metadata) -> Result<Self> {
        Self::from_header_of(
            path,
            header,
            RBM_FORMAT,
            RBM_FORMAT_VERSION,
            &RESERVED_METADATA_KEYS,
        )
    }

    /// Parses the metadata shared by model and trajectory files: `format` must be `format`,
    /// and the keys in `reserved` are left out of [`RbmFileInfo::extra`].
    fn from_header_of(
        path: &Path,
        header: &Metadata,
        format_name: &str,
        supported_version: u32,
        reserved: &[&str],
    ) -> Result<Self> {
        let bad = |reason: String| format_error(path, "metadata", reason);
        let meta = header
            .metadata()
            .as_ref()
            .ok_or_else(|| bad("no __metadata__ section; not an ebm RBM file".into()))?;
        let get = |k: &str| {
            meta.get(k)
                .cloned()
                .ok_or_else(|| bad(format!("missing key \"{k}\"; not an ebm RBM file?")))
        };
        let format = get("format")?;
        if format != format_name {
            return Err(bad(format!(
                "format is \"{format}\", expected \"{format_name}\""
            )));
        }
        let version = get("format_version")?;
        let format_version: u32 = version
            .parse()
            .map_err(|_| bad(format!("format_version \"{version}\" is not a number")))?;
        if !(OLDEST_FORMAT_VERSION..=supported_version).contains(&format_version) {
            return Err(bad(format!(
                "format_version {format_version} is not supported (this build reads versions \
                 {OLDEST_FORMAT_VERSION} to {supported_version}{})",
                if format_version > supported_version {
                    "; the file was written by a newer ebm"
                } else {
                    ""
                }
            )));
        }
        let units = |k: &str| -> Result<usize> {
            let s = get(k)?;
            s.parse()
                .map_err(|_| bad(format!("{k} \"{s}\" is not a number of units")))
        };
        let dtype = get("dtype")?;
        let expected_dtype = match dtype.as_str() {
            "f32" => Dtype::F32,
            "f64" => Dtype::F64,
            _ => {
                return Err(bad(format!(
                    "dtype \"{dtype}\", expected \"f32\" or \"f64\""
                )));
            }
        };
        let mut tensors = BTreeMap::new();
        for (name, info) in header.tensors() {
            if info.dtype != expected_dtype {
                return Err(format_error(
                    path,
                    format!("tensor \"{name}\""),
                    format!(
                        "dtype {:?} disagrees with the file's metadata dtype \"{dtype}\"",
                        info.dtype
                    ),
                ));
            }
            tensors.insert(name, info.shape.clone());
        }
        let extra = meta
            .iter()
            .filter(|(k, _)| !reserved.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Self {
            format: format_name.to_string(),
            format_version,
            visible: get("visible")?,
            hidden: get("hidden")?,
            visible_units: units("visible_units")?,
            hidden_units: units("hidden_units")?,
            dtype,
            convention: meta.get("convention").cloned().unwrap_or_default(),
            tensors,
            extra,
        })
    }
}

/// Checks the 8-byte header-length prefix against the file length; returns the JSON header's
/// length.
fn header_len(path: &Path, prefix: &[u8], file_len: u64) -> Result<usize> {
    if let Some(kind) = foreign_format(prefix) {
        return Err(format_error(
            path,
            "byte 0",
            format!(
                "this is {kind}, not an ebm model file: ebm reads the safetensors files that \
                 `ebm train` and the ebm libraries write (RBM, trajectory and stack files)"
            ),
        ));
    }
    let Some(prefix) = prefix.get(..PREFIX) else {
        return Err(format_error(
            path,
            "byte 0",
            format!(
                "not a valid safetensors file: the file is {file_len} bytes, shorter than the \
                 {PREFIX}-byte header length"
            ),
        ));
    };
    let mut le = [0u8; PREFIX];
    le.copy_from_slice(prefix);
    let n = u64::from_le_bytes(le);
    if n > MAX_HEADER {
        return Err(format_error(
            path,
            "byte 0 (header length)",
            format!(
                "not a valid safetensors file: header length {n} exceeds the limit of \
                 {MAX_HEADER} bytes"
            ),
        ));
    }
    if n > file_len.saturating_sub(PREFIX as u64) {
        return Err(format_error(
            path,
            "byte 0 (header length)",
            format!(
                "not a valid safetensors file: header length {n} runs past the end of the \
                 {file_len}-byte file (truncated?)"
            ),
        ));
    }
    // n <= MAX_HEADER fits in usize on every supported target.
    Ok(n as usize)
}

/// The kind of a file that is certainly not a safetensors file, recognised by its first
/// bytes (`prefix`, at least 8 for HDF5): an HDF5 file (e.g. a model saved by the `rbms`
/// Python package or Keras), a NumPy array, a zip archive (a PyTorch `.pt` checkpoint) or a
/// Python pickle; `None` otherwise.
pub fn foreign_format(prefix: &[u8]) -> Option<&'static str> {
    const KINDS: [(&[u8], &str); 4] = [
        (
            b"\x89HDF\r\n\x1a\n",
            "an HDF5 file (e.g. a model saved by the `rbms` Python package)",
        ),
        (b"\x93NUMPY", "a NumPy .npy array"),
        (
            b"PK\x03\x04",
            "a zip archive (e.g. a PyTorch .pt checkpoint)",
        ),
        (b"\x80\x04\x95", "a Python pickle"),
    ];
    KINDS
        .iter()
        .find(|(magic, _)| prefix.starts_with(magic))
        .map(|&(_, kind)| kind)
}

/// Byte offset of serde_json's (line, column) position in `json`.
fn json_offset(json: &[u8], line: usize, column: usize) -> usize {
    let mut offset = 0;
    for _ in 1..line {
        match json[offset..].iter().position(|&b| b == b'\n') {
            Some(p) => offset += p + 1,
            None => break,
        }
    }
    (offset + column.saturating_sub(1)).min(json.len())
}

/// Parses the JSON header (which starts at byte 8) and checks that the data section it
/// describes is exactly the rest of the file.
fn parse_header(path: &Path, json: &[u8], file_len: u64) -> Result<Metadata> {
    let text = std::str::from_utf8(json).map_err(|e| {
        format_error(
            path,
            format!("byte {}", PREFIX + e.valid_up_to()),
            "not a valid safetensors file: header is not UTF-8",
        )
    })?;
    // Deserialising `Metadata` also checks that tensor offsets are contiguous and match
    // shapes and dtypes, with overflow checks.
    let header: Metadata = serde_json::from_str(text).map_err(|e| {
        format_error(
            path,
            format!("byte {}", PREFIX + json_offset(json, e.line(), e.column())),
            format!("not a valid safetensors file: bad JSON header: {e}"),
        )
    })?;
    let data_start = (PREFIX + json.len()) as u64;
    let declared = header.data_len() as u64;
    let actual = file_len.saturating_sub(data_start);
    if declared != actual {
        return Err(format_error(
            path,
            format!("byte {data_start} (tensor data)"),
            format!(
                "not a valid safetensors file: the header declares {declared} bytes of tensor \
                 data, the file has {actual}{}",
                if declared > actual {
                    " (truncated?)"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(header)
}

/// Opens the safetensors file `path` (a regular file, [`ebm_core::input::open_regular`]) and
/// reads its header: the 8-byte length, then at most [`MAX_HEADER`] bytes of JSON, whose
/// tensor-data length is checked against the file length ([`parse_header`]). Returns the
/// file, positioned after the header, the bytes read (length and JSON) and the parsed header.
fn open_header(path: &Path) -> Result<(std::fs::File, Vec<u8>, Metadata)> {
    let io = io_error(path);
    let mut file = ebm_core::input::open_regular(path).map_err(&io)?;
    let file_len = file.metadata().map_err(&io)?.len();
    let mut head = Vec::with_capacity(PREFIX);
    (&mut file)
        .take(PREFIX as u64)
        .read_to_end(&mut head)
        .map_err(&io)?;
    let n = header_len(path, &head, file_len)?;
    head.resize(PREFIX + n, 0);
    file.read_exact(&mut head[PREFIX..]).map_err(&io)?;
    let header = parse_header(path, &head[PREFIX..], file_len)?;
    Ok((file, head, header))
}

/// Reads and parses the header of the safetensors file `path` without its tensor data
/// ([`open_header`]).
fn read_header(path: &Path) -> Result<Metadata> {
    open_header(path).map(|(_, _, header)| header)
}

/// Reads the metadata of an RBM file without reading its tensor data: only the header
/// (a few hundred bytes) is read, and the file length is checked against it.
///
/// Use it to dispatch on [`RbmFileInfo::visible`] and [`RbmFileInfo::hidden`] before calling
/// [`load_rbm`] with the matching layer types.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read or is not a regular file (a FIFO, a device, a
/// directory); [`Error::Format`] if it is not an ebm RBM file of a supported version.
pub fn read_rbm_info(path: &Path) -> Result<RbmFileInfo> {
    if rbms::is_hdf5(path) {
        return rbms::read_info(path);
    }
    RbmFileInfo::from_header(path, &read_header(path)?)
}

/// Reads the whole model or trajectory file `path`: its header first ([`open_header`], which
/// checks the file length against the tensor-data length the header declares), then exactly
/// the declared tensor data ([`ebm_core::input::read_rest`]: a file that yields more or
/// fewer bytes is refused), the whole being at most [`ebm_core::input::MAX_BINARY_BYTES`].
/// Returns the parsed header and the file's bytes.
fn read_file(path: &Path) -> Result<(Metadata, Vec<u8>)> {
    let (file, head, header) = open_header(path)?;
    let total = head.len() as u64 + header.data_len() as u64;
    let bytes = ebm_core::input::read_rest(file, head, total, ebm_core::input::MAX_BINARY_BYTES)
        .map_err(io_error(path))?;
    Ok((header, bytes))
}

/// A fully read and validated safetensors file.
struct Container<'a> {
    header: Metadata,
    data: &'a [u8],
}

/// Checks the checksum of the file `bytes` whose parsed header is `header` ([`read_file`]).
fn parse_container<'a>(path: &Path, header: Metadata, bytes: &'a [u8]) -> Result<Container<'a>> {
    verify_checksum(path, &header, bytes)?;
    Ok(Container {
        data: &bytes[bytes.len() - header.data_len()..],
        header,
    })
}

/// Decodes tensor `name` to `F` (from either float dtype), checking finiteness before and
/// after conversion. `Ok(None)` if the file has no such tensor.
fn decode<F: Scalar>(
    path: &Path,
    c: &Container<'_>,
    name: &str,
) -> Result<Option<(Vec<usize>, Vec<F>)>> {
    let Some(info) = c.header.info(name) else {
        return Ok(None);
    };
    let bad = |reason: String| format_error(path, format!("tensor \"{name}\""), reason);
    let (start, end) = info.data_offsets;
    let data = c.data.get(start..end).ok_or_else(|| {
        bad(format!(
            "data offsets [{start}, {end}) out of the data section"
        ))
    })?;
    let shape = info.shape.clone();
    let n = shape.iter().try_fold(1usize, |a, &b| a.checked_mul(b));
    let values: Vec<f64> = match (info.dtype, n) {
        (Dtype::F32, Some(n)) if Some(data.len()) == n.checked_mul(4) => data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect(),
        (Dtype::F64, Some(n)) if Some(data.len()) == n.checked_mul(8) => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
        (Dtype::F32 | Dtype::F64, _) => {
            return Err(bad(format!("{} bytes for shape {shape:?}", data.len())));
        }
        (other, _) => return Err(bad(format!("dtype {other:?}, expected F32 or F64"))),
    };
    let what = format!(
        "tensor \"{name}\" (row-major, shape {shape:?}) of {}",
        path.display()
    );
    Ok(Some((shape, to_scalar(&values, &what)?)))
}

/// Converts values read from a file to `F`, checking finiteness before and after conversion;
/// `what` names the tensor in the errors.
fn to_scalar<F: Scalar>(values: &[f64], what: &str) -> Result<Vec<F>> {
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::NonFinite {
            what: what.to_string(),
            index,
            value: values[index],
        });
    }
    let converted: Vec<F> = values.iter().map(|&v| F::from_f64(v)).collect();
    if let Some(index) = converted.iter().position(|v| !v.is_finite()) {
        return Err(Error::InvalidParameter {
            name: what.to_string(),
            reason: format!(
                "value {} at index {index} overflows {}",
                values[index],
                F::NAME
            ),
        });
    }
    Ok(converted)
}

/// Loads an RBM with visible layer `V` and hidden layer `H` from `path`.
///
/// The file must be a regular file holding an `ebm-rbm` file of version 1 or
/// [`RBM_FORMAT_VERSION`] (whose checksum is verified, and required from
/// [`CHECKSUMS_SINCE_VERSION`] on) whose unit kinds are
/// exactly `V::KIND` and `H::KIND` (use [`read_rbm_info`] to find them first). A file written
/// with the other float type is converted: `f32` to `f64` exactly, `f64` to `f32` by rounding
/// to nearest. Every tensor the layers expect must be present with the right shape, and no
/// other tensor may be.
///
/// # Errors
/// - [`Error::Io`]: the file cannot be read, is not a regular file, is larger than
///   [`ebm_core::input::MAX_BINARY_BYTES`], or yields more or fewer bytes than its header
///   declares (it changed while read);
/// - [`Error::Format`]: not safetensors, truncated or longer than its header declares (with
///   the byte offset; the header is read first, and such a file is refused before its tensor
///   data is read), a checksum that does not match or is missing (location `checksum`), not
///   an ebm RBM file, unsupported version, other unit kinds than `V` and `H` (naming both), a
///   missing, unexpected or misshapen tensor (naming it), or parameters a layer rejects;
/// - [`Error::NonFinite`]: a NaN or infinite parameter, naming the tensor and flat row-major
///   index;
/// - [`Error::InvalidParameter`]: an `f64` value too large for the requested `f32`.
pub fn load_rbm<V: Layer, H: Layer<Scalar = V::Scalar>>(path: &Path) -> Result<Rbm<V, H>> {
    if rbms::is_hdf5(path) {
        return rbms::load_last(path);
    }
    let (header, bytes) = read_file(path)?;
    let container = parse_container(path, header, &bytes)?;
    let info = RbmFileInfo::from_header(path, &container.header)?;
    if info.visible != V::KIND || info.hidden != H::KIND {
        return Err(format_error(
            path,
            "metadata",
            format!(
                "file holds a {} RBM, requested {}-{}",
                info.kinds(),
                V::KIND,
                H::KIND
            ),
        ));
    }
    let names: Vec<&String> = info.tensors.keys().collect();
    decode_model(path, &container, &info, "", &names)
}

/// Decodes the model whose tensors are named `<prefix>weights`, `<prefix>visible.*` and
/// `<prefix>hidden.*`; `names` are the file's tensors belonging to this model (any other name
/// with the prefix is an error).
fn decode_model<V: Layer, H: Layer<Scalar = V::Scalar>>(
    path: &Path,
    container: &Container<'_>,
    info: &RbmFileInfo,
    prefix: &str,
    names: &[&String],
) -> Result<Rbm<V, H>> {
    let missing = |name: &str| format_error(path, format!("tensor \"{name}\""), "missing");
    let (visible_prefix, hidden_prefix) = (format!("{prefix}visible."), format!("{prefix}hidden."));

    // Decode every layer tensor up front so that errors carry the file and tensor names.
    let mut layer_tensors: HashMap<String, (Vec<usize>, Vec<V::Scalar>)> = HashMap::new();
    for &name in names {
        if name.starts_with(&visible_prefix) || name.starts_with(&hidden_prefix) {
            let t = decode::<V::Scalar>(path, container, name)?.ok_or_else(|| missing(name))?;
            layer_tensors.insert(name.clone(), t);
        }
    }
    let in_file = |side: &str, e: Error| match e {
        Error::ShapeMismatch {
            what,
            expected,
            got,
        } => format_error(
            path,
            format!("{side} ({what})"),
            format!("expected {expected}, got {got}"),
        ),
        Error::InvalidParameter { name, reason } => {
            format_error(path, format!("{side} ({name})"), reason)
        }
        other => other,
    };
    let lookup = |side: &str| {
        let t = &layer_tensors;
        let side = side.to_string();
        move |name: &str| t.get(&format!("{side}{name}")).cloned()
    };
    let visible = V::from_tensors(info.visible_units, &lookup(&visible_prefix))
        .map_err(|e| in_file(&format!("{prefix}visible layer"), e))?;
    let hidden = H::from_tensors(info.hidden_units, &lookup(&hidden_prefix))
        .map_err(|e| in_file(&format!("{prefix}hidden layer"), e))?;
    for (side, layer_units, declared) in [
        ("visible", visible.n_units(), info.visible_units),
        ("hidden", hidden.n_units(), info.hidden_units),
    ] {
        if layer_units != declared {
            return Err(format_error(
                path,
                format!("{prefix}{side} layer"),
                format!("{layer_units} units in the tensors, {declared} in the metadata"),
            ));
        }
    }

    // Every tensor of the file must be one the model consumes.
    let mut expected: Vec<String> = vec![format!("{prefix}weights")];
    expected.extend(
        visible
            .tensors()
            .into_iter()
            .map(|t| format!("{visible_prefix}{}", t.0)),
    );
    expected.extend(
        hidden
            .tensors()
            .into_iter()
            .map(|t| format!("{hidden_prefix}{}", t.0)),
    );
    if let Some(name) = names.iter().find(|n| !expected.contains(n)) {
        return Err(format_error(
            path,
            format!("tensor \"{name}\""),
            format!(
                "unexpected in a {} RBM file, whose tensors are {expected:?}",
                info.kinds()
            ),
        ));
    }

    let weights_name = format!("{prefix}weights");
    let (shape, w) = decode::<V::Scalar>(path, container, &weights_name)?
        .ok_or_else(|| missing(&weights_name))?;
    let expected_shape = [visible.width(), hidden.width()];
    if shape != expected_shape {
        return Err(format_error(
            path,
            format!("tensor \"{weights_name}\""),
            format!("shape {shape:?}, expected {expected_shape:?} (visible width x hidden width)"),
        ));
    }
    let weights = DMatrix::from_row_slice(expected_shape[0], expected_shape[1], &w);
    Rbm::new(visible, hidden, weights).map_err(|e| in_file(&format!("{prefix}model"), e))
}

// ---------------------------------------------------------------------------------------------
// Trajectories: a sequence of checkpoints of one training run in one file
// ---------------------------------------------------------------------------------------------

/// The value of the `format` metadata key of trajectory files.
pub const TRAJECTORY_FORMAT: &str = "ebm-trajectory";
/// The version of the trajectory file format written by this crate (the newest it reads; it
/// reads version 1 too). Version 2 is version 1 with the checksum required
/// ([`CHECKSUMS_SINCE_VERSION`]).
pub const TRAJECTORY_FORMAT_VERSION: u32 = 2;

/// Metadata keys written by the trajectory format itself, which
/// [`save_trajectory_with_metadata`] refuses as free-form entries.
pub const RESERVED_TRAJECTORY_KEYS: [&str; 11] = [
    "checksum",
    "format",
    "format_version",
    "visible",
    "hidden",
    "visible_units",
    "hidden_units",
    "dtype",
    "convention",
    "checkpoints",
    "updates",
];

/// The checkpoints of a training run: models of one shape, each with the training update
/// (number of parameter updates done) at which it was saved, in strictly increasing order of
/// update. Rung 0 of a parallel trajectory tempering ladder is the first checkpoint
/// (`ebm_samplers::tempering::TrajectoryLadder::new(trajectory.into_models())`), the target the
/// last (Béreux et al., *Fast training and sampling of RBMs*).
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory<V: Layer, H: Layer<Scalar = V::Scalar>> {
    updates: Vec<u64>,
    models: Vec<Rbm<V, H>>,
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> Default for Trajectory<V, H> {
    fn default() -> Self {
        Self {
            updates: Vec::new(),
            models: Vec::new(),
        }
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> Trajectory<V, H> {
    /// An empty trajectory.
    pub fn new() -> Self {
        Self::default()
    }

    /// A trajectory from `(update, model)` pairs.
    ///
    /// # Errors
    /// As [`Trajectory::push`] for each pair in turn.
    pub fn from_checkpoints(
        checkpoints: impl IntoIterator<Item = (u64, Rbm<V, H>)>,
    ) -> Result<Self> {
        let mut t = Self::new();
        for (update, model) in checkpoints {
            t.push(update, model)?;
        }
        Ok(t)
    }

    /// Appends the model saved at training update `update`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `update` is larger than the last checkpoint's;
    /// [`Error::ShapeMismatch`] if the model's weights differ in shape from the first
    /// checkpoint's.
    pub fn push(&mut self, update: u64, model: Rbm<V, H>) -> Result<()> {
        if let Some(&last) = self.updates.last()
            && update <= last
        {
            return Err(Error::InvalidParameter {
                name: "update".into(),
                reason: format!(
                    "checkpoints must have strictly increasing updates: {update} after {last}"
                ),
            });
        }
        if let Some(first) = self.models.first()
            && first.weights().shape() != model.weights().shape()
        {
            let (a, b) = (first.weights().shape(), model.weights().shape());
            return Err(Error::ShapeMismatch {
                what: format!("trajectory checkpoint {}", self.models.len()),
                expected: format!("{}x{}", a.0, a.1),
                got: format!("{}x{}", b.0, b.1),
            });
        }
        self.updates.push(update);
        self.models.push(model);
        Ok(())
    }

    /// Number of checkpoints.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// `true` without checkpoints.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The training update of every checkpoint, increasing.
    pub fn updates(&self) -> &[u64] {
        &self.updates
    }

    /// The models, in training order.
    pub fn models(&self) -> &[Rbm<V, H>] {
        &self.models
    }

    /// The models, in training order (e.g. for a trajectory ladder).
    pub fn into_models(self) -> Vec<Rbm<V, H>> {
        self.models
    }
}

/// The metadata of a trajectory file, as read by [`read_trajectory_info`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct TrajectoryFileInfo {
    /// The file format: [`TRAJECTORY_FORMAT`], or [`rbms::RBMS_FORMAT`] for the checkpoints
    /// of a model saved by the `rbms` Python package.
    pub format: String,
    /// Format version (see [`TRAJECTORY_FORMAT_VERSION`]; 0 for an rbms file).
    pub format_version: u32,
    /// Kind of the visible layer of every checkpoint.
    pub visible: String,
    /// Kind of the hidden layer.
    pub hidden: String,
    /// Number of visible units.
    pub visible_units: usize,
    /// Number of hidden units.
    pub hidden_units: usize,
    /// The float type the file was written in: `"f32"` or `"f64"`.
    pub dtype: String,
    /// The energy convention recorded in the file (see [`CONVENTION`]).
    pub convention: String,
    /// The training update of every checkpoint, in file order.
    pub updates: Vec<u64>,
    /// Shape of every tensor, by name (`checkpoint.<k>.weights`, ...).
    pub tensors: BTreeMap<String, Vec<usize>>,
    /// Free-form entries added by the writer ([`save_trajectory_with_metadata`]).
    pub extra: BTreeMap<String, String>,
}

impl TrajectoryFileInfo {
    fn from_header(path: &Path, header: &Metadata) -> Result<(Self, RbmFileInfo)> {
        let info = RbmFileInfo::from_header_of(
            path,
            header,
            TRAJECTORY_FORMAT,
            TRAJECTORY_FORMAT_VERSION,
            &RESERVED_TRAJECTORY_KEYS,
        )?;
        let bad = |reason: String| format_error(path, "metadata", reason);
        let meta = header
            .metadata()
            .as_ref()
            .expect("checked by from_header_of");
        let get = |k: &str| {
            meta.get(k)
                .ok_or_else(|| bad(format!("missing key \"{k}\"; not an ebm trajectory file?")))
        };
        let count = get("checkpoints")?;
        let count: usize = count
            .parse()
            .map_err(|_| bad(format!("checkpoints \"{count}\" is not a number")))?;
        let list = get("updates")?;
        let updates = if list.is_empty() {
            Vec::new()
        } else {
            list.split(',')
                .map(|u| {
                    u.trim()
                        .parse::<u64>()
                        .map_err(|_| bad(format!("updates entry \"{u}\" is not an update number")))
                })
                .collect::<Result<Vec<u64>>>()?
        };
        if updates.len() != count {
            return Err(bad(format!(
                "{} updates listed for {count} checkpoints",
                updates.len()
            )));
        }
        if let Some(k) = updates.windows(2).position(|w| w[0] >= w[1]) {
            return Err(bad(format!(
                "updates must increase strictly: {} then {}",
                updates[k],
                updates[k + 1]
            )));
        }
        let out = Self {
            format: info.format.clone(),
            format_version: info.format_version,
            visible: info.visible.clone(),
            hidden: info.hidden.clone(),
            visible_units: info.visible_units,
            hidden_units: info.hidden_units,
            dtype: info.dtype.clone(),
            convention: info.convention.clone(),
            updates,
            tensors: info.tensors.clone(),
            extra: info.extra.clone(),
        };
        Ok((out, info))
    }
}

/// Saves a training trajectory as one safetensors file, atomically: the tensors of checkpoint
/// `k` are those of a model file ([crate docs](crate)) prefixed by `checkpoint.<k>.`
/// (`checkpoint.0.weights`, `checkpoint.0.visible.bias`, ...), and the metadata holds
/// `format` = [`TRAJECTORY_FORMAT`], `format_version`, the unit kinds and numbers, `dtype`,
/// `convention`, `checkpoints` (their number) and `updates` (the training update of each
/// checkpoint, comma-separated).
///
/// # Errors
/// [`Error::Io`] if the file cannot be written (a previous file is then untouched).
pub fn save_trajectory<V: Layer, H: Layer<Scalar = V::Scalar>>(
    trajectory: &Trajectory<V, H>,
    path: &Path,
) -> Result<()> {
    save_trajectory_with_metadata(trajectory, path, &BTreeMap::new())
}

/// Saves like [`save_trajectory`], adding the free-form `extra` entries to the metadata.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written; [`Error::InvalidParameter`] if `extra` uses a
/// reserved key ([`RESERVED_TRAJECTORY_KEYS`]; nothing is written then).
pub fn save_trajectory_with_metadata<V: Layer, H: Layer<Scalar = V::Scalar>>(
    trajectory: &Trajectory<V, H>,
    path: &Path,
    extra: &BTreeMap<String, String>,
) -> Result<()> {
    check_extra_keys(extra, &RESERVED_TRAJECTORY_KEYS, TRAJECTORY_FORMAT)?;
    let mut metadata: HashMap<String, String> =
        extra.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let (visible_units, hidden_units) = trajectory
        .models
        .first()
        .map_or((0, 0), |m| (m.visible().n_units(), m.hidden().n_units()));
    let updates: Vec<String> = trajectory.updates.iter().map(u64::to_string).collect();
    for (k, v) in [
        ("format", TRAJECTORY_FORMAT.to_string()),
        ("format_version", TRAJECTORY_FORMAT_VERSION.to_string()),
        ("visible", V::KIND.to_string()),
        ("hidden", H::KIND.to_string()),
        ("visible_units", visible_units.to_string()),
        ("hidden_units", hidden_units.to_string()),
        ("dtype", V::Scalar::NAME.to_string()),
        ("convention", CONVENTION.to_string()),
        ("checkpoints", trajectory.len().to_string()),
        ("updates", updates.join(",")),
    ] {
        metadata.insert(k.to_string(), v);
    }
    let owned: Vec<_> = trajectory
        .models
        .iter()
        .enumerate()
        .flat_map(|(k, m)| model_tensors(m, &format!("checkpoint.{k}.")))
        .collect();
    write_tensors::<V::Scalar>(path, &owned, metadata)
}

/// Reads the metadata of a trajectory file (header only, like [`read_rbm_info`]).
///
/// # Errors
/// [`Error::Io`] if the file cannot be read or is not a regular file; [`Error::Format`] if it
/// is not an ebm trajectory file of a supported version.
pub fn read_trajectory_info(path: &Path) -> Result<TrajectoryFileInfo> {
    if rbms::is_hdf5(path) {
        return rbms::read_trajectory_info(path);
    }
    TrajectoryFileInfo::from_header(path, &read_header(path)?).map(|(info, _)| info)
}

/// Loads a trajectory of `Rbm<V, H>` checkpoints written by [`save_trajectory`], validating
/// every checkpoint like [`load_rbm`] validates a model file (unit kinds, tensor names and
/// shapes, finite values, float-type conversion), plus the checkpoint count and the increasing
/// updates.
///
/// # Errors
/// As [`load_rbm`]; [`Error::Format`] also for a tensor that belongs to no checkpoint, or a
/// metadata `updates` list that does not match `checkpoints` or does not increase.
pub fn load_trajectory<V: Layer, H: Layer<Scalar = V::Scalar>>(
    path: &Path,
) -> Result<Trajectory<V, H>> {
    if rbms::is_hdf5(path) {
        return rbms::load_trajectory(path);
    }
    let (header, bytes) = read_file(path)?;
    let container = parse_container(path, header, &bytes)?;
    let (info, model_info) = TrajectoryFileInfo::from_header(path, &container.header)?;
    if info.visible != V::KIND || info.hidden != H::KIND {
        return Err(format_error(
            path,
            "metadata",
            format!(
                "file holds a trajectory of {}-{} RBMs, requested {}-{}",
                info.visible,
                info.hidden,
                V::KIND,
                H::KIND
            ),
        ));
    }
    let n = info.updates.len();
    let owner = |name: &str| -> Option<usize> {
        let rest = name.strip_prefix("checkpoint.")?;
        let (k, _) = rest.split_once('.')?;
        k.parse::<usize>()
            .ok()
            .filter(|&k| k < n && rest.starts_with(&format!("{k}.")))
    };
    if let Some(name) = info.tensors.keys().find(|name| owner(name).is_none()) {
        return Err(format_error(
            path,
            format!("tensor \"{name}\""),
            format!("belongs to none of the {n} checkpoints (expected checkpoint.<k>.<name>)"),
        ));
    }
    let mut trajectory = Trajectory::new();
    for (k, &update) in info.updates.iter().enumerate() {
        let names: Vec<&String> = info
            .tensors
            .keys()
            .filter(|name| owner(name) == Some(k))
            .collect();
        let model = decode_model(
            path,
            &container,
            &model_info,
            &format!("checkpoint.{k}."),
            &names,
        )?;
        trajectory
            .push(update, model)
            .map_err(|e| format_error(path, format!("checkpoint {k}"), e.to_string()))?;
    }
    Ok(trajectory)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_offsets_follow_lines_and_columns() {
        let json = b"{\n  \"a\": x\n}";
        assert_eq!(json_offset(json, 1, 1), 0);
        assert_eq!(json_offset(json, 2, 8), 9);
        assert_eq!(json[9], b'x');
        // Out-of-range positions are clamped, never a panic.
        assert_eq!(json_offset(json, 9, 99), json.len());
    }

    #[test]
    fn header_length_is_checked_before_anything_is_allocated() {
        let p = Path::new("x.safetensors");
        assert!(header_len(p, &[1, 2, 3], 3).is_err());
        // A foreign file is named, not read as a header length.
        let e = header_len(p, b"\x89HDF\r\n\x1a\n", 4096).unwrap_err();
        assert!(e.to_string().contains("an HDF5 file"), "{e}");
        assert!(foreign_format(b"\x93NUMPY\x01\x00").is_some());
        assert!(foreign_format(&1000u64.to_le_bytes()).is_none());
        let mut bytes = 1000u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"{}");
        let e = header_len(p, &bytes, bytes.len() as u64).unwrap_err();
        assert!(e.to_string().contains("runs past the end"), "{e}");
        let e = header_len(p, &u64::MAX.to_le_bytes(), 8).unwrap_err();
        assert!(e.to_string().contains("exceeds the limit"), "{e}");
        assert_eq!(header_len(p, &bytes[..8], 1008).unwrap(), 1000);
    }

    #[test]
    fn model_and_trajectory_files_are_refused_by_their_header_before_the_data_is_read() {
        use ebm_core::input::MAX_BINARY_BYTES;
        use ebm_models::{Bernoulli, BinaryLayer};
        type B = Bernoulli<f64>;
        let dir = tempfile::tempdir().unwrap();
        let (m, t) = (dir.path().join("m"), dir.path().join("t"));
        let rbm = Rbm::<B, B>::new(
            B::with_fields(vec![0.1, -0.2]),
            B::with_fields(vec![0.3]),
            DMatrix::from_element(2, 1, 0.5),
        )
        .unwrap();
        let mut trajectory = Trajectory::new();
        trajectory.push(0, rbm.clone()).unwrap();
        trajectory.push(5, rbm.clone()).unwrap();
        save_rbm(&rbm, &m).unwrap();
        save_trajectory(&trajectory, &t).unwrap();
        assert!(load_rbm::<B, B>(&m).is_ok());
        assert!(load_trajectory::<B, B>(&t).is_ok());
        let declared = |p: &Path| {
            let data = read_header(p).unwrap().data_len() as u64;
            (data, std::fs::metadata(p).unwrap().len() - data)
        };
        let (m_data, m_start) = declared(&m);
        let (t_data, t_start) = declared(&t);
        assert_eq!(m_data, 40);
        // Extended (sparsely) beyond MAX_BINARY_BYTES (a whole-file read refuses it by its size
        // alone, with another message), then to 8 GiB: the header's length counts.
        for len in [MAX_BINARY_BYTES + (1 << 30), 8 << 30] {
            for (p, data, start) in [(&m, m_data, m_start), (&t, t_data, t_start)] {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .and_then(|f| f.set_len(len))
                    .unwrap();
                let e = if p == &m {
                    load_rbm::<B, B>(p).map(drop)
                } else {
                    load_trajectory::<B, B>(p).map(drop)
                }
                .unwrap_err();
                assert!(matches!(e, Error::Format { .. }), "{e}");
                let want = format!(
                    "byte {start} (tensor data): not a valid safetensors file: the header \
                     declares {data} bytes of tensor data, the file has {}",
                    len - start
                );
                assert!(e.to_string().ends_with(&want), "{e}");
            }
        }
    }
}

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
//!   requested, missing tensors, wrong shapes and non-finite values are typed errors naming the
//!   file and the tensor or byte offset.
//! - [`read_rbm_info`] reads the metadata alone, so a program can dispatch on the unit types.
//!
//! Tensors are stored in row-major order: `weights` has shape `[visible width, hidden width]`
//! with element `(i, j)` = \\(W_{ij}\\); layer tensors are named `visible.<name>` and
//! `hidden.<name>` after [`ebm_models::Layer::tensors`]. Files written in `f32` load as `f64`
//! models and vice versa (an explicit, documented conversion).
//!
//! # Example
//! ```
//! use ebm_io::{load_rbm, save_rbm};
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
//! let back: Rbm<Bernoulli, Spin> = load_rbm(&path)?;
//! assert_eq!(back, rbm);
//! // Asking for other unit types is a clear error, not a silent reinterpretation.
//! assert!(load_rbm::<Spin, Spin>(&path).is_err());
//! # Ok::<(), ebm_core::Error>(())
//! ```

use ebm_core::{Error, Result, Scalar};
use ebm_models::{Layer, Rbm};
use nalgebra::DMatrix;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The value of the `format` metadata key of RBM files.
pub const RBM_FORMAT: &str = "ebm-rbm";
/// The version of the RBM file format written by this crate (and the only one it reads).
pub const RBM_FORMAT_VERSION: u32 = 1;
/// The energy convention recorded in every file.
pub const CONVENTION: &str = "E(v,h) = U_V(v) + U_H(h) - v^T W h; bernoulli units in {0,1}, spin units in {-1,+1}, \
potts units one-hot; weights[i][j] = W_ij, row-major";

/// Writes a file atomically: `write` fills a temporary file created in `path`'s directory,
/// which is flushed to disk and then renamed to `path`. If `write` or any step fails, `path`
/// keeps its previous content (or stays absent) and the temporary file is removed.
///
/// # Errors
/// [`Error::Io`] naming `path` for any failure, including the one `write` returns.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".ebm-tmp-")
        .tempfile_in(&dir)
        .map_err(io)?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(io)?;
        w.flush().map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Saves `rbm` to `path` (safetensors with metadata), atomically.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written.
pub fn save_rbm<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    path: &Path,
) -> Result<()> {
    save_rbm_with_metadata(rbm, path, &BTreeMap::new())
}

fn dtype_of<F: Scalar>() -> Dtype {
    if F::NAME == "f32" {
        Dtype::F32
    } else {
        Dtype::F64
    }
}

fn to_le_bytes<F: Scalar>(values: &[F]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(values));
    for v in values {
        if F::NAME == "f32" {
            out.extend_from_slice(&(v.as_f64() as f32).to_le_bytes());
        } else {
            out.extend_from_slice(&v.as_f64().to_le_bytes());
        }
    }
    out
}

/// Saves `rbm` like [`save_rbm`], adding the free-form `extra` entries to the metadata
/// (e.g. a description, the training step). Keys of the format itself (`format`,
/// `format_version`, `visible`, `hidden`, `visible_units`, `hidden_units`, `dtype`,
/// `convention`) cannot be overridden.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written; [`Error::InvalidParameter`] if `extra` uses a
/// reserved key.
pub fn save_rbm_with_metadata<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    path: &Path,
    extra: &BTreeMap<String, String>,
) -> Result<()> {
    let info = RbmFileInfo {
        format_version: RBM_FORMAT_VERSION,
        visible: V::KIND.to_string(),
        hidden: H::KIND.to_string(),
        visible_units: rbm.visible().n_units(),
        hidden_units: rbm.hidden().n_units(),
        dtype: V::Scalar::NAME.to_string(),
        extra: extra.clone(),
    };
    let metadata = info.to_metadata()?;
    let (nv, nh) = rbm.weights().shape();
    let weights: Vec<V::Scalar> = rbm.weights().transpose().as_slice().to_vec(); // row-major
    let mut owned: Vec<(String, Vec<usize>, Vec<u8>)> =
        vec![("weights".into(), vec![nv, nh], to_le_bytes(&weights))];
    for (name, shape, values) in rbm.visible().tensors() {
        owned.push((format!("visible.{name}"), shape, to_le_bytes(&values)));
    }
    for (name, shape, values) in rbm.hidden().tensors() {
        owned.push((format!("hidden.{name}"), shape, to_le_bytes(&values)));
    }
    let dtype = dtype_of::<V::Scalar>();
    let views = owned
        .iter()
        .map(|(name, shape, bytes)| {
            TensorView::new(dtype, shape.clone(), bytes)
                .map(|v| (name.clone(), v))
                .map_err(|e| Error::InvalidParameter {
                    name: name.clone(),
                    reason: format!("cannot describe tensor: {e}"),
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let bytes = safetensors::tensor::serialize(views, Some(metadata)).map_err(|e| {
        Error::InvalidParameter {
            name: "model".into(),
            reason: format!("cannot serialise: {e}"),
        }
    })?;
    write_atomically(path, |w| w.write_all(&bytes))
}

/// The metadata of an RBM file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RbmFileInfo {
    /// Format version (see [`RBM_FORMAT_VERSION`]).
    pub format_version: u32,
    /// Kind of the visible layer ([`Layer::KIND`], e.g. `"bernoulli"`).
    pub visible: String,
    /// Kind of the hidden layer.
    pub hidden: String,
    /// Number of visible units.
    pub visible_units: usize,
    /// Number of hidden units.
    pub hidden_units: usize,
    /// `"f32"` or `"f64"`.
    pub dtype: String,
    /// Free-form entries added by the writer.
    pub extra: BTreeMap<String, String>,
}

const RESERVED: [&str; 8] = [
    "format",
    "format_version",
    "visible",
    "hidden",
    "visible_units",
    "hidden_units",
    "dtype",
    "convention",
];

impl RbmFileInfo {
    fn to_metadata(&self) -> Result<HashMap<String, String>> {
        if let Some(k) = self.extra.keys().find(|k| RESERVED.contains(&k.as_str())) {
            return Err(Error::InvalidParameter {
                name: k.clone(),
                reason: "reserved metadata key of the ebm-rbm format".into(),
            });
        }
        let mut m: HashMap<String, String> = self
            .extra
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        m.insert("format".into(), RBM_FORMAT.into());
        m.insert("format_version".into(), self.format_version.to_string());
        m.insert("visible".into(), self.visible.clone());
        m.insert("hidden".into(), self.hidden.clone());
        m.insert("visible_units".into(), self.visible_units.to_string());
        m.insert("hidden_units".into(), self.hidden_units.to_string());
        m.insert("dtype".into(), self.dtype.clone());
        m.insert("convention".into(), CONVENTION.into());
        Ok(m)
    }

    fn from_metadata(path: &Path, meta: &Option<HashMap<String, String>>) -> Result<Self> {
        let bad = |reason: String| Error::Format {
            path: path.to_path_buf(),
            location: "metadata".into(),
            reason,
        };
        let meta = meta
            .as_ref()
            .ok_or_else(|| bad("no __metadata__ section; not an ebm RBM file".into()))?;
        let get = |k: &str| {
            meta.get(k)
                .cloned()
                .ok_or_else(|| bad(format!("missing key \"{k}\"")))
        };
        let format = get("format")?;
        if format != RBM_FORMAT {
            return Err(bad(format!(
                "format is \"{format}\", expected \"{RBM_FORMAT}\""
            )));
        }
        let version = get("format_version")?;
        let format_version: u32 = version
            .parse()
            .map_err(|_| bad(format!("format_version \"{version}\" is not a number")))?;
        if format_version != RBM_FORMAT_VERSION {
            return Err(bad(format!(
                "format_version {format_version} is not supported (this build reads version {RBM_FORMAT_VERSION})"
            )));
        }
        let units = |k: &str| -> Result<usize> {
            let s = get(k)?;
            s.parse()
                .map_err(|_| bad(format!("{k} \"{s}\" is not a count")))
        };
        let dtype = get("dtype")?;
        if dtype != "f32" && dtype != "f64" {
            return Err(bad(format!(
                "dtype \"{dtype}\", expected \"f32\" or \"f64\""
            )));
        }
        let extra = meta
            .iter()
            .filter(|(k, _)| !RESERVED.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Self {
            format_version,
            visible: get("visible")?,
            hidden: get("hidden")?,
            visible_units: units("visible_units")?,
            hidden_units: units("hidden_units")?,
            dtype,
            extra,
        })
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Parses the safetensors container, returning the tensors and the header's metadata map.
fn parse<'a>(
    path: &Path,
    bytes: &'a [u8],
) -> Result<(SafeTensors<'a>, Option<HashMap<String, String>>)> {
    let bad = |e: safetensors::SafeTensorError| Error::Format {
        path: path.to_path_buf(),
        location: format!("header (file of {} bytes)", bytes.len()),
        reason: format!("not a valid safetensors file: {e}"),
    };
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(bad)?;
    let st = SafeTensors::deserialize(bytes).map_err(bad)?;
    Ok((st, meta.metadata().clone()))
}

/// Reads the metadata of an RBM file without building the model.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read; [`Error::Format`] if it is not an ebm RBM file of
/// a supported version.
pub fn read_rbm_info(path: &Path) -> Result<RbmFileInfo> {
    let bytes = read_file(path)?;
    let (_, meta) = parse(path, &bytes)?;
    RbmFileInfo::from_metadata(path, &meta)
}

/// Decodes one tensor to `F` (from either float dtype), checking finiteness.
fn decode<F: Scalar>(
    path: &Path,
    st: &SafeTensors<'_>,
    name: &str,
) -> Result<Option<(Vec<usize>, Vec<F>)>> {
    let view = match st.tensor(name) {
        Ok(v) => v,
        Err(_) => return Ok(None),
    };
    let bad = |reason: String| Error::Format {
        path: path.to_path_buf(),
        location: format!("tensor \"{name}\""),
        reason,
    };
    let shape = view.shape().to_vec();
    let n: usize = shape.iter().product();
    let data = view.data();
    let values: Vec<f64> = match view.dtype() {
        Dtype::F32 if data.len() == 4 * n => data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect(),
        Dtype::F64 if data.len() == 8 * n => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
        Dtype::F32 | Dtype::F64 => {
            return Err(bad(format!("{} bytes for shape {shape:?}", data.len())));
        }
        other => return Err(bad(format!("dtype {other:?}, expected F32 or F64"))),
    };
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::NonFinite {
            what: format!("{}: tensor \"{name}\"", path.display()),
            index,
            value: values[index],
        });
    }
    Ok(Some((shape, values.into_iter().map(F::from_f64).collect())))
}

/// Loads an RBM with visible layer `V` and hidden layer `H` from `path`.
///
/// A file written with the other float type is converted (f64 to f32 rounds to nearest).
///
/// # Errors
/// - [`Error::Io`]: the file cannot be read;
/// - [`Error::Format`]: not safetensors, truncated, not an ebm RBM file, unsupported version,
///   other unit types than `V` and `H`, a missing tensor or one of the wrong shape;
/// - [`Error::NonFinite`]: a NaN or infinite parameter (named by tensor and index);
/// - [`Error::InvalidParameter`] / [`Error::ShapeMismatch`]: parameters a layer rejects.
pub fn load_rbm<V: Layer, H: Layer<Scalar = V::Scalar>>(path: &Path) -> Result<Rbm<V, H>> {
    let bytes = read_file(path)?;
    let (st, meta) = parse(path, &bytes)?;
    let info = RbmFileInfo::from_metadata(path, &meta)?;
    if info.visible != V::KIND || info.hidden != H::KIND {
        return Err(Error::Format {
            path: path.to_path_buf(),
            location: "metadata".into(),
            reason: format!(
                "file holds a {}-{} RBM, requested {}-{}",
                info.visible,
                info.hidden,
                V::KIND,
                H::KIND
            ),
        });
    }
    let missing = |name: &str| Error::Format {
        path: path.to_path_buf(),
        location: format!("tensor \"{name}\""),
        reason: "missing".into(),
    };
    // Decode every layer tensor up front so that errors carry the file name.
    let mut layer_tensors: HashMap<String, (Vec<usize>, Vec<V::Scalar>)> = HashMap::new();
    for name in st.names() {
        if name.starts_with("visible.") || name.starts_with("hidden.") {
            let t = decode::<V::Scalar>(path, &st, name)?.ok_or_else(|| missing(name))?;
            layer_tensors.insert(name.to_string(), t);
        }
    }
    let with_path = |side: &str, e: Error| match e {
        Error::ShapeMismatch {
            what,
            expected,
            got,
        } => Error::Format {
            path: path.to_path_buf(),
            location: format!("{side} ({what})"),
            reason: format!("expected {expected}, got {got}"),
        },
        Error::InvalidParameter { name, reason } => Error::Format {
            path: path.to_path_buf(),
            location: format!("{side} ({name})"),
            reason,
        },
        other => other,
    };
    let lookup = |prefix: &'static str| {
        let t = &layer_tensors;
        move |name: &str| t.get(&format!("{prefix}.{name}")).cloned()
    };
    let visible = V::from_tensors(info.visible_units, &lookup("visible"))
        .map_err(|e| with_path("visible layer", e))?;
    let hidden = H::from_tensors(info.hidden_units, &lookup("hidden"))
        .map_err(|e| with_path("hidden layer", e))?;
    let (shape, w) =
        decode::<V::Scalar>(path, &st, "weights")?.ok_or_else(|| missing("weights"))?;
    let expected = [visible.width(), hidden.width()];
    if shape != expected {
        return Err(Error::Format {
            path: path.to_path_buf(),
            location: "tensor \"weights\"".into(),
            reason: format!(
                "shape {shape:?}, expected {expected:?} (visible width x hidden width)"
            ),
        });
    }
    let weights = DMatrix::from_row_slice(expected[0], expected[1], &w);
    Rbm::new(visible, hidden, weights).map_err(|e| with_path("model", e))
}

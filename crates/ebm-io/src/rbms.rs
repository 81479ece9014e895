//! Models trained by the [`rbms`](https://pypi.org/project/rbms/) PyTorch package, read from
//! its HDF5 files.
//!
//! [`crate::read_rbm_info`], [`crate::load_rbm`], [`crate::read_trajectory_info`] and
//! [`crate::load_trajectory`] recognise an HDF5 file by its signature and read it here, so every
//! program that loads a model (the `ebm` command line included) takes an rbms file as it is:
//! as a model, its last checkpoint; as a trajectory, all its checkpoints.
//!
//! # The rbms file layout (rbms 0.5)
//!
//! `rbms train` writes one group `update_<n>` per saved checkpoint, `n` the number of
//! parameter updates done, each with a group `params` holding the tensors of
//! `named_parameters()`; the dataset `model_type` names the model class:
//!
//! | `model_type` | ebm model | `params/vbias` | `params/hbias` | `params/weight_matrix` |
//! |---|---|---|---|---|
//! | `BBRBM` | `Rbm<Bernoulli, Bernoulli>` | `[N_v]` | `[N_h]` | `[N_v, N_h]` |
//! | `PBRBM` | `Rbm<Potts, Bernoulli>` | `[N_v, q]` | `[N_h]` | `[N_v, q, N_h]` |
//!
//! The rest of the file (hyperparameters, random-number states, persistent chains, flags) is
//! not read. Parameters are `f32` or `f64` (rbms's `--dtype`), converted like safetensors
//! tensors (exactly to `f64`; to `f32` by rounding, an overflow being an error).
//!
//! # The mapping is exact
//!
//! rbms's energy is \\(E(v, h) = -\sum_i a_i v_i - \sum_\mu b_\mu h_\mu - \sum_{i\mu} v_i
//! W_{i\mu} h_\mu\\) with \\(v, h \in \\{0, 1\\}\\) (BBRBM), and for the PBRBM \\(v_i \in
//! \\{0, \dots, q-1\\}\\) enters one-hot: \\(-\sum_i a_{i, v_i} - \sum_{i\mu} W_{i, v_i, \mu}
//! h_\mu - \sum_\mu b_\mu h_\mu\\). That is ebm's convention ([`crate::CONVENTION`]) with
//! visible bias/fields \\(a\\), hidden bias \\(b\\), and weights row \\(i\\) (BBRBM) or
//! \\(i q + a\\) (PBRBM, the one-hot slot of [`ebm_models::Potts`]) equal to rbms's row-major
//! `weight_matrix`, at inverse temperature 1: the free energies agree. The tests
//! (`tests/rbms.rs`) check it on files made by the real package, against free energies rbms
//! computed itself (`tests/fixtures/rbms/make_fixture.py`).
//!
//! Writing rbms files is not supported (this module only reads).

use crate::{Trajectory, format_error, to_scalar};
use ebm_core::{Error, Result};
use ebm_models::{Layer, Rbm};
use hdf5_reader::{Datatype, Hdf5File};
use nalgebra::DMatrix;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The first eight bytes of every HDF5 file.
pub const HDF5_SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// The value of [`crate::RbmFileInfo::format`] for an rbms file.
pub const RBMS_FORMAT: &str = "rbms-hdf5";

/// The convention recorded for a model read from an rbms file.
pub const RBMS_CONVENTION: &str = "rbms: E(v,h) = -a.v - b.h - v^T W h (PBRBM: v one-hot, \
W[i,a,mu] at row i*q+a); read as ebm's convention with a = visible bias/fields, b = hidden bias";

/// Whether `path` is a regular file that starts with the HDF5 signature (`false` if it cannot
/// be read or is not a regular file: the caller's own read then reports the error).
pub fn is_hdf5(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    ebm_core::input::open_regular(path)
        .and_then(|f| f.take(8).read_exact(&mut magic))
        .is_ok_and(|()| &magic == HDF5_SIGNATURE)
}

/// The model classes of rbms that ebm reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ModelType {
    /// Bernoulli visible and hidden units.
    Bbrbm,
    /// Potts visible units, Bernoulli hidden units.
    Pbrbm,
}

impl ModelType {
    fn name(self) -> &'static str {
        match self {
            ModelType::Bbrbm => "BBRBM",
            ModelType::Pbrbm => "PBRBM",
        }
    }

    fn kinds(self) -> (&'static str, &'static str) {
        match self {
            ModelType::Bbrbm => ("bernoulli", "bernoulli"),
            ModelType::Pbrbm => ("potts", "bernoulli"),
        }
    }
}

/// One parameter tensor as stored: its shape and values (widened to `f64`), and whether the
/// file holds it in `f32`.
struct Tensor {
    shape: Vec<usize>,
    values: Vec<f64>,
    f32: bool,
}

/// The parameters of one checkpoint, shapes checked against the model type.
struct Params {
    vbias: Tensor,
    hbias: Tensor,
    weights: Tensor,
}

/// An open rbms file: its model type and checkpoints.
struct RbmsFile<'a> {
    path: &'a Path,
    file: Hdf5File,
    model: ModelType,
    /// The `n` of every `update_<n>` group, increasing.
    updates: Vec<u64>,
}

fn h5_error(
    path: &Path,
    location: impl Into<String>,
) -> impl Fn(hdf5_reader::error::Error) -> Error {
    let (path, location) = (path.to_path_buf(), location.into());
    move |e| {
        format_error(
            &path,
            location.clone(),
            format!("cannot read the HDF5 file: {e}"),
        )
    }
}

impl<'a> RbmsFile<'a> {
    fn open(path: &'a Path) -> Result<Self> {
        let file = Hdf5File::open(path).map_err(h5_error(path, "byte 0"))?;
        let not_rbms = |what: &str| {
            format_error(
                path,
                "\"model_type\"",
                format!(
                    "an HDF5 file {what}, so not a model saved by the `rbms` package: ebm reads \
                     rbms's BBRBM and PBRBM model files (`rbms train --filename F.h5`) and its own \
                     safetensors files (RBM, trajectory and stack files)"
                ),
            )
        };
        let name = match file.dataset("model_type") {
            Ok(d) => d
                .read_string()
                .map_err(|_| not_rbms("whose \"model_type\" is not a string"))?,
            Err(_) => return Err(not_rbms("without a \"model_type\" dataset")),
        };
        let model = match name.trim_end_matches('\0') {
            "BBRBM" => ModelType::Bbrbm,
            "PBRBM" => ModelType::Pbrbm,
            other => {
                return Err(format_error(
                    path,
                    "\"model_type\"",
                    format!(
                        "rbms model type \"{other}\" is not supported: ebm reads BBRBM \
                         (Bernoulli-Bernoulli) and PBRBM (Potts-Bernoulli) models"
                    ),
                ));
            }
        };
        let (groups, _) = file
            .root_group()
            .and_then(|g| g.member_names())
            .map_err(h5_error(path, "root group"))?;
        let mut updates: Vec<u64> = groups
            .iter()
            .filter_map(|g| g.strip_prefix("update_")?.parse().ok())
            .collect();
        updates.sort_unstable();
        if updates.is_empty() {
            return Err(format_error(
                path,
                "root group",
                format!(
                    "an rbms {} file without any checkpoint (no group \"update_<n>\")",
                    model.name()
                ),
            ));
        }
        Ok(Self {
            path,
            file,
            model,
            updates,
        })
    }

    fn last(&self) -> u64 {
        *self.updates.last().expect("checked in open")
    }

    fn tensor(&self, update: u64, name: &str) -> Result<Tensor> {
        let at = format!("update_{update}/params/{name}");
        let bad = |reason: String| format_error(self.path, format!("dataset \"{at}\""), reason);
        let d = self
            .file
            .dataset(&at)
            .map_err(|e| bad(format!("missing or unreadable ({e})")))?;
        let shape: Vec<usize> = d.shape().iter().map(|&n| n as usize).collect();
        let (values, f32) = match d.dtype() {
            Datatype::FloatingPoint { size: 4, .. } => (
                d.read_array::<f32>()
                    .map_err(h5_error(self.path, format!("dataset \"{at}\"")))?
                    .iter()
                    .map(|&v| f64::from(v))
                    .collect(),
                true,
            ),
            Datatype::FloatingPoint { size: 8, .. } => (
                d.read_array::<f64>()
                    .map_err(h5_error(self.path, format!("dataset \"{at}\"")))?
                    .iter()
                    .copied()
                    .collect(),
                false,
            ),
            other => {
                return Err(bad(format!(
                    "type {other:?}, expected 32- or 64-bit floats"
                )));
            }
        };
        Ok(Tensor { shape, values, f32 })
    }

    /// The parameters of checkpoint `update`, with shapes checked against the model type.
    fn params(&self, update: u64) -> Result<Params> {
        let p = Params {
            vbias: self.tensor(update, "vbias")?,
            hbias: self.tensor(update, "hbias")?,
            weights: self.tensor(update, "weight_matrix")?,
        };
        let (v, h, w) = (&p.vbias.shape, &p.hbias.shape, &p.weights.shape);
        let (expected, ok) = match self.model {
            ModelType::Bbrbm => (
                "vbias [N_v], hbias [N_h], weight_matrix [N_v, N_h]",
                v.len() == 1 && h.len() == 1 && *w == [v[0], h[0]],
            ),
            ModelType::Pbrbm => (
                "vbias [N_v, q], hbias [N_h], weight_matrix [N_v, q, N_h] with q >= 2",
                v.len() == 2 && v[1] >= 2 && h.len() == 1 && *w == [v[0], v[1], h[0]],
            ),
        };
        if !ok {
            return Err(format_error(
                self.path,
                format!("group \"update_{update}/params\""),
                format!(
                    "{} shapes vbias {v:?}, hbias {h:?}, weight_matrix {w:?}; expected {expected}",
                    self.model.name()
                ),
            ));
        }
        Ok(p)
    }

    /// The metadata of checkpoint `update`, as ebm's file information.
    fn info(&self, update: u64) -> Result<crate::RbmFileInfo> {
        let p = self.params(update)?;
        let (visible, hidden) = self.model.kinds();
        let prefix = format!("update_{update}/params/");
        let tensors = [
            ("vbias", &p.vbias),
            ("hbias", &p.hbias),
            ("weight_matrix", &p.weights),
        ]
        .into_iter()
        .map(|(n, t)| (format!("{prefix}{n}"), t.shape.clone()))
        .collect();
        let updates: Vec<String> = self.updates.iter().map(u64::to_string).collect();
        Ok(crate::RbmFileInfo {
            format: RBMS_FORMAT.into(),
            format_version: 0,
            visible: visible.into(),
            hidden: hidden.into(),
            visible_units: p.vbias.shape[0],
            hidden_units: p.hbias.shape[0],
            dtype: if p.weights.f32 { "f32" } else { "f64" }.into(),
            convention: RBMS_CONVENTION.into(),
            tensors,
            extra: BTreeMap::from([
                ("rbms_model_type".into(), self.model.name().into()),
                ("rbms_update".into(), update.to_string()),
                ("rbms_updates".into(), updates.join(",")),
            ]),
        })
    }

    /// The model of checkpoint `update` as `Rbm<V, H>`.
    fn model<V: Layer, H: Layer<Scalar = V::Scalar>>(&self, update: u64) -> Result<Rbm<V, H>> {
        let (visible, hidden) = self.model.kinds();
        if (V::KIND, H::KIND) != (visible, hidden) {
            return Err(format_error(
                self.path,
                "\"model_type\"",
                format!(
                    "file holds an rbms {} ({visible}-{hidden} RBM), requested {}-{}",
                    self.model.name(),
                    V::KIND,
                    H::KIND
                ),
            ));
        }
        let p = self.params(update)?;
        let at = |name: &str| format!("dataset \"update_{update}/params/{name}\"");
        let convert = |t: Tensor, name: &str| -> Result<(Vec<usize>, Vec<V::Scalar>)> {
            let what = format!("{} of {}", at(name), self.path.display());
            Ok((t.shape, to_scalar(&t.values, &what)?))
        };
        let in_file = |name: &'static str| {
            move |e: Error| match e {
                Error::ShapeMismatch { expected, got, .. } => format_error(
                    self.path,
                    at(name),
                    format!("expected {expected}, got {got}"),
                ),
                Error::InvalidParameter { reason, .. } => format_error(self.path, at(name), reason),
                other => other,
            }
        };
        let (n_visible, n_hidden) = (p.vbias.shape[0], p.hbias.shape[0]);
        let vbias = convert(p.vbias, "vbias")?;
        let hbias = convert(p.hbias, "hbias")?;
        let (wshape, w) = convert(p.weights, "weight_matrix")?;
        // Each layer has one parameter tensor (bias or fields); its own check of the shape
        // applies.
        let visible =
            V::from_tensors(n_visible, &|_| Some(vbias.clone())).map_err(in_file("vbias"))?;
        let hidden =
            H::from_tensors(n_hidden, &|_| Some(hbias.clone())).map_err(in_file("hbias"))?;
        let rows = visible.width();
        let cols = *wshape.last().expect("checked in params");
        Rbm::new(visible, hidden, DMatrix::from_row_slice(rows, cols, &w))
            .map_err(in_file("weight_matrix"))
    }
}

/// The information of the last checkpoint of an rbms file.
pub(crate) fn read_info(path: &Path) -> Result<crate::RbmFileInfo> {
    let f = RbmsFile::open(path)?;
    f.info(f.last())
}

/// The last checkpoint of an rbms file.
pub(crate) fn load_last<V: Layer, H: Layer<Scalar = V::Scalar>>(path: &Path) -> Result<Rbm<V, H>> {
    let f = RbmsFile::open(path)?;
    f.model(f.last())
}

/// The checkpoint `update` (the `n` of its group `update_<n>`) of an rbms file.
///
/// # Errors
/// As [`crate::load_rbm`], and [`Error::Format`] naming the saved updates if there is no such
/// checkpoint.
pub fn load_checkpoint<V: Layer, H: Layer<Scalar = V::Scalar>>(
    path: &Path,
    update: u64,
) -> Result<Rbm<V, H>> {
    let f = RbmsFile::open(path)?;
    if !f.updates.contains(&update) {
        return Err(format_error(
            path,
            format!("group \"update_{update}\""),
            format!("no such checkpoint; the file has updates {:?}", f.updates),
        ));
    }
    f.model(update)
}

/// The trajectory information of an rbms file: every checkpoint's update.
pub(crate) fn read_trajectory_info(path: &Path) -> Result<crate::TrajectoryFileInfo> {
    let f = RbmsFile::open(path)?;
    let last = f.info(f.last())?;
    Ok(crate::TrajectoryFileInfo {
        format: RBMS_FORMAT.into(),
        format_version: 0,
        visible: last.visible,
        hidden: last.hidden,
        visible_units: last.visible_units,
        hidden_units: last.hidden_units,
        dtype: last.dtype,
        convention: last.convention,
        updates: f.updates.clone(),
        tensors: BTreeMap::new(),
        extra: BTreeMap::from([("rbms_model_type".into(), f.model.name().into())]),
    })
}

/// Every checkpoint of an rbms file, in increasing order of update.
pub(crate) fn load_trajectory<V: Layer, H: Layer<Scalar = V::Scalar>>(
    path: &Path,
) -> Result<Trajectory<V, H>> {
    let f = RbmsFile::open(path)?;
    let mut t = Trajectory::new();
    for &u in &f.updates {
        t.push(u, f.model(u)?)
            .map_err(|e| format_error(path, format!("group \"update_{u}\""), e.to_string()))?;
    }
    Ok(t)
}

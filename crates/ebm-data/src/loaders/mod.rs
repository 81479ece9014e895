//! Loaders for real data: `.npy`, CSV / whitespace text, IDX (MNIST), FASTA alignments, and the
//! embedded binarised scikit-learn 8x8 digits ([`digits()`]).
//!
//! Every loader has a `parse_*` function on bytes (with a name used in error messages) and a
//! `load_*` function on a path. Malformed input is rejected with [`crate::Error::Parse`], which
//! names the file, the line/column or byte offset, and what was expected. The `load_*` functions
//! read only regular files, text files of at most [`ebm_core::input::MAX_TEXT_BYTES`] and
//! binary ones of at most [`ebm_core::input::MAX_BINARY_BYTES`]; anything else is an
//! [`crate::Error::Io`] saying what the file is.

pub mod digits;
pub mod fasta;
pub mod idx;
pub mod npy;
pub mod text;

pub use digits::digits;

use crate::error::{Error, Result};

/// Reads the whole data file `path`: a regular file (not a FIFO, a device or a directory) of
/// at most `limit` bytes ([`ebm_core::input::read_regular`]).
pub(crate) fn read_file(path: &std::path::Path, limit: u64) -> Result<Vec<u8>> {
    ebm_core::input::read_regular(path, limit).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

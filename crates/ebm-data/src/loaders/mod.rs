//! Loaders for real data: `.npy`, CSV / whitespace text, IDX (MNIST), FASTA alignments, and the
//! embedded binarised scikit-learn 8x8 digits ([`digits()`]).
//!
//! Every loader has a `parse_*` function on bytes (with a name used in error messages) and a
//! `load_*` function on a path. Malformed input is rejected with [`crate::Error::Parse`], which
//! names the file, the line/column or byte offset, and what was expected.

pub mod digits;
pub mod fasta;
pub mod idx;
pub mod npy;
pub mod text;

pub use digits::digits;

use crate::error::{Error, Result};

pub(crate) fn read_file(path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

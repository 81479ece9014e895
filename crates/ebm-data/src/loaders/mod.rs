//! Loaders for real data: `.npy`, CSV / whitespace text, IDX (MNIST), FASTA alignments, and the
//! embedded binarised scikit-learn 8x8 digits ([`digits()`]).
//!
//! Every loader has a `parse_*` function on bytes (with a name used in error messages) and a
//! `load_*` function on a path. Malformed input is rejected with [`crate::Error::Parse`], which
//! names the file, the line/column or byte offset, and what was expected. The `load_*` functions
//! read only regular files, text files of at most [`ebm_core::input::MAX_TEXT_BYTES`] and
//! binary ones of at most [`ebm_core::input::MAX_BINARY_BYTES`]; anything else is an
//! [`crate::Error::Io`] saying what the file is.
//!
//! Text files (CSV and whitespace tables, FASTA) are read whole, then parsed. Binary files
//! (`.npy`, IDX) are read in two steps ([`ebm_core::input::read_declared`]): first the header
//! (at most [`npy::MAX_HEADER_BYTES`] bytes of an `.npy` file, at most 1024 of an IDX file),
//! which is parsed and must declare a data section of exactly the rest of the file's length;
//! only then the data, exactly that many bytes. A file longer or shorter than its header says
//! is refused with the same [`crate::Error::Parse`] as a buffer of that length given to the
//! `parse_*` function, without its data being read.

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

/// Reads the whole binary data file `path`, a regular file of at most
/// [`ebm_core::input::MAX_BINARY_BYTES`], by [`ebm_core::input::read_declared`]: its first
/// `head` bytes, then (if `declared(first_bytes, file_length)` accepts the header and the
/// length) exactly the rest.
pub(crate) fn read_declared(
    path: &std::path::Path,
    head: u64,
    declared: impl FnOnce(&[u8], u64) -> Result<u64>,
) -> Result<Vec<u8>> {
    let io = |source: std::io::Error| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    ebm_core::input::read_declared(path, head, ebm_core::input::MAX_BINARY_BYTES, declared, io)
}

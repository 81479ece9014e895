//! The crate's error type.

use std::fmt;
use std::path::PathBuf;

/// Where in an input a parse error was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// A 1-based line and a 1-based column (text formats).
    Line {
        /// 1-based line number.
        line: usize,
        /// 1-based column (character) number; 0 when the whole line is meant.
        column: usize,
    },
    /// A 0-based byte offset (binary formats).
    Offset(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line { line, column: 0 } => write!(f, "line {line}"),
            Location::Line { line, column } => write!(f, "line {line}, column {column}"),
            Location::Offset(o) => write!(f, "byte offset {o}"),
        }
    }
}

/// Every error of `ebm-data`.
///
/// Loader errors ([`Error::Parse`]) name the file (or `<memory>` for in-memory input), the line or
/// byte offset, and what was expected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading a file failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Malformed input in a file format.
    #[error("{file}: {location}: {reason}")]
    Parse {
        /// File name, or `<memory>`.
        file: String,
        /// Line/column or byte offset of the problem.
        location: Location,
        /// What was found and what was expected.
        reason: String,
    },
    /// Matrix or vector shapes do not agree.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// A value is not allowed in the dataset's domain, or a domain conversion is not defined.
    #[error("domain error: {0}")]
    Domain(String),
    /// An invalid parameter (fraction outside (0,1), negative weight, empty data, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// Shorthand for `Result<T, ebm_data::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn parse_err(file: &str, location: Location, reason: impl Into<String>) -> Error {
    Error::Parse {
        file: file.to_string(),
        location,
        reason: reason.into(),
    }
}

pub(crate) fn at_offset(file: &str, offset: usize, reason: impl Into<String>) -> Error {
    parse_err(file, Location::Offset(offset as u64), reason)
}

pub(crate) fn at_line(file: &str, line: usize, column: usize, reason: impl Into<String>) -> Error {
    parse_err(file, Location::Line { line, column }, reason)
}

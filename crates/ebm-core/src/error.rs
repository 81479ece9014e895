use std::path::PathBuf;

/// Errors reported at the edges of the library: constructors, loaders and observers.
///
/// Hot paths (sweeps, energies) do not return errors; they document their panics instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two objects that must agree in size do not.
    #[error("shape mismatch in {what}: expected {expected}, got {got}")]
    ShapeMismatch {
        /// What was being checked (e.g. `"visible bias"`).
        what: String,
        /// The expected shape or length, as text.
        expected: String,
        /// The shape or length found, as text.
        got: String,
    },
    /// A value that must be finite is NaN or infinite.
    #[error("non-finite value in {what} at index {index}: {value}")]
    NonFinite {
        /// Which array holds the value.
        what: String,
        /// The flat index of the first offending value.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A parameter is outside its valid range.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: String,
        /// Why it is invalid, including the expected range.
        reason: String,
    },
    /// An exact computation was requested on a system too large to enumerate.
    #[error("{what} has {states} states; exact enumeration is limited to {limit}")]
    TooLarge {
        /// What was to be enumerated.
        what: String,
        /// The number of states (saturating).
        states: u128,
        /// The largest number of states accepted.
        limit: u128,
    },
    /// Reading or writing a file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file was read but its content is not what was expected.
    #[error("malformed file {path} at {location}: {reason}")]
    Format {
        /// The file concerned.
        path: PathBuf,
        /// Where in the file (a byte offset, a line, or a tensor name).
        location: String,
        /// What was expected and what was found.
        reason: String,
    },
    /// A computation would need more memory than the machine has available.
    #[error(
        "{what} needs about {} MiB of memory, more than the {} MiB available",
        needed / (1 << 20),
        available / (1 << 20)
    )]
    InsufficientMemory {
        /// What was to be allocated.
        what: String,
        /// Estimated bytes needed.
        needed: u128,
        /// Bytes available.
        available: u128,
    },
    /// An observer asked to stop or failed.
    #[error("observer failed: {0}")]
    Observer(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Checks that every value of `values` is finite.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming `what` and the first offending index.
    pub fn check_finite<F: num_traits::Float + Into<f64>>(what: &str, values: &[F]) -> Result<()> {
        match values.iter().position(|v| !v.is_finite()) {
            None => Ok(()),
            Some(index) => Err(Error::NonFinite {
                what: what.to_string(),
                index,
                value: values[index].into(),
            }),
        }
    }

    /// The same error as found in the file `path`: a parameter, shape or finiteness error
    /// found while checking a file's content against the run it is used in becomes an
    /// [`Error::Format`] naming the file, the field (`location`) and what was expected;
    /// other errors are returned unchanged.
    ///
    /// # Example
    /// ```
    /// use ebm_core::Error;
    /// let e = Error::InvalidParameter { name: "batch_size".into(), reason: "must be >= 1".into() };
    /// let e = e.in_file(std::path::Path::new("run.state.json"));
    /// assert_eq!(e.to_string(), "malformed file run.state.json at field batch_size: must be >= 1");
    /// ```
    pub fn in_file(self, path: &std::path::Path) -> Error {
        let (location, reason) = match self {
            Error::InvalidParameter { name, reason } => (name, reason),
            Error::ShapeMismatch {
                what,
                expected,
                got,
            } => (what, format!("expected {expected}, got {got}")),
            Error::NonFinite { what, index, value } => (
                what,
                format!("expected finite values, got {value} at index {index}"),
            ),
            other => return other,
        };
        Error::Format {
            path: path.to_path_buf(),
            location: format!("field {location}"),
            reason,
        }
    }

    /// Checks, before allocating, that an estimated `needed` bytes fit in the memory
    /// available (`MemAvailable` of `/proc/meminfo` on Linux; elsewhere, or when it cannot be
    /// read, the check passes).
    ///
    /// # Errors
    /// [`Error::InsufficientMemory`] naming `what`.
    pub fn check_memory(what: &str, needed: u128) -> Result<()> {
        match available_memory() {
            Some(available) if needed > available => Err(Error::InsufficientMemory {
                what: what.to_string(),
                needed,
                available,
            }),
            _ => Ok(()),
        }
    }

    /// Checks that `got == expected` for a length.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] naming `what`.
    pub fn check_len(what: &str, expected: usize, got: usize) -> Result<()> {
        if expected == got {
            Ok(())
        } else {
            Err(Error::ShapeMismatch {
                what: what.to_string(),
                expected: expected.to_string(),
                got: got.to_string(),
            })
        }
    }
}

/// Bytes of memory available to a new allocation, if known (Linux: `MemAvailable`).
fn available_memory() -> Option<u128> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_check_names_the_first_bad_index() {
        assert!(Error::check_finite("w", &[1.0f64, 2.0]).is_ok());
        let e = Error::check_finite("w", &[1.0f32, f32::NAN, f32::INFINITY]).unwrap_err();
        match e {
            Error::NonFinite { what, index, .. } => {
                assert_eq!(what, "w");
                assert_eq!(index, 1);
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn memory_check_refuses_more_than_the_machine_has() {
        assert!(Error::check_memory("a little", 1 << 10).is_ok());
        if available_memory().is_some() {
            let e = Error::check_memory("everything", u128::MAX).unwrap_err();
            assert!(matches!(e, Error::InsufficientMemory { .. }), "{e}");
            assert!(e.to_string().starts_with("everything needs about"), "{e}");
        }
    }

    #[test]
    fn length_check_reports_both_sizes() {
        let e = Error::check_len("bias", 3, 4).unwrap_err();
        assert_eq!(e.to_string(), "shape mismatch in bias: expected 3, got 4");
    }
}

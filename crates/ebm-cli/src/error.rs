//! The error every command returns: one message, printed as one line.

use std::fmt;

/// Why a command failed: a file that cannot be read or is malformed, an option value out of
/// range, options that do not go together, a model the command cannot handle.
///
/// The message says what was wrong, where (file, option, line or tensor) and what was
/// expected; [`crate::run`] prints it as `error: <message>` on one line.
#[derive(Debug)]
pub struct CliError {
    message: String,
    exit_code: u8,
}

impl CliError {
    /// An error with the given message (exit code [`crate::EXIT_FAILURE`]).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            exit_code: crate::EXIT_FAILURE,
        }
    }

    /// An error ending the program with `exit_code` (e.g. a training run stopped by a
    /// signal, see [`crate::EXIT_INTERRUPTED`]).
    pub(crate) fn with_exit_code(message: impl Into<String>, exit_code: u8) -> Self {
        Self {
            message: message.into(),
            exit_code,
        }
    }

    /// The program's exit code for this error.
    pub fn exit_code(&self) -> u8 {
        self.exit_code
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// The library's errors become a command's error by their message, which already says what,
/// where and what was expected.
macro_rules! from_library_errors {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for CliError {
            fn from(e: $error) -> Self {
                Self::new(e.to_string())
            }
        }
    )*};
}

from_library_errors!(
    ebm_core::Error,
    ebm_cuda::Error,
    ebm_data::Error,
    ebm_mpi::NotOneProcess,
    ebm_train::kinds::KindError,
    ebm_train::kinds::DataError,
);

/// `Result` with [`CliError`].
pub(crate) type Result<T, E = CliError> = std::result::Result<T, E>;

/// Returns early with a [`CliError`] built like `format!`.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::CliError::new(format!($($arg)*)))
    };
}
pub(crate) use bail;

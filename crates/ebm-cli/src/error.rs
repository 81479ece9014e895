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

impl From<ebm_core::Error> for CliError {
    fn from(e: ebm_core::Error) -> Self {
        Self::new(e.to_string())
    }
}

impl From<ebm_cuda::Error> for CliError {
    fn from(e: ebm_cuda::Error) -> Self {
        Self::new(e.to_string())
    }
}

impl From<ebm_train::kinds::KindError> for CliError {
    fn from(e: ebm_train::kinds::KindError) -> Self {
        Self::new(e.to_string())
    }
}

impl From<ebm_data::Error> for CliError {
    fn from(e: ebm_data::Error) -> Self {
        Self::new(e.to_string())
    }
}

/// `Result` with [`CliError`].
pub(crate) type Result<T, E = CliError> = std::result::Result<T, E>;

/// Returns early with a [`CliError`] built like `format!`.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::CliError::new(format!($($arg)*)))
    };
}
pub(crate) use bail;

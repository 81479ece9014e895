//! SIGINT / SIGTERM during `ebm train`: the handler only records the signal (an atomic store,
//! async-signal-safe) and restores the default action, so a second Ctrl-C ends the process at
//! once; the training loop polls [`received`] after every update, writes its outputs (a
//! resumable state) and exits with [`exit_code`] of the signal.
//!
//! For tests of this path, [`READY_ENV`] names a file that `ebm train` creates once the
//! handlers are installed and an update is done, then waits for a signal ([`announce_ready`]):
//! a test that waits for the file and then signals stops the run at a known update, however
//! fast or slow the machine.

use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// The environment variable of the test hook [`announce_ready`]: the path of the readiness
/// file. Unset in normal use.
pub(crate) const READY_ENV: &str = "EBM_SIGNAL_READY";

/// The longest [`announce_ready`] waits for a signal before the run goes on.
const READY_WAIT: Duration = Duration::from_secs(120);

/// The signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The exit code of a run stopped by `signal`: 128 + the signal number, the shell's
/// convention (130 for SIGINT, 143 for SIGTERM).
pub(crate) fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(1)
}

/// The name of `signal`.
pub(crate) fn name(signal: i32) -> &'static str {
    match signal {
        2 => "SIGINT",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

/// The signal received since [`install`], if any.
pub(crate) fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The test hook of [`READY_ENV`]: creates the file `path` (the handlers are installed and
/// training has started), then waits until a signal is received (at most [`READY_WAIT`]), so
/// that the run stops at the end of the current update.
///
/// # Errors
/// [`ebm_core::Error::Io`] if the file cannot be created.
pub(crate) fn announce_ready(path: &Path) -> ebm_core::Result<()> {
    std::fs::write(path, std::process::id().to_string()).map_err(|source| ebm_core::Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let started = Instant::now();
    while received().is_none() && started.elapsed() < READY_WAIT {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

#[cfg(unix)]
extern "C" fn handle(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
    // SAFETY: signal(2) is async-signal-safe; restoring the default action lets a second
    // signal end the process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// Installs the handlers of SIGINT and SIGTERM (for the rest of the process).
#[cfg(unix)]
pub(crate) fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `handle` only performs an atomic store and calls signal(2), both
        // async-signal-safe.
        unsafe {
            libc::signal(
                signal,
                handle as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Without Unix signals, an interrupt ends the process as before.
#[cfg(not(unix))]
pub(crate) fn install() {}

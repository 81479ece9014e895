//! Opening input files safely: every file ebm reads must be a regular file (symbolic links
//! followed), and whole-file reads are capped.
//!
//! A FIFO given as an input would block the reader until some other process writes to it (for
//! ever, usually), and a device such as `/dev/zero` or `/dev/urandom` never ends: read whole,
//! it fills the memory. [`open_regular`] refuses both, and directories, before anything is
//! read, and [`read_regular`] reads at most a given number of bytes. Every reader of the
//! workspace opens its inputs through these two functions, so that the check exists once.
//!
//! The errors are [`std::io::Error`]s (kind [`std::io::ErrorKind::InvalidInput`] for a file
//! that is not regular, [`std::io::ErrorKind::FileTooLarge`] for one over the limit) whose
//! message says what the file is and what was expected; each crate wraps them in its own
//! error type with the path.
//!
//! # Example
//! ```
//! use ebm_core::input::{open_regular, read_regular};
//! let dir = tempfile::tempdir().unwrap();
//! let p = dir.path().join("data.csv");
//! std::fs::write(&p, "0,1\n1,0\n").unwrap();
//! assert_eq!(read_regular(&p, 100).unwrap(), b"0,1\n1,0\n");
//! let e = read_regular(&p, 4).unwrap_err();
//! assert!(e.to_string().contains("larger than 4 bytes"));
//! let e = open_regular(dir.path()).unwrap_err();
//! assert!(e.to_string().contains("a directory"));
//! ```

use std::fs::{File, FileType};
use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// The largest JSON document or text file (state files, run records, manifests, CSV tables
/// and data, FASTA alignments) read whole: 4 GiB. Larger ones are refused before they are read.
pub const MAX_TEXT_BYTES: u64 = 4 << 30;

/// The largest binary data file (`.npy`, IDX) read whole: 64 GiB (whose values alone, as
/// `f64`, need as much memory or more). Larger ones are refused before they are read.
pub const MAX_BINARY_BYTES: u64 = 64 << 30;

/// What a file of type `t` is, in words, if it is not a regular file.
fn not_regular(t: FileType) -> Option<&'static str> {
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// The error for a file of type `t` that is not regular.
fn refuse(t: FileType) -> Option<Error> {
    not_regular(t).map(|what| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("it is {what}; expected a regular file (ebm reads inputs only from files)"),
        )
    })
}

/// Opens the input file `path` for reading after checking that it is a regular file, symbolic
/// links followed: a FIFO, a device, a socket or a directory is refused without being opened
/// (opening a FIFO would block), and the type is checked again on the opened file.
///
/// # Errors
/// The error of [`std::fs::metadata`] or [`File::open`] (a missing file, no permission), or
/// one of kind [`ErrorKind::InvalidInput`] naming what the file is instead (e.g. "a FIFO
/// (named pipe)", "a character device", "a directory").
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    if let Some(e) = refuse(std::fs::metadata(path)?.file_type()) {
        return Err(e);
    }
    let file = File::open(path)?;
    // The path may have been replaced between the two calls.
    match refuse(file.metadata()?.file_type()) {
        Some(e) => Err(e),
        None => Ok(file),
    }
}

/// Reads the whole regular file `path` ([`open_regular`]), refusing one of more than `limit`
/// bytes: by its length before reading, and by what it yields while reading (a file that
/// grows, or one whose length the system does not report).
///
/// # Errors
/// The errors of [`open_regular`] and of reading; kind [`ErrorKind::FileTooLarge`] if the file
/// has more than `limit` bytes ("larger than `limit` bytes").
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let too_large = || {
        Error::new(
            ErrorKind::FileTooLarge,
            format!("the file is larger than {limit} bytes, the most read for such a file"),
        )
    };
    let len = file.metadata()?.len();
    if len > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_directories_are_refused_symlinks_followed() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("zero.csv");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        for (p, what) in [
            (Path::new("/dev/zero"), "a character device"),
            (link.as_path(), "a character device"),
            (dir.path(), "a directory"),
        ] {
            let e = read_regular(p, 10).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert!(e.to_string().contains(what), "{e}");
        }
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = open_regular(&fifo).unwrap_err();
            assert!(e.to_string().contains("a FIFO"), "{e}");
        }
        let e = open_regular(&dir.path().join("missing")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }

    #[test]
    fn reads_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, [7u8; 10]).unwrap();
        assert_eq!(read_regular(&p, 10).unwrap(), [7u8; 10]);
        let e = read_regular(&p, 9).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("larger than 9 bytes"), "{e}");
    }
}

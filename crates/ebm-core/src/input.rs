//! Opening input files safely: every file ebm reads must be a regular file (symbolic links
//! followed), and whole-file reads are capped.
//!
//! A FIFO given as an input would block the reader until some other process writes to it (for
//! ever, usually), and a device such as `/dev/zero` or `/dev/urandom` never ends: read whole,
//! it fills the memory. [`open_regular`] refuses both, and directories, before anything is
//! read, and [`read_regular`] reads at most a given number of bytes. Every reader of the
//! workspace opens its inputs through these functions, so that the check exists once.
//!
//! Binary files whose header declares their length (`.npy`, IDX, safetensors) are not read
//! whole blindly: [`read_declared`] reads the header first, checks the file's length against
//! the length the header declares, and only then reads the rest, exactly that many bytes
//! ([`read_rest`]). A file of 50 GB whose header declares 10 values is refused after its
//! header is read.
//!
//! The errors are [`std::io::Error`]s (kind [`std::io::ErrorKind::InvalidInput`] for a file
//! that is not regular, [`std::io::ErrorKind::FileTooLarge`] for one over the limit,
//! [`std::io::ErrorKind::InvalidData`] or [`std::io::ErrorKind::UnexpectedEof`] for one that
//! yields more or fewer bytes than declared) whose message says what the file is and what
//! was expected; each crate wraps them in its own error type with the path.
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

/// The error for a file of more than `limit` bytes.
fn too_large(limit: u64) -> Error {
    Error::new(
        ErrorKind::FileTooLarge,
        format!("the file is larger than {limit} bytes, the most read for such a file"),
    )
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
    let len = file.metadata()?.len();
    if len > limit {
        return Err(too_large(limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// Reads the whole regular file `path` ([`open_regular`]) whose header declares its length,
/// reading no more than its first `head` bytes before that length is checked:
///
/// 1. the first `min(len, head)` bytes are read, `len` being the file's length from its
///    metadata;
/// 2. `declared(first_bytes, len)` parses the header in them and returns the length the
///    whole file must have, or the format's own error (e.g. a data section of the wrong
///    length for the header; `len` is given so that the message can say by how much);
/// 3. a declared length other than `len` is refused, and so is one above `limit`;
/// 4. the rest is read ([`read_rest`]): exactly the declared length in all, a file that
///    yields more or fewer bytes (one that grows or shrinks while read) being refused.
///
/// `head` must cover the largest header the format accepts (or the part of it needed to
/// tell the declared length).
///
/// # Errors
/// The error of `declared`; the others, of kind as in [`read_rest`] (and
/// [`ErrorKind::InvalidData`] for a declared length other than `len`: "the file has `len`
/// bytes, its header declares `total`"), wrapped by `io`.
///
/// # Example
/// ```
/// use ebm_core::input::read_declared;
/// let dir = tempfile::tempdir().unwrap();
/// let p = dir.path().join("data.bin");
/// // A toy format: one byte giving the number of data bytes that follow.
/// std::fs::write(&p, [3, 7, 8, 9]).unwrap();
/// let declared = |head: &[u8], _len: u64| match head.first() {
///     Some(&n) => Ok(1 + u64::from(n)),
///     None => Err("empty file".to_string()),
/// };
/// let bytes = read_declared(&p, 1, 100, declared, |e| e.to_string()).unwrap();
/// assert_eq!(bytes, [3, 7, 8, 9]);
/// std::fs::write(&p, [2, 7, 8, 9]).unwrap();
/// let e = read_declared(&p, 1, 100, declared, |e| e.to_string()).unwrap_err();
/// assert!(e.contains("the file has 4 bytes, its header declares 3"), "{e}");
/// ```
pub fn read_declared<E>(
    path: &Path,
    head: u64,
    limit: u64,
    declared: impl FnOnce(&[u8], u64) -> Result<u64, E>,
    io: impl Fn(Error) -> E,
) -> Result<Vec<u8>, E> {
    let mut file = open_regular(path).map_err(&io)?;
    let len = file.metadata().map_err(&io)?.len();
    let first = len.min(head);
    let mut bytes = Vec::with_capacity(usize::try_from(first).unwrap_or(0));
    (&mut file)
        .take(first)
        .read_to_end(&mut bytes)
        .map_err(&io)?;
    let total = declared(&bytes, len)?;
    if total != len {
        return Err(io(Error::new(
            ErrorKind::InvalidData,
            format!("the file has {len} bytes, its header declares {total}"),
        )));
    }
    read_rest(file, bytes, total, limit).map_err(io)
}

/// Reads the rest of a file whose first bytes are `bytes` from `reader` (positioned just
/// after them), so that the result holds exactly `total` bytes, the length the file's header
/// declares: at most `total - bytes.len()` bytes are read, then one more to check that the
/// file ends there.
///
/// # Errors
/// Kind [`ErrorKind::FileTooLarge`] if `total` is above `limit` (nothing is read then: "the
/// file is larger than `limit` bytes"); [`ErrorKind::UnexpectedEof`] if the file ends before
/// `total` bytes ("the file ended after N bytes, before the `total` bytes its header
/// declares"); [`ErrorKind::InvalidData`] if it has more ("the file has more than the `total`
/// bytes its header declares"); the errors of reading.
pub fn read_rest(
    mut reader: impl Read,
    mut bytes: Vec<u8>,
    total: u64,
    limit: u64,
) -> std::io::Result<Vec<u8>> {
    if total > limit {
        return Err(too_large(limit));
    }
    let more = || {
        Error::new(
            ErrorKind::InvalidData,
            format!(
                "the file has more than the {total} bytes its header declares (did it grow \
                 while read?)"
            ),
        )
    };
    let Some(rest) = total.checked_sub(bytes.len() as u64) else {
        return Err(more());
    };
    bytes.reserve_exact(usize::try_from(rest).unwrap_or(0));
    (&mut reader).take(rest).read_to_end(&mut bytes)?;
    if (bytes.len() as u64) < total {
        return Err(Error::new(
            ErrorKind::UnexpectedEof,
            format!(
                "the file ended after {} bytes, before the {total} bytes its header declares \
                 (did it shrink while read?)",
                bytes.len()
            ),
        ));
    }
    let mut extra = Vec::new();
    reader.take(1).read_to_end(&mut extra)?;
    if !extra.is_empty() {
        return Err(more());
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

    /// A toy format for the tests: the first byte is the number of data bytes that follow.
    fn toy(head: &[u8], len: u64) -> Result<u64, String> {
        let n = *head.first().ok_or("empty file")?;
        match 1 + u64::from(n) {
            total if total == len => Ok(total),
            _ => Err(format!("data section has {} bytes, expected {n}", len - 1)),
        }
    }

    #[test]
    fn read_declared_reads_the_head_then_exactly_the_declared_rest() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, [9, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
        let mut seen = None;
        let bytes = read_declared(
            &p,
            4,
            100,
            |head, len| {
                seen = Some((head.to_vec(), len));
                toy(head, len)
            },
            |e| e.to_string(),
        )
        .unwrap();
        assert_eq!(bytes, [9, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(seen, Some((vec![9, 1, 2, 3], 10)));
        // A file shorter than the head is given whole.
        std::fs::write(&p, [1, 5]).unwrap();
        let bytes = read_declared(&p, 4, 100, toy, |e| e.to_string()).unwrap();
        assert_eq!(bytes, [1, 5]);
        // The limit still holds, for a file whose header declares all of it.
        std::fs::write(&p, [9; 10]).unwrap();
        let e =
            read_declared(&p, 4, 9, |h, len| toy(h, len).map_err(Error::other), |e| e).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("larger than 9 bytes"), "{e}");
    }

    #[test]
    fn read_declared_refuses_a_length_other_than_declared_before_reading_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        // Longer and shorter than declared: the parser's error, or the check on what it
        // returns when it does not compare the lengths itself.
        for (content, msg) in [
            (vec![2u8, 1, 2, 3], "data section has 3 bytes, expected 2"),
            (vec![5u8, 1, 2, 3], "data section has 3 bytes, expected 5"),
        ] {
            std::fs::write(&p, &content).unwrap();
            let e = read_declared(&p, 4, 100, toy, |e| e.to_string()).unwrap_err();
            assert_eq!(e, msg);
            let e = read_declared(&p, 4, 100, |h, _| Ok(1 + u64::from(h[0])), |e| e).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidData);
            let want = format!(
                "the file has 4 bytes, its header declares {}",
                1 + content[0]
            );
            assert_eq!(e.to_string(), want);
        }
        // A sparse file of 8 GiB whose header declares 4 data bytes: only the head is read (a
        // read of the whole would take seconds and 8 GiB of memory).
        let big = 8u64 << 30;
        let mut f = File::create(&p).unwrap();
        std::io::Write::write_all(&mut f, &[4]).unwrap();
        f.set_len(big).unwrap();
        let mut head_len = 0;
        let e = read_declared(
            &p,
            16,
            u64::MAX,
            |head, len| {
                head_len = head.len();
                toy(head, len)
            },
            |e| e.to_string(),
        )
        .unwrap_err();
        assert_eq!(head_len, 16);
        assert_eq!(e, format!("data section has {} bytes, expected 4", big - 1));
        let e = read_declared(&p, 16, u64::MAX, |_, _| Ok(5), |e| e).unwrap_err();
        assert!(e.to_string().contains("its header declares 5"), "{e}");
    }

    #[test]
    fn read_declared_refuses_what_is_not_a_regular_file_before_parsing() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        let mut paths = vec![Path::new("/dev/zero"), dir.path()];
        if made.is_ok_and(|s| s.success()) {
            paths.push(fifo.as_path());
        }
        for p in paths {
            let e = read_declared(
                p,
                4,
                100,
                |_, _| -> Result<u64, Error> { panic!("parsed") },
                |e| e,
            )
            .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}", p.display());
        }
    }

    #[test]
    fn read_rest_refuses_a_file_that_grows_or_shrinks() {
        let file: &[u8] = b"cdef";
        assert_eq!(read_rest(file, b"ab".to_vec(), 6, 6).unwrap(), b"abcdef");
        // It grew: more bytes than declared, while reading the rest or already in the head.
        let e = read_rest(file, b"ab".to_vec(), 5, 6).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert!(
            e.to_string()
                .starts_with("the file has more than the 5 bytes its header declares"),
            "{e}"
        );
        let e = read_rest(file, b"abc".to_vec(), 2, 6).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        // It shrank.
        let e = read_rest(file, b"ab".to_vec(), 8, 8).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
        assert!(
            e.to_string().starts_with(
                "the file ended after 6 bytes, before the 8 bytes its header declares"
            ),
            "{e}"
        );
        // Over the limit: refused before reading.
        let e = read_rest(file, b"ab".to_vec(), 6, 5).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FileTooLarge);
    }
}

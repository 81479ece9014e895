//! IDX files (the MNIST format) and MNIST-style image + label pairs.
//!
//! IDX layout (all big-endian): two zero bytes, a type byte (`0x08` u8, `0x09` i8, `0x0B` i16,
//! `0x0C` i32, `0x0D` f32, `0x0E` f64), the number of dimensions `k >= 1`, `k` dimension sizes
//! (`u32`), then the values in C order. Images `(n, rows, cols)` become `n` samples of
//! `rows*cols` features (pixel `(r, c)` is feature `r*cols + c`); a label file is 1-D with `n`
//! entries. Files must be uncompressed (run `gunzip` on the `.gz` downloads).

use nalgebra::DMatrix;

use crate::dataset::{Dataset, Domain};
use crate::error::{Error, Result, at_offset};

/// A decoded IDX array: dimensions and values (C order) converted to `f64`.
#[derive(Debug, Clone, PartialEq)]
pub struct IdxArray {
    /// Dimension sizes.
    pub dims: Vec<usize>,
    /// Values in C order.
    pub values: Vec<f64>,
}

/// The largest IDX header: the magic number and 255 dimension sizes.
const MAX_HEADER_BYTES: u64 = 4 + 4 * 255;

/// The header of an IDX file.
struct IdxHeader {
    /// The type byte (`0x08` to `0x0E`).
    type_code: u8,
    /// Bytes per value.
    size: usize,
    /// Dimension sizes.
    dims: Vec<usize>,
    /// Byte offset of the data section (the end of the header).
    data_start: usize,
    /// Length of the data section, `product(dims) * size`.
    data_len: usize,
}

/// Parses the IDX header at the start of `bytes`, the first bytes (at least the first
/// [`MAX_HEADER_BYTES`], or all) of a file of `file_len` bytes, and checks that the data
/// section it declares is the rest of the file. `file` names the source in errors.
fn parse_header(bytes: &[u8], file_len: u64, file: &str) -> Result<IdxHeader> {
    if bytes.len() < 4 {
        return Err(at_offset(
            file,
            0,
            "truncated IDX magic number (expected 4 bytes)",
        ));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(at_offset(
            file,
            0,
            "IDX magic must start with two zero bytes (is the file still gzip-compressed?)",
        ));
    }
    let size = match bytes[2] {
        0x08 | 0x09 => 1,
        0x0B => 2,
        0x0C | 0x0D => 4,
        0x0E => 8,
        t => {
            return Err(at_offset(
                file,
                2,
                format!("unknown IDX type code 0x{t:02x} (expected 08, 09, 0B, 0C, 0D or 0E)"),
            ));
        }
    };
    let k = bytes[3] as usize;
    if k == 0 {
        return Err(at_offset(file, 3, "IDX array with zero dimensions"));
    }
    let hdr = 4 + 4 * k;
    if bytes.len() < hdr {
        return Err(at_offset(
            file,
            bytes.len(),
            format!("truncated header: {k} dimension sizes need {hdr} bytes"),
        ));
    }
    let dims: Vec<usize> = (0..k)
        .map(|i| {
            let o = 4 + 4 * i;
            u32::from_be_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]) as usize
        })
        .collect();
    let count = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .and_then(|c| c.checked_mul(size))
        .ok_or_else(|| at_offset(file, 4, "dimension product overflows"))?;
    let data_len = file_len.saturating_sub(hdr as u64);
    if data_len != count as u64 {
        return Err(at_offset(
            file,
            hdr,
            format!(
                "data section has {data_len} bytes, expected {count} (dims {dims:?}, {size} bytes \
                 per value)"
            ),
        ));
    }
    Ok(IdxHeader {
        type_code: bytes[2],
        size,
        dims,
        data_start: hdr,
        data_len: count,
    })
}

/// Decodes an IDX buffer. `file` names the source in errors.
///
/// # Errors
/// [`Error::Parse`] with the byte offset for a bad magic number, an unknown type code, zero
/// dimensions, a truncated header, or a data section whose length differs from
/// `product(dims) * itemsize`.
pub fn parse_idx(bytes: &[u8], file: &str) -> Result<IdxArray> {
    let IdxHeader {
        type_code: t,
        size,
        dims,
        data_start,
        data_len,
    } = parse_header(bytes, bytes.len() as u64, file)?;
    let values = bytes[data_start..data_start + data_len]
        .chunks_exact(size)
        .map(|c| match t {
            0x08 => c[0] as f64,
            0x09 => c[0] as i8 as f64,
            0x0B => i16::from_be_bytes([c[0], c[1]]) as f64,
            0x0C => i32::from_be_bytes([c[0], c[1], c[2], c[3]]) as f64,
            0x0D => f32::from_be_bytes([c[0], c[1], c[2], c[3]]) as f64,
            _ => f64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        })
        .collect();
    Ok(IdxArray { dims, values })
}

/// Options of [`parse_mnist`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MnistOptions {
    /// Keep only these labels (e.g. `Some(vec![0, 1])` for MNIST 0/1; needs a label file).
    pub keep_labels: Option<Vec<u32>>,
    /// Binarise with `x > threshold -> 1` on the raw values (e.g. `127.0` for MNIST bytes
    /// 0..255, i.e. intensity > 1/2; the papers do not state theirs). `None` keeps raw values as
    /// [`Domain::Real`].
    pub binarize_threshold: Option<f64>,
}

/// Builds a dataset from an IDX image buffer and an optional IDX label buffer.
///
/// # Errors
/// As [`parse_idx`] for each buffer; [`Error::Parse`] if the label file is not 1-D, its length
/// differs from the number of images, or a label is not a non-negative integer;
/// [`Error::InvalidArgument`] if `keep_labels` is set without labels; [`Error::Parse`] for
/// non-finite image values.
pub fn parse_mnist(
    images: &[u8],
    images_name: &str,
    labels: Option<(&[u8], &str)>,
    opts: &MnistOptions,
) -> Result<Dataset> {
    let img = parse_idx(images, images_name)?;
    let n = img.dims[0];
    let nf: usize = img.dims[1..].iter().product();
    if let Some(i) = img.values.iter().position(|v| !v.is_finite()) {
        return Err(at_offset(
            images_name,
            0,
            format!("value {i} is not finite"),
        ));
    }
    let mut ds = Dataset::new(DMatrix::from_vec(nf, n, img.values), Domain::Real)?;
    if let Some((lb, lname)) = labels {
        let l = parse_idx(lb, lname)?;
        if l.dims.len() != 1 || l.dims[0] != n {
            return Err(at_offset(
                lname,
                3,
                format!(
                    "label file has dims {:?}, expected [{n}] (one label per image)",
                    l.dims
                ),
            ));
        }
        let hdr = 8;
        let mut out = Vec::with_capacity(n);
        for (i, &v) in l.values.iter().enumerate() {
            if !(v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64) {
                return Err(at_offset(
                    lname,
                    hdr + i,
                    format!("label {v} is not a non-negative integer"),
                ));
            }
            out.push(v as u32);
        }
        ds = ds.with_labels(out)?;
    }
    if let Some(keep) = &opts.keep_labels {
        if ds.labels().is_none() {
            return Err(Error::InvalidArgument(
                "label filtering needs a label file".into(),
            ));
        }
        ds = ds.filter_labels(keep)?;
    }
    if let Some(t) = opts.binarize_threshold {
        ds = ds.binarize(t);
    }
    Ok(ds)
}

/// Reads an IDX image file and an optional IDX label file (see [`parse_mnist`]). Each file is
/// read in two steps: first its header (at most 1024 bytes: the magic number and up to 255
/// dimension sizes); then, if the file's length is the header's plus the
/// `product(dims) * itemsize` bytes of data it declares, exactly the rest. A file of another
/// length is refused without its data being read.
///
/// # Errors
/// [`Error::Io`] if a file cannot be read, is not a regular file (a FIFO, a device, a
/// directory), is larger than [`ebm_core::input::MAX_BINARY_BYTES`], or yields more or fewer
/// bytes than its length said (it changed while read); otherwise as [`parse_mnist`].
pub fn load_mnist(
    images: impl AsRef<std::path::Path>,
    labels: Option<&std::path::Path>,
    opts: &MnistOptions,
) -> Result<Dataset> {
    let read = |p: &std::path::Path| {
        let name = p.display().to_string();
        let bytes = super::read_declared(p, MAX_HEADER_BYTES, |head, len| {
            let h = parse_header(head, len, &name)?;
            Ok((h.data_start + h.data_len) as u64)
        })?;
        Ok::<_, Error>((bytes, name))
    };
    let (ib, iname) = read(images.as_ref())?;
    let lb = labels.map(read).transpose()?;
    parse_mnist(
        &ib,
        &iname,
        lb.as_ref().map(|(b, n)| (b.as_slice(), n.as_str())),
        opts,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn encode_u8(dims: &[u32], values: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0, 0x08, dims.len() as u8];
        for d in dims {
            b.extend_from_slice(&d.to_be_bytes());
        }
        b.extend_from_slice(values);
        b
    }

    #[test]
    fn mnist_like_images_labels_filter_binarize() {
        // three 2x2 images with labels 0, 7, 1
        let img = encode_u8(&[3, 2, 2], &[0, 255, 128, 127, 9, 9, 9, 9, 200, 0, 0, 200]);
        let lab = encode_u8(&[3], &[0, 7, 1]);
        let opts = MnistOptions {
            keep_labels: Some(vec![0, 1]),
            binarize_threshold: Some(127.0),
        };
        let d = parse_mnist(&img, "img", Some((&lab, "lab")), &opts).unwrap();
        assert_eq!(d.labels().unwrap(), &[0, 1]);
        assert_eq!(d.domain(), Domain::Binary01);
        assert_eq!(d.sample(0), &[0.0, 1.0, 1.0, 0.0]);
        assert_eq!(d.sample(1), &[1.0, 0.0, 0.0, 1.0]);
        let raw = parse_mnist(&img, "img", None, &MnistOptions::default()).unwrap();
        assert_eq!(raw.sample(0), &[0.0, 255.0, 128.0, 127.0]);
    }

    #[test]
    fn other_types_big_endian() {
        let mut b = vec![0, 0, 0x0B, 1, 0, 0, 0, 2];
        b.extend_from_slice(&(-3i16).to_be_bytes());
        b.extend_from_slice(&(300i16).to_be_bytes());
        assert_eq!(parse_idx(&b, "x").unwrap().values, vec![-3.0, 300.0]);
        let mut f = vec![0, 0, 0x0E, 1, 0, 0, 0, 1];
        f.extend_from_slice(&1.5f64.to_be_bytes());
        assert_eq!(parse_idx(&f, "x").unwrap().values, vec![1.5]);
    }

    #[test]
    fn errors() {
        let e = parse_idx(&[0x1f, 0x8b, 8, 0], "t.gz")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.gz: byte offset 0") && e.contains("gzip"),
            "{e}"
        );
        let e = parse_idx(&[0, 0, 7, 1, 0, 0, 0, 1, 5], "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("byte offset 2") && e.contains("0x07"), "{e}");
        let e = parse_idx(&encode_u8(&[2, 2], &[1, 2, 3]), "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("byte offset 12") && e.contains("expected 4"),
            "{e}"
        );
        let img = encode_u8(&[2, 1], &[1, 2]);
        let lab = encode_u8(&[3], &[0, 1, 2]);
        let e = parse_mnist(&img, "i", Some((&lab, "l")), &MnistOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("l: ") && e.contains("expected [2]"), "{e}");
        let keep = MnistOptions {
            keep_labels: Some(vec![0]),
            binarize_threshold: None,
        };
        assert!(parse_mnist(&img, "i", None, &keep).is_err());
    }

    #[test]
    fn load_mnist_refuses_data_sections_longer_than_declared_reading_only_the_headers() {
        use crate::loaders::npy::tests::sparse_file;
        use ebm_core::input::MAX_BINARY_BYTES;
        let dir = tempfile::tempdir().unwrap();
        let (ip, lp) = (dir.path().join("images"), dir.path().join("labels"));
        let (iname, lname) = (ip.display().to_string(), lp.display().to_string());
        let images = encode_u8(&[2, 2, 2], &[0, 1, 2, 3, 4, 5, 6, 7]);
        let labels = encode_u8(&[2], &[3, 4]);
        let opts = MnistOptions::default();
        // Beyond MAX_BINARY_BYTES (a whole-file read refuses it by its size alone, with another
        // message), then 8 GiB: each header declares 8 or 2 bytes of data.
        for len in [MAX_BINARY_BYTES + (1 << 30), 8 << 30] {
            sparse_file(&ip, &images[..16], len);
            std::fs::write(&lp, &labels).unwrap();
            let e = load_mnist(&ip, Some(&lp), &opts).unwrap_err();
            assert!(matches!(e, Error::Parse { .. }), "{e}");
            let want = format!(
                "{iname}: byte offset 16: data section has {} bytes, expected 8 (dims [2, 2, 2], 1 \
                 bytes per value)",
                len - 16
            );
            assert_eq!(e.to_string(), want);
            std::fs::write(&ip, &images).unwrap();
            sparse_file(&lp, &labels[..8], len);
            let e = load_mnist(&ip, Some(&lp), &opts).unwrap_err().to_string();
            let want = format!(
                "{lname}: byte offset 8: data section has {} bytes, expected 2 (dims [2], 1 bytes \
                 per value)",
                len - 8
            );
            assert_eq!(e, want);
        }
        // The same message as the parser's on the same bytes, for a longer and a shorter file.
        for b in [[&images[..], &[9]].concat(), images[..23].to_vec()] {
            std::fs::write(&ip, &b).unwrap();
            let e = load_mnist(&ip, None, &opts).unwrap_err().to_string();
            assert_eq!(e, parse_idx(&b, &iname).unwrap_err().to_string());
            assert!(e.contains("data section has"), "{e}");
        }
    }

    #[test]
    fn load_mnist_reads_files_larger_than_the_header_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (ip, lp) = (dir.path().join("images"), dir.path().join("labels"));
        // three 20x20 images (1200 bytes of data, more than the 1024-byte header read)
        let pixels: Vec<u8> = (0..1200u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&ip, encode_u8(&[3, 20, 20], &pixels)).unwrap();
        std::fs::write(&lp, encode_u8(&[3], &[5, 0, 9])).unwrap();
        let d = load_mnist(&ip, Some(&lp), &MnistOptions::default()).unwrap();
        assert_eq!((d.n_samples(), d.n_features()), (3, 400));
        assert_eq!(d.labels().unwrap(), &[5, 0, 9]);
        assert_eq!(d.sample(2)[399], f64::from(pixels[1199]));
        let e = load_mnist("/dev/zero", None, &MnistOptions::default()).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }

    proptest! {
        #[test]
        fn roundtrip(n in 0u32..5, r in 1u32..4, c in 1u32..4, seed in any::<u8>()) {
            let vals: Vec<u8> = (0..n * r * c).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
            let a = parse_idx(&encode_u8(&[n, r, c], &vals), "p").unwrap();
            prop_assert_eq!(a.dims, vec![n as usize, r as usize, c as usize]);
            prop_assert_eq!(a.values, vals.iter().map(|&v| v as f64).collect::<Vec<_>>());
        }

        #[test]
        fn never_panics(bytes in prop::collection::vec(any::<u8>(), 0..100)) {
            let _ = parse_idx(&bytes, "fuzz");
            let _ = parse_mnist(&bytes, "fuzz", Some((&bytes, "fuzz")), &MnistOptions::default());
            let mut b = vec![0, 0];
            b.extend_from_slice(&bytes);
            let _ = parse_idx(&b, "fuzz");
        }
    }
}

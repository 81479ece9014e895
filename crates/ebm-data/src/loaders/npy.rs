//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0).
//!
//! Layout: magic `\x93NUMPY`, major and minor version bytes, the header length (`u16` LE for
//! v1, `u32` LE for v2/v3), then an ASCII (v3: UTF-8) Python dict literal
//! `{'descr': '<f8', 'fortran_order': False, 'shape': (n, d), }`, then the raw data.
//!
//! Supported `descr`: byte orders `<` (little), `>` (big), `|` (not applicable), `=` (native, read
//! as little-endian); types `f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1` (`b1`: bool, 0 or 1). Both C and
//! Fortran order.
//!
//! Mapping to a [`Dataset`] (domain [`Domain::Real`]; use [`Dataset::reinterpret`] or
//! [`Dataset::binarize`]): axis 0 indexes samples, the remaining axes are flattened in C order into
//! features (shape `(n, 28, 28)` gives 784 features); shape `(n,)` gives `n` samples of one
//! feature; shape `()` one sample of one feature.

use nalgebra::DMatrix;

use crate::dataset::{Dataset, Domain};
use crate::error::{Error, Result, at_offset};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Element type of an `.npy` array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpyType {
    /// `f4`
    F32,
    /// `f8`
    F64,
    /// `i1`
    I8,
    /// `i2`
    I16,
    /// `i4`
    I32,
    /// `i8`
    I64,
    /// `u1`
    U8,
    /// `u2`
    U16,
    /// `u4`
    U32,
    /// `u8`
    U64,
    /// `b1` (bool)
    Bool,
}

impl NpyType {
    /// Size in bytes of one element.
    pub fn size(self) -> usize {
        match self {
            NpyType::I8 | NpyType::U8 | NpyType::Bool => 1,
            NpyType::I16 | NpyType::U16 => 2,
            NpyType::F32 | NpyType::I32 | NpyType::U32 => 4,
            NpyType::F64 | NpyType::I64 | NpyType::U64 => 8,
        }
    }
    /// The two-character NumPy code (`"f8"`, `"b1"`, ...).
    pub fn code(self) -> &'static str {
        match self {
            NpyType::F32 => "f4",
            NpyType::F64 => "f8",
            NpyType::I8 => "i1",
            NpyType::I16 => "i2",
            NpyType::I32 => "i4",
            NpyType::I64 => "i8",
            NpyType::U8 => "u1",
            NpyType::U16 => "u2",
            NpyType::U32 => "u4",
            NpyType::U64 => "u8",
            NpyType::Bool => "b1",
        }
    }
    fn from_code(code: &str) -> Option<Self> {
        Some(match code {
            "f4" => NpyType::F32,
            "f8" => NpyType::F64,
            "i1" => NpyType::I8,
            "i2" => NpyType::I16,
            "i4" => NpyType::I32,
            "i8" => NpyType::I64,
            "u1" => NpyType::U8,
            "u2" => NpyType::U16,
            "u4" => NpyType::U32,
            "u8" => NpyType::U64,
            "b1" | "?" => NpyType::Bool,
            _ => return None,
        })
    }
}

/// A decoded `.npy` array: shape, storage order and values in **C order**.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// The array shape.
    pub shape: Vec<usize>,
    /// Whether the file stored the data in Fortran order (values here are always C order).
    pub fortran_order: bool,
    /// The element type of the file.
    pub dtype: NpyType,
    /// Whether the file was big-endian.
    pub big_endian: bool,
    /// Values in C (row-major) order, converted to `f64` (64-bit integers beyond 2^53 round).
    pub values: Vec<f64>,
}

struct HeaderParser<'a> {
    s: &'a [u8],
    pos: usize,
    base: usize,
    file: &'a str,
}

enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

impl HeaderParser<'_> {
    fn err(&self, reason: impl Into<String>) -> Error {
        at_offset(self.file, self.base + self.pos, reason)
    }
    fn ws(&mut self) {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn expect(&mut self, c: u8) -> Result<()> {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(format!(
                "expected '{}' in the header dict, found {}",
                c as char,
                self.describe()
            )))
        }
    }
    fn describe(&self) -> String {
        match self.peek() {
            Some(c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(c) => format!("byte 0x{c:02x}"),
            None => "end of header".into(),
        }
    }
    fn string(&mut self) -> Result<String> {
        self.ws();
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(self.err(format!(
                    "expected a quoted string, found {}",
                    self.describe()
                )));
            }
        };
        self.pos += 1;
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos] != q {
            self.pos += 1;
        }
        if self.pos >= self.s.len() {
            return Err(self.err("unterminated string in header"));
        }
        let out = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        self.pos += 1;
        Ok(out)
    }
    fn value(&mut self) -> Result<Value> {
        self.ws();
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Value::Str(self.string()?)),
            Some(b'T') if self.s[self.pos..].starts_with(b"True") => {
                self.pos += 4;
                Ok(Value::Bool(true))
            }
            Some(b'F') if self.s[self.pos..].starts_with(b"False") => {
                self.pos += 5;
                Ok(Value::Bool(false))
            }
            Some(b'(') => {
                self.pos += 1;
                let mut dims = Vec::new();
                loop {
                    self.ws();
                    match self.peek() {
                        Some(b')') => {
                            self.pos += 1;
                            break;
                        }
                        Some(c) if c.is_ascii_digit() => {
                            let start = self.pos;
                            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                                self.pos += 1;
                            }
                            let txt = std::str::from_utf8(&self.s[start..self.pos])
                                .expect("ASCII digits");
                            let d: usize = txt.parse().map_err(|_| {
                                self.err(format!("shape entry {txt} does not fit in usize"))
                            })?;
                            dims.push(d);
                            self.ws();
                            match self.peek() {
                                Some(b',') => self.pos += 1,
                                Some(b')') => {}
                                _ => {
                                    return Err(self.err(format!(
                                        "expected ',' or ')' in shape, found {}",
                                        self.describe()
                                    )));
                                }
                            }
                        }
                        _ => {
                            return Err(self.err(format!(
                                "expected a non-negative integer or ')' in shape, found {}",
                                self.describe()
                            )));
                        }
                    }
                }
                Ok(Value::Tuple(dims))
            }
            _ => Err(self.err(format!(
                "expected a string, True/False or a shape tuple, found {} (structured dtypes are not supported)",
                self.describe()
            ))),
        }
    }
}

fn read_f64(b: &[u8], t: NpyType, big: bool) -> f64 {
    macro_rules! conv {
        ($ty:ty, $n:expr) => {{
            let mut a = [0u8; $n];
            a.copy_from_slice(b);
            (if big {
                <$ty>::from_be_bytes(a)
            } else {
                <$ty>::from_le_bytes(a)
            }) as f64
        }};
    }
    match t {
        NpyType::F32 => conv!(f32, 4),
        NpyType::F64 => conv!(f64, 8),
        NpyType::I8 => b[0] as i8 as f64,
        NpyType::U8 => b[0] as f64,
        NpyType::Bool => b[0] as f64,
        NpyType::I16 => conv!(i16, 2),
        NpyType::U16 => conv!(u16, 2),
        NpyType::I32 => conv!(i32, 4),
        NpyType::U32 => conv!(u32, 4),
        NpyType::I64 => conv!(i64, 8),
        NpyType::U64 => conv!(u64, 8),
    }
}

/// The most bytes [`load_npy`] reads before the end of an `.npy` header (magic string,
/// version, header length and dict): 1 MiB. NumPy writes headers of a few hundred bytes, and
/// its own `np.load` refuses headers over 10 000 bytes by default; a file whose header ends
/// later is refused before its data is read.
pub const MAX_HEADER_BYTES: u64 = 1 << 20;

/// The header of an `.npy` file.
struct NpyHeader {
    shape: Vec<usize>,
    fortran_order: bool,
    dtype: NpyType,
    big_endian: bool,
    /// Byte offset of the data section (the end of the header).
    data_start: usize,
    /// Length of the data section, `product(shape) * itemsize`.
    data_len: usize,
}

/// Parses the `.npy` header at the start of `bytes`, the first bytes (or all) of a file of
/// `file_len` bytes, and checks that the data section it declares is the rest of the file.
/// `file` names the source in errors.
fn parse_header(bytes: &[u8], file_len: u64, file: &str) -> Result<NpyHeader> {
    if bytes.len() < 8 || &bytes[..6] != MAGIC {
        return Err(at_offset(file, 0, "expected the magic string \\x93NUMPY"));
    }
    let major = bytes[6];
    let (hlen, hstart) = match major {
        1 => {
            if bytes.len() < 10 {
                return Err(at_offset(
                    file,
                    8,
                    "truncated header length (expected 2 bytes)",
                ));
            }
            (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize)
        }
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(at_offset(
                    file,
                    8,
                    "truncated header length (expected 4 bytes)",
                ));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => {
            return Err(at_offset(
                file,
                6,
                format!("unsupported format version {v} (expected 1, 2 or 3)"),
            ));
        }
    };
    let hend = hstart
        .checked_add(hlen)
        .filter(|&e| e as u64 <= file_len)
        .ok_or_else(|| {
            at_offset(
                file,
                hstart,
                format!("header of {hlen} bytes runs past the end of the file ({file_len} bytes)"),
            )
        })?;
    if hend > bytes.len() {
        return Err(at_offset(
            file,
            hstart,
            format!(
                "header of {hlen} bytes ends at byte {hend}, past the first {} bytes, the most \
                 read for an .npy header",
                bytes.len()
            ),
        ));
    }
    let mut p = HeaderParser {
        s: &bytes[hstart..hend],
        pos: 0,
        base: hstart,
        file,
    };
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.ws();
        if p.peek() == Some(b'}') {
            break;
        }
        let key_pos = p.pos;
        let key = p.string()?;
        p.expect(b':')?;
        let v = p.value()?;
        match (key.as_str(), v) {
            ("descr", Value::Str(s)) => descr = Some((s, key_pos)),
            ("fortran_order", Value::Bool(b)) => fortran = Some(b),
            ("shape", Value::Tuple(t)) => shape = Some(t),
            (k @ ("descr" | "fortran_order" | "shape"), _) => {
                return Err(at_offset(
                    file,
                    hstart + key_pos,
                    format!("header key '{k}' has a value of the wrong type"),
                ));
            }
            (k, _) => {
                return Err(at_offset(
                    file,
                    hstart + key_pos,
                    format!("unexpected header key '{k}'"),
                ));
            }
        }
        p.ws();
        match p.peek() {
            Some(b',') => p.pos += 1,
            Some(b'}') => {}
            _ => return Err(p.err(format!("expected ',' or '}}', found {}", p.describe()))),
        }
    }
    let missing = |k: &str| at_offset(file, hstart, format!("header has no '{k}' key"));
    let (descr, dpos) = descr.ok_or_else(|| missing("descr"))?;
    let fortran_order = fortran.ok_or_else(|| missing("fortran_order"))?;
    let shape = shape.ok_or_else(|| missing("shape"))?;
    let bad_descr = || {
        at_offset(
            file,
            hstart + dpos,
            format!(
                "unsupported descr '{descr}' (expected one of <,>,|,= followed by f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)"
            ),
        )
    };
    let (order, code) = match descr.as_bytes().first() {
        Some(b'<' | b'>' | b'|' | b'=') => descr.split_at(1),
        _ => return Err(bad_descr()),
    };
    let dtype = NpyType::from_code(code).ok_or_else(bad_descr)?;
    let big_endian = order == ">";
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| at_offset(file, hstart, "shape product overflows"))?;
    let nbytes = count
        .checked_mul(dtype.size())
        .ok_or_else(|| at_offset(file, hstart, "data size overflows"))?;
    let data_len = file_len - hend as u64;
    if data_len != nbytes as u64 {
        return Err(at_offset(
            file,
            hend,
            format!(
                "data section has {data_len} bytes, expected {nbytes} (shape {shape:?}, {} bytes \
                 per element)",
                dtype.size()
            ),
        ));
    }
    Ok(NpyHeader {
        shape,
        fortran_order,
        dtype,
        big_endian,
        data_start: hend,
        data_len: nbytes,
    })
}

/// Decodes an `.npy` byte buffer. `file` names the source in errors.
///
/// # Errors
/// [`Error::Parse`] with the byte offset for a bad magic string, an unsupported version, a
/// truncated or malformed header, a missing key, an unsupported dtype, a bool that is not 0/1, or a
/// data section whose length is not `product(shape) * itemsize`.
pub fn parse_npy_array(bytes: &[u8], file: &str) -> Result<NpyArray> {
    let NpyHeader {
        shape,
        fortran_order,
        dtype,
        big_endian,
        data_start: hend,
        data_len,
    } = parse_header(bytes, bytes.len() as u64, file)?;
    let count = shape.iter().product();
    let data = &bytes[hend..hend + data_len];
    let raw: Vec<f64> = data
        .chunks_exact(dtype.size())
        .map(|c| read_f64(c, dtype, big_endian))
        .collect();
    if let Some(i) = raw
        .iter()
        .position(|&v| v > 1.0)
        .filter(|_| dtype == NpyType::Bool)
    {
        return Err(at_offset(
            file,
            hend + i,
            format!("bool element is {}, expected 0 or 1", raw[i]),
        ));
    }
    let values = if fortran_order && shape.len() > 1 {
        // element with multi-index (i_0..i_k) is at sum_j i_j * prod_{l<j} n_l in the file
        let mut out = vec![0.0; count];
        let mut idx = vec![0usize; shape.len()];
        for v in out.iter_mut() {
            let mut f = 0;
            let mut stride = 1;
            for (i, n) in idx.iter().zip(&shape) {
                f += i * stride;
                stride *= n;
            }
            *v = raw[f];
            // increment the C-order multi-index
            for d in (0..shape.len()).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    } else {
        raw
    };
    Ok(NpyArray {
        shape,
        fortran_order,
        dtype,
        big_endian,
        values,
    })
}

/// Decodes an `.npy` buffer into a [`Domain::Real`] dataset (module documentation for the
/// shape mapping).
///
/// # Errors
/// As [`parse_npy_array`], and [`Error::Parse`] if a value is not finite.
pub fn parse_npy(bytes: &[u8], file: &str) -> Result<Dataset> {
    let a = parse_npy_array(bytes, file)?;
    let (ns, nf) = match a.shape.as_slice() {
        [] => (1, 1),
        [n] => (*n, 1),
        [n, rest @ ..] => (*n, rest.iter().product()),
    };
    if let Some(i) = a.values.iter().position(|v| !v.is_finite()) {
        return Err(at_offset(
            file,
            0,
            format!(
                "element {i} (C order) is {}, expected a finite number",
                a.values[i]
            ),
        ));
    }
    // C order: sample j's features are contiguous = column j of an nf x ns column-major matrix
    let data = DMatrix::from_vec(nf, ns, a.values);
    Dataset::new(data, Domain::Real)
}

/// Reads an `.npy` file (see [`parse_npy`]): first its header, at most the first
/// [`MAX_HEADER_BYTES`] bytes; then, if the file's length is the header's plus the
/// `product(shape) * itemsize` bytes of data it declares, exactly the rest. A file of
/// another length (50 GB of data after a header declaring 10 values, say) is refused without
/// its data being read.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, is not a regular file (a FIFO, a device, a
/// directory), is larger than [`ebm_core::input::MAX_BINARY_BYTES`], or yields more or fewer
/// bytes than its length said (it changed while read); [`Error::Parse`] for a header that
/// ends past [`MAX_HEADER_BYTES`]; otherwise as [`parse_npy`].
pub fn load_npy(path: impl AsRef<std::path::Path>) -> Result<Dataset> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let bytes = super::read_declared(path, MAX_HEADER_BYTES, |head, len| {
        let h = parse_header(head, len, &name)?;
        Ok((h.data_start + h.data_len) as u64)
    })?;
    parse_npy(&bytes, &name)
}

/// Encodes a data matrix (`n_features x n_samples`) as a version-1 `.npy` buffer of shape
/// `(n_samples, n_features)`, `'<f8'`, C order (the header is padded to a multiple of 64 bytes).
pub fn to_npy_bytes(data: &DMatrix<f64>) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}",
        data.ncols(),
        data.nrows()
    );
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = Vec::with_capacity(10 + header.len() + 8 * data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(&header);
    for v in data.iter() {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Writes a dataset's matrix as `.npy` (see [`to_npy_bytes`]).
///
/// # Errors
/// [`Error::Io`] if the file cannot be written.
pub fn save_npy(path: impl AsRef<std::path::Path>, ds: &Dataset) -> Result<()> {
    let path = path.as_ref();
    std::fs::write(path, to_npy_bytes(ds.data())).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Test encoder covering every version, byte order, dtype and storage order.
    pub(crate) fn encode(
        shape: &[usize],
        c_values: &[f64],
        t: NpyType,
        big: bool,
        fortran: bool,
        version: u8,
    ) -> Vec<u8> {
        let shape_txt = match shape.len() {
            1 => format!("({},)", shape[0]),
            _ => format!(
                "({})",
                shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let order = if t.size() == 1 {
            '|'
        } else if big {
            '>'
        } else {
            '<'
        };
        let fo = if fortran { "True" } else { "False" };
        let mut header = format!(
            "{{'descr': '{order}{}', 'fortran_order': {fo}, 'shape': {shape_txt}, }}\n",
            t.code()
        )
        .into_bytes();
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[version, 0]);
        if version == 1 {
            out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        }
        out.append(&mut header);
        // storage order
        let n: usize = shape.iter().product();
        let mut storage = vec![0.0; n];
        if fortran && shape.len() > 1 {
            let mut idx = vec![0usize; shape.len()];
            for &v in c_values {
                let (mut f, mut stride) = (0, 1);
                for (i, d) in idx.iter().zip(shape) {
                    f += i * stride;
                    stride *= d;
                }
                storage[f] = v;
                for d in (0..shape.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        } else {
            storage.copy_from_slice(c_values);
        }
        for v in storage {
            macro_rules! put {
                ($x:expr) => {
                    if big {
                        out.extend_from_slice(&$x.to_be_bytes())
                    } else {
                        out.extend_from_slice(&$x.to_le_bytes())
                    }
                };
            }
            match t {
                NpyType::F32 => put!(v as f32),
                NpyType::F64 => put!(v),
                NpyType::I8 => out.push(v as i8 as u8),
                NpyType::U8 | NpyType::Bool => out.push(v as u8),
                NpyType::I16 => put!(v as i16),
                NpyType::U16 => put!(v as u16),
                NpyType::I32 => put!(v as i32),
                NpyType::U32 => put!(v as u32),
                NpyType::I64 => put!(v as i64),
                NpyType::U64 => put!(v as u64),
            }
        }
        out
    }

    const TYPES: [NpyType; 11] = [
        NpyType::F32,
        NpyType::F64,
        NpyType::I8,
        NpyType::I16,
        NpyType::I32,
        NpyType::I64,
        NpyType::U8,
        NpyType::U16,
        NpyType::U32,
        NpyType::U64,
        NpyType::Bool,
    ];

    #[test]
    fn fortran_and_c_order_agree() {
        // a 2 x 3 array [[1,2,3],[4,5,6]]
        let vals = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        for fortran in [false, true] {
            let b = encode(&[2, 3], &vals, NpyType::I32, true, fortran, 1);
            let ds = parse_npy(&b, "x.npy").unwrap();
            assert_eq!((ds.n_samples(), ds.n_features()), (2, 3));
            assert_eq!(ds.sample(1), &[4.0, 5.0, 6.0]);
        }
        // Fortran storage of [[1,2,3],[4,5,6]] is 1,4,2,5,3,6
        let b = encode(&[2, 3], &vals, NpyType::U8, false, true, 2);
        assert_eq!(&b[b.len() - 6..], &[1, 4, 2, 5, 3, 6]);
    }

    #[test]
    fn writer_roundtrip_and_alignment() {
        let m = DMatrix::from_fn(3, 4, |i, j| i as f64 - 0.5 * j as f64);
        let b = to_npy_bytes(&m);
        let hl = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + hl) % 64, 0);
        assert_eq!(parse_npy(&b, "m").unwrap().data(), &m);
    }

    #[test]
    fn shapes_1d_0d_3d() {
        let b = encode(&[4], &[1.0, 2.0, 3.0, 4.0], NpyType::F64, false, false, 3);
        let d = parse_npy(&b, "v").unwrap();
        assert_eq!((d.n_features(), d.n_samples()), (1, 4));
        let vals: Vec<f64> = (0..12).map(f64::from).collect();
        let b = encode(&[2, 3, 2], &vals, NpyType::I16, true, true, 1);
        let d = parse_npy(&b, "t").unwrap();
        assert_eq!((d.n_features(), d.n_samples()), (6, 2));
        assert_eq!(d.sample(1), &[6.0, 7.0, 8.0, 9.0, 10.0, 11.0]);
    }

    #[test]
    fn errors_name_file_and_offset() {
        let good = encode(
            &[2, 2],
            &[1.0, 0.0, 0.0, 1.0],
            NpyType::F64,
            false,
            false,
            1,
        );
        let e = parse_npy(&good[..good.len() - 1], "a.npy")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a.npy") && e.contains("byte offset") && e.contains("expected 32"),
            "{e}"
        );
        let e = parse_npy(b"NUMPY", "b.npy").unwrap_err().to_string();
        assert!(
            e.contains("b.npy: byte offset 0") && e.contains("magic"),
            "{e}"
        );
        let mut v4 = good.clone();
        v4[6] = 4;
        assert!(
            parse_npy(&v4, "c")
                .unwrap_err()
                .to_string()
                .contains("version 4")
        );
        let replace = |from: &[u8], to: &[u8]| {
            let mut b = good.clone();
            let at = b.windows(from.len()).position(|w| w == from).unwrap();
            b[at..at + from.len()].copy_from_slice(to);
            b
        };
        let bad = replace(b"<f8", b"<c8");
        let e = parse_npy(&bad, "d").unwrap_err().to_string();
        assert!(e.contains("unsupported descr '<c8'"), "{e}");
        let bad = replace(b"'shape'", b"'shapf'");
        assert!(
            parse_npy(&bad, "e")
                .unwrap_err()
                .to_string()
                .contains("unexpected header key 'shapf'")
        );
        let bool2 = encode(&[2], &[1.0, 2.0], NpyType::Bool, false, false, 1);
        assert!(
            parse_npy(&bool2, "f")
                .unwrap_err()
                .to_string()
                .contains("expected 0 or 1")
        );
    }

    /// A version-1 `.npy` header with the dict `dict`, without data.
    fn header_v1(dict: &str) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out
    }

    /// Writes `bytes` to `path` and extends the file to `len` bytes without writing them (a
    /// sparse file: it takes no room, and reading it whole would take seconds and `len` bytes
    /// of memory).
    pub(crate) fn sparse_file(path: &std::path::Path, bytes: &[u8], len: u64) {
        let mut f = std::fs::File::create(path).unwrap();
        std::io::Write::write_all(&mut f, bytes).unwrap();
        f.set_len(len).unwrap();
    }

    #[test]
    fn load_npy_refuses_a_data_section_longer_than_declared_reading_only_the_header() {
        use ebm_core::input::MAX_BINARY_BYTES;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.npy");
        let name = p.display().to_string();
        let head = header_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }\n");
        let hend = head.len() as u64;
        // Beyond MAX_BINARY_BYTES (a whole-file read refuses it by its size alone, with another
        // message), then 8 GiB: the header declares 4 values, which is all that counts.
        for len in [MAX_BINARY_BYTES + (1 << 30), 8 << 30] {
            sparse_file(&p, &head, len);
            let e = load_npy(&p).unwrap_err();
            assert!(matches!(e, Error::Parse { .. }), "{e}");
            let want = format!(
                "{name}: byte offset {hend}: data section has {} bytes, expected 32 (shape [4], 8 \
                 bytes per element)",
                len - hend
            );
            assert_eq!(e.to_string(), want);
        }
        // The same message as the parser's on the same bytes, for a longer and a shorter file.
        for data_len in [40, 24] {
            let mut b = head.clone();
            b.resize(head.len() + data_len, 0);
            std::fs::write(&p, &b).unwrap();
            let e = load_npy(&p).unwrap_err().to_string();
            assert_eq!(e, parse_npy(&b, &name).unwrap_err().to_string());
            assert!(
                e.contains(&format!("data section has {data_len} bytes")),
                "{e}"
            );
        }
        // A header declaring more than MAX_BINARY_BYTES, matching the file's length: refused by
        // the cap, still without reading the data.
        let n = MAX_BINARY_BYTES / 8 + 1;
        let head = header_v1(&format!(
            "{{'descr': '<f8', 'fortran_order': False, 'shape': ({n},), }}\n"
        ));
        sparse_file(&p, &head, head.len() as u64 + 8 * n);
        let e = load_npy(&p).unwrap_err();
        assert!(
            matches!(&e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::FileTooLarge),
            "{e}"
        );
    }

    #[test]
    fn load_npy_refuses_a_header_larger_than_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.npy");
        let dict = format!(
            "{{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }}{}\n",
            " ".repeat(2 << 20)
        );
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[2, 0]);
        b.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        b.extend_from_slice(dict.as_bytes());
        b.extend_from_slice(&[1, 0]);
        std::fs::write(&p, &b).unwrap();
        // In memory it is a valid array; from a file its header is past the cap.
        assert_eq!(parse_npy(&b, "m").unwrap().n_samples(), 2);
        let e = load_npy(&p).unwrap_err().to_string();
        let want = format!(
            "byte offset 12: header of {} bytes ends at byte {}, past the first {MAX_HEADER_BYTES} \
             bytes, the most read for an .npy header",
            dict.len(),
            12 + dict.len()
        );
        assert!(e.ends_with(&want), "{e}");
    }

    #[test]
    fn load_npy_reads_small_and_large_files_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.npy");
        // 2 x 3 values, and 2 x 70 000 (1.1 MB, more than the header read).
        for n in [3, 70_000] {
            let m = DMatrix::from_fn(2, n, |i, j| i as f64 - 0.25 * j as f64);
            let ds = Dataset::new(m.clone(), Domain::Real).unwrap();
            save_npy(&p, &ds).unwrap();
            assert_eq!(load_npy(&p).unwrap().data(), &m);
        }
        let e = load_npy("/dev/zero").unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }

    fn arb_array() -> impl Strategy<Value = (Vec<usize>, Vec<f64>, usize, bool, bool, u8)> {
        (
            prop::collection::vec(1usize..4, 1..4),
            0usize..TYPES.len(),
            any::<bool>(),
            any::<bool>(),
            1u8..4,
        )
            .prop_flat_map(|(shape, t, big, fortran, version)| {
                let n: usize = shape.iter().product();
                (
                    Just(shape),
                    prop::collection::vec(0u8..2, n),
                    prop::collection::vec(-100i32..100, n),
                    Just(t),
                    Just(big),
                    Just(fortran),
                    Just(version),
                )
                    .prop_map(|(shape, bits, ints, t, big, fortran, version)| {
                        let ty = TYPES[t];
                        let vals = match ty {
                            NpyType::Bool => bits.iter().map(|&b| b as f64).collect(),
                            NpyType::U8 | NpyType::U16 | NpyType::U32 | NpyType::U64 => {
                                ints.iter().map(|&i| i.unsigned_abs() as f64).collect()
                            }
                            NpyType::F32 | NpyType::F64 => {
                                ints.iter().map(|&i| i as f64 * 0.25).collect()
                            }
                            _ => ints.iter().map(|&i| i as f64).collect(),
                        };
                        (shape, vals, t, big, fortran, version)
                    })
            })
    }

    proptest! {
        #[test]
        fn roundtrip_every_dtype_order_version((shape, vals, t, big, fortran, version) in arb_array()) {
            let ty = TYPES[t];
            let b = encode(&shape, &vals, ty, big, fortran, version);
            let a = parse_npy_array(&b, "p").unwrap();
            prop_assert_eq!(&a.shape, &shape);
            prop_assert_eq!(a.dtype, ty);
            prop_assert_eq!(&a.values, &vals);
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_npy(&bytes, "fuzz");
            let mut with_magic = MAGIC.to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = parse_npy(&with_magic, "fuzz");
        }

        #[test]
        fn never_panics_on_corrupted_files(pos in 0usize..120, byte in any::<u8>(), cut in 0usize..140) {
            let mut b = encode(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], NpyType::F32, false, true, 1);
            let p = pos % b.len();
            b[p] = byte;
            let _ = parse_npy(&b, "fuzz");
            b.truncate(cut.min(b.len()));
            let _ = parse_npy(&b, "fuzz");
        }
    }
}

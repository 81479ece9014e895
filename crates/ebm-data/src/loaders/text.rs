//! CSV and whitespace-separated text matrices: one sample per line, one feature per field.
//!
//! Blank lines and lines starting with the comment character (default `#`) are skipped; the
//! first `skip_rows` non-comment lines (a header) are skipped too. Every data line must have the
//! same number of fields. An optional label column (first or last field, a non-negative integer)
//! becomes the dataset's labels. Values must be finite numbers (Rust `f64` syntax). The result is
//! a [`Domain::Real`] dataset.

use nalgebra::DMatrix;

use crate::dataset::{Dataset, Domain};
use crate::error::{Result, at_line};

/// Field separator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delimiter {
    /// Comma if the first data line contains one, otherwise whitespace.
    Auto,
    /// Runs of spaces / tabs.
    Whitespace,
    /// A single ASCII character (`,`, `;`, `\t`, ...), fields trimmed of spaces.
    Char(char),
}

/// Where the label column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelColumn {
    /// No labels.
    None,
    /// First field of each line.
    First,
    /// Last field of each line.
    Last,
}

/// Options of [`parse_text_matrix`].
#[derive(Debug, Clone, PartialEq)]
pub struct TextOptions {
    /// Field separator.
    pub delimiter: Delimiter,
    /// Lines starting with this character (after leading spaces) are skipped.
    pub comment: Option<char>,
    /// Number of leading non-comment, non-blank lines to skip (header rows).
    pub skip_rows: usize,
    /// Label column.
    pub label_column: LabelColumn,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            delimiter: Delimiter::Auto,
            comment: Some('#'),
            skip_rows: 0,
            label_column: LabelColumn::None,
        }
    }
}

/// Splits a line into `(1-based column, field)` pairs.
fn fields(line: &str, delim: Delimiter) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    match delim {
        Delimiter::Whitespace | Delimiter::Auto => {
            let mut start = None;
            for (i, c) in line
                .char_indices()
                .chain(std::iter::once((line.len(), ' ')))
            {
                let ws = c == ' ' || c == '\t' || c == '\r';
                match (start, ws) {
                    (None, false) => start = Some(i),
                    (Some(s), true) => {
                        out.push((s, &line[s..i]));
                        start = None;
                    }
                    _ => {}
                }
            }
        }
        Delimiter::Char(d) => {
            let mut s = 0;
            for (i, c) in line.char_indices().chain(std::iter::once((line.len(), d))) {
                if c == d {
                    let raw = &line[s..i];
                    let lead = raw.len() - raw.trim_start().len();
                    out.push((s + lead, raw.trim()));
                    s = i + c.len_utf8();
                }
            }
        }
    }
    out.into_iter()
        .map(|(byte, f)| (line[..byte].chars().count() + 1, f))
        .collect()
}

/// Parses a text matrix (module documentation). `file` names the source in errors.
///
/// # Errors
/// [`Error::Parse`](crate::Error::Parse) with the line and column for invalid UTF-8, a field that is not a finite
/// number, a label that is not a non-negative integer, or a line with a different number of
/// fields than the first data line; [`Error::Parse`](crate::Error::Parse) at line 1 for input without data lines.
pub fn parse_text_matrix(text: &[u8], file: &str, opts: &TextOptions) -> Result<Dataset> {
    let text = std::str::from_utf8(text).map_err(|e| {
        let line = text[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        at_line(
            file,
            line,
            0,
            format!("invalid UTF-8 at byte {}", e.valid_up_to()),
        )
    })?;
    let mut delim = opts.delimiter;
    let mut skipped = 0;
    let mut width: Option<(usize, usize)> = None; // (fields, first data line)
    let mut values: Vec<f64> = Vec::new();
    let mut labels: Vec<u32> = Vec::new();
    let mut n_samples = 0usize;
    for (ln, line) in text.lines().enumerate() {
        let ln = ln + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || opts.comment.is_some_and(|c| trimmed.starts_with(c)) {
            continue;
        }
        if skipped < opts.skip_rows {
            skipped += 1;
            continue;
        }
        if delim == Delimiter::Auto {
            delim = if line.contains(',') {
                Delimiter::Char(',')
            } else {
                Delimiter::Whitespace
            };
        }
        let f = fields(line, delim);
        match width {
            None => width = Some((f.len(), ln)),
            Some((w, first)) if w != f.len() => {
                return Err(at_line(
                    file,
                    ln,
                    0,
                    format!("{} fields, expected {w} (as on line {first})", f.len()),
                ));
            }
            _ => {}
        }
        let n_fields = f.len();
        let label_idx = match opts.label_column {
            LabelColumn::None => None,
            LabelColumn::First => Some(0),
            LabelColumn::Last => Some(n_fields.saturating_sub(1)),
        };
        if label_idx.is_some() && n_fields == 0 {
            return Err(at_line(file, ln, 0, "no field for the label column"));
        }
        for (k, (col, field)) in f.into_iter().enumerate() {
            if Some(k) == label_idx {
                let l: u32 = field.parse().map_err(|_| {
                    at_line(
                        file,
                        ln,
                        col,
                        format!("label '{field}' is not a non-negative integer"),
                    )
                })?;
                labels.push(l);
            } else {
                let v: f64 = field.parse().map_err(|_| {
                    at_line(file, ln, col, format!("expected a number, found '{field}'"))
                })?;
                if !v.is_finite() {
                    return Err(at_line(
                        file,
                        ln,
                        col,
                        format!("expected a finite number, found '{field}'"),
                    ));
                }
                values.push(v);
            }
        }
        n_samples += 1;
    }
    let Some((w, _)) = width else {
        return Err(at_line(
            file,
            1,
            0,
            "no data lines (expected at least one row of numbers)",
        ));
    };
    let nf = w - usize::from(opts.label_column != LabelColumn::None);
    let data = DMatrix::from_vec(nf, n_samples, values);
    let ds = Dataset::new(data, Domain::Real)?;
    if opts.label_column == LabelColumn::None {
        Ok(ds)
    } else {
        ds.with_labels(labels)
    }
}

/// Reads a text matrix file (see [`parse_text_matrix`]).
///
/// # Errors
/// [`Error::Io`](crate::Error::Io) if the file cannot be read, is not a regular file (a FIFO,
/// a device, a directory) or is larger than [`ebm_core::input::MAX_TEXT_BYTES`]; otherwise as [`parse_text_matrix`].
pub fn load_text_matrix(path: impl AsRef<std::path::Path>, opts: &TextOptions) -> Result<Dataset> {
    let path = path.as_ref();
    let bytes = super::read_file(path, ebm_core::input::MAX_TEXT_BYTES)?;
    parse_text_matrix(&bytes, &path.display().to_string(), opts)
}

/// Writes samples as lines of comma-separated values (`{}` formatting, which round-trips `f64`).
pub fn to_csv(ds: &Dataset) -> String {
    let mut s = String::new();
    for j in 0..ds.n_samples() {
        let line: Vec<String> = ds.sample(j).iter().map(|v| format!("{v}")).collect();
        s.push_str(&line.join(","));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn csv_and_whitespace() {
        let csv = "# comment\nx,y,z\n1, 2 ,3\n\n4,5,6e-1\n";
        let opts = TextOptions {
            skip_rows: 1,
            ..Default::default()
        };
        let d = parse_text_matrix(csv.as_bytes(), "a.csv", &opts).unwrap();
        assert_eq!((d.n_features(), d.n_samples()), (3, 2));
        assert_eq!(d.sample(1), &[4.0, 5.0, 0.6]);
        let ws = "1 2\t3\n  4 5 6  \r\n";
        let d = parse_text_matrix(ws.as_bytes(), "b.txt", &TextOptions::default()).unwrap();
        assert_eq!(d.sample(0), &[1.0, 2.0, 3.0]);
        assert_eq!(d.sample(1), &[4.0, 5.0, 6.0]);
    }

    #[test]
    fn labels_first_and_last() {
        let t = "0,1,0,7\n1,1,1,3\n";
        let last = TextOptions {
            label_column: LabelColumn::Last,
            ..Default::default()
        };
        let d = parse_text_matrix(t.as_bytes(), "l", &last).unwrap();
        assert_eq!(d.labels().unwrap(), &[7, 3]);
        assert_eq!(d.sample(1), &[1.0, 1.0, 1.0]);
        let first = TextOptions {
            label_column: LabelColumn::First,
            ..Default::default()
        };
        let d = parse_text_matrix(t.as_bytes(), "l", &first).unwrap();
        assert_eq!(d.labels().unwrap(), &[0, 1]);
        assert_eq!(d.sample(0), &[1.0, 0.0, 7.0]);
    }

    #[test]
    fn errors_name_file_line_column() {
        let e = parse_text_matrix(b"1,2\n3,x\n", "m.csv", &TextOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "m.csv: line 2, column 3: expected a number, found 'x'");
        let e = parse_text_matrix(b"1 2\n3\n", "m.txt", &TextOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "m.txt: line 2: 1 fields, expected 2 (as on line 1)");
        let e = parse_text_matrix(b"1 inf\n", "m", &TextOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("finite"), "{e}");
        let lab = TextOptions {
            label_column: LabelColumn::Last,
            ..Default::default()
        };
        let e = parse_text_matrix(b"1,2,-1\n", "m", &lab)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1, column 5") && e.contains("label '-1'"),
            "{e}"
        );
        assert!(parse_text_matrix(b"# only\n\n", "m", &TextOptions::default()).is_err());
        let e = parse_text_matrix(b"1 2\n\xff\n", "u", &TextOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("UTF-8"), "{e}");
    }

    proptest! {
        #[test]
        fn csv_roundtrip(rows in 1usize..6, cols in 1usize..6, seed in any::<u64>()) {
            use rand::{Rng, SeedableRng};
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let m = DMatrix::from_fn(cols, rows, |_, _| rng.random::<f64>() * 1e3 - 500.0);
            let ds = Dataset::new(m, Domain::Real).unwrap();
            let back = parse_text_matrix(to_csv(&ds).as_bytes(), "r", &TextOptions::default()).unwrap();
            prop_assert_eq!(back, ds);
        }

        #[test]
        fn never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200), lab in 0u8..3) {
            let opts = TextOptions {
                label_column: [LabelColumn::None, LabelColumn::First, LabelColumn::Last][lab as usize],
                ..Default::default()
            };
            let _ = parse_text_matrix(&bytes, "fuzz", &opts);
            let s: String = bytes.iter().map(|&b| b"0123456789,. -e\n#x"[b as usize % 18] as char).collect();
            let _ = parse_text_matrix(s.as_bytes(), "fuzz", &opts);
        }
    }
}

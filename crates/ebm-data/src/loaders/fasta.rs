//! FASTA multiple sequence alignments to Potts variables with an explicit alphabet.
//!
//! A record starts with a `>` header line; the following lines up to the next header are its
//! sequence (whitespace ignored). All sequences must have the same length `L` (aligned). Each
//! symbol is mapped to its index in the [`Alphabet`]; the result is a
//! [`Domain::Categorical`] dataset with `L` features (`q = alphabet size`), convertible to the
//! one-hot layout (`L*q` features, site `i`, state `a` at row `i*q + a`) by
//! `dataset.to_domain(Domain::OneHot { q })`.

use nalgebra::DMatrix;

use crate::dataset::{Dataset, Domain};
use crate::error::{Error, Result, at_line};

/// An ordered set of ASCII symbols, plus optional aliases (e.g. `.` -> `-`, lower case -> upper
/// case). The state index of a symbol is its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alphabet {
    symbols: Vec<u8>,
    index: Vec<u8>, // 256 entries, 255 = not in the alphabet
}

impl Alphabet {
    /// An alphabet from distinct printable ASCII symbols (no whitespace, no `>`), at most 254.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty alphabet, repeated, non-ASCII, whitespace or `>`
    /// symbols.
    pub fn new(symbols: &str) -> Result<Self> {
        let bytes = symbols.as_bytes();
        if bytes.is_empty() || bytes.len() > 254 {
            return Err(Error::InvalidArgument(
                "an alphabet needs 1 to 254 symbols".into(),
            ));
        }
        let mut index = vec![255u8; 256];
        for (i, &b) in bytes.iter().enumerate() {
            if !b.is_ascii_graphic() || b == b'>' {
                return Err(Error::InvalidArgument(format!(
                    "alphabet symbol {:?} is not a printable ASCII character other than '>'",
                    b as char
                )));
            }
            if index[b as usize] != 255 {
                return Err(Error::InvalidArgument(format!(
                    "alphabet symbol '{}' repeated",
                    b as char
                )));
            }
            index[b as usize] = i as u8;
        }
        Ok(Alphabet {
            symbols: bytes.to_vec(),
            index,
        })
    }

    /// The 21-state protein alphabet `-ACDEFGHIKLMNPQRSTVWY` (gap = state 0).
    pub fn protein() -> Self {
        Self::new("-ACDEFGHIKLMNPQRSTVWY").expect("valid alphabet")
    }

    /// The 5-state nucleotide alphabet `-ACGT` (gap = state 0).
    pub fn dna() -> Self {
        Self::new("-ACGT").expect("valid alphabet")
    }

    /// Maps `from` to the state of `to` (e.g. `('.', '-')`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `to` is not in the alphabet or `from` is not ASCII.
    pub fn with_alias(mut self, from: char, to: char) -> Result<Self> {
        let t = self
            .state(to as u8)
            .filter(|_| to.is_ascii())
            .ok_or_else(|| {
                Error::InvalidArgument(format!("alias target '{to}' not in the alphabet"))
            })?;
        if !from.is_ascii_graphic() || from == '>' {
            return Err(Error::InvalidArgument(format!(
                "alias source {from:?} must be printable ASCII other than '>'"
            )));
        }
        self.index[from as usize] = t as u8;
        Ok(self)
    }

    /// Maps every lower-case letter to the state of its upper-case form, where that is in the
    /// alphabet (A2M/A3M insert states are then read as matches: use with care).
    pub fn case_insensitive(mut self) -> Self {
        for c in b'a'..=b'z' {
            let up = self.index[c.to_ascii_uppercase() as usize];
            if up != 255 && self.index[c as usize] == 255 {
                self.index[c as usize] = up;
            }
        }
        self
    }

    /// Number of states `q`.
    pub fn q(&self) -> usize {
        self.symbols.len()
    }

    /// The symbols in state order.
    pub fn symbols(&self) -> &[u8] {
        &self.symbols
    }

    /// The state of a symbol (after aliases), if any.
    pub fn state(&self, symbol: u8) -> Option<usize> {
        match self.index[symbol as usize] {
            255 => None,
            s => Some(s as usize),
        }
    }
}

/// A parsed alignment.
#[derive(Debug, Clone, PartialEq)]
pub struct Msa {
    /// Header lines without the leading `>`, one per sequence.
    pub headers: Vec<String>,
    /// `L x n_sequences` [`Domain::Categorical`] codes.
    pub dataset: Dataset,
}

impl Msa {
    /// The one-hot dataset (`L*q` features; module documentation).
    pub fn one_hot(&self) -> Dataset {
        let q = match self.dataset.domain() {
            Domain::Categorical { q } => q,
            _ => unreachable!("Msa holds categorical data"),
        };
        self.dataset
            .to_domain(Domain::OneHot { q })
            .expect("categorical -> one-hot with the same q")
    }
}

/// Parses a FASTA alignment. `file` names the source in errors.
///
/// # Errors
/// [`Error::Parse`] with line and column for sequence data before the first header, a symbol not
/// in the alphabet, a record without residues, a sequence whose length differs from the first
/// one, invalid UTF-8 in a header, or an input without records.
pub fn parse_fasta(bytes: &[u8], file: &str, alphabet: &Alphabet) -> Result<Msa> {
    let mut headers: Vec<String> = Vec::new();
    let mut codes: Vec<f64> = Vec::new();
    let mut cur_len = 0usize;
    let mut width: Option<usize> = None;
    let mut header_line = 0usize;
    let finish = |headers: &Vec<String>,
                  cur_len: usize,
                  width: &mut Option<usize>,
                  header_line: usize|
     -> Result<()> {
        if headers.is_empty() {
            return Ok(());
        }
        let name = headers.last().expect("non-empty");
        if cur_len == 0 {
            return Err(at_line(
                file,
                header_line,
                0,
                format!("record '{name}' has no residues"),
            ));
        }
        match *width {
            None => *width = Some(cur_len),
            Some(w) if w != cur_len => {
                return Err(at_line(
                    file,
                    header_line,
                    0,
                    format!(
                        "record {} ('{name}') has length {cur_len}, expected {w} (the length of the first record): sequences must be aligned",
                        headers.len()
                    ),
                ));
            }
            _ => {}
        }
        Ok(())
    };
    for (ln, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let ln = ln + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(h) = line.strip_prefix(b">") {
            finish(&headers, cur_len, &mut width, header_line)?;
            let h = std::str::from_utf8(h)
                .map_err(|_| at_line(file, ln, 0, "header is not valid UTF-8"))?;
            headers.push(h.trim().to_string());
            header_line = ln;
            cur_len = 0;
            continue;
        }
        for (col, &b) in line.iter().enumerate() {
            if b.is_ascii_whitespace() {
                continue;
            }
            if headers.is_empty() {
                return Err(at_line(
                    file,
                    ln,
                    col + 1,
                    "sequence data before the first '>' header",
                ));
            }
            let s = alphabet.state(b).ok_or_else(|| {
                let shown = if b.is_ascii_graphic() {
                    format!("'{}'", b as char)
                } else {
                    format!("byte 0x{b:02x}")
                };
                at_line(
                    file,
                    ln,
                    col + 1,
                    format!(
                        "symbol {shown} is not in the alphabet \"{}\"",
                        String::from_utf8_lossy(alphabet.symbols())
                    ),
                )
            })?;
            codes.push(s as f64);
            cur_len += 1;
        }
    }
    finish(&headers, cur_len, &mut width, header_line)?;
    let Some(l) = width else {
        return Err(at_line(
            file,
            1,
            0,
            "no FASTA record (expected a '>' header line)",
        ));
    };
    let n = headers.len();
    let data = DMatrix::from_vec(l, n, codes);
    Ok(Msa {
        headers,
        dataset: Dataset::new(data, Domain::Categorical { q: alphabet.q() })?,
    })
}

/// Reads a FASTA alignment file (see [`parse_fasta`]).
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, is not a regular file (a FIFO,
/// a device, a directory) or is larger than [`ebm_core::input::MAX_TEXT_BYTES`]; otherwise as [`parse_fasta`].
pub fn load_fasta(path: impl AsRef<std::path::Path>, alphabet: &Alphabet) -> Result<Msa> {
    let path = path.as_ref();
    let bytes = super::read_file(path, ebm_core::input::MAX_TEXT_BYTES)?;
    parse_fasta(&bytes, &path.display().to_string(), alphabet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_multiline_records_to_codes_and_one_hot() {
        let f = b">seq1 first\nAC-\nGT\n>seq2\r\nTTGCA\r\n\n";
        let msa = parse_fasta(f, "a.fasta", &Alphabet::dna()).unwrap();
        assert_eq!(msa.headers, vec!["seq1 first", "seq2"]);
        assert_eq!(msa.dataset.sample(0), &[1.0, 2.0, 0.0, 3.0, 4.0]);
        assert_eq!(msa.dataset.sample(1), &[4.0, 4.0, 3.0, 2.0, 1.0]);
        let oh = msa.one_hot();
        assert_eq!(oh.n_features(), 25);
        assert_eq!(oh.domain(), Domain::OneHot { q: 5 });
        assert_eq!(
            &oh.sample(0)[..10],
            &[0., 1., 0., 0., 0., 0., 0., 1., 0., 0.]
        );
    }

    #[test]
    fn aliases_and_case() {
        let a = Alphabet::protein()
            .with_alias('.', '-')
            .unwrap()
            .case_insensitive();
        let msa = parse_fasta(b">x\nac.Y\n", "f", &a).unwrap();
        assert_eq!(msa.dataset.sample(0), &[1.0, 2.0, 0.0, 20.0]);
        assert!(Alphabet::new("AA").is_err());
        assert!(Alphabet::new("").is_err());
        assert!(Alphabet::dna().with_alias('N', 'Z').is_err());
    }

    #[test]
    fn errors_name_file_line_column() {
        let e = parse_fasta(b">a\nACGT\n>b\nACXT\n", "m.fa", &Alphabet::dna())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "m.fa: line 4, column 3: symbol 'X' is not in the alphabet \"-ACGT\""
        );
        let e = parse_fasta(b">a\nACGT\n>b\nACG\n", "m.fa", &Alphabet::dna())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3") && e.contains("length 3, expected 4"),
            "{e}"
        );
        let e = parse_fasta(b"ACGT\n", "m.fa", &Alphabet::dna())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1, column 1") && e.contains("before the first"),
            "{e}"
        );
        assert!(parse_fasta(b">a\n>b\nA\n", "m", &Alphabet::dna()).is_err());
        assert!(parse_fasta(b"", "m", &Alphabet::dna()).is_err());
    }

    proptest! {
        #[test]
        fn roundtrip(seqs in prop::collection::vec(prop::collection::vec(0usize..21, 7), 1..6)) {
            let a = Alphabet::protein();
            let mut text = String::new();
            for (i, s) in seqs.iter().enumerate() {
                text.push_str(&format!(">s{i}\n"));
                for (k, &c) in s.iter().enumerate() {
                    text.push(a.symbols()[c] as char);
                    if k == 3 { text.push('\n'); }
                }
                text.push('\n');
            }
            let msa = parse_fasta(text.as_bytes(), "p", &a).unwrap();
            for (j, s) in seqs.iter().enumerate() {
                let want: Vec<f64> = s.iter().map(|&c| c as f64).collect();
                prop_assert_eq!(msa.dataset.sample(j), want.as_slice());
            }
        }

        #[test]
        fn never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_fasta(&bytes, "fuzz", &Alphabet::protein());
            let s: Vec<u8> = bytes.iter().map(|&b| b">ACGT-\nX "[b as usize % 9]).collect();
            let _ = parse_fasta(&s, "fuzz", &Alphabet::dna());
        }
    }
}

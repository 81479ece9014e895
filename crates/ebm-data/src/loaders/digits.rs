//! The scikit-learn 8x8 digits (UCI optical recognition of handwritten digits, test set),
//! binarised and embedded in the crate: no download needed.
//!
//! Source, licences (data: CC BY 4.0; scikit-learn: BSD-3-Clause) and the exact transformation are
//! in `crates/ebm-data/data/DIGITS_SOURCE.md`. Binarisation: pixel value (0..16) `> 8` -> 1.

use nalgebra::DMatrix;

use crate::dataset::{Dataset, Domain};
use crate::error::{Result, at_line};

const DIGITS: &str = include_str!("../../data/digits_bin.txt");

/// Number of images in [`digits`].
pub const DIGITS_SAMPLES: usize = 1797;

/// Parses the embedded file format: one line `"{label} {16 hex digits}"` per image, pixel `i`
/// (row-major, 8x8) is bit `63 - i`.
fn parse(text: &str, file: &str) -> Result<Dataset> {
    let mut data = Vec::new();
    let mut labels = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let ln = ln + 1;
        let (lab, bits) = line
            .split_once(' ')
            .ok_or_else(|| at_line(file, ln, 0, "expected '<label> <16 hex digits>'"))?;
        let l: u32 =
            lab.parse().ok().filter(|l| *l < 10).ok_or_else(|| {
                at_line(file, ln, 1, format!("label '{lab}' is not a digit 0..9"))
            })?;
        if bits.len() != 16 {
            return Err(at_line(file, ln, lab.len() + 2, "expected 16 hex digits"));
        }
        let v = u64::from_str_radix(bits, 16)
            .map_err(|_| at_line(file, ln, lab.len() + 2, "expected 16 hex digits"))?;
        data.extend((0..64).map(|i| (v >> (63 - i) & 1) as f64));
        labels.push(l);
    }
    let n = labels.len();
    Dataset::new(DMatrix::from_vec(64, n, data), Domain::Binary01)?.with_labels(labels)
}

/// The 1797 binarised 8x8 digit images: a [`Domain::Binary01`] dataset with 64 features (pixel
/// `(r, c)` is feature `8r + c`, row 0 at the top) and the digit as label.
pub fn digits() -> Dataset {
    parse(DIGITS, "digits_bin.txt").expect("the embedded digits file is valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_computed_from_the_original_csv() {
        let d = digits();
        assert_eq!((d.n_features(), d.n_samples()), (64, DIGITS_SAMPLES));
        // values computed in Python from sklearn's digits.csv.gz with the rule p > 8
        let ones: f64 = d.data().sum();
        assert_eq!(ones, 33_687.0);
        let mut counts = [0usize; 10];
        for &l in d.labels().unwrap() {
            counts[l as usize] += 1;
        }
        assert_eq!(counts, [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]);
        // first image: a 0 whose first row 0,0,5,13,9,1,0,0 binarises to 0,0,0,1,1,0,0,0
        assert_eq!(d.labels().unwrap()[0], 0);
        assert_eq!(&d.sample(0)[..8], &[0., 0., 0., 1., 1., 0., 0., 0.]);
        // column sums for pixels 0..8 and 27
        let col = |i: usize| d.data().row(i).sum();
        let want = [0.0, 0.0, 481.0, 1467.0, 1429.0, 576.0, 109.0, 11.0];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(col(i), *w, "pixel {i}");
        }
        assert_eq!(col(27), 978.0);
    }

    #[test]
    fn format_errors() {
        let e = parse("3 00ff\n", "d").unwrap_err().to_string();
        assert_eq!(e, "d: line 1, column 3: expected 16 hex digits");
        assert!(parse("12 0000000000000000\n", "d").is_err());
        assert!(parse("1 000000000000000g\n", "d").is_err());
    }
}

//! Data augmentation of image datasets.
//!
//! [`nudge`] is the one-pixel translation of scikit-learn's RBM example, which "Lifted and
//! Deterministic Even/Odd Parallel Tempering for RBM Training" (paper 004) applies to the 8x8
//! digits before training (1,797 images become 8,985).

use nalgebra::DMatrix;

use crate::dataset::{Dataset, Domain};
use crate::error::{Error, Result};

/// The four one-pixel translations of [`nudge`], in the order their blocks follow the
/// originals.
pub const NUDGE_DIRECTIONS: [&str; 4] = ["up", "down", "left", "right"];

/// The dataset followed by four translated copies of it: every image (feature `r * cols + c` is
/// the pixel in row `r`, column `c`, row 0 at the top) moved one pixel up, down, left and right,
/// in that order ([`NUDGE_DIRECTIONS`]), the pixels shifted in at the border set to the
/// background value: 0 for {0,1}, categorical and real data, -1 for spins. The result has
/// 5 M samples: samples `k M .. (k+1) M` are block `k` (0 = originals). Weights and labels are
/// repeated with their images.
///
/// "Up" means the content moves towards row 0: the new pixel `(r, c)` is the old `(r + 1, c)`.
///
/// # Errors
/// [`Error::Shape`] if `rows x cols` is not the number of features (or is zero);
/// [`Error::InvalidArgument`] for one-hot data, whose features are not pixels.
pub fn nudge(ds: &Dataset, rows: usize, cols: usize) -> Result<Dataset> {
    let nf = ds.n_features();
    if rows == 0 || cols == 0 || rows * cols != nf {
        return Err(Error::Shape(format!(
            "nudge: images of {rows} x {cols} pixels need {} features, the data have {nf}",
            rows * cols
        )));
    }
    let fill = match ds.domain() {
        Domain::Spin => -1.0,
        Domain::Binary01 | Domain::Categorical { .. } | Domain::Real => 0.0,
        Domain::OneHot { q } => {
            return Err(Error::InvalidArgument(format!(
                "nudge: one-hot data (q = {q}) have {q} features per site, not one per pixel"
            )));
        }
    };
    let m = ds.n_samples();
    // (row offset, column offset) of the source pixel for each direction
    let moves: [(isize, isize); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
    let mut out = DMatrix::from_element(nf, 5 * m, fill);
    out.columns_mut(0, m).copy_from(ds.data());
    for (k, (dr, dc)) in moves.iter().enumerate() {
        for j in 0..m {
            let src = ds.sample(j);
            let mut dst = out.column_mut((k + 1) * m + j);
            for r in 0..rows {
                for c in 0..cols {
                    let (sr, sc) = (r as isize + dr, c as isize + dc);
                    if (0..rows as isize).contains(&sr) && (0..cols as isize).contains(&sc) {
                        dst[r * cols + c] = src[sr as usize * cols + sc as usize];
                    }
                }
            }
        }
    }
    let weights = ds.weights().repeat(5);
    let mut result = Dataset::new(out, ds.domain())?.with_weights(weights)?;
    if let Some(l) = ds.labels() {
        result = result.with_labels(l.repeat(5))?;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_checked_three_by_two_image() {
        // rows: [1 0] / [0 1] / [1 1]
        let img = vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let ds = Dataset::from_rows(std::slice::from_ref(&img), Domain::Binary01)
            .unwrap()
            .with_labels(vec![7])
            .unwrap();
        let n = nudge(&ds, 3, 2).unwrap();
        assert_eq!(n.n_samples(), 5);
        assert_eq!(n.sample(0), img.as_slice());
        // up: rows shift towards the top, bottom row filled with 0
        assert_eq!(n.sample(1), &[0.0, 1.0, 1.0, 1.0, 0.0, 0.0]);
        // down: top row filled
        assert_eq!(n.sample(2), &[0.0, 0.0, 1.0, 0.0, 0.0, 1.0]);
        // left: columns shift towards column 0, last column filled
        assert_eq!(n.sample(3), &[0.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
        // right: first column filled
        assert_eq!(n.sample(4), &[0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
        assert_eq!(n.labels(), Some(&[7u32; 5][..]));
    }

    #[test]
    fn spins_are_filled_with_minus_one_and_the_digits_grow_fivefold() {
        let ds = Dataset::from_rows(&[vec![1.0, 1.0, 1.0, 1.0]], Domain::Spin).unwrap();
        let n = nudge(&ds, 2, 2).unwrap();
        assert_eq!(n.sample(1), &[1.0, 1.0, -1.0, -1.0]);
        assert_eq!(n.sample(4), &[-1.0, 1.0, -1.0, 1.0]);
        let d = crate::loaders::digits();
        let n = nudge(&d, 8, 8).unwrap();
        assert_eq!(n.n_samples(), 8_985);
        assert_eq!(n.domain(), Domain::Binary01);
    }

    #[test]
    fn wrong_shapes_and_one_hot_data_are_rejected() {
        let ds = Dataset::from_rows(&[vec![0.0; 6]], Domain::Binary01).unwrap();
        assert!(matches!(nudge(&ds, 2, 2), Err(Error::Shape(_))));
        assert!(matches!(nudge(&ds, 0, 6), Err(Error::Shape(_))));
        let oh = Dataset::from_rows(&[vec![1.0, 0.0, 0.0, 1.0]], Domain::OneHot { q: 2 }).unwrap();
        assert!(matches!(nudge(&oh, 2, 2), Err(Error::InvalidArgument(_))));
    }
}

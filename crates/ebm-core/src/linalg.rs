//! The one matrix-product entry point of the workspace.
//!
//! Every GEMM of the hot paths goes through [`matmul`], so the kernel (currently the `gemm`
//! crate, single-threaded inside each chunk of chains) can be swapped and benchmarked in one
//! place. Parallelism is applied by the caller across chunks of chains (see
//! [`crate::for_each_chain_chunk`]), never inside the product, so that results do not depend on
//! the thread count.

use crate::Scalar;

/// A read-only strided view of a matrix: element `(i, j)` is `data[i * row_stride + j * col_stride]`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a, F> {
    data: &'a [F],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a, F> MatRef<'a, F> {
    /// A column-major `rows x cols` matrix stored contiguously.
    ///
    /// # Panics
    /// If `data.len() != rows * cols`.
    pub fn col_major(data: &'a [F], rows: usize, cols: usize) -> Self {
        assert_eq!(
            data.len(),
            rows * cols,
            "MatRef::col_major: {} values for a {rows}x{cols} matrix",
            data.len()
        );
        Self {
            data,
            rows,
            cols,
            row_stride: 1,
            col_stride: rows,
        }
    }

    /// The view of rows `start .. start + len` (no copy).
    ///
    /// # Panics
    /// If the rows are not all in the matrix.
    pub fn rows_range(self, start: usize, len: usize) -> Self {
        assert!(
            start + len <= self.rows,
            "MatRef::rows_range: rows {start}..{} of a {}-row matrix",
            start + len,
            self.rows
        );
        if len == 0 || self.cols == 0 {
            return Self {
                data: &self.data[..0],
                rows: len,
                cols: self.cols,
                row_stride: self.row_stride,
                col_stride: self.col_stride,
            };
        }
        // Every index i * row_stride + j * col_stride (i < len, j < cols) of the new view is an
        // index of the old one shifted by start * row_stride, so it stays in bounds.
        Self {
            data: &self.data[start * self.row_stride..],
            rows: len,
            cols: self.cols,
            row_stride: self.row_stride,
            col_stride: self.col_stride,
        }
    }

    /// The transposed view (no copy).
    pub fn t(self) -> Self {
        Self {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
}

/// `dst = lhs * rhs` with `dst` a contiguous column-major `lhs.rows() x rhs.cols()` buffer,
/// computed on the calling thread.
///
/// # Panics
/// If the inner dimensions differ or `dst` has the wrong length.
pub fn matmul<F: Scalar>(lhs: MatRef<'_, F>, rhs: MatRef<'_, F>, dst: &mut [F]) {
    let (m, k, n) = (lhs.rows, lhs.cols, rhs.cols);
    assert_eq!(
        k, rhs.rows,
        "matmul: inner dimensions {k} and {} differ",
        rhs.rows
    );
    assert_eq!(
        dst.len(),
        m * n,
        "matmul: destination has {} values, expected {m}x{n}",
        dst.len()
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        dst.fill(F::zero());
        return;
    }
    // SAFETY: the views were built from slices whose lengths were checked against their
    // shapes and strides (col_major asserts `len == rows * cols`, `t` swaps strides), so every
    // index the kernel forms, `i * rs + j * cs` with `i < rows, j < cols`, is in bounds; `dst`
    // is a distinct `&mut` slice of exactly `m * n` values written column-major.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            m as isize,
            1,
            false,
            lhs.data.as_ptr(),
            lhs.col_stride as isize,
            lhs.row_stride as isize,
            rhs.data.as_ptr(),
            rhs.col_stride as isize,
            rhs.row_stride as isize,
            F::zero(),
            F::one(),
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Vec<f64> {
        let get =
            |m: &MatRef<'_, f64>, i: usize, j: usize| m.data[i * m.row_stride + j * m.col_stride];
        let mut out = vec![0.0; a.rows * b.cols];
        for j in 0..b.cols {
            for i in 0..a.rows {
                out[i + j * a.rows] = (0..a.cols).map(|l| get(&a, i, l) * get(&b, l, j)).sum();
            }
        }
        out
    }

    proptest! {
        #[test]
        fn matches_naive_product_with_and_without_transpose(
            m in 0usize..9, k in 0usize..9, n in 0usize..9, seed in 0u64..1000, transpose in any::<bool>()
        ) {
            let fill = |len: usize, s: u64| (0..len).map(|i| (((i as u64 * 7919 + s * 104729) % 17) as f64) - 8.0).collect::<Vec<_>>();
            let a_data = fill(m * k, seed);
            let b_data = fill(k * n, seed + 1);
            let a = if transpose { MatRef::col_major(&a_data, k, m).t() } else { MatRef::col_major(&a_data, m, k) };
            let b = MatRef::col_major(&b_data, k, n);
            let mut dst = vec![f64::NAN; m * n];
            matmul(a, b, &mut dst);
            // Small integers: every product and sum is exact in f64.
            prop_assert_eq!(dst, naive(a, b));
        }
    }

    #[test]
    fn row_ranges_multiply_like_the_rows_they_view() {
        let a: Vec<f64> = (0..35).map(|k| (k as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..20).map(|k| (k as f64 * 0.91).cos()).collect();
        let (a, b) = (MatRef::col_major(&a, 7, 5), MatRef::col_major(&b, 5, 4));
        let full = naive(a, b);
        for (start, len) in [(0, 7), (0, 3), (3, 4), (6, 1), (2, 0)] {
            let mut part = vec![0.0; len * 4];
            matmul(a.rows_range(start, len), b, &mut part);
            for j in 0..4 {
                for i in 0..len {
                    assert!((part[i + j * len] - full[start + i + j * 7]).abs() < 1e-12);
                }
            }
        }
        // Rows of a transposed view.
        let at = a.t();
        let mut part = vec![0.0; 2 * 7];
        let c: Vec<f64> = (0..49).map(|k| k as f64).collect();
        matmul(at.rows_range(1, 2), MatRef::col_major(&c, 7, 7), &mut part);
        let whole = naive(at, MatRef::col_major(&c, 7, 7));
        for j in 0..7 {
            for i in 0..2 {
                assert!((part[i + j * 2] - whole[1 + i + j * 5]).abs() < 1e-10);
            }
        }
    }

    #[test]
    #[should_panic(expected = "rows_range")]
    fn row_ranges_past_the_end_panic() {
        let a = [0.0f64; 6];
        MatRef::col_major(&a, 3, 2).rows_range(2, 2);
    }

    #[test]
    fn f32_products_work() {
        let a = [1.0f32, 2.0, 3.0, 4.0]; // [[1, 3], [2, 4]]
        let b = [1.0f32, 1.0];
        let mut d = [0.0f32; 2];
        matmul(
            MatRef::col_major(&a, 2, 2),
            MatRef::col_major(&b, 2, 1),
            &mut d,
        );
        assert_eq!(d, [4.0, 6.0]);
        matmul(
            MatRef::col_major(&a, 2, 2).t(),
            MatRef::col_major(&b, 2, 1),
            &mut d,
        );
        assert_eq!(d, [3.0, 7.0]);
    }
}

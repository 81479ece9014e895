//! The one internal matrix-product kernel (the `gemm` crate, rayon-parallel), so it can be swapped
//! and benchmarked in one place (ARCHITECTURE.md, "Data layout and numerics").

use nalgebra::DMatrix;

/// Strides `(row stride, column stride)` of `op(A)` for a column-major `A`.
fn strides(a: &DMatrix<f64>, transpose: bool) -> (isize, isize) {
    if transpose {
        (a.nrows() as isize, 1)
    } else {
        (1, a.nrows() as isize)
    }
}

/// `dst = alpha * dst + beta * op(A) op(B)` where `op(X) = X^T` if the flag is set
/// (`alpha` is ignored when `accumulate` is false).
///
/// # Panics
/// If the shapes do not agree.
pub(crate) fn gemm_into(
    dst: &mut DMatrix<f64>,
    accumulate: bool,
    a: &DMatrix<f64>,
    ta: bool,
    b: &DMatrix<f64>,
    tb: bool,
    beta: f64,
) {
    let (m, k) = if ta {
        (a.ncols(), a.nrows())
    } else {
        (a.nrows(), a.ncols())
    };
    let (kb, n) = if tb {
        (b.ncols(), b.nrows())
    } else {
        (b.nrows(), b.ncols())
    };
    assert_eq!(k, kb, "inner dimensions differ");
    assert_eq!((dst.nrows(), dst.ncols()), (m, n), "destination shape");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst.fill(0.0);
        }
        return;
    }
    let (a_rs, a_cs) = strides(a, ta);
    let (b_rs, b_cs) = strides(b, tb);
    let dst_cs = m as isize;
    // SAFETY: the pointers come from live matrices whose shapes were checked above: op(A) is
    // m x k, op(B) is k x n and dst is m x n, all column-major with the strides computed from
    // their own row counts, so every address gemm forms is inside its buffer; dst does not alias
    // a or b (it is borrowed mutably).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            dst_cs,
            1,
            accumulate,
            a.as_ptr(),
            a_cs,
            a_rs,
            b.as_ptr(),
            b_cs,
            b_rs,
            1.0,
            beta,
            false,
            false,
            false,
            gemm::Parallelism::Rayon(0),
        );
    }
}

/// `op(A) op(B)` as a new matrix.
pub(crate) fn matmul(a: &DMatrix<f64>, ta: bool, b: &DMatrix<f64>, tb: bool) -> DMatrix<f64> {
    let m = if ta { a.ncols() } else { a.nrows() };
    let n = if tb { b.nrows() } else { b.ncols() };
    let mut dst = DMatrix::zeros(m, n);
    gemm_into(&mut dst, false, a, ta, b, tb, 1.0);
    dst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_naive_products_for_all_transposes() {
        let a = DMatrix::from_fn(7, 5, |i, j| (i as f64 + 1.0) * 0.3 - j as f64 * 0.7);
        let b = DMatrix::from_fn(5, 4, |i, j| ((i * 3 + j) % 5) as f64 - 2.0);
        let at = a.transpose();
        let bt = b.transpose();
        let want = &a * &b;
        for (x, tx) in [(&a, false), (&at, true)] {
            for (y, ty) in [(&b, false), (&bt, true)] {
                let got = matmul(x, tx, y, ty);
                assert!((got - &want).abs().max() < 1e-12);
            }
        }
        let mut acc = want.clone();
        gemm_into(&mut acc, true, &a, false, &b, false, 2.0);
        assert!((acc - 3.0 * &want).abs().max() < 1e-12);
    }
}

//! Linear algebra of the lazily sampled Gaussian-process path (`dpcore.kernel_learning.gp_service`).
//!
//! The service keeps its lower-triangular factor `L̂` in the leading `t × t` block of a larger
//! row-major buffer (amortised growth). A new query needs `l = L̂⁻¹ k` (forward substitution) —
//! `O(t²)` work on a strided view, with no copy of the factor (a LAPACK call would need a
//! contiguous copy, itself `O(t²)` memory traffic). Row-oriented: `x_i = (b_i − <L_i,:i, x_:i>)/L_ii`,
//! so each row of the buffer is read once, contiguously. [`forward_substitution_cancellable`]
//! polls a [`Cancel`] flag before every row (`O(i·m)` work each) and returns
//! [`DpError::Interrupted`] once it is set; unset, the arithmetic is unchanged.

use ndarray::{Array2, ArrayView1, ArrayView2};

use crate::cancel::Cancel;
use crate::error::{DpError, DpResult};

/// Solve `L x = b` for every column `b` of `rhs` (`t × m`), `L` the leading `t × t` block of `l`
/// (lower triangular, non-zero diagonal). Returns `x` (`t × m`).
///
/// # Errors
/// `t` larger than the buffer, `rhs` with a number of rows other than `t`, or a zero / non-finite
/// diagonal entry (named `L`).
pub fn forward_substitution(
    l: ArrayView2<'_, f64>,
    t: usize,
    rhs: ArrayView2<'_, f64>,
) -> DpResult<Array2<f64>> {
    forward_substitution_cancellable(l, t, rhs, Cancel::never())
}

/// [`forward_substitution`] polling `cancel` before every row (see the module docs).
///
/// # Errors
/// As [`forward_substitution`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn forward_substitution_cancellable(
    l: ArrayView2<'_, f64>,
    t: usize,
    rhs: ArrayView2<'_, f64>,
    cancel: &Cancel,
) -> DpResult<Array2<f64>> {
    if t > l.nrows() || t > l.ncols() {
        return Err(DpError::invalid(
            "t",
            format!("{t} exceeds the factor buffer {:?}", l.dim()),
        ));
    }
    if rhs.nrows() != t {
        return Err(DpError::invalid(
            "rhs",
            format!("must have t = {t} rows, got {}", rhs.nrows()),
        ));
    }
    let m = rhs.ncols();
    // x stored column-major per right-hand side for contiguous dot products
    let mut x = Array2::<f64>::zeros((m, t));
    for i in 0..t {
        cancel.check()?;
        let row = l.row(i);
        let d = row[i];
        if !(d.is_finite() && d != 0.0) {
            return Err(DpError::invalid(
                "L",
                format!("diagonal entry {i} is {d:?}"),
            ));
        }
        let head = row.slice(ndarray::s![..i]);
        for c in 0..m {
            let xc = x.row(c);
            let s = dot(head, xc.slice(ndarray::s![..i]));
            x[[c, i]] = (rhs[[i, c]] - s) / d;
        }
    }
    Ok(x.reversed_axes().as_standard_layout().into_owned())
}

#[inline]
fn dot(a: ArrayView1<'_, f64>, b: ArrayView1<'_, f64>) -> f64 {
    match (a.as_slice(), b.as_slice()) {
        (Some(x), Some(y)) => {
            // four accumulators: independent chains for the FPU, no reliance on order (the bound
            // used by dpcore.kernel_learning.gp covers any summation order)
            let mut acc = [0.0f64; 4];
            let n4 = x.len() / 4 * 4;
            for k in (0..n4).step_by(4) {
                acc[0] += x[k] * y[k];
                acc[1] += x[k + 1] * y[k + 1];
                acc[2] += x[k + 2] * y[k + 2];
                acc[3] += x[k + 3] * y[k + 3];
            }
            let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            for k in n4..x.len() {
                s += x[k] * y[k];
            }
            s
        }
        _ => a.dot(&b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn solves_a_leading_block_of_a_larger_buffer() {
        let buf = array![
            [2.0, 0.0, 0.0, 9.0],
            [1.0, 3.0, 0.0, 9.0],
            [4.0, -1.0, 5.0, 9.0],
            [9.0, 9.0, 9.0, 9.0]
        ];
        let b = array![[2.0, 1.0], [4.0, 0.0], [13.0, 5.0]];
        let x = forward_substitution(buf.view(), 3, b.view()).unwrap();
        let l = buf.slice(ndarray::s![..3, ..3]).to_owned();
        let back = l.dot(&x);
        for (u, v) in back.iter().zip(b.iter()) {
            assert!((u - v).abs() < 1e-12);
        }
        assert!(forward_substitution(buf.view(), 5, b.view()).is_err());
        let zero = array![[0.0]];
        assert!(forward_substitution(zero.view(), 1, array![[1.0]].view()).is_err());
        let stop = Cancel::new();
        stop.cancel();
        assert_eq!(
            forward_substitution_cancellable(buf.view(), 3, b.view(), &stop),
            Err(DpError::Interrupted)
        );
        assert_eq!(
            forward_substitution_cancellable(buf.view(), 3, b.view(), &Cancel::new()).unwrap(),
            x
        );
    }
}

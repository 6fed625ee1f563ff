//! The linear SVM in feature space used by `dpcore.PrivateSVM` (on random Fourier features,
//! [`crate::kernels::random_features`]): dual coordinate descent (Hsieh et al. 2008, LIBLINEAR's
//! L1-loss SVM without bias), see [`linear_svm_dcd`].
//!
//! The solver is only a *starting point*: the Python caller certifies its result by a duality gap
//! computed from `β` alone (`dpcore.glm._solver`), so no property of this routine enters a
//! privacy argument. It is deterministic for a given generator (the coordinate order is drawn
//! from it).

#![allow(clippy::needless_range_loop)]

use ndarray::{Array1, ArrayView1, ArrayView2};
use rand_core::Rng;

use crate::cancel::Cancel;
use crate::error::{DpError, DpResult};
use crate::mechanisms::noise::rng::DpRng;

/// Dual coordinate descent (Hsieh et al. 2008, LIBLINEAR's L1-loss SVM without bias) for the
/// linear SVM in feature space used by `dpcore.PrivateSVM`:
///
/// ```text
/// min_β ½ βᵀQβ − Σ β_i,   0 ≤ β_i ≤ upper,   Q_ij = y_i y_j <f_i, f_j>,   w = Σ β_i y_i f_i,
/// ```
///
/// the dual of `½‖w‖² + upper · Σ_i max(0, 1 − y_i <w, f_i>)` (`upper = C/n` for the SPEC's
/// objective `½‖w‖² + (C/n) Σ ℓ`). Starts from `beta0` (clipped to the box), maintains `w`, visits
/// the active coordinates in a fresh permutation every epoch (from `rng`) with LIBLINEAR's
/// shrinking, and stops when the projected-gradient spread over all coordinates is `≤ eps` or after
/// `max_epochs`. Returns `(β, epochs)`. The solver is only a *starting point*: the caller certifies
/// the result by a duality gap computed from `β` alone (`dpcore.glm._solver`), so no property of
/// this routine enters a privacy argument.
pub fn linear_svm_dcd(
    f: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    upper: f64,
    beta0: ArrayView1<'_, f64>,
    eps: f64,
    max_epochs: usize,
    rng: &mut DpRng,
) -> DpResult<(Array1<f64>, usize)> {
    linear_svm_dcd_cancellable(f, y, upper, beta0, eps, max_epochs, rng, Cancel::never())
}

/// Coordinate updates between two polls of the cancel flag in [`linear_svm_dcd_cancellable`].
const CANCEL_STRIDE: usize = 4096;

/// [`linear_svm_dcd`] polling `cancel` every [`CANCEL_STRIDE`] coordinate updates; the updates
/// themselves are unchanged.
///
/// # Errors
/// As [`linear_svm_dcd`], and [`DpError::Interrupted`] once `cancel` is set (no partial result).
#[allow(clippy::too_many_arguments)]
pub fn linear_svm_dcd_cancellable(
    f: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    upper: f64,
    beta0: ArrayView1<'_, f64>,
    eps: f64,
    max_epochs: usize,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<(Array1<f64>, usize)> {
    let (n, dim) = f.dim();
    if y.len() != n {
        return Err(DpError::invalid(
            "y",
            format!("must have length {n}, got {}", y.len()),
        ));
    }
    if beta0.len() != n {
        return Err(DpError::invalid(
            "beta0",
            format!("must have length {n}, got {}", beta0.len()),
        ));
    }
    if !(upper.is_finite() && upper > 0.0) {
        return Err(DpError::invalid(
            "upper",
            format!("must be finite and > 0, got {upper:?}"),
        ));
    }
    if !y.iter().all(|&v| v == 1.0 || v == -1.0) {
        return Err(DpError::invalid("y", "must contain only -1.0 and +1.0"));
    }
    if !f.iter().all(|v| v.is_finite()) {
        return Err(DpError::invalid("X", "contains NaN or infinite values"));
    }
    // Contiguous row-major copy of the rows (one pass; the solver reads rows repeatedly).
    let fs = f.as_standard_layout().into_owned();
    let rows: &[f64] = fs.as_slice().expect("standard layout");
    let row = |i: usize| &rows[i * dim..(i + 1) * dim];
    let dot = |a: &[f64], b: &[f64]| -> f64 {
        let mut acc = [0.0f64; 4];
        let chunks = a.len() / 4;
        for c in 0..chunks {
            for l in 0..4 {
                acc[l] += a[4 * c + l] * b[4 * c + l];
            }
        }
        let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for k in 4 * chunks..a.len() {
            s += a[k] * b[k];
        }
        s
    };
    let qd: Vec<f64> = (0..n).map(|i| dot(row(i), row(i))).collect();
    let mut beta: Vec<f64> = beta0
        .iter()
        .map(|&b| {
            if b.is_finite() {
                b.clamp(0.0, upper)
            } else {
                0.0
            }
        })
        .collect();
    let mut w = vec![0.0f64; dim];
    for i in 0..n {
        if beta[i] != 0.0 {
            let c = beta[i] * y[i];
            for (wk, xk) in w.iter_mut().zip(row(i)) {
                *wk += c * xk;
            }
        }
    }
    let mut active: Vec<usize> = (0..n).collect();
    let mut active_len = n;
    let (mut pgmax_old, mut pgmin_old) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut epoch = 0;
    while epoch < max_epochs {
        epoch += 1;
        // Fisher–Yates shuffle of the active set.
        for k in (1..active_len).rev() {
            let j = (rng.next_u64() % (k as u64 + 1)) as usize;
            active.swap(k, j);
        }
        let (mut pgmax, mut pgmin) = (f64::NEG_INFINITY, f64::INFINITY);
        let mut s = 0;
        let mut since_poll = 0usize;
        while s < active_len {
            since_poll += 1;
            if since_poll == CANCEL_STRIDE {
                since_poll = 0;
                cancel.check()?;
            }
            let i = active[s];
            let xi = row(i);
            let g = y[i] * dot(&w, xi) - 1.0;
            let mut pg = 0.0;
            if beta[i] == 0.0 {
                if g > pgmax_old {
                    active_len -= 1;
                    active.swap(s, active_len);
                    continue;
                } else if g < 0.0 {
                    pg = g;
                }
            } else if beta[i] == upper {
                if g < pgmin_old {
                    active_len -= 1;
                    active.swap(s, active_len);
                    continue;
                } else if g > 0.0 {
                    pg = g;
                }
            } else {
                pg = g;
            }
            pgmax = pgmax.max(pg);
            pgmin = pgmin.min(pg);
            if pg.abs() > 1e-300 && qd[i] > 0.0 {
                let old = beta[i];
                let new = (old - g / qd[i]).clamp(0.0, upper);
                let c = (new - old) * y[i];
                if c != 0.0 {
                    beta[i] = new;
                    for (wk, xk) in w.iter_mut().zip(xi) {
                        *wk += c * xk;
                    }
                }
            }
            s += 1;
        }
        if pgmax - pgmin <= eps || active_len == 0 {
            if active_len == n {
                break;
            }
            // Re-check on the full set before stopping (LIBLINEAR).
            active_len = n;
            pgmax_old = f64::INFINITY;
            pgmin_old = f64::NEG_INFINITY;
            continue;
        }
        pgmax_old = if pgmax <= 0.0 { f64::INFINITY } else { pgmax };
        pgmin_old = if pgmin >= 0.0 {
            f64::NEG_INFINITY
        } else {
            pgmin
        };
    }
    Ok((Array1::from(beta), epoch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::noise::rng::rng_from_seed;
    use crate::test_util::rng_points;

    #[test]
    fn a_set_cancel_flag_interrupts_the_solve() {
        let x = rng_points(5000, 3, 21);
        let y: Array1<f64> = x
            .rows()
            .into_iter()
            .map(|r| if r[0] > 0.0 { 1.0 } else { -1.0 })
            .collect();
        let stop = Cancel::new();
        stop.cancel();
        let r = linear_svm_dcd_cancellable(
            x.view(),
            y.view(),
            0.05,
            Array1::zeros(5000).view(),
            1e-12,
            10,
            &mut rng_from_seed(Some(0)),
            &stop,
        );
        assert_eq!(r, Err(DpError::Interrupted));
        let a = linear_svm_dcd_cancellable(
            x.view(),
            y.view(),
            0.05,
            Array1::zeros(5000).view(),
            1e-12,
            10,
            &mut rng_from_seed(Some(0)),
            &Cancel::new(),
        )
        .unwrap();
        let b = linear_svm_dcd(
            x.view(),
            y.view(),
            0.05,
            Array1::zeros(5000).view(),
            1e-12,
            10,
            &mut rng_from_seed(Some(0)),
        )
        .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn dcd_reaches_the_svm_optimum() {
        // Tiny 1-D problem with a known solution: points ±1 with labels ±1, w* = min(1, n·upper)…
        // use the KKT conditions instead: y_i w·f_i ≥ 1 − tol where β_i < upper, ≤ 1 + tol where β_i > 0.
        let x = rng_points(200, 3, 21);
        let y: Array1<f64> = x
            .rows()
            .into_iter()
            .map(|r| if r[0] + 0.2 * r[1] > 0.0 { 1.0 } else { -1.0 })
            .collect();
        let upper = 0.05;
        let (beta, _) = linear_svm_dcd(
            x.view(),
            y.view(),
            upper,
            Array1::zeros(200).view(),
            1e-12,
            100_000,
            &mut rng_from_seed(Some(0)),
        )
        .unwrap();
        let w = x.t().dot(&(&beta * &y));
        for i in 0..200 {
            let m = y[i] * x.row(i).dot(&w);
            if beta[i] < upper - 1e-12 {
                assert!(m >= 1.0 - 1e-9, "{i}: {m}");
            }
            if beta[i] > 1e-12 {
                assert!(m <= 1.0 + 1e-9, "{i}: {m}");
            }
        }
    }
}

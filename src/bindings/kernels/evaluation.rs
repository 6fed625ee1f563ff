//! Python bindings of [`crate::kernels::evaluation`]: argument conversion, cheap validation, GIL
//! release.
//!
//! Arrays arrive as `float64` (the Python layer converts `float32` once); any memory layout is
//! accepted without copying (C, Fortran or strided views). Errors become `ValueError`s whose
//! message starts with the argument's name. The `m × n` loops run through
//! [`run_cancellable`]: Ctrl-C raises `KeyboardInterrupt` within about one kernel block.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::bindings::interrupt::run_cancellable;
use crate::kernels::evaluation::{self, Kernel};

/// The core kernel from the `(kernel, gamma, degree, coef0, intercept_scaling)` arguments of every `_core` function
/// and class that takes a kernel (scikit-learn's names, passed as separate arguments). The one
/// conversion of the binding layer: validation and the `ValueError` messages (naming the
/// argument) are [`Kernel::from_params`]'s.
pub(crate) fn kernel_arg(
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
) -> PyResult<Kernel> {
    Ok(Kernel::from_params(
        kernel,
        gamma,
        degree,
        coef0,
        intercept_scaling,
    )?)
}

/// `K(A, B)` (`b=None`: the Gram matrix `K(A, A)` with an exact RBF diagonal).
#[pyfunction]
#[pyo3(signature = (a, b, kernel, gamma, degree, coef0, intercept_scaling))]
fn kernel_matrix<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    b: Option<PyReadonlyArray2<'py, f64>>,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let av = a.as_array();
    let work = |bv: &numpy::ndarray::ArrayView2<'_, f64>| (av.len() as f64) * (bv.nrows() as f64);
    let out = match &b {
        None => run_cancellable(py, work(&av), |c| {
            evaluation::check_inputs_cancellable(av, av, None, c)?;
            evaluation::gram_matrix_cancellable(av, &k, c)
        })?,
        Some(b) => {
            let bv = b.as_array();
            run_cancellable(py, work(&bv), |c| {
                evaluation::check_inputs_cancellable(av, bv, None, c)?;
                evaluation::kernel_matrix_cancellable(av, bv, &k, c)
            })?
        }
    };
    Ok(out.into_pyarray(py))
}

/// `K(Z, X) @ mu` without materialising `K(Z, X)`.
#[pyfunction]
#[pyo3(signature = (z, x, mu, kernel, gamma, degree, coef0, intercept_scaling))]
#[allow(clippy::too_many_arguments)]
fn kernel_predict<'py>(
    py: Python<'py>,
    z: PyReadonlyArray2<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    mu: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let (zv, xv, muv) = (z.as_array(), x.as_array(), mu.as_array());
    let work = (zv.nrows() as f64 + 1.0) * (xv.len() as f64);
    let out = run_cancellable(py, work, |c| {
        evaluation::check_inputs_cancellable(zv, xv, Some(muv), c)?;
        evaluation::kernel_predict_cancellable(zv, xv, muv, &k, c)
    })?;
    Ok(out.into_pyarray(py))
}

/// `K(Z, X) @ mus[k]` for every row `k` of `mus` (`k × n`), returned as `k × m`: each kernel block
/// evaluated once for all vectors ([`evaluation::kernel_matvecs_cancellable`]: the engine's documented
/// accuracy, not bit-for-bit [`kernel_predict`]).
#[pyfunction]
#[pyo3(signature = (z, x, mus, kernel, gamma, degree, coef0, intercept_scaling))]
#[allow(clippy::too_many_arguments)]
fn kernel_predict_many<'py>(
    py: Python<'py>,
    z: PyReadonlyArray2<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    mus: PyReadonlyArray2<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let (zv, xv, mv) = (z.as_array(), x.as_array(), mus.as_array());
    if mv.ncols() != xv.nrows() {
        return Err(crate::DpError::invalid(
            "mus",
            format!("must have x.shape[0] = {} columns, got {}", xv.nrows(), mv.ncols()),
        )
        .into());
    }
    let work = (zv.nrows() as f64 + 1.0) * (xv.len() as f64);
    let out = run_cancellable(py, work, |c| {
        for row in mv.rows() {
            evaluation::check_inputs_cancellable(zv, xv, Some(row), c)?;
        }
        let ms = mv.as_standard_layout();
        let refs: Vec<&[f64]> = ms.rows().into_iter().map(|r| r.to_slice().expect("standard layout")).collect();
        let outs = evaluation::kernel_matvecs_cancellable(zv, xv, &refs, &k, c)?;
        let m = zv.nrows();
        let flat: Vec<f64> = outs.into_iter().flatten().collect();
        Ok(numpy::ndarray::Array2::from_shape_vec((refs.len(), m), flat).expect("k × m"))
    })?;
    Ok(out.into_pyarray(py))
}

/// `K(z_i, z_i)` for every row of `z`.
#[pyfunction]
#[pyo3(signature = (z, kernel, gamma, degree, coef0, intercept_scaling))]
fn kernel_diag<'py>(
    py: Python<'py>,
    z: PyReadonlyArray2<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let zv = z.as_array();
    let out = py.detach(|| {
        evaluation::check_inputs(zv, zv, None)?;
        Ok::<_, crate::DpError>(evaluation::kernel_diag(zv, &k))
    })?;
    Ok(out.into_pyarray(py))
}

/// `R_φ²` for inputs in the ball of radius `radius`.
#[pyfunction]
#[pyo3(signature = (data_norm, kernel, gamma, degree, coef0, intercept_scaling))]
fn feature_map_radius_sq(
    data_norm: f64,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
) -> PyResult<f64> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    Ok(evaluation::feature_map_radius_sq(&k, data_norm)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kernel_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_predict, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_predict_many, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_diag, m)?)?;
    m.add_function(wrap_pyfunction!(feature_map_radius_sq, m)?)?;
    Ok(())
}

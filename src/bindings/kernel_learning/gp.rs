//! Python bindings of [`crate::kernel_learning::gp`]: argument conversion and GIL release only.

use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::bindings::interrupt::run_cancellable;
use crate::kernel_learning::gp;

/// `L⁻¹ rhs` for the leading `t × t` lower-triangular block `L` of `buffer` (no copy of the factor).
#[pyfunction]
fn gp_forward_substitution<'py>(
    py: Python<'py>,
    buffer: PyReadonlyArray2<'py, f64>,
    t: usize,
    rhs: PyReadonlyArray2<'py, f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let (l, b) = (buffer.as_array(), rhs.as_array());
    let work = 0.5 * (t as f64) * (t as f64) * (b.ncols() as f64);
    let x = run_cancellable(py, work, |c| {
        gp::forward_substitution_cancellable(l, t, b, c)
    })?;
    Ok(x.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gp_forward_substitution, m)?)?;
    Ok(())
}

//! Python bindings of [`crate::private_svm::linear_svm`]: argument conversion and GIL release only.
//! The Python name keeps its `rff_` prefix (`dpcore._core.rff_linear_svm_dcd`): `dpcore.PrivateSVM`
//! runs the solver on random Fourier features.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::bindings::interrupt::run_cancellable;
use crate::private_svm::linear_svm;

/// Dual coordinate descent for `½‖w‖² + upper Σ hinge` (no bias): returns `(beta, epochs)`.
/// A deterministic solver stream is derived from `seed`.
#[pyfunction]
#[pyo3(signature = (x, y, upper, beta0, eps, max_epochs, seed))]
#[allow(clippy::too_many_arguments)]
fn rff_linear_svm_dcd<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    upper: f64,
    beta0: PyReadonlyArray1<'py, f64>,
    eps: f64,
    max_epochs: usize,
    seed: u64,
) -> PyResult<(Bound<'py, PyArray1<f64>>, usize)> {
    let (xv, yv, bv) = (x.as_array(), y.as_array(), beta0.as_array());
    // iterative: its cost is not known in advance, so always interruptible
    let (beta, epochs) = run_cancellable(py, f64::INFINITY, |c| {
        let mut rng = crate::mechanisms::noise::rng::rng_from_seed(Some(seed));
        linear_svm::linear_svm_dcd_cancellable(xv, yv, upper, bv, eps, max_epochs, &mut rng, c)
    })?;
    Ok((beta.into_pyarray(py), epochs))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rff_linear_svm_dcd, m)?)?;
    Ok(())
}

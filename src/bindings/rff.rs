//! Python bindings of [`crate::rff`]: argument conversion and GIL release only.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::noise::{child_rng, PyChaChaRng};
use crate::rff::{self, RffKernel};

/// The `n_features × n_components` random weight matrix of the kernel's Fourier measure.
#[pyfunction]
#[pyo3(signature = (n_features, n_components, kernel, gamma, rng))]
fn rff_sample_weights<'py>(
    py: Python<'py>,
    n_features: usize,
    n_components: usize,
    kernel: &str,
    gamma: f64,
    rng: &Bound<'py, PyChaChaRng>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let k = RffKernel::from_params(kernel, gamma)?;
    let mut child = child_rng(rng)?;
    let w = py.detach(|| rff::sample_weights(n_features, n_components, &k, &mut child))?;
    Ok(w.into_pyarray(py))
}

/// `φ̂(X)` of shape `(n, 2·n_components)` for the weights `W` (`n_features × n_components`).
#[pyfunction]
#[pyo3(signature = (x, weights))]
fn rff_transform<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    weights: PyReadonlyArray2<'py, f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let (xv, wv) = (x.as_array(), weights.as_array());
    let out = py.detach(|| {
        rff::check_inputs(xv, wv)?;
        rff::transform(xv, wv)
    })?;
    Ok(out.into_pyarray(py))
}

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
    let (beta, epochs) = py.detach(|| {
        let mut rng = crate::noise::rng::rng_from_seed(Some(seed));
        rff::linear_svm_dcd(xv, yv, upper, bv, eps, max_epochs, &mut rng)
    })?;
    Ok((beta.into_pyarray(py), epochs))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rff_sample_weights, m)?)?;
    m.add_function(wrap_pyfunction!(rff_transform, m)?)?;
    m.add_function(wrap_pyfunction!(rff_linear_svm_dcd, m)?)?;
    Ok(())
}

//! Python bindings of [`crate::kernels::random_features`]: argument conversion and GIL release
//! only.

use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::bindings::interrupt::run_cancellable;
use crate::bindings::mechanisms::noise::{child_rng, PyChaChaRng};
use crate::kernels::random_features::{self, RffKernel};

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
    let w =
        py.detach(|| random_features::sample_weights(n_features, n_components, &k, &mut child))?;
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
    let work = (xv.len() as f64) * (wv.ncols() as f64);
    let out = run_cancellable(py, work, |c| {
        random_features::check_inputs(xv, wv)?;
        random_features::transform_cancellable(xv, wv, c)
    })?;
    Ok(out.into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rff_sample_weights, m)?)?;
    m.add_function(wrap_pyfunction!(rff_transform, m)?)?;
    Ok(())
}

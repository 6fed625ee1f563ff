//! Python bindings of [`crate::kernel_learning::multiclass`]: argument conversion and GIL release only.

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::bindings::interrupt::{run_cancellable, run_interruptible};
use crate::bindings::kernels::evaluation::kernel_arg;
use crate::bindings::kernel_learning::erm::progress_args;
use crate::kernel_learning::multiclass::{self, MulticlassCertificate, MulticlassOptions};

fn class_indices(y: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    y.as_array()
        .iter()
        .map(|&v| {
            usize::try_from(v)
                .map_err(|_| PyValueError::new_err(format!("y: class indices must be >= 0, got {v}")))
        })
        .collect()
}

fn cert_into_dict<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
    c: MulticlassCertificate,
) -> PyResult<()> {
    d.set_item("primal", c.primal)?;
    d.set_item("dual", c.dual)?;
    d.set_item("gap", c.gap)?;
    d.set_item("slack", c.slack)?;
    d.set_item("f_norm", c.f_norm)?;
    d.set_item("mu", c.mu.into_pyarray(py))?;
    d.set_item("decision", c.decision.into_pyarray(py))?;
    Ok(())
}

/// Fit the multinomial kernel logistic regression; returns a dict (see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (x, y, n_classes, kernel, gamma, degree, coef0, intercept_scaling, lam, tol, max_iter, cache_bytes, progress=None, sample_weight=None))]
#[allow(clippy::too_many_arguments)]
fn multiclass_fit<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, i64>,
    n_classes: usize,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
    lam: f64,
    tol: f64,
    max_iter: u64,
    cache_bytes: u64,
    progress: Option<Py<PyAny>>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let opts = MulticlassOptions {
        lam,
        tol,
        max_iter,
        cache_bytes: usize::try_from(cache_bytes).unwrap_or(usize::MAX),
    };
    let yv = class_indices(&y)?;
    let xv = x.as_array();
    let sv = sample_weight.as_ref().map(|s| s.as_array());
    let sol = run_interruptible(
        py,
        progress,
        progress_args,
        |hook| multiclass::fit_with_hook(xv, &yv, n_classes, sv, &k, &opts, hook),
    )?;
    let d = PyDict::new(py);
    d.set_item("p", sol.p.into_pyarray(py))?;
    d.set_item("n_iter", sol.n_iter)?;
    d.set_item("n_matvec", sol.n_matvec)?;
    d.set_item("converged", sol.converged)?;
    d.set_item("stop_reason", sol.stop_reason.name())?;
    d.set_item("history", sol.history)?;
    d.set_item("full_gram", sol.full_gram)?;
    cert_into_dict(py, &d, sol.cert)?;
    Ok(d)
}

/// Certificate of a dual point `p` (`n × K`, rows in the simplex; independent recomputation).
#[pyfunction]
#[pyo3(signature = (x, y, p, kernel, gamma, degree, coef0, intercept_scaling, lam, sample_weight=None))]
#[allow(clippy::too_many_arguments)]
fn multiclass_certificate<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, i64>,
    p: PyReadonlyArray2<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
    lam: f64,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let yv = class_indices(&y)?;
    let (xv, pv) = (x.as_array(), p.as_array());
    let sv = sample_weight.as_ref().map(|s| s.as_array());
    let work = (xv.nrows() as f64) * (xv.len() as f64) * (pv.ncols() as f64);
    let cert = run_cancellable(py, work, |c| {
        multiclass::certify(xv, &yv, sv, pv, &k, lam, c)
    })?;
    let d = PyDict::new(py);
    cert_into_dict(py, &d, cert)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(multiclass_fit, m)?)?;
    m.add_function(wrap_pyfunction!(multiclass_certificate, m)?)?;
    Ok(())
}

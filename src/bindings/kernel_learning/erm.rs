//! Python bindings of [`crate::kernel_learning::erm`]: argument conversion and GIL release only.

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::bindings::interrupt::{run_cancellable, run_interruptible};
use crate::bindings::kernels::evaluation::kernel_arg;
use crate::kernel_learning::erm::{self, Certificate, ErmOptions, ErmSolution, Loss};

fn cert_into_dict<'py>(py: Python<'py>, d: &Bound<'py, PyDict>, c: Certificate) -> PyResult<()> {
    d.set_item("primal", c.primal)?;
    d.set_item("dual", c.dual)?;
    d.set_item("gap", c.gap)?;
    d.set_item("w_norm", c.w_norm)?;
    d.set_item("mu", c.mu.into_pyarray(py))?;
    d.set_item("decision", c.decision.into_pyarray(py))?;
    Ok(())
}

/// The dict of one solution (`erm_fit`, each entry of `erm_fit_path`; see `_core.pyi`).
fn solution_into_dict(py: Python<'_>, sol: ErmSolution) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("a", sol.a.into_pyarray(py))?;
    d.set_item("n_iter", sol.n_iter)?;
    d.set_item("converged", sol.converged)?;
    d.set_item("stop_reason", sol.stop_reason.name())?;
    d.set_item("history", sol.history)?;
    d.set_item("full_gram", sol.full_gram)?;
    cert_into_dict(py, &d, sol.cert)?;
    Ok(d)
}

/// The `progress(iter, gap, exact, active)` arguments of a solver report.
pub(crate) fn progress_args(p: &erm::Progress) -> (u64, f64, bool, usize) {
    (p.iter, p.gap, p.exact, p.active)
}

/// Fit the kernel ERM; returns a dict (see `_core.pyi`).
///
/// The solve runs without the GIL; every ~0.1 s it re-acquires it briefly to run pending signal
/// handlers (Ctrl-C raises `KeyboardInterrupt` promptly) and to call `progress(iter, gap, exact,
/// active)` if given. An exception from either abandons the solve and is re-raised.
#[pyfunction]
#[pyo3(signature = (x, y, loss, kernel, gamma, degree, coef0, intercept_scaling, lam, tol, max_iter, cache_bytes, shrinking, progress=None, sample_weight=None))]
#[allow(clippy::too_many_arguments)]
fn erm_fit<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    loss: &str,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
    lam: f64,
    tol: f64,
    max_iter: u64,
    cache_bytes: u64,
    shrinking: bool,
    progress: Option<Py<PyAny>>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let loss = Loss::from_name(loss)?;
    let opts = ErmOptions {
        lam,
        tol,
        max_iter,
        cache_bytes: usize::try_from(cache_bytes).unwrap_or(usize::MAX),
        shrinking,
    };
    let (xv, yv) = (x.as_array(), y.as_array());
    let sv = sample_weight.as_ref().map(|s| s.as_array());
    let sol = run_interruptible(
        py,
        progress,
        progress_args,
        |hook| erm::fit_weighted_with_hook(xv, yv, sv, &k, loss, &opts, hook),
    )?;
    solution_into_dict(py, sol)
}

/// Fit the kernel logistic regression for every `lams[k]` (to `tols[k]`) in one call sharing the
/// Gram matrix, the preconditioner's factor and the exact checks (`erm::fit_path_with_hook`);
/// returns a list of dicts as `erm_fit`'s. Interruptible and with progress as `erm_fit`.
#[pyfunction]
#[pyo3(signature = (x, y, kernel, gamma, degree, coef0, intercept_scaling, lams, tols, max_iter, cache_bytes, progress=None, sample_weight=None))]
#[allow(clippy::too_many_arguments)]
fn erm_fit_path<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
    lams: Vec<f64>,
    tols: Vec<f64>,
    max_iter: u64,
    cache_bytes: u64,
    progress: Option<Py<PyAny>>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let cache = usize::try_from(cache_bytes).unwrap_or(usize::MAX);
    let (xv, yv) = (x.as_array(), y.as_array());
    let sv = sample_weight.as_ref().map(|s| s.as_array());
    let sols = run_interruptible(
        py,
        progress,
        progress_args,
        |hook| erm::fit_path_with_hook(xv, yv, sv, &k, &lams, &tols, max_iter, cache, hook),
    )?;
    sols.into_iter().map(|sol| solution_into_dict(py, sol)).collect()
}

/// Certificate of a dual point `a ∈ [0, s]` (`s` = `sample_weight`, ones by default; independent
/// recomputation).
#[pyfunction]
#[pyo3(signature = (x, y, a, loss, kernel, gamma, degree, coef0, intercept_scaling, lam, sample_weight=None))]
#[allow(clippy::too_many_arguments)]
fn erm_certificate<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    a: PyReadonlyArray1<'py, f64>,
    loss: &str,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
    lam: f64,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let k = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let loss = Loss::from_name(loss)?;
    let (xv, yv, av) = (x.as_array(), y.as_array(), a.as_array());
    let sv = sample_weight.as_ref().map(|s| s.as_array());
    let work = (xv.nrows() as f64) * (xv.len() as f64);
    let cert = run_cancellable(py, work, |c| {
        erm::certify_weighted_cancellable(xv, yv, sv, av, None, &k, loss, lam, c)
    })?;
    let d = PyDict::new(py);
    cert_into_dict(py, &d, cert)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(erm_fit, m)?)?;
    m.add_function(wrap_pyfunction!(erm_certificate, m)?)?;
    m.add_function(wrap_pyfunction!(erm_fit_path, m)?)?;
    Ok(())
}

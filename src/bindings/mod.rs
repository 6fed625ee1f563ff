//! PyO3 binding layer (feature `python`). Conversion and GIL release only: every function here
//! validates/converts its arguments, calls the pure-Rust core inside `py.detach`, and converts the
//! result back with `into_pyarray`. No mathematics lives here.
//!
//! The sub-directories mirror the core 1:1: `bindings/<layer>/<module>.rs` binds
//! `crate::<layer>::<module>` (e.g. [`kernel_learning::erm`] binds
//! [`crate::kernel_learning::erm`]).
//!
//! Shared helpers: [`kernels::evaluation::kernel_arg`] (the `(kernel, gamma, degree, coef0, intercept_scaling)`
//! arguments → the core's `Kernel`), [`interrupt::run_interruptible`] (long solves that Ctrl-C
//! can interrupt, with a progress hook) and [`interrupt::run_cancellable`] (every other long loop:
//! the core polls a `crate::cancel::Cancel` flag that Ctrl-C sets).
//! Core errors become Python exceptions in one place, the `From<DpError> for PyErr` below.

use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyValueError};
use pyo3::prelude::*;

use crate::error::DpError;

mod interrupt;
mod kernel_learning;
mod kernels;
mod mechanisms;
mod private_svm;

impl From<DpError> for PyErr {
    fn from(e: DpError) -> PyErr {
        match e {
            DpError::InvalidArgument { .. } => PyValueError::new_err(e.to_string()),
            DpError::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
            // `interrupt::run_cancellable` re-raises the signal handler's own exception; this is
            // the fallback should an interrupted core call ever reach Python without one.
            DpError::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        }
    }
}

/// The memory available now, lowered by `DPCORE_MAX_MEMORY_BYTES` when set (bytes; `None` where
/// unknown): the one limit above which the core refuses an allocation with `MemoryError`
/// (`crate::alloc`), shared with Python's size checks. An invalid cap is a `ValueError` naming it.
#[pyfunction]
fn memory_limit_bytes() -> PyResult<Option<u64>> {
    Ok(crate::alloc::memory_limit_bytes()?)
}

/// The named floating-point assumptions of `crate::fp` (compared with `dpcore._internal.fp` by the tests).
#[pyfunction]
fn fp_constants() -> std::collections::HashMap<&'static str, f64> {
    use crate::fp::*;
    [
        ("UNIT_ROUNDOFF", UNIT_ROUNDOFF),
        ("LIBM_LN_ULPS", LIBM_LN_ULPS),
        ("EXP_FAST_ULPS", EXP_FAST_ULPS),
        ("KERNEL_SUM_REL_ERROR", KERNEL_SUM_REL_ERROR),
        ("RADIUS_TOL", RADIUS_TOL),
        ("NET_SPACING_SHRINK", NET_SPACING_SHRINK),
        ("NET_THRESHOLD_SLACK", NET_THRESHOLD_SLACK),
        ("NET_INNER_SLACK", NET_INNER_SLACK),
        ("BALL_PROJ_SHRINK", BALL_PROJ_SHRINK),
    ]
    .into_iter()
    .collect()
}

/// The compiled extension module `dpcore._core`.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(memory_limit_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(fp_constants, m)?)?;
    // Registration order (and hence `_core.__all__`) as before the move to sub-directories.
    kernel_learning::erm::register(m)?;
    mechanisms::expmech::register(m)?;
    kernel_learning::gp::register(m)?;
    kernels::evaluation::register(m)?;
    private_svm::linear_svm::register(m)?;
    mechanisms::multinomial::register(m)?;
    mechanisms::noise::register(m)?;
    kernel_learning::pinp::register(m)?;
    kernels::random_features::register(m)?;
    kernel_learning::multiclass::register(m)?;
    Ok(())
}

//! Long core calls without the GIL that Ctrl-C can still interrupt.

use pyo3::call::PyCallArgs;
use pyo3::prelude::*;

use crate::error::DpResult;

/// Runs `call` without the GIL, handing it a hook that the core calls periodically with a progress
/// report `P` (about every 0.1 s, see e.g. [`crate::kernel_learning::erm::HOOK_INTERVAL`]).
///
/// Each hook call re-acquires the GIL briefly to run pending signal handlers (Ctrl-C raises
/// `KeyboardInterrupt` promptly) and then, when `progress` is given, calls
/// `progress(*progress_args(report))`. An exception from either makes the hook return `false`:
/// the core abandons the call (returning `Ok(None)`, no partial result) and the exception is
/// re-raised here. An error of the core itself is raised first.
pub(super) fn run_interruptible<P, A, R>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    progress_args: impl Fn(&P) -> A + Send + Sync,
    call: impl FnOnce(&mut dyn FnMut(&P) -> bool) -> DpResult<Option<R>> + Send,
) -> PyResult<R>
where
    A: for<'py> PyCallArgs<'py>,
    R: Send,
{
    let mut pending: Option<PyErr> = None;
    let res = py.detach(|| {
        let mut hook = |p: &P| -> bool {
            let r = Python::attach(|py| -> PyResult<()> {
                py.check_signals()?;
                if let Some(cb) = &progress {
                    cb.call1(py, progress_args(p))?;
                }
                Ok(())
            });
            match r {
                Ok(()) => true,
                Err(e) => {
                    pending = Some(e);
                    false
                }
            }
        };
        call(&mut hook)
    })?;
    match (res, pending) {
        (_, Some(e)) => Err(e),
        (Some(r), None) => Ok(r),
        // The core only abandons a call when the hook returned false, i.e. when it raised; an
        // error rather than a panic should that invariant ever break.
        (None, None) => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "internal: a core call was abandoned without a Python exception",
        )),
    }
}

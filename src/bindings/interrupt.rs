//! Long core calls without the GIL that Ctrl-C can still interrupt.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::call::PyCallArgs;
use pyo3::prelude::*;

use crate::cancel::Cancel;
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

/// How often the calling thread runs Python's signal handlers while a [`run_cancellable`] call
/// works on the rayon pool (a call that finishes earlier wakes it at once).
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Below this estimated work (multiply-adds, or ~100 per exact noise draw) a [`run_cancellable`]
/// call runs directly on the calling thread, uninterruptibly: at most a few milliseconds, where
/// the hand-off to the pool (~0.1 ms on a loaded machine) would be a measurable cost.
const MIN_CANCELLABLE_WORK: f64 = 1e7;

/// Runs `call` without the GIL, on the rayon pool, while the calling thread runs Python's signal
/// handlers every [`SIGNAL_POLL`]; when one raises (Ctrl-C: `KeyboardInterrupt`) it sets the
/// call's [`Cancel`] flag, waits for the core to stop at its next block boundary and re-raises
/// that exception. The core polls the flag itself (see [`crate::cancel`]); this layer only
/// converts the signal into the flag.
///
/// Signal handlers only run on Python's main thread: called from another thread (or from a
/// rayon worker, where polling would wait on the pool itself) the call simply runs to the end, as
/// any uninterruptible call would.
///
/// `work` is the caller's estimate of the call's cost (see [`MIN_CANCELLABLE_WORK`]; a shape-only
/// choice, and both ways compute the same bits).
pub(super) fn run_cancellable<R: Send>(
    py: Python<'_>,
    work: f64,
    call: impl FnOnce(&Cancel) -> DpResult<R> + Send,
) -> PyResult<R> {
    let cancel = Cancel::new();
    let mut pending: Option<PyErr> = None;
    let res = py.detach(|| {
        if work < MIN_CANCELLABLE_WORK || rayon::current_thread_index().is_some() {
            return call(&cancel);
        }
        let done = AtomicBool::new(false);
        let caller = std::thread::current();
        let mut out: Option<DpResult<R>> = None;
        rayon::in_place_scope(|scope| {
            let (done, cancel, out, caller) = (&done, &cancel, &mut out, caller.clone());
            scope.spawn(move |_| {
                // Wakes the caller even if `call` panics (the scope then re-raises the panic).
                let _wake = WakeOnDrop { done, caller };
                *out = Some(call(cancel));
            });
            while !done.load(Ordering::Acquire) {
                std::thread::park_timeout(SIGNAL_POLL);
                if pending.is_none() && !done.load(Ordering::Acquire) {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        pending = Some(e);
                        cancel.cancel();
                    }
                }
            }
        });
        out.expect("the spawned call ran to completion")
    });
    match (res, pending) {
        // A signal that arrived as the call finished still wins: the caller asked to stop.
        (_, Some(e)) => Err(e),
        (Ok(r), None) => Ok(r),
        (Err(e), None) => Err(e.into()),
    }
}

/// Marks a spawned call done and wakes its caller when dropped.
struct WakeOnDrop<'a> {
    done: &'a AtomicBool,
    caller: std::thread::Thread,
}

impl Drop for WakeOnDrop<'_> {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        self.caller.unpark();
    }
}

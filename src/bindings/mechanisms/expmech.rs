//! Python bindings of [`crate::mechanisms::expmech`]: argument conversion and GIL release only.
//!
//! The net is passed as `(d, nu, radius)` and rebuilt per call (`O(d)`; no state is kept). The
//! generator is the caller's `ChaChaRng`: each call takes 256 bits from it (four `next_u64`
//! draws, through its public Python method) to key a private ChaCha20 generator, from which the
//! core draws the call's stream key. Long scans run without the GIL; about every 0.1 s the GIL is
//! re-acquired briefly to run pending signal handlers (Ctrl-C raises `KeyboardInterrupt`) and to
//! call the optional `progress(n_scored, n_chunks)` callback; an exception from either abandons
//! the scan and is re-raised.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::noise::{child_rng, PyChaChaRng};
use crate::bindings::interrupt::run_interruptible;
use crate::bindings::kernels::evaluation::kernel_arg;
use crate::mechanisms::expmech::{self, BallNet, EmResult, Progress, ScanOptions, Scorer};

type SampleTuple<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    f64,
    u64,
);
type PointsTuple<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<f64>>);

/// Run `expmech::sample_opts` without the GIL with the signal/progress hook; re-raise a pending
/// Python exception.
#[allow(clippy::too_many_arguments)]
fn run_sample<'py>(
    py: Python<'py>,
    net: &BallNet,
    scorer: &Scorer<'_>,
    kappa: f64,
    exponent_bound: f64,
    rng: &Bound<'py, PyChaChaRng>,
    progress: Option<Py<PyAny>>,
    skip_trick: bool,
) -> PyResult<SampleTuple<'py>> {
    let mut local = child_rng(rng)?;
    let opts = ScanOptions {
        skip: skip_trick,
        wave_chunks: None,
    };
    let r: EmResult = run_interruptible(
        py,
        progress,
        |p: &Progress| (p.n_scored, p.n_chunks),
        |hook| expmech::sample_opts(net, scorer, kappa, exponent_bound, &mut local, hook, opts),
    )?;
    Ok((
        r.coords.into_pyarray(py),
        r.point.into_pyarray(py),
        r.score,
        r.n_scored,
    ))
}

/// `{"h", "half", "threshold", "box_size", "count_estimate", "rows_estimate"}` of the net.
#[pyfunction]
fn net_info<'py>(py: Python<'py>, d: usize, nu: f64, radius: f64) -> PyResult<Bound<'py, PyDict>> {
    let net = BallNet::new(d, nu, radius)?;
    let out = PyDict::new(py);
    out.set_item("h", net.spacing())?;
    out.set_item("half", net.half())?;
    out.set_item("threshold", net.threshold())?;
    out.set_item("box_size", net.box_size())?;
    out.set_item("count_estimate", net.estimate())?;
    out.set_item("rows_estimate", net.estimate_rows())?;
    Ok(out)
}

/// Exact number of net points; `ValueError` (naming `max_rows`) beyond `max_rows` rows.
#[pyfunction]
fn net_count(py: Python<'_>, d: usize, nu: f64, radius: f64, max_rows: u64) -> PyResult<u64> {
    let net = BallNet::new(d, nu, radius)?;
    Ok(py.detach(|| net.count_limited(max_rows))?.points)
}

/// The net in canonical order: `(coords int64 (n, d), points float64 (n, d))`.
#[pyfunction]
fn net_points<'py>(
    py: Python<'py>,
    d: usize,
    nu: f64,
    radius: f64,
    max_points: u64,
) -> PyResult<PointsTuple<'py>> {
    let net = BallNet::new(d, nu, radius)?;
    let (c, p) = py.detach(|| net.points(max_points))?;
    Ok((c.into_pyarray(py), p.into_pyarray(py)))
}

/// Snap a point of the ball to the net: `(coords int64 (d,), point float64 (d,))`.
#[pyfunction]
fn net_snap<'py>(
    py: Python<'py>,
    d: usize,
    nu: f64,
    radius: f64,
    z: PyReadonlyArray1<'py, f64>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f64>>)> {
    let net = BallNet::new(d, nu, radius)?;
    let z = z.as_array().to_vec();
    let (c, p) = net.snap(&z)?;
    Ok((
        ndarray::Array1::from(c).into_pyarray(py),
        p.into_pyarray(py),
    ))
}

/// One exponential-mechanism sample with the linear score `<z, u>`.
#[pyfunction]
#[pyo3(signature = (d, nu, radius, u, kappa, exponent_bound, rng, progress=None, _skip_trick=true))]
#[allow(clippy::too_many_arguments)]
fn em_sample_linear<'py>(
    py: Python<'py>,
    d: usize,
    nu: f64,
    radius: f64,
    u: PyReadonlyArray1<'py, f64>,
    kappa: f64,
    exponent_bound: f64,
    rng: &Bound<'py, PyChaChaRng>,
    progress: Option<Py<PyAny>>,
    _skip_trick: bool,
) -> PyResult<SampleTuple<'py>> {
    let net = BallNet::new(d, nu, radius)?;
    let scorer = Scorer::Linear { u: u.as_array() };
    run_sample(
        py,
        &net,
        &scorer,
        kappa,
        exponent_bound,
        rng,
        progress,
        _skip_trick,
    )
}

/// One exponential-mechanism sample with the kernel-sum score `sum_j coef_j K(z, points_j)`.
#[pyfunction]
#[pyo3(signature = (d, nu, radius, points, coef, kernel, gamma, degree, coef0, intercept_scaling, kappa, exponent_bound, rng, progress=None, _skip_trick=true))]
#[allow(clippy::too_many_arguments)]
fn em_sample_kernel<'py>(
    py: Python<'py>,
    d: usize,
    nu: f64,
    radius: f64,
    points: PyReadonlyArray2<'py, f64>,
    coef: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
    kappa: f64,
    exponent_bound: f64,
    rng: &Bound<'py, PyChaChaRng>,
    progress: Option<Py<PyAny>>,
    _skip_trick: bool,
) -> PyResult<SampleTuple<'py>> {
    let net = BallNet::new(d, nu, radius)?;
    let kernel = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let scorer = Scorer::KernelSum {
        kernel,
        points: points.as_array(),
        coef: coef.as_array(),
    };
    run_sample(
        py,
        &net,
        &scorer,
        kappa,
        exponent_bound,
        rng,
        progress,
        _skip_trick,
    )
}

#[allow(clippy::too_many_arguments)]
fn run_many<'py>(
    py: Python<'py>,
    net: &BallNet,
    scorer: &Scorer<'_>,
    kappa: f64,
    exponent_bound: f64,
    n_samples: usize,
    rng: &Bound<'py, PyChaChaRng>,
    skip_trick: bool,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let mut local = child_rng(rng)?;
    let idx = py.detach(|| {
        expmech::sample_many_opts(
            net,
            scorer,
            kappa,
            exponent_bound,
            n_samples,
            &mut local,
            skip_trick,
        )
    })?;
    let idx: Vec<i64> = idx.into_iter().map(|i| i as i64).collect();
    Ok(idx.into_pyarray(py))
}

/// `n_samples` independent samples (linear score) as canonical indices into `net_points`.
#[pyfunction]
#[pyo3(signature = (d, nu, radius, u, kappa, exponent_bound, n_samples, rng, _skip_trick=true))]
#[allow(clippy::too_many_arguments)]
fn em_sample_many_linear<'py>(
    py: Python<'py>,
    d: usize,
    nu: f64,
    radius: f64,
    u: PyReadonlyArray1<'py, f64>,
    kappa: f64,
    exponent_bound: f64,
    n_samples: usize,
    rng: &Bound<'py, PyChaChaRng>,
    _skip_trick: bool,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let net = BallNet::new(d, nu, radius)?;
    let scorer = Scorer::Linear { u: u.as_array() };
    run_many(
        py,
        &net,
        &scorer,
        kappa,
        exponent_bound,
        n_samples,
        rng,
        _skip_trick,
    )
}

/// `n_samples` independent samples (kernel-sum score) as canonical indices into `net_points`.
#[pyfunction]
#[pyo3(signature = (d, nu, radius, points, coef, kernel, gamma, degree, coef0, intercept_scaling, kappa, exponent_bound, n_samples, rng, _skip_trick=true))]
#[allow(clippy::too_many_arguments)]
fn em_sample_many_kernel<'py>(
    py: Python<'py>,
    d: usize,
    nu: f64,
    radius: f64,
    points: PyReadonlyArray2<'py, f64>,
    coef: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
    kappa: f64,
    exponent_bound: f64,
    n_samples: usize,
    rng: &Bound<'py, PyChaChaRng>,
    _skip_trick: bool,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let net = BallNet::new(d, nu, radius)?;
    let kernel = kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?;
    let scorer = Scorer::KernelSum {
        kernel,
        points: points.as_array(),
        coef: coef.as_array(),
    };
    run_many(
        py,
        &net,
        &scorer,
        kappa,
        exponent_bound,
        n_samples,
        rng,
        _skip_trick,
    )
}

/// The floating-point slack `eta` of every Gumbel key (see `dpcore._core.pyi`).
#[pyfunction]
fn em_key_error_bound(exponent_bound: f64) -> f64 {
    expmech::key_error_bound(exponent_bound)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(net_info, m)?)?;
    m.add_function(wrap_pyfunction!(net_count, m)?)?;
    m.add_function(wrap_pyfunction!(net_points, m)?)?;
    m.add_function(wrap_pyfunction!(net_snap, m)?)?;
    m.add_function(wrap_pyfunction!(em_sample_linear, m)?)?;
    m.add_function(wrap_pyfunction!(em_sample_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(em_sample_many_linear, m)?)?;
    m.add_function(wrap_pyfunction!(em_sample_many_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(em_key_error_bound, m)?)?;
    Ok(())
}

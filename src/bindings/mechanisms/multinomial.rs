//! Bindings of [`crate::mechanisms::multinomial`]: conversion and GIL release only.
//!
//! `p` is read zero-copy (`PyReadonlyArray1<f64>`; a strided view is copied once by the core). The
//! generator is the caller's `ChaChaRng`: each sampling call takes 256 bits from it (four
//! `next_u64` draws through its public Python method) to key a private ChaCha20 generator, from
//! which the core derives its per-chunk streams; results are identical for any thread count.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use super::noise::{child_rng, PyChaChaRng};
use crate::error::DpError;
use crate::mechanisms::multinomial::{self, DEFAULT_SUM_TOL};

type CountsPair<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>);

fn draws_count(m: i64) -> Result<usize, DpError> {
    usize::try_from(m)
        .map_err(|_| DpError::invalid("m", format!("must be an integer >= 0, got {m}")))
}

/// `m` i.i.d. draws from `p` as `(distinct indices ascending, counts)`.
#[pyfunction]
#[pyo3(signature = (p, m, rng, sum_tol=DEFAULT_SUM_TOL))]
fn multinomial_counts<'py>(
    py: Python<'py>,
    p: PyReadonlyArray1<'py, f64>,
    m: i64,
    rng: &Bound<'py, PyChaChaRng>,
    sum_tol: f64,
) -> PyResult<CountsPair<'py>> {
    let m = draws_count(m)?;
    let mut local = child_rng(rng)?;
    let view = p.as_array();
    let (idx, cnt) = py.detach(|| multinomial::multinomial_counts(view, m, sum_tol, &mut local))?;
    Ok((idx.into_pyarray(py), cnt.into_pyarray(py)))
}

/// The `m` drawn indices: sorted, or uniformly shuffled with `shuffle=True`.
#[pyfunction]
#[pyo3(signature = (p, m, rng, shuffle=false, sum_tol=DEFAULT_SUM_TOL))]
fn multinomial_draws<'py>(
    py: Python<'py>,
    p: PyReadonlyArray1<'py, f64>,
    m: i64,
    rng: &Bound<'py, PyChaChaRng>,
    shuffle: bool,
    sum_tol: f64,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let m = draws_count(m)?;
    let mut local = child_rng(rng)?;
    let view = p.as_array();
    let out =
        py.detach(|| multinomial::multinomial_draws(view, m, shuffle, sum_tol, &mut local))?;
    Ok(out.into_pyarray(py))
}

/// The uniform relative error bound of the sampled probabilities (see `dpcore._core.pyi`).
#[pyfunction]
fn multinomial_error_bound(py: Python<'_>, p: PyReadonlyArray1<'_, f64>) -> PyResult<f64> {
    let view = p.as_array();
    Ok(py.detach(|| multinomial::probability_error_bound(view))?)
}

/// The exact quantised weights `(q, T)` as Python ints (for tests and audits; small `p`).
#[pyfunction]
#[pyo3(signature = (p, sum_tol=DEFAULT_SUM_TOL))]
fn multinomial_quantized(
    py: Python<'_>,
    p: PyReadonlyArray1<'_, f64>,
    sum_tol: f64,
) -> PyResult<(Vec<u128>, u128)> {
    let view = p.as_array();
    Ok(py.detach(|| multinomial::quantized_weights(view, sum_tol))?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(multinomial_counts, m)?)?;
    m.add_function(wrap_pyfunction!(multinomial_draws, m)?)?;
    m.add_function(wrap_pyfunction!(multinomial_error_bound, m)?)?;
    m.add_function(wrap_pyfunction!(multinomial_quantized, m)?)?;
    Ok(())
}

//! Bindings of [`crate::mechanisms::noise`]: conversion and GIL release only.

use std::sync::Mutex;

use numpy::{IntoPyArray, PyArray1, PyArrayDyn, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::bindings::interrupt::run_cancellable;
use crate::error::DpError;
use rand_core::SeedableRng;

use crate::mechanisms::noise::{continuous, coupled, grid, karney, rng_from_seed, DpRng};

/// ChaCha20 generator. `ChaChaRng()` is keyed from the OS CSPRNG (secure default);
/// `ChaChaRng(seed)` is reproducible and meant for research and tests only.
#[pyclass(module = "dpcore._core", name = "ChaChaRng", frozen)]
pub struct PyChaChaRng {
    inner: Mutex<DpRng>,
    seeded: bool,
}

impl PyChaChaRng {
    fn with<T>(&self, f: impl FnOnce(&mut DpRng) -> T) -> T {
        let mut guard = self
            .inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }
}

#[pymethods]
impl PyChaChaRng {
    #[new]
    #[pyo3(signature = (seed=None))]
    fn new(seed: Option<u64>) -> Self {
        PyChaChaRng {
            inner: Mutex::new(rng_from_seed(seed)),
            seeded: seed.is_some(),
        }
    }

    /// True when the generator was created from an explicit seed (not secure).
    #[getter]
    fn seeded(&self) -> bool {
        self.seeded
    }

    /// A uniformly random 64-bit integer (used to derive seeds for sub-generators).
    fn next_u64(&self) -> u64 {
        use rand_core::Rng;
        self.with(|r| r.next_u64())
    }

    fn __repr__(&self) -> String {
        if self.seeded {
            "ChaChaRng(<seeded: reproducible, not secure>)".to_string()
        } else {
            "ChaChaRng(<OS-seeded>)".to_string()
        }
    }
}

/// A child ChaCha generator keyed by four `next_u64` draws of the caller's generator, so core code
/// can run with the GIL released while the parent stays usable (shared by the sampling bindings).
pub(crate) fn child_rng(rng: &Bound<'_, PyChaChaRng>) -> PyResult<DpRng> {
    let mut key = [0u8; 32];
    for chunk in key.chunks_exact_mut(8) {
        let w: u64 = rng.call_method0("next_u64")?.extract()?;
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    Ok(DpRng::from_seed(key))
}

/// Work units of one exact noise draw for `run_cancellable` (a few hundred ns each).
const NOISE_DRAW_WORK: f64 = 100.0;

fn parse_noise(noise: &str, num: u128, den: u128) -> Result<grid::DiscreteNoise, DpError> {
    match noise {
        "laplace" => Ok(grid::DiscreteNoise::Laplace { num, den }),
        "gaussian" => Ok(grid::DiscreteNoise::Gaussian { num, den }),
        other => Err(DpError::invalid(
            "noise",
            format!("must be 'laplace' or 'gaussian', got {other:?}"),
        )),
    }
}

/// Snap `values` to the grid 2^grid_exponent and add exact discrete noise (units of the grid).
/// With `n_samples`, return `n_samples` independent releases as rows of a 2-D array.
#[pyfunction]
#[pyo3(signature = (values, grid_exponent, noise, num, den, rng, n_samples=None))]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature
fn grid_release<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, f64>,
    grid_exponent: i32,
    noise: &str,
    num: u128,
    den: u128,
    rng: &PyChaChaRng,
    n_samples: Option<usize>,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let noise = parse_noise(noise, num, den)?;
    let view = values.as_array();
    let work = NOISE_DRAW_WORK * (view.len() as f64) * (n_samples.unwrap_or(1) as f64);
    let out = run_cancellable(py, work, |c| {
        rng.with(|r| match n_samples {
            None => {
                grid::release_cancellable(view, grid_exponent, &noise, r, c).map(|a| a.into_dyn())
            }
            Some(n) => grid::release_repeated_cancellable(view, n, grid_exponent, &noise, r, c)
                .map(|a| a.into_dyn()),
        })
    })?;
    Ok(out.into_pyarray(py))
}

/// The analytic-Gaussian release: every coordinate is `j·2^grid_exponent` with `j` the exact
/// rounding of `value + sigma·Z` to the grid (Karney's exact normal, exact cell decision).
/// With `n_samples`, return `n_samples` independent releases as rows of a 2-D array.
#[pyfunction]
#[pyo3(signature = (values, sigma, grid_exponent, rng, n_samples=None))]
fn analytic_release<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, f64>,
    sigma: f64,
    grid_exponent: i32,
    rng: &PyChaChaRng,
    n_samples: Option<usize>,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let view = values.as_array();
    let work = NOISE_DRAW_WORK * (view.len() as f64) * (n_samples.unwrap_or(1) as f64);
    let out = run_cancellable(py, work, |c| {
        rng.with(|r| match n_samples {
            None => karney::release_analytic_cancellable(view, sigma, grid_exponent, r, c)
                .map(|a| a.into_dyn()),
            Some(n) => {
                karney::release_analytic_repeated_cancellable(view, n, sigma, grid_exponent, r, c)
                    .map(|a| a.into_dyn())
            }
        })
    })?;
    Ok(out.into_pyarray(py))
}

/// `n` raw exact discrete Laplace / Gaussian integers with rational parameter `num/den`.
#[pyfunction]
fn discrete_samples<'py>(
    py: Python<'py>,
    noise: &str,
    num: u128,
    den: u128,
    n: usize,
    rng: &PyChaChaRng,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let noise = parse_noise(noise, num, den)?;
    let work = NOISE_DRAW_WORK * n as f64;
    let out = run_cancellable(py, work, |c| {
        rng.with(|r| grid::sample_integers_cancellable(n, &noise, r, c))
    })?;
    Ok(out.into_pyarray(py))
}

/// A vector with density ∝ exp(-||b||/scale) in R^dim (Gamma(dim, scale) norm, uniform direction).
#[pyfunction]
fn gamma_norm_vector<'py>(
    py: Python<'py>,
    dim: usize,
    scale: f64,
    rng: &PyChaChaRng,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let out = py.detach(|| rng.with(|r| continuous::gamma_norm_vector(dim, scale, r)))?;
    Ok(out.into_pyarray(py))
}

/// `(b, err)`: a float Gamma-norm vector and a proven bound on its distance to an exact one.
#[pyfunction]
fn gamma_norm_vector_coupled<'py>(
    py: Python<'py>,
    dim: usize,
    scale: f64,
    rng: &PyChaChaRng,
) -> PyResult<(Bound<'py, PyArray1<f64>>, f64)> {
    let (b, err) = py.detach(|| rng.with(|r| coupled::gamma_norm_vector_coupled(dim, scale, r)))?;
    Ok((b.into_pyarray(py), err))
}

/// `(b, err)`: a float N(0, sigma² I) vector and a proven bound on its distance to an exact one.
#[pyfunction]
fn normal_vector_coupled<'py>(
    py: Python<'py>,
    dim: usize,
    sigma: f64,
    rng: &PyChaChaRng,
) -> PyResult<(Bound<'py, PyArray1<f64>>, f64)> {
    let (b, err) = py.detach(|| rng.with(|r| coupled::normal_vector_coupled(dim, sigma, r)))?;
    Ok((b.into_pyarray(py), err))
}

/// `n` standard Gumbel variates.
#[pyfunction]
fn gumbel<'py>(py: Python<'py>, n: usize, rng: &PyChaChaRng) -> Bound<'py, PyArray1<f64>> {
    py.detach(|| rng.with(|r| continuous::gumbel(n, r)))
        .into_pyarray(py)
}

/// `n` standard exponential variates.
#[pyfunction]
fn exponential<'py>(py: Python<'py>, n: usize, rng: &PyChaChaRng) -> Bound<'py, PyArray1<f64>> {
    py.detach(|| rng.with(|r| continuous::exponential(n, r)))
        .into_pyarray(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyChaChaRng>()?;
    m.add_function(wrap_pyfunction!(grid_release, m)?)?;
    m.add_function(wrap_pyfunction!(discrete_samples, m)?)?;
    m.add_function(wrap_pyfunction!(analytic_release, m)?)?;
    m.add_function(wrap_pyfunction!(gamma_norm_vector, m)?)?;
    m.add_function(wrap_pyfunction!(gamma_norm_vector_coupled, m)?)?;
    m.add_function(wrap_pyfunction!(normal_vector_coupled, m)?)?;
    m.add_function(wrap_pyfunction!(gumbel, m)?)?;
    m.add_function(wrap_pyfunction!(exponential, m)?)?;
    Ok(())
}

//! Bindings of [`crate::kernel_learning::pinp`]: conversion, locking and GIL release only.

use std::sync::Mutex;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::bindings::interrupt::run_cancellable;
use crate::bindings::kernels::evaluation::kernel_arg;
use crate::kernel_learning::pinp::{self, PinpConfig, PinpState};
use crate::mechanisms::noise::grid::DiscreteNoise;
use crate::mechanisms::noise::{rng_from_seed, DpRng};

#[allow(clippy::too_many_arguments)]
fn make_config(
    kernel: &str,
    gamma: f64,
    degree: i64,
    coef0: f64,
    intercept_scaling: f64,
    grid_exponent: i32,
    num: u128,
    den: u128,
    sigma: f64,
    eta: f64,
    max_updates: u64,
    max_queries: u64,
) -> PyResult<PinpConfig> {
    let cfg = PinpConfig {
        kernel: kernel_arg(kernel, gamma, degree, coef0, intercept_scaling)?,
        grid_exponent,
        noise: DiscreteNoise::Laplace { num, den },
        sigma,
        eta,
        max_updates,
        max_queries,
    };
    cfg.validate()?;
    Ok(cfg)
}

struct Inner {
    state: PinpState,
    rng: DpRng,
}

/// The mutable core of one PINP session: calibrated constants, update buffer, counters and the
/// session's ChaCha20 generator. `dpcore.kernel_learning.pinp.PINP` wraps it (validation, persistence, locking).
#[pyclass(module = "dpcore._core", name = "PinpSession", frozen)]
pub struct PyPinpSession {
    cfg: PinpConfig,
    inner: Mutex<Inner>,
}

impl PyPinpSession {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }
}

#[pymethods]
impl PyPinpSession {
    #[new]
    #[pyo3(signature = (dim, kernel, gamma, degree, coef0, intercept_scaling, grid_exponent, num, den, sigma, eta, max_updates, max_queries, seed=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        dim: usize,
        kernel: &str,
        gamma: f64,
        degree: i64,
        coef0: f64,
        intercept_scaling: f64,
        grid_exponent: i32,
        num: u128,
        den: u128,
        sigma: f64,
        eta: f64,
        max_updates: u64,
        max_queries: u64,
        seed: Option<u64>,
    ) -> PyResult<Self> {
        let cfg = make_config(
            kernel,
            gamma,
            degree,
            coef0,
            intercept_scaling,
            grid_exponent,
            num,
            den,
            sigma,
            eta,
            max_updates,
            max_queries,
        )?;
        Ok(PyPinpSession {
            cfg,
            inner: Mutex::new(Inner {
                state: PinpState::new(dim),
                rng: rng_from_seed(seed),
            }),
        })
    }

    /// Replace the state by a persisted one (`points`: n_updates × dim).
    fn restore(
        &self,
        points: PyReadonlyArray2<'_, f64>,
        alphas: PyReadonlyArray1<'_, f64>,
        n_answered: u64,
    ) -> PyResult<()> {
        let st = PinpState::restore(points.as_array(), alphas.as_array(), n_answered)?;
        if st.n_updates() > self.cfg.max_updates || n_answered > self.cfg.max_queries {
            return Err(
                crate::DpError::invalid("state", "counters exceed the calibrated limits").into(),
            );
        }
        self.with(|i| i.state = st);
        Ok(())
    }

    /// Answer `z` in order. Returns `(answers, noise, updates, stop)`. Ctrl-C raises
    /// `KeyboardInterrupt` promptly; the interrupted batch leaves the session's state (update
    /// points, `α`s, `n_answered`) as it was before the call (`pinp::answer_batch_cancellable`).
    #[allow(clippy::type_complexity)]
    fn answer<'py>(
        &self,
        py: Python<'py>,
        z: PyReadonlyArray2<'py, f64>,
        x: PyReadonlyArray2<'py, f64>,
        mu: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<(
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i8>>,
        &'static str,
    )> {
        let (zv, xv, muv) = (z.as_array(), x.as_array(), mu.as_array());
        let work = (zv.nrows() as f64 + 1.0) * (xv.len() as f64);
        let out = run_cancellable(py, work, |c| {
            self.with(|i| {
                crate::kernels::evaluation::check_inputs_cancellable(zv, xv, Some(muv), c)?;
                pinp::answer_batch_cancellable(&self.cfg, &mut i.state, zv, xv, muv, &mut i.rng, c)
            })
        })?;
        Ok((
            out.answers.into_pyarray(py),
            out.noise.into_pyarray(py),
            out.updates.into_pyarray(py),
            out.stop.as_str(),
        ))
    }

    /// Audit helper: one fresh session per seed, with this session's calibration, on the same
    /// queries (see `pinp::sample_sessions`). Does not touch this session's state or generator.
    fn sample_sessions<'py>(
        &self,
        py: Python<'py>,
        exact: PyReadonlyArray1<'py, f64>,
        gram: PyReadonlyArray2<'py, f64>,
        seeds: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let (ev, gv) = (exact.as_array(), gram.as_array());
        let seeds = seeds.as_array().to_vec();
        let work = (seeds.len() as f64) * (gv.len() as f64);
        let out = run_cancellable(py, work, |c| {
            pinp::sample_sessions_cancellable(&self.cfg, ev, gv, &seeds, c)
        })?;
        Ok(out.into_pyarray(py))
    }

    #[getter]
    fn n_answered(&self) -> u64 {
        self.with(|i| i.state.n_answered)
    }

    #[getter]
    fn n_updates(&self) -> u64 {
        self.with(|i| i.state.n_updates())
    }

    /// Copy of `(points, alphas, n_answered)`, taken atomically.
    fn snapshot<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<f64>>, u64) {
        let (p, a, n) = self.with(|i| {
            (
                i.state.points_view().to_owned(),
                i.state.alphas.clone(),
                i.state.n_answered,
            )
        });
        (p.into_pyarray(py), a.into_pyarray(py), n)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPinpSession>()?;
    Ok(())
}

//! PyO3 binding layer (feature `python`). Conversion and GIL release only: every function here
//! validates/converts its arguments, calls the pure-Rust core inside `py.detach`, and converts the
//! result back with `into_pyarray`. No mathematics lives here.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::error::DpError;

mod erm;
mod expmech;
mod kernels;
mod multinomial;
mod noise;
mod pinp;
mod rff;

impl From<DpError> for PyErr {
    fn from(e: DpError) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

/// The compiled extension module `dpcore._core`.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    erm::register(m)?;
    expmech::register(m)?;
    kernels::register(m)?;
    multinomial::register(m)?;
    noise::register(m)?;
    pinp::register(m)?;
    rff::register(m)?;
    Ok(())
}

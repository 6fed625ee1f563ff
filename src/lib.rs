//! dpcore — Rust core of a differentially private kernel-learning library.
//!
//! The core is pure Rust on `ndarray` views, organised by concern:
//!
//! * [`kernels`] — fused, tiled, parallel kernel evaluation (`K(Z, X) @ mu` without an m×n matrix).
//! * [`noise`]   — randomness (ChaCha, OS-seeded by default) and floating-point-safe noise samplers:
//!   exact discrete Laplace / discrete Gaussian on power-of-two grids (Canonne–Kamath–Steinke 2020),
//!   Gamma-norm vectors, Gumbel and exponential draws.
//! * [`error`]   — the error type shared by the core; the binding layer maps it to Python exceptions.
//!
//! The PyO3 binding layer lives in `bindings` (feature `python`): it only converts arguments,
//! releases the GIL and calls into the core. No mathematics lives there.

pub mod alloc;
pub mod erm;
pub mod error;
pub mod expmech;
pub mod fp;
pub mod gp;
pub mod kernels;
pub mod multinomial;
pub mod noise;
pub mod pinp;
pub mod rff;

#[cfg(feature = "python")]
mod bindings;

pub use error::{DpError, DpResult};

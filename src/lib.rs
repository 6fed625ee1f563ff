//! dpcore — Rust core of a differentially private kernel-learning library.
//!
//! The core is pure Rust on `ndarray` views, organised by concern:
//!
//! * [`numerics`] — shared floating-point building blocks: the CPU-feature (AVX2 / FMA) dispatch
//!   macros and the vectorised `exp` (its accuracy is the named assumption [`fp::EXP_FAST_ULPS`]).
//! * [`kernels`] — fused, tiled, parallel kernel evaluation (`K(Z, X) @ mu` without an m×n matrix).
//! * [`kernel_cache`] — the LRU cache of kernel rows used by the dual solvers of [`erm`].
//! * [`linear_svm`] — dual coordinate descent for the linear SVM on the random features of
//!   [`rff`].
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
pub mod kernel_cache;
pub mod kernels;
pub mod linear_svm;
pub mod multinomial;
pub mod noise;
pub mod numerics;
pub mod pinp;
pub mod rff;

#[cfg(feature = "python")]
mod bindings;

pub use error::{DpError, DpResult};

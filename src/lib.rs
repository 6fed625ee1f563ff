//! dpcore — Rust core of a differentially private kernel-learning library.
//!
//! The core is pure Rust on `ndarray` views, laid out like the Python package (by layer, then model
//! family):
//!
//! * [`mechanisms`] — privacy mechanisms (`dpcore.mechanisms`): randomness and floating-point-safe
//!   noise samplers ([`mechanisms::noise`]: ChaCha, OS-seeded by default; exact discrete Laplace /
//!   discrete Gaussian on power-of-two grids (Canonne–Kamath–Steinke 2020), Gamma-norm vectors,
//!   Gumbel and exponential draws), the exponential mechanism ([`mechanisms::expmech`]) and exact
//!   multinomial sampling ([`mechanisms::multinomial`]).
//! * [`kernels`] — kernels (`dpcore.kernels`): fused, tiled, parallel kernel evaluation
//!   ([`kernels::evaluation`]: `K(Z, X) @ mu` without an m×n matrix) and random Fourier features
//!   ([`kernels::random_features`]).
//! * [`kernel_learning`] — kernel models (`dpcore.kernel_learning`): the certified kernel SVM / LR
//!   solver ([`kernel_learning::erm`]) with its LRU cache of kernel rows
//!   ([`kernel_learning::kernel_cache`]), PINP ([`kernel_learning::pinp`]) and the solves of the
//!   Gaussian-process service ([`kernel_learning::gp`]).
//! * [`private_svm`] — the private linear SVM (`dpcore.private_svm`): dual coordinate descent on
//!   random Fourier features ([`private_svm::linear_svm`]).
//!
//! Crate-wide infrastructure stays at the root:
//!
//! * [`numerics`] — shared floating-point building blocks: the CPU-feature (AVX2 / FMA) dispatch
//!   macros and the vectorised `exp` (its accuracy is the named assumption [`fp::EXP_FAST_ULPS`]).
//! * [`fp`]      — the named floating-point assumptions (`dpcore._internal.fp`).
//! * [`alloc`]   — fallible allocation of outputs sized by user input.
//! * [`cancel`]  — the flag long loops poll so that Ctrl-C can interrupt them.
//! * [`error`]   — the error type shared by the core; the binding layer maps it to Python exceptions.
//!
//! The PyO3 binding layer lives in `bindings` (feature `python`), in the same sub-directories as
//! the core: it only converts arguments, releases the GIL and calls into the core. No mathematics
//! lives there.

pub mod alloc;
pub mod cancel;
pub mod error;
pub mod fp;
pub mod kernel_learning;
pub mod kernels;
pub mod mechanisms;
pub mod numerics;
pub mod private_svm;

#[cfg(test)]
mod test_util;

#[cfg(feature = "python")]
mod bindings;

pub use error::{DpError, DpResult};

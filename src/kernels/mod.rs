//! Kernels: evaluation and approximation of the kernel functions the learners use
//! (Python: `dpcore.kernels`).
//!
//! * [`evaluation`] — fused, tiled, parallel kernel evaluation (`K(Z, X) @ mu` without an m×n
//!   matrix), kernel matrices and feature-map radii (`dpcore.kernels.evaluation`).
//! * [`random_features`] — random Fourier features of shift-invariant kernels
//!   (`dpcore.kernels.random_features`).

pub mod evaluation;
pub mod random_features;

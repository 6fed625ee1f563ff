//! Bindings of [`crate::kernels`] (Python: `dpcore.kernels`).

pub(super) mod evaluation;
pub(super) mod random_features;

//! Bindings of [`crate::kernel_learning`] (Python: `dpcore.kernel_learning`).

pub(super) mod erm;
pub(super) mod gp;
pub(super) mod multiclass;
pub(super) mod pinp;

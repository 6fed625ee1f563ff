//! Kernel learning: the non-private kernel models that the private releases perturb
//! (Python: `dpcore.kernel_learning`).
//!
//! * [`erm`] — the certified kernel SVM / logistic-regression solver (`KernelSVM`,
//!   `dpcore.kernel_learning.svm`), with the LRU row cache of [`kernel_cache`].
//! * [`pinp`] — the query loop of PINP, private interactive non-linear prediction
//!   (`dpcore.kernel_learning.pinp`).
//! * [`multiclass`] — certified multinomial kernel logistic regression, `F ∈ H^K` (issue 24;
//!   `dpcore.kernel_learning.multiclass`).
//! * [`gp`] — the forward substitution of the lazily sampled Gaussian-process path
//!   (`dpcore.kernel_learning.gp_service`).

pub mod erm;
pub mod gp;
pub mod kernel_cache;
pub mod multiclass;
pub(crate) mod klr_newton;
pub mod pinp;

//! Bindings of [`crate::private_svm`] (Python: `dpcore.private_svm`).

pub(super) mod linear_svm;

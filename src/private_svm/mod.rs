//! The private linear SVM on random Fourier features (Python: `dpcore.private_svm`).
//!
//! * [`linear_svm`] — dual coordinate descent for the linear SVM on the features of
//!   [`crate::kernels::random_features`].

pub mod linear_svm;

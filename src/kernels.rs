//! Kernel engine (placeholder: being written).

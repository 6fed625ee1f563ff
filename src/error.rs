//! Error type of the Rust core. Every invalid-argument error names the offending parameter so that
//! the Python layer can raise a `ValueError` that tells the user what to fix.

use std::fmt;

/// Errors raised by the core.
#[derive(Debug, Clone, PartialEq)]
pub enum DpError {
    /// An argument is invalid; `name` is the parameter's public name.
    InvalidArgument { name: &'static str, reason: String },
}

impl DpError {
    /// Build an invalid-argument error for parameter `name`.
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        DpError::InvalidArgument { name, reason: reason.into() }
    }
}

impl fmt::Display for DpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DpError::InvalidArgument { name, reason } => write!(f, "{name}: {reason}"),
        }
    }
}

impl std::error::Error for DpError {}

/// Result alias of the core.
pub type DpResult<T> = Result<T, DpError>;

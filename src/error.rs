//! Error type of the Rust core. Every error names the offending public parameter so that the Python
//! layer can raise an exception that tells the user what to fix: `InvalidArgument` becomes a
//! `ValueError`, `OutOfMemory` a `MemoryError` (as numpy and scikit-learn raise for allocations that
//! cannot be made — never an interpreter abort), and `Interrupted` (a call stopped through its
//! [`crate::cancel::Cancel`] flag) re-raises the pending `KeyboardInterrupt`.

use std::fmt;

/// Errors raised by the core.
#[derive(Debug, Clone, PartialEq)]
pub enum DpError {
    /// An argument is invalid; `name` is the parameter's public name.
    InvalidArgument { name: &'static str, reason: String },
    /// An output sized by parameter `name` cannot be allocated (`bytes` requested; `None` when the
    /// size does not even fit in the address space).
    OutOfMemory {
        name: &'static str,
        what: String,
        bytes: Option<u128>,
    },
    /// The call was interrupted through its [`crate::cancel::Cancel`] flag (Ctrl-C from Python); no
    /// partial result exists and any state the call mutates was restored.
    Interrupted,
}

impl DpError {
    /// Build an invalid-argument error for parameter `name`.
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        DpError::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }

    /// Build an out-of-memory error for the output `what` sized by parameter `name`.
    pub fn out_of_memory(name: &'static str, what: impl Into<String>, bytes: Option<u128>) -> Self {
        DpError::OutOfMemory {
            name,
            what: what.into(),
            bytes,
        }
    }
}

impl fmt::Display for DpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DpError::InvalidArgument { name, reason } => write!(f, "{name}: {reason}"),
            DpError::OutOfMemory { name, what, bytes: Some(b) } => write!(
                f,
                "{name}: cannot allocate {what} ({:.3} GiB): more than the memory available now (or the cap \
                 DPCORE_MAX_MEMORY_BYTES); use smaller inputs or process them in blocks",
                *b as f64 / (1u64 << 30) as f64
            ),
            DpError::OutOfMemory { name, what, bytes: None } => {
                write!(f, "{name}: {what} would exceed the address space; use smaller inputs")
            }
            DpError::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for DpError {}

/// Result alias of the core.
pub type DpResult<T> = Result<T, DpError>;

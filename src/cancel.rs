//! Cooperative cancellation of long core loops (Ctrl-C from Python).
//!
//! Every loop of the core whose work grows like `m · n` (kernel blocks, PINP query chunks, rows of a
//! forward substitution, chunks of noise draws, random-feature tiles) takes a [`Cancel`] and polls it
//! once per block of work — a relaxed atomic load every few milliseconds at most, next to blocks
//! that each cost thousands of floating-point operations, so the check is not measurable. A loop
//! that sees the flag stops at its next block boundary and its function returns
//! [`DpError::Interrupted`]: no partial result is ever returned, and a function that mutates state
//! (PINP's [`answer_batch`](crate::kernel_learning::pinp::answer_batch)) restores it first.
//!
//! Who sets the flag is not the core's business: the Python binding runs the call on the rayon pool
//! while the calling thread runs Python's signal handlers every few tens of milliseconds, and sets
//! the flag when one raises (`KeyboardInterrupt`). Pure-Rust callers pass [`Cancel::never`].
//!
//! Nothing in a result depends on the flag when it is not set: blocks are evaluated exactly as
//! before, in the same order and with the same summation trees, so the results are bit-for-bit
//! those of an uncancellable call.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{DpError, DpResult};

/// A cancellation flag shared by a long call and whoever may interrupt it.
#[derive(Debug, Default)]
pub struct Cancel {
    flag: AtomicBool,
    /// Unit tests only: the flag sets itself after this many polls (interrupts mid-loop
    /// deterministically); `u64::MAX` never.
    #[cfg(test)]
    countdown: std::sync::atomic::AtomicU64,
}

static NEVER: Cancel = Cancel::new();

impl Cancel {
    /// A flag that is not set.
    pub const fn new() -> Self {
        Cancel {
            flag: AtomicBool::new(false),
            #[cfg(test)]
            countdown: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    /// Unit tests only: a flag that sets itself at the `polls`-th poll.
    #[cfg(test)]
    pub(crate) fn after(polls: u64) -> Self {
        let c = Cancel::new();
        c.countdown.store(polls, Ordering::Relaxed);
        c
    }

    /// A shared flag that nobody sets (for callers that never interrupt). Do not call
    /// [`Cancel::cancel`] on it.
    pub fn never() -> &'static Cancel {
        &NEVER
    }

    /// Ask every loop polling this flag to stop at its next block boundary.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called (one relaxed atomic load).
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        #[cfg(test)]
        {
            if self.countdown.load(Ordering::Relaxed) != u64::MAX
                && self.countdown.fetch_sub(1, Ordering::Relaxed) <= 1
            {
                self.cancel();
            }
        }
        self.flag.load(Ordering::Relaxed)
    }

    /// `Err(DpError::Interrupted)` once the flag is set.
    #[inline]
    pub fn check(&self) -> DpResult<()> {
        if self.is_cancelled() {
            Err(DpError::Interrupted)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_round_trip() {
        let c = Cancel::new();
        assert!(c.check().is_ok());
        c.cancel();
        assert!(c.is_cancelled());
        assert_eq!(c.check(), Err(DpError::Interrupted));
        assert!(!Cancel::never().is_cancelled());
        let c = Cancel::after(3);
        assert!(!c.is_cancelled() && !c.is_cancelled());
        assert!(c.is_cancelled() && c.is_cancelled());
    }
}

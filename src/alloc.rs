//! Fallible allocation of outputs whose size comes from user input.
//!
//! `vec![0.0; n]` and `Array2::zeros` abort the whole process when the allocator refuses
//! ("memory allocation of … bytes failed", exit 134). Every output of the core that is sized by a
//! user-controlled dimension is allocated here instead: the byte count is computed with checked
//! arithmetic (overflow or more than `isize::MAX` bytes is refused), the memory is requested with
//! `alloc_zeroed` (lazily zeroed pages, like `calloc`) and a refusal becomes
//! [`DpError::OutOfMemory`] naming the public parameter — a Python `MemoryError`. Requests larger
//! than [`memory_limit_bytes`] — the memory *available now* (Linux `/proc/meminfo` `MemAvailable`:
//! what can be had without swapping), lowered by the user's cap `DPCORE_MAX_MEMORY_BYTES` when set —
//! are refused before asking the allocator, so that a system with unrestricted overcommit does not
//! hand out pages that the computation would then fill (swapping, then the OOM killer).

use std::alloc::{alloc_zeroed, Layout};

use ndarray::Array2;

use crate::error::{DpError, DpResult};

/// Bytes of `len` elements of `T`, or `None` if that overflows `isize::MAX` (Rust's allocation limit).
pub fn bytes_for<T>(len: usize) -> Option<usize> {
    len.checked_mul(std::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
}

/// Environment variable holding the user's cap on one output's size, in bytes (a positive integer).
pub const MAX_MEMORY_ENV: &str = "DPCORE_MAX_MEMORY_BYTES";

/// `MemAvailable` of a `/proc/meminfo` text, in bytes (`None` if absent or unparsable).
pub fn mem_available_from(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// The user's cap from the value of [`MAX_MEMORY_ENV`] (`None`: not set), or `InvalidArgument` naming it.
pub fn parse_user_cap(value: Option<&str>) -> DpResult<Option<u64>> {
    let Some(raw) = value else { return Ok(None) };
    match raw.trim().parse::<u64>() {
        Ok(b) if b > 0 => Ok(Some(b)),
        _ => Err(DpError::invalid(
            MAX_MEMORY_ENV,
            format!("must be a positive integer number of bytes (e.g. 8000000000), got {raw:?}"),
        )),
    }
}

/// The largest output (bytes) the core will allocate now: the memory available on this machine
/// (Linux `MemAvailable`, read at each call — it changes as other processes run) lowered by the
/// user's cap `DPCORE_MAX_MEMORY_BYTES` when set. `Ok(None)` when neither is known (no limit but
/// the allocator's); an invalid cap is an `InvalidArgument` naming the variable.
pub fn memory_limit_bytes() -> DpResult<Option<u64>> {
    let cap = parse_user_cap(std::env::var(MAX_MEMORY_ENV).ok().as_deref())?;
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .as_deref()
        .and_then(mem_available_from);
    Ok(match (avail, cap) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    })
}

/// A zero-filled `Vec<f64>` of length `len`, or `OutOfMemory` naming `name`.
pub fn zeros_f64(name: &'static str, what: &str, len: usize) -> DpResult<Vec<f64>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let bytes = bytes_for::<f64>(len)
        .ok_or_else(|| DpError::out_of_memory(name, what, (len as u128).checked_mul(8)))?;
    if memory_limit_bytes()?.is_some_and(|lim| bytes as u64 > lim) {
        return Err(DpError::out_of_memory(name, what, Some(bytes as u128)));
    }
    let layout = Layout::array::<f64>(len)
        .map_err(|_| DpError::out_of_memory(name, what, Some(bytes as u128)))?;
    // SAFETY: `layout` has non-zero size (len > 0, size_of::<f64>() = 8). A non-null pointer from
    // `alloc_zeroed` points to `len` f64 slots (all-zero bits = 0.0) allocated by the global
    // allocator with exactly the layout `Vec<f64>` uses for capacity `len`, so `from_raw_parts`
    // takes ownership correctly.
    unsafe {
        let ptr = alloc_zeroed(layout) as *mut f64;
        if ptr.is_null() {
            return Err(DpError::out_of_memory(name, what, Some(bytes as u128)));
        }
        Ok(Vec::from_raw_parts(ptr, len, len))
    }
}

/// A zero-filled `rows × cols` C-order matrix, or `OutOfMemory` naming `name`.
pub fn zeros2(name: &'static str, what: &str, rows: usize, cols: usize) -> DpResult<Array2<f64>> {
    let len = rows.checked_mul(cols).ok_or_else(|| {
        DpError::out_of_memory(name, what, (rows as u128).checked_mul(cols as u128 * 8))
    })?;
    let v = zeros_f64(name, what, len)?;
    Ok(Array2::from_shape_vec((rows, cols), v).expect("length rows*cols"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_allocations_are_zero() {
        let a = zeros2("X", "test", 3, 4).unwrap();
        assert_eq!(a.dim(), (3, 4));
        assert!(a.iter().all(|&v| v == 0.0));
        assert!(zeros_f64("X", "test", 0).unwrap().is_empty());
    }

    #[test]
    fn impossible_sizes_are_errors_not_aborts() {
        // overflow of rows*cols
        match zeros2("n_components", "the random weights", usize::MAX / 2, 3) {
            Err(DpError::OutOfMemory {
                name: "n_components",
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        // more than isize::MAX bytes
        assert!(matches!(
            zeros_f64("X", "t", usize::MAX / 8),
            Err(DpError::OutOfMemory { .. })
        ));
        // 2 TiB: refused by the allocator on any machine that runs the tests
        let e = zeros2("Z", "the kernel matrix", 1 << 19, 1 << 19).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("Z: cannot allocate the kernel matrix"),
            "{e}"
        );
    }

    #[test]
    fn limit_is_available_memory_and_the_user_cap() {
        let text = "MemTotal:       24684092 kB\nMemFree:  100 kB\nMemAvailable:   1000 kB\nSwapTotal: 99999999 kB\n";
        assert_eq!(mem_available_from(text), Some(1000 * 1024));
        assert_eq!(mem_available_from("MemTotal: 5 kB\n"), None);
        assert_eq!(parse_user_cap(None), Ok(None));
        assert_eq!(parse_user_cap(Some(" 4096 ")), Ok(Some(4096)));
        for bad in ["0", "-1", "abc", "1e9", ""] {
            let e = parse_user_cap(Some(bad)).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("DPCORE_MAX_MEMORY_BYTES: must be a positive integer"),
                "{e}"
            );
        }
        // the limit never exceeds what /proc/meminfo says is available
        if let Some(avail) = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .as_deref()
            .and_then(mem_available_from)
        {
            if std::env::var(MAX_MEMORY_ENV).is_err() {
                assert!(memory_limit_bytes().unwrap().unwrap() <= avail + (1 << 30));
            }
        }
    }
}

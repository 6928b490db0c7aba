//! Counters of which path the op took, for the tests that show it. Not part of the API.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How often each path ran since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Index checks that read a word back from a GPU device (raw indices, checked).
    pub device_index_checks: usize,
    /// GPU forwards and backwards by the one-pass kernels (every index has its own target).
    pub one_pass_kernels: usize,
    /// GPU forwards and backwards by the winner pass.
    pub winner_kernels: usize,
    /// CPU backwards that gathered without looking for duplicates.
    pub host_gathers_without_duplicates: usize,
}

/// The counts so far.
pub fn counts() -> Counts {
    Counts {
        device_index_checks: DEVICE_INDEX_CHECKS.load(Ordering::Relaxed),
        one_pass_kernels: ONE_PASS_KERNELS.load(Ordering::Relaxed),
        winner_kernels: WINNER_KERNELS.load(Ordering::Relaxed),
        host_gathers_without_duplicates: HOST_GATHERS_WITHOUT_DUPLICATES.load(Ordering::Relaxed),
    }
}

pub(crate) static DEVICE_INDEX_CHECKS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static ONE_PASS_KERNELS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static WINNER_KERNELS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static HOST_GATHERS_WITHOUT_DUPLICATES: AtomicUsize = AtomicUsize::new(0);

/// Counts one run of a path.
pub(crate) fn record(counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::Relaxed);
}

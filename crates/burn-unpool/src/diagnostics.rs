//! Counters of which path the op took, for the tests that show it (feature `diagnostics`). Not
//! part of the API: without the feature, recording a path compiles to nothing.

#[cfg(feature = "diagnostics")]
use std::sync::atomic::{AtomicUsize, Ordering};

/// A path the op can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// An index check that read a word back from a GPU device (raw indices, checked).
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
    DeviceIndexCheck,
    /// A GPU forward or backward by the one-pass kernels (every index has its own target).
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
    OnePassKernel,
    /// A GPU forward or backward by the winner pass.
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
    WinnerKernel,
    /// A kernel launched on a GPU device by this crate (its own, or one of Burn's it asked for:
    /// a copy, a cast, a fill).
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
    KernelLaunch,
    /// A GPU kernel of this crate launched with vectors of several elements per unit.
    #[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
    VectorisedLaunch,
    /// A CPU backward that gathered without looking for duplicates.
    HostGatherWithoutDuplicates,
    /// A strided CPU input copied to row-major before a kernel (a row-major one is borrowed).
    #[cfg_attr(not(any(feature = "flex", feature = "ndarray")), allow(dead_code))]
    HostCopy,
}

/// Counts one run of `path` (with the feature `diagnostics`; otherwise nothing).
#[inline(always)]
pub(crate) fn record(path: Path) {
    #[cfg(feature = "diagnostics")]
    counters::of(path).fetch_add(1, Ordering::Relaxed);
    #[cfg(not(feature = "diagnostics"))]
    let _ = path;
}

#[cfg(feature = "diagnostics")]
pub use counters::{Counts, counts};

#[cfg(feature = "diagnostics")]
thread_local! {
    static COMPOSITION_FORCED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every device of this thread taking the composition of Burn ops (pools and
/// unpooling), as devices without this crate's kernels do: the tests run it on the same cases
/// as the kernels.
#[cfg(feature = "diagnostics")]
pub fn with_composition<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            COMPOSITION_FORCED.with(|forced| forced.set(self.0));
        }
    }
    let _restore = Restore(COMPOSITION_FORCED.with(|forced| forced.replace(true)));
    f()
}

/// Whether [`with_composition`] is running on this thread (never without the feature).
#[inline(always)]
pub(crate) fn composition_forced() -> bool {
    #[cfg(feature = "diagnostics")]
    return COMPOSITION_FORCED.with(|forced| forced.get());
    #[cfg(not(feature = "diagnostics"))]
    false
}

#[cfg(feature = "diagnostics")]
mod counters {
    use super::{AtomicUsize, Ordering, Path};

    /// How often each path ran since the process started.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Counts {
        /// Index checks that read a word back from a GPU device (raw indices, checked).
        pub device_index_checks: usize,
        /// GPU forwards and backwards by the one-pass kernels (every index has its own target).
        pub one_pass_kernels: usize,
        /// GPU forwards and backwards by the winner pass.
        pub winner_kernels: usize,
        /// Kernels launched on GPU devices by this crate (its own, or Burn's copies, casts and
        /// fills it asked for).
        pub kernel_launches: usize,
        /// GPU kernels of this crate launched with vectors of several elements per unit.
        pub vectorised_launches: usize,
        /// CPU backwards that gathered without looking for duplicates.
        pub host_gathers_without_duplicates: usize,
        /// Strided CPU inputs copied to row-major before a kernel.
        pub host_copies: usize,
    }

    static COUNTERS: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];

    /// The counter of `path`.
    pub(super) fn of(path: Path) -> &'static AtomicUsize {
        &COUNTERS[path as usize]
    }

    /// The counts so far.
    pub fn counts() -> Counts {
        let read = |path| of(path).load(Ordering::Relaxed);
        Counts {
            device_index_checks: read(Path::DeviceIndexCheck),
            one_pass_kernels: read(Path::OnePassKernel),
            winner_kernels: read(Path::WinnerKernel),
            kernel_launches: read(Path::KernelLaunch),
            vectorised_launches: read(Path::VectorisedLaunch),
            host_gathers_without_duplicates: read(Path::HostGatherWithoutDuplicates),
            host_copies: read(Path::HostCopy),
        }
    }
}

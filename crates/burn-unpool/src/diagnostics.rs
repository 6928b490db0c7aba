//! Path counters and a switch to the composition (feature `__diagnostics`, else no-ops).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum Path {
    /// An index check that read a word back from a GPU device.
    DeviceIndexCheck,
    /// A GPU forward or backward by the one-pass kernels.
    OnePassKernel,
    /// A GPU forward or backward by the winner pass.
    WinnerKernel,
    /// A kernel launched on a GPU device (this crate's, or a copy, cast or fill it asked for).
    KernelLaunch,
    /// A GPU kernel launched with vectors of several elements per unit.
    VectorisedLaunch,
    /// A CPU backward that gathered without looking for duplicates.
    HostGatherWithoutDuplicates,
    /// A strided CPU input copied to row-major before a kernel.
    HostCopy,
}

#[inline(always)]
pub(crate) fn record(path: Path) {
    #[cfg(feature = "__diagnostics")]
    enabled::COUNTERS[path as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(feature = "__diagnostics"))]
    let _ = path;
}

/// Whether [`with_composition`] runs on this thread.
#[inline(always)]
pub(crate) fn composition_forced() -> bool {
    #[cfg(feature = "__diagnostics")]
    return enabled::FORCED.with(|forced| forced.get());
    #[cfg(not(feature = "__diagnostics"))]
    false
}

#[cfg(feature = "__diagnostics")]
pub use enabled::{Counts, counts, with_composition};

#[cfg(feature = "__diagnostics")]
#[allow(missing_docs)]
mod enabled {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::Path;

    pub(super) static COUNTERS: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];

    thread_local! {
        pub(super) static FORCED: Cell<bool> = const { Cell::new(false) };
    }

    /// How often each path ran since the process started.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Counts {
        pub device_index_checks: usize,
        pub one_pass_kernels: usize,
        pub winner_kernels: usize,
        pub kernel_launches: usize,
        pub vectorised_launches: usize,
        pub host_gathers_without_duplicates: usize,
        pub host_copies: usize,
    }

    /// The counts so far.
    pub fn counts() -> Counts {
        let read = |path: Path| COUNTERS[path as usize].load(Ordering::Relaxed);
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

    /// Runs `f` with every op of this thread on the composition.
    pub fn with_composition<T>(f: impl FnOnce() -> T) -> T {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                FORCED.with(|forced| forced.set(self.0));
            }
        }
        let _restore = Restore(FORCED.with(|forced| forced.replace(true)));
        f()
    }
}

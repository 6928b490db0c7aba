//! Output buffers: zero-filled by the OS or written whole by the kernel, and backed by huge pages
//! where the OS allows it.

use core::mem::MaybeUninit;

use bytemuck::Zeroable;

use crate::error::UnpoolError;

/// Buffers at least this large ask for transparent huge pages. glibc serves them with a fresh
/// mapping (its dynamic mmap threshold stops at 32 MiB); smaller ones may come from the heap,
/// already faulted in, where the advice only costs time (measured: backward of SegNet s1, 8.0 ms
/// with it, 5.9 ms without).
const HUGE_PAGE_THRESHOLD: usize = 32 << 20;

/// A zero-filled buffer of the elements of `shape` (a plan's, whose element count is checked).
///
/// The memory comes zeroed from the allocator (`calloc`, a fresh mapping for large sizes), so no
/// separate zero-fill pass runs. A fresh mapping costs one page fault per page on first touch:
/// for a 44 MB output that is ~11k faults of 4 KiB; asking for huge pages (`madvise`, honoured
/// when transparent huge pages are in `madvise` or `always` mode) makes it ~22: SegNet s1's
/// forward took 23 ms without the advice and 16 ms with it, in one run.
pub(crate) fn zeroed_buffer<T: Zeroable>(shape: &[usize]) -> Result<Vec<T>, UnpoolError> {
    let len = element_count::<T>(shape)?;
    let buffer: Vec<T> = bytemuck::allocation::try_zeroed_vec(len)
        .map_err(|_| allocation_failed::<T>(len, shape))?;
    advise_if_large(buffer.as_ptr() as usize, len * size_of::<T>());
    Ok(buffer)
}

/// A buffer of the elements of `shape` that `fill` writes whole: for outputs the kernel writes every
/// element of, where a zero-fill would only be overwritten (recycled heap memory is zeroed by a
/// `memset`: 0.5 ms of SegNet s1's 2 ms backward here).
///
/// `fill` must write every element when it returns `Ok`; on `Err` the buffer is dropped unread.
pub(crate) fn written_buffer<T: Copy>(
    shape: &[usize],
    fill: impl FnOnce(&mut [MaybeUninit<T>]) -> Result<(), UnpoolError>,
) -> Result<Vec<T>, UnpoolError> {
    let len = element_count::<T>(shape)?;
    let mut buffer: Vec<T> = Vec::new();
    buffer
        .try_reserve_exact(len)
        .map_err(|_| allocation_failed::<T>(len, shape))?;
    advise_if_large(buffer.as_ptr() as usize, len * size_of::<T>());
    fill(&mut buffer.spare_capacity_mut()[..len])?;
    // SAFETY: the capacity is at least `len`, and `fill` returned `Ok`, having written every
    // one of the first `len` elements (its contract).
    unsafe { buffer.set_len(len) };
    Ok(buffer)
}

/// Whether a fresh buffer of `bytes` comes zeroed from the OS: glibc serves it with a fresh
/// mapping ([`HUGE_PAGE_THRESHOLD`]), so `calloc` writes nothing. A smaller one may be recycled
/// heap memory, which `calloc` zeroes with one `memset` on the calling thread before the parallel
/// kernel starts (a third of SegNet s3's batch-1 forward here): the kernels zero those planes
/// themselves ([`write_zeros`]), each in the task that then writes it, while it is in cache.
/// The threshold is glibc's; with another allocator the answer is only a matter of speed, since
/// both paths give zeros.
pub(crate) fn zeroed_by_the_os(bytes: usize) -> bool {
    bytes >= HUGE_PAGE_THRESHOLD
}

/// `cells`, with zeros written over every one of them.
pub(crate) fn write_zeros<T: Zeroable + Copy>(cells: &mut [MaybeUninit<T>]) -> &mut [T] {
    cells.fill(MaybeUninit::new(T::zeroed()));
    // SAFETY: every cell was just written with `T::zeroed()`, a valid `T`; `MaybeUninit<T>` has
    // the layout of `T`, so the slice reads as `[T]` of the same length.
    unsafe { &mut *(cells as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// The element count of `shape`; a count past `usize::MAX` (a 32-bit target) is a buffer that
/// cannot be allocated, not an overflow.
fn element_count<T>(shape: &[usize]) -> Result<usize, UnpoolError> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| allocation_failed::<T>(usize::MAX, shape))
}

#[cold]
fn allocation_failed<T>(len: usize, shape: &[usize]) -> UnpoolError {
    UnpoolError::AllocationFailed {
        shape: shape.to_vec(),
        bytes: len.saturating_mul(size_of::<T>()),
    }
}

fn advise_if_large(start: usize, bytes: usize) {
    if bytes >= HUGE_PAGE_THRESHOLD {
        advise_huge_pages(start, bytes);
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: usize, bytes: usize) {
    const PAGE: usize = 4096;
    let begin = start.next_multiple_of(PAGE);
    let end = (start + bytes) & !(PAGE - 1);
    if end > begin {
        // SAFETY: the range lies inside an allocation this function's caller owns and has not
        // touched; MADV_HUGEPAGE only changes how the kernel backs it, never its contents.
        unsafe {
            libc::madvise(begin as *mut libc::c_void, end - begin, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use core::mem::MaybeUninit;

    use super::{write_zeros, zeroed_buffer};

    #[test]
    fn write_zeros_writes_every_cell() {
        for len in [0, 1, 7, 4099] {
            let mut cells = vec![MaybeUninit::new(u32::MAX); len];
            let zeros = write_zeros(&mut cells);
            assert_eq!(zeros.len(), len);
            assert!(zeros.iter().all(|&v| v == 0));
        }
    }

    #[test]
    fn an_impossible_buffer_is_an_error() {
        let err = zeroed_buffer::<u64>(&[1 << 30, 1 << 30]).unwrap_err();
        assert!(err.to_string().contains("could not allocate"), "{err}");
    }

    #[test]
    fn large_and_small_buffers_are_zero() {
        for len in [0, 7, 3 << 20] {
            let buffer = zeroed_buffer::<f32>(&[len]).unwrap();
            assert_eq!(buffer.len(), len);
            assert!(buffer.iter().all(|v| v.to_bits() == 0));
        }
    }
}

//! Output buffers: zero-filled by the OS or written whole by the kernel, and backed by huge pages
//! where the OS allows it.

use core::mem::MaybeUninit;

use bytemuck::Zeroable;

use crate::error::UnpoolError;

/// Buffers at least this large ask for transparent huge pages: glibc serves them with a fresh
/// mapping (its mmap threshold stops at 32 MiB); smaller ones may be heap already faulted in.
const HUGE_PAGE_THRESHOLD: usize = 32 << 20;

/// A buffer of `shape`'s elements zeroed by the allocator (`calloc`, a fresh mapping when large).
pub(crate) fn zeroed_buffer<T: Zeroable>(shape: &[usize]) -> Result<Vec<T>, UnpoolError> {
    let len = element_count::<T>(shape)?;
    let buffer: Vec<T> = bytemuck::allocation::try_zeroed_vec(len)
        .map_err(|_| allocation_failed::<T>(len, shape))?;
    advise_if_large(buffer.as_ptr() as usize, len * size_of::<T>());
    Ok(buffer)
}

/// A buffer of `shape`'s elements with no zero-fill: `fill` must write every one before `Ok`.
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
    // SAFETY: the capacity is at least `len`, and `fill` returned `Ok`, so it wrote all `len`.
    unsafe { buffer.set_len(len) };
    Ok(buffer)
}

/// Whether a fresh buffer of `bytes` comes zeroed from the OS; smaller ones get [`write_zeros`].
pub(crate) fn zeroed_by_the_os(bytes: usize) -> bool {
    bytes >= HUGE_PAGE_THRESHOLD
}

pub(crate) fn write_zeros<T: Zeroable + Copy>(cells: &mut [MaybeUninit<T>]) -> &mut [T] {
    cells.fill(MaybeUninit::new(T::zeroed()));
    // SAFETY: every cell now holds a valid `T`, and `MaybeUninit<T>` has the layout of `T`.
    unsafe { &mut *(cells as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// The element count of `shape`; past `usize::MAX` it is a failed allocation, not an overflow.
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
        // SAFETY: inside the caller's untouched allocation; MADV_HUGEPAGE keeps its contents.
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

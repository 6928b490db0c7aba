//! The CPU kernels: one generic N-d core for every rank, element type and index type.
//!
//! Work is split over `(n, c)` planes, so threads never share an output plane: each plane is
//! written by one thread in row-major order of `x`, which makes "last write wins" deterministic
//! for any thread count. Global (ONNX) indices that point into another plane cannot be split that
//! way; they are detected and the tensor is then processed as one chunk, in order.
//!
//! The kernels work on plain slices, so they can be used without tensors:
//!
//! ```
//! use burn_unpool::{MaxUnpoolOptions, checks, kernel};
//!
//! // One plane of 2 values unpooled into 4 positions; the second index repeats the first.
//! let plan = checks::plan(&[1, 1, 2], &[1, 1, 2], &MaxUnpoolOptions::new([2])).unwrap();
//! let out = kernel::unpool_forward(&[5.0f32, 6.0], &[3i64, 3], &plan).unwrap();
//! assert_eq!(out, [0.0, 0.0, 0.0, 6.0]);
//! let dx = kernel::unpool_backward(&[1.0f32, 2.0, 3.0, 4.0], &[3i64, 3], &plan).unwrap();
//! assert_eq!(dx, [0.0, 4.0]);
//! assert_eq!(kernel::winners(&[3i64, 3], &plan).unwrap(), [(1, 3)]);
//! ```

mod buffer;
mod placement;
mod scatter;
mod winners;

pub use buffer::zeroed_buffer;
pub(crate) use placement::Placement;
pub use scatter::{unpool_forward, unpool_forward_into};
pub use winners::{unpool_backward, winners};

use core::ops::Range;

use bytemuck::Zeroable;
use rayon::prelude::*;

use crate::checks::{UnpoolError, index_error};
use crate::{IndexLayout, UnpoolPlan};

/// An index element type: a signed integer the kernels read as `i64`.
pub trait IndexValue: Copy + Send + Sync + 'static {
    /// The value, widened without loss.
    fn to_i64(self) -> i64;
}

impl IndexValue for i32 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
}

impl IndexValue for i64 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self
    }
}

/// The first invalid index of a chunk: its position inside the chunk and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadIndex {
    /// Position of the element, counted from the start of the chunk.
    pub element: usize,
    /// The index value as given.
    pub value: i64,
}

/// The valid index values of one chunk: `[base, base + len)`, read relative to `base`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IndexWindow {
    /// The value that maps to the chunk's first position.
    pub base: i64,
    /// The number of valid values.
    pub len: usize,
}

impl IndexWindow {
    /// The index relative to the chunk, or `None` when it lies outside it.
    #[inline(always)]
    pub(crate) fn relative(&self, value: i64) -> Option<usize> {
        let rel = value.wrapping_sub(self.base);
        (rel >= 0 && (rel as u64) < self.len as u64).then_some(rel as usize)
    }
}

/// Runs `chunk` over every `(n, c)` plane in parallel, or once over all planes when global indices
/// cross planes. `out` is split into pieces of `out_plane_len` elements per plane.
///
/// `chunk(planes, out, window)` processes the planes in `planes`, writing into `out`.
pub(crate) fn for_each_chunk<T, F>(
    plan: &UnpoolPlan,
    out: &mut [T],
    out_plane_len: usize,
    chunk: F,
) -> Result<(), UnpoolError>
where
    T: Zeroable + Copy + Send,
    F: Fn(Range<usize>, &mut [T], IndexWindow) -> Result<(), BadIndex> + Sync,
{
    let planes = plan.planes();
    let in_plane = plan.input_plane_len();
    if plan.input_len() == 0 || out_plane_len == 0 {
        return Ok(());
    }
    let index_plane = plan.index_plane_len();
    let base_of = |p: usize| match plan.layout {
        IndexLayout::PerPlane => 0,
        IndexLayout::Global => (p * index_plane) as i64,
    };

    let first_error = out
        .par_chunks_mut(out_plane_len)
        .enumerate()
        .map(|(p, out)| {
            let window = IndexWindow {
                base: base_of(p),
                len: index_plane,
            };
            chunk(p..p + 1, out, window).map_err(|bad| (p, bad))
        })
        .filter_map(Result::err)
        .min_by_key(|(p, _)| *p);

    let Some((p, bad)) = first_error else {
        return Ok(());
    };
    let whole = IndexWindow {
        base: 0,
        len: planes * index_plane,
    };
    if plan.layout == IndexLayout::Global && whole.relative(bad.value).is_some() {
        // A valid global index into another plane: redo everything as one chunk, in order.
        out.fill(T::zeroed());
        return chunk(0..planes, out, whole)
            .map_err(|bad| index_error(plan, bad.element, bad.value));
    }
    Err(index_error(plan, p * in_plane + bad.element, bad.value))
}

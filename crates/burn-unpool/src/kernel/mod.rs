//! The CPU kernels: one generic N-d core for every rank, element type and index type.
//!
//! Work is split over `(n, c)` planes, so threads never share an output plane: each plane is
//! written by one thread in row-major order of `x`, which makes "last write wins" deterministic
//! for any thread count. Global (ONNX) indices that point into another plane cannot be split that
//! way; they are detected and the tensor is then processed as one chunk, in order.
//!
//! The index check (`scan`) serves every device; the rest runs on the host backends, so a build
//! with neither `flex` nor `ndarray` compiles it without calling it (the benchmarks still do).
#![cfg_attr(not(any(feature = "flex", feature = "ndarray")), allow(dead_code))]

mod buffer;
mod gather;
pub(crate) mod host;
mod parallel;
mod placement;
pub(crate) mod pool;
mod scan;
mod scatter;
mod winners;

pub(crate) use gather::{gather, unpool_backward};
pub(crate) use parallel::{Split, for_each_piece};
pub(crate) use placement::Placement;
pub(crate) use scan::first_invalid_index;
pub(crate) use scatter::{unpool_forward, unpool_forward_into};
pub(crate) use winners::winners;

use core::ops::Range;
use std::sync::{Mutex, PoisonError};

use bytemuck::Zeroable;

use crate::error::UnpoolError;
use crate::{IndexLayout, UnpoolPlan};

/// A value element type: plain data the kernels copy, shared across threads.
pub(crate) trait Value: Copy + Zeroable + Send + Sync {}

impl<T: Copy + Zeroable + Send + Sync> Value for T {}

/// An index element type: any integer dtype. The kernels read it as `i64`; a `u64` past
/// `i64::MAX` reads as `i64::MAX`, which no plan addresses, so it still fails the range check.
/// Errors report the value as given ([`IndexValue::to_i128`]).
pub(crate) trait IndexValue: Copy + Send + Sync + 'static {
    /// The value, widened without loss, or saturated at `i64::MAX`.
    fn to_i64(self) -> i64;
    /// The value, widened without loss.
    fn to_i128(self) -> i128;
}

macro_rules! index_values {
    ($($index:ty),*) => {$(
        impl IndexValue for $index {
            #[inline(always)]
            fn to_i64(self) -> i64 {
                i64::try_from(self).unwrap_or(i64::MAX)
            }

            fn to_i128(self) -> i128 {
                i128::from(self)
            }
        }
    )*};
}

index_values!(i8, i16, i32, i64, u8, u16, u32, u64);

/// The first invalid index of a chunk: its position inside the chunk and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadIndex {
    /// Position of the element, counted from the start of the chunk.
    pub element: usize,
    /// The index value as given.
    pub value: i128,
}

/// Where an index of a chunk lands, seen from that chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Landing {
    /// Inside the chunk, at this position relative to its start.
    At(usize),
    /// Out of range, in a plan whose invalid indices are skipped: nowhere.
    Skipped,
    /// Outside the chunk: out of range, or a global index into another plane.
    Outside,
}

/// The index values a chunk addresses: `[base, base + len)`, read relative to `base`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IndexWindow {
    /// The value that maps to the chunk's first position.
    pub base: i64,
    /// The number of values the chunk addresses.
    pub len: usize,
    /// When invalid indices are skipped, the end of the valid range `[0, end)`.
    pub skip_outside: Option<usize>,
}

impl IndexWindow {
    /// Where `value` lands.
    #[inline(always)]
    pub(crate) fn land(&self, value: i64) -> Landing {
        let rel = value.wrapping_sub(self.base);
        if rel >= 0 && (rel as u64) < self.len as u64 {
            return Landing::At(rel as usize);
        }
        match self.skip_outside {
            Some(end) if value < 0 || value as u64 >= end as u64 => Landing::Skipped,
            _ => Landing::Outside,
        }
    }
}

/// The indices of one chunk and where they land in the chunk's output: read relative to the
/// chunk's window, then placed in its output plane(s) by `place`.
pub(crate) struct ChunkIndices<'a, I, P> {
    pub indices: &'a [I],
    pub window: IndexWindow,
    pub place: P,
}

impl<I: IndexValue, P: Fn(usize) -> usize> ChunkIndices<'_, I, P> {
    /// The output position of `index`, the index of `element`: `Skipped` when it is skipped,
    /// `Outside` when it lands outside the chunk.
    #[inline(always)]
    pub(crate) fn land(&self, index: I) -> Landing {
        match self.window.land(index.to_i64()) {
            Landing::At(relative) => Landing::At((self.place)(relative)),
            other => other,
        }
    }

    /// The error for the index of `element`, which landed outside the chunk.
    #[cold]
    pub(crate) fn bad(&self, element: usize) -> BadIndex {
        BadIndex {
            element,
            value: self.indices[element].to_i128(),
        }
    }
}

/// Binds `$chunk` to the [`ChunkIndices`] of `$indices` in `$window`, placed by `$placement`, and
/// evaluates `$body`, monomorphized for the identity placement (every plan but the ONNX
/// reference rule's) so the kernels' loops stay tight.
macro_rules! with_chunk {
    ($placement:expr, $indices:expr, $window:expr, |$chunk:ident| $body:expr) => {
        match $placement {
            Placement::Identity => {
                let $chunk = ChunkIndices {
                    indices: $indices,
                    window: $window,
                    place: |i| i,
                };
                $body
            }
            embed => {
                let $chunk = ChunkIndices {
                    indices: $indices,
                    window: $window,
                    place: |i| embed.place(i),
                };
                $body
            }
        }
    };
}
pub(crate) use with_chunk;

/// Runs `chunk` over every `(n, c)` plane in parallel, or once over all planes when global indices
/// cross planes. `out` is split into pieces of `out_plane_len` elements per plane.
///
/// `chunk(planes, out, window)` processes the planes in `planes`, writing into `out`, and reports
/// the first index that lands outside its window; after an error the planes that follow it in
/// the same piece are not run (the result is an error, or all planes again as one chunk).
/// Without input values `out` is only zeroed.
/// `out` may be uninitialised (`MaybeUninit` cells): then `chunk` must write or zero every cell
/// of its piece before it returns `Ok`, as the forward's `write_zeros` does first.
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
    if plan.input_len() == 0 || out_plane_len == 0 {
        // No value to place: the output is its zeros (written here for buffers not zeroed yet).
        out.fill(T::zeroed());
        return Ok(());
    }
    let (planes, in_plane) = (plan.planes(), plan.input_plane_len());
    let index_plane = plan.index_plane_len();
    let skip_outside = (!plan.reports_invalid_indices()).then(|| plan.index_range_end());
    let window_of = |p: usize| IndexWindow {
        base: match plan.layout() {
            IndexLayout::PerPlane => 0,
            IndexLayout::Global => (p * index_plane) as i64,
        },
        len: index_plane,
        skip_outside,
    };

    let split = Split::of(planes, out.len() + plan.input_len());
    let planes_per_piece = split.units_per_piece;
    // The first error by plane: a piece stops at its first, whose plane is its lowest.
    let first_error = Mutex::new(None::<(usize, BadIndex)>);
    let pieces = out.chunks_mut(out_plane_len * planes_per_piece).enumerate();
    for_each_piece(split, pieces, |(piece, out)| {
        let first_plane = piece * planes_per_piece;
        for (p, out) in (first_plane..).zip(out.chunks_mut(out_plane_len)) {
            if let Err(bad) = chunk(p..p + 1, out, window_of(p)) {
                let mut first = first_error.lock().unwrap_or_else(PoisonError::into_inner);
                if first.as_ref().is_none_or(|(q, _)| p < *q) {
                    *first = Some((p, bad));
                }
                return;
            }
        }
    });

    let first_error = first_error
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let Some((p, bad)) = first_error else {
        return Ok(());
    };
    let whole = IndexWindow {
        base: 0,
        len: planes * index_plane,
        skip_outside,
    };
    if plan.layout() == IndexLayout::Global
        && matches!(whole.land(saturating_i64(bad.value)), Landing::At(_))
    {
        // A valid global index into another plane: redo everything as one chunk, in order.
        out.fill(T::zeroed());
        return chunk(0..planes, out, whole)
            .map_err(|bad| plan.index_error(bad.element, bad.value));
    }
    Err(plan.index_error(p * in_plane + bad.element, bad.value))
}

/// `value` as the kernels read it: saturated at the ends of `i64`.
fn saturating_i64(value: i128) -> i64 {
    value.clamp(i64::MIN.into(), i64::MAX.into()) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MaxUnpoolOptions;

    #[test]
    fn duplicates_keep_the_last_write_and_its_gradient() {
        // One plane of 2 values unpooled into 4 positions; the second index repeats the first.
        let plan = UnpoolPlan::new(&[1, 1, 2], &[1, 1, 2], &MaxUnpoolOptions::new([2])).unwrap();
        let out = unpool_forward(&[5.0f32, 6.0], &[3i64, 3], &plan).unwrap();
        assert_eq!(out, [0.0, 0.0, 0.0, 6.0]);
        let dx = unpool_backward(&[1.0f32, 2.0, 3.0, 4.0], &[3i64, 3], &plan).unwrap();
        assert_eq!(dx, [0.0, 4.0]);
        assert_eq!(winners(&[3i64, 3], &plan).unwrap(), [(1, 3)]);
    }

    #[test]
    fn work_large_enough_for_rayons_split_places_every_value() {
        // 2 planes of 1024 x 1024 unpooled 2x2 into 2048 x 2048: 10.5M elements, past the size
        // from which rayon splits the planes (parallel.rs), so this is the path that runs. Each
        // value lands in its window's corner picked by its position, read back by hand below.
        let (planes, side) = (2usize, 1024usize);
        let plan = UnpoolPlan::new(
            &[1, planes, side, side],
            &[1, planes, side, side],
            &MaxUnpoolOptions::new([2, 2]),
        )
        .unwrap();
        let split = Split::of(planes, plan.output_len() + plan.input_len());
        assert!(split.by_rayon && split.units_per_piece == 1, "{split:?}");
        let target = |p: usize| {
            let (row, col) = ((p / side) % side, p % side);
            let (dy, dx) = (p % 2, (p / 3) % 2);
            (2 * row + dy) * 2 * side + 2 * col + dx
        };
        let len = planes * side * side;
        let x: Vec<f32> = (0..len).map(|p| (p % 1000) as f32 + 1.0).collect();
        let indices: Vec<i32> = (0..len).map(|p| target(p) as i32).collect();
        let out = unpool_forward(&x, &indices, &plan).unwrap();
        // Where element `p` lands in the whole output.
        let landing = |p: usize| (p / (side * side)) * 4 * side * side + target(p);
        for (p, &value) in x.iter().enumerate() {
            assert_eq!(out[landing(p)], value, "element {p}");
        }
        assert_eq!(out.iter().filter(|&&v| v != 0.0).count(), len);
        let grad: Vec<f32> = (0..out.len()).map(|o| (o % 997) as f32).collect();
        let dx = unpool_backward(&grad, &indices, &plan).unwrap();
        for (p, &d) in dx.iter().enumerate() {
            assert_eq!(d, grad[landing(p)], "element {p}");
        }
    }

    #[test]
    fn a_skipping_plan_drops_out_of_range_indices_only() {
        let options = MaxUnpoolOptions::new([2]).with_index_layout(IndexLayout::Global);
        let plan = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &options).unwrap();
        // Element 1 points into the other plane (valid), element 2 past the tensor (skipped).
        let indices = [0i64, 5, 8, -1];
        let x = [1.0f32, 2.0, 3.0, 4.0];
        assert!(unpool_forward(&x, &indices, &plan).is_err());
        let unchecked = UnpoolPlan::new(&[1, 2, 2], &[1, 2, 2], &options.without_index_check());
        let out = unpool_forward(&x, &indices, &unchecked.unwrap()).unwrap();
        assert_eq!(out, [1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0]);
    }
}

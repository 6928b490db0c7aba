//! The CPU kernels of Flex and NdArray: one generic N-d core for every rank and dtype. Work is
//! split over `(n, c)` planes, each written in row-major order of `x`, so the last write wins for
//! any thread count; global indices into another plane run the tensor as one chunk, in order.

mod buffer;
#[cfg(feature = "flex")]
mod flex;
mod gather;
mod glue;
mod host;
mod max_pool;
#[cfg(feature = "ndarray")]
mod ndarray;
mod parallel;
mod placement;
mod scatter;

use gather::unpool_backward;
use parallel::{Split, for_each_piece};
use placement::Placement;
use scatter::unpool_forward;

use core::ops::Range;
use std::sync::{Mutex, PoisonError};

use bytemuck::Zeroable;

use crate::IndexLayout;
use crate::error::UnpoolError;
use crate::plan::UnpoolPlan;

pub(crate) trait Value: Copy + Zeroable + Send + Sync {}

impl<T: Copy + Zeroable + Send + Sync> Value for T {}

/// An integer index type, read as `i64` (saturating, so a huge `u64` fails the range check).
pub(crate) trait IndexValue: Copy + Send + Sync + 'static {
    fn to_i64(self) -> i64;
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
    pub element: usize,
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
    pub base: i64,
    pub len: usize,
    /// When invalid indices are skipped, the end of the valid range `[0, end)`.
    pub skip_outside: Option<usize>,
}

impl IndexWindow {
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

/// The indices of one chunk, read relative to `window` and placed in the output by `place`.
pub(crate) struct ChunkIndices<'a, I, P> {
    pub indices: &'a [I],
    pub window: IndexWindow,
    pub place: P,
}

impl<I: IndexValue, P: Fn(usize) -> usize> ChunkIndices<'_, I, P> {
    /// The output position of `index`, or why it has none.
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

/// Binds `$chunk` to a [`ChunkIndices`] and evaluates `$body`, with the identity placement inlined.
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

/// Runs `chunk` per `(n, c)` plane in parallel, or once over all planes when global indices cross
/// planes; the first error by plane wins. `chunk` must write its whole piece of `out` before `Ok`.
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
        // No value to place: write the zeros (the buffer may not be zeroed yet).
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

fn saturating_i64(value: i128) -> i64 {
    value.clamp(i64::MIN.into(), i64::MAX.into()) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MaxUnpoolOptions;

    #[test]
    fn duplicates_keep_the_last_write_and_its_gradient() {
        let plan = UnpoolPlan::new(&[1, 1, 2], &[1, 1, 2], &MaxUnpoolOptions::new([2])).unwrap();
        let out = unpool_forward(&[5.0f32, 6.0], &[3i64, 3], &plan).unwrap();
        assert_eq!(out, [0.0, 0.0, 0.0, 6.0]);
        let dx = unpool_backward(&[1.0f32, 2.0, 3.0, 4.0], &[3i64, 3], &plan).unwrap();
        assert_eq!(dx, [0.0, 4.0]);
    }

    #[test]
    fn work_large_enough_for_rayons_split_places_every_value() {
        // Large enough for rayon's split (parallel.rs); each value lands in a corner of its window.
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

    /// The composition is what devices without kernels run: check it against the CPU kernels,
    /// duplicates and cross-plane global indices included, by running it on Flex.
    #[test]
    fn matches_the_kernels_with_duplicates() {
        use burn::backend::Dispatch;
        use burn::tensor::{Device, Int, Tensor, TensorData};

        use crate::backend::composition;

        fn plan(layout: IndexLayout) -> UnpoolPlan {
            let options = MaxUnpoolOptions::new([2])
                .with_output_size([5])
                .with_index_layout(layout);
            UnpoolPlan::new(&[2, 2, 3], &[2, 2, 3], &options).unwrap()
        }

        let device = Device::flex();
        let x: Vec<f32> = (1..=12).map(|v| v as f32).collect();
        for (layout, indices) in [
            (
                IndexLayout::PerPlane,
                vec![0i64, 0, 4, 3, 3, 3, 1, 2, 1, 4, 0, 4],
            ),
            // Global indices that cross planes: element 1 writes into plane 3.
            (
                IndexLayout::Global,
                vec![0i64, 17, 4, 19, 5, 5, 12, 2, 11, 4, 19, 0],
            ),
        ] {
            let plan = plan(layout);
            let tensor = |values: Vec<f32>, shape: [usize; 3]| {
                Tensor::<3>::from_data(TensorData::new(values, shape), &device)
            };
            let index_tensor =
                Tensor::<3, Int>::from_data(TensorData::new(indices.clone(), [2, 2, 3]), &device);
            let expected = unpool_forward(&x, &indices, &plan).unwrap();
            let x = tensor(x.clone(), [2, 2, 3]);
            let out = Tensor::<3>::from_dispatch(composition::max_unpool::<Dispatch>(
                x.into_dispatch(),
                index_tensor.clone().into_dispatch(),
                plan.clone(),
            ));
            assert_eq!(
                out.into_data().try_into_vec::<f32>().unwrap(),
                expected,
                "{layout:?}"
            );

            // Integer values take the same composition.
            let ints: Vec<i32> = (1..=12).map(|v| -v).collect();
            let expected = unpool_forward(&ints, &indices, &plan).unwrap();
            let x = Tensor::<3, Int>::from_data(TensorData::new(ints, [2, 2, 3]), &device);
            let out = Tensor::<3, Int>::from_dispatch(composition::max_unpool_int::<Dispatch>(
                x.into_dispatch(),
                index_tensor.clone().into_dispatch(),
                plan.clone(),
            ));
            assert_eq!(
                out.into_data().try_into_vec::<i32>().unwrap(),
                expected,
                "{layout:?}"
            );

            let grad: Vec<f32> = (0..20).map(|v| v as f32 * 0.5).collect();
            let expected = unpool_backward(&grad, &indices, &plan).unwrap();
            let grad = tensor(grad, [2, 2, 5]);
            let dx = Tensor::<3>::from_dispatch(composition::max_unpool_backward::<Dispatch>(
                grad.into_dispatch(),
                index_tensor.into_dispatch(),
                plan,
            ));
            assert_eq!(
                dx.into_data().try_into_vec::<f32>().unwrap(),
                expected,
                "{layout:?}"
            );
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
